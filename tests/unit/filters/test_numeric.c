/* test_numeric.c: the numeric filters (format/filters/
 * double_delta.c, delta.c, bit_width_reduction.c, positive_delta.c,
 * byteshuffle.c, bitshuffle.c, scale_float.c, xor.c) against hand-built
 * chunks, round trips and truncated or corrupt input. */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>

/* ---------------------------------------------------------------- helpers */

/* Datatype numbers core.h does not name. */
#define T_DATETIME_MS 25u
#define T_TIME_MS 34u
#define T_TIME_NS 36u

static struct tdb_error test_err;

static struct tdb_filter mkfilter(unsigned type)
{
    struct tdb_filter f;
    memset(&f, 0, sizeof f);
    f.type = (uint8_t)type;
    f.reinterpret_type = TDB_ANY;
    f.level = -1;
    f.max_window = 256;
    f.scale = 1.0;
    f.byte_width = 8;
    return f;
}

static struct tdb_filter_call mkcall(const struct tdb_filter *f, unsigned dt,
                                     uint32_t version)
{
    struct tdb_filter_call c;
    memset(&c, 0, sizeof c);
    c.filter = f;
    c.datatype = dt;
    c.cell_size = tdb_dt_size(dt);
    c.version = version;
    c.err = &test_err;
    return c;
}

/* Decodes (md, data) with ops; md_out and data_out are reset first. */
static int dec(const struct tdb_filter_ops *ops,
               const struct tdb_filter_call *c, const uint8_t *md,
               size_t md_len, const uint8_t *data, size_t size,
               struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    tdb_buf_reset(md_out);
    tdb_buf_reset(data_out);
    test_err.code = 0;
    test_err.msg[0] = 0;
    return filter_decode(ops, c, md, md_len, data, size, md_out, data_out);
}

static int enc(const struct tdb_filter_ops *ops,
               const struct tdb_filter_call *c, const uint8_t *md,
               size_t md_len, const uint8_t *data, size_t size,
               struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    tdb_buf_reset(md_out);
    tdb_buf_reset(data_out);
    test_err.code = 0;
    return filter_encode(ops, c, md, md_len, data, size, md_out, data_out);
}

