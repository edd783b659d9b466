/* generic_tile.c: generic tiles (format_spec/generic_tile.md): a header with
 * sizes, datatype, encryption and its own filter pipeline, then a tile. */
#include "model/generic_tile.h"
#include "filters/filter.h"

#include <stdio.h>
#include <stdlib.h>

#define GT_FORMAT_VERSION 22
#define GT_HEADER_FIXED (4 + 8 + 8 + 1 + 8 + 1 + 4)

struct gt_header {
    uint32_t version;
    uint64_t persisted, tile_size, cell_size;
    uint8_t datatype, encryption;
    uint32_t pipeline_size;
};

static int gt_header(struct tdb_cursor *c, struct gt_header *h)
{
    tdb_cur_u32(c, &h->version);
    tdb_cur_u64(c, &h->persisted);
    tdb_cur_u64(c, &h->tile_size);
    tdb_cur_u8(c, &h->datatype);
    tdb_cur_u64(c, &h->cell_size);
    tdb_cur_u8(c, &h->encryption);
    return tdb_cur_u32(c, &h->pipeline_size);
}

int tdb_generic_tile_encryption(const uint8_t *src, size_t size,
                                uint8_t *enc_type)
{
    struct tdb_cursor c;
    struct gt_header h;
    tdb_cur_init(&c, src, size);
    if (gt_header(&c, &h))
        return TDB_E_CORRUPT;
    *enc_type = h.encryption;
    return 0;
}

/* A generic tile opened: its header, the bytes of its pipeline and of
 * its data, and the cursor past them. */
struct gt_tile {
    struct tdb_cursor c;
    struct gt_header h;
    const uint8_t *pbytes, *data;
};

/* Opens the tile at `off` of src[size], its header checked.  @return 0
 * or TDB_E_CORRUPT naming `what`. */
static int gt_open(struct gt_tile *t, const uint8_t *src, size_t size,
                   uint64_t off, const char *what, struct tdb_error *err)
{
    if (off > size)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: generic tile at offset %llu is past the end (%zu bytes)",
                       what, (unsigned long long)off, size);
    tdb_cur_init(&t->c, src + off, size - (size_t)off);
    if (gt_header(&t->c, &t->h))
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: generic tile at offset %llu: header truncated", what,
                       (unsigned long long)off);
    if (tdb_cur_bytes(&t->c, t->h.pipeline_size, &t->pbytes) ||
        t->h.persisted > tdb_cur_left(&t->c) ||
        tdb_cur_bytes(&t->c, (size_t)t->h.persisted, &t->data))
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: generic tile at offset %llu truncated (%llu bytes of "
                       "tile data claimed)",
                       what, (unsigned long long)off,
                       (unsigned long long)t->h.persisted);
    if (t->h.tile_size > TDB_MAX_TILE_BYTES)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: generic tile at offset %llu claims %llu bytes", what,
                       (unsigned long long)off,
                       (unsigned long long)t->h.tile_size);
    if (t->h.encryption > TDB_AES_256_GCM)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: generic tile at offset %llu: unknown encryption %u",
                       what, (unsigned long long)off, t->h.encryption);
    return 0;
}

int tdb_generic_tile_decode(const struct tdb_gt_bytes *at, const uint8_t *key,
                            const char *what, struct tdb_buf *out,
                            uint64_t *next, struct tdb_error *err)
{
    struct gt_tile t;
    uint64_t off = at->off;
    int r = gt_open(&t, at->src, at->size, off, what, err);
    if (r)
        return r;
    if (t.h.encryption == TDB_AES_256_GCM && !key)
        return tdb_err(err, TDB_E_NOKEY,
                       "%s: encrypted with AES-256-GCM: a key is needed (key_file=)",
                       what);
    struct tdb_pipeline p;
    struct tdb_cursor pc;
    tdb_cur_init(&pc, t.pbytes, t.h.pipeline_size);
    if ((r = tdb_pipeline_read(&p, &pc, t.h.version, err)))
        return tdb_err_ctx(err, r, "%s: generic tile at offset %llu", what,
                           (unsigned long long)off);
    char where[512];
    snprintf(where, sizeof where, "%s: generic tile at offset %llu", what,
             (unsigned long long)off);
    struct tdb_tile_desc d = {
        .datatype = t.h.datatype,
        .cell_size = t.h.cell_size,
        .version = t.h.version,
        .is_var = false,
        .key = t.h.encryption == TDB_AES_256_GCM ? key : NULL,
        .what = where,
    };
    size_t before = out->len;
    r = tdb_pipeline_decode(&p, &d, t.data, (size_t)t.h.persisted, out, err);
    tdb_pipeline_free(&p);
    if (r)
        return r;
    if (out->len - before != t.h.tile_size)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: decodes to %zu bytes, header says %llu", where,
                       out->len - before, (unsigned long long)t.h.tile_size);
    if (next)
        *next = off + (uint64_t)t.c.pos;
    return 0;
}

