/* fixture.c: the mount tests' fixture (see fixture.h). */
#include "fixture.h"
#include "../support.h"

#include "core/core.h"
#include "core/io_local.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char logbuf[8192];

int invals;

void on_log(void *arg, const char *line)
{
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", line);
}

void on_inval(void *arg, char **names, size_t n)
{
    invals++;
    tdbm_names_free(names, n);
}

/* A temporary folder DIR for f, its array to be DIR/arr.  @return NULL
 * or the step that failed. */
const char *fx_dir(struct fixture *f)
{
    strcpy(f->dir, "/tmp/test_mount.XXXXXX");
    if (!mkdtemp(f->dir)) {
        f->dir[0] = '\0';
        return "mkdtemp";
    }
    snprintf(f->arr, sizeof f->arr, "%s/arr", f->dir);
    return NULL;
}

/* Mounts f->arr with the options `opts` (writable with `rw`).  @return
 * NULL, or the step that failed (with the reason in why). */
const char *fx_mount(struct fixture *f, const char *opts, bool rw,
                     char *why, size_t whylen)
{
    struct tdbm_config cfg;

    tdbm_options_init(&f->opts);
    if (tdbm_option_list(&f->opts, opts, why, whylen))
        return "the options";
    if (tdbm_source_open(&f->src, f->arr, &f->opts, why, whylen))
        return "tdbm_source_open";
    memset(&cfg, 0, sizeof cfg);
    cfg.rw = rw;
    cfg.uid = getuid();
    cfg.gid = getgid();
    cfg.log = on_log;
    cfg.inval = on_inval;
    if (tdbm_mount_new(&f->m, &f->src, &f->opts, &cfg))
        return "tdbm_mount_new";
    if (tdbm_mount_staging(f->m, why, whylen))
        return "tdbm_mount_staging";
    return NULL;
}

/* Builds fixture f: an empty array on disk with the schema of corpus case
 * `name`, mounted rw, with the options `more` too ("" or ",a=b...").
 * @return NULL, or the step that failed (with the reason, when there is
 * one, in why). */
const char *fx_build(struct fixture *f, const char *name,
                     const char *more, char *why, size_t whylen)
{
    char path[1024], opt[256];
    struct tdb_io src, dst;
    const char *step = fx_dir(f);

    if (step)
        return step;
    snprintf(path, sizeof path, "%s/%s/array", unit_corpus(), name);
    if (tdb_io_posix(&src, path))
        return "the corpus array";
    if (tdb_io_posix(&dst, f->arr)) {
        tdb_io_free(&src);
        return "the array's folder";
    }
    mkdir(f->arr, 0700);
    int r = unit_copy_tree(&src, "__schema", &dst, "__schema");
    dst.ops->mkdir(dst.ctx, "__fragments");
    dst.ops->mkdir(dst.ctx, "__commits");
    dst.ops->mkdir(dst.ctx, "__meta");
    tdb_io_free(&src);
    tdb_io_free(&dst);
    if (r) {
        snprintf(why, whylen, "cannot copy %s/__schema", path);
        return "the schema";
    }
    snprintf(opt, sizeof opt, "rw,staging_dir=%s/stg%s", f->dir, more);
    return fx_mount(f, opt, true, why, whylen);
}

void fx_close(struct fixture *f)
{
    char cmd[128];
    tdbm_mount_free(f->m);
    tdbm_source_close(&f->src);
    tdbm_options_free(&f->opts);
    if (f->dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        CHECK_EQ_INT(system(cmd), 0);
    }
}

/* The end of a fixture's set-up: true when no step failed; else the
 * running test fails saying which step and why, and f is closed. */
bool fx_done(struct fixture *f, const char *name, const char *step,
             const char *why)
{
    if (!step)
        return true;
    fprintf(stderr, "FAIL %s: fixture %s: %s%s%s\n", unit_cur, name, step,
            why[0] ? ": " : "", why);
    unit_cur_failed = 1;
    fx_close(f);
    return false;
}

