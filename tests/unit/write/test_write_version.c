/* test_write_version.c: what is written into an array of an older
 * format (tdb_schema_fragment_version, model/schema_write.c): as TileDB
 * writes into an array whose latest schema is of format 7 or later, a
 * fragment, a delete and a consolidated fragment take the array's own
 * version (from 16, where their files are laid out as at 22; older
 * arrays get 22), and the filters act as at that version (POSITIVE_DELTA
 * leaves time values as they are before 20).  The older arrays are made
 * here: a one-attribute schema of format 22 without labels, enumerations
 * or current domain, less the parts the older format lacks. */
#include "write/writer.h"
#include "read/array.h"
#include "model/generic_tile.h"
#include "../support.h"

#include <stdlib.h>
#include <string.h>
#include "fixture.h"

#define NCELLS 100

static const char dense_json[] =
    "{\"array_type\": \"dense\", \"dims\": [{\"name\": \"d\", "
    "\"datatype\": \"INT64\", \"domain\": [0, 99], \"tile_extent\": 50}], "
    "\"attrs\": [{\"name\": \"t\", \"datatype\": \"DATETIME_MS\", "
    "\"filters\": [{\"type\": \"POSITIVE_DELTA\", \"max_window\": 1024}]}]}";

static const char sparse_json[] =
    "{\"array_type\": \"sparse\", \"capacity\": 50, \"dims\": [{\"name\": "
    "\"d\", \"datatype\": \"INT64\", \"domain\": [0, 99], \"tile_extent\": "
    "50}], \"attrs\": [{\"name\": \"t\", \"datatype\": \"DATETIME_MS\", "
    "\"filters\": [{\"type\": \"POSITIVE_DELTA\", \"max_window\": 1024}]}]}";

/* The bytes a format-22 schema of one attribute has that format v lacks
 * (array_schema.md): the current domain (5 bytes when empty) before 22,
 * the enumeration count and the attribute's enumeration name before 20,
 * the label count before 18, the attribute's order byte before 17. */
static size_t schema_cut(uint32_t v)
{
    return v >= 22 ? 0 : v >= 20 ? 5 : v >= 18 ? 13 : v >= 17 ? 17 : 18;
}

/* A new array at io from `json`, its one schema file then rewritten as
 * format v (16 to 22) holds it. */
static void make_array(const struct tdb_io *io, const char *json, uint32_t v)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    struct tdb_names n = {0};
    struct tdb_buf body = {0}, file = {0};
    CHECK_EQ_INT(tdb_schema_from_json(json, strlen(json), &s, &err), 0);
    CHECK_EQ_INT(tdb_array_create(io, s, NULL, 1, &err), 0);
    tdb_schema_free(s);
    CHECK_EQ_INT(tdb_io_names(io, "__schema", &n, &err), 0);
    char path[300] = "";
    size_t files = 0;
    for (size_t i = 0; i < n.n; i++)
        if (!n.is_dir[i] && ++files)
            snprintf(path, sizeof path, "__schema/%s", n.v[i]);
    CHECK_EQ_INT(files, 1); /* beside __enumerations/ */
    tdb_names_free(&n);
    struct tdb_gt_file at = {io, path, 0};
    CHECK_EQ_INT(tdb_generic_tile_read(&at, NULL, &body, NULL, &err), 0);
    size_t cut = schema_cut(v);
    CHECK(body.len > cut + 4);
    if (body.len <= cut + 4)
        return;
    /* what is cut: zeros, then the empty current domain (version 0, 1) */
    for (size_t i = body.len - cut; i + 5 < body.len; i++)
        CHECK_EQ_INT(body.data[i], 0);
    if (cut)
        CHECK_EQ_INT(body.data[body.len - 1], 1);
    body.len -= cut;
    memcpy(body.data, &v, 4);
    CHECK_EQ_INT(tdb_write_generic_tile(&body, NULL, &file, &err), 0);
    CHECK_EQ_INT(io->ops->remove(io->ctx, path), 0);
    unit_put(io, path, file.data, file.len);
    tdb_buf_free(&body);
    tdb_buf_free(&file);
}

/* The format version the array at io reads its fragment `name` at (its
 * name's and its metadata's agree), and that of its newest schema. */
static void check_versions(const struct tdb_io *io, const char *name,
                           uint32_t v)
{
    struct tdb_open_options o;
    struct tdb_array *a = NULL;
    struct tdb_cache *c = NULL;
    struct tdb_error err = {0};
    tdb_open_options_init(&o);
    CHECK_EQ_INT(tdb_cache_create(&c, 8u << 20), 0);
    CHECK_EQ_INT(tdb_array_open(&a, io, "", &o, c, &err), 0);
    const char *suffix = strrchr(name, '_');
    CHECK(suffix && strtoul(suffix + 1, NULL, 10) == v);
    size_t found = 0;
    for (size_t i = 0; a && i < a->nfrags; i++)
        if (strstr(a->frags[i].fm->path, name) && ++found)
            CHECK_EQ_INT(a->frags[i].fm->version, v);
    CHECK_EQ_INT(found, 1); /* the fragment is live */
    if (a)
        CHECK_EQ_INT(a->schema->version, v);
    tdb_array_close(a);
    tdb_cache_free(c);
}

