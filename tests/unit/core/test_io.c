/* test_io.c: the POSIX backend's files kept open for writing (io.c):
 * appends through one descriptor read back at once, sync closes it, a
 * rename or removal of an open file leaves the next write a new file, more
 * files than slots still write, and nothing stays open after sync or
 * destroy.  And the wrappers over a backend (io.c): tdb_io_sub's paths
 * under its folder, tdb_io_faulty's counted and failed mutating calls,
 * both refusing a write that the wrapped backend cannot make.  And the
 * no-follow backend's dup_fd (io_nofollow.c): descriptors of a file's
 * bytes, links, hard links, folders and missing files refused. */
#include "../support.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Open descriptors of this process. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static char *tmpdir(void)
{
    static char tmpl[64];
    snprintf(tmpl, sizeof tmpl, "/tmp/tdbiowXXXXXX");
    return mkdtemp(tmpl);
}

static void rm_tree(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* The whole file at path of io, checked against want (n bytes). */
static void check_file(const struct tdb_io *io, const char *path,
                       const uint8_t *want, size_t n)
{
    uint64_t sz = 0;
    CHECK_EQ_INT(io->ops->size(io->ctx, path, &sz), 0);
    CHECK_EQ_INT(sz, n);
    uint8_t *b = malloc(n ? n : 1);
    CHECK_EQ_INT(io->ops->read_at(io->ctx, path, 0, b, n), 0);
    CHECK(n == 0 || memcmp(b, want, n) == 0);
    free(b);
}

/* A fresh folder (the caller removes it with rm_tree) and the
 * POSIX backend on it in *io; *fds0 (may be NULL): the descriptors open
 * before.  NULL, the test failed, when no folder can be made. */
static char *posix_fixture(struct tdb_io *io, int *fds0)
{
    char *dir = tmpdir();
    CHECK(dir != NULL);
    if (!dir)
        return NULL;
    if (fds0)
        *fds0 = open_fds();
    CHECK_EQ_INT(tdb_io_posix(io, dir), 0);
    return dir;
}

/* Appends of 1 MiB (past the write-back hand-over size) through one kept
 * descriptor: each reads back at once; sync closes the file. */
static void test_appends(void)
{
    int fds0;
    struct tdb_io io;
    char *dir = posix_fixture(&io, &fds0);
    if (!dir)
        return;
    CHECK_EQ_INT(io.ops->mkdir(io.ctx, "d"), 0);
    size_t chunk = (size_t)1 << 20, n = 20;
    uint8_t *all = malloc(chunk * n);
    for (size_t i = 0; i < chunk * n; i++)
        all[i] = (uint8_t)(i * 131 + i / chunk);
    uint8_t *back = malloc(chunk);
    for (size_t k = 0; k < n; k++) {
        CHECK_EQ_INT(io.ops->write_at(io.ctx, "d/f", k * chunk,
                                      all + k * chunk, chunk), 0);
        CHECK_EQ_INT(io.ops->read_at(io.ctx, "d/f", k * chunk, back, chunk), 0);
        CHECK_MEM(back, all + k * chunk, chunk);
    }
    /* the file is open for writing (and for reading) */
    CHECK(open_fds() > fds0);
    check_file(&io, "d/f", all, chunk * n);
    CHECK_EQ_INT(io.ops->sync(io.ctx, "d/f"), 0);
    CHECK_EQ_INT(io.ops->sync(io.ctx, "d/f"), 0); /* again: reopened, fine */
    check_file(&io, "d/f", all, chunk * n);
    tdb_io_free(&io);
    CHECK_EQ_INT(open_fds(), fds0);
    /* what another process sees */
    char p[128];
    snprintf(p, sizeof p, "%s/d/f", dir);
    struct stat st;
    CHECK_EQ_INT(stat(p, &st), 0);
    CHECK_EQ_INT(st.st_size, (long long)(chunk * n));
    free(back);
    free(all);
    rm_tree(dir);
}

/* A file renamed or removed while open for writing: the next write to its
 * old name makes a new file, the renamed one keeps its bytes. */
static void test_rename_remove_open(void)
{
    int fds0;
    struct tdb_io io;
    char *dir = posix_fixture(&io, &fds0);
    if (!dir)
        return;
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "a", 0, "old bytes", 9), 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "a", 9, "!", 1), 0);
    CHECK_EQ_INT(io.ops->rename(io.ctx, "a", "b"), 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "a", 0, "new", 3), 0);
    check_file(&io, "a", (const uint8_t *)"new", 3);
    check_file(&io, "b", (const uint8_t *)"old bytes!", 10);
    /* renamed over a file open for writing */
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "c", 0, "ccc", 3), 0);
    CHECK_EQ_INT(io.ops->rename(io.ctx, "b", "c"), 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "c", 10, "+", 1), 0);
    check_file(&io, "c", (const uint8_t *)"old bytes!+", 11);
    /* removed */
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "x", 0, "12345678", 8), 0);
    CHECK_EQ_INT(io.ops->remove(io.ctx, "x"), 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "x", 0, "ab", 2), 0);
    check_file(&io, "x", (const uint8_t *)"ab", 2);
    /* a folder renamed with a file open in it */
    CHECK_EQ_INT(io.ops->mkdir(io.ctx, "f1"), 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "f1/g", 0, "in f1", 5), 0);
    CHECK_EQ_INT(io.ops->rename(io.ctx, "f1", "f2"), 0);
    CHECK_EQ_INT(io.ops->mkdir(io.ctx, "f1"), 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "f1/g", 0, "F", 1), 0);
    check_file(&io, "f1/g", (const uint8_t *)"F", 1);
    check_file(&io, "f2/g", (const uint8_t *)"in f1", 5);
    tdb_io_free(&io);
    CHECK_EQ_INT(open_fds(), fds0);
    rm_tree(dir);
}

