/* test_schema.c: array schemas (format/model/schema.c): hand-built
 * payloads of every format version, the version-22 serialisation byte for
 * byte, round trips, truncated and corrupt input, and enumeration files.
 * test_schema_corpus.c reads every schema of the reference corpus. */
#include "../support.h"
#include "model/schema.h"
#include "model/generic_tile.h"

#include <math.h>
#include <stdint.h>
#include "fixture.h"

#define DATETIME_MS 25 /* TileDB's DATETIME_MS */

/* ---------------------------------------------------------------- helpers */

static void put8(struct tdb_buf *b, uint8_t v) { tdb_buf_put_u8(b, v); }

static void put32(struct tdb_buf *b, uint32_t v) { tdb_buf_put_u32(b, v); }

static void put64(struct tdb_buf *b, uint64_t v) { tdb_buf_put_u64(b, v); }

static void putstr32(struct tdb_buf *b, const char *s)
{
    put32(b, (uint32_t)strlen(s));
    tdb_buf_append(b, s, strlen(s));
}

/* An empty filter pipeline (max chunk size 65536). */
static void putpipe(struct tdb_buf *b)
{
    put32(b, 65536);
    put32(b, 0);
}

static int parse(const struct tdb_buf *b, struct tdb_schema **s,
                 struct tdb_error *err)
{
    return tdb_schema_parse(b->data, b->len, "test schema", s, err);
}

/* Dims "x" and "y" of build_versioned. */
static void put_versioned_dims(struct tdb_buf *b, uint32_t version)
{
    put32(b, 2);
    const char *names[2] = {"x", "y"};
    int32_t dom[2][2] = {{1, 100}, {-5, 5}};
    for (int i = 0; i < 2; i++) {
        putstr32(b, names[i]);
        if (version >= 5) {
            put8(b, TDB_INT32);
            put32(b, 1);
            putpipe(b);
            put64(b, 8);
        }
        put32(b, (uint32_t)dom[i][0]);
        put32(b, (uint32_t)dom[i][1]);
        if (i == 0) {
            put8(b, 0);
            put32(b, 10);
        } else {
            put8(b, 1);
        }
    }
}

/* Attrs "a" and "s" of build_versioned. */
static void put_versioned_attrs(struct tdb_buf *b, uint32_t version)
{
    put32(b, 2);
    putstr32(b, "a");
    put8(b, TDB_INT16);
    put32(b, 3);
    putpipe(b);
    if (version >= 6) {
        put64(b, 6);
        tdb_buf_append(b, "\1\0\2\0\3\0", 6);
    }
    if (version >= 7) {
        put8(b, 1);                 /* nullable */
        put8(b, 1);                 /* fill validity */
    }
    if (version >= 17)
        put8(b, 1);                 /* increasing */
    if (version >= 20)
        putstr32(b, "e");
    putstr32(b, "s");
    put8(b, TDB_STRING_UTF8);
    put32(b, TDB_VAR_NUM);
    putpipe(b);
    if (version >= 6) {
        put64(b, 2);
        tdb_buf_append(b, "zz", 2);
    }
    if (version >= 7) {
        put8(b, 0);
        put8(b, 0);
    }
    if (version >= 17)
        put8(b, 0);
    if (version >= 20)
        put32(b, 0);
}

/* The dimension label (v18), the enumeration (v20) and the current
 * domain (v22) of build_versioned. */
static void put_versioned_tail(struct tdb_buf *b, uint32_t version)
{
    if (version >= 18) {
        put32(b, 1);
        put32(b, 1);                /* dimension index */
        putstr32(b, "lbl");
        put8(b, 1);                 /* relative */
        put64(b, 9);
        tdb_buf_append(b, "__labels/", 9);
        putstr32(b, "label");
        put8(b, 2);                 /* decreasing */
        put8(b, TDB_FLOAT64);
        put32(b, 1);
        put8(b, 0);                 /* not external */
    }
    if (version >= 20) {
        put32(b, 1);
        putstr32(b, "e");
        putstr32(b, "__0011_0");
    }
    if (version >= 22) {
        put32(b, 0);                /* current domain version */
        put8(b, 0);                 /* not empty */
        put8(b, 0);                 /* NDRectangle */
        put32(b, 2);
        put32(b, 50);
        put32(b, (uint32_t)-1);
        put32(b, 1);
    }
}

