/* fixture.h: what the tests of the on-disk structures (tests/unit/model/)
 * share: a generic tile written to an io, and a small reader of the
 * corpus's case.json files.  In the tests' library (fixture.c); put_tile
 * fails the running test with CHECK. */
#ifndef TDB_UNIT_MODEL_FIXTURE_H
#define TDB_UNIT_MODEL_FIXTURE_H

#include "../support.h"

/* Writes `size` bytes as one generic tile at `path` of an in-memory io. */
void put_tile(struct tdb_io *io, const char *path, const void *p,
              size_t size);

/* ---------------------------------------------- a small case.json reader */

/* Skips whitespace and the separators ',' and ':' from p; @return the
 * first other character. */
const char *js_ws(const char *p);

/* Skips the string starting at p (its opening quote); @return its end. */
const char *js_skip_string(const char *p);

/* Skips one JSON value starting at p (whitespace first); @return the end. */
const char *js_skip(const char *p);

/* Copies the (unescaped, simple) string at p into out. */
const char *js_string(const char *p, char *out, size_t cap);

/* In object `obj` (pointing at '{'), finds member `key`'s value. */
const char *js_get(const char *obj, const char *key);

#endif
