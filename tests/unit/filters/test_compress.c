/* test_compress.c: unit tests of the compression, checksum and
 * encryption filters (tile.md), calling each filter's ops directly. */
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

/* ---------------------------------------------------------------- helpers */

struct fx {
    struct tdb_filter f;
    struct tdb_filter_call call;
    struct tdb_error err;
    struct tdb_buf md_out, data_out, offsets;
};

static void fx_init(struct fx *x, const struct tdb_filter_ops *ops,
                    uint8_t compressor, int32_t level, uint64_t cell_size)
{
    memset(x, 0, sizeof *x);
    x->f.type = ops->type;
    x->f.ops = ops;
    x->f.compressor = compressor;
    x->f.level = level;
    x->f.reinterpret_type = TDB_ANY;
    x->call.filter = &x->f;
    x->call.datatype = TDB_UINT8;
    x->call.cell_size = cell_size;
    x->call.version = 22;
    x->call.err = &x->err;
    x->call.offsets = &x->offsets;
}

static void fx_reset(struct fx *x)
{
    tdb_buf_reset(&x->md_out);
    tdb_buf_reset(&x->data_out);
    tdb_buf_reset(&x->offsets);
    x->err.code = 0;
    x->err.msg[0] = 0;
}

static void fx_free(struct fx *x)
{
    tdb_filter_release(&x->f);
    tdb_buf_free(&x->md_out);
    tdb_buf_free(&x->data_out);
    tdb_buf_free(&x->offsets);
}

static int fx_decode(struct fx *x, const void *md, size_t md_len,
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
static void fx_roundtrip(struct fx *x, const uint8_t *md, size_t md_len,
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
static void fx_abuse(struct fx *x, const uint8_t *md, size_t md_len,
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

static void put32(uint8_t *p, size_t *n, uint32_t v)
{
    tdb_st32(p + *n, v);
    *n += 4;
}

/* A test input: many values with runs and some noise. */
static uint8_t *make_values(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (i / 64) % 3 == 0 ? (uint8_t)(s >> 24) : (uint8_t)(i / 16);
    }
    return p;
}

/* ---------------------------------------------- the generic compressors */

/* Compresses with the library directly, as the test's reference. */
static size_t ref_compress(unsigned type, const uint8_t *src, size_t n,
                           uint8_t *dst, size_t cap)
{
    switch (type) {
    case TDB_FILTER_GZIP: {
        uLongf len = cap;
        return compress2(dst, &len, src, n, 6) == Z_OK ? len : 0;
    }
    case TDB_FILTER_ZSTD: {
        size_t r = ZSTD_compress(dst, cap, src, n, 3);
        return ZSTD_isError(r) ? 0 : r;
    }
    case TDB_FILTER_LZ4: {
        int r = LZ4_compress_default((const char *)src, (char *)dst, (int)n,
                                     (int)cap);
        return r > 0 ? (size_t)r : 0;
    }
    case TDB_FILTER_BZIP2: {
        unsigned int len = (unsigned int)cap;
        return BZ2_bzBuffToBuffCompress((char *)dst, &len, (char *)src,
                                        (unsigned int)n, 9, 0, 0) == BZ_OK
                   ? len
                   : 0;
    }
    }
    return 0;
}

struct codec_case {
    const struct tdb_filter_ops *ops;
    uint8_t compressor;
};

static const struct codec_case codecs[] = {
    {&tdb_filter_gzip, TDB_COMPRESSOR_GZIP},
    {&tdb_filter_zstd, TDB_COMPRESSOR_ZSTD},
    {&tdb_filter_lz4, TDB_COMPRESSOR_LZ4},
    {&tdb_filter_bzip2, TDB_COMPRESSOR_BZIP2},
};

/* Framing built by hand: one metadata part and one data part, each a
 * stream made by the library itself. */
static void test_compressors_hand_vector(void)
{
    const char *meta = "previous filter metadata";
    const char *text = "hello hello hello hello tiledb tiledb tiledb";
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        struct fx x;
        uint8_t cm[256], cd[256], data[512], md[64];
        size_t mlen = strlen(meta), tlen = strlen(text), n = 0;
        size_t cml = ref_compress(codecs[k].ops->type, (const uint8_t *)meta,
                                  mlen, cm, sizeof cm);
        size_t cdl = ref_compress(codecs[k].ops->type, (const uint8_t *)text,
                                  tlen, cd, sizeof cd);
        CHECK(cml > 0 && cdl > 0);
        fx_init(&x, codecs[k].ops, codecs[k].compressor, -1, 1);
        put32(md, &n, 1);
        put32(md, &n, 1);
        put32(md, &n, (uint32_t)mlen);
        put32(md, &n, (uint32_t)cml);
        put32(md, &n, (uint32_t)tlen);
        put32(md, &n, (uint32_t)cdl);
        memcpy(data, cm, cml);
        memcpy(data + cml, cd, cdl);
        CHECK_EQ_INT(fx_decode(&x, md, n, data, cml + cdl), 0);
        CHECK_EQ_INT(x.md_out.len, mlen);
        CHECK_EQ_INT(x.data_out.len, tlen);
        if (x.md_out.len == mlen && x.data_out.len == tlen) {
            CHECK_MEM(x.md_out.data, meta, mlen);
            CHECK_MEM(x.data_out.data, text, tlen);
        }

        /* A wrong original length is corruption, either way. */
        tdb_st32(md + 16, (uint32_t)tlen + 1);
        CHECK_EQ_INT(fx_decode(&x, md, n, data, cml + cdl), TDB_E_CORRUPT);
        tdb_st32(md + 16, (uint32_t)tlen - 1);
        CHECK_EQ_INT(fx_decode(&x, md, n, data, cml + cdl), TDB_E_CORRUPT);
        tdb_st32(md + 16, (uint32_t)tlen);
        /* A compressed length past the data. */
        tdb_st32(md + 20, (uint32_t)cdl + 1);
        CHECK_EQ_INT(fx_decode(&x, md, n, data, cml + cdl), TDB_E_CORRUPT);
        tdb_st32(md + 20, (uint32_t)cdl);
        /* Absurd part counts. */
        tdb_st32(md, 0xffffffffu);
        CHECK_EQ_INT(fx_decode(&x, md, n, data, cml + cdl), TDB_E_CORRUPT);
        {
            char want[200];
            snprintf(want, sizeof want, "%s: 4294967295 metadata and 1 data "
                     "parts do not fit in %zu metadata bytes",
                     codecs[k].ops->name, n - 8);
            CHECK(strcmp(x.err.msg, want) == 0);
            CHECK_EQ_INT(fx_decode(&x, md, 5, data, cml + cdl),
                         TDB_E_CORRUPT);
            snprintf(want, sizeof want, "%s: metadata truncated (part "
                     "counts)", codecs[k].ops->name);
            CHECK(strcmp(x.err.msg, want) == 0);
        }
        tdb_st32(md, 1);
        /* Every truncation fails; corruptions never crash. */
        fx_abuse(&x, md, n, data, cml + cdl, true);
        fx_free(&x);
    }
}

static void test_compressors_roundtrip(void)
{
    size_t sizes[] = {0, 1, 2, 100, 65536, 200000};
    uint8_t meta[40];
    for (size_t i = 0; i < sizeof meta; i++)
        meta[i] = (uint8_t)(i * 7);
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        int32_t levels[] = {-1, 1, 9};
        for (size_t l = 0; l < 3; l++) {
            struct fx x;
            fx_init(&x, codecs[k].ops, codecs[k].compressor, levels[l], 1);
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                uint8_t *v = make_values(sizes[s]);
                fx_roundtrip(&x, NULL, 0, v, sizes[s]);
                fx_roundtrip(&x, meta, sizeof meta, v, sizes[s]);
                free(v);
            }
            fx_free(&x);
        }
    }
}

