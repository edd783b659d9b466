/* tree.c: the file tree of the mount contract (docs/LAYOUT.md), opened and
 * closed.  Its nodes are made in tree_nodes.c; an array's folder in
 * tree_array.c, its __zarr/ store in tree_zarr.c, a group's folder and
 * the sources it follows in tree_group.c; the calls on an open tree are
 * in tree_calls.c, tree_slices.c and tree_xattr.c.  Both the daemon and
 * tiledbfs-cat read through these calls. */
#include "tree/tree_priv.h"
#include "tree/npy.h"
#include "tree/zarr.h"

#include <stdlib.h>

size_t tdb_fs_warnings(const struct tdb_fs *fs, const char *const **msgs)
{
    *msgs = (const char *const *)fs->warn;
    return fs->nwarn;
}

const char *tdb_fs_source(const struct tdb_fs *fs, size_t i)
{
    return i < fs->nsrcs ? fs->srcs[i] : NULL;
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
        r = tree_source(fs, root, "", err);
    /* nothing asked for ahead is left on its way (a daemon forks next):
     * once for the whole tree, where each array's open would wait for the
     * other members' requests too */
    tdb_io_settle(io);
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
