/* fragmeta.c: fragment metadata (format_spec/fragment.md: footer, R-tree, tile offsets and sizes, legacy layout; consolidated_fragment_metadata_file.md). */
#include "model/fragmeta.h"
#include "model/generic_tile.h"
#include "core/names.h"

#include <stdio.h>
#include <stdlib.h>

#define FRAGMETA_FILE "__fragment_metadata.tdb"
#define FRAGMETA_LEGACY_SCHEMA "__array_schema.tdb"
#define FRAGMETA_MAX_VERSION 23u
/* A footer is a few words per field; anything larger is corrupt. */
#define FRAGMETA_MAX_FOOTER (UINT64_C(1) << 30)

/* ------------------------------------------------------------------ names */

/* ---------------------------------------------------------------- helpers */

static char *fragmeta_strdup(const char *s)
{
    size_t n = strlen(s);
    char *r = malloc(n + 1);
    if (r)
        memcpy(r, s, n + 1);
    return r;
}

static char *fragmeta_strcat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *r = malloc(na + nb + 1);
    if (!r)
        return NULL;
    memcpy(r, a, na);
    memcpy(r + na, b, nb + 1);
    return r;
}

/* Version 8 percent-encodes some characters of attribute and dimension
 * names in file names, with TileDB's (partly unusual) table. */
static const char *fragmeta_pct(char ch)
{
    switch (ch) {
    case '!': return "%21";
    case '#': return "%23";
    case '$': return "%24";
    case '%': return "%25";
    case '&': return "%26";
    case '\'': return "%27";
    case '(': return "%28";
    case ')': return "%29";
    case '*': return "%2A";
    case '+': return "%2B";
    case ',': return "%2C";
    case '/': return "%2F";
    case ':': return "%3A";
    case ';': return "%3B";
    case '=': return "%3D";
    case '?': return "%3F";
    case '@': return "%40";
    case '[': return "%5B";
    case ']': return "%5D";
    case '"': return "%22";
    case '<': return "%20";
    case '>': return "%2D";
    case '\\': return "%30";
    case '|': return "%3C";
    default: return NULL;
    }
}

static char *fragmeta_encode_name(const char *name, uint32_t version)
{
    /* an anonymous attribute ("") is named ".tdb", as TileDB does */
    if (version != 8)
        return fragmeta_strdup(name);
    size_t n = 0;
    for (const char *q = name; *q; q++)
        n += fragmeta_pct(*q) ? 3 : 1;
    char *r = malloc(n + 1), *w = r;
    if (!r)
        return NULL;
    for (const char *q = name; *q; q++) {
        const char *enc = fragmeta_pct(*q);
        if (enc) {
            memcpy(w, enc, 3);
            w += 3;
        } else {
            *w++ = *q;
        }
    }
    *w = '\0';
    return r;
}

/* Size in bytes of one coordinate of fixed-sized dimension d; 0 if the
 * schema gives an impossible one. */
static unsigned fragmeta_coord_size(const struct tdb_dim *d)
{
    unsigned s = tdb_dt_size(d->type);
    return s <= 8 ? s : 0;
}

static bool fragmeta_dim_var(const struct tdb_dim *d)
{
    return d->cell_val_num == TDB_VAR_NUM;
}

const struct tdb_schema *tdb_schema_set_find(const struct tdb_schema_set *s,
                                             const char *name)
{
    if (!s || !name)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] && s->v[i]->name && strcmp(s->v[i]->name, name) == 0)
            return s->v[i];
    return NULL;
}

/* The schema of a fragment written before version 10: the legacy schema
 * file, else the oldest schema. */
static const struct tdb_schema *
fragmeta_legacy_schema(const struct tdb_schema_set *s)
{
    const struct tdb_schema *r = tdb_schema_set_find(s, FRAGMETA_LEGACY_SCHEMA);
    if (!r && s && s->n > 0)
        r = s->v[0];
    return r;
}

/* --------------------------------------------------------------- fields */

/* The kind, place on disk and index in the schema of every field. */
static void fragmeta_field_kinds(struct tdb_fragmeta *fm)
{
    const struct tdb_schema *s = fm->schema;
    uint32_t na = s->nattrs, nd = s->ndims;
    bool split = fm->version >= 5;
    uint32_t f = 0;
    for (uint32_t i = 0; i < na; i++, f++) {
        fm->kinds[f] = TDB_FIELD_ATTR;
        fm->disk[f] = i;
        fm->index[f] = i;
        fm->is_var[f] = s->attrs[i].cell_val_num == TDB_VAR_NUM;
        fm->is_nullable[f] = fm->version >= 7 && s->attrs[i].nullable;
    }
    if (split) {
        for (uint32_t j = 0; j < nd; j++, f++) {
            fm->kinds[f] = TDB_FIELD_DIM;
            fm->disk[f] = na + 1 + j;
            fm->index[f] = j;
            fm->is_var[f] = fragmeta_dim_var(&s->dims[j]);
        }
    } else {
        fm->kinds[f] = TDB_FIELD_COORDS;
        fm->disk[f] = na;
        f++;
    }
    uint32_t next = na + 1 + (split ? nd : 0);
    if (fm->has_timestamps) {
        fm->kinds[f] = TDB_FIELD_TIMESTAMPS;
        fm->disk[f++] = next++;
    }
    if (fm->has_delete_meta) {
        fm->kinds[f] = TDB_FIELD_DELETE_TS;
        fm->disk[f++] = next++;
        fm->kinds[f] = TDB_FIELD_DELETE_IDX;
        fm->disk[f++] = next++;
    }
}

/* The name of field f's files without ".tdb" (NULL: out of memory). */
static char *fragmeta_field_base(const struct tdb_fragmeta *fm, uint32_t f)
{
    const struct tdb_schema *s = fm->schema;
    char num[24];
    switch (fm->kinds[f]) {
    case TDB_FIELD_ATTR:
        if (fm->version < 9)
            return fragmeta_encode_name(s->attrs[fm->index[f]].name,
                                        fm->version);
        snprintf(num, sizeof num, "a%u", fm->index[f]);
        return fragmeta_strdup(num);
    case TDB_FIELD_DIM:
        if (fm->version < 9)
            return fragmeta_encode_name(s->dims[fm->index[f]].name,
                                        fm->version);
        snprintf(num, sizeof num, "d%u", fm->index[f]);
        return fragmeta_strdup(num);
    case TDB_FIELD_COORDS: return fragmeta_strdup("__coords");
    case TDB_FIELD_TIMESTAMPS: return fragmeta_strdup("t");
    case TDB_FIELD_DELETE_TS: return fragmeta_strdup("dt");
    case TDB_FIELD_DELETE_IDX: return fragmeta_strdup("dci");
    }
    return NULL;
}

