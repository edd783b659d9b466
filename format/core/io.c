/* io.c: the one I/O interface of the engine: a POSIX backend, an in-memory
 * backend for tests, and the helpers every module reads through. */
#include "core/core.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
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

/* Open files kept for reading, by the POSIX and the no-follow backends: a
 * read of a tile would otherwise open and close its file each time (most
 * of the time of small tiles; for the no-follow backend also each folder
 * of the path).  Keyed by the path as the backend was given it.  A
 * rename, removal or new folder through the backend forgets them all; a
 * write forgets the written file's. */
#define IO_FDS 32

struct io_fd {
    char *path;         /* NULL: a free slot */
    int fd;
    unsigned refs;      /* reads under way */
    bool stale;         /* close when the last read ends */
    uint64_t used;
};

struct io_fdcache {
    pthread_mutex_t lock;
    struct io_fd fds[IO_FDS];
    uint64_t tick;
};

/* Opens `path` for reading: @return the descriptor or a TDB_E_* code. */
typedef int (*io_open_fn)(void *ctx, const char *path);

static void io_fdcache_init(struct io_fdcache *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
}

static void io_fd_close(struct io_fd *f)
{
    close(f->fd);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* An open descriptor of `p` for reading: *slot is its cache slot (NULL:
 * not cached, the caller closes it).  @return the fd or a TDB_E_* code
 * (open's). */
static int io_fd_get(struct io_fdcache *c, const char *p, io_open_fn open_fn,
                     void *ctx, struct io_fd **slot)
{
    *slot = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < IO_FDS; i++) {
        struct io_fd *f = &c->fds[i];
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
    struct io_fd *victim = NULL;
    for (int i = 0; i < IO_FDS; i++) {
        struct io_fd *f = &c->fds[i];
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
        *victim = (struct io_fd){copy, fd, 1, false, ++c->tick};
        *slot = victim;
    }
    pthread_mutex_unlock(&c->lock);
    return fd;
}

static void io_fd_put(struct io_fdcache *c, struct io_fd *slot, int fd)
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
static void io_fd_forget(struct io_fdcache *c, const char *p)
{
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < IO_FDS; i++) {
        struct io_fd *f = &c->fds[i];
        if (!f->path || (p && strcmp(f->path, p)))
            continue;
        if (f->refs)
            f->stale = true;
        else
            io_fd_close(f);
    }
    pthread_mutex_unlock(&c->lock);
}

static void io_fdcache_destroy(struct io_fdcache *c)
{
    io_fd_forget(c, NULL);
    pthread_mutex_destroy(&c->lock);
}

static int io_posix_errno(int e)
{
    return e == ENOENT || e == ENOTDIR ? TDB_E_NOENT
           : e == ENOMEM              ? TDB_E_NOMEM
                                      : TDB_E_IO;
}

/* Reads exactly len bytes of file `p` at off through the cache (reading
 * past the end is TDB_E_IO). */
static int io_fd_read(struct io_fdcache *c, const char *p, io_open_fn open_fn,
                      void *ctx, uint64_t off, void *buf, size_t len)
{
    struct io_fd *slot;
    int fd = io_fd_get(c, p, open_fn, ctx, &slot);
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
            r = n < 0 ? io_posix_errno(errno) : TDB_E_IO;
            break;
        }
        done += (size_t)n;
    }
    io_fd_put(c, slot, fd);
    return r;
}

/* ----------------------------------------------------------------- POSIX */

/* Files being written, kept open from their first write until they are
 * synced, renamed or removed through the backend: a fragment's data file
 * gets one write per tile.  Sync reports a failed fsync or close; a
 * rename reports a failed close of what it renames.  When every slot is
 * taken, a write opens and closes its file (and reports the close).
 * Written ranges are handed to the kernel's write-back as they grow
 * (IO_KICK bytes at a time), so that the final fsync finds little left to
 * write. */
