/* test_sparse_view.c: the sparse merge (read/sparse_view.c).  Arrays of
 * many overlapping fragments of random cells are written with the
 * project's writer; the mount's field files must equal a reference merge
 * computed here (every fragment's stored cells, newest first, sorted
 * stably by tdb_order_cmp; without duplicates the first of each
 * coordinates kept), whole and read at random offsets. */
#include "write/writer.h"
#include "read/view.h"
#include "../support.h"
#include "../rng.h"

#include <pthread.h>
#include <stdlib.h>

/* ------------------------------------------------------------ helpers */

/* One cell: two fixed-size 8-byte coordinates (y, x) and the value v. */
struct cell {
    uint8_t y[8], x[8];
    int64_t v;
    uint64_t seq;               /* position in the concatenation */
    uint64_t h;                 /* Hilbert value */
};

static const struct tdb_schema *ref_schema;

static void cell_coords(const struct cell *c, struct tdb_coords *k)
{
    unsigned ny = tdb_dt_size(ref_schema->dims[0].type);
    unsigned nx = tdb_dt_size(ref_schema->dims[1].type);
    k->v[0] = c->y;
    k->n[0] = ny;
    k->v[1] = c->x;
    k->n[1] = nx;
}

static int ref_cmp(const void *pa, const void *pb)
{
    const struct cell *a = pa, *b = pb;
    struct tdb_coords ka, kb;
    cell_coords(a, &ka);
    cell_coords(b, &kb);
    int c = tdb_order_cmp(ref_schema, &ka, a->h, &kb, b->h);
    if (c)
        return c;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static struct tdb_schema *schema_of(const char *json)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int r = tdb_schema_from_json(json, strlen(json), &s, &err);
    if (r)
        fprintf(stderr, "  schema: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    return s;
}

/* The var-sized nullable attribute s of arrays that have one (a second
 * attribute): derived from v, so that the merged s follows from the merged
 * v.  Its value: v in decimal, 0 to 2 times; null when v % 5 == 0. */
static size_t s_value(int64_t v, char *buf)
{
    char d[32];
    int n = snprintf(d, sizeof d, "%lld", (long long)v);
    size_t len = 0;
    for (int64_t k = 0; k < v % 3; k++) {
        memcpy(buf + len, d, (size_t)n);
        len += (size_t)n;
    }
    return len;
}

static uint8_t s_valid(int64_t v)
{
    return v % 5 != 0;
}

/* The files of s for cells whose v are vs[0..n): values, offsets,
 * validity (caller frees). */
static void s_files(const int64_t *vs, size_t n, uint8_t **val, uint64_t *nval,
                    uint8_t **offs, uint8_t **valid)
{
    *val = malloc(n * 64 + 1);
    *offs = malloc(n * 8 + 1);
    *valid = malloc(n + 1);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        tdb_st64(*offs + i * 8, at);
        at += s_value(vs[i], (char *)*val + at);
        (*valid)[i] = s_valid(vs[i]);
    }
    *nval = at;
}

/* Writes one fragment of cells c[0..n) at timestamp ts; *name gets its
 * name. */
static void write_frag(struct tdb_io *arr, const struct tdb_schema *s,
                       const struct cell *c, size_t n, uint64_t ts,
                       char **name)
{
    unsigned ny = tdb_dt_size(s->dims[0].type), nx = tdb_dt_size(s->dims[1].type);
    uint8_t *y = malloc(n * 8 + 1), *x = malloc(n * 8 + 1);
    int64_t *v = malloc(n * 8 + 1);
    for (size_t i = 0; i < n; i++) {
        memcpy(y + i * ny, c[i].y, ny);
        memcpy(x + i * nx, c[i].x, nx);
        v[i] = c[i].v;
    }
    struct tdb_io stg;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stg.ops->mkdir(stg.ctx, "w");
    unit_put(&stg, "w/y", y, n * ny);
    unit_put(&stg, "w/x", x, n * nx);
    unit_put(&stg, "w/v", v, n * 8);
    uint8_t *sv = NULL, *so = NULL, *sn = NULL;
    if (s->nattrs > 1) {
        uint64_t nsv;
        s_files(v, n, &sv, &nsv, &so, &sn);
        unit_put(&stg, "w/s", sv, nsv);
        unit_put(&stg, "w/s.offsets", so, n * 8);
        unit_put(&stg, "w/s.validity", sn, n);
    }
    struct tdb_error err = {0};
    int r = unit_write(arr, &stg, "w", NULL, ts, 1, name, &err);
    if (r)
        fprintf(stderr, "  write at %llu: %s\n", (unsigned long long)ts, err.msg);
    CHECK_EQ_INT(r, 0);
    tdb_io_free(&stg);
    free(y);
    free(x);
    free(v);
    free(sv);
    free(so);
    free(sn);
}

