/* io_s3.h: the S3 backend's internals that the unit tests check: AWS
 * Signature Version 4, the query and path encodings, and the ini files of
 * ~/.aws (io_s3.c). */
#ifndef TDB_IO_S3_H
#define TDB_IO_S3_H

#include "core/core.h"

/* One HTTP header or query parameter. */
struct tdb_s3_pair {
    const char *name;
    const char *value;
};

/* Percent-encodes `s` as S3's canonical form wants it: every byte but
 * A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash) becomes %XX (upper-case
 * hex).  @return a new string, or NULL on ENOMEM. */
char *tdb_s3_encode(const char *s, bool keep_slash);

/* The canonical query string of `n` parameters: each name and value
 * encoded, sorted by name then value, joined "a=1&b=2" ("" for none).  The
 * same string is the request's query.  @return a new string or NULL. */
char *tdb_s3_query(const struct tdb_s3_pair *p, size_t n);

/* The Authorization header value of a request signed with AWS Signature
 * Version 4 (service "s3"):
 *   method        "GET", "PUT", ...
 *   path          the encoded path ("/bucket/key" or "/key")
 *   query         its canonical query string (tdb_s3_query), or ""
 *   hdr, nhdr     the headers to sign, any case and order (host,
 *                 x-amz-date and x-amz-content-sha256 among them)
 *   payload_hash  hex SHA-256 of the body (also x-amz-content-sha256)
 *   amz_date      "YYYYMMDDTHHMMSSZ" (the x-amz-date header)
 * into out (cap bytes).  @return 0, TDB_E_INVAL (out too small) or
 * TDB_E_NOMEM. */
int tdb_s3_sigv4(char *out, size_t cap, const char *method, const char *path,
                 const char *query, const struct tdb_s3_pair *hdr,
                 size_t nhdr, const char *payload_hash, const char *amz_date,
                 const char *region, const char *key_id, const char *secret);

/* Hex SHA-256 of len bytes (65 bytes written, NUL-terminated). */
void tdb_s3_sha256_hex(const void *data, size_t len, char out[65]);

/* The value of `key` in section `section` of an ini file (the format of
 * ~/.aws/credentials and ~/.aws/config): "[section]" lines, "key = value"
 * lines, '#' and ';' comment lines; names are matched case-insensitively,
 * spaces around names and values are dropped; indented lines (the
 * sub-settings of the AWS CLI, "s3 =\n  addressing_style = path") are
 * skipped.  With key NULL, whether the section is there (0, *value
 * NULL).  @return 0 with *value a new string, TDB_E_NOENT, TDB_E_NOMEM. */
int tdb_s3_ini_get(const char *text, size_t len, const char *section,
                   const char *key, char **value);

#endif
