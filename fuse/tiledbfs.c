/* tiledbfs.c: the mount contract's daemon: `tiledbfs [-o OPTIONS] SOURCE MOUNTPOINT` over libfuse's low-level API. */
/*
 * A thin layer: every handler turns one FUSE request into calls of the
 * format engine (format/tiledb_format.h, format/writer.h) and replies
 * exactly once.
 *
 * Trees.  An opened source is a tree (struct tdb_fs) that never changes.
 * Without -o rw there is one tree for the life of the mount.  With -o rw a
 * commit (a staged folder renamed into __fragments/) or a metadata write
 * (a file of __meta/ closed, or removed) writes to the array and then opens
 * a new tree, which replaces the old one as the "current" tree.  FUSE inode
 * numbers say which tree a node belongs to: (generation << 40) | engine
 * inode, except the root, which is always 1 and always the current tree.
 * A replaced tree lives on until the kernel has forgotten every inode it
 * handed out and no request or open file uses it, so an open file keeps
 * reading the bytes it opened; numbers are never reused.  After a swap the
 * kernel is told to drop the root's entries (and with them everything
 * below), so new lookups see the new tree.
 *
 * Staging.  MOUNT/__staging/ (arrays, -o rw) passes through to real files
 * under staging_dir; see staging.h.  Inodes there have bit 62 set.
 *
 * Metadata.  A file of __meta/ opened for writing is buffered in memory
 * (one record per inode, shared by its open files); flush, which close()
 * waits for, writes it as one metadata put and reports a bad value to
 * close().  Files created in __meta/ get inode numbers with bit 61 set.
 *
 * Locks.  `lock` guards the tree list, the records and the counters and is
 * held only briefly; `commit` serialises writes to the array.  Neither is
 * held while the kernel is told to invalidate (libfuse's rule for notify
 * calls).
 */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)

#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "../tools/cli.h"
#include "core.h"
#include "staging.h"
#include "writer.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "(unknown version)"
#endif

_Static_assert(TDB_ROOT_INO == FUSE_ROOT_ID,
               "engine and FUSE must agree on the root inode");

#define TDBFS_TIMEOUT 86400.0 /* seconds; a tree never changes */
#define TDBFS_IO_MAX TDBCLI_READ_MAX
#define TDBFS_GEN_SHIFT 40
#define TDBFS_TINO_MASK ((UINT64_C(1) << TDBFS_GEN_SHIFT) - 1)
#define TDBFS_META_BIT (UINT64_C(1) << 61)
#define TDBFS_META_MAX (UINT64_C(1) << 30) /* bytes of one metadata value */
#define TDBFS_DATATYPE_XATTR "user.tiledb.datatype"

/* One opened tree.  `pins` counts the requests under way and the open
 * files and folders, `lookups` the kernel's lookups of its inodes.  A tree
 * that a write replaced (retired) is closed as soon as nothing pins it:
 * the kernel may keep its inode numbers for long after the entries were
 * invalidated (unused dentries stay in its cache until memory is short), so
 * waiting for the last forget would keep every old tree's memory.  Its
 * numbers then answer ESTALE, on which the kernel looks the path up again
 * in the current tree; the small record itself goes with the last forget. */
struct tdbfs_tree {
    struct tdbfs_tree *next;
    struct tdb_fs *fs;  /* NULL once a retired tree is closed */
    uint64_t gen;
    uint64_t pins;
    uint64_t lookups;
    bool retired;       /* no longer current */
    uint64_t meta_dir;  /* engine inode of the root's __meta, or 0 */
    uint64_t frag_dir;  /* engine inode of the root's __fragments, or 0 */
};

/* A metadata value being written through __meta/NAME. */
struct tdbfs_metarec {
    struct tdbfs_metarec *next;
    fuse_ino_t ino;
    char *key;          /* the key, percent-decoded */
    char *fname;        /* its name under __meta/ */
    uint8_t *buf;
    size_t len, cap;
    int type;           /* TileDB datatype; -1: not set (STRING_UTF8) */
    bool dirty;
    bool hidden;        /* created, and its flush stored nothing: lookups
                         * no longer find it */
    unsigned refs;      /* open files */
};

/* A queued invalidation: the root's attributes and these root entries. */
struct tdbfs_inval {
    struct tdbfs_inval *next;
    char **names;
    size_t n;
};

/* Per-mount state, the session's userdata. */
struct tdbfs_mount {
    const struct tdb_io *io;
    const struct tdb_open_options *open;
    struct fuse_session *se;
    bool rw;
    bool is_array;
    bool log_stderr; /* -o log=: stderr, else syslog */
    bool singlethread;
    uid_t uid;
    gid_t gid;
    struct tdbfs_staging *staging; /* NULL unless rw and an array */

    pthread_mutex_t lock;
    struct tdbfs_tree *trees;
    struct tdbfs_tree *cur;
    uint64_t next_gen;
    struct tdbfs_metarec *recs;
    uint64_t next_meta_ino;

    pthread_mutex_t commit;
    uint64_t last_ts;

    /* Invalidations for -s, where the only worker may not wait on the
     * kernel: done by a helper thread. */
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    struct tdbfs_inval *queue;
    bool qstop, qthread;
    pthread_t notifier;
};

enum tdbfs_hkind { TDBFS_H_TREE, TDBFS_H_DIR, TDBFS_H_STG, TDBFS_H_STGDIR,
                   TDBFS_H_META };

/* What fi->fh points to. */
struct tdbfs_handle {
    enum tdbfs_hkind kind;
    struct tdbfs_tree *tree;    /* TREE, DIR, META of a tree node: pinned */
    uint64_t tino;
    uint64_t ntree;             /* DIR: the tree's entries */
    bool with_staging;          /* DIR of the root: add __staging */
    int fd;                     /* STG */
    char **names;               /* STGDIR */
    size_t nnames;
    struct tdbfs_metarec *rec;  /* META */
    struct tdb_reader *rd;      /* TREE: reads, decoding ahead */
};

static struct tdbfs_mount *tdbfs_mount_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

static struct tdbfs_handle *tdbfs_handle_of(const struct fuse_file_info *fi)
{
    return fi ? (struct tdbfs_handle *)(uintptr_t)fi->fh : NULL;
}

/* One log line; the engine's messages name file, field and tile and never
 * hold the key. */
static void tdbfs_log(const struct tdbfs_mount *m, const char *fmt, ...)
{
    char line[TDB_ERROR_MSG_MAX + 128];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    if (m->log_stderr)
        fprintf(stderr, "tiledbfs: %s\n", line);
    else
        syslog(LOG_ERR, "%s", line);
}

/* Whether a failure is the engine's (bad bytes, I/O, memory, key), worth a
 * log line, rather than the caller's (no such name, not a folder...). */
static bool tdbfs_worth_logging(int code)
{
    return code != TDB_E_NOENT && code != TDB_E_NOTDIR &&
           code != TDB_E_ISDIR && code != TDB_E_INVAL && code != TDB_E_ROFS;
}

/* Replies with the errno of a failed engine call, logging engine failures. */
static void tdbfs_reply_fail(fuse_req_t req, const char *op, fuse_ino_t ino,
                             int code, const struct tdb_error *err)
{
    if (tdbfs_worth_logging(code))
        tdbfs_log(tdbfs_mount_of(req), "%s inode %llu: %s", op,
                  (unsigned long long)ino, tdbcli_error_text(code, err));
    fuse_reply_err(req, tdb_errno(code));
}

/* --------------------------------------------------------------- trees */

static fuse_ino_t tdbfs_ino(const struct tdbfs_tree *t, uint64_t tino)
{
    if (tino == TDB_ROOT_INO)
        return FUSE_ROOT_ID;
    return (fuse_ino_t)(t->gen << TDBFS_GEN_SHIFT | tino);
}

static bool tdbfs_is_tree_ino(fuse_ino_t ino)
{
    return !tdbfs_staging_owns(ino) && !(ino & TDBFS_META_BIT);
}

/* A new tree over `fs`, not yet in the list. */
static struct tdbfs_tree *tdbfs_tree_new(struct tdb_fs *fs)
{
    struct tdbfs_tree *t = calloc(1, sizeof *t);
    uint64_t ino;

    if (!t)
        return NULL;
    t->fs = fs;
    if (tdb_fs_lookup(fs, TDB_ROOT_INO, "__meta", &ino, NULL) == 0)
        t->meta_dir = ino;
    if (tdb_fs_lookup(fs, TDB_ROOT_INO, "__fragments", &ino, NULL) == 0)
        t->frag_dir = ino;
    return t;
}

/* Unlinks t from the list (m->lock held). */
static void tdbfs_tree_unlink(struct tdbfs_mount *m, struct tdbfs_tree *t)
{
    for (struct tdbfs_tree **pp = &m->trees; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            return;
        }
    }
}

static void tdbfs_tree_free(struct tdbfs_tree *t)
{
    if (t) {
        tdb_fs_close(t->fs);
        free(t);
    }
}

/* What a retired tree no longer needs (m->lock held): *fs receives the
 * engine tree to close when nothing pins it, and *gone is true when the
 * record itself can go (then it is unlinked here). */
static void tdbfs_tree_settle(struct tdbfs_mount *m, struct tdbfs_tree *t,
                              struct tdb_fs **fs, bool *gone)
{
    *fs = NULL;
    *gone = false;
    if (!t->retired || t->pins)
        return;
    *fs = t->fs;
    t->fs = NULL;
    if (t->lookups == 0) {
        tdbfs_tree_unlink(m, t);
        *gone = true;
    }
}

/* Changes t's counts by (dpins, dlookups), then closes what is no longer
 * needed.  Counts never go below 0. */
static void tdbfs_tree_count(struct tdbfs_mount *m, struct tdbfs_tree *t,
                             int64_t dpins, int64_t dlookups)
{
    struct tdb_fs *fs;
    bool gone;

    if (!t)
        return;
    pthread_mutex_lock(&m->lock);
    if (dpins < 0)
        t->pins = t->pins > (uint64_t)-dpins ? t->pins - (uint64_t)-dpins : 0;
    else
        t->pins += (uint64_t)dpins;
    if (dlookups < 0)
        t->lookups = t->lookups > (uint64_t)-dlookups
                         ? t->lookups - (uint64_t)-dlookups : 0;
    else
        t->lookups += (uint64_t)dlookups;
    tdbfs_tree_settle(m, t, &fs, &gone);
    pthread_mutex_unlock(&m->lock);
    tdb_fs_close(fs);
    if (gone)
        free(t);
}

