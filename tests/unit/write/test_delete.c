/* test_delete.c: cells deleted by a condition in TileDB-Py's
 * QueryCondition syntax (tdb_delete_commit, format/write/delete.c): the
 * delete commit TileDB itself wrote for sparse_delete is written again
 * byte for byte from its condition's text; each construct of the syntax
 * gives the tree TileDB stores (the negation, flattened as TileDB's
 * combine flattens it); bad conditions are refused with their reason and
 * write nothing; and the view drops the cells at once. */
#include "../unit.h"
#include "../support.h"
#include "../condtree.h"

#include "model/arraydir.h"
#include "model/schemas.h"
#include "tiledb_format_write.h"
#include "core/core.h"
#include "write/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The newest schema of the array in io (free with free_schemas). */
static const struct tdb_schema *load_schema(const struct tdb_io *io,
                                            struct tdb_schema_set *set,
                                            struct tdb_arraydir **dir)
{
    const struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_arraydir_load(io, 0, UINT64_MAX, dir, &err), 0);
    if (*dir)
        CHECK_EQ_INT(tdb_array_schemas_load(io, *dir, NULL, set, &s, &err), 0);
    return s;
}

static void free_schemas(struct tdb_schema_set *set, struct tdb_arraydir *dir)
{
    for (size_t i = 0; i < set->n; i++)
        tdb_schema_free(set->v[i]);
    free(set->v);
    tdb_arraydir_free(dir);
}

static size_t count_dels(const struct tdb_io *io)
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    size_t k = 0;
    if (tdb_io_names(io, "__commits", &n, &err))
        return 0;
    for (size_t i = 0; i < n.n; i++) {
        size_t l = strlen(n.v[i]);
        k += l > 4 && !strcmp(n.v[i] + l - 4, ".del");
    }
    tdb_names_free(&n);
    return k;
}

/* The path of a delete commit of the array in io (caller frees), NULL
 * when it has none. */
static char *del_path(const struct tdb_io *io)
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    char *del = NULL;
    CHECK_EQ_INT(tdb_io_names(io, "__commits", &n, &err), 0);
    for (size_t i = 0; i < n.n && !del; i++)
        if (strstr(n.v[i], ".del"))
            del = tdb_path_join("__commits", n.v[i]);
    tdb_names_free(&n);
    return del;
}

/* TileDB 2.29 wrote sparse_delete's delete of "a < 0": the same text
 * gives the same file, byte for byte. */
static void test_as_tiledb(void)
{
    struct tdb_io io;
    char *dir;
    if (!unit_copy_case("sparse_delete", &dir, &io))
        return;
    struct tdb_error err = {0};
    char *del = del_path(&io);
    CHECK(del != NULL);
    uint8_t *want = NULL;
    size_t wn = 0;
    if (del)
        CHECK_EQ_INT(tdb_io_read_file(&io, del, &want, &wn, &err), 0);
    struct tdb_schema_set set = {0};
    struct tdb_arraydir *ad = NULL;
    const struct tdb_schema *s = load_schema(&io, &set, &ad);
    struct tdb_buf cond = {0}, file = {0};
    static const char text[] = "a < 0";
    CHECK_EQ_INT(tdb_delete_condition(s, text, strlen(text), &cond, &err), 0);
    CHECK_EQ_INT(tdb_write_generic_tile(&cond, NULL, &file, &err), 0);
    CHECK(unit_same_bytes(del ? del : "?", file.data, file.len, want, wn));
    tdb_buf_free(&cond);
    tdb_buf_free(&file);
    free(want);
    free(del);
    free_schemas(&set, ad);
    unit_drop_case(dir, &io);
}

/* Each text's tree against the tree TileDB stores for it. */
static void check_trees(const char *name, const char *const *texts,
                        struct tdb_buf *want, size_t n)
{
    struct tdb_io io;
    char *dir;
    if (!unit_copy_case(name, &dir, &io))
        return;
    struct tdb_schema_set set = {0};
    struct tdb_arraydir *ad = NULL;
    const struct tdb_schema *s = load_schema(&io, &set, &ad);
    for (size_t i = 0; s && i < n; i++) {
        struct tdb_buf got = {0};
        struct tdb_error err = {0};
        int rc = tdb_delete_condition(s, texts[i], strlen(texts[i]), &got,
                                      &err);
        if (rc)
            fprintf(stderr, "  %s: %s\n", texts[i], err.msg);
        CHECK_EQ_INT(rc, 0);
        CHECK(unit_same_bytes(texts[i], got.data, got.len, want[i].data,
                              want[i].len));
        tdb_buf_free(&got);
    }
    for (size_t i = 0; i < n; i++)
        tdb_buf_free(&want[i]);
    free_schemas(&set, ad);
    unit_drop_case(dir, &io);
}

