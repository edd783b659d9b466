/* schema_json.c: an array schema (format_spec/array_schema.md, v22) from the "schema" object of __array.json, checked as TileDB checks a new schema. */
#include "write/writer.h"
#include "core/value.h"
#include "model/order.h"
#include "filters/options.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include <jansson.h>

/* TileDB's defaults for what a schema JSON may leave out. */
#define SJ_CHUNK 65536          /* pipeline max chunk size */
#define SJ_CAPACITY 10000
#define SJ_MAX_CELL_VALS (UINT32_C(1) << 24)
#define SJ_MAX_FILTERS 64
#define SJ_HILBERT_MAX_DIMS 16

/* Where in the document a value sits, for messages ("dims[1].domain"). */
struct sj_where {
    char s[160];
};

static void sj_at(struct sj_where *w, const struct sj_where *parent,
                  const char *fmt, ...) TDB_PRINTF(3, 4);

static void sj_at(struct sj_where *w, const struct sj_where *parent,
                  const char *fmt, ...)
{
    char tail[120];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tail, sizeof tail, fmt, ap);
    va_end(ap);
    /* a long path is cut short: it only names the place */
    size_t cap = sizeof w->s, n = 0;
    w->s[0] = 0;
    if (parent && parent->s[0]) {
        n = strnlen(parent->s, cap - 1);
        memmove(w->s, parent->s, n);
        if (tail[0] != '[' && n < cap - 1)
            w->s[n++] = '.';
    }
    size_t t = strnlen(tail, sizeof tail);
    if (t > cap - 1 - n)
        t = cap - 1 - n;
    memcpy(w->s + n, tail, t);
    w->s[n + t] = 0;
}

static int sj_bad(struct tdb_error *err, int code, const struct sj_where *w,
                  const char *fmt, ...) TDB_PRINTF(4, 5);

static int sj_bad(struct tdb_error *err, int code, const struct sj_where *w,
                  const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tdb_err(err, code, "schema JSON: %s: %s", w->s[0] ? w->s : "(top)",
                   msg);
}

static int sj_nomem(struct tdb_error *err)
{
    return tdb_err(err, TDB_E_NOMEM, "schema JSON: out of memory");
}

/* Refuses keys of `obj` that are not in `known` (NULL-terminated), so a
 * misspelt key is an error rather than a silent default. */
static int sj_known_keys(json_t *obj, const char *const *known,
                         const struct sj_where *w, struct tdb_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        size_t i = 0;
        while (known[i] && strcmp(known[i], k))
            i++;
        if (!known[i])
            return sj_bad(err, TDB_E_INVAL, w, "unknown key \"%s\"", k);
    }
    return 0;
}

/* ------------------------------------------------------------ big numbers */

/* jansson refuses integers outside int64; uint64 values above INT64_MAX
 * (a UINT64 domain) are legal here.  This lexical pass (strings skipped,
 * nothing else interpreted) puts such integer literals in quotes; the
 * number readers below accept decimal strings. */
static int sj_quote_big(const char *text, size_t len, char **out,
                        size_t *out_len)
{
    struct tdb_buf b = {0};
    bool in_str = false;
    size_t i = 0;
    int rc = 0;
    while (i < len && !rc) {
        char c = text[i];
        if (in_str) {
            if (c == '\\' && i + 1 < len) {
                rc = tdb_buf_append(&b, text + i, 2);
                i += 2;
                continue;
            }
            if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '-' || isdigit((unsigned char)c)) {
            /* A whole number token: digits, sign, fraction, exponent. */
            size_t j = i + 1;
            while (j < len && text[j] && (isdigit((unsigned char)text[j]) ||
                                          strchr("+-.eE", text[j])))
                j++;
            bool integer = true;
            for (size_t x = i + 1; x < j; x++)
                if (!isdigit((unsigned char)text[x]))
                    integer = false;
            bool big = false;
            if (integer && j - i >= 19) {
                char num[32];
                if (j - i < sizeof num) {
                    memcpy(num, text + i, j - i);
                    num[j - i] = '\0';
                    errno = 0;
                    (void)strtoll(num, NULL, 10);
                    big = errno == ERANGE;
                } else {
                    big = true;
                }
            }
            if (big) {
                if (!(rc = tdb_buf_append(&b, "\"", 1)) &&
                    !(rc = tdb_buf_append(&b, text + i, j - i)))
                    rc = tdb_buf_append(&b, "\"", 1);
            } else {
                rc = tdb_buf_append(&b, text + i, j - i);
            }
            i = j;
            continue;
        }
        rc = tdb_buf_append(&b, &c, 1);
        i++;
    }
    if (rc) {
        tdb_buf_free(&b);
        return rc;
    }
    *out_len = b.len;
    *out = (char *)tdb_buf_take(&b, out_len);
    if (!*out && *out_len == 0)
        *out = calloc(1, 1);
    return *out ? 0 : TDB_E_NOMEM;
}

/* A JSON integer, or a decimal string, as a signed 128-bit-safe pair:
 * *neg and *mag (magnitude).  Reals are refused. */
static int sj_int(json_t *v, const struct sj_where *w, bool *neg,
                  uint64_t *mag, struct tdb_error *err)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        *neg = x < 0;
        *mag = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9007199254740992.0) {
            *neg = d < 0;
            *mag = (uint64_t)fabs(d);
            return 0;
        }
        return sj_bad(err, TDB_E_INVAL, w, "%.17g is not an integer", d);
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v), *p = s;
        *neg = *p == '-';
        p += *neg;
        if (!isdigit((unsigned char)*p))
            goto bad;
        errno = 0;
        char *end;
        unsigned long long x = strtoull(p, &end, 10);
        if (*end)
            goto bad;
        if (errno == ERANGE)
            return sj_bad(err, TDB_E_INVAL, w, "%s is too large", s);
        *mag = x;
        if (*neg && x == 0)
            *neg = false;
        return 0;
    bad:
        return sj_bad(err, TDB_E_INVAL, w, "\"%s\" is not an integer", s);
    }
    return sj_bad(err, TDB_E_INVAL, w, "expected an integer");
}

/* An unsigned integer no larger than max. */
static int sj_uint(json_t *v, const struct sj_where *w, uint64_t max,
                   uint64_t *out, struct tdb_error *err)
{
    bool neg;
    uint64_t mag;
    int rc = sj_int(v, w, &neg, &mag, err);
    if (rc)
        return rc;
    if (neg || mag > max)
        return sj_bad(err, TDB_E_INVAL, w, "%s%" PRIu64 " is out of range "
                      "(0 to %" PRIu64 ")", neg ? "-" : "", mag, max);
    *out = mag;
    return 0;
}

/* A number, or one of the strings json.c writes for NaN and infinities. */
static int sj_double(json_t *v, const struct sj_where *w, double *out,
                     struct tdb_error *err)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "NaN"))
            *out = NAN;
        else if (!strcmp(s, "Infinity"))
            *out = INFINITY;
        else if (!strcmp(s, "-Infinity"))
            *out = -INFINITY;
        else {
            char *end;
            errno = 0;
            *out = strtod(s, &end);
            if (!s[0] || *end || errno == ERANGE)
                return sj_bad(err, TDB_E_INVAL, w, "\"%s\" is not a number",
                              s);
        }
        return 0;
    }
    return sj_bad(err, TDB_E_INVAL, w, "expected a number");
}

/* One value of a fixed-size numeric datatype into out (size bytes). */
static int sj_value(json_t *v, unsigned type, const struct sj_where *w,
                    uint8_t out[8], struct tdb_error *err)
{
    unsigned sz = tdb_dt_size(type);
    memset(out, 0, 8);
    if (tdb_dt_is_float(type)) {
        double d;
        int rc = sj_double(v, w, &d, err);
        if (rc)
            return rc;
        if (type == TDB_FLOAT32) {
            if (isfinite(d) && fabs(d) > (double)FLT_MAX)
                return sj_bad(err, TDB_E_INVAL, w, "%.17g does not fit "
                              "FLOAT32", d);
            float f = (float)d;
            memcpy(out, &f, 4);
        } else {
            memcpy(out, &d, 8);
        }
        return 0;
    }
    bool neg;
    uint64_t mag;
    int rc = sj_int(v, w, &neg, &mag, err);
    if (rc)
        return rc;
    if (!tdb_value_int_fits(type, neg, mag))
        return sj_bad(err, TDB_E_INVAL, w, "%s%" PRIu64 " does not fit "
                      "%s", neg ? "-" : "", mag, tdb_dt_name(type));
    uint64_t u = neg ? (uint64_t)0 - mag : mag;
    for (unsigned i = 0; i < sz; i++)
        out[i] = (uint8_t)(u >> (8 * i));
    return 0;
}

/* A string member without embedded NULs; NULL when absent (and !required). */
static int sj_str(json_t *obj, const char *key, bool required,
                  const struct sj_where *parent, const char **out,
                  struct tdb_error *err)
{
    struct sj_where w;
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    sj_at(&w, parent, "%s", key);
    if (!v || json_is_null(v)) {
        if (required)
            return sj_bad(err, TDB_E_INVAL, &w, "missing");
        return 0;
    }
    if (!json_is_string(v))
        return sj_bad(err, TDB_E_INVAL, &w, "expected a string");
    if (strlen(json_string_value(v)) != json_string_length(v))
        return sj_bad(err, TDB_E_INVAL, &w, "holds a NUL character");
    if (json_string_length(v) > TDB_MAX_NAME)
        return sj_bad(err, TDB_E_INVAL, &w, "longer than %d bytes",
                      TDB_MAX_NAME);
    *out = json_string_value(v);
    return 0;
}

