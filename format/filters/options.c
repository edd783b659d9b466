/* options.c: one field of a filter's options table (options.h), read and
 * written in the filter's options bytes. */
#include "options.h"

#include <string.h>

const struct tdb_filter_opt *tdb_filter_opt_find(
    const struct tdb_filter_ops *ops, const char *name)
{
    for (unsigned i = 0; ops && i < ops->n_options; i++)
        if (!strcmp(ops->options[i].name, name))
            return &ops->options[i];
    return NULL;
}

struct tdb_fopt_value tdb_fopt_get(const struct tdb_filter *f,
                                   const struct tdb_filter_opt *o)
{
    const unsigned char *p = f->options.bytes + o->offset;
    struct tdb_fopt_value v = {0, 0.0};
    if (o->kind == TDB_FOPT_REAL) {
        float x;
        if (o->width == 4) {
            memcpy(&x, p, 4);
            v.d = x;
        } else {
            memcpy(&v.d, p, 8);
        }
        return v;
    }
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    switch (o->width) {
    case 1: memcpy(&u8, p, 1); v.i = u8; break;
    case 2: memcpy(&u16, p, 2); v.i = u16; break;
    case 4:
        memcpy(&u32, p, 4);
        v.i = o->kind == TDB_FOPT_INT ? (int32_t)u32 : (int64_t)u32;
        break;
    default: memcpy(&v.i, p, 8); break;
    }
    return v;
}

void tdb_fopt_set(struct tdb_filter *f, const struct tdb_filter_opt *o,
                  const struct tdb_fopt_value *v)
{
    unsigned char *p = f->options.bytes + o->offset;
    if (o->kind == TDB_FOPT_REAL) {
        float x = (float)v->d;
        if (o->width == 4)
            memcpy(p, &x, 4);
        else
            memcpy(p, &v->d, 8);
        return;
    }
    uint8_t u8 = (uint8_t)v->i;
    uint16_t u16 = (uint16_t)v->i;
    uint32_t u32 = (uint32_t)v->i;
    switch (o->width) {
    case 1: memcpy(p, &u8, 1); break;
    case 2: memcpy(p, &u16, 2); break;
    case 4: memcpy(p, &u32, 4); break;
    default: memcpy(p, &v->i, 8); break;
    }
}

int tdb_fopt_check(const struct tdb_filter_opt *o,
                   const struct tdb_fopt_value *v, char *why, size_t cap)
{
    return o->check ? o->check(v, why, cap) : 0;
}

const char *tdb_fopt_name(const struct tdb_filter_opt *o, int64_t i)
{
    return o->names[i >= 0 && i < o->n_names ? i : 0];
}

int64_t tdb_filter_get_int(const struct tdb_filter *f, const char *name)
{
    const struct tdb_filter_opt *o = tdb_filter_opt_find(tdb_filter_lookup(f->type), name);
    return o ? tdb_fopt_get(f, o).i : 0;
}

double tdb_filter_get_real(const struct tdb_filter *f, const char *name)
{
    const struct tdb_filter_opt *o = tdb_filter_opt_find(tdb_filter_lookup(f->type), name);
    return o ? tdb_fopt_get(f, o).d : 0.0;
}

int tdb_filter_set_int(struct tdb_filter *f, const char *name, int64_t v)
{
    const struct tdb_filter_opt *o = tdb_filter_opt_find(tdb_filter_lookup(f->type), name);
    struct tdb_fopt_value x = {v, 0.0};
    if (!o || o->kind == TDB_FOPT_REAL)
        return TDB_E_INVAL;
    tdb_fopt_set(f, o, &x);
    return 0;
}

int tdb_filter_set_real(struct tdb_filter *f, const char *name, double v)
{
    const struct tdb_filter_opt *o = tdb_filter_opt_find(tdb_filter_lookup(f->type), name);
    struct tdb_fopt_value x = {0, v};
    if (!o || o->kind != TDB_FOPT_REAL)
        return TDB_E_INVAL;
    tdb_fopt_set(f, o, &x);
    return 0;
}

int tdb_filter_init_level(struct tdb_filter *f, unsigned type, int32_t level)
{
    int rc = tdb_filter_init(f, type);
    if (!rc && tdb_filter_set_int(f, "level", level))
        rc = TDB_E_INVAL;   /* a filter without a level */
    return rc;
}
