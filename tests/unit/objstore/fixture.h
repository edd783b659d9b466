/* fixture.h: the object-store tests' own HTTP server
 * (tests/unit/objstore/test_objstore.c), in the tests' library
 * (fixture.c), and a backend on it. */
#ifndef TDB_UNIT_OBJSTORE_FIXTURE_H
#define TDB_UNIT_OBJSTORE_FIXTURE_H

#include "tiledb_format.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A small HTTP/1.1 server on 127.0.0.1: each connection on a thread of its
 * own; an answer's body is the request's path, sent after `delay_ms`,
 * except for paths containing "stall", never answered (a PUT's answer
 * has no body, as S3's).  It counts the requests it is answering at once
 * (its peak tells how many were in flight) and the PUTs that came, and
 * keeps the body of the last PUT it answered. */
struct http_srv {
    int fd;
    int port;
    int delay_ms;
    pthread_t acceptor;
    pthread_mutex_t lock;
    int now, peak, served;
    bool stop;
    /* the second request on the first connection is read whole and not
     * answered: the connection closes there, with no "Connection: close"
     * before (as a server may close a kept-alive connection at any time,
     * RFC 9112 9.6) */
    bool drop_second;
    int puts;                   /* PUT requests read whole */
    uint8_t *put_body;          /* of the last PUT answered (kept before
                                 * the answer is sent) */
    size_t put_len;
    pthread_t conn[64];         /* the connections' threads */
    int nconn;
};

#define DATA_SIZE 100000     /* the objects named "...data..." */

/* Byte i of a "...data..." object. */
static inline uint8_t data_byte(uint64_t i)
{
    return (uint8_t)(i * 7 + i / 256);
}

/* Starts s on a port of its own, answering after delay_ms.  @return 0
 * or -1. */
int http_start(struct http_srv *s, int delay_ms);

/* Stops s: its connections closed, its threads joined. */
void http_stop(struct http_srv *s);

/* A backend on the server, tuned: `requests` in flight, reads within
 * timeout_s.  @return tdb_io_s3's code. */
int http_backend(struct tdb_io *io, const struct http_srv *srv,
                 unsigned requests, unsigned timeout_s);

#endif
