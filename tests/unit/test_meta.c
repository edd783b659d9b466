/* test_meta.c: array/group metadata, group members and delete conditions
 * (format/model/meta.c, format/model/group.c, format/model/delcond.c) against the corpus and
 * hand-built inputs. */
#include "support.h"
#include "condtree.h"
#include "groupfile.h"

#include "model/arraydir.h"
#include "model/delcond.h"
#include "model/generic_tile.h"
#include "model/meta.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- helpers */

/* Writes `size` bytes as one generic tile at `path` of an in-memory io. */
static void put_tile(struct tdb_io *io, const char *path, const void *p,
                     size_t size)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    int r = tdb_generic_tile_encode(p, size,
                                    &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1},
                                    NULL, &b, &err);
    CHECK_EQ_INT(r, 0);
    if (r == 0)
        CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, b.data, b.len), 0);
    tdb_buf_free(&b);
}

static void put_file(struct tdb_io *io, const char *path, const char *text)
{
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, text, strlen(text)), 0);
}

/* ---------------------------------------------- a small case.json reader */

/* Skips one JSON value starting at p (whitespace first); @return the end. */
static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == ',' ||
           *p == ':')
        p++;
    return p;
}

static const char *js_skip_string(const char *p)
{
    p++;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        p++;
    }
    return *p ? p + 1 : p;
}

static const char *js_skip(const char *p)
{
    p = js_ws(p);
    if (*p == '"')
        return js_skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') {
                p = js_skip_string(p);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            if (*p == '}' || *p == ']') {
                depth--;
                if (depth == 0)
                    return p + 1;
            }
            p++;
        }
        return p;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']')
        p++;
    return p;
}

/* Copies the (unescaped, simple) string at p into out. */
static const char *js_string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    p++;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        if (n + 1 < cap)
            out[n++] = *p;
        p++;
    }
    out[n] = 0;
    return *p ? p + 1 : p;
}

