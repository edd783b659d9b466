/* tiledb_format.h: public interface of the tiledbfs format engine.
 *
 * The engine reads (and writes) the TileDB on-disk format, versions 1 to 23,
 * and presents an array or a group as the file tree that docs/LAYOUT.md of the
 * project describes (the "mount contract").  It knows nothing of FUSE: the
 * daemon in fuse/ and the command-line reader tiledbfs-cat are two thin
 * front ends over the same calls below.  Writing (creating arrays,
 * fragments, metadata) is tiledb_format_write.h; these two headers are
 * all a front end includes.
 *
 * Conventions
 *  - Every function that can fail returns 0 or a negative TDB_E_* code and,
 *    when given a non-NULL `struct tdb_error *`, fills it with a message that
 *    names the file (and the field and tile where there is one).
 *  - Handles are opaque; each *_open/_create has a matching *_close/_free,
 *    and every free function accepts NULL.
 *  - Buffers are passed as (dst, dst_capacity) and sizes are uint64_t or
 *    size_t; the library never prints, never exits, keeps no global state.
 *  - All file access goes through a `struct tdb_io`: backends for a POSIX
 *    folder, memory and S3 below, one that follows no symbolic link in
 *    tiledb_format_write.h; fault injection and other backends plug in
 *    there.
 *  - Calls whose form follows the engine's internals (statistics of the
 *    tile cache, reads that lend decoded tiles) sit in the section at the
 *    end, visible only where TDB_UNSTABLE_API is defined before this
 *    header is included.
 */
#ifndef TILEDB_FORMAT_H
#define TILEDB_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

enum tdb_status {
    TDB_OK = 0,
    TDB_E_IO = -1,          /* the I/O backend failed */
    TDB_E_CORRUPT = -2,     /* bytes on disk do not follow the format */
    TDB_E_NOMEM = -3,       /* allocation failed or a size cap was hit */
    TDB_E_UNSUPPORTED = -4, /* valid format we do not handle (e.g. a
                             * format version newer than 23) */
    TDB_E_CHECKSUM = -5,    /* an MD5/SHA-256 checksum filter mismatched */
    TDB_E_AUTH = -6,        /* AES-256-GCM authentication failed (wrong key) */
    TDB_E_INVAL = -7,       /* the caller's arguments are wrong */
    TDB_E_NOENT = -8,       /* no such file, field, key or path */
    TDB_E_NOTDIR = -9,      /* a path component is not a folder */
    TDB_E_ISDIR = -10,      /* a folder where a file was wanted */
    TDB_E_ROFS = -11,       /* a write to a read-only view or file system */
    TDB_E_NOKEY = -12,      /* the array is encrypted and no key was given */
    TDB_E_MLINK = -13,      /* a file with more than one link (a hard link)
                             * where only a file of its own is taken */
    TDB_E_ACCES = -14,      /* the storage refused: permission denied */
    TDB_E_NOSPC = -15,      /* no space left on the storage's device */
    TDB_E_DQUOT = -16,      /* the storage's disk quota is exceeded */
};

#define TDB_ERROR_MSG_MAX 1024

/* Caller-owned error report.  `code` is the TDB_E_* value, `msg` a
 * NUL-terminated sentence naming what failed and where. */
struct tdb_error {
    int code;
    char msg[TDB_ERROR_MSG_MAX];
};

/* @return a static English name of a TDB_E_* code ("corrupt data", ...). */
const char *tdb_strerror(int code);

/* Empties err before a call that may fill it. */
void tdb_error_clear(struct tdb_error *err);

/* What went wrong: err's message, else tdb_strerror(code). */
const char *tdb_error_text(int code, const struct tdb_error *err);

/* @return the errno value a front end should report for a TDB_E_* code
 * (EIO for corruption, checksum and authentication failures, ENOENT, ...). */
int tdb_errno(int code);

/* ---------------------------------------------------------------- the I/O */

/* One folder entry, as given to a tdb_io_list_fn. */
struct tdb_dirent {
    const char *name;
    bool is_dir;
};

typedef int (*tdb_io_list_fn)(void *arg, const struct tdb_dirent *ent);

/* What a reader will need soon (tdb_io_ops.prefetch).  Paths are as
 * read_at takes them. */
enum tdb_io_want_kind {
    TDB_WANT_LIST,      /* the entries of folder `path` */
    TDB_WANT_TREE,      /* the entries of every folder below `path` */
    TDB_WANT_FILE,      /* the whole of a small file */
    TDB_WANT_RANGE,     /* bytes [off, off + len) of a file */
};

struct tdb_io_want {
    enum tdb_io_want_kind kind;
    const char *path;
    uint64_t off, len;  /* TDB_WANT_RANGE */
};

/* The only way the engine touches storage.  Paths are '/'-separated and
 * relative to the backend's root (an absolute path is passed as is to
 * backends that support it).  Every function returns 0 or a TDB_E_* code
 * (TDB_E_NOENT when the path does not exist).  Functions a backend does not
 * support may be NULL (a read-only backend has no write functions). */
struct tdb_io;

