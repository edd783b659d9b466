/* mount.c: the requests of the front ends: lookups, attributes, open files and folders, reads, writes and renames. */
#include "priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void tdbm_fill_stat(const struct tdbm_mount *m,
                           const struct tdbm_gen *g, uint64_t tino,
                           const struct tdb_stat *ts, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = tdbm_gen_ino(g, tino);
    /* A folder's link count is 1, "unknown" to find and fts: counting its
     * subfolders would stat every child. */
    /* With rw, only the owner may write, whatever umask= says (the
     * daemon writes what anyone with a write bit asks). */
    if (ts->is_dir)
        st->st_mode = S_IFDIR | ((m->rw ? 0755 : 0555) & ~m->opts->umask);
    else if (m->rw && tdbm_meta_name(g, tino))
        st->st_mode = S_IFREG | (0644 & ~m->opts->umask);
    else
        st->st_mode = S_IFREG | (0444 & ~m->opts->umask);
    st->st_nlink = 1;
    st->st_uid = m->cfg.uid;
    st->st_gid = m->cfg.gid;
    st->st_size = (off_t)ts->size;
    st->st_blksize = TDBM_IO_MAX;
    st->st_blocks = (blkcnt_t)((ts->size + 511) / 512);
    st->st_mtim.tv_sec = (time_t)(ts->mtime_ms / 1000);
    st->st_mtim.tv_nsec = (long)(ts->mtime_ms % 1000) * 1000000L;
    st->st_atim = st->st_mtim;
    st->st_ctim = st->st_mtim;
}

/* Whether the root may change: with each commit (rw) or refresh.  Its
 * number stays 1 in every generation, so the kernel keeps none of its
 * attributes, readdir pages or missing names (those are not invalidated
 * in time for every reader); every other node is of one generation and
 * never changes. */
static bool tdbm_root_changes(const struct tdbm_mount *m)
{
    return m->rw || m->live;
}

/* The attribute timeout of a node of a generation. */
static double tdbm_attr_timeout(const struct tdbm_mount *m, uint64_t ino)
{
    return tdbm_root_changes(m) && ino == TDBM_ROOT_INO ? 0.0 : TDBM_TIMEOUT;
}

/* ---------------------------------------------------------------- mount */

int tdbm_mount_new(struct tdbm_mount **out, struct tdbm_source *src,
                   const struct tdbm_options *o,
                   const struct tdbm_config *cfg)
{
    struct tdbm_mount *m = calloc(1, sizeof *m);
    uint64_t ino;

    *out = NULL;
    if (!m)
        return -ENOMEM;
    if (pthread_key_create(&m->errkey, free) != 0) {
        free(m);
        return -ENOMEM;
    }
    m->cur = tdbm_gen_new(src->fs);
    if (!m->cur) {
        pthread_key_delete(m->errkey);
        free(m);
        return -ENOMEM;
    }
    src->fs = NULL; /* the generation owns it now */
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->commit, NULL);
    m->io = &src->io;
    m->open = &o->open;
    m->opts = o;
    m->source = src->path;
    m->cfg = *cfg;
    /* uid= and gid= name the owner the mount shows, whoever runs it */
    if (o->uid >= 0)
        m->cfg.uid = (uid_t)o->uid;
    if (o->gid >= 0)
        m->cfg.gid = (gid_t)o->gid;
    m->cur->num = 1;
    m->gens = m->cur;
    m->next_gen = 2;
    m->next_meta_ino = 1;
    m->rw = cfg->rw;
    m->live = o->refresh && !o->timestamp_set;
    memcpy(m->cur->stamp, src->stamp, TDB_STAMP_BYTES);
    m->cur->stamped = src->stamped;
    m->is_array = tdb_fs_lookup(m->cur->fs, TDB_ROOT_INO, TDBM_ARRAY_JSON,
                                &ino, NULL) == 0;
    *out = m;
    return 0;
}

