/* test_arraydir.c: unit tests of the array folder and time travel
 * (format/model/arraydir.c): timestamped names, commits, .con/.ign, .vac, .del,
 * schemas at a timestamp, and every case of the reference corpus. */
#include "model/arraydir.h"
#include "../support.h"

#include <dirent.h>
#include <stdint.h>

#define MAXTS UINT64_MAX

/* ------------------------------------------------------------- helpers */

static void puts_(struct tdb_io *io, const char *path, const char *text)
{
    unit_put(io, path, text, strlen(text));
}

/* "__" + 32 copies of c + suffix */
static const char *uu(char *buf, const char *prefix, char c,
                      const char *suffix)
{
    char u[33];
    memset(u, c, 32);
    u[32] = 0;
    sprintf(buf, "%s%s%s", prefix, u, suffix);
    return buf;
}

/* Checks that d's live fragments are exactly the names in want (NULL
 * terminated), in order. */
static void check_frags(const struct tdb_arraydir *d, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    CHECK_EQ_INT(d->nfrags, n);
    for (size_t i = 0; i < n && i < d->nfrags; i++) {
        if (strcmp(d->frags[i].name, want[i])) {
            fprintf(stderr, "  fragment %zu: %s, expected %s\n", i,
                    d->frags[i].name, want[i]);
            CHECK(0);
        }
    }
}

/* ------------------------------------------------------ timestamped names */

/* Version 5+ names, __t1_t2_uuid_v, bare, with a path and an extension,
 * or a folder URI's trailing slash; five underscores make era 3
 * whatever the field lengths. */
static void check_tsname_era3(void)
{
    struct tdb_tsname t;
    char b[256];
    /* version 5+: __t1_t2_uuid_v */
    CHECK_EQ_INT(tdb_tsname_parse(uu(b, "__1_2_", 'a', "_22"), &t), 0);
    CHECK_EQ_INT(t.era, 3);
    CHECK_EQ_INT(t.t1, 1);
    CHECK_EQ_INT(t.t2, 2);
    CHECK_EQ_INT(t.version, 22);
    CHECK_EQ_INT(strlen(t.uuid), 32);
    CHECK_EQ_INT(t.uuid[0], 'a');
    /* with an extension and a path, as in __commits/NAME.wrt */
    CHECK_EQ_INT(tdb_tsname_parse(
                     "a/__commits/__1693562063524_1693562063525_"
                     "0fcdefaa40d34ff2a4b09153472fbdc2_10.wrt",
                     &t), 0);
    CHECK_EQ_INT(t.era, 3);
    CHECK(t.t1 == UINT64_C(1693562063524));
    CHECK(t.t2 == UINT64_C(1693562063525));
    CHECK_EQ_INT(t.version, 10);
    CHECK(!strcmp(t.uuid, "0fcdefaa40d34ff2a4b09153472fbdc2"));
    /* trailing slash of a folder URI */
    CHECK_EQ_INT(tdb_tsname_parse("file:///x/__fragments/__3_4_abc_22/", &t),
                 0);
    CHECK_EQ_INT(t.t1, 3);
    CHECK(!strcmp(t.uuid, "abc"));
    /* five underscores make era 3 whatever the field lengths */
    CHECK_EQ_INT(tdb_tsname_parse(uu(b, "__1_1_", 'f', "_5"), &t), 0);
    CHECK_EQ_INT(t.era, 3);
    CHECK_EQ_INT(t.version, 5);
    CHECK_EQ_INT(
        tdb_tsname_parse("__0_18446744073709551615_u_4294967295", &t), 0);
    CHECK(t.t2 == UINT64_MAX);
    CHECK(t.version == UINT32_MAX);
}

/* Versions 3-4 and 1-2, and __uuid_t1_t2. */
static void check_tsname_older(void)
{
    struct tdb_tsname t;
    char b[256];
    /* versions 3-4 (and schema / metadata names): __t1_t2_uuid */
    CHECK_EQ_INT(tdb_tsname_parse(uu(b, "__7_9_", '0', ""), &t), 0);
    CHECK_EQ_INT(t.era, 2);
    CHECK_EQ_INT(t.t1, 7);
    CHECK_EQ_INT(t.t2, 9);
    CHECK_EQ_INT(t.version, 0);
    /* versions 1-2: __uuid_t */
    CHECK_EQ_INT(tdb_tsname_parse(
                     "__5dc2cc9cce204a189f825fd4919d0c55_1541540586869", &t),
                 0);
    CHECK_EQ_INT(t.era, 1);
    CHECK(t.t1 == UINT64_C(1541540586869));
    CHECK(t.t2 == t.t1);
    CHECK_EQ_INT(t.version, 0);
    CHECK(!strcmp(t.uuid, "5dc2cc9cce204a189f825fd4919d0c55"));
    /* __uuid_t1_t2: TileDB takes the last field for both ends */
    CHECK_EQ_INT(tdb_tsname_parse("__abcd_5_9", &t), 0);
    CHECK_EQ_INT(t.era, 1);
    CHECK_EQ_INT(t.t1, 9);
    CHECK_EQ_INT(t.t2, 9);
    CHECK(!strcmp(t.uuid, "abcd"));
}

