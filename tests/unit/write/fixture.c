/* fixture.c: what the tests of the fragment writer share (see
 * fixture.h). */
#include "fixture.h"
#include "tiledb_format_write.h"
#include "write/writer.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

const char *corpus;

void put(const struct tdb_io *io, const char *path, const void *p,
         size_t n)
{
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, p, n), 0);
}

struct tdb_fs *fs_open(const struct tdb_io *io, const uint8_t *key)
{
    struct tdb_open_options o;
    tdb_open_options_init(&o);
    o.key = key;
    struct tdb_fs *fs = NULL;
    struct tdb_error err = {0};
    if (tdb_fs_open(&fs, io, &o, &err)) {
        fprintf(stderr, "  open: %s\n", err.msg);
        return NULL;
    }
    return fs;
}

/* The bytes of file `path` of the mount (NULL when absent). */
uint8_t *fs_file(struct tdb_fs *fs, const char *path, uint64_t *size)
{
    uint64_t ino;
    struct tdb_stat st;
    struct tdb_error err = {0};
    if (tdb_fs_resolve(fs, path, &ino, &err) || tdb_fs_stat(fs, ino, &st, &err)) {
        fprintf(stderr, "  %s: %s\n", path, err.msg);
        return NULL;
    }
    uint8_t *b = malloc(st.size + 1);
    size_t got = (size_t)st.size;
    if (unit_fs_copy(fs, ino, 0, b, &got, &err) ||
        got != st.size) {
        fprintf(stderr, "  %s: %s\n", path, err.msg);
        free(b);
        return NULL;
    }
    *size = st.size;
    return b;
}

json_t *load_case(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/case.json", corpus, name);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        fprintf(stderr, "  %s: %s\n", path, je.text);
    return j;
}

/* An in-memory array holding the schemas of corpus case `name`. */
int array_from_case(const char *name, struct tdb_io *mem)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/array", corpus, name);
    struct tdb_io src;
    if (tdb_io_posix(&src, path) || tdb_io_mem(mem))
        return -1;
    int r = unit_copy_tree(&src, "__schema", mem, "__schema");
    tdb_io_free(&src);
    return r;
}

/* A tiny deterministic generator. */
uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

struct sfile *sfind(struct sfiles *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].name, name))
            return &s->v[i];
    return NULL;
}

void sfiles_free(struct sfiles *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].data);
    }
    s->n = 0;
}

/* Reorders the n cells of every field by a random permutation. */
void shuffle_cells(struct sfiles *s, uint64_t n, uint64_t seed)
{
    uint64_t *p = malloc(n * sizeof *p + 8);
    for (uint64_t i = 0; i < n; i++)
        p[i] = i;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = rng_next(&seed) % i, t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
    for (size_t i = 0; i < s->n; i++) {
        struct sfile *f = &s->v[i];
        size_t nl = strlen(f->name);
        if (nl > 8 && !strcmp(f->name + nl - 8, ".offsets"))
            continue;
        char on[600];
        snprintf(on, sizeof on, "%s.offsets", f->name);
        struct sfile *o = sfind(s, on);
        uint8_t *nd = malloc(f->size + 1);
        if (o) {
            uint8_t *no = malloc(o->size + 1);
            uint64_t pos = 0;
            for (uint64_t k = 0; k < n; k++) {
                uint64_t c = p[k], st = tdb_le64(o->data + 8 * c);
                uint64_t en = c + 1 < n ? tdb_le64(o->data + 8 * (c + 1)) : f->size;
                tdb_st64(no + 8 * k, pos);
                memcpy(nd + pos, f->data + st, (size_t)(en - st));
                pos += en - st;
            }
            free(o->data);
            o->data = no;
        } else {
            uint64_t cs = f->size / n;
            for (uint64_t k = 0; k < n; k++)
                memcpy(nd + k * cs, f->data + p[k] * cs, (size_t)cs);
        }
        free(f->data);
        f->data = nd;
    }
    free(p);
}

