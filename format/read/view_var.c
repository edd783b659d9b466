/* view_var.c: the var-sized field files (values and .offsets): the walk
 * over their cells' bytes, the pass that sizes them and keeps
 * checkpoints, and their reads (view_priv.h). */
#include "read/view_priv.h"

#include <stdlib.h>

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
int view_var_sized(struct tdb_fieldfile *ff, struct tdb_error *err)
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
int view_var_read(struct tdb_fieldfile *ff, uint64_t off, size_t len,
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
