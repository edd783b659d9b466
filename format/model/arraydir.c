/* arraydir.c: the array folder and time travel (array_file_hierarchy.md). */
#include "model/arraydir_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Text lists (.con, .ign, .vac) larger than this are refused. */
#define ARRAYDIR_MAX_LIST (UINT64_C(1) << 28)

#define ARRAYDIR_LEGACY_SCHEMA "__array_schema.tdb"
#define ARRAYDIR_FRAG_META "__fragment_metadata.tdb"

/* ------------------------------------------------------------ string sets */


static void arraydir_strs_sort(struct arraydir_strs *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, arraydir_strcmp);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (k && !strcmp(s->v[k - 1], s->v[i]))
            free(s->v[i]);
        else
            s->v[k++] = s->v[i];
    }
    s->n = k;
}

/* ------------------------------------------------------------------ lines */

/* Steps over the next line of a text list as std::getline does (a last
 * line without '\n' counts; nothing after a final '\n'). */
static bool arraydir_next_line(const uint8_t *buf, size_t len, size_t *pos,
                               const char **line, size_t *llen)
{
    if (*pos >= len)
        return false;
    const uint8_t *p = buf + *pos;
    const uint8_t *nl = memchr(p, '\n', len - *pos);
    *line = (const char *)p;
    *llen = nl ? (size_t)(nl - p) : len - *pos;
    *pos = nl ? (size_t)(nl - buf) + 1 : len;
    return true;
}

static bool arraydir_line_ok(const char *s, size_t n)
{
    return n > 0 && n <= TDB_MAX_NAME && !memchr(s, 0, n);
}

/* Reads a whole text list (.con, .ign, .vac), capped. */
static int arraydir_read_list(const struct tdb_io *io, const char *path,
                              uint8_t **data, size_t *len,
                              struct tdb_error *err)
{
    uint64_t size;
    *data = NULL;
    int r = tdb_io_size(io, path, &size, err);
    if (r)
        return r;
    if (size > ARRAYDIR_MAX_LIST)
        return tdb_err(err, TDB_E_NOMEM, "%s: list of %llu bytes is too large",
                       path, (unsigned long long)size);
    *data = malloc(size ? (size_t)size : 1);
    if (!*data)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    r = tdb_io_read(io, path, 0, *data, (size_t)size, err);
    if (r) {
        free(*data);
        *data = NULL;
        return r;
    }
    *len = (size_t)size;
    return 0;
}

/* ---------------------------------------------------------------- entries */

static void arraydir_entry_clear(struct tdb_dir_entry *e)
{
    free(e->name);
    free(e->path);
    memset(e, 0, sizeof *e);
}

static void arraydir_entries_free(struct tdb_dir_entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        arraydir_entry_clear(&v[i]);
    free(v);
}

/* What an entry is made of: its name (name_len bytes), its file (in
 * folder dir; dir NULL: file is the path), its timestamps (NULL: none)
 * and the offset of its tile in the file. */
struct arraydir_new {
    const char *name;
    size_t name_len;
    const char *dir, *file;
    const struct tdb_tsname *ts;
    uint64_t offset;
};

static int arraydir_entry_init(struct tdb_dir_entry *e,
                               const struct arraydir_new *nw)
{
    memset(e, 0, sizeof *e);
    e->name = malloc(nw->name_len + 1);
    e->path = nw->dir ? tdb_path_join(nw->dir, nw->file) : strdup(nw->file);
    if (!e->name || !e->path) {
        arraydir_entry_clear(e);
        return TDB_E_NOMEM;
    }
    memcpy(e->name, nw->name, nw->name_len);
    e->name[nw->name_len] = 0;
    if (nw->ts)
        e->ts = *nw->ts;
    e->offset = nw->offset;
    return 0;
}

static int arraydir_entry_copy(struct tdb_dir_entry *dst,
                               const struct tdb_dir_entry *src)
{
    struct arraydir_new nw = {src->name, strlen(src->name), NULL, src->path,
                              &src->ts, src->offset};
    return arraydir_entry_init(dst, &nw);
}