/* The tree of `ino` with one more pin, and the engine inode in it; NULL
 * when the tree is closed (a number the kernel kept from before a write)
 * or gone. */
static struct tdbfs_tree *tdbfs_tree_pin(struct tdbfs_mount *m,
                                         fuse_ino_t ino, uint64_t *tino)
{
    struct tdbfs_tree *t = NULL;

    if (!tdbfs_is_tree_ino(ino))
        return NULL;
    pthread_mutex_lock(&m->lock);
    if (ino == FUSE_ROOT_ID) {
        t = m->cur;
        *tino = TDB_ROOT_INO;
    } else {
        uint64_t gen = ino >> TDBFS_GEN_SHIFT;
        for (t = m->trees; t && t->gen != gen; t = t->next)
            ;
        *tino = ino & TDBFS_TINO_MASK;
    }
    if (t && !t->fs)
        t = NULL;
    if (t)
        t->pins++;
    pthread_mutex_unlock(&m->lock);
    return t;
}

/* Drops `n` pins of t. */
static void tdbfs_tree_unpin(struct tdbfs_mount *m, struct tdbfs_tree *t,
                             uint64_t n)
{
    tdbfs_tree_count(m, t, -(int64_t)n, 0);
}

/* Counts one more lookup of one of t's inodes by the kernel. */
static void tdbfs_tree_ref(struct tdbfs_mount *m, struct tdbfs_tree *t)
{
    tdbfs_tree_count(m, t, 0, 1);
}

/* Takes back `n` lookups of t's inodes (the kernel forgot them). */
static void tdbfs_tree_forget(struct tdbfs_mount *m, struct tdbfs_tree *t,
                              uint64_t n)
{
    tdbfs_tree_count(m, t, 0, -(int64_t)n);
}

/* The name of engine inode `tino` when it is a key file of the root's
 * __meta, else NULL (valid while t is pinned). */
static const char *tdbfs_meta_name(const struct tdbfs_tree *t, uint64_t tino)
{
    const char *name;
    uint64_t child;

    if (!t->meta_dir || tino == t->meta_dir)
        return NULL;
    for (uint64_t i = 0;
         tdb_fs_readdir(t->fs, t->meta_dir, i, &name, &child, NULL) == 0; i++)
        if (child == tino)
            return name;
    return NULL;
}

static void tdbfs_fill_stat(const struct tdbfs_mount *m,
                            const struct tdbfs_tree *t, uint64_t tino,
                            const struct tdb_stat *ts, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = tdbfs_ino(t, tino);
    /* A folder's link count is 1, "unknown" to find and fts: counting its
     * subfolders would stat every child. */
    if (ts->is_dir)
        st->st_mode = S_IFDIR | (m->rw ? 0755 : 0555);
    else if (m->rw && tdbfs_meta_name(t, tino))
        st->st_mode = S_IFREG | 0644;
    else
        st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_uid = m->uid;
    st->st_gid = m->gid;
    st->st_size = (off_t)ts->size;
    st->st_blksize = TDBFS_IO_MAX;
    st->st_blocks = (blkcnt_t)((ts->size + 511) / 512);
    st->st_mtim.tv_sec = (time_t)(ts->mtime_ms / 1000);
    st->st_mtim.tv_nsec = (long)(ts->mtime_ms % 1000) * 1000000L;
    st->st_atim = st->st_mtim;
    st->st_ctim = st->st_mtim;
}

/* The attribute timeout of a tree node: the root changes with each
 * commit (its attributes are not invalidated in time for every reader). */
static double tdbfs_attr_timeout(const struct tdbfs_mount *m, fuse_ino_t ino)
{
    return m->rw && ino == FUSE_ROOT_ID ? 0.0 : TDBFS_TIMEOUT;
}

/* ------------------------------------------------------ metadata records */

static struct tdbfs_metarec *tdbfs_rec_find(struct tdbfs_mount *m,
                                            fuse_ino_t ino)
{
    for (struct tdbfs_metarec *r = m->recs; r; r = r->next)
        if (r->ino == ino)
            return r;
    return NULL;
}

/* Percent-decodes a name of __meta/ ("%2F" '/', "%25" '%').
 * @return a new string, or NULL (errno set). */
static char *tdbfs_decode_name(const char *name)
{
    char *out = malloc(strlen(name) + 1), *o = out;

    if (!out)
        return NULL;
    for (const char *p = name; *p; p++) {
        if (*p != '%') {
            *o++ = *p;
        } else if (p[1] == '2' && (p[2] == 'F' || p[2] == 'f')) {
            *o++ = '/';
            p += 2;
        } else if (p[1] == '2' && p[2] == '5') {
            *o++ = '%';
            p += 2;
        } else {
            free(out);
            errno = EINVAL;
            return NULL;
        }
    }
    *o = '\0';
    return out;
}

/* The record of `ino` with one more open file, made (holding `init`)
 * when missing.  @return 0 or -errno. */
static int tdbfs_rec_open(struct tdbfs_mount *m, fuse_ino_t ino,
                          const char *name, const uint8_t *init,
                          size_t init_len, bool dirty,
                          struct tdbfs_metarec **out)
{
    struct tdbfs_metarec *r;
    char *key;

    pthread_mutex_lock(&m->lock);
    r = tdbfs_rec_find(m, ino);
    if (r) {
        r->refs++;
        pthread_mutex_unlock(&m->lock);
        *out = r;
        return 1; /* an existing record: the caller keeps its bytes */
    }
    pthread_mutex_unlock(&m->lock);

    key = tdbfs_decode_name(name);
    if (!key)
        return -errno;
    r = calloc(1, sizeof *r);
    if (!r) {
        free(key);
        return -ENOMEM;
    }
    r->fname = strdup(name);
    if (!r->fname) {
        free(key);
        free(r);
        return -ENOMEM;
    }
    r->ino = ino;
    r->key = key;
    r->type = -1;
    r->dirty = dirty;
    r->refs = 1;
    if (init_len) {
        r->buf = malloc(init_len);
        if (!r->buf) {
            free(key);
            free(r);
            return -ENOMEM;
        }
        memcpy(r->buf, init, init_len);
        r->len = r->cap = init_len;
    }
    pthread_mutex_lock(&m->lock);
    r->next = m->recs;
    m->recs = r;
    pthread_mutex_unlock(&m->lock);
    *out = r;
    return 0;
}

static void tdbfs_rec_close(struct tdbfs_mount *m, struct tdbfs_metarec *r)
{
    bool gone = false;

    pthread_mutex_lock(&m->lock);
    if (--r->refs == 0) {
        for (struct tdbfs_metarec **pp = &m->recs; *pp; pp = &(*pp)->next) {
            if (*pp == r) {
                *pp = r->next;
                break;
            }
        }
        gone = true;
    }
    pthread_mutex_unlock(&m->lock);
    if (gone) {
        free(r->buf);
        free(r->key);
        free(r->fname);
        free(r);
    }
}

/* Sets the record's length (zero-filling growth).  m->lock held. */
static int tdbfs_rec_resize(struct tdbfs_metarec *r, uint64_t len)
{
    if (len > TDBFS_META_MAX)
        return -EFBIG;
    if (len > r->cap) {
        size_t cap = r->cap ? r->cap : 64;
        while (cap < len)
            cap *= 2;
        uint8_t *b = realloc(r->buf, cap);
        if (!b)
            return -ENOMEM;
        r->buf = b;
        r->cap = cap;
    }
    if (len > r->len)
        memset(r->buf + r->len, 0, (size_t)len - r->len);
    r->len = (size_t)len;
    r->dirty = true;
    return 0;
}

static void tdbfs_rec_stat(const struct tdbfs_mount *m,
                           const struct tdbfs_metarec *r, struct stat *st)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    memset(st, 0, sizeof *st);
    st->st_ino = r->ino;
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
    st->st_uid = m->uid;
    st->st_gid = m->gid;
    st->st_size = (off_t)r->len;
    st->st_blksize = TDBFS_IO_MAX;
    st->st_blocks = (blkcnt_t)((r->len + 511) / 512);
    st->st_mtim = now;
    st->st_atim = now;
    st->st_ctim = now;
}

/* -------------------------------------------------------- invalidation */

static void tdbfs_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The names of the root of t, for invalidation (NULL when out of memory). */
static char **tdbfs_root_names(const struct tdbfs_tree *t, size_t *n)
{
    const char *name;
    uint64_t child;
    size_t cnt = 0;
    char **v;

    while (tdb_fs_readdir(t->fs, TDB_ROOT_INO, cnt, &name, &child, NULL) == 0)
        cnt++;
    v = calloc(cnt ? cnt : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < cnt; i++) {
        if (tdb_fs_readdir(t->fs, TDB_ROOT_INO, i, &name, &child, NULL) != 0 ||
            !(v[i] = strdup(name))) {
            tdbfs_names_free(v, i);
            return NULL;
        }
    }
    *n = cnt;
    return v;
}

/* Tells the kernel that the root changed and that its entries `names`
 * (and so everything below them) are stale.  No lock of ours is held. */
static void tdbfs_invalidate(struct tdbfs_mount *m, char **names, size_t n)
{
    fuse_lowlevel_notify_inval_inode(m->se, FUSE_ROOT_ID, 0, 0);
    for (size_t i = 0; i < n; i++)
        fuse_lowlevel_notify_inval_entry(m->se, FUSE_ROOT_ID, names[i],
                                         strlen(names[i]));
}

static void *tdbfs_notifier(void *arg)
{
    struct tdbfs_mount *m = arg;

    pthread_mutex_lock(&m->qlock);
    for (;;) {
        while (!m->queue && !m->qstop)
            pthread_cond_wait(&m->qcond, &m->qlock);
        if (!m->queue)
            break;
        struct tdbfs_inval *job = m->queue;
        m->queue = job->next;
        pthread_mutex_unlock(&m->qlock);
        tdbfs_invalidate(m, job->names, job->n);
        tdbfs_names_free(job->names, job->n);
        free(job);
        pthread_mutex_lock(&m->qlock);
    }
    pthread_mutex_unlock(&m->qlock);
    return NULL;
}

/* Invalidates now (several workers: one is free to answer the kernel's
 * lookups while it waits) or through the helper thread (-s).  Takes the
 * names. */
static void tdbfs_invalidate_soon(struct tdbfs_mount *m, char **names,
                                  size_t n)
{
    struct tdbfs_inval *job;

    if (!m->qthread) {
        tdbfs_invalidate(m, names, n);
        tdbfs_names_free(names, n);
        return;
    }
    job = calloc(1, sizeof *job);
    if (!job) {
        tdbfs_names_free(names, n);
        return;
    }
    job->names = names;
    job->n = n;
    pthread_mutex_lock(&m->qlock);
    struct tdbfs_inval **pp = &m->queue;
    while (*pp)
        pp = &(*pp)->next;
    *pp = job;
    pthread_cond_signal(&m->qcond);
    pthread_mutex_unlock(&m->qlock);
}

