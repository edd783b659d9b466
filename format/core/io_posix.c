/* io_posix.c: the POSIX backend: a folder of the local file system, read
 * through kept-open descriptors, written through files kept open until
 * they are synced. */
#include "core/core.h"
#include "core/io_local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
    struct tdb_io_fdcache fdc;
    pthread_mutex_t wlock;
    struct io_wfd w[IO_WFDS];
};

/* Closes slot f: @return 0 or the code of close's errno. */
static int io_wfd_close(struct io_wfd *f)
{
    int r = close(f->fd) ? tdb_io_errno(errno) : 0;
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
 * @return the code of the first close that failed, else 0. */
static int io_wfd_drop(struct io_posix *px, const char *p)
{
    int r = 0;
    for (int i = 0; i < IO_WFDS; i++) {
        if (!px->w[i].path || !io_path_under(px->w[i].path, p))
            continue;
        int c = io_wfd_close(&px->w[i]);
        if (c && !r)
            r = c;
    }
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

static char *io_posix_path(struct io_posix *px, const char *path)
{
    return tdb_io_under(px->root, path);
}

static int io_posix_open_read(void *ctx, const char *p)
{
    (void)ctx;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? tdb_io_errno(errno) : fd;
}

static int io_posix_read_at(void *ctx, const char *path, uint64_t off,
                            void *buf, size_t len)
{
    struct io_posix *px = ctx;
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    int r = tdb_io_fd_read(&px->fdc, p,
                           &(struct tdb_io_opener){io_posix_open_read, px},
                           off, buf, len);
    free(p);
    return r;
}

static int io_posix_dup_fd(void *ctx, const char *path)
{
    struct io_posix *px = ctx;
    if (!path)
        return 0;
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    int r = tdb_io_fd_dup(&px->fdc, p, io_posix_open_read, px);
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
    return r ? tdb_io_errno(errno) : 0;
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
        return tdb_io_errno(errno);
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

static int io_posix_write_at(void *ctx, const char *path, uint64_t off,
                             const void *buf, size_t len)
{
    struct io_posix *px = ctx;
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    tdb_io_fd_forget(&px->fdc, p);
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
            r = tdb_io_errno(errno);
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
    r = tdb_io_pwrite_all(fd, off, buf, len);
    if (f) {
        if (off < f->lo || f->hi <= f->lo)
            f->lo = off;
        if (off + len > f->hi)
            f->hi = off + len;
        io_wfd_kick(f, false);
    } else if (close(fd) && !r) {
        r = tdb_io_errno(errno);
    }
    pthread_mutex_unlock(&px->wlock);
    return r;
}

static int io_posix_mkdir(void *ctx, const char *path)
{
    tdb_io_fd_forget(&((struct io_posix *)ctx)->fdc, NULL);
    char *p = io_posix_path(ctx, path);
    if (!p)
        return TDB_E_NOMEM;
    int r = mkdir(p, 0755);
    int e = errno;
    free(p);
    return r && e != EEXIST ? tdb_io_errno(e) : 0;
}

/* A file renamed while open for writing is closed first (a failed close
 * fails the rename: its data may be lost); so is one it replaces. */
static int io_posix_rename(void *ctx, const char *from, const char *to)
{
    struct io_posix *px = ctx;
    tdb_io_fd_forget(&px->fdc, NULL);
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
        r = tdb_io_errno(errno);
    free(a);
    free(b);
    return r;
}

static int io_posix_remove(void *ctx, const char *path)
{
    struct io_posix *px = ctx;
    tdb_io_fd_forget(&px->fdc, NULL);
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
    return r ? tdb_io_errno(e) : 0;
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
        int r = fsync(f->fd) ? tdb_io_errno(errno) : 0;
        int c = io_wfd_close(f);
        if (c && !r)
            r = c;
        pthread_mutex_unlock(&px->wlock);
        free(p);
        return r;
    }
    pthread_mutex_unlock(&px->wlock);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    free(p);
    if (fd < 0)
        return tdb_io_errno(errno);
    int r = fsync(fd) ? tdb_io_errno(errno) : 0;
    close(fd);
    return r;
}

static void io_posix_destroy(void *ctx)
{
    struct io_posix *px = ctx;
    tdb_io_fdcache_destroy(&px->fdc);
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
    .dup_fd = io_posix_dup_fd,
};

int tdb_io_posix(struct tdb_io *io, const char *root)
{
    struct io_posix *px = calloc(1, sizeof *px);
    if (!px || !(px->root = strdup(root))) {
        free(px);
        return TDB_E_NOMEM;
    }
    tdb_io_fdcache_init(&px->fdc);
    pthread_mutex_init(&px->wlock, NULL);
    io->ops = &io_posix_ops;
    io->ctx = px;
    return 0;
}
