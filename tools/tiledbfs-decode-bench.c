/* tiledbfs-decode-bench.c: the in-process decoder limit of scripts/bench: one mounted file read through the engine alone, no FUSE. */
/*
 *   tiledbfs-decode-bench [-t THREADS] [-r RANGE] [-s REQUEST] [-l LIMIT]
 *                         [-n PASSES] [-R] [-o OPTIONS] SOURCE PATH
 *
 * Opens SOURCE with tdb_fs_open (public API only: format/tiledb_format.h)
 * and reads file PATH of its tree from THREADS threads (default: the
 * online CPUs).  The file is cut into RANGE-byte ranges (default 16 MiB);
 * thread k reads ranges k, k + THREADS, k + 2 * THREADS, ... with
 * tdb_fs_read calls of REQUEST bytes (default: RANGE) into a buffer of its
 * own.  -l reads only the first LIMIT bytes of the file.  The same tree
 * (and its decoded-tile cache) serves every pass.  -R reads through a
 * reader per thread (tdb_reader_read), as the mount and tiledbfs-cat do:
 * tiles pinned row by row and decoded ahead (without it, tdb_fs_read
 * pins nothing: a cache smaller than a row then decodes a tile per read).
 * -o takes the options of the mount contract (mount/options.c:
 * cache_size=, timestamp=, threads=, key_file=).
 *
 * Prints one line per pass, "key=value" separated by spaces:
 *   pass=1 threads=2 bytes=... seconds=... mbps=... decodes=... hits=...
 *   misses=... evictions=... decodes_per_mib=... cache_budget=...
 *   reused=...
 * (mbps is 10^6 bytes per second; the cache counters are those of the
 * pass alone; reused: decodes into the memory of tiles freed before).  Errors: one line on stderr, exit status 1.
 */
#define TDB_UNSTABLE_API /* tdb_fs_cache_stats */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../mount/mount.h"
#include "tiledb_format.h"

#define DBENCH_MAX_THREADS 256

struct dbench {
    struct tdb_fs *fs;
    uint64_t ino, size, range, request, limit;
    unsigned threads;
    bool reader;                /* -R */
};

struct dbench_worker {
    struct dbench *b;
    unsigned index;
    pthread_t tid;
    uint64_t bytes;
    int code;
    struct tdb_error err;
};

static void dbench_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [-t THREADS] [-r RANGE] [-s REQUEST] [-l LIMIT]\n"
            "       [-n PASSES] [-R] [-o OPTIONS] SOURCE PATH\n"
            "Reads file PATH of SOURCE's tree with tdb_fs_read from THREADS\n"
            "threads over interleaved RANGE-byte ranges (REQUEST bytes per call)\n"
            "and prints bytes, seconds, MB/s and the cache counters per pass.\n"
            "  -t THREADS  default: the online CPUs\n"
            "  -r RANGE    bytes per range, N[KMG] (default 16M)\n"
            "  -s REQUEST  bytes per tdb_fs_read, N[KMG] (default: RANGE)\n"
            "  -l LIMIT    read only the first LIMIT bytes, N[KMG]\n"
            "  -n PASSES   default 1\n"
            "  -R          read through a reader per thread, as the mount does\n"
            "  -o OPTIONS  cache_size=N[KMG], timestamp=T|T1:T2\n",
            program_invocation_short_name);
}

/* Parses N[KMG] (binary multiples) into *v.  @return 0 or -1. */
static int dbench_size(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    unsigned shift = 0;

    if (errno || end == s || s[0] == '-')
        return -1;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end || x == 0 || x > (UINT64_MAX >> shift))
        return -1;
    *v = (uint64_t)x << shift;
    return 0;
}

