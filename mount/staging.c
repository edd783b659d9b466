/* staging.c: the mount contract's "Writing" area: MOUNT/__staging/NAME/FILE kept as real files under staging_dir. */
#include "staging.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "tiledb_format_write.h"

/* One inode number handed to the kernel.  `path` is relative to the
 * folder ("NAME" or "NAME/FILE"); NULL once the name it stood for is gone
 * (unlinked, renamed over, committed), so that a new file of the same name
 * gets a new number. */
struct staging_ent {
    uint64_t ino;
    char *path;
    uint64_t nlookup;
};

struct tdbm_staging {
    char *dir;
    int dirfd;
    pthread_mutex_t lock;
    struct staging_ent *ents;
    size_t n, cap;
    uint64_t next;
};

/* Whether the staging folder open as fd is ours alone: owned by us, not
 * writable by others, made mode 0700, locked against a second daemon.
 * @return 0 or -errno with why[cap] saying why. */
static int staging_claim(int fd, char *why, size_t cap)
{
    struct stat sb;
    int e;
    if (fstat(fd, &sb) != 0) {
        e = errno;
        snprintf(why, cap, "%s", strerror(e));
        return -e;
    }
    if (sb.st_uid != geteuid()) {
        snprintf(why, cap, "owned by uid %lu, not by us (uid %lu); refused: "
                 "whoever owns it could read or plant staged files",
                 (unsigned long)sb.st_uid, (unsigned long)geteuid());
        return -EPERM;
    }
    if (sb.st_mode & 022) {
        snprintf(why, cap, "writable by group or others (mode %04o); "
                 "refused: make it 0700", (unsigned)(sb.st_mode & 07777));
        return -EPERM;
    }
    /* ours: staged bytes are private to us */
    if ((sb.st_mode & 07777) != 0700 && fchmod(fd, 0700) != 0) {
        e = errno;
        snprintf(why, cap, "cannot make it mode 0700: %s", strerror(e));
        return -e;
    }
    /* one daemon per staging folder: a second one could remove what the
     * first is committing */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        e = errno;
        snprintf(why, cap, "%s", e == EWOULDBLOCK
                                     ? "in use by another tiledbfs (give each "
                                       "writable mount its own staging_dir)"
                                     : strerror(e));
        return e == EWOULDBLOCK ? -EBUSY : -e;
    }
    return 0;
}

int tdbm_staging_open(struct tdbm_staging **out, const char *dir,
                      char *why, size_t cap)
{
    struct tdbm_staging *st;
    int fd, e;

    snprintf(why, cap, "%s", "");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        e = errno;
        snprintf(why, cap, "cannot create it: %s", strerror(e));
        return -e;
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        if (e == ELOOP || e == ENOTDIR)
            snprintf(why, cap, "not a folder (a symbolic link or a file); "
                     "refused");
        else
            snprintf(why, cap, "%s", strerror(e));
        return -e;
    }
    if ((e = staging_claim(fd, why, cap)) != 0) {
        close(fd);
        return e;
    }
    st = calloc(1, sizeof *st);
    if (!st || !(st->dir = strdup(dir))) {
        free(st);
        close(fd);
        snprintf(why, cap, "%s", strerror(ENOMEM));
        return -ENOMEM;
    }
    st->dirfd = fd;
    pthread_mutex_init(&st->lock, NULL);
    st->next = 2;
    *out = st;
    return 0;
}

int tdbm_staging_fd(const struct tdbm_staging *st)
{
    return st->dirfd;
}

void tdbm_staging_close(struct tdbm_staging *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++)
        free(st->ents[i].path);
    free(st->ents);
    close(st->dirfd);
    pthread_mutex_destroy(&st->lock);
    free(st->dir);
    free(st);
}

const char *tdbm_staging_dir(const struct tdbm_staging *st)
{
    return st->dir;
}

/* ------------------------------------------------------- the table */

