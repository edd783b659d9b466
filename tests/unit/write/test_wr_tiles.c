/* test_wr_tiles.c: the tile jobs of a fragment write on a pool of threads
 * (format/write/wr_tiles.c): the same fragment bytes and the same I/O
 * calls whatever the number of threads, and zstd's reused contexts giving
 * the bytes of fresh ones. */
#include "write/writer.h"
#include "model/arraydir.h"
#include "../support.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fixture.h"

/* ------------------------------------------------------------- threads */

/* The whole domain of dense_var_nullable (20 tiles of 4 attributes, 80
 * jobs) staged in folder "w" of stg. */
static void stage_var_nullable_domain(json_t *c, struct tdb_io *stg)
{
    CHECK_EQ_INT(tdb_io_mem(stg), 0);
    stg->ops->mkdir(stg->ctx, "w");
    struct sfiles s = {.n = 0};
    make_attr_files(json_object_get(c, "fields"), 12 * 14, 7, &s);
    for (size_t k = 0; k < s.n; k++) {
        char *p = tdb_path_join("w", s.v[k].name);
        put(stg, p, s.v[k].data, (size_t)s.v[k].size);
        free(p);
    }
    sfiles_free(&s);
}

/* The fragment folders fa of array a and fb of array b hold the same files
 * with the same bytes. */
static bool same_fragment(const struct tdb_io *a, const char *fa,
                          const struct tdb_io *b, const char *fb,
                          const char *what)
{
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "__fragments/%s", fa);
    snprintf(pb, sizeof pb, "__fragments/%s", fb);
    struct tdb_names na = {0}, nb = {0};
    bool ok = !tdb_io_names(a, pa, &na, NULL) && !tdb_io_names(b, pb, &nb, NULL) &&
              na.n == nb.n && na.n > 1;
    if (!ok)
        fprintf(stderr, "  %s: %zu files, expected %zu\n", what, nb.n, na.n);
    for (size_t i = 0; ok && i < na.n; i++) {
        char *x = tdb_path_join(pa, na.v[i]), *y = tdb_path_join(pb, na.v[i]);
        uint8_t *da = NULL, *db = NULL;
        uint64_t sa = 0, sb = 0;
        char w[1200];
        snprintf(w, sizeof w, "%s: %s", what, na.v[i]);
        ok = !tdb_io_read_file(a, x, &da, &sa, NULL) &&
             !tdb_io_read_file(b, y, &db, &sb, NULL) &&
             unit_same_bytes(w, db, sb, da, sa);
        if (!ok)
            fprintf(stderr, "  %s differs or is missing\n", w);
        free(da);
        free(db);
        free(x);
        free(y);
    }
    tdb_names_free(&na);
    tdb_names_free(&nb);
    return ok;
}

/* Commits staged folder `dir` of stg into a with 1 thread and into b with
 * `threads`, at timestamp ts: the two fragments are the same bytes. */
static void commit_both(struct tdb_io *a, struct tdb_io *b, struct tdb_io *stg,
                        const char *dir, const uint8_t *key, uint64_t ts,
                        unsigned threads, const char *what)
{
    char *na = NULL, *nb = NULL;
    struct tdb_error err = {0};
    int r = unit_write(a, stg, dir, key, ts, 1, &na, &err);
    if (r)
        fprintf(stderr, "  %s, 1 thread: %s\n", what, err.msg);
    CHECK_EQ_INT(r, 0);
    /* the staged folder's marker names the first commit: not in b */
    r = unit_write(b, stg, dir, key, ts, threads, &nb, &err);
    if (r)
        fprintf(stderr, "  %s, %u threads: %s\n", what, threads, err.msg);
    CHECK_EQ_INT(r, 0);
    CHECK(na && nb && strcmp(na, nb) != 0);
    if (na && nb)
        CHECK(same_fragment(a, na, b, nb, what));
    free(na);
    free(nb);
}

/* Every fragment of corpus cases (dense in every tile and cell order,
 * sparse with Hilbert order and string dimensions, var-sized, nullable,
 * filter chains, chunked tiles) and a dense write of 20 tiles of 4
 * attributes (80 jobs, many more than the 2 per thread in flight),
 * committed with threads=1 and threads=2, 3, 8: every file of the fragment
 * folders is the same, byte for byte.  (Not the encrypted case: AES-GCM
 * draws a new IV per tile.) */
