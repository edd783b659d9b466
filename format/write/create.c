/* create.c: a new array folder (format_spec/array_file_hierarchy.md,
 * timestamped_name.md) with its schema file, and array metadata files
 * (metadata.md), as TileDB 2.29 writes them. */
#include "write/writer.h"
#include "model/arraydir.h"
#include "model/generic_tile.h"
#include "model/meta.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CREATE_NAME_MAX 96      /* __t1_t2_<32 hex>_22 and a suffix */

/* The folders TileDB 2.29 makes for a new array (Array::create), in its
 * order; the array folder itself comes first. */
static const char *const create_dirs[] = {
    "__schema", "__schema/__enumerations", "__commits", "__fragments",
    "__meta", "__fragment_meta", "__labels",
};
#define CREATE_NDIRS (sizeof create_dirs / sizeof create_dirs[0])

static bool create_can_write(const struct tdb_io *io)
{
    return io && io->ops && io->ops->write_at && io->ops->mkdir &&
           io->ops->rename && io->ops->is_dir && io->ops->list;
}

/* The pipeline of a generic tile as TileDB writes one: GZIP level 1 (max
 * chunk size 0, as TileDB records it), then AES-256-GCM when encrypted. */
static int create_gt_pipeline(struct tdb_pipeline *p, struct tdb_filter f[2],
                              const uint8_t *key)
{
    int rc = tdb_filter_init_level(&f[0], TDB_FILTER_GZIP, 1);
    if (!rc)
        rc = tdb_filter_init(&f[1], TDB_FILTER_AES_256_GCM);
    p->max_chunk_size = 65536;     /* as TileDB 2.29 writes it */
    p->n = key ? 2 : 1;
    p->f = f;
    return rc;
}

int tdb_write_generic_tile(const struct tdb_buf *payload, const uint8_t *key,
                           struct tdb_buf *out, struct tdb_error *err)
{
    struct tdb_filter f[2];
    struct tdb_pipeline p;
    if (create_gt_pipeline(&p, f, key))
        return tdb_err(err, TDB_E_UNSUPPORTED, "generic tile: no GZIP filter");
    return tdb_generic_tile_encode(payload->data, payload->len,
                                   &(struct tdb_gt_filtering){&p, TDB_CHAR, 1},
                                   key, out, err);
}

/* "DIR/NAME" (or "NAME" when dir is empty) into a new string. */
static char *create_join(const char *dir, const char *name)
{
    return dir && dir[0] ? tdb_path_join(dir, name) : strdup(name);
}

/* ------------------------------------------------------------------ arrays */

/* One enumeration file, __schema/__enumerations/<its file name>. */
static int create_enumeration(const struct tdb_io *io,
                              const struct tdb_enumeration *e,
                              const uint8_t *key, struct tdb_error *err)
{
    struct tdb_buf payload = {0}, file = {0};
    const char *f = e->path ? strrchr(e->path, '/') : NULL;
    f = f ? f + 1 : e->path;
    char *final = f ? create_join("__schema/__enumerations", f) : NULL;
    char tmp[CREATE_NAME_MAX + 16];
    int rc;
    if (!final)
        return tdb_err(err, TDB_E_INVAL, "enumeration '%s' has no file name",
                       e->name ? e->name : "");
    snprintf(tmp, sizeof tmp, ".%.80s.tmp", f);
    if ((rc = tdb_enumeration_serialize(e, &payload)))
        rc = tdb_err(err, rc, "enumeration '%s': cannot serialise it",
                     e->name ? e->name : "");
    else if (!(rc = tdb_write_generic_tile(&payload, key, &file, err)))
        rc = tdb_io_publish(io, tmp, final, file.data, file.len, err);
    tdb_buf_free(&payload);
    tdb_buf_free(&file);
    free(final);
    return rc;
}

/* The array's folder, which must be missing (then made: *made_root) or
 * empty, and its subfolders (*made of them). */
static int create_folders(const struct tdb_io *io, bool *made_root,
                          size_t *made, struct tdb_error *err)
{
    struct tdb_names names = {0};
    int rc = 0;
    if (tdb_io_exists(io, "")) {
        if (!tdb_io_isdir(io, ""))
            return tdb_err(err, TDB_E_NOTDIR, "cannot create an array: the "
                           "path exists and is not a folder");
        if ((rc = tdb_io_names(io, "", &names, err)))
            return rc;
        if (names.n)
            rc = tdb_err(err, TDB_E_INVAL, "cannot create an array: the "
                         "folder is not empty (it holds '%s')", names.v[0]);
        tdb_names_free(&names);
        if (rc)
            return rc;
    } else {
        if ((rc = io->ops->mkdir(io->ctx, "")))
            return tdb_err(err, rc, "cannot make the array folder: %s",
                           tdb_strerror(rc));
        *made_root = true;
    }
    for (*made = 0; *made < CREATE_NDIRS; (*made)++)
        if ((rc = io->ops->mkdir(io->ctx, create_dirs[*made])))
            return tdb_err(err, rc, "cannot make folder %s: %s",
                           create_dirs[*made], tdb_strerror(rc));
    return 0;
}

