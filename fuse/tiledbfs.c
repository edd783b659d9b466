/* tiledbfs.c: the mount contract's daemon: `tiledbfs [-o OPTIONS] SOURCE MOUNTPOINT` over libfuse's low-level API. */
/*
 * A thin layer: every handler turns one FUSE request into one call of the
 * format engine (format/tiledb_format.h) and replies exactly once.  Engine
 * inodes are FUSE inodes (the root is 1 in both); they are stable for the
 * life of the mount, so forget does nothing and the kernel may cache
 * entries, attributes and file pages for as long as it likes: an opened
 * array never changes.  Writes answer EROFS (staging is not there yet).
 */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)

#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#include "../tools/cli.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "(unknown version)"
#endif

_Static_assert(TDB_ROOT_INO == FUSE_ROOT_ID,
               "engine and FUSE must agree on the root inode");

#define TDBFS_TIMEOUT 86400.0 /* seconds; nothing under a mount changes */
#define TDBFS_IO_MAX TDBCLI_READ_MAX

/* Per-mount state, the session's userdata. */
struct tdbfs_mount {
    struct tdb_fs *fs;
    bool rw;
    bool foreground; /* log to stderr, else to syslog */
    uid_t uid;
    gid_t gid;
};

static struct tdbfs_mount *tdbfs_mount_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

/* One log line; the engine's messages name file, field and tile and never
 * hold the key. */
static void tdbfs_log(const struct tdbfs_mount *m, const char *fmt, ...)
{
    char line[TDB_ERROR_MSG_MAX + 128];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    if (m->foreground)
        fprintf(stderr, "tiledbfs: %s\n", line);
    else
        syslog(LOG_ERR, "%s", line);
}

/* Whether a failure is the engine's (bad bytes, I/O, memory, key), worth a
 * log line, rather than the caller's (no such name, not a folder...). */
static bool tdbfs_worth_logging(int code)
{
    return code != TDB_E_NOENT && code != TDB_E_NOTDIR &&
           code != TDB_E_ISDIR && code != TDB_E_INVAL && code != TDB_E_ROFS;
}

/* Replies with the errno of a failed engine call, logging engine failures. */
static void tdbfs_reply_fail(fuse_req_t req, const char *op, fuse_ino_t ino,
                             int code, const struct tdb_error *err)
{
    if (tdbfs_worth_logging(code))
        tdbfs_log(tdbfs_mount_of(req), "%s inode %llu: %s", op,
                  (unsigned long long)ino, tdbcli_error_text(code, err));
    fuse_reply_err(req, tdb_errno(code));
}

static void tdbfs_fill_stat(const struct tdbfs_mount *m,
                            const struct tdb_stat *ts, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ts->ino;
    /* A folder's link count is 1, "unknown" to find and fts: counting its
     * subfolders would stat every child. */
    st->st_mode = ts->is_dir ? S_IFDIR | 0555 : S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_uid = m->uid;
    st->st_gid = m->gid;
    st->st_size = (off_t)ts->size;
    st->st_blksize = TDBFS_IO_MAX;
    st->st_blocks = (blkcnt_t)((ts->size + 511) / 512);
    st->st_mtim.tv_sec = (time_t)(ts->mtime_ms / 1000);
    st->st_mtim.tv_nsec = (long)(ts->mtime_ms % 1000) * 1000000L;
    st->st_atim = st->st_mtim;
    st->st_ctim = st->st_mtim;
}

/* ------------------------------------------------------------ handlers */

