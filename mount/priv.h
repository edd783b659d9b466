/* priv.h: what the files of mount/ share; not for the front ends. */
/*
 * The files, bottom up; each calls only files before it (and the engine):
 *   names.c, options.c, source.c, staging.c  keys and names, options, the
 *                                 source, the staging folder: no other
 *                                 file of mount/ (names.c: lists of names)
 *   log.c      log lines, each thread's last error, invalidations
 *   gen.c      generations: pins, lookups, inode numbers, a new one made
 *              current (tdbm_reload), a write's timestamp
 *   refresh.c  -o refresh: a changed source makes a new generation
 *   meta.c     the metadata files of __meta/ and their stores
 *   commit.c   commits of staged folders; the staging folder's set-up
 *   fragdel.c  rm -r __fragments/NAME: a fragment deleted; removals
 *              deferred until no older generation is open
 *   autocons.c -o consolidate=N: consolidation after commits
 *   mount.c    the requests of the front ends but reads
 *   read.c     the files a front end opens and reads
 *
 * Locks.  `lock` guards the list of generations, the records and the
 * counters and is held only briefly; `commit` serialises writes to the
 * array.  Neither is held while the front end is told to invalidate.
 */
#ifndef TDBM_PRIV_H
#define TDBM_PRIV_H

#include "mount.h"
#include "staging.h"

#include <pthread.h>
#include <stdlib.h>

/* One generation: an opened tree of the source, published as the mount's
 * view of it until a newer one replaces it.  `pins` counts the requests
 * under way and the open files and folders, `lookups` the kernel's
 * lookups of its inodes.  A generation that a write replaced (retired) is
 * closed as soon as nothing pins it: the kernel may keep its inode
 * numbers for long after the entries were invalidated (unused dentries
 * stay in its cache until memory is short), so waiting for the last
 * forget would keep every old generation's memory.  Its numbers then
 * answer ESTALE, on which the kernel looks the path up again in the
 * current generation; the small record itself goes with the last
 * forget. */
struct tdbm_gen {
    struct tdbm_gen *next;
    struct tdb_fs *fs;  /* NULL once a retired generation is closed */
    uint64_t num;       /* the generation's number, in its inode numbers */
    uint64_t pins;
    uint64_t lookups;
    bool retired;       /* no longer current */
    uint64_t meta_dir;  /* engine inode of the root's __meta, or 0 */
    uint64_t frag_dir;  /* engine inode of the root's __fragments, or 0 */
    uint8_t stamp[TDB_STAMP_BYTES]; /* live: the source's digest taken
                                     * before this generation was opened */
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
    const char *source;            /* SOURCE: an absolute path or a URL */
    struct tdbm_config cfg;
    bool rw;
    bool is_array;
    struct tdbm_staging *staging;  /* NULL unless rw and an array */

    pthread_mutex_t lock;
    struct tdbm_gen *gens;         /* every generation not yet gone */
    struct tdbm_gen *cur;          /* the current one */
    uint64_t next_gen;             /* the number of the next one */
    struct tdbm_metarec *recs;
    uint64_t next_meta_ino;

    pthread_mutex_t commit;
    uint64_t last_ts;
    bool live;                     /* -o refresh: tdbm_refresh checks */
    bool refresh_failing;          /* the last check failed (m->commit) */

    struct tdbm_hidden *hidden;    /* files of fragment folders unlinked
                                    * (fragdel.c; under lock) */
    struct tdbm_pending *pending;  /* deleted fragments whose folders wait
                                    * for old generations (under lock) */
    pthread_t cons_thread;         /* autocons.c: the fragments' merge */
    bool cons_started;             /* cons_thread is to be joined (by the
                                    * next consolidation, or the end;
                                    * under lock) */
    bool cons_running;             /* a consolidation under way (lock) */

    pthread_key_t errkey;          /* each thread's struct tdb_error */
};

/* What a handle is open on: a file or folder of a generation, a staged
 * file or folder, a metadata file's record. */
enum tdbm_hkind { TDBM_H_FILE, TDBM_H_DIR, TDBM_H_STG, TDBM_H_STGDIR,
                  TDBM_H_META };

/* An open file or folder. */
struct tdbm_handle {
    enum tdbm_hkind kind;
    uint64_t ino;               /* FILE, DIR: what was opened */
    struct tdbm_gen *gen;       /* FILE, DIR, META of a generation's
                                 * node: pinned */
    uint64_t tino;              /* the engine's inode in gen's tree */
    uint64_t ntree;             /* DIR: the engine's entries of it */
    bool with_staging;          /* DIR of the root: add __staging */
    int fd;                     /* STG */
    char **names;               /* STGDIR */
    size_t nnames;
    struct tdbm_metarec *rec;   /* META */
    bool writer;                /* META: opened for writing (its flush
                                 * stores) */
    struct tdb_reader *rd;      /* FILE: reads, decoding ahead */
    bool filtered;              /* DIR of a fragment: vis lists what it */
    uint64_t *vis;              /* shows (the engine's indexes of the */
    uint64_t nvis;              /* entries this mount has not hidden) */
};

static inline bool tdbm_staging_ino(uint64_t ino)
{
    return (ino & TDBM_STAGING_BIT) != 0;
}

/* A new handle of `kind`, no descriptor; NULL when out of memory. */
static inline struct tdbm_handle *tdbm_handle_new(enum tdbm_hkind kind)
{
    struct tdbm_handle *h = calloc(1, sizeof *h);

    if (h) {
        h->kind = kind;
        h->fd = -1;
    }
    return h;
}

/* mount.c */
/* Whether engine inode tino, which failed a call with TDB_E_NOENT, is no
 * longer in g's tree (a file of __slice/ dropped since its lookup): its
 * number is then stale (-ESTALE). */
