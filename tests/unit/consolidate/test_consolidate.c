/* test_consolidate.c: consolidation and vacuum of fragment metadata and
 * commits (format/consolidate/): what they write is what TileDB 2.29
 * wrote for the corpus's consolidated cases, byte for byte; every corpus
 * array reads the same after them; a kill at any step leaves the array
 * readable as before and a run after it finishes the work. */
#include "../unit.h"
#include "../support.h"

#include "core/names.h"
#include "model/generic_tile.h"
#include "tiledb_format_write.h"

#include <dirent.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The name of the one file of folder `dir` of io ending in `suffix`
 * (NULL when there is not exactly one). */
static char *only_file(const struct tdb_io *io, const char *dir,
                       const char *suffix)
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    char *found = NULL;
    int count = 0;
    CHECK_EQ_INT(tdb_io_names(io, dir, &n, &err), 0);
    for (size_t i = 0; i < n.n; i++) {
        size_t l = strlen(n.v[i]), sl = strlen(suffix);
        if (l >= sl && !strcmp(n.v[i] + l - sl, suffix)) {
            count++;
            free(found);
            found = tdb_path_join(dir, n.v[i]);
        }
    }
    tdb_names_free(&n);
    if (count != 1) {
        free(found);
        return NULL;
    }
    return found;
}

/* Files of folder dir of io whose names end in suffix. */
static size_t count_files(const struct tdb_io *io, const char *dir,
                          const char *suffix)
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    size_t count = 0;
    CHECK_EQ_INT(tdb_io_names(io, dir, &n, &err), 0);
    for (size_t i = 0; i < n.n; i++) {
        size_t l = strlen(n.v[i]), sl = strlen(suffix);
        count += l >= sl && !strcmp(n.v[i] + l - sl, suffix);
    }
    tdb_names_free(&n);
    return count;
}

static uint8_t *read_whole(const struct tdb_io *io, const char *path,
                           uint64_t *size)
{
    struct tdb_error err = {0};
    uint8_t *b = NULL;
    *size = 0;
    if (tdb_io_size(io, path, size, &err) == 0 &&
        (b = malloc(*size ? (size_t)*size : 1)) != NULL &&
        tdb_io_read(io, path, 0, b, (size_t)*size, &err) != 0) {
        free(b);
        b = NULL;
    }
    CHECK(b != NULL);
    return b;
}

/* ---------------------------------------------------- as TileDB wrote */

/* consolidated_commits holds the .con TileDB wrote for three fragments
 * (their .wrt files vacuumed).  With the .wrt files back and the .con
 * gone, the commits consolidation writes the same bytes, under a name of
 * the same times and version; the vacuum then removes the three .wrt
 * files and nothing else, and a second consolidation has nothing to do. */
static void test_commits_as_tiledb(void)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    char *dir, *con;
    uint64_t n, m;
    if (!unit_copy_case("consolidated_commits", &dir, &io))
        return;
    con = only_file(&io, "__commits", ".con");
    CHECK(con != NULL);
    uint8_t *theirs = con ? read_whole(&io, con, &n) : NULL;
    if (!theirs) {
        free(con);
        unit_drop_case(dir, &io);
        return;
    }
    /* the .wrt files the .con names, then no .con */
    for (char *p = (char *)theirs, *nl; (nl = memchr(p, '\n', theirs + n -
                                                     (uint8_t *)p));
         p = nl + 1) {
        char wrt[256];
        snprintf(wrt, sizeof wrt, "%.*s", (int)(nl - p), p);
        unit_put(&io, wrt, "", 0);
    }
    CHECK_EQ_INT(io.ops->remove(io.ctx, con), 0);
    CHECK_EQ_INT(tdb_consolidate_commits(&io, NULL, &r, &err), 0);
    CHECK_EQ_INT(r.merged, 3);
    CHECK(!strncmp(r.name, "__commits/__1_3_", 16));
    CHECK(strlen(r.name) == strlen(con) &&
          !strcmp(r.name + strlen(r.name) - 7, "_22.con"));
    uint8_t *ours = read_whole(&io, r.name, &m);
    CHECK(ours && unit_same_bytes("the .con", ours, m, theirs, n));
    free(ours);
    CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), 3);
    CHECK_EQ_INT(tdb_vacuum_commits(&io, &r, &err), 0);
    CHECK_EQ_INT(r.removed, 3);
    CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), 0);
    CHECK_EQ_INT(count_files(&io, "__commits", ".con"), 1);
    CHECK_EQ_INT(tdb_consolidate_commits(&io, NULL, &r, &err), 0);
    CHECK_EQ_INT(r.name[0], 0);
    free(theirs);
    free(con);
    unit_drop_case(dir, &io);
}