static void tdbfs_init(void *userdata, struct fuse_conn_info *conn)
{
    conn->max_read = TDBFS_IO_MAX;
    conn->max_write = TDBFS_IO_MAX;
    /* Pages stay valid: nothing changes under the mount. */
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

static void tdbfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct fuse_entry_param e;
    struct tdb_error err;
    struct tdb_stat ts;
    uint64_t ino;
    int rc;

    memset(&e, 0, sizeof e);
    tdbcli_error_clear(&err);
    rc = tdb_fs_lookup(m->fs, parent, name, &ino, &err);
    if (rc == TDB_E_NOENT && !m->rw) {
        /* A negative entry the kernel may keep: the tree never changes. */
        e.ino = 0;
        e.entry_timeout = TDBFS_TIMEOUT;
        fuse_reply_entry(req, &e);
        return;
    }
    if (rc == 0)
        rc = tdb_fs_stat(m->fs, ino, &ts, &err);
    if (rc < 0) {
        tdbfs_reply_fail(req, "lookup", parent, rc, &err);
        return;
    }
    e.ino = ino;
    e.generation = 1;
    e.attr_timeout = TDBFS_TIMEOUT;
    e.entry_timeout = TDBFS_TIMEOUT;
    tdbfs_fill_stat(m, &ts, &e.attr);
    fuse_reply_entry(req, &e);
}

static void tdbfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    fuse_reply_none(req); /* inodes live as long as the mount */
}

static void tdbfs_forget_multi(fuse_req_t req, size_t count,
                               struct fuse_forget_data *forgets)
{
    fuse_reply_none(req);
}

static void tdbfs_getattr(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdb_error err;
    struct tdb_stat ts;
    struct stat st;
    int rc;

    tdbcli_error_clear(&err);
    rc = tdb_fs_stat(m->fs, ino, &ts, &err);
    if (rc < 0) {
        tdbfs_reply_fail(req, "getattr", ino, rc, &err);
        return;
    }
    tdbfs_fill_stat(m, &ts, &st);
    fuse_reply_attr(req, &st, TDBFS_TIMEOUT);
}

static void tdbfs_opendir(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    fi->cache_readdir = 1;
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
}

/* Offsets: 0 ".", 1 "..", then 2 + the engine's entry index; each entry
 * carries the offset of the next one. */
static void tdbfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
                          off_t off, struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdb_error err;
    size_t pos = 0;
    char *buf;

    if (off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    if (size > TDBFS_IO_MAX)
        size = TDBFS_IO_MAX;
    buf = malloc(size ? size : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    for (uint64_t i = (uint64_t)off;; i++) {
        const char *name;
        uint64_t child = ino;
        struct stat st;
        size_t len;

        if (i == 0) {
            name = ".";
        } else if (i == 1) {
            name = "..";
        } else {
            int rc;
            tdbcli_error_clear(&err);
            rc = tdb_fs_readdir(m->fs, ino, i - 2, &name, &child, &err);
            if (rc == TDB_E_NOENT)
                break;
            if (rc < 0) {
                if (pos == 0) {
                    free(buf);
                    tdbfs_reply_fail(req, "readdir", ino, rc, &err);
                    return;
                }
                break; /* give what we have; the error comes back next call */
            }
        }
        /* Only st_ino and the type bits count; the type is left unknown
         * (DT_UNKNOWN) for children, since stat may decode offsets tiles. */
        memset(&st, 0, sizeof st);
        st.st_ino = child;
        if (i < 2)
            st.st_mode = S_IFDIR;
        len = fuse_add_direntry(req, buf + pos, size - pos, name, &st,
                                (off_t)(i + 1));
        if (len > size - pos)
            break;
        pos += len;
    }
    fuse_reply_buf(req, buf, pos);
    free(buf);
}

static void tdbfs_open(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);

    if ((fi->flags & O_ACCMODE) != O_RDONLY && !m->rw) {
        fuse_reply_err(req, EROFS);
        return;
    }
    fi->keep_cache = 1;
    fi->direct_io = 0;
    fi->noflush = 1; /* nothing to flush on close */
    fuse_reply_open(req, fi);
}