static void test_tsname_eras(void)
{
    check_tsname_era3();
    check_tsname_older();
}

static void test_tsname_malformed(void)
{
    static const char *const bad[] = {
        "", "x", "_", "__", "___", "____", "_____", "______", "__.wrt",
        "x_1_1_u_22", "_1_1_u_22", "__a_b_u_22", "__1_b_u_22",
        "__2_1_u_22",                       /* t1 > t2 */
        "__1_1__22", "__1_1_u_", "__1__u_22", "__1_1_u_22_",
        "__1_1_u_2x", "__-1_1_u_22", "__+1_1_u_22", "__ 1_1_u_22",
        "__1_1_u_22_7", "__1_1_u_22_7_8",
        "__18446744073709551616_18446744073709551616_u_22", /* overflow */
        "__1_1_u_4294967296",
        "__uuid", "__uuid_x", "__uuid_1_x", "__uuid__1",
        "__1_2_0123456789abcdef0123456789abcdeX_", /* empty version */
        "__1_1_0123456789012345678901234567890123456789012345678901234567"
        "890123456789_22",                            /* uuid too long for the struct */
        "__lock", "__array_schema.tdb", "__schema", "__fragments",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct tdb_tsname t;
        memset(&t, 0x55, sizeof t);
        int r = tdb_tsname_parse(bad[i], &t);
        if (r != TDB_E_CORRUPT)
            fprintf(stderr, "  accepted malformed name '%s'\n", bad[i]);
        CHECK_EQ_INT(r, TDB_E_CORRUPT);
        CHECK_EQ_INT(t.t1, 0);
        CHECK_EQ_INT(t.era, 0);
    }
    struct tdb_tsname t;
    CHECK_EQ_INT(tdb_tsname_parse(NULL, &t), TDB_E_CORRUPT);
    /* A long name never overflows anything. */
    char big[9000];
    memset(big, '_', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK_EQ_INT(tdb_tsname_parse(big, &t), TDB_E_CORRUPT);
    memset(big, '7', sizeof big - 1);
    big[0] = big[1] = '_';
    CHECK_EQ_INT(tdb_tsname_parse(big, &t), TDB_E_CORRUPT);
}

/* ---------------------------------------------------- a hand-built array */

/* Names of the hand-built array (see build_array). */
struct names {
    char A[64], B[64], C[64], D[64], E[64], F[64], G[64];
    char H[64], I[64], J[64], K[64], L[64], M[64], N[64];
    char del15[64], del16[64], del99[64], s5[64], s7[64];
};

static void make_names(struct names *n)
{
    uu(n->A, "__", 'a', "_3");        /* v1-2, has fragment metadata */
    uu(n->B, "__", 'b', "_4");        /* v1-2, no fragment metadata */
    uu(n->C, "__4_4_", 'c', "_5");    /* .ok; vacuumed by D */
    uu(n->D, "__4_5_", 'd', "_5");    /* .ok and D.vac (absolute URIs) */
    uu(n->E, "__6_6_", 'e', "_5");    /* v5, no .ok: uncommitted */
    uu(n->F, "__7_7_", 'f', "_10");   /* committed by F.ok inside a .con */
    uu(n->G, "__2_2_", '1', "");      /* v3-4, has fragment metadata */
    uu(n->H, "__8_8_", '2', "_22");   /* .wrt */
    uu(n->I, "__9_9_", '3', "_22");   /* folder but no .wrt */
    uu(n->J, "__10_10_", '4', "_22"); /* in the .con and a .wrt too */
    uu(n->K, "__11_11_", '5', "_22"); /* in the .con but in the .ign */
    uu(n->L, "__12_12_", '6', "_22"); /* vacuumed by N */
    uu(n->M, "__13_13_", '7', "_22"); /* vacuumed by N */
    uu(n->N, "__12_14_", '8', "_22"); /* consolidated L and M */
    uu(n->del15, "__15_15_", '9', "_22");
    uu(n->del16, "__16_16_", 'a', "_22");
    uu(n->del99, "__99_99_", 'b', "_22");
    uu(n->s5, "__5_5_", 's', "");
    uu(n->s7, "__7_7_", 't', "");
}

static void put2(struct tdb_io *io, const char *a, const char *b,
                 const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s%s", a, b);
    puts_(io, p, text);
}

/* The .con of the hand-built array: J and K commits, a delete with its
 * tile, F's legacy .ok, and a delete outside most ranges. */
static size_t build_con(const struct names *n, uint8_t *buf, size_t cap,
                        size_t *del_off)
{
    size_t len = 0;
    len += (size_t)snprintf((char *)buf + len, cap - len,
                            "__commits/%s.wrt\n__commits/%s.del\n", n->J,
                            n->del16);
    uint8_t sz[8] = {5, 0, 0, 0, 0, 0, 0, 0};
    memcpy(buf + len, sz, 8);
    len += 8;
    *del_off = len;
    memcpy(buf + len, "HELLO", 5);
    len += 5;
    len += (size_t)snprintf((char *)buf + len, cap - len,
                            "__commits/%s.wrt\n%s.ok\n__commits/%s.del\n",
                            n->K, n->F, n->del99);
    memcpy(buf + len, "\x03\0\0\0\0\0\0\0xyz", 11);
    len += 11;
    return len;
}

/* Schemas (legacy file, two timestamped ones, enumerations), the legacy
 * root fragments and root clutter. */
static void build_array_root(struct tdb_io *io, const struct names *n)
{
    char p[512];
    puts_(io, "__array_schema.tdb", "legacy schema");
    put2(io, "__schema/", n->s5, "schema 5");
    put2(io, "__schema/", n->s7, "schema 7");
    puts_(io, "__schema/__enumerations/__1_1_e_22", "enum");

    put2(io, n->A, "/__fragment_metadata.tdb", "fm");
    put2(io, n->B, "/a.tdb", "data");
    put2(io, n->C, "/__fragment_metadata.tdb", "fm");
    put2(io, n->C, ".ok", "");
    put2(io, n->D, "/__fragment_metadata.tdb", "fm");
    put2(io, n->D, ".ok", "");
    snprintf(p, sizeof p, "file:///data/arrays/x/%s\n", n->C);
    put2(io, n->D, ".vac", p);
    put2(io, n->E, "/__fragment_metadata.tdb", "fm");
    put2(io, n->F, "/__fragment_metadata.tdb", "fm");
    put2(io, n->G, "/__fragment_metadata.tdb", "fm");
    puts_(io, "__lock.tdb", "");
    puts_(io, "notes.txt", "hello");
    puts_(io, "my_dir/x", "x");
    puts_(io, "__meta/__1_1_00000000000000000000000000000000", "m");
    puts_(io, "__labels/l/__schema/__1_1_x", "l");
}

/* The new hierarchy: fragments, their .wrt, a .vac and a malformed one. */
static void build_array_fragments(struct tdb_io *io, const struct names *n)
{
    char p[512];
    const char *newf[] = {n->H, n->I, n->J, n->K, n->L, n->M, n->N};
    for (size_t i = 0; i < 7; i++)
        put2(io, "__fragments/", newf[i], "/__fragment_metadata.tdb");
    const char *wrt[] = {n->H, n->J, n->L, n->M, n->N};
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "__commits/%s.wrt", wrt[i]);
        puts_(io, p, "");
    }
    snprintf(p, sizeof p, "/__fragments/%s\n/__fragments/%s\n", n->L, n->M);
    char vp[256];
    snprintf(vp, sizeof vp, "__commits/%s.vac", n->N);
    puts_(io, vp, p);
    snprintf(vp, sizeof vp, "__commits/%s_.vac", n->N); /* malformed */
    puts_(io, vp, p);
}

