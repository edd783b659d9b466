/* header.h: the response headers of an S3 answer, as loop.c
 * reads them.  A separate header so that a fuzz target
 * (tests/fuzz/fuzz_s3_headers.c) reaches what a hostile endpoint sends. */
#ifndef TDB_OBJSTORE_HEADER_H
#define TDB_OBJSTORE_HEADER_H

#include "objstore/objstore.h"

/* The longest ETag kept: a longer one is none (the disk cache then keeps
 * nothing of the object). */
#define OS_ETAG_MAX 1024

/* Reads one header line p[0..n) of c's answer, as libcurl hands it (not
 * NUL-terminated, its CR LF included): "ETag: V" sets c->etag to a copy
 * of V (NULL when V is empty, longer than OS_ETAG_MAX, holds a byte that
 * is not printable ASCII, or out of memory);
 * "Content-Range: bytes A-B/TOTAL" sets c->total to TOTAL when it is a
 * number of at most 18 digits (otherwise c->total stays as it was: -1,
 * unknown).  Other lines are ignored. */
void tdb_os_header_line(struct os_call *c, const char *p, size_t n);

#endif
