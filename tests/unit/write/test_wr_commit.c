/* test_wr_commit.c: a commit (docs/LAYOUT.md "Writing") cut short at
 * every mutating I/O call, through tdb_io_faulty: the array shows the old
 * data or the whole new fragment, never part of one, and committing the
 * same staged folder again gives exactly one fragment; the same for the
 * removal of a committed staged folder (renamed away first, so the folder
 * is whole with its marker or gone, and the retry removes it); a metadata
 * write (the same publish as the commit file) shows the old or the new
 * value; and the no-follow POSIX backend refuses symbolic and hard links
 * and special files. */
#include "write/writer.h"
#include "model/arraydir.h"
#include "model/meta.h"
#include "../support.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- helpers */

/* dense_1d_basic (x in [1, 50]; INT32 a, FLOAT64 b): staged folder "s". */
static void stage_dense(struct tdb_io *stg, int32_t a[50])
{
    double b[50];
    for (int i = 0; i < 50; i++) {
        a[i] = 1000 + 7 * i;
        b[i] = i * 0.25;
    }
    CHECK_EQ_INT(tdb_io_mem(stg), 0);
    stg->ops->mkdir(stg->ctx, "s");
    unit_put(stg, "s/a", a, 50 * 4);
    unit_put(stg, "s/b", b, sizeof b);
}

/* The bytes of file `path` of the array as the mount shows it (NULL when
 * it cannot be opened or read). */
static uint8_t *view_file(const struct tdb_io *arr, const char *path,
                          uint64_t *size)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    if (tdb_fs_open(&fs, arr, &o, &err)) {
        fprintf(stderr, "  %s: %s\n", path, err.msg);
        return NULL;
    }
    uint8_t *b = unit_fs_file(fs, path, size);
    tdb_fs_close(fs);
    return b;
}

/* How many entries folder `dir` of io has. */
static size_t count(const struct tdb_io *io, const char *dir)
{
    struct tdb_names n;
    if (tdb_io_names(io, dir, &n, NULL))
        return (size_t)-1;
    size_t k = n.n;
    tdb_names_free(&n);
    return k;
}

/* One commit of staged folder "s" through faulty views of both backends
 * (one count for the two), failing at call fail_at (0: never).  Returns
 * the result; *calls gets the number of mutating calls made. */
static int faulty_commit(const struct tdb_io *arr, const struct tdb_io *stg,
                         uint64_t fail_at, bool crash, uint64_t *calls,
                         char **name)
{
    struct tdb_io_fault f = {.fail_at = fail_at, .crash = crash};
    struct tdb_io fa, fs;
    CHECK_EQ_INT(tdb_io_faulty(&fa, arr, &f), 0);
    CHECK_EQ_INT(tdb_io_faulty(&fs, stg, &f), 0);
    struct tdb_error err = {0};
    int r = unit_write(&fa, &fs, "s", NULL, 11, 0, name, &err);
    *calls = f.count;
    tdb_io_free(&fa);
    tdb_io_free(&fs);
    return r;
}

/* ------------------------------------------------------------ the commit */

/* The array after a commit stopped short (result r, name first): the
 * old data (old_n bytes) and no committed fragment, or the whole new one
 * (the staged a). */
static void cut_check_after(const struct tdb_io *arr, int r, const char *first,
                            size_t commits, const int32_t a[50],
                            const uint8_t *old, uint64_t old_n)
{
    uint64_t gn = 0;
    uint8_t *got = view_file(arr, "a", &gn);
    if (r == 0) {
        /* only the calls after the commit file (the folder's sync) may
         * fail without undoing it */
        CHECK(first != NULL);
        CHECK_EQ_INT(commits, 1);
        CHECK(got && gn == 200 && !memcmp(got, a, 200));
    } else if (commits == 1) {
        CHECK(got && gn == 200 && !memcmp(got, a, 200));
    } else {
        /* not committed: readers see the old data */
        CHECK_EQ_INT(commits, 0);
        CHECK(got && gn == old_n && !memcmp(got, old, old_n));
    }
    free(got);
}

/* The same staged folder committed again after a commit stopped at call
 * n, nothing failing: exactly one fragment (the first one, first, if
 * that committed), reading the staged bytes a. */
