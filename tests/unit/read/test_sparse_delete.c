/* test_sparse_delete.c: delete commits over sparse cells that newer
 * fragments overwrote (docs/LAYOUT.md "Sparse arrays: the cells").
 * Arrays are written by the engine's writer, delete commits stored as
 * TileDB stores them (condtree.h: the negated condition), and the cells
 * each view must show are worked out here by TileDB's rules
 * (tiledb/sm/query/readers/sparse_index_reader_base.cc and
 * sparse_global_order_reader.cc):
 *   - only cells inside the open time range take part;
 *   - without duplicates the newest version of each coordinate is chosen
 *     first, and the delete commits apply to that version alone: a
 *     deleted newest version leaves no cell (the older ones stay hidden);
 *   - with duplicates each cell is deleted or kept on its own;
 *   - a commit inside the open range deletes the cells it matches that
 *     are no newer than it; a fragment without per-cell timestamps counts
 *     as written at its first timestamp.
 * Conditions combine dimensions and attributes with AND and OR.  Per-cell
 * timestamps are checked on the corpus's consolidated fragment
 * (consolidated_sparse_vacuumed), whose expected view is TileDB's.
 *
 * Consolidated fragments with delete metadata are built as TileDB's
 * consolidation (fragment_consolidator.cc, purge_deleted_cells false)
 * writes them: every version of every cell with its timestamp, the
 * deletes existing then listed as processed, and each cell's delete
 * timestamp: the first of them that removed it (UINT64_MAX: none).  A
 * reader drops a cell whose delete timestamp is not after the open end
 * (reader_base.cc, add_delete_timestamps_condition), after the newest
 * version is chosen, and skips the processed commits for that fragment:
 * so the views are those of the same writes and deletes unconsolidated. */
#include "../condtree.h"
#include "tiledb_format.h"
#include "tiledb_format_write.h"
#include "read/array.h"
#include "write/writer.h"
#include "fixture.h"
#include "../support.h"

/* Written at 10 and overwritten at 20, deleted at 30 with condition c. */
static void overwrite_then_delete(bool dups, const struct cn *c)
{
    struct scen sc = {.dups = dups, .nf = 2, .nd = 1};
    base_frag(&sc, 0, 10);
    over_frag(&sc, 1, 20, -1, 0);
    sc.d[0].ts = 30;
    sc.d[0].c = c;
    static const uint64_t rg[][2] = {{0, 20}, {0, 30}, {15, 40}, {0, 10}};
    run(&sc, 4, rg);
}

/* The newer version matches, the older does not: no cell. */
static void test_attr(void)
{
    overwrite_then_delete(false, CMP("a", LT, 0));
}

static void test_dim_and_attr(void)
{
    overwrite_then_delete(false, AND2(CMP("x", GE, 12), CMP("a", LT, 0)));
    overwrite_then_delete(false, AND2(CMP("a", LT, -4), CMP("y", LT, 40)));
}

static void test_or(void)
{
    overwrite_then_delete(false, OR2(CMP("y", GE, 40), CMP("a", LT, -10)));
    overwrite_then_delete(false, OR2(SCMP("s", EQ, "q4"),
                                     AND2(CMP("a", LT, 0), CMP("x", LT, 9))));
}

static void test_nested(void)
{
    overwrite_then_delete(false,
                          OR2(AND2(CMP("a", LT, 0),
                                   OR2(CMP("x", LE, 6), CMP("y", GT, 30))),
                              SCMP("s", EQ, "p9")));
    /* a dimension alone: the newest and the older version both match */
    overwrite_then_delete(false, CMP("x", EQ, 9));
}

/* With duplicates each version stands alone: the older one stays. */
static void test_dups(void)
{
    overwrite_then_delete(true, CMP("a", LT, 0));
    overwrite_then_delete(true, OR2(CMP("y", GE, 40), CMP("a", LT, -10)));
    overwrite_then_delete(true, AND2(CMP("x", GE, 12), CMP("a", LT, 0)));
}

/* Deletes between writes: one at 15 matches the cells written at 10 with
 * x < 15 (and would match those written at 20, which are newer); one at
 * 25 matches the newest versions, written at 20, with y < 20. */
static const struct cn *const between_del[2] = {
    AND2(CMP("a", GE, 0), CMP("x", LT, 15)),
    AND2(CMP("a", GE, 1000), CMP("y", LT, 20)),
};

static void between_scen(struct scen *psc)
{
    struct scen sc = *psc;
    sc.nf = 3;
    sc.nd = 2;
    base_frag(&sc, 0, 10);
    over_frag(&sc, 1, 20, 1, 1000);
    /* a third write, at 40, of cells the deletes matched */
    sc.f[2].t1 = sc.f[2].t2 = 40;
    sc.f[2].n = 3;
    for (int i = 0; i < 3; i++) {
        sc.f[2].c[i] = (struct xc){.x = 3 * i, .y = 0, .a = 2000 + i};
        snprintf(sc.f[2].c[i].s, sizeof sc.f[2].c[i].s, "r%d", i);
    }
    sc.d[0].ts = 15;
    sc.d[0].c = between_del[0];
    sc.d[1].ts = 25;
    sc.d[1].c = between_del[1];
    *psc = sc;
}

