/* pipeline.c: filter pipelines (format_spec/filter_pipeline.md) and filtered
 * tiles (tile.md: chunks), run in reverse to read and forward to write. */
#include "filter.h"
#include "compress_common.h"

#include <stdlib.h>

#define PIPELINE_MAX_FILTERS 64
#define PIPELINE_CHUNK_BYTES 65536  /* TileDB's max tile chunk size */

/* The one table from TileDB's filter type to our filter. */
static const struct tdb_filter_ops *const pipeline_table[TDB_FILTER_TYPE_COUNT] = {
    [TDB_FILTER_NONE] = &tdb_filter_noop,
    [TDB_FILTER_GZIP] = &tdb_filter_gzip,
    [TDB_FILTER_ZSTD] = &tdb_filter_zstd,
    [TDB_FILTER_LZ4] = &tdb_filter_lz4,
    [TDB_FILTER_RLE] = &tdb_filter_rle,
    [TDB_FILTER_BZIP2] = &tdb_filter_bzip2,
    [TDB_FILTER_DOUBLE_DELTA] = &tdb_filter_double_delta,
    [TDB_FILTER_BIT_WIDTH_REDUCTION] = &tdb_filter_bit_width_reduction,
    [TDB_FILTER_BITSHUFFLE] = &tdb_filter_bitshuffle,
    [TDB_FILTER_BYTESHUFFLE] = &tdb_filter_byteshuffle,
    [TDB_FILTER_POSITIVE_DELTA] = &tdb_filter_positive_delta,
    [TDB_FILTER_AES_256_GCM] = &tdb_filter_aes256gcm,
    [TDB_FILTER_CHECKSUM_MD5] = &tdb_filter_checksum_md5,
    [TDB_FILTER_CHECKSUM_SHA256] = &tdb_filter_checksum_sha256,
    [TDB_FILTER_DICTIONARY] = &tdb_filter_dictionary,
    [TDB_FILTER_SCALE_FLOAT] = &tdb_filter_scale_float,
    [TDB_FILTER_XOR] = &tdb_filter_xor,
    [TDB_FILTER_WEBP] = &tdb_filter_webp,
    [TDB_FILTER_DELTA] = &tdb_filter_delta,
};

const struct tdb_filter_ops *tdb_filter_lookup(unsigned type)
{
    return type < TDB_FILTER_TYPE_COUNT ? pipeline_table[type] : NULL;
}

int tdb_filter_init(struct tdb_filter *f, unsigned type)
{
    memset(f, 0, sizeof *f);
    f->type = (uint8_t)type;
    f->ops = tdb_filter_lookup(type);
    if (!f->ops)
        return TDB_E_INVAL;
    if (f->ops->options_size)
        memcpy(f->options.bytes, f->ops->defaults, f->ops->options_size);
    return 0;
}

/* ------------------------------------------------------------- (de)serial */

int tdb_pipeline_read(struct tdb_pipeline *p, struct tdb_cursor *c,
                      uint32_t version, struct tdb_error *err)
{
    memset(p, 0, sizeof *p);
    uint32_t n;
    tdb_cur_u32(c, &p->max_chunk_size);
    if (tdb_cur_u32(c, &n))
        return tdb_err(err, TDB_E_CORRUPT, "filter pipeline truncated");
    if (n > PIPELINE_MAX_FILTERS)
        return tdb_err(err, TDB_E_CORRUPT, "filter pipeline of %u filters", n);
    p->f = calloc(n ? n : 1, sizeof *p->f);
    if (!p->f)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        struct tdb_filter *f = &p->f[i];
        uint8_t type;
        uint32_t osize;
        const uint8_t *opts;
        tdb_cur_u8(c, &type);
        tdb_cur_u32(c, &osize);
        if (tdb_cur_bytes(c, osize, &opts)) {
            tdb_pipeline_free(p);
            return tdb_err(err, TDB_E_CORRUPT, "filter %u truncated", i);
        }
        p->n = i + 1;
        if (tdb_filter_init(f, type)) {
            tdb_pipeline_free(p);
            return tdb_err(err, TDB_E_UNSUPPORTED, "unknown filter type %u",
                           type);
        }
        struct tdb_cursor oc;
        tdb_cur_init(&oc, opts, osize);
        if (f->ops->read_options) {
            int r = f->ops->read_options(f, &oc, version, err);
            if (r) {
                const char *name = f->ops->name;
                tdb_pipeline_free(p);
                return tdb_err_ctx(err, r, "filter %s", name);
            }
        }
        /* A compressor whose options say "no compression" is a no-op. */
        const struct tdb_compress_options *co = tdb_filter_opts(f);
        if ((type == TDB_FILTER_GZIP || type == TDB_FILTER_ZSTD ||
             type == TDB_FILTER_LZ4 || type == TDB_FILTER_BZIP2 ||
             type == TDB_FILTER_RLE) &&
            osize >= 5 && co->compressor == TDB_COMPRESSOR_NONE)
            f->ops = &tdb_filter_noop;
    }
    p->n = n;
    return 0;
}

