/* test_schema.c: array schemas (format/model/schema.c): hand-built payloads of
 * every format version, the version-22 serialisation byte for byte, round
 * trips, truncated and corrupt input, enumeration files, and every schema of
 * the reference corpus against its case.json. */
#include "support.h"
#include "model/schema.h"
#include "model/generic_tile.h"

#include <math.h>
#include <stdint.h>

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

static int32_t le32s(const uint8_t *p) { return (int32_t)tdb_le32(p); }

/* ------------------------------------------------------------ the versions */

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
            CHECK(!strcmp(s->enums[0].path,
                          "__schema/__enumerations/__0011_0"));
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
        tdb_schema_free(s);

        /* Every shorter prefix is an error, never a crash. */
        for (size_t n = 0; n < b.len; n++) {
            struct tdb_schema *p = (struct tdb_schema *)1;
            struct tdb_error e2 = {0};
            rc = tdb_schema_parse(b.data, n, "prefix", &p, &e2);
            CHECK(rc < 0);
            CHECK(p == NULL);
            CHECK(e2.msg[0] != '\0');
            if (rc == 0)
                tdb_schema_free(p);
        }
        tdb_buf_free(&b);
    }
}

/* Version 4: the domain datatype, coordinate filters copied to the
 * dimensions, and default fills (several values, one for var cells). */
