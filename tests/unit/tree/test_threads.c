/* test_threads.c: one tree read by many threads at once, as the daemon's
 * multithreaded loop reads it (LAYOUT.md "An array": the data files).
 * Eight threads stat and read random ranges of the same files of a freshly
 * opened tree, the first access to each file racing, and must get the bytes
 * one thread reading alone gets; then the same through readers
 * (tdb_reader_*) and tdb_fs_read at once, under several cache budgets, so
 * that the cache and the decoding threads are built while others wait for
 * them or use them.  Built with ./configure --enable-tsan
 * (scripts/sanitize thread), ThreadSanitizer also checks the state
 * computed on first use (the merged sparse cells, the var-sized
 * checkpoints).  Arrays this test writes itself always run; the corpus
 * arrays run when the corpus is there. */
#include "tiledb_format.h"
#include "model/schema.h"
#include "write/writer.h"
#include "../support.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define PAR_THREADS 8
#define PAR_READS 24
#define PAR_MAX_FILES 1024

static const char *corpus;

/* ------------------------------------------------------------ the files */

struct par_file {
    char path[256];
    uint64_t ino;
    uint8_t *want;              /* what one thread alone reads */
    uint64_t size;
};

struct par_files {
    struct par_file v[PAR_MAX_FILES];
    size_t n;
};

static void par_files_free(struct par_files *fl)
{
    for (size_t i = 0; i < fl->n; i++)
        free(fl->v[i].want);
    fl->n = 0;
}

static bool par_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* The bytes of file ino, read whole by one thread (NULL on error). */
static uint8_t *par_read_whole(struct tdb_fs *fs, uint64_t ino, uint64_t *size,
                               struct tdb_error *err)
{
    struct tdb_stat st;
    if (tdb_fs_stat(fs, ino, &st, err))
        return NULL;
    uint8_t *b = malloc(st.size ? (size_t)st.size : 1);
    size_t got = (size_t)st.size;
    if (!b || unit_fs_copy(fs, ino, 0, b, &got, err) ||
        got != st.size) {
        free(b);
        return NULL;
    }
    *size = st.size;
    return b;
}

/* The data files under folder `ino` (path `dir`) of a reference tree, read
 * whole by this thread alone: every file but the JSON documents and the
 * metadata values.  @return false when a file cannot be read. */
static bool par_collect(struct tdb_fs *fs, uint64_t ino, const char *dir,
                        struct par_files *fl)
{
    struct tdb_error err = {0};
    const char *name;
    uint64_t child;
    for (uint64_t i = 0; !tdb_fs_readdir(fs, ino, i, &name, &child, &err); i++) {
        char path[256];
        snprintf(path, sizeof path, "%s%s%s", dir, *dir ? "/" : "", name);
        struct tdb_stat st;
        if (tdb_fs_stat(fs, child, &st, &err)) {
            fprintf(stderr, "  stat %s: %s\n", path, err.msg);
            return false;
        }
        if (st.is_dir) {
            if (strcmp(name, "__meta") && !par_collect(fs, child, path, fl))
                return false;
            continue;
        }
        if (par_ends_with(path, ".json"))
            continue;
        if (fl->n == PAR_MAX_FILES) {
            fprintf(stderr, "  more than %d files\n", PAR_MAX_FILES);
            return false;
        }
        struct par_file *f = &fl->v[fl->n];
        snprintf(f->path, sizeof f->path, "%s", path);
        if (!(f->want = par_read_whole(fs, child, &f->size, &err))) {
            fprintf(stderr, "  read %s: %s\n", path, err.msg);
            return false;
        }
        fl->n++;
    }
    return true;
}

/* ------------------------------------------------------------ the race */

struct par_run {
    struct tdb_fs *fs;          /* opened fresh: nothing computed yet */
    struct par_files *files;
    bool expect_error;          /* every read and stat must fail */
    pthread_barrier_t start;
};

struct par_thread {
    struct par_run *run;
    unsigned id;
    pthread_t th;
    unsigned failures;
    char first[512];            /* the first failure */
};

/* Failures are kept per thread: the harness's counters are not shared. */
static void par_fail(struct par_thread *t, const char *fmt, ...)
{
    if (!t->failures++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->first, sizeof t->first, fmt, ap);
        va_end(ap);
    }
}

static uint64_t par_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

