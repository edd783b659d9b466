/* test_fragmeta.c: fragment metadata (format/model/fragmeta.c): footers
 * of versions 3-23, the legacy layout, R-trees, tile offsets and
 * consolidated fragment metadata against hand-built bytes.
 * test_fragmeta_corpus.c reads every fragment of the reference corpus. */
#include "model/fragmeta.h"
#include "model/generic_tile.h"
#include "../support.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include "fixture.h"

/* ------------------------------------------------------------ a schema */

/* A schema built by hand: dims d0 (INT32 [0,99] extent 10) and optionally
 * d1 (var STRING_ASCII); attrs a (INT32), s (var CHAR, nullable). */
static struct tdb_schema *mk_schema(const char *name, bool var_dim,
                                    unsigned array_type)
{
    struct tdb_schema *s = calloc(1, sizeof *s);
    s->name = strdup(name);
    s->version = 22;
    s->array_type = array_type;
    s->capacity = 7;
    s->ndims = var_dim ? 2 : 1;
    s->dims = calloc(s->ndims, sizeof *s->dims);
    s->dims[0].name = strdup("d0");
    s->dims[0].type = TDB_INT32;
    s->dims[0].cell_val_num = 1;
    tdb_st32(s->dims[0].lo, 0);
    tdb_st32(s->dims[0].hi, 99);
    s->dims[0].has_extent = true;
    tdb_st32(s->dims[0].extent, 10);
    if (var_dim) {
        s->dims[1].name = strdup("d1");
        s->dims[1].type = TDB_STRING_ASCII;
        s->dims[1].cell_val_num = TDB_VAR_NUM;
    }
    s->nattrs = 2;
    s->attrs = calloc(2, sizeof *s->attrs);
    s->attrs[0].name = strdup("a");
    s->attrs[0].type = TDB_INT32;
    s->attrs[0].cell_val_num = 1;
    s->attrs[1].name = strdup("s");
    s->attrs[1].type = TDB_CHAR;
    s->attrs[1].cell_val_num = TDB_VAR_NUM;
    s->attrs[1].nullable = true;
    return s;
}

static void free_schema(struct tdb_schema *s)
{
    for (uint32_t i = 0; i < s->ndims; i++)
        free(s->dims[i].name);
    for (uint32_t i = 0; i < s->nattrs; i++)
        free(s->attrs[i].name);
    free(s->dims);
    free(s->attrs);
    free(s->name);
    free(s);
}

/* ------------------------------------------------------ footer builder */

struct footer_spec {
    uint32_t version;
    const char *schema_name;
    bool dense, var_dim, ts, del;
    int32_t lo, hi;             /* d0's non-empty domain */
    const char *slo, *shi;      /* d1's (var) */
    uint64_t stn, ltcn;
    uint32_t nsections;         /* v23: extra unknown sections */
};

/* Writes a footer the way TileDB lays it out; per-field list k entry i
 * holds 1000*k + i, except tile offsets, whose generic tiles sit at
 * gt_base + 100 * i. */
