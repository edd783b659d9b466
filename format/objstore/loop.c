/* loop.c: object-store requests through libcurl's multi interface, on one I/O
 * thread per backend.  Calls wait in a queue; at most max_active are in
 * flight, over connections kept alive in the multi handle's pool (DNS and
 * TLS sessions shared); each try is signed anew.  5xx answers and failed
 * or stalled transfers are retried with backoff, within the call's
 * deadline.  A blocking call is a submit and a wait: no other thread
 * performs HTTP. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"
#include "objstore/header.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define OS_BODY_MAX (64u << 20) /* cap on a listing or error body kept */
#define OS_CONNECT_MS 10000    /* at most, for a connection */

int tdb_s3_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : TDB_E_IO;
}

uint64_t tdb_os_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------- sinks */

static size_t os_on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct os_call *c = arg;
    size_t n = size * nmemb;
    if (!c->status)
        curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
    if (c->status < 200 || c->status >= 300 || c->sink == OS_SINK_MEM) {
        if (c->mem.len + n > OS_BODY_MAX || tdb_buf_append(&c->mem, p, n)) {
            c->failed = true;
            return 0;
        }
        return n;
    }
    switch (c->sink) {
    case OS_SINK_BUF: {
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
    case OS_SINK_FD:
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

static size_t os_on_upload(char *p, size_t size, size_t nmemb, void *arg)
{
    struct os_call *c = arg;
    size_t want = size * nmemb;
    if ((c->up_fd < 0 && !c->body) || c->up_pos >= c->up_len)
        return 0;
    if (want > c->up_len - c->up_pos)
        want = (size_t)(c->up_len - c->up_pos);
    if (c->up_fd < 0) {
        memcpy(p, c->body + c->up_pos, want);
        c->up_pos += want;
        return want;
    }
    ssize_t n;
    do
        n = pread(c->up_fd, p, want, (off_t)(c->up_off + c->up_pos));
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return CURL_READFUNC_ABORT;
    c->up_pos += (uint64_t)n;
    return (size_t)n;
}

static int os_on_seek(void *arg, curl_off_t off, int origin)
{
    struct os_call *c = arg;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > c->up_len)
        return CURL_SEEKFUNC_FAIL;
    c->up_pos = (uint64_t)off;
    return CURL_SEEKFUNC_OK;
}

/* Hex SHA-256 of bytes [off, off + len) of fd. */
static int os_sha256_fd(int fd, uint64_t off, uint64_t len, char out[65])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char buf[1 << 16], d[32];
    unsigned int dl = 0;
    int r = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) ? 0 : TDB_E_NOMEM;
    for (uint64_t pos = 0; !r && pos < len;) {
        size_t want = len - pos < sizeof buf ? (size_t)(len - pos) : sizeof buf;
        ssize_t n = pread(fd, buf, want, (off_t)(off + pos));
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
        tdb_store_hex(d, 32, out);
    return r;
}

static bool os_transient(CURLcode cc)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
           cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR ||
           cc == CURLE_GOT_NOTHING || cc == CURLE_OPERATION_TIMEDOUT ||
           cc == CURLE_PARTIAL_FILE || cc == CURLE_SSL_CONNECT_ERROR;
}

/* The request's path as signed and sent: "/BUCKET/KEY" or "/KEY". */
static char *os_uri(struct objstore *s, const char *key)
{
    char *enc = tdb_store_encode(key ? key : "", true), *uri = NULL;
    if (enc && asprintf(&uri, "%s%s%s", s->uri_base,
                        key || s->proto->bucket_slash ? "/" : "", enc) < 0)
        uri = NULL;
    free(enc);
    return uri;
}


/* Is p[0..n) name ":" (any case)?  Then *v is what follows, spaces and
 * the line's end trimmed, and *e its end. */