static void test_threads_same_bytes(void)
{
    static const char *const cases[] = {
        "dense_var_nullable", "dense_2d_all_types", "dense_3d",
        "dense_2d_colmajor", "dense_2d_tile_row_cell_col", "chunked_tiles",
        "filter_chains", "sparse_hilbert", "sparse_string_dim",
        "sparse_mixed_dims", "sparse_dups", NULL};
    static const unsigned threads[] = {2, 3, 8};
    for (int i = 0; cases[i]; i++) {
        json_t *c = load_case(cases[i]);
        CHECK(c != NULL);
        if (!c)
            continue;
        struct tdb_io a, b, stg;
        CHECK_EQ_INT(array_from_case(cases[i], &a), 0);
        CHECK_EQ_INT(array_from_case(cases[i], &b), 0);
        CHECK_EQ_INT(tdb_io_mem(&stg), 0);
        json_t *frags = json_object_get(c, "fragments");
        for (size_t k = 0; k < json_array_size(frags); k++) {
            char dir[32], what[300];
            snprintf(dir, sizeof dir, "s%zu", k);
            snprintf(what, sizeof what, "%s fragment %zu", cases[i], k);
            stage_case_frag(c, cases[i], k, &stg, dir);
            commit_both(&a, &b, &stg, dir, NULL, 10 + k, threads[k % 3], what);
        }
        tdb_io_free(&stg);
        tdb_io_free(&a);
        tdb_io_free(&b);
        json_decref(c);
    }
    /* dense_var_nullable (12 x 14, tiles 3 x 3): the whole domain */
    json_t *c = load_case("dense_var_nullable");
    CHECK(c != NULL);
    if (!c)
        return;
    struct tdb_io a, b, stg;
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &a), 0);
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &b), 0);
    stage_var_nullable_domain(c, &stg);
    for (size_t k = 0; k < 3; k++)
        commit_both(&a, &b, &stg, "w", NULL, 20 + k, threads[k],
                    "dense_var_nullable, whole domain");
    tdb_io_free(&stg);
    tdb_io_free(&a);
    tdb_io_free(&b);
    json_decref(c);
}

/* A view of a backend that logs its mutating calls, one line each (the
 * call, the path, the offset, the length, a hash of the bytes); the
 * writer syncs its files from several threads. */
struct rec {
    const struct tdb_io *inner;
    struct tdb_buf log;
    pthread_mutex_t lock;
};

static void rec_line(struct rec *r, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->lock);
    tdb_buf_append(&r->log, line, (size_t)n);
    pthread_mutex_unlock(&r->lock);
}

static int rec_read_at(void *c, const char *path, uint64_t off, void *buf,
                       size_t len)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->read_at(in->ctx, path, off, buf, len);
}

static int rec_size(void *c, const char *path, uint64_t *size)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->size(in->ctx, path, size);
}

static int rec_list(void *c, const char *path, tdb_io_list_fn fn, void *arg)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->list(in->ctx, path, fn, arg);
}

static int rec_is_dir(void *c, const char *path, bool *is_dir)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->is_dir(in->ctx, path, is_dir);
}

static int rec_write_at(void *c, const char *path, uint64_t off,
                        const void *buf, size_t len)
{
    struct rec *r = c;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const uint8_t *)buf)[i]) * 1099511628211ull;
    rec_line(r, "write %s %llu %zu %016llx\n", path, (unsigned long long)off,
             len, (unsigned long long)h);
    return r->inner->ops->write_at(r->inner->ctx, path, off, buf, len);
}

static int rec_mkdir(void *c, const char *path)
{
    struct rec *r = c;
    rec_line(r, "mkdir %s\n", path);
    return r->inner->ops->mkdir(r->inner->ctx, path);
}

static int rec_rename(void *c, const char *from, const char *to)
{
    struct rec *r = c;
    rec_line(r, "rename %s %s\n", from, to);
    return r->inner->ops->rename(r->inner->ctx, from, to);
}

static int rec_remove(void *c, const char *path)
{
    struct rec *r = c;
    rec_line(r, "remove %s\n", path);
    return r->inner->ops->remove(r->inner->ctx, path);
}

static int rec_sync(void *c, const char *path)
{
    struct rec *r = c;
    rec_line(r, "sync %s\n", path);
    return r->inner->ops->sync ? r->inner->ops->sync(r->inner->ctx, path) : 0;
}

