/* cache.h: the decoded-tile cache: a byte-budgeted LRU keyed by
 * (fragment, field part, tile), with pins so that eviction never frees a
 * tile in use and single-flight loading so that two threads never decode
 * the same tile twice. */
#ifndef TDB_CACHE_H
#define TDB_CACHE_H

#include "core/core.h"

struct tdb_cache_key {
    uint64_t frag;      /* the fragment's id (tdb_cache_frag_id) */
    uint64_t part;      /* field * 4 + part (values, validity, ...) */
    uint64_t tile;
};

/* A decoded tile: values, and for var-sized fields one uint64 offset per
 * cell (relative to data, first 0). */
struct tdb_tile {
    uint8_t *data;
    uint64_t size;
    uint64_t *offsets;
    uint64_t ncells;
};

void tdb_tile_free(struct tdb_tile *t);

/* Fills *t for key; called with no lock held, at most once at a time per
 * key.  @return 0 or a TDB_E_* code (with err filled). */
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

/* Finds or loads the tile for key and pins it; *tile points into the
 * entry until tdb_cache_release.  A failed load is not cached: the next
 * get tries again. */
int tdb_cache_get(struct tdb_cache *c, const struct tdb_cache_key *key,
                  tdb_cache_load_fn load, void *arg,
                  struct tdb_cache_entry **entry, const struct tdb_tile **tile,
                  struct tdb_error *err);

/* tdb_cache_get with flags: TDB_CACHE_NOWAIT returns 1 (nothing pinned)
 * instead of waiting for another thread's load of the tile, TDB_CACHE_PEEK
 * returns 1 instead of loading a tile that is not there. */
#define TDB_CACHE_NOWAIT 1u
#define TDB_CACHE_PEEK 2u
int tdb_cache_get_flags(struct tdb_cache *c, const struct tdb_cache_key *key,
                        tdb_cache_load_fn load, void *arg, unsigned flags,
                        struct tdb_cache_entry **entry,
                        const struct tdb_tile **tile, struct tdb_error *err);

void tdb_cache_release(struct tdb_cache *c, struct tdb_cache_entry *e);
/* One more pin of e (pinned already); tdb_cache_release lets it go. */
void tdb_cache_hold(struct tdb_cache *c, struct tdb_cache_entry *e);
/* With TDB_CACHE_DROP, once the cache is more than half full, the tile is
 * freed at once when no one else holds it (a sequential reader has passed
 * it: keeping it would only push out tiles that may be read again, and
 * reusing its memory spares the kernel zeroing new pages). */
#define TDB_CACHE_DROP 1u
void tdb_cache_release_flags(struct tdb_cache *c, struct tdb_cache_entry *e,
                             unsigned flags);

/* Working memory for one decode (filters/filter.h), from the cache's free
 * list (NULL when out of memory: decode without); give it back with
 * tdb_cache_scratch_put. */
struct tdb_scratch;
struct tdb_scratch *tdb_cache_scratch_get(struct tdb_cache *c);
void tdb_cache_scratch_put(struct tdb_cache *c, struct tdb_scratch *s);

void tdb_cache_stats(struct tdb_cache *c, struct tdb_cache_stats *st);

/* The most bytes of decoded tiles (tdb_cache_stats' `used`: pinned or
 * not) the cache held at once since it was created or last reset; with
 * `reset`, counting starts again from what it holds now.  Tiles being
 * decoded count once their decode ends. */
uint64_t tdb_cache_peak(struct tdb_cache *c, bool reset);

#endif
