/* tiledbfs.h: what the files of the daemon share. */
/*
 * The daemon translates FUSE requests into calls of the mount layer
 * (../mount/mount.h), which holds the file tree, the writes and the
 * commits.  fuse/, bottom up (each file calls only those before it):
 * log.c (where log lines go), readahead.c (the kernel's read-ahead of the
 * mount), notify.c (the kernel's invalidations), watch.c (the watcher of
 * -o refresh), ll.c (the low-level operations), main.c (the command line
 * and the session).
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
    bool splice;      /* replies may be spliced from the data files: the
                       * kernel takes them, and no -o no_splice */
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

/* log.c */

/* One log line of the mount layer (its `log` callback; arg: the daemon):
 * on stderr until the daemon runs in the background, then to the log
 * file, stderr or syslog. */
void tdbfs_log_line(void *arg, const char *line);

/* Where the daemon logs, from -o log= (NULL: the default) and -f: sets
 * d->log_stderr and d->log_fd (syslog by default).  @return 0 or -1 after
 * printing why. */
int tdbfs_log_setup(struct tdbfs_daemon *d, const char *log, bool foreground);

/* The file the daemon logs to where no syslog listens, as --help says. */
#define TDBFS_ROOT_LOG "/var/log/tiledbfs.log"

/* Once mounted: goes to the background (fuse_daemonize) and has the log
 * lines follow: to the file of TDBFS_ROOT_LOG's kind when nothing listens
 * for syslog (said on stderr first), to the old stderr with log=stderr. */
void tdbfs_log_daemonize(struct tdbfs_daemon *d, bool foreground);

/* readahead.c */

/* The kernel's read-ahead file of the mount at `mnt` (the kernel starts
 * FUSE mounts at 128 KiB, so sequential reads come as 128 KiB requests;
 * 1 MiB requests cost less per byte): its sysfs file into out[cap] (""
 * when not found), looked up in /proc/self/mountinfo (a stat would wait
 * for the session, which is not running yet). */
void tdbfs_readahead_file(const char *mnt, char *out, size_t cap);

/* Writes d->readahead_kib to d->bdi_ra, once, best effort (only root
 * may, and the kernel lowers it again when it takes the INIT reply: so
 * the first requests call this). */
void tdbfs_readahead_once(struct tdbfs_daemon *d);

/* notify.c */

/* The mount layer's `inval` callback (arg: the daemon). */
void tdbfs_invalidate_soon(void *arg, char **names, size_t n);

/* The helper thread of -s (after fuse_daemonize: threads do not survive
 * its fork). */
void tdbfs_notifier_start(struct tdbfs_daemon *d);
void tdbfs_notifier_stop(struct tdbfs_daemon *d);

/* watch.c */

/* The watcher thread of -o refresh: has the mount check the source every
 * SECS s and, for a local folder, at each change inotify reports (after
 * fuse_daemonize).  Stop before the session ends.  Nothing to do for a
 * mount that does not refresh. */
void tdbfs_watcher_start(struct tdbfs_daemon *d);
void tdbfs_watcher_stop(struct tdbfs_daemon *d);

/* ll.c */
extern const struct fuse_lowlevel_ops tdbfs_ops;

#endif
