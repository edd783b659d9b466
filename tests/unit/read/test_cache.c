/* test_cache.c: the decoded-tile cache: hits, the byte budget (LRU order),
 * pins that survive eviction, failed loads not cached, single-flight,
 * tiles dropped once passed, the most bytes held at once, loads admitted
 * within the budget however many threads ask (one at a time when a tile
 * is larger than it), keeps that a waiting load may free, the pool
 * of freed tiles' blocks that loads decode into, and the blocks on huge
 * pages (blocks.c) that large tiles decode into. */
#include "read/blocks.h"
#include "read/cache.h"
#include "../unit.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct loader {
    pthread_mutex_t lock;
    int calls;
    int fail_first;
    unsigned delay_us;
};

static int load_tile(void *arg, const struct tdb_cache_key *k,
                     struct tdb_tile *t, struct tdb_error *err)
{
    struct loader *l = arg;
    pthread_mutex_lock(&l->lock);
    int call = ++l->calls;
    pthread_mutex_unlock(&l->lock);
    if (l->delay_us)
        usleep(l->delay_us);
    if (l->fail_first && call == 1)
        return tdb_err(err, TDB_E_CORRUPT, "x.tdb: tile %llu corrupt",
                       (unsigned long long)k->tile);
    t->size = 1000;
    t->data = malloc(1000);
    memset(t->data, (int)k->tile, 1000);
    return 0;
}

/* Finds or loads key through `load` whatever the budget (a fetch without
 * flags). */
static int cache_get(struct tdb_cache *c, const struct tdb_cache_key *key,
                     tdb_cache_load_fn load, void *arg,
                     struct tdb_cache_entry **e, const struct tdb_tile **t,
                     struct tdb_error *err)
{
    struct tdb_cache_req rq = {*key, load, arg, 0, 0, 0};
    return tdb_cache_fetch(c, &rq, e, t, err);
}

static void test_hit_after_miss(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 1 << 20), 0);
    struct tdb_cache_key k = {1, 2, 3};
    struct tdb_cache_entry *e;
    const struct tdb_tile *t;
    CHECK_EQ_INT(cache_get(c, &k, load_tile, &l, &e, &t, NULL), 0);
    CHECK_EQ_INT(t->data[999], 3);
    tdb_cache_release(c, e);
    CHECK_EQ_INT(cache_get(c, &k, load_tile, &l, &e, &t, NULL), 0);
    tdb_cache_release(c, e);
    CHECK_EQ_INT(l.calls, 1);
    struct tdb_cache_stats st;
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.hits, 1);
    CHECK_EQ_INT(st.misses, 1);
    tdb_cache_free(c);
}

static void test_budget_and_pins(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 3500), 0); /* about three tiles */
    struct tdb_cache_entry *pinned, *e;
    const struct tdb_tile *pt, *t;
    struct tdb_cache_key k0 = {0, 0, 0};
    CHECK_EQ_INT(cache_get(c, &k0, load_tile, &l, &pinned, &pt, NULL), 0);
    for (uint64_t i = 1; i <= 10; i++) {
        struct tdb_cache_key k = {0, 0, i};
        CHECK_EQ_INT(cache_get(c, &k, load_tile, &l, &e, &t, NULL), 0);
        tdb_cache_release(c, e);
    }
    struct tdb_cache_stats st;
    tdb_cache_stats(c, &st);
    CHECK(st.used <= st.budget);
    CHECK(st.evictions >= 7);
    /* the pinned tile is intact and still cached */
    CHECK_EQ_INT(pt->data[0], 0);
    CHECK_EQ_INT(pt->data[999], 0);
    int calls = l.calls;
    CHECK_EQ_INT(cache_get(c, &k0, load_tile, &l, &e, &t, NULL), 0);
    CHECK_EQ_INT(l.calls, calls);
    tdb_cache_release(c, e);
    tdb_cache_release(c, pinned);
    /* the most recent tile stayed; the oldest unpinned went */
    struct tdb_cache_key k10 = {0, 0, 10}, k1 = {0, 0, 1};
    CHECK_EQ_INT(cache_get(c, &k10, load_tile, &l, &e, &t, NULL), 0);
    tdb_cache_release(c, e);
    CHECK_EQ_INT(l.calls, calls);
    CHECK_EQ_INT(cache_get(c, &k1, load_tile, &l, &e, &t, NULL), 0);
    tdb_cache_release(c, e);
    CHECK_EQ_INT(l.calls, calls + 1);
    tdb_cache_free(c);
}

