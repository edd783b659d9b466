/* test_fragmeta_write_md.c: the typed loops of the fragment metadata
 * writer (format/write/fragmeta_write_md.c): each numeric datatype's sum
 * alone (a sparse fragment's dimensions), and the slabs of dense
 * column-major cells, each tile's min, max, sum and nulls against the
 * test's own. */
#include "model/fragmeta.h"
#include "write/fragmeta_write.h"
#include "fmw_fixture.h"
#include "../support.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------ typed min/max and sum loops */

/* The ten numeric datatypes, each with min/max and sum loops of its own
 * in the generator. */
static const unsigned num_types[10] = {
    TDB_INT8, TDB_INT16, TDB_INT32, TDB_INT64, TDB_UINT8,
    TDB_UINT16, TDB_UINT32, TDB_UINT64, TDB_FLOAT32, TDB_FLOAT64,
};

#define TV_CELLS 8

/* A value of one of num_types as the test's own number: i for the
 * signed types, u for the unsigned ones, d for the floats. */
struct tv {
    int64_t i;
    uint64_t u;
    double d;
};

static unsigned tv_size(unsigned t)
{
    switch (t) {
    case TDB_INT8: case TDB_UINT8: return 1;
    case TDB_INT16: case TDB_UINT16: return 2;
    case TDB_INT32: case TDB_UINT32: case TDB_FLOAT32: return 4;
    default: return 8;
    }
}

static bool tv_signed(unsigned t)
{
    return t == TDB_INT8 || t == TDB_INT16 || t == TDB_INT32 ||
           t == TDB_INT64;
}

static bool tv_float(unsigned t)
{
    return t == TDB_FLOAT32 || t == TDB_FLOAT64;
}

/* v as datatype t stores it: little-endian, tv_size(t) bytes. */
static void tv_store(unsigned t, struct tv v, uint8_t *p)
{
    unsigned n = tv_size(t);
    uint64_t bits = tv_signed(t) ? (uint64_t)v.i : v.u;
    if (t == TDB_FLOAT32) {
        float f = (float)v.d;
        uint32_t b32;
        memcpy(&b32, &f, 4);
        bits = b32;
    } else if (t == TDB_FLOAT64) {
        memcpy(&bits, &v.d, 8);
    }
    for (unsigned k = 0; k < n; k++)
        p[k] = (uint8_t)(bits >> (8 * k));
}

static bool tv_lt(unsigned t, struct tv a, struct tv b)
{
    return tv_float(t) ? a.d < b.d : tv_signed(t) ? a.i < b.i : a.u < b.u;
}

static bool tv_eq(unsigned t, struct tv a, struct tv b)
{
    return tv_float(t) ? a.d == b.d : tv_signed(t) ? a.i == b.i : a.u == b.u;
}

/* Signed cells: tile 0 the type's extremes and its neighbours, all
 * valid; tile 1 values inside, its nulls at the extremes. */
static void tv_cells_signed(unsigned t, int k, struct tv *v)
{
    int64_t hi = INT64_MAX >> (64 - 8 * tv_size(t)), lo = -hi - 1;
    int64_t q = (hi >> 2) + 1;
    const int64_t t0[TV_CELLS] = {-1, hi, 0, lo, 5, lo + 1, hi - 1, -q};
    const int64_t t1[TV_CELLS] = {lo, -q + 3, hi, -1, q, 2, lo + 1, 7};
    for (int c = 0; c < TV_CELLS; c++)
        v[c].i = k ? t1[c] : t0[c];
}

/* Unsigned cells, as tv_cells_signed: h has the sign bit alone, which a
 * signed load would take for the least value. */
static void tv_cells_unsigned(unsigned t, int k, struct tv *v)
{
    uint64_t max = UINT64_MAX >> (64 - 8 * tv_size(t)), h = max / 2 + 1;
    const uint64_t t0[TV_CELLS] = {h, max, 1, 0, h - 1, max - 1, 7, h + 1};
    const uint64_t t1[TV_CELLS] = {0, h + 5, max, 3, h - 1, 9, max - 1, 3};
    for (int c = 0; c < TV_CELLS; c++)
        v[c].u = k ? t1[c] : t0[c];
}

