/* dense_view.c: dense cells in row-major order over a region, each taken
 * from the newest fragment whose non-empty domain holds it, else fill
 * (docs/LAYOUT.md "Dense arrays: the view"; FORMAT-NOTES "Fill values");
 * and cells picked from such a view as numpy picks them (a start, a step
 * and a count per dimension), in row-major or column-major order. */
#include "read/view.h"

#include <stdlib.h>

struct dense_cells {
    struct tdb_cells base;
    uint32_t nd;
    bool col;                   /* column-major: dimension 0 varies fastest */
    bool plain;                 /* row-major, every step 1 */
    /* index i along d is the cell at offset lo[d] + i * step[d] */
    uint64_t lo[TDB_MAX_DIMS], shape[TDB_MAX_DIMS];
    int64_t step[TDB_MAX_DIMS];
    size_t nfrags;
    struct tdb_frag **frags;    /* newest last */
};

#define DENSE_CANDS 256

/* The fragments that may hold a line, newest first. */
struct dense_cand_list {
    struct tdb_frag *v[DENSE_CANDS];
    size_t n;
};

/* A line of len cells along dimension `fast` from offsets o (the others
 * fixed) cell by cell, for steps other than 1: each cell is its own run
 * unless it follows the one before in the same fragment.  cl: the
 * fragments that may hold the line, newest first. */
static size_t dense_pick_line(const struct dense_cells *dc, uint64_t *o,
                              uint32_t fast, uint64_t len,
                              const struct dense_cand_list *cl,
                              struct tdb_runs *rs)
{
    struct tdb_frag *const *cand = cl->v;
    size_t nc = cl->n, cap = rs->cap, k = 0;
    struct tdb_run *out = rs->v;
    for (uint64_t i = 0; i < len && k < cap; i++) {
        struct tdb_frag *owner = NULL;
        for (size_t j = 0; j < nc && !owner; j++)
            if (o[fast] >= cand[j]->ned_lo[fast] &&
                o[fast] <= cand[j]->ned_hi[fast])
                owner = cand[j];
        uint64_t fc = owner ? tdb_frag_dense_cell(owner, o) : 0;
        if (k && out[k - 1].frag == owner &&
            (!owner || out[k - 1].fcell + out[k - 1].count == fc))
            out[k - 1].count++;
        else
            out[k++] = (struct tdb_run){owner, fc, 1};
        o[fast] += (uint64_t)dc->step[fast];
    }
    return k;
}


/* The fragments that hold cells of the line of len cells along fast from
 * offsets o, newest first (at most DENSE_CANDS). */
static size_t dense_cands(const struct dense_cells *dc, const uint64_t *o,
                          uint32_t fast, uint64_t len, struct tdb_frag **cand)
{
    /* the line's lowest and highest offsets along fast */
    uint64_t far = o[fast] + (len - 1) * (uint64_t)dc->step[fast];
    uint64_t a = dc->step[fast] < 0 ? far : o[fast];
    uint64_t b = dc->step[fast] < 0 ? o[fast] : far;
    size_t nc = 0;
    for (size_t i = dc->nfrags; i-- > 0 && nc < DENSE_CANDS;) {
        struct tdb_frag *f = dc->frags[i];
        bool in = true;
        for (uint32_t d = 0; d < dc->nd && in; d++)
            in = d == fast || (o[d] >= f->ned_lo[d] && o[d] <= f->ned_hi[d]);
        if (in && f->ned_hi[fast] >= a && f->ned_lo[fast] <= b)
            cand[nc++] = f;
    }
    return nc;
}

/* The offsets o of view cell `first` in the region, and its index along
 * dimension `fast` (returned). */
static uint64_t dense_offsets(const struct dense_cells *dc, uint64_t first,
                              uint32_t fast, uint64_t *o)
{
    uint32_t nd = dc->nd;
    uint64_t rest = first, at = 0;
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t d = dc->col ? k : nd - 1 - k;
        uint64_t i = rest % dc->shape[d];
        rest /= dc->shape[d];
        o[d] = dc->lo[d] + i * (uint64_t)dc->step[d];
        if (d == fast)
            at = i;
    }
    return at;
}

