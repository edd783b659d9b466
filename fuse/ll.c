/* ll.c: the low-level operations: each decodes one FUSE request, calls the mount layer, and replies exactly once. */
#include "tiledbfs.h"

#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/xattr.h>

_Static_assert(TDBM_ROOT_INO == FUSE_ROOT_ID,
               "the mount layer and FUSE agree on the root inode");

static struct tdbm_mount *tdbfs_mount_of(fuse_req_t req)
{
    return ((struct tdbfs_daemon *)fuse_req_userdata(req))->m;
}

static struct tdbm_handle *tdbfs_handle_of(const struct fuse_file_info *fi)
{
    return fi ? (struct tdbm_handle *)(uintptr_t)fi->fh : NULL;
}

static void tdbfs_entry(const struct tdbm_entry *te,
                        struct fuse_entry_param *e)
{
    memset(e, 0, sizeof *e);
    e->ino = te->ino;
    e->generation = te->generation;
    e->attr = te->attr;
    e->attr_timeout = te->attr_timeout;
    e->entry_timeout = te->entry_timeout;
}

static void tdbfs_set_open(struct fuse_file_info *fi, struct tdbm_handle *h,
                           const struct tdbm_open_info *oi, bool dir)
{
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->keep_cache = oi->keep_cache;
    fi->cache_readdir = dir && oi->cache_readdir;
    fi->direct_io = !dir && oi->direct_io;
    fi->noflush = !dir && oi->noflush;
}

/* Replies to an open or opendir that gave rc (and handle h): the handle
 * is closed again if the reply is lost. */
static void tdbfs_reply_open(fuse_req_t req, struct fuse_file_info *fi,
                             int rc, struct tdbm_handle *h,
                             const struct tdbm_open_info *oi, bool dir)
{
    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    tdbfs_set_open(fi, h, oi, dir);
    if (fuse_reply_open(req, fi) != 0)
        tdbm_release(tdbfs_mount_of(req), h);
}

static void tdbfs_init(void *userdata, struct fuse_conn_info *conn)
{
    struct tdbfs_daemon *d = userdata;

    if (d->splice && (conn->capable & FUSE_CAP_SPLICE_WRITE))
        conn->want |= FUSE_CAP_SPLICE_WRITE;
    else
        d->splice = false;
    conn->max_read = TDBM_IO_MAX;
    conn->max_write = TDBM_IO_MAX;
    /* Pages stay valid: a generation never changes, and staged files
     * change only through the mount. */
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

/* Replies with rc or an entry the mount counted as one lookup; takes it
 * back if the reply is lost. */
static void tdbfs_reply_entry(fuse_req_t req, int rc,
                              const struct tdbm_entry *te)
{
    struct fuse_entry_param e;

    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    tdbfs_entry(te, &e);
    if (fuse_reply_entry(req, &e) != 0 && te->ino)
        tdbm_forget(tdbfs_mount_of(req), te->ino, 1);
}

static void tdbfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct tdbm_entry e;

    tdbfs_readahead_once(fuse_req_userdata(req));
    tdbfs_reply_entry(req, tdbm_lookup(tdbfs_mount_of(req), parent, name, &e),
                      &e);
}

static void tdbfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    tdbm_forget(tdbfs_mount_of(req), ino, nlookup);
    fuse_reply_none(req);
}

static void tdbfs_forget_multi(fuse_req_t req, size_t count,
                               struct fuse_forget_data *forgets)
{
    struct tdbm_mount *m = tdbfs_mount_of(req);

