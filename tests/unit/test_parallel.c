/* test_parallel.c: many threads using one tree at once, each starting
 * with the first access to a file (the state built on first use - a
 * var-sized file's size and checkpoints, a sparse merge, the cache, the
 * decoding threads - is built while others wait for it or use it): every
 * thread sees the bytes one thread alone sees.  Run it under
 * ThreadSanitizer (./configure --enable-tsan, scripts/sanitize thread) to
 * check the synchronisation itself. */
#include "tiledb_format.h"
#include "support.h"

#include <pthread.h>
#include <stdlib.h>

#define NTHREADS 8

/* A read of rd copied into buf (tdb_reader_read into a sink that only
 * copies). */
static int reader_copy(struct tdb_reader *rd, uint64_t off, void *buf,
                       size_t len, size_t *got, struct tdb_error *err)
{
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
    int r = tdb_reader_read(rd, off, len, &s, err);
    *got = s.got;
    tdb_sink_release(&s);
    return r;
}

static const char *corpus;

struct job {
    struct tdb_fs *fs;
    const char *path;
    const uint8_t *want;
    uint64_t size;
    unsigned seed;
    bool reader;
    pthread_barrier_t *go;
    int bad;
};

static void *worker(void *arg)
{
    struct job *j = arg;
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
        size_t len = (s >> 8) % sizeof buf, got = 0;
        if (k == 0) /* the sequential start of a reader */
            off = 0;
        int r = rd ? reader_copy(rd, off, buf, len, &got, &err)
                   : tdb_fs_read(j->fs, ino, off, buf, len, &got, &err);
        size_t expect = off + len > j->size ? (size_t)(j->size - off) : len;
        if (r || got != expect || memcmp(buf, j->want + off, got) != 0) {
            j->bad = 1;
            break;
        }
    }
    tdb_reader_close(rd);
    return NULL;
}

/* The whole file read by one thread in a tree of its own. */
static uint8_t *reference(const char *dir, const char *path, uint64_t *size)
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
        size_t got;
        if (tdb_fs_read(fs, ino, 0, b, st.size, &got, &err) || got != st.size) {
            free(b);
            b = NULL;
        }
        *size = st.size;
    }
    tdb_fs_close(fs);
    tdb_io_free(&io);
    return b;
}

/* NTHREADS threads open nothing but share one fresh tree of `name` and
 * race on `files` (half through readers, half through tdb_fs_read). */
static void race(const char *name, const char *const *files, uint64_t cache)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s/array", corpus, name);
    int nf = 0;
    while (files[nf])
        nf++;
    uint8_t *want[8] = {0};
    uint64_t size[8] = {0};
    for (int i = 0; i < nf; i++) {
        want[i] = reference(dir, files[i], &size[i]);
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
        pthread_barrier_init(&go, NULL, NTHREADS);
        struct job jobs[NTHREADS];
        pthread_t th[NTHREADS];
        for (int t = 0; t < NTHREADS; t++) {
            int f = (t + round) % nf;
            jobs[t] = (struct job){fs, files[f], want[f], size[f],
                                   (unsigned)(t * 7919 + round), t % 2 == 0,
                                   &go, 0};
            pthread_create(&th[t], NULL, worker, &jobs[t]);
        }
        for (int t = 0; t < NTHREADS; t++) {
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
    race("dense_var_nullable", f1, 0);
    race("dense_var_nullable", f1, 1);
    static const char *const f2[] = {"u", "u.offsets", "v", NULL};
    race("dense_3d", f2, 1 << 16);
}

static void test_sparse_merge(void)
{
    static const char *const f1[] = {"a", "x", "s", "s.offsets", NULL};
    race("sparse_dups", f1, 0);
    static const char *const f2[] = {"a", "x", NULL};
    race("sparse_delete", f2, 1);
    race("consolidated_sparse_vacuumed", f2, 0);
}

static void test_dense(void)
{
    static const char *const f1[] = {"i32", "f64", "u8", NULL};
    race("dense_2d_all_types", f1, 1);
    static const char *const f2[] = {"a", "c", "c.offsets", NULL};
    race("dense_fragments_overlap", f2, 0);
}

int main(void)
{
    corpus = unit_corpus();
    RUN_CORPUS(test_var_sized);
    RUN_CORPUS(test_sparse_merge);
    RUN_CORPUS(test_dense);
    return unit_done();
}