static void par_stat(struct par_thread *t, const struct par_file *f)
{
    struct tdb_stat st;
    struct tdb_error err = {0};
    int r = tdb_fs_stat(t->run->fs, f->ino, &st, &err);
    if (r)
        par_fail(t, "thread %u: stat %s: %s", t->id, f->path, err.msg);
    else if (st.size != f->size)
        par_fail(t, "thread %u: stat %s: size %llu, alone %llu", t->id,
                 f->path, (unsigned long long)st.size,
                 (unsigned long long)f->size);
}

static void par_reads(struct par_thread *t, const struct par_file *f,
                      uint64_t seed, uint8_t *buf)
{
    for (int i = 0; i < PAR_READS; i++) {
        uint64_t off = f->size ? par_rand(&seed) % f->size : 0;
        uint64_t left = f->size - off;
        uint64_t len = 1 + par_rand(&seed) % (left < 65536 ? (left ? left : 1)
                                                           : 65536);
        if (i == 0) {           /* the whole file, once */
            off = 0;
            len = f->size ? f->size : 1;
        }
        size_t got = (size_t)len;
        struct tdb_error err = {0};
        int r = unit_fs_copy(t->run->fs, f->ino, off, buf, &got, &err);
        uint64_t want = len < f->size - off ? len : f->size - off;
        if (r) {
            par_fail(t, "thread %u: read %s [%llu, +%llu): %s", t->id, f->path,
                     (unsigned long long)off, (unsigned long long)len, err.msg);
            return;
        }
        if (got != want || memcmp(buf, f->want + off, got)) {
            par_fail(t, "thread %u: read %s [%llu, +%llu): %zu bytes differ "
                     "from a read alone (%llu bytes)", t->id, f->path,
                     (unsigned long long)off, (unsigned long long)len, got,
                     (unsigned long long)want);
            return;
        }
    }
}

static void *par_main(void *arg)
{
    struct par_thread *t = arg;
    struct par_files *fl = t->run->files;
    uint64_t cap = 65536;
    for (size_t i = 0; i < fl->n; i++)
        if (fl->v[i].size > cap)
            cap = fl->v[i].size;
    uint8_t *buf = malloc((size_t)cap);
    if (!buf) {
        par_fail(t, "thread %u: out of memory", t->id);
    }
    for (size_t i = 0; i < fl->n; i++) {
        /* all threads at the same file at once: its first access races */
        pthread_barrier_wait(&t->run->start);
        if (!buf)
            continue;
        const struct par_file *f = &fl->v[i];
        if (t->run->expect_error) {
            struct tdb_stat st;
            size_t got = (size_t)f->size;
            if (!unit_fs_copy(t->run->fs, f->ino, 0, buf, &got, NULL))
                par_fail(t, "thread %u: read %s succeeded", t->id, f->path);
            if (!tdb_fs_stat(t->run->fs, f->ino, &st, NULL) &&
                st.size != f->size)
                par_fail(t, "thread %u: stat %s: size %llu after a failure",
                         t->id, f->path, (unsigned long long)st.size);
            continue;
        }
        uint64_t seed = (uint64_t)t->id * 7919u + i * 104729u + 1;
        if (t->id % 2) {        /* half the threads stat first */
            par_stat(t, f);
            par_reads(t, f, seed, buf);
        } else {
            par_reads(t, f, seed, buf);
            par_stat(t, f);
        }
    }
    free(buf);
    return NULL;
}

/* Reads the files of `fl` from PAR_THREADS threads at once through `fs`
 * (fresh); each byte must be what a read alone gave. */