static void build_footer(struct tdb_buf *b, const struct footer_spec *fs,
                         uint32_t nattrs, uint32_t ndims, uint64_t gt_base)
{
    uint32_t v = fs->version;
    tdb_buf_put_u32(b, v);
    if (v >= 10) {
        tdb_buf_put_u64(b, strlen(fs->schema_name));
        tdb_buf_append(b, fs->schema_name, strlen(fs->schema_name));
    }
    tdb_buf_put_u8(b, fs->dense);
    tdb_buf_put_u8(b, 0);
    tdb_buf_put_i32(b, fs->lo);
    tdb_buf_put_i32(b, fs->hi);
    if (fs->var_dim) {
        size_t a = strlen(fs->slo), c = strlen(fs->shi);
        tdb_buf_put_u64(b, a + c);
        tdb_buf_put_u64(b, a);
        tdb_buf_append(b, fs->slo, a);
        tdb_buf_append(b, fs->shi, c);
    }
    tdb_buf_put_u64(b, fs->stn);
    tdb_buf_put_u64(b, fs->ltcn);
    if (v >= 14)
        tdb_buf_put_u8(b, fs->ts);
    if (v >= 15)
        tdb_buf_put_u8(b, fs->del);
    uint32_t nall = nattrs + ndims + 1 + fs->ts + 2 * fs->del;
    uint32_t nfix = v < 5 ? nattrs + 1 : nall, nvar = v < 5 ? nattrs : nall;
    for (uint32_t i = 0; i < nfix; i++)
        tdb_buf_put_u64(b, 1000 + i);
    for (uint32_t i = 0; i < nvar; i++)
        tdb_buf_put_u64(b, 2000 + i);
    if (v >= 7)
        for (uint32_t i = 0; i < nall; i++)
            tdb_buf_put_u64(b, 3000 + i);
    tdb_buf_put_u64(b, 0); /* R-tree at 0 */
    for (uint32_t i = 0; i < nfix; i++)
        tdb_buf_put_u64(b, gt_base + 100 * i);
    for (uint32_t k = 5; k < 7; k++)
        for (uint32_t i = 0; i < nvar; i++)
            tdb_buf_put_u64(b, 1000 * k + i);
    uint32_t lists = (v >= 7) + (v >= 11 ? 4 : 0);
    for (uint32_t k = 0; k < lists; k++)
        for (uint32_t i = 0; i < nall; i++)
            tdb_buf_put_u64(b, 1000 * (7 + k) + i);
    if (v >= 12)
        tdb_buf_put_u64(b, 12345);
    if (v >= 16)
        tdb_buf_put_u64(b, 23456);
    if (v >= 23) {
        tdb_buf_put_u32(b, fs->nsections);
        for (uint32_t i = 0; i < fs->nsections; i++) {
            tdb_buf_put_u64(b, 77 + i);
            tdb_buf_put_u32(b, 3);
            tdb_buf_append(b, "xyz", 3);
        }
    }
}

static void set_of(struct tdb_schema_set *set, struct tdb_schema **v,
                   size_t n)
{
    set->v = v;
    set->n = n;
}

/* Writes f<v>/__fragment_metadata.tdb with one processed condition
 * ("x.del") at offset 23456, where a footer of version >= 16 points. */
static void write_processed_file(struct tdb_io *io, uint32_t v)
{
    struct tdb_buf pc = {0}, gt = {0};
    struct tdb_error err = {0};
    tdb_buf_put_u64(&pc, 1);
    tdb_buf_put_u64(&pc, 5);
    tdb_buf_append(&pc, "x.del", 5);
    CHECK(tdb_generic_tile_encode(pc.data, pc.len,
                                  &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1},
                                  NULL, &gt, &err) == 0);
    char path[128];
    fmt(path, sizeof path, "f%u/__fragment_metadata.tdb", v);
    io->ops->remove(io->ctx, path);
    uint8_t *zeros = calloc(1, 23456);
    CHECK(io->ops->write_at(io->ctx, path, 0, zeros, 23456) == 0);
    CHECK(io->ops->write_at(io->ctx, path, 23456, gt.data, gt.len) == 0);
    free(zeros);
    tdb_buf_free(&pc);
    tdb_buf_free(&gt);
}

/* The footer's domain, tile counts and field numbering. */
static void check_footer_head(const struct tdb_fragmeta *fm,
                              const struct tdb_schema *s, uint32_t v,
                              int var)
{
    CHECK_EQ_INT(fm->version, v);
    CHECK_EQ_INT(fm->t1, 5);
    CHECK_EQ_INT(fm->t2, 6);
    CHECK(fm->schema == s);
    CHECK(!fm->dense && !fm->ned_null);
    CHECK_EQ_INT((int32_t)tdb_le32(fm->ned[0].lo), -3);
    CHECK_EQ_INT((int32_t)tdb_le32(fm->ned[0].hi), 42);
    if (var) {
        CHECK_EQ_INT(fm->ned[1].vlo_size, 2);
        CHECK_EQ_INT(fm->ned[1].vhi_size, 3);
        CHECK_MEM(fm->ned[1].vlo, "ab", 2);
        CHECK_MEM(fm->ned[1].vhi, "xyz", 3);
    }
    CHECK_EQ_INT(fm->sparse_tile_num, 5);
    CHECK_EQ_INT(fm->last_tile_cell_num, 3);
    CHECK_EQ_INT(tdb_fragmeta_cell_num(fm), 4 * 7 + 3);
    uint32_t nf = 2 + (v >= 5 ? s->ndims : 1) + (v >= 14) + 2 * (v >= 15);
    CHECK_EQ_INT(fm->nfields, nf);
}

/* The per-field sizes and file names: attribute a is disk field 0, s is
 * field 1, dims come after the coords slot (v5+). */