/* Writes, following array_schema.md, a schema of format `version`: sparse,
 * dims "x" INT32 [1,100] extent 10 and "y" INT32 [-5,5] no extent; attrs
 * "a" INT16 fixed (cell_val_num 3, fill 1,2,3 where the version has fills)
 * and "s" var STRING_UTF8 (fill "zz"); from v18 one dimension label, from
 * v20 one enumeration "e" that "a" uses, from v22 a current domain. */
static void build_versioned(struct tdb_buf *b, uint32_t version)
{
    put32(b, version);
    if (version >= 5)
        put8(b, 1);                 /* allows dups */
    put8(b, TDB_SPARSE);
    put8(b, TDB_COL_MAJOR);
    put8(b, TDB_HILBERT);
    put64(b, 1234);
    putpipe(b);                     /* coords */
    putpipe(b);                     /* offsets */
    if (version >= 7)
        putpipe(b);                 /* validity */
    if (version < 5)
        put8(b, TDB_INT32);         /* domain datatype */
    put_versioned_dims(b, version);
    put_versioned_attrs(b, version);
    put_versioned_tail(b, version);
}

static int32_t le32s(const uint8_t *p) { return (int32_t)tdb_le32(p); }

/* ------------------------------------------------------------ the versions */

/* The header and dims build_versioned wrote in version v. */
static void check_version_dims(const struct tdb_schema *s, uint32_t v)
{
    CHECK_EQ_INT(s->version, v);
    CHECK_EQ_INT(s->allows_dups, v >= 5);
    CHECK_EQ_INT(s->array_type, TDB_SPARSE);
    CHECK_EQ_INT(s->tile_order, TDB_COL_MAJOR);
    CHECK_EQ_INT(s->cell_order, TDB_HILBERT);
    CHECK_EQ_INT(s->capacity, 1234);
    CHECK_EQ_INT(s->ndims, 2);
    CHECK(!strcmp(s->dims[0].name, "x") && !strcmp(s->dims[1].name, "y"));
    CHECK_EQ_INT(s->dims[0].type, TDB_INT32);
    CHECK_EQ_INT(s->dims[1].cell_val_num, 1);
    CHECK_EQ_INT(le32s(s->dims[0].lo), 1);
    CHECK_EQ_INT(le32s(s->dims[0].hi), 100);
    CHECK_EQ_INT(le32s(s->dims[1].lo), -5);
    CHECK_EQ_INT(le32s(s->dims[1].hi), 5);
    CHECK(s->dims[0].has_extent && !s->dims[1].has_extent);
    CHECK_EQ_INT(le32s(s->dims[0].extent), 10);
}

/* The attrs build_versioned wrote in version v, their fills. */
static void check_version_attrs(const struct tdb_schema *s, uint32_t v)
{
    CHECK_EQ_INT(s->nattrs, 2);
    const struct tdb_attr *a = &s->attrs[0], *t = &s->attrs[1];
    CHECK(!strcmp(a->name, "a") && !strcmp(t->name, "s"));
    CHECK_EQ_INT(a->type, TDB_INT16);
    CHECK_EQ_INT(a->cell_val_num, 3);
    CHECK_EQ_INT(a->fill_size, 6);
    CHECK_EQ_INT(t->cell_val_num, TDB_VAR_NUM);
    if (v >= 6) {
        CHECK_MEM(a->fill, "\1\0\2\0\3\0", 6);
        CHECK_EQ_INT(t->fill_size, 2);
        CHECK_MEM(t->fill, "zz", 2);
    } else {
        /* no fill in the schema: INT16 minimum three times; a var
         * STRING_UTF8 cell gets one zero byte */
        CHECK_MEM(a->fill, "\0\x80\0\x80\0\x80", 6);
        CHECK_EQ_INT(t->fill_size, 1);
        CHECK_EQ_INT(t->fill[0], 0);
    }
    CHECK_EQ_INT(a->nullable, v >= 7);
    CHECK_EQ_INT(a->fill_validity, v >= 7);
    CHECK_EQ_INT(a->order, v >= 17 ? 1 : 0);
}

