/* schema_internal.h: what the readers and writers of array schemas and
 * enumeration files share (schema.c, schema_enum.c, schema_write.c): the
 * format's limits and versions, the parsing state over a payload and
 * its bounds-checked reads.  Not for use outside format/model/. */
#ifndef TDB_MODEL_SCHEMA_INTERNAL_H
#define TDB_MODEL_SCHEMA_INTERNAL_H

#include "model/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Minimum serialised sizes, used to cap counts read from the file before
 * allocating (a count larger than the bytes left can only be corrupt). */
#define SCHEMA_MIN_DIM 5        /* name length + null-extent flag */
#define SCHEMA_MIN_ATTR 17      /* name length, type, cvn, empty pipeline */
#define SCHEMA_MIN_LABEL 27
#define SCHEMA_MIN_ENUM 8
/* Largest cell (fill value) we accept. */
#define SCHEMA_MAX_CELL (UINT64_C(1) << 28)
/* Default fill values (schemas before format 6 store none) of one schema,
 * at most: a few bytes of input must not make the daemon fill 256 MiB an
 * attribute. */
#define SCHEMA_MAX_FILLS (UINT64_C(1) << 26)

#define SCHEMA_CURRENT_DOMAIN_VERSION 0
#define SCHEMA_ENUMERATION_VERSION 0
#define SCHEMA_NDRECTANGLE 0
#define SCHEMA_MAX_VERSION 23
#define SCHEMA_WRITE_VERSION 22

/* Parsing state: the cursor over the payload and what to name in errors. */
struct schema_ctx {
    struct tdb_cursor c;
    const char *what;
    uint32_t version;
    struct tdb_error *err;
    char part[80];              /* "dimension 2 ", ... or "" */
    uint64_t fills;             /* bytes of default fill values made */
};

static inline int schema_trunc(struct schema_ctx *x, const char *field)
{
    if (x->version == 0)
        return tdb_err(x->err, TDB_E_CORRUPT,
                       "%s: array schema truncated reading %s", x->what,
                       field);
    return tdb_err(x->err, TDB_E_CORRUPT,
                   "%s: array schema (version %u) truncated reading %s%s",
                   x->what, x->version, x->part, field);
}

static inline int schema_corrupt(struct schema_ctx *x, const char *field,
                                 unsigned long long value)
{
    return tdb_err(x->err, TDB_E_CORRUPT,
                   "%s: array schema (version %u) has an invalid %s%s (%llu)",
                   x->what, x->version, x->part, field, value);
}

static inline int schema_u8(struct schema_ctx *x, uint8_t *v,
                             const char *field)
{
    return tdb_cur_u8(&x->c, v) ? schema_trunc(x, field) : 0;
}

static inline int schema_u32(struct schema_ctx *x, uint32_t *v,
                             const char *field)
{
    return tdb_cur_u32(&x->c, v) ? schema_trunc(x, field) : 0;
}

static inline int schema_u64(struct schema_ctx *x, uint64_t *v,
                             const char *field)
{
    return tdb_cur_u64(&x->c, v) ? schema_trunc(x, field) : 0;
}

static inline int schema_bool(struct schema_ctx *x, bool *v,
                             const char *field)
{
    uint8_t b;
    int rc = schema_u8(x, &b, field);
    if (rc)
        return rc;
    if (b > 1)
        return schema_corrupt(x, field, b);
    *v = b != 0;
    return 0;
}

/* Is s a file name and nothing else (no folder, not "." or "..")? */
static inline bool schema_safe_filename(const char *s)
{
    return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') &&
           !strchr(s, '\\');
}

static inline void schema_enum_clear_data(struct tdb_enumeration *e)
{
    free(e->data);
    free(e->offsets);
    e->data = e->offsets = NULL;
    e->data_size = e->offsets_size = 0;
}

/* Appends s as its u32 length and its bytes (NULL: none).  @return 0,
 * TDB_E_INVAL (too long), TDB_E_NOMEM. */
static inline int schema_put_str32(struct tdb_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n > UINT32_MAX)
        return TDB_E_INVAL;
    int rc = tdb_buf_put_u32(b, (uint32_t)n);
    return rc ? rc : tdb_buf_append(b, s, n);
}

/* The fill TileDB gives an attribute whose schema has none: the type's
 * default value, once per value of a fixed cell, once for a var cell. */
static inline int schema_default_fill(unsigned type, uint32_t cell_val_num,
                                      uint8_t **fill, uint64_t *size)
{
    unsigned sz = tdb_dt_size(type);
    uint64_t n = cell_val_num == TDB_VAR_NUM ? 1 : cell_val_num, total;
    if (sz == 0 || !tdb_mul_ok(n, sz, &total) || total > SCHEMA_MAX_CELL)
        return TDB_E_NOMEM;
    uint8_t *f = malloc((size_t)total);
    if (!f)
        return TDB_E_NOMEM;
    for (uint64_t i = 0; i < n; i++)
        tdb_dt_default_fill(type, f + i * sz);
    *fill = f;
    *size = total;
    return 0;
}

#endif