/* Sets up fixture f (see fx_build) with the options `more` ("" or
 * ",a=b...").  @return true; false when it could not be set up: the
 * running test has then failed, saying why, and must return without
 * touching f. */
bool fx_setup_with(struct fixture *f, const char *name,
                   const char *more)
{
    char why[1200] = "";

    memset(f, 0, sizeof *f);
    logbuf[0] = '\0';
    invals = 0;
    return fx_done(f, name, fx_build(f, name, more, why, sizeof why), why);
}

bool fx_setup(struct fixture *f, const char *name)
{
    return fx_setup_with(f, name, "");
}

/* The inode of `name` in `parent` (0 when missing), counted as a lookup. */
uint64_t look(struct tdbm_mount *m, uint64_t parent, const char *name)
{
    struct tdbm_entry e;
    return tdbm_lookup(m, parent, name, &e) == 0 ? e.ino : 0;
}

/* tdbm_read copied into buf (a sink that only copies). */
int mount_read(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t off,
               void *buf, size_t size, size_t *got)
{
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
    int rc = tdbm_read(m, h, off, size, &s);
    *got = s.got;
    tdb_sink_release(&s);
    return rc;
}

/* All the bytes of file `ino` through a handle of its own. */
size_t slurp(struct tdbm_mount *m, uint64_t ino, void *buf, size_t cap)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h;
    size_t got = 0;
    if (tdbm_open(m, ino, O_RDONLY, &h, &oi) != 0)
        return (size_t)-1;
    if (mount_read(m, h, 0, buf, cap, &got) != 0)
        got = (size_t)-1;
    tdbm_release(m, h);
    return got;
}

/* Creates staged file dir/name holding `len` bytes. */
void stage(struct tdbm_mount *m, uint64_t dir, const char *name,
           const void *p, size_t len)
{
    struct tdbm_created c;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    size_t done = 0;
    CHECK_EQ_INT(tdbm_create(m, dir, name, O_WRONLY | O_CREAT | O_TRUNC, 0600,
                             &c), 0);
    e = c.e;
    h = c.h;
    CHECK(e.ino & TDBM_STAGING_BIT);
    CHECK_EQ_INT(tdbm_write(m, h, p, len, 0, &done), 0);
    CHECK_EQ_INT(done, len);
    tdbm_release(m, h);
    tdbm_forget(m, e.ino, 1);
}

/* A metadata file __meta/name written with `len` bytes of type `type`
 * (NULL: none set); @return the flush's result. */
int meta_put(struct tdbm_mount *m, const char *name, const char *type,
             const void *p, size_t len)
{
    struct tdbm_created c;
    struct tdbm_handle *h;
    struct tdbm_entry e;
    size_t done = 0;
    uint64_t meta = look(m, TDBM_ROOT_INO, "__meta");
    int rc = tdbm_create(m, meta, name, O_WRONLY | O_CREAT | O_TRUNC, 0644,
                         &c);
    tdbm_forget(m, meta, 1);
    if (rc)
        return rc;
    e = c.e;
    h = c.h;
    CHECK(c.oi.direct_io);
    if (type)
        CHECK_EQ_INT(tdbm_setxattr(m, e.ino, TDBM_DATATYPE_XATTR, type,
                                   strlen(type), false), 0);
    CHECK_EQ_INT(tdbm_write(m, h, p, len, 0, &done), 0);
    rc = tdbm_flush(m, h);
    tdbm_release(m, h);
    tdbm_forget(m, e.ino, 1);
    return rc;
}

/* How many metadata files the array has on disk. */
size_t meta_files(const struct fixture *f)
{
    struct tdb_names n;
    struct tdb_io io;
    size_t k = (size_t)-1;
    if (tdb_io_posix(&io, f->arr) == 0 &&
        tdb_io_names(&io, "__meta", &n, NULL) == 0) {
        k = n.n;
        tdb_names_free(&n);
    }
    tdb_io_free(&io);
    return k;
}