#define IO_WFDS 32
#define IO_KICK (UINT64_C(8) << 20)

struct io_wfd {
    char *path;         /* NULL: a free slot */
    int fd;
    uint64_t lo, hi;    /* written, not yet handed to write-back */
};

struct io_posix {
    char *root;
    struct io_fdcache fdc;
    pthread_mutex_t wlock;
    struct io_wfd w[IO_WFDS];
};

/* Closes slot f: @return 0 or TDB_E_IO (close failed). */
static int io_wfd_close(struct io_wfd *f)
{
    int r = close(f->fd) ? TDB_E_IO : 0;
    free(f->path);
    memset(f, 0, sizeof *f);
    return r;
}

/* p is `dir` or a path under it. */
static bool io_path_under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(p, dir, n) && (p[n] == 0 || p[n] == '/');
}

/* Closes the files open for writing at or under path p (wlock held):
 * @return TDB_E_IO when a close failed. */
static int io_wfd_drop(struct io_posix *px, const char *p)
{
    int r = 0;
    for (int i = 0; i < IO_WFDS; i++)
        if (px->w[i].path && io_path_under(px->w[i].path, p) &&
            io_wfd_close(&px->w[i]))
            r = TDB_E_IO;
    return r;
}

/* Starts write-back of what slot f holds unwritten (whole pages only: the
 * next append may still change the last one). */
static void io_wfd_kick(struct io_wfd *f, bool all)
{
#ifdef SYNC_FILE_RANGE_WRITE
    uint64_t lo = f->lo & ~UINT64_C(4095), hi = f->hi & ~UINT64_C(4095);
    if (hi <= lo || (!all && hi - lo < IO_KICK))
        return;
    /* advice only: a failure shows at fsync */
    (void)sync_file_range(f->fd, (off_t)lo, (off_t)(hi - lo),
                          SYNC_FILE_RANGE_WRITE);
    f->lo = hi;
#else
    (void)f;
    (void)all;
#endif
}

/* `path` under folder `root`; absolute paths and file:// URIs pass through
 * (the shared path rule of the POSIX and sub-folder backends). */
static char *io_under(const char *root, const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    if (!strncmp(path, "file://", 7))
        return strdup(path + 7);
    if (!path[0])
        return strdup(root);
    return tdb_path_join(root, path);
}

static char *io_posix_path(struct io_posix *px, const char *path)
{
    return io_under(px->root, path);
}

static int io_posix_open_read(void *ctx, const char *p)
{
    (void)ctx;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? io_posix_errno(errno) : fd;
}

static int io_posix_read_at(void *ctx, const char *path, uint64_t off,
                            void *buf, size_t len)
{
    struct io_posix *px = ctx;
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    int r = io_fd_read(&px->fdc, p, io_posix_open_read, px, off, buf, len);
    free(p);
    return r;
}

static int io_posix_stat(void *ctx, const char *path, struct stat *st)
{
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    int r = stat(p, st);
    free(p);
    return r ? io_posix_errno(errno) : 0;
}

static int io_posix_size(void *ctx, const char *path, uint64_t *size)
{
    struct stat st;
    int r = io_posix_stat(ctx, path, &st);
    if (!r)
        *size = (uint64_t)st.st_size;
    return r;
}

static int io_posix_is_dir(void *ctx, const char *path, bool *is_dir)
{
    struct stat st;
    int r = io_posix_stat(ctx, path, &st);
    if (!r)
        *is_dir = S_ISDIR(st.st_mode);
    return r;
}

static int io_posix_list(void *ctx, const char *path, tdb_io_list_fn fn,
                         void *arg)
{
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    DIR *d = opendir(p);
    if (!d) {
        free(p);
        return io_posix_errno(errno);
    }
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        bool isdir = de->d_type == DT_DIR;
        if (de->d_type == DT_UNKNOWN || de->d_type == DT_LNK) {
            struct stat st;
            char *q = tdb_path_join(p, de->d_name);
            if (!q) {
                r = TDB_E_NOMEM;
                break;
            }
            isdir = !stat(q, &st) && S_ISDIR(st.st_mode);
            free(q);
        }
        struct tdb_dirent ent = {de->d_name, isdir};
        if ((r = fn(arg, &ent)))
            break;
    }
    closedir(d);
    free(p);
    return r;
}

