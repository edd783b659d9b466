/* zarr_doc.c: the documents of a __zarr store (docs/LAYOUT.md "__zarr"):
 * each array's .zarray and .zattrs (Zarr v2) and zarr.json (Zarr v3),
 * the group's .zgroup, .zattrs, .zmetadata and zarr.json (consolidated),
 * and those of a group's __zarr over its members' stores. */
#include "tree/zarr_priv.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- values */

/* n bytes in base64 (Zarr's fill value of a bytes dtype). */
static json_t *zarr_base64(const uint8_t *p, size_t n)
{
    if (n > INT32_MAX)
        return NULL;
    char *s = malloc(4 * (n / 3 + 1) + 1);
    if (!s)
        return NULL;
    int len = EVP_EncodeBlock((unsigned char *)s, p, (int)n);
    json_t *v = len >= 0 ? json_stringn(s, (size_t)len) : NULL;
    free(s);
    return v;
}

/* One number of datatype t at p as Zarr writes it (booleans as JSON's). */
static json_t *zarr_number(unsigned t, const uint8_t *p)
{
    return t == TDB_BOOL ? json_boolean(*p != 0)
                         : tdb_json_value(t, p, tdb_dt_size(t));
}

/* The fill of attribute `at`, when every value of it is one number:
 * that number (*uniform true); otherwise its first value. */
static json_t *zarr_fill_number(const struct tdb_attr *at, bool *uniform)
{
    unsigned vs = tdb_dt_size(at->type);
    *uniform = false;
    if (!vs || at->fill_size < vs)
        return json_integer(0);
    *uniform = true;
    for (uint64_t i = vs; i + vs <= at->fill_size; i += vs)
        if (memcmp(at->fill, at->fill + i, vs))
            *uniform = false;
    return zarr_number(at->type, at->fill);
}

/* fill_value of array x: v2 (null where Zarr v2 has no value for it) or
 * v3 (never null). */
static json_t *zarr_fill(const struct tdb_zarr *z, const struct zarr_arr *x,
                         bool v3)
{
    const struct tdb_schema *s = z->a->schema;
    if (x->kind == ZARR_COORD || (x->kind == ZARR_DIMLABEL && x->enc == ZARR_FIXED))
        return v3 ? json_integer(0) : json_null();
    if (x->kind == ZARR_DIMLABEL)
        return x->enc == ZARR_UTF8 ? json_string("")
               : v3                ? json_string("") : json_null();
    const struct tdb_attr *at = &s->attrs[x->idx];
    if (x->kind == ZARR_VALIDITY)
        return json_boolean(at->fill_validity != 0);
    if (x->kind == ZARR_LABELS) {
        /* a code with no value: empty, 0 or NaN */
        if (x->enc == ZARR_UTF8)
            return json_string("");
        if (x->enc == ZARR_BYTES)
            return v3 ? json_string("") : json_null();
        return tdb_dt_is_float(x->en->type) ? tdb_json_double(0.0 / 0.0)
                                             : json_integer(0);
    }
    if (x->enc == ZARR_UTF8) {
        bool ok = tdb_json_is_utf8(at->fill, (size_t)at->fill_size);
        if (ok)
            return json_stringn((const char *)at->fill, (size_t)at->fill_size);
        return v3 ? json_string("") : json_null();
    }
    if (x->enc == ZARR_BYTES)
        return v3 ? zarr_base64(at->fill, (size_t)at->fill_size) : json_null();
    if (zarr_bytes_type(at->type)) {
        if (v3)                 /* uint8: the first byte */
            return json_integer(at->fill_size ? at->fill[0] : 0);
        if (!at->fill_size)
            return json_null();
        uint8_t *b = malloc(at->cell_val_num ? at->cell_val_num : 1);
        if (!b)
            return NULL;
        for (uint32_t i = 0; i < at->cell_val_num; i++)
            b[i] = at->fill[i % at->fill_size];
        json_t *v = zarr_base64(b, at->cell_val_num);
        free(b);
        return v;
    }
    bool uniform;
    json_t *v = zarr_fill_number(at, &uniform);
    if (!uniform && !v3) {
        json_decref(v);
        return json_null();
    }
    return v;
}

