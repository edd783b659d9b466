/* fragmeta_write.c: building __fragment_metadata.tdb at format version 22 (format_spec/fragment.md: R-tree, tile offsets, tile metadata, footer), byte for byte as TileDB 2.29 writes it. */
#include "write/writer.h"
#include "model/generic_tile.h"
#include "filters/filter.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define FMW_FANOUT 10u              /* TileDB's R-tree fanout */
#define FMW_GT_CHUNK 65536u         /* generic tiles: max chunk size */
#define FMW_GT_LEVEL 1              /* generic tiles: GZIP level 1 */
#define FMW_MAX_DIMS 64u

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
    bool has_md;                /* TileDB keeps tile metadata (not dense dims) */
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

/* ---------------------------------------------------------------- helpers */

static int fmw_push(struct fmw_u64s *l, uint64_t v)
{
    if (l->n == l->cap) {
        uint64_t cap = l->cap ? l->cap * 2 : 16;
        uint64_t *nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return TDB_E_NOMEM;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

static void fmw_u64s_free(struct fmw_u64s *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static enum fmw_kind fmw_kind_of(unsigned t)
{
    switch (t) {
    case TDB_INT8: case TDB_INT16: case TDB_INT32: case TDB_INT64:
        return FMW_SIGNED;
    case TDB_UINT8: case TDB_UINT16: case TDB_UINT32: case TDB_UINT64:
    case TDB_BOOL:
        return FMW_UNSIGNED;
    case TDB_FLOAT32: case TDB_FLOAT64:
        return FMW_FLOAT;
    case TDB_CHAR: case TDB_STRING_ASCII:
        return FMW_CHAR;
    case TDB_BLOB: case TDB_GEOM_WKB: case TDB_GEOM_WKT:
        return FMW_BYTE;
    default:
        if (t >= TDB_DATETIME_YEAR && t <= TDB_TIME_AS)
            return FMW_SIGNED;
        return FMW_NONE;
    }
}

/* Types without min/max or sum in TileDB's generator. */
static bool fmw_no_md_type(unsigned t)
{
    return t == TDB_ANY || t == TDB_BLOB || t == TDB_GEOM_WKB ||
           t == TDB_GEOM_WKT || t == TDB_STRING_UTF8 ||
           t == TDB_STRING_UTF16 || t == TDB_STRING_UTF32 ||
           t == TDB_STRING_UCS2 || t == TDB_STRING_UCS4;
}

static bool fmw_has_mm(unsigned t, bool is_dim, bool var, uint32_t cvn)
{
    bool str = t == TDB_CHAR || t == TDB_STRING_ASCII;
    if (is_dim || (var && !str) || (cvn != 1 && !str))
        return false;
    return !fmw_no_md_type(t);
}

static bool fmw_has_sum(unsigned t, bool var, uint32_t cvn)
{
    if (var || cvn != 1)
        return false;
    return !fmw_no_md_type(t) && t != TDB_STRING_ASCII;
}

/* A value loaded as its class: signed, unsigned or floating. */
struct fmw_num {
    int64_t i;
    uint64_t u;
    double d;
};

static struct fmw_num fmw_load(unsigned type, const uint8_t *p)
{
    struct fmw_num n = {0, 0, 0};
    unsigned size = tdb_dt_size(type);
    enum fmw_kind k = fmw_kind_of(type);
    if (k == FMW_FLOAT) {
        if (size == 4) {
            float f;
            uint32_t u = tdb_le32(p);
            memcpy(&f, &u, 4);
            n.d = f;
        } else {
            uint64_t u = tdb_le64(p);
            memcpy(&n.d, &u, 8);
        }
        return n;
    }
    uint64_t u = 0;
    for (unsigned b = 0; b < size && b < 8; b++)
        u |= (uint64_t)p[b] << (8 * b);
    if ((k == FMW_SIGNED || k == FMW_CHAR) && size < 8 &&
        (u >> (8 * size - 1)) & 1)
        u |= ~UINT64_C(0) << (8 * size);
    n.u = u;
    n.i = (int64_t)u;
    return n;
}

/* a < b in the class of `type`. */
static bool fmw_lt(unsigned type, const uint8_t *a, const uint8_t *b)
{
    struct fmw_num x = fmw_load(type, a), y = fmw_load(type, b);
    switch (fmw_kind_of(type)) {
    case FMW_FLOAT: return x.d < y.d;
    case FMW_UNSIGNED: return x.u < y.u;
    default: return x.i < y.i;
    }
}

/* The generator's starting min (the type's maximum) and max (its lowest). */
static void fmw_type_limits(unsigned type, uint8_t *min, uint8_t *max)
{
    unsigned size = tdb_dt_size(type);
    memset(min, 0, 8);
    memset(max, 0, 8);
    switch (fmw_kind_of(type)) {
    case FMW_FLOAT:
        if (size == 4) {
            float a = FLT_MAX, b = -FLT_MAX;
            uint32_t ua, ub;
            memcpy(&ua, &a, 4);
            memcpy(&ub, &b, 4);
            tdb_st32(min, ua);
            tdb_st32(max, ub);
        } else {
            double a = DBL_MAX, b = -DBL_MAX;
            uint64_t ua, ub;
            memcpy(&ua, &a, 8);
            memcpy(&ub, &b, 8);
            tdb_st64(min, ua);
            tdb_st64(max, ub);
        }
        break;
    case FMW_UNSIGNED:
        memset(min, 0xff, size);
        break;
    default:                    /* signed: 0x7f..ff and 0x80..00 */
        memset(min, 0xff, size);
        min[size - 1] = 0x7f;
        max[size - 1] = 0x80;
        break;
    }
}

/* The type of the running sum: 0 int64, 1 uint64, 2 double. */
static int fmw_sum_class(unsigned type)
{
    enum fmw_kind k = fmw_kind_of(type);
    return k == FMW_FLOAT ? 2 : k == FMW_UNSIGNED ? 1 : 0;
}

/* Adds v to the 8-byte sum `s` as TileDB does; false when it saturated
 * (TileDB then stops adding for this run of cells). */
static bool fmw_sum_add(int cls, uint8_t *s, struct fmw_num v)
{
    if (cls == 0) {
        int64_t a = (int64_t)tdb_le64(s), b = v.i;
        if (a > 0 && b > 0 && a > INT64_MAX - b) {
            tdb_st64(s, (uint64_t)INT64_MAX);
            return false;
        }
        if (a < 0 && b < 0 && a < INT64_MIN - b) {
            tdb_st64(s, (uint64_t)INT64_MIN);
            return false;
        }
        tdb_st64(s, (uint64_t)(a + b));
    } else if (cls == 1) {
        uint64_t a = tdb_le64(s);
        if (a > UINT64_MAX - v.u) {
            tdb_st64(s, UINT64_MAX);
            return false;
        }
        tdb_st64(s, a + v.u);
    } else {
        double a, b = v.d;
        uint64_t u = tdb_le64(s);
        memcpy(&a, &u, 8);
        if ((a < 0.0) == (b < 0.0) && fabs(a) > DBL_MAX - fabs(b)) {
            a = a < 0.0 ? -DBL_MAX : DBL_MAX;
            memcpy(&u, &a, 8);
            tdb_st64(s, u);
            return false;
        }
        a += b;
        memcpy(&u, &a, 8);
        tdb_st64(s, u);
    }
    return true;
}

/* ------------------------------------------------------- tile metadata */

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

static uint64_t fmw_var_cell_size(const struct fmw_gen *g, uint64_t c)
{
    return c == g->ncells - 1 ? g->size - g->offsets[c]
                              : g->offsets[c + 1] - g->offsets[c];
}

static void fmw_minmax_var(struct fmw_gen *g, const uint8_t *v, uint64_t n)
{
    uint64_t m = g->min_size < n ? g->min_size : n;
    int cmp = strncmp((const char *)g->min, (const char *)v, (size_t)m);
    if (cmp != 0) {
        if (cmp > 0) {
            g->min = v;
            g->min_size = n;
        }
    } else if (n < g->min_size) {
        g->min = v;
        g->min_size = n;
    }
    m = g->max_size < n ? g->max_size : n;
    cmp = strncmp((const char *)g->max, (const char *)v, (size_t)m);
    if (cmp != 0) {
        if (cmp < 0) {
            g->max = v;
            g->max_size = n;
        }
    } else if (n > g->max_size) {
        g->max = v;
        g->max_size = n;
    }
}

static void fmw_slab_var(struct fmw_gen *g, uint64_t start, uint64_t end)
{
    const struct fmw_field *f = g->f;
    if (!f->has_mm || g->ncells == 0)
        return;
    if (!f->nullable) {
        if (!g->min) {
            g->min = g->max = g->data + g->offsets[start];
            g->min_size = g->max_size = fmw_var_cell_size(g, start);
            start++;
        }
        for (uint64_t c = start; c < end; c++)
            fmw_minmax_var(g, g->data + g->offsets[c],
                           fmw_var_cell_size(g, c));
        return;
    }
    /* TileDB reads the validity from the tile's first cell for every
     * slab (while the offsets start at `start`); so do we */
    for (uint64_t c = start, v = 0; c < end; c++, v++) {
        bool is_null = g->validity[v] == 0;
        if (!is_null) {
            const uint8_t *val = g->data + g->offsets[c];
            uint64_t n = fmw_var_cell_size(g, c);
            if (!g->min && !g->max) {
                g->min = g->max = val;
                g->min_size = g->max_size = n;
            } else {
                fmw_minmax_var(g, val, n);
            }
        }
        g->nulls += is_null;
    }
}

/* The numeric min/max and sum loops of fmw_slab_fixed for one value type
 * (cell = one value, as has_mm and has_sum require): the same comparisons
 * and additions as fmw_lt and fmw_sum_add on the values of the class,
 * without converting every value through fmw_load.  The min and max keep
 * the bytes of the cell they came from. */
#define FMW_TYPED(SUF, T, LOAD, ACC, ADD)                                     \
    /* min/max (mm) and/or the sum: one loop, inlined with constant flags  \
     * into the three below (both at once: the min/max work hides in the   \
     * additions' latency) */                                               \
    static inline __attribute__((always_inline)) void fmw_run_##SUF(        \
        struct fmw_gen *g, uint64_t start, uint64_t end, bool mm, bool sum) \
    {                                                                         \
        const uint8_t *d = g->data, *val = g->validity;                       \
        bool nullable = g->f->nullable, adding = sum;                         \
        const uint8_t *pmin = NULL, *pmax = NULL;                             \
        T mn = mm ? LOAD(g->nmin) : 0, mx = mm ? LOAD(g->nmax) : 0;           \
        uint64_t nulls = 0, u = sum ? tdb_le64(g->sum) : 0;                   \
        ACC acc;                                                              \
        memcpy(&acc, &u, 8);                                                  \
        for (uint64_t c = start; c < end; c++) {                              \
            if (nullable && val[c] == 0) {                                    \
                nulls++;                                                      \
                continue;                                                     \
            }                                                                 \
            const uint8_t *p = d + c * sizeof(T);                             \
            T v = LOAD(p);                                                    \
            if (mm && !(mn < v)) {                                            \
                mn = v;                                                       \
                pmin = p;                                                     \
            }                                                                 \
            if (mm && !(v < mx)) {                                            \
                mx = v;                                                       \
                pmax = p;                                                     \
            }                                                                 \
            if (adding)                                                       \
                adding = ADD(&acc, v);                                        \
            else if (!mm)                                                     \
                break;          /* the sum alone, and it is saturated */      \
        }                                                                     \
        if (mm) {                                                             \
            if (pmin)                                                         \
                memcpy(g->nmin, pmin, sizeof(T));                             \
            if (pmax)                                                         \
                memcpy(g->nmax, pmax, sizeof(T));                             \
            g->nulls += nulls;                                                \
        }                                                                     \
        if (sum) {                                                            \
            memcpy(&u, &acc, 8);                                              \
            tdb_st64(g->sum, u);                                              \
        }                                                                     \
    }                                                                         \
    static void fmw_mm_##SUF(struct fmw_gen *g, uint64_t start,               \
                             uint64_t end)                                    \
    {                                                                         \
        fmw_run_##SUF(g, start, end, true, false);                            \
    }                                                                         \
    static void fmw_sum_##SUF(struct fmw_gen *g, uint64_t start,              \
                              uint64_t end)                                   \
    {                                                                         \
        fmw_run_##SUF(g, start, end, false, true);                            \
    }                                                                         \
    static void fmw_mmsum_##SUF(struct fmw_gen *g, uint64_t start,            \
                                uint64_t end)                                 \
    {                                                                         \
        fmw_run_##SUF(g, start, end, true, true);                             \
    }

