/* test_rle.c: the run-length filter (format/filters/rle.c) on fixed-size
 * and var-sized cells: hand-made vectors, long runs, and a damaged tile of
 * strings decoded under a capped address space. */
#include "../unit.h"

#include "filters/compress_common.h"
#include "../capped.h"
#include "tree/json.h"
#include "model/schema.h"
#include "write/writer.h"

#include <bzlib.h>
#include <lz4.h>
#include <openssl/evp.h>
#include <webp/decode.h>
#include <webp/encode.h>
#include <zlib.h>
#include <zstd.h>
#include "fixture.h"

/* ------------------------------------------------------------------- RLE */

static void test_rle_fixed_hand_vector(void)
{
    /* int32 values 7 7 7 9: runs (07000000, 0003) (09000000, 0001). */
    static const uint8_t vals[] = {7, 0, 0, 0, 7, 0, 0, 0,
                                   7, 0, 0, 0, 9, 0, 0, 0};
    static const uint8_t runs[] = {7, 0, 0, 0, 0, 3, 9, 0, 0, 0, 0, 1};
    uint8_t md[16];
    size_t n = 0;
    struct fx x;
    struct tdb_buf emd = {0}, edata = {0};

    fx_init(&x, &tdb_filter_rle, TDB_COMPRESSOR_RLE, -1, 4);
    put32(md, &n, 0);
    put32(md, &n, 1);
    put32(md, &n, sizeof vals);
    put32(md, &n, sizeof runs);
    CHECK_EQ_INT(fx_decode(&x, md, n, runs, sizeof runs), 0);
    CHECK_EQ_INT(x.data_out.len, sizeof vals);
    CHECK_MEM(x.data_out.data, vals, sizeof vals);
    CHECK_EQ_INT(x.md_out.len, 0);

    /* The encoder writes exactly these bytes. */
    CHECK_EQ_INT(filter_encode(&tdb_filter_rle, &x.call, NULL, 0, vals,
                               sizeof vals, &emd, &edata),
                 0);
    CHECK_EQ_INT(emd.len, n);
    CHECK_MEM(emd.data, md, n);
    CHECK_EQ_INT(edata.len, sizeof runs);
    CHECK_MEM(edata.data, runs, sizeof runs);

    /* Runs not a whole number of (value, length) pairs. */
    CHECK_EQ_INT(fx_decode(&x, md, n, runs, sizeof runs - 1), TDB_E_CORRUPT);
    fx_abuse(&x, md, n, runs, sizeof runs, true);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
    fx_free(&x);
}

static void test_rle_fixed_long_runs(void)
{
    /* 70000 equal bytes: a run of 65535 then one of 4465 (0x1171). */
    size_t n = 70000;
    uint8_t *v = malloc(n);
    struct fx x;
    struct tdb_buf emd = {0}, edata = {0};
    static const uint8_t want[] = {0x42, 0xff, 0xff, 0x42, 0x11, 0x71};

    memset(v, 0x42, n);
    fx_init(&x, &tdb_filter_rle, TDB_COMPRESSOR_RLE, -1, 1);
    CHECK_EQ_INT(filter_encode(&tdb_filter_rle, &x.call, NULL, 0, v, n, &emd,
                               &edata),
                 0);
    CHECK_EQ_INT(edata.len, sizeof want);
    CHECK_MEM(edata.data, want, sizeof want);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
    fx_roundtrip(&x, NULL, 0, v, n);
    free(v);

    /* Round trips of several value sizes, with metadata of whole values. */
    uint64_t cs[] = {1, 2, 8, 12};
    for (size_t k = 0; k < 4; k++) {
        uint8_t meta[24];
        size_t sizes[] = {0, (size_t)cs[k], 10 * (size_t)cs[k], 24000};
        memset(meta, 3, sizeof meta);
        x.call.cell_size = cs[k];
        for (size_t s = 0; s < 4; s++) {
            uint8_t *w = make_values(sizes[s]);
            fx_roundtrip(&x, NULL, 0, w, sizes[s]);
            fx_roundtrip(&x, meta, sizeof meta, w, sizes[s]);
            free(w);
        }
    }
    /* Input that is not whole values cannot be encoded. */
    x.call.cell_size = 4;
    CHECK_EQ_INT(filter_encode(&tdb_filter_rle, &x.call, NULL, 0,
                               (const uint8_t *)"abcde", 5, &emd, &edata),
                 TDB_E_INVAL);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
    fx_free(&x);
}

