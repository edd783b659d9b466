/* sink.c: what a read lends its sink (tiledb_format.h "reading a file"),
 * given back by tdb_sink_release. */
#include "tree/sink.h"

#include <stdlib.h>
#include <unistd.h>

struct tdb_lent *tdb_sink_lent(struct tdb_sink *s)
{
    if (!s->lent && (s->lent = malloc(sizeof *s->lent))) {
        s->lent->cache = NULL;
        s->lent->drop = 0;
        s->lent->nheld = s->lent->nfd = 0;
        s->lent->buf = NULL;
    }
    return s->lent;
}

void tdb_lent_clear(struct tdb_lent *l)
{
    for (size_t i = 0; i < l->nheld; i++)
        tdb_cache_release_flags(l->cache, l->held[i], l->drop);
    for (size_t i = 0; i < l->nfd; i++)
        close(l->fds[i]);
    l->nheld = l->nfd = 0;
}

int tdb_sink_buffer(struct tdb_sink *s, size_t len)
{
    if (s->buf)
        return 0;
    struct tdb_lent *l = tdb_sink_lent(s);
    if (!l || !(l->buf = malloc(len ? len : 1)))
        return TDB_E_NOMEM;
    s->buf = l->buf;
    return 0;
}

void tdb_sink_release(struct tdb_sink *s)
{
    struct tdb_lent *l = s->lent;
    if (l) {
        tdb_lent_clear(l);
        if (s->buf == l->buf)
            s->buf = NULL;
        free(l->buf);
        free(l);
    }
    s->lent = NULL;
    s->pieces = NULL;
    s->npieces = 0;
}