static void test_v4_defaults(void)
{
    struct tdb_buf b = {0};
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    put32(&b, 4);
    put8(&b, TDB_DENSE);
    put8(&b, TDB_ROW_MAJOR);
    put8(&b, TDB_ROW_MAJOR);
    put64(&b, 10000);
    /* coords filters: ZSTD level -1, as TileDB 1.x wrote them */
    put32(&b, 65536);
    put32(&b, 1);
    put8(&b, TDB_FILTER_ZSTD);
    put32(&b, 5);
    put8(&b, TDB_FILTER_ZSTD);
    put32(&b, UINT32_MAX);
    putpipe(&b);
    put8(&b, TDB_UINT64);
    put32(&b, 1);
    putstr32(&b, "i");
    put64(&b, 0);
    put64(&b, UINT64_MAX - 1);
    put8(&b, 0);
    put64(&b, 1000);
    put32(&b, 3);
    const unsigned types[3] = {TDB_FLOAT64, TDB_CHAR, DATETIME_MS};
    const uint32_t cvns[3] = {2, TDB_VAR_NUM, 1};
    for (int i = 0; i < 3; i++) {
        char name[2] = {(char)('p' + i), 0};
        putstr32(&b, name);
        put8(&b, (uint8_t)types[i]);
        put32(&b, cvns[i]);
        putpipe(&b);
    }
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

    put32(&want, 22);
    put8(&want, 0);
    put8(&want, 1);
    put8(&want, 0);
    put8(&want, 1);
    put64(&want, 77);
    putpipe(&want);
    putpipe(&want);
    putpipe(&want);
    put32(&want, 1);
    putstr32(&want, "d");
    put8(&want, TDB_INT32);
    put32(&want, 1);
    putpipe(&want);
    put64(&want, 8);
    put32(&want, 1);
    put32(&want, 10);
    put8(&want, 0);
    put32(&want, 5);
    put32(&want, 1);
    putstr32(&want, "a");
    put8(&want, TDB_UINT8);
    put32(&want, 1);
    putpipe(&want);
    put64(&want, 1);
    put8(&want, 0xff);
    put8(&want, 0);                 /* nullable */
    put8(&want, 0);                 /* fill validity */
    put8(&want, 0);                 /* order */
    put32(&want, 0);                /* no enumeration */
    put32(&want, 0);                /* no labels */
    put32(&want, 0);                /* no enumerations */
    put32(&want, 0);                /* current domain version */
    put8(&want, 1);                 /* empty */
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

/* ------------------------------------------------------------- round trip */

static void check_same_schema(const struct tdb_schema *a,
                              const struct tdb_schema *b)
{
    CHECK_EQ_INT(a->allows_dups, b->allows_dups);
    CHECK_EQ_INT(a->array_type, b->array_type);
    CHECK_EQ_INT(a->tile_order, b->tile_order);
    CHECK_EQ_INT(a->cell_order, b->cell_order);
    CHECK_EQ_INT(a->capacity, b->capacity);
    CHECK_EQ_INT(a->ndims, b->ndims);
    CHECK_EQ_INT(a->nattrs, b->nattrs);
    CHECK_EQ_INT(a->nlabels, b->nlabels);
    CHECK_EQ_INT(a->nenums, b->nenums);
    CHECK_EQ_INT(a->coords_filters.n, b->coords_filters.n);
    CHECK_EQ_INT(a->offsets_filters.max_chunk_size,
                 b->offsets_filters.max_chunk_size);
    for (uint32_t i = 0; i < a->ndims && i < b->ndims; i++) {
        const struct tdb_dim *x = &a->dims[i], *y = &b->dims[i];
        CHECK(!strcmp(x->name, y->name));
        CHECK_EQ_INT(x->type, y->type);
        CHECK_EQ_INT(x->cell_val_num, y->cell_val_num);
        CHECK_EQ_INT(x->has_extent, y->has_extent);
        if (x->cell_val_num != TDB_VAR_NUM) {
            unsigned sz = tdb_dt_size(x->type);
            CHECK_MEM(x->lo, y->lo, sz);
            CHECK_MEM(x->hi, y->hi, sz);
            if (x->has_extent)
                CHECK_MEM(x->extent, y->extent, sz);
        }
    }
    for (uint32_t i = 0; i < a->nattrs && i < b->nattrs; i++) {
        const struct tdb_attr *x = &a->attrs[i], *y = &b->attrs[i];
        CHECK(!strcmp(x->name, y->name));
        CHECK_EQ_INT(x->type, y->type);
        CHECK_EQ_INT(x->cell_val_num, y->cell_val_num);
        CHECK_EQ_INT(x->filters.n, y->filters.n);
        CHECK_EQ_INT(x->fill_size, y->fill_size);
        if (x->fill_size == y->fill_size)
            CHECK_MEM(x->fill, y->fill, x->fill_size);
        CHECK_EQ_INT(x->nullable, y->nullable);
        CHECK_EQ_INT(x->fill_validity, y->fill_validity);
        CHECK_EQ_INT(x->order, y->order);
        CHECK((!x->enumeration && !y->enumeration) ||
              (x->enumeration && y->enumeration &&
               !strcmp(x->enumeration, y->enumeration)));
    }
    for (uint32_t i = 0; i < a->nlabels && i < b->nlabels; i++) {
        const struct tdb_label *x = &a->labels[i], *y = &b->labels[i];
        CHECK(!strcmp(x->name, y->name) && !strcmp(x->uri, y->uri) &&
              !strcmp(x->attr_name, y->attr_name));
        CHECK(x->dim == y->dim && x->order == y->order &&
              x->type == y->type && x->cell_val_num == y->cell_val_num &&
              x->relative == y->relative && x->external == y->external);
    }
    for (uint32_t i = 0; i < a->nenums && i < b->nenums; i++) {
        CHECK(!strcmp(a->enums[i].name, b->enums[i].name));
        const char *fa = strrchr(a->enums[i].path, '/');
        const char *fb = strrchr(b->enums[i].path, '/');
        CHECK(fa && fb && !strcmp(fa, fb));
    }
    CHECK_EQ_INT(a->has_current_domain, b->has_current_domain);
    if (a->has_current_domain && b->has_current_domain) {
        for (uint32_t i = 0; i < a->ndims && i < b->ndims; i++) {
            const struct tdb_range *x = &a->current_domain[i];
            const struct tdb_range *y = &b->current_domain[i];
            if (a->dims[i].cell_val_num != TDB_VAR_NUM) {
                unsigned sz = tdb_dt_size(a->dims[i].type);
                CHECK_MEM(x->lo, y->lo, sz);
                CHECK_MEM(x->hi, y->hi, sz);
            } else {
                CHECK_EQ_INT(x->vlo_size, y->vlo_size);
                CHECK_EQ_INT(x->vhi_size, y->vhi_size);
                if (x->vlo_size == y->vlo_size)
                    CHECK_MEM(x->vlo, y->vlo, x->vlo_size);
                if (x->vhi_size == y->vhi_size)
                    CHECK_MEM(x->vhi, y->vhi, x->vhi_size);
            }
        }
    }
}

/* serialize -> parse -> compare -> serialize again: same bytes. */
static void roundtrip(const struct tdb_schema *s)
{
    struct tdb_buf one = {0}, two = {0};
    struct tdb_schema *back = NULL;
    struct tdb_error err = {0};
    int rc = tdb_schema_serialize(s, &one, &err);
    CHECK_EQ_INT(rc, 0);
    if (!rc)
        rc = tdb_schema_parse(one.data, one.len, "round trip", &back, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "round trip of %s: %s\n", s->name ? s->name : "?",
                err.msg);
    } else {
        CHECK_EQ_INT(back->version, 22);
        check_same_schema(s, back);
        CHECK_EQ_INT(tdb_schema_serialize(back, &two, &err), 0);
        CHECK_EQ_INT(two.len, one.len);
        if (two.len == one.len)
            CHECK_MEM(two.data, one.data, one.len);
    }
    tdb_schema_free(back);
    tdb_buf_free(&one);
    tdb_buf_free(&two);
}

