/* backend.c: the I/O interface over S3, S3-compatible servers and Azure:
 * its table of ops (reads in read_ops.c, changes in write_ops.c), copies
 * between two backends on one store, and the opening of a URL (scheme,
 * bucket, endpoint, keys, tuning).  Requests go through loop.c, signed by
 * s3/sign.c or azure/sign.c. */
#include "core/core.h"
#include "s3/s3.h"
#include "azure/azure.h"
#include "objstore/objstore.h"
#include "core/names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define OS_REQUESTS 64          /* requests in flight at most */
#define OS_TIMEOUT_MS 30000     /* a read's deadline, its retries included */
#define OS_META_BYTES (64u << 20)  /* small files kept whole */
#define OS_AHEAD_BYTES (64u << 20) /* ranges fetched ahead, not yet read */
#define OS_GCS_ENDPOINT "https://storage.googleapis.com"

/* ------------------------------------------------------------ the ops */

static void os_prefetch(void *ctx, const struct tdb_io_want *want, size_t n)
{
    tdb_os_want(ctx, want, n);
}

static void os_settle(void *ctx)
{
    tdb_os_settle(ctx);
}

static int os_mkdir(void *ctx, const char *path)
{
    return 0;   /* a folder is the prefix of its keys */
}

/* A copy between two backends on one store (the same endpoint, as the
 * same user): no byte through here. */
static int os_copy_from(void *ctx, const struct tdb_io *src, const char *from,
                        const char *to)
{
    struct objstore *s = ctx, *t = tdb_os_backend(src);
    if (!t || !s->proto->copy || t->proto != s->proto ||
        strcmp(t->base, s->base))
        return TDB_E_UNSUPPORTED;
    /* as the same user: a copy reads the source with the destination's
     * keys */
    struct tdb_s3_keys *mine = tdb_s3_creds_hold(s->creds),
                       *theirs = tdb_s3_creds_hold(t->creds);
    bool same = mine && theirs ? !strcmp(mine->id, theirs->id)
                               : mine == theirs;
    tdb_s3_creds_drop(s->creds, mine);
    tdb_s3_creds_drop(t->creds, theirs);
    if (!same)
        return TDB_E_UNSUPPORTED;
    uint64_t size;
    int r = tdb_os_op_size(t, from, &size);
    char *kf = tdb_os_key(t, from), *kt = tdb_os_key(s, to),
         *nt = tdb_os_norm(to);
    if (!r)
        r = kf && kt && nt ? tdb_os_copy_object(s, t->bucket, kf, size, kt)
                           : TDB_E_NOMEM;
    if (nt)
        tdb_os_changed(s, nt);
    free(kf);
    free(kt);
    free(nt);
    return r;
}

static void os_destroy(void *ctx)
{
    struct objstore *s = ctx;
    /* objects written and never synced are stored now (best effort) */
    while (s->pend) {
        struct os_pending *p = s->pend;
        s->pend = p->next;
        char *key = tdb_os_key(s, p->path);
        if (key)
            tdb_os_upload_fd(s, key, p->fd, p->size);
        free(key);
        tdb_os_pending_free(p);
    }
    /* every call ends (fetches ahead fail), then what they fetched goes */
    tdb_os_loop_free(&s->loop);
    tdb_os_fetched_free(s);
    tdb_os_dir_clear(s);
    tdb_os_disk_close(s->disk);
    if (s->journal_fd >= 0)
        close(s->journal_fd);
    for (unsigned i = 0; i < s->nretired; i++)
        free(s->retired[i]);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->lock);
    tdb_s3_creds_unref(s->creds);
    if (s->proto && s->proto->free)
        s->proto->free(s->pctx);
    free(s->bucket);
    free(s->prefix);
    free(s->base);
    free(s->host);
    free(s->uri_base);
    free(s->region);
    free(s);
}

static const struct tdb_io_ops io_s3_ops = {
    .read_at = tdb_os_op_read_at,
    .size = tdb_os_op_size,
    .list = tdb_os_op_list,
    .is_dir = tdb_os_op_is_dir,
    .write_at = tdb_os_op_write_at,
    .mkdir = os_mkdir,
    .rename = tdb_os_op_rename,
    .remove = tdb_os_op_remove,
    .sync = tdb_os_op_sync,
    .destroy = os_destroy,
    .prefetch = os_prefetch,
    .settle = os_settle,
    .copy_from = os_copy_from,
};

