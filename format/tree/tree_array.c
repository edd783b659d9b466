/* tree_array.c: an array's folder of the mount contract (docs/LAYOUT.md):
 * __array.json, __fragments/ with a folder per fragment, the data files
 * of the merged view, their NAME.npy, __slice/ and __domain/. */
#include "tree/tree_priv.h"
#include "tree/reader.h"
#include "tree/json.h"
#include "tree/npy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* A cell view whose fields' data files go in folder dir. */
struct tree_view {
    uint64_t dir;
    struct tdb_array *a;
    const struct tdb_schema *s;
    struct tdb_cells *cells;
    const char *shape;          /* dense: the shape of the view, or NULL */
    bool dims;                  /* the dimensions get files too (sparse) */
    uint64_t mtime;
};

/* The data files of one field of the view. */
static int tree_field(struct tdb_fs *fs, const struct tree_view *v,
                      bool is_dim, uint32_t idx)
{
    const struct tdb_schema *s = v->s;
    const char *shape = v->shape;
    const char *name = is_dim ? s->dims[idx].name : s->attrs[idx].name;
    unsigned type = is_dim ? s->dims[idx].type : s->attrs[idx].type;
    uint32_t cvn = is_dim ? s->dims[idx].cell_val_num : s->attrs[idx].cell_val_num;
    bool nullable = !is_dim && s->attrs[idx].nullable;
    enum tdb_field_part parts[3] = {TDB_FILE_VALUES, TDB_FILE_OFFSETS,
                                    TDB_FILE_VALIDITY};
    const char *suffix[3] = {"", ".offsets", ".validity"};
    for (int p = 0; p < 3; p++) {
        if (p == 1 && cvn != TDB_VAR_NUM)
            continue;
        if (p == 2 && !nullable)
            continue;
        char *fname = tdb_mount_name(name, suffix[p]);
        if (!fname)
            return TDB_E_NOMEM;
        uint64_t ino;
        int r = tree_add(fs, v->dir, fname, TREE_FIELD, &ino);
        free(fname);
        if (r)
            return r;
        struct tree_node *n = &fs->nodes[ino - 1];
        n->ff = calloc(1, sizeof *n->ff);
        if (!n->ff)
            return TDB_E_NOMEM;
        tdb_fieldfile_init(n->ff, v->cells, v->a,
                           &(struct tdb_field_ref){s, is_dim, idx}, parts[p]);
        n->has_xattrs = true;
        n->mtime_ms = v->mtime;
        if (p == 0) {
            n->datatype = tdb_dt_name(type);
            n->dtype = tdb_dt_numpy(type);
            n->cell_val_num = cvn;
        } else {
            n->datatype = p == 1 ? "UINT64" : "UINT8";
            n->dtype = p == 1 ? "<u8" : "|u1";
            n->cell_val_num = 1;
        }
        if (shape && (p != 0 || cvn != TDB_VAR_NUM)) {
            char buf[512];
            if (p == 0 && cvn > 1)
                snprintf(buf, sizeof buf, "%s,%u", shape, cvn);
            else
                snprintf(buf, sizeof buf, "%s", shape);
            if (!(n->shape_prefix = strdup(buf)))
                return TDB_E_NOMEM;
        }
    }
    return 0;
}

/* The data files of every attribute of the view and, when v->dims, of
 * every dimension. */
static int tree_fields(struct tdb_fs *fs, const struct tree_view *v)
{
    int r = 0;
    for (uint32_t k = 0; !r && k < v->s->nattrs; k++)
        r = tree_field(fs, v, false, k);
    for (uint32_t k = 0; !r && v->dims && k < v->s->ndims; k++)
        r = tree_field(fs, v, true, k);
    return r;
}

/* The node of the `part` file of the same field as data file node `of`
 * in folder dir, or 0. */
static uint64_t tree_part_of(struct tdb_fs *fs, uint64_t dir, uint64_t of,
                             enum tdb_field_part part)
{
    const struct tdb_fieldfile *v = fs->nodes[of - 1].ff;
    const struct tree_node *p = &fs->nodes[dir - 1];
    for (size_t i = 0; i < p->nkids; i++) {
        const struct tree_node *k = &fs->nodes[p->kids[i] - 1];
        if (k->kind == TREE_FIELD && k->ff->cells == v->cells &&
            k->ff->is_dim == v->is_dim && k->ff->idx == v->idx &&
            k->ff->part == part)
            return p->kids[i];
    }
    return 0;
}