/* Labels (v18), enumerations (v20) and the current domain (v22). */
static void check_version_extras(const struct tdb_schema *s, uint32_t v)
{
    const struct tdb_attr *a = &s->attrs[0], *t = &s->attrs[1];
    CHECK_EQ_INT(s->nlabels, v >= 18 ? 1 : 0);
    if (v >= 18) {
        const struct tdb_label *l = &s->labels[0];
        CHECK_EQ_INT(l->dim, 1);
        CHECK(!strcmp(l->name, "lbl") && !strcmp(l->uri, "__labels/") &&
              !strcmp(l->attr_name, "label"));
        CHECK(l->relative && !l->external);
        CHECK_EQ_INT(l->order, 2);
        CHECK_EQ_INT(l->type, TDB_FLOAT64);
    }
    CHECK_EQ_INT(s->nenums, v >= 20 ? 1 : 0);
    if (v >= 20) {
        CHECK(a->enumeration && !strcmp(a->enumeration, "e"));
        CHECK(t->enumeration == NULL);
        CHECK(!strcmp(s->enums[0].name, "e"));
        CHECK(!strcmp(s->enums[0].path, "__schema/__enumerations/__0011_0"));
    } else {
        CHECK(a->enumeration == NULL);
    }
    CHECK_EQ_INT(s->has_current_domain, v >= 22);
    if (v >= 22) {
        CHECK_EQ_INT(le32s(s->current_domain[0].lo), 2);
        CHECK_EQ_INT(le32s(s->current_domain[0].hi), 50);
        CHECK_EQ_INT(le32s(s->current_domain[1].lo), -1);
        CHECK_EQ_INT(le32s(s->current_domain[1].hi), 1);
    }
}

/* Every shorter prefix of `b` is an error, never a crash. */
static void check_prefixes(const struct tdb_buf *b)
{
    for (size_t n = 0; n < b->len; n++) {
        struct tdb_schema *p = (struct tdb_schema *)1;
        struct tdb_error e2 = {0};
        int rc = tdb_schema_parse(b->data, n, "prefix", &p, &e2);
        CHECK(rc < 0);
        CHECK(p == NULL);
        CHECK(e2.msg[0] != '\0');
        if (rc == 0)
            tdb_schema_free(p);
    }
}

static void test_every_version(void)
{
    for (uint32_t v = 1; v <= 23; v++) {
        struct tdb_buf b = {0};
        struct tdb_schema *s = NULL;
        struct tdb_error err = {0};
        build_versioned(&b, v);
        int rc = parse(&b, &s, &err);
        CHECK_EQ_INT(rc, 0);
        if (rc) {
            fprintf(stderr, "version %u: %s\n", v, err.msg);
            tdb_buf_free(&b);
            continue;
        }
        check_version_dims(s, v);
        check_version_attrs(s, v);
        check_version_extras(s, v);
        tdb_schema_free(s);
        check_prefixes(&b);
        tdb_buf_free(&b);
    }
}

/* A version-4 dense schema: dim "i" UINT64, ZSTD coords filters, attrs
 * "p" FLOAT64 x2, "q" var CHAR, "r" DATETIME_MS, none with a fill. */
static void put_v4_schema(struct tdb_buf *b)
{
    put32(b, 4);
    put8(b, TDB_DENSE);
    put8(b, TDB_ROW_MAJOR);
    put8(b, TDB_ROW_MAJOR);
    put64(b, 10000);
    /* coords filters: ZSTD level -1, as TileDB 1.x wrote them */
    put32(b, 65536);
    put32(b, 1);
    put8(b, TDB_FILTER_ZSTD);
    put32(b, 5);
    put8(b, TDB_FILTER_ZSTD);
    put32(b, UINT32_MAX);
    putpipe(b);
    put8(b, TDB_UINT64);
    put32(b, 1);
    putstr32(b, "i");
    put64(b, 0);
    put64(b, UINT64_MAX - 1);
    put8(b, 0);
    put64(b, 1000);
    put32(b, 3);
    const unsigned types[3] = {TDB_FLOAT64, TDB_CHAR, DATETIME_MS};
    const uint32_t cvns[3] = {2, TDB_VAR_NUM, 1};
    for (int i = 0; i < 3; i++) {
        char name[2] = {(char)('p' + i), 0};
        putstr32(b, name);
        put8(b, (uint8_t)types[i]);
        put32(b, cvns[i]);
        putpipe(b);
    }
}

/* Version 4: the domain datatype, coordinate filters copied to the
 * dimensions, and default fills (several values, one for var cells). */
