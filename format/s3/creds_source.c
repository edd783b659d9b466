/* creds_source.c: fresh S3 keys from one source, as the AWS SDKs obtain
 * them: credential_process, STS AssumeRole and
 * AssumeRoleWithWebIdentity, the container credentials endpoint, EC2
 * instance metadata IMDSv2. */
#include "core/core.h"
#include "s3/creds_internal.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define S3C_BODY_MAX (1u << 20)     /* an endpoint's answer at most */
#define S3C_STS_CONNECT_MS 5000
#define S3C_STS_MS 15000            /* an STS request at most */
#define S3C_PROCESS_MS 60000        /* a credential_process at most */

/* ---------------------------------------------------------------- HTTP */

/* One request of an endpoint, on the calling thread (libcurl's easy
 * interface): never the S3 backend's I/O thread. */
struct s3c_http {
    const char *method;     /* "GET", "PUT", "POST" */
    const char *url;
    struct curl_slist *hl;  /* the caller's; freed by it */
    const char *body;       /* PUT, POST */
    size_t body_len;
    long connect_ms, total_ms;
    bool no_proxy;          /* a link-local or loopback endpoint */
    long status;            /* what came */
    struct tdb_s3_buf out;
};

static size_t s3c_http_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct s3c_http *h = arg;
    size_t n = size * nmemb;
    return tdb_s3_buf_add(&h->out, p, n) ? 0 : n;
}

/* @return 0 when an answer came (h->status, h->out), else TDB_E_IO with
 * the reason in why (curl's words). */
static int s3c_http_do(struct s3c_http *h, char *why)
{
    char msg[CURL_ERROR_SIZE] = "";
    CURL *c = curl_easy_init();
    h->out.max = S3C_BODY_MAX;
    h->status = 0;
    if (!c) {
        snprintf(why, S3C_WHY, "out of memory");
        return TDB_E_NOMEM;
    }
    curl_easy_setopt(c, CURLOPT_URL, h->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->total_ms);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, msg);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, s3c_http_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->hl);
    if (h->no_proxy)
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    if (strcmp(h->method, "GET")) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, h->method);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, h->body ? h->body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(h->body ? h->body_len : 0));
    }
    CURLcode cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->status);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK) {
        bool over = h->out.over;
        snprintf(why, S3C_WHY, "%s", over ? "the answer is larger than 1 MiB"
                                          : msg[0] ? msg
                                                   : curl_easy_strerror(cc));
        tdb_s3_buf_free(&h->out);
        return over ? TDB_E_CORRUPT : TDB_E_IO;
    }
    return 0;
}

/* Frees a header list whose lines may hold secrets. */
static void s3c_headers_free(struct curl_slist *hl)
{
    for (struct curl_slist *l = hl; l; l = l->next)
        explicit_bzero(l->data, strlen(l->data));
    curl_slist_free_all(hl);
}

/* The host[:port] of an http(s) URL (for the Host header), whether it is
 * http://, and whether its host is the machine itself or a container
 * agent's link-local address (where AWS's SDKs allow plain http).
 * @return a new string, or NULL (not such a URL, or ENOMEM). */
static char *s3c_url_host(const char *url, bool *plain, bool *local)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        (!strcmp(scheme, "http") || !strcmp(scheme, "https"))) {
        if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
            port = NULL;
        if (asprintf(&out, "%s%s%s", host, port ? ":" : "",
                     port ? port : "") < 0)
            out = NULL;
        *plain = !strcmp(scheme, "http");
        *local = !strncmp(host, "127.", 4) || !strcmp(host, "[::1]") ||
                 !strcasecmp(host, "localhost") ||
                 !strcmp(host, "169.254.170.2") ||
                 !strcmp(host, "169.254.170.23") ||
                 !strcasecmp(host, "[fd00:ec2::23]");
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return out;
}

/* ------------------------------------------------------------- sources */

void tdb_s3_source_free(struct tdb_s3_source *src)
{
    while (src) {
        struct tdb_s3_source *from = src->from;
        free(src->what);
        tdb_s3_zfree(src->id);
        tdb_s3_zfree(src->secret);
        tdb_s3_zfree(src->token);
        free(src->command);
        free(src->role_arn);
        free(src->session_name);
        free(src->external_id);
        free(src->token_file);
        free(src->sts_url);
        free(src->sts_region);
        free(src->url);
        tdb_s3_zfree(src->auth);
        free(src->auth_file);
        free(src);
        src = from;
    }
}

