/* fixture.c: what the tests of the filters share (see fixture.h). */
#include "fixture.h"
#include "../capped.h"

#include <stdlib.h>
#include <string.h>

void fx_init(struct fx *x, const struct tdb_filter_ops *ops,
             uint8_t compressor, int32_t level, uint64_t cell_size)
{
    memset(x, 0, sizeof *x);
    x->f.type = ops->type;
    x->f.ops = ops;
    tdb_filter_set_int(&x->f, "compressor", compressor);
    tdb_filter_set_int(&x->f, "level", level);
    tdb_filter_set_int(&x->f, "reinterpret_datatype", TDB_ANY);
    x->call.filter = &x->f;
    x->call.datatype = TDB_UINT8;
    x->call.cell_size = cell_size;
    x->call.version = 22;
    x->call.err = &x->err;
    x->call.offsets = &x->offsets;
}

void fx_reset(struct fx *x)
{
    tdb_buf_reset(&x->md_out);
    tdb_buf_reset(&x->data_out);
    tdb_buf_reset(&x->offsets);
    x->err.code = 0;
    x->err.msg[0] = 0;
}

void fx_free(struct fx *x)
{
    tdb_buf_free(&x->md_out);
    tdb_buf_free(&x->data_out);
    tdb_buf_free(&x->offsets);
}

int fx_decode(struct fx *x, const void *md, size_t md_len,
              const void *data, size_t size)
{
    int rc;

    fx_reset(x);
    rc = filter_decode(x->f.ops, &x->call, md, md_len, data, size,
                       &x->md_out, &x->data_out);
    if (rc < 0) {
        /* a failed call always explains itself */
        CHECK_EQ_INT(x->err.code, rc);
        CHECK(x->err.msg[0] != 0);
    }
    return rc;
}

/* Encodes (md, data), decodes the result and checks both come back. */
void fx_roundtrip(struct fx *x, const uint8_t *md, size_t md_len,
                  const uint8_t *data, size_t size)
{
    struct tdb_buf emd = {0}, edata = {0};
    int rc;

    fx_reset(x);
    rc = filter_encode(x->f.ops, &x->call, md, md_len, data, size, &emd,
                       &edata);
    CHECK_EQ_INT(rc, 0);
    rc = fx_decode(x, emd.data, emd.len, edata.data, edata.len);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(x->md_out.len, md_len);
    CHECK_EQ_INT(x->data_out.len, size);
    if (rc == 0 && x->md_out.len == md_len && md_len)
        CHECK_MEM(x->md_out.data, md, md_len);
    if (rc == 0 && x->data_out.len == size && size)
        CHECK_MEM(x->data_out.data, data, size);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
}

/* Every truncation of md and of data, and every single-byte corruption of
 * md (and many of data), must give an error or (for corruptions a codec
 * cannot see) a result, never a crash; truncations of md must always
 * fail. */
void fx_abuse(struct fx *x, const uint8_t *md, size_t md_len,
              const uint8_t *data, size_t size, bool data_cut_fails)
{
    uint8_t *copy = malloc(md_len + size + 1);

    for (size_t cut = 0; cut < md_len; cut++)
        CHECK(fx_decode(x, md, cut, data, size) < 0);
    size_t step = size / 150 + 1; /* bound the work on large inputs */

    for (size_t cut = 0; cut < size; cut += step) {
        int rc = fx_decode(x, md, md_len, data, cut);
        if (data_cut_fails)
            CHECK(rc < 0);
    }
    for (size_t i = 0; i < md_len; i++) {
        memcpy(copy, md, md_len);
        copy[i] ^= 0x5a;
        (void)fx_decode(x, copy, md_len, data, size);
    }
    for (size_t i = 0; i < size; i += step) {
        memcpy(copy, data, size);
        copy[i] ^= 0xa5;
        (void)fx_decode(x, md, md_len, copy, size);
    }
    free(copy);
}

void put32(uint8_t *p, size_t *n, uint32_t v)
{
    tdb_st32(p + *n, v);
    *n += 4;
}

/* A test input: many values with runs and some noise. */
uint8_t *make_values(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (i / 64) % 3 == 0 ? (uint8_t)(s >> 24) : (uint8_t)(i / 16);
    }
    return p;
}

struct tdb_filter capped_filter(unsigned type, uint8_t compressor)
{
    struct tdb_filter f;
    memset(&f, 0, sizeof f);
    f.type = (uint8_t)type;
    f.ops = tdb_filter_lookup(type);
    tdb_filter_set_int(&f, "compressor", compressor);
    tdb_filter_set_int(&f, "reinterpret_datatype", TDB_ANY);
    return f;
}
