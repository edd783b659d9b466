/* merge_heap.c: the sparse merge in general (docs/LAYOUT.md "Sparse
 * arrays: the cells"; FORMAT-NOTES "Order and duplicates"): a cursor per
 * fragment, a binary heap of them by their head cells' place in the
 * global order, duplicates resolved newest first and deleted cells
 * dropped, into a plan (plan.h). */
#include "read/merge.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ a cursor */

/* (k may be one a failed start never reached: f NULL, nothing pinned) */
static void sp_unpin(struct sp_cur *k)
{
    if (k->pinned)
        sp_release(k->cache, k->e, k->f->fs->ndims + 2, &k->pinned);
}

/* Pins the tiles holding cell k->cell (kept when it is the pinned tile's):
 * the coordinates, timestamps and delete timestamps. */
static int sp_load_tile(struct sp_cur *k, struct tdb_error *err)
{
    struct tdb_frag *f = k->f;
    const struct tdb_schema *s = f->fs;
    uint64_t first = k->first;
    uint64_t t = k->tile;
    if (!k->pinned || k->cell < first || k->cell - first >= k->tspan)
        t = tdb_frag_tile_of(f, k->cell, &first);
    if (k->pinned && t == k->tile)
        return 0;
    sp_unpin(k);
    k->tile = t;
    k->first = first;
    k->tcells = tdb_frag_tile_cells(f, t);
    k->tspan = tdb_frag_tile_span(f, t);
    k->pinned = true;
    int r = sp_pin_coords(f, t, k->e, k->t, err);
    if (r)
        return r;
    if (k->ts_field >= 0 &&
        (r = tdb_frag_tile(&(struct tdb_tile_ref){f, k->ts_field,
                                                  TDB_PART_VALUES, t},
                           &k->e[SP_TS(s)], &k->t[SP_TS(s)], err)))
        return r;
    if (k->dts_field >= 0 &&
        (r = tdb_frag_tile(&(struct tdb_tile_ref){f, k->dts_field,
                                                  TDB_PART_VALUES, t},
                           &k->e[SP_DTS(s)], &k->t[SP_DTS(s)], err)))
        return r;
    return 0;
}

/* Points the cursor's coordinates at cell k->cell, pinning its tiles. */
static int sp_load(struct sp_cur *k, struct tdb_error *err)
{
    struct tdb_frag *f = k->f;
    const struct tdb_schema *s = f->fs;
    int r = sp_load_tile(k, err);
    if (r)
        return r;
    uint64_t i = k->cell - k->first;
    if (i >= k->tcells)
        return tdb_err(err, TDB_E_CORRUPT, "%s: cell %llu beyond tile %llu",
                       f->fm->path, (unsigned long long)k->cell,
                       (unsigned long long)k->tile);
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_tile *tl = k->t[d];
        if (tl->offsets) {
            uint64_t a = tl->offsets[i];
            uint64_t b = i + 1 < tl->ncells ? tl->offsets[i + 1] : tl->size;
            k->h.c.v[d] = tl->data + a;
            k->h.c.n[d] = b - a;
        } else {
            unsigned vs = k->vs[d];
            if ((i + 1) * vs > tl->size)
                return tdb_err(err, TDB_E_CORRUPT, "%s: coordinate tile too short",
                               f->fm->path);
            k->h.c.v[d] = tl->data + i * vs;
            k->h.c.n[d] = vs;
        }
    }
    k->ts = f->fm->t2;
    k->dts = UINT64_MAX;
    if (k->ts_field >= 0)
        r = sp_cell_u64(k->t[SP_TS(s)], i, &k->ts, "timestamp", f, err);
    if (!r && k->dts_field >= 0)
        r = sp_cell_u64(k->t[SP_DTS(s)], i, &k->dts, "delete timestamp", f,
                        err);
    if (r)
        return r;
    if (s->cell_order == TDB_HILBERT)
        k->h.hilbert = tdb_hilbert(s, &k->h.c);
    k->h.kvalid = tdb_order_key_of(k->okey, &k->h.c, k->h.hilbert, &k->h.key);
    return 0;
}

