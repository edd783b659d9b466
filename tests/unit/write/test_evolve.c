/* test_evolve.c: schema evolution (tdb_schema_evolve): the schema file it
 * writes holds the bytes TileDB 2.29 wrote for the corpus's evolved
 * arrays; the views of an evolved array; bad evolutions change nothing. */
#include "../unit.h"
#include "../support.h"

#include "core/core.h"
#include "model/generic_tile.h"
#include "tiledb_format_write.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names of folder __schema's schema files, oldest first (2 at most). */
static size_t schema_files(const struct tdb_io *io, char names[2][128])
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    size_t k = 0;
    CHECK_EQ_INT(tdb_io_names(io, "__schema", &n, &err), 0);
    for (size_t i = 0; i < n.n; i++)
        if (!n.is_dir[i] && k < 2)
            snprintf(names[k++], 128, "__schema/%s", n.v[i]);
    tdb_names_free(&n);
    return k;
}

/* The "attrs" of the schema the tree of case `name` shows (its
 * __array.json): a new JSON array (caller decrefs), NULL on failure. */
static json_t *case_attrs(const char *name)
{
    struct tdb_io io;
    uint64_t size;
    json_t *attrs = NULL;
    struct tdb_fs *fs = unit_open_case(name, NULL, &io);
    CHECK(fs != NULL);
    if (!fs)
        return NULL;
    uint8_t *text = unit_fs_file(fs, "__array.json", &size);
    /* (its timestamp range ends at UINT64_MAX: numbers as reals) */
    json_t *root = text ? json_loadb((char *)text, size,
                                     JSON_DECODE_INT_AS_REAL, NULL)
                        : NULL;
    json_t *schema = root ? json_object_get(root, "schema") : NULL;
    if (schema)
        attrs = json_incref(json_object_get(schema, "attrs"));
    CHECK(attrs != NULL);
    json_decref(root);
    free(text);
    tdb_fs_close(fs);
    tdb_io_free(&io);
    return attrs;
}

/* Case `name` was evolved by TileDB at time 2 (its second schema file).
 * That file taken away, tdb_schema_evolve of `evolution` at time 2 writes
 * a schema file whose contents are TileDB's, byte for byte. */
static void check_as_tiledb(const char *name, const char *evolution)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    struct tdb_buf theirs = {0}, ours = {0};
    char files[2][128], *dir, *made = NULL, path[300];
    uint64_t next;
    if (!unit_copy_case(name, &dir, &io))
        return;
    CHECK_EQ_INT(schema_files(&io, files), 2);
    CHECK_EQ_INT(tdb_generic_tile_read(&(struct tdb_gt_file){&io, files[1], 0},
                                       NULL, &theirs, &next, &err), 0);
    CHECK_EQ_INT(io.ops->remove(io.ctx, files[1]), 0);
    int rc = tdb_schema_evolve(&io, evolution, strlen(evolution),
                               &(struct tdb_commit_options){NULL, 2}, &made,
                               &err);
    if (rc)
        fprintf(stderr, "  %s: %s\n", name, err.msg);
    CHECK_EQ_INT(rc, 0);
    CHECK(made && !strncmp(made, "__2_2_", 6) && strlen(made) == 38);
    snprintf(path, sizeof path, "__schema/%s", made ? made : "");
    CHECK_EQ_INT(tdb_generic_tile_read(&(struct tdb_gt_file){&io, path, 0},
                                       NULL, &ours, &next, &err), 0);
    CHECK(theirs.len > 50 && unit_same_bytes(name, ours.data, ours.len,
                                             theirs.data, theirs.len));
    free(made);
    tdb_buf_free(&theirs);
    tdb_buf_free(&ours);
    unit_drop_case(dir, &io);
}

/* schema_evolution_add_attr added c and s at 2: the same attributes (as
 * its __array.json shows them) added again. */