/* More files open for writing than the backend keeps: all are written;
 * descriptors stay bounded, and sync of each leaves none open. */
static void test_many_files(void)
{
    int fds0;
    struct tdb_io io;
    char *dir = posix_fixture(&io, &fds0);
    if (!dir)
        return;
    enum { N = 50 };
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < N; i++) {
            char p[32], v[32];
            snprintf(p, sizeof p, "f%d", i);
            int n = snprintf(v, sizeof v, "%02d.%d;", i, round);
            CHECK_EQ_INT(io.ops->write_at(io.ctx, p, (uint64_t)round * n, v,
                                          (size_t)n), 0);
        }
    CHECK(open_fds() - fds0 <= 32); /* the slots, not one per file */
    for (int i = 0; i < N; i++) {
        char p[32], want[64];
        snprintf(p, sizeof p, "f%d", i);
        snprintf(want, sizeof want, "%02d.0;%02d.1;%02d.2;", i, i, i);
        check_file(&io, p, (const uint8_t *)want, strlen(want));
        CHECK_EQ_INT(io.ops->sync(io.ctx, p), 0);
    }
    /* only the read cache is left */
    CHECK_EQ_INT(io.ops->rename(io.ctx, "f0", "g0"), 0);
    CHECK_EQ_INT(open_fds(), fds0);
    tdb_io_free(&io);
    CHECK_EQ_INT(open_fds(), fds0);
    rm_tree(dir);
}

/* A file read (its descriptor cached), then replaced behind the backend's
 * back: a write through the backend drops the cached descriptor, so reads
 * see the file now at that path. */
