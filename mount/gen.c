/* gen.c: the generations of a mount (the views of the source it publishes): their inode numbers, pins and lookups, and a new one made current. */
/*
 * A generation is one opened tree of the source (struct tdb_fs), which
 * never changes.  A write, or with -o refresh a change made elsewhere,
 * opens a new one (tdbm_gen_open) and makes it current (tdbm_gen_swap);
 * the old one is retired and closed once nothing pins it.
 */
#include "priv.h"
#include "tiledb_format_write.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t tdbm_gen_ino(const struct tdbm_gen *g, uint64_t tino)
{
    if (tino == TDB_ROOT_INO)
        return TDBM_ROOT_INO;
    return g->num << TDBM_GEN_SHIFT | tino;
}

static bool tdbm_is_gen_ino(uint64_t ino)
{
    return !(ino & (TDBM_STAGING_BIT | TDBM_META_BIT));
}

/* A new generation over `fs`, not yet in the list. */
struct tdbm_gen *tdbm_gen_new(struct tdb_fs *fs)
{
    struct tdbm_gen *g = calloc(1, sizeof *g);
    uint64_t ino;

    if (!g)
        return NULL;
    g->fs = fs;
    if (tdb_fs_lookup(fs, TDB_ROOT_INO, TDBM_META_DIR, &ino, NULL) == 0)
        g->meta_dir = ino;
    if (tdb_fs_lookup(fs, TDB_ROOT_INO, TDBM_FRAG_DIR, &ino, NULL) == 0)
        g->frag_dir = ino;
    return g;
}

/* Unlinks g from the list (m->lock held). */
static void tdbm_gen_unlink(struct tdbm_mount *m, struct tdbm_gen *g)
{
    for (struct tdbm_gen **pp = &m->gens; *pp; pp = &(*pp)->next) {
        if (*pp == g) {
            *pp = g->next;
            return;
        }
    }
}

/* What a retired generation no longer needs (m->lock held): *fs receives
 * the engine tree to close when nothing pins it, and *gone is true when
 * the record itself can go (then it is unlinked here). */
static void tdbm_gen_settle(struct tdbm_mount *m, struct tdbm_gen *g,
                            struct tdb_fs **fs, bool *gone)
{
    *fs = NULL;
    *gone = false;
    if (!g->retired || g->pins)
        return;
    *fs = g->fs;
    g->fs = NULL;
    if (g->lookups == 0) {
        tdbm_gen_unlink(m, g);
        *gone = true;
    }
}

/* Changes g's counts by (dpins, dlookups), then closes what is no longer
 * needed.  Counts never go below 0. */
void tdbm_gen_count(struct tdbm_mount *m, struct tdbm_gen *g, int64_t dpins,
                    int64_t dlookups)
{
    struct tdb_fs *fs;
    bool gone;

    if (!g)
        return;
    pthread_mutex_lock(&m->lock);
    if (dpins < 0)
        g->pins = g->pins > (uint64_t)-dpins ? g->pins - (uint64_t)-dpins : 0;
    else
        g->pins += (uint64_t)dpins;
    if (dlookups < 0)
        g->lookups = g->lookups > (uint64_t)-dlookups
                         ? g->lookups - (uint64_t)-dlookups : 0;
    else
        g->lookups += (uint64_t)dlookups;
    tdbm_gen_settle(m, g, &fs, &gone);
    pthread_mutex_unlock(&m->lock);
    tdb_fs_close(fs);
    if (gone)
        free(g);
}

/* The generation of `ino` (m->lock held), or NULL. */
static struct tdbm_gen *tdbm_gen_find(struct tdbm_mount *m, uint64_t ino)
{
    struct tdbm_gen *g;

    for (g = m->gens; g && g->num != ino >> TDBM_GEN_SHIFT; g = g->next)
        ;
    return g;
}

/* The generation of `ino` with one more pin, and the engine inode in it;
 * NULL when the generation is closed (a number the kernel kept from
 * before a write) or gone. */
struct tdbm_gen *tdbm_gen_pin(struct tdbm_mount *m, uint64_t ino,
                              uint64_t *tino)
{
    struct tdbm_gen *g = NULL;

    if (!tdbm_is_gen_ino(ino))
        return NULL;
    pthread_mutex_lock(&m->lock);
    if (ino == TDBM_ROOT_INO) {
        g = m->cur;
        *tino = TDB_ROOT_INO;
    } else {
        g = tdbm_gen_find(m, ino);
        *tino = ino & TDBM_TINO_MASK;
    }
    if (g && !g->fs)
        g = NULL;
    if (g)
        g->pins++;
    pthread_mutex_unlock(&m->lock);
    return g;
}

