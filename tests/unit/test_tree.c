/* test_tree.c: the file tree over corpus arrays without a mount: stat of
 * fixed-size files decodes no tile, any byte range reads the same bytes as
 * a whole read, and a tiny cache budget changes nothing but the hit rate;
 * __zarr's chunks (a tile decoded once, in the cell order; views not
 * aligned to the tiles), __slice/ and __domain/.
 * Groups made here (docs/LAYOUT.md "A group"): members left out with the
 * reason, names a group folder cannot hold as they are, places resolved by
 * name and kept inside the source. */
#include "tiledb_format.h"
#include "tiledb_format_write.h"
#include "model/generic_tile.h"
#include "model/meta.h"
#include "model/mount_names.h"
#include "groupfile.h"
#include "support.h"
#include "tree/npy.h"           /* TDB_NPY_MAX_WIDTH */

#include <stdlib.h>
#include <time.h>

static const char *corpus;

static struct tdb_fs *open_case_threads(const char *name, uint64_t cache,
                                        unsigned threads, struct tdb_io *io)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    if (cache)
        o.cache_bytes = cache;
    if (threads)
        o.threads = threads;
    return unit_open_case(name, &o, io);
}

static struct tdb_fs *open_case(const char *name, uint64_t cache,
                                struct tdb_io *io)
{
    return open_case_threads(name, cache, 0, io);
}

