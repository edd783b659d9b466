/* dim.c: the values of an integer dimension as offsets from its domain's
 * low bound, and its tiles (array_schema.md: domain, tile extent). */
#include "model/schema.h"
#include "core/value.h"

#include <string.h>

uint64_t tdb_dim_offset(const struct tdb_dim *d, const uint8_t *v)
{
    if (tdb_dt_is_signed_int(d->type))
        return (uint64_t)tdb_value_i64(d->type, v) -
               (uint64_t)tdb_value_i64(d->type, d->lo);
    return tdb_value_u64(d->type, v) - tdb_value_u64(d->type, d->lo);
}

void tdb_dim_value(const struct tdb_dim *d, uint64_t off, uint8_t *v)
{
    unsigned n = tdb_dt_size(d->type);
    uint64_t x = tdb_dt_is_signed_int(d->type)
                     ? (uint64_t)tdb_value_i64(d->type, d->lo) + off
                     : tdb_value_u64(d->type, d->lo) + off;
    uint8_t t[8];
    tdb_st64(t, x);
    memcpy(v, t, n);
}

uint64_t tdb_dim_extent(const struct tdb_dim *d)
{
    if (!d->has_extent || !tdb_dt_is_integer(d->type))
        return 0;
    return tdb_dt_is_signed_int(d->type)
               ? (uint64_t)tdb_value_i64(d->type, d->extent)
               : tdb_value_u64(d->type, d->extent);
}

uint64_t tdb_dim_span(const struct tdb_dim *d)
{
    uint64_t s = tdb_dim_offset(d, d->hi);
    return s == UINT64_MAX ? UINT64_MAX : s + 1;
}

uint64_t tdb_dim_tile_span(const struct tdb_dim *d)
{
    uint64_t e = tdb_dim_extent(d);
    return e ? e : tdb_dim_span(d);
}
