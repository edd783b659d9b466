/* core.c: errors, the bounds-checked cursor and the growable buffer shared
 * by every module of the engine. */
#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

const char *tdb_strerror(int code)
{
    switch (code) {
    case TDB_OK: return "success";
    case TDB_E_IO: return "I/O error";
    case TDB_E_CORRUPT: return "corrupt data";
    case TDB_E_NOMEM: return "out of memory";
    case TDB_E_UNSUPPORTED: return "unsupported";
    case TDB_E_CHECKSUM: return "checksum mismatch";
    case TDB_E_AUTH: return "authentication failed";
    case TDB_E_INVAL: return "invalid argument";
    case TDB_E_NOENT: return "not found";
    case TDB_E_NOTDIR: return "not a folder";
    case TDB_E_ISDIR: return "is a folder";
    case TDB_E_ROFS: return "read-only";
    case TDB_E_NOKEY: return "encryption key needed";
    case TDB_E_MLINK: return "a hard link (the file has other names)";
    case TDB_E_ACCES: return "permission denied";
    case TDB_E_NOSPC: return "no space left on the device";
    case TDB_E_DQUOT: return "disk quota exceeded";
    default: return "unknown error";
    }
}

void tdb_error_clear(struct tdb_error *err)
{
    err->code = 0;
    err->msg[0] = '\0';
}

const char *tdb_error_text(int code, const struct tdb_error *err)
{
    return err && err->msg[0] ? err->msg : tdb_strerror(code);
}

int tdb_errno(int code)
{
    switch (code) {
    case TDB_OK: return 0;
    case TDB_E_NOMEM: return ENOMEM;
    case TDB_E_INVAL: return EINVAL;
    case TDB_E_NOENT: return ENOENT;
    case TDB_E_NOTDIR: return ENOTDIR;
    case TDB_E_ISDIR: return EISDIR;
    case TDB_E_ROFS: return EROFS;
    case TDB_E_NOKEY: return EACCES;
    case TDB_E_UNSUPPORTED: return EOPNOTSUPP;
    case TDB_E_MLINK: return EMLINK;
    case TDB_E_ACCES: return EACCES;
    case TDB_E_NOSPC: return ENOSPC;
    case TDB_E_DQUOT: return EDQUOT;
    default: return EIO;
    }
}

