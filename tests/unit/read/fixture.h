/* fixture.h: what the tests of the sparse view's deletes
 * (tests/unit/read/test_sparse_delete.c, test_sparse_delete_twice.c)
 * share: delete conditions, a scenario of writes and deletes (made as
 * fragments and delete commits, consolidated or not), the views it must
 * give, and their checks.  In the tests' library (fixture.c). */
#ifndef TDB_UNIT_READ_FIXTURE_H
#define TDB_UNIT_READ_FIXTURE_H

#include "../support.h"
#include "tiledb_format.h"

#include <stdbool.h>
#include <stdint.h>

enum { K_CMP, K_AND, K_OR };

/* A user's delete condition: a comparison of field f ("x", "y", "a": an
 * integer v; "s": a string sv) or l AND / OR r. */
struct cn {
    int k;
    const char *f;
    int op;
    int64_t v;
    const char *sv;
    const struct cn *l, *r;
};

#define CMP(f, op, v) (&(const struct cn){K_CMP, f, op, v, NULL, NULL, NULL})
#define SCMP(f, op, s) (&(const struct cn){K_CMP, f, op, 0, s, NULL, NULL})
#define AND2(l, r) (&(const struct cn){K_AND, NULL, 0, 0, NULL, l, r})
#define OR2(l, r) (&(const struct cn){K_OR, NULL, 0, 0, NULL, l, r})

/* One cell: coordinates (x, y), attributes a and s. */
struct xc {
    int64_t x, y;
    int32_t a;
    char s[16];
};

#define MAXF 4
#define MAXC 64
#define MAXD 4

/* Fragments (each written at t2, and shown as written over [t1, t2]) and
 * delete commits. */
struct scen {
    bool dups;
    size_t nf;
    struct {
        uint64_t t1, t2;
        size_t n;
        struct xc c[MAXC];
        char *name;
    } f[MAXF];
    size_t nd;
    struct {
        uint64_t ts;
        const struct cn *c;
        bool late;              /* written after the consolidation */
    } d[MAXD];
    /* ncons > 1: fragments [0, ncons) exist only consolidated, at time
     * cons_at (the deletes up to then processed), as fragment cname */
    size_t ncons;
    uint64_t cons_at;
    char *cname;
    bool drop_processed;        /* the processed delete commits are gone */
};

/* A cell with where it came from, for the expected view. */
struct ref {
    struct xc c;
    uint64_t t1, t2;
    size_t frag, seq;
};

/* Fragment f: cells i = 0..29 at x = 3 (i % 10), y = 20 (i / 10) + i % 4,
 * a = i, s = "p<i>"; written at ts. */
void base_frag(struct scen *sc, size_t f, uint64_t ts);

/* Compares file `pre`FIELD of fs for every field with cells r[0..n). */
void check_view(struct tdb_fs *fs, const char *pre, const struct ref *r,
                size_t n, const char *what);

bool cn_eval(const struct cn *c, const struct xc *x);

/* The stored form: the negation (De Morgan; each comparison negated). */
void cn_put_negated(struct tdb_buf *b, const struct cn *c);

/* The cells a view over [t0, t1] of fragments [flo, fhi) shows (written
 * as they are, unconsolidated), in order, into out. */
size_t expect(const struct scen *sc, uint64_t t0, uint64_t t1,
              size_t flo, size_t fhi, struct ref *out);

/* Fragment f overwrites the even cells of base_frag with a = sign (i + 1)
 * + bias and s = "q<i>", and adds five cells of its own at x = 1..5,
 * y = 99, a = sign (100 + i); written at ts. */
void over_frag(struct scen *sc, size_t f, uint64_t ts, int sign,
               int bias);

/* Writes scenario sc and checks its views over each of the `nr` ranges
 * r[] and each fragment's folder (over its own range). */
void run(struct scen *sc, size_t nr, const uint64_t (*rg)[2]);

/* Creates the array of scenario sc in arr (memory): its fragments, then
 * its delete commits (those processed left out when sc says so). */
void scen_array(struct scen *sc, struct tdb_io *arr);

/* Writes cells c[0..n) as one fragment at t2 (with rq's extras and
 * special fields sp[]: __timestamps, __delete_timestamps,
 * __delete_condition_index, NULL when not staged) into *name. */
void write_cells(struct tdb_io *arr, const struct xc *c, size_t n,
                 struct tdb_fragment_req *rq, uint64_t *const sp[3],
                 char **name);

#endif
