/* fetch.h: the bytes of the tiles a reader will decode, asked for from
 * the storage before the decoding needs them (fetch.c).  For storage that
 * fetches ahead (tdb_io_ops.prefetch: object stores); elsewhere it does
 * nothing. */
#ifndef TDB_FETCH_H
#define TDB_FETCH_H

#include "read/view.h"

struct tdb_fetcher;

/* A fetcher for reads of field file ff (fixed-size values or validity),
 * or NULL (*out) when its storage does not fetch ahead.
 * @return 0 or TDB_E_NOMEM. */
int tdb_fetcher_new(struct tdb_fetcher **out, struct tdb_fieldfile *ff);
void tdb_fetcher_free(struct tdb_fetcher *fx);

/* A read of the field's bytes [off, off + len) begins: the tiles it
 * touches are asked for together (their ranges of a file join into one
 * GET), and while reads follow one another the tiles of a window ahead
 * too: it starts at TDB_FETCH_WIN_MIN bytes of the file and grows four
 * times with each read that goes on, up to TDB_FETCH_WIN_MAX (the storage bounds the
 * bytes it holds fetched and not yet read: s3_readahead=).  A read
 * elsewhere starts again small.  fx NULL: nothing.  Thread-safe. */
#define TDB_FETCH_WIN_MIN (8u << 20)
#define TDB_FETCH_WIN_MAX (256u << 20)
void tdb_fetcher_read(struct tdb_fetcher *fx, uint64_t off, uint64_t len);

#endif
