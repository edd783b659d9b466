/* options.c: the mount contract's options, one typed table parsed once for both front ends. */
#include "mount.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TDBM_OPT(n, k, f, u, h) \
    { n, k, offsetof(struct tdbm_options, f), u, h }

const struct tdbm_option tdbm_option_table[] = {
    TDBM_OPT("timestamp", TDBM_OPT_TIMESTAMP, open, "timestamp=T|T1:T2",
             "open as of T (ms since epoch)"),
    TDBM_OPT("cache_size", TDBM_OPT_SIZE, open.cache_bytes,
             "cache_size=N[KMG]", "decoded-tile cache budget (default 256M)"),
    TDBM_OPT("threads", TDBM_OPT_COUNT, open.threads, "threads=N",
             "decoding and sparse merge threads (default: one per CPU)"),
    TDBM_OPT("key_file", TDBM_OPT_KEYFILE, key, "key_file=PATH",
             "32-byte AES-256-GCM key"),
    TDBM_OPT("huge_pages", TDBM_OPT_BOOL, open.huge_pages, "huge_pages",
             "decode large tiles into transparent huge pages"),
    TDBM_OPT("no_splice", TDBM_OPT_BOOL, no_splice, "no_splice",
             "copy unfiltered tiles into replies, not splice them"),
    TDBM_OPT("rw", TDBM_OPT_BOOL, rw, "rw",
             "enable __staging/ and __meta/ writes"),
    TDBM_OPT("writable", TDBM_OPT_BOOL, writable, "writable",
             "the same as rw, also through mount(8)"),
    TDBM_OPT("ro", TDBM_OPT_BOOL, ro, "ro", "read-only (the default)"),
    TDBM_OPT("staging_dir", TDBM_OPT_STRING, staging_dir, "staging_dir=PATH",
             "where staged bytes are kept (default\n"
             "SOURCE/../.NAME.tiledbfs-staging)"),
    TDBM_OPT("group_members", TDBM_OPT_MEMBERS, open.members,
             "group_members=WHERE",
             "inside: follow only group members inside\n"
             "SOURCE (default); any: wherever they are"),
    TDBM_OPT("refresh", TDBM_OPT_SECONDS, refresh, "refresh=SECS",
             "show what other writers commit: look for\n"
             "changes every SECS s (1 to 86400; a local\n"
             "folder also at once, through inotify)"),
    TDBM_OPT("consolidate", TDBM_OPT_FRAGMENTS, consolidate,
             "consolidate=N",
             "rw: once a commit leaves more than N\n"
             "fragments, consolidate them (README\n"
             "\"Keeping an array healthy\")"),
    TDBM_OPT("endpoint", TDBM_OPT_TEXT, endpoint, "endpoint=URL",
             "s3://: the server (before AWS_ENDPOINT_URL);\n"
             "gs://: (default storage.googleapis.com);\n"
             "azure://: the blob service (before the\n"
             "connection string's BlobEndpoint)"),
    TDBM_OPT("account", TDBM_OPT_TEXT, account, "account=NAME",
             "azure://: the storage account (before\n"
             "AZURE_STORAGE_ACCOUNT)"),
    TDBM_OPT("region", TDBM_OPT_TEXT, region, "region=NAME",
             "s3://: the region (before AWS_REGION);\n"
             "gs://: (default auto)"),
    TDBM_OPT("profile", TDBM_OPT_TEXT, profile, "profile=NAME",
             "s3://: the profile of the AWS files whose\n"
             "keys sign (before AWS_PROFILE and the\n"
             "AWS_ACCESS_KEY_ID of the environment)"),
    TDBM_OPT("credentials_file", TDBM_OPT_STRING, credentials_file,
             "credentials_file=PATH", "s3://: the keys' file (instead of\n"
             "~/.aws/credentials; keys from it, not\n"
             "from AWS_ACCESS_KEY_ID); azure://: a\n"
             "file holding a connection string"),
    TDBM_OPT("config_file", TDBM_OPT_STRING, config_file, "config_file=PATH",
             "s3://: the settings' file (instead of\n"
             "~/.aws/config)"),
    TDBM_OPT("uid", TDBM_OPT_ID, uid, "uid=N",
             "the owner every entry shows (default: the\n"
             "user who mounts; with allow_other, a root\n"
             "mount for user N)"),
    TDBM_OPT("gid", TDBM_OPT_ID, gid, "gid=N",
             "the group every entry shows (default: the\n"
             "mounting user's group)"),
    TDBM_OPT("umask", TDBM_OPT_MODE, umask, "umask=M",
             "mode bits (octal) no entry shows (default\n"
             "022: folders 0755 or 0555, files 0644 or\n"
             "0444; no write bit but the owner's ever;\n"
             "staged entries never more than 0700)"),
    TDBM_OPT("s3_requests", TDBM_OPT_REQUESTS, s3.requests, "s3_requests=N",
             "s3:// requests in flight at most (default 64)"),
    TDBM_OPT("s3_timeout", TDBM_OPT_SECONDS, s3.timeout_s, "s3_timeout=SECS",
             "s3:// read fails (EIO) after SECS s, retries\n"
             "included (default 30)"),
    TDBM_OPT("s3_retries", TDBM_OPT_RETRIES, s3.retries, "s3_retries=N",
             "s3:// tries of a failed request again (5xx,\n"
             "no answer, a stall), within its deadline\n"
             "(default 3)"),
    TDBM_OPT("s3_part_size", TDBM_OPT_SIZE, s3.part_size,
             "s3_part_size=N[KMG]",
             "s3:// files written larger than this go up in\n"
             "parts of it, many at a time (default 8M;\n"
             "5M to 5G)"),
    TDBM_OPT("s3_readahead", TDBM_OPT_SIZE, s3.readahead_bytes,
             "s3_readahead=N[KMG]",
             "s3:// bytes fetched ahead, not yet read, at\n"
             "most (default 64M)"),
    TDBM_OPT("disk_cache", TDBM_OPT_STRING, disk_cache, "disk_cache=DIR",
             "keep s3:// bytes fetched in DIR for the next\n"
             "reads and mounts"),
    TDBM_OPT("disk_cache_size", TDBM_OPT_SIZE, s3.disk_cache_bytes,
             "disk_cache_size=N[KMG]", "disk_cache bound (default 1G)"),
    {NULL, TDBM_OPT_BOOL, 0, NULL, NULL}};