static void test_v4_defaults(void)
{
    struct tdb_buf b = {0};
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    put_v4_schema(&b);
    int rc = parse(&b, &s, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
    } else {
        CHECK_EQ_INT(s->dims[0].type, TDB_UINT64);
        CHECK_EQ_INT(tdb_le64(s->dims[0].hi), UINT64_MAX - 1);
        CHECK_EQ_INT(tdb_le64(s->dims[0].extent), 1000);
        CHECK_EQ_INT(s->coords_filters.n, 1);
        /* a dimension without filters of its own takes the coords ones */
        CHECK_EQ_INT(s->dims[0].filters.n, 1);
        CHECK_EQ_INT(s->validity_filters.n, 0);
        CHECK_EQ_INT(s->attrs[0].fill_size, 16);
        CHECK_MEM(s->attrs[0].fill,
                  "\0\0\0\0\0\0\xf8\x7f\0\0\0\0\0\0\xf8\x7f", 16);
        CHECK_EQ_INT(s->attrs[1].fill_size, 1);
        CHECK_EQ_INT(s->attrs[1].fill[0], 0x80);
        CHECK_EQ_INT(s->attrs[2].fill_size, 8);
        CHECK_MEM(s->attrs[2].fill, "\0\0\0\0\0\0\0\x80", 8);
        CHECK_EQ_INT(tdb_schema_attr_index(s, "q"), 1);
        CHECK_EQ_INT(tdb_schema_attr_index(s, "i"), -1);
        CHECK_EQ_INT(tdb_schema_dim_index(s, "i"), 0);
        CHECK_EQ_INT(tdb_schema_dim_index(s, "p"), -1);
        tdb_schema_free(s);
    }
    tdb_buf_free(&b);
}

/* ------------------------------------------------- serialisation, by byte */

/* The bytes test_serialize_bytes's schema serializes to. */
static void put_serialized(struct tdb_buf *want)
{
    put32(want, 22);
    put8(want, 0);
    put8(want, 1);
    put8(want, 0);
    put8(want, 1);
    put64(want, 77);
    putpipe(want);
    putpipe(want);
    putpipe(want);
    put32(want, 1);
    putstr32(want, "d");
    put8(want, TDB_INT32);
    put32(want, 1);
    putpipe(want);
    put64(want, 8);
    put32(want, 1);
    put32(want, 10);
    put8(want, 0);
    put32(want, 5);
    put32(want, 1);
    putstr32(want, "a");
    put8(want, TDB_UINT8);
    put32(want, 1);
    putpipe(want);
    put64(want, 1);
    put8(want, 0xff);
    put8(want, 0);                 /* nullable */
    put8(want, 0);                 /* fill validity */
    put8(want, 0);                 /* order */
    put32(want, 0);                /* no enumeration */
    put32(want, 0);                /* no labels */
    put32(want, 0);                /* no enumerations */
    put32(want, 0);                /* current domain version */
    put8(want, 1);                 /* empty */
}

static void test_serialize_bytes(void)
{
    struct tdb_dim dim = {.name = "d", .type = TDB_INT32, .cell_val_num = 1,
                          .filters = {.max_chunk_size = 65536},
                          .has_extent = true};
    tdb_st32(dim.lo, 1);
    tdb_st32(dim.hi, 10);
    tdb_st32(dim.extent, 5);
    uint8_t fill = 0xff;
    struct tdb_attr attr = {.name = "a", .type = TDB_UINT8,
                            .cell_val_num = 1,
                            .filters = {.max_chunk_size = 65536},
                            .fill = &fill, .fill_size = 1};
    struct tdb_schema s = {.version = 22, .array_type = TDB_SPARSE,
                           .tile_order = TDB_ROW_MAJOR,
                           .cell_order = TDB_COL_MAJOR, .capacity = 77,
                           .coords_filters = {.max_chunk_size = 65536},
                           .offsets_filters = {.max_chunk_size = 65536},
                           .validity_filters = {.max_chunk_size = 65536},
                           .ndims = 1, .dims = &dim, .nattrs = 1,
                           .attrs = &attr};
    struct tdb_buf got = {0}, want = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_serialize(&s, &got, &err), 0);

    put_serialized(&want);
    CHECK_EQ_INT(got.len, want.len);
    if (got.len == want.len)
        CHECK_MEM(got.data, want.data, want.len);

    /* An attribute without a fill gets the default one written. */
    attr.fill = NULL;
    attr.fill_size = 0;
    tdb_buf_reset(&got);
    CHECK_EQ_INT(tdb_schema_serialize(&s, &got, &err), 0);
    CHECK_EQ_INT(got.len, want.len);
    if (got.len == want.len)
        CHECK_MEM(got.data, want.data, want.len);

    /* No dimensions: an error, nothing appended. */
    s.ndims = 0;
    tdb_buf_reset(&got);
    CHECK_EQ_INT(tdb_schema_serialize(&s, &got, &err), TDB_E_INVAL);
    CHECK_EQ_INT(got.len, 0);
    tdb_buf_free(&got);
    tdb_buf_free(&want);
}

/* Schema `s` serialized, then truncated at every length, and each byte
 * corrupted: errors or a valid schema, never a crash (run under
 * ASan/UBSan). */
