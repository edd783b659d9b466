/* zarr.c: the __zarr folder of a dense array (docs/LAYOUT.md "__zarr"), a
 * Zarr v2 group over the array's view: one array per fixed-size attribute
 * whose chunks are the space tiles, one per nullable attribute's validity,
 * one per dimension holding its coordinates; .zgroup, .zattrs (the array
 * metadata) and the consolidated .zmetadata. */
#include "tree/zarr.h"
#include "tree/json.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

enum zarr_kind { ZARR_ATTR, ZARR_VALIDITY, ZARR_COORD };

struct zarr_arr {
    char *name;
    enum zarr_kind kind;
    uint32_t idx;               /* the attribute or dimension */
    uint32_t nd;                /* axes: the dimensions (an attribute with
                                 * several numbers a cell: one more) */
    uint64_t shape[TDB_MAX_DIMS + 1], chunks[TDB_MAX_DIMS + 1];
    uint64_t grid[TDB_MAX_DIMS + 1];    /* chunks along each axis */
    uint64_t nchunks, chunk_bytes;
    bool col;                   /* order F: a column-major tile as it is */
    json_t *zarray, *zattrs;
    char **keys;                /* chunk keys, made on first listing */
};

struct tdb_zarr {
    struct tdb_array *a;
    struct tdb_cells *view;
    uint32_t nd;
    uint64_t vlo[TDB_MAX_DIMS], vshape[TDB_MAX_DIMS], ext[TDB_MAX_DIMS];
    char *dimname[TDB_MAX_DIMS];
    struct zarr_arr *v;
    uint32_t n;
    json_t *zgroup, *zattrs, *zmeta;
    pthread_mutex_t lock;       /* keys */
};

static bool zarr_bytes_type(unsigned t)
{
    return t == TDB_CHAR || t == TDB_STRING_ASCII || t == TDB_STRING_UTF8;
}

/* ------------------------------------------------------------- documents */

/* n bytes in base64 (Zarr's fill value of a bytes dtype). */
static json_t *zarr_base64(const uint8_t *p, size_t n)
{
    if (n > INT32_MAX)
        return NULL;
    char *s = malloc(4 * (n / 3 + 1) + 1);
    if (!s)
        return NULL;
    int len = EVP_EncodeBlock((unsigned char *)s, p, (int)n);
    json_t *v = len >= 0 ? json_stringn(s, (size_t)len) : NULL;
    free(s);
    return v;
}

/* Zarr's fill_value of attribute `at` (one value of its dtype): null when
 * a cell's fill holds values that differ. */
static json_t *zarr_fill(const struct tdb_attr *at)
{
    unsigned vs = tdb_dt_size(at->type);
    if (zarr_bytes_type(at->type)) {
        if (!at->fill_size)
            return json_null();
        uint8_t *b = malloc(at->cell_val_num ? at->cell_val_num : 1);
        if (!b)
            return NULL;
        for (uint32_t i = 0; i < at->cell_val_num; i++)
            b[i] = at->fill[i % at->fill_size];
        json_t *v = zarr_base64(b, at->cell_val_num);
        free(b);
        return v;
    }
    if (!vs || at->fill_size < vs)
        return json_null();
    for (uint64_t i = vs; i + vs <= at->fill_size; i += vs)
        if (memcmp(at->fill, at->fill + i, vs))
            return json_null();
    if (at->type == TDB_BOOL)
        return json_boolean(at->fill[0] != 0);
    return tdb_json_value(at->type, at->fill, vs);
}

/* numpy's dtype of array x's values. */
static const char *zarr_dtype(const struct tdb_zarr *z,
                              const struct zarr_arr *x, char *buf, size_t cap)
{
    const struct tdb_schema *s = z->a->schema;
    if (x->kind == ZARR_VALIDITY)
        return "|b1";
    unsigned t = x->kind == ZARR_COORD ? s->dims[x->idx].type
                                       : s->attrs[x->idx].type;
    if (x->kind == ZARR_ATTR && zarr_bytes_type(t)) {
        snprintf(buf, cap, "|S%u", s->attrs[x->idx].cell_val_num);
        return buf;
    }
    return tdb_dt_numpy(t) ? tdb_dt_numpy(t) : "|u1";
}

static json_t *zarr_u64_list(struct tdb_jb *jb, const uint64_t *v, uint32_t n)
{
    json_t *l = tdb_jb_array(jb);
    for (uint32_t i = 0; i < n; i++)
        tdb_jb_push(jb, l, tdb_json_u64(v[i]));
    return l;
}