static int io_pwrite_all(int fd, uint64_t off, const void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const uint8_t *)buf + done, len - done,
                           (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return TDB_E_IO;
        done += (size_t)n;
    }
    return 0;
}

static int io_posix_write_at(void *ctx, const char *path, uint64_t off,
                             const void *buf, size_t len)
{
    struct io_posix *px = ctx;
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    io_fd_forget(&px->fdc, p);
    pthread_mutex_lock(&px->wlock);
    struct io_wfd *f = NULL, *free_slot = NULL;
    for (int i = 0; i < IO_WFDS && !f; i++) {
        if (px->w[i].path && !strcmp(px->w[i].path, p))
            f = &px->w[i];
        else if (!px->w[i].path && !free_slot)
            free_slot = &px->w[i];
    }
    int r = 0, fd;
    if (f) {
        fd = f->fd;
        free(p);
    } else {
        fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            r = io_posix_errno(errno);
            pthread_mutex_unlock(&px->wlock);
            free(p);
            return r;
        }
        if (free_slot) {
            f = free_slot;
            *f = (struct io_wfd){p, fd, off, off};
        } else {
            free(p);
        }
    }
    r = io_pwrite_all(fd, off, buf, len);
    if (f) {
        if (off < f->lo || f->hi <= f->lo)
            f->lo = off;
        if (off + len > f->hi)
            f->hi = off + len;
        io_wfd_kick(f, false);
    } else if (close(fd) && !r) {
        r = TDB_E_IO;
    }
    pthread_mutex_unlock(&px->wlock);
    return r;
}

static int io_posix_mkdir(void *ctx, const char *path)
{
    io_fd_forget(&((struct io_posix *)ctx)->fdc, NULL);
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    int r = mkdir(p, 0755);
    int e = errno;
    free(p);
    return r && e != EEXIST ? io_posix_errno(e) : 0;
}

/* A file renamed while open for writing is closed first (a failed close
 * fails the rename: its data may be lost); so is one it replaces. */
static int io_posix_rename(void *ctx, const char *from, const char *to)
{
    struct io_posix *px = ctx;
    io_fd_forget(&px->fdc, NULL);
    char *a = io_posix_path(ctx, from), *b = io_posix_path(ctx, to);
    if (!a || !b) {
        free(a);
        free(b);
        return TDB_E_NOMEM;
    }
    pthread_mutex_lock(&px->wlock);
    int r = io_wfd_drop(px, a);
    (void)io_wfd_drop(px, b);
    pthread_mutex_unlock(&px->wlock);
    if (!r && rename(a, b))
        r = io_posix_errno(errno);
    free(a);
    free(b);
    return r;
}

static int io_posix_remove(void *ctx, const char *path)
{
    struct io_posix *px = ctx;
    io_fd_forget(&px->fdc, NULL);
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    /* what is removed needs no close report */
    pthread_mutex_lock(&px->wlock);
    (void)io_wfd_drop(px, p);
    pthread_mutex_unlock(&px->wlock);
    int r = remove(p);
    int e = errno;
    free(p);
    return r ? io_posix_errno(e) : 0;
}

