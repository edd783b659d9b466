/* test_fragmeta_corpus.c: the fragment metadata of every fragment of the
 * reference corpus (format/model/fragmeta.c) against its case.json, and
 * real fragments' files cut at every length: an error, never a crash. */
#include "model/fragmeta.h"
#include "model/generic_tile.h"
#include "../support.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include "fixture.h"

/* ------------------------------------------------------------ the corpus */

/* Targeted look-ups in case.json (not a JSON parser): the object that
 * follows `"<key>": {`, and numbers after `"<field>": ` inside it. */
static const char *json_obj(const char *text, const char *key)
{
    char pat[512];
    fmt(pat, sizeof pat, "\"%s\": {", key);
    const char *p = strstr(text, pat);
    return p ? p + strlen(pat) : NULL;
}

static const char *json_field(const char *obj, const char *field)
{
    char pat[128];
    fmt(pat, sizeof pat, "\"%s\": ", field);
    const char *p = strstr(obj, pat);
    /* stay inside this fragment's entry: it ends at its "fields" */
    const char *stop = strstr(obj, "\"fields\"");
    if (!p || (stop && p > stop))
        return NULL;
    return p + strlen(pat);
}

/* Compares one bound of the non-empty domain with the JSON value at *pp. */
static bool ned_value_eq(const struct tdb_dim *dim, const struct tdb_range *r,
                         bool hi, const char **pp)
{
    const char *p = *pp;
    while (*p == ' ' || *p == ',' || *p == '[')
        p++;
    if (*p == '"') {
        const char *e = strchr(p + 1, '"');
        size_t n = (size_t)(e - p - 1);
        *pp = e + 1;
        const uint8_t *v = hi ? r->vhi : r->vlo;
        uint64_t vn = hi ? r->vhi_size : r->vlo_size;
        if (memchr(p + 1, '\\', n))
            return true;    /* escaped: not compared */
        return vn == n && memcmp(v, p + 1, n) == 0;
    }
    char *e;
    const uint8_t *b = hi ? r->hi : r->lo;
    bool ok;
    if (tdb_dt_is_float(dim->type)) {
        double want = strtod(p, &e);
        double got;
        if (tdb_dt_size(dim->type) == 4) {
            float f;
            memcpy(&f, b, 4);
            got = f;
        } else {
            memcpy(&got, b, 8);
        }
        ok = got == want || fabs(got - want) <= 1e-12 * fabs(want);
    } else if (tdb_dt_is_unsigned_int(dim->type)) {
        unsigned long long want = strtoull(p, &e, 10);
        uint64_t got = 0;
        memcpy(&got, b, tdb_dt_size(dim->type));
        ok = got == want;
    } else {
        long long want = strtoll(p, &e, 10);
        int64_t got = 0;
        switch (tdb_dt_size(dim->type)) {
        case 1: got = (int8_t)b[0]; break;
        case 2: got = (int16_t)tdb_le16(b); break;
        case 4: got = (int32_t)tdb_le32(b); break;
        default: got = (int64_t)tdb_le64(b); break;
        }
        ok = got == want;
    }
    *pp = e;
    return ok;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                                 : -1;
}

struct corpus_stats {
    int arrays, frags, matched, fields, cons;
};

static bool file_size_of(const char *dir, const char *frag, const char *file,
                         uint64_t *size)
{
    char p[4096];
    struct stat st;
    fmt(p, sizeof p, "%s/%s/%s", dir, frag, file);
    if (stat(p, &st) != 0)
        return false;
    *size = (uint64_t)st.st_size;
    return true;
}