/* Float cells, as tv_cells_signed, rounded to the type: tile 1's least
 * valid value is 0 twice, +0.0 then -0.0. */
static void tv_cells_float(unsigned t, int k, struct tv *v)
{
    double lim = t == TDB_FLOAT32 ? FLT_MAX : DBL_MAX;
    const double t0[TV_CELLS] = {-1.5, lim, -0.0, -lim,
                                 0.0, 1e-30, 3.25, -1e30};
    const double t1[TV_CELLS] = {-lim, 2.5, 0.0, lim,
                                 -0.0, 1e10, 7.75, -lim};
    for (int c = 0; c < TV_CELLS; c++) {
        double d = k ? t1[c] : t0[c];
        v[c].d = t == TDB_FLOAT32 ? (double)(float)d : d;
    }
}

/* Tile k (0 or 1) of the test's cells of type t, and their validity
 * (tile 0: all valid; tile 1: nulls where the values lie outside the
 * valid ones). */
static void tv_cells(unsigned t, int k, struct tv *v, uint8_t *valid)
{
    static const uint8_t v1i[TV_CELLS] = {0, 1, 0, 1, 1, 1, 0, 1};
    static const uint8_t v1f[TV_CELLS] = {0, 1, 1, 0, 1, 1, 1, 0};
    memset(v, 0, TV_CELLS * sizeof *v);
    if (tv_float(t))
        tv_cells_float(t, k, v);
    else if (tv_signed(t))
        tv_cells_signed(t, k, v);
    else
        tv_cells_unsigned(t, k, v);
    for (int c = 0; c < TV_CELLS; c++)
        valid[c] = k == 0 ? 1 : tv_float(t) ? v1f[c] : v1i[c];
}

/* The cells holding the least and the greatest valid value (of equal
 * ones the last, as TileDB keeps them); -1 when none is valid. */
static void tv_minmax(unsigned t, const struct tv *v, const uint8_t *valid,
                      int n, int *imin, int *imax)
{
    int a = -1, b = -1;
    for (int c = 0; c < n; c++) {
        if (!valid[c])
            continue;
        if (a < 0 || tv_lt(t, v[c], v[a]))
            a = c;
        if (b < 0 || tv_lt(t, v[b], v[c]))
            b = c;
    }
    for (int c = 0; c < n && a >= 0; c++) {
        if (valid[c] && tv_eq(t, v[c], v[a]))
            *imin = c;
        if (valid[c] && tv_eq(t, v[c], v[b]))
            *imax = c;
    }
    if (a < 0)
        *imin = *imax = -1;
}

/* The sum TileDB keeps of the valid cells: int64, uint64 or double
 * bits; an integer sum that overflows stops at the type's end and adds
 * nothing more (no float cell here comes near DBL_MAX with the sum's
 * sign). */
static void tv_sum(unsigned t, const struct tv *v, const uint8_t *valid,
                   int n, uint8_t out[8])
{
    int64_t si = 0;
    uint64_t su = 0;
    double sd = 0.0;
    for (int c = 0; c < n; c++) {
        if (!valid[c])
            continue;
        if (tv_float(t)) {
            sd += v[c].d;
        } else if (tv_signed(t)) {
            if (__builtin_add_overflow(si, v[c].i, &si)) {
                si = v[c].i > 0 ? INT64_MAX : INT64_MIN;
                break;
            }
        } else if (__builtin_add_overflow(su, v[c].u, &su)) {
            su = UINT64_MAX;
            break;
        }
    }
    if (tv_float(t))
        memcpy(&su, &sd, 8);
    else if (tv_signed(t))
        su = (uint64_t)si;
    tdb_st64(out, su);
}

/* A schema named `name` of type array_type, cell order `order`, with nd
 * dimensions d0.. (types dt, no extents, domains filled in by the
 * caller) and nattrs attributes a0.. (types at, one value a cell). */
