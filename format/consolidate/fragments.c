/* fragments.c: fragment consolidation (sm.consolidation.mode=fragments)
 * and its vacuum, as TileDB's fragment consolidator leaves an array with
 * its default configuration (one step over every live fragment:
 * fragment_consolidator.cc's compute_next_to_consolidate with min and max
 * fragments unbounded).  The reader feeds the writer: the merged cells
 * are the staged files of one tdb_fragment_write, read through the
 * tile cache as the writer asks for them, so that nothing but the cache
 * and the writer's tiles is held whatever the array's size.  The new
 * fragment is named for the span of the merged fragments' timestamps;
 * then __commits/<its name>.vac names them (vacuum_file.md), and readers
 * leave them out. */
#include "consolidate/cons.h"
#include "model/mount_names.h"
#include "read/view.h"
#include "write/writer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------- the staged folder */

/* The folder the writer reads, "cons/": the merged view's field files
 * and the special fields of a sparse consolidation (__timestamps, ...),
 * made once before the write; the small files the writer writes there
 * itself (its marker) go to an in-memory backend (tdb_io_mem). */
#define CF_DIR "cons"

enum cf_kind { CF_FIELD, CF_TIMESTAMPS, CF_DELETE_TS, CF_DELETE_INDEX };

struct cf_file {
    char *name;
    enum cf_kind kind;
    struct tdb_fieldfile ff;    /* CF_FIELD */
};

struct cf_stage {
    struct tdb_array *arr;
    struct tdb_cells *cells;
    struct cf_file *f;
    size_t n, cap;
    const struct tdb_cell_delete *dels;  /* the deleted cells, in order */
    size_t ndels;
    uint64_t *cond_pos;         /* delete commit i's place in `processed` */
    struct tdb_io mem;          /* the writer's own files */
    pthread_mutex_t lock;       /* rc and err */
    int rc;                     /* the first failed read, its message in err */
    struct tdb_error err;
};

static struct cf_file *cf_find(struct cf_stage *st, const char *path)
{
    size_t dl = sizeof CF_DIR - 1;
    if (strncmp(path, CF_DIR "/", dl + 1))
        return NULL;
    for (size_t i = 0; i < st->n; i++)
        if (!strcmp(st->f[i].name, path + dl + 1))
            return &st->f[i];
    return NULL;
}

static struct cf_file *cf_add(struct cf_stage *st, const char *name,
                              enum cf_kind kind)
{
    if (st->n == st->cap) {
        size_t c = st->cap ? 2 * st->cap : 16;
        struct cf_file *nf = realloc(st->f, c * sizeof *nf);
        if (!nf)
            return NULL;
        st->f = nf;
        st->cap = c;
    }
    struct cf_file *f = &st->f[st->n];
    memset(f, 0, sizeof *f);
    if (!(f->name = strdup(name)))
        return NULL;
    f->kind = kind;
    st->n++;
    return f;
}

/* Keeps the first failure of a read the writer asked for: the writer
 * only hears its code, the message names the fragment and the tile. */
