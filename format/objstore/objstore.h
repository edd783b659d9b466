/* objstore.h: what the files of the object-store backend share: the
 * backend's state, one HTTP request (loop.c), the protocol a backend
 * speaks (S3's in s3/, Azure's in azure/: their signing and their XML).
 * The backend proper is backend.c, above the others: fetching ahead
 * fetch.c, listings list.c, the disk cache disk.c, uploads upload.c,
 * requests loop.c, and beneath them all common.c (paths and keys, objects
 * being written, the message of an answer). */
#ifndef TDB_OBJSTORE_H
#define TDB_OBJSTORE_H

#include "core/core.h"
#include "s3/s3.h"
#include "core/store.h"

#include <curl/curl.h>
#include <expat.h>
#include <pthread.h>
#include <sys/types.h>

#define OS_CACHE_BUCKETS 4096
#define OS_IDLE 64             /* idle easy handles kept by the I/O thread */
#define OS_GOT_BUCKETS 1024
#define OS_FILE_MAX (8u << 20)  /* a file fetched whole at most */
#define OS_COALESCE_GAP (256u << 10) /* ranges this close: one GET */
#define OS_COALESCE_MAX (2u << 20)   /* one GET of ranges at most */
#define OS_RETRIES 3           /* tries again of a failed call (5xx, failed
                                * connections, stalls; within its deadline):
                                * -o os_retries= */

/* The I/O thread of one backend (loop.c): calls wait in a queue and
 * run on libcurl's multi interface, at most max_active at a time.  The
 * thread runs while there is work and ends when there is none; the next
 * call starts it again (so a process that forks after opening a source,
 * as the daemon does, has it in the child).  An ended thread is joined
 * before the next one starts and when the backend is freed: its exit
 * runs the thread-local destructors of the libraries it used (OpenSSL's
 * among them), which must be over before the process exits and
 * OpenSSL's own clean-up frees what they free. */
struct os_loop {
    pthread_mutex_t lock;       /* everything below but idle[] */
    pthread_cond_t idle_cv;     /* running went false */
    bool running;               /* the thread runs its loop */
    bool joinable;              /* `thread` was started and not joined */
    bool stop;                  /* destroy: fail what is left, end */
    pid_t pid;                  /* the process the thread runs in */
    pthread_t thread;
    CURLM *multi;
    CURLSH *share;              /* DNS and TLS sessions */
    struct os_call *head, *tail;  /* waiting to start, in order */
    struct os_call *later;      /* waiting for a retry's backoff */
    struct os_call *active;     /* in the multi handle */
    unsigned nactive, max_active;
    CURL *idle[OS_IDLE];        /* the thread's own */
    size_t nidle;
    uint64_t timeout_ms;        /* deadline of a read (all its tries) */
    unsigned max_tries;         /* tries of a call (os_retries= + 1) */
    long low_speed_s;           /* a transfer slower than 1 byte/s this
                                 * long is abandoned (and retried) */
    uint64_t calls, tries;      /* counts, for tests */
};

struct os_dir;
struct os_listing;
struct os_got;
struct os_disk;

/* An object being written: its bytes wait in an unlinked temporary file
 * until sync or rename PUTs them. */
struct os_pending {
    char *path;
    int fd;
    uint64_t size;
    struct os_pending *next;
};

struct os_proto;

struct objstore {
    const struct os_proto *proto;   /* the protocol it speaks */
    char scheme[8];      /* of its URL, for messages: "s3", "gs", ... */
    void *pctx;          /* the protocol's own state (Azure's keys), or
                          * NULL; freed by proto->free */
    char *bucket;        /* S3's bucket, Azure's container */
    char *prefix;        /* key prefix of the root, no trailing '/'; "" */
    char *base;          /* scheme://host[:port][/path] requests go to */
    char *host;          /* the Host header */
    char *uri_base;      /* "" or "/BUCKET" (path-style), before the key */
    char *region;
    struct tdb_s3_creds *creds;  /* the keys requests are signed with
                                  * (s3/creds.c); NULL: unsigned */
    bool region_given;   /* else the bucket's answers may change it */
    bool aws;            /* no endpoint given: AWS's, by region */
    char *retired[8];    /* host, base, region strings a change replaced
                          * (other threads may still read them) */
    unsigned nretired;
    uint64_t part_size;  /* of a multipart upload (upload.c) */
    int journal_fd;      /* the uploads under way are recorded in this
                          * folder, or -1 */
    pthread_mutex_t lock;       /* all below but loop */
    pthread_cond_t cv;          /* something fetched ahead arrived */
    struct os_loop loop;
    struct os_dir *cache[OS_CACHE_BUCKETS];   /* list.c */
    size_t ncached;
    struct os_listing *listings;              /* on their way */
    struct os_got *got[OS_GOT_BUCKETS];       /* fetch.c */
    uint64_t meta_bytes, meta_max;            /* whole files held */
    uint64_t ahead_bytes, ahead_max;          /* ranges held */
    unsigned got_flight;
    struct os_got *waitq, *waitq_tail;        /* ranges waiting for room */
    struct os_disk *disk;                     /* or NULL */
    /* objects whose last read failed (backend.c): reads of them fail at
     * once for a while (the kernel tries a failed read again) */
    struct os_failed {
        uint64_t hash;
        uint64_t until;                       /* ms, monotonic */
    } failed[16];
    unsigned nfailed;
    struct os_pending *pend;
};

