/* wr_region.c: a dense fragment write's region: __subarray.json, or the view region. */
#include "write/wr.h"
#include "core/value.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int wr_region_bound(struct wr *w, uint32_t d, json_t *v, uint64_t *off)
{
    const struct tdb_dim *dim = &w->s->dims[d];
    const char *nm = "__subarray.json";
    if (!json_is_integer(v))
        return tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': bounds must "
                       "be integers", nm, dim->name);
    json_int_t x = json_integer_value(v);
    const uint8_t *lo = dim->lo, *hi = dim->hi;
    const uint8_t *clo = NULL, *chi = NULL;
    if (w->s->has_current_domain && w->s->current_domain) {
        clo = w->s->current_domain[d].lo;
        chi = w->s->current_domain[d].hi;
    }
    bool in;
    unsigned t = dim->type;
    if (tdb_dt_is_signed_int(t)) {
        int64_t v64 = (int64_t)x;
        in = v64 >= tdb_value_i64(t, lo) && v64 <= tdb_value_i64(t, hi);
        if (in && clo)
            in = v64 >= tdb_value_i64(t, clo) && v64 <= tdb_value_i64(t, chi);
        if (in)
            *off = (uint64_t)v64 - (uint64_t)tdb_value_i64(t, lo);
    } else {
        uint64_t u = (uint64_t)x;
        in = x >= 0 && u >= tdb_value_u64(t, lo) && u <= tdb_value_u64(t, hi);
        if (in && clo)
            in = u >= tdb_value_u64(t, clo) && u <= tdb_value_u64(t, chi);
        if (in)
            *off = u - tdb_value_u64(t, lo);
    }
    if (!in)
        return tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': %lld is "
                       "outside the %sdomain", nm, dim->name, (long long)x,
                       clo ? "current " : "");
    return 0;
}

static int wr_region_json(struct wr *w)
{
    const char *nm = "__subarray.json";
    char *path = tdb_path_join(w->sdir, nm);
    if (!path)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    uint64_t size = 0;
    char *text = NULL;
    int r = w->staged->ops->size(w->staged->ctx, path, &size);
    if (r)
        r = tdb_err(w->err, r, "%s: cannot get its size: %s", nm,
                    tdb_strerror(r));
    else if (size > WR_JSON_MAX)
        r = tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, too large", nm,
                    (unsigned long long)size);
    else if (!(text = malloc((size_t)size + 1)))
        r = tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    else if ((r = w->staged->ops->read_at(w->staged->ctx, path, 0, text,
                                          (size_t)size)))
        r = tdb_err(w->err, r, "%s: cannot read: %s", nm, tdb_strerror(r));
    free(path);
    if (r) {
        free(text);
        return r;
    }
    json_error_t je;
    json_t *root = json_loadb(text, (size_t)size, 0, &je);
    free(text);
    if (!root)
        return tdb_err(w->err, TDB_E_INVAL, "%s: line %d: %s", nm, je.line,
                       je.text);
    uint32_t nd = w->s->ndims;
    if (!json_is_array(root) || json_array_size(root) != nd) {
        json_decref(root);
        return tdb_err(w->err, TDB_E_INVAL, "%s: want [[lo, hi], ...] with one "
                       "pair per dimension (%u)", nm, nd);
    }
    for (uint32_t d = 0; d < nd && !r; d++) {
        json_t *pair = json_array_get(root, d);
        if (!json_is_array(pair) || json_array_size(pair) != 2) {
            r = tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': want [lo, hi]",
                        nm, w->s->dims[d].name);
            break;
        }
        if ((r = wr_region_bound(w, d, json_array_get(pair, 0), &w->rlo[d])) ||
            (r = wr_region_bound(w, d, json_array_get(pair, 1), &w->rhi[d])))
            break;
        if (w->rlo[d] > w->rhi[d])
            r = tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': lo > hi", nm,
                        w->s->dims[d].name);
    }
    json_decref(root);
    return r;
}

/* The dense region: __subarray.json, else the view region (current domain,
 * else the domain); and the cell count. */
int tdb_wr_region(struct wr *w, bool has_subarray)
{
    const struct tdb_schema *s = w->s;
    if (s->ndims > TDB_MAX_DIMS || !s->ndims)
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "%u dimensions", s->ndims);
    for (uint32_t d = 0; d < s->ndims; d++)
        if (!tdb_dt_is_integer(s->dims[d].type) ||
            s->dims[d].cell_val_num == TDB_VAR_NUM)
            return tdb_err(w->err, TDB_E_UNSUPPORTED, "dense dimension '%s' "
                           "is not an integer", s->dims[d].name);
    int r = 0;
    if (w->x && w->x->rlo) {
        for (uint32_t d = 0; d < s->ndims; d++) {
            w->rlo[d] = w->x->rlo[d];
            w->rhi[d] = w->x->rhi[d];
        }
    } else if (has_subarray) {
        r = wr_region_json(w);
    } else {
        for (uint32_t d = 0; d < s->ndims; d++) {
            const struct tdb_dim *dim = &s->dims[d];
            if (s->has_current_domain && s->current_domain) {
                w->rlo[d] = tdb_dim_offset(dim, s->current_domain[d].lo);
                w->rhi[d] = tdb_dim_offset(dim, s->current_domain[d].hi);
            } else {
                w->rlo[d] = 0;
                w->rhi[d] = tdb_dim_offset(dim, dim->hi);
            }
        }
    }
    if (r)
        return r;
    uint64_t cells = 1;
    for (uint32_t d = 0; d < s->ndims; d++) {
        uint64_t span = w->rhi[d] - w->rlo[d];
        if (span == UINT64_MAX || !tdb_mul_ok(cells, span + 1, &cells) ||
            cells > WR_REGION_MAX)
            return tdb_err(w->err, TDB_E_INVAL, "__subarray.json: %s more than "
                           "2^48 cells; give a smaller region",
                           has_subarray ? "the region has" : "missing, and the "
                           "domain has");
    }
    w->ncells = cells;
    return 0;
}
