/* log.c: where the daemon's log lines go: stderr, a file or syslog. */
#include "tiledbfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* One log line of the mount layer: on stderr until the daemon runs in
 * the background, then to the log file, stderr or syslog. */
void tdbfs_log_line(void *arg, const char *line)
{
    const struct tdbfs_daemon *d = arg;

    if (!d->daemonized) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name, line);
    } else if (d->log_fd >= 0) {
        /* one write per line: lines of several threads do not mix */
        char buf[4096], stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S%z",
                 localtime_r(&now, &tm));
        int n = snprintf(buf, sizeof buf, "%s tiledbfs[%ld]: %s\n", stamp,
                         (long)getpid(), line);
        if (n > 0) {
            ssize_t w = write(d->log_fd, buf, (size_t)n < sizeof buf
                                                  ? (size_t)n : sizeof buf);
            (void)w;    /* nowhere left to report it */
        }
    } else if (d->log_stderr) {
        fprintf(stderr, "tiledbfs: %s\n", line);
    } else {
        syslog(LOG_ERR, "%s", line);
    }
}

/* Does a syslog daemon listen where syslog(3) sends (_PATH_LOG, as glibc
 * connects: a datagram socket, else a stream one)?  Without one syslog(3)
 * drops every line silently.  why[cap]: the path and the error. */
static bool tdbfs_syslog_listens(char *why, size_t cap)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    static const int types[] = {SOCK_DGRAM, SOCK_STREAM};
    int e = 0;

    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", _PATH_LOG);
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
        e = errno;
        close(fd);
        if (rc == 0)
            return true;
    }
    snprintf(why, cap, "%s: %s", _PATH_LOG, strerror(e));
    return false;
}

/* Opens log file `path` for appending.  @return the descriptor or -1. */
static int tdbfs_log_open(const char *path, int flags)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
                flags, 0640);
}

/* Where the daemon logs, from -o log= (NULL: the default) and -f: sets
 * d->log_stderr and d->log_fd (syslog by default; see tdbfs_log_probe).
 * @return 0 or -1 after printing why. */
int tdbfs_log_setup(struct tdbfs_daemon *d, const char *log,
                           bool foreground)
{
    d->log_fd = -1;
    d->log_stderr = foreground;
    if (log && strcmp(log, "stderr") == 0) {
        d->log_stderr = true;
    } else if (log && strcmp(log, "syslog") == 0) {
        d->log_stderr = false;
    } else if (log && strchr(log, '/')) {
        if ((d->log_fd = tdbfs_log_open(log, 0)) < 0) {
            fprintf(stderr, "%s: log=%s: %s\n", program_invocation_short_name,
                    log, strerror(errno));
            return -1;
        }
    } else if (log) {
        fprintf(stderr, "%s: log=%s: not syslog or stderr, nor a file (a path "
                "with a /)\n", program_invocation_short_name, log);
        return -1;
    }
    return 0;
}

/* The file a daemon logs to where no syslog listens: TDBFS_ROOT_LOG for
 * root, else tiledbfs.log in $XDG_STATE_HOME (default ~/.local/state, made
 * 0700 when missing).  path[cap] gets its name.  @return the opened
 * descriptor, or -1 with errno. */
static int tdbfs_log_fallback(char *path, size_t cap)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

    if (geteuid() == 0) {
        snprintf(path, cap, "%s", TDBFS_ROOT_LOG);
    } else if (state && state[0] == '/') {
        snprintf(path, cap, "%s/tiledbfs.log", state);
    } else if (home && home[0] == '/') {
        snprintf(path, cap, "%s/.local", home);
        mkdir(path, 0700);
        snprintf(path, cap, "%s/.local/state", home);
        mkdir(path, 0700);
        snprintf(path, cap, "%s/.local/state/tiledbfs.log", home);
    } else {
        snprintf(path, cap, "~/.local/state/tiledbfs.log");
        errno = ENOENT;
        return -1;
    }
    return tdbfs_log_open(path, O_NOFOLLOW);
}

/* Once mounted, before going to the background: syslog(3) drops every
 * line when nothing listens at _PATH_LOG (a container), so the lines go to
 * the file of tdbfs_log_fallback instead, and the daemon says so. */
static void tdbfs_log_probe(struct tdbfs_daemon *d)
{
    char why[256], path[PATH_MAX];

    if (d->log_stderr || d->log_fd >= 0 ||
        tdbfs_syslog_listens(why, sizeof why))
        return;
    d->log_fd = tdbfs_log_fallback(path, sizeof path);
    if (d->log_fd >= 0)
        fprintf(stderr, "%s: syslog cannot be reached (%s): logging to %s\n",
                program_invocation_short_name, why, path);
    else
        fprintf(stderr, "%s: syslog cannot be reached (%s), nor %s (%s): "
                "nothing will be logged (-o log=FILE or log=stderr says "
                "where)\n", program_invocation_short_name, why, path,
                strerror(errno));
}

void tdbfs_log_daemonize(struct tdbfs_daemon *d, bool foreground)
{
    int errfd = -1;

    tdbfs_log_probe(d);
    /* fuse_daemonize points stderr at /dev/null: log=stderr keeps it */
    if (d->log_stderr && d->log_fd < 0 && !foreground) {
        errfd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        if (errfd < 0)
            d->log_stderr = false;
    }
    if (!d->log_stderr && d->log_fd < 0)
        openlog("tiledbfs", LOG_PID, LOG_DAEMON);
    fuse_daemonize(foreground);
    if (errfd >= 0) {
        dup2(errfd, STDERR_FILENO);
        close(errfd);
    }
    d->daemonized = true;
}
