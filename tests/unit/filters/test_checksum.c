/* test_checksum.c: the MD5 and SHA-256 checksum filters
 * (format/filters/checksum_common.c, checksum_md5.c, checksum_sha256.c):
 * the sums TileDB stores, checked on decoding, and damage found. */
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

/* -------------------------------------------------------------- checksums */

static const char ck_tail[] = "earlier filters' metadata";
static const char ck_text[] = "the chunk's data bytes";

/* The checksum filter's metadata in md for data ck_text after the
 * metadata ck_tail, digests of dl bytes by evp: returns its length. */
static size_t ck_md(uint8_t *md, const EVP_MD *evp, size_t dl)
{
    size_t n = 0, tl = strlen(ck_tail), xl = strlen(ck_text);
    unsigned int hl;
    put32(md, &n, 1);
    put32(md, &n, 1);
    tdb_st64(md + n, tl);
    n += 8;
    EVP_Digest(ck_tail, tl, md + n, &hl, evp, NULL);
    n += dl;
    tdb_st64(md + n, xl);
    n += 8;
    EVP_Digest(ck_text, xl, md + n, &hl, evp, NULL);
    n += dl;
    memcpy(md + n, ck_tail, tl);
    n += tl;
    return n;
}

/* A flipped data byte, a flipped metadata byte, a wrong digest, and
 * checksummed lengths past the bytes there are; the chunk is left
 * intact. */
static void ck_damaged(struct fx *x, uint8_t *md, size_t n, uint8_t *data,
                       size_t xl, size_t dl)
{
    data[3] ^= 1;
    CHECK_EQ_INT(fx_decode(x, md, n, data, xl), TDB_E_CHECKSUM);
    data[3] ^= 1;
    md[n - 1] ^= 1;
    CHECK_EQ_INT(fx_decode(x, md, n, data, xl), TDB_E_CHECKSUM);
    md[n - 1] ^= 1;
    md[8 + 8] ^= 0x80;
    CHECK_EQ_INT(fx_decode(x, md, n, data, xl), TDB_E_CHECKSUM);
    md[8 + 8] ^= 0x80;
    tdb_st64(md + 8 + 8 + dl, xl + 1);
    CHECK_EQ_INT(fx_decode(x, md, n, data, xl), TDB_E_CORRUPT);
    tdb_st64(md + 8 + 8 + dl, xl);
    CHECK_EQ_INT(fx_decode(x, md, n, data, xl), 0);
}

/* The counts: the same messages as the compressors'; truncations: the
 * header fails as corrupt, the data as checksum. */
static void ck_truncated(struct fx *x, const uint8_t *md, size_t n,
                         const uint8_t *data, size_t xl, size_t dl)
{
    char want[200];
    CHECK_EQ_INT(fx_decode(x, md, 7, data, xl), TDB_E_CORRUPT);
    snprintf(want, sizeof want, "%s: metadata truncated (checksum "
             "counts)", x->f.ops->name);
    CHECK(strcmp(x->err.msg, want) == 0);
    CHECK_EQ_INT(fx_decode(x, md, 8 + 2 * (8 + dl) - 1, data, xl),
                 TDB_E_CORRUPT);
    snprintf(want, sizeof want, "%s: 1 metadata and 1 data checksums "
             "do not fit in %zu metadata bytes", x->f.ops->name,
             2 * (8 + dl) - 1);
    CHECK(strcmp(x->err.msg, want) == 0);
    for (size_t cut = 0; cut < 8 + 2 * (8 + dl); cut++)
        CHECK_EQ_INT(fx_decode(x, md, cut, data, xl), TDB_E_CORRUPT);
    for (size_t cut = 0; cut < xl; cut++)
        CHECK(fx_decode(x, md, n, data, cut) < 0);
}

/* One checksum filter, ops, whose digests are dl bytes by evp. */
static void ck_case(const struct tdb_filter_ops *ops, const EVP_MD *evp,
                    size_t dl)
{
    size_t tl = strlen(ck_tail), xl = strlen(ck_text);
    uint8_t md[256], data[64];
    struct fx x;

    fx_init(&x, ops, 0, 0, 1);
    size_t n = ck_md(md, evp, dl);
    memcpy(data, ck_text, xl);
    CHECK_EQ_INT(fx_decode(&x, md, n, data, xl), 0);
    CHECK_EQ_INT(x.md_out.len, tl);
    CHECK_MEM(x.md_out.data, ck_tail, tl);
    CHECK_EQ_INT(x.data_out.len, xl);
    CHECK_MEM(x.data_out.data, ck_text, xl);

    /* The encoder writes exactly these bytes. */
    struct tdb_buf emd = {0}, edata = {0};
    CHECK_EQ_INT(filter_encode(ops, &x.call, (const uint8_t *)ck_tail,
                               tl, data, xl, &emd, &edata),
                 0);
    CHECK_EQ_INT(emd.len, n);
    CHECK_MEM(emd.data, md, n);
    CHECK_EQ_INT(edata.len, xl);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);

    ck_damaged(&x, md, n, data, xl, dl);
    ck_truncated(&x, md, n, data, xl, dl);
    fx_abuse(&x, md, n, data, xl, true);
    uint8_t *v = make_values(100000);
    fx_roundtrip(&x, NULL, 0, NULL, 0);
    fx_roundtrip(&x, NULL, 0, v, 1);
    fx_roundtrip(&x, v + 7, 33, v, 100000);
    free(v);
    fx_free(&x);
}

static void test_checksums(void)
{
    ck_case(&tdb_filter_checksum_md5, EVP_md5(), 16);
    ck_case(&tdb_filter_checksum_sha256, EVP_sha256(), 32);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_checksums);
    return unit_done();
}
