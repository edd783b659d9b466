/* test_schema_json.c: schemas from JSON (format/write/schema_json*.c):
 * refused inputs with the reason each gives, numpy's names of datatypes,
 * and the values a schema takes (defaults, numbers, filters' options). */
#include "../support.h"

#include "filters/options.h"
#include "model/schema.h"
#include "tree/json.h"
#include "write/writer.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- JSON inputs */

static const char *const sparse_head =
    "{\"array_type\": \"sparse\", \"dims\": [";

/* Parses `text`; expects code and, in the message, `needle`. */
static void expect_bad(const char *text, int code, const char *needle)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int rc = tdb_schema_from_json(text, strlen(text), &s, &err);
    CHECK_EQ_INT(rc, code);
    CHECK(s == NULL);
    if (!strstr(err.msg, needle)) {
        fprintf(stderr, "FAIL %s: message '%s' lacks '%s'\n", unit_cur,
                err.msg, needle);
        unit_cur_failed = 1;
    }
}

/* Schemas refused with TDB_E_INVAL, each with a piece of its message. */
static const struct {
    const char *text, *needle;
} json_refused[] = {
    {"{\"array_type\": ",
     "line 1"},
    {"[1, 2]",
     "expected an object"},
    {"{\"array_type\": \"dense\", \"dims\": []}",
     "dims: expected an array of at least one dimension"},
    {"{\"array_type\": \"tiled\", \"dims\": []}",
     "array_type: \"tiled\" is not dense or sparse"},
    {"{\"array_type\": \"dense\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"FLOAT64\", \"domain\": [0, 9], "
     "\"tile_extent\": 2}], \"attrs\": [{\"name\": \"a\", "
     "\"datatype\": \"INT32\"}]}",
     "dense arrays cannot have floating point"},
    {"{\"array_type\": \"dense\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9], "
     "\"tile_extent\": 11}], \"attrs\": [{\"name\": \"a\", "
     "\"datatype\": \"INT32\"}]}",
     "tile extent 11 is larger than the domain"},
    {"{\"array_type\": \"dense\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], "
     "\"attrs\": []}",
     "at least one attribute"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [9, 0]}]}",
     "upper bound is below"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT8\", \"domain\": [0, 128]}]}",
     "dims[0].domain[1]: 128 does not fit INT8"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], \"attrs\": "
     "[{\"name\": \"x\", \"datatype\": \"INT32\"}]}",
     "'x' names both a dimension and an attribute"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], \"attrs\": "
     "[{\"name\": \"a\", \"datatype\": \"INT32\"}, {\"name\": "
     "\"a\", \"datatype\": \"INT8\"}]}",
     "two attributes are named 'a'"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], \"attrs\": "
     "[{\"name\": \"__a\", \"datatype\": \"INT32\"}]}",
     "reserved"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9], \"filters\": "
     "[{\"type\": \"ZIP\"}]}]}",
     "dims[0].filters[0].type: unknown filter \"ZIP\""},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9], \"filters\": "
     "[{\"type\": \"ZSTD\", \"lvl\": 3}]}]}",
     "dims[0].filters[0]: unknown key \"lvl\""},
    {"{\"array_type\": \"sparse\", \"capacity\": 0, \"dims\": "
     "[{\"name\": \"x\", \"datatype\": \"INT32\", "
     "\"domain\": [0, 9]}]}",
     "capacity cannot be 0"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], \"attrs\": "
     "[{\"name\": \"a\", \"datatype\": \"INT32\", \"fill_hex\": "
     "\"0102\"}]}",
     "attrs[0].fill_hex: holds 2 bytes"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], \"attrs\": "
     "[{\"name\": \"a\", \"datatype\": \"UINT8\", \"enumeration\": "
     "\"e\"}]}",
     "attrs[0].enumeration"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], "
     "\"current_domain\": [[0, 10]]}",
     "outside the dimension's domain"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"UINT8\", \"domain\": [0, 255]}]}",
     "whole UINT8 range"},
    {"{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"x\", "
     "\"datatype\": \"INT32\", \"domain\": [0, 9]}], \"dims\": []}",
     "duplicate"},
};

static void test_json_refused(void)
{
    for (size_t i = 0; i < sizeof json_refused / sizeof *json_refused; i++)
        expect_bad(json_refused[i].text, TDB_E_INVAL, json_refused[i].needle);
}

