/* rawtile.c: the chunks of an unfiltered tile, as stored (rawtile.h). */
#include "read/rawtile.h"

#include <stdlib.h>

void tdb_raw_tile_free(struct tdb_raw_tile *m)
{
    if (!m)
        return;
    free(m->path);
    free(m->off);
    free(m->end);
    memset(m, 0, sizeof *m);
}

/* Reads chunk headers from `pos` on: each must say `orig` bytes stored as
 * they are (filtered length the same, no metadata) and the last must end
 * the tile's range exactly, `size` bytes in all.  @return 0, 1 or an
 * error. */
static int raw_tile_walk(struct tdb_frag *f, struct tdb_raw_tile *m,
                         uint64_t pos, uint64_t stop, uint64_t size,
                         struct tdb_error *err)
{
    uint64_t done = 0;
    for (uint64_t k = 0; k < m->n; k++) {
        uint8_t h[12];
        if (stop - pos < sizeof h)
            return 1;
        int r = tdb_io_read(&f->arr->io, m->path, pos, h, sizeof h, err);
        if (r)
            return r;
        uint32_t orig = tdb_le32(h), flen = tdb_le32(h + 4),
                 mlen = tdb_le32(h + 8);
        pos += sizeof h;
        if (flen != orig || mlen || !orig || stop - pos < orig ||
            size - done < orig)
            return 1;
        m->off[k] = pos;
        done += orig;
        m->end[k] = done;
        pos += orig;
    }
    return pos == stop && done == size ? 0 : 1;
}

int tdb_raw_tile_map(const struct tdb_tile_ref *k, uint64_t size,
                     struct tdb_raw_tile *out, struct tdb_error *err)
{
    struct tdb_frag *f = k->f;
    int field = k->field;
    unsigned part = k->part;
    uint64_t t = k->t;
    struct tdb_tile_range rg[2];
    memset(out, 0, sizeof *out);
    if (!size || !tdb_frag_field_unfiltered(f, field, part))
        return 1;
    int n = tdb_frag_tile_ranges(f, field, part, t, rg, err);
    if (n < 0)
        return n;
    if (n != 1) {
        while (n)
            free(rg[--n].path);
        return 1;
    }
    out->path = rg[0].path;
    uint8_t b[8];
    int r = rg[0].len < 8 ? 1
                          : tdb_io_read(&f->arr->io, out->path, rg[0].off, b,
                                        8, err);
    uint64_t nchunks = r ? 0 : tdb_le64(b);
    if (!r && (!nchunks || nchunks > (rg[0].len - 8) / 12))
        r = 1;
    if (!r) {
        out->n = nchunks;
        out->off = malloc(nchunks * sizeof *out->off);
        out->end = malloc(nchunks * sizeof *out->end);
        r = out->off && out->end
                ? raw_tile_walk(f, out, rg[0].off + 8, rg[0].off + rg[0].len,
                                size, err)
                : tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    if (r)
        tdb_raw_tile_free(out);
    return r;
}

uint64_t tdb_raw_tile_chunk(const struct tdb_raw_tile *m, uint64_t b)
{
    uint64_t lo = 0, hi = m->n - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (m->end[mid] > b)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}