/* A file open for writing is synced and closed: both are checked. */
static int io_posix_sync(void *ctx, const char *path)
{
    struct io_posix *px = ctx;
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    pthread_mutex_lock(&px->wlock);
    for (int i = 0; i < IO_WFDS; i++) {
        struct io_wfd *f = &px->w[i];
        if (!f->path || strcmp(f->path, p))
            continue;
        int r = fsync(f->fd) ? TDB_E_IO : 0;
        if (io_wfd_close(f) && !r)
            r = TDB_E_IO;
        pthread_mutex_unlock(&px->wlock);
        free(p);
        return r;
    }
    pthread_mutex_unlock(&px->wlock);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    free(p);
    if (fd < 0)
        return io_posix_errno(errno);
    int r = fsync(fd);
    close(fd);
    return r ? TDB_E_IO : 0;
}

static void io_posix_destroy(void *ctx)
{
    struct io_posix *px = ctx;
    io_fdcache_destroy(&px->fdc);
    for (int i = 0; i < IO_WFDS; i++)
        if (px->w[i].path)
            (void)io_wfd_close(&px->w[i]);
    pthread_mutex_destroy(&px->wlock);
    free(px->root);
    free(px);
}

static const struct tdb_io_ops io_posix_ops = {
    .read_at = io_posix_read_at,
    .size = io_posix_size,
    .list = io_posix_list,
    .is_dir = io_posix_is_dir,
    .write_at = io_posix_write_at,
    .mkdir = io_posix_mkdir,
    .rename = io_posix_rename,
    .remove = io_posix_remove,
    .sync = io_posix_sync,
    .destroy = io_posix_destroy,
};

int tdb_io_posix(struct tdb_io *io, const char *root)
{
    struct io_posix *px = calloc(1, sizeof *px);
    if (!px || !(px->root = strdup(root))) {
        free(px);
        return TDB_E_NOMEM;
    }
    io_fdcache_init(&px->fdc);
    pthread_mutex_init(&px->wlock, NULL);
    io->ops = &io_posix_ops;
    io->ctx = px;
    return 0;
}

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

/* Calls fn once for each distinct child of dir among `paths`. */
static int io_mem_children(const char *dir, char **paths, size_t n,
                           size_t stride, struct tdb_names *seen,
                           bool dirs_only, tdb_io_list_fn fn, void *arg)
{
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
        int r = fn(arg, &ent);
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
    struct tdb_names seen = {0};
    if (!io_mem_has_dir(m, path) || io_mem_find(m, path)) {
        r = TDB_E_NOENT;
    } else {
        r = m->n ? io_mem_children(path, &m->f[0].path, m->n, sizeof *m->f,
                                   &seen, false, fn, arg)
                 : 0;
        if (!r && m->ndirs)
            r = io_mem_children(path, m->dirs, m->ndirs, sizeof *m->dirs,
                                &seen, true, fn, arg);
    }
    pthread_mutex_unlock(&m->lock);
    tdb_names_free(&seen);
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

/* ------------------------------------------------------ POSIX, no-follow */

/* A POSIX backend rooted at a folder descriptor that never follows a
 * symbolic link: every folder of a path is opened with O_NOFOLLOW |
 * O_DIRECTORY relative to the one before, the last name with O_NOFOLLOW,
 * and anything but a regular file or a folder is refused (TDB_E_INVAL)
 * before it is opened, so that a FIFO cannot block and a device is never
 * touched; so is a file with more than one link (TDB_E_MLINK).  Paths are
 * relative; ".." is refused. */
struct io_nf {
    int dirfd;
    struct io_fdcache fdc;      /* files opened for reading */
};

static int io_nf_errno(int e)
{
    return e == ELOOP ? TDB_E_INVAL : io_posix_errno(e);
}

/* Opens the folder holding `path`'s last name; *leaf points into path at
 * that name ("." for the root).  @return a descriptor to close, or a
 * negative TDB_E_* code. */
static int io_nf_parent(struct io_nf *nf, const char *path, const char **leaf)
{
    int fd = dup(nf->dirfd);
    if (fd < 0)
        return io_posix_errno(errno);
    *leaf = ".";
    const char *p = path;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            return fd;
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *next = p + n;
        while (*next == '/')
            next++;
        if (n > TDB_MAX_NAME || (n == 2 && !memcmp(p, "..", 2))) {
            close(fd);
            return TDB_E_INVAL;
        }
        if (!*next) {           /* the last name */
            *leaf = n == 1 && *p == '.' ? "." : p;
            if (end) {          /* "NAME/": keep it a folder name */
                static _Thread_local char buf[TDB_MAX_NAME + 1];
                memcpy(buf, p, n);
                buf[n] = 0;
                *leaf = buf;
            }
            return fd;
        }
        if (n == 1 && *p == '.') {
            p = next;
            continue;
        }
        char name[TDB_MAX_NAME + 1];
        memcpy(name, p, n);
        name[n] = 0;
        int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                       O_CLOEXEC);
        int e = errno;
        close(fd);
        if (sub < 0)
            return io_nf_errno(e);
        fd = sub;
        p = next;
    }
}

