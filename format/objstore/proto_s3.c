/* proto_s3.c: S3's protocol as the backend speaks it: each try signed
 * with AWS Signature Version 4 (s3/sign.c) by the keys current then
 * (s3/creds.c), a try tried again after the keys' renewal or for the
 * bucket's own region, ListObjectsV2 pages, and the multipart uploads'
 * CreateMultipartUpload, UploadPart, CompleteMultipartUpload and
 * AbortMultipartUpload.  Google Cloud Storage's XML API speaks it too. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define OS_S3_AUTH_MAX 1024

/* The signed headers of one try of c into c->hl.  @return 0 or a TDB_E_*
 * code. */
static int os_s3_sign(struct objstore *s, struct os_call *c)
{
    char date[32], auth[OS_S3_AUTH_MAX];
    time_t now = (time_t)(tdb_now_ms() / 1000);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);

    struct tdb_store_pair hdr[8];
    size_t nh = 0;
    hdr[nh++] = (struct tdb_store_pair){"host", s->host};
    hdr[nh++] = (struct tdb_store_pair){"x-amz-date", date};
    hdr[nh++] = (struct tdb_store_pair){"x-amz-content-sha256", c->hash};
    if (c->range[0])
        hdr[nh++] = (struct tdb_store_pair){"range", c->range};
    if (c->copy_source)
        hdr[nh++] = (struct tdb_store_pair){"x-amz-copy-source", c->copy_source};
    if (c->copy_range)
        hdr[nh++] = (struct tdb_store_pair){"x-amz-copy-source-range",
                                         c->copy_range};
    /* the current keys, held while they sign (never waiting: a renewal
     * runs on a thread of its own) */
    struct tdb_s3_keys *k = tdb_s3_creds_hold(s->creds);
    if (k && k->token)
        hdr[nh++] = (struct tdb_store_pair){"x-amz-security-token", k->token};
    int r = 0;
    for (size_t i = 0; !r && i < nh; i++)
        r = tdb_store_header_add(&c->hl, hdr[i].name, hdr[i].value);
    if (!r && k) {
        struct tdb_s3_request rq = {
            .method = c->method, .path = c->uri,
            .query = c->query ? c->query : "", .hdr = hdr, .nhdr = nh,
            .payload_hash = c->hash, .amz_date = date,
        };
        struct tdb_s3_signer by = {.region = s->region, .key_id = k->id,
                                   .secret = k->secret};
        r = tdb_s3_sigv4(auth, sizeof auth, &rq, &by);
        if (!r)
            r = tdb_store_header_add(&c->hl, "Authorization", auth);
        explicit_bzero(auth, sizeof auth);
        c->keys_gen = k->gen;
    }
    tdb_s3_creds_drop(s->creds, k);
    if (!r) {
        struct curl_slist *nl = curl_slist_append(c->hl, "Expect:");
        if (!nl)
            return TDB_E_NOMEM;
        c->hl = nl;
    }
    return r;
}

/* After a try of c ended: again when S3 refused keys that were renewed
 * since (or are being renewed), or when the bucket lives in another
 * region than the one signed for (signed again for the region the answer
 * names, kept for the backend). */
static bool os_s3_again(struct objstore *s, struct os_call *c, uint64_t now,
                        uint64_t *wait)
{
    struct tdb_s3_try t = {.status = c->cc == CURLE_OK ? c->status : 0,
                           .body = &c->mem, .keys_gen = c->keys_gen,
                           .deadline = c->deadline, .renewed = &c->renewed};
    if (tdb_s3_creds_retry(s->creds, &t, now, wait))
        return true;
    if (!c->failed && c->cc == CURLE_OK &&
        (c->status == 301 || c->status == 400) && c->region[0] &&
        !c->redirected && tdb_os_set_region(s, c->region) == 0) {
        c->redirected = true;
        c->tries--;
        *wait = 0;
        return true;
    }
    return false;
}

/* The query of one page of a listing of kprefix (token: the page after
 * the one that gave it; NULL: the first).  @return a new string or NULL. */
static char *os_s3_list_query(const char *kprefix, bool delim, unsigned max,
                              const char *token)
{
    char maxs[16];
    snprintf(maxs, sizeof maxs, "%u", max ? max : 1000);
    struct tdb_store_pair q[5];
    size_t nq = 0;
    q[nq++] = (struct tdb_store_pair){"list-type", "2"};
    q[nq++] = (struct tdb_store_pair){"prefix", kprefix};
    q[nq++] = (struct tdb_store_pair){"max-keys", maxs};
    if (delim)
        q[nq++] = (struct tdb_store_pair){"delimiter", "/"};
    if (token)
        q[nq++] = (struct tdb_store_pair){"continuation-token", token};
    return tdb_store_query(q, nq);
}

