/* fixture.c: what the tests of the on-disk structures share (see
 * fixture.h). */
#include "fixture.h"
#include "model/generic_tile.h"
#include "model/schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Writes `size` bytes as one generic tile at `path` of an in-memory io. */
void put_tile(struct tdb_io *io, const char *path, const void *p,
              size_t size)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    int r = tdb_generic_tile_encode(p, size, &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1}, NULL, &b, &err);
    CHECK_EQ_INT(r, 0);
    if (r == 0)
        CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, b.data, b.len), 0);
    tdb_buf_free(&b);
}

/* ---------------------------------------------- a small case.json reader */

const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == ',' ||
           *p == ':')
        p++;
    return p;
}

const char *js_skip_string(const char *p)
{
    p++;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        p++;
    }
    return *p ? p + 1 : p;
}

/* Skips one JSON value starting at p (whitespace first); @return the end. */
const char *js_skip(const char *p)
{
    p = js_ws(p);
    if (*p == '"')
        return js_skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') {
                p = js_skip_string(p);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            if (*p == '}' || *p == ']') {
                depth--;
                if (depth == 0)
                    return p + 1;
            }
            p++;
        }
        return p;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']')
        p++;
    return p;
}

/* Copies the (unescaped, simple) string at p into out. */
const char *js_string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    p++;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        if (n + 1 < cap)
            out[n++] = *p;
        p++;
    }
    out[n] = 0;
    return *p ? p + 1 : p;
}

/* In object `obj` (pointing at '{'), finds member `key`'s value. */
const char *js_get(const char *obj, const char *key)
{
    if (!obj)
        return NULL;
    obj = js_ws(obj);
    if (*obj != '{')
        return NULL;
    const char *p = obj + 1;
    for (;;) {
        p = js_ws(p);
        if (*p != '"')
            return NULL;
        char k[512];
        p = js_string(p, k, sizeof k);
        p = js_ws(p);
        if (strcmp(k, key) == 0)
            return p;
        p = js_skip(p);
    }
}

/* check_same_schema: the dims. */
static void check_same_dims(const struct tdb_schema *a,
                            const struct tdb_schema *b)
{
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
}

/* check_same_schema: the attrs. */
static void check_same_attrs(const struct tdb_schema *a,
                             const struct tdb_schema *b)
{
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
}

/* check_same_schema: labels and enumerations (by file name). */
static void check_same_labels_enums(const struct tdb_schema *a,
                                    const struct tdb_schema *b)
{
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
}

/* check_same_schema: the current domain. */
static void check_same_current_domain(const struct tdb_schema *a,
                                      const struct tdb_schema *b)
{
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

void check_same_schema(const struct tdb_schema *a,
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
    check_same_dims(a, b);
    check_same_attrs(a, b);
    check_same_labels_enums(a, b);
    check_same_current_domain(a, b);
}

/* serialize -> parse -> compare -> serialize again: same bytes. */
void schema_roundtrip(const struct tdb_schema *s)
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

void fmt(char *dst, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(dst, cap, f, ap);
    va_end(ap);
}

int fm_load(const struct tdb_io *io, const char *path, const char *name,
            const struct tdb_schema_set *set, const uint8_t *key,
            const uint8_t *footer, size_t size, struct tdb_fragmeta **fm,
            struct tdb_error *err)
{
    struct tdb_fragmeta_src src = {io, path, name, set, key, footer, size};
    return tdb_fragmeta_load(&src, fm, err);
}