static void stat_decodes_nothing(const char *name, const char *const *files)
{
    struct tdb_io io;
    struct tdb_fs *fs = open_case(name, 0, &io);
    CHECK(fs != NULL);
    if (!fs)
        return;
    struct tdb_error err = {0};
    for (int i = 0; files[i]; i++) {
        uint64_t ino;
        struct tdb_stat st;
        CHECK_EQ_INT(tdb_fs_resolve(fs, files[i], &ino, &err), 0);
        CHECK_EQ_INT(tdb_fs_stat(fs, ino, &st, &err), 0);
        CHECK(st.size > 0);
    }
    struct tdb_cache_stats cs;
    tdb_fs_cache_stats(fs, &cs);
    CHECK_EQ_INT(cs.decodes, 0);
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

static void test_stat_without_decoding(void)
{
    static const char *const dense[] = {"i8", "f64", "flag", NULL};
    static const char *const var[] = {"n_str.offsets", "n_i32", "n_u8.validity", NULL};
    static const char *const sparse[] = {"a", "x", "s.offsets", NULL};
    stat_decodes_nothing("dense_2d_all_types", dense);
    stat_decodes_nothing("dense_var_nullable", var);
    stat_decodes_nothing("sparse_dups", sparse);
}

static void ranges_match(const char *name, const char *file, uint64_t cache)
{
    struct tdb_io io;
    struct tdb_fs *fs = open_case(name, cache, &io);
    CHECK(fs != NULL);
    if (!fs)
        return;
    struct tdb_error err = {0};
    uint64_t ino, size = 0;
    CHECK_EQ_INT(tdb_fs_resolve(fs, file, &ino, &err), 0);
    uint8_t *all = unit_fs_read_all(fs, ino, &size);
    CHECK(all != NULL && size > 0);
    /* the expected bytes from the corpus */
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/expected/%s", corpus, name, file);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f && all) {
        uint8_t *exp = malloc(size + 1);
        size_t n = fread(exp, 1, size + 1, f);
        CHECK_EQ_INT(n, size);
        CHECK(n == size && !memcmp(exp, all, size));
        free(exp);
    }
    if (f)
        fclose(f);
    unsigned seed = 12345;
    uint8_t *buf = malloc(size + 1);
    for (int i = 0; all && i < 300; i++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t off = (seed >> 4) % size;
        seed = seed * 1103515245u + 12345u;
        uint64_t len = 1 + (seed >> 4) % (size - off);
        size_t got;
        CHECK_EQ_INT(tdb_fs_read(fs, ino, off, buf, len, &got, &err), 0);
        CHECK_EQ_INT(got, len);
        CHECK(!memcmp(buf, all + off, len));
    }
    /* past the end: nothing */
    size_t got = 7;
    CHECK_EQ_INT(tdb_fs_read(fs, ino, size, buf, 10, &got, &err), 0);
    CHECK_EQ_INT(got, 0);
    free(buf);
    free(all);
    struct tdb_cache_stats cs;
    tdb_fs_cache_stats(fs, &cs);
    CHECK(cs.used <= cs.budget || cs.entries <= 1);
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

static void test_random_ranges(void)
{
    ranges_match("dense_var_nullable", "n_str", 0);
    ranges_match("dense_var_nullable", "s_utf8.offsets", 0);
    ranges_match("dense_2d_all_types", "f64", 0);
    ranges_match("sparse_string_dim", "key", 0);
    ranges_match("sparse_hilbert", "a", 0);
}

static void test_tiny_cache(void)
{
    ranges_match("dense_var_nullable", "s_ascii", 1);
    ranges_match("filter_chains", "a", 1);
    ranges_match("sparse_dups", "a", 1);
}

static void test_paths(void)
{
    struct tdb_io io;
    struct tdb_fs *fs = open_case("dense_1d_basic", 0, &io);
    CHECK(fs != NULL);
    if (!fs)
        return;
    struct tdb_error err = {0};
    uint64_t ino;
    CHECK_EQ_INT(tdb_fs_resolve(fs, "nope", &ino, &err), TDB_E_NOENT);
    CHECK_EQ_INT(tdb_fs_resolve(fs, "a/x", &ino, &err), TDB_E_NOTDIR);
    CHECK_EQ_INT(tdb_fs_resolve(fs, "/__meta/../a", &ino, &err), 0);
    char buf[64];
    size_t n;
    CHECK_EQ_INT(tdb_fs_getxattr(fs, ino, "user.tiledb.datatype", buf, sizeof buf, &n), 0);
    CHECK_EQ_INT(tdb_fs_getxattr(fs, ino, "user.none", buf, sizeof buf, &n), TDB_E_NOENT);
    CHECK_EQ_INT(tdb_fs_getxattr(fs, ino, "user.tiledb.datatype", buf, 1, &n), TDB_E_INVAL);
    size_t got;
    CHECK_EQ_INT(tdb_fs_read(fs, TDB_ROOT_INO, 0, buf, 1, &got, &err), TDB_E_ISDIR);
    tdb_fs_close(fs);
    tdb_io_free(&io);
    /* a folder that is no array */
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    CHECK_EQ_INT(tdb_io_posix(&io, corpus), 0);
    CHECK_EQ_INT(tdb_fs_open(&fs, &io, &o, &err), TDB_E_INVAL);
    tdb_io_free(&io);
}

/* Two trees opened one after the other over one source share one cache
 * (as a mount's trees do across writes): the second finds every tile the
 * first decoded, even after the first is closed, and both read the same
 * bytes. */
static void test_shared_cache(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/consolidated_dense/array", corpus);
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, path), 0);
    struct tdb_cache *cache = NULL;
    CHECK_EQ_INT(tdb_cache_create(&cache, 64ull << 20), 0);
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.cache = cache;
    struct tdb_fs *fs1 = NULL, *fs2 = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fs_open(&fs1, &io, &o, &err), 0);
    CHECK_EQ_INT(tdb_fs_open(&fs2, &io, &o, &err), 0);
    if (!fs1 || !fs2)
        goto out;
    uint64_t ino1, ino2, n1 = 0, n2 = 0;
    CHECK_EQ_INT(tdb_fs_resolve(fs1, "a", &ino1, &err), 0);
    CHECK_EQ_INT(tdb_fs_resolve(fs2, "a", &ino2, &err), 0);
    uint8_t *b1 = unit_fs_read_all(fs1, ino1, &n1);
    struct tdb_cache_stats before, after;
    tdb_fs_cache_stats(fs1, &before);
    CHECK(before.decodes > 0);
    tdb_fs_close(fs1);
    fs1 = NULL;
    uint8_t *b2 = unit_fs_read_all(fs2, ino2, &n2);
    tdb_fs_cache_stats(fs2, &after);
    CHECK(b1 && b2 && n1 == n2 && n1 > 0);
    if (b1 && b2 && n1 == n2)
        CHECK_MEM(b1, b2, n1);
    CHECK_EQ_INT(after.decodes, before.decodes); /* nothing decoded again */
    CHECK(after.hits > before.hits);
    free(b1);
    free(b2);
out:
    tdb_fs_close(fs1);
    tdb_fs_close(fs2);
    tdb_cache_free(cache);
    tdb_io_free(&io);
}

/* ------------------------------------------------------------ groups */