/* How the trees are opened: one thread (one merge), or several threads
 * with merges cut into key ranges of a few cells (run_spec does both). */
static unsigned open_threads = 1;

static uint64_t open_range_cells;

static struct tdb_fs *open_fs(struct tdb_io *arr, uint64_t t1)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.ts_end = t1;
    o.threads = open_threads;
    o.merge_range_cells = open_range_cells;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    if (tdb_fs_open(&fs, arr, &o, &err))
        fprintf(stderr, "  open: %s\n", err.msg);
    CHECK(fs != NULL);
    return fs;
}

/* The cells fragment `name` stores, in its stored order (the fragment
 * alone, as the mount shows it; NULL: the merged cells of the whole
 * array, in the merged order), appended to *all. */
static void stored_cells(struct tdb_fs *fs, const char *name,
                         struct cell **all, size_t *n, size_t *cap)
{
    char pre[520] = "", p[600];
    uint64_t sy, sx, sv;
    if (name)
        snprintf(pre, sizeof pre, "__fragments/%s/", name);
    snprintf(p, sizeof p, "%sy", pre);
    uint8_t *y = unit_fs_file(fs, p, &sy);
    snprintf(p, sizeof p, "%sx", pre);
    uint8_t *x = unit_fs_file(fs, p, &sx);
    snprintf(p, sizeof p, "%sv", pre);
    uint8_t *v = unit_fs_file(fs, p, &sv);
    unsigned ny = tdb_dt_size(ref_schema->dims[0].type);
    unsigned nx = tdb_dt_size(ref_schema->dims[1].type);
    CHECK(y && x && v);
    uint64_t k = v ? sv / 8 : 0;
    CHECK(y && sy == k * ny);
    CHECK(x && sx == k * nx);
    if (y && x && v && sy == k * ny && sx == k * nx) {
        if (*n + k > *cap) {
            *cap = (*n + k) * 2;
            *all = realloc(*all, *cap * sizeof **all);
        }
        for (uint64_t i = 0; i < k; i++) {
            struct cell *c = &(*all)[(*n)++];
            memset(c, 0, sizeof *c);
            memcpy(c->y, y + i * ny, ny);
            memcpy(c->x, x + i * nx, nx);
            memcpy(&c->v, v + i * 8, 8);
            c->seq = *n;
            struct tdb_coords kc;
            cell_coords(c, &kc);
            if (ref_schema->cell_order == TDB_HILBERT)
                c->h = tdb_hilbert(ref_schema, &kc);
        }
    }
    free(y);
    free(x);
    free(v);
}

/* Checks file `path` (`cs` bytes per cell, from cell field `get`) of fs:
 * whole, then at random offsets against the whole. */
static void check_file(struct tdb_fs *fs, const char *path, const uint8_t *want,
                       uint64_t nwant)
{
    uint64_t size = 0;
    uint8_t *got = unit_fs_file(fs, path, &size);
    CHECK(got != NULL);
    if (!got)
        return;
    char what[200];
    snprintf(what, sizeof what, "merged %s", path);
    CHECK(unit_same_bytes(what, got, size, want, nwant));
    uint64_t ino;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fs_resolve(fs, path, &ino, &err), 0);
    uint8_t *buf = malloc(70000);
    for (int i = 0; i < 300 && size; i++) {
        uint64_t off = rnd_below(size);
        size_t len = (size_t)(1 + rnd_below(i % 3 ? 4096 : 70000));
        size_t n = len;
        int r = unit_fs_copy(fs, ino, off, buf, &n, &err);
        CHECK_EQ_INT(r, 0);
        uint64_t exp = size - off < len ? size - off : len;
        CHECK_EQ_INT(n, exp);
        if (r || n != exp || memcmp(buf, got + off, n)) {
            fprintf(stderr, "  %s: read at %llu len %zu differs\n", path,
                    (unsigned long long)off, len);
            CHECK(0);
            break;
        }
    }
    free(buf);
    free(got);
}

