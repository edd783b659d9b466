/* readahead.c: the read-ahead policy of a reader (readahead.h): which
 * tiles a read of a fixed-size field file and the reads after it want,
 * decoded on every core before they are asked for.  Its pins (struct
 * ra_pin) keep the tiles of the row of tiles the reader reads and those
 * decoded ahead in the cache (tdb_cache_keep: ahead of the LRU order, but
 * never beyond the budget): the read's row of tiles (in a dense view,
 * where a tile's pieces end is known, it goes once read past; a read
 * waits for the one before it to let its row go, and one that crosses
 * into the next row reads the rows one after the other), plus ahead a
 * quarter of the cache (8 to 32 MiB) but no more than half of what the
 * budget leaves beyond the read's own tiles.
 *
 * Every tile is decoded within the cache's budget, so that however many
 * readers read, the cache holds at most its budget (or one tile, when a
 * tile is larger):
 *  - the pool's jobs and a read's own decodes start only when the budget
 *    has room now (TDB_CACHE_TRY; a tile ahead also leaves room for
 *    another as large), and never wait: a tile without room is left to
 *    the copy (tree/reader.c), and a tile ahead without room stops
 *    decoding ahead;
 *  - keeps are no pins: a waiting load frees kept tiles, so a reader that
 *    stops reading holds no one up.
 * On storage that fetches ahead (an object store), every read first asks
 * for the bytes of its tiles and, reading on, of a growing window ahead
 * (fetch.c): decoding threads then find them arrived or on their way.
 * Lock order: ra->lock, then the pool's or the cache's lock. */
#include "read/readahead.h"
#include "read/fetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RA_AHEAD_MIN (8u << 20)     /* decoded bytes pinned ahead: a */
#define RA_AHEAD_MAX (32u << 20)    /* quarter of the cache, within these */
#define RA_AHEAD_VIEW (256u << 20)  /* how far ahead in the file to look */
#define RA_ROW_MAX (16u << 20)      /* the rest of the read's row of tiles
                                     * is pinned up to this whatever the
                                     * cache (reads smaller than a row) */
#define RA_MAX_PINS 512
#define RA_SEQ_SLACK (4u << 20)     /* a read this close to the last one's
                                     * end goes on reading sequentially */
#define RA_MAX_ACTIVE 16            /* reads of one reader at once (the
                                     * kernel's read-ahead sends several) */
#define RA_MAX_AHEAD_READS 16       /* reads come before an earlier one */
#define RA_SLABS 8                  /* rows of tiles whose end is known */
#define RA_COME_NS 20000000         /* how long a read waits for the one
                                     * before it to come (ra_wait_turn) */

struct ra_pin {
    struct tdb_tile_ref k;
    struct tdb_cache_entry *e;  /* NULL until the tile is kept */
    bool queued;                /* a job for it is queued or running */
    uint64_t epoch;             /* the last read that wanted it */
    uint64_t last;              /* the file's bytes it gives end there
                                 * (a dense view's: at the latest; else
                                 * as far as the reader looked) */
    uint64_t bytes;             /* its decoded size */
    uint64_t slab;              /* a dense view: its row of tiles (the
                                 * index of its tile along slab_dim) */
};

/* A row of tiles of a dense view (the tiles of one index `at` along
 * slab_dim, `ext` indices each) and where its pieces end at the latest:
 * the least end its tiles were seen to give (ra_tile_end). */
struct ra_slab {
    uint64_t at, ext, end;
};

/* A tile decoded by the pool. */
struct ra_job {
    struct tdb_pool_job base;
    struct tdb_readahead *ra;
    struct tdb_tile_ref k;
    unsigned flags;             /* of its load: TDB_CACHE_TRY, and for a
                                 * tile ahead of the reads TDB_CACHE_SPARE */
};

