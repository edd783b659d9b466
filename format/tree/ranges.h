/* ranges.h: a reader's bytes as ranges of the array's own files, where
 * they are the stored bytes of unfiltered tiles (tdb_reader_read_ranges):
 * the chunk maps of the tiles read last, and the rule of when a read is
 * worth answering so. */
#ifndef TDB_RANGES_H
#define TDB_RANGES_H

#define TDB_UNSTABLE_API
#include "read/view.h"
#include "tiledb_format.h"

struct tdb_rangemaps;

/* @return NULL when out of memory. */
struct tdb_rangemaps *tdb_rangemaps_new(void);
void tdb_rangemaps_free(struct tdb_rangemaps *m);

/* tdb_reader_read_ranges over fixed-size values file ff. */
int tdb_rangemaps_read(struct tdb_rangemaps *m, struct tdb_fieldfile *ff,
                       uint64_t off, size_t len, struct tdb_file_ranges *out,
                       size_t *got, struct tdb_error *err);

#endif