static void par_race(const char *label, struct tdb_fs *fs, struct par_files *fl,
                     bool expect_error)
{
    struct tdb_error err = {0};
    for (size_t i = 0; i < fl->n; i++)
        CHECK_EQ_INT(tdb_fs_resolve(fs, fl->v[i].path, &fl->v[i].ino, &err), 0);
    struct par_run run = {.fs = fs, .files = fl, .expect_error = expect_error};
    struct par_thread th[PAR_THREADS];
    CHECK_EQ_INT(pthread_barrier_init(&run.start, NULL, PAR_THREADS), 0);
    for (unsigned k = 0; k < PAR_THREADS; k++) {
        th[k] = (struct par_thread){.run = &run, .id = k};
        if (pthread_create(&th[k].th, NULL, par_main, &th[k])) {
            fprintf(stderr, "FAIL %s: cannot start a thread\n", unit_cur);
            exit(1);    /* the others wait at the barrier for ever */
        }
    }
    unsigned failures = 0;
    for (unsigned k = 0; k < PAR_THREADS; k++) {
        pthread_join(th[k].th, NULL);
        if (th[k].failures)
            fprintf(stderr, "FAIL %s: %s: %u failures, first: %s\n", unit_cur,
                    label, th[k].failures, th[k].first);
        failures += th[k].failures;
    }
    pthread_barrier_destroy(&run.start);
    CHECK_EQ_INT(failures, 0);
    printf("  %s: %zu files, %d threads\n", label, fl->n, PAR_THREADS);
}

/* Options of the raced trees: sparse merges on 4 threads, cut into key
 * ranges of 50 cells (the references merge on one). */
static void par_race_options(struct tdb_open_options *o)
{
    o->threads = 4;
    o->merge_range_cells = 50;
}

/* The whole test on the tree at the root of io: a reference read alone,
 * then the race on a second, fresh tree. */
static void par_tree(const char *label, const struct tdb_io *io)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.threads = 1;
    struct tdb_error err = {0};
    struct tdb_fs *ref = NULL, *fs = NULL;
    if (tdb_fs_open(&ref, io, &o, &err)) {
        fprintf(stderr, "FAIL %s: open %s: %s\n", unit_cur, label, err.msg);
        unit_cur_failed = 1;
        return;
    }
    struct par_files *fl = calloc(1, sizeof *fl);
    CHECK(fl != NULL);
    if (!fl) {
        tdb_fs_close(ref);
        return;
    }
    bool ok = par_collect(ref, TDB_ROOT_INO, "", fl);
    CHECK(ok);
    CHECK(fl->n > 0);
    tdb_fs_close(ref);
    if (ok && fl->n) {
        par_race_options(&o);
        CHECK_EQ_INT(tdb_fs_open(&fs, io, &o, &err), 0);
        if (fs)
            par_race(label, fs, fl, false);
        tdb_fs_close(fs);
    }
    par_files_free(fl);
    free(fl);
}

/* ------------------------------------------------- arrays written here */

static void par_put(const struct tdb_io *io, const char *path, const void *p,
                    size_t n)
{
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, p, n), 0);
}

/* Cell k's var-sized value in write g: 0 to 22 letters. */
static size_t par_value(uint64_t k, unsigned g, char *out)
{
    size_t n = (size_t)((k * 7 + g * 3) % 23);
    for (size_t i = 0; i < n; i++)
        out[i] = (char)('a' + (k + g + i) % 26);
    return n;
}

/* Stages into folder `dir` of stg the cells with keys first, first+step,
 * ... (n of them): for a sparse array the dimension `dim` (8 or 4 bytes),
 * a var-sized attribute `var`, and a fixed one `fixed` (4 or 8 bytes,
 * nullable when validity). */
static void par_stage(const struct tdb_io *stg, const char *dir,
                      const char *dim, unsigned dim_bytes, uint64_t first,
                      uint64_t step, uint64_t n, unsigned g, const char *var,
                      const char *fixed, unsigned fixed_bytes, bool validity)
{
    struct tdb_buf d = {0}, v = {0}, off = {0}, fx = {0}, val = {0};
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = first + i * step;
        uint8_t b[8];
        char s[32];
        tdb_st64(b, k);
        if (dim)
            tdb_buf_append(&d, b, dim_bytes);
        tdb_st64(b, total);
        tdb_buf_append(&off, b, 8);
        size_t sn = par_value(k, g, s);
        tdb_buf_append(&v, s, sn);
        total += sn;
        tdb_st64(b, k * 10 + g);
        tdb_buf_append(&fx, b, fixed_bytes);
        uint8_t ok = (uint8_t)((k + g) % 5 != 0);
        tdb_buf_append(&val, &ok, 1);
    }
    char p[128];
    stg->ops->mkdir(stg->ctx, dir);
    if (dim) {
        snprintf(p, sizeof p, "%s/%s", dir, dim);
        par_put(stg, p, d.data, d.len);
    }
    snprintf(p, sizeof p, "%s/%s", dir, var);
    par_put(stg, p, v.data, v.len);
    snprintf(p, sizeof p, "%s/%s.offsets", dir, var);
    par_put(stg, p, off.data, off.len);
    snprintf(p, sizeof p, "%s/%s", dir, fixed);
    par_put(stg, p, fx.data, fx.len);
    if (validity) {
        snprintf(p, sizeof p, "%s/%s.validity", dir, fixed);
        par_put(stg, p, val.data, val.len);
    }
    tdb_buf_free(&d);
    tdb_buf_free(&v);
    tdb_buf_free(&off);
    tdb_buf_free(&fx);
    tdb_buf_free(&val);
}

