/* array.c: opening an array at a timestamp range (schemas, live fragments,
 * metadata, delete commits) and decoding one fragment's tiles on demand
 * (format_spec/fragment.md: data files, var-sized and validity tiles, the
 * legacy __coords file). */
#include "read/array.h"
#include "model/generic_tile.h"

#include <stdio.h>
#include <stdlib.h>

/* ----------------------------------------------------------------- tiles */

uint64_t tdb_frag_tile_cells(const struct tdb_frag *f, uint64_t t)
{
    if (f->fm->dense)
        return f->tile_cells;
    uint64_t cap = f->fs->capacity ? f->fs->capacity : 1;
    uint64_t n = f->fm->sparse_tile_num;
    if (n && t == n - 1 && f->fm->last_tile_cell_num)
        return f->fm->last_tile_cell_num;
    return cap;
}

/* The cells tile_of gives a tile. */
static uint64_t frag_tile_per(const struct tdb_frag *f)
{
    return f->fm->dense ? f->tile_cells
                        : (f->fs->capacity ? f->fs->capacity : 1);
}

uint64_t tdb_frag_tile_of(const struct tdb_frag *f, uint64_t c, uint64_t *first)
{
    uint64_t per = frag_tile_per(f);
    uint64_t t = c / per;
    *first = t * per;
    return t;
}

uint64_t tdb_frag_tile_first(const struct tdb_frag *f, uint64_t t)
{
    return t * frag_tile_per(f);
}

uint64_t tdb_frag_tile_span(const struct tdb_frag *f, uint64_t t)
{
    uint64_t per = frag_tile_per(f), nc = tdb_frag_tile_cells(f, t);
    return nc < per ? nc : per;
}

uint64_t tdb_frag_dense_cell(const struct tdb_frag *f, const uint64_t *o)
{
    const struct tdb_schema *s = f->fs;
    uint32_t nd = s->ndims;
    uint64_t tix = 0, pos = 0;
    uint64_t tc[TDB_MAX_DIMS], in[TDB_MAX_DIMS];
    const uint64_t *ext = f->ext;
    for (uint32_t d = 0; d < nd; d++) {
        tc[d] = o[d] / ext[d] - f->tile_lo[d];
        in[d] = o[d] % ext[d];
    }
    if (s->tile_order == TDB_COL_MAJOR) {
        for (uint32_t d = nd; d-- > 0;)
            tix = tix * f->ntiles[d] + tc[d];
    } else {
        for (uint32_t d = 0; d < nd; d++)
            tix = tix * f->ntiles[d] + tc[d];
    }
    if (s->cell_order == TDB_COL_MAJOR) {
        for (uint32_t d = nd; d-- > 0;)
            pos = pos * ext[d] + in[d];
    } else {
        for (uint32_t d = 0; d < nd; d++)
            pos = pos * ext[d] + in[d];
    }
    return tix * f->tile_cells + pos;
}

/* What reading field `ff` of fragment f needs: its pipeline, datatype,
 * cell size, var-ness and name for errors. */
struct arr_field {
    const struct tdb_pipeline *filters;
    unsigned type;
    uint32_t cell_val_num;
    bool var, nullable;
    const char *name;
};

static void arr_field_info(const struct tdb_frag *f, int ff,
                           struct arr_field *out)
{
    const struct tdb_schema *s = f->fs;
    const struct tdb_fragmeta *fm = f->fm;
    memset(out, 0, sizeof *out);
    switch (fm->kinds[ff]) {
    case TDB_FIELD_ATTR: {
        const struct tdb_attr *a = &s->attrs[ff];
        out->filters = &a->filters;
        out->type = a->type;
        out->cell_val_num = a->cell_val_num;
        out->var = a->cell_val_num == TDB_VAR_NUM;
        out->nullable = a->nullable;
        out->name = a->name;
        break;
    }
    case TDB_FIELD_DIM: {
        const struct tdb_dim *d = &s->dims[ff - (int)s->nattrs];
        out->filters = d->filters.n || s->version < 5 ? &d->filters
                                                      : &s->coords_filters;
        out->type = d->type;
        out->cell_val_num = d->cell_val_num;
        out->var = d->cell_val_num == TDB_VAR_NUM;
        out->name = d->name;
        break;
    }
    case TDB_FIELD_COORDS:
        out->filters = &s->coords_filters;
        out->type = s->dims[0].type;
        out->cell_val_num = s->ndims;
        out->name = "__coords";
        break;
    default:
        out->filters = &s->coords_filters;
        out->type = TDB_UINT64;
        out->cell_val_num = 1;
        out->name = fm->kinds[ff] == TDB_FIELD_TIMESTAMPS ? "__timestamps"
                    : fm->kinds[ff] == TDB_FIELD_DELETE_TS ? "__delete_timestamps"
                                                           : "__delete_condition_index";
        break;
    }
}

/* One tile to read and reverse: tile t of a data file whose ntiles tiles
 * start at offs[] and which ends at file_size, filtered by p. */
struct arr_tile_src {
    const char *file;           /* in the fragment's folder */
    const uint64_t *offs;
    uint64_t ntiles, t, file_size;
    const struct tdb_pipeline *p;
    unsigned type;              /* of its values */
    uint64_t cell_size;         /* bytes a cell (var-sized: a value) */
    bool is_var;
    const char *what;           /* names file, field and tile for errors */
};

