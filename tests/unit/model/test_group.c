/* test_group.c: groups' members (format/model/group.c) against the
 * corpus and hand-built details files (groupfile.h): versions 1 and 2,
 * deleted members, truncated and damaged files. */
#include "../support.h"
#include "../condtree.h"
#include "../groupfile.h"

#include "model/arraydir.h"
#include "model/delcond.h"
#include "model/generic_tile.h"
#include "model/meta.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include "fixture.h"

static void test_corpus_group_members(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/group_basic/array", unit_corpus());
    if (!unit_corpus_case("group_basic"))
        return;
    struct tdb_io io;
    struct tdb_error err = {0};
    struct tdb_group *g = NULL;
    CHECK_EQ_INT(tdb_io_posix(&io, path), 0);
    CHECK_EQ_INT(tdb_group_load(&io, "", 0, UINT64_MAX, &g, &err), 0);
    if (g) {
        CHECK_EQ_INT(g->version, 2);
        CHECK_EQ_INT(g->n, 3);
        const char *names[] = {"dense_arr", "sparse_arr", "sub"};
        const char *uris[] = {"arrays/d1", "s1", "nested"};
        for (size_t i = 0; i < 3 && i < g->n; i++) {
            CHECK(strcmp(g->v[i].name, names[i]) == 0);
            CHECK(strcmp(g->v[i].uri, uris[i]) == 0);
            CHECK(g->v[i].relative);
            /* The expected tree has a folder per member. */
            char ep[4200];
            snprintf(ep, sizeof ep, "%s/group_basic/expected/%s",
                     unit_corpus(), g->v[i].name);
            CHECK(unit_is_dir(ep));
        }
        if (g->n == 3) {
            CHECK_EQ_INT(g->v[2].type, 1);
            char *sub = tdb_group_member_path(&g->v[2], "");
            struct tdb_group *s = NULL;
            CHECK_EQ_INT(tdb_group_load(&io, sub, 0, UINT64_MAX, &s, &err),
                         0);
            CHECK(s && s->n == 1 && strcmp(s->v[0].name, "inner") == 0 &&
                  strcmp(s->v[0].uri, "x") == 0 && s->v[0].type == 2);
            tdb_group_free(s);
            free(sub);
        }
        /* Opening before the group was written: no members. */
        struct tdb_group *early = NULL;
        CHECK_EQ_INT(tdb_group_load(&io, "", 0, 5, &early, &err), 0);
        CHECK(early && early->n == 0);
        tdb_group_free(early);
    }
    tdb_group_free(g);
    tdb_io_free(&io);
}

/* ---------------------------------------------------- hand-built groups */

/* Two version-2 files of group "grp": at 10 three members, at 20 the
 * first member deleted and "beta" added. */
static void put_group_v2(struct tdb_io *io, struct tdb_buf *b)
{
    tdb_buf_reset(b);
    tdb_buf_put_u32(b, 2);
    tdb_buf_put_u64(b, 3);
    group_member(b, 2, 2, true, "arrays/zeta", "alpha", false);
    group_member(b, 2, 1, true, "sub/g", NULL, false);
    group_member(b, 2, 2, false, "file:///data/x/", NULL, false);
    put_tile(io, "grp/__group/__10_10_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_2", b->data, b->len);
    tdb_buf_reset(b);
    tdb_buf_put_u32(b, 2);
    tdb_buf_put_u64(b, 2);
    group_member(b, 2, 2, true, "arrays/zeta", "alpha", true);
    group_member(b, 2, 2, true, "b", "beta", false);
    put_tile(io, "grp/__group/__20_20_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb_2", b->data, b->len);
}

/* put_group_v2's members, sorted by name, and their paths; as of 15 the
 * deletion and "beta" are not written yet. */