/* ------------------------------------------------------------ the loading */


/* Adds an entry to one of d's lists; `n` and `v` are the list's fields. */
static int arraydir_push(struct arraydir_load *L, struct tdb_dir_entry **v,
                         size_t *n, size_t *cap, const struct arraydir_new *nw)
{
    struct tdb_dir_entry *nv = arraydir_grow(*v, *n, cap, sizeof **v);
    if (!nv)
        return tdb_err(L->err, TDB_E_NOMEM, "array folder: out of memory");
    *v = nv;
    if (arraydir_entry_init(&nv[*n], nw))
        return tdb_err(L->err, TDB_E_NOMEM, "array folder: out of memory");
    (*n)++;
    return 0;
}

static bool arraydir_in_range(const struct tdb_tsname *ts, uint64_t start,
                              uint64_t end, bool any_overlap)
{
    if (any_overlap)
        return ts->t1 <= end && start <= ts->t2;
    return ts->t1 >= start && ts->t2 <= end;
}

/* Schemas: the legacy __array_schema.tdb first, then __schema/ in listing
 * order; the one in force is the last whose t2 <= ts_end, else the
 * first. */
static int arraydir_load_schemas(struct arraydir_load *L)
{
    struct tdb_arraydir *d = L->d;
    int r;
    if (arraydir_names_has(&L->root, ARRAYDIR_LEGACY_SCHEMA) &&
        !tdb_io_isdir(L->io, ARRAYDIR_LEGACY_SCHEMA)) {
        struct arraydir_new nw = {ARRAYDIR_LEGACY_SCHEMA,
                                  strlen(ARRAYDIR_LEGACY_SCHEMA), NULL,
                                  ARRAYDIR_LEGACY_SCHEMA, NULL, 0};
        r = arraydir_push(L, &d->schemas, &d->nschemas, &L->cap_schemas,
                          &nw);
        if (r)
            return r;
    }
    bool have_latest = false;
    for (size_t i = 0; i < L->schema.n; i++) {
        const char *nm = L->schema.v[i];
        struct tdb_tsname ts;
        if (L->schema.is_dir[i] || !strcmp(nm, "__enumerations") ||
            tdb_tsname_parse(nm, &ts))
            continue;
        struct arraydir_new nw = {nm, strlen(nm), "__schema", nm, &ts, 0};
        r = arraydir_push(L, &d->schemas, &d->nschemas, &L->cap_schemas,
                          &nw);
        if (r)
            return r;
        if (ts.t2 <= d->ts_end) {
            d->schema_latest = d->nschemas - 1;
            have_latest = true;
        }
    }
    if (!have_latest)
        d->schema_latest = 0;
    if (!d->nschemas)
        return tdb_err(L->err, TDB_E_INVAL,
                       "array folder: not a TileDB array (no __schema/ "
                       "entry and no __array_schema.tdb)");
    return 0;
}

int tdb_arraydir_load_ignores(struct arraydir_load *L)
{
    for (size_t i = 0; i < L->commits.n; i++) {
        const char *nm = L->commits.v[i];
        if (L->commits.is_dir[i] ||
            !arraydir_ends_with(nm, strlen(nm), ".ign"))
            continue;
        char *path = tdb_path_join("__commits", nm);
        if (!path)
            return tdb_err(L->err, TDB_E_NOMEM, "array folder: out of memory");
        uint8_t *buf;
        size_t len, pos = 0;
        int r = arraydir_read_list(L->io, path, &buf, &len, L->err);
        free(path);
        if (r)
            return r;
        const char *line;
        size_t ll;
        while (!r && arraydir_next_line(buf, len, &pos, &line, &ll))
            if (arraydir_line_ok(line, ll))
                r = arraydir_strs_add(&L->ignore, line, ll);
        free(buf);
        if (r)
            return tdb_err(L->err, r, "array folder: out of memory");
    }
    arraydir_strs_sort(&L->ignore);
    return 0;
}