static int sj_bool(json_t *obj, const char *key, bool def,
                   const struct sj_where *parent, bool *out,
                   struct tdb_error *err)
{
    struct sj_where w;
    json_t *v = json_object_get(obj, key);
    sj_at(&w, parent, "%s", key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return sj_bad(err, TDB_E_INVAL, &w, "expected true or false");
    *out = json_is_true(v);
    return 0;
}

/* numpy's names of the dtypes that have a TileDB datatype, as their
 * type strings without the byte order ("int32" is "i4"). */
static const struct {
    const char *name, *str;
} sj_numpy_names[] = {
    {"int8", "i1"},    {"int16", "i2"},   {"int32", "i4"},
    {"int64", "i8"},   {"uint8", "u1"},   {"uint16", "u2"},
    {"uint32", "u4"},  {"uint64", "u8"},  {"float32", "f4"},
    {"float64", "f8"}, {"bool", "b1"},    {"?", "b1"},
};

/* The TileDB datatype of numpy dtype `name`: a name ("float64",
 * "datetime64[ns]", "timedelta64[s]") or a type string with or without
 * its byte order ("<i4", "|u1", "=f8", "i2", "<M8[ms]").  Each type
 * string is matched against the table of tdb_dt_numpy (the dtypes the
 * mount's user.tiledb.dtype shows), first entry first, so "|u1" is UINT8
 * (not BLOB) and "<u2" UINT16.  @return the datatype, or -1 with why[cap]
 * saying why when the name is numpy's but has no TileDB datatype. */
static int sj_numpy_type(const char *name, char *why, size_t cap)
{
    char str[32];
    const char *s = name;
    why[0] = '\0';
    for (size_t i = 0; i < sizeof sj_numpy_names / sizeof *sj_numpy_names;
         i++)
        if (!strcmp(name, sj_numpy_names[i].name))
            s = sj_numpy_names[i].str;
    if (!strncmp(name, "datetime64[", 11) ||
        !strncmp(name, "timedelta64[", 12)) {
        snprintf(str, sizeof str, "%c8%s", name[0] == 'd' ? 'M' : 'm',
                 strchr(name, '['));
        s = str;
    } else if (*s == '<' || *s == '|' || *s == '=') {
        s++;    /* little-endian, none, native (little-endian here) */
    } else if (*s == '>') {
        snprintf(why, cap, "big-endian; TileDB stores little-endian values "
                 "(\"<%s\")", s + 1);
        return -1;
    }
    if (*s == 'S' || *s == 'U' || *s == 'O') {
        snprintf(why, cap, "numpy's strings have no one TileDB datatype: "
                 "write CHAR, STRING_ASCII or STRING_UTF8");
        return -1;
    }
    for (unsigned t = 0; *s && t < TDB_DATATYPE_COUNT; t++) {
        const char *np = tdb_dt_numpy(t);
        if (np && (*np == '<' || *np == '|'))
            np++;
        if (np && t != TDB_ANY && !tdb_dt_is_string(t) && !strcmp(np, s))
            return (int)t;
    }
    return -1;
}

/* A datatype's name in the schema JSON: TileDB's ("FLOAT64") or numpy's
 * (sj_numpy_type).  @return the datatype, or an error naming `w`. */
static int sj_type_name(const char *name, const struct sj_where *w,
                        unsigned *out, struct tdb_error *err)
{
    char why[160] = "";
    int t = tdb_dt_from_name(name);
    if (t < 0)
        t = sj_numpy_type(name, why, sizeof why);
    if (t >= 0 && t != TDB_ANY) {
        *out = (unsigned)t;
        return 0;
    }
    if (why[0] && t < 0)
        return sj_bad(err, TDB_E_INVAL, w, "\"%s\": %s", name, why);
    return sj_bad(err, TDB_E_INVAL, w, "unknown datatype \"%s\" (TileDB's "
                  "name, such as FLOAT64, or numpy's, such as float64 or "
                  "<f8)", name);
}

static int sj_datatype(json_t *obj, const struct sj_where *parent,
                       unsigned *out, struct tdb_error *err)
{
    const char *name;
    struct sj_where w;
    int rc = sj_str(obj, "datatype", true, parent, &name, err);
    if (rc)
        return rc;
    sj_at(&w, parent, "datatype");
    return sj_type_name(name, &w, out, err);
}

/* ---------------------------------------------------------------- filters */

/* The integer option o from v: at most o->max in magnitude (INT), from 0
 * to o->max (UINT). */
static int sj_filter_int(json_t *v, const struct sj_where *k,
                         const struct tdb_filter_opt *o,
                         struct tdb_fopt_value *x, struct tdb_error *err)
{
    bool neg;
    uint64_t mag;
    int rc;
    if (o->kind == TDB_FOPT_UINT) {
        rc = sj_uint(v, k, o->max, &mag, err);
        x->i = (int64_t)mag;
        return rc;
    }
    if ((rc = sj_int(v, k, &neg, &mag, err)))
        return rc;
    if (mag > o->max)
        return sj_bad(err, TDB_E_INVAL, k, "out of range");
    x->i = neg ? -(int64_t)mag : (int64_t)mag;
    return 0;
}

/* A datatype option from v: a datatype's name, or ANY (no datatype). */
static int sj_filter_datatype(json_t *v, const struct sj_where *k,
                              struct tdb_fopt_value *x, struct tdb_error *err)
{
    unsigned t = TDB_ANY;
    int rc;
    if (!json_is_string(v))
        return sj_bad(err, TDB_E_INVAL, k, "expected a datatype name");
    if (strcmp(json_string_value(v), "ANY") &&
        (rc = sj_type_name(json_string_value(v), k, &t, err)))
        return rc;
    x->i = t;
    return 0;
}

/* A named option from o's member: one of the option's names but its
 * first, in any case. */
static int sj_filter_name(json_t *obj, const struct sj_where *w,
                          const struct sj_where *k,
                          const struct tdb_filter_opt *o,
                          struct tdb_fopt_value *x, struct tdb_error *err)
{
    char list[96] = "";
    const char *s;
    int rc;
    if ((rc = sj_str(obj, o->name, true, w, &s, err)))
        return rc;
    for (unsigned i = 1; i < o->n_names; i++) {
        if (!strcasecmp(s, o->names[i])) {
            x->i = i;
            return 0;
        }
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s",
                 i == 1 ? "" : i + 1 == o->n_names ? " or " : ", ",
                 o->names[i]);
    }
    return sj_bad(err, TDB_E_INVAL, k, "\"%s\" is not %s", s, list);
}

/* Option o of filter f from its member of obj (absent, or null where the
 * option allows it: the default stays), checked as the option says. */
static int sj_filter_opt(json_t *obj, const struct sj_where *w,
                         const struct tdb_filter_opt *o, struct tdb_filter *f,
                         struct tdb_error *err)
{
    json_t *v = json_object_get(obj, o->name);
    struct tdb_fopt_value x = tdb_fopt_get(f, o);
    struct sj_where k;
    char why[96];
    bool b;
    int rc = 0;
    sj_at(&k, w, "%s", o->name);
    if (!v || (json_is_null(v) && (o->flags & TDB_FOPT_NULL_OK)))
        return (o->flags & TDB_FOPT_REQUIRED)
                   ? sj_bad(err, TDB_E_INVAL, &k, "missing") : 0;
    switch (o->kind) {
    case TDB_FOPT_INT: case TDB_FOPT_UINT:
        rc = sj_filter_int(v, &k, o, &x, err);
        break;
    case TDB_FOPT_REAL:
        rc = sj_double(v, &k, &x.d, err);
        break;
    case TDB_FOPT_BOOL:
        rc = sj_bool(obj, o->name, x.i, w, &b, err);
        x.i = b;
        break;
    case TDB_FOPT_DATATYPE:
        rc = sj_filter_datatype(v, &k, &x, err);
        break;
    default:
        rc = sj_filter_name(obj, w, &k, o, &x, err);
        break;
    }
    if (rc)
        return rc;
    if (tdb_fopt_check(o, &x, why, sizeof why))
        return sj_bad(err, TDB_E_INVAL, &k, "%s", why);
    tdb_fopt_set(f, o, &x);
    return 0;
}

/* The options of filter f from o (the JSON ones of its table, in the
 * table's order), and no other key but "type". */
static int sj_filter_options(json_t *o, const struct sj_where *w,
                             struct tdb_filter *f, struct tdb_error *err)
{
    const char *key;
    json_t *v;
    int rc;
    for (unsigned i = 0; i < f->ops->n_options; i++) {
        const struct tdb_filter_opt *opt = &f->ops->options[i];
        if (!(opt->flags & TDB_FOPT_NO_JSON) &&
            (rc = sj_filter_opt(o, w, opt, f, err)))
            return rc;
    }
    json_object_foreach(o, key, v) {
        const struct tdb_filter_opt *opt = tdb_filter_opt_find(f->ops, key);
        if (strcmp(key, "type") && (!opt || (opt->flags & TDB_FOPT_NO_JSON)))
            return sj_bad(err, TDB_E_INVAL, w, "unknown key \"%s\"", key);
    }
    return 0;
}

/* One filter of a pipeline from its object. */
static int sj_filter(json_t *o, const struct sj_where *w, struct tdb_filter *f,
                     struct tdb_error *err)
{
    const char *name;
    struct sj_where k;
    int rc;
    if (!json_is_object(o))
        return sj_bad(err, TDB_E_INVAL, w, "expected an object");
    if ((rc = sj_str(o, "type", true, w, &name, err)))
        return rc;
    sj_at(&k, w, "type");
    unsigned t;
    for (t = 0; t < TDB_FILTER_TYPE_COUNT; t++) {
        const struct tdb_filter_ops *ops = tdb_filter_lookup(t);
        if (ops && !strcasecmp(ops->name, name))
            break;
    }
    if (t == TDB_FILTER_TYPE_COUNT || t == TDB_FILTER_DEPRECATED)
        return sj_bad(err, TDB_E_INVAL, &k, "unknown filter \"%s\"", name);
    if (t == TDB_FILTER_AES_256_GCM)
        return sj_bad(err, TDB_E_INVAL, &k, "AES_256_GCM is not a filter of "
                      "a schema (give the key when creating the array)");
    if ((rc = tdb_filter_init(f, t)))
        return sj_bad(err, rc, &k, "unknown filter \"%s\"", name);
    return sj_filter_options(o, w, f, err);
}