/* In object `obj` (pointing at '{'), finds member `key`'s value. */
static const char *js_get(const char *obj, const char *key)
{
    if (!obj)
        return NULL;
    obj = js_ws(obj);
    if (*obj != '{')
        return NULL;
    const char *p = obj + 1;
    for (;;) {
        p = js_ws(p);
        if (*p != '"')
            return NULL;
        char k[512];
        p = js_string(p, k, sizeof k);
        p = js_ws(p);
        if (strcmp(k, key) == 0)
            return p;
        p = js_skip(p);
    }
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
    int r = tdb_meta_load(io, mdir, (struct tdb_ts_window){t0, t1},
                          key, &m, &err);
    free(mdir);
    if (r) {
        fprintf(stderr, "  %s: %s\n", what, err.msg);
        CHECK_EQ_INT(r, 0);
        return;
    }
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
    /* Every expected file is a key with these exact bytes. */
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

static void test_corpus_group_members(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/group_basic/array", unit_corpus());
    if (!unit_corpus_case("group_basic"))
        return;
    struct tdb_io io;
    struct tdb_error err = {0};
    struct tdb_group *g = NULL;
    CHECK_EQ_INT(tdb_io_posix(&io, path), 0);
    CHECK_EQ_INT(tdb_group_load(&io, "", 0, UINT64_MAX, &g, &err), 0);
    if (g) {
        CHECK_EQ_INT(g->version, 2);
        CHECK_EQ_INT(g->n, 3);
        const char *names[] = {"dense_arr", "sparse_arr", "sub"};
        const char *uris[] = {"arrays/d1", "s1", "nested"};
        for (size_t i = 0; i < 3 && i < g->n; i++) {
            CHECK(strcmp(g->v[i].name, names[i]) == 0);
            CHECK(strcmp(g->v[i].uri, uris[i]) == 0);
            CHECK(g->v[i].relative);
            /* The expected tree has a folder per member. */
            char ep[4200];
            snprintf(ep, sizeof ep, "%s/group_basic/expected/%s",
                     unit_corpus(), g->v[i].name);
            CHECK(unit_is_dir(ep));
        }
        if (g->n == 3) {
            CHECK_EQ_INT(g->v[2].type, 1);
            char *sub = tdb_group_member_path(&g->v[2], "");
            struct tdb_group *s = NULL;
            CHECK_EQ_INT(tdb_group_load(&io, sub, 0, UINT64_MAX, &s, &err),
                         0);
            CHECK(s && s->n == 1 && strcmp(s->v[0].name, "inner") == 0 &&
                  strcmp(s->v[0].uri, "x") == 0 && s->v[0].type == 2);
            tdb_group_free(s);
            free(sub);
        }
        /* Opening before the group was written: no members. */
        struct tdb_group *early = NULL;
        CHECK_EQ_INT(tdb_group_load(&io, "", 0, 5, &early, &err), 0);
        CHECK(early && early->n == 0);
        tdb_group_free(early);
    }
    tdb_group_free(g);
    tdb_io_free(&io);
}

/* -------------------------------------------------- corpus sparse_delete */

struct frag_cells {
    uint64_t t;
    size_t n;
    int32_t *x, *y, *a;
    uint64_t *off;
    char *s;
    size_t s_len;
};

static bool load_frag(const char *dir, struct frag_cells *f)
{
    char p[4200];
    size_t lx, ly, la, lo;
    snprintf(p, sizeof p, "%s/x", dir);
    f->x = (int32_t *)unit_slurp(p, &lx);
    snprintf(p, sizeof p, "%s/y", dir);
    f->y = (int32_t *)unit_slurp(p, &ly);
    snprintf(p, sizeof p, "%s/a", dir);
    f->a = (int32_t *)unit_slurp(p, &la);
    snprintf(p, sizeof p, "%s/s.offsets", dir);
    f->off = (uint64_t *)unit_slurp(p, &lo);
    snprintf(p, sizeof p, "%s/s", dir);
    f->s = unit_slurp(p, &f->s_len);
    f->n = lx / 4;
    return f->x && f->y && f->a && f->off && f->s && ly == lx && la == lx &&
           lo == f->n * 8;
}

static void free_frag(struct frag_cells *f)
{
    free(f->x);
    free(f->y);
    free(f->a);
    free(f->off);
    free(f->s);
}

struct cell_ref {
    const struct frag_cells *f;
    size_t i;
};

static int cell_get(void *arg, const char *name, const uint8_t **val,
                    uint64_t *size, unsigned *type, bool *is_null)
{
    const struct cell_ref *c = arg;
    *is_null = false;
    if (strcmp(name, "a") == 0) {
        *val = (const uint8_t *)&c->f->a[c->i];
        *size = 4;
        *type = TDB_INT32;
    } else if (strcmp(name, "x") == 0 || strcmp(name, "y") == 0) {
        *val = (const uint8_t *)(name[0] == 'x' ? &c->f->x[c->i]
                                                : &c->f->y[c->i]);
        *size = 4;
        *type = TDB_INT32;
    } else if (strcmp(name, "s") == 0) {
        uint64_t b = c->f->off[c->i];
        uint64_t e = c->i + 1 < c->f->n ? c->f->off[c->i + 1] : c->f->s_len;
        *val = (const uint8_t *)c->f->s + b;
        *size = e - b;
        *type = TDB_STRING_ASCII;
    } else {
        return TDB_E_NOENT;
    }
    return 0;
}

static bool cell_same(const struct frag_cells *f, size_t i,
                      const struct frag_cells *g, size_t j, bool values)
{
    if (f->x[i] != g->x[j] || f->y[i] != g->y[j])
        return false;
    if (!values)
        return true;
    uint64_t fb = f->off[i], fe = i + 1 < f->n ? f->off[i + 1] : f->s_len;
    uint64_t gb = g->off[j], ge = j + 1 < g->n ? g->off[j + 1] : g->s_len;
    return f->a[i] == g->a[j] && fe - fb == ge - gb &&
           memcmp(f->s + fb, g->s + gb, fe - fb) == 0;
}

static void test_corpus_delete(void)
{
    char root[4096];
    snprintf(root, sizeof root, "%s/sparse_delete", unit_corpus());
    if (!unit_corpus_case("sparse_delete"))
        return;
    char p[8192];
    snprintf(p, sizeof p, "%s/case.json", root);
    char *json = unit_slurp(p, NULL);
    CHECK(json != NULL);
    if (!json)
        return;

    /* The delete commit. */
    snprintf(p, sizeof p, "%s/array", root);
    struct tdb_io io;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_posix(&io, p), 0);
    struct tdb_names names;
    CHECK_EQ_INT(tdb_io_names(&io, "__commits", &names, &err), 0);
    char delname[512] = "";
    for (size_t i = 0; i < names.n; i++) {
        size_t l = strlen(names.v[i]);
        if (l > 4 && strcmp(names.v[i] + l - 4, ".del") == 0)
            snprintf(delname, sizeof delname, "%s", names.v[i]);
    }
    tdb_names_free(&names);
    CHECK(delname[0] != 0);
    struct tdb_tsname dts;
    CHECK_EQ_INT(tdb_tsname_parse(delname, &dts), 0);
    char delpath[600];
    snprintf(delpath, sizeof delpath, "__commits/%s", delname);
    struct tdb_cond *cond = NULL;
    int r = tdb_cond_load(&io, delpath, NULL, &cond, &err);
    CHECK_EQ_INT(r, 0);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    const char **fields;
    CHECK_EQ_INT(tdb_cond_fields(cond, &fields), 1);
    if (cond && tdb_cond_fields(cond, &fields) == 1)
        CHECK(strcmp(fields[0], "a") == 0);

    /* The fragments, oldest first, and the merged view. */
    struct frag_cells frags[8] = {{0}}, merged = {0};
    size_t nf = 0;
    const char *fl = js_ws(js_get(json, "fragments"));
    if (fl && *fl == '[') {
        const char *q = fl + 1;
        while (nf < 8 && *(q = js_ws(q)) == '"') {
            char fname[256];
            q = js_string(q, fname, sizeof fname);
            struct tdb_tsname ts;
            CHECK_EQ_INT(tdb_tsname_parse(fname, &ts), 0);
            frags[nf].t = ts.t1;
            snprintf(p, sizeof p, "%s/expected/__fragments/%s", root, fname);
            CHECK(load_frag(p, &frags[nf]));
            nf++;
        }
    }
    CHECK_EQ_INT(nf, 3);
    snprintf(p, sizeof p, "%s/expected", root);
    CHECK(load_frag(p, &merged));

    /* A cell is visible iff no newer fragment rewrote its coordinates and,
     * for cells no newer than the delete, the condition spares it. */
    size_t deleted = 0, visible = 0;
    for (size_t k = 0; cond && k < nf; k++) {
        for (size_t i = 0; i < frags[k].n; i++) {
            struct cell_ref ref = {&frags[k], i};
            struct tdb_cell_view view = {.get = cell_get, .arg = &ref};
            int del = 0;
            if (frags[k].t <= dts.t1) {
                del = tdb_cond_eval(cond, &view, &err);
                CHECK(del == 0 || del == 1);
                /* The user's condition was a < 0. */
                CHECK_EQ_INT(del, frags[k].a[i] < 0);
            }
            bool overwritten = false;
            for (size_t l = k + 1; l < nf && !overwritten; l++)
                for (size_t j = 0; j < frags[l].n && !overwritten; j++)
                    overwritten = cell_same(&frags[k], i, &frags[l], j,
                                            false);
            bool in_view = false;
            for (size_t j = 0; j < merged.n && !in_view; j++)
                in_view = cell_same(&frags[k], i, &merged, j, true);
            bool want = del == 0 && !overwritten;
            if (in_view != want)
                fprintf(stderr, "  cell (%d,%d) a=%d of t=%llu: in view %d, "
                        "expected %d\n", frags[k].x[i], frags[k].y[i],
                        frags[k].a[i], (unsigned long long)frags[k].t,
                        in_view, want);
            CHECK(in_view == want);
            deleted += del == 1;
            visible += want;
        }
    }
    CHECK(deleted > 0);
    CHECK_EQ_INT(visible, merged.n);
    printf("  sparse_delete: %zu cells deleted, %zu visible\n", deleted,
           visible);
    for (size_t k = 0; k < nf; k++)
        free_frag(&frags[k]);
    free_frag(&merged);
    tdb_cond_free(cond);
    tdb_io_free(&io);
    free(json);
}

