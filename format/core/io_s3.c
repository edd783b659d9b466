/* io_s3.c: the I/O interface over S3 and S3-compatible servers: range GETs,
 * HEAD, ListObjectsV2, PUT, server-side copy and DELETE through libcurl,
 * signed with AWS Signature Version 4 (OpenSSL), listings parsed by expat. */
#include "core/core.h"
#include "core/io_s3.h"
#include "core/names.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <expat.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S3_POOL 16             /* idle curl handles kept (each keeps its
                                * connection alive) */
#define S3_TRIES 4             /* tries of a request: 5xx, failed connections */
#define S3_BODY_MAX (64u << 20) /* cap on a listing or error body kept */
#define S3_CACHE_MAX (1u << 20) /* folder entries cached before all go */
#define S3_CACHE_BUCKETS 4096
#define S3_AUTH_MAX 1024

/* ------------------------------------------------------------ encodings */

static bool s3_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
           c == '~';
}

char *tdb_s3_encode(const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (s3_unreserved(*p) || (keep_slash && *p == '/')) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = 0;
    return out;
}

struct s3_kv {
    char *k, *v;
};

static int s3_kv_cmp(const void *a, const void *b)
{
    const struct s3_kv *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

char *tdb_s3_query(const struct tdb_s3_pair *p, size_t n)
{
    struct s3_kv *kv = calloc(n ? n : 1, sizeof *kv);
    struct tdb_buf b = {0};
    char *out = NULL;
    if (!kv)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(kv[i].k = tdb_s3_encode(p[i].name, false)) ||
            !(kv[i].v = tdb_s3_encode(p[i].value ? p[i].value : "", false)))
            goto out;
    qsort(kv, n, sizeof *kv, s3_kv_cmp);
    for (size_t i = 0; i < n; i++)
        if ((i && tdb_buf_append(&b, "&", 1)) ||
            tdb_buf_append(&b, kv[i].k, strlen(kv[i].k)) ||
            tdb_buf_append(&b, "=", 1) ||
            tdb_buf_append(&b, kv[i].v, strlen(kv[i].v)))
            goto out;
    if (!tdb_buf_append(&b, "", 1)) {
        out = (char *)b.data;
        b.data = NULL;
    }
out:
    for (size_t i = 0; i < n; i++) {
        free(kv[i].k);
        free(kv[i].v);
    }
    free(kv);
    tdb_buf_free(&b);
    return out;
}

/* ------------------------------------------------------------- signing */

static void s3_hex(const unsigned char *d, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * n] = 0;
}

void tdb_s3_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    s3_hex(md, 32, out);
}

static void s3_hmac(const void *key, size_t klen, const char *msg,
                    unsigned char out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg,
         strlen(msg), out, &n);
}

struct s3_hdr {
    char *name;   /* lower case */
    char *value;  /* trimmed, inner runs of spaces made one */
};

static int s3_hdr_cmp(const void *a, const void *b)
{
    return strcmp(((const struct s3_hdr *)a)->name,
                  ((const struct s3_hdr *)b)->name);
}

static char *s3_trim_value(const char *v)
{
    char *out = malloc(strlen(v) + 1), *o = out;
    if (!out)
        return NULL;
    while (*v == ' ' || *v == '\t')
        v++;
    bool space = false;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t') {
            space = true;
            continue;
        }
        if (space && o != out)
            *o++ = ' ';
        space = false;
        *o++ = *v;
    }
    *o = 0;
    return out;
}

