/* test_create.c: creating arrays and writing metadata
 * (format/write/create.c): every corpus schema through JSON and back byte
 * for byte, created arrays read back, metadata files, and the folders a
 * new array refuses. */
#include "../support.h"

#include "filters/options.h"
#include "model/arraydir.h"
#include "model/generic_tile.h"
#include "tree/json.h"
#include "model/meta.h"
#include "write/writer.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

/* ---------------------------------------------------------------- helpers */

/* The 32-byte key of a corpus case (case.json key_hex), if any. */
static bool case_key(const char *case_dir, uint8_t key[32])
{
    char path[1100];
    snprintf(path, sizeof path, "%s/case.json", case_dir);
    json_t *j = json_load_file(path, 0, NULL);
    const char *hex = json_string_value(json_object_get(j, "key_hex"));
    bool ok = hex && strlen(hex) == 64;
    for (int i = 0; ok && i < 32; i++) {
        unsigned v;
        ok = sscanf(hex + 2 * i, "%2x", &v) == 1;
        key[i] = (uint8_t)v;
    }
    json_decref(j);
    return ok;
}

/* The schema file in force in an array: the newest of __schema (by t1, then
 * name), else the legacy __array_schema.tdb.  NULL: not an array. */
static char *newest_schema(const struct tdb_io *io)
{
    struct tdb_names n = {0};
    char *best = NULL;
    uint64_t best_t = 0;
    if (tdb_io_names(io, "__schema", &n, NULL) == 0) {
        for (size_t i = 0; i < n.n; i++) {
            struct tdb_tsname ts;
            if (n.is_dir[i] || tdb_tsname_parse(n.v[i], &ts))
                continue;
            if (!best || ts.t1 > best_t ||
                (ts.t1 == best_t && strcmp(n.v[i], best) > 0)) {
                free(best);
                best = strdup(n.v[i]);
                best_t = ts.t1;
            }
        }
    }
    tdb_names_free(&n);
    if (best) {
        char *p = tdb_path_join("__schema", best);
        free(best);
        return p;
    }
    return tdb_io_exists(io, "__array_schema.tdb")
               ? strdup("__array_schema.tdb")
               : NULL;
}

static char *schema_json_text(const struct tdb_schema *s, size_t *len)
{
    struct tdb_buf b = {0};
    json_t *j = tdb_json_schema(s);
    int rc = j ? tdb_json_dump(j, &b) : TDB_E_NOMEM;
    json_decref(j);
    if (!rc) {
        b.len--;                        /* the text without its "\n" */
        rc = tdb_buf_put_u8(&b, 0);
    }
    if (rc) {
        tdb_buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return (char *)b.data;
}

/* A JSON schema object without its "version" (the created array is v22
 * whatever the original's version). */
static json_t *schema_sans_version(json_t *j)
{
    json_t *s = json_object_get(j, "schema");
    s = json_deep_copy(s ? s : j);
    json_object_del(s, "version");
    return s;
}

/* ------------------------------------------------- the corpus, round trip */

static void set_chunk(json_t *o, const char *key, const struct tdb_pipeline *p)
{
    char k[64];
    snprintf(k, sizeof k, "%s_max_chunk_size", key);
    if (p->max_chunk_size != 65536 && !json_object_get(o, k))
        json_object_set_new(o, k, json_integer(p->max_chunk_size));
}

/* __array.json does not show a pipeline's max chunk size; where one differs
 * from TileDB's default, add it as tdb_schema_from_json reads it (a sibling
 * key "<pipeline>_max_chunk_size"). */
static char *add_chunk_sizes(const char *text, const struct tdb_schema *s,
                             size_t *len)
{
    json_t *j = json_loads(text, 0, NULL);
    if (!j)
        return NULL;
    set_chunk(j, "coords_filters", &s->coords_filters);
    set_chunk(j, "offsets_filters", &s->offsets_filters);
    set_chunk(j, "validity_filters", &s->validity_filters);
    for (uint32_t i = 0; i < s->ndims; i++)
        set_chunk(json_array_get(json_object_get(j, "dims"), i), "filters",
                  &s->dims[i].filters);
    for (uint32_t i = 0; i < s->nattrs; i++)
        set_chunk(json_array_get(json_object_get(j, "attrs"), i), "filters",
                  &s->attrs[i].filters);
    char *out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (out)
        *len = strlen(out);
    return out;
}

/* The schema in force in the array of io with its enumerations (NULL
 * after saying why: not an array, or not loaded). */
static struct tdb_schema *rt_load(const struct tdb_io *io, const char *name,
                                  const uint8_t *key)
{
    struct tdb_error err = {0};
    struct tdb_schema *s = NULL;
    char *spath = newest_schema(io);
    if (!spath) {
        printf("  skip %s: not an array (no schema)\n", name);
        return NULL;
    }
    int rc = tdb_schema_load(io, spath, key, &s, &err);
    free(spath);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  %s: %s\n", name, err.msg);
        tdb_schema_free(s);
        return NULL;
    }
    for (uint32_t i = 0; i < s->nenums; i++)
        CHECK_EQ_INT(tdb_enumeration_load(io, &s->enums[i], key, &err), 0);
    return s;
}

