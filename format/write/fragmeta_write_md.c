/* fragmeta_write_md.c: TileDB's tile metadata generator for
 * __fragment_metadata.tdb (format_spec/fragment.md: tile mins, maxes,
 * sums, null counts), fed the slabs TileDB's dense tiler visits, byte for
 * byte as TileDB 2.29 computes them. */
#include "write/fragmeta_write.h"

#include <float.h>
#include <math.h>

enum fmw_kind tdb_fmw_kind_of(unsigned t)
{
    switch (tdb_value_class(t)) {
    case TDB_VC_SIGNED: return FMW_SIGNED;
    case TDB_VC_UNSIGNED: return FMW_UNSIGNED;
    case TDB_VC_FLOAT: return FMW_FLOAT;
    default: break;
    }
    if (t == TDB_CHAR || t == TDB_STRING_ASCII)
        return FMW_CHAR;
    if (t == TDB_BLOB || t == TDB_GEOM_WKB || t == TDB_GEOM_WKT)
        return FMW_BYTE;
    return FMW_NONE;
}

/* A value loaded as the generator's C++ type: numbers by their class,
 * characters as the signed char they are there. */
static struct tdb_num fmw_load(unsigned type, const uint8_t *p)
{
    enum tdb_vclass c = tdb_fmw_kind_of(type) == FMW_CHAR ? TDB_VC_SIGNED
                                                      : tdb_value_class(type);
    return tdb_num_load(c, tdb_dt_size(type), p);
}

/* a < b in the generator's type for `type`. */
bool tdb_fmw_lt(unsigned type, const uint8_t *a, const uint8_t *b)
{
    struct tdb_num x = fmw_load(type, a), y = fmw_load(type, b);
    return tdb_num_cmp(&x, &y, NULL) < 0;
}

/* The generator's starting min (the type's maximum) and max (its lowest). */
void tdb_fmw_type_limits(unsigned type, uint8_t *min, uint8_t *max)
{
    memset(min, 0, 8);
    memset(max, 0, 8);
    tdb_value_limits(type, max, min);
}

/* The type of the running sum: 0 int64, 1 uint64, 2 double. */
int tdb_fmw_sum_class(unsigned type)
{
    enum fmw_kind k = tdb_fmw_kind_of(type);
    return k == FMW_FLOAT ? 2 : k == FMW_UNSIGNED ? 1 : 0;
}

/* Adds v to the 8-byte sum `s` as TileDB does; false when it saturated
 * (TileDB then stops adding for this run of cells). */
bool tdb_fmw_sum_add(int cls, uint8_t *s, struct tdb_num v)
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

void tdb_fmw_slab_var(struct fmw_gen *g, uint64_t start, uint64_t end)
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

/* The numeric min/max and sum loops of tdb_fmw_slab_fixed for one value type
 * (cell = one value, as has_mm and has_sum require): the same comparisons
 * and additions as tdb_fmw_lt and tdb_fmw_sum_add on the values of the class,
 * without converting every value through fmw_load.  The min and max keep
 * the bytes of the cell they came from. */
#define FMW_TYPED(SUF, T, LOAD, ACC, ADD)                                     \
    /* the sum, with min/max (mm) or not: one loop, inlined with constant  \
     * flags into the two below (both at once: the min/max work hides in   \
     * the additions' latency; a number with min/max has a sum too) */     \
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

/* tdb_fmw_sum_add's three classes on a running sum held in registers. */
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
    /* tdb_fmw_sum_add's test with its two halves swapped (neither has effects):
     * the rare one first, a branch on the signs would mispredict */
    if (fabs(a) > DBL_MAX - fabs(b) && (a < 0.0) == (b < 0.0)) {
        *s = a < 0.0 ? -DBL_MAX : DBL_MAX;
        return false;
    }
    *s = a + b;
    return true;
}

/* the core loaders at a constant size: inlined to a plain load */
#define FMW_LD_I8(p) ((int8_t)tdb_int_load(p, 1, true))
#define FMW_LD_I16(p) ((int16_t)tdb_int_load(p, 2, true))
#define FMW_LD_I32(p) ((int32_t)tdb_int_load(p, 4, true))
#define FMW_LD_I64(p) ((int64_t)tdb_int_load(p, 8, true))
#define FMW_LD_U8(p) ((uint8_t)tdb_int_load(p, 1, false))
#define FMW_LD_U16(p) ((uint16_t)tdb_int_load(p, 2, false))
#define FMW_LD_U32(p) ((uint32_t)tdb_int_load(p, 4, false))
#define FMW_LD_U64(p) (tdb_int_load(p, 8, false))

FMW_TYPED(f32, float, tdb_f32_load, double, fmw_add_d)
FMW_TYPED(f64, double, tdb_f64_load, double, fmw_add_d)
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
    void (*sum)(struct fmw_gen *, uint64_t, uint64_t);
    void (*mmsum)(struct fmw_gen *, uint64_t, uint64_t);
};

