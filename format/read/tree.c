/* tree.c: the file tree of the mount contract (docs/LAYOUT.md): an array's
 * __array.json, __meta/, __fragments/, data files and their xattrs; a
 * group's __group.json, __meta/ and members.  Both the daemon and
 * tiledbfs-cat read through these calls. */
#include "read/json.h"
#include "read/reader.h"
#include "read/stamp.h"
#include "read/view.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* TREE_NPY: a .npy file: a header (bytes, size) and then the bytes of a
 * field file (ff). */
enum tree_kind { TREE_DIR, TREE_BYTES, TREE_FIELD, TREE_NPY };

struct tree_node {
    char *name;
    uint64_t parent;
    enum tree_kind kind;
    uint64_t *kids;
    size_t nkids, capkids;
    uint8_t *bytes;             /* TREE_BYTES */
    uint64_t size;
    struct tdb_fieldfile *ff;   /* TREE_FIELD, TREE_NPY */
    bool ff_shared;             /* TREE_NPY of a data file: not ours */
    struct tdb_cells *cells;    /* a slice's own view (owned) */
    bool is_slice_dir;          /* __slice: names are made on lookup */
    const char *datatype;       /* xattrs */
    const char *dtype;
    char *shape_prefix;         /* dense: "23,17"; NULL: the cell count */
    uint32_t cell_val_num;
    bool has_xattrs;
    uint64_t mtime_ms;
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
    /* slices made on lookup in __slice/ (inode TREE_SLICE_INO + index) */
    pthread_mutex_t slice_lock;
    struct tree_node **slices;
    size_t nslices;
    /* group members left out (tdb_fs_warnings), members opened */
    char **warn;
    size_t nwarn;
    size_t nmembers;
};

#define TREE_SLICE_INO (UINT64_C(1) << 39)
#define TREE_MAX_SLICES 65536

static const char *const tree_xattrs[] = {
    "user.tiledb.datatype", "user.tiledb.dtype", "user.tiledb.shape",
    "user.tiledb.cell_val_num"};

void tdb_open_options_init(struct tdb_open_options *o)
{
    memset(o, 0, sizeof *o);
    o->ts_end = UINT64_MAX;
    o->cache_bytes = TDB_DEFAULT_CACHE_BYTES;
}

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

char *tdb_mount_name(const char *name, const char *suffix)
{
    size_t n = strlen(name);
    char *s = malloc(3 * n + strlen(suffix) + 8);
    if (!s)
        return NULL;
    char *o = s;
    if (!n) {
        strcpy(o, "__attr");
        o += 6;
    }
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '/' || name[i] == '%') {
            sprintf(o, "%%%02X", (unsigned char)name[i]);
            o += 3;
        } else {
            *o++ = name[i];
        }
    }
    strcpy(o, suffix);
    return s;
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

/* The data files of one field over `cells` in folder `dir`. */
static int tree_field(struct tdb_fs *fs, uint64_t dir, struct tdb_array *a,
                      const struct tdb_schema *s, struct tdb_cells *cells,
                      bool is_dim, uint32_t idx, const char *shape,
                      uint64_t mtime)
{
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
        int r = tree_add(fs, dir, fname, TREE_FIELD, &ino);
        free(fname);
        if (r)
            return r;
        struct tree_node *n = &fs->nodes[ino - 1];
        n->ff = calloc(1, sizeof *n->ff);
        if (!n->ff)
            return TDB_E_NOMEM;
        tdb_fieldfile_init(n->ff, cells, a, s, is_dim, idx, parts[p]);
        n->has_xattrs = true;
        n->mtime_ms = mtime;
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

/* The header of a .npy file (format version 1.0) of `dtype` and shape
 * dims[0..nd) (then cvn as a last axis when above 1), padded so that the
 * data starts at a multiple of 64 bytes. */
static int tree_npy_header(const char *dtype, uint32_t nd,
                           const uint64_t *dims, uint32_t cvn,
                           struct tdb_buf *out)
{
    char shape[600];
    size_t o = 0;
    shape[0] = 0;
    for (uint32_t d = 0; d < nd && o < sizeof shape; d++)
        o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%" PRIu64,
                              d ? ", " : "", dims[d]);
    if (cvn > 1 && o < sizeof shape)
        o += (size_t)snprintf(shape + o, sizeof shape - o, ", %u", cvn);
    else if (nd == 1 && o < sizeof shape)
        o += (size_t)snprintf(shape + o, sizeof shape - o, ",");
    if (o >= sizeof shape)
        return TDB_E_NOMEM;
    char dict[800];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     dtype, shape);
    if (n < 0 || (size_t)n >= sizeof dict - 70)
        return TDB_E_NOMEM;
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    uint8_t head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    uint16_t hl = (uint16_t)(n + pad + 1);
    head[8] = (uint8_t)(hl & 0xff);
    head[9] = (uint8_t)(hl >> 8);
    int r = tdb_buf_append(out, head, 10);
    if (!r)
        r = tdb_buf_append(out, dict, (size_t)n);
    for (size_t i = 0; !r && i < pad; i++)
        r = tdb_buf_put_u8(out, ' ');
    if (!r)
        r = tdb_buf_put_u8(out, '\n');
    return r;
}

