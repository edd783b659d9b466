/* fixture.c: what the tests of the tree share (see fixture.h). */
#include "fixture.h"
#include "tiledb_format_write.h"

#include <stdlib.h>
#include <string.h>

struct tdb_fs *open_case_threads(const char *name, uint64_t cache,
                                 unsigned threads, struct tdb_io *io)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    if (cache)
        o.cache_bytes = cache;
    if (threads)
        o.threads = threads;
    return unit_open_case(name, &o, io);
}

struct tdb_fs *open_case(const char *name, uint64_t cache,
                         struct tdb_io *io)
{
    return open_case_threads(name, cache, 0, io);
}

/* An empty array in memory (*arr) of schema JSON text. */
void mem_array(struct tdb_io *arr, const char *text)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(arr), 0);
    CHECK_EQ_INT(tdb_schema_from_json(text, strlen(text), &s, &err), 0);
    CHECK_EQ_INT(s ? tdb_array_create(arr, s, NULL, 1, &err) : -1, 0);
    tdb_schema_free(s);
}

/* Commits staged folder "w" of stg (then freed) into arr at ts. */
void mem_commit(const struct tdb_io *arr, struct tdb_io *stg,
                uint64_t ts)
{
    char *name = NULL;
    struct tdb_error err = {0};
    int r = unit_write(arr, stg, "w", NULL, ts, 0, &name, &err);
    if (r)
        fprintf(stderr, "  write: %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    free(name);
    tdb_io_free(stg);
}

/* The tree of arr with the default options (NULL, after saying why). */
struct tdb_fs *mem_open(const struct tdb_io *arr)
{
    struct tdb_open_options o;
    struct tdb_error err = {0};
    struct tdb_fs *fs = NULL;
    tdb_open_options_init(&o);
    if (tdb_fs_open(&fs, arr, &o, &err))
        fprintf(stderr, "  open: %s\n", err.msg);
    return fs;
}