/* .zarray and .zattrs of array x. */
static int zarr_arr_docs(const struct tdb_zarr *z, struct zarr_arr *x)
{
    const struct tdb_schema *s = z->a->schema;
    struct tdb_jb jb = {0};
    char dt[32];
    json_t *o = x->zarray = tdb_jb_object(&jb);
    tdb_jb_set(&jb, o, "zarr_format", json_integer(2));
    tdb_jb_set(&jb, o, "shape", zarr_u64_list(&jb, x->shape, x->nd));
    tdb_jb_set(&jb, o, "chunks", zarr_u64_list(&jb, x->chunks, x->nd));
    tdb_jb_set(&jb, o, "dtype", tdb_json_cstr(zarr_dtype(z, x, dt, sizeof dt)));
    tdb_jb_set(&jb, o, "compressor", json_null());
    tdb_jb_set(&jb, o, "fill_value",
               x->kind == ZARR_ATTR ? zarr_fill(&s->attrs[x->idx])
               : x->kind == ZARR_VALIDITY
                   ? json_boolean(s->attrs[x->idx].fill_validity != 0)
                   : json_null());
    tdb_jb_set(&jb, o, "order", tdb_json_cstr(x->col ? "F" : "C"));
    tdb_jb_set(&jb, o, "filters", json_null());
    tdb_jb_set(&jb, o, "dimension_separator", tdb_json_cstr("."));
    json_t *at = x->zattrs = tdb_jb_object(&jb);
    json_t *dims = tdb_jb_array(&jb);
    if (x->kind == ZARR_COORD) {
        tdb_jb_push(&jb, dims, tdb_json_cstr(z->dimname[x->idx]));
    } else {
        for (uint32_t d = 0; d < z->nd; d++)
            tdb_jb_push(&jb, dims, tdb_json_cstr(z->dimname[d]));
    }
    if (x->nd > z->nd && x->kind != ZARR_COORD) {
        /* the values of a cell: a dimension of this array's own */
        size_t l = strlen(x->name);
        char *vn = malloc(l + 10);
        if (vn)
            snprintf(vn, l + 10, "__%s_values", x->name);
        tdb_jb_push(&jb, dims, vn ? tdb_json_cstr(vn) : NULL);
        free(vn);
    }
    tdb_jb_set(&jb, at, "_ARRAY_DIMENSIONS", dims);
    return jb.rc;
}

/* Metadata value it as JSON (a number, a list of numbers, a string), or
 * NULL when JSON has no form for it (blobs, strings that are not UTF-8). */
static json_t *zarr_meta_value(struct tdb_jb *jb, const struct tdb_meta_item *it)
{
    unsigned vs = tdb_dt_size(it->type);
    if (zarr_bytes_type(it->type))
        return tdb_json_is_utf8(it->value, (size_t)it->size)
                   ? tdb_json_bytes(it->value, (size_t)it->size) : NULL;
    bool num = tdb_dt_is_integer(it->type) || tdb_dt_is_float(it->type) ||
               it->type == TDB_BOOL;
    if (!num || !vs || it->size != (uint64_t)it->count * vs)
        return NULL;
    json_t *l = it->count == 1 ? NULL : tdb_jb_array(jb), *one = NULL;
    for (uint32_t i = 0; i < it->count; i++) {
        const uint8_t *p = it->value + (size_t)i * vs;
        one = it->type == TDB_BOOL ? json_boolean(*p != 0)
                                   : tdb_json_value(it->type, p, vs);
        if (l)
            tdb_jb_push(jb, l, one);
    }
    return l ? l : one;
}

/* .zgroup, .zattrs and .zmetadata. */
static int zarr_group_docs(struct tdb_zarr *z)
{
    struct tdb_jb jb = {0};
    z->zgroup = tdb_jb_object(&jb);
    tdb_jb_set(&jb, z->zgroup, "zarr_format", json_integer(2));
    z->zattrs = tdb_jb_object(&jb);
    const struct tdb_meta *m = z->a->meta;
    for (size_t i = 0; m && i < m->n && !jb.rc; i++) {
        const struct tdb_meta_item *it = &m->v[i];
        json_t *v;
        if (strlen(it->key) != it->key_len ||
            !tdb_json_is_utf8(it->key, it->key_len) ||
            !(v = zarr_meta_value(&jb, it)))
            continue;           /* no JSON form */
        tdb_jb_set(&jb, z->zattrs, it->key, v);
    }
    json_t *all = tdb_jb_object(&jb);
    tdb_jb_set(&jb, all, ".zgroup", json_incref(z->zgroup));
    tdb_jb_set(&jb, all, ".zattrs", json_incref(z->zattrs));
    for (uint32_t k = 0; k < z->n && !jb.rc; k++) {
        struct zarr_arr *x = &z->v[k];
        size_t l = strlen(x->name) + 9;
        char *key = malloc(l);
        if (!key) {
            jb.rc = TDB_E_NOMEM;
            break;
        }
        snprintf(key, l, "%s/.zarray", x->name);
        tdb_jb_set(&jb, all, key, json_incref(x->zarray));
        snprintf(key, l, "%s/.zattrs", x->name);
        tdb_jb_set(&jb, all, key, json_incref(x->zattrs));
        free(key);
    }
    z->zmeta = tdb_jb_object(&jb);
    tdb_jb_set(&jb, z->zmeta, "metadata", all);
    tdb_jb_set(&jb, z->zmeta, "zarr_consolidated_format", json_integer(1));
    return jb.rc;
}

