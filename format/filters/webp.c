/* webp.c: the WEBP filter (filters/webp.md), through libwebp.
 *
 * Options: TileDB writes its WebpFilter::FilterConfig struct as it lies in
 * memory, 12 bytes: float quality, u8 input format, u8 lossless, u16 tile
 * extent of dimension 0 (the image's rows), u16 tile extent of dimension 1
 * (the bytes of a row: pixels times 3 or 4), 2 bytes of padding.  TileDB
 * fills the extents in from the schema when the schema is checked.
 *
 * A chunk (TileDB makes each tile one chunk) is one image of y_extent rows
 * of x_extent bytes.  Metadata: u32 number of parts, then u32 encoded size
 * of each part, then the metadata of the filters before; data: the parts'
 * WebP files one after the other.  Decoding gives width * height * pixel
 * bytes per part, in the option's pixel format. */
#include "filter.h"
#include "options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/encode.h>

#define WEBP_OPTIONS_SIZE 12
/* libwebp's largest image side (WEBP_MAX_DIMENSION), as TileDB checks. */
#define WEBP_MAX_SIDE 16383
/* The effort of lossless encoding, as libwebp's simple API gives it. */
#define WEBP_LOSSLESS_EFFORT 70.0f

/* The options of a WEBP filter, as its options bytes hold them. */
struct webp_options {
    float quality;              /* 0..100 (lossy) */
    uint8_t format;             /* enum tdb_webp_format */
    uint8_t lossless;           /* 0 or 1 */
    /* the tile extents of dimension 0 (rows of the image) and dimension 1
     * (bytes of a row), which TileDB copies from the schema */
    uint16_t y_extent, x_extent;
};
_Static_assert(sizeof(struct webp_options) <= TDB_FILTER_OPTIONS_MAX,
               "WEBP's options fit a struct tdb_filter");

static int webp_check_quality(const struct tdb_fopt_value *v, char *why,
                              size_t cap)
{
    if (v->d >= 0.0 && v->d <= 100.0)
        return 0;
    snprintf(why, cap, "%g is not in [0, 100]", v->d);
    return 1;
}

static const char *const webp_formats[] = {"NONE", "RGB", "BGR", "RGBA",
                                           "BGRA"};

/* The JSON has quality, format and lossless; the extents are the schema's
 * (format/write's schema check fills them in). */
static const struct tdb_filter_opt webp_opts_table[] = {
    {.name = "quality", .kind = TDB_FOPT_REAL, .width = 4,
     .flags = TDB_FOPT_NULL_OK, .check = webp_check_quality,
     .offset = offsetof(struct webp_options, quality)},
    {.name = "format", .kind = TDB_FOPT_NAME, .width = 1,
     .flags = TDB_FOPT_REQUIRED, .names = webp_formats,
     .n_names = sizeof webp_formats / sizeof *webp_formats,
     .offset = offsetof(struct webp_options, format)},
    {.name = "lossless", .kind = TDB_FOPT_BOOL, .width = 1,
     .flags = TDB_FOPT_NULL_OK,
     .offset = offsetof(struct webp_options, lossless)},
    {.name = "y_extent", .kind = TDB_FOPT_UINT, .width = 2,
     .flags = TDB_FOPT_NO_JSON, .max = UINT16_MAX,
     .offset = offsetof(struct webp_options, y_extent)},
    {.name = "x_extent", .kind = TDB_FOPT_UINT, .width = 2,
     .flags = TDB_FOPT_NO_JSON, .max = UINT16_MAX,
     .offset = offsetof(struct webp_options, x_extent)},
};

static const struct webp_options webp_defaults = {.quality = 100.0f};

static const struct webp_options *webp_opts(const struct tdb_filter *f)
{
    return tdb_filter_opts(f);
}

