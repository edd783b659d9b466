/* fetch.c: what the S3 backend fetches ahead of the reads that need
 * it: whole small files (kept, least recently used going first past
 * their budget) and byte ranges (adjacent ones coalesced into one GET,
 * each let go once read).  The ranges' budget bounds the bytes fetched and
 * not yet read: ranges asked for beyond it wait, in order, and start as
 * reads make room (or at once when a read wants them).  A read finds its
 * bytes here in flight (and waits) or fetched. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <stdio.h>
#include <stdlib.h>

#define OS_STALE_MS 10000       /* a range fetched ahead and not read for
                                 * this long may make room for another */
#define OS_WAIT_MS 10000        /* a range waiting for room this long is
                                 * forgotten (its reader went elsewhere) */

/* A whole file or a byte range fetched ahead. */
struct os_got {
    struct objstore *s;
    char *norm, *key;
    bool whole;             /* a file (else a range) */
    bool dead;              /* the file changed: found by no read */
    bool kept;              /* on disk already */
    uint64_t off, len;      /* the bytes held (a whole file: 0, its size
                             * once fetched) */
    uint64_t size;          /* the file's size, once known (else
                             * UINT64_MAX) */
    int state;              /* OS_GOT_FLIGHT, 0 fetched, or a TDB_E_* code */
    uint8_t *data;
    uint64_t want, taken;   /* a range: bytes asked for, bytes read */
    uint64_t used;          /* ms of its last read (or of its start) */
    unsigned refs;          /* reads copying from it */
    char *ident;            /* its name in the disk cache, or NULL */
    struct os_call c;
    struct os_got *next;
    struct os_got *wnext;   /* in s->waitq */
};

#define OS_GOT_FLIGHT 1
#define OS_GOT_WAIT 2       /* a range waiting for room in the budget */

/* --------------------------------------------------------- coalescing */

static int os_range_cmp(const void *a, const void *b)
{
    const struct tdb_os_range *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off ? 1
           : x->len < y->len ? -1 : x->len > y->len;
}

size_t tdb_os_coalesce(struct tdb_os_range *r, size_t n, uint64_t gap,
                       uint64_t max, struct tdb_os_span *out)
{
    size_t k = 0;
    qsort(r, n, sizeof *r, os_range_cmp);
    for (size_t i = 0; i < n; i++) {
        uint64_t end = r[i].off + r[i].len;
        struct tdb_os_span *sp = k ? &out[k - 1] : NULL;
        uint64_t sp_end = sp ? sp->off + sp->len : 0;
        if (sp && r[i].off <= sp_end + gap &&
            (end <= sp_end || end - sp->off <= max)) {
            /* bytes of r[i] not already asked for by the span */
            uint64_t lo = r[i].off > sp_end ? r[i].off : sp_end;
            sp->want += end > lo ? end - lo : 0;
            if (end > sp_end)
                sp->len = end - sp->off;
            sp->count++;
            continue;
        }
        out[k++] = (struct tdb_os_span){r[i].off, r[i].len, r[i].len, i, 1};
    }
    return k;
}

/* ------------------------------------------------------------- store */

static size_t os_got_hash(const char *s)
{
    return (size_t)(tdb_os_hash(s) % OS_GOT_BUCKETS);
}

static void os_got_free(struct os_got *g)
{
    tdb_os_call_clear(&g->c);
    free(g->data);
    free(g->norm);
    free(g->key);
    free(g->ident);
    free(g);
}

/* Takes g off the waiting ranges; @return the last one left.  s->lock
 * held. */
static struct os_got *os_wait_unlink(struct objstore *s, struct os_got *g)
{
    struct os_got *last = NULL;
    for (struct os_got **pp = &s->waitq; *pp;) {
        if (*pp == g) {
            *pp = g->wnext;
            continue;
        }
        last = *pp;
        pp = &(*pp)->wnext;
    }
    return last;
}

