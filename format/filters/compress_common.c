/* compress_common.c: the framing every compression filter shares (tile.md,
 * "Compression Filters"): a compressor's options, the parts of the chunk
 * metadata and data, and the prefix of the var-sized string forms of RLE
 * and DICTIONARY.  Each compressor supplies only its codec. */
#include "compress_common.h"

#include <limits.h>

int tdb_compress_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                              uint8_t expect, const char *name,
                              struct tdb_error *err)
{
    uint8_t comp = 0;
    int32_t level = 0;

    tdb_cur_u8(c, &comp);
    tdb_cur_i32(c, &level);
    if (c->bad)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s filter options truncated (need compressor byte "
                       "and level)", name);
    /* 0 (no compression) makes TileDB pass the data through; the pipeline
     * swaps such a filter for NONE. */
    if (comp != expect && comp != TDB_COMPRESSOR_NONE)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s filter options name compressor %u, expected %u",
                       name, (unsigned)comp, (unsigned)expect);
    f->compressor = comp;
    f->level = level;
    return 0;
}

int tdb_compress_write_options(const struct tdb_filter *f, uint8_t compressor,
                               struct tdb_buf *out)
{
    int rc = tdb_buf_put_u8(out, compressor);
    if (rc == 0)
        rc = tdb_buf_put_i32(out, f->level);
    return rc;
}

int tdb_compress_read_counts(const struct tdb_filter_call *call,
                             struct tdb_cursor *md, size_t part_bytes,
                             const char *name, const char *part,
                             uint32_t *nmd, uint32_t *ndata)
{
    uint64_t need = 0;

    *nmd = *ndata = 0;
    tdb_cur_u32(md, nmd);
    tdb_cur_u32(md, ndata);
    if (md->bad)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "%s: metadata truncated (%s counts)", name, part);
    if (!tdb_add_ok(*nmd, *ndata, &need) ||
        !tdb_mul_ok(need, part_bytes, &need) || need > tdb_cur_left(md))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "%s: %u metadata and %u data %ss do not fit in %zu "
                       "metadata bytes", name, *nmd, *ndata, part,
                       tdb_cur_left(md));
    return 0;
}

int tdb_compress_write_counts(const struct tdb_filter_call *call,
                              size_t md_size, size_t size, const char *name,
                              struct tdb_buf *md_out)
{
    int rc = tdb_buf_put_u32(md_out, md_size > 0);

    if (rc == 0)
        rc = tdb_buf_put_u32(md_out, size > 0);
    if (rc < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "%s: out of memory", name);
    return 0;
}

/* The parts of one kind ("metadata", "data") of a chunk: how many, the
 * most bytes they may hold together (the caller's bound, struct
 * tdb_filter_call) and where they go. */
struct compress_parts {
    const char *kind;
    uint32_t nparts;
    uint64_t limit;
    struct tdb_buf *out;
};

/* Decompresses the parts described in md, taking their bytes from the
 * data cursor; the limit is checked before allocating. */
static int gzip_frame_parts(const struct tdb_compress_codec *codec,
                            const struct tdb_filter_call *call,
                            struct tdb_cursor *md, struct tdb_cursor *data,
                            const struct compress_parts *pp)
{
    const char *kind = pp->kind;
    uint32_t nparts = pp->nparts;
    uint64_t limit = pp->limit, total = 0;
    struct tdb_buf *out = pp->out;

    for (uint32_t i = 0; i < nparts; i++) {
        uint32_t orig = 0, comp = 0;
        const uint8_t *src = NULL;
        uint8_t *dst = NULL, dummy = 0;

        tdb_cur_u32(md, &orig);
        tdb_cur_u32(md, &comp);
        if (md->bad)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: metadata truncated at %s part %u",
                           codec->name, kind, i);
        if (tdb_cur_bytes(data, comp, &src) < 0)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: %s part %u claims %u compressed bytes but "
                           "only %zu remain",
                           codec->name, kind, i, comp, tdb_cur_left(data));
        if (!tdb_add_ok(total, orig, &total) || total > limit)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: %s part %u records %u bytes, more than the "
                           "%llu the chunk's declared size allows",
                           codec->name, kind, i, orig,
                           (unsigned long long)limit);
        if (orig == 0 && comp == 0)
            continue;
        if (codec->max_out && orig > codec->max_out(call, src, comp))
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: %s part %u records %u bytes, more than its "
                           "%u compressed bytes can hold",
                           codec->name, kind, i, orig, comp);
        if (codec->decompress_buf) {
            int rc = codec->decompress_buf(call, src ? src : &dummy, comp,
                                           out, orig);
            if (rc < 0)
                return rc;
            continue;
        }
        if (orig > 0) {
            int rc = tdb_buf_grow(out, orig, &dst);
            if (rc < 0)
                return tdb_err(call->err, TDB_E_NOMEM,
                               "%s: cannot allocate %u bytes", codec->name,
                               orig);
        } else {
            dst = &dummy;
        }
        int rc = codec->decompress(call, src ? src : &dummy, comp, dst, orig);
        if (rc < 0) {
            if (orig > 0)
                out->len -= orig;
            return rc;
        }
    }
    return 0;
}

