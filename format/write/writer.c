/* writer.c: writing one fragment at format version 22 from staged files (format_spec/fragment.md data files and tiles; docs/LAYOUT.md "Writing"). */
#include "write/writer.h"
#include "model/order.h"
#include "model/arraydir.h"
#include "model/schemas.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WR_NONE UINT64_MAX             /* a tile cell the write does not cover */
#define WR_GAP 4096                    /* staged reads closer than this merge */
#define WR_READ_MAX (UINT64_C(4) << 20)/* bytes of one merged staged read */
#define WR_CHECK_BLOCK 8192            /* offsets / validity checked per read */
#define WR_JSON_MAX (1u << 20)         /* size of __subarray.json */
/* Written into the staged folder before anything goes into the array: the
 * new fragment's name.  Committing the same folder again after a crash
 * then either finds that fragment committed (and writes nothing: the crash
 * came between the commit and the removal of the staged files) or removes
 * the fragment's uncommitted folder before writing a new one.  The removal
 * of a committed staged folder renames it first (WR_TRASH), so a folder of
 * that name never exists without its marker. */
#define WR_MARKER "__fragment"
/* A committed staged folder is first renamed to this prefix followed by
 * the fragment's name (next to it), then emptied, the marker last, and
 * removed (tdb_staged_remove). */
#define WR_TRASH ".committed."
#define WR_REGION_MAX (UINT64_C(1) << 48)
#define WR_THREADS_MAX 256u            /* threads of the tile work */

enum { WR_VALUES = 0, WR_OFFSETS = 1, WR_VALIDITY = 2 };
enum { WR_OUT_FIXED = 0, WR_OUT_VAR = 1, WR_OUT_VALIDITY = 2 };

/* One field of the fragment and its staged files. */
struct wr_field {
    bool is_dim;
    uint32_t idx;               /* attribute or dimension index */
    uint32_t fid;               /* field number in the fragment */
    const char *name;
    unsigned type;
    bool var, nullable;
    uint64_t vsize;             /* bytes of one value */
    uint64_t cell_size;         /* fixed: bytes per cell; var: vsize */
    const struct tdb_pipeline *filters;
    bool skip_offsets;
    char *sname[3];             /* staged names: values, .offsets, .validity */
    char *spath[3];             /* staged paths, NULL when not staged */
    uint64_t ssize[3];
    bool want[3];
    char *out[3];               /* a0.tdb, a0_var.tdb, a0_validity.tdb */
    uint64_t osize[3];
    bool created[3];
    /* sparse dimensions: the staged bytes in memory */
    uint8_t *mem[3];            /* values, offsets (little-endian); never
                                 * validity */
};

/* Dense: the space tiles covering the region. */
struct wr_dense {
    uint32_t nd;
    uint64_t ext[TDB_MAX_DIMS];     /* tile extents (cells) */
    uint64_t tlo[TDB_MAX_DIMS];     /* the first tile along each dim */
    uint64_t ntl[TDB_MAX_DIMS];     /* tiles along each dim */
    uint64_t stride[TDB_MAX_DIMS];  /* of the region's staged cells */
    uint64_t tcells;                /* cells of a tile */
};

struct wr {
    const struct tdb_io *io, *staged;
    const char *sdir;
    struct tdb_arraydir *dir;   /* the array folder */
    struct tdb_schema_set schemas;
    const struct tdb_schema *s; /* the schema in force */
    const uint8_t *key;         /* data key (NULL unless encrypted) */
    const struct tdb_write_extras *x;   /* a consolidation's (or NULL) */
    bool dense;
    uint32_t nf;
    struct wr_field *f;
    uint64_t ncells;            /* staged cells */
    bool distinct;              /* timestamps: no two versions of a cell
                                 * (the name is marked: tdb_tsname_mark) */
    char nfrom[TDB_MAX_NAME + 64];  /* where ncells comes from */
    struct tdb_error *err;
    /* dense: the region as offsets from the domain's low bounds */
    uint64_t rlo[TDB_MAX_DIMS], rhi[TDB_MAX_DIMS];
    /* dense: the space tiles (wr_dense_write) */
    struct wr_dense dg;
    /* sparse: global order; cells per tile; the non-empty domain */
    uint64_t *perm;
    uint64_t *hil;
    uint64_t cap;
    struct tdb_range sned[TDB_MAX_DIMS];
    unsigned threads;           /* threads of the tile work (1: none) */
    /* output */
    char name[128];
    char *fragdir;
    struct tdb_fmw *fmw;
    bool dir_made;
    char *meta_path, *tmp_commit;
    bool meta_made;
};

/* ------------------------------------------------------------- helpers */


static int64_t wr_i64(unsigned type, const uint8_t *v)
{
    switch (tdb_dt_size(type)) {
    case 1: return (int8_t)v[0];
    case 2: return (int16_t)tdb_le16(v);
    case 4: return (int32_t)tdb_le32(v);
    default: return (int64_t)tdb_le64(v);
    }
}

static uint64_t wr_u64(unsigned type, const uint8_t *v)
{
    switch (tdb_dt_size(type)) {
    case 1: return v[0];
    case 2: return tdb_le16(v);
    case 4: return tdb_le32(v);
    default: return tdb_le64(v);
    }
}

static bool wr_isnan(unsigned type, const uint8_t *v)
{
    if (type == TDB_FLOAT32) {
        float x;
        memcpy(&x, v, 4);
        return x != x;
    }
    if (type == TDB_FLOAT64) {
        double x;
        memcpy(&x, v, 8);
        return x != x;
    }
    return false;
}

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

/* A read of staged bytes [off, off + len) of part p of a field into buf. */
struct wr_read {
    int p;
    uint64_t off;
    void *buf;
    size_t len;
};

