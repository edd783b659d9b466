/* cache.c: the decoded-tile cache (the mount's bounded LRU): hash table,
 * LRU list of unpinned entries, pins, single-flight loads. */
#include "read/cache.h"
#include "filters/filter.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CACHE_LOADING, CACHE_READY, CACHE_FAILED };

struct tdb_cache_entry {
    struct tdb_cache_key key;
    struct tdb_tile tile;
    uint64_t bytes;
    int state;
    int refs;
    int load_err;
    struct tdb_error *err_copy;
    struct tdb_cache_entry *hnext;            /* hash chain */
    struct tdb_cache_entry *prev, *next;      /* LRU list (unpinned only) */
    bool in_lru;
};

#define CACHE_SCRATCH_KEEP (8u << 20)

struct tdb_cache {
    pthread_mutex_t lock;
    pthread_cond_t loaded;
    uint64_t budget, used;
    uint64_t peak;                  /* the most `used` since the last reset */
    size_t nbuckets, nentries;
    struct tdb_cache_entry **buckets;
    struct tdb_cache_entry *lru_head, *lru_tail; /* head: most recent */
    uint64_t hits, misses, decodes, evictions;
    uint64_t decoded_bytes, decode_ns;
    /* fragment identities (tdb_cache_frag_id): open addressing, the id of
     * names[i] is ids[i]; a slot is free when names[i] is NULL */
    size_t nids, idcap;
    char **id_names;
    uint64_t *ids;
    struct tdb_scratch *scratch;    /* free list */
};

void tdb_tile_free(struct tdb_tile *t)
{
    if (!t)
        return;
    free(t->data);
    free(t->offsets);
    memset(t, 0, sizeof *t);
}

static size_t cache_hash(const struct tdb_cache *c, const struct tdb_cache_key *k)
{
    uint64_t h = k->frag * 0x9E3779B97F4A7C15ull;
    h ^= k->part + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= k->tile * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
    h ^= h >> 31;
    return (size_t)(h % c->nbuckets);
}

static bool cache_key_eq(const struct tdb_cache_key *a, const struct tdb_cache_key *b)
{
    return a->frag == b->frag && a->part == b->part && a->tile == b->tile;
}

int tdb_cache_create(struct tdb_cache **out, uint64_t budget)
{
    struct tdb_cache *c = calloc(1, sizeof *c);
    if (!c)
        return TDB_E_NOMEM;
    c->nbuckets = 4096;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return TDB_E_NOMEM;
    }
    c->budget = budget;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->loaded, NULL);
    *out = c;
    return 0;
}

static void cache_lru_remove(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    if (!e->in_lru)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        c->lru_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->lru_tail = e->prev;
    e->prev = e->next = NULL;
    e->in_lru = false;
}

static void cache_lru_push(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    e->prev = NULL;
    e->next = c->lru_head;
    if (c->lru_head)
        c->lru_head->prev = e;
    else
        c->lru_tail = e;
    c->lru_head = e;
    e->in_lru = true;
}

static void cache_unlink(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    struct tdb_cache_entry **pp = &c->buckets[cache_hash(c, &e->key)];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    cache_lru_remove(c, e);
    c->nentries--;
    c->used -= e->bytes;
}

static void cache_entry_free(struct tdb_cache_entry *e)
{
    tdb_tile_free(&e->tile);
    free(e->err_copy);
    free(e);
}

/* Frees unpinned entries, least recently used first, until within budget. */
static void cache_evict(struct tdb_cache *c)
{
    while (c->used > c->budget && c->lru_tail) {
        struct tdb_cache_entry *e = c->lru_tail;
        cache_unlink(c, e);
        cache_entry_free(e);
        c->evictions++;
    }
}

int tdb_cache_get(struct tdb_cache *c, const struct tdb_cache_key *key,
                  tdb_cache_load_fn load, void *arg,
                  struct tdb_cache_entry **entry, const struct tdb_tile **tile,
                  struct tdb_error *err)
{
    return tdb_cache_get_flags(c, key, load, arg, 0, entry, tile, err);
}

