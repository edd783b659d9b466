/* schema.c: array schemas, format versions 1-23, read
 * (format_spec/array_schema.md, enumeration.md, current_domain.md); their
 * enumeration files are in schema_enum.c, the version-22 serialisation in
 * schema_write.c. */
#include "model/schema_internal.h"
#include "model/generic_tile.h"
#include "core/names.h"
#include "model/arraydir.h"

#include <stdio.h>
#include <stdlib.h>

static void schema_part(struct schema_ctx *x, const char *kind, uint32_t i)
{
    if (kind)
        snprintf(x->part, sizeof x->part, "%s %u: ", kind, i);
    else
        x->part[0] = '\0';
}

/* Reads `len` bytes into a new NUL-terminated string (capped). */
static int schema_str(struct schema_ctx *x, uint64_t len, uint64_t cap,
                      char **out, const char *field)
{
    const uint8_t *p;
    if (len > cap)
        return schema_corrupt(x, field, len);
    if (len > tdb_cur_left(&x->c) || tdb_cur_bytes(&x->c, (size_t)len, &p))
        return schema_trunc(x, field);
    char *s = malloc((size_t)len + 1);
    if (!s)
        return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory", x->what);
    if (len)
        memcpy(s, p, (size_t)len);
    s[len] = '\0';
    *out = s;
    return 0;
}

static int schema_str32(struct schema_ctx *x, char **out, const char *field)
{
    uint32_t len;
    int rc = schema_u32(x, &len, field);
    return rc ? rc : schema_str(x, len, TDB_MAX_NAME, out, field);
}

static int schema_pipeline(struct schema_ctx *x, struct tdb_pipeline *p,
                           const char *field)
{
    int rc = tdb_pipeline_read(p, &x->c, x->version, x->err);
    if (rc)
        return tdb_err_ctx(x->err, rc, "%s: %s%s", x->what, x->part, field);
    return 0;
}

/* Checks a count read from the file against the bytes that are left. */
static int schema_count(struct schema_ctx *x, uint32_t n, size_t min_each,
                        const char *field)
{
    if ((uint64_t)n > tdb_cur_left(&x->c) / min_each)
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: array schema (version %u) truncated or corrupt: "
                       "%s is %u, more than the %zu bytes left can hold",
                       x->what, x->version, field, n, tdb_cur_left(&x->c));
    return 0;
}

static void *schema_calloc(struct schema_ctx *x, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory", x->what);
    return p;
}

/* ------------------------------------------------------------- dimensions */

/* A dimension's datatype and cell_val_num (of the domain before version
 * 5), its filters, checked. */
static int schema_dim_type(struct schema_ctx *x, struct tdb_dim *d,
                           unsigned domain_type)
{
    int rc;
    if (x->version >= 5) {
        uint8_t t;
        if ((rc = schema_u8(x, &t, "dimension datatype")) ||
            (rc = schema_u32(x, &d->cell_val_num, "dimension cell_val_num")))
            return rc;
        d->type = t;
        if ((rc = schema_pipeline(x, &d->filters, "dimension filters")))
            return rc;
    } else {
        d->type = domain_type;
        d->cell_val_num = tdb_dt_is_string(domain_type) ? TDB_VAR_NUM : 1;
    }
    unsigned sz = tdb_dt_size(d->type);
    if (sz == 0 || sz > 8 || d->type == TDB_ANY)
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: dimension '%s' has an invalid datatype %u",
                       x->what, d->name, d->type);
    bool var = d->cell_val_num == TDB_VAR_NUM;
    if (d->cell_val_num != 1 && !(var && tdb_dt_is_string(d->type)))
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: dimension '%s' has an invalid cell_val_num %u",
                       x->what, d->name, d->cell_val_num);
    return 0;
}

/* A dimension's domain (none for strings) and its tile extent, when it
 * has one. */
