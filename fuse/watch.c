/* watch.c: -o refresh=SECS: the thread that has the mount look for changes of the source (tdbm_refresh) every SECS s and, for a local folder, at once when inotify reports one. */
/*
 * inotify sees the changes made through this machine's kernel; a network
 * filesystem's changes made elsewhere, or a folder inotify cannot watch
 * (the user's watch limit), are seen by the check every SECS seconds,
 * which always runs.  An event only wakes the thread: what changed is
 * decided by the mount's digest of the folders' listings, so a missed or
 * extra event costs a check, never a wrong view.
 */
#include "tiledbfs.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

/* A file created in a watched folder is looked at when it is closed. */
#define TDBFS_WATCH_MASK (IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_FROM | \
                          IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF |    \
                          IN_MOVE_SELF | IN_ONLYDIR)
#define TDBFS_SETTLE_MS 20       /* quiet time that ends a burst of events */
#define TDBFS_SETTLE_MAX_MS 500  /* a burst is cut after this long */

struct tdbfs_watch {
    struct tdbfs_daemon *d;
    pthread_t thread;
    unsigned secs;
    int stopfd;       /* eventfd, written to stop the thread */
    int ifd;          /* inotify, or -1: the periodic check alone */
    int *wds;         /* the watches of the current generation's
                       * folders */
    size_t nwds;
    bool warned;      /* a watch failed, said once */
};

static uint64_t tdbfs_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void tdbfs_watch_say(struct tdbfs_watch *w, const char *what, int e)
{
    char line[512];

    snprintf(line, sizeof line, "refresh: inotify: %s: %s (the source is "
             "checked every %u s)", what, strerror(e), w->secs);
    tdbfs_log_line(w->d, line);
}

/* Watches the folders of the current generation, and no others. */
static void tdbfs_watch_sync(struct tdbfs_watch *w)
{
    char **paths;
    size_t n, k = 0;
    int *wds;

    if (w->ifd < 0 || tdbm_watch_dirs(w->d->m, &paths, &n) != 0)
        return;
    wds = calloc(n ? n : 1, sizeof *wds);
    for (size_t i = 0; wds && i < n; i++) {
        int wd = inotify_add_watch(w->ifd, paths[i], TDBFS_WATCH_MASK);
        if (wd >= 0) {
            wds[k++] = wd;
        } else if (errno != ENOENT && errno != ENOTDIR && !w->warned) {
            tdbfs_watch_say(w, paths[i], errno);
            w->warned = true;
        }
    }
    tdbm_names_free(paths, n);
    if (!wds)
        return;
    for (size_t i = 0; i < w->nwds; i++) {
        bool kept = false;
        for (size_t j = 0; j < k && !kept; j++)
            kept = wds[j] == w->wds[i];
        if (!kept)
            inotify_rm_watch(w->ifd, w->wds[i]);
    }
    free(w->wds);
    w->wds = wds;
    w->nwds = k;
}

/* Reads the queued events.  @return whether one may change the view (a
 * file just created is not yet written: its close follows). */
static bool tdbfs_watch_drain(struct tdbfs_watch *w)
{
    char buf[8192]
        __attribute__((aligned(__alignof__(struct inotify_event))));
    bool any = false;
    ssize_t len;

    while ((len = read(w->ifd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const void *)p;
            if (ev->mask != IN_CREATE)
                any = true;
            p += sizeof *ev + ev->len;
        }
    }
    return any;
}

/* Waits until no event came for TDBFS_SETTLE_MS (at most
 * TDBFS_SETTLE_MAX_MS): a writer's burst of files is one check. */
static void tdbfs_watch_settle(struct tdbfs_watch *w)
{
    uint64_t end = tdbfs_now_ms() + TDBFS_SETTLE_MAX_MS;
    struct pollfd p = {w->ifd, POLLIN, 0};

    while (tdbfs_now_ms() < end && poll(&p, 1, TDBFS_SETTLE_MS) > 0)
        tdbfs_watch_drain(w);
}

static void *tdbfs_watcher(void *arg)
{
    struct tdbfs_watch *w = arg;
    uint64_t next = 0;

    /* With inotify the first check is at once: it sees what changed
     * before the watches were set.  Without, the first is due in SECS s
     * like the others (the digest was taken before the mount's open). */
    if (w->ifd < 0)
        next = tdbfs_now_ms() + (uint64_t)w->secs * 1000;
    tdbfs_watch_sync(w);
    for (;;) {
        struct pollfd p[2] = {{w->stopfd, POLLIN, 0}, {w->ifd, POLLIN, 0}};
        uint64_t now = tdbfs_now_ms();
        bool check = now >= next;
        int r;

        if (!check) {
            uint64_t wait = next - now;
            r = poll(p, w->ifd >= 0 ? 2 : 1,
                     wait > INT_MAX ? INT_MAX : (int)wait);
            if (r < 0 && errno != EINTR)
                break;
            if (r > 0 && p[0].revents)
                break;
            if (r > 0 && (p[1].revents & POLLIN) && tdbfs_watch_drain(w)) {
                tdbfs_watch_settle(w);
                check = true;
            }
            check = check || tdbfs_now_ms() >= next;
        }
        if (check) {
            if (tdbm_refresh(w->d->m) > 0)
                tdbfs_watch_sync(w);
            next = tdbfs_now_ms() + (uint64_t)w->secs * 1000;
        }
    }
    return NULL;
}

void tdbfs_watcher_start(struct tdbfs_daemon *d)
{
    struct tdbfs_watch *w;
    char **paths;
    size_t n = 0;

    if (!tdbm_refresh_secs(d->m) || !(w = calloc(1, sizeof *w)))
        return;
    w->d = d;
    w->secs = tdbm_refresh_secs(d->m);
    w->ifd = -1;
    w->stopfd = eventfd(0, EFD_CLOEXEC);
    if (tdbm_watch_dirs(d->m, &paths, &n) == 0)
        tdbm_names_free(paths, n);
    if (n && (w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
        tdbfs_watch_say(w, "inotify_init1", errno);
    if (w->stopfd < 0 ||
        pthread_create(&w->thread, NULL, tdbfs_watcher, w) != 0) {
        tdbfs_log_line(d, "refresh: no watcher thread: the mount shows the "
                       "source as it was when mounted");
        if (w->stopfd >= 0)
            close(w->stopfd);
        if (w->ifd >= 0)
            close(w->ifd);
        free(w);
        return;
    }
    d->watch = w;
}

void tdbfs_watcher_stop(struct tdbfs_daemon *d)
{
    struct tdbfs_watch *w = d->watch;
    uint64_t one = 1;

    if (!w)
        return;
    while (write(w->stopfd, &one, sizeof one) < 0 && errno == EINTR)
        ;
    pthread_join(w->thread, NULL);
    close(w->stopfd);
    if (w->ifd >= 0)
        close(w->ifd);
    free(w->wds);
    free(w);
    d->watch = NULL;
}