/* Decodes one GZIP data part (no metadata part) of n bytes of stream that
 * inflate to orig bytes.  @return the status. */
static int gzip_part(struct fx *x, const uint8_t *stream, size_t n,
                     size_t orig)
{
    uint8_t md[16];
    size_t m = 0;
    put32(md, &m, 0);
    put32(md, &m, 1);
    put32(md, &m, (uint32_t)orig);
    put32(md, &m, (uint32_t)n);
    return fx_decode(x, md, m, stream, n);
}

/* GZIP parts are zlib streams as zlib writes them (TileDB writes them
 * with zlib): every level and strategy zlib has, stored blocks to fixed
 * Huffman codes, decode to the bytes compressed; bytes after the end of
 * the stream are ignored, as zlib ignores them; a damaged checksum is
 * corruption. */
static void test_gzip_zlib_streams(void)
{
    static const size_t sizes[] = {1, 1000, 65536, 200000};
    static const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FILTERED,
                                     Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
    struct fx x;
    fx_init(&x, &tdb_filter_gzip, TDB_COMPRESSOR_GZIP, -1, 1);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        uint8_t *v = make_values(n);
        uLong cap = compressBound(n) + 16;
        uint8_t *z = malloc(cap);
        for (int level = 0; level <= 9; level++)
            for (size_t st = 0; st < sizeof strategies / sizeof *strategies;
                 st++) {
                z_stream zs;
                memset(&zs, 0, sizeof zs);
                CHECK_EQ_INT(deflateInit2(&zs, level, Z_DEFLATED, 15, 8,
                                          strategies[st]), Z_OK);
                zs.next_in = v;
                zs.avail_in = (uInt)n;
                zs.next_out = z;
                zs.avail_out = (uInt)cap;
                CHECK_EQ_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
                size_t len = zs.total_out;
                deflateEnd(&zs);
                memcpy(z + len, "trailing", 8);
                CHECK_EQ_INT(gzip_part(&x, z, len + 8, n), 0);
                CHECK(x.data_out.len == n &&
                      memcmp(x.data_out.data, v, n) == 0);
                z[len - 1] ^= 1;    /* the Adler-32 of the stream */
                CHECK_EQ_INT(gzip_part(&x, z, len, n), TDB_E_CORRUPT);
            }
        free(z);
        free(v);
    }
    fx_free(&x);
}

/* tdb_compress_copy (RLE's and DICTIONARY's strings) copies exactly n
 * bytes for every n of its paths: nothing before or after them changes. */
static void test_compress_copy(void)
{
    uint8_t src[64], dst[96], want[96];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 37 + 1);
    for (size_t n = 0; n <= 40; n++)
        for (size_t at = 0; at < 8; at++) {
            memset(dst, 0xA5, sizeof dst);
            memset(want, 0xA5, sizeof want);
            memcpy(want + 16 + at, src + at, n);
            tdb_compress_copy(dst + 16 + at, src + at, n);
            CHECK_MEM(dst, want, sizeof dst);
        }
}

/* An encoded chunk, then every truncation and every corrupted byte. */
static void test_compressors_corrupt(void)
{
    uint8_t *v = make_values(3000);
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        struct fx x;
        struct tdb_buf md = {0}, data = {0};
        fx_init(&x, codecs[k].ops, codecs[k].compressor, -1, 1);
        CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, (const uint8_t *)"abcd",
                                   4, v, 3000, &md, &data),
                     0);
        fx_abuse(&x, md.data, md.len, data.data, data.len, true);
        /* Garbage where a stream should be. */
        memset(data.data, 0xee, data.len);
        CHECK(fx_decode(&x, md.data, md.len, data.data, data.len) < 0);
        tdb_buf_free(&md);
        tdb_buf_free(&data);
        fx_free(&x);
    }
    free(v);
}

static void test_compressor_options(void)
{
    static const uint8_t gz[] = {1, 5, 0, 0, 0};
    static const uint8_t zs[] = {2, 0xf9, 0xff, 0xff, 0xff}; /* level -7 */
    static const uint8_t dict[] = {7, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t wrong[] = {2, 5, 0, 0, 0};
    struct tdb_filter f = {0};
    struct tdb_error err = {0};
    struct tdb_cursor c;
    struct tdb_buf out = {0};

    tdb_cur_init(&c, gz, sizeof gz);
    CHECK_EQ_INT(tdb_filter_gzip.read_options(&f, &c, 22, &err), 0);
    CHECK_EQ_INT(f.compressor, 1);
    CHECK_EQ_INT(f.level, 5);
    CHECK_EQ_INT(tdb_filter_gzip.write_options(&f, &out), 0);
    CHECK_EQ_INT(out.len, sizeof gz);
    CHECK_MEM(out.data, gz, sizeof gz);

    tdb_cur_init(&c, zs, sizeof zs);
    CHECK_EQ_INT(tdb_filter_zstd.read_options(&f, &c, 1, &err), 0);
    CHECK_EQ_INT(f.level, -7);

    tdb_cur_init(&c, dict, sizeof dict);
    CHECK_EQ_INT(tdb_filter_dictionary.read_options(&f, &c, 13, &err), 0);
    CHECK_EQ_INT(f.compressor, 7);
    CHECK_EQ_INT(f.level, -1);
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_filter_dictionary.write_options(&f, &out), 0);
    CHECK_MEM(out.data, dict, sizeof dict);

    tdb_cur_init(&c, wrong, sizeof wrong);
    CHECK_EQ_INT(tdb_filter_gzip.read_options(&f, &c, 22, &err),
                 TDB_E_CORRUPT);
    for (size_t cut = 0; cut < sizeof gz; cut++) {
        tdb_cur_init(&c, gz, cut);
        CHECK_EQ_INT(tdb_filter_lz4.read_options(&f, &c, 22, &err),
                     TDB_E_CORRUPT);
    }
    /* Compressor 0 (no compression) is accepted for any compressor. */
    {
        static const uint8_t none[] = {0, 0xff, 0xff, 0xff, 0xff};
        tdb_cur_init(&c, none, sizeof none);
        CHECK_EQ_INT(tdb_filter_bzip2.read_options(&f, &c, 5, &err), 0);
        CHECK_EQ_INT(f.compressor, 0);
    }
    tdb_buf_free(&out);
}

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
            x.call.in_offsets = off;
            x.call.n_offsets = cells;
            {
                struct tdb_buf emd = {0}, edata = {0};
                int rc = filter_encode(ops[k], &x.call, NULL, 0, s, len, &emd,
                                       &edata);
                CHECK_EQ_INT(rc, 0);
                rc = fx_decode(&x, emd.data, emd.len, edata.data, edata.len);
                CHECK_EQ_INT(rc, 0);
                CHECK_EQ_INT(x.data_out.len, len);
                if (len && x.data_out.len == len)
                    CHECK_MEM(x.data_out.data, s, len);
                CHECK_EQ_INT(x.offsets.len, cells * 8);
                for (size_t i = 0; i < cells && x.offsets.len == cells * 8;
                     i++)
                    CHECK_EQ_INT(tdb_le64(x.offsets.data + 8 * i), off[i]);
                if (variant == 3 && k == 0)
                    CHECK_EQ_INT(emd.data[21], 2); /* string length width */
                if (variant == 4 && k == 0)
                    CHECK_EQ_INT(emd.data[20], 2); /* run length width */
                if (variant == 2 && k == 1) {
                    CHECK_EQ_INT(emd.data[20], 2); /* 1000 ids */
                    CHECK_EQ_INT(emd.data[21], 1);
                }
                if (variant == 2)
                    fx_abuse(&x, emd.data, emd.len, edata.data, edata.len,
                             false);
                tdb_buf_free(&emd);
                tdb_buf_free(&edata);
            }
        }
        /* Offsets out of order cannot be encoded. */
        {
            uint64_t bad[] = {0, 3, 2};
            struct tdb_buf emd = {0}, edata = {0};
            x.call.in_offsets = bad;
            x.call.n_offsets = 3;
            CHECK_EQ_INT(filter_encode(ops[k], &x.call, NULL, 0,
                                       (const uint8_t *)"abcd", 4, &emd,
                                       &edata),
                         TDB_E_INVAL);
            tdb_buf_free(&emd);
            tdb_buf_free(&edata);
        }
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