int tdb_s3_sigv4(char *out, size_t cap, const char *method, const char *path,
                 const char *query, const struct tdb_s3_pair *hdr,
                 size_t nhdr, const char *payload_hash, const char *amz_date,
                 const char *region, const char *key_id, const char *secret)
{
    int r = TDB_E_NOMEM;
    struct s3_hdr *h = calloc(nhdr ? nhdr : 1, sizeof *h);
    struct tdb_buf creq = {0}, names = {0}, sts = {0};
    char *key = NULL;
    if (!h)
        return TDB_E_NOMEM;
    for (size_t i = 0; i < nhdr; i++) {
        if (!(h[i].name = strdup(hdr[i].name)) ||
            !(h[i].value = s3_trim_value(hdr[i].value)))
            goto out;
        for (char *p = h[i].name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    qsort(h, nhdr, sizeof *h, s3_hdr_cmp);
    /* the canonical request */
#define S3_ADD(b, s) tdb_buf_append((b), (s), strlen(s))
    if (S3_ADD(&creq, method) || S3_ADD(&creq, "\n") || S3_ADD(&creq, path) ||
        S3_ADD(&creq, "\n") || S3_ADD(&creq, query) || S3_ADD(&creq, "\n"))
        goto out;
    for (size_t i = 0; i < nhdr; i++)
        if (S3_ADD(&creq, h[i].name) || S3_ADD(&creq, ":") ||
            S3_ADD(&creq, h[i].value) || S3_ADD(&creq, "\n") ||
            (i && S3_ADD(&names, ";")) || S3_ADD(&names, h[i].name))
            goto out;
    if (tdb_buf_append(&names, "", 1) || S3_ADD(&creq, "\n") ||
        S3_ADD(&creq, (char *)names.data) || S3_ADD(&creq, "\n") ||
        S3_ADD(&creq, payload_hash))
        goto out;
    char creq_hash[65];
    tdb_s3_sha256_hex(creq.data, creq.len, creq_hash);
    /* the string to sign */
    char day[9];
    snprintf(day, sizeof day, "%.8s", amz_date);
    char scope[128];
    if ((size_t)snprintf(scope, sizeof scope, "%s/%s/s3/aws4_request", day,
                         region) >= sizeof scope) {
        r = TDB_E_INVAL;
        goto out;
    }
    if (S3_ADD(&sts, "AWS4-HMAC-SHA256\n") || S3_ADD(&sts, amz_date) ||
        S3_ADD(&sts, "\n") || S3_ADD(&sts, scope) || S3_ADD(&sts, "\n") ||
        S3_ADD(&sts, creq_hash) || tdb_buf_append(&sts, "", 1))
        goto out;
#undef S3_ADD
    /* the signing key: HMAC chain over date, region, service, terminator */
    if (asprintf(&key, "AWS4%s", secret) < 0) {
        key = NULL;
        goto out;
    }
    unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
    s3_hmac(key, strlen(key), day, k1);
    s3_hmac(k1, 32, region, k2);
    s3_hmac(k2, 32, "s3", k3);
    s3_hmac(k3, 32, "aws4_request", k4);
    s3_hmac(k4, 32, (const char *)sts.data, sig);
    char sighex[65];
    s3_hex(sig, 32, sighex);
    int n = snprintf(out, cap,
                     "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
                     "Signature=%s",
                     key_id, scope, (char *)names.data, sighex);
    r = n < 0 || (size_t)n >= cap ? TDB_E_INVAL : 0;
    explicit_bzero(k1, sizeof k1);
    explicit_bzero(k2, sizeof k2);
    explicit_bzero(k3, sizeof k3);
    explicit_bzero(k4, sizeof k4);
out:
    if (key) {
        explicit_bzero(key, strlen(key));
        free(key);
    }
    for (size_t i = 0; i < nhdr; i++) {
        free(h[i].name);
        free(h[i].value);
    }
    free(h);
    tdb_buf_free(&creq);
    tdb_buf_free(&names);
    tdb_buf_free(&sts);
    return r;
}

/* ---------------------------------------------------------- ini files */

/* [p, e) without leading and trailing blanks. */
static void s3_strip(const char **p, const char **e)
{
    while (*p < *e && isspace((unsigned char)**p))
        (*p)++;
    while (*e > *p && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

static bool s3_eq(const char *p, const char *e, const char *s)
{
    size_t n = (size_t)(e - p);
    return strlen(s) == n && !strncasecmp(p, s, n);
}

int tdb_s3_ini_get(const char *text, size_t len, const char *section,
                   const char *key, char **value)
{
    const char *p = text, *end = text + len;
    bool in = false;
    *value = NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *ls = p;
        p = nl ? nl + 1 : end;
        bool indented = ls < le && (*ls == ' ' || *ls == '\t');
        s3_strip(&ls, &le);
        if (ls == le || *ls == '#' || *ls == ';')
            continue;
        if (*ls == '[') {
            if (le[-1] != ']' || indented)
                continue;
            const char *a = ls + 1, *b = le - 1;
            s3_strip(&a, &b);
            in = s3_eq(a, b, section);
            continue;
        }
        if (!in || indented)
            continue;
        const char *eq = memchr(ls, '=', (size_t)(le - ls));
        if (!eq)
            continue;
        const char *ka = ls, *kb = eq, *va = eq + 1, *vb = le;
        s3_strip(&ka, &kb);
        s3_strip(&va, &vb);
        if (!s3_eq(ka, kb, key))
            continue;
        free(*value);   /* the last one wins, as in the AWS tools */
        if (!(*value = strndup(va, (size_t)(vb - va))))
            return TDB_E_NOMEM;
    }
    return *value ? 0 : TDB_E_NOENT;
}

/* ------------------------------------------------------- configuration */

static int s3_dupenv(char **dst, const char *name)
{
    const char *v = getenv(name);
    if (!v || !v[0] || *dst)
        return 0;
    return (*dst = strdup(v)) ? 0 : TDB_E_NOMEM;
}

/* Reads a small text file (an ini file of ~/.aws); NULL when missing. */
static char *s3_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    struct tdb_buf b = {0};
    char chunk[4096];
    size_t n;
    int bad = 0;
    while (!bad && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        bad = tdb_buf_append(&b, chunk, n) || b.len > (1u << 20);
    fclose(f);
    if (bad || tdb_buf_append(&b, "", 1)) {
        tdb_buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return (char *)b.data;
}

/* Sets *dst (when still NULL) from `key` of `section` in ini text. */
static int s3_from_ini(char **dst, const char *text, size_t len,
                       const char *section, const char *key)
{
    if (*dst || !text)
        return 0;
    int r = tdb_s3_ini_get(text, len, section, key, dst);
    return r == TDB_E_NOENT ? 0 : r;
}

/* A file named by env `var`, else ~/.aws/NAME. */
static char *s3_aws_file(const char *var, const char *name)
{
    const char *v = getenv(var), *home = getenv("HOME");
    char *p = NULL;
    if (v && v[0])
        return strdup(v);
    if (!home || !home[0] || asprintf(&p, "%s/.aws/%s", home, name) < 0)
        return NULL;
    return p;
}

int tdb_s3_config_load(struct tdb_s3_config *cfg, struct tdb_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    const char *prof = getenv("AWS_PROFILE");
    if (!prof || !prof[0])
        prof = "default";
    char *credpath = s3_aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    char *confpath = s3_aws_file("AWS_CONFIG_FILE", "config");
    char *section = NULL;
    size_t credlen = 0, conflen = 0;
    char *cred = credpath ? s3_slurp(credpath, &credlen) : NULL;
    char *conf = confpath ? s3_slurp(confpath, &conflen) : NULL;
    int r = 0;
    /* ~/.aws/config names its sections "profile NAME", except default */
    if (!strcmp(prof, "default") ? !(section = strdup(prof))
                                 : asprintf(&section, "profile %s", prof) < 0) {
        section = NULL;
        r = TDB_E_NOMEM;
        goto out;
    }
    const char *id = getenv("AWS_ACCESS_KEY_ID");
    if (id && id[0]) {
        if ((r = s3_dupenv(&cfg->access_key, "AWS_ACCESS_KEY_ID")) ||
            (r = s3_dupenv(&cfg->secret_key, "AWS_SECRET_ACCESS_KEY")) ||
            (r = s3_dupenv(&cfg->session_token, "AWS_SESSION_TOKEN")))
            goto out;
    } else {
        static const char *const names[] = {
            "aws_access_key_id", "aws_secret_access_key", "aws_session_token"};
        char **dst[] = {&cfg->access_key, &cfg->secret_key,
                        &cfg->session_token};
        for (int i = 0; i < 3; i++)
            if ((r = s3_from_ini(dst[i], cred, credlen, prof, names[i])) ||
                (r = s3_from_ini(dst[i], conf, conflen, section, names[i])))
                goto out;
    }
    if ((r = s3_dupenv(&cfg->region, "AWS_REGION")) ||
        (r = s3_dupenv(&cfg->region, "AWS_DEFAULT_REGION")) ||
        (r = s3_from_ini(&cfg->region, conf, conflen, section, "region")) ||
        (r = s3_dupenv(&cfg->endpoint, "AWS_ENDPOINT_URL_S3")) ||
        (r = s3_dupenv(&cfg->endpoint, "AWS_ENDPOINT_URL")) ||
        (r = s3_from_ini(&cfg->endpoint, conf, conflen, section,
                         "endpoint_url")))
        goto out;
out:
    if (cred)
        explicit_bzero(cred, credlen);
    free(cred);
    free(conf);
    free(credpath);
    free(confpath);
    free(section);
    if (r) {
        tdb_s3_config_free(cfg);
        return tdb_err(err, r, "AWS configuration: %s", tdb_strerror(r));
    }
    return 0;
}

void tdb_s3_config_free(struct tdb_s3_config *cfg)
{
    if (!cfg)
        return;
    if (cfg->secret_key)
        explicit_bzero(cfg->secret_key, strlen(cfg->secret_key));
    free(cfg->access_key);
    free(cfg->secret_key);
    free(cfg->session_token);
    free(cfg->region);
    free(cfg->endpoint);
    memset(cfg, 0, sizeof *cfg);
}

int tdb_s3_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : TDB_E_IO;
}

/* --------------------------------------------------------------- state */

struct s3_dent {
    char *name;
    bool is_dir;
    uint64_t size;
};

/* A folder's entries as its last listing gave them, sorted by name. */
struct s3_dir {
    char *path;
    struct s3_dent *e;
    size_t n;
    struct s3_dir *next;
};

/* An object being written: its bytes wait in an unlinked temporary file
 * until sync or rename PUTs them. */
struct s3_pending {
    char *path;
    int fd;
    uint64_t size;
    struct s3_pending *next;
};

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

/* --------------------------------------------------------------- cache */

static size_t s3_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)(h % S3_CACHE_BUCKETS);
}

static void s3_dir_free(struct s3_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->e[i].name);
    free(d->e);
    free(d->path);
    free(d);
}