static void cut_recommit(const struct tdb_io *arr, const struct tdb_io *stg,
                         uint64_t n, size_t commits, const char *first,
                         const int32_t a[50])
{
    char *second = NULL;
    struct tdb_error err = {0};
    int r = unit_write(arr, stg, "s", NULL, 12, 0, &second, &err);
    if (r)
        fprintf(stderr, "  re-commit after call %llu: %s\n",
                (unsigned long long)n, err.msg);
    CHECK_EQ_INT(r, 0);
    CHECK_EQ_INT(count(arr, "__commits"), 1);
    CHECK_EQ_INT(count(arr, "__fragments"), 1);
    if (commits == 1)
        CHECK(first && second && !strcmp(first, second));
    uint64_t gn = 0;
    uint8_t *got = view_file(arr, "a", &gn);
    CHECK(got && gn == 200 && !memcmp(got, a, 200));
    free(got);
    free(second);
}

/* The array after a commit stopped at call n: the old data and no
 * committed fragment, or the whole new one; then the same staged folder
 * committed again: exactly one fragment, reading the staged bytes, and no
 * uncommitted fragment folder left over. */
static void commit_cut_at_every_call(bool crash)
{
    int32_t a[50];
    struct tdb_io arr, stg;
    CHECK_EQ_INT(unit_array_from_case("dense_1d_basic", &arr), 0);
    stage_dense(&stg, a);
    uint64_t old_n = 0;
    uint8_t *old = view_file(&arr, "a", &old_n);
    CHECK(old && old_n == 200);
    uint64_t total = 0;
    char *nm = NULL;
    CHECK_EQ_INT(faulty_commit(&arr, &stg, 0, crash, &total, &nm), 0);
    free(nm);
    tdb_io_free(&arr);
    tdb_io_free(&stg);
    CHECK(total >= 8); /* marker, folders, data, metadata, syncs, commit */

    for (uint64_t n = 1; n <= total && !unit_cur_failed; n++) {
        CHECK_EQ_INT(unit_array_from_case("dense_1d_basic", &arr), 0);
        stage_dense(&stg, a);
        uint64_t calls = 0;
        char *first = NULL;
        int r = faulty_commit(&arr, &stg, n, crash, &calls, &first);
        size_t commits = count(&arr, "__commits");
        cut_check_after(&arr, r, first, commits, a, old, old_n);
        if (unit_cur_failed) {
            fprintf(stderr, "  stopped at call %llu of %llu (crash %d): %d\n",
                    (unsigned long long)n, (unsigned long long)total, crash, r);
        } else {
            cut_recommit(&arr, &stg, n, commits, first, a);
            if (unit_cur_failed)
                fprintf(stderr, "  stopped at call %llu of %llu (crash %d)\n",
                        (unsigned long long)n, (unsigned long long)total,
                        crash);
        }
        free(first);
        tdb_io_free(&arr);
        tdb_io_free(&stg);
    }
    free(old);
}

/* Killed at each call: nothing after it reaches the disk. */
static void test_commit_killed(void)
{
    commit_cut_at_every_call(true);
}

/* One call fails and the writer cleans up after itself. */
static void test_commit_one_failure(void)
{
    commit_cut_at_every_call(false);
}

/* ------------------------------------------------------------- metadata */

/* A metadata write (published as the commit file is, by tdb_io_publish)
 * cut short at every mutating call: the key has its old value or the new
 * one, and __meta never lists the temporary file. */
static void meta_cut_at_every_call(bool crash)
{
    uint64_t total = 0;
    for (uint64_t n = 0; n == 0 || n <= total; n++) {
        struct tdb_io arr, fa;
        struct tdb_error err = {0};
        CHECK_EQ_INT(unit_array_from_case("dense_1d_basic", &arr), 0);
        int32_t old = 1, neu = 2;
        CHECK_EQ_INT(tdb_meta_write(&arr, "__meta",
                                    &(struct tdb_meta_entry){"k", TDB_INT32, 1,
                                    &old, false},
                                    &(struct tdb_commit_options){NULL, 10},
                                    &err), 0);
        struct tdb_io_fault f = {.fail_at = n, .crash = crash};
        CHECK_EQ_INT(tdb_io_faulty(&fa, &arr, &f), 0);
        int r = tdb_meta_write(&fa, "__meta", &(struct tdb_meta_entry){"k",
                               TDB_INT32, 1, &neu, false},
                               &(struct tdb_commit_options){NULL, 11}, &err);
        if (n == 0) {
            CHECK_EQ_INT(r, 0);
            total = f.count;
            CHECK(total >= 4); /* mkdir, write, sync, rename (, sync) */
        }
        struct tdb_meta *m = NULL;
        CHECK_EQ_INT(tdb_meta_load(&arr, "__meta", TDB_TS_ALL, NULL, &m,
                                   &err), 0);
        const struct tdb_meta_item *it = m ? tdb_meta_find(m, "k") : NULL;
        int32_t v = 0;
        if (it && it->size == 4)
            memcpy(&v, it->value, 4);
        CHECK(v == (r == 0 ? 2 : 1)); /* the rename is the write */
        struct tdb_names nm = {0};
        CHECK_EQ_INT(tdb_io_names(&arr, "__meta", &nm, NULL), 0);
        for (size_t i = 0; i < nm.n; i++)
            CHECK(!strstr(nm.v[i], ".tmp"));
        if (unit_cur_failed)
            fprintf(stderr, "  metadata write stopped at call %llu of %llu "
                    "(crash %d): %d, value %d\n", (unsigned long long)n,
                    (unsigned long long)total, crash, r, (int)v);
        tdb_names_free(&nm);
        tdb_meta_free(m);
        tdb_io_free(&fa);
        tdb_io_free(&arr);
        if (unit_cur_failed)
            break;
    }
}