/* ------------------------------------------------ hand-built metadata */

static void test_meta_overrides(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    struct tdb_buf b = {0};
    int32_t one = 1, two[2] = {2, 3};
    double pi = 3.25;

    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "b", TDB_INT32, 1, &one), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "a", TDB_FLOAT64, 1, &pi), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "gone", TDB_INT32, 1, &one), 0);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "e", TDB_STRING_UTF8, 0, ""), 0);
    /* The exact encoding of one put. */
    static const uint8_t first[] = {1, 0, 0, 0, 'b', 0, 0, 1, 0, 0, 0,
                                    1, 0, 0, 0};
    CHECK_MEM(b.data, first, sizeof first);
    put_tile(&io, "__meta/__1_1_0123456789abcdef0123456789abcdef", b.data,
             b.len);
    tdb_buf_reset(&b);
    CHECK_EQ_INT(tdb_meta_serialize_put(&b, "b", TDB_INT32, 2, two), 0);
    CHECK_EQ_INT(tdb_meta_serialize_del(&b, "gone"), 0);
    CHECK_EQ_INT(tdb_meta_serialize_del(&b, "never"), 0);
    static const uint8_t del[] = {4, 0, 0, 0, 'g', 'o', 'n', 'e', 1};
    CHECK_MEM(b.data + 19, del, sizeof del);
    put_tile(&io, "__meta/__2_2_1123456789abcdef0123456789abcdef", b.data,
             b.len);
    /* An unfinished write is ignored. */
    put_tile(&io, "__meta/__3_3_2123456789abcdef0123456789abcdef.tmp",
             "junk", 4);

    struct tdb_meta *m = NULL;
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", TDB_TS_ALL, NULL, &m, &err),
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

    /* Time travel: [0,1] sees the first file only; [2,2] the second only
     * (a range starting at 2 drops what was written at 1). */
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){0, 1},
                               NULL, &m, &err), 0);
    CHECK(m && m->n == 4 && tdb_meta_find(m, "gone") != NULL);
    tdb_meta_free(m);
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){2, 2},
                               NULL, &m, &err), 0);
    CHECK(m && m->n == 1 && tdb_meta_find(m, "b") != NULL &&
          tdb_meta_find(m, "a") == NULL);
    tdb_meta_free(m);

    /* A missing folder is no metadata. */
    CHECK_EQ_INT(tdb_meta_load(&io, "nothing/__meta", TDB_TS_ALL, NULL,
                               &m, &err), 0);
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
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", TDB_TS_ALL, NULL, &m, &err),
                 0);
    CHECK(m && m->n == 3 && tdb_meta_find(m, "cons"));
    tdb_meta_free(m);

    struct tdb_ts_file *f;
    size_t n;
    CHECK_EQ_INT(tdb_ts_files_list(&io, "__meta", TDB_TS_ALL, &f, &n,
                                   &err), 0);
    CHECK(n == 1 && strcmp(f[0].name, "__1_2_cccccccccccccccccccccccccccccccc") == 0);
    tdb_ts_files_free(f, n);

    /* Opened at [2, 9] the consolidated file and its vacuum file fall out
     * of range: only file 2 is read. */
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){2, 9},
                               NULL, &m, &err), 0);
    CHECK(m && m->n == 1 && !tdb_meta_find(m, "cons"));
    tdb_meta_free(m);
    /* Opened at [0, 1]: only file 1. */
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", (struct tdb_ts_window){0, 1},
                               NULL, &m, &err), 0);
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
    CHECK_EQ_INT(tdb_meta_load(&io, "__meta", TDB_TS_ALL, NULL, &mm, &err),
                 TDB_E_CORRUPT);
    CHECK(mm == NULL && strstr(err.msg, "__meta/__1_1_dddddddddddddddddddddddddddddddd") != NULL);
    tdb_io_free(&io);
}

