/* tiledbfs-copy.c: copies a TileDB array or group, file by file, between folders and object storage (an upload of a local array to S3, Azure Blob Storage or Cloud Storage, or back), with tdb_array_copy. */
/*
 *   tiledbfs-copy [-o OPTIONS] SRC DST
 *
 * SRC is an array or group folder or an object store's prefix
 * (s3://BUCKET/PREFIX, azure://CONTAINER/PREFIX, gs://BUCKET/PREFIX); DST
 * a missing or empty folder, or such a prefix with no objects.  Every file
 * is copied byte for byte (an encrypted array needs no key), the commit
 * files last, so a mount of DST with -o refresh= sees whole fragments
 * only.  A local SRC is read without following symbolic links (a link
 * inside it is an error).  What SRC's listings show is checked against the
 * array's own references before anything is written, and DST's references
 * against SRC's once copied (tdb_array_copy).  A DST inside SRC is refused
 * before anything is opened.  -o takes the object-store options of
 * tiledbfs (endpoint=, account=, region=, profile=, credentials_file=,
 * config_file=, s3_requests=, s3_timeout=, s3_retries=, s3_part_size=),
 * for both ends, and key_file= (an encrypted array's key, for the check
 * only).  Errors: one line on stderr, exit status 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
            "Copies the TileDB array or group SRC (a folder, "
            "s3://BUCKET/PREFIX,\n"
            "azure://CONTAINER/PREFIX or gs://BUCKET/PREFIX) to DST (a "
            "missing or empty\n"
            "folder, or such a prefix with no objects), file by file, the "
            "commit files\n"
            "last, checked against the array's references.\n"
            "  -o endpoint=URL,account=NAME,region=NAME,profile=NAME,\n"
            "     credentials_file=PATH,config_file=PATH\n"
            "                 where and as whom the object-store ends are "
            "reached (as\n"
            "                 for tiledbfs; default: the environment, "
            "~/.aws)\n"
            "  -o s3_requests=N,s3_timeout=SECS,s3_retries=N,"
            "s3_part_size=N[KMG]\n"
            "                 how they are reached (as for tiledbfs)\n"
            "  -o key_file=PATH  the 32-byte AES-256-GCM key of an encrypted "
            "array, for\n"
            "                 the check to read its fragment metadata (the "
            "bytes are\n"
            "                 copied as they are, with or without it)\n"
            "  -v             print what was copied: \"N files, B bytes\"\n"
            "                 (and how many the source's listings left out)\n"
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

/* The last component of `p` taken off ("a/b/" -> "a", "a" -> ".",
 * "/a" -> "/"), in place. */
static void tdbcopy_parent(char *p)
{
    size_t l = strlen(p);
    while (l > 1 && p[l - 1] == '/')
        l--;
    while (l && p[l - 1] != '/')
        l--;
    while (l > 1 && p[l - 1] == '/')
        l--;
    if (!l)
        strcpy(p, ".");
    else
        p[l] = 0;
}

/* Whether the local folder `dst` is the folder `src` or lies inside it:
 * from dst (or the nearest of its parents that exists), each ".." up to
 * the root is compared with src by device and inode, so that no symbolic
 * link nor ".." in either path hides it.  @return 1 inside, 0 not, -1
 * after printing an error. */