static void check_footer_files(const struct tdb_fragmeta *fm, uint32_t v)
{
    CHECK_EQ_INT(fm->file_sizes[0], 1000);
    CHECK_EQ_INT(fm->file_sizes[1], 1001);
    CHECK_EQ_INT(fm->file_sizes[2], v >= 5 ? 1003 : 1002);
    CHECK_EQ_INT(fm->file_var_sizes[1], 2001);
    CHECK_EQ_INT(fm->gt_tile_offsets[1], 4100);
    CHECK_EQ_INT(fm->gt_var_sizes[1], 6001);
    CHECK_EQ_INT(fm->file_validity_sizes[1], v >= 7 ? 3001 : 0);
    CHECK_EQ_INT(tdb_fragmeta_dim_field(fm, 0), 2);
    CHECK_EQ_INT(fm->kinds[2], v >= 5 ? TDB_FIELD_DIM : TDB_FIELD_COORDS);
    CHECK(strcmp(fm->file_names[0], v >= 9 ? "a0.tdb" : "a.tdb") == 0);
    CHECK(strcmp(fm->file_names[2], v >= 9   ? "d0.tdb"
                                    : v >= 5 ? "d0.tdb"
                                             : "__coords.tdb")
          == 0);
    CHECK(fm->file_var_names[1] != NULL);
    CHECK((fm->file_validity_names[1] != NULL) == (v >= 7));
    CHECK(fm->file_var_names[0] == NULL);
}

/* What later versions add: timestamps (14), delete fields (15),
 * statistics (11, 12), processed conditions (16), the schema name (10). */
static void check_footer_extras(struct tdb_fragmeta *fm,
                                const struct tdb_schema *s, uint32_t v)
{
    struct tdb_error err = {0};
    if (v >= 14) {
        int t = tdb_fragmeta_ts_field(fm);
        CHECK_EQ_INT(t, 2 + s->ndims);
        CHECK(strcmp(fm->file_names[t], "t.tdb") == 0);
        CHECK_EQ_INT(fm->file_sizes[t], 1000 + 3 + s->ndims);
    } else {
        CHECK_EQ_INT(tdb_fragmeta_ts_field(fm), -1);
    }
    if (v >= 15) {
        CHECK(strcmp(fm->file_names[fm->nfields - 1], "dci.tdb") == 0);
        CHECK_EQ_INT(fm->kinds[fm->nfields - 2], TDB_FIELD_DELETE_TS);
    }
    if (v >= 11) {
        CHECK_EQ_INT(fm->gt_null_counts[0], 11000);
        CHECK_EQ_INT(fm->gt_sums[1], 10001);
        CHECK(fm->gt_mins != NULL);
    } else {
        CHECK(fm->gt_mins == NULL);
    }
    CHECK_EQ_INT(fm->has_frag_mins_maxs, v >= 12);
    if (v >= 16) {
        /* read when asked for (an array with deletes) */
        CHECK_EQ_INT(fm->nprocessed, 0);
        CHECK_EQ_INT(tdb_fragmeta_load_processed(fm, &err), 0);
        CHECK_EQ_INT(fm->nprocessed, 1);
        CHECK(fm->nprocessed == 1 && strcmp(fm->processed[0], "x.del") == 0);
    }
    if (v >= 10)
        CHECK(strcmp(fm->schema_name, "__1_1_abc") == 0);
}

/* Every truncation of footer `b` is an error, never a crash; corrupt
 * bytes do not crash either. */
static void check_footer_cuts(const struct tdb_io *io, const char *path,
                              const char *name,
                              const struct tdb_schema_set *set,
                              struct tdb_buf *b, uint32_t v, int var)
{
    struct tdb_fragmeta *fm = NULL;
    struct tdb_error err = {0};
    for (size_t n = 0; n < b->len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, b->data, n);
        fm = NULL;
        int rc = fm_load(io, path, name, set, NULL, cut, n, &fm, &err);
        if (rc == 0) {
            fprintf(stderr, "  v%u var=%d: truncation to %zu accepted\n",
                    v, var, n);
            tdb_fragmeta_free(fm);
        }
        CHECK(rc < 0);
        free(cut);
    }
    for (size_t i = 0; i < b->len; i++) {
        uint8_t save = b->data[i];
        b->data[i] ^= 0xA5;
        fm = NULL;
        if (fm_load(io, path, name, set, NULL, b->data, b->len, &fm,
                    &err) == 0)
            tdb_fragmeta_free(fm);
        b->data[i] = save;
    }
}

