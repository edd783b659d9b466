/* test_scale_float.c: the float scaling filter (format/filters/
 * scale_float.c)
 * against hand-built chunks, round trips and truncated or corrupt input
 * (numeric.h). */
#include "../unit.h"

#include "filters/filter.h"
#include "../capped.h"

#include <math.h>
#include <stdint.h>
#include "numeric.h"

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

/* Options: f64 scale, f64 offset, u64 byte width; output type. */
static void sf_vector_options(void)
{
    struct tdb_filter g = mkfilter(TDB_FILTER_SCALE_FLOAT);
    tdb_filter_set_real(&g, "scale", 0.25);
    tdb_filter_set_real(&g, "offset", 10.0);
    tdb_filter_set_int(&g, "byte_width", 2);
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
    CHECK(tdb_filter_get_real(&h, "scale") == 0.25 &&
          tdb_filter_get_real(&h, "offset") == 10.0 &&
          tdb_filter_get_int(&h, "byte_width") == 2);
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

static void test_scale_float_vector(void)
{
    /* The spec's example: scale 0.25, offset 10, byte width 2. */
    struct tdb_filter f = mkfilter(TDB_FILTER_SCALE_FLOAT);
    tdb_filter_set_real(&f, "scale", 0.25);
    tdb_filter_set_real(&f, "offset", 10.0);
    tdb_filter_set_int(&f, "byte_width", 2);
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
    tdb_filter_set_real(&f, "scale", 0.5);
    tdb_filter_set_real(&f, "offset", -1.0);
    tdb_filter_set_int(&f, "byte_width", 1);
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
    tdb_filter_set_int(&f, "byte_width", 4);
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

    sf_vector_options();
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
                tdb_filter_set_real(&f, "scale", 0.5);
                tdb_filter_set_real(&f, "offset", -3.0);
                tdb_filter_set_int(&f, "byte_width", widths[wi]);
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
    tdb_filter_set_int(&f, "byte_width", 8);
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
    tdb_filter_set_int(&f, "byte_width", 2);
    put_f64(p, 1e6);
    CHECK_EQ_INT(enc(&tdb_filter_scale_float, &c, NULL, 0, p, 8, &m, &d), 0);
    CHECK_EQ_INT(d.len, 2);
    if (d.len == 2)
        CHECK_EQ_INT(tdb_le16(d.data), 0x4240);  /* (int16)(int32)1e6 */
    tdb_buf_free(&m);
    tdb_buf_free(&d);
    (void)get_f64;
}

int main(void)
{
    RUN(test_scale_float_vector);
    RUN(test_scale_float_roundtrip);
    return unit_done();
}