/* ------------------------------------------------------------- writing */

/* A write timestamp: now in ms, but always after the previous one, so that
 * two writes of one daemon are applied in the order they were made.
 * m->commit held. */
static uint64_t tdbfs_next_ts(struct tdbfs_mount *m)
{
    struct timespec now;
    uint64_t ms;

    for (;;) {
        clock_gettime(CLOCK_REALTIME, &now);
        ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
        if (ms > m->last_ts)
            break;
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
    m->last_ts = ms;
    return ms;
}

/* Opens a new tree and makes it current; *names receives the old root's
 * entries to invalidate.  m->commit held.  @return 0 or a TDB_E_* code
 * (then the old tree stays current). */
static int tdbfs_reload(struct tdbfs_mount *m, char ***names, size_t *n)
{
    struct tdbfs_tree *t, *old;
    struct tdb_error err;
    struct tdb_fs *fs, *oldfs;
    bool gone;
    int rc;

    *names = NULL;
    *n = 0;
    tdbcli_error_clear(&err);
    rc = tdb_fs_open(&fs, m->io, m->open, &err);
    if (rc < 0) {
        tdbfs_log(m, "reopening after a write: %s",
                  tdbcli_error_text(rc, &err));
        return rc;
    }
    t = tdbfs_tree_new(fs);
    if (!t) {
        tdb_fs_close(fs);
        return TDB_E_NOMEM;
    }
    pthread_mutex_lock(&m->lock);
    old = m->cur;
    *names = tdbfs_root_names(old, n);
    t->gen = m->next_gen++;
    t->next = m->trees;
    m->trees = t;
    m->cur = t;
    old->retired = true;
    tdbfs_tree_settle(m, old, &oldfs, &gone);
    pthread_mutex_unlock(&m->lock);
    tdb_fs_close(oldfs);
    if (gone)
        free(old);
    return 0;
}

/* Writes a record as one metadata put (m->commit not held).
 * @return 0 or -errno. */
static int tdbfs_meta_commit(struct tdbfs_mount *m, struct tdbfs_metarec *r)
{
    struct tdb_error err;
    char **names = NULL;
    size_t n = 0;
    unsigned type, tsize;
    uint8_t *val = NULL;
    size_t len;
    int rc;

    pthread_mutex_lock(&m->commit);
    pthread_mutex_lock(&m->lock);
    /* Nothing changed since the last flush.  An empty value is a value
     * (TileDB stores it with count 0); a shell's `> FILE` may flush one
     * before its first write, and the later flush then replaces it. */
    if (!r->dirty) {
        r->hidden = true;
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_unlock(&m->commit);
        return 0;
    }
    type = r->type < 0 ? TDB_STRING_UTF8 : (unsigned)r->type;
    tsize = tdb_dt_size(type);
    len = r->len;
    val = malloc(len ? len : 1);
    if (val)
        memcpy(val, r->buf, len);
    r->dirty = false;
    pthread_mutex_unlock(&m->lock);
    if (!val) {
        rc = -ENOMEM;
        goto out;
    }
    if (!tsize || len % tsize != 0 || len / tsize > UINT32_MAX) {
        pthread_mutex_lock(&m->lock);
        r->hidden = true;
        pthread_mutex_unlock(&m->lock);
        tdbfs_log(m, "__meta/%s: %zu bytes are not a whole number of %s "
                  "values", r->key, len, tdb_dt_name(type));
        rc = -EINVAL;
        goto out;
    }
    tdbcli_error_clear(&err);
    rc = tdb_meta_write(m->io, "__meta", r->key, type, (uint32_t)(len / tsize),
                        val, false, m->open->key, tdbfs_next_ts(m), &err);
    if (rc < 0) {
        pthread_mutex_lock(&m->lock);
        r->hidden = true;
        pthread_mutex_unlock(&m->lock);
        tdbfs_log(m, "__meta/%s: %s", r->key, tdbcli_error_text(rc, &err));
        rc = -tdb_errno(rc);
        goto out;
    }
    rc = 0;
    tdbfs_reload(m, &names, &n);
out:
    pthread_mutex_unlock(&m->commit);
    free(val);
    if (names)
        tdbfs_invalidate_soon(m, names, n);
    return rc;
}

/* Deletes metadata key `key` (decoded).  @return 0 or -errno. */
static int tdbfs_meta_delete(struct tdbfs_mount *m, const char *key)
{
    struct tdb_error err;
    char **names = NULL;
    size_t n = 0;
    int rc;

    pthread_mutex_lock(&m->commit);
    tdbcli_error_clear(&err);
    rc = tdb_meta_write(m->io, "__meta", key, TDB_STRING_UTF8, 0, NULL, true,
                        m->open->key, tdbfs_next_ts(m), &err);
    if (rc < 0) {
        tdbfs_log(m, "__meta/%s: %s", key, tdbcli_error_text(rc, &err));
        rc = -tdb_errno(rc);
    } else {
        rc = 0;
        tdbfs_reload(m, &names, &n);
    }
    pthread_mutex_unlock(&m->commit);
    if (names)
        tdbfs_invalidate_soon(m, names, n);
    return rc;
}

/* The errno of a commit refused for its staged input: `mv` prints "Bad
 * message" (EINVAL would print "cannot move ... to a subdirectory of
 * itself"); the reason is in NAME/__error. */
#define TDBFS_COMMIT_REFUSED EBADMSG

/* Commits staged folder `name` as a new fragment.  Staged files are read
 * without following any link (tdb_io_posix_nofollow): a link or special
 * file planted in the staging folder is refused, never read.  @return 0
 * or -errno; on bad input -TDBFS_COMMIT_REFUSED with the reason in
 * NAME/__error. */
static int tdbfs_commit(struct tdbfs_mount *m, const char *name)
{
    struct tdb_error err;
    struct tdb_io sio;
    char *frag = NULL;
    char **names = NULL;
    size_t n = 0;
    int rc;

    memset(&sio, 0, sizeof sio);
    pthread_mutex_lock(&m->commit);
    rc = tdb_io_posix_nofollow(&sio, tdbfs_staging_fd(m->staging));
    if (rc < 0) {
        rc = -tdb_errno(rc);
        goto out;
    }
    tdbcli_error_clear(&err);
    rc = tdb_fragment_write(m->io, &sio, name, m->open->key,
                            tdbfs_next_ts(m), &frag, &err);
    if (rc < 0) {
        const char *why = tdbcli_error_text(rc, &err);
        int e = tdbfs_staging_set_error(m->staging, name, why);
        if (e < 0)
            tdbfs_log(m, "__staging/%s/" TDBFS_STAGING_ERROR ": %s", name,
                      strerror(-e));
        if (rc != TDB_E_INVAL)
            tdbfs_log(m, "commit of __staging/%s: %s", name, why);
        rc = rc == TDB_E_INVAL ? -TDBFS_COMMIT_REFUSED : -tdb_errno(rc);
        goto out;
    }
    {
        char why[TDB_ERROR_MSG_MAX];
        if (tdbfs_staging_remove(m->staging, name, why, sizeof why) < 0)
            tdbfs_log(m, "committed __staging/%s as %s, but removing it: %s",
                      name, frag ? frag : "?", why);
    }
    rc = 0;
    tdbfs_reload(m, &names, &n);
out:
    pthread_mutex_unlock(&m->commit);
    tdb_io_free(&sio);
    free(frag);
    if (names)
        tdbfs_invalidate_soon(m, names, n);
    return rc;
}

/* ------------------------------------------------------------ handlers */

static void tdbfs_init(void *userdata, struct fuse_conn_info *conn)
{
    conn->max_read = TDBFS_IO_MAX;
    conn->max_write = TDBFS_IO_MAX;
    /* Pages stay valid: a tree never changes, and staged files change
     * only through the mount. */
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

static void tdbfs_staging_entry(const struct stat *st, fuse_ino_t ino,
                                struct fuse_entry_param *e)
{
    memset(e, 0, sizeof *e);
    e->ino = ino;
    e->generation = 1;
    e->attr = *st;
    e->attr.st_ino = ino;
    e->attr_timeout = 0.0;
    e->entry_timeout = 0.0;
}

/* The entry of a metadata file created under __meta/ and still open. */
static bool tdbfs_lookup_created(struct tdbfs_mount *m, const char *name,
                                 struct fuse_entry_param *e)
{
    struct tdbfs_metarec *r;

    pthread_mutex_lock(&m->lock);
    for (r = m->recs; r; r = r->next)
        if ((r->ino & TDBFS_META_BIT) && !r->hidden &&
            strcmp(r->fname, name) == 0)
            break;
    if (r) {
        memset(e, 0, sizeof *e);
        e->ino = r->ino;
        e->generation = 1;
        tdbfs_rec_stat(m, r, &e->attr);
    }
    pthread_mutex_unlock(&m->lock);
    return r != NULL;
}

static void tdbfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct fuse_entry_param e;
    struct tdbfs_tree *t;
    struct tdb_error err;
    struct tdb_stat ts;
    uint64_t tino, ino;
    int rc;

    memset(&e, 0, sizeof e);
    if (tdbfs_staging_owns(parent)) {
        struct stat st;
        rc = m->staging ? tdbfs_staging_lookup(m->staging, parent, name,
                                               &ino, &st)
                        : -ENOENT;
        if (rc < 0) {
            fuse_reply_err(req, -rc);
            return;
        }
        tdbfs_staging_entry(&st, ino, &e);
        if (fuse_reply_entry(req, &e) != 0)
            tdbfs_staging_forget(m->staging, ino, 1);
        return;
    }
    if (parent & TDBFS_META_BIT) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    if (parent == FUSE_ROOT_ID && m->staging &&
        strcmp(name, TDBFS_STAGING_NAME) == 0) {
        struct stat st;
        rc = tdbfs_staging_stat(m->staging, TDBFS_STAGING_ROOT, &st);
        if (rc < 0) {
            fuse_reply_err(req, -rc);
            return;
        }
        tdbfs_staging_entry(&st, TDBFS_STAGING_ROOT, &e);
        fuse_reply_entry(req, &e);
        return;
    }
    t = tdbfs_tree_pin(m, parent, &tino);
    if (!t) {
        fuse_reply_err(req, ESTALE);
        return;
    }
    tdbcli_error_clear(&err);
    rc = tdb_fs_lookup(t->fs, tino, name, &ino, &err);
    if (rc == TDB_E_NOENT && m->rw && tino == t->meta_dir &&
        tdbfs_lookup_created(m, name, &e)) {
        /* A metadata file created and not yet closed. */
        fuse_reply_entry(req, &e);
        tdbfs_tree_unpin(m, t, 1);
        return;
    }
    if (rc == TDB_E_NOENT && !m->rw) {
        /* A negative entry the kernel may keep: the tree never changes. */
        e.ino = 0;
        e.entry_timeout = TDBFS_TIMEOUT;
        fuse_reply_entry(req, &e);
        tdbfs_tree_unpin(m, t, 1);
        return;
    }
    if (rc == 0)
        rc = tdb_fs_stat(t->fs, ino, &ts, &err);
    if (rc < 0) {
        tdbfs_reply_fail(req, "lookup", parent, rc, &err);
        tdbfs_tree_unpin(m, t, 1);
        return;
    }
    e.ino = tdbfs_ino(t, ino);
    e.generation = 1;
    e.attr_timeout = tdbfs_attr_timeout(m, e.ino);
    e.entry_timeout = TDBFS_TIMEOUT;
    tdbfs_fill_stat(m, t, ino, &ts, &e.attr);
    /* The pin becomes the kernel's lookup reference, taken back if the
     * reply is lost (the root is not counted: it is always there). */
    if (e.ino == FUSE_ROOT_ID) {
        fuse_reply_entry(req, &e);
        tdbfs_tree_unpin(m, t, 1);
        return;
    }
    tdbfs_tree_count(m, t, -1, 1);
    if (fuse_reply_entry(req, &e) != 0)
        tdbfs_tree_forget(m, t, 1);
}

static void tdbfs_forget_one(struct tdbfs_mount *m, fuse_ino_t ino,
                             uint64_t nlookup)
{
    if (tdbfs_staging_owns(ino)) {
        if (m->staging && ino != TDBFS_STAGING_ROOT)
            tdbfs_staging_forget(m->staging, ino, nlookup);
    } else if (!(ino & TDBFS_META_BIT) && ino != FUSE_ROOT_ID) {
        struct tdbfs_tree *t;
        uint64_t gen = ino >> TDBFS_GEN_SHIFT;
        pthread_mutex_lock(&m->lock);
        for (t = m->trees; t && t->gen != gen; t = t->next)
            ;
        pthread_mutex_unlock(&m->lock);
        tdbfs_tree_forget(m, t, nlookup);
    }
}

static void tdbfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    tdbfs_forget_one(tdbfs_mount_of(req), ino, nlookup);
    fuse_reply_none(req);
}

