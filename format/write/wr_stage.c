/* wr_stage.c: the staged files of a fragment write: reading them, matching them to the schema's fields, checking their contents (offsets, validity, sizes). */
#include "write/wr.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The refusal (TDB_E_INVAL, with the reason in err) of staged file `nm`,
 * which the staged backend would not open with code r: not a regular file
 * (a symbolic link, FIFO, socket or device under tdb_io_posix_nofollow),
 * or a hard link; 0 when r is no refusal. */
static int wr_refused(struct tdb_error *err, const char *nm, int r)
{
    if (r == TDB_E_INVAL)
        return tdb_err(err, TDB_E_INVAL, "%s: not a regular file (symbolic "
                       "links, FIFOs, sockets and devices are refused; copy "
                       "the bytes in instead)", nm);
    if (r == TDB_E_MLINK)
        return tdb_err(err, TDB_E_INVAL, "%s: hard link: the file has other "
                       "names, and one may be someone else's file; refused "
                       "(copy the bytes in instead)", nm);
    return 0;
}


/* Reads staged bytes of field f. */
int tdb_wr_sread_e(const struct wr *w, const struct wr_field *f,
                   const struct wr_read *rd, struct tdb_error *err)
{
    int p = rd->p;
    uint64_t off = rd->off;
    size_t len = rd->len;
    int r = w->staged->ops->read_at(w->staged->ctx, f->spath[p], off, rd->buf,
                                    len);
    if (wr_refused(err, f->sname[p], r))
        return TDB_E_INVAL; /* swapped for a link since its size was read */
    if (r)
        return tdb_err(err, r, "%s: cannot read %zu bytes at offset %llu: "
                       "%s", f->sname[p], len, (unsigned long long)off,
                       tdb_strerror(r));
    return 0;
}

int tdb_wr_sread(struct wr *w, const struct wr_field *f, int p, uint64_t off,
                 void *buf, size_t len)
{
    struct wr_read rd = {p, off, buf, len};
    return tdb_wr_sread_e(w, f, &rd, w->err);
}

/* ------------------------------------------------------------ the fields */

void tdb_wr_fields_free(struct wr *w)
{
    for (uint32_t i = 0; w->f && i < w->nf; i++) {
        for (int p = 0; p < 3; p++) {
            free(w->f[i].sname[p]);
            free(w->f[i].spath[p]);
            free(w->f[i].out[p]);
        }
        free(w->f[i].mem[0]);
        free(w->f[i].mem[1]);
    }
    free(w->f);
    w->f = NULL;
}

/* The special fields of a consolidated fragment (wr.x): TileDB's names
 * and file names, in fragment order. */
static const char *const wr_special[3][2] = {
    {"__timestamps", "t"},
    {"__delete_timestamps", "dt"},
    {"__delete_condition_index", "dci"},
};

/* Special field k (wr_special) of those w->x asks for, or -1. */
static int wr_special_of(const struct wr *w, uint32_t k)
{
    bool ts = w->x && w->x->timestamps, dm = w->x && w->x->delete_meta;
    if (ts && k == 0)
        return 0;
    k -= ts;
    return dm && k < 2 ? (int)k + 1 : -1;
}

/* f's staged names (NAME, NAME.offsets, NAME.validity) and file names
 * (base.tdb, base_var.tdb, base_validity.tdb). */
static int wr_field_names(struct wr *w, struct wr_field *f, const char *base)
{
    static const char *const suffix[3] = {"", ".offsets", ".validity"};
    static const char *const osuffix[3] = {".tdb", "_var.tdb",
                                           "_validity.tdb"};
    for (int p = 0; p < 3; p++) {
        if (!(f->sname[p] = tdb_mount_name(f->name, suffix[p])))
            return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
        char o[48];
        snprintf(o, sizeof o, "%s%s", base, osuffix[p]);
        if (!(f->out[p] = strdup(o)))
            return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    }
    return 0;
}

/* Field i of the fragment (attributes, then dimensions, then the
 * special files): its name, type, filters and base file name; *cvn its
 * cell_val_num. */
