/* creds.c: the S3 backend's credentials held as a locked set that a
 * thread of its own renews (from the source creds_source.c fetches)
 * before they expire, and the retry of a request S3 refused because its
 * keys expired. */
#include "core/core.h"
#include "s3/creds_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S3C_WAIT_MS 10000           /* a caller waits this long at most */
#define S3C_WINDOW_MS (5 * 60000)   /* renew this long before expiry ... */
#define S3C_MUST_MS 60000           /* ... and wait for it in the last */
#define S3C_RETRY_MAX_MS 60000      /* after failures, tries this apart */

/* ------------------------------------------- the renewable key set */

struct tdb_s3_creds {
    pthread_mutex_t lock;       /* everything below but src */
    pthread_cond_t cv;          /* a fetch ended; the thread is wanted
                                 * (CLOCK_MONOTONIC) */
    unsigned refs;
    struct tdb_s3_source *src;  /* NULL: keys that never change */
    struct tdb_s3_keys *cur;    /* the keys requests are signed with */
    uint64_t gen;               /* cur's number */
    bool running;               /* the renewal thread runs (asleep
                                 * until the keys are due, or fetching) */
    bool fetching;              /* it is fetching */
    bool joinable;              /* `thread` was started and not joined */
    bool force;                 /* cur was refused: renew at once */
    bool used;                  /* held since the last fetch began */
    bool stop;                  /* the last reference went: end */
    pid_t pid;                  /* the process the thread runs in */
    pthread_t thread;
    int64_t not_before;         /* wall ms: no renewal before (failures) */
    unsigned fails;             /* renewals failed in a row */
    int64_t fetch_ms;           /* how long the last fetch took */
    struct tdb_s3_creds_stats stats;
};

int64_t tdb_s3_renew_at(int64_t got, int64_t expires)
{
    if (!expires)
        return INT64_MAX;
    int64_t life = expires - got, w = life / 3;
    if (w > S3C_WINDOW_MS)
        w = S3C_WINDOW_MS;
    return expires - (w > 0 ? w : 0);
}

/* Past this, requests would be refused: a caller waits for the renewal. */
static int64_t s3c_must_at(const struct tdb_s3_keys *k)
{
    int64_t w = (k->expires - k->got) / 10;
    if (w > S3C_MUST_MS)
        w = S3C_MUST_MS;
    return k->expires - (w > 0 ? w : 0);
}

static int64_t s3c_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits on c->cv until monotonic ms `until` at most.  c->lock held. */
static void s3c_sleep(struct tdb_s3_creds *c, int64_t until)
{
    struct timespec ts = {.tv_sec = until / 1000,
                          .tv_nsec = (until % 1000) * 1000000};
    pthread_cond_timedwait(&c->cv, &c->lock, &ts);
}

/* When the next renewal is due (wall ms).  c->lock held. */
static int64_t s3c_due(const struct tdb_s3_creds *c)
{
    int64_t at = tdb_s3_renew_at(c->cur->got, c->cur->expires);
    return c->not_before > at ? c->not_before : at;
}

/* Drops a hold of k.  c->lock held. */
static void s3c_unhold(struct tdb_s3_keys *k)
{
    if (k && !--k->refs)
        tdb_s3_keys_free(k);
}

/* Makes k the keys requests are signed with.  c->lock held. */
static void s3c_install(struct tdb_s3_creds *c, struct tdb_s3_keys *k)
{
    k->refs = 1;
    k->gen = ++c->gen;
    s3c_unhold(c->cur);
    c->cur = k;
}

static int s3c_new(struct tdb_s3_creds **out, struct tdb_s3_source *src,
                   struct tdb_s3_keys *k)
{
    struct tdb_s3_creds *c = calloc(1, sizeof *c);
    pthread_condattr_t ca;
    if (!c)
        return TDB_E_NOMEM;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->refs = 1;
    c->src = src;
    s3c_install(c, k);
    c->stats.fetches = src ? 1 : 0;
    c->stats.expires = k->expires;
    *out = c;
    return 0;
}

int tdb_s3_creds_keys(struct tdb_s3_creds **out, const char *id,
                      const char *secret, const char *token)
{
    struct tdb_s3_keys *k;
    char why[S3C_WHY];
    *out = NULL;
    int r = tdb_s3_keys_make(&k, id, secret, token, 0, why);
    if (r)
        return r == TDB_E_NOMEM ? r : TDB_E_INVAL;
    if ((r = s3c_new(out, NULL, k)))
        tdb_s3_keys_free(k);
    return r;
}