static int schema_dim_domain(struct schema_ctx *x, struct tdb_dim *d)
{
    unsigned sz = tdb_dt_size(d->type);
    uint64_t dom_size = 2 * (uint64_t)sz;
    int rc;
    if (x->version >= 5 &&
        (rc = schema_u64(x, &dom_size, "dimension domain size")))
        return rc;
    const uint8_t *p;
    if (d->cell_val_num == TDB_VAR_NUM) {
        /* String dimensions have no domain (size 0 since version 5). */
        if (dom_size > tdb_cur_left(&x->c) ||
            tdb_cur_bytes(&x->c, (size_t)dom_size, &p))
            return schema_trunc(x, "dimension domain");
    } else {
        if (dom_size != 2 * (uint64_t)sz)
            return tdb_err(x->err, TDB_E_CORRUPT,
                           "%s: dimension '%s' has a domain of %llu bytes, "
                           "expected %u", x->what, d->name,
                           (unsigned long long)dom_size, 2 * sz);
        if (tdb_cur_bytes(&x->c, 2 * sz, &p))
            return schema_trunc(x, "dimension domain");
        memcpy(d->lo, p, sz);
        memcpy(d->hi, p + sz, sz);
    }
    uint8_t null_extent;
    if ((rc = schema_u8(x, &null_extent, "dimension null tile extent flag")))
        return rc;
    if (null_extent == 0) {
        if (tdb_cur_bytes(&x->c, sz, &p))
            return schema_trunc(x, "dimension tile extent");
        memcpy(d->extent, p, sz);
        d->has_extent = true;
    }
    return 0;
}

static int schema_read_dim(struct schema_ctx *x, struct tdb_dim *d,
                           unsigned domain_type,
                           const struct tdb_pipeline *coords)
{
    int rc = schema_str32(x, &d->name, "dimension name");
    if (rc || (rc = schema_dim_type(x, d, domain_type)))
        return rc;
    /* TileDB gives a dimension without filters of its own the coordinate
     * filters; so do we, so that readers need look in one place. */
    if (d->filters.n == 0 && coords->n > 0) {
        tdb_pipeline_free(&d->filters);
        if (tdb_pipeline_copy(&d->filters, coords))
            return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory",
                           x->what);
    }
    return schema_dim_domain(x, d);
}

static int schema_read_domain(struct schema_ctx *x, struct tdb_schema *s)
{
    int rc;
    unsigned domain_type = TDB_INT32;
    if (x->version < 5) {
        uint8_t t;
        if ((rc = schema_u8(x, &t, "domain datatype")))
            return rc;
        domain_type = t;
    }
    uint32_t n;
    if ((rc = schema_u32(x, &n, "number of dimensions")) ||
        (rc = schema_count(x, n, SCHEMA_MIN_DIM, "number of dimensions")))
        return rc;
    if (n == 0)
        return schema_corrupt(x, "number of dimensions", 0);
    if (!(s->dims = schema_calloc(x, n, sizeof *s->dims)))
        return TDB_E_NOMEM;
    s->ndims = n;
    for (uint32_t i = 0; i < n; i++) {
        schema_part(x, "dimension", i);
        if ((rc = schema_read_dim(x, &s->dims[i], domain_type,
                                  &s->coords_filters)))
            return rc;
    }
    schema_part(x, NULL, 0);
    return 0;
}

/* ------------------------------------------------------------- attributes */

/* An attribute's fill value: stored since version 6 (cell bytes of a
 * fixed cell, var: any), else the type's default (at most
 * SCHEMA_MAX_FILLS in one schema). */
