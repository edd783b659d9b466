/* shuffle_simd.c: the scalar kernels of shuffle_simd.h (the byte and bit
 * transpositions of BYTESHUFFLE and BITSHUFFLE, tile.md; the running XOR
 * and sums of XOR and DELTA, filters/xor.md, delta.md); shuffle_path.c
 * chooses a path by the CPU's features. */
#include "shuffle_simd.h"

#include <string.h>

#include "numeric_int.h"

/* ------------------------------------------------------------ byte rows */

/* Values [i0, n) of w bytes -> byte rows; w a constant once inlined. */
static inline void shuffle_byte_fwd_w(const uint8_t *in, size_t n,
                                      unsigned w, uint8_t *out, size_t i0)
{
    for (size_t i = i0; i < n; i++)
        for (unsigned b = 0; b < w; b++)
            out[b * n + i] = in[i * w + b];
}

static inline void shuffle_byte_inv_w(const uint8_t *in, size_t n,
                                      unsigned w, uint8_t *out, size_t i0)
{
    for (size_t i = i0; i < n; i++)
        for (unsigned b = 0; b < w; b++)
            out[i * w + b] = in[b * n + i];
}

void tdb_shuffle_byte_fwd_from(const uint8_t *in, size_t n, unsigned w,
                               uint8_t *out, size_t i0)
{
    switch (w) {
    case 1: memcpy(out + i0, in + i0, n - i0); break;
    case 2: shuffle_byte_fwd_w(in, n, 2, out, i0); break;
    case 4: shuffle_byte_fwd_w(in, n, 4, out, i0); break;
    case 8: shuffle_byte_fwd_w(in, n, 8, out, i0); break;
    default: shuffle_byte_fwd_w(in, n, w, out, i0); break;
    }
}

void tdb_shuffle_byte_inv_from(const uint8_t *in, size_t n, unsigned w,
                               uint8_t *out, size_t i0)
{
    switch (w) {
    case 1: memcpy(out + i0, in + i0, n - i0); break;
    case 2: shuffle_byte_inv_w(in, n, 2, out, i0); break;
    case 4: shuffle_byte_inv_w(in, n, 4, out, i0); break;
    case 8: shuffle_byte_inv_w(in, n, 8, out, i0); break;
    default: shuffle_byte_inv_w(in, n, w, out, i0); break;
    }
}

static void shuffle_byte_fwd(const uint8_t *in, size_t n, unsigned w,
                             uint8_t *out)
{
    tdb_shuffle_byte_fwd_from(in, n, w, out, 0);
}

static void shuffle_byte_inv(const uint8_t *in, size_t n, unsigned w,
                             uint8_t *out)
{
    tdb_shuffle_byte_inv_from(in, n, w, out, 0);
}

/* ------------------------------------------------------------- bit rows */

/* Transposes the 8x8 bit matrix whose row r is byte r of x: bit c of byte
 * r becomes bit r of byte c (three exchanges of off-diagonal blocks). */
static inline uint64_t shuffle_transpose8(uint64_t x)
{
    uint64_t t;
    t = (x ^ (x >> 7)) & UINT64_C(0x00AA00AA00AA00AA);
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & UINT64_C(0x0000CCCC0000CCCC);
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & UINT64_C(0x00000000F0F0F0F0);
    x ^= t ^ (t << 28);
    return x;
}

void tdb_shuffle_bit_fwd_row_from(const uint8_t *in, size_t row,
                                  uint8_t *out, size_t g0)
{
    for (size_t g = g0; g < row; g++) {
        uint64_t y = shuffle_transpose8(tdb_le64(in + 8 * g));
        for (unsigned k = 0; k < 8; k++)
            out[k * row + g] = (uint8_t)(y >> (8 * k));
    }
}

void tdb_shuffle_bit_inv_row_from(const uint8_t *in, size_t row,
                                  uint8_t *out, size_t g0)
{
    for (size_t g = g0; g < row; g++) {
        uint64_t x = 0;
        for (unsigned k = 0; k < 8; k++)
            x |= (uint64_t)in[k * row + g] << (8 * k);
        tdb_st64(out + 8 * g, shuffle_transpose8(x));
    }
}

static void shuffle_bit_fwd(const uint8_t *in, size_t n, unsigned w,
                            uint8_t *out, uint8_t *tmp)
{
    if (w == 1) {
        tdb_shuffle_bit_fwd_row_from(in, n / 8, out, 0);
        return;
    }
    shuffle_byte_fwd(in, n, w, tmp);
    for (unsigned b = 0; b < w; b++)
        tdb_shuffle_bit_fwd_row_from(tmp + b * n, n / 8, out + b * n, 0);
}

static void shuffle_bit_inv(const uint8_t *in, size_t n, unsigned w,
                            uint8_t *out, uint8_t *tmp)
{
    if (w == 1) {
        tdb_shuffle_bit_inv_row_from(in, n / 8, out, 0);
        return;
    }
    for (unsigned b = 0; b < w; b++)
        tdb_shuffle_bit_inv_row_from(in + b * n, n / 8, tmp + b * n, 0);
    shuffle_byte_inv(tmp, n, w, out);
}

/* ------------------------------------------------- running XOR and sums */

/* Values [i0, n) of the running XOR (add = false) or sum; w a constant
 * once inlined. */
static inline __attribute__((always_inline)) void
shuffle_scan_w(const uint8_t *in, size_t n, unsigned w, uint8_t *out,
               size_t i0, bool add)
{
    uint64_t prev = i0 ? tdb_numeric_load(out + (i0 - 1) * w, w) : 0;
    for (size_t i = i0; i < n; i++) {
        uint64_t v = tdb_numeric_load(in + i * w, w);
        prev = add ? prev + v : prev ^ v;
        tdb_numeric_store(out + i * w, w, prev);
    }
}

static void shuffle_scan_from(const uint8_t *in, size_t n, unsigned w,
                              uint8_t *out, size_t i0, bool add)
{
    switch (w) {
    case 1: shuffle_scan_w(in, n, 1, out, i0, add); break;
    case 2: shuffle_scan_w(in, n, 2, out, i0, add); break;
    case 4: shuffle_scan_w(in, n, 4, out, i0, add); break;
    default: shuffle_scan_w(in, n, 8, out, i0, add); break;
    }
}

void tdb_shuffle_xor_inv_from(const uint8_t *in, size_t n, unsigned w,
                              uint8_t *out, size_t i0)
{
    shuffle_scan_from(in, n, w, out, i0, false);
}

void tdb_shuffle_add_inv_from(const uint8_t *in, size_t n, unsigned w,
                              uint8_t *out, size_t i0)
{
    shuffle_scan_from(in, n, w, out, i0, true);
}

static void shuffle_xor_inv(const uint8_t *in, size_t n, unsigned w,
                            uint8_t *out)
{
    shuffle_scan_from(in, n, w, out, 0, false);
}

static void shuffle_add_inv(const uint8_t *in, size_t n, unsigned w,
                            uint8_t *out)
{
    shuffle_scan_from(in, n, w, out, 0, true);
}

const struct tdb_shuffle_path tdb_shuffle_scalar = {
    .name = "scalar",
    .byte_fwd = shuffle_byte_fwd,
    .byte_inv = shuffle_byte_inv,
    .bit_fwd = shuffle_bit_fwd,
    .bit_inv = shuffle_bit_inv,
    .xor_inv = shuffle_xor_inv,
    .add_inv = shuffle_add_inv,
};
