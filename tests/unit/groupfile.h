/* groupfile.h: group details serialised for the tests, as
 * format_spec/group.md lays out one member (little-endian): u32 member
 * version (1 or 2), u8 type (1 group, 2 array), u8 relative, u64 uri
 * length and the uri, u8 name set, then u64 name length and the name when
 * set, and from version 2 u8 deleted.  A details payload is u32 version
 * then u64 member count, then the members. */
#ifndef TDB_UNIT_GROUPFILE_H
#define TDB_UNIT_GROUPFILE_H

#include "core/core.h"

#include <string.h>

static inline void group_member(struct tdb_buf *b, uint32_t version,
                                uint8_t type, bool relative, const char *uri,
                                const char *name, bool deleted)
{
    tdb_buf_put_u32(b, version);
    tdb_buf_put_u8(b, type);
    tdb_buf_put_u8(b, relative);
    tdb_buf_put_u64(b, strlen(uri));
    tdb_buf_append(b, uri, strlen(uri));
    tdb_buf_put_u8(b, name != NULL);
    if (name) {
        tdb_buf_put_u64(b, strlen(name));
        tdb_buf_append(b, name, strlen(name));
    }
    if (version >= 2)
        tdb_buf_put_u8(b, deleted);
}

#endif
