/* scale_float.c: the SCALE_FLOAT filter (format_spec/filters/float_scale.md;
 * options in filter_pipeline.md, "Float Scale Filter Reduction Options").
 *
 * The values it receives are floats as wide as the datatype (4: float,
 * 8: double, whatever the datatype's name); it stores each as a signed
 * integer of byte_width bytes, round((x - offset) / scale) computed in the
 * float's own precision, and hands on INT8/16/32/64.  Reading gives
 * (float type)(scale * (double)(float type)stored + offset).  The framing is
 * the parts framing of numeric_common.h, part lengths counting stored
 * bytes.  (Built with -std=c11, so no fused multiply-add is formed: TileDB's
 * portable builds do not form one either.) */
#include "numeric_common.h"
#include "options.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>

/* The options: doubles scale and offset, u64 byte width of the stored
 * integers (1, 2, 4 or 8). */
struct scale_float_options {
    double scale, offset;
    uint64_t byte_width;
};
_Static_assert(sizeof(struct scale_float_options) <= TDB_FILTER_OPTIONS_MAX,
               "SCALE_FLOAT's options fit a struct tdb_filter");

static bool scale_float_width_ok(uint64_t w)
{
    return w == 1 || w == 2 || w == 4 || w == 8;
}

static int scale_float_check_width(const struct tdb_fopt_value *v,
                                   char *why, size_t cap)
{
    if (scale_float_width_ok((uint64_t)v->i))
        return 0;
    snprintf(why, cap, "%" PRIu64 " is not 1, 2, 4 or 8", (uint64_t)v->i);
    return 1;
}

static const struct tdb_filter_opt scale_float_opts[] = {
    {.name = "scale", .kind = TDB_FOPT_REAL, .width = 8,
     .offset = offsetof(struct scale_float_options, scale)},
    {.name = "offset", .kind = TDB_FOPT_REAL, .width = 8,
     .offset = offsetof(struct scale_float_options, offset)},
    {.name = "byte_width", .kind = TDB_FOPT_UINT, .width = 8, .max = 8,
     .offset = offsetof(struct scale_float_options, byte_width),
     .check = scale_float_check_width},
};

static const struct scale_float_options scale_float_defaults = {
    .scale = 1.0, .offset = 0.0, .byte_width = 8};

struct scale_float_state {
    unsigned fw;  /* 4 or 8: the float width */
    unsigned iw;  /* 1, 2, 4 or 8: the stored integer width */
    double scale, offset;
    size_t base;  /* decoding: the output's length before this filter */
};

static int scale_float_state(const struct tdb_filter_call *call,
                             struct scale_float_state *s)
{
    const struct scale_float_options *f = tdb_filter_opts(call->filter);
    s->fw = tdb_dt_size(call->datatype);
    if (s->fw != 4 && s->fw != 8)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "SCALE_FLOAT: datatype %u is not 4 or 8 bytes wide",
                       call->datatype);
    if (!scale_float_width_ok(f->byte_width))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "SCALE_FLOAT: byte width %llu is not 1, 2, 4 or 8",
                       (unsigned long long)f->byte_width);
    s->iw = (unsigned)f->byte_width;
    s->scale = f->scale;
    s->offset = f->offset;
    return 0;
}

/* nv stored integers of iw bytes at in -> floats of fw bytes at o; fw and
 * iw constants once inlined. */
static inline __attribute__((always_inline)) void
scale_float_unscale(const uint8_t *in, size_t nv,
                    const struct scale_float_state *s, unsigned fw,
                    unsigned iw, uint8_t *o)
{
    for (size_t i = 0; i < nv; i++) {
        int64_t v = tdb_numeric_load_signed(in + i * iw, iw);
        if (fw == 4) {
            float x = (float)v;
            float y = (float)(s->scale * (double)x + s->offset);
            uint32_t u;
            memcpy(&u, &y, 4);
            tdb_st32(o + i * 4, u);
        } else {
            double y = s->scale * (double)v + s->offset;
            uint64_t u;
            memcpy(&u, &y, 8);
            tdb_st64(o + i * 8, u);
        }
    }
}

#define SCALE_FLOAT_UNSCALE(fw_, iw_)                                      \
    case (fw_) * 16 + (iw_):                                               \
        scale_float_unscale(in, nv, s, fw_, iw_, o);                       \
        break

