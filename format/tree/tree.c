/* tree.c: the file tree of the mount contract (docs/LAYOUT.md): an array's
 * __array.json, __meta/, __fragments/, data files and their xattrs; a
 * group's __group.json, __meta/ and members.  Both the daemon and
 * tiledbfs-cat read through these calls. */
#include "tree/json.h"
#include "tree/npy.h"
#include "tree/reader.h"
#include "tree/stamp.h"
#include "core/names.h"
#include "model/mount_names.h"
#include "read/view.h"
#include "tree/zarr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* TREE_NPY: a .npy file (npy.c). */
enum tree_kind { TREE_DIR, TREE_BYTES, TREE_FIELD, TREE_NPY };

/* Folders whose files are made on lookup from their names. */
enum tree_made { TREE_MADE_NONE, TREE_MADE_SLICE, TREE_MADE_DOMAIN,
                 TREE_MADE_ZARR };

struct tree_node {
    char *name;
    uint64_t parent;
    enum tree_kind kind;
    uint64_t *kids;
    size_t nkids, capkids;
    uint8_t *bytes;             /* TREE_BYTES */
    uint64_t size;
    struct tdb_fieldfile *ff;   /* TREE_FIELD */
    struct tdb_npy *npy;        /* TREE_NPY (owned) */
    uint64_t raw;               /* TREE_NPY: the data file whose xattrs it
                                 * shows (0: a slice's own) */
    enum tree_made made;        /* TREE_DIR */
    size_t zarr;                /* TREE_MADE_ZARR: index in fs->zarrs */
    const char *datatype;       /* xattrs */
    const char *dtype;
    char *shape_prefix;         /* dense: "23,17"; NULL: the cell count */
    uint32_t cell_val_num;
    bool has_xattrs;
    uint64_t mtime_ms;
};

/* A file of __slice/ or __domain/, made on lookup from its name: inode
 * TREE_SLICE_INO + a serial number never given twice.  `refs` counts the
 * readers that hold it open and the calls under way; an idle one (refs 0)
 * is in the LRU list, newest first. */
struct tree_slice {
    struct tree_node node;
    uint64_t ino;
    size_t refs;
    uint64_t hash;                          /* of (folder, name) */
    struct tree_slice *by_name, *by_ino;    /* hash chains */
    struct tree_slice *newer, *older;       /* LRU, when idle */
};

/* The slices of a tree: found by (folder, name) and by inode in constant
 * time (chained tables of nbuckets, a power of two, at least as many as
 * the slices); at most `keep` idle ones are kept (the oldest go first), so
 * a user making name after name costs a bounded table, however many. */
struct tree_slices {
    pthread_mutex_t lock;
    struct tree_slice **names, **inos;
    size_t nbuckets, n, idle, keep;
    struct tree_slice *newest, *oldest;
    uint64_t serial, evicted;
    uint64_t seed;                          /* of the hash: random */
};

struct tdb_fs {
    const struct tdb_io *io;
    struct tdb_open_options opts;
    uint8_t key[32];
    struct tdb_cache *cache;
    bool own_cache;             /* made here (opts.cache was NULL) */
    pthread_mutex_t pool_lock;
    struct tdb_pool *pool;      /* decoding threads, started on first use */
    bool pool_tried;
    struct tree_node *nodes;    /* ino = index + 1 */
    size_t nnodes, capnodes;
    struct tdb_array **arrays;
    size_t narrays;
    char **srcs;                /* folders of the arrays and groups opened */
    size_t nsrcs;
    struct tdb_cells **cells;
    size_t ncells;
    /* slices made on lookup in __slice/ and __domain/ */
    struct tree_slices slices;
    /* group members left out (tdb_fs_warnings), members opened */
    char **warn;
    size_t nwarn;
    size_t nmembers;
    /* the Zarr arrays of __zarr/ folders: chunk c of zarrs[i] is inode
     * TREE_CHUNK_INO + zarrs[i].base + c (no node) */
    struct tree_zarr *zarrs;
    size_t nzarrs;
    uint64_t nchunks;
    struct tree_store *stores;
    size_t nstores;
    struct tdb_zarr_group **gstores;   /* the __zarr of groups */
    size_t ngstores;
};

/* A Zarr store of the tree, made in the folder of its array. */
struct tree_store {
    struct tdb_zarr *z;
    uint64_t dir;               /* the array's folder */
    uint64_t mtime_ms;
};

struct tree_zarr {
    struct tdb_zarr *z;
    uint32_t k;                 /* the array's index in z */
    uint64_t base, n;           /* its chunks' inodes */
    uint64_t mtime_ms;
};

#define TREE_CHUNK_INO (UINT64_C(1) << 38)
#define TREE_SLICE_INO (UINT64_C(1) << 39)
#define TREE_SLICE_SERIALS (UINT64_C(1) << 39) /* below the mount's 2^40 */
/* Idle slices kept: one per 64 KiB of the tile cache's budget (a slice
 * holds some 3 KiB), 64 to 4096 (4096 with the default 256 MiB). */
#define TREE_SLICES_PER_BYTES (UINT64_C(64) << 10)
#define TREE_SLICES_MIN 64
#define TREE_SLICES_MAX 4096

static void tree_slice_free(struct tree_slice *sl)
{
    if (!sl)
        return;
    free(sl->node.name);
    tdb_npy_free(sl->node.npy);
    free(sl);
}

static const char *const tree_xattrs[] = {
    "user.tiledb.datatype", "user.tiledb.dtype", "user.tiledb.shape",
    "user.tiledb.cell_val_num"};

/* ------------------------------------------------------------------ nodes */

static int tree_add(struct tdb_fs *fs, uint64_t parent, const char *name,
                    enum tree_kind kind, uint64_t *ino)
{
    if (fs->nnodes == fs->capnodes) {
        size_t cap = fs->capnodes ? fs->capnodes * 2 : 64;
        struct tree_node *n = realloc(fs->nodes, cap * sizeof *n);
        if (!n)
            return TDB_E_NOMEM;
        fs->nodes = n;
        fs->capnodes = cap;
    }
    struct tree_node *n = &fs->nodes[fs->nnodes];
    memset(n, 0, sizeof *n);
    if (!(n->name = strdup(name)))
        return TDB_E_NOMEM;
    n->kind = kind;
    n->parent = parent;
    *ino = ++fs->nnodes;
    if (parent) {
        struct tree_node *p = &fs->nodes[parent - 1];
        if (p->nkids == p->capkids) {
            size_t cap = p->capkids ? p->capkids * 2 : 8;
            uint64_t *k = realloc(p->kids, cap * sizeof *k);
            if (!k)
                return TDB_E_NOMEM;
            p->kids = k;
            p->capkids = cap;
        }
        p->kids[p->nkids++] = *ino;
    }
    return 0;
}

static int tree_add_bytes(struct tdb_fs *fs, uint64_t parent, const char *name,
                          const void *p, uint64_t n, uint64_t *ino)
{
    int r = tree_add(fs, parent, name, TREE_BYTES, ino);
    if (r)
        return r;
    struct tree_node *nd = &fs->nodes[*ino - 1];
    nd->bytes = malloc(n ? (size_t)n : 1);
    if (!nd->bytes)
        return TDB_E_NOMEM;
    if (n)
        memcpy(nd->bytes, p, (size_t)n);
    nd->size = n;
    return 0;
}

static int tree_keep_cells(struct tdb_fs *fs, struct tdb_cells *c)
{
    struct tdb_cells **v = realloc(fs->cells, (fs->ncells + 1) * sizeof *v);
    if (!v)
        return TDB_E_NOMEM;
    fs->cells = v;
    fs->cells[fs->ncells++] = c;
    return 0;
}

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
        tdb_fieldfile_init(n->ff, v->cells, v->a, s, is_dim, idx, parts[p]);
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

