/* test_objstore.c: the object-store backend (format/objstore/) over S3:
 * opening it and its errors, the coalescing of ranges into GETs, the
 * parts of an upload, the disk cache's pieces and bound, and the request
 * queue of the I/O thread against a small HTTP server of the tests' own
 * (fixture.c: bounded, stalled, reads fetched ahead, a PUT curl sends
 * again on a fresh connection, the thread's exit), listings out of
 * memory and fetched sizes forgotten.  The S3 requests themselves
 * are tested against real servers in tests/py/test_s3.py and
 * test_s3_io.py. */
#include "fixture.h"
#include "../support.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "s3/s3.h"
#include "objstore/objstore.h"

/* URLs and endpoints that cannot be used are refused at once. */
static void test_open_errors(void)
{
    struct tdb_s3_config c = {0};
    struct tdb_io io = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_s3(&io, "/tmp/array", &c, &err), TDB_E_INVAL);
    CHECK_EQ_INT(tdb_io_s3(&io, "s3:///array", &c, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "no bucket") != NULL);
    c.endpoint = "ftp://127.0.0.1:21";
    CHECK_EQ_INT(tdb_io_s3(&io, "s3://b/array", &c, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "ftp://127.0.0.1:21") != NULL);
    c.endpoint = NULL;
    c.access_key = "K";
    CHECK_EQ_INT(tdb_io_s3(&io, "s3://b/array", &c, &err), TDB_E_INVAL);
    c.secret_key = "S";
    CHECK_EQ_INT(tdb_io_s3(&io, "s3://b/array", &c, &err), 0);
    tdb_io_free(&io);
    CHECK(tdb_io_is_url("s3://b/a") && !tdb_io_is_url("/s3://b"));
}

