/* names.c: keys and the names the tree shows for them, both directions. */
#include "mount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *tdbm_name_encode(const char *key)
{
    return tdb_mount_name(key, ""); /* the engine names its tree with it */
}

char *tdbm_name_decode(const char *name)
{
    char *out = malloc(strlen(name) + 1), *o = out;

    if (!out)
        return NULL;
    for (const char *p = name; *p; p++) {
        if (*p != '%') {
            *o++ = *p;
        } else if (p[1] == '2' && (p[2] == 'F' || p[2] == 'f')) {
            *o++ = '/';
            p += 2;
        } else if (p[1] == '2' && p[2] == '5') {
            *o++ = '%';
            p += 2;
        } else {
            free(out);
            errno = EINVAL;
            return NULL;
        }
    }
    *o = '\0';
    return out;
}