static void test_add_as_tiledb(void)
{
    json_t *attrs = case_attrs("schema_evolution_add_attr");
    if (!attrs)
        return;
    json_t *add = json_array();
    for (size_t i = 0; i < json_array_size(attrs); i++) {
        json_t *a = json_array_get(attrs, i);
        const char *n = json_string_value(json_object_get(a, "name"));
        if (n && (!strcmp(n, "c") || !strcmp(n, "s")))
            json_array_append(add, a);
    }
    CHECK_EQ_INT(json_array_size(add), 2);
    json_t *evo = json_pack("{s:o}", "add_attributes", add);
    char *text = json_dumps(evo, JSON_COMPACT);
    check_as_tiledb("schema_evolution_add_attr", text);
    free(text);
    json_decref(evo);
    json_decref(attrs);
}

/* schema_evolution_drop_attr dropped b at 2. */
static void test_drop_as_tiledb(void)
{
    check_as_tiledb("schema_evolution_drop_attr",
                    "{\"drop_attributes\": [\"b\"]}");
}

/* dense_current_domain's current domain was expanded from [0,9]x[0,14]
 * to [0,19]x[0,24] at 2. */
static void test_current_domain_as_tiledb(void)
{
    check_as_tiledb("dense_current_domain",
                    "{\"expand_current_domain\": [[0, 19], [0, 24]]}");
}

/* The JSON of case copy io's __array.json "schema" (caller decrefs). */
static json_t *io_schema(const struct tdb_io *io)
{
    struct tdb_open_options o;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    uint64_t size;
    json_t *schema = NULL;
    tdb_open_options_init(&o);
    CHECK_EQ_INT(tdb_fs_open(&fs, io, &o, &err), 0);
    uint8_t *text = fs ? unit_fs_file(fs, "__array.json", &size) : NULL;
    json_t *root = text ? json_loadb((char *)text, size,
                                     JSON_DECODE_INT_AS_REAL, NULL)
                        : NULL;
    if (root)
        schema = json_incref(json_object_get(root, "schema"));
    json_decref(root);
    free(text);
    if (fs)
        tdb_fs_close(fs);
    return schema;
}

static json_t *find_named(json_t *arr, const char *name)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && !strcmp(n, name))
            return e;
    }
    return NULL;
}

/* Every name of before is still in after. */
static void check_kept(const struct tdb_names *before,
                       const struct tdb_names *after)
{
    for (size_t i = 0; i < before->n; i++) {
        bool kept = false;
        for (size_t j = 0; j < after->n; j++)
            kept |= !strcmp(before->v[i], after->v[j]);
        CHECK(kept);
    }
}

/* The evolved schema of io shows the old values of "colors" and "sizes"
 * then the new, and the attribute "level" of the new "levels". */
static void check_enums_evolved(const struct tdb_io *io)
{
    json_t *schema = io_schema(io);
    json_t *enums = json_object_get(schema, "enumerations");
    json_t *colors = find_named(enums, "colors");
    json_t *sizes = find_named(enums, "sizes");
    json_t *levels = find_named(enums, "levels");
    CHECK(colors && sizes && levels);
    const char *cd = json_string_value(json_object_get(colors, "data_hex"));
    CHECK(cd && !strcmp(cd, "726564677265656e626c75656379616e6d6167656e7461"
                            "79656c6c6f777768697465626c61636b"));
    const char *co = json_string_value(json_object_get(colors,
                                                       "offsets_hex"));
    CHECK(co && strlen(co) == 16 * 8 &&
          !strcmp(co + 16 * 6, "1d00000000000000"
                               "2200000000000000"));
    const char *sd = json_string_value(json_object_get(sizes, "data_hex"));
    CHECK(sd && strlen(sd) == 16 * 5 &&
          !strcmp(sd + 16 * 4, "0000000000005940"));
    json_t *level = find_named(json_object_get(schema, "attrs"), "level");
    CHECK(level && !strcmp(json_string_value(json_object_get(
                               level, "enumeration")), "levels"));
    json_decref(schema);
}

