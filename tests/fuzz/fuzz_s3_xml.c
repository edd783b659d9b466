/* fuzz_s3_xml.c: the XML of S3's answers (format/core/s3/xml.c) from a
 * hostile endpoint: ListObjectsV2 listings and Error bodies.
 * Input: a flags byte (bit 0: an error answer, read by tdb_os_status; its
 * HTTP status 400 + the next byte), then the listed prefix up to a NUL
 * (at most 64 bytes), then the body.  Aborts when a listing's entries
 * break their contract (a name that is empty or has an empty, "." or ".."
 * part; a folder with a size) or
 * an error's code or message is not the one tdb_os_status promises. */
#include "fuzz.h"
#include "objstore/objstore.h"

#include <stdlib.h>
#include <string.h>

static void fuzz_listing(const char *prefix, const struct tdb_buf *body)
{
    struct tdb_store_answer x;
    tdb_s3_xml_parse(&x, body, prefix);
    fuzz_check_dents(&x);
    tdb_store_answer_free(&x);
}

static void fuzz_error(unsigned status, const char *key,
                       const struct tdb_buf *body)
{
    /* tdb_os_status reads only the protocol, the scheme and the bucket */
    static struct objstore s = {.proto = &tdb_os_proto_s3, .scheme = "s3"};
    s.bucket = "bucket";
    struct os_call c = {.method = "GET", .key = key[0] ? key : NULL,
                        .status = 400 + (long)status, .cc = CURLE_OK,
                        .mem = *body};
    struct tdb_error err = {0};
    int r = tdb_os_status(&s, &c, &err);
    if (r != (c.status == 404 ? TDB_E_NOENT : TDB_E_IO) ||
        strnlen(err.msg, sizeof err.msg) == sizeof err.msg)
        abort();
    if (tdb_os_status(&s, &c, NULL) != r)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0], status = data[1];
    size_t pos = 2;
    char prefix[65];
    size_t pl = 0;
    while (pos < size && data[pos] && pl < 64)
        prefix[pl++] = (char)data[pos++];
    prefix[pl] = 0;
    if (pos < size && !data[pos])
        pos++;
    /* the body in a buffer of its exact size */
    struct tdb_buf body = {0};
    if (tdb_buf_append(&body, data + pos, size - pos))
        return 0;
    if (flags & 1)
        fuzz_error(status, prefix, &body);
    else
        fuzz_listing(prefix, &body);
    tdb_buf_free(&body);
    return 0;
}
