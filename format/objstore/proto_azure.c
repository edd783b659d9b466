/* proto_azure.c: Azure Blob Storage's protocol as the backend speaks it:
 * each try signed with the account's Shared Key (azure/sign.c), or a SAS
 * token's query added to its URL, or neither (a public container); List
 * Blobs pages; a blob written in parts as Put Block of each part then Put
 * Block List, which makes the blob whole at once.  Blocks never listed
 * are the service's to drop (a week later, or at the blob's next write):
 * nothing to abort, no journal. */
#include "core/core.h"
#include "azure/azure.h"
#include "objstore/objstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The version of the Blob service's REST API the requests name. */
#define OS_AZ_VERSION "2021-08-06"
#define OS_AZ_AUTH_MAX 512

/* The keys of a backend (s->pctx). */
struct os_az {
    char *account;
    unsigned char *key;         /* decoded Shared Key, or NULL */
    size_t keylen;
    char *sas;                  /* a SAS token's query, or NULL */
};

static void os_az_free(void *p)
{
    struct os_az *az = p;
    if (!az)
        return;
    if (az->key) {
        explicit_bzero(az->key, az->keylen);
        free(az->key);
    }
    if (az->sas) {
        explicit_bzero(az->sas, strlen(az->sas));
        free(az->sas);
    }
    free(az->account);
    free(az);
}

/* The parameters of canonical query q ("a=1&b=2", as tdb_store_query
 * makes it) decoded into p[] (at most max; their strings in *buf, to
 * free).  @return their number, TDB_E_NOMEM, or TDB_E_INVAL (q is no
 * encoding tdb_store_query makes). */
static int os_az_params(const char *q, struct tdb_store_pair *p, int max,
                        char **buf)
{
    size_t n = q ? strlen(q) : 0;
    *buf = NULL;
    if (!n)
        return 0;
    char *b = malloc(2 * n + 2), *w = b;
    if (!b)
        return TDB_E_NOMEM;
    int np = 0;
    for (const char *s = q; *s && np < max;) {
        const char *amp = strchr(s, '&'), *end = amp ? amp : s + strlen(s);
        const char *eq = memchr(s, '=', (size_t)(end - s));
        const char *ne = eq ? eq : end;
        ssize_t nl = tdb_store_decode(s, (size_t)(ne - s), w), vl = -1;
        p[np].name = w;
        if (nl >= 0) {
            w += nl + 1;
            vl = tdb_store_decode(eq ? eq + 1 : end,
                                  eq ? (size_t)(end - eq - 1) : 0, w);
            p[np].value = w;
            w += vl + 1;
        }
        if (vl < 0) {
            free(b);
            return TDB_E_INVAL;
        }
        np++;
        s = amp ? amp + 1 : end;
    }
    *buf = b;
    return np;
}

static int os_az_sign(struct objstore *s, struct os_call *c)
{
    struct os_az *az = s->pctx;
    char date[32], len[24], auth[OS_AZ_AUTH_MAX];
    tdb_az_date((int64_t)time(NULL), date);
    bool put = !strcmp(c->method, "PUT");
    struct tdb_store_pair hdr[8];
    size_t nh = 0;
    hdr[nh++] = (struct tdb_store_pair){"x-ms-date", date};
    hdr[nh++] = (struct tdb_store_pair){"x-ms-version", OS_AZ_VERSION};
    if (c->range[0])
        hdr[nh++] = (struct tdb_store_pair){"Range", c->range};
    if (put && !c->query)       /* Put Blob: a whole blob */
        hdr[nh++] = (struct tdb_store_pair){"x-ms-blob-type", "BlockBlob"};
    int r = 0;
    for (size_t i = 0; !r && i < nh; i++)
        r = tdb_store_header_add(&c->hl, hdr[i].name, hdr[i].value);
    /* the length libcurl sends is signed too (an empty line for 0) */
    if (put || !strcmp(c->method, "POST")) {
        snprintf(len, sizeof len, "%llu", (unsigned long long)c->up_len);
        hdr[nh++] = (struct tdb_store_pair){"Content-Length", len};
    }
    if (!r && az->key) {
        struct tdb_store_pair q[8];
        char *qbuf = NULL;
        int nq = os_az_params(c->query, q, 8, &qbuf);
        struct tdb_az_request rq = {
            .method = c->method, .path = c->uri, .query = q,
            .nquery = nq > 0 ? (size_t)nq : 0, .hdr = hdr, .nhdr = nh,
        };
        r = nq < 0 ? nq
                   : tdb_az_sign(auth, sizeof auth, &rq, az->account, az->key,
                                 az->keylen);
        free(qbuf);
        if (!r)
            r = tdb_store_header_add(&c->hl, "Authorization", auth);
        explicit_bzero(auth, sizeof auth);
    } else if (!r && az->sas) {
        char *url = NULL;
        if (asprintf(&url, "%s%c%s", c->url, strchr(c->url, '?') ? '&' : '?',
                     az->sas) < 0)
            return TDB_E_NOMEM;
        free(c->url);
        c->url = url;
    }
    if (!r) {
        struct curl_slist *nl = curl_slist_append(c->hl, "Expect:");
        if (!nl)
            return TDB_E_NOMEM;
        c->hl = nl;
    }
    return r;
}