/* A value already there, or an unknown enumeration, is refused, saying
 * why. */
static void check_enums_refused(const struct tdb_io *io)
{
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"{\"extend_enumerations\": [{\"name\": \"sizes\", "
         "\"data_hex\": \"0000000000005940\"}]}", "a value twice"},
        {"{\"extend_enumerations\": [{\"name\": \"nope\", "
         "\"data_hex\": \"00\"}]}", "no enumeration 'nope'"},
        {"{\"add_attributes\": [{\"name\": \"q\", \"datatype\": \"UINT8\","
         " \"enumeration\": \"nope\"}]}", "no enumeration 'nope'"},
        {"{\"add_enumerations\": [{\"name\": \"sizes\", \"datatype\": "
         "\"INT8\", \"data_hex\": \"01\"}]}", "has an enumeration 'sizes'"},
    };
    struct tdb_error err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *made = NULL;
        int rc = tdb_schema_evolve(io, bad[i].json, strlen(bad[i].json),
                                   &(struct tdb_commit_options){NULL, 6 + i},
                                   &made, &err);
        CHECK(rc != 0 && made == NULL);
        if (!strstr(err.msg, bad[i].says)) {
            fprintf(stderr, "  %s: \"%s\" does not say \"%s\"\n",
                    bad[i].json, err.msg, bad[i].says);
            CHECK(false);
        }
    }
}

/* Enumerations: "colors" extended by two strings and "sizes" by a value,
 * and a new attribute with a new enumeration: the evolved schema shows
 * the old values then the new; the files of the schema before stay, one
 * new file each; a value already there, or an unknown enumeration, is
 * refused. */
static void test_enumerations(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    char *dir, *made = NULL;
    if (!unit_copy_case("enumeration", &dir, &io))
        return;
    struct tdb_names before = {0}, after = {0};
    CHECK_EQ_INT(tdb_io_names(&io, "__schema/__enumerations", &before, &err),
                 0);
    /* "white", "black"; 100.0; a new "levels" of INT32 1, 2, 3 */
    static const char evo[] =
        "{\"extend_enumerations\": ["
        "{\"name\": \"colors\", \"data_hex\": \"7768697465626c61636b\", "
        "\"offsets_hex\": \"00000000000000000500000000000000\"},"
        "{\"name\": \"sizes\", \"data_hex\": \"0000000000005940\"}],"
        " \"add_enumerations\": [{\"name\": \"levels\", \"datatype\": "
        "\"INT32\", \"data_hex\": \"010000000200000003000000\"}],"
        " \"add_attributes\": [{\"name\": \"level\", \"datatype\": "
        "\"UINT8\", \"enumeration\": \"levels\", \"fill_hex\": \"00\"}]}";
    int rc = tdb_schema_evolve(&io, evo, sizeof evo - 1,
                               &(struct tdb_commit_options){NULL, 5}, &made,
                               &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    free(made);
    CHECK_EQ_INT(tdb_io_names(&io, "__schema/__enumerations", &after, &err),
                 0);
    CHECK_EQ_INT(after.n, before.n + 3);
    check_kept(&before, &after);
    tdb_names_free(&before);
    tdb_names_free(&after);
    check_enums_evolved(&io);
    check_enums_refused(&io);
    unit_drop_case(dir, &io);
}

/* The current domain only grows, inside the domain. */
static void test_current_domain_refused(void)
{
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"{\"expand_current_domain\": [[0, 29], [0, 20]]}",
         "can only be expanded"},
        {"{\"expand_current_domain\": [[0, 1000], [0, 24]]}", "domain"},
        {"{\"expand_current_domain\": [[0, 19]]}", "one [lo, hi] per"},
    };
    struct tdb_io io;
    char *dir, files[2][128];
    if (!unit_copy_case("dense_current_domain", &dir, &io))
        return;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct tdb_error err = {0};
        char *made = NULL;
        int rc = tdb_schema_evolve(&io, bad[i].json, strlen(bad[i].json),
                                   &(struct tdb_commit_options){NULL, 5},
                                   &made, &err);
        CHECK(rc != 0 && made == NULL);
        if (!strstr(err.msg, bad[i].says)) {
            fprintf(stderr, "  %s: \"%s\" does not say \"%s\"\n",
                    bad[i].json, err.msg, bad[i].says);
            CHECK(false);
        }
        CHECK_EQ_INT(schema_files(&io, files), 2);
    }
    unit_drop_case(dir, &io);
}

