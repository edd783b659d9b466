/* test_fragmeta_write.c: the builder of __fragment_metadata.tdb (format
 * version 22): byte-identical to TileDB 2.29 on corpus fragments, round
 * trips through the reader, encryption; the tile metadata generator's
 * typed min/max and sum loops of every numeric type, and the slabs of
 * dense column-major writes. */
#include "model/fragmeta.h"
#include "model/generic_tile.h"
#include "write/fragmeta_write.h"
#include "write/writer.h"
#include "fmw_fixture.h"
#include "../support.h"

#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>

/* --------------------------------------------- corpus: byte comparison */

/* Decodes tile t of `file` (tile offsets `offs`, ntiles, file size fsize)
 * with pipeline p into out (and the offsets the filter keeps, if any). */
static int decode_tile(const struct tdb_io *io, const char *path,
                       const uint64_t *offs, uint64_t ntiles, uint64_t fsize,
                       uint64_t t, const struct tdb_pipeline *p,
                       unsigned type, uint64_t cell_size, bool is_var,
                       struct tdb_buf *out, struct tdb_buf *kept)
{
    uint64_t end = t + 1 < ntiles ? offs[t + 1] : fsize;
    uint64_t len = end - offs[t];
    uint8_t *buf = malloc(len ? (size_t)len : 1);
    struct tdb_error err = {0};
    int rc = tdb_io_read(io, path, offs[t], buf, (size_t)len, &err);
    struct tdb_tile_desc d = {
        .datatype = type, .cell_size = cell_size, .version = 22,
        .is_var = is_var, .key = NULL, .what = path, .offsets = kept,
    };
    if (!rc)
        rc = tdb_pipeline_decode(p, &d, buf, (size_t)len, out, &err);
    if (rc)
        fprintf(stderr, "  decode %s tile %llu: %s\n", path,
                (unsigned long long)t, err.msg);
    free(buf);
    return rc;
}

/* Loads every schema of the array of io into set (at most 16). */
static void load_schemas(const struct tdb_io *io, struct tdb_schema_set *set)
{
    struct tdb_error err = {0};
    struct tdb_names names = {0};
    tdb_io_names(io, "__schema", &names, &err);
    for (size_t i = 0; i < names.n && set->n < 16; i++) {
        char sp[512];
        if (names.is_dir[i])
            continue;
        fm_fmt(sp, sizeof sp, "__schema/%s", names.v[i]);
        if (tdb_schema_load(io, sp, NULL, &set->v[set->n], &err) == 0)
            set->n++;
    }
    tdb_names_free(&names);
}

/* One field of a fragment being rebuilt: where its files are, its
 * pipeline, datatype and values per cell, and the buffers a tile of it
 * decodes into. */
struct rb_field {
    const struct tdb_io *io;
    const struct tdb_fragmeta *fm;
    uint32_t f;
    const struct tdb_pipeline *p;
    unsigned type;
    uint32_t cvn;
    char path[700], vpath[700], valpath[700];
    struct tdb_buf data, offb, val, kept;
};

/* Fills r for field f of fm (fragment folder fpath): a dimension without
 * filters of its own uses the coordinates' pipeline. */
static void rb_field_init(struct rb_field *r, const struct tdb_fragmeta *fm,
                          uint32_t f, const char *fpath)
{
    const struct tdb_schema *s = fm->schema;
    r->fm = fm;
    r->f = f;
    if (fm->kinds[f] == TDB_FIELD_DIM) {
        const struct tdb_dim *d = &s->dims[fm->index[f]];
        r->p = d->filters.n ? &d->filters : &s->coords_filters;
        r->type = d->type;
        r->cvn = d->cell_val_num;
    } else {
        const struct tdb_attr *a = &s->attrs[fm->index[f]];
        r->p = &a->filters;
        r->type = a->type;
        r->cvn = a->cell_val_num;
    }
    fm_fmt(r->path, sizeof r->path, "%s/%s", fpath, fm->file_names[f]);
    if (r->cvn == TDB_VAR_NUM)
        fm_fmt(r->vpath, sizeof r->vpath, "%s/%s", fpath, fm->file_var_names[f]);
    if (fm->is_nullable[f])
        fm_fmt(r->valpath, sizeof r->valpath, "%s/%s", fpath,
            fm->file_validity_names[f]);
}