/* 0 for a regular file of one link; TDB_E_INVAL for anything but a
 * regular file, TDB_E_MLINK for a hard link (another name may be someone
 * else's file). */
static int io_nf_check(const struct stat *st)
{
    return !S_ISREG(st->st_mode) ? TDB_E_INVAL
           : st->st_nlink > 1    ? TDB_E_MLINK
                                 : 0;
}

/* Opens regular file `path` with `flags` (O_NOFOLLOW added); a folder,
 * link or special file is TDB_E_INVAL, a hard link TDB_E_MLINK, checked
 * before and after the open.  With O_CREAT a missing file is made, mode
 * 0600. */
static int io_nf_open(struct io_nf *nf, const char *path, int flags, int *out)
{
    const char *leaf;
    int pfd = io_nf_parent(nf, path, &leaf);
    if (pfd < 0)
        return pfd;
    struct stat st;
    int r = 0;
    if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
        r = io_nf_check(&st);
    else if (errno != ENOENT || !(flags & O_CREAT))
        r = io_nf_errno(errno);
    int fd = -1;
    if (!r) {
        fd = openat(pfd, leaf, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                    0600);
        if (fd < 0)
            r = io_nf_errno(errno);
        else
            r = fstat(fd, &st) != 0 ? TDB_E_INVAL : io_nf_check(&st);
    }
    close(pfd);
    if (r && fd >= 0)
        close(fd);
    *out = fd;
    return r;
}

static int io_nf_open_read(void *ctx, const char *path)
{
    int fd, r = io_nf_open(ctx, path, O_RDONLY, &fd);
    return r ? r : fd;
}

/* Reads through the descriptor cache: a file is opened (every folder of
 * its path with O_NOFOLLOW, and checked regular) once, not at each read. */
static int io_nf_read_at(void *ctx, const char *path, uint64_t off, void *buf,
                         size_t len)
{
    struct io_nf *nf = ctx;
    return io_fd_read(&nf->fdc, path, io_nf_open_read, nf, off, buf, len);
}

static int io_nf_stat(struct io_nf *nf, const char *path, struct stat *st)
{
    const char *leaf;
    int pfd = io_nf_parent(nf, path, &leaf);
    if (pfd < 0)
        return pfd;
    int r = fstatat(pfd, leaf, st, AT_SYMLINK_NOFOLLOW) ? io_nf_errno(errno)
                                                        : 0;
    close(pfd);
    return r;
}

static int io_nf_size(void *ctx, const char *path, uint64_t *size)
{
    struct stat st;
    int r = io_nf_stat(ctx, path, &st);
    if (!r)
        r = io_nf_check(&st);
    if (!r)
        *size = (uint64_t)st.st_size;
    return r;
}

/* A link or special file exists and is not a folder. */
static int io_nf_is_dir(void *ctx, const char *path, bool *is_dir)
{
    struct stat st;
    int r = io_nf_stat(ctx, path, &st);
    if (!r)
        *is_dir = S_ISDIR(st.st_mode);
    return r;
}

