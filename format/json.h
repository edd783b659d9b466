/* json.h: the JSON documents of the mount (__array.json, __fragment.json,
 * __group.json), written with a small escaping string builder. */
#ifndef TDB_JSON_H
#define TDB_JSON_H

#include "array.h"

/* A JSON text being built; errors stick (checked once at the end). */
struct tdb_json {
    struct tdb_buf b;
    int err;
    bool need_comma;
};

void tdb_json_raw(struct tdb_json *j, const char *s);
void tdb_json_key(struct tdb_json *j, const char *k);      /* "k": */
void tdb_json_str(struct tdb_json *j, const char *s, size_t n);
void tdb_json_cstr(struct tdb_json *j, const char *s);
void tdb_json_u64(struct tdb_json *j, uint64_t v);
void tdb_json_bool(struct tdb_json *j, bool v);
void tdb_json_open(struct tdb_json *j, char c);            /* { or [ */
void tdb_json_close(struct tdb_json *j, char c);           /* } or ] */
/* One value of a datatype as JSON (numbers, or a string for strings). */
void tdb_json_value(struct tdb_json *j, unsigned type, const uint8_t *v,
                    uint64_t n);

/* The schema part of __array.json (also what tiledbfs-create reads). */
void tdb_json_schema(struct tdb_json *j, const struct tdb_schema *s);
/* A non-empty domain or region: [[lo, hi], ...]. */
void tdb_json_ranges(struct tdb_json *j, const struct tdb_schema *s,
                     const struct tdb_range *r);
/* __fragment.json of fragment f. */
int tdb_json_fragment(struct tdb_buf *out, const struct tdb_frag *f,
                      uint64_t bytes_on_disk);

#endif
