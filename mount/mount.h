/* mount.h: the mount layer: the file tree that tiledbfs and tiledbfs-cat serve, without FUSE. */
/*
 * One mount (struct tdbm_mount) is an opened source presented as the tree
 * of the mount contract (docs/LAYOUT.md), plus, with -o rw, what writes add
 * to it: __staging/ (real files under staging_dir), metadata files of
 * __meta/ buffered until flushed, and commits of staged folders.  A front
 * end (fuse/ for the daemon, tools/ for tiledbfs-cat) only translates its
 * requests into the calls below and their results into replies.
 *
 * Generations.  An opened source is a tree (struct tdb_fs) that never
 * changes; the mount publishes it as a generation, its view of the
 * source.  A write (a commit, or a metadata value stored or deleted) opens
 * a new generation, which becomes current, and so does, with -o refresh,
 * a change of the source made elsewhere (tdbm_refresh); the old one lives
 * on while a request or an open handle uses it (so an open file keeps
 * reading the bytes it opened) and its numbers answer -ESTALE afterwards.
 * After each such swap the mount calls the front end's `inval` callback
 * with the old root's entry names, with no lock of the mount held.
 *
 * Inode numbers.  The root is TDBM_ROOT_INO (1) and always the current
 * generation's.  Any other node of a generation is (the generation's
 * number << 40) | engine inode; a staged entry has bit 62 set
 * (TDBM_STAGING_BIT), a metadata file created and not yet stored bit 61
 * (TDBM_META_BIT).  Numbers are never reused.
 *
 * Conventions.  Every call returns 0 or a negative errno (a few return 1
 * as documented).  The mount never prints: a failure of the engine (bad
 * bytes, I/O, memory, key) is reported as one line through the `log`
 * callback, control characters replaced by '?', and its message is kept
 * for the calling thread (tdbm_error_take).  Thread-safe.
 *
 * Options.  One typed table (tdbm_option_table) lists the options of the
 * mount contract; both front ends parse "-o a=b,c" through it.
 */
#ifndef TDBM_MOUNT_H
#define TDBM_MOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "tiledb_format.h"

#define TDBM_ROOT_INO 1
#define TDBM_IO_MAX (1u << 20) /* bytes per read or write request */
#define TDBM_TIMEOUT 86400.0   /* seconds an entry of a generation stays
                                * valid */
#define TDBM_GEN_SHIFT 40
#define TDBM_TINO_MASK ((UINT64_C(1) << TDBM_GEN_SHIFT) - 1)
#define TDBM_STAGING_BIT (UINT64_C(1) << 62)
#define TDBM_STAGING_ROOT (TDBM_STAGING_BIT | 1)
#define TDBM_META_BIT (UINT64_C(1) << 61)
#define TDBM_META_MAX (UINT64_C(1) << 30) /* bytes of one metadata value */
#define TDBM_STAGING_NAME "__staging"
#define TDBM_STAGING_ERROR "__error" /* why the last commit failed */
#define TDBM_META_DIR "__meta"
#define TDBM_FRAG_DIR "__fragments"
#define TDBM_ARRAY_JSON "__array.json"
#define TDBM_DATATYPE_XATTR "user.tiledb.datatype"
#define TDBM_KEY_BYTES 32

_Static_assert(TDBM_ROOT_INO == TDB_ROOT_INO,
               "the mount and the engine agree on the root inode");

/* ------------------------------------------------------------- options */

/* The options of the mount contract, typed. */
struct tdbm_options {
    struct tdb_open_options open; /* open.key points to key[] once set */
    uint8_t key[TDBM_KEY_BYTES];
    bool rw;                       /* -o rw: __staging/ and __meta/ writes */
    bool writable;                 /* -o writable: rw, also through mount(8) */
    bool ro;                       /* -o ro: read-only (the default) */
    bool timestamp_set;            /* timestamp= was given */
    bool no_splice;                /* -o no_splice: replies are copies */
    unsigned refresh;              /* -o refresh=SECS; 0: never */
    unsigned consolidate;          /* -o consolidate=N; 0: never */
    /* object-store sources (owned; NULL: as the environment, ~/.aws or
     * Azure's variables say) */
    char *endpoint, *account, *region, *profile;
    char *credentials_file, *config_file;  /* absolute */
    char *staging_dir;             /* absolute, owned; NULL: none given */
    int64_t uid, gid;              /* -o uid=N, gid=N: the owner and group
                                    * every entry shows; -1: the config's */
    unsigned umask;                /* -o umask=M: mode bits no entry shows
                                    * (TDBM_UMASK_DEFAULT) */
    /* s3:// sources: s3_requests=, s3_timeout=, s3_readahead=,
     * disk_cache_size= (s3.disk_cache is disk_cache, once given) */
    struct tdb_store_tuning s3;
    char *disk_cache;              /* absolute, owned; NULL: none */
};