static void build_array(struct tdb_io *io, const struct names *n,
                        size_t *del_off)
{
    char p[512];
    build_array_root(io, n);
    build_array_fragments(io, n);
    /* the .con and the .ign */
    uint8_t con[2048];
    size_t clen = build_con(n, con, sizeof con, del_off);
    unit_put(io, "__commits/__10_16_cccccccccccccccccccccccccccccccc_22.con",
             con, clen);
    snprintf(p, sizeof p, "__commits/%s.wrt\n", n->K);
    puts_(io, "__commits/__11_11_dddddddddddddddddddddddddddddddd_22.ign", p);
    /* a delete commit */
    snprintf(p, sizeof p, "__commits/%s.del", n->del15);
    unit_put(io, p, "\x16\0\0\0tile", 8);
    /* malformed commits: ignored */
    puts_(io, "__commits/__x.wrt", "");
    puts_(io, "junk.wrt", "");
    puts_(io, "__commits/junk.wrt", "");
    puts_(io, "__commits/__5_3_eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee_22.wrt", "");
    puts_(io, "__commits/__5_3_eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee_22.del", "");
    puts_(io, "__commits/readme", "text");
    puts_(io, "__commits/__1_1_ffffffffffffffffffffffffffffffff_22.upd", "u");
    /* consolidated fragment metadata, old and new place */
    puts_(io, "__1_3_mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm_10.meta", "meta");
    puts_(io, "__fragment_meta/__2_4_nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn_22.meta",
          "meta");
}

/* Whole range: schemas (legacy first, __enumerations skipped) and the
 * fragments, dense then sparse: legacy G(2) A(3) D(4) F(7); H(8) J(10)
 * N(12). */