static void test_failure_not_cached(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 1, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 1 << 20), 0);
    struct tdb_cache_key k = {4, 0, 9};
    struct tdb_cache_entry *e;
    const struct tdb_tile *t;
    struct tdb_error err = {0};
    CHECK_EQ_INT(cache_get(c, &k, load_tile, &l, &e, &t, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "tile 9") != NULL);
    CHECK_EQ_INT(cache_get(c, &k, load_tile, &l, &e, &t, &err), 0);
    tdb_cache_release(c, e);
    CHECK_EQ_INT(l.calls, 2);
    tdb_cache_free(c);
}

struct racer {
    struct tdb_cache *c;
    struct loader *l;
    int ok;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    struct tdb_cache_key k = {7, 7, 7};
    struct tdb_cache_entry *e;
    const struct tdb_tile *t;
    if (!cache_get(r->c, &k, load_tile, r->l, &e, &t, NULL)) {
        r->ok = t->data[500] == 7;
        tdb_cache_release(r->c, e);
    }
    return NULL;
}

static void test_single_flight(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 50000};
    CHECK_EQ_INT(tdb_cache_create(&c, 1 << 20), 0);
    pthread_t th[8];
    struct racer rs[8];
    for (int i = 0; i < 8; i++) {
        rs[i] = (struct racer){c, &l, 0};
        pthread_create(&th[i], NULL, race, &rs[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        CHECK(rs[i].ok);
    }
    CHECK_EQ_INT(l.calls, 1);
    tdb_cache_free(c);
}

/* A tile let go with TDB_CACHE_DROP stays while the cache is at most half
 * full, is freed at once beyond that, and stays while another pin
 * (tdb_cache_hold) holds it. */
static void test_drop_and_hold(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    struct tdb_cache_entry *e[4];
    const struct tdb_tile *t;
    CHECK_EQ_INT(tdb_cache_create(&c, 5000), 0); /* half: 2,500 */
    for (uint64_t i = 0; i < 4; i++) {
        struct tdb_cache_key k = {1, 0, i};
        CHECK_EQ_INT(cache_get(c, &k, load_tile, &l, &e[i], &t, NULL), 0);
    }
    struct tdb_cache_stats st;
    tdb_cache_hold(c, e[0]);
    tdb_cache_release_flags(c, e[0], TDB_CACHE_DROP); /* still held */
    tdb_cache_release_flags(c, e[1], TDB_CACHE_DROP); /* 4 tiles: freed */
    tdb_cache_release_flags(c, e[2], TDB_CACHE_DROP); /* 3 tiles: freed */
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.entries, 2);
    CHECK_EQ_INT(st.evictions, 2);
    tdb_cache_release_flags(c, e[0], TDB_CACHE_DROP); /* 2 tiles: stays */
    tdb_cache_release_flags(c, e[3], TDB_CACHE_DROP); /* 2 tiles: stays */
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.entries, 2);
    struct tdb_cache_key k0 = {1, 0, 0};
    CHECK_EQ_INT(cache_get(c, &k0, load_tile, &l, &e[0], &t, NULL), 0);
    CHECK_EQ_INT(t->data[0], 0);
    tdb_cache_release(c, e[0]);
    CHECK_EQ_INT(l.calls, 4);
    /* TDB_CACHE_DROP_NOW: freed however empty the cache is */
    struct tdb_cache_key k5 = {1, 0, 5};
    CHECK_EQ_INT(cache_get(c, &k5, load_tile, &l, &e[1], &t, NULL), 0);
    tdb_cache_release_flags(c, e[1], TDB_CACHE_DROP_NOW); /* no DROP: stays */
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.entries, 3);
    CHECK_EQ_INT(cache_get(c, &k5, load_tile, &l, &e[1], &t, NULL), 0);
    tdb_cache_release_flags(c, e[1], TDB_CACHE_DROP | TDB_CACHE_DROP_NOW);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.entries, 2);
    CHECK_EQ_INT(st.evictions, 3);
    CHECK_EQ_INT(l.calls, 5);
    tdb_cache_free(c);
}

