/* test_dictionary.c: the dictionary filter (format/filters/dictionary.c):
 * a hand-made vector, and strings through it and the run-length filter
 * and back. */
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

/* Fills off[0..cells) and s with string variant `variant` of
 * test_rle_dict_strings_roundtrip; returns the bytes in s. */
static size_t strings_fill(uint64_t *off, uint8_t *s, size_t cells,
                           int variant)
{
    size_t len = 0;
    for (size_t i = 0; i < cells; i++) {
        size_t l;
        off[i] = len;
        if (variant == 3)      /* one long string: 2-byte lengths */
            l = i == 500 ? 300 : 3;
        else if (variant == 4) /* a run of 600: 2-byte run length */
            l = i < 600 ? 0 : 1 + i % 5;
        else
            l = (i / 7) % 6;
        for (size_t j = 0; j < l; j++)
            s[len + j] = (uint8_t)('a' + (i / 7 + j) % 26);
        len += l;
    }
    return len;
}

/* The strings s[0..len) at off[0..cells) of variant `variant` round
 * trip through filter k (0: RLE, 1: dictionary) of x, with the widths
 * the variant calls for. */
static void strings_roundtrip(struct fx *x, size_t k, int variant,
                              const uint64_t *off, size_t cells,
                              const uint8_t *s, size_t len)
{
    struct tdb_buf emd = {0}, edata = {0};
    x->call.in_offsets = off;
    x->call.n_offsets = cells;
    int rc = filter_encode(x->f.ops, &x->call, NULL, 0, s, len, &emd, &edata);
    CHECK_EQ_INT(rc, 0);
    rc = fx_decode(x, emd.data, emd.len, edata.data, edata.len);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(x->data_out.len, len);
    if (len && x->data_out.len == len)
        CHECK_MEM(x->data_out.data, s, len);
    CHECK_EQ_INT(x->offsets.len, cells * 8);
    for (size_t i = 0; i < cells && x->offsets.len == cells * 8; i++)
        CHECK_EQ_INT(tdb_le64(x->offsets.data + 8 * i), off[i]);
    if (variant == 3 && k == 0)
        CHECK_EQ_INT(emd.data[21], 2); /* string length width */
    if (variant == 4 && k == 0)
        CHECK_EQ_INT(emd.data[20], 2); /* run length width */
    if (variant == 2 && k == 1) {
        CHECK_EQ_INT(emd.data[20], 2); /* 1000 ids */
        CHECK_EQ_INT(emd.data[21], 1);
    }
    if (variant == 2)
        fx_abuse(x, emd.data, emd.len, edata.data, edata.len, false);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
}

/* Offsets out of order cannot be encoded. */
static void strings_unordered(struct fx *x)
{
    uint64_t bad[] = {0, 3, 2};
    struct tdb_buf emd = {0}, edata = {0};
    x->call.in_offsets = bad;
    x->call.n_offsets = 3;
    CHECK_EQ_INT(filter_encode(x->f.ops, &x->call, NULL, 0,
                               (const uint8_t *)"abcd", 4, &emd, &edata),
                 TDB_E_INVAL);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
}

/* Round trips of strings; widths grow with long strings and long runs. */
static void test_rle_dict_strings_roundtrip(void)
{
    const struct tdb_filter_ops *ops[] = {&tdb_filter_rle,
                                          &tdb_filter_dictionary};
    uint8_t comp[] = {TDB_COMPRESSOR_RLE, TDB_COMPRESSOR_DICTIONARY};
    size_t ncell = 1000;
    uint64_t *off = malloc(ncell * sizeof *off);
    uint8_t *s = malloc(ncell * 400);

    for (size_t k = 0; k < 2; k++) {
        struct fx x;
        fx_init(&x, ops[k], comp[k], -1, 1);
        x.call.datatype = TDB_STRING_UTF8;
        x.call.is_var = true;
        x.call.strings_with_offsets = true;
        for (int variant = 0; variant < 5; variant++) {
            size_t cells = variant == 0 ? 0 : variant == 1 ? 1 : ncell;
            size_t len = strings_fill(off, s, cells, variant);
            strings_roundtrip(&x, k, variant, off, cells, s, len);
        }
        strings_unordered(&x);
        fx_free(&x);
    }
    free(off);
    free(s);
}

/* ------------------------------------------------------------ DICTIONARY */

/* "HG54" "A" "HG54" "HG54": dictionary [04 HG54][01 A], ids 00 01 00 00. */
static void test_dictionary_hand_vector(void)
{
    static const uint8_t ids[] = {0, 1, 0, 0};
    static const uint8_t dict[] = {4, 'H', 'G', '5', '4', 1, 'A'};
    static const uint64_t want_off[] = {0, 4, 5, 9};
    const char *want = "HG54AHG54HG54";
    uint8_t md[64];
    size_t n = 0;
    struct fx x;
    struct tdb_buf emd = {0}, edata = {0};

    fx_init(&x, &tdb_filter_dictionary, TDB_COMPRESSOR_DICTIONARY, -1, 1);
    x.call.datatype = TDB_STRING_ASCII;
    x.call.is_var = true;
    x.call.strings_with_offsets = true;
    put32(md, &n, 0);
    put32(md, &n, 1);
    put32(md, &n, 13);
    put32(md, &n, sizeof ids);
    put32(md, &n, 4 * 8);
    md[n++] = 1;
    md[n++] = 1;
    put32(md, &n, sizeof dict);
    memcpy(md + n, dict, sizeof dict);
    n += sizeof dict;
    CHECK_EQ_INT(fx_decode(&x, md, n, ids, sizeof ids), 0);
    CHECK_EQ_INT(x.data_out.len, 13);
    CHECK_MEM(x.data_out.data, want, 13);
    CHECK_EQ_INT(x.offsets.len, 32);
    for (size_t i = 0; i < 4 && x.offsets.len == 32; i++)
        CHECK_EQ_INT(tdb_le64(x.offsets.data + 8 * i), want_off[i]);
    CHECK_EQ_INT(x.md_out.len, 0);

    x.call.in_offsets = want_off;
    x.call.n_offsets = 4;
    CHECK_EQ_INT(filter_encode(&tdb_filter_dictionary, &x.call, NULL, 0,
                               (const uint8_t *)want, 13, &emd, &edata),
                 0);
    CHECK_EQ_INT(emd.len, n);
    CHECK_MEM(emd.data, md, n);
    CHECK_EQ_INT(edata.len, sizeof ids);
    CHECK_MEM(edata.data, ids, sizeof ids);

    /* An id past the dictionary. */
    {
        static const uint8_t bad[] = {0, 2, 0, 0};
        CHECK_EQ_INT(fx_decode(&x, md, n, bad, sizeof bad), TDB_E_CORRUPT);
    }
    fx_abuse(&x, md, n, ids, sizeof ids, true);

    /* Fixed-size data is not something DICTIONARY can hold. */
    x.call.strings_with_offsets = false;
    CHECK_EQ_INT(fx_decode(&x, md, n, ids, sizeof ids), TDB_E_UNSUPPORTED);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
    fx_free(&x);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_rle_dict_strings_roundtrip);
    RUN(test_dictionary_hand_vector);
    return unit_done();
}
