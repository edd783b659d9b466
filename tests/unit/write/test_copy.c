/* test_copy.c: tdb_array_copy (format/write/copy.c) on what no corpus case holds: an encrypted group of an encrypted array, copied without the key and checked as far as the key allows, and a destination whose writes are lost. */
#include "../support.h"
#include "../unit.h"

#include "../groupfile.h"
#include "model/generic_tile.h"

static const uint8_t KEY[32] = "0123456789abcdef0123456789abcdef";

/* A dense INT32 array of 10 cells at `dir` of io, encrypted with key
 * (NULL: not), with one fragment. */
static void put_array(struct tdb_io *io, const char *dir, const uint8_t *key)
{
    static const char *const json =
        "{\"array_type\": \"dense\", \"dims\": [{\"name\": \"x\", "
        "\"datatype\": \"INT32\", \"domain\": [0, 9], \"tile_extent\": 10}],"
        " \"attrs\": [{\"name\": \"v\", \"datatype\": \"INT32\"}]}";
    int32_t v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    struct tdb_io sub, stg;
    char *name = NULL;
    CHECK_EQ_INT(tdb_schema_from_json(json, strlen(json), &s, &err), 0);
    CHECK_EQ_INT(tdb_io_sub(&sub, io, dir), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    CHECK_EQ_INT(tdb_array_create(&sub, s, key, 1, &err), 0);
    unit_put(&stg, "s/v", v, sizeof v);
    CHECK_EQ_INT(unit_write(&sub, &stg, "s", key, 2, 0, &name, &err), 0);
    free(name);
    tdb_io_free(&stg);
    tdb_io_free(&sub);
    tdb_schema_free(s);
}

/* A group at the root of io, its details encrypted with key (NULL: not),
 * naming the relative member `member`. */
static void put_group(struct tdb_io *io, const char *member,
                      const uint8_t *key)
{
    struct tdb_buf b = {0}, tile = {0};
    struct tdb_error err = {0};
    tdb_buf_put_u32(&b, 2);
    tdb_buf_put_u64(&b, 1);
    group_member(&b, 2, 2, true, member, member, false);
    CHECK_EQ_INT(tdb_generic_tile_encode(b.data, b.len,
                                         &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1},
                                         key, &tile, &err), 0);
    unit_put(io, "__group/__1_1_00000000000000000000000000000000_2",
             tile.data, tile.len);
    unit_put(io, "__tiledb_group.tdb", "", 0);
    tdb_buf_free(&b);
    tdb_buf_free(&tile);
}

/* Every file under dir of a, with its bytes, is in b. */
static bool same_tree(const struct tdb_io *a, const struct tdb_io *b,
                      const char *dir, size_t *nfiles)
{
    struct tdb_names n;
    bool same = true;
    CHECK_EQ_INT(tdb_io_names(a, dir, &n, NULL), 0);
    for (size_t i = 0; same && i < n.n; i++) {
        char *p = dir[0] ? tdb_path_join(dir, n.v[i]) : strdup(n.v[i]);
        if (n.is_dir[i]) {
            same = same_tree(a, b, p, nfiles);
        } else {
            uint8_t *x = NULL, *y = NULL;
            size_t nx = 0, ny = 0;
            same = !tdb_io_read_file(a, p, &x, &nx, NULL) &&
                   !tdb_io_read_file(b, p, &y, &ny, NULL) &&
                   unit_same_bytes(p, x, nx, y, ny);
            ++*nfiles;
            free(x);
            free(y);
        }
        free(p);
    }
    tdb_names_free(&n);
    return same;
}

/* An encrypted group whose member is an encrypted array, copied without
 * the key: the members cannot be read, so the member folder is copied as
 * the listing shows it, every byte; inside the array, each fragment's
 * metadata file must be there (the rest of the fragment needs the key). */
