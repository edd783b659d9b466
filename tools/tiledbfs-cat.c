/* tiledbfs-cat.c: the whole mount contract without FUSE: prints what the mount shows at one path. */
/*
 *   tiledbfs-cat [-o OPTIONS] [-x] SOURCE PATH
 *
 * A file: its bytes on stdout, exactly what `cat MOUNT/PATH` gives.
 * A folder: its entries, one name per line.
 * -x: instead, the extended attributes of PATH, one "name=value" per line.
 * Errors: one line on stderr, exit status 1.
 */
#include <errno.h>
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
            "Prints the bytes that tiledbfs shows at PATH of a mounted SOURCE\n"
            "(a TileDB array or group folder); a folder's entries one a line.\n"
            "  -x          print PATH's extended attributes as name=value\n"
            "  -o OPTIONS  comma-separated: timestamp=T|T1:T2, cache_size=N[KMG],\n"
            "              key_file=PATH, rw, staging_dir=PATH\n"
            "  -h, --help     this text\n"
            "  -V, --version  print the version\n",
            program_invocation_short_name);
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

static int tdbcat_file(struct tdb_fs *fs, const char *path, uint64_t ino)
{
    struct tdb_error err;
    struct tdb_reader *rd = NULL;
    uint64_t off = 0;
    char *buf = malloc(TDBCLI_READ_MAX);
    int rc = -1;
    int st;

    tdbcli_error_clear(&err);
    if (!buf || (st = tdb_reader_open(&rd, fs, ino, &err)) < 0) {
        tdbcli_report(path, buf ? st : TDB_E_NOMEM, buf ? &err : NULL);
        free(buf);
        return -1;
    }
    for (;;) {
        size_t got = 0;

        tdbcli_error_clear(&err);
        st = tdb_reader_read(rd, off, buf, TDBCLI_READ_MAX, &got, &err);
        if (st < 0) {
            tdbcli_report(path, st, &err);
            goto out;
        }
        if (got > 0 && tdbcat_write(buf, got) < 0)
            goto out;
        if (got < TDBCLI_READ_MAX)
            break;
        off += got;
    }
    rc = 0;
out:
    tdb_reader_close(rd);
    free(buf);
    return rc;
}

static int tdbcat_folder(struct tdb_fs *fs, const char *path, uint64_t ino)
{
    struct tdb_error err;

    for (uint64_t i = 0;; i++) {
        const char *name;
        uint64_t child;
        int st;

        tdbcli_error_clear(&err);
        st = tdb_fs_readdir(fs, ino, i, &name, &child, &err);
        if (st == TDB_E_NOENT)
            return 0;
        if (st < 0) {
            tdbcli_report(path, st, &err);
            return -1;
        }
        if (tdbcat_write(name, strlen(name)) < 0 || tdbcat_write("\n", 1) < 0)
            return -1;
    }
}

static int tdbcat_xattrs(struct tdb_fs *fs, const char *path, uint64_t ino)
{
    for (size_t i = 0;; i++) {
        const char *name;
        size_t size;
        char *val;
        int st;

        if (tdb_fs_listxattr(fs, ino, i, &name) < 0)
            return 0; /* past the last one (a folder has none) */
        st = tdb_fs_getxattr(fs, ino, name, NULL, 0, &size);
        if (st < 0) {
            tdbcli_report(path, st, NULL);
            return -1;
        }
        val = malloc(size + 1);
        if (!val) {
            tdbcli_report(path, TDB_E_NOMEM, NULL);
            return -1;
        }
        st = tdb_fs_getxattr(fs, ino, name, val, size, &size);
        if (st < 0) {
            tdbcli_report(path, st, NULL);
        } else {
            /* name=value: the values are short ASCII strings */
            val[size] = '\n';
            if (tdbcat_write(name, strlen(name)) < 0 ||
                tdbcat_write("=", 1) < 0 || tdbcat_write(val, size + 1) < 0)
                st = -1;
        }
        free(val);
        if (st < 0)
            return -1;
    }
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
    struct tdb_error err;
    struct tdb_stat st;
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
    tdbcli_error_clear(&err);
    rc = tdb_fs_resolve(src.fs, path, &ino, &err);
    if (rc == 0)
        rc = tdb_fs_stat(src.fs, ino, &st, &err);
    if (rc < 0) {
        tdbcli_report(path, rc, &err);
        goto out_close;
    }
    if (xattrs)
        rc = tdbcat_xattrs(src.fs, path, ino);
    else if (st.is_dir)
        rc = tdbcat_folder(src.fs, path, ino);
    else
        rc = tdbcat_file(src.fs, path, ino);
    ret = rc < 0;
out_close:
    tdbm_source_close(&src);
out:
    tdbm_options_free(&opts);
    return ret;
}