/* Decodes a hand-built chunk and checks the expected data and metadata. */
static void check_dec(const struct tdb_filter_ops *ops,
                      const struct tdb_filter_call *c, const uint8_t *md,
                      size_t md_len, const uint8_t *data, size_t size,
                      const uint8_t *want, size_t want_len,
                      const uint8_t *want_md, size_t want_md_len)
{
    struct tdb_buf mo = {0}, d = {0};
    int r = dec(ops, c, md, md_len, data, size, &mo, &d);
    CHECK_EQ_INT(r, 0);
    if (r)
        fprintf(stderr, "  %s\n", test_err.msg);
    CHECK_EQ_INT(d.len, want_len);
    if (d.len == want_len && want_len)
        CHECK_MEM(d.data, want, want_len);
    CHECK_EQ_INT(mo.len, want_md_len);
    if (mo.len == want_md_len && want_md_len)
        CHECK_MEM(mo.data, want_md, want_md_len);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

/* Encodes plain data and checks the exact metadata and data bytes. */
static void check_enc(const struct tdb_filter_ops *ops,
                      const struct tdb_filter_call *c, const uint8_t *plain,
                      size_t plain_len, const uint8_t *want_md,
                      size_t want_md_len, const uint8_t *want,
                      size_t want_len)
{
    struct tdb_buf mo = {0}, d = {0};
    int r = enc(ops, c, NULL, 0, plain, plain_len, &mo, &d);
    CHECK_EQ_INT(r, 0);
    CHECK_EQ_INT(mo.len, want_md_len);
    if (mo.len == want_md_len && want_md_len)
        CHECK_MEM(mo.data, want_md, want_md_len);
    CHECK_EQ_INT(d.len, want_len);
    if (d.len == want_len && want_len)
        CHECK_MEM(d.data, want, want_len);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

/* Every strict prefix of md, and of data, must fail to decode; so must
 * data with one byte more when `extra_fails`. */
static void check_truncated(const struct tdb_filter_ops *ops,
                            const struct tdb_filter_call *c,
                            const uint8_t *md, size_t md_len,
                            const uint8_t *data, size_t size,
                            bool extra_fails)
{
    struct tdb_buf mo = {0}, d = {0};
    for (size_t k = 0; k < md_len; k++) {
        int r = dec(ops, c, md, k, data, size, &mo, &d);
        if (r == 0)
            fprintf(stderr, "  %s: md prefix %zu decoded\n", ops->name, k);
        CHECK(r < 0);
        CHECK(r == 0 || test_err.msg[0] != 0);
    }
    for (size_t k = 0; k < size; k++) {
        int r = dec(ops, c, md, md_len, data, k, &mo, &d);
        if (r == 0)
            fprintf(stderr, "  %s: data prefix %zu decoded\n", ops->name, k);
        CHECK(r < 0);
    }
    if (extra_fails) {
        uint8_t *big = calloc(size + 1, 1);
        if (size)
            memcpy(big, data, size);
        CHECK(dec(ops, c, md, md_len, big, size + 1, &mo, &d) < 0);
        free(big);
    }
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

/* A small deterministic generator. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fills n values of width w: pattern 0 random, 1 small steps (negative
 * too), 2 extremes, 3 sorted (non-decreasing, for POSITIVE_DELTA). */
static void fill(uint8_t *p, size_t n, unsigned w, int pattern, uint64_t *s)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        switch (pattern) {
        case 0: v = rng_next(s); break;
        case 1: v = (uint64_t)((int64_t)(i * 3) - 20 +
                               (int64_t)(rng_next(s) % 5)); break;
        case 2: {
            uint64_t top = UINT64_C(1) << (8 * w - 1);
            uint64_t e[] = {0, top, top - 1, UINT64_MAX, 1};
            v = e[rng_next(s) % 5];
            break;
        }
        default: {
            /* stays below the signed maximum of the width */
            uint64_t limit = w == 1 ? 120 : w == 2 ? 30000 : UINT64_C(1) << 30;
            if (acc < limit)
                acc += rng_next(s) % 4;
            v = acc;
            break;
        }
        }
        for (unsigned b = 0; b < w; b++)
            p[i * w + b] = (uint8_t)(v >> (8 * b));
    }
}

/* Encodes data with prior metadata `prev`, decodes, checks both return. */
static void roundtrip(const struct tdb_filter_ops *ops,
                      const struct tdb_filter_call *c, const uint8_t *data,
                      size_t size)
{
    static const uint8_t prev[] = {0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07,
                                   0x18};
    struct tdb_buf m1 = {0}, d1 = {0}, m2 = {0}, d2 = {0};
    int r = enc(ops, c, prev, sizeof prev, data, size, &m1, &d1);
    CHECK_EQ_INT(r, 0);
    if (r) {
        fprintf(stderr, "  encode %s dt %u size %zu: %s\n", ops->name,
                c->datatype, size, test_err.msg);
    } else {
        r = dec(ops, c, m1.data, m1.len, d1.data, d1.len, &m2, &d2);
        CHECK_EQ_INT(r, 0);
        if (r)
            fprintf(stderr, "  decode %s dt %u size %zu: %s\n", ops->name,
                    c->datatype, size, test_err.msg);
        CHECK_EQ_INT(d2.len, size);
        if (d2.len == size && size)
            CHECK_MEM(d2.data, data, size);
        CHECK_EQ_INT(m2.len, sizeof prev);
        if (m2.len == sizeof prev)
            CHECK_MEM(m2.data, prev, sizeof prev);
    }
    tdb_buf_free(&m1);
    tdb_buf_free(&d1);
    tdb_buf_free(&m2);
    tdb_buf_free(&d2);
}

/* Round trips over sizes (in values: 0, 1, 7, 13, 1000, 3000, plus a byte
 * count that is not whole values) and value patterns. */
static void roundtrip_all(const struct tdb_filter_ops *ops,
                          const struct tdb_filter_call *c, bool sorted_only,
                          bool whole_values_only)
{
    static const size_t counts[] = {0, 1, 2, 3, 7, 13, 1000, 3000};
    unsigned w = tdb_dt_size(c->datatype);
    uint64_t s = 0x9E3779B97F4A7C15u ^ c->datatype;
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        for (int pat = 0; pat < 4; pat++) {
            if (sorted_only && pat != 3)
                continue;
            size_t n = counts[i] * w;
            uint8_t *p = malloc(n + 8);
            fill(p, counts[i], w, pat, &s);
            roundtrip(ops, c, p, n);
            if (!whole_values_only && w > 1) {
                /* a byte count that is not whole values */
                p[n] = 0x5A;
                roundtrip(ops, c, p, n + 1);
            }
            free(p);
        }
}

/* Random byte flips in a valid encoding must never crash.  For the
 * compressors (whose metadata is u32 fields) only the low byte of each
 * field is flipped: a flipped high byte merely makes the framing allocate
 * gigabytes, which is slow under ASan and proves nothing about our code. */
static void fuzz(const struct tdb_filter_ops *ops,
                 const struct tdb_filter_call *c, const uint8_t *md,
                 size_t md_len, const uint8_t *data, size_t size)
{
    bool low_md = ops->type == TDB_FILTER_DELTA ||
                  ops->type == TDB_FILTER_DOUBLE_DELTA;
    uint8_t *m = malloc(md_len + 1), *d = malloc(size + 1);
    struct tdb_buf mo = {0}, dout = {0};
    uint64_t s = 0x1234567u;
    for (int it = 0; it < 3000; it++) {
        memcpy(m, md, md_len);
        memcpy(d, data, size);
        int flips = 1 + (int)(rng_next(&s) % 3);
        for (int k = 0; k < flips; k++) {
            uint64_t x = rng_next(&s);
            if ((x & 1) && md_len) {
                size_t at = (size_t)((x >> 8) % md_len);
                if (low_md)
                    at &= ~(size_t)3;
                m[at] ^= (uint8_t)(1u << ((x >> 4) % 8));
            }
            else if (size)
                d[(x >> 8) % size] ^= (uint8_t)(1u << ((x >> 4) % 8));
        }
        size_t ml = md_len, dl = size;
        if (rng_next(&s) % 4 == 0 && ml)
            ml = (size_t)(rng_next(&s) % ml);
        if (rng_next(&s) % 4 == 0 && dl)
            dl = (size_t)(rng_next(&s) % dl);
        int r = dec(ops, c, m, ml, d, dl, &mo, &dout);
        CHECK(r == 0 || r == TDB_E_CORRUPT || r == TDB_E_NOMEM ||
              r == TDB_E_UNSUPPORTED);
    }
    free(m);
    free(d);
    tdb_buf_free(&mo);
    tdb_buf_free(&dout);
}

/* Encodes random data with ops and fuzzes the result. */
static void fuzz_encoded(const struct tdb_filter_ops *ops,
                         const struct tdb_filter_call *c, int pattern)
{
    unsigned w = tdb_dt_size(c->datatype);
    size_t n = 37;
    uint8_t *p = malloc(n * w);
    uint64_t s = 77;
    fill(p, n, w, pattern, &s);
    struct tdb_buf m = {0}, d = {0};
    CHECK_EQ_INT(enc(ops, c, NULL, 0, p, n * w, &m, &d), 0);
    fuzz(ops, c, m.data, m.len, d.data, d.len);
    tdb_buf_free(&m);
    tdb_buf_free(&d);
    free(p);
}

static const unsigned int_types[] = {
    TDB_INT8, TDB_UINT8, TDB_INT16, TDB_UINT16, TDB_INT32, TDB_UINT32,
    TDB_INT64, TDB_UINT64, T_DATETIME_MS, T_TIME_NS, TDB_CHAR, TDB_BOOL,
    TDB_BLOB, TDB_STRING_ASCII};
#define N_INT_TYPES (sizeof int_types / sizeof *int_types)

/* ------------------------------------------------------------ BYTESHUFFLE */

static void test_byteshuffle_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_BYTESHUFFLE);
    struct tdb_filter_call c = mkcall(&f, TDB_INT32, 22);
    /* Two int32 values and two bytes that are not a whole value, then one
     * byte of the previous filter's metadata. */
    static const uint8_t md[] = {1, 0, 0, 0, 10, 0, 0, 0, 0xEE};
    static const uint8_t data[] = {0x01, 0x05, 0x02, 0x06, 0x03,
                                   0x07, 0x04, 0x08, 0xAA, 0xBB};
    static const uint8_t plain[] = {0x01, 0x02, 0x03, 0x04, 0x05,
                                    0x06, 0x07, 0x08, 0xAA, 0xBB};
    static const uint8_t rest[] = {0xEE};
    check_dec(&tdb_filter_byteshuffle, &c, md, sizeof md, data, sizeof data,
              plain, sizeof plain, rest, 1);
    check_enc(&tdb_filter_byteshuffle, &c, plain, sizeof plain, md, 8, data,
              sizeof data);
    check_truncated(&tdb_filter_byteshuffle, &c, md, 8, data, sizeof data,
                    true);
    /* Two parts: each is unshuffled on its own. */
    static const uint8_t md2[] = {2, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0};
    static const uint8_t d2[] = {1, 3, 2, 4, 5, 7, 6, 8};
    static const uint8_t p2[] = {1, 2, 3, 4, 5, 6, 7, 8};
    c = mkcall(&f, TDB_UINT16, 22);
    check_dec(&tdb_filter_byteshuffle, &c, md2, sizeof md2, d2, sizeof d2, p2,
              sizeof p2, NULL, 0);
    /* A part claiming more bytes than there are. */
    static const uint8_t bad[] = {1, 0, 0, 0, 9, 0, 0, 0};
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(dec(&tdb_filter_byteshuffle, &c, bad, sizeof bad, d2,
                     sizeof d2, &mo, &d), TDB_E_CORRUPT);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

static void test_byteshuffle_roundtrip(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_BYTESHUFFLE);
    for (size_t i = 0; i < N_INT_TYPES; i++) {
        struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
        roundtrip_all(&tdb_filter_byteshuffle, &c, false, false);
    }
    struct tdb_filter_call c = mkcall(&f, TDB_FLOAT64, 22);
    roundtrip_all(&tdb_filter_byteshuffle, &c, false, false);
    fuzz_encoded(&tdb_filter_byteshuffle, &c, 0);
}

/* ------------------------------------------------------------- BITSHUFFLE */