static void test_write_forgets_read_fd(void)
{
    struct tdb_io io;
    char *dir = posix_fixture(&io, NULL);
    if (!dir)
        return;
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "q", 0, "first", 5), 0);
    CHECK_EQ_INT(io.ops->sync(io.ctx, "q"), 0);
    check_file(&io, "q", (const uint8_t *)"first", 5);
    char p[128];
    snprintf(p, sizeof p, "%s/q", dir);
    CHECK_EQ_INT(unlink(p), 0);
    int fd = open(p, O_WRONLY | O_CREAT, 0644);
    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, "other", 5), 5);
    close(fd);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "q", 5, "!", 1), 0);
    check_file(&io, "q", (const uint8_t *)"other!", 6);
    tdb_io_free(&io);
    rm_tree(dir);
}

/* A read-only backend that keeps the last path it was asked about. */
static char ro_last[256];

static int ro_note(const char *path)
{
    snprintf(ro_last, sizeof ro_last, "%s", path);
    return 0;
}

static int ro_read_at(void *ctx, const char *path, uint64_t off, void *buf,
                      size_t len)
{
    memset(buf, 'r', len);
    return ro_note(path);
}

static int ro_size(void *ctx, const char *path, uint64_t *size)
{
    *size = 7;
    return ro_note(path);
}

static int ro_list(void *ctx, const char *path, tdb_io_list_fn fn, void *arg)
{
    return ro_note(path);
}

static int ro_is_dir(void *ctx, const char *path, bool *is_dir)
{
    *is_dir = true;
    return ro_note(path);
}

static const struct tdb_io_ops ro_ops = {
    .read_at = ro_read_at,
    .size = ro_size,
    .list = ro_list,
    .is_dir = ro_is_dir,
};

/* fa (faulty over a view holding z, "abcd") refuses the first two reads
 * of z, then the rest; then every one. */
static void check_read_faults(struct tdb_io *fa, struct tdb_io_fault *f)
{
    char buf[4];
    f->read_path = "z";
    f->read_fails = 2;
    CHECK_EQ_INT(fa->ops->read_at(fa->ctx, "z", 0, buf, 4), TDB_E_IO);
    CHECK_EQ_INT(fa->ops->read_at(fa->ctx, "zz", 0, buf, 1), TDB_E_NOENT);
    CHECK_EQ_INT(fa->ops->read_at(fa->ctx, "z", 1, buf, 2), TDB_E_IO);
    CHECK(f->read_fails == 0 && f->read_failed == 2);
    check_file(fa, "z", (const uint8_t *)"abcd", 4);
    f->read_fails = UINT64_MAX;
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(fa->ops->read_at(fa->ctx, "z", 0, buf, 1), TDB_E_IO);
    CHECK(f->read_fails == UINT64_MAX && f->read_failed == 5);
    CHECK_EQ_INT(fa->ops->size(fa->ctx, "z", &(uint64_t){0}), 0);
    f->read_path = NULL;
}

/* Fault injection over `sub` (a view of folder d of `mem`): the third
 * mutating call fails, the rest pass (the writes passed on counted);
 * reads are not counted; then a crash fails every call after it; then
 * two reads of one file fail, of no other, and after them every one. */
static void check_faults(struct tdb_io *mem, struct tdb_io *sub)
{
    struct tdb_io fa;
    struct tdb_io_fault f = {.fail_at = 3};
    CHECK_EQ_INT(tdb_io_faulty(&fa, sub, &f), 0);
    CHECK_EQ_INT(fa.ops->write_at(fa.ctx, "z", 0, "ab", 2), 0);
    CHECK_EQ_INT(fa.ops->write_at(fa.ctx, "z", 2, "cd", 2), 0);
    CHECK_EQ_INT(fa.ops->write_at(fa.ctx, "z", 4, "ef", 2), TDB_E_IO);
    CHECK_EQ_INT(fa.ops->sync(fa.ctx, "z"), 0);
    CHECK(f.count == 4 && f.failed == 1 && f.writes == 2);
    check_file(&fa, "z", (const uint8_t *)"abcd", 4); /* reads: not counted */
    check_file(mem, "d/z", (const uint8_t *)"abcd", 4);
    CHECK_EQ_INT(f.count, 4);
    f.crash = true;
    f.fail_at = 5;
    CHECK_EQ_INT(fa.ops->mkdir(fa.ctx, "m"), TDB_E_IO);
    CHECK_EQ_INT(fa.ops->remove(fa.ctx, "z"), TDB_E_IO); /* crashed */
    CHECK(f.count == 6 && f.failed == 3 && f.writes == 2);
    check_read_faults(&fa, &f);
    tdb_io_free(&fa);
}