static int schema_attr_fill(struct schema_ctx *x, struct tdb_attr *a,
                            uint64_t cell)
{
    bool var = a->cell_val_num == TDB_VAR_NUM;
    if (x->version >= 6) {
        uint64_t n;
        const uint8_t *p;
        int rc = schema_u64(x, &n, "attribute fill value size");
        if (rc)
            return rc;
        if (n == 0 || (!var && n != cell))
            return tdb_err(x->err, TDB_E_CORRUPT,
                           "%s: attribute '%s' has a fill value of %llu "
                           "bytes", x->what, a->name, (unsigned long long)n);
        if (n > tdb_cur_left(&x->c) || tdb_cur_bytes(&x->c, (size_t)n, &p))
            return schema_trunc(x, "attribute fill value");
        if (!(a->fill = malloc((size_t)n)))
            return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory",
                           x->what);
        memcpy(a->fill, p, (size_t)n);
        a->fill_size = n;
        return 0;
    }
    uint64_t n = var ? 1 : a->cell_val_num;
    if (n * tdb_dt_size(a->type) > SCHEMA_MAX_FILLS - x->fills)
        return tdb_err(x->err, TDB_E_CORRUPT, "%s: attribute '%s': "
                       "default fill values of more than %llu MiB in "
                       "one schema", x->what, a->name,
                       (unsigned long long)(SCHEMA_MAX_FILLS >> 20));
    if (schema_default_fill(a->type, a->cell_val_num, &a->fill,
                            &a->fill_size))
        return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory", x->what);
    x->fills += a->fill_size;
    return 0;
}

/* What later versions add to an attribute: nullability and the fill's
 * validity (7), its order (17), its enumeration's name (20). */
static int schema_attr_tail(struct schema_ctx *x, struct tdb_attr *a)
{
    int rc;
    if (x->version >= 7) {
        if ((rc = schema_bool(x, &a->nullable, "attribute nullable flag")) ||
            (rc = schema_u8(x, &a->fill_validity,
                            "attribute fill value validity")))
            return rc;
    }
    if (x->version >= 17) {
        if ((rc = schema_u8(x, &a->order, "attribute order")))
            return rc;
        if (a->order > 2)
            return schema_corrupt(x, "attribute order", a->order);
    }
    if (x->version >= 20) {
        uint32_t len;
        if ((rc = schema_u32(x, &len, "attribute enumeration name length")))
            return rc;
        if (len > 0 && (rc = schema_str(x, len, TDB_MAX_NAME,
                                        &a->enumeration,
                                        "attribute enumeration name")))
            return rc;
    }
    return 0;
}

static int schema_read_attr(struct schema_ctx *x, struct tdb_attr *a)
{
    int rc;
    uint8_t t;
    if ((rc = schema_str32(x, &a->name, "attribute name")) ||
        (rc = schema_u8(x, &t, "attribute datatype")) ||
        (rc = schema_u32(x, &a->cell_val_num, "attribute cell_val_num")))
        return rc;
    a->type = t;
    unsigned sz = tdb_dt_size(t);
    if (sz == 0)
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: attribute '%s' has an unknown datatype %u",
                       x->what, a->name, t);
    if (a->cell_val_num == 0)
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: attribute '%s' has cell_val_num 0", x->what,
                       a->name);
    if ((rc = schema_pipeline(x, &a->filters, "attribute filters")))
        return rc;
    bool var = a->cell_val_num == TDB_VAR_NUM;
    uint64_t cell = 0;
    if (!var && (!tdb_mul_ok(a->cell_val_num, sz, &cell) ||
                 cell > SCHEMA_MAX_CELL))
        return tdb_err(x->err, TDB_E_NOMEM,
                       "%s: attribute '%s' cells are too large (%u values)",
                       x->what, a->name, a->cell_val_num);
    if ((rc = schema_attr_fill(x, a, cell)))
        return rc;
    return schema_attr_tail(x, a);
}

/* ------------------------------------------------------- dimension labels */

