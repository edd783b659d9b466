/* array_meta.c: consolidated array metadata (metadata.md, vacuum_file.md)
 * and its vacuum, as TileDB's array metadata consolidation writes and
 * removes them: one __meta/__t1_t2_<uuid> holding every key in force
 * (sorted, each a put), the times those of the first and last file it
 * merged, then __meta/__t1_t2_<uuid>.vac naming those files, relative to
 * the array ("/__meta/NAME"). */
#include "consolidate/cons.h"
#include "model/meta.h"
#include "write/writer.h"

#include <stdio.h>
#include <stdlib.h>

/* The metadata file's payload: every key in force, in key order. */
static int am_payload(const struct tdb_meta *m, struct tdb_buf *out,
                      struct tdb_error *err)
{
    for (size_t i = 0; i < m->n; i++)
        if (tdb_meta_serialize_item(out, &m->v[i]))
            return tdb_err(err, TDB_E_NOMEM, "__meta: out of memory");
    return 0;
}

/* The .vac's lines: each merged file, "/__meta/NAME\n". */
static int am_vac(const struct tdb_ts_file *f, size_t n, struct tdb_buf *out,
                  struct tdb_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (tdb_buf_append(out, "/__meta/", 8) ||
            tdb_buf_append(out, f[i].name, strlen(f[i].name)) ||
            tdb_buf_append(out, "\n", 1))
            return tdb_err(err, TDB_E_NOMEM, "__meta: out of memory");
    return 0;
}

int tdb_consolidate_array_meta(const struct tdb_io *io, const uint8_t *key,
                               struct tdb_cons_result *res,
                               struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->write_at || !io->ops->rename)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_cons_array a;
    struct tdb_ts_file *files = NULL;
    struct tdb_meta *m = NULL;
    struct tdb_buf payload = {0}, file = {0}, vac = {0};
    size_t n = 0;
    char tmp[256], vname[300];
    int r = tdb_cons_array_load(io, key, &a, err);
    if (!r)
        r = tdb_ts_files_list(io, "__meta", TDB_TS_ALL, &files, &n, err);
    /* as TileDB: nothing to do for one file or none */
    if (r || n <= 1)
        goto done;
    r = tdb_meta_load(io, "__meta", TDB_TS_ALL, a.key, &m, err);
    if (!r)
        r = am_payload(m, &payload, err);
    if (!r)
        r = am_vac(files, n, &vac, err);
    if (!r)
        r = tdb_cons_name(&(struct tdb_cons_file){"__meta", files[0].t1,
                                                  files[n - 1].t2, 0, ""},
                          res->name, tmp, sizeof tmp, err);
    /* no key in force: TileDB writes no metadata file, only the .vac */
    if (!r && payload.len &&
        !(r = tdb_write_generic_tile(&payload, a.key, &file, err)))
        r = tdb_io_publish(io, tmp, res->name, file.data, file.len, err);
    if (!r) {
        snprintf(vname, sizeof vname, "%s.vac", res->name);
        snprintf(tmp + strlen(tmp) - strlen(TDB_CONS_TMP),
                 sizeof tmp - (strlen(tmp) - strlen(TDB_CONS_TMP)),
                 ".vac" TDB_CONS_TMP);
        r = tdb_io_publish(io, tmp, vname, vac.data, vac.len, err);
    }
    if (r)
        res->name[0] = 0;
    else
        res->merged = n;
done:
    tdb_buf_free(&payload);
    tdb_buf_free(&file);
    tdb_buf_free(&vac);
    tdb_meta_free(m);
    tdb_ts_files_free(files, n);
    tdb_cons_array_free(&a);
    return r;
}

/* Removes the files .vac file `vac` (in __meta) names, then the .vac. */
static int am_vacuum_one(const struct tdb_io *io, const char *vac,
                         struct tdb_cons_result *res, struct tdb_error *err)
{
    uint8_t *buf = NULL;
    uint64_t len = 0;
    char path[TDB_MAX_NAME + 16];
    int r = tdb_io_read_file(io, vac, &buf, &len, err);
    for (size_t pos = 0; !r && pos < len;) {
        const uint8_t *nl = memchr(buf + pos, '\n', (size_t)len - pos);
        size_t end = nl ? (size_t)(nl - buf) : (size_t)len, n;
        char line[TDB_MAX_NAME + 1];
        if (end - pos <= TDB_MAX_NAME) {
            memcpy(line, buf + pos, end - pos);
            line[end - pos] = 0;
            /* relative ("/__meta/NAME") or a whole URI: its last name */
            const char *name = tdb_last_component(line, &n);
            if (n && n <= TDB_MAX_NAME && !memchr(name, 0, n) &&
                snprintf(path, sizeof path, "__meta/%.*s", (int)n, name) <
                    (int)sizeof path &&
                strcmp(path, vac))
                r = tdb_cons_remove(io, path, res, err);
        }
        pos = end + 1;
    }
    free(buf);
    if (!r)
        r = tdb_cons_remove(io, vac, res, err);
    return r;
}

int tdb_vacuum_array_meta(const struct tdb_io *io, struct tdb_cons_result *res,
                          struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_names names = {0};
    char path[TDB_MAX_NAME + 16];
    int r = tdb_io_names(io, "__meta", &names, err);
    for (size_t i = 0; !r && i < names.n; i++) {
        size_t nl = strlen(names.v[i]);
        if (names.is_dir[i] || nl < 4 || strcmp(names.v[i] + nl - 4, ".vac") ||
            snprintf(path, sizeof path, "__meta/%s", names.v[i]) >=
                (int)sizeof path)
            continue;
        r = am_vacuum_one(io, path, res, err);
    }
    tdb_names_free(&names);
    if (!r)
        r = tdb_cons_sweep(io, res, err);
    return r;
}
