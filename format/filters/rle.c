/* rle.c: the RLE filter, fixed values and var strings (tile.md). */
#include "compress_common.h"

/* Fixed-size form: each run is the value (cell_size bytes) followed by the
 * run length as a big-endian u16 (runs of at most 65535). */

#define RLE_MAX_RUN 65535u

static int rle_value_size(const struct tdb_filter_call *call, size_t *vs)
{
    if (call->cell_size == 0 || call->cell_size > TDB_MAX_TILE_BYTES)
        return tdb_err(call->err, TDB_E_INVAL,
                       "RLE: invalid value size %llu",
                       (unsigned long long)call->cell_size);
    *vs = (size_t)call->cell_size;
    return 0;
}

static int rle_decompress(const struct tdb_filter_call *call,
                          const uint8_t *src, size_t n, uint8_t *dst,
                          size_t dst_len)
{
    size_t vs = 0, run_size, out = 0;
    int rc = rle_value_size(call, &vs);

    if (rc < 0)
        return rc;
    run_size = vs + 2;
    if (n % run_size != 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: %zu bytes are not whole runs of %zu-byte "
                       "values", n, vs);
    for (size_t i = 0; i < n; i += run_size) {
        const uint8_t *run = src + i;
        size_t len = (size_t)run[vs] << 8 | run[vs + 1];
        uint64_t bytes;

        if (!tdb_mul_ok(len, vs, &bytes) || bytes > dst_len - out)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "RLE: runs decode to more than the recorded %zu "
                           "bytes", dst_len);
        for (size_t j = 0; j < len; j++, out += vs)
            memcpy(dst + out, run, vs);
    }
    if (out != dst_len)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: part decoded to %zu bytes, expected %zu", out,
                       dst_len);
    return 0;
}

/* The exact size the runs decode to; 0 when they are not whole runs (or
 * the value size is invalid), so that nothing is allocated for them. */
static uint64_t rle_max_out(const struct tdb_filter_call *call,
                            const uint8_t *src, size_t n)
{
    size_t vs = (size_t)call->cell_size, run_size;
    uint64_t total = 0;

    if (vs == 0 || call->cell_size > TDB_MAX_TILE_BYTES)
        return 0;
    run_size = vs + 2;
    if (n % run_size != 0)
        return 0;
    for (size_t i = 0; i < n; i += run_size)
        total += (uint64_t)(src[i + vs] << 8 | src[i + vs + 1]) * vs;
    return total;
}

static int rle_put_run(struct tdb_buf *out, const uint8_t *v, size_t vs,
                       unsigned len)
{
    uint8_t *p;
    int rc = tdb_buf_grow(out, vs + 2, &p);

    if (rc < 0)
        return rc;
    memcpy(p, v, vs);
    p[vs] = (uint8_t)(len >> 8);
    p[vs + 1] = (uint8_t)len;
    return 0;
}

static int rle_compress(const struct tdb_filter_call *call,
                        const uint8_t *src, size_t n, struct tdb_buf *out)
{
    size_t vs = 0, nvals;
    const uint8_t *prev;
    unsigned run = 1;
    int rc = rle_value_size(call, &vs);

    if (rc < 0)
        return rc;
    if (n % vs != 0)
        return tdb_err(call->err, TDB_E_INVAL,
                       "RLE: %zu bytes are not whole %zu-byte values", n, vs);
    nvals = n / vs;
    if (nvals == 0)
        return 0;
    prev = src;
    for (size_t i = 1; i < nvals; i++) {
        const uint8_t *cur = src + i * vs;
        if (run < RLE_MAX_RUN && memcmp(cur, prev, vs) == 0) {
            run++;
            continue;
        }
        if (rle_put_run(out, prev, vs, run) < 0)
            return tdb_err(call->err, TDB_E_NOMEM, "RLE: out of memory");
        prev = cur;
        run = 1;
    }
    if (rle_put_run(out, prev, vs, run) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "RLE: out of memory");
    return 0;
}

