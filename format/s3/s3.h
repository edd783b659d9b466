/* s3.h: the S3 protocol beneath the object-store backend (objstore/):
 * AWS Signature Version 4 (sign.c; the encodings it signs are store.h's),
 * the XML of S3's answers (xml.c), the ini files of ~/.aws (config.c), the
 * credentials and their renewal (creds.c).  It knows nothing of the I/O
 * thread: the backend hands it what a request is and reads what it says. */
#ifndef TDB_S3_H
#define TDB_S3_H

#include "core/core.h"
#include "core/store.h"


/* A request to sign with AWS Signature Version 4. */
struct tdb_s3_request {
    const char *method;         /* "GET", "PUT", ... */
    const char *path;           /* encoded: "/bucket/key" or "/key" */
    const char *query;          /* canonical (tdb_store_query), or "" */
    const struct tdb_store_pair *hdr;  /* the headers to sign, any case and
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

/* Parses an S3 answer's body into a (entries named relative to `prefix`):
 * a ListObjectsV2 result, a multipart upload's start, a copy's result, or
 * an Error.  Free a with tdb_store_answer_free whatever the outcome.
 * @return 0, TDB_E_CORRUPT (not XML) or TDB_E_NOMEM. */
int tdb_s3_xml_parse(struct tdb_store_answer *a, const struct tdb_buf *body,
                     const char *prefix);


/* ------------------------------------------ credentials (creds.c) */

/* Where credentials come from (config.c finds it, as the AWS SDKs'
 * default chain does; tiledb_format.h's tdb_s3_config_load documents the
 * chain). */
enum tdb_s3_src_kind {
    TDB_S3_SRC_KEYS,        /* static keys (id, secret, token) */
    TDB_S3_SRC_PROCESS,     /* credential_process: `command` */
    TDB_S3_SRC_ROLE,        /* STS AssumeRole, signed by the keys of from */
    TDB_S3_SRC_WEB,         /* STS AssumeRoleWithWebIdentity (token_file) */
    TDB_S3_SRC_CONTAINER,   /* the container endpoint `url` (auth) */
    TDB_S3_SRC_IMDS,        /* EC2 instance metadata at `url`, IMDSv2 */
};

/* One source; every string owned (NULL: not given). */
struct tdb_s3_source {
    enum tdb_s3_src_kind kind;
    char *what;                 /* names it in messages ("profile dev's
                                 * credential_process"); never a secret */
    char *id, *secret, *token;  /* KEYS */
    char *command;              /* PROCESS: run by /bin/sh -c */
    char *role_arn;             /* ROLE, WEB */
    char *session_name;         /* ROLE, WEB; NULL: tiledbfs-MS */
    char *external_id;          /* ROLE */
    unsigned duration_s;        /* ROLE, WEB; 0: STS's default */
    char *token_file;           /* WEB: read at each request */
    char *sts_url;              /* ROLE, WEB: STS's endpoint */
    char *sts_region;           /* ROLE: the region its signature names */
    struct tdb_s3_source *from; /* ROLE: whose keys sign AssumeRole */
    char *url;                  /* CONTAINER: the full URL; IMDS: the
                                 * endpoint (no trailing '/') */
    char *auth, *auth_file;     /* CONTAINER: the Authorization value, or
                                 * the file holding it (read each time) */
    unsigned timeout_ms;        /* CONTAINER, IMDS: to connect (IMDS: a
                                 * request takes twice that at most) */
};

/* Frees src and its `from` chain, zeroing the secrets (NULL: nothing). */
void tdb_s3_source_free(struct tdb_s3_source *src);

/* One set of keys, never changed once made: signers hold it
 * (tdb_s3_creds_hold) while they sign. */
struct tdb_s3_keys {
    char *id, *secret, *token;  /* token NULL: none */
    int64_t expires;            /* wall-clock ms since the epoch; 0: never */
    int64_t got;                /* when it was fetched (wall-clock ms) */
    uint64_t gen;               /* its number in its tdb_s3_creds */
    unsigned refs;              /* the tdb_s3_creds' lock */
};

/* The keys a backend signs with, renewed while it runs.  Thread-safe;
 * refcounted (a tdb_s3_config holds one reference, each backend one). */
struct tdb_s3_creds;

/* Credentials from src (taken, freed on failure too), fetched now on the
 * calling thread.  Keys with an expiry are renewed from the same source
 * (see tdb_s3_renew_at).  @return 0, or a TDB_E_* code (TDB_E_IO: not
 * reached; TDB_E_ACCES: refused; TDB_E_CORRUPT: an answer not as AWS
 * documents it) with err "credentials from WHAT: WHY". */
int tdb_s3_creds_new(struct tdb_s3_creds **out, struct tdb_s3_source *src,
                     struct tdb_error *err);
/* Keys that never change (copied).  @return 0, TDB_E_INVAL (a key empty
 * or holding bytes a header cannot carry), TDB_E_NOMEM. */
int tdb_s3_creds_keys(struct tdb_s3_creds **out, const char *id,
                      const char *secret, const char *token);
/* Another reference (c may be NULL); unref drops one: the last waits for
 * a renewal under way, then frees all, zeroing the secrets. */
struct tdb_s3_creds *tdb_s3_creds_ref(struct tdb_s3_creds *c);
void tdb_s3_creds_unref(struct tdb_s3_creds *c);

/* When keys fetched at `got` that expire at `expires` (wall-clock ms) are
 * renewed: when less than a third of their lifetime, and at most 5
 * minutes, is left. */
int64_t tdb_s3_renew_at(int64_t got, int64_t expires);

/* The current keys, held until tdb_s3_creds_drop (NULL when c is NULL).
 * Never waits for a fetch (the I/O thread calls it).  Keys that expire
 * have a renewal thread, started by the first hold (again after a fork,
 * or once it ended): it sleeps until they are due (tdb_s3_renew_at) and
 * renews them, one fetch at a time, while they are used (held since its
 * last fetch); an unused set is left as it is and the thread ends.  Until
 * a renewal ends, the current keys are given. */
struct tdb_s3_keys *tdb_s3_creds_hold(struct tdb_s3_creds *c);
void tdb_s3_creds_drop(struct tdb_s3_creds *c, struct tdb_s3_keys *k);

/* For a caller's thread (never the I/O thread) about to make a request:
 * when the keys are in their last tenth of life (at most their last
 * minute), or past it, starts their renewal and waits for it (10 s at
 * most).  Does nothing otherwise. */
void tdb_s3_creds_wait(struct tdb_s3_creds *c);

/* How one try of a request ended, for tdb_s3_creds_retry. */
struct tdb_s3_try {
    long status;                  /* the HTTP status; 0: no answer came */
    const struct tdb_buf *body;   /* the answer's body */
    uint64_t keys_gen;            /* the keys that signed it (their gen) */
    uint64_t deadline;            /* of the request (ms, monotonic); 0:
                                   * none */
    bool *renewed;                /* the request's: set when it is tried
                                   * again after a renewal (once) */
};
/* On the I/O thread, after try t ended: was it refused for expired or
 * invalid keys (400 or 403 with ExpiredToken, InvalidToken,
 * TokenRefreshRequired or ExpiredTokenException; a bodiless 400 with keys
 * past their expiry or replaced)?  Then, once a request (*t->renewed), a
 * renewal starts if those keys are still the current ones, and @return
 * true with *wait_ms the time to give it before the request is tried
 * again (within its deadline). */
bool tdb_s3_creds_retry(struct tdb_s3_creds *c, const struct tdb_s3_try *t,
                        uint64_t now_ms, uint64_t *wait_ms);

/* Counts, for tests. */
struct tdb_s3_creds_stats {
    uint64_t fetches;           /* the first one and the renewals */
    uint64_t failures;          /* renewals that failed */
    int64_t expires;            /* of the current keys (0: never) */
};
void tdb_s3_creds_stats(struct tdb_s3_creds *c,
                        struct tdb_s3_creds_stats *st);

/* The parsers of the answers, for the unit tests: an ISO 8601 time
 * ("2024-05-01T12:00:00Z", fractions and +HH:MM offsets too) as wall ms;
 * a JSON answer (process: credential_process's Version 1 output with
 * SessionToken, else the container's or IMDS's with Token and
 * Expiration); an STS AssumeRole* answer (an ErrorResponse: TDB_E_ACCES
 * with its code and message in why).  why: room for 512 bytes.  @return 0
 * (*out a new key set, refs 0) or a TDB_E_* code with the reason in why. */
int tdb_s3_time_parse(const char *s, int64_t *ms);
int tdb_s3_creds_json(const char *text, size_t len, bool process,
                      struct tdb_s3_keys **out, char *why);
int tdb_s3_creds_sts(const char *body, size_t len, struct tdb_s3_keys **out,
                     char *why);
/* Frees a key set that no tdb_s3_creds holds (a parser's). */
void tdb_s3_keys_free(struct tdb_s3_keys *k);

/* A small file's text (an ini file of ~/.aws, a token): NUL-terminated,
 * *len bytes, at most 1 MiB.  @return it (free it zeroed: it may hold
 * secrets), or NULL with *why a short reason (a folder, not a regular
 * file, larger than 1 MiB, strerror's). */
char *tdb_s3_slurp(const char *path, size_t *len, const char **why);

#endif
