/* test_tree.c: the file tree over corpus arrays without a mount
 * (format/tree/tree.c): stat of fixed-size files decodes no tile, any byte
 * range reads the same bytes as a whole read, and a tiny cache budget
 * changes nothing but the hit rate; paths resolved and normalised; trees
 * sharing one cache.  Groups made here (docs/LAYOUT.md "A group"): members
 * left out with the reason, names a group folder cannot hold as they are,
 * places resolved by name and kept inside the source. */
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
        size_t got = len;
        CHECK_EQ_INT(unit_fs_copy(fs, ino, off, buf, &got, &err), 0);
        CHECK_EQ_INT(got, len);
        CHECK(!memcmp(buf, all + off, len));
    }
    /* past the end: nothing */
    size_t got = 10;
    CHECK_EQ_INT(unit_fs_copy(fs, ino, size, buf, &got, &err), 0);
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
    size_t got = 1;
    CHECK_EQ_INT(unit_fs_copy(fs, TDB_ROOT_INO, 0, buf, &got, &err), TDB_E_ISDIR);
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
    CHECK_EQ_INT(tdb_generic_tile_encode(b.data, b.len, &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1}, NULL, &tile, &err), 0);
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

/* The arrays and groups of test_group_members in mem; g gets the group
 * "g" as a source of its own. */
static void members_fixture(struct tdb_io *mem, struct tdb_io *g)
{
    CHECK_EQ_INT(tdb_io_mem(mem), 0);
    put_array(mem, "g/arr");
    put_array(mem, "out");
    put_array(mem, "g/sub/deep");
    static const char *const sub[][3] = {{"deep", "deep", "r"},
                                         {"..", "parent", "r"},
                                         {"../sub", "self", "r"}};
    put_group(mem, "g/sub", sub, 3);
    static const char *const members[][3] = {
        {"arr", "arr", "r"},          {"arr", ".", "r"},
        {"arr", "..", "r"},           {"arr", "__group.json", "r"},
        {"arr", "__meta", "r"},       {"x/../arr", "dotted", "r"},
        {"missing", "missing", "r"},  {"../out", "climb", "r"},
        {"file:///out", "abs", NULL}, {"s3://b/out", "s3", NULL},
        {"sub", "sub", "r"},          {"other/arr", NULL, "r"}};
    put_group(mem, "g", members, sizeof members / sizeof *members);
    CHECK_EQ_INT(tdb_io_sub(g, mem, "g"), 0);
}

/* The members listed in the group's folders (`any`: members anywhere). */
static void members_listing(struct tdb_fs *fs, int any)
{
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
}

/* The members left out: warned of, and named in the __group.json files. */
static void members_left_out(struct tdb_fs *fs, int any)
{
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
}

/* A group with good, odd-named, missing, outside and cyclic members. */
static void test_group_members(void)
{
    struct tdb_io mem, g;
    members_fixture(&mem, &g);
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
        members_listing(fs, any);
        members_left_out(fs, any);
        tdb_fs_close(fs);
    }
    tdb_io_free(&g);
    tdb_io_free(&mem);
}

/* A chain of groups each the only member of the one above: the 33rd
 * (TREE_MAX_DEPTH below the top) shows its own files but does not follow
 * its member, and says so once. */
static void test_group_depth(void)
{
    static const char *const next[][3] = {{"n", "n", "r"}};
    enum { CHAIN = 34, SHOWN = 33 };
    struct tdb_io mem;
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    char path[3 * CHAIN + 8] = "c";
    for (int i = 0; i < CHAIN; i++) {
        put_group(&mem, path, next, 1);
        strcat(path, "/n");
    }
    put_array(&mem, path);
    struct tdb_io top;
    CHECK_EQ_INT(tdb_io_sub(&top, &mem, "c"), 0);
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fs_open(&fs, &top, &o, &err), 0);
    if (fs) {
        const char *const *w;
        size_t nw = tdb_fs_warnings(fs, &w);
        CHECK_EQ_INT(nw, 1);
        CHECK(nw == 1 && strstr(w[0], "groups nested too deep"));
        char deepest[3 * CHAIN] = "", got[256];
        for (int i = 1; i < SHOWN; i++)
            strcat(deepest, i > 1 ? "/n" : "n");
        listing(fs, deepest, got, sizeof got);
        CHECK(!strcmp(got, "__group.json|__meta"));
        deepest[strlen(deepest) - 2] = 0;
        listing(fs, deepest, got, sizeof got);
        CHECK(!strcmp(got, "__group.json|__meta|n"));
        tdb_fs_close(fs);
    }
    tdb_io_free(&top);
    tdb_io_free(&mem);
}

/* A lattice of groups, two a level, each listing both of the level below
 * (the last both the one array): 2 + 4 + 8 members.  With max_members 10
 * the tree follows the first 10 level by level, and leaves out (and warns
 * of) the last four, the members of b/a and b/b. */