/* The JSON carries each enumeration's values; its file gets a new name,
 * so the enumerations of orig and back (parsed with code rc) are
 * compared rather than the bytes. */
static void rt_check_enums(const struct tdb_schema *orig,
                           const struct tdb_schema *back, int rc)
{
    CHECK_EQ_INT(rc, 0);
    CHECK(back && back->nenums == orig->nenums);
    for (uint32_t i = 0; back && i < orig->nenums && i < back->nenums; i++) {
        const struct tdb_enumeration *a = &orig->enums[i], *b = &back->enums[i];
        CHECK(!strcmp(a->name, b->name) && a->type == b->type &&
              a->cell_val_num == b->cell_val_num && a->ordered == b->ordered);
        CHECK(a->data_size == b->data_size &&
              (!a->data_size || !memcmp(a->data, b->data, a->data_size)));
        CHECK(a->offsets_size == b->offsets_size &&
              (!a->offsets_size ||
               !memcmp(a->offsets, b->offsets, a->offsets_size)));
    }
}

/* True when orig and back serialise to the same bytes (their size into
 * *len); otherwise fails the test saying so. */
static bool rt_same_bytes(const struct tdb_schema *orig,
                          const struct tdb_schema *back, const char *name,
                          uint64_t *len)
{
    struct tdb_buf b1 = {0}, b2 = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_serialize(orig, &b1, &err), 0);
    CHECK_EQ_INT(tdb_schema_serialize(back, &b2, &err), 0);
    CHECK_EQ_INT(b2.len, b1.len);
    bool same = b1.len == b2.len && !memcmp(b1.data, b2.data, b1.len);
    if (!same) {
        fprintf(stderr, "  %s: JSON round trip changed the schema bytes\n",
                name);
        unit_cur_failed = 1;
    }
    *len = b2.len;
    tdb_buf_free(&b1);
    tdb_buf_free(&b2);
    return same;
}

/* The folders of a created array at dst. */
static void rt_check_dirs(const char *dst)
{
    static const char *const dirs[] = {"__schema", "__schema/__enumerations",
                                       "__commits", "__fragments", "__meta",
                                       "__fragment_meta", "__labels"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char p[1400];
        snprintf(p, sizeof p, "%s/%s", dst, dirs[i]);
        CHECK(unit_is_dir(p));
    }
}

/* The mount's __array.json shows the schema JSON `text`, as version 22. */
static void rt_check_array_json(struct tdb_fs *fs, const char *text)
{
    uint64_t aj_len = 0;
    char *aj = (char *)unit_fs_file(fs, "__array.json", &aj_len);
    CHECK(aj != NULL);
    if (aj) {
        /* __array.json's "timestamp" holds UINT64_MAX, beyond jansson's
         * integers: numbers are compared as reals (the schema bytes were
         * compared exactly before). */
        json_t *got = json_loads(aj, JSON_DECODE_INT_AS_REAL, NULL);
        json_t *want = json_loads(text, JSON_DECODE_INT_AS_REAL, NULL);
        json_t *g = schema_sans_version(got), *w = schema_sans_version(want);
        CHECK(got && want && json_equal(g, w));
        CHECK(json_number_value(json_object_get(
                  json_object_get(got, "schema"), "version")) == 22);
        json_decref(g);
        json_decref(w);
        json_decref(got);
        json_decref(want);
    }
    free(aj);
}

/* The created schema file (of `len` schema bytes): the generic tile header
 * TileDB writes (GZIP level 1, max chunk size 65536, AES-256-GCM when
 * keyed), as in the corpus's schema files. */
