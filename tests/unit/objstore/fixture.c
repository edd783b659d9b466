/* fixture.c: the object-store tests' HTTP server (fixture.h). */
#include "fixture.h"
#include "s3/s3.h"
#include "objstore/objstore.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct http_conn {
    struct http_srv *srv;
    int fd;
    int seq;                    /* 0: the server's first connection */
};

static bool http_stopped(struct http_srv *s)
{
    pthread_mutex_lock(&s->lock);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    return stop;
}

/* Stops the server: its threads end (the client has closed its
 * connections) and are joined. */
void http_stop(struct http_srv *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_mutex_unlock(&s->lock);
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->acceptor, NULL);
    close(s->fd);
    for (int i = 0; i < s->nconn; i++)
        pthread_join(s->conn[i], NULL);
    free(s->put_body);
}

/* Reads from fd into buf (holding *have bytes) until a request's head is
 * complete.  @return the head's end, or NULL when the peer is gone or the
 * head does not fit. */
static char *http_read_head(int fd, char *buf, size_t cap, size_t *have)
{
    char *end;
    while (!(end = memmem(buf, *have, "\r\n\r\n", 4))) {
        ssize_t n = *have < cap ? read(fd, buf + *have, cap - *have) : -1;
        if (n <= 0)
            return NULL;
        *have += (size_t)n;
    }
    return end;
}

/* Answers the request for `path` whose head is buf..end: a "data" path
 * with a range gets those bytes of an object of DATA_SIZE bytes
 * (data_byte(i)), any other its path as the body.  @return whether the
 * answer was written whole. */
static bool http_answer(struct http_conn *c, const char *buf,
                        const char *end, const char *path)
{
    struct http_srv *s = c->srv;
    char head[256];
    static const char rh[] = "\r\nrange: bytes=";
    const char *range = memmem(buf, (size_t)(end - buf), rh, sizeof rh - 1);
    unsigned long long lo = 0, hi = 0;
    int hl;
    uint8_t *body = NULL;
    size_t blen = strncmp(buf, "PUT ", 4) ? strlen(path) : 0;
    if (strstr(path, "data") && range &&
        sscanf(range + sizeof rh - 1, "%llu-%llu", &lo, &hi) == 2 &&
        lo < DATA_SIZE) {
        if (hi >= DATA_SIZE)
            hi = DATA_SIZE - 1;
        blen = (size_t)(hi - lo + 1);
        body = malloc(blen);
        for (size_t i = 0; body && i < blen; i++)
            body[i] = data_byte(lo + i);
        hl = snprintf(head, sizeof head, "HTTP/1.1 206 Partial Content\r\n"
                      "Content-Length: %zu\r\nContent-Range: bytes "
                      "%llu-%llu/%d\r\n\r\n", blen, lo, hi, DATA_SIZE);
    } else {
        hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\n"
                      "Content-Length: %zu\r\nETag: \"e\"\r\n\r\n", blen);
    }
    pthread_mutex_lock(&s->lock);
    s->now--;
    s->served++;
    pthread_mutex_unlock(&s->lock);
    bool ok = write(c->fd, head, (size_t)hl) == hl &&
              write(c->fd, body ? (char *)body : path, blen) ==
                  (ssize_t)blen;
    free(body);
    return ok;
}

/* The Content-Length of the request whose head is buf..end, or 0. */
static size_t http_content_length(const char *buf, const char *end)
{
    static const char cl[] = "\r\ncontent-length:";
    for (const char *p = buf; p + sizeof cl - 1 <= end; p++)
        if (!strncasecmp(p, cl, sizeof cl - 1))
            return (size_t)strtoull(p + sizeof cl - 1, NULL, 10);
    return 0;
}

/* Reads the body of the request whose head is buf..end (its
 * Content-Length bytes: those of buf's `have` after the head, then from
 * fd) into *body (malloc'd; NULL when empty) of *blen bytes.  @return the
 * bytes of buf the head and the body took, or 0 when the body did not
 * come whole (*body NULL). */
