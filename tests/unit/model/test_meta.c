/* test_meta.c: array metadata (format/model/meta.c) against the corpus
 * (every case's values as its case.json lists them) and hand-built
 * inputs: newer values overriding older ones, deletions, vacuumed files,
 * truncated and damaged ones. */
#include "../support.h"
#include "../condtree.h"
#include "../groupfile.h"

#include "model/arraydir.h"
#include "model/delcond.h"
#include "model/generic_tile.h"
#include "model/meta.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include "fixture.h"

static void put_file(struct tdb_io *io, const char *path, const char *text)
{
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, text, strlen(text)), 0);
}

/* Calls fn for each member key of object obj. */
static size_t js_keys(const char *obj, char keys[][256], size_t cap)
{
    size_t n = 0;
    if (!obj)
        return 0;
    obj = js_ws(obj);
    if (*obj != '{')
        return 0;
    const char *p = obj + 1;
    for (;;) {
        p = js_ws(p);
        if (*p != '"')
            return n;
        char k[256];
        p = js_string(p, k, sizeof k);
        if (n < cap)
            strcpy(keys[n++], k);
        p = js_skip(p);
    }
}

/* ------------------------------------------------------- corpus metadata */

static void pct_encode(const char *key, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 4 < cap; i++) {
        if (key[i] == '/' || key[i] == '%') {
            n += (size_t)snprintf(out + n, cap - n, "%%%02X",
                                  (unsigned char)key[i]);
        } else {
            out[n++] = key[i];
        }
    }
    out[n] = 0;
}

static int files_checked;

/* check_meta: m has the keys of case.json's `meta_obj`, with their
 * datatypes and counts. */
static void check_meta_keys(const struct tdb_meta *m, const char *meta_obj,
                            const char *what)
{
    char keys[64][256];
    size_t nk = js_keys(meta_obj, keys, 64);
    if (m->n != nk)
        fprintf(stderr, "  %s: %zu keys, case.json has %zu\n", what, m->n,
                nk);
    CHECK_EQ_INT(m->n, nk);
    for (size_t i = 0; i < nk; i++) {
        const struct tdb_meta_item *it = tdb_meta_find(m, keys[i]);
        CHECK(it != NULL);
        if (!it) {
            fprintf(stderr, "  %s: key '%s' missing\n", what, keys[i]);
            continue;
        }
        const char *o = js_get(meta_obj, keys[i]);
        char dt[64] = "";
        const char *d = js_get(o, "datatype");
        if (d)
            js_string(d, dt, sizeof dt);
        CHECK(tdb_dt_name(it->type) && strcmp(tdb_dt_name(it->type), dt) == 0);
        const char *cnt = js_get(o, "count");
        CHECK(cnt && strtoul(cnt, NULL, 10) == it->count);
    }
}

/* check_meta: every file of `expected_meta` is a key of m with these
 * exact bytes, the keys sorted. */
static void check_meta_files(const struct tdb_meta *m,
                             const char *expected_meta, const char *what)
{
    DIR *dd = opendir(expected_meta);
    size_t nfiles = 0;
    for (struct dirent *e; dd && (e = readdir(dd));) {
        if (e->d_name[0] == '.')
            continue;
        nfiles++;
    }
    if (dd)
        closedir(dd);
    CHECK_EQ_INT(nfiles, m->n);
    for (size_t i = 0; i < m->n; i++) {
        char enc[1024], path[4096];
        pct_encode(m->v[i].key, m->v[i].key_len, enc, sizeof enc);
        snprintf(path, sizeof path, "%s/%s", expected_meta, enc);
        size_t len;
        char *want = unit_slurp(path, &len);
        CHECK(want != NULL);
        if (!want) {
            fprintf(stderr, "  %s: no expected file %s\n", what, path);
            continue;
        }
        CHECK_EQ_INT(len, m->v[i].size);
        if (len == m->v[i].size)
            CHECK_MEM(want, m->v[i].value, len);
        files_checked++;
        free(want);
        if (i)
            CHECK(strcmp(m->v[i - 1].key, m->v[i].key) < 0);
    }
}

/* Compares the metadata of `dir` (inside io) with expected/PREFIX/__meta and
 * with the case.json object `meta_obj`. */
static void check_meta(const struct tdb_io *io, const char *dir,
                       uint64_t t0, uint64_t t1, const uint8_t *key,
                       const char *expected_meta, const char *meta_obj,
                       const char *what)
{
    struct tdb_meta *m = NULL;
    struct tdb_error err = {0};
    char *mdir = tdb_path_join(dir, "__meta");
    int r = tdb_meta_load(io, mdir, (struct tdb_ts_window){t0, t1}, key, &m, &err);
    free(mdir);
    if (r) {
        fprintf(stderr, "  %s: %s\n", what, err.msg);
        CHECK_EQ_INT(r, 0);
        return;
    }
    check_meta_keys(m, meta_obj, what);
    check_meta_files(m, expected_meta, what);
    tdb_meta_free(m);
}

