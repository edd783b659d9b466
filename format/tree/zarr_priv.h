/* zarr_priv.h: what zarr.c (the store, its arrays and chunks) and
 * zarr_doc.c (their Zarr v2 and v3 documents) share. */
#ifndef TDB_ZARR_PRIV_H
#define TDB_ZARR_PRIV_H

#include "core/pool.h"
#include "tree/json.h"
#include "tree/zarr.h"

/* What an array of the store shows. */
enum zarr_kind {
    ZARR_ATTR,                  /* an attribute's values */
    ZARR_VALIDITY,              /* a nullable attribute's validity */
    ZARR_LABELS,                /* an enumerated attribute's values */
    ZARR_COORD,                 /* a dimension's coordinates */
    ZARR_DIMLABEL               /* a dimension label's values */
};

/* How a chunk holds its cells. */
enum zarr_enc {
    ZARR_FIXED,                 /* the values, chunk_bytes in all */
    ZARR_UTF8,                  /* numcodecs' VLenUTF8 */
    ZARR_BYTES                  /* numcodecs' VLenBytes */
};

struct zarr_arr {
    char *name;
    enum zarr_kind kind;
    enum zarr_enc enc;
    uint32_t idx;               /* the attribute, dimension or label */
    const struct tdb_enumeration *en;   /* ZARR_LABELS, enumerated ATTR */
    uint32_t nd;                /* axes: the dimensions (an attribute with
                                 * several numbers a cell: one more) */
    uint64_t shape[TDB_MAX_DIMS + 1], chunks[TDB_MAX_DIMS + 1];
    uint64_t grid[TDB_MAX_DIMS + 1];    /* chunks along each axis */
    uint64_t nchunks;
    uint64_t ncells;            /* cells of a chunk */
    uint64_t chunk_bytes;       /* ZARR_FIXED: the bytes of a chunk */
    uint32_t bytes_axis;        /* fixed strings of N > 1 bytes: N (v3
                                 * shows a last axis of N uint8) */
    bool col;                   /* order F: a column-major tile as it is */
    json_t *zarray, *zattrs;    /* v2 */
    json_t *zjson;              /* v3 */
    char **keys;                /* chunk keys, made on first listing */
    uint64_t *sizes;            /* var-sized: each chunk's size, 0 until
                                 * known (at most ZARR_SIZES_MAX chunks) */
};

#define ZARR_SIZES_MAX (UINT64_C(1) << 20)
/* Encoded var-sized chunks kept while they are read. */
#define ZARR_SLOTS 8
#define ZARR_SLOT_BYTES (UINT64_C(64) << 20)

struct zarr_slot {
    uint32_t k;
    uint64_t c;
    uint8_t *p;                 /* NULL: empty */
    size_t n;
    uint64_t used;              /* tick of its last read */
};

struct tdb_zarr {
    struct tdb_array *a;
    struct tdb_cells *view;
    uint32_t nd;
    uint64_t vlo[TDB_MAX_DIMS], vshape[TDB_MAX_DIMS], ext[TDB_MAX_DIMS];
    char *dimname[TDB_MAX_DIMS];
    struct tdb_zarr_label *labels;
    uint32_t nlabels;
    struct zarr_arr *v;
    uint32_t n;
    json_t *zgroup, *zattrs, *zmeta;    /* v2 */
    json_t *zjson;              /* v3 */
    pthread_mutex_t lock;       /* keys, sizes, slots, ahead */
    struct zarr_slot slot[ZARR_SLOTS];
    uint64_t tick;
    /* tiles decoded ahead of the reads (zarr.c "ahead") */
    struct tdb_pool *pool;      /* where they were queued */
    unsigned ahead;             /* jobs queued or running */
    pthread_cond_t idle;        /* ahead went to 0 */
};

/* Chunks after the one read from its start whose tiles are decoded ahead
 * (by the pool, only while the cache has room to spare). */
#define ZARR_AHEAD_CHUNKS 2

static inline bool zarr_bytes_type(unsigned t)
{
    return t == TDB_CHAR || t == TDB_STRING_ASCII || t == TDB_STRING_UTF8;
}

/* The enumeration of attribute `at` of s (one integer a cell), or NULL. */
const struct tdb_enumeration *zarr_enum_of(const struct tdb_schema *s,
                                           const struct tdb_attr *at);
/* The number of values of enumeration e. */
uint64_t zarr_enum_count(const struct tdb_enumeration *e);
/* Bytes [*at, *at + *n) of e's data hold value i (i < zarr_enum_count);
 * false when the offsets point outside the data. */
bool zarr_enum_value(const struct tdb_enumeration *e, uint64_t i,
                     uint64_t *at, uint64_t *n);
/* Appends value i of e to out as one word of CF's flag_meanings (a
 * string's bytes with spaces as '_', a number in decimal).
 * @return 0 or TDB_E_NOMEM. */
int zarr_enum_word(const struct tdb_enumeration *e, uint64_t i,
                   struct tdb_buf *out);

/* The array and attribute x shows the values of (an attribute of the
 * store's array, or a label's). */
static inline struct tdb_array *zarr_src(const struct tdb_zarr *z,
                                         const struct zarr_arr *x,
                                         uint32_t *attr)
{
    if (x->kind == ZARR_DIMLABEL) {
        *attr = z->labels[x->idx].attr;
        return z->labels[x->idx].arr;
    }
    *attr = x->idx;
    return z->a;
}

/* The documents of array x (v2 and v3).  @return 0 or TDB_E_NOMEM. */
int zarr_arr_docs(const struct tdb_zarr *z, struct zarr_arr *x);
/* The group's documents, after every array's.  @return 0 or TDB_E_NOMEM. */
int zarr_group_docs(struct tdb_zarr *z);

#endif
