/* io.c: the one I/O interface of the engine: the helpers every module
 * reads through (whole files, sizes, sorted listings, publication by
 * rename), tdb_io_free, and what the backends share (io_local.h).  The
 * backends: io_posix.c, io_nofollow.c, io_mem.c, io_wrap.c, io_s3.c. */
#include "core/core.h"
#include "core/io_local.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* ----------------------------------------------------------------- paths */

char *tdb_path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    while (la > 0 && a[la - 1] == '/' && la > 1)
        la--;
    while (lb > 0 && b[0] == '/') {
        b++;
        lb--;
    }
    char *s = malloc(la + lb + 2);
    if (!s)
        return NULL;
    memcpy(s, a, la);
    size_t n = la;
    if (la && lb && a[la - 1] != '/')
        s[n++] = '/';
    memcpy(s + n, b, lb);
    s[n + lb] = 0;
    return s;
}

/* ------------------------------------------------- kept-open descriptors */

void tdb_io_fdcache_init(struct tdb_io_fdcache *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
}

static void io_fd_close(struct tdb_io_fd *f)
{
    close(f->fd);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* An open descriptor of `p` for reading: *slot is its cache slot (NULL:
 * not cached, the caller closes it).  @return the fd or a TDB_E_* code
 * (open's). */
static int io_fd_get(struct tdb_io_fdcache *c, const char *p,
                     tdb_io_open_fn open_fn, void *ctx,
                     struct tdb_io_fd **slot)
{
    *slot = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < TDB_IO_FDS; i++) {
        struct tdb_io_fd *f = &c->fds[i];
        if (f->path && !f->stale && !strcmp(f->path, p)) {
            f->refs++;
            f->used = ++c->tick;
            *slot = f;
            pthread_mutex_unlock(&c->lock);
            return f->fd;
        }
    }
    pthread_mutex_unlock(&c->lock);
    int fd = open_fn(ctx, p);
    if (fd < 0)
        return fd;
    pthread_mutex_lock(&c->lock);
    struct tdb_io_fd *victim = NULL;
    for (int i = 0; i < TDB_IO_FDS; i++) {
        struct tdb_io_fd *f = &c->fds[i];
        if (!f->path) {
            victim = f;
            break;
        }
        if (!f->refs && (!victim || f->used < victim->used))
            victim = f;
    }
    char *copy = victim ? strdup(p) : NULL;
    if (copy) {
        if (victim->path)
            io_fd_close(victim);
        *victim = (struct tdb_io_fd){copy, fd, 1, false, ++c->tick};
        *slot = victim;
    }
    pthread_mutex_unlock(&c->lock);
    return fd;
}

static void io_fd_put(struct tdb_io_fdcache *c, struct tdb_io_fd *slot, int fd)
{
    if (!slot) {
        close(fd);
        return;
    }
    pthread_mutex_lock(&c->lock);
    if (--slot->refs == 0 && slot->stale)
        io_fd_close(slot);
    pthread_mutex_unlock(&c->lock);
}

/* Something changed on disk through the backend: the open descriptors of
 * file `p` (NULL: of every file) are closed once their reads end; a file
 * written may be a new one at the path of an older one. */
void tdb_io_fd_forget(struct tdb_io_fdcache *c, const char *p)
{
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < TDB_IO_FDS; i++) {
        struct tdb_io_fd *f = &c->fds[i];
        if (!f->path || (p && strcmp(f->path, p)))
            continue;
        if (f->refs)
            f->stale = true;
        else
            io_fd_close(f);
    }
    pthread_mutex_unlock(&c->lock);
}

void tdb_io_fdcache_destroy(struct tdb_io_fdcache *c)
{
    tdb_io_fd_forget(c, NULL);
    pthread_mutex_destroy(&c->lock);
}

int tdb_io_errno(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR: return TDB_E_NOENT;
    case ENOMEM: return TDB_E_NOMEM;
    case EACCES:
    case EPERM: return TDB_E_ACCES;
    case ENOSPC: return TDB_E_NOSPC;
    case EDQUOT: return TDB_E_DQUOT;
    case EROFS: return TDB_E_ROFS;
    default: return TDB_E_IO;
    }
}

/* Reads exactly len bytes of file `p` at off through the cache (reading
 * past the end is TDB_E_IO). */