/* One footer of version `v`, with or without a var-sized dim. */
static void check_footer_version(struct tdb_io *io, uint32_t v, int var)
{
    struct tdb_schema *s = mk_schema(
        v >= 10 ? "__1_1_abc" : "__array_schema.tdb", var, TDB_SPARSE);
    struct tdb_schema *sv[1] = {s};
    struct tdb_schema_set set;
    set_of(&set, sv, 1);
    struct footer_spec fs = {
        .version = v, .schema_name = "__1_1_abc", .var_dim = var,
        .lo = -3, .hi = 42, .slo = "ab", .shi = "xyz", .stn = 5,
        .ltcn = 3, .ts = v >= 14, .del = v >= 15, .nsections = 2};
    struct tdb_buf b = {0};
    build_footer(&b, &fs, 2, s->ndims, 4000);
    char name[64], path[128];
    fmt(name, sizeof name, "__5_6_%032d_%u", 0, v);
    /* versions >= 16 read processed conditions from the file: give the
     * file one */
    write_processed_file(io, v);
    fmt(path, sizeof path, "f%u", v);
    struct tdb_fragmeta *fm = NULL;
    struct tdb_error err = {0};
    int rc = fm_load(io, path, name, &set, NULL, b.data, b.len, &fm, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  v%u: %s\n", v, err.msg);
    } else {
        check_footer_head(fm, s, v, var);
        check_footer_files(fm, v);
        check_footer_extras(fm, s, v);
        tdb_fragmeta_free(fm);
    }
    check_footer_cuts(io, path, name, &set, &b, v, var);
    tdb_buf_free(&b);
    free_schema(s);
}

/* A footer of every version 3..23 parses from a buffer, maps the footer's
 * per-field lists to our field numbers, and every truncation fails. */
static void test_footer_versions(void)
{
    struct tdb_io io;
    CHECK(tdb_io_mem(&io) == 0);
    for (uint32_t v = 3; v <= 23; v++)
        for (int var = 0; var < 2; var++)
            if (!var || v >= 5)
                check_footer_version(&io, v, var);
    tdb_io_free(&io);
}

/* Writes one generic tile holding `n` u64 (a count first) at the end of
 * file `path`; @return its offset. */
static uint64_t put_u64_tile(struct tdb_io *io, const char *path,
                             const uint64_t *v, uint64_t n)
{
    struct tdb_buf raw = {0}, gt = {0};
    struct tdb_error err;
    uint64_t off = 0;
    io->ops->size(io->ctx, path, &off);
    tdb_buf_put_u64(&raw, n);
    for (uint64_t i = 0; i < n; i++)
        tdb_buf_put_u64(&raw, v[i]);
    CHECK(tdb_generic_tile_encode(raw.data, raw.len,
                                  &(struct tdb_gt_filtering){NULL, TDB_UINT64, 8},
                                  NULL, &gt, &err) == 0);
    CHECK(io->ops->write_at(io->ctx, path, off, gt.data, gt.len) == 0);
    tdb_buf_free(&raw);
    tdb_buf_free(&gt);
    return off;
}

static void *race_loads(void *arg)
{
    struct tdb_fragmeta *fm = arg;
    struct tdb_error err;
    for (uint32_t f = 0; f < fm->nfields; f++)
        tdb_fragmeta_load_field(fm, f, &err);
    tdb_fragmeta_load_rtree(fm, &err);
    return NULL;
}

/* Version 8 percent-encodes names in file names (with TileDB's table);
 * versions 5-7 use names as they are. */
static void test_v8_names(void)
{
    struct tdb_io io;
    CHECK(tdb_io_mem(&io) == 0);
    for (uint32_t v = 7; v <= 8; v++) {
        struct tdb_schema *s = mk_schema("__array_schema.tdb", false,
                                         TDB_SPARSE);
        free(s->attrs[0].name);
        s->attrs[0].name = strdup("x:y<z");
        struct tdb_schema *sv[1] = {s};
        struct tdb_schema_set set;
        set_of(&set, sv, 1);
        struct footer_spec fs = {.version = v, .lo = 1, .hi = 2, .stn = 1,
                                 .ltcn = 1};
        struct tdb_buf b = {0};
        build_footer(&b, &fs, 2, 1, 0);
        char name[80];
        fmt(name, sizeof name, "__1_1_%032d_%u", 1, v);
        struct tdb_fragmeta *fm = NULL;
        struct tdb_error err = {0};
        CHECK(fm_load(&io, "f", name, &set, NULL, b.data, b.len,
                                &fm, &err) == 0);
        if (fm) {
            CHECK(strcmp(fm->file_names[0],
                         v == 8 ? "x%3Ay%20z.tdb" : "x:y<z.tdb") == 0);
            CHECK(strcmp(fm->file_var_names[1], "s_var.tdb") == 0);
            CHECK(strcmp(fm->file_validity_names[1], "s_validity.tdb") == 0);
            tdb_fragmeta_free(fm);
        }
        tdb_buf_free(&b);
        free_schema(s);
    }
    tdb_io_free(&io);
}

