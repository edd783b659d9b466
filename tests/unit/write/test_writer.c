/* test_writer.c: writing fragments from staged files (LAYOUT.md "Writing"):
 * corpus fragments re-written from the files the mount shows for them read
 * back byte-exactly (sparse ones from shuffled cells), hand-made dense and
 * sparse writes, and one test per bad input, which must leave the array as
 * it was. */
#include "write/writer.h"
#include "model/arraydir.h"
#include "../support.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *corpus;

/* ---------------------------------------------------------------- helpers */

static void put(const struct tdb_io *io, const char *path, const void *p,
                size_t n)
{
    CHECK_EQ_INT(io->ops->write_at(io->ctx, path, 0, p, n), 0);
}

/* Every file under path with its size, one per line. */
static void snapshot(const struct tdb_io *io, const char *path,
                     struct tdb_buf *out)
{
    struct tdb_names n;
    if (tdb_io_names(io, path, &n, NULL))
        return;
    for (size_t i = 0; i < n.n; i++) {
        char *p = tdb_path_join(path, n.v[i]);
        char line[1200];
        uint64_t sz = 0;
        if (!n.is_dir[i])
            io->ops->size(io->ctx, p, &sz);
        int k = snprintf(line, sizeof line, "%s%s %llu\n", p,
                         n.is_dir[i] ? "/" : "", (unsigned long long)sz);
        tdb_buf_append(out, line, (size_t)k);
        if (n.is_dir[i])
            snapshot(io, p, out);
        free(p);
    }
    tdb_names_free(&n);
}

static struct tdb_fs *fs_open(const struct tdb_io *io, const uint8_t *key)
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
static uint8_t *fs_file(struct tdb_fs *fs, const char *path, uint64_t *size)
{
    uint64_t ino;
    struct tdb_stat st;
    struct tdb_error err = {0};
    if (tdb_fs_resolve(fs, path, &ino, &err) || tdb_fs_stat(fs, ino, &st, &err)) {
        fprintf(stderr, "  %s: %s\n", path, err.msg);
        return NULL;
    }
    uint8_t *b = malloc(st.size + 1);
    size_t got = 0;
    if (tdb_fs_read(fs, ino, 0, b, (size_t)st.size, &got, &err) ||
        got != st.size) {
        fprintf(stderr, "  %s: %s\n", path, err.msg);
        free(b);
        return NULL;
    }
    *size = st.size;
    return b;
}

static bool same_bytes(const char *what, const uint8_t *a, uint64_t na,
                       const uint8_t *b, uint64_t nb)
{
    if (na != nb) {
        fprintf(stderr, "  %s: %llu bytes, expected %llu\n", what,
                (unsigned long long)na, (unsigned long long)nb);
        return false;
    }
    for (uint64_t i = 0; i < na; i++)
        if (a[i] != b[i]) {
            fprintf(stderr, "  %s: byte %llu is %02x, expected %02x\n", what,
                    (unsigned long long)i, a[i], b[i]);
            return false;
        }
    return true;
}

static json_t *load_case(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/case.json", corpus, name);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        fprintf(stderr, "  %s: %s\n", path, je.text);
    return j;
}

static bool case_key(json_t *c, uint8_t key[32])
{
    const char *hex = json_string_value(json_object_get(c, "key_hex"));
    if (!hex || strlen(hex) != 64)
        return false;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        key[i] = (uint8_t)v;
    }
    return true;
}

/* An in-memory array holding the schemas of corpus case `name`. */
static int array_from_case(const char *name, struct tdb_io *mem)
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
static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

/* ------------------------------------------------- staged files of a case */

struct sfile {
    char *name;
    uint8_t *data;
    uint64_t size;
};

struct sfiles {
    struct sfile v[64];
    size_t n;
};

static struct sfile *sfind(struct sfiles *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].name, name))
            return &s->v[i];
    return NULL;
}

static void sfiles_free(struct sfiles *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].data);
    }
    s->n = 0;
}

/* Reorders the n cells of every field by a random permutation. */
static void shuffle_cells(struct sfiles *s, uint64_t n, uint64_t seed)
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
static int load_expected_frag(const char *name, const char *frag,
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

/* Compares file `rel` of the mount with corpus expected/<exp>. */
static bool compare_expected(struct tdb_fs *fs, const char *name,
                             const char *rel, const char *exp)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/expected/%s", corpus, name, exp);
    struct tdb_io io;
    tdb_io_posix(&io, "/");
    uint8_t *want = NULL, *got = NULL;
    uint64_t nw = 0, ng = 0;
    bool ok = !tdb_io_read_file(&io, path, &want, &nw, NULL);
    tdb_io_free(&io);
    if (ok)
        ok = (got = fs_file(fs, rel, &ng)) != NULL;
    char what[1200];
    snprintf(what, sizeof what, "%s: %s", name, rel);
    if (ok)
        ok = same_bytes(what, got, ng, want, nw);
    free(want);
    free(got);
    return ok;
}

/* -------------------------------------------------- corpus round trips */

/* Stages fragment i of corpus case `name` (case.json c) in folder dir of
 * stg: the files the mount shows for it, sparse cells shuffled unless
 * duplicates are allowed, dense ones with their region. */