/* Decodes the values and offsets of tile i of a var field into r (the
 * offsets r->p keeps, or the offsets file's); its cells into *ncells. */
static int rb_decode_var(struct rb_field *r, uint64_t i, const uint64_t **offs,
                         uint64_t *ncells)
{
    const struct tdb_fragmeta *fm = r->fm;
    const struct tdb_field_tiles *t = &fm->tiles[r->f];
    unsigned vs = tdb_dt_size(r->type);
    if (decode_tile(r->io, r->vpath, t->var_offsets, t->ntiles,
                    fm->file_var_sizes[r->f], i, r->p, r->type, vs, true,
                    &r->data, &r->kept))
        return -1;
    if (tdb_pipeline_skips_offsets(r->p, r->type, 22)) {
        *offs = (const uint64_t *)r->kept.data;
        *ncells = r->kept.len / 8;
        return 0;
    }
    if (decode_tile(r->io, r->path, t->offsets, t->ntiles,
                    fm->file_sizes[r->f], i, &fm->schema->offsets_filters,
                    TDB_UINT64, 8, false, &r->offb, NULL))
        return -1;
    *offs = (const uint64_t *)r->offb.data;
    *ncells = r->offb.len / 8;
    return 0;
}

/* Decodes tile i of field r and adds it to w.  @return 0, 1 when it could
 * not be decoded (said), -1 when w refused it (err). */
static int rb_tile(struct rb_field *r, uint64_t i, struct tdb_fmw *w,
                   struct tdb_error *err)
{
    const struct tdb_fragmeta *fm = r->fm;
    const struct tdb_field_tiles *t = &fm->tiles[r->f];
    bool var = r->cvn == TDB_VAR_NUM, nullable = fm->is_nullable[r->f];
    uint64_t cell = (uint64_t)r->cvn * tdb_dt_size(r->type), ncells = 0;
    const uint64_t *offs = NULL;
    tdb_buf_reset(&r->data);
    tdb_buf_reset(&r->offb);
    tdb_buf_reset(&r->val);
    tdb_buf_reset(&r->kept);
    if (var ? rb_decode_var(r, i, &offs, &ncells)
            : decode_tile(r->io, r->path, t->offsets, t->ntiles,
                          fm->file_sizes[r->f], i, r->p, r->type, cell, false,
                          &r->data, NULL))
        return 1;
    if (!var)
        ncells = r->data.len / cell;
    if (nullable &&
        decode_tile(r->io, r->valpath, t->validity_offsets, t->ntiles,
                    fm->file_validity_sizes[r->f], i,
                    &fm->schema->validity_filters, TDB_UINT8, 1, false,
                    &r->val, NULL))
        return 1;
    if (fm_add_tile(w, r->f, t->offsets[i], var ? t->var_offsets[i] : 0,
                 var ? t->var_sizes[i] : 0,
                 nullable ? t->validity_offsets[i] : 0, r->data.data,
                 r->data.len, offs, ncells, nullable ? r->val.data : NULL,
                 err))
        return -1;
    return 0;
}

/* Feeds field f of fm (folder fpath of io) to w: its file sizes, and for
 * all but a dense fragment's dimensions every tile.  As rb_tile. */
static int rb_field(const struct tdb_io *io, struct tdb_fragmeta *fm,
                    uint32_t f, const char *fpath, struct tdb_fmw *w,
                    struct tdb_error *err)
{
    struct rb_field r = {.io = io};
    tdb_fmw_set_file_sizes(w, f, fm->file_sizes[f], fm->file_var_sizes[f],
                           fm->file_validity_sizes[f]);
    if (fm->kinds[f] == TDB_FIELD_DIM && fm->dense)
        return 0;
    rb_field_init(&r, fm, f, fpath);
    if (tdb_fragmeta_load_field(fm, f, err))
        return -1;
    int rc = 0;
    for (uint64_t i = 0; !rc && i < fm->tiles[f].ntiles; i++)
        rc = rb_tile(&r, i, w, err);
    tdb_buf_free(&r.data);
    tdb_buf_free(&r.offb);
    tdb_buf_free(&r.val);
    tdb_buf_free(&r.kept);
    return rc;
}

/* A builder fed with the facts of fm (dense tiles in `layout`) but its
 * tiles, into *w.  @return 0 or an error (err). */
