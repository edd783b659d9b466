/* merge_tournament.c: the sparse merge of integer keys (docs/LAYOUT.md
 * "Sparse arrays: the cells"): key ranges merged side by side, each by a
 * tournament over blocks of keys, on the threads of a pool, and their
 * plans (plan.h) joined. */
#include "read/merge.h"
#include "core/pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* Where every cell has an exact integer key (fixed-size integer
 * coordinates inside the domain; row- or column-major order), no cell
 * carries a timestamp or a delete timestamp and no delete condition
 * applies, the merge compares keys alone: computed a block of cells at a
 * time, in a tournament that keeps each match's loser.  The key space is
 * cut into ranges of about equal cells (estimated from the tiles' MBRs)
 * merged side by side on the threads of a pool (sp_fast_run), and their
 * plans are joined.  A fragment found not stored in order, or a cell
 * without a key, sends the merge back to tdb_merge_heap (return 1). */
#define SP_BLOCK 1024               /* cells keyed at a time, at most */
#define SP_BLOCK_BYTES (4u << 20)   /* the keys of a range's blocks, at most */
#define SP_RANGE_MIN (1u << 18)     /* cells per range, at least (unless
                                     * opts.merge_range_cells says) */
#define SP_RANGES_PER_THREAD 4      /* threads take ranges as they finish */
#define SP_RANGES_MAX 64

/* One fragment's cells in one range: keys[i..n) are of cells kcell + i.. */
struct sp_src {
    struct tdb_frag *f;
    const struct sp_src *base;  /* the range's first (slot: x - base) */
    uint64_t next;              /* the next cell to key */
    uint64_t kcell;
    uint32_t i, n;
    uint64_t last;              /* the last key (order check), with the
                                 * rank when packed */
    uint64_t first, tspan;      /* the pinned tile's cells */
    bool pinned;
    struct tdb_cache_entry *e[TDB_MAX_DIMS];
    const struct tdb_tile *t[TDB_MAX_DIMS];
    uint64_t *keys;             /* block cells (struct sp_fast) */
};

/* What the ranges share.  Where the keys leave room, a fragment's rank
 * goes in their low rbits bits (rank then decides nothing by itself). */
struct sp_fast {
    struct sparse_cells *sc;
    unsigned vs[TDB_MAX_DIMS];  /* bytes of each coordinate */
    uint32_t *rank;             /* per fragment: 1 + place in (t2, index) */
    unsigned rbits;
    size_t block;               /* cells keyed at a time */
    uint64_t **mbr_lo, **mbr_hi;    /* per fragment and tile: the keys of
                                     * the MBR's corners (NULL: none) */
    struct sp_range *rg;
    size_t nr;
    size_t order[SP_RANGES_MAX];    /* ranges in the order taken */
    atomic_size_t next;         /* the next of order[] to merge */
    /* the jobs queued on the pool and not ended, under lock */
    pthread_mutex_t lock;
    pthread_cond_t ended;
    size_t running;
};

struct sp_range {
    const struct sp_fast *fx;
    bool has_lo, has_hi;
    uint64_t lo, hi;            /* the keys [lo, hi) */
    struct tdb_plan plan;
    uint64_t *begin, *stop;     /* each fragment's cells [begin, stop) */
    int r;                      /* 0; 1: not for the fast merge; < 0 */
    struct tdb_error err;
};

/* (x may be one a failed start never reached: f NULL, nothing pinned) */
static void sp_src_unpin(struct sp_src *x)
{
    if (x->pinned)
        sp_release(x->f->arr->cache, x->e, x->f->fs->ndims, &x->pinned);
}

