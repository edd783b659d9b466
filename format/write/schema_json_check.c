/* schema_json_check.c: a schema checked as TileDB checks a new one, and
 * the tile extents it fills in (dense arrays' missing ones, WEBP's). */
#include "write/schema_json_priv.h"
#include "core/value.h"
#include "filters/options.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ----------------------------------------------------------------- checks */

/* A fixed-size dimension value (of an integer or float datatype). */
static struct tdb_num sj_load(unsigned type, const uint8_t *p)
{
    return tdb_value_load(type, p);
}

static bool sj_lt(struct tdb_num a, struct tdb_num b)
{
    return tdb_num_cmp(&a, &b, NULL) < 0;
}

/* An integer value widened past both int64 and uint64 (floats: 0). */
static __int128 sj_wide(struct tdb_num n)
{
    return n.cls == TDB_VC_SIGNED ? (__int128)n.i : (__int128)n.u;
}

/* The largest value of integer type t. */
static __int128 sj_type_max(unsigned t)
{
    return (__int128)tdb_value_int_max(t);
}

/* Dense arrays: a dimension without a tile extent gets its whole domain
 * as the extent, as TileDB's set_domain does. */
int sj_fill_extents(struct tdb_schema *s, struct tdb_error *err)
{
    for (uint32_t i = 0; i < s->ndims; i++) {
        struct tdb_dim *d = &s->dims[i];
        if (d->has_extent || d->cell_val_num == TDB_VAR_NUM ||
            !tdb_dt_is_integer(d->type))
            continue;
        struct tdb_num lo = sj_load(d->type, d->lo), hi = sj_load(d->type,
                                                                d->hi);
        __int128 ext = sj_wide(hi) - sj_wide(lo) + 1;
        if (ext <= 0 || ext > sj_type_max(d->type))
            return tdb_err(err, TDB_E_INVAL, "schema JSON: dims[%u] ('%s'): "
                           "tile_extent is null and the domain's range does "
                           "not fit %s; give a tile_extent", i, d->name,
                           tdb_dt_name(d->type));
        uint64_t e = (uint64_t)ext;
        for (unsigned b = 0; b < tdb_dt_size(d->type); b++)
            d->extent[b] = (uint8_t)(e >> (8 * b));
        d->has_extent = true;
    }
    return 0;
}

/* The tile extent of fixed-size dimension d of domain [lo, hi]: above 0,
 * within the domain, and the domain in whole tiles within the datatype. */
static int sj_check_extent(const struct tdb_dim *d, struct tdb_num lo,
                           struct tdb_num hi, struct tdb_error *err)
{
    const char *n = d->name;
    struct tdb_num ext = sj_load(d->type, d->extent);
    if (ext.cls == TDB_VC_FLOAT) {
        if (!(ext.d > 0) || !isfinite(ext.d))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile "
                           "extent must be greater than 0", n);
        if (ext.d > hi.d - lo.d + 1)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile "
                           "extent %.17g is larger than the domain "
                           "[%.17g, %.17g]", n, ext.d, lo.d, hi.d);
        return 0;
    }
    __int128 range = sj_wide(hi) - sj_wide(lo) + 1;
    __int128 e = sj_wide(ext);
    if (e <= 0)
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile extent "
                       "must be greater than 0", n);
    if (e > range)
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile extent "
                       "%llu is larger than the domain's %llu values", n,
                       (unsigned long long)e, (unsigned long long)range);
    __int128 ntiles = (range + e - 1) / e;
    if (sj_wide(lo) + ntiles * e - 1 > sj_type_max(d->type))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain "
                       "expanded to whole tiles exceeds the largest %s; "
                       "lower the upper bound by one tile extent", n,
                       tdb_dt_name(d->type));
    return 0;
}

