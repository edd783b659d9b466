/* fetch.c: a reader's tiles asked for from the storage ahead of their
 * decoding (fetch.h): the tiles a read touches, together, and while reads
 * are sequential a window of tiles ahead that grows (four times a read)
 * until the storage's read-ahead bound holds it back.  Decoding threads
 * then find their bytes in flight or arrived; they wait on a request of
 * their own only for a tile not asked for (var-sized files, whose
 * positions need the offsets, are not). */
#include "read/fetch.h"
#include "read/array.h"
#include "read/cache.h"

#include <pthread.h>
#include <stdlib.h>

#define FETCH_SEQ_SLACK (4u << 20)  /* a read this close to the last one's
                                     * end goes on sequentially */
#define FETCH_SEEN 16384            /* tiles remembered as asked for */
#define FETCH_KEEP 4096             /* of which kept when the table fills */

struct fetch_seen {
    uint64_t key;               /* 0: a free slot */
    uint64_t seq;
};

struct tdb_fetcher {
    struct tdb_fieldfile *ff;
    const struct tdb_io *io;
    pthread_mutex_t lock;
    uint64_t next_off;          /* where a sequential read goes on */
    uint64_t pos;               /* tiles up to here were asked for */
    uint64_t window;            /* bytes of the file asked for ahead */
    struct fetch_seen *seen;    /* tiles asked for (FETCH_SEEN slots) */
    size_t nseen;
    uint64_t seq;
};

/* A batch of wants being gathered by a walk. */
struct fetch_batch {
    struct tdb_fetcher *fx;
    struct tdb_io_want *w;
    size_t n, cap;
    uint64_t pos;               /* the walk went up to here */
};

int tdb_fetcher_new(struct tdb_fetcher **out, struct tdb_fieldfile *ff)
{
    *out = NULL;
    const struct tdb_io *io = &ff->arr->io;
    if (!io->ops->prefetch)
        return 0;
    struct tdb_fetcher *fx = calloc(1, sizeof *fx);
    if (!fx || !(fx->seen = calloc(FETCH_SEEN, sizeof *fx->seen))) {
        free(fx);
        return TDB_E_NOMEM;
    }
    fx->ff = ff;
    fx->io = io;
    fx->window = TDB_FETCH_WIN_MIN;
    pthread_mutex_init(&fx->lock, NULL);
    *out = fx;
    return 0;
}

void tdb_fetcher_free(struct tdb_fetcher *fx)
{
    if (!fx)
        return;
    pthread_mutex_destroy(&fx->lock);
    free(fx->seen);
    free(fx);
}

/* -------------------------------------------------------- tiles seen */

static uint64_t fetch_key(const struct tdb_frag *f, int field, unsigned part,
                          uint64_t t)
{
    uint64_t h = ((uint64_t)(uintptr_t)f >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)field << 8 | part) * 0xC2B2AE3D27D4EB4Full;
    h ^= (t + 1) * 0x165667B19E3779F9ull;
    h ^= h >> 31;
    return h ? h : 1;
}

/* Keeps only the FETCH_KEEP tiles asked for last (the table filled). */
static void fetch_seen_trim(struct tdb_fetcher *fx)
{
    struct fetch_seen *old = fx->seen;
    struct fetch_seen *nw = calloc(FETCH_SEEN, sizeof *nw);
    if (!nw) {
        memset(old, 0, FETCH_SEEN * sizeof *old);
        fx->nseen = 0;
        return;
    }
    fx->seen = nw;
    fx->nseen = 0;
    for (size_t i = 0; i < FETCH_SEEN; i++) {
        if (!old[i].key || old[i].seq + FETCH_KEEP < fx->seq)
            continue;
        size_t j = old[i].key % FETCH_SEEN;
        while (nw[j].key)
            j = (j + 1) % FETCH_SEEN;
        nw[j] = old[i];
        fx->nseen++;
    }
    free(old);
}