static void test_bitshuffle_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_BITSHUFFLE);
    struct tdb_filter_call c = mkcall(&f, TDB_INT8, 22);
    /* 8 int8 values: 0xFF, six zeros, 0x01.  Row k (bit k of every value)
     * is one byte: bit 0 is set in values 0 and 7, bits 1-7 in value 0. */
    static const uint8_t md[] = {1, 0, 0, 0, 8, 0, 0, 0};
    static const uint8_t plain[] = {0xFF, 0, 0, 0, 0, 0, 0, 0x01};
    static const uint8_t data[] = {0x81, 0x01, 0x01, 0x01,
                                   0x01, 0x01, 0x01, 0x01};
    check_dec(&tdb_filter_bitshuffle, &c, md, sizeof md, data, sizeof data,
              plain, sizeof plain, NULL, 0);
    check_enc(&tdb_filter_bitshuffle, &c, plain, sizeof plain, md, sizeof md,
              data, sizeof data);
    check_truncated(&tdb_filter_bitshuffle, &c, md, sizeof md, data,
                    sizeof data, true);

    /* 8 uint16 values, value 0 = 0x0100: rows of byte 0 are all zero, the
     * row of byte 1 bit 0 holds value 0's bit. */
    c = mkcall(&f, TDB_UINT16, 22);
    static const uint8_t plain16[16] = {0x00, 0x01};
    static const uint8_t data16[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0x01};
    static const uint8_t md16[] = {1, 0, 0, 0, 16, 0, 0, 0};
    check_dec(&tdb_filter_bitshuffle, &c, md16, sizeof md16, data16,
              sizeof data16, plain16, sizeof plain16, NULL, 0);
    check_enc(&tdb_filter_bitshuffle, &c, plain16, sizeof plain16, md16,
              sizeof md16, data16, sizeof data16);

    /* 11 int8 bytes: parts of 8 and 3; the 3-byte part is stored as is. */
    c = mkcall(&f, TDB_INT8, 22);
    static const uint8_t plain11[] = {0xFF, 0, 0, 0, 0, 0, 0, 0x01, 7, 8, 9};
    static const uint8_t md11[] = {2, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0};
    static const uint8_t data11[] = {0x81, 0x01, 0x01, 0x01, 0x01, 0x01,
                                     0x01, 0x01, 7, 8, 9};
    check_enc(&tdb_filter_bitshuffle, &c, plain11, sizeof plain11, md11,
              sizeof md11, data11, sizeof data11);
    check_dec(&tdb_filter_bitshuffle, &c, md11, sizeof md11, data11,
              sizeof data11, plain11, sizeof plain11, NULL, 0);

    /* 8 int64 values in one block: 64 bytes.  A 24-byte int64 part (3
     * values, fewer than 8) is stored as is. */
    c = mkcall(&f, TDB_INT64, 22);
    static const uint8_t md24[] = {1, 0, 0, 0, 24, 0, 0, 0};
    uint8_t p24[24];
    for (int i = 0; i < 24; i++)
        p24[i] = (uint8_t)(i * 7);
    check_enc(&tdb_filter_bitshuffle, &c, p24, sizeof p24, md24, sizeof md24,
              p24, sizeof p24);
}

static void test_bitshuffle_blocks(void)
{
    /* 8192 + 64 + 24 bytes of int64: block 1 (1024 values) shuffled,
     * block 2 (11 values) has 8 shuffled and 3 kept.  Value i of block 2
     * = 1 << i, so row (byte 0, bit k) has value k's bit: byte 1 << k. */
    struct tdb_filter f = mkfilter(TDB_FILTER_BITSHUFFLE);
    struct tdb_filter_call c = mkcall(&f, TDB_INT64, 22);
    size_t n = 8192 + 88;
    uint8_t *p = calloc(n, 1);
    for (int i = 0; i < 11; i++)
        p[8192 + i * 8] = (uint8_t)(1u << (i % 8));
    struct tdb_buf m = {0}, d = {0};
    CHECK_EQ_INT(enc(&tdb_filter_bitshuffle, &c, NULL, 0, p, n, &m, &d), 0);
    CHECK_EQ_INT(d.len, n);
    if (d.len == n) {
        for (int k = 0; k < 8; k++)
            CHECK_EQ_INT(d.data[8192 + k], 1u << k);
        for (int k = 8; k < 64; k++)
            CHECK_EQ_INT(d.data[8192 + k], 0);
        CHECK_MEM(d.data + 8192 + 64, p + 8192 + 64, 24);
    }
    tdb_buf_free(&m);
    tdb_buf_free(&d);
    free(p);
}

static void test_bitshuffle_roundtrip(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_BITSHUFFLE);
    for (size_t i = 0; i < N_INT_TYPES; i++) {
        struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
        roundtrip_all(&tdb_filter_bitshuffle, &c, false, false);
    }
    struct tdb_filter_call c = mkcall(&f, TDB_FLOAT32, 22);
    roundtrip_all(&tdb_filter_bitshuffle, &c, false, false);
    fuzz_encoded(&tdb_filter_bitshuffle, &c, 0);
}

/* -------------------------------------------------------------------- XOR */

static void test_xor_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_XOR);
    struct tdb_filter_call c = mkcall(&f, TDB_INT16, 22);
    /* int16 1, 3, 3, -32768: stored 1, 1^3, 3^3, 0x8000^3. */
    static const uint8_t md[] = {1, 0, 0, 0, 8, 0, 0, 0, 0x42};
    static const uint8_t data[] = {0x01, 0x00, 0x02, 0x00,
                                   0x00, 0x00, 0x03, 0x80};
    static const uint8_t plain[] = {0x01, 0x00, 0x03, 0x00,
                                    0x03, 0x00, 0x00, 0x80};
    static const uint8_t rest[] = {0x42};
    check_dec(&tdb_filter_xor, &c, md, sizeof md, data, sizeof data, plain,
              sizeof plain, rest, 1);
    check_enc(&tdb_filter_xor, &c, plain, sizeof plain, md, 8, data,
              sizeof data);
    check_truncated(&tdb_filter_xor, &c, md, 8, data, sizeof data, true);
    /* output types */
    CHECK_EQ_INT(tdb_filter_xor.output_type(&f, TDB_FLOAT64), TDB_INT64);
    CHECK_EQ_INT(tdb_filter_xor.output_type(&f, TDB_FLOAT32), TDB_INT32);
    CHECK_EQ_INT(tdb_filter_xor.output_type(&f, TDB_UINT16), TDB_INT16);
    CHECK_EQ_INT(tdb_filter_xor.output_type(&f, TDB_BOOL), TDB_INT8);
}

static void test_xor_roundtrip(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_XOR);
    for (size_t i = 0; i < N_INT_TYPES; i++) {
        struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
        roundtrip_all(&tdb_filter_xor, &c, false, false);
    }
    struct tdb_filter_call c = mkcall(&f, TDB_FLOAT64, 22);
    roundtrip_all(&tdb_filter_xor, &c, false, false);
    fuzz_encoded(&tdb_filter_xor, &c, 0);
}

/* ------------------------------------------------------------ SCALE_FLOAT */

static void put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    tdb_st64(p, u);
}