/* fmw_sum_add's three classes on a running sum held in registers. */
static inline bool fmw_add_i(int64_t *s, int64_t b)
{
    int64_t a = *s;
    if (a > 0 && b > 0 && a > INT64_MAX - b) {
        *s = INT64_MAX;
        return false;
    }
    if (a < 0 && b < 0 && a < INT64_MIN - b) {
        *s = INT64_MIN;
        return false;
    }
    *s = (int64_t)((uint64_t)a + (uint64_t)b);
    return true;
}

static inline bool fmw_add_u(uint64_t *s, uint64_t b)
{
    if (*s > UINT64_MAX - b) {
        *s = UINT64_MAX;
        return false;
    }
    *s += b;
    return true;
}

static inline bool fmw_add_d(double *s, double b)
{
    double a = *s;
    /* fmw_sum_add's test with its two halves swapped (neither has effects):
     * the rare one first, a branch on the signs would mispredict */
    if (fabs(a) > DBL_MAX - fabs(b) && (a < 0.0) == (b < 0.0)) {
        *s = a < 0.0 ? -DBL_MAX : DBL_MAX;
        return false;
    }
    *s = a + b;
    return true;
}

static inline float fmw_ld_f32(const uint8_t *p)
{
    uint32_t u = tdb_le32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline double fmw_ld_f64(const uint8_t *p)
{
    uint64_t u = tdb_le64(p);
    double f;
    memcpy(&f, &u, 8);
    return f;
}

#define FMW_LD_I8(p) ((int8_t)(p)[0])
#define FMW_LD_I16(p) ((int16_t)tdb_le16(p))
#define FMW_LD_I32(p) ((int32_t)tdb_le32(p))
#define FMW_LD_I64(p) ((int64_t)tdb_le64(p))
#define FMW_LD_U8(p) ((p)[0])
#define FMW_LD_U16(p) (tdb_le16(p))
#define FMW_LD_U32(p) (tdb_le32(p))
#define FMW_LD_U64(p) (tdb_le64(p))

FMW_TYPED(f32, float, fmw_ld_f32, double, fmw_add_d)
FMW_TYPED(f64, double, fmw_ld_f64, double, fmw_add_d)
FMW_TYPED(i8, int8_t, FMW_LD_I8, int64_t, fmw_add_i)
FMW_TYPED(i16, int16_t, FMW_LD_I16, int64_t, fmw_add_i)
FMW_TYPED(i32, int32_t, FMW_LD_I32, int64_t, fmw_add_i)
FMW_TYPED(i64, int64_t, FMW_LD_I64, int64_t, fmw_add_i)
FMW_TYPED(u8, uint8_t, FMW_LD_U8, uint64_t, fmw_add_u)
FMW_TYPED(u16, uint16_t, FMW_LD_U16, uint64_t, fmw_add_u)
FMW_TYPED(u32, uint32_t, FMW_LD_U32, uint64_t, fmw_add_u)
FMW_TYPED(u64, uint64_t, FMW_LD_U64, uint64_t, fmw_add_u)

/* The typed loops for f (NULL: none, use the generic ones). */
struct fmw_typed {
    void (*mm)(struct fmw_gen *, uint64_t, uint64_t);
    void (*sum)(struct fmw_gen *, uint64_t, uint64_t);
    void (*mmsum)(struct fmw_gen *, uint64_t, uint64_t);
};

static struct fmw_typed fmw_typed_of(const struct fmw_field *f)
{
    struct fmw_typed t = {NULL, NULL, NULL};
    if (f->cell_size != f->vsize)
        return t;
#define FMW_PICK(SUF)                                                         \
    (t = (struct fmw_typed){fmw_mm_##SUF, fmw_sum_##SUF, fmw_mmsum_##SUF})
    switch (f->kind) {
    case FMW_FLOAT:
        if (f->vsize == 4)
            FMW_PICK(f32);
        else if (f->vsize == 8)
            FMW_PICK(f64);
        break;
    case FMW_SIGNED:
        switch (f->vsize) {
        case 1: FMW_PICK(i8); break;
        case 2: FMW_PICK(i16); break;
        case 4: FMW_PICK(i32); break;
        case 8: FMW_PICK(i64); break;
        }
        break;
    case FMW_UNSIGNED:
        switch (f->vsize) {
        case 1: FMW_PICK(u8); break;
        case 2: FMW_PICK(u16); break;
        case 4: FMW_PICK(u32); break;
        case 8: FMW_PICK(u64); break;
        }
        break;
    default:
        break;
    }
#undef FMW_PICK
    return t;
}

/* Runs one of a datatype's typed loops (fmw_typed_of) over cells
 * start..end.  @return false when the datatype has none. */
static bool fmw_run_typed(void (*fn)(struct fmw_gen *, uint64_t, uint64_t),
                          struct fmw_gen *g, uint64_t start, uint64_t end)
{
    if (!fn)
        return false;
    fn(g, start, end);
    return true;
}

static void fmw_slab_fixed(struct fmw_gen *g, uint64_t start, uint64_t end)
{
    const struct fmw_field *f = g->f;
    uint64_t cs = f->cell_size;
    if (f->kind == FMW_NONE)
        return;
    const struct fmw_typed t = fmw_typed_of(f);
    g->min_size = g->max_size = cs;
    if (f->has_mm && f->kind == FMW_CHAR) {
        if (!f->nullable) {
            uint64_t first = start;
            if (g->size == 0 || start >= end)
                goto sum;
            if (!g->min) {
                g->min = g->max = g->data + start * cs;
                first++;
            }
            for (uint64_t c = first; c < end; c++) {
                const uint8_t *v = g->data + c * cs;
                if (strncmp((const char *)g->min, (const char *)v,
                            (size_t)cs) > 0)
                    g->min = v;
                if (strncmp((const char *)g->max, (const char *)v,
                            (size_t)cs) < 0)
                    g->max = v;
            }
        } else {
            for (uint64_t c = start; c < end; c++) {
                const uint8_t *v = g->data + c * cs;
                bool is_null = g->validity[c] == 0;
                if (!is_null && (!g->min || strncmp((const char *)g->min,
                                                    (const char *)v,
                                                    (size_t)cs) > 0))
                    g->min = v;
                if (!is_null && (!g->max || strncmp((const char *)g->max,
                                                    (const char *)v,
                                                    (size_t)cs) < 0))
                    g->max = v;
                g->nulls += is_null;
            }
        }
    } else if (f->has_mm) {
        if (!g->num_init) {
            fmw_type_limits(f->type, g->nmin, g->nmax);
            g->num_init = true;
        }
        if (f->has_sum && fmw_run_typed(t.mmsum, g, start, end))
            return;
        if (fmw_run_typed(t.mm, g, start, end))
            goto sum;
        unsigned vs = f->vsize;
        for (uint64_t c = start; c < end; c++) {
            const uint8_t *v = g->data + c * cs;
            bool is_null = f->nullable && g->validity[c] == 0;
            if (!is_null && !fmw_lt(f->type, g->nmin, v))
                memcpy(g->nmin, v, vs);
            if (!is_null && !fmw_lt(f->type, v, g->nmax))
                memcpy(g->nmax, v, vs);
            g->nulls += is_null;
        }
    } else if (f->nullable) {
        /* no min/max: TileDB counts the nulls of the whole tile, once per
         * slab */
        for (uint64_t c = 0; c < g->ncells; c++)
            g->nulls += g->validity[c] == 0;
    }
sum:
    if (f->has_sum && !fmw_run_typed(t.sum, g, start, end)) {
        int cls = fmw_sum_class(f->type);
        for (uint64_t c = start; c < end; c++) {
            if (f->nullable && g->validity[c] == 0)
                continue;
            if (!fmw_sum_add(cls, g->sum, fmw_load(f->type,
                                                   g->data + c * cs)))
                break;
        }
    }
}

/* ------------------------------------------------------ dense geometry */

/* A coordinate of integer type dt (8 zero-padded bytes) as 64 bits. */
static uint64_t fmw_coord(unsigned dt, const uint8_t *p)
{
    struct fmw_num n = fmw_load(dt, p);
    return n.u;
}

/* Per dimension of a dense fragment: extent, and the non-empty domain and
 * its tiles relative to the domain's low end. */
struct fmw_dense {
    uint32_t nd;
    uint64_t ext[FMW_MAX_DIMS], lo[FMW_MAX_DIMS], hi[FMW_MAX_DIMS];
    uint64_t t0[FMW_MAX_DIMS], nt[FMW_MAX_DIMS];
    uint64_t tiles, cells_per_tile;
};

static int fmw_dense_geometry(const struct tdb_fmw *w, struct fmw_dense *g,
                              struct tdb_error *err)
{
    const struct tdb_schema *s = w->s;
    if (!w->ned_set)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: a dense "
                       "fragment needs its non-empty domain first");
    g->nd = s->ndims;
    g->tiles = 1;
    g->cells_per_tile = 1;
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        if (!tdb_dt_is_integer(dim->type) || dim->cell_val_num != 1)
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: dense "
                           "dimension %s is not of an integer type",
                           dim->name);
        uint64_t dlo = fmw_coord(dim->type, dim->lo);
        uint64_t dhi = fmw_coord(dim->type, dim->hi);
        uint64_t ext = dim->has_extent ? fmw_coord(dim->type, dim->extent)
                                       : dhi - dlo + 1;
        uint64_t lo = fmw_coord(dim->type, w->ned[d].lo) - dlo;
        uint64_t hi = fmw_coord(dim->type, w->ned[d].hi) - dlo;
        if (ext == 0 || lo > hi || hi > dhi - dlo)
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: dimension "
                           "%s: non-empty domain outside the domain or no "
                           "usable tile extent", dim->name);
        g->ext[d] = ext;
        g->lo[d] = lo;
        g->hi[d] = hi;
        g->t0[d] = lo / ext;
        g->nt[d] = hi / ext - lo / ext + 1;
        if (!tdb_mul_ok(g->tiles, g->nt[d], &g->tiles) ||
            !tdb_mul_ok(g->cells_per_tile, ext, &g->cells_per_tile) ||
            g->cells_per_tile > TDB_MAX_TILE_BYTES)
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: dense tile "
                           "count or tile size overflows");
    }
    return 0;
}

