/* cache.c: the decoded-tile cache (the mount's bounded LRU): hash table,
 * LRU list of tiles no one holds, list of tiles only kept, pins,
 * single-flight loads, admission of loads against the budget (a queue
 * of the loads that wait for room), and the pool of freed tiles' blocks
 * that loads decode into (large ones on huge pages: blocks.c). */
#include "read/cache.h"
#include "read/blocks.h"
#include "filters/filter.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CACHE_LOADING, CACHE_READY, CACHE_FAILED };

/* A list of entries, most recent at the head. */
struct cache_list {
    struct tdb_cache_entry *head, *tail;
    uint64_t bytes;
};

struct tdb_cache_entry {
    struct tdb_cache_key key;
    struct tdb_tile tile;
    uint64_t bytes;             /* counted in `used` (a load: its need) */
    int state;
    int refs;                   /* pins */
    int keeps;                  /* tdb_cache_keep */
    bool gone;                  /* freed while kept: out of the table, no
                                 * tile, counts nothing */
    int load_err;
    struct tdb_error *err_copy;
    struct tdb_cache_entry *hnext;            /* hash chain */
    struct tdb_cache_entry *prev, *next;      /* in `list` */
    struct cache_list *list;    /* lru (no pin, no keep), kept (no pin) */
};

/* A load waiting for room (TDB_CACHE_WAIT), on its thread's stack. */
struct cache_waiter {
    struct cache_waiter *next;
};

#define CACHE_SCRATCH_KEEP (8u << 20)

/* A block of the pool: a freed tile's data, these its first bytes. */
struct cache_block {
    struct cache_block *next;
    uint64_t cap;               /* the block's bytes */
};

/* The most pooled blocks a load looks at for the best fit. */
#define CACHE_POOL_SCAN 32

struct tdb_cache {
    pthread_mutex_t lock;
    pthread_cond_t loaded;
    pthread_cond_t room;            /* held bytes went down, or the first
                                     * waiter changed */
    uint64_t budget, used;
    uint64_t peak;                  /* the most `used` since the last reset */
    size_t nbuckets, nentries;
    struct tdb_cache_entry **buckets;
    struct cache_list lru, kept;
    struct cache_waiter *wait_head, *wait_tail;
    uint64_t hits, misses, decodes, evictions;
    uint64_t decoded_bytes, decode_ns;
    /* fragment identities (tdb_cache_frag_id): open addressing, the id of
     * names[i] is ids[i]; a slot is free when names[i] is NULL */
    size_t nids, idcap;
    char **id_names;
    uint64_t *ids;
    struct tdb_scratch *scratch;    /* free list */
    uint64_t scratch_bytes;         /* the buffers it keeps */
    struct cache_block *pool;       /* most recently freed first */
    uint64_t pooled;                /* its bytes (counted in `used`) */
    uint64_t reused;                /* loads handed a pooled block */
    struct tdb_blocks blocks;       /* blocks of 256 KiB and more */
    bool huge;                      /* tdb_cache_huge_pages */
};

/* What the admission of a load hands its entry: a pooled block (NULL:
 * none) and the bytes the load counts while it runs. */
struct cache_grant {
    struct cache_block *blk;
    uint64_t need;
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
    pthread_cond_init(&c->room, NULL);
    *out = c;
    return 0;
}

static void cache_list_remove(struct tdb_cache_entry *e)
{
    struct cache_list *l = e->list;
    if (!l)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    l->bytes -= e->bytes;
    e->prev = e->next = NULL;
    e->list = NULL;
}

static void cache_list_push(struct cache_list *l, struct tdb_cache_entry *e)
{
    e->prev = NULL;
    e->next = l->head;
    if (l->head)
        l->head->prev = e;
    else
        l->tail = e;
    l->head = e;
    l->bytes += e->bytes;
    e->list = l;
}

/* Wakes the loads waiting for room (c->lock held; costs nothing when none
 * waits). */
static void cache_wake(struct tdb_cache *c)
{
    if (c->wait_head)
        pthread_cond_broadcast(&c->room);
}

/* Takes e out of the hash table and its list, and its bytes out of
 * `used`. */
static void cache_unlink(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    struct tdb_cache_entry **pp = &c->buckets[cache_hash(c, &e->key)];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    cache_list_remove(e);
    c->nentries--;
    c->used -= e->bytes;
    e->bytes = 0;
    cache_wake(c);
}

