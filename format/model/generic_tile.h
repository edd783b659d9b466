/* generic_tile.h: generic tiles (format_spec/generic_tile.md), the
 * self-describing container of schemas, fragment metadata sections, array
 * metadata, group details and vacuum-style lists. */
#ifndef TDB_GENERIC_TILE_H
#define TDB_GENERIC_TILE_H

#include "core/core.h"

/* Where a generic tile is: at `off` of the bytes src[size] ... */
struct tdb_gt_bytes {
    const uint8_t *src;
    size_t size;
    uint64_t off;
};
/* ... or at `off` of file `path` of io. */
struct tdb_gt_file {
    const struct tdb_io *io;
    const char *path;
    uint64_t off;
};

/* Decodes the generic tile `at` into `out` (appended).  `*next` (when
 * next is not NULL) receives the offset just past the tile.  `key` is the
 * array's AES-256-GCM key (used when the tile says it is encrypted; NULL
 * then gives TDB_E_NOKEY).  `what` names the file for errors. */
int tdb_generic_tile_decode(const struct tdb_gt_bytes *at, const uint8_t *key,
                            const char *what, struct tdb_buf *out,
                            uint64_t *next, struct tdb_error *err);

/* Reads and decodes the generic tile `at` (a file's, named in errors by
 * its path), as tdb_generic_tile_decode does. */
int tdb_generic_tile_read(const struct tdb_gt_file *at, const uint8_t *key,
                          struct tdb_buf *out, uint64_t *next,
                          struct tdb_error *err);

/* Tells whether the generic tile at the start of `src` is encrypted. */
int tdb_generic_tile_encryption(const uint8_t *src, size_t size,
                                uint8_t *enc_type);

/* How a generic tile's payload is filtered: the pipeline (NULL: no
 * filters) and the cells it sees (their datatype and size; 0: 1). */
struct tdb_pipeline;
struct tdb_gt_filtering {
    const struct tdb_pipeline *p;
    unsigned datatype;
    uint64_t cell_size;
};

/* Writes `size` bytes as one generic tile (format version 22) filtered as
 * `f` says, encrypted when key is non-NULL.  Appends to out. */
int tdb_generic_tile_encode(const uint8_t *src, size_t size,
                            const struct tdb_gt_filtering *f,
                            const uint8_t *key, struct tdb_buf *out,
                            struct tdb_error *err);

#endif
