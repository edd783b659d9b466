/* rawtile.h: where the bytes of an unfiltered tile lie in its data file.
 * A tile without filters is stored as its chunks, each a 12-byte header
 * and the tile's next bytes as they are: a read of them can be answered
 * from the file itself (splice) instead of from a decoded copy. */
#ifndef TDB_RAWTILE_H
#define TDB_RAWTILE_H

#include "read/array.h"

struct tdb_raw_tile {
    char *path;         /* the data file, relative to the array */
    uint64_t n;         /* chunks */
    uint64_t *off;      /* chunk k's bytes start at off[k] in the file */
    uint64_t *end;      /* and end at tile byte end[k] (end[n-1]: size) */
};

/* The chunks of tile k, whose decoded size is `size` bytes, read from
 * their headers.  @return 0, 1 when the
 * tile is not stored as it reads (filters, or headers that do not add up
 * to `size` unfiltered bytes: the decoding path says why), or a TDB_E_*
 * code of the storage. */
int tdb_raw_tile_map(const struct tdb_tile_ref *k, uint64_t size,
                     struct tdb_raw_tile *out, struct tdb_error *err);
void tdb_raw_tile_free(struct tdb_raw_tile *m);

/* The chunk of m holding tile byte b (< m->end[m->n - 1]). */
uint64_t tdb_raw_tile_chunk(const struct tdb_raw_tile *m, uint64_t b);

#endif
