/* fmw_fixture.h: what the tests of the fragment metadata writer
 * (tests/unit/write/test_fragmeta_write.c, test_fragmeta_write_md.c)
 * share: a tile added with its place spelled out, a fragment's metadata
 * written to an in-memory array and loaded back, and small readers.  In
 * the tests' library (fmw_fixture.c). */
#ifndef TDB_UNIT_WRITE_FMW_FIXTURE_H
#define TDB_UNIT_WRITE_FMW_FIXTURE_H

#include "model/fragmeta.h"
#include "write/fragmeta_write.h"
#include "tiledb_format.h"

#include <stdint.h>

/* The fragment fm_roundtrip writes. */
#define FM_RT_NAME "__1_1_0123456789abcdef0123456789abcdef_22"

/* tdb_fmw_add_tile with its where and what spelled out. */
int fm_add_tile(struct tdb_fmw *w, uint32_t field, uint64_t off,
                uint64_t var_off, uint64_t var_size, uint64_t validity_off,
                const uint8_t *data, uint64_t size, const uint64_t *offsets,
                uint64_t ncells, const uint8_t *validity,
                struct tdb_error *err);

/* snprintf into dst[cap]. */
void fm_fmt(char *dst, size_t cap, const char *f, ...)
    __attribute__((format(printf, 3, 4)));

/* An INT32 range [lo, hi]. */
struct tdb_range fm_range_i32(int32_t lo, int32_t hi);

/* Writes the metadata b of schema s into in-memory array io as fragment
 * FM_RT_NAME and loads it back (with key rkey) into *fm.  @return 0 or
 * the load's code. */
int fm_roundtrip(struct tdb_io *io, const struct tdb_buf *b,
                 struct tdb_schema *s, const uint8_t *wkey,
                 const uint8_t *rkey, struct tdb_fragmeta **fm,
                 struct tdb_error *err);

/* The FLOAT64 at p (little-endian). */
double fm_f64(const uint8_t *p);

/* The generic tile at offset off of fm's metadata file in io, into g
 * (emptied first); its return code. */
int fm_read_gt(struct tdb_io *io, const struct tdb_fragmeta *fm,
               uint64_t off, struct tdb_buf *g);

#endif
