/* view_walk.c: the walk over a field file's cells (view_priv.h), run by
 * run (view_run.c), over the view's runs or a sparse plan's entries, with
 * the fast paths of the runs that stay in their tiles. */
#include "read/view_priv.h"
#include "read/plan.h"

/* The copy walk's common case, in a tight loop: runs[0..nr) copied while
 * each lies in the tile pinned for its fragment and in the window.
 * @return the runs copied (their cells added to *cells). */
static size_t view_copy_fast(const struct view_pins *vp,
                             const struct tdb_run *runs, size_t nr,
                             struct view_win *w, uint64_t cs, uint64_t *cells)
{
    uint64_t pos = w->pos, off = w->off, end = w->end, done = 0;
    if (w->sink || pos < off)
        return 0;
    uint8_t *dst = w->dst + (pos - off);
    size_t i;
    for (i = 0; i < nr; i++) {
        const struct tdb_frag *f = runs[i].frag;
        if (!f)
            break;
        const struct view_cur *k = &vp->cur[f->index % VIEW_CUR];
        uint64_t fc = runs[i].fcell, n = runs[i].count, nb = n * cs;
        if (k->f != f || fc < k->first || n > k->lim - fc || fc >= k->lim ||
            nb > end - pos)
            break;
        view_copy(dst, k->tile->data + (fc - k->first) * cs, nb);
        dst += nb;
        pos += nb;
        done += n;
    }
    w->pos = pos;
    *cells += done;
    return i;
}

/* The planning walk's common case: runs[0..nr) in the tile of their
 * fragment plan() was told of.  @return the runs passed (their cells
 * added to *cell). */
static size_t view_plan_fast(struct view_pins *vp, const struct tdb_run *runs,
                             size_t nr, uint64_t *cell)
{
    uint64_t c = *cell;
    size_t i;
    for (i = 0; i < nr; i++) {
        const struct tdb_frag *f = runs[i].frag;
        if (!f)
            break;
        struct view_cur *k = &vp->cur[f->index % VIEW_CUR];
        uint64_t fc = runs[i].fcell, n = runs[i].count;
        if (k->f != f || !k->told || fc < k->first || fc >= k->end ||
            n > k->end - fc)
            break;
        c += n;
        k->upto = c;
    }
    *cell = c;
    return i;
}

/* Walks cells [c0, c1) of ff's view, tile by tile, over the view's runs. */
static int view_walk_runs(struct tdb_fieldfile *ff, uint64_t c0,
                          uint64_t c1, struct view_visit *v,
                          struct view_pins *vp, struct tdb_error *err)
{
    struct tdb_run runs[VIEW_RUNS];
    while (c0 < c1) {
        size_t nr;
        struct tdb_runs rs = {runs, VIEW_RUNS, 0};
        int r = ff->cells->ops->runs(ff->cells, c0, c1 - c0, &rs, err);
        if (r)
            return r;
        nr = rs.n;
        if (!nr)
            return tdb_err(err, TDB_E_CORRUPT, "view: no cells at %llu",
                           (unsigned long long)c0);
        for (size_t ri = 0; ri < nr; ri++) {
            if (v->copy || v->plan) {
                size_t d = v->copy ? view_copy_fast(vp, runs + ri, nr - ri,
                                                    v->copy, v->cs, &c0)
                                   : view_plan_fast(vp, runs + ri, nr - ri, &c0);
                v->pieces += d;
                if ((ri += d) == nr)
                    break;
            }
            const struct tdb_run *ru = &runs[ri];
            struct tdb_frag *f = ru->frag;
            uint64_t cell = c0;
            c0 += ru->count;
            struct view_cur *k = NULL;
            if (f) {
                k = &vp->cur[f->index % VIEW_CUR];
                if (k->f != f && (r = view_cur_set(ff, v, k, f)))
                    return r < 0 ? r : 0;
            }
            r = view_run(v, vp, k, ru, cell, err);
            if (r)
                return r < 0 ? r : 0;
        }
    }
    return 0;
}

/* view_copy_fast over a sparse plan's one-byte entries (plan.h), from the
 * entry at pp (which starts at the window's next cell) to cell c1; cs: the
 * bytes of a cell (a constant where inlined).  With no more fragments
 * than slots a slot's fragment is the entry's (or lim == first). */
#if defined(__GNUC__)
#define VIEW_INLINE inline __attribute__((always_inline))
#else
#define VIEW_INLINE inline
#endif

