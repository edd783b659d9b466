/* source.c: opening SOURCE the same way for both front ends. */
#include "mount.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
 * per-thread arenas).  Blocks larger than an eighth of the cache (128 KiB
 * to 64 MiB) are mapped on their own: a cache of a few tiles would leave
 * holes between them and the replies in the heap that add up to more
 * than its budget (16 readers of 4 MiB tiles with cache_size=4M: a peak
 * of 36 MiB, 28 MiB mapped). */
static void tdbm_tune_malloc(uint64_t cache_bytes)
{
    uint64_t big = (cache_bytes ? cache_bytes : TDB_DEFAULT_CACHE_BYTES) / 8;
    big = big < (128 << 10) ? 128 << 10 : big > (64 << 20) ? 64 << 20 : big;
    mallopt(M_MMAP_THRESHOLD, (int)big);
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

/* Where a group member's place lies for a local SOURCE (the engine's
 * opts.locate): inside the folder `arg` (s->path, links resolved) when
 * its real path (symbolic links resolved; a missing one as written) is
 * that folder or under it.  @return 0 with *path from the folder, 1 when
 * outside, or TDB_E_NOMEM. */
static int tdbm_locate_local(void *arg, const char *place, char **path)
{
    const char *root = arg;
    char *full = NULL, *real;
    size_t n = strcmp(root, "/") ? strlen(root) : 0;
    int rc = 1;

    if (strstr(place, "://"))
        return 1;
    if (place[0] == '/' ? !(full = strdup(place))
                        : asprintf(&full, "%s/%s", root, place) < 0)
        return TDB_E_NOMEM;
    real = realpath(full, NULL);
    const char *p = real ? real : full;
    if (!strncmp(p, root, n) && (p[n] == '\0' || p[n] == '/')) {
        while (p[n] == '/')
            n++;
        rc = (*path = strdup(p + n)) ? 0 : TDB_E_NOMEM;
    }
    free(real);
    free(full);
    return rc;
}

/* The same for an s3:// SOURCE `arg`: a relative place (already under the
 * prefix) as it is, an s3:// uri under the source's own bucket and prefix
 * as its path there; nothing else. */
static int tdbm_locate_s3(void *arg, const char *place, char **path)
{
    const char *url = arg;
    size_t n = strlen(url);

    while (n > 5 && url[n - 1] == '/')
        n--;
    if (!strstr(place, "://") && place[0] != '/')
        return (*path = strdup(place)) ? 0 : TDB_E_NOMEM;
    if (strncmp(place, url, n) || (place[n] != '\0' && place[n] != '/'))
        return 1;
    while (place[n] == '/')
        n++;
    return (*path = strdup(place + n)) ? 0 : TDB_E_NOMEM;
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
    struct tdb_store_options s3;
    struct tdb_error err;
    int rc;

    if (o->rw && !o->staging_dir)
        return tdbm_src_why(why, cap, source, "-o rw on an object store "
                            "needs staging_dir=PATH (a local folder for the "
                            "staged files)");
    if (o->open.members == TDB_MEMBERS_ANY)
        return tdbm_src_why(why, cap, source, "group_members=any: an "
                            "object store source follows only the members "
                            "under its own prefix");
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

/* A local SOURCE: the folder's real path in s->path and its I/O.
 * @return 0 or -1 with why[cap] (s then for tdbm_source_close). */
static int tdbm_source_local(struct tdbm_source *s, const char *source,
                             const struct tdbm_options *o, char *why,
                             size_t cap)
{
    struct stat st;
    s->path = realpath(source, NULL);
    if (!s->path)
        return tdbm_src_why(why, cap, source, "%s", strerror(errno));
    if (stat(s->path, &st) != 0 || !S_ISDIR(st.st_mode))
        return tdbm_src_why(why, cap, source, "not a folder (SOURCE is a "
                            "TileDB array or group folder)");
    /* a folder we may not list looks empty to the engine: say why */
    if (faccessat(AT_FDCWD, s->path, R_OK | X_OK, AT_EACCESS) != 0)
        return tdbm_src_why(why, cap, source, "%s (the folder cannot be "
                            "read)", strerror(errno));
    char given[256];
    size_t ng = tdbm_options_s3_given(o, given, sizeof given);
    if (ng)
        snprintf(s->warning, sizeof s->warning, "%s: %s %s only for an "
                 "object store's SOURCE: ignored for a local folder", source, given,
                 ng > 1 ? "are" : "is");
    int rc = tdb_io_posix(&s->io, s->path);
    if (rc < 0)
        return tdbm_src_why(why, cap, source, "%s", tdb_strerror(rc));
    return 0;
}

/* The tree of the source s->io holds, with a live mount's first digest.
 * @return 0 or -1 with why[cap]. */
static int tdbm_source_tree(struct tdbm_source *s, const char *source,
                            const struct tdbm_options *o, char *why,
                            size_t cap)
{
    struct tdb_error err;
    /* a live mount's first digest, before the open (a failure leaves the
     * tree unstamped: the first check reopens it) */
    tdb_error_clear(&err);
    s->stamped = o->refresh && !o->timestamp_set &&
                 tdb_fs_stamp(&s->io, NULL, s->stamp, &err) == 0;
    tdb_error_clear(&err);
    struct tdb_open_options oo = o->open;
    oo.locate = tdb_io_is_url(source) ? tdbm_locate_s3 : tdbm_locate_local;
    oo.locate_arg = s->path;
    int rc = tdb_fs_open(&s->fs, &s->io, &oo, &err);
    if (rc < 0) {
        s->fs = NULL;
        if (rc == TDB_E_INVAL && !err.msg[0])
            return tdbm_src_why(why, cap, source,
                                "not a TileDB array or group");
        return tdbm_src_why(why, cap, source, "%s", tdb_error_text(rc, &err));
    }
    return 0;
}

int tdbm_source_open(struct tdbm_source *s, const char *source,
                     const struct tdbm_options *o, char *why, size_t cap)
{
    memset(s, 0, sizeof *s);
    tdbm_tune_malloc(o->open.cache_bytes);
    int rc = tdb_io_is_url(source) ? tdbm_source_url(s, source, o, why, cap)
                                   : tdbm_source_local(s, source, o, why, cap);
    if (rc == 0)
        rc = tdbm_source_tree(s, source, o, why, cap);
    if (rc == 0)
        rc = tdbm_check_key(s, source, o, why, cap);
    if (rc != 0) {
        tdbm_source_close(s);
        return -1;
    }
    return 0;
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