void tdbm_mount_free(struct tdbm_mount *m)
{
    if (!m)
        return;
    tdbm_autocons_end(m);
    while (m->gens) {
        struct tdbm_gen *g = m->gens;
        m->gens = g->next;
        tdb_fs_close(g->fs);
        free(g);
    }
    tdbm_frag_end(m);
    while (m->recs) {
        struct tdbm_metarec *r = m->recs;
        m->recs = r->next;
        free(r->buf);
        free(r->key);
        free(r->fname);
        free(r);
    }
    tdbm_staging_close(m->staging);
    pthread_mutex_destroy(&m->commit);
    pthread_mutex_destroy(&m->lock);
    /* The other threads' slots went with their threads. */
    free(pthread_getspecific(m->errkey));
    pthread_key_delete(m->errkey);
    free(m);
}

/* -------------------------------------------------------------- lookups */

/* A staged entry as the mount shows it: the owner's, like every entry,
 * whoever owns it on disk (the daemon's user), its owner bits less the
 * umask. */
static void tdbm_staged_attr(const struct tdbm_mount *m, struct stat *st)
{
    st->st_uid = m->cfg.uid;
    st->st_gid = m->cfg.gid;
    st->st_mode &= ~(mode_t)m->opts->umask;
}

static void tdbm_staging_entry(const struct tdbm_mount *m,
                               const struct stat *st, uint64_t ino,
                               struct tdbm_entry *e)
{
    memset(e, 0, sizeof *e);
    e->ino = ino;
    e->generation = 1;
    e->attr = *st;
    e->attr.st_ino = (ino_t)ino;
    tdbm_staged_attr(m, &e->attr);
    e->attr_timeout = 0.0;
    e->entry_timeout = 0.0;
}

/* Whether engine inode tino, which failed a call with TDB_E_NOENT, is
 * no longer in g's tree: a file of __slice/ dropped since its lookup
 * (the tree drops idle ones).  Such a number is stale (-ESTALE: the
 * kernel then looks the name up again, which makes the file anew); a file
 * still there failed for a missing file of the array.  A readdir tells
 * them apart: a file there is no folder (TDB_E_NOTDIR); a folder fails
 * with TDB_E_NOENT only when empty, and then its stat, which needs no
 * file of the array, succeeds.  The missing file of the array is EIO,
 * logged: the file is listed, so ENOENT would mislead. */
bool tdbm_gone(const struct tdbm_gen *g, uint64_t tino)
{
    const char *name;
    uint64_t child;
    struct tdb_stat st;

    return tdb_fs_readdir(g->fs, tino, 0, &name, &child, NULL) ==
               TDB_E_NOENT &&
           tdb_fs_stat(g->fs, tino, &st, NULL) == TDB_E_NOENT;
}

/* tdbm_lookup of `name` in folder `at` of a generation, pinned by the
 * caller; the pin becomes the kernel's lookup reference when an entry is
 * found, else goes. */
