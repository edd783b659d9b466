/* zarr.c: the __zarr folder of a dense array (docs/LAYOUT.md "__zarr"):
 * its arrays (one per attribute, whose chunks are the space tiles, one per
 * nullable attribute's validity and enumerated attribute's values, one per
 * dimension holding its coordinates) and their chunks: fixed-size ones
 * read from the view as they lie, var-sized ones encoded whole in
 * numcodecs' vlen form and kept while read.  The documents are
 * zarr_doc.c's. */
#include "tree/zarr_priv.h"
#include "core/value.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* --------------------------------------------------------------- arrays */

/* Whether name can be an array of z: UTF-8 (a JSON key), not a Zarr
 * file's, and not taken. */
static bool zarr_name_free(const struct tdb_zarr *z, const char *name)
{
    if (!tdb_json_is_utf8(name, strlen(name)) || !strncmp(name, ".z", 2) ||
        !strcmp(name, "zarr.json"))
        return false;
    for (uint32_t k = 0; k < z->n; k++)
        if (!strcmp(z->v[k].name, name))
            return false;
    return true;
}

/* How x's chunks hold their cells, and the bytes of one cell of a
 * fixed-size one. */
static enum zarr_enc zarr_encoding(const struct tdb_zarr *z,
                                   const struct zarr_arr *x, uint64_t *cell)
{
    uint32_t ai;
    const struct tdb_schema *s = zarr_src(z, x, &ai)->schema;
    if (x->kind == ZARR_COORD) {
        *cell = tdb_dt_size(s->dims[x->idx].type);
        return ZARR_FIXED;
    }
    const struct tdb_attr *at = &s->attrs[ai];
    if (x->kind == ZARR_VALIDITY) {
        *cell = 1;
        return ZARR_FIXED;
    }
    unsigned t = at->type;
    bool var = at->cell_val_num == TDB_VAR_NUM;
    if (x->kind == ZARR_LABELS) {
        t = x->en->type;
        var = x->en->cell_val_num != 1 || zarr_bytes_type(t);
    }
    if (var)
        return t == TDB_STRING_ASCII || t == TDB_STRING_UTF8 ? ZARR_UTF8
                                                             : ZARR_BYTES;
    *cell = (uint64_t)tdb_dt_size(t) *
            (x->kind == ZARR_LABELS ? 1 : at->cell_val_num);
    return ZARR_FIXED;
}

/* Fills x's axes; false when it is too large to show. */
static bool zarr_geometry(const struct tdb_zarr *z, struct zarr_arr *x)
{
    const struct tdb_schema *s = z->a->schema;
    uint64_t cell = 0;
    x->enc = zarr_encoding(z, x, &cell);
    if (x->kind == ZARR_COORD || x->kind == ZARR_DIMLABEL) {
        uint32_t d = x->kind == ZARR_COORD ? x->idx : z->labels[x->idx].dim;
        x->nd = 1;
        x->shape[0] = z->vshape[d];
        x->chunks[0] = z->ext[d];
        if (x->kind == ZARR_DIMLABEL && x->enc == ZARR_FIXED &&
            z->labels[x->idx].arr->schema->attrs[z->labels[x->idx].attr]
                    .cell_val_num != 1)
            return false;       /* labels are one value a cell */
    } else {
        const struct tdb_attr *at = &s->attrs[x->idx];
        x->nd = z->nd;
        for (uint32_t d = 0; d < z->nd; d++) {
            x->shape[d] = z->vshape[d];
            x->chunks[d] = z->ext[d];
        }
        bool values = x->kind == ZARR_ATTR && x->enc == ZARR_FIXED &&
                      at->cell_val_num > 1;
        if (values && !zarr_bytes_type(at->type)) {
            x->shape[x->nd] = x->chunks[x->nd] = at->cell_val_num;
            x->nd++;
            cell = tdb_dt_size(at->type);
        } else if (values) {
            x->bytes_axis = at->cell_val_num;
        }
        /* a column-major tile is a chunk in Fortran order, but a cell's
         * values would then not lie together: those stay in C order */
        x->col = s->cell_order == TDB_COL_MAJOR && x->nd == z->nd;
    }
    x->nchunks = x->ncells = 1;
    for (uint32_t d = 0; d < x->nd; d++) {
        x->grid[d] = (x->shape[d] + x->chunks[d] - 1) / x->chunks[d];
        if (!tdb_mul_ok(x->nchunks, x->grid[d], &x->nchunks) ||
            !tdb_mul_ok(x->ncells, x->chunks[d], &x->ncells))
            return false;
    }
    if (x->nchunks > TDB_ZARR_MAX_CHUNKS)
        return false;
    if (x->enc != ZARR_FIXED)   /* a count and a length a cell: uint32 */
        return x->ncells < UINT32_MAX / 4;
    return cell && tdb_mul_ok(x->ncells, cell, &x->chunk_bytes) &&
           x->chunk_bytes <= TDB_ZARR_MAX_CHUNK_BYTES;
}