/* NAME.npy next to data file `vino` (one tdb_npy_fits), unless the name
 * is taken: of shape dims[0..nd) (a dense view), or dims NULL (the
 * cells, counted at first use). */
static int tree_npy(struct tdb_fs *fs, uint64_t dir, uint64_t vino,
                    uint32_t nd, const uint64_t *dims)
{
    struct tree_node *v = &fs->nodes[vino - 1];
    size_t l = strlen(v->name);
    char *name = malloc(l + 5);
    if (!name)
        return TDB_E_NOMEM;
    memcpy(name, v->name, l);
    strcpy(name + l, ".npy");
    struct tree_node *p = &fs->nodes[dir - 1];
    for (size_t i = 0; i < p->nkids; i++) {
        if (!strcmp(fs->nodes[p->kids[i] - 1].name, name)) {
            free(name);
            return 0; /* a field is called NAME.npy */
        }
    }
    uint64_t offs = v->ff->var && v->ff->part == TDB_FILE_VALUES
                        ? tree_part_of(fs, dir, vino, TDB_FILE_OFFSETS) : 0;
    struct tdb_npy_src src = {v->ff, offs ? fs->nodes[offs - 1].ff : NULL,
                              nd, dims, false, NULL};
    struct tdb_npy *npy = NULL;
    uint64_t ino;
    int r = tdb_npy_new(&npy, &src, NULL);
    if (!r)
        r = tree_add(fs, dir, name, TREE_NPY, &ino);
    free(name);
    if (r) {
        tdb_npy_free(npy);
        return r;
    }
    struct tree_node *n = &fs->nodes[ino - 1];
    n->npy = npy;
    n->raw = vino;
    n->mtime_ms = fs->nodes[vino - 1].mtime_ms;
    return 0;
}

/* numpy's files of an array's view: NAME.npy for each data file that can
 * have one; for a dense view (shape vshape) __slice/ and __domain/. */
static int tree_numpy(struct tdb_fs *fs, uint64_t root, struct tdb_cells *view,
                      bool dense, uint64_t mtime)
{
    uint32_t nd = 0;
    uint64_t shape[TDB_MAX_DIMS];
    if (dense && !tdb_cells_dense_shape(view, &nd, shape))
        return 0;
    size_t nk = fs->nodes[root - 1].nkids;
    int r = 0;
    for (size_t i = 0; !r && i < nk; i++) {
        uint64_t kid = fs->nodes[root - 1].kids[i];
        struct tree_node *k = &fs->nodes[kid - 1];
        if (k->kind == TREE_FIELD && k->ff->cells == view &&
            tdb_npy_fits(k->ff))
            r = tree_npy(fs, root, kid, nd, dense ? shape : NULL);
    }
    static const char *const dirs[] = {"__slice", "__domain"};
    for (int i = 0; dense && !r && i < 2; i++) {
        uint64_t d;
        if (!(r = tree_add(fs, root, dirs[i], TREE_DIR, &d))) {
            fs->nodes[d - 1].made = i ? TREE_MADE_DOMAIN : TREE_MADE_SLICE;
            fs->nodes[d - 1].mtime_ms = mtime;
        }
    }
    return r;
}

/* The view region of a dense array (offsets from the domain's low bound):
 * the current domain, else the domain, else (over 2^48 cells) the
 * non-empty domain.  *empty when there is nothing to show. */
