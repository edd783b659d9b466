/* copy.c: an array or group copied whole from one storage to another, file
 * by file, commit files last, then checked against the array's own
 * references (array_file_hierarchy.md, group_file_hierarchy.md,
 * fragment.md). */
#include "core/core.h"
#include "core/pool.h"
#include "model/arraydir.h"
#include "model/fragmeta.h"
#include "model/meta.h"
#include "model/schemas.h"
#include "tiledb_format_write.h"

#include <stdio.h>
#include <stdlib.h>

#define COPY_CHUNK (4u << 20)   /* bytes read and written at a time */
#define COPY_JOBS 16            /* files copied at a time (each with a
                                 * COPY_CHUNK buffer) */
#define COPY_DEPTH 64           /* folders nested deeper are refused */
#define COPY_ANY UINT64_MAX     /* a size no reference states */

/* A set of paths relative to the root, sorted bytewise (so that a folder
 * comes before the folders under it), each with a size and the reference
 * that named it (NULL: a listing showed it). */
struct copy_set {
    char **v;
    uint64_t *size;
    char **why;
    size_t n, cap;
};

static void copy_set_free(struct copy_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i]);
        free(s->why[i]);
    }
    free(s->v);
    free(s->size);
    free(s->why);
}

/* Whether s holds p; *at: its index, or where it would go. */
static bool copy_set_find(const struct copy_set *s, const char *p, size_t *at)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->v[mid], p);
        if (!c) {
            *at = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return false;
}

/* Adds p (copied) unless s holds it.  @return 0 or TDB_E_NOMEM. */
static int copy_set_add(struct copy_set *s, const char *p, uint64_t size,
                        const char *why)
{
    size_t at;
    if (copy_set_find(s, p, &at))
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        char **v = realloc(s->v, cap * sizeof *v);
        if (v)
            s->v = v;
        uint64_t *sz = v ? realloc(s->size, cap * sizeof *sz) : NULL;
        if (sz)
            s->size = sz;
        char **w = sz ? realloc(s->why, cap * sizeof *w) : NULL;
        if (!w)
            return TDB_E_NOMEM;
        s->why = w;
        s->cap = cap;
    }
    char *c = strdup(p), *y = why ? strdup(why) : NULL;
    if (!c || (why && !y)) {
        free(c);
        free(y);
        return TDB_E_NOMEM;
    }
    memmove(s->v + at + 1, s->v + at, (s->n - at) * sizeof *s->v);
    memmove(s->size + at + 1, s->size + at, (s->n - at) * sizeof *s->size);
    memmove(s->why + at + 1, s->why + at, (s->n - at) * sizeof *s->why);
    s->v[at] = c;
    s->size[at] = size;
    s->why[at] = y;
    s->n++;
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

/* `a`/`b`, or b alone when a is the root.  NULL: out of memory. */
static char *copy_join(const char *a, const char *b)
{
    return a[0] ? tdb_path_join(a, b) : strdup(b);
}

/* ------------------------------------------------------------ the walk */

/* What is copied: every file and folder the source's listings show, and
 * what the array's references name that they do not. */
struct copy_plan {
    const struct tdb_io *src;
    struct copy_set files;      /* to copy */
    struct copy_set dirs;       /* listed (and made in dst), root excepted */
    size_t listed;              /* files the walk of the root found */
    struct tdb_error *err;
};

static int copy_components(const char *p)
{
    int n = p[0] != 0;
    for (; *p; p++)
        n += *p == '/';
    return n;
}

/* Lists folder `dir` of the source and each folder under it that is not
 * listed yet, adding what they hold to the plan. */
static int copy_walk(struct copy_plan *pl, const char *dir)
{
    struct tdb_names n;
    int r;

    if (copy_components(dir) > COPY_DEPTH)
        return tdb_err(pl->err, TDB_E_INVAL, "%.256s...: folders nested "
                       "more than %d deep", dir, COPY_DEPTH);
    if ((r = tdb_io_names(pl->src, dir, &n, pl->err)))
        return r;
    for (size_t i = 0; !r && i < n.n; i++) {
        char *p = copy_join(dir, n.v[i]);
        size_t at;
        if (!p) {
            r = TDB_E_NOMEM;
        } else if (!n.is_dir[i]) {
            r = copy_set_add(&pl->files, p, COPY_ANY, NULL);
        } else if (!copy_set_find(&pl->dirs, p, &at)) {
            r = copy_set_add(&pl->dirs, p, 0, NULL);
            if (!r)
                r = copy_walk(pl, p);
        }
        if (r == TDB_E_NOMEM)
            r = tdb_err(pl->err, r, "out of memory");
        free(p);
    }
    tdb_names_free(&n);
    return r;
}

