/* tiledbfs-create.c: creates an empty TileDB array (format version 22) from a schema JSON, the "schema" of __array.json. */
/*
 *   tiledbfs-create [-o OPTIONS] SCHEMA.json ARRAY
 *   tiledbfs-create [-o OPTIONS] --evolve EVOLUTION.json ARRAY
 *
 * SCHEMA.json is the "schema" object of a mounted array's __array.json, or
 * the whole __array.json ("-" reads standard input).  ARRAY (a folder, or
 * s3://BUCKET/PREFIX, azure://CONTAINER/PREFIX, gs://BUCKET/PREFIX) must
 * not exist or be empty.  With key_file= the array is encrypted with that
 * AES-256-GCM key; endpoint=, account=, region=, profile=,
 * credentials_file=, config_file= and the s3_* options say how to reach
 * an object-store ARRAY, as for tiledbfs.  With --evolve, ARRAY exists
 * and its schema is evolved as EVOLUTION.json says (docs/SCHEMA.md
 * "Evolution": attributes added and dropped), as TileDB's schema
 * evolution does.  Errors: one line on stderr, exit status 1.
 */
#include <errno.h>
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

#define TDBCREATE_JSON_MAX (64u << 20)  /* a schema JSON is small */

static void tdbcreate_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [-o OPTIONS] SCHEMA.json ARRAY\n"
            "       %s [-o OPTIONS] --evolve EVOLUTION.json ARRAY\n"
            "Creates an empty TileDB array at ARRAY (a missing or empty "
            "folder, or\ns3://BUCKET/PREFIX, azure://CONTAINER/PREFIX or "
            "gs://BUCKET/PREFIX with\nno objects under it) "
            "from SCHEMA.json: the \"schema\" object of a mounted\n"
            "array's __array.json, or the whole __array.json (\"-\": "
            "standard input).\n"
            "A \"datatype\" is TileDB's name "
            "(FLOAT64, INT32, STRING_UTF8, ...) or numpy's\n(float64, int32, "
            "bool, datetime64[ns], <f8, |u1, ...); the source's\n"
            "docs/SCHEMA.md lists them.\n"
            "  --evolve          evolve the schema of the existing ARRAY as "
            "EVOLUTION.json\n"
            "                    says: {\"add_attributes\": [ATTR, ...], "
            "\"drop_attributes\":\n"
            "                    [NAME, ...]} (docs/SCHEMA.md "
            "\"Evolution\")\n"
            "  -o key_file=PATH  encrypt the array with this 32-byte "
            "AES-256-GCM key\n"
            "  -o endpoint=URL,account=NAME,region=NAME,profile=NAME,\n"
            "     credentials_file=PATH,config_file=PATH\n"
            "                    where and as whom an object-store ARRAY "
            "is written\n"
            "                    (as for tiledbfs; default: the "
            "environment, ~/.aws)\n"
            "  -o s3_requests=N,s3_timeout=SECS,s3_retries=N,"
            "s3_part_size=N[KMG]\n"
            "                    how it is written (as for tiledbfs)\n"
            "  -h, --help        this text\n"
            "  -V, --version     print the version\n",
            program_invocation_short_name, program_invocation_short_name);
}

/* Prints "PROG: WHAT: message" on one line. */
static void tdbcreate_say(const char *what, const char *msg)
{
    struct tdb_error e;
    e.code = TDB_E_INVAL;
    snprintf(e.msg, sizeof e.msg, "%s", msg);
    tdbcli_report(what, TDB_E_INVAL, &e);
}