/* A pipeline from an array of filters; absent or null: `def` (may be NULL
 * for none). */
static int sj_pipeline(json_t *obj, const char *key,
                       const struct sj_where *parent,
                       const struct tdb_filter *def, struct tdb_pipeline *p,
                       struct tdb_error *err)
{
    struct sj_where w;
    json_t *arr = json_object_get(obj, key);
    memset(p, 0, sizeof *p);
    p->max_chunk_size = SJ_CHUNK;
    /* The pipeline's max chunk size, when not TileDB's default, sits in a
     * sibling key: "filters_max_chunk_size", "coords_filters_max_chunk_size"
     * and so on. */
    char ck[64];
    snprintf(ck, sizeof ck, "%s_max_chunk_size", key);
    json_t *cv = json_object_get(obj, ck);
    if (cv && !json_is_null(cv)) {
        uint64_t mcs;
        int rc;
        sj_at(&w, parent, "%s", ck);
        if ((rc = sj_uint(cv, &w, UINT32_MAX, &mcs, err)))
            return rc;
        p->max_chunk_size = (uint32_t)mcs;
    }
    sj_at(&w, parent, "%s", key);
    size_t n = 0;
    if (arr && !json_is_null(arr)) {
        if (!json_is_array(arr))
            return sj_bad(err, TDB_E_INVAL, &w, "expected an array of "
                          "filters");
        n = json_array_size(arr);
    } else if (def) {
        n = 1;
    }
    if (n > SJ_MAX_FILTERS)
        return sj_bad(err, TDB_E_INVAL, &w, "more than %d filters",
                      SJ_MAX_FILTERS);
    if (!(p->f = calloc(n ? n : 1, sizeof *p->f)))
        return sj_nomem(err);
    if (!arr || json_is_null(arr)) {
        if (def)
            p->f[0] = *def;
        p->n = (uint32_t)n;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        struct sj_where fw;
        sj_at(&fw, &w, "[%zu]", i);
        int rc = sj_filter(json_array_get(arr, i), &fw, &p->f[i], err);
        if (rc)
            return rc;
        p->n = (uint32_t)(i + 1);
    }
    return 0;
}

/* What a dimension, an attribute and an enumeration begin with: o is an
 * object of only the keys in `known` (NULL-ended), with a "name" (copied
 * to *name) and a "datatype" (into *type). */
static int sj_named(json_t *o, const struct sj_where *w,
                    const char *const *known, char **name, unsigned *type,
                    struct tdb_error *err)
{
    const char *s;
    int rc;
    if (!json_is_object(o))
        return sj_bad(err, TDB_E_INVAL, w, "expected an object");
    if ((rc = sj_known_keys(o, known, w, err)) ||
        (rc = sj_str(o, "name", true, w, &s, err)))
        return rc;
    if (!(*name = strdup(s)))
        return sj_nomem(err);
    return sj_datatype(o, w, type, err);
}

/* ------------------------------------------------------------- dimensions */

static int sj_dim(json_t *o, const struct sj_where *w, struct tdb_dim *d,
                  const struct tdb_pipeline *coords, struct tdb_error *err)
{
    static const char *const known[] = {"name", "datatype", "domain",
                                        "tile_extent", "var", "filters",
                                        "filters_max_chunk_size", NULL};
    struct sj_where k;
    bool var;
    int rc;
    if ((rc = sj_named(o, w, known, &d->name, &d->type, err)) ||
        (rc = sj_bool(o, "var", false, w, &var, err)))
        return rc;
    unsigned sz = tdb_dt_size(d->type);
    sj_at(&k, w, "datatype");
    if (var) {
        if (d->type != TDB_STRING_ASCII)
            return sj_bad(err, TDB_E_INVAL, &k, "a var-sized dimension must "
                          "be STRING_ASCII, not %s", tdb_dt_name(d->type));
        d->cell_val_num = TDB_VAR_NUM;
        json_t *v = json_object_get(o, "domain");
        sj_at(&k, w, "domain");
        if (v && !json_is_null(v))
            return sj_bad(err, TDB_E_INVAL, &k, "a string dimension has no "
                          "domain");
        v = json_object_get(o, "tile_extent");
        sj_at(&k, w, "tile_extent");
        if (v && !json_is_null(v))
            return sj_bad(err, TDB_E_INVAL, &k, "a string dimension has no "
                          "tile extent");
    } else {
        if (!(tdb_dt_is_integer(d->type) || tdb_dt_is_float(d->type)) ||
            sz > 8)
            return sj_bad(err, TDB_E_INVAL, &k, "%s is not a dimension "
                          "datatype (integers, floats, DATETIME_*, TIME_*, "
                          "or STRING_ASCII with \"var\": true)",
                          tdb_dt_name(d->type));
        d->cell_val_num = 1;
        json_t *dom = json_object_get(o, "domain");
        sj_at(&k, w, "domain");
        if (!dom || json_is_null(dom))
            return sj_bad(err, TDB_E_INVAL, &k, "missing");
        if (!json_is_array(dom) || json_array_size(dom) != 2)
            return sj_bad(err, TDB_E_INVAL, &k, "expected [lo, hi]");
        struct sj_where e;
        sj_at(&e, &k, "[0]");
        if ((rc = sj_value(json_array_get(dom, 0), d->type, &e, d->lo, err)))
            return rc;
        sj_at(&e, &k, "[1]");
        if ((rc = sj_value(json_array_get(dom, 1), d->type, &e, d->hi, err)))
            return rc;
        json_t *ext = json_object_get(o, "tile_extent");
        sj_at(&k, w, "tile_extent");
        if (ext && !json_is_null(ext)) {
            if ((rc = sj_value(ext, d->type, &k, d->extent, err)))
                return rc;
            d->has_extent = true;
        }
    }
    /* A dimension without filters of its own takes the coordinate filters
     * (as the schema reader gives them), so a JSON written from a schema
     * comes back the same. */
    if (json_object_get(o, "filters") && !json_is_null(json_object_get(o, "filters")))
        return sj_pipeline(o, "filters", w, NULL, &d->filters, err);
    if (tdb_pipeline_copy(&d->filters, coords))
        return sj_nomem(err);
    return 0;
}

/* ------------------------------------------------------------- attributes */

static int sj_hex(const char *s, uint8_t **out, uint64_t *size)
{
    size_t n = strlen(s);
    if (n % 2)
        return -1;
    uint8_t *p = malloc(n / 2 ? n / 2 : 1);
    if (!p)
        return TDB_E_NOMEM;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char c = s[2 * i + (size_t)j];
            int x = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (x < 0) {
                free(p);
                return -1;
            }
            v = v * 16 + (unsigned)x;
        }
        p[i] = (uint8_t)v;
    }
    *out = p;
    *size = n / 2;
    return 0;
}

/* o's "cell_val_num" into *out: 1 when absent or null, TDB_VAR_NUM for
 * "var", else a count from 1 to SJ_MAX_CELL_VALS (0 is an error with the
 * message zero_msg). */
static int sj_cell_val_num(json_t *o, const struct sj_where *w,
                           const char *zero_msg, uint32_t *out,
                           struct tdb_error *err)
{
    json_t *v = json_object_get(o, "cell_val_num");
    struct sj_where k;
    uint64_t n;
    int rc;
    *out = 1;
    sj_at(&k, w, "cell_val_num");
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v) && !strcmp(json_string_value(v), "var")) {
        *out = TDB_VAR_NUM;
        return 0;
    }
    if ((rc = sj_uint(v, &k, SJ_MAX_CELL_VALS, &n, err)))
        return rc;
    if (n == 0)
        return sj_bad(err, TDB_E_INVAL, &k, "%s", zero_msg);
    *out = (uint32_t)n;
    return 0;
}

/* An attribute's "enumeration" and "cell_val_num". */
static int sj_attr_shape(json_t *o, const struct sj_where *w,
                         struct tdb_attr *a, struct tdb_error *err)
{
    struct sj_where k;
    json_t *v;
    sj_at(&k, w, "enumeration");
    if ((v = json_object_get(o, "enumeration")) && !json_is_null(v)) {
        if (!json_is_string(v))
            return sj_bad(err, TDB_E_INVAL, &k, "expected a string");
        if (!(a->enumeration = strdup(json_string_value(v))))
            return sj_nomem(err);
    }
    return sj_cell_val_num(o, w, "must be at least 1 (or \"var\")",
                           &a->cell_val_num, err);
}

/* An attribute's "fill_hex" (absent: TileDB's default fill of its type)
 * and "fill_validity". */
