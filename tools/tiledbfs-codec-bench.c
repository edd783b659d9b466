/* tiledbfs-codec-bench.c: a codec library's own single-core speed, the
 * reference of scripts/bench's filter rows (no tiledbfs code involved). */
/*
 *   tiledbfs-codec-bench [-c CHUNK] [-l LEVEL] [-n PASSES] CODEC FILE
 *
 * Cuts FILE (the bytes a filter hands the library: the array's values
 * after the filters before it) into CHUNK-byte chunks (default 65536,
 * TileDB's largest filter chunk), prepares them once (compresses them at
 * LEVEL, or encrypts them), then on one thread times PASSES passes
 * (default 3) of what a read does with each chunk:
 *   zlib        inflate (zlib's inflateInit, inflate, inflateEnd)
 *   libdeflate  libdeflate_zlib_decompress of the same zlib streams
 *   lz4         LZ4_decompress_safe
 *   zstd        ZSTD_decompressDCtx, one context
 *   bzip2       BZ2_bzBuffToBuffDecompress
 *   sha256      SHA-256 of the chunk (OpenSSL)
 *   aes256gcm   AES-256-GCM decryption and tag check (OpenSSL)
 *   memcpy      a copy, for scale
 * and checks each result against the chunk.  Prints one line per pass:
 *   pass=1 codec=zstd level=3 chunk=65536 bytes=... stored=... seconds=...
 *   mbps=...
 * (mbps: 10^6 bytes of FILE per second).  Errors: a line on stderr, exit 1.
 */
#include <bzlib.h>
#include <errno.h>
#include <libdeflate.h>
#include <lz4.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define CB_IV 12
#define CB_TAG 16

/* One chunk: its plain bytes and what the codec stores of them. */
struct cb_chunk {
    const uint8_t *plain;
    size_t n;
    uint8_t *stored;
    size_t stored_n;
    uint8_t iv[CB_IV], tag[CB_TAG];
};

struct cb {
    const char *codec;
    int level;
    struct cb_chunk *c;
    size_t nchunks;
    uint8_t key[32];
    uint8_t *out;               /* one chunk of output */
    ZSTD_DCtx *dctx;
    struct libdeflate_decompressor *ldd;
    EVP_CIPHER_CTX *ectx;
};

static int cb_fail(const char *what)
{
    fprintf(stderr, "tiledbfs-codec-bench: %s\n", what);
    return -1;
}

static bool cb_is(const struct cb *b, const char *name)
{
    return strcmp(b->codec, name) == 0;
}

/* AES-256-GCM of c->plain into c->stored, with a fresh IV. */
static int cb_encrypt(struct cb *b, struct cb_chunk *c)
{
    int outl = 0, fin = 0;
    if (RAND_bytes(c->iv, CB_IV) != 1 ||
        EVP_EncryptInit_ex(b->ectx, EVP_aes_256_gcm(), NULL, b->key, c->iv) != 1 ||
        EVP_EncryptUpdate(b->ectx, c->stored, &outl, c->plain, (int)c->n) != 1 ||
        EVP_EncryptFinal_ex(b->ectx, c->stored + outl, &fin) != 1 ||
        EVP_CIPHER_CTX_ctrl(b->ectx, EVP_CTRL_GCM_GET_TAG, CB_TAG, c->tag) != 1)
        return cb_fail("AES-256-GCM encryption failed");
    c->stored_n = (size_t)outl + (size_t)fin;
    return 0;
}

