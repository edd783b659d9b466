/* tiledbfs-consolidate.c: consolidates (and vacuums) a TileDB array's fragments, fragment metadata, commits and metadata, as TileDB's consolidation does, without TileDB. */
/*
 *   tiledbfs-consolidate [-o OPTIONS] [--mode=MODE[,MODE]] [--vacuum] [-v]
 *                        SOURCE
 *
 * SOURCE is an array folder or an object store's prefix
 * (s3://BUCKET/PREFIX, azure://CONTAINER/PREFIX, gs://BUCKET/PREFIX).
 * MODE is fragments (the live fragments merged into one, as TileDB's
 * default configuration merges them), fragment_meta (every live
 * fragment's footer in one __fragment_meta/ file, so an open reads one
 * file instead of one per fragment), commits (every commit in one
 * __commits/ .con file), array_meta (every metadata key in force in one
 * __meta/ file) or all (the four, in that order: the default; a mode that
 * does not apply to the array, commits below format 12, is then skipped
 * with a line saying so).
 * --vacuum then removes what each consolidation superseded.  Each file is
 * published whole and every removal leaves a file that still names what
 * it removed, so a reader sees the same cells at every step, and after a
 * kill the command can be run again.  -o takes key_file=, threads=,
 * cache_size= and the object-store options of tiledbfs (endpoint=,
 * account=, region=, profile=, credentials_file=, config_file= and the
 * s3_* ones).  -v prints one line per step.  Errors: one line on stderr,
 * exit status 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tiledb_format_write.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "(unknown version)"
#endif

/* The modes' calls, over one signature. */
static int tdbcons_frags(const struct tdb_io *io,
                         const struct tdb_cons_options *o,
                         struct tdb_cons_result *r, struct tdb_error *err)
{
    return tdb_consolidate_fragments(io, o, r, err);
}

static int tdbcons_frags_vac(const struct tdb_io *io,
                             const struct tdb_cons_options *o,
                             struct tdb_cons_result *r, struct tdb_error *err)
{
    return tdb_vacuum_fragments(io, o->key, r, err);
}

#define TDBCONS_KEYED(fn)                                                   \
    static int tdbcons_##fn(const struct tdb_io *io,                        \
                            const struct tdb_cons_options *o,               \
                            struct tdb_cons_result *r, struct tdb_error *err) \
    {                                                                       \
        return tdb_consolidate_##fn(io, o->key, r, err);                    \
    }                                                                       \
    static int tdbcons_##fn##_vac(const struct tdb_io *io,                  \
                                  const struct tdb_cons_options *o,         \
                                  struct tdb_cons_result *r,                \
                                  struct tdb_error *err)                    \
    {                                                                       \
        (void)o;                                                            \
        return tdb_vacuum_##fn(io, r, err);                                 \
    }
TDBCONS_KEYED(fragment_meta)
TDBCONS_KEYED(commits)
TDBCONS_KEYED(array_meta)

typedef int (*tdbcons_fn)(const struct tdb_io *,
                          const struct tdb_cons_options *,
                          struct tdb_cons_result *, struct tdb_error *);

/* The modes, in the order "all" runs them (TileDB's users' order:
 * fragments first, whose vacuum leaves the fewest footers and commits to
 * consolidate next). */
static const struct tdbcons_mode {
    const char *name;
    tdbcons_fn consolidate, vacuum;
} tdbcons_modes[] = {
    {"fragments", tdbcons_frags, tdbcons_frags_vac},
    {"fragment_meta", tdbcons_fragment_meta, tdbcons_fragment_meta_vac},
    {"commits", tdbcons_commits, tdbcons_commits_vac},
    {"array_meta", tdbcons_array_meta, tdbcons_array_meta_vac},
};
#define TDBCONS_NMODES (sizeof tdbcons_modes / sizeof tdbcons_modes[0])

static void tdbcons_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [-o OPTIONS] [--mode=MODE[,MODE]] [--vacuum] [-v] "
            "SOURCE\n"
            "Consolidates the TileDB array SOURCE (a folder, "
            "s3://BUCKET/PREFIX,\n"
            "azure://CONTAINER/PREFIX or gs://BUCKET/PREFIX) as TileDB "
            "does, without\nTileDB.\n"
            "  --mode=MODE    fragments, fragment_meta, commits, array_meta, "
            "or all\n"
            "                 (the four, the default)\n"
            "  --vacuum       then remove what each consolidation "
            "superseded\n"
            "  -o key_file=PATH,threads=N,cache_size=N[KMG],endpoint=URL,\n"
            "     account=NAME,region=NAME,profile=NAME,\n"
            "     credentials_file=PATH,config_file=PATH\n"
            "                 the array's key; where and as whom an "
            "object-store\n"
            "                 SOURCE is reached\n"
            "  -o s3_requests=N,s3_timeout=SECS,s3_retries=N,"
            "s3_part_size=N[KMG]\n"
            "                 how it is reached (as for tiledbfs)\n"
            "  -v             print what each step did\n"
            "  -h, --help     this text\n"
            "  -V, --version  print the version\n",
            program_invocation_short_name);
}

/* Parses MODE[,MODE] into the set `want` (a bit per tdbcons_modes entry)
 * and `named`, those named (not by all).  @return 0 or -1 after printing
 * an error. */
