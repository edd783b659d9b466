/* main.c: the mount contract's daemon: `tiledbfs [-o OPTIONS] SOURCE MOUNTPOINT`: command line, session and loop. */
#include "tiledbfs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "(unknown version)"
#endif

/* What the command line gives besides FUSE's own options. */
struct tdbfs_cmdline {
    char *source;
    char **opts;        /* the contract's -o options, "name[=value]" */
    size_t nopts;
    char *log;          /* -o log=syslog|stderr|FILE */
    char *readahead;    /* -o readahead=KiB */
    char *fsname;       /* -o fsname=NAME: the source mount(8) shows */
    char *subtype;      /* -o subtype=NAME: the type is fuse.NAME */
    bool allow_other;   /* allow_other given (kept for FUSE) */
    bool has_dev;       /* dev or nodev given (kept for FUSE) */
    bool has_suid;      /* suid or nosuid given (kept for FUSE) */
};

/* Generic mount(8) options that mount.fuse3 hands on and libfuse does not
 * know; none matters to a filesystem whose files never change unless
 * written through it and that has no links, locks or i_version. */
static const char *const tdbfs_ignored[] = {
    "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime",
    "nolazytime", "diratime", "nodiratime", "iversion", "noiversion", "mand",
    "nomand", "symfollow", "nosymfollow", NULL};

/* Keeps a copy of `value` in *field (the last one given wins).  @return
 * 0 (the option is ours), or -1 when out of memory. */
static int tdbfs_keep(char **field, const char *value)
{
    free(*field);
    *field = strdup(value);
    return *field ? 0 : -1;
}

/* The first argument that is not an option is SOURCE; the next one is the
 * mount point, left for fuse_parse_cmdline.  The contract's -o options
 * are kept (and removed from what FUSE sees); others go to FUSE. */
static int tdbfs_opt_proc(void *data, const char *arg, int key,
                          struct fuse_args *outargs)
{
    struct tdbfs_cmdline *cl = data;

    if (key == FUSE_OPT_KEY_NONOPT && !cl->source) {
        cl->source = strdup(arg);
        return cl->source ? 0 : -1;
    }
    if (key == FUSE_OPT_KEY_OPT) {
        for (int i = 0; tdbfs_ignored[i]; i++)
            if (!strcmp(arg, tdbfs_ignored[i]))
                return 0;
        if (!strcmp(arg, "dev") || !strcmp(arg, "nodev")) {
            cl->has_dev = true;
            return 1; /* FUSE's too */
        }
        if (!strcmp(arg, "suid") || !strcmp(arg, "nosuid")) {
            cl->has_suid = true;
            return 1;
        }
        if (!strncmp(arg, "readahead=", 10))
            return tdbfs_keep(&cl->readahead, arg + 10);
        if (!strcmp(arg, "allow_other"))
            cl->allow_other = true; /* and FUSE's */
        if (!strncmp(arg, "log=", 4))
            return tdbfs_keep(&cl->log, arg + 4);
        if (!strncmp(arg, "fsname=", 7))
            return tdbfs_keep(&cl->fsname, arg + 7);
        if (!strncmp(arg, "subtype=", 8))
            return tdbfs_keep(&cl->subtype, arg + 8);
    }
    if (key == FUSE_OPT_KEY_OPT) {
        const char *eq = strchr(arg, '=');
        char name[64];
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const struct tdbm_option *t;
        char **v;

        if (len >= sizeof name)
            return 1;
        memcpy(name, arg, len);
        name[len] = '\0';
        t = tdbm_option_find(name);
        if (!t || (t->kind == TDBM_OPT_BOOL) != !eq)
            return 1;
        v = realloc(cl->opts, (cl->nopts + 1) * sizeof *v);
        if (!v)
            return -1;
        cl->opts = v;
        if (!(v[cl->nopts] = strdup(arg)))
            return -1;
        cl->nopts++;
        return 0;
    }
    return 1;
}

/* The part of --help that says what a mount shows and where SOURCE may
 * be (man tiledbfs and docs/LAYOUT.md have it all). */
