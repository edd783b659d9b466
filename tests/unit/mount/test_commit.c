/* test_commit.c: commits of staged folders (mount/commit.c): dense,
 * sparse, refused input with its reason in __error, the errno a failed
 * write reaches the user as, and a write the storage refuses (EACCES). */
#include "fixture.h"
#include "core/core.h"
#include "core/io_local.h"
#include "../support.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The errno a cause of a failed write reaches the user as: the backends'
 * one mapping (tdb_io_errno), back through tdb_errno, and the cause named
 * in the message (EDQUOT, which a test cannot make, among them). */
static void test_errno_mapping(void)
{
    static const struct {
        int e, code, back;
        const char *text;
    } map[] = {
        {EACCES, TDB_E_ACCES, EACCES, "permission denied"},
        {EPERM, TDB_E_ACCES, EACCES, "permission denied"},
        {ENOSPC, TDB_E_NOSPC, ENOSPC, "no space left on the device"},
        {EDQUOT, TDB_E_DQUOT, EDQUOT, "disk quota exceeded"},
        {EROFS, TDB_E_ROFS, EROFS, "read-only"},
        {ENOENT, TDB_E_NOENT, ENOENT, "not found"},
        {ENOMEM, TDB_E_NOMEM, ENOMEM, "out of memory"},
        {EIO, TDB_E_IO, EIO, "I/O error"},
        {EFBIG, TDB_E_IO, EIO, "I/O error"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        CHECK_EQ_INT(tdb_io_errno(map[i].e), map[i].code);
        CHECK_EQ_INT(tdb_errno(map[i].code), map[i].back);
        CHECK(strcmp(tdb_strerror(map[i].code), map[i].text) == 0);
    }
    CHECK_EQ_INT(tdb_errno(TDB_E_MLINK), EMLINK);
}

/* The checks of test_write_eacces, as uid 65534 (not root, so that the
 * kernel's permission checks apply). */
static void eacces_as_nobody(void)
{
    struct fixture f;
    struct tdbm_entry e;
    char path[256], buf[2048];
    uint64_t stg, frag;
    size_t n;
    int fd;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    stg = look(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    CHECK_EQ_INT(tdbm_mkdir(f.m, stg, "s", 0700, &e), 0);
    stage(f.m, e.ino, "a", buf, 200);
    stage(f.m, e.ino, "b", buf, 400);
    tdbm_forget(f.m, e.ino, 1);
    /* the array's folders become read-only for us after the mount */
    snprintf(path, sizeof path, "%s/__fragments", f.arr);
    CHECK_EQ_INT(chmod(path, 0555), 0);
    snprintf(path, sizeof path, "%s/__meta", f.arr);
    CHECK_EQ_INT(chmod(path, 0555), 0);
    logbuf[0] = '\0';
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(tdbm_rename(f.m, stg, "s", frag, "x", 0), -EACCES);
    snprintf(path, sizeof path, "%s/stg/s/__error", f.dir);
    fd = open(path, O_RDONLY);
    n = fd >= 0 ? (size_t)read(fd, buf, sizeof buf - 1) : 0;
    if (fd >= 0)
        close(fd);
    buf[n < sizeof buf ? n : 0] = '\0';
    CHECK(strstr(buf, "permission denied") != NULL);
    CHECK(strstr(logbuf, "commit of __staging/s: ") != NULL &&
          strstr(logbuf, "permission denied") != NULL);
    CHECK_EQ_INT(meta_put(f.m, "k", NULL, "v", 1), -EACCES);
    CHECK(strstr(logbuf, "__meta/k: ") != NULL);
    CHECK_EQ_INT(meta_files(&f), 0);
    fx_close(&f);
}

/* A write the storage refuses for a user who is not root (the array's
 * folders made read-only after the mount): EACCES reaches the commit and
 * the metadata close, and __error and the log say "permission denied".
 * The schema it needs is copied first, as root, where uid 65534 can read
 * it: the corpus may be in a folder only root reads (a checkout in
 * /root). */
static void test_write_eacces(void)
{
    char *tmp = unit_temp_dir("eacces"), path[1024];
    struct tdb_io src, dst;
    int status = -1;
    pid_t pid;

    CHECK(tmp != NULL);
    if (!tmp)
        return;
    CHECK_EQ_INT(chmod(tmp, 0755), 0);
    snprintf(path, sizeof path, "%s/dense_1d_basic/array", unit_corpus());
    CHECK_EQ_INT(tdb_io_posix(&src, path), 0);
    CHECK_EQ_INT(tdb_io_posix(&dst, tmp), 0);
    CHECK_EQ_INT(dst.ops->mkdir(dst.ctx, "dense_1d_basic"), 0);
    CHECK_EQ_INT(dst.ops->mkdir(dst.ctx, "dense_1d_basic/array"), 0);
    CHECK_EQ_INT(unit_copy_tree(&src, "__schema", &dst,
                                "dense_1d_basic/array/__schema"), 0);
    tdb_io_free(&src);
    tdb_io_free(&dst);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (setenv("TILEDBFS_CORPUS", tmp, 1) != 0 || setgroups(0, NULL) != 0 ||
            setresgid(65534, 65534, 65534) != 0 ||
            setresuid(65534, 65534, 65534) != 0) {
            perror("  switching to uid 65534");
            _exit(2);
        }
        eacces_as_nobody();
        fflush(stdout);
        _exit(unit_cur_failed ? 1 : 0);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unit_rm_rf(tmp);
    free(tmp);
}

static void test_commit_dense(void)
{
    struct fixture f;
    int32_t a[50], before[50], old[50], now[50];
    double b[50];
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    struct stat st;
    double timeout;
    size_t got;
    uint64_t ia, stg, frag;

    for (int i = 0; i < 50; i++) {
        a[i] = 1000 + 7 * i;
        b[i] = i * 0.25;
    }
    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    /* a handle on the first tree's a */
    ia = look(f.m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(ia >> TDBM_GEN_SHIFT, 1);
    CHECK_EQ_INT(tdbm_open(f.m, ia, O_RDONLY, &h, &oi), 0);
    CHECK(oi.keep_cache && oi.noflush && !oi.direct_io);
    CHECK_EQ_INT(mount_read(f.m, h, 0, before, sizeof before, &got), 0);
    CHECK_EQ_INT(got, sizeof before);

    stg = look(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    CHECK_EQ_INT(stg, TDBM_STAGING_ROOT);
    CHECK_EQ_INT(tdbm_mkdir(f.m, stg, "s", 0700, &e), 0);
    stage(f.m, e.ino, "a", a, sizeof a);
    stage(f.m, e.ino, "b", b, sizeof b);
    tdbm_forget(f.m, e.ino, 1);
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(tdbm_rename(f.m, stg, "s", frag, "x", 0), 0);
    CHECK_EQ_INT(invals, 1);
    CHECK_EQ_INT(look(f.m, stg, "s"), 0); /* the staged folder is gone */

    /* the old handle reads the old bytes; the path, the new ones */
    CHECK_EQ_INT(mount_read(f.m, h, 0, old, sizeof old, &got), 0);
    CHECK_EQ_INT(got, sizeof old);
    CHECK_MEM(old, before, sizeof old);
    CHECK(memcmp(before, a, sizeof a) != 0);
    {
        uint64_t na = look(f.m, TDBM_ROOT_INO, "a");
        CHECK_EQ_INT(na >> TDBM_GEN_SHIFT, 2);
        CHECK_EQ_INT(slurp(f.m, na, now, sizeof now), sizeof now);
        CHECK_MEM(now, a, sizeof a);
        tdbm_forget(f.m, na, 1);
    }
    /* the old tree closes with its last handle: its numbers are stale */
    CHECK_EQ_INT(tdbm_getattr(f.m, ia, &st, &timeout), 0);
    tdbm_release(f.m, h);
    CHECK_EQ_INT(tdbm_getattr(f.m, ia, &st, &timeout), -ESTALE);
    tdbm_forget(f.m, ia, 1);
    CHECK_EQ_INT(tdbm_getattr(f.m, TDBM_ROOT_INO, &st, &timeout), 0);
    CHECK(S_ISDIR(st.st_mode) && timeout == 0.0); /* rw: root not cached */
    fx_close(&f);
}

static void test_commit_refused(void)
{
    struct fixture f;
    struct tdbm_entry e;
    char buf[2048];
    uint64_t stg, frag, err, fa;
    size_t n;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    stg = look(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    CHECK_EQ_INT(tdbm_mkdir(f.m, stg, "w", 0700, &e), 0);
    stage(f.m, e.ino, "a", "0123456789", 10); /* not 50 INT32 */
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(tdbm_rename(f.m, stg, "w", frag, "x", 0), -EBADMSG);
    CHECK_EQ_INT(invals, 0);
    err = look(f.m, e.ino, TDBM_STAGING_ERROR);
    CHECK(err != 0);
    n = slurp(f.m, err, buf, sizeof buf - 1);
    CHECK(n > 1 && n < sizeof buf);
    if (n < sizeof buf) {
        buf[n] = '\0';
        CHECK(strstr(buf, "a") != NULL && buf[n - 1] == '\n');
    }
    fa = look(f.m, e.ino, "a"); /* the staged file is intact */
    CHECK_EQ_INT(slurp(f.m, fa, buf, sizeof buf), 10);
    CHECK_MEM(buf, "0123456789", 10);
    /* a file, not a folder, cannot be committed */
    CHECK_EQ_INT(tdbm_rename(f.m, e.ino, "a", frag, "y", 0), -EROFS);
    fx_close(&f);
}

static void test_commit_sparse(void)
{
    struct fixture f;
    struct tdbm_entry e;
    int64_t x = 5, y = -7, gx = 0, gy = 0;
    int32_t a = 42, ga = 0;
    uint64_t off = 0;
    double n = 1.5;
    char s[8];
    uint64_t stg, frag;

    if (!fx_setup(&f, "sparse_int64_2d"))
        return;
    stg = look(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    CHECK_EQ_INT(tdbm_mkdir(f.m, stg, "w", 0700, &e), 0);
    stage(f.m, e.ino, "x", &x, 8);
    stage(f.m, e.ino, "y", &y, 8);
    stage(f.m, e.ino, "a", &a, 4);
    stage(f.m, e.ino, "s", "q", 1);
    stage(f.m, e.ino, "s.offsets", &off, 8);
    stage(f.m, e.ino, "n", &n, 8);
    stage(f.m, e.ino, "n.validity", "\1", 1);
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(tdbm_rename(f.m, stg, "w", frag, "f", 0), 0);
    CHECK_EQ_INT(slurp(f.m, look(f.m, TDBM_ROOT_INO, "x"), &gx, 8), 8);
    CHECK_EQ_INT(slurp(f.m, look(f.m, TDBM_ROOT_INO, "y"), &gy, 8), 8);
    CHECK_EQ_INT(slurp(f.m, look(f.m, TDBM_ROOT_INO, "a"), &ga, 4), 4);
    CHECK_EQ_INT(slurp(f.m, look(f.m, TDBM_ROOT_INO, "s"), s, sizeof s), 1);
    CHECK(gx == 5 && gy == -7 && ga == 42 && s[0] == 'q');
    fx_close(&f);
}

int main(void)
{
    RUN(test_errno_mapping);
    if (geteuid() == 0)
        RUN_CORPUS(test_write_eacces);
    else
        UNIT_SKIP(test_write_eacces, "switching to another user needs root");
    RUN_CORPUS(test_commit_dense);
    RUN_CORPUS(test_commit_refused);
    RUN_CORPUS(test_commit_sparse);
    return unit_done();
}
