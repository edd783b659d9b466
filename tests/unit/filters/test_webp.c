/* test_webp.c: the WebP filter (format/filters/webp.c): its options,
 * lossless and lossy round trips, input it refuses to encode, a tile as
 * TileDB writes it, damaged tiles, an array through it, and the schemas
 * it refuses. */
#include "../unit.h"
#include "../support.h"

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

/* A WEBP filter of format fmt over tiles of y rows of x bytes. */
static void webp_fx(struct fx *x, unsigned fmt, bool lossless, float quality,
                    unsigned ye, unsigned xe)
{
    fx_init(x, &tdb_filter_webp, 0, 0, 1);
    CHECK_EQ_INT(tdb_filter_init(&x->f, TDB_FILTER_WEBP), 0);
    tdb_filter_set_int(&x->f, "format", fmt);
    tdb_filter_set_int(&x->f, "lossless", lossless);
    tdb_filter_set_real(&x->f, "quality", quality);
    tdb_filter_set_int(&x->f, "y_extent", ye);
    tdb_filter_set_int(&x->f, "x_extent", xe);
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

/* Options TileDB never writes are refused: sizes other than its 12
 * bytes, and values out of range (each a patch of opts). */
static void webp_options_refused(const uint8_t *opts, size_t len)
{
    static const struct {
        size_t at, n;
        uint8_t b[2];
    } patch[] = {
        {4, 1, {5, 0}},                 /* format */
        {5, 1, {2, 0}},                 /* lossless */
        {2, 1, {0xca, 0}},              /* quality 6553600 */
        {2, 2, {0xc0, 0x7f}},           /* NaN */
    };
    struct tdb_filter f = {.type = TDB_FILTER_WEBP, .ops = &tdb_filter_webp};
    struct tdb_error err = {0};
    struct tdb_cursor c;
    size_t sizes[] = {0, 10, 11, 13};
    for (size_t i = 0; i < 4; i++) {
        uint8_t big[13] = {0};
        memcpy(big, opts, len);
        tdb_cur_init(&c, big, sizes[i]);
        CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err),
                     TDB_E_CORRUPT);
    }
    for (size_t i = 0; i < sizeof patch / sizeof *patch; i++) {
        uint8_t bad[12];
        memcpy(bad, opts, sizeof bad);
        memcpy(bad + patch[i].at, patch[i].b, patch[i].n);
        tdb_cur_init(&c, bad, sizeof bad);
        CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err),
                     TDB_E_CORRUPT);
    }
}

static void test_webp_options(void)
{
    /* quality 100.0f, format RGB (1), lossless 1, extents 16 and 48. */
    static const uint8_t opts[] = {0x00, 0x00, 0xc8, 0x42, 1, 1,
                                   16, 0, 48, 0, 0, 0};
    struct tdb_filter f = {.type = TDB_FILTER_WEBP, .ops = &tdb_filter_webp};
    struct tdb_error err = {0};
    struct tdb_cursor c;
    struct tdb_buf out = {0};

    tdb_cur_init(&c, opts, sizeof opts);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err), 0);
    CHECK(tdb_filter_get_real(&f, "quality") == 100.0f);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "format"), TDB_WEBP_RGB);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "lossless"), 1);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "y_extent"), 16);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "x_extent"), 48);
    CHECK_EQ_INT(tdb_filter_webp.write_options(&f, &out), 0);
    CHECK_EQ_INT(out.len, sizeof opts);
    CHECK_MEM(out.data, opts, sizeof opts);
    tdb_buf_free(&out);
    /* quality 37.5f, BGRA, lossy */
    static const uint8_t opts2[] = {0x00, 0x00, 0x16, 0x42, 4, 0,
                                    2, 1, 0, 4, 0, 0};
    tdb_cur_init(&c, opts2, sizeof opts2);
    CHECK_EQ_INT(tdb_filter_webp.read_options(&f, &c, 22, &err), 0);
    CHECK(tdb_filter_get_real(&f, "quality") == 37.5f);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "format"), TDB_WEBP_BGRA);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "lossless"), 0);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "y_extent"), 258);
    CHECK_EQ_INT(tdb_filter_get_int(&f, "x_extent"), 1024);
    CHECK_EQ_INT(tdb_filter_webp.output_type(&f, TDB_UINT8), TDB_BLOB);
    webp_options_refused(opts, sizeof opts);
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
    tdb_filter_set_int(&x.f, "x_extent", 22); /* not whole pixels */
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 88, &md, &data),
                 TDB_E_INVAL);
    tdb_filter_set_int(&x.f, "x_extent", 24);
    tdb_filter_set_int(&x.f, "format", TDB_WEBP_NONE);
    CHECK_EQ_INT(filter_encode(x.f.ops, &x.call, NULL, 0, img, 96, &md, &data),
                 TDB_E_INVAL);
    CHECK(strstr(x.err.msg, "format is not set") != NULL);
    tdb_filter_set_int(&x.f, "format", TDB_WEBP_RGBA);
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
    tdb_filter_set_int(&x.f, "format", TDB_WEBP_NONE);
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

