/* schema_json_evolve.c: a schema evolution from its JSON (drops, adds,
 * enumerations added and extended, the current domain). */
#include "write/schema_json_priv.h"
#include "core/value.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

/* e's values followed by add's (its offsets moved past e's data); add's
 * buffers are freed either way. */
static int sj_enum_append(struct tdb_enumeration *e,
                          struct tdb_enumeration *add, struct tdb_error *err)
{
    uint64_t nd = e->data_size + add->data_size;
    uint64_t no = e->offsets_size + add->offsets_size;
    uint8_t *d = malloc(nd ? (size_t)nd : 1);
    uint8_t *off = no ? malloc((size_t)no) : NULL;
    if (!d || (no && !off)) {
        free(d);
        free(off);
        free(add->data);
        free(add->offsets);
        return sj_nomem(err);
    }
    if (e->data_size)
        memcpy(d, e->data, (size_t)e->data_size);
    if (add->data_size)
        memcpy(d + e->data_size, add->data, (size_t)add->data_size);
    if (e->offsets_size)
        memcpy(off, e->offsets, (size_t)e->offsets_size);
    for (uint64_t j = 0; j < add->offsets_size / 8; j++)
        tdb_st64(off + e->offsets_size + 8 * j,
                 tdb_le64(add->offsets + 8 * j) + e->data_size);
    free(add->data);
    free(add->offsets);
    free(e->data);
    free(e->offsets);
    e->data = d;
    e->data_size = nd;
    e->offsets = off;
    e->offsets_size = no;
    return 0;
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
        if ((rc = sj_enum_append(e, &add, err)))
            return rc;
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