static int hexval(char c)
{
    return c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0';
}

/* Walks a group: its metadata, then each member (arrays and subgroups). */
static void check_group_tree(const struct tdb_io *io, const char *dir,
                             const char *expected, const char *obj,
                             uint64_t t0, uint64_t t1, int depth)
{
    char em[8192];
    snprintf(em, sizeof em, "%s/__meta", expected);
    char *mdir = tdb_path_join(dir, "__meta");
    if (tdb_io_isdir(io, mdir))
        check_meta(io, dir, t0, t1, NULL, em, js_get(obj, "metadata"), dir);
    free(mdir);
    const char *members = js_get(obj, "members");
    if (!members || depth > 4)
        return;
    struct tdb_group *g = NULL;
    struct tdb_error err = {0};
    int r = tdb_group_load(io, dir, t0, t1, &g, &err);
    CHECK_EQ_INT(r, 0);
    if (r) {
        fprintf(stderr, "  %s: %s\n", dir, err.msg);
        return;
    }
    char names[64][256];
    size_t nn = js_keys(members, names, 64);
    CHECK_EQ_INT(g->n, nn);
    for (size_t i = 0; i < g->n; i++) {
        const struct tdb_group_member *m = &g->v[i];
        const char *mo = js_get(members, m->name);
        CHECK(mo != NULL);
        if (!mo) {
            fprintf(stderr, "  %s: unexpected member %s\n", dir, m->name);
            continue;
        }
        char kind[32] = "";
        const char *k = js_get(mo, "kind");
        if (k)
            js_string(k, kind, sizeof kind);
        CHECK_EQ_INT(m->type, strcmp(kind, "group") == 0 ? 1 : 2);
        char *path = tdb_group_member_path(m, dir);
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", expected, m->name);
        if (m->type == 1) {
            check_group_tree(io, path, sub, mo, t0, t1, depth + 1);
        } else {
            char *amdir = tdb_path_join(path, "__meta");
            if (tdb_io_isdir(io, amdir)) {
                snprintf(em, sizeof em, "%s/__meta", sub);
                check_meta(io, path, t0, t1, NULL, em,
                           js_get(mo, "metadata"), path);
            }
            free(amdir);
        }
        free(path);
        if (i)
            CHECK(strcmp(g->v[i - 1].name, m->name) <= 0);
    }
    tdb_group_free(g);
}

static void test_corpus_metadata(void)
{
    const char *root = unit_corpus();
    DIR *d = opendir(root);
    int cases = 0;
    files_checked = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/case.json", root, e->d_name);
        char *json = unit_slurp(path, NULL);
        if (!json)
            continue;
        char opts[256] = "", kind[32] = "", keyhex[128] = "";
        const char *o = js_get(json, "mount_options");
        if (o)
            js_string(o, opts, sizeof opts);
        o = js_get(json, "kind");
        if (o)
            js_string(o, kind, sizeof kind);
        o = js_get(json, "key_hex");
        if (o)
            js_string(o, keyhex, sizeof keyhex);
        uint8_t key[32];
        bool has_key = strlen(keyhex) == 64;
        for (int i = 0; has_key && i < 32; i++)
            key[i] = (uint8_t)(hexval(keyhex[2 * i]) << 4 |
                               hexval(keyhex[2 * i + 1]));
        uint64_t t0, t1;
        unit_timestamp_range(opts, &t0, &t1);

        char arr[4096], exp[4096];
        snprintf(arr, sizeof arr, "%s/%s/array", root, e->d_name);
        snprintf(exp, sizeof exp, "%s/%s/expected", root, e->d_name);
        struct tdb_io io;
        CHECK_EQ_INT(tdb_io_posix(&io, arr), 0);
        if (strcmp(kind, "group") == 0) {
            check_group_tree(&io, "", exp, json, t0, t1, 0);
            cases++;
        } else if (tdb_io_isdir(&io, "__meta")) {
            char em[4200];
            snprintf(em, sizeof em, "%s/__meta", exp);
            check_meta(&io, "", t0, t1, has_key ? key : NULL, em,
                       js_get(json, "metadata"), e->d_name);
            cases++;
        }
        tdb_io_free(&io);
        free(json);
    }
    if (d)
        closedir(d);
    printf("  corpus: %d cases with metadata or members, %d values "
           "compared\n", cases, files_checked);
    CHECK(cases >= 6);
    CHECK(files_checked >= 20);
}

