/* group.c: group members (format_spec/group.md, group_file_hierarchy.md). */
#include "model/meta.h"
#include "model/generic_tile.h"
#include "core/names.h"

#include <stdio.h>
#include <stdlib.h>

/* The key TileDB files a member under: its name, or its uri if unnamed. */
static const char *group_key(const struct tdb_group_member *m)
{
    return m->name_set ? m->name : m->uri;
}

static void group_member_clear(struct tdb_group_member *m)
{
    free(m->name);
    free(m->uri);
}

static size_t group_find(const struct tdb_group *g, const char *key)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(group_key(&g->v[i]), key) == 0)
            return i;
    return SIZE_MAX;
}

static void group_remove(struct tdb_group *g, const char *key)
{
    size_t i = group_find(g, key);
    if (i == SIZE_MAX)
        return;
    group_member_clear(&g->v[i]);
    memmove(&g->v[i], &g->v[i + 1], (g->n - i - 1) * sizeof *g->v);
    g->n--;
}

/* Takes ownership of m's strings. */
static int group_add(struct tdb_group *g, struct tdb_group_member *m)
{
    size_t i = group_find(g, group_key(m));
    if (i != SIZE_MAX) {
        group_member_clear(&g->v[i]);
        g->v[i] = *m;
        return 0;
    }
    struct tdb_group_member *v = realloc(g->v, (g->n + 1) * sizeof *v);
    if (!v)
        return TDB_E_NOMEM;
    g->v = v;
    v[g->n++] = *m;
    return 0;
}

/* Reads one member (group_member_v1/v2) into m; *deleted is its flag. */
static int group_read_member(struct tdb_cursor *c, struct tdb_group_member *m,
                             bool *deleted, const char *what,
                             struct tdb_error *err)
{
    size_t at = c->pos;
    uint32_t version;
    uint8_t type, relative, name_set, del = 0;

    memset(m, 0, sizeof *m);
    if (tdb_cur_u32(c, &version) || tdb_cur_u8(c, &type) ||
        tdb_cur_u8(c, &relative))
        goto truncated;
    if (version != 1 && version != 2)
        return tdb_err(err, TDB_E_UNSUPPORTED,
                       "%s: group member at byte %zu has unsupported "
                       "version %u", what, at, version);
    if (tdb_cur_str64(c, &m->uri))
        goto truncated;
    if (tdb_cur_u8(c, &name_set))
        goto truncated;
    if (name_set && tdb_cur_str64(c, &m->name))
        goto truncated;
    if (version >= 2 && tdb_cur_u8(c, &del))
        goto truncated;
    m->type = type;
    m->relative = relative != 0;
    m->name_set = name_set != 0;
    *deleted = del != 0;
    return 0;
truncated:
    group_member_clear(m);
    memset(m, 0, sizeof *m);
    return tdb_err(err, c->bad ? TDB_E_CORRUPT : TDB_E_NOMEM,
                   "%s: group member at byte %zu is %s", what, at,
                   c->bad ? "truncated or its uri/name is too long"
                          : "too large for memory");
}

/* Applies one details payload to g (members unsorted, derived names not
 * yet set); `require` is the version the payload must have (0: 1 or 2). */
static int group_apply_raw(struct tdb_group *g, const uint8_t *p,
                           size_t size, uint32_t require, const char *what,
                           struct tdb_error *err)
{
    struct tdb_cursor c;
    uint32_t v;
    uint64_t count;

    tdb_cur_init(&c, p, size);
    if (tdb_cur_u32(&c, &v))
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: group details are truncated (no version)", what);
    if ((v != 1 && v != 2) || (require && v != require))
        return tdb_err(err, TDB_E_UNSUPPORTED,
                       "%s: unsupported group details version %u", what, v);
    if (tdb_cur_u64(&c, &count))
        return tdb_err(err, TDB_E_CORRUPT,
                       "%s: group details are truncated (no member count)",
                       what);
    g->version = v;
    for (uint64_t i = 0; i < count; i++) {
        struct tdb_group_member m;
        bool deleted = false;
        int r = group_read_member(&c, &m, &deleted, what, err);
        if (r)
            return r;
        /* Version-1 details add every member they list. */
        if (v >= 2 && deleted) {
            group_remove(g, group_key(&m));
            group_member_clear(&m);
            continue;
        }
        if (group_add(g, &m)) {
            group_member_clear(&m);
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
        }
    }
    return 0;
}

