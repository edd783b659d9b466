/* cache.h: the decoded-tile cache: a byte-budgeted LRU keyed by
 * (fragment, field part, tile), with pins so that eviction never frees a
 * tile in use, single-flight loading so that two threads never decode the
 * same tile twice, and admission: a load that asks for it (TDB_CACHE_TRY,
 * TDB_CACHE_WAIT) starts only once its bytes fit in the budget beside
 * every tile held, pinned or being decoded.  A thread that waits for room
 * holds no pin (only keeps, which a waiter may free), so a wait always
 * ends: pins are let go without waiting. */
#ifndef TDB_CACHE_H
#define TDB_CACHE_H

#include "core/core.h"

/* A tile's key.  The cache only hashes and compares keys (and hands them
 * to the load); array.c makes part field << 8 | what of the field's tile
 * (array.h's TDB_PART_*: values, validity, offsets alone, or dimension d
 * of a legacy __coords file). */
struct tdb_cache_key {
    uint64_t frag;      /* the fragment's id (tdb_cache_frag_id) */
    uint64_t part;      /* field << 8 | TDB_PART_* */
    uint64_t tile;      /* the tile's number in the fragment */
};

/* A decoded tile: values, and for var-sized fields one uint64 offset per
 * cell (relative to data, first 0).  data_cap is the size of the block
 * data points to (malloc'ed, at least size bytes), 0 when unknown: a
 * block of known size goes to the cache's pool when the tile is freed,
 * for a later load to decode into (tdb_cache_req's size). */
struct tdb_tile {
    uint8_t *data;
    uint64_t size;
    uint64_t *offsets;
    uint64_t ncells;
    uint64_t data_cap;
};

/* Blocks smaller than this are freed, not pooled (malloc serves them from
 * memory it keeps anyway): a load may leave data_cap 0 for them. */
#define TDB_CACHE_POOL_MIN (64u << 10)

void tdb_tile_free(struct tdb_tile *t);

/* Fills *t for key; called with no lock held, at most once at a time per
 * key.  *t is zero but for a block the cache lends for the request's
 * `size`: t->data, t->data_cap bytes, to decode into (never to free or
 * realloc: a load that leaves t->data elsewhere gives it back).  The load
 * leaves in t->data_cap the size of the block t->data points to (or 0),
 * and on failure frees what it made of t or leaves it in t.
 * @return 0 or a TDB_E_* code (with err filled). */
typedef int (*tdb_cache_load_fn)(void *arg, const struct tdb_cache_key *key,
                                 struct tdb_tile *t, struct tdb_error *err);

struct tdb_cache;
struct tdb_cache_entry;

/* tdb_cache_create and tdb_cache_free are in tiledb_format.h. */

/* The number that stands for fragment `identity` (its folder's path from
 * the root of the I/O backend) in this cache's keys: the same identity
 * always gets the same number, so trees opened one after another over the
 * same source (a mount reopened after each write) share the tiles they
 * decoded.  Fragment folders never change once committed.
 * @return 0 or TDB_E_NOMEM. */
int tdb_cache_frag_id(struct tdb_cache *c, const char *identity,
                      uint64_t *id);

/* Flags of a request:
 * TDB_CACHE_NOWAIT  returns 1 (nothing pinned) instead of waiting for
 *                   another thread's load of the tile;
 * TDB_CACHE_PEEK    returns 1 instead of loading a tile that is not there;
 * TDB_CACHE_TRY     loads only when `need` bytes fit in the budget now,
 *                   beside what is pinned, kept, or being loaded, once
 *                   tiles no one holds are evicted, and no one waits for
 *                   room; else returns 1;
 * TDB_CACHE_WAIT    waits for that room, first come first served, also
 *                   evicting kept tiles (tdb_cache_keep); a `need` larger
 *                   than the budget is loaded once nothing else is held.
 *                   The caller must hold no pin of this cache;
 * TDB_CACHE_SPARE   with TRY, loads only while room for another load as
 *                   large is left (a tile decoded ahead of the reads
 *                   leaves room for the tiles a read asks for). */