/* numpy's dtype of array x's values (v2's "dtype"). */
static const char *zarr_dtype(const struct tdb_zarr *z,
                              const struct zarr_arr *x, char *buf, size_t cap)
{
    const struct tdb_schema *s = z->a->schema;
    if (x->kind == ZARR_VALIDITY)
        return "|b1";
    if (x->enc != ZARR_FIXED)
        return "|O";
    uint32_t ai;
    const struct tdb_schema *ls = zarr_src(z, x, &ai)->schema;
    unsigned t = x->kind == ZARR_COORD    ? s->dims[x->idx].type
                 : x->kind == ZARR_LABELS ? x->en->type
                                          : ls->attrs[ai].type;
    if (x->kind == ZARR_ATTR && zarr_bytes_type(t)) {
        snprintf(buf, cap, "|S%u", ls->attrs[ai].cell_val_num);
        return buf;
    }
    return tdb_dt_numpy(t) ? tdb_dt_numpy(t) : "|u1";
}

/* Zarr v3's data_type of array x, from its numpy dtype: times are int64
 * (their unit in the attribute "units"), bytes uint8. */
static const char *zarr_v3_type(const struct tdb_zarr *z,
                                const struct zarr_arr *x)
{
    if (x->enc == ZARR_UTF8)
        return "string";
    if (x->enc == ZARR_BYTES)
        return "bytes";
    char buf[32];
    const char *dt = zarr_dtype(z, x, buf, sizeof buf);
    char kind = dt[1];
    int size = atoi(dt + 2);
    if (kind == 'b')
        return "bool";
    if (kind == 'S' || kind == 'M' || kind == 'm')
        return kind == 'S' ? "uint8" : "int64";
    static const char *const ints[] = {"int8", "int16", "int32", "int64"};
    static const char *const uints[] = {"uint8", "uint16", "uint32", "uint64"};
    int lg = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
    if (kind == 'f')
        return size == 4 ? "float32" : "float64";
    return kind == 'i' ? ints[lg] : uints[lg];
}

/* CF's units of a datetime or time dtype ("<M8[ms]": "milliseconds since
 * 1970-01-01"; "<m8[ns]": "nanoseconds"), or NULL for other dtypes. */
static const char *zarr_units(const char *dt, char *buf, size_t cap)
{
    static const char *const abbr[] = {"Y", "M", "W", "D", "h", "m", "s",
                                       "ms", "us", "ns", "ps", "fs", "as"};
    static const char *const word[] = {
        "years", "months", "weeks", "days", "hours", "minutes", "seconds",
        "milliseconds", "microseconds", "nanoseconds", "picoseconds",
        "femtoseconds", "attoseconds"};
    if ((dt[1] != 'M' && dt[1] != 'm') || dt[2] != '8' || dt[3] != '[')
        return NULL;
    for (size_t i = 0; i < sizeof abbr / sizeof *abbr; i++) {
        size_t l = strlen(abbr[i]);
        if (!strncmp(dt + 4, abbr[i], l) && dt[4 + l] == ']') {
            snprintf(buf, cap, "%s%s", word[i],
                     dt[1] == 'M' ? " since 1970-01-01" : "");
            return buf;
        }
    }
    return NULL;
}

static json_t *zarr_u64_list(struct tdb_jb *jb, const uint64_t *v, uint32_t n)
{
    json_t *l = tdb_jb_array(jb);
    for (uint32_t i = 0; i < n; i++)
        tdb_jb_push(jb, l, tdb_json_u64(v[i]));
    return l;
}

/* Metadata value it as JSON (a number, a list of numbers, a string), or
 * NULL when JSON has no form for it (blobs, strings that are not UTF-8). */