/* ---------------------------------------------------- hand-built groups */

static void test_group_files(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    struct tdb_buf b = {0};

    tdb_buf_put_u32(&b, 2);
    tdb_buf_put_u64(&b, 3);
    group_member(&b, 2, 2, true, "arrays/zeta", "alpha", false);
    group_member(&b, 2, 1, true, "sub/g", NULL, false);
    group_member(&b, 2, 2, false, "file:///data/x/", NULL, false);
    put_tile(&io, "grp/__group/__10_10_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_2", b.data, b.len);
    tdb_buf_reset(&b);
    tdb_buf_put_u32(&b, 2);
    tdb_buf_put_u64(&b, 2);
    group_member(&b, 2, 2, true, "arrays/zeta", "alpha", true);
    group_member(&b, 2, 2, true, "b", "beta", false);
    put_tile(&io, "grp/__group/__20_20_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb_2", b.data, b.len);

    struct tdb_group *g = NULL;
    CHECK_EQ_INT(tdb_group_load(&io, "grp", 0, UINT64_MAX, &g, &err), 0);
    if (g) {
        CHECK_EQ_INT(g->n, 3);
        if (g->n == 3) {
            CHECK(strcmp(g->v[0].name, "beta") == 0);
            CHECK(strcmp(g->v[1].name, "g") == 0 && !g->v[1].name_set &&
                  g->v[1].type == 1);
            CHECK(strcmp(g->v[2].name, "x") == 0 && !g->v[2].relative);
            char *p = tdb_group_member_path(&g->v[0], "grp");
            CHECK(p && strcmp(p, "grp/b") == 0);
            free(p);
            p = tdb_group_member_path(&g->v[2], "grp");
            CHECK(p && strcmp(p, "/data/x/") == 0);
            free(p);
        }
    }
    tdb_group_free(g);
    /* As of 15 the deletion and "beta" are not written yet. */
    CHECK_EQ_INT(tdb_group_load(&io, "grp", 0, 15, &g, &err), 0);
    CHECK(g && g->n == 3 && strcmp(g->v[0].name, "alpha") == 0);
    tdb_group_free(g);

    /* Version 1: only the latest file counts. */
    tdb_buf_reset(&b);
    tdb_buf_put_u32(&b, 1);
    tdb_buf_put_u64(&b, 1);
    group_member(&b, 1, 2, true, "old", NULL, false);
    put_tile(&io, "g1/__group/__1_1_cccccccccccccccccccccccccccccccc", b.data, b.len);
    tdb_buf_reset(&b);
    tdb_buf_put_u32(&b, 1);
    tdb_buf_put_u64(&b, 1);
    group_member(&b, 1, 2, true, "new", "n", false);
    put_tile(&io, "g1/__group/__2_2_dddddddddddddddddddddddddddddddd_1", b.data, b.len);
    CHECK_EQ_INT(tdb_group_load(&io, "g1", 0, UINT64_MAX, &g, &err), 0);
    CHECK(g && g->version == 1 && g->n == 1 &&
          strcmp(g->v[0].name, "n") == 0);
    tdb_group_free(g);

    /* A version-1 file among version-2 names is refused. */
    put_tile(&io, "g2/__group/__1_1_eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee_2", b.data, b.len);
    CHECK_EQ_INT(tdb_group_load(&io, "g2", 0, UINT64_MAX, &g, &err),
                 TDB_E_UNSUPPORTED);
    CHECK(g == NULL);
    tdb_buf_free(&b);
    tdb_io_free(&io);
}