int tdb_pipeline_write(const struct tdb_pipeline *p, struct tdb_buf *out)
{
    int r = tdb_buf_put_u32(out, p->max_chunk_size);
    if (!r)
        r = tdb_buf_put_u32(out, p->n);
    for (uint32_t i = 0; !r && i < p->n; i++) {
        const struct tdb_filter *f = &p->f[i];
        struct tdb_buf o = {0};
        if (f->ops && f->ops->write_options)
            r = f->ops->write_options(f, &o);
        if (!r)
            r = tdb_buf_put_u8(out, f->type);
        if (!r)
            r = tdb_buf_put_u32(out, (uint32_t)o.len);
        if (!r)
            r = tdb_buf_append(out, o.data, o.len);
        tdb_buf_free(&o);
    }
    return r;
}

void tdb_pipeline_free(struct tdb_pipeline *p)
{
    if (!p)
        return;
    free(p->f);
    memset(p, 0, sizeof *p);
}

int tdb_pipeline_copy(struct tdb_pipeline *dst, const struct tdb_pipeline *src)
{
    *dst = *src;
    dst->f = calloc(src->n ? src->n : 1, sizeof *dst->f);
    if (!dst->f)
        return TDB_E_NOMEM;
    if (src->n)
        memcpy(dst->f, src->f, src->n * sizeof *dst->f);
    return 0;
}

bool tdb_pipeline_has(const struct tdb_pipeline *p, unsigned type)
{
    for (uint32_t i = 0; i < p->n; i++)
        if (p->f[i].type == type)
            return true;
    return false;
}

bool tdb_pipeline_skips_offsets(const struct tdb_pipeline *p,
                                unsigned datatype, uint32_t version)
{
    bool ascii = datatype == TDB_STRING_ASCII, utf8 = datatype == TDB_STRING_UTF8;
    if (((version >= 12 && ascii) || (version >= 17 && utf8)) &&
        tdb_pipeline_has(p, TDB_FILTER_RLE))
        return true;
    if (((version >= 13 && ascii) || (version >= 17 && utf8)) &&
        tdb_pipeline_has(p, TDB_FILTER_DICTIONARY))
        return true;
    return false;
}

/* ---------------------------------------------------------------- running */

/* The filters to run: the pipeline's plus, for an encrypted array, the
 * internal AES-256-GCM filter last; and the datatype each one receives. */
struct pipeline_plan {
    uint32_t n;
    const struct tdb_filter *f[PIPELINE_MAX_FILTERS + 1];
    unsigned in_type[PIPELINE_MAX_FILTERS + 1];
    struct tdb_filter aes;
};

static void pipeline_plan(const struct tdb_pipeline *p,
                          const struct tdb_tile_desc *d,
                          struct pipeline_plan *pl)
{
    unsigned t = d->datatype;
    pl->n = 0;
    for (uint32_t i = 0; p && i < p->n && i < PIPELINE_MAX_FILTERS; i++) {
        const struct tdb_filter *f = &p->f[i];
        pl->f[pl->n] = f;
        pl->in_type[pl->n++] = t;
        if (f->ops && f->ops->output_type)
            t = f->ops->output_type(f, t);
    }
    if (d->key && !(p && tdb_pipeline_has(p, TDB_FILTER_AES_256_GCM))) {
        pl->aes = (struct tdb_filter){.type = TDB_FILTER_AES_256_GCM,
                                      .ops = &tdb_filter_aes256gcm};
        pl->f[pl->n] = &pl->aes;
        pl->in_type[pl->n++] = t;
    }
}

