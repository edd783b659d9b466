/* sign.c: Azure Storage's Shared Key authorization of Blob service
 * requests (the string to sign, HMAC-SHA256 and base64 of OpenSSL), its
 * account keys and the dates it signs. */
#include "azure/azure.h"

#include <ctype.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#define AZ_ADD(b, s) tdb_buf_append((b), (s), strlen(s))

/* The standard headers of the string to sign, in its order (after the
 * verb). */
static const char *const az_std[] = {
    "Content-Encoding", "Content-Language", "Content-Length",
    "Content-MD5", "Content-Type", "Date", "If-Modified-Since",
    "If-Match", "If-None-Match", "If-Unmodified-Since", "Range",
};
#define AZ_NSTD (sizeof az_std / sizeof *az_std)
#define AZ_STD_LENGTH 2
#define AZ_STD_DATE 5

static bool az_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Appends v to b without its surrounding blanks; with fold, each run of
 * blanks inside it as one space. */
static int az_put_value(struct tdb_buf *b, const char *v, bool fold)
{
    if (!v)
        return 0;
    while (az_blank(*v))
        v++;
    size_t n = strlen(v);
    while (n && az_blank(v[n - 1]))
        n--;
    if (!fold)
        return tdb_buf_append(b, v, n);
    for (size_t i = 0; i < n; i++) {
        if (az_blank(v[i])) {
            while (az_blank(v[i + 1]))
                i++;
            if (tdb_buf_append(b, " ", 1))
                return TDB_E_NOMEM;
        } else if (tdb_buf_append(b, v + i, 1)) {
            return TDB_E_NOMEM;
        }
    }
    return 0;
}

/* One name and value to sort: an x-ms-* header or a query parameter;
 * `at` keeps a header's place among those of the same name. */
struct az_kv {
    char *name;           /* lower case */
    const char *value;
    size_t at;
};