static void test_meta_killed(void)
{
    meta_cut_at_every_call(true);
}

static void test_meta_one_failure(void)
{
    meta_cut_at_every_call(false);
}

/* ------------------------------------------------ removal of staged files */

/* The mutating calls of a whole removal of staged folder s of stg, made
 * on a copy: after it nothing is left to sweep. */
static uint64_t removal_calls(const struct tdb_io *stg)
{
    struct tdb_io_fault g = {0};
    struct tdb_io cp, fc;
    struct tdb_error err = {0};
    size_t swept = 1;
    CHECK_EQ_INT(tdb_io_mem(&cp), 0);
    CHECK_EQ_INT(unit_copy_tree(stg, "s", &cp, "s"), 0);
    CHECK_EQ_INT(tdb_io_faulty(&fc, &cp, &g), 0);
    CHECK_EQ_INT(tdb_staged_remove(&fc, "s", &err), 0);
    CHECK_EQ_INT(count(&cp, ""), 0);
    CHECK_EQ_INT(tdb_staged_sweep(&cp, "", &swept, &err), 0);
    CHECK_EQ_INT(swept, 0);
    /* the rename; __error, a, b; the marker; the folder */
    CHECK_EQ_INT(g.count, 6);
    tdb_io_free(&fc);
    tdb_io_free(&cp);
    return g.count;
}

/* Staged folder s, left whole by a removal cut short: untouched (its
 * `staged` entries, the marker among them); the retry commits the same
 * fragment (first), writing nothing, and removes it. */
static void removal_retry(const struct tdb_io *arr, const struct tdb_io *stg,
                          const char *first, size_t staged)
{
    struct tdb_error err = {0};
    CHECK_EQ_INT(count(stg, "s"), staged);
    CHECK(tdb_io_exists(stg, "s/__fragment"));
    char *second = NULL;
    int r = unit_write(arr, stg, "s", NULL, 4, 0, &second, &err);
    CHECK_EQ_INT(r, 0);
    CHECK(second && !strcmp(first, second));
    free(second);
    CHECK_EQ_INT(tdb_staged_remove(stg, "s", &err), 0);
}

/* A committed staged folder removed with the removal cut short at each
 * call (killed: no call after it happens; or that one call failing): the
 * folder is whole, with its marker, or gone (renamed away first).  The
 * retry then commits nothing new and removes the folder, and
 * tdb_staged_sweep removes what the removal left: nothing remains. */
static void staged_removal_cut(bool crash)
{
    int32_t a[50];
    uint64_t total = 0;
    for (uint64_t n = 1; n == 1 || n <= total; n++) {
        struct tdb_io arr, stg, fs;
        CHECK_EQ_INT(unit_array_from_case("dense_1d_basic", &arr), 0);
        stage_dense(&stg, a);
        unit_put(&stg, "s/__error", "an earlier failure\n", 19);
        char *first = NULL;
        struct tdb_error err = {0};
        CHECK_EQ_INT(unit_write(&arr, &stg, "s", NULL, 3, 0, &first, &err),
                     0);
        size_t staged = count(&stg, "s");
        struct tdb_io_fault f = {.fail_at = n, .crash = crash};
        CHECK_EQ_INT(tdb_io_faulty(&fs, &stg, &f), 0);
        if (n == 1)
            total = removal_calls(&stg);
        int r = tdb_staged_remove(&fs, "s", &err);
        CHECK(r != 0);
        tdb_io_free(&fs);
        bool there = tdb_io_isdir(&stg, "s");
        if (there)
            removal_retry(&arr, &stg, first, staged);
        size_t swept = 0;
        CHECK_EQ_INT(tdb_staged_sweep(&stg, "", &swept, &err), 0);
        CHECK_EQ_INT(swept, there ? 0 : 1);
        CHECK_EQ_INT(count(&stg, ""), 0);
        CHECK_EQ_INT(count(&arr, "__commits"), 1);
        CHECK_EQ_INT(count(&arr, "__fragments"), 1);
        if (unit_cur_failed)
            fprintf(stderr, "  removal stopped at call %llu of %llu (crash "
                    "%d): %s\n", (unsigned long long)n,
                    (unsigned long long)total, crash, err.msg);
        free(first);
        tdb_io_free(&arr);
        tdb_io_free(&stg);
        if (unit_cur_failed)
            break;
    }
}