int tdb_arraydir_con_walk(const struct tdb_io *io, const char *path,
                          int (*fn)(void *, const struct arraydir_con_line *),
                          void *arg, struct tdb_error *err)
{
    uint8_t *buf;
    size_t len, pos = 0;
    int r = arraydir_read_list(io, path, &buf, &len, err);
    if (r)
        return r;
    const char *line;
    size_t ll;
    char marker[TDB_MAX_NAME + 1];
    while (!r && arraydir_next_line(buf, len, &pos, &line, &ll)) {
        if (!ll)
            continue;
        if (!arraydir_line_ok(line, ll)) {
            r = tdb_err(err, TDB_E_CORRUPT,
                        "%s: malformed entry at offset %zu", path,
                        (size_t)(line - (const char *)buf));
            break;
        }
        memcpy(marker, line, ll);
        marker[ll] = 0;
        struct arraydir_con_line l = {path, marker, ll, false, 0, 0};
        if (arraydir_ends_with(line, ll, ".del") ||
            arraydir_ends_with(line, ll, ".upd")) {
            struct tdb_cursor c;
            tdb_cur_init(&c, buf + pos, len - pos);
            if (tdb_cur_u64(&c, &l.tile_size) ||
                l.tile_size > len - pos - 8) {
                r = tdb_err(err, TDB_E_CORRUPT,
                            "%s: condition tile of %s is truncated", path,
                            marker);
                break;
            }
            l.has_tile = true;
            l.tile_off = pos + 8;
            pos = (size_t)(l.tile_off + l.tile_size);
        }
        r = fn(arg, &l);
    }
    free(buf);
    return r;
}

/* An entry of a .con for the open: a live commit (unless an .ign names
 * it), and a delete in range. */
static int arraydir_con_entry(void *arg, const struct arraydir_con_line *l)
{
    struct arraydir_load *L = arg;
    struct tdb_arraydir *d = L->d;
    if (!arraydir_strs_has(&L->ignore, l->marker) &&
        arraydir_strs_add(&L->con, l->marker, l->len))
        return tdb_err(L->err, TDB_E_NOMEM, "%s: out of memory", l->con);
    struct tdb_tsname ts;
    /* As TileDB does, a delete is applied even when an .ign names it; only
     * its time range decides. */
    if (!l->has_tile || !arraydir_ends_with(l->marker, l->len, ".del") ||
        tdb_tsname_parse(l->marker, &ts) ||
        !arraydir_in_range(&ts, d->ts_start, d->ts_end, false))
        return 0;
    const char *base = strrchr(l->marker, '/');
    base = base ? base + 1 : l->marker;
    struct arraydir_new nw = {base, strlen(base) - 4, NULL, l->con, &ts,
                              l->tile_off};
    return arraydir_push(L, &d->deletes, &d->ndeletes, &L->cap_deletes, &nw);
}

static int arraydir_load_con(struct arraydir_load *L, const char *path)
{
    return tdb_arraydir_con_walk(L->io, path, arraydir_con_entry, L, L->err);
}

static int arraydir_load_cons(struct arraydir_load *L)
{
    for (size_t i = 0; i < L->commits.n; i++) {
        const char *nm = L->commits.v[i];
        if (L->commits.is_dir[i] ||
            !arraydir_ends_with(nm, strlen(nm), ".con"))
            continue;
        char *path = tdb_path_join("__commits", nm);
        if (!path)
            return tdb_err(L->err, TDB_E_NOMEM, "array folder: out of memory");
        int r = arraydir_load_con(L, path);
        free(path);
        if (r)
            return r;
    }
    arraydir_strs_sort(&L->con);
    return 0;
}

/* Makes one line of a vacuum file relative to the array root as TileDB
 * does: from "__fragments" on, else from "__meta" on, else the last path
 * component.  Absolute URIs (before format 19) and relative ones alike. */
