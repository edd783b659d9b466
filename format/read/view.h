/* view.h: views of an array as sequences of cells (the mount contract's
 * data files): the dense view region in row-major order, a dense fragment
 * over its non-empty domain, merged sparse cells in global order, one
 * sparse fragment; and the field files read over such a sequence. */
#ifndef TDB_VIEW_H
#define TDB_VIEW_H

#include "read/array.h"
#include "model/order.h"
#include <pthread.h>
#include <stdatomic.h>

/* `count` consecutive cells of a view that come from consecutive cells
 * fcell.. of fragment `frag`, or are never-written cells (frag NULL). */
struct tdb_run {
    struct tdb_frag *frag;
    uint64_t fcell;
    uint64_t count;
};

/* Runs being filled: room for cap of them at v, n so far. */
struct tdb_runs {
    struct tdb_run *v;
    size_t cap, n;
};

struct tdb_cells;
struct tdb_cells_ops {
    /* Fills out with runs covering cells [first, first+n) (or a prefix of
     * them, at least one cell). */
    int (*runs)(struct tdb_cells *c, uint64_t first, uint64_t n,
                struct tdb_runs *out, struct tdb_error *err);
    void (*destroy)(struct tdb_cells *c);
};

struct tdb_cells {
    const struct tdb_cells_ops *ops;
    struct tdb_array *arr;
    uint64_t ncells;
    /* Set once, under `lock`, with release order after ncells and the runs
     * are final; read with acquire order (any thread may stat or read while
     * another prepares). */
    atomic_bool counted;        /* ncells known (stat needs no decoding) */
    atomic_bool ready;          /* runs can be served */
    pthread_mutex_t lock;
};

/* The fragments a view is over: v[0..n) (copied by the view). */
struct tdb_frag_list {
    struct tdb_frag **v;
    size_t n;
};

/* Dense: the cells of region [lo[d], hi[d]] (offsets from the domain's low
 * bound) in row-major order; fragments fl with newest last. */
int tdb_cells_dense(struct tdb_cells **out, struct tdb_array *a,
                    const uint64_t *lo, const uint64_t *hi,
                    const struct tdb_frag_list *fl, struct tdb_error *err);

/* Sparse: the cells of fragments fl merged in global order, at [t0, t1]:
 * duplicates dropped unless the schema allows them (newest wins), deleted
 * cells dropped.  The merge runs on first use (a tournament over integer
 * order keys, merge_tournament.c, else a k-way heap, merge_heap.c) and
 * keeps only where each run of one fragment's consecutive cells goes, its
 * plan (plan.h): about 1 byte per run, plus a checkpoint of (2 + n) * 8
 * bytes every max(1024, 16 n) runs from which any cell is found. */
int tdb_cells_sparse(struct tdb_cells **out, struct tdb_array *a,
                     const struct tdb_frag_list *fl, uint64_t t0, uint64_t t1,
                     struct tdb_error *err);

/* Sparse, as a consolidation reads them: every cell of frags[0..n) in
 * global order, every version of equal coordinates (newest first) and
 * deleted cells too, whatever their timestamps. */
int tdb_cells_sparse_versions(struct tdb_cells **out, struct tdb_array *a,
                              struct tdb_frag **frags, size_t n,
                              struct tdb_error *err);

/* Where sparse view c's merge finds threads beside the calling one:
 * pool(arg), asked when the merge runs (tree/'s tdb_fs_pool: the
 * engine's pool, made on first use, which also decodes tiles ahead of
 * reads; the merge waits for none of its other jobs).  Without it, or
 * when it gives NULL, the merge makes a pool of its own for its run.
 * c: a sparse view not prepared yet. */
struct tdb_pool;
typedef struct tdb_pool *(*tdb_pool_fn)(void *arg);
void tdb_cells_sparse_pool(struct tdb_cells *c, tdb_pool_fn pool, void *arg);

/* A versions view's cells that a delete removed, once prepared: view cell
 * `cell` was removed at time `when` by delete commit a->cond_ents[cond]
 * (UINT64_MAX: one the array no longer has), in view order; about 24
 * bytes a deleted cell. */
struct tdb_cell_delete {
    uint64_t cell, when, cond;
};
size_t tdb_cells_sparse_deletes(const struct tdb_cells *c,
                                const struct tdb_cell_delete **dels);

/* A sparse view's plan (read/plan.h), for walks over its entries without a
 * call per run: the view's own, read once it is prepared; NULL for other
 * views. */
struct tdb_plan;
struct tdb_plan *tdb_cells_plan(struct tdb_cells *c);

