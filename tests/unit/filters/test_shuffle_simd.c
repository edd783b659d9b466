/* test_shuffle_simd.c: the vector paths of the byte-wise filters
 * (format/filters/shuffle_simd.h and the filters that use it).  Each path
 * this CPU runs is forced in turn: its kernels against a reference written
 * bit by bit from the layouts' definition, on random and edge-case input
 * (lengths that are no multiple of a vector, value widths 1 to 17; the
 * running XOR and sums on widths 1, 2, 4, 8), and
 * the filters through it against the scalar path, in both directions.  A
 * path the CPU lacks is skipped with a line saying so. */
#include "../unit.h"

#include "filters/filter.h"
#include "filters/options.h"
#include "filters/shuffle_simd.h"

#include <stdbool.h>
#include <stdint.h>

static struct tdb_error test_err;

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* Fills p with pattern 0 random bytes, 1 zeros, 2 ones, 3 a byte ramp,
 * 4 sparse random bits. */
static void fill(uint8_t *p, size_t n, int pattern)
{
    for (size_t i = 0; i < n; i++) {
        switch (pattern) {
        case 0: p[i] = (uint8_t)rng(); break;
        case 1: p[i] = 0; break;
        case 2: p[i] = 0xFF; break;
        case 3: p[i] = (uint8_t)(i * 37 + 11); break;
        default: p[i] = rng() % 7 == 0 ? (uint8_t)(1u << (rng() % 8)) : 0;
        }
    }
}

/* ------------------------------------------------------------ reference */

static void ref_byte_fwd(const uint8_t *in, size_t n, unsigned w,
                         uint8_t *out)
{
    for (size_t i = 0; i < n; i++)
        for (unsigned b = 0; b < w; b++)
            out[b * n + i] = in[i * w + b];
}

/* Bit k of byte b of value e -> bit e % 8 of byte e / 8 of row (b, k). */
static void ref_bit_fwd(const uint8_t *in, size_t n, unsigned w,
                        uint8_t *out)
{
    size_t row = n / 8;
    memset(out, 0, n * w);
    for (size_t e = 0; e < n; e++)
        for (unsigned b = 0; b < w; b++)
            for (unsigned k = 0; k < 8; k++) {
                unsigned bit = in[e * w + b] >> k & 1u;
                out[(b * 8 + k) * row + e / 8] |= (uint8_t)(bit << (e % 8));
            }
}

/* Running XOR (add = 0) or sum modulo 2^(8 w) of n little-endian values
 * of w bytes, byte by byte with carries. */
static void ref_scan(const uint8_t *in, size_t n, unsigned w, uint8_t *out,
                     int add)
{
    for (size_t i = 0; i < n; i++) {
        unsigned carry = 0;
        for (unsigned b = 0; b < w; b++) {
            unsigned prev = i ? out[(i - 1) * w + b] : 0;
            unsigned x = in[i * w + b];
            unsigned v = add ? prev + x + carry : prev ^ x;
            out[i * w + b] = (uint8_t)v;
            carry = v >> 8;
        }
    }
}

/* ------------------------------------------------------------- kernels */

#define CANARY 16

/* out (n * w bytes and CANARY more, preset to 0xA5) must equal want and
 * the canary must be untouched. */
static int same(const uint8_t *out, const uint8_t *want, size_t len)
{
    for (size_t i = 0; i < CANARY; i++)
        if (out[len + i] != 0xA5)
            return 0;
    return len == 0 || memcmp(out, want, len) == 0;
}

/* Runs one kernel of p (bit or byte rows, inverse or forward) on n values
 * of w bytes from src into out, whose n * w bytes and CANARY more are set
 * to 0xA5 first. */
static void run_kernel(const struct tdb_shuffle_path *p, int bit, int inv,
                       const uint8_t *src, size_t n, unsigned w,
                       uint8_t *out, uint8_t *tmp)
{
    memset(out, 0xA5, n * w + CANARY);
    if (bit)
        (inv ? p->bit_inv : p->bit_fwd)(src, n, w, out, tmp);
    else
        (inv ? p->byte_inv : p->byte_fwd)(src, n, w, out);
}

/* One path's four kernels on n values of w bytes of one pattern against
 * the reference; the bit kernels when n is a multiple of 8.  Input and
 * scratch are allocated to their exact size (AddressSanitizer sees any
 * read past them).  @return 0 or 1 (a failure was reported). */