static struct tdb_schema *num_schema(const char *name, unsigned array_type,
                                     unsigned order, uint32_t nd,
                                     const unsigned *dt, uint32_t nattrs,
                                     const unsigned *at)
{
    struct tdb_schema *s = calloc(1, sizeof *s);
    char n[16];
    s->name = strdup(name);
    s->version = 22;
    s->array_type = array_type;
    s->cell_order = s->tile_order = order;
    s->capacity = TV_CELLS;
    s->ndims = nd;
    s->dims = calloc(nd, sizeof *s->dims);
    for (uint32_t d = 0; d < nd; d++) {
        fm_fmt(n, sizeof n, "d%u", d);
        s->dims[d].name = strdup(n);
        s->dims[d].type = dt[d];
        s->dims[d].cell_val_num = 1;
    }
    s->nattrs = nattrs;
    s->attrs = calloc(nattrs, sizeof *s->attrs);
    for (uint32_t a = 0; a < nattrs; a++) {
        fm_fmt(n, sizeof n, "a%u", a);
        s->attrs[a].name = strdup(n);
        s->attrs[a].type = at[a];
        s->attrs[a].cell_val_num = 1;
    }
    return s;
}

/* The domain of type t's dimension: its whole range (the floats':
 * -MAX..MAX). */
static void tv_domain(unsigned t, uint8_t *lo, uint8_t *hi)
{
    unsigned n = tv_size(t);
    struct tv a = {0, 0, 0.0}, b = {0, 0, 0.0};
    a.i = -(INT64_MAX >> (64 - 8 * n)) - 1;
    b.i = INT64_MAX >> (64 - 8 * n);
    b.u = UINT64_MAX >> (64 - 8 * n);
    a.d = t == TDB_FLOAT32 ? -FLT_MAX : -DBL_MAX;
    b.d = -a.d;
    memset(lo, 0, 8);
    memset(hi, 0, 8);
    tv_store(t, a, lo);
    tv_store(t, b, hi);
}

/* Sparse tile k of the sum test: every dimension's cells (tv_cells, all
 * of them: dimensions are never null), a0 = 10 * k + cell, and the
 * tile's MBR. */
static void sum_add_tile(struct tdb_fmw *w, const struct tdb_schema *s,
                         int k)
{
    struct tdb_error err = {0};
    struct tdb_range mbr[10];
    uint8_t cells[TV_CELLS * 8], a0[TV_CELLS * 4], valid[TV_CELLS];
    struct tv v[TV_CELLS];
    memset(mbr, 0, sizeof mbr);
    for (int c = 0; c < TV_CELLS; c++)
        tdb_st32(a0 + 4 * c, (uint32_t)(10 * k + c));
    CHECK_EQ_INT(fm_add_tile(w, 0, 40 * (uint64_t)k, 0, 0, 0, a0, sizeof a0,
                          NULL, TV_CELLS, NULL, &err), 0);
    for (uint32_t d = 0; d < s->ndims; d++) {
        unsigned t = s->dims[d].type, n = tv_size(t);
        int imin = 0, imax = 0;
        tv_cells(t, k, v, valid);
        memset(valid, 1, sizeof valid);
        for (int c = 0; c < TV_CELLS; c++)
            tv_store(t, v[c], cells + (size_t)c * n);
        tv_minmax(t, v, valid, TV_CELLS, &imin, &imax);
        memcpy(mbr[d].lo, cells + (size_t)imin * n, n);
        memcpy(mbr[d].hi, cells + (size_t)imax * n, n);
        CHECK_EQ_INT(fm_add_tile(w, 1 + d, 100 * (uint64_t)k, 0, 0, 0, cells,
                              (uint64_t)TV_CELLS * n, NULL, TV_CELLS, NULL,
                              &err), 0);
    }
    CHECK_EQ_INT(tdb_fmw_add_mbr(w, mbr, &err), 0);
}