struct tdb_readahead {
    struct tdb_fieldfile *ff;
    struct tdb_pool *pool;      /* NULL: no decoding ahead */
    struct tdb_fetcher *fetch;  /* NULL: the storage fetches nothing ahead */
    uint64_t cs;                /* bytes per cell of the file */
    pthread_mutex_t lock;
    pthread_cond_t idle;        /* pending fell to 0 */
    pthread_cond_t done;        /* a job finished */
    pthread_cond_t moved;       /* a read began or ended */
    uint64_t ahead_bytes;       /* decoded bytes to keep ahead */
    uint64_t budget;            /* the cache's budget */
    unsigned drop;              /* the flags a tile passed reading on is
                                 * let go with: TDB_CACHE_DROP, and
                                 * TDB_CACHE_DROP_NOW for a file larger
                                 * than the cache */
    /* a dense view: a tile's pieces all lie within ext (its fragment's
     * tile extent) consecutive indices of dimension slab_dim, slab bytes
     * of the file each (0: not a dense view) */
    uint32_t slab_dim;
    uint64_t slab;
    struct ra_slab slabs[RA_SLABS];     /* the rows seen last (a ring) */
    unsigned nslabs, slab_next;
    /* the reads under way: their epochs and where they start (a read
     * ending never unpins the tiles another one still reads) */
    uint64_t act_epoch[RA_MAX_ACTIVE], act_off[RA_MAX_ACTIVE];
    unsigned nact;
    struct ra_pin *pins;
    size_t npins;
    uint64_t pinned;            /* bytes of the pins (kept or to be) */
    unsigned pending;           /* its jobs queued or running */
    unsigned decoding;          /* reads decoding a tile themselves */
    uint64_t epoch;
    uint64_t next_off;          /* where a sequential read goes on */
    /* reading on, the bytes before seen_to were all asked for (a read
     * that comes later than the next one is still awaited: the tiles it
     * wants stay); reads beyond, [early_lo[i], early_hi[i]) */
    uint64_t seen_to;
    uint64_t early_lo[RA_MAX_AHEAD_READS], early_hi[RA_MAX_AHEAD_READS];
    unsigned nearly;
    uint64_t ahead_pos;         /* decoding ahead was planned up to here */
};

static struct ra_pin *ra_find(struct tdb_readahead *ra, const struct tdb_tile_ref *k)
{
    for (size_t i = ra->npins; i-- > 0;)
        if (tdb_tile_ref_same(&ra->pins[i].k, k))
            return &ra->pins[i];
    return NULL;
}

/* Forgets pin p (its entry released or never pinned; with `passed`, a
 * tile the reader read through: not kept in the cache); ra->lock held. */
static void ra_drop_tile(struct tdb_readahead *ra, struct ra_pin *p, bool passed)
{
    if (p->e)
        tdb_cache_unkeep(p->k.f->arr->cache, p->e, passed ? ra->drop : 0);
    ra->pinned -= p->bytes;
    *p = ra->pins[--ra->npins];
}

static void ra_drop(struct tdb_readahead *ra, struct ra_pin *p)
{
    ra_drop_tile(ra, p, false);
}

/* --------------------------------------------------------------- the pool */

/* Which of ra's jobs ra_cancel takes back. */
struct ra_cancel {
    const struct tdb_readahead *ra;
    const struct tdb_tile_ref *k;
    bool ahead;
};

static bool ra_cancel_match(const struct tdb_pool_job *pj, void *arg)
{
    const struct ra_job *j = (const struct ra_job *)pj;
    const struct ra_cancel *c = arg;
    return j->ra == c->ra && (!c->k || tdb_tile_ref_same(&j->k, c->k)) &&
           (!c->ahead || (j->flags & TDB_CACHE_SPARE));
}

/* Takes back ra's jobs that no thread has started: only the one for k
 * when k is not NULL, only those of tiles ahead (their pins go too) with
 * `ahead`; ra->lock held.  @return how many. */
static unsigned ra_cancel(struct tdb_readahead *ra, const struct tdb_tile_ref *k,
                          bool ahead)
{
    struct ra_cancel c = {ra, k, ahead};
    struct tdb_pool_job *l = tdb_pool_take(ra->pool, ra_cancel_match, &c);
    unsigned n = 0;
    while (l) {
        struct ra_job *j = (struct ra_job *)l;
        l = l->next;
        struct ra_pin *pin = ra_find(ra, &j->k);
        if (pin)
            pin->queued = false;
        if (pin && ahead && !pin->e)
            ra_drop(ra, pin);
        ra->pending--;
        n++;
        free(j);
    }
    return n;
}

/* Job j is done: its tile is pinned by e (NULL: no room for it, r 1, or
 * the decode failed; the read then decodes it itself, and reports the
 * error).  A tile ahead without room stops decoding ahead (the jobs after
 * it would take the room the tiles before them need): the next read plans
 * it again. */
static void ra_job_done(struct tdb_readahead *ra, const struct ra_job *j,
                        int r, struct tdb_cache_entry *e)
{
    const struct tdb_tile_ref *k = &j->k;
    pthread_mutex_lock(&ra->lock);
    if (r == 1 && (j->flags & TDB_CACHE_SPARE)) {
        ra_cancel(ra, NULL, true);
        ra->ahead_pos = 0;
    }
    struct ra_pin *p = ra_find(ra, k);
    if (p)
        p->queued = false;
    if (p && !p->e && e) {
        tdb_cache_keep(k->f->arr->cache, e);
        p->e = e;
        e = NULL;
    } else if (p && !p->e) {
        ra_drop(ra, p);
    }
    if (e)
        tdb_cache_release(k->f->arr->cache, e); /* pinned twice */
    if (--ra->pending == 0)
        pthread_cond_broadcast(&ra->idle);
    pthread_cond_broadcast(&ra->done);
    pthread_mutex_unlock(&ra->lock);
}