/* Block p, of cap bytes, to the pool (c->lock held). */
static void cache_pool_put(struct tdb_cache *c, void *p, uint64_t cap)
{
    struct cache_block *b = p;
    b->next = c->pool;
    b->cap = cap;
    c->pool = b;
    c->pooled += cap;
    c->used += cap;
}

/* Frees t (c->lock held): its data block, when its size is known and
 * large enough, to the pool (counted in `used`: never more than the tile
 * counted there, whose bytes its entry has given back). */
static void cache_tile_free(struct tdb_cache *c, struct tdb_tile *t)
{
    if (t->data && t->data_cap >= TDB_CACHE_POOL_MIN) {
        cache_pool_put(c, t->data, t->data_cap);
        t->data = NULL;
    }
    tdb_tile_free(t);
}

/* Frees the most recently pooled block (c->lock held; the pool not
 * empty). */
static void cache_pool_drop(struct tdb_cache *c)
{
    struct cache_block *b = c->pool;
    c->pool = b->next;
    c->pooled -= b->cap;
    c->used -= b->cap;
    if (!tdb_blocks_put(&c->blocks, b))
        free(b);
}

/* Takes out of the pool the smallest block of size to `most` bytes
 * (c->lock held).  @return it, or NULL when there is none. */
static struct cache_block *cache_pool_take(struct tdb_cache *c,
                                           uint64_t size, uint64_t most)
{
    struct cache_block **best = NULL, **pp = &c->pool;
    for (int n = 0; *pp && n < CACHE_POOL_SCAN; pp = &(*pp)->next, n++)
        if ((*pp)->cap >= size && (*pp)->cap <= most &&
            (!best || (*pp)->cap < (*best)->cap))
            best = pp;
    if (!best)
        return NULL;
    struct cache_block *b = *best;
    *best = b->next;
    c->pooled -= b->cap;
    c->used -= b->cap;
    c->reused++;
    return b;
}

static void cache_entry_free(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    cache_tile_free(c, &e->tile);
    free(e->err_copy);
    free(e);
}

/* Evicts e, the tail of l: freed, or (kept) its tile freed and the entry
 * left to the keepers' tdb_cache_unkeep. */
static void cache_evict_one(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    cache_unlink(c, e);
    c->evictions++;
    if (e->keeps) {
        cache_tile_free(c, &e->tile);
        e->gone = true;
    } else {
        cache_entry_free(c, e);
    }
}

/* True when `used` plus need is beyond the budget. */
static bool cache_over(const struct tdb_cache *c, uint64_t need)
{
    return need > c->budget || c->used > c->budget - need;
}

/* Frees pooled blocks, then tiles no one holds, least recently used
 * first, until `used` plus `need` is within budget. */
static void cache_evict_for(struct tdb_cache *c, uint64_t need)
{
    while (cache_over(c, need)) {
        if (c->pool)
            cache_pool_drop(c);
        else if (c->lru.tail)
            cache_evict_one(c, c->lru.tail);
        else
            break;
    }
}

/* Hands g a pooled block for a load of `size` data bytes that adds at
 * most `slack` bytes to g->need (c->lock held): of size to twice size
 * bytes, the smallest there is.  When there is none and tiles must be
 * evicted for g->need even once the pool is freed, the least recently
 * used go first, their blocks offered to the load.  When none of them
 * fits either, a block of huge pages (blocks.c) where the size is one
 * they serve. */
static void cache_grant(struct tdb_cache *c, uint64_t size, uint64_t slack,
                        struct cache_grant *g)
{
    if (!size || size > TDB_MAX_TILE_BYTES)
        return;
    uint64_t most = size + (slack < size ? slack : size);
    struct cache_block *b = cache_pool_take(c, size, most);
    uint64_t need = g->need + sizeof(struct tdb_cache_entry);
    while (!b && c->lru.tail && need < UINT64_MAX - c->budget &&
           c->used - c->pooled + need > c->budget) {
        cache_evict_one(c, c->lru.tail);
        b = cache_pool_take(c, size, most);
    }
    void *p;
    size_t cap;
    if (!b && c->huge && size <= SIZE_MAX &&
        tdb_blocks_get(&c->blocks, (size_t)size, &p, &cap) == 0) {
        b = p;
        b->cap = cap;
    }
    if (!b)
        return;
    uint64_t base = g->need > size ? g->need : size;
    g->blk = b;
    g->need = base + (b->cap - size) < base ? UINT64_MAX
                                             : base + (b->cap - size);
}

