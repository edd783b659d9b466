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
#include "../support.h"

/* ------------------------------------------------------------ conditions */

enum { K_CMP, K_AND, K_OR };

/* A user's delete condition: a comparison of field f ("x", "y", "a": an
 * integer v; "s": a string sv) or l AND / OR r. */
struct cn {
    int k;
    const char *f;
    int op;
    int64_t v;
    const char *sv;
    const struct cn *l, *r;
};

#define CMP(f, op, v) (&(const struct cn){K_CMP, f, op, v, NULL, NULL, NULL})
#define SCMP(f, op, s) (&(const struct cn){K_CMP, f, op, 0, s, NULL, NULL})
#define AND2(l, r) (&(const struct cn){K_AND, NULL, 0, 0, NULL, l, r})
#define OR2(l, r) (&(const struct cn){K_OR, NULL, 0, 0, NULL, l, r})

/* One cell: coordinates (x, y), attributes a and s. */
struct xc {
    int64_t x, y;
    int32_t a;
    char s[16];
};

static bool cn_holds(int op, int c)
{
    switch (op) {
    case LT: return c < 0;
    case LE: return c <= 0;
    case GT: return c > 0;
    case GE: return c >= 0;
    case EQ: return c == 0;
    default: return c != 0;
    }
}

static bool cn_eval(const struct cn *c, const struct xc *x)
{
    if (c->k == K_AND)
        return cn_eval(c->l, x) && cn_eval(c->r, x);
    if (c->k == K_OR)
        return cn_eval(c->l, x) || cn_eval(c->r, x);
    if (c->sv)
        return cn_holds(c->op, strcmp(x->s, c->sv));
    int64_t v = !strcmp(c->f, "x") ? x->x : !strcmp(c->f, "y") ? x->y : x->a;
    return cn_holds(c->op, v < c->v ? -1 : v > c->v);
}

/* The stored form: the negation (De Morgan; each comparison negated). */
static void cn_put_negated(struct tdb_buf *b, const struct cn *c)
{
    static const int neg[] = {[LT] = GE, [LE] = GT, [GT] = LE, [GE] = LT,
                              [EQ] = NE, [NE] = EQ};
    if (c->k != K_CMP) {
        cond_expr(b, c->k == K_AND ? OR : AND, 2);
        cn_put_negated(b, c->l);
        cn_put_negated(b, c->r);
        return;
    }
    int32_t a = (int32_t)c->v;
    if (c->sv)
        cond_value(b, (uint8_t)neg[c->op], c->f, c->sv, strlen(c->sv));
    else if (!strcmp(c->f, "a"))
        cond_value(b, (uint8_t)neg[c->op], c->f, &a, 4);
    else
        cond_value(b, (uint8_t)neg[c->op], c->f, &c->v, 8);
}

/* ---------------------------------------------------------- the scenario */

#define MAXF 4
#define MAXC 64
#define MAXD 4

/* Fragments (each written at t2, and shown as written over [t1, t2]) and
 * delete commits. */
struct scen {
    bool dups;
    size_t nf;
    struct {
        uint64_t t1, t2;
        size_t n;
        struct xc c[MAXC];
        char *name;
    } f[MAXF];
    size_t nd;
    struct {
        uint64_t ts;
        const struct cn *c;
        bool late;              /* written after the consolidation */
    } d[MAXD];
    /* ncons > 1: fragments [0, ncons) exist only consolidated, at time
     * cons_at (the deletes up to then processed), as fragment cname */
    size_t ncons;
    uint64_t cons_at;
    char *cname;
    bool drop_processed;        /* the processed delete commits are gone */
};

/* A cell with where it came from, for the expected view. */
struct ref {
    struct xc c;
    uint64_t t1, t2;
    size_t frag, seq;
};