static int tdbcons_parse_modes(const char *list, unsigned *want,
                               unsigned *named)
{
    char *copy = strdup(list), *save = NULL;
    int rc = 0;
    if (!copy) {
        tdbcli_report_errno("--mode", -ENOMEM);
        return -1;
    }
    *want = *named = 0;
    for (char *m = strtok_r(copy, ",", &save); m && !rc;
         m = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        if (!strcmp(m, "all")) {
            *want = (1u << TDBCONS_NMODES) - 1;
            continue;
        }
        while (i < TDBCONS_NMODES && strcmp(m, tdbcons_modes[i].name))
            i++;
        if (i == TDBCONS_NMODES) {
            char msg[160];
            snprintf(msg, sizeof msg, "unknown mode '%.40s' (fragments, "
                     "fragment_meta, commits, array_meta, all)", m);
            tdbcli_report_text("--mode", msg);
            rc = -1;
        } else {
            *want |= 1u << i;
            *named |= 1u << i;
        }
    }
    if (!rc && !*want) {
        tdbcli_report_text("--mode", "no mode given");
        rc = -1;
    }
    free(copy);
    return rc;
}

/* Runs one mode's consolidation, then (vacuum) its vacuum.  A mode that
 * does not apply to the array (commits below format 12) is an error when
 * asked for by name; as part of all (`named` false) it is skipped, saying
 * so.  @return 0 or -1 after printing an error. */
static int tdbcons_run(const struct tdbcons_mode *m, const struct tdb_io *io,
                       const struct tdb_cons_options *o, bool vacuum,
                       bool verbose, bool named)
{
    struct tdb_cons_result r;
    struct tdb_error err;
    int rc;

    tdb_error_clear(&err);
    rc = m->consolidate(io, o, &r, &err);
    if (rc == TDB_E_UNSUPPORTED && !named) {
        fprintf(stderr, "%s: %s: skipped: %s\n", program_invocation_short_name,
                m->name, err.msg);
        return 0;
    }
    if (rc < 0) {
        tdbcli_report(m->name, rc, &err);
        return -1;
    }
    if (verbose && r.name[0])
        printf("%s: %llu consolidated into %s\n", m->name,
               (unsigned long long)r.merged, r.name);
    else if (verbose)
        printf("%s: nothing to consolidate\n", m->name);
    if (!vacuum)
        return 0;
    tdb_error_clear(&err);
    rc = m->vacuum(io, o, &r, &err);
    if (rc < 0) {
        tdbcli_report(m->name, rc, &err);
        return -1;
    }
    if (verbose)
        printf("%s: vacuum removed %llu files\n", m->name,
               (unsigned long long)r.removed);
    return 0;
}

static const struct option tdbcons_longopts[] = {
    {"mode", required_argument, NULL, 'm'},
    {"vacuum", no_argument, NULL, 'u'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static const char *const tdbcons_key_option[] = {"key_file", "threads",
                                                 "cache_size", NULL};

/* What the command line asks for. */
struct tdbcons_args {
    struct tdbm_options opts;
    unsigned want, named;       /* modes to run, modes named (bit i: i) */
    bool vacuum, verbose;
    const char *array;
};

/* Reads the command line into a.  @return 0 to go on, 1 when it is done
 * (--help, --version), -1 after printing an error. */
static int tdbcons_parse(int argc, char *argv[], struct tdbcons_args *a)
{
    int c;
    while ((c = getopt_long(argc, argv, "o:vhV", tdbcons_longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'o':
            if (tdbcli_option_list_only(&a->opts, optarg, tdbcons_key_option,
                                        tdbcli_s3_options,
                                        "consolidating") < 0)
                return -1;
            break;
        case 'm':
            if (tdbcons_parse_modes(optarg, &a->want, &a->named) < 0)
                return -1;
            break;
        case 'u':
            a->vacuum = true;
            break;
        case 'v':
            a->verbose = true;
            break;
        case 'V':
            printf("tiledbfs-consolidate " PACKAGE_VERSION "\n");
            return 1;
        case 'h':
            tdbcons_usage(stdout);
            return 1;
        default:
            tdbcons_usage(stderr);
            return -1;
        }
    }
    if (argc - optind != 1) {
        tdbcons_usage(stderr);
        return -1;
    }
    a->array = argv[optind];
    return 0;
}

/* Runs the modes a asks for, in their order, on a->array.  @return 0 or
 * -1 after printing an error. */
static int tdbcons_all(const struct tdbcons_args *a)
{
    struct tdb_io io = {0};
    struct tdb_cons_options co = {a->opts.open.key, a->opts.open.threads,
                                  a->opts.open.cache_bytes};
    int rc;
    if (tdb_io_is_url(a->array))
        rc = tdbcli_open_url(&io, a->array, &a->opts, false);
    else if ((rc = tdb_io_posix(&io, a->array)) < 0)
        tdbcli_report(a->array, rc, NULL);
    for (size_t i = 0; rc >= 0 && i < TDBCONS_NMODES; i++)
        if ((a->want & (1u << i)) &&
            tdbcons_run(&tdbcons_modes[i], &io, &co, a->vacuum, a->verbose,
                        (a->named & (1u << i)) != 0) < 0)
            rc = -1;
    tdb_io_free(&io);
    return rc < 0 ? -1 : 0;
}

int main(int argc, char *argv[])
{
    struct tdbcons_args a = {.want = (1u << TDBCONS_NMODES) - 1};
    int ret = 1;

    tdbm_options_init(&a.opts);
    a.opts.open.cache_bytes = 0; /* fragments: its own default, 128 MiB */
    int p = tdbcons_parse(argc, argv, &a);
    if (p)
        ret = p > 0 ? 0 : 1;
    else
        ret = tdbcons_all(&a) < 0;
    tdbm_options_free(&a.opts);
    return ret;
}
