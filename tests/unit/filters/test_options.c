/* test_options.c: a filter's options as its table declares them
 * (format/filters/options.c): each filter's defaults and table, a
 * compressor read as "no compression", and the options of every filter in
 * schema JSON, refused with their reasons or accepted and printed back. */
#include "../unit.h"
#include "../support.h"

#include "filters/filter.h"
#include "filters/options.h"
#include "model/schema.h"
#include "tree/json.h"
#include "write/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A dense schema of one FLOAT64 attribute with `filters` (a JSON list). */
static int filters_schema(const char *filters, struct tdb_schema **s,
                          struct tdb_error *err)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"array_type\": \"dense\", \"dims\": [{\"name\": \"x\", "
             "\"datatype\": \"INT32\", \"domain\": [1, 8], "
             "\"tile_extent\": 4}], \"attrs\": [{\"name\": \"a\", "
             "\"datatype\": \"FLOAT64\", \"filters\": [%s]}]}", filters);
    return tdb_schema_from_json(json, strlen(json), s, err);
}

/* Every known type's defaults fit, and each table names its fields;
 * the defaults of a few (f is left a SCALE_FLOAT filter). */
static void options_defaults(struct tdb_filter *f)
{
    for (unsigned t = 0; t < TDB_FILTER_TYPE_COUNT; t++) {
        const struct tdb_filter_ops *ops = tdb_filter_lookup(t);
        CHECK_EQ_INT(tdb_filter_init(f, t), ops ? 0 : TDB_E_INVAL);
        CHECK(!ops || ops->options_size <= TDB_FILTER_OPTIONS_MAX);
        for (unsigned i = 0; ops && i < ops->n_options; i++)
            CHECK(tdb_filter_opt_find(ops, ops->options[i].name) ==
                  &ops->options[i]);
    }
    CHECK_EQ_INT(tdb_filter_init(f, TDB_FILTER_DELTA), 0);
    CHECK_EQ_INT(tdb_filter_get_int(f, "compressor"), 8);
    CHECK_EQ_INT(tdb_filter_get_int(f, "level"), -1);
    CHECK_EQ_INT(tdb_filter_get_int(f, "reinterpret_datatype"), TDB_ANY);
    CHECK_EQ_INT(tdb_filter_init(f, TDB_FILTER_BIT_WIDTH_REDUCTION), 0);
    CHECK_EQ_INT(tdb_filter_get_int(f, "max_window"), 256);
    CHECK_EQ_INT(tdb_filter_init(f, TDB_FILTER_SCALE_FLOAT), 0);
    CHECK(tdb_filter_get_real(f, "scale") == 1.0);
    CHECK_EQ_INT(tdb_filter_get_int(f, "byte_width"), 8);
}

/* Each filter's options: its defaults, its table, and a compressor read
 * as "no compression" that runs as NONE but keeps its options. */
static void test_filter_options(void)
{
    struct tdb_filter f, g;
    char why[64];
    options_defaults(&f);
    /* a filter copies by assignment */
    CHECK_EQ_INT(tdb_filter_set_real(&f, "offset", -2.5), 0);
    g = f;
    CHECK(tdb_filter_get_real(&g, "offset") == -2.5);
    /* options a filter does not have, or of the other kind */
    CHECK_EQ_INT(tdb_filter_set_int(&f, "level", 3), TDB_E_INVAL);
    CHECK_EQ_INT(tdb_filter_set_real(&f, "byte_width", 2.0), TDB_E_INVAL);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "level"), 0);
    CHECK(tdb_filter_get_real(&f, "nothing") == 0.0);
    /* the fields' own checks */
    const struct tdb_filter_opt *bw =
        tdb_filter_opt_find(f.ops, "byte_width");
    struct tdb_fopt_value v = {3, 0.0};
    CHECK(tdb_fopt_check(bw, &v, why, sizeof why) != 0);
    CHECK(strcmp(why, "3 is not 1, 2, 4 or 8") == 0);
    v.i = 4;
    CHECK_EQ_INT(tdb_fopt_check(bw, &v, why, sizeof why), 0);
    CHECK_EQ_INT(tdb_fopt_check(tdb_filter_opt_find(f.ops, "scale"), &v,
                                why, sizeof why), 0);
    CHECK_EQ_INT(tdb_filter_init(&f, TDB_FILTER_WEBP), 0);
    const struct tdb_filter_opt *fmt = tdb_filter_opt_find(f.ops, "format");
    CHECK(strcmp(tdb_fopt_name(fmt, TDB_WEBP_RGBA), "RGBA") == 0);
    CHECK(strcmp(tdb_fopt_name(fmt, 9), "NONE") == 0);
    /* a compressor at a level; a level for a filter without one */
    CHECK_EQ_INT(tdb_filter_init_level(&f, TDB_FILTER_GZIP, 9), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "level"), 9);
    CHECK_EQ_INT(tdb_filter_init_level(&f, TDB_FILTER_XOR, 9), TDB_E_INVAL);
    CHECK_EQ_INT(tdb_filter_init_level(&f, TDB_FILTER_DEPRECATED, 9),
                 TDB_E_INVAL);
    /* GZIP whose options say compressor 0: NONE runs, the level stays */
    static const uint8_t none[] = {0, 0, 1, 0, 1, 0, 0, 0,
                                   1, 5, 0, 0, 0, 0, 7, 0, 0, 0};
    struct tdb_pipeline p;
    struct tdb_cursor c;
    struct tdb_error err = {0};
    tdb_cur_init(&c, none, sizeof none);
    CHECK_EQ_INT(tdb_pipeline_read(&p, &c, 22, &err), 0);
    CHECK(p.f[0].ops == &tdb_filter_noop);
    CHECK_EQ_INT(tdb_filter_get_int(&p.f[0], "level"), 7);
    tdb_pipeline_free(&p);
}