static int sj_attr_fill(json_t *o, const struct sj_where *w,
                        struct tdb_attr *a, struct tdb_error *err)
{
    const char *hex;
    struct sj_where k;
    json_t *v;
    int rc;
    uint64_t fv = 0;
    sj_at(&k, w, "fill_validity");
    if ((v = json_object_get(o, "fill_validity")) && !json_is_null(v)) {
        if (json_is_boolean(v))
            fv = json_is_true(v);
        else if ((rc = sj_uint(v, &k, 1, &fv, err)))
            return rc;
    }
    a->fill_validity = (uint8_t)fv;
    if ((rc = sj_str(o, "fill_hex", false, w, &hex, err)))
        return rc;
    sj_at(&k, w, "fill_hex");
    uint64_t cell = (uint64_t)tdb_dt_size(a->type) *
                    (a->cell_val_num == TDB_VAR_NUM ? 1 : a->cell_val_num);
    if (!hex) {
        unsigned sz = tdb_dt_size(a->type);
        if (!(a->fill = malloc((size_t)cell)))
            return sj_nomem(err);
        for (uint64_t i = 0; i < cell / sz; i++)
            tdb_dt_default_fill(a->type, a->fill + i * sz);
        a->fill_size = cell;
        return 0;
    }
    rc = sj_hex(hex, &a->fill, &a->fill_size);
    if (rc == TDB_E_NOMEM)
        return sj_nomem(err);
    if (rc)
        return sj_bad(err, TDB_E_INVAL, &k, "expected an even number of "
                      "hex digits");
    if (a->fill_size == 0)
        return sj_bad(err, TDB_E_INVAL, &k, "a fill value has at least "
                      "one byte");
    if (a->cell_val_num != TDB_VAR_NUM && a->fill_size != cell)
        return sj_bad(err, TDB_E_INVAL, &k, "holds %" PRIu64 " bytes; a "
                      "cell of %u %s values is %" PRIu64, a->fill_size,
                      a->cell_val_num, tdb_dt_name(a->type), cell);
    if (a->cell_val_num == TDB_VAR_NUM && a->fill_size % tdb_dt_size(a->type))
        return sj_bad(err, TDB_E_INVAL, &k, "%" PRIu64 " bytes are not "
                      "whole %s values", a->fill_size, tdb_dt_name(a->type));
    return 0;
}

static int sj_attr(json_t *o, const struct sj_where *w, struct tdb_attr *a,
                   struct tdb_error *err)
{
    static const char *const known[] = {"name", "datatype", "cell_val_num",
                                        "nullable", "fill_hex",
                                        "fill_validity", "enumeration",
                                        "filters", "filters_max_chunk_size",
                                        NULL};
    int rc;
    if ((rc = sj_named(o, w, known, &a->name, &a->type, err)) ||
        (rc = sj_attr_shape(o, w, a, err)) ||
        (rc = sj_bool(o, "nullable", false, w, &a->nullable, err)) ||
        (rc = sj_attr_fill(o, w, a, err)))
        return rc;
    return sj_pipeline(o, "filters", w, NULL, &a->filters, err);
}

/* --------------------------------------------------------- current domain */