/* s->lock held. */
static void s3_cache_clear(struct s3 *s)
{
    for (size_t i = 0; i < S3_CACHE_BUCKETS; i++)
        while (s->cache[i]) {
            struct s3_dir *d = s->cache[i];
            s->cache[i] = d->next;
            s3_dir_free(d);
        }
    s->ncached = 0;
}

/* Unlinks and frees folder `path`'s entry.  s->lock held. */
static void s3_cache_drop(struct s3 *s, const char *path)
{
    for (struct s3_dir **pp = &s->cache[s3_hash(path)]; *pp;
         pp = &(*pp)->next) {
        if (strcmp((*pp)->path, path))
            continue;
        struct s3_dir *d = *pp;
        *pp = d->next;
        s->ncached -= d->n;
        s3_dir_free(d);
        return;
    }
}

/* Something changed at `path`: the listings of every folder above it go. */
static void s3_cache_forget(struct s3 *s, const char *path)
{
    char *p = strdup(path);
    pthread_mutex_lock(&s->lock);
    if (!p) {
        s3_cache_clear(s);
    } else {
        for (;;) {
            char *slash = strrchr(p, '/');
            if (slash)
                *slash = 0;
            else
                p[0] = 0;
            s3_cache_drop(s, p);
            if (!p[0])
                break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(p);
}

static int s3_dent_cmp(const void *a, const void *b)
{
    const struct s3_dent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (int)x->is_dir - (int)y->is_dir;
}

/* Keeps a listing (takes e).  Best effort: on ENOMEM nothing is kept. */
static void s3_cache_put(struct s3 *s, const char *path, struct s3_dent *e,
                         size_t n)
{
    struct s3_dir *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        for (size_t i = 0; i < n; i++)
            free(e[i].name);
        free(e);
        return;
    }
    qsort(e, n, sizeof *e, s3_dent_cmp);
    d->e = e;
    d->n = n;
    pthread_mutex_lock(&s->lock);
    s3_cache_drop(s, path);
    if (s->ncached + n > S3_CACHE_MAX)
        s3_cache_clear(s);
    size_t b = s3_hash(path);
    d->next = s->cache[b];
    s->cache[b] = d;
    s->ncached += n;
    pthread_mutex_unlock(&s->lock);
}

/* What the cached listing of path's folder says of it: 1 found (*is_dir,
 * *size set), 0 not known. */
static int s3_cache_get(struct s3 *s, const char *path, bool *is_dir,
                        uint64_t *size)
{
    char *dir = strdup(path);
    if (!dir)
        return 0;
    char *slash = strrchr(dir, '/');
    const char *leaf = slash ? path + (slash - dir) + 1 : path;
    if (slash)
        *slash = 0;
    else
        dir[0] = 0;
    int found = 0;
    pthread_mutex_lock(&s->lock);
    for (struct s3_dir *d = s->cache[s3_hash(dir)]; d && !found; d = d->next) {
        if (strcmp(d->path, dir))
            continue;
        for (size_t i = 0; i < d->n; i++)   /* a file and a folder may
                                             * share a name: the file wins */
            if (!strcmp(d->e[i].name, leaf) && (!found || !d->e[i].is_dir)) {
                *is_dir = d->e[i].is_dir;
                *size = d->e[i].size;
                found = 1;
            }
        break;
    }
    pthread_mutex_unlock(&s->lock);
    free(dir);
    return found;
}

/* ---------------------------------------------------------------- HTTP */

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
        s3_hex(d, 32, out);
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
static int s3_perform(struct s3 *s, struct s3_call *c)
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

/* ----------------------------------------------------------------- XML */

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

static const char *s3_xml_parent(struct s3_xml *x)
{
    return x->depth >= 2 && x->depth - 2 < 8 ? x->stack[x->depth - 2] : "";
}

static void XMLCALL s3_xml_start(void *arg, const XML_Char *name,
                                 const XML_Char **attrs)
{
    struct s3_xml *x = arg;
    if (x->depth < 8 && !(x->stack[x->depth] = strdup(name)))
        x->fail = TDB_E_NOMEM;
    if (x->depth == 0 && !strcmp(name, "Error"))
        x->is_error = true;
    x->depth++;
    x->text.len = 0;
}

static char *s3_xml_text(struct s3_xml *x)
{
    return strndup(x->text.len ? (const char *)x->text.data : "", x->text.len);
}

static void s3_xml_add(struct s3_xml *x, const char *full, bool is_dir,
                       uint64_t size)
{
    if (strncmp(full, x->prefix, x->plen))
        return;
    const char *name = full + x->plen;
    size_t l = strlen(name);
    if (is_dir && l && name[l - 1] == '/')
        l--;
    if (!l)     /* the folder's own marker object ("prefix/") */
        return;
    if (x->n == x->cap) {
        size_t nc = x->cap ? 2 * x->cap : 64;
        struct s3_dent *ne = realloc(x->e, nc * sizeof *ne);
        if (!ne) {
            x->fail = TDB_E_NOMEM;
            return;
        }
        x->e = ne;
        x->cap = nc;
    }
    if (!(x->e[x->n].name = strndup(name, l))) {
        x->fail = TDB_E_NOMEM;
        return;
    }
    x->e[x->n].is_dir = is_dir;
    x->e[x->n].size = size;
    x->n++;
}

static void XMLCALL s3_xml_end(void *arg, const XML_Char *name)
{
    struct s3_xml *x = arg;
    const char *parent = s3_xml_parent(x);
    char **slot = NULL;
    if (!strcmp(name, "Key") && !strcmp(parent, "Contents"))
        slot = &x->key;
    else if (!strcmp(name, "NextContinuationToken") && x->depth == 2)
        slot = &x->token;
    else if (!strcmp(name, "Code") && x->is_error && x->depth == 2)
        slot = &x->code;
    else if (!strcmp(name, "Message") && x->is_error && x->depth == 2)
        slot = &x->message;
    if (slot) {
        free(*slot);
        if (!(*slot = s3_xml_text(x)))
            x->fail = TDB_E_NOMEM;
    } else if (!strcmp(name, "Size") && !strcmp(parent, "Contents")) {
        char *t = s3_xml_text(x), *end = NULL;
        errno = 0;
        x->size = t ? strtoull(t, &end, 10) : 0;
        if (!t || errno || end == t || *end)
            x->fail = t ? TDB_E_CORRUPT : TDB_E_NOMEM;
        free(t);
    } else if (!strcmp(name, "IsTruncated") && x->depth == 2) {
        x->truncated = x->text.len == 4 && !memcmp(x->text.data, "true", 4);
    } else if (!strcmp(name, "Contents") && x->depth == 2) {
        x->nkeys++;
        if (x->key)
            s3_xml_add(x, x->key, false, x->size);
        free(x->key);
        x->key = NULL;
        x->size = 0;
    } else if (!strcmp(name, "Prefix") && !strcmp(parent, "CommonPrefixes")) {
        char *t = s3_xml_text(x);
        if (!t)
            x->fail = TDB_E_NOMEM;
        else
            s3_xml_add(x, t, true, 0);
        free(t);
    }
    x->depth--;
    if (x->depth < 8) {
        free(x->stack[x->depth]);
        x->stack[x->depth] = NULL;
    }
    x->text.len = 0;
}

static void XMLCALL s3_xml_chars(void *arg, const XML_Char *s, int len)
{
    struct s3_xml *x = arg;
    if (x->text.len + (size_t)len > (1u << 20) ||
        tdb_buf_append(&x->text, s, (size_t)len))
        x->fail = TDB_E_NOMEM;
}

/* Parses body into x (entries named relative to `prefix`).
 * @return 0, TDB_E_CORRUPT (not XML) or TDB_E_NOMEM. */
static int s3_xml_parse(struct s3_xml *x, const struct tdb_buf *body,
                        const char *prefix)
{
    memset(x, 0, sizeof *x);
    x->prefix = prefix ? prefix : "";
    x->plen = strlen(x->prefix);
    if (!(x->xp = XML_ParserCreate("UTF-8")))
        return TDB_E_NOMEM;
    XML_SetUserData(x->xp, x);
    XML_SetElementHandler(x->xp, s3_xml_start, s3_xml_end);
    XML_SetCharacterDataHandler(x->xp, s3_xml_chars);
    if (body->len > INT_MAX)
        return TDB_E_CORRUPT;
    if (XML_Parse(x->xp, body->len ? (const char *)body->data : "",
                  (int)body->len, 1) != XML_STATUS_OK && !x->fail)
        x->fail = TDB_E_CORRUPT;
    return x->fail;
}

static void s3_xml_free(struct s3_xml *x)
{
    if (x->xp)
        XML_ParserFree(x->xp);
    for (int i = 0; i < 8; i++)
        free(x->stack[i]);
    for (size_t i = 0; i < x->n; i++)
        free(x->e[i].name);
    free(x->e);
    free(x->key);
    free(x->token);
    free(x->code);
    free(x->message);
    tdb_buf_free(&x->text);
    memset(x, 0, sizeof *x);
}

/* -------------------------------------------------------------- errors */

/* The TDB_E_* code of an answer: 2xx 0, 404 TDB_E_NOENT, else TDB_E_IO;
 * with err, a message naming the key, the status and S3's error code. */
static int s3_status(struct s3 *s, struct s3_call *c, struct tdb_error *err)
{
    if (c->cc != CURLE_OK)
        return tdb_err(err, TDB_E_IO, "s3://%s/%s: %s: %s", s->bucket,
                       c->key ? c->key : "", curl_easy_strerror(c->cc),
                       c->curl_msg);
    if (c->status >= 200 && c->status < 300)
        return 0;
    int code = c->status == 404 ? TDB_E_NOENT : TDB_E_IO;
    if (!err)
        return code;
    struct s3_xml x;
    s3_xml_parse(&x, &c->mem, NULL);
    tdb_err(err, code, "s3://%s/%s: %s %s: HTTP %ld%s%s%s%s", s->bucket,
            c->key ? c->key : "", c->method, c->key ? "" : "(bucket)",
            c->status, x.code ? " " : "", x.code ? x.code : "",
            x.message ? ": " : "", x.message ? x.message : "");
    s3_xml_free(&x);
    return code;
}

/* ------------------------------------------------------------- helpers */

/* The key of `path` (relative to the root; leading '/' ignored). */
static char *s3_key(struct s3 *s, const char *path)
{
    while (*path == '/')
        path++;
    size_t l = strlen(path);
    while (l && path[l - 1] == '/')
        l--;
    char *k = NULL;
    if (!s->prefix[0])
        return strndup(path, l);
    if (!l)
        return strdup(s->prefix);
    if (asprintf(&k, "%s/%.*s", s->prefix, (int)l, path) < 0)
        return NULL;
    return k;
}

/* The path as the cache names it (no leading or trailing '/'). */
static char *s3_norm(const char *path)
{
    while (*path == '/')
        path++;
    size_t l = strlen(path);
    while (l && path[l - 1] == '/')
        l--;
    return strndup(path, l);
}

static struct s3_pending *s3_pending_find(struct s3 *s, const char *norm)
{
    for (struct s3_pending *p = s->pend; p; p = p->next)
        if (!strcmp(p->path, norm))
            return p;
    return NULL;
}

/* Takes pending object `norm` off the list (s->lock held). */
static struct s3_pending *s3_pending_take(struct s3 *s, const char *norm)
{
    for (struct s3_pending **pp = &s->pend; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->path, norm)) {
            struct s3_pending *p = *pp;
            *pp = p->next;
            return p;
        }
    return NULL;
}