/* Lays out the fields of the fragment (see fragmeta.h) once version,
 * schema, has_timestamps and has_delete_meta are known. */
static int fragmeta_fields(struct tdb_fragmeta *fm, struct tdb_error *err)
{
    const struct tdb_schema *s = fm->schema;
    bool split = fm->version >= 5;
    uint32_t n = s->nattrs + (split ? s->ndims : 1) +
                 (fm->has_timestamps ? 1 : 0) + (fm->has_delete_meta ? 2 : 0);
    fm->nfields = n;
    fm->kinds = calloc(n, sizeof *fm->kinds);
    fm->disk = calloc(n, sizeof *fm->disk);
    fm->index = calloc(n, sizeof *fm->index);
    fm->is_var = calloc(n, sizeof *fm->is_var);
    fm->is_nullable = calloc(n, sizeof *fm->is_nullable);
    fm->file_names = calloc(n, sizeof *fm->file_names);
    fm->file_var_names = calloc(n, sizeof *fm->file_var_names);
    fm->file_validity_names = calloc(n, sizeof *fm->file_validity_names);
    fm->tiles = calloc(n, sizeof *fm->tiles);
    if (!fm->kinds || !fm->disk || !fm->index || !fm->is_var ||
        !fm->is_nullable || !fm->file_names || !fm->file_var_names ||
        !fm->file_validity_names || !fm->tiles)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    fragmeta_field_kinds(fm);
    for (uint32_t f = 0; f < n; f++) {
        char *base = fragmeta_field_base(fm, f);
        if (!base)
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory",
                           fm->meta_path);
        fm->file_names[f] = fragmeta_strcat(base, ".tdb");
        if (fm->is_var[f])
            fm->file_var_names[f] = fragmeta_strcat(base, "_var.tdb");
        if (fm->is_nullable[f])
            fm->file_validity_names[f] = fragmeta_strcat(base, "_validity.tdb");
        free(base);
        if (!fm->file_names[f] || (fm->is_var[f] && !fm->file_var_names[f]) ||
            (fm->is_nullable[f] && !fm->file_validity_names[f]))
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory",
                           fm->meta_path);
    }
    return 0;
}

/* ---------------------------------------------------------------- ranges */

/* Reads one MBR (or non-empty domain): ndims 1D ranges.  Before version 5
 * every range is two fixed values.  Var-sized bounds are copied when
 * `copy`, else they point into the cursor's bytes. */
static int fragmeta_read_ranges(const struct tdb_fragmeta *fm,
                                struct tdb_cursor *c, struct tdb_range *r,
                                bool copy)
{
    const struct tdb_schema *s = fm->schema;
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        memset(&r[d], 0, sizeof r[d]);
        if (fm->version >= 5 && fragmeta_dim_var(dim)) {
            uint64_t rsize, ssize;
            const uint8_t *p;
            if (tdb_cur_u64(c, &rsize) || tdb_cur_u64(c, &ssize) ||
                ssize > rsize || rsize > tdb_cur_left(c) ||
                tdb_cur_bytes(c, (size_t)rsize, &p))
                return -1;
            r[d].vlo_size = ssize;
            r[d].vhi_size = rsize - ssize;
            if (copy) {
                r[d].vlo = malloc(r[d].vlo_size + 1);
                r[d].vhi = malloc(r[d].vhi_size + 1);
                if (!r[d].vlo || !r[d].vhi)
                    return TDB_E_NOMEM;
                memcpy(r[d].vlo, p, r[d].vlo_size);
                r[d].vlo[r[d].vlo_size] = 0;
                memcpy(r[d].vhi, p + ssize, r[d].vhi_size);
                r[d].vhi[r[d].vhi_size] = 0;
            } else {
                r[d].vlo = (uint8_t *)p;
                r[d].vhi = (uint8_t *)p + ssize;
            }
        } else {
            unsigned cs = fragmeta_coord_size(dim);
            if (cs == 0 || dim->cell_val_num != 1)
                return -1;
            if (tdb_cur_copy(c, r[d].lo, cs) || tdb_cur_copy(c, r[d].hi, cs))
                return -1;
        }
    }
    return 0;
}

static void fragmeta_free_ranges(struct tdb_range *r, uint32_t n)
{
    if (!r)
        return;
    for (uint32_t d = 0; d < n; d++) {
        free(r[d].vlo);
        free(r[d].vhi);
    }
}

/* Sum of 2 * coordinate size over all dimensions (all fixed). */
static uint64_t fragmeta_fixed_domain_size(const struct tdb_schema *s)
{
    uint64_t n = 0;
    for (uint32_t d = 0; d < s->ndims; d++)
        n += 2u * fragmeta_coord_size(&s->dims[d]);
    return n;
}

static bool fragmeta_all_fixed(const struct tdb_schema *s)
{
    for (uint32_t d = 0; d < s->ndims; d++)
        if (fragmeta_dim_var(&s->dims[d]))
            return false;
    return true;
}

/* ----------------------------------------------------------------- footer */

/* Reads `n` u64 from the footer and scatters them to per-field array *out
 * (nfields entries; a field whose disk index is >= n gets 0). */
static int fragmeta_read_list(struct tdb_fragmeta *fm, struct tdb_cursor *c,
                              uint32_t n, uint64_t **out)
{
    uint64_t bytes;
    if (!tdb_mul_ok(n, 8, &bytes) || bytes > tdb_cur_left(c))
        return -1;
    uint64_t *v = calloc(fm->nfields ? fm->nfields : 1, sizeof *v);
    if (!v)
        return TDB_E_NOMEM;
    size_t base = c->pos;
    for (uint32_t f = 0; f < fm->nfields; f++)
        if (fm->disk[f] < n)
            v[f] = tdb_le64(c->p + base + 8 * (size_t)fm->disk[f]);
    tdb_cur_skip(c, (size_t)bytes);
    *out = v;
    return 0;
}

static int fragmeta_footer_err(struct tdb_fragmeta *fm, int rc,
                               const char *what, struct tdb_error *err)
{
    if (rc == TDB_E_NOMEM)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory reading the "
                       "footer", fm->meta_path);
    return tdb_err(err, TDB_E_CORRUPT, "%s: fragment metadata footer is "
                   "truncated or corrupt (%s)", fm->meta_path, what);
}

/* The footer's version and the schema it names (since version 10) or the
 * schema a legacy fragment takes. */