static void tdbfs_forget_multi(fuse_req_t req, size_t count,
                               struct fuse_forget_data *forgets)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);

    for (size_t i = 0; i < count; i++)
        tdbfs_forget_one(m, forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

static void tdbfs_getattr(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_metarec *r;
    struct tdbfs_tree *t;
    struct tdb_error err;
    struct tdb_stat ts;
    struct stat st;
    uint64_t tino;
    int rc;

    if (tdbfs_staging_owns(ino)) {
        rc = m->staging ? tdbfs_staging_stat(m->staging, ino, &st) : -ENOENT;
        if (rc < 0)
            fuse_reply_err(req, -rc);
        else
            fuse_reply_attr(req, &st, 0.0);
        return;
    }
    pthread_mutex_lock(&m->lock);
    r = tdbfs_rec_find(m, ino);
    if (r)
        tdbfs_rec_stat(m, r, &st);
    pthread_mutex_unlock(&m->lock);
    if (r) {
        fuse_reply_attr(req, &st, 0.0);
        return;
    }
    if (ino & TDBFS_META_BIT) {
        fuse_reply_err(req, ENOENT); /* written, closed and forgotten */
        return;
    }
    t = tdbfs_tree_pin(m, ino, &tino);
    if (!t) {
        fuse_reply_err(req, ESTALE);
        return;
    }
    tdbcli_error_clear(&err);
    rc = tdb_fs_stat(t->fs, tino, &ts, &err);
    if (rc < 0) {
        tdbfs_reply_fail(req, "getattr", ino, rc, &err);
    } else {
        tdbfs_fill_stat(m, t, tino, &ts, &st);
        fuse_reply_attr(req, &st, tdbfs_attr_timeout(m, ino));
    }
    tdbfs_tree_unpin(m, t, 1);
}

static void tdbfs_handle_free(struct tdbfs_mount *m, struct tdbfs_handle *h)
{
    if (!h)
        return;
    if (h->fd >= 0)
        close(h->fd);
    if (h->names)
        tdbfs_staging_names_free(h->names, h->nnames);
    if (h->rec)
        tdbfs_rec_close(m, h->rec);
    tdb_reader_close(h->rd); /* before the tree it reads may close */
    if (h->tree)
        tdbfs_tree_unpin(m, h->tree, 1);
    free(h);
}

static struct tdbfs_handle *tdbfs_handle_new(enum tdbfs_hkind kind)
{
    struct tdbfs_handle *h = calloc(1, sizeof *h);

    if (h) {
        h->kind = kind;
        h->fd = -1;
    }
    return h;
}

static void tdbfs_opendir(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_handle *h;
    int rc;

    if (tdbfs_staging_owns(ino)) {
        h = tdbfs_handle_new(TDBFS_H_STGDIR);
        if (!h) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        rc = m->staging ? tdbfs_staging_list(m->staging, ino, &h->names,
                                             &h->nnames)
                        : -ENOENT;
        if (rc < 0) {
            tdbfs_handle_free(m, h);
            fuse_reply_err(req, -rc);
            return;
        }
    } else {
        const char *name;
        uint64_t child;
        h = tdbfs_handle_new(TDBFS_H_DIR);
        if (!h) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        h->tree = tdbfs_tree_pin(m, ino, &h->tino);
        if (!h->tree) {
            tdbfs_handle_free(m, h);
            fuse_reply_err(req, (ino & TDBFS_META_BIT) ? ENOTDIR : ESTALE);
            return;
        }
        h->with_staging = ino == FUSE_ROOT_ID && m->staging;
        while (h->with_staging &&
               tdb_fs_readdir(h->tree->fs, h->tino, h->ntree, &name, &child,
                              NULL) == 0)
            h->ntree++;
        /* A tree's folders never change; the root of a writable mount
         * gains nothing either, but its __staging entry is ours. */
        fi->cache_readdir = !m->rw;
        fi->keep_cache = !m->rw;
    }
    fi->fh = (uint64_t)(uintptr_t)h;
    if (fuse_reply_open(req, fi) != 0)
        tdbfs_handle_free(m, h);
}

static void tdbfs_releasedir(fuse_req_t req, fuse_ino_t ino,
                             struct fuse_file_info *fi)
{
    tdbfs_handle_free(tdbfs_mount_of(req), tdbfs_handle_of(fi));
    fuse_reply_err(req, 0);
}

/* Entry `i` (0-based, after "." and "..") of an open folder.
 * @return 0, 1 past the end, or a TDB_E_* code. */
static int tdbfs_dir_entry(struct tdbfs_handle *h, uint64_t i,
                           const char **name, fuse_ino_t *child,
                           struct tdb_error *err)
{
    uint64_t c;
    int rc;

    if (h->kind == TDBFS_H_STGDIR) {
        if (i >= h->nnames)
            return 1;
        *name = h->names[i];
        *child = TDBFS_STAGING_BIT; /* not 0: some tools skip d_ino 0 */
        return 0;
    }
    if (h->with_staging && i == h->ntree) {
        *name = TDBFS_STAGING_NAME;
        *child = TDBFS_STAGING_ROOT;
        return 0;
    }
    rc = tdb_fs_readdir(h->tree->fs, h->tino, i, name, &c, err);
    if (rc == TDB_E_NOENT)
        return 1;
    if (rc < 0)
        return rc;
    *child = tdbfs_ino(h->tree, c);
    return 0;
}

/* Offsets: 0 ".", 1 "..", then 2 + the entry index; each entry carries
 * the offset of the next one. */
/* Checks the offset and handle of a read or readdir request and allocates
 * its reply buffer (at most TDBFS_IO_MAX bytes); on failure replies with
 * the error and returns NULL. */
static char *tdbfs_req_buf(fuse_req_t req, off_t off,
                           const struct tdbfs_handle *h, size_t *size)
{
    if (off < 0 || !h) {
        fuse_reply_err(req, EINVAL);
        return NULL;
    }
    if (*size > TDBFS_IO_MAX)
        *size = TDBFS_IO_MAX;
    char *buf = malloc(*size ? *size : 1);
    if (!buf)
        fuse_reply_err(req, ENOMEM);
    return buf;
}

static void tdbfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
                          off_t off, struct fuse_file_info *fi)
{
    struct tdbfs_handle *h = tdbfs_handle_of(fi);
    struct tdb_error err;
    size_t pos = 0;
    char *buf;

    if (!(buf = tdbfs_req_buf(req, off, h, &size)))
        return;
    for (uint64_t i = (uint64_t)off;; i++) {
        const char *name;
        fuse_ino_t child = ino;
        struct stat st;
        size_t len;

        if (i == 0) {
            name = ".";
        } else if (i == 1) {
            name = "..";
        } else {
            int rc;
            tdbcli_error_clear(&err);
            rc = tdbfs_dir_entry(h, i - 2, &name, &child, &err);
            if (rc == 1)
                break;
            if (rc < 0) {
                if (pos == 0) {
                    free(buf);
                    tdbfs_reply_fail(req, "readdir", ino, rc, &err);
                    return;
                }
                break; /* give what we have; the error comes back next call */
            }
        }
        /* Only st_ino and the type bits count; the type is left unknown
         * (DT_UNKNOWN) for children, since stat may decode offsets tiles. */
        memset(&st, 0, sizeof st);
        st.st_ino = child;
        if (i < 2)
            st.st_mode = S_IFDIR;
        len = fuse_add_direntry(req, buf + pos, size - pos, name, &st,
                                (off_t)(i + 1));
        if (len > size - pos)
            break;
        pos += len;
    }
    fuse_reply_buf(req, buf, pos);
    free(buf);
}

/* Opens staged file `ino` through a descriptor of our own. */
static void tdbfs_open_staged(fuse_req_t req, struct tdbfs_mount *m,
                              fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct tdbfs_handle *h = tdbfs_handle_new(TDBFS_H_STG);
    int rc;

    if (!h) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    rc = m->staging ? tdbfs_staging_open_file(m->staging, ino,
                                              fi->flags & ~O_APPEND, &h->fd)
                    : -ENOENT;
    if (rc < 0) {
        tdbfs_handle_free(m, h);
        fuse_reply_err(req, -rc);
        return;
    }
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->keep_cache = 0;
    if (fuse_reply_open(req, fi) != 0)
        tdbfs_handle_free(m, h);
}

