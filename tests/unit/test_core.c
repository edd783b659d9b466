/* test_core.c: the cursor, buffers, datatypes, typed values and the I/O
 * backends. */
#include "core/core.h"
#include "core/value.h"
#include "unit.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static void test_cursor_reads(void)
{
    const uint8_t b[] = {1, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0};
    struct tdb_cursor c;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    tdb_cur_init(&c, b, sizeof b);
    CHECK_EQ_INT(tdb_cur_u8(&c, &u8), 0);
    CHECK_EQ_INT(u8, 1);
    CHECK_EQ_INT(tdb_cur_u16(&c, &u16), 0);
    CHECK_EQ_INT(u16, 2);
    CHECK_EQ_INT(tdb_cur_u32(&c, &u32), 0);
    CHECK_EQ_INT(u32, 3);
    CHECK_EQ_INT(tdb_cur_u64(&c, &u64), 0);
    CHECK_EQ_INT(u64, 4);
    CHECK_EQ_INT(tdb_cur_left(&c), 0);
    CHECK_EQ_INT(tdb_cur_u8(&c, &u8), -1);
    CHECK(c.bad);
    /* sticky: later reads fail too */
    CHECK_EQ_INT(tdb_cur_u8(&c, &u8), -1);
}

static void test_cursor_bounds(void)
{
    const uint8_t b[] = {5, 0, 0, 0, 'a', 'b'};
    struct tdb_cursor c;
    char *s;
    tdb_cur_init(&c, b, sizeof b);
    CHECK_EQ_INT(tdb_cur_str32(&c, &s), -1); /* claims 5, has 2 */
    CHECK(s == NULL);
    const uint8_t ok[] = {2, 0, 0, 0, 'a', 'b'};
    tdb_cur_init(&c, ok, sizeof ok);
    CHECK_EQ_INT(tdb_cur_str32(&c, &s), 0);
    CHECK(s && !strcmp(s, "ab"));
    free(s);
    const uint8_t *p;
    tdb_cur_init(&c, ok, sizeof ok);
    CHECK_EQ_INT(tdb_cur_bytes(&c, SIZE_MAX, &p), -1);
}

static void test_buf(void)
{
    struct tdb_buf b = {0};
    CHECK_EQ_INT(tdb_buf_put_u32(&b, 0x01020304), 0);
    CHECK_EQ_INT(tdb_buf_put_u64(&b, 5), 0);
    CHECK_EQ_INT(b.len, 12);
    const uint8_t want[] = {4, 3, 2, 1, 5, 0, 0, 0, 0, 0, 0, 0};
    CHECK_MEM(b.data, want, 12);
    for (int i = 0; i < 10000; i++)
        tdb_buf_put_u8(&b, (uint8_t)i);
    CHECK_EQ_INT(b.len, 10012);
    CHECK_EQ_INT(b.data[12 + 9999], (uint8_t)9999);
    tdb_buf_free(&b);
    CHECK(b.data == NULL);
}

static void test_datatypes(void)
{
    uint8_t f[8];
    CHECK_EQ_INT(tdb_dt_size(TDB_FLOAT64), 8);
    CHECK(!strcmp(tdb_dt_name(25 /* DATETIME_MS */), "DATETIME_MS"));
    CHECK(!strcmp(tdb_dt_numpy(25 /* DATETIME_MS */), "<M8[ms]"));
    CHECK_EQ_INT(tdb_dt_from_name("UINT16"), TDB_UINT16);
    CHECK_EQ_INT(tdb_dt_from_name("NOPE"), -1);
    tdb_dt_default_fill(TDB_INT32, f);
    const uint8_t i32min[] = {0, 0, 0, 0x80};
    CHECK_MEM(f, i32min, 4);
    tdb_dt_default_fill(TDB_UINT16, f);
    CHECK(f[0] == 0xff && f[1] == 0xff);
    tdb_dt_default_fill(TDB_FLOAT32, f);
    const uint8_t fnan[] = {0, 0, 0xc0, 0x7f};
    CHECK_MEM(f, fnan, 4);
    tdb_dt_default_fill(TDB_CHAR, f);
    CHECK_EQ_INT(f[0], 0x80);
    CHECK_EQ_INT(tdb_dt_size(200), 0);
}