static int fragmeta_footer_schema(struct tdb_fragmeta *fm,
                                  const struct tdb_schema_set *schemas,
                                  struct tdb_cursor *c, struct tdb_error *err)
{
    if (tdb_cur_u32(c, &fm->version))
        return fragmeta_footer_err(fm, -1, "version", err);
    if (fm->version > FRAGMETA_MAX_VERSION)
        return tdb_err(err, TDB_E_UNSUPPORTED, "%s: fragment format version "
                       "%u is not supported (at most %u)", fm->meta_path,
                       fm->version, FRAGMETA_MAX_VERSION);
    if (fm->version < 3)
        return tdb_err(err, TDB_E_CORRUPT, "%s: footer gives format version "
                       "%u, but footers exist since version 3", fm->meta_path,
                       fm->version);
    if (fm->version >= 10) {
        uint64_t len;
        const uint8_t *q;
        if (tdb_cur_u64(c, &len) || len == 0 || len > TDB_MAX_NAME ||
            tdb_cur_bytes(c, (size_t)len, &q))
            return fragmeta_footer_err(fm, -1, "array schema name", err);
        fm->schema_name = malloc((size_t)len + 1);
        if (!fm->schema_name)
            return fragmeta_footer_err(fm, TDB_E_NOMEM, "", err);
        memcpy(fm->schema_name, q, (size_t)len);
        fm->schema_name[len] = 0;
        if (strlen(fm->schema_name) != len)
            return fragmeta_footer_err(fm, -1, "array schema name", err);
        fm->schema = tdb_schema_set_find(schemas, fm->schema_name);
        if (!fm->schema)
            return tdb_err(err, TDB_E_NOENT, "%s: the fragment's array schema "
                           "%s is not among the array's schemas",
                           fm->meta_path, fm->schema_name);
    } else if (!fm->schema) {
        fm->schema = fragmeta_legacy_schema(schemas);
        if (!fm->schema)
            return tdb_err(err, TDB_E_NOENT, "%s: the array has no schema for "
                           "a fragment of format version %u", fm->meta_path,
                           fm->version);
    }
    if (fm->schema->ndims == 0)
        return tdb_err(err, TDB_E_CORRUPT, "%s: schema %s has no dimensions",
                       fm->meta_path,
                       fm->schema->name ? fm->schema->name : "?");
    return 0;
}

/* The dense flag, the non-empty domain, the tile numbers and which
 * special fields the fragment has. */
static int fragmeta_footer_shape(struct tdb_fragmeta *fm, struct tdb_cursor *c,
                                 struct tdb_error *err)
{
    uint8_t dense, null_ned;
    if (tdb_cur_u8(c, &dense) || tdb_cur_u8(c, &null_ned))
        return fragmeta_footer_err(fm, -1, "dense flag", err);
    fm->dense = dense != 0;
    fm->ned_null = null_ned != 0;
    fm->ned = calloc(fm->schema->ndims, sizeof *fm->ned);
    if (!fm->ned)
        return fragmeta_footer_err(fm, TDB_E_NOMEM, "", err);
    if (!fm->ned_null) {
        int rc = fragmeta_read_ranges(fm, c, fm->ned, true);
        if (rc)
            return fragmeta_footer_err(fm, rc, "non-empty domain", err);
    }
    uint8_t ts = 0, del = 0;
    if (tdb_cur_u64(c, &fm->sparse_tile_num) ||
        tdb_cur_u64(c, &fm->last_tile_cell_num) ||
        (fm->version >= 14 && tdb_cur_u8(c, &ts)) ||
        (fm->version >= 15 && tdb_cur_u8(c, &del)))
        return fragmeta_footer_err(fm, -1, "tile numbers", err);
    fm->has_timestamps = ts != 0;
    fm->has_delete_meta = del != 0;
    return fragmeta_fields(fm, err);
}

/* The per-field lists: file sizes and where the generic tiles start. */
static int fragmeta_footer_lists(struct tdb_fragmeta *fm, struct tdb_cursor *c,
                                 bool exact, struct tdb_error *err)
{
    const struct tdb_schema *s = fm->schema;
    int rc;
    uint32_t nfix, nvar, nall = s->nattrs + s->ndims + 1 +
                               (fm->has_timestamps ? 1u : 0u) +
                               (fm->has_delete_meta ? 2u : 0u);
    if (fm->version < 5) {
        nfix = s->nattrs + 1;
        nvar = s->nattrs;
    } else {
        nfix = nvar = nall;
    }
    if ((rc = fragmeta_read_list(fm, c, nfix, &fm->file_sizes)) ||
        (rc = fragmeta_read_list(fm, c, nvar, &fm->file_var_sizes)) ||
        (rc = fragmeta_read_list(fm, c, fm->version >= 7 ? nall : 0,
                                 &fm->file_validity_sizes)))
        return fragmeta_footer_err(fm, rc, "file sizes", err);
    if (tdb_cur_u64(c, &fm->rtree_off))
        return fragmeta_footer_err(fm, -1, "R-tree offset", err);
    if ((rc = fragmeta_read_list(fm, c, nfix, &fm->gt_tile_offsets)) ||
        (rc = fragmeta_read_list(fm, c, nvar, &fm->gt_var_offsets)) ||
        (rc = fragmeta_read_list(fm, c, nvar, &fm->gt_var_sizes)))
        return fragmeta_footer_err(fm, rc, "tile offsets", err);
    if (fm->version >= 7 &&
        (rc = fragmeta_read_list(fm, c, nall, &fm->gt_validity_offsets)))
        return fragmeta_footer_err(fm, rc, "validity offsets", err);
    if (fm->version < 11)
        return 0;
    if ((rc = fragmeta_read_list(fm, c, nall, &fm->gt_mins)) ||
        (rc = fragmeta_read_list(fm, c, nall, &fm->gt_maxs)) ||
        (rc = fragmeta_read_list(fm, c, nall, &fm->gt_sums)) ||
        (rc = fragmeta_read_list(fm, c, nall, &fm->gt_null_counts)))
        return fragmeta_footer_err(fm, rc, "tile metadata offsets", err);
    /* TileDB's version-11 reader has no fragment min/max offset while
     * its writer emits one; take it when the bytes are there. */
    if (fm->version >= 12 || (exact && tdb_cur_left(c) >= 8)) {
        if (tdb_cur_u64(c, &fm->gt_frag_mins_maxs))
            return fragmeta_footer_err(fm, -1, "fragment metadata "
                                       "offset", err);
        fm->has_frag_mins_maxs = true;
    }
    return 0;
}

/* Parses a footer (fragment.md "Footer") from p[0..n).  `exact`: the size
 * is known (the bytes must be consumed exactly). */
static int fragmeta_parse_footer(struct tdb_fragmeta *fm,
                                 const struct tdb_schema_set *schemas,
                                 const uint8_t *p, size_t n, bool exact,
                                 struct tdb_error *err)
{
    struct tdb_cursor c;
    int rc;
    tdb_cur_init(&c, p, n);

