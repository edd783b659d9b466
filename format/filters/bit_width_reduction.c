/* bit_width_reduction.c: the BIT_WIDTH_REDUCTION filter (tile.md,
 * "Bit Width Reduction Filter"; options in filter_pipeline.md).
 *
 * Metadata: u32 input bytes, u32 windows, then per window the window's
 * minimum (as wide as the value), u8 bits (8, 16, 32 or 64) and u32 window
 * bytes.  A window whose bits are not below the value width, or whose
 * length is not whole values, is stored as is; otherwise each value is
 * stored as (value - minimum) in bits/8 bytes, read back sign-extended for
 * signed types.  The bits are those of range + 1 (range = max - min)
 * rounded up to a C integer width; signed types count whether range + 1
 * fits int8/16/32, and an overflowing range keeps the window as is. */
#include "numeric_common.h"
#include "options.h"

#include <stddef.h>
#include <stdio.h>

#define BWR_NAME "BIT_WIDTH_REDUCTION"

/* n values of cw bytes at in, sign-extended when `sign`, plus off, as
 * values of w bytes at out; cw, w and sign constants once inlined. */
static inline __attribute__((always_inline)) void
bwr_widen_w(const uint8_t *in, size_t n, unsigned cw, unsigned w, bool sign,
            uint64_t off, uint8_t *out)
{
    for (size_t j = 0; j < n; j++) {
        uint64_t v = tdb_numeric_load(in + j * cw, cw);
        if (sign)
            v = (uint64_t)tdb_numeric_sext(v, cw);
        tdb_numeric_store(out + j * w, w, v + off);
    }
}

#define BWR_WIDEN(cw_, w_)                                                 \
    case (w_) * 16 + (cw_):                                                \
        if (sign)                                                          \
            bwr_widen_w(in, n, cw_, w_, true, off, out);                   \
        else                                                               \
            bwr_widen_w(in, n, cw_, w_, false, off, out);                  \
        break

/* bwr_widen_w for each reduction (cw < w, both 1, 2, 4 or 8). */
static void bwr_widen(const uint8_t *in, size_t n, unsigned cw, unsigned w,
                      bool sign, uint64_t off, uint8_t *out)
{
    switch (w * 16 + cw) {
    BWR_WIDEN(1, 2);
    BWR_WIDEN(1, 4);
    BWR_WIDEN(2, 4);
    BWR_WIDEN(1, 8);
    BWR_WIDEN(2, 8);
    BWR_WIDEN(4, 8);
    default:
        bwr_widen_w(in, n, cw, w, sign, off, out);
        break;
    }
}

/* A decode in progress: the integers, the bytes the header promises in
 * nwin windows, where the output began, the data bytes used so far. */
struct bwr_dec {
    struct tdb_numeric_int t;
    uint32_t orig, nwin;
    size_t start, pos;
};

/* Decodes window i (its metadata next in st->md) onto st->data_out. */
static int bwr_window(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st, struct bwr_dec *d,
                      uint32_t i)
{
    struct tdb_cursor *md = &st->md;
    struct tdb_buf *data_out = st->data_out;
    unsigned w = d->t.width;
    const uint8_t *offp;
    uint8_t bits;
    uint32_t nbytes;
    tdb_cur_bytes(md, w, &offp);
    tdb_cur_u8(md, &bits);
    if (tdb_cur_u32(md, &nbytes))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": metadata truncated at window %u of %u",
                       i, d->nwin);
    if (nbytes > d->orig - (data_out->len - d->start))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": window %u of %u bytes overruns the "
                       "%u input bytes", i, nbytes, d->orig);
    /* check the window's bytes are there before allocating */
    bool as_is = bits >= 8 * w || nbytes % w != 0;
    if (!as_is && bits != 8 && bits != 16 && bits != 32)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": window %u has bit width %u", i, bits);
    unsigned cw = as_is ? w : bits / 8;
    size_t nv = nbytes / w, left = st->size - d->pos;
    if ((as_is ? nbytes : nv * cw) > left)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": window %u of %u bytes truncated "
                       "(%zu bytes of data left)", i, nbytes, left);
    uint8_t *o = NULL;
    if (nbytes && tdb_buf_grow(data_out, nbytes, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    if (as_is) {
        if (nbytes)
            memcpy(o, st->data + d->pos, nbytes);
        d->pos += nbytes;
        return 0;
    }
    bwr_widen(st->data + d->pos, nv, cw, w, d->t.is_signed,
              tdb_numeric_load(offp, w), o);
    d->pos += nv * cw;
    return 0;
}

static int bwr_decode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    struct tdb_cursor *md = &st->md;
    struct tdb_buf *data_out = st->data_out;
    struct bwr_dec d = {.start = data_out->len};
    if (!tdb_numeric_window_int(call->datatype, call->version, false, &d.t))
        return tdb_numeric_passthrough(call, st);
    tdb_cur_u32(md, &d.orig);
    if (tdb_cur_u32(md, &d.nwin))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": metadata truncated (no header)");
    if (d.orig > tdb_filter_max_data(call))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": header says %u bytes, more than the %llu "
                       "the chunk's declared size allows", d.orig,
                       (unsigned long long)tdb_filter_max_data(call));
    for (uint32_t i = 0; i < d.nwin; i++) {
        int rc = bwr_window(call, st, &d, i);
        if (rc)
            return rc;
    }
    if (data_out->len - d.start != d.orig)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": windows hold %zu bytes, header says %u",
                       data_out->len - d.start, d.orig);
    if (d.pos != st->size)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       BWR_NAME ": windows use %zu of %zu bytes of data",
                       d.pos, st->size);
    return tdb_numeric_pass_md(call, md, st->md_out);
}