/* Each construct (sparse_delete: INT32 dims x, y, attributes a INT32 and
 * s STRING_ASCII; dense_var_nullable: nullable n_i32, n_u8). */
static void test_syntax(void)
{
    int32_t zero = 0, one = 1, five = 5, three = 3, two = 2;
    struct tdb_buf want[9] = {{0}};
    /* a < 0: stored as a >= 0 */
    cond_value(&want[0], GE, "a", &zero, 4);
    /* a >= 1 and s == 'x' -> a < 1 or s != 'x' */
    cond_expr(&want[1], OR, 2);
    cond_value(&want[1], LT, "a", &one, 4);
    cond_value(&want[1], NE, "s", "x", 1);
    /* not (a < 0): stored as a < 0 */
    cond_value(&want[2], LT, "a", &zero, 4);
    /* 1 < a: a > 1, stored as a <= 1 */
    cond_value(&want[3], LE, "a", &one, 4);
    /* a < 0 or a > 5 or x == 3: one AND of three */
    cond_expr(&want[4], AND, 3);
    cond_value(&want[4], GE, "a", &zero, 4);
    cond_value(&want[4], LE, "a", &five, 4);
    cond_value(&want[4], NE, "x", &three, 4);
    /* a in [1, 2]: NOT_IN */
    int32_t m[2] = {1, 2};
    cond_set(&want[5], NOT_IN, "a", m, 2, 4);
    /* s not in ('ab', 'c',): IN over strings */
    static const char *const strs[2] = {"ab", "c"};
    cond_set(&want[6], IN, "s", strs, 2, 0);
    /* (attr("a") == 2 | dim("y") == 3) & not a != 5 */
    cond_expr(&want[7], OR, 2);
    cond_expr(&want[7], AND, 2);
    cond_value(&want[7], NE, "a", &two, 4);
    cond_value(&want[7], NE, "y", &three, 4);
    cond_value(&want[7], NE, "a", &five, 4);
    /* -1 >= a: a <= -1, stored as a > -1 */
    int32_t minus1 = -1;
    cond_value(&want[8], GT, "a", &minus1, 4);
    static const char *const texts[9] = {
        "a < 0", "a >= 1 and s == 'x'", "not (a < 0)", "1 < a",
        "a < 0 or a > 5 or x == 3", "a in [1, 2]", "s not in ('ab', \"c\",)",
        "(attr(\"a\") == 2 | dim(\"y\") == 3) & not a != 5", "-1 >= a",
    };
    check_trees("sparse_delete", texts, want, 9);

    struct tdb_buf nwant[3] = {{0}};
    uint8_t seven = 7;
    /* n_i32 is None: stored as n_i32 != null */
    cond_value(&nwant[0], NE, "n_i32", NULL, 0);
    /* n_i32 is not None and n_u8 == 7 */
    cond_expr(&nwant[1], OR, 2);
    cond_value(&nwant[1], EQ, "n_i32", NULL, 0);
    cond_value(&nwant[1], NE, "n_u8", &seven, 1);
    /* n_u8 == None */
    cond_value(&nwant[2], NE, "n_u8", NULL, 0);
    static const char *const ntexts[3] = {
        "n_i32 is None", "n_i32 is not None and n_u8 == 7", "n_u8 == None",
    };
    check_trees("dense_var_nullable", ntexts, nwant, 3);
}

/* A condition refused, and the words its reason holds. */
struct refusal {
    const char *text, *why;
};

/* Each of bad[0..n) on a copy of case `name`: TDB_E_INVAL naming the
 * reason; no delete written. */