static void test_group_truncated(void)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    tdb_buf_put_u32(&b, 2);
    tdb_buf_put_u64(&b, 2);
    group_member(&b, 2, 2, true, "arr", "name", false);
    group_member(&b, 2, 1, true, "grp", NULL, false);
    for (size_t len = 0; len <= b.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.data, len);
        struct tdb_group *g = calloc(1, sizeof *g);
        int r = tdb_group_apply(g, copy, len, "t", &err);
        if (len < b.len)
            CHECK(r == TDB_E_CORRUPT);
        else
            CHECK(r == 0 && g->n == 2);
        tdb_group_free(g);
        free(copy);
    }
    /* A member count far beyond the bytes does not hang or allocate. */
    uint8_t big[12] = {2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                       0xff, 0xff, 0xff, 0xff};
    struct tdb_group *g = calloc(1, sizeof *g);
    CHECK_EQ_INT(tdb_group_apply(g, big, sizeof big, "t", &err),
                 TDB_E_CORRUPT);
    tdb_group_free(g);
    tdb_buf_free(&b);
}

/* ------------------------------------------------- delete conditions */

/* One test cell: an int32 "i", a float64 "f", a string "s" (NULL: null),
 * a fixed CHAR "c". */
struct tcell {
    int32_t i;
    double f;
    const char *s;
    char c;
    bool i_null;
};