/* The umask of a mount without umask=: folders 0755 (0555 read-only),
 * files 0644 where writable, else 0444. */
#define TDBM_UMASK_DEFAULT 022

enum tdbm_opt_kind {
    TDBM_OPT_BOOL,      /* a flag: name alone */
    TDBM_OPT_SIZE,      /* N[KMG] bytes, uint64_t */
    TDBM_OPT_STRING,    /* a path made absolute, char * (owned) */
    TDBM_OPT_TIMESTAMP, /* T or T1:T2 ms, into open.ts_start/ts_end */
    TDBM_OPT_COUNT,     /* 0 to 256, unsigned */
    TDBM_OPT_KEYFILE,   /* a file of exactly TDBM_KEY_BYTES bytes */
    TDBM_OPT_MEMBERS,   /* inside|any, into open.members */
    TDBM_OPT_SECONDS,   /* 1 to 86400, unsigned */
    TDBM_OPT_TEXT,      /* a string kept as given, char * (owned) */
    TDBM_OPT_ID,        /* a user or group number, 0 to 2^32 - 2, int64_t */
    TDBM_OPT_MODE,      /* octal mode bits, 0 to 0777, unsigned */
    TDBM_OPT_REQUESTS,  /* 1 to 1024, unsigned */
    TDBM_OPT_FRAGMENTS, /* 1 to 1000000, unsigned */
    TDBM_OPT_RETRIES,   /* 0 to 100, unsigned, into s3.retries (and
                         * s3.retries_given) */
};

struct tdbm_option {
    const char *name;
    enum tdbm_opt_kind kind;
    size_t offset;      /* of the field in struct tdbm_options */
    const char *usage;  /* "timestamp=T|T1:T2" */
    const char *help;
};

/* The table, ended by an entry with a NULL name. */
extern const struct tdbm_option tdbm_option_table[];

/* The entry of option `name`, or NULL. */
const struct tdbm_option *tdbm_option_find(const char *name);

/* The option table's help, one "    -o USAGE  HELP" entry per option. */
void tdbm_options_usage(FILE *f);

/* Defaults: whole time range, no key, default cache, read-only. */
void tdbm_options_init(struct tdbm_options *o);

/* Wipes the key and frees what the options own.  Accepts a zeroed struct. */
void tdbm_options_free(struct tdbm_options *o);

/* Applies option `name` with `value` (NULL for a flag).  @return 0; 1 when
 * `name` is no option of the contract (why untouched: the caller may hand
 * it on); -1 with a sentence in why[cap]. */
int tdbm_option(struct tdbm_options *o, const char *name, const char *value,
                char *why, size_t cap);

/* Applies "name[=value],..." (one -o argument); an unknown name is an
 * error.  @return 0 or -1 with a sentence in why[cap]. */
int tdbm_option_list(struct tdbm_options *o, const char *list, char *why,
                     size_t cap);

/* The one number parser of the options (cache_size=, threads=, and the
 * daemon's readahead=): decimal digits only (no sign, no space), then,
 * with `units`, an optional K, M or G (KiB, MiB, GiB), then nothing; at
 * most `max` bytes or units.  @return 0 with *out, or -1. */
int tdbm_parse_number(const char *s, bool units, uint64_t max,
                      uint64_t *out);

/* tdbm_parse_number without units, into an unsigned long: the name
 * fuse/main.c calls for readahead=KiB. */
int tdbm_parse_kib(const char *s, unsigned long max, unsigned long *out);

/* The S3 options of `o` as the engine takes them (pointing into o). */
void tdbm_s3_options(const struct tdbm_options *o, struct tdb_store_options *s3);

/* The options given in `o` that only an s3:// SOURCE reads (endpoint=,
 * disk_cache=, ...), as "endpoint=, disk_cache=" into out[cap].
 * @return how many. */
size_t tdbm_options_s3_given(const struct tdbm_options *o, char *out,
                             size_t cap);

/* The checks between options of a mount (rw and refresh= exclude
 * timestamp=).
 * @return 0 or -1 with a sentence in why[cap]. */