/* The numpy dtype of a field's values in a .npy header (strings: S1). */
static const char *tree_npy_dtype(unsigned type)
{
    const char *d = tdb_dt_numpy(type);
    return d ? d : "|u1";
}

/* NAME.npy next to data file `vino` (fixed-size values of a dense view of
 * shape dims), unless the name is taken. */
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
    struct tdb_buf h = {0};
    int r = tree_npy_header(tree_npy_dtype(v->ff->type), nd, dims,
                            v->ff->cell_val_num, &h);
    uint64_t ino;
    if (!r)
        r = tree_add(fs, dir, name, TREE_NPY, &ino);
    free(name);
    if (r) {
        tdb_buf_free(&h);
        return r;
    }
    struct tree_node *n = &fs->nodes[ino - 1];
    v = &fs->nodes[vino - 1];
    n->size = h.len;
    n->bytes = tdb_buf_take(&h, NULL);
    n->ff = v->ff;
    n->ff_shared = true;
    n->mtime_ms = v->mtime_ms;
    return 0;
}

static int tree_meta(struct tdb_fs *fs, uint64_t parent, const struct tdb_meta *m,
                     uint64_t mtime)
{
    uint64_t dir;
    int r = tree_add(fs, parent, "__meta", TREE_DIR, &dir);
    for (size_t i = 0; !r && m && i < m->n; i++) {
        const struct tdb_meta_item *it = &m->v[i];
        char *name = tdb_mount_name(it->key, "");
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

static int tree_array(struct tdb_fs *fs, uint64_t root, struct tdb_array *a,
                      struct tdb_error *err)
{
    const struct tdb_schema *s = a->schema;
    bool dense = s->array_type == TDB_DENSE;
    uint64_t lo[TDB_MAX_DIMS], hi[TDB_MAX_DIMS];
    char shape[512] = "";
    const char *source = NULL;
    bool empty = false;
    int r = 0;
    struct tdb_frag **all = calloc(a->nfrags ? a->nfrags : 1, sizeof *all);
    if (!all)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < a->nfrags; i++)
        all[i] = &a->frags[i];
    struct tdb_cells *view = NULL;
    if (dense) {
        source = tree_region(a, lo, hi, &empty);
        if (!empty)
            tree_shape_str(s, lo, hi, shape, sizeof shape);
        if (!empty)
            r = tdb_cells_dense(&view, a, lo, hi, all, a->nfrags, err);
    } else {
        r = tdb_cells_sparse(&view, a, all, a->nfrags, a->ts_start, a->ts_end, err);
    }
    if (!r && view && (r = tree_keep_cells(fs, view)))
        tdb_cells_free(view);
    /* __array.json */
    struct tdb_buf jtext = {0};
    if (!r)
        r = tdb_json_array(&jtext, a, source, empty, lo, hi);
    uint64_t ino;
    if (!r)
        r = tree_add_bytes(fs, root, "__array.json", jtext.data, jtext.len,
                           &ino);
    if (!r)
        fs->nodes[ino - 1].mtime_ms = a->newest_ts;
    tdb_buf_free(&jtext);
    if (!r)
        r = tree_meta(fs, root, a->meta, a->newest_ts);
    /* __fragments */
    uint64_t fdir = 0;
    if (!r)
        r = tree_add(fs, root, "__fragments", TREE_DIR, &fdir);
    if (!r)
        fs->nodes[fdir - 1].mtime_ms = a->newest_ts;
    for (size_t i = 0; !r && i < a->nfrags; i++) {
        struct tdb_frag *f = &a->frags[i];
        uint64_t dir;
        if ((r = tree_add(fs, fdir, f->fm->name, TREE_DIR, &dir)))
            break;
        fs->nodes[dir - 1].mtime_ms = f->fm->t2;
        struct tdb_buf fj;
        if ((r = tdb_json_fragment(&fj, f, tree_frag_bytes(fs, a, f))))
            break;
        r = tree_add_bytes(fs, dir, "__fragment.json", fj.data, fj.len, &ino);
        tdb_buf_free(&fj);
        if (!r)
            fs->nodes[ino - 1].mtime_ms = f->fm->t2;
        if (r)
            break;
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
            break;
        if ((r = tree_keep_cells(fs, fc))) {
            tdb_cells_free(fc);
            break;
        }
        for (uint32_t k = 0; !r && k < f->fs->nattrs; k++)
            r = tree_field(fs, dir, a, f->fs, fc, false, k,
                           dense ? fshape : NULL, f->fm->t2);
        for (uint32_t k = 0; !r && !dense && k < f->fs->ndims; k++)
            r = tree_field(fs, dir, a, f->fs, fc, true, k, NULL, f->fm->t2);
    }
    /* the merged view */
    for (uint32_t k = 0; !r && view && k < s->nattrs; k++)
        r = tree_field(fs, root, a, s, view, false, k, dense ? shape : NULL,
                       a->newest_ts);
    for (uint32_t k = 0; !r && view && !dense && k < s->ndims; k++)
        r = tree_field(fs, root, a, s, view, true, k, NULL, a->newest_ts);
    /* numpy's files: NAME.npy for each fixed-size attribute of a dense
     * view, and __slice/NAME[a:b,c:d].npy made on lookup */
    uint32_t vnd;
    uint64_t vshape[TDB_MAX_DIMS];
    if (!r && view && dense && tdb_cells_dense_shape(view, &vnd, vshape)) {
        struct tree_node *rt = &fs->nodes[root - 1];
        size_t nk = rt->nkids;
        for (size_t i = 0; !r && i < nk; i++) {
            uint64_t kid = fs->nodes[root - 1].kids[i];
            struct tree_node *k = &fs->nodes[kid - 1];
            if (k->kind == TREE_FIELD && k->ff->cells == view &&
                k->ff->part == TDB_FILE_VALUES && !k->ff->var)
                r = tree_npy(fs, root, kid, vnd, vshape);
        }
        uint64_t sdir;
        if (!r && !(r = tree_add(fs, root, "__slice", TREE_DIR, &sdir))) {
            fs->nodes[sdir - 1].is_slice_dir = true;
            fs->nodes[sdir - 1].mtime_ms = a->newest_ts;
        }
    }
    free(all);
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
    if (!r)
        r = tdb_meta_load(fs->io, metadir, fs->opts.ts_start, fs->opts.ts_end,
                          key, &m, err);
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
    pthread_mutex_init(&fs->slice_lock, NULL);
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
        fs->own_cache = true;
    }
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
    for (size_t i = 0; i < fs->nnodes; i++) {
        struct tree_node *n = &fs->nodes[i];
        free(n->name);
        free(n->kids);
        free(n->bytes);
        free(n->shape_prefix);
        if (n->ff && !n->ff_shared) {
            tdb_fieldfile_destroy(n->ff);
            free(n->ff);
        }
    }
    free(fs->nodes);
    for (size_t i = 0; i < fs->nslices; i++) {
        struct tree_node *n = fs->slices[i];
        free(n->name);
        free(n->bytes);
        tdb_fieldfile_destroy(n->ff);
        free(n->ff);
        tdb_cells_free(n->cells);
        free(n);
    }
    free(fs->slices);
    pthread_mutex_destroy(&fs->slice_lock);
    for (size_t i = 0; i < fs->nwarn; i++)
        free(fs->warn[i]);
    free(fs->warn);
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

/* ------------------------------------------------------------- the calls */

static struct tree_node *tree_get(struct tdb_fs *fs, uint64_t ino)
{
    if (ino >= TREE_SLICE_INO) {
        struct tree_node *n = NULL;
        pthread_mutex_lock(&fs->slice_lock);
        if (ino - TREE_SLICE_INO < fs->nslices)
            n = fs->slices[ino - TREE_SLICE_INO];
        pthread_mutex_unlock(&fs->slice_lock);
        return n;
    }
    return ino >= 1 && ino <= fs->nnodes ? &fs->nodes[ino - 1] : NULL;
}

/* Parses "[a:b,c:d]" (one a:b per dimension, half-open, a or b may be left
 * out) against a view of shape[0..nd).  @return true when valid. */
static bool tree_slice_parse(const char *s, uint32_t nd, const uint64_t *shape,
                             uint64_t *from, uint64_t *to)
{
    if (*s++ != '[')
        return false;
    for (uint32_t d = 0; d < nd; d++) {
        char *e;
        from[d] = 0;
        to[d] = shape[d];
        if (*s >= '0' && *s <= '9') {
            from[d] = strtoull(s, &e, 10);
            s = e;
        }
        if (*s++ != ':')
            return false;
        if (*s >= '0' && *s <= '9') {
            to[d] = strtoull(s, &e, 10);
            s = e;
        }
        if (*s++ != (d + 1 < nd ? ',' : ']'))
            return false;
        if (to[d] > shape[d] || from[d] >= to[d])
            return false;
    }
    return !strcmp(s, ".npy");
}

/* Finds or makes __slice/NAME (a .npy of part of a data file's view). */
static int tree_slice(struct tdb_fs *fs, struct tree_node *dir,
                      const char *name, uint64_t *ino, struct tdb_error *err)
{
    const char *br = strrchr(name, '[');
    struct tree_node *root = dir->parent ? tree_get(fs, dir->parent) : NULL;
    struct tree_node *v = NULL;
    for (size_t i = 0; br && root && i < root->nkids && !v; i++) {
        struct tree_node *k = &fs->nodes[root->kids[i] - 1];
        if (k->kind == TREE_FIELD && k->ff->part == TDB_FILE_VALUES &&
            !k->ff->var && strlen(k->name) == (size_t)(br - name) &&
            !strncmp(k->name, name, (size_t)(br - name)))
            v = k;
    }
    uint32_t nd;
    uint64_t shape[TDB_MAX_DIMS], from[TDB_MAX_DIMS], to[TDB_MAX_DIMS];
    if (!v || !tdb_cells_dense_shape(v->ff->cells, &nd, shape) ||
        !tree_slice_parse(br, nd, shape, from, to))
        return tdb_err(err, TDB_E_NOENT, "__slice/%s: not FIELD[a:b,...].npy "
                       "of a fixed-size field, one a:b per dimension inside "
                       "the view", name);
    pthread_mutex_lock(&fs->slice_lock);
    for (size_t i = 0; i < fs->nslices; i++) {
        if (!strcmp(fs->slices[i]->name, name)) {
            *ino = TREE_SLICE_INO + i;
            pthread_mutex_unlock(&fs->slice_lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&fs->slice_lock);
    struct tree_node *n = calloc(1, sizeof *n);
    struct tdb_buf h = {0};
    uint64_t dims[TDB_MAX_DIMS];
    for (uint32_t d = 0; d < nd; d++)
        dims[d] = to[d] - from[d];
    int r = n ? 0 : TDB_E_NOMEM;
    if (!r && !(n->name = strdup(name)))
        r = TDB_E_NOMEM;
    if (!r)
        r = tdb_cells_dense_sub(&n->cells, v->ff->cells, from, to, err);
    if (!r && !(n->ff = calloc(1, sizeof *n->ff)))
        r = TDB_E_NOMEM;
    if (!r)
        r = tdb_fieldfile_init(n->ff, n->cells, v->ff->arr, v->ff->schema,
                               v->ff->is_dim, v->ff->idx, TDB_FILE_VALUES);
    if (!r)
        r = tree_npy_header(tree_npy_dtype(v->ff->type), nd, dims,
                            v->ff->cell_val_num, &h);
    if (!r) {
        n->kind = TREE_NPY;
        n->size = h.len;
        n->bytes = tdb_buf_take(&h, NULL);
        n->mtime_ms = v->mtime_ms;
        pthread_mutex_lock(&fs->slice_lock);
        /* another thread may have made it meanwhile: keep the first */
        for (size_t i = 0; i < fs->nslices; i++) {
            if (!strcmp(fs->slices[i]->name, name)) {
                *ino = TREE_SLICE_INO + i;
                pthread_mutex_unlock(&fs->slice_lock);
                r = 1;
                break;
            }
        }
        if (!r) {
            struct tree_node **t = fs->nslices < TREE_MAX_SLICES
                ? realloc(fs->slices, (fs->nslices + 1) * sizeof *t) : NULL;
            if (t) {
                fs->slices = t;
                fs->slices[fs->nslices] = n;
                *ino = TREE_SLICE_INO + fs->nslices++;
                n = NULL;
            } else {
                r = tdb_err(err, TDB_E_NOMEM, "__slice: too many slices");
            }
            pthread_mutex_unlock(&fs->slice_lock);
        }
    }
    tdb_buf_free(&h);
    if (n) {
        free(n->name);
        free(n->bytes);
        if (n->ff)
            tdb_fieldfile_destroy(n->ff);
        free(n->ff);
        tdb_cells_free(n->cells);
        free(n);
    }
    if (r == 1)
        r = 0;
    if (r && err && !err->code)
        tdb_err(err, r, "__slice/%s: out of memory", name);
    return r;
}

int tdb_fs_lookup(struct tdb_fs *fs, uint64_t parent, const char *name,
                  uint64_t *ino, struct tdb_error *err)
{
    struct tree_node *p = tree_get(fs, parent);
    if (!p)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, parent);
    if (p->kind != TREE_DIR)
        return tdb_err(err, TDB_E_NOTDIR, "%s: not a folder", p->name);
    for (size_t i = 0; i < p->nkids; i++) {
        if (!strcmp(fs->nodes[p->kids[i] - 1].name, name)) {
            *ino = p->kids[i];
            return 0;
        }
    }
    if (p->is_slice_dir)
        return tree_slice(fs, p, name, ino, err);
    return tdb_err(err, TDB_E_NOENT, "%s: no such file", name);
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
            if (nd && nd->parent)
                cur = nd->parent;
            continue;
        }
        int r = tdb_fs_lookup(fs, cur, part, &cur, err);
        if (r)
            return r;
    }
    *ino = cur;
    return 0;
}