struct objstore *tdb_os_backend(const struct tdb_io *io)
{
    return io && io->ops == &io_s3_ops ? io->ctx : NULL;
}

int tdb_io_s3_journal(const struct tdb_io *io, const char *dir,
                      unsigned *aborted, struct tdb_error *err)
{
    struct objstore *s = tdb_os_backend(io);
    *aborted = 0;
    return s ? tdb_os_journal_open(s, dir, aborted, err) : 0;
}

/* ---------------------------------------------------------------- open */

/* The object stores' URLs: S3's (Google Cloud Storage's XML API speaks
 * S3's protocol), Azure's; the length of the scheme and "://". */
enum os_kind { OS_NONE, OS_S3, OS_GCS, OS_AZURE };

static enum os_kind os_kind_of(const char *source, size_t *skip)
{
    static const struct {
        const char *scheme;
        enum os_kind kind;
    } k[] = {{"s3://", OS_S3}, {"gs://", OS_GCS}, {"gcs://", OS_GCS},
             {"azure://", OS_AZURE}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        size_t n = strlen(k[i].scheme);
        if (!strncmp(source, k[i].scheme, n)) {
            if (skip)
                *skip = n;
            return k[i].kind;
        }
    }
    return OS_NONE;
}

bool tdb_io_is_url(const char *source)
{
    return os_kind_of(source, NULL) != OS_NONE;
}

/* A bucket name that can be a host name label set (no dots: TLS names). */
static bool os_vhost_ok(const char *b)
{
    if (!b[0])
        return false;
    for (const char *p = b; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '-'))
            return false;
    return true;
}