static void delete_between(bool dups)
{
    struct scen sc = {.dups = dups};
    between_scen(&sc);
    static const uint64_t rg[][2] = {{0, 10}, {0, 15}, {0, 20}, {0, 25},
                                     {15, 30}, {16, 40}, {25, 25}};
    run(&sc, 7, rg);
}

static void test_between_writes(void)
{
    delete_between(false);
    delete_between(true);
}

/* A fragment without per-cell timestamps shown as written over [5, 10]
 * (what consolidation without timestamps makes): a delete at 7 applies to
 * all its cells, as TileDB cannot tell which were written after it. */
static void test_range_fragment(void)
{
    struct scen sc = {.nf = 2, .nd = 2};
    base_frag(&sc, 0, 10);
    sc.f[0].t1 = 5;
    over_frag(&sc, 1, 20, -1, 0);
    sc.d[0].ts = 7;
    sc.d[0].c = CMP("a", GE, 20);
    sc.d[1].ts = 4;         /* before the fragment: not applied */
    sc.d[1].c = CMP("a", EQ, 3);
    static const uint64_t rg[][2] = {{0, 10}, {6, 10}, {8, 30}};
    run(&sc, 3, rg);
}

/* ------------------------------------ consolidated with delete metadata */

/* overwrite_then_delete with the writes at 10 and 20 consolidated at 35:
 * the delete at 30 processed, the cells it removed carrying delete
 * timestamp 30 (after the fragment's range: its folder shows them). */
static void consolidated_overwrite(bool dups, const struct cn *c, bool drop)
{
    struct scen sc = {.dups = dups, .nf = 2, .nd = 1, .ncons = 2,
                      .cons_at = 35, .drop_processed = drop};
    base_frag(&sc, 0, 10);
    over_frag(&sc, 1, 20, -1, 0);
    sc.d[0].ts = 30;
    sc.d[0].c = c;
    static const uint64_t rg[][2] = {{0, 20}, {0, 29}, {0, 30}, {15, 40},
                                     {0, 10}, {30, 30}, {29, 31}};
    run(&sc, 7, rg);
}

/* Without duplicates a removed newest version hides the older ones, and
 * a version removed under a newer one that was not stays hidden; opened
 * before the delete, the cells show. */
static void test_consolidated_processed(void)
{
    consolidated_overwrite(false, CMP("a", LT, 0), false);
    consolidated_overwrite(false, OR2(CMP("y", GE, 40), CMP("a", LT, -10)),
                           false);
    consolidated_overwrite(false, AND2(CMP("x", GE, 12), CMP("a", LT, 0)),
                           false);
    /* both versions removed */
    consolidated_overwrite(false, CMP("x", EQ, 9), false);
    /* only older versions removed: the newest stay */
    consolidated_overwrite(false, CMP("a", GE, 0), false);
    /* the delete timestamps alone, without the commit, decide */
    consolidated_overwrite(false, CMP("a", LT, 0), true);
}

/* With duplicates each version has its own delete timestamp. */
static void test_consolidated_processed_dups(void)
{
    consolidated_overwrite(true, CMP("a", LT, 0), false);
    consolidated_overwrite(true, OR2(CMP("y", GE, 40), CMP("a", LT, -10)),
                           false);
    consolidated_overwrite(true, CMP("a", GE, 0), false);
    consolidated_overwrite(true, CMP("a", GE, 0), true);
}

/* delete_between with the writes at 10 and 20 consolidated at 30, both
 * deletes processed (the one at 25 after the fragment's range), then the
 * write at 40; after the consolidation a delete at 50 (applied to every
 * fragment as a commit) and one stamped 12, inside the consolidated
 * fragment's range (applied to its cells no newer than 12). */
static void consolidated_between(bool dups)
{
    struct scen sc = {.dups = dups, .ncons = 2, .cons_at = 30};
    between_scen(&sc);
    sc.nd = 4;
    sc.d[2].ts = 50;
    sc.d[2].c = OR2(CMP("y", EQ, 1), CMP("a", EQ, 2001));
    sc.d[2].late = true;
    sc.d[3].ts = 12;
    sc.d[3].c = OR2(CMP("a", EQ, 7), CMP("a", EQ, 1004));
    sc.d[3].late = true;
    static const uint64_t rg[][2] = {
        {0, 10}, {0, 12}, {0, 15}, {0, 20}, {0, 25}, {15, 30}, {16, 40},
        {25, 25}, {0, 49}, {0, 50}, {21, 60}, {13, 19}};
    run(&sc, 12, rg);
}

