/* checksum_sha256.c: the CHECKSUM_SHA256 filter (tile.md, "Checksum"). */
#include "checksum_common.h"

static int checksum_sha256_decode(const struct tdb_filter_call *call,
                                  struct tdb_filter_stage *st)
{
    return tdb_checksum_decode(TDB_FILTER_CHECKSUM_SHA256, call, st);
}

static int checksum_sha256_encode(const struct tdb_filter_call *call,
                                  struct tdb_filter_stage *st)
{
    return tdb_checksum_encode(TDB_FILTER_CHECKSUM_SHA256, call, st);
}

const struct tdb_filter_ops tdb_filter_checksum_sha256 = {
    .name = "CHECKSUM_SHA256",
    .type = TDB_FILTER_CHECKSUM_SHA256,
    .read_options = NULL,   /* no options */
    .write_options = NULL,
    .output_type = NULL,
    .decode = checksum_sha256_decode,
    .encode = checksum_sha256_encode,
};