/* Opens folder `path` (not a link to one).  @return a descriptor to
 * close, or a negative TDB_E_* code. */
static int io_nf_opendir(struct io_nf *nf, const char *path)
{
    const char *leaf;
    int pfd = io_nf_parent(nf, path, &leaf);
    if (pfd < 0)
        return pfd;
    int fd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(pfd);
    return fd < 0 ? io_nf_errno(e) : fd;
}

static int io_nf_list(void *ctx, const char *path, tdb_io_list_fn fn,
                      void *arg)
{
    int fd = io_nf_opendir(ctx, path);
    if (fd < 0)
        return fd;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return io_posix_errno(e);
    }
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        bool isdir = de->d_type == DT_DIR;
        if (de->d_type == DT_UNKNOWN) {
            struct stat st;
            isdir = !fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
                    S_ISDIR(st.st_mode);
        }
        struct tdb_dirent ent = {de->d_name, isdir};
        if ((r = fn(arg, &ent)))
            break;
    }
    closedir(d);
    return r;
}

static int io_nf_write_at(void *ctx, const char *path, uint64_t off,
                          const void *buf, size_t len)
{
    io_fd_forget(&((struct io_nf *)ctx)->fdc, path);
    int fd, r = io_nf_open(ctx, path, O_WRONLY | O_CREAT, &fd);
    if (r)
        return r;
    r = io_pwrite_all(fd, off, buf, len);
    if (close(fd) && !r)
        r = TDB_E_IO;
    return r;
}

static int io_nf_mkdir(void *ctx, const char *path)
{
    io_fd_forget(&((struct io_nf *)ctx)->fdc, NULL);
    const char *leaf;
    int pfd = io_nf_parent(ctx, path, &leaf);
    if (pfd < 0)
        return pfd;
    int r = mkdirat(pfd, leaf, 0700) && errno != EEXIST ? io_nf_errno(errno)
                                                        : 0;
    close(pfd);
    return r;
}

static int io_nf_rename(void *ctx, const char *from, const char *to)
{
    io_fd_forget(&((struct io_nf *)ctx)->fdc, NULL);
    const char *la, *lb;
    int a = io_nf_parent(ctx, from, &la);
    if (a < 0)
        return a;
    /* io_nf_parent's name buffer is per thread: keep the first one */
    char *sa = strdup(la);
    int b = sa ? io_nf_parent(ctx, to, &lb) : TDB_E_NOMEM;
    int r = b < 0 ? b : renameat(a, sa, b, lb) ? io_nf_errno(errno) : 0;
    free(sa);
    close(a);
    if (b >= 0)
        close(b);
    return r;
}

static int io_nf_remove(void *ctx, const char *path)
{
    io_fd_forget(&((struct io_nf *)ctx)->fdc, NULL);
    const char *leaf;
    int pfd = io_nf_parent(ctx, path, &leaf);
    if (pfd < 0)
        return pfd;
    int r = unlinkat(pfd, leaf, 0);
    if (r && (errno == EISDIR || errno == EPERM))
        r = unlinkat(pfd, leaf, AT_REMOVEDIR);
    r = r ? io_nf_errno(errno) : 0;
    close(pfd);
    return r;
}

static int io_nf_sync(void *ctx, const char *path)
{
    struct stat st;
    int r = io_nf_stat(ctx, path, &st);
    if (r)
        return r;
    int fd;
    if (S_ISDIR(st.st_mode))
        r = (fd = io_nf_opendir(ctx, path)) < 0 ? fd : 0;
    else
        r = io_nf_open(ctx, path, O_RDONLY, &fd);
    if (r)
        return r;
    r = fsync(fd) ? TDB_E_IO : 0;
    close(fd);
    return r;
}

static void io_nf_destroy(void *ctx)
{
    struct io_nf *nf = ctx;
    io_fdcache_destroy(&nf->fdc);
    close(nf->dirfd);
    free(nf);
}