static const struct tdb_compress_codec rle_codec = {
    .name = "RLE",
    .decompress = rle_decompress,
    .max_out = rle_max_out,
    .compress = rle_compress,
};

/* Var-sized string form (format 12+ for STRING_ASCII, 17+ for UTF-8):
 * metadata is the strings prefix (compress_common.h) then u8 run-length
 * width and u8 string-length width; the data is a sequence of runs, each a
 * big-endian run length, a big-endian string length and the string bytes.
 * Every cell of a run gets its own offset. */

/* A walk over the runs of a chunk's string form: n bytes at data, runs
 * of rw-byte run lengths and sw-byte string lengths that make at most
 * max_bytes in max_cells; where the strings and their offsets go (both
 * NULL: the walk only checks and counts), and what the runs make. */
struct rle_walk {
    const uint8_t *data;
    size_t n;
    unsigned rw, sw;
    uint64_t max_bytes, max_cells;
    uint8_t *dst, *off;
    uint64_t bytes, cells;
};

/* Walks the runs: checks them and counts bytes and cells (dst == NULL), or
 * writes the strings to dst and the offsets to off. */
static int rle_strings_walk(const struct tdb_filter_call *call,
                            struct rle_walk *wk)
{
    const uint8_t *data = wk->data;
    size_t n = wk->n;
    unsigned rw = wk->rw, sw = wk->sw;
    uint64_t max_bytes = wk->max_bytes, max_cells = wk->max_cells;
    uint8_t *dst = wk->dst, *off = wk->off;
    uint64_t out = 0, cells = 0;
    size_t in = 0;

    while (in < n) {
        uint64_t run, slen, bytes;

        if (n - in < (size_t)rw + sw)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "RLE: string run header truncated at byte %zu of "
                           "%zu", in, n);
        run = tdb_compress_be(data + in, rw);
        slen = tdb_compress_be(data + in + rw, sw);
        in += rw + sw;
        if (slen > n - in)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "RLE: string of %llu bytes overruns the %zu "
                           "encoded bytes", (unsigned long long)slen, n);
        if (run > max_cells - cells)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "RLE: runs hold more cells than the %llu recorded",
                           (unsigned long long)max_cells);
        if (!tdb_mul_ok(run, slen, &bytes) || bytes > max_bytes - out)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "RLE: runs decode to more than the recorded %llu "
                           "string bytes", (unsigned long long)max_bytes);
        if (dst || off) {
            for (uint64_t j = 0; j < run; j++) {
                tdb_compress_copy(dst + out + j * slen, data + in,
                                  (size_t)slen);
                tdb_st64(off + (cells + j) * 8, out + j * slen);
            }
        }
        out += bytes;
        cells += run;
        in += (size_t)slen;
    }
    wk->bytes = out;
    wk->cells = cells;
    return 0;
}

/* The metadata of a chunk's string form (size bytes of data): the strings
 * prefix into *h and the run-length and string-length widths into *rw and
 * *sw, checked against the chunk and the call's limits. */
static int rle_strings_md(const struct tdb_filter_call *call,
                          struct tdb_cursor *md, size_t size,
                          struct tdb_compress_strings_hdr *h, unsigned *rw,
                          unsigned *sw)
{
    uint8_t rw8 = 0, sw8 = 0;
    int rc = tdb_compress_strings_read_hdr(h, md, "RLE", call->err);
    if (rc < 0)
        return rc;
    tdb_cur_u8(md, &rw8);
    tdb_cur_u8(md, &sw8);
    if (md->bad)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: string metadata truncated (widths)");
    tdb_cur_skip(md, tdb_cur_left(md));
    if (h->encoded_bytes > size)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: metadata records %u encoded bytes but the chunk "
                       "holds %zu", h->encoded_bytes, size);
    if (h->offsets_bytes % 8 != 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: offsets size %u is not a multiple of 8",
                       h->offsets_bytes);
    uint64_t max_cells = h->offsets_bytes / 8;
    if (h->string_bytes > tdb_filter_max_data(call) ||
        max_cells > tdb_filter_max_cells(call))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: metadata records %u string bytes in %llu cells, "
                       "more than the tile allows (%llu bytes, %llu cells)",
                       h->string_bytes, (unsigned long long)max_cells,
                       (unsigned long long)tdb_filter_max_data(call),
                       (unsigned long long)tdb_filter_max_cells(call));
    *rw = tdb_compress_width(rw8);
    *sw = tdb_compress_width(sw8);
    if (h->encoded_bytes > 0 && (!*rw || !*sw))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: zero run or string length width");
    return 0;
}