static void wr_field_describe(const struct wr *w, struct wr_field *f,
                              uint32_t i, char base[32], uint32_t *cvn)
{
    const struct tdb_schema *s = w->s;
    f->is_dim = i >= s->nattrs && i < s->nattrs + s->ndims;
    f->fid = i;
    if (i >= s->nattrs + s->ndims) {
        int k = wr_special_of(w, i - s->nattrs - s->ndims);
        f->idx = (uint32_t)k;
        f->name = wr_special[k][0];
        f->type = TDB_UINT64;
        *cvn = 1;
        f->filters = &s->coords_filters;
        snprintf(base, 32, "%s", wr_special[k][1]);
    } else if (f->is_dim) {
        const struct tdb_dim *d = &s->dims[i - s->nattrs];
        f->idx = i - s->nattrs;
        f->name = d->name;
        f->type = d->type;
        *cvn = d->cell_val_num;
        f->filters = d->filters.n ? &d->filters : &s->coords_filters;
        snprintf(base, 32, "d%u", f->idx);
    } else {
        const struct tdb_attr *a = &s->attrs[i];
        f->idx = i;
        f->name = a->name;
        f->type = a->type;
        *cvn = a->cell_val_num;
        f->nullable = a->nullable;
        f->filters = &a->filters;
        snprintf(base, 32, "a%u", i);
    }
}

/* Field f's value and cell sizes (cvn values a cell) and the files it
 * has. */
static int wr_field_sizes(struct wr *w, struct wr_field *f, uint32_t cvn)
{
    f->vsize = tdb_dt_size(f->type);
    if (!f->vsize)
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "field '%s': datatype %u "
                       "unknown", f->name, f->type);
    f->var = cvn == TDB_VAR_NUM;
    if (!f->var && (!cvn || !tdb_mul_ok(f->vsize, cvn, &f->cell_size)))
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "field '%s': cell_val_num "
                       "%u", f->name, cvn);
    if (f->var)
        f->cell_size = f->vsize;
    f->skip_offsets = f->var && tdb_pipeline_skips_offsets(
                                    f->filters, f->type,
                                    tdb_schema_fragment_version(w->s));
    f->want[WR_VALUES] = true;
    f->want[WR_OFFSETS] = f->var;
    f->want[WR_VALIDITY] = f->nullable;
    return 0;
}

int tdb_wr_fields_init(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    uint32_t nx = 0;
    while (!w->dense && wr_special_of(w, nx) >= 0)
        nx++;
    w->nf = s->nattrs + (w->dense ? 0 : s->ndims) + nx;
    w->f = calloc(w->nf ? w->nf : 1, sizeof *w->f);
    if (!w->f)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < w->nf; i++) {
        struct wr_field *f = &w->f[i];
        uint32_t cvn;
        char base[32];
        wr_field_describe(w, f, i, base, &cvn);
        int r = wr_field_sizes(w, f, cvn);
        if (!r)
            r = wr_field_names(w, f, base);
        if (r)
            return r;
    }
    return 0;
}

/* The size of staged file `nm` (at `path`): a folder, or a file the staged
 * backend refuses (wr_refused), is an error. */
static int wr_ssize(struct wr *w, const char *nm, const char *path,
                    bool is_dir, uint64_t *size)
{
    if (is_dir)
        return tdb_err(w->err, TDB_E_INVAL, "%s: a folder, not a file", nm);
    int r = w->staged->ops->size(w->staged->ctx, path, size);
    if (wr_refused(w->err, nm, r))
        return TDB_E_INVAL;
    return r ? tdb_err(w->err, r, "%s: cannot get its size: %s", nm,
                       tdb_strerror(r))
             : 0;
}

bool tdb_wr_own_file(const char *name)
{
    return !strcmp(name, "__error") || !strcmp(name, WR_MARKER);
}