enum os_sink { OS_SINK_NONE, OS_SINK_BUF, OS_SINK_FD, OS_SINK_MEM };

/* One request and what came back. */
struct os_call {
    const char *method;       /* GET, HEAD, PUT, POST, DELETE */
    const char *key;          /* object key; NULL: the bucket */
    const char *query;        /* canonical query, or NULL */
    char range[64];           /* "bytes=A-B" or "" */
    const char *copy_source;  /* x-amz-copy-source (encoded) or NULL */
    const char *copy_range;   /* x-amz-copy-source-range or NULL */
    int up_fd;                /* PUT body: up_len bytes of a file from
                               * offset up_off, or -1 */
    uint64_t up_off, up_len, up_pos;
    const uint8_t *body;      /* POST body (body_len bytes) or NULL */
    size_t body_len;
    enum os_sink sink;
    uint8_t *dst;             /* OS_SINK_BUF: dst_len bytes wanted */
    size_t dst_len, dst_got;
    uint64_t skip;            /* bytes of a 200 answer before the range */
    int fd;                   /* OS_SINK_FD */
    uint64_t fd_pos;
    struct tdb_buf mem;       /* OS_SINK_MEM, and error bodies */
    uint64_t timeout_ms;      /* all tries within this; 0: a read's
                               * deadline for GET and HEAD, none for the
                               * others (their stalls still end) */
    /* when c ends (on the I/O thread): done(c) with c->r set */
    void (*done)(struct os_call *c);
    void *arg;
    /* what came back */
    long status;
    curl_off_t length;        /* Content-Length of the answer, or -1 */
    char *etag;               /* the ETag header, or NULL */
    curl_off_t total;         /* of a 206: the object's size, or -1 */
    char region[32];          /* x-amz-bucket-region of the answer, or "" */
    bool redirected;          /* signed again for the bucket's region */
    bool failed;              /* a sink failed (ENOMEM, a short disk) */
    CURLcode cc;
    int r;                    /* tdb_os_submit's outcome (see perform) */
    char curl_msg[CURL_ERROR_SIZE];
    /* the I/O thread's */
    CURL *h;
    char hash[65];            /* payload SHA-256 */
    char *uri, *url;
    struct curl_slist *hl;
    uint64_t deadline, not_before;  /* ms, monotonic; deadline 0: none */
    unsigned tries;
    uint64_t skip0, fd0;
    uint64_t keys_gen;        /* the keys that signed the try (their gen) */
    bool renewed;             /* tried again once after a renewal */
    struct os_call *next;
};

/* What one protocol does its own way (proto_s3.c, proto_azure.c); the
 * rest of the backend is every protocol's.  Each hook runs for the
 * backend s (sign and again on the I/O thread). */