static void check_cuts_and_pokes(const struct tdb_schema *s)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_serialize(s, &b, &err), 0);
    for (size_t n = 0; n < b.len; n++) {
        struct tdb_schema *p = NULL;
        int rc = tdb_schema_parse(b.data, n, "prefix", &p, &err);
        CHECK(rc < 0 && p == NULL);
        if (rc == 0)
            tdb_schema_free(p);
    }
    const uint8_t pokes[4] = {0x00, 0xff, 0x80, 0x7f};
    for (size_t i = 0; i < b.len; i++) {
        uint8_t keep = b.data[i];
        for (int k = 0; k < 4; k++) {
            struct tdb_schema *p = NULL;
            b.data[i] = pokes[k];
            int rc = tdb_schema_parse(b.data, b.len, "poked", &p, &err);
            CHECK((rc == 0) == (p != NULL));
            if (rc == 0) {
                struct tdb_buf again = {0};
                tdb_schema_serialize(p, &again, &err);
                tdb_buf_free(&again);
            }
            tdb_schema_free(p);
        }
        b.data[i] = keep;
    }
    tdb_buf_free(&b);
}

static void test_roundtrip_built(void)
{
    struct tdb_filter zstd;
    CHECK_EQ_INT(tdb_filter_init_level(&zstd, TDB_FILTER_ZSTD, 7), 0);
    struct tdb_dim dims[2] = {
        {.name = "key", .type = TDB_STRING_ASCII,
         .cell_val_num = TDB_VAR_NUM,
         .filters = {.max_chunk_size = 1000, .n = 1, .f = &zstd}},
        {.name = "t", .type = DATETIME_MS, .cell_val_num = 1,
         .filters = {.max_chunk_size = 65536, .n = 1, .f = &zstd},
         .has_extent = true},
    };
    tdb_st64(dims[1].lo, (uint64_t)-1000);
    tdb_st64(dims[1].hi, 1700000000000ull);
    tdb_st64(dims[1].extent, 86400000);
    uint8_t f1[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint8_t f2[3] = {'N', '/', 'A'};
    uint8_t f3[1] = {0xff};
    struct tdb_attr attrs[3] = {
        {.name = "v", .type = TDB_FLOAT64, .cell_val_num = 2,
         .filters = {.max_chunk_size = 65536, .n = 1, .f = &zstd},
         .fill = f1, .fill_size = 16, .order = 1},
        {.name = "s", .type = TDB_STRING_UTF8, .cell_val_num = TDB_VAR_NUM,
         .filters = {.max_chunk_size = 65536}, .fill = f2, .fill_size = 3,
         .nullable = true, .fill_validity = 1},
        {.name = "", .type = TDB_UINT8, .cell_val_num = 1,
         .filters = {.max_chunk_size = 65536}, .fill = f3, .fill_size = 1,
         .enumeration = "colors"},
    };
    struct tdb_label label = {.dim = 1, .order = 1, .name = "when",
                              .uri = "__labels/l0", .attr_name = "label",
                              .relative = true, .type = TDB_FLOAT32,
                              .cell_val_num = 1};
    struct tdb_enumeration en = {.name = "colors",
                                 .path = "x/__schema/__enumerations/__e_0"};
    struct tdb_range cd[2] = {{.vlo = (uint8_t *)"aa", .vlo_size = 2,
                               .vhi = (uint8_t *)"zzz", .vhi_size = 3},
                              {.vlo = NULL}};
    tdb_st64(cd[1].lo, 5);
    tdb_st64(cd[1].hi, 500);
    struct tdb_schema s = {.version = 22, .allows_dups = true,
                           .array_type = TDB_SPARSE,
                           .tile_order = TDB_COL_MAJOR,
                           .cell_order = TDB_HILBERT, .capacity = 10000,
                           .coords_filters = {.max_chunk_size = 65536, .n = 1,
                                              .f = &zstd},
                           .offsets_filters = {.max_chunk_size = 4096},
                           .validity_filters = {.max_chunk_size = 65536},
                           .ndims = 2, .dims = dims, .nattrs = 3,
                           .attrs = attrs, .nlabels = 1, .labels = &label,
                           .nenums = 1, .enums = &en,
                           .has_current_domain = true, .current_domain = cd};
    if (!zstd.ops) {
        /* the ZSTD filter is not linked in: test without filters */
        dims[0].filters.n = dims[1].filters.n = attrs[0].filters.n = 0;
        s.coords_filters.n = 0;
    }
    schema_roundtrip(&s);

    check_cuts_and_pokes(&s);
}

/* ------------------------------------------------------------- bad input */

static int parse_with(void (*edit)(struct tdb_buf *), uint32_t version,
                      struct tdb_error *err)
{
    struct tdb_buf b = {0};
    struct tdb_schema *s = NULL;
    build_versioned(&b, version);
    if (edit)
        edit(&b);
    int rc = parse(&b, &s, err);
    tdb_schema_free(s);
    tdb_buf_free(&b);
    return rc;
}

/* Offsets into build_versioned(22): version 0, dups 4, type 5, tile order
 * 6, cell order 7, capacity 8, pipelines 16..39, ndims 40, dim "x": name
 * 44, type 49, cvn 50, pipeline 54, domain size 62. */
static void edit_type(struct tdb_buf *b) { b->data[5] = 2; }

static void edit_tile_order(struct tdb_buf *b) { b->data[6] = 2; }

static void edit_cell_order(struct tdb_buf *b) { b->data[7] = 5; }

static void edit_dups(struct tdb_buf *b) { b->data[4] = 7; }

static void edit_ndims0(struct tdb_buf *b) { tdb_st32(b->data + 40, 0); }

static void edit_ndims_huge(struct tdb_buf *b)
{
    tdb_st32(b->data + 40, 0xfffffff0);
}

static void edit_dim_type(struct tdb_buf *b) { b->data[49] = 99; }

static void edit_dim_cvn(struct tdb_buf *b) { tdb_st32(b->data + 50, 2); }

static void edit_dom_size(struct tdb_buf *b) { tdb_st64(b->data + 62, 4); }

static void edit_name_len(struct tdb_buf *b)
{
    tdb_st32(b->data + 44, 0x7fffffff);
}

static void edit_filters_huge(struct tdb_buf *b)
{
    tdb_st32(b->data + 20, 0xffffffff);
}

static void edit_version0(struct tdb_buf *b) { tdb_st32(b->data, 0); }

static void edit_version24(struct tdb_buf *b) { tdb_st32(b->data, 24); }

static void edit_version_exp(struct tdb_buf *b)
{
    tdb_st32(b->data, 0xffffffff);
}

/* the enumeration's file name is the last string before the current
 * domain (4 + 1 + 1 + 8 + 8 bytes from the end) */
static void edit_enum_file(struct tdb_buf *b)
{
    memcpy(b->data + b->len - 22 - 8, "../../xx", 8);
}

static void edit_enum_name(struct tdb_buf *b)
{
    /* the schema's enumeration "e" becomes "f": attribute a's is unknown */
    b->data[b->len - 22 - 8 - 4 - 1] = 'f';
}

static void edit_cd_version(struct tdb_buf *b)
{
    tdb_st32(b->data + b->len - 22, 1);
}

static void edit_cd_type(struct tdb_buf *b) { b->data[b->len - 17] = 1; }

static void edit_trailing(struct tdb_buf *b) { put32(b, 0xdeadbeef); }

static void test_bad_values(void)
{
    struct tdb_error err = {0};
    CHECK_EQ_INT(parse_with(NULL, 22, &err), 0);
    CHECK_EQ_INT(parse_with(edit_trailing, 22, &err), 0);
    CHECK_EQ_INT(parse_with(edit_type, 22, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "test schema") && strstr(err.msg, "array type"));
    CHECK_EQ_INT(parse_with(edit_tile_order, 22, &err), TDB_E_CORRUPT);
    CHECK_EQ_INT(parse_with(edit_cell_order, 22, &err), TDB_E_CORRUPT);
    CHECK_EQ_INT(parse_with(edit_dups, 22, &err), TDB_E_CORRUPT);
    CHECK_EQ_INT(parse_with(edit_ndims0, 22, &err), TDB_E_CORRUPT);
    CHECK_EQ_INT(parse_with(edit_ndims_huge, 22, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "number of dimensions") != NULL);
    CHECK_EQ_INT(parse_with(edit_dim_type, 22, &err), TDB_E_CORRUPT);
    CHECK_EQ_INT(parse_with(edit_dim_cvn, 22, &err), TDB_E_CORRUPT);
    CHECK_EQ_INT(parse_with(edit_dom_size, 22, &err), TDB_E_CORRUPT);
    CHECK_EQ_INT(parse_with(edit_name_len, 22, &err), TDB_E_CORRUPT);
    CHECK(parse_with(edit_filters_huge, 22, &err) < 0);
    CHECK(strstr(err.msg, "coords filters") != NULL);
    CHECK_EQ_INT(parse_with(edit_version0, 22, &err), TDB_E_UNSUPPORTED);
    CHECK_EQ_INT(parse_with(edit_version24, 22, &err), TDB_E_UNSUPPORTED);
    CHECK_EQ_INT(parse_with(edit_version_exp, 22, &err), TDB_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "4294967295") != NULL);
    CHECK_EQ_INT(parse_with(edit_enum_file, 22, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "file name") != NULL);
    CHECK_EQ_INT(parse_with(edit_enum_name, 22, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "enumeration 'e'") != NULL);
    CHECK_EQ_INT(parse_with(edit_cd_version, 22, &err), TDB_E_UNSUPPORTED);
    CHECK_EQ_INT(parse_with(edit_cd_type, 22, &err), TDB_E_UNSUPPORTED);

    /* fill value size not the cell size: a hand-built v6 attribute */
    struct tdb_buf b = {0};
    struct tdb_schema *s = NULL;
    build_versioned(&b, 6);
    /* attribute a's fill size is the only u64 6 in the payload, after the
     * name "a", type INT16 and cell_val_num 3 */
    static const uint8_t pat[] = {'a', TDB_INT16, 3, 0, 0, 0};
    uint8_t *hit = memmem(b.data, b.len, pat, sizeof pat);
    CHECK(hit != NULL);
    if (hit) {
        tdb_st64(hit + sizeof pat + 8, 4);
        CHECK_EQ_INT(parse(&b, &s, &err), TDB_E_CORRUPT);
        CHECK(strstr(err.msg, "fill value of 4 bytes") != NULL);
        tdb_st64(hit + sizeof pat + 8, 0);
        CHECK_EQ_INT(parse(&b, &s, &err), TDB_E_CORRUPT);
        tdb_st64(hit + sizeof pat + 8, UINT64_MAX);
        CHECK_EQ_INT(parse(&b, &s, &err), TDB_E_CORRUPT);
    }
    tdb_buf_free(&b);
}