/* Filter options in a schema's JSON that are refused, with the message
 * naming why. */
static void json_options_refused(void)
{
    static const struct {
        const char *filter, *needle;
    } bad[] = {
        {"{\"type\": \"ZSTD\", \"level\": 2147483648}",
         "[0].level: out of range"},
        {"{\"type\": \"ZSTD\", \"level\": 1.5}", "is not an integer"},
        {"{\"type\": \"BIT_WIDTH_REDUCTION\", \"max_window\": 0}",
         "max_window: must not be 0"},
        {"{\"type\": \"POSITIVE_DELTA\", \"max_window\": -1}",
         "max_window: -1 is out of range (0 to 4294967295)"},
        {"{\"type\": \"SCALE_FLOAT\", \"byte_width\": 3}",
         "byte_width: 3 is not 1, 2, 4 or 8"},
        {"{\"type\": \"SCALE_FLOAT\", \"byte_width\": 9}",
         "byte_width: 9 is out of range (0 to 8)"},
        {"{\"type\": \"SCALE_FLOAT\", \"scale\": null}",
         "scale: expected a number"},
        {"{\"type\": \"DELTA\", \"reinterpret_datatype\": 3}",
         "reinterpret_datatype: expected a datatype name"},
        {"{\"type\": \"DOUBLE_DELTA\", \"max_window\": 4}",
         "unknown key \"max_window\""},
        {"{\"type\": \"BYTESHUFFLE\", \"level\": 4}",
         "unknown key \"level\""},
        {"{\"type\": \"GZIP\", \"compressor\": 1}",
         "unknown key \"compressor\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tdb_schema *s = NULL;
        struct tdb_error err = {0};
        CHECK_EQ_INT(filters_schema(bad[i].filter, &s, &err), TDB_E_INVAL);
        if (!strstr(err.msg, bad[i].needle)) {
            fprintf(stderr, "  case %zu: '%s' lacks '%s'\n", i, err.msg,
                    bad[i].needle);
            CHECK(!"message");
        }
    }
}

/* The options of the filters in schema JSON, as each filter's table takes
 * them: what is refused and why, what is accepted and how it prints. */
static void test_filter_json_options(void)
{
    json_options_refused();
    /* null leaves the default; a level may be a decimal string; ANY is
     * no reinterpretation and is not printed */
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(filters_schema("{\"type\": \"SCALE_FLOAT\", \"offset\": "
                                "\"-Infinity\", \"byte_width\": 4}, "
                                "{\"type\": \"ZSTD\", \"level\": null}, "
                                "{\"type\": \"DELTA\", \"level\": \"-3\", "
                                "\"reinterpret_datatype\": \"ANY\"}, "
                                "{\"type\": \"BIT_WIDTH_REDUCTION\", "
                                "\"max_window\": null}",
                                &s, &err), 0);
    if (!s) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    json_t *j = tdb_json_schema(s);
    struct tdb_buf text = {0};
    CHECK(j && tdb_json_dump(j, &text) == 0);
    json_decref(j);
    tdb_buf_put_u8(&text, 0);
    CHECK(strstr((char *)text.data,
                 "\"filters\": [{\"type\": \"SCALE_FLOAT\", \"scale\": 1, "
                 "\"offset\": \"-Infinity\", \"byte_width\": 4}, "
                 "{\"type\": \"ZSTD\", \"level\": -1}, "
                 "{\"type\": \"DELTA\", \"level\": -3}, "
                 "{\"type\": \"BIT_WIDTH_REDUCTION\", \"max_window\": 256}"
                 "]") != NULL);
    tdb_buf_free(&text);
    tdb_schema_free(s);
}

int main(void)
{
    RUN(test_filter_options);
    RUN(test_filter_json_options);
    return unit_done();
}