/* The part of one dense tile a write covers, and how the tiler copies
 * it: `copy` cells a slab, the dimensions iterated (nr of them, from
 * first_d on) and their ranges [0, rhi]. */
struct fmw_slabs {
    uint32_t nd;
    uint64_t slo[FMW_MAX_DIMS], shi[FMW_MAX_DIMS], len[FMW_MAX_DIMS];
    uint64_t tlo[FMW_MAX_DIMS], strides[FMW_MAX_DIMS];
    uint64_t start;             /* the first cell in the tile */
    uint64_t copy, rhi[FMW_MAX_DIMS];
    uint32_t nr, first_d;
};

/* The box of tile `id` (tile order) the non-empty domain covers, and the
 * strides of the tile's cell order. */
static void fmw_slabs_box(const struct tdb_fmw *w, const struct fmw_dense *g,
                          uint64_t id, struct fmw_slabs *sl)
{
    uint32_t nd = g->nd;
    uint64_t tc[FMW_MAX_DIMS];
    sl->nd = nd;
    /* tile coordinates inside the fragment's tile domain */
    if (w->s->tile_order == TDB_COL_MAJOR) {
        for (uint32_t d = 0; d < nd; d++) {
            tc[d] = id % g->nt[d];
            id /= g->nt[d];
        }
    } else {
        for (uint32_t d = nd; d-- > 0;) {
            tc[d] = id % g->nt[d];
            id /= g->nt[d];
        }
    }
    for (uint32_t d = 0; d < nd; d++) {
        sl->tlo[d] = (g->t0[d] + tc[d]) * g->ext[d];
        uint64_t thi = sl->tlo[d] + g->ext[d] - 1;
        sl->slo[d] = g->lo[d] > sl->tlo[d] ? g->lo[d] : sl->tlo[d];
        sl->shi[d] = g->hi[d] < thi ? g->hi[d] : thi;
        sl->len[d] = sl->shi[d] - sl->slo[d] + 1;
    }
    if (w->s->cell_order == TDB_COL_MAJOR) {
        sl->strides[0] = 1;
        for (uint32_t d = 1; d < nd; d++)
            sl->strides[d] = sl->strides[d - 1] * g->ext[d - 1];
    } else {
        sl->strides[nd - 1] = 1;
        for (uint32_t d = nd - 1; d-- > 0;)
            sl->strides[d] = sl->strides[d + 1] * g->ext[d + 1];
    }
    sl->start = 0;
    for (uint32_t d = 0; d < nd; d++)
        sl->start += (sl->slo[d] - sl->tlo[d]) * sl->strides[d];
}

/* Whether the box spans dimension n of the fragment whole. */
static bool fmw_slabs_whole(const struct fmw_dense *g,
                            const struct fmw_slabs *sl, uint32_t n)
{
    return sl->len[n] == g->ext[n] && sl->slo[n] == g->lo[n] &&
           sl->shi[n] == g->hi[n];
}

/* The copy plan of a row-major box in row-major cells: slabs grow over
 * the trailing dimensions the box spans whole. */
static void fmw_slabs_row(const struct fmw_dense *g, struct fmw_slabs *sl)
{
    uint32_t nd = sl->nd;
    sl->copy = sl->len[nd - 1];
    int32_t last = (int32_t)nd - 2;
    for (; last >= 0; last--) {
        if (fmw_slabs_whole(g, sl, (uint32_t)last + 1))
            sl->copy *= sl->len[last];
        else
            break;
    }
    if (last < 0) {
        sl->nr = 1;
        sl->rhi[0] = 0;
    } else {
        sl->nr = (uint32_t)last + 1;
        for (uint32_t d = 0; d < sl->nr; d++)
            sl->rhi[d] = sl->len[d] - 1;
    }
}

/* The same in column-major cells, over the leading dimensions. */
static void fmw_slabs_col(const struct fmw_dense *g, struct fmw_slabs *sl)
{
    uint32_t nd = sl->nd;
    sl->copy = sl->len[0];
    uint32_t last = 1;
    for (; last < nd; last++) {
        if (fmw_slabs_whole(g, sl, last - 1))
            sl->copy *= sl->len[last];
        else
            break;
    }
    if (last == nd) {
        sl->nr = 1;
        sl->rhi[0] = 0;
        sl->first_d = nd - 1;
    } else {
        sl->nr = nd - last;
        for (uint32_t d = last; d < nd; d++)
            sl->rhi[d - last] = sl->len[d] - 1;
        sl->first_d = last;
    }
}

/* Runs the generator over the slabs TileDB's dense tiler visits in tile
 * `id` (tile order), for a write of the non-empty domain in row-major
 * order. */
