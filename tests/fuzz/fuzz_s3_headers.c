/* fuzz_s3_headers.c: the response headers of an S3 answer
 * (format/core/objstore/loop.c, tdb_os_header_line), as a hostile endpoint
 * sends them.  Input: header lines, each up to and with its '\n' (the
 * last may lack it); each is handed over in a buffer of its exact size,
 * not NUL-terminated, as libcurl hands it, so that ASan sees a read past
 * the line.  Aborts when what was read breaks its contract: a total that
 * is neither -1 nor a size, an ETag empty, longer than OS_ETAG_MAX or
 * holding a byte that is not printable ASCII, a bucket region that is not
 * NUL-terminated within its array or holds a byte but a-z 0-9 '-'. */
#include "fuzz.h"
#include "objstore/header.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct os_call c = {.total = -1, .length = -1};
    size_t pos = 0;
    while (pos < size) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t n = nl ? (size_t)(nl - (data + pos)) + 1 : size - pos;
        char *line = malloc(n);
        if (!line)
            break;
        memcpy(line, data + pos, n);
        tdb_os_header_line(&c, line, n);
        free(line);
        pos += n;
        if (c.total < -1)
            abort();
        size_t l = c.etag ? strlen(c.etag) : 0;
        if (c.etag && (!l || l > OS_ETAG_MAX))
            abort();
        for (size_t i = 0; i < l; i++)
            if (c.etag[i] < 0x20 || c.etag[i] > 0x7e)
                abort();
        const char *end = memchr(c.region, 0, sizeof c.region);
        if (!end)
            abort();
        for (const char *r = c.region; r < end; r++)
            if (!((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') ||
                  *r == '-'))
                abort();
    }
    free(c.etag);
    return 0;
}
