/* tiledb_format_write.h: public interface of the tiledbfs format engine
 * for writing: creating arrays, writing fragments and metadata, and the
 * staged folders a commit reads from.
 *
 * The engine writes the TileDB format at version 22 (what TileDB 2.29
 * writes; into an array of format 16 to 21 it writes fragments and
 * deletes at the array's version, as TileDB does, and the _22 of the
 * names below is then the array's), through the same `struct tdb_io`
 * it reads with (tiledb_format.h, whose conventions hold here too: 0 or
 * a negative TDB_E_* code, a caller-owned `struct tdb_error`, opaque
 * handles whose free functions accept NULL, no printing, no global
 * state).  Every mutating call goes through the I/O interface, so a
 * backend that fails on purpose (the tests' fault injection) reaches
 * every one of them.
 *
 * Files appear whole or not at all: each is written under a temporary
 * name, synced and renamed into place; a fragment's commit file is
 * published last, so an array shows a fragment wholly or not at all.
 */
#ifndef TILEDB_FORMAT_WRITE_H
#define TILEDB_FORMAT_WRITE_H

#include "tiledb_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format version the engine writes (an older array's fragments and
 * deletes: see above). */
#define TDB_WRITE_VERSION 22

/* The engine's clock: now in ms since the epoch.  Front ends use it to
 * choose write timestamps (0 passed below means the same clock). */
uint64_t tdb_now_ms(void);

/* ------------------------------------------------------------ schemas */

/* An array schema (opaque). */
struct tdb_schema;

/* Parses the "schema" object of __array.json (the mount shows it; the
 * tree's __array.json is its exact input form) into a new schema; err
 * names the offending key.  Free with tdb_schema_free. */
int tdb_schema_from_json(const char *text, size_t len,
                         struct tdb_schema **out, struct tdb_error *err);

/* Checks a schema as TileDB checks a new one: dimensions (datatypes,
 * domains, tile extents), dense-array rules, unique and unreserved names,
 * fill values, the current domain.  @return 0 or TDB_E_INVAL with err
 * naming the dimension or attribute and why. */
int tdb_schema_check(const struct tdb_schema *s, struct tdb_error *err);

void tdb_schema_free(struct tdb_schema *s);

/* ------------------------------------------------------------- arrays */

/* What tdb_array_copy copied. */
struct tdb_copy_stats {
    uint64_t files, bytes;
    uint64_t unlisted;  /* of files: those the walk of src's listings
                         * missed, found through the array's references */
};

/* Copies the array or group at the root of `src` (with its members under
 * it) to the root of `dst`, which must be a missing or empty folder
 * (s3://: a prefix with no objects): every file byte for byte (so an
 * encrypted array stays encrypted, no key needed), folders made as
 * needed, each file synced; the commit files (__commits/, NAME.ok) after
 * every other file, so that a reader of dst sees whole fragments or none,
 * as after TileDB's writes, and the vacuum files (__commits/ *.vac) after
 * the other commit files.  Each of the three goes 8 files at a time
 * (threads of their own, each with an 8 MiB buffer: 64 MiB at most).
 *
 * What is copied is what src's listings show, checked, before anything
 * is written, against the array's own references: every fragment a
 * commit names must have its metadata file, and every file that metadata
 * names must be there with the size it states; the schemas, metadata,
 * delete commits, vacuum files and consolidated fragment metadata the
 * array's folders list, and the members inside a group's folder, each
 * checked the same way.  A file the references name that no listing
 * showed (an object store that leaves out the prefix of a folder holding
 * only folders) is found by listing the folders the references name, or
 * else by name, and copied; one that src lacks, or
 * holds with another size, fails the copy before anything is written
 * (TDB_E_NOENT, TDB_E_CORRUPT; err names the file and what names it).
 * The bytes are copied as they are, so no key is needed; `key` (32
 * bytes, or NULL) is the AES-256-GCM key the check reads an encrypted
 * array's (or group's, and its members') metadata with (a wrong one:
 * TDB_E_AUTH, nothing written).  Without it, the fragment metadata of an
 * encrypted array cannot be read: each fragment's folder is then listed
 * and its metadata file must be there; the members of an encrypted group
 * are then the arrays and groups among its folders.  Once copied, the same references are read back from dst,
 * whose references must name every file src's name (TDB_E_NOENT when a
 * file did not arrive, TDB_E_IO when a commit did not).  src is only read.  A failure after writing
 * began stops the copy and leaves what was copied.  @return 0 or a
 * TDB_E_* code. */