/* A job of the pool: decodes its tile. */
static void ra_job_run(struct tdb_pool_job *pj)
{
    struct ra_job *j = (struct ra_job *)pj;
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    int r = tdb_frag_tile_flags(&j->k, j->flags, &e, &tile, NULL);
    ra_job_done(j->ra, j, r, r == 0 ? e : NULL);
    free(j);
}

/* -------------------------------------------------------------- the pins */

/* What ra_want is asked and tells. */
struct ra_ask {
    uint64_t from, last;    /* the piece of the file the tile gives */
    bool submit;            /* queue its decoding for the pool */
    uint64_t cap;           /* a new pin must keep the pinned bytes within
                             * this, */
    uint64_t row_cap;       /* or this for a tile of the read's rows: */
    uint64_t row_slab;      /* in a dense view, at most this row of tiles
                             * (ra_tile_slab); else any */
    bool full;              /* set: the tile was not pinned (no room) */
    bool ahead;             /* a tile after the read: decoded only while
                             * the cache keeps room for another as large */
};

/* True when where tile k's pieces end is known (a dense fragment's tile
 * in a dense view: they lie within ext indices along slab_dim). */
static bool ra_rows_known(const struct tdb_readahead *ra, const struct tdb_tile_ref *k)
{
    return ra->slab && k->f->fm->dense && k->f->ext[ra->slab_dim] &&
           ra->slab_dim < k->f->fs->ndims;
}

/* Where tile k's pieces end at the latest, one of them starting at
 * `from` (ra_rows_known). */
static uint64_t ra_tile_end(const struct tdb_readahead *ra,
                            const struct tdb_tile_ref *k, uint64_t from)
{
    uint64_t i = from / ra->slab + k->f->ext[ra->slab_dim];
    return i > UINT64_MAX / ra->slab ? UINT64_MAX : i * ra->slab;
}

/* The index along slab_dim of dense tile k in the array's tile grid. */
static uint64_t ra_tile_slab(const struct tdb_readahead *ra,
                             const struct tdb_tile_ref *k)
{
    const struct tdb_frag *f = k->f;
    uint32_t nd = f->fs->ndims, d = ra->slab_dim;
    uint64_t t = k->t;
    if (f->fs->tile_order == TDB_COL_MAJOR) {
        for (uint32_t e = 0; e < d && e < nd; e++)
            t /= f->ntiles[e] ? f->ntiles[e] : 1;
    } else {
        for (uint32_t e = nd; e-- > d + 1;)
            t /= f->ntiles[e] ? f->ntiles[e] : 1;
    }
    return t % (f->ntiles[d] ? f->ntiles[d] : 1) + f->tile_lo[d];
}

/* Where pin p (a piece from `from`) ends at the latest: its row of tiles
 * ends where any of its tiles was seen to end first (a read that comes
 * before the one starting the row sees the row's tiles from the middle);
 * ra->lock held. */
static void ra_pin_end(struct tdb_readahead *ra, struct ra_pin *p,
                       uint64_t from)
{
    uint64_t ext = p->k.f->ext[ra->slab_dim], end = ra_tile_end(ra, &p->k, from);
    struct ra_slab *sl = NULL;
    for (unsigned i = 0; i < ra->nslabs && !sl; i++)
        if (ra->slabs[i].at == p->slab && ra->slabs[i].ext == ext)
            sl = &ra->slabs[i];
    if (!sl) {
        sl = &ra->slabs[ra->slab_next];
        ra->slab_next = (ra->slab_next + 1) % RA_SLABS;
        if (ra->nslabs < RA_SLABS)
            ra->nslabs++;
        *sl = (struct ra_slab){p->slab, ext, end};
    } else if (end < sl->end) {
        sl->end = end;
        for (size_t i = 0; i < ra->npins; i++) {
            struct ra_pin *q = &ra->pins[i];
            if (q->slab == p->slab && ra_rows_known(ra, &q->k) &&
                q->k.f->ext[ra->slab_dim] == ext && q->last > end)
                q->last = end;
        }
    }
    p->last = sl->end;
}

/* Wants tile k for read `epoch`: pinned now if in the cache, else
 * recorded (to be decoded by the reader) and, with a->submit, queued for
 * the pool.  @return true when the tile is not pinned yet (the first time
 * this read wants it). */