static int tdbcopy_local_inside(const char *src, const char *dst)
{
    struct stat ss, st;
    char *p = strdup(dst);
    int fd = -1, ret = -1;

    if (!p) {
        tdbcli_report_errno(dst, -ENOMEM);
        return -1;
    }
    if (stat(src, &ss) < 0) {
        tdbcli_report_errno(src, -errno);
        goto out;
    }
    while ((fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        if (errno != ENOENT || !strcmp(p, ".") || !strcmp(p, "/")) {
            ret = 0;    /* not a folder: the copy's own checks say so */
            goto out;
        }
        tdbcopy_parent(p);
    }
    for (;;) {
        if (fstat(fd, &st) < 0) {
            tdbcli_report_errno(dst, -errno);
            goto out;
        }
        if (st.st_dev == ss.st_dev && st.st_ino == ss.st_ino) {
            ret = 1;
            goto out;
        }
        int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat su;
        if (up < 0 || fstat(up, &su) < 0) {
            tdbcli_report_errno(dst, -errno);
            if (up >= 0)
                close(up);
            goto out;
        }
        close(fd);
        fd = up;
        if (su.st_dev == st.st_dev && su.st_ino == st.st_ino) {
            ret = 0;    /* the root */
            goto out;
        }
    }
out:
    if (fd >= 0)
        close(fd);
    free(p);
    return ret;
}

/* The bucket of s3:// `url` and its prefix without a leading or trailing
 * '/' (as the S3 backend names keys). */
static void tdbcopy_url_split(const char *url, const char **bucket,
                              size_t *bl, const char **prefix, size_t *pl)
{
    const char *sep = strstr(url, "://");
    const char *b = sep ? sep + 3 : url, *slash = strchr(b, '/');
    *bucket = b;
    *bl = slash ? (size_t)(slash - b) : strlen(b);
    const char *q = slash ? slash : b + *bl;
    while (*q == '/')
        q++;
    size_t l = strlen(q);
    while (l && q[l - 1] == '/')
        l--;
    *prefix = q;
    *pl = l;
}

/* The store a URL names by its scheme: gs:// and gcs:// are one. */
static size_t tdbcopy_url_store(const char *url, const char **scheme)
{
    if (!strncmp(url, "gcs://", 6)) {
        *scheme = "gs";
        return 2;
    }
    *scheme = url;
    return (size_t)(strstr(url, "://") - url);
}

/* Whether URL `dst` is `src` or a prefix under it (same store, same
 * bucket; both ends are reached through the same endpoint). */
static bool tdbcopy_url_inside(const char *src, const char *dst)
{
    const char *sb, *sp, *db, *dp, *ss, *ds;
    size_t sbl, spl, dbl, dpl;
    size_t ssl = tdbcopy_url_store(src, &ss), dsl = tdbcopy_url_store(dst, &ds);

    if (ssl != dsl || memcmp(ss, ds, ssl))
        return false;
    tdbcopy_url_split(src, &sb, &sbl, &sp, &spl);
    tdbcopy_url_split(dst, &db, &dbl, &dp, &dpl);
    if (sbl != dbl || memcmp(sb, db, sbl))
        return false;
    return !spl || (dpl >= spl && !memcmp(sp, dp, spl) &&
                    (dpl == spl || dp[spl] == '/'));
}

/* Refuses a destination inside the source (the copy would copy itself
 * into itself), before anything is opened or written.  @return 0 or -1
 * after printing an error. */
static int tdbcopy_check_ends(const char *src, const char *dst)
{
    bool su = tdb_io_is_url(src), du = tdb_io_is_url(dst);
    int inside = 0;

    if (su && du)
        inside = tdbcopy_url_inside(src, dst);
    else if (!su && !du && (inside = tdbcopy_local_inside(src, dst)) < 0)
        return -1;
    if (inside) {
        char msg[512];
        snprintf(msg, sizeof msg, "the destination is inside the source "
                 "%.300s: nothing was copied", src);
        tdbcli_report_text(dst, msg);
        return -1;
    }
    return 0;
}

/* Beside the S3 options: the key the check reads encrypted metadata with. */
static const char *const tdbcopy_opts[] = {"key_file", NULL};

static const struct option tdbcopy_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct tdbcopy_args {
    struct tdbm_options opts;
    bool verbose;
    const char *src, *dst;
};

/* Reads the command line into a.  @return 0 to go on, 1 when it is done
 * (--help, --version), -1 after printing an error. */
static int tdbcopy_parse(int argc, char *argv[], struct tdbcopy_args *a)
{
    int c;
    while ((c = getopt_long(argc, argv, "o:vhV", tdbcopy_longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'o':
            if (tdbcli_option_list_only(&a->opts, optarg, tdbcli_s3_options,
                                        tdbcopy_opts, "copying") < 0)
                return -1;
            break;
        case 'v':
            a->verbose = true;
            break;
        case 'V':
            printf("tiledbfs-copy " PACKAGE_VERSION "\n");
            return 1;
        case 'h':
            tdbcopy_usage(stdout);
            return 1;
        default:
            tdbcopy_usage(stderr);
            return -1;
        }
    }
    if (argc - optind != 2) {
        tdbcopy_usage(stderr);
        return -1;
    }
    a->src = argv[optind];
    a->dst = argv[optind + 1];
    return 0;
}

/* Copies a->src to a->dst; with a->verbose, says how much.  @return 0 or
 * -1 after printing an error. */
static int tdbcopy_run(const struct tdbcopy_args *a)
{
    struct tdb_copy_stats st;
    struct tdb_io src = {0}, dst = {0};
    struct tdb_error err;
    int rc = -1;
    if (tdbcopy_check_ends(a->src, a->dst) < 0 ||
        tdbcopy_open(&src, a->src, false, &a->opts) < 0 ||
        tdbcopy_open(&dst, a->dst, true, &a->opts) < 0)
        goto out;
    tdb_error_clear(&err);
    rc = tdb_array_copy(&src, &dst, a->opts.open.key, &st, &err);
    if (rc < 0) {
        tdbcli_report(NULL, rc, &err);
        goto out;
    }
    if (a->verbose && st.unlisted)
        printf("%llu files, %llu bytes (%llu not in the source's listings, "
               "found through the array's references)\n",
               (unsigned long long)st.files, (unsigned long long)st.bytes,
               (unsigned long long)st.unlisted);
    else if (a->verbose)
        printf("%llu files, %llu bytes\n", (unsigned long long)st.files,
               (unsigned long long)st.bytes);
out:
    tdb_io_free(&src);
    tdb_io_free(&dst);
    return rc < 0 ? -1 : 0;
}

int main(int argc, char *argv[])
{
    struct tdbcopy_args a = {.verbose = false};
    int ret = 1;

    tdbm_options_init(&a.opts);
    int p = tdbcopy_parse(argc, argv, &a);
    if (p)
        ret = p > 0 ? 0 : 1;
    else
        ret = tdbcopy_run(&a) < 0;
    tdbm_options_free(&a.opts);
    return ret;
}