/* Threads reading one tree at once, from its first read on (the merge
 * runs once, under a lock; the resume points are shared). */
struct reader_arg {
    struct tdb_fs *fs;
    const char *path;
    const uint8_t *want;
    uint64_t size;
    uint64_t seed;
    int bad;
};

static void *reader_main(void *p)
{
    struct reader_arg *ra = p;
    uint64_t st = ra->seed | 1;
    uint64_t ino;
    struct tdb_error err = {0};
    if (tdb_fs_resolve(ra->fs, ra->path, &ino, &err)) {
        ra->bad++;
        return NULL;
    }
    uint8_t *buf = malloc(20000);
    for (int i = 0; i < 200 && buf; i++) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        uint64_t off = ra->size ? st % ra->size : 0;
        size_t len = (size_t)(1 + (st >> 20) % 20000), got = len;
        if (i % 2)      /* sequential stretches too */
            off = (uint64_t)i * 8000 % (ra->size ? ra->size : 1);
        if (unit_fs_copy(ra->fs, ino, off, buf, &got, &err) ||
            got != (ra->size - off < len ? ra->size - off : len) ||
            memcmp(buf, ra->want + off, got))
            ra->bad++;
    }
    free(buf);
    return NULL;
}

static void check_threads(struct tdb_io *arr)
{
    struct tdb_fs *fs = open_fs(arr, UINT64_MAX);
    if (!fs)
        return;
    static const char *const names[3] = {"v", "y", "x"};
    uint8_t *want[3];
    uint64_t size[3];
    for (int i = 0; i < 3; i++)
        want[i] = unit_fs_file(fs, names[i], &size[i]);
    tdb_fs_close(fs);
    fs = open_fs(arr, UINT64_MAX);     /* a fresh tree: nothing merged yet */
    if (!fs || !want[0] || !want[1] || !want[2]) {
        CHECK(0);
    } else {
        pthread_t th[6];
        struct reader_arg ra[6];
        for (int i = 0; i < 6; i++) {
            ra[i] = (struct reader_arg){fs, names[i % 3], want[i % 3],
                                        size[i % 3], 77 + (uint64_t)i, 0};
            CHECK_EQ_INT(pthread_create(&th[i], NULL, reader_main, &ra[i]), 0);
        }
        for (int i = 0; i < 6; i++) {
            pthread_join(th[i], NULL);
            CHECK_EQ_INT(ra[i].bad, 0);
        }
    }
    tdb_fs_close(fs);
    for (int i = 0; i < 3; i++)
        free(want[i]);
}

/* A test array: schema json, nfrag fragments of about `per` random cells
 * each from values y in ys[0..ny), x in xs[0..nx) (little-endian 8-byte
 * patterns; the schema's type takes the first bytes), plus one fragment of
 * a long block of consecutive cells when `block`; the view checked at
 * every time in tcheck[] (0: all). */
struct spec {
    const char *json;
    size_t nfrag, per;
    int64_t ylo, yn, xlo, xn, xstep;    /* integer coordinate ranges */
    bool xfloat;                        /* x is FLOAT64: xlo + k * 0.5 */
    bool block;
    uint64_t seed;
};

static void put_coord(uint8_t *b, unsigned type, int64_t v, bool fl)
{
    memset(b, 0, 8);
    if (fl) {
        double d = (double)v * 0.5;
        memcpy(b, &d, 8);
    } else {
        (void)type;
        tdb_st64(b, (uint64_t)v);
    }
}

/* Sets cell c to the coordinates (ylo + yi, xlo + xi * xstep) of spec sp
 * and the value v. */
static void set_cell(struct cell *c, const struct spec *sp,
                     const struct tdb_schema *s, int64_t yi, int64_t xi,
                     int64_t v)
{
    put_coord(c->y, s->dims[0].type, sp->ylo + yi, false);
    put_coord(c->x, s->dims[1].type, sp->xlo + xi * sp->xstep, sp->xfloat);
    c->v = v;
}

