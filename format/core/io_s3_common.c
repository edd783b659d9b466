/* io_s3_common.c: what the files of the S3 backend share beneath them
 * all: an object's key and the caches' name of a path, the name of one
 * version of an object in the disk cache, the objects being written, the
 * backend's hash of names, and listing entries. */
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

void tdb_s3_dents_free(struct s3_dent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].name);
        free(e[i].etag);
    }
    free(e);
}
