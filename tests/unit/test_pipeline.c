/* test_pipeline.c: filter pipelines (parse, write), chunked tiles (decode,
 * encode, TileDB's chunking), and generic tiles (plain and encrypted). */
#include "filters/filter.h"
#include "model/generic_tile.h"
#include "unit.h"

#include <stdlib.h>

/* ZSTD level 5, then BYTESHUFFLE, max chunk 65536 */
static const uint8_t pipe_bytes[] = {
    0x00, 0x00, 0x01, 0x00, 2, 0, 0, 0,
    2, 5, 0, 0, 0, 2, 5, 0, 0, 0,
    9, 0, 0, 0, 0};

static void test_pipeline_parse_write(void)
{
    struct tdb_pipeline p;
    struct tdb_cursor c;
    struct tdb_error err = {0};
    tdb_cur_init(&c, pipe_bytes, sizeof pipe_bytes);
    CHECK_EQ_INT(tdb_pipeline_read(&p, &c, 22, &err), 0);
    CHECK_EQ_INT(p.max_chunk_size, 65536);
    CHECK_EQ_INT(p.n, 2);
    CHECK_EQ_INT(p.f[0].type, TDB_FILTER_ZSTD);
    CHECK_EQ_INT(p.f[0].level, 5);
    CHECK_EQ_INT(p.f[1].type, TDB_FILTER_BYTESHUFFLE);
    CHECK(tdb_pipeline_has(&p, TDB_FILTER_ZSTD));
    CHECK(!tdb_pipeline_has(&p, TDB_FILTER_GZIP));
    struct tdb_buf out = {0};
    CHECK_EQ_INT(tdb_pipeline_write(&p, &out), 0);
    CHECK_EQ_INT(out.len, sizeof pipe_bytes);
    CHECK_MEM(out.data, pipe_bytes, sizeof pipe_bytes);
    tdb_buf_free(&out);
    tdb_pipeline_free(&p);
}

static void test_pipeline_truncated_and_unknown(void)
{
    struct tdb_error err = {0};
    for (size_t n = 0; n < sizeof pipe_bytes; n++) {
        struct tdb_pipeline p;
        struct tdb_cursor c;
        tdb_cur_init(&c, pipe_bytes, n);
        CHECK(tdb_pipeline_read(&p, &c, 22, &err) != 0);
    }
    const uint8_t unknown[] = {0, 0, 1, 0, 1, 0, 0, 0, 99, 0, 0, 0, 0};
    struct tdb_pipeline p;
    struct tdb_cursor c;
    tdb_cur_init(&c, unknown, sizeof unknown);
    CHECK_EQ_INT(tdb_pipeline_read(&p, &c, 22, &err), TDB_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "99") != NULL);
}

static void test_tile_decode_unfiltered(void)
{
    /* two chunks "abc" and "de", no filters */
    const uint8_t tile[] = {2, 0, 0, 0, 0, 0, 0, 0,
                            3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c',
                            2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 'd', 'e'};
    struct tdb_pipeline none = {0};
    struct tdb_tile_desc d = {.datatype = TDB_UINT8, .cell_size = 1,
                              .version = 22, .what = "t.tdb: tile 0"};
    struct tdb_buf out = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_pipeline_decode(&none, &d, tile, sizeof tile, &out, &err), 0);
    CHECK_EQ_INT(out.len, 5);
    CHECK_MEM(out.data, "abcde", 5);
    /* every truncation is an error naming the tile */
    for (size_t n = 0; n < sizeof tile; n++) {
        tdb_buf_reset(&out);
        err.msg[0] = 0;
        CHECK(tdb_pipeline_decode(&none, &d, tile, n, &out, &err) != 0);
        CHECK(strstr(err.msg, "t.tdb: tile 0") != NULL);
    }
    /* a chunk whose original length lies */
    uint8_t bad[sizeof tile];
    memcpy(bad, tile, sizeof tile);
    bad[8] = 4;
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_pipeline_decode(&none, &d, bad, sizeof bad, &out, &err),
                 TDB_E_CORRUPT);
    tdb_buf_free(&out);
}

static void test_encode_decode_chunks(void)
{
    struct tdb_pipeline p;
    struct tdb_cursor c;
    struct tdb_error err = {0};
    tdb_cur_init(&c, pipe_bytes, sizeof pipe_bytes);
    CHECK_EQ_INT(tdb_pipeline_read(&p, &c, 22, &err), 0);
    size_t n = 50000; /* 200000 bytes: four chunks of at most 64 KiB */
    int32_t *v = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        v[i] = (int32_t)(i * 7 - 1000);
    struct tdb_tile_desc d = {.datatype = TDB_INT32, .cell_size = 4,
                              .version = 22, .what = "a0.tdb: tile 3"};
    struct tdb_buf enc = {0}, dec = {0};
    CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, (uint8_t *)v, n * 4, &enc, &err), 0);
    CHECK_EQ_INT(tdb_le64(enc.data), 4);
    CHECK(enc.len < n * 4);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, enc.data, enc.len, &dec, &err), 0);
    CHECK_EQ_INT(dec.len, n * 4);
    CHECK(dec.len == n * 4 && !memcmp(dec.data, v, n * 4));
    /* damage the compressed bytes: an error, never wrong data */
    enc.data[enc.len / 2] ^= 0xff;
    tdb_buf_reset(&dec);
    int r = tdb_pipeline_decode(&p, &d, enc.data, enc.len, &dec, &err);
    CHECK(r != 0 || (dec.len == n * 4 && memcmp(dec.data, v, n * 4) != 0) ||
          dec.len != n * 4);
    tdb_buf_free(&enc);
    tdb_buf_free(&dec);
    tdb_pipeline_free(&p);
    free(v);
}

