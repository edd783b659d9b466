/* upload.c: storing an object from a local file: one PUT, or, above
 * the part size, a multipart upload whose parts go up many at a time on
 * the I/O thread, each read from the file as it is sent; Complete ends it
 * (the object appears whole or not at all), a failure aborts it.  Uploads
 * under way are recorded in a journal folder (when the backend has one),
 * so that the next backend with the same journal aborts what a killed
 * process left. */
#include "core/core.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define OS_PARTS_MAX 10000      /* parts of one upload at most (S3's) */
#define OS_JOURNAL_MAX 4096     /* bytes of one journal record at most */
#define OS_JOURNAL_MAGIC "tiledbfs multipart upload 1\n"

uint64_t tdb_os_part_size(uint64_t part_size, uint64_t len)
{
    uint64_t ps = part_size < TDB_S3_PART_MIN ? TDB_S3_PART_MIN : part_size;
    if (len > (uint64_t)OS_PARTS_MAX * ps) {
        /* grown to a whole number of MiB that keeps 10,000 parts */
        ps = (len + OS_PARTS_MAX - 1) / OS_PARTS_MAX;
        ps = (ps + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
    }
    return ps;
}

/* ------------------------------------------------------------ journal */

/* The record's name for an upload: a hash of its bucket, key and id. */
static void os_journal_name(struct objstore *s, const char *key, const char *id,
                            char out[32])
{
    char *all = NULL;
    uint64_t h = 0;
    if (asprintf(&all, "%s\n%s\n%s", s->bucket, key, id) >= 0)
        h = tdb_os_hash(all);
    free(all);
    snprintf(out, 32, "%016llx.upload", (unsigned long long)h);
}

/* Records upload `id` of key (best effort: a record that cannot be
 * written leaves only the abort of a killed process undone). */
static void os_journal_add(struct objstore *s, const char *key, const char *id)
{
    char name[32], *text = NULL;
    if (s->journal_fd < 0 || !s->proto->mp_abort)
        return;
    os_journal_name(s, key, id, name);
    int n = asprintf(&text, OS_JOURNAL_MAGIC "%s\n%s\n%s\n", s->bucket, key,
                     id);
    int fd = n < 0 ? -1
                   : openat(s->journal_fd, name, O_WRONLY | O_CREAT | O_TRUNC |
                            O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        if (write(fd, text, (size_t)n) == n)
            fsync(fd);
        close(fd);
    }
    if (n >= 0)
        free(text);
}

static void os_journal_drop(struct objstore *s, const char *key, const char *id)
{
    char name[32];
    if (s->journal_fd < 0)
        return;
    os_journal_name(s, key, id, name);
    unlinkat(s->journal_fd, name, 0);
}

/* -------------------------------------------------------------- calls */

int tdb_os_ask(struct objstore *s, struct os_call *c, struct tdb_store_answer *x)
{
    struct tdb_store_answer mine;
    if (!x)
        x = &mine;
    memset(x, 0, sizeof *x);
    int r = tdb_os_perform(s, c);
    if (!r)
        r = tdb_os_status(s, c, NULL);
    if (!r && (s->proto->parse(x, &c->mem, NULL) || x->is_error))
        r = TDB_E_IO;
    if (x == &mine)
        tdb_store_answer_free(x);
    tdb_os_call_clear(c);
    return r;
}


/* ------------------------------------------------------- the upload */

struct os_upload;

/* One part in flight. */
struct os_part {
    struct os_call c;
    struct os_upload *u;
    char *query;
    char range[64];             /* of a copy: x-amz-copy-source-range */
    unsigned n;                 /* its number, from 1 */
};

struct os_upload {
    pthread_mutex_t m;
    pthread_cond_t cv;
    unsigned inflight;
    int r;                      /* the first failure */
    char **etags;               /* of each part, when it came back */
    bool etag_wanted;           /* the completion names them (S3's) */
    struct os_part **idle;      /* slots not in flight */
    unsigned nfree;
};

/* A part ended (on the I/O thread). */
static void os_part_done(struct os_call *c)
{
    struct os_part *p = c->arg;
    struct os_upload *u = p->u;
    int r = c->r ? c->r
            : c->cc != CURLE_OK || c->status < 200 || c->status >= 300
                ? TDB_E_IO : 0;
    if (!r && c->copy_source) {
        /* UploadPartCopy: the part's ETag is in the body (which can be
         * an Error after a 200) */
        struct tdb_store_answer x;
        r = tdb_s3_xml_parse(&x, &c->mem, NULL) || x.is_error ||
                    !x.result_etag
                ? TDB_E_IO : 0;
        if (!r) {
            free(c->etag);
            c->etag = x.result_etag;
            x.result_etag = NULL;
        }
        tdb_store_answer_free(&x);
    }
    if (!r && !c->etag && u->etag_wanted)
        r = TDB_E_IO;
    /* a store without UploadPartCopy (s3rver) */
    if (r && c->copy_source && c->status == 501)
        r = TDB_E_UNSUPPORTED;
    pthread_mutex_lock(&u->m);
    if (!r) {
        u->etags[p->n - 1] = c->etag;
        c->etag = NULL;
    } else if (!u->r) {
        u->r = r;
    }
    tdb_os_call_clear(c);
    free(p->query);
    p->query = NULL;
    u->idle[u->nfree++] = p;
    u->inflight--;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->m);
}

