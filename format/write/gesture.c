/* gesture.c: a staged folder that asks for something else than a new
 * fragment (docs/LAYOUT.md "Writing"): one file __delete, a delete of the
 * cells that meet its condition (delete.c), or one file __evolve.json, a
 * schema evolution (evolve.c). */
#include "write/wr.h"

#include <stdio.h>
#include <stdlib.h>

/* The largest such file read. */
#define GESTURE_FILE_MAX (64u << 10)

/* The special files, and what each commits. */
enum { GESTURE_DELETE, GESTURE_EVOLVE, GESTURE_NONE };
static const char *const gesture_file[2] = {"__delete", "__evolve.json"};

/* Reads file `nm` of folder dir of staged (GESTURE_FILE_MAX at most) into
 * *text (caller frees). */
static int gesture_read(const struct tdb_io *staged, const char *dir,
                        const char *nm, char **text, size_t *len,
                        struct tdb_error *err)
{
    char *path = tdb_path_join(dir, nm);
    uint64_t size = 0;
    *text = NULL;
    *len = 0;
    if (!path)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    int rc = staged->ops->size(staged->ctx, path, &size);
    if (rc == TDB_E_INVAL || rc == TDB_E_MLINK)
        rc = tdb_err(err, TDB_E_INVAL, "%s: not a regular file of its own "
                     "(copy the text in)", nm);
    else if (rc)
        rc = tdb_err(err, rc, "%s: %s", nm, tdb_strerror(rc));
    else if (size > GESTURE_FILE_MAX)
        rc = tdb_err(err, TDB_E_INVAL, "%s: %llu bytes, more than %u", nm,
                     (unsigned long long)size, GESTURE_FILE_MAX);
    else if (!(*text = malloc(size ? (size_t)size : 1)))
        rc = tdb_err(err, TDB_E_NOMEM, "out of memory");
    else if ((rc = staged->ops->read_at(staged->ctx, path, 0, *text,
                                        (size_t)size)))
        rc = tdb_err(err, rc, "%s: %s", nm, tdb_strerror(rc));
    free(path);
    if (rc) {
        free(*text);
        *text = NULL;
    }
    *len = (size_t)size;
    return rc;
}

int tdb_staged_gesture(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, const uint8_t *key,
                       char **name, struct tdb_error *err)
{
    struct tdb_names n;
    int kind = GESTURE_NONE;
    const char *other = NULL;
    *name = NULL;
    int rc = tdb_io_names(staged, staged_dir, &n, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < n.n; i++) {
        int k = !strcmp(n.v[i], gesture_file[GESTURE_DELETE]) ? GESTURE_DELETE
                : !strcmp(n.v[i], gesture_file[GESTURE_EVOLVE])
                    ? GESTURE_EVOLVE
                    : GESTURE_NONE;
        if (k != GESTURE_NONE && kind != GESTURE_NONE && !other)
            other = n.v[i];
        else if (k != GESTURE_NONE)
            kind = k;
        else if (!tdb_wr_own_file(n.v[i]) && !other)
            other = n.v[i];
    }
    if (kind != GESTURE_NONE && other)
        rc = tdb_err(err, TDB_E_INVAL, "%s: it is alone in its folder "
                     "(%.64s is here too)", gesture_file[kind], other);
    tdb_names_free(&n);
    if (rc || kind == GESTURE_NONE)
        return rc ? rc : 1;
    char *text;
    size_t len = 0;
    if ((rc = gesture_read(staged, staged_dir, gesture_file[kind], &text,
                           &len, err)))
        return rc;
    const struct tdb_commit_options now = {key, 0};
    if (kind == GESTURE_DELETE)
        rc = tdb_delete_commit(io, text, len, &now, name, err);
    else if ((rc = tdb_schema_evolve(io, text, len, &now, name, err)))
        tdb_err_ctx(err, rc, "__evolve.json");
    free(text);
    return rc;
}