static void pipeline_call(struct tdb_filter_call *call,
                          const struct pipeline_plan *pl, uint32_t i,
                          const struct tdb_tile_desc *d, bool string_mode,
                          struct tdb_error *err)
{
    memset(call, 0, sizeof *call);
    call->filter = pl->f[i];
    call->datatype = pl->in_type[i];
    call->cell_size = d->cell_size;
    call->version = d->version;
    call->is_var = d->is_var;
    call->key = d->key;
    call->simd = d->simd;
    call->err = err;
    unsigned t = pl->f[i]->type;
    call->strings_with_offsets =
        string_mode && (t == TDB_FILTER_RLE || t == TDB_FILTER_DICTIONARY);
}

/* ----------------------------------------------------------------- bounds */

/* Sizes here saturate at TDB_MAX_TILE_BYTES: nothing larger is ever read. */
static uint64_t bound_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return tdb_add_ok(a, b, &r) && r < TDB_MAX_TILE_BYTES ? r
                                                          : TDB_MAX_TILE_BYTES;
}

static uint64_t bound_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return tdb_mul_ok(a, b, &r) && r < TDB_MAX_TILE_BYTES ? r
                                                          : TDB_MAX_TILE_BYTES;
}

/* The most a general-purpose compressor (gzip, zstd, lz4, bzip2) writes for
 * n bytes: above each library's compressBound. */
static uint64_t bound_comp(uint64_t n)
{
    return bound_add(n, bound_add(n / 8, 1024));
}

/* The most bytes of data (*x) and metadata (*m) filter f can write when it
 * is given at most *x and *m bytes (forward direction).  Generous: these
 * bound what a decoder may allocate, they do not check the format. */
static void bound_forward(const struct tdb_filter *f, bool string_form,
                          uint64_t cells, uint64_t *x, uint64_t *m)
{
    uint64_t d = *x, md = *m;
    if (f->ops == &tdb_filter_noop)
        return;
    switch (f->type) {
    case TDB_FILTER_GZIP: case TDB_FILTER_ZSTD: case TDB_FILTER_LZ4:
    case TDB_FILTER_BZIP2:
        *x = bound_add(bound_comp(md), bound_comp(d));
        *m = 24;
        return;
    case TDB_FILTER_RLE:
        if (string_form) {
            /* runs: one header of at most 16 bytes per cell, the strings */
            *x = bound_add(bound_mul(cells, 16), d);
            *m = bound_add(md, 32);
        } else {
            /* runs of one value of at least one byte and 2 bytes of length */
            *x = bound_add(bound_mul(bound_add(md, d), 3), 128);
            *m = 24;
        }
        return;
    case TDB_FILTER_DICTIONARY:
        if (string_form) {
            /* ids of at most 8 bytes; the dictionary in the metadata */
            *x = bound_mul(cells, 8);
            *m = bound_add(bound_add(md, 64),
                           bound_add(d, bound_mul(cells, 8)));
        }
        return;
    case TDB_FILTER_DELTA: case TDB_FILTER_DOUBLE_DELTA:
        /* each part gains a header and its last word of padding */
        *x = bound_add(bound_add(md, d), 64);
        *m = 24;
        return;
    case TDB_FILTER_BIT_WIDTH_REDUCTION: case TDB_FILTER_POSITIVE_DELTA:
        /* a window of at least one value: at most 13 bytes each */
        *m = bound_add(md, bound_add(bound_mul(d, 13), 64));
        return;
    case TDB_FILTER_BITSHUFFLE: case TDB_FILTER_BYTESHUFFLE:
    case TDB_FILTER_XOR:
        *m = bound_add(md, 16);
        return;
    case TDB_FILTER_SCALE_FLOAT:
        /* float32 to int64 doubles the data */
        *x = bound_add(bound_mul(d, 2), 16);
        *m = bound_add(md, 16);
        return;
    case TDB_FILTER_CHECKSUM_MD5: case TDB_FILTER_CHECKSUM_SHA256:
        *m = bound_add(md, 96);
        return;
    case TDB_FILTER_AES_256_GCM:
        *x = bound_add(md, d);
        *m = 96;
        return;
    default:
        *x = *m = TDB_MAX_TILE_BYTES;
        return;
    }
}

/* The most data and metadata each stage of a chunk that declares `orig`
 * bytes can hold: stage 0 is the chunk itself, stage i + 1 what filter i
 * writes; the decoder of filter i may produce at most stage i. */