/* ------------------------------------------------ hand-built metadata */

/* Two metadata files at 1 and 2: b, a, gone, e put; then b again, gone
 * and never deleted (checking the exact encoding of a put and a
 * delete); and an unfinished write. */
static void put_meta_files(struct tdb_io *io, struct tdb_buf *b)
{
    int32_t one = 1, two[2] = {2, 3};
    double pi = 3.25;

    CHECK_EQ_INT(tdb_meta_serialize_put(b, "b", TDB_INT32, 1, &one), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(b, "a", TDB_FLOAT64, 1, &pi), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(b, "gone", TDB_INT32, 1, &one), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(b, "e", TDB_STRING_UTF8, 0, ""), 0);
    /* The exact encoding of one put. */
    static const uint8_t first[] = {1, 0, 0, 0, 'b', 0, 0, 1, 0, 0, 0,
                                    1, 0, 0, 0};
    CHECK_MEM(b->data, first, sizeof first);
    put_tile(io, "__meta/__1_1_0123456789abcdef0123456789abcdef", b->data,
             b->len);
    tdb_buf_reset(b);
    CHECK_EQ_INT(tdb_meta_serialize_put(b, "b", TDB_INT32, 2, two), 0);
    CHECK_EQ_INT(tdb_meta_serialize_del(b, "gone"), 0);
    CHECK_EQ_INT(tdb_meta_serialize_del(b, "never"), 0);
    static const uint8_t del[] = {4, 0, 0, 0, 'g', 'o', 'n', 'e', 1};
    CHECK_MEM(b->data + 19, del, sizeof del);
    put_tile(io, "__meta/__2_2_1123456789abcdef0123456789abcdef", b->data,
             b->len);
    /* An unfinished write is ignored. */
    put_tile(io, "__meta/__3_3_2123456789abcdef0123456789abcdef.tmp",
             "junk", 4);
}

/* All of put_meta_files merged: the later put wins, deleted keys go,
 * keys sorted. */
static void check_meta_merged(const struct tdb_io *io)
{
    struct tdb_error err = {0};
    int32_t two[2] = {2, 3};
    struct tdb_meta *m = NULL;
    CHECK_EQ_INT(tdb_meta_load(io, "__meta", (struct tdb_ts_window){0, UINT64_MAX}, NULL, &m, &err),
                 0);
    if (m) {
        CHECK_EQ_INT(m->n, 3);
        CHECK(m->n == 3 && strcmp(m->v[0].key, "a") == 0 &&
              strcmp(m->v[1].key, "b") == 0 && strcmp(m->v[2].key, "e") == 0);
        const struct tdb_meta_item *it = tdb_meta_find(m, "b");
        CHECK(it && it->count == 2 && it->size == 8 && it->type == TDB_INT32);
        if (it && it->size == 8)
            CHECK_MEM(it->value, two, 8);
        it = tdb_meta_find(m, "e");
        CHECK(it && it->count == 0 && it->size == 0 &&
              it->type == TDB_STRING_UTF8);
        CHECK(tdb_meta_find(m, "gone") == NULL);
        CHECK_EQ_INT(m->newest_ts, 2);
    }
    tdb_meta_free(m);
}

static void test_meta_overrides(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    struct tdb_buf b = {0};
    put_meta_files(&io, &b);
    check_meta_merged(&io);
    struct tdb_meta *m = NULL;

    /* Time travel: [0,1] sees the first file only; [2,2] the second only
     * (a range starting at 2 drops what was written at 1). */
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){0, 1}, NULL, &m, &err), 0);
    CHECK(m && m->n == 4 && tdb_meta_find(m, "gone") != NULL);
    tdb_meta_free(m);
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){2, 2}, NULL, &m, &err), 0);
    CHECK(m && m->n == 1 && tdb_meta_find(m, "b") != NULL &&
          tdb_meta_find(m, "a") == NULL);
    tdb_meta_free(m);

    /* A missing folder is no metadata. */
    CHECK_EQ_INT(tdb_meta_load(&io, "nothing/__meta", (struct tdb_ts_window){0, UINT64_MAX}, NULL, &m, &err), 0);
    CHECK(m && m->n == 0);
    tdb_meta_free(m);
    tdb_buf_free(&b);
    tdb_io_free(&io);
}