int tdb_array_copy(const struct tdb_io *src, const struct tdb_io *dst,
                   const uint8_t *key, struct tdb_copy_stats *st,
                   struct tdb_error *err);

/* Creates an empty array at the root of io (which must be an empty or
 * missing folder): __schema/<timestamped name> (and its enumerations),
 * __fragments, __commits, __meta, __fragment_meta.  key non-NULL (32
 * bytes): an AES-256-GCM array.  timestamp_ms 0: now.  On failure what
 * was made is removed again. */
int tdb_array_create(const struct tdb_io *io, const struct tdb_schema *s,
                     const uint8_t *key, uint64_t timestamp_ms,
                     struct tdb_error *err);

/* How a commit (a metadata file, a schema, a delete) is written: the
 * array's key, 32 bytes (NULL: none; the file is encrypted with it when
 * the array is), and its time (0: now, as each call says). */
struct tdb_commit_options {
    const uint8_t *key;
    uint64_t timestamp_ms;
};

/* One entry of a metadata file: a put of `count` values of datatype
 * `type` (enum tdb_datatype) at `value` under key `name`, or, del true,
 * a deletion of key `name` (type, count and value unused). */
struct tdb_meta_entry {
    const char *name;
    unsigned type;
    uint32_t count;
    const void *value;
    bool del;
};

/* Writes one array (or group) metadata file holding entry e in folder
 * `meta_dir`, encrypted with at->key (NULL: plain); at->timestamp_ms 0:
 * now; files of one millisecond apply in the order written. */
int tdb_meta_write(const struct tdb_io *io, const char *meta_dir,
                   const struct tdb_meta_entry *e,
                   const struct tdb_commit_options *at,
                   struct tdb_error *err);

/* Evolves the schema of the array at the root of io as TileDB's
 * ArraySchemaEvolution does: its newest schema, changed as the evolution
 * JSON json[0..len) says (docs/SCHEMA.md "Evolution": add_attributes, in
 * the form of a schema's "attrs", and drop_attributes, names), checked as
 * a new schema is, written as __schema/__t_t_<uuid> at at->timestamp_ms
 * (0: now; it must come after the newest schema's).  Fragments written before
 * show an added attribute's fill value and no longer show a dropped one.
 * at->key: the array's (NULL: none).  *name receives the new schema file's
 * name (caller frees).  On bad input TDB_E_INVAL with err naming the key,
 * and the array is unchanged; the file is published whole. */
int tdb_schema_evolve(const struct tdb_io *io, const char *json, size_t len,
                      const struct tdb_commit_options *at, char **name,
                      struct tdb_error *err);

/* ---------------------------------------------------------- fragments */

/* Writes one fragment into the array at the root of `io` from the files in
 * folder `staged_dir` of `staged` (named as the mount names data files:
 * values, NAME.offsets, NAME.validity, and for sparse arrays the dimension
 * files; dense arrays may add __subarray.json, the region as
 * [[lo, hi], ...], default the whole view region), with the schema's
 * filters, at timestamp_ms (0: now).  The commit file is written last, so
 * the fragment is wholly there or not at all.  On bad input returns
 * TDB_E_INVAL with err naming the staged file and why, and the array is
 * unchanged.  *name receives the new fragment's name (caller frees).
 *
 * Every staged file's size is checked against the others and the schema
 * before any content is read.  The tile work runs on one thread per
 * online CPU (rq->threads: below).  Memory: a dense commit streams,
 * one space tile of one field per job (plus staged reads of at most
 * 4 MiB), at most 2 jobs per thread at once; a sparse commit holds every
 * dimension file in memory (to sort the cells into global order) plus 8
 * bytes per cell (16 with a Hilbert order), and jobs of one tile of
 * `capacity` cells of one field, at most 2 per thread at once.
 *
 * Crash safety: the staged folder gets a marker naming the fragment before
 * anything is written to the array; the commit file comes last.  Running
 * the commit again on the same folder after a crash at any point writes
 * the fragment exactly once (see tdb_fragment_clean, tdb_staged_remove).
 * Staged files that others could plant should be read through
 * tdb_io_posix_nofollow.
 *
 * Threads: the tile work (staged reads, tile metadata, filters) runs on
 * rq->threads threads (0: one per online CPU; 1: none, all in the calling
 * thread) while the calling thread appends the filtered tiles to the
 * fragment's files in order.  Whatever the count, the fragment's files
 * are byte for byte the same and the array's storage sees the same calls
 * in the same order.  Memory: at most 2 * threads jobs (one tile of one
 * field each: its contents and filtered bytes) at once, plus per thread
 * the scratch of one tile. */
