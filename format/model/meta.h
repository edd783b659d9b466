/* meta.h: array and group metadata (format_spec/metadata.md) and group
 * members (group.md, group_file_hierarchy.md). */
#ifndef TDB_META_H
#define TDB_META_H

#include "core/core.h"

/* A time-travel window: what was written in [start, end] (ms since the
 * epoch, both included). */
struct tdb_ts_window {
    uint64_t start, end;
};
/* The whole history. */
#define TDB_TS_ALL ((struct tdb_ts_window){0, UINT64_MAX})

struct tdb_meta_item {
    char *key;                  /* NUL-terminated (a key may hold NULs) */
    size_t key_len;             /* bytes of key, without the NUL */
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

/* Loads folder `dir` (an array's or a group's __meta) as of the window
 * `when`: files are applied oldest first, a later write
 * replaces a key, a deletion removes it; vacuum files drop consolidated
 * inputs.  A missing folder is no metadata. */
int tdb_meta_load(const struct tdb_io *io, const char *dir,
                  struct tdb_ts_window when, const uint8_t *key,
                  struct tdb_meta **out, struct tdb_error *err);
void tdb_meta_free(struct tdb_meta *m);
const struct tdb_meta_item *tdb_meta_find(const struct tdb_meta *m,
                                          const char *key);

/* Parses one metadata file's decoded payload and applies it to m (puts
 * replace, deletions remove, keys kept sorted).  `what` names the file for
 * errors.  m may be a zeroed struct. */
int tdb_meta_apply(struct tdb_meta *m, const uint8_t *p, size_t size,
                   const char *what, struct tdb_error *err);

/* One file of a timestamped folder (__meta, __group). */
struct tdb_ts_file {
    char *name;                 /* file name, no folder */
    uint64_t t1, t2;
};

/* Lists the timestamped files of folder `dir` that are live in the
 * window `when` as TileDB selects metadata and group details: a file
 * counts only when t1 >= when.start and t2 <= when.end; ".tmp" files and
 * folders are skipped; a vacuum file (NAME.vac) inside the range drops the
 * files it lists (matched by last path component).  The result is sorted
 * oldest first (by t1, then by name).  A missing folder gives none.
 * Free with tdb_ts_files_free. */
int tdb_ts_files_list(const struct tdb_io *io, const char *dir,
                      struct tdb_ts_window when, struct tdb_ts_file **out,
                      size_t *n, struct tdb_error *err);
void tdb_ts_files_free(struct tdb_ts_file *f, size_t n);

/* The timestamped files v[0..n) of folder `dir`, as tdb_ts_files_list
 * lists them. */
struct tdb_ts_files {
    const char *dir;
    struct tdb_ts_file *v;
    size_t n;
};

/* tdb_meta_load's second half: loads the metadata files of f->dir that
 * f lists (an open lists them early, so that they are fetched with the
 * files it reads next). */
int tdb_meta_load_files(const struct tdb_io *io, const struct tdb_ts_files *f,
                        const uint8_t *key, struct tdb_meta **out,
                        struct tdb_error *err);

/* Appends a metadata file's payload (one put or delete per item) for
 * writing a new __meta file. */
int tdb_meta_serialize_put(struct tdb_buf *out, const char *key,
                           unsigned type, uint32_t count, const void *value);
int tdb_meta_serialize_del(struct tdb_buf *out, const char *key);
/* A put of item `it` as it was loaded (its key may hold NULs). */
int tdb_meta_serialize_item(struct tdb_buf *out,
                            const struct tdb_meta_item *it);

struct tdb_group_member {
    char *name;                 /* the member's name (folder name shown) */
    char *uri;                  /* as stored */
    bool relative;
    bool name_set;              /* false: name was taken from the uri */
    unsigned type;              /* 1 group, 2 array (TileDB object type) */
};

struct tdb_group {
    uint32_t version;
    size_t n;
    struct tdb_group_member *v; /* sorted by name */
};

/* Loads the members of the group at `dir` as of [ts_start, ts_end]
 * (tdb_group_load_key: of the window `when`; from the
 * files of dir/__group; version-1 groups use only the latest file, later
 * versions apply every live file oldest first, deletions removing members
 * by name, or by uri when unnamed).  A member without a name is named by
 * the last component of its uri.  `key` is the AES-256-GCM key of an
 * encrypted group or NULL. */
int tdb_group_load(const struct tdb_io *io, const char *dir,
                   uint64_t ts_start, uint64_t ts_end, struct tdb_group **out,
                   struct tdb_error *err);
int tdb_group_load_key(const struct tdb_io *io, const char *dir,
                       struct tdb_ts_window when, const uint8_t *key,
                       struct tdb_group **out, struct tdb_error *err);
/* Parses one group details file's decoded payload into g (adds, replaces
 * and removes members); `what` names the file. */
int tdb_group_apply(struct tdb_group *g, const uint8_t *p, size_t size,
                    const char *what, struct tdb_error *err);
void tdb_group_free(struct tdb_group *g);

/* The path of member m for the I/O backend, given the group folder `dir`:
 * dir/uri when relative; an absolute "file://" uri loses its scheme.
 * @return a new string, or NULL when out of memory. */
char *tdb_group_member_path(const struct tdb_group_member *m,
                            const char *dir);

/* Member m's place (tdb_fs_open in tiledb_format.h): its uri joined to the
 * group folder `dir` when relative, else the uri without "file://", with
 * "." and ".." resolved by name (tdb_path_normal; a uri of another scheme
 * keeps it, "s3://BUCKET/" then the resolved key).  *above tells that a
 * ".." climbed above the root ("" for a relative place, the bucket).
 * @return a new string, or NULL when out of memory. */
char *tdb_group_member_place(const struct tdb_group_member *m,
                             const char *dir, bool *above);

/* `rel` joined to `base`, "." and empty components dropped, each ".."
 * taking off the component before it.  An absolute base gives an absolute
 * path ("/.." is "/"); a relative one keeps the ".." that climb above it,
 * in front ("../x"), and *above tells so.  A leading '/' of rel counts for
 * nothing.  @return a new string ("" for the root itself), or NULL when
 * out of memory. */
char *tdb_path_normal(const char *base, const char *rel, bool *above);

#endif