/* tdb_cache_peak: the most bytes held at once, pinned or not, counted
 * again from what is held when reset. */
static void test_peak(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 1), 0);
    CHECK_EQ_INT(tdb_cache_peak(c, false), 0);
    struct tdb_cache_entry *e[4];
    const struct tdb_tile *t;
    for (uint64_t i = 0; i < 4; i++) {
        struct tdb_cache_key k = {0, 0, i};
        CHECK_EQ_INT(cache_get(c, &k, load_tile, &l, &e[i], &t, NULL), 0);
    }
    struct tdb_cache_stats st;
    tdb_cache_stats(c, &st);
    CHECK(st.used > 4000); /* four pinned tiles, over the budget */
    CHECK_EQ_INT(tdb_cache_peak(c, false), st.used);
    uint64_t four = st.used;
    for (int i = 0; i < 3; i++)
        tdb_cache_release(c, e[i]); /* evicted at once: over the budget */
    tdb_cache_stats(c, &st);
    CHECK(st.used < four);
    CHECK_EQ_INT(tdb_cache_peak(c, true), four);
    CHECK_EQ_INT(tdb_cache_peak(c, false), st.used);
    tdb_cache_release(c, e[3]);
    tdb_cache_free(c);
}

/* A loader that counts the loads under way at once: 1000-byte tiles,
 * after `delay_us`. */
struct counting {
    pthread_mutex_t lock;
    int now, most, calls;
    unsigned delay_us;
};

static int load_counted(void *arg, const struct tdb_cache_key *k,
                        struct tdb_tile *t, struct tdb_error *err)
{
    struct counting *l = arg;
    (void)err;
    pthread_mutex_lock(&l->lock);
    l->calls++;
    if (++l->now > l->most)
        l->most = l->now;
    pthread_mutex_unlock(&l->lock);
    usleep(l->delay_us);
    t->size = 1000;
    t->data = malloc(1000);
    memset(t->data, (int)k->tile, 1000);
    pthread_mutex_lock(&l->lock);
    l->now--;
    pthread_mutex_unlock(&l->lock);
    return 0;
}

struct asker {
    struct tdb_cache *c;
    struct counting *l;
    uint64_t first, need;
    int ok;
};

/* 20 tiles of its own, each pinned once loaded (TDB_CACHE_WAIT: nothing
 * else pinned meanwhile), checked, let go. */
static void *ask_waiting(void *arg)
{
    struct asker *a = arg;
    for (uint64_t i = 0; i < 20; i++) {
        struct tdb_cache_req rq = {{9, 0, a->first + i}, load_counted, a->l,
                                   TDB_CACHE_WAIT, a->need, 0};
        struct tdb_cache_entry *e;
        const struct tdb_tile *t;
        if (tdb_cache_fetch(a->c, &rq, &e, &t, NULL) != 0)
            return NULL;
        int ok = t->data[999] == (uint8_t)(a->first + i);
        tdb_cache_release(a->c, e);
        if (!ok)
            return NULL;
    }
    a->ok = 1;
    return NULL;
}

/* 8 threads load 160 tiles (1000 bytes, need 1000) through a cache of
 * `budget` bytes: every tile right, and *most loads at once. */