/* Nothing listens on the port: the open names the URL and the failure. */
static void test_unreachable(void)
{
    unit_aws_env_clear();
    setenv("HOME", "/nonexistent-tiledbfs", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
    struct tdb_io io = {0};
    struct tdb_error err = {0};
    int r = tdb_io_open_url(&io, "s3://bucket/array", &err);
    CHECK_EQ_INT(r, TDB_E_IO);
    CHECK(strstr(err.msg, "s3://bucket/array/") != NULL);
    CHECK(strstr(err.msg, "connect") != NULL || strstr(err.msg, "Connect"));
    CHECK(io.ops == NULL);
    unit_aws_env_clear();
}

/* ------------------------------------------------------------ coalescing */

static void test_coalesce(void)
{
    /* tiles of one file, out of order: 0-100, 100-250 adjacent; 300-400
     * 50 bytes after; 1000-1100 far; 1050-1150 overlapping it */
    struct tdb_os_range r[] = {{1000, 100}, {100, 150}, {0, 100},
                               {300, 100}, {1050, 100}};
    struct tdb_os_span sp[5];
    size_t n = tdb_os_coalesce(r, 5, 64, 1 << 20, sp);
    CHECK_EQ_INT(n, 2);
    CHECK(sp[0].off == 0 && sp[0].len == 400 && sp[0].want == 350);
    CHECK(sp[0].first == 0 && sp[0].count == 3);
    CHECK(sp[1].off == 1000 && sp[1].len == 150 && sp[1].want == 150);
    CHECK(sp[1].first == 3 && sp[1].count == 2);
    CHECK(r[0].off == 0 && r[3].off == 1000);      /* sorted */
    /* no gap allowed: 300 starts its own */
    struct tdb_os_range q[] = {{0, 100}, {100, 150}, {300, 100}};
    CHECK_EQ_INT(tdb_os_coalesce(q, 3, 0, 1 << 20, sp), 2);
    CHECK(sp[0].len == 250 && sp[1].off == 300);
    /* the cap: 0-100 and 100-250 would be 250 bytes > 200 */
    struct tdb_os_range c[] = {{0, 100}, {100, 150}, {250, 50}};
    CHECK_EQ_INT(tdb_os_coalesce(c, 3, 0, 200, sp), 2);
    CHECK(sp[0].off == 0 && sp[0].len == 100);
    CHECK(sp[1].off == 100 && sp[1].len == 200 && sp[1].want == 200);
    /* a range inside another adds nothing asked for */
    struct tdb_os_range d[] = {{0, 1000}, {10, 10}};
    CHECK_EQ_INT(tdb_os_coalesce(d, 2, 0, 1 << 20, sp), 1);
    CHECK(sp[0].len == 1000 && sp[0].want == 1000 && sp[0].count == 2);
    CHECK_EQ_INT(tdb_os_coalesce(d, 0, 0, 1 << 20, sp), 0);
}

/* --------------------------------------------------------- part sizes */

/* Parts as asked, at least S3's least; grown to whole MiB for a file that
 * would need more than 10,000 parts. */
static void test_part_size(void)
{
    const uint64_t MiB = UINT64_C(1) << 20;
    CHECK(tdb_os_part_size(8 * MiB, 40 * MiB) == 8 * MiB);
    CHECK(tdb_os_part_size(1 * MiB, 40 * MiB) == TDB_S3_PART_MIN);
    CHECK(tdb_os_part_size(8 * MiB, 10000 * 8 * MiB) == 8 * MiB);
    /* 10,000 parts of 8 MiB exactly would fit, one byte more would not */
    uint64_t big = 10000 * 8 * MiB + 1, ps = tdb_os_part_size(8 * MiB, big);
    CHECK(ps == 9 * MiB && (big + ps - 1) / ps <= 10000);
    /* 5 TiB, S3's largest object: parts of 525 MiB */
    uint64_t tib5 = UINT64_C(5) << 40;
    ps = tdb_os_part_size(8 * MiB, tib5);
    CHECK(ps % MiB == 0 && (tib5 + ps - 1) / ps <= 10000 &&
          (tib5 + ps - MiB - 1) / (ps - MiB) > 10000);
}

/* ------------------------------------------------------------ disk cache */

static char *disk_tmpdir(void)
{
    char tmpl[] = "/tmp/tiledbfs-test-disk-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static void rm_rf(const char *dir)
{
    char *cmd = NULL;
    if (asprintf(&cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    free(cmd);
}

/* tdb_os_disk_get of piece [off, off + len) of object id. */
static int disk_get(struct os_disk *d, const char *id, uint64_t off,
                    uint64_t len, uint64_t at, void *buf, size_t n)
{
    struct os_piece p = {id, off, len};
    return tdb_os_disk_get(d, &p, at, buf, n);
}

/* Pieces are named by identity and range; a piece whose identity differs
 * (another ETag) or whose file was damaged is never read. */
static void test_disk_pieces(void)
{
    char *dir = disk_tmpdir();
    struct os_disk *d = NULL;
    struct tdb_error err = {0};
    CHECK(dir != NULL);
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 1 << 20, &err), 0);
    uint8_t data[1000], got[1000];
    for (int i = 0; i < 1000; i++)
        data[i] = (uint8_t)(i * 7);
    const char *id = "host/bucket/key\n\"etag1\"\n5000";
    CHECK(!tdb_os_disk_has(d, id, 4000, 1000));
    tdb_os_disk_put(d, id, 4000, 1000, data);
    CHECK(tdb_os_disk_has(d, id, 4000, 1000));
    CHECK_EQ_INT(disk_get(d, id, 4000, 1000, 4000, got, 1000), 1);
    CHECK_MEM(got, data, 1000);
    /* a part of it, and outside it */
    CHECK_EQ_INT(disk_get(d, id, 4000, 1000, 4500, got, 10), 1);
    CHECK_MEM(got, data + 500, 10);
    CHECK_EQ_INT(disk_get(d, id, 4000, 1000, 4995, got, 10), 0);
    /* another version of the object, another range: not there */
    CHECK(!tdb_os_disk_has(d, "host/bucket/key\n\"etag2\"\n5000", 4000,
                           1000));
    CHECK(!tdb_os_disk_has(d, id, 4000, 999));
    /* an empty piece */
    tdb_os_disk_put(d, id, 0, 0, NULL);
    CHECK(tdb_os_disk_has(d, id, 0, 0));
    tdb_os_disk_close(d);
    /* a second cache over the same folder finds them; a damaged file (cut
     * short) is a miss */
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 1 << 20, &err), 0);
    CHECK(tdb_os_disk_has(d, id, 4000, 1000));
    char *cmd = NULL;
    CHECK(asprintf(&cmd, "for f in '%s'/*/*; do n=$(stat -c %%s \"$f\"); "
                   "[ \"$n\" -gt 900 ] && truncate -s 900 \"$f\"; done; true",
                   dir) > 0);
    CHECK_EQ_INT(system(cmd), 0);
    free(cmd);
    CHECK(!tdb_os_disk_has(d, id, 4000, 1000));
    CHECK_EQ_INT(disk_get(d, id, 4000, 1000, 4000, got, 1000), 0);
    tdb_os_disk_close(d);
    rm_rf(dir);
    free(dir);
}