/* True when the tile was asked for lately; else it is remembered. */
static bool fetch_seen(struct tdb_fetcher *fx, uint64_t key)
{
    size_t j = key % FETCH_SEEN;
    while (fx->seen[j].key) {
        if (fx->seen[j].key == key)
            return true;
        j = (j + 1) % FETCH_SEEN;
    }
    fx->seen[j] = (struct fetch_seen){key, ++fx->seq};
    if (++fx->nseen > FETCH_SEEN / 4 * 3)
        fetch_seen_trim(fx);
    return false;
}

/* ---------------------------------------------------------- the walk */

/* Is the tile decoded and in the cache already? */
static bool fetch_decoded(struct tdb_frag *f, int field, unsigned part,
                          uint64_t t)
{
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    const struct tdb_tile_ref k = {f, field, part, t};
    if (tdb_frag_tile_flags(&k, TDB_CACHE_PEEK | TDB_CACHE_NOWAIT, &e, &tile,
                            NULL) != 0 || !e)
        return false;
    tdb_cache_release(f->arr->cache, e);
    return true;
}

/* One tile of the walk: its ranges join the batch, once. */
static int fetch_tile(void *arg, struct tdb_frag *f, int field,
                      unsigned part, uint64_t t, uint64_t from, uint64_t to)
{
    struct fetch_batch *b = arg;
    if (to > b->pos)
        b->pos = to;
    if (fetch_seen(b->fx, fetch_key(f, field, part, t)) ||
        fetch_decoded(f, field, part, t))
        return 0;
    struct tdb_tile_range r[2];
    int n = tdb_frag_tile_ranges(f, field, part, t, r, NULL);
    for (int i = 0; i < n; i++) {
        if (b->n == b->cap) {
            size_t nc = b->cap ? 2 * b->cap : 64;
            struct tdb_io_want *nw = realloc(b->w, nc * sizeof *nw);
            if (!nw) {
                free(r[i].path);
                continue;
            }
            b->w = nw;
            b->cap = nc;
        }
        b->w[b->n++] = (struct tdb_io_want){TDB_WANT_RANGE, r[i].path,
                                            r[i].off, r[i].len};
    }
    return 0;
}

/* Asks the storage for the batch, and lets it go. */
static void fetch_send(struct tdb_fetcher *fx, struct fetch_batch *b)
{
    tdb_io_prefetch(fx->io, b->w, b->n);
    for (size_t i = 0; i < b->n; i++)
        free((char *)b->w[i].path);
    free(b->w);
}

void tdb_fetcher_read(struct tdb_fetcher *fx, uint64_t off, uint64_t len)
{
    if (!fx || !len)
        return;
    struct fetch_batch b = {.fx = fx};
    pthread_mutex_lock(&fx->lock);
    bool seq = off + FETCH_SEQ_SLACK >= fx->next_off &&
               off <= fx->next_off + FETCH_SEQ_SLACK;
    uint64_t end = off + len;
    if (!seq) {
        fx->window = TDB_FETCH_WIN_MIN;
        fx->pos = end;
    } else if (fx->window < TDB_FETCH_WIN_MAX) {
        fx->window *= 4;        /* reading on: look further */
        if (fx->window > TDB_FETCH_WIN_MAX)
            fx->window = TDB_FETCH_WIN_MAX;
    }
    if (!seq || end > fx->next_off)
        fx->next_off = end;
    /* the read's own tiles, then (reading on) the window ahead */
    struct tdb_tile_plan tp = {fetch_tile, &b, 0};
    tdb_fieldfile_tiles(fx->ff, off, len, &tp, NULL);
    if (seq) {
        uint64_t from = fx->pos > end ? fx->pos : end;
        if (from < end + fx->window) {
            b.pos = from;
            tdb_fieldfile_tiles(fx->ff, from, end + fx->window - from, &tp,
                                NULL);
            if (b.pos > fx->pos)
                fx->pos = b.pos;
        }
    }
    pthread_mutex_unlock(&fx->lock);
    fetch_send(fx, &b);
}