/* Every datatype's class, and a value of each loaded from its bytes. */
static void test_value_load(void)
{
    for (unsigned dt = 0; dt < TDB_DATATYPE_COUNT; dt++) {
        enum tdb_vclass c = tdb_value_class(dt);
        enum tdb_vclass want =
            tdb_dt_is_signed_int(dt) ? TDB_VC_SIGNED
            : tdb_dt_is_unsigned_int(dt) || dt == TDB_BOOL ? TDB_VC_UNSIGNED
            : tdb_dt_is_float(dt) ? TDB_VC_FLOAT
            : tdb_dt_is_string(dt) ? TDB_VC_STRING : TDB_VC_BYTES;
        CHECK_EQ_INT(c, want);
    }
    CHECK_EQ_INT(tdb_value_class(27 /* DATETIME_NS */), TDB_VC_SIGNED);
    CHECK_EQ_INT(tdb_value_class(TDB_BLOB), TDB_VC_BYTES);
    CHECK_EQ_INT(tdb_value_class(TDB_DATATYPE_COUNT), TDB_VC_NONE);

    const uint8_t m1[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const unsigned ints[] = {TDB_INT8, TDB_INT16, TDB_INT32,
                                    TDB_INT64, TDB_TIME_AS};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        struct tdb_num n = tdb_value_load(ints[i], m1);
        CHECK_EQ_INT(n.i, -1);
        CHECK(n.d == -1.0);
    }
    static const unsigned uints[] = {TDB_UINT8, TDB_UINT16, TDB_UINT32,
                                     TDB_BOOL};
    for (size_t i = 0; i < sizeof uints / sizeof *uints; i++) {
        unsigned sz = tdb_dt_size(uints[i]);
        struct tdb_num n = tdb_value_load(uints[i], m1);
        CHECK_EQ_INT(n.u, (UINT64_C(1) << (8 * sz)) - 1);
    }
    CHECK(tdb_value_load(TDB_UINT64, m1).u == UINT64_MAX);
    const uint8_t i16[] = {0x34, 0x82};          /* -32204 */
    CHECK_EQ_INT(tdb_value_load(TDB_INT16, i16).i, -32204);
    CHECK_EQ_INT(tdb_value_load(TDB_UINT16, i16).u, 0x8234);
    uint8_t f[8];
    float x = -2.5f;
    double y = 1e300;
    memcpy(f, &x, 4);
    CHECK(tdb_value_load(TDB_FLOAT32, f).d == -2.5);
    CHECK_EQ_INT(tdb_value_load(TDB_FLOAT32, f).u, 0);
    memcpy(f, &y, 8);
    CHECK(tdb_value_load(TDB_FLOAT64, f).d == 1e300);
    /* a character read as the signed byte TileDB's char is */
    const uint8_t c[] = {0x80};
    CHECK_EQ_INT(tdb_num_load(TDB_VC_SIGNED, 1, c).i, -128);
    CHECK_EQ_INT(tdb_value_load(TDB_CHAR, c).u, 0x80);
}

/* Reading from untrusted bytes: too few of them, or no datatype. */
static void test_value_read(void)
{
    const uint8_t b[8] = {1, 0, 0, 0, 0, 0, 0, 0x80};
    struct tdb_num n = {TDB_VC_NONE, 7, 7, 7};
    for (unsigned dt = 0; dt < TDB_DATATYPE_COUNT; dt++) {
        unsigned sz = tdb_dt_size(dt);
        CHECK_EQ_INT(tdb_value_read(dt, b, sz - 1, &n), -1);
        CHECK_EQ_INT(tdb_value_read(dt, b, sz, &n), 0);
        CHECK_EQ_INT(n.cls, tdb_value_class(dt));
    }
    n.i = 7;
    CHECK_EQ_INT(tdb_value_read(TDB_INT64, b, 7, &n), -1);
    CHECK_EQ_INT(n.i, 7);                        /* untouched */
    CHECK_EQ_INT(tdb_value_read(TDB_DATATYPE_COUNT, b, 8, &n), -1);
    CHECK_EQ_INT(tdb_value_read(TDB_INT64, b, 8, &n), 0);
    CHECK_EQ_INT(n.u, UINT64_C(0x8000000000000001));
    CHECK(n.i < 0);
}