/* What the parts of an upload are: ranges of a file, or of an object
 * copied (source, encoded "/BUCKET/KEY"). */
struct os_source {
    int fd;
    const char *copy;
    uint64_t len;
};

/* Sends the parts of src (parts of ps) of upload id, at most `window` at
 * a time, and waits for them.  @return 0 with every ETag in u->etags, or
 * a TDB_E_* code. */
static int os_send_parts(struct objstore *s, struct os_upload *u, const char *key,
                         const char *id, const struct os_source *src,
                         uint64_t ps, unsigned nparts, unsigned window)
{
    uint64_t len = src->len;
    struct os_part *slots = calloc(window, sizeof *slots);
    int r = slots ? 0 : TDB_E_NOMEM;
    for (unsigned i = 0; slots && i < window; i++) {
        slots[i].u = u;
        u->idle[u->nfree++] = &slots[i];
    }
    for (unsigned n = 1; !r && n <= nparts; n++) {
        pthread_mutex_lock(&u->m);
        while (!u->nfree && !u->r)
            pthread_cond_wait(&u->cv, &u->m);
        r = u->r;
        struct os_part *p = r ? NULL : u->idle[--u->nfree];
        pthread_mutex_unlock(&u->m);
        if (r)
            break;
        uint64_t off = (uint64_t)(n - 1) * ps;
        p->n = n;
        p->query = s->proto->part_query(id, n);
        uint64_t pl = len - off < ps ? len - off : ps;
        p->c = (struct os_call){.method = "PUT", .key = key, .query = p->query,
                                .up_fd = src->copy ? -1 : src->fd,
                                .up_off = off, .up_len = src->copy ? 0 : pl,
                                .sink = src->copy ? OS_SINK_MEM
                                                  : OS_SINK_NONE,
                                .done = os_part_done, .arg = p};
        if (src->copy) {
            snprintf(p->range, sizeof p->range, "bytes=%llu-%llu",
                     (unsigned long long)off,
                     (unsigned long long)(off + pl - 1));
            p->c.copy_source = src->copy;
            p->c.copy_range = p->range;
        }
        pthread_mutex_lock(&u->m);
        u->inflight++;
        pthread_mutex_unlock(&u->m);
        /* submit hashes the part here, while the others go up */
        r = p->query ? tdb_os_submit(s, &p->c) : TDB_E_NOMEM;
        if (r) {
            pthread_mutex_lock(&u->m);
            u->inflight--;
            free(p->query);
            p->query = NULL;
            u->idle[u->nfree++] = p;
            pthread_mutex_unlock(&u->m);
        }
    }
    pthread_mutex_lock(&u->m);
    while (u->inflight)
        pthread_cond_wait(&u->cv, &u->m);
    if (!r)
        r = u->r;
    pthread_mutex_unlock(&u->m);
    free(slots);
    return r;
}

/* A multipart upload of src as key. */
static int os_multipart(struct objstore *s, const char *key,
                        const struct os_source *src, uint64_t ps)
{
    uint64_t len = src->len;
    unsigned nparts = (unsigned)((len + ps - 1) / ps);
    unsigned window = s->loop.max_active < nparts ? s->loop.max_active
                                                  : nparts;
    char *id = NULL;
    int r = s->proto->mp_start(s, key, &id);
    if (r)
        return r;
    os_journal_add(s, key, id);

    struct os_upload u = {.etags = calloc(nparts, sizeof(char *)),
                          .etag_wanted = s->proto->part_etag,
                          .idle = calloc(window, sizeof(struct os_part *))};
    pthread_mutex_init(&u.m, NULL);
    pthread_cond_init(&u.cv, NULL);
    r = u.etags && u.idle ? os_send_parts(s, &u, key, id, src, ps, nparts,
                                          window)
                          : TDB_E_NOMEM;
    if (!r)
        r = s->proto->mp_complete(s, key, id, u.etags, nparts);
    /* nothing stays stored (and billed) of an upload that failed */
    if (!r || !s->proto->mp_abort || s->proto->mp_abort(s, key, id))
        os_journal_drop(s, key, id);
    for (unsigned i = 0; u.etags && i < nparts; i++)
        free(u.etags[i]);
    free(u.etags);
    free(u.idle);
    free(id);
    pthread_cond_destroy(&u.cv);
    pthread_mutex_destroy(&u.m);
    return r == TDB_E_NOENT ? TDB_E_IO : r;
}


