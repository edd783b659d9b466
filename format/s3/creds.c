/* creds.c: the S3 backend's credentials as the AWS SDKs obtain them
 * (credential_process, STS AssumeRole and AssumeRoleWithWebIdentity, the
 * container credentials endpoint, EC2 instance metadata IMDSv2), held as
 * a locked set that a thread of its own renews before it expires. */
#include "core/core.h"
#include "s3/s3.h"

#include <ctype.h>
#include <curl/curl.h>
#include <expat.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define S3C_BODY_MAX (1u << 20)     /* an endpoint's answer at most */
#define S3C_STS_CONNECT_MS 5000
#define S3C_STS_MS 15000            /* an STS request at most */
#define S3C_PROCESS_MS 60000        /* a credential_process at most */
#define S3C_WAIT_MS 10000           /* a caller waits this long at most */
#define S3C_WINDOW_MS (5 * 60000)   /* renew this long before expiry ... */
#define S3C_MUST_MS 60000           /* ... and wait for it in the last */
#define S3C_RETRY_MAX_MS 60000      /* after failures, tries this apart */
#define S3C_WHY 512                 /* a reason's room */

/* ------------------------------------------------------ secret buffers */

/* A growable buffer whose old copies are zeroed when it grows and whose
 * bytes are zeroed when freed: it holds answers with secret keys. */
struct s3c_buf {
    char *p;
    size_t len, cap, max;
    bool over;          /* more than max bytes came */
};

static int s3c_buf_add(struct s3c_buf *b, const void *d, size_t n)
{
    if (b->len + n > b->max) {
        b->over = true;
        return TDB_E_NOMEM;
    }
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *np = malloc(nc);
        if (!np)
            return TDB_E_NOMEM;
        if (b->p) {
            memcpy(np, b->p, b->len);
            explicit_bzero(b->p, b->cap);
            free(b->p);
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

static void s3c_buf_free(struct s3c_buf *b)
{
    if (b->p) {
        explicit_bzero(b->p, b->cap);
        free(b->p);
    }
    b->p = NULL;
    b->len = b->cap = 0;
}

static void s3c_zfree(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

char *tdb_s3_slurp(const char *path, size_t *len, const char **why)
{
    struct s3c_buf b = {.max = 1u << 20};
    char chunk[4096];
    struct stat st;
    ssize_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    if (fd < 0 || fstat(fd, &st) < 0) {
        *why = strerror(errno);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = S_ISDIR(st.st_mode) ? "it is a folder, not a file"
                                   : "it is not a regular file";
        goto fail;
    }
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *why = strerror(errno);
            goto fail;
        }
        if (s3c_buf_add(&b, chunk, (size_t)n)) {
            *why = b.over ? "it is larger than 1 MiB" : strerror(ENOMEM);
            goto fail;
        }
    }
    explicit_bzero(chunk, sizeof chunk);
    if (!b.p && s3c_buf_add(&b, "", 0)) {
        *why = strerror(ENOMEM);
        goto fail;
    }
    close(fd);
    *len = b.len;
    return b.p;
fail:
    explicit_bzero(chunk, sizeof chunk);
    if (fd >= 0)
        close(fd);
    s3c_buf_free(&b);
    return NULL;
}

/* ----------------------------------------------------------- key sets */

void tdb_s3_keys_free(struct tdb_s3_keys *k)
{
    if (!k)
        return;
    s3c_zfree(k->id);
    s3c_zfree(k->secret);
    s3c_zfree(k->token);
    free(k);
}

/* Can s be sent in a header (printable ASCII, no space)? */
static bool s3c_header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

/* A key set of copies of id, secret and token (NULL or "": none) that
 * expires at `expires` (0: never).  @return 0, TDB_E_CORRUPT (a key
 * missing or not fit for a header, named in why), TDB_E_NOMEM. */
static int s3c_keys_make(struct tdb_s3_keys **out, const char *id,
                         const char *secret, const char *token,
                         int64_t expires, char *why)
{
    *out = NULL;
    if (!id || !id[0] || !secret || !secret[0]) {
        snprintf(why, S3C_WHY, "the answer has no %s",
                 !id || !id[0] ? "AccessKeyId" : "SecretAccessKey");
        return TDB_E_CORRUPT;
    }
    /* the id and the token go into headers; the secret only into HMACs */
    if (!s3c_header_safe(id) || (token && !s3c_header_safe(token))) {
        snprintf(why, S3C_WHY, "the answer's keys hold bytes a request "
                 "cannot carry");
        return TDB_E_CORRUPT;
    }
    struct tdb_s3_keys *k = calloc(1, sizeof *k);
    if (!k || !(k->id = strdup(id)) || !(k->secret = strdup(secret)) ||
        (token && token[0] && !(k->token = strdup(token)))) {
        tdb_s3_keys_free(k);
        snprintf(why, S3C_WHY, "out of memory");
        return TDB_E_NOMEM;
    }
    k->expires = expires;
    k->got = (int64_t)tdb_now_ms();
    *out = k;
    return 0;
}

/* ---------------------------------------------------------------- time */

int tdb_s3_time_parse(const char *s, int64_t *ms)
{
    int Y, M, D, h, m, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec,
               &n) != 6 || n != 19)
        return TDB_E_CORRUPT;
    const char *p = s + n;
    int frac_ms = 0, digits = 0;
    if (*p == '.') {
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
        if (!digits)
            return TDB_E_CORRUPT;
        for (; digits < 3; digits++)
            frac_ms *= 10;
    }
    long off = 0;   /* seconds east of UTC */
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, k = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2 || k != 5 ||
            oh > 23 || om > 59)
            return TDB_E_CORRUPT;
        off = (*p == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
        p += 1 + k;
    } else {
        return TDB_E_CORRUPT;
    }
    if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 ||
        sec > 60 || Y < 1970)
        return TDB_E_CORRUPT;
    struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D,
                    .tm_hour = h, .tm_min = m, .tm_sec = sec};
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return TDB_E_CORRUPT;
    *ms = ((int64_t)t - off) * 1000 + frac_ms;
    return 0;
}

