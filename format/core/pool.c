/* pool.c: a pool of threads running queued jobs in order (pool.h), as
 * zstd's common/pool.c runs its jobs: a queue under one lock, threads
 * waiting on one condition. */
#include "core/pool.h"
#include "core/core.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define POOL_MAX_THREADS 64

struct tdb_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct tdb_pool_job *head, *tail;
    bool stop;
    unsigned n;
    pthread_t *th;
};

static void *pool_main(void *arg)
{
    struct tdb_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->work, &p->lock);
        if (!p->head)
            break;
        struct tdb_pool_job *j = p->head;
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->lock);
        j->run(j);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int tdb_pool_create(struct tdb_pool **out, unsigned nthreads)
{
    struct tdb_pool *p = calloc(1, sizeof *p);
    if (!p)
        return TDB_E_NOMEM;
    if (!nthreads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = n < 1 ? 1 : n > POOL_MAX_THREADS ? POOL_MAX_THREADS
                                                    : (unsigned)n;
    }
    p->th = calloc(nthreads, sizeof *p->th);
    if (!p->th) {
        free(p);
        return TDB_E_NOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    for (unsigned i = 0; i < nthreads; i++) {
        if (pthread_create(&p->th[i], NULL, pool_main, p) != 0)
            break;
        p->n++;
    }
    if (!p->n) {
        tdb_pool_free(p);
        return TDB_E_NOMEM;
    }
    *out = p;
    return 0;
}

void tdb_pool_free(struct tdb_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    free(p->th);
    free(p);
}

void tdb_pool_submit(struct tdb_pool *p, struct tdb_pool_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

struct tdb_pool_job *tdb_pool_take(struct tdb_pool *p,
                                   bool (*take)(const struct tdb_pool_job *j,
                                                void *arg),
                                   void *arg)
{
    struct tdb_pool_job *taken = NULL, **end = &taken;
    pthread_mutex_lock(&p->lock);
    struct tdb_pool_job **pp = &p->head, *last = NULL;
    while (*pp) {
        struct tdb_pool_job *j = *pp;
        if (take(j, arg)) {
            *pp = j->next;
            j->next = NULL;
            *end = j;
            end = &j->next;
        } else {
            last = j;
            pp = &j->next;
        }
    }
    p->tail = last;
    pthread_mutex_unlock(&p->lock);
    return taken;
}
