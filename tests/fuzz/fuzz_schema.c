/* fuzz_schema.c: array schemas (format/model/schema.c): the input as a schema
 * file (a generic tile, encrypted ones with fuzz_key) and as a decoded
 * payload. */
#include "fuzz.h"
#include "model/generic_tile.h"
#include "model/schema.h"
#include "write/writer.h"

static void fuzz_one(const uint8_t *p, size_t n)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    if (tdb_schema_parse(p, n, "fuzz", &s, &err) == 0) {
        tdb_schema_check(s, &err);
        tdb_schema_free(s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tdb_buf out = {0};
    struct tdb_error err = {0};
    uint64_t next;
    if (tdb_generic_tile_decode(&(struct tdb_gt_bytes){data, size, 0},
                                fuzz_key, "fuzz", &out, &next, &err) == 0)
        fuzz_one(out.data, out.len);
    tdb_buf_free(&out);
    fuzz_one(data, size);
    return 0;
}