struct tdb_io_ops {
    /* Read exactly `len` bytes at `off`; reading past the end is an error. */
    int (*read_at)(void *ctx, const char *path, uint64_t off, void *buf,
                   size_t len);
    int (*size)(void *ctx, const char *path, uint64_t *size);
    /* Calls fn for each entry of folder `path` (order unspecified); stops
     * early and returns fn's value when fn returns non-zero. */
    int (*list)(void *ctx, const char *path, tdb_io_list_fn fn, void *arg);
    int (*is_dir)(void *ctx, const char *path, bool *is_dir);
    /* Writers (NULL in read-only backends). */
    int (*write_at)(void *ctx, const char *path, uint64_t off,
                    const void *buf, size_t len); /* creates the file */
    int (*mkdir)(void *ctx, const char *path);
    int (*rename)(void *ctx, const char *from, const char *to);
    int (*remove)(void *ctx, const char *path);
    int (*sync)(void *ctx, const char *path);
    void (*destroy)(void *ctx);
    /* Optional: starts fetching what want[n] names and returns at once;
     * the list, size, is_dir and read_at calls that follow find it in
     * flight or fetched, and wait only for what is still on its way.  A
     * hint: nothing fails, and a backend may drop any of it (its memory
     * bound).  Fetched listings serve one list call each (later ones ask
     * the storage again); fetched ranges are let go once read.  NULL:
     * nothing is fetched ahead (local storage). */
    void (*prefetch)(void *ctx, const struct tdb_io_want *want, size_t n);
    /* Optional: returns once nothing fetched ahead is still in flight. */
    void (*settle)(void *ctx);
    /* Optional: a new descriptor open for reading file `path` (the caller
     * closes it), or a TDB_E_* code; path NULL asks whether the backend
     * has descriptors (0, else TDB_E_UNSUPPORTED).  NULL: it has none
     * (object storage, memory). */
    int (*dup_fd)(void *ctx, const char *path);
    /* Optional: stores file `from` of backend `src` as this backend's file
     * `to` with no byte passing through this process (a server-side copy,
     * S3's CopyObject or UploadPartCopy), when both are on one store.
     * TDB_E_UNSUPPORTED: they are not (or the store cannot): copy by
     * reading and writing.  NULL: never. */
    int (*copy_from)(void *ctx, const struct tdb_io *src, const char *from,
                     const char *to);
};

struct tdb_io {
    const struct tdb_io_ops *ops;
    void *ctx;
};

/* A POSIX backend rooted at folder `root`.  @return 0 or TDB_E_NOMEM.
 * Release with tdb_io_free(). */
int tdb_io_posix(struct tdb_io *io, const char *root);

/* An in-memory backend, for tests: files are created with write_at. */
int tdb_io_mem(struct tdb_io *io);

/* Releases a backend's state (NULL ops is fine). */
void tdb_io_free(struct tdb_io *io);

/* io's prefetch, when it has one (else nothing). */
void tdb_io_prefetch(const struct tdb_io *io, const struct tdb_io_want *want,
                     size_t n);
/* io's settle, when it has one (else nothing). */
void tdb_io_settle(const struct tdb_io *io);
/* io's dup_fd: @return a descriptor, or a TDB_E_* code (TDB_E_UNSUPPORTED
 * when the backend has none); path NULL: 0 when it has them. */
int tdb_io_dup_fd(const struct tdb_io *io, const char *path);

/* One read of a batch: `len` bytes of `path` at `off` into `buf`; `rc` is
 * its outcome (0 or a TDB_E_* code). */
struct tdb_io_read {
    const char *path;
    uint64_t off;
    void *buf;
    size_t len;
    int rc;
};
/* Reads a batch: each range is asked for at once (prefetch), then read;
 * on a backend without prefetch, one after the other.  @return 0 when
 * every read succeeded, else the first failure's code (each rc says). */
int tdb_io_read_many(const struct tdb_io *io, struct tdb_io_read *r,
                     size_t n);

/* A list of names (a folder's entries), sorted bytewise. */
struct tdb_names {
    char **v;
    bool *is_dir;
    size_t n;
};
/* Lists folder `path` of io; a missing folder gives an empty list and 0.
 * Free with tdb_names_free. */
int tdb_io_names(const struct tdb_io *io, const char *path,
                 struct tdb_names *out, struct tdb_error *err);
void tdb_names_free(struct tdb_names *n);

/* ------------------------------------------- object storage: every store */

/* How an object store backend reads; zero fields keep the defaults. */
struct tdb_store_tuning {
    unsigned requests;          /* requests in flight at most (64) */
    unsigned timeout_s;         /* a read's deadline, its retries with
                                 * backoff included, in seconds (30); a
                                 * transfer stalled for a third of it (1 to
                                 * 20 s) is given up and tried again */
    uint64_t readahead_bytes;   /* bytes fetched ahead and not yet read,
                                 * at most (64 MiB) */
    const char *disk_cache;     /* a folder keeping fetched bytes for the
                                 * next reads and mounts (made when
                                 * missing, made 0700; refused when a
                                 * symbolic link, not the user's own or
                                 * writable by group or others), or NULL:
                                 * none */
    uint64_t disk_cache_bytes;  /* its size bound (TDB_S3_DISK_CACHE_BYTES) */
    unsigned retries;           /* with retries_given: a failed request
                                 * (5xx, no answer, a stalled transfer) is
                                 * tried again at most this many times,
                                 * within its deadline (3) */
    bool retries_given;
    uint64_t part_size;         /* a file written larger than this goes up
                                 * as a multipart upload in parts of this
                                 * size (TDB_S3_PART_SIZE; at least
                                 * TDB_S3_PART_MIN; grown for a file that
                                 * would need more than 10,000 parts) */
};