static void test_roundtrip_built(void)
{
    struct tdb_filter zstd = {.type = TDB_FILTER_ZSTD,
                              .ops = tdb_filter_lookup(TDB_FILTER_ZSTD),
                              .compressor = TDB_FILTER_ZSTD, .level = 7,
                              .reinterpret_type = TDB_ANY};
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
    roundtrip(&s);

    /* Truncated at every length, and each byte corrupted: errors or a
     * valid schema, never a crash (run under ASan/UBSan). */
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_serialize(&s, &b, &err), 0);
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
        struct tdb_enumeration *en = &s->enums[0];
        CHECK(!strcmp(en->path, "grp/arr/__schema/__enumerations/__0011_0"));
        rc = tdb_enumeration_load(&io, en, NULL, &err);
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
        /* loading twice replaces the data */
        CHECK_EQ_INT(tdb_enumeration_load(&io, en, NULL, &err), 0);
        CHECK_EQ_INT(en->data_size, 9);

        /* every truncation of the enumeration payload is an error */
        for (size_t n = 0; n < e.len; n++) {
            struct tdb_buf t = {0};
            tdb_buf_append(&t, e.data, n);
            io.ops->remove(io.ctx, "grp/arr/__schema/__enumerations/__0011_0");
            CHECK_EQ_INT(mem_put(&io, en->path, &t, NULL), 0);
            rc = tdb_enumeration_load(&io, en, NULL, &err);
            CHECK(rc < 0);
            CHECK(en->data == NULL && en->data_size == 0);
            tdb_buf_free(&t);
        }
        /* offsets that run backwards or past the data */
        tdb_st64(e.data + e.len - 8, 10);
        io.ops->remove(io.ctx, en->path);
        mem_put(&io, en->path, &e, NULL);
        CHECK_EQ_INT(tdb_enumeration_load(&io, en, NULL, &err),
                     TDB_E_CORRUPT);
        /* the file holds another enumeration */
        tdb_st64(e.data + e.len - 8, 8);
        e.data[8] = 'q';
        io.ops->remove(io.ctx, en->path);
        mem_put(&io, en->path, &e, NULL);
        CHECK_EQ_INT(tdb_enumeration_load(&io, en, NULL, &err),
                     TDB_E_CORRUPT);
        CHECK(strstr(err.msg, "'q'") != NULL);
        tdb_schema_free(s);
    }

    /* the legacy name has no timestamps; a missing file is an error */
    s = NULL;
    CHECK_EQ_INT(mem_put(&io, "old/__array_schema.tdb", &b, NULL), 0);
    CHECK_EQ_INT(tdb_schema_load(&io, "old/__array_schema.tdb", NULL, &s,
                                 &err), 0);
    if (s) {
        CHECK(!strcmp(s->name, "__array_schema.tdb"));
        CHECK(s->t1 == 0 && s->t2 == 0);
        tdb_schema_free(s);
    }
    s = NULL;
    CHECK(tdb_schema_load(&io, "nope/__schema/__1_1_x", NULL, &s, &err) < 0);
    CHECK(s == NULL);

    /* a file cut short at every length: an error, never a crash */
    struct tdb_buf whole = {0};
    tdb_generic_tile_encode(b.data, b.len,
                            &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1},
                            NULL, &whole, &err);
    for (size_t n = 0; n < whole.len; n += 7) {
        io.ops->remove(io.ctx, "cut");
        io.ops->write_at(io.ctx, "cut", 0, whole.data, n);
        s = NULL;
        CHECK(tdb_schema_load(&io, "cut", NULL, &s, &err) < 0);
        tdb_schema_free(s);
    }
    tdb_buf_free(&whole);
    tdb_buf_free(&b);
    tdb_buf_free(&e);
    tdb_io_free(&io);
}