/* Reads the filtered bytes of the tile into buf. */
static int arr_read_tile_bytes(struct tdb_frag *f,
                               const struct arr_tile_src *ts,
                               struct tdb_buf *buf, struct tdb_error *err)
{
    uint64_t t = ts->t;
    uint64_t start = ts->offs[t];
    uint64_t end = t + 1 < ts->ntiles ? ts->offs[t + 1] : ts->file_size;
    if (end < start || end - start > TDB_MAX_TILE_BYTES)
        return tdb_err(err, TDB_E_CORRUPT, "%s: tile offsets out of order "
                       "(%llu..%llu)", ts->what, (unsigned long long)start,
                       (unsigned long long)end);
    char *path = tdb_path_join(f->fm->path, ts->file);
    if (!path)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    size_t len = (size_t)(end - start);
    tdb_buf_reset(buf);
    uint8_t *dst;
    int r = tdb_buf_grow(buf, len, &dst) == 0
                ? tdb_io_read(&f->arr->io, path, start, dst, len, err)
                : tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (r)
        tdb_err_ctx(err, r, "%s", ts->what);
    free(path);
    return r;
}

/* "a0.tdb" -> "a0_var.tdb" / "a0_validity.tdb" */
static char *arr_file_variant(const char *name, const char *suffix)
{
    size_t n = strlen(name);
    if (n > 4 && !strcmp(name + n - 4, ".tdb"))
        n -= 4;
    char *s = malloc(n + strlen(suffix) + 5);
    if (!s)
        return NULL;
    memcpy(s, name, n);
    strcpy(s + n, suffix);
    strcat(s, ".tdb");
    return s;
}

/* Reads and reverses the tile into out (appended); the offsets of a
 * pipeline that stores them itself go to offsets. */
static int arr_decode(struct tdb_frag *f, const struct arr_tile_src *ts,
                      struct tdb_buf *out, struct tdb_buf *offsets,
                      struct tdb_error *err)
{
    struct tdb_scratch *sc = tdb_cache_scratch_get(f->arr->cache);
    struct tdb_buf own = {0}, *raw = sc ? &sc->raw : &own;
    int r = arr_read_tile_bytes(f, ts, raw, err);
    if (r) {
        tdb_buf_free(&own);
        tdb_cache_scratch_put(f->arr->cache, sc);
        return r;
    }
    struct tdb_tile_desc d = {
        .datatype = ts->type,
        .cell_size = ts->cell_size,
        .version = f->fm->version,
        .is_var = ts->is_var,
        .key = tdb_array_key(f->arr),
        .what = ts->what,
        .ncells = tdb_frag_tile_cells(f, ts->t), /* bounds string offsets */
        .scratch = sc,
        .offsets = offsets,
    };
    r = tdb_pipeline_decode(ts->p, &d, raw->data, raw->len, out, err);
    tdb_buf_free(&own);
    tdb_cache_scratch_put(f->arr->cache, sc);
    return r;
}

/* Loading one tile of one field of a fragment into the cache. */
struct arr_load {
    struct tdb_frag *f;
    int ff;                     /* the field's number in the fragment */
    unsigned part;              /* TDB_PART_* */
    uint64_t t, ncells;
    const struct tdb_field_tiles *ft;
    struct arr_field fi;
    unsigned vs;                /* bytes a value */
    char what[768];
    struct tdb_error *err;
};

/* The tile of file (one of the field's), its tiles starting at offs. */
static struct arr_tile_src arr_load_src(const struct arr_load *ld,
                                        const char *file,
                                        const uint64_t *offs,
                                        uint64_t file_size)
{
    return (struct arr_tile_src){
        .file = file, .offs = offs, .ntiles = ld->ft->ntiles, .t = ld->t,
        .file_size = file_size, .p = ld->fi.filters, .type = ld->fi.type,
        .cell_size = ld->vs, .what = ld->what,
    };
}

/* ld->what for file */
static void arr_load_name(struct arr_load *ld, const char *file)
{
    snprintf(ld->what, sizeof ld->what, "%s/%s: field '%s' tile %llu",
             ld->f->fm->path, file, ld->fi.name, (unsigned long long)ld->t);
}

/* The validity values of the tile: one byte a cell. */
static int arr_load_validity(struct arr_load *ld, struct tdb_buf *data)
{
    const struct tdb_fragmeta *fm = ld->f->fm;
    struct tdb_error *err = ld->err;
    char *file = arr_file_variant(fm->file_names[ld->ff], "_validity");
    if (!file)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    arr_load_name(ld, file);
    struct arr_tile_src ts = arr_load_src(ld, file, ld->ft->validity_offsets,
                                          fm->file_validity_sizes[ld->ff]);
    ts.p = &ld->f->fs->validity_filters;
    ts.type = TDB_UINT8;
    ts.cell_size = 1;
    int r = ld->ft->validity_offsets
                ? arr_decode(ld->f, &ts, data, NULL, err)
                : tdb_err(err, TDB_E_CORRUPT, "%s: no validity tiles",
                          ld->what);
    free(file);
    if (!r && data->len != ld->ncells)
        r = tdb_err(err, TDB_E_CORRUPT, "%s: %zu validity values, expected "
                    "%llu", ld->what, data->len,
                    (unsigned long long)ld->ncells);
    return r;
}