/* Fragment f as a block of consecutive coordinates (long runs) in c[];
 * returns how many cells. */
static size_t block_cells(const struct spec *sp, const struct tdb_schema *s,
                          size_t f, struct cell *c)
{
    size_t n = 0;
    for (int64_t y = 0; y < sp->yn / 4; y++)
        for (int64_t x = 0; x < sp->xn; x++) {
            set_cell(&c[n], sp, s, y, x, (int64_t)(f * 1000000 + n));
            n++;
        }
    return n;
}

/* Fragment f as random cells in c[] (`used`, one byte per coordinates of
 * the spec's space, marks those taken); returns how many cells. */
static size_t random_cells(const struct spec *sp, const struct tdb_schema *s,
                           size_t f, struct cell *c, uint8_t *used)
{
    bool dups = s->allows_dups;
    uint64_t space = (uint64_t)(sp->yn * sp->xn);
    size_t n = 0, want = 1 + rnd_below(sp->per * 2);
    memset(used, 0, space);
    for (size_t i = 0; i < want; i++) {
        uint64_t k = rnd_below(space);
        if (!dups && used[k])
            continue;       /* the writer refuses duplicates */
        used[k] = 1;
        set_cell(&c[n], sp, s, (int64_t)(k / (uint64_t)sp->xn),
                 (int64_t)(k % (uint64_t)sp->xn), (int64_t)(f * 1000000 + n));
        n++;
        if (dups && rnd_below(8) == 0 && i + 1 < want) {
            c[n] = c[n - 1];    /* a duplicate inside the fragment */
            c[n].v = (int64_t)(f * 1000000 + n);
            n++;
            i++;
        }
    }
    return n;
}

/* The reference merge of fs at time t: the stored cells of fragments
 * names[0..nf) (written at ts[]) up to t, newest first, sorted; without
 * duplicates the newest version of each coordinates.  *k gets how many
 * (caller frees). */
static struct cell *ref_merge(struct tdb_fs *fs, char **names,
                              const uint64_t *ts, size_t nf, uint64_t t,
                              size_t *k)
{
    struct cell *all = NULL;
    size_t n = 0, cap = 0;
    for (size_t f = nf; f-- > 0;)       /* newest first */
        if (names[f] && ts[f] <= t)
            stored_cells(fs, names[f], &all, &n, &cap);
    qsort(all, n, sizeof *all, ref_cmp);
    *k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ref_schema->allows_dups && *k &&
            !memcmp(all[*k - 1].y, all[i].y, 8) &&
            !memcmp(all[*k - 1].x, all[i].x, 8))
            continue;
        all[(*k)++] = all[i];
    }
    return all;
}

/* Checks every field file of fs against the cells all[0..k). */
static void check_merged(struct tdb_fs *fs, const struct cell *all, size_t k)
{
    const struct tdb_schema *s = ref_schema;
    unsigned ny = tdb_dt_size(s->dims[0].type), nx = tdb_dt_size(s->dims[1].type);
    uint8_t *wy = malloc(k * 8 + 1), *wx = malloc(k * 8 + 1),
            *wv = malloc(k * 8 + 1);
    for (size_t i = 0; i < k; i++) {
        memcpy(wy + i * ny, all[i].y, ny);
        memcpy(wx + i * nx, all[i].x, nx);
        memcpy(wv + i * 8, &all[i].v, 8);
    }
    check_file(fs, "v", wv, k * 8);
    check_file(fs, "y", wy, k * ny);
    check_file(fs, "x", wx, k * nx);
    if (s->nattrs > 1) {
        uint8_t *sv, *so, *sn;
        uint64_t nsv;
        s_files((const int64_t *)(void *)wv, k, &sv, &nsv, &so, &sn);
        check_file(fs, "s", sv, nsv);
        check_file(fs, "s.offsets", so, k * 8);
        check_file(fs, "s.validity", sn, k);
        free(sv);
        free(so);
        free(sn);
    }
    free(wy);
    free(wx);
    free(wv);
}

/* Random reads first, on a fresh tree (no resume point yet): file v read
 * in 4 KiB pieces in a shuffled order equals v read whole. */
