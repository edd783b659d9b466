/* test_mount.c: the mount layer (mount/mount.h) without FUSE: metadata
 * files (typed values, bad sizes, deletion), commits of staged folders
 * (dense, sparse, refused input with its reason in __error), the reload
 * after a write (a handle of the old tree keeps its bytes; old numbers
 * answer ESTALE), inode numbering, the typed options and the names, the
 * engine's message of a failed read kept for the calling thread, and live
 * views (-o refresh: another writer's commits, open files keeping their
 * bytes, groups, failures, refreshes racing readers). */
#include "../../../mount/mount.h"
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

static char logbuf[8192];
static int invals;

static void on_log(void *arg, const char *line)
{
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", line);
}

static void on_inval(void *arg, char **names, size_t n)
{
    invals++;
    tdbm_names_free(names, n);
}

/* ---------------------------------------------------------------- helpers */

struct fixture {
    char dir[64];
    char arr[128];
    struct tdbm_options opts;
    struct tdbm_source src;
    struct tdbm_mount *m;
};

/* A temporary folder DIR for f, its array to be DIR/arr.  @return NULL
 * or the step that failed. */
static const char *fx_dir(struct fixture *f)
{
    strcpy(f->dir, "/tmp/test_mount.XXXXXX");
    if (!mkdtemp(f->dir)) {
        f->dir[0] = '\0';
        return "mkdtemp";
    }
    snprintf(f->arr, sizeof f->arr, "%s/arr", f->dir);
    return NULL;
}

/* Mounts f->arr with the options `opts` (writable with `rw`).  @return
 * NULL, or the step that failed (with the reason in why). */
static const char *fx_mount(struct fixture *f, const char *opts, bool rw,
                            char *why, size_t whylen)
{
    struct tdbm_config cfg;

    tdbm_options_init(&f->opts);
    if (tdbm_option_list(&f->opts, opts, why, whylen))
        return "the options";
    if (tdbm_source_open(&f->src, f->arr, &f->opts, why, whylen))
        return "tdbm_source_open";
    memset(&cfg, 0, sizeof cfg);
    cfg.rw = rw;
    cfg.uid = getuid();
    cfg.gid = getgid();
    cfg.log = on_log;
    cfg.inval = on_inval;
    if (tdbm_mount_new(&f->m, &f->src, &f->opts, &cfg))
        return "tdbm_mount_new";
    if (tdbm_mount_staging(f->m, why, whylen))
        return "tdbm_mount_staging";
    return NULL;
}

/* Builds fixture f: an empty array on disk with the schema of corpus case
 * `name`, mounted rw, with the options `more` too ("" or ",a=b...").
 * @return NULL, or the step that failed (with the reason, when there is
 * one, in why). */
static const char *fx_build(struct fixture *f, const char *name,
                            const char *more, char *why, size_t whylen)
{
    char path[1024], opt[256];
    struct tdb_io src, dst;
    const char *step = fx_dir(f);

    if (step)
        return step;
    snprintf(path, sizeof path, "%s/%s/array", unit_corpus(), name);
    if (tdb_io_posix(&src, path))
        return "the corpus array";
    if (tdb_io_posix(&dst, f->arr)) {
        tdb_io_free(&src);
        return "the array's folder";
    }
    mkdir(f->arr, 0700);
    int r = unit_copy_tree(&src, "__schema", &dst, "__schema");
    dst.ops->mkdir(dst.ctx, "__fragments");
    dst.ops->mkdir(dst.ctx, "__commits");
    dst.ops->mkdir(dst.ctx, "__meta");
    tdb_io_free(&src);
    tdb_io_free(&dst);
    if (r) {
        snprintf(why, whylen, "cannot copy %s/__schema", path);
        return "the schema";
    }
    snprintf(opt, sizeof opt, "rw,staging_dir=%s/stg%s", f->dir, more);
    return fx_mount(f, opt, true, why, whylen);
}

static void fx_close(struct fixture *f)
{
    char cmd[128];
    tdbm_mount_free(f->m);
    tdbm_source_close(&f->src);
    tdbm_options_free(&f->opts);
    if (f->dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        CHECK_EQ_INT(system(cmd), 0);
    }
}

/* The end of a fixture's set-up: true when no step failed; else the
 * running test fails saying which step and why, and f is closed. */
static bool fx_done(struct fixture *f, const char *name, const char *step,
                    const char *why)
{
    if (!step)
        return true;
    fprintf(stderr, "FAIL %s: fixture %s: %s%s%s\n", unit_cur, name, step,
            why[0] ? ": " : "", why);
    unit_cur_failed = 1;
    fx_close(f);
    return false;
}

/* Sets up fixture f (see fx_build) with the options `more` ("" or
 * ",a=b...").  @return true; false when it could not be set up: the
 * running test has then failed, saying why, and must return without
 * touching f. */
static bool fx_setup_with(struct fixture *f, const char *name,
                          const char *more)
{
    char why[1200] = "";

    memset(f, 0, sizeof *f);
    logbuf[0] = '\0';
    invals = 0;
    return fx_done(f, name, fx_build(f, name, more, why, sizeof why), why);
}

static bool fx_setup(struct fixture *f, const char *name)
{
    return fx_setup_with(f, name, "");
}

/* The inode of `name` in `parent` (0 when missing), counted as a lookup. */
static uint64_t look(struct tdbm_mount *m, uint64_t parent, const char *name)
{
    struct tdbm_entry e;
    return tdbm_lookup(m, parent, name, &e) == 0 ? e.ino : 0;
}

/* All the bytes of file `ino` through a handle of its own. */
static size_t slurp(struct tdbm_mount *m, uint64_t ino, void *buf, size_t cap)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    size_t got = 0;
    if (tdbm_open(m, ino, O_RDONLY, &h, &oi) != 0)
        return (size_t)-1;
    if (tdbm_read(m, h, 0, buf, cap, &got) != 0)
        got = (size_t)-1;
    tdbm_release(m, h);
    return got;
}

/* Creates staged file dir/name holding `len` bytes. */
static void stage(struct tdbm_mount *m, uint64_t dir, const char *name,
                  const void *p, size_t len)
{
    struct tdbm_created c;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    size_t done = 0;
    CHECK_EQ_INT(tdbm_create(m, dir, name, O_WRONLY | O_CREAT | O_TRUNC, 0600,
                             &c), 0);
    e = c.e;
    h = c.h;
    CHECK(e.ino & TDBM_STAGING_BIT);
    CHECK_EQ_INT(tdbm_write(m, h, p, len, 0, &done), 0);
    CHECK_EQ_INT(done, len);
    tdbm_release(m, h);
    tdbm_forget(m, e.ino, 1);
}

/* A metadata file __meta/name written with `len` bytes of type `type`
 * (NULL: none set); @return the flush's result. */
static int meta_put(struct tdbm_mount *m, const char *name, const char *type,
                    const void *p, size_t len)
{
    struct tdbm_created c;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    size_t done = 0;
    uint64_t meta = look(m, TDBM_ROOT_INO, "__meta");
    int rc = tdbm_create(m, meta, name, O_WRONLY | O_CREAT | O_TRUNC, 0644,
                         &c);
    tdbm_forget(m, meta, 1);
    if (rc)
        return rc;
    e = c.e;
    h = c.h;
    CHECK(c.oi.direct_io);
    if (type)
        CHECK_EQ_INT(tdbm_setxattr(m, e.ino, TDBM_DATATYPE_XATTR, type,
                                   strlen(type), false), 0);
    CHECK_EQ_INT(tdbm_write(m, h, p, len, 0, &done), 0);
    rc = tdbm_flush(m, h);
    tdbm_release(m, h);
    tdbm_forget(m, e.ino, 1);
    return rc;
}

/* ------------------------------------------------------------------ tests */

