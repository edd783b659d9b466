/* arraydir_internal.h: what the loading of an array folder (arraydir.c)
 * and the reading of its commits (arraydir_commits.c) share: the state
 * of a load, sets of strings, the entries of a .con file.  Not for use
 * outside format/model/. */
#ifndef TDB_MODEL_ARRAYDIR_INTERNAL_H
#define TDB_MODEL_ARRAYDIR_INTERNAL_H

#include "model/arraydir.h"

#include <stdlib.h>
#include <string.h>

/* A set of strings (sorted by arraydir_strs_sort in arraydir.c). */
struct arraydir_strs {
    char **v;
    size_t n, cap;
};

struct arraydir_load {
    const struct tdb_io *io;
    struct tdb_error *err;
    struct tdb_arraydir *d;
    size_t cap_schemas, cap_cands, cap_vacs, cap_deletes, cap_fragmeta;
    struct tdb_names root, schema, commits, fmeta;
    struct arraydir_strs ignore;    /* lines of every .ign */
    struct arraydir_strs con;       /* live entries of every .con */
};

/* Room for one more of n items of `size` bytes in v (capacity *cap).
 * @return v, or its new place, or NULL (out of memory; v stays). */
static inline void *arraydir_grow(void *v, size_t n, size_t *cap,
                                  size_t size)
{
    if (n < *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : 8;
    if (nc < n + 1 || nc > SIZE_MAX / size)
        return NULL;
    void *p = realloc(v, nc * size);
    if (p)
        *cap = nc;
    return p;
}

static inline int arraydir_strs_add(struct arraydir_strs *s, const char *p,
                                    size_t n)
{
    char **v = arraydir_grow(s->v, s->n, &s->cap, sizeof *s->v);
    if (!v)
        return TDB_E_NOMEM;
    s->v = v;
    char *c = malloc(n + 1);
    if (!c)
        return TDB_E_NOMEM;
    memcpy(c, p, n);
    c[n] = 0;
    s->v[s->n++] = c;
    return 0;
}

static inline int arraydir_strcmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* s must be sorted. */
static inline bool arraydir_strs_has(const struct arraydir_strs *s,
                                     const char *str)
{
    if (!s->n)
        return false;
    return bsearch(&str, s->v, s->n, sizeof *s->v, arraydir_strcmp) != NULL;
}

static inline void arraydir_strs_free(struct arraydir_strs *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* tdb_names is sorted bytewise by tdb_io_names. */
static inline bool arraydir_names_has(const struct tdb_names *n,
                                      const char *str)
{
    if (!n->n)
        return false;
    return bsearch(&str, n->v, n->n, sizeof *n->v, arraydir_strcmp) != NULL;
}

static inline bool arraydir_ends_with(const char *s, size_t n,
                                      const char *suffix)
{
    size_t l = strlen(suffix);
    return n >= l && !memcmp(s + n - l, suffix, l);
}

/* One entry of a .con file, as arraydir_con_walk hands it over. */
struct arraydir_con_line {
    const char *con;            /* the .con file */
    const char *marker;         /* the line, NUL-terminated */
    size_t len;
    bool has_tile;              /* .del or .upd: a condition tile follows */
    uint64_t tile_off, tile_size;
};

/* Calls fn for each entry of .con file `path`: lines naming commits (.wrt,
 * .ok), and deletes (.del) and updates (.upd) each followed by a uint64
 * size and a condition tile.  Stops at fn's first error. */
int tdb_arraydir_con_walk(const struct tdb_io *io, const char *path,
                          int (*fn)(void *, const struct arraydir_con_line *),
                          void *arg, struct tdb_error *err);

/* Every .ign of __commits (L->commits listed) into L->ignore: the
 * relative commit paths to leave out of the .con files. */
int tdb_arraydir_load_ignores(struct arraydir_load *L);

#endif