static void pipeline_bounds(const struct pipeline_plan *pl, bool string_mode,
                            uint64_t orig, uint64_t cells, uint64_t *x,
                            uint64_t *m)
{
    x[0] = orig;
    m[0] = 0;
    for (uint32_t i = 0; i < pl->n; i++) {
        unsigned t = pl->f[i]->type;
        bool sf = string_mode &&
                  (t == TDB_FILTER_RLE || t == TDB_FILTER_DICTIONARY);
        x[i + 1] = x[i];
        m[i + 1] = m[i];
        bound_forward(pl->f[i], sf, cells, &x[i + 1], &m[i + 1]);
    }
}

/* What decoding one tile keeps across its chunks. */
struct pipeline_dec {
    const struct tdb_tile_desc *d;
    struct pipeline_plan pl;
    bool string_mode;
    uint64_t cells;         /* the most cells of the tile */
    size_t off0;            /* d->offsets->len before the tile */
    uint64_t total;         /* bytes the chunks so far declare */
    struct tdb_buf *bufs;   /* the four stage buffers */
    struct tdb_buf *out;
    struct tdb_error *err;
};

/* One chunk on its way through the filters: its current (md, data). */
struct pipeline_chunk {
    uint64_t k;             /* its number in the tile */
    uint32_t orig;          /* the bytes it declares */
    const uint8_t *md, *data;
    size_t mlen, dlen;
    uint64_t cells_left;    /* the cells the earlier chunks have not used */
    uint64_t bx[PIPELINE_MAX_FILTERS + 2], bm[PIPELINE_MAX_FILTERS + 2];
};

/* Reserves room in out for what the chunks after h declare (a hint that
 * may fail, and only within what `size` bytes of tile can plausibly give:
 * damaged headers allocate nothing). */
static void pipeline_reserve(struct tdb_cursor h, uint64_t nchunks,
                             size_t size, struct tdb_buf *out)
{
    uint64_t want = 0;
    uint32_t orig, flen, mlen;
    const uint8_t *skip;
    for (uint64_t k = 0; k < nchunks; k++) {
        if (tdb_cur_u32(&h, &orig) || tdb_cur_u32(&h, &flen) ||
            tdb_cur_u32(&h, &mlen) ||
            tdb_cur_bytes(&h, (size_t)flen + mlen, &skip))
            break;
        want += orig;
    }
    if (want <= (uint64_t)size * 64 + (1u << 20))
        tdb_buf_reserve(out, (size_t)want);
}

/* What a stage is handed for bytes it has none of (an empty chunk, a
 * stage that wrote nothing): an empty buffer's data is NULL, and a filter
 * that computes data + 0 from it is undefined behaviour, so a stage's
 * data and metadata are never NULL. */
static const uint8_t pipeline_none[1];

static const uint8_t *pipeline_bytes(const uint8_t *p)
{
    return p ? p : pipeline_none;
}

/* Runs the decoder of filter i on the chunk's current (md, data) into mo
 * and dout (its bytes from dbase on), and checks that it stayed within
 * the bounds of its stage. */
static int pipeline_decode_filter(struct pipeline_dec *dc,
                                  const struct pipeline_chunk *ch, uint32_t i,
                                  struct tdb_buf *mo, struct tdb_buf *dout,
                                  size_t dbase)
{
    const struct tdb_filter *f = dc->pl.f[i];
    struct tdb_buf *offsets = dc->d->offsets;
    struct tdb_error *err = dc->err;
    struct tdb_filter_call call;
    pipeline_call(&call, &dc->pl, i, dc->d, dc->string_mode, err);
    call.offsets = offsets;
    call.bounded = true;
    call.max_data = ch->bx[i];
    call.max_md = ch->bm[i];
    call.max_cells = ch->cells_left;
    call.scratch = dc->d->scratch;
    if (!f->ops || !f->ops->decode)
        return tdb_err(err, TDB_E_UNSUPPORTED, "filter type %u cannot decode",
                       f->type);
    struct tdb_filter_stage st = {.data = pipeline_bytes(ch->data),
                                  .size = ch->dlen, .md_out = mo,
                                  .data_out = dout};
    tdb_cur_init(&st.md, pipeline_bytes(ch->md), ch->mlen);
    if (err)
        err->code = 0;
    size_t off_before = offsets ? offsets->len : 0;
    int r = f->ops->decode(&call, &st);
    if (r) {
        if (!err || !err->code)
            tdb_err(err, r, "decode failed");
        return r;
    }
    /* every decoder checks before allocating; this catches one that
     * would hand on more */
    if (dout->len - dbase > ch->bx[i] || mo->len > ch->bm[i] ||
        (offsets && (offsets->len - off_before) / 8 > ch->cells_left))
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s decoded %zu data and %zu metadata bytes, more "
                       "than a chunk of %u bytes allows (%llu, %llu)",
                       f->ops->name, dout->len - dbase, mo->len, ch->orig,
                       (unsigned long long)ch->bx[i],
                       (unsigned long long)ch->bm[i]);
    return 0;
}