int tdb_os_upload_fd(struct objstore *s, const char *key, int fd, uint64_t len)
{
    uint64_t ps = tdb_os_part_size(s->part_size, len);
    if (len > ps)
        return os_multipart(s, key, &(struct os_source){fd, NULL, len}, ps);
    struct os_call c = {.method = "PUT", .key = key, .up_fd = fd,
                        .up_len = len, .sink = OS_SINK_NONE};
    int r = tdb_os_perform(s, &c);
    if (!r)
        r = tdb_os_status(s, &c, NULL);
    tdb_os_call_clear(&c);
    return r;
}

int tdb_os_copy_object(struct objstore *s, const char *bucket, const char *from,
                       uint64_t size, const char *to)
{
    char *src = NULL, *enc = tdb_store_encode(from, true);
    if (!enc || asprintf(&src, "/%s/%s", bucket, enc) < 0) {
        free(enc);
        return TDB_E_NOMEM;
    }
    free(enc);
    uint64_t ps = size == UINT64_MAX ? 0 : tdb_os_part_size(s->part_size, size);
    int r;
    if (ps && size > ps) {
        r = os_multipart(s, to, &(struct os_source){-1, src, size}, ps);
    } else {
        struct os_call c = {.method = "PUT", .key = to, .up_fd = -1,
                            .copy_source = src, .sink = OS_SINK_MEM};
        r = tdb_os_ask(s, &c, NULL);
    }
    free(src);
    return r;
}

/* ---------------------------------------------- the journal's leftovers */

/* Reads record `name` of the journal: *bucket, *key, *id (new strings).
 * @return 0, or -1 when it is not one of ours. */
static int os_journal_read(int dfd, const char *name, char **bucket,
                           char **key, char **id)
{
    char buf[OS_JOURNAL_MAX + 1];
    size_t got = 0;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    for (ssize_t n; got < OS_JOURNAL_MAX &&
                    (n = read(fd, buf + got, OS_JOURNAL_MAX - got)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = 0;
    size_t ml = strlen(OS_JOURNAL_MAGIC);
    if (got < ml || memcmp(buf, OS_JOURNAL_MAGIC, ml))
        return -1;
    char *f[3], *p = buf + ml;
    for (int i = 0; i < 3; i++) {
        char *nl = strchr(p, '\n');
        if (!nl || nl == p)
            return -1;
        *nl = 0;
        f[i] = p;
        p = nl + 1;
    }
    *bucket = strdup(f[0]);
    *key = strdup(f[1]);
    *id = strdup(f[2]);
    if (*bucket && *key && *id)
        return 0;
    free(*bucket);
    free(*key);
    free(*id);
    return -1;
}

int tdb_os_journal_open(struct objstore *s, const char *dir, unsigned *aborted,
                        struct tdb_error *err)
{
    *aborted = 0;
    if (mkdir(dir, 0700) && errno != EEXIST)
        return tdb_err(err, TDB_E_IO, "%s: cannot make it: %s", dir,
                       strerror(errno));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (dfd < 0 || fstat(dfd, &st))
        return tdb_err(err, TDB_E_IO, "%s: %s", dir, strerror(errno));
    if (st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(dfd);
        return tdb_err(err, TDB_E_IO, "%s: not ours alone (its owner or "
                       "mode): refused", dir);
    }
    if (s->journal_fd >= 0)
        close(s->journal_fd);
    s->journal_fd = dfd;
    int lfd = dup(dfd);
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        return tdb_err(err, TDB_E_IO, "%s: %s", dir, strerror(errno));
    }
    for (struct dirent *e; (e = readdir(d));) {
        char *bucket, *key, *id;
        if (e->d_name[0] == '.' ||
            os_journal_read(dfd, e->d_name, &bucket, &key, &id))
            continue;
        /* an upload to another bucket is another mount's to abort */
        if (!strcmp(bucket, s->bucket) && s->proto->mp_abort &&
            s->proto->mp_abort(s, key, id)) {
            unlinkat(dfd, e->d_name, 0);
            (*aborted)++;
        }
        free(bucket);
        free(key);
        free(id);
    }
    closedir(d);
    return 0;
}