/* Pins the coordinate tiles holding cell c. */
static int sp_src_tile(struct sp_src *x, uint64_t c, struct tdb_error *err)
{
    if (x->pinned && c >= x->first && c - x->first < x->tspan)
        return 0;
    sp_src_unpin(x);
    uint64_t t = tdb_frag_tile_of(x->f, c, &x->first);
    x->tspan = tdb_frag_tile_span(x->f, t);
    x->pinned = true;
    int r = sp_pin_coords(x->f, t, x->e, x->t, err);
    if (r)
        return r;
    if (c - x->first >= x->tspan)
        return tdb_err(err, TDB_E_CORRUPT, "%s: cell %llu beyond tile %llu",
                       x->f->fm->path, (unsigned long long)c,
                       (unsigned long long)t);
    return 0;
}

/* Keys up to m cells from cell c, within c's tile (*m: how many). */
static int sp_src_keys(const struct sp_fast *fx, struct sp_src *x, uint64_t c,
                       uint64_t *m, uint64_t *out, struct tdb_error *err)
{
    int r = sp_src_tile(x, c, err);
    if (r)
        return r;
    uint64_t off = c - x->first;
    if (*m > x->tspan - off)
        *m = x->tspan - off;
    const uint8_t *base[TDB_MAX_DIMS];
    for (uint32_t d = 0; d < x->f->fs->ndims; d++) {
        const struct tdb_tile *tl = x->t[d];
        if (tl->offsets)
            return 1;
        if ((off + *m) * fx->vs[d] > tl->size)
            return tdb_err(err, TDB_E_CORRUPT, "%s: coordinate tile too short",
                           x->f->fm->path);
        base[d] = tl->data + off * fx->vs[d];
    }
    return tdb_order_keys(&fx->sc->okey, base, fx->vs, (size_t)*m, out) < *m;
}

/* Keys the next block of x's cells.  @return 0, 2 when x has no more
 * cells, 1 (not for the fast merge: a cell without a key, cells out of
 * order) or an error. */
static int sp_src_fill(const struct sp_fast *fx, struct sp_src *x,
                       struct tdb_error *err)
{
    x->i = x->n = 0;
    if (x->next >= x->f->ncells) {
        sp_src_unpin(x);
        return 2;
    }
    uint64_t m = x->f->ncells - x->next;
    if (m > fx->block)
        m = fx->block;
    int r = sp_src_keys(fx, x, x->next, &m, x->keys, err);
    if (r)
        return r;
    uint64_t *k = x->keys;
    if (fx->rbits) {
        size_t slot = (size_t)(x - x->base);
        uint64_t low = ((uint64_t)1 << fx->rbits) - 1 - fx->rank[slot];
        for (uint64_t i = 0; i < m; i++)
            k[i] = k[i] << fx->rbits | low;
    }
    uint64_t bad = k[0] < x->last;
    for (uint64_t i = 1; i < m; i++)
        bad |= k[i] < k[i - 1];
    if (bad)
        return 1;
    x->last = k[m - 1];
    x->kcell = x->next;
    x->n = (uint32_t)m;
    x->next += m;
    return 0;
}

/* The first of x's cells whose key is not below `key` (the MBRs say
 * between which tiles: the tiles before the first whose MBR's high key
 * is not below it hold only smaller keys, those from the first whose low
 * key is not below it only others). */
static int sp_src_lower_bound(const struct sp_fast *fx, struct sp_src *x,
                              size_t slot, uint64_t key, uint64_t *out,
                              struct tdb_error *err)
{
    struct tdb_frag *f = x->f;
    uint64_t lo = 0, hi = f->ncells;
    const uint64_t *mh = fx->mbr_hi[slot], *ml = fx->mbr_lo[slot];
    if (mh) {
        uint64_t nt = f->fm->sparse_tile_num, t = 0, u;
        while (t < nt && mh[t] < key)
            t++;
        for (u = t; u < nt && ml[u] < key; u++)
            ;
        lo = tdb_frag_tile_first(f, t);
        hi = tdb_frag_tile_first(f, u);
        lo = lo < f->ncells ? lo : f->ncells;
        hi = hi < f->ncells ? hi : f->ncells;
    }
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2, k, one = 1;
        int r = sp_src_keys(fx, x, mid, &one, &k, err);
        if (r)
            return r;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    *out = lo;
    return 0;
}

