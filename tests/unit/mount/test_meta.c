/* test_meta.c: the metadata files of a mount (mount/meta.c): typed values,
 * bad sizes, deletion, a store that fails until it is retried, and one
 * value stored per write whatever the closes and truncations. */
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

/* ------------------------------------------------------------------ tests */

/* A typed value with a key holding '/', then a string without type, put
 * and read back with their datatype; the __meta folder of the tree after
 * them. */
static uint64_t meta_check_typed(struct tdbm_mount *m)
{
    int32_t v[2] = {7, -9}, got[4];
    char *val;
    size_t len;
    CHECK_EQ_INT(meta_put(m, "k%2Fv", "INT32", v, sizeof v), 0);
    CHECK_EQ_INT(invals, 1);
    uint64_t meta = look(m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(meta >> TDBM_GEN_SHIFT, 2); /* the tree of the write */
    uint64_t k = look(m, meta, "k%2Fv");
    CHECK(k != 0);
    CHECK_EQ_INT(slurp(m, k, got, sizeof got), sizeof v);
    CHECK_MEM(got, v, sizeof v);
    CHECK_EQ_INT(tdbm_getxattr(m, k, TDBM_DATATYPE_XATTR, &val, &len), 0);
    CHECK(len == 5 && memcmp(val, "INT32", 5) == 0);
    free(val);
    tdbm_forget(m, k, 1);
    /* no type: a string */
    CHECK_EQ_INT(meta_put(m, "s", NULL, "hello", 5), 0);
    tdbm_forget(m, meta, 1);
    meta = look(m, TDBM_ROOT_INO, "__meta");
    k = look(m, meta, "s");
    CHECK_EQ_INT(tdbm_getxattr(m, k, TDBM_DATATYPE_XATTR, &val, &len), 0);
    CHECK(len == 11 && memcmp(val, "STRING_UTF8", 11) == 0);
    free(val);
    tdbm_forget(m, k, 1);
    return meta;
}

/* In folder meta: 3 bytes are no whole INT32 (refused, logged, nothing
 * stored); an unknown type and a bad name are refused. */
static void meta_check_refused(struct tdbm_mount *m, uint64_t meta)
{
    struct tdbm_created c;
    invals = 0;
    CHECK_EQ_INT(meta_put(m, "bad", "INT32", "abc", 3), -EINVAL);
    CHECK(strstr(logbuf, "__meta/bad: 3 bytes are not a whole number of "
                         "INT32 values") != NULL);
    CHECK_EQ_INT(invals, 0);
    CHECK_EQ_INT(look(m, meta, "bad"), 0);
    CHECK_EQ_INT(tdbm_create(m, meta, "t", O_WRONLY | O_CREAT, 0644, &c), 0);
    struct tdbm_entry e = c.e;
    struct tdbm_handle *h = c.h;
    CHECK(e.ino & TDBM_META_BIT);
    CHECK_EQ_INT(tdbm_setxattr(m, e.ino, TDBM_DATATYPE_XATTR, "NOPE", 4,
                               false), -EINVAL);
    CHECK_EQ_INT(tdbm_flush(m, h), 0); /* nothing written: no value */
    tdbm_release(m, h);
    CHECK_EQ_INT(tdbm_create(m, meta, "a%zz", O_WRONLY | O_CREAT, 0644, &c),
                 -EINVAL);
}

static void test_meta(void)
{
    struct fixture f;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    uint64_t meta = meta_check_typed(f.m);
    meta_check_refused(f.m, meta);
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
    struct tdb_io_fault flt = {.fail_at = 1, .crash = true};
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

int main(void)
{
    RUN_CORPUS(test_meta);
    RUN_CORPUS(test_meta_store_fails);
    RUN_CORPUS(test_meta_one_store);
    return unit_done();
}