static VIEW_INLINE void view_copy_plan_cs(const struct view_pins *vp,
                                     struct tdb_plan_pos *pp, uint64_t c1,
                                     struct view_win *w, const uint64_t cs,
                                     uint64_t *pieces)
{
    const uint8_t *p0 = pp->p, *p = p0, *pe = pp->end;
    uint64_t *next = pp->next, cell = pp->cell;
    struct tdb_frag *const *frags = pp->frags;
    bool own = pp->nfrags <= VIEW_CUR;
    uint8_t *dst = w->dst + (w->pos - w->off);
    uint64_t cmax = cell + (w->end - w->pos) / cs;
    if (cmax > c1)
        cmax = c1;
    size_t slot;
    uint64_t count;
    while (p < pe && tdb_plan_short(pp, *p, &slot, &count)) {
        const struct view_cur *k = &vp->cur[slot % VIEW_CUR];
        uint64_t i = next[slot] - k->first;
        if (i >= k->lim - k->first || count > k->lim - k->first - i ||
            count > cmax - cell || (!own && k->f != frags[slot]))
            break;
        const uint8_t *src = k->tile->data + i * cs;
        if (count == 1)
            memcpy(dst, src, cs);
        else
            memcpy(dst, src, count * cs);
        dst += count * cs;
        next[slot] += count;
        cell += count;
        p++;
    }
    w->pos += (cell - pp->cell) * cs;
    pp->p = p;
    pp->cell = cell;
    *pieces += (uint64_t)(p - p0);
}

static void view_copy_plan(const struct view_pins *vp,
                           struct tdb_plan_pos *pp, uint64_t c1,
                           struct view_win *w, uint64_t cs, uint64_t *pieces)
{
    if (w->sink || w->pos < w->off)
        return;
    switch (cs) {
    case 1: view_copy_plan_cs(vp, pp, c1, w, 1, pieces); break;
    case 2: view_copy_plan_cs(vp, pp, c1, w, 2, pieces); break;
    case 4: view_copy_plan_cs(vp, pp, c1, w, 4, pieces); break;
    case 8: view_copy_plan_cs(vp, pp, c1, w, 8, pieces); break;
    default: view_copy_plan_cs(vp, pp, c1, w, cs, pieces); break;
    }
}

/* view_plan_fast over a sparse plan's one-byte entries. */
static void view_plan_plan(struct view_pins *vp, struct tdb_plan_pos *pp,
                           uint64_t c1, uint64_t *pieces)
{
    const uint8_t *p0 = pp->p, *p = p0, *pe = pp->end;
    uint64_t *next = pp->next, cell = pp->cell;
    struct tdb_frag *const *frags = pp->frags;
    bool own = pp->nfrags <= VIEW_CUR;
    size_t slot;
    uint64_t count;
    while (p < pe && tdb_plan_short(pp, *p, &slot, &count)) {
        struct view_cur *k = &vp->cur[slot % VIEW_CUR];
        uint64_t i = next[slot] - k->first;
        if (!k->told || i >= k->end - k->first ||
            count > k->end - k->first - i || count > c1 - cell ||
            (!own && k->f != frags[slot]))
            break;
        next[slot] += count;
        cell += count;
        k->upto = cell;
        p++;
    }
    pp->p = p;
    pp->cell = cell;
    *pieces += (uint64_t)(p - p0);
}

/* Cells [a, b) of fragment slot f that lie in view cells [ca, cb). */
struct view_span {
    size_t slot;
    struct tdb_frag *f;
    uint64_t a, b, ca, cb;
};

/* plan() hears of the span's tiles as pieces [ca, cb) (the cells between
 * two checkpoints of a plan: the pieces within are not told apart). */
static int view_plan_span(struct tdb_fieldfile *ff, struct view_visit *v,
                          struct view_pins *vp, const struct view_span *sp,
                          struct tdb_error *err)
{
    struct view_cur *k = &vp->cur[sp->slot % VIEW_CUR];
    struct tdb_frag *f = sp->f;
    uint64_t b = sp->b, ca = sp->ca, cb = sp->cb;
    int r;
    if (k->f != f && (r = view_cur_set(ff, v, k, f)))
        return r;
    if (k->field < 0)
        return 0;               /* fill values: no tile */
    for (uint64_t fc = sp->a; fc < b; fc = k->end) {
        if (fc - k->first >= k->end - k->first) {
            if ((r = view_plan_flush(v, k)) || (r = view_cur_tile(k, fc, err)))
                return r;
        }
        if ((r = view_plan_piece(v, k, ca, cb)))
            return r;
    }
    return 0;
}

