/* meta.h: array and group metadata (format_spec/metadata.md) and group
 * members (group.md, group_file_hierarchy.md). */
#ifndef TDB_META_H
#define TDB_META_H

#include "core.h"

struct tdb_meta_item {
    char *key;
    unsigned type;              /* TileDB datatype of the value */
    uint32_t count;             /* number of values */
    uint8_t *value;             /* count * tdb_dt_size(type) bytes */
    uint64_t size;
};

/* The metadata in force: keys sorted bytewise. */
struct tdb_meta {
    size_t n;
    struct tdb_meta_item *v;
    uint64_t newest_ts;
};

/* Loads folder `dir` (an array's or a group's __meta) as of
 * [ts_start, ts_end]: files are applied oldest first, a later write
 * replaces a key, a deletion removes it; vacuum files drop consolidated
 * inputs.  A missing folder is no metadata. */
int tdb_meta_load(const struct tdb_io *io, const char *dir,
                  uint64_t ts_start, uint64_t ts_end, const uint8_t *key,
                  struct tdb_meta **out, struct tdb_error *err);
void tdb_meta_free(struct tdb_meta *m);
const struct tdb_meta_item *tdb_meta_find(const struct tdb_meta *m,
                                          const char *key);

/* Appends a metadata file's payload (one put or delete per item) for
 * writing a new __meta file. */
int tdb_meta_serialize_put(struct tdb_buf *out, const char *key,
                           unsigned type, uint32_t count, const void *value);
int tdb_meta_serialize_del(struct tdb_buf *out, const char *key);

struct tdb_group_member {
    char *name;                 /* the member's name (folder name shown) */
    char *uri;                  /* as stored */
    bool relative;
    unsigned type;              /* 1 group, 2 array (TileDB object type) */
};

struct tdb_group {
    uint32_t version;
    size_t n;
    struct tdb_group_member *v; /* sorted by name */
};

/* Loads the members of the group at `dir` as of the range. */
int tdb_group_load(const struct tdb_io *io, const char *dir,
                   uint64_t ts_start, uint64_t ts_end, struct tdb_group **out,
                   struct tdb_error *err);
void tdb_group_free(struct tdb_group *g);

#endif