/* consolidated_fragment_meta holds the .meta TileDB wrote for its three
 * fragments.  Without it, the fragment metadata consolidation writes a
 * file of the same times whose contents (the generic tile decoded) are
 * TileDB's, byte for byte. */
static void test_fragment_meta_as_tiledb(void)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    struct tdb_buf theirs = {0}, ours = {0};
    uint64_t next;
    char *dir, *meta;
    if (!unit_copy_case("consolidated_fragment_meta", &dir, &io))
        return;
    meta = only_file(&io, "__fragment_meta", ".meta");
    CHECK(meta != NULL);
    if (meta) {
        CHECK_EQ_INT(tdb_generic_tile_read(&(struct tdb_gt_file){&io, meta, 0},
                                           NULL, &theirs, &next, &err), 0);
        CHECK_EQ_INT(io.ops->remove(io.ctx, meta), 0);
    }
    CHECK_EQ_INT(tdb_consolidate_fragment_meta(&io, NULL, &r, &err), 0);
    CHECK_EQ_INT(r.merged, 3);
    CHECK(!strncmp(r.name, "__fragment_meta/__1_3_", 22));
    CHECK_EQ_INT(tdb_generic_tile_read(&(struct tdb_gt_file){&io, r.name, 0},
                                       NULL, &ours, &next, &err), 0);
    CHECK(theirs.len > 100 && unit_same_bytes("the .meta's contents",
                                              ours.data, ours.len,
                                              theirs.data, theirs.len));
    tdb_buf_free(&theirs);
    tdb_buf_free(&ours);
    free(meta);
    unit_drop_case(dir, &io);
}

/* consolidated_array_meta holds the file TileDB wrote when it merged the
 * metadata files of times 1, 2 and 3 (an overwrite, an addition and a
 * deletion), with its .vac, and a later file of time 4.  Without the
 * merged file, its .vac and the later file, the array metadata
 * consolidation writes TileDB's contents under a name of the same times,
 * and the same .vac; the vacuum then leaves the merged file alone. */
static void test_array_meta_as_tiledb(void)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    struct tdb_buf theirs = {0}, ours = {0};
    uint64_t next, nvac, mvac;
    char *dir, *vac, tpath[300];
    if (!unit_copy_case("consolidated_array_meta", &dir, &io))
        return;
    vac = only_file(&io, "__meta", ".vac");
    CHECK(vac != NULL);
    uint8_t *their_vac = vac ? read_whole(&io, vac, &nvac) : NULL;
    if (!their_vac) {
        free(vac);
        unit_drop_case(dir, &io);
        return;
    }
    snprintf(tpath, sizeof tpath, "%.*s", (int)(strlen(vac) - 4), vac);
    CHECK_EQ_INT(tdb_generic_tile_read(&(struct tdb_gt_file){&io, tpath, 0},
                                       NULL, &theirs, &next, &err), 0);
    CHECK_EQ_INT(io.ops->remove(io.ctx, tpath), 0);
    CHECK_EQ_INT(io.ops->remove(io.ctx, vac), 0);
    char *later = only_file(&io, "__meta", "");
    /* the files left: times 1, 2, 3 and 4; 4 goes */
    CHECK_EQ_INT(count_files(&io, "__meta", ""), 4);
    CHECK_EQ_INT(io.ops->remove(io.ctx, "__meta/__4_4_69e94e55c603bfdde7e58e33e"
                                "9feab76"), 0);
    free(later);
    CHECK_EQ_INT(tdb_consolidate_array_meta(&io, NULL, &r, &err), 0);
    CHECK_EQ_INT(r.merged, 3);
    CHECK(!strncmp(r.name, "__meta/__1_3_", 13) &&
          strlen(r.name) == strlen(tpath));
    CHECK_EQ_INT(tdb_generic_tile_read(&(struct tdb_gt_file){&io, r.name, 0},
                                       NULL, &ours, &next, &err), 0);
    CHECK(theirs.len > 20 && unit_same_bytes("the merged metadata", ours.data,
                                             ours.len, theirs.data,
                                             theirs.len));
    snprintf(tpath, sizeof tpath, "%s.vac", r.name);
    uint8_t *our_vac = read_whole(&io, tpath, &mvac);
    CHECK(our_vac && unit_same_bytes("the .vac", our_vac, mvac, their_vac,
                                     nvac));
    CHECK_EQ_INT(tdb_vacuum_array_meta(&io, &r, &err), 0);
    CHECK_EQ_INT(r.removed, 4);
    CHECK_EQ_INT(count_files(&io, "__meta", ""), 1);
    CHECK_EQ_INT(tdb_consolidate_array_meta(&io, NULL, &r, &err), 0);
    CHECK_EQ_INT(r.name[0], 0);
    free(our_vac);
    free(their_vac);
    free(vac);
    tdb_buf_free(&theirs);
    tdb_buf_free(&ours);
    unit_drop_case(dir, &io);
}