/* ------------------------------------------------------------- the corpus */

/* Flattens a case.json into lines the test reads (python3's json module, so
 * that the test needs no JSON parser of its own):
 *   ARRAY uri | TYPE dense|sparse tile cell | CAP n | DUPS 0|1 | KEY hex
 *   DIM namehex DATATYPE lohex hihex extenthex|-   or  DIM namehex T var
 *   ATTR namehex DATATYPE cvn nullable fillhex fill_valid(-1: absent)
 *   CD lohex hihex ... | ENUM namehex S|N values... | END
 * Strings are hex ("-" when empty); numbers packed as the datatype. */
static const char corpus_py[] =
    "import json,struct,sys\n"
    "F={\"INT8\":\"b\",\"UINT8\":\"B\",\"INT16\":\"h\",\"UINT16\":\"H\","
    "\"INT32\":\"i\",\"UINT32\":\"I\",\"INT64\":\"q\",\"UINT64\":\"Q\","
    "\"FLOAT32\":\"f\",\"FLOAT64\":\"d\",\"CHAR\":\"b\",\"BOOL\":\"B\"}\n"
    "def hx(s): return s.encode().hex() or \"-\"\n"
    "def enc(t,v): return struct.pack(\"<\"+F.get(t,\"q\"),v).hex()\n"
    "def arr(j,uri):\n"
    "  print(\"ARRAY\",uri)\n"
    "  print(\"TYPE\",j[\"array_type\"],j[\"tile_order\"],j[\"cell_order\"])\n"
    "  if \"capacity\" in j: print(\"CAP\",j[\"capacity\"])\n"
    "  if \"allows_duplicates\" in j: print(\"DUPS\","
    "int(j[\"allows_duplicates\"]))\n"
    "  if \"key_hex\" in j: print(\"KEY\",j[\"key_hex\"])\n"
    "  for d in j[\"dims\"]:\n"
    "    t=d[\"datatype\"]\n"
    "    if \"domain\" in d:\n"
    "      e=d.get(\"tile_extent\")\n"
    "      print(\"DIM\",hx(d[\"name\"]),t,enc(t,d[\"domain\"][0]),"
    "enc(t,d[\"domain\"][1]),\"-\" if e is None else enc(t,e))\n"
    "    else: print(\"DIM\",hx(d[\"name\"]),t,\"var\")\n"
    "  for f in j[\"fields\"].values():\n"
    "    if f[\"role\"]!=\"attr\": continue\n"
    "    c=f[\"cell_val_num\"]\n"
    "    print(\"ATTR\",hx(f[\"name\"]),f[\"datatype\"],"
    "4294967295 if c==\"var\" else c,int(f[\"nullable\"]),"
    "f[\"fill_hex\"] or \"-\",int(f.get(\"fill_valid\",-1)))\n"
    "  if j.get(\"view_source\")==\"current_domain\":\n"
    "    print(\"CD\",\" \".join(enc(d[\"datatype\"],v) for d,r in "
    "zip(j[\"dims\"],j[\"view_region\"]) for v in r))\n"
    "  for n,vs in j.get(\"enumerations\",{}).items():\n"
    "    if all(isinstance(v,str) for v in vs): "
    "print(\"ENUM\",hx(n),\"S\",\" \".join(hx(v) for v in vs))\n"
    "    else: print(\"ENUM\",hx(n),\"N\",\" \".join(repr(float(v)) "
    "for v in vs))\n"
    "  print(\"END\")\n"
    "def walk(m):\n"
    "  for v in m.values():\n"
    "    if v.get(\"kind\")==\"array\": arr(v,v[\"uri\"])\n"
    "    if \"members\" in v: walk(v[\"members\"])\n"
    "j=json.load(open(sys.argv[1]))\n"
    "if j.get(\"kind\")==\"group\": walk(j[\"members\"])\n"
    "else: arr(j,\".\")\n";

#define MAXV 32