static void stage_case_frag(json_t *c, const char *name, size_t i,
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

/* Re-writes every fragment of corpus case `name` from the files the mount
 * shows for it (sparse cells shuffled unless duplicates are allowed), then
 * checks that the mount shows what TileDB read from the original: the
 * view, and each fragment alone.  With `same_files`, the data files of the
 * new fragments must equal TileDB's byte for byte. */
static void roundtrip(const char *name, bool same_files)
{
    json_t *c = load_case(name);
    CHECK(c != NULL);
    if (!c)
        return;
    uint8_t keyb[32];
    const uint8_t *key = case_key(c, keyb) ? keyb : NULL;
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case(name, &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    json_t *frags = json_object_get(c, "fragments");
    json_t *info = json_object_get(c, "fragment_info");
    size_t nfr = json_array_size(frags);
    char **names = calloc(nfr + 1, sizeof *names);
    for (size_t i = 0; i < nfr; i++) {
        const char *fr = json_string_value(json_array_get(frags, i));
        json_t *fi = json_object_get(info, fr);
        uint64_t ts = (uint64_t)json_integer_value(
            json_array_get(json_object_get(fi, "timestamps"), 1));
        char dir[32];
        snprintf(dir, sizeof dir, "s%zu", i);
        stage_case_frag(c, name, i, &stg, dir);
        struct tdb_error err = {0};
        int r = tdb_fragment_write(&arr, &stg, dir, key, ts, &names[i], &err);
        if (r)
            fprintf(stderr, "  %s fragment %zu: %s\n", name, i, err.msg);
        CHECK_EQ_INT(r, 0);
    }
    struct tdb_fs *fs = fs_open(&arr, key);
    CHECK(fs != NULL);
    /* the view: every top-level expected file */
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/expected", corpus, name);
    struct tdb_io exp;
    tdb_io_posix(&exp, path);
    struct tdb_names top = {0};
    tdb_io_names(&exp, "", &top, NULL);
    for (size_t i = 0; fs && i < top.n; i++)
        if (!top.is_dir[i])
            CHECK(compare_expected(fs, name, top.v[i], top.v[i]));
    tdb_names_free(&top);
    /* each fragment alone */
    for (size_t i = 0; fs && i < nfr; i++) {
        const char *fr = json_string_value(json_array_get(frags, i));
        char sub[600];
        snprintf(sub, sizeof sub, "__fragments/%s", fr);
        struct tdb_names fn = {0};
        tdb_io_names(&exp, sub, &fn, NULL);
        for (size_t k = 0; names[i] && k < fn.n; k++) {
            if (!strcmp(fn.v[k], "__fragment.json"))
                continue;
            char rel[1200], e[1200];
            snprintf(rel, sizeof rel, "__fragments/%s/%s", names[i], fn.v[k]);
            snprintf(e, sizeof e, "%s/%s", sub, fn.v[k]);
            CHECK(compare_expected(fs, name, rel, e));
        }
        tdb_names_free(&fn);
    }
    tdb_io_free(&exp);
    /* the data files themselves, against TileDB's */
    for (size_t i = 0; same_files && i < nfr && names[i]; i++) {
        const char *fr = json_string_value(json_array_get(frags, i));
        snprintf(path, sizeof path, "%s/%s/array/__fragments/%s", corpus, name,
                 fr);
        struct tdb_io orig;
        tdb_io_posix(&orig, path);
        struct tdb_names fn = {0};
        tdb_io_names(&orig, "", &fn, NULL);
        for (size_t k = 0; k < fn.n; k++) {
            uint8_t *a = NULL, *b = NULL;
            uint64_t na = 0, nb = 0;
            char mine[1200], what[1400];
            snprintf(mine, sizeof mine, "__fragments/%s/%s", names[i], fn.v[k]);
            snprintf(what, sizeof what, "%s: %s", name, mine);
            tdb_io_read_file(&orig, fn.v[k], &b, &nb, NULL);
            if (tdb_io_read_file(&arr, mine, &a, &na, NULL)) {
                fprintf(stderr, "  %s: missing\n", what);
                CHECK(0);
            } else if (!strcmp(fn.v[k], "__fragment_metadata.tdb")) {
                if (!same_bytes(what, a, na, b, nb))
                    fprintf(stderr, "  (note: fragment metadata differs)\n");
            } else {
                CHECK(same_bytes(what, a, na, b, nb));
            }
            free(a);
            free(b);
        }
        tdb_names_free(&fn);
        tdb_io_free(&orig);
    }
    tdb_fs_close(fs);
    for (size_t i = 0; i < nfr; i++)
        free(names[i]);
    free(names);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
    json_decref(c);
}

static void test_roundtrip_dense(void)
{
    static const char *const cases[] = {
        "dense_1d_basic", "dense_1d_anon_attr", "dense_2d_all_types",
        "dense_2d_colmajor", "dense_2d_tile_col_cell_row",
        "dense_2d_tile_row_cell_col", "dense_3d", "dense_var_nullable",
        "dense_fragments_overlap", "dense_current_domain", NULL};
    for (int i = 0; cases[i]; i++)
        roundtrip(cases[i], true);
}

static void test_roundtrip_sparse(void)
{
    /* shuffled input: unordered cells, Hilbert, strings, floats, mixed */
    static const char *const cases[] = {
        "sparse_int64_2d", "sparse_hilbert", "sparse_string_dim",
        "sparse_float64_dims", "sparse_mixed_dims", "sparse_col_major",
        "sparse_datetime_int8", "sparse_dups", NULL};
    for (int i = 0; cases[i]; i++)
        roundtrip(cases[i], false);
}

static void test_roundtrip_filters(void)
{
    static const char *const cases[] = {
        "filter_bit_width_reduction", "filter_bitshuffle", "filter_byteshuffle",
        "filter_bzip2", "filter_chains", "filter_checksum_md5",
        "filter_checksum_sha256", "filter_delta", "filter_dictionary",
        "filter_double_delta", "filter_gzip", "filter_lz4",
        "filter_positive_delta", "filter_rle", "filter_scale_float",
        "filter_xor", "filter_zstd", "chunked_tiles", "filter_chains", NULL};
    /* filter_chains: a compressor after filters that add metadata stores
     * that metadata as one part where TileDB keeps one part per filter;
     * the tiles decode the same but are not byte-identical */
    for (int i = 0; cases[i]; i++)
        roundtrip(cases[i], strcmp(cases[i], "filter_chains") != 0);
}

static void test_roundtrip_encrypted(void)
{
    roundtrip("encrypted_aes256gcm", false);
}

/* ----------------------------------------------------- hand-made writes */

/* Staged files of n cells for every attribute of a case's "fields":
 * random fixed values, var strings of 0-4 values (every fifth empty),
 * validity 0 every third cell. */
static void make_attr_files(json_t *fields, uint64_t n, uint64_t seed,
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


/* dense_var_nullable's schema (12 x 14, 3 x 3 tiles): a region of 7 x 11
 * cells that no tile boundary divides, every attribute (var strings with
 * empty cells, nullable, fixed CHAR x4).  The fragment shows exactly the
 * staged bytes; the view shows them inside the region and fills outside. */
static void test_dense_partial_region(void)
{
    const char *name = "dense_var_nullable";
    json_t *c = load_case(name);
    CHECK(c != NULL);
    if (!c)
        return;
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case(name, &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stg.ops->mkdir(stg.ctx, "w");
    const uint64_t R = 12, C = 14, r0 = 1, r1 = 7, c0 = 2, c1 = 12;
    const uint64_t n = (r1 - r0 + 1) * (c1 - c0 + 1);
    put(&stg, "w/__subarray.json", "[[1, 7], [2, 12]]", 17);
    json_t *fields = json_object_get(c, "fields");
    const char *fname;
    json_t *fd;
    struct sfiles s = {.n = 0};
    make_attr_files(fields, n, 42, &s);
    for (size_t k = 0; k < s.n; k++) {
        char *p = tdb_path_join("w", s.v[k].name);
        put(&stg, p, s.v[k].data, (size_t)s.v[k].size);
        free(p);
    }
    char *fragname = NULL;
    struct tdb_error err = {0};
    int r = tdb_fragment_write(&arr, &stg, "w", NULL, 7, &fragname, &err);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    struct tdb_tsname ts;
    CHECK(fragname && !tdb_tsname_parse(fragname, &ts));
    CHECK(fragname && ts.t1 == 7 && ts.t2 == 7 && ts.version == 22);
    struct tdb_fs *fs = fragname ? fs_open(&arr, NULL) : NULL;
    CHECK(fs != NULL);
    for (size_t k = 0; fs && k < s.n; k++) {
        char rel[600];
        uint64_t got_n = 0;
        snprintf(rel, sizeof rel, "__fragments/%s/%s", fragname, s.v[k].name);
        uint8_t *got = fs_file(fs, rel, &got_n);
        CHECK(got && same_bytes(rel, got, got_n, s.v[k].data, s.v[k].size));
        free(got);
    }
    /* the view: staged cells inside the region, fills elsewhere */
    json_object_foreach(fields, fname, fd) {
        if (!fs || strcmp(json_string_value(json_object_get(fd, "role")), "attr"))
            continue;
        bool var = json_is_string(json_object_get(fd, "cell_val_num"));
        bool nullable = json_is_true(json_object_get(fd, "nullable"));
        const char *fh = json_string_value(json_object_get(fd, "fill_hex"));
        uint8_t fill[64];
        size_t fl = strlen(fh) / 2;
        for (size_t b = 0; b < fl; b++) {
            unsigned x;
            sscanf(fh + 2 * b, "%2x", &x);
            fill[b] = (uint8_t)x;
        }
        uint8_t fv = (uint8_t)json_integer_value(json_object_get(fd, "fill_valid"));
        char on[300], vn[300];
        snprintf(on, sizeof on, "%s.offsets", fname);
        snprintf(vn, sizeof vn, "%s.validity", fname);
        struct sfile *sv = sfind(&s, fname), *so = sfind(&s, on),
                     *sm = sfind(&s, vn);
        struct tdb_buf want = {0}, woff = {0}, wval = {0};
        for (uint64_t i = 0; i < R; i++)
            for (uint64_t j = 0; j < C; j++) {
                bool in = i >= r0 && i <= r1 && j >= c0 && j <= c1;
                uint64_t k = (i - r0) * (c1 - c0 + 1) + (j - c0);
                tdb_buf_put_u64(&woff, want.len);
                if (!in) {
                    tdb_buf_append(&want, fill, fl);
                    tdb_buf_put_u8(&wval, fv);
                    continue;
                }
                if (var) {
                    uint64_t st = tdb_le64(so->data + 8 * k);
                    uint64_t en = k + 1 < n ? tdb_le64(so->data + 8 * (k + 1))
                                            : sv->size;
                    tdb_buf_append(&want, sv->data + st, (size_t)(en - st));
                } else {
                    uint64_t cs = sv->size / n;
                    tdb_buf_append(&want, sv->data + k * cs, (size_t)cs);
                }
                if (nullable)
                    tdb_buf_put_u8(&wval, sm->data[k]);
            }
        uint64_t gn = 0;
        uint8_t *got = fs_file(fs, fname, &gn);
        CHECK(got && same_bytes(fname, got, gn, want.data, want.len));
        free(got);
        if (var) {
            got = fs_file(fs, on, &gn);
            CHECK(got && same_bytes(on, got, gn, woff.data, woff.len));
            free(got);
        }
        if (nullable) {
            got = fs_file(fs, vn, &gn);
            CHECK(got && same_bytes(vn, got, gn, wval.data, wval.len));
            free(got);
        }
        tdb_buf_free(&want);
        tdb_buf_free(&woff);
        tdb_buf_free(&wval);
    }
    tdb_fs_close(fs);
    free(fragname);
    sfiles_free(&s);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
    json_decref(c);
}

/* dense_1d_basic (x in [1, 50], INT32 a, FLOAT64 b): a whole-domain write
 * (no __subarray.json) at a given timestamp. */
static void stage_dense_1d(const struct tdb_io *stg, const char *dir,
                           int32_t base)
{
    int32_t a[50];
    double b[50];
    for (int i = 0; i < 50; i++) {
        a[i] = base + i;
        b[i] = base * 0.5 + i;
    }
    char p[64];
    stg->ops->mkdir(stg->ctx, dir);
    snprintf(p, sizeof p, "%s/a", dir);
    put(stg, p, a, sizeof a);
    snprintf(p, sizeof p, "%s/b", dir);
    put(stg, p, b, sizeof b);
}

/* Two writes at the same timestamp: the second is moved after the first,
 * so that it wins. */
static void test_timestamp_after_newest(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("dense_1d_basic", &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stage_dense_1d(&stg, "one", 100);
    stage_dense_1d(&stg, "two", 200);
    char *n1 = NULL, *n2 = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "one", NULL, 5, &n1, &err), 0);
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "two", NULL, 5, &n2, &err), 0);
    struct tdb_tsname t1, t2;
    CHECK(n1 && n2 && !tdb_tsname_parse(n1, &t1) && !tdb_tsname_parse(n2, &t2));
    CHECK(n1 && n2 && t1.t1 == 5 && t2.t1 == 6 && t2.t2 == 6);
    struct tdb_fs *fs = fs_open(&arr, NULL);
    uint64_t gn = 0;
    uint8_t *got = fs ? fs_file(fs, "a", &gn) : NULL;
    CHECK(got && gn == 200 && tdb_le32(got) == 200 && tdb_le32(got + 196) == 249);
    free(got);
    /* no timestamp: now, and still after the newest */
    char *n3 = NULL;
    stage_dense_1d(&stg, "three", 300);
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "three", NULL, 0, &n3, &err), 0);
    struct tdb_tsname t3;
    CHECK(n3 && !tdb_tsname_parse(n3, &t3) && t3.t1 > 1600000000000ull);
    tdb_fs_close(fs);
    free(n1);
    free(n2);
    free(n3);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* Committing the same staged folder again (a crash after the commit, before
 * the staged files were removed) writes nothing new and names the same
 * fragment; the marker does not count as a staged field. */
