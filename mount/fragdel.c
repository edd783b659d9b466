/* fragdel.c: rm -r __fragments/NAME on a writable mount: the fragment deleted as TileDB's delete_fragments_list does. */
/*
 * `rm -r` removes each file of the folder, then the folder.  The files of
 * a fragment's folder are views of its cells, not things that could go
 * one by one, so an unlink of one only hides it from this mount's listing
 * (and lookups) of that folder; the rmdir of the folder, once nothing in
 * it is left to list (else ENOTEMPTY, as for any folder), deletes the
 * fragment: its commit goes at once (tdb_fragment_uncommit), a new
 * generation becomes current, and the fragment's folder is removed
 * (tdb_fragment_delete) once no generation that shows it is open any
 * more, so that an open file keeps reading the bytes it opened.  A mount
 * that ends removes what is still waiting.
 */
#include "priv.h"
#include "tiledb_format_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A file of a fragment folder unlinked (hidden from this mount). */
struct tdbm_hidden {
    struct tdbm_hidden *next;
    char *frag, *file;
};

/* A fragment uncommitted whose folder waits for the generations before
 * `before` to close; frag NULL: a consolidation's vacuum waits. */
struct tdbm_pending {
    struct tdbm_pending *next;
    char *frag;
    uint64_t before;
};

/* A consolidation's vacuum (tdbm_frag_defer_vacuum), now that no
 * generation reads what it removes; logged. */
static void tdbm_frag_vacuum(struct tdbm_mount *m)
{
    static const char *const what[3] = {"fragments", "fragment_meta",
                                        "commits"};
    for (int i = 0; i < 3; i++) {
        struct tdb_cons_result r;
        struct tdb_error err;
        tdb_error_clear(&err);
        int rc = i == 0 ? tdb_vacuum_fragments(m->io, m->open->key, &r, &err)
                 : i == 1 ? tdb_vacuum_fragment_meta(m->io, &r, &err)
                          : tdb_vacuum_commits(m->io, &r, &err);
        if (rc)
            tdbm_log(m, "vacuum of %s: %s", what[i],
                     tdb_error_text(rc, &err));
        else if (r.removed)
            tdbm_log(m, "vacuum of %s: removed %llu files", what[i],
                     (unsigned long long)r.removed);
    }
}