struct exp_dim {
    char name[256], type[32];
    bool var, has_extent;
    uint8_t lo[8], hi[8], extent[8];
};
struct exp_attr {
    char name[256], type[32];
    uint32_t cvn;
    int nullable, fill_valid;
    uint8_t fill[256];
    size_t fill_size;
};
struct exp_enum {
    char name[256];
    bool strings;
    size_t n;
    char *vals[MAXV];          /* hex strings, or decimal numbers */
};
struct exp_array {
    char uri[256];
    char array_type[16], tile_order[16], cell_order[16];
    long long capacity, dups;
    bool has_key;
    uint8_t key[32];
    size_t ndims, nattrs, nenums;
    struct exp_dim dims[MAXV];
    struct exp_attr attrs[MAXV];
    bool has_cd;
    uint8_t cd[MAXV][2][8];
    struct exp_enum enums[MAXV];
};

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    if (!strcmp(s, "-"))
        return 0;
    while (s[0] && s[1] && n < cap) {
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void unhex_str(const char *s, char *out, size_t cap)
{
    size_t n = unhex(s, (uint8_t *)out, cap - 1);
    out[n] = '\0';
}

static int read_expectations(const char *case_json, struct exp_array *ex,
                             size_t max)
{
    const char *tmpl = "python3 -c '%s' '%s' 2>/dev/null";
    size_t len = strlen(tmpl) + sizeof corpus_py + strlen(case_json) + 1;
    char *cmd = malloc(len);
    if (!cmd)
        return -1;
    snprintf(cmd, len, tmpl, corpus_py, case_json);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    struct exp_array *a = NULL;
    while (getline(&line, &cap, p) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        if (!tok)
            continue;
        if (!strcmp(tok, "ARRAY")) {
            if ((size_t)n >= max)
                break;
            a = &ex[n++];
            memset(a, 0, sizeof *a);
            a->capacity = a->dups = -1;
            snprintf(a->uri, sizeof a->uri, "%s", strtok_r(NULL, " ", &save));
        } else if (!a) {
            continue;
        } else if (!strcmp(tok, "TYPE")) {
            snprintf(a->array_type, 16, "%s", strtok_r(NULL, " ", &save));
            snprintf(a->tile_order, 16, "%s", strtok_r(NULL, " ", &save));
            snprintf(a->cell_order, 16, "%s", strtok_r(NULL, " ", &save));
        } else if (!strcmp(tok, "CAP")) {
            a->capacity = atoll(strtok_r(NULL, " ", &save));
        } else if (!strcmp(tok, "DUPS")) {
            a->dups = atoll(strtok_r(NULL, " ", &save));
        } else if (!strcmp(tok, "KEY")) {
            a->has_key = unhex(strtok_r(NULL, " ", &save), a->key, 32) == 32;
        } else if (!strcmp(tok, "DIM") && a->ndims < MAXV) {
            struct exp_dim *d = &a->dims[a->ndims++];
            unhex_str(strtok_r(NULL, " ", &save), d->name, sizeof d->name);
            snprintf(d->type, sizeof d->type, "%s",
                     strtok_r(NULL, " ", &save));
            char *lo = strtok_r(NULL, " ", &save);
            if (!strcmp(lo, "var")) {
                d->var = true;
                continue;
            }
            unhex(lo, d->lo, 8);
            unhex(strtok_r(NULL, " ", &save), d->hi, 8);
            d->has_extent =
                unhex(strtok_r(NULL, " ", &save), d->extent, 8) > 0;
        } else if (!strcmp(tok, "ATTR") && a->nattrs < MAXV) {
            struct exp_attr *t = &a->attrs[a->nattrs++];
            unhex_str(strtok_r(NULL, " ", &save), t->name, sizeof t->name);
            snprintf(t->type, sizeof t->type, "%s",
                     strtok_r(NULL, " ", &save));
            t->cvn = (uint32_t)strtoul(strtok_r(NULL, " ", &save), NULL, 10);
            t->nullable = atoi(strtok_r(NULL, " ", &save));
            t->fill_size = unhex(strtok_r(NULL, " ", &save), t->fill,
                                 sizeof t->fill);
            t->fill_valid = atoi(strtok_r(NULL, " ", &save));
        } else if (!strcmp(tok, "CD")) {
            a->has_cd = true;
            for (size_t i = 0; i < a->ndims; i++)
                for (int k = 0; k < 2; k++) {
                    char *h = strtok_r(NULL, " ", &save);
                    if (h)
                        unhex(h, a->cd[i][k], 8);
                }
        } else if (!strcmp(tok, "ENUM") && a->nenums < MAXV) {
            struct exp_enum *e = &a->enums[a->nenums++];
            unhex_str(strtok_r(NULL, " ", &save), e->name, sizeof e->name);
            e->strings = !strcmp(strtok_r(NULL, " ", &save), "S");
            char *v;
            while (e->n < MAXV && (v = strtok_r(NULL, " ", &save)))
                e->vals[e->n++] = strdup(v);
        }
    }
    free(line);
    int status = pclose(p);
    return status == 0 ? n : -1;
}

static void free_expectations(struct exp_array *ex, int n)
{
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < ex[i].nenums; j++)
            for (size_t k = 0; k < ex[i].enums[j].n; k++)
                free(ex[i].enums[j].vals[k]);
}

