/* meta.c: the metadata files of __meta/: buffers, their datatype, and storing or deleting a value. */
/*
 * A file of __meta/ opened for writing is buffered in memory (one record
 * per inode, shared by its open files) and stored as one metadata put:
 * by the flush (which close() waits for) that follows writes, so that one
 * write by any tool (a shell's redirection, which closes a copy of the
 * truncated file before the command writes; cp; dd) stores one value,
 * once; a file only truncated by fsync or its last close.  A bad value or
 * a failed store fails that flush or fsync, and every later one, until
 * the value is stored (its last close does not try again).  Files created in __meta/ get inode numbers with
 * TDBM_META_BIT set.
 */
#include "priv.h"
#include "tiledb_format_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tdbm_metarec *tdbm_rec_find(struct tdbm_mount *m, uint64_t ino)
{
    for (struct tdbm_metarec *r = m->recs; r; r = r->next)
        if (r->ino == ino)
            return r;
    return NULL;
}

/* What a new record of a metadata file holds. */
struct tdbm_recinit {
    uint64_t ino;
    const char *name;       /* under __meta/ */
    const uint8_t *bytes;   /* its value so far (copied) */
    size_t len;
    bool dirty;             /* not stored as it is */
};

/* A new record as `in` says, with one open file.  @return it, or NULL
 * with errno. */
static struct tdbm_metarec *tdbm_rec_new(const struct tdbm_recinit *in)
{
    struct tdbm_metarec *r = calloc(1, sizeof *r);

    if (!r)
        return NULL;
    r->key = tdbm_name_decode(in->name);
    if (!r->key) {
        free(r);
        return NULL;
    }
    r->fname = strdup(in->name);
    if (in->len && (r->buf = malloc(in->len)))
        memcpy(r->buf, in->bytes, in->len);
    if (!r->fname || (in->len && !r->buf)) {
        free(r->buf);
        free(r->fname);
        free(r->key);
        free(r);
        errno = ENOMEM;
        return NULL;
    }
    r->len = r->cap = in->len;
    r->ino = in->ino;
    r->type = -1;
    r->dirty = in->dirty;
    r->refs = 1;
    return r;
}

/* The record of in->ino with one more open file, made as `in` says when
 * missing.  @return 0, 1 for an existing record (the caller keeps its
 * bytes), or -errno. */
static int tdbm_rec_open(struct tdbm_mount *m, const struct tdbm_recinit *in,
                         struct tdbm_metarec **out)
{
    struct tdbm_metarec *r;

    pthread_mutex_lock(&m->lock);
    r = tdbm_rec_find(m, in->ino);
    if (r) {
        r->refs++;
        pthread_mutex_unlock(&m->lock);
        *out = r;
        return 1;
    }
    pthread_mutex_unlock(&m->lock);

    r = tdbm_rec_new(in);
    if (!r)
        return -errno;
    pthread_mutex_lock(&m->lock);
    r->next = m->recs;
    m->recs = r;
    pthread_mutex_unlock(&m->lock);
    *out = r;
    return 0;
}