static bool ra_want(struct tdb_readahead *ra, const struct tdb_tile_ref *k,
                    uint64_t epoch, struct ra_ask *a)
{
    uint64_t last = a->last;
    pthread_mutex_lock(&ra->lock);
    struct ra_pin *p = ra_find(ra, k);
    if (p) {
        bool unpinned = p->epoch != epoch && !p->e;
        p->epoch = epoch;
        if (last > p->last)
            p->last = last;
        if (ra_rows_known(ra, k) && a->from < p->last)
            ra_pin_end(ra, p, a->from);
        pthread_mutex_unlock(&ra->lock);
        return unpinned;
    }
    uint64_t bytes = tdb_frag_tile_cells(k->f, k->t) * ra->cs;
    bool known = ra_rows_known(ra, k);
    uint64_t slab = known ? ra_tile_slab(ra, k) : 0;
    uint64_t cap = slab <= a->row_slab ? a->row_cap : a->cap;
    if (ra->npins == RA_MAX_PINS || ra->pinned + bytes > cap) {
        a->full = true;
        pthread_mutex_unlock(&ra->lock);
        return false;
    }
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    int r = tdb_frag_tile_flags(k, TDB_CACHE_PEEK | TDB_CACHE_NOWAIT, &e, &tile,
                                NULL);
    if (r == 0)
        tdb_cache_keep(k->f->arr->cache, e);
    struct ra_job *j = NULL;
    if (r != 0 && a->submit && ra->pool)
        j = calloc(1, sizeof *j);
    p = &ra->pins[ra->npins++];
    *p = (struct ra_pin){*k, r == 0 ? e : NULL, j != NULL, epoch, last, bytes,
                         slab};
    if (known)
        ra_pin_end(ra, p, a->from);
    ra->pinned += bytes;
    if (j) {
        j->base.run = ra_job_run;
        j->ra = ra;
        j->k = *k;
        j->flags = TDB_CACHE_TRY | (a->ahead ? TDB_CACHE_SPARE : 0);
        ra->pending++;
        tdb_pool_submit(ra->pool, &j->base);
    }
    pthread_mutex_unlock(&ra->lock);
    return true;
}

/* Keeps tile k in the calling thread (decoding it, when the cache has
 * room, unless a job is already doing so: the read then waits for that
 * one; without room the tile is left to the copy).  Beyond the budget,
 * a queued job is taken back and done here only while no other read of ra
 * decodes itself: the kernel sends several reads at once, and each
 * decoding the row's tiles beside the pool's threads would only hold more
 * tiles half decoded (and their working memory) than there are cores. */
static void ra_pin_now(struct tdb_readahead *ra, const struct tdb_tile_ref *k)
{
    pthread_mutex_lock(&ra->lock);
    struct ra_pin *p = ra_find(ra, k);
    /* a thread decodes it already: wait for that (decoding it here too
     * could decode it twice, when the cache lets this copy go before the
     * thread looks the tile up) */
    while (p && !p->e && p->queued &&
           ((ra->decoding > 0 && ra->pinned > ra->budget) ||
            ra_cancel(ra, k, false) == 0)) {
        pthread_cond_wait(&ra->done, &ra->lock);
        p = ra_find(ra, k);
    }
    bool mine = p && !p->e;
    if (mine)
        ra->decoding++;
    pthread_mutex_unlock(&ra->lock);
    if (!mine)
        return;
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    /* an error is the read's to report */
    int r = tdb_frag_tile_flags(k, TDB_CACHE_TRY,
                                &e, &tile, NULL);
    pthread_mutex_lock(&ra->lock);
    ra->decoding--;
    pthread_cond_broadcast(&ra->done);
    p = r >= 0 ? ra_find(ra, k) : NULL;
    if (r == 0 && p && !p->e) {
        tdb_cache_keep(k->f->arr->cache, e);
        p->e = e;
        e = NULL;
    } else if (r == 1 && p && !p->e && !p->queued) {
        ra_drop(ra, p);     /* no room: not kept */
    }
    if (r == 0 && e)
        tdb_cache_release(k->f->arr->cache, e);
    pthread_mutex_unlock(&ra->lock);
}

#define RA_MAX_CUR 256
#define RA_MEMO 64

/* A tile a plan has seen, and the end of its last piece so far. */
struct ra_memo {
    struct tdb_tile_ref k;
    uint64_t to;
    bool used;
};

struct ra_plan {
    struct tdb_readahead *ra;
    uint64_t epoch;
    unsigned ncur;      /* tiles of the read so far */
    uint64_t npieces;   /* pieces of tiles the read gives */
    struct tdb_tile_ref cur[RA_MAX_CUR];
    uint64_t limit;     /* decoding ahead stops at these pinned bytes, */
    uint64_t row_limit; /* or these for a tile of the read's rows: */
    uint64_t row_slab;  /* those up to this one (a dense view; else any) */
    uint64_t pos;       /* end of the last piece planned */
    uint64_t end;       /* the read's end */
    /* a tile gives a piece per row of the view (per cell, in a sparse
     * merge): the tiles seen lately, so that a piece of one of them costs
     * no lock */
    struct ra_memo memo[RA_MEMO];
};

