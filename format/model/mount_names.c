/* mount_names.c: the names the mount contract gives what an array or a
 * group names (docs/LAYOUT.md "An array", "A group"): fields and their
 * files, metadata keys, group members; the tree shows them, and writing
 * finds the staged files under them. */
#include "model/mount_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tdb_mount_name(const char *name, const char *suffix)
{
    size_t n = strlen(name);
    char *s = malloc(3 * n + strlen(suffix) + 8);
    if (!s)
        return NULL;
    char *o = s;
    if (!n) {
        strcpy(o, "__attr");
        o += 6;
    }
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '/' || name[i] == '%') {
            sprintf(o, "%%%02X", (unsigned char)name[i]);
            o += 3;
        } else {
            *o++ = name[i];
        }
    }
    strcpy(o, suffix);
    return s;
}

char *tdb_mount_name_reserved(const char *name, const char *const *reserved)
{
    char *s = tdb_mount_name(name, "");
    for (size_t i = 0; s && reserved[i]; i++) {
        if (strcmp(s, reserved[i]))
            continue;
        char *e = malloc(strlen(s) + 3);
        if (e)
            sprintf(e, "%%%02X%s", (unsigned char)s[0], s + 1);
        free(s);
        return e;
    }
    return s;
}

char *tdb_meta_key_name(const char *key)
{
    static const char *const reserved[] = {".", "..", "__attr", NULL};
    return key[0] ? tdb_mount_name_reserved(key, reserved) : strdup("__attr");
}

char *tdb_group_shown_name(const char *name)
{
    static const char *const reserved[] = {".", "..", "__group.json",
                                           "__meta", "__zarr", NULL};
    return name[0] ? tdb_mount_name_reserved(name, reserved) : strdup("");
}
