/* tree_zarr.c: the __zarr/ folders of the mount contract (docs/LAYOUT.md
 * "__zarr", "__zarr of a group"): an array's store with its dimension
 * labels, a group's store of its members' stores. */
#include "tree/tree_priv.h"
#include "tree/zarr.h"

#include <stdlib.h>

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

/* Keeps array a open until the tree closes (closed when it cannot). */
static bool tree_keep_array(struct tdb_fs *fs, struct tdb_array *a)
{
    struct tdb_array **v = realloc(fs->arrays, (fs->narrays + 1) * sizeof *v);
    if (!v) {
        tdb_array_close(a);
        return false;
    }
    fs->arrays = v;
    fs->arrays[fs->narrays++] = a;
    return true;
}

/* The attribute of label l's array (schema ls) that holds its values, in
 * TileDB's layout: dense, one dimension over the labelled one's domain
 * of s (so the same offsets), the values in attribute l->attr_name.
 * @return its index, or ls->nattrs when ls is not so. */
static uint32_t tree_label_attr(const struct tdb_schema *s,
                                const struct tdb_label *l,
                                const struct tdb_schema *ls)
{
    uint32_t attr = ls->nattrs;
    for (uint32_t i = 0; i < ls->nattrs; i++)
        if (!strcmp(ls->attrs[i].name, l->attr_name))
            attr = i;
    const struct tdb_dim *dd = &s->dims[l->dim];
    if (ls->array_type != TDB_DENSE || ls->ndims != 1 ||
        ls->dims[0].type != dd->type ||
        memcmp(ls->dims[0].lo, dd->lo, sizeof dd->lo) ||
        memcmp(ls->dims[0].hi, dd->hi, sizeof dd->hi))
        return ls->nattrs;
    return attr;
}

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
    if (!tree_keep_array(fs, la))
        return TDB_E_NOMEM;
    uint32_t attr = tree_label_attr(a->schema, l, la->schema);
    if (attr == la->schema->nattrs)
        return tree_warn(fs, "dimension label %s: not shown: its array is not "
                         "one dense dimension over the labelled one", l->name);
    struct tdb_frag **all = calloc(la->nfrags + 1, sizeof *all);
    if (!all)
        return TDB_E_NOMEM;
    for (size_t i = 0; i < la->nfrags; i++)
        all[i] = &la->frags[i];
    uint64_t hi = lo[l->dim] + shape[l->dim] - 1;
    struct tdb_cells *lv = NULL;
    r = tdb_cells_dense(&lv, la, &lo[l->dim], &hi,
                        &(struct tdb_frag_list){all, la->nfrags}, &err);
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
int tree_zarr(struct tdb_fs *fs, uint64_t root, struct tdb_array *a,
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
int tree_group_zarr(struct tdb_fs *fs, uint64_t root,
                    const struct tree_shown *sh, const struct tdb_meta *m,
                    struct tdb_error *err)
{
    size_t n = sh->n;
    char *const *shown = sh->shown, *const *why = sh->why;
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
