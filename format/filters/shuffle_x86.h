/* shuffle_x86.h: the kernels of shuffle_simd.h in x86 vector instructions,
 * one algorithm for SSE2 and AVX2.
 *
 * Included once by each of shuffle_sse2.c and shuffle_avx2.c after they
 * define, for their instruction set:
 *   SX_TARGET     the function attribute target("...")
 *   SX_V          bytes in a vector (16, 32)
 *   sx_vec        the vector type
 *   sx_load(p), sx_store(p, v)              unaligned whole vectors
 *   sx_load_lanes(p, s), sx_store_lanes(p, s, v)
 *                 the vector whose 16-byte lane l is at p + l * s
 *   sx_and, sx_xor, sx_set1_16(x)
 *   SX_SRLI16(v, n), SX_SLLI16(v, n)        shifts of each 16-bit unit
 *   sx_unpacklo8, sx_unpackhi8, sx_packus16 the SSE2 instructions, which
 *                 work lane by lane in every set
 *   SX_PATH, SX_NAME                        the table and its name
 * Every instruction used works on each 16-byte lane apart, so each lane is
 * a 16-byte SSE2 problem of its own: a vector of byte rows holds 16
 * consecutive values per lane, and the values of lane l go to (or come
 * from) the 16 * w bytes at 16 * w * l, through sx_store_lanes and
 * sx_load_lanes.
 *
 * The helpers are forced inline and their loops unrolled, so that arrays
 * of vectors indexed by constants live in registers. */

#define SX_INLINE static inline __attribute__((always_inline)) SX_TARGET
#define SX_UNROLL _Pragma("GCC unroll 8")

/* -------------------------------------------------- byte interleaving */

/* (a, b), 16 values of 2 bytes per lane -> (even bytes, odd bytes). */
SX_INLINE void sx_de2(sx_vec a, sx_vec b, sx_vec *e, sx_vec *o)
{
    sx_vec m = sx_set1_16(0x00FF);
    *e = sx_packus16(sx_and(a, m), sx_and(b, m));
    *o = sx_packus16(SX_SRLI16(a, 8), SX_SRLI16(b, 8));
}

/* The inverse of sx_de2. */
SX_INLINE void sx_il2(sx_vec e, sx_vec o, sx_vec *a, sx_vec *b)
{
    *a = sx_unpacklo8(e, o);
    *b = sx_unpackhi8(e, o);
}

/* v[0..4): 16 values of 4 bytes per lane -> v[b]: their bytes b. */
SX_INLINE void sx_de4(sx_vec *v)
{
    sx_vec e0, e1, o0, o1;
    sx_de2(v[0], v[1], &e0, &o0);
    sx_de2(v[2], v[3], &e1, &o1);
    sx_de2(e0, e1, &v[0], &v[2]);
    sx_de2(o0, o1, &v[1], &v[3]);
}

SX_INLINE void sx_il4(sx_vec *v)
{
    sx_vec e0, e1, o0, o1;
    sx_il2(v[0], v[2], &e0, &e1);
    sx_il2(v[1], v[3], &o0, &o1);
    sx_il2(e0, o0, &v[0], &v[1]);
    sx_il2(e1, o1, &v[2], &v[3]);
}

/* v[0..8): 16 values of 8 bytes per lane -> v[b]: their bytes b.  The
 * even bytes are 16 values of 4 bytes (bytes 0, 2, 4, 6), the odd ones too. */
SX_INLINE void sx_de8(sx_vec *v)
{
    sx_vec e[4], o[4];
    SX_UNROLL
    for (unsigned p = 0; p < 4; p++)
        sx_de2(v[2 * p], v[2 * p + 1], &e[p], &o[p]);
    sx_de4(e);
    sx_de4(o);
    SX_UNROLL
    for (unsigned q = 0; q < 4; q++) {
        v[2 * q] = e[q];
        v[2 * q + 1] = o[q];
    }
}

SX_INLINE void sx_il8(sx_vec *v)
{
    sx_vec e[4], o[4];
    SX_UNROLL
    for (unsigned q = 0; q < 4; q++) {
        e[q] = v[2 * q];
        o[q] = v[2 * q + 1];
    }
    sx_il4(e);
    sx_il4(o);
    SX_UNROLL
    for (unsigned p = 0; p < 4; p++)
        sx_il2(e[p], o[p], &v[2 * p], &v[2 * p + 1]);
}

/* ---------------------------------------------------------- bit slices */

/* Exchanges the bits of a under mask << s with those of b under mask. */
#define SX_SWAP(a, b, s, mask)                                            \
    do {                                                                  \
        sx_vec t_ = sx_and(sx_xor(SX_SRLI16(a, s), b), mask);             \
        b = sx_xor(b, t_);                                                \
        a = sx_xor(a, SX_SLLI16(t_, s));                                  \
    } while (0)

/* Transposes, in each byte position, the 8x8 bit matrix whose row k is
 * that byte of v[k]: bit j of v[k] becomes bit k of v[j]. */