static const char tdbfs_help_shows[] =
    "SOURCE is an array or group folder, or s3://BUCKET/PREFIX (S3 or a\n"
    "server like it: keys, region and endpoint from AWS_ACCESS_KEY_ID,\n"
    "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or\n"
    "AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else the\n"
    "profile AWS_PROFILE of ~/.aws/credentials and ~/.aws/config).\n"
    "\n"
    "An array shows __array.json (schema, shape, fragments), __meta/KEY,\n"
    "__fragments/NAME/, one file per field (ATTR, ATTR.offsets,\n"
    "ATTR.validity; sparse: DIM too), NAME.npy for numpy.load,\n"
    "__slice/NAME[...].npy and __domain/NAME[...].npy for parts of it (by\n"
    "index, by coordinate), __zarr/ (dense: a Zarr v2 group for xarray,\n"
    "zarr and dask), and with -o rw __staging/.\n"
    "Data files carry user.tiledb.datatype, .dtype, .shape and\n"
    ".cell_val_num; the root, user.tiledbfs.stats (the tile cache's\n"
    "counters; getfattr is in Debian's attr package).  Cells never written\n"
    "are holes that lseek's SEEK_HOLE and SEEK_DATA find.  docs/LAYOUT.md\n"
    "and man tiledbfs say it all.\n";

static void tdbfs_usage(const char *prog)
{
    printf("usage: %s [-o OPTIONS] SOURCE MOUNTPOINT\n"
           "Mounts a TileDB array or group SOURCE at MOUNTPOINT, "
           "read-only unless -o rw.\n\n%s\n"
           "tiledbfs options:\n", prog, tdbfs_help_shows);
    printf("    -o %-20s%s\n", "readahead=KiB",
           "the kernel's read-ahead for the mount (root only;\n"
           "                           default 1024, 0: the kernel's)");
    printf("    -o %-20s%s\n", "log=WHERE",
           "where the daemon logs: syslog (the default),\n"
           "                           stderr (the default with -f or -d), or FILE\n"
           "                           (a path with a /, appended to); when no\n"
           "                           syslog listens at " _PATH_LOG ", the file\n"
           "                           " TDBFS_ROOT_LOG " (root) or\n"
           "                           ~/.local/state/tiledbfs.log");
    printf("    -o %-20s%s\n", "fsname=NAME",
           "the source mount(8) and findmnt show (default SOURCE)");
    printf("    -o %-20s%s\n", "subtype=NAME",
           "the type they show is fuse.NAME (default tiledbfs)");
    tdbm_options_usage(stdout);
    printf("\nThrough mount(8) (mount -t fuse.tiledbfs, or fstab), mount.fuse3 "
           "starts\ntiledbfs with dev or nodev, suid or nosuid, and rw unless "
           "ro was given;\ngiven those, rw is mount(8)'s default and the mount "
           "stays read-only:\nask for writes with writable.\n\n");
}

static void tdbfs_say_nomem(void)
{
    fprintf(stderr, "%s: %s\n", program_invocation_short_name,
            strerror(ENOMEM));
}

