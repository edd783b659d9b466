/* test_reader.c: readers (tdb_reader_*) show the bytes tdb_fs_read shows,
 * for every data file of corpus arrays, read in order and at random, with
 * or without decoding threads and whatever the cache budget; a reader
 * going through a file decodes each tile once with a cache of a few rows
 * of tiles, and with a cache smaller than a tile each tile once per read
 * (never more than plain reads), holding one tile at a time; and however
 * many readers read at once, the cache holds no more than its budget (or
 * one tile, when a tile is larger). */
#include "tiledb_format.h"
#include "tiledb_format_write.h"
#include "read/cache.h"
#include "../support.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static struct tdb_fs *open_array(const char *name, struct tdb_io *io,
                                 uint64_t cache, unsigned threads)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.cache_bytes = cache;
    o.threads = threads;
    return unit_open_case(name, &o, io);
}

/* The whole file through a reader, `chunk` bytes a call. */
static uint8_t *reader_all(struct tdb_fs *fs, uint64_t ino, uint64_t size,
                           size_t chunk)
{
    struct tdb_reader *rd = NULL;
    struct tdb_error err = {0};
    uint8_t *b = malloc(size + chunk);
    if (!b || tdb_reader_open(&rd, fs, ino, &err)) {
        free(b);
        return NULL;
    }
    uint64_t off = 0;
    for (;;) {
        size_t got = 0;
        if (unit_reader_copy(rd, off, b + off, chunk, &got, &err)) {
            fprintf(stderr, "reader: %s\n", err.msg);
            free(b);
            b = NULL;
            break;
        }
        off += got;
        if (got < chunk)
            break;
    }
    if (b && off != size) {
        free(b);
        b = NULL;
    }
    tdb_reader_close(rd);
    return b;
}

/* The whole file through sinks taking `forms`, `chunk` bytes a call, into
 * a buffer of the test's (own_buf) or the read's own; *lent counts the
 * reads given as pieces uncopied. */
static uint8_t *reader_sink_all(struct tdb_fs *fs, uint64_t ino,
                                uint64_t size, size_t chunk, unsigned forms,
                                bool own_buf, unsigned *lent)
{
    struct tdb_reader *rd = NULL;
    struct tdb_error err = {0};
    uint8_t *b = malloc(size + chunk), *tmp = malloc(chunk);
    if (!b || !tmp || tdb_reader_open(&rd, fs, ino, &err)) {
        free(b);
        free(tmp);
        return NULL;
    }
    uint64_t off = 0;
    for (;;) {
        struct tdb_sink s = TDB_SINK_INIT(forms, own_buf ? tmp : NULL);
        if (tdb_reader_read(rd, off, chunk, &s, &err)) {
            fprintf(stderr, "reader: %s\n", err.msg);
            tdb_sink_release(&s);
            free(b);
            b = NULL;
            break;
        }
        size_t got = s.got, at = 0;
        CHECK(s.form == TDB_SINK_COPY || (s.form & forms));
        if (s.form == TDB_SINK_COPY) {
            CHECK(!own_buf || s.buf == tmp);
            CHECK(s.npieces == 0);
            if (got)
                memcpy(b + off, s.buf, got);
            at = got;
        }
        for (size_t i = 0; s.form == TDB_SINK_TILE && i < s.npieces; i++) {
            CHECK(s.pieces[i].fd == -1 && s.pieces[i].len > 0);
            memcpy(b + off + at, s.pieces[i].base, s.pieces[i].len);
            at += s.pieces[i].len;
        }
        CHECK_EQ_INT(at, got);
        *lent += s.form == TDB_SINK_TILE;
        tdb_sink_release(&s);
        CHECK(s.lent == NULL && (own_buf || s.buf == NULL));
        off += got;
        if (got < chunk)
            break;
    }
    if (b && off != size) {
        free(b);
        b = NULL;
    }
    free(tmp);
    tdb_reader_close(rd);
    return b;
}

static unsigned segs_total; /* reads given uncopied */

/* Files read 1 and 7 bytes at a time are at most this large: under
 * ThreadSanitizer and AddressSanitizer (scripts/sanitize), a tenth and a
 * quarter (every other chunk size still reads them whole), or the test
 * takes 4 to 5 minutes of the suite's 30 under each (1 and 7-byte reads
 * through a 1-byte cache decode a tile or two for each). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#define ONE_BYTE_READS_MAX 2000
#define SEVEN_BYTE_READS_MAX 8192
#else
#define SANITIZED 0
#define ONE_BYTE_READS_MAX 20000
#define SEVEN_BYTE_READS_MAX UINT64_MAX
#endif

/* File `fname` (ino) of array `name` read by readers in chunks of a few
 * sizes equals want[0..size). */
