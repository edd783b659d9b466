/* plan.h: a sparse merge's plan (docs/LAYOUT.md "Sparse arrays: the
 * cells"): the merged order of the fragments' cells kept as a byte stream
 * of entries, one per run of consecutive cells of one fragment, with
 * checkpoints from which any view cell is found.  The merges build it
 * (merge_heap.c, merge_tournament.c), the sparse view keeps it
 * (sparse_view.c) and the reads walk it (view.c): this module alone knows
 * the encoding.
 *
 * An entry is a varint
 *     (count - 1) << (fbits + 1) | slot << 1 | has_skip
 * (slot: the fragment's index in the view's fragments, fbits bits), then,
 * when has_skip, a varint of the cells of that fragment passed over
 * (dropped) since its previous entry, zigzag-signed (a fragment not stored
 * in order goes back): each fragment's next cell is implicit.  A run of 1
 * or 2 cells from one of up to 32 fragments with no skip takes 1 byte.
 * Every TDB_PLAN_CKPT(n) entries a checkpoint records the view cell where
 * the entry starts, its byte offset and each fragment's next cell
 * ((2 + n) * 8 bytes), so a read at any cell decodes at most that many
 * entries; a few resume points (hints) let sequential reads go on where
 * the last stopped.  Memory: the entries (1 to ~20 bytes each, 1 byte
 * typical for 1-cell runs) + (16 + 8 n) / TDB_PLAN_CKPT(n) bytes per entry
 * (0.17 for 20 fragments), never more than one entry per kept cell. */
#ifndef TDB_READ_PLAN_H
#define TDB_READ_PLAN_H

#include "read/array.h"
#include <pthread.h>

#define TDB_PLAN_CKPT(n) ((n) * 16 > 1024 ? (n) * 16 : 1024)
#define TDB_PLAN_HINTS 4

/* A resume point: the entry at stream byte `byte` starts at view cell
 * `cell`, with each fragment's next cell pos[]. */
struct tdb_plan_hint {
    bool valid;
    uint64_t cell;
    size_t byte;
    uint64_t *pos;
};

/* A plan being built (or built): the entries, the checkpoints, and while
 * building each fragment's next cell and the run not yet written. */
struct tdb_plan {
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
    /* a key range after the first (a tournament's range): each
     * fragment's first entry has its skip in TDB_PLAN_PATCH bytes at
     * patch_byte[slot] (SIZE_MAX: no entry), for when the ranges are
     * joined; checkpoints before patch_ck[slot] hold the fragment's
     * starting cell */
    bool patchable;
    size_t *patch_byte, *patch_ck;
    uint64_t *patch_cell;       /* that entry's first cell */
    /* the plan built (tdb_plan_seal, tdb_plan_join): the entries in
     * segments read as one stream; checkpoints count bytes in that
     * stream */
    struct tdb_plan_seg {
        uint8_t *bytes;
        size_t n;
        uint64_t base;          /* the stream's bytes before it */
    } *seg;
    size_t nseg;
    /* reading (tdb_plan_open): the fragments, and the reads' resume
     * points under hint_lock */
    struct tdb_frag *const *frags;
    bool open;
    pthread_mutex_t hint_lock;
    struct tdb_plan_hint hint[TDB_PLAN_HINTS];
    unsigned hint_next;
};

/* ------------------------------------------------------------- building */

/* Sets up an empty plan for n fragments; patchable: a key range after the
 * first, to be joined (tdb_plan_join).  @return 0 or TDB_E_NOMEM (free it
 * with tdb_plan_free either way). */
int tdb_plan_init(struct tdb_plan *pl, size_t n, bool patchable);
/* Frees what the plan holds (all of it zero after tdb_plan_init). */
void tdb_plan_free(struct tdb_plan *pl);

/* Appends cells fcell..fcell+count-1 of fragment `slot` as entries.
 * @return 0 or TDB_E_NOMEM. */
int tdb_plan_put(struct tdb_plan *pl, size_t slot, uint64_t fcell,
                 uint64_t count);

/* Cell `cell` of fragment `slot` is the next of the view: runs of
 * consecutive cells are gathered into entries, the common one written
 * here (one byte, no skip, no checkpoint).  @return 0 or TDB_E_NOMEM. */