/* Raises the end of tile k's bytes to `to` (its pin, if any). */
static void ra_set_last(struct tdb_readahead *ra, const struct tdb_tile_ref *k,
                        uint64_t to)
{
    pthread_mutex_lock(&ra->lock);
    struct ra_pin *p = ra_find(ra, k);
    if (p && to > p->last)
        p->last = to;
    pthread_mutex_unlock(&ra->lock);
}

/* True when the plan saw tile k lately (its end is raised to `to`); else
 * it is remembered now, and the caller wants it. */
static bool ra_memo_seen(struct ra_plan *pl, const struct tdb_tile_ref *k,
                         uint64_t to)
{
    uint64_t h = ((uint64_t)(uintptr_t)k->f >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)k->field * 31 + k->part * 7 + k->t * 0xC2B2AE3D27D4EB4Full;
    struct ra_memo *m = &pl->memo[(h ^ (h >> 29)) % RA_MEMO];
    if (m->used && tdb_tile_ref_same(&m->k, k)) {
        if (to > m->to)
            m->to = to;
        return true;
    }
    if (m->used)
        ra_set_last(pl->ra, &m->k, m->to);
    *m = (struct ra_memo){*k, to, true};
    return false;
}

/* Hands the ends the memo gathered to the pins. */
static void ra_memo_flush(struct ra_plan *pl)
{
    for (unsigned i = 0; i < RA_MEMO; i++) {
        struct ra_memo *m = &pl->memo[i];
        if (m->used)
            ra_set_last(pl->ra, &m->k, m->to);
        m->used = false;
    }
}

/* The tiles of the read itself: all but the first (the caller starts
 * with it) go to the pool, so a read over several tiles decodes them on
 * every core. */
static int ra_plan_read(void *arg, struct tdb_frag *f, int field,
                        unsigned part, uint64_t t, uint64_t from, uint64_t to)
{
    struct ra_plan *pl = arg;
    struct tdb_tile_ref k = {f, field, part, t};
    /* the walk may go a cell past the read: such a tile is one ahead */
    if (from >= pl->end)
        return 0;
    if (ra_memo_seen(pl, &k, to))
        return 0;
    struct ra_ask a = {from, to, pl->ncur > 0, UINT64_MAX, UINT64_MAX,
                       UINT64_MAX, false, false};
    if (ra_want(pl->ra, &k, pl->epoch, &a) && pl->ncur < RA_MAX_CUR)
        pl->cur[pl->ncur++] = k;
    return 0;
}

/* The tiles after the read, while the pinned bytes stay within the
 * plan's limit; the first tile that does not fit ends the walk.  A tile
 * starting before the read's row of tiles ends (tiles that give a piece
 * per row of the view in turns) is pinned up to row_limit, so that reads
 * smaller than a row find every tile of it pinned and decode each once. */
static int ra_plan_ahead(void *arg, struct tdb_frag *f, int field,
                         unsigned part, uint64_t t, uint64_t from, uint64_t to)
{
    struct ra_plan *pl = arg;
    struct tdb_tile_ref k = {f, field, part, t};
    if (!ra_memo_seen(pl, &k, to)) {
        struct ra_ask a = {from,          to,          true, pl->limit,
                           pl->row_limit, pl->row_slab, false, true};
        ra_want(pl->ra, &k, pl->epoch, &a);
        if (a.full)
            return 1;
    }
    if (to > pl->pos)
        pl->pos = to;
    return 0;
}

/* Read `epoch` (from `off`) starts: it is one of the reads under way.
 * @return false when too many are (it then unpins nothing). */
static bool ra_begin(struct tdb_readahead *ra, uint64_t epoch, uint64_t off)
{
    if (ra->nact == RA_MAX_ACTIVE)
        return false;
    ra->act_epoch[ra->nact] = epoch;
    ra->act_off[ra->nact++] = off;
    return true;
}

/* Unpins what the reader no longer needs once read `epoch` is done with
 * the tiles before `off` (its start, or ending (`ending`: it is no longer
 * under way), its end): reading on (seq), the tiles whose bytes all lie
 * before `off`, before seen_to and before the start of every read under
 * way (reads may come in any order: which read wanted a tile last says
 * nothing then); else, ending, those this read did not want but those
 * another read under way (or a later one) wanted; ra->lock held. */