int tdb_s3_creds_new(struct tdb_s3_creds **out, struct tdb_s3_source *src,
                     struct tdb_error *err)
{
    struct tdb_s3_keys *k = NULL;
    char why[S3C_WHY] = "";
    *out = NULL;
    int64_t t0 = s3c_mono_ms();
    int r = tdb_s3_fetch(src, &k, why);
    if (r) {
        r = tdb_err(err, r, "credentials from %s: %s", src->what, why);
        tdb_s3_source_free(src);
        return r;
    }
    if ((r = s3c_new(out, k->expires ? src : NULL, k))) {
        tdb_s3_keys_free(k);
        tdb_s3_source_free(src);
        return tdb_err(err, r, "out of memory");
    }
    (*out)->fetch_ms = s3c_mono_ms() - t0;
    if (!k->expires)    /* keys that never expire are never renewed */
        tdb_s3_source_free(src);
    return 0;
}

struct tdb_s3_creds *tdb_s3_creds_ref(struct tdb_s3_creds *c)
{
    if (c) {
        pthread_mutex_lock(&c->lock);
        c->refs++;
        pthread_mutex_unlock(&c->lock);
    }
    return c;
}

/* A thread of the process that forked is not in this one.  c->lock
 * held. */
static void s3c_after_fork(struct tdb_s3_creds *c)
{
    if ((c->running || c->joinable) && c->pid != getpid()) {
        c->running = c->fetching = false;
        c->joinable = false;
    }
}