static void test_commit_twice(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("dense_1d_basic", &arr), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stage_dense_1d(&stg, "s", 7);
    char *n1 = NULL, *n2 = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "s", NULL, 0, &n1, &err), 0);
    struct tdb_names before, after;
    CHECK_EQ_INT(tdb_io_names(&arr, "__commits", &before, &err), 0);
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "s", NULL, 0, &n2, &err), 0);
    CHECK(n1 && n2 && !strcmp(n1, n2));
    CHECK_EQ_INT(tdb_io_names(&arr, "__commits", &after, &err), 0);
    CHECK_EQ_INT(after.n, before.n);
    /* a marker naming a fragment that was never committed: a new write */
    put(&stg, "s/__fragment", "__1_1_00000000000000000000000000000000_22", 41);
    char *n3 = NULL;
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "s", NULL, 0, &n3, &err), 0);
    CHECK(n3 && strcmp(n3, n1));
    tdb_names_free(&after);
    CHECK_EQ_INT(tdb_io_names(&arr, "__commits", &after, &err), 0);
    CHECK_EQ_INT(after.n, before.n + 1);
    tdb_names_free(&before);
    tdb_names_free(&after);
    free(n1);
    free(n2);
    free(n3);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* On disk: the commit file is the last thing written, empty, and no
 * temporary file is left behind. */