static int cf_failed(struct cf_stage *st, int rc, const struct tdb_error *e)
{
    pthread_mutex_lock(&st->lock);
    if (!st->rc) {
        st->rc = rc;
        st->err = *e;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* Timestamps of cells [first, first + n) of the view into ts[]: the
 * fragment's per-cell timestamps when it has them (a consolidated one),
 * else the fragment's time. */
static int cf_timestamps(struct cf_stage *st, uint64_t first, uint64_t n,
                         uint64_t *ts, struct tdb_error *err)
{
    struct tdb_run rv[64];
    uint64_t done = 0;
    while (done < n) {
        struct tdb_runs runs = {rv, 64, 0};
        int r = st->cells->ops->runs(st->cells, first + done, n - done, &runs,
                                     err);
        if (r)
            return r;
        if (!runs.n)
            return tdb_err(err, TDB_E_IO, "__timestamps: no cells there");
        for (size_t i = 0; i < runs.n; i++) {
            struct tdb_frag *f = rv[i].frag;
            uint64_t c = rv[i].fcell, k = 0, cnt = rv[i].count;
            int field = f ? tdb_fragmeta_ts_field(f->fm) : -1;
            while (k < cnt && field < 0)
                ts[done + k++] = f ? f->fm->t1 : 0;
            while (k < cnt) {
                uint64_t tfirst, t = tdb_frag_tile_of(f, c + k, &tfirst);
                struct tdb_cache_entry *e;
                const struct tdb_tile *tile;
                const struct tdb_tile_ref ref = {f, field, TDB_PART_VALUES, t};
                if ((r = tdb_frag_tile(&ref, &e, &tile, err)))
                    return r;
                uint64_t in = c + k - tfirst, tn = tile->size / 8;
                if (in >= tn) {
                    tdb_cache_release(f->arr->cache, e);
                    return tdb_err(err, TDB_E_CORRUPT, "%s: timestamps tile "
                                   "%llu: %llu cells, cell %llu wanted",
                                   f->fm->path, (unsigned long long)t,
                                   (unsigned long long)tn,
                                   (unsigned long long)in);
                }
                for (; k < cnt && in < tn; k++, in++)
                    memcpy(&ts[done + k], tile->data + 8 * in, 8);
                tdb_cache_release(f->arr->cache, e);
            }
            done += cnt;
        }
    }
    return 0;
}

/* The delete timestamps (or, with index, the processed delete's place)
 * of cells [first, first + n) into v[]: UINT64_MAX where no delete
 * removed the cell. */
static void cf_deletes(const struct cf_stage *st, uint64_t first, uint64_t n,
                       bool index, uint64_t *v)
{
    size_t lo = 0, hi = st->ndels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->dels[mid].cell < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint64_t i = 0; i < n; i++)
        v[i] = UINT64_MAX;
    for (; lo < st->ndels && st->dels[lo].cell < first + n; lo++) {
        const struct tdb_cell_delete *d = &st->dels[lo];
        v[d->cell - first] = !index ? d->when
                             : d->cond == UINT64_MAX ? UINT64_MAX
                                                     : st->cond_pos[d->cond];
    }
}

static int cf_read_ts(struct cf_stage *st, enum cf_kind kind, uint64_t off,
                      uint8_t *buf, size_t len, struct tdb_error *err)
{
    uint64_t ts[512];
    while (len) {
        uint64_t first = off / 8, skip = off % 8;
        uint64_t n = (skip + len + 7) / 8;
        if (n > 512)
            n = 512;
        if (first + n > st->cells->ncells)
            return tdb_err(err, TDB_E_IO, "__timestamps: read past its end");
        int r = 0;
        if (kind == CF_TIMESTAMPS)
            r = cf_timestamps(st, first, n, ts, err);
        else
            cf_deletes(st, first, n, kind == CF_DELETE_INDEX, ts);
        if (r)
            return r;
        size_t take = (size_t)(n * 8 - skip);
        if (take > len)
            take = len;
        memcpy(buf, (uint8_t *)ts + skip, take);
        buf += take;
        off += take;
        len -= take;
    }
    return 0;
}

static int cf_read_at(void *ctx, const char *path, uint64_t off, void *buf,
                      size_t len)
{
    struct cf_stage *st = ctx;
    struct cf_file *f = cf_find(st, path);
    struct tdb_error err;
    int r = 0;
    tdb_error_clear(&err);
    if (!f)
        return st->mem.ops->read_at(st->mem.ctx, path, off, buf, len);
    if (f->kind != CF_FIELD)
        r = cf_read_ts(st, f->kind, off, buf, len, &err);
    while (!r && f->kind == CF_FIELD && len) {
        size_t got = 0;
        r = tdb_fieldfile_read(&f->ff, off, buf, len, &got, &err);
        if (!r && !got)
            r = tdb_err(&err, TDB_E_IO, "%s: read past its end", f->name);
        buf = (uint8_t *)buf + got;
        off += got;
        len -= got;
    }
    return r ? cf_failed(st, r, &err) : 0;
}

static int cf_size(void *ctx, const char *path, uint64_t *size)
{
    struct cf_stage *st = ctx;
    struct cf_file *f = cf_find(st, path);
    struct tdb_error err;
    tdb_error_clear(&err);
    if (!f)
        return st->mem.ops->size(st->mem.ctx, path, size);
    if (f->kind != CF_FIELD) {
        *size = st->cells->ncells * 8;
        return 0;
    }
    int r = tdb_fieldfile_size(&f->ff, size, &err);
    return r ? cf_failed(st, r, &err) : 0;
}

static int cf_list(void *ctx, const char *path, tdb_io_list_fn fn, void *arg)
{
    struct cf_stage *st = ctx;
    if (strcmp(path, CF_DIR))
        return TDB_E_NOENT;
    for (size_t i = 0; i < st->n; i++) {
        struct tdb_dirent de = {st->f[i].name, false};
        int r = fn(arg, &de);
        if (r)
            return r;
    }
    int r = st->mem.ops->list(st->mem.ctx, path, fn, arg);
    return r == TDB_E_NOENT ? 0 : r; /* (nothing written there yet) */
}

static int cf_is_dir(void *ctx, const char *path, bool *is_dir)
{
    struct cf_stage *st = ctx;
    *is_dir = !strcmp(path, CF_DIR);
    if (*is_dir || cf_find(st, path))
        return 0;
    return st->mem.ops->is_dir(st->mem.ctx, path, is_dir);
}

/* The writer's own files go to st->mem; the view's are not its to
 * change. */
static int cf_write_at(void *ctx, const char *path, uint64_t off,
                       const void *buf, size_t len)
{
    struct cf_stage *st = ctx;
    return cf_find(st, path) ? TDB_E_INVAL
                             : st->mem.ops->write_at(st->mem.ctx, path, off,
                                                     buf, len);
}

static int cf_remove(void *ctx, const char *path)
{
    struct cf_stage *st = ctx;
    return cf_find(st, path) ? TDB_E_INVAL
                             : st->mem.ops->remove(st->mem.ctx, path);
}

static int cf_sync(void *ctx, const char *path)
{
    (void)ctx;
    (void)path;
    return 0;
}

static const struct tdb_io_ops cf_ops = {
    .read_at = cf_read_at,
    .size = cf_size,
    .list = cf_list,
    .is_dir = cf_is_dir,
    .write_at = cf_write_at,
    .remove = cf_remove,
    .sync = cf_sync,
};

static void cf_stage_free(struct cf_stage *st)
{
    for (size_t i = 0; i < st->n; i++) {
        if (st->f[i].kind == CF_FIELD)
            tdb_fieldfile_destroy(&st->f[i].ff);
        free(st->f[i].name);
    }
    free(st->f);
    free(st->cond_pos);
    tdb_io_free(&st->mem);
    pthread_mutex_destroy(&st->lock);
}

/* Adds the files of field idx (an attribute, or with is_dim a
 * dimension) of the schema in force, as the mount names them. */
static int cf_add_field(struct cf_stage *st, bool is_dim, uint32_t idx,
                        struct tdb_error *err)
{
    const struct tdb_schema *s = st->arr->schema;
    const char *name = is_dim ? s->dims[idx].name : s->attrs[idx].name;
    uint32_t cvn = is_dim ? s->dims[idx].cell_val_num
                          : s->attrs[idx].cell_val_num;
    bool nullable = !is_dim && s->attrs[idx].nullable;
    static const char *const suffix[3] = {"", ".offsets", ".validity"};
    static const enum tdb_field_part part[3] = {
        TDB_FILE_VALUES, TDB_FILE_OFFSETS, TDB_FILE_VALIDITY};
    for (int p = 0; p < 3; p++) {
        if ((p == 1 && cvn != TDB_VAR_NUM) || (p == 2 && !nullable))
            continue;
        char *nm = tdb_mount_name(name, suffix[p]);
        struct cf_file *f = nm ? cf_add(st, nm, CF_FIELD) : NULL;
        free(nm);
        if (!f)
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        tdb_fieldfile_init(&f->ff, st->cells, st->arr,
                           &(struct tdb_field_ref){s, is_dim, idx}, part[p]);
    }
    return 0;
}

/* ------------------------------------------------------- the choice */

/* Cells of the box lo..hi (offsets), as a double (TileDB compares the
 * ratio of such counts). */
static double cf_cells(uint32_t nd, const uint64_t *lo, const uint64_t *hi)
{
    double c = 1;
    for (uint32_t d = 0; d < nd; d++)
        c *= (double)(hi[d] - lo[d]) + 1;
    return c;
}

/* Whether TileDB consolidates the dense fragments of a: the merged
 * fragment covers the box around their non-empty domains, and TileDB
 * takes them only when that box has no more cells than their non-empty
 * domains expanded to whole space tiles (not expanded under a current
 * domain) have together (sm.consolidation.amplification 1.0).  The box is the
 * union in *lo, *hi. */
static bool cf_dense_ok(const struct tdb_array *a, uint64_t *lo, uint64_t *hi)
{
    const struct tdb_schema *s = a->schema;
    uint32_t nd = s->ndims;
    double sum = 0;
    for (size_t i = 0; i < a->nfrags; i++) {
        const struct tdb_frag *f = &a->frags[i];
        uint64_t elo[TDB_MAX_DIMS], ehi[TDB_MAX_DIMS];
        for (uint32_t d = 0; d < nd; d++) {
            if (!i || f->ned_lo[d] < lo[d])
                lo[d] = f->ned_lo[d];
            if (!i || f->ned_hi[d] > hi[d])
                hi[d] = f->ned_hi[d];
            /* TileDB 2.29 expands nothing when the fragment's schema has a
             * current domain (CurrentDomain::expand_to_tiles sets the
             * range of a copy), so neither do we */
            bool cd = f->fs->has_current_domain && f->fs->current_domain;
            uint64_t ext = f->ext[d] && !cd ? f->ext[d] : 1;
            elo[d] = f->ned_lo[d] / ext * ext;
            ehi[d] = f->ned_hi[d] / ext * ext + (ext - 1);
            if (ehi[d] < elo[d])
                ehi[d] = UINT64_MAX;
        }
        sum += cf_cells(nd, elo, ehi);
    }
    return cf_cells(nd, lo, hi) / sum <= 1.0;
}

/* ------------------------------------------------------ consolidation */

static int cf_str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The processed delete conditions of the new fragment: every delete
 * commit of the array as TileDB marks one ("__commits/NAME.del"), sorted,
 * into *out (a->nconds of them), and each commit's place among them. */
static int cf_processed(const struct tdb_array *a, struct cf_stage *st,
                        char ***out, struct tdb_error *err)
{
    size_t n = a->nconds;
    char **p = calloc(n ? n : 1, sizeof *p);
    st->cond_pos = calloc(n ? n : 1, sizeof *st->cond_pos);
    *out = p;
    if (!p || !st->cond_pos)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(a->cond_ents[i].name) + sizeof "__commits/.del";
        if (!(p[i] = malloc(len)))
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        snprintf(p[i], len, "__commits/%s.del", a->cond_ents[i].name);
    }
    qsort(p, n, sizeof *p, cf_str_cmp);
    for (size_t i = 0; i < n; i++) {
        char want[TDB_MAX_NAME + 32];
        snprintf(want, sizeof want, "__commits/%s.del", a->cond_ents[i].name);
        char *key = want;
        char **hit = bsearch(&key, p, n, sizeof *p, cf_str_cmp);
        st->cond_pos[i] = hit ? (uint64_t)(hit - p) : UINT64_MAX;
    }
    return 0;
}

