/* filter.h: the filter interface (format_spec/filter_pipeline.md, tile.md).
 *
 * Each filter lives in its own file format/filters/<name>.c and exports one
 * `const struct tdb_filter_ops tdb_filter_<name>`; every other symbol there
 * is static.  pipeline.c maps TileDB's filter type numbers to these ops.
 * A filter's options are a struct of its own file too, described to the
 * rest of the engine by a table its ops carry (options.h).
 *
 * Data model.  A chunk on disk holds (metadata bytes, data bytes).  Reading
 * runs the pipeline's filters last to first: each filter's decode receives
 * the current (metadata, data) and produces the next (metadata, data).  A
 * filter consumes its own header from the front of the input metadata and,
 * unless it is a compressor (which stores the previous metadata inside its
 * data), passes the rest of the input metadata through to the output
 * metadata.  Encoding is the mirror image, first filter to last; an encoder
 * treats its input as one part.
 */
#ifndef TDB_FILTER_H
#define TDB_FILTER_H

#include "core/core.h"

struct tdb_filter_opt;

/* TileDB's filter type numbers (tiledb_filter_type_t). */
enum tdb_filter_type {
    TDB_FILTER_NONE = 0,
    TDB_FILTER_GZIP = 1,
    TDB_FILTER_ZSTD = 2,
    TDB_FILTER_LZ4 = 3,
    TDB_FILTER_RLE = 4,
    TDB_FILTER_BZIP2 = 5,
    TDB_FILTER_DOUBLE_DELTA = 6,
    TDB_FILTER_BIT_WIDTH_REDUCTION = 7,
    TDB_FILTER_BITSHUFFLE = 8,
    TDB_FILTER_BYTESHUFFLE = 9,
    TDB_FILTER_POSITIVE_DELTA = 10,
    TDB_FILTER_AES_256_GCM = 11, /* internal: never serialised in a pipeline */
    TDB_FILTER_CHECKSUM_MD5 = 12,
    TDB_FILTER_CHECKSUM_SHA256 = 13,
    TDB_FILTER_DICTIONARY = 14,
    TDB_FILTER_SCALE_FLOAT = 15,
    TDB_FILTER_XOR = 16,
    TDB_FILTER_DEPRECATED = 17,
    TDB_FILTER_WEBP = 18,
    TDB_FILTER_DELTA = 19,
    TDB_FILTER_TYPE_COUNT = 20
};

/* The most bytes of a filter's options struct (SCALE_FLOAT's: two doubles
 * and a u64). */
#define TDB_FILTER_OPTIONS_MAX 24

/* One filter of a pipeline with its options.  The options are a struct of
 * the filter's own file, kept here in place (so that a filter copies by
 * assignment and holds no memory); its ops' table (options.h) names their
 * fields for everyone else. */
struct tdb_filter {
    uint8_t type;
    const struct tdb_filter_ops *ops;
    union {
        double d;       /* (the alignment of every options struct) */
        uint64_t u;
        unsigned char bytes[TDB_FILTER_OPTIONS_MAX];
    } options;
};

/* Makes f a filter of `type` with its default options (its ops' defaults).
 * @return 0, or TDB_E_INVAL for a type we do not know (f->ops is then
 * NULL and its options all zero). */
int tdb_filter_init(struct tdb_filter *f, unsigned type);

/* The level a compressor's defaults hold: each library's own default
 * (what TileDB records for a schema that names none). */
#define TDB_FILTER_LEVEL_DEFAULT (-1)

/* Makes f a compressor of `type` with its default options and compression
 * level `level` (what a writer picks for its own tiles).
 * @return 0, or TDB_E_INVAL when `type` is unknown or no compressor. */
int tdb_filter_init_level(struct tdb_filter *f, unsigned type, int32_t level);

/* The filter's options struct, for the filter's own file. */
static inline const void *tdb_filter_opts(const struct tdb_filter *f)
{
    return f->options.bytes;
}
static inline void *tdb_filter_opts_edit(struct tdb_filter *f)
{
    return f->options.bytes;
}

/* The pixel layouts of the WEBP filter (TileDB's tiledb_filter_webp_format_t):
 * 3 bytes a pixel below TDB_WEBP_RGBA, 4 from it. */
enum tdb_webp_format {
    TDB_WEBP_NONE = 0,
    TDB_WEBP_RGB = 1,
    TDB_WEBP_BGR = 2,
    TDB_WEBP_RGBA = 3,
    TDB_WEBP_BGRA = 4
};

/* Bytes a pixel of format fmt: 3, 4, or 0 when fmt is not a format. */
static inline unsigned tdb_webp_pixel_bytes(unsigned fmt)
{
    return fmt == TDB_WEBP_RGB || fmt == TDB_WEBP_BGR     ? 3
           : fmt == TDB_WEBP_RGBA || fmt == TDB_WEBP_BGRA ? 4
                                                          : 0;
}