static void ra_unpin(struct tdb_readahead *ra, uint64_t epoch, bool seq,
                     uint64_t off, bool ending)
{
    uint64_t keep = UINT64_MAX; /* pins of this epoch or later stay */
    for (unsigned i = 0; i < ra->nact;) {
        if (ra->act_epoch[i] == epoch && ending) {
            ra->nact--;
            ra->act_epoch[i] = ra->act_epoch[ra->nact];
            ra->act_off[i] = ra->act_off[ra->nact];
            continue;
        }
        if (ra->act_epoch[i] != epoch && ra->act_epoch[i] < keep)
            keep = ra->act_epoch[i];
        if (ra->act_off[i] < off)
            off = ra->act_off[i];
        i++;
    }
    if (!seq && !ending)
        return;
    if (seq && ra->seen_to < off)
        off = ra->seen_to;
    for (size_t i = 0; i < ra->npins;) {
        struct ra_pin *p = &ra->pins[i];
        bool old = seq ? p->last <= off : p->epoch != epoch;
        if (old && !p->queued && (seq || p->epoch < keep))
            ra_drop_tile(ra, p, seq);
        else
            i++;
    }
}

/* Read rr is over (ra_unpin): in a dense view, where a tile's pieces end
 * is known, the tiles before its end go; elsewhere those before its start
 * (the walk ahead may not have seen a tile's later pieces yet). */
void tdb_readahead_end(struct tdb_readahead *ra, const struct tdb_ra_read *rr)
{
    if (!rr->active)
        return;
    pthread_mutex_lock(&ra->lock);
    ra_unpin(ra, rr->epoch, rr->seq, ra->slab ? rr->pend : rr->poff, true);
    pthread_cond_broadcast(&ra->moved);
    pthread_mutex_unlock(&ra->lock);
}

enum { RA_GO, RA_WAIT_END, RA_WAIT_COME };

/* Reading on from `off`, read `epoch` may have to wait before it pins
 * tiles of its own: when the pinned bytes are beyond the cache's budget
 * and some of them are tiles it passed, kept only for a read before it in
 * the file, under way (RA_WAIT_END) or not come yet (RA_WAIT_COME: the
 * kernel sends a few reads at once, and they may come in any order).
 * That read ends soon, and its tiles go before more are decoded (a cache
 * smaller than a row of tiles then holds one row, not two); ra->lock
 * held. */
static int ra_must_wait(struct tdb_readahead *ra, uint64_t epoch, uint64_t off)
{
    if (ra->pinned <= ra->budget)
        return RA_GO;
    bool passed = false;
    for (size_t i = 0; i < ra->npins && !passed; i++)
        passed = ra->pins[i].last <= off;
    if (!passed)
        return RA_GO;
    for (unsigned i = 0; i < ra->nact; i++)
        if (ra->act_epoch[i] != epoch && ra->act_off[i] < off)
            return RA_WAIT_END;
    return ra->seen_to < off ? RA_WAIT_COME : RA_GO;
}

/* Waits as ra_must_wait says (a read not come after RA_COME_NS is not
 * waited for); ra->lock held. */
static void ra_wait_turn(struct tdb_readahead *ra, uint64_t epoch, uint64_t off)
{
    struct timespec until = {0, 0};
    int w;
    while ((w = ra_must_wait(ra, epoch, off)) != RA_GO) {
        if (w == RA_WAIT_END) {
            pthread_cond_wait(&ra->moved, &ra->lock);
        } else {
            if (!until.tv_sec) {
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += RA_COME_NS;
                if (until.tv_nsec >= 1000000000) {
                    until.tv_sec++;
                    until.tv_nsec -= 1000000000;
                }
            }
            if (pthread_cond_timedwait(&ra->moved, &ra->lock, &until) != 0)
                break;
        }
        ra_unpin(ra, epoch, true, off, false);
    }
}

/* Reading on, bytes [lo, hi) are asked for: seen_to moves on over them
 * and the reads that came early; a read awaited longer than the kernel's
 * read-ahead would keep it (RA_SEQ_SLACK behind the newest) is given up
 * on.  ra->lock held. */
static void ra_seen(struct tdb_readahead *ra, uint64_t lo, uint64_t hi)
{
    if (lo > ra->seen_to) {
        if (ra->nearly == RA_MAX_AHEAD_READS) {
            ra->seen_to = lo; /* too many early reads: give the rest up */
            ra->nearly = 0;
        } else {
            ra->early_lo[ra->nearly] = lo;
            ra->early_hi[ra->nearly++] = hi;
        }
    }
    if (lo <= ra->seen_to && hi > ra->seen_to)
        ra->seen_to = hi;
    if (ra->next_off > RA_SEQ_SLACK && ra->seen_to < ra->next_off - RA_SEQ_SLACK)
        ra->seen_to = ra->next_off - RA_SEQ_SLACK;
    for (unsigned i = 0; i < ra->nearly;) {
        if (ra->early_lo[i] > ra->seen_to) {
            i++;
            continue;
        }
        if (ra->early_hi[i] > ra->seen_to)
            ra->seen_to = ra->early_hi[i];
        ra->nearly--;
        ra->early_lo[i] = ra->early_lo[ra->nearly];
        ra->early_hi[i] = ra->early_hi[ra->nearly];
        i = 0; /* seen_to moved: those before may join now */
    }
}