int tdb_fs_stat(struct tdb_fs *fs, uint64_t ino, struct tdb_stat *st,
                struct tdb_error *err)
{
    struct tree_node *n = tree_get(fs, ino);
    if (!n)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
    memset(st, 0, sizeof *st);
    st->ino = ino;
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
    case TREE_NPY: {
        int r = tdb_fieldfile_size(n->ff, &st->size, err);
        st->size += n->size;
        return r;
    }
    }
    return 0;
}

int tdb_fs_readdir(struct tdb_fs *fs, uint64_t ino, uint64_t index,
                   const char **name, uint64_t *child, struct tdb_error *err)
{
    struct tree_node *n = tree_get(fs, ino);
    if (!n)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
    if (n->kind != TREE_DIR)
        return tdb_err(err, TDB_E_NOTDIR, "%s: not a folder", n->name);
    if (index >= n->nkids)
        return TDB_E_NOENT;
    *child = n->kids[index];
    *name = fs->nodes[*child - 1].name;
    return 0;
}

int tdb_fs_read(struct tdb_fs *fs, uint64_t ino, uint64_t off, void *buf,
                size_t len, size_t *got, struct tdb_error *err)
{
    struct tree_node *n = tree_get(fs, ino);
    *got = 0;
    if (!n)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
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
    case TREE_NPY: {
        size_t h = 0;
        if (off < n->size) {
            h = len < n->size - off ? len : (size_t)(n->size - off);
            memcpy(buf, n->bytes + off, h);
        }
        size_t more = 0;
        int r = 0;
        if (h < len)
            r = tdb_fieldfile_read(n->ff, off + h - n->size,
                                   (uint8_t *)buf + h, len - h, &more, err);
        *got = r ? 0 : h + more;
        return r;
    }
    }
    return 0;
}