/* The values of cells 0.. (milliseconds, rising), from `base`. */
static void times(int64_t *t, int64_t base)
{
    for (int i = 0; i < NCELLS; i++)
        t[i] = base + 1000 * i + i * i;
}

/* The mount's file t of the array at io holds t[0..n). */
static void check_values(const struct tdb_io *io, const int64_t *t, size_t n)
{
    struct tdb_fs *fs = fs_open(io, NULL);
    uint64_t size = 0;
    uint8_t *got = fs ? fs_file(fs, "t", &size) : NULL;
    CHECK(got && unit_same_bytes("t", got, size, (const uint8_t *)t,
                                 n * sizeof *t));
    free(got);
    tdb_fs_close(fs);
}

/* Writes the dense cells t into the array at io; the new fragment's
 * name into name. */
static void write_dense(const struct tdb_io *io, const int64_t *t,
                        uint64_t ts, char *name, size_t cap)
{
    struct tdb_io stg;
    struct tdb_error err = {0};
    char *nm = NULL;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    unit_put(&stg, "s/t", t, NCELLS * sizeof *t);
    unit_put(&stg, "s/__subarray.json", "[[0, 99]]", 9);
    int r = unit_write(io, &stg, "s", NULL, ts, 1, &nm, &err);
    if (r)
        fprintf(stderr, "  write: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    snprintf(name, cap, "%s", nm ? nm : "");
    free(nm);
    tdb_io_free(&stg);
}

/* A dense fragment written into an array of format v takes v, its time
 * values through POSITIVE_DELTA as they are before 20 (the tile holds
 * them as written) and as differences from 20 on; the cells read back. */
static void dense_at(uint32_t v)
{
    struct tdb_io io;
    int64_t t[NCELLS];
    char name[200], path[300];
    times(t, 1700000000000);
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    make_array(&io, dense_json, v);
    write_dense(&io, t, 10, name, sizeof name);
    check_versions(&io, name, v);
    check_values(&io, t, NCELLS);
    uint8_t *tile = NULL;
    uint64_t size = 0;
    snprintf(path, sizeof path, "__fragments/%s/a0.tdb", name);
    CHECK_EQ_INT(tdb_io_read_file(&io, path, &tile, &size, NULL), 0);
    /* the first tile's 50 values, as written */
    bool plain = tile && memmem(tile, size, t, 50 * sizeof *t) != NULL;
    CHECK_EQ_INT(plain, v < 20);
    free(tile);
    tdb_io_free(&io);
}

static void test_dense_fragment_versions(void)
{
    static const uint32_t v[] = {16, 17, 18, 19, 20, 21, 22};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        dense_at(v[i]);
}

/* Two dense fragments of an array of format 19 and of 21 consolidated:
 * the merged one takes the array's version and holds the newer cells. */
static void test_consolidated_versions(void)
{
    static const uint32_t v[] = {19, 21};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        struct tdb_io io;
        struct tdb_cons_result r;
        struct tdb_cons_options o = {.threads = 1};
        struct tdb_error err = {0};
        int64_t t[NCELLS];
        char name[200];
        CHECK_EQ_INT(tdb_io_mem(&io), 0);
        make_array(&io, dense_json, v[i]);
        times(t, 1600000000000);
        write_dense(&io, t, 10, name, sizeof name);
        times(t, 1700000000000);
        write_dense(&io, t, 20, name, sizeof name);
        CHECK_EQ_INT(tdb_consolidate_fragments(&io, &o, &r, &err), 0);
        CHECK_EQ_INT(r.merged, 2);
        check_versions(&io, r.name, v[i]);
        check_values(&io, t, NCELLS);
        tdb_io_free(&io);
    }
}

/* A delete from a sparse array of format 16 and of 21: its commit takes
 * the array's version, and the cells it meets are gone. */
static void test_delete_versions(void)
{
    static const uint32_t v[] = {16, 21};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        struct tdb_io io, stg;
        struct tdb_error err = {0};
        int64_t d[NCELLS], t[NCELLS];
        char *nm = NULL, *del = NULL;
        CHECK_EQ_INT(tdb_io_mem(&io), 0);
        CHECK_EQ_INT(tdb_io_mem(&stg), 0);
        make_array(&io, sparse_json, v[i]);
        times(t, 0);
        for (int c = 0; c < NCELLS; c++)
            d[c] = c;
        unit_put(&stg, "s/d", d, sizeof d);
        unit_put(&stg, "s/t", t, sizeof t);
        CHECK_EQ_INT(unit_write(&io, &stg, "s", NULL, 10, 1, &nm, &err), 0);
        if (nm)
            check_versions(&io, nm, v[i]);
        struct tdb_commit_options at = {NULL, 20};
        const char cond[] = "d >= 50";
        CHECK_EQ_INT(tdb_delete_commit(&io, cond, strlen(cond), &at, &del,
                                       &err), 0);
        const char *suffix = del ? strrchr(del, '_') : NULL;
        CHECK(suffix && strtoul(suffix + 1, NULL, 10) == v[i]);
        check_values(&io, t, 50);
        free(nm);
        free(del);
        tdb_io_free(&stg);
        tdb_io_free(&io);
    }
}

int main(void)
{
    RUN(test_dense_fragment_versions);
    RUN(test_consolidated_versions);
    RUN(test_delete_versions);
    return unit_done();
}