static bool os_header_is(const char *p, size_t n, const char *name,
                         const char **v, const char **e)
{
    size_t l = strlen(name);
    if (n <= l || strncasecmp(p, name, l) || p[l] != ':')
        return false;
    const char *b = p + l + 1, *end = p + n;
    while (b < end && (*b == ' ' || *b == '\t'))
        b++;
    while (end > b && (end[-1] == '\r' || end[-1] == '\n' ||
                       end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *v = b;
    *e = end;
    return true;
}

/* Are p[0..n) printable ASCII (no NUL, no control byte)? */
static bool os_printable(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
            return false;
    return true;
}

void tdb_os_header_line(struct os_call *c, const char *p, size_t n)
{
    const char *v, *e;
    if (os_header_is(p, n, "etag", &v, &e)) {
        size_t l = (size_t)(e - v);
        free(c->etag);
        c->etag = l && l <= OS_ETAG_MAX && os_printable(v, l)
                      ? strndup(v, l) : NULL;
    } else if (os_header_is(p, n, "x-amz-bucket-region", &v, &e)) {
        /* a region name: letters, digits and '-' */
        size_t l = (size_t)(e - v);
        c->region[0] = 0;
        if (!l || l >= sizeof c->region)
            return;
        for (size_t i = 0; i < l; i++)
            if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9')
                  || v[i] == '-'))
                return;
        memcpy(c->region, v, l);
        c->region[l] = 0;
    } else if (os_header_is(p, n, "content-range", &v, &e)) {
        /* "bytes A-B/TOTAL" (TOTAL "*" when unknown): read within the
         * line, which is not NUL-terminated */
        const char *slash = memchr(v, '/', (size_t)(e - v));
        if (!slash || slash + 1 == e || e - (slash + 1) > 18)
            return;
        curl_off_t t = 0;
        for (const char *d = slash + 1; d < e; d++) {
            if (*d < '0' || *d > '9')
                return;
            t = t * 10 + (*d - '0');
        }
        c->total = t;
    }
}

static size_t os_on_header(char *p, size_t size, size_t nmemb, void *arg)
{
    size_t n = size * nmemb;
    tdb_os_header_line(arg, p, n);
    return n;
}

/* Milliseconds left of c's deadline (at least 1), or `none` without one. */
static long os_left_ms(const struct os_call *c, uint64_t now, long none)
{
    if (!c->deadline)
        return none;
    return c->deadline > now + 1 ? (long)(c->deadline - now) : 1;
}

/* Sets the options of one try of c on its handle c->h. */
static void os_setopts(struct objstore *s, struct os_call *c, uint64_t now)
{
    CURL *h = c->h;
    struct os_loop *L = &s->loop;
    long left = os_left_ms(c, now, 0);
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hl);
    curl_easy_setopt(h, CURLOPT_PRIVATE, c);
    curl_easy_setopt(h, CURLOPT_SHARE, L->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, left && left < OS_CONNECT_MS
                                                       ? left
                                                       : (long)OS_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, L->low_speed_s);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_msg);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, os_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, os_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!strcmp(c->method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(c->method, "POST")) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(c->body ? c->body_len : 0));
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body ? (const char *)c->body
                                                        : "");
    } else if (!strcmp(c->method, "PUT")) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, os_on_upload);
        curl_easy_setopt(h, CURLOPT_READDATA, c);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, os_on_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, c);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)(c->up_fd >= 0 || c->body ? c->up_len
                                                               : 0));
    } else if (strcmp(c->method, "GET")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
    }
}

/* ------------------------------------------------------ the I/O thread */

/* Takes c off the list at *pp (if there); @return the last call left on
 * it, for a queue's tail. */
static struct os_call *os_unlink(struct os_call **pp, struct os_call *c)
{
    struct os_call *last = NULL;
    while (*pp) {
        if (*pp == c) {
            *pp = c->next;
            continue;
        }
        last = *pp;
        pp = &(*pp)->next;
    }
    return last;
}

/* The thread's handle for a try: an idle one or a new one. */
static CURL *os_easy(struct os_loop *L)
{
    if (L->nidle) {
        CURL *h = L->idle[--L->nidle];
        curl_easy_reset(h);
        return h;
    }
    return curl_easy_init();
}

/* Gives back c's handle: kept when its transfer ended well (its
 * connection stays in the pool), else closed. */
static void os_easy_put(struct os_loop *L, struct os_call *c, bool ok)
{
    if (!c->h)
        return;
    if (ok && L->nidle < OS_IDLE)
        L->idle[L->nidle++] = c->h;
    else
        curl_easy_cleanup(c->h);
    c->h = NULL;
}

/* Clears what one try left in c. */
static void os_try_reset(struct os_call *c)
{
    curl_slist_free_all(c->hl);
    c->hl = NULL;
    c->up_pos = 0;
    c->dst_got = 0;
    c->skip = c->skip0;
    c->fd_pos = c->fd0;
    c->mem.len = 0;
    c->failed = false;
    c->status = 0;
    c->length = -1;
    c->total = -1;
    c->region[0] = 0;
    c->cc = CURLE_OK;
    c->curl_msg[0] = 0;
    free(c->etag);
    c->etag = NULL;
}

