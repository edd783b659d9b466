/* byteshuffle.c: the BYTESHUFFLE filter (tile.md, "Byteshuffle Filter"),
 * plus the parts framing and passthrough the numeric filters share. */
#include "numeric_common.h"

#include <stdlib.h>

/* ------------------------------------------------ shared: numeric_common.h */

int tdb_numeric_pass_md(const struct tdb_filter_call *call,
                        struct tdb_cursor *md, struct tdb_buf *md_out)
{
    const uint8_t *rest;
    size_t left = tdb_cur_left(md);
    if (tdb_cur_bytes(md, left, &rest))
        return tdb_err(call->err, TDB_E_CORRUPT, "metadata cursor is bad");
    if (tdb_buf_append(md_out, rest, left))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    return 0;
}

int tdb_numeric_passthrough(const struct tdb_filter_call *call,
                            struct tdb_filter_stage *st)
{
    int r = tdb_numeric_pass_md(call, &st->md, st->md_out);
    if (!r && tdb_buf_append(st->data_out, st->data, st->size))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    return r;
}

int tdb_numeric_passthrough_enc(const struct tdb_filter_call *call,
                                struct tdb_filter_stage *st)
{
    if (tdb_buf_append(st->md_out, st->md.p, st->md.len) ||
        tdb_buf_append(st->data_out, st->data, st->size))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    return 0;
}

int tdb_numeric_parts_decode(const struct tdb_filter_call *call,
                             const char *name, struct tdb_filter_stage *st,
                             tdb_numeric_part_fn fn, void *arg)
{
    struct tdb_cursor *md = &st->md;
    const uint8_t *data = st->data;
    size_t size = st->size;
    struct tdb_buf *data_out = st->data_out;
    uint32_t nparts;
    if (tdb_cur_u32(md, &nparts))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "%s: metadata truncated (no part count)", name);
    size_t off = 0;
    for (uint32_t i = 0; i < nparts; i++) {
        uint32_t psize;
        if (tdb_cur_u32(md, &psize))
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: metadata truncated at part %u of %u", name, i,
                           nparts);
        if (psize > size - off)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: part %u of %u bytes overruns the %zu bytes of "
                           "data", name, i, psize, size);
        /* data is NULL when size is 0: no arithmetic on it */
        int r = fn(call, psize ? data + off : data, psize, data_out, arg);
        if (r)
            return r;
        off += psize;
    }
    if (off != size)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "%s: parts cover %zu of %zu bytes of data", name, off,
                       size);
    return tdb_numeric_pass_md(call, md, st->md_out);
}

int tdb_numeric_parts_header(const struct tdb_filter_call *call,
                             const char *name, uint64_t part_bytes,
                             const uint8_t *md, size_t md_size,
                             struct tdb_buf *md_out)
{
    if (part_bytes > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "%s: part of %llu bytes exceeds 4 GiB", name,
                       (unsigned long long)part_bytes);
    if (tdb_buf_put_u32(md_out, 1) ||
        tdb_buf_put_u32(md_out, (uint32_t)part_bytes) ||
        tdb_buf_append(md_out, md, md_size))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    return 0;
}

/* ------------------------------------------------------------ byteshuffle */

/* The arguments of the shuffle: value width and kernels. */
struct byteshuffle_arg {
    unsigned w;
    const struct tdb_shuffle_path *path;
};

/* The value width the shuffle works in (the size of the datatype) and the
 * vector path the call names. */
static int byteshuffle_arg(const struct tdb_filter_call *call,
                           struct byteshuffle_arg *a)
{
    a->w = tdb_dt_size(call->datatype);
    if (a->w == 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "BYTESHUFFLE: unknown datatype %u", call->datatype);
    return tdb_numeric_path(call, "BYTESHUFFLE", &a->path);
}

/* Gathers byte j of every value into row j (shuffle_simd.h's byte rows);
 * the bytes after the last whole value stay at the end unchanged.  Inverse
 * when `un`. */
static void byteshuffle_run(const uint8_t *in, size_t n,
                            const struct byteshuffle_arg *a, uint8_t *out,
                            bool un)
{
    size_t nv = n / a->w, tail = n % a->w;
    if (un)
        a->path->byte_inv(in, nv, a->w, out);
    else
        a->path->byte_fwd(in, nv, a->w, out);
    memcpy(out + n - tail, in + n - tail, tail);
}

static int byteshuffle_part(const struct tdb_filter_call *call,
                            const uint8_t *in, size_t n, struct tdb_buf *out,
                            void *arg)
{
    uint8_t *o;
    if (n == 0)
        return 0;
    if (tdb_buf_grow(out, n, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    byteshuffle_run(in, n, arg, o, true);
    return 0;
}

static int byteshuffle_decode(const struct tdb_filter_call *call,
                              struct tdb_filter_stage *st)
{
    struct byteshuffle_arg a;
    int r = byteshuffle_arg(call, &a);
    if (r)
        return r;
    return tdb_numeric_parts_decode(call, "BYTESHUFFLE", st, byteshuffle_part,
                                    &a);
}

static int byteshuffle_encode(const struct tdb_filter_call *call,
                              struct tdb_filter_stage *st)
{
    struct byteshuffle_arg a;
    int r = byteshuffle_arg(call, &a);
    if (r)
        return r;
    r = tdb_numeric_parts_header(call, "BYTESHUFFLE", st->size, st->md.p,
                                 st->md.len, st->md_out);
    if (r || st->size == 0)
        return r;
    uint8_t *o;
    if (tdb_buf_grow(st->data_out, st->size, &o))
        return tdb_err(call->err, TDB_E_NOMEM, "out of memory");
    byteshuffle_run(st->data, st->size, &a, o, false);
    return 0;
}

const struct tdb_filter_ops tdb_filter_byteshuffle = {
    .name = "BYTESHUFFLE",
    .type = TDB_FILTER_BYTESHUFFLE,
    .read_options = NULL,
    .write_options = NULL,
    .output_type = NULL,
    .decode = byteshuffle_decode,
    .encode = byteshuffle_encode,
};
