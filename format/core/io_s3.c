/* io_s3.c: the I/O interface over S3 and S3-compatible servers: range GETs,
 * HEAD, ListObjectsV2, PUT, server-side copy and DELETE, listings cached
 * by folder, writes kept in temporary files until synced.  Requests go
 * through io_s3_http.c, signed by io_s3_sign.c; answers are parsed by
 * io_s3_xml.c. */
#include "core/core.h"
#include "core/io_s3.h"
#include "core/io_s3_local.h"
#include "core/names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define S3_CACHE_MAX (1u << 20) /* folder entries cached before all go */

/* --------------------------------------------------------------- state */

struct s3_dir {
    char *path;
    struct s3_dent *e;
    size_t n;
    struct s3_dir *next;
};

/* An object being written: its bytes wait in an unlinked temporary file
 * until sync or rename PUTs them. */
struct s3_pending {
    char *path;
    int fd;
    uint64_t size;
    struct s3_pending *next;
};


/* --------------------------------------------------------------- cache */

static size_t s3_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)(h % S3_CACHE_BUCKETS);
}

static void s3_dir_free(struct s3_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->e[i].name);
    free(d->e);
    free(d->path);
    free(d);
}

/* s->lock held. */
static void s3_cache_clear(struct s3 *s)
{
    for (size_t i = 0; i < S3_CACHE_BUCKETS; i++)
        while (s->cache[i]) {
            struct s3_dir *d = s->cache[i];
            s->cache[i] = d->next;
            s3_dir_free(d);
        }
    s->ncached = 0;
}

/* Unlinks and frees folder `path`'s entry.  s->lock held. */
static void s3_cache_drop(struct s3 *s, const char *path)
{
    for (struct s3_dir **pp = &s->cache[s3_hash(path)]; *pp;
         pp = &(*pp)->next) {
        if (strcmp((*pp)->path, path))
            continue;
        struct s3_dir *d = *pp;
        *pp = d->next;
        s->ncached -= d->n;
        s3_dir_free(d);
        return;
    }
}

