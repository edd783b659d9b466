/* store.h: the words every object store shares, below their protocols
 * (format/s3/, format/azure/) and the layer that runs them
 * (format/objstore/): a header or query parameter, the percent-encoding
 * of paths and queries, hex, and what an answer holds (a listing's
 * entries, its next page, an upload's id, an error's code and message),
 * which each protocol's parser fills. */
#ifndef TDB_STORE_H
#define TDB_STORE_H

#include "core/core.h"

#include <sys/types.h>

/* One HTTP header or query parameter. */
struct tdb_store_pair {
    const char *name;
    const char *value;
};

/* Percent-encodes `s` as S3's canonical form wants it (and Azure takes):
 * every byte but A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash) becomes
 * %XX (upper-case hex).  @return a new string, or NULL on ENOMEM. */
char *tdb_store_encode(const char *s, bool keep_slash);

/* Percent-decodes s[0..n) into out (room for n + 1 bytes, NUL-terminated):
 * each %XX (either case of hex) becomes its byte.  @return the decoded
 * length, or -1 when a '%' is not followed by two hex digits or decodes
 * to a NUL (the text is no encoding tdb_store_encode makes). */
ssize_t tdb_store_decode(const char *s, size_t n, char *out);

/* The canonical query string of `n` parameters: each name and value
 * encoded, sorted by name then value, joined "a=1&b=2" ("" for none).
 * @return a new string or NULL. */
char *tdb_store_query(const struct tdb_store_pair *p, size_t n);

struct curl_slist;
/* Appends the header line "name: value" to *hl (the line, which may hold
 * a secret, zeroed once libcurl copied it).  @return 0 or TDB_E_NOMEM. */
int tdb_store_header_add(struct curl_slist **hl, const char *name,
                         const char *value);

/* n bytes as 2n lower-case hex digits and a NUL. */
void tdb_store_hex(const unsigned char *d, size_t n, char *out);

/* One entry of a listing: a name below the listed prefix. */
struct tdb_store_dent {
    char *name;
    bool is_dir;
    uint64_t size;
    char *etag;         /* as the listing gives it (quoted), or NULL */
};

/* Frees n entries and the array. */
void tdb_store_dents_free(struct tdb_store_dent *e, size_t n);

/* What an answer's body said, as a protocol's parser found it. */
struct tdb_store_answer {
    const char *prefix;      /* the listed prefix: stripped from names */
    size_t plen;
    struct tdb_store_dent *e;  /* entries found */
    size_t n, cap;
    unsigned nkeys;          /* objects seen (before any was left out) */
    bool truncated;          /* another page follows */
    char *token;             /* the next page's token (S3) or marker */
    char *upload_id;         /* a multipart upload's id */
    char *result_etag;       /* the ETag of a copy's result */
    char *code, *message;    /* an error's */
    bool is_error;
    int fail;                /* the parser's own failure, or 0 */
};

/* Starts an empty answer to a listing of `prefix` (NULL: none). */
void tdb_store_answer_init(struct tdb_store_answer *a, const char *prefix);

/* Adds the entry for key `full` (a folder when is_dir; its trailing '/'
 * dropped) named after the prefix, taking *etag (set NULL).  A key
 * outside the prefix, the folder's own marker ("prefix/") and a name
 * with an empty, "." or ".." part (a hostile or broken server: keys may
 * hold them) are left out.  Out of memory sets a->fail. */
void tdb_store_answer_add(struct tdb_store_answer *a, const char *full,
                          bool is_dir, uint64_t size, char **etag);

/* Frees what the answer holds (not the prefix). */
void tdb_store_answer_free(struct tdb_store_answer *a);

#endif