static int sj_current_domain(json_t *cd, const struct sj_where *w,
                             struct tdb_schema *s, struct tdb_error *err)
{
    if (!cd || json_is_null(cd))
        return 0;
    if (!json_is_array(cd) || json_array_size(cd) != s->ndims)
        return sj_bad(err, TDB_E_INVAL, w, "expected null or one [lo, hi] "
                      "per dimension (%u)", s->ndims);
    if (!(s->current_domain = calloc(s->ndims, sizeof *s->current_domain)))
        return sj_nomem(err);
    s->has_current_domain = true;
    for (uint32_t i = 0; i < s->ndims; i++) {
        struct sj_where r, e;
        json_t *pair = json_array_get(cd, i);
        struct tdb_range *rg = &s->current_domain[i];
        const struct tdb_dim *d = &s->dims[i];
        sj_at(&r, w, "[%u]", i);
        if (!json_is_array(pair) || json_array_size(pair) != 2)
            return sj_bad(err, TDB_E_INVAL, &r, "expected [lo, hi]");
        for (int j = 0; j < 2; j++) {
            json_t *v = json_array_get(pair, (size_t)j);
            int rc;
            sj_at(&e, &r, "[%d]", j);
            if (d->cell_val_num != TDB_VAR_NUM) {
                if ((rc = sj_value(v, d->type, &e, j ? rg->hi : rg->lo, err)))
                    return rc;
                continue;
            }
            if (!json_is_string(v))
                return sj_bad(err, TDB_E_INVAL, &e, "expected a string");
            size_t n = json_string_length(v);
            uint8_t *p = malloc(n ? n : 1);
            if (!p)
                return sj_nomem(err);
            memcpy(p, json_string_value(v), n);
            if (j) {
                rg->vhi = p;
                rg->vhi_size = n;
            } else {
                rg->vlo = p;
                rg->vlo_size = n;
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------- the schema */

static int sj_layout(json_t *obj, const char *key, bool cell,
                     const struct sj_where *parent, unsigned *out,
                     struct tdb_error *err)
{
    const char *s;
    struct sj_where w;
    int rc = sj_str(obj, key, false, parent, &s, err);
    if (rc)
        return rc;
    sj_at(&w, parent, "%s", key);
    if (!s || !strcmp(s, "row-major"))
        *out = TDB_ROW_MAJOR;
    else if (!strcmp(s, "col-major"))
        *out = TDB_COL_MAJOR;
    else if (cell && !strcmp(s, "hilbert"))
        *out = TDB_HILBERT;
    else
        return sj_bad(err, TDB_E_INVAL, &w, "\"%s\" is not %s", s,
                      cell ? "row-major, col-major or hilbert"
                           : "row-major or col-major");
    return 0;
}

/* A new enumeration file name: __<32 hex>_0, as TileDB names them. */
static int sj_enum_path(struct tdb_enumeration *en, struct tdb_error *err)
{
    uint8_t rnd[16];
    char file[64];
    int rr = tdb_random(rnd, sizeof rnd, err);
    if (rr)
        return tdb_err_ctx(err, rr, "enumeration '%s': its file name",
                           en->name);
    snprintf(file, sizeof file, "__");
    for (int b = 0; b < 16; b++)
        snprintf(file + 2 + 2 * b, 3, "%02x", rnd[b]);
    strcat(file, "_0");
    if (!(en->path = strdup(file)))
        return sj_nomem(err);
    return 0;
}

/* An enumeration's "cell_val_num". */
static int sj_enum_cvn(json_t *e, const struct sj_where *ew,
                       struct tdb_enumeration *en, struct tdb_error *err)
{
    return sj_cell_val_num(e, ew, "must be at least 1", &en->cell_val_num,
                           err);
}

/* An enumeration's values: "data_hex" and, var-sized, "offsets_hex". */
static int sj_enum_values(json_t *e, const struct sj_where *ew,
                          struct tdb_enumeration *en, struct tdb_error *err)
{
    const char *hex;
    struct sj_where k;
    int rc;
    if ((rc = sj_str(e, "data_hex", true, ew, &hex, err)))
        return rc;
    sj_at(&k, ew, "data_hex");
    if (sj_hex(hex, &en->data, &en->data_size))
        return sj_bad(err, TDB_E_INVAL, &k, "not hexadecimal bytes");
    if (en->cell_val_num != TDB_VAR_NUM) {
        uint64_t cell = (uint64_t)tdb_dt_size(en->type) * en->cell_val_num;
        if (!cell || en->data_size % cell)
            return sj_bad(err, TDB_E_INVAL, &k, "not whole values");
        return 0;
    }
    if ((rc = sj_str(e, "offsets_hex", true, ew, &hex, err)))
        return rc;
    sj_at(&k, ew, "offsets_hex");
    if (sj_hex(hex, &en->offsets, &en->offsets_size) || en->offsets_size % 8)
        return sj_bad(err, TDB_E_INVAL, &k, "not uint64 offsets");
    for (uint64_t j = 0; j < en->offsets_size / 8; j++) {
        uint64_t off = tdb_le64(en->offsets + 8 * j);
        if (off > en->data_size ||
            (j && off < tdb_le64(en->offsets + 8 * (j - 1))))
            return sj_bad(err, TDB_E_INVAL, &k, "offset %llu of value "
                          "%llu out of order or past the data",
                          (unsigned long long)off, (unsigned long long)j);
    }
    return 0;
}

/* One enumeration from its object. */
static int sj_enumeration(json_t *e, const struct sj_where *ew,
                          struct tdb_enumeration *en, struct tdb_error *err)
{
    static const char *const known[] = {"name", "datatype", "cell_val_num",
                                        "ordered", "data_hex", "offsets_hex",
                                        NULL};
    int rc;
    if ((rc = sj_named(e, ew, known, &en->name, &en->type, err)) ||
        (rc = sj_bool(e, "ordered", false, ew, &en->ordered, err)))
        return rc;
    if ((rc = sj_enum_path(en, err)) || (rc = sj_enum_cvn(e, ew, en, err)))
        return rc;
    return sj_enum_values(e, ew, en, err);
}

/* "enumerations": [{"name", "datatype", "cell_val_num", "ordered",
 * "data_hex", "offsets_hex"}] as json.c writes them; each gets a new file
 * name __<32 hex>_0 under __schema/__enumerations, as TileDB names them.
 * Every attribute's "enumeration" must name one of them. */
static int sj_enumerations(json_t *o, const struct sj_where *w,
                           struct tdb_schema *s, struct tdb_error *err)
{
    size_t n = o && !json_is_null(o) ? json_array_size(o) : 0;
    int rc;
    if (o && !json_is_null(o) && !json_is_array(o))
        return sj_bad(err, TDB_E_INVAL, w, "expected an array");
    if (n > UINT16_MAX)
        return sj_bad(err, TDB_E_INVAL, w, "too many enumerations");
    if (n && !(s->enums = calloc(n, sizeof *s->enums)))
        return sj_nomem(err);
    s->nenums = (uint32_t)n;
    for (uint32_t i = 0; i < s->nenums; i++) {
        struct sj_where ew;
        sj_at(&ew, w, "[%u]", i);
        if ((rc = sj_enumeration(json_array_get(o, i), &ew, &s->enums[i],
                                 err)))
            return rc;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(s->enums[j].name, s->enums[i].name))
                return sj_bad(err, TDB_E_INVAL, &ew, "a second enumeration "
                              "named '%s'", s->enums[i].name);
    }
    for (uint32_t a = 0; a < s->nattrs; a++) {
        const char *en = s->attrs[a].enumeration;
        bool found = false;
        for (uint32_t j = 0; en && j < s->nenums && !found; j++)
            found = !strcmp(s->enums[j].name, en);
        if (en && !found)
            return tdb_err(err, TDB_E_INVAL, "attrs[%u].enumeration: no "
                           "enumeration named '%s' in \"enumerations\"", a, en);
    }
    return 0;
}

/* "dims": at least one dimension. */
static int sj_dims(json_t *o, const struct sj_where *top,
                   struct tdb_schema *s, struct tdb_error *err)
{
    json_t *dims = json_object_get(o, "dims");
    struct sj_where w;
    int rc;
    sj_at(&w, top, "dims");
    if (!json_is_array(dims) || json_array_size(dims) == 0)
        return sj_bad(err, TDB_E_INVAL, &w, "expected an array of at least "
                      "one dimension");
    if (json_array_size(dims) > UINT16_MAX)
        return sj_bad(err, TDB_E_INVAL, &w, "too many dimensions");
    s->ndims = (uint32_t)json_array_size(dims);
    if (!(s->dims = calloc(s->ndims, sizeof *s->dims)))
        return sj_nomem(err);
    for (uint32_t i = 0; i < s->ndims; i++) {
        struct sj_where dw;
        sj_at(&dw, &w, "[%u]", i);
        if ((rc = sj_dim(json_array_get(dims, i), &dw, &s->dims[i],
                         &s->coords_filters, err)))
            return rc;
    }
    return 0;
}

/* "attrs" (absent or null: none). */
static int sj_attrs(json_t *o, const struct sj_where *top,
                    struct tdb_schema *s, struct tdb_error *err)
{
    json_t *attrs = json_object_get(o, "attrs");
    struct sj_where w;
    int rc;
    sj_at(&w, top, "attrs");
    if (attrs && !json_is_null(attrs) && !json_is_array(attrs))
        return sj_bad(err, TDB_E_INVAL, &w, "expected an array");
    size_t na = attrs ? json_array_size(attrs) : 0;
    if (na > UINT16_MAX)
        return sj_bad(err, TDB_E_INVAL, &w, "too many attributes");
    if (!(s->attrs = calloc(na ? na : 1, sizeof *s->attrs)))
        return sj_nomem(err);
    s->nattrs = (uint32_t)na;
    for (uint32_t i = 0; i < s->nattrs; i++) {
        struct sj_where aw;
        sj_at(&aw, &w, "[%u]", i);
        if ((rc = sj_attr(json_array_get(attrs, i), &aw, &s->attrs[i], err)))
            return rc;
    }
    return 0;
}

/* The coordinates', offsets' and validity pipelines, by default TileDB's:
 * ZSTD for coordinates and offsets, RLE for validity, at the library's
 * default level. */
static int sj_schema_pipelines(json_t *o, const struct sj_where *top,
                               struct tdb_schema *s, struct tdb_error *err)
{
    struct tdb_filter zstd, rle;
    int rc;
    if ((rc = tdb_filter_init_level(&zstd, TDB_FILTER_ZSTD,
                                    TDB_FILTER_LEVEL_DEFAULT)) ||
        (rc = tdb_filter_init_level(&rle, TDB_FILTER_RLE,
                                    TDB_FILTER_LEVEL_DEFAULT)))
        return tdb_err(err, rc, "schema JSON: no ZSTD or RLE filter");
    if ((rc = sj_pipeline(o, "coords_filters", top, &zstd,
                          &s->coords_filters, err)) ||
        (rc = sj_pipeline(o, "offsets_filters", top, &zstd,
                          &s->offsets_filters, err)))
        return rc;
    return sj_pipeline(o, "validity_filters", top, &rle,
                       &s->validity_filters, err);
}

static int sj_schema(json_t *o, struct tdb_schema *s, struct tdb_error *err)
{
    static const char *const known[] = {
        "array_type", "tile_order", "cell_order", "capacity",
        "allows_duplicates", "dims", "attrs", "current_domain",
        "coords_filters", "offsets_filters", "validity_filters", "version",
        "coords_filters_max_chunk_size", "offsets_filters_max_chunk_size",
        "validity_filters_max_chunk_size", "enumerations", NULL};
    struct sj_where top = {""}, w;
    const char *at;
    json_t *v;
    int rc;
    if ((rc = sj_known_keys(o, known, &top, err)) ||
        (rc = sj_str(o, "array_type", true, &top, &at, err)))
        return rc;
    sj_at(&w, &top, "array_type");
    if (!strcmp(at, "dense"))
        s->array_type = TDB_DENSE;
    else if (!strcmp(at, "sparse"))
        s->array_type = TDB_SPARSE;
    else
        return sj_bad(err, TDB_E_INVAL, &w, "\"%s\" is not dense or sparse",
                      at);
    if ((rc = sj_layout(o, "tile_order", false, &top, &s->tile_order, err)) ||
        (rc = sj_layout(o, "cell_order", true, &top, &s->cell_order, err)) ||
        (rc = sj_bool(o, "allows_duplicates", false, &top, &s->allows_dups,
                      err)))
        return rc;
    s->capacity = SJ_CAPACITY;
    sj_at(&w, &top, "capacity");
    if ((v = json_object_get(o, "capacity")) && !json_is_null(v) &&
        (rc = sj_uint(v, &w, UINT64_MAX, &s->capacity, err)))
        return rc;
    if ((rc = sj_schema_pipelines(o, &top, s, err)) ||
        (rc = sj_dims(o, &top, s, err)) || (rc = sj_attrs(o, &top, s, err)))
        return rc;
    sj_at(&w, &top, "enumerations");
    if ((rc = sj_enumerations(json_object_get(o, "enumerations"), &w, s, err)))
        return rc;
    sj_at(&w, &top, "current_domain");
    return sj_current_domain(json_object_get(o, "current_domain"), &w, s,
                             err);
}

/* ----------------------------------------------------------------- checks */

/* A fixed-size dimension value (of an integer or float datatype). */
static struct tdb_num sj_load(unsigned type, const uint8_t *p)
{
    return tdb_value_load(type, p);
}

static bool sj_lt(struct tdb_num a, struct tdb_num b)
{
    return tdb_num_cmp(&a, &b, NULL) < 0;
}

/* An integer value widened past both int64 and uint64 (floats: 0). */
static __int128 sj_wide(struct tdb_num n)
{
    return n.cls == TDB_VC_SIGNED ? (__int128)n.i : (__int128)n.u;
}

/* The largest value of integer type t. */
static __int128 sj_type_max(unsigned t)
{
    return (__int128)tdb_value_int_max(t);
}

/* Dense arrays: a dimension without a tile extent gets its whole domain
 * as the extent, as TileDB's set_domain does. */
static int sj_fill_extents(struct tdb_schema *s, struct tdb_error *err)
{
    for (uint32_t i = 0; i < s->ndims; i++) {
        struct tdb_dim *d = &s->dims[i];
        if (d->has_extent || d->cell_val_num == TDB_VAR_NUM ||
            !tdb_dt_is_integer(d->type))
            continue;
        struct tdb_num lo = sj_load(d->type, d->lo), hi = sj_load(d->type,
                                                                d->hi);
        __int128 ext = sj_wide(hi) - sj_wide(lo) + 1;
        if (ext <= 0 || ext > sj_type_max(d->type))
            return tdb_err(err, TDB_E_INVAL, "schema JSON: dims[%u] ('%s'): "
                           "tile_extent is null and the domain's range does "
                           "not fit %s; give a tile_extent", i, d->name,
                           tdb_dt_name(d->type));
        uint64_t e = (uint64_t)ext;
        for (unsigned b = 0; b < tdb_dt_size(d->type); b++)
            d->extent[b] = (uint8_t)(e >> (8 * b));
        d->has_extent = true;
    }
    return 0;
}

static int sj_check_dim(const struct tdb_schema *s, uint32_t i,
                        struct tdb_error *err)
{
    const struct tdb_dim *d = &s->dims[i];
    const char *n = d->name;
    unsigned sz = tdb_dt_size(d->type);
    if (d->cell_val_num == TDB_VAR_NUM) {
        if (d->type != TDB_STRING_ASCII)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a var-sized "
                           "dimension must be STRING_ASCII", n);
        if (s->array_type == TDB_DENSE)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': dense arrays "
                           "cannot have string dimensions", n);
        if (d->has_extent)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a string "
                           "dimension has no tile extent", n);
        return 0;
    }
    if (d->cell_val_num != 1 || sz == 0 || sz > 8 ||
        !(tdb_dt_is_integer(d->type) || tdb_dt_is_float(d->type)))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': datatype %s (cell "
                       "values %u) cannot be a dimension's", n,
                       tdb_dt_name(d->type) ? tdb_dt_name(d->type) : "?",
                       d->cell_val_num);
    struct tdb_num lo = sj_load(d->type, d->lo), hi = sj_load(d->type, d->hi);
    if (lo.cls == TDB_VC_FLOAT) {
        if (!isfinite(lo.d) || !isfinite(hi.d))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain "
                           "holds NaN or an infinity", n);
        if (s->array_type == TDB_DENSE)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': dense arrays "
                           "cannot have floating point dimensions", n);
    }
    if (sj_lt(hi, lo))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain's upper "
                       "bound is below its lower bound", n);
    if (lo.cls != TDB_VC_FLOAT && sj_wide(lo) == tdb_value_int_min(d->type) &&
        sj_wide(hi) == sj_type_max(d->type))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain may not "
                       "span the whole %s range", n, tdb_dt_name(d->type));
    if (!d->has_extent) {
        if (s->array_type == TDB_DENSE)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a dense "
                           "array's dimensions need a tile extent", n);
        return 0;
    }
    struct tdb_num ext = sj_load(d->type, d->extent);
    if (ext.cls == TDB_VC_FLOAT) {
        if (!(ext.d > 0) || !isfinite(ext.d))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile "
                           "extent must be greater than 0", n);
        if (ext.d > hi.d - lo.d + 1)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile "
                           "extent %.17g is larger than the domain "
                           "[%.17g, %.17g]", n, ext.d, lo.d, hi.d);
        return 0;
    }
    __int128 range = sj_wide(hi) - sj_wide(lo) + 1;
    __int128 e = sj_wide(ext);
    if (e <= 0)
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile extent "
                       "must be greater than 0", n);
    if (e > range)
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the tile extent "
                       "%llu is larger than the domain's %llu values", n,
                       (unsigned long long)e, (unsigned long long)range);
    __int128 ntiles = (range + e - 1) / e;
    if (sj_wide(lo) + ntiles * e - 1 > sj_type_max(d->type))
        return tdb_err(err, TDB_E_INVAL, "dimension '%s': the domain "
                       "expanded to whole tiles exceeds the largest %s; "
                       "lower the upper bound by one tile extent", n,
                       tdb_dt_name(d->type));
    return 0;
}