/* The metadata of a sparse fragment of two tiles of s into b. */
static int sum_build(struct tdb_schema *s, struct tdb_buf *b)
{
    struct tdb_error err = {0};
    struct tdb_fmw *w = NULL;
    struct tdb_range ned[10];
    memset(ned, 0, sizeof ned);
    int rc = tdb_fmw_create(&w, s, s->name, false, &err);
    if (rc)
        return rc;
    for (int k = 0; k < 2; k++)
        sum_add_tile(w, s, k);
    tdb_fmw_set_sparse_tiles(w, 2, TV_CELLS);
    for (uint32_t d = 0; d < s->ndims; d++)
        tv_domain(s->dims[d].type, ned[d].lo, ned[d].hi);
    rc = tdb_fmw_set_ned(w, ned, &err);
    for (uint32_t f = 0; !rc && f < s->nattrs + s->ndims; f++)
        rc = tdb_fmw_set_file_sizes(w, f, 200, 0, 0);
    if (!rc)
        rc = tdb_fmw_serialize(w, NULL, b, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    tdb_fmw_free(w);
    return rc;
}

/* Dimension d's tile sums in fm (and no tile mins: dimensions have
 * none) against the test's own sums of its cells. */
static void sum_check_dim(struct tdb_io *io, const struct tdb_fragmeta *fm,
                          uint32_t d)
{
    unsigned t = fm->schema->dims[d].type;
    uint32_t f = fm->schema->nattrs + d;
    struct tdb_buf g = {0};
    CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_mins[f], &g), 0);
    CHECK_EQ_INT(g.len, 16);
    CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_sums[f], &g), 0);
    CHECK_EQ_INT(g.len, 8 + 16);
    for (int k = 0; k < 2 && g.len == 24; k++) {
        struct tv v[TV_CELLS];
        uint8_t valid[TV_CELLS], want[8];
        tv_cells(t, k, v, valid);
        memset(valid, 1, sizeof valid);
        tv_sum(t, v, valid, TV_CELLS, want);
        if (memcmp(g.data + 8 + 8 * k, want, 8) != 0)
            fprintf(stderr, "  dimension of type %u tile %d: sum %llx, "
                    "expected %llx\n", t, k,
                    (unsigned long long)tdb_le64(g.data + 8 + 8 * k),
                    (unsigned long long)tdb_le64(want));
        CHECK_MEM(g.data + 8 + 8 * k, want, 8);
    }
    tdb_buf_free(&g);
}

/* The sum loops alone: a sparse fragment's dimensions, one of each
 * numeric type, have tile sums and no min/max; their cells hold the
 * types' extremes (the 64-bit sums saturate). */
static void test_typed_sum_alone(void)
{
    static const unsigned at[1] = {TDB_INT32};
    struct tdb_schema *s = num_schema("__1_1_sumschema", TDB_SPARSE,
                                      TDB_ROW_MAJOR, 10, num_types, 1, at);
    for (uint32_t d = 0; d < s->ndims; d++)
        tv_domain(s->dims[d].type, s->dims[d].lo, s->dims[d].hi);
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    struct tdb_io io;
    struct tdb_fragmeta *fm = NULL;
    CHECK_EQ_INT(sum_build(s, &b), 0);
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    CHECK_EQ_INT(fm_roundtrip(&io, &b, s, NULL, NULL, &fm, &err), 0);
    if (!fm)
        fprintf(stderr, "  %s\n", err.msg);
    for (uint32_t d = 0; fm && d < s->ndims; d++)
        sum_check_dim(&io, fm, d);
    tdb_fragmeta_free(fm);
    tdb_io_free(&io);
    tdb_buf_free(&b);
    tdb_schema_free(s);
}

/* ------------------------------------- dense, column-major cells */

/* A dense array of INT32 dimensions [0, dhi] with extents ext, cells
 * and tiles column-major or not, written (column-major) over the region
 * lo..hi; attributes a0 INT16 and a1 FLOAT64 nullable. */
