/* evolve.c: schema evolution (array_schema.md; TileDB's
 * ArraySchemaEvolution): the array's newest schema, changed as an
 * evolution JSON says, written as a new schema file that readers take
 * from its time on. */
#include "write/writer.h"
#include "model/arraydir.h"
#include "model/schemas.h"

#include <stdlib.h>

int tdb_schema_evolve(const struct tdb_io *io, const char *json, size_t len,
                      const struct tdb_commit_options *at, char **name,
                      struct tdb_error *err)
{
    const uint8_t *key = at->key;
    uint64_t timestamp_ms = at->timestamp_ms;
    struct tdb_arraydir *dir = NULL;
    struct tdb_schema_set set = {0};
    const struct tdb_schema *latest = NULL;
    *name = NULL;
    if (!io->ops->write_at || !io->ops->rename)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    int r = tdb_arraydir_load(io, 0, UINT64_MAX, &dir, err);
    if (!r)
        r = tdb_array_schemas_load(io, dir, key, &set, &latest, err);
    if (!r && latest->encryption == TDB_AES_256_GCM && !key)
        r = tdb_err(err, TDB_E_NOKEY, "the array is encrypted: a key is "
                    "needed");
    if (!timestamp_ms)
        timestamp_ms = tdb_now_ms();
    uint64_t newest = 0;
    for (size_t i = 0; !r && i < dir->nschemas; i++)
        if (dir->schemas[i].ts.t2 > newest)
            newest = dir->schemas[i].ts.t2;
    if (!r && timestamp_ms <= newest)
        r = tdb_err(err, TDB_E_INVAL, "the evolution's time %llu is not after "
                    "the newest schema's (%llu)",
                    (unsigned long long)timestamp_ms,
                    (unsigned long long)newest);
    /* the newest schema is ours to change: the set is freed below */
    struct tdb_schema *s = (struct tdb_schema *)latest;
    if (!r)
        r = tdb_schema_evolve_json(s, json, len, err);
    if (!r && s->encryption != TDB_AES_256_GCM)
        key = NULL;
    if (!r)
        r = tdb_schema_publish(io, s, key, timestamp_ms, name, err);
    for (size_t i = 0; i < set.n; i++)
        tdb_schema_free(set.v[i]);
    free(set.v);
    tdb_arraydir_free(dir);
    return r;
}