/* Starts a read of the field's bytes [poff, poff + plen): its epoch,
 * whether it follows the last (the kernel's read-ahead may send a few
 * requests out of order), and, reading on, the tiles already passed
 * unpinned; *ahead where reading ahead goes on from. */
static void ra_start(struct tdb_readahead *ra, uint64_t poff, size_t plen,
                     struct tdb_ra_read *rr, uint64_t *ahead)
{
    pthread_mutex_lock(&ra->lock);
    uint64_t epoch = ++ra->epoch;
    bool active = ra_begin(ra, epoch, poff);
    pthread_cond_broadcast(&ra->moved);
    bool seq = poff + RA_SEQ_SLACK >= ra->next_off &&
               poff <= ra->next_off + RA_SEQ_SLACK;
    if (!seq || poff + plen > ra->next_off)
        ra->next_off = poff + plen;
    if (!seq) {
        ra->ahead_pos = 0;
        ra->seen_to = poff;
        ra->nearly = 0;
    }
    ra_seen(ra, poff, poff + plen);
    *ahead = ra->ahead_pos > poff + plen ? ra->ahead_pos : poff + plen;
    /* reading on, the tiles already passed go before this read pins its
     * own: a cache smaller than a row then holds one row, not two */
    if (seq && active) {
        ra_unpin(ra, epoch, true, poff, false);
        ra_wait_turn(ra, epoch, poff);
    }
    pthread_mutex_unlock(&ra->lock);
    *rr = (struct tdb_ra_read){epoch, poff, poff + plen, seq, active,
                               seq ? ra->drop : 0};
}

/* Plans the tiles ahead of a sequential read, from `ahead` on, within
 * what the cache's budget leaves. */
static void ra_plan_more(struct tdb_readahead *ra, struct ra_plan *pl,
                             uint64_t ahead)
{
    pthread_mutex_lock(&ra->lock);
    uint64_t cur = 0;
    pl->row_slab = ra->slab ? 0 : UINT64_MAX;
    for (size_t i = 0; i < ra->npins; i++) {
        const struct ra_pin *p = &ra->pins[i];
        if (p->epoch != pl->epoch)
            continue;
        cur += p->bytes;
        if (ra_rows_known(ra, &p->k) && p->slab > pl->row_slab)
            pl->row_slab = p->slab;
    }
    /* ahead, no more than half of what the budget leaves beyond the
     * read's own tiles (a small cache: none; the read's tiles are decoded
     * on every core all the same): the other half is the next reads'
     * room, so that they never find the cache full of tiles decoded for
     * later ones */
    uint64_t more = ra->budget > cur ? (ra->budget - cur) / 2 : 0;
    if (more > ra->ahead_bytes)
        more = ra->ahead_bytes;
    pl->limit = cur + more;
    /* the rest of the read's row of tiles whatever the cache: in a dense
     * view, the tiles starting before its end; elsewhere the tiles of
     * RA_AHEAD_MIN bytes (where their pieces end is known only as far as
     * the walk went) */
    uint64_t row = ra->slab ? RA_ROW_MAX : RA_AHEAD_MIN;
    pl->row_limit = cur + (more > row ? more : row);
    pthread_mutex_unlock(&ra->lock);
    pl->pos = ahead;
    struct tdb_tile_plan tp = {ra_plan_ahead, pl, 0};
    tdb_fieldfile_tiles(ra->ff, ahead, RA_AHEAD_VIEW, &tp, NULL);
    ra_memo_flush(pl);
    pthread_mutex_lock(&ra->lock);
    if (pl->pos > ra->ahead_pos)
        ra->ahead_pos = pl->pos;
    pthread_mutex_unlock(&ra->lock);
}