/* A file's text without the blanks around it (a token).  @return it, or
 * NULL with why. */
static char *s3c_token_file(const char *path, char *why)
{
    size_t len = 0;
    const char *fwhy = NULL;
    char *t = tdb_s3_slurp(path, &len, &fwhy);
    if (!t) {
        snprintf(why, S3C_WHY, "cannot read %.300s: %s", path, fwhy);
        return NULL;
    }
    size_t a = 0;
    while (a < len && isspace((unsigned char)t[a]))
        a++;
    while (len > a && isspace((unsigned char)t[len - 1]))
        len--;
    memmove(t, t + a, len - a);
    t[len - a] = 0;
    if (!t[0] || memchr(t, 0, len - a)) {
        snprintf(why, S3C_WHY, "%.300s holds no token", path);
        tdb_s3_zfree(t);
        return NULL;
    }
    return t;
}

/* Milliseconds spent since t0 (CLOCK_MONOTONIC). */
static long s3c_spent_ms(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000L +
           (t1.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* Starts `command` by /bin/sh -c, its standard output a pipe whose read
 * end is *rd.  @return 0, or TDB_E_IO with why. */
static int s3c_spawn(char *command, pid_t *pid, int *rd, char *why)
{
    int fds[2];
    posix_spawn_file_actions_t fa;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(why, S3C_WHY, "pipe: %s", strerror(errno));
        return TDB_E_IO;
    }
    char *argv[] = {"/bin/sh", "-c", command, NULL};
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    int e = posix_spawn(pid, "/bin/sh", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (e) {
        close(fds[0]);
        snprintf(why, S3C_WHY, "cannot run /bin/sh: %s", strerror(e));
        return TDB_E_IO;
    }
    *rd = fds[0];
    return 0;
}

/* The output of process pid on fd into b, until it closes it or the time
 * since t0 is up (then pid is killed).  @return 0, TDB_E_IO (too long),
 * TDB_E_CORRUPT (too much), with why. */
static int s3c_process_output(pid_t pid, int fd, const struct timespec *t0,
                              struct tdb_s3_buf *b, char *why)
{
    for (;;) {
        long spent = s3c_spent_ms(t0);
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int n = spent < S3C_PROCESS_MS
                    ? poll(&pf, 1, (int)(S3C_PROCESS_MS - spent)) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            kill(pid, SIGKILL);
            snprintf(why, S3C_WHY, "it did not finish within %d s",
                     S3C_PROCESS_MS / 1000);
            return TDB_E_IO;
        }
        char chunk[4096];
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0;
        int a = tdb_s3_buf_add(b, chunk, (size_t)got);
        explicit_bzero(chunk, sizeof chunk);
        if (a) {
            kill(pid, SIGKILL);
            snprintf(why, S3C_WHY, "its output is larger than 1 MiB");
            return TDB_E_CORRUPT;
        }
    }
}

/* Waits for the end of process pid (its status in *st) within the same
 * time since t0, as it may close its output and go on; r: it was killed
 * already, and the wait has no limit.  @return r, or TDB_E_IO with why
 * when it had to be killed now. */
static int s3c_reap(pid_t pid, const struct timespec *t0, int r, int *st,
                    char *why)
{
    for (;;) {
        pid_t w = waitpid(pid, st, r ? 0 : WNOHANG);
        if (w < 0 && errno == EINTR)
            continue;
        if (w != 0)
            return r;
        struct timespec nap = {0, 10 * 1000000};
        if (s3c_spent_ms(t0) >= S3C_PROCESS_MS) {
            kill(pid, SIGKILL);
            snprintf(why, S3C_WHY, "it did not finish within %d s",
                     S3C_PROCESS_MS / 1000);
            r = TDB_E_IO;
            continue;
        }
        nanosleep(&nap, NULL);
    }
}

/* What a finished process's status st says: 0 (it exited with 0),
 * TDB_E_ACCES (another status), TDB_E_IO (a signal), with why. */
static int s3c_exit_status(int st, char *why)
{
    if (WIFEXITED(st) && WEXITSTATUS(st)) {
        snprintf(why, S3C_WHY, "it exited with status %d", WEXITSTATUS(st));
        return TDB_E_ACCES;
    }
    if (WIFSIGNALED(st)) {
        snprintf(why, S3C_WHY, "it was killed by signal %d", WTERMSIG(st));
        return TDB_E_IO;
    }
    return 0;
}

/* credential_process: the command run by /bin/sh -c, its standard output
 * the JSON of the AWS CLI's credential_process contract. */
static int s3c_process(const struct tdb_s3_source *src,
                       struct tdb_s3_keys **out, char *why)
{
    struct tdb_s3_buf b = {.max = S3C_BODY_MAX};
    struct timespec t0;
    pid_t pid;
    int fd, st = 0;
    int r = s3c_spawn(src->command, &pid, &fd, why);
    if (r)
        return r;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = s3c_process_output(pid, fd, &t0, &b, why);
    close(fd);
    r = s3c_reap(pid, &t0, r, &st, why);
    if (!r)
        r = s3c_exit_status(st, why);
    if (!r)
        r = tdb_s3_creds_json(b.p ? b.p : "", b.len, true, out, why);
    tdb_s3_buf_free(&b);
    return r;
}

/* The headers of a POST of form `body` to STS at host: the form's type,
 * Host, X-Amz-Date, Accept and, when the keys `by` are given, their
 * session token and the SigV4 Authorization they sign with.  @return 0,
 * TDB_E_NOMEM, or the signer's code. */
static int s3c_sts_headers(struct curl_slist **hl,
                           const struct tdb_s3_source *src, const char *host,
                           const char *body, const struct tdb_s3_keys *by)
{
    static const char ctype[] =
        "application/x-www-form-urlencoded; charset=utf-8";
    char date[32], hash[65], auth[1024];
    time_t now = (time_t)(tdb_now_ms() / 1000);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
    tdb_s3_sha256_hex(body, strlen(body), hash);
    struct tdb_store_pair hdr[4] = {
        {"Content-Type", ctype}, {"Host", host}, {"X-Amz-Date", date}};
    size_t nh = 3;
    if (by && by->token)
        hdr[nh++] = (struct tdb_store_pair){"X-Amz-Security-Token", by->token};
    for (size_t i = 0; i < nh; i++)
        if (tdb_store_header_add(hl, hdr[i].name, hdr[i].value))
            return TDB_E_NOMEM;
    if (tdb_store_header_add(hl, "Accept", "text/xml") ||
        !(*hl = curl_slist_append(*hl, "Expect:")))
        return TDB_E_NOMEM;
    if (!by)
        return 0;
    struct tdb_s3_request rq = {
        .method = "POST", .path = "/", .query = "", .hdr = hdr, .nhdr = nh,
        .payload_hash = hash, .amz_date = date};
    struct tdb_s3_signer sg = {.region = src->sts_region, .key_id = by->id,
                               .secret = by->secret};
    int r = tdb_s3_sigv4_for(auth, sizeof auth, &rq, &sg, "sts");
    if (!r)
        r = tdb_store_header_add(hl, "Authorization", auth);
    explicit_bzero(auth, sizeof auth);
    return r;
}

/* POSTs form `body` to STS (signed by the keys `by` when given, their
 * session token sent), and reads the Credentials of its answer. */
static int s3c_sts_call(const struct tdb_s3_source *src, const char *body,
                        const struct tdb_s3_keys *by,
                        struct tdb_s3_keys **out, char *why)
{
    struct s3c_http h = {.method = "POST", .url = src->sts_url,
                         .body = body, .body_len = strlen(body),
                         .connect_ms = S3C_STS_CONNECT_MS,
                         .total_ms = S3C_STS_MS};
    bool plain, local;
    char *host = s3c_url_host(src->sts_url, &plain, &local);
    if (!host) {
        snprintf(why, S3C_WHY, "%.300s is not an http:// or https:// URL",
                 src->sts_url);
        return TDB_E_INVAL;
    }
    int r = s3c_sts_headers(&h.hl, src, host, body, by);
    if (r || (r = s3c_http_do(&h, why)))
        goto out;
    r = tdb_s3_creds_sts(h.out.p ? h.out.p : "", h.out.len, out, why);
    if (h.status / 100 != 2) {
        /* a refusal: its status, and STS's code and message if it gave
         * them */
        char inner[S3C_WHY];
        snprintf(inner, sizeof inner, "%s", r == TDB_E_ACCES ? why : "");
        snprintf(why, S3C_WHY, "HTTP %ld%s%.400s", h.status,
                 inner[0] ? " " : "", inner);
        tdb_s3_keys_free(*out);
        *out = NULL;
        r = TDB_E_ACCES;
    }
out:
    if (r == TDB_E_NOMEM)
        snprintf(why, S3C_WHY, "out of memory");
    s3c_headers_free(h.hl);
    tdb_s3_buf_free(&h.out);
    free(host);
    return r;
}

/* The session name of a role's requests: the profile's, else
 * tiledbfs-MILLISECONDS. */
static void s3c_session(const struct tdb_s3_source *src, char *out,
                        size_t cap)
{
    if (src->session_name && src->session_name[0])
        snprintf(out, cap, "%s", src->session_name);
    else
        snprintf(out, cap, "tiledbfs-%llu",
                 (unsigned long long)tdb_now_ms());
}

/* STS AssumeRole (signed by the keys of src->from) or, with a token
 * file, AssumeRoleWithWebIdentity (unsigned). */
static int s3c_role(const struct tdb_s3_source *src,
                    struct tdb_s3_keys **out, char *why)
{
    struct tdb_store_pair p[7];
    size_t n = 0;
    char session[128], dur[16];
    char *token = NULL, *body = NULL;
    struct tdb_s3_keys *by = NULL;
    bool web = src->kind == TDB_S3_SRC_WEB;
    int r;

    s3c_session(src, session, sizeof session);
    if (web && !(token = s3c_token_file(src->token_file, why)))
        return TDB_E_IO;
    if (!web && (r = tdb_s3_fetch(src->from, &by, why)))
        return r;
    p[n++] = (struct tdb_store_pair){
        "Action", web ? "AssumeRoleWithWebIdentity" : "AssumeRole"};
    p[n++] = (struct tdb_store_pair){"Version", "2011-06-15"};
    p[n++] = (struct tdb_store_pair){"RoleArn", src->role_arn};
    p[n++] = (struct tdb_store_pair){"RoleSessionName", session};
    if (web)
        p[n++] = (struct tdb_store_pair){"WebIdentityToken", token};
    if (!web && src->external_id)
        p[n++] = (struct tdb_store_pair){"ExternalId", src->external_id};
    if (src->duration_s) {
        snprintf(dur, sizeof dur, "%u", src->duration_s);
        p[n++] = (struct tdb_store_pair){"DurationSeconds", dur};
    }
    /* the Query API's form: encoded as a canonical query is */
    if (!(body = tdb_store_query(p, n))) {
        snprintf(why, S3C_WHY, "out of memory");
        r = TDB_E_NOMEM;
    } else {
        r = s3c_sts_call(src, body, by, out, why);
    }
    tdb_s3_zfree(body);
    tdb_s3_zfree(token);
    tdb_s3_keys_free(by);
    return r;
}

/* The container credentials endpoint: GET with the Authorization token. */
static int s3c_container(const struct tdb_s3_source *src,
                         struct tdb_s3_keys **out, char *why)
{
    struct s3c_http h = {.method = "GET", .url = src->url,
                         .connect_ms = src->timeout_ms,
                         .total_ms = 5 * (long)src->timeout_ms,
                         .no_proxy = true};
    char *auth = NULL;
    int r = TDB_E_NOMEM;
    bool plain = false, local = false;
    char *host = s3c_url_host(src->url, &plain, &local);
    if (!host || (plain && !local)) {
        snprintf(why, S3C_WHY, "%.300s: %s", src->url,
                 host ? "plain http:// goes only to this machine or to a "
                        "container agent (169.254.170.2, 169.254.170.23); "
                        "else https://"
                      : "not an http:// or https:// URL");
        free(host);
        return TDB_E_INVAL;
    }
    free(host);
    if (src->auth_file && !(auth = s3c_token_file(src->auth_file, why)))
        return TDB_E_IO;
    const char *a = auth ? auth : src->auth;
    if (a && strpbrk(a, "\r\n")) {
        snprintf(why, S3C_WHY, "the authorization token holds a line "
                 "break");
        r = TDB_E_INVAL;
        goto out;
    }
    if ((a && tdb_store_header_add(&h.hl, "Authorization", a)) ||
        tdb_store_header_add(&h.hl, "Accept", "application/json"))
        goto out;
    if ((r = s3c_http_do(&h, why)))
        goto out;
    if (h.status / 100 != 2) {
        snprintf(why, S3C_WHY, "HTTP %ld", h.status);
        r = TDB_E_ACCES;
        goto out;
    }
    r = tdb_s3_creds_json(h.out.p ? h.out.p : "", h.out.len, false, out,
                          why);
out:
    if (r == TDB_E_NOMEM)
        snprintf(why, S3C_WHY, "out of memory");
    s3c_headers_free(h.hl);
    tdb_s3_buf_free(&h.out);
    tdb_s3_zfree(auth);
    return r;
}

/* One request to the instance metadata service: `path` of its endpoint,
 * with its session token (NULL: the PUT that asks for one). */
static int s3c_imds_req(const struct tdb_s3_source *src, const char *path,
                        const char *token, struct tdb_s3_buf *out, char *why)
{
    char *url = NULL;
    struct s3c_http h = {.method = token ? "GET" : "PUT",
                         .connect_ms = src->timeout_ms,
                         .total_ms = 2 * (long)src->timeout_ms,
                         .no_proxy = true};
    int r = TDB_E_NOMEM;
    if (asprintf(&url, "%s%s", src->url, path) < 0)
        return TDB_E_NOMEM;
    h.url = url;
    if (token) {
        if (tdb_store_header_add(&h.hl, "X-aws-ec2-metadata-token", token))
            goto out;
    } else if (tdb_store_header_add(&h.hl, "X-aws-ec2-metadata-token-ttl-seconds",
                          "21600") ||
               !(h.hl = curl_slist_append(h.hl, "Content-Type:"))) {
        goto out;
    }
    if ((r = s3c_http_do(&h, why)))
        goto out;
    if (h.status != 200) {
        snprintf(why, S3C_WHY, "%s %s: HTTP %ld", h.method, path, h.status);
        r = TDB_E_ACCES;
        goto out;
    }
    *out = h.out;
    h.out.p = NULL;
out:
    if (r == TDB_E_NOMEM)
        snprintf(why, S3C_WHY, "out of memory");
    s3c_headers_free(h.hl);
    tdb_s3_buf_free(&h.out);
    free(url);
    return r;
}

#define S3C_IMDS_CREDS "/latest/meta-data/iam/security-credentials/"

/* EC2 instance metadata, IMDSv2: a session token first (PUT), then the
 * role's name and its credentials. */
static int s3c_imds(const struct tdb_s3_source *src,
                    struct tdb_s3_keys **out, char *why)
{
    struct tdb_s3_buf tok = {0}, role = {0}, creds = {0};
    char *path = NULL;
    int r = s3c_imds_req(src, "/latest/api/token", NULL, &tok, why);
    if (!r && (!tok.p || !tok.len || !tdb_s3_header_safe(tok.p))) {
        snprintf(why, S3C_WHY, "PUT /latest/api/token: no token came");
        r = TDB_E_CORRUPT;
    }
    if (!r)
        r = s3c_imds_req(src, S3C_IMDS_CREDS, tok.p, &role, why);
    if (!r) {
        /* the first line names the instance profile's role */
        size_t l = role.p ? strcspn(role.p, "\r\n") : 0;
        if (!l) {
            snprintf(why, S3C_WHY, "the instance has no role");
            r = TDB_E_NOENT;
        } else {
            role.p[l] = 0;
            char *enc = tdb_store_encode(role.p, false);
            if (!enc || asprintf(&path, "%s%s", S3C_IMDS_CREDS, enc) < 0) {
                path = NULL;
                r = TDB_E_NOMEM;
                snprintf(why, S3C_WHY, "out of memory");
            }
            free(enc);
        }
    }
    if (!r)
        r = s3c_imds_req(src, path, tok.p, &creds, why);
    if (!r)
        r = tdb_s3_creds_json(creds.p ? creds.p : "", creds.len, false, out,
                              why);
    free(path);
    tdb_s3_buf_free(&tok);
    tdb_s3_buf_free(&role);
    tdb_s3_buf_free(&creds);
    return r;
}

int tdb_s3_fetch(const struct tdb_s3_source *src, struct tdb_s3_keys **out,
                 char *why)
{
    *out = NULL;
    switch (src->kind) {
    case TDB_S3_SRC_KEYS:
        return tdb_s3_keys_make(out, src->id, src->secret, src->token, 0, why);
    case TDB_S3_SRC_PROCESS:
        return s3c_process(src, out, why);
    case TDB_S3_SRC_ROLE:
    case TDB_S3_SRC_WEB:
        return s3c_role(src, out, why);
    case TDB_S3_SRC_CONTAINER:
        return s3c_container(src, out, why);
    case TDB_S3_SRC_IMDS:
        return s3c_imds(src, out, why);
    }
    snprintf(why, S3C_WHY, "no such source");
    return TDB_E_INVAL;
}