struct tdb_write_extras;
struct tdb_fragment_req {
    const struct tdb_io *io;        /* the array's root */
    const struct tdb_io *staged;    /* where the cells are staged */
    const char *staged_dir;         /* the staged folder in it */
    const uint8_t *key;             /* the array's key (NULL: none) */
    uint64_t timestamp_ms;          /* 0: now */
    unsigned threads;               /* 0: one per online CPU */
    /* What a consolidation stores beside the cells (the engine's own:
     * write/writer.h); NULL from every other caller.  A dense array
     * refuses them (TDB_E_INVAL). */
    const struct tdb_write_extras *extras;
};
int tdb_fragment_write(const struct tdb_fragment_req *rq, char **name,
                       struct tdb_error *err);

/* Removes the uncommitted fragment folder (its files, then itself) named
 * by the marker that tdb_fragment_write leaves in staged folder
 * `staged_dir`: what a commit killed before its commit file was written
 * left behind.  Only a folder whose name this writer recorded is touched;
 * any other fragment folder without a commit file may be another writer's
 * work in progress and is left alone.  *removed (when non-NULL) receives
 * the removed fragment's name (caller frees), or NULL.
 * @return 0 or an error. */
int tdb_fragment_clean(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, char **removed,
                       struct tdb_error *err);

/* Removes committed staged folder `staged_dir` and its files.  A folder
 * with a marker is first renamed, at once, to its trash name (a sibling:
 * ".committed." and the fragment's name; see tdb_staged_is_trash), then
 * its files go, the marker last, then the folder.  So a removal cut short
 * at any point leaves either the whole staged folder with its marker (a
 * repeated commit writes nothing and removes it) or no folder of that name,
 * and perhaps a trash folder (tdb_staged_sweep).  Stops at the first
 * failure.  @return 0 or an error. */
int tdb_staged_remove(const struct tdb_io *staged, const char *staged_dir,
                      struct tdb_error *err);

/* Whether folder name `name` is a trash name of tdb_staged_remove: what
 * callers hide from their listings and never let anyone create. */
bool tdb_staged_is_trash(const char *name);

/* Removes the trash folders that interrupted tdb_staged_remove calls left
 * in folder `dir` of staged ("": its root); *removed counts them.  Stops
 * at the first failure.  @return 0 or an error. */
int tdb_staged_sweep(const struct tdb_io *staged, const char *dir,
                     size_t *removed, struct tdb_error *err);

/* Deletes the cells of the sparse array at the root of io that meet
 * condition text[0..len), as TileDB's delete query does: a delete commit
 * __commits/__t_t_<uuid>_22.del (its name in *name), t being
 * at->timestamp_ms (the delete then applies to the cells written up to
 * it) or, given 0, now moved past every commit, holding the condition's
 * negation serialized as TileDB serializes it, encrypted with at->key
 * when the array is.  The condition is TileDB-Py's QueryCondition
 * syntax: comparisons of an attribute or dimension (NAME, attr("NAME"),
 * dim("NAME")) with a value
 * (==, !=, <, <=, >, >=; either side), NAME in [V, ...], NAME not in
 * [...], NAME is None, NAME is not None (nullable attributes), joined by
 * and, or (also & and |), not and parentheses; values are numbers,
 * quoted strings (string fields), True and False.  A condition that does
 * not parse, or names an unknown field or a value its field cannot hold,
 * is TDB_E_INVAL with the reason in err; a dense array too (TileDB 2.29
 * deletes from sparse arrays only).  Published whole (written, synced,
 * renamed): readers see the array with or without the delete. */
int tdb_delete_commit(const struct tdb_io *io, const char *text, size_t len,
                      const struct tdb_commit_options *at, char **name,
                      struct tdb_error *err);

