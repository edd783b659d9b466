/* io_mem.c: the in-memory backend, for tests: files are created with
 * write_at, folders are implied by their paths or made by mkdir. */
#include "core/core.h"

#include <pthread.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- memory */

struct io_mem_file {
    char *path;
    uint8_t *data;
    size_t size;
};

struct io_mem {
    pthread_mutex_t lock;
    struct io_mem_file *f;
    size_t n;
    size_t ndirs;
    char **dirs;
};

static const char *io_mem_norm(const char *path)
{
    while (path[0] == '/')
        path++;
    return path;
}

static struct io_mem_file *io_mem_find(struct io_mem *m, const char *path)
{
    path = io_mem_norm(path);
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->f[i].path, path))
            return &m->f[i];
    return NULL;
}

static int io_mem_read_at(void *ctx, const char *path, uint64_t off,
                          void *buf, size_t len)
{
    struct io_mem *m = ctx;
    pthread_mutex_lock(&m->lock);
    struct io_mem_file *f = io_mem_find(m, path);
    int r = !f ? TDB_E_NOENT
            : off > f->size || len > f->size - off ? TDB_E_IO
                                                   : 0;
    if (!r && len)
        memcpy(buf, f->data + off, len);
    pthread_mutex_unlock(&m->lock);
    return r;
}

static int io_mem_size(void *ctx, const char *path, uint64_t *size)
{
    struct io_mem *m = ctx;
    pthread_mutex_lock(&m->lock);
    struct io_mem_file *f = io_mem_find(m, path);
    if (f)
        *size = f->size;
    pthread_mutex_unlock(&m->lock);
    return f ? 0 : TDB_E_NOENT;
}

/* Is `dir` a folder: an explicit one, or a prefix of some file's path? */
static bool io_mem_has_dir(struct io_mem *m, const char *dir)
{
    size_t l = strlen(dir);
    if (!l)
        return true;
    for (size_t i = 0; i < m->ndirs; i++)
        if (!strcmp(m->dirs[i], dir))
            return true;
    for (size_t i = 0; i < m->n; i++)
        if (!strncmp(m->f[i].path, dir, l) && m->f[i].path[l] == '/')
            return true;
    for (size_t i = 0; i < m->ndirs; i++)
        if (!strncmp(m->dirs[i], dir, l) && m->dirs[i][l] == '/')
            return true;
    return false;
}

static int io_mem_is_dir(void *ctx, const char *path, bool *is_dir)
{
    struct io_mem *m = ctx;
    path = io_mem_norm(path);
    pthread_mutex_lock(&m->lock);
    int r = 0;
    if (io_mem_find(m, path))
        *is_dir = false;
    else if (io_mem_has_dir(m, path))
        *is_dir = true;
    else
        r = TDB_E_NOENT;
    pthread_mutex_unlock(&m->lock);
    return r;
}

/* A listing under way: the folder, the names told so far, whom to tell. */
struct io_mem_listing {
    const char *dir;
    struct tdb_names seen;
    tdb_io_list_fn fn;
    void *arg;
};

/* Calls the listing's fn once for each distinct child of its folder among
 * `paths` (n of them, `stride` bytes apart), as folders when dirs_only. */
static int io_mem_children(struct io_mem_listing *ls, char **paths, size_t n,
                           size_t stride, bool dirs_only)
{
    const char *dir = ls->dir;
    struct tdb_names *seen = &ls->seen;
    size_t l = strlen(dir);
    for (size_t i = 0; i < n; i++) {
        const char *p = *(char **)((char *)paths + i * stride);
        const char *rest;
        if (l) {
            if (strncmp(p, dir, l) || p[l] != '/')
                continue;
            rest = p + l + 1;
        } else {
            rest = p;
        }
        const char *slash = strchr(rest, '/');
        size_t cl = slash ? (size_t)(slash - rest) : strlen(rest);
        if (!cl)
            continue;
        char name[TDB_MAX_NAME + 1];
        if (cl > TDB_MAX_NAME)
            continue;
        memcpy(name, rest, cl);
        name[cl] = 0;
        bool dup = false;
        for (size_t k = 0; k < seen->n && !dup; k++)
            dup = !strcmp(seen->v[k], name);
        if (dup)
            continue;
        char **nv = realloc(seen->v, (seen->n + 1) * sizeof *nv);
        if (!nv)
            return TDB_E_NOMEM;
        seen->v = nv;
        if (!(seen->v[seen->n] = strdup(name)))
            return TDB_E_NOMEM;
        seen->n++;
        struct tdb_dirent ent = {name, slash != NULL || dirs_only};
        int r = ls->fn(ls->arg, &ent);
        if (r)
            return r;
    }
    return 0;
}

static int io_mem_list(void *ctx, const char *path, tdb_io_list_fn fn,
                       void *arg)
{
    struct io_mem *m = ctx;
    path = io_mem_norm(path);
    pthread_mutex_lock(&m->lock);
    int r;
    struct io_mem_listing ls = {.dir = path, .fn = fn, .arg = arg};
    if (!io_mem_has_dir(m, path) || io_mem_find(m, path)) {
        r = TDB_E_NOENT;
    } else {
        r = m->n ? io_mem_children(&ls, &m->f[0].path, m->n, sizeof *m->f,
                                   false)
                 : 0;
        if (!r && m->ndirs)
            r = io_mem_children(&ls, m->dirs, m->ndirs, sizeof *m->dirs,
                                true);
    }
    pthread_mutex_unlock(&m->lock);
    tdb_names_free(&ls.seen);
    return r;
}

