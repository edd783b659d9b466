/* fragmeta_write.h: the parts of the builder of __fragment_metadata.tdb
 * (writer.h: tdb_fmw_*) that its three files share: the builder's state
 * (fragmeta_write.c), TileDB's tile metadata generator and the dense
 * tiler's slabs (fragmeta_write_md.c), and the file's layout: R-tree,
 * tile metadata lists, footer (fragmeta_write_file.c).  Internal to
 * them. */
#ifndef TDB_FRAGMETA_WRITE_H
#define TDB_FRAGMETA_WRITE_H

#include "write/writer.h"
#include "core/value.h"

/* How TileDB's tile metadata generator treats a datatype (the C++ type it
 * instantiates): numbers by their class, CHAR and STRING_ASCII as char,
 * BLOB and geometries as bytes, anything else not at all. */
enum fmw_kind {
    FMW_NONE, FMW_SIGNED, FMW_UNSIGNED, FMW_FLOAT, FMW_CHAR, FMW_BYTE
};

/* A growable list of u64. */
struct fmw_u64s {
    uint64_t *v;
    uint64_t n, cap;
};

/* One entry of the footer's per-field lists (disk order: attributes, the
 * legacy __coords slot, dimensions, then the special fields of a
 * consolidated fragment). */
struct fmw_field {
    unsigned type;
    uint32_t cvn;               /* cell_val_num (1 for __coords) */
    bool var, nullable, is_dim, is_coords;
    bool stores_tiles;          /* attributes; sparse dimensions */
    bool has_md;                /* TileDB keeps tile metadata (not dense
                                 * dimensions) */
    bool has_mm, has_sum;
    enum fmw_kind kind;
    unsigned vsize;             /* bytes of one value */
    uint64_t cell_size;         /* bytes per cell; 8 for var-sized */
    struct fmw_u64s offs, var_offs, var_sizes, val_offs, nulls;
    struct fmw_u64s min_sizes, max_sizes;   /* var-sized mins and maxes */
    struct tdb_buf mins, maxs;  /* fixed: cell_size per tile; var: bytes */
    struct tdb_buf sums;        /* 8 bytes per tile */
    uint64_t ntiles;
    uint64_t fsize, fvar, fval;
};

struct tdb_fmw {
    const struct tdb_schema *s;
    char *schema_name;
    bool dense;
    uint32_t nfields;           /* attrs + 1 + dims + special fields */
    struct fmw_field *f;
    bool has_ts, has_dm;        /* timestamps; delete metadata */
    char **processed;           /* processed delete conditions */
    size_t nprocessed;
    bool ned_set;
    struct tdb_range *ned;      /* ndims; var bounds owned */
    uint64_t nmbrs, mbr_cap;
    struct tdb_range *mbrs;     /* nmbrs * ndims; var bounds owned */
    uint64_t sparse_tiles, last_tile_cells;
    unsigned sub_layout;        /* dense: layout of the written cells */
};

/* The generator's class of datatype t. */
enum fmw_kind tdb_fmw_kind_of(unsigned t);
/* a < b in the generator's C++ type for `type` (both of its size). */
bool tdb_fmw_lt(unsigned type, const uint8_t *a, const uint8_t *b);
/* The generator's starting min (the type's maximum) and max (its
 * lowest), into 8 bytes each. */
void tdb_fmw_type_limits(unsigned type, uint8_t *min, uint8_t *max);
/* The type of the running sum of `type`: 0 int64, 1 uint64, 2 double. */
int tdb_fmw_sum_class(unsigned type);
/* Adds v to the 8-byte sum `s` of class cls as TileDB does; false when
 * it saturated (TileDB then stops adding for this run of cells). */
bool tdb_fmw_sum_add(int cls, uint8_t *s, struct tdb_num v);

/* TileDB's TileMetadataGenerator over one tile, fed slab by slab. */
struct fmw_gen {
    const struct fmw_field *f;
    const uint8_t *data;        /* fixed values, or var bytes */
    uint64_t size;
    const uint64_t *offsets;    /* var: per cell */
    const uint8_t *validity;
    uint64_t ncells;
    /* results */
    const uint8_t *min, *max;   /* NULL: not set */
    uint8_t nmin[8], nmax[8];   /* numeric min/max values */
    bool num_init;
    uint64_t min_size, max_size;
    uint8_t sum[8];
    uint64_t nulls;
};


/* The generator over cells [start, end) of a var-sized (fixed-size)
 * field's tile. */
void tdb_fmw_slab_var(struct fmw_gen *g, uint64_t start, uint64_t end);
void tdb_fmw_slab_fixed(struct fmw_gen *g, uint64_t start, uint64_t end);

/* Per dimension of a dense fragment: extent, and the non-empty domain and
 * its tiles relative to the domain's low end. */
struct fmw_dense {
    uint32_t nd;
    uint64_t ext[TDB_MAX_DIMS], lo[TDB_MAX_DIMS], hi[TDB_MAX_DIMS];
    uint64_t t0[TDB_MAX_DIMS], nt[TDB_MAX_DIMS];
    uint64_t tiles, cells_per_tile;
};


/* The dense fragment's geometry from its schema and non-empty domain. */
int tdb_fmw_dense_geometry(const struct tdb_fmw *w, struct fmw_dense *g,
                           struct tdb_error *err);
/* Runs the generator over the slabs TileDB's dense tiler visits in tile
 * `id` (tile order), for a write of the non-empty domain in the layout
 * w->sub_layout. */
void tdb_fmw_dense_slabs(const struct tdb_fmw *w, const struct fmw_dense *g,
                         uint64_t id, struct fmw_gen *gen, bool var);

/* The name of API field `field` (attributes, dimensions, then the special
 * fields). */
const char *tdb_fmw_field_name(const struct tdb_fmw *w, uint32_t field);

#endif
