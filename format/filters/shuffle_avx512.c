/* shuffle_avx512.c: the AVX-512 path (AVX512F and AVX512BW) of the byte
 * and bit transpositions of BYTESHUFFLE and BITSHUFFLE (shuffle_simd.h,
 * shuffle_x86.h). */
#include "shuffle_simd.h"

#if TDB_SHUFFLE_X86
#include <immintrin.h>

#define SX_TARGET __attribute__((target("avx512f,avx512bw")))
#define SX_V 64
#define SX_PATH tdb_shuffle_avx512
#define SX_NAME "avx512"
typedef __m512i sx_vec;

static inline SX_TARGET sx_vec sx_load(const uint8_t *p)
{
    return _mm512_loadu_si512(p);
}

static inline SX_TARGET void sx_store(uint8_t *p, sx_vec v)
{
    _mm512_storeu_si512(p, v);
}

static inline SX_TARGET sx_vec sx_load_lanes(const uint8_t *p, size_t s)
{
    sx_vec v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + s)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 2 * s)),
                           2);
    return _mm512_inserti32x4(
        v, _mm_loadu_si128((const __m128i *)(p + 3 * s)), 3);
}

static inline SX_TARGET void sx_store_lanes(uint8_t *p, size_t s, sx_vec v)
{
    _mm_storeu_si128((__m128i *)p, _mm512_castsi512_si128(v));
    _mm_storeu_si128((__m128i *)(p + s), _mm512_extracti32x4_epi32(v, 1));
    _mm_storeu_si128((__m128i *)(p + 2 * s), _mm512_extracti32x4_epi32(v, 2));
    _mm_storeu_si128((__m128i *)(p + 3 * s), _mm512_extracti32x4_epi32(v, 3));
}

static inline SX_TARGET sx_vec sx_and(sx_vec a, sx_vec b)
{
    return _mm512_and_si512(a, b);
}

static inline SX_TARGET sx_vec sx_xor(sx_vec a, sx_vec b)
{
    return _mm512_xor_si512(a, b);
}

static inline SX_TARGET sx_vec sx_set1_16(uint16_t x)
{
    return _mm512_set1_epi16((short)x);
}

#define SX_SRLI16(v, n) _mm512_srli_epi16(v, n)
#define SX_SLLI16(v, n) _mm512_slli_epi16(v, n)

static inline SX_TARGET sx_vec sx_unpacklo8(sx_vec a, sx_vec b)
{
    return _mm512_unpacklo_epi8(a, b);
}

static inline SX_TARGET sx_vec sx_unpackhi8(sx_vec a, sx_vec b)
{
    return _mm512_unpackhi_epi8(a, b);
}

static inline SX_TARGET sx_vec sx_packus16(sx_vec a, sx_vec b)
{
    return _mm512_packus_epi16(a, b);
}

#include "shuffle_x86.h"
#endif
