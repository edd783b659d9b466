/* fragmeta_write_file.c: __fragment_metadata.tdb at format version 22
 * (format_spec/fragment.md: R-tree, tile offsets, tile metadata, footer),
 * byte for byte as TileDB 2.29 writes it, from the builder's state. */
#include "write/fragmeta_write.h"
#include "model/generic_tile.h"
#include "filters/filter.h"

#include <math.h>
#include <stdlib.h>

#define FMW_FANOUT 10u              /* TileDB's R-tree fanout */
#define FMW_GT_CHUNK 65536u         /* generic tiles: max chunk size */
#define FMW_GT_LEVEL 1              /* generic tiles: GZIP level 1 */

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
            if (tdb_bytes_cmp(r[d].vlo, r[d].vlo_size, acc[d].vlo,
                           acc[d].vlo_size) < 0) {
                acc[d].vlo = r[d].vlo;
                acc[d].vlo_size = r[d].vlo_size;
            }
            if (!(tdb_bytes_cmp(r[d].vhi, r[d].vhi_size, acc[d].vhi,
                             acc[d].vhi_size) < 0)) {
                acc[d].vhi = r[d].vhi;
                acc[d].vhi_size = r[d].vhi_size;
            }
        } else {
            unsigned size = tdb_dt_size(dim->type);
            /* std::min(r, acc): acc if acc < r; std::max(r, acc): acc if
             * r < acc */
            if (!tdb_fmw_lt(dim->type, acc[d].lo, r[d].lo))
                memcpy(acc[d].lo, r[d].lo, size);
            if (!tdb_fmw_lt(dim->type, r[d].hi, acc[d].hi))
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
        tdb_fmw_type_limits(f->type, m->nmin, m->nmax);
        for (uint64_t t = 0; t < ft->ntiles; t++) {
            if (fmw_tile_skipped(ft, t))
                continue;
            if (!tdb_fmw_lt(f->type, m->nmin, mins + t * vs))
                memcpy(m->nmin, mins + t * vs, vs);
            if (!tdb_fmw_lt(f->type, maxs + t * vs, m->nmax))
                memcpy(m->nmax, maxs + t * vs, vs);
        }
        m->min = m->nmin;
        m->max = m->nmax;
        m->min_size = m->max_size = vs;
    }
    if (!f->has_sum)
        return;
    int cls = tdb_fmw_sum_class(f->type);
    for (uint64_t t = 0; t < ft->ntiles; t++) {
        if (fmw_tile_skipped(ft, t))
            continue;
        uint64_t u = f->sums.len >= 8 * (t + 1)
                         ? tdb_le64(f->sums.data + 8 * t) : 0;
        struct tdb_num v = {TDB_VC_NONE, (int64_t)u, u, 0.0};
        memcpy(&v.d, &u, 8);
        if (!tdb_fmw_sum_add(cls, m->sum, v))
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
    return tdb_generic_tile_encode(
        payload->len ? payload->data : none, payload->len,
        &(struct tdb_gt_filtering){p, TDB_CHAR, 1}, key, out, err);
}

/* The fragment's tiles (and, dense, cells per tile), checking that every
 * field that stores tiles has them all. */
static int fmw_tile_count(const struct tdb_fmw *w, uint64_t *ntiles,
                          uint64_t *cpt, struct tdb_error *err)
{
    *cpt = 0;
    if (w->dense) {
        struct fmw_dense geo;
        int rc = tdb_fmw_dense_geometry(w, &geo, err);
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
                           tdb_fmw_field_name(w, api),
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
    int rc = tdb_buf_put_u32(file, tdb_schema_fragment_version(s));
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
    struct tdb_pipeline pipe = {FMW_GT_CHUNK, 1, &gz};
    if (tdb_filter_init_level(&gz, TDB_FILTER_GZIP, FMW_GT_LEVEL))
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