static void fmw_dense_slabs(const struct tdb_fmw *w,
                            const struct fmw_dense *g, uint64_t id,
                            struct fmw_gen *gen, bool var)
{
    struct fmw_slabs sl = {0};
    fmw_slabs_box(w, g, id, &sl);
    uint32_t nd = sl.nd;
    bool col = w->s->cell_order == TDB_COL_MAJOR;
    bool sub_col = w->sub_layout == TDB_COL_MAJOR;
    if (nd == 1) {
        sl.copy = sl.len[0];
        sl.nr = 1;
        sl.rhi[0] = 0;
    } else if (col != sub_col) {
        sl.copy = 1;
        sl.nr = nd;
        for (uint32_t d = 0; d < nd; d++)
            sl.rhi[d] = sl.len[d] - 1;
    } else if (!col) {
        fmw_slabs_row(g, &sl);
    } else {
        fmw_slabs_col(g, &sl);
    }
    uint64_t toff[FMW_MAX_DIMS], cc[FMW_MAX_DIMS];
    for (uint32_t i = 0; i < sl.nr; i++) {
        toff[i] = sl.start;
        cc[i] = 0;
    }
    uint32_t d = sl.nr - 1;
    for (;;) {
        if (var)
            fmw_slab_var(gen, toff[d], toff[d] + sl.copy);
        else
            fmw_slab_fixed(gen, toff[d], toff[d] + sl.copy);
        int32_t ldc = (int32_t)d;
        for (; ldc >= 0; ldc--) {
            if (++cc[ldc] > sl.rhi[ldc])
                cc[ldc] = 0;
            else
                break;
        }
        if (ldc < 0)
            break;
        toff[ldc] += sl.strides[(uint32_t)ldc + sl.first_d];
        for (uint32_t i = (uint32_t)ldc + 1; i < sl.nr; i++)
            toff[i] = toff[i - 1];
    }
}

/* ----------------------------------------------------------------- create */

static void fmw_field_init(struct fmw_field *f, unsigned type, uint32_t cvn,
                           bool nullable, bool is_dim, bool dense)
{
    f->type = type;
    f->cvn = cvn;
    f->var = cvn == TDB_VAR_NUM;
    f->nullable = nullable;
    f->is_dim = is_dim;
    f->kind = fmw_kind_of(type);
    f->vsize = tdb_dt_size(type);
    f->cell_size = f->var ? 8 : (uint64_t)cvn * f->vsize;
    f->has_md = !dense || !is_dim;
    f->has_mm = fmw_has_mm(type, is_dim, f->var, cvn);
    f->has_sum = fmw_has_sum(type, f->var, cvn);
    f->stores_tiles = !is_dim || !dense;
}

int tdb_fmw_create(struct tdb_fmw **out, const struct tdb_schema *s,
                   const char *schema_name, bool dense,
                   struct tdb_error *err)
{
    *out = NULL;
    if (!s || !schema_name || !*schema_name || s->ndims == 0 ||
        s->ndims > FMW_MAX_DIMS)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: need a schema "
                       "with 1 to %u dimensions and a schema name",
                       FMW_MAX_DIMS);
    for (uint32_t d = 0; d < s->ndims; d++)
        if (s->dims[d].cell_val_num != TDB_VAR_NUM &&
            (tdb_dt_size(s->dims[d].type) == 0 ||
             tdb_dt_size(s->dims[d].type) > 8))
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: dimension "
                           "%s has datatype %u", s->dims[d].name,
                           s->dims[d].type);
    for (uint32_t a = 0; a < s->nattrs; a++)
        if (tdb_dt_size(s->attrs[a].type) == 0 || s->attrs[a].cell_val_num == 0)
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: attribute "
                           "%s has datatype %u and %u values per cell",
                           s->attrs[a].name, s->attrs[a].type,
                           s->attrs[a].cell_val_num);
    struct tdb_fmw *w = calloc(1, sizeof *w);
    if (!w)
        return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
    size_t nlen = strlen(schema_name);
    w->s = s;
    w->dense = dense;
    w->nfields = s->nattrs + 1 + s->ndims;
    w->schema_name = malloc(nlen + 1);
    w->f = calloc(w->nfields, sizeof *w->f);
    w->ned = calloc(s->ndims, sizeof *w->ned);
    if (!w->schema_name || !w->f || !w->ned) {
        tdb_fmw_free(w);
        return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
    }
    memcpy(w->schema_name, schema_name, nlen + 1);
    for (uint32_t a = 0; a < s->nattrs; a++)
        fmw_field_init(&w->f[a], s->attrs[a].type, s->attrs[a].cell_val_num,
                       s->attrs[a].nullable, false, dense);
    /* the legacy zipped-coordinates slot: the first dimension's type,
     * one value per cell of every dimension, never any tiles */
    struct fmw_field *c = &w->f[s->nattrs];
    fmw_field_init(c, s->dims[0].type, 1, false, false, dense);
    c->is_coords = true;
    c->stores_tiles = false;
    c->cell_size = (uint64_t)s->ndims * tdb_dt_size(s->dims[0].type);
    for (uint32_t d = 0; d < s->ndims; d++)
        fmw_field_init(&w->f[s->nattrs + 1 + d], s->dims[d].type,
                       s->dims[d].cell_val_num, false, true, dense);
    *out = w;
    return 0;
}

static void fmw_ranges_free(struct tdb_range *r, uint64_t n)
{
    for (uint64_t i = 0; r && i < n; i++) {
        free(r[i].vlo);
        free(r[i].vhi);
    }
}

void tdb_fmw_free(struct tdb_fmw *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; w->f && i < w->nfields; i++) {
        struct fmw_field *f = &w->f[i];
        fmw_u64s_free(&f->offs);
        fmw_u64s_free(&f->var_offs);
        fmw_u64s_free(&f->var_sizes);
        fmw_u64s_free(&f->val_offs);
        fmw_u64s_free(&f->nulls);
        fmw_u64s_free(&f->min_sizes);
        fmw_u64s_free(&f->max_sizes);
        tdb_buf_free(&f->mins);
        tdb_buf_free(&f->maxs);
        tdb_buf_free(&f->sums);
    }
    free(w->f);
    for (size_t i = 0; i < w->nprocessed; i++)
        free(w->processed[i]);
    free(w->processed);
    if (w->s) {
        fmw_ranges_free(w->ned, w->s->ndims);
        fmw_ranges_free(w->mbrs, w->nmbrs * w->s->ndims);
    }
    free(w->ned);
    free(w->mbrs);
    free(w->schema_name);
    free(w);
}

/* API field number -> index in w->f (disk order). */
static const struct fmw_field *fmw_field_c(const struct tdb_fmw *w,
                                           uint32_t field)
{
    const struct tdb_schema *s = w->s;
    if (field < s->nattrs)
        return &w->f[field];
    if (field < w->nfields - 1)
        return &w->f[field + 1];
    return NULL;
}

static struct fmw_field *fmw_field(struct tdb_fmw *w, uint32_t field)
{
    return (struct fmw_field *)(uintptr_t)fmw_field_c(w, field);
}

static const char *fmw_field_name(const struct tdb_fmw *w, uint32_t field)
{
    const struct tdb_schema *s = w->s;
    if (field < s->nattrs)
        return s->attrs[field].name;
    if (field - s->nattrs < s->ndims)
        return s->dims[field - s->nattrs].name;
    static const char *const special[3] = {
        "__timestamps", "__delete_timestamps", "__delete_condition_index"};
    uint32_t k = field - s->nattrs - s->ndims + (w->has_ts ? 0 : 1);
    return field < w->nfields - 1 && k < 3 ? special[k] : "?";
}

int tdb_fmw_set_extras(struct tdb_fmw *w, const struct tdb_write_extras *x,
                       struct tdb_error *err)
{
    uint32_t base = w->s->nattrs + 1 + w->s->ndims;
    uint32_t add = (x->timestamps ? 1u : 0u) + (x->delete_meta ? 2u : 0u);
    bool started = false;
    for (uint32_t i = 0; i < w->nfields; i++)
        started |= w->f[i].ntiles != 0;
    if (w->dense || w->nfields != base || started || w->nprocessed)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: special fields "
                       "are set once, before any tile, in sparse fragments");
    struct fmw_field *f = realloc(w->f, (base + add) * sizeof *f);
    char **p = calloc(x->nprocessed ? x->nprocessed : 1, sizeof *p);
    if (f)
        w->f = f;
    if (!f || !p) {
        free(p);
        return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
    }
    memset(f + base, 0, add * sizeof *f);
    for (uint32_t i = base; i < base + add; i++)
        fmw_field_init(&f[i], TDB_UINT64, 1, false, false, false);
    w->nfields = base + add;
    w->has_ts = x->timestamps;
    w->has_dm = x->delete_meta;
    w->processed = p;
    for (size_t i = 0; i < x->nprocessed; i++) {
        if (!(p[i] = strdup(x->processed[i])))
            return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of "
                           "memory");
        w->nprocessed = i + 1;
    }
    return 0;
}

/* ------------------------------------------------------------- add tile */

/* Checks tile `tile` of field f (`name`) against what the field holds;
 * *ncells the tile's cells. */
