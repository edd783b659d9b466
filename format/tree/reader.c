/* reader.c: reading one file of the mount contract: a read of a
 * fixed-size field file is bracketed by its read-ahead (read/readahead.c:
 * the tiles it and the reads after it want, decoded on every core before
 * they are asked for), then given to the sink in the cheapest form it
 * takes (tiledb_format.h "reading a file"): ranges of the data files
 * (ranges.c), pieces of the decoded tiles lent, or a copy.
 *
 * The copy reads from the tiles the cache holds (TDB_TAKE_CACHED), then
 * takes the tiles it did not find a batch at a time, the first of each
 * once the budget has room for it (rd_copy): the only place a reader
 * waits for room, holding no pin of the cache and no lock of its own.  A
 * cache smaller than a row of tiles thus decodes a tile once per read
 * that touches it (a read copies a tile's pieces before it takes the
 * next), not once per piece.  Var-sized files (no positions without the
 * offsets) are read as they come, loading within the budget
 * (TDB_TAKE_WAIT). */
#include "tree/reader.h"
#include "read/readahead.h"
#include "tree/ranges.h"
#include "tree/sink.h"
#include "tiledb_format.h"

#include <stdlib.h>
#include <string.h>

struct tdb_reader {
    struct tdb_fs *fs;
    uint64_t ino;
    struct tdb_fieldfile *ff;   /* a fixed-size field file; NULL: plain */
    struct tdb_fieldfile *vff;  /* a var-sized one (read as it comes) */
    uint64_t head;              /* bytes before the field's (.npy header) */
    struct tdb_readahead *ra;   /* ff's read-ahead */
    struct tdb_rangemaps *ranges;   /* NULL: no reads from the files */
};

#define RD_BATCH 64     /* tiles rd_copy_missing holds at once */

/* The tiles a read found missing from the cache (rd_copy). */
struct rd_missing {
    struct tdb_tile_ref *k;
    size_t n, cap;
    bool nomem;
};

static void rd_missed(void *arg, struct tdb_frag *f, int field,
                      unsigned part, uint64_t t)
{
    struct rd_missing *m = arg;
    struct tdb_tile_ref k = {f, field, part, t};
    if (m->n && tdb_tile_ref_same(&m->k[m->n - 1], &k))
        return;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct tdb_tile_ref *nk = realloc(m->k, cap * sizeof *nk);
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
    const struct tdb_tile_ref *a = pa, *b = pb;
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
            const struct tdb_tile_ref *k = &m->k[i + n];
            if (n && tdb_tile_ref_same(k, &m->k[i + n - 1])) {
                held[n] = NULL;
                continue;
            }
            r = tdb_frag_tile_flags(k, flags,
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

/* The file's bytes [off, off + len) into buf as the tree reads them
 * (tdb_fs_read): a file that is no fixed-size field's, or an .npy
 * header. */
static int rd_plain(struct tdb_reader *rd, uint64_t off, void *buf,
                    size_t len, size_t *got, struct tdb_error *err)
{
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
    int r = tdb_fs_read(rd->fs, rd->ino, off, len, &s, err);
    *got = s.got;
    tdb_sink_release(&s);
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
    int r = h ? rd_plain(rd, off, buf, h, got, err) : 0;
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
        size_t cut = tdb_readahead_cut(rd->ra, poff, plen), n;
        size_t part = cut == plen ? len : len - (plen - cut);
        struct tdb_ra_read rr;
        tdb_readahead_start(rd->ra, poff, cut, &rr);
        int r = rd_read_copy(rd, poff, off, buf, part, &n, err);
        tdb_readahead_end(rd->ra, &rr);
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
        return rd_plain(rd, off, buf, len, &s->got, err);
    if (rd->head) {
        /* plan in the field's own offsets; the tree adds the header */
        uint64_t skip = off < rd->head ? rd->head - off : 0;
        if (skip >= len)
            return rd_plain(rd, off, buf, len, &s->got, err);
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
    struct tdb_ra_read rr;
    uint64_t pieces = tdb_readahead_start(rd->ra, off, len, &rr);
    struct tdb_lent *l = NULL;
    int r = 0;
    /* the kernel copies a reply page by page, and from memory given in
     * pieces one more time per piece: small pieces are cheaper copied */
    if (pieces <= len / RD_SEG_MIN + 1 && (l = tdb_sink_lent(s))) {
        struct tdb_segsink sink = {l->pieces, TDB_LENT_PIECES, 0, l->held,
                                   TDB_LENT_TILES, 0, false, true};
        size_t got;
        l->cache = rd->ff->arr->cache;
        l->drop = rr.drop;
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
    tdb_readahead_end(rd->ra, &rr);
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
        tdb_readahead_cut(rd->ra, off, len) == len)
        r = rd_read_tiles(rd, off, len, s, err);
    else
        r = rd_read_into(rd, off, len, s, err);
    if (r)
        s->got = 0;
    return r;
}

/* The reader's read-ahead and reads from the files of a fixed-size field
 * file of st->size bytes. */
static int rd_open_field(struct tdb_reader *rd, const struct tdb_stat *st,
                         struct tdb_error *err)
{
    struct tdb_cache_stats cs;
    tdb_fs_cache_stats(rd->fs, &cs);
    if (tdb_readahead_new(&rd->ra, rd->ff, tdb_fs_pool(rd->fs), cs.budget,
                          st->size))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (rd->ff->part == TDB_FILE_VALUES &&
        tdb_io_dup_fd(&rd->ff->arr->io, NULL) == 0)
        rd->ranges = tdb_rangemaps_new();
    return 0;
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
    rd->ff = tdb_fs_fieldfile(fs, ino, &rd->head);
    if (rd->ff && rd->ff->var && rd->ff->part != TDB_FILE_VALIDITY) {
        rd->vff = rd->head ? NULL : rd->ff;
        rd->ff = NULL; /* var-sized: positions need the offsets */
    }
    if (rd->ff && (r = rd_open_field(rd, &st, err))) {
        free(rd);
        tdb_fs_unhold(fs, ino);
        return r;
    }
    *out = rd;
    return 0;
}

void tdb_reader_close(struct tdb_reader *rd)
{
    if (!rd)
        return;
    tdb_readahead_free(rd->ra);
    tdb_rangemaps_free(rd->ranges);
    tdb_fs_unhold(rd->fs, rd->ino);
    free(rd);
}
