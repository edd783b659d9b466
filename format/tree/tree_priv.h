/* tree_priv.h: what the files of the tree (tree.c, tree_nodes.c,
 * tree_array.c, tree_zarr.c, tree_group.c, tree_slices.c, tree_calls.c,
 * tree_xattr.c) share: its nodes, the open tree, and the calls that
 * build it. */
#ifndef TDB_TREE_PRIV_H
#define TDB_TREE_PRIV_H

#include "read/view.h"

#include <pthread.h>
#include <string.h>

struct tdb_npy;
struct tdb_zarr;
struct tdb_zarr_group;

/* TREE_NPY: a .npy file (npy.c). */
enum tree_kind { TREE_DIR, TREE_BYTES, TREE_FIELD, TREE_NPY };

/* Folders whose files are made on lookup from their names. */
enum tree_made { TREE_MADE_NONE, TREE_MADE_SLICE, TREE_MADE_DOMAIN,
                 TREE_MADE_ZARR };

struct tree_node {
    char *name;
    uint64_t parent;
    enum tree_kind kind;
    uint64_t *kids;
    size_t nkids, capkids;
    uint8_t *bytes;             /* TREE_BYTES */
    uint64_t size;
    struct tdb_fieldfile *ff;   /* TREE_FIELD */
    struct tdb_npy *npy;        /* TREE_NPY (owned) */
    uint64_t raw;               /* TREE_NPY: the data file whose xattrs it
                                 * shows (0: a slice's own) */
    enum tree_made made;        /* TREE_DIR */
    size_t zarr;                /* TREE_MADE_ZARR: index in fs->zarrs */
    const char *datatype;       /* xattrs */
    const char *dtype;
    char *shape_prefix;         /* dense: "23,17"; NULL: the cell count */
    uint32_t cell_val_num;
    bool has_xattrs;
    uint64_t mtime_ms;
};

/* A file of __slice/ or __domain/, made on lookup from its name: inode
 * TREE_SLICE_INO + a serial number never given twice.  `refs` counts the
 * readers that hold it open and the calls under way; an idle one (refs 0)
 * is in the LRU list, newest first. */
struct tree_slice {
    struct tree_node node;
    uint64_t ino;
    size_t refs;
    uint64_t hash;                          /* of (folder, name) */
    struct tree_slice *by_name, *by_ino;    /* hash chains */
    struct tree_slice *newer, *older;       /* LRU, when idle */
};

/* The slices of a tree: found by (folder, name) and by inode in constant
 * time (chained tables of nbuckets, a power of two, at least as many as
 * the slices); at most `keep` idle ones are kept (the oldest go first), so
 * a user making name after name costs a bounded table, however many. */
struct tree_slices {
    pthread_mutex_t lock;
    struct tree_slice **names, **inos;
    size_t nbuckets, n, idle, keep;
    struct tree_slice *newest, *oldest;
    uint64_t serial, evicted;
    uint64_t seed;                          /* of the hash: random */
};

struct tdb_fs {
    const struct tdb_io *io;
    struct tdb_open_options opts;
    uint8_t key[32];
    struct tdb_cache *cache;
    bool own_cache;             /* made here (opts.cache was NULL) */
    pthread_mutex_t pool_lock;
    struct tdb_pool *pool;      /* decoding threads, started on first use */
    bool pool_tried;
    struct tree_node *nodes;    /* ino = index + 1 */
    size_t nnodes, capnodes;
    struct tdb_array **arrays;
    size_t narrays;
    char **srcs;                /* folders of the arrays and groups opened */
    size_t nsrcs;
    struct tdb_cells **cells;
    size_t ncells;
    /* slices made on lookup in __slice/ and __domain/ */
    struct tree_slices slices;
    /* group members left out (tdb_fs_warnings), members opened */
    char **warn;
    size_t nwarn;
    size_t nmembers;
    /* the Zarr arrays of __zarr/ folders: chunk c of zarrs[i] is inode
     * TREE_CHUNK_INO + zarrs[i].base + c (no node) */
    struct tree_zarr *zarrs;
    size_t nzarrs;
    uint64_t nchunks;
    struct tree_store *stores;
    size_t nstores;
    struct tdb_zarr_group **gstores;   /* the __zarr of groups */
    size_t ngstores;
};