static int webp_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                             uint32_t version, struct tdb_error *err)
{
    const uint8_t *p;
    size_t n = tdb_cur_left(c);
    uint32_t qbits;
    float q;

    (void)version;
    if (n != WEBP_OPTIONS_SIZE || tdb_cur_bytes(c, n, &p))
        return tdb_err(err, TDB_E_CORRUPT, "WEBP filter options of %zu bytes "
                       "(expected %d)", n, WEBP_OPTIONS_SIZE);
    qbits = tdb_le32(p);
    memcpy(&q, &qbits, sizeof q);
    if (!(q >= 0.0f && q <= 100.0f))
        return tdb_err(err, TDB_E_CORRUPT, "WEBP filter options: quality %g "
                       "is not in [0, 100]", (double)q);
    if (p[4] > TDB_WEBP_BGRA)
        return tdb_err(err, TDB_E_CORRUPT, "WEBP filter options: unknown "
                       "input format %u", p[4]);
    if (p[5] > 1)
        return tdb_err(err, TDB_E_CORRUPT, "WEBP filter options: lossless "
                       "flag %u is not 0 or 1", p[5]);
    struct webp_options *o = tdb_filter_opts_edit(f);
    o->quality = q;
    o->format = p[4];
    o->lossless = p[5];
    o->y_extent = tdb_le16(p + 6);
    o->x_extent = tdb_le16(p + 8);
    return 0;
}

static int webp_write_options(const struct tdb_filter *f, struct tdb_buf *out)
{
    const struct webp_options *opt = webp_opts(f);
    uint8_t o[WEBP_OPTIONS_SIZE] = {0};
    uint32_t qbits;

    memcpy(&qbits, &opt->quality, sizeof qbits);
    tdb_st32(o, qbits);
    o[4] = opt->format;
    o[5] = opt->lossless;
    tdb_st16(o + 6, opt->y_extent);
    tdb_st16(o + 8, opt->x_extent);
    return tdb_buf_append(out, o, sizeof o);
}

/* Decodes one WebP file into `dst` (room for exactly w * h * bpp bytes).
 * @return dst, or NULL when libwebp refuses the file. */
static uint8_t *webp_decode_into(unsigned fmt, const uint8_t *src, size_t n,
                                 uint8_t *dst, size_t room, int stride)
{
    switch (fmt) {
    case TDB_WEBP_RGB: return WebPDecodeRGBInto(src, n, dst, room, stride);
    case TDB_WEBP_BGR: return WebPDecodeBGRInto(src, n, dst, room, stride);
    case TDB_WEBP_RGBA: return WebPDecodeRGBAInto(src, n, dst, room, stride);
    case TDB_WEBP_BGRA: return WebPDecodeBGRAInto(src, n, dst, room, stride);
    default: return NULL;
    }
}

/* Decodes the part at st->data + *used, `len` bytes (its size from the
 * metadata), of images in format fmt onto st->data_out; *made counts the
 * bytes decoded so far. */
static int webp_decode_part(const struct tdb_filter_call *call,
                            const struct tdb_filter_stage *st, uint32_t i,
                            uint32_t len, size_t *used, uint64_t *made)
{
    unsigned fmt = webp_opts(call->filter)->format;
    unsigned bpp = tdb_webp_pixel_bytes(fmt);
    uint64_t limit = tdb_filter_max_data(call);
    const uint8_t *src = st->data + *used;
    int w = 0, h = 0;
    uint8_t *dst;

    if (len > st->size - *used)
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: part %u of %u "
                       "bytes overruns the %zu data bytes", i, len,
                       st->size - *used);
    if (!WebPGetInfo(src, len, &w, &h) || w <= 0 || h <= 0)
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: part %u (%u "
                       "bytes) is not a WebP image", i, len);
    uint64_t n = (uint64_t)w * (uint64_t)h * bpp;
    if (n > limit - *made || n > SIZE_MAX)
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: part %u is a "
                       "%dx%d image of %llu bytes, more than the %llu "
                       "the chunk's declared size allows", i, w, h,
                       (unsigned long long)n,
                       (unsigned long long)(limit - *made));
    if (tdb_buf_grow(st->data_out, (size_t)n, &dst) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "WEBP: out of memory");
    if (!webp_decode_into(fmt, src, len, dst, (size_t)n, w * (int)bpp))
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: part %u: "
                       "damaged WebP image (%dx%d, %u bytes)", i, w, h,
                       len);
    *made += n;
    *used += len;
    return 0;
}