/* Writes the R-tree (2 levels, root MBR then 3 leaves) as the first
 * generic tile of `mp`, in version `v`'s layout. */
static void put_rtree_tile(struct tdb_io *io, const char *mp, uint32_t v)
{
    struct tdb_buf rt = {0}, gt = {0};
    struct tdb_error err = {0};
    if (v < 5) {
        tdb_buf_put_u32(&rt, 1);
        tdb_buf_put_u32(&rt, 10);
        tdb_buf_put_u8(&rt, TDB_INT32);
    } else {
        tdb_buf_put_u32(&rt, 10);
    }
    tdb_buf_put_u32(&rt, 2);
    tdb_buf_put_u64(&rt, 1);
    tdb_buf_put_i32(&rt, 0);
    tdb_buf_put_i32(&rt, 50);
    tdb_buf_put_u64(&rt, 3);
    for (int i = 0; i < 3; i++) {
        tdb_buf_put_i32(&rt, i * 20);
        tdb_buf_put_i32(&rt, i * 20 + 5);
    }
    CHECK(tdb_generic_tile_encode(rt.data, rt.len,
                                  &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1},
                                  NULL, &gt, &err) == 0);
    CHECK(io->ops->write_at(io->ctx, mp, 0, gt.data, gt.len) == 0);
    tdb_buf_free(&rt);
    tdb_buf_free(&gt);
}

/* The offsets of the generic tiles a v9+ footer points at. */
struct tile_offs {
    uint64_t a, s, sv, ss, val, nc, bad, pc;
};

static void put_field_tiles(struct tdb_io *io, const char *mp,
                            struct tile_offs *t)
{
    uint64_t offs[3] = {0, 30, 77}, vs[3] = {8, 9, 10};
    t->a = put_u64_tile(io, mp, offs, 3);
    t->s = put_u64_tile(io, mp, offs, 3);
    t->sv = put_u64_tile(io, mp, offs, 3);
    t->ss = put_u64_tile(io, mp, vs, 3);
    t->val = put_u64_tile(io, mp, offs, 3);
    t->nc = put_u64_tile(io, mp, vs, 3);
    t->bad = put_u64_tile(io, mp, vs, 2);
    t->pc = put_u64_tile(io, mp, NULL, 0);
}

/* The footer's fixed part up to the per-field size lists. */
static void put_own_footer_head(struct tdb_buf *b, uint32_t v)
{
    tdb_buf_put_u32(b, v);
    if (v >= 10) {
        tdb_buf_put_u64(b, 9);
        tdb_buf_append(b, "__1_1_abc", 9);
    }
    tdb_buf_put_u8(b, 0);
    tdb_buf_put_u8(b, 0);
    tdb_buf_put_i32(b, 0);
    tdb_buf_put_i32(b, 45);
    tdb_buf_put_u64(b, 3);
    tdb_buf_put_u64(b, 2);
    if (v >= 14)
        tdb_buf_put_u8(b, 0);
    if (v >= 15)
        tdb_buf_put_u8(b, 0);
}

/* The footer, with the real generic-tile offsets `t`; @return the footer
 * length without the trailing length field (v10+). */
