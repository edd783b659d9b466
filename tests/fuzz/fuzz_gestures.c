/* fuzz_gestures.c: the texts a writer stages (format/write/delete.c's
 * condition in QueryCondition syntax, tdb_delete_condition; the evolution
 * JSON of schema_json.c, tdb_schema_evolve_json), each against a schema
 * of every kind of field.  The first byte picks which. */
#include "fuzz.h"
#include "model/schema.h"
#include "write/writer.h"

#include <string.h>

/* INT32 and FLOAT64 dims; attributes of fixed, var-sized, nullable,
 * fixed CHAR, BOOL, and enumerated kinds. */
static const char schema_json[] =
    "{\"array_type\": \"sparse\", \"capacity\": 100, \"dims\": ["
    "{\"name\": \"x\", \"datatype\": \"INT32\", \"domain\": [0, 99], "
    "\"tile_extent\": 10},"
    "{\"name\": \"t\", \"datatype\": \"FLOAT64\", \"domain\": [0, 1]}],"
    "\"attrs\": ["
    "{\"name\": \"a\", \"datatype\": \"INT64\"},"
    "{\"name\": \"u\", \"datatype\": \"UINT8\", \"nullable\": true},"
    "{\"name\": \"s\", \"datatype\": \"STRING_UTF8\", \"cell_val_num\": "
    "\"var\"},"
    "{\"name\": \"c\", \"datatype\": \"CHAR\", \"cell_val_num\": 4},"
    "{\"name\": \"b\", \"datatype\": \"BOOL\"},"
    "{\"name\": \"f\", \"datatype\": \"FLOAT32\", \"nullable\": true},"
    "{\"name\": \"e\", \"datatype\": \"UINT8\", \"enumeration\": \"colors\"}],"
    "\"enumerations\": [{\"name\": \"colors\", \"datatype\": \"STRING_ASCII\","
    " \"cell_val_num\": \"var\", \"data_hex\": \"726564626c7565\","
    " \"offsets_hex\": \"00000000000000000300000000000000\"}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    if (!size || tdb_schema_from_json(schema_json, sizeof schema_json - 1, &s,
                                      &err))
        return 0;
    const char *text = (const char *)data + 1;
    if (data[0] & 1) {
        struct tdb_buf out = {0};
        tdb_delete_condition(s, text, size - 1, &out, &err);
        tdb_buf_free(&out);
    } else {
        tdb_schema_evolve_json(s, text, size - 1, &err);
    }
    tdb_schema_free(s);
    return 0;
}