/* -------------------------------------------------------------- checksums */

static void test_checksums(void)
{
    const struct tdb_filter_ops *ops[] = {&tdb_filter_checksum_md5,
                                          &tdb_filter_checksum_sha256};
    const char *tail = "earlier filters' metadata";
    const char *text = "the chunk's data bytes";
    for (size_t k = 0; k < 2; k++) {
        const EVP_MD *evp = k == 0 ? EVP_md5() : EVP_sha256();
        size_t dl = k == 0 ? 16 : 32, n = 0;
        size_t tl = strlen(tail), xl = strlen(text);
        uint8_t md[256], data[64];
        unsigned int hl;
        struct fx x;

        fx_init(&x, ops[k], 0, 0, 1);
        put32(md, &n, 1);
        put32(md, &n, 1);
        tdb_st64(md + n, tl);
        n += 8;
        EVP_Digest(tail, tl, md + n, &hl, evp, NULL);
        n += dl;
        tdb_st64(md + n, xl);
        n += 8;
        EVP_Digest(text, xl, md + n, &hl, evp, NULL);
        n += dl;
        memcpy(md + n, tail, tl);
        n += tl;
        memcpy(data, text, xl);

        CHECK_EQ_INT(fx_decode(&x, md, n, data, xl), 0);
        CHECK_EQ_INT(x.md_out.len, tl);
        CHECK_MEM(x.md_out.data, tail, tl);
        CHECK_EQ_INT(x.data_out.len, xl);
        CHECK_MEM(x.data_out.data, text, xl);

        /* The encoder writes exactly these bytes. */
        {
            struct tdb_buf emd = {0}, edata = {0};
            CHECK_EQ_INT(filter_encode(ops[k], &x.call, (const uint8_t *)tail,
                                       tl, data, xl, &emd, &edata),
                         0);
            CHECK_EQ_INT(emd.len, n);
            CHECK_MEM(emd.data, md, n);
            CHECK_EQ_INT(edata.len, xl);
            tdb_buf_free(&emd);
            tdb_buf_free(&edata);
        }

        /* A flipped data byte, a flipped metadata byte, a wrong digest. */
        data[3] ^= 1;
        CHECK_EQ_INT(fx_decode(&x, md, n, data, xl), TDB_E_CHECKSUM);
        data[3] ^= 1;
        md[n - 1] ^= 1;
        CHECK_EQ_INT(fx_decode(&x, md, n, data, xl), TDB_E_CHECKSUM);
        md[n - 1] ^= 1;
        md[8 + 8] ^= 0x80;
        CHECK_EQ_INT(fx_decode(&x, md, n, data, xl), TDB_E_CHECKSUM);
        md[8 + 8] ^= 0x80;
        /* Checksummed lengths past the bytes there are. */
        tdb_st64(md + 8 + 8 + dl, xl + 1);
        CHECK_EQ_INT(fx_decode(&x, md, n, data, xl), TDB_E_CORRUPT);
        tdb_st64(md + 8 + 8 + dl, xl);
        CHECK_EQ_INT(fx_decode(&x, md, n, data, xl), 0);
        /* The counts: the same messages as the compressors'. */
        {
            char want[200];
            CHECK_EQ_INT(fx_decode(&x, md, 7, data, xl), TDB_E_CORRUPT);
            snprintf(want, sizeof want, "%s: metadata truncated (checksum "
                     "counts)", ops[k]->name);
            CHECK(strcmp(x.err.msg, want) == 0);
            CHECK_EQ_INT(fx_decode(&x, md, 8 + 2 * (8 + dl) - 1, data, xl),
                         TDB_E_CORRUPT);
            snprintf(want, sizeof want, "%s: 1 metadata and 1 data checksums "
                     "do not fit in %zu metadata bytes", ops[k]->name,
                     2 * (8 + dl) - 1);
            CHECK(strcmp(x.err.msg, want) == 0);
        }
        /* Truncations: the header fails as corrupt, the data as checksum. */
        for (size_t cut = 0; cut < 8 + 2 * (8 + dl); cut++)
            CHECK_EQ_INT(fx_decode(&x, md, cut, data, xl), TDB_E_CORRUPT);
        for (size_t cut = 0; cut < xl; cut++)
            CHECK(fx_decode(&x, md, n, data, cut) < 0);
        fx_abuse(&x, md, n, data, xl, true);

        {
            uint8_t *v = make_values(100000);
            fx_roundtrip(&x, NULL, 0, NULL, 0);
            fx_roundtrip(&x, NULL, 0, v, 1);
            fx_roundtrip(&x, v + 7, 33, v, 100000);
            free(v);
        }
        fx_free(&x);
    }
}

/* ------------------------------------------------------------ AES-256-GCM */