static const struct tdb_io_ops rec_ops = {
    .read_at = rec_read_at, .size = rec_size, .list = rec_list,
    .is_dir = rec_is_dir, .write_at = rec_write_at, .mkdir = rec_mkdir,
    .rename = rec_rename, .remove = rec_remove, .sync = rec_sync,
};

static int rec_cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts each run of "sync " lines of text in place: the writer syncs a
 * fragment's files at once, in no order. */
static void rec_sort_syncs(char *text)
{
    char *p = text;
    while (*p) {
        if (strncmp(p, "sync ", 5)) {
            char *nl = strchr(p, '\n');
            p = nl ? nl + 1 : p + strlen(p);
            continue;
        }
        char *lines[256], *q = p;
        size_t n = 0;
        while (*q && !strncmp(q, "sync ", 5) && n < 256) {
            char *nl = strchr(q, '\n');
            size_t l = nl ? (size_t)(nl - q) + 1 : strlen(q);
            lines[n++] = strndup(q, l);
            q += l;
        }
        qsort(lines, n, sizeof *lines, rec_cmp_lines);
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(lines[i]);
            memcpy(p, lines[i], l);
            p += l;
            free(lines[i]);
        }
    }
}

/* The log with every occurrence of `name` replaced by "F" (a new string),
 * its runs of syncs sorted. */
static char *rec_text(const struct rec *r, const char *name)
{
    size_t n = r->log.len, k = strlen(name);
    char *out = malloc(n + 1), *o = out;
    const char *p = (const char *)r->log.data, *end = p + n;
    while (p < end) {
        if (k && (size_t)(end - p) >= k && !memcmp(p, name, k)) {
            *o++ = 'F';
            p += k;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    rec_sort_syncs(out);
    return out;
}

/* The log of the storage calls of a write of stg's folder w with
 * `threads` threads (the fragment's name shown as "F"). */
static char *threads_log(const struct tdb_io *stg, unsigned threads)
{
    struct tdb_io arr;
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &arr), 0);
    struct rec r = {&arr, {0}, PTHREAD_MUTEX_INITIALIZER};
    struct tdb_io io = {&rec_ops, &r};
    char *nm = NULL;
    struct tdb_error err = {0};
    int rc = unit_write(&io, stg, "w", NULL, 9, threads, &nm, &err);
    if (rc)
        fprintf(stderr, "  %u threads: %s\n", threads, err.msg);
    CHECK_EQ_INT(rc, 0);
    char *log = rec_text(&r, nm ? nm : "?");
    tdb_buf_free(&r.log);
    free(nm);
    tdb_io_free(&arr);
    return log;
}

/* A write of stg's folder w with th threads whose call `at` fails: it
 * fails (once), makes count calls (into *count1 with one thread, else
 * compared with it), and leaves either nothing or one committed fragment
 * (then 1, else 0). */
static size_t threads_fail_at(const struct tdb_io *stg, unsigned th,
                              uint64_t at, uint64_t *count1)
{
    struct tdb_io arr, fa;
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &arr), 0);
    struct tdb_io_fault f = {.fail_at = at};
    CHECK_EQ_INT(tdb_io_faulty(&fa, &arr, &f), 0);
    char *nm = NULL;
    struct tdb_error err = {0};
    int rc = unit_write(&fa, stg, "w", NULL, 9, th, &nm, &err);
    CHECK_EQ_INT(f.failed, 1);
    /* as many calls (the cleanup's included) as with 1 thread */
    if (th == 1)
        *count1 = f.count;
    else
        CHECK_EQ_INT(f.count, *count1);
    struct tdb_names fr = {0}, cm = {0};
    tdb_io_names(&arr, "__fragments", &fr, NULL);
    tdb_io_names(&arr, "__commits", &cm, NULL);
    if (rc)
        CHECK(nm == NULL);
    CHECK_EQ_INT(fr.n, rc ? 0 : 1);
    CHECK_EQ_INT(cm.n, rc ? 0 : 1);
    tdb_names_free(&fr);
    tdb_names_free(&cm);
    free(nm);
    tdb_io_free(&fa);
    tdb_io_free(&arr);
    return !rc;
}

