/* arraydir_commits.c: the commits of an array folder as consolidation
 * and vacuuming see them: the .con and .ign files of __commits, the
 * commits they name, and those no .con names (array_file_hierarchy.md). */
#include "model/arraydir_internal.h"

#include <stdio.h>
#include <stdlib.h>

struct arraydir_commits_load {
    struct arraydir_load *L;
    struct tdb_commits *c;
    size_t cap;
    struct arraydir_strs *lines;    /* of the .con being read */
};

static int arraydir_commit_add(struct tdb_commits *c, size_t *cap,
                               const char *marker, const char *cond,
                               uint64_t off, uint64_t size, bool in_con)
{
    struct tdb_commit *v = arraydir_grow(c->v, c->n, cap, sizeof *c->v);
    if (!v)
        return TDB_E_NOMEM;
    c->v = v;
    struct tdb_commit *e = &v[c->n];
    memset(e, 0, sizeof *e);
    e->marker = strdup(marker);
    e->cond_path = cond ? strdup(cond) : NULL;
    if (!e->marker || (cond && !e->cond_path)) {
        free(e->marker);
        free(e->cond_path);
        return TDB_E_NOMEM;
    }
    e->cond_off = off;
    e->cond_size = size;
    e->in_con = in_con;
    c->n++;
    return 0;
}

/* An entry of a .con: remembered as one of that file's lines, and as a
 * consolidated commit unless an .ign names it. */
static int arraydir_commits_entry(void *arg, const struct arraydir_con_line *l)
{
    struct arraydir_commits_load *C = arg;
    if (arraydir_strs_add(C->lines, l->marker, l->len) ||
        (!arraydir_strs_has(&C->L->ignore, l->marker) &&
         arraydir_commit_add(C->c, &C->cap, l->marker,
                             l->has_tile ? l->con : NULL, l->tile_off,
                             l->tile_size, true)))
        return tdb_err(C->L->err, TDB_E_NOMEM, "%s: out of memory", l->con);
    return 0;
}

static int arraydir_commit_cmp(const void *a, const void *b)
{
    return strcmp(((const struct tdb_commit *)a)->marker,
                  ((const struct tdb_commit *)b)->marker);
}

/* Sorts the consolidated commits by marker and keeps the first of each. */
static void arraydir_commits_unique(struct tdb_commits *c)
{
    if (c->n > 1)
        qsort(c->v, c->n, sizeof *c->v, arraydir_commit_cmp);
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (k && !strcmp(c->v[k - 1].marker, c->v[i].marker)) {
            free(c->v[i].marker);
            free(c->v[i].cond_path);
        } else {
            c->v[k++] = c->v[i];
        }
    }
    c->n = k;
}

/* The .con and .ign files, the lines of each .con (*lines, one set per
 * .con), and the consolidated commits. */
static int arraydir_commits_cons(struct arraydir_commits_load *C,
                                 struct arraydir_strs **lines)
{
    struct arraydir_load *L = C->L;
    struct tdb_commits *c = C->c;
    size_t cap = 0;
    for (size_t i = 0; i < L->commits.n; i++) {
        const char *nm = L->commits.v[i];
        bool con = arraydir_ends_with(nm, strlen(nm), ".con");
        if (L->commits.is_dir[i] ||
            (!con && !arraydir_ends_with(nm, strlen(nm), ".ign")))
            continue;
        if (con) {
            struct arraydir_strs *nl =
                arraydir_grow(*lines, c->ncons, &cap, sizeof **lines);
            if (!nl)
                return tdb_err(L->err, TDB_E_NOMEM,
                               "array folder: out of memory");
            *lines = nl;
            memset(&nl[c->ncons], 0, sizeof *nl);
        }
        char *path = tdb_path_join("__commits", nm);
        char ***v = con ? &c->cons : &c->ignores;
        size_t *n = con ? &c->ncons : &c->nignores;
        char **nv = path ? realloc(*v, (*n + 1) * sizeof **v) : NULL;
        if (!nv) {
            free(path);
            return tdb_err(L->err, TDB_E_NOMEM, "array folder: out of memory");
        }
        *v = nv;
        nv[(*n)++] = path;
        if (!con)
            continue;
        C->lines = &(*lines)[c->ncons - 1];
        int r = tdb_arraydir_con_walk(L->io, path, arraydir_commits_entry, C,
                                  L->err);
        if (r)
            return r;
    }
    return 0;
}

