/* bzip2.c: the BZIP2 filter (tile.md, "Compression Filters"). */
#include "compress_common.h"

#include <bzlib.h>
#include <limits.h>

/* The output grows by at most this much before bytes fill it. */
#define BZIP2_STEP (UINT64_C(1) << 20)

/* Where a part decompresses to: out from base, done bytes so far of the
 * dst_len recorded. */
struct bzip2_out {
    struct tdb_buf *out;
    size_t base, done, dst_len;
};

/* What BZ2_bzDecompress's result rc means after it gave `got` bytes:
 * 1 the stream ended where recorded, 0 go on, or an error. */
static int bzip2_status(const struct tdb_filter_call *call, int rc,
                        size_t got, const bz_stream *bz,
                        const struct bzip2_out *o)
{
    if (rc == BZ_STREAM_END)
        return o->done == o->dst_len
                   ? 1
                   : tdb_err(call->err, TDB_E_CORRUPT,
                             "BZIP2: part decompressed to %zu bytes, "
                             "expected %zu", o->done, o->dst_len);
    if (rc == BZ_MEM_ERROR)
        return tdb_err(call->err, TDB_E_NOMEM, "BZIP2: out of memory");
    if (rc != BZ_OK)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "BZIP2: corrupt stream (error %d)", rc);
    if (got == 0 && bz->avail_in == 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "BZIP2: stream truncated after %zu bytes", o->done);
    return 0;
}

/* One round of decompression into o: 1 when the stream ended where
 * recorded, 0 to go on, or an error. */
static int bzip2_round(const struct tdb_filter_call *call, bz_stream *bz,
                       struct bzip2_out *o)
{
    /* room for what may come next: as much again as came out so far, at
     * least BZIP2_STEP, never past dst_len; then one spare byte to see
     * whether the stream holds more than recorded */
    size_t step = o->done > BZIP2_STEP ? o->done : (size_t)BZIP2_STEP;
    uint8_t extra, *dst = &extra;
    if (step > o->dst_len - o->done)
        step = o->dst_len - o->done;
    if (step > 0 && tdb_buf_reserve(o->out, step) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "BZIP2: out of memory");
    if (step > 0)
        dst = o->out->data + o->base + o->done;
    bz->next_out = (char *)dst;
    bz->avail_out = step > 0 ? (unsigned int)step : 1;
    unsigned int before = bz->avail_out;
    int rc = BZ2_bzDecompress(bz);
    size_t got = before - bz->avail_out;
    if (step == 0 && got > 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "BZIP2: part decompresses to more than the recorded "
                       "%zu bytes", o->dst_len);
    o->done += got;
    o->out->len = o->base + o->done;
    return bzip2_status(call, rc, got, bz, o);
}

static int bzip2_decompress_buf(const struct tdb_filter_call *call,
                                const uint8_t *src, size_t n,
                                struct tdb_buf *out, size_t dst_len)
{
    struct bzip2_out o = {out, out->len, 0, dst_len};
    bz_stream bz;
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
    while ((rc = bzip2_round(call, &bz, &o)) == 0)
        ;
    BZ2_bzDecompressEnd(&bz);
    if (rc < 0) {
        out->len = o.base;
        return rc;
    }
    return 0;
}

static int bzip2_compress(const struct tdb_filter_call *call,
                          const uint8_t *src, size_t n, struct tdb_buf *out)
{
    int level = call->filter ? tdb_compress_level(call->filter) : 1;
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

static const struct tdb_compress_options bzip2_defaults = {
    .compressor = TDB_COMPRESSOR_BZIP2,
    .level = TDB_FILTER_LEVEL_DEFAULT,
};

const struct tdb_filter_ops tdb_filter_bzip2 = {
    .name = "BZIP2",
    .type = TDB_FILTER_BZIP2,
    TDB_COMPRESS_OPS_OPTIONS(bzip2_defaults),
    .output_type = NULL,
    .decode = bzip2_decode,
    .encode = bzip2_encode,
};