/* What the codec stores of chunk c (compressed or encrypted). */
static int cb_prepare(struct cb *b, struct cb_chunk *c)
{
    size_t cap = c->n + c->n / 2 + 1024;
    if (cb_is(b, "zstd"))
        cap = ZSTD_compressBound(c->n);
    c->stored = malloc(cap);
    if (!c->stored)
        return cb_fail("out of memory");
    if (cb_is(b, "zlib") || cb_is(b, "libdeflate")) {
        uLongf n = cap;
        if (compress2(c->stored, &n, c->plain, c->n, b->level < 0 ? 6 : b->level) != Z_OK)
            return cb_fail("zlib compression failed");
        c->stored_n = n;
    } else if (cb_is(b, "lz4")) {
        int n = LZ4_compress_default((const char *)c->plain, (char *)c->stored,
                                     (int)c->n, (int)cap);
        if (n <= 0)
            return cb_fail("LZ4 compression failed");
        c->stored_n = (size_t)n;
    } else if (cb_is(b, "zstd")) {
        c->stored_n = ZSTD_compress(c->stored, cap, c->plain, c->n, b->level);
        if (ZSTD_isError(c->stored_n))
            return cb_fail("ZSTD compression failed");
    } else if (cb_is(b, "bzip2")) {
        unsigned n = (unsigned)cap;
        if (BZ2_bzBuffToBuffCompress((char *)c->stored, &n, (char *)c->plain,
                                     (unsigned)c->n, b->level < 1 ? 1 : b->level,
                                     0, 0) != BZ_OK)
            return cb_fail("bzip2 compression failed");
        c->stored_n = n;
    } else if (cb_is(b, "aes256gcm")) {
        return cb_encrypt(b, c);
    } else {
        c->stored_n = 0;    /* sha256, memcpy: nothing stored */
    }
    return 0;
}

static int cb_inflate(const struct cb_chunk *c, uint8_t *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK)
        return -1;
    zs.next_in = c->stored;
    zs.avail_in = (uInt)c->stored_n;
    zs.next_out = out;
    zs.avail_out = (uInt)c->n;
    int r = inflate(&zs, Z_FINISH);
    inflateEnd(&zs);
    return r == Z_STREAM_END && zs.avail_out == 0 ? 0 : -1;
}

static int cb_decrypt(struct cb *b, struct cb_chunk *c, uint8_t *out)
{
    int outl = 0, fin = 0;
    if (EVP_DecryptInit_ex(b->ectx, EVP_aes_256_gcm(), NULL, b->key, c->iv) != 1 ||
        EVP_DecryptUpdate(b->ectx, out, &outl, c->stored, (int)c->stored_n) != 1 ||
        EVP_CIPHER_CTX_ctrl(b->ectx, EVP_CTRL_GCM_SET_TAG, CB_TAG, c->tag) != 1 ||
        EVP_DecryptFinal_ex(b->ectx, out + outl, &fin) != 1)
        return -1;
    return (size_t)outl + (size_t)fin == c->n ? 0 : -1;
}

/* What a read does with chunk c, into b->out (sha256: the digest).
 * @return 0, or -1 when the result is not the chunk. */
static int cb_run(struct cb *b, struct cb_chunk *c)
{
    uint8_t *out = b->out;
    if (cb_is(b, "zlib"))
        return cb_inflate(c, out);
    if (cb_is(b, "libdeflate"))
        return libdeflate_zlib_decompress(b->ldd, c->stored, c->stored_n, out,
                                          c->n, NULL) == LIBDEFLATE_SUCCESS
                   ? 0 : -1;
    if (cb_is(b, "lz4"))
        return LZ4_decompress_safe((const char *)c->stored, (char *)out,
                                   (int)c->stored_n, (int)c->n) == (int)c->n
                   ? 0 : -1;
    if (cb_is(b, "zstd"))
        return ZSTD_decompressDCtx(b->dctx, out, c->n, c->stored,
                                   c->stored_n) == c->n ? 0 : -1;
    if (cb_is(b, "bzip2")) {
        unsigned n = (unsigned)c->n;
        return BZ2_bzBuffToBuffDecompress((char *)out, &n, (char *)c->stored,
                                          (unsigned)c->stored_n, 0, 0) == BZ_OK &&
                       n == c->n ? 0 : -1;
    }
    if (cb_is(b, "sha256")) {
        unsigned len = 0;
        return EVP_Digest(c->plain, c->n, out, &len, EVP_sha256(), NULL) == 1
                   ? 0 : -1;
    }
    if (cb_is(b, "aes256gcm"))
        return cb_decrypt(b, c, out);
    memcpy(out, c->plain, c->n);
    return 0;
}

