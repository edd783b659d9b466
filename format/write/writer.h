/* writer.h: writing TileDB arrays at format version 22 (what TileDB 2.29
 * writes): creating an array from a schema, writing a fragment from staged
 * files, writing array metadata; and the builder of fragment metadata. */
#ifndef TDB_WRITER_H
#define TDB_WRITER_H

#include "core/core.h"
#include "core/names.h"
#include "read/schema.h"

#define TDB_WRITE_VERSION 22

/* ------------------------------------------- fragment metadata (v22) */

/* A __fragment_metadata.tdb being built (fragmeta_write.c).  Fields are
 * numbered as in the fragment: attributes of `s` in order, then its
 * dimensions. */
struct tdb_fmw;

int tdb_fmw_create(struct tdb_fmw **out, const struct tdb_schema *s,
                   const char *schema_name, bool dense,
                   struct tdb_error *err);
void tdb_fmw_free(struct tdb_fmw *w);

/* Records the next tile of field `field`: where its filtered bytes start
 * in the field's files (values or offsets file `off`; var file `var_off`
 * and decoded var size `var_size`; validity file `validity_off`), and its
 * decoded contents, from which the tile's min, max, sum and null count are
 * computed as TileDB computes them.  `offsets` (var-sized fields: one per
 * cell, relative, first 0) and `validity` (nullable) may be NULL. */
int tdb_fmw_add_tile(struct tdb_fmw *w, uint32_t field, uint64_t off,
                     uint64_t var_off, uint64_t var_size,
                     uint64_t validity_off, const uint8_t *data,
                     uint64_t size, const uint64_t *offsets, uint64_t ncells,
                     const uint8_t *validity, struct tdb_error *err);

/* tdb_fmw_add_tile in two steps, so that threads can compute the metadata
 * of different tiles at once while one thread records them in order:
 * tdb_fmw_tile_stats checks tile `tile` of `field` (the arguments as for
 * tdb_fmw_add_tile) and computes its min, max, sum and null count into
 * *st; it only reads w (dense fragments: after tdb_fmw_set_ned), and for
 * CHAR and var-sized fields st->min / st->max point into data, which must
 * stay until the tile is recorded.  tdb_fmw_add_tile_stats records it with
 * its file offsets; tiles of a field are recorded in order (else
 * TDB_E_INVAL). */
struct tdb_fmw_stats {
    uint32_t field;
    uint64_t tile;
    const uint8_t *min, *max;
    uint64_t min_size, max_size;
    uint8_t nmin[8], nmax[8], sum[8];
    uint64_t nulls;
};

int tdb_fmw_tile_stats(const struct tdb_fmw *w, uint32_t field, uint64_t tile,
                       const uint8_t *data, uint64_t size,
                       const uint64_t *offsets, uint64_t ncells,
                       const uint8_t *validity, struct tdb_fmw_stats *st,
                       struct tdb_error *err);
int tdb_fmw_add_tile_stats(struct tdb_fmw *w, uint64_t off, uint64_t var_off,
                           uint64_t var_size, uint64_t validity_off,
                           const struct tdb_fmw_stats *st,
                           struct tdb_error *err);

/* The final sizes of field `field`'s files. */
int tdb_fmw_set_file_sizes(struct tdb_fmw *w, uint32_t field, uint64_t size,
                           uint64_t var_size, uint64_t validity_size);

/* The fragment's non-empty domain (schema->ndims ranges; var-sized dims
 * use vlo/vhi). */
int tdb_fmw_set_ned(struct tdb_fmw *w, const struct tdb_range *ned,
                    struct tdb_error *err);

/* Dense fragments: the order of the cells as written (TDB_ROW_MAJOR, the
 * default, or TDB_COL_MAJOR: a subarray write, whose tiles TileDB's metadata
 * covers slab by slab inside the region; TDB_GLOBAL_ORDER: whole tiles, as
 * global-order writes and consolidation do).  @return 0 or TDB_E_INVAL. */
int tdb_fmw_set_dense_layout(struct tdb_fmw *w, unsigned layout);

/* Sparse fragments: the MBR of the next tile (ndims ranges), in tile
 * order, and the tile count / cells of the last tile. */
int tdb_fmw_add_mbr(struct tdb_fmw *w, const struct tdb_range *mbr,
                    struct tdb_error *err);
void tdb_fmw_set_sparse_tiles(struct tdb_fmw *w, uint64_t ntiles,
                              uint64_t last_tile_cells);

/* The whole __fragment_metadata.tdb (generic tiles then the footer),
 * encrypted with key when non-NULL. */
int tdb_fmw_serialize(struct tdb_fmw *w, const uint8_t *key,
                      struct tdb_buf *out, struct tdb_error *err);

/* ------------------------------------------------------------ arrays */