static void test_aes256gcm(void)
{
    uint8_t key[32], bad_key[32], iv[12], tag[16], ct[64], md[128];
    const char *text = "secret tile bytes, 33 bytes long.";
    size_t tl = strlen(text), n = 0;
    int outl = 0, fl = 0;
    struct fx x;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)i;
        bad_key[i] = (uint8_t)i;
    }
    bad_key[31] ^= 1;
    for (int i = 0; i < 12; i++)
        iv[i] = (uint8_t)(0xa0 + i);
    EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, iv);
    EVP_EncryptUpdate(ctx, ct, &outl, (const uint8_t *)text, (int)tl);
    EVP_EncryptFinal_ex(ctx, ct + outl, &fl);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag);
    EVP_CIPHER_CTX_free(ctx);
    CHECK_EQ_INT(outl + fl, tl);

    fx_init(&x, &tdb_filter_aes256gcm, 0, 0, 1);
    x.call.key = key;
    put32(md, &n, 0);
    put32(md, &n, 1);
    put32(md, &n, (uint32_t)tl);
    put32(md, &n, (uint32_t)tl);
    memcpy(md + n, iv, 12);
    n += 12;
    memcpy(md + n, tag, 16);
    n += 16;
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), 0);
    CHECK_EQ_INT(x.data_out.len, tl);
    CHECK_MEM(x.data_out.data, text, tl);
    CHECK_EQ_INT(x.md_out.len, 0);

    /* Wrong key, tampered ciphertext, tampered tag, tampered IV. */
    x.call.key = bad_key;
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), TDB_E_AUTH);
    CHECK_EQ_INT(x.data_out.len, 0); /* no unauthenticated plaintext */
    x.call.key = key;
    ct[5] ^= 1;
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), TDB_E_AUTH);
    ct[5] ^= 1;
    md[n - 1] ^= 1;
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), TDB_E_AUTH);
    md[n - 1] ^= 1;
    md[16] ^= 1;
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), TDB_E_AUTH);
    md[16] ^= 1;
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), 0);
    /* No key at all. */
    x.call.key = NULL;
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), TDB_E_NOKEY);
    x.call.key = key;
    /* Lengths that disagree or overrun. */
    tdb_st32(md + 12, (uint32_t)tl + 1);
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), TDB_E_CORRUPT);
    tdb_st32(md + 8, (uint32_t)tl + 1);
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), TDB_E_CORRUPT);
    tdb_st32(md + 8, (uint32_t)tl);
    tdb_st32(md + 12, (uint32_t)tl);
    fx_abuse(&x, md, n, ct, tl, true);

    /* Round trips; the metadata comes back decrypted, never in clear. */
    {
        uint8_t *v = make_values(50000);
        struct tdb_buf emd = {0}, edata = {0};
        fx_roundtrip(&x, NULL, 0, NULL, 0);
        fx_roundtrip(&x, NULL, 0, v, 1);
        fx_roundtrip(&x, v + 100, 60, v, 50000);
        fx_reset(&x);
        CHECK_EQ_INT(filter_encode(x.f.ops, &x.call,
                                   (const uint8_t *)"PLAINMETA", 9, v, 100,
                                   &emd, &edata),
                     0);
        CHECK_EQ_INT(emd.len, 8 + 2 * 36);
        CHECK_EQ_INT(edata.len, 109);
        CHECK(memmem(edata.data, edata.len, "PLAINMETA", 9) == NULL);
        x.call.key = bad_key;
        CHECK_EQ_INT(fx_decode(&x, emd.data, emd.len, edata.data, edata.len),
                     TDB_E_AUTH);
        x.call.key = NULL;
        CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, v, 100, &emd,
                                   &edata),
                     TDB_E_NOKEY);
        tdb_buf_free(&emd);
        tdb_buf_free(&edata);
        free(v);
    }
    CHECK_EQ_INT(tdb_filter_aes256gcm.output_type(&x.f, TDB_INT32), TDB_BLOB);
    fx_free(&x);
}

/* ------------------------------------------------------------ NONE, WEBP */

static void test_noop(void)
{
    struct fx x;
    fx_init(&x, &tdb_filter_noop, 0, 0, 1);
    CHECK_EQ_INT(fx_decode(&x, "mdmd", 4, "data!", 5), 0);
    CHECK_EQ_INT(x.md_out.len, 4);
    CHECK_MEM(x.md_out.data, "mdmd", 4);
    CHECK_EQ_INT(x.data_out.len, 5);
    CHECK_MEM(x.data_out.data, "data!", 5);
    fx_roundtrip(&x, NULL, 0, NULL, 0);
    fx_roundtrip(&x, (const uint8_t *)"m", 1, (const uint8_t *)"d", 1);
    CHECK_EQ_INT(tdb_filter_noop.type, TDB_FILTER_NONE);
    fx_free(&x);
}

static struct tdb_filter capped_filter(unsigned type, uint8_t compressor)
{
    struct tdb_filter f;
    memset(&f, 0, sizeof f);
    f.type = (uint8_t)type;
    f.ops = tdb_filter_lookup(type);
    f.compressor = compressor;
    f.reinterpret_type = TDB_ANY;
    return f;
}

/* A WEBP filter of format fmt over tiles of y rows of x bytes. */
static void webp_fx(struct fx *x, unsigned fmt, bool lossless, float quality,
                    unsigned ye, unsigned xe)
{
    fx_init(x, &tdb_filter_webp, 0, 0, 1);
    CHECK_EQ_INT(tdb_filter_init(&x->f, TDB_FILTER_WEBP), 0);
    struct tdb_webp_options *o = tdb_webp_options_edit(&x->f);
    o->format = (uint8_t)fmt;
    o->lossless = lossless;
    o->quality = quality;
    o->y_extent = (uint16_t)ye;
    o->x_extent = (uint16_t)xe;
}

/* Pixels of noise, a quarter of them transparent (alpha 0 over a colour
 * the image must keep) when there is an alpha byte. */
static uint8_t *webp_noise(size_t n, unsigned bpp, uint32_t seed)
{
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 24);
        if (bpp == 4 && i % 4 == 3 && (i / 4) % 4 == 1)
            p[i] = 0;
    }
    return p;
}

static void test_webp_options(void)
{
    /* quality 100.0f, format RGB (1), lossless 1, extents 16 and 48. */
    static const uint8_t opts[] = {0x00, 0x00, 0xc8, 0x42, 1, 1,
                                   16, 0, 48, 0, 0, 0};
    struct tdb_filter f = {.type = TDB_FILTER_WEBP, .ops = &tdb_filter_webp};
    const struct tdb_webp_options *o;
    struct tdb_error err = {0};
    struct tdb_cursor c;
    struct tdb_buf out = {0};
    uint8_t bad[sizeof opts];

    tdb_cur_init(&c, opts, sizeof opts);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err), 0);
    o = tdb_webp_options(&f);
    CHECK(o->quality == 100.0f);
    CHECK_EQ_INT(o->format, TDB_WEBP_RGB);
    CHECK_EQ_INT(o->lossless, 1);
    CHECK_EQ_INT(o->y_extent, 16);
    CHECK_EQ_INT(o->x_extent, 48);
    CHECK_EQ_INT(tdb_filter_webp.write_options(&f, &out), 0);
    CHECK_EQ_INT(out.len, sizeof opts);
    CHECK_MEM(out.data, opts, sizeof opts);
    tdb_buf_free(&out);
    /* quality 37.5f, BGRA, lossy */
    static const uint8_t opts2[] = {0x00, 0x00, 0x16, 0x42, 4, 0,
                                    2, 1, 0, 4, 0, 0};
    tdb_cur_init(&c, opts2, sizeof opts2);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err), 0);
    CHECK(o->quality == 37.5f);
    CHECK_EQ_INT(o->format, TDB_WEBP_BGRA);
    CHECK_EQ_INT(o->lossless, 0);
    CHECK_EQ_INT(o->y_extent, 258);
    CHECK_EQ_INT(o->x_extent, 1024);
    CHECK_EQ_INT(tdb_filter_webp.output_type(&f, TDB_UINT8), TDB_BLOB);
    /* sizes other than TileDB's 12 bytes, and values it never writes */
    size_t sizes[] = {0, 10, 11, 13};
    for (size_t i = 0; i < 4; i++) {
        uint8_t big[13] = {0};
        memcpy(big, opts, sizeof opts);
        tdb_cur_init(&c, big, sizes[i]);
        CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err),
                     TDB_E_CORRUPT);
    }
    memcpy(bad, opts, sizeof bad);
    bad[4] = 5;                                   /* format */
    tdb_cur_init(&c, bad, sizeof bad);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err),
                 TDB_E_CORRUPT);
    memcpy(bad, opts, sizeof bad);
    bad[5] = 2;                                   /* lossless */
    tdb_cur_init(&c, bad, sizeof bad);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err),
                 TDB_E_CORRUPT);
    memcpy(bad, opts, sizeof bad);
    bad[2] = 0xca;                                /* quality 6553600 */
    tdb_cur_init(&c, bad, sizeof bad);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err),
                 TDB_E_CORRUPT);
    memcpy(bad, opts, sizeof bad);
    bad[2] = 0xc0; bad[3] = 0x7f;                 /* NaN */
    tdb_cur_init(&c, bad, sizeof bad);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err),
                 TDB_E_CORRUPT);
    tdb_filter_release(&f);
}

