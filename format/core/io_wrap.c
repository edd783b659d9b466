/* io_wrap.c: backends over another backend: a view of one of its folders
 * (tdb_io_sub) and fault injection for tests (tdb_io_faulty). */
#include "core/core.h"
#include "core/io_local.h"

#include <stdlib.h>

/* -------------------------------------------------------------- wrappers */

/* A backend over another one, `inner`: a view rooted at one of inner's
 * folders (tdb_io_sub: a group's member array; absolute paths and file://
 * URIs pass through unchanged), or inner itself with its mutating calls
 * counted and failed, and reads of one file failed, on schedule
 * (tdb_io_faulty).  One set of functions serves both: each call maps its
 * paths, and a mutating call is refused (TDB_E_ROFS) when inner has no
 * such call, else counted, before it reaches inner. */
struct io_wrap {
    const struct tdb_io *inner;
    char *prefix;               /* tdb_io_sub's folder; NULL: none */
    struct tdb_io_fault *f;     /* tdb_io_faulty's schedule; NULL: none */
};

/* `path` as inner knows it; *tmp is what to free afterwards (or NULL).
 * @return NULL when out of memory. */
static const char *io_wrap_path(const struct io_wrap *w, const char *path,
                                char **tmp)
{
    *tmp = NULL;
    if (!w->prefix || !strncmp(path, "file://", 7))
        return path;            /* inner resolves URIs */
    return *tmp = tdb_io_under(w->prefix, path);
}

/* Returns inner's `call` (an expression of `w`, the wrapper, and `p`,
 * the mapped `path`). */
#define IO_WRAP_CALL(path, call)                                            \
    struct io_wrap *w = ctx;                                                \
    char *tmp;                                                              \
    const char *p = io_wrap_path(w, path, &tmp);                            \
    if (!p)                                                                 \
        return TDB_E_NOMEM;                                                 \
    int r = (call);                                                         \
    free(tmp);                                                              \
    return r

/* Counts one mutating call; true when it is to fail.  Calls may come from
 * several threads (a writer syncs its files at once): each gets a number
 * of its own. */
static bool io_wrap_hit(struct io_wrap *w)
{
    struct tdb_io_fault *f = w->f;

    if (!f)
        return false;
    uint64_t n = __atomic_add_fetch(&f->count, 1, __ATOMIC_SEQ_CST);
    if (!f->fail_at)
        return false;
    if (n == f->fail_at || (f->crash && n > f->fail_at)) {
        __atomic_add_fetch(&f->failed, 1, __ATOMIC_SEQ_CST);
        return true;
    }
    return false;
}

/* The calls of the wrapped backend. */
static const struct tdb_io_ops *io_wrap_inner(void *ctx)
{
    return ((struct io_wrap *)ctx)->inner->ops;
}

/* Before a mutating call: TDB_E_ROFS when inner lacks it (`has` false,
 * not counted), TDB_E_IO when the schedule fails it, else 0. */
static int io_wrap_refuse(void *ctx, bool has)
{
    return !has ? TDB_E_ROFS : io_wrap_hit(ctx) ? TDB_E_IO : 0;
}

/* Returns inner's mutating `call` of `op` (see IO_WRAP_CALL) unless
 * io_wrap_refuse refuses it. */
#define IO_WRAP_MUTATE(op, path, call)                                      \
    int no = io_wrap_refuse(ctx, io_wrap_inner(ctx)->op != NULL);           \
    if (no)                                                                 \
        return no;                                                          \
    IO_WRAP_CALL(path, call)

/* True when the schedule refuses this read of `path` (taking one from
 * read_fails). */
