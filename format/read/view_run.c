/* view_run.c: one run of a field file's view at a time (view_priv.h):
 * the window a walk fills, where the walk is in each fragment, the tiles
 * it keeps pinned, and the cells of a run copied, planned or visited. */
#include "read/view_priv.h"

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

void view_put(struct view_win *w, const uint8_t *src, uint64_t n)
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

/* The fragment field (and cache part) that holds this field in f; -1 when
 * the fragment does not have it (schema evolution). */
int view_frag_field(const struct tdb_fieldfile *ff,
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

void view_unpin_all(struct view_pins *vp)
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
int view_plan_flush(struct view_visit *v, struct view_cur *k)
{
    if (!k->told || k->upto <= k->told)
        return 0;
    uint64_t from = k->told;
    k->told = k->upto;
    return v->plan(v, k->f, k->field, k->part, k->t, from, k->upto);
}

/* A piece [from, to) of k's tile: plan() hears of the tile at its first,
 * of the later ones' ends at view_plan_flush. */
int view_plan_piece(struct view_visit *v, struct view_cur *k,
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
int view_cur_set(struct tdb_fieldfile *ff, struct view_visit *v,
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
int view_cur_tile(struct view_cur *k, uint64_t fc,
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

/* One run of the view: cells [fcell, fcell + count) of k's fragment
 * ru->frag (NULL: fill) are view cells from `cell` on.  @return 0, 1 to
 * stop, or an error. */
int view_run(struct view_visit *v, struct view_pins *vp,
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
