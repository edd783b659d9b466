/* array.h: an opened array (schemas, live fragments, metadata, delete
 * commits at an open timestamp range) and access to one fragment's tiles
 * through the tile cache (format_spec/fragment.md: data files). */
#ifndef TDB_ARRAY_H
#define TDB_ARRAY_H

#include "core/core.h"
#include "model/arraydir.h"
#include "read/cache.h"
#include "model/delcond.h"
#include "model/fragmeta.h"
#include "model/meta.h"
#include "model/schema.h"
#include "model/schemas.h"

/* Parts of a field's tile in the cache key (key.part = field << 8 | part). */
/* TDB_PART_OFFSETS: a var-sized field's offsets alone (the values are not
 * decoded; tile->size is the values' size from the fragment metadata). */
enum { TDB_PART_VALUES = 0, TDB_PART_VALIDITY = 1, TDB_PART_OFFSETS = 2,
       TDB_PART_LEGACY_DIM = 16 };

struct tdb_array;

struct tdb_frag {
    struct tdb_array *arr;
    uint64_t uid;               /* cache key: tdb_cache_frag_id of its path */
    size_t index;               /* position in arr->frags (oldest first) */
    struct tdb_fragmeta *fm;
    const struct tdb_schema *fs;/* the fragment's own schema */
    /* dense geometry: space tiles covering the non-empty domain */
    uint64_t tile_cells;
    uint64_t ext[TDB_MAX_DIMS];  /* cells of a space tile along each dim */
    uint64_t ned_lo[TDB_MAX_DIMS], ned_hi[TDB_MAX_DIMS];   /* offsets */
    uint64_t tile_lo[TDB_MAX_DIMS], ntiles[TDB_MAX_DIMS];
    uint64_t ncells;            /* cells stored */
    int *attr_field;            /* per array attribute: fragment field, -1 */
    int dim_field[TDB_MAX_DIMS];
    bool legacy_coords;         /* < v5: one __coords field */
    bool zipped;                /* legacy coords zipped */
};

struct tdb_array {
    struct tdb_io io;           /* rooted at the array folder */
    uint8_t key[32];
    bool has_key;
    uint64_t ts_start, ts_end;
    unsigned threads;           /* opts.threads: for sparse merges */
    uint64_t merge_range_cells; /* opts.merge_range_cells */
    struct tdb_arraydir *dir;
    struct tdb_schema_set schemas;
    const struct tdb_schema *schema;    /* the schema in force */
    bool encrypted;
    size_t nfrags;
    struct tdb_frag *frags;     /* live, oldest first (newest wins) */
    struct tdb_meta *meta;
    size_t nconds;
    struct tdb_cond **conds;
    struct tdb_dir_entry *cond_ents;    /* names and timestamps */
    struct tdb_cache *cache;    /* shared, not owned */
    uint64_t newest_ts;
};

/* Opens the array at folder `path` of `parent` (""), using `cache` for
 * tiles: a fragment's tiles are keyed by its folder's path from the root of
 * `parent`, so arrays opened again over the same source share them.  What
 * it asked `parent` for ahead and did not read may still be on its way when
 * it returns: the tree settles the storage once every member is open. */
int tdb_array_open(struct tdb_array **out, const struct tdb_io *parent,
                   const char *path, const struct tdb_open_options *o,
                   struct tdb_cache *cache, struct tdb_error *err);
void tdb_array_close(struct tdb_array *a);

/* The key to use for data tiles (NULL unless encrypted). */
const uint8_t *tdb_array_key(const struct tdb_array *a);

/* Number of cells in tile t of fragment f. */
uint64_t tdb_frag_tile_cells(const struct tdb_frag *f, uint64_t t);
/* The fragment tile holding cell c, and its first cell. */
uint64_t tdb_frag_tile_of(const struct tdb_frag *f, uint64_t c,
                          uint64_t *first);
/* The first cell tile_of maps to tile t. */
uint64_t tdb_frag_tile_first(const struct tdb_frag *f, uint64_t t);
/* The cells tile_of maps to tile t (its cells, no more than tile_of
 * gives a tile). */
uint64_t tdb_frag_tile_span(const struct tdb_frag *f, uint64_t t);

/* A tile of a fragment's field: tile t of fragment field `field`, cache
 * part `part` (TDB_PART_*). */
struct tdb_tile_ref {
    struct tdb_frag *f;
    int field;
    unsigned part;
    uint64_t t;
};

static inline bool tdb_tile_ref_same(const struct tdb_tile_ref *a,
                                     const struct tdb_tile_ref *b)
{
    return a->t == b->t && a->f == b->f && a->field == b->field &&
           a->part == b->part;
}

/* Pins decoded tile k (*e: its cache entry, give it back with
 * tdb_cache_release).  @return 0 or the load's error. */
int tdb_frag_tile(const struct tdb_tile_ref *k, struct tdb_cache_entry **e,
                  const struct tdb_tile **tile, struct tdb_error *err);
/* Tile k the same way, with TDB_CACHE_* flags (cache.h; for TRY and WAIT the load's
 * need is the tile's size and filtered bytes, from the fragment
 * metadata): 1 when nothing was pinned. */
int tdb_frag_tile_flags(const struct tdb_tile_ref *k, unsigned flags,
                        struct tdb_cache_entry **e,
                        const struct tdb_tile **tile, struct tdb_error *err);

/* The byte ranges a tile's load reads (for fetching them ahead): at most
 * two (a var-sized field's offsets and values), paths relative to the
 * array (free each), ranges the offsets make no sense of left out.
 * @return their number, or a TDB_E_* code (the tile offsets could not be
 * loaded). */
struct tdb_tile_range {
    char *path;
    uint64_t off, len;
};
int tdb_frag_tile_ranges(struct tdb_frag *f, int field, unsigned part,
                         uint64_t t, struct tdb_tile_range out[2],
                         struct tdb_error *err);

/* True when the values of fixed-size field `field` (part: TDB_PART_VALUES)
 * are stored unfiltered: a tile is its bytes, cut in chunks (rawtile.h). */
bool tdb_frag_field_unfiltered(const struct tdb_frag *f, int field,
                               unsigned part);

/* Dense fragments: fragment cell number of the cell at offsets o[] (inside
 * the fragment's tile box). */
uint64_t tdb_frag_dense_cell(const struct tdb_frag *f, const uint64_t *o);

#endif
