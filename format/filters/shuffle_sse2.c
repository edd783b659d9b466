/* shuffle_sse2.c: the SSE2 path of the byte and bit transpositions of
 * BYTESHUFFLE and BITSHUFFLE (shuffle_simd.h, shuffle_x86.h). */
#include "shuffle_simd.h"

#if TDB_SHUFFLE_X86
#include <immintrin.h>

#define SX_TARGET __attribute__((target("sse2")))
#define SX_V 16
#define SX_PATH tdb_shuffle_sse2
#define SX_NAME "sse2"
typedef __m128i sx_vec;

static inline SX_TARGET sx_vec sx_load(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

static inline SX_TARGET void sx_store(uint8_t *p, sx_vec v)
{
    _mm_storeu_si128((__m128i *)p, v);
}

static inline SX_TARGET sx_vec sx_load_lanes(const uint8_t *p, size_t s)
{
    (void)s;
    return sx_load(p);
}

static inline SX_TARGET void sx_store_lanes(uint8_t *p, size_t s, sx_vec v)
{
    (void)s;
    sx_store(p, v);
}

static inline SX_TARGET sx_vec sx_and(sx_vec a, sx_vec b)
{
    return _mm_and_si128(a, b);
}

static inline SX_TARGET sx_vec sx_xor(sx_vec a, sx_vec b)
{
    return _mm_xor_si128(a, b);
}

static inline SX_TARGET sx_vec sx_set1_16(uint16_t x)
{
    return _mm_set1_epi16((short)x);
}

#define SX_SRLI16(v, n) _mm_srli_epi16(v, n)
#define SX_SLLI16(v, n) _mm_slli_epi16(v, n)

static inline SX_TARGET sx_vec sx_unpacklo8(sx_vec a, sx_vec b)
{
    return _mm_unpacklo_epi8(a, b);
}

static inline SX_TARGET sx_vec sx_unpackhi8(sx_vec a, sx_vec b)
{
    return _mm_unpackhi_epi8(a, b);
}

static inline SX_TARGET sx_vec sx_packus16(sx_vec a, sx_vec b)
{
    return _mm_packus_epi16(a, b);
}

#include "shuffle_x86.h"
#endif