/* Moves k to its next cell inside the open range (or done).  Where
 * duplicates are allowed deleted cells are passed over too; otherwise a
 * delete applies after the newest version of the coordinates is chosen
 * (sp_take_equal), as TileDB applies it: a deleted newest version hides
 * the older ones, it does not bring them back. */
static int sp_next_kept(struct sparse_cells *sc, struct sp_cur *k,
                        struct tdb_error *err)
{
    bool dups = sp_keeps_dups(sc);
    while (k->cell < k->ncells) {
        int r = sp_load(k, err);
        if (r)
            return r;
        if (k->ts_field >= 0 && (k->ts < sc->t0 || k->ts > sc->t1))
            r = 1;
        else if (dups && !sc->versions)
            r = tdb_sparse_deleted(sc, k, err);
        if (r < 0)
            return r;
        if (!r)
            return 0;
        k->cell++;
    }
    k->done = true;
    sp_unpin(k);
    return 0;
}

/* -------------------------------------------------------------- the merge */

/* Is cell (ts, index) newer than (ts2, index2)? */
static bool sp_newer(const struct sp_cur *a, const struct sp_cur *b)
{
    if (a->ts != b->ts)
        return a->ts > b->ts;
    return a->f->index > b->f->index;
}

/* The global order of two heads: the integer keys where they decide. */
static int sp_cmp(const struct tdb_schema *s, const struct tdb_order_key *ok,
                  const struct sp_head *a, const struct sp_head *b)
{
    if (a->kvalid && b->kvalid) {
        if (a->key != b->key)
            return a->key < b->key ? -1 : 1;
        if (ok->exact)
            return 0;
    }
    return tdb_order_cmp(s, &a->c, a->hilbert, &b->c, b->hilbert);
}

/* Does head a come before head b (among equal coordinates newest first)? */
static bool sp_before_slow(const struct tdb_schema *s, const struct sp_cur *a,
                           const struct sp_cur *b)
{
    int c = sp_cmp(s, a->okey, &a->h, &b->h);
    return c < 0 || (c == 0 && sp_newer(a, b));
}

static inline bool sp_before(const struct tdb_schema *s, const struct sp_cur *a,
                             const struct sp_cur *b)
{
    if (a->h.kvalid && b->h.kvalid && a->h.key != b->h.key)
        return a->h.key < b->h.key;
    return sp_before_slow(s, a, b);
}

/* Are a's coordinates those of key?  With an exact key a cell outside the
 * domain has other coordinates than one inside (integer values): key's
 * bytes are then not needed. */
static bool sp_same(const struct tdb_schema *s, const struct tdb_order_key *ok,
                    const struct sp_head *a, const struct sp_head *key)
{
    if (ok->exact && key->kvalid)
        return a->kvalid && a->key == key->key;
    return tdb_coords_equal(s, &a->c, &key->c);
}

/* Is a at key's place in the order (sp_cmp 0)?  With an exact key that is
 * having its coordinates (integers compare equal only when equal). */
static bool sp_at(const struct tdb_schema *s, const struct tdb_order_key *ok,
                  const struct sp_head *a, const struct sp_head *key)
{
    if (ok->exact && key->kvalid)
        return a->kvalid && a->key == key->key;
    return sp_cmp(s, ok, a, key) == 0;
}

/* A binary heap of the cursors not done, by sp_before. */
struct sp_heap {
    struct sp_cur **h;
    size_t n;
    const struct tdb_schema *s;
};

static void sp_sift_down(struct sp_heap *hp, size_t i)
{
    struct sp_cur **h = hp->h;
    struct sp_cur *x = h[i];
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= hp->n)
            break;
        size_t m = l;
        if (l + 1 < hp->n && sp_before(hp->s, h[l + 1], h[l]))
            m = l + 1;
        if (!sp_before(hp->s, h[m], x))
            break;
        h[i] = h[m];
        i = m;
    }
    h[i] = x;
}

static void sp_push(struct sp_heap *hp, struct sp_cur *x)
{
    size_t i = hp->n++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (!sp_before(hp->s, x, hp->h[p]))
            break;
        hp->h[i] = hp->h[p];
        i = p;
    }
    hp->h[i] = x;
}

