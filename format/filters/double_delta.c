/* double_delta.c: the DOUBLE_DELTA filter (format_spec/filters/
 * double_delta.md; options in filter_pipeline.md, "Delta Compressor
 * Options").
 *
 * A compressor: it uses the compression framing of compress_common.h and
 * codes every part (the previous metadata too) in the working type
 * (tdb_numeric_delta_int of the reinterpret datatype when set, from format
 * 20, else of the datatype received) as
 *     u8 bitsize, u64 n,
 *     then, when bitsize >= 8 * width - 1, the n values as they are;
 *     else the first value (n >= 1), the second (n >= 2), and for each
 *     later value a record: 1 sign bit (1 = negative) and bitsize bits of
 *     the magnitude of (v[i] - v[i-1]) - (v[i-1] - v[i-2]), most
 *     significant first.
 * Records are packed into 64-bit words from bit 63 down, each word stored
 * little-endian; the last word is zero-padded.  bitsize is the bit length
 * (at least 1) of the largest of |v[1] - v[0]| and every |double delta|,
 * 0 when n <= 2.  Decoding is modulo 2^width. */
#include "compress_common.h"
#include "numeric_common.h"

#define DD_NAME "DOUBLE_DELTA"

static int dd_int(const struct tdb_filter_call *call,
                  struct tdb_numeric_int *t)
{
    unsigned dt = tdb_numeric_delta_type(call);
    if (!tdb_numeric_delta_int(dt, t))
        return tdb_err(call->err, TDB_E_UNSUPPORTED,
                       DD_NAME ": cannot work on datatype %u (%s)", dt,
                       tdb_dt_name(dt) ? tdb_dt_name(dt) : "unknown");
    return 0;
}

/* Reads bit records from 64-bit words filled from the top bit down. */
struct dd_reader {
    const uint8_t *p;  /* the next word */
    uint64_t cur;      /* the current word */
    unsigned left;     /* bits of cur not yet read */
};

/* The next nb (1 to 63) bits, most significant first. */
static inline uint64_t dd_take(struct dd_reader *r, unsigned nb)
{
    if (r->left >= nb) {
        r->left -= nb;
        return r->cur >> r->left & ((UINT64_C(1) << nb) - 1);
    }
    unsigned have = r->left, more = nb - have;
    uint64_t hi = have ? r->cur & ((UINT64_C(1) << have) - 1) : 0;
    r->cur = tdb_le64(r->p);
    r->p += 8;
    r->left = 64 - more;
    return hi << more | r->cur >> r->left;
}

/* Values 2..num-1 from their records of 1 + bitsize bits (sign, then
 * magnitude of the double delta), after v2 = v[0] and v1 = v[1]; w a
 * constant once inlined. */
static inline __attribute__((always_inline)) void
dd_expand(struct dd_reader *rd, unsigned bitsize, size_t num, unsigned w,
          uint64_t v2, uint64_t v1, uint8_t *dst)
{
    uint64_t mask = (UINT64_C(1) << bitsize) - 1;
    for (size_t i = 2; i < num; i++) {
        uint64_t rec = dd_take(rd, bitsize + 1);
        uint64_t mag = rec & mask;
        uint64_t dd = rec >> bitsize ? 0 - mag : mag;
        uint64_t v = dd + 2 * v1 - v2;
        tdb_numeric_store(dst + i * w, w, v);
        v2 = v1;
        v1 = v;
    }
}