static unsigned order_of(const char *s)
{
    return !strcmp(s, "row-major")   ? TDB_ROW_MAJOR
           : !strcmp(s, "col-major") ? TDB_COL_MAJOR
           : !strcmp(s, "hilbert")   ? TDB_HILBERT
                                     : 99;
}

static void corpus_check_enum(const struct tdb_io *io, struct tdb_schema *s,
                              const struct exp_enum *x, const uint8_t *key,
                              const char *where)
{
    uint32_t i = 0;
    while (i < s->nenums && strcmp(s->enums[i].name, x->name))
        i++;
    CHECK(i < s->nenums);
    if (i == s->nenums)
        return;
    struct tdb_enumeration *e = &s->enums[i];
    struct tdb_error err = {0};
    int rc = tdb_enumeration_load(io, e, key, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "%s: %s\n", where, err.msg);
        return;
    }
    if (x->strings) {
        CHECK_EQ_INT(e->cell_val_num, TDB_VAR_NUM);
        CHECK_EQ_INT(e->offsets_size, 8 * x->n);
        for (size_t k = 0; k < x->n && e->offsets_size == 8 * x->n; k++) {
            uint64_t lo = tdb_le64(e->offsets + 8 * k);
            uint64_t hi = k + 1 < x->n ? tdb_le64(e->offsets + 8 * k + 8)
                                       : e->data_size;
            uint8_t want[256];
            size_t n = unhex(x->vals[k], want, sizeof want);
            CHECK_EQ_INT(hi - lo, n);
            if (hi - lo == n)
                CHECK_MEM(e->data + lo, want, n);
        }
    } else {
        unsigned sz = tdb_dt_size(e->type);
        CHECK(tdb_dt_is_float(e->type) || tdb_dt_is_integer(e->type));
        CHECK_EQ_INT(e->data_size, (uint64_t)sz * x->n);
        for (size_t k = 0; k < x->n && e->data_size == sz * x->n; k++) {
            double v = 0;
            if (e->type == TDB_FLOAT64) {
                memcpy(&v, e->data + 8 * k, 8);
            } else if (e->type == TDB_FLOAT32) {
                float f;
                memcpy(&f, e->data + 4 * k, 4);
                v = f;
            } else if (sz == 8) {
                v = (double)(int64_t)tdb_le64(e->data + 8 * k);
            } else if (sz == 4) {
                v = (double)(int32_t)tdb_le32(e->data + 4 * k);
            }
            CHECK(v == strtod(x->vals[k], NULL));
        }
    }
}

