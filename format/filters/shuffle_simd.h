/* shuffle_simd.h: the byte and bit transpositions of BYTESHUFFLE and
 * BITSHUFFLE (tile.md) and the running XOR and sums of XOR and DELTA
 * (filters/xor.md, delta.md), with one implementation per instruction set.
 *
 * Each path is a table of kernels: the portable scalar one (shuffle_simd.c)
 * and, on x86, SSE2 and AVX2 (shuffle_sse2.c, shuffle_avx2.c: one
 * algorithm, shuffle_x86.h, compiled for each with
 * function target attributes, so the build needs no flags and runs on any
 * x86 CPU).  Every path writes the same bytes as the scalar one.  A filter
 * asks for the path its call names (struct tdb_filter_call.simd): 0 means
 * the fastest one this CPU runs, which tdb_shuffle_path picks from the
 * CPU's features; tests and fuzz targets name each path in turn.
 *
 * The layouts.  n values of w bytes, value i at in[i * w].
 * Byte rows: w rows of n bytes, row b holding byte b of every value in
 * order (BYTESHUFFLE's output).
 * Bit rows (n a multiple of 8): 8 * w rows of n / 8 bytes, ordered by byte
 * b then bit k (least significant first); in row (b, k), bit j of byte g is
 * bit k of byte b of value 8 * g + j (BITSHUFFLE's output for one block). */
#ifndef TDB_SHUFFLE_SIMD_H
#define TDB_SHUFFLE_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1 where the x86 paths are built (GCC or clang on x86, unless built with
 * -DTDB_NO_SIMD: the scalar path alone, as on other machines). */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && \
    !defined(TDB_NO_SIMD)
#define TDB_SHUFFLE_X86 1
#else
#define TDB_SHUFFLE_X86 0
#endif

/* The paths, slowest first.  TDB_SIMD_BEST asks for the fastest the CPU
 * runs. */
enum tdb_simd {
    TDB_SIMD_BEST = 0,
    TDB_SIMD_SCALAR = 1,
    TDB_SIMD_SSE2 = 2,
    TDB_SIMD_AVX2 = 3,
    TDB_SIMD_COUNT = 4
};

struct tdb_shuffle_path {
    const char *name;           /* "scalar", "sse2", "avx2" */
    /* n values of w bytes (any w >= 1) at in -> byte rows at out. */
    void (*byte_fwd)(const uint8_t *in, size_t n, unsigned w, uint8_t *out);
    /* Byte rows of n values of w bytes at in -> the values at out. */
    void (*byte_inv)(const uint8_t *in, size_t n, unsigned w, uint8_t *out);
    /* n values (n a multiple of 8) of w bytes at in -> bit rows at out.
     * tmp: n * w bytes of scratch (unused when w is 1). */
    void (*bit_fwd)(const uint8_t *in, size_t n, unsigned w, uint8_t *out,
                    uint8_t *tmp);
    /* Bit rows of n values (n a multiple of 8) of w bytes at in -> the
     * values at out; tmp as for bit_fwd. */
    void (*bit_inv)(const uint8_t *in, size_t n, unsigned w, uint8_t *out,
                    uint8_t *tmp);
    /* Running XOR of n values of w = 1, 2, 4 or 8 bytes (XOR's decode):
     * out[0] = in[0], out[i] = in[i] ^ out[i - 1]. */
    void (*xor_inv)(const uint8_t *in, size_t n, unsigned w, uint8_t *out);
    /* Running sums modulo 2^(8 w) (DELTA's decode): out[0] = in[0],
     * out[i] = in[i] + out[i - 1]. */
    void (*add_inv)(const uint8_t *in, size_t n, unsigned w, uint8_t *out);
};

/* The kernels of path `which` (an enum tdb_simd), or NULL when this CPU
 * or build cannot run it (or `which` is not a path).  TDB_SIMD_BEST gives
 * the fastest path this CPU runs, the scalar one at worst. */
const struct tdb_shuffle_path *tdb_shuffle_path(unsigned which);

/* The paths: the scalar one (shuffle_simd.c), and on x86 the others,
 * defined in their own files, which tdb_shuffle_path (shuffle_path.c)
 * offers only when the CPU has their features. */
extern const struct tdb_shuffle_path tdb_shuffle_scalar;
extern const struct tdb_shuffle_path tdb_shuffle_sse2, tdb_shuffle_avx2;

/* ------------------------------------------------- scalar pieces, shared */

/* The scalar kernels on part of the work, which the vector paths use for
 * what their vectors leave over: values [i0, n) of byte_fwd / byte_inv,
 * and groups [g0, row) of one byte row's bit rows (row = n / 8 bytes per
 * bit row; in and out as for bit_fwd / bit_inv with w = 1). */
void tdb_shuffle_byte_fwd_from(const uint8_t *in, size_t n, unsigned w,
                               uint8_t *out, size_t i0);
void tdb_shuffle_byte_inv_from(const uint8_t *in, size_t n, unsigned w,
                               uint8_t *out, size_t i0);
void tdb_shuffle_bit_fwd_row_from(const uint8_t *in, size_t row,
                                  uint8_t *out, size_t g0);
void tdb_shuffle_bit_inv_row_from(const uint8_t *in, size_t row,
                                  uint8_t *out, size_t g0);
/* Values [i0, n) of xor_inv / add_inv, out[0, i0) being done. */
void tdb_shuffle_xor_inv_from(const uint8_t *in, size_t n, unsigned w,
                              uint8_t *out, size_t i0);
void tdb_shuffle_add_inv_from(const uint8_t *in, size_t n, unsigned w,
                              uint8_t *out, size_t i0);

#endif
