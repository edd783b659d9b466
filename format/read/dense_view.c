/* dense_view.c: dense cells in row-major order over a region, each taken
 * from the newest fragment whose non-empty domain holds it, else fill
 * (docs/LAYOUT.md "Dense arrays: the view"; FORMAT-NOTES "Fill values"). */
#include "read/view.h"

#include <stdlib.h>

struct dense_cells {
    struct tdb_cells base;
    uint32_t nd;
    uint64_t lo[TDB_MAX_DIMS], shape[TDB_MAX_DIMS];
    size_t nfrags;
    struct tdb_frag **frags;    /* newest last */
};

static int dense_runs(struct tdb_cells *c, uint64_t first, uint64_t n,
                      struct tdb_run *out, size_t cap, size_t *nout,
                      struct tdb_error *err)
{
    struct dense_cells *dc = (struct dense_cells *)c;
    uint32_t nd = dc->nd;
    uint64_t o[TDB_MAX_DIMS], rest = first;
    for (uint32_t d = nd; d-- > 0;) {
        o[d] = dc->lo[d] + rest % dc->shape[d];
        rest /= dc->shape[d];
    }
    uint32_t last = nd - 1;
    uint64_t row_left = dc->shape[last] - (o[last] - dc->lo[last]);
    uint64_t len = n < row_left ? n : row_left;
    /* fragments that hold this row, newest first */
    struct tdb_frag *cand[256];
    size_t nc = 0;
    for (size_t i = dc->nfrags; i-- > 0 && nc < 256;) {
        struct tdb_frag *f = dc->frags[i];
        bool in = true;
        for (uint32_t d = 0; d < last && in; d++)
            in = o[d] >= f->ned_lo[d] && o[d] <= f->ned_hi[d];
        if (in && f->ned_hi[last] >= o[last] && f->ned_lo[last] < o[last] + len)
            cand[nc++] = f;
    }
    size_t k = 0;
    uint64_t x = o[last], end = o[last] + len;
    while (x < end && k < cap) {
        struct tdb_frag *owner = NULL;
        uint64_t stop = end;
        for (size_t i = 0; i < nc; i++) {
            struct tdb_frag *f = cand[i];
            if (x >= f->ned_lo[last] && x <= f->ned_hi[last]) {
                owner = f;
                if (f->ned_hi[last] + 1 < stop)
                    stop = f->ned_hi[last] + 1;
                break;
            }
            /* a newer fragment starting later cuts this stretch */
            if (f->ned_lo[last] > x && f->ned_lo[last] < stop)
                stop = f->ned_lo[last];
        }
        if (owner) {
            /* newer fragments (before owner in cand) that start inside */
            for (size_t i = 0; cand[i] != owner; i++)
                if (cand[i]->ned_lo[last] > x && cand[i]->ned_lo[last] < stop)
                    stop = cand[i]->ned_lo[last];
        }
        if (!owner) {
            out[k++] = (struct tdb_run){NULL, 0, stop - x};
            x = stop;
            continue;
        }
        while (x < stop && k < cap) {
            o[last] = x;
            uint64_t fc = tdb_frag_dense_cell(owner, o);
            uint64_t cnt = 1;
            if (owner->fs->cell_order != TDB_COL_MAJOR || nd == 1) {
                /* consecutive until the end of the space tile along last */
                uint64_t ext = owner->ext[last];
                uint64_t tile_end = (x / ext + 1) * ext;
                uint64_t lim = tile_end < stop ? tile_end : stop;
                cnt = lim - x;
            }
            if (k && out[k - 1].frag == owner &&
                out[k - 1].fcell + out[k - 1].count == fc)
                out[k - 1].count += cnt;
            else
                out[k++] = (struct tdb_run){owner, fc, cnt};
            x += cnt;
        }
    }
    *nout = k;
    (void)err;
    return 0;
}

static void dense_destroy(struct tdb_cells *c)
{
    struct dense_cells *dc = (struct dense_cells *)c;
    free(dc->frags);
}

static const struct tdb_cells_ops dense_ops = {
    .runs = dense_runs,
    .destroy = dense_destroy,
};

int tdb_cells_dense(struct tdb_cells **out, struct tdb_array *a,
                    const uint64_t *lo, const uint64_t *hi,
                    struct tdb_frag **frags, size_t n, struct tdb_error *err)
{
    struct dense_cells *dc = calloc(1, sizeof *dc);
    if (!dc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    dc->base.ops = &dense_ops;
    dc->base.arr = a;
    atomic_init(&dc->base.ready, true);
    atomic_init(&dc->base.counted, true);
    pthread_mutex_init(&dc->base.lock, NULL);
    dc->nd = a->schema->ndims;
    uint64_t cells = 1;
    for (uint32_t d = 0; d < dc->nd; d++) {
        dc->lo[d] = lo[d];
        dc->shape[d] = hi[d] - lo[d] + 1;
        if (!tdb_mul_ok(cells, dc->shape[d], &cells)) {
            free(dc);
            return tdb_err(err, TDB_E_UNSUPPORTED, "dense view too large");
        }
    }
    dc->base.ncells = cells;
    dc->frags = calloc(n ? n : 1, sizeof *dc->frags);
    if (!dc->frags) {
        free(dc);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    memcpy(dc->frags, frags, n * sizeof *frags);
    dc->nfrags = n;
    *out = &dc->base;
    return 0;
}

bool tdb_cells_dense_shape(const struct tdb_cells *c, uint32_t *nd,
                           uint64_t *shape)
{
    if (c->ops != &dense_ops)
        return false;
    const struct dense_cells *dc = (const struct dense_cells *)c;
    *nd = dc->nd;
    for (uint32_t d = 0; d < dc->nd; d++)
        shape[d] = dc->shape[d];
    return true;
}

int tdb_cells_dense_sub(struct tdb_cells **out, const struct tdb_cells *c,
                        const uint64_t *from, const uint64_t *to,
                        struct tdb_error *err)
{
    if (c->ops != &dense_ops)
        return tdb_err(err, TDB_E_INVAL, "not a dense view");
    const struct dense_cells *dc = (const struct dense_cells *)c;
    uint64_t lo[TDB_MAX_DIMS], hi[TDB_MAX_DIMS];
    for (uint32_t d = 0; d < dc->nd; d++) {
        if (from[d] >= to[d] || to[d] > dc->shape[d])
            return tdb_err(err, TDB_E_INVAL, "dimension %u: [%llu, %llu) is "
                           "not inside [0, %llu)", d,
                           (unsigned long long)from[d],
                           (unsigned long long)to[d],
                           (unsigned long long)dc->shape[d]);
        lo[d] = dc->lo[d] + from[d];
        hi[d] = dc->lo[d] + to[d] - 1;
    }
    return tdb_cells_dense(out, c->arr, lo, hi, dc->frags, dc->nfrags, err);
}

int tdb_cells_prepare(struct tdb_cells *c, struct tdb_error *err)
{
    if (atomic_load_explicit(&c->ready, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&c->lock);
    int r = atomic_load_explicit(&c->ready, memory_order_relaxed)
                ? 0
                : c->ops->prepare(c, err);
    if (!r) {
        atomic_store_explicit(&c->counted, true, memory_order_release);
        atomic_store_explicit(&c->ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

void tdb_cells_free(struct tdb_cells *c)
{
    if (!c)
        return;
    if (c->ops->destroy)
        c->ops->destroy(c);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