/* ------------------------------------------------ files: load, enumerations */

static int mem_put(struct tdb_io *io, const char *path,
                   const struct tdb_buf *payload, const uint8_t *key)
{
    struct tdb_buf tile = {0};
    struct tdb_error err = {0};
    int rc = tdb_generic_tile_encode(payload->data, payload->len,
                                     &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1},
                                     key, &tile, &err);
    if (!rc)
        rc = io->ops->write_at(io->ctx, path, 0, tile.data, tile.len);
    tdb_buf_free(&tile);
    return rc;
}

static void build_enum_payload(struct tdb_buf *b)
{
    put32(b, 0);
    putstr32(b, "e");
    putstr32(b, "__0011_0");
    put8(b, TDB_STRING_ASCII);
    put32(b, TDB_VAR_NUM);
    put8(b, 1);
    put64(b, 9);
    tdb_buf_append(b, "redgreen!", 9);
    put64(b, 24);
    put64(b, 0);
    put64(b, 3);
    put64(b, 8);
}

/* Enumeration en of a loaded schema: its values; loading twice replaces
 * them. */
static void check_enum_values(const struct tdb_io *io,
                              struct tdb_enumeration *en)
{
    struct tdb_error err = {0};
    CHECK(!strcmp(en->path, "grp/arr/__schema/__enumerations/__0011_0"));
    int rc = tdb_enumeration_load(io, en, NULL, &err);
    CHECK_EQ_INT(rc, 0);
    if (!rc) {
        CHECK_EQ_INT(en->type, TDB_STRING_ASCII);
        CHECK_EQ_INT(en->cell_val_num, TDB_VAR_NUM);
        CHECK(en->ordered);
        CHECK_EQ_INT(en->data_size, 9);
        CHECK_MEM(en->data, "redgreen!", 9);
        CHECK_EQ_INT(en->offsets_size, 24);
        CHECK_EQ_INT(tdb_le64(en->offsets + 16), 8);
    }
    CHECK_EQ_INT(tdb_enumeration_load(io, en, NULL, &err), 0);
    CHECK_EQ_INT(en->data_size, 9);
}