static int schema_read_label(struct schema_ctx *x, struct tdb_label *l,
                             uint32_t ndims)
{
    /* The layout TileDB writes (dimension_label.cc) since version 18; the
     * table in array_schema.md describes an earlier, experimental one. */
    int rc;
    uint64_t uri_len;
    uint8_t t;
    if ((rc = schema_u32(x, &l->dim, "dimension label dimension index")) ||
        (rc = schema_str32(x, &l->name, "dimension label name")) ||
        (rc = schema_bool(x, &l->relative, "dimension label relative flag")) ||
        (rc = schema_u64(x, &uri_len, "dimension label URI length")) ||
        (rc = schema_str(x, uri_len, TDB_MAX_NAME, &l->uri,
                         "dimension label URI")) ||
        (rc = schema_str32(x, &l->attr_name,
                           "dimension label attribute name")) ||
        (rc = schema_u8(x, &l->order, "dimension label order")) ||
        (rc = schema_u8(x, &t, "dimension label datatype")) ||
        (rc = schema_u32(x, &l->cell_val_num,
                         "dimension label cell_val_num")) ||
        (rc = schema_bool(x, &l->external, "dimension label external flag")))
        return rc;
    l->type = t;
    if (l->dim >= ndims)
        return schema_corrupt(x, "dimension label dimension index", l->dim);
    if (tdb_dt_size(t) == 0)
        return schema_corrupt(x, "dimension label datatype", t);
    return 0;
}

/* ----------------------------------------------------------- enumerations */

static int schema_read_enum(struct schema_ctx *x, struct tdb_enumeration *e)
{
    char *file = NULL;
    int rc;
    if ((rc = schema_str32(x, &e->name, "enumeration name")) ||
        (rc = schema_str32(x, &file, "enumeration file name")))
        return rc;
    if (!schema_safe_filename(file)) {
        rc = tdb_err(x->err, TDB_E_CORRUPT,
                     "%s: enumeration '%s' has an invalid file name '%s'",
                     x->what, e->name, file);
        free(file);
        return rc;
    }
    e->path = tdb_path_join("__schema/__enumerations", file);
    free(file);
    if (!e->path)
        return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory", x->what);
    return 0;
}

/* --------------------------------------------------------- current domain */

/* One dimension's range of the current domain: two values of a fixed
 * size, or a var range's sizes and bytes. */
static int schema_cd_range(struct schema_ctx *x, const struct tdb_dim *d,
                           struct tdb_range *r)
{
    const uint8_t *p;
    if (d->cell_val_num != TDB_VAR_NUM) {
        unsigned sz = tdb_dt_size(d->type);
        if (tdb_cur_bytes(&x->c, 2 * sz, &p))
            return schema_trunc(x, "current domain range");
        memcpy(r->lo, p, sz);
        memcpy(r->hi, p + sz, sz);
        return 0;
    }
    uint64_t size, start;
    int rc;
    if ((rc = schema_u64(x, &size, "current domain range size")) ||
        (rc = schema_u64(x, &start, "current domain range start size")))
        return rc;
    if (start > size)
        return schema_corrupt(x, "current domain range start size", start);
    if (size > tdb_cur_left(&x->c) || tdb_cur_bytes(&x->c, (size_t)size, &p))
        return schema_trunc(x, "current domain range");
    r->vlo_size = start;
    r->vhi_size = size - start;
    r->vlo = malloc(start ? (size_t)start : 1);
    r->vhi = malloc(size - start ? (size_t)(size - start) : 1);
    if (!r->vlo || !r->vhi)
        return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory", x->what);
    if (start)
        memcpy(r->vlo, p, (size_t)start);
    if (size - start)
        memcpy(r->vhi, p + start, (size_t)(size - start));
    return 0;
}

static int schema_read_current_domain(struct schema_ctx *x,
                                      struct tdb_schema *s)
{
    uint32_t cd_version;
    bool empty = false;
    uint8_t type;
    int rc;
    if ((rc = schema_u32(x, &cd_version, "current domain version")))
        return rc;
    if (cd_version > SCHEMA_CURRENT_DOMAIN_VERSION)
        return tdb_err(x->err, TDB_E_UNSUPPORTED,
                       "%s: current domain version %u is newer than %d",
                       x->what, cd_version, SCHEMA_CURRENT_DOMAIN_VERSION);
    if ((rc = schema_bool(x, &empty, "current domain empty flag")))
        return rc;
    if (empty)
        return 0;
    if ((rc = schema_u8(x, &type, "current domain type")))
        return rc;
    if (type != SCHEMA_NDRECTANGLE)
        return tdb_err(x->err, TDB_E_UNSUPPORTED,
                       "%s: current domain type %u is not an NDRectangle",
                       x->what, type);
    if (!(s->current_domain =
              schema_calloc(x, s->ndims, sizeof *s->current_domain)))
        return TDB_E_NOMEM;
    for (uint32_t i = 0; i < s->ndims; i++)
        if ((rc = schema_cd_range(x, &s->dims[i], &s->current_domain[i])))
            return rc;
    s->has_current_domain = true;
    return 0;
}

