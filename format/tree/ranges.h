/* ranges.h: a reader's bytes as ranges of the array's own files, where
 * they are the stored bytes of unfiltered tiles (TDB_SINK_FILE):
 * the chunk maps of the tiles read last, and the rule of when a read is
 * worth answering so. */
#ifndef TDB_RANGES_H
#define TDB_RANGES_H

#include "read/view.h"
#include "tiledb_format.h"

struct tdb_rangemaps;

/* @return NULL when out of memory. */
struct tdb_rangemaps *tdb_rangemaps_new(void);
void tdb_rangemaps_free(struct tdb_rangemaps *m);

/* Bytes [off, off + len) of fixed-size values file ff as ranges of its
 * data files into s (s->form TDB_SINK_FILE, the descriptors lent), when
 * they are worth giving so; else s is left as it was (what it lends may
 * have been made).  @return 0 or an error. */
int tdb_rangemaps_read(struct tdb_rangemaps *m, struct tdb_fieldfile *ff,
                       uint64_t off, size_t len, struct tdb_sink *s,
                       struct tdb_error *err);

#endif
