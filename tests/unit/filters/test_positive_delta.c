/* test_positive_delta.c: the positive delta filter (format/filters/
 * positive_delta.c)
 * against hand-built chunks, round trips and truncated or corrupt input
 * (numeric.h). */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

/* --------------------------------------------------------- POSITIVE_DELTA */

/* A decreasing sequence cannot be encoded. */
static void pd_vector_refused(struct tdb_filter *f)
{
    struct tdb_filter_call c = mkcall(f, TDB_INT8, 22);
    static const uint8_t down[] = {5, 4};
    struct tdb_buf mo = {0}, d = {0};
    CHECK_EQ_INT(enc(&tdb_filter_positive_delta, &c, NULL, 0, down, 2, &mo,
                     &d), TDB_E_INVAL);
    /* Signed order: -1 after 1 is decreasing for int8, fine for uint8. */
    static const uint8_t sgn[] = {1, 0xFF};
    CHECK_EQ_INT(enc(&tdb_filter_positive_delta, &c, NULL, 0, sgn, 2, &mo,
                     &d), TDB_E_INVAL);
    c = mkcall(f, TDB_UINT8, 22);
    CHECK_EQ_INT(enc(&tdb_filter_positive_delta, &c, NULL, 0, sgn, 2, &mo,
                     &d), 0);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

/* Floats, CHAR and strings pass through; DATETIME only from v20. */
static void pd_vector_pass(struct tdb_filter *f)
{
    struct tdb_filter_call c;
    struct tdb_buf mo = {0}, d = {0};
    static const uint8_t bytes[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const uint8_t anymd[] = {4, 5};
    unsigned pass[] = {TDB_FLOAT32, TDB_CHAR, TDB_STRING_UTF8, TDB_ANY};
    for (int i = 0; i < 4; i++) {
        c = mkcall(f, pass[i], 22);
        check_dec(&tdb_filter_positive_delta, &c, anymd, 2, bytes, 8, bytes,
                  8, anymd, 2);
    }
    c = mkcall(f, T_TIME_MS, 19);
    check_dec(&tdb_filter_positive_delta, &c, anymd, 2, bytes, 8, bytes, 8,
              anymd, 2);
    c = mkcall(f, T_TIME_MS, 20);
    CHECK(dec(&tdb_filter_positive_delta, &c, anymd, 2, bytes, 8, &mo, &d) <
          0);
    tdb_buf_free(&mo);
    tdb_buf_free(&d);
}

static void test_pd_vector(void)
{
    struct tdb_filter f = mkfilter(TDB_FILTER_POSITIVE_DELTA);
    tdb_filter_set_int(&f, "max_window", 4);
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
    tdb_filter_set_int(&f, "max_window", 1024);
    c = mkcall(&f, TDB_INT8, 22);
    static const uint8_t p8[] = {0x80, 0xFF, 0x00, 0x7F};  /* -128..127 */
    static const uint8_t m8[] = {1, 0, 0, 0, 0x80, 4, 0, 0, 0};
    static const uint8_t d8[] = {0, 0x7F, 1, 0x7F};
    check_enc(&tdb_filter_positive_delta, &c, p8, 4, m8, sizeof m8, d8, 4);
    check_dec(&tdb_filter_positive_delta, &c, m8, sizeof m8, d8, 4, p8, 4,
              NULL, 0);
    pd_vector_refused(&f);
    pd_vector_pass(&f);
}

static void test_pd_roundtrip(void)
{
    static const uint32_t windows[] = {8, 100, 1024};
    for (int wi = 0; wi < 3; wi++) {
        struct tdb_filter f = mkfilter(TDB_FILTER_POSITIVE_DELTA);
        tdb_filter_set_int(&f, "max_window", windows[wi]);
        for (size_t i = 0; i < N_INT_TYPES; i++) {
            struct tdb_filter_call c = mkcall(&f, int_types[i], 22);
            roundtrip_all(&tdb_filter_positive_delta, &c, true, false);
        }
    }
    struct tdb_filter f = mkfilter(TDB_FILTER_POSITIVE_DELTA);
    tdb_filter_set_int(&f, "max_window", 24);
    struct tdb_filter_call c = mkcall(&f, TDB_UINT32, 22);
    fuzz_encoded(&tdb_filter_positive_delta, &c, 3);
}

int main(void)
{
    RUN(test_pd_vector);
    RUN(test_pd_roundtrip);
    return unit_done();
}