static int sj_check_dim(const struct tdb_schema *s, uint32_t i,
                        struct tdb_error *err)
{
    const struct tdb_dim *d = &s->dims[i];
    const char *n = d->name;
    unsigned sz = tdb_dt_size(d->type);
    if (d->cell_val_num == TDB_VAR_NUM) {
        if (d->type != TDB_STRING_ASCII)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a var-sized "
                           "dimension must be STRING_ASCII", n);
        if (s->array_type == TDB_DENSE)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': dense arrays "
                           "cannot have string dimensions", n);
        if (d->has_extent)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a string "
                           "dimension has no tile extent", n);
        return 0;
    }
    if (d->cell_val_num != 1 || sz == 0 || sz > 8 ||
        !(tdb_dt_is_integer(d->type) || tdb_dt_is_float(d->type)))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': datatype %s (cell "
                       "values %u) cannot be a dimension's", n,
                       tdb_dt_name(d->type) ? tdb_dt_name(d->type) : "?",
                       d->cell_val_num);
    struct tdb_num lo = sj_load(d->type, d->lo), hi = sj_load(d->type, d->hi);
    if (lo.cls == TDB_VC_FLOAT) {
        if (!isfinite(lo.d) || !isfinite(hi.d))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain "
                           "holds NaN or an infinity", n);
        if (s->array_type == TDB_DENSE)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': dense arrays "
                           "cannot have floating point dimensions", n);
    }
    if (sj_lt(hi, lo))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain's upper "
                       "bound is below its lower bound", n);
    if (lo.cls != TDB_VC_FLOAT && sj_wide(lo) == tdb_value_int_min(d->type) &&
        sj_wide(hi) == sj_type_max(d->type))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain may not "
                       "span the whole %s range", n, tdb_dt_name(d->type));
    if (!d->has_extent) {
        if (s->array_type == TDB_DENSE)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a dense "
                           "array's dimensions need a tile extent", n);
        return 0;
    }
    return sj_check_extent(d, lo, hi, err);
}

static int sj_check_attr(const struct tdb_attr *a, struct tdb_error *err)
{
    const char *n = a->name;
    unsigned sz = tdb_dt_size(a->type);
    if (sz == 0 || a->type == TDB_ANY)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': invalid datatype "
                       "%u", n, a->type);
    if (a->cell_val_num == 0)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': cell_val_num is 0",
                       n);
    if (a->fill && a->fill_size) {
        bool var = a->cell_val_num == TDB_VAR_NUM;
        if ((!var && a->fill_size != (uint64_t)sz * a->cell_val_num) ||
            (var && a->fill_size % sz))
            return tdb_err(err, TDB_E_INVAL, "attribute '%s': a fill value "
                           "of %llu bytes does not fit its cells", n,
                           (unsigned long long)a->fill_size);
    }
    if (a->fill_validity > 1)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': fill_validity is "
                       "0 or 1", n);
    for (uint32_t i = 0; i < a->filters.n; i++) {
        const struct tdb_filter *f = &a->filters.f[i];
        if (f->type == TDB_FILTER_SCALE_FLOAT && !tdb_dt_is_float(a->type))
            return tdb_err(err, TDB_E_INVAL, "attribute '%s': SCALE_FLOAT "
                           "filters only FLOAT32 and FLOAT64 values", n);
    }
    return 0;
}

/* ------------------------------------------------------------------ WEBP */

/* libwebp's largest image side (TileDB checks it at schema creation). */
#define SJ_WEBP_MAX_SIDE 16383

/* The tile extents of dimensions 0 (Y: rows) and 1 (X: bytes of a row) of
 * a two-dimensional schema with integral dimensions, as TileDB's WEBP
 * filter takes them; false when the schema has no such extents. */
static bool sj_webp_dims(const struct tdb_schema *s, uint64_t *y, uint64_t *x)
{
    if (s->ndims != 2)
        return false;
    for (uint32_t i = 0; i < 2; i++) {
        const struct tdb_dim *d = &s->dims[i];
        switch (d->type) {
        case TDB_INT8: case TDB_UINT8: case TDB_INT16: case TDB_UINT16:
        case TDB_INT32: case TDB_UINT32: case TDB_INT64: case TDB_UINT64:
            break;
        default:
            return false;
        }
        if (d->cell_val_num != 1 || !d->has_extent)
            return false;
        __int128 e = sj_wide(sj_load(d->type, d->extent));
        if (e <= 0)
            return false;
        *(i ? x : y) = e > UINT32_MAX ? UINT32_MAX : (uint64_t)e;
    }
    return true;
}

/* TileDB copies the schema's tile extents into each WEBP filter's options
 * when it checks a new schema; so does this. */
void sj_webp_extents(struct tdb_schema *s)
{
    uint64_t y, x;
    if (s->array_type != TDB_DENSE || !sj_webp_dims(s, &y, &x) ||
        y > UINT16_MAX || x > UINT16_MAX)
        return;     /* tdb_schema_check says why */
    for (uint32_t i = 0; i < s->nattrs; i++)
        for (uint32_t j = 0; j < s->attrs[i].filters.n; j++) {
            struct tdb_filter *f = &s->attrs[i].filters.f[j];
            if (f->type == TDB_FILTER_WEBP) {
                tdb_filter_set_int(f, "y_extent", (int64_t)y);
                tdb_filter_set_int(f, "x_extent", (int64_t)x);
            }
        }
}