static void check_whole_frags(struct tdb_arraydir *d, const struct names *n)
{
    struct tdb_error err = {0};
    CHECK_EQ_INT(d->nschemas, 3);
    if (d->nschemas == 3) {
        CHECK(!strcmp(d->schemas[0].path, "__array_schema.tdb"));
        CHECK(!strcmp(d->schemas[1].name, n->s5));
        CHECK(!strcmp(d->schemas[2].path + 9, n->s7));
        CHECK(!strncmp(d->schemas[2].path, "__schema/", 9));
    }
    CHECK_EQ_INT(d->schema_latest, 2);
    const char *want[] = {n->G, n->A, n->D, n->F, n->H, n->J, n->N, NULL};
    check_frags(d, want);
    if (d->nfrags == 7) {
        CHECK(!strcmp(d->frags[0].path, n->G));
        CHECK(!strncmp(d->frags[4].path, "__fragments/", 12));
        CHECK(!strcmp(d->frags[4].path + 12, n->H));
        CHECK_EQ_INT(d->frags[6].ts.t2, 14);
    }
    CHECK_EQ_INT(tdb_arraydir_select(d, true, &err), 0);
    check_frags(d, want);
}

/* Whole range: delete commits by time (the .del file, then those in the
 * .con) and consolidated fragment metadata, root first. */
static void check_whole_deletes(const struct tdb_io *io,
                                const struct tdb_arraydir *d,
                                const struct names *n, size_t del_off)
{
    CHECK_EQ_INT(d->ndeletes, 3);
    if (d->ndeletes == 3) {
        CHECK(!strcmp(d->deletes[0].name, n->del15));
        CHECK(!strncmp(d->deletes[0].path, "__commits/", 10));
        CHECK(!strncmp(d->deletes[0].path + 10, n->del15, strlen(n->del15)));
        CHECK(strstr(d->deletes[0].path, ".del") != NULL);
        CHECK_EQ_INT(d->deletes[0].offset, 0);
        CHECK(!strcmp(d->deletes[1].name, n->del16));
        CHECK(strstr(d->deletes[1].path, ".con") != NULL);
        CHECK_EQ_INT(d->deletes[1].offset, del_off);
        char tile[5];
        CHECK_EQ_INT(io->ops->read_at(io->ctx, d->deletes[1].path,
                                      d->deletes[1].offset, tile, 5), 0);
        CHECK_MEM(tile, "HELLO", 5);
        CHECK(!strcmp(d->deletes[2].name, n->del99));
        CHECK_EQ_INT(d->deletes[2].offset,
                     d->deletes[1].offset + 5 + 10 + strlen(n->K) + 5 +
                         strlen(n->F) + 4 + 10 + strlen(n->del99) + 5 + 8);
    }
    CHECK_EQ_INT(d->nfragmeta, 2);
    if (d->nfragmeta == 2) {
        CHECK(!strcmp(d->fragmeta[0].path,
                      "__1_3_mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm_10.meta"));
        CHECK(!strcmp(d->fragmeta[0].name,
                      "__1_3_mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm_10"));
        CHECK(!strcmp(d->fragmeta[1].path,
                      "__fragment_meta/"
                      "__2_4_nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn_22.meta"));
    }
    CHECK_EQ_INT(d->nmeta, 0);
}

/* Loads [lo, hi]; checks the dense fragments `dense`, then the sparse ones
 * `sparse`.  [0, 12]: N is not wholly inside, so its .vac is dead for
 * dense; for sparse N overlaps, its .vac is live and drops L. */
static struct tdb_arraydir *check_window(const struct tdb_io *io,
                                         uint64_t lo, uint64_t hi,
                                         const char **dense,
                                         const char **sparse)
{
    struct tdb_arraydir *d = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_arraydir_load(io, lo, hi, &d, &err), 0);
    if (d) {
        check_frags(d, dense);
        CHECK_EQ_INT(tdb_arraydir_select(d, true, &err), 0);
        check_frags(d, sparse);
    }
    return d;
}

static void check_windows_frags(const struct tdb_io *io,
                                const struct names *n)
{
    const char *d12[] = {n->G, n->A, n->D, n->F, n->H, n->J, n->L, NULL};
    const char *s12[] = {n->G, n->A, n->D, n->F, n->H, n->J, n->N, NULL};
    struct tdb_arraydir *d = check_window(io, 0, 12, d12, s12);
    if (d) {
        CHECK_EQ_INT(d->ndeletes, 0);
        CHECK_EQ_INT(d->schema_latest, 2);
        tdb_arraydir_free(d);
    }
    const char *d13[] = {n->M, NULL}, *s13[] = {n->N, NULL};
    tdb_arraydir_free(check_window(io, 13, 13, d13, s13));
    /* [4, 4]: D's .vac [4,5] is not inside, so C is back (legacy: never
     * overlap rule, even for sparse); the schema in force is the legacy
     * one (before the first timestamped schema). */
    const char *w4[] = {n->C, NULL};
    d = check_window(io, 4, 4, w4, w4);
    if (d) {
        CHECK_EQ_INT(d->schema_latest, 0);
        tdb_arraydir_free(d);
    }
}

/* The schema in force at 6 and 7; [16, 16] has only the .con delete; an
 * empty range (start > end) selects nothing.  -1: not checked. */