static inline bool sp_lt(const uint64_t *hk, const uint32_t *hr, uint32_t a,
                         uint32_t b)
{
    return hk[a] < hk[b] || (hk[a] == hk[b] && hr[a] > hr[b]);
}

/* Plays the tournament over leaves [0, K) below node (leaf i is node
 * K + i): loser[n] is the loser of the match at node n; returns the
 * winner. */
static uint32_t sp_tournament_play(uint32_t *loser, const uint64_t *hk,
                              const uint32_t *hr, size_t K, size_t node)
{
    if (node >= K)
        return (uint32_t)(node - K);
    uint32_t a = sp_tournament_play(loser, hk, hr, K, 2 * node);
    uint32_t b = sp_tournament_play(loser, hk, hr, K, 2 * node + 1);
    bool bw = sp_lt(hk, hr, b, a);
    loser[node] = bw ? a : b;
    return bw ? b : a;
}

/* The merge of one range: a source per fragment and the tournament over
 * their head keys.  The tournament's leaves are nodes K..2K-1, one per
 * fragment (any K: a leaf's path to the root is log2 of its node). */
struct sp_tournament {
    size_t K;
    struct sp_src *src;
    uint64_t *keys;             /* each source's block of keys */
    uint64_t *hk;               /* each source's head key */
    uint32_t *hr;               /* its rank; 0 when it has no cell left */
    uint32_t *loser;            /* the loser at each node; [0]: the winner */
    uint64_t *loser_key;        /* the losers' keys beside them: no lookup
                                 * per level */
};

static void sp_tournament_free(struct sp_tournament *tn)
{
    for (size_t i = 0; tn->src && i < tn->K; i++)
        sp_src_unpin(&tn->src[i]);
    free(tn->src);
    free(tn->keys);
    free(tn->hk);
    free(tn->hr);
    free(tn->loser);
    free(tn->loser_key);
}

/* Sets up the range's sources at its lower bound, keys their first block
 * and plays the tournament.  @return 0, 1 (back to the slow merge) or an
 * error. */
static int sp_tournament_start(struct sp_range *rg, struct sp_tournament *tn,
                               struct tdb_error *err)
{
    const struct sp_fast *fx = rg->fx;
    struct sparse_cells *sc = fx->sc;
    size_t n = sc->nfrags, K = n;
    tn->K = K;
    tn->src = calloc(n, sizeof *tn->src);
    tn->keys = malloc(n * fx->block * sizeof *tn->keys);
    tn->hk = malloc(K * sizeof *tn->hk);
    tn->hr = malloc(K * sizeof *tn->hr);
    tn->loser = malloc(K * sizeof *tn->loser);
    tn->loser_key = malloc(K * sizeof *tn->loser_key);
    if (!tn->src || !tn->keys || !tn->hk || !tn->hr || !tn->loser ||
        !tn->loser_key || tdb_plan_init(&rg->plan, n, rg->has_lo))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        struct sp_src *x = &tn->src[i];
        x->f = sc->frags[i];
        x->base = tn->src;
        x->keys = tn->keys + i * fx->block;
        int r;
        if (rg->has_lo &&
            (r = sp_src_lower_bound(fx, x, i, rg->lo, &x->next, err)))
            return r;
        rg->begin[i] = x->next;
        r = sp_src_fill(fx, x, err);
        if (r == 1 || r < 0)
            return r;
        tn->hk[i] = r ? UINT64_MAX : x->keys[0];
        tn->hr[i] = r ? 0 : fx->rbits ? 1 : fx->rank[i];
    }
    tn->loser[0] = sp_tournament_play(tn->loser, tn->hk, tn->hr, K, 1);
    for (size_t node = 1; node < K; node++)
        tn->loser_key[node] = tn->hk[tn->loser[node]];
    return 0;
}

