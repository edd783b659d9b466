/* fragmeta.c: fragment metadata (format_spec/fragment.md): loading a
 * fragment's footer from its own file or a consolidated one, and what
 * the footer tells (fields, tiles, cells).  The parsing:
 * fragmeta_parse.c; the parts loaded when asked: fragmeta_tiles.c; the
 * consolidated file: fragmeta_cons.c. */
#include "model/fragmeta_priv.h"
#include "core/names.h"
#include "core/value.h"

#include <stdlib.h>

/* ------------------------------------------------------------------- load */

/* Where the fragment's own footer lies in its file of fsize bytes: the
 * footer length at the end when the version or a var-sized dimension
 * says it is there (*has_len), else a size computed from the schema. */
static int fragmeta_own_footer_at(struct tdb_fragmeta *fm,
                                  const struct tdb_schema_set *schemas,
                                  uint64_t fsize, uint64_t *size,
                                  bool *has_len, struct tdb_error *err)
{
    *has_len = true;
    if (fm->name_version < 10) {
        fm->schema = tdb_fragmeta_legacy_schema(schemas);
        if (!fm->schema)
            return tdb_err(err, TDB_E_NOENT, "%s: the array has no schema for "
                           "a fragment of format version %u", fm->meta_path,
                           fm->name_version);
        if (fm->schema->ndims == 0)
            return tdb_err(err, TDB_E_CORRUPT, "%s: schema has no dimensions",
                           fm->meta_path);
        *has_len = !tdb_fragmeta_all_fixed(fm->schema);
    }
    if (!*has_len) {
        *size = tdb_fragmeta_footer_size_fixed(fm->schema, fm->name_version);
        if (*size > fsize)
            return tdb_err(err, TDB_E_CORRUPT, "%s: file of %llu bytes is "
                           "shorter than its %llu-byte footer", fm->meta_path,
                           (unsigned long long)fsize,
                           (unsigned long long)*size);
        fm->footer_offset = fsize - *size;
        return 0;
    }
    uint8_t le[8];
    if (fsize < 8)
        return tdb_err(err, TDB_E_CORRUPT, "%s: file of %llu bytes is too "
                       "short for a footer", fm->meta_path,
                       (unsigned long long)fsize);
    int rc = tdb_io_read(fm->io, fm->meta_path, fsize - 8, le, 8, err);
    if (rc)
        return rc;
    *size = tdb_le64(le);
    if (*size > fsize - 8 || *size > FRAGMETA_MAX_FOOTER)
        return tdb_err(err, TDB_E_CORRUPT, "%s: footer length %llu does "
                       "not fit the file of %llu bytes", fm->meta_path,
                       (unsigned long long)*size, (unsigned long long)fsize);
    fm->footer_offset = fsize - 8 - *size;
    return 0;
}

/* Reads and parses the fragment's own footer. */
static int fragmeta_read_own_footer(struct tdb_fragmeta *fm,
                                    const struct tdb_schema_set *schemas,
                                    struct tdb_error *err)
{
    uint64_t fsize, size = 0;
    bool has_len = true;
    int rc = tdb_io_size(fm->io, fm->meta_path, &fsize, err);
    if (rc || (rc = fragmeta_own_footer_at(fm, schemas, fsize, &size,
                                           &has_len, err)))
        return rc;
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (!buf)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    rc = tdb_io_read(fm->io, fm->meta_path, fm->footer_offset, buf,
                     (size_t)size, err);
    if (rc == 0)
        rc = tdb_fragmeta_parse_footer(fm, schemas, buf, (size_t)size, true,
                                       err);
    free(buf);
    if (rc == 0 && !has_len) {
        /* the size was computed for the name's version: the footer must
         * agree on the layout */
        uint32_t a = fm->name_version, v = fm->version;
        int ca = a < 5 ? 0 : a < 7 ? 1 : 2, cv = v < 5 ? 0 : v < 7 ? 1 : 2;
        if (ca != cv || v >= 10)
            return tdb_err(err, TDB_E_CORRUPT, "%s: footer version %u does "
                           "not match the name's version %u", fm->meta_path,
                           v, a);
    }
    return rc;
}

/* The fragment's name (`name`, or the last component of `path`), its
 * paths, and what the name tells: timestamps and format version. */
