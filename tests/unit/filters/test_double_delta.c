/* test_double_delta.c: the double delta filter (format/filters/
 * double_delta.c)
 * against hand-built chunks, round trips and truncated or corrupt input
 * (numeric.h). */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

/* ----------------------------------------------------------- DOUBLE_DELTA */

/* int32 10, 20, 31, 41: deltas 10, 11, 10; double deltas +1, -1; the
 * largest of |10|, 1, 1 needs 4 bits.  Records 0 0001 and 1 0001 fill
 * bits 63..54 of one word: 0x0C40000000000000, stored little-endian. */
static const uint8_t dd_md[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                16, 0, 0, 0, 25, 0, 0, 0};
static const uint8_t dd_data[] = {4, 4, 0, 0, 0, 0, 0, 0, 0,
                                  10, 0, 0, 0, 20, 0, 0, 0,
                                  0, 0, 0, 0, 0, 0, 0x40, 0x0C};
static const uint8_t dd_plain[] = {10, 0, 0, 0, 20, 0, 0, 0,
                                   31, 0, 0, 0, 41, 0, 0, 0};

static void dd_vector_packed(struct tdb_filter *f)
{
    struct tdb_filter_call c = mkcall(f, TDB_INT32, 22);
    check_dec(&tdb_filter_double_delta, &c, dd_md, sizeof dd_md, dd_data,
              sizeof dd_data, dd_plain, sizeof dd_plain, NULL, 0);
    check_enc(&tdb_filter_double_delta, &c, dd_plain, sizeof dd_plain, dd_md,
              sizeof dd_md, dd_data, sizeof dd_data);
    check_truncated(&tdb_filter_double_delta, &c, dd_md, sizeof dd_md, dd_data,
                    sizeof dd_data, false);
}

/* int8 0, 100, -100: the double delta -300 needs 9 bits >= 7: the
 * values are stored as they are after the header.  Two values: bitsize
 * 0, both values stored. */
static void dd_vector_raw(struct tdb_filter *f)
{
    struct tdb_filter_call c = mkcall(f, TDB_INT8, 22);
    static const uint8_t mdr[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                  3, 0, 0, 0, 12, 0, 0, 0};
    static const uint8_t dr[] = {9, 3, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0x9C};
    static const uint8_t pr[] = {0, 100, 0x9C};
    check_dec(&tdb_filter_double_delta, &c, mdr, sizeof mdr, dr, sizeof dr,
              pr, 3, NULL, 0);
    check_enc(&tdb_filter_double_delta, &c, pr, 3, mdr, sizeof mdr, dr,
              sizeof dr);

    c = mkcall(f, TDB_UINT16, 22);
    static const uint8_t md2[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                  4, 0, 0, 0, 13, 0, 0, 0};
    static const uint8_t d2[] = {0, 2, 0, 0, 0, 0, 0, 0, 0,
                                 0xFF, 0xFF, 1, 0};
    static const uint8_t p2[] = {0xFF, 0xFF, 1, 0};
    check_enc(&tdb_filter_double_delta, &c, p2, 4, md2, sizeof md2, d2,
              sizeof d2);
    check_dec(&tdb_filter_double_delta, &c, md2, sizeof md2, d2, sizeof d2,
              p2, 4, NULL, 0);
}

/* Records crossing a word: int64 with double deltas of 31 bits.
 * 0, 0, 2^30 - 1 (dd +2^30-1), 0 (dd -(2^31 - 2) ... ) round trip and
 * the word count is ceil(records * 32 / 64). */
static void dd_vector_crossing(struct tdb_filter *f)
{
    struct tdb_filter_call c = mkcall(f, TDB_INT64, 22);
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
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

static void dd_vector_corrupt(struct tdb_filter *f)
{
    struct tdb_buf mo = {0}, d = {0};
    /* Corrupt: the count disagrees with the part length. */
    struct tdb_filter_call c = mkcall(f, TDB_INT32, 22);
    uint8_t bad[sizeof dd_data];
    memcpy(bad, dd_data, sizeof dd_data);
    bad[1] = 5;
    CHECK_EQ_INT(dec(&tdb_filter_double_delta, &c, dd_md, sizeof dd_md, bad,
                     sizeof bad, &mo, &d), TDB_E_CORRUPT);
    /* A bit size of 31 or more means stored as is: here 16 bytes, so
     * the 16-byte part comes back raw, but a 20-byte one is corrupt. */
    memcpy(bad, dd_data, sizeof dd_data);
    bad[0] = 40;
    CHECK_EQ_INT(dec(&tdb_filter_double_delta, &c, dd_md, sizeof dd_md, bad,
                     sizeof bad, &mo, &d), 0);
    CHECK(d.len == 16 && memcmp(d.data, bad + 9, 16) == 0);
    uint8_t md20[sizeof dd_md];
    memcpy(md20, dd_md, sizeof dd_md);
    md20[8] = 20;
    CHECK_EQ_INT(dec(&tdb_filter_double_delta, &c, md20, sizeof md20, bad,
                     sizeof bad, &mo, &d), TDB_E_CORRUPT);
    /* Floats are refused unless reinterpreted. */
    c = mkcall(f, TDB_FLOAT32, 22);
    CHECK(dec(&tdb_filter_double_delta, &c, dd_md, sizeof dd_md, dd_data,
              sizeof dd_data, &mo, &d) < 0);
    tdb_filter_set_int(f, "reinterpret_datatype", TDB_INT32);
    check_dec(&tdb_filter_double_delta, &c, dd_md, sizeof dd_md, dd_data,
              sizeof dd_data, dd_plain, sizeof dd_plain, NULL, 0);
    CHECK_EQ_INT(tdb_filter_double_delta.output_type(f, TDB_FLOAT32),
                 TDB_INT32);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

/* Options: the reinterpret byte only from format 20. */
static void dd_vector_options(void)
{
    struct tdb_filter g = mkfilter(TDB_FILTER_DOUBLE_DELTA);
    static const uint8_t o20[] = {6, 0xFF, 0xFF, 0xFF, 0xFF, 9};
    struct tdb_cursor cur;
    tdb_cur_init(&cur, o20, 5);
    CHECK_EQ_INT(tdb_filter_double_delta.read_options(&g, &cur, 19,
                                                      &test_err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&g, "reinterpret_datatype"), TDB_ANY);
    tdb_cur_init(&cur, o20, 6);
    CHECK_EQ_INT(tdb_filter_double_delta.read_options(&g, &cur, 20,
                                                      &test_err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&g, "reinterpret_datatype"), TDB_UINT32);
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

static void test_dd_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_DOUBLE_DELTA);
    dd_vector_packed(&f);
    dd_vector_raw(&f);
    dd_vector_crossing(&f);
    dd_vector_corrupt(&f);
    dd_vector_options();
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

int main(void)
{
    RUN(test_dd_vector);
    RUN(test_dd_roundtrip);
    return unit_done();
}
