/* json.c: the JSON documents of the mount contract (__array.json,
 * __fragment.json, __group.json). */
#include "json.h"
#include "filters/filter.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

static void json_sep(struct tdb_json *j)
{
    if (j->need_comma && !j->err)
        j->err = tdb_buf_append(&j->b, ", ", 2);
    j->need_comma = true;
}

void tdb_json_raw(struct tdb_json *j, const char *s)
{
    if (!j->err)
        j->err = tdb_buf_append(&j->b, s, strlen(s));
}

void tdb_json_open(struct tdb_json *j, char c)
{
    json_sep(j);
    char s[2] = {c, 0};
    tdb_json_raw(j, s);
    j->need_comma = false;
}

void tdb_json_close(struct tdb_json *j, char c)
{
    char s[2] = {c, 0};
    tdb_json_raw(j, s);
    j->need_comma = true;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t json_utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                 : s[0] >= 0xe0                ? 3
                 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
                                               : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

static void json_str_nosep(struct tdb_json *j, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    tdb_json_raw(j, "\"");
    for (size_t i = 0; i < n && !j->err; i++) {
        unsigned char c = u[i];
        char e[8];
        size_t ul;
        if (c >= 0x80 && (ul = json_utf8_len(u + i, n - i))) {
            /* valid UTF-8 goes through as it is */
            j->err = tdb_buf_append(&j->b, u + i, ul);
            i += ul - 1;
            continue;
        }
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            e[2] = 0;
        } else if (c < 0x20 || c >= 0x7f) {
            snprintf(e, sizeof e, "\\u%04x", c);
        } else {
            e[0] = (char)c;
            e[1] = 0;
        }
        tdb_json_raw(j, e);
    }
    tdb_json_raw(j, "\"");
}

void tdb_json_key(struct tdb_json *j, const char *k)
{
    json_sep(j);
    json_str_nosep(j, k, strlen(k));
    tdb_json_raw(j, ": ");
    j->need_comma = false;
}

void tdb_json_str(struct tdb_json *j, const char *s, size_t n)
{
    json_sep(j);
    json_str_nosep(j, s, n);
}

void tdb_json_cstr(struct tdb_json *j, const char *s)
{
    tdb_json_str(j, s, strlen(s));
}

void tdb_json_u64(struct tdb_json *j, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%" PRIu64, v);
    json_sep(j);
    tdb_json_raw(j, s);
}

void tdb_json_bool(struct tdb_json *j, bool v)
{
    json_sep(j);
    tdb_json_raw(j, v ? "true" : "false");
}

static void json_double(struct tdb_json *j, double d)
{
    char s[40];
    if (isnan(d) || isinf(d))
        snprintf(s, sizeof s, "\"%s\"", isnan(d) ? "NaN" : d > 0 ? "Infinity"
                                                                 : "-Infinity");
    else
        snprintf(s, sizeof s, "%.17g", d);
    json_sep(j);
    tdb_json_raw(j, s);
}

void tdb_json_value(struct tdb_json *j, unsigned type, const uint8_t *v,
                    uint64_t n)
{
    char s[32];
    if (tdb_dt_is_string(type) || n != tdb_dt_size(type)) {
        tdb_json_str(j, (const char *)v, (size_t)n);
        return;
    }
    if (type == TDB_FLOAT32) {
        float f;
        memcpy(&f, v, 4);
        json_double(j, f);
        return;
    }
    if (type == TDB_FLOAT64) {
        double d;
        memcpy(&d, v, 8);
        json_double(j, d);
        return;
    }
    uint8_t t[8] = {0};
    memcpy(t, v, (size_t)n);
    uint64_t u = tdb_le64(t);
    if (tdb_dt_is_signed_int(type)) {
        unsigned sh = (unsigned)(64 - 8 * n);
        int64_t x = (int64_t)(u << sh) >> sh;
        snprintf(s, sizeof s, "%" PRId64, x);
    } else {
        snprintf(s, sizeof s, "%" PRIu64, u);
    }
    json_sep(j);
    tdb_json_raw(j, s);
}

static const char *json_layout(unsigned l)
{
    switch (l) {
    case TDB_ROW_MAJOR: return "row-major";
    case TDB_COL_MAJOR: return "col-major";
    case TDB_GLOBAL_ORDER: return "global-order";
    case TDB_UNORDERED: return "unordered";
    case TDB_HILBERT: return "hilbert";
    default: return "unknown";
    }
}