static double get_f64(const uint8_t *p)
{
    uint64_t u = tdb_le64(p);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

static void test_scale_float_vector(void)
{
    /* The spec's example: scale 0.25, offset 10, byte width 2. */
    struct tdb_filter f = mkfilter(TDB_FILTER_SCALE_FLOAT);
    f.scale = 0.25;
    f.offset = 10.0;
    f.byte_width = 2;
    struct tdb_filter_call c = mkcall(&f, TDB_FLOAT64, 22);
    static const uint8_t md[] = {1, 0, 0, 0, 10, 0, 0, 0, 0x99};
    static const uint8_t data[] = {0, 0, 1, 0, 3, 0, 4, 0, 0xFC, 0xFF};
    static const double in[] = {10.0, 10.25, 10.754, 11.0001, 9.0};
    static const double out[] = {10.0, 10.25, 10.75, 11.0, 9.0};
    uint8_t pin[40], pout[40];
    for (int i = 0; i < 5; i++) {
        put_f64(pin + 8 * i, in[i]);
        put_f64(pout + 8 * i, out[i]);
    }
    static const uint8_t rest[] = {0x99};
    check_dec(&tdb_filter_scale_float, &c, md, sizeof md, data, sizeof data,
              pout, sizeof pout, rest, 1);
    check_enc(&tdb_filter_scale_float, &c, pin, sizeof pin, md, 8, data,
              sizeof data);
    check_truncated(&tdb_filter_scale_float, &c, md, 8, data, sizeof data,
                    true);

    /* float32 with byte width 1: (float)(0.5 * x - 1). */
    f.scale = 0.5;
    f.offset = -1.0;
    f.byte_width = 1;
    c = mkcall(&f, TDB_FLOAT32, 22);
    static const uint8_t md1[] = {1, 0, 0, 0, 3, 0, 0, 0};
    static const uint8_t d1[] = {0x00, 0x04, 0xFE};       /* 0, 4, -2 */
    static const uint8_t p1[] = {0x00, 0x00, 0x80, 0xBF,  /* -1.0f */
                                 0x00, 0x00, 0x80, 0x3F,  /*  1.0f */
                                 0x00, 0x00, 0x00, 0xC0}; /* -2.0f */
    check_dec(&tdb_filter_scale_float, &c, md1, sizeof md1, d1, sizeof d1,
              p1, sizeof p1, NULL, 0);
    check_enc(&tdb_filter_scale_float, &c, p1, sizeof p1, md1, sizeof md1,
              d1, sizeof d1);

    /* A part that is not whole stored integers is corrupt. */
    f.byte_width = 4;
    c = mkcall(&f, TDB_FLOAT32, 22);
    static const uint8_t md3[] = {1, 0, 0, 0, 3, 0, 0, 0};
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(dec(&tdb_filter_scale_float, &c, md3, sizeof md3, d1,
                     sizeof d1, &mo, &d), TDB_E_CORRUPT);
    /* Float scaling needs 4- or 8-byte values. */
    c = mkcall(&f, TDB_INT16, 22);
    CHECK_EQ_INT(dec(&tdb_filter_scale_float, &c, md1, sizeof md1, d1,
                     sizeof d1, &mo, &d), TDB_E_CORRUPT);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);

    /* Options: f64 scale, f64 offset, u64 byte width; output type. */
    struct tdb_filter g = mkfilter(TDB_FILTER_SCALE_FLOAT);
    g.scale = 0.25;
    g.offset = 10.0;
    g.byte_width = 2;
    struct tdb_buf o = {0};
    CHECK_EQ_INT(tdb_filter_scale_float.write_options(&g, &o), 0);
    static const uint8_t want_opts[] = {0, 0, 0, 0, 0, 0, 0xD0, 0x3F,
                                        0, 0, 0, 0, 0, 0, 0x24, 0x40,
                                        2, 0, 0, 0, 0, 0, 0, 0};
    CHECK_EQ_INT(o.len, sizeof want_opts);
    if (o.len == sizeof want_opts)
        CHECK_MEM(o.data, want_opts, sizeof want_opts);
    struct tdb_filter h = mkfilter(TDB_FILTER_SCALE_FLOAT);
    struct tdb_cursor cur;
    tdb_cur_init(&cur, want_opts, sizeof want_opts);
    CHECK_EQ_INT(tdb_filter_scale_float.read_options(&h, &cur, 22, &test_err),
                 0);
    CHECK(h.scale == 0.25 && h.offset == 10.0 && h.byte_width == 2);
    CHECK_EQ_INT(tdb_filter_scale_float.output_type(&h, TDB_FLOAT64),
                 TDB_INT16);
    tdb_cur_init(&cur, want_opts, sizeof want_opts - 1);
    CHECK_EQ_INT(tdb_filter_scale_float.read_options(&h, &cur, 22, &test_err),
                 TDB_E_CORRUPT);
    uint8_t bad_opts[24];
    memcpy(bad_opts, want_opts, 24);
    bad_opts[16] = 3;
    tdb_cur_init(&cur, bad_opts, sizeof bad_opts);
    CHECK_EQ_INT(tdb_filter_scale_float.read_options(&h, &cur, 22, &test_err),
                 TDB_E_CORRUPT);
    tdb_buf_free(&o);
}

static void test_scale_float_roundtrip(void)
{
    /* Values offset + k * scale come back exactly. */
    static const unsigned widths[] = {1, 2, 4, 8};
    static const size_t counts[] = {0, 1, 7, 13, 1000};
    for (int fw = 0; fw < 2; fw++)
        for (int wi = 0; wi < 4; wi++)
            for (int ci = 0; ci < 5; ci++) {
                struct tdb_filter f = mkfilter(TDB_FILTER_SCALE_FLOAT);
                f.scale = 0.5;
                f.offset = -3.0;
                f.byte_width = widths[wi];
                unsigned dt = fw ? TDB_FLOAT64 : TDB_FLOAT32;
                struct tdb_filter_call c = mkcall(&f, dt, 22);
                size_t n = counts[ci], vs = fw ? 8 : 4;
                uint8_t *p = malloc(n * vs + 1);
                uint64_t s = 5;
                for (size_t i = 0; i < n; i++) {
                    int64_t k = (int64_t)(rng_next(&s) % 200) - 100;
                    double v = -3.0 + 0.5 * (double)k;
                    if (fw) {
                        put_f64(p + i * 8, v);
                    } else {
                        float x = (float)v;
                        uint32_t u;
                        memcpy(&u, &x, 4);
                        tdb_st32(p + i * 4, u);
                    }
                }
                roundtrip(&tdb_filter_scale_float, &c, p, n * vs);
                free(p);
            }
    /* Large values in 8 bytes: exact as long as they are whole. */
    struct tdb_filter f = mkfilter(TDB_FILTER_SCALE_FLOAT);
    f.byte_width = 8;
    struct tdb_filter_call c = mkcall(&f, TDB_FLOAT64, 22);
    uint8_t p[24];
    put_f64(p, 9007199254740992.0);
    put_f64(p + 8, -4503599627370496.0);
    put_f64(p + 16, -1.0);
    roundtrip(&tdb_filter_scale_float, &c, p, sizeof p);
    struct tdb_buf m = {0}, d = {0};
    CHECK_EQ_INT(enc(&tdb_filter_scale_float, &c, NULL, 0, p, sizeof p, &m,
                     &d), 0);
    CHECK_EQ_INT(d.len, 24);
    if (d.len == 24)
        CHECK_EQ_INT(tdb_le64(d.data + 16), UINT64_MAX); /* -1 */
    fuzz(&tdb_filter_scale_float, &c, m.data, m.len, d.data, d.len);
    /* An encoded value out of range of the width becomes the minimum, as
     * TileDB's conversion on x86-64 gives. */
    f.byte_width = 2;
    put_f64(p, 1e6);
    CHECK_EQ_INT(enc(&tdb_filter_scale_float, &c, NULL, 0, p, 8, &m, &d), 0);
    CHECK_EQ_INT(d.len, 2);
    if (d.len == 2)
        CHECK_EQ_INT(tdb_le16(d.data), 0x4240);  /* (int16)(int32)1e6 */
    tdb_buf_free(&m);
    tdb_buf_free(&d);
    (void)get_f64;
}

/* ---------------------------------------------------- BIT_WIDTH_REDUCTION */

