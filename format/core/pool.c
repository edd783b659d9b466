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

/* ------------------------------------------------------------ each */

struct pool_each {
    pthread_mutex_t m;
    pthread_cond_t cv;
    size_t left;
    int r;                      /* the failure of the lowest index */
    size_t at;                  /* that index */
    struct tdb_error *err;      /* the caller's: that failure's */
    int (*fn)(void *arg, size_t i, struct tdb_error *err);
    void *arg;
};

struct pool_each_job {
    struct tdb_pool_job j;      /* first */
    struct pool_each *e;
    size_t i;
};

static void pool_each_run(struct tdb_pool_job *j)
{
    struct pool_each_job *ej = (struct pool_each_job *)j;
    struct pool_each *e = ej->e;
    struct tdb_error err;

    tdb_error_clear(&err);
    int r = e->fn(e->arg, ej->i, &err);
    pthread_mutex_lock(&e->m);
    if (r && (!e->r || ej->i < e->at)) {
        e->r = r;
        e->at = ej->i;
        if (e->err)
            *e->err = err;
    }
    if (--e->left == 0)
        pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->m);
}

int tdb_pool_each(unsigned nthreads, size_t n, tdb_pool_each_fn fn,
                  void *arg, struct tdb_error *err)
{
    struct pool_each e = {.left = n, .err = err, .fn = fn, .arg = arg};
    struct pool_each_job *jobs;
    struct tdb_pool *pool = NULL;

    if (!n)
        return 0;
    if (!nthreads || nthreads > n)
        nthreads = n < POOL_MAX_THREADS ? (unsigned)n : POOL_MAX_THREADS;
    if (!(jobs = calloc(n, sizeof *jobs)) ||
        tdb_pool_create(&pool, nthreads)) {
        free(jobs);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    pthread_mutex_init(&e.m, NULL);
    pthread_cond_init(&e.cv, NULL);
    for (size_t i = 0; i < n; i++) {
        jobs[i] = (struct pool_each_job){.j.run = pool_each_run, .e = &e,
                                         .i = i};
        tdb_pool_submit(pool, &jobs[i].j);
    }
    pthread_mutex_lock(&e.m);
    while (e.left)
        pthread_cond_wait(&e.cv, &e.m);
    pthread_mutex_unlock(&e.m);
    tdb_pool_free(pool);
    pthread_cond_destroy(&e.cv);
    pthread_mutex_destroy(&e.m);
    free(jobs);
    return e.r;
}