/* The file `name` of folder dir holding doc (its text taken). */
static int tree_zarr_file(struct tdb_fs *fs, uint64_t dir, const char *name,
                          struct tdb_buf *doc, uint64_t mtime)
{
    uint64_t ino;
    int r = tree_add_bytes(fs, dir, name, doc->data, doc->len, &ino);
    if (!r)
        fs->nodes[ino - 1].mtime_ms = mtime;
    tdb_buf_free(doc);
    return r;
}

/* Folder `name` of parent holding Zarr store z: the group's documents, a
 * folder per array with its own and its chunks (made on lookup: inodes
 * from TREE_CHUNK_INO on, nodes of none).  Nothing when no inodes are
 * left for its chunks. */
static int tree_zarr_folder(struct tdb_fs *fs, uint64_t parent,
                            const char *name, struct tdb_zarr *z,
                            uint64_t mtime)
{
    uint32_t n = tdb_zarr_narrays(z);
    uint64_t chunks = 0;
    for (uint32_t k = 0; k < n; k++)
        chunks += tdb_zarr_nchunks(z, k);
    if (chunks > TREE_SLICE_INO - TREE_CHUNK_INO - fs->nchunks)
        return 0;
    struct tree_zarr *zv = realloc(fs->zarrs, (fs->nzarrs + n + 1) * sizeof *zv);
    if (!zv)
        return TDB_E_NOMEM;
    fs->zarrs = zv;
    uint64_t dir;
    struct tdb_buf b;
    const char *fname;
    int r = tree_add(fs, parent, name, TREE_DIR, &dir);
    if (!r)
        fs->nodes[dir - 1].mtime_ms = mtime;
    for (int i = 0; !r && !(r = tdb_zarr_doc(z, -1, i, &fname, &b)); i++)
        r = tree_zarr_file(fs, dir, fname, &b, mtime);
    r = r == TDB_E_NOENT ? 0 : r;
    for (uint32_t k = 0; !r && k < n; k++) {
        uint64_t ad;
        r = tree_add(fs, dir, tdb_zarr_name(z, k), TREE_DIR, &ad);
        for (int i = 0; !r && !(r = tdb_zarr_doc(z, (int)k, i, &fname, &b)); i++)
            r = tree_zarr_file(fs, ad, fname, &b, mtime);
        r = r == TDB_E_NOENT ? 0 : r;
        if (r)
            break;
        fs->nodes[ad - 1].made = TREE_MADE_ZARR;
        fs->nodes[ad - 1].zarr = fs->nzarrs;
        fs->nodes[ad - 1].mtime_ms = mtime;
        fs->zarrs[fs->nzarrs++] = (struct tree_zarr){
            z, k, fs->nchunks, tdb_zarr_nchunks(z, k), mtime};
        fs->nchunks += tdb_zarr_nchunks(z, k);
    }
    return r;
}

static int tree_warn(struct tdb_fs *fs, const char *fmt, ...);

/* Dimension label l of array a as a label of its store over dense view
 * `view`: its array (opened and kept by the tree) and its cells along
 * the labelled dimension.  @return 0 with *ok false when it has no such
 * form (not found, not dense, another layout: left out, said in
 * tdb_fs_warnings), or TDB_E_NOMEM. */
static int tree_label(struct tdb_fs *fs, struct tdb_array *a,
                      struct tdb_cells *view, const struct tdb_label *l,
                      struct tdb_zarr_label *out, bool *ok)
{
    uint32_t nd;
    uint64_t lo[TDB_MAX_DIMS], shape[TDB_MAX_DIMS];
    struct tdb_open_options o = fs->opts;
    struct tdb_error err = {0};
    struct tdb_array *la = NULL;
    *ok = false;
    if (!tdb_cells_dense_region(view, &nd, lo, shape) || l->dim >= nd)
        return 0;
    if (o.key)
        o.key = fs->key;
    /* a URI that is not relative names no folder of the array: it fails
     * to open as one */
    int r = tdb_array_open(&la, &a->io, l->uri, &o, fs->cache, &err);
    if (r == TDB_E_NOMEM)
        return r;
    if (r)
        return tree_warn(fs, "dimension label %s: not shown: %s", l->name,
                         err.msg);
    struct tdb_array **v = realloc(fs->arrays, (fs->narrays + 1) * sizeof *v);
    if (!v) {
        tdb_array_close(la);
        return TDB_E_NOMEM;
    }
    fs->arrays = v;
    fs->arrays[fs->narrays++] = la;
    const struct tdb_schema *ls = la->schema;
    uint32_t attr = ls->nattrs;
    for (uint32_t i = 0; i < ls->nattrs; i++)
        if (!strcmp(ls->attrs[i].name, l->attr_name))
            attr = i;
    /* TileDB's layout: dense, one dimension over the labelled one's
     * domain (so the same offsets), the values in attribute "label" */
    const struct tdb_dim *dd = &a->schema->dims[l->dim];
    if (ls->array_type != TDB_DENSE || ls->ndims != 1 || attr == ls->nattrs ||
        ls->dims[0].type != dd->type ||
        memcmp(ls->dims[0].lo, dd->lo, sizeof dd->lo) ||
        memcmp(ls->dims[0].hi, dd->hi, sizeof dd->hi))
        return tree_warn(fs, "dimension label %s: not shown: its array is not "
                         "one dense dimension over the labelled one", l->name);
    struct tdb_frag **all = calloc(la->nfrags + 1, sizeof *all);
    if (!all)
        return TDB_E_NOMEM;
    for (size_t i = 0; i < la->nfrags; i++)
        all[i] = &la->frags[i];
    uint64_t hi = lo[l->dim] + shape[l->dim] - 1;
    struct tdb_cells *lv = NULL;
    r = tdb_cells_dense(&lv, la, &lo[l->dim], &hi, all, la->nfrags, &err);
    free(all);
    if (!r && (r = tree_keep_cells(fs, lv)))
        tdb_cells_free(lv);
    if (r == TDB_E_NOMEM)
        return r;
    if (r)
        return tree_warn(fs, "dimension label %s: not shown: %s", l->name,
                         err.msg);
    *out = (struct tdb_zarr_label){l->name, l->dim, la, lv, attr};
    *ok = true;
    return 0;
}

/* __zarr/ of a dense view (docs/LAYOUT.md "__zarr"), with the array's
 * dimension labels. */
static int tree_zarr(struct tdb_fs *fs, uint64_t root, struct tdb_array *a,
                     struct tdb_cells *view, struct tdb_error *err)
{
    struct tdb_zarr *z = NULL;
    const struct tdb_schema *s = a->schema;
    struct tdb_zarr_label *labels = calloc(s->nlabels + 1, sizeof *labels);
    uint32_t n = 0;
    int r = labels ? 0 : TDB_E_NOMEM;
    for (uint32_t i = 0; !r && i < s->nlabels; i++) {
        bool ok;
        r = tree_label(fs, a, view, &s->labels[i], &labels[n], &ok);
        n += ok;
    }
    if (!r)
        r = tdb_zarr_open(&z, a, view, labels, n, err);
    free(labels);
    if (r || !z)
        return r;
    struct tree_store *st = realloc(fs->stores, (fs->nstores + 1) * sizeof *st);
    if (!st) {
        tdb_zarr_free(z);
        return TDB_E_NOMEM;
    }
    fs->stores = st;
    fs->stores[fs->nstores++] = (struct tree_store){z, root, a->newest_ts};
    return tree_zarr_folder(fs, root, "__zarr", z, a->newest_ts);
}

