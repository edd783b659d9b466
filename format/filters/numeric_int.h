/* numeric_int.h: little-endian integers of 1, 2, 4 or 8 bytes as the
 * numeric filters (numeric_common.h) and the scalar shuffle kernels
 * (shuffle_simd.c) load and store them. */
#ifndef TDB_NUMERIC_INT_H
#define TDB_NUMERIC_INT_H

#include "core/core.h"

/* Loads a little-endian unsigned integer of w (1, 2, 4, 8) bytes. */
static inline uint64_t tdb_numeric_load(const uint8_t *p, unsigned w)
{
    switch (w) {
    case 1: return p[0];
    case 2: return tdb_le16(p);
    case 4: return tdb_le32(p);
    default: return tdb_le64(p);
    }
}

/* Stores the low w bytes of v little-endian. */
static inline void tdb_numeric_store(uint8_t *p, unsigned w, uint64_t v)
{
    switch (w) {
    case 1: p[0] = (uint8_t)v; break;
    case 2: tdb_st16(p, (uint16_t)v); break;
    case 4: tdb_st32(p, (uint32_t)v); break;
    default: tdb_st64(p, v); break;
    }
}

/* All-ones mask of w bytes. */
static inline uint64_t tdb_numeric_mask(unsigned w)
{
    return w >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * w)) - 1;
}

/* The value of the low w bytes of v read as a two's complement integer. */
static inline int64_t tdb_numeric_sext(uint64_t v, unsigned w)
{
    if (w >= 8)
        return (int64_t)v;
    uint64_t sign = UINT64_C(1) << (8 * w - 1);
    v &= tdb_numeric_mask(w);
    return (int64_t)(v ^ sign) - (int64_t)sign;
}

/* Loads a value of type t as int64_t (signed) or uint64_t bits. */
static inline int64_t tdb_numeric_load_signed(const uint8_t *p, unsigned w)
{
    return tdb_numeric_sext(tdb_numeric_load(p, w), w);
}

#endif