    if ((rc = fragmeta_footer_schema(fm, schemas, &c, err)) ||
        (rc = fragmeta_footer_shape(fm, &c, err)) ||
        (rc = fragmeta_footer_lists(fm, &c, exact, err)))
        return rc;
    if (fm->version >= 16 && tdb_cur_u64(&c, &fm->gt_processed_conditions))
        return fragmeta_footer_err(fm, -1, "processed conditions offset",
                                   err);
    if (fm->version >= 23) {
        uint32_t nsec;
        if (tdb_cur_u32(&c, &nsec))
            return fragmeta_footer_err(fm, -1, "optional sections", err);
        for (uint32_t i = 0; i < nsec; i++) {
            uint64_t id;
            uint32_t size;
            if (tdb_cur_u64(&c, &id) || tdb_cur_u32(&c, &size) ||
                (id == 0 && size != 16u * fm->schema->ndims) ||
                tdb_cur_skip(&c, size))
                return fragmeta_footer_err(fm, -1, "optional section", err);
        }
    }
    if (exact && tdb_cur_left(&c) != 0)
        return tdb_err(err, TDB_E_CORRUPT, "%s: fragment metadata footer has "
                       "%zu unexpected trailing bytes", fm->meta_path,
                       tdb_cur_left(&c));
    fm->footer_size = c.pos;
    return 0;
}

/* Size of a footer written without its length (before version 10, all
 * dimensions fixed), computed from the schema. */
static uint64_t fragmeta_footer_size_fixed(const struct tdb_schema *s,
                                           uint32_t version)
{
    uint64_t na = s->nattrs, num = s->nattrs + s->ndims + 1;
    uint64_t size = 4 + 1 + 1 + 8 + 8;
    if (version < 5) {
        unsigned cs0 = fragmeta_coord_size(&s->dims[0]);
        size += 2u * s->ndims * (uint64_t)cs0;
        size += 8 * ((na + 1) + na);            /* file sizes, var sizes */
        size += 8;                              /* R-tree */
        size += 8 * ((na + 1) + na + na);       /* tile, var offs, var sizes */
    } else {
        size += fragmeta_fixed_domain_size(s);
        size += 8 * num * (version < 7 ? 2 : 3);
        size += 8;
        size += 8 * num * (version < 7 ? 3 : 4);
    }
    return size;
}

/* ---------------------------------------------------------- generic tiles */

/* Reads the generic tile at `off` of the metadata file: a u64 count then
 * that many u64 (tile offsets or sizes, null counts). */
static int fragmeta_read_u64s(const struct tdb_fragmeta *fm, uint64_t off,
                              const char *what, uint64_t **out, uint64_t *n,
                              struct tdb_error *err)
{
    struct tdb_buf b = {0};
    uint64_t next;
    int rc = tdb_generic_tile_read(&(struct tdb_gt_file){fm->io, fm->meta_path, off},
                                   fm->key, &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        return tdb_err_ctx(err, rc, "%s of %s", what, fm->name);
    }
    struct tdb_cursor c;
    uint64_t cnt;
    tdb_cur_init(&c, b.data, b.len);
    if (tdb_cur_u64(&c, &cnt) || cnt > tdb_cur_left(&c) / 8) {
        tdb_buf_free(&b);
        return tdb_err(err, TDB_E_CORRUPT, "%s: %s tile at offset %llu is "
                       "truncated", fm->meta_path, what,
                       (unsigned long long)off);
    }
    uint64_t *v = malloc(cnt ? cnt * 8 : 1);
    if (!v) {
        tdb_buf_free(&b);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    }
    for (uint64_t i = 0; i < cnt; i++)
        v[i] = tdb_le64(c.p + c.pos + 8 * i);
    tdb_buf_free(&b);
    *out = v;
    *n = cnt;
    return 0;
}

static void fragmeta_tiles_free(struct tdb_field_tiles *t)
{
    free(t->offsets);
    free(t->var_offsets);
    free(t->var_sizes);
    free(t->validity_offsets);
    free(t->null_counts);
    memset(t, 0, sizeof *t);
}

/* Checks that a per-tile list has one entry per tile. */
static int fragmeta_check_count(const struct tdb_fragmeta *fm, uint32_t f,
                                const char *what, uint64_t got, uint64_t want,
                                struct tdb_error *err)
{
    if (got == want)
        return 0;
    return tdb_err(err, TDB_E_CORRUPT, "%s: field %s has %llu %s for %llu "
                   "tiles", fm->meta_path, fm->file_names[f],
                   (unsigned long long)got, what, (unsigned long long)want);
}

int tdb_fragmeta_load_field(struct tdb_fragmeta *fm, uint32_t f,
                            struct tdb_error *err)
{
    if (!fm || f >= fm->nfields)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no field %u", f);
    pthread_mutex_lock(&fm->lock);
    if (fm->tiles[f].loaded) {
        pthread_mutex_unlock(&fm->lock);
        return 0;
    }
    struct tdb_field_tiles t = {0};
    uint64_t n;
    int rc = 0;
    if (fm->version < 3 || !fm->gt_tile_offsets) {
        rc = tdb_err(err, TDB_E_CORRUPT, "%s: no tile offsets for field %s",
                     fm->meta_path, fm->file_names[f]);
        goto out;
    }
    rc = fragmeta_read_u64s(fm, fm->gt_tile_offsets[f], "tile offsets",
                            &t.offsets, &t.ntiles, err);
    if (rc)
        goto out;
    if (fm->is_var[f]) {
        rc = fragmeta_read_u64s(fm, fm->gt_var_offsets[f], "var tile offsets",
                                &t.var_offsets, &n, err);
        if (rc || (rc = fragmeta_check_count(fm, f, "var offsets", n,
                                             t.ntiles, err)))
            goto out;
        rc = fragmeta_read_u64s(fm, fm->gt_var_sizes[f], "var tile sizes",
                                &t.var_sizes, &n, err);
        if (rc || (rc = fragmeta_check_count(fm, f, "var sizes", n,
                                             t.ntiles, err)))
            goto out;
    }
    if (fm->is_nullable[f] && fm->gt_validity_offsets) {
        rc = fragmeta_read_u64s(fm, fm->gt_validity_offsets[f],
                                "validity tile offsets", &t.validity_offsets,
                                &n, err);
        if (rc || (rc = fragmeta_check_count(fm, f, "validity offsets", n,
                                             t.ntiles, err)))
            goto out;
    }
    if (fm->is_nullable[f] && fm->gt_null_counts) {
        rc = fragmeta_read_u64s(fm, fm->gt_null_counts[f], "tile null counts",
                                &t.null_counts, &n, err);
        if (rc)
            goto out;
        if (n != t.ntiles) {    /* not relied upon: drop rather than fail */
            free(t.null_counts);
            t.null_counts = NULL;
        }
    }
    t.loaded = true;
    fm->tiles[f] = t;
out:
    if (rc)
        fragmeta_tiles_free(&t);
    pthread_mutex_unlock(&fm->lock);
    return rc;
}

