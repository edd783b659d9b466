/* fixture.c: the sparse delete tests' scenarios (fixture.h). */
#include "fixture.h"
#include "../condtree.h"
#include "tiledb_format_write.h"
#include "read/array.h"
#include "write/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* ------------------------------------------------------------ conditions */

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

bool cn_eval(const struct cn *c, const struct xc *x)
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
void cn_put_negated(struct tdb_buf *b, const struct cn *c)
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
size_t expect(const struct scen *sc, uint64_t t0, uint64_t t1,
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
void write_cells(struct tdb_io *arr, const struct xc *c, size_t n,
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
void check_view(struct tdb_fs *fs, const char *pre, const struct ref *r,
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
void scen_array(struct scen *sc, struct tdb_io *arr)
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
void run(struct scen *sc, size_t nr, const uint64_t (*rg)[2])
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
void base_frag(struct scen *sc, size_t f, uint64_t ts)
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
void over_frag(struct scen *sc, size_t f, uint64_t ts, int sign,
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

