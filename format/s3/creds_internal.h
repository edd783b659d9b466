/* creds_internal.h: what the three parts of the S3 credentials share:
 * creds_answer.c (key sets and the answers that carry them),
 * creds_source.c (fetching keys from a source) and creds.c (the set a
 * thread renews).  Not for use outside format/s3/. */
#ifndef TDB_S3_CREDS_INTERNAL_H
#define TDB_S3_CREDS_INTERNAL_H

#include "s3/s3.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3C_WHY 512                 /* a reason's room */

/* A growable buffer whose old copies are zeroed when it grows and whose
 * bytes are zeroed when freed: it holds answers with secret keys. */
struct tdb_s3_buf {
    char *p;
    size_t len, cap, max;
    bool over;          /* more than max bytes came */
};

/* Appends d[0..n) to b, keeping a NUL after its bytes.  @return 0, or
 * TDB_E_NOMEM (out of memory, or more than b->max bytes: b->over). */
int tdb_s3_buf_add(struct tdb_s3_buf *b, const void *d, size_t n);

/* Zeroes and frees b's bytes; b is empty after. */
void tdb_s3_buf_free(struct tdb_s3_buf *b);

/* Zeroes and frees the string s (NULL: nothing). */
void tdb_s3_zfree(char *s);

/* Can s be sent in a header (printable ASCII, no space)? */
bool tdb_s3_header_safe(const char *s);

/* A key set of copies of id, secret and token (NULL or "": none) that
 * expires at `expires` (0: never).  @return 0, TDB_E_CORRUPT (a key
 * missing or not fit for a header, named in why), TDB_E_NOMEM. */
int tdb_s3_keys_make(struct tdb_s3_keys **out, const char *id,
                     const char *secret, const char *token,
                     int64_t expires, char *why);

/* Fresh keys from src (on the calling thread).  @return 0 or a TDB_E_*
 * code with the reason in why (S3C_WHY bytes; never a secret). */
int tdb_s3_fetch(const struct tdb_s3_source *src,
                 struct tdb_s3_keys **out, char *why);

#endif