static void same_in_chunks(struct tdb_fs *fs, uint64_t ino, const uint8_t *want,
                           uint64_t size, const char *name, const char *fname)
{
    static const size_t chunks[] = {1, 7, 4096, 131072, 1 << 20};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        if ((chunks[c] == 1 && size > ONE_BYTE_READS_MAX) ||
            (chunks[c] == 7 && size > SEVEN_BYTE_READS_MAX))
            continue;
        uint8_t *got = reader_all(fs, ino, size, chunks[c]);
        CHECK(got != NULL);
        if (got && memcmp(got, want, size) != 0) {
            fprintf(stderr, "%s/%s: reader (chunk %zu) differs\n", name,
                    fname, chunks[c]);
            CHECK(0);
        }
        free(got);
    }
}

/* The same without copying where the pieces are long, into a buffer of
 * the caller's or of the read's; returns how many pieces were lent. */
static unsigned same_lent(struct tdb_fs *fs, uint64_t ino, const uint8_t *want,
                          uint64_t size, const char *name, const char *fname)
{
    static const size_t lens[] = {64, 4096, 1 << 20, 4096};
    static const bool own[] = {true, true, false, false};
    unsigned segs = 0;
    for (size_t c = 0; c < 4; c++) {
        unsigned nlent = 0;
        uint8_t *got = reader_sink_all(fs, ino, size, lens[c],
                                       TDB_SINK_COPY | TDB_SINK_TILE,
                                       own[c], &nlent);
        CHECK(got != NULL);
        if (got && memcmp(got, want, size) != 0) {
            fprintf(stderr, "%s/%s: lent pieces (%zu bytes) differ\n",
                    name, fname, lens[c]);
            CHECK(0);
        }
        free(got);
        segs += nlent;
    }
    return segs;
}

/* The same in random ranges through one reader. */
static void same_random(struct tdb_fs *fs, uint64_t ino, const uint8_t *want,
                        uint64_t size, const char *name, const char *fname)
{
    struct tdb_error err = {0};
    struct tdb_reader *rd = NULL;
    CHECK_EQ_INT(tdb_reader_open(&rd, fs, ino, &err), 0);
    uint8_t buf[5000];
    srand(7);
    for (int k = 0; rd && k < 200 && size; k++) {
        uint64_t off = (uint64_t)rand() % size;
        size_t len = (size_t)(rand() % (int)sizeof buf), got = 0;
        CHECK_EQ_INT(unit_reader_copy(rd, off, buf, len, &got, &err), 0);
        size_t expect = off + len > size ? (size_t)(size - off) : len;
        CHECK_EQ_INT(got, expect);
        if (memcmp(buf, want + off, got) != 0) {
            fprintf(stderr, "%s/%s: reader differs at %llu+%zu\n", name,
                    fname, (unsigned long long)off, len);
            CHECK(0);
            break;
        }
    }
    tdb_reader_close(rd);
}

/* Every data file of `name` (below the root and its __fragments folders),
 * read by readers of several chunk sizes and at random offsets, compared
 * with plain reads. */
