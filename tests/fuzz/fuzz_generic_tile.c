/* fuzz_generic_tile.c: generic tiles (format/model/generic_tile.c): every tile
 * of the input one after the other, encrypted ones with fuzz_key. */
#include "fuzz.h"
#include "model/generic_tile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t off = 0;
    for (int i = 0; i < 64 && off < size; i++) {
        struct tdb_buf out = {0};
        struct tdb_error err = {0};
        uint64_t next = 0;
        uint8_t enc;
        tdb_generic_tile_encryption(data + off, size - off, &enc);
        int r = tdb_generic_tile_decode(&(struct tdb_gt_bytes){data, size, off},
                                        fuzz_key, "fuzz", &out, &next, &err);
        tdb_buf_free(&out);
        if (r || next <= off)
            break;
        off = next;
    }
    return 0;
}
