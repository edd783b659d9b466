/* test_tree.c: the file tree over corpus arrays without a mount: stat of
 * fixed-size files decodes no tile, any byte range reads the same bytes as
 * a whole read, and a tiny cache budget changes nothing but the hit rate. */
#include "tiledb_format.h"
#include "support.h"

#include <stdlib.h>

static const char *corpus;

static struct tdb_fs *open_case(const char *name, uint64_t cache,
                                struct tdb_io *io)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    if (cache)
        o.cache_bytes = cache;
    return unit_open_case(name, &o, io);
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

int main(void)
{
    corpus = unit_corpus();
    RUN_CORPUS(test_stat_without_decoding);
    RUN_CORPUS(test_random_ranges);
    RUN_CORPUS(test_tiny_cache);
    RUN_CORPUS(test_paths);
    RUN_CORPUS(test_shared_cache);
    return unit_done();
}