    for (size_t i = 0; i < count; i++)
        tdbm_forget(m, forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

static void tdbfs_getattr(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    tdbfs_readahead_once(fuse_req_userdata(req));
    struct stat st;
    double timeout;
    int rc = tdbm_getattr(tdbfs_mount_of(req), ino, &st, &timeout);

    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_attr(req, &st, timeout);
}

static void tdbfs_opendir(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h = NULL;
    int rc;

    tdbfs_readahead_once(fuse_req_userdata(req));
    rc = tdbm_opendir(tdbfs_mount_of(req), ino, &h, &oi);
    tdbfs_reply_open(req, fi, rc, h, &oi, true);
}

static void tdbfs_release(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    tdbm_release(tdbfs_mount_of(req), tdbfs_handle_of(fi));
    fuse_reply_err(req, 0);
}

/* Offsets: 0 ".", 1 "..", then 2 + the entry index; each entry carries
 * the offset of the next one. */
static void tdbfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
                          off_t off, struct fuse_file_info *fi)
{
    struct tdbm_handle *h = tdbfs_handle_of(fi);
    size_t pos = 0;
    char *buf;

    if (size > TDBM_IO_MAX)
        size = TDBM_IO_MAX;
    if (off < 0 || !h || !(buf = malloc(size + 1))) {
        fuse_reply_err(req, off < 0 || !h ? EINVAL : ENOMEM);
        return;
    }
    for (uint64_t i = (uint64_t)off;; i++) {
        const char *name;
        uint64_t child = ino;
        struct stat st;
        size_t len;

        name = i == 0 ? "." : "..";
        if (i >= 2) {
            int rc = tdbm_dir_entry(tdbfs_mount_of(req), h, i - 2, &name,
                                    &child, pos == 0);
            if (rc == 1)
                break;
            if (rc < 0) {
                if (pos == 0) {
                    free(buf);
                    fuse_reply_err(req, -rc);
                    return;
                }
                break; /* give what we have; the error comes back next call */
            }
        }
        /* Only st_ino and the type bits count; the type is left unknown
         * (DT_UNKNOWN) for children, since stat may decode offsets tiles. */
        memset(&st, 0, sizeof st);
        st.st_ino = child;
        if (i < 2)
            st.st_mode = S_IFDIR;
        len = fuse_add_direntry(req, buf + pos, size - pos, name, &st,
                                (off_t)(i + 1));
        if (len > size - pos)
            break;
        pos += len;
    }
    fuse_reply_buf(req, buf, pos);
    free(buf);
}

static void tdbfs_open(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
    struct tdbm_open_info oi;
    struct tdbm_handle *h = NULL;
    int rc;

    tdbfs_readahead_once(fuse_req_userdata(req));
    rc = tdbm_open(tdbfs_mount_of(req), ino, fi->flags, &h, &oi);
    tdbfs_reply_open(req, fi, rc, h, &oi, false);
}

/* Replies with the bytes of sink s as the read left them: ranges of
 * files spliced (libfuse copies them when the kernel or the pipe cannot
 * take a splice), pieces of decoded tiles written from where they lie, or
 * the copy. */
static void tdbfs_reply_sink(fuse_req_t req, const struct tdb_sink *s)
{
    struct fuse_bufvec *bv;
    struct iovec *iov;

    switch (s->form) {
    case TDB_SINK_FILE:
        bv = malloc(sizeof *bv + s->npieces * sizeof bv->buf[0]);
        if (!bv)
            break;
        *bv = FUSE_BUFVEC_INIT(0);
        bv->count = s->npieces;
        for (size_t i = 0; i < s->npieces; i++)
            bv->buf[i] = (struct fuse_buf){
                .size = s->pieces[i].len,
                .flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK |
                         FUSE_BUF_FD_RETRY,
                .fd = s->pieces[i].fd,
                .pos = (off_t)s->pieces[i].off,
            };
        fuse_reply_data(req, bv, 0);
        free(bv);
        return;
    case TDB_SINK_TILE:
        iov = malloc(s->npieces * sizeof *iov);
        if (!iov)
            break;
        for (size_t i = 0; i < s->npieces; i++)
            iov[i] = (struct iovec){(void *)(uintptr_t)s->pieces[i].base,
                                    s->pieces[i].len};
        fuse_reply_iov(req, iov, (int)s->npieces);
        free(iov);
        return;
    case TDB_SINK_COPY:
        fuse_reply_buf(req, s->buf, s->got);
        return;
    }
    fuse_reply_err(req, ENOMEM);
}

/* A generation's file's bytes go out spliced from the data files, or
 * from the decoded tiles themselves, where they can. */
static void tdbfs_read(fuse_req_t req, fuse_ino_t ino, size_t size,
                       off_t off, struct fuse_file_info *fi)
{
    struct tdbm_handle *h = tdbfs_handle_of(fi);
    struct tdbfs_daemon *d = fuse_req_userdata(req);
    struct tdb_sink s = TDB_SINK_INIT(TDB_SINK_COPY | TDB_SINK_TILE |
                                      (d->splice ? TDB_SINK_FILE : 0), NULL);
    int rc;

    rc = h && off >= 0 ? tdbm_read(d->m, h, (uint64_t)off, size, &s)
                       : -EINVAL;
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        tdbfs_reply_sink(req, &s);
    tdb_sink_release(&s);
}

/* SEEK_DATA and SEEK_HOLE (the kernel answers SEEK_SET, _CUR and _END
 * itself). */
static void tdbfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                        struct fuse_file_info *fi)
{
    uint64_t out;
    int rc;

    (void)ino;
    if ((whence != SEEK_DATA && whence != SEEK_HOLE) || off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    rc = tdbm_lseek(tdbfs_mount_of(req), tdbfs_handle_of(fi), (uint64_t)off,
                    whence == SEEK_DATA, &out);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_lseek(req, (off_t)out);
}

static void tdbfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                        size_t size, off_t off, struct fuse_file_info *fi)
{
    struct tdbm_handle *h = tdbfs_handle_of(fi);
    size_t done;
    int rc;

    if (!h || off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    rc = tdbm_write(tdbfs_mount_of(req), h, buf, size, (uint64_t)off, &done);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_write(req, done);
}

/* close() waits for flush, so a metadata value is written here and a bad
 * one fails the close (release's answer reaches nobody). */
static void tdbfs_flush(fuse_req_t req, fuse_ino_t ino,
                        struct fuse_file_info *fi)
{
    fuse_reply_err(req, -tdbm_flush(tdbfs_mount_of(req),
                                    tdbfs_handle_of(fi)));
}

static void tdbfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                        struct fuse_file_info *fi)
{
    fuse_reply_err(req, -tdbm_fsync(tdbfs_mount_of(req), tdbfs_handle_of(fi),
                                    datasync != 0));
}