static int tdbm_lookup_gen(struct tdbm_mount *m, const struct tdbm_node *at,
                           const char *name, struct tdbm_entry *e)
{
    struct tdbm_gen *g = at->gen;
    struct tdb_error err;
    struct tdb_stat ts;
    uint64_t ino, tino = at->tino, parent = at->ino;
    int rc;

    tdb_error_clear(&err);
    rc = tdb_fs_lookup(g->fs, tino, name, &ino, &err);
    if (rc == 0 && m->rw && tdbm_frag_hidden(m, g, tino, name)) {
        /* a file of a fragment's folder unlinked (rm -r): gone here */
        tdbm_gen_unpin(m, g, 1);
        return -ENOENT;
    }
    bool made = tdb_fs_made_on_lookup(g->fs, tino);
    if (rc == TDB_E_NOENT && made)
        tdbm_tell(m, rc, &err, "lookup");   /* a malformed name: why */
    if (rc == TDB_E_NOENT && m->rw && tino == g->meta_dir &&
        tdbm_lookup_created(m, name, e)) {
        /* A metadata file created and not yet closed. */
        tdbm_gen_unpin(m, g, 1);
        return 0;
    }
    if (rc == TDB_E_NOENT && !m->rw &&
        !(parent == TDBM_ROOT_INO && tdbm_root_changes(m))) {
        /* A negative entry the kernel may keep: the folder never
         * changes. */
        e->ino = 0;
        e->entry_timeout = TDBM_TIMEOUT;
        tdbm_gen_unpin(m, g, 1);
        return 0;
    }
    if (rc == 0 && (rc = tdb_fs_stat(g->fs, ino, &ts, &err)) == TDB_E_NOENT)
        rc = tdbm_gone(g, ino) ? -ESTALE : TDB_E_IO; /* see tdbm_gone */
    if (rc < 0) {
        if (rc != -ESTALE)
            rc = tdbm_fail(m, rc, &err, "lookup inode %llu",
                           (unsigned long long)parent);
        tdbm_gen_unpin(m, g, 1);
        return rc;
    }
    e->ino = tdbm_gen_ino(g, ino);
    e->generation = 1;
    e->attr_timeout = tdbm_attr_timeout(m, e->ino);
    /* A file made on lookup (__slice/NAME) is dropped when idle ones are
     * too many, its number with it: the kernel asks again each time (a
     * lookup that makes it anew, under a new number), rather than use a
     * number that may be gone. */
    e->entry_timeout = made ? 0.0 : TDBM_TIMEOUT;
    tdbm_fill_stat(m, g, ino, &ts, &e->attr);
    /* The pin becomes the kernel's lookup reference, taken back if the
     * reply is lost (the root is not counted: it is always there). */
    if (e->ino == TDBM_ROOT_INO)
        tdbm_gen_unpin(m, g, 1);
    else
        tdbm_gen_count(m, g, -1, 1);
    return 0;
}

int tdbm_lookup(struct tdbm_mount *m, uint64_t parent, const char *name,
                struct tdbm_entry *e)
{
    struct tdbm_gen *g;
    uint64_t tino, ino;
    int rc;

    memset(e, 0, sizeof *e);
    if (tdbm_staging_ino(parent)) {
        struct stat st;
        rc = m->staging ? tdbm_staging_lookup(m->staging, parent, name, &ino,
                                              &st)
                        : -ENOENT;
        if (rc == 0)
            tdbm_staging_entry(m, &st, ino, e);
        return rc;
    }
    if (parent & TDBM_META_BIT)
        return -ENOTDIR;
    if (parent == TDBM_ROOT_INO && m->staging &&
        strcmp(name, TDBM_STAGING_NAME) == 0) {
        struct stat st;
        rc = tdbm_staging_stat(m->staging, TDBM_STAGING_ROOT, &st);
        if (rc == 0)
            tdbm_staging_entry(m, &st, TDBM_STAGING_ROOT, e);
        return rc;
    }
    g = tdbm_gen_pin(m, parent, &tino);
    if (!g)
        return -ESTALE;
    const struct tdbm_node at = {g, tino, parent};
    return tdbm_lookup_gen(m, &at, name, e);
}

void tdbm_forget(struct tdbm_mount *m, uint64_t ino, uint64_t n)
{
    if (!tdbm_staging_ino(ino))
        tdbm_gen_forget(m, ino, n);
    else if (m->staging && ino != TDBM_STAGING_ROOT)
        tdbm_staging_forget(m->staging, ino, n);
}

