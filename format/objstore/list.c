/* list.c: the S3 backend's listings: ListObjectsV2 page after page
 * (continuation tokens past 1,000 keys), the cache of folders' entries
 * (sizes and ETags as the listing gave them), and listings fetched ahead
 * (one folder, or every folder below one from a listing without
 * delimiter) on the I/O thread. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <stdio.h>
#include <stdlib.h>

#define OS_CACHE_MAX (1u << 20) /* folder entries cached before all go */

/* A folder's entries as a listing gave them, sorted by name. */
struct os_dir {
    char *path;
    struct tdb_store_dent *e;
    size_t n;
    bool fresh;         /* fetched ahead, not yet given to a list call */
    struct os_dir *next;
};

/* A listing fetched ahead, page after page on the I/O thread. */
struct os_listing {
    struct objstore *s;
    char *norm;         /* the folder */
    char *kprefix;      /* its key prefix, "PREFIX/FOLDER/" */
    bool tree;          /* every key below (no delimiter) */
    char *query;
    struct os_call c;
    struct tdb_store_dent *e;  /* what the pages gave so far */
    size_t n, cap;
    struct os_listing *next;
};

/* --------------------------------------------------------------- cache */

static size_t os_hash(const char *s)
{
    return (size_t)(tdb_os_hash(s) % OS_CACHE_BUCKETS);
}

static void os_dir_free(struct os_dir *d)
{
    tdb_store_dents_free(d->e, d->n);
    free(d->path);
    free(d);
}

/* s->lock held. */
void tdb_os_dir_clear(struct objstore *s)
{
    for (size_t i = 0; i < OS_CACHE_BUCKETS; i++)
        while (s->cache[i]) {
            struct os_dir *d = s->cache[i];
            s->cache[i] = d->next;
            os_dir_free(d);
        }
    s->ncached = 0;
}

static struct os_dir *os_dir_find(struct objstore *s, const char *path)
{
    for (struct os_dir *d = s->cache[os_hash(path)]; d; d = d->next)
        if (!strcmp(d->path, path))
            return d;
    return NULL;
}

/* Unlinks and frees folder `path`'s entry.  s->lock held. */
static void os_dir_drop(struct objstore *s, const char *path)
{
    for (struct os_dir **pp = &s->cache[os_hash(path)]; *pp;
         pp = &(*pp)->next) {
        if (strcmp((*pp)->path, path))
            continue;
        struct os_dir *d = *pp;
        *pp = d->next;
        s->ncached -= d->n;
        os_dir_free(d);
        return;
    }
}