/* Reads all of `path` ("-": stdin).  @return 0 or -1 after an error. */
static int tdbcreate_slurp(const char *path, char **out, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 0, n = 0;
    char *b = NULL;

    if (!f) {
        tdbcreate_say(path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (n == cap) {
            char *nb;
            cap = cap ? cap * 2 : 4096;
            if (cap > TDBCREATE_JSON_MAX || !(nb = realloc(b, cap + 1))) {
                tdbcreate_say(path, cap > TDBCREATE_JSON_MAX
                                        ? "larger than 64 MiB: not a schema"
                                        : strerror(ENOMEM));
                goto fail;
            }
            b = nb;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                tdbcreate_say(path, strerror(errno ? errno : EIO));
                goto fail;
            }
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    b[n] = '\0';
    *out = b;
    *len = n;
    return 0;
fail:
    if (f != stdin)
        fclose(f);
    free(b);
    return -1;
}

/* The storage of ARRAY: a folder (missing or a folder), or an s3:// URL
 * whose bucket answers.  @return 0 or -1 after printing an error. */
static int tdbcreate_open(struct tdb_io *io, const char *array,
                          const struct tdbm_options *o)
{
    struct stat st;

    if (tdb_io_is_url(array))
        return tdbcli_open_url(io, array, o, true);
    if (stat(array, &st) == 0 && !S_ISDIR(st.st_mode)) {
        tdbcreate_say(array, "exists and is not a folder");
        return -1;
    }
    if (tdb_io_posix(io, array) < 0) {
        tdbcreate_say(array, strerror(ENOMEM));
        return -1;
    }
    return 0;
}

/* The options that apply, besides the S3 ones. */
static const char *const tdbcreate_opts[] = {"key_file", NULL};

static const struct option tdbcreate_longopts[] = {
    {"evolve", no_argument, NULL, 'e'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct tdbcreate_args {
    struct tdbm_options opts;
    bool evolve;
    const char *json_path, *array;
};

/* Reads the command line into a.  @return 0 to go on, 1 when it is done
 * (--help, --version), -1 after printing an error. */
static int tdbcreate_parse(int argc, char *argv[], struct tdbcreate_args *a)
{
    int c;
    while ((c = getopt_long(argc, argv, "o:hV", tdbcreate_longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            /* The shared parser reads the key and the S3 options. */
            if (tdbcli_option_list_only(&a->opts, optarg, tdbcreate_opts,
                                        tdbcli_s3_options,
                                        "creating an array") < 0)
                return -1;
            break;
        case 'e':
            a->evolve = true;
            break;
        case 'V':
            printf("tiledbfs-create " PACKAGE_VERSION "\n");
            return 1;
        case 'h':
            tdbcreate_usage(stdout);
            return 1;
        default:
            tdbcreate_usage(stderr);
            return -1;
        }
    }
    if (argc - optind != 2) {
        tdbcreate_usage(stderr);
        return -1;
    }
    a->json_path = argv[optind];
    a->array = argv[optind + 1];
    return 0;
}

/* --evolve: evolves the schema of a->array as text[0..len) says.
 * @return 0 or -1 after printing an error. */
static int tdbcreate_evolve(const struct tdbcreate_args *a, const char *text,
                            size_t len)
{
    struct tdb_io io = {0};
    struct tdb_error err;
    char *name = NULL;
    int rc = tdb_io_is_url(a->array)
                 ? tdbcli_open_url(&io, a->array, &a->opts, false)
                 : tdb_io_posix(&io, a->array);
    if (rc < 0) {
        if (!tdb_io_is_url(a->array))
            tdbcreate_say(a->array, strerror(ENOMEM));
        tdb_io_free(&io);
        return -1;
    }
    tdb_error_clear(&err);
    rc = tdb_schema_evolve(&io, text, len,
                           &(struct tdb_commit_options){a->opts.open.key, 0},
                           &name, &err);
    free(name);
    if (rc < 0)
        tdbcli_report(a->array, rc, &err);
    tdb_io_free(&io);
    return rc < 0 ? -1 : 0;
}

/* Creates a->array of the schema text[0..len) says.  @return 0 or -1
 * after printing an error. */
static int tdbcreate_create(const struct tdbcreate_args *a, const char *text,
                            size_t len)
{
    struct tdb_schema *schema = NULL;
    struct tdb_error err;
    struct tdb_io io = {0};
    int ret = -1;
    tdb_error_clear(&err);
    int rc = tdb_schema_from_json(text, len, &schema, &err);
    if (rc < 0) {
        tdbcli_report(a->json_path, rc, &err);
        goto out;
    }
    if (tdbcreate_open(&io, a->array, &a->opts) < 0)
        goto out;
    tdb_error_clear(&err);
    rc = tdb_array_create(&io, schema, a->opts.open.key, 0, &err);
    if (rc < 0) {
        tdbcli_report(a->array, rc, &err);
        goto out;
    }
    ret = 0;
out:
    tdb_io_free(&io);
    tdb_schema_free(schema);
    return ret;
}

int main(int argc, char *argv[])
{
    struct tdbcreate_args a = {.evolve = false};
    char *text = NULL;
    size_t len = 0;
    int ret = 1;

    tdbm_options_init(&a.opts);
    int p = tdbcreate_parse(argc, argv, &a);
    if (p)
        ret = p > 0 ? 0 : 1;
    else if (tdbcreate_slurp(a.json_path, &text, &len) == 0)
        ret = (a.evolve ? tdbcreate_evolve(&a, text, len)
                        : tdbcreate_create(&a, text, len)) < 0;
    free(text);
    tdbm_options_free(&a.opts);
    return ret;
}
