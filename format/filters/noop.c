/* noop.c: the NONE filter, a pass-through (filter_pipeline.md, type 0). */
#include "filter.h"

static int noop_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                             uint32_t version, struct tdb_error *err)
{
    return 0; /* no options */
}

static int noop_write_options(const struct tdb_filter *f, struct tdb_buf *out)
{
    return 0;
}

static int noop_decode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    const uint8_t *rest = NULL;
    size_t n = tdb_cur_left(&st->md);

    if (n > 0)
        tdb_cur_bytes(&st->md, n, &rest);
    if (tdb_buf_append(st->md_out, rest, n) < 0 ||
        tdb_buf_append(st->data_out, st->data, st->size) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "NONE: out of memory");
    return 0;
}

static int noop_encode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    if (tdb_buf_append(st->md_out, st->md.p, st->md.len) < 0 ||
        tdb_buf_append(st->data_out, st->data, st->size) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "NONE: out of memory");
    return 0;
}

const struct tdb_filter_ops tdb_filter_noop = {
    .name = "NONE",
    .type = TDB_FILTER_NONE,
    .read_options = noop_read_options,
    .write_options = noop_write_options,
    .output_type = NULL,
    .decode = noop_decode,
    .encode = noop_encode,
};