static uint64_t waiting_loads(uint64_t budget, int *most)
{
    struct tdb_cache *c;
    struct counting l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 2000};
    CHECK_EQ_INT(tdb_cache_create(&c, budget), 0);
    pthread_t th[8];
    struct asker as[8];
    for (int i = 0; i < 8; i++) {
        as[i] = (struct asker){c, &l, (uint64_t)i * 20, 1000, 0};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, ask_waiting, &as[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        CHECK(as[i].ok);
    }
    CHECK_EQ_INT(l.calls, 160);
    uint64_t peak = tdb_cache_peak(c, false);
    tdb_cache_free(c);
    *most = l.most;
    return peak;
}

/* Loads that wait for room keep the cache within its budget (tiles being
 * loaded count), at most 3 at a time in a budget of 3,500 bytes (3 tiles
 * of 1,000 and their entries); a tile larger than the budget is loaded
 * alone. */
static void test_waiting_loads_within_budget(void)
{
    int most;
    uint64_t three = 3500, peak = waiting_loads(three, &most);
    printf("budget %llu: peak %llu, %d loads at once\n",
           (unsigned long long)three, (unsigned long long)peak, most);
    CHECK(peak <= three);
    CHECK(peak >= 2000);
    CHECK(most <= 3);
    peak = waiting_loads(1, &most);
    printf("budget 1: peak %llu, %d loads at once\n",
           (unsigned long long)peak, most);
    CHECK_EQ_INT(most, 1);
    CHECK(peak >= 1000 && peak <= 1000 + 512);
}

/* A kept tile stays when a load may not wait for room (TRY gives up, a
 * plain get goes beyond the budget and evicts only what no one keeps),
 * and goes for one that waits; its entry stays valid until unkept, and the
 * tile is loaded again when asked for. */
static void test_keep_yields_to_waiting_load(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 1600), 0); /* one tile */
    struct tdb_cache_entry *kept, *e;
    const struct tdb_tile *t;
    struct tdb_cache_req rq = {{2, 0, 0}, load_tile, &l, TDB_CACHE_TRY, 1000,
                               0};
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &kept, &t, NULL), 0);
    tdb_cache_keep(c, kept);
    rq.key.tile = 1;
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &e, &t, NULL), 1); /* no room */
    struct tdb_cache_key k1 = {2, 0, 1};
    CHECK_EQ_INT(cache_get(c, &k1, load_tile, &l, &e, &t, NULL), 0);
    tdb_cache_release(c, e); /* evicted: over the budget, not kept */
    struct tdb_cache_stats st;
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.entries, 1);
    rq.flags = TDB_CACHE_WAIT;
    rq.key.tile = 2;
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &e, &t, NULL), 0);
    CHECK_EQ_INT(t->data[0], 2);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.entries, 1); /* the kept tile went */
    CHECK(st.used <= 1600);
    tdb_cache_release(c, e);
    tdb_cache_unkeep(c, kept, 0);
    int calls = l.calls;
    struct tdb_cache_key k0 = {2, 0, 0};
    CHECK_EQ_INT(cache_get(c, &k0, load_tile, &l, &e, &t, NULL), 0);
    CHECK_EQ_INT(t->data[999], 0);
    CHECK_EQ_INT(l.calls, calls + 1);
    tdb_cache_release(c, e);
    tdb_cache_free(c);
}

/* A load that decodes into the block the cache hands it, else into one
 * of its own of exactly `size` bytes. */
struct pool_loader {
    uint64_t size;
    int calls, given;
    uintptr_t given_at;         /* the last block handed over */
};

static int load_pooled(void *arg, const struct tdb_cache_key *k,
                       struct tdb_tile *t, struct tdb_error *err)
{
    struct pool_loader *l = arg;
    (void)err;
    l->calls++;
    if (t->data) {
        l->given++;
        l->given_at = (uintptr_t)t->data;
        CHECK(t->data_cap >= l->size && t->data_cap <= 2 * l->size);
    }
    if (t->data && t->data_cap < l->size)
        tdb_tile_free(t);
    if (!t->data) {
        t->data = malloc(l->size);
        t->data_cap = l->size;
    }
    memset(t->data, (int)k->tile, l->size);
    t->size = l->size;
    return 0;
}