/* Past its bound, the least recently used pieces go (a hit renews). */
static void test_disk_bound(void)
{
    char *dir = disk_tmpdir();
    struct os_disk *d = NULL;
    struct tdb_error err = {0};
    static uint8_t data[10000];
    CHECK(dir != NULL);
    /* room for four pieces of 10,000 bytes (and their headers) */
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 41000, &err), 0);
    const char *id = "h/b/k\n\"e\"\n1000000";
    for (uint64_t i = 0; i < 4; i++) {
        tdb_os_disk_put(d, id, i * 10000, 10000, data);
        /* a clock in seconds: age them apart */
        char *cmd = NULL;
        CHECK(asprintf(&cmd, "find '%s' -type f -newermt '-1 sec' -exec "
                       "touch -d '-%d min' {} +", dir, (int)(10 - i)) > 0);
        CHECK_EQ_INT(system(cmd), 0);
        free(cmd);
    }
    for (uint64_t i = 0; i < 4; i++)
        CHECK(tdb_os_disk_has(d, id, i * 10000, 10000));
    /* piece 0 read: now the most recent; piece 1 is the oldest */
    CHECK_EQ_INT(disk_get(d, id, 0, 10000, 0, data, 10), 1);
    tdb_os_disk_put(d, id, 40000, 10000, data);
    CHECK(tdb_os_disk_has(d, id, 40000, 10000));
    CHECK(tdb_os_disk_has(d, id, 0, 10000));
    CHECK(!tdb_os_disk_has(d, id, 10000, 10000));
    tdb_os_disk_close(d);
    /* a folder that cannot be one */
    CHECK_EQ_INT(tdb_os_disk_open(&d, "/proc/version/x", 1 << 20, &err),
                 TDB_E_IO);
    CHECK(strstr(err.msg, "disk_cache=/proc/version/x") != NULL);
    rm_rf(dir);
    free(dir);
}

/* The file of piece (id, off, len) under dir (as objstore/disk.c names it:
 * XX/ and 62 more hex digits of the SHA-256 of identity and range). */
static char *piece_path(const char *dir, const char *id, uint64_t off,
                        uint64_t len)
{
    char *k = NULL, *p = NULL, hex[65];
    if (asprintf(&k, "%s\n%llu\n%llu", id, (unsigned long long)off,
                 (unsigned long long)len) < 0)
        return NULL;
    tdb_s3_sha256_hex(k, strlen(k), hex);
    free(k);
    return asprintf(&p, "%s/%.2s/%s", dir, hex, hex + 2) < 0 ? NULL : p;
}

/* A file at path holding n bytes of s, dated `age` seconds ago. */
static void dated_file(const char *path, const char *s, size_t n, int age)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_EQ_INT(fwrite(s, 1, n, f), n);
    fclose(f);
    struct timespec t[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    CHECK_EQ_INT(utimensat(AT_FDCWD, path, t, 0), 0);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* What the cache removes is its own: a leftover temporary file of its
 * (tmp.PID.SEQ, starting with the magic) once an hour old, a damaged
 * piece (its header intact); not a fresh temporary file, nor one of
 * another name or other bytes, nor a FIFO named as a piece (not opened:
 * the scan does not block), nor pieces in a subfolder that is not ours or
 * that others can write (neither read nor removed). */
/* Beside pieces a and b of folder `sub`: temporary files (ours stale,
 * ours fresh, other names, other bytes), a FIFO and a damaged piece.
 * Opening removes only our stale temporary; past the bound every piece
 * goes, the damaged one too, and what is not the cache's stays. */
static void check_stray_files(const char *dir, const char *sub,
                              const char *a, const char *b)
{
    struct os_disk *d = NULL;
    struct tdb_error err = {0};
    char p1[256], p2[256], p3[256], p4[256], fifo[256];
    snprintf(p1, sizeof p1, "%s/tmp.99.1", sub);
    snprintf(p2, sizeof p2, "%s/tmp.99.2", sub);
    snprintf(p3, sizeof p3, "%s/tmp.99.x", sub);
    snprintf(p4, sizeof p4, "%s/tmp.99.4", sub);
    snprintf(fifo, sizeof fifo, "%s/%062d", sub, 0);
    dated_file(p1, "TDBFSDC1 and more", 17, 7200);   /* ours, stale */
    dated_file(p2, "TDBFS", 5, 0);                   /* ours, fresh */
    dated_file(p3, "TDBFSDC1", 8, 7200);             /* another name */
    dated_file(p4, "TDBFSDCx", 8, 7200);             /* other bytes */
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    CHECK_EQ_INT(truncate(b, 500), 0);             /* damaged */
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 1 << 20, &err), 0);
    CHECK(!exists(p1) && exists(p2) && exists(p3) && exists(p4));
    CHECK(exists(fifo) && exists(a) && exists(b));
    tdb_os_disk_close(d);
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 100, &err), 0);
    CHECK(!exists(a) && !exists(b));
    CHECK(exists(fifo) && exists(p2) && exists(p3) && exists(p4));
    tdb_os_disk_close(d);
}

