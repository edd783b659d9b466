/* schema_json_values.c: the schema JSON's places and errors, its big
 * integers, and its scalar values (integers, numbers, strings, booleans,
 * datatypes). */
#include "write/schema_json_priv.h"
#include "core/value.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sj_at(struct sj_where *w, const struct sj_where *parent,
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

int sj_bad(struct tdb_error *err, int code, const struct sj_where *w,
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

int sj_nomem(struct tdb_error *err)
{
    return tdb_err(err, TDB_E_NOMEM, "schema JSON: out of memory");
}

/* Refuses keys of `obj` that are not in `known` (NULL-terminated), so a
 * misspelt key is an error rather than a silent default. */
int sj_known_keys(json_t *obj, const char *const *known,
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

/* Whether number token t[n] (its first character a digit or '-') is an
 * integer literal outside int64. */
static bool sj_big_integer(const char *t, size_t n)
{
    for (size_t x = 1; x < n; x++)
        if (!isdigit((unsigned char)t[x]))
            return false;
    if (n < 19)
        return false;
    char num[32];
    if (n >= sizeof num)
        return true;
    memcpy(num, t, n);
    num[n] = '\0';
    errno = 0;
    (void)strtoll(num, NULL, 10);
    return errno == ERANGE;
}

/* jansson refuses integers outside int64; uint64 values above INT64_MAX
 * (a UINT64 domain) are legal here.  This lexical pass (strings skipped,
 * nothing else interpreted) puts such integer literals in quotes; the
 * number readers below accept decimal strings. */
int sj_quote_big(const char *text, size_t len, char **out,
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
            if (sj_big_integer(text + i, j - i)) {
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
int sj_int(json_t *v, const struct sj_where *w, bool *neg,
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
int sj_uint(json_t *v, const struct sj_where *w, uint64_t max,
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
int sj_double(json_t *v, const struct sj_where *w, double *out,
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
int sj_value(json_t *v, unsigned type, const struct sj_where *w,
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
int sj_str(json_t *obj, const char *key, bool required,
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

int sj_bool(json_t *obj, const char *key, bool def,
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
int sj_type_name(const char *name, const struct sj_where *w,
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

int sj_datatype(json_t *obj, const struct sj_where *parent,
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