/* The .vac's bytes: each merged fragment, "/__fragments/NAME\n"
 * (relative, as TileDB writes them from format 19 on). */
static int cf_vac(const struct tdb_array *a, struct tdb_buf *out)
{
    for (size_t i = 0; i < a->nfrags; i++) {
        int r = tdb_buf_append(out, "/", 1);
        if (!r)
            r = tdb_buf_append(out, a->frags[i].fm->path,
                               strlen(a->frags[i].fm->path));
        if (!r)
            r = tdb_buf_append(out, "\n", 1);
        if (r)
            return r;
    }
    return 0;
}

/* What the writer's `named` call writes: the .vac, under its temporary
 * name, before the fragment exists (cf_finish renames it once the
 * fragment is committed, or removes both). */
struct cf_named {
    const struct tdb_io *io;
    const struct tdb_buf *vac;
    char tmp[256], final[256];
};

static int cf_named(void *arg, const char *name, struct tdb_error *err)
{
    struct cf_named *nm = arg;
    const struct tdb_io_ops *ops = nm->io->ops;
    int n = snprintf(nm->tmp, sizeof nm->tmp, ".%s" TDB_VAC_PENDING, name);
    int m = snprintf(nm->final, sizeof nm->final, "__commits/%s.vac", name);
    if (n < 0 || (size_t)n >= sizeof nm->tmp || m < 0 ||
        (size_t)m >= sizeof nm->final)
        return tdb_err(err, TDB_E_INVAL, "%s: name too long", name);
    int r = ops->write_at(nm->io->ctx, nm->tmp, 0, nm->vac->data,
                          nm->vac->len);
    if (!r && ops->sync)
        r = ops->sync(nm->io->ctx, nm->tmp);
    return r ? tdb_err(err, r, "%s: cannot write: %s", nm->tmp,
                       tdb_strerror(r))
             : 0;
}

