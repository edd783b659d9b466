/* ranges.c: reads answered by ranges of the data files (ranges.h).
 *
 * A piece of an unfiltered tile lies in its file as it reads, cut only at
 * the tile's chunks (64 KiB as TileDB writes them): the read's pieces,
 * mapped through the chunk maps of their tiles (read from the chunk
 * headers once, kept for the last RM_MAPS tiles), are the ranges.  A read
 * of short pieces (a row of a wide array crossing narrow tiles) is cheaper
 * copied than spliced a piece at a time, so it is refused, as are fill
 * values and filtered tiles, and so is a read of a tile the cache holds
 * decoded (replying from memory is cheaper than from the file); a file
 * whose tiles are all filtered, or whose reads keep coming in short
 * pieces, is not tried again. */
#include "tree/ranges.h"
#include "tree/sink.h"
#include "read/cache.h"
#include "read/rawtile.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define RM_MAPS 64          /* chunk maps kept */
#define RM_PIECE (4u << 10) /* average bytes a range, at least */
#define RM_GIVE_UP 8        /* refusals in a row before the file is not
                             * tried any more */
#define RM_MAX 256          /* ranges of one read at most */

struct rm_map {
    struct tdb_frag *f;     /* NULL: a free slot */
    int field;
    uint64_t t;
    bool raw;               /* false: the tile is not stored as it reads */
    struct tdb_raw_tile m;
};

struct tdb_rangemaps {
    pthread_mutex_t lock;
    struct rm_map maps[RM_MAPS];
    unsigned next;
    unsigned refused;       /* reads refused in a row */
    bool never;             /* a filtered tile: no read of it will do */
};

