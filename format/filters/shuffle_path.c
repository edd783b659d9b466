/* shuffle_path.c: the path of shuffle_simd.h a call names, or the fastest
 * this CPU runs (its features, as the compiler's __builtin_cpu_supports
 * reads them). */
#include "shuffle_simd.h"

const struct tdb_shuffle_path *tdb_shuffle_path(unsigned which)
{
    switch (which) {
    case TDB_SIMD_BEST:
        for (unsigned p = TDB_SIMD_COUNT - 1; p > TDB_SIMD_SCALAR; p--)
            if (tdb_shuffle_path(p))
                return tdb_shuffle_path(p);
        return &tdb_shuffle_scalar;
    case TDB_SIMD_SCALAR:
        return &tdb_shuffle_scalar;
#if TDB_SHUFFLE_X86
    case TDB_SIMD_SSE2:
        return __builtin_cpu_supports("sse2") ? &tdb_shuffle_sse2 : NULL;
    case TDB_SIMD_AVX2:
        return __builtin_cpu_supports("avx2") ? &tdb_shuffle_avx2 : NULL;
#endif
    default:
        return NULL;
    }
}