/* Finishes the fragment consolidations a kill stopped: a temporary .vac
 * whose fragment is committed (as the reader counts it, model/arraydir.c) is renamed into place (the merged
 * fragments then leave every view, as they would have); one whose
 * fragment is not is removed with what the writer made of the fragment.
 * Then the other modes' temporary files (tdb_cons_sweep). */
static int cf_finish(const struct tdb_io *io, const uint8_t *key,
                     struct tdb_cons_result *res, struct tdb_error *err)
{
    struct tdb_arraydir *d = NULL;
    int r = tdb_arraydir_load(io, 0, UINT64_MAX, &d, err);
    for (size_t v = 0; !r && v < d->nvacs; v++) {
        const struct tdb_arraydir_vac *vac = &d->vacs[v];
        if (!vac->pending)
            continue;
        char path[300];
        if (tdb_arraydir_cand(d, vac->e.name)) {
            snprintf(path, sizeof path, "__commits/%s.vac", vac->e.name);
            if ((r = io->ops->rename(io->ctx, vac->e.path, path)))
                r = tdb_err(err, r, "cannot rename %s to %s: %s",
                            vac->e.path, path, tdb_strerror(r));
            continue;
        }
        struct tdb_cons_result one;
        r = tdb_fragment_delete(io, vac->e.name, key, &one, err);
        if (r == TDB_E_NOENT) {
            tdb_error_clear(err);
            r = 0;
        }
        if (!r) {
            res->removed += one.removed;
            r = tdb_cons_remove(io, vac->e.path, res, err);
        }
    }
    tdb_arraydir_free(d);
    return r ? r : tdb_cons_sweep(io, res, err);
}

