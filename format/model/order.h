/* order.h: the global order of sparse cells (order.c): tile order, then
 * cell order, or the Hilbert curve, as FORMAT-NOTES describes TileDB's
 * behaviour; comparisons of whole coordinates (of single values:
 * core/value.h, which callers of the order get with it). */
#ifndef TDB_ORDER_H
#define TDB_ORDER_H

#include "core/value.h"
#include "model/schema.h"

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
bool tdb_coords_equal(const struct tdb_schema *s, const struct tdb_coords *a,
                      const struct tdb_coords *b);
uint64_t tdb_hilbert(const struct tdb_schema *s, const struct tdb_coords *c);

/* A cheap integer key per cell, monotone in the global order: key(a) <
 * key(b) implies a before b; equal keys say nothing unless `exact` (then
 * the coordinates are equal).  It is a mixed-radix number of the order's
 * components (tile index per dimension in tile order, then the offset
 * from the domain's low bound per dimension in cell order) as far as they
 * are fixed-size integers and fit in 64 bits, the last one possibly
 * divided down; with Hilbert order it is the Hilbert value.  Cells outside
 * the domain have no key (compare those with tdb_order_cmp). */
#define TDB_ORDER_KEY_PARTS (2 * TDB_MAX_DIMS)

struct tdb_order_key {
    bool hilbert;               /* the key is the Hilbert value */
    bool exact;                 /* equal keys: equal coordinates */
    bool wide;                  /* every part 8 bytes and div 1 (cell
                                 * parts then have shift 0) */
    unsigned nparts;
    struct tdb_order_part {
        uint32_t dim;
        unsigned size;          /* bytes of the value */
        bool is_signed;
        uint64_t lo;            /* the domain's low bound, sign-extended */
        uint64_t extent;        /* tile part: the extent; cell part: 0 */
        uint64_t maxdigit;      /* largest digit of an in-domain value */
        uint64_t radix;         /* the key is key * radix + digit / div */
        uint64_t div;
        int shift;              /* extent is 1 << shift (-1: not a power of 2) */
    } part[TDB_ORDER_KEY_PARTS];
};

void tdb_order_key_init(struct tdb_order_key *k, const struct tdb_schema *s);
/* The key of one cell (hilbert: its Hilbert value when k->hilbert).
 * @return false when the cell has none (outside the domain). */
bool tdb_order_key_of(const struct tdb_order_key *k, const struct tdb_coords *c,
                      uint64_t hilbert, uint64_t *key);
/* The keys of n cells at once (k exact or not, but not Hilbert; every
 * dimension of fixed size): dimension d's value of cell i at base[d] + i *
 * its size.  @return how many cells from the first have a key (n when all
 * have one); out[] is filled for those. */
size_t tdb_order_keys(const struct tdb_order_key *k, const uint8_t *const *base,
                      const unsigned *size, size_t n, uint64_t *out);

#endif
