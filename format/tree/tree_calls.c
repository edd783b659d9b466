/* tree_calls.c: the calls on an open tree (tiledb_format.h): lookup,
 * resolve, stat, readdir, read and seek, over its nodes, its slices and
 * the chunks of its Zarr stores. */
#include "tree/tree_priv.h"
#include "tree/reader.h"
#include "tree/npy.h"
#include "tree/zarr.h"

#include <inttypes.h>
#include <stdlib.h>

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

/* The bytes of ino at off into buf (*got of len). */
static int tree_copy(struct tdb_fs *fs, uint64_t ino, uint64_t off,
                     void *buf, size_t len, size_t *got, struct tdb_error *err)
{
    uint64_t c;
    const struct tree_zarr *z = tree_chunk(fs, ino, &c);
    if (z) {
        struct tdb_zarr_read rd = {off, buf, len, 0};
        int r = tdb_zarr_chunk_read(z->z, z->k, c, &rd, tdb_fs_pool(fs), err);
        *got = rd.got;
        return r;
    }
    struct tree_node *n = tree_get(fs, ino);
    if (!n)
        return tdb_err(err, TDB_E_NOENT, "no inode %" PRIu64, ino);
    int r = tree_read(n, off, buf, len, got, err);
    tree_put(fs, ino, n);
    return r;
}

int tdb_fs_read(struct tdb_fs *fs, uint64_t ino, uint64_t off, size_t len,
                struct tdb_sink *s, struct tdb_error *err)
{
    s->form = TDB_SINK_COPY;
    s->got = 0;
    s->pieces = NULL;
    s->npieces = 0;
    if (tdb_sink_buffer(s, len))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    size_t got = 0;
    int r = tree_copy(fs, ino, off, s->buf, len, &got, err);
    s->got = r ? 0 : got;
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

void tdb_fs_cache_stats(struct tdb_fs *fs, struct tdb_cache_stats *st)
{
    tdb_cache_stats(fs->cache, st);
}