struct col_case {
    uint32_t nd;
    unsigned tile_order;
    int32_t dhi[3], ext[3], lo[3], hi[3];
};

/* A tile of a col_case: its cells' values, validity, and what the test
 * expects of the region's cells in it. */
struct col_tile {
    uint64_t ncells;
    uint8_t i16[128], f64[512], val[64];
    int16_t imin, imax;
    int64_t isum;
    double fmin, fmax, fsum;
    uint64_t nulls, inside, valid;
};

/* Cell (x0, x1, x2) of the region: its a0, and its a1 (NaN: a null;
 * the others multiples of 0.25, whose sums are exact in any order). */
static int16_t col_i16(const int32_t *x)
{
    return (int16_t)((x[0] - 3) * 700 + x[1] * 37 - x[2] * 5);
}

static double col_f64(const int32_t *x)
{
    if ((x[0] + 2 * x[1] + x[2]) % 4 == 0)
        return NAN;
    return x[0] * 0.5 - x[1] * 1.25 + x[2] * 0.25 - 1.0;
}

/* Stores cell c of tile t: inside the region its values (a null's a1
 * is -1e300), outside INT16 and +-1e300 extremes, valid. */
static void col_put(struct col_tile *t, uint64_t c, const int32_t *x,
                    bool in)
{
    int16_t i = in ? col_i16(x) : c % 2 ? INT16_MAX : INT16_MIN;
    double f = in ? col_f64(x) : c % 2 ? 1e300 : -1e300;
    bool null = isnan(f);
    uint64_t u;
    tdb_st16(t->i16 + 2 * c, (uint16_t)i);
    t->val[c] = !null;
    if (null)
        f = -1e300;
    memcpy(&u, &f, 8);
    tdb_st64(t->f64 + 8 * c, u);
    if (!in)
        return;
    if (t->inside++ == 0)
        t->imin = t->imax = i;
    t->imin = i < t->imin ? i : t->imin;
    t->imax = i > t->imax ? i : t->imax;
    t->isum += i;
    t->nulls += null;
    if (null)
        return;
    if (t->valid++ == 0)
        t->fmin = t->fmax = f;
    t->fmin = f < t->fmin ? f : t->fmin;
    t->fmax = f > t->fmax ? f : t->fmax;
    t->fsum += f;
}

/* Tile `id` (in the case's tile order) of the region's tiles: every
 * cell, column-major inside the tile, by col_put. */
static void col_fill(const struct col_case *cc, uint64_t id,
                     struct col_tile *t)
{
    uint32_t nd = cc->nd;
    int32_t tlo[3] = {0, 0, 0};
    memset(t, 0, sizeof *t);
    for (uint32_t j = 0; j < nd; j++) {
        /* row-major tiles: the last dimension's tile index runs fastest */
        uint32_t d = cc->tile_order == TDB_COL_MAJOR ? j : nd - 1 - j;
        int32_t t0 = cc->lo[d] / cc->ext[d];
        int32_t nt = cc->hi[d] / cc->ext[d] - t0 + 1;
        tlo[d] = (t0 + (int32_t)(id % (uint64_t)nt)) * cc->ext[d];
        id /= (uint64_t)nt;
    }
    t->ncells = 1;
    for (uint32_t d = 0; d < nd; d++)
        t->ncells *= (uint64_t)cc->ext[d];
    for (uint64_t c = 0; c < t->ncells; c++) {
        int32_t x[3] = {0, 0, 0};
        uint64_t r = c;
        bool in = true;
        for (uint32_t d = 0; d < nd; d++) {
            x[d] = tlo[d] + (int32_t)(r % (uint64_t)cc->ext[d]);
            r /= (uint64_t)cc->ext[d];
            in = in && x[d] >= cc->lo[d] && x[d] <= cc->hi[d];
        }
        col_put(t, c, x, in);
    }
}

/* The region's tile count. */
static uint64_t col_tiles(const struct col_case *cc)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < cc->nd; d++)
        n *= (uint64_t)(cc->hi[d] / cc->ext[d] - cc->lo[d] / cc->ext[d] + 1);
    return n;
}