/* ----------------------------------------------------------------- schema */

/* The version, the array type, the orders, the capacity and the
 * pipelines of coordinates, offsets and validity. */
static int schema_parse_head(struct schema_ctx *x, struct tdb_schema *s)
{
    int rc;
    uint8_t b;
    if ((rc = schema_u32(x, &s->version, "the format version")))
        return rc;
    x->version = s->version;
    if (s->version == 0 || s->version > SCHEMA_MAX_VERSION)
        return tdb_err(x->err, TDB_E_UNSUPPORTED,
                       "%s: array schema format version %u is not supported "
                       "(1 to %d are)", x->what, s->version,
                       SCHEMA_MAX_VERSION);
    if (s->version >= 5 &&
        (rc = schema_bool(x, &s->allows_dups, "allows_dups flag")))
        return rc;
    if ((rc = schema_u8(x, &b, "array type")))
        return rc;
    if (b != TDB_DENSE && b != TDB_SPARSE)
        return schema_corrupt(x, "array type", b);
    s->array_type = b;
    if ((rc = schema_u8(x, &b, "tile order")))
        return rc;
    if (b != TDB_ROW_MAJOR && b != TDB_COL_MAJOR)
        return schema_corrupt(x, "tile order", b);
    s->tile_order = b;
    if ((rc = schema_u8(x, &b, "cell order")))
        return rc;
    if (b > TDB_HILBERT)
        return schema_corrupt(x, "cell order", b);
    s->cell_order = b;
    if ((rc = schema_u64(x, &s->capacity, "capacity")) ||
        (rc = schema_pipeline(x, &s->coords_filters, "coords filters")) ||
        (rc = schema_pipeline(x, &s->offsets_filters, "offsets filters")))
        return rc;
    if (s->version >= 7 &&
        (rc = schema_pipeline(x, &s->validity_filters, "validity filters")))
        return rc;
    return 0;
}

static int schema_parse_attrs(struct schema_ctx *x, struct tdb_schema *s)
{
    uint32_t n;
    int rc;
    if ((rc = schema_u32(x, &n, "number of attributes")) ||
        (rc = schema_count(x, n, SCHEMA_MIN_ATTR, "number of attributes")))
        return rc;
    if (!(s->attrs = schema_calloc(x, n, sizeof *s->attrs)))
        return TDB_E_NOMEM;
    s->nattrs = n;
    for (uint32_t i = 0; i < n; i++) {
        schema_part(x, "attribute", i);
        if ((rc = schema_read_attr(x, &s->attrs[i])))
            return rc;
    }
    schema_part(x, NULL, 0);
    if (s->array_type == TDB_DENSE && n == 0)
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: dense array schema without attributes", x->what);
    return 0;
}

static int schema_parse_labels(struct schema_ctx *x, struct tdb_schema *s)
{
    uint32_t n;
    int rc;
    if ((rc = schema_u32(x, &n, "number of dimension labels")) ||
        (rc = schema_count(x, n, SCHEMA_MIN_LABEL,
                           "number of dimension labels")))
        return rc;
    if (!(s->labels = schema_calloc(x, n, sizeof *s->labels)))
        return TDB_E_NOMEM;
    s->nlabels = n;
    for (uint32_t i = 0; i < n; i++) {
        schema_part(x, "dimension label", i);
        if ((rc = schema_read_label(x, &s->labels[i], s->ndims)))
            return rc;
    }
    schema_part(x, NULL, 0);
    return 0;
}