static void check_shuffled(struct tdb_io *arr)
{
    struct tdb_fs *fs = open_fs(arr, UINT64_MAX);
    if (!fs)
        return;
    uint64_t ino, size = 0;
    struct tdb_stat st;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fs_resolve(fs, "v", &ino, &err), 0);
    CHECK_EQ_INT(tdb_fs_stat(fs, ino, &st, &err), 0);
    size = st.size;
    uint8_t *parts = malloc(size + 1);
    uint64_t np = (size + 4095) / 4096;
    uint64_t *order = malloc((np + 1) * sizeof *order);
    for (uint64_t i = 0; i < np; i++)
        order[i] = i;
    for (uint64_t i = np; i > 1; i--) {
        uint64_t j = rnd_below(i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (uint64_t i = 0; i < np; i++) {
        size_t got = 4096;
        uint64_t off = order[i] * 4096;
        CHECK_EQ_INT(unit_fs_copy(fs, ino, off, parts + off, &got, &err), 0);
    }
    uint64_t ws = 0;
    uint8_t *whole = unit_fs_file(fs, "v", &ws);
    CHECK(whole && unit_same_bytes("v in shuffled pieces", parts, size, whole, ws));
    free(whole);
    free(order);
    free(parts);
    tdb_fs_close(fs);
}

static void run_spec_once(const struct spec *sp)
{
    rng_state = sp->seed;
    struct tdb_schema *s = schema_of(sp->json);
    if (!s)
        return;
    ref_schema = s;
    struct tdb_io arr;
    CHECK_EQ_INT(tdb_io_mem(&arr), 0);
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_array_create(&arr, s, NULL, 1, &err), 0);
    size_t nf = sp->nfrag + (sp->block ? 1 : 0);
    char **names = calloc(nf, sizeof *names);
    uint64_t *ts = calloc(nf, sizeof *ts);
    uint8_t *used = calloc((uint64_t)(sp->yn * sp->xn), 1);
    struct cell *c = calloc(sp->per * 2 + 70000, sizeof *c);
    for (size_t f = 0; f < nf; f++) {
        size_t n = sp->block && f == nf / 2 ? block_cells(sp, s, f, c)
                                            : random_cells(sp, s, f, c, used);
        ts[f] = 10 + f;
        write_frag(&arr, s, c, n, ts[f], &names[f]);
    }
    /* at every time: all fragments, about half of them, the first one */
    uint64_t times[3] = {UINT64_MAX, ts[nf / 2], ts[0]};
    for (int ti = 0; ti < 3; ti++) {
        struct tdb_fs *fs = open_fs(&arr, times[ti]);
        if (!fs)
            break;
        size_t k;
        struct cell *all = ref_merge(fs, names, ts, nf, times[ti], &k);
        check_merged(fs, all, k);
        free(all);
        tdb_fs_close(fs);
    }
    check_shuffled(&arr);
    check_threads(&arr);
    for (size_t f = 0; f < nf; f++)
        free(names[f]);
    free(names);
    free(ts);
    free(used);
    free(c);
    tdb_io_free(&arr);
    tdb_schema_free(s);
}

/* The spec merged on one thread, then cut into up to 12 key ranges of
 * 37 cells or more merged on 3 threads: the same bytes either way. */
static void run_spec(const struct spec *sp)
{
    open_threads = 1;
    open_range_cells = 0;
    run_spec_once(sp);
    open_threads = 3;
    open_range_cells = 37;
    run_spec_once(sp);
    open_threads = 1;
    open_range_cells = 0;
}

#define ATTR_V "\"attrs\": [{\"name\": \"v\", \"datatype\": \"INT64\"}]"

/* v and s (var-sized, nullable: s_value) */
#define ATTR_VS "\"attrs\": [{\"name\": \"v\", \"datatype\": \"INT64\"}, " \
    "{\"name\": \"s\", \"datatype\": \"STRING_ASCII\", \"cell_val_num\": \"var\", " \
    "\"nullable\": true}]"