static int fmw_tile_check(const struct fmw_field *f, const char *name,
                          uint64_t tile, const struct tdb_fmw_tile *t,
                          uint64_t *ncells, struct tdb_error *err)
{
    uint64_t size = t->size;
    *ncells = t->ncells;
    if (!f->var && *ncells == 0 && f->cell_size)
        *ncells = size / f->cell_size;
    uint64_t n = *ncells;
    if (n > TDB_MAX_TILE_BYTES || (size && !t->data) ||
        (f->var && n && !t->offsets) || (f->nullable && n && !t->validity))
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: field %s tile "
                       "%llu: missing data, offsets or validity", name,
                       (unsigned long long)tile);
    if (!f->var) {
        uint64_t need;
        if (!tdb_mul_ok(n, f->cell_size, &need) || need > size)
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: field %s "
                           "tile %llu: %llu bytes hold fewer than %llu cells",
                           name, (unsigned long long)tile,
                           (unsigned long long)size, (unsigned long long)n);
        return 0;
    }
    for (uint64_t c = 0; c < n; c++)
        if (t->offsets[c] > size || (c && t->offsets[c] < t->offsets[c - 1]))
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: field "
                           "%s tile %llu: offset %llu of cell %llu is "
                           "descending or past the %llu value bytes",
                           name, (unsigned long long)tile,
                           (unsigned long long)t->offsets[c],
                           (unsigned long long)c, (unsigned long long)size);
    return 0;
}

/* Runs the generator over a dense fragment's tile `tile` as TileDB's
 * tiler visits it. */
static int fmw_tile_dense(const struct tdb_fmw *w, const char *name,
                          uint64_t tile, struct fmw_gen *g,
                          struct tdb_error *err)
{
    struct fmw_dense geo;
    int rc = fmw_dense_geometry(w, &geo, err);
    if (rc)
        return rc;
    if (tile >= geo.tiles)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: field %s: "
                       "more than the %llu tiles of the non-empty "
                       "domain", name, (unsigned long long)geo.tiles);
    if (g->ncells != geo.cells_per_tile)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: field %s "
                       "tile %llu has %llu cells, a dense tile %llu",
                       name, (unsigned long long)tile,
                       (unsigned long long)g->ncells,
                       (unsigned long long)geo.cells_per_tile);
    if (w->sub_layout != TDB_GLOBAL_ORDER)
        fmw_dense_slabs(w, &geo, tile, g, g->f->var);
    else if (g->f->var)
        fmw_slab_var(g, 0, g->ncells);
    else
        fmw_slab_fixed(g, 0, g->ncells);
    return 0;
}

int tdb_fmw_tile_stats(const struct tdb_fmw *w, uint32_t field, uint64_t tile,
                       const struct tdb_fmw_tile *t, struct tdb_fmw_stats *st,
                       struct tdb_error *err)
{
    const struct fmw_field *f = w ? fmw_field_c(w, field) : NULL;
    if (!f)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no field %u",
                       field);
    const char *name = fmw_field_name(w, field);
    if (!f->stores_tiles)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: dimension %s of "
                       "a dense fragment has no tiles", name);
    uint64_t ncells;
    int rc = fmw_tile_check(f, name, tile, t, &ncells, err);
    if (rc)
        return rc;
    struct fmw_gen g;
    memset(&g, 0, sizeof g);
    g.f = f;
    g.data = t->data;
    g.size = t->size;
    g.offsets = t->offsets;
    g.validity = t->validity;
    g.ncells = ncells;
    if (w->dense && (rc = fmw_tile_dense(w, name, tile, &g, err)))
        return rc;
    if (!w->dense && f->var)
        fmw_slab_var(&g, 0, ncells);
    else if (!w->dense)
        fmw_slab_fixed(&g, 0, ncells);
    memset(st, 0, sizeof *st);
    st->field = field;
    st->tile = tile;
    st->min = g.min;
    st->max = g.max;
    st->min_size = g.min_size;
    st->max_size = g.max_size;
    memcpy(st->nmin, g.nmin, 8);
    memcpy(st->nmax, g.nmax, 8);
    memcpy(st->sum, g.sum, 8);
    st->nulls = g.nulls;
    return 0;
}

int tdb_fmw_add_tile_stats(struct tdb_fmw *w, const struct tdb_fmw_where *at,
                           const struct tdb_fmw_stats *st,
                           struct tdb_error *err)
{
    struct fmw_field *f = w ? fmw_field(w, st->field) : NULL;
    if (!f || !f->stores_tiles || st->tile != f->ntiles)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: field %s: "
                       "tile %llu recorded out of order",
                       w ? fmw_field_name(w, st->field) : "?",
                       (unsigned long long)st->tile);
    int rc = fmw_push(&f->offs, at->off);
    if (!rc)
        rc = fmw_push(&f->var_offs, f->var ? at->var_off : 0);
    if (!rc)
        rc = fmw_push(&f->var_sizes, f->var ? at->var_size : 0);
    if (!rc)
        rc = fmw_push(&f->val_offs, f->nullable ? at->validity_off : 0);
    if (!rc && f->nullable)
        rc = fmw_push(&f->nulls, st->nulls);
    /* null counts are always kept (0 for non-nullable fields): the rule
     * that an all-null tile has no min/max needs them */
    if (!rc && !f->nullable)
        rc = fmw_push(&f->nulls, 0);
    if (!rc && f->has_md && f->has_mm) {
        if (f->var) {
            rc = fmw_push(&f->min_sizes, st->min ? st->min_size : 0);
            if (!rc)
                rc = fmw_push(&f->max_sizes, st->max ? st->max_size : 0);
            if (!rc && st->min)
                rc = tdb_buf_append(&f->mins, st->min, (size_t)st->min_size);
            if (!rc && st->max)
                rc = tdb_buf_append(&f->maxs, st->max, (size_t)st->max_size);
        } else {
            uint8_t *pmin, *pmax;
            rc = tdb_buf_grow(&f->mins, (size_t)f->cell_size, &pmin);
            if (!rc)
                rc = tdb_buf_grow(&f->maxs, (size_t)f->cell_size, &pmax);
            if (!rc) {
                memset(pmin, 0, (size_t)f->cell_size);
                memset(pmax, 0, (size_t)f->cell_size);
                if (f->kind == FMW_CHAR) {
                    if (st->min)
                        memcpy(pmin, st->min, (size_t)f->cell_size);
                    if (st->max)
                        memcpy(pmax, st->max, (size_t)f->cell_size);
                } else {
                    memcpy(pmin, st->nmin, f->vsize);
                    memcpy(pmax, st->nmax, f->vsize);
                }
            }
        }
    }
    if (!rc && f->has_md && f->has_sum && !f->var)
        rc = tdb_buf_append(&f->sums, st->sum, 8);
    if (rc)
        return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
    f->ntiles++;
    return 0;
}

int tdb_fmw_add_tile(struct tdb_fmw *w, uint32_t field,
                     const struct tdb_fmw_where *at,
                     const struct tdb_fmw_tile *t, struct tdb_error *err)
{
    struct fmw_field *f = w ? fmw_field(w, field) : NULL;
    if (!f)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no field %u",
                       field);
    struct tdb_fmw_stats st;
    int rc = tdb_fmw_tile_stats(w, field, f->ntiles, t, &st, err);
    return rc ? rc : tdb_fmw_add_tile_stats(w, at, &st, err);
}

int tdb_fmw_set_file_sizes(struct tdb_fmw *w, uint32_t field, uint64_t size,
                           uint64_t var_size, uint64_t validity_size)
{
    struct fmw_field *f = w ? fmw_field(w, field) : NULL;
    if (!f)
        return TDB_E_INVAL;
    f->fsize = size;
    f->fvar = var_size;
    f->fval = validity_size;
    return 0;
}

/* ------------------------------------------------------ ranges and MBRs */

static int fmw_copy_ranges(const struct tdb_schema *s, struct tdb_range *dst,
                           const struct tdb_range *src)
{
    for (uint32_t d = 0; d < s->ndims; d++) {
        dst[d] = src[d];
        dst[d].vlo = dst[d].vhi = NULL;
        if (s->dims[d].cell_val_num != TDB_VAR_NUM) {
            dst[d].vlo_size = dst[d].vhi_size = 0;
            continue;
        }
        dst[d].vlo = malloc(src[d].vlo_size ? (size_t)src[d].vlo_size : 1);
        dst[d].vhi = malloc(src[d].vhi_size ? (size_t)src[d].vhi_size : 1);
        if (!dst[d].vlo || !dst[d].vhi)
            return TDB_E_NOMEM;
        if (src[d].vlo_size)
            memcpy(dst[d].vlo, src[d].vlo, (size_t)src[d].vlo_size);
        if (src[d].vhi_size)
            memcpy(dst[d].vhi, src[d].vhi, (size_t)src[d].vhi_size);
    }
    return 0;
}

static int fmw_check_ranges(const struct tdb_schema *s,
                            const struct tdb_range *r, const char *what,
                            struct tdb_error *err)
{
    for (uint32_t d = 0; d < s->ndims; d++)
        if (s->dims[d].cell_val_num == TDB_VAR_NUM &&
            ((r[d].vlo_size && !r[d].vlo) || (r[d].vhi_size && !r[d].vhi) ||
             r[d].vlo_size > TDB_MAX_TILE_BYTES ||
             r[d].vhi_size > TDB_MAX_TILE_BYTES))
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: %s of "
                           "dimension %s has no bytes", what,
                           s->dims[d].name);
    return 0;
}

int tdb_fmw_set_ned(struct tdb_fmw *w, const struct tdb_range *ned,
                    struct tdb_error *err)
{
    if (!w || !ned)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no non-empty "
                       "domain");
    int rc = fmw_check_ranges(w->s, ned, "non-empty domain", err);
    if (rc)
        return rc;
    fmw_ranges_free(w->ned, w->s->ndims);
    memset(w->ned, 0, w->s->ndims * sizeof *w->ned);
    if (fmw_copy_ranges(w->s, w->ned, ned))
        return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
    w->ned_set = true;
    return 0;
}

