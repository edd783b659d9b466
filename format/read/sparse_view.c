/* sparse_view.c: sparse cells merged in global order (docs/LAYOUT.md "Sparse
 * arrays: the cells"; FORMAT-NOTES "Order and duplicates"): duplicates
 * resolved newest first, cells outside the open range or deleted by a
 * delete commit dropped.  The merge runs once and is kept as runs. */
#include "read/view.h"

#include <stdlib.h>

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

struct sparse_cells {
    struct tdb_cells base;
    size_t nfrags;
    struct tdb_frag **frags;    /* oldest first */
    uint64_t t0, t1;
    struct tdb_order_key okey;
    /* the plan (above) */
    unsigned fbits;
    uint64_t maxcount;          /* the most cells one entry holds */
    uint64_t ckpt;              /* entries per checkpoint */
    uint8_t *bytes;
    size_t nbytes, capbytes;
    uint64_t nentries;
    uint64_t ckleft;            /* entries until the next checkpoint */
    uint64_t *ck;               /* (2 + nfrags) words per checkpoint */
    size_t nck, capck;
    uint64_t *pos;              /* building: next cell of each fragment */
    uint64_t planned;           /* cells in the entries so far */
    bool ropen;                 /* building: the run not yet written */
    size_t rslot;
    uint64_t rcell, rcount;
    uint64_t merged;            /* cells the merge kept so far */
    /* resume points of reads, under hint_lock */
    pthread_mutex_t hint_lock;
    struct sp_hint hint[SP_HINTS];
    unsigned hint_next;
};

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
    struct tdb_cache_entry *e[TDB_MAX_DIMS + 1];
    const struct tdb_tile *t[TDB_MAX_DIMS + 1];
    bool pinned;
    struct sp_head h;           /* the head cell's place in the order */
    uint64_t ts;
    int ts_field;
    bool done;
    size_t slot;                /* index in frags[] */
    unsigned vs[TDB_MAX_DIMS];  /* bytes of each fixed-size coordinate */
    const struct tdb_order_key *okey;
};