static void test_posix_commit(void)
{
    char tmpl[] = "/tmp/tdbwriteXXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    char src[1024];
    snprintf(src, sizeof src, "%s/dense_1d_basic/array", corpus);
    struct tdb_io from, arr, stg;
    CHECK_EQ_INT(tdb_io_posix(&from, src), 0);
    CHECK_EQ_INT(tdb_io_posix(&arr, tmpl), 0);
    CHECK_EQ_INT(unit_copy_tree(&from, "__schema", &arr, "__schema"), 0);
    CHECK_EQ_INT(tdb_io_mem(&stg), 0);
    stage_dense_1d(&stg, "w", 7);
    char *nm = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "w", NULL, 3, &nm, &err), 0);
    char p[600];
    uint64_t sz = 1;
    snprintf(p, sizeof p, "__commits/%s.wrt", nm ? nm : "");
    CHECK_EQ_INT(tdb_io_size(&arr, p, &sz, NULL), 0);
    CHECK_EQ_INT(sz, 0);
    struct tdb_names fn = {0};
    snprintf(p, sizeof p, "__fragments/%s", nm ? nm : "");
    CHECK_EQ_INT(tdb_io_names(&arr, p, &fn, NULL), 0);
    CHECK_EQ_INT(fn.n, 3); /* __fragment_metadata.tdb a0.tdb a1.tdb */
    for (size_t i = 0; i < fn.n; i++)
        CHECK(!strcmp(fn.v[i], "__fragment_metadata.tdb") ||
              !strcmp(fn.v[i], "a0.tdb") || !strcmp(fn.v[i], "a1.tdb"));
    tdb_names_free(&fn);
    struct tdb_fs *fs = fs_open(&arr, NULL);
    uint64_t gn = 0;
    uint8_t *got = fs ? fs_file(fs, "b", &gn) : NULL;
    double b7;
    if (got)
        memcpy(&b7, got + 8 * 7, 8);
    CHECK(got && gn == 400 && b7 == 3.5 + 7);
    free(got);
    tdb_fs_close(fs);
    free(nm);
    tdb_io_free(&from);
    tdb_io_free(&arr);
    tdb_io_free(&stg);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    CHECK_EQ_INT(system(cmd), 0);
}

/* ----------------------------------------------------------- bad input */

/* Writes staged folder "w" and expects TDB_E_INVAL naming `file`, with
 * the array's folder unchanged. */
static void expect_inval(const struct tdb_io *arr, const struct tdb_io *stg,
                         const char *file, const char *why)
{
    struct tdb_buf before = {0}, after = {0};
    snapshot(arr, "", &before);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = tdb_fragment_write(arr, stg, "w", NULL, 9, &nm, &err);
    snapshot(arr, "", &after);
    if (r != TDB_E_INVAL || !strstr(err.msg, file) || (why && !strstr(err.msg, why)))
        fprintf(stderr, "  expected an error about %s (%s), got %d: %s\n", file,
                why ? why : "", r, err.msg);
    CHECK_EQ_INT(r, TDB_E_INVAL);
    CHECK(strncmp(err.msg, file, strlen(file)) == 0);
    CHECK(!why || strstr(err.msg, why) != NULL);
    CHECK(nm == NULL);
    CHECK(before.len == after.len &&
          (!before.len || !memcmp(before.data, after.data, before.len)));
    free(nm);
    tdb_buf_free(&before);
    tdb_buf_free(&after);
}

/* A valid staged write for dense_var_nullable's attributes over
 * [[0,1],[0,2]] (6 cells), into folder "w" of a fresh backend. */
static void stage_small_dense(struct tdb_io *stg)
{
    tdb_io_mem(stg);
    stg->ops->mkdir(stg->ctx, "w");
    uint8_t bytes[6 * 16];
    memset(bytes, 1, sizeof bytes);
    uint64_t off[6];
    for (int i = 0; i < 6; i++)
        tdb_st64((uint8_t *)&off[i], (uint64_t)i * 2);
    static const char *const var[] = {"s_ascii", "s_utf8", "c_char", "n_str"};
    for (int i = 0; i < 4; i++) {
        char p[64];
        snprintf(p, sizeof p, "w/%s", var[i]);
        put(stg, p, "aabbccddeeff", 12);
        snprintf(p, sizeof p, "w/%s.offsets", var[i]);
        put(stg, p, off, sizeof off);
    }
    put(stg, "w/fixchar", bytes, 6 * 4);
    put(stg, "w/n_i32", bytes, 6 * 4);
    put(stg, "w/n_f64x2", bytes, 6 * 16);
    put(stg, "w/n_u8", bytes, 6);
    static const char *const nul[] = {"n_i32", "n_str", "n_f64x2", "n_u8"};
    for (int i = 0; i < 4; i++) {
        char p[64];
        snprintf(p, sizeof p, "w/%s.validity", nul[i]);
        put(stg, p, bytes, 6);
    }
    put(stg, "w/__subarray.json", "[[0,1],[0,2]]", 13);
}