/* ---------------------------------------------------------------- JSON */

/* The string member `name` of o, or NULL. */
static const char *s3c_jstr(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int tdb_s3_creds_json(const char *text, size_t len, bool process,
                      struct tdb_s3_keys **out, char *why)
{
    json_error_t je;
    *out = NULL;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    int r = TDB_E_CORRUPT;
    if (!json_is_object(o)) {
        snprintf(why, S3C_WHY, "the answer is not a JSON object");
        goto out;
    }
    if (process) {
        json_t *v = json_object_get(o, "Version");
        if (!json_is_integer(v) || json_integer_value(v) != 1) {
            snprintf(why, S3C_WHY, "its output has no \"Version\": 1");
            goto out;
        }
    } else {
        /* IMDS says Code "Success"; an ECS or EKS agent's refusal is
         * {"code": ..., "message": ...} */
        const char *code = s3c_jstr(o, "Code");
        if (code && strcmp(code, "Success")) {
            snprintf(why, S3C_WHY, "the answer's Code is %.64s", code);
            goto out;
        }
        const char *ecode = s3c_jstr(o, "code");
        if (ecode && !json_object_get(o, "AccessKeyId")) {
            const char *msg = s3c_jstr(o, "message");
            snprintf(why, S3C_WHY, "%.64s%s%.200s", ecode, msg ? ": " : "",
                     msg ? msg : "");
            goto out;
        }
    }
    const char *exp = s3c_jstr(o, "Expiration");
    int64_t expires = 0;
    if (exp && tdb_s3_time_parse(exp, &expires)) {
        snprintf(why, S3C_WHY, "its Expiration is not an ISO 8601 time");
        goto out;
    }
    if (!process && !exp) {
        snprintf(why, S3C_WHY, "the answer has no Expiration");
        goto out;
    }
    r = s3c_keys_make(out, s3c_jstr(o, "AccessKeyId"),
                      s3c_jstr(o, "SecretAccessKey"),
                      s3c_jstr(o, process ? "SessionToken" : "Token"),
                      expires, why);
out:
    json_decref(o);
    return r;
}

/* ----------------------------------------------------------------- XML */

/* What an STS answer holds: Credentials, or an Error. */
struct s3c_sts {
    XML_Parser xp;
    char *stack[8];
    int depth;
    struct s3c_buf text;
    char *id, *secret, *token, *exp;   /* .../Credentials/... */
    char *code, *message;              /* ErrorResponse/Error/... */
    int fail;
};

static void XMLCALL s3c_sts_start(void *arg, const XML_Char *name,
                                  const XML_Char **attrs)
{
    struct s3c_sts *x = arg;
    (void)attrs;
    if (x->depth < 8 && !(x->stack[x->depth] = strdup(name)))
        x->fail = TDB_E_NOMEM;
    x->depth++;
    x->text.len = 0;
    if (x->text.p)
        x->text.p[0] = 0;
}

static void XMLCALL s3c_sts_text(void *arg, const XML_Char *s, int len)
{
    struct s3c_sts *x = arg;
    if (len > 0 && s3c_buf_add(&x->text, s, (size_t)len))
        x->fail = TDB_E_NOMEM;
}

static void XMLCALL s3c_sts_end(void *arg, const XML_Char *name)
{
    struct s3c_sts *x = arg;
    const char *parent = x->depth >= 2 && x->depth - 2 < 8
                             ? x->stack[x->depth - 2] : "";
    char **dst = NULL;
    if (parent && !strcmp(parent, "Credentials")) {
        if (!strcmp(name, "AccessKeyId"))
            dst = &x->id;
        else if (!strcmp(name, "SecretAccessKey"))
            dst = &x->secret;
        else if (!strcmp(name, "SessionToken"))
            dst = &x->token;
        else if (!strcmp(name, "Expiration"))
            dst = &x->exp;
    } else if (parent && !strcmp(parent, "Error")) {
        if (!strcmp(name, "Code"))
            dst = &x->code;
        else if (!strcmp(name, "Message"))
            dst = &x->message;
    }
    if (dst) {
        s3c_zfree(*dst);
        if (!(*dst = strndup(x->text.p ? x->text.p : "", x->text.len)))
            x->fail = TDB_E_NOMEM;
    }
    x->depth--;
    if (x->depth < 8) {
        free(x->stack[x->depth]);
        x->stack[x->depth] = NULL;
    }
    x->text.len = 0;
}

static void s3c_sts_free(struct s3c_sts *x)
{
    for (int i = 0; i < 8; i++)
        free(x->stack[i]);
    s3c_buf_free(&x->text);
    s3c_zfree(x->id);
    s3c_zfree(x->secret);
    s3c_zfree(x->token);
    free(x->exp);
    free(x->code);
    free(x->message);
}

/* Parses an STS answer into x.  @return 0, TDB_E_CORRUPT, TDB_E_NOMEM. */
static int s3c_sts_parse(struct s3c_sts *x, const char *body, size_t len)
{
    memset(x, 0, sizeof *x);
    x->text.max = 64u << 10;
    if (!(x->xp = XML_ParserCreate("UTF-8")))
        return TDB_E_NOMEM;
    XML_SetUserData(x->xp, x);
    XML_SetElementHandler(x->xp, s3c_sts_start, s3c_sts_end);
    XML_SetCharacterDataHandler(x->xp, s3c_sts_text);
    int ok = len <= INT32_MAX &&
             XML_Parse(x->xp, body, (int)len, 1) == XML_STATUS_OK;
    XML_ParserFree(x->xp);
    x->xp = NULL;
    return x->fail ? x->fail : ok ? 0 : TDB_E_CORRUPT;
}

int tdb_s3_creds_sts(const char *body, size_t len, struct tdb_s3_keys **out,
                     char *why)
{
    struct s3c_sts x;
    *out = NULL;
    int r = s3c_sts_parse(&x, body, len);
    int64_t expires = 0;
    if (r) {
        snprintf(why, S3C_WHY, r == TDB_E_NOMEM ? "out of memory"
                                                : "the answer is not XML");
    } else if (x.code) {
        snprintf(why, S3C_WHY, "%.64s%s%.300s", x.code,
                 x.message ? ": " : "", x.message ? x.message : "");
        r = TDB_E_ACCES;
    } else if (!x.exp || tdb_s3_time_parse(x.exp, &expires)) {
        snprintf(why, S3C_WHY, "the answer has no Credentials/Expiration "
                 "in ISO 8601");
        r = TDB_E_CORRUPT;
    } else if (!x.token) {
        snprintf(why, S3C_WHY, "the answer has no SessionToken");
        r = TDB_E_CORRUPT;
    } else {
        r = s3c_keys_make(out, x.id, x.secret, x.token, expires, why);
    }
    s3c_sts_free(&x);
    return r;
}

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
    struct s3c_buf out;
};

