/* sparse_view.c: sparse cells merged in global order (docs/LAYOUT.md "Sparse
 * arrays: the cells"; FORMAT-NOTES "Order and duplicates"): duplicates
 * resolved newest first, cells outside the open range, deleted by a
 * delete commit or (format_spec/fragment.md dt.tdb) marked deleted by a
 * consolidation dropped.  The merge runs once and is kept as runs. */
#include "read/view.h"
#include "core/pool.h"

#include <stdlib.h>
#include <unistd.h>

/* The plan: the merged order as a byte stream of entries, one per run of
 * consecutive cells of one fragment.  An entry is a varint
 *     (count - 1) << (fbits + 1) | slot << 1 | has_skip
 * (slot: the fragment's index in frags[], fbits bits), then, when has_skip,
 * a varint of the cells of that fragment passed over (dropped) since its
 * previous entry, zigzag-signed (a fragment not stored in order goes
 * back): each fragment's next cell is implicit.  A run of 1 or 2
 * cells from one of up to 32 fragments with no skip takes 1 byte.  Every
 * SP_CKPT(n) entries a checkpoint records the view cell where the entry
 * starts, its byte offset and each fragment's next cell ((2 + n) * 8
 * bytes), so a read at any cell decodes at most SP_CKPT(n) entries; a few
 * resume points (hints) let sequential reads go on where the last stopped.
 * Memory: the entries (1 to ~20 bytes each, 1 byte typical for 1-cell
 * runs) + (16 + 8 n) / SP_CKPT(n) bytes per entry (0.17 for 20 fragments),
 * never more than one entry per kept cell. */
#define SP_CKPT(n) ((n) * 16 > 1024 ? (n) * 16 : 1024)
#define SP_HINTS 4

struct sp_hint {
    bool valid;
    uint64_t cell;              /* the view cell where entry at `byte` starts */
    size_t byte;
    uint64_t *pos;              /* next cell of each fragment */
};

/* A plan being built (or built): the entries, the checkpoints, and while
 * building each fragment's next cell and the run not yet written. */
struct sp_plan {
    size_t nfrags;
    unsigned fbits;
    uint64_t maxcount;          /* the most cells one entry holds */
    uint64_t ckpt;              /* entries per checkpoint */
    uint8_t *bytes;
    size_t nbytes, capbytes;
    uint64_t ckleft;            /* entries until the next checkpoint */
    uint64_t *ck;               /* (2 + nfrags) words per checkpoint */
    size_t nck, capck;
    uint64_t *pos;              /* building: next cell of each fragment */
    uint64_t planned;           /* cells in the entries so far */
    bool ropen;                 /* building: the run not yet written */
    size_t rslot;
    uint64_t rcell, rcount;
    uint64_t merged;            /* cells the merge kept so far */
    /* a key range after the first (sp_fast_merge): each fragment's first
     * entry has its skip in SP_PATCH bytes at patch_byte[slot] (SIZE_MAX:
     * no entry), for when the ranges are joined; checkpoints before
     * patch_ck[slot] hold the fragment's starting cell */
    bool patchable;
    size_t *patch_byte, *patch_ck;
    uint64_t *patch_cell;       /* that entry's first cell */
    /* the plan built (sp_plan_seal, sp_join): the entries in segments
     * read as one stream; checkpoints count bytes in that stream */
    struct sp_seg {
        uint8_t *bytes;
        size_t n;
        uint64_t base;          /* the stream's bytes before it */
    } *seg;
    size_t nseg;
};

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
    struct sp_plan plan;
    /* resume points of reads, under hint_lock */
    pthread_mutex_t hint_lock;
    struct sp_hint hint[SP_HINTS];
    unsigned hint_next;
};

/* Whether the merge keeps every cell of equal coordinates. */
static bool sp_keeps_dups(const struct sparse_cells *sc)
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
static void sp_release(struct tdb_cache *cache, struct tdb_cache_entry **e,
                       uint32_t n, bool *pinned)
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

/* (k may be one a failed start never reached: f NULL, nothing pinned) */
static void sp_unpin(struct sp_cur *k)
{
    if (k->pinned)
        sp_release(k->cache, k->e, k->f->fs->ndims + 2, &k->pinned);
}

/* Pins tile t of fragment f's coordinates: dimension d's in e[d], tl[d]. */
static int sp_pin_coords(struct tdb_frag *f, uint64_t t,
                         struct tdb_cache_entry **e, const struct tdb_tile **tl,
                         struct tdb_error *err)
{
    const struct tdb_schema *s = f->fs;
    for (uint32_t d = 0; d < s->ndims; d++) {
        int r = f->legacy_coords
                    ? tdb_frag_tile(f, f->dim_field[0] >= 0 ? f->dim_field[0]
                                                             : (int)s->nattrs,
                                    TDB_PART_LEGACY_DIM + d, t, &e[d], &tl[d],
                                    err)
                    : tdb_frag_tile(f, f->dim_field[d], TDB_PART_VALUES, t,
                                    &e[d], &tl[d], err);
        if (r)
            return r;
    }
    return 0;
}

/* Cell i of a tile of u64 values (timestamps, delete timestamps). */
static int sp_cell_u64(const struct tdb_tile *tl, uint64_t i, uint64_t *v,
                       const char *what, const struct tdb_frag *f,
                       struct tdb_error *err)
{
    if ((i + 1) * 8 > tl->size)
        return tdb_err(err, TDB_E_CORRUPT, "%s: %s tile too short",
                       f->fm->path, what);
    *v = tdb_le64(tl->data + i * 8);
    return 0;
}

/* Points the cursor's coordinates at cell k->cell, pinning its tiles. */
static int sp_load(struct sp_cur *k, struct tdb_error *err)
{
    struct tdb_frag *f = k->f;
    const struct tdb_schema *s = f->fs;
    uint64_t first = k->first;
    uint64_t t = k->tile;
    if (!k->pinned || k->cell < first || k->cell - first >= k->tspan)
        t = tdb_frag_tile_of(f, k->cell, &first);
    if (!k->pinned || t != k->tile) {
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
            (r = tdb_frag_tile(f, k->ts_field, TDB_PART_VALUES, t,
                               &k->e[SP_TS(s)], &k->t[SP_TS(s)], err)))
            return r;
        if (k->dts_field >= 0 &&
            (r = tdb_frag_tile(f, k->dts_field, TDB_PART_VALUES, t,
                               &k->e[SP_DTS(s)], &k->t[SP_DTS(s)], err)))
            return r;
    }
    uint64_t i = k->cell - k->first;
    if (i >= k->tcells)
        return tdb_err(err, TDB_E_CORRUPT, "%s: cell %llu beyond tile %llu",
                       f->fm->path, (unsigned long long)k->cell,
                       (unsigned long long)t);
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
    int r = 0;
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