static int fetch_pooled(struct tdb_cache *c, struct pool_loader *l,
                        uint64_t tile, struct tdb_cache_entry **e,
                        const struct tdb_tile **t)
{
    struct tdb_cache_req rq = {{5, 0, tile}, load_pooled, l, TDB_CACHE_TRY,
                               l->size, l->size};
    return tdb_cache_fetch(c, &rq, e, t, NULL);
}

#define POOL_TILE (128u << 10) /* under TDB_BLOCKS_MIN: malloc's blocks */

/* A tile dropped, or evicted for a load, leaves its block to a load of the
 * same size, which decodes into that very block; used (pool included)
 * stays within the budget. */
static void test_pool_reuse(void)
{
    struct tdb_cache *c;
    struct pool_loader l = {POOL_TILE, 0, 0, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 3 * POOL_TILE + 8192), 0);
    struct tdb_cache_entry *e[5];
    const struct tdb_tile *t[5];
    CHECK_EQ_INT(fetch_pooled(c, &l, 0, &e[0], &t[0]), 0);
    CHECK_EQ_INT(fetch_pooled(c, &l, 1, &e[1], &t[1]), 0);
    uintptr_t first = (uintptr_t)t[0]->data;
    tdb_cache_release_flags(c, e[0], TDB_CACHE_DROP); /* 2 of 3: freed */
    struct tdb_cache_stats st;
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.entries, 1);
    CHECK_EQ_INT(st.pooled, POOL_TILE);
    CHECK_EQ_INT(st.reused, 0);
    CHECK_EQ_INT(fetch_pooled(c, &l, 2, &e[2], &t[2]), 0);
    CHECK_EQ_INT(l.given, 1);
    CHECK(l.given_at == first);
    CHECK(t[2]->data == (const uint8_t *)first);
    CHECK_EQ_INT(t[2]->data[POOL_TILE - 1], 2);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.pooled, 0);
    CHECK_EQ_INT(st.reused, 1);
    /* no drop: tiles 1 and 2 in the LRU list, 3 fits beside them, 4
     * evicts tile 1 and decodes into its block */
    uintptr_t second = (uintptr_t)t[1]->data;
    tdb_cache_release(c, e[1]);
    tdb_cache_release(c, e[2]);
    CHECK_EQ_INT(fetch_pooled(c, &l, 3, &e[3], &t[3]), 0);
    CHECK_EQ_INT(l.given, 1);
    CHECK_EQ_INT(fetch_pooled(c, &l, 4, &e[4], &t[4]), 0);
    CHECK_EQ_INT(l.given, 2);
    CHECK(l.given_at == second);
    CHECK_EQ_INT(t[4]->data[0], 4);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.reused, 2);
    CHECK_EQ_INT(st.evictions, 2);
    CHECK(st.used <= st.budget);
    CHECK(tdb_cache_peak(c, false) <= st.budget);
    tdb_cache_release(c, e[3]);
    tdb_cache_release(c, e[4]);
    tdb_cache_free(c);
}

/* Pooled bytes count as used: a load that needs room frees the pool
 * before it evicts a tile, and a block more than twice the load's size is
 * not handed to it. */