static void test_path_normal(void)
{
    static const struct {
        const char *base, *rel, *want;
        bool above;
    } cases[] = {
        {"", "a/b", "a/b", false},         {"g", "./x//y/", "g/x/y", false},
        {"g", "../x", "x", false},         {"g", "../../x", "../x", true},
        {"", "..", "..", true},            {"g", "a/../..", "", false},
        {"g", "../../a/../../b", "../../b", true},
        {"/", "/a/../../etc", "/etc", false}, {"/d/g", "x/..", "/d/g", false},
        {"", "/abs", "abs", false},        {"", "", "", false},
        {"", ".", "", false}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bool above = !cases[i].above;
        char *p = tdb_path_normal(cases[i].base, cases[i].rel, &above);
        CHECK(p && !strcmp(p, cases[i].want));
        CHECK_EQ_INT(above, cases[i].above);
        if (p && strcmp(p, cases[i].want))
            fprintf(stderr, "  %s + %s: %s\n", cases[i].base, cases[i].rel, p);
        free(p);
    }
    static const char *const names[][2] = {
        {".", "%2E"}, {"..", "%2E."}, {"__group.json", "%5F_group.json"},
        {"__meta", "%5F_meta"}, {"a/b%", "a%2Fb%25"}, {"...", "..."},
        {"__meta2", "__meta2"}, {"", ""}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char *n = tdb_group_shown_name(names[i][0]);
        CHECK(n && !strcmp(n, names[i][1]));
        free(n);
    }
}

/* A group at `dir` of io with members {uri, name, relative}. */
static void put_group(struct tdb_io *io, const char *dir,
                      const char *const (*m)[3], size_t n)
{
    struct tdb_buf b = {0}, tile = {0};
    struct tdb_error err = {0};
    char path[256];
    tdb_buf_put_u32(&b, 2);
    tdb_buf_put_u64(&b, n);
    for (size_t i = 0; i < n; i++)
        group_member(&b, 2, 2, m[i][2] != NULL, m[i][0], m[i][1], false);
    CHECK_EQ_INT(tdb_generic_tile_encode(b.data, b.len,
                                         &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1},
                                         NULL, &tile, &err), 0);
    snprintf(path, sizeof path, "%s/__group/__1_1_%032d_2", dir, 0);
    unit_put(io, path, tile.data, tile.len);
    snprintf(path, sizeof path, "%s/__tiledb_group.tdb", dir);
    unit_put(io, path, "", 0);
    tdb_buf_free(&b);
    tdb_buf_free(&tile);
}

/* An empty sparse array at `dir` of io. */
static void put_array(struct tdb_io *io, const char *dir)
{
    static const char *const json =
        "{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
        "\"datatype\": \"INT64\", \"domain\": [0, 9], \"tile_extent\": 10}],"
        " \"attrs\": [{\"name\": \"a\", \"datatype\": \"INT32\"}]}";
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    struct tdb_io sub;
    CHECK_EQ_INT(tdb_schema_from_json(json, strlen(json), &s, &err), 0);
    CHECK_EQ_INT(tdb_io_sub(&sub, io, dir), 0);
    CHECK_EQ_INT(tdb_array_create(&sub, s, NULL, 1, &err), 0);
    tdb_io_free(&sub);
    tdb_schema_free(s);
}