struct tdb_rangemaps *tdb_rangemaps_new(void)
{
    struct tdb_rangemaps *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

void tdb_rangemaps_free(struct tdb_rangemaps *m)
{
    if (!m)
        return;
    for (unsigned i = 0; i < RM_MAPS; i++)
        tdb_raw_tile_free(&m->maps[i].m);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* One read being mapped. */
struct rm_read {
    struct tdb_rangemaps *m;
    struct tdb_fieldfile *ff;
    struct tdb_lent *out;   /* pieces[0, n) and fds[0, nfd) */
    size_t n;
    char *paths[TDB_LENT_FDS];          /* of fds[i] */
    size_t maxn;            /* more ranges than this: refused */
    bool filtered;
    bool cached;            /* a tile is in the cache: refused */
    struct tdb_error *err;
};

/* The map of tile k (m->lock held; loads it unlocked). */
static int rm_map_get(struct rm_read *rr, const struct tdb_tile_ref *k,
                      struct rm_map **out)
{
    struct tdb_rangemaps *m = rr->m;
    struct tdb_frag *f = k->f;
    int field = k->field;
    uint64_t t = k->t;
    for (unsigned i = 0; i < RM_MAPS; i++) {
        struct rm_map *e = &m->maps[i];
        if (e->f == f && e->field == field && e->t == t) {
            *out = e;
            return 0;
        }
    }
    struct rm_map *e = &m->maps[m->next++ % RM_MAPS];
    tdb_raw_tile_free(&e->m);
    *e = (struct rm_map){f, field, t, false, {0}};
    uint64_t size = tdb_frag_tile_cells(f, t) * rr->ff->cell_size;
    int r = tdb_raw_tile_map(k, size, &e->m, rr->err);
    if (r < 0) {
        e->f = NULL;
        return r;
    }
    e->raw = r == 0;
    *out = e;
    return 0;
}

/* The index in out->fds of the descriptor of path (a new slot, opened
 * once the read is taken), or -1 when all are used. */
static int rm_fd_slot(struct rm_read *rr, const char *path)
{
    size_t i;
    for (i = 0; i < TDB_LENT_FDS && rr->paths[i]; i++)
        if (!strcmp(rr->paths[i], path))
            return (int)i;
    if (i == TDB_LENT_FDS || !(rr->paths[i] = strdup(path)))
        return -1;
    return (int)i;
}

/* Appends [off, off + n) of descriptor slot fd; 1 when out is full. */
static int rm_put(struct rm_read *rr, int fd, uint64_t off, uint64_t n)
{
    struct tdb_piece *pc = rr->out->pieces;
    struct tdb_piece *last = rr->n ? &pc[rr->n - 1] : NULL;
    if (last && last->fd == fd && last->off + last->len == off) {
        last->len += (size_t)n;
        return 0;
    }
    if (rr->n == RM_MAX || rr->n == rr->maxn)
        return 1;
    pc[rr->n++] = (struct tdb_piece){NULL, fd, off, (size_t)n};
    return 0;
}

static int rm_piece(void *arg, struct tdb_frag *f, int field, unsigned part,
                    uint64_t t, uint64_t from, uint64_t n)
{
    struct rm_read *rr = arg;
    struct tdb_cache_entry *ce;
    const struct tdb_tile *tile;
    const struct tdb_tile_ref tk = {f, field, part, t};
    if (tdb_frag_tile_flags(&tk, TDB_CACHE_PEEK | TDB_CACHE_NOWAIT, &ce, &tile,
                            NULL) == 0) {
        tdb_cache_release(f->arr->cache, ce);
        rr->cached = true;
        return 1;
    }
    struct rm_map *e;
    int r = rm_map_get(rr, &tk, &e);
    if (r)
        return r;
    if (!e->raw) {
        rr->filtered = !tdb_frag_field_unfiltered(f, field, part);
        return 1;
    }
    const struct tdb_raw_tile *m = &e->m;
    if (from + n > m->end[m->n - 1])
        return 1;
    int fd = rm_fd_slot(rr, m->path);
    if (fd < 0)
        return 1;
    for (uint64_t k = tdb_raw_tile_chunk(m, from); n; k++) {
        uint64_t start = k ? m->end[k - 1] : 0, take = m->end[k] - from;
        if (take > n)
            take = n;
        if (rm_put(rr, fd, m->off[k] + (from - start), take))
            return 1;
        from += take;
        n -= take;
    }
    return 0;
}

/* Opens the descriptors of the read's files.  @return 0 or an error
 * (those opened closed again). */
static int rm_open_fds(struct rm_read *rr)
{
    struct tdb_lent *o = rr->out;
    for (size_t i = 0; i < TDB_LENT_FDS && rr->paths[i]; i++) {
        int fd = tdb_io_dup_fd(&rr->ff->arr->io, rr->paths[i]);
        if (fd < 0) {
            tdb_lent_clear(o);
            return fd;
        }
        o->fds[o->nfd++] = fd;
    }
    for (size_t i = 0; i < rr->n; i++)
        o->pieces[i].fd = o->fds[o->pieces[i].fd];
    return 0;
}

int tdb_rangemaps_read(struct tdb_rangemaps *m, struct tdb_fieldfile *ff,
                       uint64_t off, size_t len, struct tdb_sink *s,
                       struct tdb_error *err)
{
    pthread_mutex_lock(&m->lock);
    if (m->never || m->refused >= RM_GIVE_UP) {
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    /* where the pieces go: made only for a read that may give them */
    struct tdb_lent *l = tdb_sink_lent(s);
    if (!l) {
        pthread_mutex_unlock(&m->lock);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    struct rm_read rr = {m, ff, l, 0, {0}, len / RM_PIECE + 1, false, false,
                         err};
    size_t got = len;
    int r = tdb_fieldfile_places(ff, off, &got, rm_piece, &rr, err);
    if (r == 0 && rr.n > got / RM_PIECE + 1)
        r = 1;              /* a short file in short pieces */
    if (r == 0 && rr.n && rm_open_fds(&rr) < 0)
        r = 1;              /* the decoding way says what is wrong */
    if (r < 0 || r == 1 || !rr.n) {
        m->never |= rr.filtered;
        m->refused += r == 1 && !rr.cached;
    } else {
        m->refused = 0;
        s->form = TDB_SINK_FILE;
        s->pieces = l->pieces;
        s->npieces = rr.n;
        s->got = got;
    }
    pthread_mutex_unlock(&m->lock);
    for (size_t i = 0; i < TDB_LENT_FDS; i++)
        free(rr.paths[i]);
    return r < 0 ? r : 0;
}
