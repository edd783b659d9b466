/* disk.c: the S3 backend's disk cache (-o disk_cache=DIR): bytes
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
 * that finds it gone fetches it again.
 *
 * The folder is trusted no more than staging_dir is: it must be a real
 * folder (not a symbolic link) owned by the user and not writable by group
 * or others, and it is made 0700.  Everything in it is reached from its
 * descriptor, one name at a time, with O_NOFOLLOW: a link in it (DIR/XX
 * or a piece's name) is never followed, for reading, writing or removing,
 * and a subfolder or file that is not the user's is left alone.  Only the
 * cache's own files are ever removed: a piece is a regular file named by
 * 64 hex digits (XX/ and 62 more) whose header is the cache's and whose
 * identity and range hash to that name; a leftover temporary file is
 * named tmp.PID.SEQ and starts with the magic.  Other files are not
 * counted in the bound, never read and never removed. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"
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
#define DISK_FIXED 28           /* magic, offset, length, identity length */
#define DISK_HEAD_MAX 8192      /* header and identity */
#define DISK_TMP_STALE 3600     /* s: a temporary file this old is left
                                 * over from a crash */

struct os_disk {
    int dirfd;                  /* DIR, opened without following a link */
    uint64_t max;               /* bytes */
    pthread_mutex_t lock;
    uint64_t used;              /* estimate (other mounts add to it too) */
    uint64_t seq;
};

/* The name of piece (ident, off, len): the hex SHA-256 of identity and
 * range, hex[0..1] its subfolder and hex + 2 its file.  @return false
 * when out of memory. */
static bool disk_name(const char *ident, size_t il, uint64_t off,
                      uint64_t len, char hex[65])
{
    char *k = NULL;
    if (asprintf(&k, "%.*s\n%llu\n%llu", (int)il, ident,
                 (unsigned long long)off, (unsigned long long)len) < 0)
        return false;
    tdb_s3_sha256_hex(k, strlen(k), hex);
    free(k);
    return true;
}

/* The header of piece (ident, off, len) into h (DISK_HEAD_MAX bytes).
 * @return its length, 0 when the identity is too long. */
static size_t disk_header(uint8_t *h, const char *ident, uint64_t off,
                          uint64_t len)
{
    size_t il = strlen(ident);
    if (il > DISK_HEAD_MAX - DISK_FIXED)
        return 0;
    memcpy(h, DISK_MAGIC, 8);
    tdb_st64(h + 8, off);
    tdb_st64(h + 16, len);
    tdb_st32(h + 24, (uint32_t)il);
    memcpy(h + DISK_FIXED, ident, il);
    return DISK_FIXED + il;
}