/* Starts a try of c on the thread (L->lock not held).  @return 0, or a
 * TDB_E_* code (c ends with it). */
static int os_start(struct objstore *s, struct os_call *c, uint64_t now)
{
    struct os_loop *L = &s->loop;
    os_try_reset(c);
    c->tries++;
    free(c->url);
    if (asprintf(&c->url, "%s%s%s%s", s->base, c->uri,
                 c->query && c->query[0] ? "?" : "",
                 c->query ? c->query : "") < 0) {
        c->url = NULL;
        return TDB_E_NOMEM;
    }
    int r = s->proto->sign(s, c);
    if (r)
        return r;
    if (!(c->h = os_easy(L)))
        return TDB_E_NOMEM;
    os_setopts(s, c, now);
    if (curl_multi_add_handle(L->multi, c->h) != CURLM_OK) {
        os_easy_put(L, c, false);
        return TDB_E_IO;
    }
    return 0;
}

/* Ends c: its outcome in c->r, then done(c).  L->lock not held. */
static void os_end(struct os_call *c, int r)
{
    curl_slist_free_all(c->hl);
    c->hl = NULL;
    free(c->uri);
    free(c->url);
    c->uri = c->url = NULL;
    c->r = r;
    c->done(c);
}

/* Should the try that just ended be tried again (in `*wait` ms)? */
static bool os_again(const struct os_loop *L, const struct os_call *c,
                     uint64_t now, uint64_t *wait)
{
    if (c->failed)
        return false;
    bool transient = c->cc == CURLE_OK ? c->status >= 500
                                       : os_transient(c->cc);
    if (!transient || c->tries >= L->max_tries)
        return false;
    *wait = UINT64_C(100) << (c->tries - 1);
    return !c->deadline || now + *wait < c->deadline;
}

/* A try ended with curl's `cc`: retried later, or c ends. */
static void os_finished(struct objstore *s, struct os_call *c, CURLcode cc)
{
    struct os_loop *L = &s->loop;
    uint64_t now = tdb_os_clock_ms(), wait = 0;
    c->cc = cc;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
    if (curl_easy_getinfo(c->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
                          &c->length) != CURLE_OK)
        c->length = -1;
    curl_multi_remove_handle(L->multi, c->h);
    /* a handle that failed mid-transfer may hold a broken connection */
    os_easy_put(L, c, cc == CURLE_OK);
    /* the protocol's own reasons: S3's renewed keys, a bucket's region */
    bool again = os_again(L, c, now, &wait) ||
                 (s->proto->again && s->proto->again(s, c, now, &wait));
    pthread_mutex_lock(&L->lock);
    os_unlink(&L->active, c);
    L->nactive--;
    if (again) {
        c->not_before = now + wait;
        c->next = L->later;
        L->later = c;
    }
    pthread_mutex_unlock(&L->lock);
    if (!again)
        os_end(c, c->failed ? TDB_E_IO : cc == CURLE_OK ? 0 : TDB_E_IO);
}

/* Moves the retries whose time came to the queue's head; @return the ms
 * until the next one (or `none`).  L->lock held. */
static long os_due(struct os_loop *L, uint64_t now, long none)
{
    long next = none;
    for (struct os_call **pp = &L->later; *pp;) {
        struct os_call *c = *pp;
        if (c->not_before <= now) {
            *pp = c->next;
            c->next = L->head;
            L->head = c;
            if (!L->tail)
                L->tail = c;
            continue;
        }
        long w = (long)(c->not_before - now);
        if (next < 0 || w < next)
            next = w;
        pp = &c->next;
    }
    return next;
}

/* Starts queued calls while fewer than max_active run.  L->lock held on
 * entry and exit (dropped around each start). */
static void os_start_queued(struct objstore *s, uint64_t now)
{
    struct os_loop *L = &s->loop;
    while (L->head && L->nactive < L->max_active) {
        struct os_call *c = L->head;
        L->head = c->next;
        if (!L->head)
            L->tail = NULL;
        c->next = L->active;
        L->active = c;
        L->nactive++;
        L->tries++;
        pthread_mutex_unlock(&L->lock);
        int r = os_start(s, c, now);
        pthread_mutex_lock(&L->lock);
        if (r) {
            os_unlink(&L->active, c);
            L->nactive--;
            pthread_mutex_unlock(&L->lock);
            os_end(c, r);
            pthread_mutex_lock(&L->lock);
        }
    }
}

/* Takes every call off the lists (destroy): they end with TDB_E_IO.
 * L->lock held on entry and exit. */
