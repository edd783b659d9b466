/* test_aes256gcm.c: the AES-256-GCM filter (format/filters/aes256gcm.c):
 * encryption round trips, the key checked, damage found. */
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

/* ------------------------------------------------------------ AES-256-GCM */

/* The chunk of `text` (tl bytes) encrypted by OpenSSL under key and iv:
 * ciphertext in ct, tag in tag. */
static void aes_encrypt(const uint8_t *key, const uint8_t *iv,
                        const char *text, size_t tl, uint8_t *ct,
                        uint8_t *tag)
{
    int outl = 0, fl = 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, iv);
    EVP_EncryptUpdate(ctx, ct, &outl, (const uint8_t *)text, (int)tl);
    EVP_EncryptFinal_ex(ctx, ct + outl, &fl);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag);
    EVP_CIPHER_CTX_free(ctx);
    CHECK_EQ_INT(outl + fl, tl);
}

/* The filter's metadata in md for one part of tl bytes: returns its
 * length. */
static size_t aes_md(uint8_t *md, size_t tl, const uint8_t *iv,
                     const uint8_t *tag)
{
    size_t n = 0;
    put32(md, &n, 0);
    put32(md, &n, 1);
    put32(md, &n, (uint32_t)tl);
    put32(md, &n, (uint32_t)tl);
    memcpy(md + n, iv, 12);
    n += 12;
    memcpy(md + n, tag, 16);
    n += 16;
    return n;
}

/* Wrong key, tampered ciphertext, tampered tag, tampered IV, no key, and
 * lengths that disagree or overrun; the chunk is left intact. */
static void aes_damaged(struct fx *x, uint8_t *md, size_t n, uint8_t *ct,
                        size_t tl, const uint8_t *key, const uint8_t *bad_key)
{
    x->call.key = bad_key;
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), TDB_E_AUTH);
    CHECK_EQ_INT(x->data_out.len, 0); /* no unauthenticated plaintext */
    x->call.key = key;
    ct[5] ^= 1;
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), TDB_E_AUTH);
    ct[5] ^= 1;
    md[n - 1] ^= 1;
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), TDB_E_AUTH);
    md[n - 1] ^= 1;
    md[16] ^= 1;
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), TDB_E_AUTH);
    md[16] ^= 1;
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), 0);
    /* No key at all. */
    x->call.key = NULL;
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), TDB_E_NOKEY);
    x->call.key = key;
    /* Lengths that disagree or overrun. */
    tdb_st32(md + 12, (uint32_t)tl + 1);
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), TDB_E_CORRUPT);
    tdb_st32(md + 8, (uint32_t)tl + 1);
    CHECK_EQ_INT(fx_decode(x, md, n, ct, tl), TDB_E_CORRUPT);
    tdb_st32(md + 8, (uint32_t)tl);
    tdb_st32(md + 12, (uint32_t)tl);
}

/* Round trips; the metadata comes back decrypted, never in clear. */
static void aes_roundtrips(struct fx *x, const uint8_t *bad_key)
{
    uint8_t *v = make_values(50000);
    struct tdb_buf emd = {0}, edata = {0};
    fx_roundtrip(x, NULL, 0, NULL, 0);
    fx_roundtrip(x, NULL, 0, v, 1);
    fx_roundtrip(x, v + 100, 60, v, 50000);
    fx_reset(x);
    CHECK_EQ_INT(filter_encode(x->f.ops, &x->call,
                               (const uint8_t *)"PLAINMETA", 9, v, 100,
                               &emd, &edata),
                 0);
    CHECK_EQ_INT(emd.len, 8 + 2 * 36);
    CHECK_EQ_INT(edata.len, 109);
    CHECK(memmem(edata.data, edata.len, "PLAINMETA", 9) == NULL);
    x->call.key = bad_key;
    CHECK_EQ_INT(fx_decode(x, emd.data, emd.len, edata.data, edata.len),
                 TDB_E_AUTH);
    x->call.key = NULL;
    CHECK_EQ_INT(filter_encode(x->f.ops, &x->call, NULL, 0, v, 100, &emd,
                               &edata),
                 TDB_E_NOKEY);
    tdb_buf_free(&emd);
    tdb_buf_free(&edata);
    free(v);
}

static void test_aes256gcm(void)
{
    uint8_t key[32], bad_key[32], iv[12], tag[16], ct[64], md[128];
    const char *text = "secret tile bytes, 33 bytes long.";
    size_t tl = strlen(text);
    struct fx x;

    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)i;
        bad_key[i] = (uint8_t)i;
    }
    bad_key[31] ^= 1;
    for (int i = 0; i < 12; i++)
        iv[i] = (uint8_t)(0xa0 + i);
    aes_encrypt(key, iv, text, tl, ct, tag);

    fx_init(&x, &tdb_filter_aes256gcm, 0, 0, 1);
    x.call.key = key;
    size_t n = aes_md(md, tl, iv, tag);
    CHECK_EQ_INT(fx_decode(&x, md, n, ct, tl), 0);
    CHECK_EQ_INT(x.data_out.len, tl);
    CHECK_MEM(x.data_out.data, text, tl);
    CHECK_EQ_INT(x.md_out.len, 0);
    aes_damaged(&x, md, n, ct, tl, key, bad_key);
    fx_abuse(&x, md, n, ct, tl, true);
    aes_roundtrips(&x, bad_key);
    CHECK_EQ_INT(tdb_filter_aes256gcm.output_type(&x.f, TDB_INT32), TDB_BLOB);
    fx_free(&x);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_aes256gcm);
    return unit_done();
}