int tdb_cache_get_flags(struct tdb_cache *c, const struct tdb_cache_key *key,
                        tdb_cache_load_fn load, void *arg, unsigned flags,
                        struct tdb_cache_entry **entry,
                        const struct tdb_tile **tile, struct tdb_error *err)
{
    pthread_mutex_lock(&c->lock);
    size_t b = cache_hash(c, key);
    struct tdb_cache_entry *e = c->buckets[b];
    while (e && !cache_key_eq(&e->key, key))
        e = e->hnext;
    if (e && e->state == CACHE_LOADING && (flags & TDB_CACHE_NOWAIT)) {
        pthread_mutex_unlock(&c->lock);
        return 1;
    }
    if (!e && (flags & TDB_CACHE_PEEK)) {
        pthread_mutex_unlock(&c->lock);
        return 1;
    }
    if (e) {
        e->refs++;
        cache_lru_remove(c, e);
        while (e->state == CACHE_LOADING)
            pthread_cond_wait(&c->loaded, &c->lock);
        if (e->state == CACHE_FAILED) {
            int r = e->load_err;
            if (err && e->err_copy)
                *err = *e->err_copy;
            if (--e->refs == 0)
                cache_entry_free(e);
            pthread_mutex_unlock(&c->lock);
            return r;
        }
        c->hits++;
        pthread_mutex_unlock(&c->lock);
        *entry = e;
        *tile = &e->tile;
        return 0;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&c->lock);
        return tdb_err(err, TDB_E_NOMEM, "tile cache: out of memory");
    }
    e->key = *key;
    e->state = CACHE_LOADING;
    e->refs = 1;
    e->hnext = c->buckets[b];
    c->buckets[b] = e;
    c->nentries++;
    c->misses++;
    pthread_mutex_unlock(&c->lock);

    struct tdb_error lerr = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = load(arg, key, &e->tile, &lerr);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    pthread_mutex_lock(&c->lock);
    if (r) {
        e->state = CACHE_FAILED;
        e->load_err = r;
        e->err_copy = malloc(sizeof *e->err_copy);
        if (e->err_copy)
            *e->err_copy = lerr;
        /* take it out of the table: the next get loads again */
        struct tdb_cache_entry **pp = &c->buckets[b];
        while (*pp && *pp != e)
            pp = &(*pp)->hnext;
        if (*pp)
            *pp = e->hnext;
        c->nentries--;
        pthread_cond_broadcast(&c->loaded);
        if (--e->refs == 0)
            cache_entry_free(e);
        pthread_mutex_unlock(&c->lock);
        if (err)
            *err = lerr;
        return r;
    }
    e->bytes = e->tile.size + e->tile.ncells * 8 * (e->tile.offsets != NULL) +
               sizeof *e;
    e->state = CACHE_READY;
    c->used += e->bytes;
    if (c->used > c->peak)
        c->peak = c->used;
    c->decodes++;
    c->decoded_bytes += e->tile.size;
    c->decode_ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
                    (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
    pthread_cond_broadcast(&c->loaded);
    cache_evict(c);
    pthread_mutex_unlock(&c->lock);
    *entry = e;
    *tile = &e->tile;
    return 0;
}

void tdb_cache_hold(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    pthread_mutex_lock(&c->lock);
    e->refs++;
    pthread_mutex_unlock(&c->lock);
}

void tdb_cache_release(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    tdb_cache_release_flags(c, e, 0);
}

