/* read.c: the files a front end opens and reads: a generation's file through a reader of its own, staged files, metadata values being written. */
#include "priv.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* A failed read of h, a generation's file.  A file of the array that is
 * gone (a vacuumed fragment: the engine's TDB_E_NOENT) is no fault of the
 * caller, whose file the folder lists: it is EIO, logged with the name of
 * what is missing.  @return -errno. */
static int tdbm_read_failed(struct tdbm_mount *m, const struct tdbm_handle *h,
                            uint64_t off, size_t size, int rc,
                            const struct tdb_error *err)
{
    if (rc == TDB_E_NOENT)
        rc = TDB_E_IO;
    return tdbm_fail(m, rc, err, "read inode %llu at %lld+%zu",
                     (unsigned long long)h->ino, (long long)off, size);
}

/* Opens staged file `ino` through a descriptor of our own. */
static int tdbm_open_staged(struct tdbm_mount *m, uint64_t ino, int flags,
                            struct tdbm_handle **out)
{
    struct tdbm_handle *h = tdbm_handle_new(TDBM_H_STG);
    int rc;

    if (!h)
        return -ENOMEM;
    rc = m->staging ? tdbm_staging_open_file(m->staging, ino,
                                             flags & ~O_APPEND, &h->fd)
                    : -ENOENT;
    if (rc < 0) {
        tdbm_release(m, h);
        return rc;
    }
    *out = h;
    return 0;
}

/* Opens engine inode `tino` of g (inode number ino), pinned by the caller
 * (a pin the handle takes over), through a tdb_reader of its own. */
static int tdbm_open_file(struct tdbm_mount *m, const struct tdbm_node *at,
                          struct tdbm_handle **out, struct tdbm_open_info *oi)
{
    struct tdbm_handle *h = tdbm_handle_new(TDBM_H_FILE);
    struct tdb_error err;
    int rc;

    if (!h) {
        tdbm_gen_unpin(m, at->gen, 1);
        return -ENOMEM;
    }
    h->gen = at->gen;
    h->tino = at->tino;
    h->ino = at->ino;
    tdb_error_clear(&err);
    rc = tdb_reader_open(&h->rd, at->gen->fs, at->tino, &err);
    if (rc == TDB_E_NOENT && tdbm_gone(at->gen, at->tino)) {
        tdbm_release(m, h);
        return -ESTALE;
    }
    if (rc == TDB_E_NOENT)
        rc = TDB_E_IO; /* a file of the array is missing */
    if (rc < 0) {
        tdbm_release(m, h);
        return tdbm_fail(m, rc, &err, "open inode %llu",
                         (unsigned long long)at->ino);
    }
    oi->keep_cache = true;
    oi->direct_io = false;
    oi->noflush = true; /* nothing to flush on close */
    *out = h;
    return 0;
}

int tdbm_open(struct tdbm_mount *m, uint64_t ino, int flags,
              struct tdbm_handle **out, struct tdbm_open_info *oi)
{
    bool writing = (flags & O_ACCMODE) != O_RDONLY;
    struct tdbm_handle *h = NULL;
    struct tdbm_metarec *r;
    struct tdbm_gen *g;
    uint64_t tino;
    int rc;

    memset(oi, 0, sizeof *oi);
    *out = NULL;
    if (tdbm_staging_ino(ino))
        return tdbm_open_staged(m, ino, flags, out);
    if (writing && !m->rw)
        return -EROFS;
    if (ino & TDBM_META_BIT) {
        /* A metadata file created and not yet closed. */
        rc = tdbm_open_created(m, ino, flags, out);
        oi->direct_io = rc == 0;
        return rc;
    }
    g = tdbm_gen_pin(m, ino, &tino);
    if (!g)
        return -ESTALE;
    pthread_mutex_lock(&m->lock);
    r = tdbm_rec_find(m, ino);
    pthread_mutex_unlock(&m->lock);
    const struct tdbm_node at = {g, tino, ino};
    if (!writing && !r)
        return tdbm_open_file(m, &at, out, oi);
    /* Writable only: a key of the root's __meta; an open record of it
     * serves readers too, so that they see what was written. */
    const char *name = tdbm_meta_name(g, tino);
    if (!name) {
        tdbm_gen_unpin(m, g, 1);
        return -EROFS;
    }
    rc = tdbm_open_meta(m, &at, name, writing ? flags : 0, &h);
    if (rc < 0) {
        tdbm_gen_unpin(m, g, 1);
        return rc;
    }
    oi->direct_io = true;
    *out = h;
    return 0;
}

int tdbm_read(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t off,
              size_t size, struct tdb_sink *s)
{
    struct tdb_error err;
    int rc;

    s->form = TDB_SINK_COPY;
    s->got = 0;
    if (size > TDBM_IO_MAX)
        size = TDBM_IO_MAX;
    if (h->kind == TDBM_H_FILE) {
        tdb_error_clear(&err);
        rc = tdb_reader_read(h->rd, off, size, s, &err);
        return rc < 0 ? tdbm_read_failed(m, h, off, size, rc, &err) : 0;
    }
    if (h->kind != TDBM_H_STG && h->kind != TDBM_H_META)
        return -EISDIR;
    if (tdb_sink_buffer(s, size))
        return -ENOMEM;
    if (h->kind == TDBM_H_STG) {
        ssize_t n = pread(h->fd, s->buf, size, (off_t)off);
        if (n < 0)
            return -errno;
        s->got = (size_t)n;
        return 0;
    }
    pthread_mutex_lock(&m->lock);
    if (off < h->rec->len) {
        s->got = h->rec->len - (size_t)off;
        if (s->got > size)
            s->got = size;
        memcpy(s->buf, h->rec->buf + off, s->got);
    }
    pthread_mutex_unlock(&m->lock);
    return 0;
}

int tdbm_lseek(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t off,
               bool data, uint64_t *out)
{
    struct tdb_error err;
    int rc;

    switch (h->kind) {
    case TDBM_H_STG: {
        off_t r = lseek(h->fd, (off_t)off, data ? SEEK_DATA : SEEK_HOLE);
        if (r < 0)
            return -errno;
        *out = (uint64_t)r;
        return 0;
    }
    case TDBM_H_META: {
        size_t len;
        pthread_mutex_lock(&m->lock);
        len = h->rec->len;
        pthread_mutex_unlock(&m->lock);
        if (off >= len)
            return -ENXIO;
        *out = data ? off : len;
        return 0;
    }
    case TDBM_H_FILE:
        tdb_error_clear(&err);
        rc = tdb_fs_seek(h->gen->fs, h->tino, off, data, out, &err);
        if (rc == TDB_E_NOENT)
            return -ENXIO;
        return rc < 0 ? tdbm_fail(m, rc, &err, "lseek") : 0;
    default:
        return -EISDIR;
    }
}