/* Something changed at `path`: the listings of every folder above it go. */
static void s3_cache_forget(struct s3 *s, const char *path)
{
    char *p = strdup(path);
    pthread_mutex_lock(&s->lock);
    if (!p) {
        s3_cache_clear(s);
    } else {
        for (;;) {
            char *slash = strrchr(p, '/');
            if (slash)
                *slash = 0;
            else
                p[0] = 0;
            s3_cache_drop(s, p);
            if (!p[0])
                break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(p);
}

static int s3_dent_cmp(const void *a, const void *b)
{
    const struct s3_dent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (int)x->is_dir - (int)y->is_dir;
}

/* Keeps a listing (takes e).  Best effort: on ENOMEM nothing is kept. */
static void s3_cache_put(struct s3 *s, const char *path, struct s3_dent *e,
                         size_t n)
{
    struct s3_dir *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        for (size_t i = 0; i < n; i++)
            free(e[i].name);
        free(e);
        return;
    }
    qsort(e, n, sizeof *e, s3_dent_cmp);
    d->e = e;
    d->n = n;
    pthread_mutex_lock(&s->lock);
    s3_cache_drop(s, path);
    if (s->ncached + n > S3_CACHE_MAX)
        s3_cache_clear(s);
    size_t b = s3_hash(path);
    d->next = s->cache[b];
    s->cache[b] = d;
    s->ncached += n;
    pthread_mutex_unlock(&s->lock);
}

/* What the cached listing of path's folder says of it: 1 found (*is_dir,
 * *size set), 0 not known. */
static int s3_cache_get(struct s3 *s, const char *path, bool *is_dir,
                        uint64_t *size)
{
    char *dir = strdup(path);
    if (!dir)
        return 0;
    char *slash = strrchr(dir, '/');
    const char *leaf = slash ? path + (slash - dir) + 1 : path;
    if (slash)
        *slash = 0;
    else
        dir[0] = 0;
    int found = 0;
    pthread_mutex_lock(&s->lock);
    for (struct s3_dir *d = s->cache[s3_hash(dir)]; d && !found; d = d->next) {
        if (strcmp(d->path, dir))
            continue;
        for (size_t i = 0; i < d->n; i++)   /* a file and a folder may
                                             * share a name: the file wins */
            if (!strcmp(d->e[i].name, leaf) && (!found || !d->e[i].is_dir)) {
                *is_dir = d->e[i].is_dir;
                *size = d->e[i].size;
                found = 1;
            }
        break;
    }
    pthread_mutex_unlock(&s->lock);
    free(dir);
    return found;
}

/* ------------------------------------------------------------- helpers */

/* The key of `path` (relative to the root; leading '/' ignored). */
static char *s3_key(struct s3 *s, const char *path)
{
    while (*path == '/')
        path++;
    size_t l = strlen(path);
    while (l && path[l - 1] == '/')
        l--;
    char *k = NULL;
    if (!s->prefix[0])
        return strndup(path, l);
    if (!l)
        return strdup(s->prefix);
    if (asprintf(&k, "%s/%.*s", s->prefix, (int)l, path) < 0)
        return NULL;
    return k;
}

/* The path as the cache names it (no leading or trailing '/'). */
static char *s3_norm(const char *path)
{
    while (*path == '/')
        path++;
    size_t l = strlen(path);
    while (l && path[l - 1] == '/')
        l--;
    return strndup(path, l);
}

static struct s3_pending *s3_pending_find(struct s3 *s, const char *norm)
{
    for (struct s3_pending *p = s->pend; p; p = p->next)
        if (!strcmp(p->path, norm))
            return p;
    return NULL;
}

/* Takes pending object `norm` off the list (s->lock held). */
static struct s3_pending *s3_pending_take(struct s3 *s, const char *norm)
{
    for (struct s3_pending **pp = &s->pend; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->path, norm)) {
            struct s3_pending *p = *pp;
            *pp = p->next;
            return p;
        }
    return NULL;
}

static void s3_pending_free(struct s3_pending *p)
{
    if (!p)
        return;
    close(p->fd);
    free(p->path);
    free(p);
}

/* A listing of keys starting with `kprefix`: with a delimiter, one level
 * (entries named after kprefix, folders with is_dir), else every key
 * below.  At most `max` keys (0: all).  With err, failures are named.
 * @return 0, a TDB_E_* code. */