int tdbm_options_check(const struct tdbm_options *o, char *why, size_t cap);

/* -------------------------------------------------------------- source */

/* An opened SOURCE. */
struct tdbm_source {
    char *path;       /* SOURCE: its absolute path (symbolic links
                       * resolved), or the s3:// URL as given; owned */
    struct tdb_io io;
    struct tdb_fs *fs;
    uint8_t stamp[TDB_STAMP_BYTES]; /* with refresh=: tdb_fs_stamp of the */
    bool stamped;                   /* root, taken before fs was opened */
    char warning[512];  /* what the front end says at start, or "": the
                         * s3:// options a local SOURCE ignores */
};

/* Opens SOURCE: an array or group folder (read through the engine's
 * local-file I/O rooted at its absolute path), or an s3:// URL (through
 * its S3 I/O, with the S3 options of `o`; -o rw then needs staging_dir=).
 * `o` must outlive the source (the engine may keep o->open.key).  With
 * o->refresh the source's digest is taken first.  A key_file given for an
 * array that is not encrypted is an error.  @return 0, or -1 with
 * "SOURCE: message" in why[cap]. */
int tdbm_source_open(struct tdbm_source *s, const char *source,
                     const struct tdbm_options *o, char *why, size_t cap);

/* Closes what tdbm_source_open opened; accepts a zeroed struct. */
void tdbm_source_close(struct tdbm_source *s);

/* ---------------------------------------------------------------- names */

/* The name metadata key `key` has in __meta/ (tdb_meta_key_name): '/'
 * and '%' percent-encoded ("%2F", "%25"), "" as "__attr", and the keys
 * ".", ".." and "__attr" as "%2E", "%2E." and "%5F_attr".  @return a new
 * string, or NULL when out of memory. */
char *tdbm_name_encode(const char *key);

/* The key of a name of __meta/: the inverse of tdbm_name_encode, which
 * gives each key one name (hex digits in capitals).  A name no key is
 * shown under ("%41", "%2E%2E", "%2f", a '%' not followed by two hex
 * digits) is an error.  @return a new string, or NULL (errno EINVAL or
 * ENOMEM). */
char *tdbm_name_decode(const char *name);

/* --------------------------------------------------------------- mount */

struct tdbm_mount;
struct tdbm_handle;

struct tdbm_config {
    bool rw;
    uid_t uid, gid;     /* the owner every entry shows (uid= and gid= of
                         * the options win) */
    /* One log line (no newline).  May be NULL. */
    void (*log)(void *arg, const char *line);
    /* The root changed: `names` (n of them) are its old entries, stale now
     * (and everything below them).  Takes the names: free them with
     * tdbm_names_free.  May be NULL (the names are freed). */
    void (*inval)(void *arg, char **names, size_t n);
    void *arg;
};

/* A mount of `src` (which must outlive it; its tree becomes the mount's
 * first generation: src->fs is set to NULL).  `o` must outlive the mount.  @return 0 or
 * -ENOMEM. */
int tdbm_mount_new(struct tdbm_mount **out, struct tdbm_source *src,
                   const struct tdbm_options *o,
                   const struct tdbm_config *cfg);

/* Closes the mount, its generations and staging folder. */
void tdbm_mount_free(struct tdbm_mount *m);

/* The engine's message about the calling thread's last lookup, getattr,
 * open, readdir, read or lseek of `m` that failed in the engine (what its
 * log line says after "OP inode N...: "; it names the file and the tile),
 * into *out, and forgets it.  Each thread has its own.  A failure the
 * caller caused (no such name, not a folder: strerror says it) keeps
 * none, so take the message after every failed call: a later such
 * failure would otherwise find the older one.  @return true, or false
 * when there is none. */
bool tdbm_error_take(struct tdbm_mount *m, struct tdb_error *out);

/* With rw on an array: checks that the array's folders a write changes
 * are writable (a local SOURCE), opens the staging folder (staging_dir=,
 * else SOURCE/../.NAME.tiledbfs-staging; see mount/staging.h) and removes
 * what killed commits left (logged).  Nothing to do otherwise.  @return 0
 * or -1 with a sentence in why[cap]. */
int tdbm_mount_staging(struct tdbm_mount *m, char *why, size_t cap);

void tdbm_names_free(char **names, size_t n);

/* What a lookup, mkdir or create gives the kernel. */
struct tdbm_entry {
    uint64_t ino;           /* 0: a negative entry (no such name) */
    uint64_t generation;
    struct stat attr;
    double attr_timeout, entry_timeout;
};