static json_t *zarr_meta_value(struct tdb_jb *jb, const struct tdb_meta_item *it)
{
    unsigned vs = tdb_dt_size(it->type);
    if (zarr_bytes_type(it->type))
        return tdb_json_is_utf8(it->value, (size_t)it->size)
                   ? tdb_json_bytes(it->value, (size_t)it->size) : NULL;
    bool num = tdb_dt_is_integer(it->type) || tdb_dt_is_float(it->type) ||
               it->type == TDB_BOOL;
    if (!num || !vs || it->size != (uint64_t)it->count * vs)
        return NULL;
    json_t *l = it->count == 1 ? NULL : tdb_jb_array(jb), *one = NULL;
    for (uint32_t i = 0; i < it->count; i++) {
        one = zarr_number(it->type, it->value + (size_t)i * vs);
        if (l)
            tdb_jb_push(jb, l, one);
    }
    return l ? l : one;
}

/* Whether metadata key `key` has a JSON form (a UTF-8 key with no NUL). */
static bool zarr_meta_key_ok(const struct tdb_meta_item *it)
{
    return strlen(it->key) == it->key_len &&
           tdb_json_is_utf8(it->key, it->key_len);
}

/* The array of z whose name, then '.', then at least one byte begins
 * key: the longest such name; -1 for none. */
static int zarr_key_owner(const struct tdb_zarr *z, const char *key)
{
    int best = -1;
    size_t bl = 0;
    for (uint32_t k = 0; k < z->n; k++) {
        size_t l = strlen(z->v[k].name);
        if (!strncmp(key, z->v[k].name, l) && key[l] == '.' && key[l + 1] &&
            l > bl) {
            best = (int)k;
            bl = l;
        }
    }
    return best;
}

/* ------------------------------------------------------------- documents */

/* The attributes of array x both versions show (v2 adds
 * _ARRAY_DIMENSIONS, v3 a time's units): the validity that masks it, an
 * enumeration's flags, then the metadata keys "NAME.KEY" of NAME x that
 * the store does not set itself (what it sets says how to read the
 * values: a key of the user's must not change that). */
static json_t *zarr_attributes(struct tdb_jb *jb, const struct tdb_zarr *z,
                               const struct zarr_arr *x)
{
    json_t *o = tdb_jb_object(jb);
    const struct tdb_attr *at = x->kind == ZARR_COORD || x->kind == ZARR_DIMLABEL
                                    ? NULL : &z->a->schema->attrs[x->idx];
    if (at) {                   /* CF: the dimension labels, coordinates */
        struct tdb_buf names = {0};
        for (uint32_t k = 0; k < z->n && !jb->rc; k++)
            if (z->v[k].kind == ZARR_DIMLABEL &&
                ((names.len && tdb_buf_put_u8(&names, ' ')) ||
                 tdb_buf_append(&names, z->v[k].name, strlen(z->v[k].name))))
                jb->rc = TDB_E_NOMEM;
        if (names.len)
            tdb_jb_set(jb, o, "coordinates",
                       tdb_json_bytes((const char *)names.data, names.len));
        tdb_buf_free(&names);
    }
    if (x->kind == ZARR_ATTR && at->nullable) {
        size_t l = strlen(x->name) + 10;
        char *vn = malloc(l);
        if (vn)
            snprintf(vn, l, "%s.validity", x->name);
        tdb_jb_set(jb, o, "ancillary_variables", vn ? tdb_json_cstr(vn) : NULL);
        free(vn);
    }
    if (x->kind == ZARR_ATTR && x->en) {
        const struct tdb_enumeration *e = x->en;
        uint64_t n = zarr_enum_count(e);
        json_t *fv = tdb_jb_array(jb);
        struct tdb_buf words = {0};
        for (uint64_t i = 0; i < n && !jb->rc; i++) {
            tdb_jb_push(jb, fv, tdb_json_u64(i));
            if (i && tdb_buf_put_u8(&words, ' '))
                jb->rc = TDB_E_NOMEM;
            if (zarr_enum_word(e, i, &words))
                jb->rc = TDB_E_NOMEM;
        }
        tdb_jb_set(jb, o, "enumeration", tdb_json_cstr(e->name));
        tdb_jb_set(jb, o, "flag_values", fv);
        tdb_jb_set(jb, o, "flag_meanings",
                   tdb_json_bytes(words.data ? (const char *)words.data : "",
                                  words.len));
        tdb_buf_free(&words);
    }
    const struct tdb_meta *m = z->a->meta;
    size_t nl = strlen(x->name);
    for (size_t i = 0; m && i < m->n && !jb->rc; i++) {
        const struct tdb_meta_item *it = &m->v[i];
        json_t *v;
        if (!zarr_meta_key_ok(it) || zarr_key_owner(z, it->key) < 0 ||
            &z->v[zarr_key_owner(z, it->key)] != x ||
            !strcmp(it->key + nl + 1, "_ARRAY_DIMENSIONS") ||
            json_object_get(o, it->key + nl + 1) ||
            !(v = zarr_meta_value(jb, it)))
            continue;
        tdb_jb_set(jb, o, it->key + nl + 1, v);
    }
    return o;
}