/* ----------------------------------------------------------------- R-tree */

/* Minimum bytes one MBR takes (to cap counts before allocating). */
static uint64_t fragmeta_mbr_min_bytes(const struct tdb_fragmeta *fm)
{
    uint64_t n = 0;
    for (uint32_t d = 0; d < fm->schema->ndims; d++) {
        const struct tdb_dim *dim = &fm->schema->dims[d];
        if (fm->version >= 5 && fragmeta_dim_var(dim))
            n += 16;
        else
            n += 2u * fragmeta_coord_size(dim);
    }
    return n ? n : 1;
}

/* Parses an R-tree payload (fragment.md "R-Tree") and keeps its leaves. */
static int fragmeta_parse_rtree(struct tdb_fragmeta *fm, const uint8_t *p,
                                size_t n, struct tdb_range **mbrs,
                                uint64_t *nmbrs)
{
    struct tdb_cursor c;
    uint32_t u32, levels;
    uint8_t u8;
    uint32_t nd = fm->schema->ndims;
    uint64_t minb = fragmeta_mbr_min_bytes(fm);
    tdb_cur_init(&c, p, n);
    if (fm->version < 5) {
        if (tdb_cur_u32(&c, &u32) || tdb_cur_u32(&c, &u32) ||
            tdb_cur_u8(&c, &u8))
            return -1;
    } else if (tdb_cur_u32(&c, &u32)) {
        return -1;
    }
    if (tdb_cur_u32(&c, &levels))
        return -1;
    *mbrs = NULL;
    *nmbrs = 0;
    struct tdb_range *one = calloc(nd ? nd : 1, sizeof *one);
    if (!one)
        return TDB_E_NOMEM;
    int rc = 0;
    for (uint32_t l = 0; l < levels && rc == 0; l++) {
        uint64_t cnt;
        if (tdb_cur_u64(&c, &cnt) || cnt > tdb_cur_left(&c) / minb) {
            rc = -1;
            break;
        }
        bool leaf = l + 1 == levels;
        struct tdb_range *v = NULL;
        if (leaf && cnt > 0) {
            uint64_t bytes;
            if (!tdb_mul_ok(cnt, nd, &bytes) ||
                !tdb_mul_ok(bytes, sizeof *v, &bytes)) {
                rc = -1;
                break;
            }
            v = calloc((size_t)(cnt * nd), sizeof *v);
            if (!v) {
                rc = TDB_E_NOMEM;
                break;
            }
        }
        for (uint64_t m = 0; m < cnt && rc == 0; m++)
            if (fragmeta_read_ranges(fm, &c, v ? v + m * nd : one, false))
                rc = -1;
        if (rc) {
            free(v);
        } else if (leaf) {
            *mbrs = v;
            *nmbrs = cnt;
        }
    }
    free(one);
    return rc;
}

int tdb_fragmeta_load_rtree(struct tdb_fragmeta *fm, struct tdb_error *err)
{
    if (!fm)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: NULL");
    pthread_mutex_lock(&fm->lock);
    int rc = 0;
    if (fm->rtree_loaded)
        goto out;
    struct tdb_buf b = {0};
    uint64_t next;
    rc = tdb_generic_tile_read(&(struct tdb_gt_file){fm->io, fm->meta_path, fm->rtree_off},
                               fm->key, &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        rc = tdb_err_ctx(err, rc, "R-tree of %s", fm->name);
        goto out;
    }
    struct tdb_range *mbrs;
    uint64_t nmbrs;
    rc = fragmeta_parse_rtree(fm, b.data, b.len, &mbrs, &nmbrs);
    if (rc) {
        tdb_buf_free(&b);
        rc = rc == TDB_E_NOMEM
                 ? tdb_err(err, rc, "%s: out of memory", fm->meta_path)
                 : tdb_err(err, TDB_E_CORRUPT, "%s: R-tree at offset %llu is "
                           "truncated or corrupt", fm->meta_path,
                           (unsigned long long)fm->rtree_off);
        goto out;
    }
    fm->rtree_data = b.data;    /* var-sized MBR bounds point in here */
    fm->mbrs = mbrs;
    fm->nmbrs = nmbrs;
    fm->rtree_loaded = true;
out:
    pthread_mutex_unlock(&fm->lock);
    return rc;
}

/* ------------------------------------------------------ processed conds */

int tdb_fragmeta_load_processed(struct tdb_fragmeta *fm,
                                struct tdb_error *err)
{
    if (fm->version < 16 || fm->processed_loaded)
        return 0;
    struct tdb_buf b = {0};
    uint64_t next, cnt;
    struct tdb_gt_file at = {fm->io, fm->meta_path,
                             fm->gt_processed_conditions};
    int rc = tdb_generic_tile_read(&at, fm->key, &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        return tdb_err_ctx(err, rc, "processed conditions of %s", fm->name);
    }
    struct tdb_cursor c;
    tdb_cur_init(&c, b.data, b.len);
    if (tdb_cur_u64(&c, &cnt) || cnt > tdb_cur_left(&c) / 8)
        goto corrupt;
    fm->processed = calloc(cnt ? cnt : 1, sizeof *fm->processed);
    if (!fm->processed) {
        tdb_buf_free(&b);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    }
    for (uint64_t i = 0; i < cnt; i++) {
        if (tdb_cur_str64(&c, &fm->processed[i]))
            goto corrupt;
        fm->nprocessed = i + 1;
    }
    tdb_buf_free(&b);
    fm->processed_loaded = true;
    return 0;
corrupt:
    tdb_buf_free(&b);
    return tdb_err(err, TDB_E_CORRUPT, "%s: processed conditions tile is "
                   "truncated or corrupt", fm->meta_path);
}

/* ----------------------------------------------------------------- legacy */

/* Reads a legacy list of lists: for each of `nlists` fields a u64 count and
 * that many u64.  dst(f) receives field f's list. */
static int fragmeta_legacy_lists(struct tdb_fragmeta *fm, struct tdb_cursor *c,
                                 uint32_t nlists, int which)
{
    for (uint32_t i = 0; i < nlists; i++) {
        uint64_t cnt;
        if (tdb_cur_u64(c, &cnt) || cnt > tdb_cur_left(c) / 8)
            return -1;
        /* field i of the legacy layout is attribute i, or coords at na */
        uint32_t f = i;
        struct tdb_field_tiles *t = &fm->tiles[f];
        uint64_t *v = malloc(cnt ? cnt * 8 : 1);
        if (!v)
            return TDB_E_NOMEM;
        for (uint64_t k = 0; k < cnt; k++)
            v[k] = tdb_le64(c->p + c->pos + 8 * k);
        tdb_cur_skip(c, (size_t)(cnt * 8));
        if (which == 0) {
            t->offsets = v;
            t->ntiles = cnt;
        } else if (which == 1) {
            t->var_offsets = v;
            if (fm->is_var[f] && cnt != t->ntiles)
                return -1;
        } else {
            t->var_sizes = v;
            if (fm->is_var[f] && cnt != t->ntiles)
                return -1;
        }
    }
    return 0;
}

