/* checksum_sha256.c: the CHECKSUM_SHA256 filter (tile.md, "Checksum"). */
#include "checksum_common.h"

static int checksum_sha256_decode(const struct tdb_filter_call *call,
                                  struct tdb_cursor *md, const uint8_t *data,
                                  size_t size, struct tdb_buf *md_out,
                                  struct tdb_buf *data_out)
{
    return tdb_checksum_decode(TDB_FILTER_CHECKSUM_SHA256, call, md,
                               data, size, md_out, data_out);
}

static int checksum_sha256_encode(const struct tdb_filter_call *call,
                                  const uint8_t *md, size_t md_size,
                                  const uint8_t *data, size_t size,
                                  struct tdb_buf *md_out,
                                  struct tdb_buf *data_out)
{
    return tdb_checksum_encode(TDB_FILTER_CHECKSUM_SHA256, call, md,
                               md_size, data, size, md_out,
                               data_out);
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