static void test_bad_dense(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &arr), 0);
    /* the valid write works (and makes the array non-empty) */
    stage_small_dense(&stg);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = tdb_fragment_write(&arr, &stg, "w", NULL, 1, &nm, &err);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    free(nm);
    tdb_io_free(&stg);

    uint64_t off[6];
    uint8_t two[6] = {1, 2, 1, 1, 1, 1};

    stage_small_dense(&stg);        /* missing field */
    stg.ops->remove(stg.ctx, "w/n_u8.validity");
    expect_inval(&arr, &stg, "n_u8.validity", "missing");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* missing offsets */
    stg.ops->remove(stg.ctx, "w/s_utf8.offsets");
    expect_inval(&arr, &stg, "s_utf8.offsets", "missing");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* wrong size */
    stg.ops->remove(stg.ctx, "w/n_i32");
    put(&stg, "w/n_i32", "abcdefgh", 8);
    expect_inval(&arr, &stg, "n_i32", "expected 24");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* offsets not ascending */
    for (int i = 0; i < 6; i++)
        tdb_st64((uint8_t *)&off[i], (uint64_t)(i == 3 ? 1 : i * 2));
    put(&stg, "w/c_char.offsets", off, sizeof off);
    expect_inval(&arr, &stg, "c_char.offsets", "not ascending");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* offsets past the end */
    for (int i = 0; i < 6; i++)
        tdb_st64((uint8_t *)&off[i], (uint64_t)(i * 3));
    put(&stg, "w/n_str.offsets", off, sizeof off);
    expect_inval(&arr, &stg, "n_str.offsets", "past the end");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* first offset not 0 */
    for (int i = 0; i < 6; i++)
        tdb_st64((uint8_t *)&off[i], (uint64_t)(i + 1));
    put(&stg, "w/s_ascii.offsets", off, sizeof off);
    expect_inval(&arr, &stg, "s_ascii.offsets", "must be 0");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* offsets file of the wrong size */
    stg.ops->remove(stg.ctx, "w/s_ascii.offsets");
    put(&stg, "w/s_ascii.offsets", off, 40);
    expect_inval(&arr, &stg, "s_ascii.offsets", "expected 48");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* validity not 0/1 */
    put(&stg, "w/n_i32.validity", two, 6);
    expect_inval(&arr, &stg, "n_i32.validity", "must be 0");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* region outside the domain */
    stg.ops->remove(stg.ctx, "w/__subarray.json");
    put(&stg, "w/__subarray.json", "[[11,12],[0,2]]", 15);
    expect_inval(&arr, &stg, "__subarray.json", "outside the domain");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* region lo > hi */
    stg.ops->remove(stg.ctx, "w/__subarray.json");
    put(&stg, "w/__subarray.json", "[[1,0],[0,2]]", 13);
    expect_inval(&arr, &stg, "__subarray.json", "lo > hi");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* not JSON */
    stg.ops->remove(stg.ctx, "w/__subarray.json");
    put(&stg, "w/__subarray.json", "[[0,1],", 7);
    expect_inval(&arr, &stg, "__subarray.json", NULL);
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* unknown file */
    put(&stg, "w/colour", "x", 1);
    expect_inval(&arr, &stg, "colour", "not a field");
    tdb_io_free(&stg);

    stage_small_dense(&stg);        /* __error is allowed */
    put(&stg, "w/__error", "old", 3);
    nm = NULL;
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "w", NULL, 2, &nm, &err), 0);
    free(nm);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* sparse_int64_2d: x, y INT64 in [-1000, 1000]; a INT32, s var ASCII, n
 * nullable FLOAT64; no duplicates. */
static void stage_small_sparse(struct tdb_io *stg, const int64_t *x,
                               const int64_t *y, int n)
{
    tdb_io_mem(stg);
    stg->ops->mkdir(stg->ctx, "w");
    put(stg, "w/x", x, (size_t)n * 8);
    put(stg, "w/y", y, (size_t)n * 8);
    int32_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    double d[8] = {0};
    uint64_t off[8];
    for (int i = 0; i < 8; i++)
        off[i] = (uint64_t)i;
    put(stg, "w/a", a, (size_t)n * 4);
    put(stg, "w/s", "abcdefgh", (size_t)n);
    put(stg, "w/s.offsets", off, (size_t)n * 8);
    put(stg, "w/n", d, (size_t)n * 8);
    put(stg, "w/n.validity", "\1\1\1\1\1\1\1\1", (size_t)n);
}