static void rt_check_schema_file(const struct tdb_io *out, const uint8_t *key,
                                 uint64_t len)
{
    static const uint8_t plain[] = {4, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                                    18, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0,
                                    1, 5, 0, 0, 0, 1, 1, 0, 0, 0};
    static const uint8_t enc[] = {4, 1, 0, 0, 0, 0, 0, 0, 0, 1,
                                  23, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0,
                                  1, 5, 0, 0, 0, 1, 1, 0, 0, 0,
                                  11, 0, 0, 0, 0};
    struct tdb_error err = {0};
    char *created = newest_schema(out);
    uint8_t *f = NULL;
    uint64_t fsz = 0;
    CHECK(created && tdb_io_read_file(out, created, &f, &fsz, &err) == 0);
    if (f && fsz > 64) {
        CHECK_EQ_INT(tdb_le32(f), 22);
        CHECK_EQ_INT(tdb_le64(f + 12), len);
        if (key)
            CHECK_MEM(f + 20, enc, sizeof enc);
        else
            CHECK_MEM(f + 20, plain, sizeof plain);
    }
    free(f);
    free(created);
}

/* Creates schema s (JSON `text`, `len` bytes serialised) as tmp/name and
 * reads it back through the tree; 1 when it could be. */
static int rt_create(const char *tmp, const char *name,
                     const struct tdb_schema *s, const uint8_t *key,
                     const char *text, uint64_t len)
{
    char dst[1200];
    struct tdb_io out = {0};
    struct tdb_error err = {0};
    struct tdb_fs *fs = NULL;
    snprintf(dst, sizeof dst, "%s/%s", tmp, name);
    tdb_io_posix(&out, dst);
    int rc = tdb_array_create(&out, s, key, 5, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "  %s: %s\n", name, err.msg);
    if (!rc) {
        rt_check_dirs(dst);
        struct tdb_open_options o;
        tdb_open_options_init(&o);
        o.key = key;
        rc = tdb_fs_open(&fs, &out, &o, &err);
        CHECK_EQ_INT(rc, 0);
        if (rc)
            fprintf(stderr, "  %s: open: %s\n", name, err.msg);
    }
    if (!rc) {
        rt_check_array_json(fs, text);
        rt_check_schema_file(&out, key, len);
    }
    tdb_fs_close(fs);
    tdb_io_free(&out);
    return !rc;
}

/* Corpus case cdir's schema through JSON and back, byte for byte, then
 * created under tmp and read back; 1 when it was tested. */
