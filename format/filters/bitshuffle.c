/* bitshuffle.c: the BITSHUFFLE filter (tile.md, "Bitshuffle Filter").
 *
 * Encoding splits the input into a part whose length is a multiple of 8
 * bytes and, when there is a remainder, a second part holding the last
 * size % 8 bytes (the first part may then be empty).  A part whose length
 * is not a multiple of 8 and of the value width is stored as is.  Other
 * parts are shuffled in blocks of 8192 bytes; inside a block the largest
 * multiple of 8 values is bit-transposed and the bytes after it are kept.
 *
 * Transposing n values (n a multiple of 8) of w bytes: for each byte index
 * b < w and bit k < 8 (LSB first) there is a row of n/8 bytes, rows ordered
 * by b then k, in which bit (e % 8) of byte e / 8 is bit k of byte b of
 * value e: shuffle_simd.h's bit rows, by the vector path the call names. */
#include "numeric_common.h"

#define BITSHUFFLE_BLOCK 8192

/* The arguments of bitshuffle_part. */
struct bitshuffle_arg {
    const struct tdb_shuffle_path *path;
    bool un;                    /* unshuffle (decode) */
};

/* One part, shuffled (un = false) or unshuffled, appended to out. */
static int bitshuffle_part(const struct tdb_filter_call *call,
                           const uint8_t *in, size_t n, struct tdb_buf *out,
                           void *arg)
{
    unsigned w = tdb_dt_size(call->datatype);
    const struct bitshuffle_arg *a = arg;
    uint8_t *o, tmp[BITSHUFFLE_BLOCK];
    if (n == 0)
        return 0;
    if (tdb_buf_grow(out, n, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    if (n % w != 0 || n % 8 != 0) {
        memcpy(o, in, n);
        return 0;
    }
    for (size_t off = 0; off < n; off += BITSHUFFLE_BLOCK) {
        size_t blk = n - off < BITSHUFFLE_BLOCK ? n - off : BITSHUFFLE_BLOCK;
        size_t nv = blk / w;
        nv -= nv % 8;
        if (a->un)
            a->path->bit_inv(in + off, nv, w, o + off, tmp);
        else
            a->path->bit_fwd(in + off, nv, w, o + off, tmp);
        memcpy(o + off + nv * w, in + off + nv * w, blk - nv * w);
    }
    return 0;
}

static int bitshuffle_check_type(const struct tdb_filter_call *call,
                                 struct bitshuffle_arg *a)
{
    if (tdb_dt_size(call->datatype) == 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "BITSHUFFLE: unknown datatype %u", call->datatype);
    return tdb_numeric_path(call, "BITSHUFFLE", &a->path);
}

static int bitshuffle_decode(const struct tdb_filter_call *call,
                             struct tdb_filter_stage *st)
{
    struct bitshuffle_arg a = {.un = true};
    int r = bitshuffle_check_type(call, &a);
    if (r)
        return r;
    return tdb_numeric_parts_decode(call, "BITSHUFFLE", st, bitshuffle_part,
                                    &a);
}

static int bitshuffle_encode(const struct tdb_filter_call *call,
                             struct tdb_filter_stage *st)
{
    struct bitshuffle_arg a = {.un = false};
    int r = bitshuffle_check_type(call, &a);
    if (r)
        return r;
    if (st->size > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "BITSHUFFLE: input of %zu bytes exceeds 4 GiB",
                       st->size);
    size_t rem = st->size % 8, first = st->size - rem;
    if (tdb_buf_put_u32(st->md_out, rem ? 2 : 1) ||
        tdb_buf_put_u32(st->md_out, (uint32_t)first) ||
        (rem && tdb_buf_put_u32(st->md_out, (uint32_t)rem)) ||
        tdb_buf_append(st->md_out, st->md.p, st->md.len))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    r = bitshuffle_part(call, st->data, first, st->data_out, &a);
    if (!r && rem)
        r = bitshuffle_part(call, st->data + first, rem, st->data_out, &a);
    return r;
}

const struct tdb_filter_ops tdb_filter_bitshuffle = {
    .name = "BITSHUFFLE",
    .type = TDB_FILTER_BITSHUFFLE,
    .read_options = NULL,
    .write_options = NULL,
    .output_type = NULL,
    .decode = bitshuffle_decode,
    .encode = bitshuffle_encode,
};
