/* io_s3_local.h: what the files of the S3 backend share: the backend's
 * state, one HTTP request (io_s3_http.c), the XML answers (io_s3_xml.c).
 * The backend proper is io_s3.c; signing io_s3_sign.c; the AWS
 * configuration io_s3_config.c. */
#ifndef TDB_IO_S3_LOCAL_H
#define TDB_IO_S3_LOCAL_H

#include "core/core.h"
#include "core/io_s3.h"

#include <curl/curl.h>
#include <expat.h>
#include <pthread.h>

#define S3_POOL 16             /* idle curl handles kept (each keeps its
                                * connection alive) */
#define S3_CACHE_BUCKETS 4096

struct s3_dent {
    char *name;
    bool is_dir;
    uint64_t size;
};


struct s3_dir;
struct s3_pending;

struct s3 {
    char *bucket;
    char *prefix;        /* key prefix of the root, no trailing '/'; "" */
    char *base;          /* scheme://host[:port][/path] requests go to */
    char *host;          /* the Host header */
    char *uri_base;      /* "" or "/BUCKET" (path-style), before the key */
    char *region, *key_id, *secret, *token;
    pthread_mutex_t lock;
    CURL *idle[S3_POOL];
    size_t nidle;
    struct s3_dir *cache[S3_CACHE_BUCKETS];
    size_t ncached;
    struct s3_pending *pend;
};

enum s3_sink { S3_SINK_NONE, S3_SINK_BUF, S3_SINK_FD, S3_SINK_MEM };

/* One request and what came back. */
struct s3_call {
    const char *method;       /* GET, HEAD, PUT, DELETE */
    const char *key;          /* object key; NULL: the bucket */
    const char *query;        /* canonical query, or NULL */
    char range[64];           /* "bytes=A-B" or "" */
    const char *copy_source;  /* x-amz-copy-source (encoded) or NULL */
    int up_fd;                /* PUT body: a file of up_len bytes, or -1 */
    uint64_t up_len, up_pos;
    enum s3_sink sink;
    uint8_t *dst;             /* S3_SINK_BUF: dst_len bytes wanted */
    size_t dst_len, dst_got;
    uint64_t skip;            /* bytes of a 200 answer before the range */
    int fd;                   /* S3_SINK_FD */
    uint64_t fd_pos;
    struct tdb_buf mem;       /* S3_SINK_MEM, and error bodies */
    CURL *h;
    long status;
    curl_off_t length;        /* Content-Length of the answer, or -1 */
    bool failed;              /* a sink failed (ENOMEM, a short disk) */
    CURLcode cc;
    char curl_msg[CURL_ERROR_SIZE];
};

/* Performs c, retrying 5xx answers and failed connections with backoff
 * (0.1, 0.2, 0.4 s).  @return 0 when an answer came (c->status, maybe an
 * error status), TDB_E_IO when none did or a sink failed, TDB_E_NOMEM. */
int tdb_s3_perform(struct s3 *s, struct s3_call *c);

/* The TDB_E_* code of an answer: 2xx 0, 404 TDB_E_NOENT, else TDB_E_IO;
 * with err, a message naming the key, the status and S3's error code. */
int tdb_s3_status(struct s3 *s, struct s3_call *c, struct tdb_error *err);

/* What the answers we read hold: a ListObjectsV2 result or an error. */
struct s3_xml {
    XML_Parser xp;
    char *stack[8];          /* names of the open elements */
    int depth;
    struct tdb_buf text;     /* character data of the current element */
    const char *prefix;      /* the listed prefix: stripped from names */
    size_t plen;
    struct s3_dent *e;       /* entries found */
    size_t n, cap;
    char *key;               /* Contents/Key */
    uint64_t size;           /* Contents/Size */
    bool truncated;
    char *token;             /* NextContinuationToken */
    char *code, *message;    /* Error/Code, Error/Message */
    bool is_error;
    unsigned nkeys;          /* Contents seen */
    int fail;
};

/* Parses body into x (entries named relative to `prefix`).
 * @return 0, TDB_E_CORRUPT (not XML) or TDB_E_NOMEM. */
int tdb_s3_xml_parse(struct s3_xml *x, const struct tdb_buf *body,
                     const char *prefix);
void tdb_s3_xml_free(struct s3_xml *x);

/* n bytes as 2n lower-case hex digits and a NUL. */
void tdb_s3_hex(const unsigned char *d, size_t n, char *out);

#endif