/* Entry names of folder `path` of fs, sorted, '|'-separated. */
static void listing(struct tdb_fs *fs, const char *path, char *out, size_t cap)
{
    uint64_t dir, child;
    struct tdb_error err = {0};
    const char *name;
    out[0] = 0;
    if (tdb_fs_resolve(fs, path, &dir, &err))
        return;
    char *v[64];
    size_t k = 0;
    for (uint64_t i = 0; k < 64 && !tdb_fs_readdir(fs, dir, i, &name, &child,
                                                   &err); i++)
        v[k++] = (char *)name;
    for (size_t i = 0; i < k; i++)      /* sort */
        for (size_t j = i + 1; j < k; j++)
            if (strcmp(v[j], v[i]) < 0) {
                char *t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    for (size_t i = 0, o = 0; i < k && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "|" : "", v[i]);
}

static size_t count(const char *hay, const char *needle)
{
    size_t c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        c++;
    return c;
}

/* A group with good, odd-named, missing, outside and cyclic members. */
static void test_group_members(void)
{
    struct tdb_io mem, g;
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    put_array(&mem, "g/arr");
    put_array(&mem, "out");
    put_array(&mem, "g/sub/deep");
    static const char *const sub[][3] = {{"deep", "deep", "r"},
                                         {"..", "parent", "r"},
                                         {"../sub", "self", "r"}};
    put_group(&mem, "g/sub", sub, 3);
    static const char *const members[][3] = {
        {"arr", "arr", "r"},          {"arr", ".", "r"},
        {"arr", "..", "r"},           {"arr", "__group.json", "r"},
        {"arr", "__meta", "r"},       {"x/../arr", "dotted", "r"},
        {"missing", "missing", "r"},  {"../out", "climb", "r"},
        {"file:///out", "abs", NULL}, {"s3://b/out", "s3", NULL},
        {"sub", "sub", "r"},          {"other/arr", NULL, "r"}};
    put_group(&mem, "g", members, sizeof members / sizeof *members);
    CHECK_EQ_INT(tdb_io_sub(&g, &mem, "g"), 0);

    for (int any = 0; any < 2; any++) {
        struct tdb_open_options o;
        tdb_open_options_init(&o);
        o.members = any ? TDB_MEMBERS_ANY : TDB_MEMBERS_INSIDE;
        struct tdb_fs *fs = NULL;
        struct tdb_error err = {0};
        int r = tdb_fs_open(&fs, &g, &o, &err);
        if (r)
            fprintf(stderr, "  open: %s\n", err.msg);
        CHECK_EQ_INT(r, 0);
        if (!fs)
            continue;
        char got[1024];
        listing(fs, "", got, sizeof got);
        /* any: the absolute "/out" is followed (the in-memory backend
         * reads it as "out"; it resolves no "..", so climb is missing) */
        CHECK(!strcmp(got, any ? "%2E|%2E.|%5F_group.json|%5F_meta|__group.json|"
                                 "__meta|abs|arr|dotted|sub"
                               : "%2E|%2E.|%5F_group.json|%5F_meta|"
                                 "__group.json|__meta|arr|dotted|sub"));
        listing(fs, "%2E", got, sizeof got);
        CHECK(!strcmp(got, "__array.json|__fragments|__meta|a|a.npy|x|x.npy"));
        listing(fs, "sub", got, sizeof got);
        CHECK(!strcmp(got, "__group.json|__meta|deep"));
        const char *const *w;
        size_t nw = tdb_fs_warnings(fs, &w);
        /* missing, "other/arr" (named "arr" too), s3 (another storage),
         * climb (outside, or missing), sub's parent and self; inside: abs */
        CHECK_EQ_INT(nw, any ? 6 : 7);
        for (size_t i = 0; i < nw; i++)
            CHECK(strstr(w[i], "group ") == w[i] && strstr(w[i], " left out: "));
        uint64_t n = 0;
        uint8_t *json = unit_fs_file(fs, "__group.json", &n);
        CHECK(json != NULL);
        if (json) {
            CHECK_EQ_INT(count((char *)json, "\"error\""), any ? 4 : 5);
            CHECK(strstr((char *)json, "missing: no such file or folder"));
            CHECK(strstr((char *)json, "name of another member"));
            CHECK_EQ_INT(count((char *)json, "outside the source"), any ? 0 : 3);
        }
        free(json);
        json = unit_fs_file(fs, "sub/__group.json", &n);
        CHECK(json && count((char *)json, "itself") == 2);
        free(json);
        tdb_fs_close(fs);
    }
    tdb_io_free(&g);
    tdb_io_free(&mem);
}

/* Metadata keys a folder cannot hold as they are (".", "..", ""), and the
 * key "__attr" that "" is shown as: each listed once under __meta/ by a
 * name of its own (docs/LAYOUT.md), and each readable by that name. */
static void test_meta_key_names(void)
{
    static const char *const keys[][2] = {
        {".", "%2E"},          {"..", "%2E."},       {"", "__attr"},
        {"__attr", "%5F_attr"}, {"a/b%", "a%2Fb%25"}, {"...", "..."},
        {"__attr2", "__attr2"}};
    const size_t n = sizeof keys / sizeof *keys;
    struct tdb_io mem, arr;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    put_array(&mem, "arr");
    CHECK_EQ_INT(tdb_io_sub(&arr, &mem, "arr"), 0);
    for (size_t i = 0; i < n; i++) {
        char *shown = tdb_meta_key_name(keys[i][0]);
        CHECK(shown && !strcmp(shown, keys[i][1]));
        free(shown);
        /* the value of each key is its index */
        CHECK_EQ_INT(tdb_meta_write(&arr, "__meta", keys[i][0], TDB_UINT8, 1,
                                    &(uint8_t){(uint8_t)i}, false, NULL,
                                    (uint64_t)(10 + i), &err), 0);
    }
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    CHECK_EQ_INT(tdb_fs_open(&fs, &arr, &o, &err), 0);
    if (fs) {
        char got[512];
        listing(fs, "__meta", got, sizeof got);
        CHECK(!strcmp(got, "%2E|%2E.|%5F_attr|...|__attr|__attr2|a%2Fb%25"));
        for (size_t i = 0; i < n; i++) {
            char path[64];
            uint64_t len = 0;
            snprintf(path, sizeof path, "__meta/%s", keys[i][1]);
            uint8_t *v = unit_fs_file(fs, path, &len);
            CHECK(v && len == 1 && v[0] == i);
            if (!v || len != 1 || v[0] != i)
                fprintf(stderr, "  %s\n", path);
            free(v);
        }
        tdb_fs_close(fs);
    }
    tdb_io_free(&arr);
    tdb_io_free(&mem);
}

/* opts.locate decides for places the engine cannot judge by name: an
 * absolute uri inside the source becomes a path there, and one it says is
 * outside is left out. */
static int locate_test(void *arg, const char *place, char **path)
{
    (void)arg;
    if (!strcmp(place, "/data/g/arr"))
        return (*path = strdup("arr")) ? 0 : TDB_E_NOMEM;
    if (!strcmp(place, "link"))
        return 1;               /* say: a symbolic link out */
    if (place[0] == '/' || strstr(place, "://"))
        return 1;
    return (*path = strdup(place)) ? 0 : TDB_E_NOMEM;
}

static void test_group_locate(void)
{
    struct tdb_io mem;
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    put_array(&mem, "arr");
    put_array(&mem, "link");
    static const char *const members[][3] = {
        {"file:///data/g/arr", "abs", NULL}, {"/data/g/x/../arr", "abs2", NULL},
        {"link", "link", "r"},               {"file:///data/other", "o", NULL}};
    put_group(&mem, "", members, 4);
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.locate = locate_test;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fs_open(&fs, &mem, &o, &err), 0);
    if (fs) {
        char got[512];
        listing(fs, "", got, sizeof got);
        CHECK(!strcmp(got, "__group.json|__meta|abs|abs2"));
        const char *const *w;
        CHECK_EQ_INT(tdb_fs_warnings(fs, &w), 2);
    }
    tdb_fs_close(fs);
    tdb_io_free(&mem);
}

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