static int rb_start(const struct tdb_fragmeta *fm, unsigned layout,
                    struct tdb_fmw **w, struct tdb_error *err)
{
    const struct tdb_schema *s = fm->schema;
    if (tdb_fmw_create(w, s, fm->schema_name, fm->dense, err) ||
        tdb_fmw_set_ned(*w, fm->ned, err))
        return -1;
    if (fm->dense)
        tdb_fmw_set_dense_layout(*w, layout);
    for (uint64_t m = 0; m < fm->nmbrs; m++)
        if (tdb_fmw_add_mbr(*w, fm->mbrs + m * s->ndims, err))
            return -1;
    if (!fm->dense)
        tdb_fmw_set_sparse_tiles(*w, fm->sparse_tile_num,
                                 fm->last_tile_cell_num);
    return 0;
}

/* Rebuilds fragment fpath's metadata from fm and compares it with the
 * file mpath.  As rebuild_fragment; says why when it could not run. */
static int rb_compare(const struct tdb_io *io, struct tdb_fragmeta *fm,
                      const char *fpath, const char *mpath, const char *frag,
                      unsigned layout)
{
    struct tdb_error err = {0};
    struct tdb_fmw *w = NULL;
    struct tdb_buf out = {0};
    uint8_t *orig = NULL;
    uint64_t orig_size = 0;
    int rc = rb_start(fm, layout, &w, &err);
    for (uint32_t f = 0; !rc && f < fm->nfields; f++)
        rc = rb_field(io, fm, f, fpath, w, &err);
    if (!rc && (tdb_fmw_serialize(w, NULL, &out, &err) ||
                tdb_io_read_file(io, mpath, &orig, &orig_size, &err)))
        rc = -1;
    if (rc < 0)
        fprintf(stderr, "  %s: %s\n", frag, err.msg);
    int result = rc ? -1 : orig_size == out.len &&
                               memcmp(orig, out.data, out.len) == 0;
    free(orig);
    tdb_buf_free(&out);
    tdb_fmw_free(w);
    return result;
}

/* Feeds the facts of one corpus fragment to the builder and compares the
 * result with TileDB's own file.  @return 1 identical, 0 different, -1
 * could not run. */
static int rebuild_fragment(const char *arr, const char *frag, unsigned layout)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    if (tdb_io_posix(&io, arr) != 0)
        return -1;
    struct tdb_schema *sv[16];
    struct tdb_schema_set set = {sv, 0};
    load_schemas(&io, &set);
    char fpath[512], mpath[600];
    fm_fmt(fpath, sizeof fpath, "__fragments/%s", frag);
    fm_fmt(mpath, sizeof mpath, "%s/__fragment_metadata.tdb", fpath);
    struct tdb_fragmeta *fm = NULL;
    int result = -1;
    struct tdb_fragmeta_src src = {.io = &io, .path = fpath, .name = frag,
                                   .schemas = &set};
    if (tdb_fragmeta_load(&src, &fm, &err) ||
        tdb_fragmeta_load_rtree(fm, &err))
        fprintf(stderr, "  load %s: %s\n", fpath, err.msg);
    else if (fm->version != 22 || fm->has_timestamps || fm->has_delete_meta)
        fprintf(stderr, "  %s: not a plain v22 fragment, skipped\n", frag);
    else
        result = rb_compare(&io, fm, fpath, mpath, frag, layout);
    tdb_fragmeta_free(fm);
    for (size_t i = 0; i < set.n; i++)
        tdb_schema_free(sv[i]);
    tdb_io_free(&io);
    return result;
}

/* Rebuilds every fragment of corpus case `name`; @return fragments that
 * differ (-1: the case is absent or could not be read). */
static int rebuild_case(const char *name, int *same)
{
    char arr[512], fr[600];
    fm_fmt(arr, sizeof arr, "%s/%s/array", unit_corpus(), name);
    fm_fmt(fr, sizeof fr, "%s/__fragments", arr);
    DIR *dir = opendir(fr);
    if (!dir)
        return -1;
    struct dirent *e;
    int diff = 0;
    *same = 0;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] != '_' || strlen(e->d_name) < 10)
            continue;
        /* the corpus wrote dense fragments row-major, col-major or (by
         * consolidation) in global order; one of them must match */
        int r = 0;
        static const unsigned layouts[] = {TDB_ROW_MAJOR, TDB_COL_MAJOR,
                                           TDB_GLOBAL_ORDER};
        for (size_t k = 0; k < 3 && r == 0; k++)
            r = rebuild_fragment(arr, e->d_name, layouts[k]);
        if (r == 1) {
            (*same)++;
        } else {
            diff++;
            fprintf(stderr, "  %s/%s: not identical to TileDB's\n", name,
                    e->d_name);
        }
    }
    closedir(dir);
    return diff;
}

