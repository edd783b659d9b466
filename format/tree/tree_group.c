/* tree_group.c: a group's folder of the mount contract (docs/LAYOUT.md):
 * __group.json, __meta/ and a folder per member followed. */
#include "tree/tree_priv.h"
#include "tree/json.h"
#include "model/mount_names.h"
#include "core/pool.h"

#include <stdio.h>
#include <stdlib.h>

#define TREE_MAX_DEPTH 32
#define TREE_MAX_MEMBERS (1u << 20)  /* members opened in one tree
                                      * (opts.max_members 0): a lattice of
                                      * groups stays bounded */

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

/* ------------------------------------------------------------ opening */

/* What is at `path`, opened (tree_open): an array, or a group, its
 * metadata and its members.  The source and the members of its groups
 * are opened before any is shown, level by level, each level's side by
 * side on an object store (tree_open_all), so that their round trips
 * overlap: the open then takes as many of them one after another however
 * many members and sibling groups there are, a few per level. */
struct tree_opened {
    char *path;                 /* NULL: not followed (why says why) */
    const struct tree_opened *parent;   /* its group (NULL: the source) */
    int depth;                  /* groups above it */
    bool source;                /* an array's or a group's folder */
    int r;                      /* the open's result, */
    char *msg;                  /* and its error (r != 0) */
    struct tdb_array *a;        /* an array, */
    struct tdb_group *g;        /* or a group and */
    struct tdb_meta *m;         /* its metadata (NULL: none), */
    struct tree_opened *kids;   /* its members (those of g->v), */
    char **shown, **why;        /* their folders' names, why each left out
                                 * is (NULL: shown) */
};

#define TREE_OPENERS 16         /* opened at once */

/* One level of the tree being opened (tree_open_all). */
struct tree_level {
    struct tdb_fs *fs;
    struct tree_opened **o;
};

/* Opens what is at the i-th path of level arg (a tdb_pool_each_fn; it
 * fails only in that open).  Reads fs and touches nothing of it but its
 * storage and cache (which take calls from any thread). */
static int tree_open(void *arg, size_t i, struct tdb_error *unused)
{
    struct tdb_fs *fs = ((struct tree_level *)arg)->fs;
    struct tree_opened *o = ((struct tree_level *)arg)->o[i];
    const char *path = o->path, *shown = path[0] ? path : ".";
    struct tdb_error err = {0};
    bool array = tdb_is_array(fs->io, path);
    bool group = !array && tdb_is_group(fs->io, path);
    (void)unused;
    o->source = array || group;
    if (array) {
        struct tdb_open_options opts = fs->opts;
        if (opts.key)
            opts.key = fs->key;
        o->r = tdb_array_open(&o->a, fs->io, path, &opts, fs->cache, &err);
    } else if (group) {
        o->r = tree_group_load(fs, path, &o->g, &o->m, &err);
    } else if (!tdb_io_exists(fs->io, path)) {
        o->r = tdb_err(&err, TDB_E_NOENT, "%s: no such file or folder", shown);
    } else {
        o->r = tdb_err(&err, TDB_E_INVAL, "%s: not a TileDB array or group",
                       shown);
    }
    if (o->r && !err.code)
        tdb_err(&err, o->r, "%s: %s", shown, tdb_strerror(o->r));
    if (o->r && !(o->msg = strdup(err.msg)))
        o->r = TDB_E_NOMEM;
    return 0;
}

static void tree_opened_free(struct tree_opened *o)
{
    size_t n = o->g ? o->g->n : 0;
    for (size_t i = 0; i < n; i++) {
        if (o->kids)
            tree_opened_free(&o->kids[i]);
        free(o->shown ? o->shown[i] : NULL);
        free(o->why ? o->why[i] : NULL);
    }
    free(o->kids);
    free(o->shown);
    free(o->why);
    tdb_array_close(o->a);
    tdb_group_free(o->g);
    tdb_meta_free(o->m);
    free(o->path);
    free(o->msg);
}

/* Where member m of group up is read (*path, malloc'ed), or *why
 * (malloc'ed) the reason it is not followed.  @return 0 or TDB_E_NOMEM. */