/* Strings "aa" "aa" "b" "" "" "": runs (2,"aa") (1,"b") (3,""). */
static void test_rle_strings_hand_vector(void)
{
    static const uint8_t enc[] = {2, 2, 'a', 'a', 1, 1, 'b', 3, 0};
    static const uint64_t want_off[] = {0, 2, 4, 5, 5, 5};
    uint8_t md[32];
    size_t n = 0;
    struct fx x;
    struct tdb_buf emd = {0}, edata = {0};

    fx_init(&x, &tdb_filter_rle, TDB_COMPRESSOR_RLE, -1, 1);
    x.call.datatype = TDB_STRING_ASCII;
    x.call.is_var = true;
    x.call.strings_with_offsets = true;
    put32(md, &n, 0);
    put32(md, &n, 1);
    put32(md, &n, 5);
    put32(md, &n, sizeof enc);
    put32(md, &n, 6 * 8);
    md[n++] = 1;
    md[n++] = 1;
    CHECK_EQ_INT(fx_decode(&x, md, n, enc, sizeof enc), 0);
    CHECK_EQ_INT(x.data_out.len, 5);
    CHECK_MEM(x.data_out.data, "aaaab", 5);
    CHECK_EQ_INT(x.offsets.len, sizeof want_off);
    for (size_t i = 0; i < 6 && x.offsets.len == sizeof want_off; i++)
        CHECK_EQ_INT(tdb_le64(x.offsets.data + 8 * i), want_off[i]);

    /* The encoder writes exactly these bytes. */
    x.call.in_offsets = want_off;
    x.call.n_offsets = 6;
    CHECK_EQ_INT(filter_encode(&tdb_filter_rle, &x.call, NULL, 0,
                               (const uint8_t *)"aaaab", 5, &emd, &edata),
                 0);
    CHECK_EQ_INT(emd.len, n);
    CHECK_MEM(emd.data, md, n);
    CHECK_EQ_INT(edata.len, sizeof enc);
    CHECK_MEM(edata.data, enc, sizeof enc);

    /* A cell count that disagrees with the runs. */
    tdb_st32(md + 16, 5 * 8);
    CHECK_EQ_INT(fx_decode(&x, md, n, enc, sizeof enc), TDB_E_CORRUPT);
    tdb_st32(md + 16, 6 * 8);
    /* A string running past the data. */
    {
        uint8_t bad[sizeof enc];
        memcpy(bad, enc, sizeof enc);
        bad[5] = 9;
        CHECK_EQ_INT(fx_decode(&x, md, n, bad, sizeof bad), TDB_E_CORRUPT);
    }
    /* No offsets buffer is a caller error. */
    x.call.offsets = NULL;
    CHECK_EQ_INT(fx_decode(&x, md, n, enc, sizeof enc), TDB_E_INVAL);
    x.call.offsets = &x.offsets;
    fx_abuse(&x, md, n, enc, sizeof enc, true);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
    fx_free(&x);
}

/* RLE strings: one run of 2^29 - 1 copies of an 8-byte string, 39 bytes
 * declaring 4 GiB of strings and 4 GiB of offsets, both allocated. */
static void test_rle_strings_damaged_bounded(void)
{
    struct tdb_filter f = capped_filter(TDB_FILTER_RLE, 4);
    uint8_t md[22];
    tdb_st32(md, 0);
    tdb_st32(md + 4, 1);
    tdb_st32(md + 8, 0xfffffff8);  /* string bytes */
    tdb_st32(md + 12, 17);         /* encoded bytes */
    tdb_st32(md + 16, 0xfffffff8); /* offsets bytes */
    md[20] = 8;                    /* run length width */
    md[21] = 1;                    /* string length width */
    const uint8_t data[17] = {0, 0, 0, 0, 0x1f, 0xff, 0xff, 0xff, 8,
                              'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    struct tdb_buf t = {0};
    /* the chunk declares 48 bytes of strings */
    capped_tile(&t, 48, md, sizeof md, data, sizeof data);
    CHECK_CAPPED(&f, TDB_STRING_ASCII, true, &t, "RLE: metadata records "
                 "4294967288 string bytes");
    /* the chunk declares 4 GiB: the cells are too many for any tile */
    capped_tile(&t, 0xfffffff8, md, sizeof md, data, sizeof data);
    CHECK_CAPPED(&f, TDB_STRING_ASCII, true, &t, "536870911 cells, more than "
                 "the tile allows");
    tdb_buf_free(&t);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_rle_strings_damaged_bounded);
    RUN(test_rle_fixed_hand_vector);
    RUN(test_rle_fixed_long_runs);
    RUN(test_rle_strings_hand_vector);
    return unit_done();
}