static void test_bwr_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
    f.max_window = 256;
    struct tdb_filter_call c = mkcall(&f, TDB_INT32, 22);
    /* int32 100, 101, 300, 100: min 100, range 200, 201 does not fit int8:
     * 16 bits, stored as int16 0, 1, 200, 0. */
    static const uint8_t md[] = {16, 0, 0, 0, 1, 0, 0, 0,   /* 16 bytes, 1 */
                                 100, 0, 0, 0, 16, 16, 0, 0, 0, 0x77};
    static const uint8_t data[] = {0, 0, 1, 0, 200, 0, 0, 0};
    static const uint8_t plain[] = {100, 0, 0, 0, 101, 0, 0, 0,
                                    0x2C, 1, 0, 0, 100, 0, 0, 0};
    static const uint8_t rest[] = {0x77};
    check_dec(&tdb_filter_bit_width_reduction, &c, md, sizeof md, data,
              sizeof data, plain, sizeof plain, rest, 1);
    check_enc(&tdb_filter_bit_width_reduction, &c, plain, sizeof plain, md,
              sizeof md - 1, data, sizeof data);
    check_truncated(&tdb_filter_bit_width_reduction, &c, md, sizeof md - 1,
                    data, sizeof data, true);

    /* uint16 with a window of 4 bytes: [1000, 1005] -> 8 bits {0, 5};
     * [7, 60000] -> range + 1 needs 16 bits: kept; 1 trailing byte: its
     * own window, kept. */
    f.max_window = 4;
    c = mkcall(&f, TDB_UINT16, 22);
    static const uint8_t md2[] = {9, 0, 0, 0, 3, 0, 0, 0,
                                  0xE8, 0x03, 8, 4, 0, 0, 0,
                                  7, 0, 16, 4, 0, 0, 0,
                                  0, 0, 16, 1, 0, 0, 0};
    static const uint8_t d2[] = {0, 5, 7, 0, 0x60, 0xEA, 0x33};
    static const uint8_t p2[] = {0xE8, 0x03, 0xED, 0x03, 7, 0, 0x60, 0xEA,
                                 0x33};
    check_dec(&tdb_filter_bit_width_reduction, &c, md2, sizeof md2, d2,
              sizeof d2, p2, sizeof p2, NULL, 0);
    check_enc(&tdb_filter_bit_width_reduction, &c, p2, sizeof p2, md2,
              sizeof md2, d2, sizeof d2);
    check_truncated(&tdb_filter_bit_width_reduction, &c, md2, sizeof md2, d2,
                    sizeof d2, true);

    /* Signed types read reduced values sign-extended: int32 window with
     * offset 10, 8 bits, stored 0xFF -> 9. */
    c = mkcall(&f, TDB_INT32, 22);
    static const uint8_t md3[] = {4, 0, 0, 0, 1, 0, 0, 0,
                                  10, 0, 0, 0, 8, 4, 0, 0, 0};
    static const uint8_t d3[] = {0xFF};
    static const uint8_t p3[] = {9, 0, 0, 0};
    check_dec(&tdb_filter_bit_width_reduction, &c, md3, sizeof md3, d3, 1,
              p3, 4, NULL, 0);
    /* A bit width that is not 8, 16, 32 or 64 is corrupt. */
    uint8_t md4[sizeof md3];
    memcpy(md4, md3, sizeof md3);
    md4[12] = 12;
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(dec(&tdb_filter_bit_width_reduction, &c, md4, sizeof md4, d3,
                     1, &mo, &d), TDB_E_CORRUPT);
    /* Header length disagreeing with the windows is corrupt. */
    memcpy(md4, md3, sizeof md3);
    md4[0] = 8;
    CHECK_EQ_INT(dec(&tdb_filter_bit_width_reduction, &c, md4, sizeof md4, d3,
                     1, &mo, &d), TDB_E_CORRUPT);

    /* int8 and floats pass through (no metadata of its own); so do
     * DATETIME types before format 20. */
    static const uint8_t anymd[] = {1, 2, 3};
    static const uint8_t bytes[] = {9, 8, 7, 6, 5, 4, 3, 2};
    unsigned pass[] = {TDB_INT8, TDB_UINT8, TDB_FLOAT64, TDB_CHAR,
                       TDB_STRING_ASCII};
    for (int i = 0; i < 5; i++) {
        c = mkcall(&f, pass[i], 22);
        check_dec(&tdb_filter_bit_width_reduction, &c, anymd, 3, bytes, 8,
                  bytes, 8, anymd, 3);
        check_enc(&tdb_filter_bit_width_reduction, &c, bytes, 8, NULL, 0,
                  bytes, 8);
    }
    c = mkcall(&f, T_DATETIME_MS, 19);
    check_dec(&tdb_filter_bit_width_reduction, &c, anymd, 3, bytes, 8, bytes,
              8, anymd, 3);
    /* From format 20, DATETIME is an int64: one 8-byte window kept as is
     * with 64 bits... a single value has range 0: 8 bits. */
    c = mkcall(&f, T_DATETIME_MS, 20);
    f.max_window = 256;
    static const uint8_t mdt[] = {8, 0, 0, 0, 1, 0, 0, 0,
                                  9, 8, 7, 6, 5, 4, 3, 2, 8, 8, 0, 0, 0};
    static const uint8_t ddt[] = {0};
    check_enc(&tdb_filter_bit_width_reduction, &c, bytes, 8, mdt, sizeof mdt,
              ddt, 1);
    check_dec(&tdb_filter_bit_width_reduction, &c, mdt, sizeof mdt, ddt, 1,
              bytes, 8, NULL, 0);

    /* Options: u32 max window. */
    struct tdb_filter g = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
    static const uint8_t opts[] = {0x00, 0x01, 0, 0};
    struct tdb_cursor cur;
    tdb_cur_init(&cur, opts, 4);
    CHECK_EQ_INT(tdb_filter_bit_width_reduction.read_options(&g, &cur, 22,
                                                             &test_err), 0);
    CHECK_EQ_INT(g.max_window, 256);
    struct tdb_buf o = {0};
    CHECK_EQ_INT(tdb_filter_bit_width_reduction.write_options(&g, &o), 0);
    CHECK(o.len == 4 && memcmp(o.data, opts, 4) == 0);
    tdb_buf_free(&o);
    tdb_cur_init(&cur, opts, 3);
    CHECK_EQ_INT(tdb_filter_bit_width_reduction.read_options(&g, &cur, 22,
                                                             &test_err),
                 TDB_E_CORRUPT);
    /* A window smaller than one value cannot encode. */
    g.max_window = 2;
    c = mkcall(&g, TDB_INT32, 22);
    CHECK_EQ_INT(enc(&tdb_filter_bit_width_reduction, &c, NULL, 0, bytes, 8,
                     &mo, &d), TDB_E_INVAL);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

static void test_bwr_roundtrip(void)
{
    static const uint32_t windows[] = {8, 100, 256, 1 << 20};
    for (int wi = 0; wi < 4; wi++) {
        struct tdb_filter f = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
        f.max_window = windows[wi];
        for (size_t i = 0; i < N_INT_TYPES; i++) {
            struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
            roundtrip_all(&tdb_filter_bit_width_reduction, &c, false, false);
        }
    }
    struct tdb_filter f = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
    f.max_window = 32;
    struct tdb_filter_call c = mkcall(&f, TDB_INT64, 22);
    fuzz_encoded(&tdb_filter_bit_width_reduction, &c, 1);
    c = mkcall(&f, TDB_UINT16, 22);
    fuzz_encoded(&tdb_filter_bit_width_reduction, &c, 1);
}

/* --------------------------------------------------------- POSITIVE_DELTA */