/* A filter pipeline as serialised in a schema or a generic tile. */
struct tdb_pipeline {
    uint32_t max_chunk_size;
    uint32_t n;
    struct tdb_filter *f;
};

/* Working memory that one decode at a time reuses (a free list of them
 * lives in the tile cache): the pipeline's stage buffers, a tile's bytes
 * as read, and each filter's own working state, so that decoding a tile
 * allocates nothing but its result. */
struct tdb_scratch {
    struct tdb_scratch *next;
    struct tdb_buf raw;
    struct tdb_buf bufs[4];
    /* by filter type: what that filter keeps between calls (zstd.c: its
     * contexts), made by the filter on first use and freed by its ops'
     * scratch_free */
    void *filter_state[TDB_FILTER_TYPE_COUNT];
};

/* Frees a scratch and what it holds (NULL is fine). */
void tdb_scratch_free(struct tdb_scratch *s);

/* Everything a filter may need to know besides its options. */
struct tdb_filter_call {
    const struct tdb_filter *filter;
    unsigned datatype;   /* the type of the values this filter sees */
    uint64_t cell_size;  /* bytes per cell of the tile (TDB_VAR_NUM cells:
                          * the value size) */
    uint32_t version;    /* format version of the fragment / tile */
    bool is_var;         /* the tile holds var-sized values */
    /* Var-sized ASCII/UTF-8 strings whose offsets the filter stores itself
     * (RLE since v12/v17, DICTIONARY since v13/v17): on decode the filter
     * appends one uint64 offset per cell (relative, first 0) to `offsets`;
     * on encode it reads them from `offsets` (n_offsets entries). */
    bool strings_with_offsets;
    struct tdb_buf *offsets;
    const uint64_t *in_offsets;
    uint64_t n_offsets;
    const uint8_t *key;  /* AES-256-GCM: 32 bytes */
    struct tdb_error *err;
    /* Decoding: the most bytes of data and of metadata this filter may
     * produce (what the chunk's declared original size allows at this
     * stage of the pipeline, pipeline.c) and, for the string forms, the
     * most cells.  A decoder checks a size it reads from untrusted bytes
     * against these (and against what its input can hold) before it
     * allocates.  When `bounded` is false (a filter called on its own)
     * every limit is TDB_MAX_TILE_BYTES. */
    bool bounded;
    uint64_t max_data, max_md, max_cells;
    struct tdb_scratch *scratch;    /* reusable memory (ZSTD contexts), or NULL */
    /* The vector path of the byte-wise filters (enum tdb_simd of
     * shuffle_simd.h); 0: the fastest this CPU runs. */
    unsigned simd;
};

/* The limits of a decode call (see struct tdb_filter_call). */
static inline uint64_t tdb_filter_max_data(const struct tdb_filter_call *c)
{
    return c->bounded ? c->max_data : TDB_MAX_TILE_BYTES;
}
static inline uint64_t tdb_filter_max_md(const struct tdb_filter_call *c)
{
    return c->bounded ? c->max_md : TDB_MAX_TILE_BYTES;
}
static inline uint64_t tdb_filter_max_cells(const struct tdb_filter_call *c)
{
    return c->bounded ? c->max_cells : TDB_MAX_TILE_BYTES / 8;
}

/* The bytes one filter reads and writes in one step of a pipeline; the
 * filter appends to both outputs. */
struct tdb_filter_stage {
    struct tdb_cursor md;        /* the metadata in */
    const uint8_t *data;         /* the data in: size bytes */
    size_t size;
    struct tdb_buf *md_out;
    struct tdb_buf *data_out;
};

struct tdb_filter_ops {
    const char *name;   /* "GZIP" ... as TileDB spells the filter */
    uint8_t type;
    /* Parses the options that follow the filter's options-size field.
     * `version` is the format version of the schema or tile. */
    int (*read_options)(struct tdb_filter *f, struct tdb_cursor *c,
                        uint32_t version, struct tdb_error *err);
    /* Appends the options bytes (not the size) for format version 22. */
    int (*write_options)(const struct tdb_filter *f, struct tdb_buf *out);
    /* The datatype this filter hands on (forward direction) given the
     * datatype it receives; NULL means unchanged. */
    unsigned (*output_type)(const struct tdb_filter *f, unsigned in_type);
    /* Reverse: st->md is a cursor at the front of this filter's
     * metadata; (st->md, st->data) -> (st->md_out, st->data_out). */
    int (*decode)(const struct tdb_filter_call *call,
                  struct tdb_filter_stage *st);
    /* Forward: (st->md, st->data) -> (st->md_out, st->data_out); the input
     * metadata is the whole of st->md. */
    int (*encode)(const struct tdb_filter_call *call,
                  struct tdb_filter_stage *st);
    /* The filter's options (options.h): the fields of its options struct
     * (n_options of them; none for a filter without options), and that
     * struct with its defaults (options_size bytes, at most
     * TDB_FILTER_OPTIONS_MAX), which tdb_filter_init copies. */
    const struct tdb_filter_opt *options;
    unsigned n_options;
    const void *defaults;
    size_t options_size;
    /* Optional: frees what the filter keeps in a scratch
     * (scratch->filter_state[type]; never NULL here). */
    void (*scratch_free)(void *state);
};