#define TDB_S3_DISK_CACHE_BYTES (UINT64_C(1) << 30)
#define TDB_S3_PART_SIZE (UINT64_C(8) << 20)
#define TDB_S3_PART_MIN (UINT64_C(5) << 20)   /* S3's least part */
#define TDB_S3_PART_MAX (UINT64_C(5) << 30)   /* and largest */

/* What a front end's options say of the connection (-o endpoint=,
 * region=, profile=, credentials_file=, config_file=, account=): each
 * given field comes before the environment and the files; NULL fields
 * are found as tdb_s3_config_load (s3://, gs://) or Azure's tools
 * (azure://, see tdb_io_open_url_with) find them.  Strings stay the
 * caller's. */
struct tdb_store_options {
    const char *endpoint;         /* before AWS_ENDPOINT_URL_S3, ...;
                                   * azure://: before the connection
                                   * string's BlobEndpoint */
    const char *region;           /* before AWS_REGION, ... */
    const char *profile;          /* before AWS_PROFILE */
    const char *credentials_file; /* before AWS_SHARED_CREDENTIALS_FILE and
                                   * ~/.aws/credentials; azure://: a file
                                   * holding a connection string, before
                                   * AZURE_STORAGE_CONNECTION_STRING */
    const char *config_file;      /* before AWS_CONFIG_FILE, ~/.aws/config */
    const char *account;          /* azure://: the storage account, before
                                   * AZURE_STORAGE_ACCOUNT */
    struct tdb_store_tuning tune; /* how it reads (-o s3_requests=, ...) */
};

/* libcurl's process-wide set-up (curl_global_init).  A front end calls it
 * once from main, before its threads start and before tdb_io_s3 or
 * tdb_io_open_url; later calls do nothing more.  @return 0 or TDB_E_IO. */
int tdb_s3_global_init(void);


/* Is `source` a URL that tdb_io_open_url opens with an object store
 * backend ("s3://...", "gs://...", "gcs://...", "azure://...")? */
bool tdb_io_is_url(const char *source);

/* Opens a source: an object store's URL (tdb_io_open_url_with), anything
 * else as a POSIX folder (tdb_io_posix).  err names the URL, and the HTTP
 * status or the store's error code when the server refused.  @return 0 or
 * a TDB_E_* code. */
int tdb_io_open_url(struct tdb_io *io, const char *source,
                    struct tdb_error *err);

/* tdb_io_open_url with options `o` (NULL: none), checking that the bucket
 * (container) answers and that PREFIX holds objects (TDB_E_NOENT if not);
 * `create`: the prefix may hold nothing yet (an array about to be made
 * there), only the bucket must answer.  A disk_cache of o->tune that
 * cannot be made, or is refused (see struct tdb_store_tuning), fails the
 * open (TDB_E_IO, the message naming the folder and why).  Every object
 * store is read and written as tdb_io_s3 documents for S3: one I/O
 * thread, listings, fetching ahead, the disk cache keyed by ETag, files
 * larger than the part size written in parts that appear whole at once.
 *  - "s3://BUCKET[/PREFIX]": tdb_io_s3 with the configuration of
 *    tdb_s3_config_load_with(o).
 *  - "gs://BUCKET[/PREFIX]" (or "gcs://"): Google Cloud Storage through
 *    its XML API, which speaks S3's protocol: HMAC keys found as S3's
 *    keys are (AWS_ACCESS_KEY_ID, the profile, o->credentials_file),
 *    signed with Signature V4 for region o->region or "auto", at
 *    o->endpoint or https://storage.googleapis.com (AWS_ENDPOINT_URL and
 *    AWS_REGION are S3's and not read).
 *  - "azure://CONTAINER[/PREFIX]": Azure Blob Storage (see its section
 *    below). */
int tdb_io_open_url_with(struct tdb_io *io, const char *source,
                         const struct tdb_store_options *o, bool create,
                         struct tdb_error *err);

/* Gives an S3 backend a journal of its multipart uploads: folder `dir`
 * (made 0700 when missing; refused unless the caller's alone) records
 * each upload under way until it is completed or aborted, and the uploads
 * to this bucket recorded there now (those of a process killed while
 * writing) are aborted (AbortMultipartUpload), *aborted counting them.  A
 * -o rw mount keeps its journal in its staging folder.  Other backends:
 * nothing (0).  @return 0 or TDB_E_IO (err names the folder). */
int tdb_io_s3_journal(const struct tdb_io *io, const char *dir,
                      unsigned *aborted, struct tdb_error *err);


/* ---------------------------- S3, and Google Cloud Storage's XML API */

/* Temporary credentials and where they come from (a credential_process,
 * an STS role, a container endpoint, the instance metadata), renewed
 * before they expire: opaque, thread-safe, owned by whoever holds it. */
struct tdb_s3_creds;

/* Where and as whom an S3 backend connects.  Strings are owned by the
 * struct when filled by tdb_s3_config_load (tdb_s3_config_free frees
 * them); a caller filling it by hand keeps ownership (tdb_io_s3 copies),
 * and leaves creds NULL. */
struct tdb_s3_config {
    char *access_key;     /* static keys; NULL (with secret_key NULL and
                           * creds NULL): unsigned requests */
    char *secret_key;
    char *session_token;  /* NULL: none */
    struct tdb_s3_creds *creds; /* NULL, or (with no static keys) the
                           * temporary credentials tdb_s3_config_load
                           * obtained: a reference, dropped by
                           * tdb_s3_config_free; tdb_io_s3 takes one of its
                           * own, and signs with the keys current at each
                           * try of each request */
    char *region;         /* NULL: us-east-1 */
    char *endpoint;       /* NULL: https://s3.REGION.amazonaws.com with the
                           * bucket in the host name; else a URL such as
                           * http://127.0.0.1:9000, addressed path-style
                           * (http://HOST/BUCKET/KEY) */
};