/* The datatype a sparse schema with attribute a of datatype `name` gets
 * (reinterpret: as a DELTA filter's reinterpret_datatype of a), or -1
 * when refused; the message into msg[cap]. */
static int numpy_type(const char *name, bool reinterpret, char *msg,
                      size_t cap)
{
    char text[512];
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int t = -1;

    snprintf(text, sizeof text, "{\"array_type\": \"sparse\", \"dims\": "
             "[{\"name\": \"x\", \"datatype\": \"int64\", \"domain\": "
             "[0, 9]}], \"attrs\": [{\"name\": \"a\", \"datatype\": \"%s\", "
             "\"filters\": [{\"type\": \"DELTA\", "
             "\"reinterpret_datatype\": \"%s\"}]}]}",
             reinterpret ? "INT64" : name, reinterpret ? name : "ANY");
    if (tdb_schema_from_json(text, strlen(text), &s, &err) == 0) {
        CHECK_EQ_INT(s->dims[0].type, TDB_INT64);
        t = reinterpret ? tdb_filter_get_int(&s->attrs[0].filters.f[0],
                                             "reinterpret_datatype")
                        : (int)s->attrs[0].type;
    }
    snprintf(msg, cap, "%s", err.msg);
    tdb_schema_free(s);
    return t;
}

/* numpy's dtype names and type strings are datatypes of the schema JSON
 * too, as user.tiledb.dtype shows them; big-endian ones and numpy's
 * strings are refused, saying why. */
static void test_json_numpy_names(void)
{
    static const struct {
        const char *name;
        int type;
    } ok[] = {
        {"float64", TDB_FLOAT64}, {"<f8", TDB_FLOAT64}, {"f8", TDB_FLOAT64},
        {"=f8", TDB_FLOAT64},     {"float32", TDB_FLOAT32},
        {"<i4", TDB_INT32},       {"int32", TDB_INT32}, {"i2", TDB_INT16},
        {"int8", TDB_INT8},       {"|i1", TDB_INT8},    {"|u1", TDB_UINT8},
        {"uint8", TDB_UINT8},     {"<u2", TDB_UINT16},  {"uint32", TDB_UINT32},
        {"<u8", TDB_UINT64},      {"int64", TDB_INT64}, {"bool", TDB_BOOL},
        {"|b1", TDB_BOOL},        {"?", TDB_BOOL},
        {"datetime64[ns]", 27}, {"<M8[D]", 21},  /* DATETIME_NS, _DAY */
        {"timedelta64[s]", 33}, {"m8[ms]", 34},    /* TIME_SEC, TIME_MS */
        {"FLOAT64", TDB_FLOAT64}, {"STRING_UTF8", TDB_STRING_UTF8},
    };
    char msg[TDB_ERROR_MSG_MAX];

    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        int t = numpy_type(ok[i].name, false, msg, sizeof msg);
        if (t != ok[i].type) {
            fprintf(stderr, "FAIL %s: \"%s\" gave %d (%s), not %d\n",
                    unit_cur, ok[i].name, t, msg, ok[i].type);
            unit_cur_failed = 1;
        }
    }
    CHECK_EQ_INT(numpy_type("int32", true, msg, sizeof msg), TDB_INT32);
    CHECK_EQ_INT(numpy_type("ANY", true, msg, sizeof msg), TDB_ANY);
    CHECK_EQ_INT(numpy_type(">i4", false, msg, sizeof msg), -1);
    CHECK(strstr(msg, "attrs[0].datatype: \">i4\": big-endian; TileDB "
                 "stores little-endian values (\"<i4\")") != NULL);
    CHECK_EQ_INT(numpy_type("S1", false, msg, sizeof msg), -1);
    CHECK(strstr(msg, "write CHAR, STRING_ASCII or STRING_UTF8") != NULL);
    CHECK_EQ_INT(numpy_type("<U4", false, msg, sizeof msg), -1);
    CHECK_EQ_INT(numpy_type("complex128", false, msg, sizeof msg), -1);
    CHECK(strstr(msg, "unknown datatype \"complex128\" (TileDB's name, "
                 "such as FLOAT64, or numpy's, such as float64 or <f8)"));
    CHECK_EQ_INT(numpy_type("m8[D]", false, msg, sizeof msg), -1);
    CHECK_EQ_INT(numpy_type("ANY", false, msg, sizeof msg), -1);
    CHECK_EQ_INT(numpy_type("float", false, msg, sizeof msg), -1);
    CHECK_EQ_INT(numpy_type("", false, msg, sizeof msg), -1);
    CHECK_EQ_INT(numpy_type("i16", false, msg, sizeof msg), -1);
    CHECK_EQ_INT(numpy_type("nope", true, msg, sizeof msg), -1);
    CHECK(strstr(msg, "reinterpret_datatype: unknown datatype") != NULL);
}

