/* test_wr_region.c: a dense write's region (format/write/wr_region.c):
 * a fragment over part of the domain, from __subarray.json. */
#include "write/writer.h"
#include "model/arraydir.h"
#include "../support.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fixture.h"

/* dense_var_nullable's schema (12 x 14, 3 x 3 tiles): a region of 7 x 11
 * cells that no tile boundary divides, every attribute (var strings with
 * empty cells, nullable, fixed CHAR x4).  The fragment shows exactly the
 * staged bytes; the view shows them inside the region and fills outside. */
static void test_dense_partial_region(void)
{
    const char *name = "dense_var_nullable";
    json_t *c = load_case(name);
    CHECK(c != NULL);
    if (!c)
        return;
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case(name, &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stg.ops->mkdir(stg.ctx, "w");
    const uint64_t R = 12, C = 14, r0 = 1, r1 = 7, c0 = 2, c1 = 12;
    const uint64_t n = (r1 - r0 + 1) * (c1 - c0 + 1);
    put(&stg, "w/__subarray.json", "[[1, 7], [2, 12]]", 17);
    json_t *fields = json_object_get(c, "fields");
    const char *fname;
    json_t *fd;
    struct sfiles s = {.n = 0};
    make_attr_files(fields, n, 42, &s);
    for (size_t k = 0; k < s.n; k++) {
        char *p = tdb_path_join("w", s.v[k].name);
        put(&stg, p, s.v[k].data, (size_t)s.v[k].size);
        free(p);
    }
    char *fragname = NULL;
    struct tdb_error err = {0};
    int r = unit_write(&arr, &stg, "w", NULL, 7, 0, &fragname, &err);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    struct tdb_tsname ts;
    CHECK(fragname && !tdb_tsname_parse(fragname, &ts));
    CHECK(fragname && ts.t1 == 7 && ts.t2 == 7 && ts.version == 22);
    struct tdb_fs *fs = fragname ? fs_open(&arr, NULL) : NULL;
    CHECK(fs != NULL);
    for (size_t k = 0; fs && k < s.n; k++) {
        char rel[600];
        uint64_t got_n = 0;
        snprintf(rel, sizeof rel, "__fragments/%s/%s", fragname, s.v[k].name);
        uint8_t *got = fs_file(fs, rel, &got_n);
        CHECK(got && same_bytes(rel, got, got_n, s.v[k].data, s.v[k].size));
        free(got);
    }
    /* the view: staged cells inside the region, fills elsewhere */
    json_object_foreach(fields, fname, fd) {
        if (!fs || strcmp(json_string_value(json_object_get(fd, "role")), "attr"))
            continue;
        bool var = json_is_string(json_object_get(fd, "cell_val_num"));
        bool nullable = json_is_true(json_object_get(fd, "nullable"));
        const char *fh = json_string_value(json_object_get(fd, "fill_hex"));
        uint8_t fill[64];
        size_t fl = strlen(fh) / 2;
        for (size_t b = 0; b < fl; b++) {
            unsigned x;
            sscanf(fh + 2 * b, "%2x", &x);
            fill[b] = (uint8_t)x;
        }
        uint8_t fv = (uint8_t)json_integer_value(json_object_get(fd, "fill_valid"));
        char on[300], vn[300];
        snprintf(on, sizeof on, "%s.offsets", fname);
        snprintf(vn, sizeof vn, "%s.validity", fname);
        struct sfile *sv = sfind(&s, fname), *so = sfind(&s, on),
                     *sm = sfind(&s, vn);
        struct tdb_buf want = {0}, woff = {0}, wval = {0};
        for (uint64_t i = 0; i < R; i++)
            for (uint64_t j = 0; j < C; j++) {
                bool in = i >= r0 && i <= r1 && j >= c0 && j <= c1;
                uint64_t k = (i - r0) * (c1 - c0 + 1) + (j - c0);
                tdb_buf_put_u64(&woff, want.len);
                if (!in) {
                    tdb_buf_append(&want, fill, fl);
                    tdb_buf_put_u8(&wval, fv);
                    continue;
                }
                if (var) {
                    uint64_t st = tdb_le64(so->data + 8 * k);
                    uint64_t en = k + 1 < n ? tdb_le64(so->data + 8 * (k + 1))
                                            : sv->size;
                    tdb_buf_append(&want, sv->data + st, (size_t)(en - st));
                } else {
                    uint64_t cs = sv->size / n;
                    tdb_buf_append(&want, sv->data + k * cs, (size_t)cs);
                }
                if (nullable)
                    tdb_buf_put_u8(&wval, sm->data[k]);
            }
        uint64_t gn = 0;
        uint8_t *got = fs_file(fs, fname, &gn);
        CHECK(got && same_bytes(fname, got, gn, want.data, want.len));
        free(got);
        if (var) {
            got = fs_file(fs, on, &gn);
            CHECK(got && same_bytes(on, got, gn, woff.data, woff.len));
            free(got);
        }
        if (nullable) {
            got = fs_file(fs, vn, &gn);
            CHECK(got && same_bytes(vn, got, gn, wval.data, wval.len));
            free(got);
        }
        tdb_buf_free(&want);
        tdb_buf_free(&woff);
        tdb_buf_free(&wval);
    }
    tdb_fs_close(fs);
    free(fragname);
    sfiles_free(&s);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
    json_decref(c);
}

int main(void)
{
    corpus = unit_corpus();
    if (!unit_corpus_found())
        return 77; /* every test here needs it (the line is printed) */
    RUN(test_dense_partial_region);
    return unit_done();
}
