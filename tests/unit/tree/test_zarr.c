/* test_zarr.c: __zarr's chunks and documents (format/tree/zarr.c,
 * zarr_doc.c, zarr_enum.c): a tile decoded once, in the cell order; the
 * chunks ahead; var-sized values; labels and dimension labels; views not
 * aligned to the tiles, with __slice/ and __domain/. */
#include "tiledb_format.h"
#include "tiledb_format_write.h"
#include "model/generic_tile.h"
#include "model/meta.h"
#include "model/mount_names.h"
#include "../groupfile.h"
#include "../support.h"
#include "tree/npy.h"           /* TDB_NPY_MAX_WIDTH */

#include <stdlib.h>
#include <time.h>
#include "fixture.h"

static const char *corpus;

/* A dense view's cells as a row-major array of cs-byte cells. */
struct grid {
    const uint8_t *p;
    uint64_t rows, cols, cs;
};

/* Where a chunk lies: its first cell (r0, c0) in the view, its rows and
 * columns, order F (col) or C. */
struct box {
    uint64_t r0, c0, rows, cols;
    bool col;
};

/* Checks chunk bytes against view v where they lie inside it; beyond it,
 * when fill is not NULL, against fill. */
static void check_chunk(const char *what, const uint8_t *chunk,
                        const struct grid *v, const struct box *b,
                        const uint8_t *fill)
{
    bool ok = true;
    for (uint64_t i = 0; i < b->rows && ok; i++) {
        for (uint64_t j = 0; j < b->cols && ok; j++) {
            uint64_t at = b->col ? j * b->rows + i : i * b->cols + j;
            const uint8_t *got = chunk + at * v->cs;
            uint64_t r = b->r0 + i, c = b->c0 + j;
            if (r < v->rows && c < v->cols)
                ok = !memcmp(got, v->p + (r * v->cols + c) * v->cs,
                             (size_t)v->cs);
            else if (fill)
                ok = !memcmp(got, fill, (size_t)v->cs);
            if (!ok)
                fprintf(stderr, "  %s: cell (%llu, %llu) of the chunk differs\n",
                        what, (unsigned long long)i, (unsigned long long)j);
        }
    }
    CHECK(ok);
}

/* The expected file `name` of case `cs` (NULL: absent, said). */
static uint8_t *expected_file(const char *cs, const char *name, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/expected/%s", corpus, cs, name);
    *n = 0;
    return (uint8_t *)unit_slurp(path, n);
}

/* dense_2d_colmajor: column-major tiles of 3 x 4 cells; the first chunk
 * of f32 lies in one tile of one fragment: reading it decodes that tile
 * alone (one thread: nothing decoded ahead), and its bytes are the
 * tile's, column-major (order F).  An edge chunk holds fill values past
 * the domain's end.  The folder lists the chunk files; keys outside the
 * grid are not there. */