/* Checks a list of tile offsets: ascending and inside the file. */
static void check_offsets(const char *what, const uint64_t *o, uint64_t n,
                          uint64_t file_size, uint64_t footer_file_size)
{
    CHECK_EQ_INT(file_size, footer_file_size);
    for (uint64_t i = 0; i < n; i++) {
        if (i > 0 && o[i] < o[i - 1]) {
            fprintf(stderr, "  %s: offsets not ascending at tile %llu\n",
                    what, (unsigned long long)i);
            CHECK(0);
            break;
        }
        if (o[i] >= file_size && !(o[i] == file_size && i + 1 == n)) {
            fprintf(stderr, "  %s: tile %llu at %llu beyond %llu bytes\n",
                    what, (unsigned long long)i, (unsigned long long)o[i],
                    (unsigned long long)file_size);
            CHECK(0);
            break;
        }
    }
}

/* Field f of fragment `name` (its files in absdir): its tiles and their
 * offsets against the sizes of its files. */
static void check_field(struct tdb_fragmeta *fm, uint32_t f,
                        const char *absdir, const char *name,
                        struct corpus_stats *st)
{
    struct tdb_error err = {0};
    int rc = tdb_fragmeta_load_field(fm, f, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  %s: %s\n", name, err.msg);
        return;
    }
    st->fields++;
    const struct tdb_field_tiles *t = &fm->tiles[f];
    uint64_t size = 0;
    bool have = file_size_of(absdir, name, fm->file_names[f], &size);
    if (fm->file_sizes[f] > 0 || have) {
        CHECK(have);
        check_offsets(fm->file_names[f], t->offsets, t->ntiles, size,
                      fm->file_sizes[f]);
    }
    if (fm->is_var[f]) {
        have = file_size_of(absdir, name, fm->file_var_names[f], &size);
        CHECK(have || fm->file_var_sizes[f] == 0);
        if (have)
            check_offsets(fm->file_var_names[f], t->var_offsets,
                          t->ntiles, size, fm->file_var_sizes[f]);
    }
    if (fm->is_nullable[f]) {
        have = file_size_of(absdir, name, fm->file_validity_names[f],
                            &size);
        CHECK(have);
        if (have)
            check_offsets(fm->file_validity_names[f],
                          t->validity_offsets, t->ntiles, size,
                          fm->file_validity_sizes[f]);
    }
    /* one tile per space tile (dense) or per sparse tile; the legacy
     * dense coords field holds none */
    if (!(fm->kinds[f] == TDB_FIELD_COORDS && fm->dense))
        CHECK_EQ_INT(t->ntiles, tdb_fragmeta_tile_num(fm));
}

/* Fragment `name` against its entry obj of case.json's fragment_info. */
static void check_info(const struct tdb_fragmeta *fm, const char *obj,
                       const char *name)
{
    const char *p;
    if ((p = json_field(obj, "timestamps"))) {
        unsigned long long a = 0, b = 0;
        sscanf(p, "[%llu, %llu]", &a, &b);
        CHECK_EQ_INT(fm->t1, a);
        CHECK_EQ_INT(fm->t2, b);
    }
    if ((p = json_field(obj, "dense")))
        CHECK_EQ_INT(fm->dense, strncmp(p, "true", 4) == 0);
    if ((p = json_field(obj, "format_version")))
        CHECK_EQ_INT(fm->version, strtoul(p, NULL, 10));
    if ((p = json_field(obj, "fragment_info_cell_num")))
        CHECK_EQ_INT(tdb_fragmeta_cell_num(fm), strtoull(p, NULL, 10));
    if (!(p = json_field(obj, "non_empty_domain")))
        return;
    if (strncmp(p, "null", 4) == 0) {
        CHECK(fm->ned_null);
        return;
    }
    CHECK(!fm->ned_null);
    p++; /* outer [ */
    for (uint32_t d = 0; d < fm->schema->ndims && !fm->ned_null; d++) {
        bool lo = ned_value_eq(&fm->schema->dims[d], &fm->ned[d], false, &p);
        bool hi = ned_value_eq(&fm->schema->dims[d], &fm->ned[d], true, &p);
        if (!lo || !hi)
            fprintf(stderr, "  %s: dim %u domain differs\n", name, d);
        CHECK(lo && hi);
        p = strchr(p, ']') + 1;
    }
}

