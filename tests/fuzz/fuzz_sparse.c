/* fuzz_sparse.c: the sparse merge (format/read/sparse_view.c) over damaged
 * fragments.  Up to 4 fragments of a 16 x 16 INT64 sparse array (tile
 * extents 4, one tile per fragment, coordinates stored raw) are written
 * with the project's writer, then their coordinates are overwritten with
 * the input's bytes (each a signed value: out of the domain, out of order,
 * repeated, outside the fragment's MBR); the merged files v, y and x are
 * read whole and in pieces.
 * Input: a flags byte (bit 0: duplicates allowed; bit 1: merged on 3
 * threads in key ranges of 3 cells; bits 2-3: cell order row-major,
 * col-major, Hilbert), then per fragment a byte n (1 + n % 24 cells) and
 * up to 2n bytes: the cells' y values, then their x values. */
#include "fuzz.h"
#include "tiledb_format.h"
#include "tiledb_format_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAXF 4
#define FZ_MAXN 24

static const char *const fz_orders[4] = {"row-major", "col-major", "hilbert",
                                         "row-major"};

/* Writes fragment f of n cells (distinct valid coordinates, v = f * 100 +
 * i) at timestamp 10 + f; *name gets its name.  @return 0 or an error. */
static int fz_write(const struct tdb_io *arr, int f, size_t n, char **name)
{
    int64_t y[FZ_MAXN], x[FZ_MAXN], v[FZ_MAXN];
    for (size_t i = 0; i < n; i++) {
        unsigned k = (unsigned)(i * 37 + (size_t)f * 11) % 256;
        y[i] = k / 16;
        x[i] = k % 16;
        v[i] = f * 100 + (int64_t)i;
    }
    struct tdb_io stg;
    if (tdb_io_mem(&stg))
        return -1;
    struct tdb_error err = {0};
    int r = stg.ops->mkdir(stg.ctx, "w");
    if (!r)
        r = stg.ops->write_at(stg.ctx, "w/y", 0, y, n * 8);
    if (!r)
        r = stg.ops->write_at(stg.ctx, "w/x", 0, x, n * 8);
    if (!r)
        r = stg.ops->write_at(stg.ctx, "w/v", 0, v, n * 8);
    struct tdb_fragment_req rq = {arr, &stg, "w", NULL, 10 + (uint64_t)f,
                                  1, NULL};
    if (!r)
        r = tdb_fragment_write(&rq, name, &err);
    tdb_io_free(&stg);
    return r;
}

/* Overwrites the n raw coordinates at the end of dimension d's file of
 * fragment `name` with the input's bytes p[0..len) (as many as there are). */
static void fz_damage(const struct tdb_io *arr, const char *name, int d,
                      size_t n, const uint8_t *p, size_t len)
{
    char path[600];
    uint64_t size;
    snprintf(path, sizeof path, "__fragments/%s/d%d.tdb", name, d);
    if (arr->ops->size(arr->ctx, path, &size) || size < n * 8)
        return;
    for (size_t i = 0; i < n && i < len; i++) {
        int64_t val = (int8_t)p[i];
        uint8_t b[8];
        for (int j = 0; j < 8; j++)
            b[j] = (uint8_t)((uint64_t)val >> (8 * j));
        arr->ops->write_at(arr->ctx, path, size - n * 8 + i * 8, b, 8);
    }
}

/* Reads file `path` of fs whole, then in 7-byte pieces. */
static void fz_read(struct tdb_fs *fs, const char *path)
{
    struct tdb_error err = {0};
    struct tdb_stat st;
    uint64_t ino;
    if (tdb_fs_resolve(fs, path, &ino, &err) ||
        tdb_fs_stat(fs, ino, &st, &err) || st.size > (1u << 20))
        return;
    uint8_t *buf = malloc(st.size + 1);
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
    int r = buf ? tdb_fs_read(fs, ino, 0, st.size, &s, &err) : -1;
    tdb_sink_release(&s);
    for (uint64_t off = 0; !r && off < st.size; off += 7) {
        r = tdb_fs_read(fs, ino, off, 7, &s, &err);
        tdb_sink_release(&s);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    char json[1024];
    snprintf(json, sizeof json,
             "{\"array_type\": \"sparse\", \"capacity\": 1000, "
             "\"allows_duplicates\": %s, \"cell_order\": \"%s\", "
             "\"coords_filters\": [], \"dims\": ["
             "{\"name\": \"y\", \"datatype\": \"INT64\", \"domain\": [0, 15], "
             "\"tile_extent\": 4},"
             "{\"name\": \"x\", \"datatype\": \"INT64\", \"domain\": [0, 15], "
             "\"tile_extent\": 4}], "
             "\"attrs\": [{\"name\": \"v\", \"datatype\": \"INT64\"}]}",
             flags & 1 ? "true" : "false", fz_orders[(flags >> 2) & 3]);
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    struct tdb_io arr = {0};
    char *names[FZ_MAXF] = {NULL};
    if (tdb_schema_from_json(json, strlen(json), &s, &err) || tdb_io_mem(&arr))
        goto out;
    if (tdb_array_create(&arr, s, NULL, 1, &err))
        goto out;
    size_t pos = 1;
    for (int f = 0; f < FZ_MAXF && pos < size; f++) {
        size_t n = 1 + data[pos++] % FZ_MAXN;
        if (fz_write(&arr, f, n, &names[f]))
            break;
        size_t left = size - pos, take = left < 2 * n ? left : 2 * n;
        fz_damage(&arr, names[f], 0, n, data + pos, take);
        fz_damage(&arr, names[f], 1, n, data + pos + (take > n ? n : take),
                  take > n ? take - n : 0);
        pos += take;
    }
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.threads = flags & 2 ? 3 : 1;
    o.merge_range_cells = flags & 2 ? 3 : 0;
    struct tdb_fs *fs = NULL;
    if (tdb_fs_open(&fs, &arr, &o, &err) == 0) {
        fz_read(fs, "v");
        fz_read(fs, "y");
        fz_read(fs, "x");
        tdb_fs_close(fs);
    }
out:
    for (int f = 0; f < FZ_MAXF; f++)
        free(names[f]);
    tdb_schema_free(s);
    if (arr.ops)
        tdb_io_free(&arr);
    return 0;
}
