/* reader.c: reading one file of the mount contract on every core: the
 * tiles a read touches are decoded in parallel, and while a file is read
 * from start to end the tiles ahead of the reader are decoded by the tree's
 * pool of threads.  A reader's pins (struct rd_pin) keep the tiles of the
 * row of tiles it reads and those decoded ahead in the cache
 * (tdb_cache_keep: ahead of the LRU order, but never beyond the budget):
 * the read's row of tiles (in a dense view, where a tile's pieces end is
 * known, it goes once read past; a read waits for the one before it to let
 * its row go, and one that crosses into the next row reads the rows one
 * after the other), plus ahead a quarter of the cache (8 to 32 MiB) but no
 * more than half of what the budget leaves beyond the read's own tiles.
 *
 * Every tile is decoded within the cache's budget, so that however many
 * readers read, the cache holds at most its budget (or one tile, when a
 * tile is larger):
 *  - the pool's jobs and a read's own decodes start only when the budget
 *    has room now (TDB_CACHE_TRY; a tile ahead also leaves room for
 *    another as large), and never wait: a tile without room is left to
 *    the copy, and a tile ahead without room stops decoding ahead;
 *  - a read copies from the tiles the cache holds (TDB_TAKE_CACHED), then
 *    takes the tiles it did not find a batch at a time, the first of each
 *    once the budget has room for it (rd_copy): the only place a reader
 *    waits for room, holding no pin of the cache and no lock of its own.
 *    Keeps are no pins: a waiting load frees kept tiles, so a reader that
 *    stops reading holds no one up.  A cache smaller than a row of tiles
 *    thus decodes a tile once per read that touches it (a read copies a
 *    tile's pieces before it takes the next), not once per piece;
 *  - var-sized files (no positions without the offsets) are read as they
 *    come, loading within the budget (TDB_TAKE_WAIT).
 * On storage that fetches ahead (an object store), every read first asks
 * for the bytes of its tiles and, reading on, of a growing window ahead
 * (fetch.c): decoding threads then find them arrived or on their way.
 * Lock order: rd->lock, then the pool's or the cache's lock. */
#include "tree/reader.h"
#include "read/fetch.h"
#include "tree/ranges.h"
#include "tree/sink.h"
#include "tiledb_format.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RD_AHEAD_MIN (8u << 20)     /* decoded bytes pinned ahead: a */
#define RD_AHEAD_MAX (32u << 20)    /* quarter of the cache, within these */
#define RD_AHEAD_VIEW (256u << 20)  /* how far ahead in the file to look */
#define RD_ROW_MAX (16u << 20)      /* the rest of the read's row of tiles
                                     * is pinned up to this whatever the
                                     * cache (reads smaller than a row) */
#define RD_MAX_PINS 512
#define RD_SEQ_SLACK (4u << 20)     /* a read this close to the last one's
                                     * end goes on reading sequentially */
#define RD_MAX_ACTIVE 16            /* reads of one reader at once (the
                                     * kernel's read-ahead sends several) */
#define RD_MAX_AHEAD_READS 16       /* reads come before an earlier one */
#define RD_SLABS 8                  /* rows of tiles whose end is known */
#define RD_COME_NS 20000000         /* how long a read waits for the one
                                     * before it to come (rd_wait_turn) */

struct rd_tile {
    struct tdb_frag *f;
    int field;
    unsigned part;
    uint64_t t;
};