/* Lossless: every format and a few shapes come back byte for byte, the
 * colour under transparent pixels included, with the metadata of the
 * filters before handed on. */
static void test_webp_lossless_roundtrip(void)
{
    static const unsigned fmts[] = {TDB_WEBP_RGB, TDB_WEBP_BGR,
                                    TDB_WEBP_RGBA, TDB_WEBP_BGRA};
    static const unsigned shapes[][2] = {{1, 1}, {7, 5}, {3, 64}, {40, 33}};
    for (size_t i = 0; i < 4; i++)
        for (size_t k = 0; k < 4; k++) {
            unsigned bpp = tdb_webp_pixel_bytes(fmts[i]);
            unsigned h = shapes[k][0], w = shapes[k][1];
            size_t n = (size_t)h * w * bpp;
            uint8_t *img = webp_noise(n, bpp, (uint32_t)(i * 4 + k + 1));
            struct fx x;
            webp_fx(&x, fmts[i], true, 100.0f, h, w * bpp);
            fx_roundtrip(&x, (const uint8_t *)"PREVMD", 6, img, n);
            fx_roundtrip(&x, NULL, 0, img, n);
            fx_free(&x);
            free(img);
        }
    /* what one encode writes: one part, its size, then the metadata */
    struct fx x;
    struct tdb_buf md = {0}, data = {0};
    uint8_t *img = webp_noise(4 * 6 * 3, 3, 9);
    webp_fx(&x, TDB_WEBP_RGB, true, 100.0f, 4, 18);
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, (const uint8_t *)"MD", 2, img,
                               72, &md, &data),
                 0);
    CHECK_EQ_INT(md.len, 10);
    if (md.len == 10) {
        CHECK_EQ_INT(tdb_le32(md.data), 1);
        CHECK_EQ_INT(tdb_le32(md.data + 4), data.len);
        CHECK_MEM(md.data + 8, "MD", 2);
    }
    CHECK(data.len > 12 && !memcmp(data.data, "RIFF", 4) &&
          !memcmp(data.data + 8, "WEBPVP8L", 8));
    /* libwebp itself reads it back (as TileDB does) */
    int w = 0, h = 0;
    uint8_t *dec = WebPDecodeRGB(data.data, data.len, &w, &h);
    CHECK(dec && w == 6 && h == 4 && !memcmp(dec, img, 72));
    WebPFree(dec);
    /* damage: every cut fails, other damage fails or decodes, never
     * crashes (no metadata after the filter's own, whose cuts would go
     * unseen) */
    tdb_buf_reset(&md);
    tdb_buf_reset(&data);
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 72, &md, &data),
                 0);
    fx_abuse(&x, md.data, md.len, data.data, data.len, true);
    tdb_buf_free(&md);
    tdb_buf_free(&data);
    free(img);
    fx_free(&x);
}

/* Lossy: an image of the declared size, close to the original. */
static void test_webp_lossy(void)
{
    static const unsigned fmts[] = {TDB_WEBP_RGB, TDB_WEBP_BGRA};
    for (size_t i = 0; i < 2; i++) {
        unsigned bpp = tdb_webp_pixel_bytes(fmts[i]);
        const unsigned h = 24, w = 32;
        size_t n = (size_t)h * w * bpp;
        uint8_t *img = malloc(n);
        for (unsigned r = 0; r < h; r++)
            for (unsigned c = 0; c < w; c++)
                for (unsigned b = 0; b < bpp; b++)
                    img[(r * w + c) * bpp + b] =
                        b == 3 ? 255 : (uint8_t)(r * 5 + c * 3 + b * 40);
        struct fx x;
        struct tdb_buf md = {0}, data = {0};
        webp_fx(&x, fmts[i], false, 90.0f, h, w * bpp);
        CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, n, &md,
                                   &data),
                     0);
        CHECK(data.len > 0 && data.len < n);
        CHECK(data.len > 16 && !memcmp(data.data + 8, "WEBPVP8 ", 8));
        CHECK_EQ_INT(fx_decode(&x, md.data, md.len, data.data, data.len), 0);
        CHECK_EQ_INT(x.data_out.len, n);
        CHECK_EQ_INT(x.md_out.len, 0);
        if (x.data_out.len == n) {
            uint64_t diff = 0;
            for (size_t k = 0; k < n; k++)
                diff += (uint64_t)abs((int)x.data_out.data[k] - img[k]);
            CHECK(diff < n * 4); /* a mean error under 4 levels */
        }
        tdb_buf_free(&md);
        tdb_buf_free(&data);
        free(img);
        fx_free(&x);
    }
}

/* Encoding refuses what is not one whole image of the filter's format. */
static void test_webp_encode_refused(void)
{
    struct fx x;
    struct tdb_buf md = {0}, data = {0};
    uint8_t img[96] = {0};
    webp_fx(&x, TDB_WEBP_RGBA, true, 100.0f, 4, 24);
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 95, &md, &data),
                 TDB_E_INVAL);
    CHECK(strstr(x.err.msg, "not one tile of 4 rows of 24 bytes") != NULL);
    tdb_webp_options_edit(&x.f)->x_extent = 22; /* not whole pixels */
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 88, &md, &data),
                 TDB_E_INVAL);
    tdb_webp_options_edit(&x.f)->x_extent = 24;
    tdb_webp_options_edit(&x.f)->format = TDB_WEBP_NONE;
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 96, &md, &data),
                 TDB_E_INVAL);
    CHECK(strstr(x.err.msg, "format is not set") != NULL);
    tdb_webp_options_edit(&x.f)->format = TDB_WEBP_RGBA;
    x.call.datatype = TDB_INT32;
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 96, &md, &data),
                 TDB_E_INVAL);
    CHECK_EQ_INT(data.len, 0);
    x.call.datatype = TDB_UINT8;
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 96, &md, &data),
                 0);
    x.call.datatype = TDB_INT32;
    CHECK_EQ_INT(fx_decode(&x, md.data, md.len, data.data, data.len),
                 TDB_E_CORRUPT);
    x.call.datatype = TDB_UINT8;
    tdb_webp_options_edit(&x.f)->format = TDB_WEBP_NONE;
    CHECK_EQ_INT(fx_decode(&x, md.data, md.len, data.data, data.len),
                 TDB_E_CORRUPT);
    tdb_buf_free(&md);
    tdb_buf_free(&data);
    fx_free(&x);
}