static int rle_strings_decode(const struct tdb_filter_call *call,
                              struct tdb_cursor *md, const uint8_t *data,
                              size_t size, struct tdb_buf *data_out)
{
    struct tdb_compress_strings_hdr h;
    uint8_t dummy = 0, *dst = &dummy, *off = &dummy;
    unsigned rw = 0, sw = 0;
    int rc;

    if (!call->offsets)
        return tdb_err(call->err, TDB_E_INVAL,
                       "RLE: string tile decoded without an offsets buffer");
    if ((rc = rle_strings_md(call, md, size, &h, &rw, &sw)) < 0)
        return rc;
    /* First pass checks everything; nothing is allocated before. */
    uint64_t max_cells = h.offsets_bytes / 8;
    struct rle_walk wk = {.data = data, .n = h.encoded_bytes, .rw = rw,
                          .sw = sw, .max_bytes = h.string_bytes,
                          .max_cells = max_cells};
    if ((rc = rle_strings_walk(call, &wk)) < 0)
        return rc;
    uint64_t bytes = wk.bytes, cells = wk.cells;
    if (bytes != h.string_bytes || cells != max_cells)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "RLE: strings decode to %llu bytes in %llu cells, "
                       "metadata records %u bytes in %llu cells",
                       (unsigned long long)bytes, (unsigned long long)cells,
                       h.string_bytes, (unsigned long long)max_cells);
    if (bytes > 0 && tdb_buf_grow(data_out, (size_t)bytes, &dst) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "RLE: out of memory");
    if (cells > 0 && tdb_buf_grow(call->offsets, (size_t)cells * 8, &off) < 0) {
        data_out->len -= (size_t)bytes;
        return tdb_err(call->err, TDB_E_NOMEM, "RLE: out of memory");
    }
    wk.max_bytes = bytes;
    wk.max_cells = cells;
    wk.dst = dst;
    wk.off = off;
    return rle_strings_walk(call, &wk);
}

/* The string of cell i of the encode input. */
static void rle_cell(const struct tdb_filter_call *call, const uint8_t *data,
                     size_t size, uint64_t i, const uint8_t **s, size_t *len)
{
    uint64_t b = call->in_offsets[i];
    uint64_t e = i + 1 < call->n_offsets ? call->in_offsets[i + 1] : size;
    *s = data + b;
    *len = (size_t)(e - b);
}