static int cmp_of(unsigned dt, const void *a, const void *b)
{
    unsigned sz = tdb_dt_size(dt);
    return tdb_value_cmp(dt, a, sz, b, sz);
}

/* Comparisons: every class, NaN equal to everything, strings bytewise. */
static void test_value_cmp(void)
{
    int8_t i8[] = {-1, 1};
    CHECK_EQ_INT(cmp_of(TDB_INT8, &i8[0], &i8[1]), -1);
    CHECK_EQ_INT(cmp_of(TDB_UINT8, &i8[0], &i8[1]), 1);
    CHECK_EQ_INT(cmp_of(TDB_BOOL, &i8[1], &i8[1]), 0);
    int16_t i16[] = {-300, 200};
    CHECK_EQ_INT(cmp_of(TDB_INT16, &i16[0], &i16[1]), -1);
    CHECK_EQ_INT(cmp_of(TDB_UINT16, &i16[0], &i16[1]), 1);
    int32_t i32[] = {INT32_MIN, INT32_MAX};
    CHECK_EQ_INT(cmp_of(TDB_INT32, &i32[0], &i32[1]), -1);
    CHECK_EQ_INT(cmp_of(TDB_UINT32, &i32[0], &i32[1]), 1);
    int64_t i64[] = {INT64_MIN, 5};
    CHECK_EQ_INT(cmp_of(TDB_INT64, &i64[0], &i64[1]), -1);
    CHECK_EQ_INT(cmp_of(21 /* DATETIME_DAY */, &i64[1], &i64[0]), 1);
    CHECK_EQ_INT(cmp_of(TDB_UINT64, &i64[0], &i64[1]), 1);
    float f32[] = {-1.5f, 2.0f, NAN};
    CHECK_EQ_INT(cmp_of(TDB_FLOAT32, &f32[0], &f32[1]), -1);
    CHECK_EQ_INT(cmp_of(TDB_FLOAT32, &f32[1], &f32[0]), 1);
    CHECK_EQ_INT(cmp_of(TDB_FLOAT32, &f32[2], &f32[0]), 0);
    CHECK_EQ_INT(cmp_of(TDB_FLOAT32, &f32[0], &f32[2]), 0);
    double f64[] = {-0.0, 0.0, NAN};
    CHECK_EQ_INT(cmp_of(TDB_FLOAT64, &f64[0], &f64[1]), 0);
    CHECK_EQ_INT(cmp_of(TDB_FLOAT64, &f64[2], &f64[2]), 0);
    /* strings: bytewise (unsigned), a prefix first */
    CHECK_EQ_INT(tdb_value_cmp(TDB_STRING_ASCII, (const uint8_t *)"ab", 2,
                               (const uint8_t *)"abc", 3), -1);
    CHECK_EQ_INT(tdb_value_cmp(TDB_STRING_ASCII, (const uint8_t *)"b", 1,
                               (const uint8_t *)"abc", 3), 1);
    CHECK_EQ_INT(tdb_value_cmp(TDB_CHAR, (const uint8_t *)"\x80", 1,
                               (const uint8_t *)"\x01", 1), 1);
    CHECK_EQ_INT(tdb_value_cmp(TDB_STRING_ASCII, NULL, 0, NULL, 0), 0);
    CHECK_EQ_INT(tdb_bytes_cmp((const uint8_t *)"b", 1,
                               (const uint8_t *)"a", 1), 1);
    /* numbers of unequal sizes compare bytewise */
    CHECK_EQ_INT(tdb_value_cmp(TDB_INT32, (const uint8_t *)"\xff", 1,
                               (const uint8_t *)"\x01\x00", 2), 1);

    /* tdb_num_cmp flags a NaN */
    bool un = false;
    struct tdb_num a = tdb_value_load(TDB_FLOAT32, (const uint8_t *)&f32[2]);
    struct tdb_num b = tdb_value_load(TDB_FLOAT32, (const uint8_t *)&f32[1]);
    CHECK_EQ_INT(tdb_num_cmp(&a, &b, &un), 0);
    CHECK(un);
    CHECK_EQ_INT(tdb_num_cmp(&b, &b, &un), 0);
    CHECK(!un);
    a = tdb_value_load(TDB_INT64, (const uint8_t *)&i64[0]);
    b = tdb_value_load(TDB_INT64, (const uint8_t *)&i64[1]);
    CHECK_EQ_INT(tdb_num_cmp(&a, &b, &un), -1);
    a = tdb_value_load(TDB_UINT64, (const uint8_t *)&i64[0]);
    b = tdb_value_load(TDB_UINT64, (const uint8_t *)&i64[1]);
    CHECK_EQ_INT(tdb_num_cmp(&a, &b, NULL), 1);
}

