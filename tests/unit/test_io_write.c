/* test_io_write.c: the POSIX backend's files kept open for writing (io.c):
 * appends through one descriptor read back at once, sync closes it, a
 * rename or removal of an open file leaves the next write a new file, more
 * files than slots still write, and nothing stays open after sync or
 * destroy. */
#include "support.h"

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

/* Appends of 1 MiB (past the write-back hand-over size) through one kept
 * descriptor: each reads back at once; sync closes the file. */
static void test_appends(void)
{
    char *dir = tmpdir();
    CHECK(dir != NULL);
    if (!dir)
        return;
    int fds0 = open_fds();
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, dir), 0);
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
    char *dir = tmpdir();
    CHECK(dir != NULL);
    if (!dir)
        return;
    int fds0 = open_fds();
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, dir), 0);
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
    char *dir = tmpdir();
    CHECK(dir != NULL);
    if (!dir)
        return;
    int fds0 = open_fds();
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, dir), 0);
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
    char *dir = tmpdir();
    CHECK(dir != NULL);
    if (!dir)
        return;
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, dir), 0);
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

int main(void)
{
    RUN(test_appends);
    RUN(test_rename_remove_open);
    RUN(test_many_files);
    RUN(test_write_forgets_read_fd);
    return unit_done();
}