/* ----------------------------------------------------- delete conditions */

struct sp_cellview {
    struct sp_cur *k;
    struct tdb_cache_entry *held[8];
    int nheld;
    struct tdb_error *err;
};

static int sp_cell_get(void *arg, const char *name, const uint8_t **val,
                       uint64_t *size, unsigned *type, bool *is_null)
{
    struct sp_cellview *cv = arg;
    struct sp_cur *k = cv->k;
    const struct tdb_schema *s = k->f->fs;
    *is_null = false;
    int d = tdb_schema_dim_index(s, name);
    if (d >= 0) {
        *val = k->h.c.v[d];
        *size = k->h.c.n[d];
        *type = s->dims[d].type;
        return 0;
    }
    int a = tdb_schema_attr_index(s, name);
    if (a < 0)
        return tdb_schema_attr_index(k->f->arr->schema, name) >= 0 ? 1
                                                                   : TDB_E_NOENT;
    if (cv->nheld + 2 > 8)
        return TDB_E_NOMEM;
    const struct tdb_attr *at = &s->attrs[a];
    uint64_t i = k->cell - k->first;
    const struct tdb_tile *tl;
    int r = tdb_frag_tile(k->f, a, TDB_PART_VALUES, k->tile,
                          &cv->held[cv->nheld], &tl, cv->err);
    if (r)
        return r;
    cv->nheld++;
    *type = at->type;
    if (tl->offsets) {
        uint64_t b = i + 1 < tl->ncells ? tl->offsets[i + 1] : tl->size;
        *val = tl->data + tl->offsets[i];
        *size = b - tl->offsets[i];
    } else {
        uint64_t cs = (uint64_t)tdb_dt_size(at->type) * at->cell_val_num;
        *val = tl->data + i * cs;
        *size = cs;
    }
    if (at->nullable) {
        const struct tdb_tile *vt;
        r = tdb_frag_tile(k->f, a, TDB_PART_VALIDITY, k->tile,
                          &cv->held[cv->nheld], &vt, cv->err);
        if (r)
            return r;
        cv->nheld++;
        *is_null = vt->data[i] == 0;
    }
    return 0;
}

static bool sp_cell_is_var(void *arg, const char *name)
{
    struct sp_cellview *cv = arg;
    const struct tdb_schema *s = cv->k->f->fs;
    int d = tdb_schema_dim_index(s, name);
    if (d >= 0)
        return s->dims[d].cell_val_num == TDB_VAR_NUM;
    int a = tdb_schema_attr_index(s, name);
    return a < 0 || s->attrs[a].cell_val_num == TDB_VAR_NUM;
}

/* The condition is done with the values it read: unpin their tiles. */
static void sp_cell_release(void *arg)
{
    struct sp_cellview *cv = arg;
    for (int h = 0; h < cv->nheld; h++)
        tdb_cache_release(cv->k->cache, cv->held[h]);
    cv->nheld = 0;
}

static bool sp_processed(const struct tdb_fragmeta *fm, const char *name)
{
    for (uint64_t i = 0; i < fm->nprocessed; i++) {
        const char *p = fm->processed[i];
        const char *slash = strrchr(p, '/');
        const char *base = slash ? slash + 1 : p;
        size_t n = strlen(name);
        if (!strncmp(base, name, n) && (!base[n] || base[n] == '.'))
            return true;
    }
    return false;
}

/* Whether the cell under cursor k meets delete condition i of a: 1 or 0,
 * or an error naming the condition. */
static int sp_cond_meets(const struct tdb_array *a, size_t i,
                         struct sp_cur *k, struct tdb_error *err)
{
    struct sp_cellview cv = {.k = k, .err = err};
    struct tdb_cell_view view = {.get = sp_cell_get, .arg = &cv,
                                 .is_var = sp_cell_is_var,
                                 .release = sp_cell_release};
    int m = tdb_cond_eval(a->conds[i], &view, err);
    sp_cell_release(&cv);
    return m < 0 ? tdb_err_ctx(err, m, "delete condition %s",
                               a->cond_ents[i].name)
                 : m;
}

/* Is the cell under cursor k removed by a delete?  A consolidation that
 * processed deletes recorded when one removed the cell (its delete
 * timestamp): the cell is gone from a view whose open range ends at or
 * after it, and shows in one that ends before (reader_base.cc's delete
 * timestamps condition).  A delete commit applies to the cells no newer
 * than it, inside the open range, unless the fragment lists it as
 * processed.  A fragment without per-cell timestamps takes every commit
 * from its first timestamp on (TileDB cannot tell its cells' times
 * apart: sparse_index_reader_base.cc applies the plain condition to it). */
static int sp_deleted(struct sparse_cells *sc, struct sp_cur *k,
                      struct tdb_error *err)
{
    if (k->dts != UINT64_MAX && k->dts <= sc->t1)
        return 1;
    struct tdb_array *a = sc->base.arr;
    uint64_t ts = k->ts_field >= 0 ? k->ts : k->f->fm->t1;
    for (size_t i = 0; i < a->nconds; i++) {
        const struct tdb_dir_entry *de = &a->cond_ents[i];
        uint64_t td = de->ts.t1;
        if (td < sc->t0 || td > sc->t1 || ts > td)
            continue;
        if (sp_processed(k->f->fm, de->name))
            continue;
        int m = sp_cond_meets(a, i, k, err);
        if (m)
            return m;
    }
    return 0;
}

