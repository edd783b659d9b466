/* test_core.c: the cursor, buffers, datatypes and the I/O backends. */
#include "core/core.h"
#include "../unit.h"

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
    RUN(test_io_mem);
    RUN(test_io_posix);
    RUN(test_errors);
    return unit_done();
}