bool tdbm_gone(const struct tdbm_gen *g, uint64_t tino);

/* log.c */
void tdbm_log(const struct tdbm_mount *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Logs "WHAT: message" of an engine failure and keeps the message for
 * this thread's tdbm_error_take. */
void tdbm_tell(struct tdbm_mount *m, int code, const struct tdb_error *err,
               const char *what);
/* The -errno of a failed engine call: an engine failure is told
 * (tdbm_tell, WHAT from fmt), a failure the caller caused is not. */
int tdbm_fail(struct tdbm_mount *m, int code, const struct tdb_error *err,
              const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Hands the old root's names to the front end (no lock held). */
void tdbm_invalidate(struct tdbm_mount *m, char **names, size_t n);

/* gen.c */
/* The mount's inode number of engine inode `tino` of g. */
uint64_t tdbm_gen_ino(const struct tdbm_gen *g, uint64_t tino);
struct tdbm_gen *tdbm_gen_new(struct tdb_fs *fs);
void tdbm_gen_count(struct tdbm_mount *m, struct tdbm_gen *g, int64_t dpins,
                    int64_t dlookups);
struct tdbm_gen *tdbm_gen_pin(struct tdbm_mount *m, uint64_t ino,
                              uint64_t *tino);
void tdbm_gen_unpin(struct tdbm_mount *m, struct tdbm_gen *g, uint64_t n);
void tdbm_gen_ref(struct tdbm_mount *m, struct tdbm_gen *g);
void tdbm_gen_forget(struct tdbm_mount *m, uint64_t ino, uint64_t n);
int tdbm_gen_open(struct tdbm_mount *m, const uint8_t *stamp,
                  struct tdbm_gen **out, struct tdb_error *err);
void tdbm_gen_swap(struct tdbm_mount *m, struct tdbm_gen *g, char ***names,
                   size_t *n);
int tdbm_reload(struct tdbm_mount *m, char ***names, size_t *n);
uint64_t tdbm_next_ts(struct tdbm_mount *m);

/* meta.c */
struct tdbm_metarec *tdbm_rec_find(struct tdbm_mount *m, uint64_t ino);
int tdbm_rec_resize(struct tdbm_metarec *r, uint64_t len);
void tdbm_rec_stat(const struct tdbm_mount *m, const struct tdbm_metarec *r,
                   struct stat *st);
bool tdbm_lookup_created(struct tdbm_mount *m, const char *name,
                         struct tdbm_entry *e);
/* A node of a generation: engine inode `tino` of g's tree (g NULL: a
 * metadata file created and not yet stored), and its inode number. */
struct tdbm_node {
    struct tdbm_gen *gen;
    uint64_t tino;
    uint64_t ino;
};
int tdbm_open_meta(struct tdbm_mount *m, const struct tdbm_node *at,
                   const char *name, int flags, struct tdbm_handle **out);
int tdbm_open_created(struct tdbm_mount *m, uint64_t ino, int flags,
                      struct tdbm_handle **out);
const char *tdbm_meta_name(const struct tdbm_gen *g, uint64_t tino);
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

/* commit.c */
int tdbm_commit(struct tdbm_mount *m, const char *name);
/* Before staged folder `name` goes (rmdir): removes the uncommitted
 * fragment folder its marker names, so that the marker goes last.
 * @return 0 or -errno (then the folder stays). */
int tdbm_staging_forget_commit(struct tdbm_mount *m, const char *name);

/* fragdel.c */
/* The name of fragment folder `tino` of g (a folder of its __fragments),
 * or NULL. */
const char *tdbm_frag_of(const struct tdbm_gen *g, uint64_t tino);
/* Whether file `file` of folder `tino` of g, a fragment's, was unlinked
 * (cheap when nothing is). */
bool tdbm_frag_hidden(struct tdbm_mount *m, const struct tdbm_gen *g,
                      uint64_t tino, const char *file);
/* unlink(parent, name) when parent is a fragment's folder of a writable
 * mount: hides the file from this mount.  @return 1 when parent is no
 * such folder, else 0 or -errno. */
int tdbm_frag_unlink(struct tdbm_mount *m, uint64_t parent, const char *name);
/* rmdir(parent, name) when parent is __fragments of a writable mount:
 * deletes fragment `name` once its folder lists nothing (else ENOTEMPTY).
 * @return 1 when parent is no such folder, else 0 or -errno. */
int tdbm_frag_rmdir(struct tdbm_mount *m, uint64_t parent, const char *name);
/* A folder handle of a fragment with hidden files: fills h->vis.
 * @return 0 or -ENOMEM. */
int tdbm_frag_listing(struct tdbm_mount *m, struct tdbm_handle *h);
/* Removes the folders of deleted fragments no open generation shows. */
void tdbm_frag_reap(struct tdbm_mount *m);
/* The mount ends (every generation closed): removes the folders still
 * waiting and forgets the hidden files. */
void tdbm_frag_end(struct tdbm_mount *m);
/* What a consolidation superseded (the fragments its .vac names, older
 * fragment metadata and commit files) is vacuumed once no generation
 * before the next one is open (tdbm_frag_reap), or at the end. */
int tdbm_frag_defer_vacuum(struct tdbm_mount *m);

/* autocons.c */
/* After a commit: with -o consolidate=N and more than N fragments, the
 * fragment metadata and commits consolidated at once, the fragments on a
 * thread (at most one at a time). */
void tdbm_autocons(struct tdbm_mount *m);
/* The mount ends: waits for a consolidation under way. */
void tdbm_autocons_end(struct tdbm_mount *m);

#endif