/* The names of x's axes. */
static json_t *zarr_dim_names(struct tdb_jb *jb, const struct tdb_zarr *z,
                              const struct zarr_arr *x, bool v3)
{
    json_t *dims = tdb_jb_array(jb);
    if (x->kind == ZARR_COORD || x->kind == ZARR_DIMLABEL) {
        uint32_t d = x->kind == ZARR_COORD ? x->idx : z->labels[x->idx].dim;
        tdb_jb_push(jb, dims, tdb_json_cstr(z->dimname[d]));
        return dims;
    }
    for (uint32_t d = 0; d < z->nd; d++)
        tdb_jb_push(jb, dims, tdb_json_cstr(z->dimname[d]));
    if (x->nd > z->nd || (v3 && x->bytes_axis)) {
        /* the values of a cell: a dimension of this array's own */
        size_t l = strlen(x->name) + 10;
        char *vn = malloc(l);
        if (vn)
            snprintf(vn, l, "__%s_values", x->name);
        tdb_jb_push(jb, dims, vn ? tdb_json_cstr(vn) : NULL);
        free(vn);
    }
    return dims;
}

/* v3's codecs of x: a transpose where the chunks are order F, then how
 * the values become bytes. */
static json_t *zarr_codecs(struct tdb_jb *jb, const struct zarr_arr *x)
{
    json_t *l = tdb_jb_array(jb);
    if (x->col) {
        json_t *order = tdb_jb_array(jb);
        for (uint32_t d = x->nd; d-- > 0;)
            tdb_jb_push(jb, order, json_integer(d));
        if (x->bytes_axis)
            tdb_jb_push(jb, order, json_integer(x->nd));
        json_t *conf = tdb_jb_object(jb), *t = tdb_jb_object(jb);
        tdb_jb_set(jb, conf, "order", order);
        tdb_jb_set(jb, t, "name", tdb_json_cstr("transpose"));
        tdb_jb_set(jb, t, "configuration", conf);
        tdb_jb_push(jb, l, t);
    }
    json_t *c = tdb_jb_object(jb);
    if (x->enc == ZARR_FIXED) {
        json_t *conf = tdb_jb_object(jb);
        tdb_jb_set(jb, conf, "endian", tdb_json_cstr("little"));
        tdb_jb_set(jb, c, "name", tdb_json_cstr("bytes"));
        tdb_jb_set(jb, c, "configuration", conf);
    } else {                    /* an empty configuration, as zarr-python's */
        tdb_jb_set(jb, c, "name", tdb_json_cstr(x->enc == ZARR_UTF8
                                                    ? "vlen-utf8"
                                                    : "vlen-bytes"));
        tdb_jb_set(jb, c, "configuration", tdb_jb_object(jb));
    }
    tdb_jb_push(jb, l, c);
    return l;
}