int tdb_io_fd_read(struct tdb_io_fdcache *c, const char *p,
                   const struct tdb_io_opener *open, uint64_t off, void *buf,
                   size_t len)
{
    struct tdb_io_fd *slot;
    int fd = io_fd_get(c, p, open->fn, open->ctx, &slot);
    if (fd < 0)
        return fd;
    size_t done = 0;
    int r = 0;
    while (done < len) {
        ssize_t n = pread(fd, (uint8_t *)buf + done, len - done,
                          (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = n < 0 ? tdb_io_errno(errno) : TDB_E_IO;
            break;
        }
        done += (size_t)n;
    }
    io_fd_put(c, slot, fd);
    return r;
}

int tdb_io_fd_dup(struct tdb_io_fdcache *c, const char *p,
                  tdb_io_open_fn open_fn, void *ctx)
{
    struct tdb_io_fd *slot;
    int fd = io_fd_get(c, p, open_fn, ctx, &slot);
    if (fd < 0)
        return fd;
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    int r = d < 0 ? tdb_io_errno(errno) : d;
    io_fd_put(c, slot, fd);
    return r;
}

int tdb_io_pwrite_all(int fd, uint64_t off, const void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const uint8_t *)buf + done, len - done,
                           (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? tdb_io_errno(errno) : TDB_E_IO;
        done += (size_t)n;
    }
    return 0;
}

char *tdb_io_under(const char *root, const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    if (!strncmp(path, "file://", 7))
        return strdup(path + 7);
    if (!path[0])
        return strdup(root);
    return tdb_path_join(root, path);
}

void tdb_io_free(struct tdb_io *io)
{
    if (io && io->ops && io->ops->destroy)
        io->ops->destroy(io->ctx);
    if (io) {
        io->ops = NULL;
        io->ctx = NULL;
    }
}

/* --------------------------------------------------------------- helpers */

void tdb_io_prefetch(const struct tdb_io *io, const struct tdb_io_want *want,
                     size_t n)
{
    if (n && io->ops->prefetch)
        io->ops->prefetch(io->ctx, want, n);
}

void tdb_io_settle(const struct tdb_io *io)
{
    if (io->ops->settle)
        io->ops->settle(io->ctx);
}

int tdb_io_dup_fd(const struct tdb_io *io, const char *path)
{
    return io->ops->dup_fd ? io->ops->dup_fd(io->ctx, path)
                           : TDB_E_UNSUPPORTED;
}

void tdb_io_want(const struct tdb_io *io, enum tdb_io_want_kind kind,
                 const char *path)
{
    struct tdb_io_want w = {kind, path, 0, 0};
    tdb_io_prefetch(io, &w, 1);
}

/* Does name end with one of suffixes (NULL: any)? */
static bool io_suffixed(const char *name, const char *const *suffixes)
{
    size_t n = strlen(name);
    for (; suffixes && *suffixes; suffixes++) {
        size_t l = strlen(*suffixes);
        if (n >= l && !strcmp(name + n - l, *suffixes))
            return true;
    }
    return !suffixes;
}

void tdb_io_want_names(const struct tdb_io *io, const char *dir,
                       const struct tdb_names *names,
                       const char *const *suffixes)
{
    if (!io->ops->prefetch || !names->n)
        return;
    struct tdb_io_want *w = calloc(names->n, sizeof *w);
    char **paths = calloc(names->n, sizeof *paths);
    size_t k = 0;
    for (size_t i = 0; w && paths && i < names->n; i++) {
        if (names->is_dir[i] || !io_suffixed(names->v[i], suffixes) ||
            !(paths[k] = tdb_path_join(dir, names->v[i])))
            continue;
        w[k] = (struct tdb_io_want){TDB_WANT_FILE, paths[k], 0, 0};
        k++;
    }
    tdb_io_prefetch(io, w, k);
    for (size_t i = 0; paths && i < k; i++)
        free(paths[i]);
    free(paths);
    free(w);
}

int tdb_io_read_many(const struct tdb_io *io, struct tdb_io_read *r, size_t n)
{
    if (io->ops->prefetch && n > 1) {
        struct tdb_io_want *w = malloc(n * sizeof *w);
        if (w) {
            for (size_t i = 0; i < n; i++)
                w[i] = (struct tdb_io_want){TDB_WANT_RANGE, r[i].path,
                                            r[i].off, r[i].len};
            io->ops->prefetch(io->ctx, w, n);
            free(w);
        }
    }
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        r[i].rc = io->ops->read_at(io->ctx, r[i].path, r[i].off, r[i].buf,
                                   r[i].len);
        if (r[i].rc && !first)
            first = r[i].rc;
    }
    return first;
}

int tdb_io_read(const struct tdb_io *io, const char *path, uint64_t off,
                void *buf, size_t len, struct tdb_error *err)
{
    int r = io->ops->read_at(io->ctx, path, off, buf, len);
    if (r)
        return tdb_err(err, r, "%s: cannot read %zu bytes at offset %llu: %s",
                       path, len, (unsigned long long)off, tdb_strerror(r));
    return 0;
}

int tdb_io_size(const struct tdb_io *io, const char *path, uint64_t *size,
                struct tdb_error *err)
{
    int r = io->ops->size(io->ctx, path, size);
    if (r)
        return tdb_err(err, r, "%s: %s", path, tdb_strerror(r));
    return 0;
}

