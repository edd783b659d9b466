/* view.c: the data files of the mount contract (values, .offsets,
 * .validity) read over a sequence of cells, decoding only the tiles a byte
 * range touches (docs/LAYOUT.md "An array"). */
#include "read/view.h"
#include "read/plan.h"

#include <stdlib.h>

#define VIEW_RUNS 256

/* A window [off, end) of the file being produced, and where we are. */
struct view_win {
    uint8_t *dst;
    uint64_t pos, off, end;
    struct tdb_segsink *sink;       /* not NULL: pieces instead of dst */
    struct tdb_cache *cache;
    struct tdb_cache_entry *entry;  /* the tile src is in (NULL: fill) */
};

/* Bytes [p, p + n) of w->entry's tile as the next piece of the sink. */
static void view_seg(struct view_win *w, const uint8_t *p, uint64_t n)
{
    struct tdb_segsink *s = w->sink;
    if (s->full || !w->entry) {
        s->full = true;
        return;
    }
    size_t i = s->nheld;
    while (i > 0 && s->held[i - 1] != w->entry)
        i--;
    if (!i) {
        if (s->nheld == s->hcap) {
            s->full = true;
            return;
        }
        tdb_cache_hold(w->cache, w->entry);
        s->held[s->nheld++] = w->entry;
    }
    struct tdb_piece *last = s->n ? &s->pieces[s->n - 1] : NULL;
    if (last && (const uint8_t *)last->base + last->len == p)
        last->len += (size_t)n;
    else if (s->n == s->cap)
        s->full = true;
    else
        s->pieces[s->n++] = (struct tdb_piece){p, -1, 0, (size_t)n};
}

static void view_put(struct view_win *w, const uint8_t *src, uint64_t n)
{
    uint64_t a = w->pos, b = w->pos + n;
    if (n && b > w->off && a < w->end) {   /* (an empty value: src NULL) */
        uint64_t s = a > w->off ? a : w->off, e = b < w->end ? b : w->end;
        if (w->sink)
            view_seg(w, src + (s - a), e - s);
        else
            memcpy(w->dst + (s - w->off), src + (s - a), (size_t)(e - s));
    }
    w->pos = b;
}

/* Repeats an n-byte value `count` times into the window. */
static void view_put_rep(struct view_win *w, const uint8_t *v, uint64_t n,
                         uint64_t count)
{
    if (!n)
        return;
    if (w->pos + n * count <= w->off || w->pos >= w->end) {
        w->pos += n * count;
        return;
    }
    if (w->pos < w->off) {
        uint64_t skip = (w->off - w->pos) / n;
        w->pos += skip * n;
        count -= skip;
    }
    while (count-- && w->pos < w->end)
        view_put(w, v, n);
    if (count != UINT64_MAX)
        w->pos += n * (count + 1);
}

int tdb_fieldfile_init(struct tdb_fieldfile *ff, struct tdb_cells *cells,
                       struct tdb_array *a, const struct tdb_schema *s,
                       bool is_dim, uint32_t idx, enum tdb_field_part part)
{
    memset(ff, 0, sizeof *ff);
    ff->cells = cells;
    ff->arr = a;
    ff->is_dim = is_dim;
    ff->idx = idx;
    ff->part = part;
    ff->schema = s;
    pthread_mutex_init(&ff->lock, NULL);
    if (is_dim) {
        const struct tdb_dim *d = &s->dims[idx];
        ff->type = d->type;
        ff->cell_val_num = d->cell_val_num;
    } else {
        const struct tdb_attr *at = &s->attrs[idx];
        ff->type = at->type;
        ff->cell_val_num = at->cell_val_num;
        ff->nullable = at->nullable;
        ff->fill = at->fill;
        ff->fill_size = at->fill_size;
        ff->fill_validity = at->fill_validity;
    }
    ff->var = ff->cell_val_num == TDB_VAR_NUM;
    ff->cell_size = ff->var ? 0
                            : (uint64_t)tdb_dt_size(ff->type) * ff->cell_val_num;
    return 0;
}

void tdb_fieldfile_destroy(struct tdb_fieldfile *ff)
{
    if (!ff)
        return;
    free(ff->ckpt);
    pthread_mutex_destroy(&ff->lock);
}

/* The fragment field (and cache part) that holds this field in f; -1 when
 * the fragment does not have it (schema evolution). */
