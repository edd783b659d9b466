/* notify.c: telling the kernel that a write changed the root. */
#include "tiledbfs.h"

#include <stdlib.h>
#include <string.h>

/* Tells the kernel that the root changed and that its entries `names`
 * (and so everything below them) are stale.  No lock is held (libfuse's
 * rule for notify calls). */
static void tdbfs_invalidate(struct tdbfs_daemon *d, char **names, size_t n)
{
    fuse_lowlevel_notify_inval_inode(d->se, FUSE_ROOT_ID, 0, 0);
    for (size_t i = 0; i < n; i++)
        fuse_lowlevel_notify_inval_entry(d->se, FUSE_ROOT_ID, names[i],
                                         strlen(names[i]));
}

static void *tdbfs_notifier(void *arg)
{
    struct tdbfs_daemon *d = arg;

    pthread_mutex_lock(&d->qlock);
    for (;;) {
        while (!d->queue && !d->qstop)
            pthread_cond_wait(&d->qcond, &d->qlock);
        if (!d->queue)
            break;
        struct tdbfs_inval *job = d->queue;
        d->queue = job->next;
        pthread_mutex_unlock(&d->qlock);
        tdbfs_invalidate(d, job->names, job->n);
        tdbm_names_free(job->names, job->n);
        free(job);
        pthread_mutex_lock(&d->qlock);
    }
    pthread_mutex_unlock(&d->qlock);
    return NULL;
}

/* Invalidates now (several workers: one is free to answer the kernel's
 * lookups while it waits) or through the helper thread (-s).  Takes the
 * names. */
void tdbfs_invalidate_soon(void *arg, char **names, size_t n)
{
    struct tdbfs_daemon *d = arg;
    struct tdbfs_inval *job;

    if (!d->qthread) {
        if (d->se)
            tdbfs_invalidate(d, names, n);
        tdbm_names_free(names, n);
        return;
    }
    job = calloc(1, sizeof *job);
    if (!job) {
        tdbm_names_free(names, n);
        return;
    }
    job->names = names;
    job->n = n;
    pthread_mutex_lock(&d->qlock);
    struct tdbfs_inval **pp = &d->queue;
    while (*pp)
        pp = &(*pp)->next;
    *pp = job;
    pthread_cond_signal(&d->qcond);
    pthread_mutex_unlock(&d->qlock);
}

void tdbfs_notifier_start(struct tdbfs_daemon *d)
{
    if (pthread_create(&d->notifier, NULL, tdbfs_notifier, d) == 0)
        d->qthread = true;
    else
        tdbfs_log_line(d, "no invalidation thread: the kernel may show "
                       "stale entries after a write");
}

void tdbfs_notifier_stop(struct tdbfs_daemon *d)
{
    if (!d->qthread)
        return;
    pthread_mutex_lock(&d->qlock);
    d->qstop = true;
    pthread_cond_signal(&d->qcond);
    pthread_mutex_unlock(&d->qlock);
    pthread_join(d->notifier, NULL);
    d->qthread = false;
}