static void corpus_check_schema(struct tdb_schema *s,
                                const struct exp_array *x, bool newest,
                                const char *where)
{
    int before = unit_cur_failed;
    unit_cur_failed = 0;
    CHECK_EQ_INT(s->array_type,
                 !strcmp(x->array_type, "dense") ? TDB_DENSE : TDB_SPARSE);
    CHECK_EQ_INT(s->tile_order, order_of(x->tile_order));
    CHECK_EQ_INT(s->cell_order, order_of(x->cell_order));
    if (x->capacity >= 0)
        CHECK_EQ_INT(s->capacity, x->capacity);
    if (x->dups >= 0)
        CHECK_EQ_INT(s->allows_dups, x->dups);
    CHECK_EQ_INT(s->encryption,
                 x->has_key ? TDB_AES_256_GCM : TDB_NO_ENCRYPTION);
    CHECK_EQ_INT(s->ndims, x->ndims);
    for (size_t i = 0; i < x->ndims && i < s->ndims; i++) {
        const struct tdb_dim *d = &s->dims[i];
        const struct exp_dim *e = &x->dims[i];
        unsigned sz = tdb_dt_size(d->type);
        CHECK(!strcmp(d->name, e->name));
        CHECK(tdb_dt_name(d->type) && !strcmp(tdb_dt_name(d->type), e->type));
        CHECK_EQ_INT(d->cell_val_num == TDB_VAR_NUM, e->var);
        if (e->var) {
            CHECK(!d->has_extent);
            continue;
        }
        CHECK_MEM(d->lo, e->lo, sz);
        CHECK_MEM(d->hi, e->hi, sz);
        CHECK_EQ_INT(d->has_extent, e->has_extent);
        if (d->has_extent && e->has_extent)
            CHECK_MEM(d->extent, e->extent, sz);
    }
    /* The newest schema has exactly the case's attributes, in order; an
     * older one may miss some (added later) or have others (dropped). */
    if (newest)
        CHECK_EQ_INT(s->nattrs, x->nattrs);
    size_t matched = 0;
    for (size_t k = 0; k < x->nattrs; k++) {
        const struct exp_attr *e = &x->attrs[k];
        int i = tdb_schema_attr_index(s, e->name);
        if (i < 0) {
            CHECK(!newest);
            continue;
        }
        if (newest)
            CHECK_EQ_INT(i, k);
        matched++;
        const struct tdb_attr *a = &s->attrs[i];
        CHECK(tdb_dt_name(a->type) && !strcmp(tdb_dt_name(a->type), e->type));
        CHECK_EQ_INT(a->cell_val_num, e->cvn);
        CHECK_EQ_INT(a->nullable, e->nullable);
        CHECK_EQ_INT(a->fill_size, e->fill_size);
        if (a->fill_size == e->fill_size)
            CHECK_MEM(a->fill, e->fill, e->fill_size);
        if (e->fill_valid >= 0)
            CHECK_EQ_INT(a->fill_validity, e->fill_valid);
    }
    CHECK(matched > 0 || x->nattrs == 0);
    if (newest && x->has_cd) {
        CHECK(s->has_current_domain);
        for (size_t i = 0; s->has_current_domain && i < s->ndims; i++) {
            unsigned sz = tdb_dt_size(s->dims[i].type);
            CHECK_MEM(s->current_domain[i].lo, x->cd[i][0], sz);
            CHECK_MEM(s->current_domain[i].hi, x->cd[i][1], sz);
        }
    }
    if (unit_cur_failed)
        fprintf(stderr, "  ... in %s\n", where);
    unit_cur_failed |= before;
}

struct corpus_count {
    int arrays, schemas, enums;
};

/* Checks every schema of the array in folder `dir` (relative to io). */
static void corpus_array(const struct tdb_io *io, const char *dir,
                         const struct exp_array *x, const char *casename,
                         struct corpus_count *cnt)
{
    struct tdb_names names = {0};
    struct tdb_error err = {0};
    char *sdir = tdb_path_join(dir, "__schema");
    char *legacy = tdb_path_join(dir, "__array_schema.tdb");
    char *paths[64];
    size_t np = 0;
    if (tdb_io_exists(io, legacy))
        paths[np++] = strdup(legacy);
    if (tdb_io_names(io, sdir, &names, &err) == 0)
        for (size_t i = 0; i < names.n && np < 64; i++)
            if (!names.is_dir[i])
                paths[np++] = tdb_path_join(sdir, names.v[i]);
    tdb_names_free(&names);
    CHECK(np > 0);
    cnt->arrays++;