static double dbench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *dbench_run(void *arg)
{
    struct dbench_worker *w = arg;
    struct dbench *b = w->b;
    char *buf = malloc(b->request);
    struct tdb_reader *rd = NULL;

    if (!buf) {
        w->code = TDB_E_NOMEM;
        snprintf(w->err.msg, sizeof w->err.msg, "no memory for a buffer");
        return NULL;
    }
    if (b->reader && (w->code = tdb_reader_open(&rd, b->fs, b->ino, &w->err)))
        goto out;
    for (uint64_t r = w->index; r * b->range < b->size; r += b->threads) {
        uint64_t off = r * b->range;
        uint64_t end = off + b->range < b->size ? off + b->range : b->size;
        while (off < end) {
            uint64_t want = end - off < b->request ? end - off : b->request;
            struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
            size_t got = 0;
            int st;

            tdb_error_clear(&w->err);
            st = rd ? tdb_reader_read(rd, off, (size_t)want, &s, &w->err)
                    : tdb_fs_read(b->fs, b->ino, off, (size_t)want, &s,
                                  &w->err);
            got = s.got;
            tdb_sink_release(&s);
            if (st < 0) {
                w->code = st;
                goto out;
            }
            if (got == 0)
                goto out;
            w->bytes += got;
            off += got;
        }
    }
out:
    tdb_reader_close(rd);
    free(buf);
    return NULL;
}

static void dbench_report(const char *what, int code,
                          const struct tdb_error *err)
{
    fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
            tdb_error_text(code, err));
}

/* The command line into b, mo and *passes.  @return 0, 1 after -h, or
 * -1 after printing why. */
static int dbench_parse(int argc, char **argv, struct dbench *b,
                        struct tdbm_options *mo, unsigned long *passes)
{
    char why[512], *end;
    int c;

    while ((c = getopt(argc, argv, "t:r:s:l:n:Ro:h")) != -1) {
        switch (c) {
        case 't':
            b->threads = (unsigned)strtoul(optarg, &end, 10);
            if (*end || b->threads == 0 || b->threads > DBENCH_MAX_THREADS)
                goto bad;
            break;
        case 'r':
        case 's':
        case 'l':
            if (dbench_size(optarg, c == 'r'   ? &b->range
                                    : c == 's' ? &b->request
                                               : &b->limit) < 0)
                goto bad;
            break;
        case 'n':
            *passes = strtoul(optarg, &end, 10);
            if (*end || *passes == 0 || *passes > 1000)
                goto bad;
            break;
        case 'o':
            if (tdbm_option_list(mo, optarg, why, sizeof why) < 0) {
                fprintf(stderr, "%s: -o %s: %s\n",
                        program_invocation_short_name, optarg, why);
                return -1;
            }
            break;
        case 'R':
            b->reader = true;
            break;
        case 'h':
            dbench_usage(stdout);
            return 1;
        default:
            dbench_usage(stderr);
            return -1;
        }
    }
    if (argc - optind != 2) {
        dbench_usage(stderr);
        return -1;
    }
    if (b->request == 0 || b->request > b->range)
        b->request = b->range;
    return 0;
bad:
    fprintf(stderr, "%s: bad -%c %s\n", program_invocation_short_name, c,
            optarg);
    return -1;
}

/* Opens `source` into io and b->fs and finds file `path` in it: b->ino
 * and b->size.  @return 0 or -1 after printing why. */
static int dbench_open(struct dbench *b, struct tdb_io *io,
                       const struct tdbm_options *mo, const char *source,
                       const char *path)
{
    struct tdb_error err = {0};
    struct tdb_stat sb;
    int st = tdb_io_posix(io, source);

    if (st < 0) {
        dbench_report(source, st, NULL);
        return -1;
    }
    st = tdb_fs_open(&b->fs, io, &mo->open, &err);
    if (st < 0) {
        dbench_report(source, st, &err);
        return -1;
    }
    st = tdb_fs_resolve(b->fs, path, &b->ino, &err);
    if (st == 0)
        st = tdb_fs_stat(b->fs, b->ino, &sb, &err);
    if (st == 0 && sb.is_dir) {
        st = TDB_E_ISDIR;
        err.msg[0] = 0;
    }
    if (st < 0) {
        dbench_report(path, st, &err);
        return -1;
    }
    b->size = b->limit && b->limit < sb.size ? b->limit : sb.size;
    return 0;
}

