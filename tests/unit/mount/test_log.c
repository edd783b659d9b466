/* test_log.c: the engine's message of a failed read kept for the calling
 * thread (mount/log.c), and taken by no other. */
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

/* Another thread takes no message of the main thread's failure. */
static void *take_elsewhere(void *arg)
{
    struct tdb_error err;
    return tdbm_error_take(arg, &err) ? arg : NULL;
}

/* The fixture: in dir, a copy (arr) of a corpus array with a truncated
 * tile, opened as src.  False after saying why. */
static bool truncated_copy(const char *dir, struct tdbm_source *src,
                           struct tdbm_options *opts)
{
    char cmd[1200], path[1100], why[1200];
    glob_t g;
    snprintf(cmd, sizeof cmd, "cp -r '%s/dense_1d_basic/array' '%s/arr'",
             unit_corpus(), dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(path, sizeof path, "%s/arr/__fragments/*/a0.tdb", dir);
    CHECK_EQ_INT(glob(path, 0, NULL, &g), 0);
    CHECK_EQ_INT(g.gl_pathc, 1);
    if (g.gl_pathc == 1)
        CHECK_EQ_INT(truncate(g.gl_pathv[0], 30), 0);
    globfree(&g);
    snprintf(path, sizeof path, "%s/arr", dir);
    if (unit_cur_failed ||
        tdbm_source_open(src, path, opts, why, sizeof why)) {
        fprintf(stderr, "FAIL %s: the fixture could not be set up%s%s\n",
                unit_cur, unit_cur_failed ? "" : ": ",
                unit_cur_failed ? "" : why);
        unit_cur_failed = 1;
        return false;
    }
    return true;
}

/* A read of the truncated a fails: the message is kept for this thread
 * alone, said by the log line too, and taken once. */
static void check_read_failure(struct tdbm_mount *m)
{
    char buf[4096], line[TDB_ERROR_MSG_MAX + 128];
    struct tdbm_open_info oi;
    struct tdbm_handle *h = NULL;
    struct tdb_error err;
    struct stat st;
    pthread_t th;
    void *other = &th;
    uint64_t ino;
    size_t got;
    CHECK_EQ_INT(tdbm_resolve(m, "a", &ino, &st), 0);
    CHECK_EQ_INT(tdbm_open(m, ino, O_RDONLY, &h, &oi), 0);
    CHECK_EQ_INT(mount_read(m, h, 0, buf, sizeof buf, &got), -EIO);
    CHECK_EQ_INT(pthread_create(&th, NULL, take_elsewhere, m), 0);
    CHECK_EQ_INT(pthread_join(th, &other), 0);
    CHECK(other == NULL);
    CHECK(tdbm_error_take(m, &err));
    CHECK(strstr(err.msg, "a0.tdb") && strstr(err.msg, "tile"));
    /* the log line says the same after its "read inode N at O+S: " */
    snprintf(line, sizeof line, "read inode %llu at 0+%zu: %s\n",
             (unsigned long long)ino, sizeof buf, err.msg);
    CHECK(strcmp(logbuf, line) == 0);
    CHECK(!tdbm_error_take(m, &err)); /* taken */
    tdbm_release(m, h);
    tdbm_forget(m, ino, 1);
}

static void test_error_take(void)
{
    char dir[] = "/tmp/test_mount.XXXXXX", cmd[1200];
    struct tdbm_options opts;
    struct tdbm_source src;
    struct tdbm_config cfg;
    struct tdbm_mount *m = NULL;
    struct tdb_error err;
    struct stat st;
    uint64_t ino;

    tdbm_options_init(&opts);
    memset(&src, 0, sizeof src);
    CHECK(mkdtemp(dir) != NULL);
    if (truncated_copy(dir, &src, &opts)) {
        memset(&cfg, 0, sizeof cfg);
        cfg.log = on_log;
        logbuf[0] = '\0';
        CHECK_EQ_INT(tdbm_mount_new(&m, &src, &opts, &cfg), 0);
    }
    if (m) {
        CHECK(!tdbm_error_take(m, &err));
        /* the caller's failure: no message */
        CHECK_EQ_INT(tdbm_resolve(m, "nope", &ino, &st), -ENOENT);
        CHECK(!tdbm_error_take(m, &err));
        check_read_failure(m);
    }
    tdbm_mount_free(m);
    tdbm_source_close(&src);
    tdbm_options_free(&opts);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(void)
{
    RUN_CORPUS(test_error_take);
    return unit_done();
}
