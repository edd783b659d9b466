/* blocks.h: the decoded-tile cache's large blocks, on huge pages.
 *
 * A tile decoded into fresh memory costs the kernel a page fault, a page
 * cleared and a page put on its lists for every 4 KiB; on 2 MiB pages
 * (transparent huge pages, asked for with madvise) that work is done once
 * a 2 MiB page.  Blocks of 256 KiB and more come from regions of 2 MiB,
 * 2 MiB-aligned, each cut into slots of one size (the block's size
 * rounded up to 64 KiB; a region is used only when its slots leave at
 * most an eighth of it unused); blocks of 2 MiB and more have a region
 * of their own.  A slot given back while its region has others in use
 * has its pages returned to the system (MADV_DONTNEED); a region with
 * none in use is unmapped.  The memory they hold is therefore the slots
 * in use, which the cache counts.  The regions that have a free slot are
 * listed by slot size, so a block is found, given and given back in
 * O(log regions), whatever their number.
 *
 * Not thread-safe: the cache calls these under its lock.  Where the
 * system has no madvise(MADV_HUGEPAGE), and under AddressSanitizer
 * (which must see every tile's bounds), nothing is given: the cache
 * uses malloc. */
#ifndef TDB_BLOCKS_H
#define TDB_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/mman.h>

#define TDB_BLOCKS_MIN (256u << 10)     /* smaller blocks: malloc */

/* TDB_BLOCKS_ON: 1 where blocks are given, 0 where malloc serves all */
#if defined(__SANITIZE_ADDRESS__)
#define TDB_BLOCKS_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TDB_BLOCKS_ON 0
#endif
#endif
#ifndef TDB_BLOCKS_ON
#if defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
#define TDB_BLOCKS_ON 1
#else
#define TDB_BLOCKS_ON 0
#endif
#endif

struct tdb_blocks_region;

/* slot sizes of regions of more than one slot: 64 KiB steps below 2 MiB */
#define TDB_BLOCKS_SIZES 32

/* The bases of the regions of one slot size that have a free slot. */
struct tdb_blocks_free {
    uint8_t **base;
    size_t n, cap;
};

struct tdb_blocks {
    struct tdb_blocks_region *r;        /* sorted by address */
    size_t n, cap;
    uint64_t mapped;                    /* bytes of the regions */
    struct tdb_blocks_free free[TDB_BLOCKS_SIZES];  /* by slot / 64 KiB */
};

/* A block of at least `size` bytes into *p, its size into *cap.
 * @return 0, or -1 when this size is not served here (or no memory):
 * the caller uses malloc. */
int tdb_blocks_get(struct tdb_blocks *b, size_t size, void **p, size_t *cap);

/* True when p is a block of b's (one tdb_blocks_get gave). */
bool tdb_blocks_owns(const struct tdb_blocks *b, const void *p);

/* Gives block p back when it is one of b's.  @return true when it was
 * (then it is b's again), false when p is none of b's (untouched). */
bool tdb_blocks_put(struct tdb_blocks *b, void *p);

/* Unmaps every region (the blocks in use with them). */
void tdb_blocks_fini(struct tdb_blocks *b);

#endif
