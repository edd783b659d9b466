/* order.h: the global order of sparse cells (order.c): tile order, then
 * cell order, or the Hilbert curve, as FORMAT-NOTES describes TileDB's
 * behaviour; comparisons of single values and of whole coordinates. */
#ifndef TDB_ORDER_H
#define TDB_ORDER_H

#include "read/array.h"

/* One cell's coordinates: per dimension a pointer and a size. */
struct tdb_coords {
    const uint8_t *v[TDB_MAX_DIMS];
    uint64_t n[TDB_MAX_DIMS];
};

/* Compares two cells in the schema's global order (tile order, then cell
 * order; Hilbert where the cell order says so).  hilbert values are passed
 * in when the schema uses Hilbert order (compute with tdb_hilbert). */
int tdb_order_cmp(const struct tdb_schema *s, const struct tdb_coords *a,
                  uint64_t ha, const struct tdb_coords *b, uint64_t hb);
/* Compares two values of a datatype (strings bytewise, shorter first). */
int tdb_value_cmp(unsigned type, const uint8_t *a, uint64_t na,
                  const uint8_t *b, uint64_t nb);
bool tdb_coords_equal(const struct tdb_schema *s, const struct tdb_coords *a,
                      const struct tdb_coords *b);
uint64_t tdb_hilbert(const struct tdb_schema *s, const struct tdb_coords *c);

#endif
