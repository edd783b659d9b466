/* test_bitshuffle.c: the bit shuffle filter (format/filters/bitshuffle.c)
 * and its blocks, against hand-built chunks, round trips and truncated or
 * corrupt input (numeric.h). */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

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

int main(void)
{
    RUN(test_bitshuffle_vector);
    RUN(test_bitshuffle_blocks);
    RUN(test_bitshuffle_roundtrip);
    return unit_done();
}