static void test_staged_removal_killed(void)
{
    staged_removal_cut(true);
}

static void test_staged_removal_one_failure(void)
{
    staged_removal_cut(false);
}

/* Trash names: ".committed." and a fragment's name, nothing else; the
 * sweep removes those folders and leaves every other. */
static void test_staged_trash(void)
{
    static const char frag[] = "__5_5_0123456789abcdef0123456789abcdef_22";
    char trash[96];
    snprintf(trash, sizeof trash, ".committed.%s", frag);
    CHECK(tdb_staged_is_trash(trash));
    CHECK(!tdb_staged_is_trash(frag));
    CHECK(!tdb_staged_is_trash(".committed."));
    CHECK(!tdb_staged_is_trash(".committed.x"));
    CHECK(!tdb_staged_is_trash("s"));
    struct tdb_io stg;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    char p[160];
    snprintf(p, sizeof p, "%s/a", trash);
    unit_put(&stg, p, "x", 1);
    unit_put(&stg, ".committed.x/a", "y", 1);
    unit_put(&stg, "s/a", "z", 1);
    size_t swept = 0;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_staged_sweep(&stg, "", &swept, &err), 0);
    CHECK_EQ_INT(swept, 1);
    CHECK(!tdb_io_exists(&stg, trash));
    CHECK(tdb_io_exists(&stg, ".committed.x/a"));
    CHECK(tdb_io_exists(&stg, "s/a"));
    tdb_io_free(&stg);
}

/* An uncommitted fragment folder that the staged folder's marker names
 * goes; one it does not name (another writer's) stays. */
static void test_clean_orphan(void)
{
    int32_t a[50];
    struct tdb_io arr, stg;
    CHECK_EQ_INT(unit_array_from_case("dense_1d_basic", &arr), 0);
    stage_dense(&stg, a);
    static const char ours[] = "__5_5_0123456789abcdef0123456789abcdef_22";
    static const char theirs[] = "__6_6_fedcba9876543210fedcba9876543210_22";
    unit_put(&stg, "s/__fragment", ours, strlen(ours));
    unit_put(&arr,
             "__fragments/__5_5_0123456789abcdef0123456789abcdef_22/a0.tdb",
             "xx", 2);
    unit_put(&arr,
             "__fragments/__6_6_fedcba9876543210fedcba9876543210_22/a0.tdb",
             "yy", 2);
    char *gone = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fragment_clean(&arr, &stg, "s", &gone, &err), 0);
    CHECK(gone && !strcmp(gone, ours));
    free(gone);
    CHECK(!tdb_io_exists(&arr, "__fragments/__5_5_0123456789abcdef0123456789abcdef_22"));
    char keep[128];
    snprintf(keep, sizeof keep, "__fragments/%s", theirs);
    CHECK(tdb_io_isdir(&arr, keep));
    /* a marker that is not a fragment name touches nothing */
    stg.ops->remove(stg.ctx, "s/__fragment");
    unit_put(&stg, "s/__fragment", "../../x", 7);
    gone = NULL;
    CHECK_EQ_INT(tdb_fragment_clean(&arr, &stg, "s", &gone, &err), 0);
    CHECK(gone == NULL);
    tdb_io_free(&arr);
    tdb_io_free(&stg);
}

/* ---------------------------------------------------- no-follow backend */

/* The 50 values of the file outside the staging folder. */
static void nofollow_secret(int32_t v[50])
{
    for (int i = 0; i < 50; i++)
        v[i] = 0x5ec7e7;
}

/* Writes n bytes as the file at `path`; false when it cannot be opened. */
static bool nofollow_put(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return false;
    fwrite(data, 1, n, fp);
    fclose(fp);
    return true;
}