static void check_windows_counts(const struct tdb_io *io)
{
    static const struct {
        uint64_t lo, hi;
        int latest, nfrags, ndeletes;
    } cases[] = {
        {0, 6, 1, -1, -1},
        {0, 7, 2, -1, -1},
        {16, 16, -1, 0, 1},
        {9, 8, -1, 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tdb_arraydir *d = NULL;
        struct tdb_error err = {0};
        CHECK_EQ_INT(tdb_arraydir_load(io, cases[i].lo, cases[i].hi, &d,
                                       &err), 0);
        if (!d)
            continue;
        if (cases[i].latest >= 0)
            CHECK_EQ_INT(d->schema_latest, cases[i].latest);
        if (cases[i].nfrags >= 0)
            CHECK_EQ_INT(d->nfrags, cases[i].nfrags);
        if (cases[i].ndeletes >= 0)
            CHECK_EQ_INT(d->ndeletes, cases[i].ndeletes);
        tdb_arraydir_free(d);
    }
}

static void test_hand_built(void)
{
    struct names n;
    make_names(&n);
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    size_t del_off = 0;
    build_array(&io, &n, &del_off);
    CHECK(tdb_is_array(&io, ""));
    CHECK(!tdb_is_group(&io, ""));

    struct tdb_error err = {0};
    struct tdb_arraydir *d = NULL;
    int r = tdb_arraydir_load(&io, 0, MAXTS, &d, &err);
    CHECK_EQ_INT(r, 0);
    if (r) {
        fprintf(stderr, "  %s\n", err.msg);
        tdb_io_free(&io);
        return;
    }
    check_whole_frags(d, &n);
    check_whole_deletes(&io, d, &n, del_off);
    tdb_arraydir_free(d);
    check_windows_frags(&io, &n);
    check_windows_counts(&io);
    tdb_io_free(&io);
}

/* An .ign entry whose .wrt is still in __commits: the fragment is live. */
static void test_ignored_but_committed(void)
{
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    puts_(&io, "__schema/__1_1_00000000000000000000000000000000", "s");
    char a[64], b[64], p[256];
    uu(a, "__1_1_", 'a', "_22");
    uu(b, "__2_2_", 'b', "_22");
    snprintf(p, sizeof p, "__commits/%s.wrt\n__commits/%s.wrt\n", a, b);
    puts_(&io, "__commits/__1_2_cccccccccccccccccccccccccccccccc_22.con", p);
    snprintf(p, sizeof p, "__commits/%s.wrt\n", a);
    puts_(&io, "__commits/__1_1_dddddddddddddddddddddddddddddddd_22.ign", p);
    struct tdb_arraydir *d;
    struct tdb_error err;
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), 0);
    const char *w1[] = {b, NULL};
    check_frags(d, w1);
    tdb_arraydir_free(d);
    snprintf(p, sizeof p, "__commits/%s.wrt", a);
    puts_(&io, p, "");
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), 0);
    const char *w2[] = {a, b, NULL};
    check_frags(d, w2);
    tdb_arraydir_free(d);
    /* Equal t1: ties keep the listing order (.con first, then __commits). */
    char c[64];
    uu(c, "__1_5_", '0', "_22");
    snprintf(p, sizeof p, "__commits/%s.wrt", c);
    puts_(&io, p, "");
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), 0);
    const char *w3[] = {a, c, b, NULL};
    check_frags(d, w3);
    tdb_arraydir_free(d);
    tdb_io_free(&io);
}

/* ------------------------------------------------------- corrupt inputs */

static void test_no_schema(void)
{
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    struct tdb_arraydir *d = (void *)1;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), TDB_E_INVAL);
    CHECK(d == NULL);
    CHECK(strstr(err.msg, "schema") != NULL);
    /* a folder named __array_schema.tdb is no schema */
    puts_(&io, "__array_schema.tdb/x", "x");
    CHECK(!tdb_is_array(&io, ""));
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), TDB_E_INVAL);
    /* an __schema folder makes an array, but a malformed schema name is
     * ignored, which leaves none */
    puts_(&io, "__schema/garbage", "x");
    puts_(&io, "__schema/__2_1_00000000000000000000000000000000", "x");
    CHECK(tdb_is_array(&io, ""));
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), TDB_E_INVAL);
    tdb_io_free(&io);
}