static size_t s3c_http_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct s3c_http *h = arg;
    size_t n = size * nmemb;
    return s3c_buf_add(&h->out, p, n) ? 0 : n;
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
        s3c_buf_free(&h->out);
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
        s3c_zfree(src->id);
        s3c_zfree(src->secret);
        s3c_zfree(src->token);
        free(src->command);
        free(src->role_arn);
        free(src->session_name);
        free(src->external_id);
        free(src->token_file);
        free(src->sts_url);
        free(src->sts_region);
        free(src->url);
        s3c_zfree(src->auth);
        free(src->auth_file);
        free(src);
        src = from;
    }
}

static int s3c_fetch(const struct tdb_s3_source *src,
                     struct tdb_s3_keys **out, char *why);

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
        s3c_zfree(t);
        return NULL;
    }
    return t;
}

/* credential_process: the command run by /bin/sh -c, its standard output
 * the JSON of the AWS CLI's credential_process contract. */
static int s3c_process(const struct tdb_s3_source *src,
                       struct tdb_s3_keys **out, char *why)
{
    int fds[2];
    posix_spawn_file_actions_t fa;
    pid_t pid;
    struct s3c_buf b = {.max = S3C_BODY_MAX};
    int r = 0;

    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(why, S3C_WHY, "pipe: %s", strerror(errno));
        return TDB_E_IO;
    }
    char *argv[] = {"/bin/sh", "-c", src->command, NULL};
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    int e = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (e) {
        close(fds[0]);
        snprintf(why, S3C_WHY, "cannot run /bin/sh: %s", strerror(e));
        return TDB_E_IO;
    }
    /* its output, until it closes it or the time is up */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long spent = (t1.tv_sec - t0.tv_sec) * 1000L +
                     (t1.tv_nsec - t0.tv_nsec) / 1000000L;
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        int n = spent < S3C_PROCESS_MS
                    ? poll(&pf, 1, (int)(S3C_PROCESS_MS - spent)) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            kill(pid, SIGKILL);
            snprintf(why, S3C_WHY, "it did not finish within %d s",
                     S3C_PROCESS_MS / 1000);
            r = TDB_E_IO;
            break;
        }
        char chunk[4096];
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        int a = s3c_buf_add(&b, chunk, (size_t)got);
        explicit_bzero(chunk, sizeof chunk);
        if (a) {
            kill(pid, SIGKILL);
            snprintf(why, S3C_WHY, "its output is larger than 1 MiB");
            r = TDB_E_CORRUPT;
            break;
        }
    }
    close(fds[0]);
    /* its end, within the same time (it may close its output and go on) */
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, r ? 0 : WNOHANG);
        if (w < 0 && errno == EINTR)
            continue;
        if (w != 0)
            break;
        struct timespec t1, nap = {0, 10 * 1000000};
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((t1.tv_sec - t0.tv_sec) * 1000L +
                (t1.tv_nsec - t0.tv_nsec) / 1000000L >= S3C_PROCESS_MS) {
            kill(pid, SIGKILL);
            snprintf(why, S3C_WHY, "it did not finish within %d s",
                     S3C_PROCESS_MS / 1000);
            r = TDB_E_IO;
            continue;
        }
        nanosleep(&nap, NULL);
    }
    if (!r && WIFEXITED(st) && WEXITSTATUS(st)) {
        snprintf(why, S3C_WHY, "it exited with status %d", WEXITSTATUS(st));
        r = TDB_E_ACCES;
    } else if (!r && WIFSIGNALED(st)) {
        snprintf(why, S3C_WHY, "it was killed by signal %d", WTERMSIG(st));
        r = TDB_E_IO;
    }
    if (!r)
        r = tdb_s3_creds_json(b.p ? b.p : "", b.len, true, out, why);
    s3c_buf_free(&b);
    return r;
}