/* Lists folder `dir` and each of its parents that no listing showed, from
 * the top down (a listing that left them out; object stores that give no
 * prefix for a folder holding only folders). */
static int copy_walk_path(struct copy_plan *pl, const char *dir)
{
    char *p = strdup(dir);
    int r = p ? 0 : tdb_err(pl->err, TDB_E_NOMEM, "out of memory");
    for (char *s = p; !r && s && *s;) {
        char *slash = strchr(s, '/');
        size_t at;
        if (slash)
            *slash = 0;
        if (!copy_set_find(&pl->dirs, p, &at)) {
            r = copy_set_add(&pl->dirs, p, 0, NULL);
            r = r ? tdb_err(pl->err, r, "out of memory") : copy_walk(pl, p);
        }
        if (slash)
            *slash = '/';
        s = slash ? slash + 1 : NULL;
    }
    free(p);
    return r;
}

/* ---------------------------------------------------- the references */

/* One pass over the references of the array or group at the root of one
 * end: the source (pl non-NULL: each named file must be there, and joins
 * the plan when no listing showed it) or the destination once copied (pl
 * NULL: each named file must be there). */
struct copy_pass {
    const struct tdb_io *io;
    const uint8_t *key;         /* the array's and its members' (or NULL) */
    struct copy_plan *pl;
    struct copy_set need;       /* what the references name, and sizes */
    struct tdb_error *err;
};

static const char *copy_end(const struct copy_pass *p)
{
    return p->pl ? "the source" : "the copy";
}

/* File `path` is named by `why`, with `size` bytes (COPY_ANY: unstated;
 * 0: the file need not be there, as TileDB writes no empty file). */
static int copy_need(struct copy_pass *p, const char *path, uint64_t size,
                     const char *why)
{
    size_t at;
    uint64_t have;
    int r;

    if (copy_set_find(&p->need, path, &at))
        return 0;
    if ((r = copy_set_add(&p->need, path, size, why)))
        return tdb_err(p->err, r, "out of memory");
    if (p->pl && !copy_set_find(&p->pl->files, path, &at)) {
        const char *slash = strrchr(path, '/');
        char *dir = strndup(path, slash ? (size_t)(slash - path) : 0);
        r = dir ? copy_walk_path(p->pl, dir)
                : tdb_err(p->err, TDB_E_NOMEM, "out of memory");
        free(dir);
        if (r)
            return r;
    }
    r = p->io->ops->size(p->io->ctx, path, &have);
    if (r == TDB_E_NOENT && size == 0)
        return 0;
    if (r == TDB_E_NOENT)
        return tdb_err(p->err, r, "%s is incomplete: %s, named by %s, is "
                       "missing", copy_end(p), path, why);
    if (r)
        return tdb_err(p->err, r, "reading %s: %s", path, tdb_strerror(r));
    if (size != COPY_ANY && have != size)
        return tdb_err(p->err, TDB_E_CORRUPT, "%s is damaged: %s holds %llu "
                       "bytes where %s says %llu", copy_end(p), path,
                       (unsigned long long)have, why,
                       (unsigned long long)size);
    if (p->pl && (r = copy_set_add(&p->pl->files, path, COPY_ANY, NULL)))
        return tdb_err(p->err, r, "out of memory");
    return 0;
}

/* Each file the dir_entry list names, under the array at `base`. */
static int copy_need_entries(struct copy_pass *p, const char *base,
                             const struct tdb_dir_entry *e, size_t n,
                             const char *why)
{
    int r = 0;
    for (size_t i = 0; !r && i < n; i++) {
        char *path = copy_join(base, e[i].path);
        r = path ? copy_need(p, path, COPY_ANY, why)
                 : tdb_err(p->err, TDB_E_NOMEM, "out of memory");
        free(path);
    }
    return r;
}

