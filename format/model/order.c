/* order.c: the global order of sparse cells (tile order, then cell order,
 * or the Hilbert curve), as FORMAT-NOTES describes TileDB's behaviour. */
#include "model/order.h"

#include <math.h>

/* Tile index of a fixed-size value along dim d: (v - lo) / extent. */
static uint64_t order_tile(const struct tdb_dim *d, const uint8_t *v)
{
    if (!d->has_extent || d->cell_val_num == TDB_VAR_NUM)
        return 0;
    /* in the datatype's own arithmetic, as TileDB computes it */
    if (d->type == TDB_FLOAT32) {
        float x = tdb_f32_load(v), lo = tdb_f32_load(d->lo);
        float e = tdb_f32_load(d->extent);
        return e > 0 ? (uint64_t)((x - lo) / e) : 0;
    }
    if (d->type == TDB_FLOAT64) {
        double x = tdb_f64_load(v), lo = tdb_f64_load(d->lo);
        double e = tdb_f64_load(d->extent);
        return e > 0 ? (uint64_t)((x - lo) / e) : 0;
    }
    uint64_t e = tdb_dim_extent(d);
    return e ? tdb_dim_offset(d, v) / e : 0;
}

static int order_cmp_dims(const struct tdb_schema *s,
                          const struct tdb_coords *a,
                          const struct tdb_coords *b, bool col)
{
    for (uint32_t k = 0; k < s->ndims; k++) {
        uint32_t d = col ? s->ndims - 1 - k : k;
        int c = tdb_value_cmp(s->dims[d].type, a->v[d], a->n[d], b->v[d],
                                b->n[d]);
        if (c)
            return c;
    }
    return 0;
}

int tdb_order_cmp(const struct tdb_schema *s, const struct tdb_coords *a,
                  uint64_t ha, const struct tdb_coords *b, uint64_t hb)
{
    if (s->cell_order == TDB_HILBERT) {
        if (ha != hb)
            return ha < hb ? -1 : 1;
        return order_cmp_dims(s, a, b, false);
    }
    bool tcol = s->tile_order == TDB_COL_MAJOR;
    for (uint32_t k = 0; k < s->ndims; k++) {
        uint32_t d = tcol ? s->ndims - 1 - k : k;
        const struct tdb_dim *dim = &s->dims[d];
        if (!dim->has_extent || dim->cell_val_num == TDB_VAR_NUM)
            continue;
        uint64_t ta = order_tile(dim, a->v[d]), tb = order_tile(dim, b->v[d]);
        if (ta != tb)
            return ta < tb ? -1 : 1;
    }
    return order_cmp_dims(s, a, b, s->cell_order == TDB_COL_MAJOR);
}

bool tdb_coords_equal(const struct tdb_schema *s, const struct tdb_coords *a,
                      const struct tdb_coords *b)
{
    for (uint32_t d = 0; d < s->ndims; d++)
        if (a->n[d] != b->n[d] ||
            (a->n[d] && memcmp(a->v[d], b->v[d], (size_t)a->n[d])))
            return false;
    return true;
}

/* One coordinate mapped to [0, 2^bits) as TileDB maps it for the curve. */
static uint64_t order_hilbert_coord(const struct tdb_dim *d, const uint8_t *v,
                                    uint64_t n, int bits)
{
    if (d->cell_val_num == TDB_VAR_NUM || tdb_dt_is_string(d->type)) {
        uint64_t r = 0;
        for (uint64_t i = 0; i < 8; i++) {
            r <<= 8;
            if (i < n)
                r |= (uint64_t)(int64_t)(int8_t)v[i];
        }
        return r >> (64 - bits);
    }
    uint64_t maxv = ((uint64_t)1 << bits) - 1;
    double x = tdb_value_load(d->type, v).d;
    double lo = tdb_value_load(d->type, d->lo).d;
    double hi = tdb_value_load(d->type, d->hi).d;
    double r = (x - lo) / (hi - lo) * (double)maxv;
    if (!(r >= 0))
        return 0;
    if (r >= 18446744073709551615.0)
        return UINT64_MAX;
    return (uint64_t)r;
}