static void test_pool_freed_first(void)
{
    struct tdb_cache *c;
    struct pool_loader l = {POOL_TILE, 0, 0, 0};
    uint64_t budget = 3 * POOL_TILE + 8192;
    CHECK_EQ_INT(tdb_cache_create(&c, budget), 0);
    struct tdb_cache_entry *e[4];
    const struct tdb_tile *t[4];
    for (uint64_t i = 0; i < 3; i++)
        CHECK_EQ_INT(fetch_pooled(c, &l, i, &e[i], &t[i]), 0);
    tdb_cache_release_flags(c, e[0], TDB_CACHE_DROP); /* to the pool */
    tdb_cache_release(c, e[1]);                       /* to the LRU */
    struct tdb_cache_stats st;
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.pooled, POOL_TILE);
    CHECK(st.used > 3 * POOL_TILE); /* the pool counts */
    CHECK(st.used <= budget);
    l.size = POOL_TILE / 4; /* the pooled block is too large for it */
    CHECK_EQ_INT(fetch_pooled(c, &l, 3, &e[3], &t[3]), 0);
    CHECK_EQ_INT(l.given, 0);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.pooled, 0);
    CHECK_EQ_INT(st.evictions, 1); /* the drop alone: tile 1 stayed */
    CHECK_EQ_INT(st.entries, 3);
    CHECK(st.used <= budget);
    CHECK(tdb_cache_peak(c, false) <= budget);
    struct tdb_cache_key k1 = {5, 0, 1};
    struct tdb_cache_entry *e1;
    const struct tdb_tile *t1;
    struct tdb_cache_req rq = {k1, load_pooled, &l, TDB_CACHE_PEEK, 0, 0};
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &e1, &t1, NULL), 0);
    CHECK_EQ_INT(t1->data[0], 1);
    tdb_cache_release(c, e1);
    tdb_cache_release(c, e[2]);
    tdb_cache_release(c, e[3]);
    tdb_cache_free(c);
}

#define HUGE_TILE (1u << 20)

/* The allocator alone: two 1 MiB blocks share a 2 MiB-aligned region, a
 * third maps another; sizes that would leave more than an eighth of a
 * region unused are refused; a block of 3 MiB has a region of its own; a
 * block given back while its region is in use comes back zeroed (its
 * pages returned), and the regions go with their last block. */
static void test_blocks(void)
{
    struct tdb_blocks b = {0};
    void *p[5];
    size_t cap;
    if (!TDB_BLOCKS_ON) {
        CHECK_EQ_INT(tdb_blocks_get(&b, HUGE_TILE, &p[0], &cap), -1);
        return;
    }
    CHECK_EQ_INT(tdb_blocks_get(&b, HUGE_TILE, &p[0], &cap), 0);
    CHECK_EQ_INT(cap, HUGE_TILE);
    CHECK_EQ_INT((uintptr_t)p[0] % (2u << 20), 0);
    CHECK_EQ_INT(tdb_blocks_get(&b, HUGE_TILE - 100, &p[1], &cap), 0);
    CHECK_EQ_INT(cap, HUGE_TILE);
    CHECK((uint8_t *)p[1] == (uint8_t *)p[0] + HUGE_TILE);
    CHECK_EQ_INT(b.mapped, 2u << 20);
    CHECK_EQ_INT(tdb_blocks_get(&b, HUGE_TILE, &p[2], &cap), 0);
    CHECK_EQ_INT(tdb_blocks_get(&b, HUGE_TILE, &p[4], &cap), 0);
    CHECK_EQ_INT(b.mapped, 4u << 20);
    CHECK_EQ_INT(tdb_blocks_get(&b, 1152u << 10, &p[3], &cap), -1);
    CHECK_EQ_INT(tdb_blocks_get(&b, TDB_BLOCKS_MIN - 1, &p[3], &cap), -1);
    CHECK_EQ_INT(tdb_blocks_get(&b, 3u << 20, &p[3], &cap), 0);
    CHECK_EQ_INT(cap, 3u << 20);
    CHECK_EQ_INT(b.mapped, 7u << 20);
    for (int i = 0; i < 5; i++)
        CHECK(tdb_blocks_owns(&b, (uint8_t *)p[i] + (i == 3 ? cap - 1 : 0)));
    int local;
    CHECK(!tdb_blocks_owns(&b, &local));
    CHECK(!tdb_blocks_owns(&b, (uint8_t *)p[3] + cap));
    memset(p[0], 0xab, HUGE_TILE);
    memset(p[1], 0xcd, HUGE_TILE);
    tdb_blocks_put(&b, p[0]);   /* its region keeps p[1]: pages returned */
    CHECK_EQ_INT(b.mapped, 7u << 20);
    void *again;
    CHECK_EQ_INT(tdb_blocks_get(&b, HUGE_TILE, &again, &cap), 0);
    CHECK(again == p[0]);       /* the one free slot */
    CHECK_EQ_INT(((uint8_t *)again)[0], 0);
    CHECK_EQ_INT(((uint8_t *)again)[HUGE_TILE - 1], 0);
    CHECK_EQ_INT(((uint8_t *)p[1])[0], 0xcd);
    CHECK_EQ_INT(((uint8_t *)p[1])[HUGE_TILE - 1], 0xcd);
    tdb_blocks_put(&b, p[3]);
    CHECK_EQ_INT(b.mapped, 4u << 20);
    tdb_blocks_put(&b, p[2]);
    tdb_blocks_put(&b, p[4]);
    CHECK_EQ_INT(b.mapped, 2u << 20);
    tdb_blocks_put(&b, again);
    tdb_blocks_put(&b, p[1]);
    CHECK_EQ_INT(b.mapped, 0);
    CHECK_EQ_INT(b.n, 0);
    tdb_blocks_fini(&b);
}