static struct fmw_typed fmw_typed_of(const struct fmw_field *f)
{
    struct fmw_typed t = {NULL, NULL};
    if (f->cell_size != f->vsize)
        return t;
#define FMW_PICK(SUF)                                                         \
    (t = (struct fmw_typed){fmw_sum_##SUF, fmw_mmsum_##SUF})
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

/* Fixed-size characters: the least and greatest cells, by strncmp. */
static void fmw_slab_char(struct fmw_gen *g, uint64_t start, uint64_t end)
{
    const struct fmw_field *f = g->f;
    uint64_t cs = f->cell_size;
    if (f->nullable) {
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
        return;
    }
    if (g->size == 0 || start >= end)
        return;
    uint64_t first = start;
    if (!g->min) {
        g->min = g->max = g->data + start * cs;
        first++;
    }
    for (uint64_t c = first; c < end; c++) {
        const uint8_t *v = g->data + c * cs;
        if (strncmp((const char *)g->min, (const char *)v, (size_t)cs) > 0)
            g->min = v;
        if (strncmp((const char *)g->max, (const char *)v, (size_t)cs) < 0)
            g->max = v;
    }
}

/* Numbers: the least and greatest values (and, with the typed loops, the
 * sum at once).  @return true when the sum is done too. */
static bool fmw_slab_num(struct fmw_gen *g, const struct fmw_typed *t,
                         uint64_t start, uint64_t end)
{
    const struct fmw_field *f = g->f;
    if (!g->num_init) {
        tdb_fmw_type_limits(f->type, g->nmin, g->nmax);
        g->num_init = true;
    }
    if (f->has_sum && fmw_run_typed(t->mmsum, g, start, end))
        return true;
    unsigned vs = f->vsize;
    for (uint64_t c = start; c < end; c++) {
        const uint8_t *v = g->data + c * f->cell_size;
        bool is_null = f->nullable && g->validity[c] == 0;
        if (!is_null && !tdb_fmw_lt(f->type, g->nmin, v))
            memcpy(g->nmin, v, vs);
        if (!is_null && !tdb_fmw_lt(f->type, v, g->nmax))
            memcpy(g->nmax, v, vs);
        g->nulls += is_null;
    }
    return false;
}

void tdb_fmw_slab_fixed(struct fmw_gen *g, uint64_t start, uint64_t end)
{
    const struct fmw_field *f = g->f;
    if (f->kind == FMW_NONE)
        return;
    const struct fmw_typed t = fmw_typed_of(f);
    g->min_size = g->max_size = f->cell_size;
    if (f->has_mm && f->kind == FMW_CHAR) {
        fmw_slab_char(g, start, end);
    } else if (f->has_mm) {
        if (fmw_slab_num(g, &t, start, end))
            return;
    } else if (f->nullable) {
        /* no min/max: TileDB counts the nulls of the whole tile, once per
         * slab */
        for (uint64_t c = 0; c < g->ncells; c++)
            g->nulls += g->validity[c] == 0;
    }
    if (f->has_sum && !fmw_run_typed(t.sum, g, start, end)) {
        int cls = tdb_fmw_sum_class(f->type);
        for (uint64_t c = start; c < end; c++) {
            if (f->nullable && g->validity[c] == 0)
                continue;
            const uint8_t *v = g->data + c * f->cell_size;
            if (!tdb_fmw_sum_add(cls, g->sum, fmw_load(f->type, v)))
                break;
        }
    }
}

/* ------------------------------------------------------ dense geometry */

/* A coordinate of integer type dt (8 zero-padded bytes) as 64 bits. */
static uint64_t fmw_coord(unsigned dt, const uint8_t *p)
{
    return tdb_value_load(dt, p).u;
}

int tdb_fmw_dense_geometry(const struct tdb_fmw *w, struct fmw_dense *g,
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
    uint64_t slo[TDB_MAX_DIMS], shi[TDB_MAX_DIMS], len[TDB_MAX_DIMS];
    uint64_t tlo[TDB_MAX_DIMS], strides[TDB_MAX_DIMS];
    uint64_t start;             /* the first cell in the tile */
    uint64_t copy, rhi[TDB_MAX_DIMS];
    uint32_t nr, first_d;
};

/* The box of tile `id` (tile order) the non-empty domain covers, and the
 * strides of the tile's cell order. */
static void fmw_slabs_box(const struct tdb_fmw *w, const struct fmw_dense *g,
                          uint64_t id, struct fmw_slabs *sl)
{
    uint32_t nd = g->nd;
    uint64_t tc[TDB_MAX_DIMS];
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

void tdb_fmw_dense_slabs(const struct tdb_fmw *w,
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
    uint64_t toff[TDB_MAX_DIMS], cc[TDB_MAX_DIMS];
    for (uint32_t i = 0; i < sl.nr; i++) {
        toff[i] = sl.start;
        cc[i] = 0;
    }
    uint32_t d = sl.nr - 1;
    for (;;) {
        if (var)
            tdb_fmw_slab_var(gen, toff[d], toff[d] + sl.copy);
        else
            tdb_fmw_slab_fixed(gen, toff[d], toff[d] + sl.copy);
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