/* The newest of the line's fragments holding offset x along fast (NULL:
 * none, fill values), and *stop lowered to where that stretch ends: the
 * owner's end, or where a newer fragment starts. */
static struct tdb_frag *dense_owner(const struct dense_cand_list *cl,
                                    uint32_t fast, uint64_t x, uint64_t *stop)
{
    struct tdb_frag *const *cand = cl->v;
    struct tdb_frag *owner = NULL;
    size_t i;
    for (i = 0; i < cl->n; i++) {
        struct tdb_frag *f = cand[i];
        if (x >= f->ned_lo[fast] && x <= f->ned_hi[fast]) {
            owner = f;
            if (f->ned_hi[fast] + 1 < *stop)
                *stop = f->ned_hi[fast] + 1;
            break;
        }
        /* a newer fragment starting later cuts this stretch */
        if (f->ned_lo[fast] > x && f->ned_lo[fast] < *stop)
            *stop = f->ned_lo[fast];
    }
    /* newer fragments (before owner in cand) that start inside */
    for (size_t j = 0; owner && j < i; j++)
        if (cand[j]->ned_lo[fast] > x && cand[j]->ned_lo[fast] < *stop)
            *stop = cand[j]->ned_lo[fast];
    return owner;
}

/* Runs of fragment `owner` for offsets [x, stop) along fast (the others
 * o), after the rs->n runs so far, while there is room.  @return where
 * they end. */