/* With threads=4 the array's storage sees the very calls of threads=1, in
 * the same order (but the fragment's syncs, at once in any order), with
 * the same bytes; and a commit whose n-th call fails,
 * for every n, with jobs still in flight, makes as many calls as with one
 * thread (it stops at the failure and cleans up), returns the error (or,
 * failing past the commit, commits) and leaves no fragment folder and no
 * commit file. */
static void test_threads_same_calls(void)
{
    json_t *c = load_case("dense_var_nullable");
    CHECK(c != NULL);
    if (!c)
        return;
    struct tdb_io stg;
    stage_var_nullable_domain(c, &stg);
    char *logs[2];
    logs[0] = threads_log(&stg, 1);
    logs[1] = threads_log(&stg, 4);
    size_t writes = 0;
    for (const char *p = logs[0]; (p = strstr(p, "write ")); p++)
        writes++;
    CHECK(writes >= 80);
    if (strcmp(logs[0], logs[1]))
        fprintf(stderr, "  1 thread:\n%s  4 threads:\n%s", logs[0], logs[1]);
    CHECK(!strcmp(logs[0], logs[1]));
    size_t calls = 0;
    for (const char *p = logs[0]; *p; p++)
        calls += *p == '\n';
    free(logs[0]);
    free(logs[1]);
    size_t committed = 0;
    uint64_t count1 = 0;
    /* odd runs: 1 thread, even: 4 threads, the same call failing */
    for (uint64_t n = 1; n <= 2 * calls; n++)
        committed += threads_fail_at(&stg, n % 2 ? 1 : 4, (n + 1) / 2,
                                     &count1);
    /* only a failure after the rename into __commits still commits */
    CHECK(committed <= 2);
    tdb_io_free(&stg);
    json_decref(c);
}

/* The writer's threads keep a ZSTD context in their scratch from chunk to
 * chunk and tile to tile: tiles of several chunks, of several contents, at
 * levels from fast to the optimal parsers, interleaved on one scratch,
 * encode to the same bytes as with a fresh context for each chunk. */
static void test_zstd_context_same_bytes(void)
{
    static const int levels[] = {3, -5, 1, 6, 12, 17, 3};
    size_t n = 200000;
    uint8_t *data[3];
    for (int k = 0; k < 3; k++)
        data[k] = malloc(n);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        float v = (float)((i % 997) * 0.25) + (float)(x >> 29);
        memcpy(data[0] + (i & ~(size_t)3), &v, 4); /* noisy floats */
        data[1][i] = (uint8_t)("the quick brown fox "[i % 20] ^ (i / 4096));
        data[2][i] = (uint8_t)(x >> 24);           /* incompressible */
    }
    struct tdb_scratch *sc = calloc(1, sizeof *sc);
    for (size_t li = 0; li < sizeof levels / sizeof *levels; li++)
        for (int k = 0; k < 3; k++) {
            struct tdb_filter f;
            tdb_filter_init_level(&f, TDB_FILTER_ZSTD, levels[li]);
            struct tdb_pipeline p = {.max_chunk_size = 65536, .n = 1, .f = &f};
            /* the slow parsers on a shorter tile */
            size_t len = levels[li] >= 12 ? n / 4 : n;
            struct tdb_tile_desc d = {.datatype = TDB_UINT8, .cell_size = 1,
                                      .version = TDB_WRITE_VERSION,
                                      .what = "zstd tile"};
            struct tdb_buf fresh = {0}, kept = {0};
            struct tdb_error err = {0};
            CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, data[k], len,
                                             &fresh, &err), 0);
            d.scratch = sc;
            CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, data[k], len,
                                             &kept, &err), 0);
            CHECK(sc->filter_state[TDB_FILTER_ZSTD] != NULL);
            CHECK_EQ_INT(kept.len, fresh.len);
            CHECK(kept.len == fresh.len &&
                  !memcmp(kept.data, fresh.data, fresh.len));
            CHECK(fresh.len > 8 && tdb_le64(fresh.data) == (len + 65535) / 65536);
            tdb_buf_free(&fresh);
            tdb_buf_free(&kept);
        }
    tdb_scratch_free(sc);
    for (int k = 0; k < 3; k++)
        free(data[k]);
}

int main(void)
{
    corpus = unit_corpus();
    if (!unit_corpus_found())
        return 77; /* every test here needs it (the line is printed) */
    RUN(test_threads_same_bytes);
    RUN(test_threads_same_calls);
    RUN(test_zstd_context_same_bytes);
    return unit_done();
}