static void test_merge_row_major(void)
{
    struct spec sp = {
        "{\"array_type\": \"sparse\", \"capacity\": 37, \"tile_order\": "
        "\"row-major\", \"cell_order\": \"row-major\", \"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [0, 199], \"tile_extent\": 16},"
        "{\"name\": \"x\", \"datatype\": \"INT64\", \"domain\": [-100, 99], \"tile_extent\": 32}], "
        ATTR_VS "}",
        12, 2000, 0, 200, -100, 200, 1, false, true, 1};
    run_spec(&sp);
}

static void test_merge_col_major_dups(void)
{
    struct spec sp = {
        "{\"array_type\": \"sparse\", \"capacity\": 50, \"allows_duplicates\": true, "
        "\"tile_order\": \"col-major\", \"cell_order\": \"col-major\", \"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT32\", \"domain\": [-60, 59], \"tile_extent\": 7},"
        "{\"name\": \"x\", \"datatype\": \"INT16\", \"domain\": [-300, 300], \"tile_extent\": 100}], "
        ATTR_V "}",
        9, 1500, -60, 120, -300, 100, 6, false, true, 2};
    run_spec(&sp);
}

static void test_merge_hilbert(void)
{
    struct spec sp = {
        "{\"array_type\": \"sparse\", \"capacity\": 29, \"cell_order\": \"hilbert\", "
        "\"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [0, 99]},"
        "{\"name\": \"x\", \"datatype\": \"UINT32\", \"domain\": [0, 99]}], "
        ATTR_V "}",
        10, 800, 0, 100, 0, 100, 1, false, false, 3};
    run_spec(&sp);
}

/* A domain too wide for one 64-bit key: the key is a prefix, cut down. */
static void test_merge_wide_domain(void)
{
    struct spec sp = {
        "{\"array_type\": \"sparse\", \"capacity\": 40, \"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [-4611686018427387904, "
        "4611686018427387903], \"tile_extent\": 1152921504606846976},"
        "{\"name\": \"x\", \"datatype\": \"INT64\", \"domain\": [-4611686018427387904, "
        "4611686018427387903], \"tile_extent\": 4611686018427387904}], "
        ATTR_V "}",
        8, 900, -40, 80, -4611686018427387904LL, 60, 153722867280912930LL, false,
        false, 4};
    run_spec(&sp);
}

/* Exact keys that leave no room for a fragment's rank beside them (2^60
 * of them, 9 fragments): ranks are compared apart. */
static void test_merge_unpacked_keys(void)
{
    struct spec sp = {
        "{\"array_type\": \"sparse\", \"capacity\": 31, \"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [0, 1048575], \"tile_extent\": 1024},"
        "{\"name\": \"x\", \"datatype\": \"INT64\", \"domain\": [0, 1048575], \"tile_extent\": 1024}], "
        ATTR_V "}",
        9, 900, 1048000, 40, 0, 40, 26000, false, true, 7};
    run_spec(&sp);
}

/* A float dimension: keys stop before it (compared in full). */
static void test_merge_float_dim(void)
{
    struct spec sp = {
        "{\"array_type\": \"sparse\", \"capacity\": 33, \"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [0, 49], \"tile_extent\": 10},"
        "{\"name\": \"x\", \"datatype\": \"FLOAT64\", \"domain\": [-50.0, 50.0], \"tile_extent\": 12.5}], "
        ATTR_V "}",
        7, 700, 0, 50, -100, 200, 1, true, true, 5};
    run_spec(&sp);
}

/* More fragments than a one-byte entry can name, and than a read's
 * stack buffer holds. */
static void test_merge_many_fragments(void)
{
    struct spec sp = {
        "{\"array_type\": \"sparse\", \"capacity\": 16, \"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [0, 39], \"tile_extent\": 8},"
        "{\"name\": \"x\", \"datatype\": \"INT64\", \"domain\": [0, 39], \"tile_extent\": 8}], "
        ATTR_VS "}",
        70, 60, 0, 40, 0, 40, 1, false, false, 6};
    run_spec(&sp);
}