static int tcell_get(void *arg, const char *name, const uint8_t **val,
                     uint64_t *size, unsigned *type, bool *is_null)
{
    const struct tcell *c = arg;
    *is_null = false;
    if (strcmp(name, "i") == 0) {
        *val = (const uint8_t *)&c->i;
        *size = 4;
        *type = TDB_INT32;
        *is_null = c->i_null;
    } else if (strcmp(name, "f") == 0) {
        *val = (const uint8_t *)&c->f;
        *size = 8;
        *type = TDB_FLOAT64;
    } else if (strcmp(name, "s") == 0) {
        *val = (const uint8_t *)(c->s ? c->s : "");
        *size = c->s ? strlen(c->s) : 0;
        *type = TDB_STRING_UTF8;
        *is_null = c->s == NULL;
    } else if (strcmp(name, "c") == 0) {
        *val = (const uint8_t *)&c->c;
        *size = 1;
        *type = TDB_CHAR;
    } else if (strcmp(name, "evolved") == 0) {
        return 1;
    } else {
        return TDB_E_NOENT;
    }
    return 0;
}

static bool tcell_is_var(void *arg, const char *name)
{
    return strcmp(name, "c") != 0;
}

/* Evaluates condition bytes b on cell c: 1 deleted, 0 kept, <0 error. */
static int eval_on(const struct tdb_buf *b, struct tcell *c)
{
    struct tdb_cond *cond = NULL;
    struct tdb_error err = {0};
    int r = tdb_cond_parse(b->data, b->len, "t.del", &cond, &err);
    if (r)
        return r;
    struct tdb_cell_view v = {.get = tcell_get, .arg = c,
                              .is_var = tcell_is_var};
    r = tdb_cond_eval(cond, &v, &err);
    tdb_cond_free(cond);
    return r;
}