static int tree_member_place(struct tdb_fs *fs,
                             const struct tdb_group_member *m,
                             const struct tree_opened *up, char **path,
                             char **why)
{
    char msg[TDB_ERROR_MSG_MAX + 64] = "", *mp = NULL;
    int r = 0;
    *path = NULL;
    if (up->depth >= TREE_MAX_DEPTH)
        snprintf(msg, sizeof msg, "groups nested too deep, not followed");
    else
        r = tree_member_path(fs, up->path, m, &mp, msg, sizeof msg);
    for (const struct tree_opened *u = up; !r && mp && u; u = u->parent)
        if (!strcmp(u->path, mp)) {
            snprintf(msg, sizeof msg, "%s: the group %s itself, not followed",
                     m->uri, u->path[0] ? u->path : ".");
            free(mp);
            mp = NULL;
        }
    size_t most = fs->opts.max_members ? fs->opts.max_members
                                       : TREE_MAX_MEMBERS;
    if (!r && mp && ++fs->nmembers > most) {
        snprintf(msg, sizeof msg, "%s: more than %zu members in the tree",
                 m->uri, most);
        free(mp);
        mp = NULL;
    }
    *path = mp;
    if (!r && msg[0] && !(*why = strdup(msg)))
        r = TDB_E_NOMEM;
    return r;
}

/* The members of group o (opened), placed: their folders' names, where
 * each is read or why it is not followed; *followed counts those read. */
static int tree_group_place(struct tdb_fs *fs, struct tree_opened *o,
                            size_t *followed)
{
    size_t n = o->g->n;
    o->kids = calloc(n + 1, sizeof *o->kids);
    o->shown = calloc(n + 1, sizeof *o->shown);
    o->why = calloc(n + 1, sizeof *o->why);
    if (!o->kids || !o->shown || !o->why)
        return TDB_E_NOMEM;
    int r = tree_member_names(o->g, o->shown, o->why);
    for (size_t i = 0; !r && i < n; i++) {
        o->kids[i].parent = o;
        o->kids[i].depth = o->depth + 1;
        if (!o->why[i])
            r = tree_member_place(fs, &o->g->v[i], o, &o->kids[i].path,
                                  &o->why[i]);
        *followed += o->kids[i].path != NULL;
    }
    return r;
}

/* Opens level[0..n): side by side on storage that takes hints of what
 * is read next (an object store, where each open waits on round trips;
 * on threads joined before it returns: a daemon forks once the tree is
 * built), else one after another (a local folder, where threads would
 * cost more than the opens: 16 members, 7 ms, took 8 on threads). */
static int tree_open_all(struct tdb_fs *fs, struct tree_opened **level,
                         size_t n, struct tdb_error *err)
{
    struct tree_level lv = {fs, level};
    if (n == 1 || !fs->io->ops->prefetch) {
        for (size_t i = 0; i < n; i++)
            tree_open(&lv, i, NULL);
        return 0;
    }
    unsigned threads = n < TREE_OPENERS ? (unsigned)n : TREE_OPENERS;
    return tdb_pool_each(threads, n, tree_open, &lv, err);
}

/* Opens top, then level by level the members of the groups opened.
 * @return 0 (each open's failure is its own) or TDB_E_NOMEM. */
static int tree_open_tree(struct tdb_fs *fs, struct tree_opened *top,
                          struct tdb_error *err)
{
    struct tree_opened **level = malloc(sizeof *level);
    size_t n = 1;
    int r = level ? 0 : TDB_E_NOMEM;
    if (level)
        level[0] = top;
    while (!r && n) {
        size_t k = 0;
        r = tree_open_all(fs, level, n, err);
        for (size_t i = 0; !r && i < n; i++)
            if (!level[i]->r && level[i]->g)
                r = tree_group_place(fs, level[i], &k);
        /* the next level: the members followed, in order */
        struct tree_opened **next = !r && k ? malloc(k * sizeof *next) : NULL;
        if (!r && k && !next)
            r = TDB_E_NOMEM;
        k = 0;
        for (size_t i = 0; next && i < n; i++)
            for (size_t j = 0; level[i]->kids && j < level[i]->g->n; j++)
                if (level[i]->kids[j].path)
                    next[k++] = &level[i]->kids[j];
        free(level);
        level = next;
        n = k;
    }
    free(level);
    return r;
}