/* Bits TileDB gives a window of n values at p (and its minimum in *min);
 * 8 * w when the window cannot be reduced. */
static unsigned bwr_bits(const uint8_t *p, size_t n, struct tdb_numeric_int t,
                         uint64_t *min)
{
    unsigned w = t.width;
    *min = 0;
    if (n == 0)
        return 8 * w;
    uint64_t range;
    if (t.is_signed) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            int64_t v = tdb_numeric_load_signed(p + i * w, w);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        int64_t r;
        int64_t tmax = (int64_t)(tdb_numeric_mask(w) >> 1);
        if (__builtin_sub_overflow(hi, lo, &r) || r > tmax || r == tmax)
            return 8 * w;  /* range or range + 1 overflows the type */
        *min = (uint64_t)lo;
        int64_t r1 = r + 1;
        return r1 <= INT8_MAX ? 8 : r1 <= INT16_MAX ? 16
                                   : r1 <= INT32_MAX ? 32 : 64;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = tdb_numeric_load(p + i * w, w);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    range = hi - lo;
    if (range == tdb_numeric_mask(w))
        return 8 * w;
    *min = lo;
    uint64_t r1 = range + 1;
    return r1 <= UINT8_MAX ? 8 : r1 <= UINT16_MAX ? 16
                               : r1 <= UINT32_MAX ? 32 : 64;
}

static int bwr_encode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    const uint8_t *data = st->data;
    size_t size = st->size;
    struct tdb_numeric_int t;
    if (!tdb_numeric_window_int(call->datatype, call->version, false, &t))
        return tdb_numeric_passthrough_enc(call, st);
    unsigned w = t.width;
    uint64_t window, nwin;
    if (size > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       BWR_NAME ": input of %zu bytes exceeds 4 GiB", size);
    uint32_t max_window = tdb_numeric_max_window(call->filter);
    if (tdb_numeric_windows(size, max_window, w, &window, &nwin))
        return tdb_err(call->err, TDB_E_INVAL,
                       BWR_NAME ": window of %u bytes holds no %u-byte value",
                       max_window, w);
    if (tdb_buf_put_u32(st->md_out, (uint32_t)size) ||
        tdb_buf_put_u32(st->md_out, (uint32_t)nwin))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    for (uint64_t i = 0; i < nwin; i++) {
        size_t pos = (size_t)(i * window);
        size_t nbytes = size - pos < window ? size - pos : (size_t)window;
        size_t nv = nbytes / w;
        uint64_t min;
        unsigned bits = bwr_bits(data + pos, nv, t, &min);
        uint8_t *m, *o;
        if (tdb_buf_grow(st->md_out, w + 5, &m))
            return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
        tdb_numeric_store(m, w, min);
        m[w] = (uint8_t)bits;
        tdb_st32(m + w + 1, (uint32_t)nbytes);
        if (bits >= 8 * w || nbytes % w != 0) {
            if (tdb_buf_append(st->data_out, data + pos, nbytes))
                return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
            continue;
        }
        unsigned cw = bits / 8;
        if (tdb_buf_grow(st->data_out, nv * cw, &o))
            return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
        for (size_t j = 0; j < nv; j++)
            tdb_numeric_store(o + j * cw, cw,
                              tdb_numeric_load(data + pos + j * w, w) - min);
    }
    if (tdb_buf_append(st->md_out, st->md.p, st->md.len))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    return 0;
}

static int bwr_check_window(const struct tdb_fopt_value *v, char *why,
                            size_t cap)
{
    if (v->i != 0)
        return 0;
    snprintf(why, cap, "must not be 0");
    return 1;
}

const struct tdb_filter_opt tdb_window_opts[TDB_WINDOW_N_OPTS] = {
    {.name = "max_window", .kind = TDB_FOPT_UINT, .width = 4,
     .flags = TDB_FOPT_NULL_OK, .max = UINT32_MAX,
     .offset = offsetof(struct tdb_window_options, max_window),
     .check = bwr_check_window},
};

/* TileDB's default window. */
const struct tdb_window_options tdb_window_defaults = {.max_window = 256};

int tdb_numeric_read_window(struct tdb_filter *f, struct tdb_cursor *c,
                            uint32_t version, struct tdb_error *err)
{
    struct tdb_window_options *o = tdb_filter_opts_edit(f);
    (void)version;
    if (tdb_cur_u32(c, &o->max_window))
        return tdb_err(err, TDB_E_CORRUPT, "max window option truncated");
    return 0;
}

int tdb_numeric_write_window(const struct tdb_filter *f, struct tdb_buf *out)
{
    return tdb_buf_put_u32(out, tdb_numeric_max_window(f));
}

const struct tdb_filter_ops tdb_filter_bit_width_reduction = {
    .name = BWR_NAME,
    .type = TDB_FILTER_BIT_WIDTH_REDUCTION,
    TDB_WINDOW_OPS_OPTIONS,
    .output_type = NULL,
    .decode = bwr_decode,
    .encode = bwr_encode,
};