static struct staging_ent *staging_find_ino(struct tdbm_staging *st,
                                            uint64_t ino)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->ents[i].ino == ino)
            return &st->ents[i];
    return NULL;
}

static struct staging_ent *staging_find_path(struct tdbm_staging *st,
                                             const char *path)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->ents[i].path && strcmp(st->ents[i].path, path) == 0)
            return &st->ents[i];
    return NULL;
}

/* The relative path of `ino` ("" for the root), or NULL when it is gone. */
static const char *staging_path(struct tdbm_staging *st, uint64_t ino)
{
    struct staging_ent *e;

    if (ino == TDBM_STAGING_ROOT)
        return "";
    e = staging_find_ino(st, ino);
    return e ? e->path : NULL;
}

/* 0 for the root, 1 for a staged folder, 2 for a file in one. */
static int staging_depth(const char *path)
{
    if (!path[0])
        return 0;
    return strchr(path, '/') ? 2 : 1;
}

bool tdbm_staging_reserved(const char *name)
{
    return tdb_staged_is_trash(name) || !strcmp(name, TDBM_STAGING_UPLOADS);
}

static bool staging_name_ok(const char *name)
{
    return name[0] && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
           !strchr(name, '/') && strlen(name) < NAME_MAX;
}

/* parent/name into buf.  @return 0 or -errno. */
static int staging_join(struct tdbm_staging *st, uint64_t parent,
                        const char *name, char *buf, size_t cap,
                        int *parent_depth)
{
    const char *p = staging_path(st, parent);
    int n;

    if (!p)
        return -ENOENT;
    if (!staging_name_ok(name))
        return -EINVAL;
    *parent_depth = staging_depth(p);
    if (*parent_depth >= 2)
        return -ENOTDIR;
    if (*parent_depth == 0 && tdbm_staging_reserved(name))
        return -EINVAL; /* a committed folder being removed: not there */
    n = p[0] ? snprintf(buf, cap, "%s/%s", p, name)
             : snprintf(buf, cap, "%s", name);
    if (n < 0 || (size_t)n >= cap)
        return -ENAMETOOLONG;
    return 0;
}

/* The entry for `path`, made when missing; counts one lookup. */
static int staging_ref(struct tdbm_staging *st, const char *path,
                       uint64_t *ino)
{
    struct staging_ent *e = staging_find_path(st, path);

    if (!e) {
        if (st->n == st->cap) {
            size_t cap = st->cap ? 2 * st->cap : 16;
            struct staging_ent *v = realloc(st->ents, cap * sizeof *v);
            if (!v)
                return -ENOMEM;
            st->ents = v;
            st->cap = cap;
        }
        e = &st->ents[st->n];
        e->path = strdup(path);
        if (!e->path)
            return -ENOMEM;
        e->ino = TDBM_STAGING_BIT | st->next++;
        e->nlookup = 0;
        st->n++;
    }
    e->nlookup++;
    *ino = e->ino;
    return 0;
}

/* Forgets the names `path` and everything under it (they are gone). */
static void staging_detach(struct tdbm_staging *st, const char *path)
{
    size_t len = strlen(path);

    for (size_t i = 0; i < st->n; i++) {
        char *p = st->ents[i].path;
        if (p && strncmp(p, path, len) == 0 &&
            (p[len] == '\0' || p[len] == '/')) {
            free(p);
            st->ents[i].path = NULL;
        }
    }
}

/* Renames the entries `from` and under it to `to`. */
static int staging_move(struct tdbm_staging *st, const char *from,
                        const char *to)
{
    size_t len = strlen(from);

    for (size_t i = 0; i < st->n; i++) {
        char *p = st->ents[i].path, *np;
        if (!p || strncmp(p, from, len) != 0 ||
            (p[len] != '\0' && p[len] != '/'))
            continue;
        if (asprintf(&np, "%s%s", to, p + len) < 0)
            return -ENOMEM;
        free(p);
        st->ents[i].path = np;
    }
    return 0;
}

