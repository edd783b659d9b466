/* value.h: one value of a TileDB datatype (array_schema.md: datatypes):
 * its class, loading it from little-endian bytes, comparing two, and the
 * least and greatest values of a datatype.  The one place the engine
 * reads a typed value; callers on hot paths use the inline loaders. */
#ifndef TDB_VALUE_H
#define TDB_VALUE_H

#include "core/core.h"

/* How the values of a datatype compare. */
enum tdb_vclass {
    TDB_VC_NONE,        /* not a datatype */
    TDB_VC_SIGNED,      /* INT8..INT64, DATETIME_*, TIME_* */
    TDB_VC_UNSIGNED,    /* UINT8..UINT64, BOOL */
    TDB_VC_FLOAT,       /* FLOAT32, FLOAT64 */
    TDB_VC_STRING,      /* CHAR, STRING_*: bytewise */
    TDB_VC_BYTES        /* ANY, BLOB, GEOM_*: bytes of no number */
};

/* The class of datatype dt (TDB_VC_NONE for an unknown number). */
enum tdb_vclass tdb_value_class(unsigned dt);

/* A number loaded as its class: integers in u as 64 bits (signed ones
 * sign-extended), i the same bits as int64; d the value as a double
 * (floats exactly, integers converted). */
struct tdb_num {
    enum tdb_vclass cls;
    int64_t i;
    uint64_t u;
    double d;
};

/* An integer of `size` bytes (1, 2, 4 or 8; any other size reads
 * nothing and is 0) at p, sign-extended when is_signed, as 64 bits.  p
 * must hold size bytes. */
static inline uint64_t tdb_int_load(const uint8_t *p, unsigned size,
                                    bool is_signed)
{
    switch (size) {
    case 1: return is_signed ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
    case 2: return is_signed ? (uint64_t)(int64_t)(int16_t)tdb_le16(p)
                             : tdb_le16(p);
    case 4: return is_signed ? (uint64_t)(int64_t)(int32_t)tdb_le32(p)
                             : tdb_le32(p);
    case 8: return tdb_le64(p);
    default: return 0;
    }
}

static inline float tdb_f32_load(const uint8_t *p)
{
    uint32_t u = tdb_le32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline double tdb_f64_load(const uint8_t *p)
{
    uint64_t u = tdb_le64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* One value of class cls and `size` bytes at p (which must hold them):
 * FLOAT of 4 or 8 bytes (others: 0); SIGNED sign-extended; every other
 * class read as an unsigned integer (tdb_int_load's sizes). */
static inline struct tdb_num tdb_num_load(enum tdb_vclass cls, unsigned size,
                                          const uint8_t *p)
{
    struct tdb_num n = {cls, 0, 0, 0.0};
    if (cls == TDB_VC_FLOAT) {
        n.d = size == 4 ? (double)tdb_f32_load(p)
              : size == 8 ? tdb_f64_load(p) : 0.0;
        return n;
    }
    n.u = tdb_int_load(p, size, cls == TDB_VC_SIGNED);
    n.i = (int64_t)n.u;
    n.d = cls == TDB_VC_SIGNED ? (double)n.i : (double)n.u;
    return n;
}

/* One value of datatype dt at p, which must hold tdb_dt_size(dt) bytes
 * (values of at most 8 bytes: every datatype's). */
static inline struct tdb_num tdb_value_load(unsigned dt, const uint8_t *p)
{
    return tdb_num_load(tdb_value_class(dt), tdb_dt_size(dt), p);
}

/* An integer of datatype dt at p, which must hold tdb_dt_size(dt) bytes:
 * as a signed value (sign-extended) and as an unsigned one. */
static inline int64_t tdb_value_i64(unsigned dt, const uint8_t *p)
{
    return (int64_t)tdb_int_load(p, tdb_dt_size(dt), true);
}

static inline uint64_t tdb_value_u64(unsigned dt, const uint8_t *p)
{
    return tdb_int_load(p, tdb_dt_size(dt), false);
}

/* Whether the value of datatype dt at p is a NaN (false but for floats).
 * On the writer's path for every coordinate: no class lookup. */
static inline bool tdb_value_isnan(unsigned dt, const uint8_t *p)
{
    if (dt == TDB_FLOAT32) {
        float f = tdb_f32_load(p);
        return f != f;
    }
    if (dt == TDB_FLOAT64) {
        double d = tdb_f64_load(p);
        return d != d;
    }
    return false;
}

/* Reads one value of datatype dt from untrusted bytes p[0..n).
 * @return 0, or -1 when n is shorter than the datatype's size or dt is
 * not a datatype (*v then untouched). */
int tdb_value_read(unsigned dt, const uint8_t *p, size_t n,
                   struct tdb_num *v);

/* Three-way comparison of two numbers of one class (a's): -1, 0 or 1.
 * A NaN compares equal to everything; then *unordered (if not NULL) is
 * set, else cleared. */
int tdb_num_cmp(const struct tdb_num *a, const struct tdb_num *b,
                bool *unordered);

/* Compares a[0..na) and b[0..nb) bytewise (unsigned), a prefix first (as
 * std::string compares): -1, 0 or 1. */
int tdb_bytes_cmp(const uint8_t *a, uint64_t na, const uint8_t *b,
                  uint64_t nb);

/* Compares two values of a datatype: -1, 0 or 1.  Strings, and values of
 * unequal sizes or over 8 bytes, bytewise with a prefix first; numbers by
 * value (a NaN equal to everything). */
int tdb_value_cmp(unsigned type, const uint8_t *a, uint64_t na,
                  const uint8_t *b, uint64_t nb);

/* The least and greatest finite values of a number datatype (class
 * SIGNED, UNSIGNED or FLOAT): tdb_dt_size(dt) bytes each into lo and hi.
 * @return false (nothing written) for any other datatype. */
bool tdb_value_limits(unsigned dt, uint8_t *lo, uint8_t *hi);

/* The least and greatest values of an integer datatype (class SIGNED or
 * UNSIGNED; 0 for others). */
int64_t tdb_value_int_min(unsigned dt);
uint64_t tdb_value_int_max(unsigned dt);

/* Whether the integer of sign `neg` and magnitude `mag` is a value of
 * integer datatype dt (false for other datatypes).  A sign never fits an
 * unsigned datatype, not even on 0: what the parsers of schemas and
 * conditions refuse. */
bool tdb_value_int_fits(unsigned dt, bool neg, uint64_t mag);

#endif