int tdb_compress_decode(const struct tdb_compress_codec *codec,
                        const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    uint32_t nmd, ndata;
    struct tdb_cursor dc;
    /* 8 bytes of metadata per part: two u32 lengths */
    int rc = tdb_compress_read_counts(call, &st->md, 8, codec->name, "part",
                                      &nmd, &ndata);

    if (rc < 0)
        return rc;
    tdb_cur_init(&dc, st->data, st->size);
    struct compress_parts mp = {"metadata", nmd, tdb_filter_max_md(call),
                                st->md_out};
    struct compress_parts dp = {"data", ndata, tdb_filter_max_data(call),
                                st->data_out};
    rc = gzip_frame_parts(codec, call, &st->md, &dc, &mp);
    if (rc == 0)
        rc = gzip_frame_parts(codec, call, &st->md, &dc, &dp);
    if (rc == 0)
        tdb_cur_skip(&st->md, tdb_cur_left(&st->md));
    return rc;
}

/* Compresses one part into data_out and records its lengths in md_out. */
static int gzip_frame_part(const struct tdb_compress_codec *codec,
                           const struct tdb_filter_call *call,
                           const uint8_t *src, size_t n,
                           struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    size_t before = data_out->len;
    int rc;

    if (n > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "%s: part of %zu bytes is too large to compress",
                       codec->name, n);
    rc = codec->compress(call, src, n, data_out);
    if (rc < 0)
        return rc;
    if (data_out->len - before > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "%s: compressed part exceeds 4 GiB", codec->name);
    rc = tdb_buf_put_u32(md_out, (uint32_t)n);
    if (rc == 0)
        rc = tdb_buf_put_u32(md_out, (uint32_t)(data_out->len - before));
    if (rc < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "%s: out of memory",
                       codec->name);
    return 0;
}

int tdb_compress_encode(const struct tdb_compress_codec *codec,
                        const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    size_t md_size = st->md.len;
    size_t size = st->size;
    int rc =
        tdb_compress_write_counts(call, md_size, size, codec->name, st->md_out);

    if (rc == 0 && md_size)
        rc = gzip_frame_part(codec, call, st->md.p, md_size, st->md_out,
                             st->data_out);
    if (rc == 0 && size)
        rc = gzip_frame_part(codec, call, st->data, size, st->md_out,
                             st->data_out);
    return rc;
}

/* ------------------------------------------- the var-sized strings prefix */

int tdb_compress_strings_read_hdr(struct tdb_compress_strings_hdr *h,
                                  struct tdb_cursor *md, const char *name,
                                  struct tdb_error *err)
{
    uint32_t nmd = 0, ndata = 0;

    tdb_cur_u32(md, &nmd);
    tdb_cur_u32(md, &ndata);
    tdb_cur_u32(md, &h->string_bytes);
    tdb_cur_u32(md, &h->encoded_bytes);
    tdb_cur_u32(md, &h->offsets_bytes);
    if (md->bad)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: string filter metadata truncated", name);
    return 0;
}

int tdb_compress_strings_write_hdr(const struct tdb_compress_strings_hdr *h,
                                   struct tdb_buf *out)
{
    int rc = tdb_buf_put_u32(out, 0); /* metadata parts */
    if (rc == 0)
        rc = tdb_buf_put_u32(out, 1); /* data parts */
    if (rc == 0)
        rc = tdb_buf_put_u32(out, h->string_bytes);
    if (rc == 0)
        rc = tdb_buf_put_u32(out, h->encoded_bytes);
    if (rc == 0)
        rc = tdb_buf_put_u32(out, h->offsets_bytes);
    return rc;
}

int tdb_compress_strings_check_input(const struct tdb_filter_call *call,
                                     size_t md_size, size_t size,
                                     const char *name)
{
    uint64_t prev = 0;

    if (md_size != 0)
        return tdb_err(call->err, TDB_E_INVAL,
                       "%s: the string form must be the first filter (got "
                       "%zu metadata bytes)", name, md_size);
    if (call->n_offsets > 0 && !call->in_offsets)
        return tdb_err(call->err, TDB_E_INVAL, "%s: no input offsets", name);
    if (call->n_offsets == 0 && size != 0)
        return tdb_err(call->err, TDB_E_INVAL,
                       "%s: %zu string bytes but no offsets", name, size);
    for (uint64_t i = 0; i < call->n_offsets; i++) {
        uint64_t o = call->in_offsets[i];
        if ((i == 0 && o != 0) || o < prev || o > size)
            return tdb_err(call->err, TDB_E_INVAL,
                           "%s: input offset %llu (%llu) is out of order or "
                           "past the %zu string bytes", name,
                           (unsigned long long)i, (unsigned long long)o,
                           size);
        prev = o;
    }
    return 0;
}
