/* stamp.c: whether a source changed since a tree of it was opened: a digest of the listings of the folders whose entries decide the tree (array_file_hierarchy.md, group_file_hierarchy.md). */
/*
 * TileDB never rewrites a file of an array or group: a write adds files
 * under new timestamped names (a fragment's commit in __commits, a schema
 * in __schema, metadata in __meta, a group's members in __group) and a
 * consolidation's vacuum removes some.  So the names in a few folders
 * tell whether a tree opened earlier still shows the source as it is.
 */
#include "tree/stamp.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* The subfolders of an array or group folder that are listed. */
static const char *const stamp_subdirs[] = {
    "__schema", "__commits", "__fragment_meta", "__meta", "__group"};
#define STAMP_NSUB (sizeof stamp_subdirs / sizeof *stamp_subdirs)

/* The source folder `i` of fs (fs NULL: the root alone). */
static const char *stamp_source(const struct tdb_fs *fs, size_t i)
{
    if (!fs)
        return i == 0 ? "" : NULL;
    return tdb_fs_source(fs, i);
}

int tdb_fs_watch_dirs(const struct tdb_fs *fs, struct tdb_names *out,
                      struct tdb_error *err)
{
    const char *src;
    size_t n = 0;

    memset(out, 0, sizeof *out);
    while (stamp_source(fs, n))
        n++;
    out->v = calloc(n * (STAMP_NSUB + 1) + 1, sizeof *out->v);
    out->is_dir = calloc(n * (STAMP_NSUB + 1) + 1, sizeof *out->is_dir);
    if (!out->v || !out->is_dir)
        goto nomem;
    for (size_t i = 0; (src = stamp_source(fs, i)); i++) {
        for (size_t k = 0; k <= STAMP_NSUB; k++) {
            char *p = k == 0 ? strdup(src)
                             : tdb_path_join(src, stamp_subdirs[k - 1]);
            if (!p)
                goto nomem;
            out->v[out->n] = p;
            out->is_dir[out->n++] = true;
        }
    }
    return 0;
nomem:
    tdb_names_free(out);
    return tdb_err(err, TDB_E_NOMEM, "out of memory");
}

/* Adds `s` and its terminating NUL to the digest. */
static int stamp_str(EVP_MD_CTX *md, const char *s)
{
    return EVP_DigestUpdate(md, s, strlen(s) + 1) ? 0 : TDB_E_NOMEM;
}

/* Adds the entries of folder `path` to the digest: each name, then 'd'
 * for a folder or 'f'.  *names receives them (the caller frees). */
static int stamp_list(EVP_MD_CTX *md, const struct tdb_io *io,
                      const char *path, struct tdb_names *names,
                      struct tdb_error *err)
{
    int r = tdb_io_names(io, path, names, err);

    if (!r)
        r = stamp_str(md, path);
    for (size_t i = 0; !r && i < names->n; i++) {
        r = stamp_str(md, names->v[i]);
        if (!r && !EVP_DigestUpdate(md, names->is_dir[i] ? "d" : "f", 1))
            r = TDB_E_NOMEM;
    }
    return r == TDB_E_NOMEM ? tdb_err(err, r, "out of memory") : r;
}

/* Whether folder `name` is among `n`'s folders (sorted). */
static bool stamp_has_dir(const struct tdb_names *n, const char *name)
{
    size_t lo = 0, hi = n->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(n->v[mid], name);
        if (c == 0)
            return n->is_dir[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* One source folder: its entries, then those of its subfolders that its
 * listing shows (a folder missing from it needs no request). */
static int stamp_source_dir(EVP_MD_CTX *md, const struct tdb_io *io,
                            const char *src, struct tdb_error *err)
{
    struct tdb_names top, sub = {0};
    int r = stamp_list(md, io, src, &top, err);

    for (size_t k = 0; !r && k < STAMP_NSUB; k++) {
        if (!stamp_has_dir(&top, stamp_subdirs[k]))
            continue;
        char *p = tdb_path_join(src, stamp_subdirs[k]);
        if (!p)
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
        else
            r = stamp_list(md, io, p, &sub, err);
        tdb_names_free(&sub);
        free(p);
    }
    tdb_names_free(&top);
    return r;
}

int tdb_fs_stamp(const struct tdb_io *io, const struct tdb_fs *fs,
                 uint8_t out[TDB_STAMP_BYTES], struct tdb_error *err)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned len = 0;
    const char *src;
    int r = 0;

    if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; !r && (src = stamp_source(fs, i)); i++)
        r = stamp_source_dir(md, io, src, err);
    if (!r && (!EVP_DigestFinal_ex(md, out, &len) ||
               len != TDB_STAMP_BYTES))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    EVP_MD_CTX_free(md);
    return r;
}