/* Many regions of one slot size: a block given back in any of them is
 * the next one given, before a region is added; a block of another size
 * never takes it; put says whether the block was one of b's; and with
 * every block back, no region and no listed one is left. */
static void test_blocks_many(void)
{
    enum { REGIONS = 20, PER = 8, SMALL = 256u << 10 };
    static void *p[REGIONS * PER];
    struct tdb_blocks b = {0};
    void *q, *r, *other;
    size_t cap;
    int local;
    if (!TDB_BLOCKS_ON)
        return;
    for (int i = 0; i < REGIONS * PER; i++)
        CHECK_EQ_INT(tdb_blocks_get(&b, SMALL, &p[i], &cap), 0);
    CHECK_EQ_INT(b.n, REGIONS);
    CHECK_EQ_INT(b.mapped, (uint64_t)REGIONS << 21);
    CHECK_EQ_INT(b.free[SMALL >> 16].n, 0);     /* all full */
    CHECK(tdb_blocks_put(&b, p[3 * PER + 5]));
    CHECK(tdb_blocks_put(&b, p[17 * PER]));
    CHECK_EQ_INT(b.free[SMALL >> 16].n, 2);
    CHECK_EQ_INT(tdb_blocks_get(&b, 512u << 10, &other, &cap), 0);
    CHECK_EQ_INT(b.n, REGIONS + 1);             /* a region of its own */
    CHECK_EQ_INT(tdb_blocks_get(&b, SMALL, &q, &cap), 0);
    CHECK_EQ_INT(tdb_blocks_get(&b, SMALL, &r, &cap), 0);
    CHECK((q == p[3 * PER + 5] && r == p[17 * PER]) ||
          (r == p[3 * PER + 5] && q == p[17 * PER]));
    CHECK_EQ_INT(b.n, REGIONS + 1);
    CHECK_EQ_INT(b.free[SMALL >> 16].n, 0);
    CHECK(!tdb_blocks_put(&b, &local));
    CHECK(tdb_blocks_put(&b, other));
    for (int i = 0; i < REGIONS * PER; i++)
        CHECK(tdb_blocks_put(&b, p[i]));
    CHECK_EQ_INT(b.n, 0);
    CHECK_EQ_INT(b.mapped, 0);
    for (int i = 0; i < TDB_BLOCKS_SIZES; i++)
        CHECK_EQ_INT(b.free[i].n, 0);
    tdb_blocks_fini(&b);
}

