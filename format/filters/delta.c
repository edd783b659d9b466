/* delta.c: the DELTA filter (format_spec/filters/delta.md; options in
 * filter_pipeline.md, "Delta Compressor Options").
 *
 * A compressor: it uses the compression framing of compress_common.h, and
 * every part (the previous metadata too) is delta-coded as
 *     u64 n, first value, then n - 1 differences to the previous value,
 * values and differences as wide as the working type (tdb_numeric_delta_int
 * of the reinterpret datatype when set, else of the datatype received),
 * modulo 2^width (decoded by shuffle_simd.h's running sums, by the
 * vector path the call names).  The reinterpret datatype option exists
 * from format 19; it is also the type the filter hands on. */
#include "compress_common.h"
#include "numeric_common.h"

#define DELTA_NAME "DELTA"

static int delta_int(const struct tdb_filter_call *call,
                     struct tdb_numeric_int *t)
{
    unsigned dt = tdb_numeric_delta_type(call);
    if (!tdb_numeric_delta_int(dt, t))
        return tdb_err(call->err, TDB_E_UNSUPPORTED,
                       DELTA_NAME ": cannot work on datatype %u (%s)", dt,
                       tdb_dt_name(dt) ? tdb_dt_name(dt) : "unknown");
    return 0;
}

static int delta_decompress(const struct tdb_filter_call *call,
                            const uint8_t *src, size_t n, uint8_t *dst,
                            size_t dst_len)
{
    struct tdb_numeric_int t;
    int r = delta_int(call, &t);
    if (r)
        return r;
    unsigned w = t.width;
    struct tdb_cursor c;
    uint64_t num;
    const uint8_t *vals;
    tdb_cur_init(&c, src, n);
    if (tdb_cur_u64(&c, &num))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       DELTA_NAME ": part truncated (no value count)");
    if (num != dst_len / w)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       DELTA_NAME ": part holds %llu values, expected %zu",
                       (unsigned long long)num, dst_len / w);
    if (tdb_cur_bytes(&c, (size_t)num * w, &vals))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       DELTA_NAME ": part of %llu values truncated",
                       (unsigned long long)num);
    const struct tdb_shuffle_path *path;
    r = tdb_numeric_path(call, DELTA_NAME, &path);
    if (r)
        return r;
    path->add_inv(vals, (size_t)num, w, dst);
    /* Bytes after the last whole value: TileDB never writes them. */
    memset(dst + num * w, 0, dst_len - num * w);
    return 0;
}

/* The most bytes a part of n bytes decodes to: its values and fewer than
 * one value of zeros after them. */
static uint64_t delta_max_out(const struct tdb_filter_call *call,
                              const uint8_t *src, size_t n)
{
    struct tdb_numeric_int t;
    unsigned dt = tdb_numeric_delta_type(call);
    if (!tdb_numeric_delta_int(dt, &t))
        return 0;  /* the decode refuses the type first */
    if (n < 8)
        return 0;
    return (uint64_t)(n - 8) / t.width * t.width + t.width - 1;
}

/* The first of n values of w bytes, then each minus the one before; w a
 * constant once inlined. */
static inline __attribute__((always_inline)) void
delta_fwd_w(const uint8_t *src, size_t n, unsigned w, uint8_t *o)
{
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = tdb_numeric_load(src + i * w, w);
        tdb_numeric_store(o + i * w, w, v - prev);
        prev = v;
    }
}

static int delta_compress(const struct tdb_filter_call *call,
                          const uint8_t *src, size_t n, struct tdb_buf *out)
{
    struct tdb_numeric_int t;
    int r = delta_int(call, &t);
    if (r)
        return r;
    unsigned w = t.width;
    if (n % w != 0)
        return tdb_err(call->err, TDB_E_INVAL,
                       DELTA_NAME ": part of %zu bytes is not whole %u-byte "
                       "values", n, w);
    size_t num = n / w;
    uint8_t *o;
    if (tdb_buf_put_u64(out, num))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    if (num == 0)
        return 0;
    if (tdb_buf_grow(out, n, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    switch (w) {
    case 1: delta_fwd_w(src, num, 1, o); break;
    case 2: delta_fwd_w(src, num, 2, o); break;
    case 4: delta_fwd_w(src, num, 4, o); break;
    default: delta_fwd_w(src, num, 8, o); break;
    }
    return 0;
}

static const struct tdb_compress_codec delta_codec = {
    .name = DELTA_NAME,
    .decompress = delta_decompress,
    .max_out = delta_max_out,
    .compress = delta_compress,
};

static int delta_decode(const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    struct tdb_numeric_int t;
    int r = delta_int(call, &t);  /* before anything is allocated */
    if (r)
        return r;
    return tdb_compress_decode(&delta_codec, call, st);
}

static int delta_encode(const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    return tdb_compress_encode(&delta_codec, call, st);
}

static int delta_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                              uint32_t version, struct tdb_error *err)
{
    return tdb_delta_read_options(f, c, version, 19, err);
}

static unsigned delta_output_type(const struct tdb_filter *f, unsigned in_type)
{
    const struct tdb_delta_options *o = tdb_filter_opts(f);
    return o->reinterpret_type != TDB_ANY ? o->reinterpret_type : in_type;
}

static const struct tdb_delta_options delta_defaults = {
    .c = {.compressor = TDB_COMPRESSOR_DELTA,
          .level = TDB_FILTER_LEVEL_DEFAULT},
    .reinterpret_type = TDB_ANY,
};

const struct tdb_filter_ops tdb_filter_delta = {
    .name = DELTA_NAME,
    .type = TDB_FILTER_DELTA,
    .read_options = delta_read_options,
    TDB_DELTA_OPS_OPTIONS(delta_defaults),
    .output_type = delta_output_type,
    .decode = delta_decode,
    .encode = delta_encode,
};
