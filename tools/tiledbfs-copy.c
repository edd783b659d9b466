/* tiledbfs-copy.c: copies a TileDB array or group, file by file, between folders and object storage (an upload of a local array to S3, or back), with tdb_array_copy. */
/*
 *   tiledbfs-copy [-o OPTIONS] SRC DST
 *
 * SRC is an array or group folder or s3://BUCKET/PREFIX; DST a missing or
 * empty folder, or an s3:// prefix with no objects.  Every file is copied
 * byte for byte (an encrypted array needs no key), the commit files last,
 * so a mount of DST with -o refresh= sees whole fragments only.  A local
 * SRC is read without following symbolic links (a link inside it is an
 * error).  -o takes the S3 options of tiledbfs (endpoint=, region=,
 * profile=, credentials_file=, config_file=), for both ends.  Errors: one
 * line on stderr, exit status 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tiledb_format_write.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "(unknown version)"
#endif

static void tdbcopy_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [-o OPTIONS] SRC DST\n"
            "Copies the TileDB array or group SRC (a folder or "
            "s3://BUCKET/PREFIX) to DST\n"
            "(a missing or empty folder, or an s3:// prefix with no "
            "objects), file by\n"
            "file, the commit files last.\n"
            "  -o endpoint=URL,region=NAME,profile=NAME,credentials_file="
            "PATH,\n     config_file=PATH\n"
            "                 where and as whom s3:// ends are reached (as "
            "for tiledbfs;\n"
            "                 default: the environment, ~/.aws)\n"
            "  -v             print what was copied: \"N files, B bytes\"\n"
            "  -h, --help     this text\n"
            "  -V, --version  print the version\n",
            program_invocation_short_name);
}

/* Opens one end: s3:// with the options (DST: the prefix may be empty),
 * a local SRC without following links, a local DST as a folder.
 * @return 0 or -1 after printing an error. */
static int tdbcopy_open(struct tdb_io *io, const char *where, bool dst,
                        const struct tdbm_options *o)
{
    int rc, fd;

    if (tdb_io_is_url(where))
        return tdbcli_open_url(io, where, o, dst);
    if (dst) {
        rc = tdb_io_posix(io, where);
    } else {
        fd = open(where, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            tdbcli_report_errno(where, -errno);
            return -1;
        }
        rc = tdb_io_posix_nofollow(io, fd);
        close(fd);
    }
    if (rc < 0) {
        tdbcli_report(where, rc, NULL);
        return -1;
    }
    return 0;
}

static const struct option tdbcopy_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

int main(int argc, char *argv[])
{
    struct tdbm_options opts;
    struct tdb_copy_stats st;
    struct tdb_io src = {0}, dst = {0};
    struct tdb_error err;
    bool verbose = false;
    int c, rc, ret = 1;

    tdbm_options_init(&opts);
    while ((c = getopt_long(argc, argv, "o:vhV", tdbcopy_longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'o':
            if (tdbcli_option_list_only(&opts, optarg, tdbcli_s3_options,
                                        NULL, "copying") < 0)
                goto out;
            break;
        case 'v':
            verbose = true;
            break;
        case 'V':
            printf("tiledbfs-copy " PACKAGE_VERSION "\n");
            ret = 0;
            goto out;
        case 'h':
            tdbcopy_usage(stdout);
            ret = 0;
            goto out;
        default:
            tdbcopy_usage(stderr);
            goto out;
        }
    }
    if (argc - optind != 2) {
        tdbcopy_usage(stderr);
        goto out;
    }
    if (tdbcopy_open(&src, argv[optind], false, &opts) < 0 ||
        tdbcopy_open(&dst, argv[optind + 1], true, &opts) < 0)
        goto out;
    tdb_error_clear(&err);
    rc = tdb_array_copy(&src, &dst, &st, &err);
    if (rc < 0) {
        tdbcli_report(NULL, rc, &err);
        goto out;
    }
    if (verbose)
        printf("%llu files, %llu bytes\n", (unsigned long long)st.files,
               (unsigned long long)st.bytes);
    ret = 0;
out:
    tdb_io_free(&src);
    tdb_io_free(&dst);
    tdbm_options_free(&opts);
    return ret;
}