static const char *arraydir_vac_item(const char *line)
{
    const char *p = strstr(line, "__fragments");
    if (p)
        return p;
    if ((p = strstr(line, "__meta")))
        return p;
    p = strrchr(line, '/');
    return p ? p + 1 : line;
}

static int arraydir_load_vac_as(struct arraydir_load *L, const char *dir,
                                const char *file, const char *name,
                                size_t name_len, const struct tdb_tsname *ts,
                                bool pending);

static int arraydir_load_vac(struct arraydir_load *L, const char *dir,
                             const char *file, const struct tdb_tsname *ts)
{
    return arraydir_load_vac_as(L, dir, file, file, strlen(file) - 4, ts,
                                false);
}

static int arraydir_load_vac_as(struct arraydir_load *L, const char *dir,
                                const char *file, const char *name,
                                size_t name_len, const struct tdb_tsname *ts,
                                bool pending)
{
    struct tdb_arraydir *d = L->d;
    struct tdb_arraydir_vac *nv =
        arraydir_grow(d->vacs, d->nvacs, &L->cap_vacs, sizeof *d->vacs);
    if (!nv)
        return tdb_err(L->err, TDB_E_NOMEM, "array folder: out of memory");
    d->vacs = nv;
    struct tdb_arraydir_vac *v = &nv[d->nvacs];
    memset(v, 0, sizeof *v);
    v->pending = pending;
    struct arraydir_new nw = {name, name_len, dir, file, ts, 0};
    if (arraydir_entry_init(&v->e, &nw))
        return tdb_err(L->err, TDB_E_NOMEM, "array folder: out of memory");
    d->nvacs++;

    uint8_t *buf;
    size_t len, pos = 0;
    int r = arraydir_read_list(L->io, v->e.path, &buf, &len, L->err);
    if (r)
        return r;
    struct arraydir_strs items = {0};
    const char *line;
    size_t ll;
    char tmp[TDB_MAX_NAME + 1];
    while (!r && arraydir_next_line(buf, len, &pos, &line, &ll)) {
        if (!arraydir_line_ok(line, ll))
            continue;
        memcpy(tmp, line, ll);
        while (ll > 1 && tmp[ll - 1] == '/')
            ll--;
        tmp[ll] = 0;
        const char *it = arraydir_vac_item(tmp);
        r = arraydir_strs_add(&items, it, strlen(it));
    }
    free(buf);
    v->items = items.v;
    v->nitems = items.n;
    if (r)
        return tdb_err(L->err, r, "%s: out of memory", v->e.path);
    return 0;
}

static bool arraydir_is_known_dir(const char *nm)
{
    static const char *const known[] = {
        "__schema", "__commits", "__meta", "__fragments", "__fragment_meta",
        "__labels"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(nm, known[i]))
            return true;
    return false;
}

/* The root folder (formats 1 to 11): fragment folders committed by a
 * sibling NAME.ok (or an .ok entry of a .con; before format 5 by their
 * __fragment_metadata.tdb), vacuum files and consolidated fragment
 * metadata files. */
/* A file of the root: a vacuum file, done or pending, or consolidated
 * fragment metadata (.meta).  @return 0, a TDB_E_* code, or 1 when it is
 * none of these. */