/* As root: subfolder `sub` owned by another user is not read, and a piece
 * that belongs there is not written. */
static void check_foreign_owner(const char *dir, const char *sub,
                                const char *id, const char *a)
{
    static uint8_t data[10];
    struct os_disk *d = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(chown(sub, 65534, 65534), 0);
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 100, &err), 0);
    CHECK(exists(a) && !tdb_os_disk_has(d, id, 0, 1000));
    char *c = NULL;
    uint64_t off = 2000;
    for (; off < 100000; off++) {
        free(c);
        c = piece_path(dir, id, off, 10);
        if (!c || !strncmp(c, sub, strlen(sub)))
            break;
    }
    CHECK(c != NULL && off < 100000);
    tdb_os_disk_put(d, id, off, 10, data);
    CHECK(c && !exists(c) && !tdb_os_disk_has(d, id, off, 10));
    free(c);
    tdb_os_disk_close(d);
    CHECK_EQ_INT(chown(sub, 0, 0), 0);
}

/* A subfolder others can write, or one not ours: its pieces are not read
 * and not removed; ours again, it is read, then evicted. */
static void check_foreign_subfolder(const char *dir, const char *sub,
                                    const char *id, const char *a)
{
    static uint8_t data[1000];
    struct os_disk *d = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 1 << 20, &err), 0);
    tdb_os_disk_put(d, id, 0, 1000, data);
    CHECK(tdb_os_disk_has(d, id, 0, 1000));
    CHECK_EQ_INT(chmod(sub, 0777), 0);
    CHECK(!tdb_os_disk_has(d, id, 0, 1000));
    tdb_os_disk_close(d);
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 100, &err), 0);
    CHECK(exists(a));
    tdb_os_disk_close(d);
    CHECK_EQ_INT(chmod(sub, 0700), 0);
    if (geteuid() == 0)
        check_foreign_owner(dir, sub, id, a);
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 1 << 20, &err), 0);
    CHECK(tdb_os_disk_has(d, id, 0, 1000));
    tdb_os_disk_close(d);
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 100, &err), 0);
    CHECK(!exists(a));
    tdb_os_disk_close(d);
}

static void test_disk_own_files(void)
{
    char *dir = disk_tmpdir();
    struct os_disk *d = NULL;
    struct tdb_error err = {0};
    static uint8_t data[1000];
    CHECK(dir != NULL);
    const char *id = "h/b/k\n\"e\"\n100000";
    CHECK_EQ_INT(tdb_os_disk_open(&d, dir, 1 << 20, &err), 0);
    tdb_os_disk_put(d, id, 0, 1000, data);
    tdb_os_disk_put(d, id, 1000, 1000, data);
    tdb_os_disk_close(d);
    char *a = piece_path(dir, id, 0, 1000), *b = piece_path(dir, id, 1000,
                                                             1000);
    CHECK(a && b && exists(a) && exists(b));
    char sub[128];
    snprintf(sub, sizeof sub, "%.*s", (int)(strrchr(a, '/') - a), a);
    check_stray_files(dir, sub, a, b);
    check_foreign_subfolder(dir, sub, id, a);
    free(a);
    free(b);
    rm_rf(dir);
    free(dir);
}

/* ------------------------------------------------------- the I/O thread */

