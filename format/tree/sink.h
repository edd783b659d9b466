/* sink.h: what a read lends its sink until tdb_sink_release: the decoded
 * tiles its pieces lie in, the descriptors of the files its ranges lie
 * in, the buffer it copied into, and the pieces themselves. */
#ifndef TDB_SINK_H
#define TDB_SINK_H

#include "read/cache.h"
#include "tiledb_format.h"

#define TDB_LENT_PIECES 1023    /* pieces of one read: a reply of them and
                                 * its header is at most IOV_MAX */
#define TDB_LENT_TILES 64       /* tiles one read lends pieces of */
#define TDB_LENT_FDS 16         /* files one read gives ranges of */

struct tdb_lent {
    struct tdb_cache *cache;    /* of held[] */
    unsigned drop;              /* flags held[] are released with */
    size_t nheld;
    struct tdb_cache_entry *held[TDB_LENT_TILES];
    size_t nfd;
    int fds[TDB_LENT_FDS];
    void *buf;                  /* the copy's buffer, the read's own */
    struct tdb_piece pieces[TDB_LENT_PIECES];
};

/* s->lent, made when s has none.  @return NULL when out of memory. */
struct tdb_lent *tdb_sink_lent(struct tdb_sink *s);

/* Gives back l's tiles and descriptors (a lending that did not pay: the
 * read copies after all); keeps its buffer. */
void tdb_lent_clear(struct tdb_lent *l);

#endif
