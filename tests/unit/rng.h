/* rng.h: the random sequence of the tests that draw random cells and
 * runs (xorshift64): each test sets rng_state to its seed, so that a
 * failure repeats.  One copy per test program (static). */
#ifndef TDB_UNIT_RNG_H
#define TDB_UNIT_RNG_H

#include <stdint.h>

static uint64_t rng_state;

static inline uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A number below n (0 when n is 0). */
static inline uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

#endif