/* A lossless RGBA WEBP filter over tiles of 4 rows of 16 bytes. */
static void webp_rgba_filter(struct tdb_filter *f)
{
    CHECK_EQ_INT(tdb_filter_init(f, TDB_FILTER_WEBP), 0);
    tdb_filter_set_int(f, "format", TDB_WEBP_RGBA);
    tdb_filter_set_int(f, "lossless", 1);
    tdb_filter_set_real(f, "quality", 100.0);
    tdb_filter_set_int(f, "y_extent", 4);
    tdb_filter_set_int(f, "x_extent", 16);
}

/* The intact tile of webp[0..n) decodes to img (64 bytes). */
static void webp_intact(struct tdb_filter *f, const uint8_t *webp, size_t n,
                        const uint8_t *img)
{
    struct tdb_buf t = {0};
    webp_tile(&t, 64, webp, n);
    struct tdb_pipeline p = {.max_chunk_size = 65536, .n = 1, .f = f};
    struct tdb_tile_desc d = {.datatype = TDB_UINT8, .cell_size = 1,
                              .version = 22, .what = "ok"};
    struct tdb_buf out = {0};
    CHECK_EQ_INT(tdb_pipeline_decode(&p, &d, t.data, t.len, &out, NULL), 0);
    CHECK(out.len == 64 && !memcmp(out.data, img, 64));
    tdb_buf_free(&out);
    tdb_buf_free(&t);
}

/* Damaged image headers and data of webp[0..n). */
static void webp_damaged_image(struct tdb_filter *f, const uint8_t *webp,
                               size_t n, const uint8_t *img, size_t nimg)
{
    struct tdb_buf t = {0};
    uint8_t md[8];
    /* the image claims 16383 x 16383 pixels (1 GiB of RGBA) */
    uint8_t *big = malloc(n);
    memcpy(big, webp, n);
    uint32_t hdr = 16382u | (16382u << 14) | (tdb_le32(webp + 21) &
                                              0xf0000000u);
    tdb_st32(big + 21, hdr);
    webp_tile(&t, 64, big, n);
    CHECK_CAPPED(f, TDB_UINT8, false, &t, "16383x16383 image");
    /* 4 x 16383 pixels in a chunk that declares as much: allowed, and
     * the pixels are missing */
    tdb_st32(big + 21, 3u | (16382u << 14) | (tdb_le32(webp + 21) &
                                             0xf0000000u));
    webp_tile(&t, 4 * 16383 * 4, big, n);
    CHECK_CAPPED(f, TDB_UINT8, false, &t, "damaged WebP image (4x16383");
    /* truncated data: the part's size overruns it */
    webp_tile(&t, 64, webp, n);
    tdb_st32(t.data + 12, (uint32_t)n - 5);  /* the chunk's data size */
    t.len -= 5;
    CHECK_CAPPED(f, TDB_UINT8, false, &t, "overruns");
    /* a truncated WebP file whose size says so */
    tdb_st32(md, 1);
    tdb_st32(md + 4, (uint32_t)n - 5);
    capped_tile(&t, 64, md, 8, webp, (uint32_t)n - 5);
    CHECK_CAPPED(f, TDB_UINT8, false, &t, "damaged WebP image");
    /* not a WebP file (the image's pixels, repeated) */
    uint8_t *notwebp = malloc(n);
    for (size_t i = 0; notwebp && i < n; i++)
        notwebp[i] = img[i % nimg];
    CHECK(notwebp != NULL);
    if (notwebp) {
        capped_tile(&t, 64, md, 8, notwebp, (uint32_t)n - 5);
        CHECK_CAPPED(f, TDB_UINT8, false, &t, "not a WebP image");
    }
    free(notwebp);
    free(big);
    tdb_buf_free(&t);
}

