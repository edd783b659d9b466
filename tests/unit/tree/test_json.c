/* test_json.c: the JSON documents of the mount are jansson trees printed by
 * tdb_json_dump: the exact text of the printer, and a filter with both a
 * level and a reinterpret datatype (once printed as invalid JSON) giving
 * valid JSON that reads back through tdb_schema_from_json, alone and in
 * __array.json of a created array. */
#include "filters/options.h"
#include "tree/json.h"
#include "tiledb_format.h"
#include "write/writer.h"
#include "../support.h"
#include "../unit.h"

#include <math.h>

/* tdb_json_dump of v as a C string (NULL on failure); consumes v. */
static char *dump(json_t *v)
{
    struct tdb_buf b = {0};
    int rc = tdb_json_dump(v, &b);
    json_decref(v);
    if (rc || tdb_buf_put_u8(&b, 0)) {
        tdb_buf_free(&b);
        return NULL;
    }
    return (char *)b.data;
}

static void expect_dump(json_t *v, const char *want)
{
    char *got = dump(v);
    CHECK(got != NULL);
    if (got && strcmp(got, want)) {
        fprintf(stderr, "  got      %s  expected %s", got, want);
        CHECK(!"dump differs");
    }
    free(got);
}

static void test_dump_format(void)
{
    struct tdb_jb jb = {0};
    json_t *o = tdb_jb_object(&jb);
    /* Keys keep their order; separators ", " and ": ". */
    tdb_jb_set(&jb, o, "z", json_integer(-5));
    tdb_jb_set(&jb, o, "a", tdb_json_u64(UINT64_MAX));
    tdb_jb_set(&jb, o, "m", tdb_json_u64((uint64_t)INT64_MAX + 1));
    json_t *reals = tdb_jb_array(&jb);
    tdb_jb_push(&jb, reals, tdb_json_double(0));
    tdb_jb_push(&jb, reals, tdb_json_double(0.001));
    tdb_jb_push(&jb, reals, tdb_json_double(-1000));
    tdb_jb_push(&jb, reals, tdb_json_double(1e300));
    tdb_jb_push(&jb, reals, tdb_json_double(NAN));
    tdb_jb_push(&jb, reals, tdb_json_double(-INFINITY));
    tdb_jb_set(&jb, o, "r", reals);
    /* Quotes, backslashes, control characters, DEL and invalid UTF-8 are
     * escaped; valid UTF-8 and NUL-containing values are kept whole. */
    tdb_jb_set(&jb, o, "s", tdb_json_bytes("q\"b\\\n\x7f\xff\xc3\xa9\0z", 11));
    tdb_jb_set(&jb, o, "e", tdb_jb_array(&jb));
    tdb_jb_set(&jb, o, "o", tdb_jb_object(&jb));
    tdb_jb_set(&jb, o, "n", json_null());
    tdb_jb_set(&jb, o, "t", json_true());
    tdb_jb_set(&jb, o, "f", json_false());
    uint8_t i16[2] = {0xfe, 0xff}, u16[2] = {0xfe, 0xff};
    tdb_jb_set(&jb, o, "i16", tdb_json_value(TDB_INT16, i16, 2));
    tdb_jb_set(&jb, o, "u16", tdb_json_value(TDB_UINT16, u16, 2));
    CHECK_EQ_INT(jb.rc, 0);
    expect_dump(o,
                "{\"z\": -5, \"a\": 18446744073709551615, "
                "\"m\": 9223372036854775808, "
                "\"r\": [0, 0.001, -1000, 1.0000000000000001e+300, \"NaN\", "
                "\"-Infinity\"], "
                "\"s\": \"q\\\"b\\\\\\u000a\\u007f\\u00ff\xc3\xa9\\u0000z\", "
                "\"e\": [], \"o\": {}, \"n\": null, \"t\": true, "
                "\"f\": false, \"i16\": -2, \"u16\": 65534}\n");

    /* A NULL value is an error that sticks, and nothing leaks. */
    struct tdb_jb bad = {0};
    json_t *arr = tdb_jb_array(&bad);
    tdb_jb_push(&bad, arr, NULL);
    CHECK_EQ_INT(bad.rc, TDB_E_NOMEM);
    tdb_jb_push(&bad, arr, json_integer(1));
    CHECK_EQ_INT(json_array_size(arr), 0);
    json_decref(arr);
    struct tdb_buf b = {0};
    CHECK_EQ_INT(tdb_json_dump(NULL, &b), TDB_E_NOMEM);
    CHECK_EQ_INT(b.len, 0);
}

/* A sparse schema whose attribute has DELTA and DOUBLE_DELTA filters with a
 * level and a reinterpret datatype. */
