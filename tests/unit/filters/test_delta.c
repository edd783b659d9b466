/* test_delta.c: the delta filter (format/filters/delta.c) against hand-built
 * chunks, round trips and truncated or corrupt input (numeric.h), and a
 * damaged tile decoded under a capped address space. */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

/* ------------------------------------------------------------------ DELTA */

/* Options: u8 compressor 8, i32 level, u8 reinterpret from v19. */
static void delta_vector_options(void)
{
    struct tdb_filter g = mkfilter(TDB_FILTER_DELTA);
    static const uint8_t o19[] = {8, 0xFF, 0xFF, 0xFF, 0xFF, 0};
    struct tdb_cursor cur;
    tdb_cur_init(&cur, o19, sizeof o19);
    CHECK_EQ_INT(tdb_filter_delta.read_options(&g, &cur, 19, &test_err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&g, "reinterpret_datatype"), TDB_INT32);
    CHECK_EQ_INT(tdb_filter_get_int(&g, "level"), -1);
    tdb_cur_init(&cur, o19, 5);
    CHECK_EQ_INT(tdb_filter_delta.read_options(&g, &cur, 18, &test_err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&g, "reinterpret_datatype"), TDB_ANY);
    tdb_cur_init(&cur, o19, 5);
    CHECK_EQ_INT(tdb_filter_delta.read_options(&g, &cur, 19, &test_err),
                 TDB_E_CORRUPT);
    tdb_filter_set_int(&g, "reinterpret_datatype", TDB_INT32);
    struct tdb_buf o = {0};
    CHECK_EQ_INT(tdb_filter_delta.write_options(&g, &o), 0);
    CHECK(o.len == sizeof o19 && memcmp(o.data, o19, sizeof o19) == 0);
    tdb_buf_free(&o);
}

/* A metadata part: the previous metadata (int16 0x0201) is compressed
 * too and comes back as md_out. */
static void delta_vector_md_part(struct tdb_filter *f)
{
    struct tdb_filter_call c = mkcall(f, TDB_INT16, 22);
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
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

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
    tdb_filter_set_int(&f, "reinterpret_datatype", TDB_INT16);
    c = mkcall(&f, TDB_UINT8, 22);
    check_dec(&tdb_filter_delta, &c, md, sizeof md, data, sizeof data, plain,
              sizeof plain, NULL, 0);
    CHECK_EQ_INT(tdb_filter_delta.output_type(&f, TDB_UINT8), TDB_INT16);
    /* Without it, UINT8 deltas are per byte. */
    tdb_filter_set_int(&f, "reinterpret_datatype", TDB_ANY);
    CHECK_EQ_INT(tdb_filter_delta.output_type(&f, TDB_UINT8), TDB_UINT8);
    static const uint8_t md1[] = {0, 0, 0, 0, 1, 0, 0, 0,
                                  3, 0, 0, 0, 11, 0, 0, 0};
    static const uint8_t d1[] = {3, 0, 0, 0, 0, 0, 0, 0, 0xFE, 3, 0xFF};
    static const uint8_t p1[] = {0xFE, 0x01, 0x00};
    check_dec(&tdb_filter_delta, &c, md1, sizeof md1, d1, sizeof d1, p1, 3,
              NULL, 0);

    delta_vector_md_part(&f);

    c = mkcall(&f, TDB_INT16, 22);
    struct tdb_buf mo = {0}, d = {0};
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

    delta_vector_options();
}

static void test_delta_roundtrip(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_DELTA);
    for (size_t i = 0; i < N_INT_TYPES; i++) {
        struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
        roundtrip_all(&tdb_filter_delta, &c, false, true);
    }
    /* Reinterpreting float64 data as int64 works. */
    tdb_filter_set_int(&f, "reinterpret_datatype", TDB_INT64);
    struct tdb_filter_call c = mkcall(&f, TDB_FLOAT64, 22);
    roundtrip_all(&tdb_filter_delta, &c, false, true);
    fuzz_encoded(&tdb_filter_delta, &c, 1);
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
    RUN(test_delta_damaged_bounded);
    RUN(test_delta_vector);
    RUN(test_delta_roundtrip);
    return unit_done();
}