static void tdbfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
                            off_t offset, off_t length,
                            struct fuse_file_info *fi)
{
    fuse_reply_err(req, -tdbm_fallocate(tdbfs_handle_of(fi), mode,
                                        (uint64_t)offset, (uint64_t)length));
}

/* Replies to a getxattr or listxattr with `v` (len bytes) for a buffer of
 * `size`, and frees v. */
static void tdbfs_reply_xattr(fuse_req_t req, int rc, char *v, size_t len,
                              size_t size)
{
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else if (size == 0)
        fuse_reply_xattr(req, len);
    else if (size < len)
        fuse_reply_err(req, ERANGE);
    else
        fuse_reply_buf(req, v, len);
    free(v);
}

static void tdbfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    char *v;
    size_t len;
    int rc = tdbm_listxattr(tdbfs_mount_of(req), ino, &v, &len);

    tdbfs_reply_xattr(req, rc, v, len, size);
}

static void tdbfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                           size_t size)
{
    char *v;
    size_t len;
    int rc = tdbm_getxattr(tdbfs_mount_of(req), ino, name, &v, &len);

    tdbfs_reply_xattr(req, rc, v, len, size);
}

static void tdbfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                           const char *value, size_t size, int flags)
{
    fuse_reply_err(req, -tdbm_setxattr(tdbfs_mount_of(req), ino, name, value,
                                       size, (flags & XATTR_CREATE) != 0));
}

static void tdbfs_removexattr(fuse_req_t req, fuse_ino_t ino,
                              const char *name)
{
    fuse_reply_err(req, -tdbm_removexattr(tdbfs_mount_of(req), ino, name));
}

static void tdbfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct statvfs sv;

    tdbm_statfs(tdbfs_mount_of(req), &sv);
    fuse_reply_statfs(req, &sv);
}