int tdb_fs_seek(struct tdb_fs *fs, uint64_t ino, uint64_t off, bool data,
                uint64_t *out, struct tdb_error *err)
{
    struct tree_node *n = tree_get(fs, ino);
    if (!n)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
    if (n->kind == TREE_DIR)
        return tdb_err(err, TDB_E_ISDIR, "%s: is a folder", n->name);
    struct tdb_stat st;
    int r = tdb_fs_stat(fs, ino, &st, err);
    if (r)
        return r;
    if (off >= st.size)
        return TDB_E_NOENT;
    if (n->kind == TREE_BYTES) {
        *out = data ? off : st.size;
        return 0;
    }
    uint64_t head = n->kind == TREE_NPY ? n->size : 0;
    if (off < head && data) {
        *out = off; /* the header is data */
        return 0;
    }
    r = tdb_fieldfile_seek(n->ff, off < head ? 0 : off - head, data, out, err);
    if (!r)
        *out += head;
    return r;
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
    *head = n && n->kind == TREE_NPY ? n->size : 0;
    return n && (n->kind == TREE_FIELD || n->kind == TREE_NPY) ? n->ff : NULL;
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
    if (!n || !n->has_xattrs || index >= 4)
        return TDB_E_NOENT;
    *name = tree_xattrs[index];
    return 0;
}

