/* cons.c: what the consolidations share (cons.h). */
#include "consolidate/cons.h"

#include <stdio.h>
#include <stdlib.h>

int tdb_cons_array_load(const struct tdb_io *io, const uint8_t *key,
                        struct tdb_cons_array *a, struct tdb_error *err)
{
    memset(a, 0, sizeof *a);
    int r = tdb_arraydir_load(io, 0, UINT64_MAX, &a->dir, err);
    if (!r)
        r = tdb_array_schemas_load(io, a->dir, key, &a->schemas, &a->latest,
                                   err);
    if (r)
        return r;
    if (a->latest->encryption == TDB_AES_256_GCM) {
        if (!key)
            return tdb_err(err, TDB_E_NOKEY,
                           "the array is encrypted: a key is needed");
        a->key = key;
    }
    a->write_version =
        a->latest->version < 7 ? TDB_WRITE_VERSION : a->latest->version;
    return 0;
}

void tdb_cons_array_free(struct tdb_cons_array *a)
{
    for (size_t i = 0; i < a->schemas.n; i++)
        tdb_schema_free(a->schemas.v[i]);
    free(a->schemas.v);
    tdb_arraydir_free(a->dir);
    memset(a, 0, sizeof *a);
}

int tdb_cons_name(const struct tdb_cons_file *f, char *out, char *tmp,
                  size_t cap, struct tdb_error *err)
{
    uint8_t rnd[16];
    char name[96];
    int r = tdb_random(rnd, sizeof rnd, err);
    if (r)
        return r;
    tdb_tsname_make(name, sizeof name, f->t1, f->t2, rnd, f->version);
    const char *sep = f->dir[0] ? "/" : "";
    if (snprintf(out, cap, "%s%s%s%s", f->dir, sep, name, f->suffix) >=
            (int)cap ||
        snprintf(tmp, cap, ".%s%s" TDB_CONS_TMP, name, f->suffix) >= (int)cap)
        return tdb_err(err, TDB_E_INVAL, "%s: name too long", f->dir);
    return 0;
}

int tdb_cons_remove(const struct tdb_io *io, const char *path,
                    struct tdb_cons_result *r, struct tdb_error *err)
{
    int rc = io->ops->remove(io->ctx, path);
    if (rc == TDB_E_NOENT)
        return 0;
    if (rc)
        return tdb_err(err, rc, "%s: cannot remove it", path);
    r->removed++;
    return 0;
}

int tdb_cons_sweep(const struct tdb_io *io, struct tdb_cons_result *r,
                   struct tdb_error *err)
{
    struct tdb_names names = {0};
    size_t el = strlen(TDB_CONS_TMP);
    int rc = tdb_io_names(io, "", &names, err);
    for (size_t i = 0; !rc && i < names.n; i++) {
        const char *nm = names.v[i];
        size_t nl = strlen(nm);
        if (!names.is_dir[i] && !strncmp(nm, ".__", 3) && nl > el + 7 &&
            !strcmp(nm + nl - el, TDB_CONS_TMP) &&
            strncmp(nm + nl - el - 4, ".vac", 4))
            rc = tdb_cons_remove(io, nm, r, err);
    }
    tdb_names_free(&names);
    return rc;
}