/* Matches the staged folder's entries to the fields' files. */
int tdb_wr_match_staged(struct wr *w, bool *has_subarray)
{
    struct tdb_names n;
    int r = tdb_io_names(w->staged, w->sdir, &n, w->err);
    if (r)
        return r;
    *has_subarray = false;
    for (size_t i = 0; i < n.n && !r; i++) {
        const char *nm = n.v[i];
        bool found = false;
        if (tdb_wr_own_file(nm))
            continue;
        if (!strcmp(nm, "__subarray.json")) {
            if (!w->dense) {
                r = tdb_err(w->err, TDB_E_INVAL, "%s: a sparse array takes no "
                            "region (its cells are where the dimension files "
                            "say); remove it", nm);
                break;
            }
            uint64_t sz;
            char *sp = tdb_path_join(w->sdir, nm);
            r = sp ? wr_ssize(w, nm, sp, n.is_dir[i], &sz)
                   : tdb_err(w->err, TDB_E_NOMEM, "out of memory");
            free(sp);
            *has_subarray = !r;
            continue;
        }
        for (uint32_t k = 0; k < w->nf && !found; k++) {
            struct wr_field *f = &w->f[k];
            for (int p = 0; p < 3 && !found; p++) {
                if (!f->want[p] || strcmp(f->sname[p], nm))
                    continue;
                found = true;
                if (!(f->spath[p] = tdb_path_join(w->sdir, nm))) {
                    r = tdb_err(w->err, TDB_E_NOMEM, "out of memory");
                    break;
                }
                r = wr_ssize(w, nm, f->spath[p], n.is_dir[i], &f->ssize[p]);
            }
        }
        if (!found && !r)
            r = tdb_err(w->err, TDB_E_INVAL, "%s: not a field of the array%s",
                        nm, w->dense ? "" : " (sparse arrays take every "
                        "attribute and dimension)");
    }
    tdb_names_free(&n);
    static const char *const what[3] = {"values", "offsets", "validity"};
    for (uint32_t k = 0; k < w->nf && !r; k++) {
        struct wr_field *f = &w->f[k];
        for (int p = 0; p < 3 && !r; p++)
            if (f->want[p] && !f->spath[p])
                r = tdb_err(w->err, TDB_E_INVAL, "%s: missing (the %s of %s "
                            "'%s')", f->sname[p], what[p],
                            f->is_dim ? "dimension" : "attribute", f->name);
    }
    return r;
}

/* ------------------------------------------------------------ validation */

/* Checks the offsets of a var-sized field over n cells (their sizes were
 * checked): first 0, ascending, multiples of the value size, the last
 * within the values. */
int tdb_wr_check_offsets(struct wr *w, const struct wr_field *f, uint64_t n)
{
    const char *nm = f->sname[WR_OFFSETS];
    uint64_t vsz = f->ssize[WR_VALUES];
    uint8_t *blk = f->mem[WR_OFFSETS];
    uint8_t *own = NULL;
    if (!blk && !(own = malloc(WR_CHECK_BLOCK * 8)))
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    uint64_t prev = 0;
    int r = 0;
    for (uint64_t i0 = 0; i0 < n && !r; i0 += WR_CHECK_BLOCK) {
        uint64_t m = n - i0 < WR_CHECK_BLOCK ? n - i0 : WR_CHECK_BLOCK;
        const uint8_t *p;
        if (own) {
            if ((r = tdb_wr_sread(w, f, WR_OFFSETS, i0 * 8, own, (size_t)(m * 8))))
                break;
            p = own;
        } else {
            p = blk + i0 * 8;
        }
        for (uint64_t k = 0; k < m; k++) {
            uint64_t o = tdb_le64(p + 8 * k), i = i0 + k;
            if (i == 0 && o != 0) {
                r = tdb_err(w->err, TDB_E_INVAL, "%s: the first offset is %llu, "
                            "must be 0", nm, (unsigned long long)o);
                break;
            }
            if (o < prev) {
                r = tdb_err(w->err, TDB_E_INVAL, "%s: offsets not ascending at "
                            "cell %llu (%llu after %llu)", nm,
                            (unsigned long long)i, (unsigned long long)o,
                            (unsigned long long)prev);
                break;
            }
            if (o > vsz) {
                r = tdb_err(w->err, TDB_E_INVAL, "%s: offset %llu of cell %llu "
                            "is past the end of %s (%llu bytes)", nm,
                            (unsigned long long)o, (unsigned long long)i,
                            f->sname[WR_VALUES], (unsigned long long)vsz);
                break;
            }
            if (o % f->vsize) {
                r = tdb_err(w->err, TDB_E_INVAL, "%s: offset %llu of cell %llu "
                            "is not a multiple of the value size %llu", nm,
                            (unsigned long long)o, (unsigned long long)i,
                            (unsigned long long)f->vsize);
                break;
            }
            prev = o;
        }
    }
    free(own);
    return r;
}