int tdbm_getattr(struct tdbm_mount *m, uint64_t ino, struct stat *st,
                 double *timeout)
{
    struct tdbm_metarec *r;
    struct tdbm_gen *g;
    struct tdb_error err;
    struct tdb_stat ts;
    uint64_t tino;
    int rc;

    *timeout = 0.0;
    if (tdbm_staging_ino(ino)) {
        rc = m->staging ? tdbm_staging_stat(m->staging, ino, st) : -ENOENT;
        if (rc == 0)
            tdbm_staged_attr(m, st);
        return rc;
    }
    pthread_mutex_lock(&m->lock);
    r = tdbm_rec_find(m, ino);
    if (r)
        tdbm_rec_stat(m, r, st);
    pthread_mutex_unlock(&m->lock);
    if (r)
        return 0;
    if (ino & TDBM_META_BIT)
        return -ENOENT; /* written, closed and forgotten */
    g = tdbm_gen_pin(m, ino, &tino);
    if (!g)
        return -ESTALE;
    tdb_error_clear(&err);
    rc = tdb_fs_stat(g->fs, tino, &ts, &err);
    if (rc == TDB_E_NOENT)
        rc = tdbm_gone(g, tino) ? -ESTALE : TDB_E_IO; /* see tdbm_gone */
    if (rc < 0 && rc != -ESTALE) {
        rc = tdbm_fail(m, rc, &err, "getattr inode %llu",
                       (unsigned long long)ino);
    } else if (rc == 0) {
        tdbm_fill_stat(m, g, tino, &ts, st);
        *timeout = tdbm_attr_timeout(m, ino);
    }
    tdbm_gen_unpin(m, g, 1);
    return rc;
}

int tdbm_resolve(struct tdbm_mount *m, const char *path, uint64_t *ino,
                 struct stat *st)
{
    struct tdbm_entry e;
    uint64_t cur = TDBM_ROOT_INO;
    double timeout;
    char *copy = strdup(path), *save = NULL;
    int rc = 0;

    if (!copy)
        return -ENOMEM;
    for (char *c = strtok_r(copy, "/", &save); c;
         c = strtok_r(NULL, "/", &save)) {
        rc = tdbm_lookup(m, cur, c, &e);
        if (rc == 0 && e.ino == 0)
            rc = -ENOENT;
        tdbm_forget(m, cur, 1);
        if (rc < 0) {
            cur = TDBM_ROOT_INO;
            break;
        }
        cur = e.ino;
    }
    free(copy);
    if (rc == 0)
        rc = tdbm_getattr(m, cur, st, &timeout);
    if (rc < 0) {
        tdbm_forget(m, cur, 1);
        return rc;
    }
    *ino = cur;
    return 0;
}

/* ------------------------------------------------------------- handles */

void tdbm_release(struct tdbm_mount *m, struct tdbm_handle *h)
{
    if (!h)
        return;
    if (h->fd >= 0)
        close(h->fd);
    if (h->names)
        tdbm_staging_names_free(h->names, h->nnames);
    if (h->rec)
        tdbm_meta_release(m, h->rec);
    tdb_reader_close(h->rd); /* before its generation may close */
    if (h->gen)
        tdbm_gen_unpin(m, h->gen, 1);
    free(h->vis);
    free(h);
    /* the last handle of an old view may let a deleted fragment go */
    tdbm_frag_reap(m);
}

int tdbm_opendir(struct tdbm_mount *m, uint64_t ino, struct tdbm_handle **out,
                 struct tdbm_open_info *oi)
{
    struct tdbm_handle *h;
    int rc;

    memset(oi, 0, sizeof *oi);
    *out = NULL;
    if (tdbm_staging_ino(ino)) {
        h = tdbm_handle_new(TDBM_H_STGDIR);
        if (!h)
            return -ENOMEM;
        rc = m->staging ? tdbm_staging_list(m->staging, ino, &h->names,
                                            &h->nnames)
                        : -ENOENT;
        if (rc < 0) {
            tdbm_release(m, h);
            return rc;
        }
    } else {
        const char *name;
        uint64_t child;
        h = tdbm_handle_new(TDBM_H_DIR);
        if (!h)
            return -ENOMEM;
        h->ino = ino;
        h->gen = tdbm_gen_pin(m, ino, &h->tino);
        if (!h->gen) {
            tdbm_release(m, h);
            return (ino & TDBM_META_BIT) ? -ENOTDIR : -ESTALE;
        }
        h->with_staging = ino == TDBM_ROOT_INO && m->staging;
        if (m->rw && (rc = tdbm_frag_listing(m, h)) < 0) {
            tdbm_release(m, h);
            return rc;
        }
        while (h->with_staging &&
               tdb_fs_readdir(h->gen->fs, h->tino, h->ntree, &name, &child,
                              NULL) == 0)
            h->ntree++;
        /* A generation's folders never change; the root of a writable
         * mount gains nothing either, but its __staging entry is ours;
         * the root of a live mount is each generation's. */
        oi->cache_readdir = !m->rw &&
                            !(ino == TDBM_ROOT_INO && tdbm_root_changes(m));
        oi->keep_cache = oi->cache_readdir;
    }
    *out = h;
    return 0;
}

