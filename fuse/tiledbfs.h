/* tiledbfs.h: what the files of the daemon share. */
/*
 * The daemon translates FUSE requests into calls of the mount layer
 * (../mount/mount.h), which holds the file tree, the writes and the
 * commits; fuse/ holds the low-level operations (ll.c), the kernel's
 * invalidations (notify.c), the watcher of -o refresh (watch.c) and the
 * command line and session (main.c).
 */
#ifndef TDBFS_H
#define TDBFS_H

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "tiledb_format.h"
#include "../mount/mount.h"

/* A queued invalidation: the root's attributes and these root entries. */
struct tdbfs_inval {
    struct tdbfs_inval *next;
    char **names;
    size_t n;
};

/* Per-mount state of the daemon, the session's userdata. */
struct tdbfs_daemon {
    struct tdbm_mount *m;
    struct fuse_session *se;
    bool rw;
    bool log_stderr;  /* -o log= (default: -f): stderr, else syslog */
    int log_fd;       /* -o log=FILE, or the file used where no syslog
                       * listens: its descriptor; else -1 */
    unsigned long readahead_kib;    /* -o readahead= */
    char bdi_ra[128];               /* its sysfs file, "" if unknown */
    atomic_bool ra_done;
    bool daemonized;  /* the session runs: log lines go to syslog unless
                       * foreground */

    /* Invalidations for -s, where the only worker may not wait on the
     * kernel: done by a helper thread. */
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    struct tdbfs_inval *queue;
    bool qstop, qthread;
    pthread_t notifier;

    /* The watcher of -o refresh (watch.c). */
    struct tdbfs_watch *watch;
};

extern const struct fuse_lowlevel_ops tdbfs_ops;

/* The mount layer's callbacks (arg: the daemon). */
void tdbfs_log_line(void *arg, const char *line);
void tdbfs_invalidate_soon(void *arg, char **names, size_t n);

/* The helper thread of -s (after fuse_daemonize: threads do not survive
 * its fork). */
void tdbfs_notifier_start(struct tdbfs_daemon *d);
void tdbfs_notifier_stop(struct tdbfs_daemon *d);

/* The watcher thread of -o refresh: has the mount check the source every
 * SECS s and, for a local folder, at each change inotify reports (after
 * fuse_daemonize).  Stop before the session ends.  Nothing to do for a
 * mount that does not refresh. */
void tdbfs_watcher_start(struct tdbfs_daemon *d);
void tdbfs_watcher_stop(struct tdbfs_daemon *d);

/* main.c: sets the mount's read-ahead, once (called from requests). */
void tdbfs_readahead_once(struct tdbfs_daemon *d);

#endif