/* Fills cfg as the AWS tools do.  Region from AWS_REGION,
 * AWS_DEFAULT_REGION or the profile's region in the config file; endpoint
 * from AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the config file's
 * endpoint_url.  The profile is AWS_PROFILE (default "default"), its
 * settings in ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE, section
 * NAME) before those of ~/.aws/config (AWS_CONFIG_FILE, section "profile
 * NAME"); missing files are fine.
 *
 * The credentials are the first of, in the order of AWS's SDKs:
 *  1. AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
 *  2. the profile's: role_arn (an STS AssumeRole signed with the
 *     credentials of source_profile, found by these same rules, or of
 *     its own static keys when it names itself, or of credential_source
 *     Environment, Ec2InstanceMetadata or EcsContainer; with
 *     role_session_name, external_id, duration_seconds; with
 *     web_identity_token_file instead, AssumeRoleWithWebIdentity), else
 *     aws_access_key_id, aws_secret_access_key, aws_session_token, else
 *     credential_process (a command run by /bin/sh -c that prints the
 *     JSON {"Version": 1, "AccessKeyId", "SecretAccessKey",
 *     "SessionToken", "Expiration"});
 *  3. AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN (and
 *     AWS_ROLE_SESSION_NAME): STS AssumeRoleWithWebIdentity, unsigned,
 *     the file read again at each renewal;
 *  4. AWS_CONTAINER_CREDENTIALS_FULL_URI, or
 *     AWS_CONTAINER_CREDENTIALS_RELATIVE_URI under http://169.254.170.2: a
 *     GET sending AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE's text (read again
 *     each time) or AWS_CONTAINER_AUTHORIZATION_TOKEN as Authorization
 *     (plain http:// only to a loopback address or 169.254.170.2 and
 *     169.254.170.23; else https://);
 *  5. the EC2 instance metadata (IMDSv2: a session token, then the role's
 *     credentials) at AWS_EC2_METADATA_SERVICE_ENDPOINT, else
 *     http://169.254.169.254, 1 s to connect (AWS_METADATA_SERVICE_TIMEOUT
 *     seconds), unless AWS_EC2_METADATA_DISABLED=true.  Nothing there is
 *     no error: requests go unsigned (a public bucket).
 * A source of 2 to 4 that is configured but gives no credentials fails
 * the load.  STS is at AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL or the
 * profile's endpoint_url when set, else https://sts.REGION.amazonaws.com
 * (https://sts.amazonaws.com without a region or with
 * AWS_STS_REGIONAL_ENDPOINTS=legacy); AssumeRole is signed for service
 * "sts" in that region (us-east-1 for the global endpoint).
 *
 * Temporary credentials (with an Expiration) are renewed from the same
 * source when less than a third of their lifetime, and at most 5
 * minutes, is left: by a thread of their own, one renewal at a time,
 * while requests go on signed with the current, still valid ones; a
 * request made in their last tenth of life (their last minute at most)
 * waits for the renewal (10 s at most); an answer refusing them as
 * expired (ExpiredToken, InvalidToken) starts a renewal and the request
 * is tried once more with the new ones.  Secrets are never in messages.
 * @return 0, TDB_E_NOMEM, or the error of a source (err names it). */
int tdb_s3_config_load(struct tdb_s3_config *cfg, struct tdb_error *err);
void tdb_s3_config_free(struct tdb_s3_config *cfg);

/* tdb_s3_config_load under options `o` (NULL: none).  A credentials_file
 * or config_file given must be readable; given a profile or a credentials
 * file, the profile must be in one of them and the environment's keys
 * (AWS_ACCESS_KEY_ID) are not used (the rest of the chain is).  @return 0,
 * TDB_E_INVAL (with a message naming the option or the profile's
 * setting), TDB_E_NOMEM, or the error of a credential source: TDB_E_IO
 * (not reached), TDB_E_ACCES (refused), TDB_E_CORRUPT (an answer not as
 * AWS documents it), the message naming the source. */
int tdb_s3_config_load_with(struct tdb_s3_config *cfg,
                            const struct tdb_store_options *o,
                            struct tdb_error *err);


/* An S3 backend over `url`, "s3://BUCKET[/PREFIX]": paths are keys under
 * PREFIX/.  Reads are range GETs, sizes HEADs (or the sizes a listing
 * gave), folders ListObjectsV2 with delimiter '/'.  S3 has no partial
 * writes: write_at keeps the object in a temporary file (TMPDIR) until
 * sync (or rename) stores it (an object first written at offset 0 is
 * written anew, replacing the stored one, as after O_TRUNC; one first
 * written further on starts from the stored bytes, fetched then), in one PUT or, when larger than the part
 * size (struct tdb_store_tuning), as a multipart upload: parts go up many
 * at a time (within the requests in flight), each read from the
 * temporary file as it is sent (no part is held in memory), and the
 * object appears at Complete, whole; a failed upload is aborted.  Until
 * then list and is_dir do not show it.  A request answered 301 or 400
 * with the bucket's region (x-amz-bucket-region) is signed again for it
 * when no region was given, and the backend keeps that region.  mkdir does nothing (folders are key prefixes), rename is a
 * server-side copy then a DELETE (of each key under a folder), remove a
 * DELETE.  Requests run on one I/O thread, up to 64 at a time over
 * kept-alive connections; prefetch is supported (listings, small files
 * whole, ranges coalesced into GETs).  Errors: TDB_E_NOENT for 404, else
 * TDB_E_IO; 5xx answers, failed connections and stalled transfers are
 * retried (3 times, struct tdb_store_tuning) within a read's deadline
 * (30 s).  Thread-safe.
 * @return 0, TDB_E_INVAL (not such a URL) or TDB_E_NOMEM. */