/* Damaged part counts and sizes around webp[0..n). */
static void webp_damaged_parts(struct tdb_filter *f, const uint8_t *webp,
                               size_t n)
{
    struct tdb_buf t = {0};
    uint8_t md[12];
    /* four billion parts in 12 bytes of metadata */
    tdb_st32(md, 0xffffffffu);
    tdb_st32(md + 4, (uint32_t)n);
    tdb_st32(md + 8, 0);
    capped_tile(&t, 64, md, 12, webp, (uint32_t)n);
    CHECK_CAPPED(f, TDB_UINT8, false, &t, "part sizes");
    /* bytes after the parts */
    uint8_t *more = calloc(1, n + 3);
    memcpy(more, webp, n);
    tdb_st32(md, 1);
    tdb_st32(md + 4, (uint32_t)n);
    capped_tile(&t, 64, md, 8, more, (uint32_t)n + 3);
    free(more);
    CHECK_CAPPED(f, TDB_UINT8, false, &t, "after the 1 parts");
    /* no metadata at all */
    capped_tile(&t, 64, md, 0, webp, (uint32_t)n);
    CHECK_CAPPED(f, TDB_UINT8, false, &t, "no part count");
    tdb_buf_free(&t);
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
    webp_rgba_filter(&f);
    webp_intact(&f, webp, n, img);
    webp_damaged_image(&f, webp, n, img, sizeof img);
    webp_damaged_parts(&f, webp, n);
    WebPFree(webp);
}

/* The WEBP filter f has the options of test_webp_array's JSON. */
static void webp_array_filter(const struct tdb_filter *f)
{
    CHECK_EQ_INT(f->type, TDB_FILTER_WEBP);
    CHECK(tdb_filter_get_real(f, "quality") == 100.0);
    CHECK_EQ_INT(tdb_filter_get_int(f, "format"), TDB_WEBP_RGBA);
    CHECK_EQ_INT(tdb_filter_get_int(f, "lossless"), 1);
    CHECK_EQ_INT(tdb_filter_get_int(f, "y_extent"), 4);
    CHECK_EQ_INT(tdb_filter_get_int(f, "x_extent"), 24);
}

/* The JSON form of s prints the options and reads back the same. */
static void webp_array_json(const struct tdb_schema *s)
{
    struct tdb_schema *back = NULL;
    struct tdb_error err = {0};
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
        CHECK(tdb_filter_get_real(g, "quality") == 100.0 &&
              tdb_filter_get_int(g, "format") == TDB_WEBP_RGBA &&
              tdb_filter_get_int(g, "lossless") == 1 &&
              tdb_filter_get_int(g, "y_extent") == 4 &&
              tdb_filter_get_int(g, "x_extent") == 24);
        tdb_schema_free(back);
    }
    tdb_buf_free(&text);
}