static int view_frag_field(const struct tdb_fieldfile *ff,
                           const struct tdb_frag *f, unsigned *part)
{
    *part = ff->part == TDB_FILE_VALIDITY ? TDB_PART_VALIDITY : TDB_PART_VALUES;
    if (!ff->is_dim) {
        if (ff->schema == f->fs)
            return (int)ff->idx;
        return f->attr_field[ff->idx];
    }
    if (f->legacy_coords) {
        *part = TDB_PART_LEGACY_DIM + ff->idx;
        return f->dim_field[0] >= 0 ? f->dim_field[0] : (int)f->fs->nattrs;
    }
    return f->dim_field[ff->idx];
}

/* How a walk takes the tiles it copies from (view.h, tdb_tile_take). */
struct view_how {
    enum tdb_tile_take take;
    tdb_tile_miss_fn missed;
    void *arg;
};

/* What a walk over cells does with them: fill cells (no fragment holds
 * them, or the fragment lacks the field), cells that may be passed over
 * without decoding, and cells of a decoded tile.  Each returns 0 to go on,
 * 1 to stop, or a negative error.  A walk with `copy` set copies fixed-size
 * cells itself (cs bytes each) and calls neither skip nor tile. */
struct view_visit {
    bool offsets_only;          /* var-sized: cell sizes are enough */
    int (*fill)(struct view_visit *v, uint64_t n);
    bool (*skip)(struct view_visit *v, uint64_t n);
    int (*tile)(struct view_visit *v, const struct tdb_frag *f, uint64_t t,
                const struct tdb_tile *tile, uint64_t i, uint64_t n,
                struct tdb_error *err);
    /* When set, called for the tiles the walk would decode, instead of
     * decoding them (tdb_fieldfile_tiles): at a tile's first piece, view
     * cells [cell, end), then again with the end of its later pieces
     * (cell: the end told before), at the latest when the walk ends. */
    int (*plan)(struct view_visit *v, struct tdb_frag *f, int field,
                unsigned part, uint64_t t, uint64_t cell, uint64_t end);
    /* When set, called for each piece of a tile the walk goes over, in
     * the view's order, instead of decoding it: cells [i, i + n) of tile
     * t (tdb_fieldfile_places). */
    int (*place)(struct view_visit *v, struct tdb_frag *f, int field,
                 unsigned part, uint64_t t, uint64_t i, uint64_t n);
    struct view_win *copy;
    uint64_t cs;
    uint64_t pieces;            /* pieces of tiles the walk went over */
    struct tdb_cache_entry *entry;  /* the tile given to tile() */
    const struct view_how *how;     /* how it takes tiles (NULL: load) */
};

/* The tiles a walk keeps pinned: a view alternates between a few tiles
 * (one per fragment in a sparse merge, one per tile column in a dense
 * row), and looking each up in the cache again for every run is most of
 * the cost of short runs. */
#define VIEW_HELD 32
/* Where the walk is in each fragment (slot: the fragment's index in the
 * array, or in a sparse plan, modulo VIEW_CUR): a run in the tile of that
 * fragment's last run costs a compare. */
#define VIEW_CUR 64

struct view_held {
    struct tdb_frag *f;
    int field;
    unsigned part;
    uint64_t t;
    struct tdb_cache_entry *e;
    const struct tdb_tile *tile;
    struct view_cur *k;         /* the slot that uses it */
};

struct view_cur {
    struct tdb_frag *f;         /* NULL: not used yet */
    int field;                  /* -1: the fragment lacks the field */
    unsigned part;
    uint64_t t, first, end;     /* tile t holds fragment cells [first, end) */
    const struct tdb_tile *tile;    /* pinned in the walk's ring; NULL: not
                                     * yet (or no longer) */
    struct tdb_cache_entry *e;
    uint64_t lim;               /* copying: cells [first, lim) of the tile
                                 * are there in full (lim == first: not
                                 * pinned) */
    uint64_t told, upto;        /* planning: tile t's pieces end at upto,
                                 * plan() knows of them up to told (0: not
                                 * told of the tile yet) */
    bool absent;                /* TDB_TAKE_CACHED: tile t is not in the
                                 * cache (its pieces are passed over) */
};

struct view_pins {
    struct view_held h[VIEW_HELD];
    unsigned n, next;
    struct view_cur cur[VIEW_CUR];
    struct view_how how;
};

/* Lets go of the tile in ring slot h (the view slot using it forgets
 * it). */
