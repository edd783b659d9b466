/* fixture.c: what the tests of the on-disk structures share (see
 * fixture.h). */
#include "fixture.h"
#include "model/generic_tile.h"

#include <string.h>

/* Writes `size` bytes as one generic tile at `path` of an in-memory io. */
void put_tile(struct tdb_io *io, const char *path, const void *p,
              size_t size)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    int r = tdb_generic_tile_encode(p, size, NULL, TDB_CHAR, 1, NULL, &b,
                                    &err);
    CHECK_EQ_INT(r, 0);
    if (r == 0)
        CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, b.data, b.len), 0);
    tdb_buf_free(&b);
}

/* ---------------------------------------------- a small case.json reader */

const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == ',' ||
           *p == ':')
        p++;
    return p;
}

const char *js_skip_string(const char *p)
{
    p++;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        p++;
    }
    return *p ? p + 1 : p;
}

/* Skips one JSON value starting at p (whitespace first); @return the end. */
const char *js_skip(const char *p)
{
    p = js_ws(p);
    if (*p == '"')
        return js_skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') {
                p = js_skip_string(p);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            if (*p == '}' || *p == ']') {
                depth--;
                if (depth == 0)
                    return p + 1;
            }
            p++;
        }
        return p;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']')
        p++;
    return p;
}

/* Copies the (unescaped, simple) string at p into out. */
const char *js_string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    p++;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        if (n + 1 < cap)
            out[n++] = *p;
        p++;
    }
    out[n] = 0;
    return *p ? p + 1 : p;
}

/* In object `obj` (pointing at '{'), finds member `key`'s value. */
const char *js_get(const char *obj, const char *key)
{
    if (!obj)
        return NULL;
    obj = js_ws(obj);
    if (*obj != '{')
        return NULL;
    const char *p = obj + 1;
    for (;;) {
        p = js_ws(p);
        if (*p != '"')
            return NULL;
        char k[512];
        p = js_string(p, k, sizeof k);
        p = js_ws(p);
        if (strcmp(k, key) == 0)
            return p;
        p = js_skip(p);
    }
}