/* A new in-memory array of schema `json`. */
static bool par_create(struct tdb_io *arr, const char *json)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int r = tdb_io_mem(arr);
    if (!r)
        r = tdb_schema_from_json(json, strlen(json), &s, &err);
    if (!r)
        r = tdb_array_create(arr, s, NULL, 1, &err);
    tdb_schema_free(s);
    if (r)
        fprintf(stderr, "FAIL %s: creating an array: %s\n", unit_cur, err.msg);
    CHECK_EQ_INT(r, 0);
    return !r;
}

static void par_commit(const struct tdb_io *arr, const struct tdb_io *stg,
                       const char *dir, uint64_t ts)
{
    char *name = NULL;
    struct tdb_error err = {0};
    int r = unit_write(arr, stg, dir, NULL, ts, 0, &name, &err);
    if (r)
        fprintf(stderr, "FAIL %s: writing %s: %s\n", unit_cur, dir, err.msg);
    CHECK_EQ_INT(r, 0);
    free(name);
}

/* Sparse, no duplicates: three writes, the second overlapping the first
 * (newest wins), over 4096 cells so that the var-sized files have more
 * than one checkpoint; small tiles (capacity 64). */
static const char *const par_sparse_json =
    "{\"array_type\": \"sparse\", \"capacity\": 64, "
    "\"allows_duplicates\": false, \"dims\": [{\"name\": \"d\", "
    "\"datatype\": \"INT64\", \"domain\": [0, 99999], "
    "\"tile_extent\": 1000}], \"attrs\": [{\"name\": \"s\", "
    "\"datatype\": \"STRING_ASCII\", \"cell_val_num\": \"var\"}, "
    "{\"name\": \"n\", \"datatype\": \"INT32\", \"nullable\": true}]}";

static bool par_sparse_array(struct tdb_io *arr)
{
    struct tdb_io stg;
    if (!par_create(arr, par_sparse_json))
        return false;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    par_stage(&stg, "w1", "d", 8, 0, 1, 6000, 1, "s", "n", 4, true);
    par_stage(&stg, "w2", "d", 8, 3000, 2, 3000, 2, "s", "n", 4, true);
    par_stage(&stg, "w3", "d", 8, 50000, 1, 100, 3, "s", "n", 4, true);
    par_commit(arr, &stg, "w1", 10);
    par_commit(arr, &stg, "w2", 20);
    par_commit(arr, &stg, "w3", 30);
    tdb_io_free(&stg);
    return !unit_cur_failed;
}

static void test_written_sparse(void)
{
    struct tdb_io arr;
    if (par_sparse_array(&arr))
        par_tree("written sparse, overlapping", &arr);
    tdb_io_free(&arr);
}

/* Sparse with duplicates, two writes sharing coordinates: the count is
 * known before the merge (the sum of the writes'), the merge still runs on
 * first use. */
static const char *const par_dups_json =
    "{\"array_type\": \"sparse\", \"capacity\": 16, "
    "\"allows_duplicates\": true, \"dims\": [{\"name\": \"d\", "
    "\"datatype\": \"INT32\", \"domain\": [0, 9999], "
    "\"tile_extent\": 100}], \"attrs\": [{\"name\": \"s\", "
    "\"datatype\": \"STRING_ASCII\", \"cell_val_num\": \"var\"}, "
    "{\"name\": \"a\", \"datatype\": \"INT64\"}]}";

static bool par_dups_array(struct tdb_io *arr)
{
    struct tdb_io stg;
    if (!par_create(arr, par_dups_json))
        return false;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    par_stage(&stg, "w1", "d", 4, 0, 1, 3000, 1, "s", "a", 8, false);
    par_stage(&stg, "w2", "d", 4, 2000, 1, 3000, 2, "s", "a", 8, false);
    par_commit(arr, &stg, "w1", 10);
    par_commit(arr, &stg, "w2", 20);
    tdb_io_free(&stg);
    return !unit_cur_failed;
}