static int check_kernels(const struct tdb_shuffle_path *p, size_t n,
                         unsigned w, int pattern)
{
    size_t len = n * w;
    uint8_t *in = malloc(len + 1), *want = malloc(len + 1);
    uint8_t *out = malloc(len + CANARY), *tmp = malloc(len + 1);
    int bad = 0;
    fill(in, len, pattern);
    for (int bit = 0; bit < 2 && !(bit && n % 8); bit++) {
        (bit ? ref_bit_fwd : ref_byte_fwd)(in, n, w, want);
        for (int inv = 0; inv < 2 && !bad; inv++) {
            run_kernel(p, bit, inv, inv ? want : in, n, w, out, tmp);
            if (!same(out, inv ? in : want, len)) {
                fprintf(stderr, "  %s %s_%s n=%zu w=%u pattern %d differs\n",
                        p->name, bit ? "bit" : "byte", inv ? "inv" : "fwd",
                        n, w, pattern);
                bad = 1;
            }
        }
    }
    free(in);
    free(want);
    free(out);
    free(tmp);
    return bad;
}

/* One path's running XOR and sum of n values of w (1, 2, 4, 8) bytes of
 * one pattern against the reference.  @return 0 or 1. */
static int check_scans(const struct tdb_shuffle_path *p, size_t n,
                       unsigned w, int pattern)
{
    size_t len = n * w;
    uint8_t *in = malloc(len + 1), *want = malloc(len + 1);
    uint8_t *out = malloc(len + CANARY);
    int bad = 0;
    fill(in, len, pattern);
    for (int add = 0; add < 2 && !bad; add++) {
        ref_scan(in, n, w, want, add);
        memset(out, 0xA5, len + CANARY);
        (add ? p->add_inv : p->xor_inv)(in, n, w, out);
        if (!same(out, want, len)) {
            fprintf(stderr, "  %s %s_inv n=%zu w=%u pattern %d differs\n",
                    p->name, add ? "add" : "xor", n, w, pattern);
            bad = 1;
        }
    }
    free(in);
    free(want);
    free(out);
    return bad;
}

/* Every width 1..17 and every count 0..1100 (the bit kernels on the
 * multiples of 8), random bytes; the other patterns on fewer counts; and
 * the counts of whole 8 KiB blocks of BITSHUFFLE. */
static void check_path(unsigned which)
{
    const struct tdb_shuffle_path *p = tdb_shuffle_path(which);
    CHECK(p != NULL);
    if (!p)
        return;
    int bad = 0;
    for (unsigned w = 1; w <= 17 && !bad; w++)
        for (size_t n = 0; n <= 1100 && !bad; n++)
            bad = check_kernels(p, n, w, 0);
    for (int pattern = 1; pattern <= 4; pattern++)
        for (unsigned w = 1; w <= 9 && !bad; w++)
            for (size_t n = 0; n <= 600 && !bad; n += 8)
                bad = check_kernels(p, n, w, pattern);
    static const unsigned ws[] = {1, 2, 4, 8, 3, 5};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0] && !bad; i++) {
        size_t n = 8192 / ws[i];
        bad = check_kernels(p, n - n % 8, ws[i], 0);
    }
    for (unsigned w = 1; w <= 8 && !bad; w *= 2)
        for (int pattern = 0; pattern <= 4 && !bad; pattern++)
            for (size_t n = 0; n <= 300 && !bad; n++)
                bad = check_scans(p, n, w, pattern);
    CHECK(!bad);
}

/* A walking bit: each bit of 520 values of w = 1, 2, 4, 8 bytes set alone
 * must land where the layout puts it, alone (520 = 8 * 64 + 8: a row of
 * bit rows is two AVX2 steps and four SSE2 steps, and one
 * group for the scalar rest). */
static void check_walking_bit(unsigned which)
{
    const struct tdb_shuffle_path *p = tdb_shuffle_path(which);
    static const unsigned ws[] = {1, 2, 4, 8};
    int bad = 0;
    for (size_t i = 0; i < 4 && !bad; i++) {
        unsigned w = ws[i];
        size_t n = 520, row = n / 8, len = n * w;
        uint8_t *in = calloc(len, 1), *want = calloc(len, 1);
        uint8_t *out = malloc(len + CANARY), *tmp = malloc(len);
        for (size_t bit = 0; bit < len * 8 && !bad; bit++) {
            /* bit k of byte b of value e: row (b, k), byte e / 8, bit e % 8 */
            size_t e = bit / 8 / w, b = bit / 8 % w, k = bit % 8;
            size_t at = (b * 8 + k) * row + e / 8;
            in[bit / 8] = (uint8_t)(1u << k);
            want[at] = (uint8_t)(1u << (e % 8));
            for (int inv = 0; inv < 2 && !bad; inv++) {
                run_kernel(p, 1, inv, inv ? want : in, n, w, out, tmp);
                if (!same(out, inv ? in : want, len)) {
                    fprintf(stderr, "  %s bit_%s w=%u: bit %zu misplaced\n",
                            p->name, inv ? "inv" : "fwd", w, bit);
                    bad = 1;
                }
            }
            in[bit / 8] = 0;
            want[at] = 0;
        }
        free(in);
        free(want);
        free(out);
        free(tmp);
    }
    CHECK(!bad);
}