/* Every number datatype's limits; none for the others. */
static void test_value_limits(void)
{
    uint8_t lo[8], hi[8];
    for (unsigned dt = 0; dt < TDB_DATATYPE_COUNT; dt++) {
        enum tdb_vclass c = tdb_value_class(dt);
        bool num = c == TDB_VC_SIGNED || c == TDB_VC_UNSIGNED ||
                   c == TDB_VC_FLOAT;
        CHECK_EQ_INT(tdb_value_limits(dt, lo, hi), num);
        if (!num) {
            CHECK_EQ_INT(tdb_value_int_max(dt), 0);
            CHECK(!tdb_value_int_fits(dt, false, 0));
            continue;
        }
        struct tdb_num l = tdb_value_load(dt, lo), h = tdb_value_load(dt, hi);
        CHECK_EQ_INT(tdb_num_cmp(&l, &h, NULL), -1);
        if (c == TDB_VC_FLOAT)
            continue;
        CHECK_EQ_INT(l.i, tdb_value_int_min(dt));
        CHECK(h.u == tdb_value_int_max(dt));
        CHECK(tdb_value_int_fits(dt, false, h.u));
        CHECK(h.u == UINT64_MAX || !tdb_value_int_fits(dt, false, h.u + 1));
        uint64_t mag = (uint64_t)0 - (uint64_t)l.i;  /* |min| */
        CHECK_EQ_INT(tdb_value_int_fits(dt, true, mag), c == TDB_VC_SIGNED);
        CHECK(!tdb_value_int_fits(dt, true, mag + 1));
    }
    CHECK(tdb_value_limits(TDB_FLOAT32, lo, hi));
    CHECK(tdb_value_load(TDB_FLOAT32, lo).d == -FLT_MAX);
    CHECK(tdb_value_load(TDB_FLOAT32, hi).d == FLT_MAX);
    CHECK(tdb_value_limits(TDB_FLOAT64, lo, hi));
    CHECK(tdb_value_load(TDB_FLOAT64, hi).d == DBL_MAX);
    CHECK_EQ_INT(tdb_value_int_min(TDB_INT8), -128);
    CHECK_EQ_INT(tdb_value_int_max(TDB_INT8), 127);
    CHECK_EQ_INT(tdb_value_int_min(TDB_UINT8), 0);
    CHECK_EQ_INT(tdb_value_int_max(TDB_BOOL), 255);
    CHECK(tdb_value_int_min(TDB_INT64) == INT64_MIN);
    CHECK(tdb_value_int_max(TDB_UINT64) == UINT64_MAX);
    CHECK(tdb_value_int_fits(TDB_INT64, true, UINT64_C(1) << 63));
    CHECK(!tdb_value_int_fits(TDB_INT64, false, UINT64_C(1) << 63));
    CHECK(tdb_value_int_fits(TDB_UINT64, false, UINT64_MAX));
    CHECK(!tdb_value_int_fits(TDB_UINT64, true, 1));
    CHECK(!tdb_value_int_fits(TDB_UINT64, true, 0));  /* "-0" */
    CHECK(tdb_value_int_fits(TDB_INT8, true, 0));
    CHECK(!tdb_value_int_fits(TDB_FLOAT64, false, 1));
}

static int count_entry(void *arg, const struct tdb_dirent *e)
{
    (*(int *)arg)++;
    return 0;
}