static void os_abandon(struct os_loop *L)
{
    while (L->head || L->later || L->active) {
        struct os_call *c = L->active ? L->active : L->head ? L->head
                                                            : L->later;
        if (c == L->active) {
            L->active = c->next;
            L->nactive--;
        } else if (c == L->head) {
            L->head = c->next;
            if (!L->head)
                L->tail = NULL;
        } else {
            L->later = c->next;
        }
        pthread_mutex_unlock(&L->lock);
        if (c->h) {
            curl_multi_remove_handle(L->multi, c->h);
            os_easy_put(L, c, false);
        }
        c->cc = CURLE_ABORTED_BY_CALLBACK;
        os_end(c, TDB_E_IO);
        pthread_mutex_lock(&L->lock);
    }
}

/* Ends the tries curl finished.  L->lock not held. */
static void os_reap(struct objstore *s)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(s->loop.multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct os_call *c = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
        if (c)
            os_finished(s, c, m->data.result);
    }
}

static void *os_loop_main(void *arg)
{
    struct objstore *s = arg;
    struct os_loop *L = &s->loop;
    pthread_mutex_lock(&L->lock);
    for (;;) {
        uint64_t now = tdb_os_clock_ms();
        if (L->stop)
            os_abandon(L);
        long wait = os_due(L, now, -1);
        os_start_queued(s, now);
        if (!L->head && !L->active && !L->later)
            break;
        pthread_mutex_unlock(&L->lock);
        int running;
        curl_multi_perform(L->multi, &running);
        os_reap(s);
        long t = -1;
        curl_multi_timeout(L->multi, &t);
        if (t < 0 || t > 1000)
            t = 1000;
        if (wait >= 0 && wait < t)
            t = wait;
        curl_multi_poll(L->multi, NULL, 0, (int)t, NULL);
        pthread_mutex_lock(&L->lock);
    }
    L->running = false;
    pthread_cond_broadcast(&L->idle_cv);
    pthread_mutex_unlock(&L->lock);
    return NULL;
}

/* The calls a thread of the parent process had under way when it forked:
 * that thread is not in this process; they start again here.  L->lock
 * held. */
static void os_after_fork(struct os_loop *L)
{
    while (L->active) {
        struct os_call *c = L->active;
        L->active = c->next;
        if (c->h) {
            curl_multi_remove_handle(L->multi, c->h);
            curl_easy_cleanup(c->h);
            c->h = NULL;
        }
        c->tries--;
        c->next = L->head;
        L->head = c;
        if (!L->tail)
            L->tail = c;
    }
    L->nactive = 0;
    L->running = false;
}

/* Joins the thread that ended, when it ran in this process (a thread of
 * the process that forked is not here to join): once this returns, its
 * exit, thread-local destructors included, is over.  L->lock held, or
 * no other thread uses L; the ended thread takes L->lock no more. */
static void os_join(struct os_loop *L)
{
    if (L->joinable && L->pid == getpid())
        pthread_join(L->thread, NULL);
    L->joinable = false;
}

/* Readies c for its first try: the bytes a PUT sends and their hash
 * (when the protocol signs it), its URI, nothing left of an earlier
 * call, its deadline.  @return 0 or a TDB_E_* code. */
static int os_call_prepare(struct objstore *s, struct os_call *c)
{
    struct os_loop *L = &s->loop;
    if (c->body && !strcmp(c->method, "PUT")) {
        c->up_fd = -1;          /* a PUT of bytes in memory */
        c->up_off = 0;
        c->up_len = c->body_len;
    }
    if (!s->proto->hash_payload) {
        c->hash[0] = 0;
    } else if (c->up_fd >= 0) {
        int r = os_sha256_fd(c->up_fd, c->up_off, c->up_len, c->hash);
        if (r)
            return r;
    } else {
        tdb_s3_sha256_hex(c->body ? c->body : (const uint8_t *)"",
                          c->body ? c->body_len : 0, c->hash);
    }
    char *uri = os_uri(s, c->key);
    if (!uri)
        return TDB_E_NOMEM;
    c->uri = uri;
    c->url = NULL;
    c->redirected = false;
    c->skip0 = c->skip;
    c->fd0 = c->fd_pos;
    c->tries = 0;
    c->renewed = false;
    c->h = NULL;
    c->hl = NULL;
    c->etag = NULL;
    c->next = NULL;
    bool read = !strcmp(c->method, "GET") || !strcmp(c->method, "HEAD");
    uint64_t t = c->timeout_ms ? c->timeout_ms : read ? L->timeout_ms : 0;
    c->deadline = t ? tdb_os_clock_ms() + t : 0;
    return 0;
}