static void cache_evict(struct tdb_cache *c)
{
    cache_evict_for(c, 0);
}

/* Whether a load of `need` bytes (and its entry) may start, evicting to
 * make room:
 * within the budget once the tiles no one holds go (and the kept ones,
 * with `kept`), or, with `kept` and need larger than the budget, once
 * nothing else is held at all. */
static bool cache_admit(struct tdb_cache *c, uint64_t size,
                        struct cache_grant *g, bool kept)
{
    uint64_t need = g->need + sizeof(struct tdb_cache_entry) < g->need
                        ? UINT64_MAX
                        : g->need + sizeof(struct tdb_cache_entry);
    uint64_t held = c->used - c->pooled - c->lru.bytes -
                    (kept ? c->kept.bytes : 0);
    bool fits = need <= c->budget && held <= c->budget - need;
    if (!fits && !(kept && held == 0))
        return false;
    uint64_t was = g->need;
    cache_grant(c, size, fits ? c->budget - held - need : 0, g);
    need += g->need - was;
    cache_evict_for(c, need);
    while (kept && (cache_over(c, need) || !fits) && c->kept.tail)
        cache_evict_one(c, c->kept.tail);
    return true;
}

/* Leaves the queue of loads waiting for room (c->lock held). */
static void cache_wait_leave(struct tdb_cache *c, struct cache_waiter *w)
{
    struct cache_waiter **pp = &c->wait_head, *prev = NULL;
    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    bool first = pp == &c->wait_head;
    *pp = w->next;
    if (c->wait_tail == w)
        c->wait_tail = prev;
    if (first)
        pthread_cond_broadcast(&c->room);
}

/* The entry for key, NULL when none (c->lock held). */
static struct tdb_cache_entry *cache_find(struct tdb_cache *c,
                                          const struct tdb_cache_key *key)
{
    struct tdb_cache_entry *e = c->buckets[cache_hash(c, key)];
    while (e && !cache_key_eq(&e->key, key))
        e = e->hnext;
    return e;
}

/* Pins e, found in the table, once its load ends (c->lock held, and let
 * go).  @return 0 or the load's error. */
static int cache_hit(struct tdb_cache *c, struct tdb_cache_entry *e,
                     struct tdb_cache_entry **entry,
                     const struct tdb_tile **tile, struct tdb_error *err)
{
    e->refs++;
    cache_list_remove(e);
    while (e->state == CACHE_LOADING)
        pthread_cond_wait(&c->loaded, &c->lock);
    if (e->state == CACHE_FAILED) {
        int r = e->load_err;
        if (err && e->err_copy)
            *err = *e->err_copy;
        if (--e->refs == 0)
            cache_entry_free(c, e);
        pthread_mutex_unlock(&c->lock);
        return r;
    }
    c->hits++;
    pthread_mutex_unlock(&c->lock);
    *entry = e;
    *tile = &e->tile;
    return 0;
}

/* Finds rq->key (then *found) or, as rq->flags say, makes room for its
 * load and grants it *g (c->lock held throughout; a wait lets it go
 * meanwhile).  @return 0 (found, or room made) or 1 (nothing to do: see
 * the flags). */
static int cache_lookup_or_admit(struct tdb_cache *c,
                                 const struct tdb_cache_req *rq,
                                 struct tdb_cache_entry **found,
                                 struct cache_grant *g)
{
    struct cache_waiter w = {NULL};
    bool queued = false;
    for (;;) {
        struct tdb_cache_entry *e = cache_find(c, &rq->key);
        if (e || (rq->flags & TDB_CACHE_PEEK)) {
            if (queued)
                cache_wait_leave(c, &w);
            if (e && e->state == CACHE_LOADING &&
                (rq->flags & TDB_CACHE_NOWAIT))
                return 1;
            *found = e;
            return e ? 0 : 1;
        }
        if (rq->flags & TDB_CACHE_WAIT) {
            if (!queued) {
                if (c->wait_tail)
                    c->wait_tail->next = &w;
                else
                    c->wait_head = &w;
                c->wait_tail = &w;
                queued = true;
            }
            if (c->wait_head == &w && cache_admit(c, rq->size, g, true)) {
                cache_wait_leave(c, &w);
                return 0;
            }
            pthread_cond_wait(&c->room, &c->lock);
            continue;
        }
        if (rq->flags & TDB_CACHE_TRY) {
            uint64_t n = rq->need, spare = rq->flags & TDB_CACHE_SPARE ? n : 0;
            g->need = n + spare;
            if (c->wait_head || n + spare < n ||
                !cache_admit(c, rq->size, g, false))
                return 1;
            g->need -= spare;
            return 0;
        }
        cache_grant(c, rq->size, rq->size, g);
        cache_evict_for(c, g->need);
        return 0;
    }
}