static bool rle_same(const uint8_t *a, size_t alen, const uint8_t *b,
                     size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* The runs of the encode input: the longest run and string (for the
 * widths), the bytes of the strings once each run, and the runs. */
struct rle_measure {
    uint64_t max_run, max_len, string_bytes, nruns;
};

static void rle_strings_measure(const struct tdb_filter_call *call,
                                const uint8_t *data, size_t size,
                                struct rle_measure *m)
{
    uint64_t n = call->n_offsets, run = 0;
    const uint8_t *prev = NULL, *s;
    size_t prev_len = 0, len;

    memset(m, 0, sizeof *m);
    for (uint64_t i = 0; i < n; i++) {
        rle_cell(call, data, size, i, &s, &len);
        if (i > 0 && rle_same(s, len, prev, prev_len)) {
            run++;
        } else {
            if (i > 0)
                m->string_bytes += prev_len;
            m->nruns++;
            run = 1;
            prev = s;
            prev_len = len;
        }
        if (run > m->max_run)
            m->max_run = run;
        if (len > m->max_len)
            m->max_len = len;
    }
    if (n > 0)
        m->string_bytes += prev_len;
}

/* Appends the runs of the encode input to data_out (room reserved): each
 * a run length of rw bytes, a string length of sw bytes, the string. */
static void rle_strings_runs(const struct tdb_filter_call *call,
                             const uint8_t *data, size_t size, uint8_t rw,
                             uint8_t sw, struct tdb_buf *data_out)
{
    uint64_t n = call->n_offsets;
    const uint8_t *prev, *s;
    size_t prev_len, len;

    for (uint64_t i = 0; i < n;) {
        uint64_t j = i + 1;
        uint8_t *p;

        rle_cell(call, data, size, i, &prev, &prev_len);
        for (; j < n; j++) {
            rle_cell(call, data, size, j, &s, &len);
            if (!rle_same(s, len, prev, prev_len))
                break;
        }
        tdb_buf_grow(data_out, (size_t)rw + sw + prev_len, &p); /* reserved */
        tdb_compress_st_be(p, rw, j - i);
        tdb_compress_st_be(p + rw, sw, prev_len);
        if (prev_len > 0)
            memcpy(p + rw + sw, prev, prev_len);
        i = j;
    }
}

static int rle_strings_encode(const struct tdb_filter_call *call,
                              const uint8_t *data, size_t size,
                              struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    struct tdb_compress_strings_hdr h = {0};
    struct rle_measure m;
    uint64_t n = call->n_offsets;
    int rc;

    /* First pass: widths and the encoded size. */
    rle_strings_measure(call, data, size, &m);
    uint8_t rw = tdb_compress_bytesize(m.max_run);
    uint8_t sw = tdb_compress_bytesize(m.max_len);
    uint64_t enc = m.string_bytes + m.nruns * (uint64_t)(rw + sw);
    if (enc > UINT32_MAX || size > UINT32_MAX || n > UINT32_MAX / 8)
        return tdb_err(call->err, TDB_E_INVAL,
                       "RLE: string tile too large for the format");
    h.string_bytes = (uint32_t)size;
    h.encoded_bytes = (uint32_t)enc;
    h.offsets_bytes = (uint32_t)(n * 8);
    rc = tdb_compress_strings_write_hdr(&h, md_out);
    if (rc == 0)
        rc = tdb_buf_put_u8(md_out, rw);
    if (rc == 0)
        rc = tdb_buf_put_u8(md_out, sw);
    if (rc == 0)
        rc = tdb_buf_reserve(data_out, (size_t)enc);
    if (rc < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "RLE: out of memory");
    /* Second pass: the runs. */
    rle_strings_runs(call, data, size, rw, sw, data_out);
    return 0;
}

/* ----------------------------------------------------------------- the ops */

static int rle_decode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    if (call->strings_with_offsets)
        return rle_strings_decode(call, &st->md, st->data, st->size,
                                  st->data_out);
    return tdb_compress_decode(&rle_codec, call, st);
}

static int rle_encode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    if (call->strings_with_offsets) {
        int rc =
            tdb_compress_strings_check_input(call, st->md.len, st->size, "RLE");
        if (rc < 0)
            return rc;
        return rle_strings_encode(call, st->data, st->size, st->md_out,
                                  st->data_out);
    }
    return tdb_compress_encode(&rle_codec, call, st);
}

static const struct tdb_compress_options rle_defaults = {
    .compressor = TDB_COMPRESSOR_RLE,
    .level = TDB_FILTER_LEVEL_DEFAULT,
};

const struct tdb_filter_ops tdb_filter_rle = {
    .name = "RLE",
    .type = TDB_FILTER_RLE,
    TDB_COMPRESS_OPS_OPTIONS(rle_defaults),
    .output_type = NULL,
    .decode = rle_decode,
    .encode = rle_encode,
};