static const char *const reinterpret_schema =
    "{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"d\", "
    "\"datatype\": \"UINT64\", \"domain\": [0, 18446744073709551599], "
    "\"tile_extent\": 10}], \"attrs\": [{\"name\": \"a\", "
    "\"datatype\": \"UINT64\", \"filters\": [{\"type\": \"DELTA\", "
    "\"level\": 3, \"reinterpret_datatype\": \"INT64\"}, "
    "{\"type\": \"DOUBLE_DELTA\", \"level\": -1, "
    "\"reinterpret_datatype\": \"UINT32\"}, {\"type\": \"ZSTD\", "
    "\"level\": 7}]}]}";

/* The "schema" of a document as text, checked to be valid JSON whose
 * filters of attribute a carry the level and reinterpret datatype. */
static void check_schema_text(const char *text, size_t len)
{
    json_error_t je;
    /* (integers as reals: jansson refuses those above INT64_MAX) */
    json_t *doc = json_loadb(text, len, JSON_DECODE_INT_AS_REAL, &je);
    if (!doc)
        fprintf(stderr, "  invalid JSON (%s): %.*s\n", je.text, (int)len,
                text);
    CHECK(doc != NULL);
    json_decref(doc);
    CHECK(strstr(text, "{\"type\": \"DELTA\", \"level\": 3, "
                       "\"reinterpret_datatype\": \"INT64\"}") != NULL);
    CHECK(strstr(text, "{\"type\": \"DOUBLE_DELTA\", \"level\": -1, "
                       "\"reinterpret_datatype\": \"UINT32\"}") != NULL);
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int rc = tdb_schema_from_json(text, len, &s, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    if (!s)
        return;
    CHECK_EQ_INT(s->nattrs, 1);
    CHECK_EQ_INT(s->attrs[0].filters.n, 3);
    if (s->nattrs == 1 && s->attrs[0].filters.n == 3) {
        const struct tdb_filter *f = s->attrs[0].filters.f;
        CHECK_EQ_INT(f[0].type, TDB_FILTER_DELTA);
        CHECK_EQ_INT(tdb_filter_get_int(&f[0], "level"), 3);
        CHECK_EQ_INT(tdb_filter_get_int(&f[0], "reinterpret_datatype"),
                     TDB_INT64);
        CHECK_EQ_INT(f[1].type, TDB_FILTER_DOUBLE_DELTA);
        CHECK_EQ_INT(tdb_filter_get_int(&f[1], "level"), -1);
        CHECK_EQ_INT(tdb_filter_get_int(&f[1], "reinterpret_datatype"),
                     TDB_UINT32);
        CHECK_EQ_INT(tdb_filter_get_int(&f[2], "level"), 7);
    }
    /* Printing what was read gives the same schema text again. */
    char *again = dump(tdb_json_schema(s));
    CHECK(again != NULL);
    if (again) {
        again[strlen(again) - 1] = 0;   /* its "\n" */
        CHECK(strstr(text, again) != NULL);
    }
    free(again);
    tdb_schema_free(s);
}

static void test_filter_level_reinterpret(void)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_from_json(reinterpret_schema,
                                      strlen(reinterpret_schema), &s, &err),
                 0);
    if (!s)
        return;
    char *text = dump(tdb_json_schema(s));
    CHECK(text != NULL);
    if (text)
        check_schema_text(text, strlen(text) - 1);
    free(text);

    /* Through a created array's __array.json. */
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    CHECK_EQ_INT(tdb_array_create(&io, s, NULL, 1, &err), 0);
    tdb_schema_free(s);
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    int rc = tdb_fs_open(&fs, &io, &o, &err);
    if (rc)
        fprintf(stderr, "  open: %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    uint64_t ino;
    struct tdb_stat st;
    if (!rc && !tdb_fs_resolve(fs, "__array.json", &ino, &err) &&
        !tdb_fs_stat(fs, ino, &st, &err)) {
        char *b = malloc((size_t)st.size + 1);
        size_t got = (size_t)st.size;
        CHECK_EQ_INT(unit_fs_copy(fs, ino, 0, b, &got, &err), 0);
        CHECK_EQ_INT(got, st.size);
        b[got] = 0;
        CHECK(got > 0 && b[got - 1] == '\n');
        check_schema_text(b, got);
        CHECK(strstr(b, "\"domain\": [0, 18446744073709551599]") != NULL);
        free(b);
    } else {
        CHECK(!"no __array.json");
    }
    tdb_fs_close(fs);
    tdb_io_free(&io);
}

int main(void)
{
    RUN(test_dump_format);
    RUN(test_filter_level_reinterpret);
    return unit_done();
}
