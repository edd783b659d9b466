/* schema_write.c: an array schema serialised as format version 22
 * writes it (format_spec/array_schema.md, current_domain.md). */
#include "model/schema_internal.h"


static int schema_write_dim(const struct tdb_dim *d, struct tdb_buf *b)
{
    unsigned sz = tdb_dt_size(d->type);
    bool var = d->cell_val_num == TDB_VAR_NUM;
    int rc;
    if (sz == 0 || sz > 8)
        return TDB_E_INVAL;
    if ((rc = schema_put_str32(b, d->name)) ||
        (rc = tdb_buf_put_u8(b, (uint8_t)d->type)) ||
        (rc = tdb_buf_put_u32(b, d->cell_val_num)) ||
        (rc = tdb_pipeline_write(&d->filters, b)) ||
        (rc = tdb_buf_put_u64(b, var ? 0 : 2 * (uint64_t)sz)))
        return rc;
    if (!var && ((rc = tdb_buf_append(b, d->lo, sz)) ||
                 (rc = tdb_buf_append(b, d->hi, sz))))
        return rc;
    if ((rc = tdb_buf_put_u8(b, d->has_extent ? 0 : 1)))
        return rc;
    return d->has_extent ? tdb_buf_append(b, d->extent, sz) : 0;
}

static int schema_write_attr(const struct tdb_attr *a, struct tdb_buf *b)
{
    uint8_t *def = NULL;
    uint64_t def_size = 0;
    const uint8_t *fill = a->fill;
    uint64_t fill_size = a->fill_size;
    int rc;
    if (!fill || fill_size == 0) {
        if (schema_default_fill(a->type, a->cell_val_num, &def, &def_size))
            return TDB_E_NOMEM;
        fill = def;
        fill_size = def_size;
    }
    if (!(rc = schema_put_str32(b, a->name)) &&
        !(rc = tdb_buf_put_u8(b, (uint8_t)a->type)) &&
        !(rc = tdb_buf_put_u32(b, a->cell_val_num)) &&
        !(rc = tdb_pipeline_write(&a->filters, b)) &&
        !(rc = tdb_buf_put_u64(b, fill_size)) &&
        !(rc = tdb_buf_append(b, fill, (size_t)fill_size)) &&
        !(rc = tdb_buf_put_u8(b, a->nullable ? 1 : 0)) &&
        !(rc = tdb_buf_put_u8(b, a->fill_validity)) &&
        !(rc = tdb_buf_put_u8(b, a->order)))
        rc = schema_put_str32(b, a->enumeration);
    free(def);
    return rc;
}

static int schema_write_label(const struct tdb_label *l, struct tdb_buf *b)
{
    size_t ulen = l->uri ? strlen(l->uri) : 0;
    int rc;
    if ((rc = tdb_buf_put_u32(b, l->dim)) ||
        (rc = schema_put_str32(b, l->name)) ||
        (rc = tdb_buf_put_u8(b, l->relative ? 1 : 0)) ||
        (rc = tdb_buf_put_u64(b, ulen)) ||
        (rc = tdb_buf_append(b, l->uri, ulen)) ||
        (rc = schema_put_str32(b, l->attr_name)) ||
        (rc = tdb_buf_put_u8(b, l->order)) ||
        (rc = tdb_buf_put_u8(b, (uint8_t)l->type)) ||
        (rc = tdb_buf_put_u32(b, l->cell_val_num)))
        return rc;
    return tdb_buf_put_u8(b, l->external ? 1 : 0);
}