/* Adds an array of `kind` for attribute or dimension idx, unless it has
 * no usable name or is too large.  @return 0 or TDB_E_NOMEM. */
static int zarr_add(struct tdb_zarr *z, enum zarr_kind kind, uint32_t idx)
{
    const struct tdb_schema *s = z->a->schema;
    static const char *const suffix[] = {"", ".validity", ".labels", "", ""};
    char *name = kind == ZARR_COORD      ? strdup(z->dimname[idx])
                 : kind == ZARR_DIMLABEL ? tdb_mount_name(z->labels[idx].name, "")
                 : tdb_mount_name(s->attrs[idx].name, suffix[kind]);
    if (!name)
        return TDB_E_NOMEM;
    struct zarr_arr *x = &z->v[z->n];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->idx = idx;
    if (kind != ZARR_COORD && kind != ZARR_DIMLABEL)
        x->en = zarr_enum_of(s, &s->attrs[idx]);
    if (!zarr_name_free(z, name) || !zarr_geometry(z, x)) {
        free(name);
        return 0;
    }
    x->name = name;
    z->n++;
    return 0;
}

/* The view's chunk grid (the tile extents from the view's first cell)
 * and dimension names; false when a chunk would pass 2^64 offsets or a
 * name is not UTF-8. */
static bool zarr_grid(struct tdb_zarr *z)
{
    const struct tdb_schema *s = z->a->schema;
    for (uint32_t d = 0; d < z->nd; d++) {
        uint64_t e = z->ext[d] = tdb_dim_tile_span(&s->dims[d]), end;
        if (!e || !tdb_mul_ok((z->vshape[d] - 1) / e + 1, e, &end) ||
            end - 1 > UINT64_MAX - z->vlo[d])
            return false;
        const char *dn = s->dims[d].name;
        char buf[32];
        snprintf(buf, sizeof buf, "__dim_%u", d);
        z->dimname[d] = dn[0] ? tdb_mount_name(dn, "") : strdup(buf);
        if (!z->dimname[d] ||
            !tdb_json_is_utf8(z->dimname[d], strlen(z->dimname[d])))
            return false;
    }
    return true;
}

/* Every array of z: each attribute, its validity and its enumeration's
 * values, then each dimension.  @return 0 or TDB_E_NOMEM. */
static int zarr_arrays(struct tdb_zarr *z)
{
    const struct tdb_schema *s = z->a->schema;
    int r = 0;
    for (uint32_t i = 0; !r && i < s->nattrs; i++) {
        r = zarr_add(z, ZARR_ATTR, i);
        if (!r && s->attrs[i].nullable)
            r = zarr_add(z, ZARR_VALIDITY, i);
        if (!r && zarr_enum_of(s, &s->attrs[i]))
            r = zarr_add(z, ZARR_LABELS, i);
    }
    for (uint32_t d = 0; !r && d < s->ndims; d++)
        r = zarr_add(z, ZARR_COORD, d);
    for (uint32_t l = 0; !r && l < z->nlabels; l++)
        r = zarr_add(z, ZARR_DIMLABEL, l);
    for (uint32_t k = 0; !r && k < z->n; k++) {
        struct zarr_arr *x = &z->v[k];
        if (x->enc != ZARR_FIXED && x->nchunks <= ZARR_SIZES_MAX &&
            !(x->sizes = calloc((size_t)x->nchunks, sizeof *x->sizes)))
            r = TDB_E_NOMEM;
        if (!r)
            r = zarr_arr_docs(z, x);
    }
    return r ? r : zarr_group_docs(z);
}

