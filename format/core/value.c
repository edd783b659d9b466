/* value.c: one value of a TileDB datatype (array_schema.md: datatypes):
 * its class, reading it from untrusted bytes, comparisons, limits. */
#include "core/value.h"

#include <float.h>

enum tdb_vclass tdb_value_class(unsigned dt)
{
    if (tdb_dt_is_signed_int(dt))
        return TDB_VC_SIGNED;
    if (tdb_dt_is_unsigned_int(dt) || dt == TDB_BOOL)
        return TDB_VC_UNSIGNED;
    if (tdb_dt_is_float(dt))
        return TDB_VC_FLOAT;
    if (tdb_dt_is_string(dt))
        return TDB_VC_STRING;
    return tdb_dt_size(dt) ? TDB_VC_BYTES : TDB_VC_NONE;
}

int tdb_value_read(unsigned dt, const uint8_t *p, size_t n,
                   struct tdb_num *v)
{
    unsigned size = tdb_dt_size(dt);
    if (!size || n < size)
        return -1;
    *v = tdb_value_load(dt, p);
    return 0;
}

int tdb_num_cmp(const struct tdb_num *a, const struct tdb_num *b,
                bool *unordered)
{
    bool nan = false;
    int c;
    switch (a->cls) {
    case TDB_VC_FLOAT:
        c = a->d < b->d ? -1 : a->d > b->d;
        nan = !c && a->d != b->d;
        break;
    case TDB_VC_SIGNED:
        c = a->i < b->i ? -1 : a->i > b->i;
        break;
    default:
        c = a->u < b->u ? -1 : a->u > b->u;
        break;
    }
    if (unordered)
        *unordered = nan;
    return c;
}

int tdb_bytes_cmp(const uint8_t *a, uint64_t na, const uint8_t *b,
                  uint64_t nb)
{
    uint64_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, (size_t)n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

int tdb_value_cmp(unsigned type, const uint8_t *a, uint64_t na,
                  const uint8_t *b, uint64_t nb)
{
    enum tdb_vclass cls = tdb_value_class(type);
    if (cls == TDB_VC_STRING || na != nb || na > 8 || na == 0 ||
        (cls == TDB_VC_FLOAT && na != tdb_dt_size(type)))
        return tdb_bytes_cmp(a, na, b, nb);
    if (cls == TDB_VC_FLOAT) {
        struct tdb_num x = tdb_num_load(cls, (unsigned)na, a);
        struct tdb_num y = tdb_num_load(cls, (unsigned)nb, b);
        return tdb_num_cmp(&x, &y, NULL);
    }
    /* an integer of na bytes, zero-padded (unsigned unless the class is
     * signed: bytes compare as unsigned numbers) */
    uint8_t ta[8] = {0}, tb[8] = {0};
    memcpy(ta, a, (size_t)na);
    memcpy(tb, b, (size_t)nb);
    uint64_t x = tdb_le64(ta), y = tdb_le64(tb);
    if (cls == TDB_VC_SIGNED) {
        unsigned sh = (unsigned)(64 - 8 * na);
        int64_t sx = (int64_t)(x << sh) >> sh, sy = (int64_t)(y << sh) >> sh;
        return sx < sy ? -1 : sx > sy;
    }
    return x < y ? -1 : x > y;
}

bool tdb_value_limits(unsigned dt, uint8_t *lo, uint8_t *hi)
{
    unsigned size = tdb_dt_size(dt);
    switch (tdb_value_class(dt)) {
    case TDB_VC_FLOAT:
        if (size == 4) {
            float a = -FLT_MAX, b = FLT_MAX;
            uint32_t ua, ub;
            memcpy(&ua, &a, 4);
            memcpy(&ub, &b, 4);
            tdb_st32(lo, ua);
            tdb_st32(hi, ub);
        } else {
            double a = -DBL_MAX, b = DBL_MAX;
            uint64_t ua, ub;
            memcpy(&ua, &a, 8);
            memcpy(&ub, &b, 8);
            tdb_st64(lo, ua);
            tdb_st64(hi, ub);
        }
        return true;
    case TDB_VC_UNSIGNED:
        memset(lo, 0, size);
        memset(hi, 0xff, size);
        return true;
    case TDB_VC_SIGNED:         /* 0x80 00..00 and 0x7f ff..ff */
        memset(lo, 0, size);
        memset(hi, 0xff, size);
        lo[size - 1] = 0x80;
        hi[size - 1] = 0x7f;
        return true;
    default:
        return false;
    }
}

int64_t tdb_value_int_min(unsigned dt)
{
    unsigned bits = 8 * tdb_dt_size(dt);
    if (tdb_value_class(dt) != TDB_VC_SIGNED)
        return 0;
    return bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
}

uint64_t tdb_value_int_max(unsigned dt)
{
    unsigned bits = 8 * tdb_dt_size(dt);
    switch (tdb_value_class(dt)) {
    case TDB_VC_SIGNED:
        return (UINT64_C(1) << (bits - 1)) - 1;
    case TDB_VC_UNSIGNED:
        return bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    default:
        return 0;
    }
}

bool tdb_value_int_fits(unsigned dt, bool neg, uint64_t mag)
{
    enum tdb_vclass cls = tdb_value_class(dt);
    if (cls != TDB_VC_SIGNED && cls != TDB_VC_UNSIGNED)
        return false;
    if (!neg)
        return mag <= tdb_value_int_max(dt);
    return cls == TDB_VC_SIGNED &&
           mag <= (uint64_t)0 - (uint64_t)tdb_value_int_min(dt);
}
