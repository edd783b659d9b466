/* npy.c: numpy's files of the mount contract (docs/LAYOUT.md "numpy's
 * files"): NAME.npy over a field file, var-sized strings padded to the
 * longest, and __slice/ and __domain/ names read as numpy reads an
 * index. */
#include "tree/npy.h"
#include "core/value.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define NPY_SHAPE_MAX (TDB_MAX_DIMS * 24 + 32)
#define NPY_BATCH 65536         /* offsets read at once (512 KiB) */
#define NPY_COPY (1u << 20)     /* padded string bytes made at once */

struct tdb_npy {
    struct tdb_fieldfile *ff, *offs;
    bool own, strings, counted;
    struct tdb_npy *like;
    uint32_t nd;
    uint64_t dims[TDB_MAX_DIMS];
    pthread_mutex_t lock;
    atomic_bool ready;          /* what follows is final (release) */
    uint8_t *head;
    uint64_t head_len;
    uint64_t width;             /* strings: bytes of each value */
    uint64_t ncells;
    char shape[NPY_SHAPE_MAX];  /* "23,17" */
};

static bool npy_bytes_type(unsigned t)
{
    return t == TDB_CHAR || t == TDB_STRING_ASCII || t == TDB_STRING_UTF8;
}

bool tdb_npy_fits(const struct tdb_fieldfile *ff)
{
    if (ff->part == TDB_FILE_VALIDITY)
        return true;
    if (ff->part != TDB_FILE_VALUES)
        return false;
    return !ff->var || npy_bytes_type(ff->type);
}

static const char *npy_field_name(const struct tdb_fieldfile *ff)
{
    return ff->is_dim ? ff->schema->dims[ff->idx].name
                      : ff->schema->attrs[ff->idx].name;
}

int tdb_npy_new(struct tdb_npy **out, const struct tdb_npy_src *src,
                struct tdb_error *err)
{
    struct tdb_npy *n = calloc(1, sizeof *n);
    if (!n)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    n->ff = src->ff;
    n->offs = src->offs;
    n->own = src->own;
    n->like = src->like;
    n->strings = src->ff->var && src->ff->part == TDB_FILE_VALUES;
    n->counted = !src->dims;
    n->nd = src->dims ? src->nd : 0;
    for (uint32_t d = 0; d < n->nd; d++)
        n->dims[d] = src->dims[d];
    pthread_mutex_init(&n->lock, NULL);
    *out = n;
    return 0;
}

void tdb_npy_free(struct tdb_npy *n)
{
    if (!n)
        return;
    if (n->own) {
        struct tdb_cells *c = n->ff->cells;
        tdb_fieldfile_destroy(n->ff);
        free(n->ff);
        tdb_fieldfile_destroy(n->offs);
        free(n->offs);
        tdb_cells_free(c);
    }
    free(n->head);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

/* ------------------------------------------------------------- the header */

/* numpy's dtype of n's values, and the length of the last axis a cell's
 * values make (0: none). */
static void npy_descr(const struct tdb_npy *n, char *d, size_t cap,
                      uint32_t *axis)
{
    const struct tdb_fieldfile *ff = n->ff;
    const char *np = tdb_dt_numpy(ff->type);
    *axis = 0;
    if (ff->part == TDB_FILE_VALIDITY)
        snprintf(d, cap, "|u1");
    else if (n->strings)
        snprintf(d, cap, "|S%" PRIu64, n->width);
    else if (npy_bytes_type(ff->type))
        snprintf(d, cap, "|S%u", ff->cell_val_num);
    else {
        snprintf(d, cap, "%s", np ? np : "|u1");
        *axis = ff->cell_val_num > 1 ? ff->cell_val_num : 0;
    }
}

/* The header of a .npy file (format version 1.0): magic, length, the
 * dictionary, spaces and a newline up to a multiple of 64 bytes. */
static int npy_header(const char *descr, const char *tuple,
                      struct tdb_buf *out)
{
    char dict[NPY_SHAPE_MAX + 128];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, tuple);
    if (n < 0 || (size_t)n >= sizeof dict)
        return TDB_E_NOMEM;
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    uint8_t head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    uint16_t hl = (uint16_t)((size_t)n + pad + 1);
    head[8] = (uint8_t)(hl & 0xff);
    head[9] = (uint8_t)(hl >> 8);
    int r = tdb_buf_append(out, head, 10);
    if (!r)
        r = tdb_buf_append(out, dict, (size_t)n);
    for (size_t i = 0; !r && i < pad; i++)
        r = tdb_buf_put_u8(out, ' ');
    if (!r)
        r = tdb_buf_put_u8(out, '\n');
    return r;
}

