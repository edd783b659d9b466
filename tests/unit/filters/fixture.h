/* fixture.h: what the tests of the compression, checksum and encryption
 * filters (tests/unit/filters/) share: one filter's call set up (struct
 * fx) and run on hand-built input, round trips, every truncation and
 * corruption of an encoded input, and test values.  In the tests' library
 * (fixture.c); the helpers fail the running test with CHECK. */
#ifndef TDB_UNIT_FILTERS_FIXTURE_H
#define TDB_UNIT_FILTERS_FIXTURE_H

#include "../unit.h"
#include "filters/filter.h"
#include "filters/options.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One filter and a call of it (datatype UINT8, format version 22), with
 * the buffers its encode or decode appends to. */
struct fx {
    struct tdb_filter f;
    struct tdb_filter_call call;
    struct tdb_error err;
    struct tdb_buf md_out, data_out, offsets;
};

/* Sets x up for filter ops with the compressor, level and cell size. */
void fx_init(struct fx *x, const struct tdb_filter_ops *ops,
             uint8_t compressor, int32_t level, uint64_t cell_size);

/* Empties x's output buffers and error. */
void fx_reset(struct fx *x);

/* Frees what x holds. */
void fx_free(struct fx *x);

/* Decodes (md, data) into x's buffers; a failure must set x->err with a
 * message.  @return the filter's result. */
int fx_decode(struct fx *x, const void *md, size_t md_len,
              const void *data, size_t size);

/* Encodes (md, data), decodes the result and checks both come back. */
void fx_roundtrip(struct fx *x, const uint8_t *md, size_t md_len,
                  const uint8_t *data, size_t size);

/* Every truncation of md and of data, and every single-byte corruption of
 * md (and many of data), must give an error or (for corruptions a codec
 * cannot see) a result, never a crash; truncations of md must always
 * fail. */
void fx_abuse(struct fx *x, const uint8_t *md, size_t md_len,
              const uint8_t *data, size_t size, bool data_cut_fails);

/* Stores v little-endian at p + *n and adds 4 to *n. */
void put32(uint8_t *p, size_t *n, uint32_t v);

/* A test input: many values with runs and some noise. */
uint8_t *make_values(size_t n);

/* A filter of `type` (and compressor) with nothing else set, for the
 * capped decodings of capped.h. */
struct tdb_filter capped_filter(unsigned type, uint8_t compressor);

#endif