/* A sub-folder view writes, renames and removes under its folder. */
static void check_sub_view(void)
{
    struct tdb_io mem, sub;
    uint64_t size = 0;
    bool isdir = false;
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    CHECK_EQ_INT(tdb_io_sub(&sub, &mem, "d"), 0);
    CHECK_EQ_INT(sub.ops->mkdir(sub.ctx, "e"), 0);
    CHECK_EQ_INT(sub.ops->write_at(sub.ctx, "e/x", 0, "hello", 5), 0);
    CHECK_EQ_INT(sub.ops->sync(sub.ctx, "e/x"), 0);
    check_file(&mem, "d/e/x", (const uint8_t *)"hello", 5);
    CHECK_EQ_INT(sub.ops->rename(sub.ctx, "e/x", "e/y"), 0);
    check_file(&sub, "e/y", (const uint8_t *)"hello", 5);
    CHECK_EQ_INT(mem.ops->is_dir(mem.ctx, "d/e", &isdir), 0);
    CHECK(isdir);
    CHECK_EQ_INT(sub.ops->remove(sub.ctx, "e/y"), 0);
    CHECK(mem.ops->size(mem.ctx, "d/e/y", &size) != 0);
    check_faults(&mem, &sub);
    tdb_io_free(&sub);
    tdb_io_free(&mem);
}

/* Over a read-only backend: paths mapped, file:// URIs unchanged, writes
 * refused (by the faulty wrapper uncounted), sync counted (nothing to
 * sync: 0). */
static void check_readonly_wrappers(void)
{
    struct tdb_io ro = {&ro_ops, NULL}, rsub, rfa;
    struct tdb_io_fault f = {0};
    uint64_t size = 0;
    bool isdir = false;
    char buf[8];
    CHECK_EQ_INT(tdb_io_sub(&rsub, &ro, "top/d"), 0);
    CHECK_EQ_INT(tdb_io_faulty(&rfa, &ro, &f), 0);
    CHECK_EQ_INT(rsub.ops->read_at(rsub.ctx, "a", 0, buf, 3), 0);
    CHECK(strcmp(ro_last, "top/d/a") == 0 && buf[0] == 'r');
    CHECK_EQ_INT(rsub.ops->size(rsub.ctx, "b", &size), 0);
    CHECK(strcmp(ro_last, "top/d/b") == 0 && size == 7);
    CHECK_EQ_INT(rsub.ops->list(rsub.ctx, "", NULL, NULL), 0);
    CHECK(strcmp(ro_last, "top/d") == 0);
    CHECK_EQ_INT(rsub.ops->is_dir(rsub.ctx, "file:///x/y", &isdir), 0);
    CHECK(strcmp(ro_last, "file:///x/y") == 0 && isdir);
    CHECK_EQ_INT(rfa.ops->read_at(rfa.ctx, "a", 0, buf, 3), 0);
    CHECK(strcmp(ro_last, "a") == 0);
    CHECK_EQ_INT(rfa.ops->write_at(rfa.ctx, "a", 0, "x", 1), TDB_E_ROFS);
    CHECK_EQ_INT(rfa.ops->mkdir(rfa.ctx, "a"), TDB_E_ROFS);
    CHECK_EQ_INT(rfa.ops->rename(rfa.ctx, "a", "b"), TDB_E_ROFS);
    CHECK_EQ_INT(rfa.ops->remove(rfa.ctx, "a"), TDB_E_ROFS);
    CHECK_EQ_INT(f.count, 0);
    CHECK_EQ_INT(rfa.ops->sync(rfa.ctx, "a"), 0);
    CHECK_EQ_INT(f.count, 1);
    CHECK_EQ_INT(rsub.ops->write_at(rsub.ctx, "a", 0, "x", 1), TDB_E_ROFS);
    CHECK_EQ_INT(rsub.ops->rename(rsub.ctx, "a", "b"), TDB_E_ROFS);
    CHECK_EQ_INT(rsub.ops->sync(rsub.ctx, "a"), 0);
    tdb_io_free(&rfa);
    tdb_io_free(&rsub);
}