/* Staged folder staged_dir of `staged` committed as what its one special
 * file asks for (with __error and __fragment, the mount's, the only other
 * files; each file 64 KiB at most): __delete, a delete of the cells that
 * meet its condition (tdb_delete_commit, now), or __evolve.json, a schema
 * evolution (tdb_schema_evolve, now); the new commit's or schema's name
 * in *name.  @return 1 when the folder holds neither (a fragment's files:
 * tdb_fragment_write), else as those calls (TDB_E_INVAL also when other
 * files are beside it, or it is a link). */
int tdb_staged_gesture(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, const uint8_t *key,
                       char **name, struct tdb_error *err);

/* ------------------------------------------------------ consolidation */

/* What a consolidation or a vacuum did. */
struct tdb_cons_result {
    uint64_t merged;    /* entries of the new file (commits, footers) */
    uint64_t removed;   /* files removed */
    char name[256];     /* the new file, relative to the array; "" when
                         * there was nothing to consolidate */
};

/* How a fragment consolidation reads the array. */
struct tdb_cons_options {
    const uint8_t *key;     /* the array's (NULL: none) */
    unsigned threads;       /* decoding and encoding threads (0: one per
                             * online CPU) */
    uint64_t cache_bytes;   /* decoded-tile cache (0: 128 MiB) */
};

/* Consolidates the fragments of the array at the root of io as TileDB's
 * fragment consolidation does with its default configuration
 * (sm.consolidation.mode=fragments): every live fragment merged into one,
 * __fragments/__t1_t2_<uuid>_22 with t1 the first one's first timestamp
 * and t2 the last one's last (r->name); a sparse array's keeps every
 * version of every cell with its timestamp, so that opening the array at
 * any time shows what it showed before.  Dense fragments are merged only
 * as TileDB merges them: when the box around their non-empty domains has
 * no more cells than their non-empty domains expanded to whole space
 * tiles (sm.consolidation.amplification 1.0); otherwise, as with fewer
 * than two fragments, nothing is done (r->name "").  Then
 * __commits/<name>.vac names the merged fragments, which readers leave
 * out from then on.  Memory: the tile cache, plus the writer's tiles in
 * flight (two per thread and field) and, for a sparse array, the merge's
 * plan (about a byte per run of one fragment's cells) and the writer's
 * cell order (12 bytes a cell).  A kill leaves the array as it was (the
 * new fragment uncommitted, or committed before its .vac: the same cells
 * twice over, newest wins), and a run after it works.  TDB_E_UNSUPPORTED
 * below format 19. */
int tdb_consolidate_fragments(const struct tdb_io *io,
                              const struct tdb_cons_options *o,
                              struct tdb_cons_result *r,
                              struct tdb_error *err);

/* Removes the fragments the .vac files of committed consolidated
 * fragments name, each as tdb_fragment_delete removes one (its commit,
 * then its folder), then the .vac: readers already leave them out, so no
 * view loses a cell at any step. */
int tdb_vacuum_fragments(const struct tdb_io *io, const uint8_t *key,
                         struct tdb_cons_result *r, struct tdb_error *err);

/* Consolidates the commits of the array at the root of io as TileDB's
 * commits consolidation does (sm.consolidation.mode=commits): one
 * __commits/<timestamped name>.con naming every commit (a delete's with
 * its condition), the name's times those of the first and last.  A .con
 * that already names every commit is left as it is.  key: the array's
 * (NULL: none), to read its schema.  TDB_E_UNSUPPORTED below format 12.
 * The new file is published whole (written, synced, renamed): a kill
 * leaves the array as it was, or with the new file, and a run after it
 * works. */
int tdb_consolidate_commits(const struct tdb_io *io, const uint8_t *key,
                            struct tdb_cons_result *r, struct tdb_error *err);

/* Removes what commits consolidation superseded, as TileDB's vacuum does:
 * the commit files a .con names, then, when one .con names every commit,
 * the other .con and the .ign files; and what a killed consolidation
 * left.  Every file it removes is named by a file it keeps, so a reader
 * sees the same array at every step. */
int tdb_vacuum_commits(const struct tdb_io *io, struct tdb_cons_result *r,
                       struct tdb_error *err);

