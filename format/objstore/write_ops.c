/* write_ops.c: the changing half of the I/O interface over an object
 * store: writes kept in temporary files until synced (then PUT, in
 * parts when large), renames as copies and DELETEs (a folder key by
 * key), removals. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

void tdb_os_pending_free(struct os_pending *p)
{
    if (!p)
        return;
    close(p->fd);
    free(p->path);
    free(p);
}

/* Something changed at norm through the backend. */
void tdb_os_changed(struct objstore *s, const char *norm)
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

/* A new object being written, norm under `path`, in a temporary file.  One
 * written from its start replaces the stored one (objects are written
 * whole: no GET of what goes anyway); one first written further on
 * (off > 0) starts as the stored one, if any, the write changing only the
 * bytes it covers, as on a POSIX file.  @return 0 (*out) or a TDB_E_*
 * code. */
static int os_pending_new(struct objstore *s, const char *norm,
                          const char *path, uint64_t off,
                          struct os_pending **out)
{
    struct os_pending *np = calloc(1, sizeof *np);
    if (!np || !(np->path = strdup(norm))) {
        free(np);
        return TDB_E_NOMEM;
    }
    if ((np->fd = os_tmpfile()) < 0) {
        free(np->path);
        free(np);
        return TDB_E_IO;
    }
    char *key = off == 0 ? NULL : tdb_os_key(s, path);
    int r = 0;
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
        tdb_os_pending_free(np);
        return r;
    }
    *out = np;
    return 0;
}

/* Writes buf[0..len) at off of p's file, its size growing to end.
 * @return 0 or TDB_E_IO. */
static int os_pending_write(struct os_pending *p, uint64_t off,
                            const void *buf, size_t len, uint64_t end)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pwrite(p->fd, (const uint8_t *)buf + done, len - done,
                           (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return TDB_E_IO;
        done += (size_t)n;
    }
    if (end > p->size)
        p->size = end;
    return 0;
}

int tdb_os_op_write_at(void *ctx, const char *path, uint64_t off,
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
    int r = known ? 0 : os_pending_new(s, norm, path, off, &np);
    if (r) {
        free(norm);
        return r;
    }
    pthread_mutex_lock(&s->lock);
    struct os_pending *p = tdb_os_pending_find(s, norm);
    if (!p && np) {
        np->next = s->pend;
        s->pend = p = np;
        np = NULL;
    }
    /* removed meanwhile by another thread: start anew */
    r = p ? os_pending_write(p, off, buf, len, end) : TDB_E_IO;
    pthread_mutex_unlock(&s->lock);
    tdb_os_pending_free(np);
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
            tdb_os_pending_free(p);
        } else {
            p->next = s->pend;
            s->pend = p;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    tdb_os_pending_free(p);
    return 0;
}

int tdb_os_op_sync(void *ctx, const char *path)
{
    struct objstore *s = ctx;
    char *norm = tdb_os_norm(path), *key = tdb_os_key(s, path);
    bool was;
    int r = norm && key ? os_flush(s, norm, key, &was) : TDB_E_NOMEM;
    if (!r && was)
        tdb_os_changed(s, norm);
    free(norm);
    free(key);
    return r;
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

int tdb_os_op_rename(void *ctx, const char *from, const char *to)
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
                : tdb_os_list_keys(s, &(struct os_list_ask){kp, false, 0},
                                   &e, &n, NULL);
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
        tdb_os_changed(s, nf);
        tdb_os_changed(s, nt);
    }
    free(nf);
    free(nt);
    free(kf);
    free(kt);
    return r;
}


int tdb_os_op_remove(void *ctx, const char *path)
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
        r = tdb_os_head(s, key, &size);
    if (!r) {
        r = os_delete(s, key);
    } else if (r == TDB_E_NOENT) {
        /* an object only pending is gone now; a folder with keys is not
         * empty; an empty folder does not exist on S3 */
        int c = tdb_os_has_children(s, key);
        r = c < 0 ? c : c ? TDB_E_IO : p ? 0 : TDB_E_NOENT;
    }
    if (norm)
        tdb_os_changed(s, norm);
    tdb_os_pending_free(p);
    free(norm);
    free(key);
    return r;
}