static void test_pd_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_POSITIVE_DELTA);
    f.max_window = 4;
    struct tdb_filter_call c = mkcall(&f, TDB_UINT16, 22);
    /* uint16 5, 7, 7, 10 in windows of 2 values: [5: 0, 2] [7: 0, 3]. */
    static const uint8_t md[] = {2, 0, 0, 0,
                                 5, 0, 4, 0, 0, 0,
                                 7, 0, 4, 0, 0, 0, 0xAB};
    static const uint8_t data[] = {0, 0, 2, 0, 0, 0, 3, 0};
    static const uint8_t plain[] = {5, 0, 7, 0, 7, 0, 10, 0};
    static const uint8_t rest[] = {0xAB};
    check_dec(&tdb_filter_positive_delta, &c, md, sizeof md, data,
              sizeof data, plain, sizeof plain, rest, 1);
    check_enc(&tdb_filter_positive_delta, &c, plain, sizeof plain, md,
              sizeof md - 1, data, sizeof data);
    check_truncated(&tdb_filter_positive_delta, &c, md, sizeof md - 1, data,
                    sizeof data, true);
    /* A trailing byte is its own window, kept as is. */
    static const uint8_t plain5[] = {5, 0, 7, 0, 0x99};
    static const uint8_t md5[] = {2, 0, 0, 0,
                                  5, 0, 4, 0, 0, 0,
                                  0x99, 0, 1, 0, 0, 0};
    static const uint8_t data5[] = {0, 0, 2, 0, 0x99};
    check_enc(&tdb_filter_positive_delta, &c, plain5, sizeof plain5, md5,
              sizeof md5, data5, sizeof data5);
    check_dec(&tdb_filter_positive_delta, &c, md5, sizeof md5, data5,
              sizeof data5, plain5, sizeof plain5, NULL, 0);
    /* int8 counts too (unlike bit width reduction). */
    f.max_window = 1024;
    c = mkcall(&f, TDB_INT8, 22);
    static const uint8_t p8[] = {0x80, 0xFF, 0x00, 0x7F};  /* -128..127 */
    static const uint8_t m8[] = {1, 0, 0, 0, 0x80, 4, 0, 0, 0};
    static const uint8_t d8[] = {0, 0x7F, 1, 0x7F};
    check_enc(&tdb_filter_positive_delta, &c, p8, 4, m8, sizeof m8, d8, 4);
    check_dec(&tdb_filter_positive_delta, &c, m8, sizeof m8, d8, 4, p8, 4,
              NULL, 0);
    /* A decreasing sequence cannot be encoded. */
    static const uint8_t down[] = {5, 4};
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(enc(&tdb_filter_positive_delta, &c, NULL, 0, down, 2, &mo,
                     &d), TDB_E_INVAL);
    /* Signed order: -1 after 1 is decreasing for int8, fine for uint8. */
    static const uint8_t sgn[] = {1, 0xFF};
    CHECK_EQ_INT(enc(&tdb_filter_positive_delta, &c, NULL, 0, sgn, 2, &mo,
                     &d), TDB_E_INVAL);
    c = mkcall(&f, TDB_UINT8, 22);
    CHECK_EQ_INT(enc(&tdb_filter_positive_delta, &c, NULL, 0, sgn, 2, &mo,
                     &d), 0);
    /* Floats, CHAR and strings pass through; DATETIME only from v20. */
    static const uint8_t bytes[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const uint8_t anymd[] = {4, 5};
    unsigned pass[] = {TDB_FLOAT32, TDB_CHAR, TDB_STRING_UTF8, TDB_ANY};
    for (int i = 0; i < 4; i++) {
        c = mkcall(&f, pass[i], 22);
        check_dec(&tdb_filter_positive_delta, &c, anymd, 2, bytes, 8, bytes,
                  8, anymd, 2);
    }
    c = mkcall(&f, T_TIME_MS, 19);
    check_dec(&tdb_filter_positive_delta, &c, anymd, 2, bytes, 8, bytes, 8,
              anymd, 2);
    c = mkcall(&f, T_TIME_MS, 20);
    CHECK(dec(&tdb_filter_positive_delta, &c, anymd, 2, bytes, 8, &mo, &d) <
          0);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

static void test_pd_roundtrip(void)
{
    static const uint32_t windows[] = {8, 100, 1024};
    for (int wi = 0; wi < 3; wi++) {
        struct tdb_filter f = mkfilter(TDB_FILTER_POSITIVE_DELTA);
        f.max_window = windows[wi];
        for (size_t i = 0; i < N_INT_TYPES; i++) {
            struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
            roundtrip_all(&tdb_filter_positive_delta, &c, true, false);
        }
    }
    struct tdb_filter f = mkfilter(TDB_FILTER_POSITIVE_DELTA);
    f.max_window = 24;
    struct tdb_filter_call c = mkcall(&f, TDB_UINT32, 22);
    fuzz_encoded(&tdb_filter_positive_delta, &c, 3);
}

/* ------------------------------------------------------------------ DELTA */

static void test_delta_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_DELTA);
    struct tdb_filter_call c = mkcall(&f, TDB_INT16, 22);
    /* Framing: 0 metadata parts, 1 data part of 6 bytes, 16 compressed.
     * Part: u64 3, int16 10, 7 - 10, 300 - 7. */
    static const uint8_t md[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                 6, 0, 0, 0, 14, 0, 0, 0};
    static const uint8_t data[] = {3, 0, 0, 0, 0, 0, 0, 0,
                                   10, 0, 0xFD, 0xFF, 0x25, 0x01};
    static const uint8_t plain[] = {10, 0, 7, 0, 0x2C, 0x01};
    check_dec(&tdb_filter_delta, &c, md, sizeof md, data, sizeof data, plain,
              sizeof plain, NULL, 0);
    check_enc(&tdb_filter_delta, &c, plain, sizeof plain, md, sizeof md,
              data, sizeof data);
    check_truncated(&tdb_filter_delta, &c, md, sizeof md, data, sizeof data,
                    false);

    /* The same bytes arriving as UINT8 with reinterpret type INT16. */
    f.reinterpret_type = TDB_INT16;
    c = mkcall(&f, TDB_UINT8, 22);
    check_dec(&tdb_filter_delta, &c, md, sizeof md, data, sizeof data, plain,
              sizeof plain, NULL, 0);
    CHECK_EQ_INT(tdb_filter_delta.output_type(&f, TDB_UINT8), TDB_INT16);
    /* Without it, UINT8 deltas are per byte. */
    f.reinterpret_type = TDB_ANY;
    CHECK_EQ_INT(tdb_filter_delta.output_type(&f, TDB_UINT8), TDB_UINT8);
    static const uint8_t md1[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                  3, 0, 0, 0, 11, 0, 0, 0};
    static const uint8_t d1[] = {3, 0, 0, 0, 0, 0, 0, 0, 0xFE, 3, 0xFF};
    static const uint8_t p1[] = {0xFE, 0x01, 0x00};
    check_dec(&tdb_filter_delta, &c, md1, sizeof md1, d1, sizeof d1, p1, 3,
              NULL, 0);

    /* A metadata part: the previous metadata (int16 0x0201) is compressed
     * too and comes back as md_out. */
    c = mkcall(&f, TDB_INT16, 22);
    static const uint8_t md2[] = {1, 0, 0, 0, 1, 0, 0, 0,
                                  2, 0, 0, 0, 10, 0, 0, 0,
                                  2, 0, 0, 0, 10, 0, 0, 0};
    static const uint8_t d2[] = {1, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x02,
                                 1, 0, 0, 0, 0, 0, 0, 0, 0x05, 0x00};
    static const uint8_t pm[] = {0x01, 0x02};
    static const uint8_t pd[] = {0x05, 0x00};
    check_dec(&tdb_filter_delta, &c, md2, sizeof md2, d2, sizeof d2, pd, 2,
              pm, 2);
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(enc(&tdb_filter_delta, &c, pm, 2, pd, 2, &mo, &d), 0);
    CHECK(mo.len == sizeof md2 && memcmp(mo.data, md2, sizeof md2) == 0);
    CHECK(d.len == sizeof d2 && memcmp(d.data, d2, sizeof d2) == 0);

    /* A count that disagrees with the part length is corrupt. */
    uint8_t bad[sizeof data];
    memcpy(bad, data, sizeof data);
    bad[0] = 2;
    CHECK_EQ_INT(dec(&tdb_filter_delta, &c, md, sizeof md, bad, sizeof bad,
                     &mo, &d), TDB_E_CORRUPT);
    /* Floats are refused. */
    c = mkcall(&f, TDB_FLOAT32, 22);
    CHECK(dec(&tdb_filter_delta, &c, md, sizeof md, data, sizeof data, &mo,
              &d) < 0);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);

    /* Options: u8 compressor 8, i32 level, u8 reinterpret from v19. */
    struct tdb_filter g = mkfilter(TDB_FILTER_DELTA);
    static const uint8_t o19[] = {8, 0xFF, 0xFF, 0xFF, 0xFF, 0};
    struct tdb_cursor cur;
    tdb_cur_init(&cur, o19, sizeof o19);
    CHECK_EQ_INT(tdb_filter_delta.read_options(&g, &cur, 19, &test_err), 0);
    CHECK_EQ_INT(g.reinterpret_type, TDB_INT32);
    CHECK_EQ_INT(g.level, -1);
    tdb_cur_init(&cur, o19, 5);
    CHECK_EQ_INT(tdb_filter_delta.read_options(&g, &cur, 18, &test_err), 0);
    CHECK_EQ_INT(g.reinterpret_type, TDB_ANY);
    tdb_cur_init(&cur, o19, 5);
    CHECK_EQ_INT(tdb_filter_delta.read_options(&g, &cur, 19, &test_err),
                 TDB_E_CORRUPT);
    g.reinterpret_type = TDB_INT32;
    struct tdb_buf o = {0};
    CHECK_EQ_INT(tdb_filter_delta.write_options(&g, &o), 0);
    CHECK(o.len == sizeof o19 && memcmp(o.data, o19, sizeof o19) == 0);
    tdb_buf_free(&o);
}