/* A dense view's shape (false for other views, and for picks that are
 * not row-major with step 1: callers count on row-major order). */
bool tdb_cells_dense_shape(const struct tdb_cells *c, uint32_t *nd,
                           uint64_t *shape);
/* A dense view's region: its first cell's offsets from the domain's low
 * bound, and its shape (false for other views). */
bool tdb_cells_dense_region(const struct tdb_cells *c, uint32_t *nd,
                            uint64_t *lo, uint64_t *shape);

/* Cells of a dense view picked as numpy picks them: along dimension d,
 * count[d] cells, the i-th at view offset start[d] + i * step[d] (step any
 * sign but 0; offsets may pass the view's end, even the domain's: cells
 * no fragment of the view wrote hold fill values), in row-major or, with
 * col_major, column-major order (dimension 0 varies fastest). */
struct tdb_dense_pick {
    uint64_t start[TDB_MAX_DIMS];
    int64_t step[TDB_MAX_DIMS];
    uint64_t count[TDB_MAX_DIMS];
    bool col_major;
};
/* The picked cells as a view of their own over the fragments of view c
 * (a row-major view of step 1 everywhere is again a dense view for
 * tdb_cells_dense_shape; other picks are not).  @return 0, TDB_E_INVAL
 * (c is no dense view, or an offset would fall below the view or past
 * 2^64), TDB_E_UNSUPPORTED (2^64 cells or more) or TDB_E_NOMEM. */
int tdb_cells_dense_pick(struct tdb_cells **out, const struct tdb_cells *c,
                         const struct tdb_dense_pick *p,
                         struct tdb_error *err);

/* Readies view c for runs, once, whichever threads ask at once: a sparse
 * view's merge runs here (other views are ready when made).  @return 0 or
 * the merge's error (asked again, it runs again). */
int tdb_cells_prepare(struct tdb_cells *c, struct tdb_error *err);
void tdb_cells_free(struct tdb_cells *c);

/* What a field file shows. */
enum tdb_field_part { TDB_FILE_VALUES, TDB_FILE_OFFSETS, TDB_FILE_VALIDITY };

struct tdb_fieldfile {
    struct tdb_cells *cells;    /* not owned */
    struct tdb_array *arr;
    const struct tdb_schema *schema;    /* idx refers to this schema */
    bool is_dim;
    uint32_t idx;               /* attribute or dimension index */
    enum tdb_field_part part;
    unsigned type;
    uint32_t cell_val_num;
    bool var, nullable;
    uint64_t cell_size;         /* fixed fields */
    const uint8_t *fill;
    uint64_t fill_size;
    uint8_t fill_validity;
    /* var-sized: total bytes and checkpoints (byte offset of every
     * TDB_CKPT-th cell), computed once */
    pthread_mutex_t lock;
    atomic_bool sized;          /* var_total and ckpt are final (release) */
    uint64_t var_total;
    uint64_t *ckpt;
    uint64_t nckpt;
};

#define TDB_CKPT 4096

/* A field of a schema: dimension (is_dim) or attribute idx. */
struct tdb_field_ref {
    const struct tdb_schema *schema;
    bool is_dim;
    uint32_t idx;
};

/* Makes ff file `part` of field fd (fd->schema: the one idx refers to,
 * kept) over view `cells` (not owned) of array a; free it with
 * tdb_fieldfile_destroy.  It cannot fail. */
void tdb_fieldfile_init(struct tdb_fieldfile *ff, struct tdb_cells *cells,
                        struct tdb_array *a, const struct tdb_field_ref *fd,
                        enum tdb_field_part part);
void tdb_fieldfile_destroy(struct tdb_fieldfile *ff);

/* Exact size in bytes; var-sized values need one pass over the offsets. */
int tdb_fieldfile_size(struct tdb_fieldfile *ff, uint64_t *size,
                       struct tdb_error *err);

int tdb_fieldfile_read(struct tdb_fieldfile *ff, uint64_t off, void *buf,
                       size_t len, size_t *got, struct tdb_error *err);

/* How a read takes the tiles it copies from:
 * TDB_TAKE_LOAD    loads the missing ones whatever the cache's budget;
 *                  beyond it the read holds only the tile it copies from
 *                  (tdb_fieldfile_read);
 * TDB_TAKE_WAIT    loads them within the budget, waiting for room when
 *                  there is none (the caller holds no pin of the cache);
 * TDB_TAKE_CACHED  only takes the tiles the cache holds now (fixed-size
 *                  files): the bytes of the others are left as they are
 *                  in buf, and `missed` hears of their tiles (at least
 *                  once each). */