static void s3_pending_free(struct s3_pending *p)
{
    if (!p)
        return;
    close(p->fd);
    free(p->path);
    free(p);
}

/* A listing of keys starting with `kprefix`: with a delimiter, one level
 * (entries named after kprefix, folders with is_dir), else every key
 * below.  At most `max` keys (0: all).  With err, failures are named.
 * @return 0, a TDB_E_* code. */
static int s3_list_keys(struct s3 *s, const char *kprefix, bool delim,
                        unsigned max, struct s3_dent **out, size_t *nout,
                        struct tdb_error *err)
{
    struct s3_dent *all = NULL;
    size_t n = 0, cap = 0;
    char *token = NULL;
    int r = 0;
    char maxs[16];
    snprintf(maxs, sizeof maxs, "%u", max ? max : 1000);
    do {
        struct tdb_s3_pair q[5];
        size_t nq = 0;
        q[nq++] = (struct tdb_s3_pair){"list-type", "2"};
        q[nq++] = (struct tdb_s3_pair){"prefix", kprefix};
        q[nq++] = (struct tdb_s3_pair){"max-keys", maxs};
        if (delim)
            q[nq++] = (struct tdb_s3_pair){"delimiter", "/"};
        if (token)
            q[nq++] = (struct tdb_s3_pair){"continuation-token", token};
        char *query = tdb_s3_query(q, nq);
        if (!query) {
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
            break;
        }
        struct s3_call c = {.method = "GET", .query = query, .up_fd = -1,
                            .sink = S3_SINK_MEM};
        r = s3_perform(s, &c);
        free(query);
        if (!r)
            r = s3_status(s, &c, err);
        else
            tdb_err(err, r, "s3://%s/%s: list: %s", s->bucket, kprefix,
                    c.cc != CURLE_OK ? curl_easy_strerror(c.cc)
                                     : tdb_strerror(r));
        struct s3_xml x;
        memset(&x, 0, sizeof x);
        if (!r && (r = s3_xml_parse(&x, &c.mem, kprefix)))
            tdb_err(err, r, "s3://%s/%s: list: the answer is not a listing",
                    s->bucket, kprefix);
        tdb_buf_free(&c.mem);
        if (r) {
            s3_xml_free(&x);
            break;
        }
        if (x.is_error) {
            r = tdb_err(err, TDB_E_IO, "s3://%s/%s: list: %s", s->bucket,
                        kprefix, x.code ? x.code : "error");
            s3_xml_free(&x);
            break;
        }
        if (n + x.n > cap) {
            size_t nc = (n + x.n) * 2;
            struct s3_dent *na = realloc(all, nc * sizeof *na);
            if (!na) {
                s3_xml_free(&x);
                r = tdb_err(err, TDB_E_NOMEM, "out of memory");
                break;
            }
            all = na;
            cap = nc;
        }
        memcpy(all + n, x.e, x.n * sizeof *x.e);
        n += x.n;
        x.n = 0;
        free(token);
        token = NULL;
        bool more = x.truncated && !max;
        if (more && !x.token)
            r = tdb_err(err, TDB_E_CORRUPT, "s3://%s/%s: list: truncated "
                        "without a continuation token", s->bucket, kprefix);
        else if (more) {
            token = x.token;
            x.token = NULL;
        }
        s3_xml_free(&x);
        if (!more)
            break;
    } while (!r);
    free(token);
    if (r) {
        for (size_t i = 0; i < n; i++)
            free(all[i].name);
        free(all);
        return r;
    }
    *out = all;
    *nout = n;
    return 0;
}

