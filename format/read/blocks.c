/* blocks.c: the tile cache's large blocks, in 2 MiB-aligned regions of
 * transparent huge pages (see blocks.h). */
#include "read/blocks.h"

#include <stdlib.h>
#include <string.h>

#define BLK_HUGE ((size_t)2 << 20)
#define BLK_UNIT ((size_t)64 << 10)

struct tdb_blocks_region {
    uint8_t *base;
    size_t len;         /* 2 MiB, or one block's slot of more */
    size_t slot;        /* bytes a slot */
    unsigned nslots;    /* at most 8 */
    unsigned used;      /* a bit per slot in use */
};

/* The index of the region holding p, or of the first one after it. */
static size_t blk_find(const struct tdb_blocks *b, const void *p)
{
    size_t lo = 0, hi = b->n;
    uintptr_t a = (uintptr_t)p;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct tdb_blocks_region *r = &b->r[mid];
        if (a >= (uintptr_t)r->base + r->len)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool tdb_blocks_owns(const struct tdb_blocks *b, const void *p)
{
    size_t i = blk_find(b, p);
    return i < b->n && (uintptr_t)p >= (uintptr_t)b->r[i].base;
}

#if TDB_BLOCKS_ON
/* Maps len bytes at a 2 MiB boundary, asked to be on huge pages.
 * @return them, or NULL. */
static uint8_t *blk_map(size_t len)
{
    size_t span = len + BLK_HUGE;
    uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)m + BLK_HUGE - 1) & ~(BLK_HUGE - 1));
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (m + span > p + len)
        munmap(p + len, (size_t)(m + span - (p + len)));
    if (madvise(p, len, MADV_HUGEPAGE) != 0) {
        munmap(p, len);
        return NULL;
    }
    return p;
}

/* A new region of n slots of `slot` bytes into b (sorted).  @return its
 * index, or -1. */
static long blk_add(struct tdb_blocks *b, size_t len, size_t slot, unsigned n)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        struct tdb_blocks_region *r = realloc(b->r, cap * sizeof *r);
        if (!r)
            return -1;
        b->r = r;
        b->cap = cap;
    }
    uint8_t *p = blk_map(len);
    if (!p)
        return -1;
    size_t i = blk_find(b, p);
    memmove(&b->r[i + 1], &b->r[i], (b->n - i) * sizeof *b->r);
    b->r[i] = (struct tdb_blocks_region){p, len, slot, n, 0};
    b->n++;
    b->mapped += len;
    return (long)i;
}
#endif

int tdb_blocks_get(struct tdb_blocks *b, size_t size, void **p, size_t *cap)
{
#if !TDB_BLOCKS_ON
    (void)b, (void)size, (void)p, (void)cap;
    return -1;
#else
    if (size < TDB_BLOCKS_MIN || size > SIZE_MAX / 2)
        return -1;
    size_t slot = (size + BLK_UNIT - 1) & ~(BLK_UNIT - 1);
    size_t len = slot < BLK_HUGE ? BLK_HUGE : slot;
    unsigned n = (unsigned)(len / slot);
    if ((len - n * slot) * 8 > len)
        return -1;
    long at = -1;
    for (size_t i = 0; i < b->n && at < 0; i++)
        if (b->r[i].slot == slot && b->r[i].used != (1u << n) - 1)
            at = (long)i;
    if (at < 0 && (at = blk_add(b, len, slot, n)) < 0)
        return -1;
    struct tdb_blocks_region *r = &b->r[at];
    unsigned k = 0;
    while (r->used & (1u << k))
        k++;
    r->used |= 1u << k;
    *p = r->base + k * slot;
    *cap = slot;
    return 0;
#endif
}

void tdb_blocks_put(struct tdb_blocks *b, void *p)
{
    size_t i = blk_find(b, p);
    if (i >= b->n || (uintptr_t)p < (uintptr_t)b->r[i].base)
        return;
    struct tdb_blocks_region *r = &b->r[i];
    size_t k = (size_t)((uint8_t *)p - r->base) / r->slot;
    r->used &= ~(1u << k);
    if (r->used) {
#ifdef MADV_DONTNEED
        madvise(r->base + k * r->slot, r->slot, MADV_DONTNEED);
#endif
        return;
    }
    munmap(r->base, r->len);
    b->mapped -= r->len;
    memmove(&b->r[i], &b->r[i + 1], (b->n - i - 1) * sizeof *b->r);
    b->n--;
}

void tdb_blocks_fini(struct tdb_blocks *b)
{
    for (size_t i = 0; i < b->n; i++)
        munmap(b->r[i].base, b->r[i].len);
    free(b->r);
    memset(b, 0, sizeof *b);
}