static int scale_float_part(const struct tdb_filter_call *call,
                            const uint8_t *in, size_t n, struct tdb_buf *out,
                            void *arg)
{
    const struct scale_float_state *s = arg;
    if (n % s->iw != 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "SCALE_FLOAT: part of %zu bytes is not whole %u-byte "
                       "integers", n, s->iw);
    size_t nv = n / s->iw;
    uint64_t bytes;
    uint64_t limit = tdb_filter_max_data(call);
    if (!tdb_mul_ok(nv, s->fw, &bytes) || bytes > limit ||
        out->len - s->base > limit - bytes)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "SCALE_FLOAT: part decodes to more than the %llu "
                       "bytes the chunk's declared size allows",
                       (unsigned long long)limit);
    uint8_t *o;
    if (nv == 0)
        return 0;
    if (tdb_buf_grow(out, (size_t)bytes, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    switch (s->fw * 16 + s->iw) {
    SCALE_FLOAT_UNSCALE(4, 1);
    SCALE_FLOAT_UNSCALE(4, 2);
    SCALE_FLOAT_UNSCALE(4, 4);
    SCALE_FLOAT_UNSCALE(4, 8);
    SCALE_FLOAT_UNSCALE(8, 1);
    SCALE_FLOAT_UNSCALE(8, 2);
    SCALE_FLOAT_UNSCALE(8, 4);
    default: scale_float_unscale(in, nv, s, 8, 8, o); break;
    }
    return 0;
}

static int scale_float_decode(const struct tdb_filter_call *call,
                              struct tdb_filter_stage *st)
{
    struct scale_float_state s;
    int r = scale_float_state(call, &s);
    if (r)
        return r;
    s.base = st->data_out->len;
    return tdb_numeric_parts_decode(call, "SCALE_FLOAT", st, scale_float_part,
                                    &s);
}

/* A rounded value converted to a signed integer of w bytes the way x86-64
 * converts out-of-range values (the "integer indefinite" minimum; narrow
 * types go through a 32-bit conversion). */
static uint64_t scale_float_to_int(double v, unsigned w)
{
    if (w == 8) {
        if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
            return (uint64_t)INT64_MIN;
        return (uint64_t)(int64_t)v;
    }
    if (!(v >= -2147483648.0 && v < 2147483648.0))
        return (uint64_t)(int64_t)INT32_MIN;
    return (uint64_t)(int64_t)(int32_t)v;
}

static int scale_float_encode(const struct tdb_filter_call *call,
                              struct tdb_filter_stage *st)
{
    const uint8_t *data = st->data;
    struct scale_float_state s;
    int r = scale_float_state(call, &s);
    if (r)
        return r;
    if (st->size % s.fw != 0)
        return tdb_err(call->err, TDB_E_INVAL,
                       "SCALE_FLOAT: input of %zu bytes is not whole %u-byte "
                       "floats",
                       st->size, s.fw);
    size_t nv = st->size / s.fw;
    r = tdb_numeric_parts_header(call, "SCALE_FLOAT", (uint64_t)nv * s.iw,
                                 st->md.p, st->md.len, st->md_out);
    if (r || nv == 0)
        return r;
    uint8_t *o;
    if (tdb_buf_grow(st->data_out, nv * s.iw, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < nv; i++) {
        double q;
        if (s.fw == 4) {
            float x;
            uint32_t u = tdb_le32(data + i * 4);
            memcpy(&x, &u, 4);
            q = roundf((x - (float)s.offset) / (float)s.scale);
        } else {
            double x;
            uint64_t u = tdb_le64(data + i * 8);
            memcpy(&x, &u, 8);
            q = round((x - s.offset) / s.scale);
        }
        tdb_numeric_store(o + i * s.iw, s.iw, scale_float_to_int(q, s.iw));
    }
    return 0;
}

static int scale_float_read_options(struct tdb_filter *f,
                                    struct tdb_cursor *c, uint32_t version,
                                    struct tdb_error *err)
{
    struct scale_float_options *o = tdb_filter_opts_edit(f);
    (void)version;
    tdb_cur_f64(c, &o->scale);
    tdb_cur_f64(c, &o->offset);
    if (tdb_cur_u64(c, &o->byte_width))
        return tdb_err(err, TDB_E_CORRUPT, "SCALE_FLOAT options truncated");
    if (!scale_float_width_ok(o->byte_width))
        return tdb_err(err, TDB_E_CORRUPT,
                       "SCALE_FLOAT byte width %llu is not 1, 2, 4 or 8",
                       (unsigned long long)o->byte_width);
    return 0;
}

static int scale_float_write_options(const struct tdb_filter *f,
                                     struct tdb_buf *out)
{
    const struct scale_float_options *o = tdb_filter_opts(f);
    if (tdb_buf_put_f64(out, o->scale) || tdb_buf_put_f64(out, o->offset) ||
        tdb_buf_put_u64(out, o->byte_width))
        return TDB_E_NOMEM;
    return 0;
}

static unsigned scale_float_output_type(const struct tdb_filter *f,
                                        unsigned in_type)
{
    const struct scale_float_options *o = tdb_filter_opts(f);
    switch (o->byte_width) {
    case 1: return TDB_INT8;
    case 2: return TDB_INT16;
    case 4: return TDB_INT32;
    case 8: return TDB_INT64;
    default: return in_type;  /* read_options refuses other widths */
    }
}

const struct tdb_filter_ops tdb_filter_scale_float = {
    .name = "SCALE_FLOAT",
    .type = TDB_FILTER_SCALE_FLOAT,
    .read_options = scale_float_read_options,
    .write_options = scale_float_write_options,
    .options = scale_float_opts,
    .n_options = sizeof scale_float_opts / sizeof *scale_float_opts,
    .defaults = &scale_float_defaults,
    .options_size = sizeof(struct scale_float_options),
    .output_type = scale_float_output_type,
    .decode = scale_float_decode,
    .encode = scale_float_encode,
};