static int tree_meta(struct tdb_fs *fs, uint64_t parent, const struct tdb_meta *m,
                     uint64_t mtime)
{
    uint64_t dir;
    int r = tree_add(fs, parent, "__meta", TREE_DIR, &dir);
    for (size_t i = 0; !r && m && i < m->n; i++) {
        const struct tdb_meta_item *it = &m->v[i];
        char *name = tdb_meta_key_name(it->key);
        if (!name)
            return TDB_E_NOMEM;
        uint64_t ino;
        r = tree_add_bytes(fs, dir, name, it->value, it->size, &ino);
        free(name);
        if (!r) {
            struct tree_node *n = &fs->nodes[ino - 1];
            n->has_xattrs = true;
            n->datatype = tdb_dt_name(it->type);
            n->dtype = tdb_dt_numpy(it->type);
            n->cell_val_num = 1;
            n->mtime_ms = mtime;
            char buf[32];
            snprintf(buf, sizeof buf, "%u", it->count);
            if (!(n->shape_prefix = strdup(buf)))
                r = TDB_E_NOMEM;
        }
    }
    fs->nodes[dir - 1].mtime_ms = mtime;
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
        r = tdb_cells_dense(&fc, a, flo, fhi, &f, 1, err);
    } else {
        r = tdb_cells_sparse(&fc, a, &f, 1, f->fm->t1, f->fm->t2, err);
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
            r = tdb_cells_dense(view, a, rg->lo, rg->hi, all, a->nfrags, err);
    } else {
        r = tdb_cells_sparse(view, a, all, a->nfrags, a->ts_start, a->ts_end,
                             err);
    }
    if (!r && *view && (r = tree_keep_cells(fs, *view)))
        tdb_cells_free(*view);
    free(all);
    return r;
}