static void check_fragment(const struct tdb_io *io, const char *root,
                           const char *rel, const char *fragdir,
                           const char *name, const struct tdb_schema_set *set,
                           const uint8_t *key, const char *json,
                           struct corpus_stats *st)
{
    struct tdb_fragmeta *fm = NULL;
    struct tdb_error err = {0};
    char fpath[4096], absdir[4096];
    fmt(fpath, sizeof fpath, "%s%s%s", fragdir, *fragdir ? "/" : "",
             name);
    fmt(absdir, sizeof absdir, "%s/%s%s%s", root, rel, *rel ? "/" : "",
             fragdir);
    int rc = fm_load(io, fpath, name, set, key, NULL, 0, &fm, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  %s/%s: %s\n", absdir, name, err.msg);
        return;
    }
    st->frags++;
    for (uint32_t f = 0; f < fm->nfields; f++)
        check_field(fm, f, absdir, name, st);
    rc = tdb_fragmeta_load_rtree(fm, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "  %s: %s\n", name, err.msg);
    else if (!fm->dense)
        CHECK_EQ_INT(fm->nmbrs, fm->sparse_tile_num);
    /* against case.json's fragment_info */
    const char *obj = json ? json_obj(json, name) : NULL;
    if (obj) {
        st->matched++;
        check_info(fm, obj, name);
    }
    tdb_fragmeta_free(fm);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks the consolidated fragment metadata files of the array: each
 * footer inside loads the same as the fragment's own. */
/* Footer i of consolidated fragment metadata cm (file p) loads as the
 * fragment's own file does. */
static void check_cons_footer(const struct tdb_io *io, const char *p,
                              const struct tdb_cons_fragmeta *cm, size_t i,
                              const struct tdb_schema_set *set,
                              const uint8_t *key, struct corpus_stats *st)
{
    struct tdb_error err = {0};
    char fp[4096];
    fmt(fp, sizeof fp, "__fragments/%s", cm->names[i]);
    struct tdb_fragmeta *a = NULL, *b = NULL;
    int rc = fm_load(io, fp, cm->names[i], set, key, cm->data + cm->offsets[i],
                     (size_t)cm->sizes[i], &a, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "  %s[%zu]: %s\n", p, i, err.msg);
    rc = fm_load(io, fp, cm->names[i], set, key, NULL, 0, &b, &err);
    CHECK_EQ_INT(rc, 0);
    if (a && b) {
        st->cons++;
        CHECK_EQ_INT(a->version, b->version);
        CHECK_EQ_INT(a->nfields, b->nfields);
        CHECK_EQ_INT(a->sparse_tile_num, b->sparse_tile_num);
        CHECK_EQ_INT(a->rtree_off, b->rtree_off);
        CHECK(a->schema == b->schema);
        /* the footer inside is the file's footer minus its length */
        CHECK_EQ_INT(cm->sizes[i], b->footer_size);
        for (uint32_t f = 0; f < a->nfields && f < b->nfields; f++) {
            CHECK_EQ_INT(a->file_sizes[f], b->file_sizes[f]);
            CHECK_EQ_INT(a->gt_tile_offsets[f], b->gt_tile_offsets[f]);
        }
        CHECK_MEM(a->ned[0].lo, b->ned[0].lo, 8);
        CHECK(tdb_fragmeta_load_field(a, 0, &err) == 0);
    }
    tdb_fragmeta_free(a);
    tdb_fragmeta_free(b);
}

static void check_cons(const struct tdb_io *io, const char *arr,
                       const struct tdb_schema_set *set, const uint8_t *key,
                       struct corpus_stats *st)
{
    char d[4096];
    fmt(d, sizeof d, "%s/__fragment_meta", arr);
    DIR *dir = opendir(d);
    if (!dir)
        return;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (!strstr(de->d_name, ".meta"))
            continue;
        char p[4096];
        fmt(p, sizeof p, "__fragment_meta/%s", de->d_name);
        struct tdb_cons_fragmeta *cm = NULL;
        struct tdb_error err = {0};
        int rc = tdb_cons_fragmeta_load(io, p, key, &cm, &err);
        CHECK_EQ_INT(rc, 0);
        if (rc) {
            fprintf(stderr, "  %s: %s\n", p, err.msg);
            continue;
        }
        CHECK(cm->n >= 2);
        for (size_t i = 0; i < cm->n; i++)
            check_cons_footer(io, p, cm, i, set, key, st);
        /* truncated consolidated footers fail */
        for (size_t n = 0; n < cm->sizes[0]; n++) {
            char fp[4096];
            fmt(fp, sizeof fp, "__fragments/%s", cm->names[0]);
            struct tdb_fragmeta *a = NULL;
            rc = fm_load(io, fp, cm->names[0], set, key,
                                   cm->data + cm->offsets[0], n, &a, &err);
            CHECK(rc < 0);
            tdb_fragmeta_free(a);
        }
        tdb_cons_fragmeta_free(cm);
    }
    closedir(dir);
}