/* The files fragment metadata fm names, each of the size it states. */
static int copy_need_fragment(struct copy_pass *p, const char *fdir,
                              const struct tdb_fragmeta *fm, const char *why)
{
    int r = 0;
    for (uint32_t f = 0; !r && f < fm->nfields; f++) {
        const char *names[3] = {fm->file_names[f], fm->file_var_names[f],
                                fm->file_validity_names[f]};
        uint64_t sizes[3] = {fm->file_sizes[f], fm->file_var_sizes[f],
                             fm->file_validity_sizes[f]};
        for (int k = 0; !r && k < 3; k++) {
            if (!names[k])
                continue;
            char *path = tdb_path_join(fdir, names[k]);
            r = path ? copy_need(p, path, sizes[k], why)
                     : tdb_err(p->err, TDB_E_NOMEM, "out of memory");
            free(path);
        }
    }
    return r;
}

/* The files of array directory d's entries (schemas, metadata,
 * deletes, consolidated fragment metadata, vacuum files) under base. */
static int copy_refs_entries(struct copy_pass *p, const char *base,
                             const struct tdb_arraydir *d, const char *why)
{
    int r;
    if ((r = copy_need_entries(p, base, d->schemas, d->nschemas, why)) ||
        (r = copy_need_entries(p, base, d->meta, d->nmeta, why)) ||
        (r = copy_need_entries(p, base, d->deletes, d->ndeletes, why)) ||
        (r = copy_need_entries(p, base, d->fragmeta, d->nfragmeta, why)))
        return r;
    for (size_t i = 0; !r && i < d->nvacs; i++)
        r = copy_need_entries(p, base, &d->vacs[i].e, 1, why);
    return r;
}

/* Every fragment's metadata of d asked for at once (on object storage:
 * one round trip, not one per fragment). */
static void copy_want_fragmeta(const struct tdb_io *io,
                               const struct tdb_arraydir *d)
{
    for (size_t i = 0; i < d->nfrags; i++) {
        char *meta = tdb_path_join(d->frags[i].path,
                                   "__fragment_metadata.tdb");
        if (meta)
            tdb_io_want(io, TDB_WANT_FILE, meta);
        free(meta);
    }
}

/* The files of fragment fe of the array at base: its commit, and (with
 * the schemas in set, when its metadata can be read: !nokey) those its
 * metadata names. */
static int copy_refs_fragment(struct copy_pass *p, const struct tdb_io *io,
                              const char *base, const struct tdb_dir_entry *fe,
                              const struct tdb_schema_set *set, bool nokey)
{
    struct tdb_fragmeta *fm = NULL;
    char *fdir = copy_join(base, fe->path), *meta = NULL, *fwhy = NULL;
    int r = 0;
    if (!fdir || !(meta = tdb_path_join(fdir, "__fragment_metadata.tdb"))
        || asprintf(&fwhy, "the commit of fragment %s", fdir) < 0) {
        fwhy = NULL;
        r = tdb_err(p->err, TDB_E_NOMEM, "out of memory");
    } else if (p->pl) {
        r = copy_walk_path(p->pl, fdir);
    }
    if (!r)
        r = copy_need(p, meta, COPY_ANY, fwhy);
    free(fwhy);
    fwhy = NULL;
    if (!r && !nokey && !p->pl) {
        /* one listing of the folder gives the sizes of its files (on
         * object storage: one request, not one per file) */
        struct tdb_names n;
        if (!(r = tdb_io_names(io, fe->path, &n, p->err)))
            tdb_names_free(&n);
    }
    if (!r && !nokey) {
        struct tdb_fragmeta_src src = {.io = io, .path = fe->path,
                                       .name = fe->name, .schemas = set,
                                       .key = p->key};
        r = tdb_fragmeta_load(&src, &fm, p->err);
        if (!r && asprintf(&fwhy, "the metadata of fragment %s", fdir) < 0) {
            fwhy = NULL;
            r = tdb_err(p->err, TDB_E_NOMEM, "out of memory");
        }
        if (!r)
            r = copy_need_fragment(p, fdir, fm, fwhy);
    }
    tdb_fragmeta_free(fm);
    free(fwhy);
    free(meta);
    free(fdir);
    return r;
}