static uint64_t put_own_footer(struct tdb_buf *b, uint32_t v,
                               const struct tile_offs *t)
{
    uint32_t nall = 2 + 1 + 1, nfix = v < 5 ? 3 : nall,
             nvar = v < 5 ? 2 : nall;
    put_own_footer_head(b, v);
    for (uint32_t i = 0; i < nfix; i++)
        tdb_buf_put_u64(b, 100);
    for (uint32_t i = 0; i < nvar; i++)
        tdb_buf_put_u64(b, 200);
    if (v >= 7)
        for (uint32_t i = 0; i < nall; i++)
            tdb_buf_put_u64(b, 300);
    tdb_buf_put_u64(b, 0);
    uint64_t fixed[4] = {t->a, t->s, t->bad, t->a}; /* a, s, coords, d0 */
    for (uint32_t i = 0; i < nfix; i++)
        tdb_buf_put_u64(b, fixed[i]);
    for (uint32_t i = 0; i < nvar; i++)
        tdb_buf_put_u64(b, i == 1 ? t->sv : t->bad);
    for (uint32_t i = 0; i < nvar; i++)
        tdb_buf_put_u64(b, i == 1 ? t->ss : t->bad);
    if (v >= 7)
        for (uint32_t i = 0; i < nall; i++)
            tdb_buf_put_u64(b, i == 1 ? t->val : t->bad);
    if (v >= 11) {
        for (uint32_t k = 0; k < 3 * nall; k++)
            tdb_buf_put_u64(b, t->bad);
        for (uint32_t i = 0; i < nall; i++)
            tdb_buf_put_u64(b, i == 1 ? t->nc : t->bad);
    }
    if (v >= 12)
        tdb_buf_put_u64(b, t->bad);
    if (v >= 16)
        tdb_buf_put_u64(b, t->pc);
    uint64_t flen = b->len;
    if (v >= 10)
        tdb_buf_put_u64(b, flen);
    return flen;
}

/* Tile offsets, var sizes, validity offsets and the R-tree load from the
 * generic tiles, also with threads racing (v22). */
static void check_own_tiles(struct tdb_fragmeta *fm, uint32_t v)
{
    struct tdb_error err = {0};
    CHECK(tdb_fragmeta_load_field(fm, 1, &err) == 0);
    CHECK_EQ_INT(fm->tiles[1].ntiles, 3);
    CHECK(fm->tiles[1].offsets && fm->tiles[1].offsets[2] == 77);
    CHECK(fm->tiles[1].var_sizes && fm->tiles[1].var_sizes[1] == 9);
    CHECK((fm->tiles[1].validity_offsets != NULL) == (v >= 7));
    CHECK((fm->tiles[1].null_counts != NULL) == (v >= 11));
    /* second call: already loaded */
    CHECK(tdb_fragmeta_load_field(fm, 1, &err) == 0);
    CHECK(tdb_fragmeta_load_field(fm, 0, &err) == 0);
    CHECK_EQ_INT(fm->tiles[0].ntiles, 3);
    CHECK(tdb_fragmeta_load_field(fm, 99, &err) == TDB_E_INVAL);
    if (v == 22) {
        /* several threads race to load the same fields */
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, race_loads, fm);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        CHECK(fm->tiles[2].loaded && fm->tiles[2].ntiles == 3);
    }
    CHECK(tdb_fragmeta_load_rtree(fm, &err) == 0);
    CHECK_EQ_INT(fm->nmbrs, 3);
    if (fm->nmbrs == 3) {
        CHECK_EQ_INT((int32_t)tdb_le32(fm->mbrs[2].lo), 40);
        CHECK_EQ_INT((int32_t)tdb_le32(fm->mbrs[2].hi), 45);
    }
}

/* The file `mp` cut anywhere: an error, never a crash. */
static void check_own_cuts(const struct tdb_io *io, const char *mp,
                           const char *name,
                           const struct tdb_schema_set *set)
{
    uint8_t *all = NULL;
    uint64_t size = 0;
    struct tdb_error err = {0};
    CHECK(tdb_io_read_file(io, mp, &all, &size, &err) == 0);
    for (uint64_t n = 0; n < size; n++) {
        struct tdb_io io2;
        tdb_io_mem(&io2);
        io2.ops->write_at(io2.ctx, mp, 0, all, (size_t)n);
        struct tdb_fragmeta *fm = NULL;
        int rc = fm_load(&io2, "fr", name, set, NULL, NULL, 0, &fm, &err);
        if (rc == 0) {
            /* a cut before the footer only shows when tiles are read */
            int r1 = tdb_fragmeta_load_field(fm, 1, &err);
            int r2 = tdb_fragmeta_load_rtree(fm, &err);
            CHECK(r1 < 0 || r2 < 0);
            tdb_fragmeta_free(fm);
        }
        tdb_io_free(&io2);
    }
    free(all);
}

