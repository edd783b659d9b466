/* test_plan.c: the plan of a sparse merge (format/read/plan.c): plans of
 * random runs of many fragments, walked entry by entry (the short form and
 * the general decoding agree), from random cells and past the end, and
 * checkpoint by checkpoint; the plans of consecutive ranges joined into
 * one. */
#include "read/plan.h"
#include "../support.h"
#include "../rng.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- plans */

/* A plan's cells as built: view cell i is cell fcell[i] of fragment
 * slot[i]. */
struct plan_ref {
    size_t n, cap;
    size_t *slot;
    uint64_t *fcell;
};

static void plan_ref_add(struct plan_ref *r, size_t slot, uint64_t fcell)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->slot = realloc(r->slot, r->cap * sizeof *r->slot);
        r->fcell = realloc(r->fcell, r->cap * sizeof *r->fcell);
        CHECK(r->slot && r->fcell);
    }
    r->slot[r->n] = slot;
    r->fcell[r->n++] = fcell;
}

/* Emits about `cells` cells of nf fragments into pl (and r) in runs of
 * random length, each fragment going on from next[] with random skips,
 * some of them back. */
static void plan_fill(struct tdb_plan *pl, struct plan_ref *r, size_t nf,
                      uint64_t *next, uint64_t cells)
{
    while (r->n < cells) {
        size_t slot = (size_t)rnd_below(nf);
        uint64_t count = rnd_below(4) ? 1 + rnd_below(3) : 1 + rnd_below(300);
        if (!rnd_below(5))
            next[slot] += rnd_below(1000);
        else if (!rnd_below(20) && next[slot] > 50)
            next[slot] -= 50;
        /* a run of the fragment just before would join the last one */
        if (r->n && r->slot[r->n - 1] == slot &&
            r->fcell[r->n - 1] + 1 == next[slot])
            next[slot]++;
        for (uint64_t i = 0; i < count; i++) {
            CHECK_EQ_INT(tdb_plan_emit(pl, slot, next[slot]), 0);
            plan_ref_add(r, slot, next[slot]++);
        }
    }
}

/* Walks the whole open plan from view cell `first` on, entry by entry
 * (tdb_plan_short where it applies, tdb_plan_decode always), against r. */
static void plan_walk(struct tdb_plan *pl, const struct plan_ref *r,
                      uint64_t first)
{
    struct tdb_plan_pos pp;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_plan_seek(pl, first, &pp, &err), 0);
    uint64_t cell = first;
    while (pp.p < pp.end || tdb_plan_more(pl, &pp)) {
        size_t slot, sslot;
        uint64_t fcell, count, scount;
        const uint8_t *np;
        tdb_plan_decode(&pp, &slot, &fcell, &count, &np);
        if (tdb_plan_short(&pp, *pp.p, &sslot, &scount)) {
            CHECK(sslot == slot && scount == count && np == pp.p + 1);
            CHECK(fcell == pp.next[slot]);
        }
        CHECK(pp.cell <= cell && cell < pp.cell + count);
        CHECK(pp.cell + count <= r->n);
        for (uint64_t i = cell - pp.cell; i < count && cell < r->n; i++) {
            if (r->slot[cell] != slot || r->fcell[cell] != fcell + i) {
                CHECK(0);
                tdb_plan_done(pl, &pp);
                return;
            }
            cell++;
        }
        pp.next[slot] = fcell + count;
        pp.cell += count;
        pp.p = np;
    }
    CHECK(cell == r->n || (first >= r->n && cell == first));
    tdb_plan_done(pl, &pp);
}

/* Steps over the open plan from checkpoint to checkpoint: at each the
 * fragments' next cells are those the cells before it leave. */