/* What TileDB asks of WEBP filter f of attribute a: see sj_check_webp. */
static int sj_check_webp_filter(const struct tdb_schema *s,
                                const struct tdb_attr *a,
                                const struct tdb_filter *f,
                                struct tdb_error *err)
{
    unsigned bpp = tdb_webp_pixel_bytes(
        (unsigned)tdb_filter_get_int(f, "format"));
    double quality = tdb_filter_get_real(f, "quality");
    int64_t lossless = tdb_filter_get_int(f, "lossless");
    int64_t ye = tdb_filter_get_int(f, "y_extent");
    int64_t xe = tdb_filter_get_int(f, "x_extent");
    uint64_t y = 0, x = 0;
    if (a->type != TDB_UINT8 || a->cell_val_num != 1)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter "
                       "takes UINT8 attributes of one value a cell", a->name);
    if (s->array_type != TDB_DENSE)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter "
                       "is for dense arrays only", a->name);
    if (!sj_webp_dims(s, &y, &x))
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter "
                       "needs exactly 2 integral dimensions (Y, X) with tile "
                       "extents", a->name);
    if (!bpp)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "format is not set (RGB, BGR, RGBA or BGRA)", a->name);
    if (!(quality >= 0.0 && quality <= 100.0) || lossless > 1)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "quality is in [0, 100], its lossless flag 0 or 1",
                       a->name);
    if (x % bpp)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "format has %u bytes a pixel; the tile extent of "
                       "dimension '%s' (%llu) is not a multiple of it",
                       a->name, bpp, s->dims[1].name, (unsigned long long)x);
    if (y > SJ_WEBP_MAX_SIDE || x / bpp > SJ_WEBP_MAX_SIDE)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': tiles of %llu x "
                       "%llu pixels; a WebP image has at most %d x %d",
                       a->name, (unsigned long long)y,
                       (unsigned long long)(x / bpp), SJ_WEBP_MAX_SIDE,
                       SJ_WEBP_MAX_SIDE);
    if ((uint64_t)ye != y || (uint64_t)xe != x)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "tile extents (%u, %u) are not the schema's (%llu, "
                       "%llu)", a->name, (unsigned)ye, (unsigned)xe,
                       (unsigned long long)y, (unsigned long long)x);
    return 0;
}

/* What TileDB asks of a schema with WEBP filters: UINT8 attributes of a
 * dense array of two integral dimensions whose tiles are images of whole
 * pixels at most 16383 a side; and here also one value a cell, the filter
 * on attributes only, its options complete. */