int tdbm_frag_defer_vacuum(struct tdbm_mount *m)
{
    struct tdbm_pending *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    pthread_mutex_lock(&m->lock);
    p->before = m->next_gen - 1; /* the current one stays open */
    p->next = m->pending;
    m->pending = p;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

const char *tdbm_frag_of(const struct tdbm_gen *g, uint64_t tino)
{
    const char *name;
    uint64_t child;

    if (!g->frag_dir || tino == g->frag_dir || tino == TDB_ROOT_INO)
        return NULL;
    for (uint64_t i = 0;
         tdb_fs_readdir(g->fs, g->frag_dir, i, &name, &child, NULL) == 0; i++)
        if (child == tino)
            return name;
    return NULL;
}

/* Whether file `file` of fragment `frag` is hidden (m->lock held). */
static bool tdbm_hidden_locked(const struct tdbm_mount *m, const char *frag,
                               const char *file)
{
    for (const struct tdbm_hidden *h = m->hidden; h; h = h->next)
        if (!strcmp(h->frag, frag) && !strcmp(h->file, file))
            return true;
    return false;
}

bool tdbm_frag_hidden(struct tdbm_mount *m, const struct tdbm_gen *g,
                      uint64_t tino, const char *file)
{
    const char *frag;
    bool yes;

    pthread_mutex_lock(&m->lock);
    yes = m->hidden != NULL;
    pthread_mutex_unlock(&m->lock);
    if (!yes || !(frag = tdbm_frag_of(g, tino)))
        return false;
    pthread_mutex_lock(&m->lock);
    yes = tdbm_hidden_locked(m, frag, file);
    pthread_mutex_unlock(&m->lock);
    return yes;
}

/* Forgets the hidden files of fragment `frag` (all: NULL); m->lock held. */
static void tdbm_unhide_locked(struct tdbm_mount *m, const char *frag)
{
    for (struct tdbm_hidden **pp = &m->hidden; *pp;) {
        struct tdbm_hidden *h = *pp;
        if (frag && strcmp(h->frag, frag)) {
            pp = &h->next;
            continue;
        }
        *pp = h->next;
        free(h->frag);
        free(h->file);
        free(h);
    }
}

int tdbm_frag_unlink(struct tdbm_mount *m, uint64_t parent, const char *name)
{
    struct tdbm_hidden *h;
    struct tdbm_gen *g;
    const char *frag;
    uint64_t tino, child;
    int rc = 0;

    if (!m->rw || !m->is_array)
        return 1;
    g = tdbm_gen_pin(m, parent, &tino);
    if (!g)
        return 1;
    frag = tdbm_frag_of(g, tino);
    if (!frag) {
        tdbm_gen_unpin(m, g, 1);
        return 1;
    }
    if (tdb_fs_lookup(g->fs, tino, name, &child, NULL) != 0)
        rc = -ENOENT;
    h = rc ? NULL : calloc(1, sizeof *h);
    if (!rc && (!h || !(h->frag = strdup(frag)) ||
                !(h->file = strdup(name))))
        rc = -ENOMEM;
    if (!rc) {
        pthread_mutex_lock(&m->lock);
        if (tdbm_hidden_locked(m, frag, name)) {
            rc = -ENOENT;
        } else {
            h->next = m->hidden;
            m->hidden = h;
            h = NULL;
        }
        pthread_mutex_unlock(&m->lock);
    }
    if (h) {
        free(h->frag);
        free(h->file);
        free(h);
    }
    tdbm_gen_unpin(m, g, 1);
    return rc;
}

int tdbm_frag_listing(struct tdbm_mount *m, struct tdbm_handle *h)
{
    const char *frag, *name;
    uint64_t child, n = 0;

    pthread_mutex_lock(&m->lock);
    bool any = m->hidden != NULL;
    pthread_mutex_unlock(&m->lock);
    if (!any || !(frag = tdbm_frag_of(h->gen, h->tino)))
        return 0;
    while (tdb_fs_readdir(h->gen->fs, h->tino, n, &name, &child, NULL) == 0)
        n++;
    h->vis = malloc((n ? n : 1) * sizeof *h->vis);
    if (!h->vis)
        return -ENOMEM;
    h->filtered = true;
    pthread_mutex_lock(&m->lock);
    for (uint64_t i = 0; i < n; i++)
        if (tdb_fs_readdir(h->gen->fs, h->tino, i, &name, &child, NULL) ==
                0 && !tdbm_hidden_locked(m, frag, name))
            h->vis[h->nvis++] = i;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

/* Whether folder `tino` of g lists nothing this mount has not hidden. */
static bool tdbm_frag_empty(struct tdbm_mount *m, struct tdbm_gen *g,
                            uint64_t tino, const char *frag)
{
    const char *name;
    uint64_t child;
    bool empty = true;

    pthread_mutex_lock(&m->lock);
    for (uint64_t i = 0; empty && tdb_fs_readdir(g->fs, tino, i, &name,
                                                 &child, NULL) == 0; i++)
        empty = tdbm_hidden_locked(m, frag, name);
    pthread_mutex_unlock(&m->lock);
    return empty;
}

/* Removes the folders of the pending fragments whose generations are all
 * closed (`all`: every pending one, the mount ending), logged. */
static void tdbm_frag_remove(struct tdbm_mount *m, bool all)
{
    for (;;) {
        struct tdbm_pending *p = NULL;
        uint64_t oldest = UINT64_MAX;

        pthread_mutex_lock(&m->lock);
        for (struct tdbm_gen *g = m->gens; g; g = g->next)
            if (g->fs && g->num < oldest)
                oldest = g->num;
        for (struct tdbm_pending **pp = &m->pending; *pp;
             pp = &(*pp)->next) {
            if (all || (*pp)->before <= oldest) {
                p = *pp;
                *pp = p->next;
                break;
            }
        }
        pthread_mutex_unlock(&m->lock);
        if (!p)
            return;
        if (!p->frag) {
            tdbm_frag_vacuum(m);
            free(p);
            continue;
        }
        struct tdb_cons_result r;
        struct tdb_error err;
        tdb_error_clear(&err);
        int rc = tdb_fragment_delete(m->io, p->frag, m->open->key, &r, &err);
        if (rc != 0 && rc != TDB_E_NOENT)
            tdbm_log(m, "removing the folder of deleted fragment "
                     "__fragments/%s: %s (it is no longer committed; "
                     "tiledbfs-consolidate --vacuum or rm can remove it)",
                     p->frag, tdb_error_text(rc, &err));
        else
            tdbm_log(m, "removed the folder of deleted fragment "
                     "__fragments/%s", p->frag);
        free(p->frag);
        free(p);
    }
}

void tdbm_frag_reap(struct tdbm_mount *m)
{
    tdbm_frag_remove(m, false);
}

void tdbm_frag_end(struct tdbm_mount *m)
{
    tdbm_frag_remove(m, true);
    tdbm_unhide_locked(m, NULL);
}

/* Whether folder `name` of parent is an empty fragment folder of the
 * newest view of a writable array's __fragments.  @return 0 when it is,
 * 1 when parent is no such folder (not ours to answer), or -ESTALE (an
 * older view's), -ENOENT, -ENOTEMPTY. */
static int tdbm_frag_removable(struct tdbm_mount *m, uint64_t parent,
                               const char *name)
{
    struct tdbm_gen *g;
    uint64_t tino, child;
    int rc;

    if (!m->rw || !m->is_array)
        return 1;
    g = tdbm_gen_pin(m, parent, &tino);
    if (!g)
        return 1;
    if (tino != g->frag_dir || !tino) {
        tdbm_gen_unpin(m, g, 1);
        return 1;
    }
    pthread_mutex_lock(&m->lock);
    bool old = g->retired;
    pthread_mutex_unlock(&m->lock);
    if (old) {
        /* an older view's folder: the kernel looks the path up again */
        tdbm_gen_unpin(m, g, 1);
        return -ESTALE;
    }
    rc = tdb_fs_lookup(g->fs, tino, name, &child, NULL) ? -ENOENT : 0;
    if (!rc && !tdbm_frag_empty(m, g, child, name))
        rc = -ENOTEMPTY;
    tdbm_gen_unpin(m, g, 1);
    return rc;
}

/* Uncommits fragment `name` (commit lock held), p then pending until
 * every view before the next one is gone; *names the files to
 * invalidate after the reload.  @return 0 or -errno (p freed). */
static int tdbm_frag_uncommit(struct tdbm_mount *m, struct tdbm_pending *p,
                              const char *name, char ***names, size_t *n)
{
    struct tdb_cons_result r;
    struct tdb_error err;
    tdb_error_clear(&err);
    int rc = tdb_fragment_uncommit(m->io, name, m->open->key, &r, &err);
    if (rc != 0) {
        tdbm_log(m, "deleting fragment __fragments/%s: %s", name,
                 tdb_error_text(rc, &err));
        free(p->frag);
        free(p);
        return -tdb_errno(rc);
    }
    tdbm_log(m, "deleted fragment __fragments/%s%s%s", name,
             r.name[0] ? ", ignored by " : "", r.name);
    pthread_mutex_lock(&m->lock);
    p->before = m->next_gen;
    p->next = m->pending;
    m->pending = p;
    tdbm_unhide_locked(m, name);
    pthread_mutex_unlock(&m->lock);
    tdbm_reload(m, names, n);
    return 0;
}

int tdbm_frag_rmdir(struct tdbm_mount *m, uint64_t parent, const char *name)
{
    struct tdbm_pending *p;
    char **names = NULL;
    size_t n = 0;
    int rc = tdbm_frag_removable(m, parent, name);

    if (rc)
        return rc;
    p = calloc(1, sizeof *p);
    if (!p || !(p->frag = strdup(name))) {
        free(p);
        return -ENOMEM;
    }
    pthread_mutex_lock(&m->commit);
    rc = tdbm_frag_uncommit(m, p, name, &names, &n);
    pthread_mutex_unlock(&m->commit);
    if (names)
        tdbm_invalidate(m, names, n);
    if (rc == 0)
        tdbm_frag_reap(m);
    return rc;
}
