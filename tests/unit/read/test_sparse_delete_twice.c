/* test_sparse_delete_twice.c: a sparse array consolidated with delete
 * metadata, written, deleted from and consolidated again: the fragment's
 * own delete timestamps and condition indexes win over a later delete
 * (format/read/sparse_delete.c, sp_own_delete), mapped through the new
 * fragment's processed list; the views are those of the same writes and
 * deletes unconsolidated. */
#include "fixture.h"
#include "../condtree.h"
#include "tiledb_format_write.h"
#include "read/array.h"
#include "../support.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------- a consolidated fragment consolidated again */

/* The writes at 10 (base_frag) and 20 (over_frag), a delete Dx at 30 of
 * a == 3 (a cell of the first write) and D1 at 100 of a < 0 (every cell
 * of the second); consolidated, then a write at 110 (three cells, one of
 * them over (0, 0)) and D2 at 200 of "y >= 40 or a == 2001", and the
 * two fragments consolidated again.  Both consolidations keep delete
 * metadata.  The delete commits' names sort as D1, D2, Dx
 * ("__100_...", "__200_...", "__30_..."), not as their times. */
static const struct cn *const own_del[3] = {
    CMP("a", EQ, 3),
    CMP("a", LT, 0),
    OR2(CMP("y", GE, 40), CMP("a", EQ, 2001)),
};
static const uint64_t own_del_ts[3] = {30, 100, 200};

static void own_scen(struct scen *sc)
{
    *sc = (struct scen){.nf = 3, .nd = 3};
    base_frag(sc, 0, 10);
    over_frag(sc, 1, 20, -1, 0);
    sc->f[2].t1 = sc->f[2].t2 = 110;
    sc->f[2].n = 3;
    for (int i = 0; i < 3; i++) {
        sc->f[2].c[i] = (struct xc){.x = 3 * i, .y = 0, .a = 2000 + i};
        snprintf(sc->f[2].c[i].s, sizeof sc->f[2].c[i].s, "r%d", i);
    }
    for (size_t i = 0; i < 3; i++) {
        sc->d[i].ts = own_del_ts[i];
        sc->d[i].c = own_del[i];
    }
}

/* Which of own_del removed the version of value a (-1: none), after the
 * first consolidation or the second: D1 the second write's cells (D2
 * matches some of them too, later: the fragment's own, earlier, delete
 * stays), Dx cell 3, D2 the first write's cells of y >= 40 (a 20..29,
 * older versions too) and the third write's a == 2001. */
static int own_removed_by(int32_t a, bool second)
{
    if (a < 0)
        return 1;
    if (a == 3)
        return 0;
    if (second && (a == 2001 || (a >= 20 && a < 30)))
        return 2;
    return -1;
}

/* Fragment cells, field by field, read from its tiles. */
struct own_cells {
    size_t n;
    int64_t x[MAXF * MAXC], y[MAXF * MAXC];
    int32_t a[MAXF * MAXC];
    uint64_t ts[MAXF * MAXC], dts[MAXF * MAXC], dci[MAXF * MAXC];
};

/* Reads fixed-size field `field` (esz bytes a cell) of f, every tile,
 * into out (room for MAXF * MAXC cells): the cells read. */
static size_t own_field(struct tdb_frag *f, int field, size_t esz, void *out)
{
    struct tdb_error err = {0};
    size_t n = 0;
    uint64_t nt = tdb_fragmeta_tile_num(f->fm);
    CHECK(field >= 0);
    for (uint64_t t = 0; field >= 0 && t < nt; t++) {
        struct tdb_cache_entry *e = NULL;
        const struct tdb_tile *tl = NULL;
        int r = tdb_frag_tile(&(struct tdb_tile_ref){f, field,
                                                     TDB_PART_VALUES, t},
                              &e, &tl, &err);
        CHECK_EQ_INT(r, 0);
        if (r)
            break;
        size_t k = (size_t)(tl->size / esz);
        CHECK_EQ_INT(k, tdb_frag_tile_cells(f, t));
        if (n + k <= MAXF * MAXC)
            memcpy((uint8_t *)out + n * esz, tl->data, k * esz);
        n += k;
        tdb_cache_release(f->arr->cache, e);
    }
    CHECK(n <= MAXF * MAXC);
    return n;
}