/* Reads staged bytes of field f. */
static int wr_sread_e(const struct wr *w, const struct wr_field *f,
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

static int wr_sread(struct wr *w, const struct wr_field *f, int p, uint64_t off,
                    void *buf, size_t len)
{
    struct wr_read rd = {p, off, buf, len};
    return wr_sread_e(w, f, &rd, w->err);
}

/* One piece of a tile: `len` bytes at `from` of a staged part go to `to`. */
struct wr_piece {
    uint64_t from, len, to;
};

static int wr_piece_cmp(const void *a, const void *b)
{
    const struct wr_piece *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* Dense: one row of a space tile (its cells along the fastest dimension
 * of the cell order) inside the region: tile cells [to, to + n) are the
 * staged cells src, src + step, ... (step: wr_dense.stride of that
 * dimension, 1 in a row-major array). */
struct wr_run {
    uint64_t src, n, to;
};

/* Scratch memory of one thread doing tile work. */
struct wr_scratch {
    struct tdb_buf tmp;         /* merged staged reads */
    struct wr_piece *pc;
    size_t pc_cap;
    struct wr_run *run;         /* dense: the runs of tile run_tile */
    uint64_t nrun;
    uint64_t run_tile;          /* UINT64_MAX: none */
    uint64_t *src;              /* dense var-sized: the staged cell of each
                                 * cell of tile src_tile */
    uint64_t src_tile;          /* UINT64_MAX: none */
    struct tdb_scratch *fsc;    /* the filters' (a ZSTD context); NULL:
                                 * none could be made, they do without */
};

static void wr_scratch_init(struct wr_scratch *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->src_tile = sc->run_tile = UINT64_MAX;
    sc->fsc = calloc(1, sizeof *sc->fsc);
}

static void wr_scratch_free(struct wr_scratch *sc)
{
    tdb_buf_free(&sc->tmp);
    free(sc->pc);
    free(sc->run);
    free(sc->src);
    tdb_scratch_free(sc->fsc);
    memset(sc, 0, sizeof *sc);
}

/* Room for n pieces in sc->pc. */
static int wr_pieces(struct wr_scratch *sc, uint64_t n, struct tdb_error *err)
{
    if (n <= sc->pc_cap)
        return 0;
    size_t cap = sc->pc_cap ? sc->pc_cap : 256;
    while (cap < n)
        cap *= 2;
    struct wr_piece *pc = realloc(sc->pc, cap * sizeof *pc);
    if (!pc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    sc->pc = pc;
    sc->pc_cap = cap;
    return 0;
}

/* Appends piece (from, len, to) to the np pieces of sc, merged into the
 * last one when it continues it in the staged file and in the tile. */
static void wr_piece_add(struct wr_scratch *sc, size_t *np, uint64_t from,
                         uint64_t len, uint64_t to)
{
    if (*np) {
        struct wr_piece *l = &sc->pc[*np - 1];
        if (l->from + l->len == from && l->to + l->len == to) {
            l->len += len;
            return;
        }
    }
    sc->pc[(*np)++] = (struct wr_piece){from, len, to};
}

/* Copies the pieces of part p of field f into out: from memory for a
 * sparse dimension, else by merged reads of the staged file (a read of a
 * single piece goes straight to out). */
static int wr_gather(const struct wr *w, struct wr_scratch *sc,
                     const struct wr_field *f, int p, size_t n, uint8_t *out,
                     struct tdb_error *err)
{
    struct wr_piece *pc = sc->pc;
    if (f->mem[p]) {
        for (size_t i = 0; i < n; i++)
            if (pc[i].len)
                memcpy(out + pc[i].to, f->mem[p] + pc[i].from, (size_t)pc[i].len);
        return 0;
    }
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = pc[i - 1].from <= pc[i].from;
    if (!sorted)
        qsort(pc, n, sizeof *pc, wr_piece_cmp);
    size_t i = 0;
    while (i < n) {
        if (!pc[i].len) {
            i++;
            continue;
        }
        uint64_t start = pc[i].from, end = pc[i].from + pc[i].len;
        size_t j = i + 1;
        for (; j < n; j++) {
            if (pc[j].from > end + WR_GAP)
                break;
            uint64_t e = pc[j].from + pc[j].len;
            if (e < end)
                e = end;
            if (e - start > WR_READ_MAX)
                break;
            end = e;
        }
        size_t len = (size_t)(end - start);
        int r;
        if (j == i + 1) {
            struct wr_read rd = {p, start, out + pc[i].to, len};
            r = wr_sread_e(w, f, &rd, err);
            if (r)
                return r;
            i = j;
            continue;
        }
        tdb_buf_reset(&sc->tmp);
        if (tdb_buf_reserve(&sc->tmp, len))
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        struct wr_read rd = {p, start, sc->tmp.data, len};
        r = wr_sread_e(w, f, &rd, err);
        if (r)
            return r;
        for (size_t k = i; k < j; k++)
            if (pc[k].len)
                memcpy(out + pc[k].to, sc->tmp.data + (pc[k].from - start),
                       (size_t)pc[k].len);
        i = j;
    }
    return 0;
}

/* ------------------------------------------------------------ the fields */

static void wr_fields_free(struct wr *w)
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

static int wr_fields_init(struct wr *w)
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
        bool dim = i >= s->nattrs && i < s->nattrs + s->ndims;
        uint32_t cvn;
        char base[32];
        f->is_dim = dim;
        f->fid = i;
        if (i >= s->nattrs + s->ndims) {
            int k = wr_special_of(w, i - s->nattrs - s->ndims);
            f->idx = (uint32_t)k;
            f->name = wr_special[k][0];
            f->type = TDB_UINT64;
            cvn = 1;
            f->filters = &s->coords_filters;
            snprintf(base, sizeof base, "%s", wr_special[k][1]);
        } else if (dim) {
            const struct tdb_dim *d = &s->dims[i - s->nattrs];
            f->idx = i - s->nattrs;
            f->name = d->name;
            f->type = d->type;
            cvn = d->cell_val_num;
            f->filters = d->filters.n ? &d->filters : &s->coords_filters;
            snprintf(base, sizeof base, "d%u", f->idx);
        } else {
            const struct tdb_attr *a = &s->attrs[i];
            f->idx = i;
            f->name = a->name;
            f->type = a->type;
            cvn = a->cell_val_num;
            f->nullable = a->nullable;
            f->filters = &a->filters;
            snprintf(base, sizeof base, "a%u", i);
        }
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
                                        f->filters, f->type, TDB_WRITE_VERSION);
        f->want[WR_VALUES] = true;
        f->want[WR_OFFSETS] = f->var;
        f->want[WR_VALIDITY] = f->nullable;
        int r = wr_field_names(w, f, base);
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

/* Matches the staged folder's entries to the fields' files. */
static int wr_match_staged(struct wr *w, bool *has_subarray)
{
    struct tdb_names n;
    int r = tdb_io_names(w->staged, w->sdir, &n, w->err);
    if (r)
        return r;
    *has_subarray = false;
    for (size_t i = 0; i < n.n && !r; i++) {
        const char *nm = n.v[i];
        bool found = false;
        if (!strcmp(nm, "__error") || !strcmp(nm, WR_MARKER))
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
static int wr_check_offsets(struct wr *w, const struct wr_field *f, uint64_t n)
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
            if ((r = wr_sread(w, f, WR_OFFSETS, i0 * 8, own, (size_t)(m * 8))))
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
        if ((r = wr_sread(w, f, WR_VALIDITY, i0, blk, (size_t)m)))
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
static int wr_check_sizes(struct wr *w, const struct wr_field *f, uint64_t n)
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
static int wr_check_content(struct wr *w, const struct wr_field *f, uint64_t n)
{
    int r = f->var ? wr_check_offsets(w, f, n) : 0;
    if (!r && f->nullable)
        r = wr_check_validity(w, f, n);
    return r;
}

/* A signed or unsigned JSON integer bound of dim d as an offset from the
 * domain's low bound, checked against the domain and current domain. */
static int wr_region_bound(struct wr *w, uint32_t d, json_t *v, uint64_t *off)
{
    const struct tdb_dim *dim = &w->s->dims[d];
    const char *nm = "__subarray.json";
    if (!json_is_integer(v))
        return tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': bounds must "
                       "be integers", nm, dim->name);
    json_int_t x = json_integer_value(v);
    const uint8_t *lo = dim->lo, *hi = dim->hi;
    const uint8_t *clo = NULL, *chi = NULL;
    if (w->s->has_current_domain && w->s->current_domain) {
        clo = w->s->current_domain[d].lo;
        chi = w->s->current_domain[d].hi;
    }
    bool in;
    if (tdb_dt_is_signed_int(dim->type)) {
        int64_t v64 = (int64_t)x;
        in = v64 >= wr_i64(dim->type, lo) && v64 <= wr_i64(dim->type, hi);
        if (in && clo)
            in = v64 >= wr_i64(dim->type, clo) && v64 <= wr_i64(dim->type, chi);
        if (in)
            *off = (uint64_t)v64 - (uint64_t)wr_i64(dim->type, lo);
    } else {
        in = x >= 0 && (uint64_t)x >= wr_u64(dim->type, lo) &&
             (uint64_t)x <= wr_u64(dim->type, hi);
        if (in && clo)
            in = (uint64_t)x >= wr_u64(dim->type, clo) &&
                 (uint64_t)x <= wr_u64(dim->type, chi);
        if (in)
            *off = (uint64_t)x - wr_u64(dim->type, lo);
    }
    if (!in)
        return tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': %lld is "
                       "outside the %sdomain", nm, dim->name, (long long)x,
                       clo ? "current " : "");
    return 0;
}

static int wr_region_json(struct wr *w)
{
    const char *nm = "__subarray.json";
    char *path = tdb_path_join(w->sdir, nm);
    if (!path)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    uint64_t size = 0;
    char *text = NULL;
    int r = w->staged->ops->size(w->staged->ctx, path, &size);
    if (r)
        r = tdb_err(w->err, r, "%s: cannot get its size: %s", nm,
                    tdb_strerror(r));
    else if (size > WR_JSON_MAX)
        r = tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, too large", nm,
                    (unsigned long long)size);
    else if (!(text = malloc((size_t)size + 1)))
        r = tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    else if ((r = w->staged->ops->read_at(w->staged->ctx, path, 0, text,
                                          (size_t)size)))
        r = tdb_err(w->err, r, "%s: cannot read: %s", nm, tdb_strerror(r));
    free(path);
    if (r) {
        free(text);
        return r;
    }
    json_error_t je;
    json_t *root = json_loadb(text, (size_t)size, 0, &je);
    free(text);
    if (!root)
        return tdb_err(w->err, TDB_E_INVAL, "%s: line %d: %s", nm, je.line,
                       je.text);
    uint32_t nd = w->s->ndims;
    if (!json_is_array(root) || json_array_size(root) != nd) {
        json_decref(root);
        return tdb_err(w->err, TDB_E_INVAL, "%s: want [[lo, hi], ...] with one "
                       "pair per dimension (%u)", nm, nd);
    }
    for (uint32_t d = 0; d < nd && !r; d++) {
        json_t *pair = json_array_get(root, d);
        if (!json_is_array(pair) || json_array_size(pair) != 2) {
            r = tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': want [lo, hi]",
                        nm, w->s->dims[d].name);
            break;
        }
        if ((r = wr_region_bound(w, d, json_array_get(pair, 0), &w->rlo[d])) ||
            (r = wr_region_bound(w, d, json_array_get(pair, 1), &w->rhi[d])))
            break;
        if (w->rlo[d] > w->rhi[d])
            r = tdb_err(w->err, TDB_E_INVAL, "%s: dimension '%s': lo > hi", nm,
                        w->s->dims[d].name);
    }
    json_decref(root);
    return r;
}

/* The dense region: __subarray.json, else the view region (current domain,
 * else the domain); and the cell count. */
static int wr_region(struct wr *w, bool has_subarray)
{
    const struct tdb_schema *s = w->s;
    if (s->ndims > TDB_MAX_DIMS || !s->ndims)
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "%u dimensions", s->ndims);
    for (uint32_t d = 0; d < s->ndims; d++)
        if (!tdb_dt_is_integer(s->dims[d].type) ||
            s->dims[d].cell_val_num == TDB_VAR_NUM)
            return tdb_err(w->err, TDB_E_UNSUPPORTED, "dense dimension '%s' "
                           "is not an integer", s->dims[d].name);
    int r = 0;
    if (w->x && w->x->rlo) {
        for (uint32_t d = 0; d < s->ndims; d++) {
            w->rlo[d] = w->x->rlo[d];
            w->rhi[d] = w->x->rhi[d];
        }
    } else if (has_subarray) {
        r = wr_region_json(w);
    } else {
        for (uint32_t d = 0; d < s->ndims; d++) {
            const struct tdb_dim *dim = &s->dims[d];
            if (s->has_current_domain && s->current_domain) {
                w->rlo[d] = tdb_dim_offset(dim, s->current_domain[d].lo);
                w->rhi[d] = tdb_dim_offset(dim, s->current_domain[d].hi);
            } else {
                w->rlo[d] = 0;
                w->rhi[d] = tdb_dim_offset(dim, dim->hi);
            }
        }
    }
    if (r)
        return r;
    uint64_t cells = 1;
    for (uint32_t d = 0; d < s->ndims; d++) {
        uint64_t span = w->rhi[d] - w->rlo[d];
        if (span == UINT64_MAX || !tdb_mul_ok(cells, span + 1, &cells) ||
            cells > WR_REGION_MAX)
            return tdb_err(w->err, TDB_E_INVAL, "__subarray.json: %s more than "
                           "2^48 cells; give a smaller region",
                           has_subarray ? "the region has" : "missing, and the "
                           "domain has");
    }
    w->ncells = cells;
    return 0;
}