#define TDB_CACHE_NOWAIT 1u
#define TDB_CACHE_PEEK 2u
#define TDB_CACHE_TRY 4u
#define TDB_CACHE_WAIT 8u
#define TDB_CACHE_SPARE 16u

struct tdb_cache_req {
    struct tdb_cache_key key;
    tdb_cache_load_fn load;
    void *arg;
    unsigned flags;
    uint64_t need;      /* the most bytes the load holds while it runs
                         * (the decoded tile and the bytes it decodes);
                         * counted until the tile's own size replaces it */
    uint64_t size;      /* the tile's data bytes when known (else 0): the
                         * load is handed a pooled block of size to twice
                         * size bytes when the pool has one, and need
                         * counts the block's whole size */
};

/* Finds or loads rq->key as rq->flags say and pins it; *tile points into
 * the entry until tdb_cache_release.  A failed load is not cached: the
 * next fetch tries again.  Without TRY or WAIT the load starts whatever
 * the budget (the cache then holds more than its budget until pins are
 * let go): for callers that hold other pins of this cache while they ask.
 * @return 0, 1 (nothing pinned: see the flags), or a TDB_E_* code. */
int tdb_cache_fetch(struct tdb_cache *c, const struct tdb_cache_req *rq,
                    struct tdb_cache_entry **entry,
                    const struct tdb_tile **tile, struct tdb_error *err);

void tdb_cache_release(struct tdb_cache *c, struct tdb_cache_entry *e);
/* One more pin of e (pinned already); tdb_cache_release lets it go. */
void tdb_cache_hold(struct tdb_cache *c, struct tdb_cache_entry *e);
/* With TDB_CACHE_DROP, once the cache is more than half full, the tile is
 * freed at once when no one else holds or keeps it (a sequential reader
 * has passed it: keeping it would only push out tiles that may be read
 * again, and reusing its memory spares the kernel zeroing new pages). */
#define TDB_CACHE_DROP 1u
/* With TDB_CACHE_DROP: the tile is freed at once however full the cache
 * is (a reader going through a file larger than the cache). */
#define TDB_CACHE_DROP_NOW 2u
void tdb_cache_release_flags(struct tdb_cache *c, struct tdb_cache_entry *e,
                             unsigned flags);

/* Turns the caller's pin of e into a keep: the tile stays in the cache
 * ahead of the LRU order, but a TDB_CACHE_WAIT that finds no other room
 * frees it (e itself stays valid, for tdb_cache_unkeep, and a later get
 * loads the tile again).  A reader keeps the tiles it will read. */
void tdb_cache_keep(struct tdb_cache *c, struct tdb_cache_entry *e);
/* Lets a keep of e go (flags: TDB_CACHE_DROP as for a release). */
void tdb_cache_unkeep(struct tdb_cache *c, struct tdb_cache_entry *e,
                      unsigned flags);

/* Working memory for one decode (filters/filter.h), from the cache's free
 * list (NULL when out of memory: decode without); give it back with
 * tdb_cache_scratch_put.  Between decodes the list keeps buffers of at
 * most a sixteenth of the budget in all (and 8 MiB each). */
struct tdb_scratch;
struct tdb_scratch *tdb_cache_scratch_get(struct tdb_cache *c);
void tdb_cache_scratch_put(struct tdb_cache *c, struct tdb_scratch *s);

/* The pool: blocks of freed tiles' data (of 64 KiB and more) that the
 * loads of tiles of about their size decode into instead of fresh memory
 * the kernel has to fault in and zero.  Pooled bytes count in `used`
 * (tdb_cache_stats' `pooled` of them) and are freed before any tile is
 * evicted to make room. */
void tdb_cache_stats(struct tdb_cache *c, struct tdb_cache_stats *st);

/* The most bytes the cache counted at once (tdb_cache_stats' `used`:
 * decoded tiles, pinned, kept or not, the `need` of loads under way and
 * the pool)
 * since it was created or last reset; with `reset`, counting starts again
 * from what it holds now. */
uint64_t tdb_cache_peak(struct tdb_cache *c, bool reset);

#endif