/* Zarr v3's zarr.json of x, its attributes `attrs` (a reference taken). */
static json_t *zarr_v3_doc(struct tdb_jb *jb, const struct tdb_zarr *z,
                           const struct zarr_arr *x, json_t *attrs)
{
    uint64_t shape[TDB_MAX_DIMS + 2], chunks[TDB_MAX_DIMS + 2];
    uint32_t nd = x->nd;
    memcpy(shape, x->shape, nd * sizeof *shape);
    memcpy(chunks, x->chunks, nd * sizeof *chunks);
    if (x->bytes_axis) {
        shape[nd] = chunks[nd] = x->bytes_axis;
        nd++;
    }
    json_t *o = tdb_jb_object(jb);
    tdb_jb_set(jb, o, "zarr_format", json_integer(3));
    tdb_jb_set(jb, o, "node_type", tdb_json_cstr("array"));
    tdb_jb_set(jb, o, "shape", zarr_u64_list(jb, shape, nd));
    tdb_jb_set(jb, o, "data_type", tdb_json_cstr(zarr_v3_type(z, x)));
    json_t *grid = tdb_jb_object(jb), *gconf = tdb_jb_object(jb);
    tdb_jb_set(jb, gconf, "chunk_shape", zarr_u64_list(jb, chunks, nd));
    tdb_jb_set(jb, grid, "name", tdb_json_cstr("regular"));
    tdb_jb_set(jb, grid, "configuration", gconf);
    tdb_jb_set(jb, o, "chunk_grid", grid);
    json_t *keys = tdb_jb_object(jb), *kconf = tdb_jb_object(jb);
    tdb_jb_set(jb, kconf, "separator", tdb_json_cstr("."));
    tdb_jb_set(jb, keys, "name", tdb_json_cstr("v2"));
    tdb_jb_set(jb, keys, "configuration", kconf);
    tdb_jb_set(jb, o, "chunk_key_encoding", keys);
    tdb_jb_set(jb, o, "fill_value", zarr_fill(z, x, true));
    tdb_jb_set(jb, o, "codecs", zarr_codecs(jb, x));
    tdb_jb_set(jb, o, "attributes", attrs);
    tdb_jb_set(jb, o, "dimension_names", zarr_dim_names(jb, z, x, true));
    return o;
}

int zarr_arr_docs(const struct tdb_zarr *z, struct zarr_arr *x)
{
    struct tdb_jb jb = {0};
    char dt[32];
    json_t *o = x->zarray = tdb_jb_object(&jb);
    tdb_jb_set(&jb, o, "zarr_format", json_integer(2));
    tdb_jb_set(&jb, o, "shape", zarr_u64_list(&jb, x->shape, x->nd));
    tdb_jb_set(&jb, o, "chunks", zarr_u64_list(&jb, x->chunks, x->nd));
    const char *dtype = zarr_dtype(z, x, dt, sizeof dt);
    tdb_jb_set(&jb, o, "dtype", tdb_json_cstr(dtype));
    tdb_jb_set(&jb, o, "compressor", json_null());
    tdb_jb_set(&jb, o, "fill_value", zarr_fill(z, x, false));
    tdb_jb_set(&jb, o, "order", tdb_json_cstr(x->col ? "F" : "C"));
    if (x->enc == ZARR_FIXED) {
        tdb_jb_set(&jb, o, "filters", json_null());
    } else {
        json_t *fl = tdb_jb_array(&jb), *f = tdb_jb_object(&jb);
        tdb_jb_set(&jb, f, "id", tdb_json_cstr(x->enc == ZARR_UTF8
                                                   ? "vlen-utf8"
                                                   : "vlen-bytes"));
        tdb_jb_push(&jb, fl, f);
        tdb_jb_set(&jb, o, "filters", fl);
    }
    tdb_jb_set(&jb, o, "dimension_separator", tdb_json_cstr("."));
    json_t *common = zarr_attributes(&jb, z, x);
    json_t *at = x->zattrs = tdb_jb_object(&jb);
    tdb_jb_set(&jb, at, "_ARRAY_DIMENSIONS", zarr_dim_names(&jb, z, x, false));
    if (!jb.rc && json_object_update(at, common))
        jb.rc = TDB_E_NOMEM;
    /* v3 has no datetime type: int64, and the unit in CF's words (v2's
     * dtype says it: CF's units there would decode the values twice) */
    char units[64];
    const char *u = x->enc == ZARR_FIXED
                        ? zarr_units(dtype, units, sizeof units) : NULL;
    json_t *v3 = u && !jb.rc ? json_copy(common) : json_incref(common);
    if (u && v3)
        tdb_jb_set(&jb, v3, "units", tdb_json_cstr(u));
    json_decref(common);
    x->zjson = zarr_v3_doc(&jb, z, x, v3);
    return jb.rc;
}