static void same_bytes(const char *name, uint64_t cache, unsigned threads)
{
    struct tdb_io io;
    struct tdb_fs *fs = open_array(name, &io, cache, threads);
    CHECK(fs != NULL);
    if (!fs)
        return;
    struct tdb_error err = {0};
    const char *name_i;
    uint64_t child;
    unsigned files = 0, segs_used = 0;
    for (uint64_t i = 0;
         tdb_fs_readdir(fs, TDB_ROOT_INO, i, &name_i, &child, &err) == 0; i++) {
        struct tdb_stat st;
        if (tdb_fs_stat(fs, child, &st, &err) || st.is_dir)
            continue;
        uint64_t size = 0;
        uint8_t *want = unit_fs_read_all(fs, child, &size);
        CHECK(want != NULL);
        if (!want)
            continue;
        files++;
        same_in_chunks(fs, child, want, size, name, name_i);
        segs_used += same_lent(fs, child, want, size, name, name_i);
        same_random(fs, child, want, size, name, name_i);
        free(want);
    }
    CHECK(files > 0);
    printf("%s: %u reads without copying\n", name, segs_used);
    segs_total += segs_used;
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

/* The cases test_same_bytes reads; under a sanitizer, the 1-byte cache
 * only those marked (one of each kind of view: they take 2 to 4 minutes
 * under each sanitizer, most of them in the 1-byte cache's decodes). */
static const struct {
    const char *name;
    bool sanitized;
} same_cases[] = {
    {"dense_2d_all_types", false}, {"dense_3d", false},
    {"dense_2d_colmajor", true}, {"dense_fragments_overlap", true},
    {"dense_var_nullable", true}, {"chunked_tiles", true},
    {"filter_chains", true}, {"sparse_dups", true},
    {"sparse_hilbert", true}, {"sparse_delete", false},
    {"consolidated_dense", true}, {"dense_current_domain", false},
    {NULL, false}};

static void test_same_bytes(void)
{
    for (int i = 0; same_cases[i].name; i++) {
        /* the default cache, threads; a 1-byte cache, 3 threads */
        same_bytes(same_cases[i].name, 0, 0);
        if (!SANITIZED || same_cases[i].sanitized)
            same_bytes(same_cases[i].name, 1, 3);
        else
            printf("%s: under a sanitizer, not through a 1-byte cache\n",
                   same_cases[i].name);
    }
    CHECK(segs_total > 0); /* not always declined */
}

#ifndef __SANITIZE_THREAD__
/* The same with no decoding threads: the reading thread decodes alone
 * (and ThreadSanitizer has no races to look for). */
static void test_same_bytes_one_thread(void)
{
    for (int i = 0; same_cases[i].name; i++)
        same_bytes(same_cases[i].name, 1 << 20, 1);
}
#endif

/* Tiles decoded to read `file` from start to end in 64-byte reads (each
 * smaller than a tile's share of a row of the view). */
static uint64_t decodes_of(const char *name, const char *file, uint64_t cache,
                           bool reader)
{
    struct tdb_io io;
    struct tdb_fs *fs = open_array(name, &io, cache, 2);
    if (!fs)
        return 0;
    struct tdb_error err = {0};
    uint64_t ino, size;
    struct tdb_stat st;
    uint64_t decodes = 0;
    if (tdb_fs_resolve(fs, file, &ino, &err) == 0 &&
        tdb_fs_stat(fs, ino, &st, &err) == 0) {
        size = st.size;
        struct tdb_reader *rd = NULL;
        if (reader)
            tdb_reader_open(&rd, fs, ino, &err);
        uint8_t buf[64];
        for (uint64_t off = 0; off < size; off += sizeof buf) {
            size_t got = sizeof buf;
            int r = reader ? unit_reader_copy(rd, off, buf, sizeof buf, &got, &err)
                           : unit_fs_copy(fs, ino, off, buf, &got, &err);
            if (r)
                break;
        }
        tdb_reader_close(rd);
        struct tdb_cache_stats cs;
        tdb_fs_cache_stats(fs, &cs);
        decodes = cs.decodes;
    }
    tdb_fs_close(fs);
    tdb_io_free(&io);
    return decodes;
}

static void test_small_cache_no_thrash(void)
{
    /* tiles hold several rows of the view: with a 1-byte cache (every tile
     * larger than it) plain reads decode a tile again for each piece a
     * read takes of it after another tile's, a reader once per read (it
     * copies a tile's pieces before it decodes the next); with a cache
     * that holds the file a reader decodes each tile once */
    static const char *const cases[][2] = {
        {"dense_2d_all_types", "i32"}, {"dense_fragments_overlap", "a"},
        {"dense_3d", "v"}, {NULL, NULL}};
    bool some_thrash = false;
    for (int i = 0; cases[i][0]; i++) {
        uint64_t once = decodes_of(cases[i][0], cases[i][1], 1 << 30, false);
        uint64_t big = decodes_of(cases[i][0], cases[i][1], 1 << 30, true);
        uint64_t rd = decodes_of(cases[i][0], cases[i][1], 1, true);
        uint64_t plain = decodes_of(cases[i][0], cases[i][1], 1, false);
        printf("%s/%s: tiles %llu, reader with a 1-byte cache %llu, plain "
               "reads %llu\n", cases[i][0], cases[i][1],
               (unsigned long long)once, (unsigned long long)rd,
               (unsigned long long)plain);
        CHECK(once > 0);
        /* exactly once per tile, however the decoding threads and the
         * reader interleave */
        CHECK_EQ_INT(big, once);
        CHECK(rd >= once);
        CHECK(rd <= plain);
        if (plain > rd)
            some_thrash = true;
    }
    CHECK(some_thrash); /* the case the reader's order is for */
}

/* A dense array of the bench's shape, scaled down: ROWS x COLS float32
 * values in tiles of TY x TX cells (4 KiB), so that a row of tiles is
 * COLS / TX = 16 tiles (64 KiB) and a row of the view (4 KiB) crosses all
 * 16.  @return 0 or an error (printed). */
#define RT_ROWS 256
#define RT_COLS 1024
#define RT_TY 16
#define RT_TX 64
#define RT_TILE ((uint64_t)RT_TY * RT_TX * 4)
#define RT_ROW (RT_TILE * (RT_COLS / RT_TX))
#define RT_TILES ((uint64_t)(RT_ROWS / RT_TY) * (RT_COLS / RT_TX))

static int rows_array(struct tdb_io *arr, const char *filter)
{
    return unit_dense_f32(arr, NULL, RT_ROWS, RT_COLS, RT_TY, RT_TX, filter);
}

/* Reads file v of the array at `arr` from start to end through a reader
 * in `chunk`-byte reads (the first `first` bytes, 0: chunk) with a cache of `budget` bytes and 2 decoding
 * threads.  *decodes: tiles decoded; *peak: the most bytes of decoded
 * tiles the cache held at once (tdb_cache_peak). */
static void rows_read(const struct tdb_io *arr, uint64_t budget, size_t chunk,
                      size_t first, uint64_t *decodes, uint64_t *peak,
                      bool *ahead)
{
    struct tdb_cache *c = NULL;
    struct tdb_fs *fs = NULL;
    struct tdb_reader *rd = NULL;
    struct tdb_error err = {0};
    struct tdb_open_options o;
    uint64_t ino;
    uint8_t *buf = malloc(chunk);
    *decodes = *peak = 0;
    *ahead = false;
    tdb_open_options_init(&o);
    o.threads = 2;
    CHECK(buf != NULL);
    CHECK_EQ_INT(tdb_cache_create(&c, budget), 0);
    o.cache = c;
    if (!buf || !c || tdb_fs_open(&fs, arr, &o, &err) ||
        tdb_fs_resolve(fs, "v", &ino, &err) ||
        tdb_reader_open(&rd, fs, ino, &err)) {
        fprintf(stderr, "  rows read: %s\n", err.msg);
        CHECK(0);
    } else {
        uint64_t off = 0;
        size_t want = first ? first : chunk, got = want;
        while (got == want &&
               unit_reader_copy(rd, off, buf, want, &got, &err) == 0) {
            /* after the first read, the decoding threads go on with
             * tiles it did not touch: decoded ahead (waited for 2 s at
             * most, however loaded the machine is) */
            uint64_t touched = want < RT_COLS * 4
                                   ? (want + RT_TX * 4 - 1) / (RT_TX * 4)
                                   : (RT_COLS / RT_TX) *
                                         ((want + RT_ROW - 1) / RT_ROW);
            for (int w = 0; off == 0 && !*ahead && w <= 2000; w++) {
                struct tdb_cache_stats cs;
                tdb_fs_cache_stats(fs, &cs);
                *ahead = cs.decodes > touched;
                if (!*ahead)
                    usleep(1000);
            }
            off += got;
            if (got == want)
                want = got = chunk;
        }
        CHECK_EQ_INT(off, (uint64_t)RT_ROWS * RT_COLS * 4);
        struct tdb_cache_stats cs;
        tdb_fs_cache_stats(fs, &cs);
        *decodes = cs.decodes;
        *peak = tdb_cache_peak(c, false);
    }
    tdb_reader_close(rd);
    tdb_fs_close(fs);
    tdb_cache_free(c);
    free(buf);
}

/* The tiles of the rows array that reading it in `chunk`-byte reads (the
 * first `first` bytes, 0: chunk) touches, summed over the reads: what a
 * reader decodes when it keeps no tile from one read to the next. */
static uint64_t tiles_per_read(size_t chunk, size_t first)
{
    const uint64_t size = (uint64_t)RT_ROWS * RT_COLS * 4;
    uint64_t sum = 0;
    for (uint64_t a = 0, b; a < size; a = b) {
        b = a + (a ? chunk : first ? first : chunk);
        if (b > size)
            b = size;
        bool seen[RT_TILES] = {false};
        for (uint64_t c = a / 4; c < b / 4; c++) {
            uint64_t t = c / RT_COLS / RT_TY * (RT_COLS / RT_TX) +
                         c % RT_COLS / RT_TX;
            sum += !seen[t];
            seen[t] = true;
        }
    }
    return sum;
}

/* Reads of `chunk` bytes from `first` on through a 1-byte cache: one
 * tile at a time (its values and the bytes it is decoded from, and the
 * cache entry around them), each tile once per read. */
static void one_byte_cache_reads(struct tdb_io *arr, const char *filter,
                                 size_t chunk, size_t first)
{
    /* a tile's bytes in the cache: its values and the entry around them */
    const uint64_t entry = 512;
    uint64_t decodes, peak;
    bool ahead;
    rows_read(arr, 1, chunk, first, &decodes, &peak, &ahead);
    printf("filters [%s], %zu-byte reads (the first %zu), 1-byte "
           "cache: %llu decodes, peak %llu bytes (a tile: %llu)\n",
           filter, chunk, first ? first : chunk,
           (unsigned long long)decodes, (unsigned long long)peak,
           (unsigned long long)RT_TILE);
    CHECK_EQ_INT(decodes, tiles_per_read(chunk, first));
    if (chunk % RT_ROW == 0 && !first)
        CHECK_EQ_INT(decodes, RT_TILES);
    CHECK(peak >= RT_TILE);
    CHECK(peak <= 2 * RT_TILE + entry);
}

/* The same reads through a cache of 3 rows of tiles: decoding ahead
 * within the budget, each tile still decoded once. */
static void budget_cache_reads(struct tdb_io *arr, size_t chunk, size_t first)
{
    uint64_t decodes, peak;
    bool ahead;
    uint64_t rows = chunk > RT_ROW ? chunk / RT_ROW : 1;
    uint64_t budget = 3 * RT_ROW;
    rows_read(arr, budget, chunk, first, &decodes, &peak, &ahead);
    printf("  a %llu-byte cache: %llu decodes, peak %llu bytes\n",
           (unsigned long long)budget, (unsigned long long)decodes,
           (unsigned long long)peak);
    /* a tile decoded ahead is given back when a read needs its
     * room first, which timing decides (seen once in many runs
     * under ThreadSanitizer on a loaded machine: 257 of 256):
     * at most one tile in 64 decoded twice */
    CHECK(decodes >= RT_TILES);
    CHECK(decodes <= RT_TILES + RT_TILES / 64);
    CHECK(peak <= budget);
    /* tiles decoded ahead of the reads where the budget leaves
     * room (not judged by the peak: the tiles behind a read are
     * let go at once, the file being larger than the cache) */
    if (budget >= RT_ROW * rows + RT_TILE)
        CHECK(ahead);
}

static void test_small_cache_holds_one_row(void)
{
    static const char *const filters[] = {"", "{\"type\": \"ZSTD\", "
                                          "\"level\": 1}"};
    for (int f = 0; f < 2; f++) {
        struct tdb_io arr;
        if (rows_array(&arr, filters[f]) != 0) {
            CHECK(0);
            continue;
        }
        /* reads of a row of the view (each needs the 16 tiles of its row
         * of tiles), of a quarter of one (4 tiles), of a whole row of
         * tiles, of 3 (rows of tiles read in one go), and of a row of
         * tiles from a quarter of a row in (each read crosses two rows of
         * tiles, as the kernel's 1 MiB reads do) */
        static const struct {
            size_t chunk, first;
        } reads[] = {{RT_COLS * 4, 0}, {RT_COLS, 0}, {RT_ROW, 0},
                     {3 * RT_ROW, 0}, {RT_ROW, RT_ROW / 4}};
        for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
            one_byte_cache_reads(&arr, filters[f], reads[i].chunk,
                                 reads[i].first);
            budget_cache_reads(&arr, reads[i].chunk, reads[i].first);
        }
        tdb_io_free(&arr);
    }
}

