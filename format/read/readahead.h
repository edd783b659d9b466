/* readahead.h: the read-ahead policy of a reader of a fixed-size field
 * file (values or validity): which tiles a read and the reads after it
 * want, kept in the cache and decoded on every core before the read
 * copies them (readahead.c says how much, and within what budget).  The
 * reader (tree/reader.c) only brackets each read of the field's bytes
 * with tdb_readahead_start and tdb_readahead_end and copies or lends the
 * bytes between them; all the policy is here, as mountpoint-s3 keeps its
 * prefetcher apart from its reads. */
#ifndef TDB_READAHEAD_H
#define TDB_READAHEAD_H

#include "core/pool.h"
#include "read/view.h"

struct tdb_readahead;

/* One read under way, from tdb_readahead_start to tdb_readahead_end. */
struct tdb_ra_read {
    uint64_t epoch, poff, pend;     /* the read's number and its bytes */
    bool seq;                       /* it goes on where the last ended */
    bool active;                    /* counted among the reads under way */
    unsigned drop;                  /* the cache flags its lent tiles are
                                     * released with (tiles read past go) */
};

/* The read-ahead of fixed-size field file ff (of file_size bytes): tiles
 * decoded ahead by `pool` (NULL: none ahead; a read's own tiles are then
 * decoded by the read), within the cache's `budget`.  @return 0 or
 * TDB_E_NOMEM. */
int tdb_readahead_new(struct tdb_readahead **out, struct tdb_fieldfile *ff,
                      struct tdb_pool *pool, uint64_t budget,
                      uint64_t file_size);

/* Waits for the jobs of ra still running and lets its tiles go (NULL:
 * nothing). */
void tdb_readahead_free(struct tdb_readahead *ra);

/* A read of the field's bytes [poff, poff + plen) starts: its tiles are
 * planned, pinned and decoded (by the pool, and those left by the calling
 * thread where the budget has room), and reading on those ahead.  Errors
 * are the read's to report: a plan is only a hint.  End it with
 * tdb_readahead_end(ra, rr).  @return the pieces of tiles the read gives
 * (a measure of whether they are long enough to lend). */
uint64_t tdb_readahead_start(struct tdb_readahead *ra, uint64_t poff,
                             size_t plen, struct tdb_ra_read *rr);
void tdb_readahead_end(struct tdb_readahead *ra, const struct tdb_ra_read *rr);

/* How much of the field's bytes [poff, poff + plen) to read before the
 * rest: up to where a row of tiles pinned now ends, when the cache is over
 * its budget (a read across two rows of tiles then holds one at a time:
 * the kernel's 1 MiB reads rarely start where a row does); else plen. */
size_t tdb_readahead_cut(struct tdb_readahead *ra, uint64_t poff,
                         size_t plen);

#endif