/* .zmetadata's "metadata" entries of array x under prefix pre ("" or
 * "MEMBER/"), and its v3 document under "PRE NAME" in v3 (may be NULL). */
static void zarr_consolidate(struct tdb_jb *jb, json_t *all, json_t *v3,
                             const char *pre, const struct zarr_arr *x)
{
    size_t l = strlen(pre) + strlen(x->name) + 9;
    char *key = malloc(l);
    if (!key) {
        jb->rc = TDB_E_NOMEM;
        return;
    }
    snprintf(key, l, "%s%s/.zarray", pre, x->name);
    tdb_jb_set(jb, all, key, json_incref(x->zarray));
    snprintf(key, l, "%s%s/.zattrs", pre, x->name);
    tdb_jb_set(jb, all, key, json_incref(x->zattrs));
    snprintf(key, l, "%s%s", pre, x->name);
    tdb_jb_set(jb, v3, key, json_incref(x->zjson));
    free(key);
}

/* A v3 group document with attributes attrs (a reference taken) and, when
 * members is not NULL, consolidated metadata `members` (taken). */
static json_t *zarr_v3_group(struct tdb_jb *jb, json_t *attrs, json_t *members)
{
    json_t *g = tdb_jb_object(jb);
    tdb_jb_set(jb, g, "zarr_format", json_integer(3));
    tdb_jb_set(jb, g, "node_type", tdb_json_cstr("group"));
    tdb_jb_set(jb, g, "attributes", attrs);
    if (members) {
        json_t *cm = tdb_jb_object(jb);
        tdb_jb_set(jb, cm, "kind", tdb_json_cstr("inline"));
        tdb_jb_set(jb, cm, "must_understand", json_false());
        tdb_jb_set(jb, cm, "metadata", members);
        tdb_jb_set(jb, g, "consolidated_metadata", cm);
    }
    return g;
}

/* The metadata m as a .zattrs: every key JSON can hold. */
static json_t *zarr_meta_attrs(struct tdb_jb *jb, const struct tdb_meta *m)
{
    json_t *o = tdb_jb_object(jb);
    for (size_t i = 0; m && i < m->n && !jb->rc; i++) {
        const struct tdb_meta_item *it = &m->v[i];
        json_t *v;
        if (zarr_meta_key_ok(it) && (v = zarr_meta_value(jb, it)))
            tdb_jb_set(jb, o, it->key, v);
    }
    return o;
}

/* .zmetadata of a store: every document under "metadata". */
static json_t *zarr_zmetadata(struct tdb_jb *jb, json_t *all)
{
    json_t *o = tdb_jb_object(jb);
    tdb_jb_set(jb, o, "metadata", all);
    tdb_jb_set(jb, o, "zarr_consolidated_format", json_integer(1));
    return o;
}

static json_t *zarr_zgroup(struct tdb_jb *jb)
{
    json_t *o = tdb_jb_object(jb);
    tdb_jb_set(jb, o, "zarr_format", json_integer(2));
    return o;
}

int zarr_group_docs(struct tdb_zarr *z)
{
    struct tdb_jb jb = {0};
    z->zgroup = zarr_zgroup(&jb);
    z->zattrs = zarr_meta_attrs(&jb, z->a->meta);
    json_t *all = tdb_jb_object(&jb), *v3 = tdb_jb_object(&jb);
    tdb_jb_set(&jb, all, ".zgroup", json_incref(z->zgroup));
    tdb_jb_set(&jb, all, ".zattrs", json_incref(z->zattrs));
    for (uint32_t k = 0; k < z->n && !jb.rc; k++)
        zarr_consolidate(&jb, all, v3, "", &z->v[k]);
    z->zmeta = zarr_zmetadata(&jb, all);
    z->zjson = zarr_v3_group(&jb, json_incref(z->zattrs), v3);
    return jb.rc;
}

