/* lz4.c: the LZ4 filter (tile.md, "Compression Filters"). */
#include "compress_common.h"

#include <lz4.h>

static int lz4_decompress(const struct tdb_filter_call *call,
                          const uint8_t *src, size_t n, uint8_t *dst,
                          size_t dst_len)
{
    int ret;

    if (n > LZ4_MAX_INPUT_SIZE || dst_len > INT32_MAX)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "LZ4: part of %zu bytes (%zu decompressed) exceeds "
                       "LZ4's limits", n, dst_len);
    ret = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n,
                              (int)dst_len);
    if (ret < 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "LZ4: corrupt or truncated block");
    if ((size_t)ret != dst_len)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "LZ4: part decompressed to %d bytes, expected %zu",
                       ret, dst_len);
    return 0;
}

/* An LZ4 block expands at most about 255 to 1. */
static uint64_t lz4_max_out(const struct tdb_filter_call *call,
                            const uint8_t *src, size_t n)
{
    return (uint64_t)n * 256 + 64;
}

static int lz4_compress(const struct tdb_filter_call *call,
                        const uint8_t *src, size_t n, struct tdb_buf *out)
{
    int bound, ret;

    if (n > LZ4_MAX_INPUT_SIZE)
        return tdb_err(call->err, TDB_E_INVAL,
                       "LZ4: part of %zu bytes is too large", n);
    bound = LZ4_compressBound((int)n);
    if (bound <= 0 || tdb_buf_reserve(out, (size_t)bound) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "LZ4: out of memory");
    ret = LZ4_compress_default((const char *)src,
                               (char *)(out->data + out->len), (int)n, bound);
    if (ret <= 0)
        return tdb_err(call->err, TDB_E_INVAL, "LZ4: compression failed");
    out->len += (size_t)ret;
    return 0;
}

static const struct tdb_compress_codec lz4_codec = {
    .name = "LZ4",
    .decompress = lz4_decompress,
    .max_out = lz4_max_out,
    .compress = lz4_compress,
};

static int lz4_decode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    return tdb_compress_decode(&lz4_codec, call, st);
}

static int lz4_encode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    return tdb_compress_encode(&lz4_codec, call, st);
}

static const struct tdb_compress_options lz4_defaults = {
    .compressor = TDB_COMPRESSOR_LZ4,
    .level = TDB_FILTER_LEVEL_DEFAULT,
};

const struct tdb_filter_ops tdb_filter_lz4 = {
    .name = "LZ4",
    .type = TDB_FILTER_LZ4,
    TDB_COMPRESS_OPS_OPTIONS(lz4_defaults),
    .output_type = NULL,
    .decode = lz4_decode,
    .encode = lz4_encode,
};
