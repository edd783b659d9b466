/* test_xor.c: the XOR filter (format/filters/xor.c)
 * against hand-built chunks, round trips and truncated or corrupt input
 * (numeric.h). */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

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

int main(void)
{
    RUN(test_xor_vector);
    RUN(test_xor_roundtrip);
    return unit_done();
}