static void json_pipeline(struct tdb_json *j, const char *key,
                          const struct tdb_pipeline *p)
{
    tdb_json_key(j, key);
    tdb_json_open(j, '[');
    for (uint32_t i = 0; i < p->n; i++) {
        const struct tdb_filter *f = &p->f[i];
        tdb_json_open(j, '{');
        tdb_json_key(j, "type");
        tdb_json_cstr(j, f->ops ? f->ops->name : "UNKNOWN");
        switch (f->type) {
        case TDB_FILTER_GZIP: case TDB_FILTER_ZSTD: case TDB_FILTER_LZ4:
        case TDB_FILTER_RLE: case TDB_FILTER_BZIP2: case TDB_FILTER_DICTIONARY:
        case TDB_FILTER_DELTA: case TDB_FILTER_DOUBLE_DELTA: {
            char s[16];
            snprintf(s, sizeof s, "%d", f->level);
            tdb_json_key(j, "level");
            tdb_json_raw(j, s);
            if ((f->type == TDB_FILTER_DELTA || f->type == TDB_FILTER_DOUBLE_DELTA) &&
                f->reinterpret_type != TDB_ANY && tdb_dt_name(f->reinterpret_type)) {
                tdb_json_key(j, "reinterpret_datatype");
                tdb_json_cstr(j, tdb_dt_name(f->reinterpret_type));
            }
            break;
        }
        case TDB_FILTER_BIT_WIDTH_REDUCTION: case TDB_FILTER_POSITIVE_DELTA:
            tdb_json_key(j, "max_window");
            tdb_json_u64(j, f->max_window);
            break;
        case TDB_FILTER_SCALE_FLOAT:
            tdb_json_key(j, "scale");
            json_double(j, f->scale);
            tdb_json_key(j, "offset");
            json_double(j, f->offset);
            tdb_json_key(j, "byte_width");
            tdb_json_u64(j, f->byte_width);
            break;
        default:
            break;
        }
        tdb_json_close(j, '}');
    }
    tdb_json_close(j, ']');
    if (p->max_chunk_size != 65536) {
        char k[64];
        snprintf(k, sizeof k, "%s_max_chunk_size", key);
        tdb_json_key(j, k);
        tdb_json_u64(j, p->max_chunk_size);
    }
}

static void json_hex(struct tdb_json *j, const uint8_t *p, uint64_t n)
{
    json_sep(j);
    tdb_json_raw(j, "\"");
    for (uint64_t i = 0; i < n; i++) {
        char s[3];
        snprintf(s, sizeof s, "%02x", p[i]);
        tdb_json_raw(j, s);
    }
    tdb_json_raw(j, "\"");
}

void tdb_json_schema(struct tdb_json *j, const struct tdb_schema *s)
{
    tdb_json_open(j, '{');
    tdb_json_key(j, "array_type");
    tdb_json_cstr(j, s->array_type == TDB_SPARSE ? "sparse" : "dense");
    tdb_json_key(j, "tile_order");
    tdb_json_cstr(j, json_layout(s->tile_order));
    tdb_json_key(j, "cell_order");
    tdb_json_cstr(j, json_layout(s->cell_order));
    tdb_json_key(j, "capacity");
    tdb_json_u64(j, s->capacity);
    tdb_json_key(j, "allows_duplicates");
    tdb_json_bool(j, s->allows_dups);
    tdb_json_key(j, "dims");
    tdb_json_open(j, '[');
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        unsigned vs = tdb_dt_size(dim->type);
        tdb_json_open(j, '{');
        tdb_json_key(j, "name");
        tdb_json_cstr(j, dim->name);
        tdb_json_key(j, "datatype");
        tdb_json_cstr(j, tdb_dt_name(dim->type) ? tdb_dt_name(dim->type) : "?");
        if (dim->cell_val_num != TDB_VAR_NUM) {
            tdb_json_key(j, "domain");
            tdb_json_open(j, '[');
            tdb_json_value(j, dim->type, dim->lo, vs);
            tdb_json_value(j, dim->type, dim->hi, vs);
            tdb_json_close(j, ']');
            tdb_json_key(j, "tile_extent");
            if (dim->has_extent)
                tdb_json_value(j, dim->type, dim->extent, vs);
            else
                tdb_json_raw(j, "null"), j->need_comma = true;
        } else {
            tdb_json_key(j, "var");
            tdb_json_bool(j, true);
        }
        json_pipeline(j, "filters", &dim->filters);
        tdb_json_close(j, '}');
    }
    tdb_json_close(j, ']');
    tdb_json_key(j, "attrs");
    tdb_json_open(j, '[');
    for (uint32_t i = 0; i < s->nattrs; i++) {
        const struct tdb_attr *a = &s->attrs[i];
        tdb_json_open(j, '{');
        tdb_json_key(j, "name");
        tdb_json_cstr(j, a->name);
        tdb_json_key(j, "datatype");
        tdb_json_cstr(j, tdb_dt_name(a->type) ? tdb_dt_name(a->type) : "?");
        tdb_json_key(j, "cell_val_num");
        if (a->cell_val_num == TDB_VAR_NUM)
            tdb_json_cstr(j, "var");
        else
            tdb_json_u64(j, a->cell_val_num);
        tdb_json_key(j, "nullable");
        tdb_json_bool(j, a->nullable);
        tdb_json_key(j, "fill_hex");
        json_hex(j, a->fill, a->fill_size);
        if (a->nullable) {
            tdb_json_key(j, "fill_validity");
            tdb_json_u64(j, a->fill_validity);
        }
        if (a->enumeration) {
            tdb_json_key(j, "enumeration");
            tdb_json_cstr(j, a->enumeration);
        }
        json_pipeline(j, "filters", &a->filters);
        tdb_json_close(j, '}');
    }
    tdb_json_close(j, ']');
    if (s->nenums) {
        tdb_json_key(j, "enumerations");
        tdb_json_open(j, '[');
        for (uint32_t i = 0; i < s->nenums; i++) {
            const struct tdb_enumeration *e = &s->enums[i];
            tdb_json_open(j, '{');
            tdb_json_key(j, "name");
            tdb_json_cstr(j, e->name);
            tdb_json_key(j, "datatype");
            tdb_json_cstr(j, tdb_dt_name(e->type) ? tdb_dt_name(e->type) : "?");
            tdb_json_key(j, "cell_val_num");
            if (e->cell_val_num == TDB_VAR_NUM)
                tdb_json_cstr(j, "var");
            else
                tdb_json_u64(j, e->cell_val_num);
            tdb_json_key(j, "ordered");
            tdb_json_bool(j, e->ordered);
            tdb_json_key(j, "data_hex");
            json_hex(j, e->data, e->data_size);
            if (e->cell_val_num == TDB_VAR_NUM) {
                tdb_json_key(j, "offsets_hex");
                json_hex(j, e->offsets, e->offsets_size);
            }
            tdb_json_close(j, '}');
        }
        tdb_json_close(j, ']');
    }
    tdb_json_key(j, "current_domain");
    tdb_json_ranges(j, s, s->has_current_domain ? s->current_domain : NULL);
    json_pipeline(j, "coords_filters", &s->coords_filters);
    json_pipeline(j, "offsets_filters", &s->offsets_filters);
    json_pipeline(j, "validity_filters", &s->validity_filters);
    tdb_json_key(j, "version");
    tdb_json_u64(j, s->version);
    tdb_json_close(j, '}');
}