static void tdbfs_read(fuse_req_t req, fuse_ino_t ino, size_t size,
                       off_t off, struct fuse_file_info *fi)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    struct tdb_error err;
    size_t got = 0;
    char *buf;
    int rc;

    if (off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    if (size > TDBFS_IO_MAX)
        size = TDBFS_IO_MAX;
    buf = malloc(size ? size : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    tdbcli_error_clear(&err);
    rc = tdb_fs_read(m->fs, ino, (uint64_t)off, buf, size, &got, &err);
    if (rc < 0) {
        if (tdbfs_worth_logging(rc))
            tdbfs_log(m, "read inode %llu at %lld+%zu: %s",
                      (unsigned long long)ino, (long long)off, size,
                      tdbcli_error_text(rc, &err));
        fuse_reply_err(req, tdb_errno(rc));
    } else {
        fuse_reply_buf(req, buf, got);
    }
    free(buf);
}

/* The names of the xattrs, each NUL-terminated, into buf (NULL: size only).
 * @return the bytes they need. */
static size_t tdbfs_xattr_names(struct tdb_fs *fs, fuse_ino_t ino, char *buf)
{
    size_t need = 0;
    const char *name;

    for (size_t i = 0; tdb_fs_listxattr(fs, ino, i, &name) == 0; i++) {
        size_t len = strlen(name) + 1;
        if (buf)
            memcpy(buf + need, name, len);
        need += len;
    }
    return need;
}

static void tdbfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    size_t need = tdbfs_xattr_names(m->fs, ino, NULL);
    char *buf;

    if (size == 0) {
        fuse_reply_xattr(req, need);
        return;
    }
    if (size < need) {
        fuse_reply_err(req, ERANGE);
        return;
    }
    buf = malloc(need ? need : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    fuse_reply_buf(req, buf, tdbfs_xattr_names(m->fs, ino, buf));
    free(buf);
}

static void tdbfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                           size_t size)
{
    struct tdbfs_mount *m = tdbfs_mount_of(req);
    size_t need = 0;
    char *buf;
    int rc;

    rc = tdb_fs_getxattr(m->fs, ino, name, NULL, 0, &need);
    if (rc < 0) {
        fuse_reply_err(req, rc == TDB_E_NOENT ? ENODATA : tdb_errno(rc));
        return;
    }
    if (size == 0) {
        fuse_reply_xattr(req, need);
        return;
    }
    if (size < need) {
        fuse_reply_err(req, ERANGE);
        return;
    }
    buf = malloc(need ? need : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    rc = tdb_fs_getxattr(m->fs, ino, name, buf, need, &need);
    if (rc < 0)
        fuse_reply_err(req, rc == TDB_E_NOENT ? ENODATA : tdb_errno(rc));
    else
        fuse_reply_buf(req, buf, need);
    free(buf);
}

static void tdbfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct statvfs sv;

    memset(&sv, 0, sizeof sv);
    sv.f_bsize = TDBFS_IO_MAX;
    sv.f_frsize = 512;
    sv.f_namemax = 255;
    sv.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
    fuse_reply_statfs(req, &sv);
}

/* ------------------------------------------- writes: read-only for now */

static void tdbfs_rofs(fuse_req_t req)
{
    fuse_reply_err(req, EROFS);
}

static void tdbfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                          int to_set, struct fuse_file_info *fi)
{
    tdbfs_rofs(req);
}

static void tdbfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                        mode_t mode, dev_t rdev)
{
    tdbfs_rofs(req);
}

static void tdbfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                        mode_t mode)
{
    tdbfs_rofs(req);
}

static void tdbfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    tdbfs_rofs(req);
}

static void tdbfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    tdbfs_rofs(req);
}

static void tdbfs_symlink(fuse_req_t req, const char *link,
                          fuse_ino_t parent, const char *name)
{
    tdbfs_rofs(req);
}

static void tdbfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                         fuse_ino_t newparent, const char *newname,
                         unsigned int flags)
{
    tdbfs_rofs(req);
}

static void tdbfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                       const char *newname)
{
    tdbfs_rofs(req);
}

static void tdbfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                        size_t size, off_t off, struct fuse_file_info *fi)
{
    tdbfs_rofs(req);
}

static void tdbfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                           const char *value, size_t size, int flags)
{
    tdbfs_rofs(req);
}

static void tdbfs_removexattr(fuse_req_t req, fuse_ino_t ino,
                              const char *name)
{
    tdbfs_rofs(req);
}

static void tdbfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                         mode_t mode, struct fuse_file_info *fi)
{
    tdbfs_rofs(req);
}

static void tdbfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
                            off_t offset, off_t length,
                            struct fuse_file_info *fi)
{
    tdbfs_rofs(req);
}