static int dd_decompress(const struct tdb_filter_call *call,
                         const uint8_t *src, size_t n, uint8_t *dst,
                         size_t dst_len)
{
    struct tdb_numeric_int t;
    int r = dd_int(call, &t);
    if (r)
        return r;
    unsigned w = t.width;
    struct tdb_cursor c;
    uint8_t bitsize;
    uint64_t num;
    tdb_cur_init(&c, src, n);
    tdb_cur_u8(&c, &bitsize);
    if (tdb_cur_u64(&c, &num))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       DD_NAME ": part truncated (no header)");
    if (bitsize >= 8 * w - 1) {
        /* Stored as is: all the remaining bytes. */
        if (tdb_cur_left(&c) != dst_len)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           DD_NAME ": uncompressed part of %zu bytes, "
                           "expected %zu", tdb_cur_left(&c), dst_len);
        const uint8_t *raw;
        tdb_cur_bytes(&c, dst_len, &raw);
        memcpy(dst, raw, dst_len);
        return 0;
    }
    if (num != dst_len / w)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       DD_NAME ": part holds %llu values, expected %zu",
                       (unsigned long long)num, dst_len / w);
    const uint8_t *head, *words = NULL;
    size_t nhead = num < 2 ? (size_t)num : 2;
    uint64_t nbits = 0, nwords;
    if (num > 2)
        nbits = (num - 2) * (uint64_t)(bitsize + 1);  /* num <= dst_len */
    nwords = nbits / 64 + (nbits % 64 != 0);
    tdb_cur_bytes(&c, nhead * w, &head);
    if (tdb_cur_bytes(&c, (size_t)nwords * 8, &words))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       DD_NAME ": part of %llu values in %u-bit records "
                       "truncated", (unsigned long long)num, bitsize + 1);
    uint64_t v2 = 0, v1 = 0;  /* v[i-2], v[i-1] */
    for (size_t i = 0; i < nhead; i++) {
        v2 = v1;
        v1 = tdb_numeric_load(head + i * w, w);
        tdb_numeric_store(dst + i * w, w, v1);
    }
    struct dd_reader rd = {.p = words, .cur = 0, .left = 0};
    switch (w) {
    case 1: dd_expand(&rd, bitsize, (size_t)num, 1, v2, v1, dst); break;
    case 2: dd_expand(&rd, bitsize, (size_t)num, 2, v2, v1, dst); break;
    case 4: dd_expand(&rd, bitsize, (size_t)num, 4, v2, v1, dst); break;
    default: dd_expand(&rd, bitsize, (size_t)num, 8, v2, v1, dst); break;
    }
    /* Bytes after the last whole value: TileDB never writes them. */
    memset(dst + num * w, 0, dst_len - num * w);
    return 0;
}

/* The most bytes a part of n bytes decodes to: stored as is, the bytes
 * after the header; else two values and one value per record of
 * bitsize + 1 bits, and fewer than one value of zeros after them. */
static uint64_t dd_max_out(const struct tdb_filter_call *call,
                           const uint8_t *src, size_t n)
{
    struct tdb_numeric_int t;
    unsigned dt = tdb_numeric_delta_type(call);
    if (!tdb_numeric_delta_int(dt, &t))
        return 0;  /* the decode refuses the type first */
    if (n < 9)
        return 0;
    unsigned w = t.width, bitsize = src[0];
    uint64_t rest = (uint64_t)n - 9;
    if (bitsize >= 8 * w - 1)
        return rest;
    return (2 + rest * 8 / (bitsize + 1)) * w + w - 1;
}

/* v[i] - v[i-1] as TileDB's checked int64 subtraction; false when the
 * difference does not fit. */
static bool dd_sub(const uint8_t *p, size_t i, struct tdb_numeric_int t,
                   int64_t *d)
{
    unsigned w = t.width;
    if (t.is_signed)
        return !__builtin_sub_overflow(
            tdb_numeric_load_signed(p + i * w, w),
            tdb_numeric_load_signed(p + (i - 1) * w, w), d);
    uint64_t a = tdb_numeric_load(p + i * w, w);
    uint64_t b = tdb_numeric_load(p + (i - 1) * w, w);
    if (a >= b) {
        if (a - b > (uint64_t)INT64_MAX)
            return false;
        *d = (int64_t)(a - b);
        return true;
    }
    if (b - a > (uint64_t)INT64_MAX + 1)
        return false;
    *d = (int64_t)(0 - (b - a));
    return true;
}