int tdb_zarr_open(struct tdb_zarr **out, struct tdb_array *a,
                  struct tdb_cells *view, const struct tdb_zarr_label *labels,
                  uint32_t nlabels, struct tdb_error *err)
{
    *out = NULL;
    const struct tdb_schema *s = a->schema;
    struct tdb_zarr *z = calloc(1, sizeof *z);
    if (!z)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    pthread_mutex_init(&z->lock, NULL);
    pthread_cond_init(&z->idle, NULL);
    z->a = a;
    z->view = view;
    z->v = calloc((size_t)s->nattrs * 3 + s->ndims + nlabels + 1,
                  sizeof *z->v);
    z->labels = calloc(nlabels + 1, sizeof *z->labels);
    int r = z->v && z->labels ? 0 : TDB_E_NOMEM;
    for (uint32_t l = 0; !r && l < nlabels; l++)
        if (labels[l].dim < s->ndims)
            z->labels[z->nlabels++] = labels[l];
    if (!r && (!tdb_cells_dense_region(view, &z->nd, z->vlo, z->vshape) ||
               z->nd != s->ndims || !zarr_grid(z))) {
        tdb_zarr_free(z);
        return 0;               /* no Zarr form */
    }
    if (!r)
        r = zarr_arrays(z);
    if (r) {
        tdb_zarr_free(z);
        return tdb_err(err, r, "__zarr: out of memory");
    }
    *out = z;
    return 0;
}

static void zarr_ahead_stop(struct tdb_zarr *z);

void tdb_zarr_free(struct tdb_zarr *z)
{
    if (!z)
        return;
    zarr_ahead_stop(z);
    for (uint32_t k = 0; k < z->n; k++) {
        struct zarr_arr *x = &z->v[k];
        free(x->name);
        json_decref(x->zarray);
        json_decref(x->zattrs);
        json_decref(x->zjson);
        if (x->keys)
            free(x->keys[0]);
        free(x->keys);
        free(x->sizes);
    }
    for (uint32_t d = 0; d < TDB_MAX_DIMS; d++)
        free(z->dimname[d]);
    for (int i = 0; i < ZARR_SLOTS; i++)
        free(z->slot[i].p);
    json_decref(z->zgroup);
    json_decref(z->zattrs);
    json_decref(z->zmeta);
    json_decref(z->zjson);
    free(z->v);
    free(z->labels);
    pthread_cond_destroy(&z->idle);
    pthread_mutex_destroy(&z->lock);
    free(z);
}

uint32_t tdb_zarr_narrays(const struct tdb_zarr *z)
{
    return z->n;
}

const char *tdb_zarr_name(const struct tdb_zarr *z, uint32_t k)
{
    return z->v[k].name;
}

uint64_t tdb_zarr_nchunks(const struct tdb_zarr *z, uint32_t k)
{
    return z->v[k].nchunks;
}

/* ---------------------------------------------------------------- chunks */

bool tdb_zarr_chunk_parse(const struct tdb_zarr *z, uint32_t k,
                          const char *key, uint64_t *c)
{
    const struct zarr_arr *x = &z->v[k];
    const char *p = key;
    uint64_t idx = 0;
    for (uint32_t d = 0; d < x->nd; d++) {
        if (d && *p++ != '.')
            return false;
        if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
            return false;       /* digits, no leading zero */
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            v = v * 10 + (uint64_t)(*p - '0');
            if (v >= x->grid[d])
                return false;
        }
        idx = idx * x->grid[d] + v;
    }
    /* v3's last axis of a fixed string's bytes is one chunk long */
    if (x->bytes_axis && !strcmp(p, ".0"))
        p += 2;
    *c = idx;
    return *p == 0;
}

/* The keys of every chunk of x, in one block (x->keys[0]). */
static char **zarr_keys(const struct zarr_arr *x)
{
    size_t per = (size_t)x->nd * 21 + 1;
    char **keys = malloc((size_t)x->nchunks * sizeof *keys);
    char *buf = keys ? malloc((size_t)x->nchunks * per) : NULL;
    if (!buf) {
        free(keys);
        return NULL;
    }
    for (uint64_t c = 0; c < x->nchunks; c++) {
        uint64_t at[TDB_MAX_DIMS + 1], rest = c;
        for (uint32_t d = x->nd; d-- > 0;) {
            at[d] = rest % x->grid[d];
            rest /= x->grid[d];
        }
        char *o = keys[c] = buf + c * per;
        for (uint32_t d = 0; d < x->nd; d++)
            o += sprintf(o, "%s%" PRIu64, d ? "." : "", at[d]);
    }
    return keys;
}

