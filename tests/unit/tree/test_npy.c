/* test_npy.c: the numpy files of the tree (format/tree/npy.c): string
 * attributes as fixed-width bytes (|S, padded to the longest value), and a
 * value too long for one. */
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
        size_t got = sizeof b;
        uint64_t ino;
        CHECK_EQ_INT(tdb_fs_resolve(fs, "s.npy", &ino, &err), 0);
        CHECK_EQ_INT(unit_fs_copy(fs, ino, 128 + (uint64_t)i, b, &got, &err), 0);
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
    RUN(test_npy_strings);
    return unit_done();
}