static const char *tree_region(struct tdb_array *a, uint64_t *lo, uint64_t *hi,
                               bool *empty)
{
    const struct tdb_schema *s = a->schema;
    *empty = false;
    if (s->has_current_domain && s->current_domain) {
        for (uint32_t d = 0; d < s->ndims; d++) {
            lo[d] = tdb_dim_offset(&s->dims[d], s->current_domain[d].lo);
            hi[d] = tdb_dim_offset(&s->dims[d], s->current_domain[d].hi);
        }
        return "current_domain";
    }
    long double cells = 1;
    for (uint32_t d = 0; d < s->ndims; d++) {
        lo[d] = 0;
        hi[d] = tdb_dim_offset(&s->dims[d], s->dims[d].hi);
        cells *= (long double)hi[d] + 1;
    }
    if (cells <= (long double)(UINT64_C(1) << 48))
        return "domain";
    if (!a->nfrags) {
        *empty = true;
        return "non_empty_domain";
    }
    for (uint32_t d = 0; d < s->ndims; d++) {
        lo[d] = UINT64_MAX;
        hi[d] = 0;
        for (size_t i = 0; i < a->nfrags; i++) {
            if (a->frags[i].ned_lo[d] < lo[d])
                lo[d] = a->frags[i].ned_lo[d];
            if (a->frags[i].ned_hi[d] > hi[d])
                hi[d] = a->frags[i].ned_hi[d];
        }
    }
    return "non_empty_domain";
}

static void tree_shape_str(const struct tdb_schema *s, const uint64_t *lo,
                           const uint64_t *hi, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (uint32_t d = 0; d < s->ndims && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRIu64, d ? "," : "",
                              hi[d] - lo[d] + 1);
}

static uint64_t tree_frag_bytes(struct tdb_fs *fs, struct tdb_array *a,
                                const struct tdb_frag *f)
{
    struct tdb_names n;
    uint64_t total = 0;
    if (tdb_io_names(&a->io, f->fm->path, &n, NULL))
        return 0;
    for (size_t i = 0; i < n.n; i++) {
        char *p = tdb_path_join(f->fm->path, n.v[i]);
        uint64_t sz;
        if (p && !a->io.ops->size(a->io.ctx, p, &sz))
            total += sz;
        free(p);
    }
    tdb_names_free(&n);
    return total;
}

/* The region the merged dense view shows (tree_region). */
struct tree_dense_region {
    uint64_t lo[TDB_MAX_DIMS], hi[TDB_MAX_DIMS];
    const char *source;
    bool empty;
    char shape[512];
};

/* The folder of fragment f in fdir: its __fragment.json and the data
 * files of its cells alone. */
static int tree_fragment(struct tdb_fs *fs, uint64_t fdir, struct tdb_array *a,
                         struct tdb_frag *f, struct tdb_error *err)
{
    const struct tdb_schema *s = a->schema;
    bool dense = s->array_type == TDB_DENSE;
    uint64_t dir, ino;
    int r = tree_add(fs, fdir, f->fm->name, TREE_DIR, &dir);
    if (r)
        return r;
    fs->nodes[dir - 1].mtime_ms = f->fm->t2;
    struct tdb_buf fj;
    if ((r = tdb_json_fragment(&fj, f, tree_frag_bytes(fs, a, f))))
        return r;
    r = tree_add_bytes(fs, dir, "__fragment.json", fj.data, fj.len, &ino);
    tdb_buf_free(&fj);
    if (r)
        return r;
    fs->nodes[ino - 1].mtime_ms = f->fm->t2;
    struct tdb_cells *fc = NULL;
    char fshape[512] = "";
    if (f->fm->dense) {
        uint64_t flo[TDB_MAX_DIMS], fhi[TDB_MAX_DIMS];
        for (uint32_t d = 0; d < s->ndims; d++) {
            flo[d] = f->ned_lo[d];
            fhi[d] = f->ned_hi[d];
        }
        tree_shape_str(s, flo, fhi, fshape, sizeof fshape);
        r = tdb_cells_dense(&fc, a, flo, fhi, &(struct tdb_frag_list){&f, 1},
                            err);
    } else {
        r = tdb_cells_sparse(&fc, a, &(struct tdb_frag_list){&f, 1},
                             f->fm->t1, f->fm->t2, err);
    }
    if (r)
        return r;
    if ((r = tree_keep_cells(fs, fc))) {
        tdb_cells_free(fc);
        return r;
    }
    struct tree_view v = {.dir = dir, .a = a, .s = f->fs, .cells = fc,
                          .shape = dense ? fshape : NULL, .dims = !dense,
                          .mtime = f->fm->t2};
    return tree_fields(fs, &v);
}