static void test_corpus_identical(void)
{
    /* cases whose every fragment must come out byte-identical */
    static const char *const must[] = {
        "dense_1d_basic", "sparse_int64_2d", "dense_2d_all_types",
        "dense_2d_tile_col_cell_row", "dense_var_nullable", "dense_3d",
        "consolidated_dense", "dense_2d_colmajor", "sparse_string_dim",
        "sparse_mixed_dims", "sparse_float64_dims", "sparse_datetime_int8",
        "sparse_hilbert", "chunked_tiles", "filter_rle", "filter_dictionary",
    };
    for (size_t i = 0; i < sizeof must / sizeof *must; i++) {
        if (!unit_corpus_case(must[i]))
            continue;
        int same = 0, diff = rebuild_case(must[i], &same);
        CHECK_EQ_INT(diff, 0);
        CHECK(same > 0);
    }
}

/* ------------------------------------------------ round trip (in memory) */

/* d0 INT32 [0,99] extent 10; attrs f FLOAT64, s var STRING_ASCII
 * nullable. */
static struct tdb_schema *rt_schema(unsigned array_type)
{
    struct tdb_schema *s = calloc(1, sizeof *s);
    s->name = strdup("__1_1_rtschema");
    s->version = 22;
    s->array_type = array_type;
    s->capacity = 4;
    s->ndims = 1;
    s->dims = calloc(1, sizeof *s->dims);
    s->dims[0].name = strdup("d0");
    s->dims[0].type = TDB_INT32;
    s->dims[0].cell_val_num = 1;
    tdb_st32(s->dims[0].lo, 0);
    tdb_st32(s->dims[0].hi, 99);
    s->dims[0].has_extent = true;
    tdb_st32(s->dims[0].extent, 10);
    s->nattrs = 2;
    s->attrs = calloc(2, sizeof *s->attrs);
    s->attrs[0].name = strdup("f");
    s->attrs[0].type = TDB_FLOAT64;
    s->attrs[0].cell_val_num = 1;
    s->attrs[1].name = strdup("s");
    s->attrs[1].type = TDB_STRING_ASCII;
    s->attrs[1].cell_val_num = TDB_VAR_NUM;
    s->attrs[1].nullable = true;
    return s;
}

static void rt_free_schema(struct tdb_schema *s)
{
    free(s->dims[0].name);
    free(s->attrs[0].name);
    free(s->attrs[1].name);
    free(s->dims);
    free(s->attrs);
    free(s->name);
    free(s);
}

/* Dense, d0 in [5, 24]: tiles [0,9] [10,19] [20,29]; f = 1.5 * d0; s is
 * "x" repeated (d0 % 4 + 1) times, null where d0 % 3 == 0; cells outside
 * the region hold zeros (validity 0, one zero byte). */
static int rt_dense(const uint8_t *key, struct tdb_schema *s,
                    struct tdb_buf *out, struct tdb_error *err)
{
    struct tdb_fmw *w;
    int rc = tdb_fmw_create(&w, s, s->name, true, err);
    if (rc)
        return rc;
    struct tdb_range ned = fm_range_i32(5, 24);
    rc = tdb_fmw_set_ned(w, &ned, err);
    uint64_t foff = 0, soff = 0, svoff = 0, vaoff = 0;
    for (int t = 0; t < 3 && rc == 0; t++) {
        uint8_t fv[80], sv[64], val[10];
        uint64_t offs[10], vsize = 0;
        for (int c = 0; c < 10; c++) {
            int x = t * 10 + c;
            bool in = x >= 5 && x <= 24;
            double d = in ? 1.5 * x : 0;
            uint64_t u;
            memcpy(&u, &d, 8);
            tdb_st64(fv + 8 * c, u);
            offs[c] = vsize;
            val[c] = in && x % 3 != 0;
            int n = in ? x % 4 + 1 : 1;
            for (int k = 0; k < n; k++)
                sv[vsize++] = in ? 'x' : 0;
        }
        rc = fm_add_tile(w, 0, foff, 0, 0, 0, fv, 80, NULL, 10, NULL,
                              err);
        if (!rc)
            rc = fm_add_tile(w, 1, soff, svoff, vsize, vaoff, sv, vsize,
                                  offs, 10, val, err);
        foff += 100;
        soff += 90;
        svoff += 40 + vsize;
        vaoff += 30;
    }
    if (!rc)
        rc = tdb_fmw_set_file_sizes(w, 0, foff, 0, 0);
    if (!rc)
        rc = tdb_fmw_set_file_sizes(w, 1, soff, svoff, vaoff);
    if (!rc)
        rc = tdb_fmw_serialize(w, key, out, err);
    tdb_fmw_free(w);
    return rc;
}