/* A load that fails, or that leaves the block it was lent, when `mode`
 * says so (1: fails, 2: decodes into memory of its own). */
struct lend_loader {
    int mode, given;
};

static int load_lent(void *arg, const struct tdb_cache_key *k,
                     struct tdb_tile *t, struct tdb_error *err)
{
    struct lend_loader *l = arg;
    l->given += t->data != NULL;
    if (l->mode == 1) {
        t->data = NULL;
        return tdb_err(err, TDB_E_CORRUPT, "x.tdb: tile %llu corrupt",
                       (unsigned long long)k->tile);
    }
    if (l->mode == 2 || !t->data) {
        t->data = malloc(HUGE_TILE);
        t->data_cap = HUGE_TILE;
    }
    memset(t->data, (int)k->tile, HUGE_TILE);
    t->size = HUGE_TILE;
    return 0;
}

/* With huge pages asked for, tiles of 1 MiB decode into the blocks the
 * cache lends them (where blocks.c gives them); a block a load failed with, or left for
 * memory of its own, goes back to the pool, and the next load decodes
 * into it; used stays within the budget, and freeing the cache unmaps
 * every region. */
static void test_lent_blocks(void)
{
    struct tdb_cache *c;
    struct lend_loader l = {0, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 4 * HUGE_TILE), 0);
    tdb_cache_huge_pages(c, true);
    struct tdb_cache_entry *e[3];
    const struct tdb_tile *t[3];
    struct tdb_cache_stats st;
    struct tdb_cache_req rq = {{6, 0, 0}, load_lent, &l, TDB_CACHE_TRY,
                               HUGE_TILE, HUGE_TILE};
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &e[0], &t[0], NULL), 0);
    CHECK_EQ_INT(t[0]->data[HUGE_TILE - 1], 0);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(l.given, TDB_BLOCKS_ON);
    CHECK_EQ_INT(st.huge, TDB_BLOCKS_ON ? 2u << 20 : 0);
    if (TDB_BLOCKS_ON)
        CHECK_EQ_INT((uintptr_t)t[0]->data % HUGE_TILE, 0);
    l.mode = 1;
    rq.key.tile = 1;
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &e[1], &t[1], NULL), TDB_E_CORRUPT);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.pooled, TDB_BLOCKS_ON ? HUGE_TILE : 0);
    CHECK_EQ_INT(st.entries, 1);
    l.mode = 2;
    rq.key.tile = 2;
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &e[1], &t[1], NULL), 0);
    CHECK_EQ_INT(t[1]->data[0], 2);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.pooled, TDB_BLOCKS_ON ? HUGE_TILE : 0);
    CHECK_EQ_INT(st.reused, TDB_BLOCKS_ON);
    l.mode = 0;
    rq.key.tile = 3;
    CHECK_EQ_INT(tdb_cache_fetch(c, &rq, &e[2], &t[2], NULL), 0);
    CHECK_EQ_INT(t[2]->data[7], 3);
    tdb_cache_stats(c, &st);
    CHECK_EQ_INT(st.pooled, 0);
    CHECK_EQ_INT(st.reused, 2 * TDB_BLOCKS_ON);
    CHECK_EQ_INT(st.huge, TDB_BLOCKS_ON ? 2u << 20 : 0);
    CHECK(st.used <= st.budget);
    for (int i = 0; i < 3; i++)
        tdb_cache_release(c, e[i]);
    tdb_cache_free(c);
}

int main(void)
{
    RUN(test_hit_after_miss);
    RUN(test_budget_and_pins);
    RUN(test_failure_not_cached);
    RUN(test_single_flight);
    RUN(test_drop_and_hold);
    RUN(test_peak);
    RUN(test_pool_reuse);
    RUN(test_pool_freed_first);
    RUN(test_blocks);
    RUN(test_blocks_many);
    RUN(test_lent_blocks);
    RUN(test_waiting_loads_within_budget);
    RUN(test_keep_yields_to_waiting_load);
    return unit_done();
}