static void check_group_v2(const struct tdb_io *io)
{
    struct tdb_error err = {0};
    struct tdb_group *g = NULL;
    CHECK_EQ_INT(tdb_group_load(io, "grp", 0, UINT64_MAX, &g, &err), 0);
    if (g) {
        CHECK_EQ_INT(g->n, 3);
        if (g->n == 3) {
            CHECK(strcmp(g->v[0].name, "beta") == 0);
            CHECK(strcmp(g->v[1].name, "g") == 0 && !g->v[1].name_set &&
                  g->v[1].type == 1);
            CHECK(strcmp(g->v[2].name, "x") == 0 && !g->v[2].relative);
            char *p = tdb_group_member_path(&g->v[0], "grp");
            CHECK(p && strcmp(p, "grp/b") == 0);
            free(p);
            p = tdb_group_member_path(&g->v[2], "grp");
            CHECK(p && strcmp(p, "/data/x/") == 0);
            free(p);
        }
    }
    tdb_group_free(g);
    CHECK_EQ_INT(tdb_group_load(io, "grp", 0, 15, &g, &err), 0);
    CHECK(g && g->n == 3 && strcmp(g->v[0].name, "alpha") == 0);
    tdb_group_free(g);
}

static void test_group_files(void)
{
    struct tdb_io io;
    struct tdb_error err = {0};
    CHECK_EQ_INT(tdb_io_mem(&io), 0);
    struct tdb_buf b = {0};
    struct tdb_group *g = NULL;
    put_group_v2(&io, &b);
    check_group_v2(&io);

    /* Version 1: only the latest file counts. */
    tdb_buf_reset(&b);
    tdb_buf_put_u32(&b, 1);
    tdb_buf_put_u64(&b, 1);
    group_member(&b, 1, 2, true, "old", NULL, false);
    put_tile(&io, "g1/__group/__1_1_cccccccccccccccccccccccccccccccc", b.data, b.len);
    tdb_buf_reset(&b);
    tdb_buf_put_u32(&b, 1);
    tdb_buf_put_u64(&b, 1);
    group_member(&b, 1, 2, true, "new", "n", false);
    put_tile(&io, "g1/__group/__2_2_dddddddddddddddddddddddddddddddd_1", b.data, b.len);
    CHECK_EQ_INT(tdb_group_load(&io, "g1", 0, UINT64_MAX, &g, &err), 0);
    CHECK(g && g->version == 1 && g->n == 1 &&
          strcmp(g->v[0].name, "n") == 0);
    tdb_group_free(g);

    /* A version-1 file among version-2 names is refused. */
    put_tile(&io, "g2/__group/__1_1_eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee_2", b.data, b.len);
    CHECK_EQ_INT(tdb_group_load(&io, "g2", 0, UINT64_MAX, &g, &err),
                 TDB_E_UNSUPPORTED);
    CHECK(g == NULL);
    tdb_buf_free(&b);
    tdb_io_free(&io);
}

static void test_group_truncated(void)
{
    struct tdb_buf b = {0};
    struct tdb_error err = {0};
    tdb_buf_put_u32(&b, 2);
    tdb_buf_put_u64(&b, 2);
    group_member(&b, 2, 2, true, "arr", "name", false);
    group_member(&b, 2, 1, true, "grp", NULL, false);
    for (size_t len = 0; len <= b.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.data, len);
        struct tdb_group *g = calloc(1, sizeof *g);
        int r = tdb_group_apply(g, copy, len, "t", &err);
        if (len < b.len)
            CHECK(r == TDB_E_CORRUPT);
        else
            CHECK(r == 0 && g->n == 2);
        tdb_group_free(g);
        free(copy);
    }
    /* A member count far beyond the bytes does not hang or allocate. */
    uint8_t big[12] = {2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                       0xff, 0xff, 0xff, 0xff};
    struct tdb_group *g = calloc(1, sizeof *g);
    CHECK_EQ_INT(tdb_group_apply(g, big, sizeof big, "t", &err),
                 TDB_E_CORRUPT);
    tdb_group_free(g);
    tdb_buf_free(&b);
}

int main(void)
{
    RUN(test_group_files);
    RUN(test_group_truncated);
    RUN_CORPUS(test_corpus_group_members);
    return unit_done();
}