static void test_wrappers(void)
{
    check_sub_view();
    check_readonly_wrappers();
}

/* ------------------------------------------------- no-follow dup_fd */

/* Writes n bytes as the whole file `dir`/`name` (plain POSIX). */
static void put_plain(const char *dir, const char *name, const void *p,
                      size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_EQ_INT(write(fd, p, n), (long long)n);
    CHECK_EQ_INT(close(fd), 0);
}

/* A symbolic link `dir`/`name` to `target`. */
static void put_link(const char *dir, const char *name, const char *target)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK_EQ_INT(symlink(target, path), 0);
}

/* fd, open for reading only, holds exactly the n bytes of want. */
static void check_fd_bytes(int fd, const uint8_t *want, size_t n)
{
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_EQ_INT(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
    struct stat st;
    CHECK_EQ_INT(fstat(fd, &st), 0);
    CHECK_EQ_INT(st.st_size, (long long)n);
    uint8_t *b = malloc(n + 1);
    CHECK_EQ_INT(pread(fd, b, n + 1, 0), (long long)n);
    CHECK_MEM(b, want, n);
    CHECK_EQ_INT(pread(fd, b, 3, (off_t)n - 3), 3);  /* a range, at its end */
    CHECK_MEM(b, want + n - 3, 3);
    free(b);
}

/* Under dir (the folder holding root `r`): r/top, r/sub/f, r/hl1 with a
 * hard link r/hl2, and links r/lnk (to top), r/abs (top, absolute),
 * r/out (to ../secret, outside the root), r/lsub (to folder sub). */
static void nf_tree(const char *dir, const uint8_t *f, size_t n)
{
    char r[128], path[256], path2[256];
    snprintf(r, sizeof r, "%s/r", dir);
    CHECK_EQ_INT(mkdir(r, 0700), 0);
    snprintf(path, sizeof path, "%s/sub", r);
    CHECK_EQ_INT(mkdir(path, 0700), 0);
    put_plain(r, "sub/f", f, n);
    put_plain(r, "top", "top bytes", 9);
    put_plain(r, "hl1", "shared", 6);
    snprintf(path, sizeof path, "%s/hl1", r);
    snprintf(path2, sizeof path2, "%s/hl2", r);
    CHECK_EQ_INT(link(path, path2), 0);
    put_plain(dir, "secret", "outside!", 8);
    put_link(r, "lnk", "top");
    snprintf(path, sizeof path, "%s/top", r);
    put_link(r, "abs", path);
    put_link(r, "out", "../secret");
    put_link(r, "lsub", "sub");
}

/* What dup_fd refuses, each as read_at does: links (to a file inside or
 * outside the root) and folders TDB_E_INVAL, hard links TDB_E_MLINK,
 * missing files TDB_E_NOENT, ".." TDB_E_INVAL.  A link to a folder on the
 * way is a link too (TDB_E_INVAL), though Linux's openat(O_DIRECTORY |
 * O_NOFOLLOW) of a link fails ENOTDIR, not ELOOP; a file on the way is
 * not there (TDB_E_NOENT). */
static void check_nf_refused(const struct tdb_io *io)
{
    static const struct { const char *path; int want; } cases[] = {
        {"lnk", TDB_E_INVAL}, {"abs", TDB_E_INVAL}, {"out", TDB_E_INVAL},
        {"lsub/f", TDB_E_INVAL}, {"top/f", TDB_E_NOENT},
        {"lsub", TDB_E_INVAL}, {"sub", TDB_E_INVAL},
        {"hl1", TDB_E_MLINK}, {"hl2", TDB_E_MLINK}, {"none", TDB_E_NOENT},
        {"sub/none", TDB_E_NOENT}, {"none/f", TDB_E_NOENT},
        {"../secret", TDB_E_INVAL}, {"sub/../top", TDB_E_INVAL},
    };
    char b[8];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = tdb_io_dup_fd(io, cases[i].path);
        CHECK_EQ_INT(fd, cases[i].want);
        if (fd >= 0)
            close(fd);
        CHECK_EQ_INT(io->ops->read_at(io->ctx, cases[i].path, 0, b, 1),
                     cases[i].want);
        if (fd != cases[i].want)
            fprintf(stderr, "  dup_fd(%s)\n", cases[i].path);
    }
}