struct os_proto {
    /* the headers of one try of c into c->hl, signed (c->uri and c->url
     * made: sign may add to the URL's query).  @return 0 or TDB_E_* */
    int (*sign)(struct objstore *s, struct os_call *c);
    /* after a try ended (c->status, c->cc): should it be tried again for
     * a reason of the protocol's (*wait ms from now)?  NULL: never */
    bool (*again)(struct objstore *s, struct os_call *c, uint64_t now,
                  uint64_t *wait);
    bool hash_payload;          /* c->hash: the body's SHA-256 (SigV4) */
    bool bucket_slash;          /* the bucket's own path ends in '/' */
    /* the query of one page of a listing of kprefix (with delimiter '/'
     * when delim; at most max keys, 0: a page as large as the store
     * gives; token: the page after the one that gave it, NULL: the
     * first).  @return a new string or NULL */
    char *(*list_query)(const char *kprefix, bool delim, unsigned max,
                        const char *token);
    /* an answer's body into a (store.h): 0, TDB_E_CORRUPT, TDB_E_NOMEM */
    int (*parse)(struct tdb_store_answer *a, const struct tdb_buf *body,
                 const char *prefix);
    /* uploads in parts: start one (*id: a new string), the query of part
     * n (from 1) of it, complete it with parts 1..n (etags: each part's
     * answer's ETag when part_etag, else maybe NULL), abort it (1: gone,
     * 0: maybe still there; NULL: nothing to abort, a part left alone
     * is the store's to drop, and no journal is kept) */
    int (*mp_start)(struct objstore *s, const char *key, char **id);
    char *(*part_query)(const char *id, unsigned n);
    bool part_etag;
    int (*mp_complete)(struct objstore *s, const char *key, const char *id,
                       char **etags, unsigned n);
    int (*mp_abort)(struct objstore *s, const char *key, const char *id);
    bool copy;                  /* server-side copies (S3's CopyObject) */
    void (*free)(void *pctx);
};

extern const struct os_proto tdb_os_proto_s3;
extern const struct os_proto tdb_os_proto_azure;

struct tdb_az_config;
/* Gives an Azure backend the keys of cfg (taken: cfg's account, key and
 * SAS become NULL; proto_azure.c).  @return 0 or TDB_E_NOMEM. */
int tdb_os_azure_keys(struct objstore *s, struct tdb_az_config *cfg);

/* Performs c (its sink OS_SINK_MEM) and clears it; with x, the answer
 * parsed there (free it with tdb_store_answer_free, whatever the outcome;
 * upload.c).  @return 0 for a 2xx answer whose body is no Error (a copy
 * or a CompleteMultipartUpload can fail after its 200 header),
 * TDB_E_NOENT for 404, else TDB_E_IO (TDB_E_NOMEM). */
int tdb_os_ask(struct objstore *s, struct os_call *c,
               struct tdb_store_answer *x);

/* Starts the I/O thread's state (not the thread): max_active calls in
 * flight, reads within timeout_ms.  @return 0 or TDB_E_NOMEM. */
int tdb_os_loop_init(struct os_loop *L, unsigned max_active,
                     uint64_t timeout_ms);
/* Fails what is still queued, ends the thread, frees the state. */
void tdb_os_loop_free(struct os_loop *L);

/* Queues c: c->done(c) runs on the I/O thread once it ended, with c->r
 * as tdb_os_perform returns it; c (and what it points to) must live until
 * then.  @return 0, or TDB_E_NOMEM (done is not called). */
int tdb_os_submit(struct objstore *s, struct os_call *c);

/* Performs c (queued, and waited for), retrying 5xx answers, failed
 * connections and stalled transfers with backoff (0.1, 0.2, 0.4 s ...)
 * within its deadline.  @return 0 when an answer came (c->status, maybe
 * an error status), TDB_E_IO when none did or a sink failed, TDB_E_NOMEM.
 * Free c->etag (and c->mem) after. */
int tdb_os_perform(struct objstore *s, struct os_call *c);

/* The bucket answered that it lives in `region` (on the I/O thread):
 * unless a region was given, the backend signs for it from now on (and
 * an AWS endpoint becomes that region's).  @return 0 when the backend
 * signs for `region` now, -1 when not (a region was given, or out of
 * memory). */
int tdb_os_set_region(struct objstore *s, const char *region);
/* AWS's host and base URL of s->bucket in `region`: the bucket in the
 * host name (vhost) or in the path (common.c).  @return 0 or
 * TDB_E_NOMEM. */
int tdb_os_aws_host(struct objstore *s, const char *region, bool vhost,
                    char **host, char **base);

/* Frees what an ended call holds (its body and ETag). */
void tdb_os_call_clear(struct os_call *c);

/* A hash of a path (FNV-1a), for the backend's tables. */
uint64_t tdb_os_hash(const char *s);

/* Monotonic milliseconds. */
uint64_t tdb_os_clock_ms(void);

/* ---------------------------------------------- paths (common.c) */

/* The key of `path` (relative to the root; leading '/' ignored), and the
 * path as the caches name it (no leading or trailing '/').  @return a new
 * string, NULL when out of memory. */
char *tdb_os_key(struct objstore *s, const char *path);
char *tdb_os_norm(const char *path);
/* Is norm being written (held in a temporary file)?  _find: the object
 * being written (s->lock held), or NULL. */
bool tdb_os_pending(struct objstore *s, const char *norm);
struct os_pending *tdb_os_pending_find(struct objstore *s, const char *norm);
/* The name of one version of an object in the disk cache. */
char *tdb_os_ident(struct objstore *s, const char *key, const char *etag,
                   uint64_t size);