static void test_copy_encrypted_group(void)
{
    struct tdb_io src, dst, dst2;
    struct tdb_copy_stats st;
    struct tdb_error err = {0};
    size_t nfiles = 0;
    CHECK_EQ_INT(tdb_io_mem(&src), 0);
    put_group(&src, "arr", KEY);
    put_array(&src, "arr", KEY);
    CHECK_EQ_INT(tdb_io_mem(&dst), 0);
    CHECK_EQ_INT(tdb_array_copy(&src, &dst, NULL, &st, &err), 0);
    CHECK(same_tree(&src, &dst, "", &nfiles));
    CHECK_EQ_INT(st.files, nfiles);
    CHECK(nfiles >= 5);

    /* a fragment without its metadata file: the source is incomplete */
    struct tdb_names n;
    char meta[256];
    CHECK_EQ_INT(tdb_io_names(&src, "arr/__fragments", &n, NULL), 0);
    CHECK_EQ_INT(n.n, 1);
    snprintf(meta, sizeof meta, "arr/__fragments/%s/__fragment_metadata.tdb",
             n.v[0]);
    tdb_names_free(&n);
    CHECK_EQ_INT(src.ops->remove(src.ctx, meta), 0);
    CHECK_EQ_INT(tdb_io_mem(&dst2), 0);
    CHECK_EQ_INT(tdb_array_copy(&src, &dst2, NULL, &st, &err), TDB_E_NOENT);
    CHECK(strstr(err.msg, meta) != NULL);
    CHECK(strstr(err.msg, "the commit of fragment") != NULL);
    CHECK(!tdb_io_exists(&dst2, "__group"));
    CHECK_EQ_INT(st.files, 0);
    tdb_io_free(&dst2);
    tdb_io_free(&dst);
    tdb_io_free(&src);
}

/* With the key the check reads the encrypted metadata: a fragment file
 * gone is found; a wrong key opens nothing, and nothing is written. */
static void test_copy_encrypted_with_key(void)
{
    struct tdb_io src, dst;
    struct tdb_copy_stats st;
    struct tdb_error err = {0};
    struct tdb_names n;
    uint8_t wrong[32];
    char file[256];
    size_t nfiles = 0;
    CHECK_EQ_INT(tdb_io_mem(&src), 0);
    put_group(&src, "arr", KEY);
    put_array(&src, "arr", KEY);
    CHECK_EQ_INT(tdb_io_mem(&dst), 0);
    CHECK_EQ_INT(tdb_array_copy(&src, &dst, KEY, &st, &err), 0);
    CHECK(same_tree(&src, &dst, "", &nfiles));
    tdb_io_free(&dst);
    memcpy(wrong, KEY, 32);
    wrong[0] ^= 1;
    CHECK_EQ_INT(tdb_io_mem(&dst), 0);
    CHECK_EQ_INT(tdb_array_copy(&src, &dst, wrong, &st, &err), TDB_E_AUTH);
    CHECK(!tdb_io_exists(&dst, "__group"));
    tdb_io_free(&dst);
    CHECK_EQ_INT(tdb_io_names(&src, "arr/__fragments", &n, NULL), 0);
    snprintf(file, sizeof file, "arr/__fragments/%s/a0.tdb", n.v[0]);
    tdb_names_free(&n);
    CHECK_EQ_INT(src.ops->remove(src.ctx, file), 0);
    CHECK_EQ_INT(tdb_io_mem(&dst), 0);
    CHECK_EQ_INT(tdb_array_copy(&src, &dst, KEY, &st, &err), TDB_E_NOENT);
    CHECK(strstr(err.msg, file) != NULL);
    CHECK(!tdb_io_exists(&dst, "__group"));
    tdb_io_free(&dst);
    tdb_io_free(&src);
}

/* The same plain group and array: the member's fragment files are named
 * by its metadata, each of the size it states. */
static void test_copy_group_member_checked(void)
{
    struct tdb_io src, dst;
    struct tdb_copy_stats st;
    struct tdb_error err = {0};
    struct tdb_names n;
    char file[256];
    CHECK_EQ_INT(tdb_io_mem(&src), 0);
    put_group(&src, "arr", NULL);
    put_array(&src, "arr", NULL);
    CHECK_EQ_INT(tdb_io_names(&src, "arr/__fragments", &n, NULL), 0);
    snprintf(file, sizeof file, "arr/__fragments/%s/a0.tdb", n.v[0]);
    tdb_names_free(&n);
    CHECK_EQ_INT(src.ops->remove(src.ctx, file), 0);
    CHECK_EQ_INT(tdb_io_mem(&dst), 0);
    CHECK_EQ_INT(tdb_array_copy(&src, &dst, NULL, &st, &err), TDB_E_NOENT);
    CHECK(strstr(err.msg, file) != NULL);
    CHECK(strstr(err.msg, "the metadata of fragment") != NULL);
    tdb_io_free(&dst);
    tdb_io_free(&src);
}

