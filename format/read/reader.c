/* reader.c: reading one file of the mount contract on every core: the
 * tiles a read touches are decoded in parallel, and while a file is read
 * from start to end the tiles ahead of the reader are decoded by the tree's
 * pool of threads.  A reader keeps the tiles of its last reads and the ones
 * decoded ahead pinned in the cache, so that even a cache smaller than a
 * row of tiles decodes each tile once per pass (no thrashing); the pinned
 * bytes are bounded (a quarter of the cache, within 8 to 32 MiB, ahead,
 * plus what the reads touch). */
#include "read/reader.h"
#include "tiledb_format.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RD_AHEAD_MIN (8u << 20)     /* decoded bytes pinned ahead: a */
#define RD_AHEAD_MAX (32u << 20)    /* quarter of the cache, within these */
#define RD_AHEAD_VIEW (256u << 20)  /* how far ahead in the file to look */
#define RD_MAX_PINS 512
#define RD_SEQ_SLACK (4u << 20)     /* a read this close to the last one's
                                     * end goes on reading sequentially */
#define RD_MAX_ACTIVE 16            /* reads of one reader at once (the
                                     * kernel's read-ahead sends several) */

struct rd_tile {
    struct tdb_frag *f;
    int field;
    unsigned part;
    uint64_t t;
};

struct rd_pin {
    struct rd_tile k;
    struct tdb_cache_entry *e;  /* NULL until the tile is pinned */
    bool queued;                /* a job for it is queued or running */
    uint64_t epoch;             /* the last read that wanted it */
    uint64_t last;              /* the file's bytes it gives end there */
    uint64_t bytes;             /* its decoded size */
};

struct pool_job {
    struct pool_job *next;
    struct tdb_reader *rd;
    struct rd_tile k;
};

struct tdb_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct pool_job *head, *tail;
    bool stop;
    unsigned n;
    pthread_t *th;
};

struct tdb_reader {
    struct tdb_fs *fs;
    uint64_t ino;
    struct tdb_fieldfile *ff;   /* NULL: plain reads */
    struct tdb_pool *pool;      /* NULL: no decoding ahead */
    uint64_t cs;                /* bytes per cell of the file */
    pthread_mutex_t lock;
    pthread_cond_t idle;        /* pending fell to 0 */
    pthread_cond_t done;        /* a job finished */
    uint64_t ahead_bytes;       /* decoded bytes to pin ahead */
    /* the reads under way: their epochs and where they start (a read
     * ending never unpins the tiles another one still reads) */
    uint64_t act_epoch[RD_MAX_ACTIVE], act_off[RD_MAX_ACTIVE];
    unsigned nact;
    struct rd_pin *pins;
    size_t npins;
    uint64_t pinned;            /* bytes of the pins */
    unsigned pending;           /* its jobs queued or running */
    uint64_t epoch;
    uint64_t next_off;          /* where a sequential read goes on */
    uint64_t head;              /* bytes before the field's (.npy header) */
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
        tdb_cache_release_flags(p->k.f->arr->cache, p->e,
                                passed ? TDB_CACHE_DROP : 0);
    rd->pinned -= p->bytes;
    *p = rd->pins[--rd->npins];
}

static void rd_drop(struct tdb_reader *rd, struct rd_pin *p)
{
    rd_drop_tile(rd, p, false);
}

/* --------------------------------------------------------------- the pool */

/* A job is done: its tile is pinned by e (NULL: the decode failed; the
 * read reports it). */