/* How an open handle wants the front end's caches. */
struct tdbm_open_info {
    bool keep_cache, direct_io, noflush, cache_readdir;
};

/* Finds `name` in `parent`.  On success the result is counted as one
 * lookup of e->ino by the front end (give it back with tdbm_forget when
 * the reply is lost); e->ino 0 is a negative entry to keep entry_timeout
 * seconds.  -ESTALE: `parent` is of a generation closed
 * since. */
int tdbm_lookup(struct tdbm_mount *m, uint64_t parent, const char *name,
                struct tdbm_entry *e);

/* Takes back `n` lookups of `ino`. */
void tdbm_forget(struct tdbm_mount *m, uint64_t ino, uint64_t n);

int tdbm_getattr(struct tdbm_mount *m, uint64_t ino, struct stat *st,
                 double *timeout);

/* Opens a folder; entry `i` (0-based, no "." and "..") by tdbm_dir_entry,
 * which returns 0, 1 past the end, or -errno (logged as "readdir inode
 * INO" when `report`). */
int tdbm_opendir(struct tdbm_mount *m, uint64_t ino, struct tdbm_handle **h,
                 struct tdbm_open_info *oi);
int tdbm_dir_entry(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t i,
                   const char **name, uint64_t *child, bool report);

/* Opens a file with open(2) `flags`.  A file of a generation is read
 * through a tdb_reader of its own; a metadata file opened for writing (or with a
 * writer open) through the value's buffer. */
int tdbm_open(struct tdbm_mount *m, uint64_t ino, int flags,
              struct tdbm_handle **h, struct tdbm_open_info *oi);

/* Closes a handle of tdbm_open, tdbm_opendir or tdbm_create (NULL ok). */
void tdbm_release(struct tdbm_mount *m, struct tdbm_handle *h);

/* Reads up to `size` bytes (at most TDBM_IO_MAX) at `off` of the file open
 * as `h` into sink s (fewer only at the end), in the cheapest form s
 * takes (tiledb_format.h "reading a file"): a generation's file as ranges
 * of the array's data files or pieces of its decoded tiles where it can,
 * every other file as a copy.  -EISDIR for a folder.  @return 0 or
 * -errno; either way tdb_sink_release(s) once its bytes are used. */
int tdbm_read(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t off,
              size_t size, struct tdb_sink *s);

/* lseek's SEEK_DATA (data true) or SEEK_HOLE from `off` in an open file:
 * holes are the never-written cells of a dense array (tdb_fs_seek) and
 * staged files' own holes.  @return 0 or -errno (-ENXIO: off is past the
 * end, or no data follows). */
int tdbm_lseek(struct tdbm_mount *m, struct tdbm_handle *h, uint64_t off,
               bool data, uint64_t *out);

/* Writes to a staged file or a metadata value's buffer; -EROFS else. */
int tdbm_write(struct tdbm_mount *m, struct tdbm_handle *h, const void *buf,
               size_t size, uint64_t off, size_t *done);

/* A metadata value is stored by the flush (close waits for it) of a
 * handle opened for writing, when bytes (or the type) changed since the
 * last store; fsync stores it whatever changed; the file's last release
 * stores a file only truncated (an empty value).  A value that is no
 * whole number of its type's values gives -EINVAL, a failed store the
 * cause's errno; either way every later flush and fsync fails again until
 * the value is stored. */
int tdbm_flush(struct tdbm_mount *m, struct tdbm_handle *h);
int tdbm_fsync(struct tdbm_mount *m, struct tdbm_handle *h, bool datasync);
int tdbm_fallocate(struct tdbm_handle *h, int mode, uint64_t off,
                   uint64_t len);

/* Extended attributes.  listxattr: *buf (malloc'd, *len bytes of
 * NUL-terminated names; NULL when *len is 0).  getxattr: *val (malloc'd,
 * *len bytes) or -ENODATA.  setxattr/removexattr: user.tiledb.datatype of
 * a metadata file being written, its value a datatype name. */
int tdbm_listxattr(struct tdbm_mount *m, uint64_t ino, char **buf,
                   size_t *len);
int tdbm_getxattr(struct tdbm_mount *m, uint64_t ino, const char *name,
                  char **val, size_t *len);
int tdbm_setxattr(struct tdbm_mount *m, uint64_t ino, const char *name,
                  const char *value, size_t size, bool create_only);
