/* json.c: the JSON documents of the mount contract (__array.json,
 * __fragment.json, __group.json), built as jansson trees and printed by
 * tdb_json_dump. */
#include "tree/json.h"
#include "core/value.h"
#include "filters/filter.h"
#include "filters/options.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>

/* The key of the one-member object holding a uint64 above INT64_MAX; no
 * document key starts with a control character. */
#define JSON_U64_KEY "\001u64"

/* --------------------------------------------------------------- building */

void tdb_jb_set(struct tdb_jb *jb, json_t *obj, const char *key, json_t *v)
{
    if (!jb->rc && obj && v) {
        /* json_object_set_new takes v even when it fails */
        if (json_object_set_new(obj, key, v))
            jb->rc = TDB_E_NOMEM;
        return;
    }
    json_decref(v);
    if (!jb->rc)
        jb->rc = TDB_E_NOMEM;
}

void tdb_jb_push(struct tdb_jb *jb, json_t *arr, json_t *v)
{
    if (!jb->rc && arr && v) {
        if (json_array_append_new(arr, v))
            jb->rc = TDB_E_NOMEM;
        return;
    }
    json_decref(v);
    if (!jb->rc)
        jb->rc = TDB_E_NOMEM;
}

json_t *tdb_jb_object(struct tdb_jb *jb)
{
    json_t *o = jb->rc ? NULL : json_object();
    if (!o && !jb->rc)
        jb->rc = TDB_E_NOMEM;
    return o;
}

json_t *tdb_jb_array(struct tdb_jb *jb)
{
    json_t *a = jb->rc ? NULL : json_array();
    if (!a && !jb->rc)
        jb->rc = TDB_E_NOMEM;
    return a;
}

json_t *tdb_json_u64(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)v);
    char s[32];
    snprintf(s, sizeof s, "%" PRIu64, v);
    json_t *o = json_object();
    if (o && json_object_set_new(o, JSON_U64_KEY, json_string(s))) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

json_t *tdb_json_bytes(const void *s, size_t n)
{
    return json_stringn_nocheck(n ? (const char *)s : "", n);
}

json_t *tdb_json_cstr(const char *s)
{
    return tdb_json_bytes(s, strlen(s));
}

json_t *tdb_json_double(double d)
{
    if (isnan(d))
        return json_string("NaN");
    if (isinf(d))
        return json_string(d > 0 ? "Infinity" : "-Infinity");
    return json_real(d);
}

json_t *tdb_json_value(unsigned type, const uint8_t *v, uint64_t n)
{
    enum tdb_vclass cls = tdb_value_class(type);
    if (cls == TDB_VC_STRING || cls == TDB_VC_NONE || n != tdb_dt_size(type))
        return tdb_json_bytes(v, (size_t)n);
    struct tdb_num x = tdb_value_load(type, v);
    if (cls == TDB_VC_FLOAT)
        return tdb_json_double(x.d);
    if (cls == TDB_VC_SIGNED)
        return json_integer((json_int_t)x.i);
    return tdb_json_u64(x.u);  /* unsigned, and bytes of one value */
}

/* ---------------------------------------------------------------- printing */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t json_utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                 : s[0] >= 0xe0                ? 3
                 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
                                               : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

bool tdb_json_is_utf8(const void *s, size_t n)
{
    /* jansson's own check, the one its keys and strings must pass */
    json_t *v = json_stringn(n ? (const char *)s : "", n);
    json_decref(v);
    return v != NULL;
}

static int json_put(struct tdb_buf *out, const char *s)
{
    return tdb_buf_append(out, s, strlen(s));
}

/* The code point of the ul-byte UTF-8 sequence at u, as \uXXXX (two of
 * them, a surrogate pair, above U+FFFF). */
