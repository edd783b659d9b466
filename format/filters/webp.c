/* webp.c: the WEBP filter: options only, no codec (filters/webp.md). */
#include "filter.h"

#include <stdlib.h>

/* TileDB serialises its WebpFilter::FilterConfig struct as is (float
 * quality, u8 input format, u8 lossless, u16 y extent, u16 x extent and
 * padding: 12 bytes on the platforms it runs on).  We keep whatever the
 * options hold, verbatim, so that a schema round-trips. */
#define WEBP_OPTIONS_MAX 4096

static int webp_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                             uint32_t version, struct tdb_error *err)
{
    size_t n = tdb_cur_left(c);
    uint8_t *raw;

    if (n == 0 || n > WEBP_OPTIONS_MAX)
        return tdb_err(err, TDB_E_CORRUPT,
                       "WEBP filter options of %zu bytes (expected 12)", n);
    raw = malloc(n);
    if (!raw)
        return tdb_err(err, TDB_E_NOMEM, "WEBP: out of memory");
    tdb_cur_copy(c, raw, n);
    free(f->raw);
    f->raw = raw;
    f->raw_size = (uint32_t)n;
    return 0;
}

static int webp_write_options(const struct tdb_filter *f, struct tdb_buf *out)
{
    if (!f->raw || f->raw_size == 0)
        return TDB_E_INVAL;
    return tdb_buf_append(out, f->raw, f->raw_size);
}

static int webp_decode(const struct tdb_filter_call *call,
                       struct tdb_cursor *md, const uint8_t *data, size_t size,
                       struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    return tdb_err(call->err, TDB_E_UNSUPPORTED,
                   "WEBP: decoding WebP-compressed tiles is not supported "
                   "(built without libwebp)");
}

static int webp_encode(const struct tdb_filter_call *call, const uint8_t *md,
                       size_t md_size, const uint8_t *data, size_t size,
                       struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    return tdb_err(call->err, TDB_E_UNSUPPORTED,
                   "WEBP: encoding WebP tiles is not supported (built "
                   "without libwebp)");
}

const struct tdb_filter_ops tdb_filter_webp = {
    .name = "WEBP",
    .type = TDB_FILTER_WEBP,
    .read_options = webp_read_options,
    .write_options = webp_write_options,
    .output_type = NULL,
    .decode = webp_decode,
    .encode = webp_encode,
};