/* The references of the array at `base` (io rooted there): its schemas,
 * metadata, delete commits, vacuum files and consolidated fragment
 * metadata (as its folders list them); for each fragment a commit names,
 * the fragment's metadata file, then every file that metadata names, of
 * the size it states.  Without the key of an encrypted array (p->key)
 * its fragment metadata cannot be read: each fragment's folder is then
 * listed (on the source) and its metadata file must be there. */
static int copy_refs_array(struct copy_pass *p, const struct tdb_io *io,
                           const char *base)
{
    struct tdb_arraydir *d = NULL;
    struct tdb_schema_set set = {0};
    const struct tdb_schema *in_force;
    char *why = NULL;
    bool nokey = false;
    int r = tdb_arraydir_load(io, 0, UINT64_MAX, &d, p->err);

    if (r)
        goto out;
    if (asprintf(&why, "the array %s", base[0] ? base : "at the root") < 0) {
        why = NULL;
        r = tdb_err(p->err, TDB_E_NOMEM, "out of memory");
        goto out;
    }
    if ((r = copy_refs_entries(p, base, d, why)))
        goto out;
    r = tdb_array_schemas_load(io, d, p->key, &set, &in_force, p->err);
    if (r == TDB_E_NOKEY) {
        nokey = true;
        tdb_error_clear(p->err);
        r = 0;
    }
    if (!r && !nokey)
        copy_want_fragmeta(io, d);
    for (size_t i = 0; !r && i < d->nfrags; i++)
        r = copy_refs_fragment(p, io, base, &d->frags[i], &set, nokey);
out:
    for (size_t i = 0; i < set.n; i++)
        tdb_schema_free(set.v[i]);
    free(set.v);
    free(why);
    tdb_arraydir_free(d);
    return r;
}

static int copy_refs(struct copy_pass *p, const char *base);

/* The files of the __group and __meta folders of the group at base. */
static int copy_refs_group_files(struct copy_pass *p, const struct tdb_io *io,
                                 const char *base, const char *why)
{
    static const char *const folders[] = {"__group", "__meta"};
    int r = 0;
    for (size_t k = 0; !r && k < 2; k++) {
        struct tdb_names n;
        if ((r = tdb_io_names(io, folders[k], &n, p->err)))
            break;
        for (size_t i = 0; !r && i < n.n; i++) {
            char *rel = n.is_dir[i] ? NULL : tdb_path_join(folders[k], n.v[i]);
            char *path = rel ? copy_join(base, rel) : NULL;
            if (!n.is_dir[i])
                r = path ? copy_need(p, path, COPY_ANY, why)
                         : tdb_err(p->err, TDB_E_NOMEM, "out of memory");
            free(path);
            free(rel);
        }
        tdb_names_free(&n);
    }
    return r;
}

/* Each folder of the group at base that is an array or a group (its
 * members unread: encrypted, no key). */
static int copy_refs_folders(struct copy_pass *p, const struct tdb_io *io,
                             const char *base)
{
    struct tdb_names n;
    int r = tdb_io_names(io, "", &n, p->err);
    if (r)
        return r;
    for (size_t i = 0; !r && i < n.n; i++) {
        if (!n.is_dir[i] || !strncmp(n.v[i], "__", 2))
            continue;
        char *place = copy_join(base, n.v[i]);
        r = place ? copy_refs(p, place)
                  : tdb_err(p->err, TDB_E_NOMEM, "out of memory");
        free(place);
    }
    tdb_names_free(&n);
    return r;
}

/* Each member of group g at base whose place is inside base. */
static int copy_refs_members(struct copy_pass *p, const char *base,
                             const struct tdb_group *g)
{
    int r = 0;
    for (size_t i = 0; !r && i < g->n; i++) {
        const struct tdb_group_member *m = &g->v[i];
        bool above;
        char *place;
        if (!m->relative)
            continue;
        if (!(place = tdb_group_member_place(m, base, &above)))
            return tdb_err(p->err, TDB_E_NOMEM, "out of memory");
        size_t bl = strlen(base);
        if (!above && place[0] &&
            (!bl || (!strncmp(place, base, bl) && place[bl] == '/')))
            r = copy_refs(p, place);
        free(place);
    }
    return r;
}