/* ------------------------------------------------------ refusals */

/* Commits are consolidated from format 12 on (TileDB's rule); an
 * encrypted array needs its key; neither changes the array. */
static void test_refusals(void)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    char *dir;
    if (unit_copy_case("legacy_zero_var_chunks_v10", &dir, &io)) {
        CHECK_EQ_INT(tdb_consolidate_commits(&io, NULL, &r, &err),
                     TDB_E_UNSUPPORTED);
        CHECK(strstr(err.msg, "from format version 12 on; this array's is "
                              "10") != NULL);
        CHECK_EQ_INT(r.name[0], 0);
        unit_drop_case(dir, &io);
    }
    if (unit_copy_case("encrypted_aes256gcm", &dir, &io)) {
        CHECK(tdb_consolidate_fragment_meta(&io, NULL, &r, &err) ==
              TDB_E_NOKEY);
        CHECK(tdb_consolidate_commits(&io, NULL, &r, &err) == TDB_E_NOKEY);
        CHECK_EQ_INT(count_files(&io, "__fragment_meta", ".meta"), 0);
        CHECK_EQ_INT(count_files(&io, "__commits", ".con"), 0);
        unit_drop_case(dir, &io);
    }
}

/* ----------------------------------------------------- same views */

static bool exp_skip_frags;     /* fragments consolidated: their own files
                                 * are gone */
static int exp_bad;             /* frag_views' count */

/* The tree of the array in io (opened with the case's key, if any) shows
 * every expected file of case `name`.  @return true when it does. */
static bool views_exact(const char *name, const struct tdb_io *io,
                        const uint8_t *key)
{
    char root[4096];
    struct tdb_open_options o;
    struct tdb_error err = {0};
    tdb_open_options_init(&o);
    o.key = key;
    /* the case's open range (mount_options "timestamp=T0:T1") */
    snprintf(root, sizeof root, "%s/%s/case.json", unit_corpus(), name);
    char *cj = unit_slurp(root, NULL);
    const char *mo = cj ? strstr(cj, "\"mount_options\"") : NULL;
    unit_timestamp_range(mo ? mo : "", &o.ts_start, &o.ts_end);
    free(cj);
    snprintf(root, sizeof root, "%s/%s/expected", unit_corpus(), name);
    struct tdb_fs *fs = NULL;
    if (tdb_fs_open(&fs, io, &o, &err)) {
        fprintf(stderr, "  %s: %s\n", name, err.msg);
        return false;
    }
    int bad = unit_expected_diff(root, fs,
                                 exp_skip_frags ? "__fragments/" : NULL);
    tdb_fs_close(fs);
    return bad == 0;
}

/* Consolidates every mode on io, and vacuums each when `vacuum`;
 * @return the first error. */
static int cons_modes(const struct tdb_io *io, const uint8_t *key,
                      bool vacuum, struct tdb_error *err)
{
    struct tdb_cons_result r;
    struct tdb_cons_options o = {.key = key, .threads = 2};
    int rc = tdb_consolidate_fragments(io, &o, &r, err);
    if (!rc && vacuum)
        rc = tdb_vacuum_fragments(io, key, &r, err);
    if (!rc)
        rc = tdb_consolidate_fragment_meta(io, key, &r, err);
    if (!rc && vacuum)
        rc = tdb_vacuum_fragment_meta(io, &r, err);
    if (!rc)
        rc = tdb_consolidate_commits(io, key, &r, err);
    if (!rc && vacuum)
        rc = tdb_vacuum_commits(io, &r, err);
    if (!rc)
        rc = tdb_consolidate_array_meta(io, key, &r, err);
    if (!rc && vacuum)
        rc = tdb_vacuum_array_meta(io, &r, err);
    return rc;
}