static int json_put_escaped(struct tdb_buf *out, const unsigned char *u,
                            size_t ul)
{
    static const unsigned char lead[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t cp = u[0] & lead[ul];
    char e[16];
    for (size_t i = 1; i < ul; i++)
        cp = cp << 6 | (u[i] & 0x3f);
    if (cp > 0xffff)
        snprintf(e, sizeof e, "\\u%04x\\u%04x",
                 0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + (cp & 0x3ff));
    else
        snprintf(e, sizeof e, "\\u%04x", cp);
    return json_put(out, e);
}

static int json_put_str(struct tdb_buf *out, const char *s, size_t n,
                        bool ascii)
{
    const unsigned char *u = (const unsigned char *)s;
    int rc = json_put(out, "\"");
    for (size_t i = 0; i < n && !rc; i++) {
        unsigned char c = u[i];
        char e[8];
        size_t ul;
        if (c >= 0x80 && (ul = json_utf8_len(u + i, n - i))) {
            /* valid UTF-8 goes through as it is, or escaped */
            rc = ascii ? json_put_escaped(out, u + i, ul)
                       : tdb_buf_append(out, u + i, ul);
            i += ul - 1;
            continue;
        }
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            e[2] = 0;
        } else if (c < 0x20 || c >= 0x7f) {
            snprintf(e, sizeof e, "\\u%04x", c);
        } else {
            e[0] = (char)c;
            e[1] = 0;
        }
        rc = json_put(out, e);
    }
    return rc ? rc : json_put(out, "\"");
}

/* The digits of a big uint64 when v is the object tdb_json_u64 makes. */
static const char *json_big_u64(const json_t *v)
{
    if (!json_is_object(v) || json_object_size(v) != 1)
        return NULL;
    const json_t *d = json_object_get(v, JSON_U64_KEY);
    return d && json_is_string(d) ? json_string_value(d) : NULL;
}

static int json_dump_value(const json_t *v, struct tdb_buf *out, bool ascii)
{
    char s[40];
    int rc = 0;
    const char *big;

    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if ((big = json_big_u64(v)))
            return json_put(out, big);
        rc = json_put(out, "{");
        bool first = true;
        for (void *it = json_object_iter((json_t *)v); it && !rc;
             it = json_object_iter_next((json_t *)v, it)) {
            const char *k = json_object_iter_key(it);
            if (!first)
                rc = json_put(out, ", ");
            first = false;
            if (!rc)
                rc = json_put_str(out, k, strlen(k), ascii);
            if (!rc)
                rc = json_put(out, ": ");
            if (!rc)
                rc = json_dump_value(json_object_iter_value(it), out, ascii);
        }
        return rc ? rc : json_put(out, "}");
    }
    case JSON_ARRAY:
        rc = json_put(out, "[");
        for (size_t i = 0; i < json_array_size(v) && !rc; i++) {
            if (i)
                rc = json_put(out, ", ");
            if (!rc)
                rc = json_dump_value(json_array_get(v, i), out, ascii);
        }
        return rc ? rc : json_put(out, "]");
    case JSON_STRING:
        return json_put_str(out, json_string_value(v), json_string_length(v),
                            ascii);
    case JSON_INTEGER:
        snprintf(s, sizeof s, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return json_put(out, s);
    case JSON_REAL: {
        double d = json_real_value(v);
        if (isnan(d) || isinf(d))
            return TDB_E_INVAL;
        snprintf(s, sizeof s, "%.17g", d);
        return json_put(out, s);
    }
    case JSON_TRUE:
        return json_put(out, "true");
    case JSON_FALSE:
        return json_put(out, "false");
    case JSON_NULL:
        return json_put(out, "null");
    default:
        return TDB_E_INVAL;
    }
}

static int json_dump(const json_t *doc, struct tdb_buf *out, bool ascii)
{
    if (!doc)
        return TDB_E_NOMEM;
    size_t len = out->len;
    int rc = json_dump_value(doc, out, ascii);
    if (!rc)
        rc = json_put(out, "\n");
    if (rc)
        out->len = len;
    return rc;
}

int tdb_json_dump(const json_t *doc, struct tdb_buf *out)
{
    return json_dump(doc, out, false);
}

int tdb_json_dump_ascii(const json_t *doc, struct tdb_buf *out)
{
    return json_dump(doc, out, true);
}

/* ----------------------------------------------------------------- schema */

static const char *json_layout(unsigned l)
{
    switch (l) {
    case TDB_ROW_MAJOR: return "row-major";
    case TDB_COL_MAJOR: return "col-major";
    case TDB_GLOBAL_ORDER: return "global-order";
    case TDB_UNORDERED: return "unordered";
    case TDB_HILBERT: return "hilbert";
    default: return "unknown";
    }
}

/* The JSON options of filter f into fo, as its type's table lists them:
 * a datatype only when set, a name as the table spells it. */
