/* reader.h: what an opened tree gives the readers of its files (reader.c):
 * its decode pool and its field files. */
#ifndef TDB_READER_H
#define TDB_READER_H

#include "core/pool.h"
#include "read/view.h"

/* tree.c: the pool of fs (started on first use; NULL when threads=1 or
 * it could not start: readers then decode in the calling thread), and the
 * field file of node ino (NULL for folders and JSON files) and the bytes
 * before it in the file (*head: a .npy header). */
struct tdb_pool *tdb_fs_pool(struct tdb_fs *fs);
struct tdb_fieldfile *tdb_fs_fieldfile(struct tdb_fs *fs, uint64_t ino,
                                       uint64_t *head);

/* tree.c: keeps node ino of fs while a reader has it open (a file of
 * __slice/ or __domain/, made on lookup, is otherwise dropped when idle
 * ones are too many; what tdb_fs_fieldfile gives is valid while held).
 * @return 0, or TDB_E_NOENT for a slice's inode that fs no longer has
 * (any other inode is checked by tdb_fs_stat).  tdb_fs_unhold
 * gives back one hold. */
int tdb_fs_hold(struct tdb_fs *fs, uint64_t ino);
void tdb_fs_unhold(struct tdb_fs *fs, uint64_t ino);

#endif