static int s3_list_keys(struct s3 *s, const char *kprefix, bool delim,
                        unsigned max, struct s3_dent **out, size_t *nout,
                        struct tdb_error *err)
{
    struct s3_dent *all = NULL;
    size_t n = 0, cap = 0;
    char *token = NULL;
    int r = 0;
    char maxs[16];
    snprintf(maxs, sizeof maxs, "%u", max ? max : 1000);
    do {
        struct tdb_s3_pair q[5];
        size_t nq = 0;
        q[nq++] = (struct tdb_s3_pair){"list-type", "2"};
        q[nq++] = (struct tdb_s3_pair){"prefix", kprefix};
        q[nq++] = (struct tdb_s3_pair){"max-keys", maxs};
        if (delim)
            q[nq++] = (struct tdb_s3_pair){"delimiter", "/"};
        if (token)
            q[nq++] = (struct tdb_s3_pair){"continuation-token", token};
        char *query = tdb_s3_query(q, nq);
        if (!query) {
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
            break;
        }
        struct s3_call c = {.method = "GET", .query = query, .up_fd = -1,
                            .sink = S3_SINK_MEM};
        r = tdb_s3_perform(s, &c);
        free(query);
        if (!r)
            r = tdb_s3_status(s, &c, err);
        else
            tdb_err(err, r, "s3://%s/%s: list: %s", s->bucket, kprefix,
                    c.cc != CURLE_OK ? curl_easy_strerror(c.cc)
                                     : tdb_strerror(r));
        struct s3_xml x;
        memset(&x, 0, sizeof x);
        if (!r && (r = tdb_s3_xml_parse(&x, &c.mem, kprefix)))
            tdb_err(err, r, "s3://%s/%s: list: the answer is not a listing",
                    s->bucket, kprefix);
        tdb_buf_free(&c.mem);
        if (r) {
            tdb_s3_xml_free(&x);
            break;
        }
        if (x.is_error) {
            r = tdb_err(err, TDB_E_IO, "s3://%s/%s: list: %s", s->bucket,
                        kprefix, x.code ? x.code : "error");
            tdb_s3_xml_free(&x);
            break;
        }
        if (n + x.n > cap) {
            size_t nc = (n + x.n) * 2;
            struct s3_dent *na = realloc(all, nc * sizeof *na);
            if (!na) {
                tdb_s3_xml_free(&x);
                r = tdb_err(err, TDB_E_NOMEM, "out of memory");
                break;
            }
            all = na;
            cap = nc;
        }
        memcpy(all + n, x.e, x.n * sizeof *x.e);
        n += x.n;
        x.n = 0;
        free(token);
        token = NULL;
        bool more = x.truncated && !max;
        if (more && !x.token)
            r = tdb_err(err, TDB_E_CORRUPT, "s3://%s/%s: list: truncated "
                        "without a continuation token", s->bucket, kprefix);
        else if (more) {
            token = x.token;
            x.token = NULL;
        }
        tdb_s3_xml_free(&x);
        if (!more)
            break;
    } while (!r);
    free(token);
    if (r) {
        for (size_t i = 0; i < n; i++)
            free(all[i].name);
        free(all);
        return r;
    }
    *out = all;
    *nout = n;
    return 0;
}

static void s3_dents_free(struct s3_dent *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].name);
    free(e);
}

/* Does any key start with "KEY/"?  @return 1, 0 or a TDB_E_* code. */
static int s3_has_children(struct s3 *s, const char *key)
{
    char *kp = NULL;
    if (asprintf(&kp, "%s%s", key, key[0] ? "/" : "") < 0)
        return TDB_E_NOMEM;
    struct s3_dent *e = NULL;
    size_t n = 0;
    int r = s3_list_keys(s, kp, false, 1, &e, &n, NULL);
    free(kp);
    if (r)
        return r;
    s3_dents_free(e, n);
    return n > 0;
}

/* HEAD of key: its size.  @return 0, TDB_E_NOENT, TDB_E_IO. */
static int s3_head(struct s3 *s, const char *key, uint64_t *size)
{
    struct s3_call c = {.method = "HEAD", .key = key, .up_fd = -1};
    int r = tdb_s3_perform(s, &c);
    if (!r)
        r = tdb_s3_status(s, &c, NULL);
    if (!r) {
        r = c.length < 0 ? TDB_E_IO : 0;
        *size = (uint64_t)c.length;
    }
    tdb_buf_free(&c.mem);
    return r;
}

/* ------------------------------------------------------------ the ops */

static int s3_read_at(void *ctx, const char *path, uint64_t off, void *buf,
                      size_t len)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_find(s, norm);
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
    free(norm);
    if (p)
        return r;
    char *key = s3_key(s, path);
    if (!key)
        return TDB_E_NOMEM;
    if (len == 0) {      /* nothing to GET: the object must exist */
        uint64_t size;
        r = s3_head(s, key, &size);
        free(key);
        return r ? r : off > size ? TDB_E_IO : 0;
    }
    struct s3_call c = {.method = "GET", .key = key, .up_fd = -1,
                        .sink = S3_SINK_BUF, .dst = buf, .dst_len = len,
                        .skip = off};
    snprintf(c.range, sizeof c.range, "bytes=%llu-%llu",
             (unsigned long long)off, (unsigned long long)(off + len - 1));
    r = tdb_s3_perform(s, &c);
    if (!r)
        r = c.status == 416 ? TDB_E_IO : tdb_s3_status(s, &c, NULL);
    if (!r && c.dst_got != len)
        r = TDB_E_IO;
    tdb_buf_free(&c.mem);
    free(key);
    return r;
}