static int ref_cmp(const void *pa, const void *pb)
{
    const struct ref *a = pa, *b = pb;
    int64_t ka[4] = {a->c.x / 10, a->c.y / 10, a->c.x, a->c.y};
    int64_t kb[4] = {b->c.x / 10, b->c.y / 10, b->c.x, b->c.y};
    for (int i = 0; i < 4; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    /* the same coordinates: newest first, then as stored */
    if (a->t2 != b->t2)
        return a->t2 > b->t2 ? -1 : 1;
    if (a->frag != b->frag)
        return a->frag > b->frag ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static bool ref_deleted(const struct scen *sc, const struct ref *r,
                        uint64_t t0, uint64_t t1)
{
    for (size_t i = 0; i < sc->nd; i++)
        if (sc->d[i].ts >= t0 && sc->d[i].ts <= t1 && r->t1 <= sc->d[i].ts &&
            cn_eval(sc->d[i].c, &r->c))
            return true;
    return false;
}

/* The cells of fragments [flo, fhi) in order, newest first among equal
 * coordinates, into out. */
static size_t gather(const struct scen *sc, size_t flo, size_t fhi,
                     uint64_t t0, uint64_t t1, struct ref *out)
{
    size_t n = 0;
    for (size_t f = flo; f < fhi; f++) {
        if (sc->f[f].t2 < t0 || sc->f[f].t1 > t1)
            continue;
        for (size_t i = 0; i < sc->f[f].n; i++)
            out[n++] = (struct ref){sc->f[f].c[i], sc->f[f].t1, sc->f[f].t2,
                                    f, i};
    }
    qsort(out, n, sizeof *out, ref_cmp);
    return n;
}

/* The cells a view over [t0, t1] of fragments [flo, fhi) shows (written
 * as they are, unconsolidated), in order, into out. */
static size_t expect(const struct scen *sc, uint64_t t0, uint64_t t1,
                     size_t flo, size_t fhi, struct ref *out)
{
    size_t n = gather(sc, flo, fhi, t0, t1, out), k = 0;
    for (size_t i = 0; i < n; i++) {
        bool older = i && out[i - 1].c.x == out[i].c.x &&
                     out[i - 1].c.y == out[i].c.y;
        if (!sc->dups && older)
            continue;       /* the newest version came first */
        if (ref_deleted(sc, &out[i], t0, t1))
            continue;
        out[k++] = out[i];
    }
    return k;
}

/* Writes cells c[0..n) as one fragment at t2 (with rq's extras and
 * special fields sp[]: __timestamps, __delete_timestamps,
 * __delete_condition_index, NULL when not staged) into *name. */
static void write_cells(struct tdb_io *arr, const struct xc *c, size_t n,
                        struct tdb_fragment_req *rq, uint64_t *const sp[3],
                        char **name)
{
    int64_t *x = malloc(n * 8), *y = malloc(n * 8);
    int32_t *a = malloc(n * 4);
    uint64_t *off = malloc(n * 8);
    char *text = malloc(n * 16 + 1);
    size_t tl = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = c[i].x;
        y[i] = c[i].y;
        a[i] = c[i].a;
        off[i] = tl;
        memcpy(text + tl, c[i].s, strlen(c[i].s));
        tl += strlen(c[i].s);
    }
    struct tdb_io stg;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stg.ops->mkdir(stg.ctx, "w");
    unit_put(&stg, "w/x", x, n * 8);
    unit_put(&stg, "w/y", y, n * 8);
    unit_put(&stg, "w/a", a, n * 4);
    unit_put(&stg, "w/s", text, tl);
    unit_put(&stg, "w/s.offsets", off, n * 8);
    static const char *const spn[3] = {"w/__timestamps",
                                       "w/__delete_timestamps",
                                       "w/__delete_condition_index"};
    for (int k = 0; k < 3; k++)
        if (sp[k])
            unit_put(&stg, spn[k], sp[k], n * 8);
    rq->io = arr;
    rq->staged = &stg;
    rq->staged_dir = "w";
    rq->threads = 1;
    int r = tdb_fragment_write(rq, name, &err);
    if (r)
        fprintf(stderr, "  write at %llu: %s\n",
                (unsigned long long)rq->timestamp_ms, err.msg);
    CHECK_EQ_INT(r, 0);
    tdb_io_free(&stg);
    free(x);
    free(y);
    free(a);
    free(off);
    free(text);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Was delete i there when the consolidation ran? */
static bool processed(const struct scen *sc, size_t i)
{
    return sc->ncons > 1 && sc->d[i].ts <= sc->cons_at && !sc->d[i].late;
}

/* Writes fragments [0, ncons) as TileDB's consolidation at cons_at writes
 * them: every version, newest first among equal coordinates, with its
 * timestamp; the delete commits up to cons_at processed (by file name),
 * each cell's delete timestamp that of the first of them (by time) that
 * matches it and is no older than it, and its index among the processed. */
static void write_consolidated(struct scen *sc, struct tdb_io *arr)
{
    struct ref *r = malloc(MAXF * MAXC * sizeof *r);
    size_t n = gather(sc, 0, sc->ncons, 0, UINT64_MAX, r);
    char path[MAXD][128];
    const char *proc[MAXD];
    size_t np = 0;
    for (size_t i = 0; i < sc->nd; i++)
        if (processed(sc, i)) {
            cond_commit_path(path[np], sizeof path[np], sc->d[i].ts,
                             (unsigned)i + 1);
            proc[np] = path[np];
            np++;
        }
    qsort(proc, np, sizeof *proc, str_cmp);
    struct xc *c = malloc(n * sizeof *c);
    uint64_t *ts = malloc(n * 8), *dt = malloc(n * 8), *dci = malloc(n * 8);
    for (size_t k = 0; k < n; k++) {
        c[k] = r[k].c;
        ts[k] = r[k].t2;
        dt[k] = dci[k] = UINT64_MAX;
        for (size_t i = 0; i < sc->nd; i++) {
            if (!processed(sc, i) || sc->d[i].ts < r[k].t1 ||
                sc->d[i].ts >= dt[k] || !cn_eval(sc->d[i].c, &r[k].c))
                continue;
            char mine[128];
            cond_commit_path(mine, sizeof mine, sc->d[i].ts, (unsigned)i + 1);
            dt[k] = sc->d[i].ts;
            for (size_t j = 0; j < np; j++)
                if (!strcmp(proc[j], mine))
                    dci[k] = j;
        }
    }
    struct tdb_write_extras x = {.t1 = sc->f[0].t1, .timestamps = true,
                                 .delete_meta = true, .processed = proc,
                                 .nprocessed = np};
    struct tdb_fragment_req rq = {.timestamp_ms = sc->f[sc->ncons - 1].t2,
                               .extras = &x};
    uint64_t *const sp[3] = {ts, dt, dci};
    write_cells(arr, c, n, &rq, sp, &sc->cname);
    free(c);
    free(ts);
    free(dt);
    free(dci);
    free(r);
}

static void write_frags(struct scen *sc, struct tdb_io *arr)
{
    size_t first = 0;
    if (sc->ncons > 1) {
        write_consolidated(sc, arr);
        first = sc->ncons;
    }
    for (size_t f = first; f < sc->nf; f++) {
        struct tdb_fragment_req rq = {.timestamp_ms = sc->f[f].t2};
        uint64_t *const none[3] = {NULL, NULL, NULL};
        write_cells(arr, sc->f[f].c, sc->f[f].n, &rq, none, &sc->f[f].name);
    }
}

/* The writer names a fragment __T_T_...: one shown as written over
 * [t1, t2] (a consolidated fragment without per-cell timestamps) gets
 * that name, its commit file too. */
static void rename_frag(struct tdb_io *arr, struct scen *sc, size_t f)
{
    char *old = sc->f[f].name;
    if (!old || sc->f[f].t1 == sc->f[f].t2)
        return;
    const char *rest = strchr(old + 2, '_');
    char *name = malloc(strlen(old) + 48), a[600], b[600];
    sprintf(name, "__%llu%s", (unsigned long long)sc->f[f].t1, rest);
    snprintf(a, sizeof a, "__fragments/%s", old);
    snprintf(b, sizeof b, "__fragments/%s", name);
    CHECK_EQ_INT(arr->ops->rename(arr->ctx, a, b), 0);
    snprintf(a, sizeof a, "__commits/%s.wrt", old);
    snprintf(b, sizeof b, "__commits/%s.wrt", name);
    CHECK_EQ_INT(arr->ops->rename(arr->ctx, a, b), 0);
    free(old);
    sc->f[f].name = name;
}

/* Compares file `pre`FIELD of fs for every field with cells r[0..n). */
static void check_view(struct tdb_fs *fs, const char *pre, const struct ref *r,
                       size_t n, const char *what)
{
    struct tdb_buf x = {0}, y = {0}, a = {0}, s = {0}, so = {0};
    for (size_t i = 0; i < n; i++) {
        tdb_buf_put_u64(&x, (uint64_t)r[i].c.x);
        tdb_buf_put_u64(&y, (uint64_t)r[i].c.y);
        tdb_buf_put_u32(&a, (uint32_t)r[i].c.a);
        tdb_buf_put_u64(&so, s.len);
        tdb_buf_append(&s, r[i].c.s, strlen(r[i].c.s));
    }
    const struct tdb_buf *want[] = {&x, &y, &a, &s, &so};
    static const char *const field[] = {"x", "y", "a", "s", "s.offsets"};
    for (int i = 0; i < 5; i++) {
        char path[600], label[700];
        snprintf(path, sizeof path, "%s%s", pre, field[i]);
        snprintf(label, sizeof label, "%s: %s", what, path);
        uint64_t size = 0;
        uint8_t *got = unit_fs_file(fs, path, &size);
        CHECK(got != NULL);
        if (got)
            CHECK(unit_same_bytes(label, got, size, want[i]->data,
                                  want[i]->len));
        free(got);
    }
    tdb_buf_free(&x);
    tdb_buf_free(&y);
    tdb_buf_free(&a);
    tdb_buf_free(&s);
    tdb_buf_free(&so);
}

/* Creates the array of scenario sc in arr (memory): its fragments, then
 * its delete commits (those processed left out when sc says so). */
static void scen_array(struct scen *sc, struct tdb_io *arr)
{
    static const char *const schema =
        "{\"array_type\": \"sparse\", \"capacity\": 4, \"allows_duplicates\": "
        "%s, \"dims\": [{\"name\": \"x\", \"datatype\": \"INT64\", "
        "\"domain\": [0, 99], \"tile_extent\": 10}, {\"name\": \"y\", "
        "\"datatype\": \"INT64\", \"domain\": [0, 99], \"tile_extent\": 10}],"
        " \"attrs\": [{\"name\": \"a\", \"datatype\": \"INT32\"}, {\"name\":"
        " \"s\", \"datatype\": \"STRING_ASCII\", \"cell_val_num\": \"var\"}]}";
    char json[1024];
    snprintf(json, sizeof json, schema, sc->dups ? "true" : "false");
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_from_json(json, strlen(json), &s, &err), 0);
    CHECK_EQ_INT(tdb_io_mem(arr), 0);
    if (s)
        CHECK_EQ_INT(tdb_array_create(arr, s, NULL, 1, &err), 0);
    tdb_schema_free(s);
    write_frags(sc, arr);
    for (size_t f = 0; f < sc->nf; f++)
        rename_frag(arr, sc, f);
    for (size_t i = 0; i < sc->nd; i++) {
        if (sc->drop_processed && processed(sc, i))
            continue;
        struct tdb_buf b = {0};
        cn_put_negated(&b, sc->d[i].c);
        cond_commit(arr, sc->d[i].ts, (unsigned)i + 1, &b);
        tdb_buf_free(&b);
    }
}

/* Checks each fragment's folder of fs alone, over its own range: a
 * consolidated one as its writes and the deletes in that range (want:
 * room for the cells). */
static void check_frags_alone(struct scen *sc, struct tdb_fs *fs,
                              struct ref *want)
{
    size_t first = sc->ncons > 1 ? sc->ncons : 0;
    if (sc->ncons > 1) {
        char pre[600];
        snprintf(pre, sizeof pre, "__fragments/%s/",
                 sc->cname ? sc->cname : "?");
        size_t n = expect(sc, sc->f[0].t1, sc->f[sc->ncons - 1].t2, 0,
                          sc->ncons, want);
        check_view(fs, pre, want, n, "consolidated fragment alone");
    }
    for (size_t f = first; f < sc->nf; f++) {
        char pre[600];
        snprintf(pre, sizeof pre, "__fragments/%s/",
                 sc->f[f].name ? sc->f[f].name : "?");
        size_t n = expect(sc, sc->f[f].t1, sc->f[f].t2, f, f + 1, want);
        check_view(fs, pre, want, n, "fragment alone");
    }
}

/* Writes scenario sc and checks its views over each of the `nr` ranges
 * r[] and each fragment's folder (over its own range). */
static void run(struct scen *sc, size_t nr, const uint64_t (*rg)[2])
{
    struct tdb_error err = {0};
    struct tdb_io arr;
    scen_array(sc, &arr);
    struct ref *want = malloc(MAXF * MAXC * sizeof *want);
    for (size_t i = 0; i <= nr; i++) {
        uint64_t t0 = i < nr ? rg[i][0] : 0, t1 = i < nr ? rg[i][1] : UINT64_MAX;
        struct tdb_open_options o;
        tdb_open_options_init(&o);
        o.ts_start = t0;
        o.ts_end = t1;
        o.threads = 1;
        struct tdb_fs *fs = NULL;
        int r = tdb_fs_open(&fs, &arr, &o, &err);
        if (r)
            fprintf(stderr, "  open: %s\n", err.msg);
        CHECK_EQ_INT(r, 0);
        if (!fs)
            continue;
        char what[64];
        snprintf(what, sizeof what, "open at %llu:%llu",
                 (unsigned long long)t0, (unsigned long long)t1);
        check_view(fs, "", want, expect(sc, t0, t1, 0, sc->nf, want), what);
        if (i == nr)    /* the whole range only */
            check_frags_alone(sc, fs, want);
        tdb_fs_close(fs);
    }
    free(want);
    for (size_t f = 0; f < sc->nf; f++)
        free(sc->f[f].name);
    free(sc->cname);
    tdb_io_free(&arr);
}

/* ------------------------------------------------------------ the data */

/* Fragment f: cells i = 0..29 at x = 3 (i % 10), y = 20 (i / 10) + i % 4,
 * a = i, s = "p<i>"; written at ts. */
static void base_frag(struct scen *sc, size_t f, uint64_t ts)
{
    sc->f[f].t1 = sc->f[f].t2 = ts;
    sc->f[f].n = 30;
    for (int i = 0; i < 30; i++) {
        struct xc *c = &sc->f[f].c[i];
        c->x = 3 * (i % 10);
        c->y = 20 * (i / 10) + i % 4;
        c->a = i;
        snprintf(c->s, sizeof c->s, "p%d", i);
    }
}

/* Fragment f overwrites the even cells of base_frag with a = sign (i + 1)
 * + bias and s = "q<i>", and adds five cells of its own at x = 1..5,
 * y = 99, a = sign (100 + i); written at ts. */
static void over_frag(struct scen *sc, size_t f, uint64_t ts, int sign,
                      int bias)
{
    sc->f[f].t1 = sc->f[f].t2 = ts;
    size_t n = 0;
    for (int i = 0; i < 30; i += 2) {
        struct xc *c = &sc->f[f].c[n++];
        c->x = 3 * (i % 10);
        c->y = 20 * (i / 10) + i % 4;
        c->a = sign * (i + 1) + bias;
        snprintf(c->s, sizeof c->s, "q%d", i);
    }
    for (int i = 0; i < 5; i++) {
        struct xc *c = &sc->f[f].c[n++];
        *c = (struct xc){.x = 1 + i, .y = 99, .a = sign * (100 + i)};
        snprintf(c->s, sizeof c->s, "n%d", i);
    }
    sc->f[f].n = n;
}

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
    RUN(test_consolidated_twice);
    RUN_CORPUS(test_cell_timestamps_after);
    RUN_CORPUS(test_cell_timestamps_inside);
    return unit_done();
}
