/* io_s3_disk.c: the S3 backend's disk cache (-o disk_cache=DIR): bytes
 * fetched from the object store kept in files of a local folder, so that
 * a second pass or a second mount reads them from disk.
 *
 * A piece is a byte range of one version of an object: its identity names
 * the endpoint, bucket, key, ETag and size (an object replaced under the
 * same key has another ETag, so it is fetched again).  Each piece is one
 * file, DIR/XX/HASH (the SHA-256 of identity and range), holding a header
 * (magic, range, identity: checked on every read) and the bytes.  Pieces
 * are published whole by rename, so a reader never sees part of one; two
 * mounts may share DIR.  The folder's size is kept under its bound by
 * removing the least recently used pieces (by modification time, which a
 * hit renews); a reader holding a removed piece open still reads it, one
 * that finds it gone fetches it again.  Files that are not pieces, or
 * pieces whose header does not match, are never read. */
#include "core/core.h"
#include "core/io_s3.h"
#include "core/io_s3_local.h"
#include "core/io_local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DISK_MAGIC "TDBFSDC1"
#define DISK_HEAD_MAX 8192      /* header and identity */
#define DISK_TMP_STALE 3600     /* s: a temporary file this old is left
                                 * over from a crash */

struct s3_disk {
    char *dir;
    uint64_t max;               /* bytes */
    pthread_mutex_t lock;
    uint64_t used;              /* estimate (other mounts add to it too) */
    uint64_t seq;
};

/* The file of piece (ident, off, len): DIR/XX/REST of its hash.
 * @return a new string, NULL when out of memory. */
static char *disk_path(const struct s3_disk *d, const char *ident,
                       uint64_t off, uint64_t len)
{
    char *k = NULL, hex[65], *p = NULL;
    if (asprintf(&k, "%s\n%llu\n%llu", ident, (unsigned long long)off,
                 (unsigned long long)len) < 0)
        return NULL;
    tdb_s3_sha256_hex(k, strlen(k), hex);
    free(k);
    if (asprintf(&p, "%s/%.2s/%s", d->dir, hex, hex + 2) < 0)
        return NULL;
    return p;
}

/* The header of piece (ident, off, len) into h (DISK_HEAD_MAX bytes).
 * @return its length, 0 when the identity is too long. */
static size_t disk_header(uint8_t *h, const char *ident, uint64_t off,
                          uint64_t len)
{
    size_t il = strlen(ident);
    if (il > DISK_HEAD_MAX - 28)
        return 0;
    memcpy(h, DISK_MAGIC, 8);
    tdb_st64(h + 8, off);
    tdb_st64(h + 16, len);
    tdb_st32(h + 24, (uint32_t)il);
    memcpy(h + 28, ident, il);
    return 28 + il;
}

/* Opens the piece and checks its header and size.  @return the descriptor
 * (the bytes at *data_at), or -1. */
static int disk_open(struct s3_disk *d, const char *ident, uint64_t off,
                     uint64_t len, off_t *data_at)
{
    uint8_t want[DISK_HEAD_MAX], got[DISK_HEAD_MAX];
    size_t hl = disk_header(want, ident, off, len);
    char *p = hl ? disk_path(d, ident, off, len) : NULL;
    int fd = p ? open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    free(p);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size != hl + len ||
        pread(fd, got, hl, 0) != (ssize_t)hl || memcmp(got, want, hl)) {
        close(fd);
        return -1;
    }
    *data_at = (off_t)hl;
    return fd;
}