/* Is st a regular file of ours? */
static bool disk_ours(const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

/* Opens subfolder "XX" (sub[0..1]) of DIR, made first when `make`: a real
 * folder of ours that group and others cannot write, else -1 (a link
 * there is not followed).  @return a descriptor to close, or -1. */
static int disk_sub(struct os_disk *d, const char *sub, bool make)
{
    char name[3] = {sub[0], sub[1], 0};
    if (make && mkdirat(d->dirfd, name, 0700) && errno != EEXIST)
        return -1;
    int fd = openat(d->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                        O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || st.st_uid != geteuid() ||
                    (st.st_mode & 022))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Opens file `name` of folder sfd for reading without following a link:
 * a regular file of ours (*st), else -1.  Anything else is refused before
 * it is opened (a FIFO would block, a device is never touched), and
 * checked again after. */
static int disk_open_file(int sfd, const char *name, struct stat *st)
{
    if (fstatat(sfd, name, st, AT_SYMLINK_NOFOLLOW) || !disk_ours(st))
        return -1;
    int fd = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
                                   O_NONBLOCK);
    if (fd >= 0 && (fstat(fd, st) || !disk_ours(st))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Opens the piece and checks its header and size.  @return the descriptor
 * (the bytes at *data_at), or -1. */
static int disk_open(struct os_disk *d, const char *ident, uint64_t off,
                     uint64_t len, off_t *data_at)
{
    uint8_t want[DISK_HEAD_MAX], got[DISK_HEAD_MAX];
    char hex[65];
    size_t hl = disk_header(want, ident, off, len);
    if (!hl || !disk_name(ident, hl - DISK_FIXED, off, len, hex))
        return -1;
    int sfd = disk_sub(d, hex, false);
    if (sfd < 0)
        return -1;
    struct stat st;
    int fd = disk_open_file(sfd, hex + 2, &st);
    close(sfd);
    if (fd < 0)
        return -1;
    if ((uint64_t)st.st_size != hl + len ||
        pread(fd, got, hl, 0) != (ssize_t)hl || memcmp(got, want, hl)) {
        close(fd);
        return -1;
    }
    *data_at = (off_t)hl;
    return fd;
}

bool tdb_os_disk_has(struct os_disk *d, const char *ident, uint64_t off,
                     uint64_t len)
{
    off_t at;
    int fd = disk_open(d, ident, off, len, &at);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

int tdb_os_disk_get(struct os_disk *d, const struct os_piece *p, uint64_t at,
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

/* ------------------------------------------------------ what is ours */

static bool disk_is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return !s[n];
}

/* Is file fd, named sub[0..1]/name, a piece?  Its name is 62 hex digits
 * and its header, the cache's, names an identity and a range that hash to
 * sub and name (its size may be short: a damaged piece is still ours). */
static bool disk_is_piece(int fd, const char *sub, const char *name)
{
    uint8_t h[DISK_HEAD_MAX];
    if (!disk_is_hex(name, 62) ||
        pread(fd, h, DISK_FIXED, 0) != DISK_FIXED || memcmp(h, DISK_MAGIC, 8))
        return false;
    struct tdb_cursor c;
    uint64_t off, len;
    uint32_t il;
    const char *ident = (const char *)h + DISK_FIXED;
    tdb_cur_init(&c, h + 8, DISK_FIXED - 8);
    tdb_cur_u64(&c, &off);
    tdb_cur_u64(&c, &len);
    if (tdb_cur_u32(&c, &il) || il > DISK_HEAD_MAX - DISK_FIXED ||
        pread(fd, h + DISK_FIXED, il, DISK_FIXED) != (ssize_t)il ||
        memchr(ident, 0, il))
        return false;
    char hex[65];
    return disk_name(ident, il, off, len, hex) &&
           !memcmp(hex, sub, 2) && !strcmp(hex + 2, name);
}

/* Is file fd named `name` a temporary file of the cache: tmp.PID.SEQ
 * (decimal numbers) starting with the magic (or with as much of it as
 * it holds: the header is written first)? */
static bool disk_is_tmp(int fd, const char *name, uint64_t size)
{
    const char *p = name + 4;
    if (strncmp(name, "tmp.", 4))
        return false;
    for (int part = 0; part < 2; part++) {
        const char *q = p;
        while (*q >= '0' && *q <= '9')
            q++;
        if (q == p || *q != (part ? 0 : '.'))
            return false;
        p = q + 1;
    }
    char m[8];
    size_t n = size < 8 ? (size_t)size : 8;
    return pread(fd, m, n, 0) == (ssize_t)n && !memcmp(m, DISK_MAGIC, n);
}

/* ------------------------------------------------------------ the bound */

struct disk_file {
    char sub[3];
    char name[63];
    time_t mtime;
    uint64_t size;
};

static int disk_file_cmp(const void *a, const void *b)
{
    const struct disk_file *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* The pieces of subfolder sfd (named sub) added to v (n of cap; out NULL:
 * counted only), the stale temporary files of the cache removed.
 * @return the bytes of its pieces. */
static uint64_t disk_scan_sub(int sfd, const char *sub, time_t now,
                              struct disk_file **v, size_t *n, size_t *cap,
                              bool keep)
{
    int dfd = dup(sfd);
    DIR *dd = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dd) {
        if (dfd >= 0)
            close(dfd);
        return 0;
    }
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(dd))) {
        const char *nm = de->d_name;
        struct stat st;
        if (nm[0] == '.' || strlen(nm) > 62)
            continue;
        int fd = disk_open_file(sfd, nm, &st);
        if (fd < 0)
            continue;
        bool piece = disk_is_piece(fd, sub, nm);
        bool tmp = !piece && disk_is_tmp(fd, nm, (uint64_t)st.st_size);
        close(fd);
        if (tmp && now - st.st_mtime > DISK_TMP_STALE)
            unlinkat(sfd, nm, 0);
        if (!piece)
            continue;
        total += (uint64_t)st.st_size;
        if (!keep)
            continue;
        if (*n == *cap) {
            size_t nc = *cap ? 2 * *cap : 256;
            struct disk_file *nv = realloc(*v, nc * sizeof *nv);
            if (!nv)
                continue;
            *v = nv;
            *cap = nc;
        }
        struct disk_file *f = &(*v)[(*n)++];
        memcpy(f->sub, sub, 3);
        memcpy(f->name, nm, strlen(nm) + 1);     /* at most 62: above */
        f->mtime = st.st_mtime;
        f->size = (uint64_t)st.st_size;
    }
    closedir(dd);
    return total;
}

/* Every piece under DIR into *out (out NULL: counted only), and leftover
 * temporary files removed.  @return the bytes they hold. */
static uint64_t disk_scan(struct os_disk *d, struct disk_file **out,
                          size_t *nout)
{
    uint64_t total = 0;
    size_t n = 0, cap = 0;
    struct disk_file *v = NULL;
    time_t now = time(NULL);
    for (int b = 0; b < 256; b++) {
        char sub[3];
        snprintf(sub, sizeof sub, "%02x", b);
        int sfd = disk_sub(d, sub, false);
        if (sfd < 0)
            continue;
        total += disk_scan_sub(sfd, sub, now, &v, &n, &cap, out != NULL);
        close(sfd);
    }
    if (out) {
        *out = v;
        *nout = n;
    }
    return total;
}

/* Removes the least recently used pieces until the folder holds at most
 * 9/10 of its bound.  d->lock held. */
static void disk_evict(struct os_disk *d)
{
    struct disk_file *v = NULL;
    size_t n = 0;
    uint64_t total = disk_scan(d, &v, &n);
    qsort(v, n, sizeof *v, disk_file_cmp);
    for (size_t i = 0; i < n && total > d->max / 10 * 9; i++) {
        int sfd = disk_sub(d, v[i].sub, false);
        if (sfd < 0)
            continue;
        if (!unlinkat(sfd, v[i].name, 0) || errno == ENOENT)
            total -= v[i].size;
        close(sfd);
    }
    free(v);
    d->used = total;
}

void tdb_os_disk_put(struct os_disk *d, const char *ident, uint64_t off,
                     uint64_t len, const void *data)
{
    uint8_t h[DISK_HEAD_MAX];
    char hex[65], tmp[64];
    size_t hl = disk_header(h, ident, off, len);
    if (!hl || len > d->max / 4 || tdb_os_disk_has(d, ident, off, len) ||
        !disk_name(ident, hl - DISK_FIXED, off, len, hex))
        return;
    pthread_mutex_lock(&d->lock);
    uint64_t seq = ++d->seq;
    pthread_mutex_unlock(&d->lock);
    snprintf(tmp, sizeof tmp, "tmp.%ld.%llu", (long)getpid(),
             (unsigned long long)seq);
    int sfd = disk_sub(d, hex, true);
    if (sfd < 0)
        return;
    /* O_EXCL: a link in the temporary file's place is not followed */
    int fd = openat(sfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
                                  O_NOFOLLOW, 0600);
    bool ok = fd >= 0 && !tdb_io_pwrite_all(fd, 0, h, hl) &&
              (!len || !tdb_io_pwrite_all(fd, hl, data, (size_t)len));
    if (fd >= 0 && close(fd))
        ok = false;
    /* the rename replaces whatever has the piece's name (a link
     * included), never what a link there points to */
    if (ok && !renameat(sfd, tmp, sfd, hex + 2)) {
        pthread_mutex_lock(&d->lock);
        d->used += hl + len;
        if (d->used > d->max)
            disk_evict(d);
        pthread_mutex_unlock(&d->lock);
    } else if (fd >= 0) {
        unlinkat(sfd, tmp, 0);
    }
    close(sfd);
}

int tdb_os_disk_open(struct os_disk **out, const char *dir, uint64_t max,
                     struct tdb_error *err)
{
    *out = NULL;
    if (mkdir(dir, 0700) && errno != EEXIST)
        return tdb_err(err, TDB_E_IO, "disk_cache=%s: cannot make the "
                       "folder: %s", dir, strerror(errno));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP || e == ENOTDIR)
            return tdb_err(err, TDB_E_IO, "disk_cache=%s: not a folder (a "
                           "symbolic link or a file); refused", dir);
        return tdb_err(err, TDB_E_IO, "disk_cache=%s: %s", dir, strerror(e));
    }
    struct stat st;
    int r = 0;
    if (fstat(fd, &st))
        r = tdb_err(err, TDB_E_IO, "disk_cache=%s: %s", dir, strerror(errno));
    else if (st.st_uid != geteuid())
        r = tdb_err(err, TDB_E_IO, "disk_cache=%s: owned by uid %lu, not by "
                    "us (uid %lu); refused: whoever owns it could plant "
                    "links or files there", dir, (unsigned long)st.st_uid,
                    (unsigned long)geteuid());
    else if (st.st_mode & 022)
        r = tdb_err(err, TDB_E_IO, "disk_cache=%s: writable by group or "
                    "others (mode %04o); refused: make it 0700", dir,
                    (unsigned)(st.st_mode & 07777));
    else if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700))
        r = tdb_err(err, TDB_E_IO, "disk_cache=%s: cannot make it mode "
                    "0700: %s", dir, strerror(errno));
    struct os_disk *d = r ? NULL : calloc(1, sizeof *d);
    if (!r && !d)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (r) {
        close(fd);
        return r;
    }
    d->dirfd = fd;
    d->max = max;
    pthread_mutex_init(&d->lock, NULL);
    d->used = disk_scan(d, NULL, NULL);
    if (d->used > d->max)
        disk_evict(d);
    *out = d;
    return 0;
}

void tdb_os_disk_close(struct os_disk *d)
{
    if (!d)
        return;
    pthread_mutex_destroy(&d->lock);
    close(d->dirfd);
    free(d);
}
