/* autocons.c: -o consolidate=N on a writable mount: an array that stays fast by itself. */
/*
 * Once a commit leaves more than N fragments, the mount consolidates the
 * fragment metadata and the commits at once (a new generation opens one
 * footer file and one commit list), then the fragments on a thread of
 * their own (tdb_consolidate_fragments; commits go on meanwhile and are
 * left out of it), makes the merged view current, and has what the merge
 * superseded vacuumed once no open file or folder of an older generation
 * is left (fragdel.c's deferred removals).  One consolidation at a time;
 * the mount's end waits for one under way.
 */
#include "priv.h"
#include "tiledb_format_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The fragments the current generation shows. */
static uint64_t tdbm_autocons_count(struct tdbm_mount *m)
{
    const char *name;
    uint64_t child, n = 0, tino;
    struct tdbm_gen *g = tdbm_gen_pin(m, TDBM_ROOT_INO, &tino);

    if (!g)
        return 0;
    while (g->frag_dir &&
           tdb_fs_readdir(g->fs, g->frag_dir, n, &name, &child, NULL) == 0)
        n++;
    tdbm_gen_unpin(m, g, 1);
    return n;
}

/* One consolidation step (MODE: its name in the log); logged. */
static void tdbm_autocons_step(struct tdbm_mount *m, const char *mode,
                               int (*fn)(const struct tdb_io *,
                                         const uint8_t *,
                                         struct tdb_cons_result *,
                                         struct tdb_error *))
{
    struct tdb_cons_result r;
    struct tdb_error err;
    tdb_error_clear(&err);
    int rc = fn(m->io, m->open->key, &r, &err);
    if (rc && rc != TDB_E_UNSUPPORTED)
        tdbm_log(m, "consolidate=%u: %s: %s", m->opts->consolidate, mode,
                 tdb_error_text(rc, &err));
    else if (!rc && r.name[0])
        tdbm_log(m, "consolidate=%u: %s: %llu merged into %s",
                 m->opts->consolidate, mode, (unsigned long long)r.merged,
                 r.name);
}

/* A new generation made current, the old names invalidated. */
static void tdbm_autocons_reload(struct tdbm_mount *m)
{
    char **names = NULL;
    size_t n = 0;
    pthread_mutex_lock(&m->commit);
    int rc = tdbm_reload(m, &names, &n);
    pthread_mutex_unlock(&m->commit);
    if (rc)
        tdbm_log(m, "consolidate=%u: a new view of the array: %s",
                 m->opts->consolidate, strerror(-rc));
    if (names)
        tdbm_invalidate(m, names, n);
}

/* The thread: the fragments merged, the merged view made current, then
 * the superseded files vacuumed when no older view is open. */
static void *tdbm_autocons_run(void *arg)
{
    struct tdbm_mount *m = arg;
    struct tdb_cons_options o = {m->open->key, m->open->threads, 0};
    struct tdb_cons_result r;
    struct tdb_error err;
    tdb_error_clear(&err);
    int rc = tdb_consolidate_fragments(m->io, &o, &r, &err);
    if (rc)
        tdbm_log(m, "consolidate=%u: fragments: %s", m->opts->consolidate,
                 tdb_error_text(rc, &err));
    else if (r.name[0])
        tdbm_log(m, "consolidate=%u: fragments: %llu merged into %s",
                 m->opts->consolidate, (unsigned long long)r.merged, r.name);
    if (!rc && r.name[0]) {
        tdbm_autocons_reload(m);
        tdbm_frag_defer_vacuum(m);
        tdbm_frag_reap(m);
    }
    pthread_mutex_lock(&m->lock);
    m->cons_running = false;
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

void tdbm_autocons(struct tdbm_mount *m)
{
    unsigned n = m->opts->consolidate;
    if (!n || !m->rw || !m->is_array || tdbm_autocons_count(m) <= n)
        return;
    pthread_mutex_lock(&m->lock);
    bool busy = m->cons_running, join = false;
    if (!busy) {
        m->cons_running = true;
        join = m->cons_started;
        m->cons_started = false;
    }
    pthread_mutex_unlock(&m->lock);
    if (busy)
        return;
    if (join)
        pthread_join(m->cons_thread, NULL); /* (it has finished its work) */
    /* at once: one footer file and one commit list for the next opens */
    pthread_mutex_lock(&m->commit);
    tdbm_autocons_step(m, "fragment_meta", tdb_consolidate_fragment_meta);
    tdbm_autocons_step(m, "commits", tdb_consolidate_commits);
    pthread_mutex_unlock(&m->commit);
    tdbm_autocons_reload(m);
    int rc = pthread_create(&m->cons_thread, NULL, tdbm_autocons_run, m);
    if (rc) {
        tdbm_log(m, "consolidate=%u: fragments: no thread: %s", n,
                 strerror(rc));
        pthread_mutex_lock(&m->lock);
        m->cons_running = false;
        pthread_mutex_unlock(&m->lock);
        return;
    }
    pthread_mutex_lock(&m->lock);
    m->cons_started = true;
    pthread_mutex_unlock(&m->lock);
}

void tdbm_autocons_end(struct tdbm_mount *m)
{
    pthread_mutex_lock(&m->lock);
    bool join = m->cons_started;
    m->cons_started = false;
    pthread_mutex_unlock(&m->lock);
    if (join)
        pthread_join(m->cons_thread, NULL);
}