/* Undoes a half-made array, as TileDB removes one: the enumeration files
 * (once their folder was made), the folders made. */
static void create_undo(const struct tdb_io *io, const struct tdb_schema *s,
                        size_t made, bool made_root)
{
    if (!io || !io->ops || !io->ops->remove)
        return;
    for (uint32_t i = 0; i < s->nenums && made > 1; i++) {
        const char *f = s->enums[i].path ? strrchr(s->enums[i].path, '/')
                                         : NULL;
        f = f ? f + 1 : s->enums[i].path;
        char *ep = f ? create_join("__schema/__enumerations", f) : NULL;
        if (ep)
            io->ops->remove(io->ctx, ep);
        free(ep);
    }
    while (made > 0)
        io->ops->remove(io->ctx, create_dirs[--made]);
    if (made_root)
        io->ops->remove(io->ctx, "");
}

/* Writes the enumerations (with `enums` every one, else those still
 * unwritten), then the schema file (which names them) as
 * __schema/<name>. */
static int create_files(const struct tdb_io *io, const struct tdb_schema *s,
                        const uint8_t *key, const char *name,
                        const struct tdb_buf *file, bool enums,
                        struct tdb_error *err)
{
    char tmp[CREATE_NAME_MAX + 16];
    /* The temporary file sits in the array folder, where neither TileDB
     * nor we look for schemas. */
    snprintf(tmp, sizeof tmp, ".%s.tmp", name);
    char *final = create_join("__schema", name);
    if (!final)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    int rc = 0;
    for (uint32_t i = 0; !rc && i < s->nenums; i++)
        if (enums || s->enums[i].unwritten)
            rc = create_enumeration(io, &s->enums[i], key, err);
    if (!rc)
        rc = tdb_io_publish(io, tmp, final, file->data, file->len, err);
    free(final);
    return rc;
}

int tdb_array_create(const struct tdb_io *io, const struct tdb_schema *s,
                     const uint8_t *key, uint64_t timestamp_ms,
                     struct tdb_error *err)
{
    struct tdb_buf payload = {0}, file = {0};
    char name[CREATE_NAME_MAX];
    uint8_t rnd[16];
    size_t made = 0;
    bool made_root = false;
    int rc;

    if (!create_can_write(io))
        return tdb_err(err, TDB_E_ROFS, "cannot create an array: the storage "
                       "is read-only");
    if (!s)
        return tdb_err(err, TDB_E_INVAL, "cannot create an array without a "
                       "schema");
    if (s->nlabels)
        return tdb_err(err, TDB_E_UNSUPPORTED, "cannot create an array with "
                       "dimension labels");
    if ((rc = tdb_schema_check(s, err)))
        return tdb_err_ctx(err, rc, "cannot create the array");
    if (!(rc = tdb_schema_serialize(s, &payload, err)) &&
        !(rc = tdb_write_generic_tile(&payload, key, &file, err)) &&
        !(rc = tdb_random(rnd, 16, err)) &&
        !(rc = create_folders(io, &made_root, &made, err))) {
        if (!timestamp_ms)
            timestamp_ms = tdb_now_ms();
        tdb_tsname_make(name, sizeof name, timestamp_ms, timestamp_ms, rnd, 0);
        rc = create_files(io, s, key, name, &file, true, err);
    }
    if (rc)
        create_undo(io, s, made, made_root);
    tdb_buf_free(&payload);
    tdb_buf_free(&file);
    return rc;
}

int tdb_schema_publish(const struct tdb_io *io, const struct tdb_schema *s,
                       const uint8_t *key, uint64_t timestamp_ms, char **name,
                       struct tdb_error *err)
{
    struct tdb_buf payload = {0}, file = {0};
    uint8_t rnd[16];
    char nm[CREATE_NAME_MAX];
    int rc;
    *name = NULL;
    if (!(rc = tdb_schema_check(s, err)) &&
        !(rc = tdb_schema_serialize(s, &payload, err)) &&
        !(rc = tdb_write_generic_tile(&payload, key, &file, err)) &&
        !(rc = tdb_random(rnd, 16, err))) {
        tdb_tsname_make(nm, sizeof nm, timestamp_ms, timestamp_ms, rnd, 0);
        rc = create_files(io, s, key, nm, &file, false, err);
    }
    if (!rc && !(*name = strdup(nm)))
        rc = tdb_err(err, TDB_E_NOMEM, "out of memory");
    tdb_buf_free(&payload);
    tdb_buf_free(&file);
    return rc;
}

/* ---------------------------------------------------------------- metadata */

/* The random part of a new metadata file's name.  Its first 8 hex digits
 * count up within one timestamp, as TileDB's random labels do, so that
 * files of the same millisecond sort (and apply) in the order written. */