static void test_con_truncated(void)
{
    struct names n;
    make_names(&n);
    uint8_t con[2048];
    size_t off;
    size_t len = build_con(&n, con, sizeof con, &off);
    /* Every prefix of the .con: loads or fails cleanly, never crashes. */
    int nfail = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        struct tdb_io io;
        CHECK_EQ_INT(tdb_io_mem(&io), 0);
        puts_(&io, "__schema/__1_1_00000000000000000000000000000000", "s");
        unit_put(&io, "__commits/__1_1_cccccccccccccccccccccccccccccccc_22.con",
                 con, cut);
        struct tdb_arraydir *d = NULL;
        struct tdb_error err = {0};
        int r = tdb_arraydir_load(&io, 0, MAXTS, &d, &err);
        CHECK(r == 0 || r == TDB_E_CORRUPT);
        if (r) {
            nfail++;
            CHECK(d == NULL);
            CHECK(strstr(err.msg, ".con") != NULL);
        }
        tdb_arraydir_free(d);
        tdb_io_free(&io);
    }
    /* a cut right after ".del", inside its size or its tile fails:
     * (1+8+5) + (1+8+3) of them */
    CHECK_EQ_INT(nfail, 26);

    /* a delete tile size beyond the end of the file */
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    puts_(&io, "__schema/__1_1_00000000000000000000000000000000", "s");
    uint8_t bad[128];
    int m = snprintf((char *)bad, sizeof bad, "__commits/%s.del\n", n.del16);
    memcpy(bad + m, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    unit_put(&io, "__commits/__1_1_cccccccccccccccccccccccccccccccc_22.con",
             bad, (size_t)m + 8);
    struct tdb_arraydir *d = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), TDB_E_CORRUPT);
    CHECK(strstr(err.msg, "truncated") != NULL);
    /* a NUL inside an entry name */
    unit_put(&io, "__commits/__1_1_cccccccccccccccccccccccccccccccc_22.con",
             "__co\0mmits/x.wrt\n", 17);
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), TDB_E_CORRUPT);
    tdb_io_free(&io);
}

/* Junk in .vac and .ign files is skipped; nothing crashes. */
static void test_junk_lists(void)
{
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    puts_(&io, "__schema/__1_1_00000000000000000000000000000000", "s");
    char a[64], p[256];
    uu(a, "__1_1_", 'a', "_22");
    snprintf(p, sizeof p, "__commits/%s.wrt", a);
    puts_(&io, p, "");
    static const char junk[] = "\n\n\0\0\x01\xff/\n//\nno-slash\n";
    unit_put(&io, "__commits/__1_1_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb_22.vac",
             junk, sizeof junk - 1);
    unit_put(&io, "__commits/__1_1_cccccccccccccccccccccccccccccccc_22.ign",
             "\0\n\n\xff", 4);
    static char huge[5000];
    memset(huge, 'x', sizeof huge);
    unit_put(&io, "__commits/__1_1_dddddddddddddddddddddddddddddddd_22.vac",
             huge, sizeof huge);
    struct tdb_arraydir *d = NULL;
    struct tdb_error err;
    CHECK_EQ_INT(tdb_arraydir_load(&io, 0, MAXTS, &d, &err), 0);
    const char *w[] = {a, NULL};
    if (d)
        check_frags(d, w);
    tdb_arraydir_free(d);
    tdb_arraydir_free(NULL);
    tdb_io_free(&io);
}

/* An I/O backend whose reads fail: the error comes back, named. */
static int failing_read(void *ctx, const char *path, uint64_t off, void *buf,
                        size_t len)
{
    return TDB_E_IO;
}

static void test_io_error(void)
{
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    puts_(&io, "__schema/__1_1_00000000000000000000000000000000", "s");
    puts_(&io, "__commits/__1_1_cccccccccccccccccccccccccccccccc_22.con",
          "x\n");
    struct tdb_io_ops ops = *io.ops;
    ops.read_at = failing_read;
    struct tdb_io bad = {&ops, io.ctx};
    struct tdb_arraydir *d = NULL;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_arraydir_load(&bad, 0, MAXTS, &d, &err), TDB_E_IO);
    CHECK(strstr(err.msg, "__commits/") != NULL);
    CHECK(d == NULL);
    tdb_io_free(&io);
}

static void test_object_kinds(void)
{
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    CHECK(!tdb_is_array(&io, ""));
    CHECK(!tdb_is_group(&io, ""));
    puts_(&io, "g/__group/__1_1_x_2", "g");
    puts_(&io, "h/__tiledb_group.tdb", "");
    puts_(&io, "a/__array_schema.tdb", "s");
    puts_(&io, "b/__schema/__1_1_x", "s");
    puts_(&io, "c/__group", "file, not a folder");
    CHECK(tdb_is_group(&io, "g") && !tdb_is_array(&io, "g"));
    CHECK(tdb_is_group(&io, "h") && !tdb_is_array(&io, "h"));
    CHECK(tdb_is_array(&io, "a") && !tdb_is_group(&io, "a"));
    CHECK(tdb_is_array(&io, "b") && !tdb_is_group(&io, "b"));
    CHECK(!tdb_is_group(&io, "c"));
    CHECK(!tdb_is_array(&io, "nowhere"));
    tdb_io_free(&io);
}

/* ------------------------------------------------------------- the corpus */

/* Finds `"key": "` in text and copies the string value. */
static bool json_str(const char *text, const char *key, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(text, pat);
    if (!p)
        return false;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (!e || (size_t)(e - p) >= cap)
        return false;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = 0;
    return true;
}