/* The references of the group at `base` (io rooted there): the files of
 * its __group and __meta folders, and each member whose place is inside
 * the group's folder (a relative uri), as an array or group of its own.
 * The members of an encrypted group cannot be read without its key: each
 * folder of the group's folder that is an array or a group is then
 * checked as one. */
static int copy_refs_group(struct copy_pass *p, const struct tdb_io *io,
                           const char *base)
{
    struct tdb_group *g = NULL;
    char *why = NULL;
    int r;

    if (asprintf(&why, "the group %s", base[0] ? base : "at the root") < 0)
        return tdb_err(p->err, TDB_E_NOMEM, "out of memory");
    r = copy_refs_group_files(p, io, base, why);
    if (!r &&
        (r = tdb_group_load_key(io, "", (struct tdb_ts_window){0, UINT64_MAX},
                                p->key, &g, p->err)) == TDB_E_NOKEY) {
        tdb_error_clear(p->err);
        r = copy_refs_folders(p, io, base);
    }
    if (!r && g)
        r = copy_refs_members(p, base, g);
    tdb_group_free(g);
    free(why);
    return r;
}

static int copy_refs(struct copy_pass *p, const char *base)
{
    struct tdb_io sub;
    const struct tdb_io *io = p->io;
    int r;

    if (base[0]) {
        if ((r = tdb_io_sub(&sub, p->io, base)))
            return tdb_err(p->err, r, "out of memory");
        io = &sub;
    }
    bool array = tdb_is_array(io, ""), group = !array && tdb_is_group(io, "");
    r = base[0] && p->pl && (array || group) ? copy_walk_path(p->pl, base) : 0;
    if (!r && array)
        r = copy_refs_array(p, io, base);
    else if (!r && group)
        r = copy_refs_group(p, io, base);
    if (base[0])
        tdb_io_free(&sub);
    return r;
}

/* ------------------------------------------------------------ the copy */

/* Copies file `path`, COPY_CHUNK bytes at a time, and syncs it. */
static int copy_file(const struct tdb_io *src, const struct tdb_io *dst,
                     const char *path, uint8_t *buf, uint64_t *bytes,
                     struct tdb_error *err)
{
    uint64_t size, off = 0;
    int r = src->ops->size(src->ctx, path, &size);

    if (r)
        return tdb_err(err, r, "reading %s: %s", path, tdb_strerror(r));
    /* on one object store: a copy there, none of its bytes through here */
    if (dst->ops->copy_from &&
        (r = dst->ops->copy_from(dst->ctx, src, path, path)) !=
            TDB_E_UNSUPPORTED) {
        if (r)
            return tdb_err(err, r, "copying %s: %s", path, tdb_strerror(r));
        *bytes += size;
        return 0;
    }
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

/* The root of dst is missing (*missing) or an empty folder; nothing is
 * written. */
static int copy_dst_ready(const struct tdb_io *dst, bool *missing,
                          struct tdb_error *err)
{
    struct tdb_names n;
    int r;

