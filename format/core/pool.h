/* pool.h: a pool of threads that run queued jobs in order (pool.c), the
 * engine's one: the tiles a reader decodes ahead of its reads
 * (read/readahead.c, on the pool of the opened tree), the key ranges of a
 * sparse merge (read/merge_tournament.c, on the same pool, asked for
 * when the merge runs) and the tile jobs of a fragment write
 * (write/wr_tiles.c) run on pools of it. */
#ifndef TDB_CORE_POOL_H
#define TDB_CORE_POOL_H

#include <stdbool.h>
#include <stddef.h>

struct tdb_pool;

/* A job: the caller's struct begins with one.  A thread of the pool calls
 * run(j) once, after which the job is run's (to free). */
struct tdb_pool_job {
    struct tdb_pool_job *next;  /* the pool's */
    void (*run)(struct tdb_pool_job *j);
};

/* Starts `nthreads` threads (0: one per online CPU, at most 64).
 * @return 0 or TDB_E_NOMEM. */
int tdb_pool_create(struct tdb_pool **out, unsigned nthreads);
/* Stops the threads once the jobs queued have run; every user of the pool
 * must have taken back or seen run the jobs it queued first. */
void tdb_pool_free(struct tdb_pool *p);

/* Queues job j, to run after those queued before it. */
void tdb_pool_submit(struct tdb_pool *p, struct tdb_pool_job *j);

/* Takes back the queued jobs no thread has started for which take(j, arg)
 * is true (called under the pool's lock: it must not call the pool).
 * @return them, linked by next in queue order (NULL: none). */
struct tdb_pool_job *tdb_pool_take(struct tdb_pool *p,
                                   bool (*take)(const struct tdb_pool_job *j,
                                                void *arg),
                                   void *arg);

struct tdb_error;

/* One call of tdb_pool_each: the i-th of its n, with an error of its
 * own.  @return 0 or a TDB_E_* code. */
typedef int (*tdb_pool_each_fn)(void *arg, size_t i, struct tdb_error *err);

/* Runs fn(arg, i, err) for each i in [0, n) on up to `nthreads` threads
 * of a pool of their own (made and freed here), and returns once every
 * call ended: all of them, whatever fails (the same calls however they
 * interleave; fn may look for an earlier failure and stop early).  Each
 * call has an error of its own; that of the failure of the lowest i is
 * copied to `err`.  @return 0, that failure's code, or TDB_E_NOMEM. */
int tdb_pool_each(unsigned nthreads, size_t n, tdb_pool_each_fn fn,
                  void *arg, struct tdb_error *err);

#endif