/* ------------------------------------ the I/O ops (read_ops.c, write_ops.c) */

/* The ops of struct tdb_io_ops over backend ctx (backend.c's table):
 * reads of a write in progress, of what was fetched ahead, of the disk
 * cache or of the store; sizes and folders as the listings and HEADs
 * say; one folder's listing.  Each @return 0 or a TDB_E_* code. */
int tdb_os_op_read_at(void *ctx, const char *path, uint64_t off, void *buf,
                      size_t len);
int tdb_os_op_size(void *ctx, const char *path, uint64_t *size);
int tdb_os_op_is_dir(void *ctx, const char *path, bool *is_dir);
int tdb_os_op_list(void *ctx, const char *path, tdb_io_list_fn fn,
                   void *arg);
/* Writes go to a temporary file per object, PUT by sync (or by a rename,
 * under the new name); a rename copies and DELETEs (a folder key by
 * key); a removal DELETEs.  Each @return 0 or a TDB_E_* code. */
int tdb_os_op_write_at(void *ctx, const char *path, uint64_t off,
                       const void *buf, size_t len);
int tdb_os_op_sync(void *ctx, const char *path);
int tdb_os_op_rename(void *ctx, const char *from, const char *to);
int tdb_os_op_remove(void *ctx, const char *path);

/* HEAD of key: its size.  @return 0, TDB_E_NOENT, TDB_E_IO. */
int tdb_os_head(struct objstore *s, const char *key, uint64_t *size);
/* Does any key start with "KEY/"?  @return 1, 0 or a TDB_E_* code. */
int tdb_os_has_children(struct objstore *s, const char *key);
/* Closes and frees an object being written, off the list (NULL:
 * nothing). */
void tdb_os_pending_free(struct os_pending *p);
/* Something changed at norm through the backend: what the listings and
 * the fetches ahead held of it goes. */
void tdb_os_changed(struct objstore *s, const char *norm);

/* ------------------------------------------------ uploads (_upload.c) */

/* Stores the first len bytes of fd as key: one PUT, or a multipart upload
 * when len passes the part size.  @return 0 or a TDB_E_* code (nothing
 * of a failed multipart upload stays stored, as far as the store lets it
 * be aborted). */
int tdb_os_upload_fd(struct objstore *s, const char *key, int fd, uint64_t len);

/* Copies object `from` of bucket `bucket` (size bytes; UINT64_MAX: not
 * known) on the same store as key `to`, with no byte through here: one
 * CopyObject, or, above the part size, a multipart upload whose parts
 * are UploadPartCopy of its ranges, many at a time.  @return 0,
 * TDB_E_NOENT (no such object), TDB_E_UNSUPPORTED (the store cannot copy
 * in parts), or TDB_E_IO. */
int tdb_os_copy_object(struct objstore *s, const char *bucket, const char *from,
                       uint64_t size, const char *to);

/* The journal of uploads in folder dir (tdb_io_s3_journal). */
int tdb_os_journal_open(struct objstore *s, const char *dir, unsigned *aborted,
                        struct tdb_error *err);

/* The backend of io, when it is an S3 one (else NULL; backend.c). */
struct objstore *tdb_os_backend(const struct tdb_io *io);

/* --------------------------------------------------- listings (_list.c) */

/* Keeps a listing of folder `path` (takes e[n]); fresh: fetched ahead,
 * for one tdb_os_dir_take. */
void tdb_os_dir_put(struct objstore *s, const char *path, struct tdb_store_dent *e,
                    size_t n, bool fresh);
/* What the cached listing of path's folder says of it, once no listing of
 * that folder is on its way: 1 found (*out: is_dir, size and a copy of
 * the etag to free; no name), TDB_E_NOENT (listed, not there), 0 (not
 * known, or out of memory).  *out is cleared first whatever the outcome,
 * so out->etag is always for the caller to free.  tdb_os_dir_peek does
 * not wait. */
int tdb_os_dir_lookup(struct objstore *s, const char *path, struct tdb_store_dent *out);
int tdb_os_dir_peek(struct objstore *s, const char *path, struct tdb_store_dent *out);
/* A fresh listing of folder norm (waiting for one on its way), copied
 * into *e (free with tdb_store_dents_free) and no longer fresh.  @return 1,
 * or 0 when there is none. */
int tdb_os_dir_take(struct objstore *s, const char *norm, struct tdb_store_dent **e,
                    size_t *n);