static int fragmeta_names(struct tdb_fragmeta *fm, const char *path,
                          const char *name, struct tdb_error *err)
{
    if (!name) {
        size_t n;
        const char *b = tdb_last_component(path, &n);
        fm->name = strndup(b, n);
    } else {
        fm->name = strdup(name);
    }
    fm->path = strdup(path);
    fm->meta_path = tdb_path_join(path, FRAGMETA_FILE);
    if (!fm->name || !fm->path || !fm->meta_path)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    struct tdb_tsname tn;
    if (tdb_tsname_parse(fm->name, &tn))
        return tdb_err(err, TDB_E_CORRUPT, "%s: \"%s\" is not a fragment "
                       "name", path, fm->name);
    /* names without a version: __t1_t2_uuid is format 4, __uuid_t 2 */
    fm->t1 = tn.t1;
    fm->t2 = tn.t2;
    fm->name_version = tn.era == 3 ? tn.version : tn.era == 2 ? 4 : 2;
    if (fm->name_version > FRAGMETA_MAX_VERSION)
        return tdb_err(err, TDB_E_UNSUPPORTED, "%s: fragment format version "
                       "%u is not supported (at most %u)", path,
                       fm->name_version, FRAGMETA_MAX_VERSION);
    return 0;
}

int tdb_fragmeta_load(const struct tdb_fragmeta_src *src,
                      struct tdb_fragmeta **out, struct tdb_error *err)
{
    *out = NULL;
    if (!src->io || !src->path)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no path");
    struct tdb_fragmeta *fm = calloc(1, sizeof *fm);
    if (!fm)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", src->path);
    pthread_mutex_init(&fm->lock, NULL);
    fm->io = src->io;
    fm->key = src->key;
    int rc = fragmeta_names(fm, src->path, src->name, err);
    if (!rc && fm->name_version <= 2) {
        rc = tdb_fragmeta_load_legacy(fm, src->schemas, err);
    } else if (!rc && src->footer) {
        fm->footer_offset = 0;
        rc = tdb_fragmeta_parse_footer(fm, src->schemas, src->footer,
                                       src->footer_size, false, err);
        fm->footer_size = 0;
    } else if (!rc) {
        rc = fragmeta_read_own_footer(fm, src->schemas, err);
    }
    if (rc) {
        tdb_fragmeta_free(fm);
        return rc;
    }
    *out = fm;
    return 0;
}

/* --------------------------------------------------------------- queries */

int tdb_fragmeta_attr_field(const struct tdb_fragmeta *fm,
                            const struct tdb_schema *array_schema,
                            uint32_t attr)
{
    if (!fm || !array_schema || attr >= array_schema->nattrs)
        return -1;
    const char *name = array_schema->attrs[attr].name;
    for (uint32_t i = 0; i < fm->schema->nattrs; i++)
        if (strcmp(fm->schema->attrs[i].name, name) == 0)
            return (int)i;
    return -1;
}

int tdb_fragmeta_dim_field(const struct tdb_fragmeta *fm, uint32_t dim)
{
    if (!fm || dim >= fm->schema->ndims)
        return -1;
    if (fm->version < 5)
        return (int)fm->schema->nattrs;     /* the __coords field */
    return (int)(fm->schema->nattrs + dim);
}

static int fragmeta_kind_field(const struct tdb_fragmeta *fm,
                               enum tdb_field_kind kind)
{
    if (!fm)
        return -1;
    for (uint32_t f = 0; f < fm->nfields; f++)
        if (fm->kinds[f] == kind)
            return (int)f;
    return -1;
}

int tdb_fragmeta_ts_field(const struct tdb_fragmeta *fm)
{
    return fragmeta_kind_field(fm, TDB_FIELD_TIMESTAMPS);
}

int tdb_fragmeta_delete_ts_field(const struct tdb_fragmeta *fm)
{
    return fragmeta_kind_field(fm, TDB_FIELD_DELETE_TS);
}

/* An integer coordinate of dimension type `dt` stored in 8 zero-padded
 * bytes, as two's-complement 64 bits. */
static uint64_t fragmeta_coord(unsigned dt, const uint8_t *p)
{
    return tdb_value_load(dt, p).u;
}

static uint64_t fragmeta_sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return tdb_mul_ok(a, b, &r) ? r : UINT64_MAX;
}

