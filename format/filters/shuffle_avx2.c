/* shuffle_avx2.c: the AVX2 path of the byte and bit transpositions of
 * BYTESHUFFLE and BITSHUFFLE (shuffle_simd.h, shuffle_x86.h). */
#include "shuffle_simd.h"

#if TDB_SHUFFLE_X86
#include <immintrin.h>

#define SX_TARGET __attribute__((target("avx2")))
#define SX_V 32
#define SX_PATH tdb_shuffle_avx2
#define SX_NAME "avx2"
typedef __m256i sx_vec;

static inline SX_TARGET sx_vec sx_load(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

static inline SX_TARGET void sx_store(uint8_t *p, sx_vec v)
{
    _mm256_storeu_si256((__m256i *)p, v);
}

static inline SX_TARGET sx_vec sx_load_lanes(const uint8_t *p, size_t s)
{
    __m128i lo = _mm_loadu_si128((const __m128i *)p);
    __m128i hi = _mm_loadu_si128((const __m128i *)(p + s));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

static inline SX_TARGET void sx_store_lanes(uint8_t *p, size_t s, sx_vec v)
{
    _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(v));
    _mm_storeu_si128((__m128i *)(p + s), _mm256_extracti128_si256(v, 1));
}

static inline SX_TARGET sx_vec sx_and(sx_vec a, sx_vec b)
{
    return _mm256_and_si256(a, b);
}

static inline SX_TARGET sx_vec sx_xor(sx_vec a, sx_vec b)
{
    return _mm256_xor_si256(a, b);
}

static inline SX_TARGET sx_vec sx_set1_16(uint16_t x)
{
    return _mm256_set1_epi16((short)x);
}

#define SX_SRLI16(v, n) _mm256_srli_epi16(v, n)
#define SX_SLLI16(v, n) _mm256_slli_epi16(v, n)

static inline SX_TARGET sx_vec sx_unpacklo8(sx_vec a, sx_vec b)
{
    return _mm256_unpacklo_epi8(a, b);
}

static inline SX_TARGET sx_vec sx_unpackhi8(sx_vec a, sx_vec b)
{
    return _mm256_unpackhi_epi8(a, b);
}

static inline SX_TARGET sx_vec sx_packus16(sx_vec a, sx_vec b)
{
    return _mm256_packus_epi16(a, b);
}

#include "shuffle_x86.h"
#endif