static void check_backend(struct tdb_io *io)
{
    struct tdb_error err = {0};
    CHECK_EQ_INT(io->ops->mkdir(io->ctx, "d"), 0);
    CHECK_EQ_INT(io->ops->write_at(io->ctx, "d/f", 0, "hello", 5), 0);
    CHECK_EQ_INT(io->ops->write_at(io->ctx, "d/g", 2, "xy", 2), 0);
    uint64_t size;
    CHECK_EQ_INT(tdb_io_size(io, "d/g", &size, &err), 0);
    CHECK_EQ_INT(size, 4);
    char buf[8] = {0};
    CHECK_EQ_INT(tdb_io_read(io, "d/f", 1, buf, 3, &err), 0);
    CHECK(!memcmp(buf, "ell", 3));
    CHECK(tdb_io_read(io, "d/f", 3, buf, 5, &err) != 0); /* past the end */
    CHECK(strstr(err.msg, "d/f") != NULL);
    CHECK_EQ_INT(tdb_io_read(io, "d/none", 0, buf, 1, &err), TDB_E_NOENT);
    struct tdb_names n;
    CHECK_EQ_INT(tdb_io_names(io, "d", &n, &err), 0);
    CHECK_EQ_INT(n.n, 2);
    if (n.n == 2)
        CHECK(!strcmp(n.v[0], "f") && !strcmp(n.v[1], "g") && !n.is_dir[0]);
    tdb_names_free(&n);
    CHECK(tdb_io_isdir(io, "d"));
    CHECK(!tdb_io_isdir(io, "d/f"));
    CHECK(tdb_io_exists(io, "d/f"));
    int cnt = 0;
    CHECK_EQ_INT(io->ops->list(io->ctx, "", count_entry, &cnt), 0);
    CHECK_EQ_INT(cnt, 1);
    CHECK_EQ_INT(io->ops->rename(io->ctx, "d/f", "d/h"), 0);
    CHECK(!tdb_io_exists(io, "d/f") && tdb_io_exists(io, "d/h"));
    /* a sub-folder view */
    struct tdb_io sub;
    CHECK_EQ_INT(tdb_io_sub(&sub, io, "d"), 0);
    CHECK_EQ_INT(tdb_io_read(&sub, "h", 0, buf, 5, &err), 0);
    CHECK(!memcmp(buf, "hello", 5));
    tdb_io_free(&sub);
    CHECK_EQ_INT(io->ops->remove(io->ctx, "d/h"), 0);
    CHECK_EQ_INT(io->ops->remove(io->ctx, "d/g"), 0);
}

static void test_io_mem(void)
{
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    struct tdb_names n;
    struct tdb_error err = {0};
    /* an empty backend lists nothing */
    CHECK_EQ_INT(tdb_io_names(&io, "", &n, &err), 0);
    CHECK_EQ_INT(n.n, 0);
    tdb_names_free(&n);
    check_backend(&io);
    tdb_io_free(&io);
}

static void test_io_posix(void)
{
    char tmpl[] = "/tmp/tdbtest.XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir)
        return;
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, dir), 0);
    check_backend(&io);
    io.ops->remove(io.ctx, "d");
    tdb_io_free(&io);
    rmdir(dir);
}

static void test_errors(void)
{
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_err(&err, TDB_E_CORRUPT, "tile %d", 7), TDB_E_CORRUPT);
    CHECK(!strcmp(err.msg, "tile 7"));
    tdb_err_ctx(&err, TDB_E_IO, "file %s", "a0.tdb");
    CHECK(!strcmp(err.msg, "file a0.tdb: tile 7"));
    CHECK_EQ_INT(err.code, TDB_E_CORRUPT);
    CHECK(tdb_errno(TDB_E_CHECKSUM) != 0);
    CHECK(!strcmp(tdb_strerror(TDB_E_AUTH), "authentication failed"));
}

int main(void)
{
    RUN(test_cursor_reads);
    RUN(test_cursor_bounds);
    RUN(test_buf);
    RUN(test_datatypes);
    RUN(test_value_load);
    RUN(test_value_read);
    RUN(test_value_cmp);
    RUN(test_value_limits);
    RUN(test_io_mem);
    RUN(test_io_posix);
    RUN(test_errors);
    return unit_done();
}