static void s3_dents_free(struct s3_dent *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].name);
    free(e);
}

/* Does any key start with "KEY/"?  @return 1, 0 or a TDB_E_* code. */
static int s3_has_children(struct s3 *s, const char *key)
{
    char *kp = NULL;
    if (asprintf(&kp, "%s%s", key, key[0] ? "/" : "") < 0)
        return TDB_E_NOMEM;
    struct s3_dent *e = NULL;
    size_t n = 0;
    int r = s3_list_keys(s, kp, false, 1, &e, &n, NULL);
    free(kp);
    if (r)
        return r;
    s3_dents_free(e, n);
    return n > 0;
}

/* HEAD of key: its size.  @return 0, TDB_E_NOENT, TDB_E_IO. */
static int s3_head(struct s3 *s, const char *key, uint64_t *size)
{
    struct s3_call c = {.method = "HEAD", .key = key, .up_fd = -1};
    int r = s3_perform(s, &c);
    if (!r)
        r = s3_status(s, &c, NULL);
    if (!r) {
        r = c.length < 0 ? TDB_E_IO : 0;
        *size = (uint64_t)c.length;
    }
    tdb_buf_free(&c.mem);
    return r;
}

/* ------------------------------------------------------------ the ops */

static int s3_read_at(void *ctx, const char *path, uint64_t off, void *buf,
                      size_t len)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_find(s, norm);
    int r = 0;
    if (p) {
        uint64_t end;
        if (!tdb_add_ok(off, len, &end) || end > p->size)
            r = TDB_E_IO;
        for (size_t done = 0; !r && done < len;) {
            ssize_t n = pread(p->fd, (uint8_t *)buf + done, len - done,
                              (off_t)(off + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                r = TDB_E_IO;
            else
                done += (size_t)n;
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(norm);
    if (p)
        return r;
    char *key = s3_key(s, path);
    if (!key)
        return TDB_E_NOMEM;
    if (len == 0) {      /* nothing to GET: the object must exist */
        uint64_t size;
        r = s3_head(s, key, &size);
        free(key);
        return r ? r : off > size ? TDB_E_IO : 0;
    }
    struct s3_call c = {.method = "GET", .key = key, .up_fd = -1,
                        .sink = S3_SINK_BUF, .dst = buf, .dst_len = len,
                        .skip = off};
    snprintf(c.range, sizeof c.range, "bytes=%llu-%llu",
             (unsigned long long)off, (unsigned long long)(off + len - 1));
    r = s3_perform(s, &c);
    if (!r)
        r = c.status == 416 ? TDB_E_IO : s3_status(s, &c, NULL);
    if (!r && c.dst_got != len)
        r = TDB_E_IO;
    tdb_buf_free(&c.mem);
    free(key);
    return r;
}

static int s3_size(void *ctx, const char *path, uint64_t *size)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_find(s, norm);
    if (p)
        *size = p->size;
    pthread_mutex_unlock(&s->lock);
    bool is_dir;
    uint64_t sz;
    int r = 0;
    if (!p && s3_cache_get(s, norm, &is_dir, &sz) && !is_dir) {
        *size = sz;
    } else if (!p) {
        char *key = s3_key(s, path);
        r = key ? s3_head(s, key, size) : TDB_E_NOMEM;
        free(key);
    }
    free(norm);
    return r;
}

static int s3_is_dir(void *ctx, const char *path, bool *is_dir)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&s->lock);
    bool pending = s3_pending_find(s, norm) != NULL;
    pthread_mutex_unlock(&s->lock);
    uint64_t sz;
    int r = 0;
    if (pending) {
        *is_dir = false;
    } else if (!norm[0] || !s3_cache_get(s, norm, is_dir, &sz)) {
        char *key = s3_key(s, path);
        if (!key) {
            r = TDB_E_NOMEM;
        } else {
            r = key[0] ? s3_head(s, key, &sz) : TDB_E_NOENT;
            if (!r) {
                *is_dir = false;
            } else if (r == TDB_E_NOENT) {
                r = s3_has_children(s, key);
                if (r >= 0) {
                    *is_dir = true;
                    r = r ? 0 : TDB_E_NOENT;
                }
            }
        }
        free(key);
    }
    free(norm);
    return r;
}