/* The case's schema: tdb_schema_free it. */
static struct tdb_schema *col_schema(const struct col_case *cc)
{
    static const unsigned dt[3] = {TDB_INT32, TDB_INT32, TDB_INT32};
    static const unsigned at[2] = {TDB_INT16, TDB_FLOAT64};
    struct tdb_schema *s = num_schema("__1_1_colschema", TDB_DENSE,
                                      TDB_COL_MAJOR, cc->nd, dt, 2, at);
    s->tile_order = cc->tile_order;
    s->attrs[1].nullable = true;
    for (uint32_t d = 0; d < cc->nd; d++) {
        s->dims[d].has_extent = true;
        tdb_st32(s->dims[d].hi, (uint32_t)cc->dhi[d]);
        tdb_st32(s->dims[d].extent, (uint32_t)cc->ext[d]);
    }
    return s;
}

/* The metadata of the case's fragment, written column-major, into b. */
static int col_build(const struct col_case *cc, struct tdb_schema *s,
                     struct tdb_buf *b)
{
    struct tdb_error err = {0};
    struct tdb_fmw *w = NULL;
    struct tdb_range ned[3];
    struct col_tile t;
    int rc = tdb_fmw_create(&w, s, s->name, true, &err);
    if (rc)
        return rc;
    for (uint32_t d = 0; d < cc->nd; d++)
        ned[d] = fm_range_i32(cc->lo[d], cc->hi[d]);
    rc = tdb_fmw_set_ned(w, ned, &err);
    if (!rc)
        rc = tdb_fmw_set_dense_layout(w, TDB_COL_MAJOR);
    uint64_t n = col_tiles(cc);
    for (uint64_t id = 0; !rc && id < n; id++) {
        col_fill(cc, id, &t);
        rc = fm_add_tile(w, 0, 100 * id, 0, 0, 0, t.i16, 2 * t.ncells, NULL,
                      t.ncells, NULL, &err);
        if (!rc)
            rc = fm_add_tile(w, 1, 400 * id, 0, 0, 50 * id, t.f64,
                          8 * t.ncells, NULL, t.ncells, t.val, &err);
    }
    if (!rc)
        rc = tdb_fmw_set_file_sizes(w, 0, 100 * n, 0, 0);
    if (!rc)
        rc = tdb_fmw_set_file_sizes(w, 1, 400 * n, 0, 50 * n);
    if (!rc)
        rc = tdb_fmw_serialize(w, NULL, b, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    tdb_fmw_free(w);
    return rc;
}

/* Tile `id` of case ci: its a0 and a1 metadata read back from the
 * generic tiles g (mins, maxs, sums of field 0 then 1) against t. */
static void col_check_tile(const struct tdb_buf *g, size_t ci, uint64_t id,
                           const struct col_tile *t)
{
    const uint8_t *m0 = g[0].data + 16, *x0 = g[1].data + 16;
    const uint8_t *s0 = g[2].data + 8, *m1 = g[3].data + 16;
    const uint8_t *x1 = g[4].data + 16, *s1 = g[5].data + 8;
    int16_t imin = (int16_t)tdb_le16(m0 + 2 * id);
    int16_t imax = (int16_t)tdb_le16(x0 + 2 * id);
    int64_t isum = (int64_t)tdb_le64(s0 + 8 * id);
    double fmin = fm_f64(m1 + 8 * id), fmax = fm_f64(x1 + 8 * id);
    double fsum = fm_f64(s1 + 8 * id);
    CHECK(t->inside > 0 && t->valid > 0);
    bool ok = imin == t->imin && imax == t->imax && isum == t->isum &&
              fmin == t->fmin && fmax == t->fmax && fsum == t->fsum;
    if (!ok)
        fprintf(stderr, "  case %zu tile %llu: a0 %d %d %lld, a1 %g %g %g;"
                " expected %d %d %lld, %g %g %g\n", ci,
                (unsigned long long)id, imin, imax, (long long)isum, fmin,
                fmax, fsum, t->imin, t->imax, (long long)t->isum, t->fmin,
                t->fmax, t->fsum);
    CHECK(ok);
}

/* Every tile's metadata in fm (case ci) against the test's own
 * (col_fill). */
static void col_check(struct tdb_io *io, struct tdb_fragmeta *fm,
                      const struct col_case *cc, size_t ci)
{
    struct tdb_error err = {0};
    struct tdb_buf g[6] = {{0}};
    uint64_t n = col_tiles(cc);
    CHECK_EQ_INT(tdb_fragmeta_tile_num(fm), n);
    for (uint32_t f = 0; f < 2; f++) {
        CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_mins[f], &g[3 * f]), 0);
        CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_maxs[f], &g[3 * f + 1]), 0);
        CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_sums[f], &g[3 * f + 2]), 0);
    }
    CHECK_EQ_INT(tdb_fragmeta_load_field(fm, 1, &err), 0);
    const uint64_t *nulls = fm->tiles[1].null_counts;
    CHECK(nulls != NULL);
    bool sized = g[0].len == 16 + 2 * n && g[1].len == 16 + 2 * n &&
                 g[2].len == 8 + 8 * n && g[3].len == 16 + 8 * n &&
                 g[4].len == 16 + 8 * n && g[5].len == 8 + 8 * n;
    CHECK(sized);
    for (uint64_t id = 0; sized && nulls && id < n; id++) {
        struct col_tile t;
        col_fill(cc, id, &t);
        col_check_tile(g, ci, id, &t);
        CHECK_EQ_INT(nulls[id], t.nulls);
    }
    for (int i = 0; i < 6; i++)
        tdb_buf_free(&g[i]);
}