    *missing = !tdb_io_exists(dst, "");
    if (*missing)
        return 0;
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

/* The phases of a copy: the files that are no commit files; the commit
 * files but the vacuum files (which hide the fragments they name from
 * TileDB's readers: they go once the fragments replacing those are
 * committed); the vacuum files. */
enum copy_phase { COPY_DATA, COPY_COMMITS, COPY_VACS };

static enum copy_phase copy_phase_of(const char *path)
{
    size_t n = strlen(path);
    if (!copy_is_commit(path))
        return COPY_DATA;
    return n > 4 && !strcmp(path + n - 4, ".vac") ? COPY_VACS : COPY_COMMITS;
}

/* The copy of one phase's files, COPY_JOBS at a time. */
struct copy_data {
    const struct copy_plan *pl;
    const struct tdb_io *dst;
    uint64_t files, bytes;      /* added to atomically */
    int failed;                 /* set atomically: the copies after it
                                 * stop at once */
    enum copy_phase phase;      /* the files copied now */
};

static int copy_data_one(void *arg, size_t i, struct tdb_error *err)
{
    struct copy_data *d = arg;
    const char *path = d->pl->files.v[i];
    uint64_t bytes = 0;
    uint8_t *buf;

    if (copy_phase_of(path) != d->phase ||
        __atomic_load_n(&d->failed, __ATOMIC_RELAXED))
        return 0;
    if (!(buf = malloc(COPY_CHUNK)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    int r = copy_file(d->pl->src, d->dst, path, buf, &bytes, err);
    free(buf);
    if (!r) {
        __atomic_add_fetch(&d->files, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&d->bytes, bytes, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&d->failed, 1, __ATOMIC_RELAXED);
    }
    return r;
}

/* Makes the folders, then copies the files, commit files last, vacuum
 * files after them: COPY_JOBS at a time within each phase. */
static int copy_run(const struct copy_plan *pl, const struct tdb_io *dst,
                    bool make_root, struct tdb_copy_stats *st,
                    struct tdb_error *err)
{
    int r = make_root ? dst->ops->mkdir(dst->ctx, "") : 0;

    if (r)
        return tdb_err(err, r, "cannot make the destination folder: %s",
                       tdb_strerror(r));
    for (size_t i = 0; i < pl->dirs.n; i++)
        if ((r = dst->ops->mkdir(dst->ctx, pl->dirs.v[i])))
            return tdb_err(err, r, "cannot make folder %s in the "
                           "destination: %s", pl->dirs.v[i], tdb_strerror(r));
    struct copy_data d = {.pl = pl, .dst = dst};
    for (d.phase = COPY_DATA; !r && d.phase <= COPY_VACS; d.phase++)
        r = tdb_pool_each(COPY_JOBS, pl->files.n, copy_data_one, &d, err);
    st->files += d.files;
    st->bytes += d.bytes;
    return r;
}

/* The copy names, through its own references, every file the source's
 * name (a commit that did not arrive leaves its fragment unnamed). */
static int copy_compare(const struct copy_set *src, const struct copy_set *dst,
                        struct tdb_error *err)
{
    size_t at;
    for (size_t i = 0; i < src->n; i++)
        if (src->size[i] && !copy_set_find(dst, src->v[i], &at))
            return tdb_err(err, TDB_E_IO, "the copy is incomplete: %s, "
                           "named by %s in the source, is not named in the "
                           "copy", src->v[i], src->why[i]);
    return 0;
}

int tdb_array_copy(const struct tdb_io *src, const struct tdb_io *dst,
                   const uint8_t *key, struct tdb_copy_stats *st,
                   struct tdb_error *err)
{
    struct copy_plan pl = {.src = src, .err = err};
    struct copy_pass ps = {.io = src, .key = key, .pl = &pl, .err = err};
    struct copy_pass pd = {.io = dst, .key = key, .err = err};
    bool missing;
    int r;

    memset(st, 0, sizeof *st);
    if (!dst->ops->write_at || !dst->ops->mkdir)
        return tdb_err(err, TDB_E_ROFS, "the destination is read-only");
    if (!tdb_is_array(src, "") && !tdb_is_group(src, ""))
        return tdb_err(err, TDB_E_INVAL, "the source is not a TileDB array "
                       "or group");
    if ((r = copy_dst_ready(dst, &missing, err)) ||
        (r = copy_walk(&pl, "")))
        goto out;
    pl.listed = pl.files.n;
    if ((r = copy_refs(&ps, "")))
        goto out;
    st->unlisted = pl.files.n - pl.listed;
    if ((r = copy_run(&pl, dst, missing, st, err)))
        goto out;
    /* every listing of dst the check makes, from one listing ahead */
    tdb_io_prefetch(dst, &(struct tdb_io_want){TDB_WANT_TREE, "", 0, 0}, 1);
    if (!(r = copy_refs(&pd, "")))
        r = copy_compare(&ps.need, &pd.need, err);
out:
    copy_set_free(&pl.files);
    copy_set_free(&pl.dirs);
    copy_set_free(&ps.need);
    copy_set_free(&pd.need);
    return r;
}