static void test_bad_sparse(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_int64_2d", &arr), 0);
    int64_t x[4] = {5, -3, 1000, -1000}, y[4] = {1, 2, 3, 4};
    stage_small_sparse(&stg, x, y, 4);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = tdb_fragment_write(&arr, &stg, "w", NULL, 1, &nm, &err);
    if (r)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_EQ_INT(r, 0);
    free(nm);
    tdb_io_free(&stg);

    int64_t xo[4] = {5, -3, 1001, 0};   /* coordinate outside the domain */
    stage_small_sparse(&stg, xo, y, 4);
    expect_inval(&arr, &stg, "x", "cell 2 (1001) is outside the domain");
    tdb_io_free(&stg);

    int64_t yo[4] = {1, -1001, 3, 4};
    stage_small_sparse(&stg, x, yo, 4);
    expect_inval(&arr, &stg, "y", "outside the domain");
    tdb_io_free(&stg);

    int64_t xd[4] = {7, 8, 7, 9}, yd[4] = {3, 3, 3, 3};   /* duplicates */
    stage_small_sparse(&stg, xd, yd, 4);
    expect_inval(&arr, &stg, "x", "cells 0 and 2");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* a dimension file too short */
    stg.ops->remove(stg.ctx, "w/y");
    put(&stg, "w/y", y, 24);
    expect_inval(&arr, &stg, "y", "expected 32");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* an attribute with another count */
    stg.ops->remove(stg.ctx, "w/a");
    put(&stg, "w/a", y, 20);
    expect_inval(&arr, &stg, "a", "expected 16");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* a dimension missing */
    stg.ops->remove(stg.ctx, "w/y");
    expect_inval(&arr, &stg, "y", "missing");
    tdb_io_free(&stg);

    stage_small_sparse(&stg, x, y, 4);  /* no cells */
    stg.ops->remove(stg.ctx, "w/x");
    put(&stg, "w/x", x, 0);
    expect_inval(&arr, &stg, "x", "no cells");
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* A sparse staged folder on disk whose dimension files are 256 MiB holes
 * (truncate -s) and whose attribute has 40 bytes: refused from the sizes
 * alone, naming the files and their sizes, without reading the holes (the
 * process's peak RSS grows by less than 64 MiB). */
static void test_sizes_checked_first(void)
{
    char tmpl[] = "/tmp/tdbsizesXXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    char p[1200];
    snprintf(p, sizeof p, "%s/w", tmpl);
    CHECK_EQ_INT(mkdir(p, 0700), 0);
    static const struct {
        const char *name;
        off_t size;
    } files[] = {
        {"x", (off_t)256 << 20}, {"y", (off_t)256 << 20}, {"a", 40},
        {"s", 8}, {"s.offsets", 64}, {"n", 64}, {"n.validity", 8},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/w/%s", tmpl, files[i].name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        CHECK(fd >= 0);
        CHECK_EQ_INT(ftruncate(fd, files[i].size), 0);
        close(fd);
    }
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_int64_2d", &arr), 0);
    CHECK_EQ_INT(tdb_io_posix(&stg, tmpl), 0);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    char *nm = NULL;
    struct tdb_error err = {0};
    int r = tdb_fragment_write(&arr, &stg, "w", NULL, 1, &nm, &err);
    getrusage(RUSAGE_SELF, &ru1);
    CHECK_EQ_INT(r, TDB_E_INVAL);
    CHECK(nm == NULL);
    CHECK(strstr(err.msg, "a: 40 bytes, expected 134217728") == err.msg);
    CHECK(strstr(err.msg, "x, 268435456 bytes") != NULL);
    long grew_kib = ru1.ru_maxrss - ru0.ru_maxrss;
    if (grew_kib >= 64 * 1024 || r != TDB_E_INVAL)
        fprintf(stderr, "  peak RSS grew by %ld KiB: %s\n", grew_kib, err.msg);
    CHECK(grew_kib < 64 * 1024);
    CHECK(!tdb_io_exists(&arr, "__fragments"));
    tdb_io_free(&arr);
    tdb_io_free(&stg);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    CHECK_EQ_INT(system(cmd), 0);
}

/* A __subarray.json in a sparse staged folder is refused (a sparse array
 * takes no region), whatever it holds. */
static void test_sparse_subarray_refused(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_int64_2d", &arr), 0);
    int64_t x[4] = {5, -3, 1000, -1000}, y[4] = {1, 2, 3, 4};
    stage_small_sparse(&stg, x, y, 4);
    put(&stg, "w/__subarray.json", "garbage{", 8);
    expect_inval(&arr, &stg, "__subarray.json", "sparse array takes no region");
    tdb_io_free(&stg);
    stage_small_sparse(&stg, x, y, 4);
    put(&stg, "w/__subarray.json", "[[0, 1], [0, 1]]", 16);
    expect_inval(&arr, &stg, "__subarray.json", "sparse");
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* sparse_dups allows duplicates: equal coordinates are all kept, in the
 * staged order. */
static void test_sparse_dups_kept(void)
{
    struct tdb_io arr, stg;
    CHECK_EQ_INT(array_from_case("sparse_dups", &arr), 0);
    tdb_io_mem(&stg);
    stg.ops->mkdir(stg.ctx, "w");
    int32_t x[5] = {50, 3, 50, 3, 50}, y[5] = {2, 7, 2, 7, 2};
    int32_t a[5] = {0, 1, 2, 3, 4};
    uint64_t off[5] = {0, 1, 2, 3, 4};
    put(&stg, "w/x", x, sizeof x);
    put(&stg, "w/y", y, sizeof y);
    put(&stg, "w/a", a, sizeof a);
    put(&stg, "w/s", "vwxyz", 5);
    put(&stg, "w/s.offsets", off, sizeof off);
    char *nm = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fragment_write(&arr, &stg, "w", NULL, 1, &nm, &err), 0);
    struct tdb_fs *fs = fs_open(&arr, NULL);
    uint64_t gn = 0;
    uint8_t *got = fs ? fs_file(fs, "a", &gn) : NULL;
    int32_t want[5] = {1, 3, 0, 2, 4};   /* (3,7) twice, then (50,2) thrice */
    CHECK(got && same_bytes("a", got, gn, (const uint8_t *)want, sizeof want));
    free(got);
    got = fs ? fs_file(fs, "s", &gn) : NULL;
    CHECK(got && same_bytes("s", got, gn, (const uint8_t *)"wyvxz", 5));
    free(got);
    tdb_fs_close(fs);
    free(nm);
    tdb_io_free(&stg);
    tdb_io_free(&arr);
}

/* ------------------------------------------------------------- threads */

/* The whole domain of dense_var_nullable (20 tiles of 4 attributes, 80
 * jobs) staged in folder "w" of stg. */
static void stage_var_nullable_domain(json_t *c, struct tdb_io *stg)
{
    CHECK_EQ_INT(tdb_io_mem(stg), 0);
    stg->ops->mkdir(stg->ctx, "w");
    struct sfiles s = {.n = 0};
    make_attr_files(json_object_get(c, "fields"), 12 * 14, 7, &s);
    for (size_t k = 0; k < s.n; k++) {
        char *p = tdb_path_join("w", s.v[k].name);
        put(stg, p, s.v[k].data, (size_t)s.v[k].size);
        free(p);
    }
    sfiles_free(&s);
}


/* The fragment folders fa of array a and fb of array b hold the same files
 * with the same bytes. */
static bool same_fragment(const struct tdb_io *a, const char *fa,
                          const struct tdb_io *b, const char *fb,
                          const char *what)
{
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "__fragments/%s", fa);
    snprintf(pb, sizeof pb, "__fragments/%s", fb);
    struct tdb_names na = {0}, nb = {0};
    bool ok = !tdb_io_names(a, pa, &na, NULL) && !tdb_io_names(b, pb, &nb, NULL) &&
              na.n == nb.n && na.n > 1;
    if (!ok)
        fprintf(stderr, "  %s: %zu files, expected %zu\n", what, nb.n, na.n);
    for (size_t i = 0; ok && i < na.n; i++) {
        char *x = tdb_path_join(pa, na.v[i]), *y = tdb_path_join(pb, na.v[i]);
        uint8_t *da = NULL, *db = NULL;
        uint64_t sa = 0, sb = 0;
        char w[1200];
        snprintf(w, sizeof w, "%s: %s", what, na.v[i]);
        ok = !tdb_io_read_file(a, x, &da, &sa, NULL) &&
             !tdb_io_read_file(b, y, &db, &sb, NULL) &&
             same_bytes(w, db, sb, da, sa);
        if (!ok)
            fprintf(stderr, "  %s differs or is missing\n", w);
        free(da);
        free(db);
        free(x);
        free(y);
    }
    tdb_names_free(&na);
    tdb_names_free(&nb);
    return ok;
}

/* Commits staged folder `dir` of stg into a with 1 thread and into b with
 * `threads`, at timestamp ts: the two fragments are the same bytes. */
static void commit_both(struct tdb_io *a, struct tdb_io *b, struct tdb_io *stg,
                        const char *dir, const uint8_t *key, uint64_t ts,
                        unsigned threads, const char *what)
{
    char *na = NULL, *nb = NULL;
    struct tdb_error err = {0};
    int r = tdb_fragment_write_threads(a, stg, dir, key, ts, 1, &na, &err);
    if (r)
        fprintf(stderr, "  %s, 1 thread: %s\n", what, err.msg);
    CHECK_EQ_INT(r, 0);
    /* the staged folder's marker names the first commit: not in b */
    r = tdb_fragment_write_threads(b, stg, dir, key, ts, threads, &nb, &err);
    if (r)
        fprintf(stderr, "  %s, %u threads: %s\n", what, threads, err.msg);
    CHECK_EQ_INT(r, 0);
    CHECK(na && nb && strcmp(na, nb) != 0);
    if (na && nb)
        CHECK(same_fragment(a, na, b, nb, what));
    free(na);
    free(nb);
}

/* Every fragment of corpus cases (dense in every tile and cell order,
 * sparse with Hilbert order and string dimensions, var-sized, nullable,
 * filter chains, chunked tiles) and a dense write of 20 tiles of 4
 * attributes (80 jobs, many more than the 2 per thread in flight),
 * committed with threads=1 and threads=2, 3, 8: every file of the fragment
 * folders is the same, byte for byte.  (Not the encrypted case: AES-GCM
 * draws a new IV per tile.) */
static void test_threads_same_bytes(void)
{
    static const char *const cases[] = {
        "dense_var_nullable", "dense_2d_all_types", "dense_3d",
        "dense_2d_colmajor", "dense_2d_tile_row_cell_col", "chunked_tiles",
        "filter_chains", "sparse_hilbert", "sparse_string_dim",
        "sparse_mixed_dims", "sparse_dups", NULL};
    static const unsigned threads[] = {2, 3, 8};
    for (int i = 0; cases[i]; i++) {
        json_t *c = load_case(cases[i]);
        CHECK(c != NULL);
        if (!c)
            continue;
        struct tdb_io a, b, stg;
        CHECK_EQ_INT(array_from_case(cases[i], &a), 0);
        CHECK_EQ_INT(array_from_case(cases[i], &b), 0);
        CHECK_EQ_INT(tdb_io_mem(&stg), 0);
        json_t *frags = json_object_get(c, "fragments");
        for (size_t k = 0; k < json_array_size(frags); k++) {
            char dir[32], what[300];
            snprintf(dir, sizeof dir, "s%zu", k);
            snprintf(what, sizeof what, "%s fragment %zu", cases[i], k);
            stage_case_frag(c, cases[i], k, &stg, dir);
            commit_both(&a, &b, &stg, dir, NULL, 10 + k, threads[k % 3], what);
        }
        tdb_io_free(&stg);
        tdb_io_free(&a);
        tdb_io_free(&b);
        json_decref(c);
    }
    /* dense_var_nullable (12 x 14, tiles 3 x 3): the whole domain */
    json_t *c = load_case("dense_var_nullable");
    CHECK(c != NULL);
    if (!c)
        return;
    struct tdb_io a, b, stg;
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &a), 0);
    CHECK_EQ_INT(array_from_case("dense_var_nullable", &b), 0);
    stage_var_nullable_domain(c, &stg);
    for (size_t k = 0; k < 3; k++)
        commit_both(&a, &b, &stg, "w", NULL, 20 + k, threads[k],
                    "dense_var_nullable, whole domain");
    tdb_io_free(&stg);
    tdb_io_free(&a);
    tdb_io_free(&b);
    json_decref(c);
}