/* Every truncation of the enumeration payload `e` is an error; so are
 * offsets that run backwards or past the data and a file holding another
 * enumeration. */
static void check_enum_damaged(struct tdb_io *io, struct tdb_enumeration *en,
                               struct tdb_buf *e)
{
    struct tdb_error err = {0};
    for (size_t n = 0; n < e->len; n++) {
        struct tdb_buf t = {0};
        tdb_buf_append(&t, e->data, n);
        io->ops->remove(io->ctx, "grp/arr/__schema/__enumerations/__0011_0");
        CHECK_EQ_INT(mem_put(io, en->path, &t, NULL), 0);
        int rc = tdb_enumeration_load(io, en, NULL, &err);
        CHECK(rc < 0);
        CHECK(en->data == NULL && en->data_size == 0);
        tdb_buf_free(&t);
    }
    tdb_st64(e->data + e->len - 8, 10);
    io->ops->remove(io->ctx, en->path);
    mem_put(io, en->path, e, NULL);
    CHECK_EQ_INT(tdb_enumeration_load(io, en, NULL, &err), TDB_E_CORRUPT);
    tdb_st64(e->data + e->len - 8, 8);
    e->data[8] = 'q';
    io->ops->remove(io->ctx, en->path);
    mem_put(io, en->path, e, NULL);
    CHECK_EQ_INT(tdb_enumeration_load(io, en, NULL, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "'q'") != NULL);
}

