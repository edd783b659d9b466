/* reader.h: the decode pool of an opened tree (threads that decode tiles
 * ahead of a reader) and what the tree gives the readers (reader.c). */
#ifndef TDB_READER_H
#define TDB_READER_H

#include "read/view.h"

struct tdb_pool;

/* Starts `nthreads` decoding threads (0: one per online CPU).
 * @return 0 or TDB_E_NOMEM. */
int tdb_pool_create(struct tdb_pool **out, unsigned nthreads);
/* Stops the threads; every reader using the pool must be closed first. */
void tdb_pool_free(struct tdb_pool *p);

/* tree.c: the pool of fs (started on first use; NULL when threads=1 or
 * it could not start: readers then decode in the calling thread), and the
 * field file of node ino (NULL for folders and JSON files) and the bytes
 * before it in the file (*head: a .npy header). */
struct tdb_pool *tdb_fs_pool(struct tdb_fs *fs);
struct tdb_fieldfile *tdb_fs_fieldfile(struct tdb_fs *fs, uint64_t ino,
                                       uint64_t *head);

#endif