/* ------------------------------------------------------------ showing */

static int tree_show(struct tdb_fs *fs, uint64_t node, struct tree_opened *o,
                     struct tdb_error *err);

/* Member o (opened) as folder `shown` of node `root`, unless it is left
 * out: @return 0 with *why NULL, or with *why (malloc'ed) the reason it
 * is left out; or TDB_E_NOMEM. */
static int tree_member(struct tdb_fs *fs, uint64_t root, const char *shown,
                       struct tree_opened *o, char **why)
{
    struct tdb_error err = {0};
    uint64_t dir;
    int r = tree_add(fs, root, shown, TREE_DIR, &dir);
    if (!r && (r = tree_show(fs, dir, o, &err)) && r != TDB_E_NOMEM) {
        fs->nodes[root - 1].nkids--;    /* dir, the last one added */
        *why = strdup(err.msg[0] ? err.msg : tdb_strerror(r));
        r = *why ? 0 : TDB_E_NOMEM;
    }
    return r;
}

/* Shows each member of group o that is followed as folder shown[i] of
 * root; why[i] the reason for each left out, told in tdb_fs_warnings. */
static int tree_group_members(struct tdb_fs *fs, uint64_t root,
                              struct tree_opened *o)
{
    const char *path = o->path[0] ? o->path : ".";
    int r = 0;
    for (size_t i = 0; !r && i < o->g->n; i++) {
        if (o->kids[i].path)
            r = tree_member(fs, root, o->shown[i], &o->kids[i], &o->why[i]);
        if (!r && o->why[i])
            r = tree_warn(fs, "group %s: member %s left out: %s", path,
                          o->g->v[i].name, o->why[i]);
    }
    return r;
}

/* The folder of group o (opened, its members placed) at node root. */
static int tree_group(struct tdb_fs *fs, uint64_t root, struct tree_opened *o,
                      struct tdb_error *err)
{
    const struct tdb_group *g = o->g;
    const struct tdb_meta *m = o->m;
    uint64_t jino = 0;
    /* __group.json first (its text once the members are known) */
    int r = tree_add_bytes(fs, root, "__group.json", "", 0, &jino);
    if (!r && m)
        fs->nodes[jino - 1].mtime_ms = m->newest_ts;
    if (!r)
        r = tree_meta(fs, root, m, m ? m->newest_ts : 0);
    if (!r)
        r = tree_group_members(fs, root, o);
    if (!r)
        r = tree_group_zarr(fs, root,
                            &(struct tree_shown){g->n, o->shown, o->why}, m,
                            err);
    if (!r)
        r = tree_group_json_fill(fs, jino, g, m, o->why);
    if (r && err && !err->code)
        tdb_err(err, r, "%s: %s", o->path[0] ? o->path : ".",
                tdb_strerror(r));
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

/* Shows o (opened; an array it opened becomes the tree's) in folder
 * node. */
static int tree_show(struct tdb_fs *fs, uint64_t node, struct tree_opened *o,
                     struct tdb_error *err)
{
    if (o->source && tree_note_source(fs, o->path, err))
        return TDB_E_NOMEM;
    if (o->r)
        return tdb_err(err, o->r, "%s", o->msg ? o->msg : "out of memory");
    if (o->g)
        return tree_group(fs, node, o, err);
    struct tdb_array **v = realloc(fs->arrays, (fs->narrays + 1) * sizeof *v);
    if (!v)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    fs->arrays = v;
    fs->arrays[fs->narrays++] = o->a;
    struct tdb_array *a = o->a;
    o->a = NULL;
    return tree_array(fs, node, a, err);
}

int tree_source(struct tdb_fs *fs, uint64_t node, const char *path,
                struct tdb_error *err)
{
    struct tree_opened top = {.path = strdup(path)};
    int r = top.path ? tree_open_tree(fs, &top, err) : TDB_E_NOMEM;
    if (!r)
        r = tree_show(fs, node, &top, err);
    else if (err && !err->code)
        tdb_err(err, r, "out of memory");
    tree_opened_free(&top);
    return r;
}
