/* io_s3_http.c: one S3 request through libcurl: a pool of idle handles
 * (each keeps its connection alive), the signed headers, the bodies' sinks
 * and the retries. */
#include "core/core.h"
#include "core/io_s3.h"
#include "core/io_s3_local.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define S3_TRIES 4             /* tries of a request: 5xx, failed
                                * connections */
#define S3_BODY_MAX (64u << 20) /* cap on a listing or error body kept */
#define S3_AUTH_MAX 1024

int tdb_s3_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : TDB_E_IO;
}

/* ---------------------------------------------------------------- HTTP */

static CURL *s3_handle(struct s3 *s)
{
    CURL *h = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->nidle)
        h = s->idle[--s->nidle];
    pthread_mutex_unlock(&s->lock);
    if (h)
        curl_easy_reset(h);
    else
        h = curl_easy_init();
    return h;
}

static void s3_handle_put(struct s3 *s, CURL *h)
{
    pthread_mutex_lock(&s->lock);
    if (s->nidle < S3_POOL) {
        s->idle[s->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    if (h)
        curl_easy_cleanup(h);
}

static size_t s3_on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct s3_call *c = arg;
    size_t n = size * nmemb;
    if (!c->status)
        curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
    if (c->status < 200 || c->status >= 300 || c->sink == S3_SINK_MEM) {
        if (c->mem.len + n > S3_BODY_MAX || tdb_buf_append(&c->mem, p, n)) {
            c->failed = true;
            return 0;
        }
        return n;
    }
    switch (c->sink) {
    case S3_SINK_BUF: {
        size_t off = 0;
        if (c->skip && c->status == 200) {  /* Range ignored: all of it */
            off = c->skip < n ? (size_t)c->skip : n;
            c->skip -= off;
        }
        size_t take = n - off;
        if (take > c->dst_len - c->dst_got)
            take = c->dst_len - c->dst_got;
        memcpy(c->dst + c->dst_got, p + off, take);
        c->dst_got += take;
        return n;
    }
    case S3_SINK_FD:
        for (size_t done = 0; done < n;) {
            ssize_t w = pwrite(c->fd, p + done, n - done,
                               (off_t)(c->fd_pos + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                c->failed = true;
                return 0;
            }
            done += (size_t)w;
        }
        c->fd_pos += n;
        return n;
    default:
        return n;
    }
}

static size_t s3_on_upload(char *p, size_t size, size_t nmemb, void *arg)
{
    struct s3_call *c = arg;
    size_t want = size * nmemb;
    if (c->up_fd < 0 || c->up_pos >= c->up_len)
        return 0;
    if (want > c->up_len - c->up_pos)
        want = (size_t)(c->up_len - c->up_pos);
    ssize_t n;
    do
        n = pread(c->up_fd, p, want, (off_t)c->up_pos);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return CURL_READFUNC_ABORT;
    c->up_pos += (uint64_t)n;
    return (size_t)n;
}

static int s3_on_seek(void *arg, curl_off_t off, int origin)
{
    struct s3_call *c = arg;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > c->up_len)
        return CURL_SEEKFUNC_FAIL;
    c->up_pos = (uint64_t)off;
    return CURL_SEEKFUNC_OK;
}

/* Hex SHA-256 of the first len bytes of fd. */
static int s3_sha256_fd(int fd, uint64_t len, char out[65])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char buf[1 << 16], d[32];
    unsigned int dl = 0;
    int r = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) ? 0 : TDB_E_NOMEM;
    for (uint64_t pos = 0; !r && pos < len;) {
        size_t want = len - pos < sizeof buf ? (size_t)(len - pos) : sizeof buf;
        ssize_t n = pread(fd, buf, want, (off_t)pos);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || !EVP_DigestUpdate(md, buf, (size_t)n))
            r = TDB_E_IO;
        else
            pos += (uint64_t)n;
    }
    if (!r && !EVP_DigestFinal_ex(md, d, &dl))
        r = TDB_E_IO;
    EVP_MD_CTX_free(md);
    if (!r)
        tdb_s3_hex(d, 32, out);
    return r;
}

static bool s3_transient(CURLcode cc)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
           cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR ||
           cc == CURLE_GOT_NOTHING || cc == CURLE_OPERATION_TIMEDOUT ||
           cc == CURLE_PARTIAL_FILE || cc == CURLE_SSL_CONNECT_ERROR;
}

/* The request's path as signed and sent: "/BUCKET/KEY" or "/KEY". */
static char *s3_uri(struct s3 *s, const char *key)
{
    char *enc = tdb_s3_encode(key ? key : "", true), *uri = NULL;
    if (enc && asprintf(&uri, "%s/%s", s->uri_base, enc) < 0)
        uri = NULL;
    free(enc);
    return uri;
}

