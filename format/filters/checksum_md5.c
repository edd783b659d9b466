/* checksum_md5.c: the CHECKSUM_MD5 filter (tile.md, "Checksum"); the framing is in checksum_common.c. */
#include "checksum_common.h"

static int checksum_md5_decode(const struct tdb_filter_call *call,
                               struct tdb_filter_stage *st)
{
    return tdb_checksum_decode(TDB_FILTER_CHECKSUM_MD5, call, st);
}

static int checksum_md5_encode(const struct tdb_filter_call *call,
                               struct tdb_filter_stage *st)
{
    return tdb_checksum_encode(TDB_FILTER_CHECKSUM_MD5, call, st);
}

const struct tdb_filter_ops tdb_filter_checksum_md5 = {
    .name = "CHECKSUM_MD5",
    .type = TDB_FILTER_CHECKSUM_MD5,
    .read_options = NULL,   /* no options */
    .write_options = NULL,
    .output_type = NULL,
    .decode = checksum_md5_decode,
    .encode = checksum_md5_encode,
};