static int s3_size(void *ctx, const char *path, uint64_t *size)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_find(s, norm);
    if (p)
        *size = p->size;
    pthread_mutex_unlock(&s->lock);
    bool is_dir;
    uint64_t sz;
    int r = 0;
    if (!p && s3_cache_get(s, norm, &is_dir, &sz) && !is_dir) {
        *size = sz;
    } else if (!p) {
        char *key = s3_key(s, path);
        r = key ? s3_head(s, key, size) : TDB_E_NOMEM;
        free(key);
    }
    free(norm);
    return r;
}

static int s3_is_dir(void *ctx, const char *path, bool *is_dir)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    bool pending = s3_pending_find(s, norm) != NULL;
    pthread_mutex_unlock(&s->lock);
    uint64_t sz;
    int r = 0;
    if (pending) {
        *is_dir = false;
    } else if (!norm[0] || !s3_cache_get(s, norm, is_dir, &sz)) {
        char *key = s3_key(s, path);
        if (!key) {
            r = TDB_E_NOMEM;
        } else {
            r = key[0] ? s3_head(s, key, &sz) : TDB_E_NOENT;
            if (!r) {
                *is_dir = false;
            } else if (r == TDB_E_NOENT) {
                r = s3_has_children(s, key);
                if (r >= 0) {
                    *is_dir = true;
                    r = r ? 0 : TDB_E_NOENT;
                }
            }
        }
        free(key);
    }
    free(norm);
    return r;
}

static int s3_list(void *ctx, const char *path, tdb_io_list_fn fn, void *arg)
{
    struct s3 *s = ctx;
    char *key = s3_key(s, path), *kp = NULL, *norm = s3_norm(path);
    if (!key || !norm ||
        asprintf(&kp, "%s%s", key, key[0] ? "/" : "") < 0) {
        free(key);
        free(norm);
        return TDB_E_NOMEM;
    }
    free(key);
    struct s3_dent *e = NULL;
    size_t n = 0;
    int r = s3_list_keys(s, kp, true, 0, &e, &n, NULL);
    free(kp);
    /* a folder exists through its keys; none: no folder */
    if (!r && !n)
        r = TDB_E_NOENT;
    for (size_t i = 0; !r && i < n; i++) {
        struct tdb_dirent ent = {e[i].name, e[i].is_dir};
        r = fn(arg, &ent);
    }
    if (r || !n)
        s3_dents_free(e, n);
    else
        s3_cache_put(s, norm, e, n);
    free(norm);
    return r;
}

/* PUTs the first `len` bytes of fd as key. */
static int s3_put_fd(struct s3 *s, const char *key, int fd, uint64_t len)
{
    struct s3_call c = {.method = "PUT", .key = key, .up_fd = fd,
                        .up_len = len, .sink = S3_SINK_NONE};
    int r = tdb_s3_perform(s, &c);
    if (!r)
        r = tdb_s3_status(s, &c, NULL);
    tdb_buf_free(&c.mem);
    return r;
}

static int s3_tmpfile(void)
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

static int s3_write_at(void *ctx, const char *path, uint64_t off,
                       const void *buf, size_t len)
{
    struct s3 *s = ctx;
    uint64_t end;
    if (!tdb_add_ok(off, len, &end) || end > INT64_MAX)
        return TDB_E_NOMEM;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    if (!norm[0]) {
        free(norm);
        return TDB_E_INVAL;
    }
    pthread_mutex_lock(&s->lock);
    bool known = s3_pending_find(s, norm) != NULL;
    pthread_mutex_unlock(&s->lock);
    struct s3_pending *np = NULL;
    int r = 0;
    if (!known) {
        /* a new pending object starts as the stored one, if any: a write
         * changes only the bytes it covers, as on a POSIX file */
        np = calloc(1, sizeof *np);
        if (!np || !(np->path = strdup(norm))) {
            free(np);
            free(norm);
            return TDB_E_NOMEM;
        }
        if ((np->fd = s3_tmpfile()) < 0) {
            free(np->path);
            free(np);
            free(norm);
            return TDB_E_IO;
        }
        char *key = s3_key(s, path);
        if (!key) {
            r = TDB_E_NOMEM;
        } else {
            struct s3_call c = {.method = "GET", .key = key, .up_fd = -1,
                                .sink = S3_SINK_FD, .fd = np->fd};
            r = tdb_s3_perform(s, &c);
            if (!r)
                r = tdb_s3_status(s, &c, NULL);
            if (!r)
                np->size = c.fd_pos;
            else if (r == TDB_E_NOENT)
                r = 0;
            tdb_buf_free(&c.mem);
            free(key);
        }
        if (r) {
            s3_pending_free(np);
            free(norm);
            return r;
        }
    }
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_find(s, norm);
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
    s3_pending_free(np);
    free(norm);
    return r;
}