/* POSTs form `body` to STS (signed by the keys `by` when given, their
 * session token sent), and reads the Credentials of its answer. */
static int s3c_sts_call(const struct tdb_s3_source *src, const char *body,
                        const struct tdb_s3_keys *by,
                        struct tdb_s3_keys **out, char *why)
{
    static const char ctype[] =
        "application/x-www-form-urlencoded; charset=utf-8";
    struct s3c_http h = {.method = "POST", .url = src->sts_url,
                         .body = body, .body_len = strlen(body),
                         .connect_ms = S3C_STS_CONNECT_MS,
                         .total_ms = S3C_STS_MS};
    bool plain, local;
    char *host = s3c_url_host(src->sts_url, &plain, &local);
    char date[32], hash[65], auth[1024];
    int r = TDB_E_NOMEM;
    if (!host) {
        snprintf(why, S3C_WHY, "%.300s is not an http:// or https:// URL",
                 src->sts_url);
        return TDB_E_INVAL;
    }
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
        if (tdb_store_header_add(&h.hl, hdr[i].name, hdr[i].value))
            goto out;
    if (tdb_store_header_add(&h.hl, "Accept", "text/xml") ||
        !(h.hl = curl_slist_append(h.hl, "Expect:")))
        goto out;
    if (by) {
        struct tdb_s3_request rq = {
            .method = "POST", .path = "/", .query = "", .hdr = hdr,
            .nhdr = nh, .payload_hash = hash, .amz_date = date};
        struct tdb_s3_signer sg = {.region = src->sts_region,
                                   .key_id = by->id, .secret = by->secret};
        r = tdb_s3_sigv4_for(auth, sizeof auth, &rq, &sg, "sts");
        if (!r)
            r = tdb_store_header_add(&h.hl, "Authorization", auth);
        explicit_bzero(auth, sizeof auth);
        if (r)
            goto out;
    }
    if ((r = s3c_http_do(&h, why)))
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
    s3c_buf_free(&h.out);
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
    if (!web && (r = s3c_fetch(src->from, &by, why)))
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
    s3c_zfree(body);
    s3c_zfree(token);
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
    s3c_buf_free(&h.out);
    s3c_zfree(auth);
    return r;
}