static void test_written_sparse_dups(void)
{
    struct tdb_io arr;
    if (par_dups_array(&arr))
        par_tree("written sparse, duplicates", &arr);
    tdb_io_free(&arr);
}

/* Dense: a whole-domain write, then a newer one over part of it. */
static void test_written_dense(void)
{
    static const char *const json =
        "{\"array_type\": \"dense\", \"dims\": [{\"name\": \"x\", "
        "\"datatype\": \"INT64\", \"domain\": [0, 9999], "
        "\"tile_extent\": 128}], \"attrs\": [{\"name\": \"v\", "
        "\"datatype\": \"STRING_ASCII\", \"cell_val_num\": \"var\"}, "
        "{\"name\": \"n\", \"datatype\": \"INT32\", \"nullable\": true}]}";
    struct tdb_io arr, stg;
    if (!par_create(&arr, json))
        return;
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    par_stage(&stg, "w1", NULL, 0, 0, 1, 10000, 1, "v", "n", 4, true);
    par_stage(&stg, "w2", NULL, 0, 2000, 1, 5000, 2, "v", "n", 4, true);
    par_put(&stg, "w2/__subarray.json", "[[2000, 6999]]", 14);
    par_commit(&arr, &stg, "w1", 10);
    par_commit(&arr, &stg, "w2", 20);
    if (!unit_cur_failed)
        par_tree("written dense, overlapping", &arr);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* The merged view's files of all (not those of one fragment) in top,
 * not read: all must fail. */
static void par_top_files(const struct par_files *all, struct par_files *top)
{
    for (size_t i = 0; i < all->n; i++) {
        if (!strchr(all->v[i].path, '/')) {
            top->v[top->n] = all->v[i];
            top->v[top->n++].want = NULL;
        }
    }
}

/* The dimension file of arr's second write: its path in dpath (of
 * `cap` bytes), its bytes returned (caller frees), *dsize of them. */
static uint8_t *par_second_dim(const struct tdb_io *arr, char *dpath,
                               size_t cap, uint64_t *dsize)
{
    struct tdb_names frags = {0};
    struct tdb_error err = {0};
    dpath[0] = 0;
    CHECK_EQ_INT(tdb_io_names(arr, "__fragments", &frags, &err), 0);
    for (size_t i = 0; i < frags.n; i++)
        if (!strncmp(frags.v[i], "__20_20_", 8))
            snprintf(dpath, cap, "__fragments/%s/d0.tdb", frags.v[i]);
    tdb_names_free(&frags);
    *dsize = 0;
    CHECK(dpath[0] && !arr->ops->size(arr->ctx, dpath, dsize) && *dsize > 1000);
    uint8_t *dbytes = malloc(*dsize ? (size_t)*dsize : 1);
    CHECK(dbytes && !arr->ops->read_at(arr->ctx, dpath, 0, dbytes, (size_t)*dsize));
    return dbytes;
}

/* A merge that fails half-way (a tile of the second write cut short) is
 * not remembered: while the file is short every thread's read fails and a
 * stat either fails or gives the whole size (never the cells merged before
 * the failure); once the file is whole again the next reads merge afresh
 * and read right. */
static void par_failed_merge(const char *label, const struct tdb_io *arr)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    struct tdb_error err = {0};
    struct tdb_fs *ref = NULL, *fs = NULL;
    struct par_files *all = calloc(1, sizeof *all), *top = calloc(1, sizeof *top);
    CHECK(all && top);
    CHECK_EQ_INT(tdb_fs_open(&ref, arr, &o, &err), 0);
    bool ok = all && top && ref && par_collect(ref, TDB_ROOT_INO, "", all);
    CHECK(ok);
    tdb_fs_close(ref);
    if (ok)
        par_top_files(all, top);
    CHECK(top && top->n >= 4);
    /* the dimension file of the second write, cut to half its size */
    char dpath[512];
    uint64_t dsize;
    uint8_t *dbytes = par_second_dim(arr, dpath, sizeof dpath, &dsize);
    if (!ok || !top->n || !dbytes || !dsize || unit_cur_failed)
        goto out;
    CHECK_EQ_INT(arr->ops->remove(arr->ctx, dpath), 0);
    par_put(arr, dpath, dbytes, (size_t)(dsize / 2));

    par_race_options(&o);
    CHECK_EQ_INT(tdb_fs_open(&fs, arr, &o, &err), 0);
    if (!fs)
        goto out;
    uint64_t ino;
    uint8_t buf[64];
    size_t got = sizeof buf;
    CHECK_EQ_INT(tdb_fs_resolve(fs, "s", &ino, &err), 0);
    int r = unit_fs_copy(fs, ino, 0, buf, &got, &err);
    CHECK(r != 0);
    CHECK_EQ_INT(got, 0);
    char what[128];
    snprintf(what, sizeof what, "%s: merge failing", label);
    par_race(what, fs, top, true);

    /* whole again: every file reads as it does alone */
    CHECK_EQ_INT(arr->ops->remove(arr->ctx, dpath), 0);
    par_put(arr, dpath, dbytes, (size_t)dsize);
    snprintf(what, sizeof what, "%s: merge retried", label);
    par_race(what, fs, all, false);
out:
    tdb_fs_close(fs);
    free(dbytes);
    if (all)
        par_files_free(all);
    free(all);
    free(top);
}