/* PUTs pending object `norm` as `key` (its own, or a rename's target).
 * @return 0 (also when nothing was pending: *was is then false). */
static int s3_flush(struct s3 *s, const char *norm, const char *key,
                    bool *was)
{
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_take(s, norm);
    pthread_mutex_unlock(&s->lock);
    *was = p != NULL;
    if (!p)
        return 0;
    int r = s3_put_fd(s, key, p->fd, p->size);
    if (r) {   /* kept for another try */
        pthread_mutex_lock(&s->lock);
        if (s3_pending_find(s, norm)) {
            s3_pending_free(p);
        } else {
            p->next = s->pend;
            s->pend = p;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    s3_pending_free(p);
    return 0;
}

static int s3_sync(void *ctx, const char *path)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path), *key = s3_key(s, path);
    bool was;
    int r = norm && key ? s3_flush(s, norm, key, &was) : TDB_E_NOMEM;
    if (!r && was)
        s3_cache_forget(s, norm);
    free(norm);
    free(key);
    return r;
}

static int s3_mkdir(void *ctx, const char *path)
{
    return 0;   /* a folder is the prefix of its keys */
}

/* DELETE key (S3 answers 204 whether it was there or not). */
static int s3_delete(struct s3 *s, const char *key)
{
    struct s3_call c = {.method = "DELETE", .key = key, .up_fd = -1};
    int r = tdb_s3_perform(s, &c);
    if (!r)
        r = tdb_s3_status(s, &c, NULL);
    tdb_buf_free(&c.mem);
    return r;
}

/* Server-side copy of key `from` to key `to`. */
static int s3_copy(struct s3 *s, const char *from, const char *to)
{
    char *src = NULL, *enc = tdb_s3_encode(from, true);
    if (!enc || asprintf(&src, "/%s/%s", s->bucket, enc) < 0) {
        free(enc);
        return TDB_E_NOMEM;
    }
    free(enc);
    struct s3_call c = {.method = "PUT", .key = to, .up_fd = -1,
                        .copy_source = src, .sink = S3_SINK_MEM};
    int r = tdb_s3_perform(s, &c);
    if (!r)
        r = tdb_s3_status(s, &c, NULL);
    /* a copy can fail after its 200 header: the body is then an Error */
    if (!r) {
        struct s3_xml x;
        int xr = tdb_s3_xml_parse(&x, &c.mem, NULL);
        if (xr || x.is_error)
            r = TDB_E_IO;
        tdb_s3_xml_free(&x);
    }
    tdb_buf_free(&c.mem);
    free(src);
    return r;
}

