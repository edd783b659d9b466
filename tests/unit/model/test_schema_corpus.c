/* test_schema_corpus.c: every schema of the reference corpus
 * (format/model/schema.c) against its case.json: dimensions, attributes,
 * enumerations, orders, filters, and a round trip of each. */
#include "../support.h"
#include "model/schema.h"
#include "model/generic_tile.h"

#include <math.h>
#include <stdint.h>
#include "fixture.h"

/* ------------------------------------------------------------- the corpus */

/* Flattens a case.json into lines the test reads (python3's json module, so
 * that the test needs no JSON parser of its own):
 *   ARRAY uri | TYPE dense|sparse tile cell | CAP n | DUPS 0|1 | KEY hex
 *   DIM namehex DATATYPE lohex hihex extenthex|-   or  DIM namehex T var
 *   ATTR namehex DATATYPE cvn nullable fillhex fill_valid(-1: absent)
 *   CD lohex hihex ... | ENUM namehex S|N values... | END
 * Strings are hex ("-" when empty); numbers packed as the datatype. */
static const char corpus_py[] =
    "import json,struct,sys\n"
    "F={\"INT8\":\"b\",\"UINT8\":\"B\",\"INT16\":\"h\",\"UINT16\":\"H\","
    "\"INT32\":\"i\",\"UINT32\":\"I\",\"INT64\":\"q\",\"UINT64\":\"Q\","
    "\"FLOAT32\":\"f\",\"FLOAT64\":\"d\",\"CHAR\":\"b\",\"BOOL\":\"B\"}\n"
    "def hx(s): return s.encode().hex() or \"-\"\n"
    "def enc(t,v): return struct.pack(\"<\"+F.get(t,\"q\"),v).hex()\n"
    "def arr(j,uri):\n"
    "  print(\"ARRAY\",uri)\n"
    "  print(\"TYPE\",j[\"array_type\"],j[\"tile_order\"],j[\"cell_order\"])\n"
    "  if \"capacity\" in j: print(\"CAP\",j[\"capacity\"])\n"
    "  if \"allows_duplicates\" in j: print(\"DUPS\","
    "int(j[\"allows_duplicates\"]))\n"
    "  if \"key_hex\" in j: print(\"KEY\",j[\"key_hex\"])\n"
    "  for d in j[\"dims\"]:\n"
    "    t=d[\"datatype\"]\n"
    "    if \"domain\" in d:\n"
    "      e=d.get(\"tile_extent\")\n"
    "      print(\"DIM\",hx(d[\"name\"]),t,enc(t,d[\"domain\"][0]),"
    "enc(t,d[\"domain\"][1]),\"-\" if e is None else enc(t,e))\n"
    "    else: print(\"DIM\",hx(d[\"name\"]),t,\"var\")\n"
    "  for f in j[\"fields\"].values():\n"
    "    if f[\"role\"]!=\"attr\": continue\n"
    "    c=f[\"cell_val_num\"]\n"
    "    print(\"ATTR\",hx(f[\"name\"]),f[\"datatype\"],"
    "4294967295 if c==\"var\" else c,int(f[\"nullable\"]),"
    "f[\"fill_hex\"] or \"-\",int(f.get(\"fill_valid\",-1)))\n"
    "  if j.get(\"view_source\")==\"current_domain\":\n"
    "    print(\"CD\",\" \".join(enc(d[\"datatype\"],v) for d,r in "
    "zip(j[\"dims\"],j[\"view_region\"]) for v in r))\n"
    "  for n,vs in j.get(\"enumerations\",{}).items():\n"
    "    if all(isinstance(v,str) for v in vs): "
    "print(\"ENUM\",hx(n),\"S\",\" \".join(hx(v) for v in vs))\n"
    "    else: print(\"ENUM\",hx(n),\"N\",\" \".join(repr(float(v)) "
    "for v in vs))\n"
    "  print(\"END\")\n"
    "def walk(m):\n"
    "  for v in m.values():\n"
    "    if v.get(\"kind\")==\"array\": arr(v,v[\"uri\"])\n"
    "    if \"members\" in v: walk(v[\"members\"])\n"
    "j=json.load(open(sys.argv[1]))\n"
    "if j.get(\"kind\")==\"group\": walk(j[\"members\"])\n"
    "else: arr(j,\".\")\n";

#define MAXV 32

struct exp_dim {
    char name[256], type[32];
    bool var, has_extent;
    uint8_t lo[8], hi[8], extent[8];
};

struct exp_attr {
    char name[256], type[32];
    uint32_t cvn;
    int nullable, fill_valid;
    uint8_t fill[256];
    size_t fill_size;
};