int tdbm_dir_entry(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t i,
                   const char **name, uint64_t *child, bool report)
{
    struct tdb_error err;
    uint64_t c;
    int rc;

    if (h->kind == TDBM_H_STGDIR) {
        if (i >= h->nnames)
            return 1;
        *name = h->names[i];
        *child = TDBM_STAGING_BIT; /* not 0: some tools skip d_ino 0 */
        return 0;
    }
    if (h->kind != TDBM_H_DIR)
        return -ENOTDIR;
    if (h->with_staging && i == h->ntree) {
        *name = TDBM_STAGING_NAME;
        *child = TDBM_STAGING_ROOT;
        return 0;
    }
    if (h->filtered) {
        if (i >= h->nvis)
            return 1;
        i = h->vis[i];
    }
    tdb_error_clear(&err);
    rc = tdb_fs_readdir(h->gen->fs, h->tino, i, name, &c, &err);
    if (rc == TDB_E_NOENT)
        return 1;
    if (rc < 0)
        return report ? tdbm_fail(m, rc, &err, "readdir inode %llu",
                                (unsigned long long)h->ino)
                      : -tdb_errno(rc);
    *child = tdbm_gen_ino(h->gen, c);
    return 0;
}

/* ------------------------------------------------------------- xattrs */

/* The names of the xattrs, each NUL-terminated, into buf (NULL: size only).
 * @return the bytes they need. */
static size_t tdbm_xattr_names(struct tdb_fs *fs, uint64_t tino, char *buf)
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

static int tdbm_xattr_copy(const void *v, size_t len, char **out,
                           size_t *outlen)
{
    *out = NULL;
    *outlen = len;
    if (!len)
        return 0;
    if (!(*out = malloc(len)))
        return -ENOMEM;
    memcpy(*out, v, len);
    return 0;
}

int tdbm_listxattr(struct tdbm_mount *m, uint64_t ino, char **buf,
                   size_t *len)
{
    struct tdbm_metarec *r;
    struct tdbm_gen *g;
    uint64_t tino;
    bool typed;

    *buf = NULL;
    *len = 0;
    if (tdbm_staging_ino(ino))
        return 0;
    pthread_mutex_lock(&m->lock);
    r = tdbm_rec_find(m, ino);
    typed = r && r->type >= 0;
    pthread_mutex_unlock(&m->lock);
    if (ino & TDBM_META_BIT)
        return tdbm_xattr_copy(TDBM_DATATYPE_XATTR,
                               typed ? sizeof TDBM_DATATYPE_XATTR : 0, buf,
                               len);
    g = tdbm_gen_pin(m, ino, &tino);
    if (!g)
        return -ESTALE;
    *len = tdbm_xattr_names(g->fs, tino, NULL);
    if (*len && !(*buf = malloc(*len))) {
        tdbm_gen_unpin(m, g, 1);
        return -ENOMEM;
    }
    if (*len)
        tdbm_xattr_names(g->fs, tino, *buf);
    tdbm_gen_unpin(m, g, 1);
    return 0;
}