/* Consolidates the footers of the array's live fragments (format 3 on)
 * into one consolidated fragment metadata file (sm.consolidation.mode=
 * fragment_meta), __fragment_meta/<timestamped name>.meta (the array's
 * folder below format 12), encrypted with key when the array is, so that
 * an open reads one file instead of one per fragment.  Nothing is done
 * for fewer than two fragments, nor when such a file already holds
 * exactly the live fragments' footers.  Published whole, as above. */
int tdb_consolidate_fragment_meta(const struct tdb_io *io, const uint8_t *key,
                                  struct tdb_cons_result *r,
                                  struct tdb_error *err);

/* Removes every consolidated fragment metadata file but those of the
 * latest end time, as TileDB's vacuum does, and what a killed
 * consolidation left. */
int tdb_vacuum_fragment_meta(const struct tdb_io *io,
                             struct tdb_cons_result *r,
                             struct tdb_error *err);

/* Consolidates the array's metadata as TileDB's array metadata
 * consolidation does (sm.consolidation.mode=array_meta): every key in
 * force in one __meta/<timestamped name> (none when no key is), the times
 * those of the first and last file merged, then <that name>.vac naming
 * the files merged, which readers then leave out.  Nothing is done for
 * fewer than two metadata files.  Published whole, as above: before the
 * .vac is, the new file holds what the files it merges hold, so a reader
 * sees the same keys at every step. */
int tdb_consolidate_array_meta(const struct tdb_io *io, const uint8_t *key,
                               struct tdb_cons_result *r,
                               struct tdb_error *err);

/* Removes the metadata files the .vac files of __meta name, then the .vac
 * files, as TileDB's vacuum does, and what a killed consolidation left. */
int tdb_vacuum_array_meta(const struct tdb_io *io, struct tdb_cons_result *r,
                          struct tdb_error *err);

/* Removes fragment `name` (its timestamped name) of the array at the root
 * of io as TileDB's Array::delete_fragments_list does, in an order that
 * never shows a reader a committed fragment with missing files: when a
 * consolidated commits file (.con) names its commit, first an ignore file
 * __commits/__t1_t2_<uuid>_22.ign naming it (r->name); then its commit
 * file (__commits/NAME.wrt, NAME.ok below format 12); then the files of
 * its folder and the folder (r->removed counts the files).  A kill at any
 * step leaves the fragment committed and whole, or uncommitted; calling
 * again finishes the work: a fragment folder without a commit is removed
 * (so never call it for a fragment that a writer is still writing).
 * key: the array's, when it is encrypted.  TDB_E_NOENT when there is no
 * such fragment, committed or not; TDB_E_UNSUPPORTED for a fragment
 * committed otherwise (a .con of a legacy array's folder, or before
 * format 5 by its metadata). */
int tdb_fragment_delete(const struct tdb_io *io, const char *name,
                        const uint8_t *key, struct tdb_cons_result *r,
                        struct tdb_error *err);

/* tdb_fragment_delete's first steps alone: the .ign when needed and the
 * commit file; the fragment is gone for every reader that opens the array
 * from then on, while one that opened it before still finds its files.
 * tdb_fragment_delete(name) later removes the folder.  TDB_E_NOENT when
 * the fragment is not committed. */
int tdb_fragment_uncommit(const struct tdb_io *io, const char *name,
                          const uint8_t *key, struct tdb_cons_result *r,
                          struct tdb_error *err);

/* A POSIX backend rooted at folder descriptor `dirfd` (duplicated) that
 * follows no symbolic link: each folder of a path is opened O_NOFOLLOW |
 * O_DIRECTORY relative to the previous one, the last name O_NOFOLLOW; a
 * link, FIFO, socket or device (or a folder where a file is read) is
 * TDB_E_INVAL, a regular file with more than one link (a hard link: its
 * other name may be someone else's file) TDB_E_MLINK, refused before it
 * is opened, for reading or writing.  Files it creates are 0600,
 * folders 0700; ".." is refused.  For input that others may have planted
 * (staged files).  Files read stay open (the 32 most recently used, as
 * in the POSIX backend) until a write, mkdir, rename or removal through
 * the backend, so a commit opens each staged file once, not at every
 * read.  Release with tdb_io_free. */
int tdb_io_posix_nofollow(struct tdb_io *io, int dirfd);

#ifdef __cplusplus
}
#endif
#endif
