/* cli.h: the printing side of the mount contract's "Command" section, for tiledbfs-cat, tiledbfs-create and tiledbfs-copy. */
/*
 * The options and SOURCE are parsed and opened by the mount layer
 * (../mount/mount.h: one typed option table for every front end); this
 * module prints every error as one line "PROGRAM: WHAT: message" on
 * stderr.  It includes no FUSE header.
 */
#ifndef TDBCLI_H
#define TDBCLI_H

#include "tiledb_format.h"
#include "../mount/mount.h"

#define TDBCLI_READ_MAX TDBM_IO_MAX /* bytes per read of a front end */

/* Applies a comma-separated list "name[=value],..." (one -o argument);
 * an unknown name is an error.  @return 0 or -1 after printing an error. */
int tdbcli_option_list(struct tdbm_options *o, const char *list);

/* The S3 options (endpoint=, region=, profile=, credentials_file=,
 * config_file=), NULL-terminated: for tdbcli_option_list_only. */
extern const char *const tdbcli_s3_options[];

/* tdbcli_option_list, where only the options named in `allowed` (then in
 * `more`, NULL-terminated; either may be NULL) apply: another is an error
 * saying that `what` takes these.  @return 0 or -1 after printing it. */
int tdbcli_option_list_only(struct tdbm_options *o, const char *list,
                            const char *const *allowed,
                            const char *const *more, const char *what);

/* Opens s3:// `url` with the S3 options of `o` (tdb_io_open_url_with;
 * `create`: the prefix may hold nothing yet).  @return 0 or -1 after
 * printing an error. */
int tdbcli_open_url(struct tdb_io *io, const char *url,
                    const struct tdbm_options *o, bool create);

/* tdbm_source_open, printing "PROG: SOURCE: message" on failure.
 * @return 0 or -1. */
int tdbcli_open(struct tdbm_source *s, const char *source,
                const struct tdbm_options *o);

/* Prints "PROG: WHAT: message" on stderr for a failed engine call. */
void tdbcli_report(const char *what, int code, const struct tdb_error *err);

/* Prints "PROG: WHAT: MSG". */
void tdbcli_report_text(const char *what, const char *msg);

/* Prints "PROG: WHAT: message" (WHAT may be NULL) for a failed call of
 * the mount layer (a negative errno). */
void tdbcli_report_errno(const char *what, int neg_errno);

#endif