static double cb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads the whole of path into *data.  @return its size, or -1. */
static long cb_read(const char *path, uint8_t **data)
{
    FILE *f = fopen(path, "rb");
    long n;
    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET)) {
        if (f)
            fclose(f);
        return cb_fail(strerror(errno));
    }
    *data = malloc((size_t)n + 1);
    if (!*data || fread(*data, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return cb_fail("cannot read the file");
    }
    fclose(f);
    return n;
}

static const char *const cb_codecs[] = {"zlib", "libdeflate", "lz4", "zstd",
                                        "bzip2", "sha256", "aes256gcm",
                                        "memcpy", NULL};

static int cb_usage(void)
{
    fprintf(stderr, "usage: tiledbfs-codec-bench [-c CHUNK] [-l LEVEL] "
                    "[-n PASSES] CODEC FILE\n"
                    "CODEC: zlib libdeflate lz4 zstd bzip2 sha256 aes256gcm "
                    "memcpy\n");
    return 1;
}

/* Times the passes and prints a line each.  @return 0 or -1. */
static int cb_passes(struct cb *b, size_t total, size_t stored, size_t chunk,
                     unsigned passes)
{
    for (unsigned p = 1; p <= passes; p++) {
        double t0 = cb_now();
        for (size_t i = 0; i < b->nchunks; i++)
            if (cb_run(b, &b->c[i]) ||
                (!cb_is(b, "sha256") &&
                 memcmp(b->out, b->c[i].plain, b->c[i].n)))
                return cb_fail("a chunk came back wrong");
        double s = cb_now() - t0;
        printf("pass=%u codec=%s level=%d chunk=%zu bytes=%zu stored=%zu "
               "seconds=%.6f mbps=%.1f\n", p, b->codec, b->level, chunk,
               total, stored, s, s > 0 ? (double)total / s / 1e6 : 0.0);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct cb b = {.level = -1};
    size_t chunk = 65536, stored = 0;
    unsigned passes = 3;
    uint8_t *data = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "c:l:n:")) != -1) {
        if (opt == 'c')
            chunk = strtoull(optarg, NULL, 10);
        else if (opt == 'l')
            b.level = atoi(optarg);
        else if (opt == 'n')
            passes = (unsigned)strtoul(optarg, NULL, 10);
        else
            return cb_usage();
    }
    if (argc - optind != 2 || chunk == 0 || chunk > (1u << 30) || passes == 0)
        return cb_usage();
    b.codec = argv[optind];
    bool known = false;
    for (size_t i = 0; cb_codecs[i]; i++)
        known |= cb_is(&b, cb_codecs[i]);
    if (!known)
        return cb_usage();
    long n = cb_read(argv[optind + 1], &data);
    if (n < 0)
        return 1;
    b.nchunks = ((size_t)n + chunk - 1) / chunk;
    b.c = calloc(b.nchunks ? b.nchunks : 1, sizeof *b.c);
    b.out = malloc(chunk);
    b.dctx = ZSTD_createDCtx();
    b.ldd = libdeflate_alloc_decompressor();
    b.ectx = EVP_CIPHER_CTX_new();
    if (!b.c || !b.out || !b.dctx || !b.ldd || !b.ectx ||
        RAND_bytes(b.key, sizeof b.key) != 1) {
        cb_fail("out of memory");
        return 1;
    }
    for (size_t i = 0; i < b.nchunks; i++) {
        b.c[i].plain = data + i * chunk;
        b.c[i].n = (size_t)n - i * chunk < chunk ? (size_t)n - i * chunk : chunk;
        if (cb_prepare(&b, &b.c[i]))
            return 1;
        stored += b.c[i].stored_n;
    }
    return cb_passes(&b, (size_t)n, stored, chunk, passes) ? 1 : 0;
}