/* A page of List Blobs. */
static char *os_az_list_query(const char *kprefix, bool delim, unsigned max,
                              const char *token)
{
    char maxs[16];
    snprintf(maxs, sizeof maxs, "%u", max ? max : 5000);
    struct tdb_store_pair q[6];
    size_t nq = 0;
    q[nq++] = (struct tdb_store_pair){"restype", "container"};
    q[nq++] = (struct tdb_store_pair){"comp", "list"};
    q[nq++] = (struct tdb_store_pair){"prefix", kprefix};
    q[nq++] = (struct tdb_store_pair){"maxresults", maxs};
    if (delim)
        q[nq++] = (struct tdb_store_pair){"delimiter", "/"};
    if (token)
        q[nq++] = (struct tdb_store_pair){"marker", token};
    return tdb_store_query(q, nq);
}

/* A blob in blocks: the tag that names its blocks, unique to the upload
 * (another upload of the same blob at the same time has its own). */
static int os_az_mp_start(struct objstore *s, const char *key, char **id)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t h = tdb_os_hash(key) ^ ((uint64_t)ts.tv_sec << 30) ^
                 (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40) ^
                 (uint64_t)(uintptr_t)s;
    return asprintf(id, "%016llx", (unsigned long long)h) < 0
               ? (*id = NULL, TDB_E_NOMEM) : 0;
}

/* Put Block n of the upload tagged id. */
static char *os_az_part_query(const char *id, unsigned n)
{
    char bid[80];
    tdb_az_block_id(id, n, bid);
    struct tdb_store_pair q[2] = {{"blockid", bid}, {"comp", "block"}};
    return tdb_store_query(q, 2);
}

/* Put Block List of blocks 1..n: the blob, whole. */
static int os_az_mp_complete(struct objstore *s, const char *key,
                             const char *id, char **etags, unsigned n)
{
    (void)etags;
    struct tdb_buf body = {0};
    int r = tdb_az_block_list(&body, id, n);
    if (r)
        return r;
    struct os_call c = {.method = "PUT", .key = key, .query = "comp=blocklist",
                        .up_fd = -1, .body = body.data, .body_len = body.len,
                        .sink = OS_SINK_MEM};
    r = tdb_os_perform(s, &c);
    if (!r)
        r = tdb_os_status(s, &c, NULL);
    tdb_os_call_clear(&c);
    tdb_buf_free(&body);
    return r == TDB_E_NOENT ? TDB_E_IO : r;
}

const struct os_proto tdb_os_proto_azure = {
    .sign = os_az_sign,
    .list_query = os_az_list_query,
    .parse = tdb_az_xml_parse,
    .mp_start = os_az_mp_start,
    .part_query = os_az_part_query,
    .mp_complete = os_az_mp_complete,
    .free = os_az_free,
};

int tdb_os_azure_keys(struct objstore *s, struct tdb_az_config *cfg)
{
    struct os_az *az = calloc(1, sizeof *az);
    if (!az)
        return TDB_E_NOMEM;
    az->account = cfg->account;
    az->key = cfg->key;
    az->keylen = cfg->keylen;
    az->sas = cfg->sas;
    cfg->account = NULL;
    cfg->key = NULL;
    cfg->keylen = 0;
    cfg->sas = NULL;
    s->pctx = az;
    return 0;
}
