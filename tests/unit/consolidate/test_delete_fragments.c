/* test_delete_fragments.c: one fragment removed (tdb_fragment_delete, in
 * format/consolidate/delete_fragments.c) as TileDB's delete_fragments_list
 * does: the array then shows exactly what it shows without that fragment
 * (the corpus's views of the same array opened at a time range that
 * leaves the fragment out); a commit a .con names is ignored by an .ign
 * first; a kill at any step leaves the array readable, with or without
 * the fragment, and a second call finishes the work. */
#include "../unit.h"
#include "../support.h"

#include "tiledb_format_write.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define F1 "__1_1_367943aa735472cd535279568caf50a7_22"
#define F3 "__3_3_10b742418e150345ee6e504e8ec30706_22"

/* Files of folder dir of io whose names end in suffix. */
static size_t count_files(const struct tdb_io *io, const char *dir,
                          const char *suffix)
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    size_t count = 0;
    if (tdb_io_names(io, dir, &n, &err))
        return 0;
    for (size_t i = 0; i < n.n; i++) {
        size_t l = strlen(n.v[i]), sl = strlen(suffix);
        count += l >= sl && !strcmp(n.v[i] + l - sl, suffix);
    }
    tdb_names_free(&n);
    return count;
}

/* ----------------------------------------------- views against expected */

static const char *exp_root;
static struct tdb_fs *exp_fs;
static int exp_bad, exp_frags;

/* Each expected file but the metadata (the cases opened at an earlier time
 * show the metadata of that time; deleting a fragment keeps the array's). */
static int exp_one(const char *path, const struct stat *st, int kind,
                   struct FTW *ftw)
{
    (void)st;
    const char *rel = path + strlen(exp_root) + 1;
    if (kind == FTW_D && ftw->level == 2 &&
        !strncmp(rel, "__fragments/", 12))
        exp_frags++;
    if (kind != FTW_F || !strncmp(rel, "__meta/", 7))
        return 0;
    size_t n;
    uint64_t m;
    char *want = unit_slurp(path, &n);
    uint8_t *got = unit_fs_file(exp_fs, rel, &m);
    if (!want || !got || !unit_same_bytes(rel, got, m, (uint8_t *)want, n))
        exp_bad++;
    free(want);
    free(got);
    return 0;
}

/* Entries of folder __fragments of fs. */
static int fs_frags(struct tdb_fs *fs)
{
    uint64_t dir, child;
    const char *nm;
    int n = 0;
    if (tdb_fs_lookup(fs, TDB_ROOT_INO, "__fragments", &dir, NULL))
        return -1;
    while (tdb_fs_readdir(fs, dir, (uint64_t)n, &nm, &child, NULL) == 0)
        n++;
    return n;
}

/* The array in io, opened over every timestamp, shows what case `name`
 * expects (its metadata aside), and as many fragments. */
static bool views_as(const char *name, const struct tdb_io *io,
                     const uint8_t *key)
{
    char root[4096];
    struct tdb_open_options o;
    struct tdb_error err = {0};
    tdb_open_options_init(&o);
    o.key = key;
    snprintf(root, sizeof root, "%s/%s/expected", unit_corpus(), name);
    exp_root = root;
    exp_bad = exp_frags = 0;
    exp_fs = NULL;
    if (tdb_fs_open(&exp_fs, io, &o, &err)) {
        fprintf(stderr, "  %s: %s\n", name, err.msg);
        return false;
    }
    nftw(root, exp_one, 16, FTW_PHYS);
    int frags = fs_frags(exp_fs);
    tdb_fs_close(exp_fs);
    if (frags != exp_frags)
        fprintf(stderr, "  %s: %d fragments shown, %d expected\n", name,
                frags, exp_frags);
    return exp_bad == 0 && frags == exp_frags;
}

