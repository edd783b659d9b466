/* staging.h: the mount contract's "Writing" area: MOUNT/__staging/NAME/FILE kept as real files under staging_dir. */
/*
 * The staging area is two levels deep: the folder itself (inode
 * TDBM_STAGING_ROOT), one subfolder per fragment being staged, and regular
 * files inside those.  Everything is a real file under staging_dir, opened
 * relative to one folder descriptor, so staged bytes live on disk and
 * survive a restart of the daemon.
 *
 * Inode numbers of staged entries have bit 62 set and are never reused: an
 * entry gets a new number each time a name is created, so an unlinked file
 * still open keeps its own.  Each number counts the kernel's lookups and is
 * dropped when tdbm_staging_forget brings the count to zero.
 *
 * Permissions: staged entries are private to their owner.  Folders are
 * 0700; files keep only their owner bits (a chmod asking for group or
 * other bits gets the owner's alone), and stat shows only the owner bits
 * whatever is on disk, so that with default_permissions (always set) the
 * kernel lets no other user read, list, change or commit them.  On disk
 * they are the daemon's user's; the mount layer shows them as the mount's
 * owner's (uid=, gid=) like every entry.
 *
 * This module includes no FUSE header; every function returns 0 or a
 * negative errno, and is safe to call from several threads.
 */
#ifndef TDBM_STAGING_H
#define TDBM_STAGING_H

#include "mount.h"

struct tdbm_staging;

/* The folder of staging_dir where an s3:// mount records its multipart
 * uploads under way (tdb_io_s3_journal): never a staged folder. */
#define TDBM_STAGING_UPLOADS ".tiledbfs-uploads"

/* Is `name` one the staging folder's root keeps for the daemon (a
 * committed folder's trash, the uploads' journal), never shown? */
bool tdbm_staging_reserved(const char *name);

/* Opens (creating it, mode 0700, when missing) the folder `dir`, which
 * must be a real folder (not a symbolic link) owned by the effective user
 * and not writable by group or others (other read bits are taken away:
 * it becomes 0700), and locks it (flock) so that no other daemon uses it
 * at the same time.  @return 0 or -errno with a sentence in why[cap]. */
int tdbm_staging_open(struct tdbm_staging **out, const char *dir,
                       char *why, size_t cap);
void tdbm_staging_close(struct tdbm_staging *st);

/* The absolute path of the folder (valid until close). */
const char *tdbm_staging_dir(const struct tdbm_staging *st);

/* The folder's descriptor (valid until close; for tdb_io_posix_nofollow). */
int tdbm_staging_fd(const struct tdbm_staging *st);

static inline bool tdbm_staging_owns(uint64_t ino)
{
    return (ino & TDBM_STAGING_BIT) != 0;
}

/* Stats an entry; st_ino is its inode number. */
int tdbm_staging_stat(struct tdbm_staging *st, uint64_t ino,
                       struct stat *out);

/* Finds `name` in folder `parent` and counts one lookup of the result. */
int tdbm_staging_lookup(struct tdbm_staging *st, uint64_t parent,
                         const char *name, uint64_t *ino, struct stat *out);

/* Takes back `n` lookups of `ino`. */
void tdbm_staging_forget(struct tdbm_staging *st, uint64_t ino, uint64_t n);

/* Makes folder `name` in the root (the only place folders may be made:
 * -EPERM elsewhere); counts one lookup. */
int tdbm_staging_mkdir(struct tdbm_staging *st, uint64_t parent,
                        const char *name, mode_t mode, uint64_t *ino,
                        struct stat *out);

/* Removes folder `name` of the root; a leftover __error alone does not
 * keep it from going. */
int tdbm_staging_rmdir(struct tdbm_staging *st, uint64_t parent,
                        const char *name);

/* A staged file tdbm_staging_create made or opened. */
struct tdbm_staged_file {
    uint64_t ino;
    struct stat st;
    int fd;             /* open, the caller's to close; -1 on failure */
};

/* Creates (or opens, per `flags`) regular file `name` in a staged folder
 * into *out.  Counts one lookup. */
int tdbm_staging_create(struct tdbm_staging *st, uint64_t parent,
                         const char *name, int flags, mode_t mode,
                         struct tdbm_staged_file *out);

/* Opens an existing regular file; *fd is the caller's to close. */
int tdbm_staging_open_file(struct tdbm_staging *st, uint64_t ino,
                            int flags, int *fd);

int tdbm_staging_unlink(struct tdbm_staging *st, uint64_t parent,
                         const char *name);

/* Renames within the staging area (RENAME_NOREPLACE honoured). */
int tdbm_staging_rename(struct tdbm_staging *st, uint64_t parent,
                         const char *name, uint64_t newparent,
                         const char *newname, unsigned flags);

/* Changes size, mode or times of `ino` (through `fd` when >= 0).
 * `valid` holds TDBM_SET_* bits (mount.h). */
int tdbm_staging_setattr(struct tdbm_staging *st, uint64_t ino, int fd,
                          const struct stat *attr, unsigned valid,
                          struct stat *out);

/* The entries of folder `ino` (not "." and ".."), sorted: *names is an
 * array of *n strings the caller frees with tdbm_staging_names_free. */
int tdbm_staging_list(struct tdbm_staging *st, uint64_t ino, char ***names,
                       size_t *n);
void tdbm_staging_names_free(char **names, size_t n);

/* The staged folder `name` of `parent` for a commit: -ENOENT when missing,
 * -ENOTDIR when not a folder, -EINVAL when parent is not the root. */
int tdbm_staging_check_commit(struct tdbm_staging *st, uint64_t parent,
                               const char *name);

/* Writes `msg` (and a newline) into NAME/__error, replacing it. */
int tdbm_staging_set_error(struct tdbm_staging *st, const char *name,
                            const char *msg);

/* Removes the staged folder NAME and every file in it, after a commit,
 * through tdb_staged_remove (no link followed; renamed away first, then
 * emptied, the commit marker last); the names' inode numbers are
 * detached.  The trash names of tdb_staged_remove are never listed, found
 * or made in the root.  @return 0, or -EIO with the reason in why[cap]. */
int tdbm_staging_remove(struct tdbm_staging *st, const char *name,
                         char *why, size_t cap);

#endif
