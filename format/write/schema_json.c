/* schema_json.c: an array schema (format_spec/array_schema.md, v22) from
 * the "schema" object of __array.json, checked as TileDB checks a new
 * schema: the document's top-level object and the entry point (the rest
 * in the files schema_json_priv.h lists). */
#include "write/schema_json_priv.h"

#include <stdlib.h>
#include <string.h>

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