/* A view of a backend that logs its mutating calls, one line each (the
 * call, the path, the offset, the length, a hash of the bytes); the
 * writer syncs its files from several threads. */
struct rec {
    const struct tdb_io *inner;
    struct tdb_buf log;
    pthread_mutex_t lock;
};

static void rec_line(struct rec *r, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->lock);
    tdb_buf_append(&r->log, line, (size_t)n);
    pthread_mutex_unlock(&r->lock);
}

static int rec_read_at(void *c, const char *path, uint64_t off, void *buf,
                       size_t len)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->read_at(in->ctx, path, off, buf, len);
}

static int rec_size(void *c, const char *path, uint64_t *size)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->size(in->ctx, path, size);
}

static int rec_list(void *c, const char *path, tdb_io_list_fn fn, void *arg)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->list(in->ctx, path, fn, arg);
}

static int rec_is_dir(void *c, const char *path, bool *is_dir)
{
    const struct tdb_io *in = ((struct rec *)c)->inner;
    return in->ops->is_dir(in->ctx, path, is_dir);
}

static int rec_write_at(void *c, const char *path, uint64_t off,
                        const void *buf, size_t len)
{
    struct rec *r = c;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const uint8_t *)buf)[i]) * 1099511628211ull;
    rec_line(r, "write %s %llu %zu %016llx\n", path, (unsigned long long)off,
             len, (unsigned long long)h);
    return r->inner->ops->write_at(r->inner->ctx, path, off, buf, len);
}

static int rec_mkdir(void *c, const char *path)
{
    struct rec *r = c;
    rec_line(r, "mkdir %s\n", path);
    return r->inner->ops->mkdir(r->inner->ctx, path);
}

static int rec_rename(void *c, const char *from, const char *to)
{
    struct rec *r = c;
    rec_line(r, "rename %s %s\n", from, to);
    return r->inner->ops->rename(r->inner->ctx, from, to);
}

static int rec_remove(void *c, const char *path)
{
    struct rec *r = c;
    rec_line(r, "remove %s\n", path);
    return r->inner->ops->remove(r->inner->ctx, path);
}

static int rec_sync(void *c, const char *path)
{
    struct rec *r = c;
    rec_line(r, "sync %s\n", path);
    return r->inner->ops->sync ? r->inner->ops->sync(r->inner->ctx, path) : 0;
}

static const struct tdb_io_ops rec_ops = {
    .read_at = rec_read_at, .size = rec_size, .list = rec_list,
    .is_dir = rec_is_dir, .write_at = rec_write_at, .mkdir = rec_mkdir,
    .rename = rec_rename, .remove = rec_remove, .sync = rec_sync,
};

static int rec_cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts each run of "sync " lines of text in place: the writer syncs a
 * fragment's files at once, in no order. */
static void rec_sort_syncs(char *text)
{
    char *p = text;
    while (*p) {
        if (strncmp(p, "sync ", 5)) {
            char *nl = strchr(p, '\n');
            p = nl ? nl + 1 : p + strlen(p);
            continue;
        }
        char *lines[256], *q = p;
        size_t n = 0;
        while (*q && !strncmp(q, "sync ", 5) && n < 256) {
            char *nl = strchr(q, '\n');
            size_t l = nl ? (size_t)(nl - q) + 1 : strlen(q);
            lines[n++] = strndup(q, l);
            q += l;
        }
        qsort(lines, n, sizeof *lines, rec_cmp_lines);
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(lines[i]);
            memcpy(p, lines[i], l);
            p += l;
            free(lines[i]);
        }
    }
}

/* The log with every occurrence of `name` replaced by "F" (a new string),
 * its runs of syncs sorted. */