/* ----------------------------------------------------- sparse coordinates */

static void wr_coords(const struct wr *w, uint64_t c, struct tdb_coords *out)
{
    for (uint32_t j = 0; j < w->s->ndims; j++) {
        const struct wr_field *f = &w->f[w->s->nattrs + j];
        if (f->var) {
            uint64_t st = tdb_le64(f->mem[WR_OFFSETS] + 8 * c);
            uint64_t en = c + 1 < w->ncells
                              ? tdb_le64(f->mem[WR_OFFSETS] + 8 * (c + 1))
                              : f->ssize[WR_VALUES];
            out->v[j] = f->mem[WR_VALUES] + st;
            out->n[j] = en - st;
        } else {
            out->v[j] = f->mem[WR_VALUES] + c * f->vsize;
            out->n[j] = f->vsize;
        }
    }
}

static int wr_cell_cmp(const struct wr *w, uint64_t a, uint64_t b)
{
    struct tdb_coords ca, cb;
    wr_coords(w, a, &ca);
    wr_coords(w, b, &cb);
    return tdb_order_cmp(w->s, &ca, w->hil ? w->hil[a] : 0, &cb,
                         w->hil ? w->hil[b] : 0);
}

/* Stable bottom-up merge sort of w->perm in global order. */
static int wr_sort(struct wr *w)
{
    uint64_t n = w->ncells;
    bool sorted = true;
    for (uint64_t i = 1; i < n && sorted; i++)
        sorted = wr_cell_cmp(w, w->perm[i - 1], w->perm[i]) <= 0;
    if (sorted)
        return 0;
    uint64_t *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    uint64_t *a = w->perm, *b = tmp;
    for (uint64_t width = 1; width < n; width *= 2) {
        for (uint64_t lo = 0; lo < n; lo += 2 * width) {
            uint64_t mid = lo + width < n ? lo + width : n;
            uint64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = wr_cell_cmp(w, a[j], a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid)
                b[k++] = a[i++];
            while (j < hi)
                b[k++] = a[j++];
        }
        uint64_t *t = a;
        a = b;
        b = t;
    }
    if (a != w->perm)
        memcpy(w->perm, a, (size_t)n * sizeof *a);
    free(tmp);
    return 0;
}

/* Checks coordinate c of dimension j against the domain (and the current
 * domain); string dimensions have no domain. */
static int wr_check_coord(struct wr *w, uint32_t j, uint64_t c,
                          const struct tdb_coords *co)
{
    const struct tdb_dim *d = &w->s->dims[j];
    const struct wr_field *f = &w->f[w->s->nattrs + j];
    const struct tdb_range *cd = w->s->has_current_domain && w->s->current_domain
                                     ? &w->s->current_domain[j]
                                     : NULL;
    const uint8_t *v = co->v[j];
    if (f->var) {
        if (cd && cd->vlo && cd->vhi &&
            (tdb_value_cmp(d->type, v, co->n[j], cd->vlo, cd->vlo_size) < 0 ||
             tdb_value_cmp(d->type, v, co->n[j], cd->vhi, cd->vhi_size) > 0))
            return tdb_err(w->err, TDB_E_INVAL, "%s: the coordinate of cell %llu "
                           "is outside the current domain", f->sname[WR_VALUES],
                           (unsigned long long)c);
        return 0;
    }
    unsigned n = (unsigned)f->vsize;
    bool out = wr_isnan(d->type, v) ||
               tdb_value_cmp(d->type, v, n, d->lo, n) < 0 ||
               tdb_value_cmp(d->type, v, n, d->hi, n) > 0;
    bool out_cd = !out && cd &&
                  (tdb_value_cmp(d->type, v, n, cd->lo, n) < 0 ||
                   tdb_value_cmp(d->type, v, n, cd->hi, n) > 0);
    if (out || out_cd) {
        char val[64] = "";
        if (tdb_dt_is_signed_int(d->type))
            snprintf(val, sizeof val, " (%lld)", (long long)wr_i64(d->type, v));
        else if (tdb_dt_is_integer(d->type))
            snprintf(val, sizeof val, " (%llu)",
                     (unsigned long long)wr_u64(d->type, v));
        return tdb_err(w->err, TDB_E_INVAL, "%s: the coordinate of cell %llu%s "
                       "is outside the %sdomain", f->sname[WR_VALUES],
                       (unsigned long long)c, val, out_cd ? "current " : "");
    }
    return 0;
}

/* The cell count, from the first dimension's staged file; its name in
 * *nm0. */
static int wr_sparse_count(struct wr *w, const char **nm0)
{
    const struct tdb_schema *s = w->s;
    struct wr_field *f0 = &w->f[s->nattrs];
    uint64_t unit = f0->var ? 8 : f0->vsize;
    uint64_t sz0 = f0->ssize[f0->var ? WR_OFFSETS : WR_VALUES];
    *nm0 = f0->sname[f0->var ? WR_OFFSETS : WR_VALUES];
    if (sz0 % unit)
        return tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, not a whole number "
                       "of %llu-byte cells", *nm0, (unsigned long long)sz0,
                       (unsigned long long)unit);
    w->ncells = sz0 / unit;
    if (!w->ncells)
        return tdb_err(w->err, TDB_E_INVAL, "%s: no cells to write", *nm0);
    if (w->ncells > TDB_MAX_COUNT)
        return tdb_err(w->err, TDB_E_INVAL, "%s: %llu cells, more than one "
                       "fragment may take", *nm0,
                       (unsigned long long)w->ncells);
    snprintf(w->nfrom, sizeof w->nfrom, "the count of %s, %llu bytes", *nm0,
             (unsigned long long)sz0);
    return 0;
}

/* Every staged file's size (nothing is read until they agree), then the
 * dimensions loaded and checked, and the attributes' offsets and
 * validity. */
static int wr_sparse_load(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    int r = 0;
    for (uint32_t i = 0; i < w->nf && !r; i++)
        r = wr_check_sizes(w, &w->f[i], w->ncells);
    for (uint32_t j = 0; j < s->ndims && !r; j++) {
        const struct wr_field *f = &w->f[s->nattrs + j];
        if (f->var && f->ssize[WR_VALUES] > TDB_MAX_TILE_BYTES)
            r = tdb_err(w->err, TDB_E_INVAL, "%s: %llu bytes, too large",
                        f->sname[WR_VALUES],
                        (unsigned long long)f->ssize[WR_VALUES]);
    }
    for (uint32_t j = 0; j < s->ndims && !r; j++) {
        struct wr_field *f = &w->f[s->nattrs + j];
        for (int p = 0; p < 2 && !r; p++) {
            if (p == WR_OFFSETS && !f->var)
                continue;
            size_t len = (size_t)f->ssize[p];
            if (!(f->mem[p] = malloc(len ? len : 1)))
                r = tdb_err(w->err, TDB_E_NOMEM, "out of memory");
            else
                r = wr_sread(w, f, p, 0, f->mem[p], len);
        }
        if (!r && f->var)
            r = wr_check_offsets(w, f, w->ncells);
    }
    /* coordinates inside the domain */
    for (uint64_t c = 0; c < w->ncells && !r; c++) {
        struct tdb_coords co;
        wr_coords(w, c, &co);
        for (uint32_t j = 0; j < s->ndims && !r; j++)
            r = wr_check_coord(w, j, c, &co);
    }
    /* the attributes' offsets and validity (special fields have none) */
    for (uint32_t i = 0; i < s->nattrs && !r; i++)
        r = wr_check_content(w, &w->f[i], w->ncells);
    return r;
}

/* Sorts the cells into global order (w->perm). */
static int wr_sparse_order(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    w->perm = malloc((size_t)w->ncells * sizeof *w->perm);
    if (!w->perm)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    for (uint64_t c = 0; c < w->ncells; c++)
        w->perm[c] = c;
    if (s->cell_order == TDB_HILBERT) {
        w->hil = malloc((size_t)w->ncells * sizeof *w->hil);
        if (!w->hil)
            return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
        for (uint64_t c = 0; c < w->ncells; c++) {
            struct tdb_coords co;
            wr_coords(w, c, &co);
            w->hil[c] = tdb_hilbert(s, &co);
        }
    }
    return wr_sort(w);
}

/* Loads the dimensions' staged files, checks them, sorts the cells into
 * global order and checks for duplicates. */