static void test_var_chunks_whole_cells(void)
{
    /* var cells of 40000 bytes: chunks must hold whole cells */
    struct tdb_pipeline p = {.max_chunk_size = 65536};
    size_t ncell = 5, cs = 40000;
    uint8_t *data = malloc(ncell * cs);
    uint64_t off[5];
    for (size_t i = 0; i < ncell; i++) {
        off[i] = i * cs;
        memset(data + i * cs, (int)('a' + i), cs);
    }
    struct tdb_tile_desc d = {.datatype = TDB_STRING_ASCII, .cell_size = 1,
                              .version = 22, .is_var = true, .what = "v",
                              .in_offsets = off, .n_offsets = ncell};
    struct tdb_buf enc = {0}, dec = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, data, ncell * cs, &enc, &err), 0);
    uint64_t nchunks = tdb_le64(enc.data);
    CHECK(nchunks >= 2);
    /* each chunk's original length is a multiple of the cell size */
    size_t pos = 8;
    for (uint64_t k = 0; k < nchunks; k++) {
        uint32_t orig = tdb_le32(enc.data + pos);
        uint32_t fl = tdb_le32(enc.data + pos + 4);
        uint32_t ml = tdb_le32(enc.data + pos + 8);
        CHECK_EQ_INT(orig % cs, 0);
        pos += 12 + fl + ml;
    }
    CHECK_EQ_INT(pos, enc.len);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, enc.data, enc.len, &dec, &err), 0);
    CHECK(dec.len == ncell * cs && !memcmp(dec.data, data, dec.len));
    tdb_buf_free(&enc);
    tdb_buf_free(&dec);
    free(data);
}

static void test_generic_tile_roundtrip(void)
{
    const char *text = "generic tile payload";
    struct tdb_buf gt = {0}, out = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_generic_tile_encode((const uint8_t *)text, strlen(text),
                                         &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1},
                                         NULL, &gt, &err), 0);
    uint64_t next = 0;
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0},
                                         NULL, "f", &out, &next, &err), 0);
    CHECK_EQ_INT(next, gt.len);
    CHECK(out.len == strlen(text) && !memcmp(out.data, text, out.len));
    uint8_t enc;
    CHECK_EQ_INT(tdb_generic_tile_encryption(gt.data, gt.len, &enc), 0);
    CHECK_EQ_INT(enc, TDB_NO_ENCRYPTION);
    for (size_t n = 0; n < gt.len; n++) {
        tdb_buf_reset(&out);
        CHECK(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, n, 0},
                                      NULL, "f", &out, NULL, &err) != 0);
    }
    tdb_buf_free(&gt);
    tdb_buf_free(&out);
}

static void test_generic_tile_encrypted(void)
{
    uint8_t key[32], wrong[32];
    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)i;
        wrong[i] = (uint8_t)(i + 1);
    }
    const char *text = "secret metadata";
    struct tdb_buf gt = {0}, out = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_generic_tile_encode((const uint8_t *)text, strlen(text),
                                         &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1},
                                         key, &gt, &err), 0);
    CHECK(!memmem(gt.data, gt.len, text, strlen(text)));
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0},
                                         key, "m", &out, NULL, &err), 0);
    CHECK(out.len == strlen(text) && !memcmp(out.data, text, out.len));
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0},
                                         wrong, "m", &out, NULL, &err),
                 TDB_E_AUTH);
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0},
                                         NULL, "m", &out, NULL, &err),
                 TDB_E_NOKEY);
    tdb_buf_free(&gt);
    tdb_buf_free(&out);
}

static void test_checksum_guards(void)
{
    /* MD5 checksum over an unfiltered tile: a flipped byte is caught */
    struct tdb_filter f = {.type = TDB_FILTER_CHECKSUM_MD5,
                           .ops = &tdb_filter_checksum_md5,
                           .reinterpret_type = TDB_ANY};
    struct tdb_pipeline p = {.max_chunk_size = 65536, .n = 1, .f = &f};
    uint8_t data[1000];
    for (int i = 0; i < 1000; i++)
        data[i] = (uint8_t)(i * 13);
    struct tdb_tile_desc d = {.datatype = TDB_UINT8, .cell_size = 1,
                              .version = 22, .what = "a1.tdb: tile 2"};
    struct tdb_buf enc = {0}, dec = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, data, sizeof data, &enc, &err), 0);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, enc.data, enc.len, &dec, &err), 0);
    CHECK(dec.len == sizeof data && !memcmp(dec.data, data, sizeof data));
    enc.data[enc.len - 10] ^= 1;
    tdb_buf_reset(&dec);
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, enc.data, enc.len, &dec, &err),
                 TDB_E_CHECKSUM);
    CHECK(strstr(err.msg, "a1.tdb: tile 2") != NULL);
    tdb_buf_free(&enc);
    tdb_buf_free(&dec);
}

int main(void)
{
    RUN(test_pipeline_parse_write);
    RUN(test_pipeline_truncated_and_unknown);
    RUN(test_tile_decode_unfiltered);
    RUN(test_encode_decode_chunks);
    RUN(test_var_chunks_whole_cells);
    RUN(test_generic_tile_roundtrip);
    RUN(test_generic_tile_encrypted);
    RUN(test_checksum_guards);
    return unit_done();
}