#define MR_READERS 16
#define MR_READS (SANITIZED ? 20 : 60)    /* each reader's */

/* One of several readers of file v of the rows array, each in a thread of
 * its own: random reads of up to two rows of tiles, their bytes checked. */
struct many_reader {
    struct tdb_fs *fs;
    uint64_t ino;
    unsigned seed;
    int bad;
};

static void *many_read(void *arg)
{
    struct many_reader *m = arg;
    struct tdb_reader *rd = NULL;
    struct tdb_error err = {0};
    const uint64_t size = (uint64_t)RT_ROWS * RT_COLS * 4;
    uint8_t *buf = malloc(2 * RT_ROW);
    if (!buf || tdb_reader_open(&rd, m->fs, m->ino, &err)) {
        m->bad = 1;
        free(buf);
        return NULL;
    }
    for (int i = 0; i < MR_READS && !m->bad; i++) {
        uint64_t off = (uint64_t)rand_r(&m->seed) % size & ~(uint64_t)3;
        size_t len = 4 + (size_t)rand_r(&m->seed) % (2 * RT_ROW - 4) / 4 * 4;
        size_t got = 0;
        if (unit_reader_copy(rd, off, buf, len, &got, &err) ||
            got != (off + len <= size ? len : size - off)) {
            fprintf(stderr, "  reader: %s\n", err.msg);
            m->bad = 1;
        }
        for (size_t j = 0; j < got && !m->bad; j += 4) {
            float v, want = (float)((off + j) / 4 % 977) * 0.5f;
            memcpy(&v, buf + j, 4);
            m->bad = v != want;
        }
    }
    tdb_reader_close(rd);
    free(buf);
    return NULL;
}