static void test_meta_vacuum(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    struct tdb_buf b = {0};
    int32_t v1 = 1, v2 = 2, v3 = 3;

    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "k", TDB_INT32, 1, &v1), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "only1", TDB_INT32, 1, &v1), 0);
    put_tile(&io, "__meta/__1_1_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", b.data, b.len);
    tdb_buf_reset(&b);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "k", TDB_INT32, 1, &v2), 0);
    put_tile(&io, "__meta/__2_2_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", b.data, b.len);
    /* The consolidated file: what 1 and 2 make, but with a marker key. */
    tdb_buf_reset(&b);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "k", TDB_INT32, 1, &v2), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "only1", TDB_INT32, 1, &v1), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "cons", TDB_INT32, 1, &v3), 0);
    put_tile(&io, "__meta/__1_2_cccccccccccccccccccccccccccccccc", b.data, b.len);
    put_file(&io, "__meta/__1_2_cccccccccccccccccccccccccccccccc.vac",
             "/__meta/__1_1_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nfile:///abs/arr/__meta/__2_2_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n");

    struct tdb_meta *m = NULL;
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){0, UINT64_MAX}, NULL, &m, &err),
                 0);
    CHECK(m && m->n == 3 && tdb_meta_find(m, "cons"));
    tdb_meta_free(m);

    struct tdb_ts_file *f;
    size_t n;
    CHECK_EQ_INT(tdb_ts_files_list(&io, "__meta", (struct tdb_ts_window){0, UINT64_MAX}, &f, &n, &err), 0);
    CHECK(n == 1 && strcmp(f[0].name, "__1_2_cccccccccccccccccccccccccccccccc") == 0);
    tdb_ts_files_free(f, n);

    /* Opened at [2, 9] the consolidated file and its vacuum file fall out
     * of range: only file 2 is read. */
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){2, 9}, NULL, &m, &err), 0);
    CHECK(m && m->n == 1 && !tdb_meta_find(m, "cons"));
    tdb_meta_free(m);
    /* Opened at [0, 1]: only file 1. */
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){0, 1}, NULL, &m, &err), 0);
    CHECK(m && m->n == 2 && !tdb_meta_find(m, "cons"));
    tdb_meta_free(m);
    tdb_buf_free(&b);
    tdb_io_free(&io);
}

static void test_meta_truncated(void)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    uint16_t v = 7;
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "key", TDB_UINT16, 1, &v), 0);
    size_t b1 = b.len;
    CHECK_EQ_INT(tdb_meta_serialize_del(&b, "key"), 0);
    size_t b2 = b.len;
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "str", TDB_CHAR, 5, "hello"), 0);
    for (size_t len = 0; len <= b.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.data, len);
        struct tdb_meta m = {0};
        int r = tdb_meta_apply(&m, copy, len, "t", &err);
        bool boundary = len == 0 || len == b1 || len == b2 || len == b.len;
        CHECK_EQ_INT(r, boundary ? 0 : TDB_E_CORRUPT);
        if (r)
            CHECK(strstr(err.msg, "t: ") == err.msg);
        if (len == b.len)
            CHECK(m.n == 1 && m.v[0].size == 5 &&
                  memcmp(m.v[0].value, "hello", 5) == 0);
        for (size_t i = 0; i < m.n; i++) {
            free(m.v[i].key);
            free(m.v[i].value);
        }
        free(m.v);
        free(copy);
    }
    /* An unknown datatype and a huge count are errors. */
    uint8_t bad[] = {1, 0, 0, 0, 'k', 0, 200, 1, 0, 0, 0, 0};
    struct tdb_meta m = {0};
    CHECK_EQ_INT(tdb_meta_apply(&m, bad, sizeof bad, "t", &err),
                 TDB_E_CORRUPT);
    uint8_t huge[] = {1, 0, 0, 0, 'k', 0, TDB_FLOAT64, 0xff, 0xff, 0xff, 0xff};
    CHECK_EQ_INT(tdb_meta_apply(&m, huge, sizeof huge, "t", &err),
                 TDB_E_CORRUPT);
    CHECK_EQ_INT(m.n, 0);
    free(m.v);
    /* Writers refuse a bad type. */
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "x", 99, 1, &v), TDB_E_INVAL);
    tdb_buf_free(&b);

    /* A corrupt file inside a folder fails the load, naming the file. */
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    put_tile(&io, "__meta/__1_1_dddddddddddddddddddddddddddddddd", bad, 7);
    struct tdb_meta *mm = NULL;
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){0, UINT64_MAX}, NULL, &mm, &err),
                 TDB_E_CORRUPT);
    CHECK(mm == NULL && strstr(err.msg, "__meta/__1_1_dddddddddddddddddddddddddddddddd") != NULL);
    tdb_io_free(&io);
}

int main(void)
{
    RUN(test_meta_overrides);
    RUN(test_meta_vacuum);
    RUN(test_meta_truncated);
    RUN_CORPUS(test_corpus_metadata);
    return unit_done();
}