/* Calls queued to the I/O thread, and their count still under way. */
struct batch {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int left;
};

struct queued {
    struct os_call c;
    char key[32];
    struct batch *b;
    bool ended;             /* under b->m */
};

static void queued_done(struct os_call *c)
{
    struct queued *q = c->arg;
    pthread_mutex_lock(&q->b->m);
    q->ended = true;
    q->b->left--;
    pthread_cond_signal(&q->b->cv);
    pthread_mutex_unlock(&q->b->m);
}

/* Queues a GET of key into q, one call more of b, ending with done (which
 * calls queued_done). */
static int queue_call(struct objstore *s, struct batch *b, struct queued *q,
                      const char *key, void (*done)(struct os_call *c))
{
    memset(q, 0, sizeof *q);
    snprintf(q->key, sizeof q->key, "%s", key);
    q->c = (struct os_call){.method = "GET", .key = q->key, .up_fd = -1,
                            .sink = OS_SINK_MEM, .done = done, .arg = q};
    q->b = b;
    pthread_mutex_lock(&b->m);
    b->left++;
    pthread_mutex_unlock(&b->m);
    return tdb_os_submit(s, &q->c);
}

static int queue_get(struct objstore *s, struct batch *b, struct queued *q,
                     const char *key)
{
    return queue_call(s, b, q, key, queued_done);
}

/* Waits until at most `left` calls of b are under way. */
static void batch_wait(struct batch *b, int left)
{
    pthread_mutex_lock(&b->m);
    while (b->left > left)
        pthread_cond_wait(&b->cv, &b->m);
    pthread_mutex_unlock(&b->m);
}

/* Twelve calls queued at once, three allowed in flight: the server never
 * answers more than three at a time, and each call gets its own answer. */
static void test_queue_bound(void)
{
    struct http_srv srv;
    struct tdb_io io = {0};
    CHECK_EQ_INT(http_start(&srv, 50), 0);
    CHECK_EQ_INT(http_backend(&io, &srv, 3, 30), 0);
    struct objstore *s = io.ctx;
    struct batch b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct queued q[12];
    for (int i = 0; i < 12; i++) {
        char key[16];
        snprintf(key, sizeof key, "obj%d", i);
        CHECK_EQ_INT(queue_get(s, &b, &q[i], key), 0);
    }
    batch_wait(&b, 0);
    for (int i = 0; i < 12; i++) {
        char want[64];
        snprintf(want, sizeof want, "/b/obj%d", i);
        CHECK_EQ_INT(q[i].c.r, 0);
        CHECK_EQ_INT(q[i].c.status, 200);
        CHECK(q[i].c.mem.len == strlen(want) &&
              !memcmp(q[i].c.mem.data, want, strlen(want)));
        CHECK(q[i].c.etag && !strcmp(q[i].c.etag, "\"e\""));
        tdb_os_call_clear(&q[i].c);
    }
    pthread_mutex_lock(&srv.lock);
    CHECK_EQ_INT(srv.served, 12);
    CHECK(srv.peak >= 2 && srv.peak <= 3);
    pthread_mutex_unlock(&srv.lock);
    tdb_io_free(&io);
    http_stop(&srv);
}

struct reading {
    struct tdb_io *io;
    int first, step;
    int bad;
};

/* Reads ranges first, first + step, ... of 20 (each 3,000 bytes at
 * 4,000 * i, then the small file whole, by pieces). */
static void *reading_main(void *arg)
{
    struct reading *rd = arg;
    uint8_t buf[4000];
    for (int i = rd->first; i < 20; i += rd->step) {
        uint64_t off = (uint64_t)i * 4000;
        if (rd->io->ops->read_at(rd->io->ctx, "data", off, buf, 3000))
            rd->bad++;
        for (int j = 0; j < 3000; j++)
            rd->bad += buf[j] != data_byte(off + (uint64_t)j);
        if (rd->io->ops->read_at(rd->io->ctx, "small-data", off + 7, buf, 100))
            rd->bad++;
        for (int j = 0; j < 100; j++)
            rd->bad += buf[j] != data_byte(off + 7 + (uint64_t)j);
    }
    return NULL;
}

/* Ranges asked for ahead, out of order (coalesced: fewer GETs than
 * ranges), and a small file asked for whole, read by four threads at once:
 * the bytes of the object; then a batch (tdb_io_read_many). */
