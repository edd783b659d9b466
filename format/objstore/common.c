/* common.c: what the files of the S3 backend share beneath them
 * all: an object's key and the caches' name of a path, the name of one
 * version of an object in the disk cache, the objects being written, the
 * backend's hash of names, listing entries, and the region signed for. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <stdio.h>
#include <stdlib.h>

/* The key of `path` (relative to the root; leading '/' ignored). */
char *tdb_os_key(struct objstore *s, const char *path)
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
char *tdb_os_norm(const char *path)
{
    while (*path == '/')
        path++;
    size_t l = strlen(path);
    while (l && path[l - 1] == '/')
        l--;
    return strndup(path, l);
}

struct os_pending *tdb_os_pending_find(struct objstore *s, const char *norm)
{
    for (struct os_pending *p = s->pend; p; p = p->next)
        if (!strcmp(p->path, norm))
            return p;
    return NULL;
}

bool tdb_os_pending(struct objstore *s, const char *norm)
{
    pthread_mutex_lock(&s->lock);
    bool p = tdb_os_pending_find(s, norm) != NULL;
    pthread_mutex_unlock(&s->lock);
    return p;
}

char *tdb_os_ident(struct objstore *s, const char *key, const char *etag,
                   uint64_t size)
{
    char *id = NULL;
    if (asprintf(&id, "%s/%s/%s\n%s\n%llu", s->host, s->bucket, key, etag,
                 (unsigned long long)size) < 0)
        return NULL;
    return id;
}

uint64_t tdb_os_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;      /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ------------------------------------------------------------ regions */

int tdb_os_aws_host(struct objstore *s, const char *region, bool vhost,
                    char **host, char **base)
{
    *base = NULL;
    if ((vhost ? asprintf(host, "%s.s3.%s.amazonaws.com", s->bucket, region)
               : asprintf(host, "s3.%s.amazonaws.com", region)) < 0) {
        *host = NULL;
        return TDB_E_NOMEM;
    }
    if (asprintf(base, "https://%s", *host) < 0) {
        free(*host);
        *host = *base = NULL;
        return TDB_E_NOMEM;
    }
    return 0;
}

int tdb_os_set_region(struct objstore *s, const char *region)
{
    char *r = NULL, *host = NULL, *base = NULL;
    if (s->region_given)
        return -1;
    if (!strcmp(region, s->region))
        return 0;   /* changed by an answer to another call */
    if (s->nretired + 3 > sizeof s->retired / sizeof *s->retired ||
        !(r = strdup(region)))
        return -1;
    if (s->aws && tdb_os_aws_host(s, region, !s->uri_base[0], &host, &base)) {
        free(r);
        return -1;
    }
    /* the strings replaced stay until the backend goes: another thread
     * may be reading them */
    s->retired[s->nretired++] = s->region;
    s->region = r;
    if (host) {
        s->retired[s->nretired++] = s->host;
        s->retired[s->nretired++] = s->base;
        s->host = host;
        s->base = base;
    }
    return 0;
}

/* -------------------------------------------------------------- errors */

/* The TDB_E_* code of an answer: 2xx 0, 404 TDB_E_NOENT, else TDB_E_IO;
 * with err, a message naming the key, the status and S3's error code. */
int tdb_os_status(struct objstore *s, struct os_call *c, struct tdb_error *err)
{
    if (c->cc != CURLE_OK)
        return tdb_err(err, TDB_E_IO, "%s://%s/%s: %s: %s", s->scheme,
                       s->bucket,
                       c->key ? c->key : "", curl_easy_strerror(c->cc),
                       c->curl_msg);
    if (c->status >= 200 && c->status < 300)
        return 0;
    int code = c->status == 404 ? TDB_E_NOENT : TDB_E_IO;
    if (!err)
        return code;
    struct tdb_store_answer x;
    s->proto->parse(&x, &c->mem, NULL);
    tdb_err(err, code, "%s://%s/%s: %s %s: HTTP %ld%s%s%s%s", s->scheme,
            s->bucket,
            c->key ? c->key : "", c->method, c->key ? "" : "(bucket)",
            c->status, x.code ? " " : "", x.code ? x.code : "",
            x.message ? ": " : "", x.message ? x.message : "");
    tdb_store_answer_free(&x);
    return code;
}
