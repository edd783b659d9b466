/* io_nofollow.c: a POSIX backend that never follows a symbolic link
 * (tdb_io_posix_nofollow: the staged files of a writable mount). */
#include "core/core.h"
#include "core/io_local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
    struct tdb_io_fdcache fdc;      /* files opened for reading */
};

static int io_nf_errno(int e)
{
    return e == ELOOP ? TDB_E_INVAL : tdb_io_errno(e);
}

/* The code of folder `name` of fd that openat(O_DIRECTORY | O_NOFOLLOW)
 * refused with e: a symbolic link is refused as one (TDB_E_INVAL), though
 * Linux then says ENOTDIR, not ELOOP. */
static int io_nf_dir_errno(int fd, const char *name, int e)
{
    struct stat st;
    if (e == ENOTDIR && !fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) &&
        S_ISLNK(st.st_mode))
        return TDB_E_INVAL;
    return io_nf_errno(e);
}

/* Opens the folder holding `path`'s last name; *leaf points into path at
 * that name ("." for the root).  @return a descriptor to close, or a
 * negative TDB_E_* code. */
static int io_nf_parent(struct io_nf *nf, const char *path, const char **leaf)
{
    int fd = dup(nf->dirfd);
    if (fd < 0)
        return tdb_io_errno(errno);
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
        int e = sub < 0 ? io_nf_dir_errno(fd, name, errno) : 0;
        close(fd);
        if (sub < 0)
            return e;
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
    return tdb_io_fd_read(&nf->fdc, path,
                          &(struct tdb_io_opener){io_nf_open_read, nf}, off,
                          buf, len);
}

static int io_nf_dup_fd(void *ctx, const char *path)
{
    struct io_nf *nf = ctx;
    return path ? tdb_io_fd_dup(&nf->fdc, path, io_nf_open_read, nf) : 0;
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
    int e = fd < 0 ? io_nf_dir_errno(pfd, leaf, errno) : 0;
    close(pfd);
    return fd < 0 ? e : fd;
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
        return tdb_io_errno(e);
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
    tdb_io_fd_forget(&((struct io_nf *)ctx)->fdc, path);
    int fd, r = io_nf_open(ctx, path, O_WRONLY | O_CREAT, &fd);
    if (r)
        return r;
    r = tdb_io_pwrite_all(fd, off, buf, len);
    if (close(fd) && !r)
        r = tdb_io_errno(errno);
    return r;
}

static int io_nf_mkdir(void *ctx, const char *path)
{
    tdb_io_fd_forget(&((struct io_nf *)ctx)->fdc, NULL);
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
    tdb_io_fd_forget(&((struct io_nf *)ctx)->fdc, NULL);
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
    tdb_io_fd_forget(&((struct io_nf *)ctx)->fdc, NULL);
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
    r = fsync(fd) ? tdb_io_errno(errno) : 0;
    close(fd);
    return r;
}

static void io_nf_destroy(void *ctx)
{
    struct io_nf *nf = ctx;
    tdb_io_fdcache_destroy(&nf->fdc);
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
    .dup_fd = io_nf_dup_fd,
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
        return tdb_io_errno(e);
    }
    tdb_io_fdcache_init(&nf->fdc);
    io->ops = &io_nf_ops;
    io->ctx = nf;
    return 0;
}