static int create_meta_label(const struct tdb_io *io, const char *meta_dir,
                             uint64_t t, uint8_t rnd[16],
                             struct tdb_error *err)
{
    struct tdb_names names = {0};
    int rc = tdb_random(rnd, 16, err);
    if (rc)
        return rc;
    rnd[0] &= 0x7f;
    if ((rc = tdb_io_names(io, meta_dir, &names, err)))
        return rc;
    bool seen = false;
    uint32_t top = 0;
    for (size_t i = 0; i < names.n; i++) {
        struct tdb_tsname ts;
        if (names.is_dir[i] || tdb_tsname_parse(names.v[i], &ts) ||
            ts.t1 != t || strlen(ts.uuid) != 32)
            continue;
        char head[9];
        memcpy(head, ts.uuid, 8);
        head[8] = '\0';
        uint32_t c = (uint32_t)strtoul(head, NULL, 16);
        if (!seen || c > top)
            top = c;
        seen = true;
    }
    tdb_names_free(&names);
    if (seen) {
        if (top == UINT32_MAX)
            return tdb_err(err, TDB_E_INVAL, "%s: too many metadata files "
                           "at timestamp %" PRIu64, meta_dir, t);
        top++;
        rnd[0] = (uint8_t)(top >> 24);
        rnd[1] = (uint8_t)(top >> 16);
        rnd[2] = (uint8_t)(top >> 8);
        rnd[3] = (uint8_t)top;
    }
    return 0;
}

/* The payload of a metadata file holding entry e (checked), in out. */
static int create_meta_payload(const char *meta_dir,
                               const struct tdb_meta_entry *e,
                               struct tdb_buf *out, struct tdb_error *err)
{
    int rc;
    if (!e->del) {
        unsigned sz = tdb_dt_size(e->type);
        if (sz == 0 || e->type == TDB_ANY)
            return tdb_err(err, TDB_E_INVAL, "%s: metadata key '%s': "
                           "invalid datatype %u", meta_dir, e->name, e->type);
        if (e->count > 0 && !e->value)
            return tdb_err(err, TDB_E_INVAL, "%s: metadata key '%s': %u "
                           "values but no value buffer", meta_dir, e->name,
                           e->count);
        if ((uint64_t)e->count * sz > TDB_MAX_TILE_BYTES)
            return tdb_err(err, TDB_E_INVAL, "%s: metadata key '%s': a "
                           "value of %u x %u bytes is too large", meta_dir,
                           e->name, e->count, sz);
        rc = tdb_meta_serialize_put(out, e->name, e->type, e->count,
                                    e->value);
    } else {
        rc = tdb_meta_serialize_del(out, e->name);
    }
    if (rc)
        return tdb_err(err, rc, "%s: cannot serialise metadata key '%s'",
                       meta_dir, e->name);
    return 0;
}

/* Publishes file as metadata file fname of meta_dir. */
static int create_meta_publish(const struct tdb_io *io, const char *meta_dir,
                               const char *fname, const struct tdb_buf *file,
                               struct tdb_error *err)
{
    char tname[CREATE_NAME_MAX + 16];
    char *final = NULL, *tmp = NULL, *parent = NULL;
    int rc;
    /* The temporary file goes next to the metadata folder, not in it, so
     * that no reader (ours or TileDB's) ever lists it as metadata. */
    snprintf(tname, sizeof tname, ".%s.tmp", fname);
    const char *slash = strrchr(meta_dir, '/');
    if (!(parent = slash ? strndup(meta_dir, (size_t)(slash - meta_dir))
                         : strdup("")) ||
        !(tmp = create_join(parent, tname)) ||
        !(final = create_join(meta_dir, fname)))
        rc = tdb_err(err, TDB_E_NOMEM, "out of memory");
    else
        rc = tdb_io_publish(io, tmp, final, file->data, file->len, err);
    free(parent);
    free(tmp);
    free(final);
    return rc;
}

int tdb_meta_write(const struct tdb_io *io, const char *meta_dir,
                   const struct tdb_meta_entry *e,
                   const struct tdb_commit_options *at,
                   struct tdb_error *err)
{
    struct tdb_buf payload = {0}, file = {0};
    char fname[CREATE_NAME_MAX];
    uint8_t rnd[16];
    int rc;

    if (!create_can_write(io))
        return tdb_err(err, TDB_E_ROFS, "cannot write metadata: the storage "
                       "is read-only");
    if (!meta_dir || !e->name)
        return tdb_err(err, TDB_E_INVAL, "metadata write without a folder "
                       "or a key");
    if ((rc = create_meta_payload(meta_dir, e, &payload, err)) ||
        (rc = tdb_write_generic_tile(&payload, at->key, &file, err)))
        goto out;
    if ((rc = io->ops->mkdir(io->ctx, meta_dir))) {
        rc = tdb_err(err, rc, "%s: cannot make the folder: %s", meta_dir,
                     tdb_strerror(rc));
        goto out;
    }
    uint64_t t = at->timestamp_ms ? at->timestamp_ms : tdb_now_ms();
    if ((rc = create_meta_label(io, meta_dir, t, rnd, err)))
        goto out;
    tdb_tsname_make(fname, sizeof fname, t, t, rnd, 0);
    rc = create_meta_publish(io, meta_dir, fname, &file, err);
out:
    tdb_buf_free(&payload);
    tdb_buf_free(&file);
    return rc;
}