SX_INLINE void sx_bits8(sx_vec *v)
{
    sx_vec m4 = sx_set1_16(0x0F0F), m2 = sx_set1_16(0x3333),
           m1 = sx_set1_16(0x5555);
    SX_UNROLL
    for (unsigned k = 0; k < 4; k++)
        SX_SWAP(v[k], v[k + 4], 4, m4);
    SX_UNROLL
    for (unsigned k = 0; k < 8; k += 4) {
        SX_SWAP(v[k], v[k + 2], 2, m2);
        SX_SWAP(v[k + 1], v[k + 3], 2, m2);
    }
    SX_UNROLL
    for (unsigned k = 0; k < 8; k += 2)
        SX_SWAP(v[k], v[k + 1], 1, m1);
}

/* ----------------------------------------------------------- byte rows */

/* The byte rows of n values of w bytes (w = 2, 4, 8), SX_V values a step;
 * the rest by the scalar kernel. */
SX_INLINE void sx_byte_fwd_w(const uint8_t *in, size_t n,
                                           unsigned w, uint8_t *out)
{
    size_t i = 0;
    for (; i + SX_V <= n; i += SX_V) {
        sx_vec v[8];
        SX_UNROLL
        for (unsigned r = 0; r < w; r++)
            v[r] = sx_load_lanes(in + i * w + 16 * r, 16 * w);
        if (w == 2)
            sx_de2(v[0], v[1], &v[0], &v[1]);
        else if (w == 4)
            sx_de4(v);
        else
            sx_de8(v);
        SX_UNROLL
        for (unsigned b = 0; b < w; b++)
            sx_store(out + b * n + i, v[b]);
    }
    tdb_shuffle_byte_fwd_from(in, n, w, out, i);
}

SX_INLINE void sx_byte_inv_w(const uint8_t *in, size_t n,
                                           unsigned w, uint8_t *out)
{
    size_t i = 0;
    for (; i + SX_V <= n; i += SX_V) {
        sx_vec v[8];
        SX_UNROLL
        for (unsigned b = 0; b < w; b++)
            v[b] = sx_load(in + b * n + i);
        if (w == 2)
            sx_il2(v[0], v[1], &v[0], &v[1]);
        else if (w == 4)
            sx_il4(v);
        else
            sx_il8(v);
        SX_UNROLL
        for (unsigned r = 0; r < w; r++)
            sx_store_lanes(out + i * w + 16 * r, 16 * w, v[r]);
    }
    tdb_shuffle_byte_inv_from(in, n, w, out, i);
}

static SX_TARGET void sx_byte_fwd(const uint8_t *in, size_t n, unsigned w,
                                  uint8_t *out)
{
    switch (w) {
    case 2: sx_byte_fwd_w(in, n, 2, out); break;
    case 4: sx_byte_fwd_w(in, n, 4, out); break;
    case 8: sx_byte_fwd_w(in, n, 8, out); break;
    default: tdb_shuffle_byte_fwd_from(in, n, w, out, 0); break;
    }
}

static SX_TARGET void sx_byte_inv(const uint8_t *in, size_t n, unsigned w,
                                  uint8_t *out)
{
    switch (w) {
    case 2: sx_byte_inv_w(in, n, 2, out); break;
    case 4: sx_byte_inv_w(in, n, 4, out); break;
    case 8: sx_byte_inv_w(in, n, 8, out); break;
    default: tdb_shuffle_byte_inv_from(in, n, w, out, 0); break;
    }
}

/* ------------------------------------------------------------ bit rows */

/* One byte row of 8 * row bytes -> its 8 bit rows of row bytes: 8 * SX_V
 * bytes a step (16 groups of 8 per lane, by sx_de8), then the bits. */
static SX_TARGET void sx_bit_fwd_row(const uint8_t *in, size_t row,
                                     uint8_t *out)
{
    size_t g = 0;
    for (; g + SX_V <= row; g += SX_V) {
        sx_vec v[8];
        SX_UNROLL
        for (unsigned r = 0; r < 8; r++)
            v[r] = sx_load_lanes(in + 8 * g + 16 * r, 128);
        sx_de8(v);
        sx_bits8(v);
        SX_UNROLL
        for (unsigned k = 0; k < 8; k++)
            sx_store(out + k * row + g, v[k]);
    }
    tdb_shuffle_bit_fwd_row_from(in, row, out, g);
}

static SX_TARGET void sx_bit_inv_row(const uint8_t *in, size_t row,
                                     uint8_t *out)
{
    size_t g = 0;
    for (; g + SX_V <= row; g += SX_V) {
        sx_vec v[8];
        SX_UNROLL
        for (unsigned k = 0; k < 8; k++)
            v[k] = sx_load(in + k * row + g);
        sx_bits8(v);
        sx_il8(v);
        SX_UNROLL
        for (unsigned r = 0; r < 8; r++)
            sx_store_lanes(out + 8 * g + 16 * r, 128, v[r]);
    }
    tdb_shuffle_bit_inv_row_from(in, row, out, g);
}

