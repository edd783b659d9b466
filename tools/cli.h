/* cli.h: the mount contract's "Command" section, shared by tiledbfs and tiledbfs-cat. */
/*
 * Both front ends accept the same options (-o timestamp=T|T1:T2,
 * cache_size=N[KMG], key_file=PATH, rw, staging_dir=PATH) and open SOURCE
 * the same way; this module does both, and prints every error as one line
 * "PROGRAM: WHAT: message" on stderr.  It includes no FUSE header.
 *
 * The key read from key_file is kept in struct tdbcli_options, never printed,
 * and wiped by tdbcli_options_free().
 */
#ifndef TDBCLI_H
#define TDBCLI_H

#include <stdbool.h>
#include <stdint.h>

#include "tiledb_format.h"

#define TDBCLI_KEY_BYTES 32
#define TDBCLI_READ_MAX (1u << 20) /* bytes per tdb_fs_read of a front end */

struct tdbcli_options {
    struct tdb_open_options open; /* open.key points to key[] once set */
    uint8_t key[TDBCLI_KEY_BYTES];
    bool rw;                      /* -o rw: enable __staging/ */
    char *staging_dir;            /* absolute, owned; NULL: none given */
};

/* An opened SOURCE. */
struct tdbcli_source {
    char *path;       /* absolute path of SOURCE, owned */
    struct tdb_io io;
    struct tdb_fs *fs;
};

/* Defaults: whole time range, no key, default cache, read-only. */
void tdbcli_options_init(struct tdbcli_options *o);

/* Wipes the key and frees what the options own.  Accepts a zeroed struct. */
void tdbcli_options_free(struct tdbcli_options *o);

/* Applies one option of the contract, `name` with `value` (NULL for a flag
 * such as rw).  @return 0; 1 when `name` is not an option of the contract
 * (nothing printed: the caller may hand it on, e.g. to FUSE); -1 after
 * printing a one-line error. */
int tdbcli_option(struct tdbcli_options *o, const char *name,
                  const char *value);

/* Applies a comma-separated list "name[=value],..." (one -o argument);
 * an unknown name is an error.  @return 0 or -1 after printing an error. */
int tdbcli_option_list(struct tdbcli_options *o, const char *list);

/* Opens SOURCE (an array or group folder) with a POSIX backend rooted at
 * its absolute path.  `o` must outlive the source (the engine may keep
 * o->open.key).  A key_file given for an array that is not encrypted is
 * an error.  @return 0, or -1 after printing "PROG: SOURCE: message". */
int tdbcli_open(struct tdbcli_source *s, const char *source,
                const struct tdbcli_options *o);

/* Closes what tdbcli_open opened; accepts a zeroed struct. */
void tdbcli_close(struct tdbcli_source *s);

/* Resets an error report before a call. */
void tdbcli_error_clear(struct tdb_error *err);

/* The message of a failed call: err->msg when the engine filled it, else
 * tdb_strerror(code). */
const char *tdbcli_error_text(int code, const struct tdb_error *err);

/* Prints "PROG: WHAT: message" on stderr for a failed engine call. */
void tdbcli_report(const char *what, int code, const struct tdb_error *err);

#endif