static void tdbm_rec_close(struct tdbm_mount *m, struct tdbm_metarec *r)
{
    bool gone = false;

    pthread_mutex_lock(&m->lock);
    if (--r->refs == 0) {
        for (struct tdbm_metarec **pp = &m->recs; *pp; pp = &(*pp)->next) {
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
int tdbm_rec_resize(struct tdbm_metarec *r, uint64_t len)
{
    if (len > TDBM_META_MAX)
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

void tdbm_rec_stat(const struct tdbm_mount *m, const struct tdbm_metarec *r,
                   struct stat *st)
{
    uint64_t ms = tdb_now_ms(); /* the engine's clock */
    struct timespec now = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

    memset(st, 0, sizeof *st);
    st->st_ino = (ino_t)r->ino;
    st->st_mode = S_IFREG | (0644 & ~m->opts->umask); /* owner writes */
    st->st_nlink = 1;
    st->st_uid = m->cfg.uid;
    st->st_gid = m->cfg.gid;
    st->st_size = (off_t)r->len;
    st->st_blksize = TDBM_IO_MAX;
    st->st_blocks = (blkcnt_t)((r->len + 511) / 512);
    st->st_mtim = now;
    st->st_atim = now;
    st->st_ctim = now;
}

/* The entry of a metadata file created under __meta/ and still open. */
bool tdbm_lookup_created(struct tdbm_mount *m, const char *name,
                         struct tdbm_entry *e)
{
    struct tdbm_metarec *r;

    pthread_mutex_lock(&m->lock);
    for (r = m->recs; r; r = r->next)
        if ((r->ino & TDBM_META_BIT) && !r->hidden &&
            strcmp(r->fname, name) == 0)
            break;
    if (r) {
        memset(e, 0, sizeof *e);
        e->ino = r->ino;
        e->generation = 1;
        tdbm_rec_stat(m, r, &e->attr);
    }
    pthread_mutex_unlock(&m->lock);
    return r != NULL;
}

/* The name of engine inode `tino` when it is a key file of the root's
 * __meta, else NULL (valid while g is pinned). */
const char *tdbm_meta_name(const struct tdbm_gen *g, uint64_t tino)
{
    const char *name;
    uint64_t child;

    if (!g->meta_dir || tino == g->meta_dir)
        return NULL;
    for (uint64_t i = 0;
         tdb_fs_readdir(g->fs, g->meta_dir, i, &name, &child, NULL) == 0; i++)
        if (child == tino)
            return name;
    return NULL;
}

/* The bytes of engine file `at`, unless O_TRUNC in `flags` or at->gen is
 * NULL: *buf (malloc'd; NULL when there are none) and *len.  @return 0
 * or -errno. */
static int tdbm_meta_bytes(const struct tdbm_node *at, int flags,
                           uint8_t **buf, size_t *len)
{
    struct tdb_stat ts;

    *buf = NULL;
    *len = 0;
    if ((flags & O_TRUNC) || !at->gen ||
        tdb_fs_stat(at->gen->fs, at->tino, &ts, NULL) != 0 || !ts.size)
        return 0;
    if (ts.size > TDBM_META_MAX)
        return -EFBIG;
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, malloc((size_t)ts.size));
    int r = s.buf ? tdb_fs_read(at->gen->fs, at->tino, 0, (size_t)ts.size, &s,
                                NULL)
                  : TDB_E_NOMEM;
    *buf = s.buf;
    *len = s.got;
    tdb_sink_release(&s);   /* the buffer is ours: it stays */
    if (r) {
        free(*buf);
        *buf = NULL;
        *len = 0;
        return -EIO;
    }
    return 0;
}

/* Opens metadata file `name` at node `at` (for writing, or to read what a
 * writer has written): a record holding its bytes (none with O_TRUNC).
 * The handle takes at->gen's pin. */
int tdbm_open_meta(struct tdbm_mount *m, const struct tdbm_node *at,
                   const char *name, int flags, struct tdbm_handle **out)
{
    struct tdbm_handle *h = tdbm_handle_new(TDBM_H_META);
    struct tdbm_recinit in = {.ino = at->ino, .name = name,
                              .dirty = (flags & O_TRUNC) != 0};
    uint8_t *init;
    int rc;

    if (!h)
        return -ENOMEM;
    rc = tdbm_meta_bytes(at, flags, &init, &in.len);
    in.bytes = init;
    if (rc == 0)
        rc = tdbm_rec_open(m, &in, &h->rec);
    free(init);
    if (rc < 0) {
        free(h);
        return rc;
    }
    h->writer = (flags & O_ACCMODE) != O_RDONLY;
    if (rc == 1 && (flags & O_TRUNC)) {
        pthread_mutex_lock(&m->lock);
        tdbm_rec_resize(h->rec, 0);
        pthread_mutex_unlock(&m->lock);
    }
    h->gen = at->gen;
    h->tino = at->tino;
    *out = h;
    return 0;
}

/* Opens a metadata file created and not yet closed (bit 61). */
int tdbm_open_created(struct tdbm_mount *m, uint64_t ino, int flags,
                      struct tdbm_handle **out)
{
    struct tdbm_metarec *r;
    struct tdbm_handle *h;

    pthread_mutex_lock(&m->lock);
    r = tdbm_rec_find(m, ino);
    if (r) {
        r->refs++;
        if (flags & O_TRUNC)
            tdbm_rec_resize(r, 0);
    }
    pthread_mutex_unlock(&m->lock);
    h = r ? tdbm_handle_new(TDBM_H_META) : NULL;
    if (!h) {
        if (r)
            tdbm_rec_close(m, r);
        return r ? -ENOMEM : -ENOENT;
    }
    h->rec = r;
    h->writer = (flags & O_ACCMODE) != O_RDONLY;
    *out = h;
    return 0;
}

/* Creates (or opens, when the key exists) metadata file `name` of the
 * root's __meta folder `parent`. */
int tdbm_meta_create(struct tdbm_mount *m, uint64_t parent, const char *name,
                     int flags, struct tdbm_entry *e,
                     struct tdbm_handle **out)
{
    struct tdbm_handle *h = NULL;
    struct tdbm_gen *g;
    uint64_t tino, child;
    int rc;

    g = tdbm_gen_pin(m, parent, &tino);
    if (!g)
        return -ESTALE;
    memset(e, 0, sizeof *e);
    e->generation = 1;
    if (tdb_fs_lookup(g->fs, tino, name, &child, NULL) == 0) {
        /* The key exists: open it for writing. */
        struct tdbm_node at = {g, child, tdbm_gen_ino(g, child)};
        if (flags & O_EXCL) {
            tdbm_gen_unpin(m, g, 1);
            return -EEXIST;
        }
        e->ino = at.ino;
        rc = tdbm_open_meta(m, &at, name, flags, &h);
        if (rc == 0)
            tdbm_gen_ref(m, g); /* the kernel's lookup of e->ino */
    } else {
        struct tdbm_node at = {NULL, 0, 0};
        tdbm_gen_unpin(m, g, 1);
        pthread_mutex_lock(&m->lock);
        at.ino = e->ino = TDBM_META_BIT | m->next_meta_ino++;
        pthread_mutex_unlock(&m->lock);
        rc = tdbm_open_meta(m, &at, name, flags | O_TRUNC, &h);
        g = NULL;
    }
    if (rc < 0) {
        tdbm_gen_unpin(m, g, 1);
        return rc;
    }
    pthread_mutex_lock(&m->lock);
    tdbm_rec_stat(m, h->rec, &e->attr);
    pthread_mutex_unlock(&m->lock);
    e->attr.st_ino = (ino_t)e->ino;
    e->attr_timeout = 0.0;
    e->entry_timeout = 0.0; /* lookups find it until its first flush */
    *out = h;
    return 0;
}

/* Whether a store `at` has something to do (m->lock held); marks a
 * created file with nothing to store hidden.  The last close stores only
 * a value no flush was due to store (a file only truncated): bytes
 * written that are still unstored then had their flush (every close
 * flushes) fail, and the writer was told; they are not stored behind its
 * back. */
static bool tdbm_meta_due(struct tdbm_metarec *r, enum tdbm_store_at at)
{
    if (!r->dirty) {
        r->hidden = true;
        return false;
    }
    switch (at) {
    case TDBM_STORE_FLUSH: return r->wrote;
    case TDBM_STORE_LAST: return !r->wrote;
    default: return true;
    }
}

/* Writes metadata entry e as one metadata file of the mount's source, said
 * in the log when it fails.  @return tdb_meta_write's code, or -errno. */
static int tdbm_meta_commit(struct tdbm_mount *m,
                            const struct tdb_meta_entry *e)
{
    struct tdb_error err;
    tdb_error_clear(&err);
    int rc = tdb_meta_write(m->io, TDBM_META_DIR, e,
                            &(struct tdb_commit_options){m->open->key,
                                                         tdbm_next_ts(m)},
                            &err);
    if (rc < 0) {
        tdbm_log(m, "__meta/%s: %s", e->name, tdb_error_text(rc, &err));
        rc = -tdb_errno(rc);
    }
    return rc;
}

/* Puts value val (len bytes of `type`) of metadata key `key`, said in
 * the log when it fails.  @return tdb_meta_write's code, or -errno. */
static int tdbm_meta_put(struct tdbm_mount *m, const char *key, unsigned type,
                         const uint8_t *val, size_t len)
{
    unsigned tsize = tdb_dt_size(type);

    if (!tsize || len % tsize != 0 || len / tsize > UINT32_MAX) {
        tdbm_log(m, "__meta/%s: %zu bytes are not a whole number of %s "
                 "values", key, len, tdb_dt_name(type));
        return -EINVAL;
    }
    uint32_t count = (uint32_t)(len / tsize);
    return tdbm_meta_commit(m, &(struct tdb_meta_entry){key, type, count,
                                                        val, false});
}

/* Writes a record as one metadata put, when due (tdbm_meta_due); on a
 * failure the record stays unstored, so that the next flush, fsync or
 * close tries again (and fails again until it can store).  m->commit not
 * held.  @return 0 or -errno. */
int tdbm_meta_store(struct tdbm_mount *m, struct tdbm_metarec *r,
                    enum tdbm_store_at at)
{
    char **names = NULL;
    size_t n = 0;
    unsigned type;
    uint8_t *val = NULL;
    size_t len;
    int rc;

    pthread_mutex_lock(&m->commit);
    pthread_mutex_lock(&m->lock);
    if (!tdbm_meta_due(r, at)) {
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_unlock(&m->commit);
        return 0;
    }
    type = r->type < 0 ? TDB_STRING_UTF8 : (unsigned)r->type;
    len = r->len;
    val = malloc(len ? len : 1);
    if (val && len)
        memcpy(val, r->buf, len);
    /* writes made while this one is stored mark it dirty again */
    r->dirty = r->wrote = false;
    pthread_mutex_unlock(&m->lock);
    rc = val ? tdbm_meta_put(m, r->key, type, val, len) : -ENOMEM;
    if (rc >= 0)
        tdbm_reload(m, &names, &n);
    if (rc < 0) {
        pthread_mutex_lock(&m->lock);
        r->dirty = r->wrote = true;
        if (rc == -EINVAL)
            r->hidden = true; /* a value that cannot be stored as it is */
        pthread_mutex_unlock(&m->lock);
    }
    pthread_mutex_unlock(&m->commit);
    free(val);
    if (names)
        tdbm_invalidate(m, names, n);
    return rc;
}

/* Closes one open file of record r; the last one stores a file only
 * truncated (`: > FILE` stores the empty value here; tdbm_meta_due).  Its
 * failure is logged: no caller is left to tell. */
void tdbm_meta_release(struct tdbm_mount *m, struct tdbm_metarec *r)
{
    bool last;

    pthread_mutex_lock(&m->lock);
    last = r->refs == 1 && r->dirty && !r->wrote;
    pthread_mutex_unlock(&m->lock);
    if (last)
        tdbm_meta_store(m, r, TDBM_STORE_LAST);
    tdbm_rec_close(m, r);
}

/* Deletes metadata key `key` (decoded).  @return 0 or -errno. */
int tdbm_meta_delete(struct tdbm_mount *m, const char *key)
{
    char **names = NULL;
    size_t n = 0;
    int rc;

    pthread_mutex_lock(&m->commit);
    rc = tdbm_meta_commit(m, &(struct tdb_meta_entry){key, TDB_STRING_UTF8,
                                                      0, NULL, true});
    if (rc >= 0) {
        rc = 0;
        tdbm_reload(m, &names, &n);
    }
    pthread_mutex_unlock(&m->commit);
    if (names)
        tdbm_invalidate(m, names, n);
    return rc;
}

/* user.tiledb.datatype on a metadata file being written sets the type of
 * its value. */
int tdbm_setxattr(struct tdbm_mount *m, uint64_t ino, const char *name,
                  const char *value, size_t size, bool create_only)
{
    struct tdbm_metarec *r;
    char tname[64];
    int dt, err = 0;

    if (!m->rw || (ino & TDBM_STAGING_BIT))
        return m->rw ? -ENOTSUP : -EROFS;
    pthread_mutex_lock(&m->lock);
    r = tdbm_rec_find(m, ino);
    if (!r) {
        err = EROFS; /* only a metadata file open for writing takes one */
    } else if (strcmp(name, TDBM_DATATYPE_XATTR) != 0) {
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
            else if (create_only && r->type >= 0)
                err = EEXIST;
            else {
                r->type = dt;
                r->dirty = r->wrote = true;
            }
        }
        /* a refused type on a still empty file: nothing is stored for it
         * unless bytes follow */
        if (err == EINVAL && r->len == 0)
            r->dirty = r->wrote = false;
    }
    pthread_mutex_unlock(&m->lock);
    return -err;
}

int tdbm_removexattr(struct tdbm_mount *m, uint64_t ino, const char *name)
{
    struct tdbm_metarec *r;
    int err = EROFS;

    pthread_mutex_lock(&m->lock);
    r = m->rw ? tdbm_rec_find(m, ino) : NULL;
    if (r && strcmp(name, TDBM_DATATYPE_XATTR) == 0) {
        err = r->type >= 0 ? 0 : ENODATA;
        r->type = -1;
        r->dirty = r->wrote = true;
    }
    pthread_mutex_unlock(&m->lock);
    return -err;
}
