/* zstd.c: the ZSTD filter (tile.md, "Compression Filters"). */
#include "compress_common.h"

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_decompressBound */
#include <zstd.h>

static int zstd_decompress(const struct tdb_filter_call *call,
                           const uint8_t *src, size_t n, uint8_t *dst,
                           size_t dst_len)
{
    size_t ret;
    struct tdb_scratch *sc = call->scratch;

    if (sc && !sc->zstd_dctx)
        sc->zstd_dctx = ZSTD_createDCtx();
    if (sc && sc->zstd_dctx)
        ret = ZSTD_decompressDCtx(sc->zstd_dctx, dst, dst_len, src, n);
    else
        ret = ZSTD_decompress(dst, dst_len, src, n);

    if (ZSTD_isError(ret))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "ZSTD: corrupt or truncated stream (%s)",
                       ZSTD_getErrorName(ret));
    if (ret != dst_len)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "ZSTD: part decompressed to %zu bytes, expected %zu",
                       ret, dst_len);
    return 0;
}

/* TileDB writes one frame that records its content size; otherwise the
 * most its blocks can hold. */
static uint64_t zstd_max_out(const struct tdb_filter_call *call,
                             const uint8_t *src, size_t n)
{
    size_t fs = ZSTD_findFrameCompressedSize(src, n);
    unsigned long long cs;

    if (ZSTD_isError(fs))
        return 0; /* not even one whole frame: nothing can come out */
    cs = fs == n ? ZSTD_getFrameContentSize(src, n) : ZSTD_CONTENTSIZE_UNKNOWN;
    if (cs == ZSTD_CONTENTSIZE_UNKNOWN || cs == ZSTD_CONTENTSIZE_ERROR)
        cs = ZSTD_decompressBound(src, n);
    return cs == ZSTD_CONTENTSIZE_ERROR ? 0 : cs;
}

static int zstd_compress(const struct tdb_filter_call *call,
                         const uint8_t *src, size_t n, struct tdb_buf *out)
{
    int level = call->filter ? call->filter->level : ZSTD_CLEVEL_DEFAULT;
    size_t bound = ZSTD_compressBound(n), ret;

    /* TileDB uses its default (3) below level -7. */
    if (level < -7)
        level = ZSTD_CLEVEL_DEFAULT;
    if (ZSTD_isError(bound) || tdb_buf_reserve(out, bound) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "ZSTD: out of memory");
    /* a context kept in the scratch: the same bytes as ZSTD_compress's
     * fresh one, without setting up its tables for every chunk */
    struct tdb_scratch *sc = call->scratch;
    if (sc && !sc->zstd_cctx)
        sc->zstd_cctx = ZSTD_createCCtx();
    if (sc && sc->zstd_cctx)
        ret = ZSTD_compressCCtx(sc->zstd_cctx, out->data + out->len, bound,
                                src, n, level);
    else
        ret = ZSTD_compress(out->data + out->len, bound, src, n, level);
    if (ZSTD_isError(ret))
        return tdb_err(call->err, TDB_E_INVAL, "ZSTD: compression failed (%s)",
                       ZSTD_getErrorName(ret));
    out->len += ret;
    return 0;
}

static const struct tdb_compress_codec zstd_codec = {
    .name = "ZSTD",
    .decompress = zstd_decompress,
    .max_out = zstd_max_out,
    .compress = zstd_compress,
};

static int zstd_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                             uint32_t version, struct tdb_error *err)
{
    return tdb_compress_read_options(f, c, TDB_COMPRESSOR_ZSTD, "ZSTD", err);
}

static int zstd_write_options(const struct tdb_filter *f, struct tdb_buf *out)
{
    return tdb_compress_write_options(f, TDB_COMPRESSOR_ZSTD, out);
}

static int zstd_decode(const struct tdb_filter_call *call,
                       struct tdb_cursor *md, const uint8_t *data,
                       size_t size, struct tdb_buf *md_out,
                       struct tdb_buf *data_out)
{
    return tdb_compress_decode(&zstd_codec, call, md, data, size, md_out,
                               data_out);
}

static int zstd_encode(const struct tdb_filter_call *call, const uint8_t *md,
                       size_t md_size, const uint8_t *data, size_t size,
                       struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    return tdb_compress_encode(&zstd_codec, call, md, md_size, data, size,
                               md_out, data_out);
}

const struct tdb_filter_ops tdb_filter_zstd = {
    .name = "ZSTD",
    .type = TDB_FILTER_ZSTD,
    .read_options = zstd_read_options,
    .write_options = zstd_write_options,
    .output_type = NULL,
    .decode = zstd_decode,
    .encode = zstd_encode,
};

void tdb_zstd_dctx_free(void *dctx)
{
    ZSTD_freeDCtx(dctx);
}

void tdb_zstd_cctx_free(void *cctx)
{
    ZSTD_freeCCtx(cctx);
}
