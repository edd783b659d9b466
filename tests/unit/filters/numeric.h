/* numeric.h: what the tests of the numeric filters (tests/unit/filters/
 * test_byteshuffle.c ... test_double_delta.c) share: a filter and its call
 * set up, decodes and encodes checked against hand-built chunks, every
 * truncation, round trips over sizes and value patterns, and corruptions.
 * In the tests' library (numeric.c); the helpers fail the running test
 * with CHECK. */
#ifndef TDB_UNIT_FILTERS_NUMERIC_H
#define TDB_UNIT_FILTERS_NUMERIC_H

#include "../unit.h"
#include "filters/filter.h"
#include "filters/options.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Datatype numbers core.h does not name. */
#define T_DATETIME_MS 25u
#define T_TIME_MS 34u
#define T_TIME_NS 36u

/* The error every call of mkcall reports to. */
extern struct tdb_error test_err;

/* A filter of `type` with the defaults of a schema's filter list (no ops:
 * the tests call the ops they test). */
struct tdb_filter mkfilter(unsigned type);

/* A call of filter f on cells of datatype dt in format `version`. */
struct tdb_filter_call mkcall(const struct tdb_filter *f, unsigned dt,
                              uint32_t version);

/* Decodes (md, data) with ops; md_out and data_out are reset first. */
int dec(const struct tdb_filter_ops *ops,
        const struct tdb_filter_call *c, const uint8_t *md,
        size_t md_len, const uint8_t *data, size_t size,
        struct tdb_buf *md_out, struct tdb_buf *data_out);

/* Encodes (md, data) with ops; md_out and data_out are reset first. */
int enc(const struct tdb_filter_ops *ops,
        const struct tdb_filter_call *c, const uint8_t *md,
        size_t md_len, const uint8_t *data, size_t size,
        struct tdb_buf *md_out, struct tdb_buf *data_out);

/* Decodes a hand-built chunk and checks the expected data and metadata. */
void check_dec(const struct tdb_filter_ops *ops,
               const struct tdb_filter_call *c, const uint8_t *md,
               size_t md_len, const uint8_t *data, size_t size,
               const uint8_t *want, size_t want_len,
               const uint8_t *want_md, size_t want_md_len);

/* Encodes plain data and checks the exact metadata and data bytes. */
void check_enc(const struct tdb_filter_ops *ops,
               const struct tdb_filter_call *c, const uint8_t *plain,
               size_t plain_len, const uint8_t *want_md,
               size_t want_md_len, const uint8_t *want,
               size_t want_len);

/* Every strict prefix of md, and of data, must fail to decode; so must
 * data with one byte more when `extra_fails`. */
void check_truncated(const struct tdb_filter_ops *ops,
                     const struct tdb_filter_call *c,
                     const uint8_t *md, size_t md_len,
                     const uint8_t *data, size_t size,
                     bool extra_fails);

/* A small deterministic generator. */
uint64_t rng_next(uint64_t *s);

/* Fills n values of width w: pattern 0 random, 1 small steps (negative
 * too), 2 extremes, 3 sorted (non-decreasing, for POSITIVE_DELTA). */
void fill(uint8_t *p, size_t n, unsigned w, int pattern, uint64_t *s);

/* Encodes data with prior metadata `prev`, decodes, checks both return. */
void roundtrip(const struct tdb_filter_ops *ops,
               const struct tdb_filter_call *c, const uint8_t *data,
               size_t size);

/* Round trips over sizes (in values: 0, 1, 7, 13, 1000, 3000, plus a byte
 * count that is not whole values) and value patterns. */
void roundtrip_all(const struct tdb_filter_ops *ops,
                   const struct tdb_filter_call *c, bool sorted_only,
                   bool whole_values_only);

/* Random byte flips in a valid encoding must never crash.  For the
 * compressors (whose metadata is u32 fields) only the low byte of each
 * field is flipped: a flipped high byte merely makes the framing allocate
 * gigabytes, which is slow under ASan and proves nothing about our code. */
void fuzz(const struct tdb_filter_ops *ops,
          const struct tdb_filter_call *c, const uint8_t *md,
          size_t md_len, const uint8_t *data, size_t size);

/* Encodes random data with ops and fuzzes the result. */
void fuzz_encoded(const struct tdb_filter_ops *ops,
                  const struct tdb_filter_call *c, int pattern);

/* The integer datatypes (and those stored as integers), N_INT_TYPES of
 * them. */
#define N_INT_TYPES 14
extern const unsigned int_types[N_INT_TYPES];

/* mkfilter with the ops of `type` and its compressor, for the capped
 * decodings of capped.h. */
struct tdb_filter mkop(unsigned type, uint8_t compressor);

#endif