/* Skilling's transform of axes to the transposed Hilbert index, in place. */
static void order_axes_to_transpose(uint64_t *x, int b, int n)
{
    for (uint64_t q = (uint64_t)1 << (b - 1); q > 1; q >>= 1) {
        uint64_t p = q - 1;
        for (int i = 0; i < n; i++) {
            if (x[i] & q) {
                x[0] ^= p;
            } else {
                uint64_t t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
    }
    for (int i = 1; i < n; i++)
        x[i] ^= x[i - 1];
    uint64_t t = 0;
    for (uint64_t q = (uint64_t)1 << (b - 1); q > 1; q >>= 1)
        if (x[n - 1] & q)
            t ^= q - 1;
    for (int i = 0; i < n; i++)
        x[i] ^= t;
}

uint64_t tdb_hilbert(const struct tdb_schema *s, const struct tdb_coords *c)
{
    int n = (int)s->ndims;
    if (n < 1 || n > 16)
        return 0;
    int bits = 63 / n;
    uint64_t x[TDB_MAX_DIMS];
    for (int d = 0; d < n; d++)
        x[d] = order_hilbert_coord(&s->dims[d], c->v[d], c->n[d], bits);
    order_axes_to_transpose(x, bits, n);
    uint64_t h = 0, bit = 1;
    for (int j = 0; j < bits; j++) {
        for (int d = n - 1; d >= 0; d--, bit <<= 1)
            if (x[d] & ((uint64_t)1 << j))
                h |= bit;
    }
    return h;
}

/* ------------------------------------------------------------ integer keys */

static bool order_key_int_dim(const struct tdb_dim *d)
{
    return d->cell_val_num != TDB_VAR_NUM && tdb_dt_is_integer(d->type);
}

/* Appends one part (digits 0..maxdigit) to the key: whole when the radix
 * fits in what is left of 64 bits, else divided down and last.
 * @return false when no more parts fit. */
static bool order_key_add(struct tdb_order_key *k, const struct tdb_dim *d,
                          uint32_t dim, uint64_t extent, uint64_t maxdigit,
                          uint64_t *prod)
{
    uint64_t room = UINT64_MAX / *prod;     /* digits the key can still take */
    if (room < 2)
        return false;
    struct tdb_order_part *p = &k->part[k->nparts++];
    p->dim = dim;
    p->size = tdb_dt_size(d->type);
    p->is_signed = tdb_dt_is_signed_int(d->type);
    p->lo = tdb_int_load(d->lo, p->size, p->is_signed);
    p->extent = extent;
    p->shift = -1;
    for (int b = 0; b < 64 && extent; b++)
        if (extent == (uint64_t)1 << b)
            p->shift = b;
    p->maxdigit = maxdigit;
    if (maxdigit < room) {
        p->radix = maxdigit + 1;
        p->div = 1;
        *prod *= p->radix;
        return true;
    }
    p->radix = room;
    p->div = maxdigit / room + 1;
    k->exact = false;
    return false;
}

void tdb_order_key_init(struct tdb_order_key *k, const struct tdb_schema *s)
{
    memset(k, 0, sizeof *k);
    if (s->cell_order == TDB_HILBERT) {
        k->hilbert = true;
        return;
    }
    k->exact = true;
    uint64_t prod = 1;
    bool tcol = s->tile_order == TDB_COL_MAJOR;
    bool ccol = s->cell_order == TDB_COL_MAJOR;
    /* tile parts, as tdb_order_cmp: dims without an extent and var-sized
     * ones take no part; an integer extent of 0 gives tile 0 */
    for (uint32_t i = 0; i < s->ndims; i++) {
        uint32_t d = tcol ? s->ndims - 1 - i : i;
        const struct tdb_dim *dim = &s->dims[d];
        if (!dim->has_extent || dim->cell_val_num == TDB_VAR_NUM)
            continue;
        if (!order_key_int_dim(dim)) {
            k->exact = false;   /* float tiles: compare in full */
            return;
        }
        uint64_t e = tdb_dim_extent(dim);
        if (!e)
            continue;
        uint64_t maxoff = tdb_dim_offset(dim, dim->hi);
        if (!order_key_add(k, dim, d, e, maxoff / e, &prod))
            return;
    }
    for (uint32_t i = 0; i < s->ndims; i++) {
        uint32_t d = ccol ? s->ndims - 1 - i : i;
        const struct tdb_dim *dim = &s->dims[d];
        if (!order_key_int_dim(dim)) {
            k->exact = false;
            break;
        }
        uint64_t maxoff = tdb_dim_offset(dim, dim->hi);
        if (!order_key_add(k, dim, d, 0, maxoff, &prod))
            break;
    }
    k->wide = k->nparts > 0;
    for (unsigned i = 0; i < k->nparts; i++) {
        struct tdb_order_part *p = &k->part[i];
        k->wide = k->wide && p->size == 8 && p->div == 1;
    }
    if (k->wide)
        for (unsigned i = 0; i < k->nparts; i++)
            if (!k->part[i].extent)
                k->part[i].shift = 0;
}

bool tdb_order_key_of(const struct tdb_order_key *k, const struct tdb_coords *c,
                      uint64_t hilbert, uint64_t *key)
{
    if (k->hilbert) {
        *key = hilbert;
        return true;
    }
    uint64_t acc = 0;
    if (k->wide) {              /* the common case, without branches on
                                 * the part's kind */
        for (unsigned i = 0; i < k->nparts; i++) {
            const struct tdb_order_part *p = &k->part[i];
            uint64_t off = tdb_le64(c->v[p->dim]) - p->lo;
            uint64_t digit = p->shift >= 0 ? off >> p->shift : off / p->extent;
            if (digit > p->maxdigit)
                return false;
            acc = acc * p->radix + digit;
        }
        *key = acc;
        return true;
    }
    for (unsigned i = 0; i < k->nparts; i++) {
        const struct tdb_order_part *p = &k->part[i];
        uint64_t off =
            tdb_int_load(c->v[p->dim], p->size, p->is_signed) - p->lo;
        /* (divisions only where needed: they cost more than the rest) */
        uint64_t digit = !p->extent       ? off
                         : p->shift >= 0 ? off >> p->shift
                                         : off / p->extent;
        if (digit > p->maxdigit)    /* a tile digit is off / extent even
                                     * outside the domain, as in the order */
            return false;
        acc = acc * p->radix + (p->div == 1 ? digit : digit / p->div);
    }
    *key = acc;
    return true;
}

size_t tdb_order_keys(const struct tdb_order_key *k, const uint8_t *const *base,
                      const unsigned *size, size_t n, uint64_t *out)
{
    uint64_t bad = 0;
    /* a part at a time over all cells: loops without branches that the
     * compiler can unroll; the first part sets out[] */
    for (unsigned j = 0; j < k->nparts; j++) {
        const struct tdb_order_part *p = &k->part[j];
        const uint8_t *v = base[p->dim];
        uint64_t lo = p->lo, radix = j ? p->radix : 0, maxd = p->maxdigit;
        int sh = p->extent ? p->shift : 0;
        if (p->size == 8 && p->div == 1 && sh >= 0) {
            if (!j) {
                for (size_t i = 0; i < n; i++) {
                    uint64_t digit = (tdb_le64(v + 8 * i) - lo) >> sh;
                    bad |= digit > maxd;
                    out[i] = digit;
                }
                continue;
            }
            for (size_t i = 0; i < n; i++) {
                uint64_t digit = (tdb_le64(v + 8 * i) - lo) >> sh;
                bad |= digit > maxd;
                out[i] = out[i] * radix + digit;
            }
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t off = tdb_int_load(v + (size_t)p->size * i, p->size,
                                     p->is_signed) - lo;
            uint64_t digit = !p->extent ? off : sh >= 0 ? off >> sh
                                                         : off / p->extent;
            bad |= digit > maxd;
            out[i] = (j ? out[i] * radix : 0) + (p->div == 1 ? digit : digit / p->div);
        }
    }
    if (!k->nparts)
        memset(out, 0, n * sizeof *out);
    if (!bad)
        return n;
    /* the first cell without a key */
    for (size_t i = 0; i < n; i++) {
        struct tdb_coords c;
        for (unsigned j = 0; j < k->nparts; j++) {
            uint32_t d = k->part[j].dim;
            c.v[d] = base[d] + (size_t)size[d] * i;
            c.n[d] = size[d];
        }
        uint64_t key;
        if (!tdb_order_key_of(k, &c, 0, &key))
            return i;
    }
    return n;
}
