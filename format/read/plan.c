/* plan.c: a sparse merge's plan, its encoding and the walks over it
 * (plan.h; docs/LAYOUT.md "Sparse arrays: the cells"). */
#include "read/plan.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ building */

static int plan_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return TDB_E_NOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static void plan_put_varint(uint8_t *b, size_t *n, uint64_t v)
{
    while (v >= 0x80) {
        b[(*n)++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[(*n)++] = (uint8_t)v;
}

/* Reads a varint of the plan (written by plan_put_varint: never corrupt). */
static uint64_t plan_get_varint(const uint8_t *b, size_t *n)
{
    uint64_t v = 0;
    unsigned sh = 0;
    uint8_t c;
    do {
        c = b[(*n)++];
        v |= (uint64_t)(c & 0x7f) << sh;
        sh += 7;
    } while (c & 0x80);
    return v;
}

int tdb_plan_init(struct tdb_plan *pl, size_t n, bool patchable)
{
    memset(pl, 0, sizeof *pl);
    pl->nfrags = n;
    while (((size_t)1 << pl->fbits) < n)
        pl->fbits++;
    pl->maxcount = (uint64_t)1 << (62 - pl->fbits);
    pl->ckpt = TDB_PLAN_CKPT(n);
    size_t nn = n ? n : 1;
    pl->pos = calloc(nn, sizeof *pl->pos);
    if (!pl->pos)
        return TDB_E_NOMEM;
    if (patchable) {
        pl->patchable = true;
        pl->patch_byte = malloc(nn * sizeof *pl->patch_byte);
        pl->patch_ck = calloc(nn, sizeof *pl->patch_ck);
        pl->patch_cell = calloc(nn, sizeof *pl->patch_cell);
        if (!pl->patch_byte || !pl->patch_ck || !pl->patch_cell)
            return TDB_E_NOMEM;
        for (size_t i = 0; i < n; i++)
            pl->patch_byte[i] = SIZE_MAX;
    }
    return 0;
}

void tdb_plan_free(struct tdb_plan *pl)
{
    for (size_t i = 0; i < pl->nseg; i++)
        free(pl->seg[i].bytes);
    free(pl->seg);
    pl->seg = NULL;
    pl->nseg = 0;
    free(pl->bytes);
    free(pl->ck);
    free(pl->pos);
    free(pl->patch_byte);
    free(pl->patch_ck);
    free(pl->patch_cell);
    pl->bytes = NULL;
    pl->ck = NULL;
    pl->pos = NULL;
    pl->patch_byte = pl->patch_ck = NULL;
    pl->patch_cell = NULL;
    pl->nbytes = pl->capbytes = pl->nck = pl->capck = 0;
    pl->planned = pl->ckleft = pl->merged = 0;
    pl->ropen = false;
    if (pl->open) {
        for (int i = 0; i < TDB_PLAN_HINTS; i++) {
            free(pl->hint[i].pos);
            pl->hint[i].pos = NULL;
        }
        pthread_mutex_destroy(&pl->hint_lock);
        pl->open = false;
    }
}

/* The bytes a patchable skip takes: a varint padded with 0x80 bytes, room
 * for any 64-bit value. */
#define PLAN_PATCH 10

static void plan_put_padded(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < PLAN_PATCH - 1; i++) {
        b[i] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[PLAN_PATCH - 1] = (uint8_t)v;
}

static uint64_t plan_zigzag(uint64_t d)   /* d: a two's complement difference */
{
    return d << 1 ^ (uint64_t)-(int64_t)(d >> 63);
}

/* Appends cells fcell..fcell+count-1 of fragment `slot` as entries. */
int tdb_plan_put(struct tdb_plan *pl, size_t slot, uint64_t fcell,
                       uint64_t count)
{
    size_t n = pl->nfrags;
    while (count) {
        uint64_t c = count < pl->maxcount ? count : pl->maxcount;
        if (!pl->ckleft) {         /* every ckpt-th entry */
            pl->ckleft = pl->ckpt;
            if (plan_grow((void **)&pl->ck, &pl->capck, (pl->nck + 1) * (2 + n),
                        sizeof *pl->ck))
                return TDB_E_NOMEM;
            uint64_t *k = pl->ck + pl->nck * (2 + n);
            k[0] = pl->planned;
            k[1] = pl->nbytes;
            memcpy(k + 2, pl->pos, n * sizeof *pl->pos);
            pl->nck++;
        }
        if (plan_grow((void **)&pl->bytes, &pl->capbytes,
                    pl->nbytes + 10 + PLAN_PATCH, 1))
            return TDB_E_NOMEM;
        uint64_t skip = plan_zigzag(fcell - pl->pos[slot]);
        bool patch = pl->patchable && pl->patch_byte[slot] == SIZE_MAX;
        uint64_t h = (c - 1) << (pl->fbits + 1) | (uint64_t)slot << 1 |
                     (skip != 0 || patch);
        plan_put_varint(pl->bytes, &pl->nbytes, h);
        if (patch) {
            pl->patch_byte[slot] = pl->nbytes;
            pl->patch_ck[slot] = pl->nck;
            pl->patch_cell[slot] = fcell;
            plan_put_padded(pl->bytes + pl->nbytes, skip);
            pl->nbytes += PLAN_PATCH;
        } else if (skip) {
            plan_put_varint(pl->bytes, &pl->nbytes, skip);
        }
        pl->pos[slot] = fcell + c;
        pl->planned += c;
        pl->ckleft--;
        fcell += c;
        count -= c;
    }
    return 0;
}

int tdb_plan_emit_replace(struct tdb_plan *pl, size_t slot, uint64_t cell)
{
    if (pl->rcount == 1) {
        pl->rcell = cell;
        return 0;
    }
    pl->rcount--;
    pl->merged--;
    return tdb_plan_emit(pl, slot, cell);
}

int tdb_plan_end(struct tdb_plan *pl)
{
    if (pl->ropen) {
        int r = tdb_plan_put(pl, pl->rslot, pl->rcell, pl->rcount);
        if (r)
            return r;
        pl->ropen = false;
    }
    /* give back what the doubling left over */
    if (pl->nbytes && pl->nbytes < pl->capbytes) {
        uint8_t *b = realloc(pl->bytes, pl->nbytes);
        if (b) {
            pl->bytes = b;
            pl->capbytes = pl->nbytes;
        }
    }
    size_t w = pl->nck * (2 + pl->nfrags);
    if (w && w < pl->capck) {
        uint64_t *k = realloc(pl->ck, w * sizeof *k);
        if (k) {
            pl->ck = k;
            pl->capck = w;
        }
    }
    return 0;
}

/* The plan built: its bytes become its one segment. */
int tdb_plan_seal(struct tdb_plan *pl)
{
    if (!pl->nbytes)
        return 0;
    pl->seg = malloc(sizeof *pl->seg);
    if (!pl->seg)
        return TDB_E_NOMEM;
    pl->seg[0] = (struct tdb_plan_seg){pl->bytes, pl->nbytes, 0};
    pl->nseg = 1;
    pl->bytes = NULL;
    pl->capbytes = 0;
    return 0;
}


int tdb_plan_join(struct tdb_plan *const *pls, size_t nr)
{
    struct tdb_plan *out = pls[0];
    size_t n = out->nfrags, nck = 0, stride = 2 + n;
    for (size_t p = 0; p < nr; p++)
        nck += pls[p]->nck;
    out->seg = calloc(nr, sizeof *out->seg);
    if (!out->seg)
        return TDB_E_NOMEM;
    if (nck * stride > out->capck) {
        uint64_t *k = realloc(out->ck, nck * stride * sizeof *k);
        if (!k)
            return TDB_E_NOMEM;
        out->ck = k;
        out->capck = nck * stride;
    }
    uint64_t *R = out->pos;     /* where a reader stands after the ranges
                                 * so far */
    for (size_t p = 0; p < nr; p++) {
        struct tdb_plan *pl = pls[p];
        if (p) {
            for (size_t f = 0; f < n; f++)
                if (pl->patch_byte[f] != SIZE_MAX)
                    plan_put_padded(pl->bytes + pl->patch_byte[f],
                                    plan_zigzag(pl->patch_cell[f] - R[f]));
            for (size_t j = 0; j < pl->nck; j++) {
                uint64_t *k = out->ck + out->nck * stride;
                memcpy(k, pl->ck + j * stride, stride * sizeof *k);
                k[0] += out->planned;
                k[1] += out->nbytes;
                for (size_t f = 0; f < n; f++)
                    if (pl->patch_byte[f] == SIZE_MAX || j < pl->patch_ck[f])
                        k[2 + f] = R[f];
                out->nck++;
            }
        }
        if (pl->nbytes) {
            out->seg[out->nseg++] = (struct tdb_plan_seg){
                pl->bytes, pl->nbytes, p ? out->nbytes : 0};
            pl->bytes = NULL;
            pl->capbytes = 0;
        }
        if (p) {
            out->nbytes += pl->nbytes;
            out->planned += pl->planned;
            out->merged += pl->merged;
            for (size_t f = 0; f < n; f++)
                if (pl->patch_byte[f] != SIZE_MAX)
                    R[f] = pl->pos[f];
        }
    }
    return 0;
}

/* ------------------------------------------------------------- reading */

int tdb_plan_open(struct tdb_plan *pl, struct tdb_frag *const *frags)
{
    size_t nn = pl->nfrags ? pl->nfrags : 1;
    pl->frags = frags;
    for (int i = 0; i < TDB_PLAN_HINTS; i++)
        if (!(pl->hint[i].pos = calloc(nn, sizeof *pl->hint[i].pos))) {
            for (int j = 0; j < i; j++) {
                free(pl->hint[j].pos);
                pl->hint[j].pos = NULL;
            }
            return TDB_E_NOMEM;
        }
    pthread_mutex_init(&pl->hint_lock, NULL);
    pl->open = true;
    return 0;
}

void tdb_plan_decode(const struct tdb_plan_pos *pp, size_t *slot,
                     uint64_t *fcell, uint64_t *count, const uint8_t **np)
{
    const uint8_t *b = pp->p;
    size_t nb = 0;
    uint64_t h = b[0] < 0x80 ? b[nb++] : plan_get_varint(b, &nb);
    size_t s = (size_t)(h >> 1 & pp->smask);
    uint64_t fc = pp->next[s];
    if (h & 1) {
        uint64_t z = plan_get_varint(b, &nb);
        fc += z >> 1 ^ (uint64_t)-(int64_t)(z & 1);
    }
    *slot = s;
    *fcell = fc;
    *count = (h >> pp->shift) + 1;
    *np = b + nb;
}

/* The first checkpoint of the plan after view cell `cell` (nck: none). */
static size_t plan_ck_after(const struct tdb_plan *pl, uint64_t cell)
{
    size_t stride = 2 + pl->nfrags, lo = 0, hi = pl->nck;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pl->ck[mid * stride] <= cell)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* pp at byte `byte` of the plan's stream: in the last segment starting
 * at or before it (so a segment's end is the next one's start). */
static void plan_seek_byte(const struct tdb_plan *pl, struct tdb_plan_pos *pp,
                         uint64_t byte)
{
    size_t s0 = 0, s1 = pl->nseg;
    while (s1 - s0 > 1) {
        size_t mid = (s0 + s1) / 2;
        if (pl->seg[mid].base <= byte)
            s0 = mid;
        else
            s1 = mid;
    }
    const struct tdb_plan_seg *sg = &pl->seg[s0];
    pp->seg = s0;
    pp->p = sg->bytes + (byte - sg->base);
    pp->end = sg->bytes + sg->n;
}

static uint64_t plan_pos_byte(const struct tdb_plan *pl,
                            const struct tdb_plan_pos *pp)
{
    const struct tdb_plan_seg *sg = &pl->seg[pp->seg];
    return sg->base + (uint64_t)(pp->p - sg->bytes);
}

size_t tdb_plan_ckpt(const struct tdb_plan *pl, const struct tdb_plan_pos *pp,
                     uint64_t limit, uint64_t *cell, const uint64_t **next,
                     uint64_t *entries)
{
    size_t stride = 2 + pl->nfrags;
    if (!pl->nseg)
        return 0;
    size_t lo = plan_ck_after(pl, pp->cell);
    if (lo == pl->nck || pl->ck[lo * stride] > limit)
        return 0;
    const uint64_t *k = pl->ck + lo * stride;
    *cell = k[0];
    *next = k + 2;
    *entries = k[1] - plan_pos_byte(pl, pp);  /* an entry takes a byte or more */
    return lo + 1;
}

void tdb_plan_goto(const struct tdb_plan *pl, struct tdb_plan_pos *pp,
                   size_t ck)
{
    const uint64_t *k = pl->ck + (ck - 1) * (2 + pl->nfrags);
    pp->cell = k[0];
    memcpy(pp->next, k + 2, pl->nfrags * sizeof *pp->next);
    plan_seek_byte(pl, pp, k[1]);
}

bool tdb_plan_more(const struct tdb_plan *pl, struct tdb_plan_pos *pp)
{
    if (pp->seg + 1 >= pl->nseg)
        return false;
    const struct tdb_plan_seg *sg = &pl->seg[++pp->seg];
    pp->p = sg->bytes;
    pp->end = sg->bytes + sg->n;
    return true;
}

int tdb_plan_seek(struct tdb_plan *pl, uint64_t first,
                  struct tdb_plan_pos *pp, struct tdb_error *err)
{
    size_t nf = pl->nfrags, stride = 2 + nf;
    pp->frags = pl->frags;
    pp->nfrags = nf;
    pp->shift = pl->fbits + 1;
    pp->smask = ((uint64_t)1 << pl->fbits) - 1;
    pp->hint = -1;
    pp->cell = 0;
    pp->seg = 0;
    pp->p = pp->end = NULL;
    pp->next = nf <= TDB_PLAN_BUF ? pp->buf : malloc(nf * sizeof *pp->next);
    if (!pp->next)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!pl->nck)
        return 0;
    /* the last checkpoint at or before `first` (the first is at cell 0) */
    size_t lo = plan_ck_after(pl, first);
    const uint64_t *k = pl->ck + (lo ? lo - 1 : 0) * stride;
    uint64_t cell = k[0];
    size_t byte = (size_t)k[1];
    /* or a resume point between it and `first` */
    int hs = -1;
    pthread_mutex_lock(&pl->hint_lock);
    for (int i = 0; i < TDB_PLAN_HINTS; i++) {
        struct tdb_plan_hint *h = &pl->hint[i];
        if (h->valid && h->cell <= first && h->byte >= byte &&
            (hs < 0 || h->byte > pl->hint[hs].byte))
            hs = i;
    }
    if (hs >= 0) {
        cell = pl->hint[hs].cell;
        byte = pl->hint[hs].byte;
        memcpy(pp->next, pl->hint[hs].pos, nf * sizeof *pp->next);
    } else {
        memcpy(pp->next, k + 2, nf * sizeof *pp->next);
    }
    pthread_mutex_unlock(&pl->hint_lock);
    pp->hint = hs;
    pp->cell = cell;
    plan_seek_byte(pl, pp, byte);
    /* on to the entry holding `first` */
    while (pp->p < pp->end || tdb_plan_more(pl, pp)) {
        size_t slot;
        uint64_t fcell, count;
        const uint8_t *np;
        tdb_plan_decode(pp, &slot, &fcell, &count, &np);
        if (pp->cell + count > first)
            break;
        pp->next[slot] = fcell + count;
        pp->cell += count;
        pp->p = np;
    }
    return 0;
}

void tdb_plan_done(struct tdb_plan *pl, struct tdb_plan_pos *pp)
{
    if (pl->nck) {
        /* remember where this read stopped: the next one likely starts
         * there */
        pthread_mutex_lock(&pl->hint_lock);
        int slot = pp->hint >= 0 ? pp->hint
                                 : (int)(pl->hint_next++ % TDB_PLAN_HINTS);
        struct tdb_plan_hint *hh = &pl->hint[slot];
        hh->valid = true;
        hh->cell = pp->cell;
        hh->byte = (size_t)plan_pos_byte(pl, pp);
        memcpy(hh->pos, pp->next, pl->nfrags * sizeof *pp->next);
        pthread_mutex_unlock(&pl->hint_lock);
    }
    if (pp->next != pp->buf)
        free(pp->next);
    pp->next = NULL;
}