void tdb_cache_release_flags(struct tdb_cache *c, struct tdb_cache_entry *e,
                             unsigned flags)
{
    if (!e)
        return;
    pthread_mutex_lock(&c->lock);
    if (--e->refs == 0) {
        if ((flags & TDB_CACHE_DROP) && c->used > c->budget / 2) {
            /* in the table and READY: it is no one else's */
            cache_lru_push(c, e);
            cache_unlink(c, e);
            cache_entry_free(e);
            c->evictions++;
        } else {
            cache_lru_push(c, e);
            cache_evict(c);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

void tdb_cache_stats(struct tdb_cache *c, struct tdb_cache_stats *st)
{
    pthread_mutex_lock(&c->lock);
    st->budget = c->budget;
    st->used = c->used;
    st->entries = c->nentries;
    st->hits = c->hits;
    st->misses = c->misses;
    st->decodes = c->decodes;
    st->evictions = c->evictions;
    st->decoded_bytes = c->decoded_bytes;
    st->decode_ns = c->decode_ns;
    pthread_mutex_unlock(&c->lock);
}

uint64_t tdb_cache_peak(struct tdb_cache *c, bool reset)
{
    pthread_mutex_lock(&c->lock);
    uint64_t peak = c->peak;
    if (reset)
        c->peak = c->used;
    pthread_mutex_unlock(&c->lock);
    return peak;
}

static uint64_t cache_str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* Grows the identity table to twice its size (c->lock held). */
static int cache_ids_grow(struct tdb_cache *c)
{
    size_t cap = c->idcap ? c->idcap * 2 : 64;
    char **names = calloc(cap, sizeof *names);
    uint64_t *ids = calloc(cap, sizeof *ids);
    if (!names || !ids) {
        free(names);
        free(ids);
        return TDB_E_NOMEM;
    }
    for (size_t i = 0; i < c->idcap; i++) {
        if (!c->id_names[i])
            continue;
        size_t j = (size_t)(cache_str_hash(c->id_names[i]) % cap);
        while (names[j])
            j = (j + 1) % cap;
        names[j] = c->id_names[i];
        ids[j] = c->ids[i];
    }
    free(c->id_names);
    free(c->ids);
    c->id_names = names;
    c->ids = ids;
    c->idcap = cap;
    return 0;
}

int tdb_cache_frag_id(struct tdb_cache *c, const char *identity, uint64_t *id)
{
    int r = 0;
    pthread_mutex_lock(&c->lock);
    if ((c->nids + 1) * 2 > c->idcap && (r = cache_ids_grow(c)))
        goto out;
    size_t j = (size_t)(cache_str_hash(identity) % c->idcap);
    while (c->id_names[j] && strcmp(c->id_names[j], identity))
        j = (j + 1) % c->idcap;
    if (!c->id_names[j]) {
        if (!(c->id_names[j] = strdup(identity))) {
            r = TDB_E_NOMEM;
            goto out;
        }
        c->ids[j] = c->nids++;
    }
    *id = c->ids[j];
out:
    pthread_mutex_unlock(&c->lock);
    return r;
}

struct tdb_scratch *tdb_cache_scratch_get(struct tdb_cache *c)
{
    pthread_mutex_lock(&c->lock);
    struct tdb_scratch *s = c->scratch;
    if (s)
        c->scratch = s->next;
    pthread_mutex_unlock(&c->lock);
    return s ? s : calloc(1, sizeof *s);
}

void tdb_cache_scratch_put(struct tdb_cache *c, struct tdb_scratch *s)
{
    if (!s)
        return;
    /* keep working memory of ordinary tiles, not of a huge one */
    if (s->raw.cap > CACHE_SCRATCH_KEEP)
        tdb_buf_free(&s->raw);
    for (int i = 0; i < 4; i++)
        if (s->bufs[i].cap > CACHE_SCRATCH_KEEP)
            tdb_buf_free(&s->bufs[i]);
    pthread_mutex_lock(&c->lock);
    s->next = c->scratch;
    c->scratch = s;
    pthread_mutex_unlock(&c->lock);
}

void tdb_cache_free(struct tdb_cache *c)
{
    if (!c)
        return;
    while (c->scratch) {
        struct tdb_scratch *s = c->scratch;
        c->scratch = s->next;
        tdb_scratch_free(s);
    }
    for (size_t i = 0; i < c->idcap; i++)
        free(c->id_names[i]);
    free(c->id_names);
    free(c->ids);
    for (size_t i = 0; i < c->nbuckets; i++) {
        struct tdb_cache_entry *e = c->buckets[i];
        while (e) {
            struct tdb_cache_entry *n = e->hnext;
            cache_entry_free(e);
            e = n;
        }
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->loaded);
    free(c);
}
