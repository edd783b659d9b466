/* numeric_common.h: what the numeric filters share (tile.md: byteshuffle,
 * bitshuffle, bit-width reduction and positive delta; filters/xor.md,
 * float_scale.md, delta.md, double_delta.md).
 *
 * "Parts" framing.  BYTESHUFFLE, BITSHUFFLE, XOR and SCALE_FLOAT write, in
 * front of the previous filters' metadata,
 *     u32 number of parts, u32 bytes of part 1, ..., u32 bytes of part N
 * and their data is the parts one after the other.  tdb_numeric_parts_decode
 * (in byteshuffle.c) reads that framing and hands each part to a callback.
 *
 * Integers.  The filters that compute on values (BIT_WIDTH_REDUCTION,
 * POSITIVE_DELTA, DELTA, DOUBLE_DELTA) see the data as little-endian
 * integers of 1, 2, 4 or 8 bytes; numeric_int.h's helpers load them into
 * a uint64_t (modular arithmetic in that width gives TileDB's results)
 * and sign-extend where the width's signedness matters.
 */
#ifndef TDB_NUMERIC_COMMON_H
#define TDB_NUMERIC_COMMON_H

#include "compress_common.h"
#include "filter.h"
#include "numeric_int.h"
#include "shuffle_simd.h"

/* The vector path the call names (struct tdb_filter_call.simd) into *p.
 * @return 0, or TDB_E_UNSUPPORTED when this CPU cannot run it. */
static inline int tdb_numeric_path(const struct tdb_filter_call *call,
                                   const char *name,
                                   const struct tdb_shuffle_path **p)
{
    *p = tdb_shuffle_path(call->simd);
    if (!*p)
        return tdb_err(call->err, TDB_E_UNSUPPORTED,
                       "%s: vector path %u is not available on this CPU",
                       name, call->simd);
    return 0;
}

/* The options of BIT_WIDTH_REDUCTION and POSITIVE_DELTA: u32 max window,
 * the most bytes a window of values takes; its table (options.h) and
 * options bytes, for both (bit_width_reduction.c). */
struct tdb_window_options {
    uint32_t max_window;
};
_Static_assert(sizeof(struct tdb_window_options) <= TDB_FILTER_OPTIONS_MAX,
               "a window option fits a struct tdb_filter");

#define TDB_WINDOW_N_OPTS 1
extern const struct tdb_filter_opt tdb_window_opts[TDB_WINDOW_N_OPTS];
extern const struct tdb_window_options tdb_window_defaults;

#define TDB_WINDOW_OPS_OPTIONS                                             \
    .read_options = tdb_numeric_read_window,                               \
    .write_options = tdb_numeric_write_window,                             \
    .options = tdb_window_opts, .n_options = TDB_WINDOW_N_OPTS,            \
    .defaults = &tdb_window_defaults,                                      \
    .options_size = sizeof(struct tdb_window_options)

static inline uint32_t tdb_numeric_max_window(const struct tdb_filter *f)
{
    return ((const struct tdb_window_options *)tdb_filter_opts(f))->max_window;
}

int tdb_numeric_read_window(struct tdb_filter *f, struct tdb_cursor *c,
                            uint32_t version, struct tdb_error *err);
int tdb_numeric_write_window(const struct tdb_filter *f, struct tdb_buf *out);

/* An integer as a numeric filter sees it. */
struct tdb_numeric_int {
    unsigned width;  /* bytes: 1, 2, 4 or 8 */
    bool is_signed;
};

/* Appends the rest of md (the previous filters' metadata) to md_out.
 * Defined in byteshuffle.c. */
int tdb_numeric_pass_md(const struct tdb_filter_call *call,
                        struct tdb_cursor *md, struct tdb_buf *md_out);

/* Appends the rest of md (the previous filters' metadata) to md_out and
 * data to data_out: what a filter that does not apply to the datatype
 * does.  Defined in byteshuffle.c. */
int tdb_numeric_passthrough(const struct tdb_filter_call *call,
                            struct tdb_filter_stage *st);

/* Appends md[0..md_size) and data[0..size) unchanged (encode side). */
int tdb_numeric_passthrough_enc(const struct tdb_filter_call *call,
                                struct tdb_filter_stage *st);

/* Reverses one part: in[0..n) (as stored) -> appended to out.  `arg` is
 * the filter's own state. */
typedef int (*tdb_numeric_part_fn)(const struct tdb_filter_call *call,
                                   const uint8_t *in, size_t n,
                                   struct tdb_buf *out, void *arg);

/* Reads the parts framing from md, runs fn on each part of data, and
 * passes the rest of md through to md_out.  The parts must cover data
 * exactly.  Errors name `name`.  Defined in byteshuffle.c. */
int tdb_numeric_parts_decode(const struct tdb_filter_call *call,
                             const char *name, struct tdb_filter_stage *st,
                             tdb_numeric_part_fn fn, void *arg);

/* Writes the parts framing of one part of `part_bytes` (as stored)
 * followed by the previous metadata md[0..md_size) to md_out.  Defined in
 * byteshuffle.c. */