/* The load of e (LOADING, pinned once) failed: out of the table, its
 * need given back, its pinners told (c->lock held, and let go). */
static int cache_load_failed(struct tdb_cache *c, struct tdb_cache_entry *e,
                             int r, const struct tdb_error *lerr,
                             struct tdb_error *err)
{
    e->state = CACHE_FAILED;
    e->load_err = r;
    e->err_copy = malloc(sizeof *e->err_copy);
    if (e->err_copy)
        *e->err_copy = *lerr;
    cache_unlink(c, e); /* the next get loads again */
    cache_tile_free(c, &e->tile);
    pthread_cond_broadcast(&c->loaded);
    if (--e->refs == 0)
        cache_entry_free(c, e);
    pthread_mutex_unlock(&c->lock);
    if (err)
        *err = *lerr;
    return r;
}

/* A new entry for rq->key, loading, pinned once, counted as g's need,
 * its tile decoded into g's pooled block when it has one; c->lock held.
 * @return NULL when out of memory. */
static struct tdb_cache_entry *cache_entry_new(struct tdb_cache *c,
                                               const struct tdb_cache_req *rq,
                                               const struct cache_grant *g)
{
    struct tdb_cache_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->key = rq->key;
    e->state = CACHE_LOADING;
    e->refs = 1;
    e->bytes = g->need + sizeof *e;
    if (e->bytes < g->need)
        e->bytes = UINT64_MAX;
    if (g->blk) {
        e->tile.data = (uint8_t *)g->blk;
        e->tile.data_cap = g->blk->cap;
    }
    size_t b = cache_hash(c, &rq->key);
    e->hnext = c->buckets[b];
    c->buckets[b] = e;
    c->nentries++;
    c->misses++;
    c->used += e->bytes;
    if (c->used > c->peak)
        c->peak = c->used;
    return e;
}

/* Entry e was loaded in ns nanoseconds: it counts its tile's bytes now,
 * and those waiting for it or for room are woken; c->lock held. */
static void cache_loaded(struct tdb_cache *c, struct tdb_cache_entry *e,
                         uint64_t ns)
{
    uint64_t data = e->tile.data_cap > e->tile.size ? e->tile.data_cap
                                                    : e->tile.size;
    uint64_t bytes = data + e->tile.ncells * 8 * (e->tile.offsets != NULL) +
                     sizeof *e;
    c->used = c->used - e->bytes + bytes;
    e->bytes = bytes;
    if (c->used > c->peak)
        c->peak = c->used;
    e->state = CACHE_READY;
    c->decodes++;
    c->decoded_bytes += e->tile.size;
    c->decode_ns += ns;
    pthread_cond_broadcast(&c->loaded);
    cache_wake(c);
    cache_evict(c);
}

