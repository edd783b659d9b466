/* tree_nodes.c: the nodes of the tree (tree_priv.h): folders, files of
 * bytes, the cell views and the sentences kept while it is built. */
#include "tree/tree_priv.h"
#include "tree/reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int tree_add(struct tdb_fs *fs, uint64_t parent, const char *name,
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

int tree_add_bytes(struct tdb_fs *fs, uint64_t parent, const char *name,
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

int tree_keep_cells(struct tdb_fs *fs, struct tdb_cells *c)
{
    struct tdb_cells **v = realloc(fs->cells, (fs->ncells + 1) * sizeof *v);
    if (!v)
        return TDB_E_NOMEM;
    fs->cells = v;
    fs->cells[fs->ncells++] = c;
    return 0;
}

int tree_meta(struct tdb_fs *fs, uint64_t parent, const struct tdb_meta *m,
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

/* Records one sentence for tdb_fs_warnings. */
int tree_warn(struct tdb_fs *fs, const char *fmt, ...)
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
