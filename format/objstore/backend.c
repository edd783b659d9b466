/* backend.c: the I/O interface over S3 and S3-compatible servers: range GETs,
 * HEAD, ListObjectsV2, PUT, server-side copy and DELETE, listings cached
 * by folder, writes kept in temporary files until synced.  Requests go
 * through loop.c, signed by s3/sign.c; answers are parsed by
 * s3/xml.c. */
#include "core/core.h"
#include "s3/s3.h"
#include "azure/azure.h"
#include "objstore/objstore.h"
#include "core/names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define OS_REQUESTS 64          /* requests in flight at most */
#define OS_TIMEOUT_MS 30000     /* a read's deadline, its retries included */
#define OS_META_BYTES (64u << 20)  /* small files kept whole */
#define OS_FAILED_MS 10000         /* a failed object's reads fail at once
                                    * this long (at most the deadline) */
#define OS_SMALL_FILE (256u << 10) /* a file read unasked is fetched whole
                                    * up to this size */
#define OS_AHEAD_BYTES (64u << 20) /* ranges fetched ahead, not yet read */
#define OS_GCS_ENDPOINT "https://storage.googleapis.com"

/* ------------------------------------------------------------- helpers */

/* Takes pending object `norm` off the list (s->lock held). */
static struct os_pending *os_pending_take(struct objstore *s, const char *norm)
{
    for (struct os_pending **pp = &s->pend; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->path, norm)) {
            struct os_pending *p = *pp;
            *pp = p->next;
            return p;
        }
    return NULL;
}

static void os_pending_free(struct os_pending *p)
{
    if (!p)
        return;
    close(p->fd);
    free(p->path);
    free(p);
}

/* Does any key start with "KEY/"?  @return 1, 0 or a TDB_E_* code. */
static int os_has_children(struct objstore *s, const char *key)
{
    char *kp = NULL;
    if (asprintf(&kp, "%s%s", key, key[0] ? "/" : "") < 0)
        return TDB_E_NOMEM;
    struct tdb_store_dent *e = NULL;
    size_t n = 0;
    int r = tdb_os_list_keys(s, kp, false, 1, &e, &n, NULL);
    free(kp);
    if (r)
        return r;
    tdb_store_dents_free(e, n);
    return n > 0;
}

/* HEAD of key: its size.  @return 0, TDB_E_NOENT, TDB_E_IO. */
static int os_head(struct objstore *s, const char *key, uint64_t *size)
{
    struct os_call c = {.method = "HEAD", .key = key, .up_fd = -1};
    int r = tdb_os_perform(s, &c);
    if (!r)
        r = tdb_os_status(s, &c, NULL);
    if (!r) {
        r = c.length < 0 ? TDB_E_IO : 0;
        *size = (uint64_t)c.length;
    }
    tdb_os_call_clear(&c);
    return r;
}

/* ------------------------------------------------------------ the ops */

/* Reads [off, off + len) of norm when it is being written: @return 1 (*rc
 * the outcome) or 0 (it is not). */
