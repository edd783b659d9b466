/* schemas.c: the schemas of an array folder (array_file_hierarchy.md,
 * array_schema.md: __schema and schema evolution) and the one in force
 * for an open range, with its enumerations (enumeration.md). */
#include "model/schemas.h"

#include <stdlib.h>

/* The enumeration files of schema s, asked for at once. */
static void schemas_want_enums(const struct tdb_io *io,
                               const struct tdb_schema *s)
{
    for (uint32_t i = 0; i < s->nenums; i++)
        if (s->enums[i].path)
            tdb_io_want(io, TDB_WANT_FILE, s->enums[i].path);
}

int tdb_array_schemas_load(const struct tdb_io *io, struct tdb_arraydir *dir,
                           const uint8_t *key, struct tdb_schema_set *set,
                           const struct tdb_schema **in_force,
                           struct tdb_error *err)
{
    set->n = 0;
    set->v = calloc(dir->nschemas ? dir->nschemas : 1, sizeof *set->v);
    if (!set->v)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < dir->nschemas; i++) {
        int r = tdb_schema_load(io, dir->schemas[i].path, key, &set->v[i],
                                err);
        if (r)
            return r;
        set->n++;
    }
    if (!set->n)
        return tdb_err(err, TDB_E_INVAL, "not a TileDB array (no schema)");
    /* the schema in force at ts_end (arraydir applies TileDB's rule) */
    struct tdb_schema *s =
        set->v[dir->schema_latest < set->n ? dir->schema_latest : 0];
    *in_force = s;
    schemas_want_enums(io, s);
    /* its enumerations' values (shown in __array.json) */
    for (uint32_t i = 0; i < s->nenums; i++) {
        int r = tdb_enumeration_load(io, &s->enums[i], key, err);
        if (r)
            return r;
    }
    return tdb_arraydir_select(dir, s->array_type == TDB_SPARSE, err);
}