static int sj_check_webp(const struct tdb_schema *s, struct tdb_error *err)
{
    if (tdb_pipeline_has(&s->coords_filters, TDB_FILTER_WEBP) ||
        tdb_pipeline_has(&s->offsets_filters, TDB_FILTER_WEBP) ||
        tdb_pipeline_has(&s->validity_filters, TDB_FILTER_WEBP))
        return tdb_err(err, TDB_E_INVAL, "a WEBP filter filters attribute "
                       "values only, not coordinates, offsets or validity");
    for (uint32_t i = 0; i < s->ndims; i++)
        if (tdb_pipeline_has(&s->dims[i].filters, TDB_FILTER_WEBP))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a WEBP filter "
                           "filters attribute values only", s->dims[i].name);
    for (uint32_t i = 0; i < s->nattrs; i++) {
        const struct tdb_attr *a = &s->attrs[i];
        for (uint32_t j = 0; j < a->filters.n; j++) {
            int rc = a->filters.f[j].type == TDB_FILTER_WEBP
                         ? sj_check_webp_filter(s, a, &a->filters.f[j], err)
                         : 0;
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The array type, the orders, and what each array type asks. */
static int sj_check_kind(const struct tdb_schema *s, struct tdb_error *err)
{
    if (s->array_type != TDB_DENSE && s->array_type != TDB_SPARSE)
        return tdb_err(err, TDB_E_INVAL, "invalid array type %u",
                       s->array_type);
    if (s->tile_order != TDB_ROW_MAJOR && s->tile_order != TDB_COL_MAJOR)
        return tdb_err(err, TDB_E_INVAL, "the tile order is row-major or "
                       "col-major");
    if (s->cell_order != TDB_ROW_MAJOR && s->cell_order != TDB_COL_MAJOR &&
        s->cell_order != TDB_HILBERT)
        return tdb_err(err, TDB_E_INVAL, "the cell order is row-major, "
                       "col-major or hilbert");
    if (s->cell_order == TDB_HILBERT && s->ndims > SJ_HILBERT_MAX_DIMS)
        return tdb_err(err, TDB_E_INVAL, "hilbert order supports at most %d "
                       "dimensions", SJ_HILBERT_MAX_DIMS);
    if (s->array_type != TDB_DENSE) {
        if (s->capacity == 0)
            return tdb_err(err, TDB_E_INVAL, "a sparse array's capacity "
                           "cannot be 0");
        return 0;
    }
    if (s->nattrs == 0)
        return tdb_err(err, TDB_E_INVAL, "a dense array needs at least "
                       "one attribute");
    if (s->cell_order == TDB_HILBERT)
        return tdb_err(err, TDB_E_INVAL, "dense arrays cannot have the "
                       "hilbert cell order");
    if (s->allows_dups)
        return tdb_err(err, TDB_E_INVAL, "dense arrays cannot allow "
                       "duplicates");
    for (uint32_t i = 1; i < s->ndims; i++)
        if (s->dims[i].type != s->dims[0].type)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': in a dense "
                           "array every dimension has the same datatype "
                           "(%s, not %s)", s->dims[i].name,
                           tdb_dt_name(s->dims[0].type),
                           tdb_dt_name(s->dims[i].type));
    return 0;
}

/* Every dimension and attribute: named, once, and valid. */
static int sj_check_fields(const struct tdb_schema *s, struct tdb_error *err)
{
    int rc;
    for (uint32_t i = 0; i < s->ndims; i++) {
        const char *n = s->dims[i].name;
        if (!n || !n[0])
            return tdb_err(err, TDB_E_INVAL, "dimension %u has no name", i);
        if (!strncmp(n, "__", 2))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': names starting "
                           "with '__' are reserved", n);
        if ((rc = sj_check_dim(s, i, err)))
            return rc;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(s->dims[j].name, n))
                return tdb_err(err, TDB_E_INVAL, "two dimensions are named "
                               "'%s'", n);
    }
    for (uint32_t i = 0; i < s->nattrs; i++) {
        const char *n = s->attrs[i].name;
        if (!n)
            return tdb_err(err, TDB_E_INVAL, "attribute %u has no name", i);
        if (!strncmp(n, "__", 2))
            return tdb_err(err, TDB_E_INVAL, "attribute '%s': names starting "
                           "with '__' are reserved", n);
        if ((rc = sj_check_attr(&s->attrs[i], err)))
            return rc;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(s->attrs[j].name, n))
                return tdb_err(err, TDB_E_INVAL, "two attributes are named "
                               "'%s'", n);
        if (tdb_schema_dim_index(s, n) >= 0)
            return tdb_err(err, TDB_E_INVAL, "'%s' names both a dimension "
                           "and an attribute", n);
    }
    return 0;
}

/* The current domain: ordered bounds inside each dimension's domain. */
static int sj_check_current(const struct tdb_schema *s, struct tdb_error *err)
{
    for (uint32_t i = 0; s->has_current_domain && i < s->ndims; i++) {
        const struct tdb_dim *d = &s->dims[i];
        const struct tdb_range *r = &s->current_domain[i];
        if (d->cell_val_num == TDB_VAR_NUM) {
            if (!r->vlo || !r->vhi ||
                tdb_bytes_cmp(r->vlo, r->vlo_size, r->vhi, r->vhi_size) > 0)
                return tdb_err(err, TDB_E_INVAL, "current domain of '%s': "
                               "the lower bound is above the upper", d->name);
            continue;
        }
        struct tdb_num lo = sj_load(d->type, r->lo), hi = sj_load(d->type,
                                                                r->hi);
        struct tdb_num dlo = sj_load(d->type, d->lo), dhi = sj_load(d->type,
                                                                  d->hi);
        if ((lo.cls == TDB_VC_FLOAT && (isnan(lo.d) || isnan(hi.d))) || sj_lt(hi, lo))
            return tdb_err(err, TDB_E_INVAL, "current domain of '%s': the "
                           "lower bound is above the upper", d->name);
        if (sj_lt(lo, dlo) || sj_lt(dhi, hi))
            return tdb_err(err, TDB_E_INVAL, "current domain of '%s' lies "
                           "outside the dimension's domain", d->name);
    }
    return 0;
}

int tdb_schema_check(const struct tdb_schema *s, struct tdb_error *err)
{
    int rc;
    if (!s || s->ndims == 0 || !s->dims)
        return tdb_err(err, TDB_E_INVAL, "array schema without dimensions");
    if ((rc = sj_check_kind(s, err)) || (rc = sj_check_fields(s, err)) ||
        (rc = sj_check_current(s, err)))
        return rc;
    return sj_check_webp(s, err);
}
