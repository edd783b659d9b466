/* fuzz_arraydir.c: the array folder (format/model/arraydir.c: timestamped names,
 * commits, .vac, .con, .del, .ign, .meta files; meta.c's timestamped file
 * lists).  Input: records "path\0contents\0" making an in-memory array
 * folder (a path ending in '/' makes a folder); then the folder is loaded
 * at the whole time range and at [2, 3], for sparse and dense arrays. */
#include "fuzz.h"
#include "model/arraydir.h"
#include "model/meta.h"

#include <stdlib.h>

static void fuzz_load(const struct tdb_io *io, uint64_t t0, uint64_t t1)
{
    struct tdb_arraydir *d = NULL;
    struct tdb_error err = {0};
    if (tdb_arraydir_load(io, t0, t1, &d, &err) == 0) {
        tdb_arraydir_select(d, true, &err);
        tdb_arraydir_select(d, false, &err);
        tdb_arraydir_free(d);
    }
    struct tdb_ts_file *f = NULL;
    size_t n = 0;
    if (tdb_ts_files_list(io, "__meta", (struct tdb_ts_window){t0, t1},
                          &f, &n, &err) == 0)
        tdb_ts_files_free(f, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tdb_io io = {0};
    size_t pos = 0;
    if (tdb_io_mem(&io))
        return 0;
    for (int i = 0; i < 256 && pos < size; i++) {
        const uint8_t *z = memchr(data + pos, 0, size - pos);
        size_t plen = z ? (size_t)(z - (data + pos)) : size - pos;
        char *path = malloc(plen + 1);
        if (!path)
            break;
        memcpy(path, data + pos, plen);
        path[plen] = 0;
        pos += plen + (z != NULL);
        const uint8_t *c = data + pos;
        z = pos < size ? memchr(c, 0, size - pos) : NULL;
        size_t clen = z ? (size_t)(z - c) : size - pos;
        pos += clen + (z != NULL);
        struct tdb_tsname ts;
        tdb_tsname_parse(path, &ts);
        if (plen && path[plen - 1] == '/') {
            path[plen - 1] = 0;
            io.ops->mkdir(io.ctx, path);
        } else if (plen) {
            io.ops->write_at(io.ctx, path, 0, clen ? (const void *)c : "",
                             clen);
        }
        free(path);
    }
    tdb_is_array(&io, "");
    tdb_is_group(&io, "");
    fuzz_load(&io, 0, UINT64_MAX);
    fuzz_load(&io, 2, 3);
    tdb_io_free(&io);
    return 0;
}