int tdb_fmw_add_mbr(struct tdb_fmw *w, const struct tdb_range *mbr,
                    struct tdb_error *err)
{
    if (!w || !mbr)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no MBR");
    if (w->dense)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: a dense "
                       "fragment has no MBRs");
    int rc = fmw_check_ranges(w->s, mbr, "MBR", err);
    if (rc)
        return rc;
    uint32_t nd = w->s->ndims;
    if (w->nmbrs == w->mbr_cap) {
        uint64_t cap = w->mbr_cap ? w->mbr_cap * 2 : 16, bytes;
        if (!tdb_mul_ok(cap, (uint64_t)nd * sizeof *w->mbrs, &bytes) ||
            bytes > SIZE_MAX)
            return tdb_err(err, TDB_E_NOMEM, "fragment metadata: too many "
                           "MBRs");
        struct tdb_range *n = realloc(w->mbrs, (size_t)bytes);
        if (!n)
            return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of "
                           "memory");
        w->mbrs = n;
        w->mbr_cap = cap;
    }
    struct tdb_range *dst = w->mbrs + w->nmbrs * nd;
    memset(dst, 0, nd * sizeof *dst);
    w->nmbrs++;                 /* so that free releases partial copies */
    if (fmw_copy_ranges(w->s, dst, mbr))
        return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
    return 0;
}

int tdb_fmw_set_dense_layout(struct tdb_fmw *w, unsigned layout)
{
    if (!w || (layout != TDB_ROW_MAJOR && layout != TDB_COL_MAJOR &&
               layout != TDB_GLOBAL_ORDER))
        return TDB_E_INVAL;
    w->sub_layout = layout;
    return 0;
}

void tdb_fmw_set_sparse_tiles(struct tdb_fmw *w, uint64_t ntiles,
                              uint64_t last_tile_cells)
{
    if (!w)
        return;
    w->sparse_tiles = ntiles;
    w->last_tile_cells = last_tile_cells;
}

/* ---------------------------------------------------------------- R-tree */

static int fmw_put_range(struct tdb_buf *b, const struct tdb_dim *dim,
                         const struct tdb_range *r)
{
    if (dim->cell_val_num == TDB_VAR_NUM) {
        int rc = tdb_buf_put_u64(b, r->vlo_size + r->vhi_size);
        if (!rc)
            rc = tdb_buf_put_u64(b, r->vlo_size);
        if (!rc && r->vlo_size)
            rc = tdb_buf_append(b, r->vlo, (size_t)r->vlo_size);
        if (!rc && r->vhi_size)
            rc = tdb_buf_append(b, r->vhi, (size_t)r->vhi_size);
        return rc;
    }
    unsigned size = tdb_dt_size(dim->type);
    int rc = tdb_buf_append(b, r->lo, size);
    return rc ? rc : tdb_buf_append(b, r->hi, size);
}

/* std::string comparison: bytewise, a prefix first. */
static int fmw_strcmp(const uint8_t *a, uint64_t na, const uint8_t *b,
                      uint64_t nb)
{
    uint64_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, (size_t)n) : 0;
    if (c)
        return c;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

/* Expands `acc` (the parent MBR) by `r` as TileDB's Domain::expand_ndrange
 * does; var bounds of acc point into the level below. */
static void fmw_expand(const struct tdb_schema *s, const struct tdb_range *r,
                       struct tdb_range *acc, bool empty)
{
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        if (empty) {
            acc[d] = r[d];
            continue;
        }
        if (dim->cell_val_num == TDB_VAR_NUM) {
            if (fmw_strcmp(r[d].vlo, r[d].vlo_size, acc[d].vlo,
                           acc[d].vlo_size) < 0) {
                acc[d].vlo = r[d].vlo;
                acc[d].vlo_size = r[d].vlo_size;
            }
            if (!(fmw_strcmp(r[d].vhi, r[d].vhi_size, acc[d].vhi,
                             acc[d].vhi_size) < 0)) {
                acc[d].vhi = r[d].vhi;
                acc[d].vhi_size = r[d].vhi_size;
            }
        } else {
            unsigned size = tdb_dt_size(dim->type);
            /* std::min(r, acc): acc if acc < r; std::max(r, acc): acc if
             * r < acc */
            if (!fmw_lt(dim->type, acc[d].lo, r[d].lo))
                memcpy(acc[d].lo, r[d].lo, size);
            if (!fmw_lt(dim->type, r[d].hi, acc[d].hi))
                memcpy(acc[d].hi, r[d].hi, size);
        }
    }
}

static int fmw_rtree(const struct tdb_fmw *w, uint64_t ntiles,
                     struct tdb_buf *b, struct tdb_error *err)
{
    const struct tdb_schema *s = w->s;
    uint32_t nd = s->ndims;
    int rc = tdb_buf_put_u32(b, FMW_FANOUT);
    if (rc)
        return rc;
    if (w->dense)
        return tdb_buf_put_u32(b, 0);
    if (w->nmbrs != ntiles || ntiles == 0)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: %llu MBRs for "
                       "%llu sparse tiles", (unsigned long long)w->nmbrs,
                       (unsigned long long)ntiles);
    /* levels bottom up; level 0 is the leaves */
    uint32_t height = 1;
    if (ntiles > 1)
        height = (uint32_t)ceil(log((double)ntiles) / log((double)FMW_FANOUT))
                 + 1;
    struct tdb_range **lv = calloc(height, sizeof *lv);
    uint64_t *cnt = calloc(height, sizeof *cnt);
    if (!lv || !cnt) {
        free(lv);
        free(cnt);
        return TDB_E_NOMEM;
    }
    lv[0] = w->mbrs;
    cnt[0] = ntiles;
    for (uint32_t l = 1; l < height && rc == 0; l++) {
        uint64_t n = cnt[l - 1] / FMW_FANOUT + (cnt[l - 1] % FMW_FANOUT != 0);
        lv[l] = calloc((size_t)(n * nd), sizeof **lv);
        if (!lv[l]) {
            rc = TDB_E_NOMEM;
            break;
        }
        cnt[l] = n;
        for (uint64_t i = 0, m = 0; i < n; i++)
            for (uint64_t j = 0; j < FMW_FANOUT && m < cnt[l - 1]; j++, m++)
                fmw_expand(s, lv[l - 1] + m * nd, lv[l] + i * nd, j == 0);
    }
    if (!rc)
        rc = tdb_buf_put_u32(b, height);
    for (uint32_t l = height; l-- > 0 && rc == 0;) {
        rc = tdb_buf_put_u64(b, cnt[l]);
        for (uint64_t m = 0; m < cnt[l] && rc == 0; m++)
            for (uint32_t d = 0; d < nd && rc == 0; d++)
                rc = fmw_put_range(b, &s->dims[d], &lv[l][m * nd + d]);
    }
    for (uint32_t l = 1; l < height; l++)
        free(lv[l]);
    free(lv);
    free(cnt);
    return rc;
}

/* ------------------------------------------------------------- serialize */

/* Cells of tile t (FragmentMetadata::cell_num(t)). */
static uint64_t fmw_cell_num(const struct tdb_fmw *w, uint64_t cpt,
                             uint64_t ntiles, uint64_t t)
{
    if (w->dense)
        return cpt;
    if (t != ntiles - 1)
        return w->s->capacity;
    return w->last_tile_cells ? w->last_tile_cells : w->s->capacity;
}

static bool fmw_all_null(const struct tdb_fmw *w, const struct fmw_field *f,
                         uint64_t cpt, uint64_t ntiles, uint64_t t)
{
    return f->ntiles == ntiles && f->nulls.n == ntiles &&
           f->nulls.v[t] == fmw_cell_num(w, cpt, ntiles, t);
}

static int fmw_put_list(struct tdb_buf *b, const struct fmw_u64s *l,
                        uint64_t n)
{
    int rc = tdb_buf_put_u64(b, n);
    for (uint64_t i = 0; i < n && rc == 0; i++)
        rc = tdb_buf_put_u64(b, l->n == n ? l->v[i] : 0);
    return rc;
}