static const struct fuse_lowlevel_ops tdbfs_ops = {
    .init = tdbfs_init,
    .lookup = tdbfs_lookup,
    .forget = tdbfs_forget,
    .forget_multi = tdbfs_forget_multi,
    .getattr = tdbfs_getattr,
    .opendir = tdbfs_opendir,
    .readdir = tdbfs_readdir,
    .open = tdbfs_open,
    .read = tdbfs_read,
    .listxattr = tdbfs_listxattr,
    .getxattr = tdbfs_getxattr,
    .statfs = tdbfs_statfs,
    .setattr = tdbfs_setattr,
    .mknod = tdbfs_mknod,
    .mkdir = tdbfs_mkdir,
    .unlink = tdbfs_unlink,
    .rmdir = tdbfs_rmdir,
    .symlink = tdbfs_symlink,
    .rename = tdbfs_rename,
    .link = tdbfs_link,
    .write = tdbfs_write,
    .setxattr = tdbfs_setxattr,
    .removexattr = tdbfs_removexattr,
    .create = tdbfs_create,
    .fallocate = tdbfs_fallocate,
};

/* ------------------------------------------------------- command line */

/* The contract's -o options; fuse_opt removes them from what FUSE sees. */
struct tdbfs_cmdline {
    char *source;
    char *timestamp;
    char *cache_size;
    char *key_file;
    char *staging_dir;
    int rw;
};

#define TDBFS_OPT(t, field) { t, offsetof(struct tdbfs_cmdline, field), 1 }

static const struct fuse_opt tdbfs_opts[] = {
    TDBFS_OPT("timestamp=%s", timestamp),
    TDBFS_OPT("cache_size=%s", cache_size),
    TDBFS_OPT("key_file=%s", key_file),
    TDBFS_OPT("staging_dir=%s", staging_dir),
    TDBFS_OPT("rw", rw),
    FUSE_OPT_END
};

/* The first argument that is not an option is SOURCE; the next one is the
 * mount point, left for fuse_parse_cmdline. */
static int tdbfs_opt_proc(void *data, const char *arg, int key,
                          struct fuse_args *outargs)
{
    struct tdbfs_cmdline *cl = data;

    if (key == FUSE_OPT_KEY_NONOPT && !cl->source) {
        cl->source = strdup(arg);
        return cl->source ? 0 : -1;
    }
    return 1;
}

static void tdbfs_usage(const char *prog)
{
    printf("usage: %s [-o OPTIONS] SOURCE MOUNTPOINT\n"
           "Mounts a TileDB array or group folder SOURCE read-only at "
           "MOUNTPOINT.\n\n"
           "tiledbfs options:\n"
           "    -o timestamp=T|T1:T2   open as of T (ms since epoch)\n"
           "    -o cache_size=N[KMG]   decoded-tile cache budget "
           "(default 256M)\n"
           "    -o key_file=PATH       32-byte AES-256-GCM key\n"
           "    -o rw                  enable __staging/\n"
           "    -o staging_dir=PATH    where staged bytes are kept\n\n",
           prog);
}

/* Hands the contract's options to the shared parser. */
static int tdbfs_apply(const struct tdbfs_cmdline *cl,
                       struct tdbcli_options *o)
{
    if (cl->timestamp && tdbcli_option(o, "timestamp", cl->timestamp) != 0)
        return -1;
    if (cl->cache_size && tdbcli_option(o, "cache_size", cl->cache_size) != 0)
        return -1;
    if (cl->key_file && tdbcli_option(o, "key_file", cl->key_file) != 0)
        return -1;
    if (cl->staging_dir &&
        tdbcli_option(o, "staging_dir", cl->staging_dir) != 0)
        return -1;
    if (cl->rw && tdbcli_option(o, "rw", NULL) != 0)
        return -1;
    return 0;
}

/* Mount options FUSE gets from us: read-only unless rw, 1 MiB reads, and
 * SOURCE as the name `mount` shows. */