/* A folder of the case holding an array: schemas, then every fragment. */
/* The schemas of array arr (io), oldest first, into set (v: room for
 * 64).  @return false when one is of a kind not supported (said on
 * stdout: the array is then not checked). */
static bool array_schemas(const char *arr, const struct tdb_io *io,
                          const uint8_t *key, struct tdb_schema_set *set)
{
    bool ok = true;
    char *names[64];
    size_t nn = 0;
    char sd[4096];
    fmt(sd, sizeof sd, "%s/__schema", arr);
    DIR *dir = opendir(sd);
    struct dirent *de;
    while (dir && (de = readdir(dir)))
        if (de->d_name[0] == '_' && strcmp(de->d_name, "__enumerations") &&
            nn < 64)
            names[nn++] = strdup(de->d_name);
    if (dir)
        closedir(dir);
    qsort(names, nn, sizeof *names, cmp_str);
    struct tdb_error err = {0};
    char lp[4096];
    fmt(lp, sizeof lp, "%s/__array_schema.tdb", arr);
    struct stat sst;
    if (stat(lp, &sst) == 0) {
        if (tdb_schema_load(io, "__array_schema.tdb", key, &set->v[set->n],
                            &err) == 0)
            set->n++;
        else
            fprintf(stderr, "  %s: %s\n", lp, err.msg);
    }
    for (size_t i = 0; i < nn; i++) {
        char p[4096];
        fmt(p, sizeof p, "__schema/%s", names[i]);
        int rc = tdb_schema_load(io, p, key, &set->v[set->n], &err);
        if (rc == TDB_E_UNSUPPORTED) {
            /* e.g. a filter not built yet: nothing here to check */
            printf("skip %s: %s\n", arr, err.msg);
            ok = false;
        } else {
            CHECK_EQ_INT(rc, 0);
        }
        if (rc == 0)
            set->n++;
        else if (rc != TDB_E_UNSUPPORTED)
            fprintf(stderr, "  %s/%s: %s\n", arr, p, err.msg);
        free(names[i]);
    }
    return ok;
}

