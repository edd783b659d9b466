/* zarr.h: the __zarr folder of a dense array (docs/LAYOUT.md "__zarr"):
 * its view as one store that is a Zarr v2 and a Zarr v3 group, whose
 * arrays are the attributes (chunks: the space tiles; var-sized ones in
 * numcodecs' vlen encodings), their validity, the values of enumerated
 * ones and the dimensions' coordinates, every chunk made on demand
 * through the tile cache; and the __zarr folder of a group, whose members
 * are its arrays' stores. */
#ifndef TDB_ZARR_H
#define TDB_ZARR_H

#include "core/pool.h"
#include "read/view.h"

/* An array with more chunks than this is left out of the store. */
#define TDB_ZARR_MAX_CHUNKS (UINT64_C(1) << 32)
/* An array whose chunk would hold more bytes than this is left out; a
 * var-sized chunk larger than this is an error to read. */
#define TDB_ZARR_MAX_CHUNK_BYTES (UINT64_C(1) << 31)
/* A folder lists its chunk files when it has at most this many (every
 * chunk is there on lookup). */
#define TDB_ZARR_LIST_MAX 65536

struct tdb_zarr;

/* A dimension label of the store: the values of attribute `attr` of the
 * label's array `arr` (dense, one dimension over the labelled dimension's
 * domain) over `view`, its cells of the store's view along dimension
 * `dim` (both outlive the store). */
struct tdb_zarr_label {
    const char *name;
    uint32_t dim;
    struct tdb_array *arr;
    struct tdb_cells *view;
    uint32_t attr;
};

/* The Zarr store of dense view `view` (a plain row-major view: the
 * array's view region) of array a, with the dimension labels labels[0..n)
 * as coordinate arrays, nothing decoded.  *out is NULL when the view has
 * no array to show.  @return 0 or TDB_E_NOMEM. */
int tdb_zarr_open(struct tdb_zarr **out, struct tdb_array *a,
                  struct tdb_cells *view, const struct tdb_zarr_label *labels,
                  uint32_t nlabels, struct tdb_error *err);
void tdb_zarr_free(struct tdb_zarr *z);

/* The Zarr arrays, each a folder of the store. */
uint32_t tdb_zarr_narrays(const struct tdb_zarr *z);
const char *tdb_zarr_name(const struct tdb_zarr *z, uint32_t k);
uint64_t tdb_zarr_nchunks(const struct tdb_zarr *z, uint32_t k);
/* The size in bytes of chunk c of array k: var-sized ones take one pass
 * over the offsets of the tiles the chunk crosses (then kept).
 * Thread-safe.  @return 0 or an error reading them. */
int tdb_zarr_chunk_size(struct tdb_zarr *z, uint32_t k, uint64_t c,
                        uint64_t *size, struct tdb_error *err);

/* Metadata document `which` of the group (k < 0: .zgroup, .zattrs,
 * .zmetadata, zarr.json for which 0 to 3) or of array k (.zarray,
 * .zattrs, zarr.json for 0 to 2): *name and its text into out (a new
 * buffer).  @return 0, TDB_E_NOENT past the last, or TDB_E_NOMEM. */
int tdb_zarr_doc(const struct tdb_zarr *z, int k, int which,
                 const char **name, struct tdb_buf *out);

/* Chunk key "i.j..." of array k: its index (row-major over the chunk
 * grid).  @return false when key names no chunk. */
bool tdb_zarr_chunk_parse(const struct tdb_zarr *z, uint32_t k,
                          const char *key, uint64_t *c);
/* The key of chunk c, valid until tdb_zarr_free; NULL when the array has
 * more than TDB_ZARR_LIST_MAX chunks or memory is short. */
const char *tdb_zarr_chunk_key(struct tdb_zarr *z, uint32_t k, uint64_t c);

/* A read of bytes [off, off + len) of a chunk into buf; got is set to
 * the bytes the chunk has there. */
struct tdb_zarr_read {
    uint64_t off;
    void *buf;
    size_t len;
    size_t got;
};

/* Reads rd's bytes of chunk c of array k (rd->got: fewer only at its
 * end): the chunk's cells in the array's order, decoded through the tile
 * cache (var-sized chunks: encoded whole, kept while read).  A read from
 * a fixed-size chunk's start queues the tiles of the next
 * ZARR_AHEAD_CHUNKS chunks on pool (may be NULL: none) to be decoded
 * ahead, while the cache has room to spare.  Thread-safe. */
int tdb_zarr_chunk_read(struct tdb_zarr *z, uint32_t k, uint64_t c,
                        struct tdb_zarr_read *rd, struct tdb_pool *pool,
                        struct tdb_error *err);

/* ---------------------------------------------------------------- groups */

struct tdb_zarr_group;

/* The __zarr of a group whose array members named names[i] have stores
 * stores[i] (not owned; they outlive it) and whose metadata is m (may be
 * NULL).  @return 0 or TDB_E_NOMEM. */
int tdb_zarr_group_open(struct tdb_zarr_group **out,
                        struct tdb_zarr *const *stores,
                        const char *const *names, uint32_t n,
                        const struct tdb_meta *m, struct tdb_error *err);
void tdb_zarr_group_free(struct tdb_zarr_group *g);

/* Document `which` of the group (.zgroup, .zattrs, .zmetadata, zarr.json
 * for 0 to 3), as tdb_zarr_doc.  @return 0, TDB_E_NOENT past the last, or
 * TDB_E_NOMEM. */
int tdb_zarr_group_doc(const struct tdb_zarr_group *g, int which,
                       const char **name, struct tdb_buf *out);

#endif