int tdbm_removexattr(struct tdbm_mount *m, uint64_t ino, const char *name);

void tdbm_statfs(struct tdbm_mount *m, struct statvfs *sv);

/* setattr's `valid` bits. */
#define TDBM_SET_SIZE 1u
#define TDBM_SET_MODE 2u
#define TDBM_SET_ATIME 4u
#define TDBM_SET_MTIME 8u
#define TDBM_SET_ATIME_NOW 16u
#define TDBM_SET_MTIME_NOW 32u
#define TDBM_SET_UID 64u
#define TDBM_SET_GID 128u

/* Changes a staged entry, or the size of a metadata value being written
 * (through `h` when given); *st receives the new attributes. */
int tdbm_setattr(struct tdbm_mount *m, uint64_t ino, struct tdbm_handle *h,
                 const struct stat *attr, unsigned valid, struct stat *st);

/* Makes a staged folder (only in __staging/). */
int tdbm_mkdir(struct tdbm_mount *m, uint64_t parent, const char *name,
               mode_t mode, struct tdbm_entry *e);

/* The answer to a symbolic link, hard link or special file made in folder
 * `parent`: -EPERM in __staging/ (the fragment writer takes regular files
 * only), -EROFS elsewhere. */
int tdbm_special(struct tdbm_mount *m, uint64_t parent);

/* mknod(2): a regular file is made in __staging/ as tdbm_create makes it
 * (and closed again); any other kind, or elsewhere, tdbm_special's answer.
 * Counts one lookup of e->ino. */
int tdbm_mknod(struct tdbm_mount *m, uint64_t parent, const char *name,
               mode_t mode, struct tdbm_entry *e);

/* Removes a staged file, or deletes metadata key `name` (rm __meta/KEY). */
int tdbm_unlink(struct tdbm_mount *m, uint64_t parent, const char *name);
int tdbm_rmdir(struct tdbm_mount *m, uint64_t parent, const char *name);

/* Renames inside __staging/, or commits: __staging/NAME -> __fragments/X
 * (X is any name: the fragment gets its own timestamped one).  A commit
 * refused for its staged input gives -EBADMSG with the reason in
 * __staging/NAME/__error. */
int tdbm_rename(struct tdbm_mount *m, uint64_t parent, const char *name,
                uint64_t newparent, const char *newname, unsigned flags);

/* What create gives the kernel: the entry and the open file. */
struct tdbm_created {
    struct tdbm_entry e;        /* counted as one lookup of e.ino */
    struct tdbm_handle *h;
    struct tdbm_open_info oi;
};

/* Creates a staged file, or a metadata file of the root's __meta, open
 * with open(2) `flags`, into *out. */
int tdbm_create(struct tdbm_mount *m, uint64_t parent, const char *name,
                int flags, mode_t mode, struct tdbm_created *out);

/* Resolves a '/'-separated path from the root with tdbm_lookup (each
 * lookup but the last given back); *ino is counted as one lookup. */
int tdbm_resolve(struct tdbm_mount *m, const char *path, uint64_t *ino,
                 struct stat *st);

/* ---------------------------------------------------------- live views */

/* The seconds between two checks of tdbm_refresh (-o refresh=SECS), or 0
 * when the mount does not refresh (no refresh=; timestamp= excludes it). */
unsigned tdbm_refresh_secs(const struct tdbm_mount *m);

/* Whether the source changed since the current generation was opened (a
 * commit, schema, metadata value or group member another writer added, or
 * a consolidation's vacuum: tdb_fs_stamp of its folders); if so, opens a
 * new generation and makes it current as a write does: lookups and opens
 * from then on see it, open files and folders keep the generation they
 * opened, and the front end's `inval` is called with the old root's
 * names.  Serialised with the mount's own writes.  @return 1 when a new
 * generation became current, 0 when nothing changed (or the mount is not
 * live), or -errno when a listing or the open failed (the current
 * generation stays; logged once until a check succeeds again). */
int tdbm_refresh(struct tdbm_mount *m);

/* The local folders whose changes tdbm_refresh would see (absolute paths,
 * whether or not they exist now), for a front end that watches them
 * (inotify): of the current generation's arrays and groups, each folder
 * and its __schema, __commits, __fragment_meta, __meta and __group.  None (*n 0)
 * when the mount is not live or the source is in an object store.  Free
 * with tdbm_names_free.  @return 0 or -errno. */
int tdbm_watch_dirs(struct tdbm_mount *m, char ***paths, size_t *n);

#endif