/* The names of the top-level "fragments": [...] list (NULL terminated). */
static size_t json_frags(const char *text, char names[][128], size_t cap)
{
    const char *p = strstr(text, "\"fragments\": [");
    if (!p)
        return (size_t)-1;
    p += strlen("\"fragments\": [");
    size_t n = 0;
    while (*p && *p != ']' && n < cap) {
        const char *q = strchr(p, '"');
        if (!q || strchr(p, ']') < q)
            break;
        const char *e = strchr(q + 1, '"');
        if (!e || e - q - 1 >= 128)
            break;
        memcpy(names[n], q + 1, (size_t)(e - q - 1));
        names[n][e - q - 1] = 0;
        n++;
        p = e + 1;
    }
    return n;
}

static int corpus_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The corpus's case names under `root`, sorted, into cases[512] (to
 * free), their number in *n; @return false when `root` cannot be read. */
static bool list_cases(const char *root, char **cases, size_t *n)
{
    DIR *dir = opendir(root);
    CHECK(dir != NULL);
    if (!dir)
        return false;
    size_t ncases = 0;
    struct dirent *de;
    while ((de = readdir(dir)) && ncases < 512)
        if (de->d_name[0] != '.')
            cases[ncases++] = strdup(de->d_name);
    closedir(dir);
    qsort(cases, ncases, sizeof *cases, corpus_cmp);
    *n = ncases;
    return true;
}

/* The fragments selected in d are want[0..nwant) and their folders exist;
 * the schema in force is one of d's. */
static void check_selected(const struct tdb_io *io,
                           const struct tdb_arraydir *d,
                           char (*want)[128], size_t nwant, const char *name)
{
    bool same = d->nfrags == nwant;
    for (size_t i = 0; same && i < nwant; i++)
        same = !strcmp(d->frags[i].name, want[i]);
    if (!same) {
        fprintf(stderr, "  %s: got", name);
        for (size_t i = 0; i < d->nfrags; i++)
            fprintf(stderr, " %s", d->frags[i].name);
        fprintf(stderr, "\n");
    }
    CHECK(same);
    CHECK(d->nschemas >= 1);
    CHECK(d->schema_latest < d->nschemas);
    for (size_t i = 0; i < d->nfrags; i++) {
        bool exists = tdb_io_exists(io, d->frags[i].path);
        CHECK(exists);
    }
}

/* Corpus case `name`: a group is a group; an array's fragments in the
 * case's time range are those case.json lists.  @return whether an
 * array's fragments were checked. */
static bool check_corpus_case(const char *root, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/case.json", root, name);
    char *json = unit_slurp(path, NULL);
    if (!json)
        return false;
    char kind[32] = "", type[32] = "", opts[256] = "";
    json_str(json, "kind", kind, sizeof kind);
    json_str(json, "array_type", type, sizeof type);
    json_str(json, "mount_options", opts, sizeof opts);
    snprintf(path, sizeof path, "%s/%s/array", root, name);
    struct tdb_io io;
    CHECK_EQ_INT(tdb_io_posix(&io, path), 0);
    bool checked = false;
    if (!strcmp(kind, "group")) {
        CHECK(tdb_is_group(&io, ""));
        CHECK(!tdb_is_array(&io, ""));
    } else {
        CHECK(tdb_is_array(&io, ""));
        CHECK(!tdb_is_group(&io, ""));
        static char want[256][128];
        size_t nwant = json_frags(json, want, 256);
        CHECK(nwant != (size_t)-1);
        uint64_t s, e;
        unit_timestamp_range(opts, &s, &e);
        struct tdb_arraydir *d = NULL;
        struct tdb_error err = {0};
        int r = tdb_arraydir_load(&io, s, e, &d, &err);
        if (r) {
            fprintf(stderr, "  %s: %s\n", name, err.msg);
            CHECK_EQ_INT(r, 0);
        } else {
            CHECK_EQ_INT(tdb_arraydir_select(d, !strcmp(type, "sparse"),
                                             &err), 0);
            check_selected(&io, d, want, nwant, name);
            checked = true;
        }
        tdb_arraydir_free(d);
    }
    tdb_io_free(&io);
    free(json);
    return checked;
}

static void test_corpus(void)
{
    const char *root = unit_corpus();
    char *cases[512];
    size_t ncases = 0;
    if (!list_cases(root, cases, &ncases))
        return;
    size_t checked = 0;
    for (size_t c = 0; c < ncases; c++)
        checked += check_corpus_case(root, cases[c]);
    for (size_t c = 0; c < ncases; c++)
        free(cases[c]);
    printf("  corpus: %zu arrays checked\n", checked);
    CHECK(checked > 0);
}

/* Corpus details beyond the fragment list. */
static struct tdb_arraydir *corpus_load(struct tdb_io *io, const char *root,
                                        const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/array", root, name);
    struct tdb_arraydir *d = NULL;
    struct tdb_error err = {0};
    if (tdb_io_posix(io, path))
        return NULL;
    int r = tdb_arraydir_load(io, 0, MAXTS, &d, &err);
    CHECK_EQ_INT(r, 0);
    if (r) {
        fprintf(stderr, "  %s: %s\n", name, err.msg);
        tdb_io_free(io);
    }
    return d;
}