static uint64_t dense_owned(const struct dense_cells *dc,
                            struct tdb_frag *owner, uint64_t *o,
                            uint32_t fast, uint64_t x, uint64_t stop,
                            struct tdb_runs *rs)
{
    struct tdb_run *out = rs->v;
    size_t k = rs->n;
    /* along fast, a tile's cells follow one another when its cell order
     * walks fast first too */
    bool along = dc->nd == 1 ||
                 (owner->fs->cell_order == TDB_COL_MAJOR) == dc->col;
    while (x < stop && k < rs->cap) {
        o[fast] = x;
        uint64_t fc = tdb_frag_dense_cell(owner, o);
        uint64_t cnt = 1;
        if (along) {
            /* consecutive until the end of the space tile along fast */
            uint64_t ext = owner->ext[fast];
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
    rs->n = k;
    return x;
}

static int dense_runs(struct tdb_cells *c, uint64_t first, uint64_t n,
                      struct tdb_runs *rs, struct tdb_error *err)
{
    struct dense_cells *dc = (struct dense_cells *)c;
    uint32_t fast = dc->col ? 0 : dc->nd - 1;
    uint64_t o[TDB_MAX_DIMS];
    uint64_t at = dense_offsets(dc, first, fast, o);
    uint64_t row_left = dc->shape[fast] - at;
    uint64_t len = n < row_left ? n : row_left;
    struct dense_cand_list cl;
    cl.n = dense_cands(dc, o, fast, len, cl.v);
    rs->n = 0;
    if (dc->step[fast] != 1) {
        rs->n = dense_pick_line(dc, o, fast, len, &cl, rs);
        return 0;
    }
    uint64_t x = o[fast], end = o[fast] + len;
    while (x < end && rs->n < rs->cap) {
        uint64_t stop = end;
        struct tdb_frag *owner = dense_owner(&cl, fast, x, &stop);
        if (owner) {
            x = dense_owned(dc, owner, o, fast, x, stop, rs);
        } else {
            rs->v[rs->n++] = (struct tdb_run){NULL, 0, stop - x};
            x = stop;
        }
    }
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

/* A dense cells object over fragments frags[0..n) (copied), its geometry
 * to be filled in by the caller. */
static struct dense_cells *dense_new(struct tdb_array *a,
                                     struct tdb_frag *const *frags, size_t n)
{
    struct dense_cells *dc = calloc(1, sizeof *dc);
    if (!dc)
        return NULL;
    dc->frags = calloc(n ? n : 1, sizeof *dc->frags);
    if (!dc->frags) {
        free(dc);
        return NULL;
    }
    memcpy(dc->frags, frags, n * sizeof *frags);
    dc->nfrags = n;
    dc->base.ops = &dense_ops;
    dc->base.arr = a;
    atomic_init(&dc->base.ready, true);
    atomic_init(&dc->base.counted, true);
    pthread_mutex_init(&dc->base.lock, NULL);
    dc->nd = a->schema->ndims;
    return dc;
}

/* Counts dc's cells.  @return 0, or TDB_E_UNSUPPORTED (dc freed) when
 * there are 2^64 or more. */
static int dense_count(struct dense_cells *dc, struct tdb_cells **out,
                       struct tdb_error *err)
{
    uint64_t cells = 1;
    for (uint32_t d = 0; d < dc->nd; d++) {
        if (!tdb_mul_ok(cells, dc->shape[d], &cells)) {
            tdb_cells_free(&dc->base);
            return tdb_err(err, TDB_E_UNSUPPORTED, "dense view too large");
        }
    }
    dc->base.ncells = cells;
    *out = &dc->base;
    return 0;
}

int tdb_cells_dense(struct tdb_cells **out, struct tdb_array *a,
                    const uint64_t *lo, const uint64_t *hi,
                    const struct tdb_frag_list *fl, struct tdb_error *err)
{
    struct dense_cells *dc = dense_new(a, fl->v, fl->n);
    if (!dc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    dc->plain = true;
    for (uint32_t d = 0; d < dc->nd; d++) {
        dc->lo[d] = lo[d];
        dc->shape[d] = hi[d] - lo[d] + 1;
        dc->step[d] = 1;
    }
    return dense_count(dc, out, err);
}

bool tdb_cells_dense_shape(const struct tdb_cells *c, uint32_t *nd,
                           uint64_t *shape)
{
    if (c->ops != &dense_ops || !((const struct dense_cells *)c)->plain)
        return false;
    const struct dense_cells *dc = (const struct dense_cells *)c;
    *nd = dc->nd;
    for (uint32_t d = 0; d < dc->nd; d++)
        shape[d] = dc->shape[d];
    return true;
}

bool tdb_cells_dense_region(const struct tdb_cells *c, uint32_t *nd,
                            uint64_t *lo, uint64_t *shape)
{
    if (!tdb_cells_dense_shape(c, nd, shape))
        return false;
    const struct dense_cells *dc = (const struct dense_cells *)c;
    for (uint32_t d = 0; d < dc->nd; d++)
        lo[d] = dc->lo[d];
    return true;
}

int tdb_cells_dense_pick(struct tdb_cells **out, const struct tdb_cells *c,
                         const struct tdb_dense_pick *p,
                         struct tdb_error *err)
{
    uint32_t nd;
    uint64_t shape[TDB_MAX_DIMS];
    if (!tdb_cells_dense_shape(c, &nd, shape))
        return tdb_err(err, TDB_E_INVAL, "not a dense view");
    const struct dense_cells *v = (const struct dense_cells *)c;
    for (uint32_t d = 0; d < nd; d++) {
        /* the first and last offsets must not wrap */
        uint64_t first = v->lo[d] + p->start[d], last = first;
        uint64_t span = p->count[d] ? p->count[d] - 1 : 0, mag;
        int64_t st = p->step[d];
        mag = st < 0 ? (uint64_t)0 - (uint64_t)st : (uint64_t)st;
        bool ok = st != 0 && first >= v->lo[d] &&
                  (!span || mag <= UINT64_MAX / span);
        if (ok && st > 0)
            ok = (last = first + span * mag) >= first;
        else if (ok)
            ok = span * mag <= first - v->lo[d];
        if (!ok)
            return tdb_err(err, TDB_E_INVAL, "dimension %u: %llu cells by "
                           "%lld from %llu leave the offsets", d,
                           (unsigned long long)p->count[d], (long long)st,
                           (unsigned long long)p->start[d]);
    }
    struct dense_cells *dc = dense_new(c->arr, v->frags, v->nfrags);
    if (!dc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    dc->col = p->col_major;
    dc->plain = !p->col_major;
    for (uint32_t d = 0; d < nd; d++) {
        dc->lo[d] = v->lo[d] + p->start[d];
        dc->shape[d] = p->count[d];
        dc->step[d] = p->step[d];
        dc->plain = dc->plain && p->step[d] == 1;
    }
    return dense_count(dc, out, err);
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