/* Source w's new head (key wk) plays the losers from node up to the root
 * when ranks never decide (packed keys); @return the new winner.  With
 * masks: the compiler would branch, and which head wins is a coin toss. */
static inline uint32_t sp_replay_packed(uint32_t *loser, uint64_t *loser_key,
                                        size_t node, uint32_t w, uint64_t wk)
{
    for (; node; node >>= 1) {
        uint64_t lk = loser_key[node];
        uint32_t l = loser[node];
        uint64_t m = -(uint64_t)(lk < wk);
        uint64_t dk = (lk ^ wk) & m;
        uint32_t dl = (l ^ w) & (uint32_t)m;
        loser_key[node] = lk ^ dk;
        loser[node] = l ^ dl;
        wk ^= dk;
        w ^= dl;
    }
    return w;
}

/* The same when ranks (hr) decide between equal keys. */
static inline uint32_t sp_replay(uint32_t *loser, uint64_t *loser_key,
                                 const uint32_t *hr, size_t node, uint32_t w,
                                 uint64_t wk)
{
    uint32_t wr = hr[w];
    for (; node; node >>= 1) {
        uint64_t lk = loser_key[node];
        uint32_t l = loser[node];
        bool sw = (lk < wk) | ((lk == wk) & (hr[l] > wr));
        loser_key[node] = sw ? wk : lk;
        loser[node] = sw ? w : l;
        wk = sw ? lk : wk;
        wr = sw ? hr[l] : wr;
        w = sw ? l : w;
    }
    return w;
}

/* Source w's next head key into hk[w] (hr[w] 0 when it has no cell left).
 * @return 0, 1 (back to the heap merge) or an error. */
static inline int sp_tournament_next(const struct sp_fast *fx,
                                     struct sp_tournament *tn, uint32_t w,
                                     struct tdb_error *err)
{
    struct sp_src *x = &tn->src[w];
    if (++x->i < x->n) {
        tn->hk[w] = x->keys[x->i];
        return 0;
    }
    int r = sp_src_fill(fx, x, err);
    if (r == 1 || r < 0)
        return r;
    tn->hk[w] = r ? UINT64_MAX : x->keys[0];
    tn->hr[w] = r ? 0 : tn->hr[w];
    return 0;
}

/* Merges the range's cells into its plan. */
static int sp_range_merge(struct sp_range *rg, struct tdb_error *err)
{
    const struct sp_fast *fx = rg->fx;
    struct tdb_plan *pl = &rg->plan;
    struct sp_tournament tn = {0};
    size_t n = fx->sc->nfrags, K = n;
    bool dups = sp_keeps_dups(fx->sc);
    int r = sp_tournament_start(rg, &tn, err);
    if (r)
        goto out;
    struct sp_src *src = tn.src;
    uint64_t *hk = tn.hk;
    uint32_t *hr = tn.hr, *loser = tn.loser;
    uint64_t *loser_key = tn.loser_key;
    unsigned rb = fx->rbits;
    uint64_t hi = rg->has_hi ? rg->hi << rb : UINT64_MAX;
    uint64_t last = 0;
    uint32_t lslot = 0;
    bool have = false;
    uint32_t w = tn.loser[0];
    for (;;) {
        uint64_t key = hk[w];
        if (!hr[w] || key >= hi)
            break;
        uint64_t cell = src[w].kcell + src[w].i;
        /* no duplicates: among equal keys the newest fragment comes
         * first and wins, and its last version of them */
        if (dups || !have || (key ^ last) >> rb) {
            r = tdb_plan_emit(pl, w, cell);
            last = key;
            lslot = w;
            have = true;
        } else if (w == lslot) {
            r = tdb_plan_emit_replace(pl, w, cell);
        }
        if (r) {
            r = tdb_err(err, r, "out of memory");
            goto out;
        }
        if ((r = sp_tournament_next(fx, &tn, w, err)))
            goto out;
        /* w's new head plays the losers up to the root (ranks only
         * decide between equal keys: never when packed) */
        w = rb ? sp_replay_packed(loser, loser_key, (w + K) >> 1, w, hk[w])
               : sp_replay(loser, loser_key, hr, (w + K) >> 1, w, hk[w]);
    }
    for (size_t i = 0; i < n; i++)
        rg->stop[i] = hr[i] ? src[i].kcell + src[i].i : src[i].next;
    if ((r = tdb_plan_end(pl)))
        r = tdb_err(err, r, "out of memory");
out:
    sp_tournament_free(&tn);
    return r;
}