/* The tile cache (o's size) and the array at the root of io, after
 * finishing what a kill stopped. */
static int cf_open(const struct tdb_io *io, const struct tdb_cons_options *o,
                   struct tdb_cons_result *res, struct tdb_cache **cache,
                   struct tdb_array **a, struct tdb_error *err)
{
    struct tdb_open_options oo;
    tdb_open_options_init(&oo);
    oo.key = o->key;
    oo.threads = o->threads;
    int r = cf_finish(io, o->key, res, err);
    if (!r)
        r = tdb_cache_create(cache, o->cache_bytes ? o->cache_bytes
                                                   : TDB_CONS_CACHE_BYTES);
    if (r == TDB_E_NOMEM)
        r = tdb_err(err, r, "out of memory");
    if (!r)
        r = tdb_array_open(a, io, "", &oo, *cache, err);
    return r;
}

/* TDB_E_UNSUPPORTED unless a and all its fragments are of format 19 or
 * later. */
static int cf_formats(const struct tdb_array *a, struct tdb_error *err)
{
    for (size_t i = 0; i < a->nfrags; i++)
        if (a->frags[i].fm->version < 19 || a->schema->version < 19)
            return tdb_err(err, TDB_E_UNSUPPORTED, "%s: fragments of format "
                           "%u: only those of format 19 and later are "
                           "consolidated", a->frags[i].fm->path,
                           a->frags[i].fm->version);
    return 0;
}

/* Whether the new fragment of sparse array a has delete metadata, as
 * TileDB keeps it: when a delete commit is not older than the first
 * fragment, or a fragment has some; then *proc its processed conditions
 * (cf_processed). */