static int s3_rename(void *ctx, const char *from, const char *to)
{
    struct s3 *s = ctx;
    char *nf = s3_norm(from), *nt = s3_norm(to);
    char *kf = s3_key(s, from), *kt = s3_key(s, to);
    int r = nf && nt && kf && kt ? 0 : TDB_E_NOMEM;
    bool was = false;
    if (!r && !nf[0])
        r = TDB_E_INVAL;
    /* a pending object goes straight to its new name */
    if (!r)
        r = s3_flush(s, nf, kt, &was);
    if (!r && was) {
        r = s3_delete(s, kf);    /* an older stored version, if any */
    } else if (!r) {
        r = s3_copy(s, kf, kt);
        if (!r) {
            r = s3_delete(s, kf);
        } else if (r == TDB_E_NOENT) {
            /* a folder: each key below it, copied then deleted */
            char *kp = NULL;
            struct s3_dent *e = NULL;
            size_t n = 0;
            r = asprintf(&kp, "%s/", kf) < 0 ? TDB_E_NOMEM
                : s3_list_keys(s, kp, false, 0, &e, &n, NULL);
            if (!r && !n)
                r = TDB_E_NOENT;
            for (size_t i = 0; !r && i < n; i++) {
                char *a = NULL, *b = NULL;
                if (asprintf(&a, "%s%s", kp, e[i].name) < 0)
                    a = NULL;
                if (asprintf(&b, "%s/%s", kt, e[i].name) < 0)
                    b = NULL;
                r = a && b ? s3_copy(s, a, b) : TDB_E_NOMEM;
                if (!r)
                    r = s3_delete(s, a);
                free(a);
                free(b);
            }
            if (kp)
                s3_dents_free(e, n);
            free(kp);
        }
    }
    if (nf && nt) {
        s3_cache_forget(s, nf);
        s3_cache_forget(s, nt);
    }
    free(nf);
    free(nt);
    free(kf);
    free(kt);
    return r;
}

static int s3_remove(void *ctx, const char *path)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path), *key = s3_key(s, path);
    int r = norm && key ? 0 : TDB_E_NOMEM;
    struct s3_pending *p = NULL;
    if (!r) {
        pthread_mutex_lock(&s->lock);
        p = s3_pending_take(s, norm);
        pthread_mutex_unlock(&s->lock);
    }
    uint64_t size;
    if (!r && key[0])
        r = s3_head(s, key, &size);
    if (!r) {
        r = s3_delete(s, key);
    } else if (r == TDB_E_NOENT) {
        /* an object only pending is gone now; a folder with keys is not
         * empty; an empty folder does not exist on S3 */
        int c = s3_has_children(s, key);
        r = c < 0 ? c : c ? TDB_E_IO : p ? 0 : TDB_E_NOENT;
    }
    if (norm)
        s3_cache_forget(s, norm);
    s3_pending_free(p);
    free(norm);
    free(key);
    return r;
}

static void s3_destroy(void *ctx)
{
    struct s3 *s = ctx;
    /* objects written and never synced are stored now (best effort) */
    while (s->pend) {
        struct s3_pending *p = s->pend;
        s->pend = p->next;
        char *key = s3_key(s, p->path);
        if (key)
            s3_put_fd(s, key, p->fd, p->size);
        free(key);
        s3_pending_free(p);
    }
    for (size_t i = 0; i < s->nidle; i++)
        curl_easy_cleanup(s->idle[i]);
    s3_cache_clear(s);
    pthread_mutex_destroy(&s->lock);
    if (s->secret)
        explicit_bzero(s->secret, strlen(s->secret));
    free(s->bucket);
    free(s->prefix);
    free(s->base);
    free(s->host);
    free(s->uri_base);
    free(s->region);
    free(s->key_id);
    free(s->secret);
    free(s->token);
    free(s);
}

static const struct tdb_io_ops io_s3_ops = {
    .read_at = s3_read_at,
    .size = s3_size,
    .list = s3_list,
    .is_dir = s3_is_dir,
    .write_at = s3_write_at,
    .mkdir = s3_mkdir,
    .rename = s3_rename,
    .remove = s3_remove,
    .sync = s3_sync,
    .destroy = s3_destroy,
};

/* ---------------------------------------------------------------- open */

bool tdb_io_is_url(const char *source)
{
    return !strncmp(source, "s3://", 5);
}

