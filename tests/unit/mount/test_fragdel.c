/* test_fragdel.c: fragments removed through the mount (mount/fragdel.c):
 * rm of a fragment's folder, at the end of the list, and when it
 * fails. */
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

/* The newest fragment of the two `frag` lists, into newest[cap]: the
 * greater of two names of as many digits.  False when not two. */
static bool newest_of_two(struct tdbm_mount *m, uint64_t frag, char *newest,
                          size_t cap)
{
    char names[512];
    listing(m, frag, names, sizeof names);
    char *sp = strchr(names, ' ');
    CHECK(sp != NULL);
    if (!sp)
        return false;
    *sp = '\0';
    snprintf(newest, cap, "%s", strcmp(names, sp + 1) > 0 ? names : sp + 1);
    return true;
}

/* Unlinking the files of fragment folder fd (of `newest` in frag): each
 * is hidden at once, rmdir refused until the folder is empty; outside a
 * fragment's folder EROFS. */
static void rm_unlink_files(struct tdbm_mount *m, uint64_t frag, uint64_t fd,
                            const char *newest)
{
    char names[512], after[512];
    CHECK_EQ_INT(tdbm_rmdir(m, frag, newest), -ENOTEMPTY);
    CHECK_EQ_INT(tdbm_rmdir(m, frag, "__1_1_0123_22"), -ENOENT);
    CHECK_EQ_INT(tdbm_unlink(m, fd, "nothing"), -ENOENT);
    listing(m, fd, names, sizeof names);
    CHECK(strncmp(names, "__fragment.json a ", 18) == 0);
    CHECK_EQ_INT(tdbm_unlink(m, fd, "a"), 0);
    CHECK_EQ_INT(tdbm_unlink(m, fd, "a"), -ENOENT);
    CHECK_EQ_INT(look(m, fd, "a"), 0);
    listing(m, fd, after, sizeof after);
    CHECK(strncmp(after, "__fragment.json b", 17) == 0);
    CHECK_EQ_INT(strlen(after), strlen(names) - 2);
    CHECK_EQ_INT(tdbm_rmdir(m, frag, newest), -ENOTEMPTY);
    unlink_all(m, fd);
    listing(m, fd, names, sizeof names);
    CHECK(strcmp(names, "") == 0);
    /* not a fragment's folder: the usual answers */
    CHECK_EQ_INT(tdbm_unlink(m, frag, newest), -EROFS);
    CHECK_EQ_INT(tdbm_rmdir(m, TDBM_ROOT_INO, "__fragments"), -EROFS);
    CHECK_EQ_INT(tdbm_rmdir(m, fd, "a"), -EROFS);
    CHECK_EQ_INT(tdbm_unlink(m, TDBM_ROOT_INO, "a"), -EROFS);
}

/* On a read-only mount of array `arr`, unlink and rmdir in fragment
 * `newest` are EROFS. */
static void rm_read_only(const char *arr, const char *newest)
{
    struct fixture ro;
    char why[512] = "";
    memset(&ro, 0, sizeof ro);
    snprintf(ro.arr, sizeof ro.arr, "%s", arr);
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
}

/* Fills the 50 values of want with x. */
static void fill50(int32_t want[50], int32_t x)
{
    for (int i = 0; i < 50; i++)
        want[i] = x;
}

/* After the delete of `newest` the new view is current: its __fragments
 * no longer has it, and a reads the older write (7s). */
static void rm_check_new_view(struct tdbm_mount *m, const char *newest)
{
    int32_t v[50], want[50];
    uint64_t nf = look(m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(nf >> TDBM_GEN_SHIFT, 4);
    CHECK_EQ_INT(look(m, nf, newest), 0);
    CHECK_EQ_INT(tdbm_rmdir(m, nf, newest), -ENOENT);
    tdbm_forget(m, nf, 1);
    uint64_t na = look(m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(slurp(m, na, v, sizeof v), sizeof v);
    fill50(want, 7);
    CHECK_MEM(v, want, sizeof v);
    tdbm_forget(m, na, 1);
}

/* The handles ha and hf of the old view read its bytes (9s); the deleted
 * fragment's folder (path) goes with the last of them, and the log says
 * so. */
static void rm_check_old_handles(struct tdbm_mount *m, struct tdbm_handle *ha,
                                 struct tdbm_handle *hf, const char *path,
                                 const char *newest)
{
    int32_t v[50], want[50];
    struct stat st;
    char said[700];
    for (int k = 0; k < 2; k++) {
        size_t got = 0;
        CHECK_EQ_INT(mount_read(m, k ? hf : ha, 0, v, sizeof v, &got), 0);
        CHECK_EQ_INT(got, sizeof v);
        fill50(want, 9);
        CHECK_MEM(v, want, sizeof v);
    }
    tdbm_release(m, ha);
    CHECK(stat(path, &st) == 0);
    tdbm_release(m, hf);
    CHECK(stat(path, &st) != 0); /* gone with the last handle */
    snprintf(said, sizeof said, "removed the folder of deleted fragment "
             "__fragments/%s", newest);
    CHECK(strstr(logbuf, said) != NULL);
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
    struct fixture f;
    struct tdbm_open_info oi;
    struct tdbm_handle *ha, *hf;
    char newest[512], path[1200];
    struct stat st;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    commit_all(f.m, 7);
    commit_all(f.m, 9);
    uint64_t frag = look(f.m, TDBM_ROOT_INO, "__fragments");
    if (!newest_of_two(f.m, frag, newest, sizeof newest)) {
        fx_close(&f);
        return;
    }
    uint64_t fd = look(f.m, frag, newest);
    CHECK(fd != 0);
    /* handles opened before the delete, nothing read yet */
    uint64_t ia = look(f.m, TDBM_ROOT_INO, "a"), ifa = look(f.m, fd, "a");
    CHECK_EQ_INT(tdbm_open(f.m, ia, O_RDONLY, &ha, &oi), 0);
    CHECK_EQ_INT(tdbm_open(f.m, ifa, O_RDONLY, &hf, &oi), 0);
    rm_unlink_files(f.m, frag, fd, newest);
    rm_read_only(f.arr, newest);
    logbuf[0] = '\0';
    invals = 0;
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, newest), 0);
    CHECK_EQ_INT(invals, 1);
    snprintf(path, sizeof path, "deleted fragment __fragments/%s", newest);
    CHECK(strstr(logbuf, path) != NULL);
    CHECK_EQ_INT(tdbm_rmdir(f.m, frag, newest), -ESTALE); /* old view */
    rm_check_new_view(f.m, newest);
    snprintf(path, sizeof path, "%s/__commits/%s.wrt", f.arr, newest);
    CHECK(stat(path, &st) != 0);
    snprintf(path, sizeof path, "%s/__fragments/%s", f.arr, newest);
    CHECK(stat(path, &st) == 0); /* the old view is open */
    rm_check_old_handles(f.m, ha, hf, path, newest);
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
    RUN_CORPUS(test_fragment_rm);
    RUN_CORPUS(test_fragment_rm_at_end);
    RUN_CORPUS(test_fragment_rm_fails);
    return unit_done();
}