static int sj_check_attr(const struct tdb_attr *a, struct tdb_error *err)
{
    const char *n = a->name;
    unsigned sz = tdb_dt_size(a->type);
    if (sz == 0 || a->type == TDB_ANY)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': invalid datatype "
                       "%u", n, a->type);
    if (a->cell_val_num == 0)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': cell_val_num is 0",
                       n);
    if (a->fill && a->fill_size) {
        bool var = a->cell_val_num == TDB_VAR_NUM;
        if ((!var && a->fill_size != (uint64_t)sz * a->cell_val_num) ||
            (var && a->fill_size % sz))
            return tdb_err(err, TDB_E_INVAL, "attribute '%s': a fill value "
                           "of %llu bytes does not fit its cells", n,
                           (unsigned long long)a->fill_size);
    }
    if (a->fill_validity > 1)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': fill_validity is "
                       "0 or 1", n);
    for (uint32_t i = 0; i < a->filters.n; i++) {
        const struct tdb_filter *f = &a->filters.f[i];
        if (f->type == TDB_FILTER_SCALE_FLOAT && !tdb_dt_is_float(a->type))
            return tdb_err(err, TDB_E_INVAL, "attribute '%s': SCALE_FLOAT "
                           "filters only FLOAT32 and FLOAT64 values", n);
    }
    return 0;
}

/* ------------------------------------------------------------------ WEBP */

/* libwebp's largest image side (TileDB checks it at schema creation). */
#define SJ_WEBP_MAX_SIDE 16383

/* The tile extents of dimensions 0 (Y: rows) and 1 (X: bytes of a row) of
 * a two-dimensional schema with integral dimensions, as TileDB's WEBP
 * filter takes them; false when the schema has no such extents. */
static bool sj_webp_dims(const struct tdb_schema *s, uint64_t *y, uint64_t *x)
{
    if (s->ndims != 2)
        return false;
    for (uint32_t i = 0; i < 2; i++) {
        const struct tdb_dim *d = &s->dims[i];
        switch (d->type) {
        case TDB_INT8: case TDB_UINT8: case TDB_INT16: case TDB_UINT16:
        case TDB_INT32: case TDB_UINT32: case TDB_INT64: case TDB_UINT64:
            break;
        default:
            return false;
        }
        if (d->cell_val_num != 1 || !d->has_extent)
            return false;
        __int128 e = sj_wide(sj_load(d->type, d->extent));
        if (e <= 0)
            return false;
        *(i ? x : y) = e > UINT32_MAX ? UINT32_MAX : (uint64_t)e;
    }
    return true;
}

/* TileDB copies the schema's tile extents into each WEBP filter's options
 * when it checks a new schema; so does this. */
static void sj_webp_extents(struct tdb_schema *s)
{
    uint64_t y, x;
    if (s->array_type != TDB_DENSE || !sj_webp_dims(s, &y, &x) ||
        y > UINT16_MAX || x > UINT16_MAX)
        return;     /* tdb_schema_check says why */
    for (uint32_t i = 0; i < s->nattrs; i++)
        for (uint32_t j = 0; j < s->attrs[i].filters.n; j++) {
            struct tdb_filter *f = &s->attrs[i].filters.f[j];
            if (f->type == TDB_FILTER_WEBP) {
                tdb_filter_set_int(f, "y_extent", (int64_t)y);
                tdb_filter_set_int(f, "x_extent", (int64_t)x);
            }
        }
}

/* What TileDB asks of WEBP filter f of attribute a: see sj_check_webp. */
static int sj_check_webp_filter(const struct tdb_schema *s,
                                const struct tdb_attr *a,
                                const struct tdb_filter *f,
                                struct tdb_error *err)
{
    unsigned bpp = tdb_webp_pixel_bytes(
        (unsigned)tdb_filter_get_int(f, "format"));
    double quality = tdb_filter_get_real(f, "quality");
    int64_t lossless = tdb_filter_get_int(f, "lossless");
    int64_t ye = tdb_filter_get_int(f, "y_extent");
    int64_t xe = tdb_filter_get_int(f, "x_extent");
    uint64_t y = 0, x = 0;
    if (a->type != TDB_UINT8 || a->cell_val_num != 1)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter "
                       "takes UINT8 attributes of one value a cell", a->name);
    if (s->array_type != TDB_DENSE)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter "
                       "is for dense arrays only", a->name);
    if (!sj_webp_dims(s, &y, &x))
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter "
                       "needs exactly 2 integral dimensions (Y, X) with tile "
                       "extents", a->name);
    if (!bpp)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "format is not set (RGB, BGR, RGBA or BGRA)", a->name);
    if (!(quality >= 0.0 && quality <= 100.0) || lossless > 1)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "quality is in [0, 100], its lossless flag 0 or 1",
                       a->name);
    if (x % bpp)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "format has %u bytes a pixel; the tile extent of "
                       "dimension '%s' (%llu) is not a multiple of it",
                       a->name, bpp, s->dims[1].name, (unsigned long long)x);
    if (y > SJ_WEBP_MAX_SIDE || x / bpp > SJ_WEBP_MAX_SIDE)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': tiles of %llu x "
                       "%llu pixels; a WebP image has at most %d x %d",
                       a->name, (unsigned long long)y,
                       (unsigned long long)(x / bpp), SJ_WEBP_MAX_SIDE,
                       SJ_WEBP_MAX_SIDE);
    if ((uint64_t)ye != y || (uint64_t)xe != x)
        return tdb_err(err, TDB_E_INVAL, "attribute '%s': the WEBP filter's "
                       "tile extents (%u, %u) are not the schema's (%llu, "
                       "%llu)", a->name, (unsigned)ye, (unsigned)xe,
                       (unsigned long long)y, (unsigned long long)x);
    return 0;
}

/* What TileDB asks of a schema with WEBP filters: UINT8 attributes of a
 * dense array of two integral dimensions whose tiles are images of whole
 * pixels at most 16383 a side; and here also one value a cell, the filter
 * on attributes only, its options complete. */
static int sj_check_webp(const struct tdb_schema *s, struct tdb_error *err)
{
    if (tdb_pipeline_has(&s->coords_filters, TDB_FILTER_WEBP) ||
        tdb_pipeline_has(&s->offsets_filters, TDB_FILTER_WEBP) ||
        tdb_pipeline_has(&s->validity_filters, TDB_FILTER_WEBP))
        return tdb_err(err, TDB_E_INVAL, "a WEBP filter filters attribute "
                       "values only, not coordinates, offsets or validity");
    for (uint32_t i = 0; i < s->ndims; i++)
        if (tdb_pipeline_has(&s->dims[i].filters, TDB_FILTER_WEBP))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': a WEBP filter "
                           "filters attribute values only", s->dims[i].name);
    for (uint32_t i = 0; i < s->nattrs; i++) {
        const struct tdb_attr *a = &s->attrs[i];
        for (uint32_t j = 0; j < a->filters.n; j++) {
            int rc = a->filters.f[j].type == TDB_FILTER_WEBP
                         ? sj_check_webp_filter(s, a, &a->filters.f[j], err)
                         : 0;
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The array type, the orders, and what each array type asks. */
static int sj_check_kind(const struct tdb_schema *s, struct tdb_error *err)
{
    if (s->array_type != TDB_DENSE && s->array_type != TDB_SPARSE)
        return tdb_err(err, TDB_E_INVAL, "invalid array type %u",
                       s->array_type);
    if (s->tile_order != TDB_ROW_MAJOR && s->tile_order != TDB_COL_MAJOR)
        return tdb_err(err, TDB_E_INVAL, "the tile order is row-major or "
                       "col-major");
    if (s->cell_order != TDB_ROW_MAJOR && s->cell_order != TDB_COL_MAJOR &&
        s->cell_order != TDB_HILBERT)
        return tdb_err(err, TDB_E_INVAL, "the cell order is row-major, "
                       "col-major or hilbert");
    if (s->cell_order == TDB_HILBERT && s->ndims > SJ_HILBERT_MAX_DIMS)
        return tdb_err(err, TDB_E_INVAL, "hilbert order supports at most %d "
                       "dimensions", SJ_HILBERT_MAX_DIMS);
    if (s->array_type != TDB_DENSE) {
        if (s->capacity == 0)
            return tdb_err(err, TDB_E_INVAL, "a sparse array's capacity "
                           "cannot be 0");
        return 0;
    }
    if (s->nattrs == 0)
        return tdb_err(err, TDB_E_INVAL, "a dense array needs at least "
                       "one attribute");
    if (s->cell_order == TDB_HILBERT)
        return tdb_err(err, TDB_E_INVAL, "dense arrays cannot have the "
                       "hilbert cell order");
    if (s->allows_dups)
        return tdb_err(err, TDB_E_INVAL, "dense arrays cannot allow "
                       "duplicates");
    for (uint32_t i = 1; i < s->ndims; i++)
        if (s->dims[i].type != s->dims[0].type)
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': in a dense "
                           "array every dimension has the same datatype "
                           "(%s, not %s)", s->dims[i].name,
                           tdb_dt_name(s->dims[0].type),
                           tdb_dt_name(s->dims[i].type));
    return 0;
}

/* Every dimension and attribute: named, once, and valid. */
static int sj_check_fields(const struct tdb_schema *s, struct tdb_error *err)
{
    int rc;
    for (uint32_t i = 0; i < s->ndims; i++) {
        const char *n = s->dims[i].name;
        if (!n || !n[0])
            return tdb_err(err, TDB_E_INVAL, "dimension %u has no name", i);
        if (!strncmp(n, "__", 2))
            return tdb_err(err, TDB_E_INVAL, "dimension '%s': names starting "
                           "with '__' are reserved", n);
        if ((rc = sj_check_dim(s, i, err)))
            return rc;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(s->dims[j].name, n))
                return tdb_err(err, TDB_E_INVAL, "two dimensions are named "
                               "'%s'", n);
    }
    for (uint32_t i = 0; i < s->nattrs; i++) {
        const char *n = s->attrs[i].name;
        if (!n)
            return tdb_err(err, TDB_E_INVAL, "attribute %u has no name", i);
        if (!strncmp(n, "__", 2))
            return tdb_err(err, TDB_E_INVAL, "attribute '%s': names starting "
                           "with '__' are reserved", n);
        if ((rc = sj_check_attr(&s->attrs[i], err)))
            return rc;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(s->attrs[j].name, n))
                return tdb_err(err, TDB_E_INVAL, "two attributes are named "
                               "'%s'", n);
        if (tdb_schema_dim_index(s, n) >= 0)
            return tdb_err(err, TDB_E_INVAL, "'%s' names both a dimension "
                           "and an attribute", n);
    }
    return 0;
}

