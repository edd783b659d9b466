/* test_delcond.c: delete conditions (format_spec/delete_commit_file.md).
 * Condition trees are serialised by hand (condtree.h).  A delete commit
 * stores the negation of the user's condition (the cells to keep);
 * tdb_cond_eval returns 1 for a cell the stored tree rejects (deleted).
 * Every operator, combination, null and string case on single cells,
 * damaged and truncated trees, and a delete commit in a sparse array read
 * through the tree. */
#include "model/delcond.h"
#include "../condtree.h"
#include "model/generic_tile.h"
#include "tiledb_format.h"
#include "write/writer.h"
#include "../support.h"

#include <math.h>

/* ------------------------------------------------------------ test cells */

/* One cell of a schema with: dimension "x" INT64 and "name" (var
 * STRING_ASCII); attributes "a" INT32 nullable, "f" FLOAT64, "s" var
 * STRING_UTF8 nullable, "c" fixed CHAR, "c3" CHAR x3, "u" UINT8,
 * "evolved" (absent from the cell's fragment). */
struct cell {
    int64_t x;
    const char *name;
    int32_t a;
    bool a_null;
    double f;
    const char *s;          /* NULL: null */
    char c;
    char c3[3];
    uint8_t u;
};

static int cell_get(void *arg, const char *field, const uint8_t **val,
                    uint64_t *size, unsigned *type, bool *is_null)
{
    const struct cell *c = arg;
    *is_null = false;
    if (!strcmp(field, "x")) {
        *val = (const uint8_t *)&c->x, *size = 8, *type = TDB_INT64;
    } else if (!strcmp(field, "name")) {
        *val = (const uint8_t *)c->name, *size = strlen(c->name);
        *type = TDB_STRING_ASCII;
    } else if (!strcmp(field, "a")) {
        *val = (const uint8_t *)&c->a, *size = 4, *type = TDB_INT32;
        *is_null = c->a_null;
    } else if (!strcmp(field, "f")) {
        *val = (const uint8_t *)&c->f, *size = 8, *type = TDB_FLOAT64;
    } else if (!strcmp(field, "s")) {
        *val = (const uint8_t *)(c->s ? c->s : "");
        *size = c->s ? strlen(c->s) : 0;
        *type = TDB_STRING_UTF8;
        *is_null = !c->s;
    } else if (!strcmp(field, "c")) {
        *val = (const uint8_t *)&c->c, *size = 1, *type = TDB_CHAR;
    } else if (!strcmp(field, "c3")) {
        *val = (const uint8_t *)c->c3, *size = 3, *type = TDB_CHAR;
    } else if (!strcmp(field, "u")) {
        *val = &c->u, *size = 1, *type = TDB_UINT8;
    } else if (!strcmp(field, "evolved")) {
        return 1;
    } else {
        return TDB_E_NOENT;
    }
    return 0;
}

static bool cell_is_var(void *arg, const char *field)
{
    (void)arg;
    return !strcmp(field, "s") || !strcmp(field, "name");
}

static struct cell base_cell(void)
{
    return (struct cell){.x = 60, .name = "bob", .a = -3, .f = 1.5,
                         .s = "bob", .c = 'x', .c3 = {'a', 'b', 'c'},
                         .u = 200};
}

/* 1: the stored tree b rejects cell c (deleted), 0: keeps it, <0: error. */
static int deleted(const struct tdb_buf *b, struct cell *c)
{
    struct tdb_cond *cond = NULL;
    struct tdb_error err = {0};
    int r = tdb_cond_parse(b->data, b->len, "t.del", &cond, &err);
    if (r)
        return r;
    struct tdb_cell_view v = {.get = cell_get, .arg = c,
                              .is_var = cell_is_var};
    r = tdb_cond_eval(cond, &v, &err);
    tdb_cond_free(cond);
    return r;
}

/* ------------------------------------------------------------- operators */

/* For a = 4, 5, 6 against 5: does the stored op keep the cell?  A null
 * cell fails every comparison with a value, NE included. */
