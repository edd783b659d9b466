/* test_compress.c: the compressors (format/filters/compress_common.c,
 * gzip.c, zstd.c, lz4.c, bzip2.c; tile.md), calling each filter's ops
 * directly: hand-made vectors, round trips, corrupt and truncated input,
 * zlib's streams, the levels and options, a damaged bzip2 tile decoded
 * under a capped address space, and each filter's type and name. */
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
    struct tdb_filter f;
    struct tdb_error err = {0};
    struct tdb_cursor c;
    struct tdb_buf out = {0};

    tdb_filter_init(&f, TDB_FILTER_GZIP);
    tdb_cur_init(&c, gz, sizeof gz);
    CHECK_EQ_INT(tdb_filter_gzip.read_options(&f, &c, 22, &err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "compressor"), 1);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "level"), 5);
    CHECK_EQ_INT(tdb_filter_gzip.write_options(&f, &out), 0);
    CHECK_EQ_INT(out.len, sizeof gz);
    CHECK_MEM(out.data, gz, sizeof gz);

    tdb_filter_init(&f, TDB_FILTER_ZSTD);
    tdb_cur_init(&c, zs, sizeof zs);
    CHECK_EQ_INT(tdb_filter_zstd.read_options(&f, &c, 1, &err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "level"), -7);

    tdb_filter_init(&f, TDB_FILTER_DICTIONARY);
    tdb_cur_init(&c, dict, sizeof dict);
    CHECK_EQ_INT(tdb_filter_dictionary.read_options(&f, &c, 13, &err), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "compressor"), 7);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "level"), -1);
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_filter_dictionary.write_options(&f, &out), 0);
    CHECK_MEM(out.data, dict, sizeof dict);

    tdb_filter_init(&f, TDB_FILTER_GZIP);
    tdb_cur_init(&c, wrong, sizeof wrong);
    CHECK_EQ_INT(tdb_filter_gzip.read_options(&f, &c, 22, &err),
                 TDB_E_CORRUPT);
    for (size_t cut = 0; cut < sizeof gz; cut++) {
        tdb_filter_init(&f, TDB_FILTER_LZ4);
        tdb_cur_init(&c, gz, cut);
        CHECK_EQ_INT(tdb_filter_lz4.read_options(&f, &c, 22, &err),
                     TDB_E_CORRUPT);
    }
    /* Compressor 0 (no compression) is accepted for any compressor. */
    {
        static const uint8_t none[] = {0, 0xff, 0xff, 0xff, 0xff};
        tdb_filter_init(&f, TDB_FILTER_BZIP2);
        tdb_cur_init(&c, none, sizeof none);
        CHECK_EQ_INT(tdb_filter_bzip2.read_options(&f, &c, 5, &err), 0);
        CHECK_EQ_INT(tdb_filter_get_int(&f, "compressor"), 0);
    }
    tdb_buf_free(&out);
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

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_bzip2_damaged_bounded);
    RUN(test_compressors_hand_vector);
    RUN(test_compressors_roundtrip);
    RUN(test_compressors_corrupt);
    RUN(test_gzip_zlib_streams);
    RUN(test_compress_copy);
    RUN(test_compressor_options);
    RUN(test_names_and_types);
    return unit_done();
}
