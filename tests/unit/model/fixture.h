/* fixture.h: what the tests of the on-disk structures (tests/unit/model/)
 * share: a generic tile written to an io, a small reader of the corpus's
 * case.json files, schemas compared and round-tripped, and paths
 * formatted.  In the tests' library (fixture.c); put_tile
 * fails the running test with CHECK. */
#ifndef TDB_UNIT_MODEL_FIXTURE_H
#define TDB_UNIT_MODEL_FIXTURE_H

#include "../support.h"
#include "model/fragmeta.h"
#include "model/schema.h"

/* Writes `size` bytes as one generic tile at `path` of an in-memory io. */
void put_tile(struct tdb_io *io, const char *path, const void *p,
              size_t size);

/* tdb_fragmeta_load of the fragment in folder `path` named `name`, with
 * the footer bytes given (or NULL, 0: read from the file). */
int fm_load(const struct tdb_io *io, const char *path, const char *name,
            const struct tdb_schema_set *set, const uint8_t *key,
            const uint8_t *footer, size_t size, struct tdb_fragmeta **fm,
            struct tdb_error *err);

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

/* Checks that schemas a and b hold the same values, field by field. */
void check_same_schema(const struct tdb_schema *a,
                       const struct tdb_schema *b);

/* serialize -> parse -> compare -> serialize again: same bytes. */
void schema_roundtrip(const struct tdb_schema *s);

/* snprintf through a wrapper: paths here are short and a cut one only
 * fails a look-up. */
void fmt(char *dst, size_t cap, const char *f, ...)
    __attribute__((format(printf, 3, 4)));

#endif