/* A planning walk over a sparse plan from pp on, a checkpoint at a time
 * while one lies before c1: each fragment's cells between two checkpoints
 * are consecutive (when none goes back), whatever their order in the view.
 * @return 0, 1 to stop, or an error. */
static int view_plan_steps(struct tdb_fieldfile *ff, struct tdb_plan_pos *pp,
                           uint64_t c1, struct view_visit *v,
                           struct view_pins *vp, struct tdb_error *err)
{
    struct tdb_plan *pl = tdb_cells_plan(ff->cells);
    for (;;) {
        uint64_t cb, entries;
        const uint64_t *nb;
        size_t ck = tdb_plan_ckpt(pl, pp, c1, &cb, &nb, &entries);
        if (!ck)
            return 0;
        for (size_t f = 0; f < pp->nfrags; f++)
            if (nb[f] < pp->next[f])
                return 0;       /* a fragment goes back: entry by entry */
        for (size_t f = 0; f < pp->nfrags; f++) {
            struct view_span sp = {f, pp->frags[f], pp->next[f], nb[f],
                                   pp->cell, cb};
            int r = nb[f] == pp->next[f] ? 0
                                         : view_plan_span(ff, v, vp, &sp, err);
            if (r)
                return r;
        }
        v->pieces += entries;
        tdb_plan_goto(pl, pp, ck);
    }
}

/* Walks cells [c0, c1) of ff's view, tile by tile, over a sparse plan's
 * entries (no call per run). */
static int view_walk_plan(struct tdb_fieldfile *ff, uint64_t c0,
                          uint64_t c1, struct view_visit *v,
                          struct view_pins *vp, struct tdb_error *err)
{
    struct tdb_plan *pl = tdb_cells_plan(ff->cells);
    struct tdb_plan_pos pp;
    int r = tdb_plan_seek(pl, c0, &pp, err);
    if (r)
        return r;
    while (c0 < c1) {
        if (pp.p >= pp.end && !tdb_plan_more(pl, &pp)) {
            r = tdb_err(err, TDB_E_CORRUPT, "view: no cells at %llu",
                        (unsigned long long)c0);
            break;
        }
        if (pp.cell == c0 && v->plan && !v->copy) {
            r = view_plan_steps(ff, &pp, c1, v, vp, err);
            c0 = pp.cell;
            if (r)
                break;
            if (c0 >= c1)
                continue;
        }
        if (pp.cell == c0 && (v->copy || v->plan)) {
            if (v->copy)
                view_copy_plan(vp, &pp, c1, v->copy, v->cs, &v->pieces);
            else
                view_plan_plan(vp, &pp, c1, &v->pieces);
            c0 = pp.cell;
            if (c0 >= c1 || (pp.p >= pp.end && !tdb_plan_more(pl, &pp)))
                continue;
        }
        size_t slot;
        uint64_t fcell, count;
        const uint8_t *np;
        tdb_plan_decode(&pp, &slot, &fcell, &count, &np);
        uint64_t skip = c0 - pp.cell, n = count - skip;
        if (n > c1 - c0)
            n = c1 - c0;
        struct tdb_frag *f = pp.frags[slot];
        struct view_cur *k = &vp->cur[slot % VIEW_CUR];
        if (k->f != f && (r = view_cur_set(ff, v, k, f)))
            break;
        struct tdb_run ru = {f, fcell + skip, n};
        if ((r = view_run(v, vp, k, &ru, c0, err)))
            break;
        c0 += n;
        if (skip + n == count) {
            pp.next[slot] = fcell + count;
            pp.cell += count;
            pp.p = np;
        }
    }
    tdb_plan_done(pl, &pp);
    return r < 0 ? r : 0;
}

int view_walk(struct tdb_fieldfile *ff, uint64_t c0, uint64_t c1,
              struct view_visit *v, struct tdb_error *err)
{
    struct view_pins vp;
    vp.n = vp.next = 0;
    memset(vp.cur, 0, sizeof vp.cur);
    vp.how = v->how ? *v->how : (struct view_how){TDB_TAKE_LOAD, NULL, NULL};
    int r = tdb_cells_plan(ff->cells)
                ? view_walk_plan(ff, c0, c1, v, &vp, err)
                : view_walk_runs(ff, c0, c1, v, &vp, err);
    /* the ends of the pieces plan() was not told of yet (also when it
     * asked to stop: those pieces came before) */
    for (unsigned i = 0; v->plan && i < VIEW_CUR && r >= 0; i++) {
        int q = vp.cur[i].f ? view_plan_flush(v, &vp.cur[i]) : 0;
        if (q < 0)
            r = q;
    }
    view_unpin_all(&vp);
    return r;
}