static void check_array(const char *arr, const char *json,
                        const uint8_t *key, struct corpus_stats *st)
{
    struct tdb_io io;
    if (tdb_io_posix(&io, arr) != 0) {
        CHECK(0);
        return;
    }
    st->arrays++;
    struct tdb_schema *v[64];
    struct tdb_schema_set set = {v, 0};
    bool skip = !array_schemas(arr, &io, key, &set);
    /* fragments under __fragments/ and legacy ones at the root */
    const char *where[2] = {"__fragments", ""};
    for (int w = 0; w < 2 && !skip; w++) {
        char fd[4096];
        fmt(fd, sizeof fd, "%s/%s", arr, where[w]);
        DIR *dir = opendir(fd);
        struct dirent *de;
        while (dir && (de = readdir(dir))) {
            if (strncmp(de->d_name, "__", 2) != 0 || strchr(de->d_name, '.'))
                continue;
            char mp[4096];
            struct stat ms;
            fmt(mp, sizeof mp, "%s/%s/__fragment_metadata.tdb", fd,
                     de->d_name);
            if (stat(mp, &ms) != 0)
                continue;
            check_fragment(&io, arr, "", where[w], de->d_name, &set, key,
                           json, st);
        }
        if (dir)
            closedir(dir);
    }
    if (!skip)
        check_cons(&io, arr, &set, key, st);
    for (size_t i = 0; i < set.n; i++)
        tdb_schema_free(v[i]);
    tdb_io_free(&io);
}

/* Walks a case's folder tree for arrays (group members nest). */
static void walk(const char *dir, const char *json, const uint8_t *key,
                 struct corpus_stats *st, int depth)
{
    char p[4096];
    struct stat s1, s2;
    fmt(p, sizeof p, "%s/__schema", dir);
    bool is_arr = stat(p, &s1) == 0;
    fmt(p, sizeof p, "%s/__array_schema.tdb", dir);
    is_arr = is_arr || stat(p, &s2) == 0;
    if (is_arr) {
        check_array(dir, json, key, st);
        return;
    }
    if (depth > 6)
        return;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strncmp(de->d_name, "__", 2) == 0)
            continue;
        fmt(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &s1) == 0 && S_ISDIR(s1.st_mode))
            walk(p, json, key, st, depth + 1);
    }
    if (d)
        closedir(d);
}

static void test_corpus(void)
{
    const char *corpus = unit_corpus();
    DIR *d = opendir(corpus);
    CHECK(d != NULL);
    if (!d)
        return;
    struct corpus_stats st = {0};
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[4096];
        fmt(p, sizeof p, "%s/%s/case.json", corpus, de->d_name);
        char *json = unit_slurp(p, NULL);
        if (!json)
            continue;
        uint8_t key[32], *kp = NULL;
        const char *kh = strstr(json, "\"key_hex\": \"");
        if (kh) {
            kh += strlen("\"key_hex\": \"");
            for (int i = 0; i < 32; i++)
                key[i] = (uint8_t)(hexval(kh[2 * i]) << 4 |
                                   hexval(kh[2 * i + 1]));
            kp = key;
        }
        fmt(p, sizeof p, "%s/%s/array", corpus, de->d_name);
        walk(p, json, kp, &st, 0);
        free(json);
    }
    closedir(d);
    printf("corpus: %d arrays, %d fragments (%d checked against case.json), "
           "%d fields, %d consolidated footers\n",
           st.arrays, st.frags, st.matched, st.fields, st.cons);
    CHECK(st.frags > 50);
    CHECK(st.matched > 50);
    CHECK(st.cons >= 3);
}

/* The real version-1 and version-10 fragments, files cut at every length:
 * an error, never a crash. */
/* The fragment of array arr (io) to cut: `name` at the top (legacy), or
 * the last in __fragments; its name into fname, its folder into fdir. */
static void truncated_frag(const char *arr, const char *name, char *fname,
                           size_t nname, char *fdir, size_t ndir)
{
    if (name) {
        fmt(fname, nname, "%s", name);
        fmt(fdir, ndir, "%s", fname);
        return;
    }
    char p[4096];
    fmt(p, sizeof p, "%s/__fragments", arr);
    DIR *fd = opendir(p);
    struct dirent *de;
    fname[0] = 0;
    while (fd && (de = readdir(fd)))
        if (de->d_name[0] == '_')
            fmt(fname, nname, "%s", de->d_name);
    if (fd)
        closedir(fd);
    fmt(fdir, ndir, "__fragments/%s", fname);
}

