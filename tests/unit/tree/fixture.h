/* fixture.h: what the tests of the tree (tests/unit/tree/) share: trees
 * of corpus cases opened with a cache budget and threads, and arrays
 * created, written and opened in memory.  In the tests' library
 * (fixture.c); the helpers fail the running test with CHECK. */
#ifndef TDB_UNIT_TREE_FIXTURE_H
#define TDB_UNIT_TREE_FIXTURE_H

#include "../support.h"
#include "tiledb_format.h"

/* The tree of corpus case `name` (unit_open_case) with a cache budget of
 * `cache` bytes and `threads` decoding threads (0: the defaults); NULL
 * after saying why. */
struct tdb_fs *open_case_threads(const char *name, uint64_t cache,
                                 unsigned threads, struct tdb_io *io);

/* open_case_threads with the default threads. */
struct tdb_fs *open_case(const char *name, uint64_t cache,
                         struct tdb_io *io);

/* An empty array in memory (*arr) of schema JSON text. */
void mem_array(struct tdb_io *arr, const char *text);

/* Commits staged folder "w" of stg (then freed) into arr at ts. */
void mem_commit(const struct tdb_io *arr, struct tdb_io *stg,
                uint64_t ts);

/* The tree of arr with the default options (NULL, after saying why). */
struct tdb_fs *mem_open(const struct tdb_io *arr);

#endif