static int wr_check_validity(struct wr *w, const struct wr_field *f, uint64_t n)
{
    const char *nm = f->sname[WR_VALIDITY];
    uint8_t *blk = malloc(WR_CHECK_BLOCK * 8);
    if (!blk)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    int r = 0;
    for (uint64_t i0 = 0; i0 < n && !r; i0 += WR_CHECK_BLOCK * 8) {
        uint64_t m = n - i0 < WR_CHECK_BLOCK * 8 ? n - i0 : WR_CHECK_BLOCK * 8;
        if ((r = tdb_wr_sread(w, f, WR_VALIDITY, i0, blk, (size_t)m)))
            break;
        for (uint64_t k = 0; k < m; k++)
            if (blk[k] > 1) {
                r = tdb_err(w->err, TDB_E_INVAL, "%s: byte %llu is %u, must be "
                            "0 (null) or 1 (valid)", nm,
                            (unsigned long long)(i0 + k), blk[k]);
                break;
            }
    }
    free(blk);
    return r;
}

/* Checks the sizes of f's staged files against n cells, from the sizes
 * alone (nothing is read): a wrong count costs no I/O however large the
 * files.  w->nfrom says where n comes from. */
int tdb_wr_check_sizes(struct wr *w, const struct wr_field *f, uint64_t n)
{
    uint64_t need;
    const char *why = w->nfrom;
    if (f->var) {
        if (!tdb_mul_ok(n, 8, &need) || f->ssize[WR_OFFSETS] != need)
            return tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, expected %llu "
                           "(8 per cell, %llu cells: %s)", f->sname[WR_OFFSETS],
                           (unsigned long long)f->ssize[WR_OFFSETS],
                           (unsigned long long)(n * 8), (unsigned long long)n,
                           why);
        if (f->ssize[WR_VALUES] % f->vsize)
            return tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, not a multiple "
                           "of the value size %llu", f->sname[WR_VALUES],
                           (unsigned long long)f->ssize[WR_VALUES],
                           (unsigned long long)f->vsize);
    } else if (!tdb_mul_ok(n, f->cell_size, &need) ||
               f->ssize[WR_VALUES] != need) {
        return tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, expected %llu "
                       "(%llu cells of %llu bytes: %s)", f->sname[WR_VALUES],
                       (unsigned long long)f->ssize[WR_VALUES],
                       (unsigned long long)(n * f->cell_size),
                       (unsigned long long)n, (unsigned long long)f->cell_size,
                       why);
    }
    if (f->nullable && f->ssize[WR_VALIDITY] != n)
        return tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, expected %llu (one "
                       "per cell: %s)", f->sname[WR_VALIDITY],
                       (unsigned long long)f->ssize[WR_VALIDITY],
                       (unsigned long long)n, why);
    return 0;
}

/* Checks the contents of f's offsets and validity files (sizes checked). */
int tdb_wr_check_content(struct wr *w, const struct wr_field *f, uint64_t n)
{
    int r = f->var ? tdb_wr_check_offsets(w, f, n) : 0;
    if (!r && f->nullable)
        r = wr_check_validity(w, f, n);
    return r;
}

/* A signed or unsigned JSON integer bound of dim d as an offset from the
 * domain's low bound, checked against the domain and current domain. */