static int cons_all(const struct tdb_io *io, const uint8_t *key,
                    struct tdb_error *err)
{
    return cons_modes(io, key, true, err);
}

static const uint8_t case_key[32] = "0123456789abcdeF0123456789abcdeF";

/* Cases of several fragments, deletes, time travel, vacuum files and an
 * encrypted array: after consolidation and vacuum, every view is the
 * corpus's.  A case opened at an earlier time (time_travel_t2) is
 * consolidated without vacuum: as with TileDB, a vacuum of merged
 * metadata removes what the array held before the merge's end.  (check_corpus.py over a consolidated copy of the whole corpus
 * is the same check for every case; README "Keeping an array healthy".) */
static void test_views_after(void)
{
    exp_skip_frags = true;
    static const char *const cases[] = {
        "dense_fragments_overlap", "sparse_delete", "sparse_dups",
        "consolidated_dense", "consolidated_sparse_vacuumed",
        "time_travel_t2", "encrypted_aes256gcm", "metadata_types",
        "consolidated_array_meta",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct tdb_io io;
        struct tdb_error err = {0};
        char *dir;
        bool enc = !strcmp(cases[i], "encrypted_aes256gcm");
        if (!unit_copy_case(cases[i], &dir, &io))
            continue;
        int rc = cons_modes(&io, enc ? case_key : NULL,
                            strcmp(cases[i], "time_travel_t2") != 0, &err);
        if (rc)
            fprintf(stderr, "  %s: %s\n", cases[i], err.msg);
        CHECK_EQ_INT(rc, 0);
        if (!views_exact(cases[i], &io, enc ? case_key : NULL)) {
            fprintf(stderr, "  %s: views differ after consolidation\n",
                    cases[i]);
            CHECK(false);
        }
        unit_drop_case(dir, &io);
    }
}

/* sparse_delete's delete commit goes into the .con with its condition:
 * the .del file is removed by the vacuum and the cells stay deleted. */
static void test_delete_in_con(void)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    char *dir;
    if (!unit_copy_case("sparse_delete", &dir, &io))
        return;
    size_t dels = count_files(&io, "__commits", ".del");
    CHECK(dels > 0);
    CHECK_EQ_INT(tdb_consolidate_commits(&io, NULL, &r, &err), 0);
    CHECK_EQ_INT(tdb_vacuum_commits(&io, &r, &err), 0);
    CHECK_EQ_INT(count_files(&io, "__commits", ".del"), 0);
    CHECK_EQ_INT(count_files(&io, "__commits", ".wrt"), 0);
    CHECK(views_exact("sparse_delete", &io, NULL));
    unit_drop_case(dir, &io);
}

/* ------------------------------------------------- fragments, alone */

/* Fragment folders of the array in io. */
static size_t count_dirs(const struct tdb_io *io, const char *dir)
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    size_t k = 0;
    if (tdb_io_names(io, dir, &n, &err))
        return 0;
    for (size_t i = 0; i < n.n; i++)
        k += n.is_dir[i];
    tdb_names_free(&n);
    return k;
}

/* A fragment's files of expected/ (__fragments/NAME/F: what TileDB read
 * opening the array at NAME's timestamps) against the view F of the
 * consolidated array opened at those timestamps: a sparse consolidation
 * keeps each cell's time, so every earlier view is still there. */
static int frag_root_len;
static struct tdb_fs *frag_fs;
static int frag_one(const char *path, const struct stat *st, int kind,
                    struct FTW *ftw)
{
    (void)st;
    if (kind != FTW_F || ftw->level != 1)
        return 0;
    const char *rel = path + frag_root_len + 1;
    const char *slash = strchr(rel, '/');
    size_t n;
    uint64_t m;
    char *want = unit_slurp(path, &n);
    uint8_t *got = slash ? unit_fs_file(frag_fs, slash + 1, &m) : NULL;
    if (!want || !got || !unit_same_bytes(rel, got, m, (uint8_t *)want, n))
        exp_bad++;
    free(want);
    free(got);
    return 0;
}

static bool case_is_sparse(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/case.json", unit_corpus(), name);
    char *cj = unit_slurp(path, NULL);
    bool sparse = cj && strstr(cj, "\"array_type\": \"sparse\"");
    free(cj);
    return sparse;
}

