/* test_byteshuffle.c: the byte shuffle filter (format/filters/byteshuffle.c)
 * against hand-built chunks, round trips and truncated or corrupt input
 * (numeric.h). */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

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

int main(void)
{
    RUN(test_byteshuffle_vector);
    RUN(test_byteshuffle_roundtrip);
    return unit_done();
}