void tdb_s3_creds_unref(struct tdb_s3_creds *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    s3c_after_fork(c);
    bool last = !--c->refs;
    if (last) {
        c->stop = true;
        pthread_cond_broadcast(&c->cv);
        while (c->running)      /* a fetch under way ends first */
            pthread_cond_wait(&c->cv, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    if (!last)
        return;
    if (c->joinable)
        pthread_join(c->thread, NULL);
    s3c_unhold(c->cur);
    tdb_s3_source_free(c->src);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Fetches new keys (c->lock held, dropped meanwhile): installed, or
 * after a failure the next try is put off. */
static void s3c_renew(struct tdb_s3_creds *c)
{
    struct tdb_s3_keys *k = NULL;
    char why[S3C_WHY];
    c->fetching = true;
    c->used = false;
    pthread_mutex_unlock(&c->lock);
    int64_t t0 = s3c_mono_ms();
    int r = tdb_s3_fetch(c->src, &k, why);
    explicit_bzero(why, sizeof why);
    pthread_mutex_lock(&c->lock);
    c->fetch_ms = s3c_mono_ms() - t0;
    c->stats.fetches++;
    c->force = false;
    if (!r) {
        s3c_install(c, k);
        c->fails = 0;
        c->not_before = 0;
        c->stats.expires = k->expires;
    } else {
        /* tried again 1 s later, then 2, 4 ... up to a minute */
        c->stats.failures++;
        unsigned sh = c->fails < 6 ? c->fails : 6;
        int64_t wait = (int64_t)1000 << sh;
        c->fails++;
        c->not_before = (int64_t)tdb_now_ms() +
                        (wait < S3C_RETRY_MAX_MS ? wait : S3C_RETRY_MAX_MS);
    }
    c->fetching = false;
    pthread_cond_broadcast(&c->cv);
}

/* The renewal thread: sleeps until the keys are due (tdb_s3_renew_at, or
 * the next try after a failure) or wanted at once (force), then renews
 * them if they were used (held) since the last fetch began; keys not used
 * by then are left as they are and the thread ends (the next hold starts
 * it again). */
static void *s3c_renew_main(void *arg)
{
    struct tdb_s3_creds *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        bool go = false;
        while (!c->stop) {
            int64_t now = (int64_t)tdb_now_ms(), due = s3c_due(c);
            if (c->force || (c->cur->expires && now >= due)) {
                go = c->force || c->used;
                break;
            }
            if (!c->cur->expires)   /* keys that never expire */
                break;
            s3c_sleep(c, s3c_mono_ms() + (due - now));
        }
        if (!go || c->stop)
            break;
        s3c_renew(c);
    }
    c->running = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Makes sure the renewal thread runs (started when it does not), woken
 * when `force`.  c->lock held; never waits for a fetch. */
static void s3c_kick(struct tdb_s3_creds *c)
{
    s3c_after_fork(c);
    if (!c->src)
        return;
    if (c->running) {
        if (c->force)
            pthread_cond_broadcast(&c->cv);
        return;
    }
    if (c->joinable)    /* ended: it unlocked c->lock for the last time */
        pthread_join(c->thread, NULL);
    c->joinable = false;
    if (pthread_create(&c->thread, NULL, s3c_renew_main, c) == 0) {
        c->running = true;
        c->joinable = true;
        c->pid = getpid();
    }
}

struct tdb_s3_keys *tdb_s3_creds_hold(struct tdb_s3_creds *c)
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->lock);
    struct tdb_s3_keys *k = c->cur;
    k->refs++;
    if (c->src) {
        c->used = true;
        if (!c->running || c->pid != getpid())
            s3c_kick(c);
    }
    pthread_mutex_unlock(&c->lock);
    return k;
}

void tdb_s3_creds_drop(struct tdb_s3_creds *c, struct tdb_s3_keys *k)
{
    if (!c || !k)
        return;
    pthread_mutex_lock(&c->lock);
    s3c_unhold(k);
    pthread_mutex_unlock(&c->lock);
}

void tdb_s3_creds_wait(struct tdb_s3_creds *c)
{
    if (!c || !c->src)      /* src is set once, before any sharing */
        return;
    int64_t until = s3c_mono_ms() + S3C_WAIT_MS;
    pthread_mutex_lock(&c->lock);
    c->used = true;
    int64_t now = (int64_t)tdb_now_ms();
    if (c->cur->expires && now >= s3c_must_at(c->cur) &&
        now >= c->not_before) {
        c->force = true;
        s3c_kick(c);
        while (c->running && (c->force || c->fetching) &&
               now >= s3c_must_at(c->cur) && s3c_mono_ms() < until) {
            s3c_sleep(c, until);
            now = (int64_t)tdb_now_ms();
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* Did S3 refuse the keys as expired (or not valid any more)?  Its error
 * codes ExpiredToken, InvalidToken, TokenRefreshRequired (and STS's
 * ExpiredTokenException); a HEAD's answer has no body: then the keys
 * having passed their expiry says it. */
static bool s3c_refused(const struct tdb_s3_try *c,
                        const struct tdb_s3_keys *k, int64_t now)
{
    if (!c->body->len)
        return c->status == 400 &&
               (k->gen != c->keys_gen || (k->expires && now >= k->expires));
    struct tdb_store_answer x;
    bool yes = false;
    if (!tdb_s3_xml_parse(&x, c->body, "") && x.code)
        yes = !strcmp(x.code, "ExpiredToken") ||
              !strcmp(x.code, "ExpiredTokenException") ||
              !strcmp(x.code, "InvalidToken") ||
              !strcmp(x.code, "TokenRefreshRequired");
    tdb_store_answer_free(&x);
    return yes;
}

bool tdb_s3_creds_retry(struct tdb_s3_creds *cr, const struct tdb_s3_try *c,
                        uint64_t now_ms, uint64_t *wait_ms)
{
    if (!cr || !cr->src || *c->renewed ||
        (c->status != 400 && c->status != 403))
        return false;
    int64_t now = (int64_t)tdb_now_ms();
    pthread_mutex_lock(&cr->lock);
    bool refused = s3c_refused(c, cr->cur, now);
    if (refused && cr->cur->gen == c->keys_gen) {
        /* the keys it was signed with are still the current ones: renew
         * now; the retry waits for about twice the last fetch */
        cr->force = true;
        s3c_kick(cr);
        int64_t w = 2 * cr->fetch_ms + 250;
        *wait_ms = (uint64_t)(w < 5000 ? w : 5000);
    } else {
        *wait_ms = 0;   /* signed with older keys: again with the new */
    }
    pthread_mutex_unlock(&cr->lock);
    if (!refused)
        return false;
    *c->renewed = true;
    return !c->deadline || now_ms + *wait_ms < c->deadline;
}

void tdb_s3_creds_stats(struct tdb_s3_creds *c, struct tdb_s3_creds_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    *st = c->stats;
    pthread_mutex_unlock(&c->lock);
}