/* The enumerations, and that every attribute's is among them. */
static int schema_parse_enums(struct schema_ctx *x, struct tdb_schema *s)
{
    uint32_t n;
    int rc;
    if ((rc = schema_u32(x, &n, "number of enumerations")) ||
        (rc = schema_count(x, n, SCHEMA_MIN_ENUM,
                           "number of enumerations")))
        return rc;
    if (!(s->enums = schema_calloc(x, n, sizeof *s->enums)))
        return TDB_E_NOMEM;
    s->nenums = n;
    for (uint32_t i = 0; i < n; i++) {
        schema_part(x, "enumeration", i);
        if ((rc = schema_read_enum(x, &s->enums[i])))
            return rc;
    }
    schema_part(x, NULL, 0);
    for (uint32_t i = 0; i < s->nattrs; i++) {
        const char *en = s->attrs[i].enumeration;
        uint32_t j = 0;
        while (en && j < s->nenums && strcmp(s->enums[j].name, en))
            j++;
        if (en && j == s->nenums)
            return tdb_err(x->err, TDB_E_CORRUPT,
                           "%s: attribute '%s' refers to enumeration "
                           "'%s', which the schema does not list",
                           x->what, s->attrs[i].name, en);
    }
    return 0;
}

static int schema_parse_body(struct schema_ctx *x, struct tdb_schema *s)
{
    int rc;
    if ((rc = schema_parse_head(x, s)) || (rc = schema_read_domain(x, s)) ||
        (rc = schema_parse_attrs(x, s)))
        return rc;
    if (s->version >= 18 && (rc = schema_parse_labels(x, s)))
        return rc;
    if (s->version >= 20 && (rc = schema_parse_enums(x, s)))
        return rc;
    if (s->version >= 22 && (rc = schema_read_current_domain(x, s)))
        return rc;
    return 0;
}

