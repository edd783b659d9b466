/* fixture.h: what the tests of the mount layer (tests/unit/mount/) share:
 * a mount of an empty array with a corpus case's schema in a temporary
 * folder, what it logged, and the calls of a file system's user over it
 * (look up, read whole, stage a file, write a metadata value).  In the
 * tests' library (fixture.c); the helpers fail the running test with
 * CHECK. */
#ifndef TDB_UNIT_MOUNT_FIXTURE_H
#define TDB_UNIT_MOUNT_FIXTURE_H

#include "../../../mount/mount.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The lines the mount logged since the last fx_setup, each ending in a
 * newline (cut at the buffer's size), and how many invalidations it
 * asked the kernel for. */
extern char logbuf[8192];
extern int invals;

/* The mount's log and invalidation callbacks (tdbm_config), which fill
 * logbuf and count invals. */
void on_log(void *arg, const char *line);
void on_inval(void *arg, char **names, size_t n);

struct fixture {
    char dir[64];
    char arr[128];
    struct tdbm_options opts;
    struct tdbm_source src;
    struct tdbm_mount *m;
};

/* A temporary folder DIR for f, its array to be DIR/arr.  @return NULL
 * or the step that failed. */
const char *fx_dir(struct fixture *f);

/* Mounts f->arr with the options `opts` (writable with `rw`).  @return
 * NULL, or the step that failed (with the reason in why). */
const char *fx_mount(struct fixture *f, const char *opts, bool rw,
                     char *why, size_t whylen);

/* Builds fixture f: an empty array on disk with the schema of corpus case
 * `name`, mounted rw, with the options `more` too ("" or ",a=b...").
 * @return NULL, or the step that failed (with the reason, when there is
 * one, in why). */
const char *fx_build(struct fixture *f, const char *name, const char *more,
                     char *why, size_t whylen);

/* Unmounts f and removes its folder. */
void fx_close(struct fixture *f);

/* The end of a fixture's set-up: true when no step failed; else the
 * running test fails saying which step and why, and f is closed. */
bool fx_done(struct fixture *f, const char *name, const char *step,
             const char *why);

/* Sets up fixture f (see fx_build) with the options `more` ("" or
 * ",a=b...").  @return true; false when it could not be set up: the
 * running test has then failed, saying why, and must return without
 * touching f. */
bool fx_setup_with(struct fixture *f, const char *name, const char *more);

/* fx_setup_with without more options. */
bool fx_setup(struct fixture *f, const char *name);

/* The inode of `name` in `parent` (0 when missing), counted as a lookup. */
uint64_t look(struct tdbm_mount *m, uint64_t parent, const char *name);

/* tdbm_read of h copied into buf (a sink that only copies): its status,
 * and in *got how many bytes. */
int mount_read(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t off,
               void *buf, size_t size, size_t *got);

/* All the bytes of file `ino` through a handle of its own: how many, or
 * (size_t)-1 when it cannot be opened or read. */
size_t slurp(struct tdbm_mount *m, uint64_t ino, void *buf, size_t cap);

/* Creates staged file dir/name holding `len` bytes. */
void stage(struct tdbm_mount *m, uint64_t dir, const char *name,
           const void *p, size_t len);

/* A metadata file __meta/name written with `len` bytes of type `type`
 * (NULL: none set); @return the flush's result. */
int meta_put(struct tdbm_mount *m, const char *name, const char *type,
             const void *p, size_t len);

/* How many metadata files the array has on disk ((size_t)-1 when they
 * cannot be listed). */
size_t meta_files(const struct fixture *f);

#endif
