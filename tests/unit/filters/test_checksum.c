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

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_checksums);
    return unit_done();
}