/* The serialised pipeline of one WEBP filter, as in a schema. */
static void webp_pipeline(struct tdb_pipeline *p, uint8_t fmt,
                          uint8_t lossless, uint16_t ye, uint16_t xe)
{
    uint8_t b[4 + 4 + 1 + 4 + 12] = {0};
    struct tdb_cursor c;
    struct tdb_error err = {0};
    tdb_st32(b, 65536);
    tdb_st32(b + 4, 1);
    b[8] = TDB_FILTER_WEBP;
    tdb_st32(b + 9, 12);
    tdb_st32(b + 13, 0x42c80000u); /* 100.0f */
    b[17] = fmt;
    b[18] = lossless;
    tdb_st16(b + 19, ye);
    tdb_st16(b + 21, xe);
    tdb_cur_init(&c, b, sizeof b);
    CHECK_EQ_INT(tdb_pipeline_read(p, &c, 22, &err), 0);
}

/* A tile as TileDB writes it: one chunk, metadata (1 part, its size), the
 * part a WebP file from libwebp's simple API. */
static void webp_tile(struct tdb_buf *t, uint32_t orig, const uint8_t *webp,
                      size_t n)
{
    uint8_t md[8];
    tdb_st32(md, 1);
    tdb_st32(md + 4, (uint32_t)n);
    capped_tile(t, orig, md, sizeof md, webp, (uint32_t)n);
}

static void test_webp_tiledb_tile(void)
{
    /* a 6 x 4 pixel RGBA image: the tile of extents 4 and 24 */
    uint8_t img[96];
    for (size_t i = 0; i < sizeof img; i++)
        img[i] = i % 4 == 3 ? 255 : (uint8_t)(i * 29 + 3);
    uint8_t *webp = NULL;
    size_t n = WebPEncodeLosslessRGBA(img, 6, 4, 24, &webp);
    CHECK(n > 0);
    struct tdb_pipeline p = {0};
    webp_pipeline(&p, TDB_WEBP_RGBA, 1, 4, 24);
    struct tdb_tile_desc d = {.datatype = TDB_UINT8, .cell_size = 1,
                              .version = 22, .what = "rgba tile"};
    struct tdb_buf t = {0}, out = {0};
    struct tdb_error err = {0};
    webp_tile(&t, 96, webp, n);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, t.data, t.len, &out,
                                     &err),
                 0);
    CHECK_EQ_INT(out.len, 96);
    if (out.len == 96)
        CHECK_MEM(out.data, img, 96);
    /* the same image read as BGRA: red and blue swap */
    tdb_pipeline_free(&p);
    webp_pipeline(&p, TDB_WEBP_BGRA, 1, 4, 24);
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, t.data, t.len, &out,
                                     &err),
                 0);
    CHECK(out.len == 96 && out.data[0] == img[2] && out.data[2] == img[0] &&
          out.data[1] == img[1]);
    /* read as RGB: 72 bytes, not the 96 the chunk declares */
    tdb_pipeline_free(&p);
    webp_pipeline(&p, TDB_WEBP_RGB, 1, 4, 18);
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, t.data, t.len, &out,
                                     &err),
                 TDB_E_CORRUPT);
    tdb_pipeline_free(&p);

    /* our encoder's tile through tdb_pipeline_encode: one chunk */
    webp_pipeline(&p, TDB_WEBP_RGBA, 1, 4, 24);
    tdb_buf_reset(&t);
    CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, img, 96, &t, &err), 0);
    CHECK(t.len > 8 + 12 + 8 && tdb_le64(t.data) == 1 &&
          tdb_le32(t.data + 8) == 96 && tdb_le32(t.data + 16) == 8 &&
          tdb_le32(t.data + 20) == 1 &&
          tdb_le32(t.data + 24) == tdb_le32(t.data + 12));
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, t.data, t.len, &out,
                                     &err),
                 0);
    CHECK(out.len == 96 && !memcmp(out.data, img, 96));
    tdb_pipeline_free(&p);
    tdb_buf_free(&t);
    tdb_buf_free(&out);
    WebPFree(webp);
}

/* Damaged WEBP tiles are refused as corrupt, before any allocation the
 * damage would ask for. */
static void test_webp_damaged(void)
{
    uint8_t img[4 * 4 * 4];
    for (size_t i = 0; i < sizeof img; i++)
        img[i] = (uint8_t)(i * 7);
    uint8_t *webp = NULL;
    size_t n = WebPEncodeLosslessRGBA(img, 4, 4, 16, &webp);
    CHECK(n > 25 && webp[20] == 0x2f); /* VP8L: signature, then the size */
    if (n <= 25) {
        WebPFree(webp);
        return;
    }
    struct tdb_filter f;
    CHECK_EQ_INT(tdb_filter_init(&f, TDB_FILTER_WEBP), 0);
    struct tdb_webp_options *o = tdb_webp_options_edit(&f);
    o->format = TDB_WEBP_RGBA;
    o->lossless = 1;
    o->quality = 100.0f;
    o->y_extent = 4;
    o->x_extent = 16;
    struct tdb_buf t = {0};
    uint8_t md[12];

    /* the intact tile decodes */
    webp_tile(&t, 64, webp, n);
    {
        struct tdb_pipeline p = {.max_chunk_size = 65536, .n = 1, .f = &f};
        struct tdb_tile_desc d = {.datatype = TDB_UINT8, .cell_size = 1,
                                  .version = 22, .what = "ok"};
        struct tdb_buf out = {0};
        CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, t.data, t.len, &out,
                                         NULL),
                     0);
        CHECK(out.len == 64 && !memcmp(out.data, img, 64));
        tdb_buf_free(&out);
    }
    /* the image claims 16383 x 16383 pixels (1 GiB of RGBA) */
    uint8_t *big = malloc(n);
    memcpy(big, webp, n);
    uint32_t hdr = 16382u | (16382u << 14) | (tdb_le32(webp + 21) &
                                              0xf0000000u);
    tdb_st32(big + 21, hdr);
    webp_tile(&t, 64, big, n);
    CHECK_CAPPED(&f, TDB_UINT8, false, &t, "16383x16383 image");
    /* 4 x 16383 pixels in a chunk that declares as much: allowed, and
     * the pixels are missing */
    tdb_st32(big + 21, 3u | (16382u << 14) | (tdb_le32(webp + 21) &
                                             0xf0000000u));
    webp_tile(&t, 4 * 16383 * 4, big, n);
    CHECK_CAPPED(&f, TDB_UINT8, false, &t, "damaged WebP image (4x16383");
    /* truncated data: the part's size overruns it */
    webp_tile(&t, 64, webp, n);
    tdb_st32(t.data + 12, (uint32_t)n - 5);  /* the chunk's data size */
    t.len -= 5;
    CHECK_CAPPED(&f, TDB_UINT8, false, &t, "overruns");
    /* a truncated WebP file whose size says so */
    tdb_st32(md, 1);
    tdb_st32(md + 4, (uint32_t)n - 5);
    capped_tile(&t, 64, md, 8, webp, (uint32_t)n - 5);
    CHECK_CAPPED(&f, TDB_UINT8, false, &t, "damaged WebP image");
    /* not a WebP file (the image's pixels, repeated) */
    uint8_t *notwebp = malloc(n);
    for (size_t i = 0; notwebp && i < n; i++)
        notwebp[i] = img[i % sizeof img];
    CHECK(notwebp != NULL);
    if (notwebp) {
        capped_tile(&t, 64, md, 8, notwebp, (uint32_t)n - 5);
        CHECK_CAPPED(&f, TDB_UINT8, false, &t, "not a WebP image");
    }
    free(notwebp);
    /* four billion parts in 12 bytes of metadata */
    tdb_st32(md, 0xffffffffu);
    tdb_st32(md + 4, (uint32_t)n);
    tdb_st32(md + 8, 0);
    capped_tile(&t, 64, md, 12, webp, (uint32_t)n);
    CHECK_CAPPED(&f, TDB_UINT8, false, &t, "part sizes");
    /* bytes after the parts */
    uint8_t *more = calloc(1, n + 3);
    memcpy(more, webp, n);
    tdb_st32(md, 1);
    tdb_st32(md + 4, (uint32_t)n);
    capped_tile(&t, 64, md, 8, more, (uint32_t)n + 3);
    free(more);
    CHECK_CAPPED(&f, TDB_UINT8, false, &t, "after the 1 parts");
    /* no metadata at all */
    capped_tile(&t, 64, md, 0, webp, (uint32_t)n);
    CHECK_CAPPED(&f, TDB_UINT8, false, &t, "no part count");
    free(big);
    tdb_buf_free(&t);
    WebPFree(webp);
    tdb_filter_release(&f);
}

