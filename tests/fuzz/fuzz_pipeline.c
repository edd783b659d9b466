/* fuzz_pipeline.c: filter pipelines and chunked tiles (format/filters/).
 * Input: u8 datatype, u8 flags (1: var-sized values, 2: encrypted with
 * fuzz_key, 4: collect the offsets of string forms), u8 format version,
 * u16 cell size (0: the datatype's), u16 cells (0: unknown), then a
 * serialised filter pipeline and the filtered tile. */
#include "fuzz.h"
#include "filters/filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tdb_cursor c;
    uint8_t dt, flags, version;
    uint16_t cs, ncells;
    struct tdb_pipeline p;
    struct tdb_error err = {0};

    tdb_cur_init(&c, data, size);
    tdb_cur_u8(&c, &dt);
    tdb_cur_u8(&c, &flags);
    tdb_cur_u8(&c, &version);
    tdb_cur_u16(&c, &cs);
    if (tdb_cur_u16(&c, &ncells))
        return 0;
    if (tdb_pipeline_read(&p, &c, version, &err))
        return 0;
    struct tdb_tile_desc d = {
        .datatype = dt % TDB_DATATYPE_COUNT,
        .cell_size = cs ? cs : tdb_dt_size(dt % TDB_DATATYPE_COUNT),
        .version = version,
        .is_var = flags & 1,
        .key = flags & 2 ? fuzz_key : NULL,
        .what = "fuzz",
        .ncells = ncells,
    };
    struct tdb_buf out = {0}, offsets = {0};
    const uint8_t *tile = data + c.pos;
    tdb_pipeline_decode(&p, &d, tile, size - c.pos, &out,
                        flags & 4 ? &offsets : NULL, &err);
    /* and back: what decoded must encode */
    if (out.len && !(flags & 4) && out.len < (1u << 20)) {
        struct tdb_buf enc = {0};
        tdb_pipeline_encode(&p, &d, out.data, out.len, NULL, 0, &enc, &err);
        tdb_buf_free(&enc);
    }
    tdb_buf_free(&out);
    tdb_buf_free(&offsets);
    tdb_pipeline_free(&p);
    return 0;
}
