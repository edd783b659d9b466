/* schema_json_fields.c: the schema JSON's dimensions, attributes,
 * current domain and enumerations. */
#include "write/schema_json_priv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- dimensions */

/* A var-sized dimension ("var": true): STRING_ASCII, without domain or
 * tile extent. */
static int sj_dim_var(json_t *o, const struct sj_where *w, struct tdb_dim *d,
                      struct tdb_error *err)
{
    struct sj_where k;
    sj_at(&k, w, "datatype");
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
    return 0;
}

/* A fixed-size dimension: its datatype, "domain" and "tile_extent". */
static int sj_dim_fixed(json_t *o, const struct sj_where *w,
                        struct tdb_dim *d, struct tdb_error *err)
{
    struct sj_where k;
    int rc;
    unsigned sz = tdb_dt_size(d->type);
    sj_at(&k, w, "datatype");
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
    return 0;
}

int sj_dim(json_t *o, const struct sj_where *w, struct tdb_dim *d,
           const struct tdb_pipeline *coords, struct tdb_error *err)
{
    static const char *const known[] = {"name", "datatype", "domain",
                                        "tile_extent", "var", "filters",
                                        "filters_max_chunk_size", NULL};
    bool var;
    int rc;
    if ((rc = sj_named(o, w, known, &d->name, &d->type, err)) ||
        (rc = sj_bool(o, "var", false, w, &var, err)))
        return rc;
    if ((rc = var ? sj_dim_var(o, w, d, err) : sj_dim_fixed(o, w, d, err)))
        return rc;
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

int sj_attr(json_t *o, const struct sj_where *w, struct tdb_attr *a,
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

int sj_current_domain(json_t *cd, const struct sj_where *w,
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


/* ----------------------------------------------------------- enumerations */

/* A new enumeration file name: __<32 hex>_0, as TileDB names them. */
int sj_enum_path(struct tdb_enumeration *en, struct tdb_error *err)
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
int sj_enum_values(json_t *e, const struct sj_where *ew,
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
int sj_enumeration(json_t *e, const struct sj_where *ew,
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
int sj_enumerations(json_t *o, const struct sj_where *w,
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