static SX_TARGET void sx_bit_fwd(const uint8_t *in, size_t n, unsigned w,
                                 uint8_t *out, uint8_t *tmp)
{
    if (w == 1) {
        sx_bit_fwd_row(in, n / 8, out);
        return;
    }
    sx_byte_fwd(in, n, w, tmp);
    SX_UNROLL
    for (unsigned b = 0; b < w; b++)
        sx_bit_fwd_row(tmp + b * n, n / 8, out + b * n);
}

static SX_TARGET void sx_bit_inv(const uint8_t *in, size_t n, unsigned w,
                                 uint8_t *out, uint8_t *tmp)
{
    if (w == 1) {
        sx_bit_inv_row(in, n / 8, out);
        return;
    }
    SX_UNROLL
    for (unsigned b = 0; b < w; b++)
        sx_bit_inv_row(in + b * n, n / 8, tmp + b * n);
    sx_byte_inv(tmp, n, w, out);
}

/* ---------------------------------------------- running XOR and sums */

/* The running values cross every lane, so these work on 16-byte vectors
 * in every path (in AVX encodings under AVX2). */

/* a ^ b, or a + b in w-byte integers. */
SX_INLINE __m128i sx_op(__m128i a, __m128i b, unsigned w, bool add)
{
    if (!add)
        return _mm_xor_si128(a, b);
    switch (w) {
    case 1: return _mm_add_epi8(a, b);
    case 2: return _mm_add_epi16(a, b);
    case 4: return _mm_add_epi32(a, b);
    default: return _mm_add_epi64(a, b);
    }
}

/* The running XOR or sum inside x, from its first w-byte value. */
SX_INLINE __m128i sx_scan16(__m128i x, unsigned w, bool add)
{
    if (w <= 1)
        x = sx_op(x, _mm_slli_si128(x, 1), w, add);
    if (w <= 2)
        x = sx_op(x, _mm_slli_si128(x, 2), w, add);
    if (w <= 4)
        x = sx_op(x, _mm_slli_si128(x, 4), w, add);
    return sx_op(x, _mm_slli_si128(x, 8), w, add);
}

/* x's last w-byte value in every place. */
SX_INLINE __m128i sx_last(__m128i x, unsigned w)
{
    switch (w) {
    case 1:
        x = _mm_shufflehi_epi16(_mm_unpackhi_epi8(x, x), 0xFF);
        return _mm_shuffle_epi32(x, 0xFF);
    case 2: return _mm_shuffle_epi32(_mm_shufflehi_epi16(x, 0xFF), 0xFF);
    case 4: return _mm_shuffle_epi32(x, 0xFF);
    default: return _mm_shuffle_epi32(x, 0xEE);
    }
}

/* 16 bytes a step: the scan of the step, plus (or XOR) the running value
 * so far in every place, which then grows by the step's last value (so
 * that one operation a step depends on the step before). */
SX_INLINE void sx_scan_w(const uint8_t *in, size_t n, unsigned w,
                         uint8_t *out, bool add)
{
    __m128i run = _mm_setzero_si128();
    size_t i = 0;
    for (; i + 16 / w <= n; i += 16 / w) {
        __m128i x = _mm_loadu_si128((const __m128i *)(in + i * w));
        x = sx_scan16(x, w, add);
        _mm_storeu_si128((__m128i *)(out + i * w), sx_op(x, run, w, add));
        run = sx_op(run, sx_last(x, w), w, add);
    }
    if (add)
        tdb_shuffle_add_inv_from(in, n, w, out, i);
    else
        tdb_shuffle_xor_inv_from(in, n, w, out, i);
}

static SX_TARGET void sx_xor_inv(const uint8_t *in, size_t n, unsigned w,
                                 uint8_t *out)
{
    switch (w) {
    case 1: sx_scan_w(in, n, 1, out, false); break;
    case 2: sx_scan_w(in, n, 2, out, false); break;
    case 4: sx_scan_w(in, n, 4, out, false); break;
    default: sx_scan_w(in, n, 8, out, false); break;
    }
}

static SX_TARGET void sx_add_inv(const uint8_t *in, size_t n, unsigned w,
                                 uint8_t *out)
{
    switch (w) {
    case 1: sx_scan_w(in, n, 1, out, true); break;
    case 2: sx_scan_w(in, n, 2, out, true); break;
    case 4: sx_scan_w(in, n, 4, out, true); break;
    default: sx_scan_w(in, n, 8, out, true); break;
    }
}

const struct tdb_shuffle_path SX_PATH = {
    .name = SX_NAME,
    .byte_fwd = sx_byte_fwd,
    .byte_inv = sx_byte_inv,
    .bit_fwd = sx_bit_fwd,
    .bit_inv = sx_bit_inv,
    .xor_inv = sx_xor_inv,
    .add_inv = sx_add_inv,
};