/* Decodes the parts the metadata lists, then hands on the rest of the
 * metadata. */
static int webp_decode_parts(const struct tdb_filter_call *call,
                             struct tdb_filter_stage *st)
{
    struct tdb_cursor *md = &st->md;
    uint64_t made = 0;
    size_t used = 0;
    const uint8_t *rest;
    uint32_t nparts;

    if (tdb_cur_u32(md, &nparts))
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: metadata truncated "
                       "(no part count)");
    if (nparts > tdb_cur_left(md) / 4)
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: metadata of %zu "
                       "bytes cannot hold %u part sizes", tdb_cur_left(md),
                       nparts);
    for (uint32_t i = 0; i < nparts; i++) {
        uint32_t len;
        tdb_cur_u32(md, &len);
        int rc = webp_decode_part(call, st, i, len, &used, &made);
        if (rc)
            return rc;
    }
    if (used != st->size)
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: %zu data bytes "
                       "after the %u parts", st->size - used, nparts);
    size_t left = tdb_cur_left(md);
    if (left > tdb_filter_max_md(call) || tdb_cur_bytes(md, left, &rest))
        return tdb_err(call->err, TDB_E_CORRUPT, "WEBP: %zu bytes of "
                       "metadata to hand on, more than the chunk allows",
                       left);
    if (tdb_buf_append(st->md_out, rest, left) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "WEBP: out of memory");
    return 0;
}

/* A WEBP filter runs on UINT8 values with its pixel format set (bpp, its
 * bytes a pixel, not 0); else the error `code`. */
static int webp_check_input(const struct tdb_filter_call *call, unsigned bpp,
                            int code)
{
    if (!bpp)
        return tdb_err(call->err, code, "WEBP: the filter's input "
                       "format is not set (RGB, BGR, RGBA or BGRA)");
    if (call->datatype != TDB_UINT8)
        return tdb_err(call->err, code, "WEBP: filters UINT8 values only, "
                       "not %s",
                       tdb_dt_name(call->datatype) ? tdb_dt_name(call->datatype)
                                                   : "?");
    return 0;
}

static int webp_decode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    unsigned bpp = tdb_webp_pixel_bytes(webp_opts(call->filter)->format);
    size_t base = st->data_out->len;
    int rc = webp_check_input(call, bpp, TDB_E_CORRUPT);
    if (rc)
        return rc;
    rc = webp_decode_parts(call, st);
    if (rc)
        st->data_out->len = base;
    return rc;
}

static int webp_import(unsigned fmt, WebPPicture *pic, const uint8_t *src,
                       int stride)
{
    switch (fmt) {
    case TDB_WEBP_RGB: return WebPPictureImportRGB(pic, src, stride);
    case TDB_WEBP_BGR: return WebPPictureImportBGR(pic, src, stride);
    case TDB_WEBP_RGBA: return WebPPictureImportRGBA(pic, src, stride);
    case TDB_WEBP_BGRA: return WebPPictureImportBGRA(pic, src, stride);
    default: return 0;
    }
}

/* An image to encode: h rows of stride bytes, w pixels each. */
struct webp_image {
    const uint8_t *src;
    int w, h, stride;
};

/* Encodes an image, appending the WebP file to out and its size to *len. */
static int webp_encode_image(const struct tdb_filter_call *call,
                             const struct webp_image *img,
                             struct tdb_buf *out, size_t *len)
{
    const struct webp_options *o = webp_opts(call->filter);
    int w = img->w, h = img->h;
    WebPConfig config;
    WebPPicture pic;
    WebPMemoryWriter wr;
    int rc = 0;

