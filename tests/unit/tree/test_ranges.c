/* test_ranges.c: a sink taking TDB_SINK_FILE gets ranges of the data
 * files whose bytes are exactly what a copy gives, for unfiltered tiles
 * in long pieces on a local folder; it gives none for filtered tiles,
 * short pieces, storage without descriptors, or a tile whose chunk
 * headers do not add up (which the decoding way reports as corrupt). */
#include "tiledb_format.h"
#include "tiledb_format_write.h"
#include "../support.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define ROWS 64
#define COLS 1024

/* The array of the tests: ROWS x COLS, tiles 8 x tx, `filter`. */
static int make_array(struct tdb_io *arr, const char *dir, int tx,
                      const char *filter)
{
    return unit_dense_f32(arr, dir, ROWS, COLS, 8, tx, filter);
}

/* What one read of [off, off + len) through ranges gave. */
struct ranged {
    size_t n;           /* ranges (0: none given) */
    bool same;          /* their bytes are tdb_reader_read's */
};

static struct ranged read_ranged(struct tdb_reader *rd, uint64_t off,
                                 size_t len)
{
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_FILE, NULL);
    struct tdb_error err = {0};
    struct ranged res = {0, false};
    uint8_t *a = malloc(len), *b = malloc(len);
    size_t got = 0, want = 0;
    CHECK(a && b);
    if (!a || !b)
        goto done;
    CHECK_EQ_INT(tdb_reader_read(rd, off, len, &s, &err), 0);
    if (s.form == TDB_SINK_FILE)
        res.n = s.npieces;
    got = s.got;
    size_t at = 0;
    for (size_t i = 0; i < res.n; i++) {
        const struct tdb_piece *pc = &s.pieces[i];
        CHECK(pc->base == NULL && pc->fd >= 0);
        CHECK_EQ_INT(pread(pc->fd, a + at, pc->len, (off_t)pc->off),
                     (ssize_t)pc->len);
        at += pc->len;
    }
    tdb_sink_release(&s);
    CHECK_EQ_INT(at, res.n ? got : 0);
    CHECK_EQ_INT(unit_reader_copy(rd, off, b, len, &want, &err), 0);
    res.same = !res.n || (got == want && memcmp(a, b, got) == 0);
done:
    free(a);
    free(b);
    return res;
}

/* Opens file v of the array at io and a reader of it. */
static struct tdb_fs *open_v(const struct tdb_io *io, struct tdb_reader **rd)
{
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    struct tdb_open_options o;
    uint64_t ino;
    tdb_open_options_init(&o);
    *rd = NULL;
    if (tdb_fs_open(&fs, io, &o, &err) ||
        tdb_fs_resolve(fs, "v", &ino, &err) ||
        tdb_reader_open(rd, fs, ino, &err)) {
        fprintf(stderr, "  open: %s\n", err.msg);
        CHECK(0);
    }
    return fs;
}

/* Reads of several offsets and sizes; @return the ranges given. */
static size_t ranges_of(const struct tdb_io *io)
{
    static const uint64_t offs[] = {0, 4, 4093, 65536 - 3, 131072, 200000};
    static const size_t lens[] = {1 << 20, 4096, 65536, 300000, 8192, 1000};
    struct tdb_reader *rd;
    struct tdb_fs *fs = open_v(io, &rd);
    size_t n = 0;
    for (size_t i = 0; rd && i < sizeof offs / sizeof *offs; i++) {
        struct ranged r = read_ranged(rd, offs[i], lens[i]);
        CHECK(r.same);
        n += r.n;
    }
    tdb_reader_close(rd);
    tdb_fs_close(fs);
    return n;
}

/* The data file of v in the array at dir. */
static char *data_file(const char *dir)
{
    char pattern[512], *out = NULL;
    snprintf(pattern, sizeof pattern, "find %s/__fragments -name a0.tdb",
             dir);
    FILE *p = popen(pattern, "r");
    char line[512];
    if (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        out = strdup(line);
    }
    if (p)
        pclose(p);
    return out;
}