/* Schema JSON with a WEBP filter, the array created, a fragment written by
 * our writer and read back; the schema's JSON form round-trips. */
static void test_webp_array(void)
{
    static const char json[] =
        "{\"array_type\": \"dense\", \"dims\": ["
        "{\"name\": \"y\", \"datatype\": \"UINT32\", \"domain\": [1, 8], "
        "\"tile_extent\": 4}, "
        "{\"name\": \"x\", \"datatype\": \"UINT32\", \"domain\": [1, 48], "
        "\"tile_extent\": 24}], "
        "\"attrs\": [{\"name\": \"rgba\", \"datatype\": \"UINT8\", "
        "\"filters\": [{\"type\": \"WEBP\", \"format\": \"RGBA\", "
        "\"lossless\": true}]}]}";
    struct tdb_schema *s = NULL, *back = NULL;
    struct tdb_error err = {0};
    int rc = tdb_schema_from_json(json, strlen(json), &s, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        return;
    const struct tdb_filter *f = &s->attrs[0].filters.f[0];
    CHECK_EQ_INT(f->type, TDB_FILTER_WEBP);
    const struct tdb_webp_options *wo = tdb_webp_options(f);
    CHECK(wo->quality == 100.0f);
    CHECK_EQ_INT(wo->format, TDB_WEBP_RGBA);
    CHECK_EQ_INT(wo->lossless, 1);
    CHECK_EQ_INT(wo->y_extent, 4);
    CHECK_EQ_INT(wo->x_extent, 24);

    /* the JSON form prints the options and reads back the same */
    json_t *j = tdb_json_schema(s);
    struct tdb_buf text = {0};
    CHECK(j && tdb_json_dump(j, &text) == 0);
    json_decref(j);
    tdb_buf_put_u8(&text, 0);
    CHECK(strstr((char *)text.data, "{\"type\": \"WEBP\", \"quality\": 100, "
                 "\"format\": \"RGBA\", \"lossless\": true}") != NULL);
    CHECK_EQ_INT(tdb_schema_from_json((char *)text.data, text.len - 1, &back,
                                      &err),
                 0);
    if (back) {
        const struct tdb_filter *g = &back->attrs[0].filters.f[0];
        const struct tdb_webp_options *go = tdb_webp_options(g);
        CHECK(go->quality == 100.0f && go->format == TDB_WEBP_RGBA &&
              go->lossless == 1 && go->y_extent == 4 && go->x_extent == 24);
        tdb_schema_free(back);
    }
    tdb_buf_free(&text);

    /* create, stage the whole domain, commit, read back */
    struct tdb_io arr, stg;
    CHECK_EQ_INT(tdb_io_mem(&arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    rc = tdb_array_create(&arr, s, NULL, 1000, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    const size_t n = 8 * 48;
    uint8_t *cells = webp_noise(n, 4, 77);
    stg.ops->mkdir(stg.ctx, "w");
    CHECK_EQ_INT(stg.ops->write_at(stg.ctx, "w/rgba", 0, cells, n), 0);
    char *frag = NULL;
    rc = tdb_fragment_write(&arr, &stg, "w", NULL, 2000, &frag, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    if (frag) {
        /* the attribute's tiles are WebP files */
        char path[512];
        uint8_t *raw = NULL;
        uint64_t rn = 0;
        snprintf(path, sizeof path, "__fragments/%s/a0.tdb", frag);
        CHECK_EQ_INT(tdb_io_read_file(&arr, path, &raw, &rn, NULL), 0);
        CHECK(raw && memmem(raw, (size_t)rn, "WEBPVP8L", 8) != NULL);
        free(raw);
    }
    struct tdb_open_options o;
    struct tdb_fs *fs = NULL;
    tdb_open_options_init(&o);
    CHECK_EQ_INT(tdb_fs_open(&fs, &arr, &o, &err), 0);
    uint64_t ino = 0;
    struct tdb_stat st;
    if (fs && !tdb_fs_resolve(fs, "rgba", &ino, &err) &&
        !tdb_fs_stat(fs, ino, &st, &err)) {
        uint8_t *got = malloc(st.size + 1);
        size_t gn = 0;
        CHECK_EQ_INT(tdb_fs_read(fs, ino, 0, got, (size_t)st.size, &gn, &err),
                     0);
        CHECK_EQ_INT(gn, n);
        if (gn == n)
            CHECK_MEM(got, cells, n);
        free(got);
    } else {
        CHECK(!"rgba readable");
    }
    /* the mount's __array.json shows the filter as the JSON gave it */
    if (fs && !tdb_fs_resolve(fs, "__array.json", &ino, &err) &&
        !tdb_fs_stat(fs, ino, &st, &err)) {
        char *got = calloc(1, st.size + 1);
        size_t gn = 0;
        CHECK_EQ_INT(tdb_fs_read(fs, ino, 0, got, (size_t)st.size, &gn, &err),
                     0);
        CHECK(strstr(got, "\"format\": \"RGBA\", \"lossless\": true") !=
              NULL);
        free(got);
    } else {
        CHECK(!"__array.json readable");
    }
    tdb_fs_close(fs);
    free(frag);
    free(cells);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
    tdb_schema_free(s);
}

/* What TileDB refuses of a schema with a WEBP filter, and bad options. */
static void test_webp_schema_refused(void)
{
    static const struct {
        const char *attr, *filter, *dims, *type, *needle;
    } bad[] = {
        {"INT32", "\"format\": \"RGB\"", NULL, "dense", "UINT8 attributes"},
        {"UINT8", "\"format\": \"RGB\"", NULL, "sparse", "dense arrays only"},
        {"UINT8", "\"format\": \"RGBA\"", NULL, "dense",
         "not a multiple of it"},
        {"UINT8", "\"format\": \"RGB\"",
         "{\"name\": \"y\", \"datatype\": \"UINT32\", \"domain\": [1, 8], "
         "\"tile_extent\": 4}",
         "dense", "exactly 2 integral dimensions"},
        {"UINT8", "\"format\": \"RGB\"",
         "{\"name\": \"y\", \"datatype\": \"UINT32\", \"domain\": [1, 20000],"
         " \"tile_extent\": 16384}, {\"name\": \"x\", \"datatype\": "
         "\"UINT32\", \"domain\": [1, 30], \"tile_extent\": 30}",
         "dense", "at most 16383 x 16383"},
        {"UINT8", "\"lossless\": true", NULL, "dense", "format: missing"},
        {"UINT8", "\"format\": \"RGBX\"", NULL, "dense",
         "\"RGBX\" is not RGB, BGR, RGBA or BGRA"},
        {"UINT8", "\"format\": \"RGB\", \"quality\": 101", NULL, "dense",
         "quality: 101 is not in [0, 100]"},
        {"UINT8", "\"format\": \"RGB\", \"effort\": 3", NULL, "dense",
         "unknown key \"effort\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"array_type\": \"%s\", \"dims\": [%s], \"attrs\": "
                 "[{\"name\": \"a\", \"datatype\": \"%s\", \"filters\": "
                 "[{\"type\": \"WEBP\", %s}]}]}",
                 bad[i].type,
                 bad[i].dims ? bad[i].dims
                             : "{\"name\": \"y\", \"datatype\": \"UINT32\", "
                               "\"domain\": [1, 8], \"tile_extent\": 4}, "
                               "{\"name\": \"x\", \"datatype\": \"UINT32\", "
                               "\"domain\": [1, 30], \"tile_extent\": 30}",
                 bad[i].attr, bad[i].filter);
        struct tdb_schema *s = NULL;
        struct tdb_error err = {0};
        CHECK_EQ_INT(tdb_schema_from_json(json, strlen(json), &s, &err),
                     TDB_E_INVAL);
        CHECK(s == NULL);
        if (!strstr(err.msg, bad[i].needle)) {
            fprintf(stderr, "  case %zu: '%s' lacks '%s'\n", i, err.msg,
                    bad[i].needle);
            CHECK(!"message");
        }
    }
    /* a WEBP filter off the attributes */
    static const char coords[] =
        "{\"array_type\": \"dense\", \"dims\": [{\"name\": \"y\", "
        "\"datatype\": \"UINT32\", \"domain\": [1, 8], \"tile_extent\": 4, "
        "\"filters\": [{\"type\": \"WEBP\", \"format\": \"RGB\"}]}, "
        "{\"name\": \"x\", \"datatype\": \"UINT32\", \"domain\": [1, 30], "
        "\"tile_extent\": 30}], \"attrs\": [{\"name\": \"a\", "
        "\"datatype\": \"UINT8\"}]}";
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_schema_from_json(coords, strlen(coords), &s, &err),
                 TDB_E_INVAL);
    CHECK(strstr(err.msg, "attribute values only") != NULL);
}

static void test_names_and_types(void)
{
    CHECK_EQ_INT(tdb_filter_gzip.type, TDB_FILTER_GZIP);
    CHECK_EQ_INT(tdb_filter_zstd.type, TDB_FILTER_ZSTD);
    CHECK_EQ_INT(tdb_filter_lz4.type, TDB_FILTER_LZ4);
    CHECK_EQ_INT(tdb_filter_bzip2.type, TDB_FILTER_BZIP2);
    CHECK_EQ_INT(tdb_filter_rle.type, TDB_FILTER_RLE);
    CHECK_EQ_INT(tdb_filter_dictionary.type, TDB_FILTER_DICTIONARY);
    CHECK_EQ_INT(tdb_filter_checksum_md5.type, TDB_FILTER_CHECKSUM_MD5);
    CHECK_EQ_INT(tdb_filter_checksum_sha256.type, TDB_FILTER_CHECKSUM_SHA256);
    CHECK_EQ_INT(tdb_filter_aes256gcm.type, TDB_FILTER_AES_256_GCM);
    CHECK_EQ_INT(tdb_filter_webp.type, TDB_FILTER_WEBP);
    CHECK(strcmp(tdb_filter_checksum_sha256.name, "CHECKSUM_SHA256") == 0);
    CHECK(tdb_filter_gzip.output_type == NULL);
}


/* ---------------------------------------- damaged tiles: bounded decoders */

/* BZIP2: a part of 12 bytes declaring 4 GiB - 8 bytes was allocated whole
 * before bzip2 looked at it. */
static void test_bzip2_damaged_bounded(void)
{
    struct tdb_filter f = capped_filter(TDB_FILTER_BZIP2, 5);
    uint8_t md[16];
    tdb_st32(md, 0);
    tdb_st32(md + 4, 1);
    tdb_st32(md + 8, 0xfffffff8);
    tdb_st32(md + 12, 12);
    const uint8_t data[12] = {'B', 'Z', 'h', '9', 1, 2, 3, 4, 5, 6, 7, 8};
    struct tdb_buf t = {0};
    capped_tile(&t, 0xfffffff8, md, sizeof md, data, sizeof data);
    CHECK_CAPPED(&f, TDB_INT32, false, &t, "BZIP2");
    capped_tile(&t, 64, md, sizeof md, data, sizeof data);
    CHECK_CAPPED(&f, TDB_INT32, false, &t, "more than the 64 the chunk's "
                 "declared size allows");
    tdb_buf_free(&t);
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
    RUN(test_bzip2_damaged_bounded);
    RUN(test_rle_strings_damaged_bounded);
    RUN(test_compressors_hand_vector);
    RUN(test_compressors_roundtrip);
    RUN(test_compressors_corrupt);
    RUN(test_gzip_zlib_streams);
    RUN(test_compress_copy);
    RUN(test_compressor_options);
    RUN(test_rle_fixed_hand_vector);
    RUN(test_rle_fixed_long_runs);
    RUN(test_rle_strings_hand_vector);
    RUN(test_rle_dict_strings_roundtrip);
    RUN(test_dictionary_hand_vector);
    RUN(test_checksums);
    RUN(test_aes256gcm);
    RUN(test_noop);
    RUN(test_webp_options);
    RUN(test_webp_lossless_roundtrip);
    RUN(test_webp_lossy);
    RUN(test_webp_encode_refused);
    RUN(test_webp_tiledb_tile);
    RUN(test_webp_damaged);
    RUN(test_webp_array);
    RUN(test_webp_schema_refused);
    RUN(test_names_and_types);
    return unit_done();
}
