/* tree_group.c: a group's folder of the mount contract (docs/LAYOUT.md):
 * __group.json, __meta/ and a folder per member followed. */
#include "tree/tree_priv.h"
#include "tree/json.h"
#include "model/mount_names.h"

#include <stdio.h>
#include <stdlib.h>

#define TREE_MAX_DEPTH 32
#define TREE_MAX_MEMBERS (1u << 20)  /* members opened in one tree: a
                                      * lattice of groups stays bounded */

/* The text of __group.json; why[i] (or NULL) is member i's "error". */
static int tree_group_json(const struct tdb_group *g, const struct tdb_meta *m,
                           char *const *why, struct tdb_buf *out)
{
    struct tdb_jb jb = {0};
    json_t *o = tdb_jb_object(&jb);
    tdb_jb_set(&jb, o, "type", tdb_json_cstr("group"));
    json_t *members = tdb_jb_array(&jb);
    for (size_t i = 0; i < g->n; i++) {
        json_t *mo = tdb_jb_object(&jb);
        tdb_jb_set(&jb, mo, "name", tdb_json_cstr(g->v[i].name));
        tdb_jb_set(&jb, mo, "uri", tdb_json_cstr(g->v[i].uri));
        tdb_jb_set(&jb, mo, "type",
                   tdb_json_cstr(g->v[i].type == 1 ? "group" : "array"));
        if (why[i])
            tdb_jb_set(&jb, mo, "error", tdb_json_cstr(why[i]));
        tdb_jb_push(&jb, members, mo);
    }
    tdb_jb_set(&jb, o, "members", members);
    json_t *keys = tdb_jb_array(&jb);
    for (size_t i = 0; m && i < m->n; i++)
        tdb_jb_push(&jb, keys, tdb_json_cstr(m->v[i].key));
    tdb_jb_set(&jb, o, "metadata_keys", keys);
    int r = jb.rc ? jb.rc : tdb_json_dump(o, out);
    json_decref(o);
    return r;
}

/* The path member m of the group at `dir` is read at (tdb_fs_open's
 * rules), or NULL with why[cap] when it is not followed.
 * @return 0 or TDB_E_NOMEM. */
static int tree_member_path(struct tdb_fs *fs, const char *dir,
                            const struct tdb_group_member *m, char **path,
                            char *why, size_t cap)
{
    const struct tdb_open_options *o = &fs->opts;
    bool above;
    char *place = tdb_group_member_place(m, dir, &above), *rel = NULL;
    int r = 1;
    *path = NULL;
    if (!place)
        return TDB_E_NOMEM;
    bool other = strstr(place, "://") != NULL;
    if (!above && o->locate)
        r = o->locate(o->locate_arg, place, &rel);
    else if (!above && place[0] != '/' && !other)
        r = (rel = strdup(place)) ? 0 : TDB_E_NOMEM;
    if (r <= 0) {
        free(place);
        *path = rel;
        return r;
    }
    if (o->members == TDB_MEMBERS_ANY && !other) {
        *path = place;          /* where it is, through the same backend */
        return 0;
    }
    if (o->members != TDB_MEMBERS_ANY)
        snprintf(why, cap, "%s: outside the source, not followed "
                 "(group_members=inside)", m->uri);
    else
        snprintf(why, cap, "%s: not on the source's storage, not followed",
                 m->uri);
    free(place);
    return 0;
}

/* Member m of the group up->path, shown as folder `shown` of node `root`
 * unless it is left out: @return 0 with *why NULL, or with *why (malloc'ed)
 * the reason it is left out; or TDB_E_NOMEM. */
