/* xor.c: the XOR filter (format_spec/filters/xor.md).
 *
 * Values are integers as wide as the datatype (1, 2, 4 or 8 bytes); the
 * first value of a part is stored as is and every later one XORed with the
 * value before it.  The filter hands on the signed integer type of that
 * width.  Bytes after the last whole value (which TileDB never writes)
 * are kept as they are. */
#include "numeric_common.h"

/* The arguments of the filter: value width and kernels. */
struct xor_arg {
    unsigned w;
    const struct tdb_shuffle_path *path;
};

/* The values of in XORed each with the one before; w a constant once
 * inlined. */
static inline __attribute__((always_inline)) void
xor_fwd_w(const uint8_t *in, size_t nv, unsigned w, uint8_t *out)
{
    uint64_t prev = 0;
    for (size_t i = 0; i < nv; i++) {
        uint64_t v = tdb_numeric_load(in + i * w, w);
        tdb_numeric_store(out + i * w, w, v ^ prev);
        prev = v;
    }
}

/* XORs (un = false) or XORs back (shuffle_simd.h's running XOR) the n
 * bytes at in into out; bytes after the last whole value are copied. */
static void xor_run(const uint8_t *in, size_t n, const struct xor_arg *a,
                    uint8_t *out, bool un)
{
    unsigned w = a->w;
    size_t nv = n / w;
    if (un)
        a->path->xor_inv(in, nv, w, out);
    else if (w == 1)
        xor_fwd_w(in, nv, 1, out);
    else if (w == 2)
        xor_fwd_w(in, nv, 2, out);
    else if (w == 4)
        xor_fwd_w(in, nv, 4, out);
    else
        xor_fwd_w(in, nv, 8, out);
    memcpy(out + nv * w, in + nv * w, n - nv * w);
}

/* The value width (the datatype's) and the vector path the call names. */
static int xor_args(const struct tdb_filter_call *call, struct xor_arg *a)
{
    a->w = tdb_dt_size(call->datatype);
    if (a->w != 1 && a->w != 2 && a->w != 4 && a->w != 8)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "XOR: datatype %u is not 1, 2, 4 or 8 bytes wide",
                       call->datatype);
    return tdb_numeric_path(call, "XOR", &a->path);
}

static int xor_part(const struct tdb_filter_call *call, const uint8_t *in,
                    size_t n, struct tdb_buf *out, void *arg)
{
    uint8_t *o;
    if (n == 0)
        return 0;
    if (tdb_buf_grow(out, n, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    xor_run(in, n, arg, o, true);
    return 0;
}

static int xor_decode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    struct xor_arg a;
    int r = xor_args(call, &a);
    if (r)
        return r;
    return tdb_numeric_parts_decode(call, "XOR", st, xor_part, &a);
}

static int xor_encode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    struct xor_arg a;
    int r = xor_args(call, &a);
    if (!r)
        r = tdb_numeric_parts_header(call, "XOR", st->size, st->md.p,
                                     st->md.len, st->md_out);
    if (r || st->size == 0)
        return r;
    uint8_t *o;
    if (tdb_buf_grow(st->data_out, st->size, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    xor_run(st->data, st->size, &a, o, false);
    return 0;
}

static unsigned xor_output_type(const struct tdb_filter *f, unsigned in_type)
{
    (void)f;
    switch (tdb_dt_size(in_type)) {
    case 1: return TDB_INT8;
    case 2: return TDB_INT16;
    case 4: return TDB_INT32;
    case 8: return TDB_INT64;
    default: return in_type;  /* decode reports the bad width */
    }
}

const struct tdb_filter_ops tdb_filter_xor = {
    .name = "XOR",
    .type = TDB_FILTER_XOR,
    .read_options = NULL,
    .write_options = NULL,
    .output_type = xor_output_type,
    .decode = xor_decode,
    .encode = xor_encode,
};