struct exp_enum {
    char name[256];
    bool strings;
    size_t n;
    char *vals[MAXV];          /* hex strings, or decimal numbers */
};

struct exp_array {
    char uri[256];
    char array_type[16], tile_order[16], cell_order[16];
    long long capacity, dups;
    bool has_key;
    uint8_t key[32];
    size_t ndims, nattrs, nenums;
    struct exp_dim dims[MAXV];
    struct exp_attr attrs[MAXV];
    bool has_cd;
    uint8_t cd[MAXV][2][8];
    struct exp_enum enums[MAXV];
};

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    if (!strcmp(s, "-"))
        return 0;
    while (s[0] && s[1] && n < cap) {
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void unhex_str(const char *s, char *out, size_t cap)
{
    size_t n = unhex(s, (uint8_t *)out, cap - 1);
    out[n] = '\0';
}

/* A DIM line's fields after its tag: name type (lo hi extent | var). */
static void exp_dim(struct exp_array *a, char **save)
{
    struct exp_dim *d = &a->dims[a->ndims++];
    unhex_str(strtok_r(NULL, " ", save), d->name, sizeof d->name);
    snprintf(d->type, sizeof d->type, "%s", strtok_r(NULL, " ", save));
    char *lo = strtok_r(NULL, " ", save);
    if (!strcmp(lo, "var")) {
        d->var = true;
        return;
    }
    unhex(lo, d->lo, 8);
    unhex(strtok_r(NULL, " ", save), d->hi, 8);
    d->has_extent = unhex(strtok_r(NULL, " ", save), d->extent, 8) > 0;
}

/* An ATTR line's: name type cvn nullable fill fill_valid. */
static void exp_attr(struct exp_array *a, char **save)
{
    struct exp_attr *t = &a->attrs[a->nattrs++];
    unhex_str(strtok_r(NULL, " ", save), t->name, sizeof t->name);
    snprintf(t->type, sizeof t->type, "%s", strtok_r(NULL, " ", save));
    t->cvn = (uint32_t)strtoul(strtok_r(NULL, " ", save), NULL, 10);
    t->nullable = atoi(strtok_r(NULL, " ", save));
    t->fill_size = unhex(strtok_r(NULL, " ", save), t->fill, sizeof t->fill);
    t->fill_valid = atoi(strtok_r(NULL, " ", save));
}

/* A CD line's (the current domain: lo hi of each dimension) and an ENUM
 * line's (name S|N values...). */
static void exp_cd(struct exp_array *a, char **save)
{
    a->has_cd = true;
    for (size_t i = 0; i < a->ndims; i++)
        for (int k = 0; k < 2; k++) {
            char *h = strtok_r(NULL, " ", save);
            if (h)
                unhex(h, a->cd[i][k], 8);
        }
}

static void exp_enum(struct exp_array *a, char **save)
{
    struct exp_enum *e = &a->enums[a->nenums++];
    unhex_str(strtok_r(NULL, " ", save), e->name, sizeof e->name);
    e->strings = !strcmp(strtok_r(NULL, " ", save), "S");
    char *v;
    while (e->n < MAXV && (v = strtok_r(NULL, " ", save)))
        e->vals[e->n++] = strdup(v);
}

/* One line of array a after its ARRAY line, its tag tok. */
static void exp_line(struct exp_array *a, const char *tok, char **save)
{
    if (!strcmp(tok, "TYPE")) {
        snprintf(a->array_type, 16, "%s", strtok_r(NULL, " ", save));
        snprintf(a->tile_order, 16, "%s", strtok_r(NULL, " ", save));
        snprintf(a->cell_order, 16, "%s", strtok_r(NULL, " ", save));
    } else if (!strcmp(tok, "CAP")) {
        a->capacity = atoll(strtok_r(NULL, " ", save));
    } else if (!strcmp(tok, "DUPS")) {
        a->dups = atoll(strtok_r(NULL, " ", save));
    } else if (!strcmp(tok, "KEY")) {
        a->has_key = unhex(strtok_r(NULL, " ", save), a->key, 32) == 32;
    } else if (!strcmp(tok, "DIM") && a->ndims < MAXV) {
        exp_dim(a, save);
    } else if (!strcmp(tok, "ATTR") && a->nattrs < MAXV) {
        exp_attr(a, save);
    } else if (!strcmp(tok, "CD")) {
        exp_cd(a, save);
    } else if (!strcmp(tok, "ENUM") && a->nenums < MAXV) {
        exp_enum(a, save);
    }
}

static int read_expectations(const char *case_json, struct exp_array *ex,
                             size_t max)
{
    const char *tmpl = "python3 -c '%s' '%s' 2>/dev/null";
    size_t len = strlen(tmpl) + sizeof corpus_py + strlen(case_json) + 1;
    char *cmd = malloc(len);
    if (!cmd)
        return -1;
    snprintf(cmd, len, tmpl, corpus_py, case_json);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    struct exp_array *a = NULL;
    while (getline(&line, &cap, p) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        if (!tok)
            continue;
        if (!strcmp(tok, "ARRAY")) {
            if ((size_t)n >= max)
                break;
            a = &ex[n++];
            memset(a, 0, sizeof *a);
            a->capacity = a->dups = -1;
            snprintf(a->uri, sizeof a->uri, "%s", strtok_r(NULL, " ", &save));
        } else if (a) {
            exp_line(a, tok, &save);
        }
    }
    free(line);
    int status = pclose(p);
    return status == 0 ? n : -1;
}

static void free_expectations(struct exp_array *ex, int n)
{
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < ex[i].nenums; j++)
            for (size_t k = 0; k < ex[i].enums[j].n; k++)
                free(ex[i].enums[j].vals[k]);
}