/* Parses the "schema" object of __array.json (json.c writes it) into a
 * schema; names the offending key on error. */
int tdb_schema_from_json(const char *text, size_t len,
                         struct tdb_schema **out, struct tdb_error *err);

/* Checks a schema as TileDB checks a new one (schema_json.c): dimensions
 * (datatypes, domains, tile extents), dense-array rules, unique and
 * unreserved names, fill values, the current domain.  @return 0 or
 * TDB_E_INVAL with err naming the dimension or attribute and why. */
int tdb_schema_check(const struct tdb_schema *s, struct tdb_error *err);

/* Creates an empty array at the root of io (which must be an empty or
 * missing folder): __schema/<timestamped name>, __fragments, __commits,
 * __meta, __fragment_meta.  key non-NULL: an AES-256-GCM array. */
int tdb_array_create(const struct tdb_io *io, const struct tdb_schema *s,
                     const uint8_t *key, uint64_t timestamp_ms,
                     struct tdb_error *err);

/* Writes one array (or group) metadata file in folder `meta_dir`: a put of
 * `count` values of `type`, or a deletion when del is true. */
int tdb_meta_write(const struct tdb_io *io, const char *meta_dir,
                   const char *name, unsigned type, uint32_t count,
                   const void *value, bool del, const uint8_t *key,
                   uint64_t timestamp_ms, struct tdb_error *err);

/* ---------------------------------------------------------- fragments */

/* Writes one fragment into the array at the root of `io` from the files in
 * folder `staged_dir` of `staged` (named as the mount names data files:
 * values, NAME.offsets, NAME.validity, and for sparse arrays the dimension
 * files; dense arrays may add __subarray.json, the region as
 * [[lo, hi], ...], default the whole view region), with the schema's
 * filters, at timestamp_ms (0: now).  The commit file is written last, so
 * the fragment is wholly there or not at all.  On bad input returns
 * TDB_E_INVAL with err naming the staged file and why, and the array is
 * unchanged.  *name receives the new fragment's name (caller frees).
 *
 * Every staged file's size is checked against the others and the schema
 * before any content is read.  The tile work runs on one thread per
 * online CPU (tdb_fragment_write_threads).  Memory: a dense commit streams,
 * one space tile of one field per job (plus staged reads of at most
 * 4 MiB), at most 2 jobs per thread at once; a sparse commit holds every
 * dimension file in memory (to sort the cells into global order) plus 8
 * bytes per cell (16 with a Hilbert order), and jobs of one tile of
 * `capacity` cells of one field, at most 2 per thread at once.
 *
 * Crash safety: the staged folder gets a marker naming the fragment before
 * anything is written to the array; the commit file comes last.  Running
 * the commit again on the same folder after a crash at any point writes
 * the fragment exactly once (see tdb_fragment_clean, tdb_staged_remove).
 * Staged files that others could plant should be read through
 * tdb_io_posix_nofollow. */
int tdb_fragment_write(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, const uint8_t *key,
                       uint64_t timestamp_ms, char **name,
                       struct tdb_error *err);

/* tdb_fragment_write with the tile work (staged reads, tile metadata,
 * filters) on `threads` threads (0, as tdb_fragment_write does: one per
 * online CPU; 1: none, all in the calling thread) while the calling thread
 * appends the filtered tiles to the fragment's files in order.  Whatever
 * the count, the fragment's files are byte for byte the same and the
 * array's storage sees the same calls in the same order.  Memory: at most
 * 2 * threads jobs (one tile of one field each: its contents and filtered
 * bytes) at once, plus per thread the scratch of one tile. */
int tdb_fragment_write_threads(const struct tdb_io *io,
                               const struct tdb_io *staged,
                               const char *staged_dir, const uint8_t *key,
                               uint64_t timestamp_ms, unsigned threads,
                               char **name, struct tdb_error *err);

/* Removes the uncommitted fragment folder (its files, then itself) named
 * by the marker that tdb_fragment_write leaves in staged folder
 * `staged_dir`: what a commit killed before its commit file was written
 * left behind.  Only a folder whose name this writer recorded is touched;
 * any other fragment folder without a commit file may be another writer's
 * work in progress and is left alone.  *removed (when non-NULL) receives
 * the removed fragment's name, or NULL.  @return 0 or an error. */
int tdb_fragment_clean(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, char **removed,
                       struct tdb_error *err);

/* Removes committed staged folder `staged_dir` and its files, the marker
 * last, so that a removal cut short at any point still names the committed
 * fragment (a repeated commit writes nothing) or leaves nothing to commit.
 * Stops at the first failure.  @return 0 or an error. */
int tdb_staged_remove(const struct tdb_io *staged, const char *staged_dir,
                      struct tdb_error *err);

#endif