/* The fragments the array in io shows, or -1 when it does not open. */
static int shown_frags(const struct tdb_io *io)
{
    struct tdb_open_options o;
    struct tdb_error err = {0};
    struct tdb_fs *fs = NULL;
    tdb_open_options_init(&o);
    if (tdb_fs_open(&fs, io, &o, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    int n = fs_frags(fs);
    tdb_fs_close(fs);
    return n;
}

/* ------------------------------------------------------------- deletes */

/* The newest fragment of the time_travel array deleted: the array is the
 * one opened at timestamp 2; the oldest: the one opened at 2:3.  Its
 * commit and folder are gone, and a second delete finds nothing. */
static void test_newest_and_oldest(void)
{
    static const struct {
        const char *frag, *as;
    } cases[] = {{F3, "time_travel_t2"}, {F1, "time_travel_t2_3"}};
    for (size_t i = 0; i < 2; i++) {
        struct tdb_io io;
        struct tdb_cons_result r;
        struct tdb_error err = {0};
        char *dir, wrt[128];
        if (!unit_copy_case("time_travel_t3", &dir, &io))
            return;
        CHECK(views_as("time_travel_t3", &io, NULL));
        int rc = tdb_fragment_delete(&io, cases[i].frag, NULL, &r, &err);
        if (rc)
            fprintf(stderr, "  %s\n", err.msg);
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(r.name[0], 0);          /* no .con: no .ign */
        CHECK_EQ_INT(r.removed, 6);          /* .wrt, 4 files, folder */
        snprintf(wrt, sizeof wrt, "__commits/%s.wrt", cases[i].frag);
        CHECK(!tdb_io_exists(&io, wrt));
        snprintf(wrt, sizeof wrt, "__fragments/%s", cases[i].frag);
        CHECK(!tdb_io_exists(&io, wrt));
        CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), 2);
        CHECK(views_as(cases[i].as, &io, NULL));
        CHECK_EQ_INT(tdb_fragment_delete(&io, cases[i].frag, NULL, &r, &err),
                     TDB_E_NOENT);
        unit_drop_case(dir, &io);
    }
}

/* A commit named in a .con (before and after the vacuum removed its .wrt):
 * an .ign naming it, relative to the array, under a name of its times and
 * version 22; the fragment is gone for readers. */
static void test_in_con(void)
{
    for (int vac = 0; vac < 2; vac++) {
        struct tdb_io io;
        struct tdb_cons_result r;
        struct tdb_error err = {0};
        char *dir;
        if (!unit_copy_case("time_travel_t3", &dir, &io))
            return;
        CHECK_EQ_INT(tdb_consolidate_commits(&io, NULL, &r, &err), 0);
        if (vac)
            CHECK_EQ_INT(tdb_vacuum_commits(&io, &r, &err), 0);
        CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), vac ? 0 : 3);
        CHECK_EQ_INT(tdb_fragment_delete(&io, F3, NULL, &r, &err), 0);
        CHECK_EQ_INT(count_files(&io, "__commits", ".ign"), 1);
        CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), vac ? 0 : 2);
        CHECK(!strncmp(r.name, "__commits/__3_3_", 16));
        size_t nl = strlen(r.name);
        CHECK(nl > 7 && !strcmp(r.name + nl - 7, "_22.ign"));
        size_t n;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, r.name);
        char *ign = unit_slurp(path, &n);
        CHECK(ign && n == strlen("__commits/" F3 ".wrt\n") &&
              !memcmp(ign, "__commits/" F3 ".wrt\n", n));
        free(ign);
        CHECK(views_as("time_travel_t2", &io, NULL));
        /* and the commits consolidated again after it: still gone */
        CHECK_EQ_INT(tdb_consolidate_commits(&io, NULL, &r, &err), 0);
        CHECK_EQ_INT(tdb_vacuum_commits(&io, &r, &err), 0);
        CHECK(views_as("time_travel_t2", &io, NULL));
        unit_drop_case(dir, &io);
    }
}

/* The commit alone (tdb_fragment_uncommit): a tree opened before reads
 * the fragment's cells still, one opened after does not show it; the
 * folder goes with tdb_fragment_delete, which then finds nothing. */
