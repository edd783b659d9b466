/* numeric.c: what the tests of the numeric filters share (see
 * numeric.h). */
#include "numeric.h"
#include "../capped.h"

#include <stdlib.h>
#include <string.h>

struct tdb_error test_err;

struct tdb_filter mkfilter(unsigned type)
{
    struct tdb_filter f;
    tdb_filter_init(&f, type);
    return f;
}

struct tdb_filter_call mkcall(const struct tdb_filter *f, unsigned dt,
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
int dec(const struct tdb_filter_ops *ops,
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

int enc(const struct tdb_filter_ops *ops,
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
void check_dec(const struct tdb_filter_ops *ops,
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
void check_enc(const struct tdb_filter_ops *ops,
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
void check_truncated(const struct tdb_filter_ops *ops,
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
uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fills n values of width w: pattern 0 random, 1 small steps (negative
 * too), 2 extremes, 3 sorted (non-decreasing, for POSITIVE_DELTA). */
void fill(uint8_t *p, size_t n, unsigned w, int pattern, uint64_t *s)
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
void roundtrip(const struct tdb_filter_ops *ops,
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
void roundtrip_all(const struct tdb_filter_ops *ops,
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
void fuzz(const struct tdb_filter_ops *ops,
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
void fuzz_encoded(const struct tdb_filter_ops *ops,
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

const unsigned int_types[N_INT_TYPES] = {
    TDB_INT8, TDB_UINT8, TDB_INT16, TDB_UINT16, TDB_INT32, TDB_UINT32,
    TDB_INT64, TDB_UINT64, T_DATETIME_MS, T_TIME_NS, TDB_CHAR, TDB_BOOL,
    TDB_BLOB, TDB_STRING_ASCII};


struct tdb_filter mkop(unsigned type, uint8_t compressor)
{
    struct tdb_filter f = mkfilter(type);
    f.ops = tdb_filter_lookup(type);
    tdb_filter_set_int(&f, "compressor", compressor);
    return f;
}