/* The dense fragment's facts: its domain, tiles, cells and file sizes. */
static void dense_check_facts(const struct tdb_fragmeta *fm)
{
    CHECK_EQ_INT(fm->version, 22);
    CHECK(fm->dense);
    CHECK(!fm->ned_null);
    CHECK_EQ_INT((int32_t)tdb_le32(fm->ned[0].lo), 5);
    CHECK_EQ_INT((int32_t)tdb_le32(fm->ned[0].hi), 24);
    CHECK_EQ_INT(tdb_fragmeta_tile_num(fm), 3);
    CHECK_EQ_INT(tdb_fragmeta_cell_num(fm), 30);
    CHECK_EQ_INT(fm->last_tile_cell_num, 10);
    CHECK_EQ_INT(fm->nfields, 3);
    CHECK_EQ_INT(fm->file_sizes[0], 300);
    CHECK_EQ_INT(fm->file_sizes[1], 270);
    CHECK_EQ_INT(fm->file_validity_sizes[1], 90);
    CHECK_EQ_INT(fm->file_sizes[2], 0);
}

/* The dense fragment's tile offsets, var sizes and null counts. */
static void dense_check_tiles(struct tdb_fragmeta *fm)
{
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_fragmeta_load_field(fm, 0, &err), 0);
    CHECK_EQ_INT(tdb_fragmeta_load_field(fm, 1, &err), 0);
    const struct tdb_field_tiles *f = &fm->tiles[0], *t = &fm->tiles[1];
    CHECK_EQ_INT(f->ntiles, 3);
    CHECK_EQ_INT(f->offsets[2], 200);
    CHECK_EQ_INT(t->ntiles, 3);
    CHECK_EQ_INT(t->offsets[1], 90);
    /* var sizes: tile 0 has 5 outside bytes + 2+3+4+1+2, tile 1 has
     * 3+4+1+2+3+4+1+2+3+4, tile 2 has 1+2+3+4+1 + 5 outside */
    CHECK_EQ_INT(t->var_sizes[0], 17);
    CHECK_EQ_INT(t->var_sizes[1], 27);
    CHECK_EQ_INT(t->var_sizes[2], 16);
    CHECK_EQ_INT(t->var_offsets[1], 57);
    CHECK_EQ_INT(t->validity_offsets[2], 60);
    CHECK(t->null_counts != NULL);
    if (t->null_counts) {
        /* TileDB reads a var attribute's validity from the tile's first
         * cell for each slab: tile 0's slab [5,10) sees cells 0-4, all 0 */
        CHECK_EQ_INT(t->null_counts[0], 5);
        CHECK_EQ_INT(t->null_counts[1], 3);
        CHECK_EQ_INT(t->null_counts[2], 2);
    }
}

/* The FLOAT64 tile mins and sums of the dense fragment, and the
 * fragment's. */
