/* mkseeds.c: writes seeds for fuzz_pipeline into the folder given: for
 * each filter (and some chains) a pipeline and a tile that decodes, and
 * hand-made damaged tiles whose headers declare far more than they hold
 * (before the decoders were bounded, each made a decoder allocate GiBs).
 * Not built by make; scripts/fuzz --seeds builds and runs it:
 *   cc -I format tests/fuzz/mkseeds.c format/libtdbformat.a ... */
#include "fuzz.h"
#include "filters/filter.h"
#include "filters/options.h"

#include <stdio.h>
#include <stdlib.h>

static const char *outdir;
static int nseed;

/* header: dt, flags, version, u16 cell size, u16 cells; then pipeline and
 * tile */
static void put(const char *name, unsigned dt, unsigned flags, unsigned ver,
                unsigned cs, unsigned ncells, const struct tdb_buf *pipe,
                const uint8_t *tile, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    uint8_t h[7] = {(uint8_t)dt, (uint8_t)flags, (uint8_t)ver,
                    (uint8_t)cs, (uint8_t)(cs >> 8), (uint8_t)ncells,
                    (uint8_t)(ncells >> 8)};
    fwrite(h, 1, sizeof h, f);
    fwrite(pipe->data, 1, pipe->len, f);
    fwrite(tile, 1, n, f);
    fclose(f);
    nseed++;
}

static struct tdb_filter mk(unsigned type)
{
    struct tdb_filter f;
    memset(&f, 0, sizeof f);
    f.type = (uint8_t)type;
    f.ops = tdb_filter_lookup(type);
    tdb_filter_set_int(&f, "reinterpret_datatype", TDB_ANY);
    tdb_filter_set_int(&f, "level", -1);
    tdb_filter_set_int(&f, "max_window", 256);
    tdb_filter_set_real(&f, "scale", 0.5);
    tdb_filter_set_real(&f, "offset", 1);
    tdb_filter_set_int(&f, "byte_width", 4);
    static const uint8_t comp[TDB_FILTER_TYPE_COUNT] = {
        [TDB_FILTER_GZIP] = 1, [TDB_FILTER_ZSTD] = 2, [TDB_FILTER_LZ4] = 3,
        [TDB_FILTER_RLE] = 4, [TDB_FILTER_BZIP2] = 5,
        [TDB_FILTER_DOUBLE_DELTA] = 6, [TDB_FILTER_DICTIONARY] = 7,
        [TDB_FILTER_DELTA] = 8};
    tdb_filter_set_int(&f, "compressor", comp[type]);
    return f;
}

/* Encodes `bytes` (at most SEED_MAX) bytes of sample values of dt with
 * the filters and writes the seed. */