/* __array.json and the array's metadata in folder root. */
static int tree_array_json(struct tdb_fs *fs, uint64_t root,
                           struct tdb_array *a,
                           const struct tree_dense_region *rg)
{
    struct tdb_buf jtext = {0};
    uint64_t ino;
    int r = tdb_json_array(&jtext, a, rg->source, rg->empty, rg->lo, rg->hi);
    if (!r)
        r = tree_add_bytes(fs, root, "__array.json", jtext.data, jtext.len,
                           &ino);
    if (!r)
        fs->nodes[ino - 1].mtime_ms = a->newest_ts;
    tdb_buf_free(&jtext);
    if (!r)
        r = tree_meta(fs, root, a->meta, a->newest_ts);
    return r;
}

/* The tree's pool for a sparse merge (tdb_cells_sparse_pool). */
static struct tdb_pool *tree_merge_pool(void *fs)
{
    return tdb_fs_pool(fs);
}

/* The merged view of every fragment: dense, of the region tree_region
 * gives (none when it is empty). */
static int tree_array_view(struct tdb_fs *fs, struct tdb_array *a,
                           struct tree_dense_region *rg,
                           struct tdb_cells **view, struct tdb_error *err)
{
    const struct tdb_schema *s = a->schema;
    int r = 0;
    struct tdb_frag **all = calloc(a->nfrags ? a->nfrags : 1, sizeof *all);
    if (!all)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < a->nfrags; i++)
        all[i] = &a->frags[i];
    if (s->array_type == TDB_DENSE) {
        rg->source = tree_region(a, rg->lo, rg->hi, &rg->empty);
        if (!rg->empty)
            tree_shape_str(s, rg->lo, rg->hi, rg->shape, sizeof rg->shape);
        if (!rg->empty)
            r = tdb_cells_dense(view, a, rg->lo, rg->hi,
                                &(struct tdb_frag_list){all, a->nfrags}, err);
    } else {
        r = tdb_cells_sparse(view, a, &(struct tdb_frag_list){all, a->nfrags},
                             a->ts_start, a->ts_end, err);
        /* asked for when the merge runs, not now: a mount's tree is built
         * before the daemon forks, and a pool made then would lose its
         * threads */
        if (!r && a->nfrags > 1)
            tdb_cells_sparse_pool(*view, tree_merge_pool, fs);
    }
    if (!r && *view && (r = tree_keep_cells(fs, *view)))
        tdb_cells_free(*view);
    free(all);
    return r;
}

int tree_array(struct tdb_fs *fs, uint64_t root, struct tdb_array *a,
               struct tdb_error *err)
{
    const struct tdb_schema *s = a->schema;
    bool dense = s->array_type == TDB_DENSE;
    struct tree_dense_region rg = {.shape = ""};
    struct tdb_cells *view = NULL;
    int r = tree_array_view(fs, a, &rg, &view, err);
    if (!r)
        r = tree_array_json(fs, root, a, &rg);
    uint64_t fdir = 0;
    if (!r)
        r = tree_add(fs, root, "__fragments", TREE_DIR, &fdir);
    if (!r)
        fs->nodes[fdir - 1].mtime_ms = a->newest_ts;
    for (size_t i = 0; !r && i < a->nfrags; i++)
        r = tree_fragment(fs, fdir, a, &a->frags[i], err);
    /* the merged view, numpy's files, and the Zarr store of a dense view */
    struct tree_view v = {.dir = root, .a = a, .s = s, .cells = view,
                          .shape = dense ? rg.shape : NULL, .dims = !dense,
                          .mtime = a->newest_ts};
    if (!r && view)
        r = tree_fields(fs, &v);
    if (!r && view)
        r = tree_numpy(fs, root, view, dense, a->newest_ts);
    if (!r && view && dense)
        r = tree_zarr(fs, root, a, view, err);
    if (r && err && !err->code)
        tdb_err(err, r, "building the tree: %s", tdb_strerror(r));
    fs->nodes[root - 1].mtime_ms = a->newest_ts;
    return r;
}