static int group_name_cmp(const void *a, const void *b)
{
    const struct tdb_group_member *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->uri, y->uri);
}

/* Names unnamed members by their uri and sorts by name. */
static int group_finish(struct tdb_group *g, const char *what,
                        struct tdb_error *err)
{
    for (size_t i = 0; i < g->n; i++) {
        struct tdb_group_member *m = &g->v[i];
        if (m->name_set)
            continue;
        size_t len;
        const char *last = tdb_last_component(m->uri, &len);
        char *name = malloc(len + 1);
        if (!name)
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
        memcpy(name, last, len);
        name[len] = 0;
        free(m->name);
        m->name = name;
    }
    if (g->n)
        qsort(g->v, g->n, sizeof *g->v, group_name_cmp);
    return 0;
}

int tdb_group_apply(struct tdb_group *g, const uint8_t *p, size_t size,
                    const char *what, struct tdb_error *err)
{
    int r = group_apply_raw(g, p, size, 0, what, err);
    int f = group_finish(g, what, err);
    return r ? r : f;
}

void tdb_group_free(struct tdb_group *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++)
        group_member_clear(&g->v[i]);
    free(g->v);
    free(g);
}

/* Version-1 groups: the latest file's name has four '_' (or five, ending
 * in "_1"); only that file is read. */
static bool group_is_v1_name(const char *name)
{
    size_t u = 0, n = strlen(name);
    for (size_t i = 0; i < n; i++)
        u += name[i] == '_';
    return u == 4 || (u == 5 && n >= 2 && strcmp(name + n - 2, "_1") == 0);
}

/* The listings opening each member reads first (an array's folders, or
 * a group's, as its type says: a wrong type costs only those listings),
 * asked for at once for every member inside the source (the others are
 * left to the tree's rules). */
static void group_want_members(const struct tdb_io *io,
                               const struct tdb_group *g, const char *dir)
{
    static const char *const array[] = {"", "__schema", "__commits",
                                        "__fragment_meta", "__meta",
                                        "__fragments", NULL};
    static const char *const group[] = {"", "__group", "__meta", NULL};
    const size_t most = sizeof array / sizeof *array - 1;
    struct tdb_io_want *w = calloc(g->n * most + 1, sizeof *w);
    char **paths = calloc(g->n * most + 1, sizeof *paths);
    size_t k = 0;
    for (size_t i = 0; w && paths && i < g->n; i++) {
        bool above;
        char *mp = tdb_group_member_place(&g->v[i], dir, &above);
        if (mp && (above || mp[0] == '/' || strstr(mp, "://"))) {
            free(mp);
            continue;
        }
        const char *const *sub = g->v[i].type == 1 ? group : array;
        for (size_t j = 0; mp && sub[j]; j++) {
            if (!(paths[k] = tdb_path_join(mp, sub[j])))
                continue;
            bool tree = !strcmp(sub[j], "__fragments");
            w[k] = (struct tdb_io_want){tree ? TDB_WANT_TREE : TDB_WANT_LIST,
                                        paths[k], 0, 0};
            k++;
        }
        free(mp);
    }
    tdb_io_prefetch(io, w, k);
    for (size_t i = 0; paths && i < k; i++)
        free(paths[i]);
    free(paths);
    free(w);
}

int tdb_group_load_key(const struct tdb_io *io, const char *dir,
                       struct tdb_ts_window when, const uint8_t *key,
                       struct tdb_group **out, struct tdb_error *err)
{
    struct tdb_ts_file *files = NULL;
    size_t n = 0, first = 0;
    struct tdb_buf buf = {0};
    char *gdir = NULL;
    int r;

