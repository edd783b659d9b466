/* test_read.c: reads of the mount layer into a sink (mount/read.c): a
 * generation's file through a sink taking every form, whole and in pieces,
 * equal to a copy; a staged file's bytes through a buffer the read
 * allocates; a folder refused. */
#include "fixture.h"
#include "../support.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The bytes sink s got, whatever its form, into out (pieces of files read
 * back with pread).  @return how many. */
static size_t sink_bytes(const struct tdb_sink *s, uint8_t *out)
{
    size_t at = 0;
    if (s->form == TDB_SINK_COPY) {
        CHECK(s->npieces == 0 && (s->got == 0 || s->buf != NULL));
        if (s->got)
            memcpy(out, s->buf, s->got);
        return s->got;
    }
    for (size_t i = 0; i < s->npieces; i++) {
        const struct tdb_piece *pc = &s->pieces[i];
        if (s->form == TDB_SINK_FILE)
            CHECK_EQ_INT(pread(pc->fd, out + at, pc->len, (off_t)pc->off),
                         (ssize_t)pc->len);
        else
            memcpy(out + at, pc->base, pc->len);
        at += pc->len;
    }
    CHECK_EQ_INT(at, s->got);
    return at;
}

/* A read into a sink taking every form, with no buffer of its own, gives
 * a generation's file's bytes as a copy into the caller's buffer does,
 * read whole or in pieces; a staged file's through a buffer the read
 * allocates; a folder's none. */
static void test_read_sink(void)
{
    static const size_t chunks[] = {7, 4096, TDBM_IO_MAX};
    const unsigned all = TDB_SINK_COPY | TDB_SINK_TILE | TDB_SINK_FILE;
    struct fixture f;
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    static uint8_t want[4096], got[4096 + TDBM_IO_MAX];
    size_t n;

    if (!fx_setup(&f, "dense_1d_basic"))
        return;
    uint64_t ia = look(f.m, TDBM_ROOT_INO, "a");
    n = slurp(f.m, ia, want, sizeof want);
    CHECK(n > 0 && n < sizeof want);
    CHECK_EQ_INT(tdbm_open(f.m, ia, O_RDONLY, &h, &oi), 0);
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        size_t at = 0;
        for (;;) {
            struct tdb_sink s = TDB_SINK_INIT(all, NULL);
            CHECK_EQ_INT(tdbm_read(f.m, h, at, chunks[c], &s), 0);
            size_t k = sink_bytes(&s, got + at);
            tdb_sink_release(&s);
            CHECK(s.lent == NULL && s.buf == NULL);
            at += k;
            if (k < chunks[c])
                break;
        }
        CHECK_EQ_INT(at, n);
        CHECK(memcmp(got, want, n) == 0);
    }
    tdbm_release(f.m, h);
    tdbm_forget(f.m, ia, 1);

    uint64_t stg = look(f.m, TDBM_ROOT_INO, TDBM_STAGING_NAME);
    CHECK_EQ_INT(tdbm_mkdir(f.m, stg, "s", 0700, &e), 0);
    stage(f.m, e.ino, "a", want, n);
    uint64_t sa = look(f.m, e.ino, "a");
    CHECK_EQ_INT(tdbm_open(f.m, sa, O_RDONLY, &h, &oi), 0);
    struct tdb_sink s = TDB_SINK_INIT(all, NULL);
    CHECK_EQ_INT(tdbm_read(f.m, h, 0, sizeof want, &s), 0);
    CHECK(s.form == TDB_SINK_COPY && s.got == n);
    CHECK(s.buf && memcmp(s.buf, want, n) == 0);
    tdb_sink_release(&s);
    CHECK(s.buf == NULL);
    tdbm_release(f.m, h);
    tdbm_forget(f.m, sa, 1);

    CHECK_EQ_INT(tdbm_opendir(f.m, e.ino, &h, &oi), 0);
    s = TDB_SINK_INIT(all, NULL);
    CHECK_EQ_INT(tdbm_read(f.m, h, 0, 16, &s), -EISDIR);
    CHECK(s.got == 0);
    tdb_sink_release(&s);
    tdbm_release(f.m, h);
    tdbm_forget(f.m, e.ino, 1);
    tdbm_forget(f.m, stg, 1);
    fx_close(&f);
}

int main(void)
{
    RUN_CORPUS(test_read_sink);
    return unit_done();
}
