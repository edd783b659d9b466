/* creds_answer.c: the answers that carry S3 keys, as the AWS SDKs read
 * them (the JSON of credential_process, of the container endpoint and of
 * instance metadata; the XML of STS; their ISO 8601 times), the key sets
 * made of them, and the zeroed buffers that hold them. */
#include "core/core.h"
#include "s3/creds_internal.h"

#include <ctype.h>
#include <expat.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------ secret buffers */

int tdb_s3_buf_add(struct tdb_s3_buf *b, const void *d, size_t n)
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

void tdb_s3_buf_free(struct tdb_s3_buf *b)
{
    if (b->p) {
        explicit_bzero(b->p, b->cap);
        free(b->p);
    }
    b->p = NULL;
    b->len = b->cap = 0;
}

void tdb_s3_zfree(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

char *tdb_s3_slurp(const char *path, size_t *len, const char **why)
{
    struct tdb_s3_buf b = {.max = 1u << 20};
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
        if (tdb_s3_buf_add(&b, chunk, (size_t)n)) {
            *why = b.over ? "it is larger than 1 MiB" : strerror(ENOMEM);
            goto fail;
        }
    }
    explicit_bzero(chunk, sizeof chunk);
    if (!b.p && tdb_s3_buf_add(&b, "", 0)) {
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
    tdb_s3_buf_free(&b);
    return NULL;
}

/* ----------------------------------------------------------- key sets */

void tdb_s3_keys_free(struct tdb_s3_keys *k)
{
    if (!k)
        return;
    tdb_s3_zfree(k->id);
    tdb_s3_zfree(k->secret);
    tdb_s3_zfree(k->token);
    free(k);
}

bool tdb_s3_header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

int tdb_s3_keys_make(struct tdb_s3_keys **out, const char *id,
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
    if (!tdb_s3_header_safe(id) || (token && !tdb_s3_header_safe(token))) {
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
    r = tdb_s3_keys_make(out, s3c_jstr(o, "AccessKeyId"),
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
    struct tdb_s3_buf text;
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
    if (len > 0 && tdb_s3_buf_add(&x->text, s, (size_t)len))
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
        tdb_s3_zfree(*dst);
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
    tdb_s3_buf_free(&x->text);
    tdb_s3_zfree(x->id);
    tdb_s3_zfree(x->secret);
    tdb_s3_zfree(x->token);
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
        r = tdb_s3_keys_make(out, x.id, x.secret, x.token, expires, why);
    }
    s3c_sts_free(&x);
    return r;
}