/* uint64 above INT64_MAX, as a plain number and as a string; a whole
 * __array.json is accepted; defaults for what is left out. */
static void json_values_defaults(void)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"type\": \"array\", \"schema\": {\"array_type\": \"dense\", "
             "\"dims\": [{\"name\": \"u\", \"datatype\": \"UINT64\", "
             "\"domain\": [18446744073709551000, 18446744073709551614], "
             "\"tile_extent\": \"5\"}], \"attrs\": [{\"name\": \"\", "
             "\"datatype\": \"FLOAT32\", \"cell_val_num\": 2}]}}");
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int rc = tdb_schema_from_json(text, strlen(text), &s, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    CHECK_EQ_INT(s->array_type, TDB_DENSE);
    CHECK(tdb_le64(s->dims[0].lo) == UINT64_C(18446744073709551000));
    CHECK(tdb_le64(s->dims[0].hi) == UINT64_C(18446744073709551614));
    CHECK_EQ_INT(tdb_le64(s->dims[0].extent), 5);
    CHECK_EQ_INT(s->capacity, 10000);
    CHECK_EQ_INT(s->attrs[0].cell_val_num, 2);
    CHECK_EQ_INT(s->attrs[0].fill_size, 8);
    static const uint8_t nan2[8] = {0, 0, 0xc0, 0x7f, 0, 0, 0xc0, 0x7f};
    CHECK_MEM(s->attrs[0].fill, nan2, 8);
    CHECK_EQ_INT(s->coords_filters.n, 1);
    CHECK_EQ_INT(s->coords_filters.f[0].type, TDB_FILTER_ZSTD);
    CHECK_EQ_INT(tdb_filter_get_int(&s->coords_filters.f[0], "level"), -1);
    CHECK_EQ_INT(s->validity_filters.f[0].type, TDB_FILTER_RLE);
    CHECK_EQ_INT(s->offsets_filters.max_chunk_size, 65536);
    tdb_schema_free(s);
}

/* Numbers: SCALE_FLOAT only on floats; long fractions are numbers, not big
 * integers; a too-large integer is named. */
static void json_values_numbers(void)
{
    char text[2048];
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    snprintf(text, sizeof text, "%s{\"name\": \"d\", \"datatype\": "
             "\"INT16\", \"domain\": [-5, 100]}], \"attrs\": [{\"name\": "
             "\"a\", \"datatype\": \"INT32\", \"filters\": [{\"type\": "
             "\"SCALE_FLOAT\", \"scale\": 0.5, \"offset\": \"NaN\", "
             "\"byte_width\": 4}]}]}", sparse_head);
    expect_bad(text, TDB_E_INVAL, "SCALE_FLOAT filters only FLOAT32");

    snprintf(text, sizeof text, "%s{\"name\": \"d\", \"datatype\": "
             "\"FLOAT64\", \"domain\": [-0.12345678901234567890123, "
             "1.5e+300]}], \"attrs\": [{\"name\": \"a\", \"datatype\": "
             "\"FLOAT32\", \"filters\": [{\"type\": \"SCALE_FLOAT\", "
             "\"scale\": 0.25000000000000000000001, \"offset\": \"NaN\", "
             "\"byte_width\": 2}]}]}", sparse_head);
    int rc = tdb_schema_from_json(text, strlen(text), &s, &err);
    CHECK_EQ_INT(rc, 0);
    if (!rc) {
        double lo, hi;
        memcpy(&lo, s->dims[0].lo, 8);
        memcpy(&hi, s->dims[0].hi, 8);
        CHECK(lo == -0.12345678901234567890123 && hi == 1.5e300);
        CHECK(tdb_filter_get_real(&s->attrs[0].filters.f[0], "scale") == 0.25);
        CHECK(isnan(tdb_filter_get_real(&s->attrs[0].filters.f[0], "offset")));
        CHECK_EQ_INT(tdb_filter_get_int(&s->attrs[0].filters.f[0],
                                        "byte_width"), 2);
        tdb_schema_free(s);
    }
    snprintf(text, sizeof text, "%s{\"name\": \"d\", \"datatype\": "
             "\"INT64\", \"domain\": [-9223372036854775809, 0]}]}",
             sparse_head);
    expect_bad(text, TDB_E_INVAL, "dims[0].domain[0]: "
               "-9223372036854775809 does not fit INT64");
    snprintf(text, sizeof text, "%s{\"name\": \"d\", \"datatype\": "
             "\"UINT64\", \"domain\": [0, 18446744073709551616]}]}",
             sparse_head);
    expect_bad(text, TDB_E_INVAL, "dims[0].domain[1]: "
               "18446744073709551616 is too large");
}

