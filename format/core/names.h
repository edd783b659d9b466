/* names.h: timestamped names (format_spec/timestamped_name.md), both
 * directions, and what new names are made of: the engine's one clock and
 * its one random source. */
#ifndef TDB_NAMES_H
#define TDB_NAMES_H

#include "core/core.h"

/* A parsed timestamped name: __t1_t2_uuid_v (v5+), __t1_t2_uuid (v3-4),
 * __uuid_t1[_t2] (v1-2).  version is 0 where the name has none. */
struct tdb_tsname {
    uint64_t t1, t2;
    uint32_t version;
    char uuid[64];
    unsigned era;   /* 1: __uuid_t (v1-2), 2: __t1_t2_uuid, 3: with _v */
};
/* The last component of `path` (trailing '/' ignored): a pointer into
 * path and its length *len (not NUL-terminated). */
const char *tdb_last_component(const char *path, size_t *len);

/* Parses the last path component of `name` (an extension after its last
 * '.' is ignored), deciding the era as TileDB's FragmentID does: five '_'
 * make era 3; otherwise a 32-character last field makes era 2; otherwise
 * era 1, whose last field is both t1 and t2.
 * @return 0, or TDB_E_CORRUPT for a malformed name (out is then zeroed). */
int tdb_tsname_parse(const char *name, struct tdb_tsname *out);

/* The times of a name that starts "__t1_t2_" (a schema file's: whatever
 * follows is not checked).  @return false for any other name. */
bool tdb_tsname_times(const char *name, uint64_t *t1, uint64_t *t2);

/* A new timestamped name into out[cap]: __t1_t2_<32 hex of rnd>_<version>,
 * or __t1_t2_<32 hex> when version is 0 (schema and metadata files). */
void tdb_tsname_make(char *out, size_t cap, uint64_t t1, uint64_t t2,
                     const uint8_t rnd[16], uint32_t version);

/* A sparse fragment whose cells all have distinct coordinates, as a
 * consolidation that found no two versions of a cell writes it, is marked
 * in its name: the second half of its uuid is the first 8 bytes of
 * SHA-256("tiledbfs: distinct cells" || the first half || t1 || t2, times
 * as little-endian u64) (a random uuid matches by chance once in 2^64).
 * TileDB takes the uuid for random; a reader that knows the mark reads
 * such a fragment, alone and opened over its whole time span, without
 * comparing its cells' coordinates or timestamps.  tdb_tsname_mark sets
 * rnd[8..16) from rnd[0..8); tdb_tsname_marked checks a parsed name. */
void tdb_tsname_mark(uint8_t rnd[16], uint64_t t1, uint64_t t2);
bool tdb_tsname_marked(const struct tdb_tsname *ts);

/* The engine's clock, tdb_now_ms (ms since the epoch, CLOCK_REALTIME), is
 * public: tiledb_format_write.h. */

/* The engine's random source: n bytes from getrandom (else /dev/urandom),
 * good for names and for AES-GCM IVs.  @return 0 or TDB_E_IO. */
int tdb_random(void *out, size_t n, struct tdb_error *err);

#endif