static unsigned order_of(const char *s)
{
    return !strcmp(s, "row-major")   ? TDB_ROW_MAJOR
           : !strcmp(s, "col-major") ? TDB_COL_MAJOR
           : !strcmp(s, "hilbert")   ? TDB_HILBERT
                                     : 99;
}

static void corpus_check_enum(const struct tdb_io *io, struct tdb_schema *s,
                              const struct exp_enum *x, const uint8_t *key,
                              const char *where)
{
    uint32_t i = 0;
    while (i < s->nenums && strcmp(s->enums[i].name, x->name))
        i++;
    CHECK(i < s->nenums);
    if (i == s->nenums)
        return;
    struct tdb_enumeration *e = &s->enums[i];
    struct tdb_error err = {0};
    int rc = tdb_enumeration_load(io, e, key, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "%s: %s\n", where, err.msg);
        return;
    }
    if (x->strings) {
        CHECK_EQ_INT(e->cell_val_num, TDB_VAR_NUM);
        CHECK_EQ_INT(e->offsets_size, 8 * x->n);
        for (size_t k = 0; k < x->n && e->offsets_size == 8 * x->n; k++) {
            uint64_t lo = tdb_le64(e->offsets + 8 * k);
            uint64_t hi = k + 1 < x->n ? tdb_le64(e->offsets + 8 * k + 8)
                                       : e->data_size;
            uint8_t want[256];
            size_t n = unhex(x->vals[k], want, sizeof want);
            CHECK_EQ_INT(hi - lo, n);
            if (hi - lo == n)
                CHECK_MEM(e->data + lo, want, n);
        }
    } else {
        unsigned sz = tdb_dt_size(e->type);
        CHECK(tdb_dt_is_float(e->type) || tdb_dt_is_integer(e->type));
        CHECK_EQ_INT(e->data_size, (uint64_t)sz * x->n);
        for (size_t k = 0; k < x->n && e->data_size == sz * x->n; k++) {
            double v = 0;
            if (e->type == TDB_FLOAT64) {
                memcpy(&v, e->data + 8 * k, 8);
            } else if (e->type == TDB_FLOAT32) {
                float f;
                memcpy(&f, e->data + 4 * k, 4);
                v = f;
            } else if (sz == 8) {
                v = (double)(int64_t)tdb_le64(e->data + 8 * k);
            } else if (sz == 4) {
                v = (double)(int32_t)tdb_le32(e->data + 4 * k);
            }
            CHECK(v == strtod(x->vals[k], NULL));
        }
    }
}

/* Dimension d of a schema against the case's e. */
static void corpus_check_dim(const struct tdb_dim *d, const struct exp_dim *e)
{
    unsigned sz = tdb_dt_size(d->type);
    CHECK(!strcmp(d->name, e->name));
    CHECK(tdb_dt_name(d->type) && !strcmp(tdb_dt_name(d->type), e->type));
    CHECK_EQ_INT(d->cell_val_num == TDB_VAR_NUM, e->var);
    if (e->var) {
        CHECK(!d->has_extent);
        return;
    }
    CHECK_MEM(d->lo, e->lo, sz);
    CHECK_MEM(d->hi, e->hi, sz);
    CHECK_EQ_INT(d->has_extent, e->has_extent);
    if (d->has_extent && e->has_extent)
        CHECK_MEM(d->extent, e->extent, sz);
}

/* The attributes of schema s against the case's x: the newest schema has
 * exactly the case's attributes, in order; an older one may miss some
 * (added later) or have others (dropped). */