/* "NAME=VALUE" of upload id (and part n when n > 0), canonical. */
static char *os_s3_upload_query(const char *id, unsigned n)
{
    char num[16];
    snprintf(num, sizeof num, "%u", n);
    struct tdb_store_pair p[2] = {{"partNumber", num}, {"uploadId", id}};
    return n ? tdb_store_query(p, 2) : tdb_store_query(p + 1, 1);
}


/* AbortMultipartUpload.  @return 1 when the upload is gone (aborted, or
 * not known to the store: 404, or a store that cannot abort: another
 * 4xx but 403), 0 when it may still be there. */
static int os_s3_abort(struct objstore *s, const char *key, const char *id)
{
    char *q = os_s3_upload_query(id, 0);
    if (!q)
        return 0;
    struct os_call c = {.method = "DELETE", .key = key, .query = q,
                        .up_fd = -1};
    int r = tdb_os_perform(s, &c);
    int gone = !r && c.cc == CURLE_OK &&
               ((c.status >= 200 && c.status < 300) ||
                (c.status >= 400 && c.status < 500 && c.status != 403 &&
                 c.status != 408 && c.status != 429));
    tdb_os_call_clear(&c);
    free(q);
    return gone;
}

/* The CompleteMultipartUpload body of n parts. */
static char *os_s3_complete_body(char **etags, unsigned n)
{
    struct tdb_buf b = {0};
    char line[64];
    int r = tdb_buf_append(&b, "<CompleteMultipartUpload>", 25);
    for (unsigned i = 0; !r && i < n; i++) {
        snprintf(line, sizeof line, "<Part><PartNumber>%u</PartNumber><ETag>",
                 i + 1);
        /* an ETag is printable ASCII (header.h); '&' and '<' would
         * need escaping, and no store sends them */
        r = strpbrk(etags[i], "&<>") ? TDB_E_IO
            : tdb_buf_append(&b, line, strlen(line)) ? TDB_E_NOMEM
            : tdb_buf_append(&b, etags[i], strlen(etags[i])) ? TDB_E_NOMEM
            : tdb_buf_append(&b, "</ETag></Part>", 14);
    }
    if (!r)
        r = tdb_buf_append(&b, "</CompleteMultipartUpload>", 27);
    if (r) {
        tdb_buf_free(&b);
        return NULL;
    }
    return (char *)b.data;
}


/* POST key?QUERY with body (NULL: none): tdb_os_ask. */
static int os_s3_post(struct objstore *s, const char *key, const char *query,
                   const char *body, struct tdb_store_answer *x)
{
    struct os_call c = {.method = "POST", .key = key, .query = query,
                        .up_fd = -1, .sink = OS_SINK_MEM,
                        .body = (const uint8_t *)body,
                        .body_len = body ? strlen(body) : 0};
    return tdb_os_ask(s, &c, x);
}


/* CreateMultipartUpload: *id the upload's. */
static int os_s3_mp_start(struct objstore *s, const char *key, char **id)
{
    struct tdb_store_answer x;
    int r = os_s3_post(s, key, "uploads=", NULL, &x);
    if (!r && !(x.upload_id && x.upload_id[0]))
        r = TDB_E_IO;
    if (!r) {
        *id = x.upload_id;
        x.upload_id = NULL;
    }
    tdb_store_answer_free(&x);
    return r;
}

/* CompleteMultipartUpload of parts 1..n (their ETags). */
static int os_s3_mp_complete(struct objstore *s, const char *key,
                             const char *id, char **etags, unsigned n)
{
    char *body = os_s3_complete_body(etags, n);
    char *q = os_s3_upload_query(id, 0);
    int r = body && q ? os_s3_post(s, key, q, body, NULL) : TDB_E_NOMEM;
    free(body);
    free(q);
    return r;
}

const struct os_proto tdb_os_proto_s3 = {
    .sign = os_s3_sign,
    .again = os_s3_again,
    .hash_payload = true,
    .bucket_slash = true,
    .list_query = os_s3_list_query,
    .parse = tdb_s3_xml_parse,
    .mp_start = os_s3_mp_start,
    .part_query = os_s3_upload_query,
    .part_etag = true,
    .mp_complete = os_s3_mp_complete,
    .mp_abort = os_s3_abort,
    .copy = true,
};