    struct tdb_schema *sch[64] = {0};
    size_t newest = 0;
    for (size_t i = 0; i < np; i++) {
        char where[512];
        snprintf(where, sizeof where, "%s: %s", casename, paths[i]);
        int rc = tdb_schema_load(io, paths[i], x->has_key ? x->key : NULL,
                                 &sch[i], &err);
        CHECK_EQ_INT(rc, 0);
        if (rc) {
            fprintf(stderr, "  %s: %s\n", where, err.msg);
            continue;
        }
        cnt->schemas++;
        if (x->has_key) {
            struct tdb_schema *no = NULL;
            CHECK(tdb_schema_load(io, paths[i], NULL, &no, &err) < 0);
            tdb_schema_free(no);
        }
        if (!sch[newest] || sch[i]->t1 > sch[newest]->t1 ||
            (sch[i]->t1 == sch[newest]->t1 &&
             strcmp(sch[i]->name, sch[newest]->name) > 0))
            newest = i;
    }
    for (size_t i = 0; i < np; i++) {
        char where[512];
        snprintf(where, sizeof where, "%s: %s", casename, paths[i]);
        if (!sch[i])
            continue;
        corpus_check_schema(sch[i], x, i == newest, where);
        roundtrip(sch[i]);
        if (i == newest)
            for (size_t k = 0; k < x->nenums; k++, cnt->enums++)
                corpus_check_enum(io, sch[i], &x->enums[k],
                                  x->has_key ? x->key : NULL, where);
    }
    for (size_t i = 0; i < np; i++) {
        tdb_schema_free(sch[i]);
        free(paths[i]);
    }
    free(sdir);
    free(legacy);
}

/* Finds array folders under `dir` (depth-first, a few levels deep). */
static void corpus_walk(const struct tdb_io *io, const char *dir, int depth,
                        struct exp_array *ex, int nex, const char *casename,
                        struct corpus_count *cnt)
{
    char *sdir = tdb_path_join(dir, "__schema");
    char *legacy = tdb_path_join(dir, "__array_schema.tdb");
    bool is_array = tdb_io_isdir(io, sdir) || tdb_io_exists(io, legacy);
    free(sdir);
    free(legacy);
    if (is_array) {
        const char *base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        const struct exp_array *x = NULL;
        for (int i = 0; i < nex && !x; i++)
            if (!strcmp(ex[i].uri, depth == 0 ? "." : base))
                x = &ex[i];
        CHECK(x != NULL);
        if (x)
            corpus_array(io, dir, x, casename, cnt);
        else
            fprintf(stderr, "  %s: no case.json entry for %s\n", casename,
                    dir);
        return;
    }
    if (depth >= 4)
        return;
    struct tdb_names names = {0};
    struct tdb_error err = {0};
    if (tdb_io_names(io, dir, &names, &err))
        return;
    for (size_t i = 0; i < names.n; i++) {
        if (!names.is_dir[i] || !strncmp(names.v[i], "__", 2))
            continue;
        char *sub = tdb_path_join(dir, names.v[i]);
        if (sub)
            corpus_walk(io, sub, depth + 1, ex, nex, casename, cnt);
        free(sub);
    }
    tdb_names_free(&names);
}

static void test_corpus(void)
{
    const char *root = unit_corpus();
    struct tdb_io io;
    struct tdb_names cases = {0};
    struct tdb_error err = {0};
    if (tdb_io_posix(&io, root)) {
        fprintf(stderr, "  test_corpus: cannot open %s\n", root);
        CHECK(0);
        return;
    }
    if (system("python3 -c 'import json,struct' >/dev/null 2>&1") != 0) {
        printf("skip test_corpus: python3 is needed to read case.json\n");
        tdb_io_free(&io);
        return;
    }
    tdb_io_names(&io, "", &cases, &err);
    static struct exp_array ex[16];
    struct corpus_count cnt = {0};
    int ncases = 0;
    for (size_t c = 0; c < cases.n; c++) {
        if (!cases.is_dir[c])
            continue;
        char *cj = tdb_path_join(cases.v[c], "case.json");
        char *full = cj ? tdb_path_join(root, cj) : NULL;
        char *arr = tdb_path_join(cases.v[c], "array");
        if (full && tdb_io_exists(&io, cj) && arr) {
            int n = read_expectations(full, ex, 16);
            CHECK(n > 0);
            if (n > 0) {
                ncases++;
                corpus_walk(&io, arr, 0, ex, n, cases.v[c], &cnt);
            } else {
                fprintf(stderr, "  %s: cannot read case.json\n", full);
            }
            free_expectations(ex, n);
        }
        free(cj);
        free(full);
        free(arr);
    }
    tdb_names_free(&cases);
    tdb_io_free(&io);
    CHECK(ncases > 0);
    printf("corpus: %d cases, %d arrays, %d schemas, %d enumerations\n",
           ncases, cnt.arrays, cnt.schemas, cnt.enums);
    CHECK(cnt.schemas >= cnt.arrays);
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
    RUN_CORPUS(test_corpus);
    return unit_done();
}