/* An evolved array's views: an added attribute shows its fill value in
 * the cells written before; a dropped one is gone from the view, while
 * the older fragment's own folder still shows it. */
static void test_views(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    struct tdb_open_options o;
    struct tdb_fs *fs = NULL;
    char *dir, *made = NULL;
    uint64_t size;
    if (!unit_copy_case("dense_1d_basic", &dir, &io))
        return;
    static const char evo[] =
        "{\"add_attributes\": [{\"name\": \"z\", \"datatype\": \"INT16\", "
        "\"cell_val_num\": 1, \"fill_hex\": \"2a00\", \"filters\": []}],"
        " \"drop_attributes\": [\"b\"]}";
    /* at 5, after the corpus's times (1): TileDB and the engine take the
     * schema in force in listing order, so times of another number of
     * digits would sort before */
    CHECK_EQ_INT(tdb_schema_evolve(&io, evo, sizeof evo - 1,
                                   &(struct tdb_commit_options){NULL, 5},
                                   &made, &err), 0);
    free(made);
    tdb_open_options_init(&o);
    CHECK_EQ_INT(tdb_fs_open(&fs, &io, &o, &err), 0);
    if (fs) {
        uint8_t *z = unit_fs_file(fs, "z", &size), *b;
        CHECK(z && size >= 2 && size % 2 == 0);
        for (uint64_t i = 0; z && i < size / 2; i++)
            CHECK(z[2 * i] == 42 && z[2 * i + 1] == 0);
        free(z);
        uint64_t ino;
        CHECK_EQ_INT(tdb_fs_resolve(fs, "b", &ino, &err), TDB_E_NOENT);
        CHECK_EQ_INT(tdb_fs_resolve(fs, "a", &ino, &err), 0);
        /* the fragment written before keeps b in its own folder */
        struct tdb_names n = {0};
        CHECK_EQ_INT(tdb_io_names(&io, "__fragments", &n, &err), 0);
        char path[300];
        snprintf(path, sizeof path, "__fragments/%s/b",
                 n.n ? n.v[0] : "none");
        tdb_names_free(&n);
        b = unit_fs_file(fs, path, &size);
        CHECK(b != NULL && size > 0);
        free(b);
        tdb_fs_close(fs);
    }
    unit_drop_case(dir, &io);
}

/* Bad evolutions: each refused with the key named, the array unchanged
 * (still one schema file). */
static void test_refused(void)
{
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"{\"drop_attributes\": [\"nope\"]}", "no attribute \"nope\""},
        {"{\"add_attributes\": [{\"name\": \"a\", \"datatype\": \"INT8\"}]}",
         "a"},
        {"{\"rename\": 1}", "rename"},
        {"[1]", "expected an object"},
        {"{\"add_attributes\": [{\"name\": \"q\", \"datatype\": \"NOPE\"}]}",
         "NOPE"},
        {"{", "evolution JSON"},
        {"{}", "not after the newest schema's"},
    };
    struct tdb_io io;
    char *dir, files[2][128];
    if (!unit_copy_case("dense_1d_basic", &dir, &io))
        return;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct tdb_error err = {0};
        char *made = NULL;
        /* the last at time 1, the schema's own */
        int rc = tdb_schema_evolve(&io, bad[i].json, strlen(bad[i].json),
                                   &(struct tdb_commit_options){NULL,
                                   i + 1 < sizeof bad / sizeof *bad ? 0 : 1},
                                   &made, &err);
        CHECK(rc != 0 && made == NULL);
        if (!strstr(err.msg, bad[i].says)) {
            fprintf(stderr, "  %s: \"%s\" does not say \"%s\"\n", bad[i].json,
                    err.msg, bad[i].says);
            CHECK(false);
        }
        CHECK_EQ_INT(schema_files(&io, files), 1);
    }
    unit_drop_case(dir, &io);
}

