/* fragmeta.h: fragment metadata of every format version (format_spec/
 * fragment.md: footer, R-tree, tile offsets and sizes, tile metadata;
 * the legacy layout before version 3; consolidated fragment metadata). */
#ifndef TDB_FRAGMETA_H
#define TDB_FRAGMETA_H

#include "core/core.h"
#include "model/schema.h"
#include <pthread.h>

/* Field numbering inside a fragment (as TileDB numbers its files):
 *   [0, nattrs)                 attributes in schema order (a<i>.tdb)
 *   nattrs + j                  dimension j (d<j>.tdb); before version 5
 *                               a single field, the zipped or unzipped
 *                               coordinates (__coords.tdb)
 *   then, when present:         timestamps (t.tdb), delete timestamps
 *                               (dt.tdb), delete condition index (dci.tdb)
 */
enum tdb_field_kind { TDB_FIELD_ATTR, TDB_FIELD_DIM, TDB_FIELD_COORDS,
                      TDB_FIELD_TIMESTAMPS, TDB_FIELD_DELETE_TS,
                      TDB_FIELD_DELETE_IDX };

/* What the fragment stores about one field's tiles (loaded on demand). */
struct tdb_field_tiles {
    bool loaded;
    uint64_t ntiles;
    uint64_t *offsets;          /* file offset of each tile */
    uint64_t *var_offsets;      /* var-sized: offset of each var tile */
    uint64_t *var_sizes;        /* var-sized: decoded size of each var tile */
    uint64_t *validity_offsets; /* nullable: offset of each validity tile */
    /* Tile metadata (v11+); NULL where absent. */
    uint64_t *null_counts;
};

/* A non-empty domain or MBR: one range per dimension. */
struct tdb_ndrange {
    struct tdb_range *r;        /* ndims entries (struct from schema.h) */
};

struct tdb_fragmeta {
    char *name;                 /* timestamped name (folder name) */
    char *path;                 /* folder, relative to the array root */
    uint64_t t1, t2;
    uint32_t version;           /* footer's (or name's) format version */
    const struct tdb_schema *schema;    /* the schema it was written with */
    char *schema_name;          /* v10+ */
    bool dense;
    bool ned_null;
    struct tdb_range *ned;      /* non-empty domain, schema->ndims ranges */
    uint64_t sparse_tile_num;
    uint64_t last_tile_cell_num;
    bool has_timestamps;        /* v14 */
    bool has_delete_meta;       /* v15 */
    uint32_t nfields;
    enum tdb_field_kind *kinds; /* nfields */
    char **file_names;          /* "a0.tdb", "d1.tdb", "__coords.tdb", ... */
    uint64_t *file_sizes, *file_var_sizes, *file_validity_sizes;
    /* Offsets of generic tiles in __fragment_metadata.tdb (v3+). */
    uint64_t rtree_off;
    uint64_t *gt_tile_offsets, *gt_var_offsets, *gt_var_sizes,
        *gt_validity_offsets, *gt_mins, *gt_maxs, *gt_sums, *gt_null_counts;
    uint64_t gt_frag_mins_maxs, gt_processed_conditions;
    /* R-tree leaves: one MBR per sparse tile (sparse fragments). */
    uint64_t nmbrs;
    struct tdb_range *mbrs;     /* nmbrs * ndims ranges */
    /* Processed delete conditions (v16): names of .del files, loaded by
     * tdb_fragmeta_load_processed. */
    uint64_t nprocessed;
    char **processed;
    bool processed_loaded;
    /* Lazily loaded per-field tile info; guarded by lock. */
    struct tdb_field_tiles *tiles;
    pthread_mutex_t lock;
    /* For legacy (< v3) metadata everything is loaded at once. */
    const uint8_t *key;
    const struct tdb_io *io;
    /* Added by fragmeta.c (per field, nfields entries unless noted). */
    uint32_t name_version;      /* version implied by the name (2, 4, v) */
    uint32_t *disk;             /* index in the footer's per-field lists */
    uint32_t *index;            /* attribute / dimension index in schema */
    bool *is_var, *is_nullable;
    char **file_var_names;      /* "a1_var.tdb"; NULL for fixed fields */
    char **file_validity_names; /* "a2_validity.tdb"; NULL if not nullable */
    char *meta_path;            /* path of __fragment_metadata.tdb */
    uint64_t footer_offset, footer_size;    /* own file (0 when given) */
    bool has_frag_mins_maxs;    /* gt_frag_mins_maxs is set (v12+) */
    bool rtree_loaded;
    uint8_t *rtree_data;        /* var-sized MBR bounds point in here */
};