static void test_meta(void)
{
    struct fixture f;
    int32_t v[2] = {7, -9}, got[4];
    char *val;
    size_t len;
    uint64_t meta, k;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    /* a typed value, a key with '/' */
    CHECK_EQ_INT(meta_put(f.m, "k%2Fv", "INT32", v, sizeof v), 0);
    CHECK_EQ_INT(invals, 1);
    meta = look(f.m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(meta >> TDBM_GEN_SHIFT, 2); /* the tree of the write */
    k = look(f.m, meta, "k%2Fv");
    CHECK(k != 0);
    CHECK_EQ_INT(slurp(f.m, k, got, sizeof got), sizeof v);
    CHECK_MEM(got, v, sizeof v);
    CHECK_EQ_INT(tdbm_getxattr(f.m, k, TDBM_DATATYPE_XATTR, &val, &len), 0);
    CHECK(len == 5 && memcmp(val, "INT32", 5) == 0);
    free(val);
    tdbm_forget(f.m, k, 1);
    /* no type: a string */
    CHECK_EQ_INT(meta_put(f.m, "s", NULL, "hello", 5), 0);
    tdbm_forget(f.m, meta, 1);
    meta = look(f.m, TDBM_ROOT_INO, "__meta");
    k = look(f.m, meta, "s");
    CHECK_EQ_INT(tdbm_getxattr(f.m, k, TDBM_DATATYPE_XATTR, &val, &len), 0);
    CHECK(len == 11 && memcmp(val, "STRING_UTF8", 11) == 0);
    free(val);
    tdbm_forget(f.m, k, 1);
    /* 3 bytes are no whole INT32: refused, logged, nothing stored */
    invals = 0;
    CHECK_EQ_INT(meta_put(f.m, "bad", "INT32", "abc", 3), -EINVAL);
    CHECK(strstr(logbuf, "__meta/bad: 3 bytes are not a whole number of "
                         "INT32 values") != NULL);
    CHECK_EQ_INT(invals, 0);
    CHECK_EQ_INT(look(f.m, meta, "bad"), 0);
    /* an unknown type and a bad name */
    {
        struct tdbm_created c;
        struct tdbm_handle *h;
        struct tdbm_entry e;
        CHECK_EQ_INT(tdbm_create(f.m, meta, "t", O_WRONLY | O_CREAT, 0644,
                                 &c), 0);
        e = c.e;
        h = c.h;
        CHECK(e.ino & TDBM_META_BIT);
        CHECK_EQ_INT(tdbm_setxattr(f.m, e.ino, TDBM_DATATYPE_XATTR, "NOPE",
                                   4, false), -EINVAL);
        CHECK_EQ_INT(tdbm_flush(f.m, h), 0); /* nothing written: no value */
        tdbm_release(f.m, h);
        CHECK_EQ_INT(tdbm_create(f.m, meta, "a%zz", O_WRONLY | O_CREAT, 0644,
                                 &c), -EINVAL);
    }
    /* rm __meta/KEY deletes the key */
    invals = 0;
    CHECK_EQ_INT(tdbm_unlink(f.m, meta, "k%2Fv"), 0);
    CHECK_EQ_INT(invals, 1);
    tdbm_forget(f.m, meta, 1);
    meta = look(f.m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(look(f.m, meta, "k%2Fv"), 0);
    CHECK(look(f.m, meta, "s") != 0);
    CHECK_EQ_INT(tdbm_unlink(f.m, meta, "nokey"), -ENOENT);
    fx_close(&f);
}

/* How many metadata files the array has on disk. */
static size_t meta_files(const struct fixture *f)
{
    struct tdb_names n;
    struct tdb_io io;
    size_t k = (size_t)-1;
    if (tdb_io_posix(&io, f->arr) == 0 &&
        tdb_io_names(&io, "__meta", &n, NULL) == 0) {
        k = n.n;
        tdb_names_free(&n);
    }
    tdb_io_free(&io);
    return k;
}

/* Creates __meta/name (O_TRUNC) for writing. */
static struct tdbm_handle *meta_open(struct tdbm_mount *m, const char *name,
                                     uint64_t *ino)
{
    struct tdbm_created c = {.h = NULL};
    uint64_t meta = look(m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(tdbm_create(m, meta, name, O_WRONLY | O_CREAT | O_TRUNC, 0644,
                             &c), 0);
    tdbm_forget(m, meta, 1);
    *ino = c.e.ino;
    return c.h;
}

/* The last close of a file meta_open opened. */
static void meta_close(struct tdbm_mount *m, struct tdbm_handle *h,
                       uint64_t ino)
{
    tdbm_release(m, h);
    tdbm_forget(m, ino, 1);
}

/* The stored value of key `name` into buf; (size_t)-1 when there is none. */
static size_t meta_value(struct tdbm_mount *m, const char *name, void *buf,
                         size_t cap)
{
    uint64_t meta = look(m, TDBM_ROOT_INO, "__meta");
    uint64_t k = look(m, meta, name);
    size_t got = k && !(k & TDBM_META_BIT) ? slurp(m, k, buf, cap)
                                           : (size_t)-1;
    if (k)
        tdbm_forget(m, k, 1);
    tdbm_forget(m, meta, 1);
    return got;
}

/* A store that fails (every write of the array's storage failing, as on a
 * full or read-only disk) fails the fsync and every later fsync and flush
 * (each tries again) until the value is stored; then it is, once. */
static void test_meta_store_fails(void)
{
    struct fixture f;
    struct tdb_io inner;
    struct tdb_io_fault flt = {1, true, 0, 0};
    struct tdbm_handle *h;
    uint64_t ino;
    size_t done;
    char got[8];

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    inner = f.src.io;
    CHECK_EQ_INT(tdb_io_faulty(&f.src.io, &inner, &flt), 0);
    h = meta_open(f.m, "nk", &ino);
    CHECK_EQ_INT(tdbm_write(f.m, h, "v1", 2, 0, &done), 0);
    CHECK_EQ_INT(tdbm_fsync(f.m, h, false), -EIO);
    uint64_t tries = flt.failed;
    CHECK_EQ_INT(tdbm_fsync(f.m, h, false), -EIO);
    CHECK_EQ_INT(tdbm_flush(f.m, h), -EIO);   /* close(2) fails too */
    CHECK(flt.failed > tries);                /* each of them tried */
    CHECK_EQ_INT(meta_files(&f), 0);
    CHECK_EQ_INT(meta_value(f.m, "nk", got, sizeof got), (size_t)-1);
    /* the storage works again: the next flush stores the value */
    flt.fail_at = 0;
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    CHECK_EQ_INT(meta_files(&f), 1);
    CHECK_EQ_INT(meta_value(f.m, "nk", got, sizeof got), 2);
    CHECK_MEM(got, "v1", 2);
    CHECK_EQ_INT(tdbm_fsync(f.m, h, false), 0);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    meta_close(f.m, h, ino);
    CHECK_EQ_INT(meta_files(&f), 1);          /* stored once */

    /* a value whose close failed is not tried again by the release (the
     * writer was told it is not stored) */
    flt.fail_at = 1;
    h = meta_open(f.m, "gone", &ino);
    CHECK_EQ_INT(tdbm_write(f.m, h, "x", 1, 0, &done), 0);
    CHECK_EQ_INT(tdbm_flush(f.m, h), -EIO);
    tries = flt.failed;
    meta_close(f.m, h, ino);
    CHECK_EQ_INT(flt.failed, tries);
    /* a file only truncated is stored by the release, whose failure is
     * logged (no one else to tell) */
    logbuf[0] = '\0';
    h = meta_open(f.m, "empty", &ino);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    CHECK_EQ_INT(flt.failed, tries);
    meta_close(f.m, h, ino);
    CHECK(flt.failed > tries);
    CHECK(strstr(logbuf, "__meta/empty: ") != NULL);
    CHECK_EQ_INT(meta_files(&f), 1);
    tdb_io_free(&f.src.io);
    f.src.io = inner;
    fx_close(&f);
}

/* One value per write, stored once: a shell's `echo -n degC > KEY` closes
 * a copy of the truncated file (a flush with nothing written: nothing
 * stored) before echo writes and closes (stored); `: > KEY` only
 * truncates: the empty value is stored by the last close (or fsync). */
static void test_meta_one_store(void)
{
    struct fixture f;
    struct tdbm_handle *h;
    uint64_t ino;
    size_t done;
    char got[8];

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    h = meta_open(f.m, "units", &ino);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    CHECK_EQ_INT(meta_files(&f), 0);
    CHECK_EQ_INT(invals, 0);
    CHECK_EQ_INT(tdbm_write(f.m, h, "degC", 4, 0, &done), 0);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    CHECK_EQ_INT(meta_files(&f), 1);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    meta_close(f.m, h, ino);
    CHECK_EQ_INT(meta_files(&f), 1);
    CHECK_EQ_INT(meta_value(f.m, "units", got, sizeof got), 4);
    CHECK_MEM(got, "degC", 4);
    /* `: > units`: an empty value, stored when the file is last closed */
    h = meta_open(f.m, "units", &ino);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    CHECK_EQ_INT(meta_files(&f), 1);
    meta_close(f.m, h, ino);
    CHECK_EQ_INT(meta_files(&f), 2);
    CHECK_EQ_INT(meta_value(f.m, "units", got, sizeof got), 0);
    /* or by fsync, and then not again */
    h = meta_open(f.m, "e2", &ino);
    CHECK_EQ_INT(tdbm_fsync(f.m, h, false), 0);
    CHECK_EQ_INT(meta_files(&f), 3);
    CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
    meta_close(f.m, h, ino);
    CHECK_EQ_INT(meta_files(&f), 3);
    CHECK_EQ_INT(meta_value(f.m, "e2", got, sizeof got), 0);
    /* a reader's close stores nothing a writer has not finished */
    {
        struct tdbm_open_info oi;
        struct tdbm_handle *r;
        h = meta_open(f.m, "half", &ino);
        CHECK_EQ_INT(tdbm_write(f.m, h, "ha", 2, 0, &done), 0);
        CHECK_EQ_INT(tdbm_open(f.m, ino, O_RDONLY, &r, &oi), 0);
        CHECK_EQ_INT(tdbm_flush(f.m, r), 0);
        tdbm_release(f.m, r);
        CHECK_EQ_INT(meta_files(&f), 3);
        CHECK_EQ_INT(tdbm_write(f.m, h, "lf", 2, 2, &done), 0);
        CHECK_EQ_INT(tdbm_flush(f.m, h), 0);
        meta_close(f.m, h, ino);
        CHECK_EQ_INT(meta_files(&f), 4);
        CHECK_EQ_INT(meta_value(f.m, "half", got, sizeof got), 4);
        CHECK_MEM(got, "half", 4);
    }
    fx_close(&f);
}

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
    CHECK_EQ_INT(tdbm_read(f.m, h, 0, before, sizeof before, &got), 0);
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
    CHECK_EQ_INT(tdbm_read(f.m, h, 0, old, sizeof old, &got), 0);
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

static void test_inodes(void)
{
    struct fixture f;
    struct tdbm_entry e;
    struct stat st;
    uint64_t ino, meta;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    CHECK_EQ_INT(tdbm_lookup(f.m, TDBM_ROOT_INO, "a", &e), 0);
    CHECK_EQ_INT(e.ino >> TDBM_GEN_SHIFT, 1);
    CHECK(!(e.ino & (TDBM_STAGING_BIT | TDBM_META_BIT)));
    CHECK_EQ_INT(e.attr.st_ino, e.ino);
    CHECK_EQ_INT(e.entry_timeout, TDBM_TIMEOUT);
    CHECK_EQ_INT(e.attr.st_mode, S_IFREG | 0444);
    CHECK_EQ_INT(tdbm_resolve(f.m, "/a", &ino, &st), 0);
    CHECK_EQ_INT(ino, e.ino);
    CHECK_EQ_INT(st.st_size, 200);
    CHECK_EQ_INT(tdbm_resolve(f.m, "nope/a", &ino, &st), -ENOENT);
    CHECK_EQ_INT(tdbm_lookup(f.m, TDBM_ROOT_INO, "nope", &e), -ENOENT);
    CHECK_EQ_INT(tdbm_lookup(f.m, e.ino | TDBM_META_BIT, "x", &e), -ENOTDIR);
    meta = look(f.m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(tdbm_lookup(f.m, TDBM_STAGING_ROOT, "none", &e), -ENOENT);
    CHECK_EQ_INT(tdbm_mkdir(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME, 0700, &e),
                 -EEXIST);
    CHECK_EQ_INT(tdbm_mkdir(f.m, meta, "d", 0700, &e), -EROFS);
    /* a number of no tree */
    CHECK_EQ_INT(tdbm_lookup(f.m, UINT64_C(9) << TDBM_GEN_SHIFT | 2, "a", &e),
                 -ESTALE);
    fx_close(&f);
}

/* Writes n bytes of p into file `path`, replacing it. */
static void put_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, p, n), (long long)n);
    close(fd);
}

/* The message of key_file= for a file holding `text`. */
static const char *key_file_why(const char *path, const char *text,
                                char *why, size_t cap)
{
    struct tdbm_options o;

    tdbm_options_init(&o);
    put_file(path, text, strlen(text));
    CHECK_EQ_INT(tdbm_option(&o, "key_file", path, why, cap), -1);
    CHECK(o.open.key == NULL);
    tdbm_options_free(&o);
    return why;
}

/* A key file that is not 32 bytes says what it probably holds instead:
 * 32 bytes and a newline, or the key in hex (with or without one). */
static void key_file_hints(const char *path)
{
    static const char hex[] = "00112233445566778899aabbccddeeff"
                              "00112233445566778899AABBCCDDEEFF";
    char why[1400], text[80];

    key_file_why(path, "0123456789abcdef0123456789ABCDEF\n", why,
                 sizeof why);
    CHECK(strstr(why, "holds 33 bytes; an AES-256-GCM key is exactly 32: "
                 "a trailing newline? write it with printf or head -c 32"));
    key_file_why(path, hex, why, sizeof why);
    CHECK(strstr(why, "holds 64 bytes") && strstr(why, "the key in hex?"));
    snprintf(text, sizeof text, "%s\n", hex);
    key_file_why(path, text, why, sizeof why);
    CHECK(strstr(why, "holds 65 bytes") && strstr(why, "the key in hex?"));
    text[5] = 'x';  /* not hex: no advice */
    key_file_why(path, text, why, sizeof why);
    CHECK(strstr(why, "holds 65 bytes; an AES-256-GCM key is exactly 32") &&
          !strstr(why, "hex"));
    snprintf(text, sizeof text, "%s\n\n", hex);
    key_file_why(path, text, why, sizeof why);
    CHECK(strstr(why, "holds more than 65 bytes") && !strstr(why, "hex"));
    key_file_why(path, "short\n", why, sizeof why);
    CHECK(strstr(why, "holds 6 bytes; an AES-256-GCM key is exactly 32") &&
          !strstr(why, "newline"));
}

static void test_options(void)
{
    struct tdbm_options o;
    char why[1400], path[64], opt[128];
    uint8_t key[33];
    int fd;

    tdbm_options_init(&o);
    CHECK_EQ_INT(tdbm_option_list(&o, "timestamp=5,cache_size=2M,threads=4,rw",
                                  why, sizeof why), 0);
    CHECK(o.open.ts_start == 0 && o.open.ts_end == 5 && o.timestamp_set);
    CHECK(o.open.cache_bytes == 2u << 20 && o.open.threads == 4 && o.rw);
    CHECK_EQ_INT(tdbm_options_check(&o, why, sizeof why), -1);
    CHECK(strcmp(why, "-o rw and timestamp= do not go together (a write is "
                 "made now, outside the opened range)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "timestamp", "3:9", why, sizeof why), 0);
    CHECK(o.open.ts_start == 3 && o.open.ts_end == 9);
    CHECK_EQ_INT(tdbm_option(&o, "cache_size", "7k", why, sizeof why), 0);
    CHECK(o.open.cache_bytes == 7 << 10);
    CHECK_EQ_INT(tdbm_option(&o, "cache_size", "1G", why, sizeof why), 0);
    CHECK(o.open.cache_bytes == 1u << 30);
    CHECK_EQ_INT(tdbm_option(&o, "nope", "1", why, sizeof why), 1);

    CHECK_EQ_INT(tdbm_option(&o, "timestamp", "9:3", why, sizeof why), -1);
    CHECK(strcmp(why, "timestamp=9:3: want T or T1:T2 with "
                 "T1 <= T2") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "timestamp", "x", why, sizeof why), -1);
    CHECK(strcmp(why, "timestamp=x: not a number") == 0);
    CHECK(o.open.ts_start == 3 && o.open.ts_end == 9); /* unchanged */
    CHECK_EQ_INT(tdbm_option(&o, "cache_size", "5T", why, sizeof why), -1);
    CHECK(strcmp(why, "cache_size=5T: not a size") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "cache_size", "18446744073709551615G", why,
                             sizeof why), -1);
    /* 0 is no size: the engine would take it for its default */
    CHECK_EQ_INT(tdbm_option(&o, "cache_size", "0", why, sizeof why), -1);
    CHECK(strcmp(why, "cache_size=0: not a size above 0 (leave the option "
                 "out for its default)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "disk_cache_size", "0M", why, sizeof why),
                 -1);
    CHECK(o.open.cache_bytes == 1u << 30 && o.s3.disk_cache_bytes == 0);
    CHECK_EQ_INT(tdbm_option(&o, "threads", "257", why, sizeof why), -1);
    CHECK(strcmp(why, "threads=257: not a number of threads "
                 "(0 to 256)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "rw", "1", why, sizeof why), -1);
    CHECK(strcmp(why, "option rw takes no value") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "timestamp", NULL, why, sizeof why), -1);
    CHECK(strcmp(why, "option timestamp needs a value (timestamp=...)") == 0);
    CHECK_EQ_INT(tdbm_option_list(&o, "rw,bogus=1", why, sizeof why), -1);
    /* the message names every option of the table */
    CHECK(strncmp(why, "unknown option bogus (known: timestamp, ", 40) == 0);
    for (const struct tdbm_option *t = tdbm_option_table; t->name; t++) {
        char name[64];
        snprintf(name, sizeof name, " %s%s", t->name, t[1].name ? "," : ")");
        CHECK(strstr(why, name) != NULL);
    }
    CHECK_EQ_INT(tdbm_option(&o, "group_members", "any", why, sizeof why), 0);
    CHECK_EQ_INT(o.open.members, TDB_MEMBERS_ANY);
    CHECK_EQ_INT(tdbm_option(&o, "group_members", "inside", why, sizeof why),
                 0);
    CHECK_EQ_INT(o.open.members, TDB_MEMBERS_INSIDE);
    CHECK_EQ_INT(tdbm_option(&o, "group_members", "all", why, sizeof why), -1);
    CHECK(strcmp(why, "group_members=all: not inside or any") == 0);

    /* staging_dir is made absolute */
    CHECK_EQ_INT(tdbm_option(&o, "staging_dir", "rel/dir", why, sizeof why),
                 0);
    {
        char *cwd = getcwd(NULL, 0), want[4200];
        snprintf(want, sizeof want, "%s/rel/dir", cwd);
        CHECK(o.staging_dir && strcmp(o.staging_dir, want) == 0);
        free(cwd);
    }
    /* key_file: exactly 32 bytes */
    strcpy(path, "/tmp/test_mount_key.XXXXXX");
    fd = mkstemp(path);
    CHECK(fd >= 0);
    for (int i = 0; i < 33; i++)
        key[i] = (uint8_t)(i * 5 + 1);
    CHECK_EQ_INT(write(fd, key, 31), 31);
    snprintf(opt, sizeof opt, "key_file=%s", path);
    CHECK_EQ_INT(tdbm_option_list(&o, opt, why, sizeof why), -1);
    {
        char want[200];
        snprintf(want, sizeof want, "key_file: %s: holds 31 bytes; an "
                 "AES-256-GCM key is exactly 32", path);
        CHECK(strcmp(why, want) == 0);
    }
    CHECK(o.open.key == NULL);
    CHECK_EQ_INT(write(fd, key + 31, 1), 1);
    CHECK_EQ_INT(tdbm_option_list(&o, opt, why, sizeof why), 0);
    CHECK(o.open.key == o.key);
    CHECK_MEM(o.key, key, 32);
    CHECK_EQ_INT(write(fd, key + 32, 1), 1);
    CHECK_EQ_INT(tdbm_option(&o, "key_file", path, why, sizeof why), -1);
    CHECK(strstr(why, "holds 33 bytes; an AES-256-GCM key is exactly 32") &&
          !strstr(why, "newline"));
    close(fd);
    key_file_hints(path);
    unlink(path);
    CHECK_EQ_INT(tdbm_option(&o, "key_file", path, why, sizeof why), -1);
    CHECK(strstr(why, "No such file or directory") != NULL);
    /* every option of the table is parsed by tdbm_option */
    for (const struct tdbm_option *t = tdbm_option_table; t->name; t++)
        CHECK(tdbm_option(&o, t->name, "", why, sizeof why) == -1);
    tdbm_options_free(&o);
    CHECK(o.open.key == NULL && o.staging_dir == NULL);

    /* the one number parser: sizes, counts, the daemon's readahead= */
    {
        uint64_t v = 9;
        unsigned long kib = 9;
        CHECK(tdbm_parse_number("3M", true, UINT64_MAX, &v) == 0 &&
              v == 3u << 20);
        CHECK_EQ_INT(tdbm_parse_number("3M", false, UINT64_MAX, &v), -1);
        CHECK(tdbm_parse_number("256", false, 256, &v) == 0 && v == 256);
        CHECK_EQ_INT(tdbm_parse_number("257", false, 256, &v), -1);
        CHECK_EQ_INT(tdbm_parse_number("2k", true, 2047, &v), -1);
        CHECK_EQ_INT(tdbm_parse_number("", false, 10, &v), -1);
        CHECK_EQ_INT(tdbm_parse_number("-0", false, 10, &v), -1);
        CHECK_EQ_INT(tdbm_parse_number(" 1", false, 10, &v), -1);
        CHECK_EQ_INT(tdbm_parse_number("99999999999999999999", false,
                                       UINT64_MAX, &v), -1);
        CHECK(tdbm_parse_kib("1048576", 1ul << 20, &kib) == 0 &&
              kib == 1ul << 20);
        CHECK_EQ_INT(tdbm_parse_kib("1048577", 1ul << 20, &kib), -1);
        CHECK_EQ_INT(tdbm_parse_kib("1K", 1ul << 20, &kib), -1);
    }
}

/* uid=, gid= and umask=: parsed, checked, and their defaults. */
static void test_owner_options(void)
{
    struct tdbm_options o;
    char why[400];

    tdbm_options_init(&o);
    CHECK(o.uid == -1 && o.gid == -1 && o.umask == 022);
    CHECK_EQ_INT(tdbm_option_list(&o, "uid=1000,gid=0,umask=0027", why,
                                  sizeof why), 0);
    CHECK(o.uid == 1000 && o.gid == 0 && o.umask == 027);
    CHECK_EQ_INT(tdbm_option(&o, "uid", "4294967294", why, sizeof why), 0);
    CHECK(o.uid == 4294967294LL);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "7", why, sizeof why), 0);
    CHECK(o.umask == 07);
    CHECK_EQ_INT(tdbm_option(&o, "uid", "4294967295", why, sizeof why), -1);
    CHECK(strcmp(why, "uid=4294967295: not a number (0 to 4294967294)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "gid", "-1", why, sizeof why), -1);
    CHECK(strcmp(why, "gid=-1: not a number (0 to 4294967294)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "uid", "alice", why, sizeof why), -1);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "8", why, sizeof why), -1);
    CHECK(strcmp(why, "umask=8: not octal mode bits (0 to 777)") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "1000", why, sizeof why), -1);
    CHECK_EQ_INT(tdbm_option(&o, "umask", "", why, sizeof why), -1);
    CHECK(o.uid == 4294967294LL && o.gid == 0 && o.umask == 07);
    tdbm_options_free(&o);
}

/* The mode and owner of `name` in `parent`. */
static struct stat look_stat(struct tdbm_mount *m, uint64_t parent,
                             const char *name)
{
    struct tdbm_entry e;
    struct stat st;
    memset(&st, 0, sizeof st);
    CHECK_EQ_INT(tdbm_lookup(m, parent, name, &e), 0);
    st = e.attr;
    tdbm_forget(m, e.ino, 1);
    return st;
}

/* A read-only mount with uid=, gid=, umask=: every entry shows that owner
 * and the modes less the umask. */
static void test_owner_read_only(void)
{
    struct fixture f;
    char why[1200] = "";
    struct stat st;
    double timeout;

    memset(&f, 0, sizeof f);
    snprintf(f.arr, sizeof f.arr, "%s/dense_1d_basic/array", unit_corpus());
    if (!fx_done(&f, "dense_1d_basic", fx_mount(&f, "uid=4242,gid=4343,"
                 "umask=027", false, why, sizeof why), why))
        return;
    CHECK_EQ_INT(tdbm_getattr(f.m, TDBM_ROOT_INO, &st, &timeout), 0);
    CHECK_EQ_INT(st.st_mode, S_IFDIR | 0550);
    CHECK(st.st_uid == 4242 && st.st_gid == 4343);
    st = look_stat(f.m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(st.st_mode, S_IFREG | 0440);
    CHECK(st.st_uid == 4242 && st.st_gid == 4343);
    st = look_stat(f.m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(st.st_mode, S_IFDIR | 0550);
    /* a read-only mount: no chown, not even to the owner it has */
    st.st_uid = 4242;
    {
        struct stat out;
        uint64_t a = look(f.m, TDBM_ROOT_INO, "a");
        CHECK_EQ_INT(tdbm_setattr(f.m, a, NULL, &st, TDBM_SET_UID, &out),
                     -EROFS);
        tdbm_forget(f.m, a, 1);
    }
    fx_close(&f);
}

/* A writable mount with uid=, gid=, umask=: the tree, the metadata files
 * and the staged entries show that owner, whoever owns them on disk; a
 * chown to it is accepted (and changes nothing), any other refused. */
static void test_owner_writable(void)
{
    struct fixture f;
    struct tdbm_created c;
    struct tdbm_handle *h;
    struct tdbm_entry e, fe;
    struct stat st, out, disk;
    char path[256];
    uint64_t stg, meta;

    if (!fx_setup_with(&f, "dense_1d_basic", ",uid=4242,gid=4343,umask=002"))
        return;
    st = look_stat(f.m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(st.st_mode, S_IFREG | 0444);
    /* umask=002 lets the group write nothing: only the owner writes */
    st = look_stat(f.m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(st.st_mode, S_IFDIR | 0755);
    meta = look(f.m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(tdbm_create(f.m, meta, "k", O_WRONLY | O_CREAT, 0644, &c), 0);
    e = c.e;
    h = c.h;
    CHECK_EQ_INT(e.attr.st_mode, S_IFREG | 0644);
    CHECK(e.attr.st_uid == 4242 && e.attr.st_gid == 4343);
    st.st_uid = 4242;
    st.st_gid = 4343;
    CHECK_EQ_INT(tdbm_setattr(f.m, e.ino, h, &st, TDBM_SET_UID | TDBM_SET_GID,
                              &out), 0);
    st.st_gid = 0;
    CHECK_EQ_INT(tdbm_setattr(f.m, e.ino, h, &st, TDBM_SET_GID, &out),
                 -EPERM);
    tdbm_release(f.m, h);
    tdbm_forget(f.m, e.ino, 1);
    tdbm_forget(f.m, meta, 1);

    stg = look(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    st = look_stat(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    CHECK_EQ_INT(st.st_mode, S_IFDIR | 0700);
    CHECK(st.st_uid == 4242 && st.st_gid == 4343);
    CHECK_EQ_INT(tdbm_mkdir(f.m, stg, "s", 0777, &e), 0);
    CHECK_EQ_INT(e.attr.st_mode, S_IFDIR | 0700);
    CHECK(e.attr.st_uid == 4242 && e.attr.st_gid == 4343);
    CHECK_EQ_INT(tdbm_create(f.m, e.ino, "a", O_WRONLY | O_CREAT, 0666,
                             &c), 0);
    fe = c.e;
    h = c.h;
    CHECK_EQ_INT(fe.attr.st_mode, S_IFREG | 0600);
    CHECK(fe.attr.st_uid == 4242 && fe.attr.st_gid == 4343);
    /* on disk, the daemon's */
    snprintf(path, sizeof path, "%s/stg/s/a", f.dir);
    CHECK_EQ_INT(stat(path, &disk), 0);
    CHECK(disk.st_uid == geteuid());
    /* chown to the owner it has: accepted, with times (cp -a, tar x) */
    st.st_uid = 4242;
    st.st_gid = 4343;
    st.st_mtim.tv_sec = 981173106;  /* 2001-02-03T04:05:06Z */
    st.st_mtim.tv_nsec = 0;
    CHECK_EQ_INT(tdbm_setattr(f.m, fe.ino, h, &st, TDBM_SET_UID |
                              TDBM_SET_GID | TDBM_SET_MTIME, &out), 0);
    CHECK(out.st_uid == 4242 && out.st_gid == 4343);
    CHECK_EQ_INT(out.st_mtim.tv_sec, 981173106);
    CHECK_EQ_INT(stat(path, &disk), 0);
    CHECK_EQ_INT(disk.st_mtim.tv_sec, 981173106);
    CHECK(disk.st_uid == geteuid());
    CHECK_EQ_INT(tdbm_setattr(f.m, e.ino, NULL, &st, TDBM_SET_UID, &out), 0);
    CHECK_EQ_INT(out.st_mode, S_IFDIR | 0700);
    /* to another owner or group: refused, nothing changed */
    st.st_uid = 4243;
    CHECK_EQ_INT(tdbm_setattr(f.m, fe.ino, h, &st, TDBM_SET_UID |
                              TDBM_SET_MTIME, &out), -EPERM);
    st.st_uid = 4242;
    st.st_gid = 4344;
    CHECK_EQ_INT(tdbm_setattr(f.m, e.ino, NULL, &st, TDBM_SET_GID, &out),
                 -EPERM);
    tdbm_release(f.m, h);
    tdbm_forget(f.m, fe.ino, 1);
    tdbm_forget(f.m, e.ino, 1);
    fx_close(&f);
}

/* Nothing is made in __fragments but by a commit: mkdir and create there
 * answer EXDEV (mv from another filesystem copies, and says "Invalid
 * cross-device link"), elsewhere in the tree EROFS. */
static void test_fragments_exdev(void)
{
    struct fixture f;
    struct tdbm_created c = {.h = NULL};
    struct tdbm_entry e;
    uint64_t frag, meta;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    meta = look(f.m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(tdbm_mkdir(f.m, frag, "prepared", 0755, &e), -EXDEV);
    CHECK_EQ_INT(tdbm_create(f.m, frag, "a", O_WRONLY | O_CREAT, 0644,
                             &c), -EXDEV);
    CHECK(c.h == NULL);
    CHECK_EQ_INT(tdbm_mkdir(f.m, TDBM_ROOT_INO, "x", 0755, &e), -EROFS);
    CHECK_EQ_INT(tdbm_mkdir(f.m, meta, "x", 0755, &e), -EROFS);
    CHECK_EQ_INT(tdbm_create(f.m, TDBM_ROOT_INO, "x", O_WRONLY | O_CREAT, 0644,
                             &c), -EROFS);
    tdbm_forget(f.m, frag, 1);
    tdbm_forget(f.m, meta, 1);
    fx_close(&f);
}

static void test_names(void)
{
    const char *keys[] = {"plain", "a/b", "100%", "%2F/%25", "x%y/z", ".",
                          "..", "", "__attr", "...", "./", NULL};
    for (int i = 0; keys[i]; i++) {
        char *enc = tdbm_name_encode(keys[i]);
        char *dec = enc ? tdbm_name_decode(enc) : NULL;
        CHECK(enc && !strchr(enc, '/'));
        CHECK(dec && strcmp(dec, keys[i]) == 0);
        free(enc);
        free(dec);
    }
    char *e = tdbm_name_encode("a/b%c");
    CHECK(e && strcmp(e, "a%2Fb%25c") == 0);
    free(e);
    /* names a folder cannot hold, and the name "" is shown under */
    static const char *const shown[][2] = {
        {".", "%2E"}, {"..", "%2E."}, {"", "__attr"}, {"__attr", "%5F_attr"}};
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
        e = tdbm_name_encode(shown[i][0]);
        CHECK(e && strcmp(e, shown[i][1]) == 0);
        free(e);
        e = tdbm_name_decode(shown[i][1]);
        CHECK(e && strcmp(e, shown[i][0]) == 0);
        free(e);
    }
    /* a name no key is shown under (each key has one: hex digits in
     * capitals, as listed) */
    static const char *const bad[] = {"%41", "end%", "%2", "%zz", "%00",
                                      "%2E%2E", ".", "..", "%5F_meta",
                                      "%5F_attr2", "%2f", "%2e", "%2e.",
                                      "%5f_attr", "a%2fb", "100%25%2f"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        errno = 0;
        e = tdbm_name_decode(bad[i]);
        CHECK(e == NULL && errno == EINVAL);
        free(e);
    }
}

/* A stat of user.tiledbfs.stats's `key` on mount m. */
static long long stat_of(struct tdbm_mount *m, const char *key)
{
    char *v = NULL, pat[64];
    size_t len = 0;
    long long n = -1;
    if (tdbm_getxattr(m, TDBM_ROOT_INO, "user.tiledbfs.stats", &v, &len) != 0)
        return -1;
    char *z = realloc(v, len + 1);
    if (z) {
        z[len] = '\0';
        snprintf(pat, sizeof pat, " %s=", key);
        char *at = strstr(z, pat);
        if (at)
            n = atoll(at + strlen(pat));
        v = z;
    }
    free(v);
    return n;
}

/* __slice/ files are kept as the cache keeps tiles: past slices_idle_max
 * idle ones (64 with cache_size=1M) the oldest go, their numbers with
 * them (getattr, open, getxattr: ESTALE), and the kernel never keeps
 * their entries (entry_timeout 0), so that its next lookup makes one anew
 * under a new number, with the same bytes; one open is never dropped. */
static void test_slices_dropped(void)
{
    struct fixture f;
    struct tdbm_open_info oi;
    struct tdbm_handle *h, *h2;
    struct tdbm_entry e, e2;
    char why[1200] = "", name[64], *xv = NULL;
    size_t xl;
    uint8_t want[256], got[256], held[256];
    struct stat st;
    double timeout;
    size_t n, nh, g;

    memset(&f, 0, sizeof f);
    snprintf(f.arr, sizeof f.arr, "%s/dense_1d_basic/array", unit_corpus());
    if (!fx_done(&f, "dense_1d_basic", fx_mount(&f, "cache_size=1M", false,
                                                why, sizeof why), why))
        return;
    CHECK_EQ_INT((int)stat_of(f.m, "slices_idle_max"), 64);
    uint64_t dir = look(f.m, TDBM_ROOT_INO, "__slice");
    CHECK_EQ_INT(tdbm_lookup(f.m, dir, "a[3:9].npy", &e), 0);
    CHECK(e.ino != 0 && e.entry_timeout == 0.0);
    n = slurp(f.m, e.ino, want, sizeof want);
    CHECK(n > 24 && n < sizeof want);
    CHECK_EQ_INT(tdbm_lookup(f.m, dir, "b[::7].npy", &e2), 0);
    CHECK_EQ_INT(tdbm_open(f.m, e2.ino, O_RDONLY, &h, &oi), 0);
    CHECK_EQ_INT(tdbm_read(f.m, h, 0, held, sizeof held, &nh), 0);
    for (int i = 0; i < 200; i++) {
        struct tdbm_entry x;
        snprintf(name, sizeof name, "a[0:%d:%d].npy", 1 + i % 50, 1 + i / 50);
        CHECK_EQ_INT(tdbm_lookup(f.m, dir, name, &x), 0);
        tdbm_forget(f.m, x.ino, 1);
    }
    CHECK(stat_of(f.m, "slices") <= 65 && stat_of(f.m, "slices") > 0);
    CHECK(stat_of(f.m, "slice_evictions") >= 202 - 65);
    /* the first is gone, its number with it (stale: the kernel then
     * looks the name up again); a lookup makes it again */
    CHECK_EQ_INT(tdbm_getattr(f.m, e.ino, &st, &timeout), -ESTALE);
    CHECK_EQ_INT(tdbm_open(f.m, e.ino, O_RDONLY, &h2, &oi), -ESTALE);
    CHECK_EQ_INT(tdbm_getxattr(f.m, e.ino, "user.tiledb.dtype", &xv, &xl),
                 -ESTALE);
    tdbm_forget(f.m, e.ino, 1);
    CHECK_EQ_INT(tdbm_lookup(f.m, dir, "a[3:9].npy", &e), 0);
    CHECK(slurp(f.m, e.ino, got, sizeof got) == n && !memcmp(got, want, n));
    tdbm_forget(f.m, e.ino, 1);
    /* the one open reads on */
    CHECK_EQ_INT(tdbm_read(f.m, h, 0, got, sizeof got, &g), 0);
    CHECK(g == nh && !memcmp(got, held, nh));
    tdbm_release(f.m, h);
    tdbm_forget(f.m, e2.ino, 1);
    tdbm_forget(f.m, dir, 1);
    fx_close(&f);
}

/* Another thread takes no message of the main thread's failure. */
static void *take_elsewhere(void *arg)
{
    struct tdb_error err;
    return tdbm_error_take(arg, &err) ? arg : NULL;
}

static void test_error_take(void)
{
    char dir[] = "/tmp/test_mount.XXXXXX", cmd[1200], path[1100];
    char why[1200], buf[4096], line[TDB_ERROR_MSG_MAX + 128];
    struct tdbm_options opts;
    struct tdbm_source src;
    struct tdbm_config cfg;
    struct tdbm_mount *m = NULL;
    struct tdbm_open_info oi;
    struct tdbm_handle *h = NULL;
    struct tdb_error err;
    struct stat st;
    pthread_t th;
    void *other = &th;
    uint64_t ino;
    size_t got;
    glob_t g;

    /* the fixture: a copy of a corpus array with a truncated tile */
    tdbm_options_init(&opts);
    memset(&src, 0, sizeof src);
    CHECK(mkdtemp(dir) != NULL);
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
        tdbm_source_open(&src, path, &opts, why, sizeof why)) {
        fprintf(stderr, "FAIL %s: the fixture could not be set up%s%s\n",
                unit_cur, unit_cur_failed ? "" : ": ",
                unit_cur_failed ? "" : why);
        unit_cur_failed = 1;
        goto out;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.log = on_log;
    logbuf[0] = '\0';
    CHECK_EQ_INT(tdbm_mount_new(&m, &src, &opts, &cfg), 0);
    if (!m)
        goto out;
    CHECK(!tdbm_error_take(m, &err));

    /* the caller's failure: no message */
    CHECK_EQ_INT(tdbm_resolve(m, "nope", &ino, &st), -ENOENT);
    CHECK(!tdbm_error_take(m, &err));

    CHECK_EQ_INT(tdbm_resolve(m, "a", &ino, &st), 0);
    CHECK_EQ_INT(tdbm_open(m, ino, O_RDONLY, &h, &oi), 0);
    CHECK_EQ_INT(tdbm_read(m, h, 0, buf, sizeof buf, &got), -EIO);
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
out:
    tdbm_mount_free(m);
    tdbm_source_close(&src);
    tdbm_options_free(&opts);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* ------------------------------------------------------------- live views */

/* Runs a shell command made with printf's format. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Sets up f as a copy of a corpus case's array (or group) at DIR/arr
 * whose committed fragments (those of its folder `member`: __fragments/X
 * and __commits/X.wrt) wait in DIR/hold, mounted with `opts`: what another
 * writer adds later is moved in by hand (live_put).  @return as
 * fx_setup. */
static bool live_setup(struct fixture *l, const char *name,
                       const char *member, const char *opts, bool rw)
{
    char why[1200] = "";
    const char *step;

    memset(l, 0, sizeof *l);
    logbuf[0] = '\0';
    invals = 0;
    step = fx_dir(l);
    if (!step &&
        sh("cp -r '%s/%s/array' '%s' && mkdir '%s/hold' && "
           "cd '%s/%s' && mv __fragments __commits '%s/hold/' && "
           "mkdir __fragments __commits", unit_corpus(), name, l->arr,
           l->dir, l->arr, member, l->dir) != 0)
        step = "the copy";
    if (!step)
        step = fx_mount(l, opts, rw, why, sizeof why);
    return fx_done(l, name, step, why);
}

/* Moves the held fragment folders of `member` into the array and then
 * (commit == true) their commit files: what TileDB's writes leave. */
static int live_put(struct fixture *l, const char *member, bool commit)
{
    return sh(commit ? "mv '%s/hold/__commits/'* '%s/%s/__commits/'"
                     : "mv '%s/hold/__fragments/'* '%s/%s/__fragments/'",
              l->dir, l->arr, member);
}

/* The bytes of a case's expected file. */
static size_t expected(const char *name, const char *file, void *buf,
                       size_t cap)
{
    char path[1024];
    size_t len = 0;
    char *p;

    snprintf(path, sizeof path, "%s/%s/expected/%s", unit_corpus(), name,
             file);
    p = unit_slurp(path, &len);
    if (!p || len > cap) {
        free(p);
        return (size_t)-1;
    }
    memcpy(buf, p, len);
    free(p);
    return len;
}

/* A commit another writer made becomes the view of new lookups at the
 * next check; an open file keeps the bytes it opened; a check that finds
 * nothing new (a fragment folder without its commit file) reopens
 * nothing. */
static void test_refresh(void)
{
    int32_t before[50], after[50], want[50];
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    struct stat st;
    struct fixture l;
    double timeout;
    size_t got;
    uint64_t ia, na;

    if (!live_setup(&l, "dense_1d_basic", ".", "refresh=7", false))
        return;
    CHECK_EQ_INT(tdbm_refresh_secs(l.m), 7);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    ia = look(l.m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(tdbm_open(l.m, ia, O_RDONLY, &h, &oi), 0);
    CHECK_EQ_INT(tdbm_read(l.m, h, 0, before, sizeof before, &got), 0);
    CHECK_EQ_INT(got, sizeof before);
    CHECK_EQ_INT((uint32_t)before[0], 0x80000000u); /* the fill value */

    /* a fragment folder without its commit is not part of the array */
    CHECK_EQ_INT(live_put(&l, ".", false), 0);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    CHECK_EQ_INT(invals, 0);
    CHECK_EQ_INT(live_put(&l, ".", true), 0);
    CHECK_EQ_INT(tdbm_refresh(l.m), 1);
    CHECK_EQ_INT(invals, 1);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    CHECK_EQ_INT(invals, 1);

    CHECK_EQ_INT(expected("dense_1d_basic", "a", want, sizeof want),
                 sizeof want);
    na = look(l.m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(na >> TDBM_GEN_SHIFT, 2);
    CHECK_EQ_INT(slurp(l.m, na, after, sizeof after), sizeof after);
    CHECK_MEM(after, want, sizeof want);
    tdbm_forget(l.m, na, 1);
    /* the handle opened before reads what it read */
    memset(after, 0, sizeof after);
    CHECK_EQ_INT(tdbm_read(l.m, h, 0, after, sizeof after, &got), 0);
    CHECK_EQ_INT(got, sizeof after);
    CHECK_MEM(after, before, sizeof before);
    tdbm_release(l.m, h);
    CHECK_EQ_INT(tdbm_getattr(l.m, ia, &st, &timeout), -ESTALE);
    tdbm_forget(l.m, ia, 1);

    /* the root may change: no negative entry, attribute or readdir page
     * of it is kept by the kernel; below it, as before */
    CHECK_EQ_INT(tdbm_lookup(l.m, TDBM_ROOT_INO, "nope", &e), -ENOENT);
    CHECK_EQ_INT(tdbm_getattr(l.m, TDBM_ROOT_INO, &st, &timeout), 0);
    CHECK(timeout == 0.0);
    CHECK_EQ_INT(tdbm_opendir(l.m, TDBM_ROOT_INO, &h, &oi), 0);
    CHECK(!oi.cache_readdir && !oi.keep_cache);
    tdbm_release(l.m, h);
    na = look(l.m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(tdbm_lookup(l.m, na, "nope", &e), 0);
    CHECK(e.ino == 0 && e.entry_timeout == TDBM_TIMEOUT);
    CHECK_EQ_INT(tdbm_opendir(l.m, na, &h, &oi), 0);
    CHECK(oi.cache_readdir && oi.keep_cache);
    tdbm_release(l.m, h);
    tdbm_forget(l.m, na, 1);
    CHECK_EQ_INT(logbuf[0], '\0');
    fx_close(&l);
}

/* The folders a front end watches: the array's and those of it whose
 * entries decide the tree; none without refresh=. */
static void test_refresh_watch_dirs(void)
{
    struct fixture l;
    char **v, want[256];
    size_t n;
    bool root = false, commits = false;

    if (!live_setup(&l, "dense_1d_basic", ".", "refresh=1", false))
        return;
    CHECK_EQ_INT(tdbm_watch_dirs(l.m, &v, &n), 0);
    CHECK_EQ_INT(n, 6);
    snprintf(want, sizeof want, "%s/__commits", l.arr);
    for (size_t i = 0; i < n; i++) {
        root = root || strcmp(v[i], l.arr) == 0;
        commits = commits || strcmp(v[i], want) == 0;
    }
    CHECK(root && commits);
    tdbm_names_free(v, n);
    fx_close(&l);

    /* without refresh=: nothing checked, nothing to watch */
    if (!live_setup(&l, "dense_1d_basic", ".", "cache_size=1M", false))
        return;
    CHECK_EQ_INT(tdbm_refresh_secs(l.m), 0);
    CHECK_EQ_INT(tdbm_watch_dirs(l.m, &v, &n), 0);
    CHECK(n == 0 && v == NULL);
    CHECK_EQ_INT(live_put(&l, ".", false), 0);
    CHECK_EQ_INT(live_put(&l, ".", true), 0);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    CHECK_EQ_INT(invals, 0);
    fx_close(&l);
}

/* The number of entries of folder NAME/__fragments of the root (-1:
 * none). */
static int frag_count(struct tdbm_mount *m, const char *name)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    const char *entry;
    uint64_t dir = look(m, TDBM_ROOT_INO, name), f, child;
    int n = -1;

    f = dir ? look(m, dir, "__fragments") : 0;
    if (f && tdbm_opendir(m, f, &h, &oi) == 0) {
        while (tdbm_dir_entry(m, h, (uint64_t)++n, &entry, &child,
                              true) == 0)
            ;
        tdbm_release(m, h);
    }
    tdbm_forget(m, f, 1);
    tdbm_forget(m, dir, 1);
    return n;
}

/* A group: a commit into a member array is seen; the first check after
 * the mount reopens once (the digest of the members' folders is taken
 * then), later checks only on a change. */
static void test_refresh_group(void)
{
    struct fixture l;

    if (!live_setup(&l, "group_basic", "s1", "refresh=1", false))
        return;
    CHECK_EQ_INT(tdbm_refresh(l.m), 1);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    CHECK_EQ_INT(frag_count(l.m, "sparse_arr"), 0);
    CHECK_EQ_INT(live_put(&l, "s1", false), 0);
    CHECK_EQ_INT(live_put(&l, "s1", true), 0);
    CHECK_EQ_INT(tdbm_refresh(l.m), 1);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    CHECK_EQ_INT(frag_count(l.m, "sparse_arr"), 2);
    fx_close(&l);
}

/* A live writable mount: its own commit reopens the tree once (the
 * write's reload takes the digest), a later check finds nothing new;
 * the options refresh= takes. */
static void test_refresh_own_write(void)
{
    char why[256];
    struct tdbm_options o;
    struct fixture l;
    int32_t v = 5;

    if (!live_setup(&l, "dense_1d_basic", ".", "refresh=1,rw", true))
        return;
    CHECK_EQ_INT(meta_put(l.m, "k", "INT32", &v, sizeof v), 0);
    CHECK_EQ_INT(invals, 1);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    CHECK_EQ_INT(invals, 1);
    fx_close(&l);

    tdbm_options_init(&o);
    CHECK_EQ_INT(tdbm_option(&o, "refresh", "0", why, sizeof why), -1);
    CHECK(strcmp(why, "refresh=0: not a number of seconds (1 to 86400)") ==
          0);
    CHECK_EQ_INT(tdbm_option(&o, "refresh", "86401", why, sizeof why), -1);
    CHECK_EQ_INT(tdbm_option(&o, "refresh", "1.5", why, sizeof why), -1);
    CHECK_EQ_INT(tdbm_option_list(&o, "refresh=86400,timestamp=5", why,
                                  sizeof why), 0);
    CHECK_EQ_INT(o.refresh, 86400);
    CHECK_EQ_INT(tdbm_options_check(&o, why, sizeof why), -1);
    CHECK(strcmp(why, "refresh= and timestamp= do not go together (a view "
                 "as of a time never changes)") == 0);
    tdbm_options_free(&o);
}

/* A check that fails keeps the view, logs once however often it fails,
 * and says when one works again. */
static void test_refresh_fails(void)
{
    const char *bad = "__9_9_0123456789abcdef0123456789abcdef_22";
    int32_t v[50];
    struct fixture l;
    uint64_t ia;

    if (!live_setup(&l, "dense_1d_basic", ".", "refresh=1", false))
        return;
    CHECK_EQ_INT(sh("mkdir '%s/__fragments/%s' && echo garbage > "
                    "'%s/__fragments/%s/__fragment_metadata.tdb' && touch "
                    "'%s/__commits/%s.wrt'", l.arr, bad, l.arr, bad, l.arr,
                    bad), 0);
    CHECK(tdbm_refresh(l.m) < 0);
    CHECK(tdbm_refresh(l.m) < 0);
    CHECK(strstr(logbuf, "refresh: ") == logbuf &&
          strstr(logbuf + 1, "refresh: ") == NULL);
    CHECK(strstr(logbuf, bad) != NULL);
    CHECK_EQ_INT(invals, 0);
    ia = look(l.m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(ia >> TDBM_GEN_SHIFT, 1);
    CHECK_EQ_INT(slurp(l.m, ia, v, sizeof v), sizeof v);
    CHECK_EQ_INT((uint32_t)v[7], 0x80000000u);
    tdbm_forget(l.m, ia, 1);
    CHECK_EQ_INT(sh("rm '%s/__commits/%s.wrt'", l.arr, bad), 0);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    CHECK(strstr(logbuf, "refresh: the source answers again\n") != NULL);
    fx_close(&l);
}

/* Opens file `name` of the root read-only as the kernel does, given the
 * entry *e of an earlier lookup of it: an open that answers -ESTALE (a
 * refresh replaced the view that lookup found, and as nothing used that
 * view it closed) forgets *e and looks the name up again (the kernel
 * walks the path again), which must find a newer view.  @return 0, or -1:
 * an error, or a second lookup that found no newer view. */
static int open_as_kernel(struct tdbm_mount *m, const char *name,
                          struct tdbm_entry *e, struct tdbm_handle **h)
{
    struct tdbm_open_info oi;
    uint64_t gen;
    int rc;

    while ((rc = tdbm_open(m, e->ino, O_RDONLY, h, &oi)) == -ESTALE) {
        gen = e->ino >> TDBM_GEN_SHIFT;
        tdbm_forget(m, e->ino, 1);
        if (tdbm_lookup(m, TDBM_ROOT_INO, name, e) != 0 ||
            e->ino >> TDBM_GEN_SHIFT <= gen)
            return -1;
    }
    return rc == 0 ? 0 : -1;
}

/* A file looked up before a refresh and opened after it, the old view
 * closed in between: the open answers -ESTALE (not the old bytes, not
 * another error), and the kernel's second lookup opens the new view. */
static void test_refresh_stale_open(void)
{
    int32_t want[50], v[50];
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    struct fixture l;
    size_t got = 0;

    CHECK_EQ_INT(expected("dense_1d_basic", "a", want, sizeof want),
                 sizeof want);
    if (!live_setup(&l, "dense_1d_basic", ".", "refresh=1", false))
        return;
    CHECK_EQ_INT(tdbm_lookup(l.m, TDBM_ROOT_INO, "a", &e), 0);
    CHECK_EQ_INT(e.ino >> TDBM_GEN_SHIFT, 1);
    CHECK_EQ_INT(live_put(&l, ".", false), 0);
    CHECK_EQ_INT(live_put(&l, ".", true), 0);
    CHECK_EQ_INT(tdbm_refresh(l.m), 1);
    CHECK_EQ_INT(tdbm_open(l.m, e.ino, O_RDONLY, &h, &oi), -ESTALE);
    if (open_as_kernel(l.m, "a", &e, &h) == 0) {
        CHECK_EQ_INT(e.ino >> TDBM_GEN_SHIFT, 2);
        CHECK_EQ_INT(tdbm_read(l.m, h, 0, v, sizeof v, &got), 0);
        CHECK_EQ_INT(got, sizeof v);
        CHECK_MEM(v, want, sizeof want);
        tdbm_release(l.m, h);
        tdbm_forget(l.m, e.ino, 1);
    } else {
        CHECK(!"the second lookup opens the new view");
    }
    fx_close(&l);
}

/* Readers on threads while the source changes and is refreshed (commit
 * file in, out, in...): every read of the view a handle opened gives that
 * view's bytes (all fill values, or all the fragment's), a handle reads
 * the same bytes again after refreshes, and nothing is freed in use (run
 * under ThreadSanitizer and AddressSanitizer by scripts/sanitize).  A
 * reader opens as the kernel does (open_as_kernel): a refresh between its
 * lookup and its open may close the view the lookup found. */
struct refresh_race {
    struct tdbm_mount *m;
    const int32_t *want;
    atomic_int stop;
    atomic_int bad, reads;
};

static bool race_view(const int32_t *v, const int32_t *want)
{
    bool fill = true;
    for (int i = 0; i < 50; i++)
        fill = fill && (uint32_t)v[i] == 0x80000000u;
    return fill || memcmp(v, want, 50 * sizeof *v) == 0;
}

static void *race_reader(void *arg)
{
    struct refresh_race *r = arg;
    int32_t first[50], again[50];

    while (!atomic_load(&r->stop)) {
        struct tdbm_handle *h;
        struct tdbm_entry e;
        size_t got = 0;
        if (tdbm_lookup(r->m, TDBM_ROOT_INO, "a", &e) != 0 || !e.ino ||
            open_as_kernel(r->m, "a", &e, &h) != 0) {
            atomic_fetch_add(&r->bad, 1);
            break;
        }
        for (int k = 0; k < 3; k++) {
            int32_t *v = k ? again : first;
            if (tdbm_read(r->m, h, 0, v, sizeof first, &got) != 0 ||
                got != sizeof first || !race_view(v, r->want) ||
                (k && memcmp(first, again, sizeof first) != 0))
                atomic_fetch_add(&r->bad, 1);
            sched_yield();
        }
        atomic_fetch_add(&r->reads, 1);
        tdbm_release(r->m, h);
        tdbm_forget(r->m, e.ino, 1);
    }
    return NULL;
}

static void test_refresh_threads(void)
{
    struct refresh_race r = {0};
    int32_t want[50];
    struct fixture l;
    pthread_t th[3];
    char wrt[512];
    int swaps = 0;

    CHECK_EQ_INT(expected("dense_1d_basic", "a", want, sizeof want),
                 sizeof want);
    if (!live_setup(&l, "dense_1d_basic", ".", "refresh=1", false))
        return;
    CHECK_EQ_INT(live_put(&l, ".", false), 0);
    snprintf(wrt, sizeof wrt, "%s/hold/__commits", l.dir);
    r.m = l.m;
    r.want = want;
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, race_reader, &r), 0);
    for (int i = 0; i < 12; i++) {
        /* the commit file in (then the fragment shows), or out again */
        CHECK_EQ_INT(i % 2 ? sh("mv '%s/__commits/'* '%s/'", l.arr, wrt)
                           : live_put(&l, ".", true), 0);
        swaps += tdbm_refresh(l.m) == 1;
        while (atomic_load(&r.reads) < 3 * (i + 1) && !atomic_load(&r.bad))
            sched_yield();
    }
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ_INT(swaps, 12);
    CHECK_EQ_INT(atomic_load(&r.bad), 0);
    CHECK(atomic_load(&r.reads) >= 36);
    fx_close(&l);
}

/* The S3 options: endpoint, region and profile kept as given, the two
 * files made absolute (the daemon leaves its folder), all handed to the
 * engine by tdbm_s3_options. */
static void test_s3_option_values(void)
{
    struct tdb_store_options s3;
    struct tdbm_options o;
    char why[256], *cwd = getcwd(NULL, 0), want[4200];

    tdbm_options_init(&o);
    CHECK_EQ_INT(tdbm_option_list(&o, "endpoint=http://h:9/x,region=eu-1,"
                                  "profile=p q,credentials_file=k,"
                                  "config_file=/etc/c", why, sizeof why), 0);
    tdbm_s3_options(&o, &s3);
    CHECK(s3.endpoint && strcmp(s3.endpoint, "http://h:9/x") == 0);
    CHECK(s3.region && strcmp(s3.region, "eu-1") == 0);
    CHECK(s3.profile && strcmp(s3.profile, "p q") == 0);
    snprintf(want, sizeof want, "%s/k", cwd);
    CHECK(s3.credentials_file && strcmp(s3.credentials_file, want) == 0);
    CHECK(s3.config_file && strcmp(s3.config_file, "/etc/c") == 0);
    CHECK_EQ_INT(tdbm_option(&o, "endpoint", NULL, why, sizeof why), -1);
    tdbm_options_free(&o);
    CHECK(o.endpoint == NULL && o.credentials_file == NULL);
    free(cwd);
}

/* ---------------------------------------------------- fragment removal */

/* Commits a fragment of dense_1d_basic whose a and b are all `v`. */
static void commit_all(struct tdbm_mount *m, int32_t v)
{
    int32_t a[50];
    double b[50];
    struct tdbm_entry e;
    uint64_t stg = TDBM_STAGING_ROOT, frag;
    for (int i = 0; i < 50; i++) {
        a[i] = v;
        b[i] = v;
    }
    CHECK_EQ_INT(tdbm_mkdir(m, stg, "s", 0700, &e), 0);
    stage(m, e.ino, "a", a, sizeof a);
    stage(m, e.ino, "b", b, sizeof b);
    tdbm_forget(m, e.ino, 1);
    frag = look(m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(tdbm_rename(m, stg, "s", frag, "x", 0), 0);
    tdbm_forget(m, frag, 1);
}

/* The names folder `ino` lists, joined by ' ', into out[cap]. */
static void listing(struct tdbm_mount *m, uint64_t ino, char *out, size_t cap)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    const char *name;
    uint64_t child;
    out[0] = '\0';
    if (tdbm_opendir(m, ino, &h, &oi) != 0) {
        snprintf(out, cap, "(no opendir)");
        return;
    }
    for (uint64_t i = 0; tdbm_dir_entry(m, h, i, &name, &child, true) == 0;
         i++) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s", n ? " " : "", name);
    }
    tdbm_release(m, h);
}

/* Unlinks every entry folder `ino` lists, as rm -r does. */
static void unlink_all(struct tdbm_mount *m, uint64_t ino)
{
    char names[512], *save = NULL;
    listing(m, ino, names, sizeof names);
    for (char *t = strtok_r(names, " ", &save); t;
         t = strtok_r(NULL, " ", &save))
        CHECK_EQ_INT(tdbm_unlink(m, ino, t), 0);
}

/* rm -r __fragments/NAME on a rw mount: each unlink hides a file of the
 * folder (lookups and listings of this mount no longer find it), rmdir
 * of the emptied folder deletes the fragment (ENOTEMPTY before, ENOENT
 * for a name not there); a new view is current at once while a file
 * opened before still reads the deleted fragment's bytes; its folder goes
 * with the last handle of the old view.  Elsewhere EROFS; on a read-only
 * mount EROFS. */
static void test_fragment_rm(void)
{
    struct fixture f, ro;
    int32_t v[50], want[50];
    struct tdbm_open_info oi;
    struct tdbm_handle *ha, *hf;
    char names[512], newest[512], path[1200], why[512] = "";
    struct stat st;
    uint64_t frag, fd, ia, ifa;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    commit_all(f.m, 7);
    commit_all(f.m, 9);
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    listing(f.m, frag, names, sizeof names);
    /* the newest: the greater of two names of as many digits */
    {
        char *sp = strchr(names, ' ');
        CHECK(sp != NULL);
        if (!sp) {
            fx_close(&f);
            return;
        }
        *sp = '\0';
        snprintf(newest, sizeof newest, "%s",
                 strcmp(names, sp + 1) > 0 ? names : sp + 1);
    }
    fd = look(f.m, frag, newest);
    CHECK(fd != 0);
    /* handles opened before the delete, nothing read yet */
    ia = look(f.m, TDBM_ROOT_INO, "a");
    ifa = look(f.m, fd, "a");
    CHECK_EQ_INT(tdbm_open(f.m, ia, O_RDONLY, &ha, &oi), 0);
    CHECK_EQ_INT(tdbm_open(f.m, ifa, O_RDONLY, &hf, &oi), 0);

    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, newest), -ENOTEMPTY);
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, "__1_1_0123_22"), -ENOENT);
    CHECK_EQ_INT(tdbm_unlink(f.m, fd, "nothing"), -ENOENT);
    listing(f.m, fd, names, sizeof names);
    CHECK(strncmp(names, "__fragment.json a ", 18) == 0);
    CHECK_EQ_INT(tdbm_unlink(f.m, fd, "a"), 0);
    CHECK_EQ_INT(tdbm_unlink(f.m, fd, "a"), -ENOENT);
    CHECK_EQ_INT(look(f.m, fd, "a"), 0);
    {
        char after[512];
        listing(f.m, fd, after, sizeof after);
        CHECK(strncmp(after, "__fragment.json b", 17) == 0);
        CHECK_EQ_INT(strlen(after), strlen(names) - 2);
    }
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, newest), -ENOTEMPTY);
    unlink_all(f.m, fd);
    listing(f.m, fd, names, sizeof names);
    CHECK(strcmp(names, "") == 0);
    /* not a fragment's folder: the usual answers */
    CHECK_EQ_INT(tdbm_unlink(f.m, frag, newest), -EROFS);
    CHECK_EQ_INT(tdbm_rmdir(f.m, TDBM_ROOT_INO, "__fragments"), -EROFS);
    CHECK_EQ_INT(tdbm_rmdir(f.m, fd, "a"), -EROFS);
    CHECK_EQ_INT(tdbm_unlink(f.m, TDBM_ROOT_INO, "a"), -EROFS);

    /* a read-only mount of the same array */
    memset(&ro, 0, sizeof ro);
    snprintf(ro.arr, sizeof ro.arr, "%s", f.arr);
    if (fx_mount(&ro, "", false, why, sizeof why) == NULL) {
        uint64_t rf = look(ro.m, TDBM_ROOT_INO, "__fragments");
        uint64_t rd = look(ro.m, rf, newest);
        CHECK(rd != 0);
        CHECK_EQ_INT(tdbm_unlink(ro.m, rd, "a"), -EROFS);
        CHECK_EQ_INT(tdbm_rmdir(ro.m, rf, newest), -EROFS);
        tdbm_forget(ro.m, rd, 1);
        tdbm_forget(ro.m, rf, 1);
    } else {
        CHECK(!"a read-only mount");
    }
    fx_close(&ro);

    logbuf[0] = '\0';
    invals = 0;
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, newest), 0);
    CHECK_EQ_INT(invals, 1);
    snprintf(path, sizeof path, "deleted fragment __fragments/%s", newest);
    CHECK(strstr(logbuf, path) != NULL);
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, newest), -ESTALE); /* old view */
    {
        uint64_t nf = look(f.m, TDBM_ROOT_INO, "__fragments");
        CHECK_EQ_INT(nf >> TDBM_GEN_SHIFT, 4);
        CHECK_EQ_INT(look(f.m, nf, newest), 0);
        CHECK_EQ_INT(tdbm_rmdir(f.m, nf, newest), -ENOENT);
        tdbm_forget(f.m, nf, 1);
        uint64_t na = look(f.m, TDBM_ROOT_INO, "a");
        CHECK_EQ_INT(slurp(f.m, na, v, sizeof v), sizeof v);
        for (int i = 0; i < 50; i++)
            want[i] = 7;
        CHECK_MEM(v, want, sizeof v);
        tdbm_forget(f.m, na, 1);
    }
    snprintf(path, sizeof path, "%s/__commits/%s.wrt", f.arr, newest);
    CHECK(stat(path, &st) != 0);
    snprintf(path, sizeof path, "%s/__fragments/%s", f.arr, newest);
    CHECK(stat(path, &st) == 0); /* the old view is open */
    /* the handles of the old view read its bytes */
    for (int k = 0; k < 2; k++) {
        size_t got = 0;
        CHECK_EQ_INT(tdbm_read(f.m, k ? hf : ha, 0, v, sizeof v, &got), 0);
        CHECK_EQ_INT(got, sizeof v);
        for (int i = 0; i < 50; i++)
            want[i] = 9;
        CHECK_MEM(v, want, sizeof v);
    }
    tdbm_release(f.m, ha);
    CHECK(stat(path, &st) == 0);
    tdbm_release(f.m, hf);
    CHECK(stat(path, &st) != 0); /* gone with the last handle */
    snprintf(path, sizeof path, "removed the folder of deleted fragment "
             "__fragments/%s", newest);
    CHECK(strstr(logbuf, path) != NULL);
    tdbm_forget(f.m, ia, 1);
    tdbm_forget(f.m, ifa, 1);
    tdbm_forget(f.m, fd, 1);
    tdbm_forget(f.m, frag, 1);
    fx_close(&f);
}

/* A delete whose folder waits for an old view when the mount ends: the
 * end removes it.  (The old view is held by a folder handle, which owns
 * nothing the mount frees: the kernel releases every handle before the
 * end, a test cannot.) */
static void test_fragment_rm_at_end(void)
{
    struct fixture f;
    struct tdbm_open_info oi;
    struct tdbm_handle *hd;
    char names[512], path[1200];
    struct stat st;
    uint64_t frag, fd;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    commit_all(f.m, 7);
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    listing(f.m, frag, names, sizeof names);
    fd = look(f.m, frag, names);
    CHECK_EQ_INT(tdbm_opendir(f.m, frag, &hd, &oi), 0);
    unlink_all(f.m, fd);
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, names), 0);
    snprintf(path, sizeof path, "%s/__fragments/%s", f.arr, names);
    CHECK(stat(path, &st) == 0);
    tdbm_mount_free(f.m);
    f.m = NULL;
    free(hd);
    CHECK(stat(path, &st) != 0);
    snprintf(path, sizeof path, "%s/__fragments", f.arr);
    CHECK(stat(path, &st) == 0);
    fx_close(&f);
}