static int cell_cmp_values(const void *pa, const void *pb)
{
    const struct cell *a = pa, *b = pb;
    int64_t ka[3] = {(int64_t)tdb_le64(a->y), (int64_t)tdb_le64(a->x), a->v};
    int64_t kb[3] = {(int64_t)tdb_le64(b->y), (int64_t)tdb_le64(b->x), b->v};
    for (int i = 0; i < 3; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* How many cells from the first a[] and b[] have the same values. */
static size_t cells_same(const struct cell *a, const struct cell *b, size_t n)
{
    size_t k = 0;
    while (k < n && cell_cmp_values(&a[k], &b[k]) == 0)
        k++;
    return k;
}

enum { DF_NF = 3, DF_PER = 300, DF_A = 10, DF_B = 250 };

/* Writes DF_NF fragments of DF_PER cells of distinct coordinates over all
 * fragments, each spread over the whole 100 x 100 domain; names[] get
 * their names. */
static void write_spread(struct tdb_io *arr, const struct tdb_schema *s,
                         char **names)
{
    static struct cell c[DF_NF * DF_PER];
    uint32_t perm[10000];
    for (uint32_t i = 0; i < 10000; i++)
        perm[i] = i;
    for (uint32_t i = 10000; i > 1; i--) {
        uint32_t j = (uint32_t)rnd_below(i), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (size_t f = 0; f < DF_NF; f++) {
        for (size_t i = 0; i < DF_PER; i++) {
            struct cell *k = &c[f * DF_PER + i];
            memset(k, 0, sizeof *k);
            put_coord(k->y, s->dims[0].type, perm[f * DF_PER + i] / 100, false);
            put_coord(k->x, s->dims[1].type, perm[f * DF_PER + i] % 100, false);
            k->v = (int64_t)(f * 1000000 + i);
        }
        write_frag(arr, s, c + f * DF_PER, DF_PER, 10 + f, &names[f]);
    }
}

/* Damages fragment `name` as damaged_fragment says.  Its one tile is
 * stored raw at the end of its coordinate files. */
static void damage(struct tdb_io *arr, const char *name, bool twice)
{
    uint64_t to = twice ? DF_B + 1 : DF_A;
    for (int d = 0; d < 2 && name; d++) {
        char path[600];
        uint64_t size = 0;
        uint8_t a[8], b[8];
        snprintf(path, sizeof path, "__fragments/%s/d%d.tdb", name, d);
        CHECK_EQ_INT(arr->ops->size(arr->ctx, path, &size), 0);
        uint64_t at = size - 8 * (uint64_t)DF_PER;
        CHECK_EQ_INT(arr->ops->read_at(arr->ctx, path, at + 8 * to, a, 8), 0);
        CHECK_EQ_INT(arr->ops->read_at(arr->ctx, path, at + 8 * DF_B, b, 8), 0);
        CHECK_EQ_INT(arr->ops->write_at(arr->ctx, path, at + 8 * to, b, 8), 0);
        if (!twice)
            CHECK_EQ_INT(arr->ops->write_at(arr->ctx, path, at + 8 * DF_B, a, 8), 0);
    }
}

/* The cells a merge of the damaged array must give, in want[] sorted by
 * value (from the cells as stored now, checking the damage took);
 * returns how many. */
static size_t damaged_want(struct tdb_io *arr, char **names, bool twice,
                           struct cell *want)
{
    struct cell *st = NULL;
    size_t nst = 0, cap = 0;
    struct tdb_fs *fs = open_fs(arr, UINT64_MAX);
    for (size_t f = 0; f < DF_NF && fs; f++)
        stored_cells(fs, names[f], &st, &nst, &cap);
    tdb_fs_close(fs);
    CHECK_EQ_INT(nst, DF_NF * DF_PER);
    size_t nwant = twice ? DF_NF * DF_PER - 1 : DF_NF * DF_PER;
    if (nst == DF_NF * DF_PER) {
        struct tdb_coords ka, kb;   /* the damage took */
        size_t i = twice ? DF_PER + DF_B : DF_PER + DF_A;
        cell_coords(&st[i], &ka);
        cell_coords(&st[i + 1], &kb);
        CHECK_EQ_INT(tdb_order_cmp(ref_schema, &ka, 0, &kb, 0), twice ? 0 : 1);
        size_t k = 0;
        for (i = 0; i < nst; i++)
            if (!twice || i != DF_PER + DF_B)
                want[k++] = st[i];
        qsort(want, nwant, sizeof *want, cell_cmp_values);
    }
    free(st);
    return nwant;
}

/* Merges arr on one thread (run 0) or in ranges (run 1): the cells in
 * *got (caller frees), *ngot of them, checked to be want[0..nwant) once
 * each. */
static void damaged_merge(struct tdb_io *arr, int run, bool twice,
                          const struct cell *want, size_t nwant,
                          struct cell **got, size_t *ngot)
{
    open_threads = run ? 3 : 1;
    open_range_cells = run ? 37 : 0;
    size_t gcap = 0, n;
    struct tdb_fs *fs = open_fs(arr, UINT64_MAX);
    if (fs)
        stored_cells(fs, NULL, got, ngot, &gcap);
    tdb_fs_close(fs);
    n = *ngot;
    CHECK_EQ_INT(n, nwant);
    /* every cell once: the same multiset as the stored cells */
    struct cell *sorted = malloc((n + 1) * sizeof *sorted);
    if (n)
        memcpy(sorted, *got, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cell_cmp_values);
    size_t same = cells_same(sorted, want, n < nwant ? n : nwant);
    CHECK_EQ_INT(same, nwant);
    if (same != nwant)
        fprintf(stderr, "  %s, %s: cell %zu differs\n",
                twice ? "same coordinates twice" : "out of order",
                run ? "in ranges" : "one merge", same);
    free(sorted);
}

/* An array of 3 fragments whose fragment 1 is damaged: with `twice`
 * its cell B's coordinates are copied onto cell B + 1 (one fragment
 * holding the same coordinates twice, in an array without duplicates:
 * the later one is kept, as the general merge does); else its cells A and
 * B swap coordinates (out of global order: the key ranges would search it
 * as if sorted, and cut where the ranges do not meet; the merge notices
 * either and falls back to the general one).  Neither is written by
 * TileDB; a damaged or foreign array may hold one.  The merge gives every
 * cell once (but the one replaced), in the same bytes whether merged on
 * one thread or cut into ranges. */
static void damaged_fragment(bool twice)
{
    const char *json =
        "{\"array_type\": \"sparse\", \"capacity\": 1000, \"coords_filters\": [], "
        "\"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [0, 99], \"tile_extent\": 10},"
        "{\"name\": \"x\", \"datatype\": \"INT64\", \"domain\": [0, 99], \"tile_extent\": 10}], "
        ATTR_V "}";
    rng_state = 99;
    struct tdb_schema *s = schema_of(json);
    if (!s)
        return;
    ref_schema = s;
    struct tdb_io arr;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&arr), 0);
    CHECK_EQ_INT(tdb_array_create(&arr, s, NULL, 1, &err), 0);
    static struct cell want[DF_NF * DF_PER];
    char *names[DF_NF] = {NULL};
    write_spread(&arr, s, names);
    damage(&arr, names[1], twice);
    size_t nwant = damaged_want(&arr, names, twice, want);
    struct cell *got[2] = {NULL, NULL};
    size_t ngot[2] = {0, 0};
    for (int run = 0; run < 2; run++)
        damaged_merge(&arr, run, twice, want, nwant, &got[run], &ngot[run]);
    /* merged on 1 thread or in ranges: the same cells in the same order */
    CHECK_EQ_INT(ngot[1], ngot[0]);
    CHECK_EQ_INT(cells_same(got[0], got[1], ngot[0] < ngot[1] ? ngot[0] : ngot[1]),
                 ngot[0]);
    open_threads = 1;
    open_range_cells = 0;
    for (int i = 0; i < 2; i++)
        free(got[i]);
    for (size_t f = 0; f < DF_NF; f++)
        free(names[f]);
    tdb_io_free(&arr);
    tdb_schema_free(s);
}

static void test_merge_out_of_order(void)
{
    damaged_fragment(false);
}

static void test_merge_same_coords_twice(void)
{
    damaged_fragment(true);
}

int main(void)
{
    RUN(test_merge_row_major);
    RUN(test_merge_col_major_dups);
    RUN(test_merge_hilbert);
    RUN(test_merge_wide_domain);
    RUN(test_merge_unpacked_keys);
    RUN(test_merge_float_dim);
    RUN(test_merge_many_fragments);
    RUN(test_merge_out_of_order);
    RUN(test_merge_same_coords_twice);
    return unit_done();
}