/* Queues c, starting the I/O thread when it does not run (else waking
 * it).  @return 0, or TDB_E_NOMEM (no thread: c is off the queue). */
static int os_enqueue(struct objstore *s, struct os_call *c)
{
    struct os_loop *L = &s->loop;
    pthread_mutex_lock(&L->lock);
    if (L->running && L->pid != getpid())
        os_after_fork(L);
    if (L->tail)
        L->tail->next = c;
    else
        L->head = c;
    L->tail = c;
    L->calls++;
    int r = 0;
    if (!L->running) {
        os_join(L);
        if (pthread_create(&L->thread, NULL, os_loop_main, s) == 0) {
            L->running = true;
            L->joinable = true;
            L->pid = getpid();
        } else {
            L->tail = os_unlink(&L->head, c);
            r = TDB_E_NOMEM;
        }
    } else {
        curl_multi_wakeup(L->multi);
    }
    pthread_mutex_unlock(&L->lock);
    return r;
}

int tdb_os_submit(struct objstore *s, struct os_call *c)
{
    int r = os_call_prepare(s, c);
    if (!r && (r = os_enqueue(s, c))) {
        free(c->uri);
        free(c->url);
        c->uri = c->url = NULL;
    }
    return r;
}

void tdb_os_call_clear(struct os_call *c)
{
    tdb_buf_free(&c->mem);
    free(c->etag);
    c->etag = NULL;
}

/* A blocking call's rendezvous with the I/O thread. */
struct os_wait {
    pthread_mutex_t m;
    pthread_cond_t cv;
    bool done;
};

static void os_wake(struct os_call *c)
{
    struct os_wait *w = c->arg;
    pthread_mutex_lock(&w->m);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->m);
}

int tdb_os_perform(struct objstore *s, struct os_call *c)
{
    struct os_wait w = {.done = false};
    pthread_mutex_init(&w.m, NULL);
    pthread_cond_init(&w.cv, NULL);
    c->done = os_wake;
    c->arg = &w;
    tdb_s3_creds_wait(s->creds);    /* keys about to expire: renewed */
    int r = tdb_os_submit(s, c);
    if (!r) {
        pthread_mutex_lock(&w.m);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.m);
        pthread_mutex_unlock(&w.m);
        r = c->r;
    }
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.m);
    return r;
}

int tdb_os_loop_init(struct os_loop *L, unsigned max_active,
                     uint64_t timeout_ms)
{
    memset(L, 0, sizeof *L);
    pthread_mutex_init(&L->lock, NULL);
    pthread_cond_init(&L->idle_cv, NULL);
    L->max_active = max_active ? max_active : 1;
    L->timeout_ms = timeout_ms;
    L->max_tries = OS_RETRIES + 1;
    /* a stall is given a third of the deadline, 1 to 20 s, then retried */
    L->low_speed_s = (long)(timeout_ms / 3000);
    if (L->low_speed_s < 1)
        L->low_speed_s = 1;
    if (L->low_speed_s > 20)
        L->low_speed_s = 20;
    if (!(L->multi = curl_multi_init()) || !(L->share = curl_share_init()))
        return TDB_E_NOMEM;
    curl_share_setopt(L->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(L->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_multi_setopt(L->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      (long)L->max_active);
    curl_multi_setopt(L->multi, CURLMOPT_MAXCONNECTS, (long)L->max_active);
    return 0;
}

void tdb_os_loop_free(struct os_loop *L)
{
    if (!L->multi && !L->share)
        return;
    pthread_mutex_lock(&L->lock);
    if (L->running && L->pid != getpid())
        os_after_fork(L);
    L->stop = true;
    if (L->running)
        curl_multi_wakeup(L->multi);
    while (L->running)
        pthread_cond_wait(&L->idle_cv, &L->lock);
    os_abandon(L);      /* what a fork left queued with no thread */
    pthread_mutex_unlock(&L->lock);
    os_join(L);
    for (size_t i = 0; i < L->nidle; i++)
        curl_easy_cleanup(L->idle[i]);
    L->nidle = 0;
    if (L->multi)
        curl_multi_cleanup(L->multi);
    if (L->share)
        curl_share_cleanup(L->share);
    L->multi = NULL;
    L->share = NULL;
    pthread_cond_destroy(&L->idle_cv);
    pthread_mutex_destroy(&L->lock);
}