int tdbm_getxattr(struct tdbm_mount *m, uint64_t ino, const char *name,
                  char **val, size_t *len)
{
    struct tdbm_metarec *r;
    struct tdbm_gen *g;
    const char *dt = NULL;
    size_t need = 0;
    uint64_t tino;
    int rc;

    *val = NULL;
    *len = 0;
    if (tdbm_staging_ino(ino))
        return -ENODATA;
    /* A metadata file being written reports the type it will get. */
    pthread_mutex_lock(&m->lock);
    r = tdbm_rec_find(m, ino);
    if (r && r->type >= 0)
        dt = tdb_dt_name((unsigned)r->type);
    pthread_mutex_unlock(&m->lock);
    if (dt && strcmp(name, TDBM_DATATYPE_XATTR) == 0)
        return tdbm_xattr_copy(dt, strlen(dt), val, len);
    if (ino & TDBM_META_BIT)
        return -ENODATA;
    g = tdbm_gen_pin(m, ino, &tino);
    if (!g)
        return -ESTALE;
    rc = tdb_fs_getxattr(g->fs, tino, name, NULL, 0, &need);
    if (rc == 0 && !(*val = malloc(need ? need : 1)))
        rc = TDB_E_NOMEM;
    if (rc == 0)
        rc = tdb_fs_getxattr(g->fs, tino, name, *val, need, &need);
    bool gone = rc == TDB_E_NOENT && tdbm_gone(g, tino);
    tdbm_gen_unpin(m, g, 1);
    if (rc < 0) {
        free(*val);
        *val = NULL;
        return gone ? -ESTALE : rc == TDB_E_NOENT ? -ENODATA
                                                  : -tdb_errno(rc);
    }
    *len = need;
    return 0;
}

void tdbm_statfs(struct tdbm_mount *m, struct statvfs *sv)
{
    memset(sv, 0, sizeof *sv);
    if (m->staging)
        statvfs(tdbm_staging_dir(m->staging), sv);
    sv->f_bsize = TDBM_IO_MAX;
    sv->f_namemax = 255;
    sv->f_flag = (m->rw ? 0 : ST_RDONLY) | ST_NOSUID | ST_NODEV;
    if (!m->staging)
        sv->f_frsize = 512;
}

/* ------------------------------------------------------------- writes */

int tdbm_write(struct tdbm_mount *m, struct tdbm_handle *h, const void *buf,
               size_t size, uint64_t off, size_t *done)
{
    uint64_t end;
    int rc;

    *done = 0;
    if (h->kind == TDBM_H_STG) {
        ssize_t n = pwrite(h->fd, buf, size, (off_t)off);
        if (n < 0)
            return -errno;
        *done = (size_t)n;
        return 0;
    }
    if (h->kind != TDBM_H_META)
        return -EROFS;
    end = off + size;
    pthread_mutex_lock(&m->lock);
    rc = end > h->rec->len ? tdbm_rec_resize(h->rec, end) : 0;
    if (rc == 0) {
        memcpy(h->rec->buf + off, buf, size);
        h->rec->dirty = h->rec->wrote = true;
        h->rec->hidden = false;
    }
    pthread_mutex_unlock(&m->lock);
    if (rc == 0)
        *done = size;
    return rc;
}

int tdbm_flush(struct tdbm_mount *m, struct tdbm_handle *h)
{
    return h && h->kind == TDBM_H_META && h->writer
               ? tdbm_meta_store(m, h->rec, TDBM_STORE_FLUSH)
               : 0;
}

int tdbm_fsync(struct tdbm_mount *m, struct tdbm_handle *h, bool datasync)
{
    if (h && h->kind == TDBM_H_STG)
        return (datasync ? fdatasync(h->fd) : fsync(h->fd)) != 0 ? -errno : 0;
    if (h && h->kind == TDBM_H_META)
        return tdbm_meta_store(m, h->rec, TDBM_STORE_SYNC);
    return 0;
}

int tdbm_fallocate(struct tdbm_handle *h, int mode, uint64_t off,
                   uint64_t len)
{
    if (!h || h->kind != TDBM_H_STG)
        return -EROFS;
    return fallocate(h->fd, mode, (off_t)off, (off_t)len) != 0 ? -errno : 0;
}

/* Whether `ino` is the root's __meta (or __fragments) folder of its generation;
 * pins nothing. */