static void dense_check_stats(struct tdb_io *io, const struct tdb_fragmeta *fm)
{
    struct tdb_buf g = {0};
    CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_mins[0], &g), 0);
    CHECK_EQ_INT(g.len, 16 + 24);
    if (g.len == 40) {
        CHECK(fm_f64(g.data + 16) == 7.5);
        CHECK(fm_f64(g.data + 24) == 15.0);
        CHECK(fm_f64(g.data + 32) == 30.0);
    }
    CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_sums[0], &g), 0);
    CHECK_EQ_INT(g.len, 8 + 24);
    if (g.len == 32) {
        CHECK(fm_f64(g.data + 8) == 52.5);
        CHECK(fm_f64(g.data + 16) == 217.5);
        CHECK(fm_f64(g.data + 24) == 165.0);
    }
    CHECK(fm->has_frag_mins_maxs);
    CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_frag_mins_maxs, &g), 0);
    /* f: 8 min 8 max sum nulls; s: min "" (tile 0 counts as not all
     * null, 5 of 10 cells, so its empty min counts), max "xxxx";
     * __coords: 4+4 bytes; d0: nothing */
    static const uint8_t s_part[] = {
        0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
        'x', 'x', 'x', 'x', 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0,
    };
    CHECK_EQ_INT(g.len, (8 + 8 + 8 + 8 + 16) + sizeof s_part +
                            (8 + 4 + 8 + 4 + 16) + 32);
    if (g.len > 48 + sizeof s_part) {
        CHECK(fm_f64(g.data + 8) == 7.5);
        CHECK(fm_f64(g.data + 24) == 36.0);
        CHECK(fm_f64(g.data + 32) == 435.0);
        CHECK_MEM(g.data + 48, s_part, sizeof s_part);
    }
    tdb_buf_free(&g);
}

static void test_roundtrip_dense(void)
{
    struct tdb_schema *s = rt_schema(TDB_DENSE);
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    struct tdb_io io;
    struct tdb_fragmeta *fm = NULL;
    CHECK_EQ_INT(rt_dense(NULL, s, &b, &err), 0);
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    CHECK_EQ_INT(fm_roundtrip(&io, &b, s, NULL, NULL, &fm, &err), 0);
    if (!fm) {
        fprintf(stderr, "  %s\n", err.msg);
    } else {
        dense_check_facts(fm);
        dense_check_tiles(fm);
        dense_check_stats(&io, fm);
        CHECK_EQ_INT(tdb_fragmeta_load_rtree(fm, &err), 0);
        CHECK_EQ_INT(fm->nmbrs, 0);
    }
    tdb_fragmeta_free(fm);
    tdb_io_free(&io);
    tdb_buf_free(&b);
    rt_free_schema(s);
}

/* Sparse: cells 3 7 8 20 | 50 51; s = "a" "bb" null "ccc" | "d" null.
 * The fragment's metadata built into b. */
static void sparse_build(struct tdb_fmw *w, struct tdb_buf *b)
{
    struct tdb_error err = {0};
    static const int32_t coords[6] = {3, 7, 8, 20, 50, 51};
    static const char *const str[6] = {"a", "bb", "", "ccc", "d", ""};
    static const uint8_t valid[6] = {1, 1, 0, 1, 1, 0};
    for (int t = 0; t < 2; t++) {
        int c0 = t * 4, n = t ? 2 : 4;
        uint8_t fv[32], dv[16], sv[16];
        uint64_t offs[4], vsize = 0;
        for (int c = 0; c < n; c++) {
            double d = coords[c0 + c] * 0.25;
            uint64_t u;
            memcpy(&u, &d, 8);
            tdb_st64(fv + 8 * c, u);
            tdb_st32(dv + 4 * c, (uint32_t)coords[c0 + c]);
            offs[c] = vsize;
            memcpy(sv + vsize, str[c0 + c], strlen(str[c0 + c]));
            vsize += strlen(str[c0 + c]);
        }
        CHECK_EQ_INT(fm_add_tile(w, 0, 100 * (uint64_t)t, 0, 0, 0, fv,
                              8 * (uint64_t)n, NULL, (uint64_t)n, NULL,
                              &err), 0);
        CHECK_EQ_INT(fm_add_tile(w, 1, 50 * (uint64_t)t, 20 * (uint64_t)t,
                              vsize, 30 * (uint64_t)t, sv, vsize, offs,
                              (uint64_t)n, valid + c0, &err), 0);
        CHECK_EQ_INT(fm_add_tile(w, 2, 40 * (uint64_t)t, 0, 0, 0, dv,
                              4 * (uint64_t)n, NULL, (uint64_t)n, NULL,
                              &err), 0);
        struct tdb_range mbr = fm_range_i32(coords[c0], coords[c0 + n - 1]);
        CHECK_EQ_INT(tdb_fmw_add_mbr(w, &mbr, &err), 0);
    }
    tdb_fmw_set_sparse_tiles(w, 2, 2);
    struct tdb_range ned = fm_range_i32(3, 51);
    CHECK_EQ_INT(tdb_fmw_set_ned(w, &ned, &err), 0);
    CHECK_EQ_INT(tdb_fmw_set_file_sizes(w, 2, 80, 0, 0), 0);
    CHECK_EQ_INT(tdb_fmw_serialize(w, NULL, b, &err), 0);
}