static bool io_wrap_read_hit(struct io_wrap *w, const char *path)
{
    struct tdb_io_fault *f = w->f;
    if (!f || !f->read_path || strcmp(path, f->read_path))
        return false;
    uint64_t n = __atomic_load_n(&f->read_fails, __ATOMIC_SEQ_CST);
    while (n && !__atomic_compare_exchange_n(
                    &f->read_fails, &n, n == UINT64_MAX ? n : n - 1, false,
                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
    if (!n)
        return false;
    __atomic_add_fetch(&f->read_failed, 1, __ATOMIC_SEQ_CST);
    return true;
}

static int io_wrap_read_at(void *ctx, const char *path, uint64_t off,
                           void *buf, size_t len)
{
    if (io_wrap_read_hit(ctx, path))
        return TDB_E_IO;
    IO_WRAP_CALL(path, w->inner->ops->read_at(w->inner->ctx, p, off, buf, len));
}

static int io_wrap_dup_fd(void *ctx, const char *path)
{
    const struct io_wrap *v = ctx;
    if (!v->inner->ops->dup_fd)
        return TDB_E_UNSUPPORTED;
    if (!path)
        return v->inner->ops->dup_fd(v->inner->ctx, NULL);
    IO_WRAP_CALL(path, w->inner->ops->dup_fd(w->inner->ctx, p));
}

static int io_wrap_size(void *ctx, const char *path, uint64_t *size)
{
    IO_WRAP_CALL(path, w->inner->ops->size(w->inner->ctx, p, size));
}

static int io_wrap_list(void *ctx, const char *path, tdb_io_list_fn fn,
                        void *arg)
{
    IO_WRAP_CALL(path, w->inner->ops->list(w->inner->ctx, p, fn, arg));
}

static int io_wrap_is_dir(void *ctx, const char *path, bool *is_dir)
{
    IO_WRAP_CALL(path, w->inner->ops->is_dir(w->inner->ctx, p, is_dir));
}

static int io_wrap_write_at(void *ctx, const char *path, uint64_t off,
                            const void *buf, size_t len)
{
    int no = io_wrap_refuse(ctx, io_wrap_inner(ctx)->write_at != NULL);
    if (no)
        return no;
    struct io_wrap *v = ctx;
    if (v->f)
        __atomic_add_fetch(&v->f->writes, 1, __ATOMIC_SEQ_CST);
    IO_WRAP_CALL(path,
                 w->inner->ops->write_at(w->inner->ctx, p, off, buf, len));
}

static int io_wrap_mkdir(void *ctx, const char *path)
{
    IO_WRAP_MUTATE(mkdir, path, w->inner->ops->mkdir(w->inner->ctx, p));
}

static int io_wrap_remove(void *ctx, const char *path)
{
    IO_WRAP_MUTATE(remove, path, w->inner->ops->remove(w->inner->ctx, p));
}

/* Counted even when inner has no sync (nothing to do: 0). */
static int io_wrap_sync(void *ctx, const char *path)
{
    if (io_wrap_hit(ctx))
        return TDB_E_IO;
    if (!io_wrap_inner(ctx)->sync)
        return 0;
    IO_WRAP_CALL(path, w->inner->ops->sync(w->inner->ctx, p));
}

/* inner's rename of `from` (mapped already) to `to`. */
static int io_wrap_rename_to(struct io_wrap *w, const char *from,
                             const char *to)
{
    char *tmp;
    const char *q = io_wrap_path(w, to, &tmp);
    int r = q ? w->inner->ops->rename(w->inner->ctx, from, q) : TDB_E_NOMEM;

    free(tmp);
    return r;
}

static int io_wrap_rename(void *ctx, const char *from, const char *to)
{
    IO_WRAP_MUTATE(rename, from, io_wrap_rename_to(w, p, to));
}

/* Passes the hints on, their paths mapped (dropped when out of memory). */
static void io_wrap_prefetch(void *ctx, const struct tdb_io_want *want,
                             size_t n)
{
    struct io_wrap *w = ctx;
    if (!w->inner->ops->prefetch)
        return;
    struct tdb_io_want *m = malloc(n * sizeof *m);
    char **tmp = calloc(n, sizeof *tmp);
    size_t k = 0;
    for (size_t i = 0; m && tmp && i < n; i++) {
        m[k] = want[i];
        m[k].path = io_wrap_path(w, want[i].path, &tmp[i]);
        if (m[k].path)
            k++;
    }
    if (k)
        w->inner->ops->prefetch(w->inner->ctx, m, k);
    for (size_t i = 0; tmp && i < n; i++)
        free(tmp[i]);
    free(tmp);
    free(m);
}

static void io_wrap_settle(void *ctx)
{
    struct io_wrap *w = ctx;
    tdb_io_settle(w->inner);
}

static void io_wrap_destroy(void *ctx)
{
    struct io_wrap *w = ctx;
    free(w->prefix);
    free(w);
}

static const struct tdb_io_ops io_wrap_ops = {
    .read_at = io_wrap_read_at,
    .size = io_wrap_size,
    .list = io_wrap_list,
    .is_dir = io_wrap_is_dir,
    .write_at = io_wrap_write_at,
    .mkdir = io_wrap_mkdir,
    .rename = io_wrap_rename,
    .remove = io_wrap_remove,
    .sync = io_wrap_sync,
    .destroy = io_wrap_destroy,
    .prefetch = io_wrap_prefetch,
    .settle = io_wrap_settle,
    .dup_fd = io_wrap_dup_fd,
};

/* A wrapper of `inner` with `prefix` (copied; NULL: none) and schedule f. */
static int io_wrap_new(struct tdb_io *io, const struct tdb_io *inner,
                       const char *prefix, struct tdb_io_fault *f)
{
    struct io_wrap *w = calloc(1, sizeof *w);

    if (!w || (prefix && !(w->prefix = strdup(prefix)))) {
        free(w);
        return TDB_E_NOMEM;
    }
    w->inner = inner;
    w->f = f;
    io->ops = &io_wrap_ops;
    io->ctx = w;
    return 0;
}

int tdb_io_sub(struct tdb_io *io, const struct tdb_io *parent,
               const char *prefix)
{
    return io_wrap_new(io, parent, prefix, NULL);
}

int tdb_io_faulty(struct tdb_io *io, const struct tdb_io *inner,
                  struct tdb_io_fault *f)
{
    return io_wrap_new(io, inner, NULL, f);
}