/* Makes the var tile's offsets relative to the tile and checks they
 * ascend within var_len bytes. */
static int arr_load_rebase(const struct arr_load *ld, struct tdb_buf *offsets,
                           uint64_t var_len)
{
    uint64_t ncells = ld->ncells;
    uint64_t base = ncells ? tdb_le64(offsets->data) : 0, prev = 0;
    int r = 0;
    for (uint64_t i = 0; i < ncells && !r; i++) {
        uint64_t o = tdb_le64(offsets->data + 8 * i) - base;
        if (o < prev || o > var_len)
            r = tdb_err(ld->err, TDB_E_CORRUPT, "%s: offset %llu of cell %llu "
                        "out of order or past %llu bytes", ld->what,
                        (unsigned long long)o, (unsigned long long)i,
                        (unsigned long long)var_len);
        tdb_st64(offsets->data + 8 * i, o);
        prev = o;
    }
    return r;
}

/* A var-sized field's tile: the offsets (from the offsets file, or from
 * the pipeline that stores them itself) and, unless the offsets alone
 * are asked for, the values. */
static int arr_load_var(struct arr_load *ld, struct tdb_buf *data,
                        struct tdb_buf *offsets)
{
    const struct tdb_fragmeta *fm = ld->f->fm;
    const struct tdb_field_tiles *ft = ld->ft;
    struct tdb_error *err = ld->err;
    uint64_t t = ld->t, ncells = ld->ncells;
    int ff = ld->ff, r = 0;
    bool skip = tdb_pipeline_skips_offsets(ld->fi.filters, ld->fi.type,
                                           fm->version);
    if (!skip) {
        struct arr_tile_src ts = arr_load_src(ld, fm->file_names[ff],
                                              ft->offsets, fm->file_sizes[ff]);
        ts.p = &ld->f->fs->offsets_filters;
        ts.type = TDB_UINT64;
        ts.cell_size = 8;
        r = arr_decode(ld->f, &ts, offsets, NULL, err);
        if (!r && offsets->len != ncells * 8)
            r = tdb_err(err, TDB_E_CORRUPT, "%s: %zu offsets bytes, expected "
                        "%llu cells", ld->what, offsets->len,
                        (unsigned long long)ncells);
    }
    /* offsets alone: the values' size comes from the metadata */
    bool only_offsets = ld->part == TDB_PART_OFFSETS && !skip && ft->var_sizes;
    char *file = arr_file_variant(fm->file_names[ff], "_var");
    if (!r && !file)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!r && !only_offsets) {
        arr_load_name(ld, file);
        struct arr_tile_src ts = arr_load_src(ld, file, ft->var_offsets,
                                              fm->file_var_sizes[ff]);
        ts.is_var = true;
        r = ft->var_offsets
                ? arr_decode(ld->f, &ts, data, skip ? offsets : NULL, err)
                : tdb_err(err, TDB_E_CORRUPT, "%s: no var tiles", ld->what);
    }
    free(file);
    uint64_t var_len = only_offsets ? ft->var_sizes[t] : data->len;
    if (!r && !only_offsets && ft->var_sizes && data->len != ft->var_sizes[t])
        r = tdb_err(err, TDB_E_CORRUPT, "%s: %zu bytes, metadata says %llu",
                    ld->what, data->len, (unsigned long long)ft->var_sizes[t]);
    if (!r && offsets->len != ncells * 8)
        r = tdb_err(err, TDB_E_CORRUPT, "%s: %zu offsets for %llu cells",
                    ld->what, offsets->len / 8, (unsigned long long)ncells);
    if (!r)
        r = arr_load_rebase(ld, offsets, var_len);
    return r;
}

/* Dimension j out of the legacy coordinates tile. */
static int arr_load_legacy_dim(struct arr_load *ld, unsigned j,
                               struct tdb_buf *data)
{
    const struct tdb_fragmeta *fm = ld->f->fm;
    uint32_t nd = ld->f->fs->ndims;
    uint64_t ncells = ld->ncells, vs = ld->vs;
    struct tdb_buf all = {0};
    struct arr_tile_src ts = arr_load_src(ld, fm->file_names[ld->ff],
                                          ld->ft->offsets,
                                          fm->file_sizes[ld->ff]);
    ts.cell_size = vs * nd;
    int r = arr_decode(ld->f, &ts, &all, NULL, ld->err);
    uint64_t need = ncells * vs * nd;
    if (!r && all.len != need)
        r = tdb_err(ld->err, TDB_E_CORRUPT, "%s: %zu coordinate bytes, "
                    "expected %llu", ld->what, all.len,
                    (unsigned long long)need);
    if (!r)
        r = tdb_buf_reserve(data, (size_t)(ncells * vs));
    for (uint64_t i = 0; !r && i < ncells; i++) {
        const uint8_t *src = ld->f->zipped ? all.data + (i * nd + j) * vs
                                           : all.data + (j * ncells + i) * vs;
        tdb_buf_append(data, src, vs);
    }
    tdb_buf_free(&all);
    return r;
}