int tdb_cache_fetch(struct tdb_cache *c, const struct tdb_cache_req *rq,
                    struct tdb_cache_entry **entry,
                    const struct tdb_tile **tile, struct tdb_error *err)
{
    struct tdb_cache_entry *e = NULL;
    struct cache_grant g = {NULL, rq->need};
    pthread_mutex_lock(&c->lock);
    if (cache_lookup_or_admit(c, rq, &e, &g)) {
        pthread_mutex_unlock(&c->lock);
        return 1;
    }
    if (e)
        return cache_hit(c, e, entry, tile, err);
    if (!(e = cache_entry_new(c, rq, &g))) {
        if (g.blk)
            cache_pool_put(c, g.blk, g.blk->cap);
        cache_wake(c);
        pthread_mutex_unlock(&c->lock);
        return tdb_err(err, TDB_E_NOMEM, "tile cache: out of memory");
    }
    uint64_t lent_cap = g.blk ? g.blk->cap : 0;
    pthread_mutex_unlock(&c->lock);

    struct tdb_error lerr = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = rq->load(rq->arg, &rq->key, &e->tile, &lerr);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    pthread_mutex_lock(&c->lock);
    if (g.blk && e->tile.data != (uint8_t *)g.blk)
        cache_pool_put(c, g.blk, lent_cap);   /* the load moved off it */
    if (r)
        return cache_load_failed(c, e, r, &lerr, err);
    cache_loaded(c, e, (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
                           (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec);
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

/* e (in the table, READY) is held by no one: to the kept list, to the LRU
 * list, or (TDB_CACHE_DROP, the cache more than half full, or
 * TDB_CACHE_DROP_NOW) freed (c->lock held). */
static void cache_idle(struct tdb_cache *c, struct tdb_cache_entry *e,
                       unsigned flags)
{
    if (e->keeps) {
        cache_list_push(&c->kept, e);
    } else if ((flags & TDB_CACHE_DROP) &&
               ((flags & TDB_CACHE_DROP_NOW) ||
                c->used - c->pooled > c->budget / 2)) {
        cache_unlink(c, e);
        cache_entry_free(c, e);
        c->evictions++;
    } else {
        cache_list_push(&c->lru, e);
        cache_evict(c);
    }
    cache_wake(c);
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
    if (--e->refs == 0)
        cache_idle(c, e, flags);
    pthread_mutex_unlock(&c->lock);
}

void tdb_cache_keep(struct tdb_cache *c, struct tdb_cache_entry *e)
{
    pthread_mutex_lock(&c->lock);
    e->keeps++;
    if (--e->refs == 0)
        cache_idle(c, e, 0);
    pthread_mutex_unlock(&c->lock);
}

void tdb_cache_unkeep(struct tdb_cache *c, struct tdb_cache_entry *e,
                      unsigned flags)
{
    if (!e)
        return;
    pthread_mutex_lock(&c->lock);
    if (--e->keeps == 0 && e->refs == 0) {
        if (e->gone) {
            cache_entry_free(c, e);
        } else {
            cache_list_remove(e);
            cache_idle(c, e, flags);
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
    st->pooled = c->pooled;
    st->reused = c->reused;
    st->huge = c->blocks.mapped;
    pthread_mutex_unlock(&c->lock);
}

void tdb_cache_huge_pages(struct tdb_cache *c, bool on)
{
    pthread_mutex_lock(&c->lock);
    c->huge = on;
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

/* The bytes of the buffers scratch s keeps. */
static uint64_t cache_scratch_bytes(const struct tdb_scratch *s)
{
    uint64_t n = s->raw.cap;
    for (int i = 0; i < 4; i++)
        n += s->bufs[i].cap;
    return n;
}

struct tdb_scratch *tdb_cache_scratch_get(struct tdb_cache *c)
{
    pthread_mutex_lock(&c->lock);
    struct tdb_scratch *s = c->scratch;
    if (s) {
        c->scratch = s->next;
        c->scratch_bytes -= cache_scratch_bytes(s);
    }
    pthread_mutex_unlock(&c->lock);
    return s ? s : calloc(1, sizeof *s);
}

void tdb_cache_scratch_put(struct tdb_cache *c, struct tdb_scratch *s)
{
    if (!s)
        return;
    /* keep working memory of ordinary tiles, not of a huge one, and all
     * in all no more than a sixteenth of the budget */
    uint64_t keep = c->budget / 16 < CACHE_SCRATCH_KEEP ? c->budget / 16
                                                        : CACHE_SCRATCH_KEEP;
    if (s->raw.cap > keep)
        tdb_buf_free(&s->raw);
    for (int i = 0; i < 4; i++)
        if (s->bufs[i].cap > keep)
            tdb_buf_free(&s->bufs[i]);
    uint64_t n = cache_scratch_bytes(s);
    pthread_mutex_lock(&c->lock);
    if (c->scratch_bytes + n > c->budget / 16) {
        pthread_mutex_unlock(&c->lock);
        tdb_buf_free(&s->raw);
        for (int i = 0; i < 4; i++)
            tdb_buf_free(&s->bufs[i]);
        n = 0;
        pthread_mutex_lock(&c->lock);
    }
    c->scratch_bytes += n;
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
            cache_entry_free(c, e);
            e = n;
        }
    }
    while (c->pool)
        cache_pool_drop(c);
    tdb_blocks_fini(&c->blocks);
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->loaded);
    pthread_cond_destroy(&c->room);
    free(c);
}
