/* schema_json_filters.c: the schema JSON's filter pipelines, each
 * filter's name and options. */
#include "write/schema_json_priv.h"
#include "filters/options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
int sj_pipeline(json_t *obj, const char *key,
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
int sj_named(json_t *o, const struct sj_where *w,
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