static void plan_steps(struct tdb_plan *pl, const struct plan_ref *r,
                       size_t nf)
{
    struct tdb_plan_pos pp;
    struct tdb_error err = {0};
    uint64_t *next = calloc(nf, sizeof *next), done = 0;
    CHECK(next != NULL);
    CHECK_EQ_INT(tdb_plan_seek(pl, 0, &pp, &err), 0);
    size_t steps = 0, ck;
    uint64_t cb, entries;
    const uint64_t *nb;
    while ((ck = tdb_plan_ckpt(pl, &pp, r->n, &cb, &nb, &entries))) {
        CHECK(cb > pp.cell && cb <= r->n && entries > 0);
        for (; done < cb; done++)
            next[r->slot[done]] = r->fcell[done] + 1;
        for (size_t f = 0; f < nf; f++)
            CHECK(nb[f] == next[f]);
        tdb_plan_goto(pl, &pp, ck);
        CHECK(pp.cell == cb);
        steps++;
    }
    CHECK(steps + 1 >= pl->nck && steps > 0);
    tdb_plan_done(pl, &pp);
    free(next);
}

static void plan_check(struct tdb_plan *pl, const struct plan_ref *r,
                       size_t nf)
{
    plan_walk(pl, r, 0);
    for (int i = 0; i < 50; i++)
        plan_walk(pl, r, rnd_below(r->n));
    plan_walk(pl, r, r->n - 1);
    plan_walk(pl, r, r->n);     /* the end: no entry */
    plan_walk(pl, r, r->n + 5);
    plan_steps(pl, r, nf);
}

/* Entries encoded and decoded again, for few fragments (one-byte
 * entries) and many (longer heads), from any cell and by checkpoints. */
static void test_plan_round_trip(void)
{
    static const size_t nfs[] = {1, 3, 40};
    for (size_t t = 0; t < sizeof nfs / sizeof *nfs; t++) {
        size_t nf = nfs[t];
        struct tdb_frag *fr = calloc(nf, sizeof *fr);
        struct tdb_frag **frags = calloc(nf, sizeof *frags);
        uint64_t *next = calloc(nf, sizeof *next);
        CHECK(fr && frags && next);
        for (size_t i = 0; i < nf; i++)
            frags[i] = &fr[i];
        rng_state = 0x9e3779b97f4a7c15ull + t;
        struct tdb_plan pl;
        struct plan_ref r = {0};
        CHECK_EQ_INT(tdb_plan_init(&pl, nf, false), 0);
        plan_fill(&pl, &r, nf, next, 60000);
        CHECK_EQ_INT(tdb_plan_end(&pl), 0);
        CHECK_EQ_INT(tdb_plan_seal(&pl), 0);
        CHECK_EQ_INT(tdb_plan_open(&pl, frags), 0);
        CHECK(pl.merged == r.n && pl.planned == r.n && pl.nck > 1);
        plan_check(&pl, &r, nf);
        tdb_plan_free(&pl);
        free(r.slot);
        free(r.fcell);
        free(next);
        free(frags);
        free(fr);
    }
}

/* Plans of consecutive ranges joined: one stream, as if built whole (each
 * range's first entry of a fragment goes on from the ranges before). */
static void test_plan_join(void)
{
    enum { NF = 5, NR = 3 };
    struct tdb_frag fr[NF], *frags[NF];
    memset(fr, 0, sizeof fr);
    for (size_t i = 0; i < NF; i++)
        frags[i] = &fr[i];
    rng_state = 12345;
    struct tdb_plan pl[NR], *pls[NR];
    struct plan_ref r = {0};
    uint64_t next[NF] = {0};
    for (size_t p = 0; p < NR; p++) {
        pls[p] = &pl[p];
        CHECK_EQ_INT(tdb_plan_init(&pl[p], NF, p > 0), 0);
        /* a range after the first starts each fragment further on */
        for (size_t f = 0; p && f < NF; f++)
            next[f] += rnd_below(100);
        plan_fill(&pl[p], &r, NF, next, (p + 1) * 5000);
        CHECK_EQ_INT(tdb_plan_end(&pl[p]), 0);
    }
    CHECK_EQ_INT(tdb_plan_join(pls, NR), 0);
    for (size_t p = 1; p < NR; p++)
        tdb_plan_free(&pl[p]);
    CHECK_EQ_INT(tdb_plan_open(&pl[0], frags), 0);
    CHECK(pl[0].merged == r.n && pl[0].nseg == NR);
    plan_check(&pl[0], &r, NF);
    tdb_plan_free(&pl[0]);
    free(r.slot);
    free(r.fcell);
}

int main(void)
{
    RUN(test_plan_round_trip);
    RUN(test_plan_join);
    return unit_done();
}