static void test_failed_merge_retried(void)
{
    struct tdb_io arr;
    if (par_sparse_array(&arr))
        par_failed_merge("no duplicates", &arr);
    tdb_io_free(&arr);
    /* the count was known before the merge: a failed merge leaves it */
    if (par_dups_array(&arr))
        par_failed_merge("duplicates", &arr);
    tdb_io_free(&arr);
}

/* ---------------------------------------------------------- the corpus */

static void test_corpus(void)
{
    static const char *const cases[] = {
        "dense_var_nullable",       /* dense, var-sized and nullable */
        "dense_fragments_overlap",  /* dense, four overlapping writes */
        "sparse_int64_2d",          /* sparse merge, shared coordinates */
        "sparse_string_dim",        /* var-sized dimension */
        "sparse_dups",              /* count known before the merge */
        "sparse_delete",            /* delete conditions in the merge */
        "sparse_hilbert",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/array", corpus, cases[i]);
        struct tdb_io io;
        CHECK_EQ_INT(tdb_io_posix(&io, path), 0);
        par_tree(cases[i], &io);
        tdb_io_free(&io);
    }
}

/* ------------------------------------- readers and plain reads at once */

struct rd_job {
    struct tdb_fs *fs;
    const char *path;
    const uint8_t *want;
    uint64_t size;
    unsigned seed;
    bool reader;
    pthread_barrier_t *go;
    int bad;
};

static void *rd_worker(void *arg)
{
    struct rd_job *j = arg;
    struct tdb_error err = {0};
    uint64_t ino;
    pthread_barrier_wait(j->go);
    /* stat first, racing the others' first reads */
    struct tdb_stat st;
    if (tdb_fs_resolve(j->fs, j->path, &ino, &err) ||
        tdb_fs_stat(j->fs, ino, &st, &err) || st.size != j->size) {
        j->bad = 1;
        return NULL;
    }
    struct tdb_reader *rd = NULL;
    if (j->reader && tdb_reader_open(&rd, j->fs, ino, &err)) {
        j->bad = 1;
        return NULL;
    }
    uint8_t buf[3000];
    unsigned s = j->seed;
    for (int k = 0; k < 60 && j->size; k++) {
        s = s * 1103515245u + 12345u;
        uint64_t off = (s >> 4) % j->size;
        size_t len = (s >> 8) % sizeof buf, got = len;
        if (k == 0) /* the sequential start of a reader */
            off = 0;
        int r = rd ? unit_reader_copy(rd, off, buf, len, &got, &err)
                   : unit_fs_copy(j->fs, ino, off, buf, &got, &err);
        size_t expect = off + len > j->size ? (size_t)(j->size - off) : len;
        if (r || got != expect || memcmp(buf, j->want + off, got) != 0) {
            j->bad = 1;
            break;
        }
    }
    tdb_reader_close(rd);
    return NULL;
}