/* Runs the filters last to first over the chunk, alternating between the
 * stage buffers; the last stage decodes straight onto the end of out
 * (from out_base on).  The chunk's (md, data) end as the decoded ones. */
static int pipeline_decode_filters(struct pipeline_dec *dc,
                                   struct pipeline_chunk *ch, size_t out_base)
{
    int which = 0;
    for (uint32_t i = dc->pl.n; i-- > 0;) {
        struct tdb_buf *mo = &dc->bufs[which * 2];
        struct tdb_buf *dout = &dc->bufs[which * 2 + 1];
        size_t dbase = 0;
        tdb_buf_reset(mo);
        if (i == 0) {
            dout = dc->out;
            dbase = out_base;
        } else {
            tdb_buf_reset(dout);
        }
        int r = pipeline_decode_filter(dc, ch, i, mo, dout, dbase);
        if (r)
            return r;
        ch->md = pipeline_bytes(mo->data);
        ch->mlen = mo->len;
        ch->data = dout->data ? dout->data + dbase : pipeline_none;
        ch->dlen = dout->len - dbase;
        which ^= 1;
    }
    return 0;
}

/* Reads chunk k's header and bytes from c and decodes it onto out. */
static int pipeline_decode_chunk(struct pipeline_dec *dc, struct tdb_cursor *c,
                                 uint64_t k)
{
    const struct tdb_tile_desc *d = dc->d;
    struct tdb_buf *out = dc->out, *offsets = d->offsets;
    struct tdb_error *err = dc->err;
    struct pipeline_chunk ch;   /* (its bounds are set below) */
    uint32_t flen, mlen;
    ch.k = k;
    tdb_cur_u32(c, &ch.orig);
    tdb_cur_u32(c, &flen);
    tdb_cur_u32(c, &mlen);
    tdb_cur_bytes(c, mlen, &ch.md);
    if (tdb_cur_bytes(c, flen, &ch.data))
        return tdb_err(err, TDB_E_CORRUPT, "%s: chunk %llu truncated",
                       d->what, (unsigned long long)k);
    if (!tdb_add_ok(dc->total, ch.orig, &dc->total) ||
        dc->total > TDB_MAX_TILE_BYTES)
        return tdb_err(err, TDB_E_CORRUPT, "%s: tile larger than %llu bytes",
                       d->what, (unsigned long long)TDB_MAX_TILE_BYTES);
    ch.mlen = mlen;
    ch.dlen = flen;
    uint64_t used = offsets ? (offsets->len - dc->off0) / 8 : 0;
    ch.cells_left = used > dc->cells ? 0 : dc->cells - used;
    pipeline_bounds(&dc->pl, dc->string_mode, ch.orig, ch.cells_left, ch.bx,
                    ch.bm);
    const size_t out_base = out->len;
    int r = pipeline_decode_filters(dc, &ch, out_base);
    if (r) {
        if (dc->pl.n)
            out->len = out_base;
        tdb_err_ctx(err, r, "%s: chunk %llu", d->what, (unsigned long long)k);
        return r;
    }
    if (ch.dlen != ch.orig) {
        if (dc->pl.n)
            out->len = out_base;
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: chunk %llu decodes to %zu bytes, header says %u",
                       d->what, (unsigned long long)k, ch.dlen, ch.orig);
    }
    if (!dc->pl.n && (r = tdb_buf_append(out, ch.data, ch.dlen)))
        return tdb_err(err, r, "%s: out of memory", d->what);
    return 0;
}