static int s3_list(void *ctx, const char *path, tdb_io_list_fn fn, void *arg)
{
    struct s3 *s = ctx;
    char *key = s3_key(s, path), *kp = NULL, *norm = s3_norm(path);
    if (!key || !norm ||
        asprintf(&kp, "%s%s", key, key[0] ? "/" : "") < 0) {
        free(key);
        free(norm);
        return TDB_E_NOMEM;
    }
    free(key);
    struct s3_dent *e = NULL;
    size_t n = 0;
    int r = s3_list_keys(s, kp, true, 0, &e, &n, NULL);
    free(kp);
    /* a folder exists through its keys; none: no folder */
    if (!r && !n)
        r = TDB_E_NOENT;
    for (size_t i = 0; !r && i < n; i++) {
        struct tdb_dirent ent = {e[i].name, e[i].is_dir};
        r = fn(arg, &ent);
    }
    if (r || !n)
        s3_dents_free(e, n);
    else
        s3_cache_put(s, norm, e, n);
    free(norm);
    return r;
}

/* PUTs the first `len` bytes of fd as key. */
static int s3_put_fd(struct s3 *s, const char *key, int fd, uint64_t len)
{
    struct s3_call c = {.method = "PUT", .key = key, .up_fd = fd,
                        .up_len = len, .sink = S3_SINK_NONE};
    int r = s3_perform(s, &c);
    if (!r)
        r = s3_status(s, &c, NULL);
    tdb_buf_free(&c.mem);
    return r;
}

static int s3_tmpfile(void)
{
    const char *dir = getenv("TMPDIR");
    char *tmpl = NULL;
    if (!dir || !dir[0])
        dir = "/tmp";
    if (asprintf(&tmpl, "%s/tiledbfs-s3.XXXXXX", dir) < 0)
        return -1;
    int fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd >= 0)
        unlink(tmpl);
    free(tmpl);
    return fd;
}