/* The whole file `path` of the array at `dir`, read by one thread in a tree of its own. */
static uint8_t *rd_reference(const char *dir, const char *path, uint64_t *size)
{
    struct tdb_io io;
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.threads = 1;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    uint8_t *b = NULL;
    if (tdb_io_posix(&io, dir))
        return NULL;
    uint64_t ino;
    struct tdb_stat st;
    if (!tdb_fs_open(&fs, &io, &o, &err) &&
        !tdb_fs_resolve(fs, path, &ino, &err) &&
        !tdb_fs_stat(fs, ino, &st, &err) && (b = malloc(st.size + 1))) {
        size_t got = st.size;
        if (unit_fs_copy(fs, ino, 0, b, &got, &err) || got != st.size) {
            free(b);
            b = NULL;
        }
        *size = st.size;
    }
    tdb_fs_close(fs);
    tdb_io_free(&io);
    return b;
}

/* PAR_THREADS threads open nothing but share one fresh tree of `name` and
 * race on `files` (half through readers, half through tdb_fs_read). */
static void rd_race(const char *name, const char *const *files, uint64_t cache)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s/array", corpus, name);
    int nf = 0;
    while (files[nf])
        nf++;
    uint8_t *want[8] = {0};
    uint64_t size[8] = {0};
    for (int i = 0; i < nf; i++) {
        want[i] = rd_reference(dir, files[i], &size[i]);
        CHECK(want[i] != NULL);
        if (!want[i])
            goto out;
    }
    for (int round = 0; round < 3; round++) {
        struct tdb_io io;
        struct tdb_open_options o;
        tdb_open_options_init(&o);
        o.cache_bytes = cache;
        o.threads = 2;
        struct tdb_fs *fs = NULL;
        struct tdb_error err = {0};
        CHECK_EQ_INT(tdb_io_posix(&io, dir), 0);
        CHECK_EQ_INT(tdb_fs_open(&fs, &io, &o, &err), 0);
        if (!fs) {
            tdb_io_free(&io);
            goto out;
        }
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, PAR_THREADS);
        struct rd_job jobs[PAR_THREADS];
        pthread_t th[PAR_THREADS];
        for (int t = 0; t < PAR_THREADS; t++) {
            int f = (t + round) % nf;
            jobs[t] = (struct rd_job){fs, files[f], want[f], size[f],
                                   (unsigned)(t * 7919 + round), t % 2 == 0,
                                   &go, 0};
            pthread_create(&th[t], NULL, rd_worker, &jobs[t]);
        }
        for (int t = 0; t < PAR_THREADS; t++) {
            pthread_join(th[t], NULL);
            if (jobs[t].bad)
                fprintf(stderr, "%s/%s: thread %d saw other bytes\n", name,
                        jobs[t].path, t);
            CHECK(!jobs[t].bad);
        }
        pthread_barrier_destroy(&go);
        tdb_fs_close(fs);
        tdb_io_free(&io);
    }
out:
    for (int i = 0; i < nf; i++)
        free(want[i]);
}

static void test_var_sized(void)
{
    static const char *const f1[] = {"s_ascii", "s_ascii.offsets", "n_str",
                                      NULL};
    rd_race("dense_var_nullable", f1, 0);
    rd_race("dense_var_nullable", f1, 1);
    static const char *const f2[] = {"u", "u.offsets", "v", NULL};
    rd_race("dense_3d", f2, 1 << 16);
}

static void test_sparse_merge(void)
{
    static const char *const f1[] = {"a", "x", "s", "s.offsets", NULL};
    rd_race("sparse_dups", f1, 0);
    static const char *const f2[] = {"a", "x", NULL};
    rd_race("sparse_delete", f2, 1);
    rd_race("consolidated_sparse_vacuumed", f2, 0);
}

static void test_dense(void)
{
    static const char *const f1[] = {"i32", "f64", "u8", NULL};
    rd_race("dense_2d_all_types", f1, 1);
    static const char *const f2[] = {"a", "c", "c.offsets", NULL};
    rd_race("dense_fragments_overlap", f2, 0);
}

int main(void)
{
    RUN(test_written_sparse);
    RUN(test_written_sparse_dups);
    RUN(test_written_dense);
    RUN(test_failed_merge_retried);
    corpus = unit_corpus();
    RUN_CORPUS(test_corpus);
    RUN_CORPUS(test_var_sized);
    RUN_CORPUS(test_sparse_merge);
    RUN_CORPUS(test_dense);
    return unit_done();
}