/* The current domain: ordered bounds inside each dimension's domain. */
static int sj_check_current(const struct tdb_schema *s, struct tdb_error *err)
{
    for (uint32_t i = 0; s->has_current_domain && i < s->ndims; i++) {
        const struct tdb_dim *d = &s->dims[i];
        const struct tdb_range *r = &s->current_domain[i];
        if (d->cell_val_num == TDB_VAR_NUM) {
            if (!r->vlo || !r->vhi ||
                tdb_bytes_cmp(r->vlo, r->vlo_size, r->vhi, r->vhi_size) > 0)
                return tdb_err(err, TDB_E_INVAL, "current domain of '%s': "
                               "the lower bound is above the upper", d->name);
            continue;
        }
        struct tdb_num lo = sj_load(d->type, r->lo), hi = sj_load(d->type,
                                                                r->hi);
        struct tdb_num dlo = sj_load(d->type, d->lo), dhi = sj_load(d->type,
                                                                  d->hi);
        if ((lo.cls == TDB_VC_FLOAT && (isnan(lo.d) || isnan(hi.d))) || sj_lt(hi, lo))
            return tdb_err(err, TDB_E_INVAL, "current domain of '%s': the "
                           "lower bound is above the upper", d->name);
        if (sj_lt(lo, dlo) || sj_lt(dhi, hi))
            return tdb_err(err, TDB_E_INVAL, "current domain of '%s' lies "
                           "outside the dimension's domain", d->name);
    }
    return 0;
}

int tdb_schema_check(const struct tdb_schema *s, struct tdb_error *err)
{
    int rc;
    if (!s || s->ndims == 0 || !s->dims)
        return tdb_err(err, TDB_E_INVAL, "array schema without dimensions");
    if ((rc = sj_check_kind(s, err)) || (rc = sj_check_fields(s, err)) ||
        (rc = sj_check_current(s, err)))
        return rc;
    return sj_check_webp(s, err);
}

int tdb_schema_from_json(const char *text, size_t len,
                         struct tdb_schema **out, struct tdb_error *err)
{
    char *q = NULL;
    size_t qlen = 0;
    json_error_t je;
    *out = NULL;
    if (!text)
        return tdb_err(err, TDB_E_INVAL, "schema JSON: no text");
    if (sj_quote_big(text, len, &q, &qlen))
        return sj_nomem(err);
    json_t *root = json_loadb(q, qlen, JSON_REJECT_DUPLICATES, &je);
    free(q);
    if (!root)
        return tdb_err(err, TDB_E_INVAL, "schema JSON: line %d column %d: %s",
                       je.line, je.column, je.text);
    json_t *o = root;
    if (json_is_object(root) && json_is_object(json_object_get(root, "schema")))
        o = json_object_get(root, "schema");
    int rc;
    struct tdb_schema *s = calloc(1, sizeof *s);
    if (!s) {
        rc = sj_nomem(err);
    } else if (!json_is_object(o)) {
        rc = tdb_err(err, TDB_E_INVAL, "schema JSON: expected an object (the "
                     "\"schema\" of __array.json, or __array.json itself)");
    } else {
        s->version = TDB_WRITE_VERSION;
        rc = sj_schema(o, s, err);
        if (!rc && s->array_type == TDB_DENSE)
            rc = sj_fill_extents(s, err);
        if (!rc)
            sj_webp_extents(s);
        if (!rc && (rc = tdb_schema_check(s, err)))
            tdb_err_ctx(err, rc, "schema JSON");
    }
    json_decref(root);
    if (rc) {
        tdb_schema_free(s);
        return rc;
    }
    *out = s;
    return 0;
}


/* -------------------------------------------------------------- evolution */

/* drop_attributes: the names of attributes s has, each dropped. */
static int sj_evolve_drops(json_t *drops, const struct sj_where *top,
                           struct tdb_schema *s, struct tdb_error *err)
{
    struct sj_where w;
    sj_at(&w, top, "drop_attributes");
    if (!drops || json_is_null(drops))
        return 0;
    if (!json_is_array(drops))
        return sj_bad(err, TDB_E_INVAL, &w, "expected an array of names");
    for (size_t i = 0; i < json_array_size(drops); i++) {
        struct sj_where iw;
        sj_at(&iw, &w, "[%zu]", i);
        const char *name = json_string_value(json_array_get(drops, i));
        if (!name)
            return sj_bad(err, TDB_E_INVAL, &iw, "expected a name");
        int a = tdb_schema_attr_index(s, name);
        if (a < 0)
            return sj_bad(err, TDB_E_INVAL, &iw, "the array has no attribute "
                          "\"%s\"", name);
        tdb_attr_clear(&s->attrs[a]);
        memmove(&s->attrs[a], &s->attrs[a + 1],
                (s->nattrs - (uint32_t)a - 1) * sizeof *s->attrs);
        s->nattrs--;
    }
    return 0;
}

/* add_attributes: attributes in the form of a schema's "attrs", appended. */
static int sj_evolve_adds(json_t *adds, const struct sj_where *top,
                          struct tdb_schema *s, struct tdb_error *err)
{
    struct sj_where w;
    sj_at(&w, top, "add_attributes");
    if (!adds || json_is_null(adds))
        return 0;
    if (!json_is_array(adds))
        return sj_bad(err, TDB_E_INVAL, &w, "expected an array of attributes");
    size_t na = json_array_size(adds);
    if (na > UINT16_MAX - s->nattrs)
        return sj_bad(err, TDB_E_INVAL, &w, "too many attributes");
    struct tdb_attr *v = realloc(s->attrs, (s->nattrs + na + 1) * sizeof *v);
    if (!v)
        return sj_nomem(err);
    s->attrs = v;
    for (size_t i = 0; i < na; i++) {
        struct sj_where aw;
        struct tdb_attr *a = &s->attrs[s->nattrs];
        sj_at(&aw, &w, "[%zu]", i);
        memset(a, 0, sizeof *a);
        int rc = sj_attr(json_array_get(adds, i), &aw, a, err);
        if (rc) {
            tdb_attr_clear(a);
            return rc;
        }
        bool found = !a->enumeration;
        for (uint32_t j = 0; !found && j < s->nenums; j++)
            found = !strcmp(s->enums[j].name, a->enumeration);
        if (!found) {
            int r = sj_bad(err, TDB_E_INVAL, &aw, "no enumeration '%s' (add "
                           "it in add_enumerations)", a->enumeration);
            tdb_attr_clear(a);
            return r;
        }
        s->nattrs++;
    }
    return 0;
}

/* add_enumerations: enumerations in the form of a schema's
 * "enumerations", appended, each with a new file name (its file is
 * written with the schema). */
static int sj_evolve_add_enums(json_t *adds, const struct sj_where *top,
                               struct tdb_schema *s, struct tdb_error *err)
{
    struct sj_where w;
    sj_at(&w, top, "add_enumerations");
    if (!adds || json_is_null(adds))
        return 0;
    if (!json_is_array(adds))
        return sj_bad(err, TDB_E_INVAL, &w, "expected an array of "
                      "enumerations");
    size_t n = json_array_size(adds);
    if (n > UINT16_MAX - s->nenums)
        return sj_bad(err, TDB_E_INVAL, &w, "too many enumerations");
    struct tdb_enumeration *v = realloc(s->enums, (s->nenums + n + 1) *
                                                      sizeof *v);
    if (!v)
        return sj_nomem(err);
    s->enums = v;
    for (size_t i = 0; i < n; i++) {
        struct sj_where ew;
        struct tdb_enumeration *en = &s->enums[s->nenums];
        sj_at(&ew, &w, "[%zu]", i);
        memset(en, 0, sizeof *en);
        s->nenums++; /* (freed with the schema, also half made) */
        int rc = sj_enumeration(json_array_get(adds, i), &ew, en, err);
        if (rc)
            return rc;
        en->unwritten = true;
        for (uint32_t j = 0; j + 1 < s->nenums; j++)
            if (!strcmp(s->enums[j].name, en->name))
                return sj_bad(err, TDB_E_INVAL, &ew, "the array has an "
                              "enumeration '%s'", en->name);
    }
    return 0;
}