int tdb_io_read_file(const struct tdb_io *io, const char *path,
                     uint8_t **data, uint64_t *size, struct tdb_error *err)
{
    *data = NULL;
    int r = tdb_io_size(io, path, size, err);
    if (r)
        return r;
    if (*size > TDB_MAX_TILE_BYTES)
        return tdb_err(err, TDB_E_NOMEM, "%s: file of %llu bytes is too large",
                       path, (unsigned long long)*size);
    *data = malloc(*size ? (size_t)*size : 1);
    if (!*data)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    r = tdb_io_read(io, path, 0, *data, (size_t)*size, err);
    if (r) {
        free(*data);
        *data = NULL;
    }
    return r;
}

bool tdb_io_exists(const struct tdb_io *io, const char *path)
{
    bool d;
    return io->ops->is_dir(io->ctx, path, &d) == 0;
}

bool tdb_io_isdir(const struct tdb_io *io, const char *path)
{
    bool d = false;
    return io->ops->is_dir(io->ctx, path, &d) == 0 && d;
}

static int io_names_add(void *arg, const struct tdb_dirent *ent)
{
    struct tdb_names *n = arg;
    char **v = realloc(n->v, (n->n + 1) * sizeof *v);
    if (!v)
        return TDB_E_NOMEM;
    n->v = v;
    bool *d = realloc(n->is_dir, (n->n + 1) * sizeof *d);
    if (!d)
        return TDB_E_NOMEM;
    n->is_dir = d;
    if (!(n->v[n->n] = strdup(ent->name)))
        return TDB_E_NOMEM;
    n->is_dir[n->n] = ent->is_dir;
    n->n++;
    return 0;
}

struct io_name_pair {
    char *name;
    bool is_dir;
};

static int io_name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct io_name_pair *)a)->name,
                  ((const struct io_name_pair *)b)->name);
}

int tdb_io_names(const struct tdb_io *io, const char *path,
                 struct tdb_names *out, struct tdb_error *err)
{
    memset(out, 0, sizeof *out);
    int r = io->ops->list(io->ctx, path, io_names_add, out);
    if (r == TDB_E_NOENT)
        return 0;
    if (r) {
        tdb_names_free(out);
        return tdb_err(err, r, "%s: cannot list: %s", path, tdb_strerror(r));
    }
    struct io_name_pair *pairs = malloc((out->n ? out->n : 1) * sizeof *pairs);
    if (!pairs) {
        tdb_names_free(out);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < out->n; i++) {
        pairs[i].name = out->v[i];
        pairs[i].is_dir = out->is_dir[i];
    }
    qsort(pairs, out->n, sizeof *pairs, io_name_cmp);
    for (size_t i = 0; i < out->n; i++) {
        out->v[i] = pairs[i].name;
        out->is_dir[i] = pairs[i].is_dir;
    }
    free(pairs);
    return 0;
}

void tdb_names_free(struct tdb_names *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        free(n->v[i]);
    free(n->v);
    free(n->is_dir);
    memset(n, 0, sizeof *n);
}

/* --------------------------------------------------------------- publish */

int tdb_io_publish(const struct tdb_io *io, const char *tmp,
                   const char *final, const void *data, size_t len,
                   struct tdb_error *err)
{
    const struct tdb_io_ops *ops = io->ops;
    int rc;

    if (!ops->write_at || !ops->rename)
        return tdb_err(err, TDB_E_ROFS, "%s: cannot write: the storage is "
                       "read-only", final);
    if (ops->remove && tdb_io_exists(io, tmp))
        ops->remove(io->ctx, tmp);      /* a stale one from a crash */
    if ((rc = ops->write_at(io->ctx, tmp, 0, data, len))) {
        rc = tdb_err(err, rc, "%s: cannot write: %s", tmp, tdb_strerror(rc));
        goto fail;
    }
    if (ops->sync && (rc = ops->sync(io->ctx, tmp))) {
        rc = tdb_err(err, rc, "%s: cannot sync: %s", tmp, tdb_strerror(rc));
        goto fail;
    }
    if ((rc = ops->rename(io->ctx, tmp, final))) {
        rc = tdb_err(err, rc, "cannot rename %s to %s: %s", tmp, final,
                     tdb_strerror(rc));
        goto fail;
    }
    /* Published: a failed sync of the folder no longer undoes it. */
    const char *slash = strrchr(final, '/');
    if (ops->sync) {
        char *dir = slash ? strndup(final, (size_t)(slash - final))
                          : strdup("");
        if (dir)
            ops->sync(io->ctx, dir);
        free(dir);
    }
    return 0;
fail:
    if (ops->remove)
        ops->remove(io->ctx, tmp);
    return rc;
}