static void tdbfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                          int to_set, struct fuse_file_info *fi)
{
    static const struct { int fuse; unsigned tdbm; } bits[] = {
        {FUSE_SET_ATTR_SIZE, TDBM_SET_SIZE},
        {FUSE_SET_ATTR_MODE, TDBM_SET_MODE},
        {FUSE_SET_ATTR_ATIME, TDBM_SET_ATIME},
        {FUSE_SET_ATTR_MTIME, TDBM_SET_MTIME},
        {FUSE_SET_ATTR_ATIME_NOW, TDBM_SET_ATIME | TDBM_SET_ATIME_NOW},
        {FUSE_SET_ATTR_MTIME_NOW, TDBM_SET_MTIME | TDBM_SET_MTIME_NOW},
        {FUSE_SET_ATTR_UID, TDBM_SET_UID},
        {FUSE_SET_ATTR_GID, TDBM_SET_GID},
    };
    unsigned valid = 0;
    struct stat st;
    int rc;

    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (to_set & bits[i].fuse)
            valid |= bits[i].tdbm;
    rc = tdbm_setattr(tdbfs_mount_of(req), ino, tdbfs_handle_of(fi), attr,
                      valid, &st);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_attr(req, &st, 0.0);
}

static void tdbfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                        mode_t mode, dev_t rdev)
{
    struct tdbm_entry e;

    tdbfs_reply_entry(req, tdbm_mknod(tdbfs_mount_of(req), parent, name, mode,
                                      &e), &e);
}

static void tdbfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                        mode_t mode)
{
    struct tdbm_entry e;

    tdbfs_reply_entry(req, tdbm_mkdir(tdbfs_mount_of(req), parent, name, mode,
                                      &e), &e);
}

static void tdbfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    fuse_reply_err(req, -tdbm_unlink(tdbfs_mount_of(req), parent, name));
}

static void tdbfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    fuse_reply_err(req, -tdbm_rmdir(tdbfs_mount_of(req), parent, name));
}

static void tdbfs_symlink(fuse_req_t req, const char *link,
                          fuse_ino_t parent, const char *name)
{
    fuse_reply_err(req, -tdbm_special(tdbfs_mount_of(req), parent));
}

static void tdbfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                         fuse_ino_t newparent, const char *newname,
                         unsigned int flags)
{
    fuse_reply_err(req, -tdbm_rename(tdbfs_mount_of(req), parent, name,
                                     newparent, newname, flags));
}

static void tdbfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                       const char *newname)
{
    fuse_reply_err(req, -tdbm_special(tdbfs_mount_of(req), newparent));
}

static void tdbfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                         mode_t mode, struct fuse_file_info *fi)
{
    struct tdbm_mount *m = tdbfs_mount_of(req);
    struct fuse_entry_param e;
    struct tdbm_created c;
    int rc = tdbm_create(m, parent, name, fi->flags, mode, &c);

    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    tdbfs_entry(&c.e, &e);
    tdbfs_set_open(fi, c.h, &c.oi, false);
    if (fuse_reply_create(req, &e, fi) != 0) {
        tdbm_forget(m, c.e.ino, 1);
        tdbm_release(m, c.h);
    }
}

const struct fuse_lowlevel_ops tdbfs_ops = {
    .init = tdbfs_init,
    .lookup = tdbfs_lookup,
    .forget = tdbfs_forget,
    .forget_multi = tdbfs_forget_multi,
    .getattr = tdbfs_getattr,
    .opendir = tdbfs_opendir,
    .readdir = tdbfs_readdir,
    .releasedir = tdbfs_release,
    .open = tdbfs_open,
    .read = tdbfs_read,
    .lseek = tdbfs_lseek,
    .write = tdbfs_write,
    .flush = tdbfs_flush,
    .release = tdbfs_release,
    .fsync = tdbfs_fsync,
    .listxattr = tdbfs_listxattr,
    .getxattr = tdbfs_getxattr,
    .setxattr = tdbfs_setxattr,
    .removexattr = tdbfs_removexattr,
    .statfs = tdbfs_statfs,
    .setattr = tdbfs_setattr,
    .mknod = tdbfs_mknod,
    .mkdir = tdbfs_mkdir,
    .unlink = tdbfs_unlink,
    .rmdir = tdbfs_rmdir,
    .symlink = tdbfs_symlink,
    .rename = tdbfs_rename,
    .link = tdbfs_link,
    .create = tdbfs_create,
    .fallocate = tdbfs_fallocate,
};