/* MR_READERS readers at once through one cache of `budget` bytes (2
 * decoding threads): the bytes right, and the most bytes the cache held
 * at once. */
static uint64_t many_readers(const struct tdb_io *arr, uint64_t budget)
{
    struct tdb_cache *c = NULL;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    struct tdb_open_options o;
    uint64_t ino, peak = 0;
    tdb_open_options_init(&o);
    o.threads = 2;
    CHECK_EQ_INT(tdb_cache_create(&c, budget), 0);
    o.cache = c;
    if (!c || tdb_fs_open(&fs, arr, &o, &err) ||
        tdb_fs_resolve(fs, "v", &ino, &err)) {
        fprintf(stderr, "  many readers: %s\n", err.msg);
        CHECK(0);
    } else {
        pthread_t th[MR_READERS];
        struct many_reader m[MR_READERS];
        for (int i = 0; i < MR_READERS; i++) {
            m[i] = (struct many_reader){fs, ino, 7u + (unsigned)i, 0};
            CHECK_EQ_INT(pthread_create(&th[i], NULL, many_read, &m[i]), 0);
        }
        for (int i = 0; i < MR_READERS; i++) {
            pthread_join(th[i], NULL);
            CHECK(!m[i].bad);
        }
        peak = tdb_cache_peak(c, false);
    }
    tdb_fs_close(fs);
    tdb_cache_free(c);
    return peak;
}