/* The tile mins (or maxes) of f as TileDB stores them. */
static int fmw_put_minmax(const struct tdb_fmw *w, const struct fmw_field *f,
                          bool max, uint64_t cpt, uint64_t ntiles,
                          struct tdb_buf *b)
{
    if (!f->has_md || !f->has_mm) {
        int rc = tdb_buf_put_u64(b, 0);
        return rc ? rc : tdb_buf_put_u64(b, 0);
    }
    const struct tdb_buf *vals = max ? &f->maxs : &f->mins;
    const struct fmw_u64s *sizes = max ? &f->max_sizes : &f->min_sizes;
    int rc;
    if (!f->var) {
        uint64_t n = ntiles * f->cell_size;
        rc = tdb_buf_put_u64(b, n);
        if (!rc)
            rc = tdb_buf_put_u64(b, 0);
        for (uint64_t t = 0; t < ntiles && rc == 0; t++) {
            uint8_t *p;
            rc = tdb_buf_grow(b, (size_t)f->cell_size, &p);
            if (rc)
                break;
            if (f->ntiles == ntiles && !fmw_all_null(w, f, cpt, ntiles, t))
                memcpy(p, vals->data + t * f->cell_size,
                       (size_t)f->cell_size);
            else
                memset(p, 0, (size_t)f->cell_size);
        }
        return rc;
    }
    uint64_t total = 0;
    for (uint64_t t = 0; t < ntiles; t++)
        if (!fmw_all_null(w, f, cpt, ntiles, t))
            total += sizes->v[t];
    rc = tdb_buf_put_u64(b, ntiles * 8);
    if (!rc)
        rc = tdb_buf_put_u64(b, total);
    uint64_t o = 0;
    for (uint64_t t = 0; t < ntiles && rc == 0; t++) {
        rc = tdb_buf_put_u64(b, o);
        if (!fmw_all_null(w, f, cpt, ntiles, t))
            o += sizes->v[t];
    }
    o = 0;
    for (uint64_t t = 0; t < ntiles && rc == 0; t++) {
        if (!fmw_all_null(w, f, cpt, ntiles, t))
            rc = tdb_buf_append(b, vals->data + o, (size_t)sizes->v[t]);
        o += sizes->v[t];
    }
    return rc;
}

/* What one field's fragment min, max, sum and null count come from: its
 * tile mins and maxs as stored (two size words, then the values). */
struct fmw_field_tiles {
    const struct tdb_fmw *w;
    const struct fmw_field *f;
    uint64_t cpt, ntiles;
    const struct tdb_buf *tmins, *tmaxs;
};

/* A field's fragment min, max and sum. */
struct fmw_field_mm {
    const uint8_t *min, *max;
    uint64_t min_size, max_size;
    uint8_t nmin[8], nmax[8], sum[8];
};

/* Whether tile t of a nullable field holds nulls only (TileDB skips it). */
static bool fmw_tile_skipped(const struct fmw_field_tiles *ft, uint64_t t)
{
    return ft->f->nullable &&
           fmw_all_null(ft->w, ft->f, ft->cpt, ft->ntiles, t);
}

/* Var-sized values: the least and greatest strings of the tiles'. */
static void fmw_field_mm_var(const struct fmw_field_tiles *ft,
                             struct fmw_field_mm *m)
{
    uint64_t ntiles = ft->ntiles;
    const uint8_t *mins = ft->tmins->data + 16, *maxs = ft->tmaxs->data + 16;
    uint64_t vmin = tdb_le64(ft->tmins->data + 8);
    uint64_t vmax = tdb_le64(ft->tmaxs->data + 8);
    const uint8_t *mind = mins + ntiles * 8, *maxd = maxs + ntiles * 8;
    for (uint64_t t = 0; t < ntiles; t++) {
        if (fmw_tile_skipped(ft, t))
            continue;
        uint64_t a = tdb_le64(mins + 8 * t), c = tdb_le64(maxs + 8 * t);
        uint64_t an = t == ntiles - 1 ? vmin - a
                                      : tdb_le64(mins + 8 * t + 8) - a;
        uint64_t cn = t == ntiles - 1 ? vmax - c
                                      : tdb_le64(maxs + 8 * t + 8) - c;
        if (!m->min && !m->max) {
            m->min = mind + a;
            m->min_size = an;
            m->max = maxd + c;
            m->max_size = cn;
            continue;
        }
        uint64_t k = m->min_size < an ? m->min_size : an;
        int cmp = strncmp((const char *)m->min, (const char *)mind + a,
                          (size_t)k);
        if (cmp != 0 ? cmp > 0 : an < m->min_size) {
            m->min = mind + a;
            m->min_size = an;
        }
        k = m->max_size < cn ? m->max_size : cn;
        cmp = strncmp((const char *)m->max, (const char *)maxd + c,
                      (size_t)k);
        if (cmp != 0 ? cmp < 0 : cn > m->max_size) {
            m->max = maxd + c;
            m->max_size = cn;
        }
    }
}

/* Fixed-size characters: the least and greatest of the tiles'. */
static void fmw_field_mm_char(const struct fmw_field_tiles *ft,
                              struct fmw_field_mm *m)
{
    uint64_t n = ft->f->cvn;
    const uint8_t *mv = ft->tmins->data + 16, *xv = ft->tmaxs->data + 16;
    for (uint64_t t = 0; t < ft->ntiles; t++) {
        if (fmw_tile_skipped(ft, t))
            continue;   /* TileDB then does not advance either */
        if (!m->min || strncmp((const char *)m->min, (const char *)mv,
                               (size_t)n) > 0)
            m->min = mv;
        mv += n;
        if (!m->max || strncmp((const char *)m->max, (const char *)xv,
                               (size_t)n) < 0)
            m->max = xv;
        xv += n;
    }
    m->min_size = m->min ? n : 0;
    m->max_size = m->max ? n : 0;
}

/* Numbers: the least and greatest of the tiles' and the sum of their
 * sums. */
static void fmw_field_mm_num(const struct fmw_field_tiles *ft,
                             struct fmw_field_mm *m)
{
    const struct fmw_field *f = ft->f;
    const uint8_t *mins = ft->tmins->data + 16, *maxs = ft->tmaxs->data + 16;
    unsigned vs = f->vsize;
    if (f->has_mm) {
        fmw_type_limits(f->type, m->nmin, m->nmax);
        for (uint64_t t = 0; t < ft->ntiles; t++) {
            if (fmw_tile_skipped(ft, t))
                continue;
            if (!fmw_lt(f->type, m->nmin, mins + t * vs))
                memcpy(m->nmin, mins + t * vs, vs);
            if (!fmw_lt(f->type, maxs + t * vs, m->nmax))
                memcpy(m->nmax, maxs + t * vs, vs);
        }
        m->min = m->nmin;
        m->max = m->nmax;
        m->min_size = m->max_size = vs;
    }
    if (!f->has_sum)
        return;
    int cls = fmw_sum_class(f->type);
    for (uint64_t t = 0; t < ft->ntiles; t++) {
        if (fmw_tile_skipped(ft, t))
            continue;
        struct fmw_num v;
        uint64_t u = f->sums.len >= 8 * (t + 1)
                         ? tdb_le64(f->sums.data + 8 * t) : 0;
        v.u = u;
        v.i = (int64_t)u;
        memcpy(&v.d, &u, 8);
        if (!fmw_sum_add(cls, m->sum, v))
            break;
    }
}

/* One field's fragment min, max, sum and null count
 * (FragmentMetadata::compute_fragment_min_max_sum_null_count). */
static int fmw_put_fragment_md(const struct fmw_field_tiles *ft,
                               struct tdb_buf *b)
{
    const struct fmw_field *f = ft->f;
    struct fmw_field_mm m = {0};
    /* std::accumulate into an int: the sum wraps to 32 bits and is then
     * sign-extended */
    uint32_t nc32 = 0;
    if (f->nullable && f->has_md)
        for (uint64_t t = 0; t < ft->ntiles; t++)
            nc32 += (uint32_t)f->nulls.v[t];
    uint64_t null_count = (uint64_t)(int64_t)(int32_t)nc32;

    if (f->var) {
        if (f->has_md && f->has_mm)
            fmw_field_mm_var(ft, &m);
    } else if (f->kind == FMW_CHAR) {
        if (f->has_mm)
            fmw_field_mm_char(ft, &m);
    } else if ((f->kind == FMW_SIGNED || f->kind == FMW_UNSIGNED ||
                f->kind == FMW_FLOAT) && f->has_md) {
        fmw_field_mm_num(ft, &m);
    }
    int rc = tdb_buf_put_u64(b, m.min_size);
    if (!rc && m.min_size)
        rc = tdb_buf_append(b, m.min, (size_t)m.min_size);
    if (!rc)
        rc = tdb_buf_put_u64(b, m.max_size);
    if (!rc && m.max_size)
        rc = tdb_buf_append(b, m.max, (size_t)m.max_size);
    if (!rc)
        rc = tdb_buf_append(b, m.sum, 8);
    if (!rc)
        rc = tdb_buf_put_u64(b, null_count);
    return rc;
}

/* Appends one generic tile holding `p` to out, recording its offset. */
static int fmw_gt(const struct tdb_pipeline *p, const uint8_t *key,
                  const struct tdb_buf *payload, struct tdb_buf *out,
                  uint64_t *off, struct tdb_error *err)
{
    *off = out->len;
    static const uint8_t none[1] = {0};
    return tdb_generic_tile_encode(payload->len ? payload->data : none,
                                   payload->len,
                                   &(struct tdb_gt_filtering){p, TDB_CHAR, 1},
                                   key, out, err);
}

/* The fragment's tiles (and, dense, cells per tile), checking that every
 * field that stores tiles has them all. */
static int fmw_tile_count(const struct tdb_fmw *w, uint64_t *ntiles,
                          uint64_t *cpt, struct tdb_error *err)
{
    *cpt = 0;
    if (w->dense) {
        struct fmw_dense geo;
        int rc = fmw_dense_geometry(w, &geo, err);
        if (rc)
            return rc;
        *ntiles = geo.tiles;
        *cpt = geo.cells_per_tile;
    } else {
        *ntiles = w->sparse_tiles ? w->sparse_tiles : w->nmbrs;
        if (!w->ned_set)
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: the sparse "
                           "fragment has no non-empty domain");
    }
    for (uint32_t i = 0; i < w->nfields; i++)
        if (w->f[i].stores_tiles && w->f[i].ntiles != *ntiles) {
            uint32_t api = i < w->s->nattrs ? i : i - 1;
            return tdb_err(err, TDB_E_INVAL, "fragment metadata: field %s "
                           "has %llu tiles, the fragment %llu",
                           fmw_field_name(w, api),
                           (unsigned long long)w->f[i].ntiles,
                           (unsigned long long)*ntiles);
        }
    return 0;
}