static void test_uncommit(void)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    struct tdb_open_options o;
    struct tdb_fs *before = NULL;
    char *dir, path[4096];
    if (!unit_copy_case("time_travel_t3", &dir, &io))
        return;
    tdb_open_options_init(&o);
    CHECK_EQ_INT(tdb_fs_open(&before, &io, &o, &err), 0);
    CHECK_EQ_INT(tdb_fragment_uncommit(&io, F3, NULL, &r, &err), 0);
    CHECK_EQ_INT(r.removed, 1);
    CHECK(tdb_io_isdir(&io, "__fragments/" F3));
    CHECK(views_as("time_travel_t2", &io, NULL));
    CHECK_EQ_INT(tdb_fragment_uncommit(&io, F3, NULL, &r, &err), TDB_E_NOENT);
    if (before) {
        static const char *const files[] = {"a", "s", "__fragments/" F3 "/a"};
        for (size_t i = 0; i < 3; i++) {
            size_t n;
            uint64_t m;
            snprintf(path, sizeof path, "%s/time_travel_t3/expected/%s",
                     unit_corpus(), files[i]);
            char *want = unit_slurp(path, &n);
            uint8_t *got = unit_fs_file(before, files[i], &m);
            CHECK(want && got &&
                  unit_same_bytes(files[i], got, m, (uint8_t *)want, n));
            free(want);
            free(got);
        }
        tdb_fs_close(before);
    }
    CHECK_EQ_INT(tdb_fragment_delete(&io, F3, NULL, &r, &err), 0);
    CHECK_EQ_INT(r.removed, 5);
    CHECK(!tdb_io_exists(&io, "__fragments/" F3));
    CHECK_EQ_INT(tdb_fragment_delete(&io, F3, NULL, &r, &err), TDB_E_NOENT);
    CHECK(views_as("time_travel_t2", &io, NULL));
    unit_drop_case(dir, &io);
}

static const uint8_t case_key[32] = "0123456789abcdeF0123456789abcdeF";

/* Refusals: a name that is no fragment's, storage without writes, an
 * encrypted array without its key; nothing is removed. */
static void test_refusals(void)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    char *dir;
    if (!unit_copy_case("time_travel_t3", &dir, &io))
        return;
    CHECK_EQ_INT(tdb_fragment_delete(&io, "__4_4_10b742418e150345ee6e504e8"
                                     "ec30706_22", NULL, &r, &err),
                 TDB_E_NOENT);
    CHECK(strstr(err.msg, "__4_4_") != NULL);
    CHECK_EQ_INT(tdb_fragment_delete(&io, "__fragments/" F3, NULL, &r, &err),
                 TDB_E_INVAL);
    CHECK_EQ_INT(tdb_fragment_delete(&io, "a", NULL, &r, &err), TDB_E_INVAL);
    struct tdb_io_ops ro = *io.ops;
    ro.remove = NULL;
    struct tdb_io rio = {&ro, io.ctx};
    CHECK_EQ_INT(tdb_fragment_delete(&rio, F3, NULL, &r, &err), TDB_E_ROFS);
    CHECK(views_as("time_travel_t3", &io, NULL));
    unit_drop_case(dir, &io);

    if (!unit_copy_case("encrypted_aes256gcm", &dir, &io))
        return;
    struct tdb_names n = {0};
    CHECK_EQ_INT(tdb_io_names(&io, "__fragments", &n, &err), 0);
    CHECK(n.n > 0);
    if (n.n > 0) {
        char *frag = strdup(n.v[0]);
        CHECK_EQ_INT(tdb_fragment_delete(&io, frag, NULL, &r, &err),
                     TDB_E_NOKEY);
        CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), n.n);
        CHECK_EQ_INT(tdb_fragment_delete(&io, frag, case_key, &r, &err), 0);
        CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), n.n - 1);
        free(frag);
    }
    tdb_names_free(&n);
    unit_drop_case(dir, &io);
}

/* Arrays below format 12: a fragment of the array's folder committed by
 * NAME.ok loses the .ok, then its folder; one of format 1, committed by
 * its own metadata, is refused (TDB_E_UNSUPPORTED) and kept whole. */
static void test_legacy(void)
{
    static const char ok_frag[] =
        "__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10";
    static const char v1_frag[] =
        "__5dc2cc9cce204a189f825fd4919d0c55_1541540586869";
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    char *dir, path[256];
    if (!unit_copy_case("legacy_zero_var_chunks_v10", &dir, &io))
        return;
    CHECK_EQ_INT(shown_frags(&io), 1);
    CHECK_EQ_INT(tdb_fragment_delete(&io, ok_frag, NULL, &r, &err), 0);
    snprintf(path, sizeof path, "%s.ok", ok_frag);
    CHECK(!tdb_io_exists(&io, path));
    CHECK(!tdb_io_exists(&io, ok_frag));
    CHECK_EQ_INT(shown_frags(&io), 0);
    CHECK_EQ_INT(tdb_fragment_delete(&io, ok_frag, NULL, &r, &err),
                 TDB_E_NOENT);
    unit_drop_case(dir, &io);

    if (!unit_copy_case("legacy_non_split_coords_v1_4_0", &dir, &io))
        return;
    CHECK_EQ_INT(tdb_fragment_delete(&io, v1_frag, NULL, &r, &err),
                 TDB_E_UNSUPPORTED);
    CHECK(strstr(err.msg, v1_frag) != NULL);
    CHECK_EQ_INT(r.removed, 0);
    CHECK(views_as("legacy_non_split_coords_v1_4_0", &io, NULL));
    unit_drop_case(dir, &io);
}