/* Something changed at `path`: the listings of every folder above it go. */
void tdb_os_dir_forget(struct objstore *s, const char *path);
/* Drops every listing (s->lock held). */
void tdb_os_dir_clear(struct objstore *s);
/* What a listing of keys asks for: the keys starting with kprefix; with
 * a delimiter one level (entries named after kprefix, folders with
 * is_dir), else every key below; at most `max` keys (0: all, page after
 * page). */
struct os_list_ask {
    const char *kprefix;
    bool delim;
    unsigned max;
};
/* The listing `ask` says, into out[nout] (free with
 * tdb_store_dents_free).  With err, failures are named.  @return 0 or a
 * TDB_E_* code. */
int tdb_os_list_keys(struct objstore *s, const struct os_list_ask *ask,
                     struct tdb_store_dent **out, size_t *nout,
                     struct tdb_error *err);
/* Starts a listing of folder norm ahead (tree: every folder below). */
void tdb_os_want_list(struct objstore *s, const char *norm, bool tree);
/* Is a listing on its way?  (s->lock held.) */
bool tdb_os_listing_busy(struct objstore *s);

/* ---------------------------------------------- fetched ahead (_fetch.c) */

/* The prefetch op: listings, whole files, ranges. */
void tdb_os_want(struct objstore *s, const struct tdb_io_want *w, size_t n);
/* Serves a read from what was fetched ahead (waiting for it when on its
 * way): @return 1 (*rc its outcome) or 0 (not held: read it). */
int tdb_os_fetched_read(struct objstore *s, const char *norm, uint64_t off,
                        void *buf, size_t len, int *rc);
/* The size of a file fetched whole (waiting for it when on its way): 1
 * (*size), TDB_E_NOENT, or 0 (not held, or forgotten while on its way:
 * then it goes at once). */
int tdb_os_fetched_size(struct objstore *s, const char *norm, uint64_t *size);
/* norm changed: what was fetched of it goes. */
void tdb_os_fetched_forget(struct objstore *s, const char *norm);
/* Waits until nothing fetched ahead is on its way. */
void tdb_os_settle(struct objstore *s);
/* Frees everything fetched (the I/O thread ended). */
void tdb_os_fetched_free(struct objstore *s);

/* ------------------------------------------------ the disk cache (_disk.c) */

/* The disk cache in folder dir (made when missing), at most max bytes. */
int tdb_os_disk_open(struct os_disk **out, const char *dir, uint64_t max,
                     struct tdb_error *err);
void tdb_os_disk_close(struct os_disk *d);
/* Is piece [off, off + len) of object `ident` on disk? */
bool tdb_os_disk_has(struct os_disk *d, const char *ident, uint64_t off,
                     uint64_t len);
/* One piece on disk: bytes [off, off + len) of the object `ident`. */
struct os_piece {
    const char *ident;
    uint64_t off, len;
};
/* Copies n bytes at `at` of the object from piece p, when it is on disk.
 * @return 1 (copied) or 0. */
int tdb_os_disk_get(struct os_disk *d, const struct os_piece *p, uint64_t at,
                    void *buf, size_t n);
/* Keeps piece [off, off + len) (data) on disk (best effort). */
void tdb_os_disk_put(struct os_disk *d, const char *ident, uint64_t off,
                     uint64_t len, const void *data);

/* The TDB_E_* code of an answer: 2xx 0, 404 TDB_E_NOENT, else TDB_E_IO;
 * with err, a message naming the key, the status and S3's error code. */
int tdb_os_status(struct objstore *s, struct os_call *c, struct tdb_error *err);


/* The part size of a multipart upload of len bytes asked for parts of
 * part_size: at least TDB_S3_PART_MIN, grown to a whole number of MiB
 * when len would need more than 10,000 parts (upload.c). */
uint64_t tdb_os_part_size(uint64_t part_size, uint64_t len);

/* A byte range wanted of one file. */
struct tdb_os_range {
    uint64_t off, len;
};

/* One GET serving ranges first..first+count-1 (after sorting): bytes
 * [off, off + len), of which `want` were asked for. */
struct tdb_os_span {
    uint64_t off, len, want;
    size_t first, count;
};

/* Sorts r[n] by offset and joins them into GETs: a range that starts at
 * most `gap` bytes after the span before ends joins it (the gap is fetched
 * too) unless the span would pass `max` bytes; overlapping ranges join.
 * Writes the spans to out (room for n).  @return their number. */
size_t tdb_os_coalesce(struct tdb_os_range *r, size_t n, uint64_t gap,
                       uint64_t max, struct tdb_os_span *out);

#endif
