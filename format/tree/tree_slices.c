/* tree_slices.c: the files of __slice/ and __domain/ (docs/LAYOUT.md),
 * made on lookup from their names and kept in a bounded LRU. */
#include "tree/tree_priv.h"
#include "tree/npy.h"

#include <stdlib.h>

void tree_slice_free(struct tree_slice *sl)
{
    if (!sl)
        return;
    free(sl->node.name);
    tdb_npy_free(sl->node.npy);
    free(sl);
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

/* The node of inode ino, or NULL; a slice is held until tree_put. */
struct tree_node *tree_get(struct tdb_fs *fs, uint64_t ino)
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
void tree_put(struct tdb_fs *fs, uint64_t ino, struct tree_node *n)
{
    if (ino < TREE_SLICE_INO || !n)
        return;
    pthread_mutex_lock(&fs->slices.lock);
    tree_slice_unref(fs, (struct tree_slice *)n);
    pthread_mutex_unlock(&fs->slices.lock);
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
int tree_slice(struct tdb_fs *fs, uint64_t dir, const char *name,
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

/* The node of inode ino when it is no slice (folders, and the files
 * opened with the tree), or NULL. */
struct tree_node *tree_perm(struct tdb_fs *fs, uint64_t ino)
{
    return ino >= 1 && ino <= fs->nnodes ? &fs->nodes[ino - 1] : NULL;
}
