/* bzip2.c: the BZIP2 filter (tile.md, "Compression Filters"). */
#include "compress_common.h"

#include <bzlib.h>
#include <limits.h>

/* The output grows by at most this much before bytes fill it. */
#define BZIP2_STEP (UINT64_C(1) << 20)

static int bzip2_decompress_buf(const struct tdb_filter_call *call,
                                const uint8_t *src, size_t n,
                                struct tdb_buf *out, size_t dst_len)
{
    size_t base = out->len, done = 0;
    bz_stream bz;
    uint8_t extra;
    int rc;

    if (n > UINT_MAX || dst_len > UINT_MAX)
        return tdb_err(call->err, TDB_E_CORRUPT, "BZIP2: part too large");
    memset(&bz, 0, sizeof bz);
    rc = BZ2_bzDecompressInit(&bz, 0, 0);
    if (rc != BZ_OK)
        return tdb_err(call->err, rc == BZ_MEM_ERROR ? TDB_E_NOMEM
                                                     : TDB_E_CORRUPT,
                       "BZIP2: cannot start the decompressor (error %d)", rc);
    bz.next_in = (char *)(uintptr_t)src;
    bz.avail_in = (unsigned int)n;
    for (;;) {
        /* room for what may come next: as much again as came out so far,
         * at least BZIP2_STEP, never past dst_len; then one spare byte to
         * see whether the stream holds more than recorded */
        size_t step = done > BZIP2_STEP ? done : (size_t)BZIP2_STEP;
        uint8_t *dst = &extra;
        if (step > dst_len - done)
            step = dst_len - done;
        if (step > 0 && tdb_buf_reserve(out, step) < 0) {
            rc = tdb_err(call->err, TDB_E_NOMEM, "BZIP2: out of memory");
            break;
        }
        if (step > 0)
            dst = out->data + base + done;
        bz.next_out = (char *)dst;
        bz.avail_out = step > 0 ? (unsigned int)step : 1;
        unsigned int before = bz.avail_out;
        rc = BZ2_bzDecompress(&bz);
        size_t got = before - bz.avail_out;
        if (step == 0 && got > 0) {
            rc = tdb_err(call->err, TDB_E_CORRUPT,
                         "BZIP2: part decompresses to more than the "
                         "recorded %zu bytes", dst_len);
            break;
        }
        done += got;
        out->len = base + done;
        if (rc == BZ_STREAM_END) {
            rc = done == dst_len
                     ? 0
                     : tdb_err(call->err, TDB_E_CORRUPT,
                               "BZIP2: part decompressed to %zu bytes, "
                               "expected %zu", done, dst_len);
            break;
        }
        if (rc == BZ_MEM_ERROR) {
            rc = tdb_err(call->err, TDB_E_NOMEM, "BZIP2: out of memory");
            break;
        }
        if (rc != BZ_OK) {
            rc = tdb_err(call->err, TDB_E_CORRUPT,
                         "BZIP2: corrupt stream (error %d)", rc);
            break;
        }
        if (got == 0 && bz.avail_in == 0) {
            rc = tdb_err(call->err, TDB_E_CORRUPT,
                         "BZIP2: stream truncated after %zu bytes", done);
            break;
        }
    }
    BZ2_bzDecompressEnd(&bz);
    if (rc < 0)
        out->len = base;
    return rc;
}

static int bzip2_compress(const struct tdb_filter_call *call,
                          const uint8_t *src, size_t n, struct tdb_buf *out)
{
    int level = call->filter ? call->filter->level : 1;
    unsigned int out_len;
    uint64_t bound = (uint64_t)n + n / 100 + 601;
    int rc;

    /* TileDB uses block size 1 below 1; above 9 bzip2 refuses. */
    if (level < 1)
        level = 1;
    if (level > 9)
        return tdb_err(call->err, TDB_E_INVAL,
                       "BZIP2: compression level %d above 9", level);
    if (n > UINT_MAX || bound > UINT_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "BZIP2: part of %zu bytes is too large", n);
    if (tdb_buf_reserve(out, (size_t)bound) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "BZIP2: out of memory");
    out_len = (unsigned int)bound;
    rc = BZ2_bzBuffToBuffCompress((char *)(out->data + out->len), &out_len,
                                  (char *)(uintptr_t)src, (unsigned int)n,
                                  level, 0, 0);
    if (rc != BZ_OK)
        return tdb_err(call->err, rc == BZ_MEM_ERROR ? TDB_E_NOMEM
                                                     : TDB_E_INVAL,
                       "BZIP2: compression failed (error %d)", rc);
    out->len += out_len;
    return 0;
}

static const struct tdb_compress_codec bzip2_codec = {
    .name = "BZIP2",
    .decompress_buf = bzip2_decompress_buf,
    .compress = bzip2_compress,
};

static int bzip2_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                              uint32_t version, struct tdb_error *err)
{
    return tdb_compress_read_options(f, c, TDB_COMPRESSOR_BZIP2, "BZIP2", err);
}

static int bzip2_write_options(const struct tdb_filter *f, struct tdb_buf *out)
{
    return tdb_compress_write_options(f, TDB_COMPRESSOR_BZIP2, out);
}

static int bzip2_decode(const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    return tdb_compress_decode(&bzip2_codec, call, st);
}

static int bzip2_encode(const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    return tdb_compress_encode(&bzip2_codec, call, st);
}

const struct tdb_filter_ops tdb_filter_bzip2 = {
    .name = "BZIP2",
    .type = TDB_FILTER_BZIP2,
    .compressor = TDB_COMPRESSOR_BZIP2,
    .read_options = bzip2_read_options,
    .write_options = bzip2_write_options,
    .output_type = NULL,
    .decode = bzip2_decode,
    .encode = bzip2_encode,
};
