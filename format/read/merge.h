/* merge.h: the parts of the sparse view (sparse_view.c) shared by its
 * merges (merge_heap.c, merge_tournament.c) and its delete conditions
 * (sparse_delete.c): the view, a cursor over one fragment's cells, and
 * the pinning of a fragment's coordinate tiles.  Private to these files. */
#ifndef TDB_READ_MERGE_H
#define TDB_READ_MERGE_H

#include "read/view.h"
#include "read/plan.h"

struct sparse_cells {
    struct tdb_cells base;
    size_t nfrags;
    struct tdb_frag **frags;    /* oldest first */
    uint64_t t0, t1;
    bool versions;              /* tdb_cells_sparse_versions */
    /* versions: the cells a delete removed, in view order, and the cells
     * the merge has put in the plan so far */
    struct tdb_cell_delete *dels;
    size_t ndels, capdels;
    uint64_t emitted;
    struct tdb_order_key okey;
    unsigned threads;           /* for the merge (0: one per CPU) */
    tdb_pool_fn pool;           /* the engine's pool, for the merge */
    void *pool_arg;
    struct tdb_plan plan;
};

/* Whether the merge keeps every cell of equal coordinates. */
static inline bool sp_keeps_dups(const struct sparse_cells *sc)
{
    return sc->versions || sc->base.arr->schema->allows_dups;
}

/* Where a cell lies in the global order: its coordinates, and its integer
 * key (tdb_order_key_of) when kvalid. */
struct sp_head {
    struct tdb_coords c;
    uint64_t hilbert;
    uint64_t key;
    bool kvalid;
};

/* A cursor over one fragment's cells in stored order. */
struct sp_cur {
    struct tdb_frag *f;
    struct tdb_cache *cache;
    uint64_t cell, ncells;
    uint64_t tile, first, tcells;
    uint64_t tspan;             /* cells of the pinned tile tile_of maps to it */
    /* pinned tiles: the coordinates, then at SP_TS the timestamps and at
     * SP_DTS the delete timestamps */
    struct tdb_cache_entry *e[TDB_MAX_DIMS + 2];
    const struct tdb_tile *t[TDB_MAX_DIMS + 2];
    bool pinned;
    struct sp_head h;           /* the head cell's place in the order */
    uint64_t ts;
    uint64_t dts;               /* when a delete the fragment processed
                                 * removed the cell (UINT64_MAX: none) */
    int ts_field, dts_field;
    bool done;
    size_t slot;                /* index in frags[] */
    unsigned vs[TDB_MAX_DIMS];  /* bytes of each fixed-size coordinate */
    const struct tdb_order_key *okey;
};

#define SP_TS(s) ((s)->ndims)
#define SP_DTS(s) ((s)->ndims + 1)

/* Lets go of the tiles e[0..n) (NULL: none) and *pinned. */
static inline void sp_release(struct tdb_cache *cache,
                              struct tdb_cache_entry **e, uint32_t n,
                              bool *pinned)
{
    if (!*pinned)
        return;
    for (uint32_t d = 0; d < n; d++) {
        if (e[d])
            tdb_cache_release(cache, e[d]);
        e[d] = NULL;
    }
    *pinned = false;
}

/* Pins tile t of fragment f's coordinates: dimension d's in e[d], tl[d]. */
static inline int sp_pin_coords(struct tdb_frag *f, uint64_t t,
                                struct tdb_cache_entry **e,
                                const struct tdb_tile **tl,
                                struct tdb_error *err)
{
    const struct tdb_schema *s = f->fs;
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_tile_ref k =
            f->legacy_coords
                ? (struct tdb_tile_ref){f, f->dim_field[0] >= 0
                                               ? f->dim_field[0]
                                               : (int)s->nattrs,
                                        TDB_PART_LEGACY_DIM + d, t}
                : (struct tdb_tile_ref){f, f->dim_field[d], TDB_PART_VALUES, t};
        int r = tdb_frag_tile(&k, &e[d], &tl[d], err);
        if (r)
            return r;
    }
    return 0;
}

/* Cell i of a tile of u64 values (timestamps, delete timestamps). */
static inline int sp_cell_u64(const struct tdb_tile *tl, uint64_t i,
                              uint64_t *v, const char *what,
                              const struct tdb_frag *f, struct tdb_error *err)
{
    if ((i + 1) * 8 > tl->size)
        return tdb_err(err, TDB_E_CORRUPT, "%s: %s tile too short",
                       f->fm->path, what);
    *v = tdb_le64(tl->data + i * 8);
    return 0;
}


/* Is the cell under cursor k removed by a delete (sparse_delete.c)?
 * @return 1 or 0, or an error naming the delete condition. */
int tdb_sparse_deleted(struct sparse_cells *sc, struct sp_cur *k,
                       struct tdb_error *err);
/* Versions views: which delete removed the cell under cursor k, kept in
 * sc->dels when one did, as view cell sc->emitted (sparse_delete.c).
 * @return 0 or an error. */
int tdb_sparse_note_delete(struct sparse_cells *sc, struct sp_cur *k,
                           struct tdb_error *err);

/* The merge in general (merge_heap.c): a heap of cursors over the
 * fragments' cells into plan *pl (set up here).  @return 0 or an error
 * (*pl then freed). */
int tdb_merge_heap(struct sparse_cells *sc, struct tdb_plan *pl,
                   struct tdb_error *err);
/* The merge of integer keys (merge_tournament.c) into plan *pl, where it
 * applies.  @return 0, 1 when it does not apply (nothing set up: use
 * tdb_merge_heap), or an error. */
int tdb_merge_tournament(struct sparse_cells *sc, struct tdb_plan *pl,
                         struct tdb_error *err);

#endif