/* One request to the instance metadata service: `path` of its endpoint,
 * with its session token (NULL: the PUT that asks for one). */
static int s3c_imds_req(const struct tdb_s3_source *src, const char *path,
                        const char *token, struct s3c_buf *out, char *why)
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
    s3c_buf_free(&h.out);
    free(url);
    return r;
}

#define S3C_IMDS_CREDS "/latest/meta-data/iam/security-credentials/"

/* EC2 instance metadata, IMDSv2: a session token first (PUT), then the
 * role's name and its credentials. */
static int s3c_imds(const struct tdb_s3_source *src,
                    struct tdb_s3_keys **out, char *why)
{
    struct s3c_buf tok = {0}, role = {0}, creds = {0};
    char *path = NULL;
    int r = s3c_imds_req(src, "/latest/api/token", NULL, &tok, why);
    if (!r && (!tok.p || !tok.len || !s3c_header_safe(tok.p))) {
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
    s3c_buf_free(&tok);
    s3c_buf_free(&role);
    s3c_buf_free(&creds);
    return r;
}

/* Fresh keys from src (on the calling thread).  @return 0 or a TDB_E_*
 * code with the reason in why (never a secret). */
static int s3c_fetch(const struct tdb_s3_source *src,
                     struct tdb_s3_keys **out, char *why)
{
    *out = NULL;
    switch (src->kind) {
    case TDB_S3_SRC_KEYS:
        return s3c_keys_make(out, src->id, src->secret, src->token, 0, why);
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

/* ------------------------------------------- the renewable key set */

struct tdb_s3_creds {
    pthread_mutex_t lock;       /* everything below but src */
    pthread_cond_t cv;          /* a fetch ended; the thread is wanted
                                 * (CLOCK_MONOTONIC) */
    unsigned refs;
    struct tdb_s3_source *src;  /* NULL: keys that never change */
    struct tdb_s3_keys *cur;    /* the keys requests are signed with */
    uint64_t gen;               /* cur's number */
    bool running;               /* the renewal thread runs (asleep
                                 * until the keys are due, or fetching) */
    bool fetching;              /* it is fetching */
    bool joinable;              /* `thread` was started and not joined */
    bool force;                 /* cur was refused: renew at once */
    bool used;                  /* held since the last fetch began */
    bool stop;                  /* the last reference went: end */
    pid_t pid;                  /* the process the thread runs in */
    pthread_t thread;
    int64_t not_before;         /* wall ms: no renewal before (failures) */
    unsigned fails;             /* renewals failed in a row */
    int64_t fetch_ms;           /* how long the last fetch took */
    struct tdb_s3_creds_stats stats;
};

int64_t tdb_s3_renew_at(int64_t got, int64_t expires)
{
    if (!expires)
        return INT64_MAX;
    int64_t life = expires - got, w = life / 3;
    if (w > S3C_WINDOW_MS)
        w = S3C_WINDOW_MS;
    return expires - (w > 0 ? w : 0);
}

/* Past this, requests would be refused: a caller waits for the renewal. */
static int64_t s3c_must_at(const struct tdb_s3_keys *k)
{
    int64_t w = (k->expires - k->got) / 10;
    if (w > S3C_MUST_MS)
        w = S3C_MUST_MS;
    return k->expires - (w > 0 ? w : 0);
}

static int64_t s3c_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits on c->cv until monotonic ms `until` at most.  c->lock held. */
static void s3c_sleep(struct tdb_s3_creds *c, int64_t until)
{
    struct timespec ts = {.tv_sec = until / 1000,
                          .tv_nsec = (until % 1000) * 1000000};
    pthread_cond_timedwait(&c->cv, &c->lock, &ts);
}

/* When the next renewal is due (wall ms).  c->lock held. */
static int64_t s3c_due(const struct tdb_s3_creds *c)
{
    int64_t at = tdb_s3_renew_at(c->cur->got, c->cur->expires);
    return c->not_before > at ? c->not_before : at;
}

/* Drops a hold of k.  c->lock held. */
static void s3c_unhold(struct tdb_s3_keys *k)
{
    if (k && !--k->refs)
        tdb_s3_keys_free(k);
}

/* Makes k the keys requests are signed with.  c->lock held. */
static void s3c_install(struct tdb_s3_creds *c, struct tdb_s3_keys *k)
{
    k->refs = 1;
    k->gen = ++c->gen;
    s3c_unhold(c->cur);
    c->cur = k;
}

static int s3c_new(struct tdb_s3_creds **out, struct tdb_s3_source *src,
                   struct tdb_s3_keys *k)
{
    struct tdb_s3_creds *c = calloc(1, sizeof *c);
    pthread_condattr_t ca;
    if (!c)
        return TDB_E_NOMEM;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->refs = 1;
    c->src = src;
    s3c_install(c, k);
    c->stats.fetches = src ? 1 : 0;
    c->stats.expires = k->expires;
    *out = c;
    return 0;
}

int tdb_s3_creds_keys(struct tdb_s3_creds **out, const char *id,
                      const char *secret, const char *token)
{
    struct tdb_s3_keys *k;
    char why[S3C_WHY];
    *out = NULL;
    int r = s3c_keys_make(&k, id, secret, token, 0, why);
    if (r)
        return r == TDB_E_NOMEM ? r : TDB_E_INVAL;
    if ((r = s3c_new(out, NULL, k)))
        tdb_s3_keys_free(k);
    return r;
}

int tdb_s3_creds_new(struct tdb_s3_creds **out, struct tdb_s3_source *src,
                     struct tdb_error *err)
{
    struct tdb_s3_keys *k = NULL;
    char why[S3C_WHY] = "";
    *out = NULL;
    int64_t t0 = s3c_mono_ms();
    int r = s3c_fetch(src, &k, why);
    if (r) {
        r = tdb_err(err, r, "credentials from %s: %s", src->what, why);
        tdb_s3_source_free(src);
        return r;
    }
    if ((r = s3c_new(out, k->expires ? src : NULL, k))) {
        tdb_s3_keys_free(k);
        tdb_s3_source_free(src);
        return tdb_err(err, r, "out of memory");
    }
    (*out)->fetch_ms = s3c_mono_ms() - t0;
    if (!k->expires)    /* keys that never expire are never renewed */
        tdb_s3_source_free(src);
    return 0;
}

struct tdb_s3_creds *tdb_s3_creds_ref(struct tdb_s3_creds *c)
{
    if (c) {
        pthread_mutex_lock(&c->lock);
        c->refs++;
        pthread_mutex_unlock(&c->lock);
    }
    return c;
}

/* A thread of the process that forked is not in this one.  c->lock
 * held. */
static void s3c_after_fork(struct tdb_s3_creds *c)
{
    if ((c->running || c->joinable) && c->pid != getpid()) {
        c->running = c->fetching = false;
        c->joinable = false;
    }
}

void tdb_s3_creds_unref(struct tdb_s3_creds *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    s3c_after_fork(c);
    bool last = !--c->refs;
    if (last) {
        c->stop = true;
        pthread_cond_broadcast(&c->cv);
        while (c->running)      /* a fetch under way ends first */
            pthread_cond_wait(&c->cv, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    if (!last)
        return;
    if (c->joinable)
        pthread_join(c->thread, NULL);
    s3c_unhold(c->cur);
    tdb_s3_source_free(c->src);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Fetches new keys (c->lock held, dropped meanwhile): installed, or
 * after a failure the next try is put off. */
static void s3c_renew(struct tdb_s3_creds *c)
{
    struct tdb_s3_keys *k = NULL;
    char why[S3C_WHY];
    c->fetching = true;
    c->used = false;
    pthread_mutex_unlock(&c->lock);
    int64_t t0 = s3c_mono_ms();
    int r = s3c_fetch(c->src, &k, why);
    explicit_bzero(why, sizeof why);
    pthread_mutex_lock(&c->lock);
    c->fetch_ms = s3c_mono_ms() - t0;
    c->stats.fetches++;
    c->force = false;
    if (!r) {
        s3c_install(c, k);
        c->fails = 0;
        c->not_before = 0;
        c->stats.expires = k->expires;
    } else {
        /* tried again 1 s later, then 2, 4 ... up to a minute */
        c->stats.failures++;
        unsigned sh = c->fails < 6 ? c->fails : 6;
        int64_t wait = (int64_t)1000 << sh;
        c->fails++;
        c->not_before = (int64_t)tdb_now_ms() +
                        (wait < S3C_RETRY_MAX_MS ? wait : S3C_RETRY_MAX_MS);
    }
    c->fetching = false;
    pthread_cond_broadcast(&c->cv);
}

/* The renewal thread: sleeps until the keys are due (tdb_s3_renew_at, or
 * the next try after a failure) or wanted at once (force), then renews
 * them if they were used (held) since the last fetch began; keys not used
 * by then are left as they are and the thread ends (the next hold starts
 * it again). */
static void *s3c_renew_main(void *arg)
{
    struct tdb_s3_creds *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        bool go = false;
        while (!c->stop) {
            int64_t now = (int64_t)tdb_now_ms(), due = s3c_due(c);
            if (c->force || (c->cur->expires && now >= due)) {
                go = c->force || c->used;
                break;
            }
            if (!c->cur->expires)   /* keys that never expire */
                break;
            s3c_sleep(c, s3c_mono_ms() + (due - now));
        }
        if (!go || c->stop)
            break;
        s3c_renew(c);
    }
    c->running = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Makes sure the renewal thread runs (started when it does not), woken
 * when `force`.  c->lock held; never waits for a fetch. */
static void s3c_kick(struct tdb_s3_creds *c)
{
    s3c_after_fork(c);
    if (!c->src)
        return;
    if (c->running) {
        if (c->force)
            pthread_cond_broadcast(&c->cv);
        return;
    }
    if (c->joinable)    /* ended: it unlocked c->lock for the last time */
        pthread_join(c->thread, NULL);
    c->joinable = false;
    if (pthread_create(&c->thread, NULL, s3c_renew_main, c) == 0) {
        c->running = true;
        c->joinable = true;
        c->pid = getpid();
    }
}

struct tdb_s3_keys *tdb_s3_creds_hold(struct tdb_s3_creds *c)
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->lock);
    struct tdb_s3_keys *k = c->cur;
    k->refs++;
    if (c->src) {
        c->used = true;
        if (!c->running || c->pid != getpid())
            s3c_kick(c);
    }
    pthread_mutex_unlock(&c->lock);
    return k;
}

void tdb_s3_creds_drop(struct tdb_s3_creds *c, struct tdb_s3_keys *k)
{
    if (!c || !k)
        return;
    pthread_mutex_lock(&c->lock);
    s3c_unhold(k);
    pthread_mutex_unlock(&c->lock);
}

void tdb_s3_creds_wait(struct tdb_s3_creds *c)
{
    if (!c || !c->src)      /* src is set once, before any sharing */
        return;
    int64_t until = s3c_mono_ms() + S3C_WAIT_MS;
    pthread_mutex_lock(&c->lock);
    c->used = true;
    int64_t now = (int64_t)tdb_now_ms();
    if (c->cur->expires && now >= s3c_must_at(c->cur) &&
        now >= c->not_before) {
        c->force = true;
        s3c_kick(c);
        while (c->running && (c->force || c->fetching) &&
               now >= s3c_must_at(c->cur) && s3c_mono_ms() < until) {
            s3c_sleep(c, until);
            now = (int64_t)tdb_now_ms();
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* Did S3 refuse the keys as expired (or not valid any more)?  Its error
 * codes ExpiredToken, InvalidToken, TokenRefreshRequired (and STS's
 * ExpiredTokenException); a HEAD's answer has no body: then the keys
 * having passed their expiry says it. */
static bool s3c_refused(const struct tdb_s3_try *c,
                        const struct tdb_s3_keys *k, int64_t now)
{
    if (!c->body->len)
        return c->status == 400 &&
               (k->gen != c->keys_gen || (k->expires && now >= k->expires));
    struct tdb_store_answer x;
    bool yes = false;
    if (!tdb_s3_xml_parse(&x, c->body, "") && x.code)
        yes = !strcmp(x.code, "ExpiredToken") ||
              !strcmp(x.code, "ExpiredTokenException") ||
              !strcmp(x.code, "InvalidToken") ||
              !strcmp(x.code, "TokenRefreshRequired");
    tdb_store_answer_free(&x);
    return yes;
}

bool tdb_s3_creds_retry(struct tdb_s3_creds *cr, const struct tdb_s3_try *c,
                        uint64_t now_ms, uint64_t *wait_ms)
{
    if (!cr || !cr->src || *c->renewed ||
        (c->status != 400 && c->status != 403))
        return false;
    int64_t now = (int64_t)tdb_now_ms();
    pthread_mutex_lock(&cr->lock);
    bool refused = s3c_refused(c, cr->cur, now);
    if (refused && cr->cur->gen == c->keys_gen) {
        /* the keys it was signed with are still the current ones: renew
         * now; the retry waits for about twice the last fetch */
        cr->force = true;
        s3c_kick(cr);
        int64_t w = 2 * cr->fetch_ms + 250;
        *wait_ms = (uint64_t)(w < 5000 ? w : 5000);
    } else {
        *wait_ms = 0;   /* signed with older keys: again with the new */
    }
    pthread_mutex_unlock(&cr->lock);
    if (!refused)
        return false;
    *c->renewed = true;
    return !c->deadline || now_ms + *wait_ms < c->deadline;
}

void tdb_s3_creds_stats(struct tdb_s3_creds *c, struct tdb_s3_creds_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    *st = c->stats;
    pthread_mutex_unlock(&c->lock);
}
