/* zstd.c: the ZSTD filter (tile.md, "Compression Filters"). */
#include "compress_common.h"

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_decompressBound */
#include <zstd.h>

#include <stdlib.h>

/* What the filter keeps in a scratch: its contexts, each made on first
 * use, so that a chunk does not set up zstd's tables afresh. */
struct zstd_state {
    ZSTD_DCtx *dctx;
    ZSTD_CCtx *cctx;
};

/* The scratch's state of this filter, made on first use; NULL without a
 * scratch or memory. */
static struct zstd_state *zstd_state(const struct tdb_filter_call *call)
{
    struct tdb_scratch *sc = call->scratch;
    if (!sc)
        return NULL;
    if (!sc->filter_state[TDB_FILTER_ZSTD])
        sc->filter_state[TDB_FILTER_ZSTD] = calloc(1, sizeof(struct zstd_state));
    return sc->filter_state[TDB_FILTER_ZSTD];
}

static void zstd_scratch_free(void *state)
{
    struct zstd_state *zs = state;
    ZSTD_freeDCtx(zs->dctx);
    ZSTD_freeCCtx(zs->cctx);
    free(zs);
}

static int zstd_decompress(const struct tdb_filter_call *call,
                           const uint8_t *src, size_t n, uint8_t *dst,
                           size_t dst_len)
{
    size_t ret;
    struct zstd_state *zs = zstd_state(call);

    if (zs && !zs->dctx)
        zs->dctx = ZSTD_createDCtx();
    if (zs && zs->dctx)
        ret = ZSTD_decompressDCtx(zs->dctx, dst, dst_len, src, n);
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
    int level = call->filter ? tdb_compress_level(call->filter)
                             : ZSTD_CLEVEL_DEFAULT;
    size_t bound = ZSTD_compressBound(n), ret;

    /* TileDB uses its default (3) below level -7. */
    if (level < -7)
        level = ZSTD_CLEVEL_DEFAULT;
    if (ZSTD_isError(bound) || tdb_buf_reserve(out, bound) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "ZSTD: out of memory");
    /* a context kept in the scratch: the same bytes as ZSTD_compress's
     * fresh one, without setting up its tables for every chunk */
    struct zstd_state *zs = zstd_state(call);
    if (zs && !zs->cctx)
        zs->cctx = ZSTD_createCCtx();
    if (zs && zs->cctx)
        ret = ZSTD_compressCCtx(zs->cctx, out->data + out->len, bound, src, n,
                                level);
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

static int zstd_decode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    return tdb_compress_decode(&zstd_codec, call, st);
}

static int zstd_encode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    return tdb_compress_encode(&zstd_codec, call, st);
}

static const struct tdb_compress_options zstd_defaults = {
    .compressor = TDB_COMPRESSOR_ZSTD,
    .level = TDB_FILTER_LEVEL_DEFAULT,
};

const struct tdb_filter_ops tdb_filter_zstd = {
    .name = "ZSTD",
    .type = TDB_FILTER_ZSTD,
    TDB_COMPRESS_OPS_OPTIONS(zstd_defaults),
    .output_type = NULL,
    .decode = zstd_decode,
    .encode = zstd_encode,
    .scratch_free = zstd_scratch_free,
};