int tdb_pipeline_decode(const struct tdb_pipeline *p,
                        const struct tdb_tile_desc *d, const uint8_t *src,
                        size_t size, struct tdb_buf *out,
                        struct tdb_error *err)
{
    struct tdb_buf own[4] = {{0}};
    struct pipeline_dec dc = {
        .d = d,
        .string_mode = d->offsets && d->is_var && p &&
                       tdb_pipeline_skips_offsets(p, d->datatype, d->version),
        .cells = d->ncells ? d->ncells : TDB_PIPELINE_MAX_CELLS,
        .off0 = d->offsets ? d->offsets->len : 0,
        .bufs = d->scratch ? d->scratch->bufs : own,
        .out = out,
        .err = err,
    };
    pipeline_plan(p, d, &dc.pl);
    struct tdb_cursor c;
    tdb_cur_init(&c, src, size);
    uint64_t nchunks;
    if (tdb_cur_u64(&c, &nchunks))
        return tdb_err(err, TDB_E_CORRUPT, "%s: tile truncated (no chunk count)",
                       d->what);
    if (nchunks > size / 12 + 1)
        return tdb_err(err, TDB_E_CORRUPT, "%s: tile claims %llu chunks in %zu bytes",
                       d->what, (unsigned long long)nchunks, size);
    pipeline_reserve(c, nchunks, size, out);
    int r = 0;
    for (uint64_t k = 0; k < nchunks && !r; k++)
        r = pipeline_decode_chunk(&dc, &c, k);
    for (int i = 0; i < 4; i++)
        tdb_buf_free(&own[i]);
    return r;
}

void tdb_scratch_free(struct tdb_scratch *s)
{
    if (!s)
        return;
    tdb_buf_free(&s->raw);
    for (int i = 0; i < 4; i++)
        tdb_buf_free(&s->bufs[i]);
    for (unsigned t = 0; t < TDB_FILTER_TYPE_COUNT; t++)
        if (s->filter_state[t])
            tdb_filter_lookup(t)->scratch_free(s->filter_state[t]);
    free(s);
}

/* TileDB's chunk boundaries for var-sized values: whole cells, a chunk may
 * overflow to 150% of the chunk size (FilterPipeline::get_var_chunk_sizes). */
static int pipeline_var_chunks(uint64_t chunk, const uint64_t *off, uint64_t n,
                               uint64_t size, struct tdb_buf *bounds)
{
    uint64_t cur = 0, min_size = chunk / 2, max_size = chunk + chunk / 2;
    int r = tdb_buf_put_u64(bounds, 0);
    for (uint64_t c = 0; c < n && !r; c++) {
        uint64_t cs = c == n - 1 ? size - off[c] : off[c + 1] - off[c];
        uint64_t ns = cur + cs;
        if (ns > chunk) {
            if (cur <= min_size || ns <= max_size) {
                r = tdb_buf_put_u64(bounds, off[c] + cs);
                cur = 0;
            } else {
                r = tdb_buf_put_u64(bounds, off[c]);
                if (cs > chunk) {
                    if (c != n - 1 && !r)
                        r = tdb_buf_put_u64(bounds, off[c] + cs);
                    cur = 0;
                } else {
                    cur = cs;
                }
            }
        } else {
            cur += cs;
        }
    }
    return r;
}

/* The start of every chunk of a tile of `size` bytes, as TileDB cuts it
 * (cells never split), appended to bounds as uint64s. */
static int pipeline_chunk_starts(const struct tdb_pipeline *p,
                                 const struct tdb_tile_desc *d, size_t size,
                                 bool string_mode, struct tdb_buf *bounds)
{
    uint64_t cs = d->cell_size ? d->cell_size : 1;
    bool chunking = p && p->max_chunk_size != 0 && !string_mode &&
                    !tdb_pipeline_has(p, TDB_FILTER_WEBP);
    uint64_t chunk = size;
    if (chunking) {
        chunk = size < PIPELINE_CHUNK_BYTES ? size : PIPELINE_CHUNK_BYTES;
        chunk = chunk / cs * cs;
        if (chunk < cs)
            chunk = cs;
    }
    const uint64_t *offsets = d->in_offsets;
    int r = 0;
    if (offsets && !string_mode && chunking && size != chunk) {
        r = pipeline_var_chunks(chunk, offsets, d->n_offsets, size, bounds);
    } else if (offsets && (!chunking || size == chunk)) {
        r = tdb_buf_put_u64(bounds, 0);
    } else if (size != chunk) {
        for (uint64_t o = 0; o < size && !r; o += chunk)
            r = tdb_buf_put_u64(bounds, o);
    } else {
        r = tdb_buf_put_u64(bounds, 0);
    }
    return r;
}