void tdb_json_ranges(struct tdb_json *j, const struct tdb_schema *s,
                     const struct tdb_range *r)
{
    if (!r) {
        json_sep(j);
        tdb_json_raw(j, "null");
        return;
    }
    tdb_json_open(j, '[');
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        tdb_json_open(j, '[');
        if (dim->cell_val_num == TDB_VAR_NUM) {
            tdb_json_str(j, (const char *)r[d].vlo, (size_t)r[d].vlo_size);
            tdb_json_str(j, (const char *)r[d].vhi, (size_t)r[d].vhi_size);
        } else {
            tdb_json_value(j, dim->type, r[d].lo, tdb_dt_size(dim->type));
            tdb_json_value(j, dim->type, r[d].hi, tdb_dt_size(dim->type));
        }
        tdb_json_close(j, ']');
    }
    tdb_json_close(j, ']');
}

int tdb_json_fragment(struct tdb_buf *out, const struct tdb_frag *f,
                      uint64_t bytes_on_disk)
{
    struct tdb_json j = {{0}, 0, false};
    const struct tdb_fragmeta *fm = f->fm;
    tdb_json_open(&j, '{');
    tdb_json_key(&j, "name");
    tdb_json_cstr(&j, fm->name);
    tdb_json_key(&j, "format_version");
    tdb_json_u64(&j, fm->version);
    tdb_json_key(&j, "timestamps");
    tdb_json_open(&j, '[');
    tdb_json_u64(&j, fm->t1);
    tdb_json_u64(&j, fm->t2);
    tdb_json_close(&j, ']');
    tdb_json_key(&j, "dense");
    tdb_json_bool(&j, fm->dense);
    tdb_json_key(&j, "non_empty_domain");
    tdb_json_ranges(&j, f->fs, fm->ned_null ? NULL : fm->ned);
    tdb_json_key(&j, "cell_num");
    tdb_json_u64(&j, f->ncells);
    tdb_json_key(&j, "bytes_on_disk");
    tdb_json_u64(&j, bytes_on_disk);
    if (fm->schema_name) {
        tdb_json_key(&j, "schema_name");
        tdb_json_cstr(&j, fm->schema_name);
    }
    tdb_json_key(&j, "has_timestamps");
    tdb_json_bool(&j, fm->has_timestamps);
    tdb_json_key(&j, "has_delete_meta");
    tdb_json_bool(&j, fm->has_delete_meta);
    tdb_json_close(&j, '}');
    tdb_json_raw(&j, "\n");
    if (j.err) {
        tdb_buf_free(&j.b);
        return j.err;
    }
    *out = j.b;
    return 0;
}