/* Merges ranges until none is left. */
static void sp_range_take(struct sp_fast *fx)
{
    for (;;) {
        size_t p = atomic_fetch_add(&fx->next, 1);
        if (p >= fx->nr)
            return;
        struct sp_range *rg = &fx->rg[fx->order[p]];
        rg->r = sp_range_merge(rg, &rg->err);
    }
}

/* Cuts the keys into nr ranges of about equal cells: cut[j] is where range
 * j + 1 starts.  A tile is taken as its cells spread evenly between its
 * MBR's low and high keys.  @return the ranges (fewer when cuts meet). */
static size_t sp_cuts(const struct sp_fast *fx, size_t nr, uint64_t *cut)
{
    struct sparse_cells *sc = fx->sc;
    size_t nt = 0;
    for (size_t f = 0; f < sc->nfrags; f++)
        nt += (size_t)sc->frags[f]->fm->sparse_tile_num;
    /* the tiles in one array: the search below passes over them ~64 times
     * per cut */
    struct sp_span {
        uint64_t lo, hi;
        double w;
    } *sp = malloc((nt ? nt : 1) * sizeof *sp);
    if (!sp)
        return 1;
    uint64_t kmin = UINT64_MAX, kmax = 0;
    double total = 0;
    size_t k = 0;
    for (size_t f = 0; f < sc->nfrags; f++)
        for (uint64_t t = 0; t < sc->frags[f]->fm->sparse_tile_num; t++, k++) {
            sp[k].lo = fx->mbr_lo[f][t];
            sp[k].hi = fx->mbr_hi[f][t];
            sp[k].w = (double)tdb_frag_tile_cells(sc->frags[f], t);
            kmin = sp[k].lo < kmin ? sp[k].lo : kmin;
            kmax = sp[k].hi > kmax ? sp[k].hi : kmax;
            total += sp[k].w;
        }
    size_t got = 0;
    for (size_t j = 1; j < nr; j++) {
        /* the smallest key with j / nr of the cells at or before it */
        double want = total * (double)j / (double)nr;
        uint64_t lo = kmin, hi = kmax;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            double below = 0;
            for (size_t i = 0; i < nt; i++) {
                uint64_t a = sp[i].lo, b = sp[i].hi;
                if (b <= mid)
                    below += sp[i].w;
                else if (a <= mid)
                    below += sp[i].w * ((double)(mid - a) + 1) /
                             ((double)(b - a) + 1);
            }
            if (below < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > kmin && (!got || lo > cut[got - 1]))
            cut[got++] = lo;
    }
    free(sp);
    return got + 1;
}

/* The ranges the merge is cut into for nthreads, 1 when the MBRs don't
 * tell. */