const char *tdb_zarr_chunk_key(struct tdb_zarr *z, uint32_t k, uint64_t c)
{
    struct zarr_arr *x = &z->v[k];
    if (x->nchunks > TDB_ZARR_LIST_MAX || c >= x->nchunks)
        return NULL;
    pthread_mutex_lock(&z->lock);
    if (!x->keys)
        x->keys = zarr_keys(x);
    const char *key = x->keys ? x->keys[c] : NULL;
    pthread_mutex_unlock(&z->lock);
    return key;
}

/* Bytes [off, off + len) of chunk `at` of coordinate array x. */
static void zarr_coord_read(const struct tdb_zarr *z,
                            const struct zarr_arr *x, uint64_t at,
                            uint64_t off, uint8_t *buf, size_t len)
{
    const struct tdb_dim *dim = &z->a->schema->dims[x->idx];
    unsigned vs = tdb_dt_size(dim->type);
    uint64_t first = z->vlo[x->idx] + at * x->chunks[0], end = off + len;
    for (uint64_t e = off / vs; e * vs < end; e++) {
        uint8_t v[8];
        tdb_dim_value(dim, first + e, v);
        uint64_t a = e * vs > off ? e * vs : off;
        uint64_t b = e * vs + vs < end ? e * vs + vs : end;
        memcpy(buf + (a - off), v + (a - e * vs), (size_t)(b - a));
    }
}

/* The cells of chunk c of attribute array x: the chunk's box of the view,
 * tile extents from the view's first cell, in the array's cell order. */
static int zarr_chunk_cells(const struct tdb_zarr *z, const struct zarr_arr *x,
                            uint64_t c, struct tdb_cells **cells,
                            struct tdb_error *err)
{
    *cells = NULL;
    if (x->kind == ZARR_DIMLABEL) {
        /* along the label's own view of one dimension */
        struct tdb_dense_pick p;
        memset(&p, 0, sizeof p);
        p.start[0] = c * x->chunks[0];
        p.step[0] = 1;
        p.count[0] = x->chunks[0];
        return tdb_cells_dense_pick(cells, z->labels[x->idx].view, &p, err);
    }
    uint64_t at[TDB_MAX_DIMS + 1], rest = c;
    for (uint32_t d = x->nd; d-- > 0;) {
        at[d] = rest % x->grid[d];
        rest /= x->grid[d];
    }
    struct tdb_dense_pick p;
    memset(&p, 0, sizeof p);
    p.col_major = x->col;
    for (uint32_t d = 0; d < z->nd; d++) {
        p.start[d] = at[d] * z->ext[d];
        p.step[d] = 1;
        p.count[d] = z->ext[d];
    }
    *cells = NULL;
    return tdb_cells_dense_pick(cells, z->view, &p, err);
}

/* ff: `part` of what x shows (zarr_src) over cells. */
static void zarr_ff_init(struct tdb_fieldfile *ff, const struct tdb_zarr *z,
                         const struct zarr_arr *x, struct tdb_cells *cells,
                         enum tdb_field_part part)
{
    uint32_t ai;
    struct tdb_array *arr = zarr_src(z, x, &ai);
    tdb_fieldfile_init(ff, cells, arr,
                       &(struct tdb_field_ref){arr->schema, false, ai}, part);
}

/* Bytes [off, off + len) of `part` of what x shows over cells. */
static int zarr_cells_read(const struct tdb_zarr *z, const struct zarr_arr *x,
                           struct tdb_cells *cells, enum tdb_field_part part,
                           uint64_t off, void *buf, size_t len, size_t *got,
                           struct tdb_error *err)
{
    struct tdb_fieldfile ff;
    zarr_ff_init(&ff, z, x, cells, part);
    int r = tdb_fieldfile_read(&ff, off, buf, len, got, err);
    tdb_fieldfile_destroy(&ff);
    return r;
}

/* A code of an integer type at p, as an index (UINT64_MAX: negative). */
static uint64_t zarr_code(unsigned t, const uint8_t *p)
{
    struct tdb_num n = tdb_value_load(t, p);
    return n.cls == TDB_VC_SIGNED && n.i < 0 ? UINT64_MAX : n.u;
}

