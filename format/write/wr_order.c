/* wr_order.c: a sparse fragment write's cells: the staged coordinates loaded and checked, sorted into global order (Hilbert too), duplicates refused. */
#include "write/wr.h"
#include "core/value.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------- sparse coordinates */

void tdb_wr_coords(const struct wr *w, uint64_t c, struct tdb_coords *out)
{
    for (uint32_t j = 0; j < w->s->ndims; j++) {
        const struct wr_field *f = &w->f[w->s->nattrs + j];
        if (f->var) {
            uint64_t st = tdb_le64(f->mem[WR_OFFSETS] + 8 * c);
            uint64_t en = c + 1 < w->ncells
                              ? tdb_le64(f->mem[WR_OFFSETS] + 8 * (c + 1))
                              : f->ssize[WR_VALUES];
            out->v[j] = f->mem[WR_VALUES] + st;
            out->n[j] = en - st;
        } else {
            out->v[j] = f->mem[WR_VALUES] + c * f->vsize;
            out->n[j] = f->vsize;
        }
    }
}

static int wr_cell_cmp(const struct wr *w, uint64_t a, uint64_t b)
{
    struct tdb_coords ca, cb;
    tdb_wr_coords(w, a, &ca);
    tdb_wr_coords(w, b, &cb);
    return tdb_order_cmp(w->s, &ca, w->hil ? w->hil[a] : 0, &cb,
                         w->hil ? w->hil[b] : 0);
}

/* Stable bottom-up merge sort of w->perm in global order. */
static int wr_sort(struct wr *w)
{
    uint64_t n = w->ncells;
    bool sorted = true;
    for (uint64_t i = 1; i < n && sorted; i++)
        sorted = wr_cell_cmp(w, w->perm[i - 1], w->perm[i]) <= 0;
    if (sorted)
        return 0;
    uint64_t *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    uint64_t *a = w->perm, *b = tmp;
    for (uint64_t width = 1; width < n; width *= 2) {
        for (uint64_t lo = 0; lo < n; lo += 2 * width) {
            uint64_t mid = lo + width < n ? lo + width : n;
            uint64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = wr_cell_cmp(w, a[j], a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid)
                b[k++] = a[i++];
            while (j < hi)
                b[k++] = a[j++];
        }
        uint64_t *t = a;
        a = b;
        b = t;
    }
    if (a != w->perm)
        memcpy(w->perm, a, (size_t)n * sizeof *a);
    free(tmp);
    return 0;
}

/* Checks coordinate c of dimension j against the domain (and the current
 * domain); string dimensions have no domain. */
static int wr_check_coord(struct wr *w, uint32_t j, uint64_t c,
                          const struct tdb_coords *co)
{
    const struct tdb_dim *d = &w->s->dims[j];
    const struct wr_field *f = &w->f[w->s->nattrs + j];
    const struct tdb_range *cd = w->s->has_current_domain && w->s->current_domain
                                     ? &w->s->current_domain[j]
                                     : NULL;
    const uint8_t *v = co->v[j];
    if (f->var) {
        if (cd && cd->vlo && cd->vhi &&
            (tdb_value_cmp(d->type, v, co->n[j], cd->vlo, cd->vlo_size) < 0 ||
             tdb_value_cmp(d->type, v, co->n[j], cd->vhi, cd->vhi_size) > 0))
            return tdb_err(w->err, TDB_E_INVAL, "%s: the coordinate of cell %llu "
                           "is outside the current domain", f->sname[WR_VALUES],
                           (unsigned long long)c);
        return 0;
    }
    unsigned n = (unsigned)f->vsize;
    bool out = tdb_value_isnan(d->type, v) ||
               tdb_value_cmp(d->type, v, n, d->lo, n) < 0 ||
               tdb_value_cmp(d->type, v, n, d->hi, n) > 0;
    bool out_cd = !out && cd &&
                  (tdb_value_cmp(d->type, v, n, cd->lo, n) < 0 ||
                   tdb_value_cmp(d->type, v, n, cd->hi, n) > 0);
    if (out || out_cd) {
        char val[64] = "";
        if (tdb_dt_is_signed_int(d->type))
            snprintf(val, sizeof val, " (%lld)",
                     (long long)tdb_value_i64(d->type, v));
        else if (tdb_dt_is_integer(d->type))
            snprintf(val, sizeof val, " (%llu)",
                     (unsigned long long)tdb_value_u64(d->type, v));
        return tdb_err(w->err, TDB_E_INVAL, "%s: the coordinate of cell %llu%s "
                       "is outside the %sdomain", f->sname[WR_VALUES],
                       (unsigned long long)c, val, out_cd ? "current " : "");
    }
    return 0;
}

/* The cell count, from the first dimension's staged file; its name in
 * *nm0. */