static void view_unpin_one(struct view_held *h)
{
    if (h->k->tile == h->tile) {
        h->k->tile = NULL;
        h->k->lim = h->k->first;
    }
    tdb_cache_release(h->f->arr->cache, h->e);
}

static void view_unpin_all(struct view_pins *vp)
{
    for (unsigned i = 0; i < vp->n; i++)
        view_unpin_one(&vp->h[i]);
    vp->n = vp->next = 0;
}

/* Pins k's tile as vp->how says: from the cache only (TDB_TAKE_CACHED),
 * else loaded within the budget when it has room; when it has none, the
 * ring lets go of its other tiles first, then the tile is loaded all the
 * same (TDB_TAKE_LOAD) or once there is room (TDB_TAKE_WAIT).
 * @return 0, 1 (not in the cache) or an error. */
static int view_take(struct view_pins *vp, struct view_cur *k,
                     struct tdb_cache_entry **e, const struct tdb_tile **tl,
                     struct tdb_error *err)
{
    const struct tdb_tile_ref ref = {k->f, k->field, k->part, k->t};
    if (vp->how.take == TDB_TAKE_CACHED)
        return tdb_frag_tile_flags(&ref, TDB_CACHE_PEEK | TDB_CACHE_NOWAIT,
                                   e, tl, err);
    int r = tdb_frag_tile_flags(&ref, TDB_CACHE_TRY, e, tl, err);
    if (r != 1)
        return r;
    view_unpin_all(vp);
    return tdb_frag_tile_flags(&ref,
                               vp->how.take == TDB_TAKE_WAIT ? TDB_CACHE_WAIT
                                                             : 0,
                               e, tl, err);
}

/* Pins k's tile (k->tile, k->e) in the walk's ring.  @return 0, 1 (with
 * TDB_TAKE_CACHED: not in the cache) or an error. */
static int view_pin(struct view_pins *vp, struct view_cur *k,
                    struct tdb_error *err)
{
    for (unsigned i = 0; i < vp->n; i++) {
        struct view_held *h = &vp->h[i];
        if (h->t == k->t && h->f == k->f && h->field == k->field &&
            h->part == k->part) {
            h->k = k;
            k->tile = h->tile;
            k->e = h->e;
            return 0;
        }
    }
    struct tdb_cache_entry *e;
    const struct tdb_tile *tl;
    int r = view_take(vp, k, &e, &tl, err);
    if (r)
        return r;
    struct view_held *h;
    if (vp->n < VIEW_HELD) {
        h = &vp->h[vp->n++];
    } else {
        h = &vp->h[vp->next];
        vp->next = (vp->next + 1) % VIEW_HELD;
        view_unpin_one(h);
    }
    *h = (struct view_held){k->f, k->field, k->part, k->t, e, tl, k};
    k->tile = tl;
    k->e = e;
    return 0;
}

/* Tells plan() of the pieces of k's tile it does not know of yet. */
static int view_plan_flush(struct view_visit *v, struct view_cur *k)
{
    if (!k->told || k->upto <= k->told)
        return 0;
    uint64_t from = k->told;
    k->told = k->upto;
    return v->plan(v, k->f, k->field, k->part, k->t, from, k->upto);
}

/* A piece [from, to) of k's tile: plan() hears of the tile at its first,
 * of the later ones' ends at view_plan_flush. */
static int view_plan_piece(struct view_visit *v, struct view_cur *k,
                           uint64_t from, uint64_t to)
{
    if (k->told) {
        k->upto = to;
        return 0;
    }
    k->told = k->upto = to;
    return v->plan(v, k->f, k->field, k->part, k->t, from, to);
}

/* Slot k now follows fragment f. */
static int view_cur_set(struct tdb_fieldfile *ff, struct view_visit *v,
                        struct view_cur *k, struct tdb_frag *f)
{
    int r = k->f && v->plan ? view_plan_flush(v, k) : 0;
    unsigned part;
    int field = view_frag_field(ff, f, &part);
    if (field >= 0 && v->offsets_only && part == TDB_PART_VALUES)
        part = TDB_PART_OFFSETS;
    *k = (struct view_cur){f, field, part, 0, 0, 0, NULL, NULL, 0, 0, 0,
                           false};
    return r;
}