/* A fixed-size field's tile. */
static int arr_load_fixed(struct arr_load *ld, struct tdb_buf *data)
{
    const struct tdb_fragmeta *fm = ld->f->fm;
    uint64_t cs = (uint64_t)ld->vs * ld->fi.cell_val_num;
    struct arr_tile_src ts = arr_load_src(ld, fm->file_names[ld->ff],
                                          ld->ft->offsets,
                                          fm->file_sizes[ld->ff]);
    ts.cell_size = cs;
    int r = arr_decode(ld->f, &ts, data, NULL, ld->err);
    if (!r && data->len != ld->ncells * cs)
        r = tdb_err(ld->err, TDB_E_CORRUPT, "%s: %zu bytes, expected %llu "
                    "cells of %llu bytes", ld->what, data->len,
                    (unsigned long long)ld->ncells, (unsigned long long)cs);
    return r;
}

/* The decoded bytes in data (a block the cache pooled, `pooled`, or one
 * of its own) as t's data: a block of its own cut to its bytes, so that
 * the cache counts and pools what it is; data_cap 0 (unknown) when it is
 * too small to pool. */
static void arr_tile_take(struct tdb_tile *t, struct tdb_buf *data,
                          const uint8_t *pooled, size_t pooled_cap)
{
    if (data->data != pooled || data->cap != pooled_cap) {
        if (!data->len)
            tdb_buf_free(data);
        else if (data->len < TDB_CACHE_POOL_MIN)
            data->cap = 0;
        else if (data->cap > data->len) {
            uint8_t *p = realloc(data->data, data->len);
            if (p) {
                data->data = p;
                data->cap = data->len;
            } else {
                data->cap = 0;
            }
        }
    }
    t->data_cap = data->cap;
    t->data = tdb_buf_take(data, NULL);
}

static int arr_tile_load(void *arg, const struct tdb_cache_key *key,
                         struct tdb_tile *tile, struct tdb_error *err)
{
    struct arr_load ld = {.f = arg, .ff = (int)(key->part >> 8),
                          .part = (unsigned)(key->part & 0xff),
                          .t = key->tile, .err = err};
    struct tdb_fragmeta *fm = ld.f->fm;
    int r = tdb_fragmeta_load_field(fm, (uint32_t)ld.ff, err);
    if (r)
        return r;
    ld.ft = &fm->tiles[ld.ff];
    arr_field_info(ld.f, ld.ff, &ld.fi);
    arr_load_name(&ld, fm->file_names[ld.ff]);
    if (ld.t >= ld.ft->ntiles)
        return tdb_err(err, TDB_E_CORRUPT, "%s: the fragment has %llu tiles",
                       ld.what, (unsigned long long)ld.ft->ntiles);
    ld.ncells = tdb_frag_tile_cells(ld.f, ld.t);
    ld.vs = tdb_dt_size(ld.fi.type);
    /* a pooled block from the cache, to decode into */
    struct tdb_buf data = {tile->data, 0, (size_t)tile->data_cap,
                           tile->data != NULL};
    struct tdb_buf offsets = {0};
    const uint8_t *pooled = tile->data;
    size_t pooled_cap = data.cap;
    tile->data = NULL;
    tile->data_cap = 0;
    if (ld.part == TDB_PART_VALIDITY)
        r = arr_load_validity(&ld, &data);
    else if (ld.fi.var)
        r = arr_load_var(&ld, &data, &offsets);
    else if (ld.part >= TDB_PART_LEGACY_DIM)
        r = arr_load_legacy_dim(&ld, ld.part - TDB_PART_LEGACY_DIM, &data);
    else
        r = arr_load_fixed(&ld, &data);
    if (r) {
        tdb_buf_free(&data);
        tdb_buf_free(&offsets);
        return r;
    }
    tile->size = data.len;
    if (ld.fi.var && ld.part == TDB_PART_OFFSETS && !data.len &&
        ld.ft->var_sizes)
        tile->size = ld.ft->var_sizes[ld.t];  /* offsets alone */
    arr_tile_take(tile, &data, pooled, pooled_cap);
    tile->ncells = ld.ncells;
    tile->offsets = offsets.len ? (uint64_t *)tdb_buf_take(&offsets, NULL) : NULL;
    /* offsets were stored little-endian in place; on LE hosts they are
     * already native */
    return 0;
}

int tdb_frag_tile(const struct tdb_tile_ref *k, struct tdb_cache_entry **e,
                  const struct tdb_tile **tile, struct tdb_error *err)
{
    return tdb_frag_tile_flags(k, 0, e, tile, err);
}

/* The filtered bytes of tile t in a file whose tiles start at offs[] (0
 * when there are none, or they are out of order). */
static uint64_t arr_tile_span(const uint64_t *offs, uint64_t ntiles,
                              uint64_t t, uint64_t file_size)
{
    if (!offs || t >= ntiles)
        return 0;
    uint64_t end = t + 1 < ntiles ? offs[t + 1] : file_size;
    return end >= offs[t] && end - offs[t] <= TDB_MAX_TILE_BYTES
               ? end - offs[t] : 0;
}