static void own_read(struct tdb_frag *f, struct own_cells *c)
{
    int dt = tdb_fragmeta_delete_ts_field(f->fm);
    c->n = own_field(f, f->dim_field[0], 8, c->x);
    CHECK_EQ_INT(own_field(f, f->dim_field[1], 8, c->y), c->n);
    CHECK_EQ_INT(own_field(f, f->attr_field[0], 4, c->a), c->n);
    CHECK_EQ_INT(own_field(f, tdb_fragmeta_ts_field(f->fm), 8, c->ts), c->n);
    CHECK(dt >= 0);
    if (dt < 0)
        return;
    CHECK_EQ_INT(own_field(f, dt, 8, c->dts), c->n);
    CHECK_EQ_INT(own_field(f, dt + 1, 8, c->dci), c->n);
}

/* The version of value a among sc's writes: its cell and write time. */
static const struct xc *own_find(const struct scen *sc, int32_t a,
                                 uint64_t *ts, size_t *at)
{
    for (size_t f = 0, k = 0; f < sc->nf; k += sc->f[f++].n)
        for (size_t i = 0; i < sc->f[f].n; i++)
            if (sc->f[f].c[i].a == a) {
                *ts = sc->f[f].t2;
                *at = k + i;
                return &sc->f[f].c[i];
            }
    return NULL;
}

/* Every version of the writes of fragments [0, nw) once, with its write
 * time, and its delete's time and place (proc[j]: the delete of own_del
 * at place j of the processed list, np of them) or UINT64_MAX. */
static void own_check_cells(const struct scen *sc, size_t nw,
                            const struct own_cells *c, const size_t *proc,
                            size_t np, bool second)
{
    bool seen[MAXF * MAXC] = {0};
    size_t want = 0;
    for (size_t f = 0; f < nw; f++)
        want += sc->f[f].n;
    CHECK_EQ_INT(c->n, want);
    for (size_t i = 0; i < c->n && i < MAXF * MAXC; i++) {
        uint64_t ts, dts = UINT64_MAX, dci = UINT64_MAX;
        size_t at = 0;
        const struct xc *x = own_find(sc, c->a[i], &ts, &at);
        CHECK(x != NULL && !seen[at]);
        if (!x)
            continue;
        seen[at] = true;
        int d = own_removed_by(c->a[i], second);
        for (size_t j = 0; d >= 0 && j < np; j++)
            if (proc[j] == (size_t)d) {
                dts = own_del_ts[d];
                dci = j;
            }
        CHECK(d < 0 || dci != UINT64_MAX);
        CHECK_EQ_INT(c->x[i], x->x);
        CHECK_EQ_INT(c->y[i], x->y);
        CHECK_EQ_INT(c->ts[i], ts);
        if (c->dts[i] != dts || c->dci[i] != dci)
            fprintf(stderr, "  cell a=%d: delete at %lld, index %lld\n",
                    (int)c->a[i], (long long)c->dts[i], (long long)c->dci[i]);
        CHECK_EQ_INT(c->dts[i], dts);
        CHECK_EQ_INT(c->dci[i], dci);
    }
}

/* Opens arr: its one fragment must be `name` (__fragments/...) with
 * delete metadata and processed list proc[0..np) (of own_del, as the
 * consolidation names them), holding the writes of fragments [0, nw). */
static void own_check_frag(struct tdb_io *arr, const char *name,
                           const struct scen *sc, size_t nw,
                           const size_t *proc, size_t np, bool second)
{
    struct tdb_error err = {0};
    struct tdb_cache *cache = NULL;
    struct tdb_array *a = NULL;
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.threads = 1;
    CHECK_EQ_INT(tdb_cache_create(&cache, 64u << 20), 0);
    CHECK_EQ_INT(tdb_array_open(&a, arr, "", &o, cache, &err), 0);
    CHECK(a != NULL && a->nfrags == 1);
    if (!a || a->nfrags != 1)
        goto out;
    struct tdb_frag *f = &a->frags[0];
    CHECK(!strncmp(name, "__fragments/", 12) &&
          !strcmp(name + 12, f->fm->name));
    CHECK(f->fm->has_delete_meta && f->fm->has_timestamps);
    CHECK_EQ_INT(tdb_fragmeta_load_processed(f->fm, &err), 0);
    CHECK_EQ_INT(f->fm->nprocessed, np);
    for (size_t j = 0; j < np && j < f->fm->nprocessed; j++) {
        char want[128];
        cond_commit_path(want, sizeof want, own_del_ts[proc[j]],
                         (unsigned)proc[j] + 1);
        CHECK(!strcmp(f->fm->processed[j], want));
    }
    struct own_cells *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    if (c) {
        own_read(f, c);
        own_check_cells(sc, nw, c, proc, np, second);
    }
    free(c);
out:
    if (a)
        tdb_array_close(a);
    tdb_cache_free(cache);
}