/* The codes of chunk c's cells of enumerated attribute x->idx: ncells
 * values of its type into a new buffer. */
static int zarr_codes(const struct tdb_zarr *z, const struct zarr_arr *x,
                      struct tdb_cells *cells, uint8_t **out,
                      struct tdb_error *err)
{
    unsigned vs = tdb_dt_size(z->a->schema->attrs[x->idx].type);
    size_t n = (size_t)x->ncells * vs, got = 0;
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return tdb_err(err, TDB_E_NOMEM, "__zarr/%s: out of memory", x->name);
    int r = zarr_cells_read(z, x, cells, TDB_FILE_VALUES, 0, b, n, &got, err);
    if (!r && got != n)
        r = tdb_err(err, TDB_E_CORRUPT, "__zarr/%s: %zu bytes of codes, not %zu",
                    x->name, got, n);
    if (r)
        free(b);
    else
        *out = b;
    return r;
}

/* Fixed-size labels: each cell's enumeration value (the fill_value for a
 * code with none), bytes [off, off + len) of the chunk into buf. */
static int zarr_labels_fixed(const struct tdb_zarr *z, const struct zarr_arr *x,
                             struct tdb_cells *cells, uint64_t off,
                             uint8_t *buf, size_t len, struct tdb_error *err)
{
    const struct tdb_enumeration *e = x->en;
    unsigned ct = z->a->schema->attrs[x->idx].type, cs = tdb_dt_size(ct);
    unsigned vs = tdb_dt_size(e->type);
    uint8_t *codes = NULL, none[8] = {0};
    int r = zarr_codes(z, x, cells, &codes, err);
    if (r)
        return r;
    if (tdb_dt_is_float(e->type))
        tdb_dt_default_fill(e->type, none);     /* NaN */
    uint64_t count = zarr_enum_count(e);
    for (uint64_t i = off / vs; i * vs < off + len; i++) {
        uint64_t code = zarr_code(ct, codes + i * cs);
        const uint8_t *v = code < count ? e->data + code * vs : none;
        uint64_t a = i * vs > off ? i * vs : off;
        uint64_t b = i * vs + vs < off + len ? i * vs + vs : off + len;
        memcpy(buf + (a - off), v + (a - i * vs), (size_t)(b - a));
    }
    free(codes);
    return 0;
}

/* Appends the vlen encoding of one item of n bytes at p. */
static int zarr_item(struct tdb_buf *b, const void *p, uint64_t n)
{
    if (n > UINT32_MAX || tdb_buf_put_u32(b, (uint32_t)n))
        return TDB_E_NOMEM;
    return n ? tdb_buf_append(b, p, (size_t)n) : 0;
}

/* Var-sized labels: chunk c encoded into b. */
static int zarr_labels_vlen(const struct tdb_zarr *z, const struct zarr_arr *x,
                            struct tdb_cells *cells, struct tdb_buf *b,
                            struct tdb_error *err)
{
    const struct tdb_enumeration *e = x->en;
    unsigned ct = z->a->schema->attrs[x->idx].type, cs = tdb_dt_size(ct);
    uint8_t *codes = NULL;
    int r = zarr_codes(z, x, cells, &codes, err);
    uint64_t count = zarr_enum_count(e);
    if (!r && tdb_buf_put_u32(b, (uint32_t)x->ncells))
        r = TDB_E_NOMEM;
    for (uint64_t i = 0; !r && i < x->ncells; i++) {
        uint64_t code = zarr_code(ct, codes + i * cs), at = 0, n = 0;
        if (code < count && !zarr_enum_value(e, code, &at, &n))
            n = 0;
        r = zarr_item(b, e->data + at, code < count ? n : 0);
    }
    free(codes);
    if (r == TDB_E_NOMEM)
        tdb_err(err, r, "__zarr/%s: out of memory", x->name);
    return r;
}

/* A var-sized attribute's chunk encoded into b: its cells' offsets, then
 * their values. */