/* Dense fragments: tiles per dimension covering the non-empty domain, and
 * cells per tile. */
static void fragmeta_dense_tiles(const struct tdb_fragmeta *fm,
                                 uint64_t *tiles, uint64_t *cells_per_tile)
{
    const struct tdb_schema *s = fm->schema;
    *tiles = 1;
    *cells_per_tile = 1;
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        if (!tdb_dt_is_integer(dim->type) || fragmeta_dim_var(dim)) {
            *tiles = 0;
            return;
        }
        uint64_t dlo = fragmeta_coord(dim->type, dim->lo);
        uint64_t dhi = fragmeta_coord(dim->type, dim->hi);
        uint64_t ext = dim->has_extent ? fragmeta_coord(dim->type, dim->extent)
                                       : dhi - dlo + 1;
        uint64_t lo = fragmeta_coord(dim->type, fm->ned[d].lo);
        uint64_t hi = fragmeta_coord(dim->type, fm->ned[d].hi);
        if (ext == 0) {         /* a whole 64-bit domain as one tile */
            *cells_per_tile = UINT64_MAX;
            continue;
        }
        uint64_t t0 = (lo - dlo) / ext, t1 = (hi - dlo) / ext;
        *tiles = fragmeta_sat_mul(*tiles, t1 >= t0 ? t1 - t0 + 1 : 0);
        *cells_per_tile = fragmeta_sat_mul(*cells_per_tile, ext);
    }
}

uint64_t tdb_fragmeta_tile_num(const struct tdb_fragmeta *fm)
{
    if (!fm)
        return 0;
    if (!fm->dense)
        return fm->sparse_tile_num;
    if (fm->ned_null)
        return 0;
    uint64_t tiles, cpt;
    fragmeta_dense_tiles(fm, &tiles, &cpt);
    return tiles;
}

uint64_t tdb_fragmeta_cell_num(const struct tdb_fragmeta *fm)
{
    if (!fm)
        return 0;
    if (fm->dense) {
        if (fm->ned_null)
            return 0;
        uint64_t tiles, cpt;
        fragmeta_dense_tiles(fm, &tiles, &cpt);
        return fragmeta_sat_mul(tiles, cpt);
    }
    if (fm->sparse_tile_num == 0)
        return 0;
    uint64_t r = fragmeta_sat_mul(fm->sparse_tile_num - 1,
                                  fm->schema->capacity);
    return tdb_add_ok(r, fm->last_tile_cell_num, &r) ? r : UINT64_MAX;
}

void tdb_fragmeta_free(struct tdb_fragmeta *fm)
{
    if (!fm)
        return;
    if (fm->schema && fm->ned)
        tdb_fragmeta_free_ranges(fm->ned, fm->schema->ndims);
    free(fm->ned);
    for (uint32_t f = 0; f < fm->nfields; f++) {
        if (fm->file_names)
            free(fm->file_names[f]);
        if (fm->file_var_names)
            free(fm->file_var_names[f]);
        if (fm->file_validity_names)
            free(fm->file_validity_names[f]);
        if (fm->tiles)
            tdb_fragmeta_tiles_free(&fm->tiles[f]);
    }
    free(fm->file_names);
    free(fm->file_var_names);
    free(fm->file_validity_names);
    free(fm->tiles);
    free(fm->kinds);
    free(fm->disk);
    free(fm->index);
    free(fm->is_var);
    free(fm->is_nullable);
    free(fm->file_sizes);
    free(fm->file_var_sizes);
    free(fm->file_validity_sizes);
    free(fm->gt_tile_offsets);
    free(fm->gt_var_offsets);
    free(fm->gt_var_sizes);
    free(fm->gt_validity_offsets);
    free(fm->gt_mins);
    free(fm->gt_maxs);
    free(fm->gt_sums);
    free(fm->gt_null_counts);
    free(fm->mbrs);             /* var bounds point into rtree_data */
    free(fm->rtree_data);
    for (uint64_t i = 0; i < fm->nprocessed; i++)
        free(fm->processed[i]);
    free(fm->processed);
    free(fm->schema_name);
    free(fm->name);
    free(fm->path);
    free(fm->meta_path);
    pthread_mutex_destroy(&fm->lock);
    free(fm);
}