/* ------------------------------------------------------------ kills */

/* A kill at every mutating call of a delete of a fragment whose commit is
 * in a .con (the .ign's write, rename and sync, the .wrt, each file, the
 * folder): the array shows all three fragments or the two others, never
 * a broken one; a second call then succeeds and leaves the two, and no
 * temporary file. */
/* The number of io calls a whole delete of F3 makes on a fresh copy of
 * time_travel_t3 whose commits are consolidated. */
static uint64_t count_delete_calls(void)
{
    struct tdb_io_fault all = {0};
    struct tdb_io io2, counting;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    char *dir2;
    uint64_t total = 0;
    if (unit_copy_case("time_travel_t3", &dir2, &io2)) {
        CHECK_EQ_INT(tdb_consolidate_commits(&io2, NULL, &r, &err), 0);
        CHECK_EQ_INT(tdb_io_faulty(&counting, &io2, &all), 0);
        CHECK_EQ_INT(tdb_fragment_delete(&counting, F3, NULL, &r, &err), 0);
        total = all.count;
        tdb_io_free(&counting);
        unit_drop_case(dir2, &io2);
    }
    CHECK(total >= 6);
    return total;
}

/* After a delete killed at call k of `total`: the array shows all three
 * fragments (counted in *with) or two (*without), never a broken state;
 * the delete run again completes and leaves no temporary file. */
static void check_after_kill(struct tdb_io *io, uint64_t k, uint64_t total,
                             uint64_t *with, uint64_t *without)
{
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    int shown = shown_frags(io);
    bool all3 = shown == 3 && views_as("time_travel_t3", io, NULL);
    bool two = shown == 2 && views_as("time_travel_t2", io, NULL);
    if (!all3 && !two) {
        fprintf(stderr, "  killed at call %llu: a broken array\n",
                (unsigned long long)k);
        CHECK(false);
    }
    *with += all3;
    *without += two;
    int rc = tdb_fragment_delete(io, F3, NULL, &r, &err);
    if (rc && k <= total)
        fprintf(stderr, "  killed at call %llu, then: %s\n",
                (unsigned long long)k, err.msg);
    CHECK_EQ_INT(rc, k > total ? TDB_E_NOENT : 0);
    CHECK(views_as("time_travel_t2", io, NULL));
    CHECK(!tdb_io_exists(io, "__fragments/" F3));
    CHECK_EQ_INT(count_files(io, "", ".tmp") +
                     count_files(io, "__commits", ".tmp"),
                 0);
}

static void test_kills(void)
{
    uint64_t total = 0, with = 0, without = 0;
    for (uint64_t k = 1; k == 1 || k <= total + 1; k++) {
        struct tdb_io io, faulty;
        struct tdb_io_fault f = {.fail_at = k, .crash = true};
        struct tdb_cons_result r;
        struct tdb_error err = {0};
        char *dir;
        if (!unit_copy_case("time_travel_t3", &dir, &io))
            return;
        CHECK_EQ_INT(tdb_consolidate_commits(&io, NULL, &r, &err), 0);
        CHECK_EQ_INT(tdb_io_faulty(&faulty, &io, &f), 0);
        int rc = tdb_fragment_delete(&faulty, F3, NULL, &r, &err);
        tdb_io_free(&faulty);
        if (k == 1)
            total = count_delete_calls(); /* of a whole delete, first */
        CHECK(k > total ? rc == 0 : rc != 0);
        check_after_kill(&io, k, total, &with, &without);
        unit_drop_case(dir, &io);
        if (unit_cur_failed)
            return;
    }
    /* both outcomes happen: before the commit goes, and after */
    CHECK(with >= 3 && without >= 3);
    printf("   killed at each of %llu calls (%llu left the fragment, %llu "
           "not), then run again\n", (unsigned long long)total,
           (unsigned long long)with, (unsigned long long)without);
}

int main(void)
{
    RUN_CORPUS(test_newest_and_oldest);
    RUN_CORPUS(test_in_con);
    RUN_CORPUS(test_uncommit);
    RUN_CORPUS(test_refusals);
    RUN_CORPUS(test_legacy);
    RUN_CORPUS(test_kills);
    return unit_done();
}