static void frag_views(const char *name, const struct tdb_io *io,
                       const uint8_t *key, size_t *checked)
{
    char root[4096];
    snprintf(root, sizeof root, "%s/%s/expected/__fragments", unit_corpus(),
             name);
    DIR *d = opendir(root);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        unsigned long long t1, t2;
        char sub[4400];
        if (sscanf(de->d_name, "__%llu_%llu_", &t1, &t2) != 2)
            continue;
        struct tdb_open_options o;
        struct tdb_error err = {0};
        tdb_open_options_init(&o);
        o.key = key;
        o.ts_start = t1;
        o.ts_end = t2;
        frag_fs = NULL;
        if (tdb_fs_open(&frag_fs, io, &o, &err)) {
            fprintf(stderr, "  %s: %s\n", name, err.msg);
            CHECK(false);
            continue;
        }
        snprintf(sub, sizeof sub, "%s/%s", root, de->d_name);
        frag_root_len = (int)strlen(root);
        exp_bad = 0;
        nftw(sub, frag_one, 16, FTW_PHYS);
        tdb_fs_close(frag_fs);
        if (exp_bad)
            fprintf(stderr, "  %s: the view at %llu:%llu differs\n", name, t1,
                    t2);
        CHECK_EQ_INT(exp_bad, 0);
        (*checked)++;
    }
    if (d)
        closedir(d);
}

/* Fragment consolidation and its vacuum leave as many fragments as
 * TileDB 2.29's own left of each case (tiledb_array_consolidate and
 * tiledb_array_vacuum, sm.consolidation.mode=fragments), the view as it
 * was, and for sparse arrays every fragment's view at its own time. */
/* Consolidates and vacuums corpus case `name`: `left` fragments remain
 * (as TileDB leaves), the merged name is marked as `mark` says, the
 * views are the same; earlier views of sparse fragments are counted in
 * *checked. */
static void consolidate_case(const char *name, size_t left, int mark,
                             size_t *checked)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    struct tdb_cons_result r;
    char *dir;
    bool enc = !strcmp(name, "encrypted_aes256gcm");
    const uint8_t *key = enc ? case_key : NULL;
    struct tdb_cons_options o = {.key = key};
    if (!unit_copy_case(name, &dir, &io))
        return;
    size_t before = count_dirs(&io, "__fragments");
    int rc = tdb_consolidate_fragments(&io, &o, &r, &err);
    if (rc)
        fprintf(stderr, "  %s: %s\n", name, err.msg);
    CHECK_EQ_INT(rc, 0);
    CHECK(left == 1 ? r.merged >= 2 && r.merged <= before : r.merged == 0);
    struct tdb_tsname ts;
    if (mark >= 0 && !rc) {
        CHECK_EQ_INT(tdb_tsname_parse(r.name, &ts), 0);
        if (tdb_tsname_marked(&ts) != (mark == 1))
            fprintf(stderr, "  %s: %s: marked %d\n", name,
                    r.name, !mark);
        CHECK_EQ_INT(tdb_tsname_marked(&ts), mark == 1);
    }
    CHECK_EQ_INT(tdb_vacuum_fragments(&io, key, &r, &err), 0);
    CHECK_EQ_INT(count_dirs(&io, "__fragments"), left);
    CHECK_EQ_INT(count_files(&io, "__commits", ".vac"), 0);
    CHECK_EQ_INT(count_files(&io, "", ".tmp"), 0);
    if (!views_exact(name, &io, key)) {
        fprintf(stderr, "  %s: views differ after consolidation\n",
                name);
        CHECK(false);
    }
    /* (schema_evolution_drop_attr: the merged fragment, as TileDB's,
     * has the newest schema's attributes only, not the dropped one
     * that its first fragment's view showed) */
    if (case_is_sparse(name) &&
        strcmp(name, "schema_evolution_drop_attr"))
        frag_views(name, &io, key, checked);
    unit_drop_case(dir, &io);
}