static void test_consolidated_later_deletes(void)
{
    consolidated_between(false);
    consolidated_between(true);
}

/* ------------------------------------------- per-cell timestamps (corpus) */

/* The corpus's expected view at folder `pre` without the cells for which
 * c holds (when `applies`): the cells in a new array (caller frees), *k
 * of them, *gone the cells left out; NULL when a file is missing. */
static struct ref *expected_view(const char *pre, bool applies,
                                 const struct cn *c, size_t *k, size_t *gone)
{
    static const char *const names[] = {"x", "y", "a", "s", "s.offsets"};
    char path[4096];
    uint8_t *f[5];
    size_t len[5];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/consolidated_sparse_vacuumed/"
                 "expected/%s%s", unit_corpus(), pre, names[i]);
        f[i] = (uint8_t *)unit_slurp(path, &len[i]);
        CHECK(f[i] != NULL);
    }
    struct ref *want = NULL;
    size_t n = f[2] ? len[2] / 4 : 0;
    *k = *gone = 0;
    if (f[0] && f[1] && f[2] && f[3] && f[4])
        want = calloc(n ? n : 1, sizeof *want);
    for (size_t i = 0; want && i < n; i++) {
        struct xc x = {.x = (int64_t)tdb_le64(f[0] + 8 * i),
                       .y = (int64_t)tdb_le64(f[1] + 8 * i),
                       .a = (int32_t)tdb_le32(f[2] + 4 * i)};
        uint64_t s0 = tdb_le64(f[4] + 8 * i);
        uint64_t s1 = i + 1 < n ? tdb_le64(f[4] + 8 * i + 8) : len[3];
        if (s1 - s0 >= sizeof x.s)
            break;
        memcpy(x.s, f[3] + s0, (size_t)(s1 - s0));
        if (applies && cn_eval(c, &x)) {
            (*gone)++;
            continue;
        }
        want[(*k)++].c = x;
    }
    for (int i = 0; i < 5; i++)
        free(f[i]);
    return want;
}

/* consolidated_sparse_vacuumed: fragment [1,3] holds writes 1, 2 and 3
 * with per-cell timestamps (a = write * 100000 + i), fragment 4 a fourth
 * write.  A delete commit at `ts` of "lo <= a < hi" (the values of one
 * write) must remove exactly those cells from a view that showed them:
 * they are the newest versions, and their older versions stay hidden. */
static void cell_ts_case(uint64_t ts, int32_t lo, int32_t hi, bool in_frag)
{
    if (!unit_corpus_case("consolidated_sparse_vacuumed"))
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/consolidated_sparse_vacuumed/array",
             unit_corpus());
    struct tdb_io src, arr;
    CHECK_EQ_INT(tdb_io_posix(&src, path), 0);
    CHECK_EQ_INT(tdb_io_mem(&arr), 0);
    CHECK_EQ_INT(unit_copy_tree(&src, "", &arr, ""), 0);
    tdb_io_free(&src);
    const struct cn *c = AND2(CMP("a", GE, lo), CMP("a", LT, hi));
    struct tdb_buf b = {0};
    cn_put_negated(&b, c);
    cond_commit(&arr, ts, 7, &b);
    tdb_buf_free(&b);

    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fs_open(&fs, &arr, &o, &err), 0);
    static const char *const pres[] = {
        "", "__fragments/__1_3_5ca113aff224043e5f6e046bef01cb89_22/"};
    for (int p = 0; fs && p < 2; p++) {
        /* the expected view without the cells of lo <= a < hi (the
         * fragment alone sees the commit only inside its range) */
        bool applies = p == 0 || in_frag;
        size_t k, gone;
        struct ref *want = expected_view(pres[p], applies, c, &k, &gone);
        if (!want)
            continue;
        CHECK(!applies || gone > 10);
        check_view(fs, pres[p], want, k, "consolidated");
        free(want);
    }
    tdb_fs_close(fs);
    tdb_io_free(&arr);
}

/* After every write, of the third write's values: older versions (of the
 * first and second writes) in the same fragment stay hidden. */
static void test_cell_timestamps_after(void)
{
    cell_ts_case(5, 300000, 400000, false);
}

/* At 2, inside the consolidated fragment's range: the second write's
 * newest versions go, their first-write versions stay hidden, and cells
 * rewritten at 3 or 4 are newer than the commit. */
static void test_cell_timestamps_inside(void)
{
    cell_ts_case(2, 200000, 300000, true);
}

int main(void)
{
    RUN(test_attr);
    RUN(test_dim_and_attr);
    RUN(test_or);
    RUN(test_nested);
    RUN(test_dups);
    RUN(test_between_writes);
    RUN(test_range_fragment);
    RUN(test_consolidated_processed);
    RUN(test_consolidated_processed_dups);
    RUN(test_consolidated_later_deletes);
    RUN_CORPUS(test_cell_timestamps_after);
    RUN_CORPUS(test_cell_timestamps_inside);
    return unit_done();
}