static struct sp_cur *sp_pop(struct sp_heap *hp)
{
    struct sp_cur *top = hp->h[0];
    if (--hp->n) {
        hp->h[0] = hp->h[hp->n];
        sp_sift_down(hp, 0);
    }
    return top;
}

/* The top cursor moved on (or is done): restore the heap. */
static void sp_top_moved(struct sp_heap *hp)
{
    if (hp->h[0]->done)
        sp_pop(hp);
    else
        sp_sift_down(hp, 0);
}

/* The newest version of a cell so far (no duplicates), and whether a
 * delete commit removes it. */
struct sp_win {
    bool set;
    bool deleted;
    size_t slot;
    uint64_t cell, ts;
    size_t idx;
};

/* Takes cursor k's cells equal to key (newer ones win). */
static int sp_take_equal(struct sparse_cells *sc, struct sp_cur *k,
                         const struct sp_head *key, struct sp_win *w,
                         struct tdb_error *err)
{
    const struct tdb_schema *s = sc->base.arr->schema;
    while (!k->done && sp_same(s, &sc->okey, &k->h, key)) {
        if (!w->set || k->ts > w->ts ||
            (k->ts == w->ts && k->f->index > w->idx) ||
            (k->ts == w->ts && k->f->index == w->idx && k->cell > w->cell)) {
            *w = (struct sp_win){true, false, k->slot, k->cell, k->ts,
                                 k->f->index};
            int d = tdb_sparse_deleted(sc, k, err);
            if (d < 0)
                return d;
            w->deleted = d;
        }
        k->cell++;
        int r = sp_next_kept(sc, k, err);
        if (r)
            return r;
    }
    return 0;
}

/* The merge in general: its heap of cursors and a copy of the key of the
 * cells being merged. */
struct sp_slow {
    struct sparse_cells *sc;
    struct tdb_plan *pl;
    struct sp_heap hp;
    struct sp_cur **eq;         /* heads taken off the heap, equal to key */
    uint8_t *keybuf;            /* key's var-sized bytes */
    size_t keycap;
    struct tdb_error *err;
};

/* Sets up cursor i over fragment i at its first kept cell. */
static int sp_slow_cur_init(struct sparse_cells *sc, struct sp_cur *cur,
                            size_t i, struct tdb_error *err)
{
    const struct tdb_frag *f = sc->frags[i];
    cur->f = sc->frags[i];
    cur->cache = sc->base.arr->cache;
    cur->ncells = f->ncells;
    cur->ts_field = tdb_fragmeta_ts_field(f->fm);
    cur->dts_field = tdb_fragmeta_delete_ts_field(f->fm);
    cur->slot = i;
    cur->okey = &sc->okey;
    for (uint32_t d = 0; d < f->fs->ndims && d < TDB_MAX_DIMS; d++)
        cur->vs[d] = tdb_dt_size(f->fs->dims[d].type);
    return sp_next_kept(sc, cur, err);
}

/* Copies m's head into key, its var-sized bytes into ms->keybuf: the
 * cursors move on. */
static int sp_slow_key(struct sp_slow *ms, const struct sp_cur *m,
                       struct sp_head *key)
{
    const struct tdb_schema *s = ms->hp.s;
    key->hilbert = m->h.hilbert;
    key->key = m->h.key;
    key->kvalid = m->h.kvalid;
    bool bytes = !(ms->sc->okey.exact && key->kvalid);   /* see sp_same */
    size_t need = 0;
    for (uint32_t d = 0; d < s->ndims && bytes; d++)
        need += (size_t)m->h.c.n[d];
    if (need > ms->keycap) {
        uint8_t *kb = realloc(ms->keybuf, need);
        if (!kb)
            return tdb_err(ms->err, TDB_E_NOMEM, "out of memory");
        ms->keybuf = kb;
        ms->keycap = need;
    }
    size_t used = 0;
    for (uint32_t d = 0; d < s->ndims && bytes; d++) {
        key->c.n[d] = m->h.c.n[d];
        if (key->c.n[d])
            memcpy(ms->keybuf + used, m->h.c.v[d], (size_t)key->c.n[d]);
        key->c.v[d] = ms->keybuf + used;
        used += (size_t)key->c.n[d];
    }
    return 0;
}

