/* core.h: what every module of the engine shares: errors, the bounds-checked
 * cursor over untrusted bytes, the growable output buffer, datatypes, and
 * the thin wrappers over the I/O interface. */
#ifndef TDB_CORE_H
#define TDB_CORE_H

/* the engine sees the unstable section of its public header too */
#ifndef TDB_UNSTABLE_API
#define TDB_UNSTABLE_API
#endif
#include "tiledb_format.h"
#include "tiledb_format_write.h"

#include <stdarg.h>
#include <string.h>

/* Caps on sizes taken from metadata before allocating. */
#define TDB_MAX_TILE_BYTES (UINT64_C(1) << 36)   /* one decoded tile */
#define TDB_MAX_NAME 4096                       /* a name in a schema */
#define TDB_MAX_COUNT (UINT64_C(1) << 32)       /* a count of things */

/* ----------------------------------------------------------------- errors */

#if defined(__GNUC__)
#define TDB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TDB_PRINTF(a, b)
#endif

/* Sets err (if non-NULL) to code and the formatted message.
 * @return code, so that `return tdb_err(err, TDB_E_CORRUPT, ...)` works. */
int tdb_err(struct tdb_error *err, int code, const char *fmt, ...)
    TDB_PRINTF(3, 4);

/* Prepends "context: " to err's message (code unchanged). @return err->code
 * (or `code` when err is NULL). */
int tdb_err_ctx(struct tdb_error *err, int code, const char *fmt, ...)
    TDB_PRINTF(3, 4);

/* -------------------------------------------------------------- the cursor */

/* A read-only, bounds-checked view over untrusted bytes.  Every reader
 * returns 0 or -1 (and sets `bad`); after a failure the cursor stays bad,
 * so a parser may read a group of fields and check once. */
struct tdb_cursor {
    const uint8_t *p;
    size_t len;
    size_t pos;
    bool bad;
};

static inline void tdb_cur_init(struct tdb_cursor *c, const void *p, size_t len)
{
    c->p = (const uint8_t *)p;
    c->len = len;
    c->pos = 0;
    c->bad = false;
}

static inline size_t tdb_cur_left(const struct tdb_cursor *c)
{
    return c->bad ? 0 : c->len - c->pos;
}

int tdb_cur_u8(struct tdb_cursor *c, uint8_t *v);
int tdb_cur_u16(struct tdb_cursor *c, uint16_t *v);
int tdb_cur_u32(struct tdb_cursor *c, uint32_t *v);
int tdb_cur_u64(struct tdb_cursor *c, uint64_t *v);
int tdb_cur_i32(struct tdb_cursor *c, int32_t *v);
int tdb_cur_f64(struct tdb_cursor *c, double *v);
/* Points *p at the next n bytes and skips them. */
int tdb_cur_bytes(struct tdb_cursor *c, size_t n, const uint8_t **p);
/* Copies the next n bytes. */
int tdb_cur_copy(struct tdb_cursor *c, void *dst, size_t n);
int tdb_cur_skip(struct tdb_cursor *c, size_t n);
/* Reads a u32 (or u64) length then that many bytes into a new
 * NUL-terminated string (capped at TDB_MAX_NAME). */
int tdb_cur_str32(struct tdb_cursor *c, char **s);
int tdb_cur_str64(struct tdb_cursor *c, char **s);

/* Little-endian loads and stores on raw memory known to be large enough. */
static inline uint16_t tdb_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t tdb_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline uint64_t tdb_le64(const uint8_t *p)
{
    return (uint64_t)tdb_le32(p) | (uint64_t)tdb_le32(p + 4) << 32;
}
static inline void tdb_st16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void tdb_st32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void tdb_st64(uint8_t *p, uint64_t v)
{
    tdb_st32(p, (uint32_t)v);
    tdb_st32(p + 4, (uint32_t)(v >> 32));
}

/* Checked arithmetic: @return false on overflow. */
static inline bool tdb_add_ok(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}
static inline bool tdb_mul_ok(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

/* A value and its place in a list: qsort with tdb_keyed_cmp orders by
 * value, equal values keeping their places (a stable sort). */
struct tdb_keyed {
    uint64_t key;
    size_t at;
};
int tdb_keyed_cmp(const void *a, const void *b);

/* ------------------------------------------------------- the output buffer */

/* A growable byte buffer; zero-initialise it ({0}) before use.  With
 * `lent`, data is memory the buffer does not own (a block the tile cache
 * lends a load): growing past cap moves the bytes to memory of its own
 * (and clears lent), freeing forgets it; its owner takes it back. */
struct tdb_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    bool lent;
};

int tdb_buf_reserve(struct tdb_buf *b, size_t extra);  /* cap >= len+extra */
int tdb_buf_append(struct tdb_buf *b, const void *p, size_t n);
int tdb_buf_put_u8(struct tdb_buf *b, uint8_t v);
int tdb_buf_put_u32(struct tdb_buf *b, uint32_t v);
int tdb_buf_put_u64(struct tdb_buf *b, uint64_t v);
int tdb_buf_put_i32(struct tdb_buf *b, int32_t v);
int tdb_buf_put_f64(struct tdb_buf *b, double v);
/* Grows len by n (uninitialised bytes) and points *p at them. */
int tdb_buf_grow(struct tdb_buf *b, size_t n, uint8_t **p);
static inline void tdb_buf_reset(struct tdb_buf *b) { b->len = 0; }
void tdb_buf_free(struct tdb_buf *b);
/* Hands the bytes to the caller (who frees them) and empties b. */
uint8_t *tdb_buf_take(struct tdb_buf *b, size_t *len);

