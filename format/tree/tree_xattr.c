/* tree_xattr.c: the extended attributes of the mount contract
 * (docs/LAYOUT.md "xattrs"): a data file's type and shape, the root's
 * cache statistics. */
#include "tree/tree_priv.h"
#include "tree/npy.h"

#include <inttypes.h>
#include <stdio.h>

static const char *const tree_xattrs[] = {
    "user.tiledb.datatype", "user.tiledb.dtype", "user.tiledb.shape",
    "user.tiledb.cell_val_num"};

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