/* An empty array in memory (*arr) of schema JSON text. */
static void mem_array(struct tdb_io *arr, const char *text)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(arr), 0);
    CHECK_EQ_INT(tdb_schema_from_json(text, strlen(text), &s, &err), 0);
    CHECK_EQ_INT(s ? tdb_array_create(arr, s, NULL, 1, &err) : -1, 0);
    tdb_schema_free(s);
}

/* Commits staged folder "w" of stg (then freed) into arr at ts. */
static void mem_commit(const struct tdb_io *arr, struct tdb_io *stg,
                       uint64_t ts)
{
    char *name = NULL;
    struct tdb_error err = {0};
    int r = tdb_fragment_write(arr, stg, "w", NULL, ts, &name, &err);
    if (r)
        fprintf(stderr, "  write: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    free(name);
    tdb_io_free(stg);
}

/* The tree of arr with the default options (NULL, after saying why). */
static struct tdb_fs *mem_open(const struct tdb_io *arr)
{
    struct tdb_open_options o;
    struct tdb_error err = {0};
    struct tdb_fs *fs = NULL;
    tdb_open_options_init(&o);
    if (tdb_fs_open(&fs, arr, &o, &err))
        fprintf(stderr, "  open: %s\n", err.msg);
    return fs;
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

/* Var-sized strings as a .npy: each value padded with zeros to the
 * longest (S3 here), slices of the same width; one value longer than
 * TDB_NPY_MAX_WIDTH bytes makes the file fail with TDB_E_UNSUPPORTED
 * saying so, and nothing else. */
static const char str_schema[] =
    "{\"array_type\": \"dense\", \"dims\": [{\"name\": \"i\", \"datatype\": "
    "\"INT64\", \"domain\": [0, 3], \"tile_extent\": 2}], \"attrs\": "
    "[{\"name\": \"s\", \"datatype\": \"STRING_ASCII\", \"cell_val_num\": "
    "\"var\"}]}";

static void str_write(const struct tdb_io *arr, const char *sub,
                      const char *const *v, size_t n, uint64_t ts)
{
    struct tdb_io stg;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stg.ops->mkdir(stg.ctx, "w");
    struct tdb_buf vals = {0}, offs = {0};
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_INT(tdb_buf_put_u64(&offs, vals.len), 0);
        CHECK_EQ_INT(tdb_buf_append(&vals, v[i], strlen(v[i])), 0);
    }
    unit_put(&stg, "w/__subarray.json", sub, strlen(sub));
    unit_put(&stg, "w/s", vals.data ? (void *)vals.data : "", vals.len);
    unit_put(&stg, "w/s.offsets", offs.data, offs.len);
    mem_commit(arr, &stg, ts);
    tdb_buf_free(&vals);
    tdb_buf_free(&offs);
}

static void test_npy_strings(void)
{
    struct tdb_io arr;
    struct tdb_error err = {0};
    mem_array(&arr, str_schema);
    static const char *const v[] = {"ab", "", "xyz", "q"};
    str_write(&arr, "[[0, 3]]", v, 4, 2);
    struct tdb_fs *fs = mem_open(&arr);
    CHECK(fs != NULL);
    uint64_t n = 0;
    uint8_t *f = fs ? unit_fs_file(fs, "s.npy", &n) : NULL;
    CHECK(f && n == 128 + 12 && memmem(f, 128, "'descr': '|S3'", 14) &&
          memmem(f, 128, "'shape': (4,)", 13) &&
          !memcmp(f + 128, "ab\0\0\0\0xyzq\0\0", 12));
    free(f);
    f = fs ? unit_fs_file(fs, "__slice/s[1:3].npy", &n) : NULL;
    CHECK(f && n == 128 + 6 && !memcmp(f + 128, "\0\0\0xyz", 6));
    free(f);
    for (int i = 0; fs && i < 12; i++) {     /* any range reads the same */
        uint8_t b[12];
        size_t got;
        uint64_t ino;
        CHECK_EQ_INT(tdb_fs_resolve(fs, "s.npy", &ino, &err), 0);
        CHECK_EQ_INT(tdb_fs_read(fs, ino, 128 + (uint64_t)i, b, 12, &got, &err), 0);
        CHECK(got == 12 - (size_t)i &&
              !memcmp(b, "ab\0\0\0\0xyzq\0\0" + i, 12 - (size_t)i));
    }
    tdb_fs_close(fs);
    fs = NULL;
    char *big = malloc(TDB_NPY_MAX_WIDTH + 2);
    if (big) {
        memset(big, 'b', TDB_NPY_MAX_WIDTH + 1);
        big[TDB_NPY_MAX_WIDTH + 1] = 0;
        const char *const w[] = {big};
        str_write(&arr, "[[2, 2]]", w, 1, 3);
    }
    free(big);
    fs = mem_open(&arr);
    uint64_t ino;
    struct tdb_stat st;
    CHECK_EQ_INT(fs ? tdb_fs_resolve(fs, "s.npy", &ino, &err) : -1, 0);
    CHECK_EQ_INT(fs ? tdb_fs_stat(fs, ino, &st, &err) : 0, TDB_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "65537 bytes") && strstr(err.msg, "65536"));
    f = fs ? unit_fs_file(fs, "s", &n) : NULL;
    CHECK(f && n == 2 + TDB_NPY_MAX_WIDTH + 1 + 1);
    free(f);
    tdb_fs_close(fs);
    tdb_io_free(&arr);
}

int main(void)
{
    corpus = unit_corpus();
    RUN(test_path_normal);
    RUN(test_group_members);
    RUN(test_group_locate);
    RUN(test_meta_key_names);
    RUN_CORPUS(test_stat_without_decoding);
    RUN_CORPUS(test_random_ranges);
    RUN_CORPUS(test_tiny_cache);
    RUN_CORPUS(test_paths);
    RUN_CORPUS(test_shared_cache);
    RUN_CORPUS(test_zarr_chunk_is_tile);
    RUN_CORPUS(test_zarr_ahead);
    RUN_CORPUS(test_zarr_vlen);
    RUN_CORPUS(test_zarr_labels);
    RUN(test_zarr_dimension_labels);
    RUN(test_zarr_unaligned);
    RUN(test_npy_strings);
    return unit_done();
}
