/* fuzz_delcond.c: delete conditions (format/model/delcond.c): the input as a .del
 * file (a generic tile) and as a decoded payload, each parsed condition
 * evaluated on one cell whose every field is an int32 1 (or null). */
#include "fuzz.h"
#include "model/delcond.h"
#include "model/generic_tile.h"

static int fuzz_get(void *arg, const char *name, const uint8_t **val,
                    uint64_t *size, unsigned *type, bool *is_null)
{
    static const uint8_t one[4] = {1, 0, 0, 0};
    (void)arg;
    *val = one;
    *size = sizeof one;
    *type = TDB_INT32;
    *is_null = name[0] == 'n';
    return 0;
}

static void fuzz_one(const uint8_t *p, size_t n)
{
    struct tdb_cond *c = NULL;
    struct tdb_error err = {0};
    if (tdb_cond_parse(p, n, "fuzz", &c, &err) == 0) {
        struct tdb_cell_view v = {.get = fuzz_get, .arg = NULL, .is_var = NULL};
        const char **names = NULL;
        tdb_cond_fields(c, &names);
        tdb_cond_eval(c, &v, &err);
        tdb_cond_free(c);
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