static void test_prefetch_reads(void)
{
    struct http_srv srv;
    struct tdb_io io = {0};
    CHECK_EQ_INT(http_start(&srv, 20), 0);
    CHECK_EQ_INT(http_backend(&io, &srv, 8, 30), 0);
    struct tdb_io_want w[21];
    for (int i = 0; i < 20; i++)
        w[i] = (struct tdb_io_want){TDB_WANT_RANGE, "data",
                                    (uint64_t)((i * 7) % 20) * 4000, 3000};
    w[20] = (struct tdb_io_want){TDB_WANT_FILE, "small-data", 0, 0};
    tdb_io_prefetch(&io, w, 21);
    pthread_t th[4];
    struct reading rd[4];
    for (int i = 0; i < 4; i++) {
        rd[i] = (struct reading){&io, i, 4, 0};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, reading_main, &rd[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(rd[i].bad, 0);
    }
    pthread_mutex_lock(&srv.lock);
    int served = srv.served;
    pthread_mutex_unlock(&srv.lock);
    /* one GET for the ranges (1,000-byte gaps), one for the small file */
    CHECK_EQ_INT(served, 2);
    uint8_t a[500], b[700];
    struct tdb_io_read r[] = {{"data", 90000, a, sizeof a, -1},
                              {"data", 10, b, sizeof b, -1}};
    CHECK_EQ_INT(tdb_io_read_many(&io, r, 2), 0);
    CHECK(r[0].rc == 0 && r[1].rc == 0);
    CHECK(a[0] == data_byte(90000) && a[499] == data_byte(90499));
    CHECK(b[0] == data_byte(10) && b[699] == data_byte(709));
    /* past the end: an error, not a hang */
    CHECK(io.ops->read_at(io.ctx, "data", DATA_SIZE - 10, b, 20) != 0);
    tdb_io_settle(&io);
    tdb_io_free(&io);
    http_stop(&srv);
}

/* A call the server never answers fails with TDB_E_IO once its deadline
 * passed, retries included; the calls queued with it are answered. */
static void test_queue_stall(void)
{
    struct http_srv srv;
    struct tdb_io io = {0};
    CHECK_EQ_INT(http_start(&srv, 0), 0);
    CHECK_EQ_INT(http_backend(&io, &srv, 4, 2), 0);
    struct objstore *s = io.ctx;
    uint8_t buf[16];
    CHECK_EQ_INT(io.ops->read_at(io.ctx, "stall", 0, buf, 4), TDB_E_IO);
    CHECK(s->loop.tries >= 2);     /* it was tried again */
    struct batch b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct queued st, ok;
    CHECK_EQ_INT(queue_get(s, &b, &st, "stall2"), 0);
    CHECK_EQ_INT(queue_get(s, &b, &ok, "fine"), 0);
    batch_wait(&b, 1);
    pthread_mutex_lock(&b.m);
    CHECK(ok.ended && !st.ended);   /* the answered one ended first */
    pthread_mutex_unlock(&b.m);
    batch_wait(&b, 0);
    CHECK_EQ_INT(ok.c.r, 0);
    CHECK_EQ_INT(st.c.r, TDB_E_IO);
    tdb_os_call_clear(&st.c);
    tdb_os_call_clear(&ok.c);
    tdb_io_free(&io);
    http_stop(&srv);
}

#define PUT_SKIP 4096          /* bytes of the file before the PUT's */
#define PUT_SIZE (200u << 10)  /* the PUT's body */

static uint8_t put_byte(size_t i)
{
    return (uint8_t)(i * 13 + i / 251);
}

/* A temporary file of PUT_SKIP bytes of 0xee, then PUT_SIZE of
 * put_byte(i) (unlinked): its descriptor, or -1. */
static int put_file(void)
{
    char tmpl[] = "/tmp/tiledbfs-test-put-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return -1;
    unlink(tmpl);
    static uint8_t b[PUT_SKIP + PUT_SIZE];
    memset(b, 0xee, PUT_SKIP);
    for (size_t i = 0; i < PUT_SIZE; i++)
        b[PUT_SKIP + i] = put_byte(i);
    if (write(fd, b, sizeof b) != (ssize_t)sizeof b) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The server closes a kept-alive connection as a PUT came on it, with no
 * answer: curl sends the PUT again on a fresh connection, within the same
 * try, its body read again from the start (the seek callback rewinds
 * it).  The PUT succeeds, and the server got its bytes whole, from the
 * file's offset, answered once. */
static void test_put_rewind(void)
{
    struct http_srv srv;
    struct tdb_io io = {0};
    CHECK_EQ_INT(http_start(&srv, 0), 0);
    pthread_mutex_lock(&srv.lock);
    srv.drop_second = true;
    pthread_mutex_unlock(&srv.lock);
    CHECK_EQ_INT(http_backend(&io, &srv, 1, 30), 0);
    struct objstore *s = io.ctx;
    struct os_call get = {.method = "GET", .key = "first", .up_fd = -1,
                          .sink = OS_SINK_MEM};
    CHECK_EQ_INT(tdb_os_perform(s, &get), 0);
    CHECK_EQ_INT(get.status, 200);
    tdb_os_call_clear(&get);
    int fd = put_file();
    CHECK(fd >= 0);
    struct os_call put = {.method = "PUT", .key = "obj", .up_fd = fd,
                          .up_off = PUT_SKIP, .up_len = PUT_SIZE,
                          .sink = OS_SINK_NONE};
    CHECK_EQ_INT(tdb_os_perform(s, &put), 0);
    CHECK_EQ_INT(put.status, 200);
    CHECK(put.etag && !strcmp(put.etag, "\"e\""));
    tdb_os_call_clear(&put);
    /* one try each: the second PUT was curl's own, on the same handle */
    CHECK_EQ_INT(s->loop.tries, 2);
    tdb_io_free(&io);
    pthread_mutex_lock(&srv.lock);
    CHECK_EQ_INT(srv.puts, 2);          /* dropped, then answered */
    CHECK_EQ_INT(srv.served, 2);        /* the GET, the PUT once */
    CHECK_EQ_INT(srv.nconn, 2);
    CHECK_EQ_INT(srv.put_len, PUT_SIZE);
    bool same = srv.put_body && srv.put_len == PUT_SIZE;
    for (size_t i = 0; same && i < PUT_SIZE; i++)
        same = srv.put_body[i] == put_byte(i);
    CHECK(same);
    pthread_mutex_unlock(&srv.lock);
    if (fd >= 0)
        close(fd);
    http_stop(&srv);
}

/* A thread-local value whose destructor runs as the I/O thread exits,
 * slowly, as OpenSSL's per-thread clean-up runs there (set by a call's
 * done, on the I/O thread). */
static pthread_key_t exit_key;

static pthread_mutex_t exit_m = PTHREAD_MUTEX_INITIALIZER;

static bool exit_over;

static void exit_destructor(void *arg)
{
    (void)arg;
    usleep(300000);
    pthread_mutex_lock(&exit_m);
    exit_over = true;
    pthread_mutex_unlock(&exit_m);
}

static void exit_done(struct os_call *c)
{
    pthread_setspecific(exit_key, c);
    queued_done(c);
}

/* Once tdb_io_free returns, the I/O thread's exit is over, its
 * thread-local destructors included, whether it ended at the free or
 * idle before it: else the process may exit meanwhile, and OpenSSL's
 * clean-up at exit free what the thread's destructor frees (a double
 * free). */
static void test_thread_exit(void)
{
    struct http_srv srv;
    CHECK_EQ_INT(http_start(&srv, 0), 0);
    CHECK_EQ_INT(pthread_key_create(&exit_key, exit_destructor), 0);
    for (int idle = 0; idle < 2; idle++) {
        struct tdb_io io = {0};
        CHECK_EQ_INT(http_backend(&io, &srv, 2, 30), 0);
        struct objstore *s = io.ctx;
        struct batch b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                          0};
        struct queued q;
        exit_over = false;
        CHECK_EQ_INT(queue_call(s, &b, &q, "obj", exit_done), 0);
        batch_wait(&b, 0);
        CHECK_EQ_INT(q.c.r, 0);
        tdb_os_call_clear(&q.c);
        bool running = idle;
        while (running) {       /* the thread leaves its loop, idle */
            pthread_mutex_lock(&s->loop.lock);
            running = s->loop.running;
            pthread_mutex_unlock(&s->loop.lock);
            usleep(1000);
        }
        tdb_io_free(&io);
        pthread_mutex_lock(&exit_m);
        CHECK(exit_over);
        pthread_mutex_unlock(&exit_m);
    }
    pthread_key_delete(exit_key);
    http_stop(&srv);
}

/* ------------------------------------------------- failures on the way */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)