static int az_kv_by_place(const void *a, const void *b)
{
    const struct az_kv *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static int az_kv_by_value(const void *a, const void *b)
{
    const struct az_kv *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

static char *az_lower(const char *s)
{
    char *l = strdup(s ? s : "");
    for (char *p = l; p && *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return l;
}

/* The standard headers' lines. */
static int az_std_lines(struct tdb_buf *b, const struct tdb_az_request *rq)
{
    bool ms_date = false;
    for (size_t i = 0; i < rq->nhdr; i++)
        ms_date |= !strcasecmp(rq->hdr[i].name, "x-ms-date");
    for (size_t s = 0; s < AZ_NSTD; s++) {
        size_t start = b->len;
        bool any = false;
        for (size_t i = 0; i < rq->nhdr && !(s == AZ_STD_DATE && ms_date);
             i++) {
            if (strcasecmp(rq->hdr[i].name, az_std[s]))
                continue;
            if ((any && tdb_buf_append(b, ",", 1)) ||
                az_put_value(b, rq->hdr[i].value, false))
                return TDB_E_NOMEM;
            any = true;
        }
        /* since version 2015-02-21 a zero length signs as nothing */
        if (s == AZ_STD_LENGTH && b->len - start == 1 && b->data[start] == '0')
            b->len = start;
        if (tdb_buf_append(b, "\n", 1))
            return TDB_E_NOMEM;
    }
    return 0;
}

/* The CanonicalizedHeaders: the x-ms-* headers sorted by name. */
static int az_ms_lines(struct tdb_buf *b, const struct tdb_az_request *rq)
{
    struct az_kv *kv = calloc(rq->nhdr ? rq->nhdr : 1, sizeof *kv);
    size_t n = 0;
    int r = TDB_E_NOMEM;
    if (!kv)
        return r;
    for (size_t i = 0; i < rq->nhdr; i++) {
        if (strncasecmp(rq->hdr[i].name, "x-ms-", 5))
            continue;
        if (!(kv[n].name = az_lower(rq->hdr[i].name)))
            goto out;
        kv[n].value = rq->hdr[i].value;
        kv[n].at = n;
        n++;
    }
    qsort(kv, n, sizeof *kv, az_kv_by_place);
    for (size_t i = 0; i < n; i++) {
        bool same = i && !strcmp(kv[i].name, kv[i - 1].name);
        if (same ? tdb_buf_append(b, ",", 1)
                 : (AZ_ADD(b, kv[i].name) || tdb_buf_append(b, ":", 1)))
            goto out;
        if (az_put_value(b, kv[i].value, true))
            goto out;
        if ((i + 1 == n || strcmp(kv[i].name, kv[i + 1].name)) &&
            tdb_buf_append(b, "\n", 1))
            goto out;
    }
    r = 0;
out:
    for (size_t i = 0; i < n; i++)
        free(kv[i].name);
    free(kv);
    return r;
}

/* The CanonicalizedResource: account, path, the decoded query. */
static int az_resource(struct tdb_buf *b, const struct tdb_az_request *rq,
                       const char *account)
{
    const char *path = rq->path && rq->path[0] ? rq->path : "/";
    if (tdb_buf_append(b, "/", 1) || AZ_ADD(b, account) || AZ_ADD(b, path))
        return TDB_E_NOMEM;
    struct az_kv *kv = calloc(rq->nquery ? rq->nquery : 1, sizeof *kv);
    size_t n = 0;
    int r = TDB_E_NOMEM;
    if (!kv)
        return r;
    for (; n < rq->nquery; n++) {
        if (!(kv[n].name = az_lower(rq->query[n].name)))
            goto out;
        kv[n].value = rq->query[n].value ? rq->query[n].value : "";
    }
    qsort(kv, n, sizeof *kv, az_kv_by_value);
    for (size_t i = 0; i < n; i++) {
        bool same = i && !strcmp(kv[i].name, kv[i - 1].name);
        if (same ? tdb_buf_append(b, ",", 1)
                 : (tdb_buf_append(b, "\n", 1) || AZ_ADD(b, kv[i].name) ||
                    tdb_buf_append(b, ":", 1)))
            goto out;
        if (AZ_ADD(b, kv[i].value))
            goto out;
    }
    r = 0;
out:
    for (size_t i = 0; i < n; i++)
        free(kv[i].name);
    free(kv);
    return r;
}

char *tdb_az_string_to_sign(const struct tdb_az_request *rq,
                            const char *account)
{
    struct tdb_buf b = {0};
    if (AZ_ADD(&b, rq->method ? rq->method : "") ||
        tdb_buf_append(&b, "\n", 1) || az_std_lines(&b, rq) ||
        az_ms_lines(&b, rq) || az_resource(&b, rq, account ? account : "") ||
        tdb_buf_append(&b, "", 1)) {
        tdb_buf_free(&b);
        return NULL;
    }
    return (char *)b.data;
}

void tdb_az_base64(const unsigned char *d, size_t n, char *out)
{
    /* EVP_EncodeBlock takes an int: encode in slices of a multiple of 3 */
    const size_t slice = 3u << 20;
    for (size_t i = 0; i < n; i += slice) {
        size_t m = n - i < slice ? n - i : slice;
        out += EVP_EncodeBlock((unsigned char *)out, d + i, (int)m);
    }
    *out = 0;
}

int tdb_az_sign(char *out, size_t cap, const struct tdb_az_request *rq,
                const char *account, const unsigned char *key, size_t keylen)
{
    if (!key || !keylen || keylen > INT_MAX)
        return TDB_E_INVAL;
    char *sts = tdb_az_string_to_sign(rq, account);
    if (!sts)
        return TDB_E_NOMEM;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    bool ok = HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)sts,
                   strlen(sts), mac, &maclen) != NULL;
    free(sts);
    if (!ok)
        return TDB_E_NOMEM;
    char sig[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
    tdb_az_base64(mac, maclen, sig);
    explicit_bzero(mac, sizeof mac);
    int n = snprintf(out, cap, "SharedKey %s:%s", account, sig);
    if (n < 0 || (size_t)n >= cap) {
        if (cap)
            out[0] = 0;
        return TDB_E_INVAL;
    }
    return 0;
}

static bool az_b64_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '+' || c == '/';
}

int tdb_az_key_decode(const char *b64, unsigned char **key, size_t *len)
{
    *key = NULL;
    *len = 0;
    while (az_blank(*b64))
        b64++;
    size_t n = strlen(b64);
    while (n && az_blank(b64[n - 1]))
        n--;
    if (n == 0 || n % 4 || n > INT_MAX)
        return TDB_E_INVAL;
    size_t pad = b64[n - 1] == '=' ? (b64[n - 2] == '=' ? 2 : 1) : 0;
    for (size_t i = 0; i < n - pad; i++)
        if (!az_b64_char(b64[i]))
            return TDB_E_INVAL;
    unsigned char *k = malloc(n / 4 * 3 + 1);
    if (!k)
        return TDB_E_NOMEM;
    /* EVP_DecodeBlock counts the padding's bytes as decoded zeros */
    int got = EVP_DecodeBlock(k, (const unsigned char *)b64, (int)n);
    if (got < 0 || (size_t)got != n / 4 * 3 || (size_t)got <= pad) {
        explicit_bzero(k, n / 4 * 3 + 1);
        free(k);
        return TDB_E_INVAL;
    }
    *key = k;
    *len = (size_t)got - pad;
    return 0;
}

void tdb_az_date(int64_t t, char out[32])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed",
                                    "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};
    time_t tt = (time_t)t;
    struct tm tm;
    out[0] = 0;
    if ((int64_t)tt != t || !gmtime_r(&tt, &tm) || tm.tm_year < -1900 ||
        tm.tm_year > 9999 - 1900)
        return;
    snprintf(out, 32, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday],
             tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
             tm.tm_min, tm.tm_sec);
}

#undef AZ_ADD