/* -------------------------------------------------------------- datatypes */

/* (Their numbers, names and sizes are public: tiledb_format.h.) */
/* numpy's dtype string ("<f8", "|u1", "|S1", "<M8[ms]"). */
const char *tdb_dt_numpy(unsigned dt);
bool tdb_dt_is_signed_int(unsigned dt);  /* INT*, DATETIME_*, TIME_* */
bool tdb_dt_is_unsigned_int(unsigned dt);/* UINT* (not BOOL or BLOB) */
bool tdb_dt_is_integer(unsigned dt);     /* either of the above */
bool tdb_dt_is_float(unsigned dt);
bool tdb_dt_is_string(unsigned dt);      /* CHAR, STRING_* */
bool tdb_dt_is_datetime(unsigned dt);    /* DATETIME_* and TIME_* */
/* The default fill value of one value of dt (FORMAT-NOTES): writes
 * tdb_dt_size(dt) bytes. */
void tdb_dt_default_fill(unsigned dt, uint8_t *out);

#define TDB_VAR_NUM UINT32_MAX  /* cell_val_num of a var-sized field */

/* Array types and layouts (tiledb_array_type_t, tiledb_layout_t). */
enum { TDB_DENSE = 0, TDB_SPARSE = 1 };
enum { TDB_ROW_MAJOR = 0, TDB_COL_MAJOR = 1, TDB_GLOBAL_ORDER = 2,
       TDB_UNORDERED = 3, TDB_HILBERT = 4 };

/* ------------------------------------------------------------- I/O helpers */

/* Joins a and b with one '/' into a new string (NULL on ENOMEM). */
char *tdb_path_join(const char *a, const char *b);
/* Reads a whole file into a new buffer (capped at TDB_MAX_TILE_BYTES). */
int tdb_io_read_file(const struct tdb_io *io, const char *path,
                     uint8_t **data, uint64_t *size, struct tdb_error *err);
int tdb_io_read(const struct tdb_io *io, const char *path, uint64_t off,
                void *buf, size_t len, struct tdb_error *err);
int tdb_io_size(const struct tdb_io *io, const char *path, uint64_t *size,
                struct tdb_error *err);
bool tdb_io_exists(const struct tdb_io *io, const char *path);
/* Asks io to fetch ahead (tdb_io_prefetch) every file among `names`, the
 * entries of folder `dir`, whole: those whose name ends with one of the
 * NULL-terminated `suffixes` (NULL: all). */
void tdb_io_want_names(const struct tdb_io *io, const char *dir,
                       const struct tdb_names *names,
                       const char *const *suffixes);
/* Asks io to fetch ahead the whole file `path` (or, kind TDB_WANT_LIST,
 * the listing of folder `path`). */
void tdb_io_want(const struct tdb_io *io, enum tdb_io_want_kind kind,
                 const char *path);
bool tdb_io_isdir(const struct tdb_io *io, const char *path);

/* Publishes a whole file so that no reader sees part of it: writes
 * data[0..len) to `tmp` (removing a stale one first), syncs it, renames it
 * to `final`, then syncs final's folder (best effort: the rename is the
 * publication).  `tmp` must be a name no reader lists.  On failure before
 * the rename, tmp is removed (best effort) and err names the file.  The
 * one way the engine publishes a file (schemas, enumerations, metadata,
 * commit files).  @return 0 or a TDB_E_* code. */
int tdb_io_publish(const struct tdb_io *io, const char *tmp,
                   const char *final, const void *data, size_t len,
                   struct tdb_error *err);

/* A backend that shows folder `prefix` of `parent` as its root (parent
 * must outlive it).  Release with tdb_io_free. */
int tdb_io_sub(struct tdb_io *io, const struct tdb_io *parent,
               const char *prefix);

/* Fault injection, for tests: a view of `inner` (which must outlive it)
 * whose mutating calls (write_at, mkdir, rename, remove, sync) are counted
 * in f->count, 1 for the first, and the write_at calls it passes on in
 * f->writes.  The call numbered fail_at (0: none) fails with TDB_E_IO
 * without reaching inner; with `crash`, so does every later one, as if
 * the process had been killed there.  f->failed counts the calls
 * refused.  Reads of file `read_path` (NULL: none) fail with TDB_E_IO
 * while read_fails is not 0: each refusal takes one from it (UINT64_MAX:
 * none, every read fails) and adds one to read_failed.  The counts may be
 * read while calls come from other threads; set read_fails only while
 * none do. */
struct tdb_io_fault {
    uint64_t fail_at;
    bool crash;
    uint64_t count;
    uint64_t failed;
    uint64_t writes;
    const char *read_path;
    uint64_t read_fails;
    uint64_t read_failed;
};
int tdb_io_faulty(struct tdb_io *io, const struct tdb_io *inner,
                  struct tdb_io_fault *f);

#endif