static const struct tdb_io_ops io_nf_ops = {
    .read_at = io_nf_read_at,
    .size = io_nf_size,
    .list = io_nf_list,
    .is_dir = io_nf_is_dir,
    .write_at = io_nf_write_at,
    .mkdir = io_nf_mkdir,
    .rename = io_nf_rename,
    .remove = io_nf_remove,
    .sync = io_nf_sync,
    .destroy = io_nf_destroy,
};

int tdb_io_posix_nofollow(struct tdb_io *io, int dirfd)
{
    struct io_nf *nf = calloc(1, sizeof *nf);
    if (!nf)
        return TDB_E_NOMEM;
    nf->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (nf->dirfd < 0) {
        int e = errno;
        free(nf);
        return io_posix_errno(e);
    }
    io_fdcache_init(&nf->fdc);
    io->ops = &io_nf_ops;
    io->ctx = nf;
    return 0;
}

/* -------------------------------------------------------------- wrappers */

/* A backend over another one, `inner`: a view rooted at one of inner's
 * folders (tdb_io_sub: a group's member array; absolute paths and file://
 * URIs pass through unchanged), or inner itself with its mutating calls
 * counted and failed on schedule (tdb_io_faulty).  One set of functions
 * serves both: each call maps its paths, and a mutating call is refused
 * (TDB_E_ROFS) when inner has no such call, else counted, before it
 * reaches inner. */
struct io_wrap {
    const struct tdb_io *inner;
    char *prefix;               /* tdb_io_sub's folder; NULL: none */
    struct tdb_io_fault *f;     /* tdb_io_faulty's schedule; NULL: none */
};

/* `path` as inner knows it; *tmp is what to free afterwards (or NULL).
 * @return NULL when out of memory. */
static const char *io_wrap_path(const struct io_wrap *w, const char *path,
                                char **tmp)
{
    *tmp = NULL;
    if (!w->prefix || !strncmp(path, "file://", 7))
        return path;            /* inner resolves URIs */
    return *tmp = io_under(w->prefix, path);
}

/* Returns inner's `call` (an expression of `w`, the wrapper, and `p`,
 * the mapped `path`). */
#define IO_WRAP_CALL(path, call)                                            \
    struct io_wrap *w = ctx;                                                \
    char *tmp;                                                              \
    const char *p = io_wrap_path(w, path, &tmp);                            \
    if (!p)                                                                 \
        return TDB_E_NOMEM;                                                 \
    int r = (call);                                                         \
    free(tmp);                                                              \
    return r

/* Counts one mutating call; true when it is to fail. */
static bool io_wrap_hit(struct io_wrap *w)
{
    struct tdb_io_fault *f = w->f;

    if (!f)
        return false;
    f->count++;
    if (!f->fail_at)
        return false;
    if (f->count == f->fail_at || (f->crash && f->count > f->fail_at)) {
        f->failed++;
        return true;
    }
    return false;
}

/* The calls of the wrapped backend. */
static const struct tdb_io_ops *io_wrap_inner(void *ctx)
{
    return ((struct io_wrap *)ctx)->inner->ops;
}

/* Before a mutating call: TDB_E_ROFS when inner lacks it (`has` false,
 * not counted), TDB_E_IO when the schedule fails it, else 0. */
static int io_wrap_refuse(void *ctx, bool has)
{
    return !has ? TDB_E_ROFS : io_wrap_hit(ctx) ? TDB_E_IO : 0;
}

/* Returns inner's mutating `call` of `op` (see IO_WRAP_CALL) unless
 * io_wrap_refuse refuses it. */
#define IO_WRAP_MUTATE(op, path, call)                                      \
    int no = io_wrap_refuse(ctx, io_wrap_inner(ctx)->op != NULL);           \
    if (no)                                                                 \
        return no;                                                          \
    IO_WRAP_CALL(path, call)

