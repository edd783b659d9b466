/* sign.c: AWS Signature Version 4 (OpenSSL's SHA-256 and HMAC) of
 * S3 requests and of the STS requests of creds.c, and the encodings
 * it signs: paths and query strings. */
#include "core/core.h"
#include "s3/s3.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------- signing */

void tdb_s3_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    tdb_store_hex(md, 32, out);
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

#define S3_ADD(b, s) tdb_buf_append((b), (s), strlen(s))

/* The canonical request's hash (65 bytes) and the signed headers' names
 * (NUL-terminated, in names), from the headers h sorted by name. */
static int s3_canonical(const struct tdb_s3_request *rq,
                        const struct s3_hdr *h, struct tdb_buf *names,
                        char creq_hash[65])
{
    struct tdb_buf creq = {0};
    int r = TDB_E_NOMEM;
    if (S3_ADD(&creq, rq->method) || S3_ADD(&creq, "\n") ||
        S3_ADD(&creq, rq->path) || S3_ADD(&creq, "\n") ||
        S3_ADD(&creq, rq->query) || S3_ADD(&creq, "\n"))
        goto out;
    for (size_t i = 0; i < rq->nhdr; i++)
        if (S3_ADD(&creq, h[i].name) || S3_ADD(&creq, ":") ||
            S3_ADD(&creq, h[i].value) || S3_ADD(&creq, "\n") ||
            (i && S3_ADD(names, ";")) || S3_ADD(names, h[i].name))
            goto out;
    if (tdb_buf_append(names, "", 1) || S3_ADD(&creq, "\n") ||
        S3_ADD(&creq, (char *)names->data) || S3_ADD(&creq, "\n") ||
        S3_ADD(&creq, rq->payload_hash))
        goto out;
    tdb_s3_sha256_hex(creq.data, creq.len, creq_hash);
    r = 0;
out:
    tdb_buf_free(&creq);
    return r;
}

/* The signature (hex) of the string to sign sts, with the signing key
 * of `day`: an HMAC chain over date, region, service, terminator. */
static int s3_signature(const struct tdb_s3_signer *by, const char *service,
                        const char *day, const char *sts, char sighex[65])
{
    char *key = NULL;
    if (asprintf(&key, "AWS4%s", by->secret) < 0)
        return TDB_E_NOMEM;
    unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
    s3_hmac(key, strlen(key), day, k1);
    s3_hmac(k1, 32, by->region, k2);
    s3_hmac(k2, 32, service, k3);
    s3_hmac(k3, 32, "aws4_request", k4);
    s3_hmac(k4, 32, sts, sig);
    tdb_store_hex(sig, 32, sighex);
    explicit_bzero(k1, sizeof k1);
    explicit_bzero(k2, sizeof k2);
    explicit_bzero(k3, sizeof k3);
    explicit_bzero(k4, sizeof k4);
    explicit_bzero(key, strlen(key));
    free(key);
    return 0;
}

int tdb_s3_sigv4_for(char *out, size_t cap, const struct tdb_s3_request *rq,
                     const struct tdb_s3_signer *by, const char *service)
{
    int r = TDB_E_NOMEM;
    size_t nhdr = rq->nhdr;
    struct s3_hdr *h = calloc(nhdr ? nhdr : 1, sizeof *h);
    struct tdb_buf names = {0}, sts = {0};
    if (!h)
        return TDB_E_NOMEM;
    for (size_t i = 0; i < nhdr; i++) {
        if (!(h[i].name = strdup(rq->hdr[i].name)) ||
            !(h[i].value = s3_trim_value(rq->hdr[i].value)))
            goto out;
        for (char *p = h[i].name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    qsort(h, nhdr, sizeof *h, s3_hdr_cmp);
    char creq_hash[65];
    if ((r = s3_canonical(rq, h, &names, creq_hash)))
        goto out;
    /* the string to sign */
    char day[9];
    snprintf(day, sizeof day, "%.8s", rq->amz_date);
    char scope[128];
    if ((size_t)snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", day,
                         by->region, service) >= sizeof scope) {
        r = TDB_E_INVAL;
        goto out;
    }
    r = TDB_E_NOMEM;
    if (S3_ADD(&sts, "AWS4-HMAC-SHA256\n") || S3_ADD(&sts, rq->amz_date) ||
        S3_ADD(&sts, "\n") || S3_ADD(&sts, scope) || S3_ADD(&sts, "\n") ||
        S3_ADD(&sts, creq_hash) || tdb_buf_append(&sts, "", 1))
        goto out;
    char sighex[65];
    if ((r = s3_signature(by, service, day, (const char *)sts.data, sighex)))
        goto out;
    int n = snprintf(out, cap,
                     "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
                     "Signature=%s",
                     by->key_id, scope, (char *)names.data, sighex);
    r = n < 0 || (size_t)n >= cap ? TDB_E_INVAL : 0;
out:
    for (size_t i = 0; i < nhdr; i++) {
        free(h[i].name);
        free(h[i].value);
    }
    free(h);
    tdb_buf_free(&names);
    tdb_buf_free(&sts);
    return r;
}

int tdb_s3_sigv4(char *out, size_t cap, const struct tdb_s3_request *rq,
                 const struct tdb_s3_signer *by)
{
    return tdb_s3_sigv4_for(out, cap, rq, by, "s3");
}

#undef S3_ADD