int tdb_io_s3(struct tdb_io *io, const char *url,
              const struct tdb_s3_config *cfg, struct tdb_error *err);


/* ---------------------------------------------------- Azure Blob Storage */

/* An azure:// source is opened by tdb_io_open_url_with (no configuration
 * struct: the options and the environment say it all).  The account, its
 * Shared Key or a SAS token and the endpoint come from o->credentials_file
 * (a connection string), else AZURE_STORAGE_CONNECTION_STRING (its
 * AccountName, AccountKey, SharedAccessSignature, BlobEndpoint,
 * DefaultEndpointsProtocol, EndpointSuffix, UseDevelopmentStorage),
 * else AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or
 * AZURE_STORAGE_SAS_TOKEN; o->account and o->endpoint before them
 * (default https://ACCOUNT.blob.core.windows.net; Azurite's
 * http://127.0.0.1:10000/devstoreaccount1 addressed with the account
 * in the path).  Neither key nor token: anonymous reads of a public
 * container.  Requests: Get Blob with a range, Get Blob Properties,
 * List Blobs with delimiter '/', Put Blob, Put Block then Put Block
 * List above the part size (blocks never listed are the service's to
 * drop: nothing to abort), Delete Blob; rename copies through here
 * (no server-side copy). */

/* ------------------------------------------------------------ datatypes */

/* TileDB's datatype numbers (tiledb_datatype_t). */
enum tdb_datatype {
    TDB_INT32 = 0, TDB_INT64 = 1, TDB_FLOAT32 = 2, TDB_FLOAT64 = 3,
    TDB_CHAR = 4, TDB_INT8 = 5, TDB_UINT8 = 6, TDB_INT16 = 7,
    TDB_UINT16 = 8, TDB_UINT32 = 9, TDB_UINT64 = 10,
    TDB_STRING_ASCII = 11, TDB_STRING_UTF8 = 12, TDB_STRING_UTF16 = 13,
    TDB_STRING_UTF32 = 14, TDB_STRING_UCS2 = 15, TDB_STRING_UCS4 = 16,
    TDB_ANY = 17,
    TDB_DATETIME_YEAR = 18, /* ... through */ TDB_DATETIME_AS = 30,
    TDB_TIME_HR = 31, /* ... through */ TDB_TIME_AS = 39,
    TDB_BLOB = 40, TDB_BOOL = 41, TDB_GEOM_WKB = 42, TDB_GEOM_WKT = 43,
    TDB_DATATYPE_COUNT = 44
};

/* Size in bytes of one value; 0 for an unknown type. */
unsigned tdb_dt_size(unsigned dt);
/* TileDB's name ("FLOAT64"); NULL for an unknown type. */
const char *tdb_dt_name(unsigned dt);
/* Looks up a TileDB name; @return the type or -1. */
int tdb_dt_from_name(const char *name);

/* The encryption of an array (TileDB's tiledb_encryption_type_t). */
enum { TDB_NO_ENCRYPTION = 0, TDB_AES_256_GCM = 1 };

/* The encryption of the array at the root of io, from its schema in force
 * now (the newest), into *enc (TDB_NO_ENCRYPTION or TDB_AES_256_GCM); key
 * (or NULL) decrypts a schema that is itself encrypted.  @return 0,
 * TDB_E_INVAL when the folder holds no array, or the error of reading its
 * schema. */
int tdb_array_encryption(const struct tdb_io *io, const uint8_t *key,
                         int *enc, struct tdb_error *err);

/* ---------------------------------------------------------- the file tree */

/* The decoded-tile cache: a byte budget, least recently used tiles go
 * first.  One cache can serve every tree opened over one source (a mount
 * reopens its tree after each write): tiles are keyed by the fragment's
 * folder, so a reopened tree finds the tiles decoded before, and the memory
 * of all of them together stays within one budget.  Do not share one cache
 * between different sources (their fragment paths could coincide).
 * Thread-safe.  @return 0 or TDB_E_NOMEM. */
struct tdb_cache;
int tdb_cache_create(struct tdb_cache **out, uint64_t budget_bytes);
/* With `on`, tiles of 256 KiB and more are decoded into 2 MiB-aligned
 * regions of transparent huge pages (madvise(MADV_HUGEPAGE)): the kernel
 * then maps, clears and accounts new tile memory 2 MiB at a time, not
 * 4 KiB, which halves the CPU time of reading unfiltered tiles.  Off by
 * default: in a virtual machine whose free memory goes back to the host
 * (free page reporting), a fresh huge page costs the host a fault, and a
 * first read of new tiles can be slower.  No effect where the system has
 * no transparent huge pages. */
void tdb_cache_huge_pages(struct tdb_cache *c, bool on);
/* Frees the cache; every tree using it must be closed first. */
void tdb_cache_free(struct tdb_cache *c);