/* A Zarr store of the tree, made in the folder of its array. */
struct tree_store {
    struct tdb_zarr *z;
    uint64_t dir;               /* the array's folder */
    uint64_t mtime_ms;
};

struct tree_zarr {
    struct tdb_zarr *z;
    uint32_t k;                 /* the array's index in z */
    uint64_t base, n;           /* its chunks' inodes */
    uint64_t mtime_ms;
};

#define TREE_CHUNK_INO (UINT64_C(1) << 38)
#define TREE_SLICE_INO (UINT64_C(1) << 39)
#define TREE_SLICE_SERIALS (UINT64_C(1) << 39) /* below the mount's 2^40 */
/* Idle slices kept: one per 64 KiB of the tile cache's budget (a slice
 * holds some 3 KiB), 64 to 4096 (4096 with the default 256 MiB). */
#define TREE_SLICES_PER_BYTES (UINT64_C(64) << 10)
#define TREE_SLICES_MIN 64
#define TREE_SLICES_MAX 4096

/* ------------------------------------------------------ building the tree */

/* Adds node `name` of `kind` to folder parent (0: the root itself);
 * *ino its inode.  @return 0 or TDB_E_NOMEM. */
int tree_add(struct tdb_fs *fs, uint64_t parent, const char *name,
             enum tree_kind kind, uint64_t *ino);

/* Adds file `name` of folder parent holding a copy of p[0..n). */
int tree_add_bytes(struct tdb_fs *fs, uint64_t parent, const char *name,
                   const void *p, uint64_t n, uint64_t *ino);

/* Keeps cell view c until the tree closes.  @return 0 or TDB_E_NOMEM
 * (c then the caller's). */
int tree_keep_cells(struct tdb_fs *fs, struct tdb_cells *c);

/* Folder __meta of parent: a file per item of m (NULL: none). */
int tree_meta(struct tdb_fs *fs, uint64_t parent, const struct tdb_meta *m,
              uint64_t mtime);

/* Records one sentence for tdb_fs_warnings.  @return 0 or TDB_E_NOMEM. */
int tree_warn(struct tdb_fs *fs, const char *fmt, ...);

/* Shows the array or group at `path` in folder node (tree_group.c: a
 * group's members opened first, level by level). */
int tree_source(struct tdb_fs *fs, uint64_t node, const char *path,
                struct tdb_error *err);

/* An array's folder (tree_array.c): root holds a's files. */
int tree_array(struct tdb_fs *fs, uint64_t root, struct tdb_array *a,
               struct tdb_error *err);

/* __zarr/ of array a's dense view (tree_zarr.c). */
int tree_zarr(struct tdb_fs *fs, uint64_t root, struct tdb_array *a,
              struct tdb_cells *view, struct tdb_error *err);

/* A group's n members as the tree names them: shown[i], and why[i] the
 * reason member i is not shown (NULL: it is). */
struct tree_shown {
    size_t n;
    char *const *shown;
    char *const *why;
};

/* __zarr/ of the group at root (tree_zarr.c): the stores of its members
 * sh shows, m the group's metadata. */
int tree_group_zarr(struct tdb_fs *fs, uint64_t root,
                    const struct tree_shown *sh, const struct tdb_meta *m,
                    struct tdb_error *err);

/* ------------------------------------------------------- inodes, slices */

/* The node of inode ino when it is no slice, or NULL. */
struct tree_node *tree_perm(struct tdb_fs *fs, uint64_t ino);

/* The node of inode ino, or NULL; a slice is held until tree_put. */
struct tree_node *tree_get(struct tdb_fs *fs, uint64_t ino);

/* Gives back what tree_get(fs, ino) returned (n may be NULL). */
void tree_put(struct tdb_fs *fs, uint64_t ino, struct tree_node *n);


/* Finds or makes file `name` of folder dir (__slice/ or __domain/). */
int tree_slice(struct tdb_fs *fs, uint64_t dir, const char *name,
               uint64_t *ino, struct tdb_error *err);

/* Frees slice sl (NULL: nothing). */
void tree_slice_free(struct tree_slice *sl);

#endif