/* The most bytes loading tile t of field ff (part) holds at once, as far
 * as the fragment metadata tells: the tile decoded and the bytes read
 * from the files; *size: the bytes of the tile's data (0: unknown, or
 * offsets alone). */
static uint64_t arr_tile_need(struct tdb_frag *f, int ff, unsigned part,
                              uint64_t t, uint64_t *size)
{
    struct tdb_fragmeta *fm = f->fm;
    uint64_t ncells = tdb_frag_tile_cells(f, t);
    if (tdb_fragmeta_load_field(fm, (uint32_t)ff, NULL) ||
        t >= fm->tiles[ff].ntiles)
        return 0;   /* the load tells what is wrong */
    const struct tdb_field_tiles *ft = &fm->tiles[ff];
    struct arr_field fi;
    arr_field_info(f, ff, &fi);
    uint64_t vs = tdb_dt_size(fi.type), fixed = 0, var = 0, raw;
    if (part == TDB_PART_VALIDITY) {
        fixed = *size = ncells;
        raw = arr_tile_span(ft->validity_offsets, ft->ntiles, t,
                            fm->file_validity_sizes[ff]);
    } else if (fi.var) {
        raw = arr_tile_span(ft->var_offsets, ft->ntiles, t,
                            fm->file_var_sizes[ff]);
        fixed = ncells * 8;
        var = ft->var_sizes ? ft->var_sizes[t] : raw;
        *size = ft->var_sizes && part != TDB_PART_OFFSETS ? var : 0;
        raw += arr_tile_span(ft->offsets, ft->ntiles, t, fm->file_sizes[ff]);
    } else {
        raw = arr_tile_span(ft->offsets, ft->ntiles, t, fm->file_sizes[ff]);
        fixed = part >= TDB_PART_LEGACY_DIM ? vs * (f->fs->ndims + 1)
                                            : vs * fi.cell_val_num;
        fixed = ncells > UINT64_MAX / (fixed + 1) ? UINT64_MAX : ncells * fixed;
        *size = part >= TDB_PART_LEGACY_DIM && fixed != UINT64_MAX
                    ? ncells * vs : fixed;
    }
    uint64_t need = fixed + raw;
    need = need < raw ? UINT64_MAX : need;
    return need + var < need ? UINT64_MAX : need + var;
}

int tdb_frag_tile_flags(const struct tdb_tile_ref *k, unsigned flags,
                        struct tdb_cache_entry **e,
                        const struct tdb_tile **tile, struct tdb_error *err)
{
    struct tdb_frag *f = k->f;
    int field = k->field;
    unsigned part = k->part;
    uint64_t t = k->t;
    struct tdb_cache_req rq = {{f->uid, ((uint64_t)field << 8) | part, t},
                               arr_tile_load, f, flags, 0, 0};
    if (flags & (TDB_CACHE_TRY | TDB_CACHE_WAIT))
        rq.need = arr_tile_need(f, field, part, t, &rq.size);
    return tdb_cache_fetch(f->arr->cache, &rq, e, tile, err);
}

/* Range r of a tile of `file` (under the fragment's folder) whose tiles
 * start at offs[ntiles] and which ends at file_size.  @return 1, 0 when
 * the offsets say nothing sane (the load will report it), or
 * TDB_E_NOMEM. */
static int arr_tile_range(const struct tdb_frag *f, const char *file,
                          const uint64_t *offs, uint64_t ntiles, uint64_t t,
                          uint64_t file_size, struct tdb_tile_range *r)
{
    if (!offs || t >= ntiles)
        return 0;
    uint64_t start = offs[t];
    uint64_t end = t + 1 < ntiles ? offs[t + 1] : file_size;
    if (end <= start || end - start > TDB_MAX_TILE_BYTES)
        return 0;
    if (!(r->path = tdb_path_join(f->fm->path, file)))
        return TDB_E_NOMEM;
    r->off = start;
    r->len = end - start;
    return 1;
}

int tdb_frag_tile_ranges(struct tdb_frag *f, int field, unsigned part,
                         uint64_t t, struct tdb_tile_range out[2],
                         struct tdb_error *err)
{
    struct tdb_fragmeta *fm = f->fm;
    int r = tdb_fragmeta_load_field(fm, (uint32_t)field, err);
    if (r)
        return r;
    struct tdb_field_tiles *ft = &fm->tiles[field];
    struct arr_field fi;
    arr_field_info(f, field, &fi);
    const char *name = fm->file_names[field];
    int n = 0;
    char *file = NULL;
    if (part == TDB_PART_VALIDITY) {
        if (!(file = arr_file_variant(name, "_validity")))
            return TDB_E_NOMEM;
        r = arr_tile_range(f, file, ft->validity_offsets, ft->ntiles, t,
                           fm->file_validity_sizes[field], &out[n]);
        n += r == 1;
    } else if (fi.var) {
        if (!tdb_pipeline_skips_offsets(fi.filters, fi.type, fm->version)) {
            r = arr_tile_range(f, name, ft->offsets, ft->ntiles, t,
                               fm->file_sizes[field], &out[n]);
            n += r == 1;
        }
        if (r >= 0 && !(part == TDB_PART_OFFSETS && n && ft->var_sizes)) {
            if (!(file = arr_file_variant(name, "_var")))
                r = TDB_E_NOMEM;
            else if ((r = arr_tile_range(f, file, ft->var_offsets, ft->ntiles,
                                         t, fm->file_var_sizes[field],
                                         &out[n])) == 1)
                n++;
        }
    } else {
        r = arr_tile_range(f, name, ft->offsets, ft->ntiles, t,
                           fm->file_sizes[field], &out[n]);
        n += r == 1;
    }
    free(file);
    if (r < 0) {
        while (n)
            free(out[--n].path);
        return tdb_err(err, r, "out of memory");
    }
    return n;
}