static int io_mem_write_at(void *ctx, const char *path, uint64_t off,
                           const void *buf, size_t len)
{
    struct io_mem *m = ctx;
    path = io_mem_norm(path);
    uint64_t end;
    if (!tdb_add_ok(off, len, &end) || end > SIZE_MAX)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&m->lock);
    int r = 0;
    struct io_mem_file *f = io_mem_find(m, path);
    if (!f) {
        struct io_mem_file *nf = realloc(m->f, (m->n + 1) * sizeof *nf);
        if (!nf) {
            r = TDB_E_NOMEM;
            goto out;
        }
        m->f = nf;
        f = &m->f[m->n];
        memset(f, 0, sizeof *f);
        if (!(f->path = strdup(path))) {
            r = TDB_E_NOMEM;
            goto out;
        }
        m->n++;
    }
    if (end > f->size) {
        uint8_t *d = realloc(f->data, end ? (size_t)end : 1);
        if (!d) {
            r = TDB_E_NOMEM;
            goto out;
        }
        memset(d + f->size, 0, (size_t)end - f->size);
        f->data = d;
        f->size = (size_t)end;
    }
    if (len)
        memcpy(f->data + off, buf, len);
out:
    pthread_mutex_unlock(&m->lock);
    return r;
}

static int io_mem_mkdir(void *ctx, const char *path)
{
    struct io_mem *m = ctx;
    path = io_mem_norm(path);
    pthread_mutex_lock(&m->lock);
    int r = 0;
    if (!io_mem_has_dir(m, path)) {
        char **nd = realloc(m->dirs, (m->ndirs + 1) * sizeof *nd);
        if (!nd || !(nd[m->ndirs] = strdup(path)))
            r = TDB_E_NOMEM;
        else
            m->ndirs++;
        if (nd)
            m->dirs = nd;
    }
    pthread_mutex_unlock(&m->lock);
    return r;
}

/* Renames a file, or every file and folder under a folder. */
static int io_mem_rename(void *ctx, const char *from, const char *to)
{
    struct io_mem *m = ctx;
    from = io_mem_norm(from);
    to = io_mem_norm(to);
    size_t lf = strlen(from);
    pthread_mutex_lock(&m->lock);
    int r = TDB_E_NOENT;
    for (size_t pass = 0; pass < 2; pass++) {
        size_t n = pass ? m->ndirs : m->n;
        for (size_t i = 0; i < n; i++) {
            char **p = pass ? &m->dirs[i] : &m->f[i].path;
            if (strncmp(*p, from, lf) || ((*p)[lf] && (*p)[lf] != '/'))
                continue;
            char *np = malloc(strlen(to) + strlen(*p + lf) + 1);
            if (!np) {
                r = TDB_E_NOMEM;
                goto out;
            }
            strcpy(np, to);
            strcat(np, *p + lf);
            free(*p);
            *p = np;
            r = 0;
        }
    }
out:
    pthread_mutex_unlock(&m->lock);
    return r;
}

static int io_mem_remove(void *ctx, const char *path)
{
    struct io_mem *m = ctx;
    path = io_mem_norm(path);
    pthread_mutex_lock(&m->lock);
    int r = TDB_E_NOENT;
    for (size_t i = 0; i < m->n; i++) {
        if (!strcmp(m->f[i].path, path)) {
            free(m->f[i].path);
            free(m->f[i].data);
            m->f[i] = m->f[--m->n];
            r = 0;
            break;
        }
    }
    for (size_t i = 0; r && i < m->ndirs; i++) {
        if (!strcmp(m->dirs[i], path)) {
            free(m->dirs[i]);
            m->dirs[i] = m->dirs[--m->ndirs];
            r = 0;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return r;
}

static int io_mem_sync(void *ctx, const char *path)
{
    return 0;
}

static void io_mem_destroy(void *ctx)
{
    struct io_mem *m = ctx;
    for (size_t i = 0; i < m->n; i++) {
        free(m->f[i].path);
        free(m->f[i].data);
    }
    for (size_t i = 0; i < m->ndirs; i++)
        free(m->dirs[i]);
    free(m->dirs);
    free(m->f);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static const struct tdb_io_ops io_mem_ops = {
    .read_at = io_mem_read_at,
    .size = io_mem_size,
    .list = io_mem_list,
    .is_dir = io_mem_is_dir,
    .write_at = io_mem_write_at,
    .mkdir = io_mem_mkdir,
    .rename = io_mem_rename,
    .remove = io_mem_remove,
    .sync = io_mem_sync,
    .destroy = io_mem_destroy,
};

int tdb_io_mem(struct tdb_io *io)
{
    struct io_mem *m = calloc(1, sizeof *m);
    if (!m)
        return TDB_E_NOMEM;
    pthread_mutex_init(&m->lock, NULL);
    io->ops = &io_mem_ops;
    io->ctx = m;
    return 0;
}
