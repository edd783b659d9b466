/* test_noop.c: the filter that changes nothing (format/filters/noop.c). */
#include "../unit.h"

#include "filters/compress_common.h"
#include "../capped.h"
#include "tree/json.h"
#include "model/schema.h"
#include "write/writer.h"

#include <bzlib.h>
#include <lz4.h>
#include <openssl/evp.h>
#include <webp/decode.h>
#include <webp/encode.h>
#include <zlib.h>
#include <zstd.h>
#include "fixture.h"

/* ------------------------------------------------------------ NONE, WEBP */

static void test_noop(void)
{
    struct fx x;
    fx_init(&x, &tdb_filter_noop, 0, 0, 1);
    CHECK_EQ_INT(fx_decode(&x, "mdmd", 4, "data!", 5), 0);
    CHECK_EQ_INT(x.md_out.len, 4);
    CHECK_MEM(x.md_out.data, "mdmd", 4);
    CHECK_EQ_INT(x.data_out.len, 5);
    CHECK_MEM(x.data_out.data, "data!", 5);
    fx_roundtrip(&x, NULL, 0, NULL, 0);
    fx_roundtrip(&x, (const uint8_t *)"m", 1, (const uint8_t *)"d", 1);
    CHECK_EQ_INT(tdb_filter_noop.type, TDB_FILTER_NONE);
    fx_free(&x);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_noop);
    return unit_done();
}