int tdb_schema_parse(const uint8_t *p, size_t size, const char *what,
                     struct tdb_schema **out, struct tdb_error *err)
{
    struct schema_ctx x = {.what = what ? what : "array schema", .err = err};
    *out = NULL;
    tdb_cur_init(&x.c, p, size);
    struct tdb_schema *s = calloc(1, sizeof *s);
    if (!s)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", x.what);
    int rc = schema_parse_body(&x, s);
    if (rc) {
        tdb_schema_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* Reads the encryption type of the generic tile at the start of `path`. */
static int schema_encryption(const struct tdb_io *io, const char *path,
                             uint8_t *enc, struct tdb_error *err)
{
    uint8_t head[64];
    uint64_t size;
    int rc = tdb_io_size(io, path, &size, err);
    if (rc)
        return rc;
    size_t n = size < sizeof head ? (size_t)size : sizeof head;
    if ((rc = tdb_io_read(io, path, 0, head, n, err)))
        return rc;
    if ((rc = tdb_generic_tile_encryption(head, n, enc)))
        return tdb_err(err, rc, "%s: cannot read the generic tile header",
                       path);
    return 0;
}

/* Prefixes each enumeration path with the folder that holds __schema. */
static int schema_root_enum_paths(struct tdb_schema *s, const char *path,
                                  struct tdb_error *err)
{
    /* path is ".../__schema/NAME" or ".../__array_schema.tdb". */
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) : 0;
    static const char sdir[] = "__schema";
    size_t root = dir;
    if (dir >= sizeof sdir - 1 &&
        !memcmp(path + dir - (sizeof sdir - 1), sdir, sizeof sdir - 1) &&
        (dir == sizeof sdir - 1 || path[dir - sizeof sdir] == '/'))
        root = dir > sizeof sdir - 1 ? dir - sizeof sdir : 0;
    if (root == 0)
        return 0;
    for (uint32_t i = 0; i < s->nenums; i++) {
        char *prefix = strndup(path, root);
        char *full = prefix ? tdb_path_join(prefix, s->enums[i].path) : NULL;
        free(prefix);
        if (!full)
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
        free(s->enums[i].path);
        s->enums[i].path = full;
    }
    return 0;
}

int tdb_schema_load(const struct tdb_io *io, const char *path,
                    const uint8_t *key, struct tdb_schema **out,
                    struct tdb_error *err)
{
    struct tdb_buf buf = {0};
    uint64_t next;
    uint8_t enc = TDB_NO_ENCRYPTION;
    struct tdb_schema *s = NULL;
    *out = NULL;
    int rc = schema_encryption(io, path, &enc, err);
    if (!rc)
        rc = tdb_generic_tile_read(&(struct tdb_gt_file){io, path, 0}, key,
                                   &buf, &next, err);
    if (!rc)
        rc = tdb_schema_parse(buf.data, buf.len, path, &s, err);
    tdb_buf_free(&buf);
    if (rc)
        return rc;
    s->encryption = enc;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!(s->name = strdup(base))) {
        tdb_schema_free(s);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    }
    if (!tdb_tsname_times(base, &s->t1, &s->t2))
        s->t1 = s->t2 = 0;
    if ((rc = schema_root_enum_paths(s, path, err))) {
        tdb_schema_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int tdb_array_encryption(const struct tdb_io *io, const uint8_t *key,
                         int *enc, struct tdb_error *err)
{
    struct tdb_arraydir *d = NULL;
    struct tdb_schema *sc = NULL;
    int rc;

    *enc = TDB_NO_ENCRYPTION;
    if (!tdb_is_array(io, ""))
        return tdb_err(err, TDB_E_INVAL, "not a TileDB array");
    if (!(rc = tdb_arraydir_load(io, 0, UINT64_MAX, &d, err))) {
        if (!d->nschemas)
            rc = tdb_err(err, TDB_E_CORRUPT, "the array has no schema");
        else
            rc = tdb_schema_load(io,
                                 d->schemas[d->schema_latest < d->nschemas
                                                ? d->schema_latest : 0].path,
                                 key, &sc, err);
    }
    if (!rc)
        *enc = sc->encryption;
    tdb_schema_free(sc);
    tdb_arraydir_free(d);
    return rc;
}

void tdb_attr_clear(struct tdb_attr *a)
{
    free(a->name);
    tdb_pipeline_free(&a->filters);
    free(a->fill);
    free(a->enumeration);
    memset(a, 0, sizeof *a);
}

void tdb_schema_free(struct tdb_schema *s)
{
    if (!s)
        return;
    free(s->name);
    tdb_pipeline_free(&s->coords_filters);
    tdb_pipeline_free(&s->offsets_filters);
    tdb_pipeline_free(&s->validity_filters);
    for (uint32_t i = 0; s->dims && i < s->ndims; i++) {
        free(s->dims[i].name);
        tdb_pipeline_free(&s->dims[i].filters);
    }
    free(s->dims);
    for (uint32_t i = 0; s->attrs && i < s->nattrs; i++)
        tdb_attr_clear(&s->attrs[i]);
    free(s->attrs);
    for (uint32_t i = 0; s->labels && i < s->nlabels; i++) {
        free(s->labels[i].name);
        free(s->labels[i].uri);
        free(s->labels[i].attr_name);
    }
    free(s->labels);
    for (uint32_t i = 0; s->enums && i < s->nenums; i++) {
        free(s->enums[i].name);
        free(s->enums[i].path);
        schema_enum_clear_data(&s->enums[i]);
    }
    free(s->enums);
    for (uint32_t i = 0; s->current_domain && i < s->ndims; i++) {
        free(s->current_domain[i].vlo);
        free(s->current_domain[i].vhi);
    }
    free(s->current_domain);
    free(s);
}

/* ---------------------------------------------------------------- lookups */

int tdb_schema_attr_index(const struct tdb_schema *s, const char *name)
{
    for (uint32_t i = 0; s && name && i < s->nattrs; i++)
        if (s->attrs[i].name && !strcmp(s->attrs[i].name, name))
            return (int)i;
    return -1;
}

int tdb_schema_dim_index(const struct tdb_schema *s, const char *name)
{
    for (uint32_t i = 0; s && name && i < s->ndims; i++)
        if (s->dims[i].name && !strcmp(s->dims[i].name, name))
            return (int)i;
    return -1;
}
