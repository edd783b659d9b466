/* fuzz_names.c: the names a lookup makes files from (format/tree/npy.c
 * through tdb_fs_lookup): __slice/FIELD[...].npy, __domain/FIELD[...].npy
 * and __zarr/FIELD/I.J chunks, which any user of an allow_other mount can
 * make the daemon parse.  The array (written once, in memory, with the
 * project's writer) is dense, 40 x 20 INT32 dimensions y in [-10, 29]
 * (tile extent 4) and x in [0, 19] (extent 3), column-major cells, a
 * current domain [[-7, 12], [2, 16]], attributes v INT32 and n FLOAT64
 * nullable, two fragments (the newer over part of the older).
 * Input: a flags byte (bit 0: __domain/ rather than __slice/; bit 1: the
 * name is looked up in __zarr/v/ as well), then the name (up to a NUL, at
 * most 255 bytes, NAME_MAX).  A file made is stat'ed and read whole (up to
 * 1 MiB) and in 13-byte pieces; the same name is looked up again (it must
 * find the same file). */
#include "fuzz.h"
#include "tiledb_format.h"
#include "tiledb_format_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_NAME_MAX 255     /* the longest name a lookup is given */

static const char fz_schema[] =
    "{\"array_type\": \"dense\", \"cell_order\": \"col-major\", \"dims\": ["
    "{\"name\": \"y\", \"datatype\": \"INT32\", \"domain\": [-10, 29], "
    "\"tile_extent\": 4}, {\"name\": \"x\", \"datatype\": \"INT32\", "
    "\"domain\": [0, 19], \"tile_extent\": 3}], \"attrs\": [{\"name\": \"v\", "
    "\"datatype\": \"INT32\"}, {\"name\": \"n\", \"datatype\": \"FLOAT64\", "
    "\"nullable\": true}], \"current_domain\": [[-7, 12], [2, 16]]}";

/* Commits at ts the cells of [[y0, y1], [x0, x1]]: v their number plus
 * base, n its half, valid where v is odd.  @return 0 or an error. */
static int fz_write(const struct tdb_io *arr, int y0, int y1, int x0, int x1,
                    int base, uint64_t ts)
{
    struct tdb_io stg;
    if (tdb_io_mem(&stg))
        return -1;
    size_t cells = (size_t)(y1 - y0 + 1) * (size_t)(x1 - x0 + 1);
    int32_t *v = malloc(cells * 4);
    double *d = malloc(cells * 8);
    uint8_t *ok = malloc(cells);
    int r = v && d && ok ? stg.ops->mkdir(stg.ctx, "w") : -1;
    for (size_t i = 0; !r && i < cells; i++) {
        v[i] = base + (int32_t)i;
        d[i] = v[i] / 2.0;
        ok[i] = (uint8_t)(v[i] & 1);
    }
    char sub[128];
    int l = snprintf(sub, sizeof sub, "[[%d, %d], [%d, %d]]", y0, y1, x0, x1);
    if (!r)
        r = stg.ops->write_at(stg.ctx, "w/__subarray.json", 0, sub, (size_t)l);
    if (!r)
        r = stg.ops->write_at(stg.ctx, "w/v", 0, v, cells * 4);
    if (!r)
        r = stg.ops->write_at(stg.ctx, "w/n", 0, d, cells * 8);
    if (!r)
        r = stg.ops->write_at(stg.ctx, "w/n.validity", 0, ok, cells);
    char *name = NULL;
    struct tdb_error err = {0};
    struct tdb_fragment_req rq = {arr, &stg, "w", NULL, ts, 1, NULL};
    if (!r)
        r = tdb_fragment_write(&rq, &name, &err);
    free(name);
    free(v);
    free(d);
    free(ok);
    tdb_io_free(&stg);
    return r;
}

/* The array, made at the first call (NULL when that failed: abort). */
static const struct tdb_io *fz_array(void)
{
    static struct tdb_io arr;
    static bool made;
    if (made)
        return &arr;
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    if (tdb_schema_from_json(fz_schema, strlen(fz_schema), &s, &err) ||
        tdb_io_mem(&arr) || tdb_array_create(&arr, s, NULL, 1, &err) ||
        fz_write(&arr, -7, 12, 2, 16, 0, 2) ||
        fz_write(&arr, -2, 5, 6, 11, 1000, 3))
        abort();
    tdb_schema_free(s);
    made = true;
    return &arr;
}

/* Looks name up in folder dir of fs; reads what it finds. */
static void fz_lookup(struct tdb_fs *fs, const char *dir, const char *name)
{
    struct tdb_error err = {0};
    uint64_t d, ino, again;
    if (tdb_fs_resolve(fs, dir, &d, &err))
        abort();
    if (tdb_fs_lookup(fs, d, name, &ino, &err))
        return;
    if (tdb_fs_lookup(fs, d, name, &again, &err) || again != ino)
        abort();
    struct tdb_stat st;
    if (tdb_fs_stat(fs, ino, &st, &err) || st.is_dir || st.size > (1u << 20))
        return;
    uint8_t *buf = malloc(st.size + 13);
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
    int r = buf ? tdb_fs_read(fs, ino, 0, st.size + 13, &s, &err) : -1;
    if (!r && s.got != st.size)
        abort();
    tdb_sink_release(&s);
    for (uint64_t off = 0; !r && off < st.size && off < 13 * 64; off += 13) {
        r = tdb_fs_read(fs, ino, off, 13, &s, &err);
        tdb_sink_release(&s);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const struct tdb_io *arr = fz_array();
    char name[FZ_NAME_MAX + 1];
    size_t n = 0;
    while (1 + n < size && data[1 + n] && n < FZ_NAME_MAX) {
        name[n] = (char)data[1 + n];
        n++;
    }
    name[n] = 0;
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.threads = 1;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    if (tdb_fs_open(&fs, arr, &o, &err))
        abort();
    fz_lookup(fs, data[0] & 1 ? "__domain" : "__slice", name);
    if (data[0] & 2)
        fz_lookup(fs, "__zarr/v", name);
    tdb_fs_close(fs);
    return 0;
}