/* Slot k moves to the tile of fragment cell fc. */
static int view_cur_tile(struct view_cur *k, uint64_t fc,
                         struct tdb_error *err)
{
    const struct tdb_frag *f = k->f;
    uint64_t first, t = tdb_frag_tile_of(f, fc, &first);
    k->t = t;
    k->first = first;
    k->end = first + tdb_frag_tile_span(f, t);
    k->tile = NULL;
    k->lim = first;
    k->told = k->upto = 0;
    k->absent = false;
    if (fc >= k->end)
        return tdb_err(err, TDB_E_CORRUPT, "%s: cell %llu beyond tile %llu",
                       f->fm->path, (unsigned long long)fc,
                       (unsigned long long)t);
    return 0;
}

/* n bytes, most often one small cell. */
static inline void view_copy(uint8_t *d, const uint8_t *s, uint64_t n)
{
    switch (n) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    case 16: memcpy(d, s, 16); break;
    default: memcpy(d, s, (size_t)n); break;
    }
}

/* The nb bytes of k's tile the window wants next are left out: the tile
 * is not in the cache (TDB_TAKE_CACHED).  @return 1 to stop. */
static int view_absent(struct view_pins *vp, struct view_cur *k,
                       struct view_win *w, uint64_t nb)
{
    if (!k->absent && vp->how.missed)
        vp->how.missed(vp->how.arg, k->f, k->field, k->part, k->t);
    k->absent = true;
    w->pos += nb;
    if (w->sink)
        w->sink->full = true;
    return w->pos >= w->end || w->sink != NULL;
}

/* Cells [i, i + n) of k's tile into the copy window. @return 1 to stop. */
static int view_copy_cells(struct view_visit *v, struct view_pins *vp,
                           struct view_cur *k, uint64_t i, uint64_t n,
                           struct tdb_error *err)
{
    struct view_win *w = v->copy;
    uint64_t cs = v->cs, nb = n * cs, a = w->pos;
    if (a + nb <= w->off) {     /* before the window: no decoding */
        w->pos = a + nb;
        return 0;
    }
    int r;
    if (!k->tile) {
        r = k->absent ? 1 : view_pin(vp, k, err);
        if (r == 1)
            return view_absent(vp, k, w, nb);
        if (r)
            return r;
        uint64_t held = k->tile->size / cs;
        k->lim = k->first + (held < k->end - k->first ? held : k->end - k->first);
    }
    if ((i + n) * cs > k->tile->size)
        return tdb_err(err, TDB_E_CORRUPT, "%s: tile %llu too short",
                       k->f->fm->path, (unsigned long long)k->t);
    const uint8_t *src = k->tile->data + i * cs;
    if (!w->sink && a >= w->off && a + nb <= w->end) {
        view_copy(w->dst + (a - w->off), src, nb);
        w->pos = a + nb;
        return w->pos >= w->end;
    }
    w->entry = k->e;
    view_put(w, src, nb);
    w->entry = NULL;
    return w->pos >= w->end || (w->sink && w->sink->full);
}

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

/* One run of the view: cells [fcell, fcell + count) of k's fragment
 * ru->frag (NULL: fill) are view cells from `cell` on.  @return 0, 1 to
 * stop, or an error. */
