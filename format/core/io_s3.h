/* io_s3.h: the S3 backend's internals that the unit tests check: AWS
 * Signature Version 4, the query and path encodings (io_s3_sign.c), the
 * ini files of ~/.aws (io_s3_config.c), the coalescing of ranges into
 * GETs (io_s3_fetch.c). */
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

/* A request to sign with AWS Signature Version 4. */
struct tdb_s3_request {
    const char *method;         /* "GET", "PUT", ... */
    const char *path;           /* encoded: "/bucket/key" or "/key" */
    const char *query;          /* canonical (tdb_s3_query), or "" */
    const struct tdb_s3_pair *hdr;  /* the headers to sign, any case and
                                     * order (host, x-amz-date and
                                     * x-amz-content-sha256 among them) */
    size_t nhdr;
    const char *payload_hash;   /* hex SHA-256 of the body (also
                                 * x-amz-content-sha256) */
    const char *amz_date;       /* "YYYYMMDDTHHMMSSZ" (x-amz-date) */
};

/* Who signs: the region and the credentials. */
struct tdb_s3_signer {
    const char *region, *key_id, *secret;
};

/* The Authorization header value of request rq signed by `by` for AWS
 * service `service` ("s3", "sts": the scope DAY/REGION/SERVICE/aws4_request
 * and the signing key's chain name it), into out (cap bytes).  @return 0,
 * TDB_E_INVAL (out too small, or a region or service name too long) or
 * TDB_E_NOMEM.  tdb_s3_sigv4 signs for "s3". */
int tdb_s3_sigv4_for(char *out, size_t cap, const struct tdb_s3_request *rq,
                     const struct tdb_s3_signer *by, const char *service);
int tdb_s3_sigv4(char *out, size_t cap, const struct tdb_s3_request *rq,
                 const struct tdb_s3_signer *by);

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

/* A byte range wanted of one file. */
struct tdb_s3_range {
    uint64_t off, len;
};

/* One GET serving ranges first..first+count-1 (after sorting): bytes
 * [off, off + len), of which `want` were asked for. */
struct tdb_s3_span {
    uint64_t off, len, want;
    size_t first, count;
};

/* Sorts r[n] by offset and joins them into GETs: a range that starts at
 * most `gap` bytes after the span before ends joins it (the gap is fetched
 * too) unless the span would pass `max` bytes; overlapping ranges join.
 * Writes the spans to out (room for n).  @return their number. */
size_t tdb_s3_coalesce(struct tdb_s3_range *r, size_t n, uint64_t gap,
                       uint64_t max, struct tdb_s3_span *out);

#endif