/* ------------------------------------------------------------- filters */

static struct tdb_filter_call mkcall(const struct tdb_filter *f, unsigned dt,
                                     unsigned simd)
{
    struct tdb_filter_call c;
    memset(&c, 0, sizeof c);
    c.filter = f;
    c.datatype = dt;
    c.cell_size = tdb_dt_size(dt);
    c.version = 22;
    c.err = &test_err;
    c.simd = simd;
    return c;
}

/* Encodes size bytes with path `which` and with the scalar path: the same
 * metadata and data; then decodes with `which`: the input again. */
static int check_filter(const struct tdb_filter_ops *ops, unsigned dt,
                        size_t size, unsigned which)
{
    struct tdb_filter f;
    memset(&f, 0, sizeof f);
    f.type = ops->type;
    tdb_filter_set_int(&f, "reinterpret_datatype", TDB_ANY);
    tdb_filter_set_int(&f, "compressor",
                       ops->type == TDB_FILTER_DELTA ? 8 : 0);
    struct tdb_filter_call cs = mkcall(&f, dt, TDB_SIMD_SCALAR);
    struct tdb_filter_call cp = mkcall(&f, dt, which);
    uint8_t *in = malloc(size + 1);
    struct tdb_buf m0 = {0}, d0 = {0}, m1 = {0}, d1 = {0}, m2 = {0},
                   d2 = {0};
    int bad = 0;
    fill(in, size, size % 3 == 0 ? 3 : 0);
    struct tdb_filter_stage s0 = {.data = in, .size = size, .md_out = &m0,
                                  .data_out = &d0};
    struct tdb_filter_stage s1 = {.data = in, .size = size, .md_out = &m1,
                                  .data_out = &d1};
    if (ops->encode(&cs, &s0) || ops->encode(&cp, &s1)) {
        fprintf(stderr, "  %s encode failed: %s\n", ops->name, test_err.msg);
        bad = 1;
    } else if (m0.len != m1.len || d0.len != d1.len ||
               memcmp(m0.data, m1.data, m0.len) ||
               (d0.len && memcmp(d0.data, d1.data, d0.len))) {
        fprintf(stderr, "  %s dt %u size %zu: path %s encodes otherwise\n",
                ops->name, dt, size, tdb_shuffle_path(which)->name);
        bad = 1;
    } else {
        struct tdb_filter_stage s2 = {.data = d1.data, .size = d1.len,
                                      .md_out = &m2, .data_out = &d2};
        tdb_cur_init(&s2.md, m1.data, m1.len);
        if (ops->decode(&cp, &s2) ||
            d2.len != size || (size && memcmp(d2.data, in, size))) {
            fprintf(stderr, "  %s dt %u size %zu: path %s decodes "
                    "otherwise\n", ops->name, dt, size,
                    tdb_shuffle_path(which)->name);
            bad = 1;
        }
    }
    free(in);
    tdb_buf_free(&m0);
    tdb_buf_free(&d0);
    tdb_buf_free(&m1);
    tdb_buf_free(&d1);
    tdb_buf_free(&m2);
    tdb_buf_free(&d2);
    return bad;
}

static const struct tdb_filter_ops *const simd_filters[] = {
    &tdb_filter_bitshuffle, &tdb_filter_byteshuffle, &tdb_filter_xor,
    &tdb_filter_delta,
};

/* DELTA refuses floats (TileDB does). */
static int applies(const struct tdb_filter_ops *ops, unsigned dt)
{
    return ops != &tdb_filter_delta ||
           (dt != TDB_FLOAT32 && dt != TDB_FLOAT64);
}

/* size, or for DELTA (which refuses a part of no whole values) its
 * whole values of dt. */