static void test_zarr_chunk_is_tile(void)
{
    if (!unit_corpus_case("dense_2d_colmajor"))
        return;
    struct tdb_io io;
    struct tdb_fs *fs = open_case_threads("dense_2d_colmajor", 0, 1, &io);
    CHECK(fs != NULL);
    if (!fs)
        return;
    size_t n = 0;
    uint8_t *raw = expected_file("dense_2d_colmajor", "f32", &n);
    CHECK(raw && n == 20 * 18 * 4);
    struct grid v = {raw, 20, 18, 4};
    uint64_t size = 0;
    struct tdb_cache_stats cs;
    uint8_t *c = unit_fs_file(fs, "__zarr/f32/0.0", &size);
    tdb_fs_cache_stats(fs, &cs);
    CHECK_EQ_INT(cs.decodes, 1);
    CHECK_EQ_INT(size, 3 * 4 * 4);
    if (c && raw && size == 48)
        check_chunk("f32/0.0", c, &v, &(struct box){0, 0, 3, 4, true}, NULL);
    free(c);
    static const uint8_t nan32[4] = {0x00, 0x00, 0xc0, 0x7f};
    c = unit_fs_file(fs, "__zarr/f32/6.4", &size);
    CHECK(c && size == 48);
    if (c && raw && size == 48)
        check_chunk("f32/6.4", c, &v, &(struct box){18, 16, 3, 4, true},
                    nan32);
    free(c);
    uint8_t *doc = unit_fs_file(fs, "__zarr/f32/.zarray", &size);
    CHECK(doc && strstr((char *)doc, "\"chunks\": [3, 4]") &&
          strstr((char *)doc, "\"order\": \"F\"") &&
          strstr((char *)doc, "\"fill_value\": \"NaN\""));
    free(doc);
    struct tdb_error err = {0};
    uint64_t dir, ino, child;
    const char *name;
    CHECK_EQ_INT(tdb_fs_resolve(fs, "__zarr/f32", &dir, &err), 0);
    size_t count = 0;
    for (uint64_t i = 0; !tdb_fs_readdir(fs, dir, i, &name, &child, &err); i++) {
        char want[32];
        if (i >= 3) {           /* .zarray, .zattrs, zarr.json, chunks */
            snprintf(want, sizeof want, "%llu.%llu",
                     (unsigned long long)(i - 3) / 5,
                     (unsigned long long)(i - 3) % 5);
            CHECK(!strcmp(name, want));
        }
        count++;
    }
    CHECK_EQ_INT(count, 3 + 7 * 5);
    static const char *const bad[] = {"7.0", "0.5", "00.0", "0", "0.0.0",
                                      "-1.0", "0.", ".0", NULL};
    for (int i = 0; bad[i]; i++)
        CHECK_EQ_INT(tdb_fs_lookup(fs, dir, bad[i], &ino, &err), TDB_E_NOENT);
    free(raw);
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

/* With a decode pool, reading chunk 0.0 of dense_2d_colmajor's f32 from
 * its start has the tiles of chunks 0.1 and 0.2 decoded ahead: they come
 * into the cache without a read of theirs (3 decodes in all), and reading
 * them then decodes only what their reads queue ahead (0.3, 0.4). */
static void test_zarr_ahead(void)
{
    if (!unit_corpus_case("dense_2d_colmajor"))
        return;
    struct tdb_io io;
    struct tdb_fs *fs = open_case_threads("dense_2d_colmajor", 0, 2, &io);
    CHECK(fs != NULL);
    if (!fs)
        return;
    uint64_t size = 0;
    struct tdb_cache_stats cs = {0};
    free(unit_fs_file(fs, "__zarr/f32/0.0", &size));
    /* the pool's jobs run on their own: wait for them (at most 10 s) */
    for (int i = 0; i < 1000; i++) {
        tdb_fs_cache_stats(fs, &cs);
        if (cs.decodes >= 3)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ_INT(cs.decodes, 3);
    free(unit_fs_file(fs, "__zarr/f32/0.1", &size));
    free(unit_fs_file(fs, "__zarr/f32/0.2", &size));
    uint64_t before = cs.decodes;
    tdb_fs_cache_stats(fs, &cs);
    CHECK(cs.decodes <= before + 2);
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

/* numcodecs' vlen encoding of cells [r0, r0+3) x [c0, c0+3) of a 12 x 14
 * row-major var-sized field (values vals, offsets offs), into out. */
static size_t vlen_box(const uint8_t *vals, size_t nv, const uint8_t *offs,
                       unsigned r0, unsigned c0, uint8_t *out)
{
    size_t o = 0;
    uint32_t n = 9;
    memcpy(out, &n, 4);
    o = 4;
    for (unsigned r = r0; r < r0 + 3; r++)
        for (unsigned c = c0; c < c0 + 3; c++) {
            size_t i = (size_t)r * 14 + c;
            uint64_t lo = tdb_le64(offs + i * 8);
            uint64_t hi = i + 1 < 12 * 14 ? tdb_le64(offs + (i + 1) * 8) : nv;
            uint32_t len = (uint32_t)(hi - lo);
            memcpy(out + o, &len, 4);
            memcpy(out + o + 4, vals + lo, len);
            o += 4 + len;
        }
    return o;
}

/* A var-sized string attribute's chunks are numcodecs' VLenUTF8 of the
 * chunk's cells, each as the expected files hold it; stat gives their
 * size, read decodes only the chunk's tiles; a fixed string's chunk is
 * also there under v3's key with its last axis (".0"). */
static void test_zarr_vlen(void)
{
    if (!unit_corpus_case("dense_var_nullable"))
        return;
    struct tdb_io io;
    struct tdb_fs *fs = open_case("dense_var_nullable", 0, &io);
    CHECK(fs != NULL);
    size_t nv = 0, no = 0;
    uint8_t *vals = expected_file("dense_var_nullable", "s_utf8", &nv);
    uint8_t *offs = expected_file("dense_var_nullable", "s_utf8.offsets", &no);
    CHECK(vals && offs && no == 12 * 14 * 8);
    if (!fs || !vals || no != 12 * 14 * 8)
        goto out;
    for (unsigned i = 0; i < 4; i++)
        for (unsigned j = 0; j < 4; j++) {
            char path[64];
            uint8_t want[4096];
            size_t wn = vlen_box(vals, nv, offs, i * 3, j * 3, want);
            snprintf(path, sizeof path, "__zarr/s_utf8/%u.%u", i, j);
            struct tdb_error err = {0};
            struct tdb_stat st;
            uint64_t ino, size = 0;
            CHECK_EQ_INT(tdb_fs_resolve(fs, path, &ino, &err), 0);
            CHECK_EQ_INT(tdb_fs_stat(fs, ino, &st, &err), 0);
            CHECK_EQ_INT(st.size, wn);
            uint8_t *c = unit_fs_file(fs, path, &size);
            CHECK(c && size == wn && !memcmp(c, want, wn));
            free(c);
        }
    struct tdb_error err = {0};
    uint64_t a, b;
    CHECK_EQ_INT(tdb_fs_resolve(fs, "__zarr/fixchar/1.2", &a, &err), 0);
    CHECK_EQ_INT(tdb_fs_resolve(fs, "__zarr/fixchar/1.2.0", &b, &err), 0);
    CHECK_EQ_INT(a, b);
    CHECK_EQ_INT(tdb_fs_resolve(fs, "__zarr/fixchar/1.2.1", &b, &err),
                 TDB_E_NOENT);
    CHECK_EQ_INT(tdb_fs_resolve(fs, "__zarr/s_utf8/1.2.0", &b, &err),
                 TDB_E_NOENT);
out:
    free(vals);
    free(offs);
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

/* An enumerated attribute's labels: each cell's value (the colors'
 * strings as VLenUTF8), the codes' flags in .zattrs. */
static void test_zarr_labels(void)
{
    if (!unit_corpus_case("enumeration"))
        return;
    static const char *const colors[] = {"red", "green", "blue", "cyan",
                                         "magenta", "yellow"};
    struct tdb_io io;
    struct tdb_fs *fs = open_case("enumeration", 0, &io);
    CHECK(fs != NULL);
    size_t n = 0;
    uint8_t *codes = expected_file("enumeration", "color", &n);
    CHECK(codes && n == 64);
    if (!fs || !codes || n != 64)
        goto out;
    for (unsigned k = 0; k < 4; k++) {
        uint8_t want[1024];
        uint32_t cnt = 16;
        size_t o = 4;
        memcpy(want, &cnt, 4);
        for (unsigned i = k * 16; i < k * 16 + 16; i++) {
            const char *w = codes[i] < 6 ? colors[codes[i]] : "";
            uint32_t len = (uint32_t)strlen(w);
            memcpy(want + o, &len, 4);
            memcpy(want + o + 4, w, len);
            o += 4 + len;
        }
        char path[64];
        uint64_t size = 0;
        snprintf(path, sizeof path, "__zarr/color.labels/%u", k);
        uint8_t *c = unit_fs_file(fs, path, &size);
        CHECK(c && size == o && !memcmp(c, want, o));
        free(c);
    }
    uint64_t size = 0;
    uint8_t *doc = unit_fs_file(fs, "__zarr/color/.zattrs", &size);
    CHECK(doc && strstr((char *)doc, "\"flag_meanings\": \"red green blue "
                                     "cyan magenta yellow\""));
    free(doc);
out:
    free(codes);
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

/* tests/fixtures/dense_dim_labels (TileDB 2.29.2 wrote it): the dimension
 * labels lat (FLOAT64 on y) and name (STRING_ASCII on x) are arrays of
 * __zarr, chunked as their dimension: lat's chunk 1 is its values for
 * y 4..7, name's chunk 1 numcodecs' VLenUTF8 of "a3" "a4" "a5"; t names
 * them as its coordinates. */
static void test_zarr_dimension_labels(void)
{
    const char *top = getenv("top_srcdir");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/dense_dim_labels/array",
             top && *top ? top : ".");
    struct tdb_io io;
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_error err = {0};
    struct tdb_fs *fs = NULL;
    CHECK_EQ_INT(tdb_io_posix(&io, path), 0);
    CHECK_EQ_INT(tdb_fs_open(&fs, &io, &o, &err), 0);
    if (!fs) {
        tdb_io_free(&io);
        return;
    }
    uint64_t size = 0;
    uint8_t *lat = unit_fs_file(fs, "__zarr/lat/1", &size);
    static const double want[4] = {0.0, 10.0, 20.0, 30.0};
    CHECK(lat && size == sizeof want && !memcmp(lat, want, sizeof want));
    free(lat);
    static const uint8_t names[] = {3, 0, 0, 0, 2, 0, 0, 0, 'a', '3', 2, 0, 0,
                                    0, 'a', '4', 2, 0, 0, 0, 'a', '5'};
    uint8_t *name = unit_fs_file(fs, "__zarr/name/1", &size);
    CHECK(name && size == sizeof names && !memcmp(name, names, sizeof names));
    free(name);
    uint8_t *doc = unit_fs_file(fs, "__zarr/t/.zattrs", &size);
    CHECK(doc && strstr((char *)doc, "\"coordinates\": \"lat name\""));
    free(doc);
    doc = unit_fs_file(fs, "__zarr/name/zarr.json", &size);
    CHECK(doc && strstr((char *)doc, "\"data_type\": \"string\"") &&
          strstr((char *)doc, "\"dimension_names\": [\"x\"]"));
    free(doc);
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

/* An array whose view (its current domain) starts inside a tile on both
 * dimensions, column-major cells, two fragments (the newer over part of
 * the older): each chunk holds the view's cells from its corner on, in
 * order F; the coordinates begin at the view's first; __domain/ takes
 * coordinates and __slice/ numpy's indexes. */
static const char zarr_schema[] =
    "{\"array_type\": \"dense\", \"cell_order\": \"col-major\", \"dims\": ["
    "{\"name\": \"y\", \"datatype\": \"INT32\", \"domain\": [-10, 29], "
    "\"tile_extent\": 4}, {\"name\": \"x\", \"datatype\": \"INT32\", "
    "\"domain\": [0, 19], \"tile_extent\": 3}], \"attrs\": [{\"name\": \"v\", "
    "\"datatype\": \"INT32\"}, {\"name\": \"n\", \"datatype\": \"FLOAT64\", "
    "\"nullable\": true}], \"current_domain\": [[-7, 12], [2, 16]]}";

/* Stages and commits at timestamp ts the cells of region
 * [[r[0], r[1]], [r[2], r[3]]]: v the cell's number plus base, n its
 * half, valid where v is odd. */
static void zarr_write(const struct tdb_io *arr, const int *r, int base,
                       uint64_t ts)
{
    int y0 = r[0], y1 = r[1], x0 = r[2], x1 = r[3];
    struct tdb_io stg;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stg.ops->mkdir(stg.ctx, "w");
    size_t cells = (size_t)(y1 - y0 + 1) * (size_t)(x1 - x0 + 1);
    int32_t *v = malloc(cells * 4);
    double *d = malloc(cells * 8);
    uint8_t *ok = malloc(cells);
    for (size_t i = 0; v && d && ok && i < cells; i++) {
        v[i] = base + (int32_t)i;
        d[i] = v[i] / 2.0;
        ok[i] = (uint8_t)(v[i] & 1);
    }
    char sub[128];
    int l = snprintf(sub, sizeof sub, "[[%d, %d], [%d, %d]]", y0, y1, x0, x1);
    unit_put(&stg, "w/__subarray.json", sub, (size_t)l);
    unit_put(&stg, "w/v", v, cells * 4);
    unit_put(&stg, "w/n", d, cells * 8);
    unit_put(&stg, "w/n.validity", ok, cells);
    mem_commit(arr, &stg, ts);
    free(v);
    free(d);
    free(ok);
}

/* Every chunk of Zarr array `field` (cs bytes a cell) of the 20 x 15 view
 * against the view's own file. */
static void zarr_check_field(struct tdb_fs *fs, const char *field,
                             const char *raw_name, uint64_t cs)
{
    uint64_t n = 0;
    uint8_t *raw = unit_fs_file(fs, raw_name, &n);
    CHECK(raw && n == 20 * 15 * cs);
    struct grid v = {raw, 20, 15, cs};
    for (uint64_t i = 0; raw && i < 5; i++) {
        for (uint64_t j = 0; j < 5; j++) {
            char p[128];
            uint64_t size = 0;
            snprintf(p, sizeof p, "__zarr/%s/%llu.%llu", field,
                     (unsigned long long)i, (unsigned long long)j);
            uint8_t *c = unit_fs_file(fs, p, &size);
            CHECK(c && size == 4 * 3 * cs);
            if (c && size == 4 * 3 * cs)
                check_chunk(p, c, &v, &(struct box){i * 4, j * 3, 4, 3, true},
                            NULL);
            free(c);
        }
    }
    free(raw);
}

static void test_zarr_unaligned(void)
{
    struct tdb_io arr;
    mem_array(&arr, zarr_schema);
    zarr_write(&arr, (const int[]){-7, 12, 2, 16}, 0, 2);
    zarr_write(&arr, (const int[]){-2, 5, 6, 11}, 1000, 3);
    struct tdb_fs *fs = mem_open(&arr);
    CHECK(fs != NULL);
    if (!fs) {
        tdb_io_free(&arr);
        return;
    }
    zarr_check_field(fs, "v", "v", 4);
    zarr_check_field(fs, "n", "n", 8);
    zarr_check_field(fs, "n.validity", "n.validity", 1);
    uint64_t size = 0;
    uint8_t *c = unit_fs_file(fs, "__zarr/y/0", &size);
    static const int32_t y0[4] = {-7, -6, -5, -4};
    CHECK(c && size == 16 && !memcmp(c, y0, 16));
    free(c);
    c = unit_fs_file(fs, "__zarr/x/4", &size);
    static const int32_t x4[3] = {14, 15, 16};
    CHECK(c && size == 12 && !memcmp(c, x4, 12));
    free(c);
    uint8_t *doc = unit_fs_file(fs, "__zarr/v/.zattrs", &size);
    CHECK(doc && !strcmp((char *)doc, "{\"_ARRAY_DIMENSIONS\": [\"y\", \"x\"]}\n"));
    free(doc);
    /* __domain/v[-5:-1,3] is __slice/v[2:6,1], and __slice's steps */
    uint64_t n1 = 0, n2 = 0, nr = 0;
    uint8_t *a = unit_fs_file(fs, "__domain/v[-5:-1,3].npy", &n1);
    uint8_t *b = unit_fs_file(fs, "__slice/v[2:6,1].npy", &n2);
    uint8_t *raw = unit_fs_file(fs, "v", &nr);
    CHECK(a && b && n1 == n2 && n1 == 128 + 16 && !memcmp(a, b, (size_t)n1));
    CHECK(a && memmem(a, (size_t)n1, "'shape': (4,)", 13));
    for (int i = 0; a && raw && nr == 1200 && i < 4; i++)
        CHECK(!memcmp(a + 128 + 4 * i, raw + ((2 + i) * 15 + 1) * 4, 4));
    free(a);
    free(b);
    a = unit_fs_file(fs, "__slice/v[::-7,-2::-6].npy", &n1);
    CHECK(a && n1 == 128 + 3 * 3 * 4 &&
          memmem(a, (size_t)n1, "'shape': (3, 3)", 15));
    static const int rows[3] = {19, 12, 5}, cols[3] = {13, 7, 1};
    for (int i = 0; a && raw && nr == 1200 && i < 9; i++)
        CHECK(!memcmp(a + 128 + 4 * i,
                      raw + (rows[i / 3] * 15 + cols[i % 3]) * 4, 4));
    free(a);
    free(raw);
    tdb_fs_close(fs);
    tdb_io_free(&arr);
}

int main(void)
{
    corpus = unit_corpus();
    RUN_CORPUS(test_zarr_chunk_is_tile);
    RUN_CORPUS(test_zarr_ahead);
    RUN_CORPUS(test_zarr_vlen);
    RUN_CORPUS(test_zarr_labels);
    RUN(test_zarr_dimension_labels);
    RUN(test_zarr_unaligned);
    return unit_done();
}
