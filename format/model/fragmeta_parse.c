/* fragmeta_parse.c: parsing fragment metadata (format_spec/fragment.md:
 * the footer of every version, file names, non-empty domains and MBRs,
 * and the legacy layout of versions <= 2, all in one file). */
#include "model/fragmeta_priv.h"
#include "model/generic_tile.h"
#include "core/names.h"

#include <stdio.h>
#include <stdlib.h>

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
const struct tdb_schema *
tdb_fragmeta_legacy_schema(const struct tdb_schema_set *s)
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
int tdb_fragmeta_read_ranges(const struct tdb_fragmeta *fm,
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

void tdb_fragmeta_free_ranges(struct tdb_range *r, uint32_t n)
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

bool tdb_fragmeta_all_fixed(const struct tdb_schema *s)
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
        fm->schema = tdb_fragmeta_legacy_schema(schemas);
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
        int rc = tdb_fragmeta_read_ranges(fm, c, fm->ned, true);
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
int tdb_fragmeta_parse_footer(struct tdb_fragmeta *fm,
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
uint64_t tdb_fragmeta_footer_size_fixed(const struct tdb_schema *s,
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

/* Minimum bytes one MBR takes (to cap counts before allocating). */
uint64_t tdb_fragmeta_mbr_min_bytes(const struct tdb_fragmeta *fm)
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
                          tdb_fragmeta_read_ranges(fm, c, fm->ned, true)))
        return 1;
    *what = "MBRs";
    uint64_t minb = tdb_fragmeta_mbr_min_bytes(fm);
    if (tdb_cur_u64(c, &cnt) || cnt > tdb_cur_left(c) / minb)
        return 1;
    fm->mbrs = calloc(cnt ? cnt * nd : 1, sizeof *fm->mbrs);
    if (!fm->mbrs)
        return TDB_E_NOMEM;
    for (uint64_t m = 0; m < cnt; m++)
        if (tdb_fragmeta_read_ranges(fm, c, fm->mbrs + m * nd, false))
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
int tdb_fragmeta_load_legacy(struct tdb_fragmeta *fm,
                             const struct tdb_schema_set *schemas,
                             struct tdb_error *err)
{
    struct tdb_buf b = {0};
    uint64_t next;
    int rc =
        tdb_generic_tile_read(&(struct tdb_gt_file){fm->io, fm->meta_path, 0},
                              fm->key, &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        return rc;
    }
    fm->schema = tdb_fragmeta_legacy_schema(schemas);
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