/* The k-th value of enumeration e: *p, *n. */
static void sj_enum_value(const struct tdb_enumeration *e, uint64_t k,
                          const uint8_t **p, uint64_t *n)
{
    if (e->cell_val_num != TDB_VAR_NUM) {
        uint64_t cell = (uint64_t)tdb_dt_size(e->type) * e->cell_val_num;
        *p = e->data + k * cell;
        *n = cell;
        return;
    }
    uint64_t nv = e->offsets_size / 8;
    uint64_t a = tdb_le64(e->offsets + 8 * k);
    uint64_t b = k + 1 < nv ? tdb_le64(e->offsets + 8 * (k + 1))
                            : e->data_size;
    *p = e->data + a;
    *n = b - a;
}

static uint64_t sj_enum_count(const struct tdb_enumeration *e)
{
    if (e->cell_val_num == TDB_VAR_NUM)
        return e->offsets_size / 8;
    uint64_t cell = (uint64_t)tdb_dt_size(e->type) * e->cell_val_num;
    return cell ? e->data_size / cell : 0;
}

struct sj_enum_key {
    const uint8_t *p;
    uint64_t n;
};

static int sj_enum_key_cmp(const void *a, const void *b)
{
    const struct sj_enum_key *x = a, *y = b;
    uint64_t m = x->n < y->n ? x->n : y->n;
    int c = m ? memcmp(x->p, y->p, (size_t)m) : 0;
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Whether two values of e are equal (TileDB's enumerations hold each
 * value once). */
static int sj_enum_dup(const struct tdb_enumeration *e, uint64_t *dup,
                       struct tdb_error *err)
{
    uint64_t n = sj_enum_count(e);
    struct sj_enum_key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k)
        return sj_nomem(err);
    for (uint64_t i = 0; i < n; i++)
        sj_enum_value(e, i, &k[i].p, &k[i].n);
    qsort(k, n, sizeof *k, sj_enum_key_cmp);
    int found = 0;
    for (uint64_t i = 1; i < n && !found; i++)
        if (!sj_enum_key_cmp(&k[i - 1], &k[i])) {
            found = 1;
            *dup = i;
        }
    free(k);
    return found;
}

/* extend_enumerations: [{"name", "data_hex", "offsets_hex"}]: values
 * appended to an enumeration the array has, as TileDB's
 * Enumeration::extend makes the new one: the same name under a new file
 * name, the old values first (the schema before keeps the old file). */
static int sj_evolve_extend_enums(json_t *ext, const struct sj_where *top,
                                  struct tdb_schema *s,
                                  struct tdb_error *err)
{
    static const char *const known[] = {"name", "data_hex", "offsets_hex",
                                        NULL};
    struct sj_where w;
    sj_at(&w, top, "extend_enumerations");
    if (!ext || json_is_null(ext))
        return 0;
    if (!json_is_array(ext))
        return sj_bad(err, TDB_E_INVAL, &w, "expected an array");
    for (size_t i = 0; i < json_array_size(ext); i++) {
        struct sj_where ew;
        json_t *o = json_array_get(ext, i);
        sj_at(&ew, &w, "[%zu]", i);
        int rc;
        const char *name;
        if (!json_is_object(o))
            return sj_bad(err, TDB_E_INVAL, &ew, "expected an object");
        if ((rc = sj_known_keys(o, known, &ew, err)) ||
            (rc = sj_str(o, "name", true, &ew, &name, err)))
            return rc;
        struct tdb_enumeration *e = NULL;
        for (uint32_t j = 0; j < s->nenums && !e; j++)
            if (!strcmp(s->enums[j].name, name))
                e = &s->enums[j];
        if (!e)
            return sj_bad(err, TDB_E_INVAL, &ew, "the array has no "
                          "enumeration '%s'", name);
        if (!e->data && e->data_size)
            return sj_bad(err, TDB_E_INVAL, &ew, "enumeration '%s': its "
                          "values are not loaded", name);
        struct tdb_enumeration add = {.type = e->type,
                                      .cell_val_num = e->cell_val_num};
        add.name = (char *)name;
        if ((rc = sj_enum_values(o, &ew, &add, err))) {
            free(add.data);
            free(add.offsets);
            return rc;
        }
        uint64_t nd = e->data_size + add.data_size;
        uint64_t no = e->offsets_size + add.offsets_size;
        uint8_t *d = malloc(nd ? (size_t)nd : 1);
        uint8_t *off = no ? malloc((size_t)no) : NULL;
        if (!d || (no && !off)) {
            free(d);
            free(off);
            free(add.data);
            free(add.offsets);
            return sj_nomem(err);
        }
        if (e->data_size)
            memcpy(d, e->data, (size_t)e->data_size);
        if (add.data_size)
            memcpy(d + e->data_size, add.data, (size_t)add.data_size);
        if (e->offsets_size)
            memcpy(off, e->offsets, (size_t)e->offsets_size);
        for (uint64_t j = 0; j < add.offsets_size / 8; j++)
            tdb_st64(off + e->offsets_size + 8 * j,
                         tdb_le64(add.offsets + 8 * j) + e->data_size);
        free(add.data);
        free(add.offsets);
        free(e->data);
        free(e->offsets);
        e->data = d;
        e->data_size = nd;
        e->offsets = off;
        e->offsets_size = no;
        uint64_t dup = 0;
        if ((rc = sj_enum_dup(e, &dup, err)) < 0)
            return rc;
        if (rc)
            return sj_bad(err, TDB_E_INVAL, &ew, "enumeration '%s' would hold "
                          "a value twice", name);
        free(e->path);
        e->path = NULL;
        if ((rc = sj_enum_path(e, err)))
            return rc;
        e->unwritten = true;
    }
    return 0;
}

static void sj_ranges_free(struct tdb_range *r, uint32_t n)
{
    for (uint32_t i = 0; r && i < n; i++) {
        free(r[i].vlo);
        free(r[i].vhi);
    }
    free(r);
}

/* expand_current_domain: [[lo, hi], ...], the new current domain, which
 * holds the old one (TileDB's ArraySchema::expand_current_domain: it is
 * only expanded; an array without one gets one). */
static int sj_evolve_current_domain(json_t *cd, const struct sj_where *top,
                                    struct tdb_schema *s,
                                    struct tdb_error *err)
{
    struct sj_where w;
    sj_at(&w, top, "expand_current_domain");
    if (!cd || json_is_null(cd))
        return 0;
    struct tdb_range *old = s->has_current_domain ? s->current_domain : NULL;
    bool had = s->has_current_domain && s->current_domain;
    s->current_domain = NULL;
    s->has_current_domain = false;
    int rc = sj_current_domain(cd, &w, s, err);
    for (uint32_t d = 0; !rc && had && d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        const struct tdb_range *n = &s->current_domain[d], *o = &old[d];
        bool var = dim->cell_val_num == TDB_VAR_NUM;
        uint64_t vs = tdb_dt_size(dim->type);
        int lo = var ? tdb_value_cmp(dim->type, n->vlo, n->vlo_size, o->vlo,
                                     o->vlo_size)
                     : tdb_value_cmp(dim->type, n->lo, vs, o->lo, vs);
        int hi = var ? tdb_value_cmp(dim->type, n->vhi, n->vhi_size, o->vhi,
                                     o->vhi_size)
                     : tdb_value_cmp(dim->type, n->hi, vs, o->hi, vs);
        if (lo > 0 || hi < 0) {
            struct sj_where dw;
            sj_at(&dw, &w, "[%u]", d);
            rc = sj_bad(err, TDB_E_INVAL, &dw, "dimension '%s': the current "
                        "domain can only be expanded, and this leaves out "
                        "some of it", dim->name);
        }
    }
    if (rc) {
        sj_ranges_free(s->current_domain, s->ndims);
        s->current_domain = old;
        s->has_current_domain = had;
        return rc;
    }
    sj_ranges_free(old, s->ndims);
    return 0;
}

int tdb_schema_evolve_json(struct tdb_schema *s, const char *text, size_t len,
                           struct tdb_error *err)
{
    static const char *const known[] = {"add_attributes", "drop_attributes",
                                        "add_enumerations",
                                        "extend_enumerations",
                                        "expand_current_domain", NULL};
    struct sj_where top = {""};
    json_error_t je;
    json_t *root = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)
                        : NULL;
    if (!root)
        return tdb_err(err, TDB_E_INVAL, "evolution JSON: line %d column %d: "
                       "%s", text ? je.line : 0, text ? je.column : 0,
                       text ? je.text : "no text");
    int rc;
    if (!json_is_object(root))
        rc = tdb_err(err, TDB_E_INVAL, "evolution JSON: expected an object");
    else if (!(rc = sj_known_keys(root, known, &top, err)) &&
             !(rc = sj_evolve_add_enums(json_object_get(root,
                                                        "add_enumerations"),
                                        &top, s, err)) &&
             !(rc = sj_evolve_extend_enums(
                   json_object_get(root, "extend_enumerations"), &top, s,
                   err)) &&
             !(rc = sj_evolve_drops(json_object_get(root, "drop_attributes"),
                                    &top, s, err)) &&
             !(rc = sj_evolve_adds(json_object_get(root, "add_attributes"),
                                   &top, s, err)) &&
             !(rc = sj_evolve_current_domain(
                   json_object_get(root, "expand_current_domain"), &top, s,
                   err)) &&
             (rc = tdb_schema_check(s, err)))
        tdb_err_ctx(err, rc, "the evolved schema");
    json_decref(root);
    return rc;
}
