/* source.c: opening SOURCE the same way for both front ends. */
#include "mount.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int tdbm_src_why(char *why, size_t cap, const char *source,
                        const char *fmt, ...)
{
    char msg[TDB_ERROR_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (cap)
        snprintf(why, cap, "%s: %s", source, msg);
    return -1;
}

/* Tiles are allocated and freed by the thousand, each 1 MiB or so: glibc
 * would map and unmap each one (and the kernel zero its pages every time).
 * They stay in the heap, and freed memory there serves the next tile; one
 * arena for all threads (a tile is freed by whichever thread lets it go,
 * and per-thread arenas would each keep their own freed tiles), which
 * keeps at most 32 MiB free before giving memory back.  Measured on a
 * 1 GiB read with cache_size=64M: peak 68 MiB (131 MiB with glibc's
 * per-thread arenas). */
static void tdbm_tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 32 << 20);
    mallopt(M_ARENA_MAX, 1);
}

/* A key given for an array whose schema (in force now) is not encrypted is
 * a mistake worth stopping for: the key would be silently unused (and a
 * writable mount would write plain tiles).  Groups are not checked (their
 * members may be encrypted).  @return 0 or -1 with why set. */
static int tdbm_check_key(struct tdbm_source *s, const char *source,
                          const struct tdbm_options *o, char *why, size_t cap)
{
    struct tdb_error err;
    int enc;

    if (!o->open.key)
        return 0;
    tdb_error_clear(&err);
    if (tdb_array_encryption(&s->io, o->open.key, &enc, &err) == 0 &&
        enc != TDB_AES_256_GCM)
        return tdbm_src_why(why, cap, source, "key_file given, but the "
                            "array is not encrypted (drop key_file)");
    return 0;
}

/* An s3:// SOURCE (tdb_io_open_url_with: the options' endpoint=,
 * region=, profile=, credentials_file= and config_file=, else as the AWS
 * tools find them).  Staged files of -o rw stay local: staging_dir= is
 * required.
 * @return 0, or -1 with why set. */
static int tdbm_source_url(struct tdbm_source *s, const char *source,
                           const struct tdbm_options *o, char *why,
                           size_t cap)
{
    struct tdb_s3_options s3;
    struct tdb_error err;
    int rc;

    if (o->rw && !o->staging_dir)
        return tdbm_src_why(why, cap, source, "-o rw on an object store "
                            "needs staging_dir=PATH (a local folder for the "
                            "staged files)");
    if (tdb_s3_global_init() != 0 || !(s->path = strdup(source)))
        return tdbm_src_why(why, cap, source, "%s", strerror(ENOMEM));
    tdb_error_clear(&err);
    tdbm_s3_options(o, &s3);
    rc = tdb_io_open_url_with(&s->io, source, &s3, false, &err);
    if (rc < 0)
        return tdbm_src_why(why, cap, source, "%s",
                            tdb_error_text(rc, &err));
    return 0;
}

int tdbm_source_open(struct tdbm_source *s, const char *source,
                     const struct tdbm_options *o, char *why, size_t cap)
{
    struct tdb_error err;
    struct stat st;
    int rc;

    memset(s, 0, sizeof *s);
    tdbm_tune_malloc();
    if (tdb_io_is_url(source)) {
        if (tdbm_source_url(s, source, o, why, cap) != 0)
            goto fail;
        goto opened;
    }
    s->path = realpath(source, NULL);
    if (!s->path)
        return tdbm_src_why(why, cap, source, "%s", strerror(errno));
    if (stat(s->path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        tdbm_src_why(why, cap, source, "not a folder (SOURCE is a TileDB "
                     "array or group folder)");
        goto fail;
    }
    rc = tdb_io_posix(&s->io, s->path);
    if (rc < 0) {
        tdbm_src_why(why, cap, source, "%s", tdb_strerror(rc));
        goto fail;
    }
opened:
    /* a live mount's first digest, before the open (a failure leaves the
     * tree unstamped: the first check reopens it) */
    tdb_error_clear(&err);
    s->stamped = o->refresh && !o->timestamp_set &&
                 tdb_fs_stamp(&s->io, NULL, s->stamp, &err) == 0;
    tdb_error_clear(&err);
    rc = tdb_fs_open(&s->fs, &s->io, &o->open, &err);
    if (rc < 0) {
        if (rc == TDB_E_INVAL && !err.msg[0])
            tdbm_src_why(why, cap, source, "not a TileDB array or group");
        else
            tdbm_src_why(why, cap, source, "%s",
                         tdb_error_text(rc, &err));
        s->fs = NULL;
        goto fail;
    }
    if (tdbm_check_key(s, source, o, why, cap) != 0)
        goto fail;
    return 0;
fail:
    tdbm_source_close(s);
    return -1;
}

void tdbm_source_close(struct tdbm_source *s)
{
    tdb_fs_close(s->fs);
    s->fs = NULL;
    tdb_io_free(&s->io);
    memset(&s->io, 0, sizeof s->io);
    free(s->path);
    s->path = NULL;
}