/* Prints "PROG: why" on stderr, control characters as '?'. */
static void tdbfs_say(char *why)
{
    for (char *p = why; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    fprintf(stderr, "%s: %s\n", program_invocation_short_name, why);
}

/* Applies the contract's options through the typed table.  @return 0 or
 * -1 after printing an error. */
static int tdbfs_apply(const struct tdbfs_cmdline *cl, struct tdbm_options *o)
{
    char why[TDB_ERROR_MSG_MAX + 256];

    for (size_t i = 0; i < cl->nopts; i++) {
        char *eq = strchr(cl->opts[i], '=');
        if (eq)
            *eq = '\0';
        if (tdbm_option(o, cl->opts[i], eq ? eq + 1 : NULL, why,
                        sizeof why) != 0)
            goto fail;
    }
    /* mount.fuse3 (mount -t fuse.tiledbfs, fstab) always hands on dev or
     * nodev and suid or nosuid, and mount(8) gives it rw unless ro was
     * asked for: from there rw is mount's default, not a wish to write */
    if (cl->has_dev && cl->has_suid && o->rw && !o->writable)
        o->rw = false;
    if (o->writable)
        o->rw = true;
    /* FUSE lets in only the user who mounted, unless allow_other */
    if (o->uid >= 0 && (uid_t)o->uid != getuid() && !cl->allow_other)
        fprintf(stderr, "%s: uid=%lld without allow_other: that user "
                "cannot use the mount (FUSE lets in only the user who "
                "mounted it)\n", program_invocation_short_name,
                (long long)o->uid);
    if (tdbm_options_check(o, why, sizeof why) == 0)
        return 0;
fail:
    tdbfs_say(why);
    return -1;
}

/* Mount options FUSE gets from us: read-only unless rw, permissions
 * checked by the kernel, 1 MiB reads, and as the source and type that
 * mount(8) and findmnt show, fsname= (default SOURCE) and fuse.SUBTYPE
 * (default fuse.tiledbfs). */
static int tdbfs_mount_args(struct fuse_args *args,
                            const struct tdbfs_cmdline *cl,
                            const char *source, bool rw)
{
    char *opts = NULL, *fsname = NULL, *subtype = NULL;
    int rc = -1;

    /* default_permissions: the kernel checks every access against the
     * modes and owners we report (staged entries are private to the
     * owner), so that allow_other lets others read the array, not the
     * owner's staged files */
    if (fuse_opt_add_opt(&opts, rw ? "rw" : "ro") != 0 ||
        fuse_opt_add_opt(&opts, "default_permissions") != 0 ||
        fuse_opt_add_opt(&opts, "max_read=1048576") != 0 ||
        asprintf(&subtype, "subtype=%s",
                 cl->subtype ? cl->subtype : "tiledbfs") < 0 ||
        asprintf(&fsname, "fsname=%s", cl->fsname ? cl->fsname : source) < 0)
        goto out;
    if (fuse_opt_add_opt_escaped(&opts, subtype) == 0 &&
        fuse_opt_add_opt_escaped(&opts, fsname) == 0 &&
        fuse_opt_add_arg(args, "-o") == 0 && fuse_opt_add_arg(args, opts) == 0)
        rc = 0;
out:
    free(subtype);
    free(fsname);
    free(opts);
    return rc;
}

static int tdbfs_loop(struct fuse_session *se,
                      const struct fuse_cmdline_opts *fopts)
{
    struct fuse_loop_config *config;
    int ret;

    if (fopts->singlethread)
        return fuse_session_loop(se);
    config = fuse_loop_cfg_create();
    if (!config)
        return -1;
    fuse_loop_cfg_set_clone_fd(config, (unsigned)fopts->clone_fd);
    fuse_loop_cfg_set_max_threads(config, fopts->max_threads);
    if (fopts->max_idle_threads != UINT_MAX)
        fuse_loop_cfg_set_idle_threads(config, fopts->max_idle_threads);
    ret = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return ret;
}

/* What main holds from the command line to the end of the session. */
struct tdbfs_run {
    struct fuse_args args;
    struct fuse_cmdline_opts fopts;
    struct tdbfs_cmdline cl;
    struct tdbm_options opts;
    struct tdbm_source src;
    struct tdbfs_daemon d;
    struct tdb_cache *cache;
    unsigned long readahead;    /* KiB */
};

static void tdbfs_run_init(struct tdbfs_run *r, int argc, char *argv[])
{
    memset(r, 0, sizeof *r);
    r->args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
    r->d.log_fd = -1;
    pthread_mutex_init(&r->d.qlock, NULL);
    pthread_cond_init(&r->d.qcond, NULL);
    tdbm_options_init(&r->opts);
    r->readahead = 1024;
}

static void tdbfs_run_free(struct tdbfs_run *r)
{
    tdbm_mount_free(r->d.m);
    tdbm_source_close(&r->src);
    tdb_cache_free(r->cache);
    tdbm_options_free(&r->opts);
    if (r->d.log_fd >= 0)
        close(r->d.log_fd);
    free(r->cl.source);
    free(r->cl.log);
    free(r->cl.readahead);
    free(r->cl.fsname);
    free(r->cl.subtype);
    for (size_t i = 0; i < r->cl.nopts; i++)
        free(r->cl.opts[i]);
    free(r->cl.opts);
    free(r->fopts.mountpoint);
    fuse_opt_free_args(&r->args);
    pthread_cond_destroy(&r->d.qcond);
    pthread_mutex_destroy(&r->d.qlock);
}

/* The command line into r: FUSE's options, the contract's, ours, and
 * where to log.  @return 0, 1 when done (--help, --version), or -1 after
 * printing why. */
static int tdbfs_parse(struct tdbfs_run *r, const char *prog)
{
    if (fuse_opt_parse(&r->args, &r->cl, NULL, tdbfs_opt_proc) != 0 ||
        fuse_parse_cmdline(&r->args, &r->fopts) != 0)
        return -1;
    if (r->fopts.show_help) {
        tdbfs_usage(prog);
        fuse_cmdline_help();
        fuse_lowlevel_help();
        return 1;
    }
    if (r->fopts.show_version) {
        printf("tiledbfs " PACKAGE_VERSION "\n");
        fflush(stdout);
        fuse_lowlevel_version();
        return 1;
    }
    if (!r->cl.source || !r->fopts.mountpoint) {
        fprintf(stderr, "usage: %s [-o OPTIONS] SOURCE MOUNTPOINT "
                "(%s --help for more)\n", prog, prog);
        return -1;
    }
    if (tdbfs_apply(&r->cl, &r->opts) != 0)
        return -1;
    if (r->cl.readahead &&
        tdbm_parse_kib(r->cl.readahead, 1ul << 20, &r->readahead)) {
        fprintf(stderr, "%s: readahead=%s: not a number of KiB (0 to "
                "1048576)\n", program_invocation_short_name, r->cl.readahead);
        return -1;
    }
    return tdbfs_log_setup(&r->d, r->cl.log, r->fopts.foreground);
}

/* Opens the source and the mount layer's mount of it, and adds the mount
 * options FUSE gets.  @return 0 or -1 after printing why. */
static int tdbfs_start(struct tdbfs_run *r)
{
    char why[TDB_ERROR_MSG_MAX + 256];
    const char *const *warn;
    struct tdbm_config cfg;

    /* One tile cache for the mount: every generation a write opens shares
     * it. */
    if (tdb_cache_create(&r->cache, r->opts.open.cache_bytes
                                        ? r->opts.open.cache_bytes
                                        : TDB_DEFAULT_CACHE_BYTES) != 0) {
        tdbfs_say_nomem();
        return -1;
    }
    tdb_cache_huge_pages(r->cache, r->opts.open.huge_pages);
    r->opts.open.cache = r->cache;
    if (tdbm_source_open(&r->src, r->cl.source, &r->opts, why,
                         sizeof why) != 0) {
        tdbfs_say(why);
        return -1;
    }
    if (r->src.warning[0]) {
        snprintf(why, sizeof why, "%s", r->src.warning);
        tdbfs_say(why);
    }
    /* group members left out: said once, at start */
    for (size_t i = 0, n = tdb_fs_warnings(r->src.fs, &warn); i < n; i++) {
        snprintf(why, sizeof why, "%s", warn[i]);
        tdbfs_say(why);
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.rw = r->opts.rw;
    cfg.uid = getuid();
    cfg.gid = getgid();
    cfg.log = tdbfs_log_line;
    cfg.inval = tdbfs_invalidate_soon;
    cfg.arg = &r->d;
    r->d.rw = r->opts.rw;
    if (tdbm_mount_new(&r->d.m, &r->src, &r->opts, &cfg) != 0) {
        tdbfs_say_nomem();
        return -1;
    }
    if (tdbm_mount_staging(r->d.m, why, sizeof why) != 0) {
        tdbfs_say(why);
        return -1;
    }
    if (tdbfs_mount_args(&r->args, &r->cl, r->src.path, r->opts.rw) != 0) {
        tdbfs_say_nomem();
        return -1;
    }
    return 0;
}

/* Mounts, goes to the background and serves until unmounted.  @return
 * the exit status. */
static int tdbfs_serve(struct tdbfs_run *r)
{
    struct tdbfs_daemon *d = &r->d;
    struct fuse_session *se;
    int ret = 1;

    se = fuse_session_new(&r->args, &tdbfs_ops, sizeof tdbfs_ops, d);
    if (!se)
        return 1;
    d->se = se;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_session;
    if (fuse_session_mount(se, r->fopts.mountpoint) != 0)
        goto out_signals;
    d->readahead_kib = r->readahead;
    d->splice = !r->opts.no_splice;
    if (r->readahead)
        tdbfs_readahead_file(r->fopts.mountpoint, d->bdi_ra,
                             sizeof d->bdi_ra);
    tdbfs_log_daemonize(d, r->fopts.foreground);
    if (d->rw && r->fopts.singlethread)
        tdbfs_notifier_start(d);
    tdbfs_watcher_start(d);
    ret = tdbfs_loop(se, &r->fopts) != 0;
    tdbfs_watcher_stop(d);
    tdbfs_notifier_stop(d);
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_session:
    fuse_session_destroy(se);
    return ret;
}

int main(int argc, char *argv[])
{
    struct tdbfs_run r;
    int ret = 1, rc;

    tdbfs_run_init(&r, argc, argv);
    rc = tdbfs_parse(&r, argv[0]);
    if (rc > 0)
        ret = 0;
    else if (rc == 0 && tdbfs_start(&r) == 0)
        ret = tdbfs_serve(&r);
    tdbfs_run_free(&r);
    return ret;
}