#define SEED_MAX 20000
static void seed(const char *name, unsigned dt, const unsigned *types,
                 unsigned n, bool key, size_t bytes)
{
    struct tdb_filter f[8];
    struct tdb_pipeline p = {.max_chunk_size = 65536, .n = n, .f = f};
    for (unsigned i = 0; i < n; i++)
        f[i] = mk(types[i]);
    unsigned w = tdb_dt_size(dt);
    static uint8_t vals[SEED_MAX];
    for (size_t i = 0; i < bytes; i++)
        vals[i] = (uint8_t)(i / (3 * w)); /* non-decreasing values */
    if (dt == TDB_FLOAT32 || dt == TDB_FLOAT64)
        for (size_t i = 0; i + w <= bytes; i += w) {
            double d = (double)(i / w) * 0.5;
            float x = (float)d;
            memcpy(vals + i, w == 4 ? (void *)&x : (void *)&d, w);
        }
    size_t len = bytes / w * w;
    struct tdb_tile_desc d = {.datatype = dt, .cell_size = w, .version = 22,
                              .key = key ? fuzz_key : NULL, .what = name};
    struct tdb_buf pipe = {0}, tile = {0};
    struct tdb_error err = {0};
    if (tdb_pipeline_write(&p, &pipe) ||
        tdb_pipeline_encode(&p, &d, vals, len, &tile, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        exit(1);
    }
    put(name, dt, key ? 2 : 0, 22, w, 0, &pipe, tile.data, tile.len);
    tdb_buf_free(&pipe);
    tdb_buf_free(&tile);
}

/* A var-sized string tile through RLE or DICTIONARY's string form. */
static void seed_strings(const char *name, unsigned type)
{
    struct tdb_filter f = mk(type);
    struct tdb_pipeline p = {.max_chunk_size = 65536, .n = 1, .f = &f};
    static const char s[] = "aaabbbbbbccaaaaaadd";
    uint64_t off[] = {0, 3, 3, 9, 11, 17};
    struct tdb_tile_desc d = {.datatype = TDB_STRING_ASCII, .cell_size = 1,
                              .version = 22, .is_var = true, .what = name,
                              .in_offsets = off, .n_offsets = 6};
    struct tdb_buf pipe = {0}, tile = {0};
    struct tdb_error err = {0};
    if (tdb_pipeline_write(&p, &pipe) ||
        tdb_pipeline_encode(&p, &d, (const uint8_t *)s, sizeof s - 1, &tile,
                            &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        exit(1);
    }
    put(name, TDB_STRING_ASCII, 1 | 4, 22, 1, 6, &pipe, tile.data, tile.len);
    tdb_buf_free(&pipe);
    tdb_buf_free(&tile);
}

/* A one-chunk tile: u64 1, u32 orig, u32 data bytes, u32 metadata bytes,
 * metadata, data. */
static void damaged(const char *name, unsigned dt, unsigned flags,
                    unsigned ncells, const unsigned *types, unsigned n,
                    uint32_t orig, const uint8_t *md, uint32_t mlen,
                    const uint8_t *data, uint32_t dlen)
{
    struct tdb_filter f[4];
    struct tdb_pipeline p = {.max_chunk_size = 65536, .n = n, .f = f};
    for (unsigned i = 0; i < n; i++)
        f[i] = mk(types[i]);
    struct tdb_buf pipe = {0}, tile = {0};
    tdb_pipeline_write(&p, &pipe);
    tdb_buf_put_u64(&tile, 1);
    tdb_buf_put_u32(&tile, orig);
    tdb_buf_put_u32(&tile, dlen);
    tdb_buf_put_u32(&tile, mlen);
    tdb_buf_append(&tile, md, mlen);
    tdb_buf_append(&tile, data, dlen);
    put(name, dt, flags, 22, tdb_dt_size(dt) ? tdb_dt_size(dt) : 1, ncells,
        &pipe, tile.data, tile.len);
    tdb_buf_free(&pipe);
    tdb_buf_free(&tile);
}

/* For each filter, AES and some chains: 600 bytes of sample values. */
static void seed_filters(void)
{
    static const struct {
        const char *name;
        unsigned dt, n, t[3];
        bool key;
    } s[] = {
        {"none", TDB_INT32, 1, {TDB_FILTER_NONE}, false},
        {"gzip", TDB_INT32, 1, {TDB_FILTER_GZIP}, false},
        {"zstd", TDB_INT64, 1, {TDB_FILTER_ZSTD}, false},
        {"lz4", TDB_UINT16, 1, {TDB_FILTER_LZ4}, false},
        {"bzip2", TDB_INT32, 1, {TDB_FILTER_BZIP2}, false},
        {"rle", TDB_INT32, 1, {TDB_FILTER_RLE}, false},
        {"double_delta", TDB_INT64, 1, {TDB_FILTER_DOUBLE_DELTA}, false},
        {"delta", TDB_INT32, 1, {TDB_FILTER_DELTA}, false},
        {"bit_width_reduction", TDB_INT32, 1,
         {TDB_FILTER_BIT_WIDTH_REDUCTION}, false},
        {"bitshuffle", TDB_INT32, 1, {TDB_FILTER_BITSHUFFLE}, false},
        {"byteshuffle", TDB_INT64, 1, {TDB_FILTER_BYTESHUFFLE}, false},
        {"positive_delta", TDB_UINT32, 1, {TDB_FILTER_POSITIVE_DELTA}, false},
        {"checksum_md5", TDB_INT32, 1, {TDB_FILTER_CHECKSUM_MD5}, false},
        {"checksum_sha256", TDB_INT32, 1, {TDB_FILTER_CHECKSUM_SHA256}, false},
        {"scale_float", TDB_FLOAT64, 1, {TDB_FILTER_SCALE_FLOAT}, false},
        {"xor", TDB_INT16, 1, {TDB_FILTER_XOR}, false},
        {"aes", TDB_INT32, 1, {TDB_FILTER_NONE}, true},
        {"chain_dd_zstd", TDB_INT64, 2,
         {TDB_FILTER_DOUBLE_DELTA, TDB_FILTER_ZSTD}, false},
        {"chain_bwr_bitshuffle_gzip", TDB_INT32, 3,
         {TDB_FILTER_BIT_WIDTH_REDUCTION, TDB_FILTER_BITSHUFFLE,
          TDB_FILTER_GZIP}, false},
        {"chain_pd_md5_lz4", TDB_UINT64, 3,
         {TDB_FILTER_POSITIVE_DELTA, TDB_FILTER_CHECKSUM_MD5, TDB_FILTER_LZ4},
         false},
        {"chain_scale_xor_bzip2", TDB_FLOAT32, 3,
         {TDB_FILTER_SCALE_FLOAT, TDB_FILTER_XOR, TDB_FILTER_BZIP2}, false},
        {"chain_delta_rle_sha256", TDB_INT16, 3,
         {TDB_FILTER_DELTA, TDB_FILTER_RLE, TDB_FILTER_CHECKSUM_SHA256},
         true},
    };
    for (size_t i = 0; i < sizeof s / sizeof *s; i++)
        seed(s[i].name, s[i].dt, s[i].t, s[i].n, s[i].key, 600);
}

/* Tiles long enough for the wide loops of every vector path, with tails. */
static void seed_wide(void)
{
    static const struct {
        const char *name;
        unsigned dt, n, t[2];
        size_t bytes;
    } wide[] = {
        {"bitshuffle_lz4_blocks", TDB_FLOAT32, 2,
         {TDB_FILTER_BITSHUFFLE, TDB_FILTER_LZ4}, 2 * 8192 + 1003},
        {"bitshuffle_int16", TDB_INT16, 1, {TDB_FILTER_BITSHUFFLE}, 3001},
        {"byteshuffle_zstd_wide", TDB_FLOAT64, 2,
         {TDB_FILTER_BYTESHUFFLE, TDB_FILTER_ZSTD}, 5005},
    };
    for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
        seed(wide[i].name, wide[i].dt, wide[i].t, wide[i].n, false,
             wide[i].bytes);
}

/* BWR: header 4 GiB - 1, one window of 4 GiB - 1 bytes, 8-bit. */
static void damaged_bwr_window(void)
{
    unsigned t = TDB_FILTER_BIT_WIDTH_REDUCTION;
    uint8_t md[8 + 4 + 1 + 4];
    tdb_st32(md, UINT32_MAX);
    tdb_st32(md + 4, 1);
    tdb_st32(md + 8, 0);
    md[12] = 8;
    tdb_st32(md + 13, 0xfffffffc);
    damaged("damaged_bwr", TDB_INT32, 0, 0, &t, 1, 16, md, sizeof md,
            (const uint8_t *)"abcd", 4);
}

/* DELTA, DOUBLE_DELTA, RLE and the compressors: a data part declaring
 * 4 GiB - 8 bytes out of 12. */
static void damaged_lengths(void)
{
    uint8_t md[16];
    tdb_st32(md, 0);
    tdb_st32(md + 4, 1);
    tdb_st32(md + 8, 0xfffffff8);
    tdb_st32(md + 12, 12);
    const uint8_t data[12] = {0xff, 0xff, 0xff, 0x1f, 0, 0, 0, 0, 1, 2,
                              3, 4};
    static const struct { const char *name; unsigned t; } c[] = {
        {"damaged_delta", TDB_FILTER_DELTA},
        {"damaged_double_delta", TDB_FILTER_DOUBLE_DELTA},
        {"damaged_rle", TDB_FILTER_RLE},
        {"damaged_gzip", TDB_FILTER_GZIP},
        {"damaged_zstd", TDB_FILTER_ZSTD},
        {"damaged_lz4", TDB_FILTER_LZ4},
        {"damaged_bzip2", TDB_FILTER_BZIP2},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        damaged(c[i].name, TDB_INT32, 0, 0, &c[i].t, 1, 0xfffffff8, md,
                sizeof md, data, sizeof data);
}

/* RLE and DICTIONARY strings: 2^29 - 1 cells of one 8-byte string from
 * one run. */
static void damaged_strings(void)
{
    const unsigned rle = TDB_FILTER_RLE, dict = TDB_FILTER_DICTIONARY;
    uint8_t md[22];
    tdb_st32(md, 0);
    tdb_st32(md + 4, 1);
    tdb_st32(md + 8, 0xfffffff8);  /* string bytes */
    tdb_st32(md + 12, 17);         /* encoded bytes */
    tdb_st32(md + 16, 0xfffffff8); /* offsets bytes */
    md[20] = 8;
    md[21] = 1;
    uint8_t data[17] = {0, 0, 0, 0, 0x1f, 0xff, 0xff, 0xff, 8,
                        'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    damaged("damaged_rle_strings", TDB_STRING_ASCII, 1 | 4, 6, &rle, 1,
            0xfffffff8, md, sizeof md, data, sizeof data);
    damaged("damaged_dictionary", TDB_STRING_ASCII, 1 | 4, 6, &dict, 1,
            0xfffffff8, md, sizeof md, data, sizeof data);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mkseeds OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    seed_filters();
    seed_wide();
    seed_strings("rle_strings", TDB_FILTER_RLE);
    seed_strings("dictionary_strings", TDB_FILTER_DICTIONARY);
    /* Damaged: each declares up to 4 GiB in a few dozen bytes. */
    damaged_bwr_window();
    damaged_lengths();
    damaged_strings();
    printf("mkseeds: %d seeds in %s\n", nseed, outdir);
    return 0;
}
