/* tree_xattr.c: the extended attributes of the mount contract
 * (docs/LAYOUT.md "xattrs"): a data file's type and shape, the root's
 * cache statistics. */
#include "tree/tree_priv.h"
#include "tree/npy.h"

#include <inttypes.h>
#include <stdio.h>

#define TREE_STATS_XATTR "user.tiledbfs.stats"

/* The root's statistics: of the tile cache and of the slices. */
static void tree_stats_text(struct tdb_fs *fs, char *tmp, size_t cap)
{
    struct tdb_cache_stats cs;
    tdb_cache_stats(fs->cache, &cs);
    pthread_mutex_lock(&fs->slices.lock);
    size_t sn = fs->slices.n;
    uint64_t sev = fs->slices.evicted;
    pthread_mutex_unlock(&fs->slices.lock);
    snprintf(tmp, cap,
             "hits=%" PRIu64 " misses=%" PRIu64 " decodes=%" PRIu64
             " decoded_bytes=%" PRIu64 " decode_ms=%" PRIu64
             " evictions=%" PRIu64 " cache_used=%" PRIu64
             " cache_budget=%" PRIu64 " entries=%" PRIu64
             " huge_bytes=%" PRIu64 " slices=%zu slices_idle_max=%zu"
             " slice_evictions=%" PRIu64,
             cs.hits, cs.misses, cs.decodes, cs.decoded_bytes,
             cs.decode_ns / 1000000, cs.evictions, cs.used, cs.budget,
             cs.entries, cs.huge, sn, fs->slices.keep, sev);
}

/* Each xattr of a data file: *v its value (NULL: none), in tmp[0..cap)
 * when made.  @return 0 or TDB_E_IO. */
typedef int tree_xattr_fn(const struct tree_node *n, char *tmp, size_t cap,
                          const char **v);

static int tree_x_datatype(const struct tree_node *n, char *tmp, size_t cap,
                           const char **v)
{
    (void)tmp, (void)cap;
    *v = n->datatype;
    return 0;
}

static int tree_x_dtype(const struct tree_node *n, char *tmp, size_t cap,
                        const char **v)
{
    (void)tmp, (void)cap;
    *v = n->dtype;
    return 0;
}

/* The shape of data file ff: its cells (and values per cell). */
static int tree_ff_shape(struct tdb_fieldfile *ff, char *tmp, size_t cap)
{
    uint64_t sz;
    if (tdb_fieldfile_size(ff, &sz, NULL))
        return TDB_E_IO;
    uint64_t per = ff->part == TDB_FILE_OFFSETS ? 8
                   : ff->part == TDB_FILE_VALIDITY ? 1
                   : ff->var ? tdb_dt_size(ff->type)
                             : ff->cell_size;
    uint64_t cnt = per ? sz / per : 0;
    if (ff->part == TDB_FILE_VALUES && !ff->var && ff->cell_val_num > 1)
        snprintf(tmp, cap, "%" PRIu64 ",%u", cnt, ff->cell_val_num);
    else if (ff->part == TDB_FILE_VALUES && ff->var)
        snprintf(tmp, cap, "%" PRIu64, sz / (per ? per : 1));
    else
        snprintf(tmp, cap, "%" PRIu64, cnt);
    return 0;
}

static int tree_x_shape(const struct tree_node *n, char *tmp, size_t cap,
                        const char **v)
{
    uint64_t sz;
    if (n->shape_prefix) {
        *v = n->shape_prefix;
    } else if (n->npy) {            /* a slice: its own shape */
        if (tdb_npy_size(n->npy, &sz, NULL))
            return TDB_E_IO;
        *v = tdb_npy_shape(n->npy);
    } else if (n->ff) {
        if (tree_ff_shape(n->ff, tmp, cap))
            return TDB_E_IO;
        *v = tmp;
    }
    return 0;
}

static int tree_x_cell_val_num(const struct tree_node *n, char *tmp,
                               size_t cap, const char **v)
{
    if (n->cell_val_num == TDB_VAR_NUM) {
        *v = "var";
    } else {
        snprintf(tmp, cap, "%u", n->cell_val_num);
        *v = tmp;
    }
    return 0;
}

/* The xattrs of a data file, in the order tdb_fs_listxattr gives them. */
static const struct {
    const char *name;
    tree_xattr_fn *value;
} tree_xattrs[] = {
    {"user.tiledb.datatype", tree_x_datatype},
    {"user.tiledb.dtype", tree_x_dtype},
    {"user.tiledb.shape", tree_x_shape},
    {"user.tiledb.cell_val_num", tree_x_cell_val_num},
};

#define TREE_NXATTRS (sizeof tree_xattrs / sizeof tree_xattrs[0])

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
        tree_stats_text(fs, tmp, sizeof tmp);
        v = tmp;
    } else if (!n || !n->has_xattrs) {
        return TDB_E_NOENT;
    }
    for (size_t i = 0; !v && i < TREE_NXATTRS; i++)
        if (!strcmp(name, tree_xattrs[i].name) &&
            tree_xattrs[i].value(n, tmp, sizeof tmp, &v))
            return TDB_E_IO;
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
    if (!has || index >= TREE_NXATTRS)
        return TDB_E_NOENT;
    *name = tree_xattrs[index].name;
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