/* Versions 1 and 2: the tile's parts after the version: the non-empty
 * domain, the MBRs, the bounding coordinates, the tile offsets and the
 * file sizes.  @return 0, TDB_E_NOMEM, or 1 when they are truncated or
 * corrupt (*what says which). */
static int fragmeta_legacy_body(struct tdb_fragmeta *fm, struct tdb_cursor *c,
                                const char **what)
{
    const struct tdb_schema *s = fm->schema;
    uint32_t na = s->nattrs, nd = s->ndims;
    uint64_t ned_size, cnt;
    int rc;
    *what = "non-empty domain";
    fm->ned = calloc(nd, sizeof *fm->ned);
    if (!fm->ned)
        return TDB_E_NOMEM;
    if (tdb_cur_u64(c, &ned_size))
        return 1;
    fm->ned_null = ned_size == 0;
    if (!fm->ned_null && (ned_size != fragmeta_fixed_domain_size(s) ||
                          fragmeta_read_ranges(fm, c, fm->ned, true)))
        return 1;
    *what = "MBRs";
    uint64_t minb = fragmeta_mbr_min_bytes(fm);
    if (tdb_cur_u64(c, &cnt) || cnt > tdb_cur_left(c) / minb)
        return 1;
    fm->mbrs = calloc(cnt ? cnt * nd : 1, sizeof *fm->mbrs);
    if (!fm->mbrs)
        return TDB_E_NOMEM;
    for (uint64_t m = 0; m < cnt; m++)
        if (fragmeta_read_ranges(fm, c, fm->mbrs + m * nd, false))
            return 1;
    fm->nmbrs = cnt;
    fm->sparse_tile_num = cnt;
    fm->rtree_loaded = true;
    *what = "bounding coordinates";
    if (tdb_cur_u64(c, &cnt) || cnt > tdb_cur_left(c) / minb ||
        tdb_cur_skip(c, (size_t)(cnt * fragmeta_fixed_domain_size(s))))
        return 1;
    *what = "tile offsets";
    if ((rc = fragmeta_legacy_lists(fm, c, na + 1, 0)) ||
        (rc = fragmeta_legacy_lists(fm, c, na, 1)) ||
        (rc = fragmeta_legacy_lists(fm, c, na, 2)))
        return rc == TDB_E_NOMEM ? rc : 1;
    *what = "file sizes";
    if (tdb_cur_u64(c, &fm->last_tile_cell_num))
        return 1;
    if ((rc = fragmeta_read_list(fm, c, na + 1, &fm->file_sizes)) ||
        (rc = fragmeta_read_list(fm, c, na, &fm->file_var_sizes)) ||
        (rc = fragmeta_read_list(fm, c, 0, &fm->file_validity_sizes)))
        return rc == TDB_E_NOMEM ? rc : 1;
    for (uint32_t f = 0; f < fm->nfields; f++)
        fm->tiles[f].loaded = true;
    return 0;
}

/* Versions 1 and 2: the version, whether the fragment is dense and its
 * fields. */
static int fragmeta_legacy_head(struct tdb_fragmeta *fm, struct tdb_cursor *c,
                                struct tdb_error *err)
{
    if (fm->schema->ndims == 0)
        return tdb_err(err, TDB_E_CORRUPT, "%s: schema has no dimensions",
                       fm->meta_path);
    if (tdb_cur_u32(c, &fm->version))
        return tdb_err(err, TDB_E_CORRUPT, "%s: legacy fragment metadata is "
                       "truncated or corrupt (version)", fm->meta_path);
    if (fm->version < 1 || fm->version > 2)
        return tdb_err(err, TDB_E_CORRUPT, "%s: legacy fragment metadata "
                       "gives format version %u", fm->meta_path, fm->version);
    /* v1-v2 record no dense flag: a dense fragment has no coordinates */
    char *coords = tdb_path_join(fm->path, "__coords.tdb");
    if (!coords)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    fm->dense = !tdb_io_exists(fm->io, coords);
    free(coords);
    return fragmeta_fields(fm, err);
}

/* Versions 1 and 2: one generic tile holding everything. */
static int fragmeta_load_legacy(struct tdb_fragmeta *fm,
                                const struct tdb_schema_set *schemas,
                                struct tdb_error *err)
{
    struct tdb_buf b = {0};
    uint64_t next;
    int rc = tdb_generic_tile_read(&(struct tdb_gt_file){fm->io, fm->meta_path, 0},
                                   fm->key, &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        return rc;
    }
    fm->schema = fragmeta_legacy_schema(schemas);
    if (!fm->schema) {
        tdb_buf_free(&b);
        return tdb_err(err, TDB_E_NOENT, "%s: the array has no schema "
                       "(__array_schema.tdb)", fm->meta_path);
    }
    struct tdb_cursor c;
    const char *what = "version";
    tdb_cur_init(&c, b.data, b.len);
    rc = fragmeta_legacy_head(fm, &c, err);
    if (!rc) {
        rc = fragmeta_legacy_body(fm, &c, &what);
        if (rc == TDB_E_NOMEM)
            rc = tdb_err(err, rc, "%s: out of memory", fm->meta_path);
        else if (rc == 1)
            rc = tdb_err(err, TDB_E_CORRUPT, "%s: legacy fragment metadata "
                         "is truncated or corrupt (%s)", fm->meta_path, what);
    }
    tdb_buf_free(&b);
    return rc;
}

/* ------------------------------------------------------------------- load */

/* Reads the fragment's own footer: the footer length at the end when the
 * version or a var-sized dimension says it is there, else a size computed
 * from the schema. */