static size_t sp_plan_ranges(struct sp_fast *fx, size_t nthreads, uint64_t *cut)
{
    struct sparse_cells *sc = fx->sc;
    const struct tdb_schema *s = sc->base.arr->schema;
    uint64_t cells = 0;
    for (size_t f = 0; f < sc->nfrags; f++)
        cells += sc->frags[f]->ncells;
    size_t nr = nthreads * SP_RANGES_PER_THREAD;
    if (nthreads < 2)
        return 1;
    if (nr > SP_RANGES_MAX)
        nr = SP_RANGES_MAX;
    uint64_t rmin = sc->base.arr->merge_range_cells
                        ? sc->base.arr->merge_range_cells : SP_RANGE_MIN;
    if (nr > cells / rmin)
        nr = (size_t)(cells / rmin);
    if (nr < 2)
        return 1;
    uint64_t **mlo = fx->mbr_lo;
    bool ok = true;
    for (size_t f = 0; f < sc->nfrags && ok; f++) {
        struct tdb_fragmeta *fm = sc->frags[f]->fm;
        struct tdb_error e2 = {0};
        uint64_t nt = fm->sparse_tile_num;
        ok = !tdb_fragmeta_load_rtree(fm, &e2) && fm->nmbrs == nt &&
             (fx->mbr_lo[f] = malloc((nt ? nt : 1) * sizeof **mlo)) &&
             (fx->mbr_hi[f] = malloc((nt ? nt : 1) * sizeof **mlo));
        for (uint64_t t = 0; t < nt && ok; t++) {
            struct tdb_coords lo, hi;
            for (uint32_t d = 0; d < s->ndims; d++) {
                const struct tdb_range *m = &fm->mbrs[t * s->ndims + d];
                lo.v[d] = m->lo;
                hi.v[d] = m->hi;
                lo.n[d] = hi.n[d] = fx->vs[d];
            }
            ok = tdb_order_key_of(&sc->okey, &lo, 0, &mlo[f][t]) &&
                 tdb_order_key_of(&sc->okey, &hi, 0, &fx->mbr_hi[f][t]) &&
                 mlo[f][t] <= fx->mbr_hi[f][t];
        }
    }
    if (ok)
        return sp_cuts(fx, nr, cut);
    for (size_t f = 0; f < sc->nfrags; f++) {
        free(mlo[f]);
        free(fx->mbr_hi[f]);
        mlo[f] = fx->mbr_hi[f] = NULL;
    }
    return 1;
}

/* Whether the fast merge applies (see above). */
static bool sp_fast_applies(const struct sparse_cells *sc)
{
    const struct tdb_array *a = sc->base.arr;
    size_t n = sc->nfrags;
    if (a->nconds || !sc->okey.exact || sc->okey.hilbert || !n ||
        n > UINT32_MAX - 1)
        return false;
    for (size_t f = 0; f < n; f++) {
        const struct tdb_frag *fr = sc->frags[f];
        if (fr->fm->has_timestamps || fr->fm->has_delete_meta ||
            fr->fm->dense || fr->fs->ndims != a->schema->ndims)
            return false;
    }
    return true;
}

/* Each fragment's rank (newer: a later t2, then a later place in
 * frags[]) and whether the rank fits beside every key (fx->rbits). */
static int sp_fast_ranks(struct sp_fast *fx, struct tdb_error *err)
{
    const struct sparse_cells *sc = fx->sc;
    size_t n = sc->nfrags;
    struct tdb_keyed *age = malloc(n * sizeof *age);
    if (!age)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t f = 0; f < n; f++)
        age[f] = (struct tdb_keyed){sc->frags[f]->fm->t2, f};
    qsort(age, n, sizeof *age, tdb_keyed_cmp);
    for (size_t i = 0; i < n; i++)
        fx->rank[age[i].at] = (uint32_t)(i + 1);
    free(age);
    uint64_t prod = 1;
    bool fits = true;
    for (unsigned i = 0; i < sc->okey.nparts && fits; i++)
        fits = tdb_mul_ok(prod, sc->okey.part[i].radix, &prod);
    unsigned rbits = 1;
    while (((uint64_t)1 << rbits) - 1 < n)
        rbits++;
    if (fits && prod <= UINT64_MAX >> rbits)
        fx->rbits = rbits;
    return 0;
}

/* sp_range_take as a job of the pool, counted off fx->running when it
 * ends (fx is the merging thread's: nothing of it is touched after). */
struct sp_range_job {
    struct tdb_pool_job j;
    struct sp_fast *fx;
};

