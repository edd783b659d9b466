/* fuzz_group.c: group details files (format/model/group.c, tdb_group_apply):
 * the input as a __group file (a generic tile) and as a decoded payload. */
#include "fuzz.h"
#include "model/generic_tile.h"
#include "model/meta.h"

#include <stdlib.h>

static void fuzz_one(const uint8_t *p, size_t n)
{
    struct tdb_group *m = calloc(1, sizeof *m);
    struct tdb_error err = {0};
    if (!m)
        return;
    tdb_group_apply(m, p, n, "fuzz", &err);
    tdb_group_apply(m, p, n, "fuzz", &err); /* adding again, replacing */
    tdb_group_free(m);
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