/* --------------------------------------------------------------- arrays */

/* Whether name can be an array of z: UTF-8 (a JSON key), not a Zarr
 * file's, and not taken. */
static bool zarr_name_free(const struct tdb_zarr *z, const char *name)
{
    if (!tdb_json_is_utf8(name, strlen(name)) || !strncmp(name, ".z", 2))
        return false;
    for (uint32_t k = 0; k < z->n; k++)
        if (!strcmp(z->v[k].name, name))
            return false;
    return true;
}

/* Fills x's axes; false when it is too large to show. */
static bool zarr_geometry(const struct tdb_zarr *z, struct zarr_arr *x)
{
    const struct tdb_schema *s = z->a->schema;
    uint64_t cell;
    if (x->kind == ZARR_COORD) {
        x->nd = 1;
        x->shape[0] = z->vshape[x->idx];
        x->chunks[0] = z->ext[x->idx];
        cell = tdb_dt_size(s->dims[x->idx].type);
    } else {
        const struct tdb_attr *at = &s->attrs[x->idx];
        x->nd = z->nd;
        for (uint32_t d = 0; d < z->nd; d++) {
            x->shape[d] = z->vshape[d];
            x->chunks[d] = z->ext[d];
        }
        cell = x->kind == ZARR_VALIDITY
                   ? 1 : (uint64_t)tdb_dt_size(at->type) * at->cell_val_num;
        if (x->kind == ZARR_ATTR && at->cell_val_num > 1 &&
            !zarr_bytes_type(at->type)) {
            x->shape[x->nd] = x->chunks[x->nd] = at->cell_val_num;
            x->nd++;
            cell = tdb_dt_size(at->type);
        }
        /* a column-major tile is a chunk in Fortran order, but a cell's
         * values would then not lie together: those stay in C order */
        x->col = s->cell_order == TDB_COL_MAJOR && x->nd == z->nd;
    }
    x->nchunks = 1;
    x->chunk_bytes = cell;
    for (uint32_t d = 0; d < x->nd; d++) {
        x->grid[d] = (x->shape[d] + x->chunks[d] - 1) / x->chunks[d];
        if (!tdb_mul_ok(x->nchunks, x->grid[d], &x->nchunks) ||
            !tdb_mul_ok(x->chunk_bytes, x->chunks[d], &x->chunk_bytes))
            return false;
    }
    return cell && x->nchunks <= TDB_ZARR_MAX_CHUNKS &&
           x->chunk_bytes <= TDB_ZARR_MAX_CHUNK_BYTES;
}

/* Adds an array of `kind` for attribute or dimension idx, unless it has
 * no usable name or is too large.  @return 0 or TDB_E_NOMEM. */
