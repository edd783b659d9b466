/* read_ops.c: the reading half of the I/O interface over an object
 * store: range GETs and HEADs, served first from an object being
 * written, from what was fetched ahead, from the disk cache; sizes and
 * folders from the cached listings; listings of a folder. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define OS_FAILED_MS 10000         /* a failed object's reads fail at once
                                    * this long (at most the deadline) */
#define OS_SMALL_FILE (256u << 10) /* a file read unasked is fetched whole
                                    * up to this size */

/* Does any key start with "KEY/"?  @return 1, 0 or a TDB_E_* code. */
int tdb_os_has_children(struct objstore *s, const char *key)
{
    char *kp = NULL;
    if (asprintf(&kp, "%s%s", key, key[0] ? "/" : "") < 0)
        return TDB_E_NOMEM;
    struct tdb_store_dent *e = NULL;
    size_t n = 0;
    int r = tdb_os_list_keys(s, &(struct os_list_ask){kp, false, 1}, &e,
                             &n, NULL);
    free(kp);
    if (r)
        return r;
    tdb_store_dents_free(e, n);
    return n > 0;
}

/* HEAD of key: its size.  @return 0, TDB_E_NOENT, TDB_E_IO. */
int tdb_os_head(struct objstore *s, const char *key, uint64_t *size)
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
int tdb_os_op_read_at(void *ctx, const char *path, uint64_t off, void *buf,
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
        r = known ? 0 : tdb_os_head(s, key, &size);
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

int tdb_os_op_size(void *ctx, const char *path, uint64_t *size)
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
        r = key ? tdb_os_head(s, key, size) : TDB_E_NOMEM;
        free(key);
    }
    free(e.etag);
    free(norm);
    return r == 1 ? 0 : r;
}

int tdb_os_op_is_dir(void *ctx, const char *path, bool *is_dir)
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
            r = key[0] ? tdb_os_head(s, key, &sz) : TDB_E_NOENT;
            if (!r) {
                *is_dir = false;
            } else if (r == TDB_E_NOENT) {
                r = tdb_os_has_children(s, key);
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
int tdb_os_op_list(void *ctx, const char *path, tdb_io_list_fn fn,
                   void *arg)
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
    struct os_list_ask ask = {kp, true, 0};
    int r = ahead ? 0 : tdb_os_list_keys(s, &ask, &e, &n, NULL);
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