uint64_t tdb_readahead_start(struct tdb_readahead *ra, uint64_t poff,
                             size_t plen, struct tdb_ra_read *rr)
{
    uint64_t ahead;
    /* the storage is asked for the bytes first: they travel while the
     * tiles are planned (fetch.c; nothing for local storage) */
    tdb_fetcher_read(ra->fetch, poff, plen);
    ra_start(ra, poff, plen, rr, &ahead);
    struct ra_plan pl;
    pl.ra = ra;
    pl.epoch = rr->epoch;
    pl.ncur = 0;
    pl.npieces = 0;
    pl.limit = pl.row_limit = pl.pos = 0;
    pl.row_slab = 0;
    pl.end = poff + plen;
    memset(pl.memo, 0, sizeof pl.memo);
    /* errors are the read's to report: a plan is only a hint */
    struct tdb_tile_plan tp = {ra_plan_read, &pl, 0};
    tdb_fieldfile_tiles(ra->ff, poff, plen, &tp, NULL);
    pl.npieces = tp.pieces;
    ra_memo_flush(&pl);
    if (rr->seq && ra->pool)
        ra_plan_more(ra, &pl, ahead);
    /* the read's own tiles, from its end back (the pool takes them from
     * the front): decoded before the read where the budget has room (the
     * copy takes the others one batch at a time) */
    for (unsigned i = pl.ncur; i-- > 0;)
        ra_pin_now(ra, &pl.cur[i]);
    return pl.npieces;
}

size_t tdb_readahead_cut(struct tdb_readahead *ra, uint64_t poff,
                         size_t plen)
{
    size_t cut = plen;
    pthread_mutex_lock(&ra->lock);
    if (ra->slab && ra->pinned > ra->budget)
        for (size_t i = 0; i < ra->npins; i++) {
            const struct ra_pin *p = &ra->pins[i];
            if (ra_rows_known(ra, &p->k) && p->last > poff &&
                p->last - poff < cut)
                cut = (size_t)(p->last - poff);
        }
    pthread_mutex_unlock(&ra->lock);
    return cut;
}

int tdb_readahead_new(struct tdb_readahead **out, struct tdb_fieldfile *ff,
                      struct tdb_pool *pool, uint64_t budget,
                      uint64_t file_size)
{
    struct tdb_readahead *ra = calloc(1, sizeof *ra);
    *out = NULL;
    if (!ra)
        return TDB_E_NOMEM;
    ra->pins = calloc(RA_MAX_PINS, sizeof *ra->pins);
    if (!ra->pins || tdb_fetcher_new(&ra->fetch, ff)) {
        free(ra->pins);
        free(ra);
        return TDB_E_NOMEM;
    }
    ra->ff = ff;
    ra->cs = ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
    ra->pool = pool;
    ra->budget = budget;
    ra->drop = TDB_CACHE_DROP;
    /* a file the cache cannot hold: a re-read would find none of the
     * tiles passed, which would only push out other files' */
    if (file_size > budget)
        ra->drop |= TDB_CACHE_DROP_NOW;
    if (pool) {
        /* the next row of tiles too, where the cache allows (a row of 16
         * tiles of 1 MiB, read in 1 MiB requests, each of which needs all
         * 16: decoded only half ahead, the row's first read waits); with
         * a cache smaller than that, what it leaves (tdb_readahead_start) */
        uint64_t a = budget / 4;
        ra->ahead_bytes = a < RA_AHEAD_MIN ? RA_AHEAD_MIN
                          : a > RA_AHEAD_MAX ? RA_AHEAD_MAX : a;
    }
    uint32_t nd;
    uint64_t shape[TDB_MAX_DIMS];
    if (tdb_cells_dense_shape(ff->cells, &nd, shape) && nd) {
        /* the first dimension that is more than one index wide */
        while (ra->slab_dim + 1 < nd && shape[ra->slab_dim] == 1)
            ra->slab_dim++;
        ra->slab = ra->cs;
        for (uint32_t d = ra->slab_dim + 1; d < nd && ra->slab; d++)
            ra->slab = shape[d] > UINT64_MAX / ra->slab ? 0
                                                        : ra->slab * shape[d];
    }
    pthread_mutex_init(&ra->lock, NULL);
    pthread_cond_init(&ra->idle, NULL);
    pthread_cond_init(&ra->done, NULL);
    pthread_cond_init(&ra->moved, NULL);
    *out = ra;
    return 0;
}

void tdb_readahead_free(struct tdb_readahead *ra)
{
    if (!ra)
        return;
    pthread_mutex_lock(&ra->lock);
    if (ra->pool)
        ra_cancel(ra, NULL, false);
    while (ra->pending)
        pthread_cond_wait(&ra->idle, &ra->lock);
    while (ra->npins)
        ra_drop(ra, &ra->pins[ra->npins - 1]);
    pthread_mutex_unlock(&ra->lock);
    pthread_mutex_destroy(&ra->lock);
    pthread_cond_destroy(&ra->idle);
    pthread_cond_destroy(&ra->done);
    pthread_cond_destroy(&ra->moved);
    tdb_fetcher_free(ra->fetch);
    free(ra->pins);
    free(ra);
}