/* Options for opening a source (an array or a group folder). */
struct tdb_open_options {
    uint64_t ts_start;          /* open range, inclusive, ms since epoch */
    uint64_t ts_end;            /* UINT64_MAX: now */
    const uint8_t *key;         /* 32-byte AES-256-GCM key, or NULL */
    uint64_t cache_bytes;       /* decoded-tile cache budget; 0: default */
    struct tdb_cache *cache;    /* a shared cache (not owned; cache_bytes is
                                 * then unused), or NULL: the tree makes its
                                 * own */
    unsigned threads;           /* decoding threads of a tree's readers:
                                 * 0 one per online CPU, 1 none (the reading
                                 * thread decodes); also the threads a
                                 * sparse merge runs on */
    bool huge_pages;            /* a cache the tree makes puts tiles of
                                 * 256 KiB and more on transparent huge
                                 * pages (tdb_cache_huge_pages) */
    uint64_t merge_range_cells; /* a sparse merge on several threads is cut
                                 * into key ranges of about this many cells
                                 * at least (0: 256 Ki); for tests */
    unsigned members;           /* the group members followed:
                                 * TDB_MEMBERS_INSIDE (0) or TDB_MEMBERS_ANY
                                 * (see tdb_fs_open) */
    size_t max_members;         /* members a tree follows in all, beyond
                                 * which the others are left out with a
                                 * warning (0: 1 Mi, against lattices of
                                 * groups); for tests */
    /* Where a group member's place lies (see tdb_fs_open), for front ends
     * that know the source's storage; NULL: only relative places are
     * inside.  @return 0 with *path (malloc'ed) its path from the root
     * ("" for the root), 1 when it lies outside the source, or a TDB_E_*
     * code. */
    int (*locate)(void *arg, const char *place, char **path);
    void *locate_arg;
};

/* opts.members: follow only members inside the source, or every one. */
enum { TDB_MEMBERS_INSIDE = 0, TDB_MEMBERS_ANY = 1 };

#define TDB_DEFAULT_CACHE_BYTES (256ull << 20)

/* Fills `o` with the defaults: the whole time range, no key, a cache of
 * its own of 256 MiB. */
void tdb_open_options_init(struct tdb_open_options *o);

/* The name a field has in the tree (and the base of the names of
 * metadata keys and group members): '/' and '%' percent-encoded ("%2F",
 * "%25"), the empty name "__attr", then `suffix` (".offsets", ...; ""
 * for none).  @return a new string (caller frees), NULL when out of
 * memory. */
char *tdb_mount_name(const char *name, const char *suffix);

/* The name metadata key `key` has in __meta/: tdb_mount_name's (so ""
 * is "__attr"), with the first character of the keys ".", ".." and
 * "__attr" percent-encoded too ("%2E", "%2E.", "%5F_attr"), so that every
 * key has a name of its own that a folder can hold.  @return a new string
 * (caller frees), NULL when out of memory. */
char *tdb_meta_key_name(const char *key);

/* An opened source presented as the tree of the mount contract. */
struct tdb_fs;

/* Opens the array or group at the root of `io`.  The tree (folders, file
 * names, fixed sizes) is built here; tiles are decoded only on read.
 * `io` must outlive the handle.  @return 0 or a TDB_E_* code; a folder that
 * is neither a TileDB array nor a group gives TDB_E_INVAL.  It returns with
 * nothing it asked `io` for ahead still on its way (tdb_io_settle), so that
 * a daemon may fork next.
 *
 * Group members (docs/LAYOUT.md "A group").  A member's place is its uri
 * joined to its group's folder when relative, else the uri ("file://"
 * dropped), with "." and ".." resolved by name.  With TDB_MEMBERS_INSIDE a
 * member is followed only when its place is inside the source: a relative
 * place that does not climb above the root, or what opts.locate says (it
 * may resolve symbolic links, and read an absolute uri that names a place
 * inside the source as the path there).  TDB_MEMBERS_ANY follows the
 * others too, at their place, through the same backend.  A member that is
 * not followed or cannot be opened (missing, damaged, not TileDB, a cycle,
 * a name no folder can have or that another member has) is left out of
 * the tree: __group.json gives the reason under its "error", and
 * tdb_fs_warnings lists it. */
int tdb_fs_open(struct tdb_fs **out, const struct tdb_io *io,
                const struct tdb_open_options *opts, struct tdb_error *err);

void tdb_fs_close(struct tdb_fs *fs);

/* The members tdb_fs_open left out, one sentence each naming the group,
 * the member and why; *msgs stays valid until tdb_fs_close.
 * @return how many. */
size_t tdb_fs_warnings(const struct tdb_fs *fs, const char *const **msgs);

#define TDB_ROOT_INO 1

/* What getattr reports of a node. */
struct tdb_stat {
    uint64_t ino;
    bool is_dir;
    uint64_t size;      /* bytes for files; entry count for folders */
    uint64_t mtime_ms;  /* newest timestamp that shaped the node */
};

/* Finds entry `name` in folder `parent`. @return 0, TDB_E_NOENT or
 * TDB_E_NOTDIR. */
int tdb_fs_lookup(struct tdb_fs *fs, uint64_t parent, const char *name,
                  uint64_t *ino, struct tdb_error *err);

/* Whether folder ino makes its files from their names on lookup
 * (__slice/, __domain/): a name it refuses is malformed, and the message
 * of tdb_fs_lookup's TDB_E_NOENT says why (worth telling the user, since
 * a lookup can answer nothing but "no such file"). */
bool tdb_fs_made_on_lookup(struct tdb_fs *fs, uint64_t ino);