static void test_fragments_as_tiledb(void)
{
    /* mark: the merged fragment's name says its cells are distinct
     * (tdb_tsname_marked): 1 where no two fragments hold the same
     * coordinates, 0 where some do (and for duplicates allowed), -1 dense */
    static const struct {
        const char *name;
        size_t left;            /* what TileDB leaves */
        int mark;
    } cases[] = {
        {"dense_fragments_overlap", 1, -1}, {"consolidated_dense", 1, -1},
        {"dense_var_nullable", 1, -1}, {"dense_3d", 1, -1},
        {"dense_2d_tile_col_cell_row", 1, -1}, {"dense_huge_domain", 1, -1},
        {"schema_evolution_add_attr", 1, -1}, {"encrypted_aes256gcm", 1, -1},
        /* a current domain: TileDB expands no non-empty domain to whole
         * tiles, and these two fragments' box has more cells than they */
        {"dense_current_domain", 2, -1},
        {"sparse_delete", 1, 1}, {"sparse_dups", 1, 0},
        {"consolidated_sparse_vacuumed", 1, 0}, {"sparse_string_dim", 1, 0},
        {"sparse_hilbert", 1, 0}, {"sparse_float64_dims", 1, 0},
        {"sparse_mixed_dims", 1, 1}, {"schema_evolution_drop_attr", 1, 0},
        {"filters_schema_lists", 1, 1}, {"sparse_col_major", 1, 1},
        {"sparse_int64_2d", 1, 0}, {"sparse_datetime_int8", 1, 1},
    };
    size_t checked = 0;
    exp_skip_frags = true;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        consolidate_case(cases[i].name, cases[i].left, cases[i].mark,
                         &checked);
    CHECK(checked >= 20);
    printf("   %zu cases, %zu earlier views of sparse fragments\n",
           sizeof cases / sizeof *cases, checked);
}

/* ---------------------------------------------- failed consolidations */

/* Every folder and file of the array at io, one a line, with a hash of
 * each file's bytes (unit_snapshot), NUL-terminated.  Caller frees. */
static char *tree_snapshot(const struct tdb_io *io)
{
    struct tdb_buf b = {0};
    unit_snapshot(io, "", true, &b);
    CHECK(b.len > 0); /* an array has its __schema at least */
    CHECK_EQ_INT(tdb_buf_append(&b, "", 1), 0);
    return (char *)b.data;
}

/* Says on stderr the lines of snapshot a that b lacks, each after
 * `sign`. */
static void snap_missing(const char *a, const char *b, char sign)
{
    for (const char *p = a, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
        size_t l = (size_t)(nl - p) + 1;
        const char *q = b;
        while ((q = strstr(q, "\n")) && strncmp(q + 1, p, l))
            q++;
        if (!q && strncmp(b, p, l))
            fprintf(stderr, "  %c %.*s", sign, (int)l, p);
    }
}

/* The array at io is what `before` shows; otherwise the files gone (-)
 * and come or changed (+) are said. */
static bool tree_same(const struct tdb_io *io, const char *before)
{
    char *now = tree_snapshot(io);
    bool same = now && before && !strcmp(now, before);
    if (!same && now && before) {
        fprintf(stderr, "  the array's files differ:\n");
        snap_missing(before, now, '-');
        snap_missing(now, before, '+');
    }
    free(now);
    return same;
}

/* The path of file `file` of the array's newest fragment (the last of
 * __fragments, sorted), into out. */
static bool newest_file(const struct tdb_io *io, const char *file, char *out,
                        size_t cap)
{
    struct tdb_names n = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_names(io, "__fragments", &n, &err), 0);
    bool ok = n.n >= 2;
    CHECK(ok);
    if (ok)
        snprintf(out, cap, "__fragments/%s/%s", n.v[n.n - 1], file);
    tdb_names_free(&n);
    return ok;
}

/* After a failed fragment consolidation of case `name` (at io):
 * err says `want` (and the code is `rc`, wanted `code`), nothing was
 * merged, the array's files are `before`'s and it reads as the corpus
 * says, its fragments still there. */
static void as_before(const char *name, const struct tdb_io *io,
                      const char *before, int rc,
                      int code, const struct tdb_cons_result *r,
                      const struct tdb_error *err, const char *want)
{
    CHECK_EQ_INT(rc, code);
    if (!strstr(err->msg, want))
        fprintf(stderr, "  %s: \"%s\" does not say \"%s\"\n", name,
                err->msg, want);
    CHECK(strstr(err->msg, want) != NULL);
    CHECK_EQ_INT(r->name[0], 0);
    CHECK_EQ_INT(r->merged, 0);
    CHECK(tree_same(io, before));
    exp_skip_frags = false;
    CHECK(views_exact(name, io, NULL));
}

/* A consolidation of the `nfrags` fragments of case `name` through io
 * (the array's own backend: plain) succeeds, and after the vacuum the
 * array has one fragment and reads as the corpus says. */