static void check_own_file_version(uint32_t v)
{
    struct tdb_io io;
    CHECK(tdb_io_mem(&io) == 0);
    struct tdb_schema *s = mk_schema(
        v >= 10 ? "__1_1_abc" : "__array_schema.tdb", false, TDB_SPARSE);
    struct tdb_schema *sv[1] = {s};
    struct tdb_schema_set set;
    set_of(&set, sv, 1);
    const char *mp = "fr/__fragment_metadata.tdb";
    struct tile_offs t;
    put_rtree_tile(&io, mp, v);
    put_field_tiles(&io, mp, &t);
    uint64_t end = 0;
    io.ops->size(io.ctx, mp, &end);
    struct tdb_buf b = {0};
    uint64_t flen = put_own_footer(&b, v, &t);
    CHECK(io.ops->write_at(io.ctx, mp, end, b.data, b.len) == 0);
    char name[80];
    if (v >= 5)
        fmt(name, sizeof name, "__3_4_%032d_%u", 7, v);
    else
        fmt(name, sizeof name, "__3_4_%032d", 7);
    struct tdb_fragmeta *fm = NULL;
    struct tdb_error err = {0};
    int rc = fm_load(&io, "fr", name, &set, NULL, NULL, 0, &fm, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  v%u: %s\n", v, err.msg);
    } else {
        CHECK_EQ_INT(fm->version, v < 5 ? (v == 3 ? 3 : 4) : v);
        CHECK_EQ_INT(fm->footer_size, flen);
        CHECK_EQ_INT(fm->footer_offset, end);
        CHECK_EQ_INT(fm->file_sizes[1], 100);
        CHECK_EQ_INT(tdb_fragmeta_cell_num(fm), 2 * 7 + 2);
        check_own_tiles(fm, v);
        tdb_fragmeta_free(fm);
    }
    check_own_cuts(&io, mp, name, &set);
    tdb_buf_free(&b);
    free_schema(s);
    tdb_io_free(&io);
}

/* A version-9 fragment with fixed dims has no footer length: its footer
 * size comes from the schema.  Tile offsets, var sizes, validity offsets
 * and the R-tree are read from generic tiles. */
static void test_own_file_v9_and_tiles(void)
{
    for (uint32_t v = 3; v <= 22; v += 1)
        check_own_file_version(v);
}

/* Dense cell counts cover whole tiles; names select versions. */
static void test_dense_cell_num_and_names(void)
{
    struct tdb_io io;
    CHECK(tdb_io_mem(&io) == 0);
    struct tdb_schema *s = mk_schema("__1_1_abc", false, TDB_DENSE);
    struct tdb_schema *sv[1] = {s};
    struct tdb_schema_set set;
    set_of(&set, sv, 1);
    CHECK(tdb_schema_set_find(&set, "__1_1_abc") == s);
    CHECK(tdb_schema_set_find(&set, "nope") == NULL);
    struct footer_spec fs = {.version = 12, .schema_name = "__1_1_abc",
                             .dense = true, .lo = 7, .hi = 23};
    struct tdb_buf b = {0};
    build_footer(&b, &fs, 2, 1, 0);
    struct tdb_fragmeta *fm = NULL;
    struct tdb_error err = {0};
    CHECK(fm_load(&io, "x", "__1_2_0123456789abcdef0123456789abcdef_12",
                            &set, NULL, b.data, b.len, &fm, &err) == 0);
    if (fm) {
        /* [7,23] with extent 10 from 0 touches tiles 0..2 */
        CHECK_EQ_INT(tdb_fragmeta_tile_num(fm), 3);
        CHECK_EQ_INT(tdb_fragmeta_cell_num(fm), 30);
        CHECK_EQ_INT(fm->t1, 1);
        CHECK_EQ_INT(fm->t2, 2);
        /* attributes match by name in another schema */
        struct tdb_schema *s2 = mk_schema("__2_2_x", false, TDB_DENSE);
        free(s2->attrs[0].name);
        s2->attrs[0].name = strdup("new");
        free(s2->attrs[1].name);
        s2->attrs[1].name = strdup("a");
        CHECK_EQ_INT(tdb_fragmeta_attr_field(fm, s2, 0), -1);
        CHECK_EQ_INT(tdb_fragmeta_attr_field(fm, s2, 1), 0);
        CHECK_EQ_INT(tdb_fragmeta_attr_field(fm, s2, 2), -1);
        free_schema(s2);
        tdb_fragmeta_free(fm);
    }
    /* an unknown schema name, bad names, an unknown version */
    fm = NULL;
    struct tdb_schema_set empty = {0};
    CHECK(fm_load(&io, "x", "__1_2_0123456789abcdef0123456789abcdef_12",
                            &empty, NULL, b.data, b.len, &fm, &err) ==
          TDB_E_NOENT);
    CHECK(strstr(err.msg, "__1_1_abc") != NULL);
    CHECK(fm_load(&io, "x", "junk", &set, NULL, b.data, b.len, &fm,
                            &err) == TDB_E_CORRUPT);
    CHECK(fm_load(&io, "x", "__2_1_0123456789abcdef0123456789abcdef_12",
                            &set, NULL, b.data, b.len, &fm, &err) ==
          TDB_E_CORRUPT);
    b.data[0] = 24;
    CHECK(fm_load(&io, "x", "__1_2_0123456789abcdef0123456789abcdef_12",
                            &set, NULL, b.data, b.len, &fm, &err) ==
          TDB_E_UNSUPPORTED);
    CHECK(fm_load(&io, "x", "__1_2_0123456789abcdef0123456789abcdef_4294967295",
                            &set, NULL, b.data, b.len, &fm, &err) ==
          TDB_E_UNSUPPORTED);
    tdb_fragmeta_free(NULL);
    tdb_cons_fragmeta_free(NULL);
    tdb_buf_free(&b);
    free_schema(s);
    tdb_io_free(&io);
}

