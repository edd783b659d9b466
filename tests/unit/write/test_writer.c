/* test_writer.c: writing fragments from staged files (LAYOUT.md
 * "Writing", format/write/writer.c): corpus fragments re-written from the
 * files the mount shows for them read back byte-exactly (sparse ones from
 * shuffled cells), hand-made dense and sparse writes, and one test per bad
 * input, which must leave the array as it was. */
#include "write/writer.h"
#include "model/arraydir.h"
#include "../support.h"

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fixture.h"

static bool case_key(json_t *c, uint8_t key[32])
{
    const char *hex = json_string_value(json_object_get(c, "key_hex"));
    if (!hex || strlen(hex) != 64)
        return false;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        key[i] = (uint8_t)v;
    }
    return true;
}

/* Compares file `rel` of the mount with corpus expected/<exp>. */
static bool compare_expected(struct tdb_fs *fs, const char *name,
                             const char *rel, const char *exp)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/expected/%s", corpus, name, exp);
    struct tdb_io io;
    tdb_io_posix(&io, "/");
    uint8_t *want = NULL, *got = NULL;
    uint64_t nw = 0, ng = 0;
    bool ok = !tdb_io_read_file(&io, path, &want, &nw, NULL);
    tdb_io_free(&io);
    if (ok)
        ok = (got = fs_file(fs, rel, &ng)) != NULL;
    char what[1200];
    snprintf(what, sizeof what, "%s: %s", name, rel);
    if (ok)
        ok = unit_same_bytes(what, got, ng, want, nw);
    free(want);
    free(got);
    return ok;
}

/* Re-writes every fragment of corpus case `name` (case.json c, key key)
 * into arr, staged in stg; the new fragments' names into names[]. */
static void rewrite_frags(json_t *c, const char *name, const uint8_t *key,
                          struct tdb_io *arr, struct tdb_io *stg, char **names)
{
    json_t *frags = json_object_get(c, "fragments");
    json_t *info = json_object_get(c, "fragment_info");
    for (size_t i = 0; i < json_array_size(frags); i++) {
        const char *fr = json_string_value(json_array_get(frags, i));
        json_t *fi = json_object_get(info, fr);
        uint64_t ts = (uint64_t)json_integer_value(
            json_array_get(json_object_get(fi, "timestamps"), 1));
        char dir[32];
        snprintf(dir, sizeof dir, "s%zu", i);
        stage_case_frag(c, name, i, stg, dir);
        struct tdb_error err = {0};
        int r = unit_write(arr, stg, dir, key, ts, 0, &names[i], &err);
        if (r)
            fprintf(stderr, "  %s fragment %zu: %s\n", name, i, err.msg);
        CHECK_EQ_INT(r, 0);
    }
}

/* The mount fs shows what TileDB read from corpus case `name`: the view
 * (every top-level expected file), and each fragment alone (the corpus's
 * fragments frags, re-written as names[]). */
static void check_expected(struct tdb_fs *fs, const char *name, json_t *frags,
                           char **names)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/expected", corpus, name);
    struct tdb_io exp;
    tdb_io_posix(&exp, path);
    struct tdb_names top = {0};
    tdb_io_names(&exp, "", &top, NULL);
    for (size_t i = 0; i < top.n; i++)
        if (!top.is_dir[i])
            CHECK(compare_expected(fs, name, top.v[i], top.v[i]));
    tdb_names_free(&top);
    for (size_t i = 0; i < json_array_size(frags); i++) {
        const char *fr = json_string_value(json_array_get(frags, i));
        char sub[600];
        snprintf(sub, sizeof sub, "__fragments/%s", fr);
        struct tdb_names fn = {0};
        tdb_io_names(&exp, sub, &fn, NULL);
        for (size_t k = 0; names[i] && k < fn.n; k++) {
            if (!strcmp(fn.v[k], "__fragment.json"))
                continue;
            char rel[1200], e[1200];
            snprintf(rel, sizeof rel, "__fragments/%s/%s", names[i], fn.v[k]);
            snprintf(e, sizeof e, "%s/%s", sub, fn.v[k]);
            CHECK(compare_expected(fs, name, rel, e));
        }
        tdb_names_free(&fn);
    }
    tdb_io_free(&exp);
}

/* The files of new fragment `mine` in arr equal those of corpus case
 * `name`'s fragment fr byte for byte (the fragment metadata may differ:
 * only noted). */
