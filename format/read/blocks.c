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
    size_t listed;      /* 1 + its place in b->free[slot / BLK_UNIT], or 0 */
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

/* The list of the regions of r's slot size with a free slot, or NULL
 * for a region of one slot (never listed: it is full while it exists). */
static struct tdb_blocks_free *blk_list(struct tdb_blocks *b,
                                        const struct tdb_blocks_region *r)
{
    return r->nslots > 1 ? &b->free[r->slot / BLK_UNIT] : NULL;
}

/* Takes region r off its list. */
static void blk_unlist(struct tdb_blocks *b, struct tdb_blocks_region *r)
{
    struct tdb_blocks_free *l = blk_list(b, r);
    if (!l || !r->listed)
        return;
    size_t at = r->listed - 1;
    r->listed = 0;
    uint8_t *last = l->base[--l->n];
    if (at < l->n) {
        l->base[at] = last;
        b->r[blk_find(b, last)].listed = at + 1;
    }
}

/* Lists region r as having a free slot.  Without memory for the list it
 * stays off it: its free slots are then not reused, and it is unmapped
 * once none is used, as any region. */
static void blk_relist(struct tdb_blocks *b, struct tdb_blocks_region *r)
{
    struct tdb_blocks_free *l = blk_list(b, r);
    if (!l || r->listed)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        uint8_t **v = realloc(l->base, cap * sizeof *v);
        if (!v)
            return;
        l->base = v;
        l->cap = cap;
    }
    l->base[l->n++] = r->base;
    r->listed = l->n;
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
    b->r[i] = (struct tdb_blocks_region){p, len, slot, n, 0, 0};
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
    const struct tdb_blocks_free *l = n > 1 ? &b->free[slot / BLK_UNIT] : NULL;
    long at;
    if (l && l->n > 0)
        at = (long)blk_find(b, l->base[l->n - 1]);
    else if ((at = blk_add(b, len, slot, n)) < 0)
        return -1;
    struct tdb_blocks_region *r = &b->r[at];
    unsigned k = (unsigned)__builtin_ctz(~r->used);
    r->used |= 1u << k;
    if (r->used == (1u << r->nslots) - 1)
        blk_unlist(b, r);
    else
        blk_relist(b, r);
    *p = r->base + k * slot;
    *cap = slot;
    return 0;
#endif
}

bool tdb_blocks_put(struct tdb_blocks *b, void *p)
{
    size_t i = blk_find(b, p);
    if (i >= b->n || (uintptr_t)p < (uintptr_t)b->r[i].base)
        return false;
    struct tdb_blocks_region *r = &b->r[i];
    size_t k = (size_t)((uint8_t *)p - r->base) / r->slot;
    r->used &= ~(1u << k);
    if (r->used) {
#ifdef MADV_DONTNEED
        madvise(r->base + k * r->slot, r->slot, MADV_DONTNEED);
#endif
        blk_relist(b, r);
        return true;
    }
    blk_unlist(b, r);
    munmap(r->base, r->len);
    b->mapped -= r->len;
    memmove(&b->r[i], &b->r[i + 1], (b->n - i - 1) * sizeof *b->r);
    b->n--;
    return true;
}

void tdb_blocks_fini(struct tdb_blocks *b)
{
    for (size_t i = 0; i < b->n; i++)
        munmap(b->r[i].base, b->r[i].len);
    free(b->r);
    for (size_t i = 0; i < TDB_BLOCKS_SIZES; i++)
        free(b->free[i].base);
    memset(b, 0, sizeof *b);
}
