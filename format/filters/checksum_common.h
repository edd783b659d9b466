/* checksum_common.h: the framing the checksum filters (checksum_md5.c,
 * checksum_sha256.c) share, written once in checksum_common.c (tile.md,
 * "Checksum Filters").
 *
 * The chunk metadata is u32 metadata checksums, u32 data checksums, then
 * per checksum (metadata first) u64 bytes covered and the digest, then the
 * input metadata intact; the data passes through unchanged.
 */
#ifndef TDB_CHECKSUM_COMMON_H
#define TDB_CHECKSUM_COMMON_H

#include "filter.h"

/* The checksum filters' decode and encode; digest is TDB_FILTER_CHECKSUM_MD5
 * or TDB_FILTER_CHECKSUM_SHA256.  A mismatch is TDB_E_CHECKSUM. */
int tdb_checksum_decode(unsigned digest, const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st);
int tdb_checksum_encode(unsigned digest, const struct tdb_filter_call *call,
                        struct tdb_filter_stage *st);

#endif