/* Dense fragments of column-major cells written column-major: the
 * metadata of each tile covers the region's cells in it, slab by slab,
 * and none of the others (which hold the types' extremes). */
static void test_dense_colmajor_slabs(void)
{
    static const struct col_case cases[] = {
        /* d0 partial: slabs of d0's run, one per d1 */
        {2, TDB_COL_MAJOR, {7, 7}, {4, 4}, {1, 2}, {6, 5}},
        /* d0 one whole tile: one slab a tile */
        {2, TDB_ROW_MAJOR, {7, 7}, {4, 4}, {4, 1}, {7, 6}},
        /* d0 whole, d1 partial: slabs of d0 x d1, one per d2 */
        {3, TDB_COL_MAJOR, {7, 5, 5}, {4, 3, 3}, {0, 1, 1}, {3, 2, 4}},
        /* d0 partial, 8 tiles: slabs of d0's run, one per d1 and d2 */
        {3, TDB_ROW_MAJOR, {7, 5, 5}, {4, 3, 3}, {1, 0, 2}, {6, 4, 4}},
        /* d0 and d1 whole: one slab a tile */
        {3, TDB_COL_MAJOR, {3, 5, 5}, {4, 3, 3}, {0, 0, 1}, {3, 2, 4}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct tdb_schema *s = col_schema(&cases[i]);
        struct tdb_buf b = {0};
        struct tdb_error err = {0};
        struct tdb_io io;
        struct tdb_fragmeta *fm = NULL;
        CHECK_EQ_INT(col_build(&cases[i], s, &b), 0);
        CHECK_EQ_INT(tdb_io_mem(&io), 0);
        CHECK_EQ_INT(fm_roundtrip(&io, &b, s, NULL, NULL, &fm, &err), 0);
        if (fm)
            col_check(&io, fm, &cases[i], i);
        else
            fprintf(stderr, "  case %zu: %s\n", i, err.msg);
        tdb_fragmeta_free(fm);
        tdb_io_free(&io);
        tdb_buf_free(&b);
        tdb_schema_free(s);
    }
}

int main(void)
{
    RUN(test_typed_sum_alone);
    RUN(test_dense_colmajor_slabs);
    return unit_done();
}
