/* test_generic_tile.c: generic tiles (format/model/generic_tile.c),
 * plain and encrypted: round trips. */
#include "filters/filter.h"
#include "model/generic_tile.h"
#include "../unit.h"

#include <stdlib.h>

static void test_generic_tile_roundtrip(void)
{
    const char *text = "generic tile payload";
    struct tdb_buf gt = {0}, out = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_generic_tile_encode((const uint8_t *)text, strlen(text), &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1}, NULL, &gt, &err), 0);
    uint64_t next = 0;
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0}, NULL, "f", &out, &next, &err), 0);
    CHECK_EQ_INT(next, gt.len);
    CHECK(out.len == strlen(text) && !memcmp(out.data, text, out.len));
    uint8_t enc;
    CHECK_EQ_INT(tdb_generic_tile_encryption(gt.data, gt.len, &enc), 0);
    CHECK_EQ_INT(enc, TDB_NO_ENCRYPTION);
    for (size_t n = 0; n < gt.len; n++) {
        tdb_buf_reset(&out);
        CHECK(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, n, 0}, NULL, "f", &out, NULL, &err) != 0);
    }
    tdb_buf_free(&gt);
    tdb_buf_free(&out);
}

static void test_generic_tile_encrypted(void)
{
    uint8_t key[32], wrong[32];
    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)i;
        wrong[i] = (uint8_t)(i + 1);
    }
    const char *text = "secret metadata";
    struct tdb_buf gt = {0}, out = {0};
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_generic_tile_encode((const uint8_t *)text, strlen(text), &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1}, key, &gt, &err), 0);
    CHECK(!memmem(gt.data, gt.len, text, strlen(text)));
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0}, key, "m", &out, NULL, &err), 0);
    CHECK(out.len == strlen(text) && !memcmp(out.data, text, out.len));
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0}, wrong, "m", &out, NULL, &err),
                 TDB_E_AUTH);
    tdb_buf_reset(&out);
    CHECK_EQ_INT(tdb_generic_tile_decode(&(struct tdb_gt_bytes){gt.data, gt.len, 0}, NULL, "m", &out, NULL, &err),
                 TDB_E_NOKEY);
    tdb_buf_free(&gt);
    tdb_buf_free(&out);
}

int main(void)
{
    RUN(test_generic_tile_roundtrip);
    RUN(test_generic_tile_encrypted);
    return unit_done();
}