    *out = NULL;
    struct tdb_group *g = calloc(1, sizeof *g);
    if (!g || !(gdir = tdb_path_join(dir, "__group"))) {
        free(g);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", dir);
    }
    /* the group's two folders, listed together */
    char *mdir = tdb_path_join(dir, "__meta");
    if (mdir) {
        struct tdb_io_want w[2] = {{TDB_WANT_LIST, gdir, 0, 0},
                                   {TDB_WANT_LIST, mdir, 0, 0}};
        tdb_io_prefetch(io, w, 2);
        free(mdir);
    }
    if ((r = tdb_ts_files_list(io, gdir, when, &files, &n, err)))
        goto out;
    uint32_t require = 2;
    if (n && group_is_v1_name(files[n - 1].name)) {
        first = n - 1;
        require = 0;
    }
    for (size_t i = first; i < n; i++) {
        char *path = tdb_path_join(gdir, files[i].name);
        if (!path) {
            r = tdb_err(err, TDB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        uint64_t next;
        tdb_buf_reset(&buf);
        r = tdb_generic_tile_read(&(struct tdb_gt_file){io, path, 0}, key,
                                  &buf, &next, err);
        if (r == 0)
            r = group_apply_raw(g, buf.data, buf.len, require, path, err);
        free(path);
        if (r)
            goto out;
    }
    r = group_finish(g, dir, err);
    if (!r)
        group_want_members(io, g, dir);
out:
    tdb_buf_free(&buf);
    tdb_ts_files_free(files, n);
    free(gdir);
    if (r) {
        tdb_group_free(g);
        return r;
    }
    *out = g;
    return 0;
}

int tdb_group_load(const struct tdb_io *io, const char *dir,
                   uint64_t ts_start, uint64_t ts_end, struct tdb_group **out,
                   struct tdb_error *err)
{
    struct tdb_ts_window when = {ts_start, ts_end};
    return tdb_group_load_key(io, dir, when, NULL, out, err);
}

char *tdb_group_member_path(const struct tdb_group_member *m,
                            const char *dir)
{
    if (m->relative)
        return tdb_path_join(dir, m->uri);
    if (strncmp(m->uri, "file://", 7) == 0)
        return strdup(m->uri + 7);
    return strdup(m->uri);
}

char *tdb_path_normal(const char *base, const char *rel, bool *above)
{
    size_t cap = strlen(base) + strlen(rel) + 2;
    const char **part = malloc(cap * sizeof *part);
    size_t *len = malloc(cap * sizeof *len);
    char *out = malloc(3 * cap + 2);
    size_t n = 0, ups = 0;
    bool abs = base[0] == '/';
    *above = false;
    if (!part || !len || !out) {
        free(part);
        free(len);
        free(out);
        return NULL;
    }
    const char *src[2] = {base, rel};
    for (int k = 0; k < 2; k++) {
        for (const char *p = src[k]; *p;) {
            while (*p == '/')
                p++;
            size_t l = strcspn(p, "/");
            if (!l || (l == 1 && p[0] == '.')) {
                /* nothing */
            } else if (l == 2 && p[0] == '.' && p[1] == '.') {
                if (n)
                    n--;
                else if (!abs)
                    ups++;
                *above = ups > 0;
            } else {
                part[n] = p;
                len[n++] = l;
            }
            p += l;
        }
    }
    size_t o = 0;
    if (abs)
        out[o++] = '/';
    for (size_t i = 0; i < ups + n; i++) {
        const char *c = i < ups ? ".." : part[i - ups];
        size_t l = i < ups ? 2 : len[i - ups];
        if (i)
            out[o++] = '/';
        memcpy(out + o, c, l);
        o += l;
    }
    out[o] = 0;
    free(part);
    free(len);
    return out;
}

char *tdb_group_member_place(const struct tdb_group_member *m,
                             const char *dir, bool *above)
{
    const char *uri = m->uri;
    *above = false;
    if (m->relative)
        return tdb_path_normal(dir, uri, above);
    if (!strncmp(uri, "file://", 7))
        uri += 7;
    if (uri[0] == '/')
        return tdb_path_normal("/", uri, above);
    /* scheme://authority/key: the key resolved under the authority */
    const char *sep = strstr(uri, "://");
    if (!sep)
        return tdb_path_normal("/", uri, above);
    const char *key = strchr(sep + 3, '/');
    size_t head = key ? (size_t)(key - uri) : strlen(uri);
    char *k = tdb_path_normal("", key ? key : "", above);
    char *out = k ? malloc(head + strlen(k) + 2) : NULL;
    if (out)
        snprintf(out, head + strlen(k) + 2, "%.*s%s%s", (int)head, uri,
                 k[0] ? "/" : "", k);
    free(k);
    return out;
}