static int tree_member(struct tdb_fs *fs, uint64_t root, const char *shown,
                       const struct tdb_group_member *m,
                       const struct tree_up *up, char **why)
{
    char msg[TDB_ERROR_MSG_MAX + 64] = "", *mp = NULL;
    struct tdb_error err = {0};
    int r = tree_member_path(fs, up->path, m, &mp, msg, sizeof msg);
    for (const struct tree_up *u = up; !r && mp && u; u = u->up)
        if (!strcmp(u->path, mp)) {
            snprintf(msg, sizeof msg, "%s: the group %s itself, not followed",
                     m->uri, u->path[0] ? u->path : ".");
            free(mp);
            mp = NULL;
        }
    if (!r && mp && ++fs->nmembers > TREE_MAX_MEMBERS)
        snprintf(msg, sizeof msg, "%s: more than %u members in the tree",
                 m->uri, TREE_MAX_MEMBERS);
    else if (!r && mp) {
        uint64_t dir;
        r = tree_add(fs, root, shown, TREE_DIR, &dir);
        if (!r && (r = tree_source(fs, dir, mp, up, &err)) &&
            r != TDB_E_NOMEM) {
            fs->nodes[root - 1].nkids--;    /* dir, the last one added */
            snprintf(msg, sizeof msg, "%s", err.msg[0] ? err.msg
                                                       : tdb_strerror(r));
            r = 0;
        }
    }
    free(mp);
    *why = NULL;
    if (!r && msg[0] && !(*why = strdup(msg)))
        r = TDB_E_NOMEM;
    return r;
}

/* The folder names of g's members (shown[i]), and why[i] for a name that
 * cannot be a folder or that an earlier member has. */
static int tree_member_names(const struct tdb_group *g, char **shown,
                             char **why)
{
    for (size_t i = 0; i < g->n; i++) {
        if (!(shown[i] = tdb_group_shown_name(g->v[i].name)))
            return TDB_E_NOMEM;
        const char *clash = !shown[i][0] ? "an empty name" : NULL;
        for (size_t j = 0; j < i && !clash; j++)
            if (!why[j] && !strcmp(shown[j], shown[i]))
                clash = "the name of another member";
        char msg[256];
        if (clash) {
            snprintf(msg, sizeof msg, "%s: has %s, not shown", g->v[i].uri,
                     clash);
            if (!(why[i] = strdup(msg)))
                return TDB_E_NOMEM;
        }
    }
    return 0;
}

/* The group at path and its metadata (*m NULL when it has none). */
static int tree_group_load(struct tdb_fs *fs, const char *path,
                           struct tdb_group **g, struct tdb_meta **m,
                           struct tdb_error *err)
{
    char *metadir = tdb_path_join(path, "__meta");
    if (!metadir)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    const uint8_t *key = fs->opts.key ? fs->key : NULL;
    int r = tdb_group_load(fs->io, path, fs->opts.ts_start, fs->opts.ts_end, g,
                           err);
    if (!r)
        r = tdb_meta_load(
            fs->io, metadir,
            (struct tdb_ts_window){fs->opts.ts_start, fs->opts.ts_end}, key, m,
            err);
    free(metadir);
    return r;
}

/* Follows each member of g (here: the group, and those above it) that
 * has a name (no why[i]) as folder shown[i] of root; why[i] the reason
 * for each left out, told in tdb_fs_warnings. */
static int tree_group_members(struct tdb_fs *fs, uint64_t root,
                              const struct tdb_group *g, char *const *shown,
                              char **why, const struct tree_up *here)
{
    const char *path = here->path[0] ? here->path : ".";
    int r = 0;
    for (size_t i = 0; !r && i < g->n; i++) {
        if (!why[i] && here->depth >= TREE_MAX_DEPTH) {
            why[i] = strdup("groups nested too deep, not followed");
            r = why[i] ? 0 : TDB_E_NOMEM;
        } else if (!why[i]) {
            r = tree_member(fs, root, shown[i], &g->v[i], here, &why[i]);
        }
        if (!r && why[i])
            r = tree_warn(fs, "group %s: member %s left out: %s", path,
                          g->v[i].name, why[i]);
    }
    return r;
}