/* In the folder tmpl: the file `secret` (its path into p), and the staged
 * fragment s with a file b and a link a to the secret. */
static void nofollow_fixture(const char *tmpl, char *p, size_t cap)
{
    char q[1200];
    int32_t secret[50];
    double b[50] = {0};
    nofollow_secret(secret);
    snprintf(p, cap, "%s/secret", tmpl);
    CHECK(nofollow_put(p, secret, sizeof secret));
    snprintf(q, sizeof q, "%s/s", tmpl);
    CHECK_EQ_INT(mkdir(q, 0700), 0);
    snprintf(q, sizeof q, "%s/s/b", tmpl);
    nofollow_put(q, b, sizeof b);
    snprintf(q, sizeof q, "%s/s/a", tmpl);
    CHECK_EQ_INT(symlink(p, q), 0);
}

/* The plain backend follows the link; the no-follow one does not, nor a
 * ".." nor a link as a folder of the path. */
static void nofollow_check_links(const struct tdb_io *stg,
                                 const struct tdb_io *plain, const char *tmpl)
{
    uint64_t sz = 0;
    int32_t buf[50];
    char q[1200];
    CHECK_EQ_INT(plain->ops->size(plain->ctx, "s/a", &sz), 0);
    CHECK_EQ_INT(stg->ops->size(stg->ctx, "s/a", &sz), TDB_E_INVAL);
    CHECK_EQ_INT(stg->ops->read_at(stg->ctx, "s/a", 0, buf, 4), TDB_E_INVAL);
    CHECK_EQ_INT(stg->ops->write_at(stg->ctx, "s/a", 0, buf, 4), TDB_E_INVAL);
    CHECK_EQ_INT(stg->ops->read_at(stg->ctx, "s/../secret", 0, buf, 4),
                 TDB_E_INVAL);
    CHECK_EQ_INT(stg->ops->read_at(stg->ctx, "secret", 0, buf, 4), 0);
    CHECK_EQ_INT(stg->ops->size(stg->ctx, "s/b", &sz), 0);
    CHECK_EQ_INT(sz, 400);
    /* a link as a folder of the path */
    snprintf(q, sizeof q, "%s/t", tmpl);
    CHECK_EQ_INT(symlink("s", q), 0);
    CHECK(stg->ops->size(stg->ctx, "t/b", &sz) != 0);
    bool d = true;
    CHECK_EQ_INT(stg->ops->is_dir(stg->ctx, "t", &d), 0);
    CHECK(!d);
}

/* Read descriptors are kept: a file read once is read again without
 * reopening it (a link put in its place meanwhile is not seen), until the
 * backend itself changes something; reopened, the link is refused. */
static void nofollow_check_kept(const struct tdb_io *stg, const char *tmpl,
                                const char *p)
{
    char q[1200];
    int32_t secret[50], buf[50];
    nofollow_secret(secret);
    snprintf(q, sizeof q, "%s/c", tmpl);
    CHECK(nofollow_put(q, secret, sizeof secret));
    CHECK_EQ_INT(stg->ops->read_at(stg->ctx, "c", 0, buf, 4), 0);
    CHECK_EQ_INT(unlink(q), 0);
    CHECK_EQ_INT(symlink(p, q), 0);
    CHECK_EQ_INT(stg->ops->read_at(stg->ctx, "c", 4, buf, 8), 0);
    CHECK_EQ_INT(stg->ops->mkdir(stg->ctx, "m"), 0);
    CHECK_EQ_INT(stg->ops->read_at(stg->ctx, "c", 0, buf, 4), TDB_E_INVAL);
}

/* Commits staged fragment s of stg to arr; expects code `code` and, when
 * refused, a message starting with `msg`. */
static void nofollow_commit(const struct tdb_io *arr, const struct tdb_io *stg,
                            int code, const char *msg)
{
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = unit_write(arr, stg, "s", NULL, 5, 0, &nm, &err);
    if (!code && r)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(r, code);
    if (code)
        CHECK(!strncmp(err.msg, msg, strlen(msg)));
    free(nm);
}

/* The commit refuses the link and names it, then a FIFO in its place
 * without blocking; nothing is committed. */