/* Opens a metadata file for writing: a record holding its bytes (none
 * with O_TRUNC). */
static int tdbfs_open_meta(struct tdbfs_mount *m, struct tdbfs_tree *t,
                           uint64_t tino, fuse_ino_t ino, const char *name,
                           int flags, struct tdbfs_handle **out)
{
    struct tdbfs_handle *h = tdbfs_handle_new(TDBFS_H_META);
    struct tdb_stat ts;
    uint8_t *init = NULL;
    size_t got = 0;
    int rc;

    if (!h)
        return -ENOMEM;
    if (!(flags & O_TRUNC) && t && tdb_fs_stat(t->fs, tino, &ts, NULL) == 0 &&
        ts.size) {
        if (ts.size > TDBFS_META_MAX) {
            free(h);
            return -EFBIG;
        }
        init = malloc((size_t)ts.size);
        if (!init || tdb_fs_read(t->fs, tino, 0, init, (size_t)ts.size, &got,
                                 NULL) != 0) {
            free(init);
            free(h);
            return -EIO;
        }
    }
    rc = tdbfs_rec_open(m, ino, name, init, got, (flags & O_TRUNC) != 0,
                        &h->rec);
    free(init);
    if (rc < 0) {
        free(h);
        return rc;
    }
    if (rc == 1 && (flags & O_TRUNC)) {
        pthread_mutex_lock(&m->lock);
        tdbfs_rec_resize(h->rec, 0);
        pthread_mutex_unlock(&m->lock);
    }
    *out = h;
    return 0;
}

static void tdbfs_open(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
    struct tdbfs_handle *h = NULL;
    struct tdbfs_metarec *r;
    struct tdbfs_tree *t;
    uint64_t tino;
    int rc;

    if (tdbfs_staging_owns(ino)) {
        tdbfs_open_staged(req, m, ino, fi);
        return;
    }
    if (writing && !m->rw) {
        fuse_reply_err(req, EROFS);
        return;
    }
    if (ino & TDBFS_META_BIT) {
        /* A metadata file created and not yet closed. */
        pthread_mutex_lock(&m->lock);
        r = tdbfs_rec_find(m, ino);
        if (r) {
            r->refs++;
            if (fi->flags & O_TRUNC)
                tdbfs_rec_resize(r, 0);
        }
        pthread_mutex_unlock(&m->lock);
        h = r ? tdbfs_handle_new(TDBFS_H_META) : NULL;
        if (!h) {
            if (r)
                tdbfs_rec_close(m, r);
            fuse_reply_err(req, r ? ENOMEM : ENOENT);
            return;
        }
        h->rec = r;
        fi->direct_io = 1;
        fi->fh = (uint64_t)(uintptr_t)h;
        if (fuse_reply_open(req, fi) != 0)
            tdbfs_handle_free(m, h);
        return;
    }
    t = tdbfs_tree_pin(m, ino, &tino);
    if (!t) {
        fuse_reply_err(req, ESTALE);
        return;
    }
    pthread_mutex_lock(&m->lock);
    r = tdbfs_rec_find(m, ino);
    pthread_mutex_unlock(&m->lock);
    if (writing || r) {
        /* Writable only: a key of the root's __meta; an open record of it
         * serves readers too, so that they see what was written. */
        const char *name = tdbfs_meta_name(t, tino);
        if (!name) {
            tdbfs_tree_unpin(m, t, 1);
            fuse_reply_err(req, EROFS);
            return;
        }
        rc = tdbfs_open_meta(m, t, tino, ino, name,
                             writing ? fi->flags : 0, &h);
        if (rc < 0) {
            tdbfs_tree_unpin(m, t, 1);
            fuse_reply_err(req, -rc);
            return;
        }
        h->tree = t;
        h->tino = tino;
        fi->direct_io = 1;
    } else {
        struct tdb_error err;
        h = tdbfs_handle_new(TDBFS_H_TREE);
        if (!h) {
            tdbfs_tree_unpin(m, t, 1);
            fuse_reply_err(req, ENOMEM);
            return;
        }
        h->tree = t;
        h->tino = tino;
        tdbcli_error_clear(&err);
        rc = tdb_reader_open(&h->rd, t->fs, tino, &err);
        if (rc < 0) {
            tdbfs_handle_free(m, h);
            tdbfs_reply_fail(req, "open", ino, rc, &err);
            return;
        }
        fi->keep_cache = 1;
        fi->direct_io = 0;
        fi->noflush = 1; /* nothing to flush on close */
    }
    fi->fh = (uint64_t)(uintptr_t)h;
    if (fuse_reply_open(req, fi) != 0)
        tdbfs_handle_free(m, h);
}

static void tdbfs_read(fuse_req_t req, fuse_ino_t ino, size_t size,
                       off_t off, struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_handle *h = tdbfs_handle_of(fi);
    struct tdb_error err;
    size_t got = 0;
    char *buf;
    int rc;

    if (!(buf = tdbfs_req_buf(req, off, h, &size)))
        return;
    switch (h->kind) {
    case TDBFS_H_STG: {
        ssize_t n = pread(h->fd, buf, size, off);
        if (n < 0)
            fuse_reply_err(req, errno);
        else
            fuse_reply_buf(req, buf, (size_t)n);
        break;
    }
    case TDBFS_H_META:
        pthread_mutex_lock(&m->lock);
        if ((uint64_t)off < h->rec->len) {
            got = h->rec->len - (size_t)off;
            if (got > size)
                got = size;
            memcpy(buf, h->rec->buf + off, got);
        }
        pthread_mutex_unlock(&m->lock);
        fuse_reply_buf(req, buf, got);
        break;
    case TDBFS_H_TREE:
        tdbcli_error_clear(&err);
        rc = tdb_reader_read(h->rd, (uint64_t)off, buf, size, &got, &err);
        if (rc < 0) {
            if (tdbfs_worth_logging(rc))
                tdbfs_log(m, "read inode %llu at %lld+%zu: %s",
                          (unsigned long long)ino, (long long)off, size,
                          tdbcli_error_text(rc, &err));
            fuse_reply_err(req, tdb_errno(rc));
        } else {
            fuse_reply_buf(req, buf, got);
        }
        break;
    default:
        fuse_reply_err(req, EISDIR);
        break;
    }
    free(buf);
}

static void tdbfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                        size_t size, off_t off, struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_handle *h = tdbfs_handle_of(fi);
    uint64_t end;
    int rc;

    if (!h || off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    if (h->kind == TDBFS_H_STG) {
        ssize_t n = pwrite(h->fd, buf, size, off);
        if (n < 0)
            fuse_reply_err(req, errno);
        else
            fuse_reply_write(req, (size_t)n);
        return;
    }
    if (h->kind != TDBFS_H_META) {
        fuse_reply_err(req, EROFS);
        return;
    }
    end = (uint64_t)off + size;
    pthread_mutex_lock(&m->lock);
    rc = end > h->rec->len ? tdbfs_rec_resize(h->rec, end) : 0;
    if (rc == 0) {
        memcpy(h->rec->buf + off, buf, size);
        h->rec->dirty = true;
        h->rec->hidden = false;
    }
    pthread_mutex_unlock(&m->lock);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_write(req, size);
}

/* close() waits for flush, so a metadata value is written here and a bad
 * one fails the close (release's answer reaches nobody). */
static void tdbfs_flush(fuse_req_t req, fuse_ino_t ino,
                        struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_handle *h = tdbfs_handle_of(fi);

    if (h && h->kind == TDBFS_H_META)
        fuse_reply_err(req, -tdbfs_meta_commit(m, h->rec));
    else
        fuse_reply_err(req, 0);
}

static void tdbfs_release(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    tdbfs_handle_free(tdbfs_mount_of(req), tdbfs_handle_of(fi));
    fuse_reply_err(req, 0);
}

static void tdbfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                        struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_handle *h = tdbfs_handle_of(fi);
    int rc = 0;

    if (h && h->kind == TDBFS_H_STG)
        rc = (datasync ? fdatasync(h->fd) : fsync(h->fd)) != 0 ? errno : 0;
    else if (h && h->kind == TDBFS_H_META)
        rc = -tdbfs_meta_commit(m, h->rec);
    fuse_reply_err(req, rc);
}

/* The names of the xattrs, each NUL-terminated, into buf (NULL: size only).
 * @return the bytes they need. */
static size_t tdbfs_xattr_names(struct tdb_fs *fs, uint64_t tino, char *buf)
{
    size_t need = 0;
    const char *name;

    for (size_t i = 0; tdb_fs_listxattr(fs, tino, i, &name) == 0; i++) {
        size_t len = strlen(name) + 1;
        if (buf)
            memcpy(buf + need, name, len);
        need += len;
    }
    return need;
}

/* Replies to getxattr with `v` (len bytes) for a buffer of `size`. */
static void tdbfs_reply_xattr_value(fuse_req_t req, const void *v, size_t len,
                                    size_t size)
{
    if (size == 0)
        fuse_reply_xattr(req, len);
    else if (size < len)
        fuse_reply_err(req, ERANGE);
    else
        fuse_reply_buf(req, v, len);
}

static void tdbfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_metarec *r;
    struct tdbfs_tree *t;
    uint64_t tino;
    size_t need;
    char *buf;

    if (tdbfs_staging_owns(ino)) {
        tdbfs_reply_xattr_value(req, "", 0, size);
        return;
    }
    pthread_mutex_lock(&m->lock);
    r = tdbfs_rec_find(m, ino);
    bool typed = r && r->type >= 0;
    pthread_mutex_unlock(&m->lock);
    if (ino & TDBFS_META_BIT) {
        tdbfs_reply_xattr_value(req, TDBFS_DATATYPE_XATTR,
                                typed ? sizeof TDBFS_DATATYPE_XATTR : 0, size);
        return;
    }
    t = tdbfs_tree_pin(m, ino, &tino);
    if (!t) {
        fuse_reply_err(req, ESTALE);
        return;
    }
    need = tdbfs_xattr_names(t->fs, tino, NULL);
    buf = malloc(need ? need : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
    } else {
        tdbfs_xattr_names(t->fs, tino, buf);
        tdbfs_reply_xattr_value(req, buf, need, size);
        free(buf);
    }
    tdbfs_tree_unpin(m, t, 1);
}