/* Unlinks g and frees it, its bytes leaving the budget.  s->lock held. */
static void os_got_drop(struct objstore *s, struct os_got *g)
{
    for (struct os_got **pp = &s->got[os_got_hash(g->norm)]; *pp;
         pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    if (g->state == OS_GOT_WAIT)
        s->waitq_tail = os_wait_unlink(s, g);
    else if (g->whole)
        s->meta_bytes -= g->len;
    else
        s->ahead_bytes -= g->len;
    os_got_free(g);
}

/* The live entry holding [off, off + len) of norm (whole files: any
 * range, checked by the caller), or NULL.  s->lock held. */
static struct os_got *os_got_find(struct objstore *s, const char *norm,
                                  uint64_t off, uint64_t len)
{
    for (struct os_got *g = s->got[os_got_hash(norm)]; g; g = g->next) {
        if (g->dead || strcmp(g->norm, norm))
            continue;
        if (g->whole)
            return g;
        if (off >= g->off && off - g->off <= g->len &&
            len <= g->len - (off - g->off))
            return g;
    }
    return NULL;
}

/* Frees fetched entries of one kind (whole files or ranges) that no read
 * holds, least recently read first, until `need` more bytes fit in its
 * budget; ranges only when unread for OS_STALE_MS.  @return whether they
 * fit.  s->lock held. */
static bool os_got_room(struct objstore *s, bool whole, uint64_t need)
{
    uint64_t *used = whole ? &s->meta_bytes : &s->ahead_bytes;
    uint64_t max = whole ? s->meta_max : s->ahead_max;
    uint64_t now = tdb_os_clock_ms();
    while (*used + need > max) {
        struct os_got *old = NULL;
        for (size_t b = 0; b < OS_GOT_BUCKETS; b++)
            for (struct os_got *g = s->got[b]; g; g = g->next)
                if (g->whole == whole && g->state <= 0 && !g->refs &&
                    (whole || g->used + OS_STALE_MS <= now) &&
                    (!old || g->used < old->used))
                    old = g;
        if (!old)
            return false;
        os_got_drop(s, old);
    }
    return true;
}

/* The fetch ended (on the I/O thread). */
static void os_got_done(struct os_call *c)
{
    struct os_got *g = c->arg;
    struct objstore *s = g->s;
    int r = c->r;
    if (!r)
        r = c->status == 416 && g->whole ? 0 : tdb_os_status(s, c, NULL);
    pthread_mutex_lock(&s->lock);
    if (!r && g->whole) {
        /* a whole file, or its first OS_FILE_MAX bytes (206) */
        uint64_t got = c->status == 416 ? 0 : c->mem.len;
        g->size = c->status == 206 && c->total >= 0 ? (uint64_t)c->total
                  : got;
        g->data = c->mem.data;
        c->mem.data = NULL;
        c->mem.len = c->mem.cap = 0;
        g->len = got;
        s->meta_bytes += got;
        if (g->size > got) {        /* not whole: a range held */
            g->whole = false;
            g->want = g->len;
            s->meta_bytes -= got;
            s->ahead_bytes += got;
        }
    } else if (!r && c->dst_got != g->len) {
        r = TDB_E_IO;
    }
    if (!r && c->etag && !g->ident && s->disk)
        g->ident = tdb_os_ident(s, g->key, c->etag, g->size);
    g->state = r;
    g->used = tdb_os_clock_ms();
    s->got_flight--;
    if (g->dead && !g->refs)
        os_got_drop(s, g);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
}

/* A new entry of norm, linked in flight, or (wait) a range waiting for
 * room.  s->lock held.  NULL: out of memory. */
static struct os_got *os_got_new(struct objstore *s, const char *norm, bool whole,
                                 uint64_t off, uint64_t len, bool wait)
{
    struct os_got *g = calloc(1, sizeof *g);
    if (!g || !(g->norm = strdup(norm)) || !(g->key = tdb_os_key(s, norm)) ||
        (!whole && !wait && !(g->data = malloc(len ? (size_t)len : 1)))) {
        if (g)
            os_got_free(g);
        return NULL;
    }
    g->s = s;
    g->whole = whole;
    g->off = off;
    g->len = whole ? 0 : len;
    g->want = g->len;
    g->size = UINT64_MAX;
    g->state = wait ? OS_GOT_WAIT : OS_GOT_FLIGHT;
    g->used = tdb_os_clock_ms();
    size_t b = os_got_hash(norm);
    g->next = s->got[b];
    s->got[b] = g;
    if (wait) {
        if (s->waitq_tail)
            s->waitq_tail->wnext = g;
        else
            s->waitq = g;
        s->waitq_tail = g;
        return g;
    }
    if (!whole)
        s->ahead_bytes += len;
    s->got_flight++;
    return g;
}

/* A waiting range goes in flight (its GET to be started by the caller
 * once s->lock is let go).  @return false when out of memory (g then
 * still waits).  s->lock held. */
static bool os_got_promote(struct objstore *s, struct os_got *g)
{
    if (!(g->data = malloc(g->len ? (size_t)g->len : 1)))
        return false;
    s->waitq_tail = os_wait_unlink(s, g);
    g->wnext = NULL;
    g->state = OS_GOT_FLIGHT;
    g->used = tdb_os_clock_ms();
    s->ahead_bytes += g->len;
    s->got_flight++;
    return true;
}

/* The waiting ranges that fit now, in order, promoted into start[cap]
 * (old ones forgotten).  @return their number.  s->lock held. */
static size_t os_wait_pump(struct objstore *s, struct os_got **start, size_t cap)
{
    size_t n = 0;
    uint64_t now = tdb_os_clock_ms();
    while (s->waitq && n < cap) {
        struct os_got *g = s->waitq;
        if (g->used + OS_WAIT_MS < now) {
            os_got_drop(s, g);
            continue;
        }
        if (s->ahead_bytes + g->len > s->ahead_max || !os_got_promote(s, g))
            break;
        start[n++] = g;
    }
    return n;
}

/* Queues g's GET.  On failure g ends at once (fails).  s->lock not held. */
static void os_got_start(struct objstore *s, struct os_got *g)
{
    struct os_call *c = &g->c;
    *c = (struct os_call){.method = "GET", .key = g->key, .up_fd = -1,
                          .done = os_got_done, .arg = g};
    if (g->whole) {
        c->sink = OS_SINK_MEM;
        snprintf(c->range, sizeof c->range, "bytes=0-%u", OS_FILE_MAX - 1);
    } else {
        c->sink = OS_SINK_BUF;
        c->dst = g->data;
        c->dst_len = (size_t)g->len;
        c->skip = g->off;
        snprintf(c->range, sizeof c->range, "bytes=%llu-%llu",
                 (unsigned long long)g->off,
                 (unsigned long long)(g->off + g->len - 1));
    }
    if (tdb_os_submit(s, c)) {
        c->r = TDB_E_NOMEM;
        os_got_done(c);
    }
}

/* ------------------------------------------------------------ wanting */

/* A whole small file ahead (unless known larger than OS_FILE_MAX, known
 * absent, held, or on disk). */
static void os_want_file(struct objstore *s, const char *norm)
{
    /* with a disk cache, the listing (an ETag) is waited for: it names
     * the piece on disk */
    struct tdb_store_dent e;
    int known = s->disk ? tdb_os_dir_lookup(s, norm, &e)
                        : tdb_os_dir_peek(s, norm, &e);
    bool skip = known == TDB_E_NOENT ||
                (known == 1 && (e.is_dir || !e.size || e.size > OS_FILE_MAX));
    if (!skip && known == 1 && s->disk && e.etag) {
        char *key = tdb_os_key(s, norm);
        char *id = key ? tdb_os_ident(s, key, e.etag, e.size) : NULL;
        skip = id && tdb_os_disk_has(s->disk, id, 0, e.size);
        free(id);
        free(key);
    }
    free(e.etag);
    if (skip)
        return;
    pthread_mutex_lock(&s->lock);
    struct os_got *g = os_got_find(s, norm, 0, 0);
    if (!g && os_got_room(s, true, known == 1 ? e.size : 0))
        g = os_got_new(s, norm, true, 0, 0, false);
    else
        g = NULL;
    pthread_mutex_unlock(&s->lock);
    if (g)
        os_got_start(s, g);
}

/* Is range r of norm on disk already?  (ident: the file's, or NULL.) */
static bool os_range_on_disk(struct objstore *s, const char *ident,
                             const struct tdb_os_range *r)
{
    return ident && tdb_os_disk_has(s->disk, ident, r->off, r->len);
}

/* Ranges r[n] of one file ahead, coalesced, within the budget. */
static void os_want_ranges(struct objstore *s, const char *norm,
                           struct tdb_os_range *r, size_t n)
{
    char *ident = NULL;
    if (s->disk) {
        struct tdb_store_dent e;
        char *key = tdb_os_key(s, norm);
        if (key && tdb_os_dir_lookup(s, norm, &e) == 1 && e.etag)
            ident = tdb_os_ident(s, key, e.etag, e.size);
        if (key)
            free(e.etag);
        free(key);
    }
    size_t k = 0;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++)      /* what is held or on disk goes */
        if (r[i].len && !os_got_find(s, norm, r[i].off, r[i].len) &&
            !os_range_on_disk(s, ident, &r[i]))
            r[k++] = r[i];
    struct tdb_os_span *sp = k ? malloc(k * sizeof *sp) : NULL;
    size_t ns = sp ? tdb_os_coalesce(r, k, OS_COALESCE_GAP, OS_COALESCE_MAX,
                                     sp) : 0;
    struct os_got **start = ns ? calloc(ns, sizeof *start) : NULL;
    size_t nstart = 0;
    /* beyond the budget (or behind others waiting) a span waits */
    bool wait = s->waitq != NULL;
    for (size_t i = 0; start && i < ns; i++) {
        wait = wait || !os_got_room(s, false, sp[i].len);
        struct os_got *g = os_got_new(s, norm, false, sp[i].off, sp[i].len,
                                      wait);
        if (!g)
            break;
        g->want = sp[i].want;
        g->ident = ident ? strdup(ident) : NULL;
        if (!wait)
            start[nstart++] = g;
    }
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < nstart; i++)
        os_got_start(s, start[i]);
    free(start);
    free(sp);
    free(ident);
}