/* The legacy name has no timestamps; a missing file is an error; a file
 * of schema `b` cut short at every length is an error, never a crash. */
static void check_load_names_and_cuts(struct tdb_io *io,
                                      const struct tdb_buf *b)
{
    struct tdb_error err = {0};
    struct tdb_schema *s = NULL;
    CHECK_EQ_INT(mem_put(io, "old/__array_schema.tdb", b, NULL), 0);
    CHECK_EQ_INT(tdb_schema_load(io, "old/__array_schema.tdb", NULL, &s,
                                 &err), 0);
    if (s) {
        CHECK(!strcmp(s->name, "__array_schema.tdb"));
        CHECK(s->t1 == 0 && s->t2 == 0);
        tdb_schema_free(s);
    }
    s = NULL;
    CHECK(tdb_schema_load(io, "nope/__schema/__1_1_x", NULL, &s, &err) < 0);
    CHECK(s == NULL);
    struct tdb_buf whole = {0};
    tdb_generic_tile_encode(b->data, b->len,
                            &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1},
                            NULL, &whole, &err);
    for (size_t n = 0; n < whole.len; n += 7) {
        io->ops->remove(io->ctx, "cut");
        io->ops->write_at(io->ctx, "cut", 0, whole.data, n);
        s = NULL;
        CHECK(tdb_schema_load(io, "cut", NULL, &s, &err) < 0);
        tdb_schema_free(s);
    }
    tdb_buf_free(&whole);
}

static void test_load_and_enumeration(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    struct tdb_buf b = {0}, e = {0};
    struct tdb_schema *s = NULL;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    build_versioned(&b, 22);
    build_enum_payload(&e);
    CHECK_EQ_INT(mem_put(&io, "grp/arr/__schema/__17_42_0123abcd", &b, NULL),
                 0);
    CHECK_EQ_INT(mem_put(&io, "grp/arr/__schema/__enumerations/__0011_0", &e,
                         NULL), 0);
    int rc = tdb_schema_load(&io, "grp/arr/__schema/__17_42_0123abcd", NULL,
                             &s, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
    } else {
        CHECK(!strcmp(s->name, "__17_42_0123abcd"));
        CHECK_EQ_INT(s->t1, 17);
        CHECK_EQ_INT(s->t2, 42);
        CHECK_EQ_INT(s->encryption, TDB_NO_ENCRYPTION);
        check_enum_values(&io, &s->enums[0]);
        check_enum_damaged(&io, &s->enums[0], &e);
        tdb_schema_free(s);
    }
    check_load_names_and_cuts(&io, &b);
    tdb_buf_free(&b);
    tdb_buf_free(&e);
    tdb_io_free(&io);
}

/* A 75-byte format-1 schema (fuzz_schema found it) whose one INT32
 * attribute has 67,108,864 values a cell and, as before format 6, no
 * fill value: its default fill would be 256 MiB.  Refused as corrupt
 * beyond 64 MiB of default fills a schema, at once, instead of filling
 * them (tests/fuzz/corpus/fuzz_schema/timeout-default-fill-256mib). */
static void test_default_fill_bounded(void)
{
    static const uint8_t v1[75] = {
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4e,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x81, 0x7e, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x81, 0x7e, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_parse(v1, sizeof v1, "v1", &s, &err),
                 TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "default fill values of more than 64 MiB") != NULL);
    CHECK(s == NULL);
    tdb_schema_free(s);
}

int main(void)
{
    RUN(test_default_fill_bounded);
    RUN(test_every_version);
    RUN(test_v4_defaults);
    RUN(test_serialize_bytes);
    RUN(test_roundtrip_built);
    RUN(test_bad_values);
    RUN(test_load_and_enumeration);
    return unit_done();
}
