/* aes256gcm.c: the internal AES-256-GCM filter (tile.md, "Encryption"). */
#include "compress_common.h"
#include "core/names.h"

#include <limits.h>
#include <openssl/evp.h>

/* The key (call->key) is 32 bytes.  Metadata: u32 metadata parts, u32 data
 * parts, then per part (metadata first) u32 plaintext length, u32
 * ciphertext length, 12-byte IV, 16-byte tag.  Data: the ciphertexts one
 * after the other.  The input metadata is encrypted as a part and not
 * passed on in the clear.  GCM adds no padding, so the two lengths are
 * equal; there is no additional authenticated data. */

#define AES_IV_BYTES 12
#define AES_TAG_BYTES 16
#define AES_PART_MD (8 + AES_IV_BYTES + AES_TAG_BYTES)
#define AES_STEP (1u << 30) /* EVP lengths are int: feed 1 GiB at a time */

/* Runs the cipher over n bytes in steps that fit an int. */
static int aes_update(EVP_CIPHER_CTX *ctx, bool enc, uint8_t *dst,
                      const uint8_t *src, size_t n)
{
    size_t done = 0;

    while (done < n) {
        int step = (int)(n - done > AES_STEP ? AES_STEP : n - done), outl = 0;
        int ok = enc ? EVP_EncryptUpdate(ctx, dst + done, &outl, src + done,
                                         step)
                     : EVP_DecryptUpdate(ctx, dst + done, &outl, src + done,
                                         step);
        if (ok != 1 || outl != step)
            return -1;
        done += (size_t)step;
    }
    return 0;
}

static int aes_decrypt_part(const struct tdb_filter_call *call,
                            struct tdb_cursor *md, struct tdb_cursor *data,
                            const char *kind, uint32_t i, struct tdb_buf *out)
{
    uint32_t plain = 0, enc = 0;
    const uint8_t *iv = NULL, *tag = NULL, *src = NULL;
    uint8_t *dst = NULL, dummy[16];
    EVP_CIPHER_CTX *ctx;
    size_t base = out->len;
    int outl = 0, rc = 0;

    tdb_cur_u32(md, &plain);
    tdb_cur_u32(md, &enc);
    tdb_cur_bytes(md, AES_IV_BYTES, &iv);
    tdb_cur_bytes(md, AES_TAG_BYTES, &tag);
    if (md->bad)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "AES-256-GCM: metadata truncated at %s part %u", kind,
                       i);
    if (plain != enc)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "AES-256-GCM: %s part %u records %u plaintext but %u "
                       "encrypted bytes", kind, i, plain, enc);
    if (tdb_cur_bytes(data, enc, &src) < 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "AES-256-GCM: %s part %u claims %u bytes but only %zu "
                       "remain", kind, i, enc, tdb_cur_left(data));
    if (plain > 0 && tdb_buf_grow(out, plain, &dst) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "AES-256-GCM: out of memory");
    ctx = EVP_CIPHER_CTX_new();
    if (!ctx) {
        out->len = base;
        return tdb_err(call->err, TDB_E_NOMEM, "AES-256-GCM: out of memory");
    }
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, call->key, iv) != 1 ||
        aes_update(ctx, false, dst, src, plain) < 0 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, AES_TAG_BYTES,
                            (void *)(uintptr_t)tag) != 1)
        rc = tdb_err(call->err, TDB_E_NOMEM,
                     "AES-256-GCM: OpenSSL failed to decrypt %s part %u",
                     kind, i);
    else if (EVP_DecryptFinal_ex(ctx, dummy, &outl) != 1)
        rc = tdb_err(call->err, TDB_E_AUTH,
                     "AES-256-GCM: %s part %u failed authentication (wrong "
                     "key or tampered bytes)", kind, i);
    EVP_CIPHER_CTX_free(ctx);
    if (rc < 0) {
        /* never hand out unauthenticated plaintext */
        if (dst)
            memset(dst, 0, plain);
        out->len = base;
    }
    return rc;
}

