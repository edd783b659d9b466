/* cli.c: the mount contract's "Command" section: options and SOURCE, shared by tiledbfs and tiledbfs-cat. */
#include "cli.h"
#include "arraydir.h"
#include "schema.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Prints "PROG: WHAT: message" as one line: control characters in either
 * part (a newline in an engine message, a path) become '?'. */
static void tdbcli_say(const char *what, const char *fmt, ...)
{
    char msg[TDB_ERROR_MSG_MAX + 256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    fprintf(stderr, "%s: ", program_invocation_short_name);
    if (what) {
        for (const char *p = what; *p; p++)
            fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
        fputs(": ", stderr);
    }
    fprintf(stderr, "%s\n", msg);
}

void tdbcli_error_clear(struct tdb_error *err)
{
    err->code = 0;
    err->msg[0] = '\0';
}

const char *tdbcli_error_text(int code, const struct tdb_error *err)
{
    if (err && err->msg[0])
        return err->msg;
    return tdb_strerror(code);
}

void tdbcli_report(const char *what, int code, const struct tdb_error *err)
{
    tdbcli_say(what, "%s", tdbcli_error_text(code, err));
}

void tdbcli_options_init(struct tdbcli_options *o)
{
    memset(o, 0, sizeof *o);
    tdb_open_options_init(&o->open);
}

void tdbcli_options_free(struct tdbcli_options *o)
{
    explicit_bzero(o->key, sizeof o->key);
    o->open.key = NULL;
    free(o->staging_dir);
    o->staging_dir = NULL;
}

/* Reads exactly TDBCLI_KEY_BYTES from `path` into o->key.  The key bytes
 * appear in no message. */
static int tdbcli_read_key(struct tdbcli_options *o, const char *path)
{
    uint8_t tmp[TDBCLI_KEY_BYTES + 1];
    size_t got = 0;
    int fd, rc = -1;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tdbcli_say("key_file", "%s: %s", path, strerror(errno));
        return -1;
    }
    while (got < sizeof tmp) {
        ssize_t n = read(fd, tmp + got, sizeof tmp - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            tdbcli_say("key_file", "%s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got != TDBCLI_KEY_BYTES) {
        tdbcli_say("key_file", "%s: holds %s%zu bytes; an AES-256-GCM key "
                   "is exactly %d", path,
                   got > TDBCLI_KEY_BYTES ? "more than " : "",
                   got > TDBCLI_KEY_BYTES ? (size_t)TDBCLI_KEY_BYTES : got,
                   TDBCLI_KEY_BYTES);
        goto out;
    }
    memcpy(o->key, tmp, TDBCLI_KEY_BYTES);
    o->open.key = o->key;
    rc = 0;
out:
    explicit_bzero(tmp, sizeof tmp);
    close(fd);
    return rc;
}

/* A copy of `path` made absolute against the current folder (the daemon
 * leaves it when it goes to the background). */
static char *tdbcli_absolute(const char *path)
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

int tdbcli_option(struct tdbcli_options *o, const char *name,
                  const char *value)
{
    bool takes_value = true;
    struct tdb_error err;
    char *opt;
    int rc;

    if (strcmp(name, "rw") == 0)
        takes_value = false;
    else if (strcmp(name, "timestamp") != 0 &&
             strcmp(name, "cache_size") != 0 &&
             strcmp(name, "threads") != 0 &&
             strcmp(name, "key_file") != 0 &&
             strcmp(name, "staging_dir") != 0)
        return 1;

    if (!takes_value && value) {
        tdbcli_say(NULL, "option %s takes no value", name);
        return -1;
    }
    if (takes_value && (!value || !value[0])) {
        tdbcli_say(NULL, "option %s needs a value (%s=...)", name, name);
        return -1;
    }

    if (strcmp(name, "rw") == 0) {
        o->rw = true;
        return 0;
    }
    if (strcmp(name, "key_file") == 0)
        return tdbcli_read_key(o, value);
    if (strcmp(name, "staging_dir") == 0) {
        char *abs = tdbcli_absolute(value);
        if (!abs) {
            tdbcli_say("staging_dir", "%s: %s", value, strerror(errno));
            return -1;
        }
        free(o->staging_dir);
        o->staging_dir = abs;
        return 0;
    }

    /* timestamp, cache_size and threads: the engine parses the values. */
    if (asprintf(&opt, "%s=%s", name, value) < 0) {
        tdbcli_say(NULL, "%s", strerror(ENOMEM));
        return -1;
    }
    tdbcli_error_clear(&err);
    rc = tdb_open_options_parse(&o->open, opt, &err);
    if (rc < 0)
        tdbcli_say(opt, "%s", tdbcli_error_text(rc, &err));
    free(opt);
    return rc < 0 ? -1 : 0;
}

int tdbcli_option_list(struct tdbcli_options *o, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    int rc = 0;

    if (!copy) {
        tdbcli_say(NULL, "%s", strerror(ENOMEM));
        return -1;
    }
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq = '\0';
        rc = tdbcli_option(o, tok, eq ? eq + 1 : NULL);
        if (rc == 1) {
            tdbcli_say(NULL, "unknown option %s (known: timestamp, "
                       "cache_size, threads, key_file, rw, staging_dir)", tok);
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

/* Tiles are allocated and freed by the thousand, each 1 MiB or so: glibc
 * would map and unmap each one (and the kernel zero its pages every time).
 * Keeping them in the heap, and freed memory there for the next tile, costs
 * no more memory than the cache budget already allows. */
static void tdbcli_tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
}

/* A key given for an array whose schema (in force now) is not encrypted is
 * a mistake worth stopping for: the key would be silently unused (and a
 * writable mount would write plain tiles).  Groups are not checked (their
 * members may be encrypted).  @return 0, or -1 after printing. */
static int tdbcli_check_key(struct tdbcli_source *s, const char *source,
                            const struct tdbcli_options *o)
{
    struct tdb_arraydir *d = NULL;
    struct tdb_schema *sc = NULL;
    struct tdb_error err;
    int rc = 0;

    if (!o->open.key || !tdb_is_array(&s->io, ""))
        return 0;
    tdbcli_error_clear(&err);
    if (tdb_arraydir_load(&s->io, 0, UINT64_MAX, &d, &err) == 0 &&
        d->nschemas &&
        tdb_schema_load(&s->io,
                        d->schemas[d->schema_latest < d->nschemas
                                       ? d->schema_latest : 0].path,
                        o->open.key, &sc, &err) == 0 &&
        sc->encryption != TDB_AES_256_GCM) {
        tdbcli_say(source, "key_file given, but the array is not encrypted "
                   "(drop key_file)");
        rc = -1;
    }
    tdb_schema_free(sc);
    tdb_arraydir_free(d);
    return rc;
}

/* An s3:// SOURCE (tdb_io_open_url; credentials as the AWS tools find
 * them).  Staged files of -o rw stay local: staging_dir= is required.
 * @return 0, or -1 after printing. */
static int tdbcli_open_url(struct tdbcli_source *s, const char *source,
                           const struct tdbcli_options *o)
{
    struct tdb_error err;
    int rc;

    if (o->rw && !o->staging_dir) {
        tdbcli_say(source, "-o rw on an object store needs staging_dir=PATH "
                   "(a local folder for the staged files)");
        return -1;
    }
    if (tdb_s3_global_init() != 0 || !(s->path = strdup(source))) {
        tdbcli_say(source, "%s", strerror(ENOMEM));
        return -1;
    }
    tdbcli_error_clear(&err);
    rc = tdb_io_open_url(&s->io, source, &err);
    if (rc < 0) {
        tdbcli_report(source, rc, &err);
        return -1;
    }
    return 0;
}

int tdbcli_open(struct tdbcli_source *s, const char *source,
                const struct tdbcli_options *o)
{
    struct tdb_error err;
    struct stat st;
    int rc;

    memset(s, 0, sizeof *s);
    tdbcli_tune_malloc();
    if (tdb_io_is_url(source)) {
        if (tdbcli_open_url(s, source, o) != 0)
            goto fail;
        goto opened;
    }
    s->path = realpath(source, NULL);
    if (!s->path) {
        tdbcli_say(source, "%s", strerror(errno));
        return -1;
    }
    if (stat(s->path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        tdbcli_say(source, "not a folder (SOURCE is a TileDB array or "
                   "group folder)");
        goto fail;
    }
    rc = tdb_io_posix(&s->io, s->path);
    if (rc < 0) {
        tdbcli_say(source, "%s", tdb_strerror(rc));
        goto fail;
    }
opened:
    tdbcli_error_clear(&err);
    rc = tdb_fs_open(&s->fs, &s->io, &o->open, &err);
    if (rc < 0) {
        if (rc == TDB_E_INVAL && !err.msg[0])
            tdbcli_say(source, "not a TileDB array or group");
        else
            tdbcli_report(source, rc, &err);
        s->fs = NULL;
        goto fail;
    }
    if (tdbcli_check_key(s, source, o) != 0)
        goto fail;
    return 0;
fail:
    tdbcli_close(s);
    return -1;
}

void tdbcli_close(struct tdbcli_source *s)
{
    tdb_fs_close(s->fs);
    s->fs = NULL;
    tdb_io_free(&s->io);
    memset(&s->io, 0, sizeof s->io);
    free(s->path);
    s->path = NULL;
}
