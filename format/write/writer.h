/* writer.h: the write side's internals: the builder of fragment metadata
 * (fragmeta_write.c), and the writer's entry for consolidated fragments
 * (writer.c).  The public write API (creating arrays, writing
 * fragments and metadata) is tiledb_format_write.h. */
#ifndef TDB_WRITER_H
#define TDB_WRITER_H

#include "tiledb_format_write.h"
#include "core/core.h"
#include "core/names.h"
#include "model/schema.h"

/* `payload` as one generic tile of CHAR cells as TileDB writes a file
 * of one (schemas, metadata, consolidated lists): GZIP level 1, then
 * AES-256-GCM when key is non-NULL.  Appended to out (create.c). */
int tdb_write_generic_tile(const struct tdb_buf *payload, const uint8_t *key,
                           struct tdb_buf *out, struct tdb_error *err);

/* Writes schema s (checked first) as __schema/__t_t_<uuid>, t being
 * timestamp_ms, its name in *name (caller frees), after the files of its
 * enumerations marked unwritten (the others exist).  create.c. */
int tdb_schema_publish(const struct tdb_io *io, const struct tdb_schema *s,
                       const uint8_t *key, uint64_t timestamp_ms, char **name,
                       struct tdb_error *err);

/* Applies an evolution (docs/SCHEMA.md "Evolution": add_enumerations,
 * extend_enumerations, drop_attributes, add_attributes,
 * expand_current_domain, in that order) to schema s, in place (its
 * enumerations' values loaded); err names the offending key.
 * schema_json.c. */
int tdb_schema_evolve_json(struct tdb_schema *s, const char *text, size_t len,
                           struct tdb_error *err);

/* The delete condition `text` (TileDB-Py's QueryCondition syntax, see
 * tdb_delete_commit) checked against schema s, negated and serialized as
 * TileDB stores it in a delete commit (delete_commit_file.md), appended
 * to out; err says what is wrong with the text.  delete.c. */
int tdb_delete_condition(const struct tdb_schema *s, const char *text,
                         size_t len, struct tdb_buf *out,
                         struct tdb_error *err);

/* ------------------------------------------ consolidated fragments */

/* What TileDB's fragment consolidation stores in a sparse fragment beside
 * the cells (format_spec/fragment.md t.tdb, dt.tdb, dci.tdb and the
 * processed conditions).  Each special field is staged as a file of one
 * little-endian u64 per cell named as TileDB names the field:
 * __timestamps (when the cell was written), __delete_timestamps (when a
 * processed delete removed it; UINT64_MAX: none did) and
 * __delete_condition_index (which of `processed` that was; UINT64_MAX:
 * none).  With timestamps, cells of equal coordinates may repeat (every
 * version is kept) in their staged order.  Nothing the mount stages
 * reaches this: it is how the tests build what a consolidation writes
 * (tdb_fragment_write with rq->extras). */
struct tdb_write_extras {
    uint64_t t1;                /* the name's first timestamp (0: the last) */
    bool timestamps;
    bool delete_meta;
    const char *const *processed;   /* delete commits, as TileDB names them
                                     * ("__commits/NAME.del"), sorted */
    size_t nprocessed;
    /* A consolidation: the name's last timestamp is timestamp_ms exactly
     * (not moved past the committed fragments), and a dense fragment's
     * region is rlo..rhi (offsets from the domain's low bounds; NULL:
     * __subarray.json or the view region, as staged). */
    bool exact_time;
    const uint64_t *rlo, *rhi;
    /* Called with the fragment's name before anything of it is written
     * (NULL: not called); a failure stops the write. */
    int (*named)(void *arg, const char *name, struct tdb_error *err);
    void *named_arg;
};

/* ------------------------------------------- fragment metadata (v22) */

/* A __fragment_metadata.tdb being built (fragmeta_write.c).  Fields are
 * numbered as in the fragment: attributes of `s` in order, then its
 * dimensions. */
struct tdb_fmw;

int tdb_fmw_create(struct tdb_fmw **out, const struct tdb_schema *s,
                   const char *schema_name, bool dense,
                   struct tdb_error *err);
void tdb_fmw_free(struct tdb_fmw *w);

/* A tile's decoded contents: `size` bytes of data in `ncells` cells (0
 * for a fixed-size field: as many as the bytes hold); `offsets`
 * (var-sized fields: one per cell, relative, first 0) and `validity`
 * (nullable) may be NULL. */
struct tdb_fmw_tile {
    const uint8_t *data;
    uint64_t size;
    const uint64_t *offsets;
    uint64_t ncells;
    const uint8_t *validity;
};

/* Where a tile's filtered bytes start in its field's files: the values or
 * offsets file, the var file (and the tile's decoded var size), the
 * validity file. */
struct tdb_fmw_where {
    uint64_t off, var_off, var_size, validity_off;
};

/* Records the next tile of field `field`: where it is, and its contents,
 * from which its min, max, sum and null count are computed as TileDB
 * computes them. */
int tdb_fmw_add_tile(struct tdb_fmw *w, uint32_t field,
                     const struct tdb_fmw_where *at,
                     const struct tdb_fmw_tile *t, struct tdb_error *err);

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
                       const struct tdb_fmw_tile *t, struct tdb_fmw_stats *st,
                       struct tdb_error *err);
int tdb_fmw_add_tile_stats(struct tdb_fmw *w, const struct tdb_fmw_where *at,
                           const struct tdb_fmw_stats *st,
                           struct tdb_error *err);

/* A sparse fragment's special fields and processed delete conditions
 * (struct tdb_write_extras), set before any tile: the fields take the
 * numbers after the dimensions in the order __timestamps,
 * __delete_timestamps, __delete_condition_index (those asked for); each
 * is UINT64 with one value per cell and tile metadata as an attribute's.
 * @return 0, TDB_E_INVAL (dense, or tiles already added) or
 * TDB_E_NOMEM. */
int tdb_fmw_set_extras(struct tdb_fmw *w, const struct tdb_write_extras *x,
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

#endif