static void test_wide_tiles_give_ranges(void)
{
    char *dir = unit_temp_dir("ranges");
    struct tdb_io io;
    CHECK(dir != NULL);
    if (!dir || make_array(&io, dir, COLS, ""))
        goto out;
    CHECK(ranges_of(&io) > 0);
    tdb_io_free(&io);
out:
    if (dir)
        unit_rm_rf(dir);
    free(dir);
}

static void test_none_where_they_do_not_pay(void)
{
    static const struct {
        bool local;
        int tx;
        const char *filter;
    } cases[] = {
        {true, COLS, "{\"type\": \"ZSTD\", \"level\": 1}"},
        {true, 64, ""},         /* 256-byte pieces */
        {false, COLS, ""},      /* no descriptors */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *dir = cases[c].local ? unit_temp_dir("ranges") : NULL;
        struct tdb_io io;
        if (cases[c].local && !dir) {
            CHECK(0);
            continue;
        }
        if (!make_array(&io, dir, cases[c].tx, cases[c].filter)) {
            CHECK_EQ_INT(ranges_of(&io), 0);
            tdb_io_free(&io);
        }
        if (dir)
            unit_rm_rf(dir);
        free(dir);
    }
}

/* A chunk header that claims one byte less: no ranges of that tile, and
 * the decoding way reports the tile as corrupt. */
static void test_damaged_header_read_the_decoding_way(void)
{
    char *dir = unit_temp_dir("ranges"), *file = NULL;
    struct tdb_io io;
    CHECK(dir != NULL);
    if (!dir || make_array(&io, dir, COLS, ""))
        goto out;
    file = data_file(dir);
    CHECK(file != NULL);
    /* tile 1 (32 KiB: one chunk) starts after tile 0's 8 + 12 + 32768 */
    const uint64_t tile = 8 * COLS * 4, at = 8 + 12 + tile + 8;
    int fd = file ? open(file, O_RDWR) : -1;
    uint8_t b[4];
    CHECK(fd >= 0 && pread(fd, b, 4, (off_t)at) == 4);
    uint32_t orig = (uint32_t)b[0] | (uint32_t)b[1] << 8 |
                    (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    CHECK_EQ_INT(orig, tile);
    b[0] = (uint8_t)(orig - 1);
    CHECK(fd >= 0 && pwrite(fd, b, 1, (off_t)at) == 1);
    if (fd >= 0)
        close(fd);
    struct tdb_reader *rd;
    struct tdb_fs *fs = open_v(&io, &rd);
    struct ranged r = read_ranged(rd, 0, tile);      /* tile 0: fine */
    CHECK(r.n > 0 && r.same);
    struct tdb_sink sk = TDB_SINK_INIT(TDB_SINK_FILE, NULL);
    struct tdb_error err = {0};
    size_t got = 0;
    uint8_t *buf = malloc(tile);
    /* refused as ranges, the read goes the decoding way, which finds the
     * damage */
    CHECK_EQ_INT(tdb_reader_read(rd, tile, tile, &sk, &err), TDB_E_CORRUPT);
    CHECK(sk.form == TDB_SINK_COPY && sk.npieces == 0 && sk.got == 0);
    tdb_sink_release(&sk);
    CHECK_EQ_INT(unit_reader_copy(rd, tile, buf, tile, &got, &err),
                 TDB_E_CORRUPT);
    free(buf);
    tdb_reader_close(rd);
    tdb_fs_close(fs);
    tdb_io_free(&io);
out:
    if (dir)
        unit_rm_rf(dir);
    free(dir);
    free(file);
}

int main(void)
{
    RUN(test_wide_tiles_give_ranges);
    RUN(test_none_where_they_do_not_pay);
    RUN(test_damaged_header_read_the_decoding_way);
    return unit_done();
}
