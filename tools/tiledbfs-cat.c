/* tiledbfs-cat.c: the whole mount contract without FUSE: prints what the mount shows at one path, through the mount layer the daemon serves (mount/mount.h). */
/*
 *   tiledbfs-cat [-o OPTIONS] [-x] SOURCE PATH
 *
 * A file: its bytes on stdout, exactly what `cat MOUNT/PATH` gives.
 * A folder: its entries, one name per line.  SOURCE is a folder or an
 * object store's URL (s3://, azure://, gs://), opened as tiledbfs opens it.
 * -x: instead, the extended attributes of PATH, one "name=value" per line.
 * Errors: one line on stderr, exit status 1.
 *
 * SOURCE is opened and served by the mount layer, as tiledbfs serves it
 * (the same tree, names, options and read path: tdbm_resolve, tdbm_open,
 * tdbm_read, tdbm_opendir, tdbm_listxattr), so what this prints is what
 * the mount shows by construction.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "(unknown version)"
#endif

static void tdbcat_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [-o OPTIONS] [-x] SOURCE PATH\n"
            "Prints the bytes that tiledbfs shows at PATH of a mounted "
            "SOURCE\n"
            "(a TileDB array or group folder, s3://BUCKET/PREFIX,\n"
            "azure://CONTAINER/PREFIX or gs://BUCKET/PREFIX); a folder's "
            "entries one\na line.\n"
            "  -x             print PATH's extended attributes as "
            "name=value\n"
            "  -h, --help     this text\n"
            "  -V, --version  print the version\n"
            "  -o OPTIONS     comma-separated, those of tiledbfs (the ones "
            "only the\n"
            "                 daemon uses, such as rw or uid=, are taken "
            "and change\n"
            "                 nothing printed):\n",
            program_invocation_short_name);
    tdbm_options_usage(f);
}

/* Prints "PROG: WHAT: message" for a failed mount call: the engine's
 * message the mount kept for it, else strerror.  @return -1. */
static int tdbcat_fail(struct tdbm_mount *m, const char *what, int neg_errno)
{
    struct tdb_error err;

    if (tdbm_error_take(m, &err))
        tdbcli_report_text(what, err.msg);
    else
        tdbcli_report_errno(what, neg_errno);
    return -1;
}

/* Writes all of buf to stdout.  @return 0 or -1 after printing an error. */
static int tdbcat_write(const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "%s: write error: %s\n",
                    program_invocation_short_name, strerror(errno));
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A file: read as the daemon reads it for `cat MOUNT/PATH`. */
static int tdbcat_file(struct tdbm_mount *m, const char *path, uint64_t ino)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h = NULL;
    uint64_t off = 0;
    char *buf = malloc(TDBCLI_READ_MAX);
    int rc;

    if (!buf)
        return tdbcat_fail(m, path, -ENOMEM);
    rc = tdbm_open(m, ino, O_RDONLY, &h, &oi);
    if (rc < 0) {
        free(buf);
        return tdbcat_fail(m, path, rc);
    }
    for (;;) {
        struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY, buf);
        size_t got;

        rc = tdbm_read(m, h, off, TDBCLI_READ_MAX, &s);
        got = s.got;
        tdb_sink_release(&s); /* a copy into buf lends nothing */
        if (rc < 0) {
            rc = tdbcat_fail(m, path, rc);
            break;
        }
        if (got > 0 && (rc = tdbcat_write(buf, got)) < 0)
            break;
        if (got < TDBCLI_READ_MAX)
            break;
        off += got;
    }
    tdbm_release(m, h);
    free(buf);
    return rc;
}

/* A folder: its entries as readdir gives them to `ls -f`. */
static int tdbcat_folder(struct tdbm_mount *m, const char *path, uint64_t ino)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h = NULL;
    int rc = tdbm_opendir(m, ino, &h, &oi);

    if (rc < 0)
        return tdbcat_fail(m, path, rc);
    for (uint64_t i = 0;; i++) {
        const char *name;
        uint64_t child;

        rc = tdbm_dir_entry(m, h, i, &name, &child, true);
        if (rc == 1) {
            rc = 0;
            break;
        }
        if (rc < 0) {
            rc = tdbcat_fail(m, path, rc);
            break;
        }
        if ((rc = tdbcat_write(name, strlen(name))) < 0 ||
            (rc = tdbcat_write("\n", 1)) < 0)
            break;
    }
    tdbm_release(m, h);
    return rc;
}

