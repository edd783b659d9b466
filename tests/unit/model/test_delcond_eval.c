/* test_delcond_eval.c: delete conditions (format/model/delcond.c)
 * evaluated on typed cells: hand-built trees (condtree.h) of every
 * operator on fixed, var-sized and nullable fields, comparisons and sets
 * on datatypes conditions cannot compare refused, truncated trees, and
 * the corpus's delete commits applied to the cells of its fragments as
 * its case.json says TileDB applied them.  test_delcond.c has the rest of
 * delcond.c's tests. */
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

/* The array's delete commit under `root`: its condition (on field a
 * only) and its timestamps `dts`. */
static struct tdb_cond *load_delete(const struct tdb_io *io,
                                    struct tdb_tsname *dts)
{
    struct tdb_error err = {0};
    struct tdb_names names;
    CHECK_EQ_INT(tdb_io_names(io, "__commits", &names, &err), 0);
    char delname[512] = "";
    for (size_t i = 0; i < names.n; i++) {
        size_t l = strlen(names.v[i]);
        if (l > 4 && strcmp(names.v[i] + l - 4, ".del") == 0)
            snprintf(delname, sizeof delname, "%s", names.v[i]);
    }
    tdb_names_free(&names);
    CHECK(delname[0] != 0);
    CHECK_EQ_INT(tdb_tsname_parse(delname, dts), 0);
    char delpath[600];
    snprintf(delpath, sizeof delpath, "__commits/%s", delname);
    struct tdb_cond *cond = NULL;
    int r = tdb_cond_load(io, delpath, NULL, &cond, &err);
    CHECK_EQ_INT(r, 0);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    const char **fields;
    CHECK_EQ_INT(tdb_cond_fields(cond, &fields), 1);
    if (cond && tdb_cond_fields(cond, &fields) == 1)
        CHECK(strcmp(fields[0], "a") == 0);
    return cond;
}

/* The fragments case.json lists, oldest first, into frags[8];
 * @return how many. */
static size_t load_case_frags(const char *json, const char *root,
                              struct frag_cells *frags)
{
    char p[8192];
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
    return nf;
}

/* Cell i of frags[k] is visible iff no newer fragment rewrote its
 * coordinates and, for cells no newer than the delete at `t_del`, the
 * condition spares it.  @return whether the condition deleted it; sets
 * *want to whether it should be visible. */