static size_t http_read_body(int fd, char *buf, const char *end, size_t have,
                             uint8_t **body, size_t *blen)
{
    size_t head = (size_t)(end + 4 - buf), len = http_content_length(buf, end);
    size_t in = have - head < len ? have - head : len, got = in;
    *blen = 0;
    if (!(*body = len ? malloc(len) : NULL))
        return len ? 0 : head;
    memcpy(*body, end + 4, in);
    while (got < len) {
        ssize_t n = read(fd, *body + got, len - got);
        if (n <= 0) {
            free(*body);
            *body = NULL;
            return 0;
        }
        got += (size_t)n;
    }
    *blen = len;
    return head + in;
}

/* A request whose body was read: counted, and its body taken when it is
 * a PUT to be answered. */
static void http_record(struct http_srv *s, const char *buf, uint8_t *body,
                        size_t blen, bool answered)
{
    pthread_mutex_lock(&s->lock);
    if (!strncmp(buf, "PUT ", 4)) {
        s->puts++;
        if (answered) {
            free(s->put_body);
            s->put_body = body;
            s->put_len = blen;
            body = NULL;
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(body);
}

static void *http_conn_main(void *arg)
{
    struct http_conn *c = arg;
    struct http_srv *s = c->srv;
    char buf[8192];
    size_t have = 0;
    for (int nth = 0;; nth++) {
        char *end = http_read_head(c->fd, buf, sizeof buf, &have);
        if (!end)
            break;
        char path[1024] = "";
        sscanf(buf, "%*s %1023s", path);
        pthread_mutex_lock(&s->lock);
        if (++s->now > s->peak)
            s->peak = s->now;
        bool drop = s->drop_second && c->seq == 0 && nth == 1;
        pthread_mutex_unlock(&s->lock);
        if (strstr(path, "stall")) {
            while (!http_stopped(s))
                usleep(10000);
            break;
        }
        uint8_t *body;
        size_t blen, used = http_read_body(c->fd, buf, end, have, &body,
                                           &blen);
        usleep((useconds_t)s->delay_ms * 1000);
        if (used)       /* before the answer, which the client may await */
            http_record(s, buf, body, blen, !drop);
        if (!used || drop || !http_answer(c, buf, end, path))
            break;
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    close(c->fd);
    free(c);
    return NULL;
}

static void *http_accept_main(void *arg)
{
    struct http_srv *s = arg;
    for (;;) {
        int fd = accept(s->fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        struct http_conn *c = malloc(sizeof *c);
        c->srv = s;
        c->fd = fd;
        pthread_mutex_lock(&s->lock);
        c->seq = s->nconn;
        if (s->stop || s->nconn == 64 ||
            pthread_create(&s->conn[s->nconn], NULL, http_conn_main, c)) {
            close(fd);
            free(c);
        } else {
            s->nconn++;
        }
        pthread_mutex_unlock(&s->lock);
    }
}

int http_start(struct http_srv *s, int delay_ms)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t al = sizeof a;
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    s->delay_ms = delay_ms;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((s->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        bind(s->fd, (struct sockaddr *)&a, sizeof a) ||
        listen(s->fd, 64) ||
        getsockname(s->fd, (struct sockaddr *)&a, &al) ||
        pthread_create(&s->acceptor, NULL, http_accept_main, s))
        return -1;
    s->port = ntohs(a.sin_port);
    return 0;
}

/* A backend on the server, tuned: `requests` in flight, reads within
 * timeout_s. */
int http_backend(struct tdb_io *io, const struct http_srv *srv,
                 unsigned requests, unsigned timeout_s)
{
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", srv->port);
    struct tdb_s3_config c = {.endpoint = ep};
    struct tdb_error err = {0};
    int r = tdb_io_s3(io, "s3://b/p", &c, &err);
    struct objstore *s = io->ctx;
    if (!r) {
        s->loop.max_active = requests;
        s->loop.timeout_ms = timeout_s * 1000u;
        s->loop.low_speed_s = 1;
    }
    return r;
}