static inline int tdb_plan_emit(struct tdb_plan *pl, size_t slot,
                                uint64_t cell)
{
    pl->merged++;
    if (pl->ropen && pl->rslot == slot && pl->rcell + pl->rcount == cell) {
        pl->rcount++;
        return 0;
    }
    if (pl->ropen) {
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
            int r = tdb_plan_put(pl, rs, pl->rcell, pl->rcount);
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
 * version of the same coordinates in the same fragment.  @return 0 or
 * TDB_E_NOMEM. */
int tdb_plan_emit_replace(struct tdb_plan *pl, size_t slot, uint64_t cell);

/* Writes the run not yet written and gives back unused room.  @return 0
 * or TDB_E_NOMEM. */
int tdb_plan_end(struct tdb_plan *pl);
/* The plan ended: its bytes become its one segment.  @return 0 or
 * TDB_E_NOMEM. */
int tdb_plan_seal(struct tdb_plan *pl);

/* Joins nr ended plans of consecutive key ranges (all but the first
 * patchable) into pls[0]: their bytes become its segments (not copied),
 * their checkpoints follow its own; each range's first entry of a
 * fragment goes on from where the ranges before left that fragment.  The
 * others keep only what tdb_plan_free frees.  @return 0 or TDB_E_NOMEM. */
int tdb_plan_join(struct tdb_plan *const *pls, size_t nr);

/* -------------------------------------------------------------- reading */

/* Readies a built plan, in its place for good, for reads over fragments
 * frags[0..nfrags).  @return 0 or TDB_E_NOMEM. */
int tdb_plan_open(struct tdb_plan *pl, struct tdb_frag *const *frags);

/* A place in a plan: its entries from p on, the first starting at view
 * cell `cell`, and the next cell of each fragment.  Walks read one-byte
 * entries with tdb_plan_short without a call per entry, any entry with
 * tdb_plan_decode. */
#define TDB_PLAN_BUF 64
struct tdb_plan_pos {
    const uint8_t *p, *end;     /* within one segment of the plan */
    size_t seg;
    uint64_t cell;
    uint64_t *next;             /* nfrags words (buf, or allocated) */
    struct tdb_frag *const *frags;
    size_t nfrags;
    unsigned shift;
    uint64_t smask;
    int hint;                   /* the plan's own (a resume point used) */
    uint64_t buf[TDB_PLAN_BUF];
};

/* *pp at the entry of open plan pl holding view cell `first` (or at the
 * end); give it back with tdb_plan_done (where a read stopped is where the
 * next one likely starts).  @return 0 or TDB_E_NOMEM. */
int tdb_plan_seek(struct tdb_plan *pl, uint64_t first,
                  struct tdb_plan_pos *pp, struct tdb_error *err);
/* Remembers where pp stopped and lets it go. */
void tdb_plan_done(struct tdb_plan *pl, struct tdb_plan_pos *pp);
/* At the end of a segment (pp->p == pp->end): on to the next (true), or
 * the plan ends. */
bool tdb_plan_more(const struct tdb_plan *pl, struct tdb_plan_pos *pp);

/* Walks that only plan tiles step from checkpoint to checkpoint: the
 * first after pp's place at or before view cell `limit`, 0 when none,
 * else its number + 1, with its view cell, each fragment's next cell
 * there and at most how many entries lie between; tdb_plan_goto moves pp
 * to it. */
size_t tdb_plan_ckpt(const struct tdb_plan *pl, const struct tdb_plan_pos *pp,
                     uint64_t limit, uint64_t *cell, const uint64_t **next,
                     uint64_t *entries);
void tdb_plan_goto(const struct tdb_plan *pl, struct tdb_plan_pos *pp,
                   size_t ck);

/* The entry at pp->p (pp->p < pp->end): fragment slot, its first cell and
 * count; *np: the entry after it.  Moves nothing. */
void tdb_plan_decode(const struct tdb_plan_pos *pp, size_t *slot,
                     uint64_t *fcell, uint64_t *count, const uint8_t **np);

/* Entry byte h read as a whole entry of one byte (no skip): true with its
 * fragment slot and count, false when h begins a longer entry
 * (tdb_plan_decode).  The fragment's first cell is pp->next[*slot]. */
static inline bool tdb_plan_short(const struct tdb_plan_pos *pp, unsigned h,
                                  size_t *slot, uint64_t *count)
{
    if (h & 0x81)
        return false;
    *slot = h >> 1 & pp->smask;
    *count = (h >> pp->shift) + 1;
    return true;
}

#endif
