/* copy.c: an array or group copied whole from one storage to another, file by file, commit files last (array_file_hierarchy.md, group_file_hierarchy.md). */
#include "core/core.h"
#include "model/arraydir.h"
#include "tiledb_format_write.h"

#include <stdlib.h>

#define COPY_CHUNK (8u << 20)   /* bytes read and written at a time */
#define COPY_DEPTH 64           /* folders nested deeper are refused */

/* Paths relative to the root. */
struct copy_list {
    char **v;
    size_t n, cap;
};

static void copy_list_free(struct copy_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int copy_push(struct copy_list *l, char *p)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            free(p);
            return TDB_E_NOMEM;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = p;
    return 0;
}

/* Whether file `path` commits something: a file of a __commits folder
 * (formats 12 on), or a fragment's NAME.ok beside it (older formats).
 * TileDB writes these last, and so does the copy. */
static bool copy_is_commit(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dl = slash ? (size_t)(slash - path) : 0, nl = strlen(name);

    if (dl >= 9 && !memcmp(path + dl - 9, "__commits", 9) &&
        (dl == 9 || path[dl - 10] == '/'))
        return true;
    return nl > 3 && !strcmp(name + nl - 3, ".ok");
}

/* Makes each folder under `dir` of src in dst and lists its files, the
 * commit files into *commits, the others into *rest. */
static int copy_walk(const struct tdb_io *src, const struct tdb_io *dst,
                     const char *dir, int depth, struct copy_list *rest,
                     struct copy_list *commits, struct tdb_error *err)
{
    struct tdb_names n;
    int r;

    if (depth > COPY_DEPTH)
        return tdb_err(err, TDB_E_INVAL, "%s: folders nested more than %d "
                       "deep", dir, COPY_DEPTH);
    if ((r = tdb_io_names(src, dir, &n, err)))
        return r;
    for (size_t i = 0; !r && i < n.n; i++) {
        char *p = dir[0] ? tdb_path_join(dir, n.v[i]) : strdup(n.v[i]);
        if (!p) {
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
        } else if (n.is_dir[i]) {
            r = dst->ops->mkdir(dst->ctx, p);
            if (r)
                r = tdb_err(err, r, "cannot make folder %s in the "
                            "destination: %s", p, tdb_strerror(r));
            else
                r = copy_walk(src, dst, p, depth + 1, rest, commits, err);
            free(p);
        } else {
            r = copy_push(copy_is_commit(p) ? commits : rest, p);
            if (r)
                r = tdb_err(err, r, "out of memory");
        }
    }
    tdb_names_free(&n);
    return r;
}

/* Copies file `path`, COPY_CHUNK bytes at a time, and syncs it. */
static int copy_file(const struct tdb_io *src, const struct tdb_io *dst,
                     const char *path, uint8_t *buf, uint64_t *bytes,
                     struct tdb_error *err)
{
    uint64_t size, off = 0;
    int r = src->ops->size(src->ctx, path, &size);

    if (r)
        return tdb_err(err, r, "reading %s: %s", path, tdb_strerror(r));
    do {
        size_t len = size - off < COPY_CHUNK ? (size_t)(size - off)
                                             : COPY_CHUNK;
        if (len && (r = src->ops->read_at(src->ctx, path, off, buf, len)))
            return tdb_err(err, r, "reading %s: %s", path,
                           tdb_strerror(r));
        if ((r = dst->ops->write_at(dst->ctx, path, off, buf, len)))
            return tdb_err(err, r, "writing %s: %s", path,
                           tdb_strerror(r));
        off += len;
    } while (off < size);
    if (dst->ops->sync && (r = dst->ops->sync(dst->ctx, path)))
        return tdb_err(err, r, "writing %s: %s", path, tdb_strerror(r));
    *bytes += size;
    return 0;
}

/* The root of dst is missing (then made) or empty. */
static int copy_dst_ready(const struct tdb_io *dst, struct tdb_error *err)
{
    struct tdb_names n;
    int r;

    if (!tdb_io_exists(dst, "")) {
        r = dst->ops->mkdir(dst->ctx, "");
        return r ? tdb_err(err, r, "cannot make the destination folder: "
                           "%s", tdb_strerror(r))
                 : 0;
    }
    if (!tdb_io_isdir(dst, ""))
        return tdb_err(err, TDB_E_NOTDIR, "the destination exists and is "
                       "not a folder");
    if ((r = tdb_io_names(dst, "", &n, err)))
        return r;
    if (n.n)
        r = tdb_err(err, TDB_E_INVAL, "the destination is not empty (it "
                    "holds '%s')", n.v[0]);
    tdb_names_free(&n);
    return r;
}

int tdb_array_copy(const struct tdb_io *src, const struct tdb_io *dst,
                   struct tdb_copy_stats *st, struct tdb_error *err)
{
    struct copy_list rest = {0}, commits = {0};
    uint8_t *buf = NULL;
    int r;

    memset(st, 0, sizeof *st);
    if (!dst->ops->write_at || !dst->ops->mkdir)
        return tdb_err(err, TDB_E_ROFS, "the destination is read-only");
    if (!tdb_is_array(src, "") && !tdb_is_group(src, ""))
        return tdb_err(err, TDB_E_INVAL, "the source is not a TileDB array "
                       "or group");
    if ((r = copy_dst_ready(dst, err)) ||
        (r = copy_walk(src, dst, "", 0, &rest, &commits, err)))
        goto out;
    if (!(buf = malloc(COPY_CHUNK))) {
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; !r && i < rest.n + commits.n; i++) {
        const char *p = i < rest.n ? rest.v[i] : commits.v[i - rest.n];
        r = copy_file(src, dst, p, buf, &st->bytes, err);
        st->files += r == 0;
    }
out:
    free(buf);
    copy_list_free(&rest);
    copy_list_free(&commits);
    return r;
}