static void test_cond_eval(void)
{
    struct tdb_buf b = {0};
    struct tcell c = {.i = 5, .f = 1.5, .s = "bob", .c = 'x'};
    int32_t k = 5;

    /* Stored conditions are the cells to keep: "i >= 5" deletes i < 5. */
    cond_value(&b, 3, "i", &k, 4);
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.i = 4;
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.i = -7;
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    /* A null cell fails every ordering test: deleted. */
    c.i_null = true;
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.i_null = false;

    /* Each comparison operator on int32. */
    static const int want[6][3] = {/* i = 4, 5, 6 vs 5; 1 = kept */
                                   {1, 0, 0}, {1, 1, 0}, {0, 0, 1},
                                   {0, 1, 1}, {0, 1, 0}, {1, 0, 1}};
    for (uint8_t op = 0; op < 6; op++) {
        for (int j = 0; j < 3; j++) {
            tdb_buf_reset(&b);
            cond_value(&b, op, "i", &k, 4);
            c.i = 4 + j;
            CHECK_EQ_INT(eval_on(&b, &c), !want[op][j]);
        }
    }

    /* Null tests (value-less): keep "i != NULL" deletes null cells. */
    tdb_buf_reset(&b);
    cond_value(&b, 5, "i", "", 0);
    c.i_null = true;
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.i_null = false;
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    tdb_buf_reset(&b);
    cond_value(&b, 4, "i", "", 0);
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_value(&b, 0, "i", "", 0);
    CHECK(eval_on(&b, &c) < 0);

    /* Floats: NaN is unordered. */
    double lim = 1.0;
    tdb_buf_reset(&b);
    cond_value(&b, 2, "f", &lim, 8);
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.f = NAN;
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_value(&b, 5, "f", &lim, 8);
    CHECK_EQ_INT(eval_on(&b, &c), 0);

    /* Strings compare bytewise, a prefix first. */
    tdb_buf_reset(&b);
    cond_value(&b, 0, "s", "bobby", 5);
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.s = "c";
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.s = "\xc3\xa9";
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.s = NULL;
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_value(&b, 5, "s", "", 0);      /* as TileDB reads "s != NULL" */
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.s = "x";
    CHECK_EQ_INT(eval_on(&b, &c), 0);

    /* Sets. */
    static const char *const set[] = {"ann", "bob", "carol"};
    tdb_buf_reset(&b);
    cond_set(&b, 6, "s", set, 3, 0);
    c.s = "bob";
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.s = "bo";
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_set(&b, 7, "s", set, 3, 0);
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.s = "carol";
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.s = NULL;
    CHECK_EQ_INT(eval_on(&b, &c), 1);

    /* Fixed CHAR compares one signed char: 0x80 < 'a'. */
    tdb_buf_reset(&b);
    cond_value(&b, 2, "c", "a", 1);
    c.c = 'z';
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.c = (char)0x80;
    CHECK_EQ_INT(eval_on(&b, &c), 1);

    /* AND / OR trees: keep (i >= 5 AND (s == "bob" OR f < 1)). */
    c = (struct tcell){.i = 6, .f = 5, .s = "bob", .c = 'x'};
    tdb_buf_reset(&b);
    cond_expr(&b, 0, 2);
    cond_value(&b, 3, "i", &k, 4);
    cond_expr(&b, 1, 2);
    cond_value(&b, 4, "s", "bob", 3);
    cond_value(&b, 0, "f", &lim, 8);
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.s = "eve";
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    c.f = 0.5;
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    c.i = 1;
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    struct tdb_cond *cond = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_cond_parse(b.data, b.len, "t", &cond, &err), 0);
    const char **names;
    CHECK_EQ_INT(tdb_cond_fields(cond, &names), 3);
    tdb_cond_free(cond);

    /* A field missing from the cell's fragment makes its test false; an
     * unknown field is an error; ALWAYS_TRUE keeps everything. */
    tdb_buf_reset(&b);
    cond_value(&b, 4, "evolved", &k, 4);
    CHECK_EQ_INT(eval_on(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_value(&b, 4, "nosuch", &k, 4);
    CHECK_EQ_INT(eval_on(&b, &c), TDB_E_NOENT);
    tdb_buf_reset(&b);
    cond_value(&b, 253, "i", "", 0);
    CHECK_EQ_INT(eval_on(&b, &c), 0);
    /* A value shorter than the type is an error, not an overread. */
    tdb_buf_reset(&b);
    cond_value(&b, 4, "f", &k, 4);
    CHECK_EQ_INT(eval_on(&b, &c), TDB_E_CORRUPT);
    /* NOT takes exactly one child; unknown ops and types are refused. */
    tdb_buf_reset(&b);
    cond_expr(&b, 2, 2);
    cond_value(&b, 4, "i", &k, 4);
    cond_value(&b, 4, "i", &k, 4);
    CHECK_EQ_INT(eval_on(&b, &c), TDB_E_CORRUPT);
    tdb_buf_reset(&b);
    cond_value(&b, 9, "i", &k, 4);
    CHECK_EQ_INT(eval_on(&b, &c), TDB_E_CORRUPT);
    tdb_buf_reset(&b);
    cond_expr(&b, 0, 1);
    cond_value(&b, 4, "i", &k, 4);
    CHECK_EQ_INT(eval_on(&b, &c), TDB_E_CORRUPT);
    tdb_buf_free(&b);
}

static void test_cond_truncated(void)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    static const char *const set[] = {"a", "bc"};
    int32_t k = 1;
    cond_expr(&b, 1, 3);
    cond_value(&b, 0, "i", &k, 4);
    cond_set(&b, 6, "s", set, 2, 0);
    cond_expr(&b, 0, 2);
    cond_value(&b, 5, "s", "", 0);
    cond_value(&b, 3, "f", "12345678", 8);
    for (size_t len = 0; len < b.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.data, len);
        struct tdb_cond *c = NULL;
        int r = tdb_cond_parse(copy, len, "t.del", &c, &err);
        CHECK_EQ_INT(r, TDB_E_CORRUPT);
        CHECK(c == NULL);
        free(copy);
    }
    struct tdb_cond *c = NULL;
    CHECK_EQ_INT(tdb_cond_parse(b.data, b.len, "t.del", &c, &err), 0);
    tdb_cond_free(c);
    /* Every byte flipped: an error or a tree, never a crash. */
    for (size_t i = 0; i < b.len; i++) {
        for (int v = 0; v < 256; v += 51) {
            uint8_t *copy = malloc(b.len);
            memcpy(copy, b.data, b.len);
            copy[i] ^= (uint8_t)(v | 1);
            c = NULL;
            int r = tdb_cond_parse(copy, b.len, "t.del", &c, &err);
            if (r == 0) {
                struct tcell cell = {.i = 1, .f = 2, .s = "bc"};
                struct tdb_cell_view view = {.get = tcell_get, .arg = &cell};
                int e = tdb_cond_eval(c, &view, &err);
                CHECK(e == 0 || e == 1 || e < 0);
            }
            tdb_cond_free(c);
            free(copy);
        }
    }
    /* Bad set offsets. */
    tdb_buf_reset(&b);
    tdb_buf_put_u8(&b, 1);
    tdb_buf_put_u8(&b, 6);
    tdb_buf_put_u32(&b, 1);
    tdb_buf_append(&b, "s", 1);
    tdb_buf_put_u64(&b, 3);
    tdb_buf_append(&b, "abc", 3);
    tdb_buf_put_u64(&b, 16);
    tdb_buf_put_u64(&b, 2);
    tdb_buf_put_u64(&b, 1);             /* decreasing */
    CHECK_EQ_INT(tdb_cond_parse(b.data, b.len, "t", &c, &err),
                 TDB_E_CORRUPT);
    /* Deep nesting is refused, not recursed without bound. */
    tdb_buf_reset(&b);
    for (int i = 0; i < 1000; i++)
        cond_expr(&b, 0, 2);
    CHECK_EQ_INT(tdb_cond_parse(b.data, b.len, "t", &c, &err),
                 TDB_E_CORRUPT);
    tdb_buf_free(&b);

    /* Through a generic tile in a file. */
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    tdb_buf_reset(&b);
    cond_value(&b, 3, "i", &k, 4);
    put_tile(&io, "__commits/__3_3_ffffffffffffffffffffffffffffffff_22.del", b.data, b.len);
    CHECK_EQ_INT(tdb_cond_load(&io, "__commits/__3_3_ffffffffffffffffffffffffffffffff_22.del", NULL, &c,
                               &err), 0);
    tdb_cond_free(c);
    CHECK(tdb_cond_load(&io, "__commits/none.del", NULL, &c, &err) < 0);
    tdb_buf_free(&b);
    tdb_io_free(&io);
}

int main(void)
{
    RUN(test_meta_overrides);
    RUN(test_meta_vacuum);
    RUN(test_meta_truncated);
    RUN(test_group_files);
    RUN(test_group_truncated);
    RUN(test_cond_eval);
    RUN(test_cond_truncated);
    RUN_CORPUS(test_corpus_metadata);
    RUN_CORPUS(test_corpus_group_members);
    RUN_CORPUS(test_corpus_delete);
    return unit_done();
}