static void retry_works(const char *name, const struct tdb_io *io,
                        const struct tdb_io *plain, size_t nfrags)
{
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    struct tdb_cons_options o = {.threads = 2};
    int rc = tdb_consolidate_fragments(io, &o, &r, &err);
    if (rc)
        fprintf(stderr, "  %s: retry: %s\n", name, err.msg);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(r.merged, nfrags);
    CHECK_EQ_INT(count_dirs(plain, "__fragments"), nfrags + 1);
    CHECK_EQ_INT(count_files(plain, "__commits", ".vac"), 1);
    CHECK_EQ_INT(tdb_vacuum_fragments(plain, NULL, &r, &err), 0);
    CHECK_EQ_INT(count_dirs(plain, "__fragments"), 1);
    exp_skip_frags = true;
    CHECK(views_exact(name, plain, NULL));
}

/* A consolidation of case `name` over a backend that refuses `fails`
 * reads of the newest fragment's `file` (UINT64_MAX: all): it says
 * TDB_E_IO and names that file, `field` and its tile (not the writer's
 * word for the failed read), and leaves every file of the array as it
 * was (also when the writer had written some of the new fragment: then
 * `undone` says so); the array reads as before.  With the reads passing
 * again, a retry merges its `nfrags` fragments. */
struct refusal {
    const char *name, *file, *field;
    uint64_t fails;
    size_t nfrags;
    bool undone;
};

static void refused_reads(const struct refusal *t)
{
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    struct tdb_cons_options o = {.threads = 2};
    char *dir, want[400];
    if (!unit_copy_case(t->name, &dir, &io))
        return;
    char bad_file[300];
    struct tdb_io_fault f = {.read_path = bad_file, .read_fails = t->fails};
    struct tdb_io bad;
    CHECK_EQ_INT(tdb_io_faulty(&bad, &io, &f), 0);
    char *before = tree_snapshot(&io);
    if (newest_file(&io, t->file, bad_file, sizeof bad_file)) {
        int rc = tdb_consolidate_fragments(&bad, &o, &r, &err);
        snprintf(want, sizeof want, "%s: field '%s' tile ", bad_file,
                 t->field);
        as_before(t->name, &io, before, rc, TDB_E_IO, &r, &err, want);
        uint64_t refused = f.read_failed;
        CHECK(t->fails == UINT64_MAX ? refused > 0 : refused == t->fails);
        if (t->undone) {
            CHECK(f.writes > 0); /* the new fragment's files, removed */
            printf("   %llu writes of the new fragment before the failure, "
                   "undone\n", (unsigned long long)f.writes);
        }
        f.read_fails = 0; /* the cause removed (or the one refusal spent) */
        retry_works(t->name, &bad, &io, t->nfrags);
        CHECK_EQ_INT(f.read_failed, refused);
    }
    tdb_io_free(&bad);
    free(before);
    unit_drop_case(dir, &io);
}

/* Every read of dense_fragments_overlap's newest a3.tdb (the last field)
 * refused, after the writer wrote some of the new fragment; then only
 * the first read of sparse_dups' newest a0.tdb, the same call on the
 * same backend merging after it. */
static void test_fragments_read_fails(void)
{
    static const struct refusal t[] = {
        {"dense_fragments_overlap", "a3.tdb", "d", UINT64_MAX, 4, true},
        {"sparse_dups", "a0.tdb", "a", 1, 2, false}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        refused_reads(&t[i]);
}

/* A tile of a merged fragment is corrupt (the chunk count that heads
 * tile 0 of the oldest fragment's a0.tdb overwritten): the consolidation
 * says TDB_E_CORRUPT naming that file and tile, and leaves the array's
 * files as they were.  With the bytes put back, the array reads as
 * before and a retry merges the four fragments. */
static void test_fragments_tile_corrupt(void)
{
    const char *name = "dense_fragments_overlap";
    struct tdb_io io;
    struct tdb_cons_result r;
    struct tdb_error err = {0};
    struct tdb_cons_options o = {.threads = 2};
    struct tdb_names n = {0};
    char *dir, path[400], want[500];
    uint8_t orig[8], junk[8];
    if (!unit_copy_case(name, &dir, &io))
        return;
    CHECK_EQ_INT(tdb_io_names(&io, "__fragments", &n, &err), 0);
    CHECK(n.n == 4);
    snprintf(path, sizeof path, "__fragments/%s/a0.tdb", n.n ? n.v[0] : "");
    tdb_names_free(&n);
    memset(junk, 0xee, sizeof junk);
    CHECK_EQ_INT(tdb_io_read(&io, path, 0, orig, sizeof orig, &err), 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, path, 0, junk, sizeof junk), 0);
    char *before = tree_snapshot(&io);
    int rc = tdb_consolidate_fragments(&io, &o, &r, &err);
    CHECK(tree_same(&io, before));
    CHECK_EQ_INT(rc, TDB_E_CORRUPT);
    snprintf(want, sizeof want, "%s: field 'a' tile 0", path);
    if (!strstr(err.msg, want))
        fprintf(stderr, "  \"%s\" does not say \"%s\"\n", err.msg, want);
    CHECK(strstr(err.msg, want) != NULL);
    CHECK_EQ_INT(r.name[0], 0);
    CHECK_EQ_INT(io.ops->write_at(io.ctx, path, 0, orig, sizeof orig), 0);
    exp_skip_frags = false;
    CHECK(views_exact(name, &io, NULL));
    retry_works(name, &io, &io, 4);
    free(before);
    unit_drop_case(dir, &io);
}

