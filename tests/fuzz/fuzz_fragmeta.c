/* fuzz_fragmeta.c: fragment metadata (format/model/fragmeta.c).  Input: u8 n,
 * the schema's file name (n bytes), u32 m, the schema file (m bytes; a
 * generic tile), then __fragment_metadata.tdb of fragment
 * __1_1_0123456789abcdef0123456789abcdef_22 (as such and, from byte 8 on,
 * as the footer of a consolidated fragment metadata file).  Every field
 * and the R-tree are loaded too. */
#include "fuzz.h"
#include "model/fragmeta.h"
#include "model/schema.h"

#include <stdio.h>

#define FUZZ_FRAG "__1_1_0123456789abcdef0123456789abcdef_22"

static void fuzz_frag(const struct tdb_io *io,
                      const struct tdb_schema_set *set, const uint8_t *footer,
                      size_t footer_size)
{
    struct tdb_fragmeta *fm = NULL;
    struct tdb_error err = {0};
    struct tdb_fragmeta_src src = {io, "__fragments/" FUZZ_FRAG, FUZZ_FRAG,
                                   set, fuzz_key, footer, footer_size};
    if (tdb_fragmeta_load(&src, &fm, &err))
        return;
    for (uint32_t f = 0; f < 4096; f++)
        if (tdb_fragmeta_load_field(fm, f, &err) == TDB_E_INVAL)
            break;
    tdb_fragmeta_load_rtree(fm, &err);
    tdb_fragmeta_cell_num(fm);
    tdb_fragmeta_tile_num(fm);
    tdb_fragmeta_free(fm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tdb_cursor c;
    uint8_t n;
    uint32_t m;
    const uint8_t *name, *schema;
    char sname[300], path[320];
    struct tdb_io io = {0};
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};

    tdb_cur_init(&c, data, size);
    tdb_cur_u8(&c, &n);
    tdb_cur_bytes(&c, n, &name);
    tdb_cur_u32(&c, &m);
    if (tdb_cur_bytes(&c, m, &schema) || n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        sname[i] = name[i] && name[i] != '/' ? (char)name[i] : '_';
    sname[n] = 0;
    snprintf(path, sizeof path, "__schema/%s", sname);
    const uint8_t *fm = data + c.pos;
    size_t fm_size = size - c.pos;
    if (fuzz_mem_file(&io, path, schema, m) ||
        fuzz_mem_file(&io, "__fragments/" FUZZ_FRAG "/__fragment_metadata.tdb",
                      fm, fm_size))
        goto done;
    if (tdb_schema_load(&io, path, fuzz_key, &s, &err))
        goto done;
    struct tdb_schema_set set = {.v = &s, .n = 1};
    fuzz_frag(&io, &set, NULL, 0);
    if (fm_size > 8)
        fuzz_frag(&io, &set, fm + 8, fm_size - 8);
done:
    tdb_schema_free(s);
    tdb_io_free(&io);
    return 0;
}