static int os_want_cmp(const void *a, const void *b)
{
    const struct tdb_io_want *x = *(const struct tdb_io_want *const *)a;
    const struct tdb_io_want *y = *(const struct tdb_io_want *const *)b;
    int c = strcmp(x->path, y->path);
    return c ? c : x->off < y->off ? -1 : x->off > y->off;
}

/* The ranges of w[n], file by file (sorted by path and offset). */
static void os_want_all_ranges(struct objstore *s, const struct tdb_io_want *w,
                               size_t n)
{
    const struct tdb_io_want **v = malloc(n * sizeof *v);
    struct tdb_os_range *r = malloc(n * sizeof *r);
    size_t k = 0;
    for (size_t i = 0; v && r && i < n; i++)
        if (w[i].kind == TDB_WANT_RANGE)
            v[k++] = &w[i];
    if (k)
        qsort(v, k, sizeof *v, os_want_cmp);
    for (size_t i = 0; i < k;) {
        size_t j = i, m = 0;
        while (j < k && !strcmp(v[j]->path, v[i]->path)) {
            r[m++] = (struct tdb_os_range){v[j]->off, v[j]->len};
            j++;
        }
        char *norm = tdb_os_norm(v[i]->path);
        if (norm && !tdb_os_pending(s, norm))
            os_want_ranges(s, norm, r, m);
        free(norm);
        i = j;
    }
    free(v);
    free(r);
}