int tdb_numeric_parts_header(const struct tdb_filter_call *call,
                             const char *name, uint64_t part_bytes,
                             const uint8_t *md, size_t md_size,
                             struct tdb_buf *md_out);

/* The integer BIT_WIDTH_REDUCTION (bytes = false) or POSITIVE_DELTA
 * (bytes = true) computes in for values of datatype dt in a tile of format
 * `version`; false when the filter leaves such values alone (and then
 * writes no metadata either).  Both act on 2-, 4- and 8-byte integers, and
 * on DATETIME_* and TIME_* (as int64) only from version 20; POSITIVE_DELTA
 * also on INT8 and, as uint8, on UINT8, BOOL, BLOB and GEOM_*. */
static inline bool tdb_numeric_window_int(unsigned dt, uint32_t version,
                                          bool bytes,
                                          struct tdb_numeric_int *t)
{
    t->is_signed = false;
    switch (dt) {
    case TDB_INT8: t->is_signed = true; t->width = 1; return bytes;
    case TDB_UINT8: case TDB_BOOL: case TDB_BLOB: case TDB_GEOM_WKB:
    case TDB_GEOM_WKT:
        t->width = 1;
        return bytes;
    case TDB_INT16: t->is_signed = true; t->width = 2; return true;
    case TDB_UINT16: t->width = 2; return true;
    case TDB_INT32: t->is_signed = true; t->width = 4; return true;
    case TDB_UINT32: t->width = 4; return true;
    case TDB_INT64: t->is_signed = true; t->width = 8; return true;
    case TDB_UINT64: t->width = 8; return true;
    default:
        if (dt >= TDB_DATETIME_YEAR && dt <= TDB_TIME_AS) {
            t->is_signed = true;
            t->width = 8;
            return version >= 20;
        }
        t->width = 0;
        return false;
    }
}

/* The integer DELTA and DOUBLE_DELTA compute in for datatype dt (the
 * reinterpret datatype when one is set): as wide as the type, CHAR as
 * int8, DATETIME_* and TIME_* as int64, and every string type, BLOB, GEOM_*
 * and ANY as uint8 (even STRING_UTF16/32).  @return false for FLOAT32,
 * FLOAT64 and unknown types, which TileDB refuses. */
static inline bool tdb_numeric_delta_int(unsigned dt,
                                         struct tdb_numeric_int *t)
{
    t->is_signed = false;
    t->width = 1;
    switch (dt) {
    case TDB_INT8: case TDB_CHAR: t->is_signed = true; return true;
    case TDB_UINT8: case TDB_BOOL: case TDB_BLOB: case TDB_GEOM_WKB:
    case TDB_GEOM_WKT: case TDB_ANY:
        return true;
    case TDB_INT16: t->is_signed = true; t->width = 2; return true;
    case TDB_UINT16: t->width = 2; return true;
    case TDB_INT32: t->is_signed = true; t->width = 4; return true;
    case TDB_UINT32: t->width = 4; return true;
    case TDB_INT64: t->is_signed = true; t->width = 8; return true;
    case TDB_UINT64: t->width = 8; return true;
    default:
        if (dt >= TDB_STRING_ASCII && dt <= TDB_STRING_UCS4)
            return true;
        if (dt >= TDB_DATETIME_YEAR && dt <= TDB_TIME_AS) {
            t->is_signed = true;
            t->width = 8;
            return true;
        }
        return false;
    }
}

/* The datatype DELTA and DOUBLE_DELTA work in: the reinterpret datatype of
 * the filter when set (not ANY), else the one received. */
static inline unsigned tdb_numeric_delta_type(const struct tdb_filter_call *c)
{
    const struct tdb_delta_options *o =
        c->filter ? tdb_filter_opts(c->filter) : NULL;
    unsigned r = o ? o->reinterpret_type : TDB_ANY;
    return r != TDB_ANY ? r : c->datatype;
}

/* Windows of BIT_WIDTH_REDUCTION and POSITIVE_DELTA: the window size in
 * bytes is min(size, max_window) rounded down to whole values, and the
 * input is cut into windows of that size (the last possibly shorter, and
 * not a multiple of the width when the input is not).  @return the number
 * of windows in *n_windows and the window size in *window, or
 * TDB_E_INVAL when max_window holds no whole value (TileDB divides by zero
 * there).  Empty input gives no windows; input shorter than one value (where
 * TileDB also divides by zero) one window, which is then stored as is. */
static inline int tdb_numeric_windows(uint64_t size, uint32_t max_window,
                                      unsigned width, uint64_t *window,
                                      uint64_t *n_windows)
{
    *window = 0;
    *n_windows = 0;
    if (size == 0)
        return 0;
    uint64_t w = size < max_window ? size : max_window;
    w = w / width * width;
    if (w == 0 && size < width)
        w = size;  /* less than one value: one window, stored as is */
    if (w == 0)
        return TDB_E_INVAL;
    *window = w;
    *n_windows = size / w + (size % w != 0);
    return 0;
}

#endif