/* Resolves a '/'-separated path ("" or "/" is the root). */
int tdb_fs_resolve(struct tdb_fs *fs, const char *path, uint64_t *ino,
                   struct tdb_error *err);

/* Stats a node.  A var-sized field's size is computed on first call (its
 * offsets tiles are decoded once) and remembered. */
int tdb_fs_stat(struct tdb_fs *fs, uint64_t ino, struct tdb_stat *st,
                struct tdb_error *err);

/* Entry `index` (0-based) of folder `ino`; TDB_E_NOENT past the end.
 * `*name` stays valid until tdb_fs_close. */
int tdb_fs_readdir(struct tdb_fs *fs, uint64_t ino, uint64_t index,
                   const char **name, uint64_t *child,
                   struct tdb_error *err);

/* Reads up to `len` bytes of file `ino` at `off` into sink s, always as
 * a copy (TDB_SINK_COPY, whatever s->forms says; see "reading a file"
 * below): into s->buf, or a buffer the read allocates when s->buf is
 * NULL.  s->got is less than `len` only at the end of the file.  Decodes
 * only the tiles the range touches, with no read-ahead: for one-off
 * reads (a reader, tdb_reader_open, is faster for a file read from start
 * to end).  Thread-safe.  @return 0, TDB_E_NOENT, TDB_E_ISDIR, TDB_E_NOMEM
 * or a decoding error (then s->got is 0; tdb_sink_release(s) all the
 * same). */
struct tdb_sink;
int tdb_fs_read(struct tdb_fs *fs, uint64_t ino, uint64_t off, size_t len,
                struct tdb_sink *s, struct tdb_error *err);

/* lseek's SEEK_DATA (data true) and SEEK_HOLE: the first offset at or
 * after `off` of written data / of a hole.  Holes are the cells of a dense
 * array no fragment wrote (they read as fill values); the end of a file is
 * a hole.  @return 0, TDB_E_NOENT when off is at or past the end (or, for
 * SEEK_DATA, no data follows), or another error. */
int tdb_fs_seek(struct tdb_fs *fs, uint64_t ino, uint64_t off, bool data,
                uint64_t *out, struct tdb_error *err);

/* ------------------------------------------------------ reading a file
 *
 * A read gives its bytes to a sink (struct tdb_sink), in one of the forms
 * the sink says it takes; the read picks the cheapest the bytes allow, in
 * one pass over the tiles:
 *
 *   TDB_SINK_FILE  ranges of the array's own data files: a descriptor, an
 *                  offset and a length each, for a reply spliced from the
 *                  files.  Only where the bytes are the stored bytes of
 *                  unfiltered tiles, in pieces long enough to pay (4 KiB
 *                  on average at least, 256 at most), on storage with
 *                  file descriptors.
 *   TDB_SINK_TILE  pieces of the decoded tiles themselves, lent: where the
 *                  pieces are long (64 KiB on average; the kernel copies a
 *                  reply from memory given in pieces once more per piece).
 *   TDB_SINK_COPY  a copy into s->buf.  Always possible: every sink takes
 *                  it, whatever `forms` says.
 *
 * The caller fills `forms` and `buf` (room for the read's len bytes, or
 * NULL: the read allocates a buffer when it copies) and leaves the rest
 * zeroed (TDB_SINK_INIT); the read sets `form` and `got` (fewer than len
 * bytes only at the end of the file), and for FILE and TILE `pieces`.
 * What the read lends (the tiles, the descriptors, the buffer it
 * allocated) stays valid until tdb_sink_release(s), which every read
 * needs once its bytes are used, whether it succeeded or not; it may come
 * after tdb_reader_close but must come before tdb_fs_close.  A sink is
 * used for one read at a time.
 */
enum tdb_sink_form {
    TDB_SINK_COPY = 1,
    TDB_SINK_TILE = 2,
    TDB_SINK_FILE = 4,
};

/* One piece of a read's bytes, in the file's order: TDB_SINK_TILE bytes
 * [base, base + len) of a decoded tile (fd -1), TDB_SINK_FILE bytes [off,
 * off + len) of descriptor fd (base NULL). */
struct tdb_piece {
    const void *base;
    int fd;
    uint64_t off;
    size_t len;
};

struct tdb_lent;    /* what a read lends (tdb_sink_release) */

struct tdb_sink {
    unsigned forms;                 /* in: TDB_SINK_* bits it takes */
    void *buf;                      /* in: COPY's room, or NULL; out: the
                                     * buffer the copy went to */
    enum tdb_sink_form form;        /* out: the form the read took */
    size_t got;                     /* out: bytes */
    const struct tdb_piece *pieces; /* out: FILE, TILE: npieces of them */
    size_t npieces;
    struct tdb_lent *lent;          /* what tdb_sink_release gives back */
};

/* A sink taking `f` (TDB_SINK_* bits), copies into `b` (NULL: allocated
 * by the read). */
#define TDB_SINK_INIT(f, b) ((struct tdb_sink){.forms = (f), .buf = (b)})

/* Gives back what the read into s lent, and frees the buffer the read
 * allocated (s->buf is then NULL again, unless it was the caller's);
 * s may be reused for another read.  Accepts a sink nothing was read
 * into. */
void tdb_sink_release(struct tdb_sink *s);

/* A buffer of len bytes for s when it has none (for a caller that fills
 * a sink itself: a file the engine does not read), freed by
 * tdb_sink_release.  @return 0 or TDB_E_NOMEM. */
int tdb_sink_buffer(struct tdb_sink *s, size_t len);