static bool tdbm_is_root_dir(struct tdbm_mount *m, uint64_t ino, bool frag)
{
    struct tdbm_gen *g;
    uint64_t tino;
    bool yes;

    if (!m->rw || ino == TDBM_ROOT_INO)
        return false;
    g = tdbm_gen_pin(m, ino, &tino);
    if (!g)
        return false;
    yes = tino == (frag ? g->frag_dir : g->meta_dir) && tino != 0;
    tdbm_gen_unpin(m, g, 1);
    return yes;
}

/* Why nothing can be made in folder `parent` of a generation: in __fragments,
 * EXDEV ("Invalid cross-device link"), for this is where mv from
 * another filesystem, having got EXDEV from rename, makes its copy, and a
 * copy made file by file has no last step that could commit it (a
 * fragment is staged in __staging, then moved); elsewhere EROFS. */
static int tdbm_not_here(struct tdbm_mount *m, uint64_t parent)
{
    return tdbm_is_root_dir(m, parent, true) ? -EXDEV : -EROFS;
}

int tdbm_setattr(struct tdbm_mount *m, uint64_t ino, struct tdbm_handle *h,
                 const struct stat *attr, unsigned valid, struct stat *st)
{
    struct tdbm_metarec *r;
    int rc = 0;

    /* Every entry is the owner's: a chown to the owner and group it has
     * already changes nothing and is accepted (cp -a, rsync -a and tar x
     * as root ask for it), any other is refused. */
    if (((valid & TDBM_SET_UID) && attr->st_uid != m->cfg.uid) ||
        ((valid & TDBM_SET_GID) && attr->st_gid != m->cfg.gid))
        return tdbm_staging_ino(ino) || m->rw ? -EPERM : -EROFS;
    valid &= ~(TDBM_SET_UID | TDBM_SET_GID);
    if (tdbm_staging_ino(ino) && m->staging) {
        rc = tdbm_staging_setattr(m->staging, ino,
                                  h && h->kind == TDBM_H_STG ? h->fd : -1,
                                  attr, valid, st);
        if (rc == 0)
            tdbm_staged_attr(m, st);
        return rc;
    }
    /* A metadata file being written: its size may change (truncation);
     * times are accepted and forgotten. */
    pthread_mutex_lock(&m->lock);
    r = h && h->kind == TDBM_H_META ? h->rec : tdbm_rec_find(m, ino);
    if (r && (valid & TDBM_SET_MODE))
        rc = -EPERM;
    else if (r && (valid & TDBM_SET_SIZE))
        rc = attr->st_size < 0 ? -EINVAL
                               : tdbm_rec_resize(r, (uint64_t)attr->st_size);
    if (r && rc == 0 && (valid & TDBM_SET_SIZE) && attr->st_size > 0)
        r->wrote = true; /* bytes, not a truncation to empty */
    if (r && rc == 0)
        tdbm_rec_stat(m, r, st);
    pthread_mutex_unlock(&m->lock);
    return r ? rc : -EROFS;
}

int tdbm_mkdir(struct tdbm_mount *m, uint64_t parent, const char *name,
               mode_t mode, struct tdbm_entry *e)
{
    struct stat st;
    uint64_t ino;
    int rc;

    if (!tdbm_staging_ino(parent) || !m->staging)
        return parent == TDBM_ROOT_INO && m->staging &&
                       strcmp(name, TDBM_STAGING_NAME) == 0
                   ? -EEXIST : tdbm_not_here(m, parent);
    rc = tdbm_staging_mkdir(m->staging, parent, name, mode, &ino, &st);
    if (rc == 0)
        tdbm_staging_entry(m, &st, ino, e);
    return rc;
}

int tdbm_special(struct tdbm_mount *m, uint64_t parent)
{
    return tdbm_staging_ino(parent) && m->staging ? -EPERM : -EROFS;
}

int tdbm_mknod(struct tdbm_mount *m, uint64_t parent, const char *name,
               mode_t mode, struct tdbm_entry *e)
{
    struct tdbm_created c;
    int rc;

    if (!S_ISREG(mode) || !tdbm_staging_ino(parent) || !m->staging)
        return tdbm_special(m, parent);
    rc = tdbm_create(m, parent, name, O_WRONLY | O_CREAT | O_EXCL,
                     mode & 07777, &c);
    if (rc == 0) {
        *e = c.e;
        tdbm_release(m, c.h);
    }
    return rc;
}

