/* names.c: metadata keys and the names __meta/ shows for them, both directions; lists of names. */
#include "mount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *tdbm_name_encode(const char *key)
{
    return tdb_meta_key_name(key); /* the engine names its tree with it */
}

static int tdbm_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* `name` with every "%XX" made the byte it stands for, "__attr" as "";
 * NULL (errno EINVAL) for a '%' not followed by two hex digits or that
 * makes a NUL. */
static char *tdbm_name_unescape(const char *name)
{
    char *out = malloc(strlen(name) + 1), *o = out;

    if (!out)
        return NULL;
    if (strcmp(name, "__attr") == 0)
        name = "";
    for (const char *p = name; *p; p++) {
        int hi = *p == '%' ? tdbm_hex(p[1]) : 0;
        int lo = *p == '%' && hi >= 0 ? tdbm_hex(p[2]) : 0;
        if (*p != '%') {
            *o++ = *p;
            continue;
        }
        if (hi < 0 || lo < 0 || hi + lo == 0) {
            free(out);
            errno = EINVAL;
            return NULL;
        }
        *o++ = (char)(hi << 4 | lo);
        p += 2;
    }
    *o = '\0';
    return out;
}

char *tdbm_name_decode(const char *name)
{
    char *key = tdbm_name_unescape(name);
    char *again = key ? tdbm_name_encode(key) : NULL;

    /* Only the name the key is shown under, its one spelling: "%41"
     * would store key "A", which then shows as "A", and "%2f" the key "/",
     * shown as "%2F" (a name no read or rm of "%2f" would find). */
    if (again && strcmp(again, name) != 0) {
        free(again);
        free(key);
        errno = EINVAL;
        return NULL;
    }
    if (key && !again) {
        free(key);
        errno = ENOMEM;
        return NULL;
    }
    free(again);
    return key;
}

void tdbm_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