static void check_same_files(const struct tdb_io *arr, const char *name,
                             const char *fr, const char *mine_name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/array/__fragments/%s", corpus, name,
             fr);
    struct tdb_io orig;
    tdb_io_posix(&orig, path);
    struct tdb_names fn = {0};
    tdb_io_names(&orig, "", &fn, NULL);
    for (size_t k = 0; k < fn.n; k++) {
        uint8_t *a = NULL, *b = NULL;
        uint64_t na = 0, nb = 0;
        char mine[1200], what[1400];
        snprintf(mine, sizeof mine, "__fragments/%s/%s", mine_name, fn.v[k]);
        snprintf(what, sizeof what, "%s: %s", name, mine);
        tdb_io_read_file(&orig, fn.v[k], &b, &nb, NULL);
        if (tdb_io_read_file(arr, mine, &a, &na, NULL)) {
            fprintf(stderr, "  %s: missing\n", what);
            CHECK(0);
        } else if (!strcmp(fn.v[k], "__fragment_metadata.tdb")) {
            if (!unit_same_bytes(what, a, na, b, nb))
                fprintf(stderr, "  (note: fragment metadata differs)\n");
        } else {
            CHECK(unit_same_bytes(what, a, na, b, nb));
        }
        free(a);
        free(b);
    }
    tdb_names_free(&fn);
    tdb_io_free(&orig);
}

/* Re-writes every fragment of corpus case `name` from the files the mount
 * shows for it (sparse cells shuffled unless duplicates are allowed), then
 * checks that the mount shows what TileDB read from the original: the
 * view, and each fragment alone.  With `same_files`, the data files of the
 * new fragments must equal TileDB's byte for byte. */