/* A member whose folder is gone names nothing, and no folder is made for
 * it. */
static void test_copy_dangling_member(void)
{
    struct tdb_io src, dst;
    struct tdb_copy_stats st;
    struct tdb_error err = {0};
    size_t nfiles = 0;
    CHECK_EQ_INT(tdb_io_mem(&src), 0);
    put_group(&src, "gone", NULL);
    CHECK_EQ_INT(tdb_io_mem(&dst), 0);
    CHECK_EQ_INT(tdb_array_copy(&src, &dst, NULL, &st, &err), 0);
    CHECK(same_tree(&src, &dst, "", &nfiles));
    CHECK_EQ_INT(nfiles, 2);
    CHECK(!tdb_io_exists(&dst, "gone"));
    tdb_io_free(&dst);
    tdb_io_free(&src);
}

/* A destination whose write of one file answers success and keeps
 * nothing: the references read back from it fail the copy. */
struct lossy {
    struct tdb_io inner;
    const char *lose;
};

static int lossy_write(void *ctx, const char *path, uint64_t off,
                       const void *buf, size_t len)
{
    struct lossy *l = ctx;
    size_t pl = strlen(path), ll = strlen(l->lose);
    if (pl >= ll && !strcmp(path + pl - ll, l->lose))
        return 0;
    return l->inner.ops->write_at(l->inner.ctx, path, off, buf, len);
}

#define LOSSY_FWD(name, args, call)                                        \
    static int lossy_##name args                                           \
    {                                                                      \
        struct lossy *l = ctx;                                             \
        return l->inner.ops->name call;                                    \
    }
LOSSY_FWD(read_at, (void *ctx, const char *p, uint64_t off, void *b,
                    size_t n), (l->inner.ctx, p, off, b, n))
LOSSY_FWD(size, (void *ctx, const char *p, uint64_t *s), (l->inner.ctx, p, s))
LOSSY_FWD(list, (void *ctx, const char *p, tdb_io_list_fn fn, void *arg),
          (l->inner.ctx, p, fn, arg))
LOSSY_FWD(is_dir, (void *ctx, const char *p, bool *d), (l->inner.ctx, p, d))
LOSSY_FWD(mkdir, (void *ctx, const char *p), (l->inner.ctx, p))

static const struct tdb_io_ops lossy_ops = {
    .read_at = lossy_read_at,
    .size = lossy_size,
    .list = lossy_list,
    .is_dir = lossy_is_dir,
    .write_at = lossy_write,
    .mkdir = lossy_mkdir,
};

static void test_copy_lost_write(void)
{
    static const char *const lose[] = {"a0.tdb", ".wrt"};
    static const char *const says[] = {"is missing", "is not named in the copy"};
    static const char *const names[] = {"a0.tdb", "the commit of fragment"};
    static const int codes[] = {TDB_E_NOENT, TDB_E_IO};
    for (int k = 0; k < 2; k++) {
        struct tdb_io src;
        struct lossy l = {.lose = lose[k]};
        struct tdb_io dst = {&lossy_ops, &l};
        struct tdb_copy_stats st;
        struct tdb_error err = {0};
        CHECK_EQ_INT(tdb_io_mem(&src), 0);
        put_array(&src, "", NULL);
        CHECK_EQ_INT(tdb_io_mem(&l.inner), 0);
        CHECK_EQ_INT(tdb_array_copy(&src, &dst, NULL, &st, &err), codes[k]);
        CHECK(strstr(err.msg, "the copy is incomplete") != NULL);
        CHECK(strstr(err.msg, names[k]) != NULL);
        CHECK(strstr(err.msg, says[k]) != NULL);
        tdb_io_free(&l.inner);
        tdb_io_free(&src);
    }
}

int main(void)
{
    RUN(test_copy_encrypted_group);
    RUN(test_copy_encrypted_with_key);
    RUN(test_copy_group_member_checked);
    RUN(test_copy_dangling_member);
    RUN(test_copy_lost_write);
    return unit_done();
}
