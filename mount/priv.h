/* priv.h: what the files of mount/ share; not for the front ends. */
/*
 * Locks.  `lock` guards the tree list, the records and the counters and is
 * held only briefly; `commit` serialises writes to the array.  Neither is
 * held while the front end is told to invalidate.
 */
#ifndef TDBM_PRIV_H
#define TDBM_PRIV_H

#include "mount.h"
#include "staging.h"

#include <pthread.h>

/* One opened tree.  `pins` counts the requests under way and the open
 * files and folders, `lookups` the kernel's lookups of its inodes.  A tree
 * that a write replaced (retired) is closed as soon as nothing pins it:
 * the kernel may keep its inode numbers for long after the entries were
 * invalidated (unused dentries stay in its cache until memory is short), so
 * waiting for the last forget would keep every old tree's memory.  Its
 * numbers then answer ESTALE, on which the kernel looks the path up again
 * in the current tree; the small record itself goes with the last forget. */
struct tdbm_tree {
    struct tdbm_tree *next;
    struct tdb_fs *fs;  /* NULL once a retired tree is closed */
    uint64_t gen;
    uint64_t pins;
    uint64_t lookups;
    bool retired;       /* no longer current */
    uint64_t meta_dir;  /* engine inode of the root's __meta, or 0 */
    uint64_t frag_dir;  /* engine inode of the root's __fragments, or 0 */
    uint8_t stamp[TDB_STAMP_BYTES]; /* live: the source's digest taken
                                     * before this tree was opened */
    bool stamped;       /* stamp is set */
};

/* A metadata value being written through __meta/NAME.  `dirty`: what the
 * file holds is not stored yet; `wrote`: bytes or the type changed since
 * the last store, so the next flush stores (a file only truncated is
 * stored by fsync or by its last close: a shell's `> FILE` flushes the
 * truncated file once before the command writes).  A store that fails
 * leaves both set, so every later flush, fsync and close fails too until
 * the value is stored (the release, which reports to no one, does not
 * try again). */
struct tdbm_metarec {
    struct tdbm_metarec *next;
    uint64_t ino;
    char *key;          /* the key, percent-decoded */
    char *fname;        /* its name under __meta/ */
    uint8_t *buf;
    size_t len, cap;
    int type;           /* TileDB datatype; -1: not set (STRING_UTF8) */
    bool dirty;
    bool wrote;
    bool hidden;        /* created, and nothing is to be stored: lookups
                         * no longer find it */
    unsigned refs;      /* open files */
};

struct tdbm_mount {
    const struct tdb_io *io;
    const struct tdb_open_options *open;
    const struct tdbm_options *opts;
    const char *source;            /* absolute path of SOURCE */
    struct tdbm_config cfg;
    bool rw;
    bool is_array;
    struct tdbm_staging *staging;  /* NULL unless rw and an array */

    pthread_mutex_t lock;
    struct tdbm_tree *trees;
    struct tdbm_tree *cur;
    uint64_t next_gen;
    struct tdbm_metarec *recs;
    uint64_t next_meta_ino;

    pthread_mutex_t commit;
    uint64_t last_ts;
    bool live;                     /* -o refresh: tdbm_refresh checks */
    bool refresh_failing;          /* the last check failed (m->commit) */

    pthread_key_t errkey;          /* each thread's struct tdb_error */
};

enum tdbm_hkind { TDBM_H_TREE, TDBM_H_DIR, TDBM_H_STG, TDBM_H_STGDIR,
                  TDBM_H_META };

/* An open file or folder. */
struct tdbm_handle {
    enum tdbm_hkind kind;
    struct tdbm_tree *tree;     /* TREE, DIR, META of a tree node: pinned */
    uint64_t tino;
    uint64_t ntree;             /* DIR: the tree's entries */
    bool with_staging;          /* DIR of the root: add __staging */
    int fd;                     /* STG */
    char **names;               /* STGDIR */
    size_t nnames;
    struct tdbm_metarec *rec;   /* META */
    bool writer;                /* META: opened for writing (its flush
                                 * stores) */
    struct tdb_reader *rd;      /* TREE: reads, decoding ahead */
};

/* mount.c */
void tdbm_log(const struct tdbm_mount *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
struct tdbm_tree *tdbm_tree_new(struct tdb_fs *fs);
void tdbm_tree_settle(struct tdbm_mount *m, struct tdbm_tree *t,
                      struct tdb_fs **fs, bool *gone);
struct tdbm_tree *tdbm_tree_pin(struct tdbm_mount *m, uint64_t ino,
                                uint64_t *tino);
void tdbm_tree_unpin(struct tdbm_mount *m, struct tdbm_tree *t, uint64_t n);
void tdbm_tree_ref(struct tdbm_mount *m, struct tdbm_tree *t);
char **tdbm_root_names(const struct tdbm_tree *t, size_t *n);
struct tdbm_handle *tdbm_handle_new(enum tdbm_hkind kind);

/* meta.c */
struct tdbm_metarec *tdbm_rec_find(struct tdbm_mount *m, uint64_t ino);
void tdbm_rec_close(struct tdbm_mount *m, struct tdbm_metarec *r);
int tdbm_rec_resize(struct tdbm_metarec *r, uint64_t len);
void tdbm_rec_stat(const struct tdbm_mount *m, const struct tdbm_metarec *r,
                   struct stat *st);
bool tdbm_lookup_created(struct tdbm_mount *m, const char *name,
                         struct tdbm_entry *e);
int tdbm_open_meta(struct tdbm_mount *m, struct tdbm_tree *t, uint64_t tino,
                   uint64_t ino, const char *name, int flags,
                   struct tdbm_handle **out);
int tdbm_open_created(struct tdbm_mount *m, uint64_t ino, int flags,
                      struct tdbm_handle **out);
const char *tdbm_meta_name(const struct tdbm_tree *t, uint64_t tino);
/* When a metadata value is stored: a writer's flush (close) stores what
 * was written since the last store; fsync whatever is not stored yet; the
 * file's last close (release) a file only truncated. */
enum tdbm_store_at { TDBM_STORE_FLUSH, TDBM_STORE_SYNC, TDBM_STORE_LAST };
int tdbm_meta_store(struct tdbm_mount *m, struct tdbm_metarec *r,
                    enum tdbm_store_at at);
void tdbm_meta_release(struct tdbm_mount *m, struct tdbm_metarec *r);
int tdbm_meta_delete(struct tdbm_mount *m, const char *key);
int tdbm_meta_create(struct tdbm_mount *m, uint64_t parent, const char *name,
                     int flags, struct tdbm_entry *e,
                     struct tdbm_handle **h);

/* refresh.c */
int tdbm_reload(struct tdbm_mount *m, char ***names, size_t *n);

/* commit.c */
uint64_t tdbm_next_ts(struct tdbm_mount *m);
void tdbm_invalidate(struct tdbm_mount *m, char **names, size_t n);
int tdbm_commit(struct tdbm_mount *m, const char *name);
/* Before staged folder `name` goes (rmdir): removes the uncommitted
 * fragment folder its marker names, so that the marker goes last.
 * @return 0 or -errno (then the folder stays). */
int tdbm_staging_forget_commit(struct tdbm_mount *m, const char *name);

#endif