static int zarr_attr_vlen(const struct tdb_zarr *z, const struct zarr_arr *x,
                          struct tdb_cells *cells, struct tdb_buf *b,
                          struct tdb_error *err)
{
    size_t n = (size_t)x->ncells, got = 0;
    uint64_t total = 0;
    uint8_t *offs = malloc(n * 8 + 1), *vals = NULL;
    if (!offs)
        return tdb_err(err, TDB_E_NOMEM, "__zarr/%s: out of memory", x->name);
    int r = zarr_cells_read(z, x, cells, TDB_FILE_OFFSETS, 0, offs, n * 8,
                            &got, err);
    struct tdb_fieldfile ff;
    zarr_ff_init(&ff, z, x, cells, TDB_FILE_VALUES);
    if (!r && got != n * 8)
        r = tdb_err(err, TDB_E_CORRUPT, "__zarr/%s: %zu cells, not %zu",
                    x->name, got / 8, n);
    if (!r)
        r = tdb_fieldfile_size(&ff, &total, err);
    if (!r && total > TDB_ZARR_MAX_CHUNK_BYTES)
        r = tdb_err(err, TDB_E_UNSUPPORTED,
                    "__zarr/%s: a chunk of %" PRIu64 " bytes, over 2 GiB",
                    x->name, total);
    if (!r && !(vals = malloc((size_t)total + 1)))
        r = tdb_err(err, TDB_E_NOMEM, "__zarr/%s: out of memory", x->name);
    if (!r)
        r = tdb_fieldfile_read(&ff, 0, vals, (size_t)total, &got, err);
    if (!r && got != total)
        r = tdb_err(err, TDB_E_CORRUPT, "__zarr/%s: %zu bytes of values, not %"
                    PRIu64, x->name, got, total);
    if (!r && (tdb_buf_reserve(b, 4 + n * 4 + (size_t)total) ||
               tdb_buf_put_u32(b, (uint32_t)n)))
        r = tdb_err(err, TDB_E_NOMEM, "__zarr/%s: out of memory", x->name);
    for (size_t i = 0; !r && i < n; i++) {
        uint64_t lo = tdb_le64(offs + i * 8);
        uint64_t hi = i + 1 < n ? tdb_le64(offs + (i + 1) * 8) : total;
        if (lo > hi || hi > total)
            r = tdb_err(err, TDB_E_CORRUPT, "__zarr/%s: cell %zu's offsets "
                        "%" PRIu64 "..%" PRIu64 " outside its %" PRIu64
                        " bytes", x->name, i, lo, hi, total);
        else
            r = zarr_item(b, vals + lo, hi - lo);
    }
    tdb_fieldfile_destroy(&ff);
    free(offs);
    free(vals);
    return r;
}

/* Chunk c of var-sized array x, encoded whole into b. */
static int zarr_encode(const struct tdb_zarr *z, const struct zarr_arr *x,
                       uint64_t c, struct tdb_buf *b, struct tdb_error *err)
{
    struct tdb_cells *cells = NULL;
    int r = zarr_chunk_cells(z, x, c, &cells, err);
    if (!r)
        r = x->kind == ZARR_LABELS ? zarr_labels_vlen(z, x, cells, b, err)
                                   : zarr_attr_vlen(z, x, cells, b, err);
    tdb_cells_free(cells);
    return r;
}

/* Bytes [off, off + len) of var-sized chunk c of array k into buf (may
 * be NULL with len 0), *n: the chunk's size.  The chunk is encoded whole
 * and kept in a slot (the least recently read goes) while the slots hold
 * at most ZARR_SLOT_BYTES.  Thread-safe. */