static int io_wrap_read_at(void *ctx, const char *path, uint64_t off,
                           void *buf, size_t len)
{
    IO_WRAP_CALL(path, w->inner->ops->read_at(w->inner->ctx, p, off, buf, len));
}

static int io_wrap_size(void *ctx, const char *path, uint64_t *size)
{
    IO_WRAP_CALL(path, w->inner->ops->size(w->inner->ctx, p, size));
}

static int io_wrap_list(void *ctx, const char *path, tdb_io_list_fn fn,
                        void *arg)
{
    IO_WRAP_CALL(path, w->inner->ops->list(w->inner->ctx, p, fn, arg));
}

static int io_wrap_is_dir(void *ctx, const char *path, bool *is_dir)
{
    IO_WRAP_CALL(path, w->inner->ops->is_dir(w->inner->ctx, p, is_dir));
}

static int io_wrap_write_at(void *ctx, const char *path, uint64_t off,
                            const void *buf, size_t len)
{
    IO_WRAP_MUTATE(write_at, path,
                   w->inner->ops->write_at(w->inner->ctx, p, off, buf, len));
}

static int io_wrap_mkdir(void *ctx, const char *path)
{
    IO_WRAP_MUTATE(mkdir, path, w->inner->ops->mkdir(w->inner->ctx, p));
}

static int io_wrap_remove(void *ctx, const char *path)
{
    IO_WRAP_MUTATE(remove, path, w->inner->ops->remove(w->inner->ctx, p));
}

/* Counted even when inner has no sync (nothing to do: 0). */
static int io_wrap_sync(void *ctx, const char *path)
{
    if (io_wrap_hit(ctx))
        return TDB_E_IO;
    if (!io_wrap_inner(ctx)->sync)
        return 0;
    IO_WRAP_CALL(path, w->inner->ops->sync(w->inner->ctx, p));
}

/* inner's rename of `from` (mapped already) to `to`. */
static int io_wrap_rename_to(struct io_wrap *w, const char *from,
                             const char *to)
{
    char *tmp;
    const char *q = io_wrap_path(w, to, &tmp);
    int r = q ? w->inner->ops->rename(w->inner->ctx, from, q) : TDB_E_NOMEM;

    free(tmp);
    return r;
}

static int io_wrap_rename(void *ctx, const char *from, const char *to)
{
    IO_WRAP_MUTATE(rename, from, io_wrap_rename_to(w, p, to));
}

static void io_wrap_destroy(void *ctx)
{
    struct io_wrap *w = ctx;
    free(w->prefix);
    free(w);
}

static const struct tdb_io_ops io_wrap_ops = {
    .read_at = io_wrap_read_at,
    .size = io_wrap_size,
    .list = io_wrap_list,
    .is_dir = io_wrap_is_dir,
    .write_at = io_wrap_write_at,
    .mkdir = io_wrap_mkdir,
    .rename = io_wrap_rename,
    .remove = io_wrap_remove,
    .sync = io_wrap_sync,
    .destroy = io_wrap_destroy,
};

/* A wrapper of `inner` with `prefix` (copied; NULL: none) and schedule f. */
static int io_wrap_new(struct tdb_io *io, const struct tdb_io *inner,
                       const char *prefix, struct tdb_io_fault *f)
{
    struct io_wrap *w = calloc(1, sizeof *w);

    if (!w || (prefix && !(w->prefix = strdup(prefix)))) {
        free(w);
        return TDB_E_NOMEM;
    }
    w->inner = inner;
    w->f = f;
    io->ops = &io_wrap_ops;
    io->ctx = w;
    return 0;
}

int tdb_io_sub(struct tdb_io *io, const struct tdb_io *parent,
               const char *prefix)
{
    return io_wrap_new(io, parent, prefix, NULL);
}

int tdb_io_faulty(struct tdb_io *io, const struct tdb_io *inner,
                  struct tdb_io_fault *f)
{
    return io_wrap_new(io, inner, NULL, f);
}