static void nofollow_check_link_fifo(const struct tdb_io *arr,
                                     const struct tdb_io *stg, const char *q)
{
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = unit_write(arr, stg, "s", NULL, 5, 0, &nm, &err);
    CHECK_EQ_INT(r, TDB_E_INVAL);
    CHECK(!strncmp(err.msg, "a: not a regular file", 21));
    CHECK(nm == NULL);
    CHECK_EQ_INT(count(arr, "__commits"), 0);
    CHECK(!tdb_io_exists(arr, "__fragments"));
    if (r != TDB_E_INVAL)
        fprintf(stderr, "  %d %s\n", r, err.msg);
    CHECK_EQ_INT(unlink(q), 0);
    CHECK_EQ_INT(mkfifo(q, 0600), 0);
    nofollow_commit(arr, stg, TDB_E_INVAL, "a: not a regular file");
}

/* A hard link to the file outside (p) in place of staged file q: refused
 * by the backend (reading or writing through it) and by the commit, and
 * left as it was. */
static void nofollow_check_hard_link(const struct tdb_io *arr,
                                     const struct tdb_io *stg, const char *p,
                                     const char *q)
{
    uint64_t sz = 0;
    int32_t buf[50], secret[50], back[50];
    nofollow_secret(secret);
    CHECK_EQ_INT(unlink(q), 0);
    CHECK_EQ_INT(link(p, q), 0);
    CHECK_EQ_INT(stg->ops->size(stg->ctx, "s/a", &sz), TDB_E_MLINK);
    CHECK_EQ_INT(stg->ops->read_at(stg->ctx, "s/a", 0, buf, 4), TDB_E_MLINK);
    CHECK_EQ_INT(stg->ops->write_at(stg->ctx, "s/a", 0, buf, 4), TDB_E_MLINK);
    nofollow_commit(arr, stg, TDB_E_INVAL, "a: hard link: ");
    CHECK_EQ_INT(count(arr, "__commits"), 0);
    struct stat sb;
    CHECK_EQ_INT(lstat(q, &sb), 0);
    CHECK_EQ_INT(sb.st_nlink, 2);
    FILE *fp = fopen(p, "rb");
    CHECK(fp && fread(back, 4, 50, fp) == 50 &&
          !memcmp(back, secret, sizeof back));
    if (fp)
        fclose(fp);
}

/* Links, FIFOs and folders in place of staged files are refused, by the
 * backend and by the commit, with a message naming the file; a link to a
 * file outside is never read. */
static void test_nofollow(void)
{
    char tmpl[] = "/tmp/tdbnofollowXXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    char p[1200], q[1200];
    int32_t secret[50];
    nofollow_secret(secret);
    nofollow_fixture(tmpl, p, sizeof p);
    int dfd = open(tmpl, O_RDONLY | O_DIRECTORY);
    struct tdb_io stg, plain, arr;
    CHECK_EQ_INT(tdb_io_posix_nofollow(&stg, dfd), 0);
    CHECK_EQ_INT(tdb_io_posix(&plain, tmpl), 0);
    nofollow_check_links(&stg, &plain, tmpl);
    nofollow_check_kept(&stg, tmpl, p);
    CHECK_EQ_INT(unit_array_from_case("dense_1d_basic", &arr), 0);
    snprintf(q, sizeof q, "%s/s/a", tmpl);
    nofollow_check_link_fifo(&arr, &stg, q);
    nofollow_check_hard_link(&arr, &stg, p, q);
    /* a folder in its place */
    CHECK_EQ_INT(unlink(q), 0);
    CHECK_EQ_INT(mkdir(q, 0700), 0);
    nofollow_commit(&arr, &stg, TDB_E_INVAL, "a: a folder");
    /* a regular file: the commit goes through, with the staged bytes */
    CHECK_EQ_INT(rmdir(q), 0);
    nofollow_put(q, secret, sizeof secret);
    nofollow_commit(&arr, &stg, 0, "");
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_staged_remove(&stg, "s", &err), 0);
    snprintf(q, sizeof q, "%s/s", tmpl);
    CHECK(access(q, F_OK) != 0);
    tdb_io_free(&arr);
    tdb_io_free(&stg);
    tdb_io_free(&plain);
    close(dfd);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(void)
{
    RUN_CORPUS(test_commit_killed);
    RUN_CORPUS(test_commit_one_failure);
    RUN_CORPUS(test_meta_killed);
    RUN_CORPUS(test_meta_one_failure);
    RUN_CORPUS(test_staged_removal_killed);
    RUN_CORPUS(test_staged_removal_one_failure);
    RUN(test_staged_trash);
    RUN_CORPUS(test_clean_orphan);
    RUN_CORPUS(test_nofollow);
    return unit_done();
}