/* n's shape as numpy's tuple ("(23, 17)", "(5,)", "()") and as the
 * shape xattr ("23,17"). */
static void npy_tuple(struct tdb_npy *n, uint32_t axis, char *tuple,
                      size_t cap)
{
    uint64_t v[TDB_MAX_DIMS + 1];
    uint32_t k = 0;
    if (n->counted)
        v[k++] = n->ncells;
    for (uint32_t d = 0; d < n->nd; d++)
        v[k++] = n->dims[d];
    if (axis)
        v[k++] = axis;
    size_t o = (size_t)snprintf(tuple, cap, "(");
    size_t s = 0;
    n->shape[0] = 0;
    for (uint32_t i = 0; i < k; i++) {
        o += (size_t)snprintf(tuple + o, cap - o, "%s%" PRIu64, i ? ", " : "",
                              v[i]);
        s += (size_t)snprintf(n->shape + s, sizeof n->shape - s, "%s%" PRIu64,
                              i ? "," : "", v[i]);
    }
    snprintf(tuple + o, cap - o, k == 1 ? ",)" : ")");
}

/* The longest of the first ncells var-sized strings of n. */
static int npy_width(struct tdb_npy *n, uint64_t ncells, uint64_t *width,
                     struct tdb_error *err)
{
    uint64_t total, w = 0, prev = 0;
    int r = tdb_fieldfile_size(n->ff, &total, err);
    uint8_t *o = r ? NULL : malloc(NPY_BATCH * 8);
    if (!r && !o)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (uint64_t c = 0; !r && c < ncells;) {
        uint64_t k = ncells - c < NPY_BATCH ? ncells - c : NPY_BATCH;
        size_t got;
        r = tdb_fieldfile_read(n->offs, c * 8, o, (size_t)k * 8, &got, err);
        for (uint64_t i = 0; !r && i < k; i++, c++) {
            uint64_t v = tdb_le64(o + 8 * i);
            if (c && v < prev)
                r = tdb_err(err, TDB_E_CORRUPT, "%s: offsets go back at "
                            "cell %" PRIu64, npy_field_name(n->ff), c);
            else if (c && v - prev > w)
                w = v - prev;
            prev = v;
        }
    }
    free(o);
    if (!r && ncells && total < prev)
        r = tdb_err(err, TDB_E_CORRUPT, "%s: offsets past the values",
                    npy_field_name(n->ff));
    if (!r && ncells && total - prev > w)
        w = total - prev;
    *width = w ? w : 1;
    return r;
}

/* Counts the cells, finds the strings' width, makes the header. */
static int npy_setup(struct tdb_npy *n, struct tdb_error *err)
{
    uint64_t size;
    const struct tdb_fieldfile *ff = n->ff;
    int r = tdb_fieldfile_size(n->strings ? n->offs : n->ff, &size, err);
    if (r)
        return r;
    uint64_t per = n->strings || ff->part == TDB_FILE_OFFSETS ? 8
                   : ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
    n->ncells = per ? size / per : 0;
    if (n->strings && n->like) {
        uint64_t ignored;
        if (n->like != n && (r = tdb_npy_size(n->like, &ignored, err)) &&
            r != TDB_E_UNSUPPORTED)
            return r;
        n->width = n->like->width;
    } else if (n->strings) {
        r = npy_width(n, n->ncells, &n->width, err);
        if (r)
            return r;
    }
    char descr[32], tuple[NPY_SHAPE_MAX];
    uint32_t axis;
    npy_descr(n, descr, sizeof descr, &axis);
    npy_tuple(n, axis, tuple, sizeof tuple);
    struct tdb_buf h = {0};
    r = npy_header(descr, tuple, &h);
    if (r) {
        tdb_buf_free(&h);
        return tdb_err(err, r, "%s: .npy header too long",
                       npy_field_name(ff));
    }
    n->head_len = h.len;
    n->head = tdb_buf_take(&h, NULL);
    return 0;
}

