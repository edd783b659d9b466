/* stamp.h: what the digest of a source's listings (stamp.c) needs of an
 * opened tree (tree.c). */
#ifndef TDB_STAMP_H
#define TDB_STAMP_H

#include "core/core.h"

/* The folder of the i-th array or group the tree opened (the source's
 * root "" first, then its members' in the order they were opened), or
 * NULL past the last. */
const char *tdb_fs_source(const struct tdb_fs *fs, size_t i);

#endif
