/* fuzz_meta.c: array metadata files (format/model/meta.c, tdb_meta_apply): the
 * input as a __meta file (a generic tile) and as a decoded payload. */
#include "fuzz.h"
#include "model/generic_tile.h"
#include "model/meta.h"

#include <stdlib.h>

static void fuzz_one(const uint8_t *p, size_t n)
{
    struct tdb_meta *m = calloc(1, sizeof *m);
    struct tdb_error err = {0};
    if (!m)
        return;
    tdb_meta_apply(m, p, n, "fuzz", &err);
    tdb_meta_apply(m, p, n, "fuzz", &err); /* replacing what is there */
    tdb_meta_find(m, "a");
    tdb_meta_free(m);
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