static void json_filter_options(struct tdb_jb *jb, json_t *fo,
                                const struct tdb_filter *f)
{
    const struct tdb_filter_ops *t = tdb_filter_lookup(f->type);
    for (unsigned i = 0; t && i < t->n_options; i++) {
        const struct tdb_filter_opt *o = &t->options[i];
        struct tdb_fopt_value v = tdb_fopt_get(f, o);
        const char *dt = tdb_dt_name((unsigned)v.i);
        json_t *j;
        if (o->flags & TDB_FOPT_NO_JSON)
            continue;
        switch (o->kind) {
        case TDB_FOPT_INT: j = json_integer(v.i); break;
        case TDB_FOPT_UINT: j = tdb_json_u64((uint64_t)v.i); break;
        case TDB_FOPT_REAL: j = tdb_json_double(v.d); break;
        case TDB_FOPT_BOOL: j = json_boolean(v.i); break;
        case TDB_FOPT_NAME: j = tdb_json_cstr(tdb_fopt_name(o, v.i)); break;
        default:
            if (v.i == TDB_ANY || !dt)
                continue;
            j = tdb_json_cstr(dt);
            break;
        }
        tdb_jb_set(jb, fo, o->name, j);
    }
}

static void json_pipeline(struct tdb_jb *jb, json_t *o, const char *key,
                          const struct tdb_pipeline *p)
{
    json_t *list = tdb_jb_array(jb);
    for (uint32_t i = 0; i < p->n; i++) {
        const struct tdb_filter *f = &p->f[i];
        json_t *fo = tdb_jb_object(jb);
        tdb_jb_set(jb, fo, "type",
                   tdb_json_cstr(f->ops ? f->ops->name : "UNKNOWN"));
        json_filter_options(jb, fo, f);
        tdb_jb_push(jb, list, fo);
    }
    tdb_jb_set(jb, o, key, list);
    if (p->max_chunk_size != 65536) {
        char k[64];
        snprintf(k, sizeof k, "%s_max_chunk_size", key);
        tdb_jb_set(jb, o, k, tdb_json_u64(p->max_chunk_size));
    }
}

/* tdb_json_array: the text of __array.json (dense: the view region lo..hi and its source;
 * nothing when empty). */
int tdb_json_array(struct tdb_buf *out, const struct tdb_array *a,
                   const char *source, bool empty, const uint64_t *lo,
                   const uint64_t *hi)
{
    const struct tdb_schema *s = a->schema;
    bool dense = s->array_type == TDB_DENSE;
    struct tdb_jb jb = {0};
    json_t *o = tdb_jb_object(&jb);
    tdb_jb_set(&jb, o, "type", tdb_json_cstr("array"));
    tdb_jb_set(&jb, o, "array_type", tdb_json_cstr(dense ? "dense" : "sparse"));
    tdb_jb_set(&jb, o, "schema", tdb_json_schema(s));
    if (dense) {
        tdb_jb_set(&jb, o, "view_source", tdb_json_cstr(source));
        json_t *region = tdb_jb_array(&jb), *shape = tdb_jb_array(&jb);
        for (uint32_t d = 0; !empty && d < s->ndims; d++) {
            uint8_t v[8];
            unsigned vs = tdb_dt_size(s->dims[d].type);
            json_t *pair = tdb_jb_array(&jb);
            tdb_dim_value(&s->dims[d], lo[d], v);
            tdb_jb_push(&jb, pair, tdb_json_value(s->dims[d].type, v, vs));
            tdb_dim_value(&s->dims[d], hi[d], v);
            tdb_jb_push(&jb, pair, tdb_json_value(s->dims[d].type, v, vs));
            tdb_jb_push(&jb, region, pair);
            tdb_jb_push(&jb, shape, tdb_json_u64(hi[d] - lo[d] + 1));
        }
        tdb_jb_set(&jb, o, "view_region", region);
        tdb_jb_set(&jb, o, "view_shape", shape);
    }
    json_t *names = tdb_jb_array(&jb), *versions = tdb_jb_array(&jb);
    for (size_t i = 0; i < a->nfrags; i++) {
        tdb_jb_push(&jb, names, tdb_json_cstr(a->frags[i].fm->name));
        tdb_jb_push(&jb, versions, tdb_json_u64(a->frags[i].fm->version));
    }
    tdb_jb_set(&jb, o, "fragments", names);
    tdb_jb_set(&jb, o, "format_versions", versions);
    tdb_jb_set(&jb, o, "schema_name", tdb_json_cstr(s->name ? s->name : ""));
    json_t *ts = tdb_jb_array(&jb);
    tdb_jb_push(&jb, ts, tdb_json_u64(a->ts_start));
    tdb_jb_push(&jb, ts, tdb_json_u64(a->ts_end));
    tdb_jb_set(&jb, o, "timestamp", ts);
    int r = jb.rc ? jb.rc : tdb_json_dump(o, out);
    json_decref(o);
    return r;
}