/* However many readers read at once, what the cache holds (pinned, kept,
 * decoded ahead or being decoded) stays within its budget, or within one
 * tile (its values, the bytes it is decoded from and its entry) when a
 * tile is larger: reads wait for room rather than hold more. */
static void test_many_readers_within_budget(void)
{
    const uint64_t entry = 512;
    struct tdb_io arr;
    if (rows_array(&arr, "{\"type\": \"ZSTD\", \"level\": 1}") != 0) {
        CHECK(0);
        return;
    }
    static const uint64_t budgets[] = {3 * RT_ROW, RT_ROW / 2, 1};
    for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) {
        uint64_t peak = many_readers(&arr, budgets[i]);
        printf("%d readers, a %llu-byte cache: peak %llu bytes\n", MR_READERS,
               (unsigned long long)budgets[i], (unsigned long long)peak);
        CHECK(peak >= RT_TILE);
        CHECK(peak <= (budgets[i] > 2 * RT_TILE + entry ? budgets[i]
                                                        : 2 * RT_TILE + entry));
    }
    tdb_io_free(&arr);
}

int main(void)
{
    RUN_CORPUS(test_same_bytes);
#ifdef __SANITIZE_THREAD__
    UNIT_SKIP(test_same_bytes_one_thread, "one thread: no races for "
              "ThreadSanitizer to find (make check runs it)");
#else
    RUN_CORPUS(test_same_bytes_one_thread);
#endif
    RUN_CORPUS(test_small_cache_no_thrash);
    RUN(test_small_cache_holds_one_row);
    RUN(test_many_readers_within_budget);
    return unit_done();
}