/* ------------------------------------------------------------ kills */

/* A kill at every mutating call of consolidation and vacuum (the faulty
 * backend refuses that call and every later one): the array reads as
 * before, and a run after it finishes, leaving no temporary file. */
static void test_kills(void)
{
    static const char *const cases[] = {"sparse_delete",
                                        "dense_fragments_overlap",
                                        "consolidated_array_meta",
                                        "sparse_dups"};
    exp_skip_frags = true;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint64_t total = 0, left_tmp = 0;
        for (uint64_t k = 1; k == 1 || k <= total + 1; k++) {
            struct tdb_io io, faulty;
            struct tdb_io_fault f = {.fail_at = k, .crash = true};
            struct tdb_error err = {0};
            char *dir;
            if (!unit_copy_case(cases[c], &dir, &io))
                return;
            CHECK_EQ_INT(tdb_io_faulty(&faulty, &io, &f), 0);
            int rc = cons_all(&faulty, NULL, &err);
            if (k == 1) {
                /* count the calls of a whole run first */
                struct tdb_io_fault all = {0};
                struct tdb_io io2, counting;
                char *dir2;
                if (unit_copy_case(cases[c], &dir2, &io2)) {
                    CHECK_EQ_INT(tdb_io_faulty(&counting, &io2, &all), 0);
                    CHECK_EQ_INT(cons_all(&counting, NULL, &err), 0);
                    total = all.count;
                    tdb_io_free(&counting);
                    unit_drop_case(dir2, &io2);
                }
                CHECK(total > 4);
            }
            CHECK(k > total ? rc == 0 : rc != 0);
            tdb_io_free(&faulty);
            left_tmp += count_files(&io, "", ".cons.tmp");
            if (!views_exact(cases[c], &io, NULL)) {
                fprintf(stderr, "  %s: killed at call %llu: views differ\n",
                        cases[c], (unsigned long long)k);
                CHECK(false);
            }
            CHECK_EQ_INT(cons_all(&io, NULL, &err), 0);
            CHECK(views_exact(cases[c], &io, NULL));
            CHECK_EQ_INT(count_files(&io, "", ".tmp") +
                             count_files(&io, "__commits", ".tmp") +
                             count_files(&io, "__fragment_meta", ".tmp"),
                         0);
            unit_drop_case(dir, &io);
            if (unit_cur_failed)
                return;
        }
        /* the kills between a file's write and its rename leave its
         * temporary file, which the next run removes */
        CHECK(left_tmp >= 2);
        printf("   %s: killed at each of %llu calls, then run again (%llu "
               "temporary files left and removed)\n",
               cases[c], (unsigned long long)total,
               (unsigned long long)left_tmp);
    }
}

int main(void)
{
    RUN_CORPUS(test_commits_as_tiledb);
    RUN_CORPUS(test_fragment_meta_as_tiledb);
    RUN_CORPUS(test_array_meta_as_tiledb);
    RUN_CORPUS(test_refusals);
    RUN_CORPUS(test_fragments_as_tiledb);
    RUN_CORPUS(test_views_after);
    RUN_CORPUS(test_delete_in_con);
    RUN_CORPUS(test_kills);
    RUN_CORPUS(test_fragments_read_fails);
    RUN_CORPUS(test_fragments_tile_corrupt);
    return unit_done();
}