/* Fills file jino, __group.json, with its text (tree_group_json). */
static int tree_group_json_fill(struct tdb_fs *fs, uint64_t jino,
                                const struct tdb_group *g,
                                const struct tdb_meta *m, char *const *why)
{
    struct tdb_buf jtext = {0};
    int r = tree_group_json(g, m, why, &jtext);
    if (!r) {
        struct tree_node *jn = &fs->nodes[jino - 1];
        size_t len = 0;
        free(jn->bytes);
        jn->bytes = tdb_buf_take(&jtext, &len);
        jn->size = len;
        r = jn->bytes ? 0 : TDB_E_NOMEM;
    }
    tdb_buf_free(&jtext);
    return r;
}

static int tree_group(struct tdb_fs *fs, uint64_t root, const char *path,
                      const struct tree_up *up, struct tdb_error *err)
{
    struct tdb_group *g = NULL;
    struct tdb_meta *m = NULL;
    char **shown = NULL, **why = NULL;
    int r = tree_group_load(fs, path, &g, &m, err);
    uint64_t jino = 0;
    size_t n = g ? g->n : 0;
    if (!r && (!(shown = calloc(n + 1, sizeof *shown)) ||
               !(why = calloc(n + 1, sizeof *why))))
        r = TDB_E_NOMEM;
    if (!r)
        r = tree_member_names(g, shown, why);
    /* __group.json first (its text once the members are known) */
    if (!r && !(r = tree_add_bytes(fs, root, "__group.json", "", 0, &jino)) &&
        m)
        fs->nodes[jino - 1].mtime_ms = m->newest_ts;
    if (!r)
        r = tree_meta(fs, root, m, m ? m->newest_ts : 0);
    struct tree_up here = {path, up, up ? up->depth + 1 : 0};
    if (!r)
        r = tree_group_members(fs, root, g, shown, why, &here);
    if (!r)
        r = tree_group_zarr(fs, root, &(struct tree_shown){n, shown, why}, m,
                            err);
    if (!r)
        r = tree_group_json_fill(fs, jino, g, m, why);
    for (size_t i = 0; i < n; i++) {
        free(shown ? shown[i] : NULL);
        free(why ? why[i] : NULL);
    }
    free(shown);
    free(why);
    tdb_group_free(g);
    tdb_meta_free(m);
    if (r && err && !err->code)
        tdb_err(err, r, "%s: %s", path[0] ? path : ".", tdb_strerror(r));
    return r;
}

/* Notes `path` as the folder of an array or group of the tree. */
static int tree_note_source(struct tdb_fs *fs, const char *path,
                            struct tdb_error *err)
{
    char **v = realloc(fs->srcs, (fs->nsrcs + 1) * sizeof *v);
    if (!v)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    fs->srcs = v;
    if (!(v[fs->nsrcs] = strdup(path)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    fs->nsrcs++;
    return 0;
}

int tree_source(struct tdb_fs *fs, uint64_t node, const char *path,
                const struct tree_up *up, struct tdb_error *err)
{
    bool array = tdb_is_array(fs->io, path);
    bool group = !array && tdb_is_group(fs->io, path);
    if ((array || group) && tree_note_source(fs, path, err))
        return TDB_E_NOMEM;
    if (array) {
        struct tdb_array *a;
        struct tdb_open_options o = fs->opts;
        if (o.key)
            o.key = fs->key;
        int r = tdb_array_open(&a, fs->io, path, &o, fs->cache, err);
        if (r)
            return r;
        struct tdb_array **v =
            realloc(fs->arrays, (fs->narrays + 1) * sizeof *v);
        if (!v) {
            tdb_array_close(a);
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        }
        fs->arrays = v;
        fs->arrays[fs->narrays++] = a;
        return tree_array(fs, node, a, err);
    }
    if (group)
        return tree_group(fs, node, path, up, err);
    if (!tdb_io_exists(fs->io, path))
        return tdb_err(err, TDB_E_NOENT, "%s: no such file or folder",
                       path[0] ? path : ".");
    return tdb_err(err, TDB_E_INVAL, "%s: not a TileDB array or group",
                   path[0] ? path : ".");
}