int tdb_err(struct tdb_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int tdb_err_ctx(struct tdb_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    char pre[TDB_ERROR_MSG_MAX], old[TDB_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = 0;
    size_t n = strlen(pre);
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, pre, n);
    memcpy(err->msg + n, ": ", 2);
    size_t m = strlen(old);
    if (m > sizeof err->msg - n - 3)
        m = sizeof err->msg - n - 3;
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = 0;
    if (!err->code)
        err->code = code;
    return err->code;
}

/* ---------------------------------------------------------------- cursor */

static int cur_take(struct tdb_cursor *c, size_t n, const uint8_t **p)
{
    if (c->bad || n > c->len - c->pos) {
        c->bad = true;
        return -1;
    }
    /* no arithmetic on a NULL base (an empty cursor): UB even for + 0 */
    *p = c->p ? c->p + c->pos : c->p;
    c->pos += n;
    return 0;
}

int tdb_cur_u8(struct tdb_cursor *c, uint8_t *v)
{
    const uint8_t *p;
    if (cur_take(c, 1, &p)) {
        *v = 0;
        return -1;
    }
    *v = p[0];
    return 0;
}

int tdb_cur_u16(struct tdb_cursor *c, uint16_t *v)
{
    const uint8_t *p;
    if (cur_take(c, 2, &p)) {
        *v = 0;
        return -1;
    }
    *v = tdb_le16(p);
    return 0;
}

int tdb_cur_u32(struct tdb_cursor *c, uint32_t *v)
{
    const uint8_t *p;
    if (cur_take(c, 4, &p)) {
        *v = 0;
        return -1;
    }
    *v = tdb_le32(p);
    return 0;
}

int tdb_cur_u64(struct tdb_cursor *c, uint64_t *v)
{
    const uint8_t *p;
    if (cur_take(c, 8, &p)) {
        *v = 0;
        return -1;
    }
    *v = tdb_le64(p);
    return 0;
}

int tdb_cur_i32(struct tdb_cursor *c, int32_t *v)
{
    uint32_t u;
    int r = tdb_cur_u32(c, &u);
    *v = (int32_t)u;
    return r;
}

int tdb_cur_f64(struct tdb_cursor *c, double *v)
{
    uint64_t u;
    int r = tdb_cur_u64(c, &u);
    memcpy(v, &u, sizeof *v);
    return r;
}

int tdb_cur_bytes(struct tdb_cursor *c, size_t n, const uint8_t **p)
{
    return cur_take(c, n, p);
}

int tdb_cur_copy(struct tdb_cursor *c, void *dst, size_t n)
{
    const uint8_t *p;
    if (cur_take(c, n, &p))
        return -1;
    if (n)
        memcpy(dst, p, n);
    return 0;
}

int tdb_cur_skip(struct tdb_cursor *c, size_t n)
{
    const uint8_t *p;
    return cur_take(c, n, &p);
}

static int cur_str(struct tdb_cursor *c, uint64_t n, char **s)
{
    const uint8_t *p;
    *s = NULL;
    if (n > TDB_MAX_NAME || cur_take(c, (size_t)n, &p)) {
        c->bad = true;
        return -1;
    }
    *s = malloc((size_t)n + 1);
    if (!*s)
        return -1;
    if (n)
        memcpy(*s, p, (size_t)n);
    (*s)[n] = 0;
    return 0;
}

int tdb_cur_str32(struct tdb_cursor *c, char **s)
{
    uint32_t n;
    *s = NULL;
    if (tdb_cur_u32(c, &n))
        return -1;
    return cur_str(c, n, s);
}

int tdb_cur_str64(struct tdb_cursor *c, char **s)
{
    uint64_t n;
    *s = NULL;
    if (tdb_cur_u64(c, &n))
        return -1;
    return cur_str(c, n, s);
}

int tdb_keyed_cmp(const void *a, const void *b)
{
    const struct tdb_keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* ---------------------------------------------------------------- buffer */

int tdb_buf_reserve(struct tdb_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len)
        return TDB_E_NOMEM;
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = b->lent ? malloc(cap) : realloc(b->data, cap);
    if (!p)
        return TDB_E_NOMEM;
    if (b->lent && b->len)
        memcpy(p, b->data, b->len);
    b->lent = false;
    b->data = p;
    b->cap = cap;
    return 0;
}

int tdb_buf_grow(struct tdb_buf *b, size_t n, uint8_t **p)
{
    int r = tdb_buf_reserve(b, n);
    if (r)
        return r;
    *p = b->data + b->len;
    b->len += n;
    return 0;
}

int tdb_buf_append(struct tdb_buf *b, const void *p, size_t n)
{
    uint8_t *d;
    if (!n)
        return 0;
    int r = tdb_buf_grow(b, n, &d);
    if (r)
        return r;
    memcpy(d, p, n);
    return 0;
}

int tdb_buf_put_u8(struct tdb_buf *b, uint8_t v)
{
    return tdb_buf_append(b, &v, 1);
}

int tdb_buf_put_u32(struct tdb_buf *b, uint32_t v)
{
    uint8_t t[4];
    tdb_st32(t, v);
    return tdb_buf_append(b, t, 4);
}

int tdb_buf_put_u64(struct tdb_buf *b, uint64_t v)
{
    uint8_t t[8];
    tdb_st64(t, v);
    return tdb_buf_append(b, t, 8);
}

int tdb_buf_put_i32(struct tdb_buf *b, int32_t v)
{
    return tdb_buf_put_u32(b, (uint32_t)v);
}

int tdb_buf_put_f64(struct tdb_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return tdb_buf_put_u64(b, u);
}

void tdb_buf_free(struct tdb_buf *b)
{
    if (!b)
        return;
    if (!b->lent)
        free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->lent = false;
}

uint8_t *tdb_buf_take(struct tdb_buf *b, size_t *len)
{
    uint8_t *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    b->lent = false;
    return p;
}