/* Staged entries are private to the daemon's user: whatever mode bits an
 * entry has on disk (made by an older version, or by hand), the mount shows
 * and grants only the owner's, so that the kernel's permission checks
 * (default_permissions) let no one else in. */
#define STAGING_MODE_MASK 0700

static void staging_private(struct stat *out)
{
    out->st_mode &= (mode_t)(S_IFMT | STAGING_MODE_MASK);
}

static int staging_fstat(struct tdbm_staging *st, const char *path,
                         uint64_t ino, struct stat *out)
{
    if (path[0] ? fstatat(st->dirfd, path, out, AT_SYMLINK_NOFOLLOW) != 0
                : fstat(st->dirfd, out) != 0)
        return -errno;
    out->st_ino = ino;
    staging_private(out);
    return 0;
}

/* ------------------------------------------------------------ the calls */

int tdbm_staging_stat(struct tdbm_staging *st, uint64_t ino,
                       struct stat *out)
{
    const char *p;
    int rc;

    pthread_mutex_lock(&st->lock);
    p = staging_path(st, ino);
    rc = p ? staging_fstat(st, p, ino, out) : -ENOENT;
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int tdbm_staging_lookup(struct tdbm_staging *st, uint64_t parent,
                         const char *name, uint64_t *ino, struct stat *out)
{
    char path[PATH_MAX];
    int depth, rc;

    pthread_mutex_lock(&st->lock);
    rc = staging_join(st, parent, name, path, sizeof path, &depth);
    if (rc == -EINVAL)
        rc = -ENOENT;
    if (rc == 0 && fstatat(st->dirfd, path, out, AT_SYMLINK_NOFOLLOW) != 0)
        rc = -errno;
    if (rc == 0)
        rc = staging_ref(st, path, ino);
    if (rc == 0) {
        out->st_ino = *ino;
        staging_private(out);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

void tdbm_staging_forget(struct tdbm_staging *st, uint64_t ino, uint64_t n)
{
    struct staging_ent *e;

    pthread_mutex_lock(&st->lock);
    e = staging_find_ino(st, ino);
    if (e) {
        e->nlookup = e->nlookup > n ? e->nlookup - n : 0;
        if (e->nlookup == 0) {
            free(e->path);
            *e = st->ents[--st->n];
        }
    }
    pthread_mutex_unlock(&st->lock);
}

int tdbm_staging_mkdir(struct tdbm_staging *st, uint64_t parent,
                        const char *name, mode_t mode, uint64_t *ino,
                        struct stat *out)
{
    char path[PATH_MAX];
    int depth, rc;

    pthread_mutex_lock(&st->lock);
    rc = staging_join(st, parent, name, path, sizeof path, &depth);
    if (rc == 0 && depth != 0)
        rc = -EPERM; /* a staged fragment is one flat folder of files */
    if (rc == 0 && mkdirat(st->dirfd, path, 0700) != 0)
        rc = -errno;
    if (rc == 0) {
        staging_detach(st, path);
        rc = staging_ref(st, path, ino);
    }
    if (rc == 0)
        rc = staging_fstat(st, path, *ino, out);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* Removes every file of folder `path`; with only_error, only when
 * __error is all there is (then it goes). */
static int staging_empty(struct tdbm_staging *st, const char *path,
                         bool only_error)
{
    int fd = openat(st->dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct dirent *d;
    DIR *dir;
    int rc = 0;

    if (fd < 0)
        return -errno;
    dir = fdopendir(fd);
    if (!dir) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if (only_error) {
        /* the files the daemon and the writer leave (__error, and the
         * writer's __fragment marker) do not keep a folder from rmdir */
        bool other = false, err = false, mark = false;
        while ((d = readdir(dir)) != NULL) {
            if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
                continue;
            if (!strcmp(d->d_name, TDBM_STAGING_ERROR))
                err = true;
            else if (!strcmp(d->d_name, "__fragment"))
                mark = true;
            else
                other = true;
        }
        if (!other && err && unlinkat(dirfd(dir), TDBM_STAGING_ERROR, 0) != 0)
            rc = -errno;
        if (!other && !rc && mark && unlinkat(dirfd(dir), "__fragment", 0) != 0)
            rc = -errno;
    } else {
        while ((d = readdir(dir)) != NULL) {
            if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
                continue;
            if (unlinkat(dirfd(dir), d->d_name, 0) != 0 && rc == 0)
                rc = -errno;
        }
    }
    closedir(dir);
    return rc;
}

int tdbm_staging_rmdir(struct tdbm_staging *st, uint64_t parent,
                        const char *name)
{
    char path[PATH_MAX];
    int depth, rc;

    pthread_mutex_lock(&st->lock);
    rc = staging_join(st, parent, name, path, sizeof path, &depth);
    if (rc == 0 && depth == 0)
        staging_empty(st, path, true);
    if (rc == 0 && unlinkat(st->dirfd, path, AT_REMOVEDIR) != 0)
        rc = -errno;
    if (rc == 0)
        staging_detach(st, path);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int tdbm_staging_create(struct tdbm_staging *st, uint64_t parent,
                         const char *name, int flags, mode_t mode,
                         struct tdbm_staged_file *out)
{
    char path[PATH_MAX];
    int depth, rc;

    out->fd = -1;
    pthread_mutex_lock(&st->lock);
    rc = staging_join(st, parent, name, path, sizeof path, &depth);
    if (rc == 0 && depth != 1)
        rc = -EPERM; /* files go into a staged folder */
    if (rc == 0) {
        struct stat old;
        bool existed = fstatat(st->dirfd, path, &old,
                               AT_SYMLINK_NOFOLLOW) == 0;
        out->fd = openat(st->dirfd, path, (flags & ~O_NOFOLLOW) | O_CREAT |
                                              O_CLOEXEC | O_NOFOLLOW,
                         (mode & STAGING_MODE_MASK) | S_IRUSR | S_IWUSR);
        if (out->fd < 0)
            rc = -errno;
        else if (!existed)
            staging_detach(st, path);
    }
    if (rc == 0)
        rc = staging_ref(st, path, &out->ino);
    if (rc == 0 && fstat(out->fd, &out->st) != 0)
        rc = -errno;
    if (rc == 0 && !S_ISREG(out->st.st_mode))
        rc = -EPERM;
    if (rc == 0) {
        out->st.st_ino = out->ino;
        staging_private(&out->st);
    }
    pthread_mutex_unlock(&st->lock);
    if (rc < 0 && out->fd >= 0) {
        close(out->fd);
        out->fd = -1;
    }
    return rc;
}

int tdbm_staging_open_file(struct tdbm_staging *st, uint64_t ino,
                            int flags, int *fd)
{
    const char *p;
    int rc = 0;

    pthread_mutex_lock(&st->lock);
    p = staging_path(st, ino);
    if (!p)
        rc = -ENOENT;
    else if (staging_depth(p) == 0)
        rc = -EISDIR;
    if (rc == 0) {
        *fd = openat(st->dirfd, p,
                     (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC | O_NOFOLLOW);
        if (*fd < 0)
            rc = -errno;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int tdbm_staging_unlink(struct tdbm_staging *st, uint64_t parent,
                         const char *name)
{
    char path[PATH_MAX];
    int depth, rc;

    pthread_mutex_lock(&st->lock);
    rc = staging_join(st, parent, name, path, sizeof path, &depth);
    if (rc == 0 && unlinkat(st->dirfd, path, 0) != 0)
        rc = -errno;
    if (rc == 0)
        staging_detach(st, path);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int tdbm_staging_rename(struct tdbm_staging *st, uint64_t parent,
                         const char *name, uint64_t newparent,
                         const char *newname, unsigned flags)
{
    char from[PATH_MAX], to[PATH_MAX];
    int d1, d2, rc;
    struct stat sb;

    pthread_mutex_lock(&st->lock);
    rc = staging_join(st, parent, name, from, sizeof from, &d1);
    if (rc == 0)
        rc = staging_join(st, newparent, newname, to, sizeof to, &d2);
    if (rc == 0 && fstatat(st->dirfd, from, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        rc = -errno;
    /* Folders stay at the top, files inside folders. */
    if (rc == 0 && S_ISDIR(sb.st_mode) && d2 != 0)
        rc = -EPERM;
    if (rc == 0 && !S_ISDIR(sb.st_mode) && d2 != 1)
        rc = -EPERM;
    if (rc == 0 &&
        renameat2(st->dirfd, from, st->dirfd, to, flags) != 0)
        rc = -errno;
    if (rc == 0 && strcmp(from, to) != 0) {
        staging_detach(st, to);
        rc = staging_move(st, from, to);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* The mode of staged path p (open as fd, or -1): the owner's bits of
 * mode only; group and other bits (and set-id, sticky) are dropped,
 * never granted; a folder keeps rwx for its owner.  @return 0 or -errno. */
static int staging_set_mode(struct tdbm_staging *st, const char *p, int fd,
                            mode_t mode)
{
    mode_t md = mode & STAGING_MODE_MASK;
    if (staging_depth(p) < 2)
        md = 0700;
    if ((fd >= 0 ? fchmod(fd, md)
                 : (p[0] ? fchmodat(st->dirfd, p, md, 0)
                         : fchmod(st->dirfd, md))) != 0)
        return -errno;
    return 0;
}

/* The size of staged file p (open as fd, or -1).  @return 0 or -errno. */
static int staging_set_size(struct tdbm_staging *st, const char *p, int fd,
                            off_t size)
{
    int rc = 0, tfd = fd;
    if (tfd < 0) {
        tfd = openat(st->dirfd, p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (tfd < 0)
            return -errno;
    }
    if (ftruncate(tfd, size) != 0)
        rc = -errno;
    if (tfd != fd)
        close(tfd);
    return rc;
}

/* The times of staged path p (open as fd, or -1) that `valid` names:
 * attr's, or now.  @return 0 or -errno. */
static int staging_set_times(struct tdbm_staging *st, const char *p, int fd,
                             const struct stat *attr, unsigned valid)
{
    struct timespec tv[2];
    tv[0].tv_sec = 0;
    tv[0].tv_nsec = UTIME_OMIT;
    tv[1] = tv[0];
    if (valid & TDBM_SET_ATIME_NOW)
        tv[0].tv_nsec = UTIME_NOW;
    else if (valid & TDBM_SET_ATIME)
        tv[0] = attr->st_atim;
    if (valid & TDBM_SET_MTIME_NOW)
        tv[1].tv_nsec = UTIME_NOW;
    else if (valid & TDBM_SET_MTIME)
        tv[1] = attr->st_mtim;
    if ((fd >= 0 ? futimens(fd, tv)
                 : utimensat(st->dirfd, p[0] ? p : ".", tv,
                             AT_SYMLINK_NOFOLLOW)) != 0)
        return -errno;
    return 0;
}

int tdbm_staging_setattr(struct tdbm_staging *st, uint64_t ino, int fd,
                         const struct stat *attr, unsigned valid,
                         struct stat *out)
{
    const char *p;
    int rc = 0;

    pthread_mutex_lock(&st->lock);
    p = staging_path(st, ino);
    if (!p)
        rc = -ENOENT;
    if (!rc && (valid & TDBM_SET_MODE))
        rc = staging_set_mode(st, p, fd, attr->st_mode);
    if (!rc && (valid & TDBM_SET_SIZE))
        rc = staging_set_size(st, p, fd, attr->st_size);
    if (!rc && (valid & (TDBM_SET_ATIME | TDBM_SET_MTIME)))
        rc = staging_set_times(st, p, fd, attr, valid);
    if (!rc)
        rc = staging_fstat(st, p, ino, out);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

static int staging_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tdbm_staging_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int tdbm_staging_list(struct tdbm_staging *st, uint64_t ino, char ***names,
                       size_t *n)
{
    char **v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *d;
    const char *p;
    DIR *dir = NULL;
    bool root;
    int fd, rc = 0;

    pthread_mutex_lock(&st->lock);
    p = staging_path(st, ino);
    if (!p) {
        pthread_mutex_unlock(&st->lock);
        return -ENOENT;
    }
    root = !p[0];
    fd = openat(st->dirfd, root ? "." : p,
                O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    pthread_mutex_unlock(&st->lock);
    if (fd < 0)
        return -errno;
    dir = fdopendir(fd);
    if (!dir) {
        rc = -errno;
        close(fd);
        return rc;
    }
    while ((d = readdir(dir)) != NULL) {
        if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..") ||
            (root && tdbm_staging_reserved(d->d_name)))
            continue;
        if (cnt == cap) {
            size_t nc = cap ? 2 * cap : 16;
            char **nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        if (!(v[cnt] = strdup(d->d_name))) {
            rc = -ENOMEM;
            break;
        }
        cnt++;
    }
    closedir(dir);
    if (rc) {
        tdbm_staging_names_free(v, cnt);
        return rc;
    }
    if (cnt)
        qsort(v, cnt, sizeof *v, staging_cmp);
    *names = v;
    *n = cnt;
    return 0;
}

int tdbm_staging_check_commit(struct tdbm_staging *st, uint64_t parent,
                               const char *name)
{
    struct stat sb;

    if (parent != TDBM_STAGING_ROOT)
        return -EINVAL;
    if (!staging_name_ok(name) || tdbm_staging_reserved(name))
        return -ENOENT;
    if (fstatat(st->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    return S_ISDIR(sb.st_mode) ? 0 : -ENOTDIR;
}

int tdbm_staging_set_error(struct tdbm_staging *st, const char *name,
                            const char *msg)
{
    size_t len = strlen(msg), done = 0;
    int dfd, fd, rc = 0;

    if (!staging_name_ok(name))
        return -EINVAL;
    dfd = openat(st->dirfd, name,
                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    /* a new file, never one planted in its place (a hard link would
     * truncate someone else's file) */
    if (unlinkat(dfd, TDBM_STAGING_ERROR, 0) != 0 && errno != ENOENT) {
        rc = -errno;
        close(dfd);
        return rc;
    }
    fd = openat(dfd, TDBM_STAGING_ERROR,
                O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW |
                    O_NONBLOCK,
                0600);
    rc = fd < 0 ? -errno : 0;
    close(dfd);
    if (rc)
        return rc;
    while (rc == 0 && done <= len) {
        const char *p = done < len ? msg + done : "\n";
        size_t want = done < len ? len - done : 1;
        ssize_t w = write(fd, p, want);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            rc = -errno;
        else
            done += (size_t)w;
    }
    close(fd);
    return rc;
}

int tdbm_staging_remove(struct tdbm_staging *st, const char *name,
                         char *why, size_t cap)
{
    struct tdb_error err;
    struct tdb_io io;
    int rc;

    snprintf(why, cap, "%s", "");
    if (!staging_name_ok(name))
        return -EINVAL;
    memset(&err, 0, sizeof err);
    pthread_mutex_lock(&st->lock);
    rc = tdb_io_posix_nofollow(&io, st->dirfd);
    if (rc == 0) {
        rc = tdb_staged_remove(&io, name, &err);
        tdb_io_free(&io);
    }
    if (rc)
        snprintf(why, cap, "%s", tdb_error_text(rc, &err));
    staging_detach(st, name);
    pthread_mutex_unlock(&st->lock);
    return rc ? -EIO : 0;
}