void tdb_os_want(struct objstore *s, const struct tdb_io_want *w, size_t n)
{
    bool ranges = false;
    for (size_t i = 0; i < n; i++) {
        if (w[i].kind == TDB_WANT_RANGE) {
            ranges = true;
            continue;
        }
        char *norm = tdb_os_norm(w[i].path);
        if (!norm)
            continue;
        if (w[i].kind == TDB_WANT_FILE)
            os_want_file(s, norm);
        else
            tdb_os_want_list(s, norm, w[i].kind == TDB_WANT_TREE);
        free(norm);
    }
    if (ranges)
        os_want_all_ranges(s, w, n);
}

/* ------------------------------------------------------------ reading */

/* Copies [off, off + len) of g (fetched) into buf.  @return 0 or
 * TDB_E_IO (outside the file). */
static int os_got_copy(const struct os_got *g, uint64_t off, void *buf,
                       size_t len)
{
    if (off < g->off || off - g->off > g->len || len > g->len - (off - g->off))
        return TDB_E_IO;
    if (len)
        memcpy(buf, g->data + (off - g->off), len);
    return 0;
}

/* Holds g for a read, and waits until it is fetched: one waiting for room
 * starts now.  s->lock held (dropped meanwhile).  @return false when it
 * cannot start (g not held then). */
static bool os_got_hold(struct objstore *s, struct os_got *g)
{
    g->refs++;
    if (g->state == OS_GOT_WAIT) {      /* wanted now: it waits no more */
        if (!os_got_promote(s, g)) {
            g->refs--;
            return false;
        }
        pthread_mutex_unlock(&s->lock);
        os_got_start(s, g);
        pthread_mutex_lock(&s->lock);
    }
    while (g->state == OS_GOT_FLIGHT)
        pthread_cond_wait(&s->cv, &s->lock);
    return true;
}