/* The schemas of array arr (io), up to 4, into set->v. */
static void truncated_schemas(const char *arr, const struct tdb_io *io,
                              struct tdb_schema_set *set)
{
    struct tdb_error err = {0};
    if (tdb_schema_load(io, "__array_schema.tdb", NULL, &set->v[set->n],
                        &err) == 0)
        set->n++;
    char p[4096];
    fmt(p, sizeof p, "%s/__schema", arr);
    DIR *sd = opendir(p);
    struct dirent *de;
    while (sd && (de = readdir(sd))) {
        if (de->d_name[0] != '_' || set->n == 4 ||
            strcmp(de->d_name, "__enumerations") == 0)
            continue;
        char sp[600];
        fmt(sp, sizeof sp, "__schema/%s", de->d_name);
        if (tdb_schema_load(io, sp, NULL, &set->v[set->n], &err) == 0)
            set->n++;
    }
    if (sd)
        closedir(sd);
}

/* Every prefix of fragment fname's metadata all[0..size) fails to load,
 * or one of its fields or its R-tree does. */
static void truncated_prefixes(const char *fname, const uint8_t *all,
                               uint64_t size,
                               const struct tdb_schema_set *set)
{
    struct tdb_error err = {0};
    for (uint64_t n = 0; n < size; n++) {
        struct tdb_io mem;
        tdb_io_mem(&mem);
        char mp2[800];
        fmt(mp2, sizeof mp2, "fr/%s/__fragment_metadata.tdb", fname);
        mem.ops->write_at(mem.ctx, mp2, 0, all, (size_t)n);
        char fr[600];
        fmt(fr, sizeof fr, "fr/%s", fname);
        struct tdb_fragmeta *fm = NULL;
        int rc = fm_load(&mem, fr, fname, set, NULL, NULL, 0, &fm, &err);
        if (rc == 0) {
            int bad = 0;
            for (uint32_t f = 0; f < fm->nfields; f++)
                bad |= tdb_fragmeta_load_field(fm, f, &err) < 0;
            bad |= tdb_fragmeta_load_rtree(fm, &err) < 0;
            CHECK(bad);
            tdb_fragmeta_free(fm);
        }
        tdb_io_free(&mem);
    }
}

static void test_corpus_truncated(void)
{
    const char *corpus = unit_corpus();
    const char *cases[3][2] = {
        {"legacy_non_split_coords_v1_4_0",
         "__5dc2cc9cce204a189f825fd4919d0c55_1541540586869"},
        {"legacy_zero_var_chunks_v10",
         "__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10"},
        {"dense_1d_basic", NULL},
    };
    int done = 0;
    for (int c = 0; c < 3; c++) {
        char arr[4096];
        fmt(arr, sizeof arr, "%s/%s/array", corpus, cases[c][0]);
        struct tdb_io io;
        if (!unit_corpus_case(cases[c][0]))
            continue;
        tdb_io_posix(&io, arr);
        char fname[512], fdir[600];
        truncated_frag(arr, cases[c][1], fname, sizeof fname, fdir,
                       sizeof fdir);
        struct tdb_schema *sv[4];
        struct tdb_schema_set set = {sv, 0};
        truncated_schemas(arr, &io, &set);
        char mp[700];
        fmt(mp, sizeof mp, "%s/__fragment_metadata.tdb", fdir);
        uint8_t *all = NULL;
        uint64_t size = 0;
        struct tdb_error err = {0};
        CHECK(tdb_io_read_file(&io, mp, &all, &size, &err) == 0);
        truncated_prefixes(fname, all, size, &set);
        free(all);
        done++;
        for (size_t i = 0; i < set.n; i++)
            tdb_schema_free(sv[i]);
        tdb_io_free(&io);
    }
    CHECK_EQ_INT(done, 3);
}

int main(void)
{
    RUN_CORPUS(test_corpus);
    RUN_CORPUS(test_corpus_truncated);
    return unit_done();
}