static int round_trip_case(const char *cdir, const char *name, char *tmp)
{
    char apath[1100];
    struct tdb_io io = {0};
    struct tdb_schema *orig, *back = NULL;
    struct tdb_error err = {0};
    uint8_t keyb[32];
    const uint8_t *key = case_key(cdir, keyb) ? keyb : NULL;
    char *text = NULL;
    size_t len = 0;
    uint64_t slen = 0;
    int tested = 0;

    snprintf(apath, sizeof apath, "%s/array", cdir);
    tdb_io_posix(&io, apath);
    if (!(orig = rt_load(&io, name, key)))
        goto out;
    text = schema_json_text(orig, &len);
    CHECK(text != NULL);
    if (!text)
        goto out;
    char *full = add_chunk_sizes(text, orig, &len);
    CHECK(full != NULL);
    int rc = full ? tdb_schema_from_json(full, len, &back, &err) : TDB_E_NOMEM;
    free(full);
    if (orig->nenums) {
        rt_check_enums(orig, back, rc);
        printf("  %s: enumerations round trip\n", name);
        tested = 1;
    } else if (orig->nlabels) {
        printf("  skip %s: dimension labels are not in the JSON\n", name);
    } else {
        CHECK_EQ_INT(rc, 0);
        if (rc)
            fprintf(stderr, "  %s: %s\n", name, err.msg);
        else if (rt_same_bytes(orig, back, name, &slen))
            tested = rt_create(tmp, name, back, key, text, slen);
    }
out:
    tdb_schema_free(orig);
    tdb_schema_free(back);
    free(text);
    tdb_io_free(&io);
    return tested;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_corpus_round_trip(void)
{
    const char *corpus = unit_corpus();
    DIR *d = opendir(corpus);
    CHECK(d != NULL);
    if (!d)
        return;
    char *names[512];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s/array", corpus, e->d_name);
        if (e->d_name[0] != '.' && unit_is_dir(p))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    char *tmp = unit_temp_dir("create");
    CHECK(tmp != NULL);
    int tested = 0;
    for (size_t i = 0; i < n && tmp; i++) {
        char cdir[1024];
        snprintf(cdir, sizeof cdir, "%s/%s", corpus, names[i]);
        tested += round_trip_case(cdir, names[i], tmp);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    printf("  %d corpus schemas through JSON and back\n", tested);
    CHECK(tested > 0);
    if (tmp)
        unit_rm_rf(tmp);
    free(tmp);
}

/* ----------------------------------------------------------- JSON inputs */

static const char *const small_schema =
    "{\"array_type\": \"sparse\", \"dims\": [{\"name\": \"d\", "
    "\"datatype\": \"INT64\", \"domain\": [0, 99], \"tile_extent\": 10}], "
    "\"attrs\": [{\"name\": \"a\", \"datatype\": \"INT32\"}]}";

/* A folder that is not empty is refused, and nothing is made in it. */
static void create_refuses_not_empty(const char *tmp,
                                     const struct tdb_schema *s)
{
    struct tdb_error err = {0};
    char p[512];
    snprintf(p, sizeof p, "%s/x", tmp);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
    struct tdb_io io;
    tdb_io_posix(&io, tmp);
    int rc = tdb_array_create(&io, s, NULL, 1, &err);
    CHECK_EQ_INT(rc, TDB_E_INVAL);
    CHECK(strstr(err.msg, "not empty") != NULL);
    snprintf(p, sizeof p, "%s/__schema", tmp);
    CHECK(!unit_is_dir(p));             /* nothing was made */
    tdb_io_free(&io);
}

/* A missing folder is made, with one schema named __1_1_uuid and no
 * temporary file left; created again, it is refused. */
static void create_new_folder(const char *tmp, const struct tdb_schema *s)
{
    struct tdb_error err = {0};
    char p[512];
    struct tdb_io io;
    snprintf(p, sizeof p, "%s/new", tmp);
    tdb_io_posix(&io, p);
    CHECK_EQ_INT(tdb_array_create(&io, s, NULL, 1, &err), 0);
    struct tdb_names n = {0};
    CHECK_EQ_INT(tdb_io_names(&io, "", &n, &err), 0);
    CHECK_EQ_INT(n.n, 6);               /* no temporary file left */
    tdb_names_free(&n);
    CHECK_EQ_INT(tdb_io_names(&io, "__schema", &n, &err), 0);
    CHECK_EQ_INT(n.n, 2);
    struct tdb_tsname ts;
    if (n.n == 2) {
        CHECK_EQ_INT(tdb_tsname_parse(n.v[0], &ts), 0);
        CHECK_EQ_INT(ts.t1, 1);
        CHECK_EQ_INT(ts.t2, 1);
        CHECK_EQ_INT(ts.era, 2);        /* no version suffix */
        CHECK_EQ_INT(strlen(n.v[0]), strlen("__1_1_") + 32);
        CHECK(!strcmp(n.v[1], "__enumerations"));
    }
    tdb_names_free(&n);
    CHECK_EQ_INT(tdb_array_create(&io, s, NULL, 1, &err), TDB_E_INVAL);
    tdb_io_free(&io);
}

/* An enumeration without a name or file is refused before anything is
 * made. */
static void create_refuses_enum(const char *tmp, struct tdb_schema *s)
{
    struct tdb_error err = {0};
    char p[512];
    struct tdb_io io;
    struct tdb_enumeration e = {0};
    s->nenums = 1;
    s->enums = &e;
    snprintf(p, sizeof p, "%s/enum", tmp);
    tdb_io_posix(&io, p);
    CHECK_EQ_INT(tdb_array_create(&io, s, NULL, 1, &err), TDB_E_INVAL);
    CHECK(!unit_is_dir(p));
    s->nenums = 0;
    s->enums = NULL;
    tdb_io_free(&io);
}

static void test_create_refuses(void)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_from_json(small_schema, strlen(small_schema), &s,
                                      &err), 0);
    char *tmp = unit_temp_dir("create");
    if (s && tmp) {
        create_refuses_not_empty(tmp, s);
        create_new_folder(tmp, s);
        create_refuses_enum(tmp, s);
        unit_rm_rf(tmp);
    }
    tdb_schema_free(s);
    free(tmp);
}

static void test_tsname(void)
{
    uint8_t r[16];
    for (int i = 0; i < 16; i++)
        r[i] = (uint8_t)(0xa0 + i);
    char s[128];
    tdb_tsname_make(s, sizeof s, 12, 34, r, TDB_WRITE_VERSION);
    CHECK(!strcmp(s, "__12_34_a0a1a2a3a4a5a6a7a8a9aaabacadaeaf_22"));
    tdb_tsname_make(s, sizeof s, 7, 7, r, 0);
    CHECK(!strcmp(s, "__7_7_a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"));
}

