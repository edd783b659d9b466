/* cons.h: what the consolidations and vacuums of format/consolidate/
 * share (their calls are public: tiledb_format_write.h): the array as
 * they find it, and the name of the file a consolidation writes. */
#ifndef TDB_CONS_H
#define TDB_CONS_H

#include "model/arraydir.h"
#include "model/schemas.h"
#include "tiledb_format_write.h"

/* The array at the root of io as a consolidation opens it: its folder
 * over every timestamp, its schemas and the newest one. */
struct tdb_cons_array {
    struct tdb_arraydir *dir;
    struct tdb_schema_set schemas;
    const struct tdb_schema *latest;
    uint32_t write_version;     /* what TileDB writes for this array: the
                                 * newest schema's version, or 22 below 7 */
    const uint8_t *key;         /* NULL unless the array is encrypted */
};

/* Loads a; a key is needed (TDB_E_NOKEY) when the array is encrypted.
 * Free with tdb_cons_array_free, on failure too. */
int tdb_cons_array_load(const struct tdb_io *io, const uint8_t *key,
                        struct tdb_cons_array *a, struct tdb_error *err);
void tdb_cons_array_free(struct tdb_cons_array *a);

/* A fragment consolidation's tile cache when not told. */
#define TDB_CONS_CACHE_BYTES (128ull << 20)

/* The end of the temporary names of consolidations (TDB_VAC_PENDING, a
 * fragment consolidation's .vac, ends so too). */
#define TDB_CONS_TMP ".cons.tmp"

/* A file a consolidation writes: "DIR/__t1_t2_<uuid>[_v]SUFFIX", v left
 * out when version is 0. */
struct tdb_cons_file {
    const char *dir;
    uint64_t t1, t2;            /* the times of what it consolidates */
    uint32_t version;
    const char *suffix;
};

/* The name of consolidated file f into out[cap], and its temporary name
 * (what tdb_io_publish writes first) into tmp[cap]:
 * ".__t1_t2_<uuid>[_v]SUFFIX" TDB_CONS_TMP in the array's folder, where
 * neither TileDB nor the engine takes a file for metadata (in
 * __fragment_meta or __meta, both would read any file as one). */
int tdb_cons_name(const struct tdb_cons_file *f, char *out, char *tmp,
                  size_t cap, struct tdb_error *err);

/* Removes file `path` (relative to the array), counting it in r->removed;
 * a file already gone is no error. */
int tdb_cons_remove(const struct tdb_io *io, const char *path,
                    struct tdb_cons_result *r, struct tdb_error *err);

/* Removes the temporary files (".__*" TDB_CONS_TMP) that consolidations
 * killed before their rename left in the array's folder, but a fragment
 * consolidation's vacuum file (".__*.vac" TDB_CONS_TMP), which names what
 * its fragment replaces: tdb_consolidate_fragments and
 * tdb_vacuum_fragments finish or undo that consolidation. */
int tdb_cons_sweep(const struct tdb_io *io, struct tdb_cons_result *r,
                   struct tdb_error *err);

#endif
