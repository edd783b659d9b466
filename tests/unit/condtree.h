/* condtree.h: delete conditions serialised for the tests, byte by byte as
 * format_spec/delete_commit_file.md lays them out (all little-endian):
 *
 *   expression node: u8 0, u8 combination (AND 0, OR 1, NOT 2),
 *                    u64 child count, the children
 *   value node:      u8 1, u8 op (LT 0, LE 1, GT 2, GE 3, EQ 4, NE 5,
 *                    IN 6, NOT_IN 7, ALWAYS_TRUE 253, ALWAYS_FALSE 254),
 *                    u32 field name length, the name, u64 value length,
 *                    the value; IN / NOT_IN then u64 offsets length and
 *                    the u64 start of each member in the value
 *
 * A delete commit file (__commits/__T_T_UUID_V.del) is one generic tile
 * holding such a tree: the negation of the user's condition, the cells to
 * keep. */
#ifndef TDB_UNIT_CONDTREE_H
#define TDB_UNIT_CONDTREE_H

#include "core/core.h"
#include "model/generic_tile.h"
#include "unit.h"

#include <inttypes.h>

enum { LT = 0, LE = 1, GT = 2, GE = 3, EQ = 4, NE = 5, IN = 6, NOT_IN = 7,
       ALWAYS_TRUE = 253, ALWAYS_FALSE = 254 };
enum { AND = 0, OR = 1, NOT = 2 };

static inline void cond_expr(struct tdb_buf *b, uint8_t op, uint64_t nchildren)
{
    tdb_buf_put_u8(b, 0);
    tdb_buf_put_u8(b, op);
    tdb_buf_put_u64(b, nchildren);
}

static inline void cond_value(struct tdb_buf *b, uint8_t op, const char *field,
                              const void *val, uint64_t size)
{
    tdb_buf_put_u8(b, 1);
    tdb_buf_put_u8(b, op);
    tdb_buf_put_u32(b, (uint32_t)strlen(field));
    tdb_buf_append(b, field, strlen(field));
    tdb_buf_put_u64(b, size);
    if (size)
        tdb_buf_append(b, val, (size_t)size);
}

/* IN / NOT_IN over n members of `width` bytes each (0: NUL-terminated
 * strings). */
static inline void cond_set(struct tdb_buf *b, uint8_t op, const char *field,
                            const void *members, size_t n, size_t width)
{
    const char *const *strs = members;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += width ? width : strlen(strs[i]);
    tdb_buf_put_u8(b, 1);
    tdb_buf_put_u8(b, op);
    tdb_buf_put_u32(b, (uint32_t)strlen(field));
    tdb_buf_append(b, field, strlen(field));
    tdb_buf_put_u64(b, total);
    for (size_t i = 0; i < n; i++) {
        if (width)
            tdb_buf_append(b, (const uint8_t *)members + i * width, width);
        else
            tdb_buf_append(b, strs[i], strlen(strs[i]));
    }
    tdb_buf_put_u64(b, 8 * n);
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        tdb_buf_put_u64(b, off);
        off += width ? width : strlen(strs[i]);
    }
}

/* The path of cond_commit's delete commit (timestamp ts, uuid `seq`). */
static inline void cond_commit_path(char *path, size_t size, uint64_t ts,
                                    unsigned seq)
{
    snprintf(path, size, "__commits/__%" PRIu64 "_%" PRIu64 "_%032x_22.del",
             ts, ts, seq);
}

/* Stores tree `cond` as the delete commit of timestamp ts in the array at
 * the root of io (the uuid made of `seq`); a failure fails the test. */
static inline void cond_commit(const struct tdb_io *io, uint64_t ts,
                               unsigned seq, const struct tdb_buf *cond)
{
    struct tdb_buf tile = {0};
    struct tdb_error err = {0};
    char path[128];
    CHECK_EQ_INT(tdb_generic_tile_encode(cond->data, cond->len,
                                         &(struct tdb_gt_filtering){NULL, TDB_CHAR, 1},
                                         NULL, &tile, &err), 0);
    cond_commit_path(path, sizeof path, ts, seq);
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, tile.data, tile.len), 0);
    tdb_buf_free(&tile);
}

#endif