static void check_refused(const char *name, const struct refusal *bad,
                          size_t n)
{
    struct tdb_io io;
    char *dir;
    if (!unit_copy_case(name, &dir, &io))
        return;
    size_t before = count_dels(&io);
    for (size_t i = 0; i < n; i++) {
        struct tdb_error err = {0};
        char *made = NULL;
        int rc = tdb_delete_commit(&io, bad[i].text, strlen(bad[i].text),
                                   &(struct tdb_commit_options){NULL, 0},
                                   &made, &err);
        CHECK_EQ_INT(rc, TDB_E_INVAL);
        if (!strstr(err.msg, bad[i].why)) {
            fprintf(stderr, "  '%s': %s (want '%s')\n", bad[i].text, err.msg,
                    bad[i].why);
            CHECK(false);
        }
        CHECK(made == NULL);
    }
    CHECK_EQ_INT(count_dels(&io), before);
    unit_drop_case(dir, &io);
}

/* Bad conditions: TDB_E_INVAL naming the reason; no delete written. */
static void test_refused(void)
{
    static const struct refusal bad[] = {
        {"", "empty"},
        {"a <", "want"},
        {"a < 0 and", "want"},
        {"nosuch == 1", "no attribute or dimension 'nosuch'"},
        {"a == 'x'", "holds numbers"},
        {"s == 5", "holds strings"},
        {"a == 1.5", "holds integers"},
        {"a == 99999999999", "does not fit"},
        {"a == 2147483648", "does not fit"},
        {"a == -2147483649", "does not fit"},
        {"a is None", "not nullable"},
        {"(a < 0", "want )"},
        {"a < 0 b", "unexpected text"},
        {"a in []", "empty list"},
        {"0 < a < 5", "chain"},
        {"a < 'x", "closing quote"},
    };
    check_refused("sparse_delete", bad, sizeof bad / sizeof *bad);
}

/* A dense array's delete, and values past an integer type's bounds:
 * TDB_E_INVAL; no delete written. */
static void test_refused_dense_bounds(void)
{
    struct tdb_io io;
    char *dir;
    if (!unit_copy_case("dense_var_nullable", &dir, &io))
        return;
    struct tdb_error err = {0};
    char *name = NULL;
    CHECK_EQ_INT(tdb_delete_commit(&io, "a < 0", 5,
                                   &(struct tdb_commit_options){NULL, 0},
                                   &name, &err),
                 TDB_E_INVAL);
    CHECK(strstr(err.msg, "sparse arrays only") != NULL);
    CHECK_EQ_INT(count_dels(&io), 0);
    unit_drop_case(dir, &io);
    /* the bounds of UINT16 u and INT8 i */
    static const struct refusal out[] = {
        {"u == 65536", "does not fit"}, {"u == -1", "does not fit"},
        {"i == 128", "does not fit"}, {"i == -129", "does not fit"},
    };
    check_refused("sparse_float64_dims", out, sizeof out / sizeof *out);
}

/* ------------------------------------------------------------ the view */

/* sparse_delete without its delete commit, then the same condition
 * deleted again at the same time: the view is the corpus's (what TileDB
 * read with its own delete). */
static void test_view(void)
{
    struct tdb_io io;
    char *dir;
    if (!unit_copy_case("sparse_delete", &dir, &io))
        return;
    struct tdb_error err = {0};
    for (char *p; (p = del_path(&io));) {
        int rc = io.ops->remove(io.ctx, p);
        free(p);
        CHECK_EQ_INT(rc, 0);
        if (rc)
            break;
    }
    char *name = NULL;
    CHECK_EQ_INT(tdb_delete_commit(&io, "a < 0", 5,
                                   &(struct tdb_commit_options){NULL, 3},
                                   &name, &err), 0);
    CHECK(name && !strncmp(name, "__3_3_", 6));
    free(name);
    CHECK_EQ_INT(count_dels(&io), 1);
    char root[4096];
    snprintf(root, sizeof root, "%s/sparse_delete/expected", unit_corpus());
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    CHECK_EQ_INT(tdb_fs_open(&fs, &io, &o, &err), 0);
    if (fs) {
        CHECK_EQ_INT(unit_expected_diff(root, fs, "__fragments/"), 0);
        tdb_fs_close(fs);
    }
    unit_drop_case(dir, &io);
}

/* The view of io (every top-level file of sparse_delete's expected/):
 * a digest of what it shows, 0 when it cannot be opened. */