static int arraydir_root_file(struct arraydir_load *L, const char *nm,
                              size_t nl)
{
    struct tdb_arraydir *d = L->d;
    char tmp[TDB_MAX_NAME + 8];
    struct tdb_tsname ts;
    size_t pl = sizeof TDB_VAC_PENDING - 1;
    if (nm[0] == '.' && nl > pl + 1 &&
        arraydir_ends_with(nm, nl, TDB_VAC_PENDING)) {
        memcpy(tmp, nm + 1, nl - 1 - pl);
        tmp[nl - 1 - pl] = 0;
        if (tdb_tsname_parse(tmp, &ts))
            return 0;
        return arraydir_load_vac_as(L, NULL, nm, nm + 1, nl - 1 - pl, &ts,
                                    true);
    }
    if (arraydir_ends_with(nm, nl, ".vac"))
        return tdb_tsname_parse(nm, &ts) ? 0
                                         : arraydir_load_vac(L, NULL, nm, &ts);
    if (!arraydir_ends_with(nm, nl, ".meta"))
        return 1;
    if (tdb_tsname_parse(nm, &ts))
        memset(&ts, 0, sizeof ts);
    struct arraydir_new nw = {nm, nl - 5, NULL, nm, &ts, 0};
    return arraydir_push(L, &d->fragmeta, &d->nfragmeta, &L->cap_fragmeta,
                         &nw);
}

/* A fragment of the root (formats before 12), a candidate when it was
 * committed: its .ok beside it or in a .con, or (before format 5) its
 * fragment metadata inside it. */
static int arraydir_root_fragment(struct arraydir_load *L, const char *nm,
                                  size_t nl)
{
    struct tdb_arraydir *d = L->d;
    char tmp[TDB_MAX_NAME + 8];
    struct tdb_tsname ts;
    if (strchr(nm, '.') || arraydir_is_known_dir(nm) ||
        tdb_tsname_parse(nm, &ts))
        return 0;
    memcpy(tmp, nm, nl);
    memcpy(tmp + nl, ".ok", 4);
    bool committed = arraydir_names_has(&L->root, tmp) ||
                     arraydir_strs_has(&L->con, tmp);
    if (!committed && ts.version < 5) {
        char *mp = tdb_path_join(nm, ARRAYDIR_FRAG_META);
        if (!mp)
            return tdb_err(L->err, TDB_E_NOMEM,
                           "array folder: out of memory");
        committed = tdb_io_exists(L->io, mp) && !tdb_io_isdir(L->io, mp);
        free(mp);
    }
    if (!committed)
        return 0;
    struct arraydir_new nw = {nm, nl, NULL, nm, &ts, 0};
    return arraydir_push(L, &d->cands, &d->ncands, &L->cap_cands, &nw);
}

static int arraydir_load_root(struct arraydir_load *L)
{
    for (size_t i = 0; i < L->root.n; i++) {
        const char *nm = L->root.v[i];
        size_t nl = strlen(nm);
        if (nl > TDB_MAX_NAME)
            continue;
        int r = L->root.is_dir[i] ? 1 : arraydir_root_file(L, nm, nl);
        if (r == 1)
            r = arraydir_root_fragment(L, nm, nl);
        if (r)
            return r;
    }
    return 0;
}

/* Format 12 on: fragments committed by a .wrt named in a .con, then by a
 * .wrt in __commits not already in a .con; vacuum files; delete commits. */