/* Runs the workers w[] of one pass.  @return the bytes they read, or
 * UINT64_MAX after printing why one failed. */
static uint64_t dbench_workers(struct dbench *b, struct dbench_worker *w,
                               const char *path)
{
    uint64_t bytes = 0;
    unsigned started = 0;
    bool failed = false;

    for (unsigned k = 0; k < b->threads; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].b = b;
        w[k].index = k;
        if (pthread_create(&w[k].tid, NULL, dbench_run, &w[k]) != 0) {
            fprintf(stderr, "%s: cannot start a thread\n",
                    program_invocation_short_name);
            failed = true;
            break;
        }
        started++;
    }
    for (unsigned k = 0; k < started; k++) {
        pthread_join(w[k].tid, NULL);
        bytes += w[k].bytes;
        if (w[k].code < 0) {
            dbench_report(path, w[k].code, &w[k].err);
            failed = true;
        }
    }
    return failed ? UINT64_MAX : bytes;
}

/* Pass `p`: reads the file once and prints its line.  @return 0 or -1
 * after printing why. */
static int dbench_pass(struct dbench *b, struct dbench_worker *w,
                       unsigned long p, const char *path)
{
    struct tdb_cache_stats s0, s1;
    uint64_t bytes, decodes;
    double t0, secs;

    tdb_fs_cache_stats(b->fs, &s0);
    t0 = dbench_now();
    bytes = dbench_workers(b, w, path);
    secs = dbench_now() - t0;
    if (bytes == UINT64_MAX)
        return -1;
    if (bytes != b->size) {
        fprintf(stderr, "%s: %s: read %llu bytes of %llu\n",
                program_invocation_short_name, path,
                (unsigned long long)bytes, (unsigned long long)b->size);
        return -1;
    }
    tdb_fs_cache_stats(b->fs, &s1);
    decodes = s1.decodes - s0.decodes;
    printf("pass=%lu threads=%u range=%llu request=%llu bytes=%llu "
           "seconds=%.6f mbps=%.1f decodes=%llu hits=%llu misses=%llu "
           "evictions=%llu decodes_per_mib=%.2f cache_budget=%llu "
           "reused=%llu\n",
           p, b->threads, (unsigned long long)b->range,
           (unsigned long long)b->request, (unsigned long long)bytes,
           secs, secs > 0 ? (double)bytes / secs / 1e6 : 0.0,
           (unsigned long long)decodes,
           (unsigned long long)(s1.hits - s0.hits),
           (unsigned long long)(s1.misses - s0.misses),
           (unsigned long long)(s1.evictions - s0.evictions),
           bytes ? (double)decodes / ((double)bytes / 1048576.0) : 0.0,
           (unsigned long long)s1.budget,
           (unsigned long long)(s1.reused - s0.reused));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    struct dbench b = {.range = 16u << 20};
    struct tdbm_options mo;
    struct tdb_io io = {0};
    struct dbench_worker *w = NULL;
    unsigned long passes = 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const char *path;
    int rc;

    b.threads = ncpu > 0 ? (unsigned)ncpu : 1;
    tdbm_options_init(&mo);
    rc = dbench_parse(argc, argv, &b, &mo, &passes);
    if (rc != 0)
        return rc < 0;
    path = argv[optind + 1];
    rc = 1;
    if (dbench_open(&b, &io, &mo, argv[optind], path) != 0)
        goto done;
    w = calloc(b.threads, sizeof *w);
    if (!w) {
        dbench_report(path, TDB_E_NOMEM, NULL);
        goto done;
    }
    for (unsigned long p = 1; p <= passes; p++)
        if (dbench_pass(&b, w, p, path) != 0)
            goto done;
    rc = 0;
done:
    free(w);
    tdb_fs_close(b.fs);
    tdb_io_free(&io);
    return rc;
}