static int check_cell(const struct tdb_cond *cond, uint64_t t_del,
                      const struct frag_cells *frags, size_t nf, size_t k,
                      size_t i, const struct frag_cells *merged, bool *want)
{
    struct tdb_error err = {0};
    struct cell_ref ref = {&frags[k], i};
    struct tdb_cell_view view = {.get = cell_get, .arg = &ref};
    int del = 0;
    if (frags[k].t <= t_del) {
        del = tdb_cond_eval(cond, &view, &err);
        CHECK(del == 0 || del == 1);
        /* The user's condition was a < 0. */
        CHECK_EQ_INT(del, frags[k].a[i] < 0);
    }
    bool overwritten = false;
    for (size_t l = k + 1; l < nf && !overwritten; l++)
        for (size_t j = 0; j < frags[l].n && !overwritten; j++)
            overwritten = cell_same(&frags[k], i, &frags[l], j, false);
    bool in_view = false;
    for (size_t j = 0; j < merged->n && !in_view; j++)
        in_view = cell_same(&frags[k], i, merged, j, true);
    *want = del == 0 && !overwritten;
    if (in_view != *want)
        fprintf(stderr, "  cell (%d,%d) a=%d of t=%llu: in view %d, "
                "expected %d\n", frags[k].x[i], frags[k].y[i],
                frags[k].a[i], (unsigned long long)frags[k].t,
                in_view, *want);
    CHECK(in_view == *want);
    return del;
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
    snprintf(p, sizeof p, "%s/array", root);
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, p), 0);
    struct tdb_tsname dts;
    struct tdb_cond *cond = load_delete(&io, &dts);
    /* The fragments, oldest first, and the merged view. */
    struct frag_cells frags[8] = {{0}}, merged = {0};
    size_t nf = load_case_frags(json, root, frags);
    CHECK_EQ_INT(nf, 3);
    snprintf(p, sizeof p, "%s/expected", root);
    CHECK(load_frag(p, &merged));
    size_t deleted = 0, visible = 0;
    for (size_t k = 0; cond && k < nf; k++) {
        for (size_t i = 0; i < frags[k].n; i++) {
            bool want;
            deleted += check_cell(cond, dts.t1, frags, nf, k, i, &merged,
                                  &want) == 1;
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

/* Stored conditions are the cells to keep: "i >= 5" deletes i < 5; a null
 * cell fails every ordering test; each comparison operator on int32. */
static void check_eval_int(struct tdb_buf *b)
{
    struct tcell c = {.i = 5, .f = 1.5, .s = "bob", .c = 'x'};
    int32_t k = 5;
    tdb_buf_reset(b);
    cond_value(b, 3, "i", &k, 4);
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.i = 4;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.i = -7;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.i_null = true;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.i_null = false;
    static const int want[6][3] = {/* i = 4, 5, 6 vs 5; 1 = kept */
                                   {1, 0, 0}, {1, 1, 0}, {0, 0, 1},
                                   {0, 1, 1}, {0, 1, 0}, {1, 0, 1}};
    for (uint8_t op = 0; op < 6; op++) {
        for (int j = 0; j < 3; j++) {
            tdb_buf_reset(b);
            cond_value(b, op, "i", &k, 4);
            c.i = 4 + j;
            CHECK_EQ_INT(eval_on(b, &c), !want[op][j]);
        }
    }
}

/* Null tests (value-less): keep "i != NULL" deletes null cells.  Floats:
 * NaN is unordered. */
static void check_eval_null_float(struct tdb_buf *b)
{
    struct tcell c = {.i = 6, .f = 1.5, .s = "bob", .c = 'x'};
    tdb_buf_reset(b);
    cond_value(b, 5, "i", "", 0);
    c.i_null = true;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.i_null = false;
    CHECK_EQ_INT(eval_on(b, &c), 0);
    tdb_buf_reset(b);
    cond_value(b, 4, "i", "", 0);
    CHECK_EQ_INT(eval_on(b, &c), 1);
    tdb_buf_reset(b);
    cond_value(b, 0, "i", "", 0);
    CHECK(eval_on(b, &c) < 0);
    double lim = 1.0;
    tdb_buf_reset(b);
    cond_value(b, 2, "f", &lim, 8);
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.f = NAN;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    tdb_buf_reset(b);
    cond_value(b, 5, "f", &lim, 8);
    CHECK_EQ_INT(eval_on(b, &c), 0);
}

/* Strings compare bytewise, a prefix first; sets; fixed CHAR compares one
 * signed char: 0x80 < 'a'. */
static void check_eval_strings(struct tdb_buf *b)
{
    struct tcell c = {.i = 6, .f = NAN, .s = "bob", .c = 'x'};
    tdb_buf_reset(b);
    cond_value(b, 0, "s", "bobby", 5);
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.s = "c";
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.s = "\xc3\xa9";
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.s = NULL;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    tdb_buf_reset(b);
    cond_value(b, 5, "s", "", 0);      /* as TileDB reads "s != NULL" */
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.s = "x";
    CHECK_EQ_INT(eval_on(b, &c), 0);
    static const char *const set[] = {"ann", "bob", "carol"};
    tdb_buf_reset(b);
    cond_set(b, 6, "s", set, 3, 0);
    c.s = "bob";
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.s = "bo";
    CHECK_EQ_INT(eval_on(b, &c), 1);
    tdb_buf_reset(b);
    cond_set(b, 7, "s", set, 3, 0);
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.s = "carol";
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.s = NULL;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    tdb_buf_reset(b);
    cond_value(b, 2, "c", "a", 1);
    c.c = 'z';
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.c = (char)0x80;
    CHECK_EQ_INT(eval_on(b, &c), 1);
}

/* AND / OR trees: keep (i >= 5 AND (s == "bob" OR f < 1)). */
static void check_eval_tree(struct tdb_buf *b)
{
    struct tcell c = {.i = 6, .f = 5, .s = "bob", .c = 'x'};
    int32_t k = 5;
    double lim = 1.0;
    tdb_buf_reset(b);
    cond_expr(b, 0, 2);
    cond_value(b, 3, "i", &k, 4);
    cond_expr(b, 1, 2);
    cond_value(b, 4, "s", "bob", 3);
    cond_value(b, 0, "f", &lim, 8);
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.s = "eve";
    CHECK_EQ_INT(eval_on(b, &c), 1);
    c.f = 0.5;
    CHECK_EQ_INT(eval_on(b, &c), 0);
    c.i = 1;
    CHECK_EQ_INT(eval_on(b, &c), 1);
    struct tdb_cond *cond = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_cond_parse(b->data, b->len, "t", &cond, &err), 0);
    const char **names;
    CHECK_EQ_INT(tdb_cond_fields(cond, &names), 3);
    tdb_cond_free(cond);
}

/* A field missing from the cell's fragment makes its test false; an
 * unknown field is an error; ALWAYS_TRUE keeps everything.  A value
 * shorter than the type is an error, not an overread.  NOT takes exactly
 * one child; unknown ops and types are refused. */
static void check_eval_errors(struct tdb_buf *b)
{
    struct tcell c = {.i = 1, .f = 0.5, .s = "eve", .c = 'x'};
    int32_t k = 5;
    /* expr_op 255: no expression node, only `nvalues` value nodes */
    static const struct {
        uint8_t expr_op, expr_n, op, nvalues, size;
        const char *field;
        int want;
    } cases[] = {
        {255, 0, 4, 1, 4, "evolved", 1},
        {255, 0, 4, 1, 4, "nosuch", TDB_E_NOENT},
        {255, 0, 253, 1, 0, "i", 0},
        {255, 0, 4, 1, 4, "f", TDB_E_CORRUPT},
        {2, 2, 4, 2, 4, "i", TDB_E_CORRUPT},
        {255, 0, 9, 1, 4, "i", TDB_E_CORRUPT},
        {0, 1, 4, 1, 4, "i", TDB_E_CORRUPT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tdb_buf_reset(b);
        if (cases[i].expr_op != 255)
            cond_expr(b, cases[i].expr_op, cases[i].expr_n);
        for (uint8_t n = 0; n < cases[i].nvalues; n++)
            cond_value(b, cases[i].op, cases[i].field,
                       cases[i].size ? (const void *)&k : "", cases[i].size);
        CHECK_EQ_INT(eval_on(b, &c), cases[i].want);
    }
}

/* A cell of one field "blobby": 4 bytes of datatype `type`. */
struct ucell {
    unsigned type;
    uint8_t v[4];
};

static int ucell_get(void *arg, const char *name, const uint8_t **val,
                     uint64_t *size, unsigned *type, bool *is_null)
{
    const struct ucell *c = arg;
    if (strcmp(name, "blobby") != 0)
        return TDB_E_NOENT;
    *val = c->v;
    *size = sizeof c->v;
    *type = c->type;
    *is_null = false;
    return 0;
}

/* Condition bytes b on cell c, the error in *err: 1, 0 or <0. */
static int ueval(const struct tdb_buf *b, struct ucell *c,
                 struct tdb_error *err)
{
    struct tdb_cond *cond = NULL;
    int r = tdb_cond_parse(b->data, b->len, "t.del", &cond, err);
    CHECK_EQ_INT(r, 0);
    if (r)
        return r;
    struct tdb_cell_view v = {.get = ucell_get, .arg = c};
    r = tdb_cond_eval(cond, &v, err);
    tdb_cond_free(cond);
    return r;
}

/* Condition b on a field of datatype `type` (name `dt`: "unknown" for a
 * datatype TileDB does not have) is refused: TDB_E_UNSUPPORTED, naming the
 * field and the datatype. */
static void check_unsupported_one(const struct tdb_buf *b, unsigned type,
                                  const char *dt)
{
    struct ucell c = {type, {'a', 'b', 'c', 'd'}};
    struct tdb_error err = {0};
    char want[64];
    snprintf(want, sizeof want, "has datatype %s,", dt);
    CHECK_EQ_INT(ueval(b, &c, &err), TDB_E_UNSUPPORTED);
    CHECK_EQ_INT(err.code, TDB_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "field 'blobby'") != NULL);
    CHECK(strstr(err.msg, want) != NULL);
    if (!strstr(err.msg, want))
        fprintf(stderr, "  type %u: \"%s\"\n", type, err.msg);
}

/* Comparisons and sets on datatypes conditions cannot compare (BLOB, ANY,
 * GEOM_WKB, STRING_UTF16, an unknown one) are refused; the same
 * conditions on UINT32 / STRING_ASCII evaluate, and a null test (no
 * value) on a BLOB is no comparison. */
static void test_cond_unsupported(void)
{
    struct tdb_buf b[4] = {{0}};
    static const char *const set[] = {"abcd", "wxyz"};
    static const struct { unsigned type; const char *name; } dts[] = {
        {TDB_BLOB, "BLOB"}, {TDB_ANY, "ANY"}, {TDB_GEOM_WKB, "GEOM_WKB"},
        {TDB_STRING_UTF16, "STRING_UTF16"}, {200, "unknown"},
    };
    cond_value(&b[0], EQ, "blobby", "abcd", 4);
    cond_value(&b[1], LT, "blobby", "abcd", 4);
    cond_set(&b[2], IN, "blobby", set, 2, 0);
    cond_set(&b[3], NOT_IN, "blobby", set, 2, 0);
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
        for (int k = 0; k < 4; k++)
            check_unsupported_one(&b[k], dts[t].type, dts[t].name);
    static const int kept[4] = {1, 0, 1, 0};  /* "abcd" vs each */
    struct tdb_error err = {0};
    for (int k = 0; k < 4; k++) {
        struct ucell u = {TDB_UINT32, {'a', 'b', 'c', 'd'}};
        CHECK_EQ_INT(ueval(&b[k], &u, &err), !kept[k]);
        u.type = TDB_STRING_ASCII;
        CHECK_EQ_INT(ueval(&b[k], &u, &err), !kept[k]);
        tdb_buf_free(&b[k]);
    }
    struct ucell blob = {TDB_BLOB, {1, 2, 3, 4}};
    cond_value(&b[0], NE, "blobby", "", 0);     /* keep "blobby != NULL" */
    CHECK_EQ_INT(ueval(&b[0], &blob, &err), 0);
    tdb_buf_free(&b[0]);
}

static void test_cond_eval(void)
{
    struct tdb_buf b = {0};
    check_eval_int(&b);
    check_eval_null_float(&b);
    check_eval_strings(&b);
    check_eval_tree(&b);
    check_eval_errors(&b);
    tdb_buf_free(&b);
}

/* The tree `b` cut anywhere is an error; every byte flipped gives an
 * error or a tree, never a crash. */
static void check_cond_cuts(const struct tdb_buf *b)
{
    struct tdb_error err = {0};
    for (size_t len = 0; len < b->len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b->data, len);
        struct tdb_cond *c = NULL;
        int r = tdb_cond_parse(copy, len, "t.del", &c, &err);
        CHECK_EQ_INT(r, TDB_E_CORRUPT);
        CHECK(c == NULL);
        free(copy);
    }
    struct tdb_cond *c = NULL;
    CHECK_EQ_INT(tdb_cond_parse(b->data, b->len, "t.del", &c, &err), 0);
    tdb_cond_free(c);
    for (size_t i = 0; i < b->len; i++) {
        for (int v = 0; v < 256; v += 51) {
            uint8_t *copy = malloc(b->len);
            memcpy(copy, b->data, b->len);
            copy[i] ^= (uint8_t)(v | 1);
            c = NULL;
            int r = tdb_cond_parse(copy, b->len, "t.del", &c, &err);
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
}

/* Bad set offsets; deep nesting is refused, not recursed without bound. */
static void check_cond_refused(void)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    struct tdb_cond *c = NULL;
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
    tdb_buf_reset(&b);
    for (int i = 0; i < 1000; i++)
        cond_expr(&b, 0, 2);
    CHECK_EQ_INT(tdb_cond_parse(b.data, b.len, "t", &c, &err),
                 TDB_E_CORRUPT);
    tdb_buf_free(&b);
}

/* A tree through a generic tile in a file; a missing file fails. */
static void check_cond_file(void)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    struct tdb_cond *c = NULL;
    int32_t k = 1;
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    cond_value(&b, 3, "i", &k, 4);
    put_tile(&io, "__commits/__3_3_ffffffffffffffffffffffffffffffff_22.del", b.data, b.len);
    CHECK_EQ_INT(tdb_cond_load(&io, "__commits/__3_3_ffffffffffffffffffffffffffffffff_22.del", NULL, &c,
                               &err), 0);
    tdb_cond_free(c);
    CHECK(tdb_cond_load(&io, "__commits/none.del", NULL, &c, &err) < 0);
    tdb_buf_free(&b);
    tdb_io_free(&io);
}

static void test_cond_truncated(void)
{
    struct tdb_buf b = {0};
    static const char *const set[] = {"a", "bc"};
    int32_t k = 1;
    cond_expr(&b, 1, 3);
    cond_value(&b, 0, "i", &k, 4);
    cond_set(&b, 6, "s", set, 2, 0);
    cond_expr(&b, 0, 2);
    cond_value(&b, 5, "s", "", 0);
    cond_value(&b, 3, "f", "12345678", 8);
    check_cond_cuts(&b);
    tdb_buf_free(&b);
    check_cond_refused();
    check_cond_file();
}

int main(void)
{
    RUN(test_cond_eval);
    RUN(test_cond_unsupported);
    RUN(test_cond_truncated);
    RUN_CORPUS(test_corpus_delete);
    return unit_done();
}