/* What encoding one tile keeps across its chunks. */
struct pipeline_enc {
    const struct tdb_tile_desc *d;
    struct pipeline_plan pl;
    bool string_mode;
    struct tdb_buf bufs[4];     /* the stage buffers */
    struct tdb_error *err;
};

/* Runs the filters first to last over chunk k, alternating between the
 * stage buffers; *st ends as the filtered (md, data). */
static int pipeline_encode_filters(struct pipeline_enc *ec,
                                   struct tdb_filter_stage *st, uint64_t k)
{
    const struct pipeline_plan *pl = &ec->pl;
    int which = 0;
    for (uint32_t i = 0; i < pl->n; i++) {
        struct tdb_buf *mo = &ec->bufs[which * 2];
        struct tdb_buf *dout = &ec->bufs[which * 2 + 1];
        tdb_buf_reset(mo);
        tdb_buf_reset(dout);
        struct tdb_filter_call call;
        pipeline_call(&call, pl, i, ec->d, ec->string_mode, ec->err);
        call.scratch = ec->d->scratch;
        call.in_offsets = ec->d->in_offsets;
        call.n_offsets = ec->d->n_offsets;
        if (!pl->f[i]->ops || !pl->f[i]->ops->encode)
            return tdb_err(ec->err, TDB_E_UNSUPPORTED,
                           "filter type %u cannot encode", pl->f[i]->type);
        st->md_out = mo;
        st->data_out = dout;
        int r = pl->f[i]->ops->encode(&call, st);
        if (r) {
            tdb_err_ctx(ec->err, r, "%s: encoding chunk %llu", ec->d->what,
                        (unsigned long long)k);
            return r;
        }
        tdb_cur_init(&st->md, pipeline_bytes(mo->data), mo->len);
        st->data = pipeline_bytes(dout->data);
        st->size = dout->len;
        which ^= 1;
    }
    return 0;
}

/* Appends one filtered chunk (tile.md) that holds `orig` bytes. */
static int pipeline_put_chunk(struct tdb_buf *out, uint64_t orig,
                              const struct tdb_filter_stage *st)
{
    int r = tdb_buf_put_u32(out, (uint32_t)orig);
    if (!r)
        r = tdb_buf_put_u32(out, (uint32_t)st->size);
    if (!r)
        r = tdb_buf_put_u32(out, (uint32_t)st->md.len);
    if (!r)
        r = tdb_buf_append(out, st->md.p, st->md.len);
    if (!r)
        r = tdb_buf_append(out, st->data, st->size);
    return r;
}

int tdb_pipeline_encode(const struct tdb_pipeline *p,
                        const struct tdb_tile_desc *d, const uint8_t *src,
                        size_t size, struct tdb_buf *out,
                        struct tdb_error *err)
{
    struct pipeline_enc ec = {
        .d = d,
        .string_mode = d->in_offsets && d->is_var && p &&
                       tdb_pipeline_skips_offsets(p, d->datatype, d->version),
        .err = err,
    };
    pipeline_plan(p, d, &ec.pl);
    struct tdb_buf bounds = {0};
    int r = pipeline_chunk_starts(p, d, size, ec.string_mode, &bounds);
    if (r) {
        tdb_buf_free(&bounds);
        return tdb_err(err, r, "%s: out of memory", d->what);
    }
    uint64_t nchunks = bounds.len / 8;
    r = tdb_buf_put_u64(out, nchunks);
    for (uint64_t k = 0; k < nchunks && !r; k++) {
        uint64_t start = tdb_le64(bounds.data + 8 * k);
        uint64_t end = k + 1 < nchunks ? tdb_le64(bounds.data + 8 * (k + 1)) : size;
        struct tdb_filter_stage st = {
            .data = src ? src + start : pipeline_none,
            .size = (size_t)(end - start)};
        tdb_cur_init(&st.md, pipeline_none, 0);
        r = pipeline_encode_filters(&ec, &st, k);
        if (r)
            break;
        if (st.size > UINT32_MAX || st.md.len > UINT32_MAX) {
            r = tdb_err(err, TDB_E_INVAL, "%s: filtered chunk too large", d->what);
            break;
        }
        r = pipeline_put_chunk(out, end - start, &st);
    }
    for (int i = 0; i < 4; i++)
        tdb_buf_free(&ec.bufs[i]);
    tdb_buf_free(&bounds);
    return r;
}