static void sp_unpin(struct sp_cur *k)
{
    if (!k->pinned)
        return;
    uint32_t nd = k->f->fs->ndims;
    for (uint32_t d = 0; d <= nd; d++) {
        if (k->e[d])
            tdb_cache_release(k->cache, k->e[d]);
        k->e[d] = NULL;
    }
    k->pinned = false;
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
        uint64_t per = s->capacity ? s->capacity : 1;   /* as tile_of */
        k->tspan = k->tcells < per ? k->tcells : per;
        k->pinned = true;
        for (uint32_t d = 0; d < s->ndims; d++) {
            int r = f->legacy_coords
                        ? tdb_frag_tile(f, f->dim_field[0] >= 0 ? f->dim_field[0]
                                                                 : (int)s->nattrs,
                                        TDB_PART_LEGACY_DIM + d, t, &k->e[d],
                                        &k->t[d], err)
                        : tdb_frag_tile(f, f->dim_field[d], TDB_PART_VALUES, t,
                                        &k->e[d], &k->t[d], err);
            if (r)
                return r;
        }
        if (k->ts_field >= 0) {
            int r = tdb_frag_tile(f, k->ts_field, TDB_PART_VALUES, t,
                                  &k->e[s->ndims], &k->t[s->ndims], err);
            if (r)
                return r;
        }
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
    if (k->ts_field >= 0) {
        const struct tdb_tile *tl = k->t[s->ndims];
        if ((i + 1) * 8 > tl->size)
            return tdb_err(err, TDB_E_CORRUPT, "%s: timestamp tile too short",
                           f->fm->path);
        k->ts = tdb_le64(tl->data + i * 8);
    }
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

/* Is the cell under cursor k dropped (outside [t0,t1], deleted)? */
static int sp_dropped(struct sparse_cells *sc, struct sp_cur *k,
                      struct tdb_error *err)
{
    if (k->ts_field >= 0 && (k->ts < sc->t0 || k->ts > sc->t1))
        return 1;
    struct tdb_array *a = sc->base.arr;
    for (size_t i = 0; i < a->nconds; i++) {
        const struct tdb_dir_entry *de = &a->cond_ents[i];
        uint64_t td = de->ts.t1;
        if (td < sc->t0 || td > sc->t1 || k->ts > td)
            continue;
        if (sp_processed(k->f->fm, de->name))
            continue;
        struct sp_cellview cv = {.k = k, .err = err};
        struct tdb_cell_view view = {.get = sp_cell_get, .arg = &cv,
                                     .is_var = sp_cell_is_var,
                                     .release = sp_cell_release};
        int m = tdb_cond_eval(a->conds[i], &view, err);
        sp_cell_release(&cv);
        if (m < 0)
            return tdb_err_ctx(err, m, "delete condition %s", de->name);
        if (m)
            return 1;
    }
    return 0;
}

/* Moves k to its next kept cell (or done). */
static int sp_next_kept(struct sparse_cells *sc, struct sp_cur *k,
                        struct tdb_error *err)
{
    while (k->cell < k->ncells) {
        int r = sp_load(k, err);
        if (r)
            return r;
        r = sp_dropped(sc, k, err);
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

static void sp_plan_free(struct sparse_cells *sc)
{
    free(sc->bytes);
    free(sc->ck);
    sc->bytes = NULL;
    sc->ck = NULL;
    sc->nbytes = sc->capbytes = sc->nck = sc->capck = 0;
    sc->nentries = sc->planned = sc->ckleft = 0;
    sc->ropen = false;
    if (sc->pos)
        memset(sc->pos, 0, sc->nfrags * sizeof *sc->pos);
}

/* Appends cells fcell..fcell+count-1 of fragment `slot` as entries. */
static int sp_plan_put(struct sparse_cells *sc, size_t slot, uint64_t fcell,
                       uint64_t count)
{
    size_t n = sc->nfrags;
    while (count) {
        uint64_t c = count < sc->maxcount ? count : sc->maxcount;
        if (!sc->ckleft) {         /* every ckpt-th entry */
            sc->ckleft = sc->ckpt;
            if (sp_grow((void **)&sc->ck, &sc->capck, (sc->nck + 1) * (2 + n),
                        sizeof *sc->ck))
                return TDB_E_NOMEM;
            uint64_t *k = sc->ck + sc->nck * (2 + n);
            k[0] = sc->planned;
            k[1] = sc->nbytes;
            memcpy(k + 2, sc->pos, n * sizeof *sc->pos);
            sc->nck++;
        }
        if (sp_grow((void **)&sc->bytes, &sc->capbytes, sc->nbytes + 20, 1))
            return TDB_E_NOMEM;
        uint64_t d = fcell - sc->pos[slot];     /* two's complement */
        uint64_t skip = d << 1 ^ (uint64_t)-(int64_t)(d >> 63);    /* zigzag */
        uint64_t h = (c - 1) << (sc->fbits + 1) | (uint64_t)slot << 1 | (skip != 0);
        sp_put_varint(sc->bytes, &sc->nbytes, h);
        if (skip)
            sp_put_varint(sc->bytes, &sc->nbytes, skip);
        sc->pos[slot] = fcell + c;
        sc->planned += c;
        sc->nentries++;
        sc->ckleft--;
        fcell += c;
        count -= c;
    }
    return 0;
}

/* Cell `cell` of fragment `slot` is the next of the view. */
static int sp_emit(struct sparse_cells *sc, size_t slot, uint64_t cell)
{
    sc->merged++;
    if (sc->ropen && sc->rslot == slot && sc->rcell + sc->rcount == cell) {
        sc->rcount++;
        return 0;
    }
    if (sc->ropen) {
        int r = sp_plan_put(sc, sc->rslot, sc->rcell, sc->rcount);
        if (r)
            return r;
    }
    sc->ropen = true;
    sc->rslot = slot;
    sc->rcell = cell;
    sc->rcount = 1;
    return 0;
}

static int sp_plan_end(struct sparse_cells *sc)
{
    if (sc->ropen) {
        int r = sp_plan_put(sc, sc->rslot, sc->rcell, sc->rcount);
        if (r)
            return r;
        sc->ropen = false;
    }
    /* give back what the doubling left over */
    if (sc->nbytes && sc->nbytes < sc->capbytes) {
        uint8_t *b = realloc(sc->bytes, sc->nbytes);
        if (b) {
            sc->bytes = b;
            sc->capbytes = sc->nbytes;
        }
    }
    size_t w = sc->nck * (2 + sc->nfrags);
    if (w && w < sc->capck) {
        uint64_t *k = realloc(sc->ck, w * sizeof *k);
        if (k) {
            sc->ck = k;
            sc->capck = w;
        }
    }
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

/* The newest version of a cell so far (no duplicates). */
struct sp_win {
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
        if (k->ts > w->ts || (k->ts == w->ts && k->f->index > w->idx) ||
            (k->ts == w->ts && k->f->index == w->idx && k->cell > w->cell))
            *w = (struct sp_win){k->slot, k->cell, k->ts, k->f->index};
        k->cell++;
        int r = sp_next_kept(sc, k, err);
        if (r)
            return r;
    }
    return 0;
}

static int sparse_prepare(struct tdb_cells *c, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    struct tdb_array *a = c->arr;
    const struct tdb_schema *s = a->schema;
    bool dups = s->allows_dups;
    size_t n = sc->nfrags;
    struct sp_cur *cur = calloc(n ? n : 1, sizeof *cur);
    struct sp_cur **heap = calloc(n ? n : 1, sizeof *heap);
    struct sp_cur **eq = calloc(n ? n : 1, sizeof *eq);
    uint8_t *keybuf = NULL;
    size_t keycap = 0;
    int r = 0;
    if (!cur || !heap || !eq) {
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
        goto out;
    }
    /* ncells stays as it is until the merge is whole: a view counted from
     * the metadata is being stat'ed by other threads meanwhile */
    sc->merged = 0;
    sp_plan_free(sc);
    struct sp_heap hp = {heap, 0, s};
    for (size_t i = 0; i < n && !r; i++) {
        cur[i].f = sc->frags[i];
        cur[i].cache = a->cache;
        cur[i].ncells = sc->frags[i]->ncells;
        cur[i].ts_field = tdb_fragmeta_ts_field(sc->frags[i]->fm);
        cur[i].slot = i;
        cur[i].okey = &sc->okey;
        for (uint32_t d = 0; d < sc->frags[i]->fs->ndims && d < TDB_MAX_DIMS; d++)
            cur[i].vs[d] = tdb_dt_size(sc->frags[i]->fs->dims[d].type);
        r = sp_next_kept(sc, &cur[i], err);
        if (!r && !cur[i].done)
            sp_push(&hp, &cur[i]);
    }
    while (!r && hp.n) {
        /* the smallest head; among equal coordinates the newest first */
        struct sp_cur *m = hp.h[0];
        if (dups) {
            r = sp_emit(sc, m->slot, m->cell);
            if (r) {
                r = tdb_err(err, r, "out of memory");
                break;
            }
            m->cell++;
            if (!(r = sp_next_kept(sc, m, err)))
                sp_top_moved(&hp);
            continue;
        }
        /* no duplicates: the newest version of these coordinates wins,
         * including versions kept side by side in one fragment.  Copy the
         * key's var-sized bytes: the cursors move on. */
        struct sp_head key;
        key.hilbert = m->h.hilbert;
        key.key = m->h.key;
        key.kvalid = m->h.kvalid;
        bool bytes = !(sc->okey.exact && key.kvalid);   /* see sp_same */
        size_t need = 0;
        for (uint32_t d = 0; d < s->ndims && bytes; d++)
            need += (size_t)m->h.c.n[d];
        if (need > keycap) {
            uint8_t *kb = realloc(keybuf, need);
            if (!kb) {
                r = tdb_err(err, TDB_E_NOMEM, "out of memory");
                break;
            }
            keybuf = kb;
            keycap = need;
        }
        size_t used = 0;
        for (uint32_t d = 0; d < s->ndims && bytes; d++) {
            key.c.n[d] = m->h.c.n[d];
            if (key.c.n[d])
                memcpy(keybuf + used, m->h.c.v[d], (size_t)key.c.n[d]);
            key.c.v[d] = keybuf + used;
            used += (size_t)key.c.n[d];
        }
        struct sp_win w = {m->slot, m->cell, m->ts, m->f->index};
        if ((r = sp_take_equal(sc, m, &key, &w, err)))
            break;
        sp_top_moved(&hp);
        /* other heads at the same place in the order (other fragments'
         * versions): take them off, take their equal cells, put them back */
        if (hp.n && sp_at(s, &sc->okey, &hp.h[0]->h, &key)) {
            size_t ne = 0;
            while (hp.n && sp_at(s, &sc->okey, &hp.h[0]->h, &key))
                eq[ne++] = sp_pop(&hp);
            for (size_t i = 0; i < ne && !r; i++)
                r = sp_take_equal(sc, eq[i], &key, &w, err);
            if (r)
                break;
            for (size_t i = 0; i < ne; i++)
                if (!eq[i]->done)
                    sp_push(&hp, eq[i]);
        }
        r = sp_emit(sc, w.slot, w.cell);
        if (r)
            r = tdb_err(err, r, "out of memory");
    }
    if (!r && (r = sp_plan_end(sc)))
        r = tdb_err(err, r, "out of memory");
out:
    for (size_t i = 0; cur && i < n; i++)
        sp_unpin(&cur[i]);
    free(cur);
    free(heap);
    free(eq);
    free(keybuf);
    if (r)
        return r;
    /* a view counted from the metadata keeps its count (others read it
     * meanwhile); else the count is published by tdb_cells_prepare */
    bool counted = atomic_load_explicit(&c->counted, memory_order_relaxed);
    if (counted && sc->merged != c->ncells)
        return tdb_err(err, TDB_E_CORRUPT, "sparse merge kept %llu cells where "
                       "the fragments' metadata counts %llu",
                       (unsigned long long)sc->merged,
                       (unsigned long long)c->ncells);
    if (!counted)
        c->ncells = sc->merged;
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

static int sparse_plan_seek(struct tdb_cells *c, uint64_t first,
                            struct tdb_plan_pos *pp, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    size_t nf = sc->nfrags, stride = 2 + nf;
    pp->frags = sc->frags;
    pp->nfrags = nf;
    pp->shift = sc->fbits + 1;
    pp->smask = ((uint64_t)1 << sc->fbits) - 1;
    pp->hint = -1;
    pp->cell = 0;
    pp->p = pp->end = sc->bytes;
    pp->next = nf <= TDB_PLAN_BUF ? pp->buf : malloc(nf * sizeof *pp->next);
    if (!pp->next)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!sc->nck)
        return 0;
    /* the last checkpoint at or before `first` */
    size_t lo = 0, hi = sc->nck;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (sc->ck[mid * stride] <= first)
            lo = mid;
        else
            hi = mid;
    }
    const uint64_t *k = sc->ck + lo * stride;
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
    pp->p = sc->bytes + byte;
    pp->end = sc->bytes + sc->nbytes;
    /* on to the entry holding `first` */
    while (pp->p < pp->end) {
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
    if (sc->nck) {
        /* remember where this read stopped: the next one likely starts
         * there */
        pthread_mutex_lock(&sc->hint_lock);
        int slot = pp->hint >= 0 ? pp->hint : (int)(sc->hint_next++ % SP_HINTS);
        struct sp_hint *hh = &sc->hint[slot];
        hh->valid = true;
        hh->cell = pp->cell;
        hh->byte = (size_t)(pp->p - sc->bytes);
        memcpy(hh->pos, pp->next, sc->nfrags * sizeof *pp->next);
        pthread_mutex_unlock(&sc->hint_lock);
    }
    if (pp->next != pp->buf)
        free(pp->next);
    pp->next = NULL;
}

static int sparse_runs(struct tdb_cells *c, uint64_t first, uint64_t n,
                       struct tdb_run *out, size_t cap, size_t *nout,
                       struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    *nout = 0;
    if (!sc->nck || !cap || !n)
        return 0;
    struct tdb_plan_pos pp;
    int r = sparse_plan_seek(c, first, &pp, err);
    if (r)
        return r;
    size_t kk = 0;
    uint64_t end = first + n;
    while (kk < cap && first < end && pp.p < pp.end) {
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
    *nout = kk;
    sparse_plan_done(c, &pp);
    return 0;
}

static void sparse_destroy(struct tdb_cells *c)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    sp_plan_free(sc);
    for (int i = 0; i < SP_HINTS; i++)
        free(sc->hint[i].pos);
    pthread_mutex_destroy(&sc->hint_lock);
    free(sc->pos);
    free(sc->frags);
}

static const struct tdb_cells_ops sparse_ops = {
    .runs = sparse_runs,
    .plan_seek = sparse_plan_seek,
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

int tdb_cells_sparse(struct tdb_cells **out, struct tdb_array *a,
                     struct tdb_frag **frags, size_t n, uint64_t t0,
                     uint64_t t1, struct tdb_error *err)
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
    sc->pos = calloc(nn, sizeof *sc->pos);
    bool ok = sc->frags && sc->pos;
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
    tdb_order_key_init(&sc->okey, a->schema);
    while (((size_t)1 << sc->fbits) < n)
        sc->fbits++;
    sc->maxcount = (uint64_t)1 << (62 - sc->fbits);
    sc->ckpt = SP_CKPT(n);
    /* The count is known without decoding when no merge can drop a cell:
     * one fragment, duplicates allowed, or fragments whose non-empty
     * domains do not overlap; and no timestamps, no deletes. */
    bool simple = !a->nconds &&
                  (n <= 1 || a->schema->allows_dups || sparse_disjoint(a, frags, n));
    for (size_t i = 0; i < n && simple; i++)
        simple = !frags[i]->fm->has_timestamps;
    if (simple) {
        for (size_t i = 0; i < n; i++)
            sc->base.ncells += frags[i]->ncells;
        atomic_init(&sc->base.counted, true);
        if (n <= 1) {
            /* the fragment as it is stored: no merge */
            if (n == 1 && frags[0]->ncells &&
                (sp_plan_put(sc, 0, 0, frags[0]->ncells) || sp_plan_end(sc))) {
                tdb_cells_free(&sc->base);
                return tdb_err(err, TDB_E_NOMEM, "out of memory");
            }
            atomic_init(&sc->base.ready, true);
        }
    }
    *out = &sc->base;
    return 0;
}