/* A delete that fails (the commit removed behind the mount's back) says
 * why, naming the fragment, and answers the engine's errno. */
static void test_fragment_rm_fails(void)
{
    struct fixture f;
    char names[512], path[1200];
    uint64_t frag, fd;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    commit_all(f.m, 7);
    frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    listing(f.m, frag, names, sizeof names);
    fd = look(f.m, frag, names);
    unlink_all(f.m, fd);
    snprintf(path, sizeof path, "%s/__commits/%s.wrt", f.arr, names);
    CHECK_EQ_INT(unlink(path), 0);
    logbuf[0] = '\0';
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, names), -ENOENT);
    snprintf(path, sizeof path, "deleting fragment __fragments/%s: ", names);
    CHECK(strstr(logbuf, path) != NULL);
    tdbm_forget(f.m, fd, 1);
    tdbm_forget(f.m, frag, 1);
    fx_close(&f);
}

int main(void)
{
    RUN(test_options);
    RUN(test_owner_options);
    RUN(test_names);
    RUN_CORPUS(test_slices_dropped);
    RUN_CORPUS(test_owner_read_only);
    RUN_CORPUS(test_owner_writable);
    RUN_CORPUS(test_fragments_exdev);
    RUN_CORPUS(test_inodes);
    RUN_CORPUS(test_meta);
    RUN_CORPUS(test_meta_store_fails);
    RUN_CORPUS(test_meta_one_store);
    RUN(test_errno_mapping);
    if (geteuid() == 0)
        RUN_CORPUS(test_write_eacces);
    else
        UNIT_SKIP(test_write_eacces, "switching to another user needs root");
    RUN_CORPUS(test_commit_dense);
    RUN_CORPUS(test_commit_refused);
    RUN_CORPUS(test_commit_sparse);
    RUN_CORPUS(test_fragment_rm);
    RUN_CORPUS(test_fragment_rm_at_end);
    RUN_CORPUS(test_fragment_rm_fails);
    RUN_CORPUS(test_error_take);
    RUN_CORPUS(test_refresh);
    RUN_CORPUS(test_refresh_watch_dirs);
    RUN_CORPUS(test_refresh_group);
    RUN_CORPUS(test_refresh_own_write);
    RUN_CORPUS(test_refresh_fails);
    RUN_CORPUS(test_refresh_stale_open);
    RUN_CORPUS(test_refresh_threads);
    RUN(test_s3_option_values);
    return unit_done();
}