/* Bytes as a string of lower-case hex digits. */
static json_t *json_hex(const uint8_t *p, uint64_t n)
{
    static const char digits[] = "0123456789abcdef";
    if (n > SIZE_MAX / 2)
        return NULL;
    char *h = malloc(n ? (size_t)n * 2 : 1);
    if (!h)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        h[2 * i] = digits[p[i] >> 4];
        h[2 * i + 1] = digits[p[i] & 15];
    }
    json_t *v = json_stringn(h, (size_t)n * 2);
    free(h);
    return v;
}

static json_t *json_datatype(unsigned type)
{
    return tdb_json_cstr(tdb_dt_name(type) ? tdb_dt_name(type) : "?");
}

static json_t *json_cell_val_num(uint32_t n)
{
    return n == TDB_VAR_NUM ? tdb_json_cstr("var") : tdb_json_u64(n);
}

static json_t *json_dim(struct tdb_jb *jb, const struct tdb_dim *dim)
{
    unsigned vs = tdb_dt_size(dim->type);
    json_t *o = tdb_jb_object(jb);
    tdb_jb_set(jb, o, "name", tdb_json_cstr(dim->name));
    tdb_jb_set(jb, o, "datatype", json_datatype(dim->type));
    if (dim->cell_val_num != TDB_VAR_NUM) {
        json_t *dom = tdb_jb_array(jb);
        tdb_jb_push(jb, dom, tdb_json_value(dim->type, dim->lo, vs));
        tdb_jb_push(jb, dom, tdb_json_value(dim->type, dim->hi, vs));
        tdb_jb_set(jb, o, "domain", dom);
        tdb_jb_set(jb, o, "tile_extent",
                   dim->has_extent ? tdb_json_value(dim->type, dim->extent, vs)
                                   : json_null());
    } else {
        tdb_jb_set(jb, o, "var", json_true());
    }
    json_pipeline(jb, o, "filters", &dim->filters);
    return o;
}

static json_t *json_attr(struct tdb_jb *jb, const struct tdb_attr *a)
{
    json_t *o = tdb_jb_object(jb);
    tdb_jb_set(jb, o, "name", tdb_json_cstr(a->name));
    tdb_jb_set(jb, o, "datatype", json_datatype(a->type));
    tdb_jb_set(jb, o, "cell_val_num", json_cell_val_num(a->cell_val_num));
    tdb_jb_set(jb, o, "nullable", json_boolean(a->nullable));
    tdb_jb_set(jb, o, "fill_hex", json_hex(a->fill, a->fill_size));
    if (a->nullable)
        tdb_jb_set(jb, o, "fill_validity", tdb_json_u64(a->fill_validity));
    if (a->enumeration)
        tdb_jb_set(jb, o, "enumeration", tdb_json_cstr(a->enumeration));
    json_pipeline(jb, o, "filters", &a->filters);
    return o;
}

static json_t *json_enumeration(struct tdb_jb *jb,
                                const struct tdb_enumeration *e)
{
    json_t *o = tdb_jb_object(jb);
    tdb_jb_set(jb, o, "name", tdb_json_cstr(e->name));
    tdb_jb_set(jb, o, "datatype", json_datatype(e->type));
    tdb_jb_set(jb, o, "cell_val_num", json_cell_val_num(e->cell_val_num));
    tdb_jb_set(jb, o, "ordered", json_boolean(e->ordered));
    tdb_jb_set(jb, o, "data_hex", json_hex(e->data, e->data_size));
    if (e->cell_val_num == TDB_VAR_NUM)
        tdb_jb_set(jb, o, "offsets_hex", json_hex(e->offsets, e->offsets_size));
    return o;
}