static void corpus_check_attrs(const struct tdb_schema *s,
                               const struct exp_array *x, bool newest)
{
    if (newest)
        CHECK_EQ_INT(s->nattrs, x->nattrs);
    size_t matched = 0;
    for (size_t k = 0; k < x->nattrs; k++) {
        const struct exp_attr *e = &x->attrs[k];
        int i = tdb_schema_attr_index(s, e->name);
        if (i < 0) {
            CHECK(!newest);
            continue;
        }
        if (newest)
            CHECK_EQ_INT(i, k);
        matched++;
        const struct tdb_attr *a = &s->attrs[i];
        CHECK(tdb_dt_name(a->type) && !strcmp(tdb_dt_name(a->type), e->type));
        CHECK_EQ_INT(a->cell_val_num, e->cvn);
        CHECK_EQ_INT(a->nullable, e->nullable);
        CHECK_EQ_INT(a->fill_size, e->fill_size);
        if (a->fill_size == e->fill_size)
            CHECK_MEM(a->fill, e->fill, e->fill_size);
        if (e->fill_valid >= 0)
            CHECK_EQ_INT(a->fill_validity, e->fill_valid);
    }
    CHECK(matched > 0 || x->nattrs == 0);
}

static void corpus_check_schema(struct tdb_schema *s,
                                const struct exp_array *x, bool newest,
                                const char *where)
{
    int before = unit_cur_failed;
    unit_cur_failed = 0;
    CHECK_EQ_INT(s->array_type,
                 !strcmp(x->array_type, "dense") ? TDB_DENSE : TDB_SPARSE);
    CHECK_EQ_INT(s->tile_order, order_of(x->tile_order));
    CHECK_EQ_INT(s->cell_order, order_of(x->cell_order));
    if (x->capacity >= 0)
        CHECK_EQ_INT(s->capacity, x->capacity);
    if (x->dups >= 0)
        CHECK_EQ_INT(s->allows_dups, x->dups);
    CHECK_EQ_INT(s->encryption,
                 x->has_key ? TDB_AES_256_GCM : TDB_NO_ENCRYPTION);
    CHECK_EQ_INT(s->ndims, x->ndims);
    for (size_t i = 0; i < x->ndims && i < s->ndims; i++)
        corpus_check_dim(&s->dims[i], &x->dims[i]);
    corpus_check_attrs(s, x, newest);
    if (newest && x->has_cd) {
        CHECK(s->has_current_domain);
        for (size_t i = 0; s->has_current_domain && i < s->ndims; i++) {
            unsigned sz = tdb_dt_size(s->dims[i].type);
            CHECK_MEM(s->current_domain[i].lo, x->cd[i][0], sz);
            CHECK_MEM(s->current_domain[i].hi, x->cd[i][1], sz);
        }
    }
    if (unit_cur_failed)
        fprintf(stderr, "  ... in %s\n", where);
    unit_cur_failed |= before;
}

struct corpus_count {
    int arrays, schemas, enums;
};

/* Checks every schema of the array in folder `dir` (relative to io). */
/* The schema files of the array in dir (the legacy one first), up to
 * 64, into paths.  @return how many. */
static size_t corpus_schema_paths(const struct tdb_io *io, const char *dir,
                                  char **paths)
{
    struct tdb_names names = {0};
    struct tdb_error err = {0};
    char *sdir = tdb_path_join(dir, "__schema");
    char *legacy = tdb_path_join(dir, "__array_schema.tdb");
    size_t np = 0;
    if (tdb_io_exists(io, legacy))
        paths[np++] = strdup(legacy);
    if (tdb_io_names(io, sdir, &names, &err) == 0)
        for (size_t i = 0; i < names.n && np < 64; i++)
            if (!names.is_dir[i])
                paths[np++] = tdb_path_join(sdir, names.v[i]);
    tdb_names_free(&names);
    free(sdir);
    free(legacy);
    return np;
}

static void corpus_array(const struct tdb_io *io, const char *dir,
                         const struct exp_array *x, const char *casename,
                         struct corpus_count *cnt)
{
    struct tdb_error err = {0};
    char *paths[64];
    size_t np = corpus_schema_paths(io, dir, paths);
    CHECK(np > 0);
    cnt->arrays++;