struct rd_pin {
    struct rd_tile k;
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
 * the least end its tiles were seen to give (rd_tile_end). */
struct rd_slab {
    uint64_t at, ext, end;
};

/* A tile decoded by the pool. */
struct rd_job {
    struct tdb_pool_job base;
    struct tdb_reader *rd;
    struct rd_tile k;
    unsigned flags;             /* of its load: TDB_CACHE_TRY, and for a
                                 * tile ahead of the reads TDB_CACHE_SPARE */
};

struct tdb_reader {
    struct tdb_fs *fs;
    uint64_t ino;
    struct tdb_fieldfile *ff;   /* a fixed-size field file; NULL: plain */
    struct tdb_fieldfile *vff;  /* a var-sized one (read as it comes) */
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
    struct rd_slab slabs[RD_SLABS];     /* the rows seen last (a ring) */
    unsigned nslabs, slab_next;
    /* the reads under way: their epochs and where they start (a read
     * ending never unpins the tiles another one still reads) */
    uint64_t act_epoch[RD_MAX_ACTIVE], act_off[RD_MAX_ACTIVE];
    unsigned nact;
    struct rd_pin *pins;
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
    uint64_t early_lo[RD_MAX_AHEAD_READS], early_hi[RD_MAX_AHEAD_READS];
    unsigned nearly;
    uint64_t head;              /* bytes before the field's (.npy header) */
    struct tdb_rangemaps *ranges;   /* NULL: no reads from the files */
    uint64_t ahead_pos;         /* decoding ahead was planned up to here */
};

static bool rd_same(const struct rd_tile *a, const struct rd_tile *b)
{
    return a->t == b->t && a->f == b->f && a->field == b->field &&
           a->part == b->part;
}

static struct rd_pin *rd_find(struct tdb_reader *rd, const struct rd_tile *k)
{
    for (size_t i = rd->npins; i-- > 0;)
        if (rd_same(&rd->pins[i].k, k))
            return &rd->pins[i];
    return NULL;
}

/* Forgets pin p (its entry released or never pinned; with `passed`, a
 * tile the reader read through: not kept in the cache); rd->lock held. */
static void rd_drop_tile(struct tdb_reader *rd, struct rd_pin *p, bool passed)
{
    if (p->e)
        tdb_cache_unkeep(p->k.f->arr->cache, p->e, passed ? rd->drop : 0);
    rd->pinned -= p->bytes;
    *p = rd->pins[--rd->npins];
}

static void rd_drop(struct tdb_reader *rd, struct rd_pin *p)
{
    rd_drop_tile(rd, p, false);
}

/* --------------------------------------------------------------- the pool */

/* Which of rd's jobs rd_cancel takes back. */
struct rd_cancel {
    const struct tdb_reader *rd;
    const struct rd_tile *k;
    bool ahead;
};

static bool rd_cancel_match(const struct tdb_pool_job *pj, void *arg)
{
    const struct rd_job *j = (const struct rd_job *)pj;
    const struct rd_cancel *c = arg;
    return j->rd == c->rd && (!c->k || rd_same(&j->k, c->k)) &&
           (!c->ahead || (j->flags & TDB_CACHE_SPARE));
}

/* Takes back rd's jobs that no thread has started: only the one for k
 * when k is not NULL, only those of tiles ahead (their pins go too) with
 * `ahead`; rd->lock held.  @return how many. */
static unsigned rd_cancel(struct tdb_reader *rd, const struct rd_tile *k,
                          bool ahead)
{
    struct rd_cancel c = {rd, k, ahead};
    struct tdb_pool_job *l = tdb_pool_take(rd->pool, rd_cancel_match, &c);
    unsigned n = 0;
    while (l) {
        struct rd_job *j = (struct rd_job *)l;
        l = l->next;
        struct rd_pin *pin = rd_find(rd, &j->k);
        if (pin)
            pin->queued = false;
        if (pin && ahead && !pin->e)
            rd_drop(rd, pin);
        rd->pending--;
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
static void rd_job_done(struct tdb_reader *rd, const struct rd_job *j,
                        int r, struct tdb_cache_entry *e)
{
    const struct rd_tile *k = &j->k;
    pthread_mutex_lock(&rd->lock);
    if (r == 1 && (j->flags & TDB_CACHE_SPARE)) {
        rd_cancel(rd, NULL, true);
        rd->ahead_pos = 0;
    }
    struct rd_pin *p = rd_find(rd, k);
    if (p)
        p->queued = false;
    if (p && !p->e && e) {
        tdb_cache_keep(k->f->arr->cache, e);
        p->e = e;
        e = NULL;
    } else if (p && !p->e) {
        rd_drop(rd, p);
    }
    if (e)
        tdb_cache_release(k->f->arr->cache, e); /* pinned twice */
    if (--rd->pending == 0)
        pthread_cond_broadcast(&rd->idle);
    pthread_cond_broadcast(&rd->done);
    pthread_mutex_unlock(&rd->lock);
}

/* A job of the pool: decodes its tile. */
static void rd_job_run(struct tdb_pool_job *pj)
{
    struct rd_job *j = (struct rd_job *)pj;
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    int r = tdb_frag_tile_flags(j->k.f, j->k.field, j->k.part, j->k.t,
                                j->flags, &e, &tile, NULL);
    rd_job_done(j->rd, j, r, r == 0 ? e : NULL);
    free(j);
}

/* ------------------------------------------------------------ the reader */

/* What rd_want is asked and tells. */
struct rd_ask {
    uint64_t from, last;    /* the piece of the file the tile gives */
    bool submit;            /* queue its decoding for the pool */
    uint64_t cap;           /* a new pin must keep the pinned bytes within
                             * this, */
    uint64_t row_cap;       /* or this for a tile of the read's rows: */
    uint64_t row_slab;      /* in a dense view, at most this row of tiles
                             * (rd_tile_slab); else any */
    bool full;              /* set: the tile was not pinned (no room) */
    bool ahead;             /* a tile after the read: decoded only while
                             * the cache keeps room for another as large */
};

/* True when where tile k's pieces end is known (a dense fragment's tile
 * in a dense view: they lie within ext indices along slab_dim). */
static bool rd_rows_known(const struct tdb_reader *rd, const struct rd_tile *k)
{
    return rd->slab && k->f->fm->dense && k->f->ext[rd->slab_dim] &&
           rd->slab_dim < k->f->fs->ndims;
}

/* Where tile k's pieces end at the latest, one of them starting at
 * `from` (rd_rows_known). */
static uint64_t rd_tile_end(const struct tdb_reader *rd,
                            const struct rd_tile *k, uint64_t from)
{
    uint64_t i = from / rd->slab + k->f->ext[rd->slab_dim];
    return i > UINT64_MAX / rd->slab ? UINT64_MAX : i * rd->slab;
}

/* The index along slab_dim of dense tile k in the array's tile grid. */
static uint64_t rd_tile_slab(const struct tdb_reader *rd,
                             const struct rd_tile *k)
{
    const struct tdb_frag *f = k->f;
    uint32_t nd = f->fs->ndims, d = rd->slab_dim;
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
 * rd->lock held. */
static void rd_pin_end(struct tdb_reader *rd, struct rd_pin *p,
                       uint64_t from)
{
    uint64_t ext = p->k.f->ext[rd->slab_dim], end = rd_tile_end(rd, &p->k, from);
    struct rd_slab *sl = NULL;
    for (unsigned i = 0; i < rd->nslabs && !sl; i++)
        if (rd->slabs[i].at == p->slab && rd->slabs[i].ext == ext)
            sl = &rd->slabs[i];
    if (!sl) {
        sl = &rd->slabs[rd->slab_next];
        rd->slab_next = (rd->slab_next + 1) % RD_SLABS;
        if (rd->nslabs < RD_SLABS)
            rd->nslabs++;
        *sl = (struct rd_slab){p->slab, ext, end};
    } else if (end < sl->end) {
        sl->end = end;
        for (size_t i = 0; i < rd->npins; i++) {
            struct rd_pin *q = &rd->pins[i];
            if (q->slab == p->slab && rd_rows_known(rd, &q->k) &&
                q->k.f->ext[rd->slab_dim] == ext && q->last > end)
                q->last = end;
        }
    }
    p->last = sl->end;
}

/* Wants tile k for read `epoch`: pinned now if in the cache, else
 * recorded (to be decoded by the reader) and, with a->submit, queued for
 * the pool.  @return true when the tile is not pinned yet (the first time
 * this read wants it). */
static bool rd_want(struct tdb_reader *rd, const struct rd_tile *k,
                    uint64_t epoch, struct rd_ask *a)
{
    uint64_t last = a->last;
    pthread_mutex_lock(&rd->lock);
    struct rd_pin *p = rd_find(rd, k);
    if (p) {
        bool unpinned = p->epoch != epoch && !p->e;
        p->epoch = epoch;
        if (last > p->last)
            p->last = last;
        if (rd_rows_known(rd, k) && a->from < p->last)
            rd_pin_end(rd, p, a->from);
        pthread_mutex_unlock(&rd->lock);
        return unpinned;
    }
    uint64_t bytes = tdb_frag_tile_cells(k->f, k->t) * rd->cs;
    bool known = rd_rows_known(rd, k);
    uint64_t slab = known ? rd_tile_slab(rd, k) : 0;
    uint64_t cap = slab <= a->row_slab ? a->row_cap : a->cap;
    if (rd->npins == RD_MAX_PINS || rd->pinned + bytes > cap) {
        a->full = true;
        pthread_mutex_unlock(&rd->lock);
        return false;
    }
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    int r = tdb_frag_tile_flags(k->f, k->field, k->part, k->t,
                                TDB_CACHE_PEEK | TDB_CACHE_NOWAIT, &e, &tile,
                                NULL);
    if (r == 0)
        tdb_cache_keep(k->f->arr->cache, e);
    struct rd_job *j = NULL;
    if (r != 0 && a->submit && rd->pool)
        j = calloc(1, sizeof *j);
    p = &rd->pins[rd->npins++];
    *p = (struct rd_pin){*k, r == 0 ? e : NULL, j != NULL, epoch, last, bytes,
                         slab};
    if (known)
        rd_pin_end(rd, p, a->from);
    rd->pinned += bytes;
    if (j) {
        j->base.run = rd_job_run;
        j->rd = rd;
        j->k = *k;
        j->flags = TDB_CACHE_TRY | (a->ahead ? TDB_CACHE_SPARE : 0);
        rd->pending++;
        tdb_pool_submit(rd->pool, &j->base);
    }
    pthread_mutex_unlock(&rd->lock);
    return true;
}

/* Keeps tile k in the calling thread (decoding it, when the cache has
 * room, unless a job is already doing so: the read then waits for that
 * one; without room the tile is left to rd_copy).  Beyond the budget,
 * a queued job is taken back and done here only while no other read of rd
 * decodes itself: the kernel sends several reads at once, and each
 * decoding the row's tiles beside the pool's threads would only hold more
 * tiles half decoded (and their working memory) than there are cores. */
static void rd_pin_now(struct tdb_reader *rd, const struct rd_tile *k)
{
    pthread_mutex_lock(&rd->lock);
    struct rd_pin *p = rd_find(rd, k);
    /* a thread decodes it already: wait for that (decoding it here too
     * could decode it twice, when the cache lets this copy go before the
     * thread looks the tile up) */
    while (p && !p->e && p->queued &&
           ((rd->decoding > 0 && rd->pinned > rd->budget) ||
            rd_cancel(rd, k, false) == 0)) {
        pthread_cond_wait(&rd->done, &rd->lock);
        p = rd_find(rd, k);
    }
    bool mine = p && !p->e;
    if (mine)
        rd->decoding++;
    pthread_mutex_unlock(&rd->lock);
    if (!mine)
        return;
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    /* an error is the read's to report */
    int r = tdb_frag_tile_flags(k->f, k->field, k->part, k->t, TDB_CACHE_TRY,
                                &e, &tile, NULL);
    pthread_mutex_lock(&rd->lock);
    rd->decoding--;
    pthread_cond_broadcast(&rd->done);
    p = r >= 0 ? rd_find(rd, k) : NULL;
    if (r == 0 && p && !p->e) {
        tdb_cache_keep(k->f->arr->cache, e);
        p->e = e;
        e = NULL;
    } else if (r == 1 && p && !p->e && !p->queued) {
        rd_drop(rd, p);     /* no room: not kept */
    }
    if (r == 0 && e)
        tdb_cache_release(k->f->arr->cache, e);
    pthread_mutex_unlock(&rd->lock);
}

#define RD_MAX_CUR 256
#define RD_MEMO 64

/* A tile a plan has seen, and the end of its last piece so far. */
struct rd_memo {
    struct rd_tile k;
    uint64_t to;
    bool used;
};

struct rd_plan {
    struct tdb_reader *rd;
    uint64_t epoch;
    unsigned ncur;      /* tiles of the read so far */
    uint64_t npieces;   /* pieces of tiles the read gives */
    struct rd_tile cur[RD_MAX_CUR];
    uint64_t limit;     /* decoding ahead stops at these pinned bytes, */
    uint64_t row_limit; /* or these for a tile of the read's rows: */
    uint64_t row_slab;  /* those up to this one (a dense view; else any) */
    uint64_t pos;       /* end of the last piece planned */
    uint64_t end;       /* the read's end */
    /* a tile gives a piece per row of the view (per cell, in a sparse
     * merge): the tiles seen lately, so that a piece of one of them costs
     * no lock */
    struct rd_memo memo[RD_MEMO];
};

/* Raises the end of tile k's bytes to `to` (its pin, if any). */
static void rd_set_last(struct tdb_reader *rd, const struct rd_tile *k,
                        uint64_t to)
{
    pthread_mutex_lock(&rd->lock);
    struct rd_pin *p = rd_find(rd, k);
    if (p && to > p->last)
        p->last = to;
    pthread_mutex_unlock(&rd->lock);
}

/* True when the plan saw tile k lately (its end is raised to `to`); else
 * it is remembered now, and the caller wants it. */
static bool rd_memo_seen(struct rd_plan *pl, const struct rd_tile *k,
                         uint64_t to)
{
    uint64_t h = ((uint64_t)(uintptr_t)k->f >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)k->field * 31 + k->part * 7 + k->t * 0xC2B2AE3D27D4EB4Full;
    struct rd_memo *m = &pl->memo[(h ^ (h >> 29)) % RD_MEMO];
    if (m->used && rd_same(&m->k, k)) {
        if (to > m->to)
            m->to = to;
        return true;
    }
    if (m->used)
        rd_set_last(pl->rd, &m->k, m->to);
    *m = (struct rd_memo){*k, to, true};
    return false;
}

/* Hands the ends the memo gathered to the pins. */
static void rd_memo_flush(struct rd_plan *pl)
{
    for (unsigned i = 0; i < RD_MEMO; i++) {
        struct rd_memo *m = &pl->memo[i];
        if (m->used)
            rd_set_last(pl->rd, &m->k, m->to);
        m->used = false;
    }
}

/* The tiles of the read itself: all but the first (the caller starts
 * with it) go to the pool, so a read over several tiles decodes them on
 * every core. */
static int rd_plan_read(void *arg, struct tdb_frag *f, int field,
                        unsigned part, uint64_t t, uint64_t from, uint64_t to)
{
    struct rd_plan *pl = arg;
    struct rd_tile k = {f, field, part, t};
    /* the walk may go a cell past the read: such a tile is one ahead */
    if (from >= pl->end)
        return 0;
    if (rd_memo_seen(pl, &k, to))
        return 0;
    struct rd_ask a = {from, to, pl->ncur > 0, UINT64_MAX, UINT64_MAX,
                       UINT64_MAX, false, false};
    if (rd_want(pl->rd, &k, pl->epoch, &a) && pl->ncur < RD_MAX_CUR)
        pl->cur[pl->ncur++] = k;
    return 0;
}

/* The tiles after the read, while the pinned bytes stay within the
 * plan's limit; the first tile that does not fit ends the walk.  A tile
 * starting before the read's row of tiles ends (tiles that give a piece
 * per row of the view in turns) is pinned up to row_limit, so that reads
 * smaller than a row find every tile of it pinned and decode each once. */
static int rd_plan_ahead(void *arg, struct tdb_frag *f, int field,
                         unsigned part, uint64_t t, uint64_t from, uint64_t to)
{
    struct rd_plan *pl = arg;
    struct rd_tile k = {f, field, part, t};
    if (!rd_memo_seen(pl, &k, to)) {
        struct rd_ask a = {from,          to,          true, pl->limit,
                           pl->row_limit, pl->row_slab, false, true};
        rd_want(pl->rd, &k, pl->epoch, &a);
        if (a.full)
            return 1;
    }
    if (to > pl->pos)
        pl->pos = to;
    return 0;
}

/* Read `epoch` (from `off`) starts: it is one of the reads under way.
 * @return false when too many are (it then unpins nothing). */
static bool rd_begin(struct tdb_reader *rd, uint64_t epoch, uint64_t off)
{
    if (rd->nact == RD_MAX_ACTIVE)
        return false;
    rd->act_epoch[rd->nact] = epoch;
    rd->act_off[rd->nact++] = off;
    return true;
}

/* Unpins what the reader no longer needs once read `epoch` is done with
 * the tiles before `off` (its start, or ending (`ending`: it is no longer
 * under way), its end): reading on (seq), the tiles whose bytes all lie
 * before `off`, before seen_to and before the start of every read under
 * way (reads may come in any order: which read wanted a tile last says
 * nothing then); else, ending, those this read did not want but those
 * another read under way (or a later one) wanted; rd->lock held. */
static void rd_unpin(struct tdb_reader *rd, uint64_t epoch, bool seq,
                     uint64_t off, bool ending)
{
    uint64_t keep = UINT64_MAX; /* pins of this epoch or later stay */
    for (unsigned i = 0; i < rd->nact;) {
        if (rd->act_epoch[i] == epoch && ending) {
            rd->nact--;
            rd->act_epoch[i] = rd->act_epoch[rd->nact];
            rd->act_off[i] = rd->act_off[rd->nact];
            continue;
        }
        if (rd->act_epoch[i] != epoch && rd->act_epoch[i] < keep)
            keep = rd->act_epoch[i];
        if (rd->act_off[i] < off)
            off = rd->act_off[i];
        i++;
    }
    if (!seq && !ending)
        return;
    if (seq && rd->seen_to < off)
        off = rd->seen_to;
    for (size_t i = 0; i < rd->npins;) {
        struct rd_pin *p = &rd->pins[i];
        bool old = seq ? p->last <= off : p->epoch != epoch;
        if (old && !p->queued && (seq || p->epoch < keep))
            rd_drop_tile(rd, p, seq);
        else
            i++;
    }
}

/* Read `epoch`, of bytes [off, end), is over (rd_unpin): in a dense
 * view, where a tile's pieces end is known, the tiles before its end go;
 * elsewhere those before its start (the walk ahead may not have seen a
 * tile's later pieces yet). */
static void rd_trim(struct tdb_reader *rd, uint64_t epoch, bool seq,
                    uint64_t off, uint64_t end, bool active)
{
    if (!active)
        return;
    pthread_mutex_lock(&rd->lock);
    rd_unpin(rd, epoch, seq, rd->slab ? end : off, true);
    pthread_cond_broadcast(&rd->moved);
    pthread_mutex_unlock(&rd->lock);
}

enum { RD_GO, RD_WAIT_END, RD_WAIT_COME };

/* Reading on from `off`, read `epoch` may have to wait before it pins
 * tiles of its own: when the pinned bytes are beyond the cache's budget
 * and some of them are tiles it passed, kept only for a read before it in
 * the file, under way (RD_WAIT_END) or not come yet (RD_WAIT_COME: the
 * kernel sends a few reads at once, and they may come in any order).
 * That read ends soon, and its tiles go before more are decoded (a cache
 * smaller than a row of tiles then holds one row, not two); rd->lock
 * held. */
static int rd_must_wait(struct tdb_reader *rd, uint64_t epoch, uint64_t off)
{
    if (rd->pinned <= rd->budget)
        return RD_GO;
    bool passed = false;
    for (size_t i = 0; i < rd->npins && !passed; i++)
        passed = rd->pins[i].last <= off;
    if (!passed)
        return RD_GO;
    for (unsigned i = 0; i < rd->nact; i++)
        if (rd->act_epoch[i] != epoch && rd->act_off[i] < off)
            return RD_WAIT_END;
    return rd->seen_to < off ? RD_WAIT_COME : RD_GO;
}

/* Waits as rd_must_wait says (a read not come after RD_COME_NS is not
 * waited for); rd->lock held. */
static void rd_wait_turn(struct tdb_reader *rd, uint64_t epoch, uint64_t off)
{
    struct timespec until = {0, 0};
    int w;
    while ((w = rd_must_wait(rd, epoch, off)) != RD_GO) {
        if (w == RD_WAIT_END) {
            pthread_cond_wait(&rd->moved, &rd->lock);
        } else {
            if (!until.tv_sec) {
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += RD_COME_NS;
                if (until.tv_nsec >= 1000000000) {
                    until.tv_sec++;
                    until.tv_nsec -= 1000000000;
                }
            }
            if (pthread_cond_timedwait(&rd->moved, &rd->lock, &until) != 0)
                break;
        }
        rd_unpin(rd, epoch, true, off, false);
    }
}

int tdb_reader_open(struct tdb_reader **out, struct tdb_fs *fs, uint64_t ino,
                    struct tdb_error *err)
{
    struct tdb_stat st;
    if (tdb_fs_hold(fs, ino))
        return tdb_err(err, TDB_E_NOENT, "no inode %llu",
                       (unsigned long long)ino);
    int r = tdb_fs_stat(fs, ino, &st, err);
    if (!r && st.is_dir)
        r = tdb_err(err, TDB_E_ISDIR, "inode %llu: a folder",
                    (unsigned long long)ino);
    struct tdb_reader *rd = r ? NULL : calloc(1, sizeof *rd);
    if (!r && !rd)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (r) {
        tdb_fs_unhold(fs, ino);
        return r;
    }
    rd->fs = fs;
    rd->ino = ino;
    rd->drop = TDB_CACHE_DROP;
    rd->ff = tdb_fs_fieldfile(fs, ino, &rd->head);
    if (rd->ff && (!rd->ff->var || rd->ff->part == TDB_FILE_VALIDITY)) {
        rd->cs = rd->ff->part == TDB_FILE_VALIDITY ? 1 : rd->ff->cell_size;
        rd->pins = calloc(RD_MAX_PINS, sizeof *rd->pins);
        if (!rd->pins) {
            free(rd);
            tdb_fs_unhold(fs, ino);
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        }
        rd->pool = tdb_fs_pool(fs);
        if (tdb_fetcher_new(&rd->fetch, rd->ff)) {
            free(rd->pins);
            free(rd);
            tdb_fs_unhold(fs, ino);
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        }
    } else if (rd->ff) {
        rd->vff = rd->head ? NULL : rd->ff;
        rd->ff = NULL; /* var-sized: positions need the offsets */
    }
    if (rd->pool) {
        /* the next row of tiles too, where the cache allows (a row of 16
         * tiles of 1 MiB, read in 1 MiB requests, each of which needs all
         * 16: decoded only half ahead, the row's first read waits); with
         * a cache smaller than that, what it leaves (rd_prepare) */
        struct tdb_cache_stats cs;
        tdb_fs_cache_stats(fs, &cs);
        uint64_t a = cs.budget / 4;
        rd->ahead_bytes = a < RD_AHEAD_MIN ? RD_AHEAD_MIN
                          : a > RD_AHEAD_MAX ? RD_AHEAD_MAX : a;
    }
    uint32_t nd;
    uint64_t shape[TDB_MAX_DIMS];
    if (rd->ff) {
        struct tdb_cache_stats cs;
        tdb_fs_cache_stats(fs, &cs);
        rd->budget = cs.budget;
        /* a file the cache cannot hold: a re-read would find none of the
         * tiles passed, which would only push out other files' */
        if (st.size > cs.budget)
            rd->drop |= TDB_CACHE_DROP_NOW;
        if (tdb_cells_dense_shape(rd->ff->cells, &nd, shape) && nd) {
            /* the first dimension that is more than one index wide */
            while (rd->slab_dim + 1 < nd && shape[rd->slab_dim] == 1)
                rd->slab_dim++;
            rd->slab = rd->cs;
            for (uint32_t d = rd->slab_dim + 1; d < nd && rd->slab; d++)
                rd->slab = shape[d] > UINT64_MAX / rd->slab ? 0
                                                            : rd->slab * shape[d];
        }
    }
    if (rd->ff && !rd->ff->var && rd->ff->part == TDB_FILE_VALUES &&
        tdb_io_dup_fd(&rd->ff->arr->io, NULL) == 0)
        rd->ranges = tdb_rangemaps_new();
    pthread_mutex_init(&rd->lock, NULL);
    pthread_cond_init(&rd->idle, NULL);
    pthread_cond_init(&rd->done, NULL);
    pthread_cond_init(&rd->moved, NULL);
    *out = rd;
    return 0;
}

/* Reading on, bytes [lo, hi) are asked for: seen_to moves on over them
 * and the reads that came early; a read awaited longer than the kernel's
 * read-ahead would keep it (RD_SEQ_SLACK behind the newest) is given up
 * on.  rd->lock held. */
static void rd_seen(struct tdb_reader *rd, uint64_t lo, uint64_t hi)
{
    if (lo > rd->seen_to) {
        if (rd->nearly == RD_MAX_AHEAD_READS) {
            rd->seen_to = lo; /* too many early reads: give the rest up */
            rd->nearly = 0;
        } else {
            rd->early_lo[rd->nearly] = lo;
            rd->early_hi[rd->nearly++] = hi;
        }
    }
    if (lo <= rd->seen_to && hi > rd->seen_to)
        rd->seen_to = hi;
    if (rd->next_off > RD_SEQ_SLACK && rd->seen_to < rd->next_off - RD_SEQ_SLACK)
        rd->seen_to = rd->next_off - RD_SEQ_SLACK;
    for (unsigned i = 0; i < rd->nearly;) {
        if (rd->early_lo[i] > rd->seen_to) {
            i++;
            continue;
        }
        if (rd->early_hi[i] > rd->seen_to)
            rd->seen_to = rd->early_hi[i];
        rd->nearly--;
        rd->early_lo[i] = rd->early_lo[rd->nearly];
        rd->early_hi[i] = rd->early_hi[rd->nearly];
        i = 0; /* seen_to moved: those before may join now */
    }
}

/* One read under way: what ending it needs. */
struct rd_read {
    uint64_t epoch, poff, pend;
    bool seq, active;
};

/* Starts a read of the field's bytes [poff, poff + plen): its epoch,
 * whether it follows the last (the kernel's read-ahead may send a few
 * requests out of order), and, reading on, the tiles already passed
 * unpinned; *ahead where reading ahead goes on from. */
static void rd_start(struct tdb_reader *rd, uint64_t poff, size_t plen,
                     struct rd_read *rr, uint64_t *ahead)
{
    pthread_mutex_lock(&rd->lock);
    uint64_t epoch = ++rd->epoch;
    bool active = rd_begin(rd, epoch, poff);
    pthread_cond_broadcast(&rd->moved);
    bool seq = poff + RD_SEQ_SLACK >= rd->next_off &&
               poff <= rd->next_off + RD_SEQ_SLACK;
    if (!seq || poff + plen > rd->next_off)
        rd->next_off = poff + plen;
    if (!seq) {
        rd->ahead_pos = 0;
        rd->seen_to = poff;
        rd->nearly = 0;
    }
    rd_seen(rd, poff, poff + plen);
    *ahead = rd->ahead_pos > poff + plen ? rd->ahead_pos : poff + plen;
    /* reading on, the tiles already passed go before this read pins its
     * own: a cache smaller than a row then holds one row, not two */
    if (seq && active) {
        rd_unpin(rd, epoch, true, poff, false);
        rd_wait_turn(rd, epoch, poff);
    }
    pthread_mutex_unlock(&rd->lock);
    *rr = (struct rd_read){epoch, poff, poff + plen, seq, active};
}

/* Plans the tiles ahead of a sequential read, from `ahead` on, within
 * what the cache's budget leaves. */
static void rd_prepare_ahead(struct tdb_reader *rd, struct rd_plan *pl,
                             uint64_t ahead)
{
    pthread_mutex_lock(&rd->lock);
    uint64_t cur = 0;
    pl->row_slab = rd->slab ? 0 : UINT64_MAX;
    for (size_t i = 0; i < rd->npins; i++) {
        const struct rd_pin *p = &rd->pins[i];
        if (p->epoch != pl->epoch)
            continue;
        cur += p->bytes;
        if (rd_rows_known(rd, &p->k) && p->slab > pl->row_slab)
            pl->row_slab = p->slab;
    }
    /* ahead, no more than half of what the budget leaves beyond the
     * read's own tiles (a small cache: none; the read's tiles are decoded
     * on every core all the same): the other half is the next reads'
     * room, so that they never find the cache full of tiles decoded for
     * later ones */
    uint64_t more = rd->budget > cur ? (rd->budget - cur) / 2 : 0;
    if (more > rd->ahead_bytes)
        more = rd->ahead_bytes;
    pl->limit = cur + more;
    /* the rest of the read's row of tiles whatever the cache: in a dense
     * view, the tiles starting before its end; elsewhere the tiles of
     * RD_AHEAD_MIN bytes (where their pieces end is known only as far as
     * the walk went) */
    uint64_t row = rd->slab ? RD_ROW_MAX : RD_AHEAD_MIN;
    pl->row_limit = cur + (more > row ? more : row);
    pthread_mutex_unlock(&rd->lock);
    pl->pos = ahead;
    tdb_fieldfile_tiles(rd->ff, ahead, RD_AHEAD_VIEW, rd_plan_ahead, pl,
                        NULL, NULL);
    rd_memo_flush(pl);
    pthread_mutex_lock(&rd->lock);
    if (pl->pos > rd->ahead_pos)
        rd->ahead_pos = pl->pos;
    pthread_mutex_unlock(&rd->lock);
}

/* Plans the tiles of the field's bytes [poff, poff + plen) and pins them
 * (a read starts: end it with rd_trim).  @return the pieces of tiles the
 * read gives. */
static uint64_t rd_prepare(struct tdb_reader *rd, uint64_t poff, size_t plen,
                           struct rd_read *rr)
{
    uint64_t ahead;
    /* the storage is asked for the bytes first: they travel while the
     * tiles are planned (fetch.c; nothing for local storage) */
    tdb_fetcher_read(rd->fetch, poff, plen);
    rd_start(rd, poff, plen, rr, &ahead);
    struct rd_plan pl;
    pl.rd = rd;
    pl.epoch = rr->epoch;
    pl.ncur = 0;
    pl.npieces = 0;
    pl.limit = pl.row_limit = pl.pos = 0;
    pl.row_slab = 0;
    pl.end = poff + plen;
    memset(pl.memo, 0, sizeof pl.memo);
    /* errors are the read's to report: a plan is only a hint */
    tdb_fieldfile_tiles(rd->ff, poff, plen, rd_plan_read, &pl, &pl.npieces,
                        NULL);
    rd_memo_flush(&pl);
    if (rr->seq && rd->pool)
        rd_prepare_ahead(rd, &pl, ahead);
    /* the read's own tiles, from its end back (the pool takes them from
     * the front): decoded before the read where the budget has room (the
     * copy takes the others one batch at a time) */
    for (unsigned i = pl.ncur; i-- > 0;)
        rd_pin_now(rd, &pl.cur[i]);
    return pl.npieces;
}

/* How much of the field's bytes [poff, poff + plen) to read before the
 * rest: up to where a row of tiles pinned now ends, when the cache is over
 * its budget (a read across two rows of tiles then holds one at a time:
 * the kernel's 1 MiB reads rarely start where a row does); else plen. */
static size_t rd_row_cut(struct tdb_reader *rd, uint64_t poff, size_t plen)
{
    size_t cut = plen;
    pthread_mutex_lock(&rd->lock);
    if (rd->slab && rd->pinned > rd->budget)
        for (size_t i = 0; i < rd->npins; i++) {
            const struct rd_pin *p = &rd->pins[i];
            if (rd_rows_known(rd, &p->k) && p->last > poff &&
                p->last - poff < cut)
                cut = (size_t)(p->last - poff);
        }
    pthread_mutex_unlock(&rd->lock);
    return cut;
}

/* ------------------------------------------------------------ copying */

#define RD_BATCH 64     /* tiles rd_copy_missing holds at once */

/* The tiles a read found missing from the cache (rd_copy). */
struct rd_missing {
    struct rd_tile *k;
    size_t n, cap;
    bool nomem;
};

static void rd_missed(void *arg, struct tdb_frag *f, int field,
                      unsigned part, uint64_t t)
{
    struct rd_missing *m = arg;
    struct rd_tile k = {f, field, part, t};
    if (m->n && rd_same(&m->k[m->n - 1], &k))
        return;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct rd_tile *nk = realloc(m->k, cap * sizeof *nk);
        if (!nk) {
            m->nomem = true;
            return;
        }
        m->k = nk;
        m->cap = cap;
    }
    m->k[m->n++] = k;
}

static int rd_tile_cmp(const void *pa, const void *pb)
{
    const struct rd_tile *a = pa, *b = pb;
    uintptr_t fa = (uintptr_t)a->f, fb = (uintptr_t)b->f;
    if (fa != fb)
        return fa < fb ? -1 : 1;
    if (a->field != b->field)
        return a->field < b->field ? -1 : 1;
    if (a->part != b->part)
        return a->part < b->part ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* Copies the pieces of the tiles m lists (those rq, a TDB_TAKE_CACHED
 * read, left out), a batch of tiles at a time: the first of each loaded
 * once the budget has room for it (nothing pinned meanwhile), more while
 * it has room now; then the read again from the tiles cached. */
static int rd_copy_missing(struct tdb_fieldfile *ff, struct tdb_fieldread *rq,
                           struct rd_missing *m, struct tdb_error *err)
{
    qsort(m->k, m->n, sizeof *m->k, rd_tile_cmp);
    struct tdb_cache_entry *held[RD_BATCH];
    int r = 0;
    rq->missed = NULL;
    for (size_t i = 0, n = 0; i < m->n && !r; i += n) {
        const struct tdb_tile *tl;
        unsigned flags = TDB_CACHE_WAIT;
        for (n = 0; i + n < m->n && n < RD_BATCH; n++) {
            const struct rd_tile *k = &m->k[i + n];
            if (n && rd_same(k, &m->k[i + n - 1])) {
                held[n] = NULL;
                continue;
            }
            r = tdb_frag_tile_flags(k->f, k->field, k->part, k->t, flags,
                                    &held[n], &tl, err);
            if (r)
                break;
            flags = TDB_CACHE_TRY;
        }
        if (r == 1)
            r = 0;
        if (!r)
            r = tdb_fieldfile_read_how(ff, rq, err);
        for (size_t j = 0; j < n; j++)
            tdb_cache_release(ff->arr->cache, held[j]);
    }
    return r;
}

/* The field's bytes [poff, poff + len) into buf (*got bytes), whatever
 * the cache holds: from the tiles it holds, then the others loaded within
 * the budget (rd_copy_missing).  The caller holds no pin. */
static int rd_copy(struct tdb_reader *rd, uint64_t poff, void *buf,
                   size_t len, size_t *got, struct tdb_error *err)
{
    struct rd_missing m = {NULL, 0, 0, false};
    struct tdb_fieldread rq = {poff, buf, len, 0, TDB_TAKE_CACHED, rd_missed,
                               &m};
    int r = tdb_fieldfile_read_how(rd->ff, &rq, err);
    if (!r && m.nomem) {
        rq.take = TDB_TAKE_WAIT;
        rq.missed = NULL;
        r = tdb_fieldfile_read_how(rd->ff, &rq, err);
    } else if (!r && m.n) {
        r = rd_copy_missing(rd->ff, &rq, &m, err);
    }
    free(m.k);
    *got = rq.got;
    return r;
}

/* The file's bytes [off, off + len): a header's (.npy) first, then the
 * field's from poff on. */
static int rd_read_copy(struct tdb_reader *rd, uint64_t poff, uint64_t off,
                        void *buf, size_t len, size_t *got,
                        struct tdb_error *err)
{
    size_t h = off < rd->head ? (size_t)(rd->head - off) : 0, more = 0;
    if (h > len)
        h = len;
    int r = h ? tdb_fs_read(rd->fs, rd->ino, off, buf, h, got, err) : 0;
    if (!r && h < len)
        r = rd_copy(rd, poff, (uint8_t *)buf + h, len - h, &more, err);
    *got = r ? 0 : h + more;
    return r;
}

/* Plans the tiles of the field's bytes [poff, poff + plen), then reads the
 * file's bytes [off, off + len) (which end where those do), a row of tiles
 * at a time where rd_row_cut says so. */
static int rd_read_planned(struct tdb_reader *rd, uint64_t poff, size_t plen,
                           uint64_t off, void *buf, size_t len, size_t *got,
                           struct tdb_error *err)
{
    *got = 0;
    for (;;) {
        size_t cut = rd_row_cut(rd, poff, plen), n;
        size_t part = cut == plen ? len : len - (plen - cut);
        struct rd_read rr;
        rd_prepare(rd, poff, cut, &rr);
        int r = rd_read_copy(rd, poff, off, buf, part, &n, err);
        rd_trim(rd, rr.epoch, rr.seq, rr.poff, rr.pend, rr.active);
        *got += n;
        if (r || n < part || cut == plen)
            return r;
        poff += cut;
        plen -= cut;
        off += part;
        len -= part;
        buf = (uint8_t *)buf + part;
    }
}

/* The file's bytes [off, off + len) copied into s's buffer. */
static int rd_read_into(struct tdb_reader *rd, uint64_t off, size_t len,
                        struct tdb_sink *s, struct tdb_error *err)
{
    if (tdb_sink_buffer(s, len))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    void *buf = s->buf;
    s->form = TDB_SINK_COPY;
    if (rd->vff) {
        struct tdb_fieldread rq = {off, buf, len, 0, TDB_TAKE_WAIT, NULL,
                                   NULL};
        int r = tdb_fieldfile_read_how(rd->vff, &rq, err);
        s->got = rq.got;
        return r;
    }
    if (!rd->ff)
        return tdb_fs_read(rd->fs, rd->ino, off, buf, len, &s->got, err);
    if (rd->head) {
        /* plan in the field's own offsets; the tree adds the header */
        uint64_t skip = off < rd->head ? rd->head - off : 0;
        if (skip >= len)
            return tdb_fs_read(rd->fs, rd->ino, off, buf, len, &s->got, err);
        return rd_read_planned(rd, off + skip - rd->head, len - skip, off,
                               buf, len, &s->got, err);
    }
    return rd_read_planned(rd, off, len, off, buf, len, &s->got, err);
}

#define RD_SEG_MIN (64u << 10)      /* pieces this long on average go to
                                     * the kernel uncopied */

/* The bytes [off, off + len) of rd's field as pieces of the decoded tiles
 * lent to s (TDB_SINK_TILE) where they are long, else copied: one plan
 * of the read's tiles, then the walk that lends them or the copy. */
static int rd_read_tiles(struct tdb_reader *rd, uint64_t off, size_t len,
                         struct tdb_sink *s, struct tdb_error *err)
{
    struct rd_read rr;
    uint64_t pieces = rd_prepare(rd, off, len, &rr);
    struct tdb_lent *l = NULL;
    int r = 0;
    /* the kernel copies a reply page by page, and from memory given in
     * pieces one more time per piece: small pieces are cheaper copied */
    if (pieces <= len / RD_SEG_MIN + 1 && (l = tdb_sink_lent(s))) {
        struct tdb_segsink sink = {l->pieces, TDB_LENT_PIECES, 0, l->held,
                                   TDB_LENT_TILES, 0, false, true};
        size_t got;
        l->cache = rd->ff->arr->cache;
        l->drop = rr.seq ? rd->drop : 0;
        r = tdb_fieldfile_segs(rd->ff, off, len, &sink, &got, err);
        l->nheld = sink.nheld;
        if (r || sink.full) {
            tdb_lent_clear(l);
            l = NULL;
        } else {
            *s = (struct tdb_sink){s->forms, s->buf, TDB_SINK_TILE, got,
                                   l->pieces, sink.n, l};
        }
    }
    if (!l && !(r = tdb_sink_buffer(s, len))) {
        s->form = TDB_SINK_COPY;
        r = rd_copy(rd, off, s->buf, len, &s->got, err);
    } else if (r == TDB_E_NOMEM && !l) {
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    rd_trim(rd, rr.epoch, rr.seq, rr.poff, rr.pend, rr.active);
    return r;
}

int tdb_reader_read(struct tdb_reader *rd, uint64_t off, size_t len,
                    struct tdb_sink *s, struct tdb_error *err)
{
    s->form = TDB_SINK_COPY;
    s->got = 0;
    s->pieces = NULL;
    s->npieces = 0;
    int r = 0;
    if ((s->forms & TDB_SINK_FILE) && rd->ranges && !rd->head)
        r = tdb_rangemaps_read(rd->ranges, rd->ff, off, len, s, err);
    if (r || s->npieces)
        return r;
    if ((s->forms & TDB_SINK_TILE) && rd->ff && !rd->head &&
        rd_row_cut(rd, off, len) == len)
        r = rd_read_tiles(rd, off, len, s, err);
    else
        r = rd_read_into(rd, off, len, s, err);
    if (r)
        s->got = 0;
    return r;
}

void tdb_reader_close(struct tdb_reader *rd)
{
    if (!rd)
        return;
    pthread_mutex_lock(&rd->lock);
    if (rd->pool)
        rd_cancel(rd, NULL, false);
    while (rd->pending)
        pthread_cond_wait(&rd->idle, &rd->lock);
    while (rd->npins)
        rd_drop(rd, &rd->pins[rd->npins - 1]);
    pthread_mutex_unlock(&rd->lock);
    pthread_mutex_destroy(&rd->lock);
    pthread_cond_destroy(&rd->idle);
    pthread_cond_destroy(&rd->done);
    pthread_cond_destroy(&rd->moved);
    tdb_fetcher_free(rd->fetch);
    tdb_rangemaps_free(rd->ranges);
    free(rd->pins);
    tdb_fs_unhold(rd->fs, rd->ino);
    free(rd);
}
