/* compress_common.c: the framing every compression filter shares (tile.md,
 * "Compression Filters"): a compressor's options, the parts of the chunk
 * metadata and data, and the prefix of the var-sized string forms of RLE
 * and DICTIONARY.  Each compressor supplies only its codec. */
#include "compress_common.h"

#include <limits.h>
#include <stddef.h>

const struct tdb_filter_opt tdb_compress_opts[TDB_COMPRESS_N_OPTS] = {
    {.name = "compressor", .kind = TDB_FOPT_UINT, .width = 1,
     .flags = TDB_FOPT_NO_JSON,
     .offset = offsetof(struct tdb_compress_options, compressor)},
    {.name = "level", .kind = TDB_FOPT_INT, .width = 4,
     .flags = TDB_FOPT_NULL_OK, .max = INT32_MAX,
     .offset = offsetof(struct tdb_compress_options, level)},
};

const struct tdb_filter_opt tdb_delta_opts[TDB_DELTA_N_OPTS] = {
    {.name = "compressor", .kind = TDB_FOPT_UINT, .width = 1,
     .flags = TDB_FOPT_NO_JSON,
     .offset = offsetof(struct tdb_delta_options, c.compressor)},
    {.name = "level", .kind = TDB_FOPT_INT, .width = 4,
     .flags = TDB_FOPT_NULL_OK, .max = INT32_MAX,
     .offset = offsetof(struct tdb_delta_options, c.level)},
    {.name = "reinterpret_datatype", .kind = TDB_FOPT_DATATYPE, .width = 1,
     .flags = TDB_FOPT_NULL_OK,
     .offset = offsetof(struct tdb_delta_options, reinterpret_type)},
};

int tdb_compress_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                              uint32_t version, struct tdb_error *err)
{
    const struct tdb_compress_options *def = f->ops->defaults;
    struct tdb_compress_options *o = tdb_filter_opts_edit(f);
    const char *name = f->ops->name;
    uint8_t comp = 0;
    int32_t level = 0;

    (void)version;
    tdb_cur_u8(c, &comp);
    tdb_cur_i32(c, &level);
    if (c->bad)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s filter options truncated (need compressor byte "
                       "and level)", name);
    /* 0 (no compression) makes TileDB pass the data through; the pipeline
     * swaps such a filter for NONE. */
    if (comp != def->compressor && comp != TDB_COMPRESSOR_NONE)
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s filter options name compressor %u, expected %u",
                       name, (unsigned)comp, (unsigned)def->compressor);
    o->compressor = comp;
    o->level = level;
    return 0;
}

int tdb_compress_write_options(const struct tdb_filter *f,
                               struct tdb_buf *out)
{
    const struct tdb_compress_options *def = f->ops->defaults;
    int rc = tdb_buf_put_u8(out, def->compressor);
    if (rc == 0)
        rc = tdb_buf_put_i32(out, tdb_compress_level(f));
    return rc;
}

int tdb_delta_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                           uint32_t version, uint32_t since,
                           struct tdb_error *err)
{
    struct tdb_delta_options *o = tdb_filter_opts_edit(f);
    int r = tdb_compress_read_options(f, c, version, err);
    if (r)
        return r;
    o->reinterpret_type = TDB_ANY;
    if (version >= since) {
        if (tdb_cur_u8(c, &o->reinterpret_type))
            return tdb_err(err, TDB_E_CORRUPT,
                           "%s options truncated (no reinterpret datatype)",
                           f->ops->name);
        if (o->reinterpret_type >= TDB_DATATYPE_COUNT)
            return tdb_err(err, TDB_E_CORRUPT,
                           "%s reinterpret datatype %u is unknown",
                           f->ops->name, o->reinterpret_type);
    }
    return 0;
}

int tdb_delta_write_options(const struct tdb_filter *f, struct tdb_buf *out)
{
    const struct tdb_delta_options *o = tdb_filter_opts(f);
    int r = tdb_compress_write_options(f, out);
    return r ? r : tdb_buf_put_u8(out, o->reinterpret_type);
}

int tdb_compress_read_counts(const struct tdb_filter_call *call,
                             struct tdb_cursor *md, size_t part_bytes,
                             const char *name, const char *part,
                             struct tdb_compress_counts *n)
{
    uint64_t need = 0;

    n->nmd = n->ndata = 0;
    tdb_cur_u32(md, &n->nmd);
    tdb_cur_u32(md, &n->ndata);
    if (md->bad)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "%s: metadata truncated (%s counts)", name, part);
    if (!tdb_add_ok(n->nmd, n->ndata, &need) ||
        !tdb_mul_ok(need, part_bytes, &need) || need > tdb_cur_left(md))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "%s: %u metadata and %u data %ss do not fit in %zu "
                       "metadata bytes", name, n->nmd, n->ndata, part,
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

/* Appends part src[0..comp) decompressed to its orig bytes to out (as it
 * was on error). */
static int compress_part_out(const struct tdb_compress_codec *codec,
                             const struct tdb_filter_call *call,
                             const uint8_t *src, uint32_t comp,
                             uint32_t orig, struct tdb_buf *out)
{
    uint8_t dummy = 0, *dst = &dummy;
    int rc;
    if (!src)
        src = &dummy;
    if (codec->decompress_buf)
        return codec->decompress_buf(call, src, comp, out, orig);
    if (orig > 0 && tdb_buf_grow(out, orig, &dst) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "%s: cannot allocate %u bytes",
                       codec->name, orig);
    rc = codec->decompress(call, src, comp, dst, orig);
    if (rc < 0 && orig > 0)
        out->len -= orig;
    return rc;
}

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
        int rc = compress_part_out(codec, call, src, comp, orig, out);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int tdb_compress_decode(const struct tdb_compress_codec *codec,
                        const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    struct tdb_compress_counts n;
    struct tdb_cursor dc;
    /* 8 bytes of metadata per part: two u32 lengths */
    int rc = tdb_compress_read_counts(call, &st->md, 8, codec->name, "part",
                                      &n);

    if (rc < 0)
        return rc;
    tdb_cur_init(&dc, st->data, st->size);
    struct compress_parts mp = {"metadata", n.nmd, tdb_filter_max_md(call),
                                st->md_out};
    struct compress_parts dp = {"data", n.ndata, tdb_filter_max_data(call),
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