/* A dimension without extent, hilbert order, duplicates, a current domain,
 * a nullable attribute with its fill and three filters, serialised as
 * TileDB writes them (filter_pipeline.md). */
static void json_values_filters(void)
{
    char text[2048];
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    snprintf(text, sizeof text, "%s{\"name\": \"d\", \"datatype\": "
             "\"INT16\", \"domain\": [-5, 100], \"tile_extent\": null}], "
             "\"cell_order\": \"hilbert\", \"allows_duplicates\": true, "
             "\"current_domain\": [[-1, 7]], "
             "\"attrs\": [{\"name\": \"f\", \"datatype\": \"FLOAT64\", "
             "\"nullable\": true, \"fill_validity\": 1, \"fill_hex\": "
             "\"000000000000f03f\", \"filters\": [{\"type\": "
             "\"DELTA\", \"reinterpret_datatype\": \"INT32\"}, {\"type\": "
             "\"bit_width_reduction\", \"max_window\": 128}, {\"type\": "
             "\"ZSTD\", \"level\": 5}]}]}", sparse_head);
    int rc = tdb_schema_from_json(text, strlen(text), &s, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    CHECK_EQ_INT(s->cell_order, TDB_HILBERT);
    CHECK(s->allows_dups);
    CHECK(!s->dims[0].has_extent);
    CHECK(s->has_current_domain);
    CHECK_EQ_INT((int16_t)tdb_le16(s->current_domain[0].lo), -1);
    CHECK_EQ_INT((int16_t)tdb_le16(s->dims[0].lo), -5);
    const struct tdb_attr *a = &s->attrs[0];
    CHECK(a->nullable);
    CHECK_EQ_INT(a->fill_validity, 1);
    CHECK_EQ_INT(a->filters.n, 3);
    CHECK_EQ_INT(a->filters.f[0].type, TDB_FILTER_DELTA);
    CHECK_EQ_INT(tdb_filter_get_int(&a->filters.f[0], "reinterpret_datatype"),
                 TDB_INT32);
    CHECK_EQ_INT(tdb_filter_get_int(&a->filters.f[1], "max_window"), 128);
    CHECK_EQ_INT(tdb_filter_get_int(&a->filters.f[2], "level"), 5);
    struct tdb_buf b = {0};
    CHECK_EQ_INT(tdb_pipeline_write(&a->filters, &b), 0);
    static const uint8_t want[] = {
        0, 0, 1, 0, 3, 0, 0, 0,
        19, 6, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0,
        7, 4, 0, 0, 0, 128, 0, 0, 0,
        2, 5, 0, 0, 0, 2, 5, 0, 0, 0};
    CHECK_EQ_INT(b.len, sizeof want);
    if (b.len == sizeof want)
        CHECK_MEM(b.data, want, sizeof want);
    tdb_buf_free(&b);
    tdb_schema_free(s);
}

static void test_json_values(void)
{
    json_values_defaults();
    json_values_numbers();
    json_values_filters();
}

int main(void)
{
    RUN(test_json_refused);
    RUN(test_json_numpy_names);
    RUN(test_json_values);
    return unit_done();
}