static void sp_range_job_run(struct tdb_pool_job *j)
{
    struct sp_fast *fx = ((struct sp_range_job *)j)->fx;
    sp_range_take(fx);
    pthread_mutex_lock(&fx->lock);
    if (--fx->running == 0)
        pthread_cond_signal(&fx->ended);
    pthread_mutex_unlock(&fx->lock);
}

static bool sp_range_job_of(const struct tdb_pool_job *j, void *fx)
{
    return j->run == sp_range_job_run &&
           ((const struct sp_range_job *)j)->fx == fx;
}

/* The order ranges are taken in: the threads start far apart (their
 * first tiles differ: a tile two threads want is decoded by one while the
 * other waits), one block of ranges per thread, taken in turn. */
static void sp_fast_order(struct sp_fast *fx, size_t nth)
{
    size_t nr = fx->nr, per = (nr + nth - 1) / nth, no = 0;
    for (size_t i = 0; i < per; i++)
        for (size_t b = 0; b < nth; b++)
            if (b * per + i < nr)
                fx->order[no++] = b * per + i;
}

/* Merges fx->nr ranges on nthreads threads: this one and those of the
 * engine's pool (tdb_cells_sparse_pool), else of one made for the merge.
 * The engine's pool runs other jobs too (tiles decoded ahead of reads):
 * this thread takes ranges until none is left, takes back the jobs no
 * thread has started and waits only for those running, which need
 * nothing of it. */
static void sp_fast_run(struct sp_fast *fx, size_t nthreads)
{
    size_t nr = fx->nr, nth = nr < nthreads ? nr : nthreads;
    atomic_init(&fx->next, 0);
    sp_fast_order(fx, nth);
    struct tdb_pool *pool = NULL, *own = NULL;
    if (nth > 1 && fx->sc->pool)
        pool = fx->sc->pool(fx->sc->pool_arg);
    if (!pool && nth > 1 && !tdb_pool_create(&own, (unsigned)(nth - 1)))
        pool = own;             /* else this thread alone merges */
    struct sp_range_job jobs[SP_RANGES_MAX];
    pthread_mutex_init(&fx->lock, NULL);
    pthread_cond_init(&fx->ended, NULL);
    size_t njobs = pool ? nth - 1 : 0;
    fx->running = njobs;        /* (jobs count it down as they end) */
    for (size_t i = 0; i < njobs; i++) {
        jobs[i] = (struct sp_range_job){.j.run = sp_range_job_run, .fx = fx};
        tdb_pool_submit(pool, &jobs[i].j);
    }
    sp_range_take(fx);
    struct tdb_pool_job *back =
        pool ? tdb_pool_take(pool, sp_range_job_of, fx) : NULL;
    size_t taken = 0;
    for (; back; back = back->next)
        taken++;
    pthread_mutex_lock(&fx->lock);
    fx->running -= taken;
    while (fx->running)
        pthread_cond_wait(&fx->ended, &fx->lock);
    pthread_mutex_unlock(&fx->lock);
    pthread_cond_destroy(&fx->ended);
    pthread_mutex_destroy(&fx->lock);
    tdb_pool_free(own);
}

/* The ranges' outcome: the first error, 1 when two ranges do not meet
 * where one left each fragment, else 0. */
static int sp_fast_outcome(const struct sp_range *rg, size_t nr, size_t n,
                           struct tdb_error *err)
{
    int r = 0;
    for (size_t p = 0; p < nr && !r; p++)
        if (rg[p].r) {
            r = rg[p].r;
            if (r < 0 && err)
                *err = rg[p].err;
        }
    for (size_t p = 1; p < nr && !r; p++)
        for (size_t f = 0; f < n && !r; f++)
            r = rg[p - 1].stop[f] != rg[p].begin[f];
    return r;
}

/* Sets up what the ranges share for a merge of sc: the block size, the
 * coordinates' sizes, the fragments' ranks. */