static int tree_array(struct tdb_fs *fs, uint64_t root, struct tdb_array *a,
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

/* ----------------------------------------------------------------- groups */

/* The folders of the groups above a member, to refuse one that is its own
 * group or an ancestor (a cycle would nest without end). */
struct tree_up {
    const char *path;
    const struct tree_up *up;
    int depth;
};

#define TREE_MAX_DEPTH 32
#define TREE_MAX_MEMBERS (1u << 20)  /* members opened in one tree: a
                                      * lattice of groups stays bounded */

static int tree_source(struct tdb_fs *fs, uint64_t node, const char *path,
                       const struct tree_up *up, struct tdb_error *err);

/* Records one sentence for tdb_fs_warnings. */
static int tree_warn(struct tdb_fs *fs, const char *fmt, ...)
{
    char msg[TDB_ERROR_MSG_MAX + 512], **v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v = realloc(fs->warn, (fs->nwarn + 1) * sizeof *v);
    if (!v)
        return TDB_E_NOMEM;
    fs->warn = v;
    if (!(v[fs->nwarn] = strdup(msg)))
        return TDB_E_NOMEM;
    fs->nwarn++;
    return 0;
}

size_t tdb_fs_warnings(const struct tdb_fs *fs, const char *const **msgs)
{
    *msgs = (const char *const *)fs->warn;
    return fs->nwarn;
}

/* The text of __group.json; why[i] (or NULL) is member i's "error". */
static int tree_group_json(const struct tdb_group *g, const struct tdb_meta *m,
                           char *const *why, struct tdb_buf *out)
{
    struct tdb_jb jb = {0};
    json_t *o = tdb_jb_object(&jb);
    tdb_jb_set(&jb, o, "type", tdb_json_cstr("group"));
    json_t *members = tdb_jb_array(&jb);
    for (size_t i = 0; i < g->n; i++) {
        json_t *mo = tdb_jb_object(&jb);
        tdb_jb_set(&jb, mo, "name", tdb_json_cstr(g->v[i].name));
        tdb_jb_set(&jb, mo, "uri", tdb_json_cstr(g->v[i].uri));
        tdb_jb_set(&jb, mo, "type",
                   tdb_json_cstr(g->v[i].type == 1 ? "group" : "array"));
        if (why[i])
            tdb_jb_set(&jb, mo, "error", tdb_json_cstr(why[i]));
        tdb_jb_push(&jb, members, mo);
    }
    tdb_jb_set(&jb, o, "members", members);
    json_t *keys = tdb_jb_array(&jb);
    for (size_t i = 0; m && i < m->n; i++)
        tdb_jb_push(&jb, keys, tdb_json_cstr(m->v[i].key));
    tdb_jb_set(&jb, o, "metadata_keys", keys);
    int r = jb.rc ? jb.rc : tdb_json_dump(o, out);
    json_decref(o);
    return r;
}

/* The path member m of the group at `dir` is read at (tdb_fs_open's
 * rules), or NULL with why[cap] when it is not followed.
 * @return 0 or TDB_E_NOMEM. */
static int tree_member_path(struct tdb_fs *fs, const char *dir,
                            const struct tdb_group_member *m, char **path,
                            char *why, size_t cap)
{
    const struct tdb_open_options *o = &fs->opts;
    bool above;
    char *place = tdb_group_member_place(m, dir, &above), *rel = NULL;
    int r = 1;
    *path = NULL;
    if (!place)
        return TDB_E_NOMEM;
    bool other = strstr(place, "://") != NULL;
    if (!above && o->locate)
        r = o->locate(o->locate_arg, place, &rel);
    else if (!above && place[0] != '/' && !other)
        r = (rel = strdup(place)) ? 0 : TDB_E_NOMEM;
    if (r <= 0) {
        free(place);
        *path = rel;
        return r;
    }
    if (o->members == TDB_MEMBERS_ANY && !other) {
        *path = place;          /* where it is, through the same backend */
        return 0;
    }
    if (o->members != TDB_MEMBERS_ANY)
        snprintf(why, cap, "%s: outside the source, not followed "
                 "(group_members=inside)", m->uri);
    else
        snprintf(why, cap, "%s: not on the source's storage, not followed",
                 m->uri);
    free(place);
    return 0;
}

/* Member m of the group up->path, shown as folder `shown` of node `root`
 * unless it is left out: @return 0 with *why NULL, or with *why (malloc'ed)
 * the reason it is left out; or TDB_E_NOMEM. */
static int tree_member(struct tdb_fs *fs, uint64_t root, const char *shown,
                       const struct tdb_group_member *m,
                       const struct tree_up *up, char **why)
{
    char msg[TDB_ERROR_MSG_MAX + 64] = "", *mp = NULL;
    struct tdb_error err = {0};
    int r = tree_member_path(fs, up->path, m, &mp, msg, sizeof msg);
    for (const struct tree_up *u = up; !r && mp && u; u = u->up)
        if (!strcmp(u->path, mp)) {
            snprintf(msg, sizeof msg, "%s: the group %s itself, not followed",
                     m->uri, u->path[0] ? u->path : ".");
            free(mp);
            mp = NULL;
        }
    if (!r && mp && ++fs->nmembers > TREE_MAX_MEMBERS)
        snprintf(msg, sizeof msg, "%s: more than %u members in the tree",
                 m->uri, TREE_MAX_MEMBERS);
    else if (!r && mp) {
        uint64_t dir;
        r = tree_add(fs, root, shown, TREE_DIR, &dir);
        if (!r && (r = tree_source(fs, dir, mp, up, &err)) &&
            r != TDB_E_NOMEM) {
            fs->nodes[root - 1].nkids--;    /* dir, the last one added */
            snprintf(msg, sizeof msg, "%s", err.msg[0] ? err.msg
                                                       : tdb_strerror(r));
            r = 0;
        }
    }
    free(mp);
    *why = NULL;
    if (!r && msg[0] && !(*why = strdup(msg)))
        r = TDB_E_NOMEM;
    return r;
}

/* The folder names of g's members (shown[i]), and why[i] for a name that
 * cannot be a folder or that an earlier member has. */
static int tree_member_names(const struct tdb_group *g, char **shown,
                             char **why)
{
    for (size_t i = 0; i < g->n; i++) {
        if (!(shown[i] = tdb_group_shown_name(g->v[i].name)))
            return TDB_E_NOMEM;
        const char *clash = !shown[i][0] ? "an empty name" : NULL;
        for (size_t j = 0; j < i && !clash; j++)
            if (!why[j] && !strcmp(shown[j], shown[i]))
                clash = "the name of another member";
        char msg[256];
        if (clash) {
            snprintf(msg, sizeof msg, "%s: has %s, not shown", g->v[i].uri,
                     clash);
            if (!(why[i] = strdup(msg)))
                return TDB_E_NOMEM;
        }
    }
    return 0;
}

/* The Zarr store shown in folder dir, or NULL. */
static struct tree_store *tree_store_in(struct tdb_fs *fs, uint64_t dir)
{
    for (size_t i = 0; i < fs->nstores; i++)
        if (fs->stores[i].dir == dir)
            return &fs->stores[i];
    return NULL;
}

/* __zarr/ of the group at root (docs/LAYOUT.md "__zarr of a group"): the
 * stores of its members shown[i] (those with no why[i]) that have one,
 * each again under its folder name; none when no member has one. */
static int tree_group_zarr(struct tdb_fs *fs, uint64_t root, size_t n,
                           char *const *shown, char *const *why,
                           const struct tdb_meta *m, struct tdb_error *err)
{
    struct tdb_zarr **stores = calloc(n + 1, sizeof *stores);
    const char **names = calloc(n + 1, sizeof *names);
    int r = stores && names ? 0 : TDB_E_NOMEM;
    uint32_t ns = 0;
    uint64_t mtime = m ? m->newest_ts : 0;
    const struct tree_node *g = &fs->nodes[root - 1];
    bool taken = false;         /* a member shown as __zarr */
    for (size_t j = 0; !r && j < g->nkids; j++) {
        const struct tree_node *kid = &fs->nodes[g->kids[j] - 1];
        taken |= !strcmp(kid->name, "__zarr");
        struct tree_store *st = tree_store_in(fs, g->kids[j]);
        /* a name of Zarr's own files is no member's in __zarr */
        if (!strncmp(kid->name, ".z", 2) || !strcmp(kid->name, "zarr.json"))
            st = NULL;
        for (size_t i = 0; st && i < n; i++)
            if (!why[i] && !strcmp(shown[i], kid->name)) {
                stores[ns] = st->z;
                names[ns++] = shown[i];
                mtime = st->mtime_ms > mtime ? st->mtime_ms : mtime;
                break;
            }
    }
    struct tdb_zarr_group *zg = NULL;
    if (!r && ns && !taken)
        r = tdb_zarr_group_open(&zg, stores, names, ns, m, err);
    struct tdb_zarr_group **gv = zg ? realloc(fs->gstores,
                                              (fs->ngstores + 1) * sizeof *gv)
                                    : NULL;
    if (zg && !gv) {
        tdb_zarr_group_free(zg);
        r = TDB_E_NOMEM;
    } else if (zg) {
        fs->gstores = gv;
        fs->gstores[fs->ngstores++] = zg;
    }
    uint64_t dir = 0;
    struct tdb_buf b;
    const char *fname;
    if (!r && zg && !(r = tree_add(fs, root, "__zarr", TREE_DIR, &dir)))
        fs->nodes[dir - 1].mtime_ms = mtime;
    for (int i = 0; !r && zg && !(r = tdb_zarr_group_doc(zg, i, &fname, &b)); i++)
        r = tree_zarr_file(fs, dir, fname, &b, mtime);
    r = r == TDB_E_NOENT ? 0 : r;
    for (uint32_t i = 0; !r && zg && i < ns; i++)
        r = tree_zarr_folder(fs, dir, names[i], stores[i], mtime);
    free(stores);
    free(names);
    return r;
}

static int tree_group(struct tdb_fs *fs, uint64_t root, const char *path,
                      const struct tree_up *up, struct tdb_error *err)
{
    struct tdb_group *g = NULL;
    struct tdb_meta *m = NULL;
    char **shown = NULL, **why = NULL;
    char *metadir = tdb_path_join(path, "__meta");
    if (!metadir)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    const uint8_t *key = fs->opts.key ? fs->key : NULL;
    int r = tdb_group_load(fs->io, path, fs->opts.ts_start, fs->opts.ts_end, &g,
                           err);
    struct tdb_ts_window when = {fs->opts.ts_start, fs->opts.ts_end};
    if (!r)
        r = tdb_meta_load(fs->io, metadir, when, key, &m, err);
    free(metadir);
    uint64_t jino = 0;
    size_t n = g ? g->n : 0;
    if (!r && (!(shown = calloc(n + 1, sizeof *shown)) ||
               !(why = calloc(n + 1, sizeof *why))))
        r = TDB_E_NOMEM;
    if (!r)
        r = tree_member_names(g, shown, why);
    /* __group.json first (its text once the members are known) */
    if (!r && !(r = tree_add_bytes(fs, root, "__group.json", "", 0, &jino)) &&
        m)
        fs->nodes[jino - 1].mtime_ms = m->newest_ts;
    if (!r)
        r = tree_meta(fs, root, m, m ? m->newest_ts : 0);
    struct tree_up here = {path, up, up ? up->depth + 1 : 0};
    for (size_t i = 0; !r && i < n; i++) {
        if (!why[i] && here.depth >= TREE_MAX_DEPTH) {
            why[i] = strdup("groups nested too deep, not followed");
            r = why[i] ? 0 : TDB_E_NOMEM;
        } else if (!why[i]) {
            r = tree_member(fs, root, shown[i], &g->v[i], &here, &why[i]);
        }
        if (!r && why[i])
            r = tree_warn(fs, "group %s: member %s left out: %s",
                          path[0] ? path : ".", g->v[i].name, why[i]);
    }
    if (!r)
        r = tree_group_zarr(fs, root, n, shown, why, m, err);
    struct tdb_buf jtext = {0};
    if (!r && !(r = tree_group_json(g, m, why, &jtext))) {
        struct tree_node *jn = &fs->nodes[jino - 1];
        size_t len = 0;
        free(jn->bytes);
        jn->bytes = tdb_buf_take(&jtext, &len);
        jn->size = len;
        r = jn->bytes ? 0 : TDB_E_NOMEM;
    }
    tdb_buf_free(&jtext);
    for (size_t i = 0; i < n; i++) {
        free(shown ? shown[i] : NULL);
        free(why ? why[i] : NULL);
    }
    free(shown);
    free(why);
    tdb_group_free(g);
    tdb_meta_free(m);
    if (r && err && !err->code)
        tdb_err(err, r, "%s: %s", path[0] ? path : ".", tdb_strerror(r));
    return r;
}

/* Notes `path` as the folder of an array or group of the tree. */
static int tree_note_source(struct tdb_fs *fs, const char *path,
                            struct tdb_error *err)
{
    char **v = realloc(fs->srcs, (fs->nsrcs + 1) * sizeof *v);
    if (!v)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    fs->srcs = v;
    if (!(v[fs->nsrcs] = strdup(path)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    fs->nsrcs++;
    return 0;
}

const char *tdb_fs_source(const struct tdb_fs *fs, size_t i)
{
    return i < fs->nsrcs ? fs->srcs[i] : NULL;
}

static int tree_source(struct tdb_fs *fs, uint64_t node, const char *path,
                       const struct tree_up *up, struct tdb_error *err)
{
    bool array = tdb_is_array(fs->io, path);
    bool group = !array && tdb_is_group(fs->io, path);
    if ((array || group) && tree_note_source(fs, path, err))
        return TDB_E_NOMEM;
    if (array) {
        struct tdb_array *a;
        struct tdb_open_options o = fs->opts;
        if (o.key)
            o.key = fs->key;
        int r = tdb_array_open(&a, fs->io, path, &o, fs->cache, err);
        if (r)
            return r;
        struct tdb_array **v = realloc(fs->arrays, (fs->narrays + 1) * sizeof *v);
        if (!v) {
            tdb_array_close(a);
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        }
        fs->arrays = v;
        fs->arrays[fs->narrays++] = a;
        return tree_array(fs, node, a, err);
    }
    if (group)
        return tree_group(fs, node, path, up, err);
    if (!tdb_io_exists(fs->io, path))
        return tdb_err(err, TDB_E_NOENT, "%s: no such file or folder",
                       path[0] ? path : ".");
    return tdb_err(err, TDB_E_INVAL, "%s: not a TileDB array or group",
                   path[0] ? path : ".");
}

int tdb_fs_open(struct tdb_fs **out, const struct tdb_io *io,
                const struct tdb_open_options *opts, struct tdb_error *err)
{
    struct tdb_fs *fs = calloc(1, sizeof *fs);
    if (!fs)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    fs->io = io;
    fs->opts = *opts;
    pthread_mutex_init(&fs->pool_lock, NULL);
    pthread_mutex_init(&fs->slices.lock, NULL);
    if (opts->key) {
        memcpy(fs->key, opts->key, 32);
        fs->opts.key = fs->key;
    }
    uint64_t root;
    int r = 0;
    fs->cache = opts->cache;
    if (!fs->cache) {
        r = tdb_cache_create(&fs->cache, opts->cache_bytes
                                             ? opts->cache_bytes
                                             : TDB_DEFAULT_CACHE_BYTES);
        if (r) {
            free(fs);
            return tdb_err(err, r, "out of memory");
        }
        tdb_cache_huge_pages(fs->cache, opts->huge_pages);
        fs->own_cache = true;
    }
    struct tdb_cache_stats cs;
    tdb_cache_stats(fs->cache, &cs);
    uint64_t keep = cs.budget / TREE_SLICES_PER_BYTES;
    fs->slices.keep = keep < TREE_SLICES_MIN   ? TREE_SLICES_MIN
                      : keep > TREE_SLICES_MAX ? TREE_SLICES_MAX
                                               : (size_t)keep;
    /* a seed no user knows, so that no names can be made to share a
     * chain (should getrandom fail, 0: the chains still work) */
    (void)tdb_random(&fs->slices.seed, sizeof fs->slices.seed, NULL);
    r = tree_add(fs, 0, "", TREE_DIR, &root);
    if (!r)
        r = tree_source(fs, root, "", NULL, err);
    if (r) {
        tdb_fs_close(fs);
        return r;
    }
    *out = fs;
    return 0;
}

void tdb_fs_close(struct tdb_fs *fs)
{
    if (!fs)
        return;
    for (size_t b = 0; b < fs->slices.nbuckets; b++) {
        for (struct tree_slice *sl = fs->slices.names[b], *nx; sl; sl = nx) {
            nx = sl->by_name;
            tree_slice_free(sl);
        }
    }
    free(fs->slices.names);
    free(fs->slices.inos);
    pthread_mutex_destroy(&fs->slices.lock);
    for (size_t i = 0; i < fs->nnodes; i++) {
        struct tree_node *n = &fs->nodes[i];
        free(n->name);
        free(n->kids);
        free(n->bytes);
        free(n->shape_prefix);
        tdb_npy_free(n->npy);
        if (n->ff) {
            tdb_fieldfile_destroy(n->ff);
            free(n->ff);
        }
    }
    free(fs->nodes);
    for (size_t i = 0; i < fs->nwarn; i++)
        free(fs->warn[i]);
    free(fs->warn);
    for (size_t i = 0; i < fs->nstores; i++)
        tdb_zarr_free(fs->stores[i].z);
    free(fs->stores);
    for (size_t i = 0; i < fs->ngstores; i++)
        tdb_zarr_group_free(fs->gstores[i]);
    free(fs->gstores);
    free(fs->zarrs);
    for (size_t i = 0; i < fs->ncells; i++)
        tdb_cells_free(fs->cells[i]);
    free(fs->cells);
    for (size_t i = 0; i < fs->narrays; i++)
        tdb_array_close(fs->arrays[i]);
    free(fs->arrays);
    for (size_t i = 0; i < fs->nsrcs; i++)
        free(fs->srcs[i]);
    free(fs->srcs);
    tdb_pool_free(fs->pool);
    pthread_mutex_destroy(&fs->pool_lock);
    if (fs->own_cache)
        tdb_cache_free(fs->cache);
    memset(fs->key, 0, sizeof fs->key);
    free(fs);
}

/* ------------------------------------------------------------- slices */

/* FNV-1a of (dir, name) from a random basis. */
static uint64_t tree_slice_hash(uint64_t seed, uint64_t dir, const char *name)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ seed;
    for (int i = 0; i < 8; i++)
        h = (h ^ ((dir >> (8 * i)) & 0xff)) * UINT64_C(0x100000001b3);
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * UINT64_C(0x100000001b3);
    return h;
}

static size_t tree_ino_bucket(uint64_t ino, size_t nbuckets)
{
    return (size_t)((ino * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
           (nbuckets - 1);
}

/* Takes idle sl out of the LRU list (slices.lock held). */
static void tree_lru_out(struct tree_slices *S, struct tree_slice *sl)
{
    if (sl->newer)
        sl->newer->older = sl->older;
    else
        S->newest = sl->older;
    if (sl->older)
        sl->older->newer = sl->newer;
    else
        S->oldest = sl->newer;
    sl->newer = sl->older = NULL;
    S->idle--;
}

/* Puts idle sl first in the LRU list (slices.lock held). */
static void tree_lru_in(struct tree_slices *S, struct tree_slice *sl)
{
    sl->older = S->newest;
    sl->newer = NULL;
    if (S->newest)
        S->newest->newer = sl;
    else
        S->oldest = sl;
    S->newest = sl;
    S->idle++;
}

/* Drops the oldest idle slices past the bound (slices.lock held): out of
 * both chains, then freed. */
static void tree_slices_trim(struct tdb_fs *fs)
{
    struct tree_slices *S = &fs->slices;
    while (S->idle > S->keep) {
        struct tree_slice *sl = S->oldest, **pp;
        tree_lru_out(S, sl);
        for (pp = &S->names[sl->hash & (S->nbuckets - 1)]; *pp != sl;
             pp = &(*pp)->by_name)
            ;
        *pp = sl->by_name;
        for (pp = &S->inos[tree_ino_bucket(sl->ino, S->nbuckets)]; *pp != sl;
             pp = &(*pp)->by_ino)
            ;
        *pp = sl->by_ino;
        S->n--;
        S->evicted++;
        tree_slice_free(sl);
    }
}

/* One more use of sl (slices.lock held): an idle one leaves the LRU. */
static void tree_slice_ref(struct tdb_fs *fs, struct tree_slice *sl)
{
    if (sl->refs++ == 0)
        tree_lru_out(&fs->slices, sl);
}

/* One use less (slices.lock held): the last makes it idle, the newest. */
static void tree_slice_unref(struct tdb_fs *fs, struct tree_slice *sl)
{
    if (--sl->refs == 0) {
        tree_lru_in(&fs->slices, sl);
        tree_slices_trim(fs);
    }
}

/* A lookup found sl: an idle one becomes the newest (slices.lock held). */
static void tree_slice_touch(struct tdb_fs *fs, struct tree_slice *sl)
{
    if (sl->refs == 0) {
        tree_lru_out(&fs->slices, sl);
        tree_lru_in(&fs->slices, sl);
    }
}

/* Doubles the tables, the slices rehashed (slices.lock held).  @return 0
 * or TDB_E_NOMEM (the tables unchanged). */
static int tree_slices_grow(struct tree_slices *S)
{
    size_t nb = S->nbuckets ? 2 * S->nbuckets : 64;
    struct tree_slice **names = calloc(nb, sizeof *names);
    struct tree_slice **inos = calloc(nb, sizeof *inos);
    if (!names || !inos) {
        free(names);
        free(inos);
        return TDB_E_NOMEM;
    }
    for (size_t b = 0; b < S->nbuckets; b++) {
        for (struct tree_slice *sl = S->names[b], *nx; sl; sl = nx) {
            nx = sl->by_name;
            sl->by_name = names[sl->hash & (nb - 1)];
            names[sl->hash & (nb - 1)] = sl;
            size_t i = tree_ino_bucket(sl->ino, nb);
            sl->by_ino = inos[i];
            inos[i] = sl;
        }
    }
    free(S->names);
    free(S->inos);
    S->names = names;
    S->inos = inos;
    S->nbuckets = nb;
    return 0;
}

/* Adds new slice sl, idle, newest, with the next inode number (slices.lock
 * held); older idle ones past the bound go.  @return 0, TDB_E_NOMEM or
 * TDB_E_NOSPC (every number given). */
static int tree_slice_insert(struct tdb_fs *fs, struct tree_slice *sl)
{
    struct tree_slices *S = &fs->slices;
    int r;
    if (S->serial == TREE_SLICE_SERIALS)
        return TDB_E_NOSPC;
    if (S->n >= S->nbuckets && (r = tree_slices_grow(S)) != 0)
        return r;
    sl->ino = TREE_SLICE_INO + S->serial++;
    size_t i = sl->hash & (S->nbuckets - 1);
    sl->by_name = S->names[i];
    S->names[i] = sl;
    i = tree_ino_bucket(sl->ino, S->nbuckets);
    sl->by_ino = S->inos[i];
    S->inos[i] = sl;
    S->n++;
    tree_lru_in(S, sl);
    tree_slices_trim(fs);
    return 0;
}

/* ------------------------------------------------------------- the calls */

/* The slice of inode ino, or NULL (slices.lock held). */
static struct tree_slice *tree_slice_by_ino(struct tdb_fs *fs, uint64_t ino)
{
    struct tree_slices *S = &fs->slices;
    if (!S->nbuckets)
        return NULL;
    struct tree_slice *sl = S->inos[tree_ino_bucket(ino, S->nbuckets)];
    while (sl && sl->ino != ino)
        sl = sl->by_ino;
    return sl;
}

/* The node of inode ino when it is no slice (folders, and the files
 * opened with the tree), or NULL. */
static struct tree_node *tree_perm(struct tdb_fs *fs, uint64_t ino)
{
    return ino >= 1 && ino <= fs->nnodes ? &fs->nodes[ino - 1] : NULL;
}

/* The node of inode ino, or NULL; a slice is held until tree_put. */
static struct tree_node *tree_get(struct tdb_fs *fs, uint64_t ino)
{
    if (ino >= TREE_SLICE_INO) {
        struct tree_node *n = NULL;
        pthread_mutex_lock(&fs->slices.lock);
        struct tree_slice *sl = tree_slice_by_ino(fs, ino);
        if (sl) {
            tree_slice_ref(fs, sl);
            n = &sl->node;
        }
        pthread_mutex_unlock(&fs->slices.lock);
        return n;
    }
    return tree_perm(fs, ino);
}

/* Gives back what tree_get(fs, ino) returned (n may be NULL). */
static void tree_put(struct tdb_fs *fs, uint64_t ino, struct tree_node *n)
{
    if (ino < TREE_SLICE_INO || !n)
        return;
    pthread_mutex_lock(&fs->slices.lock);
    tree_slice_unref(fs, (struct tree_slice *)n);
    pthread_mutex_unlock(&fs->slices.lock);
}

/* The Zarr array whose chunk *c inode ino is, or NULL. */
static const struct tree_zarr *tree_chunk(const struct tdb_fs *fs,
                                          uint64_t ino, uint64_t *c)
{
    if (ino < TREE_CHUNK_INO || ino >= TREE_SLICE_INO)
        return NULL;
    uint64_t id = ino - TREE_CHUNK_INO;
    size_t lo = 0, hi = fs->nzarrs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct tree_zarr *z = &fs->zarrs[mid];
        if (id < z->base) {
            hi = mid;
        } else if (id - z->base >= z->n) {
            lo = mid + 1;
        } else {
            *c = id - z->base;
            return z;
        }
    }
    return NULL;
}

/* The error for inode ino, which is no folder of tree_perm's: a slice
 * (a file), or none. */
static int tree_not_dir(struct tdb_fs *fs, uint64_t ino,
                        struct tdb_error *err)
{
    uint64_t c;
    struct tree_node *n = tree_chunk(fs, ino, &c) ? NULL : tree_get(fs, ino);
    tree_put(fs, ino, n);
    return n || tree_chunk(fs, ino, &c) ? tdb_err(err, TDB_E_NOTDIR, "inode %" PRIu64 ": not a folder",
                       ino)
             : tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
}

int tdb_fs_hold(struct tdb_fs *fs, uint64_t ino)
{
    if (ino < TREE_SLICE_INO)
        return 0; /* never dropped (tdb_fs_stat says whether it is one) */
    return tree_get(fs, ino) ? 0 : TDB_E_NOENT;
}

void tdb_fs_unhold(struct tdb_fs *fs, uint64_t ino)
{
    if (ino < TREE_SLICE_INO)
        return;
    pthread_mutex_lock(&fs->slices.lock);
    struct tree_slice *sl = tree_slice_by_ino(fs, ino);
    if (sl)
        tree_slice_unref(fs, sl);
    pthread_mutex_unlock(&fs->slices.lock);
}


/* The slice made as file `name` of folder dir, whose hash is h, or NULL
 * (slices.lock held). */
static struct tree_slice *tree_slice_find(struct tdb_fs *fs, uint64_t dir,
                                          const char *name, uint64_t h)
{
    struct tree_slices *S = &fs->slices;
    if (!S->nbuckets)
        return NULL;
    struct tree_slice *sl = S->names[h & (S->nbuckets - 1)];
    while (sl && (sl->hash != h || sl->node.parent != dir ||
                  strcmp(sl->node.name, name)))
        sl = sl->by_name;
    return sl;
}

/* The node of a slice of base (a NAME.npy): its xattrs those of the data
 * file but the shape, its own. */
static struct tree_slice *tree_slice_node(struct tdb_fs *fs, uint64_t dir,
                                          const char *name,
                                          const struct tree_node *base,
                                          struct tdb_npy *npy)
{
    const struct tree_node *raw = &fs->nodes[base->raw - 1];
    struct tree_slice *sl = calloc(1, sizeof *sl);
    struct tree_node *n = sl ? &sl->node : NULL;
    if (!n || !(n->name = strdup(name))) {
        free(sl);
        return NULL;
    }
    n->kind = TREE_NPY;
    n->parent = dir;
    n->npy = npy;
    n->has_xattrs = raw->has_xattrs;
    n->datatype = raw->datatype;
    n->dtype = raw->dtype;
    n->cell_val_num = raw->cell_val_num;
    n->mtime_ms = base->mtime_ms;
    return sl;
}

/* Finds or makes file `name` of folder dir (__slice/ or __domain/): a
 * .npy of part of a NAME.npy next to the folder. */
static int tree_slice(struct tdb_fs *fs, uint64_t dir, const char *name,
                      uint64_t *ino, struct tdb_error *err)
{
    const struct tree_node *d = &fs->nodes[dir - 1], *base = NULL;
    const struct tree_node *root = &fs->nodes[d->parent - 1];
    size_t fl;
    for (size_t i = 0; tdb_npy_split(name, &fl) && i < root->nkids && !base; i++) {
        const struct tree_node *k = &fs->nodes[root->kids[i] - 1];
        if (k->kind == TREE_NPY && strlen(k->name) == fl + 4 &&
            !strncmp(k->name, name, fl) && !strcmp(k->name + fl, ".npy"))
            base = k;
    }
    if (!base)
        return tdb_err(err, TDB_E_NOENT, "%s/%s: not FIELD[...].npy of a "
                       "FIELD.npy of this array", d->name, name);
    uint64_t h = tree_slice_hash(fs->slices.seed, dir, name);
    pthread_mutex_lock(&fs->slices.lock);
    struct tree_slice *sl = tree_slice_find(fs, dir, name, h);
    if (sl) {
        tree_slice_touch(fs, sl);
        *ino = sl->ino;
    }
    pthread_mutex_unlock(&fs->slices.lock);
    if (sl)
        return 0;
    struct tdb_npy *npy = NULL;
    struct tdb_error why = {0};
    int r = tdb_npy_slice(&npy, base->npy, name + fl,
                          d->made == TREE_MADE_DOMAIN, &why);
    if (r)
        return tdb_err(err, r, "%s/%s: %s", d->name, name, why.msg);
    struct tree_slice *made = tree_slice_node(fs, dir, name, base, npy);
    if (!made) {
        tdb_npy_free(npy);
        return tdb_err(err, TDB_E_NOMEM, "%s/%s: out of memory", d->name, name);
    }
    made->hash = h;
    pthread_mutex_lock(&fs->slices.lock);
    /* another thread may have made it meanwhile: keep the first */
    if ((sl = tree_slice_find(fs, dir, name, h))) {
        tree_slice_touch(fs, sl);
        *ino = sl->ino;
    } else if ((r = tree_slice_insert(fs, made)) == 0) {
        *ino = made->ino;
        made = NULL;
    }
    pthread_mutex_unlock(&fs->slices.lock);
    tree_slice_free(made);
    return r ? tdb_err(err, r, "%s/%s: %s", d->name, name,
                       r == TDB_E_NOMEM ? "out of memory"
                                        : "no inode numbers left for slices")
             : 0;
}

int tdb_fs_lookup(struct tdb_fs *fs, uint64_t parent, const char *name,
                  uint64_t *ino, struct tdb_error *err)
{
    struct tree_node *p = tree_perm(fs, parent);
    if (!p)
        return tree_not_dir(fs, parent, err);
    if (p->kind != TREE_DIR)
        return tdb_err(err, TDB_E_NOTDIR, "%s: not a folder", p->name);
    for (size_t i = 0; i < p->nkids; i++) {
        if (!strcmp(fs->nodes[p->kids[i] - 1].name, name)) {
            *ino = p->kids[i];
            return 0;
        }
    }
    if (p->made == TREE_MADE_SLICE || p->made == TREE_MADE_DOMAIN)
        return tree_slice(fs, parent, name, ino, err);
    uint64_t c;
    if (p->made == TREE_MADE_ZARR) {
        const struct tree_zarr *z = &fs->zarrs[p->zarr];
        if (tdb_zarr_chunk_parse(z->z, z->k, name, &c)) {
            *ino = TREE_CHUNK_INO + z->base + c;
            return 0;
        }
    }
    return tdb_err(err, TDB_E_NOENT, "%s: no such file", name);
}

bool tdb_fs_made_on_lookup(struct tdb_fs *fs, uint64_t ino)
{
    const struct tree_node *n = tree_perm(fs, ino);
    return n && (n->made == TREE_MADE_SLICE || n->made == TREE_MADE_DOMAIN);
}

int tdb_fs_resolve(struct tdb_fs *fs, const char *path, uint64_t *ino,
                   struct tdb_error *err)
{
    uint64_t cur = TDB_ROOT_INO;
    char part[TDB_MAX_NAME + 1];
    while (*path) {
        while (*path == '/')
            path++;
        if (!*path)
            break;
        size_t n = strcspn(path, "/");
        if (n > TDB_MAX_NAME)
            return tdb_err(err, TDB_E_NOENT, "name too long");
        memcpy(part, path, n);
        part[n] = 0;
        path += n;
        if (!strcmp(part, "."))
            continue;
        if (!strcmp(part, "..")) {
            struct tree_node *nd = tree_get(fs, cur);
            uint64_t up = nd ? nd->parent : 0;
            tree_put(fs, cur, nd);
            if (up)
                cur = up;
            continue;
        }
        int r = tdb_fs_lookup(fs, cur, part, &cur, err);
        if (r)
            return r;
    }
    *ino = cur;
    return 0;
}

/* tdb_fs_stat of node n or chunk c of Zarr array z. */
static int tree_stat(const struct tree_node *n, const struct tree_zarr *z,
                     uint64_t c, uint64_t ino, struct tdb_stat *st,
                     struct tdb_error *err)
{
    memset(st, 0, sizeof *st);
    st->ino = ino;
    if (z) {
        st->mtime_ms = z->mtime_ms;
        return tdb_zarr_chunk_size(z->z, z->k, c, &st->size, err);
    }
    st->mtime_ms = n->mtime_ms;
    switch (n->kind) {
    case TREE_DIR:
        st->is_dir = true;
        st->size = n->nkids;
        return 0;
    case TREE_BYTES:
        st->size = n->size;
        return 0;
    case TREE_FIELD:
        return tdb_fieldfile_size(n->ff, &st->size, err);
    case TREE_NPY:
        return tdb_npy_size(n->npy, &st->size, err);
    }
    return 0;
}

int tdb_fs_stat(struct tdb_fs *fs, uint64_t ino, struct tdb_stat *st,
                struct tdb_error *err)
{
    uint64_t c;
    const struct tree_zarr *z = tree_chunk(fs, ino, &c);
    struct tree_node *n = z ? NULL : tree_get(fs, ino);
    if (!n && !z)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
    int r = tree_stat(n, z, c, ino, st, err);
    tree_put(fs, ino, n);
    return r;
}

int tdb_fs_readdir(struct tdb_fs *fs, uint64_t ino, uint64_t index,
                   const char **name, uint64_t *child, struct tdb_error *err)
{
    struct tree_node *n = tree_perm(fs, ino);
    if (!n)
        return tree_not_dir(fs, ino, err);
    if (n->kind != TREE_DIR)
        return tdb_err(err, TDB_E_NOTDIR, "%s: not a folder", n->name);
    if (index >= n->nkids && n->made == TREE_MADE_ZARR) {
        /* then the chunks, where there are not too many to list */
        const struct tree_zarr *z = &fs->zarrs[n->zarr];
        uint64_t c = index - n->nkids;
        if (c >= z->n || !(*name = tdb_zarr_chunk_key(z->z, z->k, c)))
            return TDB_E_NOENT;
        *child = TREE_CHUNK_INO + z->base + c;
        return 0;
    }
    if (index >= n->nkids)
        return TDB_E_NOENT;
    *child = n->kids[index];
    *name = fs->nodes[*child - 1].name;
    return 0;
}

/* tdb_fs_read of node n. */
static int tree_read(const struct tree_node *n, uint64_t off, void *buf,
                     size_t len, size_t *got, struct tdb_error *err)
{
    switch (n->kind) {
    case TREE_DIR:
        return tdb_err(err, TDB_E_ISDIR, "%s: is a folder", n->name);
    case TREE_BYTES:
        if (off < n->size) {
            *got = len < n->size - off ? len : (size_t)(n->size - off);
            memcpy(buf, n->bytes + off, *got);
        }
        return 0;
    case TREE_FIELD:
        return tdb_fieldfile_read(n->ff, off, buf, len, got, err);
    case TREE_NPY:
        return tdb_npy_read(n->npy, off, buf, len, got, err);
    }
    return 0;
}

int tdb_fs_read(struct tdb_fs *fs, uint64_t ino, uint64_t off, void *buf,
                size_t len, size_t *got, struct tdb_error *err)
{
    uint64_t c;
    const struct tree_zarr *z = tree_chunk(fs, ino, &c);
    *got = 0;
    if (z)
        return tdb_zarr_chunk_read(z->z, z->k, c, off, buf, len, got,
                                   tdb_fs_pool(fs), err);
    struct tree_node *n = tree_get(fs, ino);
    if (!n)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
    int r = tree_read(n, off, buf, len, got, err);
    tree_put(fs, ino, n);
    return r;
}

int tdb_fs_seek(struct tdb_fs *fs, uint64_t ino, uint64_t off, bool data,
                uint64_t *out, struct tdb_error *err)
{
    uint64_t c;
    bool chunk = tree_chunk(fs, ino, &c) != NULL;
    struct tree_node *n = chunk ? NULL : tree_get(fs, ino);
    if (!n && !chunk)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
    if (n && n->kind == TREE_DIR)
        return tdb_err(err, TDB_E_ISDIR, "%s: is a folder", n->name);
    if (n && n->kind == TREE_NPY) {
        int r = tdb_npy_seek(n->npy, off, data, out, err);
        tree_put(fs, ino, n);
        return r;
    }
    struct tdb_stat st;
    int r = tdb_fs_stat(fs, ino, &st, err);
    if (r)
        return r;
    if (off >= st.size)
        return TDB_E_NOENT;
    if (chunk || n->kind == TREE_BYTES) {
        *out = data ? off : st.size;
        return 0;
    }
    return tdb_fieldfile_seek(n->ff, off, data, out, err);
}

struct tdb_pool *tdb_fs_pool(struct tdb_fs *fs)
{
    pthread_mutex_lock(&fs->pool_lock);
    if (!fs->pool_tried) {
        fs->pool_tried = true;
        /* threads=1: the reading thread alone decodes */
        if (fs->opts.threads != 1 &&
            tdb_pool_create(&fs->pool, fs->opts.threads) != 0)
            fs->pool = NULL;
    }
    struct tdb_pool *p = fs->pool;
    pthread_mutex_unlock(&fs->pool_lock);
    return p;
}

struct tdb_fieldfile *tdb_fs_fieldfile(struct tdb_fs *fs, uint64_t ino,
                                       uint64_t *head)
{
    struct tree_node *n = tree_get(fs, ino);
    struct tdb_fieldfile *ff = NULL;
    *head = 0;
    if (n && n->kind == TREE_NPY)
        ff = tdb_npy_fieldfile(n->npy, head);
    else if (n && n->kind == TREE_FIELD)
        ff = n->ff;
    tree_put(fs, ino, n); /* a slice: the caller holds it (tdb_fs_hold) */
    return ff;
}

#define TREE_STATS_XATTR "user.tiledbfs.stats"

int tdb_fs_listxattr(struct tdb_fs *fs, uint64_t ino, size_t index,
                     const char **name)
{
    if (ino == TDB_ROOT_INO) {
        if (index)
            return TDB_E_NOENT;
        *name = TREE_STATS_XATTR;
        return 0;
    }
    struct tree_node *n = tree_get(fs, ino);
    /* a NAME.npy shows the data file's, a slice its own (in fs->nodes,
     * as the names are: static) */
    bool has = n && (n->kind == TREE_NPY && n->raw
                         ? fs->nodes[n->raw - 1].has_xattrs
                         : n->has_xattrs);
    tree_put(fs, ino, n);
    if (!has || index >= 4)
        return TDB_E_NOENT;
    *name = tree_xattrs[index];
    return 0;
}

/* tdb_fs_getxattr of node n (NULL: none). */
static int tree_getxattr(struct tdb_fs *fs, uint64_t ino, struct tree_node *n,
                         const char *name, void *buf, size_t cap,
                         size_t *size)
{
    char tmp[600];
    const char *v = NULL;
    if (n && n->kind == TREE_NPY && n->raw)
        n = &fs->nodes[n->raw - 1];     /* a NAME.npy: the data file's */
    if (ino == TDB_ROOT_INO && !strcmp(name, TREE_STATS_XATTR)) {
        struct tdb_cache_stats cs;
        tdb_cache_stats(fs->cache, &cs);
        pthread_mutex_lock(&fs->slices.lock);
        size_t sn = fs->slices.n;
        uint64_t sev = fs->slices.evicted;
        pthread_mutex_unlock(&fs->slices.lock);
        snprintf(tmp, sizeof tmp,
                 "hits=%" PRIu64 " misses=%" PRIu64 " decodes=%" PRIu64
                 " decoded_bytes=%" PRIu64 " decode_ms=%" PRIu64
                 " evictions=%" PRIu64 " cache_used=%" PRIu64
                 " cache_budget=%" PRIu64 " entries=%" PRIu64
                 " huge_bytes=%" PRIu64 " slices=%zu slices_idle_max=%zu"
                 " slice_evictions=%" PRIu64,
                 cs.hits, cs.misses, cs.decodes, cs.decoded_bytes,
                 cs.decode_ns / 1000000, cs.evictions, cs.used, cs.budget,
                 cs.entries, cs.huge, sn, fs->slices.keep, sev);
        v = tmp;
    } else if (!n || !n->has_xattrs) {
        return TDB_E_NOENT;
    } else if (!strcmp(name, tree_xattrs[0])) {
        v = n->datatype;
    } else if (!strcmp(name, tree_xattrs[1])) {
        v = n->dtype;
    } else if (!strcmp(name, tree_xattrs[2])) {
        uint64_t sz;
        if (n->shape_prefix) {
            v = n->shape_prefix;
        } else if (n->npy) {            /* a slice: its own shape */
            if (tdb_npy_size(n->npy, &sz, NULL))
                return TDB_E_IO;
            v = tdb_npy_shape(n->npy);
        } else if (n->ff) {
            if (tdb_fieldfile_size(n->ff, &sz, NULL))
                return TDB_E_IO;
            uint64_t per = n->ff->part == TDB_FILE_OFFSETS ? 8
                           : n->ff->part == TDB_FILE_VALIDITY ? 1
                           : n->ff->var ? tdb_dt_size(n->ff->type)
                                        : n->ff->cell_size;
            uint64_t cnt = per ? sz / per : 0;
            if (n->ff->part == TDB_FILE_VALUES && !n->ff->var &&
                n->ff->cell_val_num > 1)
                snprintf(tmp, sizeof tmp, "%" PRIu64 ",%u", cnt,
                         n->ff->cell_val_num);
            else if (n->ff->part == TDB_FILE_VALUES && n->ff->var)
                snprintf(tmp, sizeof tmp, "%" PRIu64, sz / (per ? per : 1));
            else
                snprintf(tmp, sizeof tmp, "%" PRIu64, cnt);
            v = tmp;
        }
    } else if (!strcmp(name, tree_xattrs[3])) {
        if (n->cell_val_num == TDB_VAR_NUM)
            v = "var";
        else {
            snprintf(tmp, sizeof tmp, "%u", n->cell_val_num);
            v = tmp;
        }
    }
    if (!v)
        return TDB_E_NOENT;
    size_t l = strlen(v);
    *size = l;
    if (!buf)
        return 0;
    if (cap < l)
        return TDB_E_INVAL;
    memcpy(buf, v, l);
    return 0;
}

int tdb_fs_getxattr(struct tdb_fs *fs, uint64_t ino, const char *name,
                    void *buf, size_t cap, size_t *size)
{
    struct tree_node *n = tree_get(fs, ino);
    int r = tree_getxattr(fs, ino, n, name, buf, cap, size);
    tree_put(fs, ino, n);
    return r;
}

void tdb_fs_cache_stats(struct tdb_fs *fs, struct tdb_cache_stats *st)
{
    tdb_cache_stats(fs->cache, st);
}