int tdb_generic_tile_read(const struct tdb_gt_file *at, const uint8_t *key,
                          struct tdb_buf *out, uint64_t *next,
                          struct tdb_error *err)
{
    const struct tdb_io *io = at->io;
    const char *path = at->path;
    uint64_t off = at->off;
    uint64_t fsize;
    int r = tdb_io_size(io, path, &fsize, err);
    if (r)
        return r;
    if (off > fsize || fsize - off < GT_HEADER_FIXED)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: no generic tile at offset %llu (file has %llu bytes)",
                       path, (unsigned long long)off,
                       (unsigned long long)fsize);
    uint8_t hb[GT_HEADER_FIXED];
    if ((r = tdb_io_read(io, path, off, hb, sizeof hb, err)))
        return r;
    struct tdb_cursor c;
    struct gt_header h;
    tdb_cur_init(&c, hb, sizeof hb);
    gt_header(&c, &h);
    uint64_t total;
    if (!tdb_add_ok(GT_HEADER_FIXED, h.pipeline_size, &total) ||
        !tdb_add_ok(total, h.persisted, &total) || total > fsize - off)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: generic tile at offset %llu runs past the end of the "
                       "file", path, (unsigned long long)off);
    uint8_t *buf = malloc(total ? (size_t)total : 1);
    if (!buf)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    r = tdb_io_read(io, path, off, buf, (size_t)total, err);
    if (!r)
        r = tdb_generic_tile_decode(&(struct tdb_gt_bytes){buf, (size_t)total,
                                                           0},
                                    key, path, out, NULL, err);
    free(buf);
    if (!r && next)
        *next = off + total;
    return r;
}

int tdb_generic_tile_encode(const uint8_t *src, size_t size,
                            const struct tdb_gt_filtering *f,
                            const uint8_t *key, struct tdb_buf *out,
                            struct tdb_error *err)
{
    struct tdb_buf pipe = {0}, tile = {0};
    struct tdb_pipeline none = {0}, with_aes = {0};
    const struct tdb_pipeline *pp = f->p ? f->p : &none;
    /* TileDB lists the AES-256-GCM filter in an encrypted generic tile's
     * own pipeline (and refuses a tile without it) */
    struct tdb_filter fs[65];
    if (key && !tdb_pipeline_has(pp, TDB_FILTER_AES_256_GCM)) {
        if (pp->n >= 64)
            return tdb_err(err, TDB_E_INVAL, "generic tile: too many filters");
        if (pp->n)  /* (no filters: pp->f may be NULL) */
            memcpy(fs, pp->f, pp->n * sizeof *fs);
        memset(&fs[pp->n], 0, sizeof fs[pp->n]);
        fs[pp->n].type = TDB_FILTER_AES_256_GCM;
        fs[pp->n].ops = &tdb_filter_aes256gcm;
        with_aes.max_chunk_size = pp->max_chunk_size;
        with_aes.n = pp->n + 1;
        with_aes.f = fs;
        pp = &with_aes;
    }
    struct tdb_tile_desc d = {
        .datatype = f->datatype,
        .cell_size = f->cell_size ? f->cell_size : 1,
        .version = GT_FORMAT_VERSION,
        .key = key,
        .what = "generic tile",
    };
    int r = tdb_pipeline_write(pp, &pipe);
    if (!r)
        r = tdb_pipeline_encode(pp, &d, src, size, &tile, err);
    if (!r) {
        r = tdb_buf_put_u32(out, GT_FORMAT_VERSION);
        if (!r)
            r = tdb_buf_put_u64(out, tile.len);
        if (!r)
            r = tdb_buf_put_u64(out, size);
        if (!r)
            r = tdb_buf_put_u8(out, (uint8_t)f->datatype);
        if (!r)
            r = tdb_buf_put_u64(out, d.cell_size);
        if (!r)
            r = tdb_buf_put_u8(out, key ? TDB_AES_256_GCM : TDB_NO_ENCRYPTION);
        if (!r)
            r = tdb_buf_put_u32(out, (uint32_t)pipe.len);
        if (!r)
            r = tdb_buf_append(out, pipe.data, pipe.len);
        if (!r)
            r = tdb_buf_append(out, tile.data, tile.len);
    }
    tdb_buf_free(&pipe);
    tdb_buf_free(&tile);
    return r;
}