static int view_run(struct view_visit *v, struct view_pins *vp,
                    struct view_cur *k, const struct tdb_run *ru,
                    uint64_t cell, struct tdb_error *err)
{
    struct tdb_frag *f = ru->frag;
    uint64_t fc = ru->fcell;
    int r;
    if (!f || k->field < 0)
        return v->fill(v, ru->count);
    uint64_t left = ru->count;
    while (left) {
        if (fc - k->first >= k->end - k->first) {
            if (v->plan && (r = view_plan_flush(v, k)))
                return r;
            if ((r = view_cur_tile(k, fc, err)))
                return r;
        }
        uint64_t n = k->end - fc;
        if (n > left)
            n = left;
        v->pieces++;
        r = 0;
        if (v->place) {
            r = v->place(v, f, k->field, k->part, k->t, fc - k->first, n);
        } else if (v->plan) {
            r = view_plan_piece(v, k, cell, cell + n);
        } else if (v->copy) {
            r = view_copy_cells(v, vp, k, fc - k->first, n, err);
        } else if (!v->skip || !v->skip(v, n)) {
            if (!k->tile && (r = view_pin(vp, k, err)))
                return r;
            v->entry = k->e;
            r = v->tile(v, f, k->t, k->tile, fc - k->first, n, err);
        }
        if (r)
            return r;
        fc += n;
        cell += n;
        left -= n;
    }
    return 0;
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

static int view_walk(struct tdb_fieldfile *ff, uint64_t c0, uint64_t c1,
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

/* Fixed-size bytes (values or validity) into a window. */
struct view_fixed {
    struct view_visit v;
    struct view_win *w;
    uint64_t cs;
    const uint8_t *fill;
    uint64_t fill_size;
};

static int view_fixed_fill(struct view_visit *v, uint64_t n)
{
    struct view_fixed *x = (struct view_fixed *)v;
    if (x->fill_size == x->cs)
        view_put_rep(x->w, x->fill, x->cs, n);
    else /* fill shorter than a cell (cell_val_num > 1) */
        for (uint64_t k = 0; k < n; k++)
            for (uint64_t b = 0; b < x->cs; b += x->fill_size)
                view_put(x->w, x->fill, x->fill_size);
    return x->w->pos >= x->w->end || (x->w->sink && x->w->sink->full);
}

static int view_fixed(struct tdb_fieldfile *ff, uint64_t c0, uint64_t c1,
                      struct view_win *w, const struct view_how *how,
                      struct tdb_error *err)
{
    bool validity = ff->part == TDB_FILE_VALIDITY;
    uint64_t cs = validity ? 1 : ff->cell_size;
    struct view_fixed x = {
        {.fill = view_fixed_fill, .copy = w, .cs = cs, .how = how}, w, cs,
        validity ? &ff->fill_validity : ff->fill,
        validity ? 1 : ff->fill_size,
    };
    return view_walk(ff, c0, c1, &x.v, err);
}

/* Calls fn(arg, bytes, size) for each var-sized cell of [c0, c1); fn
 * returns non-zero to stop. */
typedef int (*view_var_fn)(void *arg, const uint8_t *p, uint64_t n);

struct view_var {
    struct view_visit v;
    struct tdb_fieldfile *ff;
    view_var_fn fn;
    void *arg;
};

static int view_var_fill(struct view_visit *v, uint64_t n)
{
    struct view_var *x = (struct view_var *)v;
    for (uint64_t k = 0; k < n; k++)
        if (x->fn(x->arg, x->ff->fill, x->ff->fill_size))
            return 1;
    return 0;
}

static int view_var_tile(struct view_visit *v, const struct tdb_frag *f,
                         uint64_t t, const struct tdb_tile *tile, uint64_t i,
                         uint64_t n, struct tdb_error *err)
{
    struct view_var *x = (struct view_var *)v;
    if (!tile->offsets || i + n > tile->ncells)
        return tdb_err(err, TDB_E_CORRUPT, "%s: var tile %llu has no offsets",
                       f->fm->path, (unsigned long long)t);
    for (uint64_t k = i; k < i + n; k++) {
        uint64_t a = tile->offsets[k];
        uint64_t b = k + 1 < tile->ncells ? tile->offsets[k + 1] : tile->size;
        if (x->fn(x->arg, tile->data ? tile->data + a : NULL, b - a))
            return 1;
    }
    return 0;
}

/* What view_var calls for each cell, and how it takes tiles; with
 * sizes_only, fn may get NULL bytes (only the sizes are decoded). */
struct view_varwalk {
    bool sizes_only;
    view_var_fn fn;
    void *arg;
    const struct view_how *how;     /* NULL: TDB_TAKE_LOAD */
};

static int view_var(struct tdb_fieldfile *ff, uint64_t c0, uint64_t c1,
                    const struct view_varwalk *q, struct tdb_error *err)
{
    struct view_var x = {{.offsets_only = q->sizes_only,
                          .fill = view_var_fill,
                          .tile = view_var_tile,
                          .how = q->how},
                         ff, q->fn, q->arg};
    return view_walk(ff, c0, c1, &x.v, err);
}

struct view_sizer {
    uint64_t total, cell;
    uint64_t *ckpt;
};

static int view_size_cb(void *arg, const uint8_t *p, uint64_t n)
{
    struct view_sizer *s = arg;
    if (s->cell % TDB_CKPT == 0)
        s->ckpt[s->cell / TDB_CKPT] = s->total;
    s->total += n;
    s->cell++;
    return 0;
}

/* One pass over the var-sized cells: total bytes and checkpoints. */
static int view_var_sized(struct tdb_fieldfile *ff, struct tdb_error *err)
{
    if (atomic_load_explicit(&ff->sized, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&ff->lock);
    int r = 0;
    if (!atomic_load_explicit(&ff->sized, memory_order_relaxed)) {
        uint64_t n = ff->cells->ncells;
        uint64_t nck = n / TDB_CKPT + 1;
        struct view_sizer s = {0, 0, calloc(nck, sizeof(uint64_t))};
        if (!s.ckpt) {
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
        } else {
            struct view_varwalk q = {true, view_size_cb, &s, NULL};
            r = view_var(ff, 0, n, &q, err);
            if (r) {
                free(s.ckpt);
            } else {
                ff->ckpt = s.ckpt;
                ff->nckpt = nck;
                ff->var_total = s.total;
                atomic_store_explicit(&ff->sized, true, memory_order_release);
            }
        }
    }
    pthread_mutex_unlock(&ff->lock);
    return r;
}

bool tdb_fieldfile_size_cheap(const struct tdb_fieldfile *ff)
{
    struct tdb_fieldfile *f = (struct tdb_fieldfile *)ff; /* atomics */
    return atomic_load_explicit(&f->cells->counted, memory_order_acquire) &&
           (!ff->var || ff->part != TDB_FILE_VALUES ||
            atomic_load_explicit(&f->sized, memory_order_acquire));
}

int tdb_fieldfile_size(struct tdb_fieldfile *ff, uint64_t *size,
                       struct tdb_error *err)
{
    bool cheap =
        atomic_load_explicit(&ff->cells->counted, memory_order_acquire) &&
        (ff->part != TDB_FILE_VALUES || !ff->var);
    int r = cheap ? 0 : tdb_cells_prepare(ff->cells, err);
    if (r)
        return r;
    uint64_t n = ff->cells->ncells;
    switch (ff->part) {
    case TDB_FILE_VALIDITY: *size = n; return 0;
    case TDB_FILE_OFFSETS: *size = n * 8; return 0;
    default: break;
    }
    if (!ff->var) {
        *size = n * ff->cell_size;
        return 0;
    }
    r = view_var_sized(ff, err);
    if (!r)
        *size = ff->var_total;
    return r;
}

struct view_offs {
    struct view_win *w;
    uint64_t cum;
};

static int view_offs_cb(void *arg, const uint8_t *p, uint64_t n)
{
    struct view_offs *o = arg;
    uint8_t b[8];
    tdb_st64(b, o->cum);
    view_put(o->w, b, 8);
    o->cum += n;
    return o->w->pos >= o->w->end;
}

struct view_skip {
    uint64_t target, cum, cell;
};

static int view_skip_cb(void *arg, const uint8_t *p, uint64_t n)
{
    struct view_skip *s = arg;
    if (s->cell >= s->target)
        return 1;
    s->cum += n;
    s->cell++;
    return 0;
}

static int view_vals_cb(void *arg, const uint8_t *p, uint64_t n)
{
    struct view_win *w = arg;
    view_put(w, p, n);
    return w->pos >= w->end;
}

/* Var-sized bytes [off, off + len) into w (offsets or values), tiles
 * taken as `how` says. */
static int view_var_read(struct tdb_fieldfile *ff, uint64_t off, size_t len,
                         struct view_win *w, const struct view_how *how,
                         struct tdb_error *err)
{
    int r = view_var_sized(ff, err);
    if (r)
        return r;
    uint64_t n = ff->cells->ncells, c0, c1, k;
    if (ff->part == TDB_FILE_OFFSETS) {
        c0 = off / 8;
        c1 = (off + len + 7) / 8;
        if (c1 > n)
            c1 = n;
        k = c0 / TDB_CKPT;
        struct view_skip sk = {c0, ff->ckpt[k], k * TDB_CKPT};
        struct view_varwalk q = {true, view_skip_cb, &sk, how};
        if ((r = view_var(ff, sk.cell, c0, &q, err)))
            return r;
        struct view_offs o = {w, sk.cum};
        w->pos = c0 * 8;
        q = (struct view_varwalk){true, view_offs_cb, &o, how};
        return view_var(ff, c0, c1, &q, err);
    }
    /* the checkpoint at or before off, then walk to it */
    size_t lo = 0, hi = (size_t)ff->nckpt;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (mid * (uint64_t)TDB_CKPT < n && ff->ckpt[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    c0 = (uint64_t)lo * TDB_CKPT;
    w->pos = ff->ckpt[lo];
    struct view_varwalk q = {false, view_vals_cb, w, how};
    return view_var(ff, c0, n, &q, err);
}

int tdb_fieldfile_read_how(struct tdb_fieldfile *ff, struct tdb_fieldread *rq,
                           struct tdb_error *err)
{
    uint64_t size, off = rq->off;
    size_t len = rq->len;
    bool fixed = ff->part == TDB_FILE_VALIDITY || !ff->var;
    rq->got = 0;
    if (!fixed && rq->take == TDB_TAKE_CACHED)
        return tdb_err(err, TDB_E_INVAL, "var-sized values: no read from "
                       "the cache alone");
    int r = tdb_cells_prepare(ff->cells, err);
    if (!r)
        r = tdb_fieldfile_size(ff, &size, err);
    if (r)
        return r;
    if (off >= size || !len)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    struct view_win w = {rq->buf, 0, off, off + len, NULL, NULL, NULL};
    struct view_how how = {rq->take, rq->missed, rq->arg};
    if (fixed) {
        uint64_t cs = ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
        uint64_t c0 = off / cs, c1 = (off + len + cs - 1) / cs;
        if (c1 > ff->cells->ncells)
            c1 = ff->cells->ncells;
        w.pos = c0 * cs;
        r = view_fixed(ff, c0, c1, &w, &how, err);
    } else {
        r = view_var_read(ff, off, len, &w, &how, err);
    }
    if (!r)
        rq->got = len;
    return r;
}

int tdb_fieldfile_read(struct tdb_fieldfile *ff, uint64_t off, void *buf,
                       size_t len, size_t *got, struct tdb_error *err)
{
    struct tdb_fieldread rq = {off, buf, len, 0, TDB_TAKE_LOAD, NULL, NULL};
    int r = tdb_fieldfile_read_how(ff, &rq, err);
    *got = rq.got;
    return r;
}

/* Planning walk: the tiles bytes [off, off + len) of a fixed-size file
 * touch, in the order a read decodes them. */
struct view_plan {
    struct view_visit v;
    tdb_tile_plan_fn fn;
    void *arg;
    uint64_t cs;
};

static int view_plan_fill(struct view_visit *v, uint64_t n)
{
    (void)v;
    (void)n;
    return 0;
}

static int view_plan_tile(struct view_visit *v, struct tdb_frag *f, int field,
                          unsigned part, uint64_t t, uint64_t cell,
                          uint64_t end)
{
    struct view_plan *p = (struct view_plan *)v;
    return p->fn(p->arg, f, field, part, t, cell * p->cs, end * p->cs);
}

/* Prepares ff's cells and cuts [off, off + *len) at the file's end
 * (*len 0: nothing there).  @return 0 or an error. */
static int view_clip(struct tdb_fieldfile *ff, uint64_t off, size_t *len,
                     struct tdb_error *err)
{
    uint64_t size;
    int r = tdb_cells_prepare(ff->cells, err);
    if (!r)
        r = tdb_fieldfile_size(ff, &size, err);
    if (r)
        return r;
    if (off >= size)
        *len = 0;
    else if (*len > size - off)
        *len = (size_t)(size - off);
    return 0;
}

int tdb_fieldfile_segs(struct tdb_fieldfile *ff, uint64_t off, size_t len,
                       struct tdb_segsink *s, size_t *got,
                       struct tdb_error *err)
{
    *got = 0;
    if (ff->var && ff->part != TDB_FILE_VALIDITY) {
        s->full = true;
        return 0;
    }
    int r = view_clip(ff, off, &len, err);
    if (r || !len)
        return r;
    struct view_win w = {NULL, 0, off, off + len, s, ff->arr->cache, NULL};
    struct view_how how = {s->cached ? TDB_TAKE_CACHED : TDB_TAKE_LOAD, NULL,
                           NULL};
    uint64_t cs = ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
    uint64_t c0 = off / cs, c1 = (off + len + cs - 1) / cs;
    if (c1 > ff->cells->ncells)
        c1 = ff->cells->ncells;
    w.pos = c0 * cs;
    r = view_fixed(ff, c0, c1, &w, &how, err);
    if (!r)
        *got = len;
    return r;
}

int tdb_fieldfile_tiles(struct tdb_fieldfile *ff, uint64_t off, uint64_t len,
                        struct tdb_tile_plan *tp, struct tdb_error *err)
{
    tp->pieces = 0;
    if (ff->var && ff->part != TDB_FILE_VALIDITY)
        return TDB_E_UNSUPPORTED;
    int r = tdb_cells_prepare(ff->cells, err);
    if (r)
        return r;
    uint64_t cs = ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
    uint64_t n = ff->cells->ncells;
    if (!cs || !len)
        return 0;
    uint64_t c0 = off / cs, c1 = off / cs + (len + cs - 1) / cs + 1;
    if (c1 > n)
        c1 = n;
    if (c0 >= c1)
        return 0;
    struct view_plan p = {
        {.fill = view_plan_fill, .plan = view_plan_tile}, tp->fn, tp->arg, cs};
    r = view_walk(ff, c0, c1, &p.v, err);
    tp->pieces = p.v.pieces;
    return r;
}

/* A walk over where a window's bytes lie in the tiles. */
struct view_places {
    struct view_visit v;
    tdb_tile_place_fn fn;
    void *arg;
    uint64_t pos, off, end;
    bool filled, stopped;
};

static int view_places_fill(struct view_visit *v, uint64_t n)
{
    (void)n;
    ((struct view_places *)v)->filled = true;
    return 1;
}

static int view_places_tile(struct view_visit *v, struct tdb_frag *f,
                            int field, unsigned part, uint64_t t, uint64_t i,
                            uint64_t n)
{
    struct view_places *x = (struct view_places *)v;
    uint64_t a = x->pos, b = a + n * v->cs;
    x->pos = b;
    if (b <= x->off)
        return 0;
    uint64_t s = a > x->off ? a : x->off, e = b < x->end ? b : x->end;
    int r = x->fn(x->arg, f, field, part, t, i * v->cs + (s - a), e - s);
    x->stopped = r != 0;
    return r ? r : x->pos >= x->end;
}

int tdb_fieldfile_places(struct tdb_fieldfile *ff, uint64_t off,
                         size_t *plen, tdb_tile_place_fn fn, void *arg,
                         struct tdb_error *err)
{
    size_t len = *plen;
    *plen = 0;
    if (ff->var || ff->part != TDB_FILE_VALUES)
        return 1;
    int r = view_clip(ff, off, &len, err);
    if (r || !len)
        return r;
    uint64_t cs = ff->cell_size, c0 = off / cs,
             c1 = (off + len + cs - 1) / cs;
    if (c1 > ff->cells->ncells)
        c1 = ff->cells->ncells;
    struct view_places x = {
        {.fill = view_places_fill, .place = view_places_tile, .cs = cs},
        fn, arg, c0 * cs, off, off + len, false, false};
    r = view_walk(ff, c0, c1, &x.v, err);
    if (r < 0)
        return r;
    if (x.filled || x.stopped || x.pos < x.end)
        return 1;
    *plen = len;
    return r;
}

int tdb_fieldfile_seek(struct tdb_fieldfile *ff, uint64_t off, bool data,
                       uint64_t *out, struct tdb_error *err)
{
    uint64_t size;
    int r = tdb_fieldfile_size(ff, &size, err);
    if (r)
        return r;
    if (off >= size)
        return TDB_E_NOENT;
    uint32_t nd;
    uint64_t shape[TDB_MAX_DIMS];
    bool holes = (!ff->var || ff->part == TDB_FILE_VALIDITY) &&
                 tdb_cells_dense_shape(ff->cells, &nd, shape);
    if (!holes) {
        *out = data ? off : size;
        return 0;
    }
    uint64_t cs = ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
    uint64_t c = off / cs, n = ff->cells->ncells;
    struct tdb_run runs[VIEW_RUNS];
    while (c < n) {
        size_t nr;
        struct tdb_runs rs = {runs, VIEW_RUNS, 0};
        if ((r = ff->cells->ops->runs(ff->cells, c, n - c, &rs, err)))
            return r;
        nr = rs.n;
        if (!nr)
            break;
        for (size_t i = 0; i < nr; i++) {
            unsigned part;
            bool written = runs[i].frag &&
                           view_frag_field(ff, runs[i].frag, &part) >= 0;
            if (written == data) {
                uint64_t at = c * cs;
                *out = at > off ? at : off;
                return 0;
            }
            c += runs[i].count;
        }
    }
    if (data)
        return TDB_E_NOENT;
    *out = size;
    return 0;
}