json_t *tdb_json_schema(const struct tdb_schema *s)
{
    struct tdb_jb jb = {0};
    json_t *o = tdb_jb_object(&jb);
    tdb_jb_set(&jb, o, "array_type",
               tdb_json_cstr(s->array_type == TDB_SPARSE ? "sparse" : "dense"));
    tdb_jb_set(&jb, o, "tile_order", tdb_json_cstr(json_layout(s->tile_order)));
    tdb_jb_set(&jb, o, "cell_order", tdb_json_cstr(json_layout(s->cell_order)));
    tdb_jb_set(&jb, o, "capacity", tdb_json_u64(s->capacity));
    tdb_jb_set(&jb, o, "allows_duplicates", json_boolean(s->allows_dups));
    json_t *dims = tdb_jb_array(&jb);
    for (uint32_t d = 0; d < s->ndims; d++)
        tdb_jb_push(&jb, dims, json_dim(&jb, &s->dims[d]));
    tdb_jb_set(&jb, o, "dims", dims);
    json_t *attrs = tdb_jb_array(&jb);
    for (uint32_t i = 0; i < s->nattrs; i++)
        tdb_jb_push(&jb, attrs, json_attr(&jb, &s->attrs[i]));
    tdb_jb_set(&jb, o, "attrs", attrs);
    if (s->nenums) {
        json_t *enums = tdb_jb_array(&jb);
        for (uint32_t i = 0; i < s->nenums; i++)
            tdb_jb_push(&jb, enums, json_enumeration(&jb, &s->enums[i]));
        tdb_jb_set(&jb, o, "enumerations", enums);
    }
    tdb_jb_set(&jb, o, "current_domain",
               tdb_json_ranges(s, s->has_current_domain ? s->current_domain
                                                        : NULL));
    json_pipeline(&jb, o, "coords_filters", &s->coords_filters);
    json_pipeline(&jb, o, "offsets_filters", &s->offsets_filters);
    json_pipeline(&jb, o, "validity_filters", &s->validity_filters);
    tdb_jb_set(&jb, o, "version", tdb_json_u64(s->version));
    if (jb.rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *tdb_json_ranges(const struct tdb_schema *s, const struct tdb_range *r)
{
    if (!r)
        return json_null();
    struct tdb_jb jb = {0};
    json_t *list = tdb_jb_array(&jb);
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        json_t *pair = tdb_jb_array(&jb);
        if (dim->cell_val_num == TDB_VAR_NUM) {
            tdb_jb_push(&jb, pair, tdb_json_bytes(r[d].vlo, (size_t)r[d].vlo_size));
            tdb_jb_push(&jb, pair, tdb_json_bytes(r[d].vhi, (size_t)r[d].vhi_size));
        } else {
            unsigned vs = tdb_dt_size(dim->type);
            tdb_jb_push(&jb, pair, tdb_json_value(dim->type, r[d].lo, vs));
            tdb_jb_push(&jb, pair, tdb_json_value(dim->type, r[d].hi, vs));
        }
        tdb_jb_push(&jb, list, pair);
    }
    if (jb.rc) {
        json_decref(list);
        return NULL;
    }
    return list;
}

int tdb_json_fragment(struct tdb_buf *out, const struct tdb_frag *f,
                      uint64_t bytes_on_disk)
{
    struct tdb_jb jb = {0};
    const struct tdb_fragmeta *fm = f->fm;
    json_t *o = tdb_jb_object(&jb);
    tdb_jb_set(&jb, o, "name", tdb_json_cstr(fm->name));
    tdb_jb_set(&jb, o, "format_version", tdb_json_u64(fm->version));
    json_t *ts = tdb_jb_array(&jb);
    tdb_jb_push(&jb, ts, tdb_json_u64(fm->t1));
    tdb_jb_push(&jb, ts, tdb_json_u64(fm->t2));
    tdb_jb_set(&jb, o, "timestamps", ts);
    tdb_jb_set(&jb, o, "dense", json_boolean(fm->dense));
    tdb_jb_set(&jb, o, "non_empty_domain",
               tdb_json_ranges(f->fs, fm->ned_null ? NULL : fm->ned));
    tdb_jb_set(&jb, o, "cell_num", tdb_json_u64(f->ncells));
    tdb_jb_set(&jb, o, "bytes_on_disk", tdb_json_u64(bytes_on_disk));
    if (fm->schema_name)
        tdb_jb_set(&jb, o, "schema_name", tdb_json_cstr(fm->schema_name));
    tdb_jb_set(&jb, o, "has_timestamps", json_boolean(fm->has_timestamps));
    tdb_jb_set(&jb, o, "has_delete_meta", json_boolean(fm->has_delete_meta));
    *out = (struct tdb_buf){0};
    int rc = jb.rc ? jb.rc : tdb_json_dump(o, out);
    json_decref(o);
    if (rc)
        tdb_buf_free(out);
    return rc;
}