/* The table: NULL for types we do not know. */
const struct tdb_filter_ops *tdb_filter_lookup(unsigned type);

extern const struct tdb_filter_ops tdb_filter_gzip, tdb_filter_zstd,
    tdb_filter_lz4, tdb_filter_rle, tdb_filter_bzip2,
    tdb_filter_double_delta, tdb_filter_bit_width_reduction,
    tdb_filter_bitshuffle, tdb_filter_byteshuffle,
    tdb_filter_positive_delta, tdb_filter_aes256gcm,
    tdb_filter_checksum_md5, tdb_filter_checksum_sha256,
    tdb_filter_dictionary, tdb_filter_scale_float, tdb_filter_xor,
    tdb_filter_delta, tdb_filter_webp, tdb_filter_noop;

/* -------------------------------------------------------------- pipelines */

/* Parses a serialised pipeline (filter_pipeline.md). */
int tdb_pipeline_read(struct tdb_pipeline *p, struct tdb_cursor *c,
                      uint32_t version, struct tdb_error *err);
int tdb_pipeline_write(const struct tdb_pipeline *p, struct tdb_buf *out);
void tdb_pipeline_free(struct tdb_pipeline *p);
int tdb_pipeline_copy(struct tdb_pipeline *dst, const struct tdb_pipeline *src);
bool tdb_pipeline_has(const struct tdb_pipeline *p, unsigned type);

/* How a tile is to be reversed: what the pipeline filters and how. */
struct tdb_tile_desc {
    unsigned datatype;     /* datatype of the tile's values */
    uint64_t cell_size;    /* bytes per cell (fixed) or value size (var) */
    uint32_t version;      /* the fragment's format version */
    bool is_var;           /* a var-sized values tile */
    const uint8_t *key;    /* AES-256-GCM key when the array is encrypted */
    const char *what;      /* names file, field and tile for errors */
    /* Cells in the tile when the caller knows them (0: unknown).  Bounds
     * the offsets the string forms of RLE and DICTIONARY produce; when 0
     * they are bounded by TDB_PIPELINE_MAX_CELLS. */
    uint64_t ncells;
    struct tdb_scratch *scratch;    /* reusable memory, or NULL */
    unsigned simd;      /* struct tdb_filter_call's simd; 0: the fastest */
    /* Decoding: where the cell offsets come out when the pipeline stores
     * them itself (uint64 each, first 0, relative to the tile; appended),
     * or NULL. */
    struct tdb_buf *offsets;
    /* Encoding var-sized values: the cell offsets (relative, first 0), so
     * that chunks hold whole cells; NULL for fixed-size values. */
    const uint64_t *in_offsets;
    uint64_t n_offsets;
};

/* The most cells of a string tile whose cell count the caller did not
 * give (struct tdb_tile_desc): 2^24 (128 MiB of offsets). */
#define TDB_PIPELINE_MAX_CELLS (UINT64_C(1) << 24)

/* True when a var-sized tile of `datatype` under pipeline p stores its own
 * offsets (FilterPipeline::skip_offsets_filtering). */
bool tdb_pipeline_skips_offsets(const struct tdb_pipeline *p,
                                unsigned datatype, uint32_t version);

/* Reverses a filtered tile (tile.md: num chunks, chunks) of `size` bytes
 * into `out` (appended); the cell offsets of a pipeline that stores them
 * itself go to d->offsets.  Errors name d->what. */
int tdb_pipeline_decode(const struct tdb_pipeline *p,
                        const struct tdb_tile_desc *d, const uint8_t *src,
                        size_t size, struct tdb_buf *out,
                        struct tdb_error *err);

/* Filters `size` bytes into a tile (tile.md) appended to `out`, chunking as
 * TileDB does (cells never split; var-sized values chunk at the offsets
 * d->in_offsets). */
int tdb_pipeline_encode(const struct tdb_pipeline *p,
                        const struct tdb_tile_desc *d, const uint8_t *src,
                        size_t size, struct tdb_buf *out,
                        struct tdb_error *err);

#endif
