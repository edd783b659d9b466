/* view_copy.c: reading a field file into a buffer (fixed-size values and
 * validity here, var-sized ones in view_var.c) or as pieces of decoded
 * tiles (view_priv.h). */
#include "read/view_priv.h"

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

/* The cells of a fixed-size file (or a validity file) that hold the
 * window's bytes [w->off, w->end), walked into the window. */
static int view_fixed_bytes(struct tdb_fieldfile *ff, struct view_win *w,
                            const struct view_how *how, struct tdb_error *err)
{
    uint64_t cs = ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
    uint64_t c0 = w->off / cs, c1 = (w->end + cs - 1) / cs;
    if (c1 > ff->cells->ncells)
        c1 = ff->cells->ncells;
    w->pos = c0 * cs;
    return view_fixed(ff, c0, c1, w, how, err);
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
        r = view_fixed_bytes(ff, &w, &how, err);
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
    r = view_fixed_bytes(ff, &w, &how, err);
    if (!r)
        *got = len;
    return r;
}
