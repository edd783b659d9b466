/* schema_enum.c: the enumeration files of an array schema
 * (format_spec/enumeration.md): read, checked and written. */
#include "model/schema_internal.h"
#include "model/generic_tile.h"

/* The version, and the enumeration's name and file name the file repeats
 * (the table in enumeration.md omits them): the name must be e's, when
 * e has one. */
static int schema_enum_head(struct schema_ctx *x,
                            const struct tdb_enumeration *e)
{
    uint32_t ver, name_len, path_len;
    const uint8_t *name;
    int rc;
    if ((rc = schema_u32(x, &ver, "enumeration version")))
        return rc;
    if (ver > SCHEMA_ENUMERATION_VERSION)
        return tdb_err(x->err, TDB_E_UNSUPPORTED,
                       "%s: enumeration version %u is newer than %d",
                       x->what, ver, SCHEMA_ENUMERATION_VERSION);
    if ((rc = schema_u32(x, &name_len, "enumeration name length")))
        return rc;
    if (tdb_cur_bytes(&x->c, name_len, &name))
        return schema_trunc(x, "enumeration name");
    if (e->name && (strlen(e->name) != name_len ||
                    memcmp(e->name, name, name_len)))
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: holds enumeration '%.*s', the schema expects "
                       "'%s'", x->what, (int)(name_len > 256 ? 256 : name_len),
                       (const char *)name, e->name);
    if ((rc = schema_u32(x, &path_len, "enumeration path length")))
        return rc;
    if (tdb_cur_skip(&x->c, path_len))
        return schema_trunc(x, "enumeration path");
    return 0;
}

/* A var enumeration's offsets: 8 bytes each, rising, within its data. */
static int schema_enum_offsets(struct schema_ctx *x,
                               struct tdb_enumeration *e)
{
    uint64_t n;
    const uint8_t *p;
    int rc;
    if ((rc = schema_u64(x, &n, "enumeration offsets size")))
        return rc;
    if (n > tdb_cur_left(&x->c) || tdb_cur_bytes(&x->c, (size_t)n, &p))
        return schema_trunc(x, "enumeration offsets");
    if (n % 8)
        return schema_corrupt(x, "enumeration offsets size", n);
    for (uint64_t i = 0; i < n / 8; i++) {
        uint64_t o = tdb_le64(p + i * 8);
        if (o > e->data_size ||
            (i > 0 && o < tdb_le64(p + (i - 1) * 8)))
            return schema_corrupt(x, "enumeration offset", o);
    }
    if (n && !(e->offsets = malloc((size_t)n)))
        return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory", x->what);
    if (n)
        memcpy(e->offsets, p, (size_t)n);
    e->offsets_size = n;
    return 0;
}

static int schema_parse_enum(struct schema_ctx *x, struct tdb_enumeration *e)
{
    uint8_t t;
    const uint8_t *p;
    uint64_t n;
    int rc;
    if ((rc = schema_enum_head(x, e)) ||
        (rc = schema_u8(x, &t, "enumeration datatype")) ||
        (rc = schema_u32(x, &e->cell_val_num, "enumeration cell_val_num")) ||
        (rc = schema_bool(x, &e->ordered, "enumeration ordered flag")))
        return rc;
    e->type = t;
    if (tdb_dt_size(t) == 0)
        return schema_corrupt(x, "enumeration datatype", t);
    if (e->cell_val_num == 0)
        return schema_corrupt(x, "enumeration cell_val_num", 0);
    if ((rc = schema_u64(x, &n, "enumeration data size")))
        return rc;
    if (n > tdb_cur_left(&x->c) || tdb_cur_bytes(&x->c, (size_t)n, &p))
        return schema_trunc(x, "enumeration data");
    if (n && !(e->data = malloc((size_t)n)))
        return tdb_err(x->err, TDB_E_NOMEM, "%s: out of memory", x->what);
    if (n)
        memcpy(e->data, p, (size_t)n);
    e->data_size = n;
    if (e->cell_val_num == TDB_VAR_NUM)
        return schema_enum_offsets(x, e);
    uint64_t cell;
    if (!tdb_mul_ok(e->cell_val_num, tdb_dt_size(t), &cell) || n % cell)
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: enumeration data of %llu bytes is not whole "
                       "cells", x->what, (unsigned long long)n);
    return 0;
}

int tdb_enumeration_load(const struct tdb_io *io, struct tdb_enumeration *e,
                         const uint8_t *key, struct tdb_error *err)
{
    if (!e || !e->path)
        return tdb_err(err, TDB_E_INVAL, "enumeration without a file");
    struct tdb_buf buf = {0};
    uint64_t next;
    schema_enum_clear_data(e);
    int rc = tdb_generic_tile_read(&(struct tdb_gt_file){io, e->path, 0}, key,
                                   &buf, &next, err);
    if (rc) {
        tdb_buf_free(&buf);
        return rc;
    }
    struct schema_ctx x = {.what = e->path, .version = 0, .err = err};
    tdb_cur_init(&x.c, buf.data, buf.len);
    rc = schema_parse_enum(&x, e);
    tdb_buf_free(&buf);
    if (rc)
        schema_enum_clear_data(e);
    return rc;
}

int tdb_enumeration_serialize(const struct tdb_enumeration *e,
                              struct tdb_buf *out)
{
    const char *file = e->path ? strrchr(e->path, '/') : NULL;
    file = file ? file + 1 : e->path;
    bool var = e->cell_val_num == TDB_VAR_NUM;
    int rc;
    if (!e->name || !file || !schema_safe_filename(file) ||
        (e->data_size && !e->data) || (var && e->offsets_size % 8))
        return TDB_E_INVAL;
    if ((rc = tdb_buf_put_u32(out, SCHEMA_ENUMERATION_VERSION)) ||
        (rc = schema_put_str32(out, e->name)) ||
        (rc = schema_put_str32(out, file)) ||
        (rc = tdb_buf_put_u8(out, (uint8_t)e->type)) ||
        (rc = tdb_buf_put_u32(out, e->cell_val_num)) ||
        (rc = tdb_buf_put_u8(out, e->ordered ? 1 : 0)) ||
        (rc = tdb_buf_put_u64(out, e->data_size)) ||
        (rc = tdb_buf_append(out, e->data, (size_t)e->data_size)))
        return rc;
    if (!var)
        return 0;
    if ((rc = tdb_buf_put_u64(out, e->offsets_size)))
        return rc;
    return tdb_buf_append(out, e->offsets, (size_t)e->offsets_size);
}