/* ---------------------------------------------------------------- metadata */

/* One metadata write of the entry {name, type, count, value, del} at
 * timestamp t with key k (NULL: none); its return code. */
static int meta_put(const struct tdb_io *io, const uint8_t *k,
                    struct tdb_meta_entry e, uint64_t t, struct tdb_error *err)
{
    return tdb_meta_write(io, "__meta", &e, &(struct tdb_commit_options){k, t},
                          err);
}

static const int32_t meta_v1[2] = {1, -2};
static const uint8_t meta_v3 = 7;

/* The writes of test_meta_write: k1 written twice then k2 removed; k3
 * written five times and k4 written and removed in the same millisecond. */
static void meta_write_all(const struct tdb_io *io, const uint8_t *k)
{
    static const uint8_t x[5] = {0, 1, 2, 3, 4};
    const struct {
        struct tdb_meta_entry e;
        uint64_t t;
    } w[] = {
        {{"k1", TDB_INT32, 2, meta_v1, false}, 10},
        {{"k2", TDB_CHAR, 5, "hello", false}, 11},
        {{"k1", TDB_UINT8, 1, &meta_v3, false}, 12},
        {{"k2", 0, 0, NULL, true}, 13},
        /* Same millisecond: applied in the order written. */
        {{"k3", TDB_UINT8, 1, &x[0], false}, 20},
        {{"k3", TDB_UINT8, 1, &x[1], false}, 20},
        {{"k3", TDB_UINT8, 1, &x[2], false}, 20},
        {{"k3", TDB_UINT8, 1, &x[3], false}, 20},
        {{"k3", TDB_UINT8, 1, &x[4], false}, 20},
        {{"k4", TDB_UINT8, 1, &meta_v3, false}, 20},
        {{"k4", 0, 0, NULL, true}, 20},
    };
    struct tdb_error err = {0};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        CHECK_EQ_INT(meta_put(io, k, w[i].e, w[i].t, &err), 0);
}

/* The metadata as read at all times and up to timestamp 11; without the
 * key an encrypted array's is refused. */
static void meta_check_loaded(const struct tdb_io *io, const uint8_t *k)
{
    struct tdb_error err = {0};
    struct tdb_meta *m = NULL;
    CHECK_EQ_INT(tdb_meta_load(io, "__meta", TDB_TS_ALL, k, &m, &err), 0);
    if (m) {
        CHECK_EQ_INT(m->n, 2);
        const struct tdb_meta_item *it = tdb_meta_find(m, "k1");
        CHECK(it && it->type == TDB_UINT8 && it->count == 1 &&
              it->value[0] == 7);
        CHECK(tdb_meta_find(m, "k2") == NULL);
        it = tdb_meta_find(m, "k3");
        CHECK(it && it->count == 1 && it->value[0] == 4);
        CHECK(tdb_meta_find(m, "k4") == NULL);
    }
    tdb_meta_free(m);
    m = NULL;
    CHECK_EQ_INT(tdb_meta_load(io, "__meta", (struct tdb_ts_window){0, 11},
                               k, &m, &err), 0);
    if (m) {
        CHECK_EQ_INT(m->n, 2);
        const struct tdb_meta_item *it = tdb_meta_find(m, "k1");
        CHECK(it && it->type == TDB_INT32 && it->count == 2 &&
              it->size == 8 && !memcmp(it->value, meta_v1, 8));
        it = tdb_meta_find(m, "k2");
        CHECK(it && it->type == TDB_CHAR && it->size == 5 &&
              !memcmp(it->value, "hello", 5));
    }
    tdb_meta_free(m);
    m = NULL;
    if (k)
        CHECK_EQ_INT(tdb_meta_load(io, "__meta", TDB_TS_ALL, NULL, &m, &err),
                     TDB_E_NOKEY);
    tdb_meta_free(m);
}

/* The file of the first write (__meta/name): one generic tile whose
 * payload is exactly the serialised put, with the header TileDB writes. */
