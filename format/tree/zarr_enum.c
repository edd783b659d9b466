/* zarr_enum.c: the values of an enumerated attribute as the __zarr store
 * shows them (docs/LAYOUT.md "__zarr", Enumerations): their count, where
 * each lies, and each as a word of CF's flag_meanings. */
#include "tree/zarr_priv.h"

const struct tdb_enumeration *zarr_enum_of(const struct tdb_schema *s,
                                           const struct tdb_attr *at)
{
    if (!at->enumeration || at->cell_val_num != 1 ||
        !tdb_dt_is_integer(at->type))
        return NULL;
    for (uint32_t i = 0; i < s->nenums; i++)
        if (!strcmp(s->enums[i].name, at->enumeration))
            return s->enums[i].unwritten ? NULL : &s->enums[i];
    return NULL;
}

uint64_t zarr_enum_count(const struct tdb_enumeration *e)
{
    if (e->cell_val_num == TDB_VAR_NUM)
        return e->offsets_size / 8;
    uint64_t per = (uint64_t)tdb_dt_size(e->type) * e->cell_val_num;
    return per ? e->data_size / per : 0;
}

bool zarr_enum_value(const struct tdb_enumeration *e, uint64_t i,
                     uint64_t *at, uint64_t *n)
{
    if (e->cell_val_num != TDB_VAR_NUM) {
        *n = (uint64_t)tdb_dt_size(e->type) * e->cell_val_num;
        *at = i * *n;
        return true;
    }
    uint64_t cnt = e->offsets_size / 8, lo = tdb_le64(e->offsets + i * 8);
    uint64_t hi = i + 1 < cnt ? tdb_le64(e->offsets + (i + 1) * 8)
                              : e->data_size;
    if (lo > hi || hi > e->data_size)
        return false;
    *at = lo;
    *n = hi - lo;
    return true;
}

int zarr_enum_word(const struct tdb_enumeration *e, uint64_t i,
                   struct tdb_buf *out)
{
    uint64_t at, n;
    if (!zarr_enum_value(e, i, &at, &n))
        return 0;
    if (zarr_bytes_type(e->type) || e->cell_val_num != 1) {
        for (uint64_t j = 0; j < n; j++) {
            uint8_t c = e->data[at + j];
            if (tdb_buf_put_u8(out, c == ' ' ? '_' : c))
                return TDB_E_NOMEM;
        }
        return 0;
    }
    json_t *v = tdb_json_value(e->type, e->data + at, n);
    struct tdb_buf b = {0};
    int r = v ? tdb_json_dump(v, &b) : TDB_E_NOMEM;
    json_decref(v);
    if (!r && b.len)            /* the dump ends in a newline */
        r = tdb_buf_append(out, b.data, b.len - 1);
    tdb_buf_free(&b);
    return r;
}