static void tdbfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                           size_t size)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_metarec *r;
    struct tdbfs_tree *t;
    const char *dt = NULL;
    size_t need = 0;
    uint64_t tino;
    char *buf;
    int rc;

    if (tdbfs_staging_owns(ino)) {
        fuse_reply_err(req, ENODATA);
        return;
    }
    /* A metadata file being written reports the type it will get. */
    pthread_mutex_lock(&m->lock);
    r = tdbfs_rec_find(m, ino);
    if (r && r->type >= 0)
        dt = tdb_dt_name((unsigned)r->type);
    pthread_mutex_unlock(&m->lock);
    if (dt && strcmp(name, TDBFS_DATATYPE_XATTR) == 0) {
        tdbfs_reply_xattr_value(req, dt, strlen(dt), size);
        return;
    }
    if (ino & TDBFS_META_BIT) {
        fuse_reply_err(req, ENODATA);
        return;
    }
    t = tdbfs_tree_pin(m, ino, &tino);
    if (!t) {
        fuse_reply_err(req, ESTALE);
        return;
    }
    rc = tdb_fs_getxattr(t->fs, tino, name, NULL, 0, &need);
    if (rc < 0) {
        fuse_reply_err(req, rc == TDB_E_NOENT ? ENODATA : tdb_errno(rc));
    } else if (!(buf = malloc(need ? need : 1))) {
        fuse_reply_err(req, ENOMEM);
    } else {
        rc = tdb_fs_getxattr(t->fs, tino, name, buf, need, &need);
        if (rc < 0)
            fuse_reply_err(req, rc == TDB_E_NOENT ? ENODATA : tdb_errno(rc));
        else
            tdbfs_reply_xattr_value(req, buf, need, size);
        free(buf);
    }
    tdbfs_tree_unpin(m, t, 1);
}

/* user.tiledb.datatype on a metadata file being written sets the type of
 * its value. */
static void tdbfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                           const char *value, size_t size, int flags)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_metarec *r;
    char tname[64];
    int dt, err = 0;

    if (!m->rw || tdbfs_staging_owns(ino)) {
        fuse_reply_err(req, m->rw ? ENOTSUP : EROFS);
        return;
    }
    pthread_mutex_lock(&m->lock);
    r = tdbfs_rec_find(m, ino);
    if (!r) {
        err = EROFS; /* only a metadata file open for writing takes one */
    } else if (strcmp(name, TDBFS_DATATYPE_XATTR) != 0) {
        err = ENOTSUP;
    } else {
        while (size && value[size - 1] == '\0')
            size--;
        if (size == 0 || size >= sizeof tname) {
            err = EINVAL;
        } else {
            memcpy(tname, value, size);
            tname[size] = '\0';
            dt = tdb_dt_from_name(tname);
            if (dt < 0 || tdb_dt_size((unsigned)dt) == 0)
                err = EINVAL;
            else if ((flags & XATTR_CREATE) && r->type >= 0)
                err = EEXIST;
            else {
                r->type = dt;
                r->dirty = true;
            }
        }
        /* a refused type on a still empty file: nothing is stored for it
         * unless bytes follow */
        if (err == EINVAL && r->len == 0)
            r->dirty = false;
    }
    pthread_mutex_unlock(&m->lock);
    fuse_reply_err(req, err);
}

static void tdbfs_removexattr(fuse_req_t req, fuse_ino_t ino,
                              const char *name)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_metarec *r;
    int err = EROFS;

    pthread_mutex_lock(&m->lock);
    r = m->rw ? tdbfs_rec_find(m, ino) : NULL;
    if (r && strcmp(name, TDBFS_DATATYPE_XATTR) == 0) {
        err = r->type >= 0 ? 0 : ENODATA;
        r->type = -1;
        r->dirty = true;
    }
    pthread_mutex_unlock(&m->lock);
    fuse_reply_err(req, err);
}

static void tdbfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct statvfs sv;

    memset(&sv, 0, sizeof sv);
    if (m->staging)
        statvfs(tdbfs_staging_dir(m->staging), &sv);
    sv.f_bsize = TDBFS_IO_MAX;
    sv.f_namemax = 255;
    sv.f_flag = (m->rw ? 0 : ST_RDONLY) | ST_NOSUID | ST_NODEV;
    if (!m->staging)
        sv.f_frsize = 512;
    fuse_reply_statfs(req, &sv);
}

/* ------------------------------------------------------------- writes */

static void tdbfs_rofs(fuse_req_t req)
{
    fuse_reply_err(req, EROFS);
}

/* Whether fuse inode `ino` is the root's __meta (or __fragments) folder
 * of its tree; pins nothing. */
static bool tdbfs_is_root_dir(struct tdbfs_mount *m, fuse_ino_t ino,
                              bool frag)
{
    struct tdbfs_tree *t;
    uint64_t tino;
    bool yes;

    if (!m->rw || ino == FUSE_ROOT_ID)
        return false;
    t = tdbfs_tree_pin(m, ino, &tino);
    if (!t)
        return false;
    yes = tino == (frag ? t->frag_dir : t->meta_dir) && tino != 0;
    tdbfs_tree_unpin(m, t, 1);
    return yes;
}

static void tdbfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                          int to_set, struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_handle *h = tdbfs_handle_of(fi);
    struct tdbfs_metarec *r;
    struct stat st;
    int rc = 0;

    if (tdbfs_staging_owns(ino) && m->staging) {
        unsigned valid = 0;
        if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
            fuse_reply_err(req, EPERM);
            return;
        }
        if (to_set & FUSE_SET_ATTR_SIZE)
            valid |= TDBFS_SET_SIZE;
        if (to_set & FUSE_SET_ATTR_MODE)
            valid |= TDBFS_SET_MODE;
        if (to_set & FUSE_SET_ATTR_ATIME)
            valid |= TDBFS_SET_ATIME;
        if (to_set & FUSE_SET_ATTR_MTIME)
            valid |= TDBFS_SET_MTIME;
        if (to_set & FUSE_SET_ATTR_ATIME_NOW)
            valid |= TDBFS_SET_ATIME | TDBFS_SET_ATIME_NOW;
        if (to_set & FUSE_SET_ATTR_MTIME_NOW)
            valid |= TDBFS_SET_MTIME | TDBFS_SET_MTIME_NOW;
        rc = tdbfs_staging_setattr(m->staging, ino,
                                   h && h->kind == TDBFS_H_STG ? h->fd : -1,
                                   attr, valid, &st);
        if (rc < 0)
            fuse_reply_err(req, -rc);
        else
            fuse_reply_attr(req, &st, 0.0);
        return;
    }
    /* A metadata file being written: its size may change (truncation);
     * times are accepted and forgotten. */
    pthread_mutex_lock(&m->lock);
    r = h && h->kind == TDBFS_H_META ? h->rec : tdbfs_rec_find(m, ino);
    if (r && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID |
                        FUSE_SET_ATTR_MODE)))
        rc = -EPERM;
    else if (r && (to_set & FUSE_SET_ATTR_SIZE))
        rc = attr->st_size < 0 ? -EINVAL
                               : tdbfs_rec_resize(r, (uint64_t)attr->st_size);
    if (r && rc == 0)
        tdbfs_rec_stat(m, r, &st);
    pthread_mutex_unlock(&m->lock);
    if (!r)
        tdbfs_rofs(req);
    else if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_attr(req, &st, 0.0);
}

static void tdbfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                        mode_t mode, dev_t rdev)
{
    tdbfs_rofs(req);
}

static void tdbfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                        mode_t mode)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct fuse_entry_param e;
    struct stat st;
    uint64_t ino;
    int rc;

    if (!tdbfs_staging_owns(parent) || !m->staging) {
        fuse_reply_err(req, parent == FUSE_ROOT_ID && m->staging &&
                                    strcmp(name, TDBFS_STAGING_NAME) == 0
                                ? EEXIST : EROFS);
        return;
    }
    rc = tdbfs_staging_mkdir(m->staging, parent, name, mode, &ino, &st);
    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    tdbfs_staging_entry(&st, ino, &e);
    if (fuse_reply_entry(req, &e) != 0)
        tdbfs_staging_forget(m->staging, ino, 1);
}

static void tdbfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_tree *t;
    uint64_t tino, child;
    char *key;
    int rc;

    if (tdbfs_staging_owns(parent) && m->staging) {
        rc = tdbfs_staging_unlink(m->staging, parent, name);
        fuse_reply_err(req, -rc);
        return;
    }
    if (!tdbfs_is_root_dir(m, parent, false)) {
        tdbfs_rofs(req);
        return;
    }
    /* rm __meta/KEY: a deletion of the key. */
    t = tdbfs_tree_pin(m, parent, &tino);
    rc = t && tdb_fs_lookup(t->fs, tino, name, &child, NULL) == 0 ? 0
                                                                 : -ENOENT;
    tdbfs_tree_unpin(m, t, 1);
    if (rc == 0) {
        key = tdbfs_decode_name(name);
        rc = key ? tdbfs_meta_delete(m, key) : -errno;
        free(key);
    }
    fuse_reply_err(req, -rc);
}

static void tdbfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);

    if (tdbfs_staging_owns(parent) && m->staging)
        fuse_reply_err(req, -tdbfs_staging_rmdir(m->staging, parent, name));
    else
        tdbfs_rofs(req);
}

static void tdbfs_symlink(fuse_req_t req, const char *link,
                          fuse_ino_t parent, const char *name)
{
    tdbfs_rofs(req);
}

/* Renames inside __staging/, or commits: __staging/NAME -> __fragments/X
 * (X is any name: the fragment gets its own timestamped one). */
static void tdbfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                         fuse_ino_t newparent, const char *newname,
                         unsigned int flags)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    int rc;

    if (!m->staging || !tdbfs_staging_owns(parent)) {
        tdbfs_rofs(req);
        return;
    }
    if (tdbfs_staging_owns(newparent)) {
        rc = tdbfs_staging_rename(m->staging, parent, name, newparent,
                                  newname, flags);
        fuse_reply_err(req, -rc);
        return;
    }
    if (!tdbfs_is_root_dir(m, newparent, true)) {
        tdbfs_rofs(req);
        return;
    }
    if (flags & ~(unsigned)RENAME_NOREPLACE) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    rc = tdbfs_staging_check_commit(m->staging, parent, name);
    if (rc == -EINVAL)
        rc = -EROFS; /* a file, not a staged folder, into __fragments */
    if (rc == 0)
        rc = tdbfs_commit(m, name);
    fuse_reply_err(req, -rc);
}

static void tdbfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                       const char *newname)
{
    tdbfs_rofs(req);
}