enum tdb_tile_take { TDB_TAKE_LOAD, TDB_TAKE_WAIT, TDB_TAKE_CACHED };

typedef void (*tdb_tile_miss_fn)(void *arg, struct tdb_frag *f, int field,
                                 unsigned part, uint64_t t);

/* A read of bytes [off, off + len) of a field file into buf. */
struct tdb_fieldread {
    uint64_t off;
    void *buf;
    size_t len;
    size_t got;                 /* set: the bytes the file has there */
    enum tdb_tile_take take;
    tdb_tile_miss_fn missed;    /* TDB_TAKE_CACHED (may be NULL) */
    void *arg;
};

/* tdb_fieldfile_read taking tiles as rq->take says.  @return 0 or an
 * error (TDB_E_INVAL: TDB_TAKE_CACHED of a var-sized file). */
int tdb_fieldfile_read_how(struct tdb_fieldfile *ff, struct tdb_fieldread *rq,
                           struct tdb_error *err);

/* Where tdb_fieldfile_segs puts a read's bytes: pieces of decoded tiles,
 * each tile pinned once more in held[] (give them back with
 * tdb_cache_release).  `full`: the read did not fit (more than cap pieces
 * or hcap tiles, fill values, or with `cached` a tile the cache does not
 * hold now: read it with tdb_fieldfile_read). */
struct tdb_segsink {
    struct tdb_piece *pieces;
    size_t cap, n;
    struct tdb_cache_entry **held;
    size_t hcap, nheld;
    bool full;
    bool cached;                /* take only the tiles the cache holds */
};

/* tdb_fieldfile_read of a fixed-size file (values or validity) without
 * copying: the bytes [off, off + len) as pieces into s (*got bytes). */
int tdb_fieldfile_segs(struct tdb_fieldfile *ff, uint64_t off, size_t len,
                       struct tdb_segsink *s, size_t *got,
                       struct tdb_error *err);

/* Where the bytes [off, off + *len) of a fixed-size values file lie in
 * the tiles, in reading order, without decoding any: fn hears of each
 * piece, bytes [from, from + n) of tile t of fragment field `field`
 * (part), and returns 0 to go on or non-zero to stop (a negative error is
 * returned).  @return 0 when fn heard of every byte (*len: the bytes,
 * fewer only at the file's end), 1 when it did not (fn stopped it, cells
 * no fragment wrote, a var-sized or validity file), or an error (*len
 * is 0 unless 0 is returned). */
typedef int (*tdb_tile_place_fn)(void *arg, struct tdb_frag *f, int field,
                                 unsigned part, uint64_t t, uint64_t from,
                                 uint64_t n);
int tdb_fieldfile_places(struct tdb_fieldfile *ff, uint64_t off,
                         size_t *len, tdb_tile_place_fn fn, void *arg,
                         struct tdb_error *err);

/* SEEK_DATA (data true) / SEEK_HOLE: the first offset at or after `off`
 * in written cells / in cells no fragment wrote (fill values).  Only fixed
 * -size files of dense views have holes; the end of a file is a hole.
 * @return 0, or TDB_E_NOENT when there is no data at or after off. */
int tdb_fieldfile_seek(struct tdb_fieldfile *ff, uint64_t off, bool data,
                       uint64_t *out, struct tdb_error *err);

/* Calls fn for the tiles that reading bytes [off, off + len) of a
 * fixed-size file (values or validity) uses, in reading order, without
 * decoding any.  A tile gives many pieces of the file (one per row of the
 * view it crosses, one per run of a sparse merge): fn hears of it at its
 * first piece, the file's bytes [from, to), and then again, not for each
 * piece, with the end `to` of its later pieces (from: the end told
 * before), at the latest when the walk ends; a tile left and met again
 * is told again.  fn returns 0 to go on, 1 to stop, or a negative error
 * (after a stop fn still hears the ends of the pieces before); fn and
 * its arg come in p, which gets the pieces planned.  @return 0, the error, or
 * TDB_E_UNSUPPORTED for var-sized values and offsets (their byte
 * positions need the offsets). */
typedef int (*tdb_tile_plan_fn)(void *arg, struct tdb_frag *f, int field,
                                unsigned part, uint64_t t, uint64_t from,
                                uint64_t to);
struct tdb_tile_plan {
    tdb_tile_plan_fn fn;
    void *arg;
    uint64_t pieces;            /* set: the pieces of tiles planned */
};
int tdb_fieldfile_tiles(struct tdb_fieldfile *ff, uint64_t off, uint64_t len,
                        struct tdb_tile_plan *p, struct tdb_error *err);

#endif