static uint64_t dd_abs(int64_t v)
{
    return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/* The bit size TileDB computes, or 64 when a delta or double delta does
 * not fit int64 (where TileDB refuses to write; we store the part as is,
 * which TileDB reads back). */
static unsigned dd_bitsize(const uint8_t *p, size_t num,
                           struct tdb_numeric_int t)
{
    if (num <= 2)
        return 0;
    uint64_t max = 0;
    int64_t prev = 0;
    for (size_t i = 1; i < num; i++) {
        int64_t d, dd;
        if (!dd_sub(p, i, t, &d))
            return 64;
        if (i == 1) {
            max = dd_abs(d);
        } else {
            if (__builtin_sub_overflow(d, prev, &dd))
                return 64;
            max = dd_abs(dd) > max ? dd_abs(dd) : max;
        }
        prev = d;
    }
    unsigned bits = 0;
    do {
        bits++;
        max >>= 1;
    } while (max);
    return bits;
}

/* Appends bit records to 64-bit words filled from the top bit down. */
struct dd_writer {
    struct tdb_buf *out;
    uint64_t cur;
    unsigned used;
    int err;
};

static void dd_put(struct dd_writer *wr, uint64_t v, unsigned nb)
{
    while (nb > 0) {
        unsigned room = 64 - wr->used;
        unsigned take = nb < room ? nb : room;
        uint64_t bits = v >> (nb - take);
        if (take < 64)
            bits &= (UINT64_C(1) << take) - 1;
        wr->cur |= bits << (room - take);
        wr->used += take;
        nb -= take;
        if (wr->used == 64) {
            if (!wr->err)
                wr->err = tdb_buf_put_u64(wr->out, wr->cur);
            wr->cur = 0;
            wr->used = 0;
        }
    }
}

static int dd_compress(const struct tdb_filter_call *call,
                       const uint8_t *src, size_t n, struct tdb_buf *out)
{
    struct tdb_numeric_int t;
    int r = dd_int(call, &t);
    if (r)
        return r;
    unsigned w = t.width;
    if (n % w != 0)
        return tdb_err(call->err, TDB_E_INVAL,
                       DD_NAME ": part of %zu bytes is not whole %u-byte "
                       "values", n, w);
    size_t num = n / w;
    unsigned bitsize = dd_bitsize(src, num, t);
    if (tdb_buf_put_u8(out, (uint8_t)bitsize) || tdb_buf_put_u64(out, num))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    if (bitsize >= 8 * w - 1) {
        if (tdb_buf_append(out, src, n))
            return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
        return 0;
    }
    size_t nhead = num < 2 ? num : 2;
    if (tdb_buf_append(out, src, nhead * w))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    struct dd_writer wr = {.out = out, .cur = 0, .used = 0, .err = 0};
    int64_t prev = 0, d = 0;
    if (num > 2)
        dd_sub(src, 1, t, &prev);
    for (size_t i = 2; i < num; i++) {
        dd_sub(src, i, t, &d);  /* dd_bitsize checked it fits */
        int64_t dd = d - prev;
        dd_put(&wr, dd < 0, 1);
        dd_put(&wr, dd_abs(dd), bitsize);
        prev = d;
    }
    if (wr.used && !wr.err)
        wr.err = tdb_buf_put_u64(out, wr.cur);
    if (wr.err)
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    return 0;
}

static const struct tdb_compress_codec dd_codec = {
    .name = DD_NAME,
    .decompress = dd_decompress,
    .max_out = dd_max_out,
    .compress = dd_compress,
};

static int dd_decode(const struct tdb_filter_call *call,
                     struct tdb_filter_stage *st)
{
    struct tdb_numeric_int t;
    int r = dd_int(call, &t);  /* before anything is allocated */
    if (r)
        return r;
    return tdb_compress_decode(&dd_codec, call, st);
}

static int dd_encode(const struct tdb_filter_call *call,
                     struct tdb_filter_stage *st)
{
    return tdb_compress_encode(&dd_codec, call, st);
}

static int dd_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                           uint32_t version, struct tdb_error *err)
{
    return tdb_delta_read_options(f, c, version, 20, err);
}

static unsigned dd_output_type(const struct tdb_filter *f, unsigned in_type)
{
    const struct tdb_delta_options *o = tdb_filter_opts(f);
    return o->reinterpret_type != TDB_ANY ? o->reinterpret_type : in_type;
}

static const struct tdb_delta_options dd_defaults = {
    .c = {.compressor = TDB_COMPRESSOR_DOUBLE_DELTA,
          .level = TDB_FILTER_LEVEL_DEFAULT},
    .reinterpret_type = TDB_ANY,
};

const struct tdb_filter_ops tdb_filter_double_delta = {
    .name = DD_NAME,
    .type = TDB_FILTER_DOUBLE_DELTA,
    .read_options = dd_read_options,
    TDB_DELTA_OPS_OPTIONS(dd_defaults),
    .output_type = dd_output_type,
    .decode = dd_decode,
    .encode = dd_encode,
};