static size_t whole(const struct tdb_filter_ops *ops, unsigned dt,
                    size_t size)
{
    return ops == &tdb_filter_delta ? size - size % tdb_dt_size(dt) : size;
}

/* Each filter, datatypes of 1, 2, 4 and 8 bytes, sizes around the vector
 * steps and BITSHUFFLE's 8 KiB blocks (odd sizes leave tails). */
static void check_filters(unsigned which)
{
    static const unsigned dts[] = {TDB_INT8, TDB_UINT16, TDB_FLOAT32,
                                   TDB_INT32, TDB_FLOAT64, TDB_UINT64};
    static const size_t sizes[] = {0, 1, 7, 8, 9, 63, 64, 65, 127, 128,
                                   129, 1000, 1023, 1024, 1031, 4096, 8191,
                                   8192, 8193, 8200, 16384 + 517, 65536 + 8};
    int bad = 0;
    for (size_t f = 0; f < sizeof simd_filters / sizeof simd_filters[0]; f++)
        for (size_t t = 0; t < sizeof dts / sizeof dts[0] && !bad; t++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && !bad &&
                               applies(simd_filters[f], dts[t]);
                 s++)
                bad = check_filter(simd_filters[f], dts[t],
                                   whole(simd_filters[f], dts[t], sizes[s]),
                                   which);
    CHECK(!bad);
}

/* --------------------------------------------------------------- paths */

static void check_all(unsigned which)
{
    check_path(which);
    check_walking_bit(which);
    check_filters(which);
}

static void test_path_scalar(void) { check_all(TDB_SIMD_SCALAR); }
static void test_path_sse2(void) { check_all(TDB_SIMD_SSE2); }
static void test_path_avx2(void) { check_all(TDB_SIMD_AVX2); }

/* The fastest path is one of the paths, and a path this CPU lacks is
 * refused by a filter with a clear error rather than run. */
static void test_path_choice(void)
{
    const struct tdb_shuffle_path *best = tdb_shuffle_path(TDB_SIMD_BEST);
    int found = 0;
    CHECK(best != NULL);
    for (unsigned p = TDB_SIMD_SCALAR; p < TDB_SIMD_COUNT; p++)
        found |= tdb_shuffle_path(p) == best;
    CHECK(found);
    CHECK(tdb_shuffle_path(TDB_SIMD_COUNT) == NULL);
    printf("   fastest path here: %s\n", best ? best->name : "none");
    struct tdb_filter f;
    memset(&f, 0, sizeof f);
    f.type = TDB_FILTER_BITSHUFFLE;
    struct tdb_filter_call c = mkcall(&f, TDB_INT32, TDB_SIMD_COUNT);
    struct tdb_buf m = {0}, d = {0};
    uint8_t in[64] = {0};
    struct tdb_filter_stage st = {.data = in, .size = sizeof in, .md_out = &m,
                                  .data_out = &d};
    CHECK_EQ_INT(tdb_filter_bitshuffle.encode(&c, &st),
                 TDB_E_UNSUPPORTED);
    CHECK(strstr(test_err.msg, "not available") != NULL);
    tdb_buf_free(&m);
    tdb_buf_free(&d);
}

/* True when path `which` runs here.  TILEDBFS_TEST_NO_SIMD=NAME[,NAME]
 * makes this test act as on a CPU without those paths (tests/
 * check_cpu_skip.sh: how make check takes a machine without AVX2). */
static bool path_here(unsigned which)
{
    const struct tdb_shuffle_path *p = tdb_shuffle_path(which);
    const char *no = getenv("TILEDBFS_TEST_NO_SIMD");
    if (!p || !no)
        return p != NULL;
    size_t n = strlen(p->name);
    for (const char *s = no; (s = strstr(s, p->name)) != NULL; s += n)
        if ((s == no || s[-1] == ',') && (s[n] == ',' || s[n] == '\0'))
            return false;
    return true;
}

#define RUN_PATH(fn, which)                                                \
    do {                                                                   \
        if (path_here(which))                                              \
            RUN(fn);                                                       \
        else                                                               \
            UNIT_SKIP(fn, "this CPU (or build) has no such vector path");  \
    } while (0)

int main(void)
{
    RUN(test_path_choice);
    RUN_PATH(test_path_scalar, TDB_SIMD_SCALAR);
    RUN_PATH(test_path_sse2, TDB_SIMD_SSE2);
    RUN_PATH(test_path_avx2, TDB_SIMD_AVX2);
    return unit_done();
}
