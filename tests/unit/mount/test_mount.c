/* test_mount.c: the tree of a mount (mount/mount.c) without FUSE: inode
 * numbering after a reload (a handle of the old tree keeps its bytes; old
 * numbers answer ESTALE), the owner and modes of uid=, gid= and umask= on
 * read-only and writable mounts, nothing made in __fragments but by a
 * commit (EXDEV), and __slice/ files dropped as the cache drops tiles.
 * The other files of mount/ have tests of their own here (test_FILE.c);
 * fixture.h is the mount they share. */
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
    /* an empty folder is no stale number: an attribute it lacks is
     * ENODATA (ls -l asks every entry for its ACL) */
    char *xv = NULL;
    size_t xl;
    CHECK_EQ_INT(tdbm_getxattr(f.m, meta, "system.posix_acl_access", &xv,
                               &xl), -ENODATA);
    CHECK(xv == NULL);
    CHECK_EQ_INT(tdbm_lookup(f.m, TDBM_STAGING_ROOT, "none", &e), -ENOENT);
    CHECK_EQ_INT(tdbm_mkdir(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME, 0700, &e),
                 -EEXIST);
    CHECK_EQ_INT(tdbm_mkdir(f.m, meta, "d", 0700, &e), -EROFS);
    /* a number of no tree */
    CHECK_EQ_INT(tdbm_lookup(f.m, UINT64_C(9) << TDBM_GEN_SHIFT | 2, "a", &e),
                 -ESTALE);
    fx_close(&f);
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

/* The tree and a new metadata file show the mount's owner; a chown of
 * the file to it is accepted, to another group refused. */
static void owner_tree_and_meta(struct fixture *f)
{
    struct tdbm_created c;
    struct stat st, out;
    st = look_stat(f->m, TDBM_ROOT_INO, "a");
    CHECK_EQ_INT(st.st_mode, S_IFREG | 0444);
    /* umask=002 lets the group write nothing: only the owner writes */
    st = look_stat(f->m, TDBM_ROOT_INO, "__fragments");
    CHECK_EQ_INT(st.st_mode, S_IFDIR | 0755);
    uint64_t meta = look(f->m, TDBM_ROOT_INO, "__meta");
    CHECK_EQ_INT(tdbm_create(f->m, meta, "k", O_WRONLY | O_CREAT, 0644, &c),
                 0);
    struct tdbm_entry e = c.e;
    struct tdbm_handle *h = c.h;
    CHECK_EQ_INT(e.attr.st_mode, S_IFREG | 0644);
    CHECK(e.attr.st_uid == 4242 && e.attr.st_gid == 4343);
    st.st_uid = 4242;
    st.st_gid = 4343;
    CHECK_EQ_INT(tdbm_setattr(f->m, e.ino, h, &st, TDBM_SET_UID | TDBM_SET_GID,
                              &out), 0);
    st.st_gid = 0;
    CHECK_EQ_INT(tdbm_setattr(f->m, e.ino, h, &st, TDBM_SET_GID, &out),
                 -EPERM);
    tdbm_release(f->m, h);
    tdbm_forget(f->m, e.ino, 1);
    tdbm_forget(f->m, meta, 1);
}

/* A chown of staged file fe (handle h, on disk at path) and of its folder
 * e to the owner they have: accepted, with times (cp -a, tar x), the
 * file on disk still the daemon's; to another owner or group: refused,
 * nothing changed. */
