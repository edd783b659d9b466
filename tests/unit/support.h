/* support.h: what the unit tests share beyond unit.h: where the reference
 * corpus is and how a corpus test is skipped without it (loudly, and with
 * exit status 77 when nothing else ran), and helpers over files, tdb_io
 * and tdb_fs that several tests need.  The functions live in support.c;
 * the few that report through CHECK are static inline here, since the
 * harness keeps its counts per test binary. */
#ifndef TDB_UNIT_SUPPORT_H
#define TDB_UNIT_SUPPORT_H

#include "unit.h"

#include "core/core.h"
#include "tiledb_format.h"

#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------------- the corpus */

/* The corpus folder: $TILEDBFS_CORPUS when set and not empty (make check
 * sets it to the source tree's tests/corpus unless it is set already),
 * else tests/corpus from the working directory (the repository's root). */
const char *unit_corpus(void);

/* The running binary's folder and name, as "core/test_io" (its name alone
 * when it was run without a folder): programs of two folders may share a
 * name (model/test_meta, mount/test_meta). */
const char *unit_program(void);

/* True when the corpus is there (its dense_1d_basic/case.json can be
 * read).  The first time it is not, prints one line starting "SKIP
 * corpus:" with the binary (unit_program), the folder looked at
 * (absolute) and where that name came from; to stdout, and also to file
 * descriptor $TILEDBFS_TEST_CONSOLE when that is set (make check: the
 * console). */
bool unit_corpus_found(void);

/* RUN(fn) when the corpus is there; otherwise fn is counted as skipped,
 * and the binary exits 77 unless a test failed (see unit_done). */
#define RUN_CORPUS(fn)                                                     \
    do {                                                                   \
        if (unit_corpus_found())                                           \
            RUN(fn);                                                       \
        else                                                               \
            UNIT_SKIP(fn, "no reference corpus");                          \
    } while (0)

/* True when `path` is a folder (links followed). */
bool unit_is_dir(const char *path);

/* In a test run by RUN_CORPUS: true when case `name` of the corpus has its
 * array folder; a found corpus that lacks the case fails the test. */
static inline bool unit_corpus_case(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/array", unit_corpus(), name);
    bool there = unit_is_dir(path);
    if (!there)
        fprintf(stderr, "  corpus case %s missing: no folder %s\n", name,
                path);
    CHECK(there);
    return there;
}

/* The time range of a case's mount options ("timestamp=T" or
 * "timestamp=T0:T1" somewhere in opts): [0, UINT64_MAX] without one. */
void unit_timestamp_range(const char *opts, uint64_t *t0, uint64_t *t1);

/* ------------------------------------------------------------------ files */

/* The whole file at `path`, NUL-terminated (*len, if not NULL, gets its
 * size without the NUL); NULL when it cannot be read.  Caller frees. */
char *unit_slurp(const char *path, size_t *len);

/* Writes `n` bytes as the whole file `path` of io; a failure fails the
 * running test. */
static inline void unit_put(const struct tdb_io *io, const char *path,
                            const void *p, size_t n)
{
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, p, n), 0);
}

/* tdb_fragment_write of the cells staged in folder `dir` of `staged` into
 * the array at io, on `threads` threads (0: one per online CPU). */
static inline int unit_write(const struct tdb_io *io,
                             const struct tdb_io *staged, const char *dir,
                             const uint8_t *key, uint64_t ts,
                             unsigned threads, char **name,
                             struct tdb_error *err)
{
    struct tdb_fragment_req rq = {io, staged, dir, key, ts, threads, NULL};
    return tdb_fragment_write(&rq, name, err);
}

/* Copies folder sp of src, with everything under it, to dp of dst.
 * @return 0 or the first error. */
int unit_copy_tree(const struct tdb_io *src, const char *sp,
                   const struct tdb_io *dst, const char *dp);

/* Appends to out every folder and file under folder `path` of io, in
 * name order, one a line: "path/ 0" for a folder, "path size" for a
 * file, and with `hash` after the size the FNV-1a of its bytes in hex; a
 * failure to list or read fails the running test. */
void unit_snapshot(const struct tdb_io *io, const char *path, bool hash,
                   struct tdb_buf *out);

/* A new empty folder /tmp/tdb_test_TAG.XXXXXX (caller frees it, and
 * removes it with unit_rm_rf); NULL when it cannot be made. */