/* One try of c.  @return 0 (c->status set) or a curl failure in c->cc. */
static int s3_try(struct s3 *s, struct s3_call *c, const char *uri,
                  const char *payload_hash)
{
    CURL *h = c->h;
    struct curl_slist *hl = NULL;
    char *url = NULL, *line = NULL;
    char date[32], auth[S3_AUTH_MAX];
    int r = TDB_E_NOMEM;

    time_t now = (time_t)(tdb_now_ms() / 1000);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);

    struct tdb_s3_pair hdr[8];
    size_t nh = 0;
    hdr[nh++] = (struct tdb_s3_pair){"host", s->host};
    hdr[nh++] = (struct tdb_s3_pair){"x-amz-date", date};
    hdr[nh++] = (struct tdb_s3_pair){"x-amz-content-sha256", payload_hash};
    if (c->range[0])
        hdr[nh++] = (struct tdb_s3_pair){"range", c->range};
    if (c->copy_source)
        hdr[nh++] = (struct tdb_s3_pair){"x-amz-copy-source", c->copy_source};
    if (s->token)
        hdr[nh++] = (struct tdb_s3_pair){"x-amz-security-token", s->token};
    for (size_t i = 0; i < nh; i++) {
        if (asprintf(&line, "%s: %s", hdr[i].name, hdr[i].value) < 0) {
            line = NULL;
            goto out;
        }
        struct curl_slist *nl = curl_slist_append(hl, line);
        free(line);
        line = NULL;
        if (!nl)
            goto out;
        hl = nl;
    }
    if (s->key_id && s->secret) {
        int sr = tdb_s3_sigv4(auth, sizeof auth, c->method, uri,
                              c->query ? c->query : "", hdr, nh, payload_hash,
                              date, s->region, s->key_id, s->secret);
        if (sr) {
            r = sr;
            goto out;
        }
        if (asprintf(&line, "Authorization: %s", auth) < 0) {
            line = NULL;
            goto out;
        }
        struct curl_slist *nl = curl_slist_append(hl, line);
        explicit_bzero(line, strlen(line));
        free(line);
        line = NULL;
        if (!nl)
            goto out;
        hl = nl;
    }
    {
        struct curl_slist *nl = curl_slist_append(hl, "Expect:");
        if (!nl)
            goto out;
        hl = nl;
    }
    if (asprintf(&url, "%s%s%s%s", s->base, uri, c->query && c->query[0]
                                                     ? "?" : "",
                 c->query ? c->query : "") < 0) {
        url = NULL;
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_msg);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, s3_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!strcmp(c->method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(c->method, "PUT")) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, s3_on_upload);
        curl_easy_setopt(h, CURLOPT_READDATA, c);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, s3_on_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, c);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)(c->up_fd >= 0 ? c->up_len : 0));
    } else if (strcmp(c->method, "GET")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
    }
    c->curl_msg[0] = 0;
    c->cc = curl_easy_perform(h);
    c->status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
    if (curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
                          &c->length) != CURLE_OK)
        c->length = -1;
    r = 0;
out:
    curl_slist_free_all(hl);
    free(url);
    return r;
}

/* Performs c, retrying 5xx answers and failed connections with backoff
 * (0.1, 0.2, 0.4 s).  @return 0 when an answer came (c->status, maybe an
 * error status), TDB_E_IO when none did or a sink failed, TDB_E_NOMEM. */
int tdb_s3_perform(struct s3 *s, struct s3_call *c)
{
    char hash[65];
    int r;
    if (c->up_fd >= 0) {
        if ((r = s3_sha256_fd(c->up_fd, c->up_len, hash)))
            return r;
    } else {
        tdb_s3_sha256_hex("", 0, hash);
    }
    char *uri = s3_uri(s, c->key);
    if (!uri)
        return TDB_E_NOMEM;
    if (!(c->h = s3_handle(s))) {
        free(uri);
        return TDB_E_NOMEM;
    }
    uint64_t skip0 = c->skip, fd0 = c->fd_pos;
    for (int attempt = 0;; attempt++) {
        c->up_pos = 0;
        c->dst_got = 0;
        c->skip = skip0;
        c->fd_pos = fd0;
        c->mem.len = 0;
        c->failed = false;
        c->status = 0;
        if ((r = s3_try(s, c, uri, hash)))
            break;
        if (c->failed) {
            r = TDB_E_IO;
            break;
        }
        bool again = c->cc == CURLE_OK ? c->status >= 500
                                       : s3_transient(c->cc);
        if (!again || attempt + 1 >= S3_TRIES) {
            r = c->cc == CURLE_OK ? 0 : TDB_E_IO;
            break;
        }
        struct timespec ts = {0, 100000000L << attempt};
        nanosleep(&ts, NULL);
    }
    /* a handle that failed mid-transfer may hold a broken connection */
    if (c->cc == CURLE_OK)
        s3_handle_put(s, c->h);
    else
        curl_easy_cleanup(c->h);
    c->h = NULL;
    free(uri);
    return r;
}