static void meta_check_first_file(const struct tdb_io *io, const uint8_t *k,
                                  const char *name)
{
    struct tdb_error err = {0};
    char *path = tdb_path_join("__meta", name);
    struct tdb_buf got = {0}, want = {0};
    uint64_t next;
    CHECK_EQ_INT(tdb_generic_tile_read(&(struct tdb_gt_file){io, path, 0},
                                       k, &got, &next, &err), 0);
    tdb_meta_serialize_put(&want, "k1", TDB_INT32, 2, meta_v1);
    CHECK(got.len == want.len && !memcmp(got.data, want.data, want.len));
    uint8_t head[30];
    CHECK_EQ_INT(tdb_io_read(io, path, 0, head, 30, &err), 0);
    CHECK_EQ_INT(tdb_le32(head), 22);
    CHECK_EQ_INT(tdb_le64(head + 12), want.len);
    CHECK_EQ_INT(head[20], TDB_CHAR);
    CHECK_EQ_INT(head[29], k ? TDB_AES_256_GCM : TDB_NO_ENCRYPTION);
    tdb_buf_free(&got);
    tdb_buf_free(&want);
    free(path);
}

/* One file per write, named __t_t_uuid; no temporary file left. */
static void meta_check_files(const struct tdb_io *io, const uint8_t *k)
{
    struct tdb_error err = {0};
    struct tdb_names n = {0};
    CHECK_EQ_INT(tdb_io_names(io, "__meta", &n, &err), 0);
    CHECK_EQ_INT(n.n, 11);
    for (size_t i = 0; i < n.n; i++) {
        struct tdb_tsname ts;
        CHECK_EQ_INT(tdb_tsname_parse(n.v[i], &ts), 0);
        CHECK_EQ_INT(ts.era, 2);
        if (ts.t1 == 10)
            meta_check_first_file(io, k, n.v[i]);
    }
    tdb_names_free(&n);
    CHECK_EQ_INT(tdb_io_names(io, "", &n, &err), 0);
    CHECK_EQ_INT(n.n, 6);
    tdb_names_free(&n);
}

/* The empty key and the empty value are accepted; an ANY value and a
 * missing one refused. */
static void meta_check_edges(const struct tdb_io *io, const uint8_t *k)
{
    struct tdb_error err = {0};
    /* The empty key is a key (TileDB puts any key). */
    CHECK_EQ_INT(meta_put(io, k, (struct tdb_meta_entry){"", TDB_UINT8, 1,
                          &meta_v3, false}, 30, &err), 0);
    CHECK_EQ_INT(meta_put(io, k, (struct tdb_meta_entry){"z", TDB_ANY, 1,
                          &meta_v3, false}, 30, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "'z'") != NULL);
    CHECK_EQ_INT(meta_put(io, k, (struct tdb_meta_entry){"z", TDB_UINT8, 2,
                          NULL, false}, 30, &err), TDB_E_INVAL);
    /* An empty value is a value (TileDB allows value_num 0). */
    CHECK_EQ_INT(meta_put(io, k, (struct tdb_meta_entry){"empty", TDB_INT64,
                          0, NULL, false}, 31, &err), 0);
    struct tdb_meta *m = NULL;
    CHECK_EQ_INT(tdb_meta_load(io, "__meta", TDB_TS_ALL, k, &m, &err), 0);
    const struct tdb_meta_item *em = m ? tdb_meta_find(m, "empty") : NULL;
    CHECK(em && em->type == TDB_INT64 && em->count == 0 && em->size == 0);
    em = m ? tdb_meta_find(m, "") : NULL;
    CHECK(em && em->type == TDB_UINT8 && em->count == 1 &&
          ((const uint8_t *)em->value)[0] == meta_v3);
    tdb_meta_free(m);
}

static void test_meta_write(void)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    char *tmp = unit_temp_dir("create");
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    CHECK_EQ_INT(tdb_schema_from_json(small_schema, strlen(small_schema), &s,
                                      &err), 0);
    if (!s || !tmp) {
        tdb_schema_free(s);
        free(tmp);
        return;
    }
    for (int enc = 0; enc < 2; enc++) {
        const uint8_t *k = enc ? key : NULL;
        char p[512];
        snprintf(p, sizeof p, "%s/m%d", tmp, enc);
        struct tdb_io io;
        tdb_io_posix(&io, p);
        CHECK_EQ_INT(tdb_array_create(&io, s, k, 1, &err), 0);
        meta_write_all(&io, k);
        meta_check_loaded(&io, k);
        meta_check_files(&io, k);
        meta_check_edges(&io, k);
        tdb_io_free(&io);
    }
    tdb_schema_free(s);
    unit_rm_rf(tmp);
    free(tmp);
}

int main(void)
{
    RUN(test_tsname);
    RUN(test_create_refuses);
    RUN(test_meta_write);
    RUN_CORPUS(test_corpus_round_trip);
    return unit_done();
}
