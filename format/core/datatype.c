/* datatype.c: TileDB datatypes (tiledb_datatype_t): sizes, names, numpy
 * dtypes and default fill values. */
#include "core/core.h"

#include <math.h>

struct dt_info {
    const char *name;
    const char *numpy;
    unsigned size;
};

static const struct dt_info dt_table[TDB_DATATYPE_COUNT] = {
    [TDB_INT32] = {"INT32", "<i4", 4},
    [TDB_INT64] = {"INT64", "<i8", 8},
    [TDB_FLOAT32] = {"FLOAT32", "<f4", 4},
    [TDB_FLOAT64] = {"FLOAT64", "<f8", 8},
    [TDB_CHAR] = {"CHAR", "S1", 1},
    [TDB_INT8] = {"INT8", "|i1", 1},
    [TDB_UINT8] = {"UINT8", "|u1", 1},
    [TDB_INT16] = {"INT16", "<i2", 2},
    [TDB_UINT16] = {"UINT16", "<u2", 2},
    [TDB_UINT32] = {"UINT32", "<u4", 4},
    [TDB_UINT64] = {"UINT64", "<u8", 8},
    [TDB_STRING_ASCII] = {"STRING_ASCII", "S1", 1},
    [TDB_STRING_UTF8] = {"STRING_UTF8", "S1", 1},
    [TDB_STRING_UTF16] = {"STRING_UTF16", "<u2", 2},
    [TDB_STRING_UTF32] = {"STRING_UTF32", "<u4", 4},
    [TDB_STRING_UCS2] = {"STRING_UCS2", "<u2", 2},
    [TDB_STRING_UCS4] = {"STRING_UCS4", "<u4", 4},
    [TDB_ANY] = {"ANY", "|u1", 1},
    [18] = {"DATETIME_YEAR", "<M8[Y]", 8},
    [19] = {"DATETIME_MONTH", "<M8[M]", 8},
    [20] = {"DATETIME_WEEK", "<M8[W]", 8},
    [21] = {"DATETIME_DAY", "<M8[D]", 8},
    [22] = {"DATETIME_HR", "<M8[h]", 8},
    [23] = {"DATETIME_MIN", "<M8[m]", 8},
    [24] = {"DATETIME_SEC", "<M8[s]", 8},
    [25] = {"DATETIME_MS", "<M8[ms]", 8},
    [26] = {"DATETIME_US", "<M8[us]", 8},
    [27] = {"DATETIME_NS", "<M8[ns]", 8},
    [28] = {"DATETIME_PS", "<M8[ps]", 8},
    [29] = {"DATETIME_FS", "<M8[fs]", 8},
    [30] = {"DATETIME_AS", "<M8[as]", 8},
    [31] = {"TIME_HR", "<m8[h]", 8},
    [32] = {"TIME_MIN", "<m8[m]", 8},
    [33] = {"TIME_SEC", "<m8[s]", 8},
    [34] = {"TIME_MS", "<m8[ms]", 8},
    [35] = {"TIME_US", "<m8[us]", 8},
    [36] = {"TIME_NS", "<m8[ns]", 8},
    [37] = {"TIME_PS", "<m8[ps]", 8},
    [38] = {"TIME_FS", "<m8[fs]", 8},
    [39] = {"TIME_AS", "<m8[as]", 8},
    [TDB_BLOB] = {"BLOB", "|u1", 1},
    [TDB_BOOL] = {"BOOL", "|b1", 1},
    [TDB_GEOM_WKB] = {"GEOM_WKB", "|u1", 1},
    [TDB_GEOM_WKT] = {"GEOM_WKT", "|u1", 1},
};

unsigned tdb_dt_size(unsigned dt)
{
    return dt < TDB_DATATYPE_COUNT ? dt_table[dt].size : 0;
}

const char *tdb_dt_name(unsigned dt)
{
    return dt < TDB_DATATYPE_COUNT ? dt_table[dt].name : NULL;
}

const char *tdb_dt_numpy(unsigned dt)
{
    return dt < TDB_DATATYPE_COUNT ? dt_table[dt].numpy : NULL;
}

int tdb_dt_from_name(const char *name)
{
    for (unsigned i = 0; i < TDB_DATATYPE_COUNT; i++)
        if (dt_table[i].name && !strcmp(dt_table[i].name, name))
            return (int)i;
    return -1;
}

bool tdb_dt_is_datetime(unsigned dt)
{
    return dt >= TDB_DATETIME_YEAR && dt <= TDB_TIME_AS;
}

bool tdb_dt_is_signed_int(unsigned dt)
{
    return dt == TDB_INT8 || dt == TDB_INT16 || dt == TDB_INT32 ||
           dt == TDB_INT64 || tdb_dt_is_datetime(dt);
}

bool tdb_dt_is_unsigned_int(unsigned dt)
{
    return dt == TDB_UINT8 || dt == TDB_UINT16 || dt == TDB_UINT32 ||
           dt == TDB_UINT64;
}

bool tdb_dt_is_integer(unsigned dt)
{
    return tdb_dt_is_signed_int(dt) || tdb_dt_is_unsigned_int(dt);
}

bool tdb_dt_is_float(unsigned dt)
{
    return dt == TDB_FLOAT32 || dt == TDB_FLOAT64;
}

bool tdb_dt_is_string(unsigned dt)
{
    return dt == TDB_CHAR || (dt >= TDB_STRING_ASCII && dt <= TDB_STRING_UCS4);
}

void tdb_dt_default_fill(unsigned dt, uint8_t *out)
{
    unsigned n = tdb_dt_size(dt);
    if (tdb_dt_is_signed_int(dt)) {
        memset(out, 0, n);
        out[n - 1] = 0x80;          /* the type's minimum */
    } else if (tdb_dt_is_unsigned_int(dt)) {
        memset(out, 0xff, n);       /* the type's maximum */
    } else if (dt == TDB_FLOAT32) {
        float f = NAN;
        memcpy(out, &f, 4);
    } else if (dt == TDB_FLOAT64) {
        double d = NAN;
        memcpy(out, &d, 8);
    } else if (dt == TDB_CHAR) {
        out[0] = 0x80;              /* CHAR_MIN */
    } else {
        memset(out, 0, n);          /* BOOL, strings, BLOB, ANY, GEOM */
    }
}
