/* positive_delta.c: the POSITIVE_DELTA filter (tile.md, "Positive Delta
 * Encoding Filter"; options in filter_pipeline.md).
 *
 * Metadata: u32 windows, then per window its first value (as wide as the
 * value) and u32 window bytes.  A window of whole values stores each value
 * minus the one before it, the first minus itself (0); decoding adds up
 * from the stored first value.  A window that is not whole values is
 * stored as is.  Encoding refuses a decreasing sequence, as TileDB does. */
#include "numeric_common.h"

#define PD_NAME "POSITIVE_DELTA"

static int pd_decode(const struct tdb_filter_call *call,
                     struct tdb_filter_stage *st)
{
    struct tdb_cursor *md = &st->md;
    const uint8_t *data = st->data;
    size_t size = st->size;
    struct tdb_buf *data_out = st->data_out;
    struct tdb_numeric_int t;
    if (!tdb_numeric_window_int(call->datatype, call->version, true, &t))
        return tdb_numeric_passthrough(call, st);
    unsigned w = t.width;
    uint32_t nwin;
    if (tdb_cur_u32(md, &nwin))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       PD_NAME ": metadata truncated (no window count)");
    size_t pos = 0;
    for (uint32_t i = 0; i < nwin; i++) {
        const uint8_t *offp;
        uint32_t nbytes;
        tdb_cur_bytes(md, w, &offp);
        if (tdb_cur_u32(md, &nbytes))
            return tdb_err(call->err, TDB_E_CORRUPT,
                           PD_NAME ": metadata truncated at window %u of %u",
                           i, nwin);
        if (nbytes > size - pos)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           PD_NAME ": window %u of %u bytes overruns the %zu "
                           "bytes of data", i, nbytes, size);
        uint8_t *o;
        if (nbytes == 0)
            continue;
        if (tdb_buf_grow(data_out, nbytes, &o))
            return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
        if (nbytes % w != 0) {
            memcpy(o, data + pos, nbytes);
        } else {
            uint64_t prev = tdb_numeric_load(offp, w);
            for (size_t j = 0; j < nbytes / w; j++) {
                prev += tdb_numeric_load(data + pos + j * w, w);
                tdb_numeric_store(o + j * w, w, prev);
            }
        }
        pos += nbytes;
    }
    if (pos != size)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       PD_NAME ": windows cover %zu of %zu bytes of data", pos,
                       size);
    return tdb_numeric_pass_md(call, md, st->md_out);
}

static int pd_encode(const struct tdb_filter_call *call,
                     struct tdb_filter_stage *st)
{
    const uint8_t *data = st->data;
    size_t size = st->size;
    struct tdb_numeric_int t;
    if (!tdb_numeric_window_int(call->datatype, call->version, true, &t))
        return tdb_numeric_passthrough_enc(call, st);
    unsigned w = t.width;
    uint64_t window, nwin;
    if (size > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       PD_NAME ": input of %zu bytes exceeds 4 GiB", size);
    uint32_t max_window = tdb_numeric_max_window(call->filter);
    if (tdb_numeric_windows(size, max_window, w, &window, &nwin))
        return tdb_err(call->err, TDB_E_INVAL,
                       PD_NAME ": window of %u bytes holds no %u-byte value",
                       max_window, w);
    if (tdb_buf_put_u32(st->md_out, (uint32_t)nwin))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    for (uint64_t i = 0; i < nwin; i++) {
        size_t pos = (size_t)(i * window);
        size_t nbytes = size - pos < window ? size - pos : (size_t)window;
        uint8_t *m, *o;
        if (tdb_buf_grow(st->md_out, w + 4, &m) ||
            tdb_buf_grow(st->data_out, nbytes, &o))
            return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
        /* The first value; a window shorter than one value (which TileDB
         * reads past) gives its bytes, zero-padded. */
        memset(m, 0, w);
        memcpy(m, data + pos, nbytes < w ? nbytes : w);
        tdb_st32(m + w, (uint32_t)nbytes);
        if (nbytes % w != 0) {
            memcpy(o, data + pos, nbytes);
            continue;
        }
        uint64_t prev = tdb_numeric_load(data + pos, w);
        for (size_t j = 0; j < nbytes / w; j++) {
            uint64_t v = tdb_numeric_load(data + pos + j * w, w);
            bool down = t.is_signed ? tdb_numeric_sext(v, w) <
                                          tdb_numeric_sext(prev, w)
                                    : v < prev;
            if (down)
                return tdb_err(call->err, TDB_E_INVAL,
                               PD_NAME ": value %zu is smaller than the one "
                               "before it", (size_t)(pos / w + j));
            tdb_numeric_store(o + j * w, w, v - prev);
            prev = v;
        }
    }
    if (tdb_buf_append(st->md_out, st->md.p, st->md.len))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    return 0;
}

const struct tdb_filter_ops tdb_filter_positive_delta = {
    .name = PD_NAME,
    .type = TDB_FILTER_POSITIVE_DELTA,
    TDB_WINDOW_OPS_OPTIONS,
    .output_type = NULL,
    .decode = pd_decode,
    .encode = pd_encode,
};