/* Document `which` of the four a group has. */
static int zarr_group_doc(json_t *const docs[4], int which, const char **name,
                          struct tdb_buf *out)
{
    static const char *const names[] = {".zgroup", ".zattrs", ".zmetadata",
                                        "zarr.json"};
    *out = (struct tdb_buf){0};
    if (which < 0 || which > 3)
        return TDB_E_NOENT;
    *name = names[which];
    int r = tdb_json_dump_ascii(docs[which], out);
    if (r)
        tdb_buf_free(out);
    return r;
}

int tdb_zarr_doc(const struct tdb_zarr *z, int k, int which,
                 const char **name, struct tdb_buf *out)
{
    static const char *const anames[] = {".zarray", ".zattrs", "zarr.json"};
    if (k < 0) {
        json_t *const docs[4] = {z->zgroup, z->zattrs, z->zmeta, z->zjson};
        return zarr_group_doc(docs, which, name, out);
    }
    *out = (struct tdb_buf){0};
    if ((uint32_t)k >= z->n || which < 0 || which > 2)
        return TDB_E_NOENT;
    const struct zarr_arr *x = &z->v[k];
    *name = anames[which];
    int r = tdb_json_dump_ascii(which == 0   ? x->zarray
                                : which == 1 ? x->zattrs
                                             : x->zjson,
                                out);
    if (r)
        tdb_buf_free(out);
    return r;
}

/* ---------------------------------------------------------------- groups */

struct tdb_zarr_group {
    json_t *docs[4];            /* .zgroup, .zattrs, .zmetadata, zarr.json */
};

int tdb_zarr_group_open(struct tdb_zarr_group **out,
                        struct tdb_zarr *const *stores,
                        const char *const *names, uint32_t n,
                        const struct tdb_meta *m, struct tdb_error *err)
{
    struct tdb_zarr_group *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g)
        return tdb_err(err, TDB_E_NOMEM, "__zarr: out of memory");
    struct tdb_jb jb = {0};
    json_t *zg = g->docs[0] = zarr_zgroup(&jb);
    json_t *za = g->docs[1] = zarr_meta_attrs(&jb, m);
    json_t *all = tdb_jb_object(&jb), *v3 = tdb_jb_object(&jb);
    tdb_jb_set(&jb, all, ".zgroup", json_incref(zg));
    tdb_jb_set(&jb, all, ".zattrs", json_incref(za));
    for (uint32_t i = 0; i < n && !jb.rc; i++) {
        const struct tdb_zarr *z = stores[i];
        size_t l = strlen(names[i]) + 10;
        char *pre = malloc(l);
        if (!pre) {
            jb.rc = TDB_E_NOMEM;
            break;
        }
        snprintf(pre, l, "%s/.zgroup", names[i]);
        tdb_jb_set(&jb, all, pre, json_incref(z->zgroup));
        snprintf(pre, l, "%s/.zattrs", names[i]);
        tdb_jb_set(&jb, all, pre, json_incref(z->zattrs));
        tdb_jb_set(&jb, v3, names[i],
                   zarr_v3_group(&jb, json_incref(z->zattrs), NULL));
        snprintf(pre, l, "%s/", names[i]);
        for (uint32_t k = 0; k < z->n && !jb.rc; k++)
            zarr_consolidate(&jb, all, v3, pre, &z->v[k]);
        free(pre);
    }
    g->docs[2] = zarr_zmetadata(&jb, all);
    g->docs[3] = zarr_v3_group(&jb, json_incref(za), v3);
    if (jb.rc) {
        tdb_zarr_group_free(g);
        return tdb_err(err, jb.rc, "__zarr: out of memory");
    }
    *out = g;
    return 0;
}

void tdb_zarr_group_free(struct tdb_zarr_group *g)
{
    if (!g)
        return;
    for (int i = 0; i < 4; i++)
        json_decref(g->docs[i]);
    free(g);
}

int tdb_zarr_group_doc(const struct tdb_zarr_group *g, int which,
                       const char **name, struct tdb_buf *out)
{
    return zarr_group_doc(g->docs, which, name, out);
}