static int schema_write_current_domain(const struct tdb_schema *s,
                                       struct tdb_buf *b)
{
    bool empty = !s->has_current_domain || !s->current_domain;
    int rc;
    if ((rc = tdb_buf_put_u32(b, SCHEMA_CURRENT_DOMAIN_VERSION)) ||
        (rc = tdb_buf_put_u8(b, empty ? 1 : 0)))
        return rc;
    if (empty)
        return 0;
    if ((rc = tdb_buf_put_u8(b, SCHEMA_NDRECTANGLE)))
        return rc;
    for (uint32_t i = 0; i < s->ndims; i++) {
        const struct tdb_range *r = &s->current_domain[i];
        if (s->dims[i].cell_val_num != TDB_VAR_NUM) {
            unsigned sz = tdb_dt_size(s->dims[i].type);
            if ((rc = tdb_buf_append(b, r->lo, sz)) ||
                (rc = tdb_buf_append(b, r->hi, sz)))
                return rc;
            continue;
        }
        uint64_t total;
        if (!tdb_add_ok(r->vlo_size, r->vhi_size, &total) ||
            total > SIZE_MAX)
            return TDB_E_INVAL;
        if ((rc = tdb_buf_put_u64(b, total)) ||
            (rc = tdb_buf_put_u64(b, r->vlo_size)) ||
            (rc = tdb_buf_append(b, r->vlo, (size_t)r->vlo_size)) ||
            (rc = tdb_buf_append(b, r->vhi, (size_t)r->vhi_size)))
            return rc;
    }
    return 0;
}

static int schema_serialize_body(const struct tdb_schema *s,
                                 struct tdb_buf *b, const char **part)
{
    int rc;
    *part = "header";
    if ((rc = tdb_buf_put_u32(b, SCHEMA_WRITE_VERSION)) ||
        (rc = tdb_buf_put_u8(b, s->allows_dups ? 1 : 0)) ||
        (rc = tdb_buf_put_u8(b, (uint8_t)s->array_type)) ||
        (rc = tdb_buf_put_u8(b, (uint8_t)s->tile_order)) ||
        (rc = tdb_buf_put_u8(b, (uint8_t)s->cell_order)) ||
        (rc = tdb_buf_put_u64(b, s->capacity)) ||
        (rc = tdb_pipeline_write(&s->coords_filters, b)) ||
        (rc = tdb_pipeline_write(&s->offsets_filters, b)) ||
        (rc = tdb_pipeline_write(&s->validity_filters, b)))
        return rc;
    *part = "a dimension";
    if ((rc = tdb_buf_put_u32(b, s->ndims)))
        return rc;
    for (uint32_t i = 0; i < s->ndims; i++)
        if ((rc = schema_write_dim(&s->dims[i], b)))
            return rc;
    *part = "an attribute";
    if ((rc = tdb_buf_put_u32(b, s->nattrs)))
        return rc;
    for (uint32_t i = 0; i < s->nattrs; i++)
        if ((rc = schema_write_attr(&s->attrs[i], b)))
            return rc;
    *part = "a dimension label";
    if ((rc = tdb_buf_put_u32(b, s->nlabels)))
        return rc;
    for (uint32_t i = 0; i < s->nlabels; i++)
        if ((rc = schema_write_label(&s->labels[i], b)))
            return rc;
    *part = "an enumeration";
    if ((rc = tdb_buf_put_u32(b, s->nenums)))
        return rc;
    for (uint32_t i = 0; i < s->nenums; i++) {
        const struct tdb_enumeration *e = &s->enums[i];
        const char *file = e->path ? strrchr(e->path, '/') : NULL;
        file = file ? file + 1 : e->path;
        if (!e->name || !file || !schema_safe_filename(file))
            return TDB_E_INVAL;
        if ((rc = schema_put_str32(b, e->name)) ||
            (rc = schema_put_str32(b, file)))
            return rc;
    }
    *part = "the current domain";
    return schema_write_current_domain(s, b);
}

uint32_t tdb_schema_fragment_version(const struct tdb_schema *s)
{
    return s->version >= 16 && s->version <= SCHEMA_WRITE_VERSION
               ? s->version
               : SCHEMA_WRITE_VERSION;
}

int tdb_schema_serialize(const struct tdb_schema *s, struct tdb_buf *out,
                         struct tdb_error *err)
{
    if (!s || !out || s->ndims == 0 || !s->dims ||
        (s->nattrs && !s->attrs) || (s->nlabels && !s->labels) ||
        (s->nenums && !s->enums))
        return tdb_err(err, TDB_E_INVAL, "cannot serialise an array schema "
                       "without dimensions");
    size_t start = out->len;
    const char *part = "header";
    int rc = schema_serialize_body(s, out, &part);
    if (rc) {
        out->len = start;
        return tdb_err(err, rc, "cannot serialise %s of array schema '%s'",
                       part, s->name ? s->name : "(unnamed)");
    }
    return 0;
}