bool tdb_frag_field_unfiltered(const struct tdb_frag *f, int field,
                               unsigned part)
{
    struct arr_field fi;
    if (part != TDB_PART_VALUES || field < 0)
        return false;
    arr_field_info(f, field, &fi);
    return !fi.var && fi.filters && fi.filters->n == 0;
}

/* ------------------------------------------------------------ opening */

const uint8_t *tdb_array_key(const struct tdb_array *a)
{
    return a->encrypted && a->has_key ? a->key : NULL;
}

static int arr_frag_setup(struct tdb_array *a, struct tdb_frag *f,
                          struct tdb_error *err)
{
    struct tdb_fragmeta *fm = f->fm;
    const struct tdb_schema *s = fm->schema ? fm->schema : a->schema;
    f->fs = s;
    if (s->ndims > TDB_MAX_DIMS)
        return tdb_err(err, TDB_E_UNSUPPORTED, "%s: %u dimensions", fm->path,
                       s->ndims);
    f->attr_field = calloc(a->schema->nattrs ? a->schema->nattrs : 1,
                           sizeof *f->attr_field);
    if (!f->attr_field)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < a->schema->nattrs; i++)
        f->attr_field[i] = tdb_fragmeta_attr_field(fm, a->schema, i);
    f->legacy_coords = fm->version < 5 && !fm->dense;
    for (uint32_t j = 0; j < s->ndims; j++)
        f->dim_field[j] = tdb_fragmeta_dim_field(fm, j);
    if (f->legacy_coords) {
        bool compressed = false;
        static const unsigned comp[] = {TDB_FILTER_GZIP, TDB_FILTER_ZSTD,
                                        TDB_FILTER_LZ4, TDB_FILTER_RLE,
                                        TDB_FILTER_BZIP2, TDB_FILTER_DOUBLE_DELTA};
        for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++)
            compressed |= tdb_pipeline_has(&s->coords_filters, comp[i]);
        f->zipped = fm->version < 2 && !compressed;
    }
    if (fm->dense) {
        uint64_t cells = 1;
        for (uint32_t d = 0; d < s->ndims; d++) {
            const struct tdb_dim *dim = &s->dims[d];
            uint64_t ext = f->ext[d] = tdb_dim_tile_span(dim);
            if (!ext || fm->ned_null)
                return tdb_err(err, TDB_E_CORRUPT, "%s: dense fragment without a "
                               "usable domain", fm->path);
            f->ned_lo[d] = tdb_dim_offset(dim, fm->ned[d].lo);
            f->ned_hi[d] = tdb_dim_offset(dim, fm->ned[d].hi);
            if (f->ned_hi[d] < f->ned_lo[d])
                return tdb_err(err, TDB_E_CORRUPT, "%s: empty non-empty domain",
                               fm->path);
            f->tile_lo[d] = f->ned_lo[d] / ext;
            f->ntiles[d] = f->ned_hi[d] / ext - f->tile_lo[d] + 1;
            if (!tdb_mul_ok(cells, ext, &cells))
                return tdb_err(err, TDB_E_UNSUPPORTED, "%s: tiles too large",
                               fm->path);
        }
        f->tile_cells = cells;
    }
    f->ncells = tdb_fragmeta_cell_num(fm);
    return 0;
}

/* The cache's number for fragment folder `frag` of the array at `path`. */
static int arr_frag_id(struct tdb_array *a, const char *path,
                       const char *frag, uint64_t *id, struct tdb_error *err)
{
    size_t n = strlen(path) + strlen(frag) + 2;
    char *ident = malloc(n);
    if (!ident)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    snprintf(ident, n, "%s%s%s", path, path[0] ? "/" : "", frag);
    int r = tdb_cache_frag_id(a->cache, ident, id);
    free(ident);
    return r ? tdb_err(err, r, "out of memory") : 0;
}

/* The listings an open reads, asked for at once (every folder under
 * __fragments too: the tree shows each fragment's size). */
static void arr_want_folders(const struct tdb_io *io)
{
    static const char *const dirs[] = {"", "__schema", "__commits",
                                       "__fragment_meta", "__meta"};
    struct tdb_io_want w[6];
    for (size_t i = 0; i < 5; i++)
        w[i] = (struct tdb_io_want){TDB_WANT_LIST, dirs[i], 0, 0};
    w[5] = (struct tdb_io_want){TDB_WANT_TREE, "__fragments", 0, 0};
    tdb_io_prefetch(io, w, 6);
}

/* Does a consolidated fragment metadata file of cons[n] hold fragment
 * `name`? */
