/* json.h: the JSON documents of the mount (__array.json, __fragment.json,
 * __group.json).  Every document is built as a jansson tree (json_t) and
 * printed by tdb_json_dump, never put together by hand. */
#ifndef TDB_JSON_H
#define TDB_JSON_H

#include "read/array.h"

#include <jansson.h>

/* ---------------------------------------------------------------- values
 * Each builder returns a new reference, or NULL when out of memory; the
 * tdb_jb helpers below take NULL as an error, so a tree can be built
 * without checking every call. */

/* An unsigned integer.  jansson's integers are int64, so a value above
 * INT64_MAX is held as a one-member object that tdb_json_dump prints as
 * the bare number (no document has such an object otherwise). */
json_t *tdb_json_u64(uint64_t v);
/* A string of n bytes exactly as given (not necessarily UTF-8: the
 * printer escapes invalid bytes as \u00XX). */
json_t *tdb_json_bytes(const void *s, size_t n);
json_t *tdb_json_cstr(const char *s);
/* Whether s[0..n) is UTF-8 as jansson takes it for a key or a checked
 * string (false also when memory is short). */
bool tdb_json_is_utf8(const void *s, size_t n);
/* A double: a number, or "NaN", "Infinity", "-Infinity" as strings. */
json_t *tdb_json_double(double d);
/* One value of a datatype (numbers, or a string for string types). */
json_t *tdb_json_value(unsigned type, const uint8_t *v, uint64_t n);
/* The schema part of __array.json (also what tiledbfs-create reads). */
json_t *tdb_json_schema(const struct tdb_schema *s);
/* A non-empty domain or region: [[lo, hi], ...], or null when r is NULL. */
json_t *tdb_json_ranges(const struct tdb_schema *s,
                        const struct tdb_range *r);

/* Building with sticky errors: the first failure is kept in jb->rc
 * (TDB_E_NOMEM) and later calls do nothing; a NULL value is a failure.
 * The value reference is always consumed. */
struct tdb_jb {
    int rc;
};
void tdb_jb_set(struct tdb_jb *jb, json_t *obj, const char *key, json_t *v);
void tdb_jb_push(struct tdb_jb *jb, json_t *arr, json_t *v);
/* A new object or array; NULL (and jb->rc set) on failure. */
json_t *tdb_jb_object(struct tdb_jb *jb);
json_t *tdb_jb_array(struct tdb_jb *jb);

/* ---------------------------------------------------------------- output */

/* Prints doc as the mount shows it: one line, ", " and ": " separators,
 * keys in insertion order, integers in decimal, doubles as %.17g (no
 * ".0" added), strings with '"', '\\', control characters, DEL and bytes
 * that are not valid UTF-8 escaped (\u00XX), then "\n".  Appends to out.
 * @return 0, TDB_E_NOMEM, or TDB_E_INVAL for a value JSON cannot hold. */
int tdb_json_dump(const json_t *doc, struct tdb_buf *out);
/* tdb_json_dump with every character above U+007F escaped (\uXXXX, a
 * surrogate pair above U+FFFF): ASCII, as Zarr's readers take JSON. */
int tdb_json_dump_ascii(const json_t *doc, struct tdb_buf *out);

/* The text of an array's __array.json: type, schema, (dense) the view
 * region lo..hi of `source` and its shape (none when empty), fragments and
 * their format versions, schema name, the open time range.
 * @return 0 or a negative TDB_E_*. */
int tdb_json_array(struct tdb_buf *out, const struct tdb_array *a,
                   const char *source, bool empty, const uint64_t *lo,
                   const uint64_t *hi);

/* __fragment.json of fragment f (the text, ending in "\n"). */
int tdb_json_fragment(struct tdb_buf *out, const struct tdb_frag *f,
                      uint64_t bytes_on_disk);

#endif
