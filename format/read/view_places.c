/* view_places.c: where a fixed-size field file's bytes lie in the tiles,
 * without decoding any: the tiles a read will decode (planning ahead)
 * and the file ranges of each piece (view_priv.h). */
#include "read/view_priv.h"

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
