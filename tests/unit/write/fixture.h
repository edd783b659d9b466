/* fixture.h: what the tests of the fragment writer (tests/unit/write/
 * test_writer.c, test_wr_region.c, test_wr_tiles.c) share: files put and
 * read through an io or a tree, corpus cases and their fragments as the
 * mount shows them, staged again (sparse cells shuffled), and attribute
 * files made.  In the tests' library (fixture.c); the helpers fail the
 * running test with CHECK. */
#ifndef TDB_UNIT_WRITE_FIXTURE_H
#define TDB_UNIT_WRITE_FIXTURE_H

#include "../support.h"
#include "tiledb_format.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The corpus folder (unit_corpus), set by main. */
extern const char *corpus;

/* Writes n bytes as the whole file `path` of io. */
void put(const struct tdb_io *io, const char *path, const void *p,
         size_t n);

/* The tree of io with the key `key` (NULL: none); NULL after saying why. */
struct tdb_fs *fs_open(const struct tdb_io *io, const uint8_t *key);

/* The bytes of file `path` of the mount (NULL when absent). */
uint8_t *fs_file(struct tdb_fs *fs, const char *path, uint64_t *size);

/* Corpus case `name`'s case.json (NULL after saying why); the caller
 * drops it. */
json_t *load_case(const char *name);

/* An in-memory array holding the schemas of corpus case `name`. */
int array_from_case(const char *name, struct tdb_io *mem);

/* A tiny deterministic generator. */
uint64_t rng_next(uint64_t *s);

/* A staged file: its name and bytes. */
struct sfile {
    char *name;
    uint8_t *data;
    uint64_t size;
};

/* The staged files of one fragment. */
struct sfiles {
    struct sfile v[64];
    size_t n;
};

/* The file `name` of s (NULL when absent). */
struct sfile *sfind(struct sfiles *s, const char *name);

/* Frees the files of s and empties it. */
void sfiles_free(struct sfiles *s);

/* Reorders the n cells of every field by a random permutation. */
void shuffle_cells(struct sfiles *s, uint64_t n, uint64_t seed);

/* The fragment's files as the mount shows them (corpus expected/). */
int load_expected_frag(const char *name, const char *frag,
                       struct sfiles *s);

/* Stages fragment i of corpus case `name` (case.json c) in folder dir of
 * stg: the files the mount shows for it, sparse cells shuffled unless
 * duplicates are allowed, dense ones with their region. */
void stage_case_frag(json_t *c, const char *name, size_t i,
                     struct tdb_io *stg, const char *dir);

/* Staged files of n cells for every attribute of a case's "fields":
 * random fixed values, var strings of 0-4 values (every fifth empty),
 * validity 0 every third cell. */
void make_attr_files(json_t *fields, uint64_t n, uint64_t seed,
                     struct sfiles *s);

#endif