static int tdbfs_mount_args(struct fuse_args *args, const char *source,
                            bool rw)
{
    char *opts = NULL;
    int rc = -1;

    if (fuse_opt_add_opt(&opts, rw ? "rw" : "ro") != 0 ||
        fuse_opt_add_opt(&opts, "max_read=1048576") != 0 ||
        fuse_opt_add_opt(&opts, "subtype=tiledbfs") != 0)
        goto out;
    {
        char *fsname = NULL;
        if (asprintf(&fsname, "fsname=%s", source) < 0)
            goto out;
        rc = fuse_opt_add_opt_escaped(&opts, fsname);
        free(fsname);
        if (rc != 0) {
            rc = -1;
            goto out;
        }
    }
    rc = fuse_opt_add_arg(args, "-o") == 0 && fuse_opt_add_arg(args, opts) == 0
             ? 0 : -1;
out:
    free(opts);
    return rc;
}

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts fopts;
    struct fuse_loop_config *config = NULL;
    struct tdbfs_cmdline cl;
    struct tdbcli_options opts;
    struct tdbcli_source src;
    struct tdbfs_mount m;
    struct fuse_session *se = NULL;
    int ret = 1;

    memset(&fopts, 0, sizeof fopts);
    memset(&cl, 0, sizeof cl);
    memset(&src, 0, sizeof src);
    memset(&m, 0, sizeof m);
    tdbcli_options_init(&opts);

    if (fuse_opt_parse(&args, &cl, tdbfs_opts, tdbfs_opt_proc) != 0)
        goto out_args;
    if (fuse_parse_cmdline(&args, &fopts) != 0)
        goto out_args;
    if (fopts.show_help) {
        tdbfs_usage(argv[0]);
        fuse_cmdline_help();
        fuse_lowlevel_help();
        ret = 0;
        goto out_args;
    }
    if (fopts.show_version) {
        printf("tiledbfs " PACKAGE_VERSION "\n");
        fflush(stdout);
        fuse_lowlevel_version();
        ret = 0;
        goto out_args;
    }
    if (!cl.source || !fopts.mountpoint) {
        fprintf(stderr, "usage: %s [-o OPTIONS] SOURCE MOUNTPOINT "
                "(%s --help for more)\n", argv[0], argv[0]);
        goto out_args;
    }
    if (tdbfs_apply(&cl, &opts) != 0)
        goto out_args;
    if (tdbcli_open(&src, cl.source, &opts) != 0)
        goto out_args;

    m.fs = src.fs;
    m.rw = opts.rw;
    m.foreground = fopts.foreground;
    m.uid = getuid();
    m.gid = getgid();
    if (tdbfs_mount_args(&args, src.path, opts.rw) != 0) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name,
                strerror(ENOMEM));
        goto out_close;
    }

    se = fuse_session_new(&args, &tdbfs_ops, sizeof tdbfs_ops, &m);
    if (!se)
        goto out_close;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_session;
    if (fuse_session_mount(se, fopts.mountpoint) != 0)
        goto out_signals;
    if (!fopts.foreground)
        openlog("tiledbfs", LOG_PID, LOG_DAEMON);
    fuse_daemonize(fopts.foreground);

    if (fopts.singlethread) {
        ret = fuse_session_loop(se);
    } else {
        config = fuse_loop_cfg_create();
        if (!config) {
            ret = -1;
        } else {
            fuse_loop_cfg_set_clone_fd(config, (unsigned)fopts.clone_fd);
            fuse_loop_cfg_set_max_threads(config, fopts.max_threads);
            if (fopts.max_idle_threads != UINT_MAX)
                fuse_loop_cfg_set_idle_threads(config,
                                               fopts.max_idle_threads);
            ret = fuse_session_loop_mt(se, config);
            fuse_loop_cfg_destroy(config);
        }
    }
    ret = ret != 0;
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_session:
    fuse_session_destroy(se);
out_close:
    tdbcli_close(&src);
out_args:
    tdbcli_options_free(&opts);
    free(cl.source);
    free(cl.timestamp);
    free(cl.cache_size);
    free(cl.key_file);
    free(cl.staging_dir);
    free(fopts.mountpoint);
    fuse_opt_free_args(&args);
    return ret;
}