    /* Lossless keeps every byte, the colour under transparent pixels too
     * ("exact"; libwebp's simple lossless API would change it). */
    if (!WebPConfigPreset(&config, WEBP_PRESET_DEFAULT,
                          o->lossless ? WEBP_LOSSLESS_EFFORT : o->quality) ||
        !WebPPictureInit(&pic))
        return tdb_err(call->err, TDB_E_INVAL, "WEBP: libwebp version "
                       "mismatch");
    config.lossless = o->lossless;
    config.exact = o->lossless;
    if (!WebPValidateConfig(&config))
        return tdb_err(call->err, TDB_E_INVAL, "WEBP: libwebp refuses "
                       "quality %g", (double)o->quality);
    pic.use_argb = o->lossless;
    pic.width = w;
    pic.height = h;
    WebPMemoryWriterInit(&wr);
    pic.writer = WebPMemoryWrite;
    pic.custom_ptr = &wr;
    if (!webp_import(o->format, &pic, img->src, img->stride))
        rc = tdb_err(call->err, TDB_E_NOMEM, "WEBP: out of memory");
    else if (!WebPEncode(&config, &pic))
        rc = tdb_err(call->err, pic.error_code == VP8_ENC_ERROR_OUT_OF_MEMORY
                                    ? TDB_E_NOMEM
                                    : TDB_E_INVAL,
                     "WEBP: libwebp cannot encode the %dx%d image (error "
                     "%d)", w, h, (int)pic.error_code);
    else if (wr.size > UINT32_MAX)
        rc = tdb_err(call->err, TDB_E_INVAL, "WEBP: the encoded image is "
                     "larger than 4 GiB");
    else if (tdb_buf_append(out, wr.mem, wr.size) < 0)
        rc = tdb_err(call->err, TDB_E_NOMEM, "WEBP: out of memory");
    *len = wr.size;
    WebPPictureFree(&pic);
    WebPMemoryWriterClear(&wr);
    return rc;
}

static int webp_encode(const struct tdb_filter_call *call,
                       struct tdb_filter_stage *st)
{
    const struct webp_options *o = webp_opts(call->filter);
    unsigned bpp = tdb_webp_pixel_bytes(o->format);
    size_t base = st->data_out->len, len = 0;
    unsigned y, x;
    int rc;

    if ((rc = webp_check_input(call, bpp, TDB_E_INVAL)))
        return rc;
    y = o->y_extent;
    x = o->x_extent;
    if (y == 0 || x == 0 || x % bpp || y > WEBP_MAX_SIDE ||
        x / bpp > WEBP_MAX_SIDE)
        return tdb_err(call->err, TDB_E_INVAL, "WEBP: the filter's tile "
                       "extents (%u rows of %u bytes) are not an image of "
                       "%u-byte pixels of at most %d x %d", y, x, bpp,
                       WEBP_MAX_SIDE, WEBP_MAX_SIDE);
    if (st->size != (size_t)y * x)
        return tdb_err(call->err, TDB_E_INVAL,
                       "WEBP: a chunk of %zu bytes "
                       "is not one tile of %u rows of %u bytes",
                       st->size, y, x);
    struct webp_image img = {.src = st->data, .w = (int)(x / bpp),
                             .h = (int)y, .stride = (int)x};
    rc = webp_encode_image(call, &img, st->data_out, &len);
    if (!rc && (tdb_buf_put_u32(st->md_out, 1) < 0 ||
                tdb_buf_put_u32(st->md_out, (uint32_t)len) < 0 ||
                tdb_buf_append(st->md_out, st->md.p, st->md.len) < 0))
        rc = tdb_err(call->err, TDB_E_NOMEM, "WEBP: out of memory");
    if (rc)
        st->data_out->len = base;
    return rc;
}

/* What comes out is compressed bytes. */
static unsigned webp_output_type(const struct tdb_filter *f, unsigned in_type)
{
    (void)f;
    (void)in_type;
    return TDB_BLOB;
}

const struct tdb_filter_ops tdb_filter_webp = {
    .name = "WEBP",
    .type = TDB_FILTER_WEBP,
    .read_options = webp_read_options,
    .write_options = webp_write_options,
    .output_type = webp_output_type,
    .decode = webp_decode,
    .encode = webp_encode,
    .options = webp_opts_table,
    .n_options = sizeof webp_opts_table / sizeof *webp_opts_table,
    .defaults = &webp_defaults,
    .options_size = sizeof(struct webp_options),
};