static int zarr_add(struct tdb_zarr *z, enum zarr_kind kind, uint32_t idx)
{
    const struct tdb_schema *s = z->a->schema;
    char *name = kind == ZARR_COORD ? strdup(z->dimname[idx])
                 : tdb_mount_name(s->attrs[idx].name,
                                  kind == ZARR_VALIDITY ? ".validity" : "");
    if (!name)
        return TDB_E_NOMEM;
    struct zarr_arr *x = &z->v[z->n];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->idx = idx;
    if (!zarr_name_free(z, name) || !zarr_geometry(z, x)) {
        free(name);
        return 0;
    }
    x->name = name;
    z->n++;
    return zarr_arr_docs(z, x);
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

int tdb_zarr_open(struct tdb_zarr **out, struct tdb_array *a,
                  struct tdb_cells *view, struct tdb_error *err)
{
    *out = NULL;
    const struct tdb_schema *s = a->schema;
    struct tdb_zarr *z = calloc(1, sizeof *z);
    if (!z)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    pthread_mutex_init(&z->lock, NULL);
    z->a = a;
    z->view = view;
    z->v = calloc((size_t)s->nattrs * 2 + s->ndims + 1, sizeof *z->v);
    int r = z->v ? 0 : TDB_E_NOMEM;
    if (!r && (!tdb_cells_dense_region(view, &z->nd, z->vlo, z->vshape) ||
               z->nd != s->ndims || !zarr_grid(z))) {
        tdb_zarr_free(z);
        return 0;               /* no Zarr form */
    }
    for (uint32_t i = 0; !r && i < s->nattrs; i++) {
        if (s->attrs[i].cell_val_num == TDB_VAR_NUM)
            continue;           /* var-sized: no Zarr form */
        r = zarr_add(z, ZARR_ATTR, i);
        if (!r && s->attrs[i].nullable)
            r = zarr_add(z, ZARR_VALIDITY, i);
    }
    for (uint32_t d = 0; !r && d < s->ndims; d++)
        r = zarr_add(z, ZARR_COORD, d);
    if (!r)
        r = zarr_group_docs(z);
    if (r) {
        tdb_zarr_free(z);
        return tdb_err(err, r, "__zarr: out of memory");
    }
    *out = z;
    return 0;
}

void tdb_zarr_free(struct tdb_zarr *z)
{
    if (!z)
        return;
    for (uint32_t k = 0; k < z->n; k++) {
        struct zarr_arr *x = &z->v[k];
        free(x->name);
        json_decref(x->zarray);
        json_decref(x->zattrs);
        if (x->keys)
            free(x->keys[0]);
        free(x->keys);
    }
    for (uint32_t d = 0; d < TDB_MAX_DIMS; d++)
        free(z->dimname[d]);
    json_decref(z->zgroup);
    json_decref(z->zattrs);
    json_decref(z->zmeta);
    free(z->v);
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

uint64_t tdb_zarr_chunk_bytes(const struct tdb_zarr *z, uint32_t k)
{
    return z->v[k].chunk_bytes;
}

int tdb_zarr_doc(const struct tdb_zarr *z, int k, int which,
                 const char **name, struct tdb_buf *out)
{
    static const char *const gnames[] = {".zgroup", ".zattrs", ".zmetadata"};
    static const char *const anames[] = {".zarray", ".zattrs"};
    const json_t *doc;
    *out = (struct tdb_buf){0};
    if (k < 0 && which >= 0 && which < 3) {
        *name = gnames[which];
        doc = which == 0 ? z->zgroup : which == 1 ? z->zattrs : z->zmeta;
    } else if (k >= 0 && (uint32_t)k < z->n && which >= 0 && which < 2) {
        *name = anames[which];
        doc = which == 0 ? z->v[k].zarray : z->v[k].zattrs;
    } else {
        return TDB_E_NOENT;
    }
    int r = tdb_json_dump_ascii(doc, out);
    if (r)
        tdb_buf_free(out);
    return r;
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

int tdb_zarr_chunk_read(struct tdb_zarr *z, uint32_t k, uint64_t c,
                        uint64_t off, void *buf, size_t len, size_t *got,
                        struct tdb_error *err)
{
    const struct zarr_arr *x = &z->v[k];
    *got = 0;
    if (off >= x->chunk_bytes || !len)
        return 0;
    if (len > x->chunk_bytes - off)
        len = (size_t)(x->chunk_bytes - off);
    uint64_t at[TDB_MAX_DIMS + 1], rest = c;
    for (uint32_t d = x->nd; d-- > 0;) {
        at[d] = rest % x->grid[d];
        rest /= x->grid[d];
    }
    if (x->kind == ZARR_COORD) {
        zarr_coord_read(z, x, at[0], off, buf, len);
        *got = len;
        return 0;
    }
    /* the chunk's box of the view, tile extents from the view's first
     * cell, in the array's cell order */
    struct tdb_dense_pick p;
    memset(&p, 0, sizeof p);
    p.col_major = x->col;
    for (uint32_t d = 0; d < z->nd; d++) {
        p.start[d] = at[d] * z->ext[d];
        p.step[d] = 1;
        p.count[d] = z->ext[d];
    }
    struct tdb_cells *cells = NULL;
    int r = tdb_cells_dense_pick(&cells, z->view, &p, err);
    if (r)
        return r;
    struct tdb_fieldfile ff;
    tdb_fieldfile_init(&ff, cells, z->a, z->a->schema, false, x->idx,
                       x->kind == ZARR_VALIDITY ? TDB_FILE_VALIDITY
                                                : TDB_FILE_VALUES);
    r = tdb_fieldfile_read(&ff, off, buf, len, got, err);
    tdb_fieldfile_destroy(&ff);
    tdb_cells_free(cells);
    return r;
}