static void owner_chown_staged(struct fixture *f, const struct tdbm_entry *e,
                               const struct tdbm_entry *fe,
                               struct tdbm_handle *h, const char *path)
{
    struct stat st = look_stat(f->m, TDBM_ROOT_INO, TDBM_STAGING_NAME), out,
                disk;
    st.st_uid = 4242;
    st.st_gid = 4343;
    st.st_mtim.tv_sec = 981173106;  /* 2001-02-03T04:05:06Z */
    st.st_mtim.tv_nsec = 0;
    CHECK_EQ_INT(tdbm_setattr(f->m, fe->ino, h, &st, TDBM_SET_UID |
                              TDBM_SET_GID | TDBM_SET_MTIME, &out), 0);
    CHECK(out.st_uid == 4242 && out.st_gid == 4343);
    CHECK_EQ_INT(out.st_mtim.tv_sec, 981173106);
    CHECK_EQ_INT(stat(path, &disk), 0);
    CHECK_EQ_INT(disk.st_mtim.tv_sec, 981173106);
    CHECK(disk.st_uid == geteuid());
    CHECK_EQ_INT(tdbm_setattr(f->m, e->ino, NULL, &st, TDBM_SET_UID, &out), 0);
    CHECK_EQ_INT(out.st_mode, S_IFDIR | 0700);
    st.st_uid = 4243;
    CHECK_EQ_INT(tdbm_setattr(f->m, fe->ino, h, &st, TDBM_SET_UID |
                              TDBM_SET_MTIME, &out), -EPERM);
    st.st_uid = 4242;
    st.st_gid = 4344;
    CHECK_EQ_INT(tdbm_setattr(f->m, e->ino, NULL, &st, TDBM_SET_GID, &out),
                 -EPERM);
}

/* The staging folder, a staged folder and file show the mount's owner
 * (on disk the file is the daemon's), and take chowns as
 * owner_chown_staged. */
static void owner_staged(struct fixture *f)
{
    struct tdbm_created c;
    struct tdbm_entry e;
    struct stat st, disk;
    char path[256];
    uint64_t stg = look(f->m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    st = look_stat(f->m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    CHECK_EQ_INT(st.st_mode, S_IFDIR | 0700);
    CHECK(st.st_uid == 4242 && st.st_gid == 4343);
    CHECK_EQ_INT(tdbm_mkdir(f->m, stg, "s", 0777, &e), 0);
    CHECK_EQ_INT(e.attr.st_mode, S_IFDIR | 0700);
    CHECK(e.attr.st_uid == 4242 && e.attr.st_gid == 4343);
    CHECK_EQ_INT(tdbm_create(f->m, e.ino, "a", O_WRONLY | O_CREAT, 0666,
                             &c), 0);
    struct tdbm_entry fe = c.e;
    struct tdbm_handle *h = c.h;
    CHECK_EQ_INT(fe.attr.st_mode, S_IFREG | 0600);
    CHECK(fe.attr.st_uid == 4242 && fe.attr.st_gid == 4343);
    /* on disk, the daemon's */
    snprintf(path, sizeof path, "%s/stg/s/a", f->dir);
    CHECK_EQ_INT(stat(path, &disk), 0);
    CHECK(disk.st_uid == geteuid());
    owner_chown_staged(f, &e, &fe, h, path);
    tdbm_release(f->m, h);
    tdbm_forget(f->m, fe.ino, 1);
    tdbm_forget(f->m, e.ino, 1);
}

/* A writable mount with uid=, gid=, umask=: the tree, the metadata files
 * and the staged entries show that owner, whoever owns them on disk; a
 * chown to it is accepted (and changes nothing), any other refused. */
static void test_owner_writable(void)
{
    struct fixture f;

    if (!fx_setup_with(&f, "dense_1d_basic", ",uid=4242,gid=4343,umask=002"))
        return;
    owner_tree_and_meta(&f);
    owner_staged(&f);
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
    CHECK_EQ_INT(mount_read(f.m, h, 0, held, sizeof held, &nh), 0);
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
    CHECK_EQ_INT(mount_read(f.m, h, 0, got, sizeof got, &g), 0);
    CHECK(g == nh && !memcmp(got, held, nh));
    tdbm_release(f.m, h);
    tdbm_forget(f.m, e2.ino, 1);
    tdbm_forget(f.m, dir, 1);
    fx_close(&f);
}

int main(void)
{
    RUN_CORPUS(test_slices_dropped);
    RUN_CORPUS(test_owner_read_only);
    RUN_CORPUS(test_owner_writable);
    RUN_CORPUS(test_fragments_exdev);
    RUN_CORPUS(test_inodes);
    return unit_done();
}
