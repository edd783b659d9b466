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

int main(int argc, char *argv[])
{
    struct tdbm_options opts;
    struct tdbm_source src;
    struct tdbm_config cfg;
    struct tdbm_mount *m = NULL;
    struct stat st;
    const char *path;
    uint64_t ino;
    bool xattrs = false;
    int c, rc, ret = 1;

    tdbm_options_init(&opts);
    memset(&src, 0, sizeof src);
    while ((c = getopt_long(argc, argv, "o:xhV", tdbcat_longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (tdbcli_option_list(&opts, optarg) < 0)
                goto out;
            break;
        case 'x':
            xattrs = true;
            break;
        case 'V':
            printf("tiledbfs-cat " PACKAGE_VERSION "\n");
            ret = 0;
            goto out;
        case 'h':
            tdbcat_usage(stdout);
            ret = 0;
            goto out;
        default:
            tdbcat_usage(stderr);
            goto out;
        }
    }
    if (argc - optind != 2) {
        tdbcat_usage(stderr);
        goto out;
    }
    path = argv[optind + 1];

    if (tdbcli_open(&src, argv[optind], &opts) < 0)
        goto out;
    /* The daemon's mount, read-only: rw and staging_dir change nothing
     * that is printed. */
    memset(&cfg, 0, sizeof cfg);
    cfg.uid = getuid();
    cfg.gid = getgid();
    rc = tdbm_mount_new(&m, &src, &opts, &cfg);
    if (rc < 0) {
        tdbcli_report_errno(argv[optind], rc);
        goto out_close;
    }
    rc = tdbm_resolve(m, path, &ino, &st);
    if (rc < 0) {
        tdbcat_fail(m, path, rc);
        goto out_close;
    }
    if (xattrs)
        rc = tdbcat_xattrs(m, path, ino);
    else if (S_ISDIR(st.st_mode))
        rc = tdbcat_folder(m, path, ino);
    else
        rc = tdbcat_file(m, path, ino);
    tdbm_forget(m, ino, 1);
    ret = rc < 0;
out_close:
    tdbm_mount_free(m);
    tdbm_source_close(&src);
out:
    tdbm_options_free(&opts);
    return ret;
}
