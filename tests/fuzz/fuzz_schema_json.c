/* fuzz_schema_json.c: the "schema" object of __array.json
 * (format/write/schema_json.c, tdb_schema_from_json) and tdb_schema_check. */
#include "fuzz.h"
#include "model/schema.h"
#include "write/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tdb_schema *s = NULL;
    struct tdb_error err = {0};
    if (tdb_schema_from_json((const char *)data, size, &s, &err) == 0) {
        tdb_schema_check(s, &err);
        tdb_schema_free(s);
    }
    return 0;
}
