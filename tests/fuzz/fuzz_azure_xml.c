/* fuzz_azure_xml.c: the XML of Azure's answers (format/azure/xml.c) from a
 * hostile endpoint: List Blobs' EnumerationResults and Error bodies.
 * Input: the listed prefix up to a NUL (at most 64 bytes), then the body.
 * Aborts when an answer breaks its contract: an entry's name empty or
 * with an empty, "." or ".." part, a folder with a size, an etag not
 * quoted or holding a control character, a next page without a marker
 * (or a marker without one), an error's code or message on an answer
 * that is no Error, a code tdb_az_xml_parse does not promise. */
#include "fuzz.h"
#include "azure/azure.h"

#include <stdlib.h>
#include <string.h>

static void fuzz_check(const struct tdb_store_answer *a)
{
    fuzz_check_dents(a);
    for (size_t i = 0; i < a->n; i++) {
        const struct tdb_store_dent *e = &a->e[i];
        size_t el = e->etag ? strlen(e->etag) : 0;
        if (e->etag && (el < 3 || e->etag[0] != '"' || e->etag[el - 1] != '"'))
            abort();
        for (size_t j = 0; j < el; j++)
            if ((unsigned char)e->etag[j] < 0x20 || e->etag[j] == 0x7f)
                abort();
    }
    if (a->truncated != (a->token != NULL && a->token[0] != 0))
        abort();
    if ((a->code || a->message) && !a->is_error)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char prefix[65];
    size_t pos = 0, pl = 0;
    while (pos < size && data[pos] && pl < 64)
        prefix[pl++] = (char)data[pos++];
    prefix[pl] = 0;
    if (pos < size && !data[pos])
        pos++;
    /* the body in a buffer of its exact size */
    struct tdb_buf body = {0};
    if (tdb_buf_append(&body, data + pos, size - pos))
        return 0;
    struct tdb_store_answer a;
    int r = tdb_az_xml_parse(&a, &body, prefix);
    if (r != 0 && r != TDB_E_CORRUPT && r != TDB_E_NOMEM)
        abort();
    fuzz_check(&a);   /* a failed parse's entries keep the contract too */
    tdb_store_answer_free(&a);
    tdb_buf_free(&body);
    return 0;
}