static int os_pending_read(struct objstore *s, const char *norm, uint64_t off,
                           void *buf, size_t len, int *rc)
{
    pthread_mutex_lock(&s->lock);
    struct os_pending *p = tdb_os_pending_find(s, norm);
    int r = 0;
    if (p) {
        uint64_t end;
        if (!tdb_add_ok(off, len, &end) || end > p->size)
            r = TDB_E_IO;
        for (size_t done = 0; !r && done < len;) {
            ssize_t n = pread(p->fd, (uint8_t *)buf + done, len - done,
                              (off_t)(off + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                r = TDB_E_IO;
            else
                done += (size_t)n;
        }
    }
    pthread_mutex_unlock(&s->lock);
    *rc = r;
    return p != NULL;
}

/* GET of [off, off + len) of key into buf (len > 0). */
static int os_get_range(struct objstore *s, const char *key, uint64_t off,
                        void *buf, size_t len)
{
    struct os_call c = {.method = "GET", .key = key, .up_fd = -1,
                        .sink = OS_SINK_BUF, .dst = buf, .dst_len = len,
                        .skip = off};
    snprintf(c.range, sizeof c.range, "bytes=%llu-%llu",
             (unsigned long long)off, (unsigned long long)(off + len - 1));
    int r = tdb_os_perform(s, &c);
    if (!r)
        r = c.status == 416 ? TDB_E_IO : tdb_os_status(s, &c, NULL);
    if (!r && c.dst_got != len)
        r = TDB_E_IO;
    tdb_os_call_clear(&c);
    return r;
}

/* The listing's word on file norm: its size and, with a disk cache, its
 * name there (*ident, to free).  @return 1 known, else 0. */
static int os_known(struct objstore *s, const char *norm, const char *key,
                    uint64_t *size, char **ident)
{
    struct tdb_store_dent e;
    *ident = NULL;
    if (tdb_os_dir_lookup(s, norm, &e) != 1 || e.is_dir) {
        free(e.etag);
        return 0;
    }
    *size = e.size;
    if (s->disk && e.etag)
        *ident = tdb_os_ident(s, key, e.etag, e.size);
    free(e.etag);
    return 1;
}

/* A read from the disk cache: the whole small file's piece, or the exact
 * range's.  @return 1 when served. */
static int os_disk_read(struct objstore *s, const char *ident, uint64_t size,
                        uint64_t off, void *buf, size_t len)
{
    return (size <= OS_FILE_MAX &&
            tdb_os_disk_get(s->disk, &(struct os_piece){ident, 0, size}, off,
                            buf, len)) ||
           tdb_os_disk_get(s->disk, &(struct os_piece){ident, off, len}, off,
                           buf, len);
}

/* Did a read of norm fail lately (within OS_FAILED_MS, at most the
 * deadline)?  Its reads then fail at once: the kernel tries a failed read
 * again, page by page, and each try would wait out a deadline of its
 * own. */
static bool os_failed_lately(struct objstore *s, const char *norm)
{
    uint64_t h = tdb_os_hash(norm), now = tdb_os_clock_ms();
    bool failed = false;
    pthread_mutex_lock(&s->lock);
    for (unsigned i = 0; i < sizeof s->failed / sizeof *s->failed; i++)
        failed = failed ||
                 (s->failed[i].hash == h && s->failed[i].until > now);
    pthread_mutex_unlock(&s->lock);
    return failed;
}

static void os_failed_note(struct objstore *s, const char *norm)
{
    uint64_t ms = s->loop.timeout_ms < OS_FAILED_MS ? s->loop.timeout_ms
                                                    : OS_FAILED_MS;
    pthread_mutex_lock(&s->lock);
    unsigned i = s->nfailed++ % (sizeof s->failed / sizeof *s->failed);
    s->failed[i] = (struct os_failed){tdb_os_hash(norm),
                                      tdb_os_clock_ms() + ms};
    pthread_mutex_unlock(&s->lock);
}

/* Reads come from a write in progress, from what was fetched ahead, from
 * the disk cache, or from the object store: a small file (by its listing,
 * OS_SMALL_FILE at most) whole, kept for the next reads; anything else as
 * the range asked for. */
static int os_read_at(void *ctx, const char *path, uint64_t off, void *buf,
                      size_t len)
{
    struct objstore *s = ctx;
    char *norm = tdb_os_norm(path), *key = tdb_os_key(s, path), *ident = NULL;
    uint64_t size = 0;
    int r = 0;
    if (!norm || !key) {
        r = TDB_E_NOMEM;
        goto out;
    }
    if (os_pending_read(s, norm, off, buf, len, &r))
        goto out;
    if (os_failed_lately(s, norm)) {
        r = TDB_E_IO;
        goto out;
    }
    if (tdb_os_fetched_read(s, norm, off, buf, len, &r))
        goto failed;
    bool known = os_known(s, norm, key, &size, &ident);
    if (ident && os_disk_read(s, ident, size, off, buf, len))
        goto out;
    if (len == 0) {      /* nothing to GET: the object must exist */
        r = known ? 0 : os_head(s, key, &size);
        r = r ? r : off > size ? TDB_E_IO : 0;
        goto out;
    }
    if (known && size <= OS_SMALL_FILE) {
        struct tdb_io_want w = {TDB_WANT_FILE, norm, 0, 0};
        tdb_os_want(s, &w, 1);
        if (tdb_os_fetched_read(s, norm, off, buf, len, &r))
            goto failed;
    }
    r = os_get_range(s, key, off, buf, len);
    if (!r && ident)
        tdb_os_disk_put(s->disk, ident, off, len, buf);
failed:
    if (r == TDB_E_IO)
        os_failed_note(s, norm);
out:
    free(ident);
    free(norm);
    free(key);
    return r;
}

static int os_size(void *ctx, const char *path, uint64_t *size)
{
    struct objstore *s = ctx;
    char *norm = tdb_os_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    struct os_pending *p = tdb_os_pending_find(s, norm);
    if (p)
        *size = p->size;
    pthread_mutex_unlock(&s->lock);
    struct tdb_store_dent e = {0};
    int r = p ? 1 : tdb_os_fetched_size(s, norm, size);
    if (!r && (r = tdb_os_dir_lookup(s, norm, &e)) == 1 && !e.is_dir)
        *size = e.size;
    else if (r != TDB_E_NOENT && (r != 1 || e.is_dir)) {
        char *key = tdb_os_key(s, path);
        r = key ? os_head(s, key, size) : TDB_E_NOMEM;
        free(key);
    }
    free(e.etag);
    free(norm);
    return r == 1 ? 0 : r;
}

static int os_is_dir(void *ctx, const char *path, bool *is_dir)
{
    struct objstore *s = ctx;
    char *norm = tdb_os_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    struct tdb_store_dent e = {0};
    int r = 0;
    if (tdb_os_pending(s, norm)) {
        *is_dir = false;
    } else if (norm[0] && (r = tdb_os_dir_lookup(s, norm, &e)) != 0) {
        *is_dir = e.is_dir;     /* listed, or listed as absent */
        r = r == 1 ? 0 : r;
    } else {
        uint64_t sz;
        char *key = tdb_os_key(s, path);
        if (!key) {
            r = TDB_E_NOMEM;
        } else {
            r = key[0] ? os_head(s, key, &sz) : TDB_E_NOENT;
            if (!r) {
                *is_dir = false;
            } else if (r == TDB_E_NOENT) {
                r = os_has_children(s, key);
                if (r >= 0) {
                    *is_dir = true;
                    r = r ? 0 : TDB_E_NOENT;
                }
            }
        }
        free(key);
    }
    free(e.etag);
    free(norm);
    return r;
}

/* A listing fetched ahead serves one list call; others ask the server
 * (and what they find is kept for size and is_dir). */
static int os_list(void *ctx, const char *path, tdb_io_list_fn fn, void *arg)
{
    struct objstore *s = ctx;
    char *key = tdb_os_key(s, path), *kp = NULL, *norm = tdb_os_norm(path);
    if (!key || !norm ||
        asprintf(&kp, "%s%s", key, key[0] ? "/" : "") < 0) {
        free(key);
        free(norm);
        return TDB_E_NOMEM;
    }
    free(key);
    struct tdb_store_dent *e = NULL;
    size_t n = 0;
    bool ahead = tdb_os_dir_take(s, norm, &e, &n) == 1;
    int r = ahead ? 0 : tdb_os_list_keys(s, kp, true, 0, &e, &n, NULL);
    free(kp);
    /* a folder exists through its keys; none: no folder */
    if (!r && !n)
        r = TDB_E_NOENT;
    for (size_t i = 0; !r && i < n; i++) {
        struct tdb_dirent ent = {e[i].name, e[i].is_dir};
        r = fn(arg, &ent);
    }
    if (r || !n || ahead)
        tdb_store_dents_free(e, n);
    else
        tdb_os_dir_put(s, norm, e, n, false);
    free(norm);
    return r;
}

static void os_prefetch(void *ctx, const struct tdb_io_want *want, size_t n)
{
    tdb_os_want(ctx, want, n);
}

static void os_settle(void *ctx)
{
    tdb_os_settle(ctx);
}

/* Something changed at norm through the backend. */
static void os_changed(struct objstore *s, const char *norm)
{
    tdb_os_dir_forget(s, norm);
    tdb_os_fetched_forget(s, norm);
}

static int os_tmpfile(void)
{
    const char *dir = getenv("TMPDIR");
    char *tmpl = NULL;
    if (!dir || !dir[0])
        dir = "/tmp";
    if (asprintf(&tmpl, "%s/tiledbfs-s3.XXXXXX", dir) < 0)
        return -1;
    int fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd >= 0)
        unlink(tmpl);
    free(tmpl);
    return fd;
}

static int os_write_at(void *ctx, const char *path, uint64_t off,
                       const void *buf, size_t len)
{
    struct objstore *s = ctx;
    uint64_t end;
    if (!tdb_add_ok(off, len, &end) || end > INT64_MAX)
        return TDB_E_NOMEM;
    char *norm = tdb_os_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    if (!norm[0]) {
        free(norm);
        return TDB_E_INVAL;
    }
    pthread_mutex_lock(&s->lock);
    bool known = tdb_os_pending_find(s, norm) != NULL;
    pthread_mutex_unlock(&s->lock);
    struct os_pending *np = NULL;
    int r = 0;
    if (!known) {
        /* a new pending object written from its start replaces the stored
         * one (objects are written whole: no GET of what goes anyway);
         * one first written further on starts as the stored one, if any,
         * the write changing only the bytes it covers, as on a POSIX
         * file */
        np = calloc(1, sizeof *np);
        if (!np || !(np->path = strdup(norm))) {
            free(np);
            free(norm);
            return TDB_E_NOMEM;
        }
        if ((np->fd = os_tmpfile()) < 0) {
            free(np->path);
            free(np);
            free(norm);
            return TDB_E_IO;
        }
        char *key = off == 0 ? NULL : tdb_os_key(s, path);
        if (off != 0 && !key) {
            r = TDB_E_NOMEM;
        } else if (key) {
            struct os_call c = {.method = "GET", .key = key, .up_fd = -1,
                                .sink = OS_SINK_FD, .fd = np->fd};
            r = tdb_os_perform(s, &c);
            if (!r)
                r = tdb_os_status(s, &c, NULL);
            if (!r)
                np->size = c.fd_pos;
            else if (r == TDB_E_NOENT)
                r = 0;
            tdb_os_call_clear(&c);
            free(key);
        }
        if (r) {
            os_pending_free(np);
            free(norm);
            return r;
        }
    }
    pthread_mutex_lock(&s->lock);
    struct os_pending *p = tdb_os_pending_find(s, norm);
    if (!p && np) {
        np->next = s->pend;
        s->pend = p = np;
        np = NULL;
    }
    if (!p)   /* removed meanwhile by another thread: start anew */
        r = TDB_E_IO;
    for (size_t done = 0; !r && done < len;) {
        ssize_t n = pwrite(p->fd, (const uint8_t *)buf + done, len - done,
                           (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            r = TDB_E_IO;
        else
            done += (size_t)n;
    }
    if (!r && end > p->size)
        p->size = end;
    pthread_mutex_unlock(&s->lock);
    os_pending_free(np);
    free(norm);
    return r;
}

/* PUTs pending object `norm` as `key` (its own, or a rename's target).
 * @return 0 (also when nothing was pending: *was is then false). */
static int os_flush(struct objstore *s, const char *norm, const char *key,
                    bool *was)
{
    pthread_mutex_lock(&s->lock);
    struct os_pending *p = os_pending_take(s, norm);
    pthread_mutex_unlock(&s->lock);
    *was = p != NULL;
    if (!p)
        return 0;
    int r = tdb_os_upload_fd(s, key, p->fd, p->size);
    if (r) {   /* kept for another try */
        pthread_mutex_lock(&s->lock);
        if (tdb_os_pending_find(s, norm)) {
            os_pending_free(p);
        } else {
            p->next = s->pend;
            s->pend = p;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    os_pending_free(p);
    return 0;
}

static int os_sync(void *ctx, const char *path)
{
    struct objstore *s = ctx;
    char *norm = tdb_os_norm(path), *key = tdb_os_key(s, path);
    bool was;
    int r = norm && key ? os_flush(s, norm, key, &was) : TDB_E_NOMEM;
    if (!r && was)
        os_changed(s, norm);
    free(norm);
    free(key);
    return r;
}

static int os_mkdir(void *ctx, const char *path)
{
    return 0;   /* a folder is the prefix of its keys */
}

/* DELETE key (S3 answers 204 whether it was there or not). */
static int os_delete(struct objstore *s, const char *key)
{
    struct os_call c = {.method = "DELETE", .key = key, .up_fd = -1};
    int r = tdb_os_perform(s, &c);
    if (!r)
        r = tdb_os_status(s, &c, NULL);
    tdb_os_call_clear(&c);
    return r;
}

/* A copy of key `from` to key `to` through here, for a store without
 * server-side copies (Azure's Copy Blob finishes later, not at once): the
 * object into a temporary file, then stored (in parts when large). */
static int os_copy_through(struct objstore *s, const char *from,
                           const char *to)
{
    int fd = os_tmpfile();
    if (fd < 0)
        return TDB_E_IO;
    struct os_call c = {.method = "GET", .key = from, .up_fd = -1,
                        .sink = OS_SINK_FD, .fd = fd};
    int r = tdb_os_perform(s, &c);
    if (!r)
        r = tdb_os_status(s, &c, NULL);
    if (!r)
        r = tdb_os_upload_fd(s, to, fd, c.fd_pos);
    tdb_os_call_clear(&c);
    close(fd);
    return r;
}

/* Server-side copy of key `from` to key `to` (in parts when the listing
 * says the object is large), or through here. */
static int os_copy(struct objstore *s, const char *norm, const char *from,
                   const char *to)
{
    if (!s->proto->copy)
        return os_copy_through(s, from, to);
    struct tdb_store_dent e = {0};
    uint64_t size = UINT64_MAX;
    if (norm && tdb_os_dir_lookup(s, norm, &e) == 1 && !e.is_dir)
        size = e.size;
    free(e.etag);
    return tdb_os_copy_object(s, s->bucket, from, size, to);
}

static int os_rename(void *ctx, const char *from, const char *to)
{
    struct objstore *s = ctx;
    char *nf = tdb_os_norm(from), *nt = tdb_os_norm(to);
    char *kf = tdb_os_key(s, from), *kt = tdb_os_key(s, to);
    int r = nf && nt && kf && kt ? 0 : TDB_E_NOMEM;
    bool was = false;
    if (!r && !nf[0])
        r = TDB_E_INVAL;
    /* a pending object goes straight to its new name */
    if (!r)
        r = os_flush(s, nf, kt, &was);
    if (!r && was) {
        r = os_delete(s, kf);    /* an older stored version, if any */
    } else if (!r) {
        r = os_copy(s, nf, kf, kt);
        if (!r) {
            r = os_delete(s, kf);
        } else if (r == TDB_E_NOENT) {
            /* a folder: each key below it, copied then deleted */
            char *kp = NULL;
            struct tdb_store_dent *e = NULL;
            size_t n = 0;
            r = asprintf(&kp, "%s/", kf) < 0 ? TDB_E_NOMEM
                : tdb_os_list_keys(s, kp, false, 0, &e, &n, NULL);
            if (!r && !n)
                r = TDB_E_NOENT;
            for (size_t i = 0; !r && i < n; i++) {
                char *a = NULL, *b = NULL;
                if (asprintf(&a, "%s%s", kp, e[i].name) < 0)
                    a = NULL;
                if (asprintf(&b, "%s/%s", kt, e[i].name) < 0)
                    b = NULL;
                r = a && b ? os_copy(s, NULL, a, b) : TDB_E_NOMEM;
                if (!r)
                    r = os_delete(s, a);
                free(a);
                free(b);
            }
            if (kp)
                tdb_store_dents_free(e, n);
            free(kp);
        }
    }
    if (nf && nt) {
        os_changed(s, nf);
        os_changed(s, nt);
    }
    free(nf);
    free(nt);
    free(kf);
    free(kt);
    return r;
}

/* A copy between two backends on one store (the same endpoint, as the
 * same user): no byte through here. */
static int os_copy_from(void *ctx, const struct tdb_io *src, const char *from,
                        const char *to)
{
    struct objstore *s = ctx, *t = tdb_os_backend(src);
    if (!t || !s->proto->copy || t->proto != s->proto ||
        strcmp(t->base, s->base))
        return TDB_E_UNSUPPORTED;
    /* as the same user: a copy reads the source with the destination's
     * keys */
    struct tdb_s3_keys *mine = tdb_s3_creds_hold(s->creds),
                       *theirs = tdb_s3_creds_hold(t->creds);
    bool same = mine && theirs ? !strcmp(mine->id, theirs->id)
                               : mine == theirs;
    tdb_s3_creds_drop(s->creds, mine);
    tdb_s3_creds_drop(t->creds, theirs);
    if (!same)
        return TDB_E_UNSUPPORTED;
    uint64_t size;
    int r = os_size(t, from, &size);
    char *kf = tdb_os_key(t, from), *kt = tdb_os_key(s, to),
         *nt = tdb_os_norm(to);
    if (!r)
        r = kf && kt && nt ? tdb_os_copy_object(s, t->bucket, kf, size, kt)
                           : TDB_E_NOMEM;
    if (nt)
        os_changed(s, nt);
    free(kf);
    free(kt);
    free(nt);
    return r;
}

static int os_remove(void *ctx, const char *path)
{
    struct objstore *s = ctx;
    char *norm = tdb_os_norm(path), *key = tdb_os_key(s, path);
    int r = norm && key ? 0 : TDB_E_NOMEM;
    struct os_pending *p = NULL;
    if (!r) {
        pthread_mutex_lock(&s->lock);
        p = os_pending_take(s, norm);
        pthread_mutex_unlock(&s->lock);
    }
    uint64_t size;
    if (!r && key[0])
        r = os_head(s, key, &size);
    if (!r) {
        r = os_delete(s, key);
    } else if (r == TDB_E_NOENT) {
        /* an object only pending is gone now; a folder with keys is not
         * empty; an empty folder does not exist on S3 */
        int c = os_has_children(s, key);
        r = c < 0 ? c : c ? TDB_E_IO : p ? 0 : TDB_E_NOENT;
    }
    if (norm)
        os_changed(s, norm);
    os_pending_free(p);
    free(norm);
    free(key);
    return r;
}

static void os_destroy(void *ctx)
{
    struct objstore *s = ctx;
    /* objects written and never synced are stored now (best effort) */
    while (s->pend) {
        struct os_pending *p = s->pend;
        s->pend = p->next;
        char *key = tdb_os_key(s, p->path);
        if (key)
            tdb_os_upload_fd(s, key, p->fd, p->size);
        free(key);
        os_pending_free(p);
    }
    /* every call ends (fetches ahead fail), then what they fetched goes */
    tdb_os_loop_free(&s->loop);
    tdb_os_fetched_free(s);
    tdb_os_dir_clear(s);
    tdb_os_disk_close(s->disk);
    if (s->journal_fd >= 0)
        close(s->journal_fd);
    for (unsigned i = 0; i < s->nretired; i++)
        free(s->retired[i]);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->lock);
    tdb_s3_creds_unref(s->creds);
    if (s->proto && s->proto->free)
        s->proto->free(s->pctx);
    free(s->bucket);
    free(s->prefix);
    free(s->base);
    free(s->host);
    free(s->uri_base);
    free(s->region);
    free(s);
}

static const struct tdb_io_ops io_s3_ops = {
    .read_at = os_read_at,
    .size = os_size,
    .list = os_list,
    .is_dir = os_is_dir,
    .write_at = os_write_at,
    .mkdir = os_mkdir,
    .rename = os_rename,
    .remove = os_remove,
    .sync = os_sync,
    .destroy = os_destroy,
    .prefetch = os_prefetch,
    .settle = os_settle,
    .copy_from = os_copy_from,
};

struct objstore *tdb_os_backend(const struct tdb_io *io)
{
    return io && io->ops == &io_s3_ops ? io->ctx : NULL;
}

int tdb_io_s3_journal(const struct tdb_io *io, const char *dir,
                      unsigned *aborted, struct tdb_error *err)
{
    struct objstore *s = tdb_os_backend(io);
    *aborted = 0;
    return s ? tdb_os_journal_open(s, dir, aborted, err) : 0;
}

/* ---------------------------------------------------------------- open */

/* The object stores' URLs: S3's (Google Cloud Storage's XML API speaks
 * S3's protocol), Azure's; the length of the scheme and "://". */
enum os_kind { OS_NONE, OS_S3, OS_GCS, OS_AZURE };

static enum os_kind os_kind_of(const char *source, size_t *skip)
{
    static const struct {
        const char *scheme;
        enum os_kind kind;
    } k[] = {{"s3://", OS_S3}, {"gs://", OS_GCS}, {"gcs://", OS_GCS},
             {"azure://", OS_AZURE}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        size_t n = strlen(k[i].scheme);
        if (!strncmp(source, k[i].scheme, n)) {
            if (skip)
                *skip = n;
            return k[i].kind;
        }
    }
    return OS_NONE;
}

bool tdb_io_is_url(const char *source)
{
    return os_kind_of(source, NULL) != OS_NONE;
}

/* A bucket name that can be a host name label set (no dots: TLS names). */
static bool os_vhost_ok(const char *b)
{
    if (!b[0])
        return false;
    for (const char *p = b; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '-'))
            return false;
    return true;
}

/* Sets s->base, s->host, s->uri_base from the endpoint. */
static int os_endpoint(struct objstore *s, const char *endpoint,
                       struct tdb_error *err)
{
    if (!endpoint) {
        bool vhost = os_vhost_ok(s->bucket);
        int n = vhost ? ((s->uri_base = strdup("")) ? 0 : -1)
                      : asprintf(&s->uri_base, "/%s", s->bucket);
        if (n < 0) {
            s->uri_base = NULL;
            return TDB_E_NOMEM;
        }
        return tdb_os_aws_host(s, s->region, vhost, &s->host, &s->base);
    }
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    int r = 0;
    if (!u)
        return TDB_E_NOMEM;
    if (curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") && strcmp(scheme, "https"))) {
        r = tdb_err(err, TDB_E_INVAL, "endpoint %s: not an http:// or "
                    "https:// URL", endpoint);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
        port = NULL;
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        path = NULL;
    size_t pl = path ? strlen(path) : 0;
    while (pl && path[pl - 1] == '/')
        pl--;
    if (asprintf(&s->host, "%s%s%s", host, port ? ":" : "",
                 port ? port : "") < 0 ||
        asprintf(&s->base, "%s://%s", scheme, s->host) < 0 ||
        asprintf(&s->uri_base, "%.*s/%s", (int)pl, pl ? path : "",
                 s->bucket) < 0)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return r;
}

/* A backend speaking `proto` over url (its scheme skip bytes long):
 * its bucket (container) and prefix, no endpoint yet.  @return 0 (*out
 * the backend), TDB_E_INVAL or TDB_E_NOMEM. */
static int os_new(struct objstore **out, const char *url, size_t skip,
                  const struct os_proto *proto, struct tdb_error *err)
{
    const char *b = url + skip, *slash = strchr(b, '/');
    size_t bl = slash ? (size_t)(slash - b) : strlen(b);
    *out = NULL;
    if (!bl || bl > 255)
        return tdb_err(err, TDB_E_INVAL, "%s: no %s name", url,
                       proto == &tdb_os_proto_azure ? "container" : "bucket");
    struct objstore *s = calloc(1, sizeof *s);
    if (!s)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    s->proto = proto;
    snprintf(s->scheme, sizeof s->scheme, "%.*s", (int)(skip - 3), url);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->journal_fd = -1;
    s->part_size = TDB_S3_PART_SIZE;
    s->meta_max = OS_META_BYTES;
    s->ahead_max = OS_AHEAD_BYTES;
    if (tdb_os_loop_init(&s->loop, OS_REQUESTS, OS_TIMEOUT_MS) ||
        !(s->bucket = strndup(b, bl)) ||
        !(s->prefix = tdb_os_norm(slash ? slash : ""))) {
        os_destroy(s);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    *out = s;
    return 0;
}

int tdb_io_s3(struct tdb_io *io, const char *url,
              const struct tdb_s3_config *cfg, struct tdb_error *err)
{
    size_t skip = 0;
    enum os_kind kind = os_kind_of(url, &skip);
    if (kind != OS_S3 && kind != OS_GCS)
        return tdb_err(err, TDB_E_INVAL, "%s: not an s3:// or gs:// URL",
                       url);
    if ((cfg->access_key == NULL) != (cfg->secret_key == NULL))
        return tdb_err(err, TDB_E_INVAL, "%s: an access key without its "
                       "secret key (or the other way round)", url);
    struct objstore *s;
    int r = os_new(&s, url, skip, &tdb_os_proto_s3, err);
    if (r)
        return r;
    s->region_given = cfg->region && cfg->region[0];
    s->aws = !(cfg->endpoint && cfg->endpoint[0]);
    if (!(s->region = strdup(cfg->region && cfg->region[0] ? cfg->region
                                                           : "us-east-1")))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    /* the keys: the renewable ones the configuration found, else its
     * static ones */
    if (!r && cfg->creds)
        s->creds = tdb_s3_creds_ref(cfg->creds);
    else if (!r && cfg->access_key &&
             (r = tdb_s3_creds_keys(&s->creds, cfg->access_key,
                                    cfg->secret_key, cfg->session_token)))
        r = tdb_err(err, r, "%s: %s", url, r == TDB_E_NOMEM
                    ? "out of memory"
                    : "an empty secret key, or an access key or session "
                      "token empty or holding spaces or control "
                      "characters");
    if (!r)
        r = os_endpoint(s, cfg->endpoint && cfg->endpoint[0] ? cfg->endpoint
                                                             : NULL, err);
    if (r) {
        if (r == TDB_E_NOMEM)
            tdb_err(err, r, "out of memory");
        os_destroy(s);
        return r;
    }
    io->ops = &io_s3_ops;
    io->ctx = s;
    return 0;
}

/* An Azure backend over url ("azure://CONTAINER[/PREFIX]"), where and as
 * whom as tdb_az_config_load finds it under options o. */
static int os_azure(struct tdb_io *io, const char *url,
                    const struct tdb_store_options *o, struct tdb_error *err)
{
    struct tdb_az_config cfg = {0};
    int r = tdb_az_config_load(&cfg, o ? o->endpoint : NULL,
                               o ? o->account : NULL,
                               o ? o->credentials_file : NULL, err);
    if (r)
        return r;
    struct objstore *s;
    r = os_new(&s, url, strlen("azure://"), &tdb_os_proto_azure, err);
    if (!r)
        r = os_endpoint(s, cfg.endpoint, err);
    if (!r && tdb_os_azure_keys(s, &cfg))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    tdb_az_config_free(&cfg);
    if (r) {
        if (s)
            os_destroy(s);
        return r;
    }
    io->ops = &io_s3_ops;
    io->ctx = s;
    return 0;
}

/* The S3 configuration of a gs:// source: Cloud Storage's endpoint and
 * its "auto" region unless the options name others (the environment's
 * AWS_ENDPOINT_URL and AWS_REGION are S3's, not Google's), HMAC keys
 * found as S3's keys are. */
static int os_gcs_config(struct tdb_s3_config *cfg,
                         const struct tdb_store_options *o,
                         struct tdb_error *err)
{
    int r = tdb_s3_config_load_with(cfg, o, err);
    if (r)
        return r;
    char *ep = strdup(o && o->endpoint ? o->endpoint : OS_GCS_ENDPOINT);
    char *rg = strdup(o && o->region ? o->region : "auto");
    if (!ep || !rg) {
        free(ep);
        free(rg);
        tdb_s3_config_free(cfg);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    free(cfg->endpoint);
    free(cfg->region);
    cfg->endpoint = ep;
    cfg->region = rg;
    return 0;
}

/* Applies t to a backend no request has gone through yet. */
static int os_tune(struct objstore *s, const struct tdb_store_tuning *t,
                   struct tdb_error *err)
{
    struct os_loop *L = &s->loop;
    if (t->requests) {
        L->max_active = t->requests;
        curl_multi_setopt(L->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                          (long)t->requests);
        curl_multi_setopt(L->multi, CURLMOPT_MAXCONNECTS, (long)t->requests);
    }
    if (t->timeout_s) {
        L->timeout_ms = (uint64_t)t->timeout_s * 1000;
        L->low_speed_s = t->timeout_s / 3 < 1 ? 1
                         : t->timeout_s / 3 > 20 ? 20
                                                 : (long)(t->timeout_s / 3);
    }
    if (t->readahead_bytes)
        s->ahead_max = t->readahead_bytes;
    if (t->retries_given)
        L->max_tries = t->retries + 1;
    if (t->part_size && (t->part_size < TDB_S3_PART_MIN ||
                         t->part_size > TDB_S3_PART_MAX))
        return tdb_err(err, TDB_E_INVAL, "s3_part_size=%llu: not a part "
                       "size of 5 MiB to 5 GiB (S3's bounds)",
                       (unsigned long long)t->part_size);
    if (t->part_size)
        s->part_size = t->part_size;
    if (t->disk_cache)
        return tdb_os_disk_open(&s->disk, t->disk_cache,
                                t->disk_cache_bytes ? t->disk_cache_bytes
                                                    : TDB_S3_DISK_CACHE_BYTES,
                                err);
    return 0;
}

int tdb_io_open_url_with(struct tdb_io *io, const char *source,
                         const struct tdb_store_options *o, bool create,
                         struct tdb_error *err)
{
    enum os_kind kind = os_kind_of(source, NULL);
    if (kind == OS_NONE) {
        int r = tdb_io_posix(io, source);
        return r ? tdb_err(err, r, "%s: %s", source, tdb_strerror(r)) : 0;
    }
    int r;
    if (kind == OS_AZURE) {
        r = os_azure(io, source, o, err);
    } else {
        struct tdb_s3_config cfg;
        r = kind == OS_GCS ? os_gcs_config(&cfg, o, err)
                           : tdb_s3_config_load_with(&cfg, o, err);
        if (r)
            return r;
        r = tdb_io_s3(io, source, &cfg, err);
        tdb_s3_config_free(&cfg);
    }
    if (r)
        return r;
    struct objstore *s = io->ctx;
    if (o && (r = os_tune(s, &o->tune, err))) {
        tdb_io_free(io);
        return r;
    }
    /* the listings an array's open reads first, asked for now in case
     * the source is one (a group's open never lists them) */
    static const char *const dirs[] = {"__schema", "__commits",
                                       "__fragment_meta", "__meta"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        tdb_os_want_list(s, dirs[i], false);
    tdb_os_want_list(s, "__fragments", true);
    /* the bucket answers, and the prefix holds something: its listing,
     * kept for the open that follows */
    char *kp = NULL;
    struct tdb_store_dent *e = NULL;
    size_t n = 0;
    if (asprintf(&kp, "%s%s", s->prefix, s->prefix[0] ? "/" : "") < 0) {
        kp = NULL;
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    } else {
        r = tdb_os_list_keys(s, kp, true, 0, &e, &n, err);
    }
    free(kp);
    if (!r && !n && !create)
        r = tdb_err(err, TDB_E_NOENT, "%s: no objects under this prefix",
                    source);
    if (!r)
        tdb_os_dir_put(s, "", e, n, true);
    else
        tdb_store_dents_free(e, n);
    if (r)
        tdb_io_free(io);
    return r;
}

int tdb_io_open_url(struct tdb_io *io, const char *source,
                    struct tdb_error *err)
{
    return tdb_io_open_url_with(io, source, NULL, false, err);
}
