/* zarr.h: the __zarr folder of a dense array (docs/LAYOUT.md "__zarr"):
 * its view as a Zarr v2 group whose arrays are the fixed-size attributes
 * (chunks: the space tiles), their validity and the dimensions'
 * coordinates, every chunk decoded on demand through the tile cache. */
#ifndef TDB_ZARR_H
#define TDB_ZARR_H

#include "read/view.h"

/* An array with more chunks than this is left out of the store. */
#define TDB_ZARR_MAX_CHUNKS (UINT64_C(1) << 32)
/* An array whose chunk would hold more bytes than this is left out. */
#define TDB_ZARR_MAX_CHUNK_BYTES (UINT64_C(1) << 31)
/* A folder lists its chunk files when it has at most this many (every
 * chunk is there on lookup). */
#define TDB_ZARR_LIST_MAX 65536

struct tdb_zarr;

/* The Zarr store of dense view `view` (a plain row-major view: the
 * array's view region) of array a, nothing decoded.  *out is NULL when
 * the view has no array to show.  @return 0 or TDB_E_NOMEM. */
int tdb_zarr_open(struct tdb_zarr **out, struct tdb_array *a,
                  struct tdb_cells *view, struct tdb_error *err);
void tdb_zarr_free(struct tdb_zarr *z);

/* The Zarr arrays, each a folder of the store. */
uint32_t tdb_zarr_narrays(const struct tdb_zarr *z);
const char *tdb_zarr_name(const struct tdb_zarr *z, uint32_t k);
uint64_t tdb_zarr_nchunks(const struct tdb_zarr *z, uint32_t k);
uint64_t tdb_zarr_chunk_bytes(const struct tdb_zarr *z, uint32_t k);

/* Metadata document `which` of the group (k < 0: .zgroup, .zattrs,
 * .zmetadata for which 0, 1, 2) or of array k (.zarray, .zattrs): *name
 * and its text into out (a new buffer).  @return 0, TDB_E_NOENT past the
 * last, or TDB_E_NOMEM. */
int tdb_zarr_doc(const struct tdb_zarr *z, int k, int which,
                 const char **name, struct tdb_buf *out);

/* Chunk key "i.j..." of array k: its index (row-major over the chunk
 * grid).  @return false when key names no chunk. */
bool tdb_zarr_chunk_parse(const struct tdb_zarr *z, uint32_t k,
                          const char *key, uint64_t *c);
/* The key of chunk c, valid until tdb_zarr_free; NULL when the array has
 * more than TDB_ZARR_LIST_MAX chunks or memory is short. */
const char *tdb_zarr_chunk_key(struct tdb_zarr *z, uint32_t k, uint64_t c);

/* Bytes [off, off + len) of chunk c of array k (*got: fewer only at its
 * end): the chunk's cells in the array's order, decoded through the tile
 * cache.  Thread-safe. */
int tdb_zarr_chunk_read(struct tdb_zarr *z, uint32_t k, uint64_t c,
                        uint64_t off, void *buf, size_t len, size_t *got,
                        struct tdb_error *err);

#endif
