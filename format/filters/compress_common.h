/* compress_common.h: what the compression and checksum filters share
 * (tile.md, "Compression Filters" and "Checksum Filters").
 *
 * A compression filter stores, as its chunk metadata,
 *     u32 number of metadata parts, u32 number of data parts,
 *     per part (metadata parts first): u32 original length,
 *                                      u32 compressed length,
 * and as its data the compressed parts one after the other.  The previous
 * filters' metadata travels compressed inside the data.  Every compressor
 * (gzip, zstd, lz4, bzip2, fixed-size RLE) only supplies a codec below; the
 * framing is written once, in compress_common.c.
 *
 * The var-sized string forms of RLE and DICTIONARY (filter_pipeline.md,
 * filters/dictionary_encoding.md) begin with the same two counts (always
 * 0 and 1) followed by u32 string bytes, u32 encoded bytes and u32 offsets
 * bytes (8 per cell); tdb_compress_strings_* read and write that prefix.
 *
 * The checksum filters' metadata opens with the same two counts
 * (tdb_compress_read_counts, tdb_compress_write_counts); the rest of their
 * framing is in checksum_common.h.
 */
#ifndef TDB_COMPRESS_COMMON_H
#define TDB_COMPRESS_COMMON_H

#include "filter.h"
#include "options.h"

/* TileDB's compressor numbers, the first byte of a compressor's options
 * (they differ from the filter type numbers for DICTIONARY and DELTA). */
enum tdb_compressor {
    TDB_COMPRESSOR_NONE = 0,
    TDB_COMPRESSOR_GZIP = 1,
    TDB_COMPRESSOR_ZSTD = 2,
    TDB_COMPRESSOR_LZ4 = 3,
    TDB_COMPRESSOR_RLE = 4,
    TDB_COMPRESSOR_BZIP2 = 5,
    TDB_COMPRESSOR_DOUBLE_DELTA = 6,
    TDB_COMPRESSOR_DICTIONARY = 7,
    TDB_COMPRESSOR_DELTA = 8
};

/* One compression algorithm.  Both functions report through call->err. */
struct tdb_compress_codec {
    const char *name;  /* "GZIP", ... for messages */
    /* Decompresses src[0..n) into exactly dst_len bytes at dst (dst is
     * never NULL, even when dst_len is 0); producing more or fewer bytes is
     * TDB_E_CORRUPT. */
    int (*decompress)(const struct tdb_filter_call *call, const uint8_t *src,
                      size_t n, uint8_t *dst, size_t dst_len);
    /* Optional, used instead of decompress: appends exactly dst_len bytes
     * decompressed from src[0..n) to out, growing out only as bytes come
     * out (for formats whose expansion ratio gives no useful bound, so
     * that a corrupt original length allocates nothing up front).  On
     * error out->len is as it was. */
    int (*decompress_buf)(const struct tdb_filter_call *call,
                          const uint8_t *src, size_t n, struct tdb_buf *out,
                          size_t dst_len);
    /* Optional: the most bytes src[0..n) can decompress to (UINT64_MAX
     * when unknown), so that a corrupt original length is refused before
     * anything is allocated. */
    uint64_t (*max_out)(const struct tdb_filter_call *call,
                        const uint8_t *src, size_t n);
    /* Compresses src[0..n) and appends the result to out. */
    int (*compress)(const struct tdb_filter_call *call, const uint8_t *src,
                    size_t n, struct tdb_buf *out);
};

/* The two counts that open the chunk metadata of a compression or
 * checksum filter. */
struct tdb_compress_counts {
    uint32_t nmd;       /* metadata parts */
    uint32_t ndata;     /* data parts */
};

/* Reads the two counts (u32 metadata parts, u32 data parts) into *n.  Each
 * part takes `part_bytes` more bytes of md (not read here): counts that md
 * cannot hold are refused before anything is allocated.  `name` is the
 * filter's ("GZIP"), `part` what a part is ("part", "checksum"), for the
 * messages.  @return 0 or TDB_E_CORRUPT. */
int tdb_compress_read_counts(const struct tdb_filter_call *call,
                             struct tdb_cursor *md, size_t part_bytes,
                             const char *name, const char *part,
                             struct tdb_compress_counts *n);

/* Appends the two counts of an encode's parts: the input metadata (when
 * not empty) and the input data (when not empty) are one part each.
 * @return 0 or TDB_E_NOMEM. */
int tdb_compress_write_counts(const struct tdb_filter_call *call,
                              size_t md_size, size_t size, const char *name,
                              struct tdb_buf *md_out);

/* The options of a compressor (GZIP ZSTD LZ4 RLE BZIP2 DICTIONARY): u8
 * compressor number (the one of its defaults, or 0 as read: no
 * compression), i32 level. */
struct tdb_compress_options {
    uint8_t compressor;
    int32_t level;
};

/* The options of DELTA and DOUBLE_DELTA: a compressor's, then (from format
 * 19) u8 the datatype the filter works on and hands on, TDB_ANY for the
 * one it receives. */
struct tdb_delta_options {
    struct tdb_compress_options c;
    uint8_t reinterpret_type;
};
_Static_assert(sizeof(struct tdb_delta_options) <= TDB_FILTER_OPTIONS_MAX,
               "DELTA's options fit a struct tdb_filter");

/* The tables (options.h) of these two structs: "compressor" (not in JSON),
 * "level" (and "reinterpret_datatype"). */
#define TDB_COMPRESS_N_OPTS 2
#define TDB_DELTA_N_OPTS 3
extern const struct tdb_filter_opt tdb_compress_opts[TDB_COMPRESS_N_OPTS];
extern const struct tdb_filter_opt tdb_delta_opts[TDB_DELTA_N_OPTS];