static int tdbm_why(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;

    if (cap) {
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void tdbm_options_init(struct tdbm_options *o)
{
    memset(o, 0, sizeof *o);
    tdb_open_options_init(&o->open);
    o->uid = o->gid = -1;
    o->umask = TDBM_UMASK_DEFAULT;
}

void tdbm_options_free(struct tdbm_options *o)
{
    explicit_bzero(o->key, sizeof o->key);
    o->open.key = NULL;
    free(o->staging_dir);
    o->staging_dir = NULL;
    free(o->disk_cache);
    o->disk_cache = NULL;
    o->s3.disk_cache = NULL;
    free(o->endpoint);
    free(o->account);
    free(o->region);
    free(o->profile);
    free(o->credentials_file);
    free(o->config_file);
    o->endpoint = o->account = o->region = o->profile = NULL;
    o->credentials_file = o->config_file = NULL;
}

void tdbm_s3_options(const struct tdbm_options *o, struct tdb_store_options *s3)
{
    s3->endpoint = o->endpoint;
    s3->account = o->account;
    s3->region = o->region;
    s3->profile = o->profile;
    s3->credentials_file = o->credentials_file;
    s3->config_file = o->config_file;
    s3->tune = o->s3;
    s3->tune.disk_cache = o->disk_cache;
}

/* A decimal number at s; *end after it.  @return 0 or -1. */
static int tdbm_parse_u64(const char *s, uint64_t *v, const char **end)
{
    char *e;
    unsigned long long x;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    x = strtoull(s, &e, 10);
    if (errno)
        return -1;
    *v = x;
    *end = e;
    return 0;
}

int tdbm_parse_number(const char *s, bool units, uint64_t max,
                      uint64_t *out)
{
    const char *e;
    unsigned sh = 0;
    uint64_t a;

    if (tdbm_parse_u64(s, &a, &e))
        return -1;
    if (units) {
        switch (*e) {
        case 'k': case 'K': sh = 10; e++; break;
        case 'm': case 'M': sh = 20; e++; break;
        case 'g': case 'G': sh = 30; e++; break;
        default: break;
        }
    }
    if (*e || a > (UINT64_MAX >> sh) || a << sh > max)
        return -1;
    *out = a << sh;
    return 0;
}

/* Octal digits alone (as mount(8)'s umask=), at most `max`.  @return 0
 * or -1. */
static int tdbm_parse_octal(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '7')
            return -1;
        v = v * 8 + (uint64_t)(*s - '0');
        if (v > max)
            return -1;
    }
    *out = v;
    return 0;
}