/* Creates a staged file, or a metadata file of the root's __meta. */
static void tdbfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                         mode_t mode, struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdbfs_handle *h;
    struct fuse_entry_param e;
    struct tdbfs_tree *t;
    struct stat st;
    uint64_t ino, tino, child;
    int rc;

    if (tdbfs_staging_owns(parent) && m->staging) {
        h = tdbfs_handle_new(TDBFS_H_STG);
        if (!h) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        rc = tdbfs_staging_create(m->staging, parent, name,
                                  fi->flags & ~O_APPEND, mode, &ino, &st,
                                  &h->fd);
        if (rc < 0) {
            tdbfs_handle_free(m, h);
            fuse_reply_err(req, -rc);
            return;
        }
        tdbfs_staging_entry(&st, ino, &e);
        fi->fh = (uint64_t)(uintptr_t)h;
        fi->keep_cache = 0;
        if (fuse_reply_create(req, &e, fi) != 0) {
            tdbfs_staging_forget(m->staging, ino, 1);
            tdbfs_handle_free(m, h);
        }
        return;
    }
    if (!tdbfs_is_root_dir(m, parent, false)) {
        tdbfs_rofs(req);
        return;
    }
    t = tdbfs_tree_pin(m, parent, &tino);
    if (!t) {
        fuse_reply_err(req, ESTALE);
        return;
    }
    memset(&e, 0, sizeof e);
    e.generation = 1;
    if (tdb_fs_lookup(t->fs, tino, name, &child, NULL) == 0) {
        /* The key exists: open it for writing. */
        if (fi->flags & O_EXCL) {
            tdbfs_tree_unpin(m, t, 1);
            fuse_reply_err(req, EEXIST);
            return;
        }
        e.ino = tdbfs_ino(t, child);
        rc = tdbfs_open_meta(m, t, child, e.ino, name, fi->flags, &h);
        if (rc == 0) {
            h->tree = t;
            h->tino = child;
            tdbfs_tree_ref(m, t); /* the kernel's lookup of e.ino */
        }
    } else {
        tdbfs_tree_unpin(m, t, 1);
        pthread_mutex_lock(&m->lock);
        e.ino = TDBFS_META_BIT | m->next_meta_ino++;
        pthread_mutex_unlock(&m->lock);
        rc = tdbfs_open_meta(m, NULL, 0, e.ino, name, O_TRUNC, &h);
        t = NULL;
    }
    if (rc < 0) {
        tdbfs_tree_unpin(m, t, 1);
        fuse_reply_err(req, -rc);
        return;
    }
    pthread_mutex_lock(&m->lock);
    tdbfs_rec_stat(m, h->rec, &e.attr);
    pthread_mutex_unlock(&m->lock);
    e.attr.st_ino = e.ino;
    e.attr_timeout = 0.0;
    e.entry_timeout = 0.0; /* lookups find it until its first flush */
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->direct_io = 1;
    if (fuse_reply_create(req, &e, fi) != 0) {
        if (t)
            tdbfs_tree_forget(m, t, 1);
        tdbfs_handle_free(m, h);
    }
}

static void tdbfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
                            off_t offset, off_t length,
                            struct fuse_file_info *fi)
{
    struct tdbfs_handle *h = tdbfs_handle_of(fi);

    if (h && h->kind == TDBFS_H_STG)
        fuse_reply_err(req, fallocate(h->fd, mode, offset, length) != 0
                                ? errno : 0);
    else
        tdbfs_rofs(req);
}

static const struct fuse_lowlevel_ops tdbfs_ops = {
    .init = tdbfs_init,
    .lookup = tdbfs_lookup,
    .forget = tdbfs_forget,
    .forget_multi = tdbfs_forget_multi,
    .getattr = tdbfs_getattr,
    .opendir = tdbfs_opendir,
    .readdir = tdbfs_readdir,
    .releasedir = tdbfs_releasedir,
    .open = tdbfs_open,
    .read = tdbfs_read,
    .write = tdbfs_write,
    .flush = tdbfs_flush,
    .release = tdbfs_release,
    .fsync = tdbfs_fsync,
    .listxattr = tdbfs_listxattr,
    .getxattr = tdbfs_getxattr,
    .setxattr = tdbfs_setxattr,
    .removexattr = tdbfs_removexattr,
    .statfs = tdbfs_statfs,
    .setattr = tdbfs_setattr,
    .mknod = tdbfs_mknod,
    .mkdir = tdbfs_mkdir,
    .unlink = tdbfs_unlink,
    .rmdir = tdbfs_rmdir,
    .symlink = tdbfs_symlink,
    .rename = tdbfs_rename,
    .link = tdbfs_link,
    .create = tdbfs_create,
    .fallocate = tdbfs_fallocate,
};

/* ------------------------------------------------------- command line */

/* The contract's -o options; fuse_opt removes them from what FUSE sees. */
struct tdbfs_cmdline {
    char *source;
    char *timestamp;
    char *cache_size;
    char *threads;
    char *key_file;
    char *staging_dir;
    char *log;
    int rw;
    int writable;
    int ro;
    int has_dev;  /* dev or nodev given */
    int has_suid; /* suid or nosuid given */
};

#define TDBFS_OPT(t, field) { t, offsetof(struct tdbfs_cmdline, field), 1 }