static int fragmeta_read_own_footer(struct tdb_fragmeta *fm,
                                    const struct tdb_schema_set *schemas,
                                    struct tdb_error *err)
{
    uint64_t fsize, size;
    bool has_len = true;
    int rc = tdb_io_size(fm->io, fm->meta_path, &fsize, err);
    if (rc)
        return rc;
    if (fm->name_version < 10) {
        fm->schema = fragmeta_legacy_schema(schemas);
        if (!fm->schema)
            return tdb_err(err, TDB_E_NOENT, "%s: the array has no schema for "
                           "a fragment of format version %u", fm->meta_path,
                           fm->name_version);
        if (fm->schema->ndims == 0)
            return tdb_err(err, TDB_E_CORRUPT, "%s: schema has no dimensions",
                           fm->meta_path);
        has_len = !fragmeta_all_fixed(fm->schema);
    }
    if (has_len) {
        uint8_t le[8];
        if (fsize < 8)
            return tdb_err(err, TDB_E_CORRUPT, "%s: file of %llu bytes is too "
                           "short for a footer", fm->meta_path,
                           (unsigned long long)fsize);
        rc = tdb_io_read(fm->io, fm->meta_path, fsize - 8, le, 8, err);
        if (rc)
            return rc;
        size = tdb_le64(le);
        if (size > fsize - 8 || size > FRAGMETA_MAX_FOOTER)
            return tdb_err(err, TDB_E_CORRUPT, "%s: footer length %llu does "
                           "not fit the file of %llu bytes", fm->meta_path,
                           (unsigned long long)size, (unsigned long long)fsize);
        fm->footer_offset = fsize - 8 - size;
    } else {
        size = fragmeta_footer_size_fixed(fm->schema, fm->name_version);
        if (size > fsize)
            return tdb_err(err, TDB_E_CORRUPT, "%s: file of %llu bytes is "
                           "shorter than its %llu-byte footer", fm->meta_path,
                           (unsigned long long)fsize,
                           (unsigned long long)size);
        fm->footer_offset = fsize - size;
    }
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (!buf)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    rc = tdb_io_read(fm->io, fm->meta_path, fm->footer_offset, buf,
                     (size_t)size, err);
    if (rc == 0)
        rc = fragmeta_parse_footer(fm, schemas, buf, (size_t)size, true, err);
    free(buf);
    if (rc == 0 && !has_len) {
        /* the size was computed for the name's version: the footer must
         * agree on the layout */
        uint32_t a = fm->name_version, v = fm->version;
        int ca = a < 5 ? 0 : a < 7 ? 1 : 2, cv = v < 5 ? 0 : v < 7 ? 1 : 2;
        if (ca != cv || v >= 10)
            return tdb_err(err, TDB_E_CORRUPT, "%s: footer version %u does "
                           "not match the name's version %u", fm->meta_path,
                           v, a);
    }
    return rc;
}

int tdb_fragmeta_load(const struct tdb_io *io, const char *path,
                      const char *name, const struct tdb_schema_set *schemas,
                      const uint8_t *key, const uint8_t *footer,
                      size_t footer_size, struct tdb_fragmeta **out,
                      struct tdb_error *err)
{
    *out = NULL;
    if (!io || !path)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no path");
    struct tdb_fragmeta *fm = calloc(1, sizeof *fm);
    if (!fm)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    pthread_mutex_init(&fm->lock, NULL);
    fm->io = io;
    fm->key = key;
    int rc;
    if (!name) {
        size_t n;
        const char *b = tdb_last_component(path, &n);
        fm->name = strndup(b, n);
    } else {
        fm->name = fragmeta_strdup(name);
    }
    fm->path = fragmeta_strdup(path);
    fm->meta_path = tdb_path_join(path, FRAGMETA_FILE);
    if (!fm->name || !fm->path || !fm->meta_path) {
        rc = tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    struct tdb_tsname tn;
    if (tdb_tsname_parse(fm->name, &tn)) {
        rc = tdb_err(err, TDB_E_CORRUPT, "%s: \"%s\" is not a fragment name",
                     path, fm->name);
        goto fail;
    }
    /* names without a version: __t1_t2_uuid is format 4, __uuid_t 2 */
    fm->t1 = tn.t1;
    fm->t2 = tn.t2;
    fm->name_version = tn.era == 3 ? tn.version : tn.era == 2 ? 4 : 2;
    if (fm->name_version > FRAGMETA_MAX_VERSION) {
        rc = tdb_err(err, TDB_E_UNSUPPORTED, "%s: fragment format version %u "
                     "is not supported (at most %u)", path, fm->name_version,
                     FRAGMETA_MAX_VERSION);
        goto fail;
    }

    if (fm->name_version <= 2) {
        rc = fragmeta_load_legacy(fm, schemas, err);
    } else if (footer) {
        fm->footer_offset = 0;
        rc = fragmeta_parse_footer(fm, schemas, footer, footer_size, false,
                                   err);
        fm->footer_size = 0;
    } else {
        rc = fragmeta_read_own_footer(fm, schemas, err);
    }
    if (rc)
        goto fail;
    *out = fm;
    return 0;
fail:
    tdb_fragmeta_free(fm);
    return rc;
}

/* --------------------------------------------------------------- queries */

int tdb_fragmeta_attr_field(const struct tdb_fragmeta *fm,
                            const struct tdb_schema *array_schema,
                            uint32_t attr)
{
    if (!fm || !array_schema || attr >= array_schema->nattrs)
        return -1;
    const char *name = array_schema->attrs[attr].name;
    for (uint32_t i = 0; i < fm->schema->nattrs; i++)
        if (strcmp(fm->schema->attrs[i].name, name) == 0)
            return (int)i;
    return -1;
}

int tdb_fragmeta_dim_field(const struct tdb_fragmeta *fm, uint32_t dim)
{
    if (!fm || dim >= fm->schema->ndims)
        return -1;
    if (fm->version < 5)
        return (int)fm->schema->nattrs;     /* the __coords field */
    return (int)(fm->schema->nattrs + dim);
}

static int fragmeta_kind_field(const struct tdb_fragmeta *fm,
                               enum tdb_field_kind kind)
{
    if (!fm)
        return -1;
    for (uint32_t f = 0; f < fm->nfields; f++)
        if (fm->kinds[f] == kind)
            return (int)f;
    return -1;
}

int tdb_fragmeta_ts_field(const struct tdb_fragmeta *fm)
{
    return fragmeta_kind_field(fm, TDB_FIELD_TIMESTAMPS);
}

int tdb_fragmeta_delete_ts_field(const struct tdb_fragmeta *fm)
{
    return fragmeta_kind_field(fm, TDB_FIELD_DELETE_TS);
}

/* An integer coordinate of dimension type `dt` stored in 8 zero-padded
 * bytes, as two's-complement 64 bits. */
static uint64_t fragmeta_coord(unsigned dt, const uint8_t *p)
{
    unsigned size = tdb_dt_size(dt);
    uint64_t v = 0;
    for (unsigned i = 0; i < size && i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    if (tdb_dt_is_signed_int(dt) && size < 8 && size > 0 &&
        (v >> (8 * size - 1)) & 1)
        v |= ~UINT64_C(0) << (8 * size);
    return v;
}

static uint64_t fragmeta_sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return tdb_mul_ok(a, b, &r) ? r : UINT64_MAX;
}

/* Dense fragments: tiles per dimension covering the non-empty domain, and
 * cells per tile. */
static void fragmeta_dense_tiles(const struct tdb_fragmeta *fm,
                                 uint64_t *tiles, uint64_t *cells_per_tile)
{
    const struct tdb_schema *s = fm->schema;
    *tiles = 1;
    *cells_per_tile = 1;
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        if (!tdb_dt_is_integer(dim->type) || fragmeta_dim_var(dim)) {
            *tiles = 0;
            return;
        }
        uint64_t dlo = fragmeta_coord(dim->type, dim->lo);
        uint64_t dhi = fragmeta_coord(dim->type, dim->hi);
        uint64_t ext = dim->has_extent ? fragmeta_coord(dim->type, dim->extent)
                                       : dhi - dlo + 1;
        uint64_t lo = fragmeta_coord(dim->type, fm->ned[d].lo);
        uint64_t hi = fragmeta_coord(dim->type, fm->ned[d].hi);
        if (ext == 0) {         /* a whole 64-bit domain as one tile */
            *cells_per_tile = UINT64_MAX;
            continue;
        }
        uint64_t t0 = (lo - dlo) / ext, t1 = (hi - dlo) / ext;
        *tiles = fragmeta_sat_mul(*tiles, t1 >= t0 ? t1 - t0 + 1 : 0);
        *cells_per_tile = fragmeta_sat_mul(*cells_per_tile, ext);
    }
}