char *unit_temp_dir(const char *tag);

/* Removes path and everything under it. */
void unit_rm_rf(const char *path);

/* A copy of corpus case `name`'s array in a new temp folder (*dir),
 * opened as *io; a failure fails the running test.  @return true when it
 * was made: the caller then ends it with unit_drop_case. */
static inline bool unit_copy_case(const char *name, char **dir,
                                  struct tdb_io *io)
{
    char path[4096];
    struct tdb_io src;
    *dir = unit_temp_dir("case");
    CHECK(*dir != NULL);
    if (!*dir)
        return false;
    snprintf(path, sizeof path, "%s/%s/array", unit_corpus(), name);
    CHECK_EQ_INT(tdb_io_posix(&src, path), 0);
    CHECK_EQ_INT(tdb_io_posix(io, *dir), 0);
    CHECK_EQ_INT(unit_copy_tree(&src, "", io, ""), 0);
    tdb_io_free(&src);
    return !unit_cur_failed;
}

static inline void unit_drop_case(char *dir, struct tdb_io *io)
{
    tdb_io_free(io);
    unit_rm_rf(dir);
    free(dir);
}

/* A dense FLOAT32 array `rows` x `cols` (INT32 dimensions y and x, tiles
 * ty x tx), its attribute v filtered by `filter` (a JSON list's items),
 * written whole in one fragment (value i: (i % 977) / 2), in folder dir
 * (a POSIX io) or, dir NULL, in memory; *arr is freed by the caller.
 * @return 0 or an error (printed; nothing to free). */
int unit_dense_f32(struct tdb_io *arr, const char *dir, int rows, int cols,
                   int ty, int tx, const char *filter);

/* An in-memory array (*mem, freed by the caller) holding the schemas
 * (__schema) of corpus case `name`.  @return 0 or an error. */
int unit_array_from_case(const char *name, struct tdb_io *mem);

/* True when a[0..na) and b[0..nb) are the same bytes; otherwise prints
 * (to stderr, naming `what`) the sizes or the first byte that differs. */
bool unit_same_bytes(const char *what, const uint8_t *a, uint64_t na,
                     const uint8_t *b, uint64_t nb);

/* ------------------------------------------------------ the tree (tdb_fs) */

/* Opens the array of corpus case `name` (CORPUS/name/array) through a
 * POSIX io (*io, freed by the caller after tdb_fs_close) with options o
 * (NULL: the defaults).  @return the tree, or NULL after printing why. */
struct tdb_fs *unit_open_case(const char *name,
                              const struct tdb_open_options *o,
                              struct tdb_io *io);

/* Reads up to *len bytes of file `ino` at `off` into buf with tdb_fs_read
 * (a copy sink); *len gets the bytes read (0 on error).  @return its
 * code. */
int unit_fs_copy(struct tdb_fs *fs, uint64_t ino, uint64_t off, void *buf,
                 size_t *len, struct tdb_error *err);

/* Reads up to `len` bytes of reader rd's file at `off` into buf through a
 * copy sink (tdb_reader_read); *got gets the bytes read.  @return its
 * code. */
int unit_reader_copy(struct tdb_reader *rd, uint64_t off, void *buf,
                     size_t len, size_t *got, struct tdb_error *err);

/* The whole of file `ino` in one tdb_fs_read, NUL-terminated; *size gets
 * its size.  NULL on any error.  Caller frees. */
uint8_t *unit_fs_read_all(struct tdb_fs *fs, uint64_t ino, uint64_t *size);

/* The whole of file `path` of the tree, as unit_fs_read_all; NULL, after
 * printing why to stderr, when it is absent or cannot be read. */
uint8_t *unit_fs_file(struct tdb_fs *fs, const char *path, uint64_t *size);

/* The files below folder `root` (a case's expected/) that tree fs does not
 * show byte for byte at the same relative path, those whose path starts
 * with `skip` (NULL: none) left out: how many (each said on stderr). */
int unit_expected_diff(const char *root, struct tdb_fs *fs, const char *skip);

/* ------------------------------------------------------------ S3's setting */

/* Unsets every AWS_* variable the S3 backend reads, and sets
 * AWS_EC2_METADATA_DISABLED=true: a test's S3 configuration is then what
 * it sets itself, and the credential chain never asks the real instance
 * metadata service. */
void unit_aws_env_clear(void);

#endif