/* Sets s->base, s->host, s->uri_base from the endpoint. */
static int os_endpoint(struct objstore *s, const char *endpoint,
                       struct tdb_error *err)
{
    if (!endpoint) {
        bool vhost = os_vhost_ok(s->bucket);
        int n = vhost ? ((s->uri_base = strdup("")) ? 0 : -1)
                      : asprintf(&s->uri_base, "/%s", s->bucket);
        if (n < 0) {
            s->uri_base = NULL;
            return TDB_E_NOMEM;
        }
        return tdb_os_aws_host(s, s->region, vhost, &s->host, &s->base);
    }
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    int r = 0;
    if (!u)
        return TDB_E_NOMEM;
    if (curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") && strcmp(scheme, "https"))) {
        r = tdb_err(err, TDB_E_INVAL, "endpoint %s: not an http:// or "
                    "https:// URL", endpoint);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
        port = NULL;
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        path = NULL;
    size_t pl = path ? strlen(path) : 0;
    while (pl && path[pl - 1] == '/')
        pl--;
    if (asprintf(&s->host, "%s%s%s", host, port ? ":" : "",
                 port ? port : "") < 0 ||
        asprintf(&s->base, "%s://%s", scheme, s->host) < 0 ||
        asprintf(&s->uri_base, "%.*s/%s", (int)pl, pl ? path : "",
                 s->bucket) < 0)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return r;
}

/* A backend speaking `proto` over url (its scheme skip bytes long):
 * its bucket (container) and prefix, no endpoint yet.  @return 0 (*out
 * the backend), TDB_E_INVAL or TDB_E_NOMEM. */
static int os_new(struct objstore **out, const char *url, size_t skip,
                  const struct os_proto *proto, struct tdb_error *err)
{
    const char *b = url + skip, *slash = strchr(b, '/');
    size_t bl = slash ? (size_t)(slash - b) : strlen(b);
    *out = NULL;
    if (!bl || bl > 255)
        return tdb_err(err, TDB_E_INVAL, "%s: no %s name", url,
                       proto == &tdb_os_proto_azure ? "container" : "bucket");
    struct objstore *s = calloc(1, sizeof *s);
    if (!s)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    s->proto = proto;
    snprintf(s->scheme, sizeof s->scheme, "%.*s", (int)(skip - 3), url);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->journal_fd = -1;
    s->part_size = TDB_S3_PART_SIZE;
    s->meta_max = OS_META_BYTES;
    s->ahead_max = OS_AHEAD_BYTES;
    if (tdb_os_loop_init(&s->loop, OS_REQUESTS, OS_TIMEOUT_MS) ||
        !(s->bucket = strndup(b, bl)) ||
        !(s->prefix = tdb_os_norm(slash ? slash : ""))) {
        os_destroy(s);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    *out = s;
    return 0;
}

int tdb_io_s3(struct tdb_io *io, const char *url,
              const struct tdb_s3_config *cfg, struct tdb_error *err)
{
    size_t skip = 0;
    enum os_kind kind = os_kind_of(url, &skip);
    if (kind != OS_S3 && kind != OS_GCS)
        return tdb_err(err, TDB_E_INVAL, "%s: not an s3:// or gs:// URL",
                       url);
    if ((cfg->access_key == NULL) != (cfg->secret_key == NULL))
        return tdb_err(err, TDB_E_INVAL, "%s: an access key without its "
                       "secret key (or the other way round)", url);
    struct objstore *s;
    int r = os_new(&s, url, skip, &tdb_os_proto_s3, err);
    if (r)
        return r;
    s->region_given = cfg->region && cfg->region[0];
    s->aws = !(cfg->endpoint && cfg->endpoint[0]);
    if (!(s->region = strdup(cfg->region && cfg->region[0] ? cfg->region
                                                           : "us-east-1")))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    /* the keys: the renewable ones the configuration found, else its
     * static ones */
    if (!r && cfg->creds)
        s->creds = tdb_s3_creds_ref(cfg->creds);
    else if (!r && cfg->access_key &&
             (r = tdb_s3_creds_keys(&s->creds, cfg->access_key,
                                    cfg->secret_key, cfg->session_token)))
        r = tdb_err(err, r, "%s: %s", url, r == TDB_E_NOMEM
                    ? "out of memory"
                    : "an empty secret key, or an access key or session "
                      "token empty or holding spaces or control "
                      "characters");
    if (!r)
        r = os_endpoint(s, cfg->endpoint && cfg->endpoint[0] ? cfg->endpoint
                                                             : NULL, err);
    if (r) {
        if (r == TDB_E_NOMEM)
            tdb_err(err, r, "out of memory");
        os_destroy(s);
        return r;
    }
    io->ops = &io_s3_ops;
    io->ctx = s;
    return 0;
}

/* An Azure backend over url ("azure://CONTAINER[/PREFIX]"), where and as
 * whom as tdb_az_config_load finds it under options o. */
static int os_azure(struct tdb_io *io, const char *url,
                    const struct tdb_store_options *o, struct tdb_error *err)
{
    struct tdb_az_config cfg = {0};
    int r = tdb_az_config_load(&cfg, o ? o->endpoint : NULL,
                               o ? o->account : NULL,
                               o ? o->credentials_file : NULL, err);
    if (r)
        return r;
    struct objstore *s;
    r = os_new(&s, url, strlen("azure://"), &tdb_os_proto_azure, err);
    if (!r)
        r = os_endpoint(s, cfg.endpoint, err);
    if (!r && tdb_os_azure_keys(s, &cfg))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    tdb_az_config_free(&cfg);
    if (r) {
        if (s)
            os_destroy(s);
        return r;
    }
    io->ops = &io_s3_ops;
    io->ctx = s;
    return 0;
}

/* The S3 configuration of a gs:// source: Cloud Storage's endpoint and
 * its "auto" region unless the options name others (the environment's
 * AWS_ENDPOINT_URL and AWS_REGION are S3's, not Google's), HMAC keys
 * found as S3's keys are. */
static int os_gcs_config(struct tdb_s3_config *cfg,
                         const struct tdb_store_options *o,
                         struct tdb_error *err)
{
    int r = tdb_s3_config_load_with(cfg, o, err);
    if (r)
        return r;
    char *ep = strdup(o && o->endpoint ? o->endpoint : OS_GCS_ENDPOINT);
    char *rg = strdup(o && o->region ? o->region : "auto");
    if (!ep || !rg) {
        free(ep);
        free(rg);
        tdb_s3_config_free(cfg);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    free(cfg->endpoint);
    free(cfg->region);
    cfg->endpoint = ep;
    cfg->region = rg;
    return 0;
}

/* Applies t to a backend no request has gone through yet. */
static int os_tune(struct objstore *s, const struct tdb_store_tuning *t,
                   struct tdb_error *err)
{
    struct os_loop *L = &s->loop;
    if (t->requests) {
        L->max_active = t->requests;
        curl_multi_setopt(L->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                          (long)t->requests);
        curl_multi_setopt(L->multi, CURLMOPT_MAXCONNECTS, (long)t->requests);
    }
    if (t->timeout_s) {
        L->timeout_ms = (uint64_t)t->timeout_s * 1000;
        L->low_speed_s = t->timeout_s / 3 < 1 ? 1
                         : t->timeout_s / 3 > 20 ? 20
                                                 : (long)(t->timeout_s / 3);
    }
    if (t->readahead_bytes)
        s->ahead_max = t->readahead_bytes;
    if (t->retries_given)
        L->max_tries = t->retries + 1;
    if (t->part_size && (t->part_size < TDB_S3_PART_MIN ||
                         t->part_size > TDB_S3_PART_MAX))
        return tdb_err(err, TDB_E_INVAL, "s3_part_size=%llu: not a part "
                       "size of 5 MiB to 5 GiB (S3's bounds)",
                       (unsigned long long)t->part_size);
    if (t->part_size)
        s->part_size = t->part_size;
    if (t->disk_cache)
        return tdb_os_disk_open(&s->disk, t->disk_cache,
                                t->disk_cache_bytes ? t->disk_cache_bytes
                                                    : TDB_S3_DISK_CACHE_BYTES,
                                err);
    return 0;
}

int tdb_io_open_url_with(struct tdb_io *io, const char *source,
                         const struct tdb_store_options *o, bool create,
                         struct tdb_error *err)
{
    enum os_kind kind = os_kind_of(source, NULL);
    if (kind == OS_NONE) {
        int r = tdb_io_posix(io, source);
        return r ? tdb_err(err, r, "%s: %s", source, tdb_strerror(r)) : 0;
    }
    int r;
    if (kind == OS_AZURE) {
        r = os_azure(io, source, o, err);
    } else {
        struct tdb_s3_config cfg;
        r = kind == OS_GCS ? os_gcs_config(&cfg, o, err)
                           : tdb_s3_config_load_with(&cfg, o, err);
        if (r)
            return r;
        r = tdb_io_s3(io, source, &cfg, err);
        tdb_s3_config_free(&cfg);
    }
    if (r)
        return r;
    struct objstore *s = io->ctx;
    if (o && (r = os_tune(s, &o->tune, err))) {
        tdb_io_free(io);
        return r;
    }
    /* the listings an array's or a group's open reads first, asked for
     * now in case the source is one (the others come back empty) */
    static const char *const dirs[] = {"__schema", "__commits",
                                       "__fragment_meta", "__meta",
                                       "__group"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        tdb_os_want_list(s, dirs[i], false);
    tdb_os_want_list(s, "__fragments", true);
    /* the bucket answers, and the prefix holds something: its listing,
     * kept for the open that follows */
    char *kp = NULL;
    struct tdb_store_dent *e = NULL;
    size_t n = 0;
    if (asprintf(&kp, "%s%s", s->prefix, s->prefix[0] ? "/" : "") < 0) {
        kp = NULL;
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    } else {
        r = tdb_os_list_keys(s, &(struct os_list_ask){kp, true, 0}, &e, &n,
                             err);
    }
    free(kp);
    if (!r && !n && !create)
        r = tdb_err(err, TDB_E_NOENT, "%s: no objects under this prefix",
                    source);
    if (!r)
        tdb_os_dir_put(s, "", e, n, true);
    else
        tdb_store_dents_free(e, n);
    if (r)
        tdb_io_free(io);
    return r;
}

int tdb_io_open_url(struct tdb_io *io, const char *source,
                    struct tdb_error *err)
{
    return tdb_io_open_url_with(io, source, NULL, false, err);
}