static int npy_prepare(struct tdb_npy *n, struct tdb_error *err)
{
    if (atomic_load_explicit(&n->ready, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&n->lock);
    int r = 0;
    if (!atomic_load_explicit(&n->ready, memory_order_relaxed)) {
        r = npy_setup(n, err);
        if (!r)
            atomic_store_explicit(&n->ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&n->lock);
    return r;
}

/* ----------------------------------------------------------------- reads */

int tdb_npy_size(struct tdb_npy *n, uint64_t *size, struct tdb_error *err)
{
    int r = npy_prepare(n, err);
    if (r)
        return r;
    if (n->strings && n->width > TDB_NPY_MAX_WIDTH)
        return tdb_err(err, TDB_E_UNSUPPORTED, "%s: its longest value has "
                       "%" PRIu64 " bytes, more than the %d a .npy of "
                       "strings pads to", npy_field_name(n->ff), n->width,
                       TDB_NPY_MAX_WIDTH);
    uint64_t body;
    if (n->strings)
        body = n->ncells * n->width;
    else if ((r = tdb_fieldfile_size(n->ff, &body, err)))
        return r;
    *size = n->head_len + body;
    return 0;
}

/* Bytes [off, off + len) of the padded strings (inside the file). */
static int npy_strings_read(struct tdb_npy *n, uint64_t off, uint8_t *buf,
                            size_t len, struct tdb_error *err)
{
    uint64_t w = n->width, end = off + len, total;
    uint64_t batch = NPY_COPY / w ? NPY_COPY / w : 1;
    int r = tdb_fieldfile_size(n->ff, &total, err);
    uint8_t *ob = r ? NULL : malloc((size_t)(batch + 1) * 8);
    uint8_t *vb = ob ? malloc((size_t)(batch * w)) : NULL;
    if (!r && !vb)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    uint64_t s[2], c = off / w;
    while (!r && c * w < end) {
        uint64_t k = (end - c * w + w - 1) / w;
        k = k < batch ? k : batch;
        bool last = c + k >= n->ncells;
        size_t got;
        r = tdb_fieldfile_read(n->offs, c * 8, ob, (size_t)(k + !last) * 8,
                               &got, err);
        s[0] = r ? 0 : tdb_le64(ob);
        s[1] = r ? 0 : last ? total : tdb_le64(ob + 8 * k);
        if (!r && (s[1] < s[0] || s[1] - s[0] > k * w))
            r = tdb_err(err, TDB_E_CORRUPT, "%s: offsets changed",
                        npy_field_name(n->ff));
        if (!r)
            r = tdb_fieldfile_read(n->ff, s[0], vb, (size_t)(s[1] - s[0]),
                                   &got, err);
        for (uint64_t i = 0; !r && i < k; i++) {
            uint64_t a = tdb_le64(ob + 8 * i) - s[0];
            uint64_t b = (i + 1 < k || !last ? tdb_le64(ob + 8 * (i + 1))
                                             : total) - s[0];
            uint64_t at = (c + i) * w;   /* the cell's bytes in the file */
            uint64_t lo = at > off ? at : off, hi = at + w < end ? at + w : end;
            if (b < a || b - a > w || b > s[1] - s[0]) {
                r = tdb_err(err, TDB_E_CORRUPT, "%s: offsets changed",
                            npy_field_name(n->ff));
                break;
            }
            uint64_t vend = at + (b - a);  /* the value, then zeros */
            if (lo < vend)
                memcpy(buf + (lo - off), vb + a + (lo - at),
                       (size_t)((hi < vend ? hi : vend) - lo));
            if (hi > vend)
                memset(buf + ((lo > vend ? lo : vend) - off), 0,
                       (size_t)(hi - (lo > vend ? lo : vend)));
        }
        c += k;
    }
    free(ob);
    free(vb);
    return r;
}

int tdb_npy_read(struct tdb_npy *n, uint64_t off, void *buf, size_t len,
                 size_t *got, struct tdb_error *err)
{
    uint64_t size;
    *got = 0;
    int r = tdb_npy_size(n, &size, err);
    if (r || off >= size || !len)
        return r;
    if (len > size - off)
        len = (size_t)(size - off);
    size_t h = 0;
    if (off < n->head_len) {
        h = len < n->head_len - off ? len : (size_t)(n->head_len - off);
        memcpy(buf, n->head + off, h);
    }
    uint64_t boff = off + h - n->head_len;
    size_t more = 0;
    if (h < len && n->strings)
        r = npy_strings_read(n, boff, (uint8_t *)buf + h, len - h, err);
    else if (h < len)
        r = tdb_fieldfile_read(n->ff, boff, (uint8_t *)buf + h, len - h,
                               &more, err);
    *got = r ? 0 : len;
    return r;
}

int tdb_npy_seek(struct tdb_npy *n, uint64_t off, bool data, uint64_t *out,
                 struct tdb_error *err)
{
    uint64_t size;
    int r = tdb_npy_size(n, &size, err);
    if (r)
        return r;
    if (off >= size)
        return TDB_E_NOENT;
    if (n->strings || (off < n->head_len && data)) {
        *out = data ? off : size;   /* the header, and strings, are data */
        return 0;
    }
    uint64_t head = n->head_len;
    r = tdb_fieldfile_seek(n->ff, off < head ? 0 : off - head, data, out, err);
    if (!r)
        *out += head;
    return r;
}

struct tdb_fieldfile *tdb_npy_fieldfile(struct tdb_npy *n, uint64_t *head)
{
    bool ready = atomic_load_explicit(&n->ready, memory_order_acquire);
    *head = ready ? n->head_len : 0;
    return ready && !n->strings ? n->ff : NULL;
}

const char *tdb_npy_shape(struct tdb_npy *n)
{
    return atomic_load_explicit(&n->ready, memory_order_acquire) ? n->shape
                                                                : NULL;
}

/* ---------------------------------------------------------------- slices */

/* A number of an index: sign and magnitude. */
struct npy_num {
    bool neg;
    uint64_t mag;
};

/* One item of an index: an integer (is_int, v[0]) or start:stop:step
 * (has[i]: part i given). */
struct npy_item {
    bool is_int;
    bool has[3];
    struct npy_num v[3];
};

static bool npy_parse_num(const char **s, struct npy_num *v)
{
    const char *p = *s;
    v->neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return false;
    v->mag = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned dg = (unsigned)(*p - '0');
        /* saturates: beyond 2^64 only the sign matters */
        v->mag = v->mag > (UINT64_MAX - dg) / 10 ? UINT64_MAX
                                                : v->mag * 10 + dg;
    }
    *s = p;
    return true;
}

/* One item at *sp: an integer, or up to three numbers with ':' between
 * (each may be left out). */
static bool npy_parse_item(const char **sp, struct npy_item *x)
{
    const char *s = *sp;
    int part = 0;
    memset(x, 0, sizeof *x);
    for (;;) {
        if (*s != ':' && *s != ',' && *s != ']') {
            if (!npy_parse_num(&s, &x->v[part]))
                return false;
            x->has[part] = true;
        }
        if (*s != ':')
            break;
        if (++part == 3)
            return false;
        s++;
    }
    x->is_int = part == 0;
    *sp = s;
    return !x->is_int || x->has[0];     /* not an empty item */
}

/* Parses "[item,item,...].npy" into it[0..*n) (at most cap items).
 * @return false when malformed. */
static bool npy_parse_index(const char *s, struct npy_item *it, uint32_t cap,
                            uint32_t *n)
{
    if (*s++ != '[')
        return false;
    *n = 0;
    for (;;) {
        if (*n == cap || !npy_parse_item(&s, &it[(*n)++]))
            return false;
        if (*s == ']')
            return !strcmp(s + 1, ".npy");
        if (*s++ != ',')
            return false;
    }
}

/* v as an int64, saturated. */
static int64_t npy_i64(struct npy_num v)
{
    if (!v.neg)
        return v.mag > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.mag;
    return v.mag > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v.mag;
}

static int64_t npy_clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Where coordinate x lies along dimension dim of a view whose first cell
 * is at offset vlo, len cells long: its index, or -1 below the view, len
 * above it. */
static int64_t npy_coord(const struct tdb_dim *dim, uint64_t vlo, uint64_t len,
                         struct npy_num x)
{
    struct tdb_num dlo = tdb_value_load(dim->type, dim->lo);
    struct tdb_num dhi = tdb_value_load(dim->type, dim->hi);
    uint64_t lo = dlo.u, hi = dhi.u, off;
    if (dlo.cls == TDB_VC_SIGNED) {
        int64_t slo = dlo.i, shi = dhi.i;
        int64_t v = npy_i64(x);
        if ((x.neg && x.mag > (uint64_t)INT64_MAX + 1) || v < slo)
            return -1;
        if ((!x.neg && x.mag > (uint64_t)INT64_MAX) || v > shi)
            return (int64_t)len;
        off = (uint64_t)v - (uint64_t)slo;
    } else {
        if ((x.neg && x.mag) || x.mag < lo)
            return -1;
        if (x.mag > hi)
            return (int64_t)len;
        off = x.mag - lo;
    }
    if (off < vlo)
        return -1;
    return off - vlo >= len ? (int64_t)len : (int64_t)(off - vlo);
}

/* Where an item puts one axis. */
struct npy_axis {
    uint64_t start;
    int64_t step;
    uint64_t count;
};

/* Item x along an axis of ulen cells (dim not NULL: x holds coordinates
 * of dim, the view's first cell at offset vlo) into *ax. */
static int npy_item_pick(const struct npy_item *x, uint64_t ulen,
                         const struct tdb_dim *dim, uint64_t vlo,
                         struct npy_axis *ax, struct tdb_error *err)
{
    int64_t len = (int64_t)ulen, v[3];
    for (int i = 0; i < 3; i++) {
        if (!x->has[i] || i == 2)
            v[i] = npy_i64(x->v[i]);
        else if (dim)
            v[i] = npy_coord(dim, vlo, ulen, x->v[i]);
        else
            v[i] = npy_i64(x->v[i]) < 0 ? npy_i64(x->v[i]) + len
                                        : npy_i64(x->v[i]);
    }
    if (x->is_int) {
        if (v[0] < 0 || v[0] >= len)
            return tdb_err(err, TDB_E_NOENT, "%s %s%" PRIu64 " is outside "
                           "the view's %" PRIu64 " cells along it",
                           dim ? "coordinate" : "index",
                           x->v[0].neg ? "-" : "", x->v[0].mag, ulen);
        *ax = (struct npy_axis){(uint64_t)v[0], 1, 1};
        return 0;
    }
    int64_t st = x->has[2] ? npy_clamp(v[2], -(INT64_C(1) << 62),
                                       INT64_C(1) << 62) : 1;
    if (!st)
        return tdb_err(err, TDB_E_NOENT, "a step of 0");
    int64_t a, b;
    uint64_t count;
    if (st > 0) {
        a = x->has[0] ? npy_clamp(v[0], 0, len) : 0;
        b = x->has[1] ? npy_clamp(v[1], 0, len) : len;
        count = b > a ? (uint64_t)((b - a + st - 1) / st) : 0;
    } else {
        a = x->has[0] ? npy_clamp(v[0], -1, len - 1) : len - 1;
        b = x->has[1] ? npy_clamp(v[1], -1, len - 1) : -1;
        count = a > b ? (uint64_t)((a - b - st - 1) / -st) : 0;
    }
    *ax = count ? (struct npy_axis){(uint64_t)a, st, count}
                : (struct npy_axis){0, 1, 0};
    return 0;
}

bool tdb_npy_split(const char *name, size_t *field_len)
{
    const char *br = strrchr(name, '[');
    size_t n = strlen(name);
    if (!br || br == name || n < 5 || strcmp(name + n - 4, ".npy") ||
        name[n - 5] != ']')
        return false;
    *field_len = (size_t)(br - name);
    return true;
}

/* A dense view being indexed: its region, and (coords) the schema whose
 * dimensions' coordinates the index holds; and what the index gives: the
 * cells picked and the shape of the result (integer items drop their
 * axis). */
struct npy_index {
    const struct tdb_schema *s;
    bool coords;
    uint32_t nd;
    uint64_t vlo[TDB_MAX_DIMS], vshape[TDB_MAX_DIMS];
    struct tdb_dense_pick pick;
    uint32_t ond;
    uint64_t odims[TDB_MAX_DIMS];
};

static int npy_pick(const char *text, struct npy_index *ix,
                    struct tdb_error *err)
{
    struct npy_item it[TDB_MAX_DIMS];
    uint32_t n;
    if (!npy_parse_index(text, it, ix->nd, &n))
        return tdb_err(err, TDB_E_NOENT, "not NAME[i,j,...].npy with at most "
                       "%u items, each an integer or start:stop[:step]",
                       ix->nd);
    memset(&ix->pick, 0, sizeof ix->pick);
    ix->ond = 0;
    for (uint32_t d = 0; d < ix->nd; d++) {
        static const struct npy_item whole = {false, {false, false, false},
                                              {{0}}};
        const struct npy_item *x = d < n ? &it[d] : &whole;
        struct npy_axis ax = {0, 1, 0};
        int r = npy_item_pick(x, ix->vshape[d],
                              ix->coords ? &ix->s->dims[d] : NULL,
                              ix->vlo[d], &ax, err);
        if (r) {
            char m[TDB_ERROR_MSG_MAX];
            snprintf(m, sizeof m, "%s", err ? err->msg : "");
            return tdb_err(err, r, "dimension %u: %s", d, m);
        }
        ix->pick.start[d] = ax.start;
        ix->pick.step[d] = ax.step;
        ix->pick.count[d] = ax.count;
        if (!x->is_int)
            ix->odims[ix->ond++] = ax.count;
    }
    return 0;
}

int tdb_npy_slice(struct tdb_npy **out, struct tdb_npy *base,
                  const char *index, bool coords, struct tdb_error *err)
{
    const struct tdb_fieldfile *ff = base->ff;
    struct npy_index ix;
    ix.s = ff->schema;
    ix.coords = coords;
    if (!tdb_cells_dense_region(ff->cells, &ix.nd, ix.vlo, ix.vshape))
        return tdb_err(err, TDB_E_NOENT, "%s: not a field of a dense view",
                       npy_field_name(ff));
    int r = npy_pick(index, &ix, err);
    struct tdb_cells *cells = NULL;
    struct tdb_fieldfile *nff = NULL, *noffs = NULL;
    if (!r)
        r = tdb_cells_dense_pick(&cells, ff->cells, &ix.pick, err);
    if (!r && (!(nff = calloc(1, sizeof *nff)) ||
               (base->offs && !(noffs = calloc(1, sizeof *noffs)))))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (r) {
        free(nff);
        free(noffs);
        tdb_cells_free(cells);
        return r;
    }
    const struct tdb_field_ref fd = {ff->schema, ff->is_dim, ff->idx};
    tdb_fieldfile_init(nff, cells, ff->arr, &fd, ff->part);
    if (noffs)
        tdb_fieldfile_init(noffs, cells, ff->arr, &fd, TDB_FILE_OFFSETS);
    struct tdb_npy_src src = {nff, noffs, ix.ond, ix.odims, true, base};
    r = tdb_npy_new(out, &src, err);
    if (r) {
        tdb_fieldfile_destroy(nff);
        tdb_fieldfile_destroy(noffs);
        free(nff);
        free(noffs);
        tdb_cells_free(cells);
    }
    return r;
}