static int cf_delete_meta(const struct tdb_array *a, struct cf_stage *st,
                          char ***proc, bool *delete_meta,
                          struct tdb_error *err)
{
    int r = 0;
    *delete_meta = false;
    for (size_t i = 0; i < a->nconds; i++)
        *delete_meta |= a->cond_ents[i].ts.t1 >= a->frags[0].fm->t1;
    for (size_t i = 0; i < a->nfrags && !r; i++)
        if (a->frags[i].fm->has_delete_meta) {
            *delete_meta = true;
            r = tdb_fragmeta_load_processed(a->frags[i].fm, err);
        }
    if (!r && *delete_meta)
        r = cf_processed(a, st, proc, err);
    return r;
}

/* The merged view of every fragment of a in st->cells: dense, of region
 * lo..hi (x's), or sparse with every version of a cell.  *leave when
 * TileDB leaves dense fragments as they are (cf_dense_ok). */
static int cf_view(struct tdb_array *a, struct cf_stage *st,
                   struct tdb_write_extras *x, uint64_t *lo, uint64_t *hi,
                   bool *leave, struct tdb_error *err)
{
    struct tdb_frag **all = calloc(a->nfrags, sizeof *all);
    int r;
    *leave = false;
    if (!all)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < a->nfrags; i++)
        all[i] = &a->frags[i];
    if (a->schema->array_type == TDB_DENSE) {
        if (!cf_dense_ok(a, lo, hi)) {
            free(all);
            *leave = true;
            return 0;
        }
        x->rlo = lo;
        x->rhi = hi;
        r = tdb_cells_dense(&st->cells, a, lo, hi,
                            &(struct tdb_frag_list){all, a->nfrags}, err);
    } else {
        x->timestamps = true;
        r = tdb_cells_sparse_versions(&st->cells, a, all, a->nfrags, err);
    }
    free(all);
    st->arr = a;
    return r;
}

/* The files of the staged folder: each field's, and for a sparse array
 * the timestamps (and delete metadata). */
static int cf_stage_fields(struct cf_stage *st, bool delete_meta,
                           struct tdb_error *err)
{
    const struct tdb_schema *s = st->arr->schema;
    bool dense = s->array_type == TDB_DENSE;
    int r = tdb_cells_prepare(st->cells, err);
    for (uint32_t i = 0; !r && i < s->nattrs; i++)
        r = cf_add_field(st, false, i, err);
    for (uint32_t d = 0; !r && !dense && d < s->ndims; d++)
        r = cf_add_field(st, true, d, err);
    if (!r && !dense && !cf_add(st, "__timestamps", CF_TIMESTAMPS))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!r && delete_meta) {
        st->ndels = tdb_cells_sparse_deletes(st->cells, &st->dels);
        if (!cf_add(st, "__delete_timestamps", CF_DELETE_TS) ||
            !cf_add(st, "__delete_condition_index", CF_DELETE_INDEX))
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    return r;
}

/* Writes the new fragment of st's view (extras x) at the newest time of
 * the fragments it merges, then publishes its .vac: res the outcome. */
static int cf_write(const struct tdb_io *io, const struct tdb_cons_options *o,
                    struct cf_stage *st, struct tdb_write_extras *x,
                    struct tdb_cons_result *res, struct tdb_error *err)
{
    const struct tdb_array *a = st->arr;
    struct tdb_buf vac = {0};
    uint64_t t2 = 0;
    for (size_t i = 0; i < a->nfrags; i++)
        if (a->frags[i].fm->t2 > t2)
            t2 = a->frags[i].fm->t2;
    int r = cf_vac(a, &vac);
    if (r)
        return tdb_err(err, r, "out of memory");
    struct cf_named nmd = {.io = io, .vac = &vac};
    x->named = cf_named;
    x->named_arg = &nmd;
    struct tdb_io staged = {&cf_ops, st};
    struct tdb_fragment_req rq = {io, &staged, CF_DIR, o->key, t2,
                                  o->threads, x};
    char *name = NULL;
    r = tdb_fragment_write(&rq, &name, err);
    if (r && st->rc) {
        /* the reason a read failed, rather than the writer's word for it */
        *err = st->err;
        r = st->rc;
    }
    if (r && nmd.tmp[0]) /* the writer removed what it wrote */
        io->ops->remove(io->ctx, nmd.tmp);
    if (!r) {
        snprintf(res->name, sizeof res->name, "__fragments/%s", name);
        free(name);
        if ((r = io->ops->rename(io->ctx, nmd.tmp, nmd.final)))
            r = tdb_err(err, r, "cannot rename %s to %s: %s", nmd.tmp,
                        nmd.final, tdb_strerror(r));
        else if (io->ops->sync)
            io->ops->sync(io->ctx, "__commits"); /* (published: no undoing) */
    }
    if (!r)
        res->merged = a->nfrags;
    tdb_buf_free(&vac);
    return r;
}