static int zarr_vlen_read(struct tdb_zarr *z, uint32_t k, uint64_t c,
                          uint64_t off, void *buf, size_t len, size_t *got,
                          size_t *n, struct tdb_error *err)
{
    struct zarr_arr *x = &z->v[k];
    *got = 0;
    pthread_mutex_lock(&z->lock);
    for (int i = 0; i < ZARR_SLOTS; i++) {
        struct zarr_slot *sl = &z->slot[i];
        if (sl->p && sl->k == k && sl->c == c) {
            sl->used = ++z->tick;
            *n = sl->n;
            if (off < sl->n && len) {
                *got = len < sl->n - off ? len : (size_t)(sl->n - off);
                memcpy(buf, sl->p + off, *got);
            }
            pthread_mutex_unlock(&z->lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&z->lock);
    struct tdb_buf b = {0};
    int r = zarr_encode(z, x, c, &b, err);
    if (r) {
        tdb_buf_free(&b);
        return r;
    }
    *n = b.len;
    if (off < b.len && len) {
        *got = len < b.len - off ? len : (size_t)(b.len - off);
        memcpy(buf, b.data + off, *got);
    }
    pthread_mutex_lock(&z->lock);
    if (x->sizes)
        x->sizes[c] = b.len;
    uint64_t held = 0;
    int lru = 0;
    for (int i = 0; i < ZARR_SLOTS; i++) {
        const struct zarr_slot *sl = &z->slot[i], *old = &z->slot[lru];
        held += sl->p ? sl->n : 0;
        if (!sl->p || (old->p && sl->used < old->used))
            lru = i;
    }
    struct zarr_slot *sl = &z->slot[lru];
    held -= sl->p ? sl->n : 0;
    if (b.data && held + b.len <= ZARR_SLOT_BYTES) {
        free(sl->p);
        *sl = (struct zarr_slot){k, c, b.data, b.len, ++z->tick};
        b.data = NULL;
    }
    pthread_mutex_unlock(&z->lock);
    tdb_buf_free(&b);
    return 0;
}

int tdb_zarr_chunk_size(struct tdb_zarr *z, uint32_t k, uint64_t c,
                        uint64_t *size, struct tdb_error *err)
{
    struct zarr_arr *x = &z->v[k];
    if (x->enc == ZARR_FIXED) {
        *size = x->chunk_bytes;
        return 0;
    }
    pthread_mutex_lock(&z->lock);
    *size = x->sizes ? x->sizes[c] : 0;
    pthread_mutex_unlock(&z->lock);
    if (*size)
        return 0;
    int r;
    if (x->kind != ZARR_LABELS) {
        /* the count, a length a cell, and the values: one pass over the
         * offsets of the chunk's tiles */
        struct tdb_cells *cells = NULL;
        struct tdb_fieldfile ff;
        uint64_t total = 0;
        r = zarr_chunk_cells(z, x, c, &cells, err);
        if (!r) {
            zarr_ff_init(&ff, z, x, cells, TDB_FILE_VALUES);
            r = tdb_fieldfile_size(&ff, &total, err);
            tdb_fieldfile_destroy(&ff);
        }
        tdb_cells_free(cells);
        *size = 4 + 4 * x->ncells + total;
    } else {
        /* labels: the codes are small, the values in memory */
        size_t n = 0, got;
        r = zarr_vlen_read(z, k, c, 0, NULL, 0, &got, &n, err);
        *size = n;
    }
    if (r)
        return r;
    pthread_mutex_lock(&z->lock);
    if (x->sizes)
        x->sizes[c] = *size;
    pthread_mutex_unlock(&z->lock);
    return 0;
}

/* ----------------------------------------------------------------- ahead */

/* A tile to decode ahead of the reads. */
struct zarr_job {
    struct tdb_pool_job job;    /* first: the pool's */
    struct tdb_zarr *z;
    struct tdb_frag *f;
    int field;
    unsigned part;
    uint64_t t;
};

static void zarr_job_run(struct tdb_pool_job *pj)
{
    struct zarr_job *j = (struct zarr_job *)pj;
    struct tdb_zarr *z = j->z;
    struct tdb_cache_entry *e = NULL;
    const struct tdb_tile *tile;
    /* only with room to spare, and not while a read loads it */
    const struct tdb_tile_ref k = {j->f, j->field, j->part, j->t};
    if (tdb_frag_tile_flags(&k, TDB_CACHE_TRY | TDB_CACHE_SPARE | TDB_CACHE_NOWAIT,
                            &e, &tile, NULL) == 0 && e)
        tdb_cache_release(j->f->arr->cache, e);
    free(j);
    pthread_mutex_lock(&z->lock);
    if (--z->ahead == 0)
        pthread_cond_broadcast(&z->idle);
    pthread_mutex_unlock(&z->lock);
}

static bool zarr_job_of(const struct tdb_pool_job *pj, void *arg)
{
    return pj->run == zarr_job_run && ((const struct zarr_job *)pj)->z == arg;
}

/* Takes back z's queued jobs and waits for those running. */
static void zarr_ahead_stop(struct tdb_zarr *z)
{
    pthread_mutex_lock(&z->lock);
    struct tdb_pool *pool = z->pool;
    pthread_mutex_unlock(&z->lock);
    struct tdb_pool_job *j = pool ? tdb_pool_take(pool, zarr_job_of, z) : NULL;
    unsigned taken = 0;
    while (j) {
        struct tdb_pool_job *next = j->next;
        free(j);
        taken++;
        j = next;
    }
    pthread_mutex_lock(&z->lock);
    z->ahead -= taken;
    while (z->ahead)
        pthread_cond_wait(&z->idle, &z->lock);
    pthread_mutex_unlock(&z->lock);
}

/* What zarr_plan_fn queues its tiles with. */
struct zarr_plan {
    struct tdb_zarr *z;
    struct tdb_pool *pool;
    struct zarr_job last;       /* the tile heard of last (told again at
                                 * the ends of its pieces) */
};

static int zarr_plan_fn(void *arg, struct tdb_frag *f, int field,
                        unsigned part, uint64_t t, uint64_t from, uint64_t to)
{
    struct zarr_plan *pl = arg;
    (void)from;
    (void)to;
    if (pl->last.f == f && pl->last.field == field && pl->last.part == part &&
        pl->last.t == t)
        return 0;
    pl->last = (struct zarr_job){.f = f, .field = field, .part = part, .t = t};
    struct zarr_job *j = malloc(sizeof *j);
    if (!j)
        return 1;               /* nothing more ahead */
    *j = pl->last;
    j->job.run = zarr_job_run;
    j->z = pl->z;
    pthread_mutex_lock(&pl->z->lock);
    pl->z->pool = pl->pool;
    pl->z->ahead++;
    pthread_mutex_unlock(&pl->z->lock);
    tdb_pool_submit(pl->pool, &j->job);
    return 0;
}

/* Queues the tiles of the chunks after chunk c of fixed-size array x. */
static void zarr_ahead(struct tdb_zarr *z, const struct zarr_arr *x,
                       uint64_t c, struct tdb_pool *pool)
{
    struct zarr_plan pl = {.z = z, .pool = pool};
    for (uint64_t n = c + 1; n <= c + ZARR_AHEAD_CHUNKS && n < x->nchunks; n++) {
        struct tdb_cells *cells = NULL;
        struct tdb_error err = {0};
        if (zarr_chunk_cells(z, x, n, &cells, &err))
            return;
        struct tdb_fieldfile ff;
        zarr_ff_init(&ff, z, x, cells,
                     x->kind == ZARR_VALIDITY ? TDB_FILE_VALIDITY
                                              : TDB_FILE_VALUES);
        struct tdb_tile_plan tp = {zarr_plan_fn, &pl, 0};
        tdb_fieldfile_tiles(&ff, 0, x->chunk_bytes, &tp, &err);
        tdb_fieldfile_destroy(&ff);
        tdb_cells_free(cells);
    }
}

int tdb_zarr_chunk_read(struct tdb_zarr *z, uint32_t k, uint64_t c,
                        struct tdb_zarr_read *rd, struct tdb_pool *pool,
                        struct tdb_error *err)
{
    const struct zarr_arr *x = &z->v[k];
    uint64_t off = rd->off;
    void *buf = rd->buf;
    size_t len = rd->len, *got = &rd->got;
    *got = 0;
    if (x->enc != ZARR_FIXED) {
        size_t n;
        return zarr_vlen_read(z, k, c, off, buf, len, got, &n, err);
    }
    if (off >= x->chunk_bytes || !len)
        return 0;
    if (len > x->chunk_bytes - off)
        len = (size_t)(x->chunk_bytes - off);
    if (x->kind == ZARR_COORD) {
        zarr_coord_read(z, x, c, off, buf, len);
        *got = len;
        return 0;
    }
    if (off == 0 && pool && (x->kind == ZARR_ATTR || x->kind == ZARR_VALIDITY))
        zarr_ahead(z, x, c, pool);
    struct tdb_cells *cells = NULL;
    int r = zarr_chunk_cells(z, x, c, &cells, err);
    if (!r && x->kind == ZARR_LABELS) {
        r = zarr_labels_fixed(z, x, cells, off, buf, len, err);
        *got = r ? 0 : len;
    } else if (!r) {
        r = zarr_cells_read(z, x, cells,
                            x->kind == ZARR_VALIDITY ? TDB_FILE_VALIDITY
                                                     : TDB_FILE_VALUES,
                            off, buf, len, got, err);
    }
    tdb_cells_free(cells);
    return r;
}