/* A metadata file on its way out: its generic tiles so far and where each
 * one starts. */
struct fmw_file {
    const struct tdb_pipeline *pipe;
    const uint8_t *key;
    uint64_t ntiles, cpt;
    struct tdb_buf p;           /* the next generic tile's contents */
    struct tdb_buf file;
    uint64_t rtree_off, frag_off, proc_off;
    uint64_t *goff;             /* 8 per field: the per-field tiles */
    struct tdb_buf *allmins, *allmaxs;
    struct tdb_error *err;
};

/* Appends o->p as a generic tile and records where it starts in *off. */
static int fmw_file_put(struct fmw_file *o, struct tdb_buf *p, uint64_t *off)
{
    return fmw_gt(o->pipe, o->key, p, &o->file, off, o->err);
}

/* Per field: tile offsets, var offsets, var sizes, validity offsets, the
 * mins, the maxs, the sums and the null counts. */
static int fmw_file_fields(const struct tdb_fmw *w, struct fmw_file *o)
{
    uint32_t n = w->nfields;
    uint64_t ntiles = o->ntiles;
    int rc = 0;
    for (int list = 0; list < 4 && rc == 0; list++)
        for (uint32_t i = 0; i < n && rc == 0; i++) {
            const struct fmw_field *f = &w->f[i];
            const struct fmw_u64s *l = list == 0 ? &f->offs
                                       : list == 1 ? &f->var_offs
                                       : list == 2 ? &f->var_sizes
                                                   : &f->val_offs;
            tdb_buf_reset(&o->p);
            rc = fmw_put_list(&o->p, l, ntiles);
            if (!rc)
                rc = fmw_file_put(o, &o->p, &o->goff[list * n + i]);
        }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        rc = fmw_put_minmax(w, &w->f[i], false, o->cpt, ntiles,
                            &o->allmins[i]);
        if (!rc)
            rc = fmw_file_put(o, &o->allmins[i], &o->goff[4 * n + i]);
    }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        rc = fmw_put_minmax(w, &w->f[i], true, o->cpt, ntiles,
                            &o->allmaxs[i]);
        if (!rc)
            rc = fmw_file_put(o, &o->allmaxs[i], &o->goff[5 * n + i]);
    }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const struct fmw_field *f = &w->f[i];
        bool has = f->has_md && f->has_sum && !f->var;
        tdb_buf_reset(&o->p);
        rc = tdb_buf_put_u64(&o->p, has ? ntiles : 0);
        for (uint64_t t = 0; has && t < ntiles && rc == 0; t++)
            rc = tdb_buf_put_u64(&o->p, f->ntiles == ntiles
                                            ? tdb_le64(f->sums.data + 8 * t)
                                            : 0);
        if (!rc)
            rc = fmw_file_put(o, &o->p, &o->goff[6 * n + i]);
    }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const struct fmw_field *f = &w->f[i];
        bool has = f->has_md && f->nullable;
        tdb_buf_reset(&o->p);
        rc = fmw_put_list(&o->p, &f->nulls, has ? ntiles : 0);
        if (!rc)
            rc = fmw_file_put(o, &o->p, &o->goff[7 * n + i]);
    }
    return rc;
}

/* The fragment's own metadata and its processed delete conditions. */
static int fmw_file_fragment(const struct tdb_fmw *w, struct fmw_file *o)
{
    int rc = 0;
    tdb_buf_reset(&o->p);
    for (uint32_t i = 0; i < w->nfields && rc == 0; i++) {
        struct fmw_field_tiles ft = {
            .w = w, .f = &w->f[i], .cpt = o->cpt, .ntiles = o->ntiles,
            .tmins = &o->allmins[i], .tmaxs = &o->allmaxs[i],
        };
        rc = fmw_put_fragment_md(&ft, &o->p);
    }
    if (!rc)
        rc = fmw_file_put(o, &o->p, &o->frag_off);
    if (rc)
        return rc;
    tdb_buf_reset(&o->p);
    rc = tdb_buf_put_u64(&o->p, w->nprocessed);
    for (size_t i = 0; i < w->nprocessed && rc == 0; i++) {
        size_t len = strlen(w->processed[i]);
        rc = tdb_buf_put_u64(&o->p, len);
        if (!rc)
            rc = tdb_buf_append(&o->p, w->processed[i], len);
    }
    if (!rc)
        rc = fmw_file_put(o, &o->p, &o->proc_off);
    return rc;
}

/* The footer: what the fragment is, its file sizes and where its generic
 * tiles start. */
static int fmw_file_footer(const struct tdb_fmw *w, struct fmw_file *o)
{
    const struct tdb_schema *s = w->s;
    struct tdb_buf *file = &o->file;
    uint32_t n = w->nfields;
    size_t foot = file->len, nlen = strlen(w->schema_name);
    int rc = tdb_buf_put_u32(file, TDB_WRITE_VERSION);
    if (!rc)
        rc = tdb_buf_put_u64(file, nlen);
    if (!rc)
        rc = tdb_buf_append(file, w->schema_name, nlen);
    if (!rc)
        rc = tdb_buf_put_u8(file, w->dense ? 1 : 0);
    if (!rc)
        rc = tdb_buf_put_u8(file, 0);      /* non-empty domain set */
    for (uint32_t d = 0; d < s->ndims && rc == 0; d++)
        rc = fmw_put_range(file, &s->dims[d], &w->ned[d]);
    if (!rc)
        rc = tdb_buf_put_u64(file, w->dense ? 0 : o->ntiles);
    if (!rc) {
        uint64_t last = w->dense ? 0 : w->last_tile_cells;
        if (last == 0)
            last = w->dense ? o->cpt : s->capacity;
        rc = tdb_buf_put_u64(file, last);
    }
    if (!rc)
        rc = tdb_buf_put_u8(file, w->has_ts ? 1 : 0);
    if (!rc)
        rc = tdb_buf_put_u8(file, w->has_dm ? 1 : 0);
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = tdb_buf_put_u64(file, w->f[i].fsize);
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = tdb_buf_put_u64(file, w->f[i].fvar);
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = tdb_buf_put_u64(file, w->f[i].fval);
    if (!rc)
        rc = tdb_buf_put_u64(file, o->rtree_off);
    for (uint32_t i = 0; i < 8 * n && rc == 0; i++)
        rc = tdb_buf_put_u64(file, o->goff[i]);
    if (!rc)
        rc = tdb_buf_put_u64(file, o->frag_off);
    if (!rc)
        rc = tdb_buf_put_u64(file, o->proc_off);
    if (!rc)
        rc = tdb_buf_put_u64(file, (uint64_t)(file->len - foot));
    return rc;
}

int tdb_fmw_serialize(struct tdb_fmw *w, const uint8_t *key,
                      struct tdb_buf *out, struct tdb_error *err)
{
    if (!w || !out)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: nothing to "
                       "serialize");
    uint32_t n = w->nfields;
    struct fmw_file o = {.key = key, .err = err};
    int rc = fmw_tile_count(w, &o.ntiles, &o.cpt, err);
    if (rc)
        return rc;

    struct tdb_filter gz;
    (void)tdb_filter_init(&gz, TDB_FILTER_GZIP);   /* GZIP keeps no state */
    gz.level = FMW_GT_LEVEL;
    struct tdb_pipeline pipe = {FMW_GT_CHUNK, 1, &gz};
    if (!gz.ops)
        return tdb_err(err, TDB_E_UNSUPPORTED, "fragment metadata: no GZIP "
                       "filter");
    o.pipe = &pipe;

    o.goff = calloc((size_t)n * 8, sizeof *o.goff);
    o.allmins = calloc(n, sizeof *o.allmins);
    o.allmaxs = calloc(n, sizeof *o.allmaxs);
    rc = (!o.goff || !o.allmins || !o.allmaxs) ? TDB_E_NOMEM : 0;
    if (!rc)
        rc = fmw_rtree(w, o.ntiles, &o.p, err);
    if (!rc)
        rc = fmw_file_put(&o, &o.p, &o.rtree_off);
    if (!rc)
        rc = fmw_file_fields(w, &o);
    if (!rc)
        rc = fmw_file_fragment(w, &o);
    if (!rc)
        rc = fmw_file_footer(w, &o);
    if (!rc)
        rc = tdb_buf_append(out, o.file.data, o.file.len);

    tdb_buf_free(&o.p);
    tdb_buf_free(&o.file);
    for (uint32_t i = 0; o.allmins && i < n; i++)
        tdb_buf_free(&o.allmins[i]);
    for (uint32_t i = 0; o.allmaxs && i < n; i++)
        tdb_buf_free(&o.allmaxs[i]);
    free(o.allmins);
    free(o.allmaxs);
    free(o.goff);
    if (rc == TDB_E_NOMEM)
        return tdb_err(err, rc, "fragment metadata: out of memory");
    return rc;
}