static void roundtrip(const char *name, bool same_files)
{
    json_t *c = load_case(name);
    CHECK(c != NULL);
    if (!c)
        return;
    uint8_t keyb[32];
    const uint8_t *key = case_key(c, keyb) ? keyb : NULL;
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case(name, &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    json_t *frags = json_object_get(c, "fragments");
    size_t nfr = json_array_size(frags);
    char **names = calloc(nfr + 1, sizeof *names);
    rewrite_frags(c, name, key, &arr, &stg, names);
    struct tdb_fs *fs = fs_open(&arr, key);
    CHECK(fs != NULL);
    if (fs)
        check_expected(fs, name, frags, names);
    for (size_t i = 0; same_files && i < nfr && names[i]; i++)
        check_same_files(&arr, name,
                         json_string_value(json_array_get(frags, i)),
                         names[i]);
    tdb_fs_close(fs);
    for (size_t i = 0; i < nfr; i++)
        free(names[i]);
    free(names);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
    json_decref(c);
}

static void test_roundtrip_dense(void)
{
    static const char *const cases[] = {
        "dense_1d_basic", "dense_1d_anon_attr", "dense_2d_all_types",
        "dense_2d_colmajor", "dense_2d_tile_col_cell_row",
        "dense_2d_tile_row_cell_col", "dense_3d", "dense_var_nullable",
        "dense_fragments_overlap", "dense_current_domain", NULL};
    for (int i = 0; cases[i]; i++)
        roundtrip(cases[i], true);
}

static void test_roundtrip_sparse(void)
{
    /* shuffled input: unordered cells, Hilbert, strings, floats, mixed */
    static const char *const cases[] = {
        "sparse_int64_2d", "sparse_hilbert", "sparse_string_dim",
        "sparse_float64_dims", "sparse_mixed_dims", "sparse_col_major",
        "sparse_datetime_int8", "sparse_dups", NULL};
    for (int i = 0; cases[i]; i++)
        roundtrip(cases[i], false);
}

static void test_roundtrip_filters(void)
{
    static const char *const cases[] = {
        "filter_bit_width_reduction", "filter_bitshuffle", "filter_byteshuffle",
        "filter_bzip2", "filter_chains", "filter_checksum_md5",
        "filter_checksum_sha256", "filter_delta", "filter_dictionary",
        "filter_double_delta", "filter_gzip", "filter_lz4",
        "filter_positive_delta", "filter_rle", "filter_scale_float",
        "filter_xor", "filter_zstd", "chunked_tiles", "filter_chains", NULL};
    /* filter_chains: a compressor after filters that add metadata stores
     * that metadata as one part where TileDB keeps one part per filter;
     * the tiles decode the same but are not byte-identical */
    for (int i = 0; cases[i]; i++)
        roundtrip(cases[i], strcmp(cases[i], "filter_chains") != 0);
}

static void test_roundtrip_encrypted(void)
{
    roundtrip("encrypted_aes256gcm", false);
}

/* dense_1d_basic (x in [1, 50], INT32 a, FLOAT64 b): a whole-domain write
 * (no __subarray.json) at a given timestamp. */
static void stage_dense_1d(const struct tdb_io *stg, const char *dir,
                           int32_t base)
{
    int32_t a[50];
    double b[50];
    for (int i = 0; i < 50; i++) {
        a[i] = base + i;
        b[i] = base * 0.5 + i;
    }
    char p[64];
    stg->ops->mkdir(stg->ctx, dir);
    snprintf(p, sizeof p, "%s/a", dir);
    put(stg, p, a, sizeof a);
    snprintf(p, sizeof p, "%s/b", dir);
    put(stg, p, b, sizeof b);
}

/* Two writes at the same timestamp: the second is moved after the first,
 * so that it wins. */
static void test_timestamp_after_newest(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("dense_1d_basic", &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stage_dense_1d(&stg, "one", 100);
    stage_dense_1d(&stg, "two", 200);
    char *n1 = NULL, *n2 = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(unit_write(&arr, &stg, "one", NULL, 5, 0, &n1, &err), 0);
    CHECK_EQ_INT(unit_write(&arr, &stg, "two", NULL, 5, 0, &n2, &err), 0);
    struct tdb_tsname t1, t2;
    CHECK(n1 && n2 && !tdb_tsname_parse(n1, &t1) && !tdb_tsname_parse(n2, &t2));
    CHECK(n1 && n2 && t1.t1 == 5 && t2.t1 == 6 && t2.t2 == 6);
    struct tdb_fs *fs = fs_open(&arr, NULL);
    uint64_t gn = 0;
    uint8_t *got = fs ? fs_file(fs, "a", &gn) : NULL;
    CHECK(got && gn == 200 && tdb_le32(got) == 200 && tdb_le32(got + 196) == 249);
    free(got);
    /* no timestamp: now, and still after the newest */
    char *n3 = NULL;
    stage_dense_1d(&stg, "three", 300);
    CHECK_EQ_INT(unit_write(&arr, &stg, "three", NULL, 0, 0, &n3, &err), 0);
    struct tdb_tsname t3;
    CHECK(n3 && !tdb_tsname_parse(n3, &t3) && t3.t1 > 1600000000000ull);
    tdb_fs_close(fs);
    free(n1);
    free(n2);
    free(n3);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* Committing the same staged folder again (a crash after the commit, before
 * the staged files were removed) writes nothing new and names the same
 * fragment; the marker does not count as a staged field. */
static void test_commit_twice(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("dense_1d_basic", &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stage_dense_1d(&stg, "s", 7);
    char *n1 = NULL, *n2 = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(unit_write(&arr, &stg, "s", NULL, 0, 0, &n1, &err), 0);
    struct tdb_names before, after;
    CHECK_EQ_INT(tdb_io_names(&arr, "__commits", &before, &err), 0);
    CHECK_EQ_INT(unit_write(&arr, &stg, "s", NULL, 0, 0, &n2, &err), 0);
    CHECK(n1 && n2 && !strcmp(n1, n2));
    CHECK_EQ_INT(tdb_io_names(&arr, "__commits", &after, &err), 0);
    CHECK_EQ_INT(after.n, before.n);
    /* a marker naming a fragment that was never committed: a new write */
    put(&stg, "s/__fragment", "__1_1_00000000000000000000000000000000_22", 41);
    char *n3 = NULL;
    CHECK_EQ_INT(unit_write(&arr, &stg, "s", NULL, 0, 0, &n3, &err), 0);
    CHECK(n3 && strcmp(n3, n1));
    tdb_names_free(&after);
    CHECK_EQ_INT(tdb_io_names(&arr, "__commits", &after, &err), 0);
    CHECK_EQ_INT(after.n, before.n + 1);
    tdb_names_free(&before);
    tdb_names_free(&after);
    free(n1);
    free(n2);
    free(n3);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* On disk: the commit file is the last thing written, empty, and no
 * temporary file is left behind. */
static void test_posix_commit(void)
{
    char tmpl[] = "/tmp/tdbwriteXXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    char src[1024];
    snprintf(src, sizeof src, "%s/dense_1d_basic/array", corpus);
    struct tdb_io from, arr, stg;
    CHECK_EQ_INT(tdb_io_posix(&from, src), 0);
    CHECK_EQ_INT(tdb_io_posix(&arr, tmpl), 0);
    CHECK_EQ_INT(unit_copy_tree(&from, "__schema", &arr, "__schema"), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stage_dense_1d(&stg, "w", 7);
    char *nm = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(unit_write(&arr, &stg, "w", NULL, 3, 0, &nm, &err), 0);
    char p[600];
    uint64_t sz = 1;
    snprintf(p, sizeof p, "__commits/%s.wrt", nm ? nm : "");
    CHECK_EQ_INT(tdb_io_size(&arr, p, &sz, NULL), 0);
    CHECK_EQ_INT(sz, 0);
    struct tdb_names fn = {0};
    snprintf(p, sizeof p, "__fragments/%s", nm ? nm : "");
    CHECK_EQ_INT(tdb_io_names(&arr, p, &fn, NULL), 0);
    CHECK_EQ_INT(fn.n, 3); /* __fragment_metadata.tdb a0.tdb a1.tdb */
    for (size_t i = 0; i < fn.n; i++)
        CHECK(!strcmp(fn.v[i], "__fragment_metadata.tdb") ||
              !strcmp(fn.v[i], "a0.tdb") || !strcmp(fn.v[i], "a1.tdb"));
    tdb_names_free(&fn);
    struct tdb_fs *fs = fs_open(&arr, NULL);
    uint64_t gn = 0;
    uint8_t *got = fs ? fs_file(fs, "b", &gn) : NULL;
    double b7;
    if (got)
        memcpy(&b7, got + 8 * 7, 8);
    CHECK(got && gn == 400 && b7 == 3.5 + 7);
    free(got);
    tdb_fs_close(fs);
    free(nm);
    tdb_io_free(&from);
    tdb_io_free(&arr);
    tdb_io_free(&stg);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    CHECK_EQ_INT(system(cmd), 0);
}

/* ----------------------------------------------------------- bad input */

/* Writes staged folder "w" and expects TDB_E_INVAL naming `file`, with
 * the array's folder unchanged. */
static void expect_inval(const struct tdb_io *arr, const struct tdb_io *stg,
                         const char *file, const char *why)
{
    struct tdb_buf before = {0}, after = {0};
    unit_snapshot(arr, "", false, &before);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = unit_write(arr, stg, "w", NULL, 9, 0, &nm, &err);
    unit_snapshot(arr, "", false, &after);
    if (r != TDB_E_INVAL || !strstr(err.msg, file) || (why && !strstr(err.msg, why)))
        fprintf(stderr, "  expected an error about %s (%s), got %d: %s\n", file,
                why ? why : "", r, err.msg);
    CHECK_EQ_INT(r, TDB_E_INVAL);
    CHECK(strncmp(err.msg, file, strlen(file)) == 0);
    CHECK(!why || strstr(err.msg, why) != NULL);
    CHECK(nm == NULL);
    CHECK(before.len == after.len &&
          (!before.len || !memcmp(before.data, after.data, before.len)));
    free(nm);
    tdb_buf_free(&before);
    tdb_buf_free(&after);
}

/* A valid staged write for dense_var_nullable's attributes over
 * [[0,1],[0,2]] (6 cells), into folder "w" of a fresh backend. */
static void stage_small_dense(struct tdb_io *stg)
{
    tdb_io_mem(stg);
    stg->ops->mkdir(stg->ctx, "w");
    uint8_t bytes[6 * 16];
    memset(bytes, 1, sizeof bytes);
    uint64_t off[6];
    for (int i = 0; i < 6; i++)
        tdb_st64((uint8_t *)&off[i], (uint64_t)i * 2);
    static const char *const var[] = {"s_ascii", "s_utf8", "c_char", "n_str"};
    for (int i = 0; i < 4; i++) {
        char p[64];
        snprintf(p, sizeof p, "w/%s", var[i]);
        put(stg, p, "aabbccddeeff", 12);
        snprintf(p, sizeof p, "w/%s.offsets", var[i]);
        put(stg, p, off, sizeof off);
    }
    put(stg, "w/fixchar", bytes, 6 * 4);
    put(stg, "w/n_i32", bytes, 6 * 4);
    put(stg, "w/n_f64x2", bytes, 6 * 16);
    put(stg, "w/n_u8", bytes, 6);
    static const char *const nul[] = {"n_i32", "n_str", "n_f64x2", "n_u8"};
    for (int i = 0; i < 4; i++) {
        char p[64];
        snprintf(p, sizeof p, "w/%s.validity", nul[i]);
        put(stg, p, bytes, 6);
    }
    put(stg, "w/__subarray.json", "[[0,1],[0,2]]", 13);
}

/* A staged dense write spoilt one way: a file removed and/or one put
 * (bytes, or offsets written little-endian), and the refusal expected:
 * the file named and a piece of the message (NULL: any). */
struct bad_dense {
    const char *remove, *put;
    const void *data;
    const uint64_t *offs;
    size_t size;
    const char *name, *needle;
};

static const uint64_t bad_unsorted[6] = {0, 2, 4, 1, 8, 10};
static const uint64_t bad_past_end[6] = {0, 3, 6, 9, 12, 15};
static const uint64_t bad_first[6] = {1, 2, 3, 4, 5, 6};
static const uint8_t bad_two[6] = {1, 2, 1, 1, 1, 1};

static const struct bad_dense bad_dense[] = {
    {"w/n_u8.validity", NULL, NULL, NULL, 0, "n_u8.validity", "missing"},
    {"w/s_utf8.offsets", NULL, NULL, NULL, 0, "s_utf8.offsets", "missing"},
    {"w/n_i32", "w/n_i32", "abcdefgh", NULL, 8, "n_i32", "expected 24"},
    {NULL, "w/c_char.offsets", NULL, bad_unsorted, 48, "c_char.offsets",
     "not ascending"},
    {NULL, "w/n_str.offsets", NULL, bad_past_end, 48, "n_str.offsets",
     "past the end"},
    {NULL, "w/s_ascii.offsets", NULL, bad_first, 48, "s_ascii.offsets",
     "must be 0"},
    /* offsets file of the wrong size */
    {"w/s_ascii.offsets", "w/s_ascii.offsets", NULL, bad_first, 40,
     "s_ascii.offsets", "expected 48"},
    {NULL, "w/n_i32.validity", bad_two, NULL, 6, "n_i32.validity",
     "must be 0"},
    {"w/__subarray.json", "w/__subarray.json", "[[11,12],[0,2]]", NULL, 15,
     "__subarray.json", "outside the domain"},
    {"w/__subarray.json", "w/__subarray.json", "[[1,0],[0,2]]", NULL, 13,
     "__subarray.json", "lo > hi"},
    {"w/__subarray.json", "w/__subarray.json", "[[0,1],", NULL, 7,
     "__subarray.json", NULL},
    {NULL, "w/colour", "x", NULL, 1, "colour", "not a field"},
};

/* Stages the small dense write spoilt as b says, and expects the refusal. */
static void bad_dense_case(struct tdb_io *arr, const struct bad_dense *b)
{
    struct tdb_io stg;
    uint8_t off[48];
    stage_small_dense(&stg);
    if (b->remove)
        stg.ops->remove(stg.ctx, b->remove);
    for (int i = 0; b->offs && i < 6; i++)
        tdb_st64(off + 8 * i, b->offs[i]);
    if (b->put)
        put(&stg, b->put, b->offs ? off : b->data, b->size);
    expect_inval(arr, &stg, b->name, b->needle);
    tdb_io_free(&stg);
}

static void test_bad_dense(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &arr), 0);
    /* the valid write works (and makes the array non-empty) */
    stage_small_dense(&stg);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = unit_write(&arr, &stg, "w", NULL, 1, 0, &nm, &err);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    free(nm);
    tdb_io_free(&stg);
    for (size_t i = 0; i < sizeof bad_dense / sizeof *bad_dense; i++)
        bad_dense_case(&arr, &bad_dense[i]);
    stage_small_dense(&stg);        /* __error is allowed */
    put(&stg, "w/__error", "old", 3);
    nm = NULL;
    CHECK_EQ_INT(unit_write(&arr, &stg, "w", NULL, 2, 0, &nm, &err), 0);
    free(nm);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* sparse_int64_2d: x, y INT64 in [-1000, 1000]; a INT32, s var ASCII, n
 * nullable FLOAT64; no duplicates. */
static void stage_small_sparse(struct tdb_io *stg, const int64_t *x,
                               const int64_t *y, int n)
{
    tdb_io_mem(stg);
    stg->ops->mkdir(stg->ctx, "w");
    put(stg, "w/x", x, (size_t)n * 8);
    put(stg, "w/y", y, (size_t)n * 8);
    int32_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    double d[8] = {0};
    uint64_t off[8];
    for (int i = 0; i < 8; i++)
        off[i] = (uint64_t)i;
    put(stg, "w/a", a, (size_t)n * 4);
    put(stg, "w/s", "abcdefgh", (size_t)n);
    put(stg, "w/s.offsets", off, (size_t)n * 8);
    put(stg, "w/n", d, (size_t)n * 8);
    put(stg, "w/n.validity", "\1\1\1\1\1\1\1\1", (size_t)n);
}

/* A coordinate of a float dimension that is NaN is in no domain:
 * sparse_float64_dims' x in [0, 1]. */
static void test_nan_coordinate(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_float64_dims", &arr), 0);
    double x[2] = {0.5, NAN}, y[2] = {1.0, 2.0};
    uint16_t u[2] = {1, 2};
    int8_t i8[2] = {3, 4};
    tdb_io_mem(&stg);
    stg.ops->mkdir(stg.ctx, "w");
    put(&stg, "w/x", x, sizeof x);
    put(&stg, "w/y", y, sizeof y);
    put(&stg, "w/u", u, sizeof u);
    put(&stg, "w/i", i8, sizeof i8);
    expect_inval(&arr, &stg, "x", "cell 1 is outside the domain");
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

static void test_bad_sparse(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_int64_2d", &arr), 0);
    int64_t x[4] = {5, -3, 1000, -1000}, y[4] = {1, 2, 3, 4};
    stage_small_sparse(&stg, x, y, 4);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = unit_write(&arr, &stg, "w", NULL, 1, 0, &nm, &err);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    free(nm);
    tdb_io_free(&stg);

    int64_t xo[4] = {5, -3, 1001, 0};   /* coordinate outside the domain */
    stage_small_sparse(&stg, xo, y, 4);
    expect_inval(&arr, &stg, "x", "cell 2 (1001) is outside the domain");
    tdb_io_free(&stg);

    int64_t yo[4] = {1, -1001, 3, 4};
    stage_small_sparse(&stg, x, yo, 4);
    expect_inval(&arr, &stg, "y", "outside the domain");
    tdb_io_free(&stg);

    int64_t xd[4] = {7, 8, 7, 9}, yd[4] = {3, 3, 3, 3};   /* duplicates */
    stage_small_sparse(&stg, xd, yd, 4);
    expect_inval(&arr, &stg, "x", "cells 0 and 2");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* a dimension file too short */
    stg.ops->remove(stg.ctx, "w/y");
    put(&stg, "w/y", y, 24);
    expect_inval(&arr, &stg, "y", "expected 32");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* an attribute with another count */
    stg.ops->remove(stg.ctx, "w/a");
    put(&stg, "w/a", y, 20);
    expect_inval(&arr, &stg, "a", "expected 16");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* a dimension missing */
    stg.ops->remove(stg.ctx, "w/y");
    expect_inval(&arr, &stg, "y", "missing");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* no cells */
    stg.ops->remove(stg.ctx, "w/x");
    put(&stg, "w/x", x, 0);
    expect_inval(&arr, &stg, "x", "no cells");
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* A sparse staged folder on disk whose dimension files are 256 MiB holes
 * (truncate -s) and whose attribute has 40 bytes: refused from the sizes
 * alone, naming the files and their sizes, without reading the holes (the
 * process's peak RSS grows by less than 64 MiB). */
static void test_sizes_checked_first(void)
{
    char tmpl[] = "/tmp/tdbsizesXXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    char p[1200];
    snprintf(p, sizeof p, "%s/w", tmpl);
    CHECK_EQ_INT(mkdir(p, 0700), 0);
    static const struct {
        const char *name;
        off_t size;
    } files[] = {
        {"x", (off_t)256 << 20}, {"y", (off_t)256 << 20}, {"a", 40},
        {"s", 8}, {"s.offsets", 64}, {"n", 64}, {"n.validity", 8},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/w/%s", tmpl, files[i].name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        CHECK(fd >= 0);
        CHECK_EQ_INT(ftruncate(fd, files[i].size), 0);
        close(fd);
    }
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_int64_2d", &arr), 0);
    CHECK_EQ_INT(tdb_io_posix(&stg, tmpl), 0);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = unit_write(&arr, &stg, "w", NULL, 1, 0, &nm, &err);
    getrusage(RUSAGE_SELF, &ru1);
    CHECK_EQ_INT(r, TDB_E_INVAL);
    CHECK(nm == NULL);
    CHECK(strstr(err.msg, "a: 40 bytes, expected 134217728") == err.msg);
    CHECK(strstr(err.msg, "x, 268435456 bytes") != NULL);
    long grew_kib = ru1.ru_maxrss - ru0.ru_maxrss;
    if (grew_kib >= 64 * 1024 || r != TDB_E_INVAL)
        fprintf(stderr, "  peak RSS grew by %ld KiB: %s\n", grew_kib, err.msg);
    CHECK(grew_kib < 64 * 1024);
    CHECK(!tdb_io_exists(&arr, "__fragments"));
    tdb_io_free(&arr);
    tdb_io_free(&stg);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    CHECK_EQ_INT(system(cmd), 0);
}

/* A __subarray.json in a sparse staged folder is refused (a sparse array
 * takes no region), whatever it holds. */
static void test_sparse_subarray_refused(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_int64_2d", &arr), 0);
    int64_t x[4] = {5, -3, 1000, -1000}, y[4] = {1, 2, 3, 4};
    stage_small_sparse(&stg, x, y, 4);
    put(&stg, "w/__subarray.json", "garbage{", 8);
    expect_inval(&arr, &stg, "__subarray.json", "sparse array takes no region");
    tdb_io_free(&stg);
    stage_small_sparse(&stg, x, y, 4);
    put(&stg, "w/__subarray.json", "[[0, 1], [0, 1]]", 16);
    expect_inval(&arr, &stg, "__subarray.json", "sparse");
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* sparse_dups allows duplicates: equal coordinates are all kept, in the
 * staged order. */
static void test_sparse_dups_kept(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_dups", &arr), 0);
    tdb_io_mem(&stg);
    stg.ops->mkdir(stg.ctx, "w");
    int32_t x[5] = {50, 3, 50, 3, 50}, y[5] = {2, 7, 2, 7, 2};
    int32_t a[5] = {0, 1, 2, 3, 4};
    uint64_t off[5] = {0, 1, 2, 3, 4};
    put(&stg, "w/x", x, sizeof x);
    put(&stg, "w/y", y, sizeof y);
    put(&stg, "w/a", a, sizeof a);
    put(&stg, "w/s", "vwxyz", 5);
    put(&stg, "w/s.offsets", off, sizeof off);
    char *nm = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(unit_write(&arr, &stg, "w", NULL, 1, 0, &nm, &err), 0);
    struct tdb_fs *fs = fs_open(&arr, NULL);
    uint64_t gn = 0;
    uint8_t *got = fs ? fs_file(fs, "a", &gn) : NULL;
    int32_t want[5] = {1, 3, 0, 2, 4};   /* (3,7) twice, then (50,2) thrice */
    CHECK(got && unit_same_bytes("a", got, gn, (const uint8_t *)want, sizeof want));
    free(got);
    got = fs ? fs_file(fs, "s", &gn) : NULL;
    CHECK(got && unit_same_bytes("s", got, gn, (const uint8_t *)"wyvxz", 5));
    free(got);
    tdb_fs_close(fs);
    free(nm);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

int main(void)
{
    corpus = unit_corpus();
    if (!unit_corpus_found())
        return 77; /* every test here needs it (the line is printed) */
    RUN(test_sizes_checked_first); /* first: it measures the peak RSS */
    RUN(test_sparse_subarray_refused);
    RUN(test_timestamp_after_newest);
    RUN(test_posix_commit);
    RUN(test_commit_twice);
    RUN(test_bad_dense);
    RUN(test_bad_sparse);
    RUN(test_nan_coordinate);
    RUN(test_sparse_dups_kept);
    RUN(test_roundtrip_dense);
    RUN(test_roundtrip_sparse);
    RUN(test_roundtrip_filters);
    RUN(test_roundtrip_encrypted);
    return unit_done();
}