/* The schemas an array has, for fragments to find theirs by name. */
struct tdb_schema_set {
    struct tdb_schema **v;      /* oldest first */
    size_t n;
};
const struct tdb_schema *tdb_schema_set_find(const struct tdb_schema_set *s,
                                             const char *name);

/* A fragment whose metadata to load, and where from. */
struct tdb_fragmeta_src {
    const struct tdb_io *io;
    const char *path;           /* the fragment's folder */
    const char *name;           /* its timestamped name (NULL: path's last
                                 * component) */
    const struct tdb_schema_set *schemas;   /* to choose its schema from */
    const uint8_t *key;         /* the array's key (NULL: none) */
    const uint8_t *footer;      /* the footer bytes taken from a
                                 * consolidated fragment metadata file
                                 * (NULL: read the fragment's own
                                 * __fragment_metadata.tdb) */
    size_t footer_size;
};

/* Loads the footer (and for versions < 3 everything) of the fragment src
 * names into a new *out (free with tdb_fragmeta_free).  The io, schemas
 * and key must outlive *out.  @return 0, or TDB_E_CORRUPT, TDB_E_NOENT
 * (no schema), TDB_E_UNSUPPORTED (a newer format), TDB_E_NOMEM, TDB_E_IO,
 * with err naming the file. */
int tdb_fragmeta_load(const struct tdb_fragmeta_src *src,
                      struct tdb_fragmeta **out, struct tdb_error *err);

/* Makes sure field f's tile offsets, var offsets and sizes, validity
 * offsets (and null counts where stored) are loaded.  Thread-safe. */
int tdb_fragmeta_load_field(struct tdb_fragmeta *fm, uint32_t f,
                            struct tdb_error *err);

/* Loads the processed delete conditions (format 16 on: a generic tile of
 * __fragment_metadata.tdb), if not yet done: what a read needs only when
 * the array has delete commits, so an open from consolidated footers
 * reads nothing of each fragment otherwise.  Not thread-safe: call it
 * before the fragment is shared. */
int tdb_fragmeta_load_processed(struct tdb_fragmeta *fm,
                                struct tdb_error *err);

/* Loads the R-tree (MBRs of sparse tiles), if not yet done.  Thread-safe. */
int tdb_fragmeta_load_rtree(struct tdb_fragmeta *fm, struct tdb_error *err);

/* The field number of attribute i / dimension j / the timestamps field;
 * -1 when the fragment has none (an attribute added by schema evolution
 * after the fragment was written is matched by name, not index). */
int tdb_fragmeta_attr_field(const struct tdb_fragmeta *fm,
                            const struct tdb_schema *array_schema,
                            uint32_t attr);
int tdb_fragmeta_dim_field(const struct tdb_fragmeta *fm, uint32_t dim);
int tdb_fragmeta_ts_field(const struct tdb_fragmeta *fm);

/* The delete timestamps field (dt.tdb) of a fragment consolidated with
 * delete metadata (format 15+, sparse only): one u64 per cell, when a
 * delete the fragment processed removed the cell (UINT64_MAX: none did);
 * -1 when the fragment has none.  The delete condition index (dci.tdb)
 * beside it only says which delete that was; readers need not load it. */
int tdb_fragmeta_delete_ts_field(const struct tdb_fragmeta *fm);

/* Number of cells the fragment stores (dense: whole tiles covering its
 * non-empty domain; sparse: (tiles-1) * capacity + last tile's cells). */
uint64_t tdb_fragmeta_cell_num(const struct tdb_fragmeta *fm);

/* Number of tiles of each field (dense: space tiles covering the non-empty
 * domain; sparse: sparse_tile_num). */
uint64_t tdb_fragmeta_tile_num(const struct tdb_fragmeta *fm);

void tdb_fragmeta_free(struct tdb_fragmeta *fm);

/* A consolidated fragment metadata file (__fragment_meta/NAME.meta): the
 * footers of many fragments. */
struct tdb_cons_fragmeta {
    size_t n;
    char **names;               /* fragment names (last path component) */
    uint64_t *offsets;          /* footer offsets within data */
    uint64_t *sizes;
    uint8_t *data;
    uint64_t data_size;
};
int tdb_cons_fragmeta_load(const struct tdb_io *io, const char *path,
                           const uint8_t *key, struct tdb_cons_fragmeta **out,
                           struct tdb_error *err);
void tdb_cons_fragmeta_free(struct tdb_cons_fragmeta *c);

#endif