int tdbm_parse_kib(const char *s, unsigned long max, unsigned long *out)
{
    uint64_t v;

    if (tdbm_parse_number(s, false, max, &v))
        return -1;
    *out = (unsigned long)v;
    return 0;
}

/* What a key file of `got` bytes (the first of them in p) that is not a
 * key probably holds instead, as advice for the message, or "". */
static const char *tdbm_key_hint(const uint8_t *p, size_t got)
{
    size_t n = got;

    if (got == TDBM_KEY_BYTES + 1 && p[TDBM_KEY_BYTES] == '\n')
        return ": a trailing newline? write it with printf or head -c 32";
    if (n && p[n - 1] == '\n')
        n--;
    if (n != 2 * TDBM_KEY_BYTES)
        return "";
    for (size_t i = 0; i < n; i++)
        if (!isxdigit(p[i]))
            return "";
    return ": the key in hex? write the 32 bytes themselves (xxd -r -p)";
}

/* Reads exactly TDBM_KEY_BYTES from `path` into o->key.  The key bytes
 * appear in no message. */
static int tdbm_read_key(struct tdbm_options *o, const char *path, char *why,
                         size_t cap)
{
    /* room for a key written in hex with a newline, to say so */
    uint8_t tmp[2 * TDBM_KEY_BYTES + 2];
    size_t got = 0;
    int fd, rc = -1;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tdbm_why(why, cap, "key_file: %s: %s", path, strerror(errno));
    while (got < sizeof tmp) {
        ssize_t n = read(fd, tmp + got, sizeof tmp - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            tdbm_why(why, cap, "key_file: %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got != TDBM_KEY_BYTES) {
        bool more = got == sizeof tmp;
        tdbm_why(why, cap, "key_file: %s: holds %s%zu bytes; an AES-256-GCM "
                 "key is exactly %d%s", path, more ? "more than " : "",
                 more ? sizeof tmp - 1 : got, TDBM_KEY_BYTES,
                 tdbm_key_hint(tmp, got));
        goto out;
    }
    memcpy(o->key, tmp, TDBM_KEY_BYTES);
    o->open.key = o->key;
    rc = 0;
out:
    explicit_bzero(tmp, sizeof tmp);
    close(fd);
    return rc;
}

/* A copy of `path` made absolute against the current folder (the daemon
 * leaves it when it goes to the background). */
static char *tdbm_absolute(const char *path)
{
    char *cwd, *abs;

    if (path[0] == '/')
        return strdup(path);
    cwd = getcwd(NULL, 0);
    if (!cwd)
        return NULL;
    if (asprintf(&abs, "%s/%s", cwd, path) < 0)
        abs = NULL;
    free(cwd);
    return abs;
}

/* Parses uid=, gid= (a number) or umask= (octal) into `field`. */
static int tdbm_parse_owner(const struct tdbm_option *t, const char *v,
                            char *field, char *why, size_t cap)
{
    uint64_t a;

    if (t->kind == TDBM_OPT_MODE) {
        unsigned bits;
        if (tdbm_parse_octal(v, 0777, &a))
            return tdbm_why(why, cap, "%s=%s: not octal mode bits (0 to "
                            "777)", t->name, v);
        bits = (unsigned)a;
        memcpy(field, &bits, sizeof bits);
        return 0;
    }
    /* (uid_t)-1 means "unchanged" to chown(2): no one's number */
    if (tdbm_parse_number(v, false, UINT32_MAX - 1, &a))
        return tdbm_why(why, cap, "%s=%s: not a number (0 to %lu)", t->name,
                        v, (unsigned long)UINT32_MAX - 1);
    int64_t id = (int64_t)a;
    memcpy(field, &id, sizeof id);
    return 0;
}

/* The numbers unsigned options take, and what they count. */
static const struct {
    enum tdbm_opt_kind kind;
    unsigned min, max;
    const char *noun;
} tdbm_ranges[] = {
    {TDBM_OPT_COUNT, 0, 256, "threads"},
    {TDBM_OPT_SECONDS, 1, 86400, "seconds"},
    {TDBM_OPT_REQUESTS, 1, 1024, "requests"},
    {TDBM_OPT_FRAGMENTS, 1, 1000000, "fragments"},
    {TDBM_OPT_RETRIES, 0, 100, "retries"},
};

/* Parses the value of an unsigned option (a count of threads, seconds,
 * requests) into its field. */
static int tdbm_parse_unsigned(const struct tdbm_option *t, const char *v,
                               char *field, char *why, size_t cap)
{
    uint64_t a;
    for (size_t i = 0; i < sizeof tdbm_ranges / sizeof *tdbm_ranges; i++) {
        if (tdbm_ranges[i].kind != t->kind)
            continue;
        if (tdbm_parse_number(v, false, tdbm_ranges[i].max, &a) ||
            a < tdbm_ranges[i].min)
            return tdbm_why(why, cap, "%s=%s: not a number of %s (%u to %u)",
                            t->name, v, tdbm_ranges[i].noun,
                            tdbm_ranges[i].min, tdbm_ranges[i].max);
        unsigned n = (unsigned)a;
        memcpy(field, &n, sizeof n);
        return 0;
    }
    return tdbm_why(why, cap, "option %s: no parser", t->name);
}

/* Parses the value of a timestamp, size, count, owner or members option
 * into its field. */
static int tdbm_parse_value(struct tdbm_options *o,
                            const struct tdbm_option *t, const char *v,
                            char *why, size_t cap)
{
    char *field = (char *)o + t->offset;
    const char *e;
    uint64_t a, b;

    switch (t->kind) {
    case TDBM_OPT_TIMESTAMP:
        if (tdbm_parse_u64(v, &a, &e))
            goto nan;
        if (*e == ':') {
            if (tdbm_parse_u64(e + 1, &b, &e) || *e || b < a)
                return tdbm_why(why, cap, "timestamp=%s: want "
                                "T or T1:T2 with T1 <= T2", v);
            o->open.ts_start = a;
            o->open.ts_end = b;
        } else if (*e) {
            goto nan;
        } else {
            o->open.ts_start = 0;
            o->open.ts_end = a;
        }
        o->timestamp_set = true;
        return 0;
    nan:
        return tdbm_why(why, cap, "timestamp=%s: not a number", v);
    case TDBM_OPT_SIZE:
        if (tdbm_parse_number(v, true, UINT64_MAX, &a))
            return tdbm_why(why, cap, "%s=%s: not a size", t->name, v);
        /* 0 is no size these take (the engine reads 0 as "the default") */
        if (a == 0)
            return tdbm_why(why, cap, "%s=%s: not a size above 0 (leave the "
                            "option out for its default)", t->name, v);
        memcpy(field, &a, sizeof a);
        return 0;
    case TDBM_OPT_SECONDS:
    case TDBM_OPT_REQUESTS:
    case TDBM_OPT_FRAGMENTS:
    case TDBM_OPT_COUNT:
        return tdbm_parse_unsigned(t, v, field, why, cap);
    case TDBM_OPT_RETRIES:
        o->s3.retries_given = true;
        return tdbm_parse_unsigned(t, v, field, why, cap);
    case TDBM_OPT_ID:
    case TDBM_OPT_MODE:
        return tdbm_parse_owner(t, v, field, why, cap);
    case TDBM_OPT_MEMBERS:
        if (strcmp(v, "inside") && strcmp(v, "any"))
            return tdbm_why(why, cap, "%s=%s: not inside or any", t->name, v);
        o->open.members = strcmp(v, "any") ? TDB_MEMBERS_INSIDE
                                           : TDB_MEMBERS_ANY;
        return 0;
    default:
        return tdbm_why(why, cap, "option %s: no parser", t->name);
    }
}

const struct tdbm_option *tdbm_option_find(const char *name)
{
    for (const struct tdbm_option *t = tdbm_option_table; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

int tdbm_option(struct tdbm_options *o, const char *name, const char *value,
                char *why, size_t cap)
{
    const struct tdbm_option *t = tdbm_option_find(name);

    if (!t)
        return 1;
    if (t->kind == TDBM_OPT_BOOL) {
        if (value)
            return tdbm_why(why, cap, "option %s takes no value", name);
        *(bool *)((char *)o + t->offset) = true;
        return 0;
    }
    if (!value || !value[0])
        return tdbm_why(why, cap, "option %s needs a value (%s=...)", name,
                        name);
    switch (t->kind) {
    case TDBM_OPT_KEYFILE:
        return tdbm_read_key(o, value, why, cap);
    case TDBM_OPT_STRING:
    case TDBM_OPT_TEXT: {
        char **field = (char **)((char *)o + t->offset);
        char *abs = t->kind == TDBM_OPT_TEXT ? strdup(value)
                                             : tdbm_absolute(value);
        if (!abs)
            return tdbm_why(why, cap, "%s: %s: %s", name, value,
                            strerror(errno));
        free(*field);
        *field = abs;
        return 0;
    }
    default:
        return tdbm_parse_value(o, t, value, why, cap);
    }
}

int tdbm_option_list(struct tdbm_options *o, const char *list, char *why,
                     size_t cap)
{
    char *copy = strdup(list), *save = NULL;
    int rc = 0;

    if (!copy)
        return tdbm_why(why, cap, "%s", strerror(ENOMEM));
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq = '\0';
        rc = tdbm_option(o, tok, eq ? eq + 1 : NULL, why, cap);
        if (rc == 1) {
            char known[1024] = "";
            size_t k = 0;
            for (const struct tdbm_option *t = tdbm_option_table; t->name;
                 t++)
                k += (size_t)snprintf(known + k, sizeof known - k, "%s%s",
                                      k ? ", " : "", t->name);
            tdbm_why(why, cap, "unknown option %s (known: %s)", tok, known);
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

int tdbm_options_check(const struct tdbm_options *o, char *why, size_t cap)
{
    if (o->ro && (o->rw || o->writable))
        return tdbm_why(why, cap, "ro and %s do not go together",
                        o->writable ? "writable" : "rw");
    if (o->rw && o->timestamp_set)
        return tdbm_why(why, cap, "-o rw and timestamp= do not go together "
                        "(a write is made now, outside the opened range)");
    if (o->consolidate && !o->rw && !o->writable)
        return tdbm_why(why, cap, "consolidate= needs -o rw (it writes "
                        "the array)");
    if (o->refresh && o->timestamp_set)
        return tdbm_why(why, cap, "refresh= and timestamp= do not go "
                        "together (a view as of a time never changes)");
    return 0;
}

/* The options that only an object store's SOURCE reads. */
static const char *const tdbm_s3_only[] = {
    "endpoint", "account", "region", "profile", "credentials_file", "config_file",
    "s3_requests", "s3_timeout", "s3_retries", "s3_part_size", "s3_readahead",
    "disk_cache", "disk_cache_size", NULL};

/* Whether option t was given a value in o (none of these takes 0). */
static bool tdbm_option_given(const struct tdbm_options *o,
                              const struct tdbm_option *t)
{
    const char *field = (const char *)o + t->offset;

    switch (t->kind) {
    case TDBM_OPT_STRING:
    case TDBM_OPT_TEXT: {
        char *v;
        memcpy(&v, field, sizeof v);
        return v != NULL;
    }
    case TDBM_OPT_SIZE: {
        uint64_t v;
        memcpy(&v, field, sizeof v);
        return v != 0;
    }
    case TDBM_OPT_RETRIES:
        return o->s3.retries_given;
    default: {
        unsigned v;
        memcpy(&v, field, sizeof v);
        return v != 0;
    }
    }
}

size_t tdbm_options_s3_given(const struct tdbm_options *o, char *out,
                             size_t cap)
{
    size_t n = 0, len = 0;

    if (cap)
        out[0] = '\0';
    for (size_t i = 0; tdbm_s3_only[i]; i++) {
        const struct tdbm_option *t = tdbm_option_find(tdbm_s3_only[i]);
        if (!t || !tdbm_option_given(o, t))
            continue;
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "%s%s=",
                                    n ? ", " : "", t->name);
        n++;
    }
    return n;
}

void tdbm_options_usage(FILE *f)
{
    for (const struct tdbm_option *t = tdbm_option_table; t->name; t++) {
        fprintf(f, "    -o %-20s", t->usage);
        if (strlen(t->usage) >= 20)     /* the help on a line of its own */
            fprintf(f, "\n%27s", "");
        for (const char *p = t->help; *p; p++) {
            fputc(*p, f);
            if (*p == '\n')
                fprintf(f, "%27s", "");
        }
        fputc('\n', f);
    }
}