static uint64_t view_digest(const struct tdb_io *io)
{
    static const char *const files[] = {"x", "y", "a", "s", "s.offsets"};
    struct tdb_open_options o;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    uint64_t h = 1469598103934665603ull;
    tdb_open_options_init(&o);
    if (tdb_fs_open(&fs, io, &o, &err))
        return 0;
    for (size_t i = 0; i < 5; i++) {
        uint64_t n = 0;
        uint8_t *b = unit_fs_file(fs, files[i], &n);
        for (uint64_t k = 0; b && k < n; k++)
            h = (h ^ b[k]) * 1099511628211ull;
        h = (h ^ n) * 1099511628211ull;
        free(b);
    }
    tdb_fs_close(fs);
    return h;
}

static const char kill_cond[] = "a < 0 or s == 'x3'";

/* After a delete commit killed (result rc), the array of io shows the
 * cells before or after it (view digests); one that shows them before is
 * committed again; a consolidation and vacuum then leave no temporary
 * file and the cells after. */
static void kill_check_after(const struct tdb_io *io, int rc, uint64_t before,
                             uint64_t after)
{
    struct tdb_error err = {0};
    char *name = NULL;
    uint64_t v = view_digest(io);
    CHECK(v == before || v == after);
    CHECK(rc != 0 || v == after);
    if (v == before) {
        CHECK_EQ_INT(tdb_delete_commit(io, kill_cond, sizeof kill_cond - 1,
                                       &(struct tdb_commit_options){NULL, 0},
                                       &name, &err), 0);
        free(name);
    }
    CHECK_EQ_INT(view_digest(io), after);
    struct tdb_cons_result r;
    CHECK_EQ_INT(tdb_consolidate_commits(io, NULL, &r, &err), 0);
    CHECK_EQ_INT(tdb_vacuum_commits(io, &r, &err), 0);
    struct tdb_names n = {0};
    CHECK_EQ_INT(tdb_io_names(io, "", &n, &err), 0);
    for (size_t i = 0; i < n.n; i++)
        CHECK(!strstr(n.v[i], ".tmp"));
    tdb_names_free(&n);
    CHECK_EQ_INT(view_digest(io), after);
}

/* A delete commit on a copy of sparse_delete killed at call k, checked
 * as kill_check_after.  False when the copy could not be made. */
static bool kill_at(uint64_t k, uint64_t before, uint64_t after)
{
    struct tdb_io io, faulty;
    struct tdb_io_fault f = {.fail_at = k, .crash = true};
    struct tdb_error err = {0};
    char *dir, *name = NULL;
    if (!unit_copy_case("sparse_delete", &dir, &io))
        return false;
    CHECK_EQ_INT(tdb_io_faulty(&faulty, &io, &f), 0);
    int rc = tdb_delete_commit(&faulty, kill_cond, sizeof kill_cond - 1,
                               &(struct tdb_commit_options){NULL, 0},
                               &name, &err);
    free(name);
    tdb_io_free(&faulty);
    kill_check_after(&io, rc, before, after);
    unit_drop_case(dir, &io);
    return true;
}

/* A kill at every mutating call of a delete commit: the array shows the
 * cells as before or as after, never anything else, and a commit after
 * it works; what a kill left is swept by the next consolidation and
 * vacuum. */
static void test_kills(void)
{
    struct tdb_io io;
    char *dir;
    uint64_t before = 0, after = 0, total = 0;
    if (!unit_copy_case("sparse_delete", &dir, &io))
        return;
    struct tdb_io_fault all = {0};
    struct tdb_io counting;
    struct tdb_error err = {0};
    char *name = NULL;
    before = view_digest(&io);
    CHECK_EQ_INT(tdb_io_faulty(&counting, &io, &all), 0);
    CHECK_EQ_INT(tdb_delete_commit(&counting, kill_cond, sizeof kill_cond - 1,
                                   &(struct tdb_commit_options){NULL, 0},
                                   &name, &err), 0);
    free(name);
    total = all.count;
    tdb_io_free(&counting);
    after = view_digest(&io);
    CHECK(before && after && before != after && total >= 3);
    unit_drop_case(dir, &io);
    for (uint64_t k = 1; k <= total; k++)
        if (!kill_at(k, before, after) || unit_cur_failed)
            return;
    printf("   killed at each of %llu calls: the cells before or after, "
           "then committed again\n", (unsigned long long)total);
}

int main(void)
{
    RUN_CORPUS(test_as_tiledb);
    RUN_CORPUS(test_syntax);
    RUN_CORPUS(test_refused);
    RUN_CORPUS(test_refused_dense_bounds);
    RUN_CORPUS(test_view);
    RUN_CORPUS(test_kills);
    return unit_done();
}
