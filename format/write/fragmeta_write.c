/* fragmeta_write.c: the builder of __fragment_metadata.tdb at format
 * version 22 (format_spec/fragment.md): its fields, tiles, non-empty
 * domain and MBRs, as TileDB 2.29 records them (the file itself:
 * fragmeta_write_file.c; the tile metadata: fragmeta_write_md.c). */
#include "write/fragmeta_write.h"

#include <stdlib.h>

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

/* ----------------------------------------------------------------- create */

static void fmw_field_init(struct fmw_field *f, unsigned type, uint32_t cvn,
                           bool nullable, bool is_dim, bool dense)
{
    f->type = type;
    f->cvn = cvn;
    f->var = cvn == TDB_VAR_NUM;
    f->nullable = nullable;
    f->is_dim = is_dim;
    f->kind = tdb_fmw_kind_of(type);
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
        s->ndims > TDB_MAX_DIMS)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: need a schema "
                       "with 1 to %d dimensions and a schema name",
                       TDB_MAX_DIMS);
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

const char *tdb_fmw_field_name(const struct tdb_fmw *w, uint32_t field)
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
    int rc = tdb_fmw_dense_geometry(w, &geo, err);
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
        tdb_fmw_dense_slabs(w, &geo, tile, g, g->f->var);
    else if (g->f->var)
        tdb_fmw_slab_var(g, 0, g->ncells);
    else
        tdb_fmw_slab_fixed(g, 0, g->ncells);
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
    const char *name = tdb_fmw_field_name(w, field);
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
        tdb_fmw_slab_var(&g, 0, ncells);
    else if (!w->dense)
        tdb_fmw_slab_fixed(&g, 0, ncells);
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
                       w ? tdb_fmw_field_name(w, st->field) : "?",
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