/* Creates array s in arr and writes cells[0..n) over the whole domain;
 * the attribute's tiles are WebP files. */
static void webp_array_write(struct tdb_io *arr, const struct tdb_schema *s,
                             const uint8_t *cells, size_t n)
{
    struct tdb_io stg;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    int rc = tdb_array_create(arr, s, NULL, 1000, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    stg.ops->mkdir(stg.ctx, "w");
    CHECK_EQ_INT(stg.ops->write_at(stg.ctx, "w/rgba", 0, cells, n), 0);
    char *frag = NULL;
    rc = unit_write(arr, &stg, "w", NULL, 2000, 0, &frag, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    if (frag) {
        char path[512];
        uint8_t *raw = NULL;
        uint64_t rn = 0;
        snprintf(path, sizeof path, "__fragments/%s/a0.tdb", frag);
        CHECK_EQ_INT(tdb_io_read_file(arr, path, &raw, &rn, NULL), 0);
        CHECK(raw && memmem(raw, (size_t)rn, "WEBPVP8L", 8) != NULL);
        free(raw);
    }
    free(frag);
    tdb_io_free(&stg);
}

/* The mount of arr reads back cells[0..n) in rgba, and its __array.json
 * shows the filter as the JSON gave it. */
static void webp_array_read(struct tdb_io *arr, const uint8_t *cells, size_t n)
{
    struct tdb_error err = {0};
    struct tdb_open_options o;
    struct tdb_fs *fs = NULL;
    tdb_open_options_init(&o);
    CHECK_EQ_INT(tdb_fs_open(&fs, arr, &o, &err), 0);
    uint64_t ino = 0;
    struct tdb_stat st;
    if (fs && !tdb_fs_resolve(fs, "rgba", &ino, &err) &&
        !tdb_fs_stat(fs, ino, &st, &err)) {
        uint8_t *got = malloc(st.size + 1);
        size_t gn = (size_t)st.size;
        CHECK_EQ_INT(unit_fs_copy(fs, ino, 0, got, &gn, &err), 0);
        CHECK_EQ_INT(gn, n);
        if (gn == n)
            CHECK_MEM(got, cells, n);
        free(got);
    } else {
        CHECK(!"rgba readable");
    }
    if (fs && !tdb_fs_resolve(fs, "__array.json", &ino, &err) &&
        !tdb_fs_stat(fs, ino, &st, &err)) {
        char *got = calloc(1, st.size + 1);
        size_t gn = (size_t)st.size;
        CHECK_EQ_INT(unit_fs_copy(fs, ino, 0, got, &gn, &err), 0);
        CHECK(strstr(got, "\"format\": \"RGBA\", \"lossless\": true") !=
              NULL);
        free(got);
    } else {
        CHECK(!"__array.json readable");
    }
    tdb_fs_close(fs);
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
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    int rc = tdb_schema_from_json(json, strlen(json), &s, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        return;
    webp_array_filter(&s->attrs[0].filters.f[0]);
    webp_array_json(s);
    struct tdb_io arr;
    CHECK_EQ_INT(tdb_io_mem(&arr), 0);
    const size_t n = 8 * 48;
    uint8_t *cells = webp_noise(n, 4, 77);
    webp_array_write(&arr, s, cells, n);
    webp_array_read(&arr, cells, n);
    free(cells);
    tdb_io_free(&arr);
    tdb_schema_free(s);
}

/* A WEBP filter off the attributes is refused. */
static void webp_refused_off_attrs(void)
{
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
    webp_refused_off_attrs();
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_webp_options);
    RUN(test_webp_lossless_roundtrip);
    RUN(test_webp_lossy);
    RUN(test_webp_encode_refused);
    RUN(test_webp_tiledb_tile);
    RUN(test_webp_damaged);
    RUN(test_webp_array);
    RUN(test_webp_schema_refused);
    return unit_done();
}