bool tdb_s3_disk_has(struct s3_disk *d, const char *ident, uint64_t off,
                     uint64_t len)
{
    off_t at;
    int fd = disk_open(d, ident, off, len, &at);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

int tdb_s3_disk_get(struct s3_disk *d, const struct s3_piece *p, uint64_t at,
                    void *buf, size_t n)
{
    const char *ident = p->ident;
    uint64_t off = p->off, len = p->len;
    off_t base;
    if (at < off || at - off > len || n > len - (at - off))
        return 0;
    int fd = disk_open(d, ident, off, len, &base);
    if (fd < 0)
        return 0;
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + done, n - done,
                          base + (off_t)(at - off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    /* a hit makes it the most recently used */
    if (done == n)
        futimens(fd, NULL);
    close(fd);
    return done == n;
}

/* ------------------------------------------------------------ the bound */

struct disk_file {
    char *path;
    time_t mtime;
    uint64_t size;
};

static int disk_file_cmp(const void *a, const void *b)
{
    const struct disk_file *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Every piece under d->dir into *out (and leftover temporary files
 * removed).  @return the bytes they hold. */
static uint64_t disk_scan(struct s3_disk *d, struct disk_file **out,
                          size_t *nout)
{
    uint64_t total = 0;
    size_t n = 0, cap = 0;
    struct disk_file *v = NULL;
    time_t now = time(NULL);
    for (int b = 0; b < 256; b++) {
        char *sub = NULL;
        if (asprintf(&sub, "%s/%02x", d->dir, b) < 0)
            break;
        DIR *dd = opendir(sub);
        struct dirent *de;
        while (dd && (de = readdir(dd))) {
            struct stat st;
            char *p = NULL;
            if (de->d_name[0] == '.' ||
                asprintf(&p, "%s/%s", sub, de->d_name) < 0)
                continue;
            if (lstat(p, &st) || !S_ISREG(st.st_mode)) {
                free(p);
                continue;
            }
            if (!strncmp(de->d_name, "tmp.", 4)) {
                if (now - st.st_mtime > DISK_TMP_STALE)
                    unlink(p);
                free(p);
                continue;
            }
            total += (uint64_t)st.st_size;
            if (out && n == cap) {
                size_t nc = cap ? 2 * cap : 256;
                struct disk_file *nv = realloc(v, nc * sizeof *nv);
                if (nv) {
                    v = nv;
                    cap = nc;
                }
            }
            if (out && n < cap)
                v[n++] = (struct disk_file){p, st.st_mtime,
                                            (uint64_t)st.st_size};
            else
                free(p);
        }
        if (dd)
            closedir(dd);
        free(sub);
    }
    if (out) {
        *out = v;
        *nout = n;
    }
    return total;
}

/* Removes the least recently used pieces until the folder holds at most
 * 9/10 of its bound.  d->lock held. */
static void disk_evict(struct s3_disk *d)
{
    struct disk_file *v = NULL;
    size_t n = 0;
    uint64_t total = disk_scan(d, &v, &n);
    qsort(v, n, sizeof *v, disk_file_cmp);
    for (size_t i = 0; i < n && total > d->max / 10 * 9; i++)
        if (!unlink(v[i].path) || errno == ENOENT)
            total -= v[i].size;
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
    d->used = total;
}

void tdb_s3_disk_put(struct s3_disk *d, const char *ident, uint64_t off,
                     uint64_t len, const void *data)
{
    uint8_t h[DISK_HEAD_MAX];
    size_t hl = disk_header(h, ident, off, len);
    if (!hl || len > d->max / 4 || tdb_s3_disk_has(d, ident, off, len))
        return;
    char *p = disk_path(d, ident, off, len), *tmp = NULL;
    pthread_mutex_lock(&d->lock);
    uint64_t seq = ++d->seq;
    pthread_mutex_unlock(&d->lock);
    char *slash = p ? strrchr(p, '/') : NULL;
    if (!slash || asprintf(&tmp, "%.*s/tmp.%ld.%llu", (int)(slash - p), p,
                           (long)getpid(), (unsigned long long)seq) < 0) {
        free(p);
        return;
    }
    *slash = 0;
    mkdir(p, 0700);
    *slash = '/';
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && !tdb_io_pwrite_all(fd, 0, h, hl) &&
              (!len || !tdb_io_pwrite_all(fd, hl, data, (size_t)len));
    if (fd >= 0 && close(fd))
        ok = false;
    if (ok && !rename(tmp, p)) {
        pthread_mutex_lock(&d->lock);
        d->used += hl + len;
        if (d->used > d->max)
            disk_evict(d);
        pthread_mutex_unlock(&d->lock);
    } else if (fd >= 0) {
        unlink(tmp);
    }
    free(tmp);
    free(p);
}

int tdb_s3_disk_open(struct s3_disk **out, const char *dir, uint64_t max,
                     struct tdb_error *err)
{
    *out = NULL;
    if (mkdir(dir, 0700) && errno != EEXIST)
        return tdb_err(err, TDB_E_IO, "disk_cache=%s: cannot make the "
                       "folder: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode) || access(dir, R_OK | W_OK |
                                                         X_OK))
        return tdb_err(err, TDB_E_IO, "disk_cache=%s: not a folder this "
                       "user can write", dir);
    struct s3_disk *d = calloc(1, sizeof *d);
    if (!d || !(d->dir = strdup(dir))) {
        free(d);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    d->max = max;
    pthread_mutex_init(&d->lock, NULL);
    d->used = disk_scan(d, NULL, NULL);
    if (d->used > d->max)
        disk_evict(d);
    *out = d;
    return 0;
}

void tdb_s3_disk_close(struct s3_disk *d)
{
    if (!d)
        return;
    pthread_mutex_destroy(&d->lock);
    free(d->dir);
    free(d);
}