    struct tdb_schema *sch[64] = {0};
    size_t newest = 0;
    for (size_t i = 0; i < np; i++) {
        char where[512];
        snprintf(where, sizeof where, "%s: %s", casename, paths[i]);
        int rc = tdb_schema_load(io, paths[i], x->has_key ? x->key : NULL,
                                 &sch[i], &err);
        CHECK_EQ_INT(rc, 0);
        if (rc) {
            fprintf(stderr, "  %s: %s\n", where, err.msg);
            continue;
        }
        cnt->schemas++;
        if (x->has_key) {
            struct tdb_schema *no = NULL;
            CHECK(tdb_schema_load(io, paths[i], NULL, &no, &err) < 0);
            tdb_schema_free(no);
        }
        if (!sch[newest] || sch[i]->t1 > sch[newest]->t1 ||
            (sch[i]->t1 == sch[newest]->t1 &&
             strcmp(sch[i]->name, sch[newest]->name) > 0))
            newest = i;
    }
    for (size_t i = 0; i < np; i++) {
        char where[512];
        snprintf(where, sizeof where, "%s: %s", casename, paths[i]);
        if (!sch[i])
            continue;
        corpus_check_schema(sch[i], x, i == newest, where);
        schema_roundtrip(sch[i]);
        if (i == newest)
            for (size_t k = 0; k < x->nenums; k++, cnt->enums++)
                corpus_check_enum(io, sch[i], &x->enums[k],
                                  x->has_key ? x->key : NULL, where);
    }
    for (size_t i = 0; i < np; i++) {
        tdb_schema_free(sch[i]);
        free(paths[i]);
    }
}

/* Finds array folders under `dir` (depth-first, a few levels deep). */
static void corpus_walk(const struct tdb_io *io, const char *dir, int depth,
                        struct exp_array *ex, int nex, const char *casename,
                        struct corpus_count *cnt)
{
    char *sdir = tdb_path_join(dir, "__schema");
    char *legacy = tdb_path_join(dir, "__array_schema.tdb");
    bool is_array = tdb_io_isdir(io, sdir) || tdb_io_exists(io, legacy);
    free(sdir);
    free(legacy);
    if (is_array) {
        const char *base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        const struct exp_array *x = NULL;
        for (int i = 0; i < nex && !x; i++)
            if (!strcmp(ex[i].uri, depth == 0 ? "." : base))
                x = &ex[i];
        CHECK(x != NULL);
        if (x)
            corpus_array(io, dir, x, casename, cnt);
        else
            fprintf(stderr, "  %s: no case.json entry for %s\n", casename,
                    dir);
        return;
    }
    if (depth >= 4)
        return;
    struct tdb_names names = {0};
    struct tdb_error err = {0};
    if (tdb_io_names(io, dir, &names, &err))
        return;
    for (size_t i = 0; i < names.n; i++) {
        if (!names.is_dir[i] || !strncmp(names.v[i], "__", 2))
            continue;
        char *sub = tdb_path_join(dir, names.v[i]);
        if (sub)
            corpus_walk(io, sub, depth + 1, ex, nex, casename, cnt);
        free(sub);
    }
    tdb_names_free(&names);
}

static void test_corpus(void)
{
    const char *root = unit_corpus();
    struct tdb_io io;
    struct tdb_names cases = {0};
    struct tdb_error err = {0};
    if (tdb_io_posix(&io, root)) {
        fprintf(stderr, "  test_corpus: cannot open %s\n", root);
        CHECK(0);
        return;
    }
    if (system("python3 -c 'import json,struct' >/dev/null 2>&1") != 0) {
        printf("skip test_corpus: python3 is needed to read case.json\n");
        tdb_io_free(&io);
        return;
    }
    tdb_io_names(&io, "", &cases, &err);
    static struct exp_array ex[16];
    struct corpus_count cnt = {0};
    int ncases = 0;
    for (size_t c = 0; c < cases.n; c++) {
        if (!cases.is_dir[c])
            continue;
        char *cj = tdb_path_join(cases.v[c], "case.json");
        char *full = cj ? tdb_path_join(root, cj) : NULL;
        char *arr = tdb_path_join(cases.v[c], "array");
        if (full && tdb_io_exists(&io, cj) && arr) {
            int n = read_expectations(full, ex, 16);
            CHECK(n > 0);
            if (n > 0) {
                ncases++;
                corpus_walk(&io, arr, 0, ex, n, cases.v[c], &cnt);
            } else {
                fprintf(stderr, "  %s: cannot read case.json\n", full);
            }
            free_expectations(ex, n);
        }
        free(cj);
        free(full);
        free(arr);
    }
    tdb_names_free(&cases);
    tdb_io_free(&io);
    CHECK(ncases > 0);
    printf("corpus: %d cases, %d arrays, %d schemas, %d enumerations\n",
           ncases, cnt.arrays, cnt.schemas, cnt.enums);
    CHECK(cnt.schemas >= cnt.arrays);
}

int main(void)
{
    RUN_CORPUS(test_corpus);
    return unit_done();
}