/* The extended attributes, as listxattr and getxattr give them. */
static int tdbcat_xattrs(struct tdbm_mount *m, const char *path, uint64_t ino)
{
    char *names = NULL;
    size_t len = 0;
    int rc = tdbm_listxattr(m, ino, &names, &len);

    if (rc < 0)
        return tdbcat_fail(m, path, rc);
    for (size_t at = 0; at < len && rc == 0; at += strlen(names + at) + 1) {
        const char *name = names + at;
        char *val = NULL;
        size_t size = 0;

        rc = tdbm_getxattr(m, ino, name, &val, &size);
        if (rc < 0) {
            rc = tdbcat_fail(m, path, rc);
        } else if (tdbcat_write(name, strlen(name)) < 0 ||
                   tdbcat_write("=", 1) < 0 || tdbcat_write(val, size) < 0 ||
                   tdbcat_write("\n", 1) < 0) {
            /* name=value: the values are short ASCII strings */
            rc = -1;
        }
        free(val);
    }
    free(names);
    return rc;
}

static const struct option tdbcat_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct tdbcat_args {
    struct tdbm_options opts;
    bool xattrs;
    const char *source, *path;
};

/* Reads the command line into a.  @return 0 to go on, 1 when it is done
 * (--help, --version), -1 after printing an error. */
static int tdbcat_parse(int argc, char *argv[], struct tdbcat_args *a)
{
    int c;
    while ((c = getopt_long(argc, argv, "o:xhV", tdbcat_longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (tdbcli_option_list(&a->opts, optarg) < 0)
                return -1;
            break;
        case 'x':
            a->xattrs = true;
            break;
        case 'V':
            printf("tiledbfs-cat " PACKAGE_VERSION "\n");
            return 1;
        case 'h':
            tdbcat_usage(stdout);
            return 1;
        default:
            tdbcat_usage(stderr);
            return -1;
        }
    }
    if (argc - optind != 2) {
        tdbcat_usage(stderr);
        return -1;
    }
    a->source = argv[optind];
    a->path = argv[optind + 1];
    return 0;
}

/* Prints a->path of the mount of src: a file's bytes, a folder's names,
 * or (a->xattrs) its extended attributes.  @return 0 or -1 after
 * printing an error. */
static int tdbcat_run(struct tdbm_source *src, struct tdbcat_args *a)
{
    struct tdbm_config cfg;
    struct tdbm_mount *m = NULL;
    struct stat st;
    uint64_t ino;
    /* The daemon's mount, read-only: rw and staging_dir change nothing
     * that is printed. */
    memset(&cfg, 0, sizeof cfg);
    cfg.uid = getuid();
    cfg.gid = getgid();
    int rc = tdbm_mount_new(&m, src, &a->opts, &cfg);
    if (rc < 0) {
        tdbcli_report_errno(a->source, rc);
        tdbm_mount_free(m);
        return -1;
    }
    rc = tdbm_resolve(m, a->path, &ino, &st);
    if (rc < 0) {
        tdbcat_fail(m, a->path, rc);
        tdbm_mount_free(m);
        return -1;
    }
    if (a->xattrs)
        rc = tdbcat_xattrs(m, a->path, ino);
    else if (S_ISDIR(st.st_mode))
        rc = tdbcat_folder(m, a->path, ino);
    else
        rc = tdbcat_file(m, a->path, ino);
    tdbm_forget(m, ino, 1);
    tdbm_mount_free(m);
    return rc < 0 ? -1 : 0;
}

int main(int argc, char *argv[])
{
    struct tdbcat_args a = {.xattrs = false};
    struct tdbm_source src;
    int ret = 1;

    tdbm_options_init(&a.opts);
    memset(&src, 0, sizeof src);
    int p = tdbcat_parse(argc, argv, &a);
    if (p) {
        ret = p > 0 ? 0 : 1;
    } else if (tdbcli_open(&src, a.source, &a.opts) == 0) {
        ret = tdbcat_run(&src, &a) < 0;
        tdbm_source_close(&src);
    }
    tdbm_options_free(&a.opts);
    return ret;
}