int tdb_consolidate_fragments(const struct tdb_io *io,
                              const struct tdb_cons_options *o,
                              struct tdb_cons_result *res,
                              struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->write_at || !io->ops->rename || !io->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_cache *cache = NULL;
    struct tdb_array *a = NULL;
    struct cf_stage st = {0};
    char **proc = NULL;
    pthread_mutex_init(&st.lock, NULL);
    if (tdb_io_mem(&st.mem)) {
        pthread_mutex_destroy(&st.lock);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    int r = cf_open(io, o, res, &cache, &a, err);
    if (r || a->nfrags < 2)
        goto out;
    bool dense = a->schema->array_type == TDB_DENSE, leave = false;
    bool delete_meta = false;
    if (!(r = cf_formats(a, err)) && !dense)
        r = cf_delete_meta(a, &st, &proc, &delete_meta, err);
    uint64_t lo[TDB_MAX_DIMS], hi[TDB_MAX_DIMS];
    struct tdb_write_extras x = {.t1 = a->frags[0].fm->t1, .exact_time = true,
                                 .delete_meta = delete_meta,
                                 .processed = (const char *const *)proc,
                                 .nprocessed = delete_meta ? a->nconds : 0};
    if (!r)
        r = cf_view(a, &st, &x, lo, hi, &leave, err);
    if (!r && !leave && !(r = cf_stage_fields(&st, delete_meta, err)))
        r = cf_write(io, o, &st, &x, res, err);
out:
    if (r)
        res->name[0] = 0;
    for (size_t i = 0; proc && i < a->nconds; i++)
        free(proc[i]);
    free(proc);
    cf_stage_free(&st);
    if (st.cells)
        tdb_cells_free(st.cells);
    if (a)
        tdb_array_close(a);
    if (cache)
        tdb_cache_free(cache);
    return r;
}

/* ------------------------------------------------------------ vacuum */

/* Removes the fragments vacuum file `vac` names (each as
 * tdb_fragment_delete does: its commit first, then its folder), then the
 * .vac. */
static int cf_vacuum_one(const struct tdb_io *io,
                         const struct tdb_arraydir_vac *vac,
                         const uint8_t *key, struct tdb_cons_result *res,
                         struct tdb_error *err)
{
    int r = 0;
    for (size_t k = 0; !r && k < vac->nitems; k++) {
        const char *nm = strrchr(vac->items[k], '/');
        struct tdb_cons_result one;
        r = tdb_fragment_delete(io, nm ? nm + 1 : vac->items[k], key, &one,
                                err);
        if (r == TDB_E_NOENT) {
            tdb_error_clear(err);
            r = 0; /* removed before */
        } else if (!r) {
            res->removed += one.removed;
        }
    }
    return r ? r : tdb_cons_remove(io, vac->e.path, res, err);
}

int tdb_vacuum_fragments(const struct tdb_io *io, const uint8_t *key,
                         struct tdb_cons_result *res, struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_arraydir *d = NULL;
    int r = cf_finish(io, key, res, err);
    if (!r)
        r = tdb_arraydir_load(io, 0, UINT64_MAX, &d, err);
    /* only the .vac files whose fragment is committed: readers leave out
     * what those name, so removing it shows nobody a missing cell */
    for (size_t v = 0; !r && v < d->nvacs; v++) {
        const struct tdb_arraydir_vac *vac = &d->vacs[v];
        if (!vac->pending && !strncmp(vac->e.path, "__commits/", 10) &&
            tdb_arraydir_cand(d, vac->e.name))
            r = cf_vacuum_one(io, vac, key, res, err);
    }
    tdb_arraydir_free(d);
    return r;
}