static void rd_job_done(struct tdb_reader *rd, const struct rd_tile *k,
                        struct tdb_cache_entry *e)
{
    pthread_mutex_lock(&rd->lock);
    struct rd_pin *p = rd_find(rd, k);
    if (p)
        p->queued = false;
    if (p && !p->e && e) {
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

static void *pool_main(void *arg)
{
    struct tdb_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->work, &p->lock);
        if (!p->head)
            break;
        struct pool_job *j = p->head;
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->lock);
        struct tdb_cache_entry *e = NULL;
        const struct tdb_tile *tile;
        int r = tdb_frag_tile(j->k.f, j->k.field, j->k.part, j->k.t, &e,
                              &tile, NULL);
        rd_job_done(j->rd, &j->k, r == 0 ? e : NULL);
        free(j);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int tdb_pool_create(struct tdb_pool **out, unsigned nthreads)
{
    struct tdb_pool *p = calloc(1, sizeof *p);
    if (!p)
        return TDB_E_NOMEM;
    if (!nthreads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
    }
    p->th = calloc(nthreads, sizeof *p->th);
    if (!p->th) {
        free(p);
        return TDB_E_NOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    for (unsigned i = 0; i < nthreads; i++) {
        if (pthread_create(&p->th[i], NULL, pool_main, p) != 0)
            break;
        p->n++;
    }
    if (!p->n) {
        tdb_pool_free(p);
        return TDB_E_NOMEM;
    }
    *out = p;
    return 0;
}

void tdb_pool_free(struct tdb_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    free(p->th);
    free(p);
}

/* Takes back rd's jobs that no thread has started (only the one for k
 * when k is not NULL); rd->lock held.  @return how many. */
static unsigned pool_cancel(struct tdb_pool *p, struct tdb_reader *rd,
                            const struct rd_tile *k)
{
    unsigned n = 0;
    pthread_mutex_lock(&p->lock);
    struct pool_job **pp = &p->head, *last = NULL;
    while (*pp) {
        struct pool_job *j = *pp;
        if (j->rd == rd && (!k || rd_same(&j->k, k))) {
            *pp = j->next;
            struct rd_pin *pin = rd_find(rd, &j->k);
            if (pin)
                pin->queued = false;
            rd->pending--;
            n++;
            free(j);
        } else {
            last = j;
            pp = &j->next;
        }
    }
    p->tail = last;
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* ------------------------------------------------------------ the reader */

/* Wants tile k, whose bytes in the file end at `last` here, for read
 * `epoch`: pinned now if in the cache, else recorded (to be decoded by the
 * reader) and, with `submit`, queued for the pool.  @return true when the
 * tile is not pinned yet (the first time this read wants it). */
static bool rd_want(struct tdb_reader *rd, const struct rd_tile *k,
                    uint64_t epoch, uint64_t last, bool submit)
{
    pthread_mutex_lock(&rd->lock);
    struct rd_pin *p = rd_find(rd, k);
    if (p) {
        bool unpinned = p->epoch != epoch && !p->e;
        p->epoch = epoch;
        if (last > p->last)
            p->last = last;
        pthread_mutex_unlock(&rd->lock);
        return unpinned;
    }
    if (rd->npins == RD_MAX_PINS) {
        pthread_mutex_unlock(&rd->lock);
        return false;
    }
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    int r = tdb_frag_tile_flags(k->f, k->field, k->part, k->t,
                                TDB_CACHE_PEEK | TDB_CACHE_NOWAIT, &e, &tile,
                                NULL);
    struct pool_job *j = NULL;
    if (r != 0 && submit && rd->pool)
        j = calloc(1, sizeof *j);
    uint64_t bytes = tdb_frag_tile_cells(k->f, k->t) * rd->cs;
    rd->pins[rd->npins++] =
        (struct rd_pin){*k, r == 0 ? e : NULL, j != NULL, epoch, last, bytes};
    rd->pinned += bytes;
    if (j) {
        j->rd = rd;
        j->k = *k;
        rd->pending++;
        struct tdb_pool *pl = rd->pool;
        pthread_mutex_lock(&pl->lock);
        if (pl->tail)
            pl->tail->next = j;
        else
            pl->head = j;
        pl->tail = j;
        pthread_cond_signal(&pl->work);
        pthread_mutex_unlock(&pl->lock);
    }
    pthread_mutex_unlock(&rd->lock);
    return true;
}

/* Pins tile k in the calling thread (decoding it unless a job is already
 * doing so: the read then waits for that one). */
static void rd_pin_now(struct tdb_reader *rd, const struct rd_tile *k)
{
    pthread_mutex_lock(&rd->lock);
    struct rd_pin *p = rd_find(rd, k);
    /* a thread decodes it already: wait for that (decoding it here too
     * could decode it twice, when the cache lets this copy go before the
     * thread looks the tile up) */
    while (p && !p->e && p->queued && pool_cancel(rd->pool, rd, k) == 0) {
        pthread_cond_wait(&rd->done, &rd->lock);
        p = rd_find(rd, k);
    }
    bool mine = p && !p->e;
    pthread_mutex_unlock(&rd->lock);
    if (!mine)
        return;
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    /* an error is the read's to report */
    if (tdb_frag_tile(k->f, k->field, k->part, k->t, &e, &tile, NULL) != 0)
        return;
    pthread_mutex_lock(&rd->lock);
    p = rd_find(rd, k);
    if (p && !p->e) {
        p->e = e;
        e = NULL;
    }
    if (e)
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
    uint64_t limit;     /* decoding ahead stops at these pinned bytes */
    uint64_t pos;       /* end of the last piece planned */
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
    (void)from;
    if (rd_memo_seen(pl, &k, to))
        return 0;
    if (rd_want(pl->rd, &k, pl->epoch, to, pl->ncur > 0) &&
        pl->ncur < RD_MAX_CUR)
        pl->cur[pl->ncur++] = k;
    return 0;
}

/* The tiles after the read, until rd->ahead_bytes more are pinned. */
static int rd_plan_ahead(void *arg, struct tdb_frag *f, int field,
                         unsigned part, uint64_t t, uint64_t from, uint64_t to)
{
    struct rd_plan *pl = arg;
    struct rd_tile k = {f, field, part, t};
    (void)from;
    if (to > pl->pos)
        pl->pos = to;
    if (rd_memo_seen(pl, &k, to) || !rd_want(pl->rd, &k, pl->epoch, to, true))
        return 0;
    pthread_mutex_lock(&pl->rd->lock);
    bool full = pl->rd->pinned >= pl->limit;
    pthread_mutex_unlock(&pl->rd->lock);
    return full;
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

/* Read `epoch` ends: unpins what the reader no longer needs: reading on
 * (seq), the tiles whose bytes all lie before `off`; else those this read
 * did not want.  Tiles another read under way may still use stay: those
 * it (or a later read) wanted, and, reading on, those after its start. */
static void rd_trim(struct tdb_reader *rd, uint64_t epoch, bool seq,
                    uint64_t off, bool active)
{
    pthread_mutex_lock(&rd->lock);
    uint64_t keep = UINT64_MAX; /* pins of this epoch or later stay */
    for (unsigned i = 0; active && i < rd->nact;) {
        if (rd->act_epoch[i] == epoch) {
            rd->nact--;
            rd->act_epoch[i] = rd->act_epoch[rd->nact];
            rd->act_off[i] = rd->act_off[rd->nact];
            continue;
        }
        if (rd->act_epoch[i] < keep)
            keep = rd->act_epoch[i];
        if (rd->act_off[i] < off)
            off = rd->act_off[i];
        i++;
    }
    for (size_t i = 0; active && i < rd->npins;) {
        struct rd_pin *p = &rd->pins[i];
        bool old = seq ? p->last <= off : p->epoch != epoch;
        if (old && !p->queued && p->epoch < keep)
            rd_drop_tile(rd, p, seq);
        else
            i++;
    }
    pthread_mutex_unlock(&rd->lock);
}

int tdb_reader_open(struct tdb_reader **out, struct tdb_fs *fs, uint64_t ino,
                    struct tdb_error *err)
{
    struct tdb_stat st;
    int r = tdb_fs_stat(fs, ino, &st, err);
    if (r)
        return r;
    if (st.is_dir)
        return tdb_err(err, TDB_E_ISDIR, "inode %llu: a folder",
                       (unsigned long long)ino);
    struct tdb_reader *rd = calloc(1, sizeof *rd);
    if (!rd)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    rd->fs = fs;
    rd->ino = ino;
    rd->ff = tdb_fs_fieldfile(fs, ino, &rd->head);
    if (rd->ff && (!rd->ff->var || rd->ff->part == TDB_FILE_VALIDITY)) {
        rd->cs = rd->ff->part == TDB_FILE_VALIDITY ? 1 : rd->ff->cell_size;
        rd->pins = calloc(RD_MAX_PINS, sizeof *rd->pins);
        if (!rd->pins) {
            free(rd);
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        }
        rd->pool = tdb_fs_pool(fs);
    } else {
        rd->ff = NULL; /* var-sized: positions need the offsets */
    }
    if (rd->pool) {
        /* the next row of tiles too, where the cache allows (a row of 16
         * tiles of 1 MiB, read in 1 MiB requests, each of which needs all
         * 16: decoded only half ahead, the row's first read waits) */
        struct tdb_cache_stats cs;
        tdb_fs_cache_stats(fs, &cs);
        uint64_t a = cs.budget / 4;
        rd->ahead_bytes = a < RD_AHEAD_MIN ? RD_AHEAD_MIN
                          : a > RD_AHEAD_MAX ? RD_AHEAD_MAX : a;
    }
    pthread_mutex_init(&rd->lock, NULL);
    pthread_cond_init(&rd->idle, NULL);
    pthread_cond_init(&rd->done, NULL);
    *out = rd;
    return 0;
}

/* One read under way: what ending it needs. */
struct rd_read {
    uint64_t epoch, poff;
    bool seq, active;
};

/* Plans the tiles of the field's bytes [poff, poff + plen) and pins them
 * (a read starts: end it with rd_trim).  @return the pieces of tiles the
 * read gives. */
static uint64_t rd_prepare(struct tdb_reader *rd, uint64_t poff, size_t plen,
                           struct rd_read *rr)
{
    pthread_mutex_lock(&rd->lock);
    uint64_t epoch = ++rd->epoch;
    bool active = rd_begin(rd, epoch, poff);
    /* the kernel's read-ahead may send a few requests out of order */
    bool seq = poff + RD_SEQ_SLACK >= rd->next_off &&
               poff <= rd->next_off + RD_SEQ_SLACK;
    if (!seq || poff + plen > rd->next_off)
        rd->next_off = poff + plen;
    if (!seq)
        rd->ahead_pos = 0;
    uint64_t ahead = rd->ahead_pos > poff + plen ? rd->ahead_pos : poff + plen;
    pthread_mutex_unlock(&rd->lock);
    *rr = (struct rd_read){epoch, poff, seq, active};
    struct rd_plan pl;
    pl.rd = rd;
    pl.epoch = epoch;
    pl.ncur = 0;
    pl.npieces = 0;
    pl.limit = pl.pos = 0;
    memset(pl.memo, 0, sizeof pl.memo);
    /* errors are the read's to report: a plan is only a hint */
    tdb_fieldfile_tiles(rd->ff, poff, plen, rd_plan_read, &pl, &pl.npieces,
                        NULL);
    rd_memo_flush(&pl);
    if (seq && rd->pool) {
        pthread_mutex_lock(&rd->lock);
        uint64_t cur = 0;
        for (size_t i = 0; i < rd->npins; i++)
            if (rd->pins[i].epoch == epoch)
                cur += rd->pins[i].bytes;
        pl.limit = cur + rd->ahead_bytes;
        bool room = rd->pinned < pl.limit;
        pthread_mutex_unlock(&rd->lock);
        pl.pos = ahead;
        if (room)
            tdb_fieldfile_tiles(rd->ff, ahead, RD_AHEAD_VIEW, rd_plan_ahead,
                                &pl, NULL, NULL);
        rd_memo_flush(&pl);
        pthread_mutex_lock(&rd->lock);
        if (pl.pos > rd->ahead_pos)
            rd->ahead_pos = pl.pos;
        pthread_mutex_unlock(&rd->lock);
    }
    /* the read's own tiles, from its end back (the pool takes them from
     * the front): pinned before the read, so that a cache smaller than
     * the read still decodes each once */
    for (unsigned i = pl.ncur; i-- > 0;)
        rd_pin_now(rd, &pl.cur[i]);
    return pl.npieces;
}

/* Plans the tiles of the field's bytes [poff, poff + plen), then reads the
 * file's bytes [off, off + len). */
static int rd_read_planned(struct tdb_reader *rd, uint64_t poff, size_t plen,
                           uint64_t off, void *buf, size_t len, size_t *got,
                           struct tdb_error *err)
{
    struct rd_read rr;
    rd_prepare(rd, poff, plen, &rr);
    int r = tdb_fs_read(rd->fs, rd->ino, off, buf, len, got, err);
    rd_trim(rd, rr.epoch, rr.seq, rr.poff, rr.active);
    return r;
}

int tdb_reader_read(struct tdb_reader *rd, uint64_t off, void *buf,
                    size_t len, size_t *got, struct tdb_error *err)
{
    if (!rd->ff)
        return tdb_fs_read(rd->fs, rd->ino, off, buf, len, got, err);
    if (rd->head) {
        /* plan in the field's own offsets; the tree adds the header */
        uint64_t skip = off < rd->head ? rd->head - off : 0;
        if (skip >= len)
            return tdb_fs_read(rd->fs, rd->ino, off, buf, len, got, err);
        return rd_read_planned(rd, off + skip - rd->head, len - skip, off,
                               buf, len, got, err);
    }
    return rd_read_planned(rd, off, len, off, buf, len, got, err);
}

#define RD_HOLD_TILES 64
#define RD_SEG_MIN (64u << 10)      /* pieces this long on average go to
                                     * the kernel uncopied */

/* The tiles a read without copying gives pieces of, pinned once more: the
 * reply goes out after the read ended (and maybe after the reader is
 * closed). */
struct tdb_read_hold {
    struct tdb_cache *cache;
    bool passed;                /* a sequential read: tiles it passed go */
    size_t nheld;
    struct tdb_cache_entry *held[RD_HOLD_TILES];
};

int tdb_reader_read_segs(struct tdb_reader *rd, uint64_t off, size_t len,
                         void *buf, struct tdb_seg *segs, size_t cap,
                         size_t *nsegs, size_t *got,
                         struct tdb_read_hold **hold, struct tdb_error *err)
{
    *nsegs = *got = 0;
    *hold = NULL;
    int r;
    if (!rd->ff || rd->head ||
        (rd->ff->var && rd->ff->part != TDB_FILE_VALIDITY)) {
        r = tdb_reader_read(rd, off, buf, len, got, err);
        goto copied;
    }
    struct rd_read rr;
    uint64_t pieces = rd_prepare(rd, off, len, &rr);
    struct tdb_read_hold *h = NULL;
    struct tdb_segsink sink = {segs, cap, 0, NULL, RD_HOLD_TILES, 0, true};
    /* the kernel copies a reply page by page, and from memory given in
     * pieces one more time per piece: small pieces are cheaper copied */
    if (pieces <= len / RD_SEG_MIN + 1 && (h = malloc(sizeof *h))) {
        sink.held = h->held;
        sink.full = false;
        r = tdb_fieldfile_segs(rd->ff, off, len, &sink, got, err);
        h->cache = rd->ff->arr->cache;
        h->passed = rr.seq;
        h->nheld = sink.nheld;
        if (r || sink.full) {
            tdb_reader_done(h);
            h = NULL;
            *got = 0;
        }
    }
    if (!h)
        r = tdb_fs_read(rd->fs, rd->ino, off, buf, len, got, err);
    rd_trim(rd, rr.epoch, rr.seq, rr.poff, rr.active);
    if (h) {
        *nsegs = sink.n;
        *hold = h;
        return 0;
    }
copied:
    if (!r && *got) {
        segs[0] = (struct tdb_seg){buf, *got};
        *nsegs = 1;
    }
    return r;
}

void tdb_reader_done(struct tdb_read_hold *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->nheld; i++)
        tdb_cache_release_flags(h->cache, h->held[i],
                                h->passed ? TDB_CACHE_DROP : 0);
    free(h);
}

void tdb_reader_close(struct tdb_reader *rd)
{
    if (!rd)
        return;
    pthread_mutex_lock(&rd->lock);
    if (rd->pool)
        pool_cancel(rd->pool, rd, NULL);
    while (rd->pending)
        pthread_cond_wait(&rd->idle, &rd->lock);
    while (rd->npins)
        rd_drop(rd, &rd->pins[rd->npins - 1]);
    pthread_mutex_unlock(&rd->lock);
    pthread_mutex_destroy(&rd->lock);
    pthread_cond_destroy(&rd->idle);
    pthread_cond_destroy(&rd->done);
    free(rd->pins);
    free(rd);
}