/* The fragment's files as the mount shows them (corpus expected/). */
int load_expected_frag(const char *name, const char *frag,
                       struct sfiles *s)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/expected/__fragments/%s", corpus, name,
             frag);
    struct tdb_io io;
    if (tdb_io_posix(&io, path))
        return -1;
    struct tdb_names n;
    int r = tdb_io_names(&io, "", &n, NULL);
    for (size_t i = 0; !r && i < n.n && s->n < 64; i++) {
        if (n.is_dir[i] || !strcmp(n.v[i], "__fragment.json"))
            continue;
        struct sfile *f = &s->v[s->n++];
        f->name = strdup(n.v[i]);
        r = tdb_io_read_file(&io, n.v[i], &f->data, &f->size, NULL);
    }
    if (!r)
        tdb_names_free(&n);
    tdb_io_free(&io);
    return r;
}

/* Stages fragment i of corpus case `name` (case.json c) in folder dir of
 * stg: the files the mount shows for it, sparse cells shuffled unless
 * duplicates are allowed, dense ones with their region. */
void stage_case_frag(json_t *c, const char *name, size_t i,
                     struct tdb_io *stg, const char *dir)
{
    bool dense = !strcmp(json_string_value(json_object_get(c, "array_type")),
                         "dense");
    bool dups = json_is_true(json_object_get(c, "allows_duplicates"));
    const char *fr = json_string_value(
        json_array_get(json_object_get(c, "fragments"), i));
    json_t *fi = json_object_get(json_object_get(c, "fragment_info"), fr);
    uint64_t n = (uint64_t)json_integer_value(json_object_get(fi, "cell_count"));
    struct sfiles s = {.n = 0};
    CHECK_EQ_INT(load_expected_frag(name, fr, &s), 0);
    if (!dense && !dups)
        shuffle_cells(&s, n, 1234 + i);
    stg->ops->mkdir(stg->ctx, dir);
    for (size_t k = 0; k < s.n; k++) {
        char *p = tdb_path_join(dir, s.v[k].name);
        put(stg, p, s.v[k].data, (size_t)s.v[k].size);
        free(p);
    }
    if (dense) {
        char *text = json_dumps(json_object_get(fi, "non_empty_domain"), 0);
        char *p = tdb_path_join(dir, "__subarray.json");
        put(stg, p, text, strlen(text));
        free(p);
        free(text);
    }
    sfiles_free(&s);
}

/* Staged files of n cells for every attribute of a case's "fields":
 * random fixed values, var strings of 0-4 values (every fifth empty),
 * validity 0 every third cell. */
void make_attr_files(json_t *fields, uint64_t n, uint64_t seed,
                     struct sfiles *s)
{
    const char *fname;
    json_t *fd;
    json_object_foreach(fields, fname, fd) {
        if (strcmp(json_string_value(json_object_get(fd, "role")), "attr"))
            continue;
        int dt = tdb_dt_from_name(json_string_value(json_object_get(fd, "datatype")));
        unsigned vs = tdb_dt_size((unsigned)dt);
        json_t *cvn = json_object_get(fd, "cell_val_num");
        bool var = json_is_string(cvn);
        struct sfile *v = &s->v[s->n++];
        v->name = strdup(fname);
        if (var) {
            struct sfile *o = &s->v[s->n++];
            char on[300];
            snprintf(on, sizeof on, "%s.offsets", fname);
            o->name = strdup(on);
            o->data = malloc(n * 8);
            o->size = n * 8;
            v->data = malloc(n * 5 * vs + 1);
            uint64_t pos = 0;
            for (uint64_t k = 0; k < n; k++) {
                tdb_st64(o->data + 8 * k, pos);
                uint64_t len = (k % 5) * vs;   /* every fifth cell empty */
                for (uint64_t b = 0; b < len; b++)
                    v->data[pos + b] = (uint8_t)('a' + rng_next(&seed) % 26);
                pos += len;
            }
            v->size = pos;
        } else {
            uint64_t cs = vs * (uint64_t)json_integer_value(cvn);
            v->size = n * cs;
            v->data = malloc(v->size);
            for (uint64_t b = 0; b < v->size; b++)
                v->data[b] = (uint8_t)rng_next(&seed);
        }
        if (json_is_true(json_object_get(fd, "nullable"))) {
            struct sfile *m = &s->v[s->n++];
            char vn[300];
            snprintf(vn, sizeof vn, "%s.validity", fname);
            m->name = strdup(vn);
            m->size = n;
            m->data = malloc(n);
            for (uint64_t k = 0; k < n; k++)
                m->data[k] = (uint8_t)(k % 3 != 0);
        }
    }
}