/* Drops `n` pins of g. */
void tdbm_gen_unpin(struct tdbm_mount *m, struct tdbm_gen *g, uint64_t n)
{
    tdbm_gen_count(m, g, -(int64_t)n, 0);
}

/* Counts one more lookup of one of g's inodes by the kernel. */
void tdbm_gen_ref(struct tdbm_mount *m, struct tdbm_gen *g)
{
    tdbm_gen_count(m, g, 0, 1);
}

/* Takes back `n` lookups of generation inode `ino` (the kernel forgot
 * them); the root is not counted. */
void tdbm_gen_forget(struct tdbm_mount *m, uint64_t ino, uint64_t n)
{
    struct tdbm_gen *g;

    if (!tdbm_is_gen_ino(ino) || ino == TDBM_ROOT_INO || ino == 0)
        return;
    pthread_mutex_lock(&m->lock);
    g = tdbm_gen_find(m, ino);
    pthread_mutex_unlock(&m->lock);
    tdbm_gen_count(m, g, 0, -(int64_t)n);
}

/* The names of the root of g, for invalidation (NULL when out of memory). */
static char **tdbm_root_names(const struct tdbm_gen *g, size_t *n)
{
    const char *name;
    uint64_t child;
    size_t cnt = 0;
    char **v;

    while (tdb_fs_readdir(g->fs, TDB_ROOT_INO, cnt, &name, &child, NULL) == 0)
        cnt++;
    v = calloc(cnt ? cnt : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < cnt; i++) {
        if (tdb_fs_readdir(g->fs, TDB_ROOT_INO, i, &name, &child, NULL) != 0 ||
            !(v[i] = strdup(name))) {
            tdbm_names_free(v, i);
            return NULL;
        }
    }
    *n = cnt;
    return v;
}

/* Opens a generation of the source, stamped first when the mount is live
 * (with `stamp` when given, else a digest taken now over the current
 * generation's folders; a digest that fails leaves it unstamped, so that
 * the next check reopens).  m->commit held.  @return 0 or a TDB_E_* code
 * with err filled. */
int tdbm_gen_open(struct tdbm_mount *m, const uint8_t *stamp,
                  struct tdbm_gen **out, struct tdb_error *err)
{
    uint8_t now[TDB_STAMP_BYTES];
    struct tdb_fs *fs;
    int rc;

    *out = NULL;
    tdb_error_clear(err);
    if (m->live && !stamp && tdb_fs_stamp(m->io, m->cur->fs, now, err) == 0)
        stamp = now;
    tdb_error_clear(err);
    rc = tdb_fs_open(&fs, m->io, m->open, err);
    if (rc < 0)
        return rc;
    *out = tdbm_gen_new(fs);
    if (!*out) {
        tdb_fs_close(fs);
        return TDB_E_NOMEM;
    }
    if (stamp)
        memcpy((*out)->stamp, stamp, TDB_STAMP_BYTES);
    (*out)->stamped = stamp != NULL;
    return 0;
}

/* Makes g the current generation; *names receives the old root's
 * entries to invalidate (NULL when out of memory).  m->commit held. */
void tdbm_gen_swap(struct tdbm_mount *m, struct tdbm_gen *g, char ***names,
                   size_t *n)
{
    struct tdbm_gen *old;
    struct tdb_fs *oldfs;
    bool gone;

    pthread_mutex_lock(&m->lock);
    old = m->cur;
    *names = tdbm_root_names(old, n);
    g->num = m->next_gen++;
    g->next = m->gens;
    m->gens = g;
    m->cur = g;
    old->retired = true;
    tdbm_gen_settle(m, old, &oldfs, &gone);
    pthread_mutex_unlock(&m->lock);
    tdb_fs_close(oldfs);
    if (gone)
        free(old);
}

/* After a write: opens a new generation and makes it current; *names
 * receives the old root's entries to invalidate.  m->commit held.
 * @return 0 or a TDB_E_* code (then the old generation stays current). */
int tdbm_reload(struct tdbm_mount *m, char ***names, size_t *n)
{
    struct tdbm_gen *g;
    struct tdb_error err;
    int rc;

    *names = NULL;
    *n = 0;
    rc = tdbm_gen_open(m, NULL, &g, &err);
    if (rc < 0)
        tdbm_log(m, "reopening after a write: %s", tdb_error_text(rc, &err));
    else
        tdbm_gen_swap(m, g, names, n);
    return rc;
}

/* A write timestamp: now in ms, but always after the previous one, so that
 * two writes of one daemon are applied in the order they were made.
 * m->commit held. */
uint64_t tdbm_next_ts(struct tdbm_mount *m)
{
    uint64_t ms;

    for (;;) {
        ms = tdb_now_ms(); /* the engine's clock */
        if (ms > m->last_ts)
            break;
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
    m->last_ts = ms;
    return ms;
}