static int wr_sparse_prepare(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    const char *nm0;
    int r;
    if (s->ndims > TDB_MAX_DIMS || !s->ndims)
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "%u dimensions", s->ndims);
    if ((r = wr_sparse_count(w, &nm0)) || (r = wr_sparse_load(w)) ||
        (r = wr_sparse_order(w)))
        return r;
    if (s->allows_dups)
        return 0;
    /* (a consolidation with timestamps keeps every version of a cell; when
     * it finds none of two, its fragment's name says so) */
    bool versions = w->x && w->x->timestamps;
    w->distinct = versions;
    for (uint64_t i = 1; i < w->ncells; i++) {
        struct tdb_coords a, b;
        wr_coords(w, w->perm[i - 1], &a);
        wr_coords(w, w->perm[i], &b);
        if (versions && tdb_coords_equal(s, &a, &b)) {
            w->distinct = false;
            break;
        }
        if (tdb_coords_equal(s, &a, &b)) {
            uint64_t x = w->perm[i - 1], y = w->perm[i];
            return tdb_err(w->err, TDB_E_INVAL, "%s: cells %llu and %llu "
                           "have the same coordinates, and the array does "
                           "not allow duplicates", nm0,
                           (unsigned long long)(x < y ? x : y),
                           (unsigned long long)(x < y ? y : x));
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- output */

/* The tile work (staged reads, tile metadata, filters) of one tile of one
 * field is a job; jobs run on the pool's threads (or in the calling thread
 * when there is none) and the calling thread appends their filtered tiles
 * to the fragment's files and records their metadata strictly in job
 * order, tile by tile and field by field: the same write calls, in the
 * same order, with the same bytes, as one thread doing it all. */

/* A filtered tile for output file o. */
struct wr_out {
    int o;
    struct tdb_buf b;
};

enum { WR_JOB_FREE, WR_JOB_QUEUED, WR_JOB_DONE };

struct wr_job {
    uint64_t t;                 /* tile */
    uint32_t fi;                /* field (index in w->f) */
    const uint64_t *src;        /* sparse: the tile's cells; dense: NULL */
    uint64_t m;                 /* cells of the tile */
    /* results: the tiles to append, in order, then rc (and err) */
    struct wr_out out[3];
    unsigned nout;
    uint8_t *data, *valid;      /* the tile's contents (st points in) */
    uint64_t *rel;
    uint64_t size;
    struct tdb_fmw_stats st;
    int rc;
    struct tdb_error err;
    int state;
};

static void wr_job_clear(struct wr_job *job)
{
    free(job->data);
    free(job->valid);
    free(job->rel);
    job->data = job->valid = NULL;
    job->rel = NULL;
}

static void wr_job_free(struct wr_job *job)
{
    wr_job_clear(job);
    for (int k = 0; k < 3; k++)
        tdb_buf_free(&job->out[k].b);
}

/* Appends n bytes to output file o of f; *at receives where they start. */
static int wr_append(struct wr *w, struct wr_field *f, int o, const uint8_t *p,
                     size_t n, uint64_t *at)
{
    char *path = tdb_path_join(w->fragdir, f->out[o]);
    if (!path)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    int r = w->io->ops->write_at(w->io->ctx, path, f->osize[o], p, n);
    free(path);
    f->created[o] = true; /* even a failed first write may have made it */
    if (r)
        return tdb_err(w->err, r, "%s/%s: cannot write %zu bytes: %s",
                       w->fragdir, f->out[o], n, tdb_strerror(r));
    *at = f->osize[o];
    f->osize[o] += n;
    return 0;
}

/* A tile to filter: `size` bytes of values of `type`, cs bytes a cell
 * (var-sized: a value, with the cells' offsets). */
struct wr_tile {
    const struct tdb_pipeline *p;
    unsigned type;
    uint64_t cs;
    bool is_var;
    const uint8_t *data;
    size_t size;
    const uint64_t *offs;
    uint64_t noffs;
};

/* The next output of job: the tile filtered for output file o of its
 * field. */
static int wr_emit(const struct wr *w, struct wr_scratch *sc,
                   struct wr_job *job, int o, const struct wr_tile *tl)
{
    const struct wr_field *f = &w->f[job->fi];
    char what[512];
    snprintf(what, sizeof what, "%s/%s: tile %llu", w->fragdir, f->out[o],
             (unsigned long long)job->t);
    struct tdb_tile_desc d = {
        .datatype = tl->type,
        .cell_size = tl->cs,
        .version = TDB_WRITE_VERSION,
        .is_var = tl->is_var,
        .key = w->key,
        .what = what,
        .scratch = sc->fsc,
        .in_offsets = tl->offs,
        .n_offsets = tl->noffs,
    };
    struct wr_out *out = &job->out[job->nout];
    tdb_buf_reset(&out->b);
    int r = tdb_pipeline_encode(tl->p, &d, tl->data, tl->size, &out->b,
                                &job->err);
    if (r)
        return r;
    out->o = o;
    job->nout++;
    return 0;
}

/* Dense: the runs of space tile t, in the tile's cell order, into run
 * (room for tcells / ext[d0] of them: one per row); @return their count.
 * Rows outside the region have none. */
static uint64_t wr_dense_runs(const struct wr *w, uint64_t t, struct wr_run *run)
{
    const struct wr_dense *g = &w->dg;
    uint32_t nd = g->nd;
    bool tcol = w->s->tile_order == TDB_COL_MAJOR;
    bool ccol = w->s->cell_order == TDB_COL_MAJOR;
    uint64_t tc[TDB_MAX_DIMS] = {0}, rest = t;
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t d = tcol ? k : nd - 1 - k;
        tc[d] = g->tlo[d] + rest % g->ntl[d];
        rest /= g->ntl[d];
    }
    /* dk[0] varies fastest in the cell order; cnt[k] counts along dk[k] */
    uint32_t dk[TDB_MAX_DIMS] = {0};
    uint64_t cnt[TDB_MAX_DIMS];
    for (uint32_t k = 0; k < nd; k++) {
        dk[k] = ccol ? k : nd - 1 - k;
        cnt[k] = 0;
    }
    uint32_t d0 = dk[0];
    uint64_t o0 = tc[d0] * g->ext[d0], e = g->ext[d0], c = 0, nr = 0;
    bool cols = o0 + e - 1 >= w->rlo[d0] && o0 <= w->rhi[d0];
    /* the cells [jlo, jhi) of each row are in the region (when the row is) */
    uint64_t jlo = w->rlo[d0] > o0 ? w->rlo[d0] - o0 : 0;
    uint64_t jhi = w->rhi[d0] - o0 + 1 < e ? w->rhi[d0] - o0 + 1 : e;
    for (;; c += e) {
        bool in = cols;
        uint64_t base = 0;
        for (uint32_t k = 1; k < nd && in; k++) {
            uint32_t d = dk[k];
            uint64_t o = tc[d] * g->ext[d] + cnt[k];
            if (o < w->rlo[d] || o > w->rhi[d])
                in = false;
            else
                base += (o - w->rlo[d]) * g->stride[d];
        }
        if (in)
            run[nr++] = (struct wr_run){
                base + (o0 + jlo - w->rlo[d0]) * g->stride[d0], jhi - jlo,
                c + jlo};
        uint32_t k = 1;
        while (k < nd && ++cnt[k] == g->ext[dk[k]])
            cnt[k++] = 0;
        if (k >= nd)
            break;
    }
    return nr;
}

/* Dense: the runs of the job's tile in sc (computed once per tile). */
static int wr_job_runs(const struct wr *w, struct wr_scratch *sc,
                       const struct wr_job *job, struct tdb_error *err)
{
    if (sc->run_tile == job->t)
        return 0;
    const struct wr_dense *g = &w->dg;
    uint32_t d0 = w->s->cell_order == TDB_COL_MAJOR ? 0 : g->nd - 1;
    if (!sc->run && !(sc->run = malloc((size_t)(g->tcells / g->ext[d0]) *
                                       sizeof *sc->run)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    sc->nrun = wr_dense_runs(w, job->t, sc->run);
    sc->run_tile = job->t;
    return 0;
}

/* Dense: the staged cell of each cell of the job's tile (WR_NONE: outside
 * the region), in the tile's cell order, in sc->src. */
static int wr_job_src(const struct wr *w, struct wr_scratch *sc,
                      const struct wr_job *job, struct tdb_error *err)
{
    if (sc->src_tile == job->t)
        return 0;
    int r = wr_job_runs(w, sc, job, err);
    if (r)
        return r;
    const struct wr_dense *g = &w->dg;
    uint32_t d0 = w->s->cell_order == TDB_COL_MAJOR ? 0 : g->nd - 1;
    uint64_t step = g->stride[d0];
    if (!sc->src && !(sc->src = malloc((size_t)g->tcells * sizeof *sc->src)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (uint64_t k = 0; k < g->tcells; k++)
        sc->src[k] = WR_NONE;
    for (uint64_t i = 0; i < sc->nrun; i++) {
        const struct wr_run *u = &sc->run[i];
        for (uint64_t j = 0; j < u->n; j++)
            sc->src[u->to + j] = u->src + j * step;
    }
    sc->src_tile = job->t;
    return 0;
}

/* The pieces (in sc->pc, *np of them) that gather the job's cells of `cs`
 * bytes each from a staged file of such cells; *full: every cell of the
 * tile is written (else the rest must be zeroed). */
static int wr_cell_pieces(const struct wr *w, struct wr_scratch *sc,
                          struct wr_job *job, uint64_t cs, size_t *np,
                          bool *full)
{
    struct tdb_error *err = &job->err;
    uint64_t m = job->m;
    int r = wr_pieces(sc, m, err);
    if (r)
        return r;
    *np = 0;
    if (job->src) {
        const uint64_t *src = job->src;
        for (uint64_t k = 0, e; k < m; k = e) {
            e = k + 1;
            while (e < m && src[e] == src[e - 1] + 1)
                e++;
            wr_piece_add(sc, np, src[k] * cs, (e - k) * cs, k * cs);
        }
        *full = true;
        return 0;
    }
    if ((r = wr_job_runs(w, sc, job, err)))
        return r;
    const struct wr_dense *g = &w->dg;
    uint32_t d0 = w->s->cell_order == TDB_COL_MAJOR ? 0 : g->nd - 1;
    uint64_t step = g->stride[d0], covered = 0;
    for (uint64_t i = 0; i < sc->nrun; i++) {
        const struct wr_run *u = &sc->run[i];
        if (step == 1)
            wr_piece_add(sc, np, u->src * cs, u->n * cs, u->to * cs);
        else
            for (uint64_t j = 0; j < u->n; j++)
                wr_piece_add(sc, np, (u->src + j * step) * cs, cs,
                             (u->to + j) * cs);
        covered += u->n;
    }
    *full = covered == m;
    return 0;
}

/* The validity tile of the job's field: one byte per tile cell, 0 where
 * not written. */
static int wr_validity_tile(const struct wr *w, struct wr_scratch *sc,
                            struct wr_job *job)
{
    const struct wr_field *f = &w->f[job->fi];
    uint64_t m = job->m;
    size_t np;
    bool full;
    int r = wr_cell_pieces(w, sc, job, 1, &np, &full);
    if (r)
        return r;
    uint8_t *v = full ? malloc((size_t)m ? (size_t)m : 1)
                      : calloc((size_t)m ? (size_t)m : 1, 1);
    if (!v)
        return tdb_err(&job->err, TDB_E_NOMEM, "out of memory");
    job->valid = v;
    r = wr_gather(w, sc, f, WR_VALIDITY, np, v, &job->err);
    struct wr_tile tl = {.p = &w->s->validity_filters, .type = TDB_UINT8,
                         .cs = 1, .data = v, .size = (size_t)m};
    if (!r)
        r = wr_emit(w, sc, job, WR_OUT_VALIDITY, &tl);
    return r;
}

/* A fixed-size field's tile: *size bytes gathered into job->data. */
static int wr_job_fixed(const struct wr *w, struct wr_scratch *sc,
                        struct wr_job *job, uint64_t *size)
{
    const struct wr_field *f = &w->f[job->fi];
    struct tdb_error *err = &job->err;
    uint64_t m = job->m;
    size_t np;
    bool full;
    int r;
    if (!tdb_mul_ok(m, f->cell_size, size) || *size > TDB_MAX_TILE_BYTES)
        return tdb_err(err, TDB_E_UNSUPPORTED, "%s: tiles of %llu cells "
                       "of %llu bytes are too large", f->out[0],
                       (unsigned long long)m,
                       (unsigned long long)f->cell_size);
    if ((r = wr_cell_pieces(w, sc, job, f->cell_size, &np, &full)))
        return r;
    size_t n = (size_t)*size ? (size_t)*size : 1;
    if (!(job->data = full ? malloc(n) : calloc(n, 1)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    r = wr_gather(w, sc, f, WR_VALUES, np, job->data, err);
    struct wr_tile tl = {.p = f->filters, .type = f->type,
                         .cs = f->cell_size, .data = job->data,
                         .size = (size_t)*size};
    if (!r)
        r = wr_emit(w, sc, job, WR_OUT_FIXED, &tl);
    return r;
}

/* The start and end of each staged cell src[k]'s value, into se (16 bytes
 * a cell; nothing for cells not written). */
static int wr_var_bounds(const struct wr *w, struct wr_scratch *sc,
                         struct wr_job *job, const uint64_t *src, uint8_t *se)
{
    const struct wr_field *f = &w->f[job->fi];
    size_t np = 0;
    for (uint64_t k = 0; k < job->m; k++) {
        if (src[k] == WR_NONE)
            continue;
        wr_piece_add(sc, &np, src[k] * 8, 8, 16 * k);
        if (src[k] + 1 < w->ncells)
            wr_piece_add(sc, &np, (src[k] + 1) * 8, 8, 16 * k + 8);
        else
            tdb_st64(se + 16 * k + 8, f->ssize[WR_VALUES]);
    }
    return wr_gather(w, sc, f, WR_OFFSETS, np, se, &job->err);
}

/* The pieces that gather the values bounded by se, each cell's offset in
 * the tile in rel[] and (as stored) ob; *size the tile's bytes. */
static int wr_var_layout(const struct wr *w, struct wr_scratch *sc,
                         struct wr_job *job, const uint8_t *se, uint8_t *ob,
                         size_t *np)
{
    const struct wr_field *f = &w->f[job->fi];
    const uint64_t *src = job->src ? job->src : sc->src;
    uint64_t size = 0;
    int r = 0;
    *np = 0;
    for (uint64_t k = 0; k < job->m && !r; k++) {
        uint64_t len = f->vsize;
        job->rel[k] = size;
        if (src[k] != WR_NONE) {
            uint64_t st = tdb_le64(se + 16 * k), en = tdb_le64(se + 16 * k + 8);
            len = en - st;
            if (len)
                wr_piece_add(sc, np, st, len, size);
        }
        tdb_st64(ob + 8 * k, size);
        if (!tdb_add_ok(size, len, &size) || size > TDB_MAX_TILE_BYTES)
            r = tdb_err(&job->err, TDB_E_UNSUPPORTED, "%s: tile %llu is "
                        "larger than %llu bytes", f->out[WR_OUT_VAR],
                        (unsigned long long)job->t,
                        (unsigned long long)TDB_MAX_TILE_BYTES);
    }
    job->size = size;
    return r;
}

/* The offsets tile of a var-sized field: ob, or an empty tile (no chunks)
 * when the filter stores the offsets. */
static int wr_var_offsets(const struct wr *w, struct wr_scratch *sc,
                          struct wr_job *job, const uint8_t *ob)
{
    const struct wr_field *f = &w->f[job->fi];
    if (f->skip_offsets) {
        static const uint8_t zero[8] = {0};
        struct wr_out *out = &job->out[job->nout];
        tdb_buf_reset(&out->b);
        if (tdb_buf_append(&out->b, zero, 8))
            return tdb_err(&job->err, TDB_E_NOMEM, "out of memory");
        out->o = WR_OUT_FIXED;
        job->nout++;
        return 0;
    }
    struct wr_tile tl = {.p = &w->s->offsets_filters, .type = TDB_UINT64,
                         .cs = 8, .data = ob, .size = (size_t)job->m * 8};
    return wr_emit(w, sc, job, WR_OUT_FIXED, &tl);
}

/* A var-sized field's tile: *size value bytes gathered into job->data,
 * the cells' offsets in job->rel. */
static int wr_job_var(const struct wr *w, struct wr_scratch *sc,
                      struct wr_job *job, uint64_t *size)
{
    const struct wr_field *f = &w->f[job->fi];
    struct tdb_error *err = &job->err;
    uint64_t m = job->m;
    int r;
    if (!job->src && (r = wr_job_src(w, sc, job, err)))
        return r;
    uint8_t *se = malloc((size_t)m * 16 + 1);
    uint64_t *rel = job->rel = malloc((size_t)m * sizeof *rel + 1);
    uint8_t *ob = malloc((size_t)m * 8 + 1);
    if (!se || !rel || !ob || wr_pieces(sc, 2 * m, err)) {
        free(se);
        free(ob);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    size_t np = 0;
    job->size = 0;
    r = wr_var_bounds(w, sc, job, job->src ? job->src : sc->src, se);
    if (!r)
        r = wr_var_layout(w, sc, job, se, ob, &np);
    *size = job->size;
    free(se);
    if (!r && !(job->data = calloc((size_t)*size ? (size_t)*size : 1, 1)))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!r)
        r = wr_gather(w, sc, f, WR_VALUES, np, job->data, err);
    if (!r)
        r = wr_var_offsets(w, sc, job, ob);
    free(ob);
    struct wr_tile tl = {.p = f->filters, .type = f->type, .cs = f->vsize,
                         .is_var = true, .data = job->data,
                         .size = (size_t)*size, .offs = rel, .noffs = m};
    if (!r)
        r = wr_emit(w, sc, job, WR_OUT_VAR, &tl);
    return r;
}

/* The job's tile of its field: cell k of the tile is staged cell src[k]
 * (WR_NONE: not written: zero bytes, one zero value when var-sized,
 * validity 0); its filtered tiles and metadata. */
static int wr_job_work(const struct wr *w, struct wr_scratch *sc,
                       struct wr_job *job)
{
    const struct wr_field *f = &w->f[job->fi];
    uint64_t size = 0;
    int r = f->var ? wr_job_var(w, sc, job, &size)
                   : wr_job_fixed(w, sc, job, &size);
    if (!r && f->nullable)
        r = wr_validity_tile(w, sc, job);
    job->size = size;
    struct tdb_fmw_tile t = {.data = job->data, .size = size,
                             .offsets = job->rel, .ncells = job->m,
                             .validity = job->valid};
    if (!r)
        r = tdb_fmw_tile_stats(w->fmw, f->fid, job->t, &t, &job->st,
                               &job->err);
    return r;
}

static void wr_job_run(const struct wr *w, struct wr_scratch *sc,
                       struct wr_job *job)
{
    job->nout = 0;
    job->rc = 0;
    memset(&job->err, 0, sizeof job->err);
    job->rc = wr_job_work(w, sc, job);
}

/* Appends the job's filtered tiles, then (done) records its metadata. */
static int wr_job_record(struct wr *w, struct wr_job *job)
{
    struct wr_field *f = &w->f[job->fi];
    uint64_t at[3] = {0, 0, 0};
    int r = 0;
    for (unsigned k = 0; k < job->nout && !r; k++)
        r = wr_append(w, f, job->out[k].o, job->out[k].b.data,
                      job->out[k].b.len, &at[job->out[k].o]);
    if (!r && job->rc) {
        r = job->rc;
        if (w->err)
            *w->err = job->err;
    }
    struct tdb_fmw_where where = {
        .off = at[WR_OUT_FIXED],
        .var_off = f->var ? at[WR_OUT_VAR] : 0,
        .var_size = f->var ? job->size : 0,
        .validity_off = at[WR_OUT_VALIDITY],
    };
    if (!r)
        r = tdb_fmw_add_tile_stats(w->fmw, &where, &job->st, w->err);
    wr_job_clear(job);
    return r;
}

/* Job number s: tile s / nf, field s % nf. */
static void wr_job_init(const struct wr *w, struct wr_job *job, uint64_t s)
{
    job->t = s / w->nf;
    job->fi = (uint32_t)(s % w->nf);
    if (w->dense) {
        job->src = NULL;
        job->m = w->dg.tcells;
    } else {
        uint64_t first = job->t * w->cap, n = w->ncells;
        job->src = w->perm + first;
        job->m = n - first < w->cap ? n - first : w->cap;
    }
}

/* Sparse: after the last field of tile t, its MBR (and the non-empty
 * domain so far). */
static void wr_range_grow(const struct wr *w, struct tdb_range *r, uint32_t j,
                          const struct tdb_coords *co, bool first)
{
    const struct tdb_dim *d = &w->s->dims[j];
    const uint8_t *v = co->v[j];
    uint64_t n = co->n[j];
    if (d->cell_val_num == TDB_VAR_NUM) {
        if (first || tdb_value_cmp(d->type, v, n, r->vlo, r->vlo_size) < 0) {
            r->vlo = (uint8_t *)(uintptr_t)v;
            r->vlo_size = n;
        }
        if (first || tdb_value_cmp(d->type, v, n, r->vhi, r->vhi_size) > 0) {
            r->vhi = (uint8_t *)(uintptr_t)v;
            r->vhi_size = n;
        }
        return;
    }
    if (first || tdb_value_cmp(d->type, v, n, r->lo, n) < 0)
        memcpy(r->lo, v, (size_t)n);
    if (first || tdb_value_cmp(d->type, v, n, r->hi, n) > 0)
        memcpy(r->hi, v, (size_t)n);
}

static int wr_sparse_mbr(struct wr *w, uint64_t t)
{
    uint32_t nd = w->s->ndims;
    uint64_t first = t * w->cap, n = w->ncells;
    uint64_t m = n - first < w->cap ? n - first : w->cap;
    struct tdb_range mbr[TDB_MAX_DIMS];
    memset(mbr, 0, sizeof mbr);
    for (uint64_t k = 0; k < m; k++) {
        struct tdb_coords co;
        wr_coords(w, w->perm[first + k], &co);
        for (uint32_t j = 0; j < nd; j++) {
            wr_range_grow(w, &mbr[j], j, &co, k == 0);
            wr_range_grow(w, &w->sned[j], j, &co, t == 0 && k == 0);
        }
    }
    return tdb_fmw_add_mbr(w->fmw, mbr, w->err);
}

/* Records job s (and after a sparse tile's last field, its MBR). */
static int wr_job_done(struct wr *w, struct wr_job *job)
{
    int r = wr_job_record(w, job);
    if (!r && !w->dense && job->fi == w->nf - 1)
        r = wr_sparse_mbr(w, job->t);
    return r;
}

/* The pool: workers take queued jobs in order; the calling thread queues
 * up to q jobs ahead of the one it writes next. */
struct wr_pool {
    const struct wr *w;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct wr_job *jobs;
    unsigned q;
    uint64_t queued, taken;     /* jobs [0, queued) queued; taken: next */
    bool stop;
};

struct wr_worker {
    struct wr_pool *p;
    struct wr_scratch sc;
    pthread_t th;
};

static void *wr_worker_main(void *arg)
{
    struct wr_worker *k = arg;
    struct wr_pool *p = k->p;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->taken == p->queued)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop)
            break;
        struct wr_job *job = &p->jobs[p->taken++ % p->q];
        pthread_mutex_unlock(&p->mu);
        wr_job_run(p->w, &k->sc, job);
        pthread_mutex_lock(&p->mu);
        job->state = WR_JOB_DONE;
        pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* All the jobs in the calling thread. */
static int wr_jobs_serial(struct wr *w, uint64_t total)
{
    struct wr_scratch sc;
    struct wr_job job;
    wr_scratch_init(&sc);
    memset(&job, 0, sizeof job);
    int r = 0;
    for (uint64_t s = 0; s < total && !r; s++) {
        wr_job_init(w, &job, s);
        wr_job_run(w, &sc, &job);
        r = wr_job_done(w, &job);
    }
    wr_job_free(&job);
    wr_scratch_free(&sc);
    return r;
}

/* The jobs on nth threads; false in *ran when none could start. */
static int wr_jobs_pool(struct wr *w, uint64_t total, unsigned nth, bool *ran)
{
    struct wr_pool p;
    memset(&p, 0, sizeof p);
    p.w = w;
    p.q = 2 * nth;
    p.jobs = calloc(p.q, sizeof *p.jobs);
    struct wr_worker *k = calloc(nth, sizeof *k);
    *ran = false;
    if (!p.jobs || !k) {
        free(p.jobs);
        free(k);
        return 0;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.work, NULL);
    pthread_cond_init(&p.done, NULL);
    unsigned started = 0;
    for (; started < nth; started++) {
        k[started].p = &p;
        wr_scratch_init(&k[started].sc);
        if (pthread_create(&k[started].th, NULL, wr_worker_main, &k[started]))
            break;
    }
    int r = 0;
    if (started) {
        *ran = true;
        for (uint64_t s = 0; s < total && !r; s++) {
            struct wr_job *job = &p.jobs[s % p.q];
            pthread_mutex_lock(&p.mu);
            bool more = false;
            while (p.queued < total && p.queued - s < p.q) {
                struct wr_job *nj = &p.jobs[p.queued % p.q];
                wr_job_init(w, nj, p.queued);
                nj->state = WR_JOB_QUEUED;
                p.queued++;
                more = true;
            }
            if (more)
                pthread_cond_broadcast(&p.work);
            while (job->state != WR_JOB_DONE)
                pthread_cond_wait(&p.done, &p.mu);
            pthread_mutex_unlock(&p.mu);
            r = wr_job_done(w, job);
            job->state = WR_JOB_FREE;
        }
    }
    pthread_mutex_lock(&p.mu);
    p.stop = true;
    pthread_cond_broadcast(&p.work);
    pthread_mutex_unlock(&p.mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(k[i].th, NULL);
    for (unsigned i = 0; i < nth; i++)
        wr_scratch_free(&k[i].sc);
    for (unsigned i = 0; i < p.q; i++)
        wr_job_free(&p.jobs[i]);
    pthread_cond_destroy(&p.done);
    pthread_cond_destroy(&p.work);
    pthread_mutex_destroy(&p.mu);
    free(p.jobs);
    free(k);
    return r;
}

/* The tiles' jobs: ntiles tiles of every field. */
static int wr_jobs(struct wr *w, uint64_t ntiles)
{
    uint64_t total;
    if (!tdb_mul_ok(ntiles, w->nf, &total))
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "%llu tiles of %u fields",
                       (unsigned long long)ntiles, w->nf);
    unsigned nth = w->threads;
    if (nth > total)
        nth = (unsigned)total;
    if (nth > 1) {
        bool ran;
        int r = wr_jobs_pool(w, total, nth, &ran);
        if (ran)
            return r;
    }
    return wr_jobs_serial(w, total);
}

/* Dense: the space tiles covering the region in tile order, the cells of
 * each in cell order. */
static int wr_dense_write(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    struct wr_dense *g = &w->dg;
    uint32_t nd = g->nd = s->ndims;
    uint64_t ntiles = 1;
    g->tcells = 1;
    for (uint32_t d = 0; d < nd; d++) {
        g->ext[d] = tdb_dim_tile_span(&s->dims[d]);
        if (!g->ext[d] || g->ext[d] == UINT64_MAX)
            return tdb_err(w->err, TDB_E_UNSUPPORTED, "dimension '%s': no "
                           "usable tile extent", s->dims[d].name);
        g->tlo[d] = w->rlo[d] / g->ext[d];
        g->ntl[d] = w->rhi[d] / g->ext[d] - g->tlo[d] + 1;
        if (!tdb_mul_ok(ntiles, g->ntl[d], &ntiles) ||
            !tdb_mul_ok(g->tcells, g->ext[d], &g->tcells) ||
            g->tcells > TDB_MAX_COUNT)
            return tdb_err(w->err, TDB_E_UNSUPPORTED, "space tiles of more than "
                           "%llu cells", (unsigned long long)TDB_MAX_COUNT);
    }
    g->stride[nd - 1] = 1;
    for (uint32_t d = nd - 1; d-- > 0;)
        g->stride[d] = g->stride[d + 1] * (w->rhi[d + 1] - w->rlo[d + 1] + 1);
    /* the non-empty domain is the region; the builder needs it first */
    struct tdb_range ned[TDB_MAX_DIMS];
    memset(ned, 0, sizeof ned);
    for (uint32_t d = 0; d < nd; d++) {
        tdb_dim_value(&s->dims[d], w->rlo[d], ned[d].lo);
        tdb_dim_value(&s->dims[d], w->rhi[d], ned[d].hi);
    }
    int r = tdb_fmw_set_ned(w->fmw, ned, w->err);
    return r ? r : wr_jobs(w, ntiles);
}

/* Sparse: tiles of `capacity` cells in global order, an MBR per tile. */
static int wr_sparse_write(struct wr *w)
{
    uint64_t cap = w->s->capacity ? w->s->capacity : 1;
    if (cap > TDB_MAX_COUNT)
        cap = TDB_MAX_COUNT;
    w->cap = cap;
    uint64_t n = w->ncells;
    uint64_t ntiles = n / cap + (n % cap != 0);
    tdb_fmw_set_sparse_tiles(w->fmw, ntiles, n - (ntiles - 1) * cap);
    memset(w->sned, 0, sizeof w->sned);
    int r = wr_jobs(w, ntiles);
    return r ? r : tdb_fmw_set_ned(w->fmw, w->sned, w->err);
}

/* --------------------------------------------------------------- commit */

static int wr_sync(struct wr *w, const char *path)
{
    if (!w->io->ops->sync)
        return 0;
    int r = w->io->ops->sync(w->io->ctx, path);
    return r ? tdb_err(w->err, r, "%s: cannot sync: %s", path, tdb_strerror(r))
             : 0;
}

/* Records the fragment's name in the staged folder (WR_MARKER). */
static int wr_mark_staged(struct wr *w)
{
    const struct tdb_io *st = w->staged;
    if (!st->ops->write_at)
        return 0;
    char *p = tdb_path_join(w->sdir, WR_MARKER);
    if (!p)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    if (st->ops->remove)
        st->ops->remove(st->ctx, p);
    int r = st->ops->write_at(st->ctx, p, 0, w->name, strlen(w->name));
    if (!r && st->ops->sync)
        r = st->ops->sync(st->ctx, p);
    if (r)
        tdb_err(w->err, r, "%s: cannot write: %s", p, tdb_strerror(r));
    free(p);
    return r;
}

/* The fragment name in the staged folder's marker (a new string), or NULL
 * when there is none or it is not a fragment name this writer makes. */
static char *wr_marker_name(const struct tdb_io *staged, const char *sdir)
{
    char *p = tdb_path_join(sdir, WR_MARKER), *name = NULL;
    uint64_t size = 0;
    char buf[128];
    struct tdb_tsname ts;
    if (p && !staged->ops->size(staged->ctx, p, &size) && size &&
        size < sizeof buf &&
        !staged->ops->read_at(staged->ctx, p, 0, buf, (size_t)size) &&
        !memchr(buf, '/', (size_t)size) && !memchr(buf, 0, (size_t)size)) {
        buf[size] = 0;
        if (buf[0] == '_' && !tdb_tsname_parse(buf, &ts))
            name = strdup(buf);
    }
    free(p);
    return name;
}

static bool wr_is_committed(const struct tdb_io *io, const char *name)
{
    char wrt[192];
    snprintf(wrt, sizeof wrt, "__commits/%s.wrt", name);
    return tdb_io_exists(io, wrt);
}

/* The name in the staged folder's marker when that fragment is already
 * committed (a repeated commit), else NULL. */
static char *wr_already_committed(const struct tdb_io *io,
                                  const struct tdb_io *staged, const char *sdir)
{
    char *name = wr_marker_name(staged, sdir);
    if (name && !wr_is_committed(io, name)) {
        free(name);
        name = NULL;
    }
    return name;
}

int tdb_fragment_clean(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, char **removed,
                       struct tdb_error *err)
{
    if (removed)
        *removed = NULL;
    char *name = wr_marker_name(staged, staged_dir);
    if (!name || wr_is_committed(io, name) || !io->ops->remove) {
        free(name);
        return 0;
    }
    char *dir = tdb_path_join("__fragments", name);
    if (!dir) {
        free(name);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    int r = 0;
    if (tdb_io_isdir(io, dir)) {
        struct tdb_names n;
        r = tdb_io_names(io, dir, &n, err);
        for (size_t i = 0; i < n.n && !r; i++) {
            char *p = tdb_path_join(dir, n.v[i]);
            /* a fragment folder is flat: a sub-folder is not ours */
            r = !p ? tdb_err(err, TDB_E_NOMEM, "out of memory")
                : n.is_dir[i] ? tdb_err(err, TDB_E_IO, "%s: a folder in an "
                                        "uncommitted fragment; left alone", p)
                              : io->ops->remove(io->ctx, p);
            if (r && p && !n.is_dir[i])
                tdb_err(err, r, "%s: cannot remove: %s", p, tdb_strerror(r));
            free(p);
        }
        tdb_names_free(&n);
        /* (a backend whose folders exist only through their files has
         * none left to remove) */
        if (!r && (r = io->ops->remove(io->ctx, dir)) == TDB_E_NOENT)
            r = 0;
        if (r)
            tdb_err(err, r, "%s: cannot remove: %s", dir, tdb_strerror(r));
        if (!r && removed) {
            *removed = name;
            name = NULL;
        }
    }
    free(dir);
    free(name);
    return r;
}

bool tdb_staged_is_trash(const char *name)
{
    struct tdb_tsname ts;
    size_t n = strlen(WR_TRASH);
    return !strncmp(name, WR_TRASH, n) && !strchr(name, '/') &&
           name[n] == '_' && !tdb_tsname_parse(name + n, &ts);
}

/* Removes the files of folder `dir`, the marker last, then the folder.
 * Stops at the first failure. */
static int wr_remove_folder(const struct tdb_io *staged, const char *dir,
                            struct tdb_error *err)
{
    struct tdb_names n;
    int r = tdb_io_names(staged, dir, &n, err);
    bool mark = false;
    for (size_t i = 0; i < n.n && !r; i++) {
        if (!strcmp(n.v[i], WR_MARKER)) {
            mark = true;
            continue;
        }
        char *p = tdb_path_join(dir, n.v[i]);
        r = p ? staged->ops->remove(staged->ctx, p) : TDB_E_NOMEM;
        if (r)
            tdb_err(err, r, "%s: cannot remove: %s", p ? p : n.v[i],
                    tdb_strerror(r));
        free(p);
    }
    tdb_names_free(&n);
    if (!r && mark) {
        char *p = tdb_path_join(dir, WR_MARKER);
        r = p ? staged->ops->remove(staged->ctx, p) : TDB_E_NOMEM;
        if (r)
            tdb_err(err, r, "%s: cannot remove: %s", p ? p : WR_MARKER,
                    tdb_strerror(r));
        free(p);
    }
    /* (a backend whose folders exist only through their files has none
     * left to remove) */
    if (!r && (r = staged->ops->remove(staged->ctx, dir)) == TDB_E_NOENT)
        r = 0;
    if (r)
        tdb_err(err, r, "%s: cannot remove: %s", dir, tdb_strerror(r));
    return r;
}

/* The trash name of staged folder `sdir` committed as fragment `name`: a
 * sibling, WR_TRASH followed by the fragment's name. */
static char *wr_trash_path(const char *sdir, const char *name)
{
    const char *slash = strrchr(sdir, '/');
    size_t plen = slash ? (size_t)(slash - sdir) + 1 : 0;
    char *p = malloc(plen + strlen(WR_TRASH) + strlen(name) + 1);
    if (p)
        sprintf(p, "%.*s%s%s", (int)plen, sdir, WR_TRASH, name);
    return p;
}

int tdb_staged_remove(const struct tdb_io *staged, const char *staged_dir,
                      struct tdb_error *err)
{
    if (!staged->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "%s: read-only", staged_dir);
    const char *base = strrchr(staged_dir, '/');
    base = base ? base + 1 : staged_dir;
    char *name = NULL, *trash = NULL;
    int r = 0;
    if (staged->ops->rename && !tdb_staged_is_trash(base))
        name = wr_marker_name(staged, staged_dir);
    /* the folder's name goes at once: a retry finds the whole folder, its
     * marker naming the committed fragment, or no folder */
    if (name && !(trash = wr_trash_path(staged_dir, name)))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    else if (trash && (r = staged->ops->rename(staged->ctx, staged_dir,
                                               trash)))
        tdb_err(err, r, "%s: cannot rename to %s: %s", staged_dir, trash,
                tdb_strerror(r));
    if (!r)
        r = wr_remove_folder(staged, trash ? trash : staged_dir, err);
    free(name);
    free(trash);
    return r;
}

int tdb_staged_sweep(const struct tdb_io *staged, const char *dir,
                     size_t *removed, struct tdb_error *err)
{
    struct tdb_names n;
    *removed = 0;
    int r = tdb_io_names(staged, dir, &n, err);
    for (size_t i = 0; i < n.n && !r; i++) {
        if (!n.is_dir[i] || !tdb_staged_is_trash(n.v[i]))
            continue;
        char *p = tdb_path_join(dir, n.v[i]);
        r = p ? wr_remove_folder(staged, p, err)
              : tdb_err(err, TDB_E_NOMEM, "out of memory");
        if (!r)
            (*removed)++;
        free(p);
    }
    tdb_names_free(&n);
    return r;
}

/* Syncs the fragment's files, then publishes it: an empty commit file
 * written under a temporary name in the fragment's folder and renamed into
 * __commits by tdb_io_publish (the rename is the commit). */
static int wr_commit(struct wr *w)
{
    int r = 0;
    for (uint32_t i = 0; i < w->nf && !r; i++)
        for (int o = 0; o < 3 && !r; o++) {
            if (!w->f[i].created[o])
                continue;
            char *p = tdb_path_join(w->fragdir, w->f[i].out[o]);
            r = p ? wr_sync(w, p) : tdb_err(w->err, TDB_E_NOMEM, "out of memory");
            free(p);
        }
    if (!r)
        r = wr_sync(w, w->meta_path);
    if (!r)
        r = wr_sync(w, w->fragdir);
    if (r)
        return r;
    if (!(w->tmp_commit = tdb_path_join(w->fragdir, "__commit.tmp")))
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    char wrt[192];
    snprintf(wrt, sizeof wrt, "__commits/%s.wrt", w->name);
    return tdb_io_publish(w->io, w->tmp_commit, wrt, "", 0, w->err);
}

/* Removes what a failed write left (best effort). */
static void wr_cleanup(struct wr *w)
{
    if (!w->dir_made || !w->io->ops->remove)
        return;
    for (uint32_t i = 0; i < w->nf; i++)
        for (int o = 0; o < 3; o++) {
            if (!w->f[i].created[o])
                continue;
            char *p = tdb_path_join(w->fragdir, w->f[i].out[o]);
            if (p)
                w->io->ops->remove(w->io->ctx, p);
            free(p);
        }
    if (w->meta_made)
        w->io->ops->remove(w->io->ctx, w->meta_path);
    w->io->ops->remove(w->io->ctx, w->fragdir);
}

/* The fragment's timestamp: ts (0: now), but after every committed
 * fragment so that the new one wins, and not before its schema. */
static uint64_t wr_timestamp(const struct wr *w, uint64_t ts)
{
    uint64_t t = ts ? ts : tdb_now_ms();
    const struct tdb_arraydir *dir = w->dir;
    uint64_t newest = 0;
    for (size_t i = 0; i < dir->ncands; i++)
        if (dir->cands[i].ts.t2 > newest)
            newest = dir->cands[i].ts.t2;
    for (size_t i = 0; i < dir->nfrags; i++)
        if (dir->frags[i].ts.t2 > newest)
            newest = dir->frags[i].ts.t2;
    if (dir->nfrags + dir->ncands && t <= newest && newest < UINT64_MAX)
        t = newest + 1;
    if (t < w->s->t2)
        t = w->s->t2;
    return t;
}

static int wr_write(struct wr *w, uint64_t ts)
{
    const struct tdb_io_ops *ops = w->io->ops;
    uint8_t rnd[16];
    int r = tdb_random(rnd, sizeof rnd, w->err);
    if (r)
        return r;
    uint64_t t = w->x && w->x->exact_time && ts ? ts : wr_timestamp(w, ts);
    uint64_t t1 = w->x && w->x->t1 && w->x->t1 <= t ? w->x->t1 : t;
    if (w->distinct)
        tdb_tsname_mark(rnd, t1, t);
    tdb_tsname_make(w->name, sizeof w->name, t1, t, rnd, TDB_WRITE_VERSION);
    if (w->x && w->x->named && (r = w->x->named(w->x->named_arg, w->name,
                                                w->err)))
        return r;
    if (!(w->fragdir = tdb_path_join("__fragments", w->name)) ||
        !(w->meta_path = tdb_path_join(w->fragdir, "__fragment_metadata.tdb")))
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    static const char *const dirs[] = {"__fragments", "__commits"};
    for (size_t i = 0; i < 2; i++)
        if ((r = ops->mkdir(w->io->ctx, dirs[i])))
            return tdb_err(w->err, r, "%s: cannot create: %s", dirs[i],
                           tdb_strerror(r));
    if (tdb_io_exists(w->io, w->fragdir))
        return tdb_err(w->err, TDB_E_IO, "%s: already exists", w->fragdir);
    if ((r = wr_mark_staged(w)))
        return r;
    if ((r = ops->mkdir(w->io->ctx, w->fragdir)))
        return tdb_err(w->err, r, "%s: cannot create: %s", w->fragdir,
                       tdb_strerror(r));
    w->dir_made = true;
    if ((r = tdb_fmw_create(&w->fmw, w->s, w->s->name, w->dense, w->err)) ||
        (w->x && !w->dense &&
         (r = tdb_fmw_set_extras(w->fmw, w->x, w->err))))
        return r;
    r = w->dense ? wr_dense_write(w) : wr_sparse_write(w);
    for (uint32_t i = 0; i < w->nf && !r; i++)
        r = tdb_fmw_set_file_sizes(w->fmw, w->f[i].fid, w->f[i].osize[0],
                                   w->f[i].osize[1], w->f[i].osize[2]);
    if (r)
        return r;
    struct tdb_buf meta = {0};
    r = tdb_fmw_serialize(w->fmw, w->key, &meta, w->err);
    if (!r) {
        r = ops->write_at(w->io->ctx, w->meta_path, 0, meta.data, meta.len);
        w->meta_made = true; /* (a failed write may have made it) */
        if (r)
            tdb_err(w->err, r, "%s: cannot write: %s", w->meta_path,
                    tdb_strerror(r));
    }
    tdb_buf_free(&meta);
    return r ? r : wr_commit(w);
}

/* Checks everything before anything is written (the staged folder and
 * its files against the schema) and removes the folder of an earlier
 * attempt that did not commit.  A fragment committed before whose staged
 * files are not yet removed is done: its name in *name. */
static int wr_prepare(struct wr *w, char **name)
{
    const struct tdb_io *io = w->io, *staged = w->staged;
    const char *staged_dir = w->sdir;
    int r;
    if (!tdb_io_isdir(staged, staged_dir))
        return tdb_err(w->err, TDB_E_INVAL, "%s: not a folder", staged_dir);
    if ((*name = wr_already_committed(io, staged, staged_dir)))
        return 0;
    bool has_subarray = false;
    if ((r = wr_fields_init(w)) || (r = wr_match_staged(w, &has_subarray)))
        return r;
    if (w->dense) {
        if ((r = wr_region(w, has_subarray)))
            return r;
        snprintf(w->nfrom, sizeof w->nfrom, "the cells of the region");
        for (uint32_t i = 0; i < w->nf && !r; i++)
            r = wr_check_sizes(w, &w->f[i], w->ncells);
        for (uint32_t i = 0; i < w->nf && !r; i++)
            r = wr_check_content(w, &w->f[i], w->ncells);
    } else {
        r = wr_sparse_prepare(w);
    }
    if (!r)
        r = tdb_fragment_clean(io, staged, staged_dir, NULL, w->err);
    return r;
}

int tdb_fragment_write(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, const uint8_t *key,
                       uint64_t timestamp_ms, char **name,
                       struct tdb_error *err)
{
    return tdb_fragment_write_threads(io, staged, staged_dir, key,
                                      timestamp_ms, 0, name, err);
}

int tdb_fragment_write_threads(const struct tdb_io *io,
                               const struct tdb_io *staged,
                               const char *staged_dir, const uint8_t *key,
                               uint64_t timestamp_ms, unsigned threads,
                               char **name, struct tdb_error *err)
{
    struct tdb_write_req rq = {io, staged, staged_dir, key, timestamp_ms,
                               threads, NULL};
    return tdb_fragment_write_req(&rq, name, err);
}

int tdb_fragment_write_req(const struct tdb_write_req *rq, char **name,
                           struct tdb_error *err)
{
    const struct tdb_io *io = rq->io, *staged = rq->staged;
    const char *staged_dir = rq->staged_dir;
    const uint8_t *key = rq->key;
    unsigned threads = rq->threads;
    *name = NULL;
    const struct tdb_io_ops *ops = io->ops;
    if (!ops->write_at || !ops->mkdir || !ops->rename)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct wr w;
    memset(&w, 0, sizeof w);
    w.io = io;
    w.staged = staged;
    w.sdir = staged_dir;
    w.x = rq->extras;
    w.err = err;
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1 : n > WR_THREADS_MAX ? WR_THREADS_MAX : (unsigned)n;
    }
    w.threads = threads > WR_THREADS_MAX ? WR_THREADS_MAX : threads;
    int r = tdb_arraydir_load(io, 0, UINT64_MAX, &w.dir, err);
    if (r)
        goto done;
    r = tdb_array_schemas_load(io, w.dir, key, &w.schemas, &w.s, err);
    tdb_io_settle(io);
    if (r)
        goto done;
    w.dense = w.s->array_type == TDB_DENSE;
    if (w.dense && w.x && (w.x->timestamps || w.x->delete_meta)) {
        r = tdb_err(err, TDB_E_INVAL, "timestamps and delete metadata are "
                    "stored in sparse fragments only");
        goto done;
    }
    bool encrypted = w.s->encryption == TDB_AES_256_GCM;
    if (encrypted && !key) {
        r = tdb_err(err, TDB_E_NOKEY, "the array is encrypted: a key is needed");
        goto done;
    }
    w.key = encrypted ? key : NULL;
    if ((r = wr_prepare(&w, name)) || *name)
        goto done;
    r = wr_write(&w, rq->timestamp_ms);
    if (r)
        wr_cleanup(&w);
    else if (!(*name = strdup(w.name)))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
done:
    tdb_fmw_free(w.fmw);
    wr_fields_free(&w);
    free(w.perm);
    free(w.hil);
    free(w.fragdir);
    free(w.meta_path);
    free(w.tmp_commit);
    for (size_t i = 0; i < w.schemas.n; i++)
        tdb_schema_free(w.schemas.v[i]);
    free(w.schemas.v);
    tdb_arraydir_free(w.dir);
    return r;
}