/* sparse_delete: one delete commit, a generic tile at offset 0 of its
 * .del. */
static void check_details_delete(struct tdb_io *io, struct tdb_arraydir *d)
{
    (void)io;
    CHECK_EQ_INT(d->ndeletes, 1);
    if (d->ndeletes == 1) {
        CHECK_EQ_INT(d->deletes[0].ts.t1, 3);
        CHECK_EQ_INT(d->deletes[0].offset, 0);
        CHECK(!strncmp(d->deletes[0].path, "__commits/__3_3_", 16));
        CHECK(strstr(d->deletes[0].path, ".del") != NULL);
    }
}

/* consolidated_fragment_meta: consolidated fragment metadata. */
static void check_details_fragmeta(struct tdb_io *io, struct tdb_arraydir *d)
{
    (void)io;
    CHECK_EQ_INT(d->nfragmeta, 1);
    if (d->nfragmeta == 1)
        CHECK(!strncmp(d->fragmeta[0].path, "__fragment_meta/__1_3_", 22));
}

/* consolidated_dense: the .vac lists three fragments. */
static void check_details_vac(struct tdb_io *io, struct tdb_arraydir *d)
{
    (void)io;
    CHECK_EQ_INT(d->nvacs, 1);
    if (d->nvacs == 1) {
        CHECK_EQ_INT(d->vacs[0].nitems, 3);
        for (size_t i = 0; i < d->vacs[0].nitems; i++)
            CHECK(!strncmp(d->vacs[0].items[i], "__fragments/__", 14));
    }
    CHECK_EQ_INT(d->ncands, 5);
}

/* consolidated_dense, time travel into it while its sources still exist:
 * dense takes the sources inside [0,2]; sparse takes the consolidated
 * fragment, which overlaps, and its .vac drops the sources. */
static void check_details_travel(struct tdb_io *io, struct tdb_arraydir *d0)
{
    (void)d0;
    struct tdb_arraydir *d = NULL;
    struct tdb_error err;
    CHECK_EQ_INT(tdb_arraydir_load(io, 0, 2, &d, &err), 0);
    CHECK_EQ_INT(d->nfrags, 2);
    if (d->nfrags == 2) {
        CHECK(!strncmp(d->frags[0].name, "__1_1_", 6));
        CHECK(!strncmp(d->frags[1].name, "__2_2_", 6));
    }
    CHECK_EQ_INT(tdb_arraydir_select(d, true, &err), 0);
    CHECK_EQ_INT(d->nfrags, 1);
    if (d->nfrags == 1)
        CHECK(!strncmp(d->frags[0].name, "__1_3_", 6));
    tdb_arraydir_free(d);
}

/* legacy: the schema file, no __schema folder. */
static void check_details_legacy(struct tdb_io *io, struct tdb_arraydir *d)
{
    (void)io;
    CHECK_EQ_INT(d->nschemas, 1);
    if (d->nschemas)
        CHECK(!strcmp(d->schemas[0].path, "__array_schema.tdb"));
    CHECK_EQ_INT(d->schema_latest, 0);
    if (d->nfrags == 1)
        CHECK_EQ_INT(d->frags[0].ts.era, 1);
}

/* schema evolution: the newer schema is in force. */
static void check_details_evolved(struct tdb_io *io, struct tdb_arraydir *d)
{
    (void)io;
    CHECK_EQ_INT(d->nschemas, 2);
    CHECK_EQ_INT(d->schema_latest, 1);
}

static void test_corpus_details(void)
{
    const char *root = unit_corpus();
    if (!unit_corpus_case("sparse_delete"))
        return;
    static const struct {
        const char *name;
        void (*check)(struct tdb_io *io, struct tdb_arraydir *d);
    } cases[] = {
        {"sparse_delete", check_details_delete},
        {"consolidated_fragment_meta", check_details_fragmeta},
        {"consolidated_dense", check_details_vac},
        {"consolidated_dense", check_details_travel},
        {"legacy_non_split_coords_v1_4_0", check_details_legacy},
        {"schema_evolution_add_attr", check_details_evolved},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct tdb_io io;
        struct tdb_arraydir *d = corpus_load(&io, root, cases[i].name);
        if (!d)
            continue;
        cases[i].check(&io, d);
        tdb_arraydir_free(d);
        tdb_io_free(&io);
    }
}

int main(void)
{
    RUN(test_tsname_eras);
    RUN(test_tsname_malformed);
    RUN(test_hand_built);
    RUN(test_ignored_but_committed);
    RUN(test_no_schema);
    RUN(test_con_truncated);
    RUN(test_junk_lists);
    RUN(test_io_error);
    RUN(test_object_kinds);
    RUN_CORPUS(test_corpus);
    RUN_CORPUS(test_corpus_details);
    return unit_done();
}
