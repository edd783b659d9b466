/* checksum_common.c: the framing both checksum filters share (tile.md,
 * "Checksum Filters"): the digests of the metadata and data stretches,
 * checked on decode and computed on encode; MD5 and SHA-256 differ only
 * in the digest. */
#include "checksum_common.h"
#include "compress_common.h"

#include <openssl/evp.h>

/* Metadata: u32 metadata checksums, u32 data checksums, then per checksum
 * (metadata first) u64 bytes covered and the digest, then the input
 * metadata intact.  Metadata checksums cover consecutive stretches of that
 * trailing metadata, data checksums consecutive stretches of the data; the
 * data passes through unchanged. */

static const char *checksum_name(unsigned digest)
{
    return digest == TDB_FILTER_CHECKSUM_MD5 ? "CHECKSUM_MD5"
                                             : "CHECKSUM_SHA256";
}

static int checksum_hash(unsigned digest, const struct tdb_filter_call *call,
                         const uint8_t *p, size_t n, uint8_t *out)
{
    const EVP_MD *md = digest == TDB_FILTER_CHECKSUM_MD5 ? EVP_md5()
                                                         : EVP_sha256();
    unsigned int len = 0;
    uint8_t dummy = 0;

    if (EVP_Digest(n ? p : &dummy, n, out, &len, md, NULL) != 1 ||
        len != (unsigned)EVP_MD_size(md))
        return tdb_err(call->err, TDB_E_NOMEM, "%s: digest failed",
                       checksum_name(digest));
    return 0;
}

/* Verifies `count` checksums read from hdr against consecutive stretches
 * of the bytes under `over`. */
static int checksum_verify(unsigned digest, const struct tdb_filter_call *call,
                           struct tdb_cursor *hdr, uint32_t count,
                           struct tdb_cursor *over, const char *kind)
{
    size_t dlen = digest == TDB_FILTER_CHECKSUM_MD5 ? 16 : 32;
    uint8_t got[32];

    for (uint32_t i = 0; i < count; i++) {
        uint64_t n = 0;
        const uint8_t *want = NULL, *p = NULL;
        int rc;

        tdb_cur_u64(hdr, &n);
        tdb_cur_bytes(hdr, dlen, &want);
        if (hdr->bad)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: metadata truncated at %s checksum %u",
                           checksum_name(digest), kind, i);
        if (n > tdb_cur_left(over) || tdb_cur_bytes(over, (size_t)n, &p) < 0)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "%s: %s checksum %u covers %llu bytes but only "
                           "%zu remain", checksum_name(digest), kind, i,
                           (unsigned long long)n, tdb_cur_left(over));
        rc = checksum_hash(digest, call, p, (size_t)n, got);
        if (rc < 0)
            return rc;
        if (memcmp(got, want, dlen) != 0)
            return tdb_err(call->err, TDB_E_CHECKSUM,
                           "%s: %s checksum %u mismatch over %llu bytes",
                           checksum_name(digest), kind, i,
                           (unsigned long long)n);
    }
    return 0;
}

/* Passes the metadata md[0..md_size) and the data on unchanged. */
static int checksum_pass_on(unsigned digest,
                            const struct tdb_filter_call *call,
                            struct tdb_filter_stage *st)
{
    int rc = tdb_buf_append(st->md_out, st->md.p, st->md.len);
    if (rc == 0)
        rc = tdb_buf_append(st->data_out, st->data, st->size);
    if (rc < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "%s: out of memory",
                       checksum_name(digest));
    return 0;
}

int tdb_checksum_decode(unsigned digest, const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    size_t dlen = digest == TDB_FILTER_CHECKSUM_MD5 ? 16 : 32;
    struct tdb_compress_counts n;
    struct tdb_cursor hdr, rest, dc;
    const uint8_t *tail = NULL;
    size_t tail_len;
    uint8_t dummy = 0;
    /* per checksum: u64 bytes covered and the digest */
    int rc =
        tdb_compress_read_counts(call, &st->md, 8 + dlen, checksum_name(digest),
                                 "checksum", &n);

    if (rc < 0)
        return rc;
    /* hdr walks the checksums; the metadata after them is passed on. */
    hdr = st->md;
    tdb_cur_skip(&st->md, ((size_t)n.nmd + n.ndata) * (8 + dlen)); /* fits: read */
    tail_len = tdb_cur_left(&st->md);
    tdb_cur_bytes(&st->md, tail_len, &tail);
    tdb_cur_init(&rest, tail_len ? tail : &dummy, tail_len);
    tdb_cur_init(&dc, st->size ? st->data : &dummy, st->size);
    rc = checksum_verify(digest, call, &hdr, n.nmd, &rest, "metadata");
    if (rc == 0)
        rc = checksum_verify(digest, call, &hdr, n.ndata, &dc, "data");
    if (rc < 0)
        return rc;
    struct tdb_filter_stage pass = {.data = st->data,
                                    .size = st->size,
                                    .md_out = st->md_out,
                                    .data_out = st->data_out};
    tdb_cur_init(&pass.md, tail, tail_len);
    return checksum_pass_on(digest, call, &pass);
}

static int checksum_part(unsigned digest, const struct tdb_filter_call *call,
                         const uint8_t *p, size_t n, struct tdb_buf *md_out)
{
    uint8_t h[32];
    int rc = checksum_hash(digest, call, p, n, h);

    if (rc < 0)
        return rc;
    rc = tdb_buf_put_u64(md_out, n);
    if (rc == 0)
        rc = tdb_buf_append(md_out, h,
                            digest == TDB_FILTER_CHECKSUM_MD5 ? 16 : 32);
    if (rc < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "%s: out of memory",
                       checksum_name(digest));
    return 0;
}

int tdb_checksum_encode(unsigned digest, const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st)
{
    size_t md_size = st->md.len;
    size_t size = st->size;
    int rc = tdb_compress_write_counts(call, md_size, size,
                                       checksum_name(digest), st->md_out);

    if (rc == 0 && md_size)
        rc = checksum_part(digest, call, st->md.p, md_size, st->md_out);
    if (rc == 0 && size)
        rc = checksum_part(digest, call, st->data, size, st->md_out);
    if (rc < 0)
        return rc;
    return checksum_pass_on(digest, call, st);
}