/* The sparse fragment's facts, its tiles and MBRs. */
static void sparse_check_fields(struct tdb_fragmeta *fm)
{
    struct tdb_error err = {0};
    CHECK(!fm->dense);
    CHECK_EQ_INT(fm->sparse_tile_num, 2);
    CHECK_EQ_INT(fm->last_tile_cell_num, 2);
    CHECK_EQ_INT(tdb_fragmeta_cell_num(fm), 6);
    CHECK_EQ_INT((int32_t)tdb_le32(fm->ned[0].lo), 3);
    CHECK_EQ_INT((int32_t)tdb_le32(fm->ned[0].hi), 51);
    CHECK_EQ_INT(fm->file_sizes[2], 80);
    CHECK_EQ_INT(tdb_fragmeta_load_field(fm, 1, &err), 0);
    CHECK_EQ_INT(tdb_fragmeta_load_field(fm, 2, &err), 0);
    const struct tdb_field_tiles *t = &fm->tiles[1];
    CHECK_EQ_INT(t->ntiles, 2);
    CHECK_EQ_INT(t->var_sizes[0], 6);
    CHECK_EQ_INT(t->var_sizes[1], 1);
    CHECK_EQ_INT(t->var_offsets[1], 20);
    CHECK_EQ_INT(t->validity_offsets[1], 30);
    CHECK(t->null_counts != NULL);
    if (t->null_counts) {
        CHECK_EQ_INT(t->null_counts[0], 1);
        CHECK_EQ_INT(t->null_counts[1], 1);
    }
    CHECK_EQ_INT(fm->tiles[2].offsets[1], 40);
    CHECK_EQ_INT(tdb_fragmeta_load_rtree(fm, &err), 0);
    CHECK_EQ_INT(fm->nmbrs, 2);
    if (fm->nmbrs == 2) {
        CHECK_EQ_INT((int32_t)tdb_le32(fm->mbrs[0].lo), 3);
        CHECK_EQ_INT((int32_t)tdb_le32(fm->mbrs[0].hi), 20);
        CHECK_EQ_INT((int32_t)tdb_le32(fm->mbrs[1].lo), 50);
        CHECK_EQ_INT((int32_t)tdb_le32(fm->mbrs[1].hi), 51);
    }
}

/* The sparse fragment's R-tree (fanout 10, two levels, root [3,51]) and
 * its dimension's tile sums (sparse dims have sums, no min/max). */
static void sparse_check_rtree_sums(struct tdb_io *io,
                                    const struct tdb_fragmeta *fm)
{
    struct tdb_buf g = {0};
    CHECK_EQ_INT(fm_read_gt(io, fm, fm->rtree_off, &g), 0);
    static const uint8_t rt[] = {
        10, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0,
        51, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 20, 0, 0, 0,
        50, 0, 0, 0, 51, 0, 0, 0,
    };
    CHECK_EQ_INT(g.len, sizeof rt);
    if (g.len == sizeof rt)
        CHECK_MEM(g.data, rt, sizeof rt);
    CHECK_EQ_INT(fm_read_gt(io, fm, fm->gt_sums[2], &g), 0);
    CHECK_EQ_INT(g.len, 24);
    if (g.len == 24) {
        CHECK_EQ_INT(tdb_le64(g.data), 2);
        CHECK_EQ_INT(tdb_le64(g.data + 8), 38);
        CHECK_EQ_INT(tdb_le64(g.data + 16), 101);
    }
    tdb_buf_free(&g);
}

static void test_roundtrip_sparse(void)
{
    struct tdb_schema *s = rt_schema(TDB_SPARSE);
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    struct tdb_io io;
    struct tdb_fragmeta *fm = NULL;
    struct tdb_fmw *w = NULL;
    CHECK_EQ_INT(tdb_fmw_create(&w, s, s->name, false, &err), 0);
    if (w) {
        sparse_build(w, &b);
        CHECK_EQ_INT(tdb_io_mem(&io), 0);
        CHECK_EQ_INT(fm_roundtrip(&io, &b, s, NULL, NULL, &fm, &err), 0);
        if (!fm) {
            fprintf(stderr, "  %s\n", err.msg);
        } else {
            sparse_check_fields(fm);
            sparse_check_rtree_sums(&io, fm);
        }
        tdb_fragmeta_free(fm);
        tdb_io_free(&io);
    }
    tdb_fmw_free(w);
    tdb_buf_free(&b);
    rt_free_schema(s);
}

