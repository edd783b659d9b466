/* schemas.h: the schemas of an array (schemas.c): every one its folder
 * lists, and the one in force for an open range (array_schema.md, schema
 * evolution), as reading and writing both learn them. */
#ifndef TDB_SCHEMAS_H
#define TDB_SCHEMAS_H

#include "model/arraydir.h"
#include "model/fragmeta.h"
#include "model/schema.h"

/* Loads into `set` every schema that dir (tdb_arraydir_load over the root
 * of io, at least one schema) lists, and points *in_force at the one in
 * force at dir's end of range, with its enumerations' values; then selects
 * dir's fragments by the rule of that schema's array type
 * (tdb_arraydir_select).  key: the array's (NULL: none).  set->n counts
 * the schemas loaded, on failure too: the caller frees those and set->v.
 * @return 0 or a TDB_E_* code (err says which file). */
int tdb_array_schemas_load(const struct tdb_io *io, struct tdb_arraydir *dir,
                           const uint8_t *key, struct tdb_schema_set *set,
                           const struct tdb_schema **in_force,
                           struct tdb_error *err);

#endif
