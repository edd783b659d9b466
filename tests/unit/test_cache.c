/* test_cache.c: the decoded-tile cache: hits, the byte budget (LRU order),
 * pins that survive eviction, failed loads not cached, single-flight,
 * tiles dropped once passed, the most bytes held at once. */
#include "read/cache.h"
#include "unit.h"

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

static void test_hit_after_miss(void)
{
    struct tdb_cache *c;
    struct loader l = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    CHECK_EQ_INT(tdb_cache_create(&c, 1 << 20), 0);
    struct tdb_cache_key k = {1, 2, 3};
    struct tdb_cache_entry *e;
    const struct tdb_tile *t;
    CHECK_EQ_INT(tdb_cache_get(c, &k, load_tile, &l, &e, &t, NULL), 0);
    CHECK_EQ_INT(t->data[999], 3);
    tdb_cache_release(c, e);
    CHECK_EQ_INT(tdb_cache_get(c, &k, load_tile, &l, &e, &t, NULL), 0);
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
    CHECK_EQ_INT(tdb_cache_get(c, &k0, load_tile, &l, &pinned, &pt, NULL), 0);
    for (uint64_t i = 1; i <= 10; i++) {
        struct tdb_cache_key k = {0, 0, i};
        CHECK_EQ_INT(tdb_cache_get(c, &k, load_tile, &l, &e, &t, NULL), 0);
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
    CHECK_EQ_INT(tdb_cache_get(c, &k0, load_tile, &l, &e, &t, NULL), 0);
    CHECK_EQ_INT(l.calls, calls);
    tdb_cache_release(c, e);
    tdb_cache_release(c, pinned);
    /* the most recent tile stayed; the oldest unpinned went */
    struct tdb_cache_key k10 = {0, 0, 10}, k1 = {0, 0, 1};
    CHECK_EQ_INT(tdb_cache_get(c, &k10, load_tile, &l, &e, &t, NULL), 0);
    tdb_cache_release(c, e);
    CHECK_EQ_INT(l.calls, calls);
    CHECK_EQ_INT(tdb_cache_get(c, &k1, load_tile, &l, &e, &t, NULL), 0);
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
    CHECK_EQ_INT(tdb_cache_get(c, &k, load_tile, &l, &e, &t, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "tile 9") != NULL);
    CHECK_EQ_INT(tdb_cache_get(c, &k, load_tile, &l, &e, &t, &err), 0);
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
    if (!tdb_cache_get(r->c, &k, load_tile, r->l, &e, &t, NULL)) {
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
        CHECK_EQ_INT(tdb_cache_get(c, &k, load_tile, &l, &e[i], &t, NULL), 0);
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
    CHECK_EQ_INT(tdb_cache_get(c, &k0, load_tile, &l, &e[0], &t, NULL), 0);
    CHECK_EQ_INT(t->data[0], 0);
    tdb_cache_release(c, e[0]);
    CHECK_EQ_INT(l.calls, 4);
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
        CHECK_EQ_INT(tdb_cache_get(c, &k, load_tile, &l, &e[i], &t, NULL), 0);
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

int main(void)
{
    RUN(test_hit_after_miss);
    RUN(test_budget_and_pins);
    RUN(test_failure_not_cached);
    RUN(test_single_flight);
    RUN(test_drop_and_hold);
    RUN(test_peak);
    return unit_done();
}
