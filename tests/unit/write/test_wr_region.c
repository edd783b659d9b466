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

/* The region written: rows r0..r1, columns c0..c1 of an R x C domain,
 * n cells. */
struct region {
    uint64_t R, C, r0, r1, c0, c1, n;
};

/* The staged files of one attribute field and what its view shows
 * outside the region: the fill (fl bytes) and the fill validity. */
struct region_attr {
    const char *name;
    bool var, nullable;
    uint8_t fill[64], fv;
    size_t fl;
    struct sfile *sv, *so, *sm;
    char on[300], vn[300];
};

/* Fills a from field `fname` (case.json fd) and the staged files s. */
static void region_attr_init(struct region_attr *a, const char *fname,
                             json_t *fd, struct sfiles *s)
{
    const char *fh = json_string_value(json_object_get(fd, "fill_hex"));
    a->name = fname;
    a->var = json_is_string(json_object_get(fd, "cell_val_num"));
    a->nullable = json_is_true(json_object_get(fd, "nullable"));
    a->fl = strlen(fh) / 2;
    for (size_t b = 0; b < a->fl; b++) {
        unsigned x;
        sscanf(fh + 2 * b, "%2x", &x);
        a->fill[b] = (uint8_t)x;
    }
    a->fv = (uint8_t)json_integer_value(json_object_get(fd, "fill_valid"));
    snprintf(a->on, sizeof a->on, "%s.offsets", fname);
    snprintf(a->vn, sizeof a->vn, "%s.validity", fname);
    a->sv = sfind(s, fname);
    a->so = sfind(s, a->on);
    a->sm = sfind(s, a->vn);
}

/* What the view of attribute a shows: staged cells inside region g, fills
 * elsewhere; its values, offsets and validity into want, woff, wval. */
static void region_expected(const struct region *g,
                            const struct region_attr *a, struct tdb_buf *want,
                            struct tdb_buf *woff, struct tdb_buf *wval)
{
    for (uint64_t i = 0; i < g->R; i++)
        for (uint64_t j = 0; j < g->C; j++) {
            bool in = i >= g->r0 && i <= g->r1 && j >= g->c0 && j <= g->c1;
            uint64_t k = (i - g->r0) * (g->c1 - g->c0 + 1) + (j - g->c0);
            tdb_buf_put_u64(woff, want->len);
            if (!in) {
                tdb_buf_append(want, a->fill, a->fl);
                tdb_buf_put_u8(wval, a->fv);
                continue;
            }
            if (a->var) {
                uint64_t st = tdb_le64(a->so->data + 8 * k);
                uint64_t en = k + 1 < g->n
                                  ? tdb_le64(a->so->data + 8 * (k + 1))
                                  : a->sv->size;
                tdb_buf_append(want, a->sv->data + st, (size_t)(en - st));
            } else {
                uint64_t cs = a->sv->size / g->n;
                tdb_buf_append(want, a->sv->data + k * cs, (size_t)cs);
            }
            if (a->nullable)
                tdb_buf_put_u8(wval, a->sm->data[k]);
        }
}

/* The mount's file `path` holds exactly b. */
static void region_same(struct tdb_fs *fs, const char *path,
                        const struct tdb_buf *b)
{
    uint64_t gn = 0;
    uint8_t *got = fs_file(fs, path, &gn);
    CHECK(got && unit_same_bytes(path, got, gn, b->data, b->len));
    free(got);
}

/* The view of attribute `fname` (case.json fd): its values, and offsets
 * and validity where it has them, as region_expected. */
static void region_check_attr(struct tdb_fs *fs, const struct region *g,
                              const char *fname, json_t *fd, struct sfiles *s)
{
    struct region_attr a;
    region_attr_init(&a, fname, fd, s);
    struct tdb_buf want = {0}, woff = {0}, wval = {0};
    region_expected(g, &a, &want, &woff, &wval);
    region_same(fs, fname, &want);
    if (a.var)
        region_same(fs, a.on, &woff);
    if (a.nullable)
        region_same(fs, a.vn, &wval);
    tdb_buf_free(&want);
    tdb_buf_free(&woff);
    tdb_buf_free(&wval);
}

/* Stages in folder w of stg the region [[1, 7], [2, 12]] and n cells of
 * every attribute of `fields` (into s). */
static void region_stage(struct tdb_io *stg, json_t *fields, uint64_t n,
                         struct sfiles *s)
{
    stg->ops->mkdir(stg->ctx, "w");
    put(stg, "w/__subarray.json", "[[1, 7], [2, 12]]", 17);
    make_attr_files(fields, n, 42, s);
    for (size_t k = 0; k < s->n; k++) {
        char *p = tdb_path_join("w", s->v[k].name);
        put(stg, p, s->v[k].data, (size_t)s->v[k].size);
        free(p);
    }
}

/* The fragment `fragname` shows exactly the staged bytes s. */
static void region_check_fragment(struct tdb_fs *fs, const char *fragname,
                                  struct sfiles *s)
{
    for (size_t k = 0; k < s->n; k++) {
        char rel[600];
        uint64_t got_n = 0;
        snprintf(rel, sizeof rel, "__fragments/%s/%s", fragname,
                 s->v[k].name);
        uint8_t *got = fs_file(fs, rel, &got_n);
        CHECK(got && unit_same_bytes(rel, got, got_n, s->v[k].data, s->v[k].size));
        free(got);
    }
}

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
    const struct region g = {12, 14, 1, 7, 2, 12, 7 * 11};
    json_t *fields = json_object_get(c, "fields");
    const char *fname;
    json_t *fd;
    struct sfiles s = {.n = 0};
    region_stage(&stg, fields, g.n, &s);
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
    if (fs)
        region_check_fragment(fs, fragname, &s);
    /* the view: staged cells inside the region, fills elsewhere */
    json_object_foreach(fields, fname, fd) {
        if (fs && !strcmp(json_string_value(json_object_get(fd, "role")),
                          "attr"))
            region_check_attr(fs, &g, fname, fd, &s);
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