/* Consolidates the fragments of arr (delete metadata kept: a delete
 * commit is no older than the first) into *res, of `merged` fragments. */
static void own_consolidate(struct tdb_io *arr, struct tdb_cons_result *res,
                            uint64_t merged)
{
    struct tdb_error err = {0};
    struct tdb_cons_options co = {.threads = 1};
    int r = tdb_consolidate_fragments(arr, &co, res, &err);
    if (r)
        fprintf(stderr, "  consolidate: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    CHECK_EQ_INT(res->merged, merged);
}

/* The views of the twice consolidated array: those of the same writes
 * and deletes unconsolidated (the delete timestamps kept through both
 * consolidations decide: at 99 D1's cells show, at 100 they go). */
static void own_check_views(struct scen *sc, struct tdb_io *arr)
{
    static const uint64_t rg[][2] = {{0, 29}, {0, 30}, {0, 99}, {0, 100},
                                     {0, 150}, {0, 199}, {0, 200},
                                     {0, UINT64_MAX}};
    struct ref *want = malloc(MAXF * MAXC * sizeof *want);
    for (size_t i = 0; i < sizeof rg / sizeof rg[0]; i++) {
        struct tdb_error err = {0};
        struct tdb_open_options o;
        tdb_open_options_init(&o);
        o.ts_start = rg[i][0];
        o.ts_end = rg[i][1];
        o.threads = 1;
        struct tdb_fs *fs = NULL;
        CHECK_EQ_INT(tdb_fs_open(&fs, arr, &o, &err), 0);
        if (!fs)
            continue;
        char what[64];
        snprintf(what, sizeof what, "twice consolidated, open at 0:%llu",
                 (unsigned long long)rg[i][1]);
        check_view(fs, "", want, expect(sc, rg[i][0], rg[i][1], 0, sc->nf,
                                        want), what);
        tdb_fs_close(fs);
    }
    free(want);
}

/* A consolidated fragment with delete metadata consolidated again (with
 * delete metadata): each cell keeps the delete the first consolidation
 * recorded, D1's cells even though D2 matches them too, its index
 * mapped through the first fragment's processed list to its place in
 * the new one (sparse_global_order_reader.cc, copy_delete_meta_tiles);
 * the cells only D2 removes get D2.  Processed lists: [D1, Dx], then
 * [D1, D2, Dx]. */
static void test_consolidated_twice(void)
{
    static const size_t proc1[] = {1, 0}, proc2[] = {1, 2, 0};
    struct scen sc;
    own_scen(&sc);
    sc.nf = sc.nd = 2;          /* the first writes and deletes */
    struct tdb_io arr;
    scen_array(&sc, &arr);
    struct tdb_cons_result res;
    own_consolidate(&arr, &res, 2);
    own_check_frag(&arr, res.name, &sc, 2, proc1, 2, false);
    struct tdb_fragment_req rq = {.timestamp_ms = sc.f[2].t2};
    uint64_t *const none[3] = {NULL, NULL, NULL};
    write_cells(&arr, sc.f[2].c, sc.f[2].n, &rq, none, &sc.f[2].name);
    struct tdb_buf b = {0};
    cn_put_negated(&b, sc.d[2].c);
    cond_commit(&arr, sc.d[2].ts, 3, &b);
    tdb_buf_free(&b);
    sc.nf = sc.nd = 3;
    own_consolidate(&arr, &res, 2);
    own_check_frag(&arr, res.name, &sc, 3, proc2, 3, true);
    own_check_views(&sc, &arr);
    for (size_t f = 0; f < sc.nf; f++)
        free(sc.f[f].name);
    tdb_io_free(&arr);
}

int main(void)
{
    RUN(test_consolidated_twice);
    return unit_done();
}