static void check_ops_int32(struct tdb_buf *b)
{
    struct cell c = base_cell();
    static const int keep[6][3] = {{1, 0, 0}, {1, 1, 0}, {0, 0, 1},
                                   {0, 1, 1}, {0, 1, 0}, {1, 0, 1}};
    int32_t five = 5;
    for (uint8_t op = LT; op <= NE; op++) {
        for (int j = 0; j < 3; j++) {
            tdb_buf_reset(b);
            cond_value(b, op, "a", &five, 4);
            c.a = 4 + j;
            CHECK_EQ_INT(deleted(b, &c), !keep[op][j]);
        }
    }
    c.a_null = true;
    for (uint8_t op = LT; op <= NE; op++) {
        tdb_buf_reset(b);
        cond_value(b, op, "a", &five, 4);
        CHECK_EQ_INT(deleted(b, &c), 1);
    }
}

static void test_compare_ops(void)
{
    struct tdb_buf b = {0};
    check_ops_int32(&b);
    static const uint8_t hundred = 100;
    static const int64_t fifty = 50;
    static const double one = 1.0;
    static const int32_t five = 5;
    /* one stored test on a cell with x and f as given, a = 6 */
    static const struct {
        uint8_t op;
        const char *field;
        const void *val;
        uint64_t size;
        int64_t x;
        double f;
        int del;
    } cases[] = {
        /* unsigned compares as unsigned: 200 > 100 */
        {GT, "u", &hundred, 1, 60, 1.5, 0},
        /* a dimension, int64 */
        {LT, "x", &fifty, 8, 60, 1.5, 1},
        {LT, "x", &fifty, 8, 49, 1.5, 0},
        {LT, "x", &fifty, 8, -1, 1.5, 0},
        /* floats: NaN compares false except NE */
        {GT, "f", &one, 8, -1, 1.5, 0},
        {GT, "f", &one, 8, -1, NAN, 1},
        {NE, "f", &one, 8, -1, NAN, 0},
        {EQ, "f", &one, 8, -1, NAN, 1},
        /* ALWAYS_TRUE keeps, ALWAYS_FALSE deletes, whatever the field
         * holds */
        {ALWAYS_TRUE, "a", NULL, 0, -1, NAN, 0},
        {ALWAYS_FALSE, "a", NULL, 0, -1, NAN, 1},
        /* a field the cell's fragment lacks: every test on it is false */
        {NE, "evolved", &five, 4, -1, NAN, 1},
        /* an unknown field and a short value are errors */
        {EQ, "nosuch", &five, 4, -1, NAN, TDB_E_NOENT},
        {EQ, "f", &five, 4, -1, NAN, TDB_E_CORRUPT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct cell c = base_cell();
        c.a = 6;
        c.x = cases[i].x;
        c.f = cases[i].f;
        tdb_buf_reset(&b);
        cond_value(&b, cases[i].op, cases[i].field, cases[i].val,
                   cases[i].size);
        CHECK_EQ_INT(deleted(&b, &c), cases[i].del);
    }
    tdb_buf_free(&b);
}

static void test_null_tests(void)
{
    struct tdb_buf b = {0};
    struct cell c = base_cell();
    /* A value-less EQ / NE on a nullable fixed field tests validity:
     * stored "a != null" keeps valid cells (user deleted a = null). */
    cond_value(&b, NE, "a", NULL, 0);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.a_null = true;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_value(&b, EQ, "a", NULL, 0);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.a_null = false;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    /* Ordering against null is no test at all. */
    tdb_buf_reset(&b);
    cond_value(&b, LT, "a", NULL, 0);
    CHECK_EQ_INT(deleted(&b, &c), TDB_E_CORRUPT);

    /* On a string a value-less node is the empty string (TileDB reads it
     * back as ""); a null string equals nothing and differs from nothing. */
    tdb_buf_reset(&b);
    cond_value(&b, NE, "s", NULL, 0);
    CHECK_EQ_INT(deleted(&b, &c), 0);       /* "bob" != "" */
    c.s = "";
    CHECK_EQ_INT(deleted(&b, &c), 1);
    c.s = NULL;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_value(&b, EQ, "s", NULL, 0);
    CHECK_EQ_INT(deleted(&b, &c), 1);
    c.s = "";
    CHECK_EQ_INT(deleted(&b, &c), 0);
    tdb_buf_free(&b);
}

static void test_strings(void)
{
    struct tdb_buf b = {0};
    struct cell c = base_cell();
    /* Byte-wise, a shorter prefix first: "bo" < "bob" < "bobby" < "c";
     * bytes >= 0x80 after ASCII. */
    static const struct {
        const char *v;
        int cmp;            /* sign of v against "bob" */
    } vals[] = {{"", -1}, {"bo", -1}, {"bob", 0}, {"bobby", 1}, {"c", 1},
                {"B", -1}, {"\xc3\xa9", 1}, {"bo\x01", -1}};
    for (uint8_t op = LT; op <= NE; op++) {
        for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
            tdb_buf_reset(&b);
            cond_value(&b, op, "s", "bob", 3);
            c.s = vals[i].v;
            int k = vals[i].cmp;
            bool keep = op == LT ? k < 0 : op == LE ? k <= 0
                        : op == GT ? k > 0 : op == GE ? k >= 0
                        : op == EQ ? k == 0 : k != 0;
            CHECK_EQ_INT(deleted(&b, &c), !keep);
            /* The same on a var-sized dimension. */
            tdb_buf_reset(&b);
            cond_value(&b, op, "name", "bob", 3);
            c.name = vals[i].v;
            CHECK_EQ_INT(deleted(&b, &c), !keep);
        }
    }
    /* Fixed CHAR with one value compares a signed char: 0x80 < 'a'. */
    tdb_buf_reset(&b);
    cond_value(&b, GT, "c", "a", 1);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.c = (char)0x80;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    /* Fixed CHAR x3 compares its first character only, as TileDB's
     * char comparison does: "abc" EQ "axx" holds, "abc" LT "abd" not. */
    tdb_buf_reset(&b);
    cond_value(&b, EQ, "c3", "axx", 3);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    tdb_buf_reset(&b);
    cond_value(&b, LT, "c3", "abd", 3);
    CHECK_EQ_INT(deleted(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_value(&b, LT, "c3", "b", 1);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    tdb_buf_free(&b);
}

static void test_sets(void)
{
    struct tdb_buf b = {0};
    struct cell c = base_cell();
    static const char *const names[] = {"ann", "bob", "", "carol"};
    cond_set(&b, IN, "s", names, 4, 0);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.s = "bo";
    CHECK_EQ_INT(deleted(&b, &c), 1);
    c.s = "";
    CHECK_EQ_INT(deleted(&b, &c), 0);       /* the empty member */
    c.s = "carol";
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.s = NULL;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    tdb_buf_reset(&b);
    cond_set(&b, NOT_IN, "s", names, 4, 0);
    CHECK_EQ_INT(deleted(&b, &c), 1);       /* null: in no set, nor out */
    c.s = "dave";
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.s = "ann";
    CHECK_EQ_INT(deleted(&b, &c), 1);

    /* Numbers: members of the field's width; dimensions too. */
    int32_t ints[3] = {-3, 7, 1000};
    tdb_buf_reset(&b);
    cond_set(&b, IN, "a", ints, 3, 4);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.a = 8;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    c.a_null = true;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    c.a_null = false;
    tdb_buf_reset(&b);
    cond_set(&b, NOT_IN, "a", ints, 3, 4);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    int64_t xs[2] = {60, 61};
    tdb_buf_reset(&b);
    cond_set(&b, IN, "x", xs, 2, 8);
    CHECK_EQ_INT(deleted(&b, &c), 0);
    c.x = 62;
    CHECK_EQ_INT(deleted(&b, &c), 1);
    tdb_buf_free(&b);
}

/* ----------------------------------------------------------- combinations */

/* The user's "a < 0 AND x >= 50" is stored as "a >= 0 OR x < 50". */
static void put_a_lt0_and_x_ge50(struct tdb_buf *b)
{
    int32_t zero = 0;
    int64_t fifty = 50;
    cond_expr(b, OR, 2);
    cond_value(b, GE, "a", &zero, 4);
    cond_value(b, LT, "x", &fifty, 8);
}

/* The user's "a < 0 AND x >= 50" on a table of cells. */
static void check_and_of_two(struct tdb_buf *b)
{
    struct cell c = base_cell();
    tdb_buf_reset(b);
    put_a_lt0_and_x_ge50(b);
    static const struct {
        int32_t a;
        bool a_null;
        int64_t x;
        int del;
    } cases[] = {{-1, false, 50, 1}, {-1, false, 49, 0}, {0, false, 99, 0},
                 {5, false, 10, 0}, {-100, false, 99, 1},
                 /* a null fails "a >= 0": deleted where x >= 50, as
                  * TileDB applies the stored tree */
                 {0, true, 60, 1}, {0, true, 10, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        c.a = cases[i].a;
        c.a_null = cases[i].a_null;
        c.x = cases[i].x;
        CHECK_EQ_INT(deleted(b, &c), cases[i].del);
    }
}

/* Nested, more than two children, mixed fields:
 * keep (a >= 0 AND s IN {ann, bob} AND f < 2) OR NOT (x >= 10). */
static void check_nested(struct tdb_buf *b)
{
    int32_t zero = 0;
    int64_t ten = 10;
    double two = 2;
    static const char *const set[] = {"ann", "bob"};
    tdb_buf_reset(b);
    cond_expr(b, OR, 2);
    cond_expr(b, AND, 3);
    cond_value(b, GE, "a", &zero, 4);
    cond_set(b, IN, "s", set, 2, 0);
    cond_value(b, LT, "f", &two, 8);
    cond_expr(b, NOT, 1);
    cond_value(b, GE, "x", &ten, 8);
    struct cell c = base_cell();            /* a -3, x 60 */
    CHECK_EQ_INT(deleted(b, &c), 1);
    c.x = 9;                                /* NOT (x >= 10) */
    CHECK_EQ_INT(deleted(b, &c), 0);
    c.x = 60;
    c.a = 1;                                /* all three hold */
    CHECK_EQ_INT(deleted(b, &c), 0);
    c.f = 2;
    CHECK_EQ_INT(deleted(b, &c), 1);
    c.f = 0;
    c.s = "eve";
    CHECK_EQ_INT(deleted(b, &c), 1);
}

/* NOT of a null test, NOT of NOT. */
static void check_not(struct tdb_buf *b)
{
    tdb_buf_reset(b);
    cond_expr(b, NOT, 1);
    cond_value(b, EQ, "a", NULL, 0);        /* keep NOT (a = null) */
    struct cell c = base_cell();
    CHECK_EQ_INT(deleted(b, &c), 0);
    c.a_null = true;
    CHECK_EQ_INT(deleted(b, &c), 1);
    tdb_buf_reset(b);
    cond_expr(b, NOT, 1);
    cond_expr(b, NOT, 1);
    cond_value(b, EQ, "a", NULL, 0);
    CHECK_EQ_INT(deleted(b, &c), 0);
}

/* AND and OR with many children; the field list names each once. */
static void check_many_children(struct tdb_buf *b)
{
    int32_t zero = 0;
    int64_t zero64 = 0;
    tdb_buf_reset(b);
    cond_expr(b, AND, 4);
    for (int i = 0; i < 4; i++)
        cond_value(b, NE, i % 2 ? "a" : "x",
                  i % 2 ? (const void *)&zero : &zero64, i % 2 ? 4 : 8);
    struct cell c = base_cell();
    CHECK_EQ_INT(deleted(b, &c), 0);
    c.a = 0;
    CHECK_EQ_INT(deleted(b, &c), 1);
    struct tdb_cond *cond = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_cond_parse(b->data, b->len, "t", &cond, &err), 0);
    const char **names = NULL;
    CHECK_EQ_INT(tdb_cond_fields(cond, &names), 2);
    if (names && cond) {
        CHECK(!strcmp(names[0], "x"));
        CHECK(!strcmp(names[1], "a"));
    }
    tdb_cond_free(cond);
}

static void test_combinations(void)
{
    struct tdb_buf b = {0};
    check_and_of_two(&b);
    check_nested(&b);
    check_not(&b);
    check_many_children(&b);
    tdb_buf_free(&b);
}

/* --------------------------------------------------------- damaged trees */

static int parse(const uint8_t *p, size_t n)
{
    struct tdb_cond *c = NULL;
    struct tdb_error err = {0};
    int r = tdb_cond_parse(p, n, "t.del", &c, &err);
    if (r == 0) {
        /* whatever parses must evaluate without crashing */
        struct cell cell = base_cell();
        struct tdb_cell_view v = {.get = cell_get, .arg = &cell,
                                  .is_var = cell_is_var};
        int e = tdb_cond_eval(c, &v, &err);
        CHECK(e == 0 || e == 1 || e < 0);
    } else {
        CHECK(c == NULL);
    }
    tdb_cond_free(c);
    return r;
}

static void test_truncated(void)
{
    struct tdb_buf b = {0};
    static const char *const set[] = {"a", "bc"};
    int32_t k = 1;
    cond_expr(&b, OR, 3);
    cond_value(&b, LT, "a", &k, 4);
    cond_set(&b, NOT_IN, "s", set, 2, 0);
    cond_expr(&b, AND, 2);
    cond_value(&b, NE, "a", NULL, 0);
    cond_expr(&b, NOT, 1);
    cond_value(&b, GE, "f", "12345678", 8);
    CHECK_EQ_INT(parse(b.data, b.len), 0);
    /* Cut at every length: corrupt, never a partial tree. */
    for (size_t len = 0; len < b.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.data, len);
        CHECK_EQ_INT(parse(copy, len), TDB_E_CORRUPT);
        free(copy);
    }
    /* Every byte damaged: an error or a tree that evaluates, never a
     * crash (run under the sanitizers to see overreads). */
    for (size_t i = 0; i < b.len; i++) {
        for (int v = 1; v < 256; v += 37) {
            uint8_t *copy = malloc(b.len);
            memcpy(copy, b.data, b.len);
            copy[i] ^= (uint8_t)v;
            int r = parse(copy, b.len);
            CHECK(r == 0 || r == TDB_E_CORRUPT);
            free(copy);
        }
    }
    tdb_buf_free(&b);
}

/* Unknown operator and combination; AND / OR need two children or more,
 * NOT exactly one; a child count far beyond the bytes left; an empty
 * field name.  Each an optional expression node, then value nodes. */
static void check_bad_nodes(struct tdb_buf *b)
{
    int32_t k = 1;
    static const struct {
        int expr_op;                    /* -1: no expression node */
        uint64_t nchildren;
        int nvalues;
        uint8_t op;
        const char *field;
    } cases[] = {
        {-1, 0, 1, 8, "a"},
        {-1, 0, 1, 252, "a"},
        {3, 2, 2, EQ, "a"},
        {AND, 1, 1, EQ, "a"},
        {OR, 0, 0, EQ, "a"},
        {NOT, 2, 2, EQ, "a"},
        {NOT, 0, 0, EQ, "a"},
        {AND, UINT64_MAX, 2, EQ, "a"},
        {-1, 0, 1, EQ, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tdb_buf_reset(b);
        if (cases[i].expr_op >= 0)
            cond_expr(b, (uint8_t)cases[i].expr_op, cases[i].nchildren);
        for (int v = 0; v < cases[i].nvalues; v++)
            cond_value(b, cases[i].op, cases[i].field, &k, 4);
        CHECK_EQ_INT(parse(b->data, b->len), TDB_E_CORRUPT);
    }
}

/* Unknown node type; a field name with a NUL; a value length beyond the
 * bytes left. */
static void check_bad_bytes(struct tdb_buf *b)
{
    int32_t k = 1;
    tdb_buf_reset(b);
    tdb_buf_put_u8(b, 2);
    CHECK_EQ_INT(parse(b->data, b->len), TDB_E_CORRUPT);
    tdb_buf_reset(b);
    tdb_buf_put_u8(b, 1);
    tdb_buf_put_u8(b, EQ);
    tdb_buf_put_u32(b, 3);
    tdb_buf_append(b, "a\0b", 3);
    tdb_buf_put_u64(b, 4);
    tdb_buf_append(b, &k, 4);
    CHECK_EQ_INT(parse(b->data, b->len), TDB_E_CORRUPT);
    tdb_buf_reset(b);
    cond_value(b, EQ, "a", &k, 4);
    b->data[10] = 0xff;                     /* top byte of the length */
    CHECK_EQ_INT(parse(b->data, b->len), TDB_E_CORRUPT);
}

/* Sets: offsets not a multiple of 8, decreasing, past the values, none at
 * all. */
static void check_bad_sets(struct tdb_buf *b)
{
    static const uint64_t bad_offsets[][3] = {
        {12, 0, 0}, {16, 2, 1}, {16, 0, 4}, {0, 0, 0}};
    for (size_t i = 0; i < 4; i++) {
        tdb_buf_reset(b);
        tdb_buf_put_u8(b, 1);
        tdb_buf_put_u8(b, IN);
        tdb_buf_put_u32(b, 1);
        tdb_buf_append(b, "s", 1);
        tdb_buf_put_u64(b, 3);
        tdb_buf_append(b, "abc", 3);
        tdb_buf_put_u64(b, bad_offsets[i][0]);
        if (bad_offsets[i][0] == 12) {
            tdb_buf_put_u64(b, 0);
            tdb_buf_put_u32(b, 1);
        } else if (bad_offsets[i][0]) {
            tdb_buf_put_u64(b, bad_offsets[i][1]);
            tdb_buf_put_u64(b, bad_offsets[i][2]);
        }
        CHECK_EQ_INT(parse(b->data, b->len), TDB_E_CORRUPT);
    }
}

static void test_malformed(void)
{
    struct tdb_buf b = {0};
    int32_t k = 1;
    check_bad_bytes(&b);
    check_bad_nodes(&b);
    check_bad_sets(&b);
    /* Nesting is bounded, not recursed without limit. */
    tdb_buf_reset(&b);
    for (int i = 0; i < 100000; i++)
        cond_expr(&b, NOT, 1);
    cond_value(&b, EQ, "a", &k, 4);
    CHECK_EQ_INT(parse(b.data, b.len), TDB_E_CORRUPT);
    tdb_buf_free(&b);
}

/* ------------------------------------------------------ through the tree */

/* A sparse array: x INT64 in [0, 99], a INT32 nullable, s var UTF-8. */
static const char *const sparse_schema =
    "{\"array_type\": \"sparse\", \"capacity\": 7, \"dims\": [{\"name\": "
    "\"x\", \"datatype\": \"INT64\", \"domain\": [0, 99], "
    "\"tile_extent\": 10}], \"attrs\": [{\"name\": \"a\", \"datatype\": "
    "\"INT32\", \"nullable\": true}, {\"name\": \"s\", \"datatype\": "
    "\"STRING_UTF8\", \"cell_val_num\": \"var\"}]}";

static void put_file(const struct tdb_io *io, const char *path,
                     const void *p, size_t n)
{
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, p, n), 0);
}