/* The no-follow backend's dup_fd: it has descriptors (the memory backend
 * none); each is a new one, open for reading the file's bytes, still
 * good once the backend is gone; a write through the backend is seen by
 * the next one.  Every descriptor is closed at the end. */
static void test_nofollow_dup_fd(void)
{
    char *dir = tmpdir(), r[128];
    CHECK(dir != NULL);
    if (!dir)
        return;
    int fds0 = open_fds();
    uint8_t f[3001];
    for (size_t i = 0; i < sizeof f; i++)
        f[i] = (uint8_t)(i * 7 + i / 256);
    nf_tree(dir, f, sizeof f);
    snprintf(r, sizeof r, "%s/r", dir);
    int dfd = open(r, O_RDONLY | O_DIRECTORY);
    struct tdb_io io, mem;
    int made = dfd < 0 ? -1 : tdb_io_posix_nofollow(&io, dfd);
    CHECK_EQ_INT(made, 0);
    if (dfd >= 0)
        CHECK_EQ_INT(close(dfd), 0);
    if (made) {
        rm_tree(dir);
        return;
    }
    CHECK_EQ_INT(tdb_io_mem(&mem), 0);
    CHECK_EQ_INT(tdb_io_dup_fd(&io, NULL), 0);
    CHECK_EQ_INT(tdb_io_dup_fd(&mem, NULL), TDB_E_UNSUPPORTED);
    tdb_io_free(&mem);
    uint8_t b[9];
    CHECK_EQ_INT(io.ops->read_at(io.ctx, "sub/f", 100, b, 9), 0); /* cached */
    int a = tdb_io_dup_fd(&io, "sub/f"), c = tdb_io_dup_fd(&io, "./sub/f");
    check_fd_bytes(a, f, sizeof f);
    check_fd_bytes(c, f, sizeof f);
    CHECK(a != c);
    int t = tdb_io_dup_fd(&io, "top");
    check_fd_bytes(t, (const uint8_t *)"top bytes", 9);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, "top", 0, "TOP", 3), 0);
    int t2 = tdb_io_dup_fd(&io, "top");
    check_fd_bytes(t2, (const uint8_t *)"TOP bytes", 9);
    check_nf_refused(&io);
    tdb_io_free(&io);
    check_fd_bytes(a, f, sizeof f);   /* the caller's, not the backend's */
    int all[] = {a, c, t, t2};
    for (size_t i = 0; i < 4; i++)
        if (all[i] >= 0)
            CHECK_EQ_INT(close(all[i]), 0);
    CHECK_EQ_INT(open_fds(), fds0);
    rm_tree(dir);
}

int main(void)
{
    RUN(test_appends);
    RUN(test_rename_remove_open);
    RUN(test_many_files);
    RUN(test_write_forgets_read_fd);
    RUN(test_wrappers);
    RUN(test_nofollow_dup_fd);
    return unit_done();
}