static void test_delta_roundtrip(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_DELTA);
    for (size_t i = 0; i < N_INT_TYPES; i++) {
        struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
        roundtrip_all(&tdb_filter_delta, &c, false, true);
    }
    /* Reinterpreting float64 data as int64 works. */
    f.reinterpret_type = TDB_INT64;
    struct tdb_filter_call c = mkcall(&f, TDB_FLOAT64, 22);
    roundtrip_all(&tdb_filter_delta, &c, false, true);
    fuzz_encoded(&tdb_filter_delta, &c, 1);
}

/* ----------------------------------------------------------- DOUBLE_DELTA */

static void test_dd_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_DOUBLE_DELTA);
    struct tdb_filter_call c = mkcall(&f, TDB_INT32, 22);
    /* int32 10, 20, 31, 41: deltas 10, 11, 10; double deltas +1, -1; the
     * largest of |10|, 1, 1 needs 4 bits.  Records 0 0001 and 1 0001 fill
     * bits 63..54 of one word: 0x0C40000000000000, stored little-endian. */
    static const uint8_t md[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                 16, 0, 0, 0, 25, 0, 0, 0};
    static const uint8_t data[] = {4, 4, 0, 0, 0, 0, 0, 0, 0,
                                   10, 0, 0, 0, 20, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0x40, 0x0C};
    static const uint8_t plain[] = {10, 0, 0, 0, 20, 0, 0, 0,
                                    31, 0, 0, 0, 41, 0, 0, 0};
    check_dec(&tdb_filter_double_delta, &c, md, sizeof md, data, sizeof data,
              plain, sizeof plain, NULL, 0);
    check_enc(&tdb_filter_double_delta, &c, plain, sizeof plain, md,
              sizeof md, data, sizeof data);
    check_truncated(&tdb_filter_double_delta, &c, md, sizeof md, data,
                    sizeof data, false);

    /* int8 0, 100, -100: the double delta -300 needs 9 bits >= 7: the
     * values are stored as they are after the header. */
    c = mkcall(&f, TDB_INT8, 22);
    static const uint8_t mdr[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                  3, 0, 0, 0, 12, 0, 0, 0};
    static const uint8_t dr[] = {9, 3, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0x9C};
    static const uint8_t pr[] = {0, 100, 0x9C};
    check_dec(&tdb_filter_double_delta, &c, mdr, sizeof mdr, dr, sizeof dr,
              pr, 3, NULL, 0);
    check_enc(&tdb_filter_double_delta, &c, pr, 3, mdr, sizeof mdr, dr,
              sizeof dr);

    /* Two values: bitsize 0, both values stored. */
    c = mkcall(&f, TDB_UINT16, 22);
    static const uint8_t md2[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                  4, 0, 0, 0, 13, 0, 0, 0};
    static const uint8_t d2[] = {0, 2, 0, 0, 0, 0, 0, 0, 0,
                                 0xFF, 0xFF, 1, 0};
    static const uint8_t p2[] = {0xFF, 0xFF, 1, 0};
    check_enc(&tdb_filter_double_delta, &c, p2, 4, md2, sizeof md2, d2,
              sizeof d2);
    check_dec(&tdb_filter_double_delta, &c, md2, sizeof md2, d2, sizeof d2,
              p2, 4, NULL, 0);

    /* Records crossing a word: int64 with double deltas of 31 bits.
     * 0, 0, 2^30 - 1 (dd +2^30-1), 0 (dd -(2^31 - 2) ... ) round trip and
     * the word count is ceil(records * 32 / 64). */
    c = mkcall(&f, TDB_INT64, 22);
    uint8_t p5[5 * 8] = {0};
    int64_t v5[] = {0, 0, (1 << 30) - 1, 0, 5};
    for (int i = 0; i < 5; i++)
        tdb_st64(p5 + 8 * i, (uint64_t)v5[i]);
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(enc(&tdb_filter_double_delta, &c, NULL, 0, p5, 40, &mo, &d),
                 0);
    /* dd: 2^30-1, -(2^31-2), 2^30+4: bitsize 31, 3 records of 32 bits */
    CHECK_EQ_INT(d.len, 9 + 16 + 16);
    if (d.len == 41) {
        CHECK_EQ_INT(d.data[0], 31);
        /* record 1: sign 0, then 2^30-1 in 31 bits; record 2 starts at
         * bit 31 of the first word (counting from the top) with sign 1. */
        CHECK_EQ_INT(tdb_le64(d.data + 25),
                     ((uint64_t)((1u << 30) - 1) << 32) |
                         (UINT64_C(1) << 31) | ((1u << 31) - 2));
    }
    roundtrip(&tdb_filter_double_delta, &c, p5, 40);

    /* Corrupt: the count disagrees with the part length. */
    c = mkcall(&f, TDB_INT32, 22);
    uint8_t bad[sizeof data];
    memcpy(bad, data, sizeof data);
    bad[1] = 5;
    CHECK_EQ_INT(dec(&tdb_filter_double_delta, &c, md, sizeof md, bad,
                     sizeof bad, &mo, &d), TDB_E_CORRUPT);
    /* A bit size of 31 or more means stored as is: here 16 bytes, so
     * the 16-byte part comes back raw, but a 20-byte one is corrupt. */
    memcpy(bad, data, sizeof data);
    bad[0] = 40;
    CHECK_EQ_INT(dec(&tdb_filter_double_delta, &c, md, sizeof md, bad,
                     sizeof bad, &mo, &d), 0);
    CHECK(d.len == 16 && memcmp(d.data, bad + 9, 16) == 0);
    uint8_t md20[sizeof md];
    memcpy(md20, md, sizeof md);
    md20[8] = 20;
    CHECK_EQ_INT(dec(&tdb_filter_double_delta, &c, md20, sizeof md20, bad,
                     sizeof bad, &mo, &d), TDB_E_CORRUPT);
    /* Floats are refused unless reinterpreted. */
    c = mkcall(&f, TDB_FLOAT32, 22);
    CHECK(dec(&tdb_filter_double_delta, &c, md, sizeof md, data, sizeof data,
              &mo, &d) < 0);
    f.reinterpret_type = TDB_INT32;
    check_dec(&tdb_filter_double_delta, &c, md, sizeof md, data, sizeof data,
              plain, sizeof plain, NULL, 0);
    CHECK_EQ_INT(tdb_filter_double_delta.output_type(&f, TDB_FLOAT32),
                 TDB_INT32);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);

    /* Options: the reinterpret byte only from format 20. */
    struct tdb_filter g = mkfilter(TDB_FILTER_DOUBLE_DELTA);
    static const uint8_t o20[] = {6, 0xFF, 0xFF, 0xFF, 0xFF, 9};
    struct tdb_cursor cur;
    tdb_cur_init(&cur, o20, 5);
    CHECK_EQ_INT(tdb_filter_double_delta.read_options(&g, &cur, 19,
                                                      &test_err), 0);
    CHECK_EQ_INT(g.reinterpret_type, TDB_ANY);
    tdb_cur_init(&cur, o20, 6);
    CHECK_EQ_INT(tdb_filter_double_delta.read_options(&g, &cur, 20,
                                                      &test_err), 0);
    CHECK_EQ_INT(g.reinterpret_type, TDB_UINT32);
    struct tdb_buf o = {0};
    CHECK_EQ_INT(tdb_filter_double_delta.write_options(&g, &o), 0);
    CHECK(o.len == 6 && memcmp(o.data, o20, 6) == 0);
    tdb_buf_free(&o);
    static const uint8_t obad[] = {6, 0, 0, 0, 0, 200};
    tdb_cur_init(&cur, obad, 6);
    CHECK_EQ_INT(tdb_filter_double_delta.read_options(&g, &cur, 22,
                                                      &test_err),
                 TDB_E_CORRUPT);
}