static int aes_decode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    struct tdb_cursor *md = &st->md;
    struct tdb_buf *md_out = st->md_out;
    struct tdb_buf *data_out = st->data_out;
    struct tdb_compress_counts n = {0, 0};
    struct tdb_cursor dc;
    uint8_t dummy = 0;
    int rc = 0;

    if (!call->key)
        return tdb_err(call->err, TDB_E_NOKEY,
                       "AES-256-GCM: the tile is encrypted and no key was "
                       "given");
    if ((rc = tdb_compress_read_counts(call, md, AES_PART_MD, "AES-256-GCM",
                                       "part", &n)))
        return rc;
    tdb_cur_init(&dc, st->size ? st->data : &dummy, st->size);
    for (uint32_t i = 0; rc == 0 && i < n.nmd; i++)
        rc = aes_decrypt_part(call, md, &dc, "metadata", i, md_out);
    for (uint32_t i = 0; rc == 0 && i < n.ndata; i++)
        rc = aes_decrypt_part(call, md, &dc, "data", i, data_out);
    if (rc == 0)
        tdb_cur_skip(md, tdb_cur_left(md));
    return rc;
}

static int aes_encrypt_part(const struct tdb_filter_call *call,
                            const uint8_t *src, size_t n,
                            struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    uint8_t iv[AES_IV_BYTES], tag[AES_TAG_BYTES], *dst = NULL, dummy[16];
    EVP_CIPHER_CTX *ctx;
    int outl = 0, rc = 0;

    if (n > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "AES-256-GCM: part of %zu bytes is too large", n);
    if (tdb_random(iv, sizeof iv, call->err) != 0)
        return tdb_err(call->err, TDB_E_IO,
                       "AES-256-GCM: no random bytes for the IV");
    if (n > 0 && tdb_buf_grow(data_out, n, &dst) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "AES-256-GCM: out of memory");
    ctx = EVP_CIPHER_CTX_new();
    if (!ctx || EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, call->key,
                                   iv) != 1 ||
        aes_update(ctx, true, dst, src, n) < 0 ||
        EVP_EncryptFinal_ex(ctx, dummy, &outl) != 1 || outl != 0 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, AES_TAG_BYTES, tag) !=
            1)
        rc = tdb_err(call->err, TDB_E_NOMEM,
                     "AES-256-GCM: OpenSSL failed to encrypt");
    EVP_CIPHER_CTX_free(ctx);
    if (rc < 0)
        return rc;
    if (tdb_buf_put_u32(md_out, (uint32_t)n) < 0 ||
        tdb_buf_put_u32(md_out, (uint32_t)n) < 0 ||
        tdb_buf_append(md_out, iv, sizeof iv) < 0 ||
        tdb_buf_append(md_out, tag, sizeof tag) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "AES-256-GCM: out of memory");
    return 0;
}

static int aes_encode(const struct tdb_filter_call *call,
                      struct tdb_filter_stage *st)
{
    size_t size = st->size;
    int rc;

    if (!call->key)
        return tdb_err(call->err, TDB_E_NOKEY,
                       "AES-256-GCM: no key to encrypt with");
    if ((rc = tdb_compress_write_counts(call, st->md.len, size, "AES-256-GCM",
                                        st->md_out)))
        return rc;
    if (st->md.len)
        rc = aes_encrypt_part(call, st->md.p, st->md.len, st->md_out,
                              st->data_out);
    if (rc == 0 && size)
        rc = aes_encrypt_part(call, st->data, size, st->md_out, st->data_out);
    return rc;
}

static int aes_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                            uint32_t version, struct tdb_error *err)
{
    return 0; /* never serialised; no options */
}

static int aes_write_options(const struct tdb_filter *f, struct tdb_buf *out)
{
    return 0;
}

static unsigned aes_output_type(const struct tdb_filter *f, unsigned in_type)
{
    return TDB_BLOB; /* ciphertext is opaque bytes */
}

const struct tdb_filter_ops tdb_filter_aes256gcm = {
    .name = "AES_256_GCM",
    .type = TDB_FILTER_AES_256_GCM,
    .read_options = aes_read_options,
    .write_options = aes_write_options,
    .output_type = aes_output_type,
    .decode = aes_decode,
    .encode = aes_encode,
};
