/* io_s3_common.c: what the files of the S3 backend share beneath them
 * all: an object's key and the caches' name of a path, the name of one
 * version of an object in the disk cache, the objects being written, the
 * backend's hash of names, listing entries, and the region signed for. */
#include "core/core.h"
#include "core/io_s3.h"
#include "core/io_s3_local.h"

#include <stdio.h>
#include <stdlib.h>

/* The key of `path` (relative to the root; leading '/' ignored). */
char *tdb_s3_key(struct s3 *s, const char *path)
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
char *tdb_s3_norm(const char *path)
{
    while (*path == '/')
        path++;
    size_t l = strlen(path);
    while (l && path[l - 1] == '/')
        l--;
    return strndup(path, l);
}

struct s3_pending *tdb_s3_pending_find(struct s3 *s, const char *norm)
{
    for (struct s3_pending *p = s->pend; p; p = p->next)
        if (!strcmp(p->path, norm))
            return p;
    return NULL;
}

bool tdb_s3_pending(struct s3 *s, const char *norm)
{
    pthread_mutex_lock(&s->lock);
    bool p = tdb_s3_pending_find(s, norm) != NULL;
    pthread_mutex_unlock(&s->lock);
    return p;
}

char *tdb_s3_ident(struct s3 *s, const char *key, const char *etag,
                   uint64_t size)
{
    char *id = NULL;
    if (asprintf(&id, "%s/%s/%s\n%s\n%llu", s->host, s->bucket, key, etag,
                 (unsigned long long)size) < 0)
        return NULL;
    return id;
}

uint64_t tdb_s3_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;      /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ------------------------------------------------------------ regions */

int tdb_s3_aws_host(struct s3 *s, const char *region, bool vhost,
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

int tdb_s3_set_region(struct s3 *s, const char *region)
{
    char *r = NULL, *host = NULL, *base = NULL;
    if (s->region_given)
        return -1;
    if (!strcmp(region, s->region))
        return 0;   /* changed by an answer to another call */
    if (s->nretired + 3 > sizeof s->retired / sizeof *s->retired ||
        !(r = strdup(region)))
        return -1;
    if (s->aws && tdb_s3_aws_host(s, region, !s->uri_base[0], &host, &base)) {
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

/* ------------------------------------------------------------ headers */

int tdb_s3_header_add(struct curl_slist **hl, const char *name,
                      const char *value)
{
    char *line = NULL;
    if (asprintf(&line, "%s: %s", name, value) < 0)
        return TDB_E_NOMEM;
    struct curl_slist *nl = curl_slist_append(*hl, line);
    explicit_bzero(line, strlen(line));
    free(line);
    if (!nl)
        return TDB_E_NOMEM;
    *hl = nl;
    return 0;
}