/* What a read served from a fetch gives the disk cache, once s->lock is
 * dropped: a whole file once (a copy of it), a range as it was read. */
struct os_keep {
    char *ident;            /* NULL: nothing */
    uint8_t *copy;          /* a whole file's bytes */
    const void *data;
    uint64_t off, len;
};

/* What of g goes to the disk cache after [off, off + len) of it was
 * read into buf.  s->lock held. */
static void os_keep_take(struct objstore *s, struct os_got *g, uint64_t off,
                         size_t len, const void *buf, struct os_keep *k)
{
    bool whole = g->whole;
    k->off = whole ? 0 : off;
    k->len = whole ? g->len : len;
    if (!g->ident || !s->disk || (whole && g->kept))
        return;
    k->ident = strdup(g->ident);
    if (!whole) {
        k->data = buf;
    } else if (k->ident && (k->copy = malloc(k->len ? (size_t)k->len : 1))) {
        memcpy(k->copy, g->data, (size_t)k->len);
        g->kept = true;
        k->data = k->copy;
    } else {
        free(k->ident);
        k->ident = NULL;
    }
}

int tdb_os_fetched_read(struct objstore *s, const char *norm, uint64_t off,
                        void *buf, size_t len, int *rc)
{
    pthread_mutex_lock(&s->lock);
    struct os_got *g = os_got_find(s, norm, off, len);
    if (!g || !os_got_hold(s, g)) {
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    int served = 1;
    *rc = 0;
    if (g->state < 0)
        *rc = g->state;
    else if (!g->whole && (off < g->off || off - g->off > g->len ||
                           len > g->len - (off - g->off)))
        served = 0;     /* a file fetched whole turned out too large */
    else
        *rc = os_got_copy(g, off, buf, len);
    g->used = tdb_os_clock_ms();
    struct os_keep k = {0};
    if (served && !*rc)
        os_keep_take(s, g, off, len, buf, &k);
    if (!g->whole && served && !*rc)
        g->taken += len;
    g->refs--;
    struct os_got *start[16];
    size_t nstart = 0;
    if (!g->refs && (g->dead || g->state < 0 ||
                     (!g->whole && g->taken >= g->want))) {
        os_got_drop(s, g);
        nstart = os_wait_pump(s, start, 16);    /* room was made */
    }
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < nstart; i++)
        os_got_start(s, start[i]);
    if (k.ident)
        tdb_os_disk_put(s->disk, k.ident, k.off, k.len, k.data);
    free(k.copy);
    free(k.ident);
    return served;
}

int tdb_os_fetched_size(struct objstore *s, const char *norm, uint64_t *size)
{
    int r = 0;
    pthread_mutex_lock(&s->lock);
    struct os_got *g = os_got_find(s, norm, 0, 0);
    if (g && g->whole) {
        g->refs++;
        while (g->state == OS_GOT_FLIGHT)
            pthread_cond_wait(&s->cv, &s->lock);
        g->refs--;
        if (g->dead) {          /* it changed meanwhile: not its size */
            if (!g->refs)
                os_got_drop(s, g);
        } else if (g->state == 0 && g->size != UINT64_MAX) {
            *size = g->size;
            r = 1;
        } else if (g->state == TDB_E_NOENT) {
            r = TDB_E_NOENT;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

void tdb_os_fetched_forget(struct objstore *s, const char *norm)
{
    pthread_mutex_lock(&s->lock);
    for (struct os_got *g = s->got[os_got_hash(norm)], *next; g; g = next) {
        next = g->next;
        if (strcmp(g->norm, norm))
            continue;
        g->dead = true;
        if (!g->refs && g->state != OS_GOT_FLIGHT)
            os_got_drop(s, g);
    }
    pthread_mutex_unlock(&s->lock);
}

void tdb_os_settle(struct objstore *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->got_flight || tdb_os_listing_busy(s))
        pthread_cond_wait(&s->cv, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

void tdb_os_fetched_free(struct objstore *s)
{
    for (size_t b = 0; b < OS_GOT_BUCKETS; b++)
        while (s->got[b])
            os_got_drop(s, s->got[b]);
}
