/* io_local.h: what the backends of the I/O interface share (io.c): the
 * descriptors the POSIX backends keep open for reading, errno mapping, and
 * the path rule of the POSIX and sub-folder backends. */
#ifndef TDB_IO_LOCAL_H
#define TDB_IO_LOCAL_H

#include "core/core.h"

#include <pthread.h>

/* Open files kept for reading, by the POSIX and the no-follow backends: a
 * read of a tile would otherwise open and close its file each time (most
 * of the time of small tiles; for the no-follow backend also each folder
 * of the path).  Keyed by the path as the backend was given it.  A
 * rename, removal or new folder through the backend forgets them all; a
 * write forgets the written file's. */
#define TDB_IO_FDS 32

struct tdb_io_fd {
    char *path;         /* NULL: a free slot */
    int fd;
    unsigned refs;      /* reads under way */
    bool stale;         /* close when the last read ends */
    uint64_t used;
};

struct tdb_io_fdcache {
    pthread_mutex_t lock;
    struct tdb_io_fd fds[TDB_IO_FDS];
    uint64_t tick;
};

/* Opens `path` for reading: @return the descriptor or a TDB_E_* code. */
typedef int (*tdb_io_open_fn)(void *ctx, const char *path);

void tdb_io_fdcache_init(struct tdb_io_fdcache *c);
void tdb_io_fdcache_destroy(struct tdb_io_fdcache *c);

/* Something changed on disk through the backend: the open descriptors of
 * file `p` (NULL: of every file) are closed once their reads end; a file
 * written may be a new one at the path of an older one. */
void tdb_io_fd_forget(struct tdb_io_fdcache *c, const char *p);

/* How a backend opens a file the cache does not hold: fn(ctx, path). */
struct tdb_io_opener {
    tdb_io_open_fn fn;
    void *ctx;
};

/* Reads exactly len bytes of file `p` at off through the cache (reading
 * past the end is TDB_E_IO); `open` opens it when not cached. */
int tdb_io_fd_read(struct tdb_io_fdcache *c, const char *p,
                   const struct tdb_io_opener *open, uint64_t off, void *buf,
                   size_t len);

/* A new descriptor (the caller's to close) of file `p` through the cache.
 * @return it or a TDB_E_* code. */
int tdb_io_fd_dup(struct tdb_io_fdcache *c, const char *p,
                  tdb_io_open_fn open_fn, void *ctx);

/* The TDB_E_* code of an errno value, the one mapping of every POSIX
 * backend: ENOENT, ENOTDIR: TDB_E_NOENT; EACCES, EPERM: TDB_E_ACCES;
 * ENOSPC, EDQUOT, EROFS, ENOMEM their own; anything else TDB_E_IO. */
int tdb_io_errno(int e);

/* pwrite of all len bytes (EINTR retried).  @return 0 or the code of
 * its errno (tdb_io_errno). */
int tdb_io_pwrite_all(int fd, uint64_t off, const void *buf, size_t len);

/* `path` under folder `root`; absolute paths and file:// URIs pass through
 * (the shared path rule of the POSIX and sub-folder backends).  @return a
 * new string, NULL when out of memory. */
char *tdb_io_under(const char *root, const char *path);

#endif