int tdbm_unlink(struct tdbm_mount *m, uint64_t parent, const char *name)
{
    struct tdbm_gen *g;
    uint64_t tino, child;
    char *key;
    int rc;

    if (tdbm_staging_ino(parent) && m->staging)
        return tdbm_staging_unlink(m->staging, parent, name);
    if ((rc = tdbm_frag_unlink(m, parent, name)) <= 0)
        return rc; /* rm -r __fragments/NAME: a file of it hidden */
    if (!tdbm_is_root_dir(m, parent, false))
        return -EROFS;
    /* rm __meta/KEY: a deletion of the key. */
    g = tdbm_gen_pin(m, parent, &tino);
    rc = g && tdb_fs_lookup(g->fs, tino, name, &child, NULL) == 0 ? 0
                                                                 : -ENOENT;
    tdbm_gen_unpin(m, g, 1);
    if (rc == 0) {
        key = tdbm_name_decode(name);
        rc = key ? tdbm_meta_delete(m, key) : -errno;
        free(key);
    }
    return rc;
}

int tdbm_rmdir(struct tdbm_mount *m, uint64_t parent, const char *name)
{
    int rc = 0;

    if (!tdbm_staging_ino(parent) &&
        (rc = tdbm_frag_rmdir(m, parent, name)) <= 0)
        return rc; /* rmdir __fragments/NAME: the fragment deleted */
    rc = 0;
    if (!tdbm_staging_ino(parent) || !m->staging)
        return -EROFS;
    if (parent == TDBM_STAGING_ROOT)
        rc = tdbm_staging_forget_commit(m, name);
    return rc < 0 ? rc : tdbm_staging_rmdir(m->staging, parent, name);
}

int tdbm_rename(struct tdbm_mount *m, uint64_t parent, const char *name,
                uint64_t newparent, const char *newname, unsigned flags)
{
    int rc;

    if (!m->staging || !tdbm_staging_ino(parent))
        return -EROFS;
    if (tdbm_staging_ino(newparent))
        return tdbm_staging_rename(m->staging, parent, name, newparent,
                                   newname, flags);
    if (!tdbm_is_root_dir(m, newparent, true))
        return -EROFS;
    if (flags & ~(unsigned)RENAME_NOREPLACE)
        return -EINVAL;
    rc = tdbm_staging_check_commit(m->staging, parent, name);
    if (rc == -EINVAL)
        rc = -EROFS; /* a file, not a staged folder, into __fragments */
    if (rc == 0)
        rc = tdbm_commit(m, name);
    if (rc == 0)
        tdbm_autocons(m);
    tdbm_frag_reap(m);
    return rc;
}

int tdbm_create(struct tdbm_mount *m, uint64_t parent, const char *name,
                int flags, mode_t mode, struct tdbm_created *out)
{
    struct tdbm_staged_file f;
    struct tdbm_handle *h;
    int rc;

    memset(&out->oi, 0, sizeof out->oi);
    out->h = NULL;
    if (tdbm_staging_ino(parent) && m->staging) {
        h = tdbm_handle_new(TDBM_H_STG);
        if (!h)
            return -ENOMEM;
        rc = tdbm_staging_create(m->staging, parent, name, flags & ~O_APPEND,
                                 mode, &f);
        h->fd = f.fd;
        if (rc < 0) {
            tdbm_release(m, h);
            return rc;
        }
        tdbm_staging_entry(m, &f.st, f.ino, &out->e);
        out->h = h;
        return 0;
    }
    if (!tdbm_is_root_dir(m, parent, false))
        return tdbm_not_here(m, parent);
    rc = tdbm_meta_create(m, parent, name, flags, &out->e, &out->h);
    out->oi.direct_io = rc == 0;
    return rc;
}