int tdb_fs_getxattr(struct tdb_fs *fs, uint64_t ino, const char *name,
                    void *buf, size_t cap, size_t *size)
{
    struct tree_node *n = tree_get(fs, ino);
    char tmp[600];
    const char *v = NULL;
    if (ino == TDB_ROOT_INO && !strcmp(name, TREE_STATS_XATTR)) {
        struct tdb_cache_stats cs;
        tdb_cache_stats(fs->cache, &cs);
        snprintf(tmp, sizeof tmp,
                 "hits=%" PRIu64 " misses=%" PRIu64 " decodes=%" PRIu64
                 " decoded_bytes=%" PRIu64 " decode_ms=%" PRIu64
                 " evictions=%" PRIu64 " cache_used=%" PRIu64
                 " cache_budget=%" PRIu64 " entries=%" PRIu64,
                 cs.hits, cs.misses, cs.decodes, cs.decoded_bytes,
                 cs.decode_ns / 1000000, cs.evictions, cs.used, cs.budget,
                 cs.entries);
        v = tmp;
    } else if (!n || !n->has_xattrs) {
        return TDB_E_NOENT;
    } else if (!strcmp(name, tree_xattrs[0])) {
        v = n->datatype;
    } else if (!strcmp(name, tree_xattrs[1])) {
        v = n->dtype;
    } else if (!strcmp(name, tree_xattrs[2])) {
        if (n->shape_prefix) {
            v = n->shape_prefix;
        } else if (n->ff) {
            uint64_t sz;
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

void tdb_fs_cache_stats(struct tdb_fs *fs, struct tdb_cache_stats *st)
{
    tdb_cache_stats(fs->cache, st);
}