static int s3_write_at(void *ctx, const char *path, uint64_t off,
                       const void *buf, size_t len)
{
    struct s3 *s = ctx;
    uint64_t end;
    if (!tdb_add_ok(off, len, &end) || end > INT64_MAX)
        return TDB_E_NOMEM;
    char *norm = s3_norm(path);
    if (!norm)
        return TDB_E_NOMEM;
    if (!norm[0]) {
        free(norm);
        return TDB_E_INVAL;
    }
    pthread_mutex_lock(&s->lock);
    bool known = s3_pending_find(s, norm) != NULL;
    pthread_mutex_unlock(&s->lock);
    struct s3_pending *np = NULL;
    int r = 0;
    if (!known) {
        /* a new pending object starts as the stored one, if any: a write
         * changes only the bytes it covers, as on a POSIX file */
        np = calloc(1, sizeof *np);
        if (!np || !(np->path = strdup(norm))) {
            free(np);
            free(norm);
            return TDB_E_NOMEM;
        }
        if ((np->fd = s3_tmpfile()) < 0) {
            free(np->path);
            free(np);
            free(norm);
            return TDB_E_IO;
        }
        char *key = s3_key(s, path);
        if (!key) {
            r = TDB_E_NOMEM;
        } else {
            struct s3_call c = {.method = "GET", .key = key, .up_fd = -1,
                                .sink = S3_SINK_FD, .fd = np->fd};
            r = s3_perform(s, &c);
            if (!r)
                r = s3_status(s, &c, NULL);
            if (!r)
                np->size = c.fd_pos;
            else if (r == TDB_E_NOENT)
                r = 0;
            tdb_buf_free(&c.mem);
            free(key);
        }
        if (r) {
            s3_pending_free(np);
            free(norm);
            return r;
        }
    }
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_find(s, norm);
    if (!p && np) {
        np->next = s->pend;
        s->pend = p = np;
        np = NULL;
    }
    if (!p)   /* removed meanwhile by another thread: start anew */
        r = TDB_E_IO;
    for (size_t done = 0; !r && done < len;) {
        ssize_t n = pwrite(p->fd, (const uint8_t *)buf + done, len - done,
                           (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            r = TDB_E_IO;
        else
            done += (size_t)n;
    }
    if (!r && end > p->size)
        p->size = end;
    pthread_mutex_unlock(&s->lock);
    s3_pending_free(np);
    free(norm);
    return r;
}

/* PUTs pending object `norm` as `key` (its own, or a rename's target).
 * @return 0 (also when nothing was pending: *was is then false). */
static int s3_flush(struct s3 *s, const char *norm, const char *key,
                    bool *was)
{
    pthread_mutex_lock(&s->lock);
    struct s3_pending *p = s3_pending_take(s, norm);
    pthread_mutex_unlock(&s->lock);
    *was = p != NULL;
    if (!p)
        return 0;
    int r = s3_put_fd(s, key, p->fd, p->size);
    if (r) {   /* kept for another try */
        pthread_mutex_lock(&s->lock);
        if (s3_pending_find(s, norm)) {
            s3_pending_free(p);
        } else {
            p->next = s->pend;
            s->pend = p;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    s3_pending_free(p);
    return 0;
}

static int s3_sync(void *ctx, const char *path)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path), *key = s3_key(s, path);
    bool was;
    int r = norm && key ? s3_flush(s, norm, key, &was) : TDB_E_NOMEM;
    if (!r && was)
        s3_cache_forget(s, norm);
    free(norm);
    free(key);
    return r;
}

static int s3_mkdir(void *ctx, const char *path)
{
    return 0;   /* a folder is the prefix of its keys */
}

/* DELETE key (S3 answers 204 whether it was there or not). */
static int s3_delete(struct s3 *s, const char *key)
{
    struct s3_call c = {.method = "DELETE", .key = key, .up_fd = -1};
    int r = s3_perform(s, &c);
    if (!r)
        r = s3_status(s, &c, NULL);
    tdb_buf_free(&c.mem);
    return r;
}

/* Server-side copy of key `from` to key `to`. */
static int s3_copy(struct s3 *s, const char *from, const char *to)
{
    char *src = NULL, *enc = tdb_s3_encode(from, true);
    if (!enc || asprintf(&src, "/%s/%s", s->bucket, enc) < 0) {
        free(enc);
        return TDB_E_NOMEM;
    }
    free(enc);
    struct s3_call c = {.method = "PUT", .key = to, .up_fd = -1,
                        .copy_source = src, .sink = S3_SINK_MEM};
    int r = s3_perform(s, &c);
    if (!r)
        r = s3_status(s, &c, NULL);
    /* a copy can fail after its 200 header: the body is then an Error */
    if (!r) {
        struct s3_xml x;
        int xr = s3_xml_parse(&x, &c.mem, NULL);
        if (xr || x.is_error)
            r = TDB_E_IO;
        s3_xml_free(&x);
    }
    tdb_buf_free(&c.mem);
    free(src);
    return r;
}

static int s3_rename(void *ctx, const char *from, const char *to)
{
    struct s3 *s = ctx;
    char *nf = s3_norm(from), *nt = s3_norm(to);
    char *kf = s3_key(s, from), *kt = s3_key(s, to);
    int r = nf && nt && kf && kt ? 0 : TDB_E_NOMEM;
    bool was = false;
    if (!r && !nf[0])
        r = TDB_E_INVAL;
    /* a pending object goes straight to its new name */
    if (!r)
        r = s3_flush(s, nf, kt, &was);
    if (!r && was) {
        r = s3_delete(s, kf);    /* an older stored version, if any */
    } else if (!r) {
        r = s3_copy(s, kf, kt);
        if (!r) {
            r = s3_delete(s, kf);
        } else if (r == TDB_E_NOENT) {
            /* a folder: each key below it, copied then deleted */
            char *kp = NULL;
            struct s3_dent *e = NULL;
            size_t n = 0;
            r = asprintf(&kp, "%s/", kf) < 0 ? TDB_E_NOMEM
                : s3_list_keys(s, kp, false, 0, &e, &n, NULL);
            if (!r && !n)
                r = TDB_E_NOENT;
            for (size_t i = 0; !r && i < n; i++) {
                char *a = NULL, *b = NULL;
                if (asprintf(&a, "%s%s", kp, e[i].name) < 0)
                    a = NULL;
                if (asprintf(&b, "%s/%s", kt, e[i].name) < 0)
                    b = NULL;
                r = a && b ? s3_copy(s, a, b) : TDB_E_NOMEM;
                if (!r)
                    r = s3_delete(s, a);
                free(a);
                free(b);
            }
            if (kp)
                s3_dents_free(e, n);
            free(kp);
        }
    }
    if (nf && nt) {
        s3_cache_forget(s, nf);
        s3_cache_forget(s, nt);
    }
    free(nf);
    free(nt);
    free(kf);
    free(kt);
    return r;
}

static int s3_remove(void *ctx, const char *path)
{
    struct s3 *s = ctx;
    char *norm = s3_norm(path), *key = s3_key(s, path);
    int r = norm && key ? 0 : TDB_E_NOMEM;
    struct s3_pending *p = NULL;
    if (!r) {
        pthread_mutex_lock(&s->lock);
        p = s3_pending_take(s, norm);
        pthread_mutex_unlock(&s->lock);
    }
    uint64_t size;
    if (!r && key[0])
        r = s3_head(s, key, &size);
    if (!r) {
        r = s3_delete(s, key);
    } else if (r == TDB_E_NOENT) {
        /* an object only pending is gone now; a folder with keys is not
         * empty; an empty folder does not exist on S3 */
        int c = s3_has_children(s, key);
        r = c < 0 ? c : c ? TDB_E_IO : p ? 0 : TDB_E_NOENT;
    }
    if (norm)
        s3_cache_forget(s, norm);
    s3_pending_free(p);
    free(norm);
    free(key);
    return r;
}

static void s3_destroy(void *ctx)
{
    struct s3 *s = ctx;
    /* objects written and never synced are stored now (best effort) */
    while (s->pend) {
        struct s3_pending *p = s->pend;
        s->pend = p->next;
        char *key = s3_key(s, p->path);
        if (key)
            s3_put_fd(s, key, p->fd, p->size);
        free(key);
        s3_pending_free(p);
    }
    for (size_t i = 0; i < s->nidle; i++)
        curl_easy_cleanup(s->idle[i]);
    s3_cache_clear(s);
    pthread_mutex_destroy(&s->lock);
    if (s->secret)
        explicit_bzero(s->secret, strlen(s->secret));
    free(s->bucket);
    free(s->prefix);
    free(s->base);
    free(s->host);
    free(s->uri_base);
    free(s->region);
    free(s->key_id);
    free(s->secret);
    free(s->token);
    free(s);
}

static const struct tdb_io_ops io_s3_ops = {
    .read_at = s3_read_at,
    .size = s3_size,
    .list = s3_list,
    .is_dir = s3_is_dir,
    .write_at = s3_write_at,
    .mkdir = s3_mkdir,
    .rename = s3_rename,
    .remove = s3_remove,
    .sync = s3_sync,
    .destroy = s3_destroy,
};

/* ---------------------------------------------------------------- open */

bool tdb_io_is_url(const char *source)
{
    return !strncmp(source, "s3://", 5);
}

/* A bucket name that can be a host name label set (no dots: TLS names). */
static bool s3_vhost_ok(const char *b)
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
static int s3_endpoint(struct s3 *s, const char *endpoint,
                       struct tdb_error *err)
{
    if (!endpoint) {
        if (s3_vhost_ok(s->bucket)) {
            if (asprintf(&s->host, "%s.s3.%s.amazonaws.com", s->bucket,
                         s->region) < 0 ||
                !(s->uri_base = strdup("")))
                return TDB_E_NOMEM;
        } else if (asprintf(&s->host, "s3.%s.amazonaws.com", s->region) < 0 ||
                   asprintf(&s->uri_base, "/%s", s->bucket) < 0) {
            return TDB_E_NOMEM;
        }
        return asprintf(&s->base, "https://%s", s->host) < 0 ? TDB_E_NOMEM : 0;
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

int tdb_io_s3(struct tdb_io *io, const char *url,
              const struct tdb_s3_config *cfg, struct tdb_error *err)
{
    if (!tdb_io_is_url(url))
        return tdb_err(err, TDB_E_INVAL, "%s: not an s3:// URL", url);
    const char *b = url + 5, *slash = strchr(b, '/');
    size_t bl = slash ? (size_t)(slash - b) : strlen(b);
    if (!bl || bl > 255)
        return tdb_err(err, TDB_E_INVAL, "%s: no bucket name", url);
    if ((cfg->access_key == NULL) != (cfg->secret_key == NULL))
        return tdb_err(err, TDB_E_INVAL, "%s: an access key without its "
                       "secret key (or the other way round)", url);
    struct s3 *s = calloc(1, sizeof *s);
    if (!s)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    pthread_mutex_init(&s->lock, NULL);
    int r = 0;
    if (!(s->bucket = strndup(b, bl)) ||
        !(s->prefix = s3_norm(slash ? slash : "")) ||
        !(s->region = strdup(cfg->region && cfg->region[0] ? cfg->region
                                                           : "us-east-1")) ||
        (cfg->access_key && !(s->key_id = strdup(cfg->access_key))) ||
        (cfg->secret_key && !(s->secret = strdup(cfg->secret_key))) ||
        (cfg->session_token && cfg->session_token[0] &&
         !(s->token = strdup(cfg->session_token))))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!r)
        r = s3_endpoint(s, cfg->endpoint && cfg->endpoint[0] ? cfg->endpoint
                                                             : NULL, err);
    if (r) {
        if (r == TDB_E_NOMEM)
            tdb_err(err, r, "out of memory");
        s3_destroy(s);
        return r;
    }
    io->ops = &io_s3_ops;
    io->ctx = s;
    return 0;
}

int tdb_io_open_url(struct tdb_io *io, const char *source,
                    struct tdb_error *err)
{
    if (!tdb_io_is_url(source)) {
        int r = tdb_io_posix(io, source);
        return r ? tdb_err(err, r, "%s: %s", source, tdb_strerror(r)) : 0;
    }
    struct tdb_s3_config cfg;
    int r = tdb_s3_config_load(&cfg, err);
    if (r)
        return r;
    r = tdb_io_s3(io, source, &cfg, err);
    tdb_s3_config_free(&cfg);
    if (r)
        return r;
    /* the bucket answers, and the prefix holds something */
    struct s3 *s = io->ctx;
    char *kp = NULL;
    struct s3_dent *e = NULL;
    size_t n = 0;
    if (asprintf(&kp, "%s%s", s->prefix, s->prefix[0] ? "/" : "") < 0) {
        kp = NULL;
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    } else {
        r = s3_list_keys(s, kp, false, 1, &e, &n, err);
    }
    free(kp);
    if (!r && !n)
        r = tdb_err(err, TDB_E_NOENT, "%s: no objects under this prefix",
                    source);
    s3_dents_free(e, n);
    if (r)
        tdb_io_free(io);
    return r;
}