static int arraydir_load_commits(struct arraydir_load *L)
{
    struct tdb_arraydir *d = L->d;
    struct tdb_tsname ts;
    int r;
    for (size_t i = 0; i < L->con.n; i++) {
        const char *m = L->con.v[i];
        size_t ml = strlen(m);
        if (!arraydir_ends_with(m, ml, ".wrt"))
            continue;
        const char *base = strrchr(m, '/');
        base = base ? base + 1 : m;
        size_t bl = strlen(base) - 4;
        char tmp[TDB_MAX_NAME + 1];
        memcpy(tmp, base, bl);
        tmp[bl] = 0;
        if (tdb_tsname_parse(tmp, &ts))
            continue;
        struct arraydir_new nw = {tmp, bl, "__fragments", tmp, &ts, 0};
        r = arraydir_push(L, &d->cands, &d->ncands, &L->cap_cands, &nw);
        if (r)
            return r;
    }
    for (size_t i = 0; i < L->commits.n; i++) {
        const char *nm = L->commits.v[i];
        size_t nl = strlen(nm);
        if (L->commits.is_dir[i] || nl > TDB_MAX_NAME ||
            tdb_tsname_parse(nm, &ts))
            continue;
        char rel[TDB_MAX_NAME + 16];
        snprintf(rel, sizeof rel, "__commits/%s", nm);
        if (arraydir_ends_with(nm, nl, ".wrt")) {
            if (arraydir_strs_has(&L->con, rel))
                continue;
            char tmp[TDB_MAX_NAME + 1];
            memcpy(tmp, nm, nl - 4);
            tmp[nl - 4] = 0;
            struct arraydir_new nw = {tmp, nl - 4, "__fragments", tmp, &ts,
                                      0};
            r = arraydir_push(L, &d->cands, &d->ncands, &L->cap_cands, &nw);
        } else if (arraydir_ends_with(nm, nl, ".vac")) {
            r = arraydir_load_vac(L, "__commits", nm, &ts);
        } else if (arraydir_ends_with(nm, nl, ".del")) {
            if (!arraydir_in_range(&ts, d->ts_start, d->ts_end, false) ||
                arraydir_strs_has(&L->con, rel))
                continue;
            struct arraydir_new nw = {nm, nl - 4, "__commits", nm, &ts, 0};
            r = arraydir_push(L, &d->deletes, &d->ndeletes, &L->cap_deletes,
                              &nw);
        } else {
            continue;
        }
        if (r)
            return r;
    }
    return 0;
}

static int arraydir_load_fragmeta(struct arraydir_load *L)
{
    struct tdb_arraydir *d = L->d;
    for (size_t i = 0; i < L->fmeta.n; i++) {
        const char *nm = L->fmeta.v[i];
        size_t nl = strlen(nm);
        struct tdb_tsname ts;
        if (L->fmeta.is_dir[i])
            continue;
        if (tdb_tsname_parse(nm, &ts))
            memset(&ts, 0, sizeof ts);
        size_t stem = arraydir_ends_with(nm, nl, ".meta") ? nl - 5 : nl;
        struct arraydir_new nw = {nm, stem, "__fragment_meta", nm, &ts, 0};
        int r = arraydir_push(L, &d->fragmeta, &d->nfragmeta,
                              &L->cap_fragmeta, &nw);
        if (r)
            return r;
    }
    return 0;
}

