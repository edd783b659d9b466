/* test_bit_width_reduction.c: the bit width reduction filter
 * (format/filters/bit_width_reduction.c) against hand-built
 * chunks, round trips and truncated or corrupt input (numeric.h), and a
 * damaged tile decoded under a capped address space. */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

/* ---------------------------------------------------- BIT_WIDTH_REDUCTION */

/* int32 100, 101, 300, 100: min 100, range 200, 201 does not fit int8:
 * 16 bits, stored as int16 0, 1, 200, 0. */
static void bwr_vector_int32(struct tdb_filter *f)
{
    struct tdb_filter_call c = mkcall(f, TDB_INT32, 22);
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
}

/* uint16 with a window of 4 bytes: [1000, 1005] -> 8 bits {0, 5};
 * [7, 60000] -> range + 1 needs 16 bits: kept; 1 trailing byte: its
 * own window, kept. */
static void bwr_vector_windows(struct tdb_filter *f)
{
    tdb_filter_set_int(f, "max_window", 4);
    struct tdb_filter_call c = mkcall(f, TDB_UINT16, 22);
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
}

/* Signed types read reduced values sign-extended: int32 window with
 * offset 10, 8 bits, stored 0xFF -> 9; damaged headers are corrupt. */
static void bwr_vector_signed(struct tdb_filter *f)
{
    struct tdb_filter_call c = mkcall(f, TDB_INT32, 22);
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
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

static const uint8_t bwr_bytes[] = {9, 8, 7, 6, 5, 4, 3, 2};

/* int8 and floats pass through (no metadata of its own); so do
 * DATETIME types before format 20. */
static void bwr_vector_pass(struct tdb_filter *f)
{
    static const uint8_t anymd[] = {1, 2, 3};
    const uint8_t *bytes = bwr_bytes;
    unsigned pass[] = {TDB_INT8, TDB_UINT8, TDB_FLOAT64, TDB_CHAR,
                       TDB_STRING_ASCII};
    struct tdb_filter_call c;
    for (int i = 0; i < 5; i++) {
        c = mkcall(f, pass[i], 22);
        check_dec(&tdb_filter_bit_width_reduction, &c, anymd, 3, bytes, 8,
                  bytes, 8, anymd, 3);
        check_enc(&tdb_filter_bit_width_reduction, &c, bytes, 8, NULL, 0,
                  bytes, 8);
    }
    c = mkcall(f, T_DATETIME_MS, 19);
    check_dec(&tdb_filter_bit_width_reduction, &c, anymd, 3, bytes, 8, bytes,
              8, anymd, 3);
    /* From format 20, DATETIME is an int64: one 8-byte window kept as is
     * with 64 bits... a single value has range 0: 8 bits. */
    c = mkcall(f, T_DATETIME_MS, 20);
    tdb_filter_set_int(f, "max_window", 256);
    static const uint8_t mdt[] = {8, 0, 0, 0, 1, 0, 0, 0,
                                  9, 8, 7, 6, 5, 4, 3, 2, 8, 8, 0, 0, 0};
    static const uint8_t ddt[] = {0};
    check_enc(&tdb_filter_bit_width_reduction, &c, bytes, 8, mdt, sizeof mdt,
              ddt, 1);
    check_dec(&tdb_filter_bit_width_reduction, &c, mdt, sizeof mdt, ddt, 1,
              bytes, 8, NULL, 0);
}

/* Options: u32 max window. */
static void bwr_vector_options(void)
{
    struct tdb_filter g = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
    static const uint8_t opts[] = {0x00, 0x01, 0, 0};
    struct tdb_cursor cur;
    tdb_cur_init(&cur, opts, 4);
    CHECK_EQ_INT(tdb_filter_bit_width_reduction.read_options(&g, &cur, 22,
                                                             &test_err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&g, "max_window"), 256);
    struct tdb_buf o = {0};
    CHECK_EQ_INT(tdb_filter_bit_width_reduction.write_options(&g, &o), 0);
    CHECK(o.len == 4 && memcmp(o.data, opts, 4) == 0);
    tdb_buf_free(&o);
    tdb_cur_init(&cur, opts, 3);
    CHECK_EQ_INT(tdb_filter_bit_width_reduction.read_options(&g, &cur, 22,
                                                             &test_err),
                 TDB_E_CORRUPT);
    /* A window smaller than one value cannot encode. */
    tdb_filter_set_int(&g, "max_window", 2);
    struct tdb_filter_call c = mkcall(&g, TDB_INT32, 22);
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(enc(&tdb_filter_bit_width_reduction, &c, NULL, 0, bwr_bytes,
                     8, &mo, &d), TDB_E_INVAL);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

static void test_bwr_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
    tdb_filter_set_int(&f, "max_window", 256);
    bwr_vector_int32(&f);
    bwr_vector_windows(&f);
    bwr_vector_signed(&f);
    bwr_vector_pass(&f);
    bwr_vector_options();
}

static void test_bwr_roundtrip(void)
{
    static const uint32_t windows[] = {8, 100, 256, 1 << 20};
    for (int wi = 0; wi < 4; wi++) {
        struct tdb_filter f = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
        tdb_filter_set_int(&f, "max_window", windows[wi]);
        for (size_t i = 0; i < N_INT_TYPES; i++) {
            struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
            roundtrip_all(&tdb_filter_bit_width_reduction, &c, false, false);
        }
    }
    struct tdb_filter f = mkfilter(TDB_FILTER_BIT_WIDTH_REDUCTION);
    tdb_filter_set_int(&f, "max_window", 32);
    struct tdb_filter_call c = mkcall(&f, TDB_INT64, 22);
    fuzz_encoded(&tdb_filter_bit_width_reduction, &c, 1);
    c = mkcall(&f, TDB_UINT16, 22);
    fuzz_encoded(&tdb_filter_bit_width_reduction, &c, 1);
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

int main(void)
{
    RUN(test_bwr_damaged_bounded);
    RUN(test_bwr_vector);
    RUN(test_bwr_roundtrip);
    return unit_done();
}