#define NCELLS 40

/* Writes cells x = 0, 2, .., 78 (shuffled) to `arr` at time 2; a
 * alternates sign and every fifth is null; s is "v<x>".  @return the
 * fragment's name (to free). */
static char *write_cells(struct tdb_io *arr)
{
    int64_t x[NCELLS];
    int32_t a[NCELLS];
    uint8_t valid[NCELLS];
    uint64_t off[NCELLS];
    char text[NCELLS * 4];
    size_t tlen = 0;
    for (int i = 0; i < NCELLS; i++) {
        int k = (i * 17) % NCELLS;          /* a permutation */
        x[i] = 2 * k;
        a[i] = k % 2 ? -k : k;
        valid[i] = k % 5 != 3;
        off[i] = tlen;
        tlen += (size_t)snprintf(text + tlen, sizeof text - tlen, "v%d",
                                 (int)x[i]);
    }
    struct tdb_io stg;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stg.ops->mkdir(stg.ctx, "w");
    put_file(&stg, "w/x", x, sizeof x);
    put_file(&stg, "w/a", a, sizeof a);
    put_file(&stg, "w/a.validity", valid, sizeof valid);
    put_file(&stg, "w/s", text, tlen);
    put_file(&stg, "w/s.offsets", off, sizeof off);
    char *name = NULL;
    int r = unit_write(arr, &stg, "w", NULL, 2, 0, &name, &err);
    if (r)
        fprintf(stderr, "  write: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    tdb_io_free(&stg);
    return name;
}

/* The delete commit at 3: "a < 0 AND x >= 50", stored negated.  A second
 * one at 4 that deletes nothing but reads a (nullable: values and
 * validity) in twelve tests of each cell: "x = 1000 OR a = 1000 OR
 * a = 1001 ..." stored as "x != 1000 AND a != 1000 AND a != 1001 ...". */
static void put_delete_commits(struct tdb_io *arr)
{
    struct tdb_buf cond = {0};
    put_a_lt0_and_x_ge50(&cond);
    cond_commit(arr, 3, 1, &cond);
    tdb_buf_reset(&cond);
    cond_expr(&cond, OR, 2);
    cond_value(&cond, EQ, "a", NULL, 0);     /* null cells are no a != v */
    cond_expr(&cond, AND, 13);
    int64_t big = 1000;
    cond_value(&cond, NE, "x", &big, 8);
    for (int32_t v = 1000; v < 1012; v++)
        cond_value(&cond, NE, "a", &v, 4);
    cond_commit(arr, 4, 2, &cond);
    tdb_buf_free(&cond);
}

/* Expected: x ascending, without x >= 50 where a < 0 or a is null.
 * @return the number of cells. */
static int surviving_cells(int64_t *wx, int32_t *wa, uint8_t *wv)
{
    int n = 0;
    for (int k = 0; k < NCELLS; k++) {
        int32_t av = k % 2 ? -k : k;
        bool v = k % 5 != 3;
        if (2 * k >= 50 && (!v || av < 0))
            continue;
        wx[n] = 2 * k;
        wa[n] = av;
        wv[n] = v;
        n++;
    }
    return n;
}

/* File `path` of `fs` is `want` (`size` bytes) or, with want NULL, only
 * `size` bytes long. */
static void check_fs_file(struct tdb_fs *fs, const char *path,
                          const void *want, uint64_t size)
{
    uint64_t gn = 0;
    uint8_t *got = fs ? unit_fs_file(fs, path, &gn) : NULL;
    CHECK(got && gn == size && (!want || !memcmp(got, want, gn)));
    free(got);
}

static void test_delete_through_tree(void)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_from_json(sparse_schema, strlen(sparse_schema),
                                      &s, &err), 0);
    if (!s)
        return;
    struct tdb_io arr;
    CHECK_EQ_INT(tdb_io_mem(&arr), 0);
    CHECK_EQ_INT(tdb_array_create(&arr, s, NULL, 1, &err), 0);
    tdb_schema_free(s);
    char *name = write_cells(&arr);
    put_delete_commits(&arr);
    int64_t wx[NCELLS];
    int32_t wa[NCELLS];
    uint8_t wv[NCELLS];
    int n = surviving_cells(wx, wa, wv);
    CHECK(n > 20 && n < NCELLS);

    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    int r = tdb_fs_open(&fs, &arr, &o, &err);
    if (r)
        fprintf(stderr, "  open: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    check_fs_file(fs, "x", wx, (uint64_t)n * 8);
    check_fs_file(fs, "a", wa, (uint64_t)n * 4);
    check_fs_file(fs, "a.validity", wv, (uint64_t)n);
    /* The fragment alone (its range ends before the delete) keeps all. */
    char path[256];
    snprintf(path, sizeof path, "__fragments/%s/x", name ? name : "?");
    check_fs_file(fs, path, NULL, NCELLS * 8);
    free(name);
    tdb_fs_close(fs);
    tdb_io_free(&arr);
}

int main(void)
{
    RUN(test_compare_ops);
    RUN(test_null_tests);
    RUN(test_strings);
    RUN(test_sets);
    RUN(test_combinations);
    RUN(test_truncated);
    RUN(test_malformed);
    RUN(test_delete_through_tree);
    return unit_done();
}