/* No duplicates: the newest version of the coordinates of the smallest
 * head m wins, including versions kept side by side in one fragment. */
static int sp_slow_versions(struct sp_slow *ms, struct sp_cur *m)
{
    struct sparse_cells *sc = ms->sc;
    struct sp_heap *hp = &ms->hp;
    struct sp_head key;
    struct sp_win w = {0};
    int r;
    if ((r = sp_slow_key(ms, m, &key)) ||
        (r = sp_take_equal(sc, m, &key, &w, ms->err)))
        return r;
    sp_top_moved(hp);
    /* other heads at the same place in the order (other fragments'
     * versions): take them off, take their equal cells, put them back */
    if (hp->n && sp_at(hp->s, &sc->okey, &hp->h[0]->h, &key)) {
        size_t ne = 0;
        while (hp->n && sp_at(hp->s, &sc->okey, &hp->h[0]->h, &key))
            ms->eq[ne++] = sp_pop(hp);
        for (size_t i = 0; i < ne && !r; i++)
            r = sp_take_equal(sc, ms->eq[i], &key, &w, ms->err);
        if (r)
            return r;
        for (size_t i = 0; i < ne; i++)
            if (!ms->eq[i]->done)
                sp_push(hp, ms->eq[i]);
    }
    if (w.deleted)
        return 0;
    r = tdb_plan_emit(ms->pl, w.slot, w.cell);
    if (r)
        r = tdb_err(ms->err, r, "out of memory");
    return r;
}

/* Merges the heads until none is left: the smallest first; among equal
 * coordinates the newest first. */
static int sp_slow_run(struct sp_slow *ms, bool dups)
{
    int r = 0;
    while (!r && ms->hp.n) {
        struct sp_cur *m = ms->hp.h[0];
        if (!dups) {
            r = sp_slow_versions(ms, m);
            continue;
        }
        if (ms->sc->versions && (r = tdb_sparse_note_delete(ms->sc, m, ms->err)))
            return r;
        r = tdb_plan_emit(ms->pl, m->slot, m->cell);
        if (r)
            return tdb_err(ms->err, r, "out of memory");
        ms->sc->emitted++;
        m->cell++;
        if (!(r = sp_next_kept(ms->sc, m, ms->err)))
            sp_top_moved(&ms->hp);
    }
    return r;
}

/* The merge in general: a heap of cursors over the fragments' cells, each
 * cell's coordinates compared (by key where the keys decide). */
int tdb_merge_heap(struct sparse_cells *sc, struct tdb_plan *pl,
                   struct tdb_error *err)
{
    const struct tdb_schema *s = sc->base.arr->schema;
    size_t n = sc->nfrags;
    struct sp_cur *cur = calloc(n ? n : 1, sizeof *cur);
    struct sp_cur **heap = calloc(n ? n : 1, sizeof *heap);
    struct sp_slow ms = {.sc = sc, .pl = pl, .hp = {heap, 0, s},
                         .eq = calloc(n ? n : 1, sizeof *ms.eq), .err = err};
    int r = 0;
    if (!cur || !heap || !ms.eq || tdb_plan_init(pl, n, false)) {
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n && !r; i++) {
        r = sp_slow_cur_init(sc, &cur[i], i, err);
        if (!r && !cur[i].done)
            sp_push(&ms.hp, &cur[i]);
    }
    if (!r)
        r = sp_slow_run(&ms, sp_keeps_dups(sc));
    if (!r && ((r = tdb_plan_end(pl)) || (r = tdb_plan_seal(pl))))
        r = tdb_err(err, r, "out of memory");
out:
    for (size_t i = 0; cur && i < n; i++)
        sp_unpin(&cur[i]);
    free(cur);
    free(heap);
    free(ms.eq);
    free(ms.keybuf);
    if (r)
        tdb_plan_free(pl);
    return r;
}
