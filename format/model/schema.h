/* schema.h: array schemas of every format version (format_spec/
 * array_schema.md, enumeration.md, current_domain.md), and the set of
 * schemas of an array (schema evolution). */
#ifndef TDB_SCHEMA_H
#define TDB_SCHEMA_H

#include "core/core.h"
#include "filters/filter.h"

/* The most dimensions of an array the engine reads or writes. */
#define TDB_MAX_DIMS 32

struct tdb_dim {
    char *name;
    unsigned type;
    uint32_t cell_val_num;      /* 1, or TDB_VAR_NUM for string dims */
    struct tdb_pipeline filters;
    /* fixed-sized dims: domain lo, hi and extent, tdb_dt_size(type) bytes
     * each, zero-padded to 8 */
    uint8_t lo[8], hi[8];
    bool has_extent;
    uint8_t extent[8];
};

struct tdb_attr {
    char *name;
    unsigned type;
    uint32_t cell_val_num;      /* TDB_VAR_NUM when var-sized */
    struct tdb_pipeline filters;
    uint8_t *fill;              /* fill value (default fill when the schema
                                 * has none: v<6) */
    uint64_t fill_size;
    bool nullable;
    uint8_t fill_validity;
    uint8_t order;              /* v17: 0 unordered, 1 increasing, 2 decr. */
    char *enumeration;          /* v20: enumeration name, or NULL */
};

struct tdb_label {              /* dimension labels: parsed, not shown */
    uint32_t dim;
    uint8_t order;
    char *name, *uri, *attr_name;
    bool relative, external;
    unsigned type;
    uint32_t cell_val_num;
};

struct tdb_enumeration {
    char *name;                 /* as in the schema */
    char *path;                 /* file under __schema/__enumerations */
    /* loaded by tdb_enumeration_load */
    unsigned type;
    uint32_t cell_val_num;
    bool ordered;
    uint8_t *data, *offsets;
    uint64_t data_size, offsets_size;
    bool unwritten;             /* its file is yet to be written (added or
                                 * extended by an evolution) */
};

/* One range of the current domain (fixed dims: lo/hi; var dims: bytes). */
struct tdb_range {
    uint8_t lo[8], hi[8];
    uint8_t *vlo, *vhi;         /* var-sized dims */
    uint64_t vlo_size, vhi_size;
};

struct tdb_schema {
    char *name;                 /* file name under __schema, or
                                 * "__array_schema.tdb" */
    uint64_t t1, t2;            /* from the name; 0,0 for the legacy file */
    uint32_t version;
    bool allows_dups;
    unsigned array_type;        /* TDB_DENSE / TDB_SPARSE */
    unsigned tile_order, cell_order;
    uint64_t capacity;
    struct tdb_pipeline coords_filters, offsets_filters, validity_filters;
    uint32_t ndims;
    struct tdb_dim *dims;
    uint32_t nattrs;
    struct tdb_attr *attrs;
    uint32_t nlabels;
    struct tdb_label *labels;
    uint32_t nenums;
    struct tdb_enumeration *enums;
    bool has_current_domain;    /* v22, non-empty NDRectangle */
    struct tdb_range *current_domain;   /* ndims entries */
    uint8_t encryption;         /* from the generic tile header */
};

/* Parses a schema from the decoded payload of its generic tile. */
int tdb_schema_parse(const uint8_t *p, size_t size, const char *what,
                     struct tdb_schema **out, struct tdb_error *err);

/* Reads and parses schema file `path` (a generic tile) of an array. */
int tdb_schema_load(const struct tdb_io *io, const char *path,
                    const uint8_t *key, struct tdb_schema **out,
                    struct tdb_error *err);

/* tdb_schema_free: tiledb_format_write.h (schemas are public there). */

/* Frees what attribute a holds and zeroes it. */
void tdb_attr_clear(struct tdb_attr *a);

/* Loads the data of enumeration e (file under __schema/__enumerations). */
int tdb_enumeration_load(const struct tdb_io *io, struct tdb_enumeration *e,
                         const uint8_t *key, struct tdb_error *err);

/* The payload of enumeration e's file (enumeration.md; to be wrapped in a
 * generic tile): its values must be loaded. */
int tdb_enumeration_serialize(const struct tdb_enumeration *e,
                              struct tdb_buf *out);

/* @return the index of attribute `name`, or -1. */
int tdb_schema_attr_index(const struct tdb_schema *s, const char *name);
int tdb_schema_dim_index(const struct tdb_schema *s, const char *name);

/* Serialises s as a version-22 schema payload (to be wrapped in a generic
 * tile). */
int tdb_schema_serialize(const struct tdb_schema *s, struct tdb_buf *out,
                         struct tdb_error *err);

/* The format version of a fragment (and of a delete commit) written
 * into an array whose newest schema is s: the schema's own version from
 * 16 to 22, as TileDB writes into an older array at its own version (the
 * fragment's files are laid out alike from 16 on; only the version and a
 * few filters differ), else 22 (the version schemas are written at). */
uint32_t tdb_schema_fragment_version(const struct tdb_schema *s);

/* ------------------------------------------------------ dimensions (dim.c) */

/* Offset of value v (tdb_dt_size(dim->type) bytes) from the domain's low
 * bound, for integer dims; and back. */
uint64_t tdb_dim_offset(const struct tdb_dim *d, const uint8_t *v);
void tdb_dim_value(const struct tdb_dim *d, uint64_t off, uint8_t *v);
/* Extent as a count of cells (integer dims), 0 when the dim has none. */
uint64_t tdb_dim_extent(const struct tdb_dim *d);
/* Number of cells in the domain of d (saturating at UINT64_MAX). */
uint64_t tdb_dim_span(const struct tdb_dim *d);
/* Cells of a space tile along d: the extent, or the whole domain when d
 * has none (integer dims). */
uint64_t tdb_dim_tile_span(const struct tdb_dim *d);

#endif