uint64_t tdb_fragmeta_tile_num(const struct tdb_fragmeta *fm)
{
    if (!fm)
        return 0;
    if (!fm->dense)
        return fm->sparse_tile_num;
    if (fm->ned_null)
        return 0;
    uint64_t tiles, cpt;
    fragmeta_dense_tiles(fm, &tiles, &cpt);
    return tiles;
}

uint64_t tdb_fragmeta_cell_num(const struct tdb_fragmeta *fm)
{
    if (!fm)
        return 0;
    if (fm->dense) {
        if (fm->ned_null)
            return 0;
        uint64_t tiles, cpt;
        fragmeta_dense_tiles(fm, &tiles, &cpt);
        return fragmeta_sat_mul(tiles, cpt);
    }
    if (fm->sparse_tile_num == 0)
        return 0;
    uint64_t r = fragmeta_sat_mul(fm->sparse_tile_num - 1,
                                  fm->schema->capacity);
    return tdb_add_ok(r, fm->last_tile_cell_num, &r) ? r : UINT64_MAX;
}

void tdb_fragmeta_free(struct tdb_fragmeta *fm)
{
    if (!fm)
        return;
    if (fm->schema && fm->ned)
        fragmeta_free_ranges(fm->ned, fm->schema->ndims);
    free(fm->ned);
    for (uint32_t f = 0; f < fm->nfields; f++) {
        if (fm->file_names)
            free(fm->file_names[f]);
        if (fm->file_var_names)
            free(fm->file_var_names[f]);
        if (fm->file_validity_names)
            free(fm->file_validity_names[f]);
        if (fm->tiles)
            fragmeta_tiles_free(&fm->tiles[f]);
    }
    free(fm->file_names);
    free(fm->file_var_names);
    free(fm->file_validity_names);
    free(fm->tiles);
    free(fm->kinds);
    free(fm->disk);
    free(fm->index);
    free(fm->is_var);
    free(fm->is_nullable);
    free(fm->file_sizes);
    free(fm->file_var_sizes);
    free(fm->file_validity_sizes);
    free(fm->gt_tile_offsets);
    free(fm->gt_var_offsets);
    free(fm->gt_var_sizes);
    free(fm->gt_validity_offsets);
    free(fm->gt_mins);
    free(fm->gt_maxs);
    free(fm->gt_sums);
    free(fm->gt_null_counts);
    free(fm->mbrs);             /* var bounds point into rtree_data */
    free(fm->rtree_data);
    for (uint64_t i = 0; i < fm->nprocessed; i++)
        free(fm->processed[i]);
    free(fm->processed);
    free(fm->schema_name);
    free(fm->name);
    free(fm->path);
    free(fm->meta_path);
    pthread_mutex_destroy(&fm->lock);
    free(fm);
}

/* --------------------------------------------- consolidated fragment meta */

int tdb_cons_fragmeta_load(const struct tdb_io *io, const char *path,
                           const uint8_t *key, struct tdb_cons_fragmeta **out,
                           struct tdb_error *err)
{
    *out = NULL;
    struct tdb_cons_fragmeta *cm = calloc(1, sizeof *cm);
    if (!cm)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    struct tdb_buf b = {0};
    uint64_t next;
    int rc = tdb_generic_tile_read(&(struct tdb_gt_file){io, path, 0}, key, &b,
                                   &next, err);
    if (rc) {
        tdb_buf_free(&b);
        free(cm);
        return rc;
    }
    cm->data_size = b.len;
    cm->data = tdb_buf_take(&b, NULL);
    struct tdb_cursor c;
    uint32_t n;
    tdb_cur_init(&c, cm->data, (size_t)cm->data_size);
    /* each entry takes at least 16 bytes */
    if (tdb_cur_u32(&c, &n) || n > tdb_cur_left(&c) / 16)
        goto corrupt;
    cm->names = calloc(n ? n : 1, sizeof *cm->names);
    cm->offsets = calloc(n ? n : 1, sizeof *cm->offsets);
    cm->sizes = calloc(n ? n : 1, sizeof *cm->sizes);
    if (!cm->names || !cm->offsets || !cm->sizes) {
        tdb_cons_fragmeta_free(cm);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    }
    for (uint32_t i = 0; i < n; i++) {
        char *uri;
        size_t len;
        if (tdb_cur_str64(&c, &uri))
            goto corrupt;
        /* before version 9 the names are whole URIs */
        const char *last = tdb_last_component(uri, &len);
        cm->names[i] = strndup(last, len);
        free(uri);
        if (!cm->names[i]) {
            tdb_cons_fragmeta_free(cm);
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
        }
        cm->n = i + 1;
        if (tdb_cur_u64(&c, &cm->offsets[i]) || len == 0)
            goto corrupt;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (cm->offsets[i] < c.pos || cm->offsets[i] > cm->data_size)
            goto corrupt;
        /* a footer ends where the next one starts, or at the end */
        uint64_t end = cm->data_size;
        for (uint32_t k = 0; k < n; k++)
            if (cm->offsets[k] > cm->offsets[i] && cm->offsets[k] < end)
                end = cm->offsets[k];
        cm->sizes[i] = end - cm->offsets[i];
    }
    *out = cm;
    return 0;
corrupt:
    tdb_cons_fragmeta_free(cm);
    return tdb_err(err, TDB_E_CORRUPT, "%s: consolidated fragment metadata "
                   "is truncated or corrupt", path);
}

void tdb_cons_fragmeta_free(struct tdb_cons_fragmeta *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->names[i]);
    free(c->names);
    free(c->offsets);
    free(c->sizes);
    free(c->data);
    free(c);
}