/* Orders entries by t1, ties keeping their order (a stable sort). */
static int arraydir_sort_t1(struct tdb_dir_entry *v, size_t n)
{
    if (n < 2)
        return 0;
    struct tdb_keyed *o = malloc(n * sizeof *o);
    struct tdb_dir_entry *tmp = malloc(n * sizeof *tmp);
    if (!o || !tmp) {
        free(o);
        free(tmp);
        return TDB_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        o[i] = (struct tdb_keyed){v[i].ts.t1, i};
    qsort(o, n, sizeof *o, tdb_keyed_cmp);   /* by t1, ties in place */
    for (size_t i = 0; i < n; i++)
        tmp[i] = v[o[i].at];
    memcpy(v, tmp, n * sizeof *v);
    free(o);
    free(tmp);
    return 0;
}

int tdb_arraydir_load(const struct tdb_io *io, uint64_t ts_start,
                      uint64_t ts_end, struct tdb_arraydir **out,
                      struct tdb_error *err)
{
    *out = NULL;
    struct arraydir_load L = {.io = io, .err = err};
    L.d = calloc(1, sizeof *L.d);
    if (!L.d)
        return tdb_err(err, TDB_E_NOMEM, "array folder: out of memory");
    L.d->ts_start = ts_start;
    L.d->ts_end = ts_end;
    int r = tdb_io_names(io, "", &L.root, err);
    if (!r)
        r = tdb_io_names(io, "__schema", &L.schema, err);
    if (!r)
        r = tdb_io_names(io, "__commits", &L.commits, err);
    if (!r)
        r = tdb_io_names(io, "__fragment_meta", &L.fmeta, err);
    /* what is read next, and by the array's open, is asked for at once */
    if (!r) {
        static const char *const lists[] = {".con", ".ign", ".vac", ".del",
                                            NULL};
        static const char *const root[] = {".vac", ".meta", ".con", ".ign",
                                           "__array_schema.tdb", NULL};
        tdb_io_want_names(io, "", &L.root, root);
        tdb_io_want_names(io, "__schema", &L.schema, NULL);
        tdb_io_want_names(io, "__commits", &L.commits, lists);
        tdb_io_want_names(io, "__fragment_meta", &L.fmeta, NULL);
    }
    if (!r)
        r = arraydir_load_schemas(&L);
    if (!r)
        r = tdb_arraydir_load_ignores(&L);
    if (!r)
        r = arraydir_load_cons(&L);
    if (!r)
        r = arraydir_load_root(&L);
    if (!r)
        r = arraydir_load_commits(&L);
    if (!r)
        r = arraydir_load_fragmeta(&L);
    if (!r && arraydir_sort_t1(L.d->deletes, L.d->ndeletes))
        r = tdb_err(err, TDB_E_NOMEM, "array folder: out of memory");
    if (!r)
        r = tdb_arraydir_select(L.d, false, err);
    tdb_names_free(&L.root);
    tdb_names_free(&L.schema);
    tdb_names_free(&L.commits);
    tdb_names_free(&L.fmeta);
    arraydir_strs_free(&L.ignore);
    arraydir_strs_free(&L.con);
    if (r) {
        tdb_arraydir_free(L.d);
        return r;
    }
    *out = L.d;
    return 0;
}

/* ---------------------------------------------------------- the selection */

/* TileDB's rule: a fragment or vacuum file of format 15 or later counts
 * when it merely overlaps the range if the array is sparse; anything else
 * must lie wholly inside it. */
static bool arraydir_counts(const struct tdb_arraydir *d,
                            const struct tdb_tsname *ts, bool sparse)
{
    bool any = sparse && ts->era == 3 && ts->version >= 15;
    return arraydir_in_range(ts, d->ts_start, d->ts_end, any);
}

/* Candidate indices sorted by path, to look up the items of .vac files. */
struct arraydir_bypath {
    const char *path;
    size_t index;
};

static int arraydir_bypath_cmp(const void *a, const void *b)
{
    return strcmp(((const struct arraydir_bypath *)a)->path,
                  ((const struct arraydir_bypath *)b)->path);
}

const struct tdb_dir_entry *tdb_arraydir_cand(const struct tdb_arraydir *d,
                                              const char *name)
{
    for (size_t i = 0; i < d->ncands; i++)
        if (!strcmp(d->cands[i].name, name))
            return &d->cands[i];
    return NULL;
}

/* Marks 2 in keep[] the candidates kept so far (1) that a live vacuum
 * file in range lists (they were merged into the fragment that bears
 * its name).  @return 0 or TDB_E_NOMEM. */
static int arraydir_drop_vacuumed(const struct tdb_arraydir *d, bool sparse,
                                  uint8_t *keep)
{
    struct arraydir_bypath *by = malloc(d->ncands * sizeof *by);
    if (!by)
        return TDB_E_NOMEM;
    for (size_t i = 0; i < d->ncands; i++) {
        by[i].path = d->cands[i].path;
        by[i].index = i;
    }
    qsort(by, d->ncands, sizeof *by, arraydir_bypath_cmp);
    for (size_t v = 0; v < d->nvacs; v++) {
        const struct tdb_arraydir_vac *vac = &d->vacs[v];
        if (!arraydir_counts(d, &vac->e.ts, sparse))
            continue;
        if (vac->pending && !tdb_arraydir_cand(d, vac->e.name))
            continue;
        for (size_t k = 0; k < vac->nitems; k++) {
            struct arraydir_bypath key = {vac->items[k], 0};
            const struct arraydir_bypath *hit =
                bsearch(&key, by, d->ncands, sizeof *by, arraydir_bypath_cmp);
            /* paths are unique, but be exact if they were not */
            for (; hit && hit > by && !strcmp(hit[-1].path, key.path); hit--)
                ;
            for (; hit && hit < by + d->ncands && !strcmp(hit->path, key.path);
                 hit++)
                if (keep[hit->index] == 1)
                    keep[hit->index] = 2;
        }
    }
    free(by);
    return 0;
}

/* d->frags: copies of the candidates keep[] marks 1, sorted by t1.
 * @return 0 or TDB_E_NOMEM. */
static int arraydir_keep_frags(struct tdb_arraydir *d, const uint8_t *keep)
{
    size_t n = 0;
    for (size_t i = 0; i < d->ncands; i++)
        n += keep[i] == 1;
    if (!n)
        return 0;
    d->frags = calloc(n, sizeof *d->frags);
    if (!d->frags)
        return TDB_E_NOMEM;
    int r = 0;
    for (size_t i = 0; !r && i < d->ncands; i++) {
        if (keep[i] != 1)
            continue;
        r = arraydir_entry_copy(&d->frags[d->nfrags], &d->cands[i]);
        if (!r)
            d->nfrags++;
    }
    return r ? r : arraydir_sort_t1(d->frags, d->nfrags);
}

int tdb_arraydir_select(struct tdb_arraydir *d, bool sparse,
                        struct tdb_error *err)
{
    arraydir_entries_free(d->frags, d->nfrags);
    d->frags = NULL;
    d->nfrags = 0;
    if (!d->ncands)
        return 0;
    uint8_t *keep = malloc(d->ncands);
    int r = keep ? 0 : TDB_E_NOMEM;
    for (size_t i = 0; !r && i < d->ncands; i++)
        keep[i] = arraydir_counts(d, &d->cands[i].ts, sparse);
    if (!r)
        r = arraydir_drop_vacuumed(d, sparse, keep);
    if (!r)
        r = arraydir_keep_frags(d, keep);
    free(keep);
    if (r) {
        arraydir_entries_free(d->frags, d->nfrags);
        d->frags = NULL;
        d->nfrags = 0;
        return tdb_err(err, r, "array folder: out of memory");
    }
    return 0;
}

void tdb_arraydir_free(struct tdb_arraydir *d)
{
    if (!d)
        return;
    arraydir_entries_free(d->schemas, d->nschemas);
    arraydir_entries_free(d->frags, d->nfrags);
    arraydir_entries_free(d->deletes, d->ndeletes);
    arraydir_entries_free(d->fragmeta, d->nfragmeta);
    arraydir_entries_free(d->meta, d->nmeta);
    arraydir_entries_free(d->cands, d->ncands);
    for (size_t i = 0; i < d->nvacs; i++) {
        arraydir_entry_clear(&d->vacs[i].e);
        for (size_t k = 0; k < d->vacs[i].nitems; k++)
            free(d->vacs[i].items[k]);
        free(d->vacs[i].items);
    }
    free(d->vacs);
    free(d);
}

/* ----------------------------------------------------------- object kinds */

static bool arraydir_has(const struct tdb_io *io, const char *path,
                         const char *name, bool want_dir)
{
    char *p = tdb_path_join(path ? path : "", name);
    if (!p)
        return false;
    bool is_dir = false;
    bool found =
        io->ops->is_dir(io->ctx, p, &is_dir) == 0 && is_dir == want_dir;
    free(p);
    return found;
}

bool tdb_is_array(const struct tdb_io *io, const char *path)
{
    return arraydir_has(io, path, "__schema", true) ||
           arraydir_has(io, path, ARRAYDIR_LEGACY_SCHEMA, false);
}

bool tdb_is_group(const struct tdb_io *io, const char *path)
{
    return arraydir_has(io, path, "__group", true) ||
           arraydir_has(io, path, "__tiledb_group.tdb", false);
}
