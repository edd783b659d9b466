/* gzip.c: the GZIP filter (tile.md, "Compression"); the framing is in
 * compress_common.c.  A part is a zlib stream: written by zlib (as TileDB
 * writes it), read by libdeflate, which inflates the same streams to the
 * same bytes in about half zlib's time. */
#include "compress_common.h"

#include <libdeflate.h>
#include <limits.h>
#include <zlib.h>

/* ------------------------------------------------------------------- gzip */

static int gzip_decompress(const struct tdb_filter_call *call,
                           const uint8_t *src, size_t n, uint8_t *dst,
                           size_t dst_len)
{
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    size_t got = 0;
    if (!d)
        return tdb_err(call->err, TDB_E_NOMEM,
                       "GZIP: cannot start libdeflate");
    /* bytes after the end of the stream are ignored, as zlib does */
    enum libdeflate_result r =
        libdeflate_zlib_decompress(d, src, n, dst, dst_len, &got);
    libdeflate_free_decompressor(d);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "GZIP: corrupt or truncated zlib stream (output "
                       "larger than recorded)");
    if (r != LIBDEFLATE_SUCCESS)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "GZIP: corrupt or truncated zlib stream");
    if (got != dst_len)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "GZIP: part decompressed to %zu bytes, expected %zu",
                       got, dst_len);
    return 0;
}

/* Deflate expands at most 1032 to 1. */
static uint64_t gzip_max_out(const struct tdb_filter_call *call,
                             const uint8_t *src, size_t n)
{
    return (uint64_t)n * 1032 + 64;
}

static int gzip_compress(const struct tdb_filter_call *call,
                         const uint8_t *src, size_t n, struct tdb_buf *out)
{
    int level = call->filter ? tdb_compress_level(call->filter) : -1;
    z_stream zs;
    uLong bound;
    uint8_t *dst;
    int ret;

    if (level > 9)
        return tdb_err(call->err, TDB_E_INVAL,
                       "GZIP: compression level %d above 9", level);
    if (level < 0)
        level = Z_DEFAULT_COMPRESSION;
    bound = compressBound((uLong)n);
    if (tdb_buf_reserve(out, bound) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "GZIP: out of memory");
    memset(&zs, 0, sizeof zs);
    if (deflateInit(&zs, level) != Z_OK)
        return tdb_err(call->err, TDB_E_NOMEM, "GZIP: cannot start zlib");
    dst = out->data + out->len;
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = (uInt)n;
    zs.next_out = dst;
    zs.avail_out = (uInt)bound;
    ret = deflate(&zs, Z_FINISH);
    deflateEnd(&zs);
    if (ret != Z_STREAM_END)
        return tdb_err(call->err, TDB_E_NOMEM, "GZIP: deflate failed (%d)",
                       ret);
    out->len += zs.total_out;
    return 0;
}

static const struct tdb_compress_codec gzip_codec = {
    .name = "GZIP",
    .decompress = gzip_decompress,
    .max_out = gzip_max_out,
    .compress = gzip_compress,
};

static int gzip_decode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    return tdb_compress_decode(&gzip_codec, call, st);
}

static int gzip_encode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    return tdb_compress_encode(&gzip_codec, call, st);
}

static const struct tdb_compress_options gzip_defaults = {
    .compressor = TDB_COMPRESSOR_GZIP,
    .level = TDB_FILTER_LEVEL_DEFAULT,
};

const struct tdb_filter_ops tdb_filter_gzip = {
    .name = "GZIP",
    .type = TDB_FILTER_GZIP,
    TDB_COMPRESS_OPS_OPTIONS(gzip_defaults),
    .output_type = NULL,
    .decode = gzip_decode,
    .encode = gzip_encode,
};