/* The .con (if any) whose lines are every consolidated commit. */
static long arraydir_commits_whole(const struct tdb_commits *c,
                                   size_t nfrom_con,
                                   const struct arraydir_strs *lines)
{
    for (size_t i = 0; i < c->ncons; i++) {
        size_t hits = 0;
        for (size_t k = 0; k < lines[i].n; k++) {
            struct tdb_commit key = {.marker = lines[i].v[k]};
            if (!nfrom_con || !bsearch(&key, c->v, nfrom_con, sizeof *c->v,
                         arraydir_commit_cmp))
                break;
            hits++;
        }
        if (hits == lines[i].n && hits == nfrom_con)
            return (long)i;
    }
    return -1;
}

/* The commits of the root (legacy .ok files) and of __commits (.wrt and
 * .del) that no .con names, in listing order. */
static int arraydir_commits_files(struct arraydir_commits_load *C,
                                  size_t nfrom_con)
{
    struct arraydir_load *L = C->L;
    struct tdb_commits *c = C->c;
    char rel[TDB_MAX_NAME + 16];
    for (int pass = 0; pass < 2; pass++) {
        const struct tdb_names *names = pass ? &L->commits : &L->root;
        for (size_t i = 0; i < names->n; i++) {
            const char *nm = names->v[i];
            size_t nl = strlen(nm);
            bool del = pass && arraydir_ends_with(nm, nl, ".del");
            if (names->is_dir[i] || nl > TDB_MAX_NAME ||
                !(pass ? del || arraydir_ends_with(nm, nl, ".wrt")
                       : arraydir_ends_with(nm, nl, ".ok")))
                continue;
            snprintf(rel, sizeof rel, "%s%s", pass ? "__commits/" : "", nm);
            struct tdb_commit key = {.marker = rel};
            if (nfrom_con && bsearch(&key, c->v, nfrom_con, sizeof *c->v,
                        arraydir_commit_cmp))
                continue;
            uint64_t size = 0;
            int r = del ? tdb_io_size(L->io, rel, &size, L->err) : 0;
            if (r)
                return r;
            if (arraydir_commit_add(c, &C->cap, rel, del ? rel : NULL, 0,
                                    size, false))
                return tdb_err(L->err, TDB_E_NOMEM,
                               "array folder: out of memory");
            c->v[c->n - 1].on_disk = true;
        }
    }
    return 0;
}

/* Whether the file of commit `marker` is in the folder's listing. */
static bool arraydir_commit_on_disk(const struct arraydir_load *L,
                                    const char *marker)
{
    if (!strncmp(marker, "__commits/", 10))
        return arraydir_names_has(&L->commits, marker + 10);
    return !strchr(marker, '/') && arraydir_names_has(&L->root, marker);
}

int tdb_arraydir_commits(const struct tdb_io *io, struct tdb_commits *out,
                         struct tdb_error *err)
{
    memset(out, 0, sizeof *out);
    out->whole = -1;
    struct arraydir_load L = {.io = io, .err = err};
    struct arraydir_commits_load C = {&L, out, 0, NULL};
    struct arraydir_strs *lines = NULL;
    int r = tdb_io_names(io, "", &L.root, err);
    if (!r)
        r = tdb_io_names(io, "__commits", &L.commits, err);
    if (!r)
        r = tdb_arraydir_load_ignores(&L);
    if (!r)
        r = arraydir_commits_cons(&C, &lines);
    size_t nfrom_con = 0;
    if (!r) {
        arraydir_commits_unique(out);
        nfrom_con = out->n;
        for (size_t i = 0; i < out->n; i++)
            out->v[i].on_disk = arraydir_commit_on_disk(&L, out->v[i].marker);
        out->whole = arraydir_commits_whole(out, nfrom_con, lines);
        r = arraydir_commits_files(&C, nfrom_con);
    }
    for (size_t i = 0; lines && i < out->ncons; i++)
        arraydir_strs_free(&lines[i]);
    free(lines);
    tdb_names_free(&L.root);
    tdb_names_free(&L.commits);
    arraydir_strs_free(&L.ignore);
    if (r)
        tdb_commits_free(out);
    return r;
}

void tdb_commits_free(struct tdb_commits *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].marker);
        free(c->v[i].cond_path);
    }
    free(c->v);
    for (size_t i = 0; i < c->ncons; i++)
        free(c->cons[i]);
    free(c->cons);
    for (size_t i = 0; i < c->nignores; i++)
        free(c->ignores[i]);
    free(c->ignores);
    memset(c, 0, sizeof *c);
    c->whole = -1;
}