/* A kill at every mutating call of an evolution (enumeration files, then
 * the schema file, published whole): the array opens with the schema
 * before or after, and the evolution run again works. */
static void test_kills(void)
{
    static const char evo[] =
        "{\"extend_enumerations\": [{\"name\": \"sizes\", "
        "\"data_hex\": \"0000000000005940\"}],"
        " \"add_attributes\": [{\"name\": \"z\", \"datatype\": "
        "\"INT16\", \"fill_hex\": \"2a00\"}]}";
    struct tdb_io io, counting;
    struct tdb_io_fault all = {0};
    struct tdb_error err = {0};
    char *dir, *made = NULL;
    if (!unit_copy_case("enumeration", &dir, &io))
        return;
    CHECK_EQ_INT(tdb_io_faulty(&counting, &io, &all), 0);
    CHECK_EQ_INT(tdb_schema_evolve(&counting, evo, sizeof evo - 1,
                                   &(struct tdb_commit_options){NULL, 5},
                                   &made, &err), 0);
    free(made);
    tdb_io_free(&counting);
    uint64_t total = all.count;
    CHECK(total >= 3);
    unit_drop_case(dir, &io);
    for (uint64_t k = 1; k <= total; k++) {
        struct tdb_io faulty;
        struct tdb_io_fault f = {.fail_at = k, .crash = true};
        if (!unit_copy_case("enumeration", &dir, &io))
            return;
        CHECK_EQ_INT(tdb_io_faulty(&faulty, &io, &f), 0);
        made = NULL;
        int rc = tdb_schema_evolve(&faulty, evo, sizeof evo - 1,
                                   &(struct tdb_commit_options){NULL, 5},
                                   &made, &err);
        free(made);
        tdb_io_free(&faulty);
        json_t *schema = io_schema(&io);
        CHECK(schema != NULL);
        bool evolved = find_named(json_object_get(schema, "attrs"), "z");
        CHECK(rc != 0 || evolved);
        json_decref(schema);
        if (!evolved) {
            made = NULL;
            CHECK_EQ_INT(tdb_schema_evolve(&io, evo, sizeof evo - 1,
                                           &(struct tdb_commit_options){NULL,
                                           6}, &made, &err), 0);
            free(made);
        }
        schema = io_schema(&io);
        json_t *sizes = find_named(json_object_get(schema, "enumerations"),
                                   "sizes");
        const char *sd = json_string_value(json_object_get(sizes,
                                                           "data_hex"));
        CHECK(find_named(json_object_get(schema, "attrs"), "z") && sd &&
              strlen(sd) == 16 * 5);
        json_decref(schema);
        unit_drop_case(dir, &io);
        if (unit_cur_failed)
            return;
    }
    printf("   killed at each of %llu calls: the schema before or after, "
           "then evolved again\n", (unsigned long long)total);
}

int main(void)
{
    RUN_CORPUS(test_add_as_tiledb);
    RUN_CORPUS(test_drop_as_tiledb);
    RUN_CORPUS(test_current_domain_as_tiledb);
    RUN_CORPUS(test_enumerations);
    RUN_CORPUS(test_current_domain_refused);
    RUN_CORPUS(test_kills);
    RUN_CORPUS(test_views);
    RUN_CORPUS(test_refused);
    return unit_done();
}