static char *rec_text(const struct rec *r, const char *name)
{
    size_t n = r->log.len, k = strlen(name);
    char *out = malloc(n + 1), *o = out;
    const char *p = (const char *)r->log.data, *end = p + n;
    while (p < end) {
        if (k && (size_t)(end - p) >= k && !memcmp(p, name, k)) {
            *o++ = 'F';
            p += k;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    rec_sort_syncs(out);
    return out;
}

/* With threads=4 the array's storage sees the very calls of threads=1, in
 * the same order (but the fragment's syncs, at once in any order), with
 * the same bytes; and a commit whose n-th call fails,
 * for every n, with jobs still in flight, makes as many calls as with one
 * thread (it stops at the failure and cleans up), returns the error (or,
 * failing past the commit, commits) and leaves no fragment folder and no
 * commit file. */
static void test_threads_same_calls(void)
{
    json_t *c = load_case("dense_var_nullable");
    CHECK(c != NULL);
    if (!c)
        return;
    struct tdb_io stg;
    stage_var_nullable_domain(c, &stg);
    char *logs[2] = {NULL, NULL};
    static const unsigned threads[2] = {1, 4};
    for (int i = 0; i < 2; i++) {
        struct tdb_io arr;
        CHECK_EQ_INT(array_from_case("dense_var_nullable", &arr), 0);
        struct rec r = {&arr, {0}, PTHREAD_MUTEX_INITIALIZER};
        struct tdb_io io = {&rec_ops, &r};
        char *nm = NULL;
        struct tdb_error err = {0};
        int rc = tdb_fragment_write_threads(&io, &stg, "w", NULL, 9, threads[i],
                                            &nm, &err);
        if (rc)
            fprintf(stderr, "  %u threads: %s\n", threads[i], err.msg);
        CHECK_EQ_INT(rc, 0);
        logs[i] = rec_text(&r, nm ? nm : "?");
        tdb_buf_free(&r.log);
        free(nm);
        tdb_io_free(&arr);
    }
    size_t writes = 0;
    for (const char *p = logs[0]; (p = strstr(p, "write ")); p++)
        writes++;
    CHECK(writes >= 80);
    if (strcmp(logs[0], logs[1]))
        fprintf(stderr, "  1 thread:\n%s  4 threads:\n%s", logs[0], logs[1]);
    CHECK(!strcmp(logs[0], logs[1]));
    size_t calls = 0;
    for (const char *p = logs[0]; *p; p++)
        calls += *p == '\n';
    free(logs[0]);
    free(logs[1]);
    size_t committed = 0;
    uint64_t count1 = 0;
    for (uint64_t n = 1; n <= 2 * calls; n++) {
        /* odd runs: 1 thread, even: 4 threads, the same call failing */
        unsigned th = n % 2 ? 1 : 4;
        uint64_t at = (n + 1) / 2;
        struct tdb_io arr, fa;
        CHECK_EQ_INT(array_from_case("dense_var_nullable", &arr), 0);
        struct tdb_io_fault f = {at, false, 0, 0};
        CHECK_EQ_INT(tdb_io_faulty(&fa, &arr, &f), 0);
        char *nm = NULL;
        struct tdb_error err = {0};
        int rc = tdb_fragment_write_threads(&fa, &stg, "w", NULL, 9, th, &nm,
                                            &err);
        CHECK_EQ_INT(f.failed, 1);
        /* as many calls (the cleanup's included) as with 1 thread */
        if (th == 1)
            count1 = f.count;
        else
            CHECK_EQ_INT(f.count, count1);
        struct tdb_names fr = {0}, cm = {0};
        tdb_io_names(&arr, "__fragments", &fr, NULL);
        tdb_io_names(&arr, "__commits", &cm, NULL);
        if (rc) {
            CHECK(nm == NULL);
            CHECK_EQ_INT(fr.n, 0);
            CHECK_EQ_INT(cm.n, 0);
        } else {
            committed++;
            CHECK_EQ_INT(fr.n, 1);
            CHECK_EQ_INT(cm.n, 1);
        }
        tdb_names_free(&fr);
        tdb_names_free(&cm);
        free(nm);
        tdb_io_free(&fa);
        tdb_io_free(&arr);
    }
    /* only a failure after the rename into __commits still commits */
    CHECK(committed <= 2);
    tdb_io_free(&stg);
    json_decref(c);
}

/* The writer's threads keep a ZSTD context in their scratch from chunk to
 * chunk and tile to tile: tiles of several chunks, of several contents, at
 * levels from fast to the optimal parsers, interleaved on one scratch,
 * encode to the same bytes as with a fresh context for each chunk. */
static void test_zstd_context_same_bytes(void)
{
    static const int levels[] = {3, -5, 1, 6, 12, 17, 3};
    size_t n = 200000;
    uint8_t *data[3];
    for (int k = 0; k < 3; k++)
        data[k] = malloc(n);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        float v = (float)((i % 997) * 0.25) + (float)(x >> 29);
        memcpy(data[0] + (i & ~(size_t)3), &v, 4); /* noisy floats */
        data[1][i] = (uint8_t)("the quick brown fox "[i % 20] ^ (i / 4096));
        data[2][i] = (uint8_t)(x >> 24);           /* incompressible */
    }
    struct tdb_scratch *sc = calloc(1, sizeof *sc);
    for (size_t li = 0; li < sizeof levels / sizeof *levels; li++)
        for (int k = 0; k < 3; k++) {
            struct tdb_filter f = {.type = TDB_FILTER_ZSTD,
                                   .ops = &tdb_filter_zstd,
                                   .level = levels[li]};
            struct tdb_pipeline p = {.max_chunk_size = 65536, .n = 1, .f = &f};
            /* the slow parsers on a shorter tile */
            size_t len = levels[li] >= 12 ? n / 4 : n;
            struct tdb_tile_desc d = {.datatype = TDB_UINT8, .cell_size = 1,
                                      .version = TDB_WRITE_VERSION,
                                      .what = "zstd tile"};
            struct tdb_buf fresh = {0}, kept = {0};
            struct tdb_error err = {0};
            CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, data[k], len,
                                             &fresh, &err), 0);
            d.scratch = sc;
            CHECK_EQ_INT(tdb_pipeline_encode(&p, &d, data[k], len,
                                             &kept, &err), 0);
            CHECK(sc->filter_state[TDB_FILTER_ZSTD] != NULL);
            CHECK_EQ_INT(kept.len, fresh.len);
            CHECK(kept.len == fresh.len &&
                  !memcmp(kept.data, fresh.data, fresh.len));
            CHECK(fresh.len > 8 && tdb_le64(fresh.data) == (len + 65535) / 65536);
            tdb_buf_free(&fresh);
            tdb_buf_free(&kept);
        }
    tdb_scratch_free(sc);
    for (int k = 0; k < 3; k++)
        free(data[k]);
}

int main(void)
{
    corpus = unit_corpus();
    if (!unit_corpus_found())
        return 77; /* every test here needs it (the line is printed) */
    RUN(test_sizes_checked_first); /* first: it measures the peak RSS */
    RUN(test_sparse_subarray_refused);
    RUN(test_dense_partial_region);
    RUN(test_timestamp_after_newest);
    RUN(test_posix_commit);
    RUN(test_commit_twice);
    RUN(test_bad_dense);
    RUN(test_bad_sparse);
    RUN(test_sparse_dups_kept);
    RUN(test_roundtrip_dense);
    RUN(test_roundtrip_sparse);
    RUN(test_roundtrip_filters);
    RUN(test_roundtrip_encrypted);
    RUN(test_threads_same_bytes);
    RUN(test_threads_same_calls);
    RUN(test_zstd_context_same_bytes);
    return unit_done();
}
