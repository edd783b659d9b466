/* test_refresh.c: live views (-o refresh, mount/refresh.c): another
 * writer's commits, the folders watched, open files keeping their bytes,
 * groups, the mount's own writes, failures, and refreshes racing
 * readers. */
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

/* The new view's a reads the corpus's expected bytes. */
static void refresh_check_new_view(struct tdbm_mount *m)
{
    int32_t after[50], want[50];
    CHECK_EQ_INT(expected("dense_1d_basic", "a", want, sizeof want),
                 sizeof want);
    uint64_t na = look(m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(na >> TDBM_GEN_SHIFT, 2);
    CHECK_EQ_INT(slurp(m, na, after, sizeof after), sizeof after);
    CHECK_MEM(after, want, sizeof want);
    tdbm_forget(m, na, 1);
}

/* The root may change: no negative entry, attribute or readdir page of
 * it is kept by the kernel; below it, as before. */
static void refresh_check_root_uncached(struct tdbm_mount *m)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    struct stat st;
    double timeout;
    CHECK_EQ_INT(tdbm_lookup(m, TDBM_ROOT_INO, "nope", &e), -ENOENT);
    CHECK_EQ_INT(tdbm_getattr(m, TDBM_ROOT_INO, &st, &timeout), 0);
    CHECK(timeout == 0.0);
    CHECK_EQ_INT(tdbm_opendir(m, TDBM_ROOT_INO, &h, &oi), 0);
    CHECK(!oi.cache_readdir && !oi.keep_cache);
    tdbm_release(m, h);
    uint64_t na = look(m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(tdbm_lookup(m, na, "nope", &e), 0);
    CHECK(e.ino == 0 && e.entry_timeout == TDBM_TIMEOUT);
    CHECK_EQ_INT(tdbm_opendir(m, na, &h, &oi), 0);
    CHECK(oi.cache_readdir && oi.keep_cache);
    tdbm_release(m, h);
    tdbm_forget(m, na, 1);
}

/* A fragment folder without its commit is not part of the array: a check
 * then finds nothing new; with its commit, one change, once. */
static void refresh_check_commits(struct fixture *l)
{
    CHECK_EQ_INT(live_put(l, ".", false), 0);
    CHECK_EQ_INT(tdbm_refresh(l->m), 0);
    CHECK_EQ_INT(invals, 0);
    CHECK_EQ_INT(live_put(l, ".", true), 0);
    CHECK_EQ_INT(tdbm_refresh(l->m), 1);
    CHECK_EQ_INT(invals, 1);
    CHECK_EQ_INT(tdbm_refresh(l->m), 0);
    CHECK_EQ_INT(invals, 1);
}

/* A commit another writer made becomes the view of new lookups at the
 * next check; an open file keeps the bytes it opened; a check that finds
 * nothing new (a fragment folder without its commit file) reopens
 * nothing. */
static void test_refresh(void)
{
    int32_t before[50], after[50];
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    struct stat st;
    struct fixture l;
    double timeout;
    size_t got;
    uint64_t ia;

    if (!live_setup(&l, "dense_1d_basic", ".", "refresh=7", false))
        return;
    CHECK_EQ_INT(tdbm_refresh_secs(l.m), 7);
    CHECK_EQ_INT(tdbm_refresh(l.m), 0);
    ia = look(l.m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(tdbm_open(l.m, ia, O_RDONLY, &h, &oi), 0);
    CHECK_EQ_INT(mount_read(l.m, h, 0, before, sizeof before, &got), 0);
    CHECK_EQ_INT(got, sizeof before);
    CHECK_EQ_INT((uint32_t)before[0], 0x80000000u); /* the fill value */
    refresh_check_commits(&l);
    refresh_check_new_view(l.m);
    /* the handle opened before reads what it read */
    memset(after, 0, sizeof after);
    CHECK_EQ_INT(mount_read(l.m, h, 0, after, sizeof after, &got), 0);
    CHECK_EQ_INT(got, sizeof after);
    CHECK_MEM(after, before, sizeof before);
    tdbm_release(l.m, h);
    CHECK_EQ_INT(tdbm_getattr(l.m, ia, &st, &timeout), -ESTALE);
    tdbm_forget(l.m, ia, 1);
    refresh_check_root_uncached(l.m);
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
        CHECK_EQ_INT(mount_read(l.m, h, 0, v, sizeof v, &got), 0);
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
            if (mount_read(r->m, h, 0, v, sizeof first, &got) != 0 ||
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

int main(void)
{
    RUN_CORPUS(test_refresh);
    RUN_CORPUS(test_refresh_watch_dirs);
    RUN_CORPUS(test_refresh_group);
    RUN_CORPUS(test_refresh_own_write);
    RUN_CORPUS(test_refresh_fails);
    RUN_CORPUS(test_refresh_stale_open);
    RUN_CORPUS(test_refresh_threads);
    return unit_done();
}