/* A consolidated fragment metadata file built by hand; truncations fail. */
static void test_cons_built(void)
{
    struct tdb_io io;
    CHECK(tdb_io_mem(&io) == 0);
    struct tdb_buf raw = {0}, gt = {0};
    struct tdb_error err = {0};
    const char *names[2] = {"file:///x/__fragments/__1_1_u_8", "__2_2_v_9"};
    uint64_t off = 4;
    for (int i = 0; i < 2; i++)
        off += 16 + strlen(names[i]);
    tdb_buf_put_u32(&raw, 2);
    for (int i = 0; i < 2; i++) {
        tdb_buf_put_u64(&raw, strlen(names[i]));
        tdb_buf_append(&raw, names[i], strlen(names[i]));
        tdb_buf_put_u64(&raw, off + 10 * (uint64_t)i);
    }
    tdb_buf_append(&raw, "0123456789abcdefghijklmn", 24);
    CHECK(tdb_generic_tile_encode(raw.data, raw.len,
                                  &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1},
                                  NULL, &gt, &err) == 0);
    io.ops->write_at(io.ctx, "m.meta", 0, gt.data, gt.len);
    struct tdb_cons_fragmeta *cm = NULL;
    CHECK(tdb_cons_fragmeta_load(&io, "m.meta", NULL, &cm, &err) == 0);
    if (cm) {
        CHECK_EQ_INT(cm->n, 2);
        CHECK(strcmp(cm->names[0], "__1_1_u_8") == 0);
        CHECK(strcmp(cm->names[1], "__2_2_v_9") == 0);
        CHECK_EQ_INT(cm->offsets[1], off + 10);
        CHECK_EQ_INT(cm->sizes[0], 10);
        CHECK_EQ_INT(cm->sizes[1], 14);
        CHECK_MEM(cm->data + cm->offsets[1], "abcd", 4);
        tdb_cons_fragmeta_free(cm);
    }
    for (size_t n = 0; n + 24 < raw.len; n++) {
        struct tdb_buf g2 = {0};
        struct tdb_io io2;
        tdb_io_mem(&io2);
        tdb_generic_tile_encode(raw.data, n,
                                &(struct tdb_gt_filtering){NULL, TDB_UINT8, 1},
                                NULL, &g2, &err);
        io2.ops->write_at(io2.ctx, "m.meta", 0, g2.data, g2.len);
        cm = NULL;
        int rc = tdb_cons_fragmeta_load(&io2, "m.meta", NULL, &cm, &err);
        CHECK(rc < 0);
        if (rc == 0)
            tdb_cons_fragmeta_free(cm);
        tdb_buf_free(&g2);
        tdb_io_free(&io2);
    }
    tdb_buf_free(&raw);
    tdb_buf_free(&gt);
    tdb_io_free(&io);
}

int main(void)
{
    RUN(test_footer_versions);
    RUN(test_own_file_v9_and_tiles);
    RUN(test_dense_cell_num_and_names);
    RUN(test_v8_names);
    RUN(test_cons_built);
    return unit_done();
}