static void test_group_lattice(void)
{
    static const char *const top[][3] = {{"g1a", "a", "r"}, {"g1b", "b", "r"}};
    static const char *const mid[][3] = {{"../g2a", "a", "r"},
                                         {"../g2b", "b", "r"}};
    static const char *const low[][3] = {{"../arr", "a", "r"},
                                         {"../arr", "b", "r"}};
    struct tdb_io mem, l;
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    put_group(&mem, "l", top, 2);
    put_group(&mem, "l/g1a", mid, 2);
    put_group(&mem, "l/g1b", mid, 2);
    put_group(&mem, "l/g2a", low, 2);
    put_group(&mem, "l/g2b", low, 2);
    put_array(&mem, "l/arr");
    CHECK_EQ_INT(tdb_io_sub(&l, &mem, "l"), 0);
    for (size_t most = 0; most <= 10; most += 10) {
        struct tdb_open_options o;
        tdb_open_options_init(&o);
        o.max_members = most;
        struct tdb_fs *fs = NULL;
        struct tdb_error err = {0};
        CHECK_EQ_INT(tdb_fs_open(&fs, &l, &o, &err), 0);
        if (!fs)
            continue;
        const char *const *w;
        size_t nw = tdb_fs_warnings(fs, &w);
        CHECK_EQ_INT(nw, most ? 4 : 0);
        for (size_t i = 0; i < nw; i++)
            CHECK(strstr(w[i], "more than 10 members in the tree"));
        char got[256];
        listing(fs, "a/b", got, sizeof got);
        CHECK(!strcmp(got, "__group.json|__meta|a|b"));
        listing(fs, "a/b/b", got, sizeof got);
        CHECK(!strcmp(got, "__array.json|__fragments|__meta|a|a.npy|x|x.npy"));
        listing(fs, "b/a", got, sizeof got);
        CHECK(!strcmp(got, most ? "__group.json|__meta"
                                : "__group.json|__meta|a|b"));
        uint64_t n = 0;
        uint8_t *json = unit_fs_file(fs, "b/b/__group.json", &n);
        CHECK(json && count((char *)json, "members in the tree") ==
                          (most ? 2 : 0));
        free(json);
        tdb_fs_close(fs);
    }
    tdb_io_free(&l);
    tdb_io_free(&mem);
}

/* A backend that drops every hint (as any may) and counts its settles. */
static unsigned settles;

static void drop_hints(void *ctx, const struct tdb_io_want *want, size_t n)
{
    (void)ctx;
    (void)want;
    (void)n;
}

static void count_settle(void *ctx)
{
    (void)ctx;
    settles++;
}

/* A group of 3 arrays and a subgroup of 2, on storage that fetches ahead
 * (its members are opened on threads): the tree settles the storage once,
 * when every member is open, not once per array (each such settle waited
 * for the other members' requests too). */
static void test_group_settles_once(void)
{
    static const char *const top[][3] = {
        {"a0", "a0", "r"}, {"a1", "a1", "r"}, {"a2", "a2", "r"},
        {"sub", "sub", "r"}};
    static const char *const sub[][3] = {{"b0", "b0", "r"}, {"b1", "b1", "r"}};
    struct tdb_io mem, ahead, g;
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    put_group(&mem, "g", top, 4);
    put_group(&mem, "g/sub", sub, 2);
    const char *arrays[] = {"g/a0", "g/a1", "g/a2", "g/sub/b0", "g/sub/b1"};
    for (size_t i = 0; i < 5; i++)
        put_array(&mem, arrays[i]);
    struct tdb_io_ops ops = *mem.ops;
    ops.prefetch = drop_hints;
    ops.settle = count_settle;
    ahead = (struct tdb_io){&ops, mem.ctx};
    CHECK_EQ_INT(tdb_io_sub(&g, &ahead, "g"), 0);
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    settles = 0;
    CHECK_EQ_INT(tdb_fs_open(&fs, &g, &o, &err), 0);
    CHECK_EQ_INT(settles, 1);
    char got[256];
    listing(fs, "", got, sizeof got);
    CHECK(!strcmp(got, "__group.json|__meta|a0|a1|a2|sub"));
    listing(fs, "sub/b1", got, sizeof got);
    CHECK(!strcmp(got, "__array.json|__fragments|__meta|a|a.npy|x|x.npy"));
    tdb_fs_close(fs);
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
        CHECK_EQ_INT(tdb_meta_write(&arr, "__meta",
                                    &(struct tdb_meta_entry){keys[i][0],
                                    TDB_UINT8, 1, &(uint8_t){(uint8_t)i},
                                    false}, &(struct tdb_commit_options){NULL,
                                    (uint64_t)(10 + i)}, &err), 0);
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

int main(void)
{
    corpus = unit_corpus();
    RUN(test_path_normal);
    RUN(test_group_members);
    RUN(test_group_depth);
    RUN(test_group_lattice);
    RUN(test_group_settles_once);
    RUN(test_group_locate);
    RUN(test_meta_key_names);
    RUN_CORPUS(test_stat_without_decoding);
    RUN_CORPUS(test_random_ranges);
    RUN_CORPUS(test_tiny_cache);
    RUN_CORPUS(test_paths);
    RUN_CORPUS(test_shared_cache);
    return unit_done();
}
