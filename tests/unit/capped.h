/* capped.h: decoding damaged tiles under a capped address space, for the
 * filter tests (tests/unit/filters/). */
#ifndef TDB_TEST_CAPPED_H
#define TDB_TEST_CAPPED_H

#include "unit.h"
#include "filters/filter.h"

/* ---------------------------------------------------- one filter alone */

/* Runs fn, a filter's encode or decode, on (md, data), appending to md_out
 * and data_out. */
static inline int filter_run(int (*fn)(const struct tdb_filter_call *,
                                       struct tdb_filter_stage *),
                             const struct tdb_filter_call *call,
                             const void *md, size_t md_len,
                             const void *data, size_t size,
                             struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    struct tdb_filter_stage st = {.data = data, .size = size,
                                  .md_out = md_out, .data_out = data_out};
    tdb_cur_init(&st.md, md, md_len);
    return fn(call, &st);
}

/* filter_encode(ops, call, md, md_len, data, size, md_out, data_out) and
 * filter_decode(...): filter_run with ops's encode or decode. */
#define filter_encode(ops, ...) filter_run((ops)->encode, __VA_ARGS__)
#define filter_decode(ops, ...) filter_run((ops)->decode, __VA_ARGS__)

/* ------------------------------------------ bounded allocation (issue #7) */

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CAPPED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAPPED_ASAN 1
#endif
#endif

/* A tile of one chunk declaring `orig` bytes: metadata md, data data. */
static inline void capped_tile(struct tdb_buf *t, uint32_t orig,
                               const uint8_t *md, uint32_t mlen,
                               const uint8_t *data, uint32_t dlen)
{
    tdb_buf_reset(t);
    tdb_buf_put_u64(t, 1);
    tdb_buf_put_u32(t, orig);
    tdb_buf_put_u32(t, dlen);
    tdb_buf_put_u32(t, mlen);
    tdb_buf_append(t, md, mlen);
    tdb_buf_append(t, data, dlen);
}

/* Decodes `tile` through a pipeline of the one filter f in a child process
 * whose address space is capped at 256 MiB (not under ASan, which reserves
 * far more), so that a decoder that allocates what the damaged metadata
 * claims fails with TDB_E_NOMEM (or dies) instead of TDB_E_CORRUPT.
 * @return the decode's result, or 1000 + the signal that killed it; the
 * message goes to msg. */
static inline int capped_decode(const struct tdb_filter *f, unsigned dt,
                                bool var, const struct tdb_buf *tile,
                                char *msg, size_t cap)
{
    int fd[2];
    msg[0] = 0;
    if (pipe(fd))
        return 2000;
    pid_t pid = fork();
    if (pid < 0)
        return 2001;
    if (pid == 0) {
        close(fd[0]);
#ifndef CAPPED_ASAN
        struct rlimit rl = {256u << 20, 256u << 20};
        setrlimit(RLIMIT_AS, &rl);
#endif
        struct tdb_filter one = *f;
        struct tdb_pipeline p = {.max_chunk_size = 65536, .n = 1, .f = &one};
        struct tdb_tile_desc d = {.datatype = dt,
                                  .cell_size = var ? 1 : tdb_dt_size(dt),
                                  .version = 22, .is_var = var,
                                  .what = "damaged"};
        struct tdb_buf out = {0}, offs = {0};
        struct tdb_error e = {0};
        d.offsets = var ? &offs : NULL;
        int r = tdb_pipeline_decode(&p, &d, tile->data, tile->len, &out, &e);
        if (write(fd[1], &r, sizeof r) != sizeof r ||
            write(fd[1], e.msg, strlen(e.msg) + 1) < 0)
            _exit(3);
        _exit(0);
    }
    close(fd[1]);
    int r = 0, st = 0;
    ssize_t got = read(fd[0], &r, sizeof r);
    ssize_t m = got == sizeof r ? read(fd[0], msg, cap - 1) : 0;
    msg[m > 0 ? m : 0] = 0;
    close(fd[0]);
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
        return 1000 + WTERMSIG(st);
    return got == sizeof r ? r : 2002;
}

/* Expects the damaged tile to be refused as corrupt, the message naming
 * `needle`. */
#define CHECK_CAPPED(f, dt, var, tile, needle)                              \
    do {                                                                    \
        char capped_msg[TDB_ERROR_MSG_MAX];                                 \
        int capped_r = capped_decode((f), (dt), (var), (tile), capped_msg,  \
                                     sizeof capped_msg);                    \
        CHECK_EQ_INT(capped_r, TDB_E_CORRUPT);                              \
        if (!strstr(capped_msg, (needle))) {                                \
            fprintf(stderr, "  message '%s' lacks '%s'\n", capped_msg,      \
                    (needle));                                              \
            CHECK(!"message names the place");                              \
        }                                                                   \
    } while (0)

#endif