/* A bucket name that can be a host name label set (no dots: TLS names). */
static bool s3_vhost_ok(const char *b)
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
static int s3_endpoint(struct s3 *s, const char *endpoint,
                       struct tdb_error *err)
{
    if (!endpoint) {
        if (s3_vhost_ok(s->bucket)) {
            if (asprintf(&s->host, "%s.s3.%s.amazonaws.com", s->bucket,
                         s->region) < 0 ||
                !(s->uri_base = strdup("")))
                return TDB_E_NOMEM;
        } else if (asprintf(&s->host, "s3.%s.amazonaws.com", s->region) < 0 ||
                   asprintf(&s->uri_base, "/%s", s->bucket) < 0) {
            return TDB_E_NOMEM;
        }
        return asprintf(&s->base, "https://%s", s->host) < 0 ? TDB_E_NOMEM : 0;
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

int tdb_io_s3(struct tdb_io *io, const char *url,
              const struct tdb_s3_config *cfg, struct tdb_error *err)
{
    if (!tdb_io_is_url(url))
        return tdb_err(err, TDB_E_INVAL, "%s: not an s3:// URL", url);
    const char *b = url + 5, *slash = strchr(b, '/');
    size_t bl = slash ? (size_t)(slash - b) : strlen(b);
    if (!bl || bl > 255)
        return tdb_err(err, TDB_E_INVAL, "%s: no bucket name", url);
    if ((cfg->access_key == NULL) != (cfg->secret_key == NULL))
        return tdb_err(err, TDB_E_INVAL, "%s: an access key without its "
                       "secret key (or the other way round)", url);
    struct s3 *s = calloc(1, sizeof *s);
    if (!s)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    pthread_mutex_init(&s->lock, NULL);
    int r = 0;
    if (!(s->bucket = strndup(b, bl)) ||
        !(s->prefix = s3_norm(slash ? slash : "")) ||
        !(s->region = strdup(cfg->region && cfg->region[0] ? cfg->region
                                                           : "us-east-1")) ||
        (cfg->access_key && !(s->key_id = strdup(cfg->access_key))) ||
        (cfg->secret_key && !(s->secret = strdup(cfg->secret_key))) ||
        (cfg->session_token && cfg->session_token[0] &&
         !(s->token = strdup(cfg->session_token))))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!r)
        r = s3_endpoint(s, cfg->endpoint && cfg->endpoint[0] ? cfg->endpoint
                                                             : NULL, err);
    if (r) {
        if (r == TDB_E_NOMEM)
            tdb_err(err, r, "out of memory");
        s3_destroy(s);
        return r;
    }
    io->ops = &io_s3_ops;
    io->ctx = s;
    return 0;
}

int tdb_io_open_url(struct tdb_io *io, const char *source,
                    struct tdb_error *err)
{
    return tdb_io_open_url_with(io, source, NULL, false, err);
}

int tdb_io_open_url_with(struct tdb_io *io, const char *source,
                         const struct tdb_s3_options *o, bool create,
                         struct tdb_error *err)
{
    if (!tdb_io_is_url(source)) {
        int r = tdb_io_posix(io, source);
        return r ? tdb_err(err, r, "%s: %s", source, tdb_strerror(r)) : 0;
    }
    struct tdb_s3_config cfg;
    int r = tdb_s3_config_load_with(&cfg, o, err);
    if (r)
        return r;
    r = tdb_io_s3(io, source, &cfg, err);
    tdb_s3_config_free(&cfg);
    if (r)
        return r;
    /* the bucket answers, and the prefix holds something */
    struct s3 *s = io->ctx;
    char *kp = NULL;
    struct s3_dent *e = NULL;
    size_t n = 0;
    if (asprintf(&kp, "%s%s", s->prefix, s->prefix[0] ? "/" : "") < 0) {
        kp = NULL;
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    } else {
        r = s3_list_keys(s, kp, false, 1, &e, &n, err);
    }
    free(kp);
    if (!r && !n && !create)
        r = tdb_err(err, TDB_E_NOENT, "%s: no objects under this prefix",
                    source);
    s3_dents_free(e, n);
    if (r)
        tdb_io_free(io);
    return r;
}