static int wr_sparse_count(struct wr *w, const char **nm0)
{
    const struct tdb_schema *s = w->s;
    struct wr_field *f0 = &w->f[s->nattrs];
    uint64_t unit = f0->var ? 8 : f0->vsize;
    uint64_t sz0 = f0->ssize[f0->var ? WR_OFFSETS : WR_VALUES];
    *nm0 = f0->sname[f0->var ? WR_OFFSETS : WR_VALUES];
    if (sz0 % unit)
        return tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, not a whole number "
                       "of %llu-byte cells", *nm0, (unsigned long long)sz0,
                       (unsigned long long)unit);
    w->ncells = sz0 / unit;
    if (!w->ncells)
        return tdb_err(w->err, TDB_E_INVAL, "%s: no cells to write", *nm0);
    if (w->ncells > TDB_MAX_COUNT)
        return tdb_err(w->err, TDB_E_INVAL, "%s: %llu cells, more than one "
                       "fragment may take", *nm0,
                       (unsigned long long)w->ncells);
    snprintf(w->nfrom, sizeof w->nfrom, "the count of %s, %llu bytes", *nm0,
             (unsigned long long)sz0);
    return 0;
}

/* Every staged file's size (nothing is read until they agree), then the
 * dimensions loaded and checked, and the attributes' offsets and
 * validity. */
static int wr_sparse_load(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    int r = 0;
    for (uint32_t i = 0; i < w->nf && !r; i++)
        r = tdb_wr_check_sizes(w, &w->f[i], w->ncells);
    for (uint32_t j = 0; j < s->ndims && !r; j++) {
        const struct wr_field *f = &w->f[s->nattrs + j];
        if (f->var && f->ssize[WR_VALUES] > TDB_MAX_TILE_BYTES)
            r = tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, too large",
                        f->sname[WR_VALUES],
                        (unsigned long long)f->ssize[WR_VALUES]);
    }
    for (uint32_t j = 0; j < s->ndims && !r; j++) {
        struct wr_field *f = &w->f[s->nattrs + j];
        for (int p = 0; p < 2 && !r; p++) {
            if (p == WR_OFFSETS && !f->var)
                continue;
            size_t len = (size_t)f->ssize[p];
            if (!(f->mem[p] = malloc(len ? len : 1)))
                r = tdb_err(w->err, TDB_E_NOMEM, "out of memory");
            else
                r = tdb_wr_sread(w, f, p, 0, f->mem[p], len);
        }
        if (!r && f->var)
            r = tdb_wr_check_offsets(w, f, w->ncells);
    }
    /* coordinates inside the domain */
    for (uint64_t c = 0; c < w->ncells && !r; c++) {
        struct tdb_coords co;
        tdb_wr_coords(w, c, &co);
        for (uint32_t j = 0; j < s->ndims && !r; j++)
            r = wr_check_coord(w, j, c, &co);
    }
    /* the attributes' offsets and validity (special fields have none) */
    for (uint32_t i = 0; i < s->nattrs && !r; i++)
        r = tdb_wr_check_content(w, &w->f[i], w->ncells);
    return r;
}

/* Sorts the cells into global order (w->perm). */
static int wr_sparse_order(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    w->perm = malloc((size_t)w->ncells * sizeof *w->perm);
    if (!w->perm)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    for (uint64_t c = 0; c < w->ncells; c++)
        w->perm[c] = c;
    if (s->cell_order == TDB_HILBERT) {
        w->hil = malloc((size_t)w->ncells * sizeof *w->hil);
        if (!w->hil)
            return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
        for (uint64_t c = 0; c < w->ncells; c++) {
            struct tdb_coords co;
            tdb_wr_coords(w, c, &co);
            w->hil[c] = tdb_hilbert(s, &co);
        }
    }
    return wr_sort(w);
}

/* Loads the dimensions' staged files, checks them, sorts the cells into
 * global order and checks for duplicates. */
int tdb_wr_sparse_prepare(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    const char *nm0;
    int r;
    if (s->ndims > TDB_MAX_DIMS || !s->ndims)
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "%u dimensions", s->ndims);
    if ((r = wr_sparse_count(w, &nm0)) || (r = wr_sparse_load(w)) ||
        (r = wr_sparse_order(w)))
        return r;
    if (s->allows_dups)
        return 0;
    /* (a consolidation with timestamps keeps every version of a cell; when
     * it finds none of two, its fragment's name says so) */
    bool versions = w->x && w->x->timestamps;
    w->distinct = versions;
    for (uint64_t i = 1; i < w->ncells; i++) {
        struct tdb_coords a, b;
        tdb_wr_coords(w, w->perm[i - 1], &a);
        tdb_wr_coords(w, w->perm[i], &b);
        if (versions && tdb_coords_equal(s, &a, &b)) {
            w->distinct = false;
            break;
        }
        if (tdb_coords_equal(s, &a, &b)) {
            uint64_t x = w->perm[i - 1], y = w->perm[i];
            return tdb_err(w->err, TDB_E_INVAL, "%s: cells %llu and %llu "
                           "have the same coordinates, and the array does "
                           "not allow duplicates", nm0,
                           (unsigned long long)(x < y ? x : y),
                           (unsigned long long)(x < y ? y : x));
        }
    }
    return 0;
}