/* The options part of a compressor's ops, with its defaults `def` (a
 * struct tdb_compress_options holding its compressor number). */
#define TDB_COMPRESS_OPS_OPTIONS(def)                                      \
    .read_options = tdb_compress_read_options,                             \
    .write_options = tdb_compress_write_options,                           \
    .options = tdb_compress_opts, .n_options = TDB_COMPRESS_N_OPTS,        \
    .defaults = &(def), .options_size = sizeof(struct tdb_compress_options)

/* The same but read_options for DELTA and DOUBLE_DELTA (def: a struct
 * tdb_delta_options). */
#define TDB_DELTA_OPS_OPTIONS(def)                                         \
    .write_options = tdb_delta_write_options,                              \
    .options = tdb_delta_opts, .n_options = TDB_DELTA_N_OPTS,              \
    .defaults = &(def), .options_size = sizeof(struct tdb_delta_options)

/* A compressor's level (the one f's ops keep a struct tdb_compress_options
 * for; DELTA and DOUBLE_DELTA too). */
static inline int32_t tdb_compress_level(const struct tdb_filter *f)
{
    return ((const struct tdb_compress_options *)tdb_filter_opts(f))->level;
}

/* Reads a compressor's options (u8 compressor, i32 level; the same in every
 * format version for these filters) into f, checking that the compressor
 * byte is the one of f's defaults or 0 (no compression: TileDB then passes
 * the data through; the pipeline runs NONE instead).
 * @return 0 or TDB_E_CORRUPT. */
int tdb_compress_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                              uint32_t version, struct tdb_error *err);

/* Appends the options: f's defaults' compressor number, f's level. */
int tdb_compress_write_options(const struct tdb_filter *f,
                               struct tdb_buf *out);

/* The same for DELTA and DOUBLE_DELTA, whose reinterpret datatype follows
 * from format `since` (written always, for version 22). */
int tdb_delta_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                           uint32_t version, uint32_t since,
                           struct tdb_error *err);
int tdb_delta_write_options(const struct tdb_filter *f, struct tdb_buf *out);

/* The filter decode for a framed compressor: reads the framing from md,
 * decompresses the metadata parts into md_out and the data parts into
 * data_out (both appended).  Bytes of md after the framing are consumed and
 * dropped, as TileDB does. */
int tdb_compress_decode(const struct tdb_compress_codec *codec,
                        const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st);

/* The filter encode for a framed compressor: the input metadata (when not
 * empty) and the input data (when not empty) are one part each. */
int tdb_compress_encode(const struct tdb_compress_codec *codec,
                        const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st);

/* The fixed prefix of the var-sized string forms of RLE and DICTIONARY. */
struct tdb_compress_strings_hdr {
    uint32_t string_bytes;   /* decoded string bytes */
    uint32_t encoded_bytes;  /* bytes of filtered data */
    uint32_t offsets_bytes;  /* 8 x number of cells */
};

/* Reads the prefix (including the two part counts, which TileDB ignores). */
int tdb_compress_strings_read_hdr(struct tdb_compress_strings_hdr *h,
                                  struct tdb_cursor *md, const char *name,
                                  struct tdb_error *err);
int tdb_compress_strings_write_hdr(const struct tdb_compress_strings_hdr *h,
                                   struct tdb_buf *out);

/* Checks the input of a strings-form encode: offsets relative, first 0,
 * non-decreasing and within size. */
int tdb_compress_strings_check_input(const struct tdb_filter_call *call,
                                     size_t md_size, size_t size,
                                     const char *name);

/* Big-endian load of a 1, 2, 4 or 8 byte unsigned integer. */
static inline uint64_t tdb_compress_be(const uint8_t *p, unsigned w)
{
    uint64_t v = 0;
    switch (w) {    /* one load each when w is a constant */
    case 1: return p[0];
    case 2: return (uint64_t)p[0] << 8 | p[1];
    case 4:
        return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 |
               (uint64_t)p[2] << 8 | p[3];
    case 8:
        return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 |
               (uint64_t)p[2] << 40 | (uint64_t)p[3] << 32 |
               (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
               (uint64_t)p[6] << 8 | p[7];
    default:
        for (unsigned i = 0; i < w; i++)
            v = v << 8 | p[i];
        return v;
    }
}

static inline void tdb_compress_st_be(uint8_t *p, unsigned w, uint64_t v)
{
    for (unsigned i = w; i-- > 0;) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* The width TileDB uses for a stored width byte w (w <= 1 -> 1, <= 2 -> 2,
 * <= 4 -> 4, else 8); 0 for 0, which TileDB refuses. */
static inline unsigned tdb_compress_width(uint8_t w)
{
    return w == 0 ? 0 : w <= 1 ? 1 : w <= 2 ? 2 : w <= 4 ? 4 : 8;
}

/* Copies n bytes from s to d; a string of up to 16 bytes (the usual cell
 * of RLE's and DICTIONARY's strings) by two overlapping loads and stores
 * rather than a call. */
static inline void tdb_compress_copy(uint8_t *d, const uint8_t *s, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n > 16) {
        memcpy(d, s, n);
    } else if (n > 0) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

/* The smallest of 1, 2, 4, 8 bytes that holds v. */
static inline uint8_t tdb_compress_bytesize(uint64_t v)
{
    return v <= UINT8_MAX ? 1 : v <= UINT16_MAX ? 2 : v <= UINT32_MAX ? 4 : 8;
}

#endif