static bool arr_cons_holds(struct tdb_cons_fragmeta **cons, size_t n,
                           const char *name)
{
    for (size_t c = 0; c < n; c++)
        for (size_t j = 0; j < cons[c]->n; j++)
            if (!strcmp(cons[c]->names[j], name))
                return true;
    return false;
}

/* The files an open reads once the folders are known, asked for at once:
 * the metadata of d's fragments (every committed one with `cands`, else
 * the live ones; those no consolidated file of cons holds), the folders of
 * fragments outside __fragments (formats 1 to 11), and the delete
 * conditions.  Best effort. */
static void arr_want_frags(const struct tdb_io *io,
                           const struct tdb_arraydir *d, bool cands,
                           struct tdb_cons_fragmeta **cons, size_t ncons)
{
    const struct tdb_dir_entry *fe = cands ? d->cands : d->frags;
    const struct tdb_dir_entry *del = d->deletes;
    size_t n = cands ? d->ncands : d->nfrags, ndel = d->ndeletes;
    size_t m = 2 * n + ndel;
    struct tdb_io_want *w = calloc(m ? m : 1, sizeof *w);
    char **paths = calloc(m ? m : 1, sizeof *paths);
    size_t k = 0;
    for (size_t i = 0; w && paths && i < n; i++) {
        if (!arr_cons_holds(cons, ncons, fe[i].name) &&
            (paths[k] = tdb_path_join(fe[i].path,
                                      "__fragment_metadata.tdb"))) {
            w[k] = (struct tdb_io_want){TDB_WANT_FILE, paths[k], 0, 0};
            k++;
        }
        if (strncmp(fe[i].path, "__fragments/", 12))
            w[k++] = (struct tdb_io_want){TDB_WANT_LIST, fe[i].path, 0, 0};
    }
    for (size_t i = 0; w && paths && i < ndel; i++)
        w[k++] = (struct tdb_io_want){TDB_WANT_FILE, del[i].path, 0, 0};
    tdb_io_prefetch(io, w, k);
    for (size_t i = 0; paths && i < m; i++)
        free(paths[i]);
    free(paths);
    free(w);
}

/* Every schema of the array, the one in force at ts_end with its
 * enumerations (model/schemas.c, as writing learns them), and the
 * fragments its array type's rule keeps. */
static int arr_load_schemas(struct tdb_array *a, struct tdb_error *err)
{
    int r = tdb_array_schemas_load(&a->io, a->dir, a->has_key ? a->key : NULL,
                                   &a->schemas, &a->schema, err);
    if (!r)
        a->encrypted = a->schema->encryption == TDB_AES_256_GCM;
    return r;
}

/* Consolidated fragment metadata: the files loaded, their count in
 * *ncons (freed by the caller also on failure). */
static int arr_load_cons(struct tdb_array *a, struct tdb_cons_fragmeta ***cons,
                         size_t *ncons, struct tdb_error *err)
{
    const uint8_t *key = a->has_key ? a->key : NULL;
    if (!a->dir->nfragmeta)
        return 0;
    *cons = calloc(a->dir->nfragmeta, sizeof **cons);
    if (!*cons)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < a->dir->nfragmeta; i++) {
        int r = tdb_cons_fragmeta_load(&a->io, a->dir->fragmeta[i].path, key,
                                       &(*cons)[i], err);
        if (r)
            return r;
        (*ncons)++;
    }
    return 0;
}

/* The footer of fragment `name` in the consolidated files: the first that
 * lists it wins, as in TileDB.  NULL when none does. */
static const uint8_t *arr_cons_footer(struct tdb_cons_fragmeta *const *cons,
                                      size_t ncons, const char *name,
                                      size_t *size)
{
    for (size_t c = 0; c < ncons; c++)
        for (size_t k = 0; k < cons[c]->n; k++)
            if (!strcmp(cons[c]->names[k], name)) {
                *size = (size_t)cons[c]->sizes[k];
                return cons[c]->data + cons[c]->offsets[k];
            }
    *size = 0;
    return NULL;
}

/* Every fragment's metadata, from its footer in the consolidated files
 * when one lists it. */
static int arr_load_frags(struct tdb_array *a, const char *path,
                          struct tdb_cons_fragmeta *const *cons, size_t ncons,
                          struct tdb_error *err)
{
    const uint8_t *key = a->has_key ? a->key : NULL;
    a->frags = calloc(a->dir->nfrags ? a->dir->nfrags : 1, sizeof *a->frags);
    if (!a->frags)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < a->dir->nfrags; i++) {
        const struct tdb_dir_entry *fe = &a->dir->frags[i];
        size_t footer_size;
        const uint8_t *footer = arr_cons_footer(cons, ncons, fe->name,
                                                &footer_size);
        struct tdb_frag *f = &a->frags[a->nfrags];
        f->arr = a;
        f->index = a->nfrags;
        int r = arr_frag_id(a, path, fe->path, &f->uid, err);
        if (r)
            return r;
        struct tdb_fragmeta_src src = {
            .io = &a->io, .path = fe->path, .name = fe->name,
            .schemas = &a->schemas, .key = key, .footer = footer,
            .footer_size = footer_size};
        r = tdb_fragmeta_load(&src, &f->fm, err);
        if (r)
            return r;
        a->nfrags++;
        if ((r = arr_frag_setup(a, f, err)))
            return r;
        if (fe->ts.t2 > a->newest_ts)
            a->newest_ts = fe->ts.t2;
    }
    return 0;
}

