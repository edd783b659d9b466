/* view_priv.h: the parts of the field files (view.h) shared by their
 * files, bottom up: view_run.c (one run of the view at a time: the
 * window, the cursors, the pinned tiles), view_walk.c (the walk over the
 * view's runs or a sparse plan), view_var.c (var-sized files), view.c
 * (making, size, seek), then view_copy.c (reads) and view_places.c (where
 * bytes lie in the tiles).  A file calls only those before it.  Private
 * to these files. */
#ifndef TDB_READ_VIEW_PRIV_H
#define TDB_READ_VIEW_PRIV_H

#include "read/view.h"

#define VIEW_RUNS 256

/* A window [off, end) of the file being produced, and where we are. */
struct view_win {
    uint8_t *dst;
    uint64_t pos, off, end;
    struct tdb_segsink *sink;       /* not NULL: pieces instead of dst */
    struct tdb_cache *cache;
    struct tdb_cache_entry *entry;  /* the tile src is in (NULL: fill) */
};

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

/* view_run.c */
/* n bytes from src as the window's next ones (those in [off, end) into
 * dst or the sink). */
void view_put(struct view_win *w, const uint8_t *src, uint64_t n);
int view_frag_field(const struct tdb_fieldfile *ff, const struct tdb_frag *f,
                    unsigned *part);
void view_unpin_all(struct view_pins *vp);
int view_plan_flush(struct view_visit *v, struct view_cur *k);
int view_plan_piece(struct view_visit *v, struct view_cur *k, uint64_t from,
                    uint64_t to);
int view_cur_set(struct tdb_fieldfile *ff, struct view_visit *v,
                 struct view_cur *k, struct tdb_frag *f);
int view_cur_tile(struct view_cur *k, uint64_t fc, struct tdb_error *err);
int view_run(struct view_visit *v, struct view_pins *vp, struct view_cur *k,
             const struct tdb_run *ru, uint64_t cell, struct tdb_error *err);

/* view_walk.c: walks cells [c0, c1) of ff's view as v says.  @return 0
 * (also when v asked to stop) or an error. */
int view_walk(struct tdb_fieldfile *ff, uint64_t c0, uint64_t c1,
              struct view_visit *v, struct tdb_error *err);

/* view_var.c */
int view_var_sized(struct tdb_fieldfile *ff, struct tdb_error *err);
int view_var_read(struct tdb_fieldfile *ff, uint64_t off, size_t len,
                  struct view_win *w, const struct view_how *how,
                  struct tdb_error *err);

/* view.c */
int view_clip(struct tdb_fieldfile *ff, uint64_t off, size_t *len,
              struct tdb_error *err);

#endif