static int sp_fast_init(struct sp_fast *fx, struct sparse_cells *sc,
                        struct tdb_error *err)
{
    const struct tdb_schema *s = sc->base.arr->schema;
    size_t n = sc->nfrags;
    fx->sc = sc;
    /* blocks of SP_BLOCK cells, smaller where many fragments would take
     * more than SP_BLOCK_BYTES */
    fx->block = SP_BLOCK_BYTES / 8 / n;
    fx->block = fx->block > SP_BLOCK ? SP_BLOCK
              : fx->block < 16   ? 16
                                 : fx->block;
    for (uint32_t d = 0; d < s->ndims; d++)
        fx->vs[d] = tdb_dt_size(s->dims[d].type);
    fx->rank = calloc(n, sizeof *fx->rank);
    fx->mbr_lo = calloc(n, sizeof *fx->mbr_lo);
    fx->mbr_hi = calloc(n, sizeof *fx->mbr_hi);
    if (!fx->rank || !fx->mbr_lo || !fx->mbr_hi)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    return sp_fast_ranks(fx, err);
}

static void sp_fast_free(struct sp_fast *fx, size_t n)
{
    for (size_t f = 0; fx->mbr_lo && fx->mbr_hi && f < n; f++) {
        free(fx->mbr_lo[f]);
        free(fx->mbr_hi[f]);
    }
    free(fx->mbr_lo);
    free(fx->mbr_hi);
    free(fx->rank);
}

/* Sets up ranges rg[0..nr) between the cuts. */
static int sp_ranges_init(struct sp_fast *fx, struct sp_range *rg, size_t nr,
                          const uint64_t *cut, struct tdb_error *err)
{
    size_t n = fx->sc->nfrags;
    for (size_t p = 0; p < nr; p++) {
        rg[p].fx = fx;
        rg[p].has_lo = p > 0;
        rg[p].lo = p ? cut[p - 1] : 0;
        rg[p].has_hi = p + 1 < nr;
        rg[p].hi = p + 1 < nr ? cut[p] : 0;
        rg[p].begin = calloc(n, sizeof *rg[p].begin);
        rg[p].stop = calloc(n, sizeof *rg[p].stop);
        if (!rg[p].begin || !rg[p].stop)
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    fx->rg = rg;
    fx->nr = nr;
    return 0;
}

/* Joins the ranges' plans into rg[0]'s. */
static int sp_fast_join(struct sp_range *rg, size_t nr)
{
    struct tdb_plan *pls[SP_RANGES_MAX];
    for (size_t p = 0; p < nr; p++)
        pls[p] = &rg[p].plan;
    return tdb_plan_join(pls, nr);
}

int tdb_merge_tournament(struct sparse_cells *sc, struct tdb_plan *out,
                         struct tdb_error *err)
{
    size_t n = sc->nfrags;
    if (!sp_fast_applies(sc))
        return 1;
    struct sp_fast fx = {0};
    uint64_t cut[SP_RANGES_MAX];
    struct sp_range rg[SP_RANGES_MAX];
    memset(rg, 0, sizeof rg);
    size_t nr = 0;
    int r = sp_fast_init(&fx, sc, err);
    if (r)
        goto out;
    long cpus = sc->threads ? (long)sc->threads : sysconf(_SC_NPROCESSORS_ONLN);
    size_t nthreads = cpus < 1 ? 1 : cpus > SP_RANGES_MAX ? SP_RANGES_MAX
                                                          : (size_t)cpus;
    nr = sp_plan_ranges(&fx, nthreads, cut);
    if ((r = sp_ranges_init(&fx, rg, nr, cut, err)))
        goto out;
    sp_fast_run(&fx, nthreads);
    r = sp_fast_outcome(rg, nr, n, err);
    if (!r && (r = sp_fast_join(rg, nr)))
        r = tdb_err(err, r, "out of memory");
out:
    for (size_t p = 0; p < nr; p++) {
        if (p || r)
            tdb_plan_free(&rg[p].plan);
        free(rg[p].begin);
        free(rg[p].stop);
    }
    if (!r)
        *out = rg[0].plan;
    sp_fast_free(&fx, n);
    return r;
}