/* Which delete removed the cell under cursor k (versions: a
 * consolidation keeps it, with when and which): the first delete commit
 * the fragment did not process, no older than the fragment's first
 * timestamp (and than the cell, where it has its own) whose condition
 * the cell meets, unless the fragment's own delete timestamp is earlier
 * (sparse_index_reader_base.cc, sparse_global_order_reader.cc).  Kept in
 * sc->dels when one did, as view cell sc->emitted. */
static int sp_note_delete(struct sparse_cells *sc, struct sp_cur *k,
                          struct tdb_error *err)
{
    struct tdb_array *a = sc->base.arr;
    const struct tdb_fragmeta *fm = k->f->fm;
    uint64_t cts = UINT64_MAX, ci = UINT64_MAX;
    for (size_t i = 0; i < a->nconds && cts == UINT64_MAX; i++) {
        const struct tdb_dir_entry *de = &a->cond_ents[i];
        uint64_t td = de->ts.t1;
        if (td < fm->t1 || sp_processed(fm, de->name) ||
            (fm->has_timestamps && td <= fm->t2 && k->ts > td))
            continue;
        int m = sp_cond_meets(a, i, k, err);
        if (m < 0)
            return m;
        if (m) {
            cts = td;
            ci = i;
        }
    }
    if (k->dts_field >= 0 && cts >= k->dts) {
        /* the fragment's own: which delete, by its name among the array's */
        cts = k->dts;
        ci = UINT64_MAX;
        uint64_t dci = UINT64_MAX;
        const struct tdb_tile *t = NULL;
        struct tdb_cache_entry *e = NULL;
        int r = 0;
        if (cts != UINT64_MAX)
            r = tdb_frag_tile(k->f, k->dts_field + 1, TDB_PART_VALUES,
                              k->tile, &e, &t, err);
        if (!r && t)
            r = sp_cell_u64(t, k->cell - k->first, &dci,
                            "delete condition index", k->f, err);
        if (e)
            tdb_cache_release(k->cache, e);
        if (r)
            return r;
        if (dci < fm->nprocessed) {
            const char *p = fm->processed[dci];
            const char *slash = strrchr(p, '/');
            const char *base = slash ? slash + 1 : p;
            for (size_t i = 0; i < a->nconds && ci == UINT64_MAX; i++) {
                size_t n = strlen(a->cond_ents[i].name);
                if (!strncmp(base, a->cond_ents[i].name, n) &&
                    (!base[n] || base[n] == '.'))
                    ci = i;
            }
        }
    }
    if (cts == UINT64_MAX)
        return 0;
    if (sc->ndels == sc->capdels) {
        size_t c = sc->capdels ? 2 * sc->capdels : 64;
        struct tdb_cell_delete *nd = realloc(sc->dels, c * sizeof *nd);
        if (!nd)
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        sc->dels = nd;
        sc->capdels = c;
    }
    sc->dels[sc->ndels++] = (struct tdb_cell_delete){sc->emitted, cts, ci};
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
            r = sp_deleted(sc, k, err);
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

/* --------------------------------------------------------------- the plan */

static int sp_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return TDB_E_NOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static void sp_put_varint(uint8_t *b, size_t *n, uint64_t v)
{
    while (v >= 0x80) {
        b[(*n)++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[(*n)++] = (uint8_t)v;
}

/* Reads a varint of the plan (written by sp_put_varint: never corrupt). */
static uint64_t sp_get_varint(const uint8_t *b, size_t *n)
{
    uint64_t v = 0;
    unsigned sh = 0;
    uint8_t c;
    do {
        c = b[(*n)++];
        v |= (uint64_t)(c & 0x7f) << sh;
        sh += 7;
    } while (c & 0x80);
    return v;
}

/* Sets up an empty plan for n fragments. */
static int sp_plan_init(struct sp_plan *pl, size_t n, bool patchable)
{
    memset(pl, 0, sizeof *pl);
    pl->nfrags = n;
    while (((size_t)1 << pl->fbits) < n)
        pl->fbits++;
    pl->maxcount = (uint64_t)1 << (62 - pl->fbits);
    pl->ckpt = SP_CKPT(n);
    size_t nn = n ? n : 1;
    pl->pos = calloc(nn, sizeof *pl->pos);
    if (!pl->pos)
        return TDB_E_NOMEM;
    if (patchable) {
        pl->patchable = true;
        pl->patch_byte = malloc(nn * sizeof *pl->patch_byte);
        pl->patch_ck = calloc(nn, sizeof *pl->patch_ck);
        pl->patch_cell = calloc(nn, sizeof *pl->patch_cell);
        if (!pl->patch_byte || !pl->patch_ck || !pl->patch_cell)
            return TDB_E_NOMEM;
        for (size_t i = 0; i < n; i++)
            pl->patch_byte[i] = SIZE_MAX;
    }
    return 0;
}

static void sp_plan_free(struct sp_plan *pl)
{
    for (size_t i = 0; i < pl->nseg; i++)
        free(pl->seg[i].bytes);
    free(pl->seg);
    pl->seg = NULL;
    pl->nseg = 0;
    free(pl->bytes);
    free(pl->ck);
    free(pl->pos);
    free(pl->patch_byte);
    free(pl->patch_ck);
    free(pl->patch_cell);
    pl->bytes = NULL;
    pl->ck = NULL;
    pl->pos = NULL;
    pl->patch_byte = pl->patch_ck = NULL;
    pl->patch_cell = NULL;
    pl->nbytes = pl->capbytes = pl->nck = pl->capck = 0;
    pl->planned = pl->ckleft = pl->merged = 0;
    pl->ropen = false;
}

/* The bytes a patchable skip takes: a varint padded with 0x80 bytes, room
 * for any 64-bit value. */
#define SP_PATCH 10

static void sp_put_padded(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < SP_PATCH - 1; i++) {
        b[i] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[SP_PATCH - 1] = (uint8_t)v;
}

static uint64_t sp_zigzag(uint64_t d)   /* d: a two's complement difference */
{
    return d << 1 ^ (uint64_t)-(int64_t)(d >> 63);
}

/* Appends cells fcell..fcell+count-1 of fragment `slot` as entries. */
static int sp_plan_put(struct sp_plan *pl, size_t slot, uint64_t fcell,
                       uint64_t count)
{
    size_t n = pl->nfrags;
    while (count) {
        uint64_t c = count < pl->maxcount ? count : pl->maxcount;
        if (!pl->ckleft) {         /* every ckpt-th entry */
            pl->ckleft = pl->ckpt;
            if (sp_grow((void **)&pl->ck, &pl->capck, (pl->nck + 1) * (2 + n),
                        sizeof *pl->ck))
                return TDB_E_NOMEM;
            uint64_t *k = pl->ck + pl->nck * (2 + n);
            k[0] = pl->planned;
            k[1] = pl->nbytes;
            memcpy(k + 2, pl->pos, n * sizeof *pl->pos);
            pl->nck++;
        }
        if (sp_grow((void **)&pl->bytes, &pl->capbytes,
                    pl->nbytes + 10 + SP_PATCH, 1))
            return TDB_E_NOMEM;
        uint64_t skip = sp_zigzag(fcell - pl->pos[slot]);
        bool patch = pl->patchable && pl->patch_byte[slot] == SIZE_MAX;
        uint64_t h = (c - 1) << (pl->fbits + 1) | (uint64_t)slot << 1 |
                     (skip != 0 || patch);
        sp_put_varint(pl->bytes, &pl->nbytes, h);
        if (patch) {
            pl->patch_byte[slot] = pl->nbytes;
            pl->patch_ck[slot] = pl->nck;
            pl->patch_cell[slot] = fcell;
            sp_put_padded(pl->bytes + pl->nbytes, skip);
            pl->nbytes += SP_PATCH;
        } else if (skip) {
            sp_put_varint(pl->bytes, &pl->nbytes, skip);
        }
        pl->pos[slot] = fcell + c;
        pl->planned += c;
        pl->ckleft--;
        fcell += c;
        count -= c;
    }
    return 0;
}

/* Cell `cell` of fragment `slot` is the next of the view. */
static inline int sp_emit(struct sp_plan *pl, size_t slot, uint64_t cell)
{
    pl->merged++;
    if (pl->ropen && pl->rslot == slot && pl->rcell + pl->rcount == cell) {
        pl->rcount++;
        return 0;
    }
    if (pl->ropen) {
        /* the common entry, inline: one byte, no skip, no checkpoint */
        size_t rs = pl->rslot;
        uint64_t h = (pl->rcount - 1) << (pl->fbits + 1) | (uint64_t)rs << 1;
        if (h < 0x80 && pl->ckleft && pl->nbytes < pl->capbytes &&
            pl->rcell == pl->pos[rs] &&
            (!pl->patchable || pl->patch_byte[rs] != SIZE_MAX)) {
            pl->bytes[pl->nbytes++] = (uint8_t)h;
            pl->pos[rs] += pl->rcount;
            pl->planned += pl->rcount;
            pl->ckleft--;
        } else {
            int r = sp_plan_put(pl, rs, pl->rcell, pl->rcount);
            if (r)
                return r;
        }
    }
    pl->ropen = true;
    pl->rslot = slot;
    pl->rcell = cell;
    pl->rcount = 1;
    return 0;
}

/* The last cell emitted (of fragment `slot`) gives way to `cell`, a later
 * version of the same coordinates in the same fragment. */
static int sp_emit_replace(struct sp_plan *pl, size_t slot, uint64_t cell)
{
    if (pl->rcount == 1) {
        pl->rcell = cell;
        return 0;
    }
    pl->rcount--;
    pl->merged--;
    return sp_emit(pl, slot, cell);
}

static int sp_plan_end(struct sp_plan *pl)
{
    if (pl->ropen) {
        int r = sp_plan_put(pl, pl->rslot, pl->rcell, pl->rcount);
        if (r)
            return r;
        pl->ropen = false;
    }
    /* give back what the doubling left over */
    if (pl->nbytes && pl->nbytes < pl->capbytes) {
        uint8_t *b = realloc(pl->bytes, pl->nbytes);
        if (b) {
            pl->bytes = b;
            pl->capbytes = pl->nbytes;
        }
    }
    size_t w = pl->nck * (2 + pl->nfrags);
    if (w && w < pl->capck) {
        uint64_t *k = realloc(pl->ck, w * sizeof *k);
        if (k) {
            pl->ck = k;
            pl->capck = w;
        }
    }
    return 0;
}

/* The plan built: its bytes become its one segment. */
static int sp_plan_seal(struct sp_plan *pl)
{
    if (!pl->nbytes)
        return 0;
    pl->seg = malloc(sizeof *pl->seg);
    if (!pl->seg)
        return TDB_E_NOMEM;
    pl->seg[0] = (struct sp_seg){pl->bytes, pl->nbytes, 0};
    pl->nseg = 1;
    pl->bytes = NULL;
    pl->capbytes = 0;
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
            int d = sp_deleted(sc, k, err);
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
    struct sp_plan *pl;
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
    r = sp_emit(ms->pl, w.slot, w.cell);
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
        if (ms->sc->versions && (r = sp_note_delete(ms->sc, m, ms->err)))
            return r;
        r = sp_emit(ms->pl, m->slot, m->cell);
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
static int sp_slow_merge(struct sparse_cells *sc, struct sp_plan *pl,
                         struct tdb_error *err)
{
    const struct tdb_schema *s = sc->base.arr->schema;
    size_t n = sc->nfrags;
    struct sp_cur *cur = calloc(n ? n : 1, sizeof *cur);
    struct sp_cur **heap = calloc(n ? n : 1, sizeof *heap);
    struct sp_slow ms = {.sc = sc, .pl = pl, .hp = {heap, 0, s},
                         .eq = calloc(n ? n : 1, sizeof *ms.eq), .err = err};
    int r = 0;
    if (!cur || !heap || !ms.eq || sp_plan_init(pl, n, false)) {
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
    if (!r && ((r = sp_plan_end(pl)) || (r = sp_plan_seal(pl))))
        r = tdb_err(err, r, "out of memory");
out:
    for (size_t i = 0; cur && i < n; i++)
        sp_unpin(&cur[i]);
    free(cur);
    free(heap);
    free(ms.eq);
    free(ms.keybuf);
    if (r)
        sp_plan_free(pl);
    return r;
}

/* ------------------------------------------------------- the fast merge */

/* Where every cell has an exact integer key (fixed-size integer
 * coordinates inside the domain; row- or column-major order), no cell
 * carries a timestamp or a delete timestamp and no delete condition
 * applies, the merge compares keys alone: computed a block of cells at a
 * time, in a tournament that keeps each match's loser.  The key space is
 * cut into ranges of about equal cells (estimated from the tiles' MBRs)
 * merged side by side, one thread each, and their plans are joined.  A fragment found not stored in order, or a cell without a key,
 * sends the merge back to sp_slow_merge (return 1). */
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
};

struct sp_range {
    const struct sp_fast *fx;
    bool has_lo, has_hi;
    uint64_t lo, hi;            /* the keys [lo, hi) */
    struct sp_plan plan;
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
        !tn->loser_key || sp_plan_init(&rg->plan, n, rg->has_lo))
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

/* Merges the range's cells into its plan. */
static int sp_range_merge(struct sp_range *rg, struct tdb_error *err)
{
    const struct sp_fast *fx = rg->fx;
    struct sp_plan *pl = &rg->plan;
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
        struct sp_src *x = &src[w];
        uint64_t cell = x->kcell + x->i;
        /* no duplicates: among equal keys the newest fragment comes
         * first and wins, and its last version of them */
        if (dups || !have || (key ^ last) >> rb) {
            r = sp_emit(pl, w, cell);
            last = key;
            lslot = w;
            have = true;
        } else if (w == lslot) {
            r = sp_emit_replace(pl, w, cell);
        }
        if (r) {
            r = tdb_err(err, r, "out of memory");
            goto out;
        }
        if (++x->i < x->n) {
            hk[w] = x->keys[x->i];
        } else {
            r = sp_src_fill(fx, x, err);
            if (r == 1 || r < 0)
                goto out;
            hk[w] = r ? UINT64_MAX : x->keys[0];
            hr[w] = r ? 0 : hr[w];
            r = 0;
        }
        /* w's new head plays the losers up to the root (ranks only
         * decide between equal keys: never when packed) */
        w = rb ? sp_replay_packed(loser, loser_key, (w + K) >> 1, w, hk[w])
               : sp_replay(loser, loser_key, hr, (w + K) >> 1, w, hk[w]);
    }
    for (size_t i = 0; i < n; i++)
        rg->stop[i] = hr[i] ? src[i].kcell + src[i].i : src[i].next;
    if ((r = sp_plan_end(pl)))
        r = tdb_err(err, r, "out of memory");
out:
    sp_tournament_free(&tn);
    return r;
}

/* Merges ranges until none is left. */
static void *sp_range_thread(void *arg)
{
    struct sp_fast *fx = arg;
    for (;;) {
        size_t p = atomic_fetch_add(&fx->next, 1);
        if (p >= fx->nr)
            return NULL;
        struct sp_range *rg = &fx->rg[fx->order[p]];
        rg->r = sp_range_merge(rg, &rg->err);
    }
}

/* Joins the ranges' plans into rg[0]'s: their bytes become its segments
 * (not copied), their checkpoints follow its own; each range's first entry
 * of a fragment goes on from where the ranges before left that fragment. */
static int sp_join(struct sp_range *rg, size_t nr, size_t n)
{
    struct sp_plan *out = &rg[0].plan;
    size_t nck = 0, stride = 2 + n;
    for (size_t p = 0; p < nr; p++)
        nck += rg[p].plan.nck;
    out->seg = calloc(nr, sizeof *out->seg);
    if (!out->seg)
        return TDB_E_NOMEM;
    if (nck * stride > out->capck) {
        uint64_t *k = realloc(out->ck, nck * stride * sizeof *k);
        if (!k)
            return TDB_E_NOMEM;
        out->ck = k;
        out->capck = nck * stride;
    }
    uint64_t *R = out->pos;     /* where a reader stands after the ranges
                                 * so far */
    for (size_t p = 0; p < nr; p++) {
        struct sp_plan *pl = &rg[p].plan;
        if (p) {
            for (size_t f = 0; f < n; f++)
                if (pl->patch_byte[f] != SIZE_MAX)
                    sp_put_padded(pl->bytes + pl->patch_byte[f],
                                  sp_zigzag(pl->patch_cell[f] - R[f]));
            for (size_t j = 0; j < pl->nck; j++) {
                uint64_t *k = out->ck + out->nck * stride;
                memcpy(k, pl->ck + j * stride, stride * sizeof *k);
                k[0] += out->planned;
                k[1] += out->nbytes;
                for (size_t f = 0; f < n; f++)
                    if (pl->patch_byte[f] == SIZE_MAX || j < pl->patch_ck[f])
                        k[2 + f] = R[f];
                out->nck++;
            }
        }
        if (pl->nbytes) {
            out->seg[out->nseg++] = (struct sp_seg){pl->bytes, pl->nbytes,
                                                    p ? out->nbytes : 0};
            pl->bytes = NULL;
            pl->capbytes = 0;
        }
        if (p) {
            out->nbytes += pl->nbytes;
            out->planned += pl->planned;
            out->merged += pl->merged;
            for (size_t f = 0; f < n; f++)
                if (pl->patch_byte[f] != SIZE_MAX)
                    R[f] = pl->pos[f];
        }
    }
    return 0;
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

/* sp_range_thread as a job of the pool. */
struct sp_range_job {
    struct tdb_pool_job j;
    struct sp_fast *fx;
};

static void sp_range_job_run(struct tdb_pool_job *j)
{
    sp_range_thread(((struct sp_range_job *)j)->fx);
}

/* Merges fx->nr ranges on nthreads threads (this one among them). */
static void sp_fast_run(struct sp_fast *fx, size_t nthreads)
{
    size_t nr = fx->nr;
    atomic_init(&fx->next, 0);
    size_t nth = nr < nthreads ? nr : nthreads, started = 0;
    /* the threads start far apart in the order (their first tiles
     * differ: a tile two threads want is decoded by one while the other
     * waits): one block of ranges per thread, taken in turn */
    size_t per = (nr + nth - 1) / nth, no = 0;
    for (size_t i = 0; i < per; i++)
        for (size_t b = 0; b < nth; b++)
            if (b * per + i < nr)
                fx->order[no++] = b * per + i;
    struct tdb_pool *pool = NULL;
    struct sp_range_job jobs[SP_RANGES_MAX];
    if (nth > 1 && !tdb_pool_create(&pool, (unsigned)(nth - 1)))
        for (; started + 1 < nth; started++) {
            jobs[started].j.run = sp_range_job_run;
            jobs[started].fx = fx;
            tdb_pool_submit(pool, &jobs[started].j);
        }
    sp_range_thread(fx);
    tdb_pool_free(pool); /* (once its jobs have run) */
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

static int sp_fast_merge(struct sparse_cells *sc, struct sp_plan *out,
                         struct tdb_error *err)
{
    const struct tdb_schema *s = sc->base.arr->schema;
    size_t n = sc->nfrags;
    if (!sp_fast_applies(sc))
        return 1;
    struct sp_fast fx = {.sc = sc};
    /* blocks of SP_BLOCK cells, smaller where many fragments would take
     * more than SP_BLOCK_BYTES */
    fx.block = SP_BLOCK_BYTES / 8 / n;
    fx.block = fx.block > SP_BLOCK ? SP_BLOCK : fx.block < 16 ? 16 : fx.block;
    for (uint32_t d = 0; d < s->ndims; d++)
        fx.vs[d] = tdb_dt_size(s->dims[d].type);
    uint64_t cut[SP_RANGES_MAX];
    struct sp_range rg[SP_RANGES_MAX];
    memset(rg, 0, sizeof rg);
    size_t nr = 0;
    int r = 0;
    fx.rank = calloc(n, sizeof *fx.rank);
    fx.mbr_lo = calloc(n, sizeof *fx.mbr_lo);
    fx.mbr_hi = calloc(n, sizeof *fx.mbr_hi);
    if (!fx.rank || !fx.mbr_lo || !fx.mbr_hi)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (r || (r = sp_fast_ranks(&fx, err)))
        goto out;
    long cpus = sc->threads ? (long)sc->threads : sysconf(_SC_NPROCESSORS_ONLN);
    size_t nthreads = cpus < 1 ? 1 : cpus > SP_RANGES_MAX ? SP_RANGES_MAX
                                                          : (size_t)cpus;
    nr = sp_plan_ranges(&fx, nthreads, cut);
    for (size_t p = 0; p < nr; p++) {
        rg[p].fx = &fx;
        rg[p].has_lo = p > 0;
        rg[p].lo = p ? cut[p - 1] : 0;
        rg[p].has_hi = p + 1 < nr;
        rg[p].hi = p + 1 < nr ? cut[p] : 0;
        rg[p].begin = calloc(n, sizeof *rg[p].begin);
        rg[p].stop = calloc(n, sizeof *rg[p].stop);
        if (!rg[p].begin || !rg[p].stop) {
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
            goto out;
        }
    }
    fx.rg = rg;
    fx.nr = nr;
    sp_fast_run(&fx, nthreads);
    r = sp_fast_outcome(rg, nr, n, err);
    if (!r && (r = sp_join(rg, nr, n)))
        r = tdb_err(err, r, "out of memory");
out:
    for (size_t p = 0; p < nr; p++) {
        if (p || r)
            sp_plan_free(&rg[p].plan);
        free(rg[p].begin);
        free(rg[p].stop);
    }
    if (!r)
        *out = rg[0].plan;
    for (size_t f = 0; fx.mbr_lo && fx.mbr_hi && f < n; f++) {
        free(fx.mbr_lo[f]);
        free(fx.mbr_hi[f]);
    }
    free(fx.mbr_lo);
    free(fx.mbr_hi);
    free(fx.rank);
    return r;
}

static int sparse_prepare(struct tdb_cells *c, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    /* ncells stays as it is until the merge is whole: a view counted from
     * the metadata is being stat'ed by other threads meanwhile */
    struct sp_plan pl;
    int r = sp_fast_merge(sc, &pl, err);
    if (r == 1)
        r = sp_slow_merge(sc, &pl, err);
    if (r)
        return r;
    sp_plan_free(&sc->plan);
    sc->plan = pl;
    /* a view counted from the metadata keeps its count (others read it
     * meanwhile); else the count is published by tdb_cells_prepare */
    bool counted = atomic_load_explicit(&c->counted, memory_order_relaxed);
    if (counted && pl.merged != c->ncells)
        return tdb_err(err, TDB_E_CORRUPT, "sparse merge kept %llu cells where "
                       "the fragments' metadata counts %llu",
                       (unsigned long long)pl.merged,
                       (unsigned long long)c->ncells);
    if (!counted)
        c->ncells = pl.merged;
    return 0;
}

/* ------------------------------------------------------------- the reads */

void tdb_plan_decode(const struct tdb_plan_pos *pp, size_t *slot,
                     uint64_t *fcell, uint64_t *count, const uint8_t **np)
{
    const uint8_t *b = pp->p;
    size_t nb = 0;
    uint64_t h = b[0] < 0x80 ? b[nb++] : sp_get_varint(b, &nb);
    size_t s = (size_t)(h >> 1 & pp->smask);
    uint64_t fc = pp->next[s];
    if (h & 1) {
        uint64_t z = sp_get_varint(b, &nb);
        fc += z >> 1 ^ (uint64_t)-(int64_t)(z & 1);
    }
    *slot = s;
    *fcell = fc;
    *count = (h >> pp->shift) + 1;
    *np = b + nb;
}

/* The first checkpoint of the plan after view cell `cell` (nck: none). */
static size_t sp_ck_after(const struct sp_plan *pl, uint64_t cell)
{
    size_t stride = 2 + pl->nfrags, lo = 0, hi = pl->nck;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pl->ck[mid * stride] <= cell)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* pp at byte `byte` of the plan's stream: in the last segment starting
 * at or before it (so a segment's end is the next one's start). */
static void sp_seek_byte(const struct sp_plan *pl, struct tdb_plan_pos *pp,
                         uint64_t byte)
{
    size_t s0 = 0, s1 = pl->nseg;
    while (s1 - s0 > 1) {
        size_t mid = (s0 + s1) / 2;
        if (pl->seg[mid].base <= byte)
            s0 = mid;
        else
            s1 = mid;
    }
    const struct sp_seg *sg = &pl->seg[s0];
    pp->seg = s0;
    pp->p = sg->bytes + (byte - sg->base);
    pp->end = sg->bytes + sg->n;
}

static uint64_t sp_pos_byte(const struct sp_plan *pl,
                            const struct tdb_plan_pos *pp)
{
    const struct sp_seg *sg = &pl->seg[pp->seg];
    return sg->base + (uint64_t)(pp->p - sg->bytes);
}

static size_t sparse_plan_ckpt(struct tdb_cells *c,
                               const struct tdb_plan_pos *pp, uint64_t limit,
                               uint64_t *cell, const uint64_t **next,
                               uint64_t *entries)
{
    const struct sp_plan *pl = &((struct sparse_cells *)c)->plan;
    size_t stride = 2 + pl->nfrags;
    if (!pl->nseg)
        return 0;
    size_t lo = sp_ck_after(pl, pp->cell);
    if (lo == pl->nck || pl->ck[lo * stride] > limit)
        return 0;
    const uint64_t *k = pl->ck + lo * stride;
    *cell = k[0];
    *next = k + 2;
    *entries = k[1] - sp_pos_byte(pl, pp);  /* an entry takes a byte or more */
    return lo + 1;
}

static void sparse_plan_goto(struct tdb_cells *c, struct tdb_plan_pos *pp,
                             size_t ck)
{
    const struct sp_plan *pl = &((struct sparse_cells *)c)->plan;
    const uint64_t *k = pl->ck + (ck - 1) * (2 + pl->nfrags);
    pp->cell = k[0];
    memcpy(pp->next, k + 2, pl->nfrags * sizeof *pp->next);
    sp_seek_byte(pl, pp, k[1]);
}

static bool sparse_plan_more(struct tdb_cells *c, struct tdb_plan_pos *pp)
{
    const struct sp_plan *pl = &((struct sparse_cells *)c)->plan;
    if (pp->seg + 1 >= pl->nseg)
        return false;
    const struct sp_seg *sg = &pl->seg[++pp->seg];
    pp->p = sg->bytes;
    pp->end = sg->bytes + sg->n;
    return true;
}

static int sparse_plan_seek(struct tdb_cells *c, uint64_t first,
                            struct tdb_plan_pos *pp, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    size_t nf = sc->nfrags, stride = 2 + nf;
    pp->frags = sc->frags;
    pp->nfrags = nf;
    pp->shift = sc->plan.fbits + 1;
    pp->smask = ((uint64_t)1 << sc->plan.fbits) - 1;
    pp->hint = -1;
    pp->cell = 0;
    pp->seg = 0;
    pp->p = pp->end = NULL;
    pp->next = nf <= TDB_PLAN_BUF ? pp->buf : malloc(nf * sizeof *pp->next);
    if (!pp->next)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!sc->plan.nck)
        return 0;
    /* the last checkpoint at or before `first` (the first is at cell 0) */
    size_t lo = sp_ck_after(&sc->plan, first);
    const uint64_t *k = sc->plan.ck + (lo ? lo - 1 : 0) * stride;
    uint64_t cell = k[0];
    size_t byte = (size_t)k[1];
    /* or a resume point between it and `first` */
    int hs = -1;
    pthread_mutex_lock(&sc->hint_lock);
    for (int i = 0; i < SP_HINTS; i++) {
        struct sp_hint *h = &sc->hint[i];
        if (h->valid && h->cell <= first && h->byte >= byte &&
            (hs < 0 || h->byte > sc->hint[hs].byte))
            hs = i;
    }
    if (hs >= 0) {
        cell = sc->hint[hs].cell;
        byte = sc->hint[hs].byte;
        memcpy(pp->next, sc->hint[hs].pos, nf * sizeof *pp->next);
    } else {
        memcpy(pp->next, k + 2, nf * sizeof *pp->next);
    }
    pthread_mutex_unlock(&sc->hint_lock);
    pp->hint = hs;
    pp->cell = cell;
    sp_seek_byte(&sc->plan, pp, byte);
    /* on to the entry holding `first` */
    while (pp->p < pp->end || sparse_plan_more(c, pp)) {
        size_t slot;
        uint64_t fcell, count;
        const uint8_t *np;
        tdb_plan_decode(pp, &slot, &fcell, &count, &np);
        if (pp->cell + count > first)
            break;
        pp->next[slot] = fcell + count;
        pp->cell += count;
        pp->p = np;
    }
    return 0;
}

static void sparse_plan_done(struct tdb_cells *c, struct tdb_plan_pos *pp)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    if (sc->plan.nck) {
        /* remember where this read stopped: the next one likely starts
         * there */
        pthread_mutex_lock(&sc->hint_lock);
        int slot = pp->hint >= 0 ? pp->hint : (int)(sc->hint_next++ % SP_HINTS);
        struct sp_hint *hh = &sc->hint[slot];
        hh->valid = true;
        hh->cell = pp->cell;
        hh->byte = (size_t)sp_pos_byte(&sc->plan, pp);
        memcpy(hh->pos, pp->next, sc->nfrags * sizeof *pp->next);
        pthread_mutex_unlock(&sc->hint_lock);
    }
    if (pp->next != pp->buf)
        free(pp->next);
    pp->next = NULL;
}

static int sparse_runs(struct tdb_cells *c, uint64_t first, uint64_t n,
                       struct tdb_runs *rs, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    struct tdb_run *out = rs->v;
    size_t cap = rs->cap;
    rs->n = 0;
    if (!sc->plan.nck || !cap || !n)
        return 0;
    struct tdb_plan_pos pp;
    int r = sparse_plan_seek(c, first, &pp, err);
    if (r)
        return r;
    size_t kk = 0;
    uint64_t end = first + n;
    while (kk < cap && first < end &&
           (pp.p < pp.end || sparse_plan_more(c, &pp))) {
        size_t slot;
        uint64_t fcell, count;
        const uint8_t *np;
        tdb_plan_decode(&pp, &slot, &fcell, &count, &np);
        uint64_t e = pp.cell + count;
        uint64_t a0 = first > pp.cell ? first : pp.cell, b = end < e ? end : e;
        out[kk++] = (struct tdb_run){sc->frags[slot], fcell + (a0 - pp.cell),
                                     b - a0};
        first = b;
        if (b < e)
            break;
        pp.next[slot] = fcell + count;
        pp.cell = e;
        pp.p = np;
    }
    rs->n = kk;
    sparse_plan_done(c, &pp);
    return 0;
}

static void sparse_destroy(struct tdb_cells *c)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    sp_plan_free(&sc->plan);
    for (int i = 0; i < SP_HINTS; i++)
        free(sc->hint[i].pos);
    pthread_mutex_destroy(&sc->hint_lock);
    free(sc->frags);
    free(sc->dels);
}

static const struct tdb_cells_ops sparse_ops = {
    .runs = sparse_runs,
    .plan_seek = sparse_plan_seek,
    .plan_more = sparse_plan_more,
    .plan_ckpt = sparse_plan_ckpt,
    .plan_goto = sparse_plan_goto,
    .plan_done = sparse_plan_done,
    .prepare = sparse_prepare,
    .destroy = sparse_destroy,
};

/* Do the non-empty domains of two fragments intersect? */
static bool sparse_overlap(const struct tdb_schema *s, const struct tdb_fragmeta *x,
                           const struct tdb_fragmeta *y)
{
    if (x->ned_null || y->ned_null)
        return false;
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        const struct tdb_range *a = &x->ned[d], *b = &y->ned[d];
        int c1, c2;
        if (dim->cell_val_num == TDB_VAR_NUM) {
            c1 = tdb_value_cmp(dim->type, a->vlo, a->vlo_size, b->vhi, b->vhi_size);
            c2 = tdb_value_cmp(dim->type, b->vlo, b->vlo_size, a->vhi, a->vhi_size);
        } else {
            unsigned vs = tdb_dt_size(dim->type);
            c1 = tdb_value_cmp(dim->type, a->lo, vs, b->hi, vs);
            c2 = tdb_value_cmp(dim->type, b->lo, vs, a->hi, vs);
        }
        if (c1 > 0 || c2 > 0)
            return false;
    }
    return true;
}

static bool sparse_disjoint(const struct tdb_array *a, struct tdb_frag **frags,
                            size_t n)
{
    if (n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (sparse_overlap(a->schema, frags[i]->fm, frags[j]->fm))
                return false;
    return true;
}

/* A fragment with per-cell timestamps that the view shows as stored: its
 * whole time span inside the open range (no cell is left out by time),
 * and no two cells of the same coordinates (duplicates allowed, or a
 * consolidation found none: its name is marked, tdb_tsname_marked). */
static bool sp_whole_distinct(const struct tdb_array *a,
                              const struct tdb_frag *f, uint64_t t0,
                              uint64_t t1)
{
    struct tdb_tsname ts;
    if (f->fm->t1 < t0 || f->fm->t2 > t1)
        return false;
    return a->schema->allows_dups ||
           (!tdb_tsname_parse(f->fm->name, &ts) && tdb_tsname_marked(&ts));
}

static int sp_create(struct tdb_cells **out, struct tdb_array *a,
                     struct tdb_frag **frags, size_t n, uint64_t t0,
                     uint64_t t1, bool versions, struct tdb_error *err)
{
    struct sparse_cells *sc = calloc(1, sizeof *sc);
    if (!sc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    sc->base.ops = &sparse_ops;
    sc->base.arr = a;
    pthread_mutex_init(&sc->base.lock, NULL);
    pthread_mutex_init(&sc->hint_lock, NULL);
    size_t nn = n ? n : 1;
    sc->frags = calloc(nn, sizeof *sc->frags);
    bool ok = sc->frags && !sp_plan_init(&sc->plan, n, false);
    for (int i = 0; i < SP_HINTS && ok; i++)
        ok = (sc->hint[i].pos = calloc(nn, sizeof *sc->hint[i].pos)) != NULL;
    if (!ok) {
        tdb_cells_free(&sc->base);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    memcpy(sc->frags, frags, n * sizeof *frags);
    sc->nfrags = n;
    sc->t0 = t0;
    sc->t1 = t1;
    sc->versions = versions;
    sc->threads = a->threads;
    tdb_order_key_init(&sc->okey, a->schema);
    /* The count is known without decoding when no merge can drop a cell:
     * one fragment, duplicates allowed, or fragments whose non-empty
     * domains do not overlap; and no timestamps, no deletes (commits or
     * a consolidation's delete timestamps). */
    bool simple = versions ||
                  (!a->nconds && (n <= 1 || a->schema->allows_dups ||
                                  sparse_disjoint(a, frags, n)));
    for (size_t i = 0; i < n && simple && !versions; i++)
        simple = !frags[i]->fm->has_delete_meta &&
                 (!frags[i]->fm->has_timestamps ||
                  (n == 1 && sp_whole_distinct(a, frags[0], t0, t1)));
    if (simple) {
        for (size_t i = 0; i < n; i++)
            sc->base.ncells += frags[i]->ncells;
        atomic_init(&sc->base.counted, true);
        if (n <= 1) {
            /* the fragment as it is stored: no merge */
            if (n == 1 && frags[0]->ncells &&
                (sp_plan_put(&sc->plan, 0, 0, frags[0]->ncells) ||
                 sp_plan_end(&sc->plan) || sp_plan_seal(&sc->plan))) {
                tdb_cells_free(&sc->base);
                return tdb_err(err, TDB_E_NOMEM, "out of memory");
            }
            atomic_init(&sc->base.ready, true);
        }
    }
    *out = &sc->base;
    return 0;
}

int tdb_cells_sparse(struct tdb_cells **out, struct tdb_array *a,
                     struct tdb_frag **frags, size_t n, uint64_t t0,
                     uint64_t t1, struct tdb_error *err)
{
    return sp_create(out, a, frags, n, t0, t1, false, err);
}

int tdb_cells_sparse_versions(struct tdb_cells **out, struct tdb_array *a,
                              struct tdb_frag **frags, size_t n,
                              struct tdb_error *err)
{
    return sp_create(out, a, frags, n, 0, UINT64_MAX, true, err);
}

size_t tdb_cells_sparse_deletes(const struct tdb_cells *c,
                                const struct tdb_cell_delete **dels)
{
    const struct sparse_cells *sc = (const struct sparse_cells *)c;
    *dels = sc->dels;
    return sc->ndels;
}