static const struct fuse_opt tdbfs_opts[] = {
    TDBFS_OPT("timestamp=%s", timestamp),
    TDBFS_OPT("cache_size=%s", cache_size),
    TDBFS_OPT("threads=%s", threads),
    TDBFS_OPT("key_file=%s", key_file),
    TDBFS_OPT("staging_dir=%s", staging_dir),
    TDBFS_OPT("rw", rw),
    TDBFS_OPT("writable", writable),
    TDBFS_OPT("ro", ro),
    TDBFS_OPT("log=%s", log),
    /* noted, and kept for FUSE (kernel mount flags) */
    TDBFS_OPT("dev", has_dev), FUSE_OPT_KEY("dev", FUSE_OPT_KEY_KEEP),
    TDBFS_OPT("nodev", has_dev), FUSE_OPT_KEY("nodev", FUSE_OPT_KEY_KEEP),
    TDBFS_OPT("suid", has_suid), FUSE_OPT_KEY("suid", FUSE_OPT_KEY_KEEP),
    TDBFS_OPT("nosuid", has_suid), FUSE_OPT_KEY("nosuid", FUSE_OPT_KEY_KEEP),
    /* generic mount(8) options that mount.fuse3 hands on and libfuse does
     * not know; none matters to a filesystem whose files never change
     * unless written through it and that has no links, locks or i_version */
    FUSE_OPT_KEY("relatime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("norelatime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("strictatime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nostrictatime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("lazytime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nolazytime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("diratime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nodiratime", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("iversion", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("noiversion", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("mand", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nomand", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("symfollow", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nosymfollow", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_END
};

/* The first argument that is not an option is SOURCE; the next one is the
 * mount point, left for fuse_parse_cmdline. */
static int tdbfs_opt_proc(void *data, const char *arg, int key,
                          struct fuse_args *outargs)
{
    struct tdbfs_cmdline *cl = data;

    if (key == FUSE_OPT_KEY_NONOPT && !cl->source) {
        cl->source = strdup(arg);
        return cl->source ? 0 : -1;
    }
    return 1;
}

static void tdbfs_usage(const char *prog)
{
    printf("usage: %s [-o OPTIONS] SOURCE MOUNTPOINT\n"
           "Mounts a TileDB array or group folder SOURCE at MOUNTPOINT, "
           "read-only unless -o rw.\n\n"
           "tiledbfs options:\n"
           "    -o timestamp=T|T1:T2   open as of T (ms since epoch)\n"
           "    -o cache_size=N[KMG]   decoded-tile cache budget "
           "(default 256M)\n"
           "    -o threads=N           decoding threads (default: one per "
           "CPU)\n"
           "    -o key_file=PATH       32-byte AES-256-GCM key\n"
           "    -o rw                  enable __staging/ and __meta/ "
           "writes\n"
           "    -o writable            the same as rw, also through "
           "mount(8)\n"
           "    -o ro                  read-only (the default)\n"
           "    -o staging_dir=PATH    where staged bytes are kept "
           "(default\n"
           "                           SOURCE/../.NAME.tiledbfs-staging)\n"
           "    -o log=syslog|stderr   where the daemon logs (default: "
           "syslog,\n"
           "                           stderr with -f or -d)\n\n"
           "Through mount(8) (mount -t fuse.tiledbfs, or fstab), mount.fuse3 "
           "starts\n"
           "tiledbfs with dev or nodev, suid or nosuid, and rw unless ro "
           "was given;\n"
           "given those, rw is mount(8)'s default and the mount stays "
           "read-only:\n"
           "ask for writes with writable.\n\n",
           prog);
}

/* Whether the mount takes writes: writable, or rw where it is not merely
 * mount(8)'s default.  mount.fuse3 (mount -t fuse.tiledbfs, fstab) always
 * hands on dev or nodev and suid or nosuid, and mount(8) gives it rw
 * unless ro was asked for, so from there rw cannot mean "writes". */
static bool tdbfs_writes(const struct tdbfs_cmdline *cl)
{
    bool from_mount_helper = cl->has_dev && cl->has_suid;

    return cl->writable || (cl->rw && !from_mount_helper);
}

/* Hands the contract's options to the shared parser. */
static int tdbfs_apply(const struct tdbfs_cmdline *cl,
                       struct tdbcli_options *o)
{
    if (cl->timestamp && tdbcli_option(o, "timestamp", cl->timestamp) != 0)
        return -1;
    if (cl->cache_size && tdbcli_option(o, "cache_size", cl->cache_size) != 0)
        return -1;
    if (cl->threads && tdbcli_option(o, "threads", cl->threads) != 0)
        return -1;
    if (cl->key_file && tdbcli_option(o, "key_file", cl->key_file) != 0)
        return -1;
    if (cl->staging_dir &&
        tdbcli_option(o, "staging_dir", cl->staging_dir) != 0)
        return -1;
    if (tdbfs_writes(cl) && cl->ro) {
        fprintf(stderr, "%s: ro and %s do not go together\n",
                program_invocation_short_name,
                cl->writable ? "writable" : "rw");
        return -1;
    }
    if (tdbfs_writes(cl) && tdbcli_option(o, "rw", NULL) != 0)
        return -1;
    if (tdbfs_writes(cl) && cl->timestamp) {
        fprintf(stderr, "%s: -o rw and timestamp= do not go together (a "
                "write is made now, outside the opened range)\n",
                program_invocation_short_name);
        return -1;
    }
    return 0;
}

/* Mount options FUSE gets from us: read-only unless rw, permissions
 * checked by the kernel, 1 MiB reads, and SOURCE as the name `mount`
 * shows. */
static int tdbfs_mount_args(struct fuse_args *args, const char *source,
                            bool rw)
{
    char *opts = NULL;
    int rc = -1;

    /* default_permissions: the kernel checks every access against the
     * modes and owners we report (staged entries are private to us), so
     * that allow_other lets others read the array, not our staged files */
    if (fuse_opt_add_opt(&opts, rw ? "rw" : "ro") != 0 ||
        fuse_opt_add_opt(&opts, "default_permissions") != 0 ||
        fuse_opt_add_opt(&opts, "max_read=1048576") != 0 ||
        fuse_opt_add_opt(&opts, "subtype=tiledbfs") != 0)
        goto out;
    {
        char *fsname = NULL;
        if (asprintf(&fsname, "fsname=%s", source) < 0)
            goto out;
        rc = fuse_opt_add_opt_escaped(&opts, fsname);
        free(fsname);
        if (rc != 0) {
            rc = -1;
            goto out;
        }
    }
    rc = fuse_opt_add_arg(args, "-o") == 0 && fuse_opt_add_arg(args, opts) == 0
             ? 0 : -1;
out:
    free(opts);
    return rc;
}

/* Removes the fragment folders that commits of this staging folder began
 * and never committed (killed before the commit file): each staged folder's
 * marker names the fragment its last commit started.  Fragment folders
 * without a commit file that no marker names are left alone: another
 * writer (TileDB itself) may be writing them.  The staging folder is
 * locked, so no other daemon is committing from it. */
static void tdbfs_clean_orphans(struct tdbfs_mount *m)
{
    struct tdb_error err;
    struct tdb_names n;
    struct tdb_io sio;

    if (tdb_io_posix_nofollow(&sio, tdbfs_staging_fd(m->staging)) != 0)
        return;
    tdbcli_error_clear(&err);
    if (tdb_io_names(&sio, "", &n, &err) == 0) {
        for (size_t i = 0; i < n.n; i++) {
            char *gone = NULL;
            if (!n.is_dir[i])
                continue;
            tdbcli_error_clear(&err);
            if (tdb_fragment_clean(m->io, &sio, n.v[i], &gone, &err) != 0)
                fprintf(stderr, "%s: __staging/%s: %s\n",
                        program_invocation_short_name, n.v[i], err.msg);
            else if (gone)
                fprintf(stderr, "%s: removed __fragments/%s, left uncommitted "
                        "by an unfinished commit of __staging/%s\n",
                        program_invocation_short_name, gone, n.v[i]);
            free(gone);
        }
        tdb_names_free(&n);
    }
    tdb_io_free(&sio);
}

/* The staging folder: staging_dir=, else SOURCE/../.NAME.tiledbfs-staging.
 * @return 0, or -1 after printing an error. */
static int tdbfs_open_staging(struct tdbfs_mount *m, const char *source,
                              const char *given)
{
    char *dir = NULL, *a = strdup(source), *b = strdup(source);
    int rc = -1;

    if (!a || !b)
        goto out;
    if (given)
        dir = strdup(given);
    else if (asprintf(&dir, "%s/.%s.tiledbfs-staging", dirname(a),
                      basename(b)) < 0)
        dir = NULL;
    if (!dir)
        goto out;
    {
        char why[512];
        rc = tdbfs_staging_open(&m->staging, dir, why, sizeof why);
        if (rc < 0) {
            fprintf(stderr, "%s: staging_dir %s: %s\n",
                    program_invocation_short_name, dir,
                    why[0] ? why : strerror(-rc));
            rc = -1;
        }
    }
    if (rc == 0)
        tdbfs_clean_orphans(m);
out:
    if (rc < 0 && (!a || !b || !dir))
        fprintf(stderr, "%s: %s\n", program_invocation_short_name,
                strerror(ENOMEM));
    free(a);
    free(b);
    free(dir);
    return rc;
}

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts fopts;
    struct fuse_loop_config *config = NULL;
    struct tdbfs_cmdline cl;
    struct tdbcli_options opts;
    struct tdbcli_source src;
    struct tdbfs_mount m;
    struct fuse_session *se = NULL;
    struct tdb_cache *cache = NULL;
    uint64_t ino;
    int errfd = -1;
    int ret = 1;

    memset(&fopts, 0, sizeof fopts);
    memset(&cl, 0, sizeof cl);
    memset(&src, 0, sizeof src);
    memset(&m, 0, sizeof m);
    pthread_mutex_init(&m.lock, NULL);
    pthread_mutex_init(&m.commit, NULL);
    pthread_mutex_init(&m.qlock, NULL);
    pthread_cond_init(&m.qcond, NULL);
    tdbcli_options_init(&opts);

    if (fuse_opt_parse(&args, &cl, tdbfs_opts, tdbfs_opt_proc) != 0)
        goto out_args;
    if (fuse_parse_cmdline(&args, &fopts) != 0)
        goto out_args;
    if (fopts.show_help) {
        tdbfs_usage(argv[0]);
        fuse_cmdline_help();
        fuse_lowlevel_help();
        ret = 0;
        goto out_args;
    }
    if (fopts.show_version) {
        printf("tiledbfs " PACKAGE_VERSION "\n");
        fflush(stdout);
        fuse_lowlevel_version();
        ret = 0;
        goto out_args;
    }
    if (!cl.source || !fopts.mountpoint) {
        fprintf(stderr, "usage: %s [-o OPTIONS] SOURCE MOUNTPOINT "
                "(%s --help for more)\n", argv[0], argv[0]);
        goto out_args;
    }
    if (tdbfs_apply(&cl, &opts) != 0)
        goto out_args;
    m.log_stderr = fopts.foreground;
    if (cl.log && strcmp(cl.log, "stderr") == 0) {
        m.log_stderr = true;
    } else if (cl.log && strcmp(cl.log, "syslog") == 0) {
        m.log_stderr = false;
    } else if (cl.log) {
        fprintf(stderr, "%s: log=%s: not syslog or stderr\n",
                program_invocation_short_name, cl.log);
        goto out_args;
    }
    /* One tile cache for the mount: every tree a write opens shares it. */
    if (tdb_cache_create(&cache, opts.open.cache_bytes
                                     ? opts.open.cache_bytes
                                     : TDB_DEFAULT_CACHE_BYTES) != 0) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name,
                strerror(ENOMEM));
        goto out_args;
    }
    opts.open.cache = cache;
    if (tdbcli_open(&src, cl.source, &opts) != 0)
        goto out_args;

    m.io = &src.io;
    m.open = &opts.open;
    m.cur = tdbfs_tree_new(src.fs);
    if (!m.cur) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name,
                strerror(ENOMEM));
        goto out_close;
    }
    src.fs = NULL; /* the tree owns it now */
    m.cur->gen = 1;
    m.trees = m.cur;
    m.next_gen = 2;
    m.next_meta_ino = 1;
    m.rw = opts.rw;
    m.is_array = tdb_fs_lookup(m.cur->fs, TDB_ROOT_INO, "__array.json", &ino,
                               NULL) == 0;
    m.singlethread = fopts.singlethread;
    m.uid = getuid();
    m.gid = getgid();
    if (m.rw && m.is_array &&
        tdbfs_open_staging(&m, src.path, opts.staging_dir) != 0)
        goto out_close;
    if (tdbfs_mount_args(&args, src.path, opts.rw) != 0) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name,
                strerror(ENOMEM));
        goto out_close;
    }

    se = fuse_session_new(&args, &tdbfs_ops, sizeof tdbfs_ops, &m);
    if (!se)
        goto out_close;
    m.se = se;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_session;
    if (fuse_session_mount(se, fopts.mountpoint) != 0)
        goto out_signals;
    /* fuse_daemonize points stderr at /dev/null: log=stderr keeps it */
    if (m.log_stderr && !fopts.foreground) {
        errfd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        if (errfd < 0)
            m.log_stderr = false;
    }
    if (!m.log_stderr)
        openlog("tiledbfs", LOG_PID, LOG_DAEMON);
    fuse_daemonize(fopts.foreground);
    if (errfd >= 0) {
        dup2(errfd, STDERR_FILENO);
        close(errfd);
    }

    /* After fuse_daemonize: threads do not survive its fork. */
    if (m.rw && fopts.singlethread) {
        if (pthread_create(&m.notifier, NULL, tdbfs_notifier, &m) == 0)
            m.qthread = true;
        else
            tdbfs_log(&m, "no invalidation thread: the kernel may show "
                      "stale entries after a write");
    }

    if (fopts.singlethread) {
        ret = fuse_session_loop(se);
    } else {
        config = fuse_loop_cfg_create();
        if (!config) {
            ret = -1;
        } else {
            fuse_loop_cfg_set_clone_fd(config, (unsigned)fopts.clone_fd);
            fuse_loop_cfg_set_max_threads(config, fopts.max_threads);
            if (fopts.max_idle_threads != UINT_MAX)
                fuse_loop_cfg_set_idle_threads(config,
                                               fopts.max_idle_threads);
            ret = fuse_session_loop_mt(se, config);
            fuse_loop_cfg_destroy(config);
        }
    }
    ret = ret != 0;
    if (m.qthread) {
        pthread_mutex_lock(&m.qlock);
        m.qstop = true;
        pthread_cond_signal(&m.qcond);
        pthread_mutex_unlock(&m.qlock);
        pthread_join(m.notifier, NULL);
    }
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_session:
    fuse_session_destroy(se);
out_close:
    while (m.trees) {
        struct tdbfs_tree *t = m.trees;
        m.trees = t->next;
        tdbfs_tree_free(t);
    }
    while (m.recs) {
        struct tdbfs_metarec *r = m.recs;
        m.recs = r->next;
        free(r->buf);
        free(r->key);
        free(r->fname);
        free(r);
    }
    tdbfs_staging_close(m.staging);
    tdbcli_close(&src);
out_args:
    tdb_cache_free(cache);
    tdbcli_options_free(&opts);
    free(cl.source);
    free(cl.timestamp);
    free(cl.cache_size);
    free(cl.threads);
    free(cl.key_file);
    free(cl.staging_dir);
    free(cl.log);
    free(fopts.mountpoint);
    fuse_opt_free_args(&args);
    pthread_cond_destroy(&m.qcond);
    pthread_mutex_destroy(&m.qlock);
    pthread_mutex_destroy(&m.commit);
    pthread_mutex_destroy(&m.lock);
    return ret;
}