static void test_dd_roundtrip(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_DOUBLE_DELTA);
    for (size_t i = 0; i < N_INT_TYPES; i++) {
        struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
        roundtrip_all(&tdb_filter_double_delta, &c, false, true);
    }
    /* Smooth sequences compress into bit records of every size. */
    struct tdb_filter_call c = mkcall(&f, TDB_INT64, 22);
    for (unsigned bits = 1; bits < 62; bits += 3) {
        uint8_t p[200 * 8];
        uint64_t s = bits, v = 0, d = 0;
        for (int i = 0; i < 200; i++) {
            d += (rng_next(&s) % ((UINT64_C(1) << bits) / 2 + 1));
            v += d;
            tdb_st64(p + 8 * i, v);
        }
        roundtrip(&tdb_filter_double_delta, &c, p, sizeof p);
    }
    /* uint64 deltas beyond int64: stored as is. */
    c = mkcall(&f, TDB_UINT64, 22);
    uint8_t big[24] = {0};
    tdb_st64(big + 8, UINT64_MAX);
    roundtrip(&tdb_filter_double_delta, &c, big, sizeof big);
    c = mkcall(&f, TDB_INT32, 22);
    fuzz_encoded(&tdb_filter_double_delta, &c, 1);
    c = mkcall(&f, TDB_INT16, 22);
    fuzz_encoded(&tdb_filter_double_delta, &c, 3);
}


/* ---------------------------------------- damaged tiles: bounded decoders */

static struct tdb_filter mkop(unsigned type, uint8_t compressor)
{
    struct tdb_filter f = mkfilter(type);
    f.ops = tdb_filter_lookup(type);
    f.compressor = compressor;
    return f;
}

/* BIT_WIDTH_REDUCTION: a window claiming 4 GiB - 4 bytes, 4 bytes of data.
 * Before, the window was allocated before its bytes were looked for. */
static void test_bwr_damaged_bounded(void)
{
    struct tdb_filter f = mkop(TDB_FILTER_BIT_WIDTH_REDUCTION, 0);
    uint8_t md[17];
    tdb_st32(md, 0xfffffffc);     /* input bytes */
    tdb_st32(md + 4, 1);          /* windows */
    tdb_st32(md + 8, 0);          /* minimum */
    md[12] = 8;                   /* bits */
    tdb_st32(md + 13, 0xfffffffc);/* window bytes */
    struct tdb_buf t = {0};
    /* the chunk declares 4 GiB too: the window's bytes are missing */
    capped_tile(&t, 0xfffffffc, md, sizeof md, (const uint8_t *)"abcd", 4);
    CHECK_CAPPED(&f, TDB_INT32, false, &t, "window 0 of 4294967292 bytes "
                 "truncated");
    /* the chunk declares 16 bytes: the header's 4 GiB is refused */
    capped_tile(&t, 16, md, sizeof md, (const uint8_t *)"abcd", 4);
    CHECK_CAPPED(&f, TDB_INT32, false, &t, "BIT_WIDTH_REDUCTION: header says "
                 "4294967292 bytes");
    tdb_buf_free(&t);
}

/* DELTA and DOUBLE_DELTA: a compressed part of 12 bytes declaring
 * 4 GiB - 8 decompressed bytes was allocated whole before decoding. */
static void test_delta_damaged_bounded(void)
{
    static const unsigned types[] = {TDB_FILTER_DELTA,
                                     TDB_FILTER_DOUBLE_DELTA};
    static const uint8_t comp[] = {8, 6};
    uint8_t md[16];
    tdb_st32(md, 0);              /* metadata parts */
    tdb_st32(md + 4, 1);          /* data parts */
    tdb_st32(md + 8, 0xfffffff8); /* original */
    tdb_st32(md + 12, 12);        /* compressed */
    const uint8_t data[12] = {0xff, 0xff, 0xff, 0x1f, 0, 0, 0, 0, 1, 2, 3, 4};
    struct tdb_buf t = {0};
    for (int i = 0; i < 2; i++) {
        struct tdb_filter f = mkop(types[i], comp[i]);
        capped_tile(&t, 0xfffffff8, md, sizeof md, data, sizeof data);
        CHECK_CAPPED(&f, TDB_INT32, false, &t, "data part 0 records "
                     "4294967288 bytes, more than its 12 compressed bytes");
        capped_tile(&t, 64, md, sizeof md, data, sizeof data);
        CHECK_CAPPED(&f, TDB_INT32, false, &t, "more than the 64 the chunk's "
                     "declared size allows");
    }
    tdb_buf_free(&t);
}

int main(void)
{
    RUN(test_bwr_damaged_bounded);
    RUN(test_delta_damaged_bounded);
    RUN(test_byteshuffle_vector);
    RUN(test_byteshuffle_roundtrip);
    RUN(test_bitshuffle_vector);
    RUN(test_bitshuffle_blocks);
    RUN(test_bitshuffle_roundtrip);
    RUN(test_xor_vector);
    RUN(test_xor_roundtrip);
    RUN(test_scale_float_vector);
    RUN(test_scale_float_roundtrip);
    RUN(test_bwr_vector);
    RUN(test_bwr_roundtrip);
    RUN(test_pd_vector);
    RUN(test_pd_roundtrip);
    RUN(test_delta_vector);
    RUN(test_delta_roundtrip);
    RUN(test_dd_vector);
    RUN(test_dd_roundtrip);
    return unit_done();
}
