/* mount_names.h: the names the mount contract gives fields, metadata keys
 * and group members (mount_names.c); tdb_mount_name and tdb_meta_key_name
 * are public (tiledb_format.h). */
#ifndef TDB_MOUNT_NAMES_H
#define TDB_MOUNT_NAMES_H

#include "core/core.h"

/* tdb_mount_name(name, "") with its first character percent-encoded too
 * when that name is one of `reserved` (NULL-terminated): names a folder
 * cannot hold ("." and "..") or that stand for something else in it.
 * Caller frees; NULL when out of memory. */
char *tdb_mount_name_reserved(const char *name, const char *const *reserved);

/* The folder name member `name` is shown under: tdb_mount_name's ('/' and
 * '%' percent-encoded) with the first character percent-encoded too when
 * the name is ".", "..", "__group.json" or "__meta" (names the group
 * folder itself uses).  "" for an empty name (no folder can have it).
 * @return a new string, or NULL when out of memory. */
char *tdb_group_shown_name(const char *name);

#endif