#define OS_TEST_SANITIZED 1

#elif defined(__has_feature)

#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)

#define OS_TEST_SANITIZED 1

#endif

#endif

#ifndef OS_TEST_SANITIZED

/* A malloc whose next call on this thread fails when malloc_fail_next is
 * set (glibc's own functions, strdup among them, call it too; calloc and
 * realloc stay glibc's).  Not under a sanitizer, which has its own. */
extern void *__libc_malloc(size_t n);

static _Thread_local bool malloc_fail_next;

void *malloc(size_t n)
{
    if (malloc_fail_next) {
        malloc_fail_next = false;
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

#endif

/* A lookup in the listings that runs out of memory at its first
 * allocation clears *out all the same: its callers free out->etag
 * whatever the outcome (it was left as the caller's stack had it). */
static void test_dir_lookup_nomem(void)
{
#ifdef OS_TEST_SANITIZED
    fprintf(stderr, "  (skipped under a sanitizer: no malloc of ours)\n");
#else
    struct http_srv srv;
    struct tdb_io io = {0};
    CHECK_EQ_INT(http_start(&srv, 0), 0);
    CHECK_EQ_INT(http_backend(&io, &srv, 4, 30), 0);
    static char stale;
    struct tdb_store_dent e = {.name = &stale, .is_dir = true, .size = 7,
                        .etag = &stale};
    malloc_fail_next = true;
    CHECK_EQ_INT(tdb_os_dir_peek(io.ctx, "a/b", &e), 0);
    CHECK(!malloc_fail_next);       /* it did allocate, and failed */
    CHECK(e.etag == NULL && e.name == NULL && !e.is_dir && e.size == 0);
    malloc_fail_next = false;
    tdb_io_free(&io);
    http_stop(&srv);
#endif
}

struct forgetting {
    struct objstore *s;
    const char *norm;
    int after_ms;
};

static void *forgetting_main(void *arg)
{
    struct forgetting *f = arg;
    usleep((useconds_t)f->after_ms * 1000);
    tdb_os_fetched_forget(f->s, f->norm);
    return NULL;
}

/* A file fetched whole that changes (tdb_os_fetched_forget) while a size
 * waits for it: the size is not taken from it, and it goes as soon as
 * the wait ends (it stayed, dead, until evicted, its bytes counted). */
static void test_fetched_size_forgotten(void)
{
    struct http_srv srv;
    struct tdb_io io = {0};
    CHECK_EQ_INT(http_start(&srv, 600), 0);     /* answers after 0.6 s */
    CHECK_EQ_INT(http_backend(&io, &srv, 4, 30), 0);
    struct objstore *s = io.ctx;
    struct tdb_io_want w = {TDB_WANT_FILE, "small-data", 0, 0};
    tdb_io_prefetch(&io, &w, 1);
    /* forgotten 0.2 s into the size's wait for it */
    struct forgetting f = {s, "small-data", 200};
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, forgetting_main, &f), 0);
    uint64_t size = 0;
    CHECK_EQ_INT(tdb_os_fetched_size(s, "small-data", &size), 0);
    pthread_join(th, NULL);
    tdb_os_settle(s);
    pthread_mutex_lock(&s->lock);
    uint64_t held = s->meta_bytes;
    pthread_mutex_unlock(&s->lock);
    CHECK_EQ_INT(held, 0);
    /* fetched again, kept, and its size known */
    tdb_io_prefetch(&io, &w, 1);
    CHECK_EQ_INT(tdb_os_fetched_size(s, "small-data", &size), 1);
    CHECK_EQ_INT(size, DATA_SIZE);
    tdb_io_free(&io);
    http_stop(&srv);
}

int main(void)
{
    tdb_s3_global_init();
    RUN(test_open_errors);
    RUN(test_unreachable);
    RUN(test_coalesce);
    RUN(test_part_size);
    RUN(test_disk_pieces);
    RUN(test_disk_bound);
    RUN(test_disk_own_files);
    RUN(test_queue_bound);
    RUN(test_queue_stall);
    RUN(test_prefetch_reads);
    RUN(test_put_rewind);
    RUN(test_thread_exit);
    RUN(test_dir_lookup_nomem);
    RUN(test_fetched_size_forgotten);
    return unit_done();
}