/* A reader of one file: tdb_fs_read's bytes, faster.  The tiles one read
 * touches are decoded on every core, and while the file is read from start
 * to end (each read starting where the last ended) the tiles ahead are
 * decoded by the tree's threads (opts.threads) before they are asked for
 * (the read-ahead policy: read/readahead.h).  The tiles of its last reads
 * and those decoded ahead stay in the cache while it has room.  Readers
 * decode within the cache's budget: however many read at once, it holds
 * at most its budget (or one tile, when a tile is larger), and a read
 * waits for room rather than hold more (so do not read while a sink of
 * the same tree holds lent tiles).  A cache smaller than a row of tiles
 * decodes a tile once per read that touches it.  Thread-safe; close every
 * reader of a tree before tdb_fs_close.
 * tdb_reader_open @return 0, TDB_E_NOENT, TDB_E_ISDIR or TDB_E_NOMEM. */
struct tdb_reader;
int tdb_reader_open(struct tdb_reader **out, struct tdb_fs *fs, uint64_t ino,
                    struct tdb_error *err);

/* Reads up to `len` bytes of the reader's file at `off` into sink s, in
 * the cheapest form s takes (see above).  @return 0 or a TDB_E_* code
 * (then s->got is 0; tdb_sink_release(s) all the same). */
int tdb_reader_read(struct tdb_reader *rd, uint64_t off, size_t len,
                    struct tdb_sink *s, struct tdb_error *err);

/* Closes a reader (NULL: nothing); sinks it lent to may be released
 * after. */
void tdb_reader_close(struct tdb_reader *rd);

/* The root folder has one extended attribute, user.tiledbfs.stats: one
 * line "hits=N misses=N decodes=N decoded_bytes=N decode_ms=N
 * evictions=N cache_used=N cache_budget=N entries=N huge_bytes=N
 * slices=N slices_idle_max=N slice_evictions=N" of the tile cache
 * (huge_bytes: tdb_cache_stats' huge) and of the __slice/ files the tree
 * holds, the idle ones kept at most and those dropped.
 *
 * Extended attributes of a data file (user.tiledb.datatype, .dtype,
 * .shape, .cell_val_num).  tdb_fs_listxattr lists their names;
 * tdb_fs_getxattr copies one value (not NUL-terminated) into buf and sets
 * *size to its length; with buf NULL only *size is set.
 * @return 0, TDB_E_NOENT (no such attribute) or TDB_E_INVAL (buf too small). */
int tdb_fs_listxattr(struct tdb_fs *fs, uint64_t ino, size_t index,
                     const char **name);
int tdb_fs_getxattr(struct tdb_fs *fs, uint64_t ino, const char *name,
                    void *buf, size_t cap, size_t *size);

/* ------------------------------------------------ whether a source changed */

#define TDB_STAMP_BYTES 32

/* The folders whose entries decide what tdb_fs_open shows of a source:
 * the folder of each array and group the tree `fs` opened (the root "",
 * then its members'; fs NULL: the root alone) and, in each, __schema,
 * __commits, __fragment_meta, __meta and __group, whether or not they
 * exist now.  Paths are io-relative (absolute for members named by an
 * absolute URI).  Into *out (is_dir all true; free with tdb_names_free).
 * @return 0 or TDB_E_NOMEM. */
int tdb_fs_watch_dirs(const struct tdb_fs *fs, struct tdb_names *out,
                      struct tdb_error *err);

/* A digest (SHA-256) of the entries of those folders as they are now:
 * names and whether each is a folder (TileDB never rewrites a file under
 * the same name).  One listing per folder that exists: at most 5 for an
 * array, 3 for a group of its own, plus its members'.  A digest taken before
 * tdb_fs_open that differs from one taken later over the same `fs` means
 * the source changed since that open (a change between the digest and the
 * open makes the later digest differ too: one reopen more than needed,
 * never one too few).  @return 0 or the TDB_E_* code of a listing. */
int tdb_fs_stamp(const struct tdb_io *io, const struct tdb_fs *fs,
                 uint8_t out[TDB_STAMP_BYTES], struct tdb_error *err);

#ifdef __cplusplus
}
#endif
#endif /* TILEDB_FORMAT_H */

/* -------------------------------------------------------------- unstable
 * Calls whose form follows the engine's internals (the tile cache, the
 * decoded tiles) and changes with them: for the project's own front ends,
 * tests and benchmarks.  A file sees them when it defines TDB_UNSTABLE_API
 * before it includes this header (as zstd.h's ZSTD_STATIC_LINKING_ONLY). */
#if defined(TDB_UNSTABLE_API) && !defined(TILEDB_FORMAT_H_UNSTABLE)
#define TILEDB_FORMAT_H_UNSTABLE

#ifdef __cplusplus
extern "C" {
#endif

/* Statistics of a tree's tile cache, for tests and benchmarks. */
struct tdb_cache_stats {
    uint64_t budget, used, entries, hits, misses, decodes, evictions;
    uint64_t decoded_bytes;     /* bytes the decodes produced */
    uint64_t decode_ns;         /* time spent decoding (all threads) */
    uint64_t pooled;            /* of used: freed tiles' blocks kept for
                                 * loads to decode into */
    uint64_t reused;            /* loads handed a pooled block */
    uint64_t huge;              /* bytes mapped for blocks on huge pages
                                 * (in use or pooled) */
};
void tdb_fs_cache_stats(struct tdb_fs *fs, struct tdb_cache_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* TDB_UNSTABLE_API */