/* ------------------------------------------------------------ encryption */

static void test_encrypted(void)
{
    uint8_t key[32], bad[32];
    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)(i * 7 + 1);
        bad[i] = key[i];
    }
    bad[31] ^= 1;
    struct tdb_schema *s = rt_schema(TDB_DENSE);
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    struct tdb_io io;
    struct tdb_fragmeta *fm = NULL;
    CHECK_EQ_INT(rt_dense(key, s, &b, &err), 0);
    uint8_t enc = 0;
    CHECK_EQ_INT(tdb_generic_tile_encryption(b.data, b.len, &enc), 0);
    CHECK_EQ_INT(enc, TDB_AES_256_GCM);
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    CHECK_EQ_INT(fm_roundtrip(&io, &b, s, key, key, &fm, &err), 0);
    if (fm) {
        CHECK_EQ_INT(tdb_fragmeta_load_field(fm, 1, &err), 0);
        CHECK_EQ_INT(fm->tiles[1].ntiles, 3);
        if (fm->tiles[1].null_counts)
            CHECK_EQ_INT(fm->tiles[1].null_counts[1], 3);
        CHECK_EQ_INT(tdb_fragmeta_load_rtree(fm, &err), 0);
        tdb_fragmeta_free(fm);
        fm = NULL;
    }
    CHECK_EQ_INT(fm_roundtrip(&io, &b, s, key, bad, &fm, &err), TDB_E_AUTH);
    CHECK(fm == NULL);
    CHECK_EQ_INT(fm_roundtrip(&io, &b, s, key, NULL, &fm, &err), TDB_E_NOKEY);
    tdb_io_free(&io);
    tdb_buf_free(&b);
    rt_free_schema(s);
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void)
{
    struct tdb_schema *s = rt_schema(TDB_DENSE);
    struct tdb_error err = {0};
    struct tdb_fmw *w = NULL;
    struct tdb_buf b = {0};
    uint8_t fv[80] = {0};
    CHECK_EQ_INT(tdb_fmw_create(&w, s, s->name, true, &err), 0);
    /* no non-empty domain yet */
    CHECK_EQ_INT(fm_add_tile(w, 0, 0, 0, 0, 0, fv, 80, NULL, 10, NULL,
                                  &err), TDB_E_INVAL);
    struct tdb_range ned = fm_range_i32(0, 9);
    CHECK_EQ_INT(tdb_fmw_set_ned(w, &ned, &err), 0);
    /* a dense dimension has no tiles; a tile too short */
    CHECK_EQ_INT(fm_add_tile(w, 2, 0, 0, 0, 0, fv, 40, NULL, 10, NULL,
                                  &err), TDB_E_INVAL);
    CHECK_EQ_INT(fm_add_tile(w, 0, 0, 0, 0, 0, fv, 40, NULL, 10, NULL,
                                  &err), TDB_E_INVAL);
    CHECK_EQ_INT(fm_add_tile(w, 7, 0, 0, 0, 0, fv, 80, NULL, 10, NULL,
                                  &err), TDB_E_INVAL);
    /* descending offsets */
    uint64_t offs[10] = {0, 2, 1, 3, 4, 5, 6, 7, 8, 9};
    uint8_t val[10] = {0};
    CHECK_EQ_INT(fm_add_tile(w, 1, 0, 0, 10, 0, fv, 10, offs, 10, val,
                                  &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "descending") != NULL);
    /* a field short of tiles */
    CHECK_EQ_INT(fm_add_tile(w, 0, 0, 0, 0, 0, fv, 80, NULL, 10, NULL,
                                  &err), 0);
    CHECK_EQ_INT(tdb_fmw_serialize(w, NULL, &b, &err), TDB_E_INVAL);
    CHECK(strstr(err.msg, "field s has 0 tiles") != NULL);
    tdb_fmw_free(w);
    tdb_buf_free(&b);
    rt_free_schema(s);
}

int main(void)
{
    RUN_CORPUS(test_corpus_identical);
    RUN(test_roundtrip_dense);
    RUN(test_roundtrip_sparse);
    RUN(test_encrypted);
    RUN(test_errors);
    return unit_done();
}