/* The array's metadata (from its files listed) and its delete
 * conditions. */
static int arr_load_meta_conds(struct tdb_array *a,
                               const struct tdb_ts_files *meta,
                               struct tdb_error *err)
{
    const uint8_t *key = a->has_key ? a->key : NULL;
    int r = tdb_meta_load_files(&a->io, meta, key, &a->meta, err);
    if (r)
        return r;
    if (a->meta && a->meta->newest_ts > a->newest_ts)
        a->newest_ts = a->meta->newest_ts;
    if (!a->dir->ndeletes)
        return 0;
    /* which deletes each fragment processed: asked for at once, then read */
    struct tdb_io_want *w = calloc(a->nfrags ? a->nfrags : 1, sizeof *w);
    size_t k = 0;
    for (size_t i = 0; w && i < a->nfrags; i++)
        if (a->frags[i].fm->version >= 16)
            w[k++] = (struct tdb_io_want){TDB_WANT_FILE,
                                          a->frags[i].fm->meta_path, 0, 0};
    if (w)
        tdb_io_prefetch(&a->io, w, k);
    free(w);
    for (size_t i = 0; i < a->nfrags; i++)
        if ((r = tdb_fragmeta_load_processed(a->frags[i].fm, err)))
            return r;
    a->conds = calloc(a->dir->ndeletes, sizeof *a->conds);
    if (!a->conds)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    a->cond_ents = a->dir->deletes;
    for (size_t i = 0; i < a->dir->ndeletes; i++) {
        r = tdb_cond_load_at(&a->io, a->dir->deletes[i].path,
                             a->dir->deletes[i].offset, key, &a->conds[i],
                             err);
        if (r)
            return r;
        a->nconds++;
    }
    return 0;
}

/* Loads what the array's folder holds into a (its io, options and cache
 * set). */
static int arr_load(struct tdb_array *a, const char *path,
                    struct tdb_error *err)
{
    struct tdb_cons_fragmeta **cons = NULL;
    struct tdb_ts_files meta = {"__meta", NULL, 0};
    size_t ncons = 0;
    struct tdb_ts_window when = {a->ts_start, a->ts_end};
    arr_want_folders(&a->io);
    int r = tdb_arraydir_load(&a->io, a->ts_start, a->ts_end, &a->dir, err);
    if (r)
        return r;
    /* every committed fragment (the sparse rule may keep more than the
     * dense one load applied), unless consolidated metadata may hold it */
    if (!a->dir->nfragmeta)
        arr_want_frags(&a->io, a->dir, true, NULL, 0);
    /* the metadata files listed now are fetched with the above */
    r = tdb_ts_files_list(&a->io, meta.dir, when, &meta.v, &meta.n, err);
    if (!r && !(r = arr_load_schemas(a, err)))
        r = arr_load_cons(a, &cons, &ncons, err);
    if (!r && a->dir->nfragmeta)
        arr_want_frags(&a->io, a->dir, false, cons, ncons);
    if (!r)
        r = arr_load_frags(a, path, cons, ncons, err);
    if (!r)
        r = arr_load_meta_conds(a, &meta, err);
    for (size_t c = 0; c < ncons; c++)
        tdb_cons_fragmeta_free(cons[c]);
    free(cons);
    tdb_ts_files_free(meta.v, meta.n);
    return r;
}

int tdb_array_open(struct tdb_array **out, const struct tdb_io *parent,
                   const char *path, const struct tdb_open_options *o,
                   struct tdb_cache *cache, struct tdb_error *err)
{
    struct tdb_array *a = calloc(1, sizeof *a);
    if (!a)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    int r = tdb_io_sub(&a->io, parent, path);
    if (r) {
        free(a);
        return tdb_err(err, r, "out of memory");
    }
    a->ts_start = o->ts_start;
    a->threads = o->threads;
    a->merge_range_cells = o->merge_range_cells;
    a->ts_end = o->ts_end;
    a->cache = cache;
    if (o->key) {
        memcpy(a->key, o->key, 32);
        a->has_key = true;
    }
    r = arr_load(a, path, err);
    if (r) {
        tdb_array_close(a);
        return r;
    }
    *out = a;
    return 0;
}

void tdb_array_close(struct tdb_array *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nfrags; i++) {
        tdb_fragmeta_free(a->frags[i].fm);
        free(a->frags[i].attr_field);
    }
    free(a->frags);
    for (size_t i = 0; i < a->nconds; i++)
        tdb_cond_free(a->conds[i]);
    free(a->conds);
    tdb_meta_free(a->meta);
    for (size_t i = 0; i < a->schemas.n; i++)
        tdb_schema_free(a->schemas.v[i]);
    free(a->schemas.v);
    tdb_arraydir_free(a->dir);
    tdb_io_free(&a->io);
    free(a);
}

void tdb_open_options_init(struct tdb_open_options *o)
{
    memset(o, 0, sizeof *o);
    o->ts_end = UINT64_MAX;
    o->cache_bytes = TDB_DEFAULT_CACHE_BYTES;
}