void tdb_os_dir_forget(struct objstore *s, const char *path)
{
    char *p = strdup(path);
    pthread_mutex_lock(&s->lock);
    if (!p) {
        tdb_os_dir_clear(s);
    } else {
        for (;;) {
            char *slash = strrchr(p, '/');
            if (slash)
                *slash = 0;
            else
                p[0] = 0;
            os_dir_drop(s, p);
            if (!p[0])
                break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(p);
}

static int os_dent_cmp(const void *a, const void *b)
{
    const struct tdb_store_dent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (int)x->is_dir - (int)y->is_dir;
}

/* tdb_os_dir_put with s->lock held. */
static void os_dir_put_locked(struct objstore *s, struct os_dir *d)
{
    os_dir_drop(s, d->path);
    if (s->ncached + d->n > OS_CACHE_MAX)
        tdb_os_dir_clear(s);
    size_t b = os_hash(d->path);
    d->next = s->cache[b];
    s->cache[b] = d;
    s->ncached += d->n;
}

/* A cache entry for `path` holding e[n] (taken), or NULL (e freed). */
static struct os_dir *os_dir_new(const char *path, struct tdb_store_dent *e,
                                 size_t n, bool fresh)
{
    struct os_dir *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        tdb_store_dents_free(e, n);
        return NULL;
    }
    qsort(e, n, sizeof *e, os_dent_cmp);
    d->e = e;
    d->n = n;
    d->fresh = fresh;
    return d;
}

void tdb_os_dir_put(struct objstore *s, const char *path, struct tdb_store_dent *e,
                    size_t n, bool fresh)
{
    struct os_dir *d = os_dir_new(path, e, n, fresh);
    if (!d)
        return;
    pthread_mutex_lock(&s->lock);
    os_dir_put_locked(s, d);
    pthread_mutex_unlock(&s->lock);
}

/* Is a listing of folder `norm` on its way (s->lock held)? */
static bool os_listing_covers(struct objstore *s, const char *norm)
{
    size_t l;
    for (struct os_listing *L = s->listings; L; L = L->next) {
        if (!strcmp(L->norm, norm))
            return true;
        if (L->tree && ((l = strlen(L->norm)) == 0 ||
                        (!strncmp(norm, L->norm, l) && norm[l] == '/')))
            return true;
    }
    return false;
}

/* Waits while a listing of folder `norm` is on its way (s->lock held). */
static void os_listing_wait(struct objstore *s, const char *norm)
{
    while (os_listing_covers(s, norm))
        pthread_cond_wait(&s->cv, &s->lock);
}

static int os_dir_lookup(struct objstore *s, const char *path, struct tdb_store_dent *out,
                         bool wait)
{
    memset(out, 0, sizeof *out);    /* the caller frees out->etag */
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
    if (wait)
        os_listing_wait(s, dir);
    struct os_dir *d = os_dir_find(s, dir);
    if (d) {
        found = TDB_E_NOENT;
        for (size_t i = 0; i < d->n; i++)   /* a file and a folder may
                                             * share a name: the file wins */
            if (!strcmp(d->e[i].name, leaf) &&
                (found != 1 || !d->e[i].is_dir)) {
                out->is_dir = d->e[i].is_dir;
                out->size = d->e[i].size;
                free(out->etag);
                out->etag = d->e[i].etag ? strdup(d->e[i].etag) : NULL;
                found = 1;
            }
    }
    pthread_mutex_unlock(&s->lock);
    free(dir);
    return found;
}

int tdb_os_dir_lookup(struct objstore *s, const char *path, struct tdb_store_dent *out)
{
    return os_dir_lookup(s, path, out, true);
}

int tdb_os_dir_peek(struct objstore *s, const char *path, struct tdb_store_dent *out)
{
    return os_dir_lookup(s, path, out, false);
}

int tdb_os_dir_take(struct objstore *s, const char *norm, struct tdb_store_dent **out,
                    size_t *nout)
{
    int r = 0;
    *out = NULL;
    *nout = 0;
    pthread_mutex_lock(&s->lock);
    os_listing_wait(s, norm);
    struct os_dir *d = os_dir_find(s, norm);
    if (d && d->fresh) {
        d->fresh = false;
        struct tdb_store_dent *e = calloc(d->n ? d->n : 1, sizeof *e);
        r = e ? 1 : 0;
        for (size_t i = 0; e && i < d->n; i++) {
            e[i] = d->e[i];
            e[i].etag = NULL;
            if (!(e[i].name = strdup(d->e[i].name))) {
                tdb_store_dents_free(e, i);
                e = NULL;
                r = 0;
            }
        }
        *out = e;
        *nout = e ? d->n : 0;
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

/* ------------------------------------------------------------- listing */

/* Appends x's entries to e[*n] (growing *cap).  @return 0 or
 * TDB_E_NOMEM. */
static int os_dents_append(struct tdb_store_dent **e, size_t *n, size_t *cap,
                           struct tdb_store_answer *x)
{
    if (*n + x->n > *cap) {
        size_t nc = (*n + x->n) * 2;
        struct tdb_store_dent *na = realloc(*e, nc * sizeof *na);
        if (!na)
            return TDB_E_NOMEM;
        *e = na;
        *cap = nc;
    }
    memcpy(*e + *n, x->e, x->n * sizeof *x->e);
    *n += x->n;
    x->n = 0;
    return 0;
}

/* What one page's answer in c says (with err: named failures): its
 * entries into x.  @return 0 or a TDB_E_* code. */
static int os_list_page(struct objstore *s, struct os_call *c, const char *kprefix,
                        struct tdb_store_answer *x, struct tdb_error *err)
{
    int r = c->r;
    memset(x, 0, sizeof *x);
    if (!r)
        r = tdb_os_status(s, c, err);
    else
        tdb_err(err, r, "%s://%s/%s: list: %s", s->scheme, s->bucket, kprefix,
                c->cc != CURLE_OK ? curl_easy_strerror(c->cc)
                                  : tdb_strerror(r));
    if (!r && (r = s->proto->parse(x, &c->mem, kprefix)))
        tdb_err(err, r, "%s://%s/%s: list: the answer is not a listing",
                s->scheme, s->bucket, kprefix);
    if (!r && x->is_error)
        r = tdb_err(err, TDB_E_IO, "%s://%s/%s: list: %s", s->scheme, s->bucket, kprefix,
                    x->code ? x->code : "error");
    return r;
}

int tdb_os_list_keys(struct objstore *s, const struct os_list_ask *ask,
                     struct tdb_store_dent **out, size_t *nout,
                     struct tdb_error *err)
{
    const char *kprefix = ask->kprefix;
    bool delim = ask->delim;
    unsigned max = ask->max;
    struct tdb_store_dent *all = NULL;
    size_t n = 0, cap = 0;
    char *token = NULL;
    int r = 0;
    do {
        char *query = s->proto->list_query(kprefix, delim, max, token);
        if (!query) {
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
            break;
        }
        struct os_call c = {.method = "GET", .query = query, .up_fd = -1,
                            .sink = OS_SINK_MEM};
        c.r = tdb_os_perform(s, &c);
        free(query);
        struct tdb_store_answer x;
        r = os_list_page(s, &c, kprefix, &x, err);
        tdb_os_call_clear(&c);
        if (!r && os_dents_append(&all, &n, &cap, &x))
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
        free(token);
        token = NULL;
        bool more = !r && x.truncated && !max;
        if (more && !x.token)
            r = tdb_err(err, TDB_E_CORRUPT, "%s://%s/%s: list: truncated "
                        "without a continuation token", s->scheme,
                        s->bucket, kprefix);
        else if (more) {
            token = x.token;
            x.token = NULL;
        }
        tdb_store_answer_free(&x);
        if (!more)
            break;
    } while (!r);
    free(token);
    if (r) {
        tdb_store_dents_free(all, n);
        return r;
    }
    *out = all;
    *nout = n;
    return 0;
}

/* ------------------------------------------------------ listings ahead */

static void os_listing_free(struct os_listing *L)
{
    tdb_os_call_clear(&L->c);
    tdb_store_dents_free(L->e, L->n);
    free(L->norm);
    free(L->kprefix);
    free(L->query);
    free(L);
}

/* One child of a folder, found in a listing without delimiter. */
struct os_child {
    char *dir;          /* the folder (norm) */
    struct tdb_store_dent e;
};

static int os_child_cmp(const void *a, const void *b)
{
    const struct os_child *x = a, *y = b;
    int c = strcmp(x->dir, y->dir);
    return c ? c : os_dent_cmp(&x->e, &y->e);
}

/* The children every key of a listing without delimiter of folder `norm`
 * gives: its file in the folder that holds it, and each folder on the
 * way in the one above.  @return 0 or TDB_E_NOMEM (*out then NULL). */
static int os_tree_children(const char *norm, const struct tdb_store_dent *e,
                            size_t n, struct os_child **out, size_t *nout)
{
    struct os_child *c = NULL;
    size_t k = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = e[i].name;
        for (const char *p = name;; p++) {
            const char *slash = strchr(p, '/');
            size_t dl = (size_t)(p - name);
            size_t el = slash ? (size_t)(slash - p) : strlen(p);
            if (!el)        /* a folder's marker object ("NAME/") */
                break;
            if (k == cap) {
                size_t nc = cap ? 2 * cap : 64;
                struct os_child *nn = realloc(c, nc * sizeof *nn);
                if (!nn)
                    goto nomem;
                c = nn;
                cap = nc;
            }
            memset(&c[k], 0, sizeof c[k]);
            if (dl && asprintf(&c[k].dir, "%s%s%.*s", norm, norm[0] ? "/" : "",
                               (int)dl - 1, name) < 0)
                goto nomem;
            if (!dl && !(c[k].dir = strdup(norm)))
                goto nomem;
            c[k].e.is_dir = slash != NULL;
            c[k].e.size = slash ? 0 : e[i].size;
            if (!(c[k].e.name = strndup(p, el)) ||
                (!slash && e[i].etag && !(c[k].e.etag = strdup(e[i].etag)))) {
                k++;
                goto nomem;
            }
            k++;
            if (!slash)
                break;
            p = slash;
        }
    }
    *out = c;
    *nout = k;
    return 0;
nomem:
    for (size_t i = 0; i < k; i++) {
        free(c[i].dir);
        free(c[i].e.name);
        free(c[i].e.etag);
    }
    free(c);
    *out = NULL;
    return TDB_E_NOMEM;
}

/* Puts a finished listing's folders in the cache, fresh.  s->lock held. */
static void os_listing_keep(struct objstore *s, struct os_listing *L)
{
    if (!L->tree) {
        struct os_dir *d = os_dir_new(L->norm, L->e, L->n, true);
        L->e = NULL;
        L->n = 0;
        if (d)
            os_dir_put_locked(s, d);
        return;
    }
    struct os_child *c;
    size_t k;
    if (os_tree_children(L->norm, L->e, L->n, &c, &k))
        return;
    qsort(c, k, sizeof *c, os_child_cmp);
    for (size_t i = 0; i < k;) {
        size_t j = i, m = 0;
        while (j < k && !strcmp(c[j].dir, c[i].dir))
            j++;
        struct tdb_store_dent *e = calloc(j - i, sizeof *e);
        for (size_t q = i; q < j; q++) {
            bool dup = m && c[q].e.is_dir && e && e[m - 1].is_dir &&
                       !strcmp(e[m - 1].name, c[q].e.name);
            if (!e || dup) {
                free(c[q].e.name);
                free(c[q].e.etag);
                continue;
            }
            e[m++] = c[q].e;
        }
        struct os_dir *d = e ? os_dir_new(c[i].dir, e, m, true) : NULL;
        if (d)
            os_dir_put_locked(s, d);
        for (size_t q = i; q < j; q++)
            free(c[q].dir);
        i = j;
    }
    free(c);
}

static void os_listing_done(struct os_call *c);

/* Queues the next page of L (the first when L->c holds no token).
 * @return 0 or a TDB_E_* code. */
static int os_listing_next(struct os_listing *L, const char *token)
{
    free(L->query);
    L->query = L->s->proto->list_query(L->kprefix, !L->tree, 0, token);
    if (!L->query)
        return TDB_E_NOMEM;
    tdb_os_call_clear(&L->c);
    L->c = (struct os_call){.method = "GET", .query = L->query, .up_fd = -1,
                            .sink = OS_SINK_MEM, .done = os_listing_done,
                            .arg = L};
    return tdb_os_submit(L->s, &L->c);
}

/* A page came (on the I/O thread): the next is asked for, or the listing
 * is kept and its waiters woken. */
static void os_listing_done(struct os_call *c)
{
    struct os_listing *L = c->arg;
    struct objstore *s = L->s;
    struct tdb_store_answer x;
    int r = os_list_page(s, c, L->kprefix, &x, NULL);
    if (!r && os_dents_append(&L->e, &L->n, &L->cap, &x))
        r = TDB_E_NOMEM;
    if (!r && x.truncated && !x.token)
        r = TDB_E_CORRUPT;
    if (!r && x.truncated) {
        r = os_listing_next(L, x.token);
        tdb_store_answer_free(&x);
        if (!r)
            return;
    } else {
        tdb_store_answer_free(&x);
    }
    pthread_mutex_lock(&s->lock);
    for (struct os_listing **pp = &s->listings; *pp; pp = &(*pp)->next)
        if (*pp == L) {
            *pp = L->next;
            break;
        }
    if (!r)     /* a failed one is not kept: the list call asks again */
        os_listing_keep(s, L);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    os_listing_free(L);
}

void tdb_os_want_list(struct objstore *s, const char *norm, bool tree)
{
    pthread_mutex_lock(&s->lock);
    bool busy = os_listing_covers(s, norm);
    struct os_dir *d = busy ? NULL : os_dir_find(s, norm);
    busy = busy || (d && d->fresh);
    pthread_mutex_unlock(&s->lock);
    if (busy)
        return;
    struct os_listing *L = calloc(1, sizeof *L);
    char *key = tdb_os_key(s, norm);
    if (!L || !key || !(L->norm = strdup(norm)) ||
        asprintf(&L->kprefix, "%s%s", key, key[0] ? "/" : "") < 0) {
        if (L)
            L->kprefix = NULL;
        free(key);
        if (L)
            os_listing_free(L);
        return;
    }
    free(key);
    L->s = s;
    L->tree = tree;
    pthread_mutex_lock(&s->lock);
    L->next = s->listings;
    s->listings = L;
    pthread_mutex_unlock(&s->lock);
    if (os_listing_next(L, NULL)) {
        pthread_mutex_lock(&s->lock);
        for (struct os_listing **pp = &s->listings; *pp; pp = &(*pp)->next)
            if (*pp == L) {
                *pp = L->next;
                break;
            }
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->lock);
        os_listing_free(L);
    }
}

bool tdb_os_listing_busy(struct objstore *s)
{
    return s->listings != NULL;
}
