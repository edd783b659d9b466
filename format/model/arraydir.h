/* arraydir.h: the array folder (format_spec/array_file_hierarchy.md,
 * timestamped_name.md, consolidated_commits_file.md, ignore_file.md,
 * vacuum_file.md, delete_commit_file.md): which schemas, fragments,
 * delete commits and metadata files are live at an open timestamp range. */
#ifndef TDB_ARRAYDIR_H
#define TDB_ARRAYDIR_H

#include "core/core.h"
#include "core/names.h"

struct tdb_dir_entry {
    char *name;                 /* timestamped name, no extension */
    char *path;                 /* relative to the array root */
    struct tdb_tsname ts;
    uint64_t offset;            /* deletes: offset of the condition's
                                 * generic tile in path (0 for a .del file,
                                 * inside the file for a .con) */
};

/* A vacuum file (.vac) and the fragment paths it lists, each made
 * relative to the array root ("__fragments/NAME" or, for legacy
 * fragments, "NAME"). */
struct tdb_arraydir_vac {
    struct tdb_dir_entry e;
    size_t nitems;
    char **items;
    bool pending;               /* a fragment consolidation's .vac still
                                 * under its temporary name: it counts
                                 * once fragment e.name is committed */
};

/* The temporary name of fragment NAME's .vac in the array's folder while
 * its consolidation runs: "." NAME TDB_VAC_PENDING (format/consolidate/
 * fragments.c writes it before the fragment, renames it after). */
#define TDB_VAC_PENDING ".vac.cons.tmp"

struct tdb_arraydir {
    /* Schemas, oldest first ("__array_schema.tdb" first when present). */
    size_t nschemas;
    struct tdb_dir_entry *schemas;
    /* Index in schemas of the schema in force at ts_end: the last one
     * (in listing order) whose t2 <= ts_end; 0 when none is. */
    size_t schema_latest;
    /* Live fragments in TileDB's order: sorted by t1 only, ties keeping
     * the listing order (legacy root fragments by name, then those of
     * .con files, then the .wrt files of __commits by name); later ones win. */
    size_t nfrags;
    struct tdb_dir_entry *frags;
    /* Delete commits (.del) within the range, in timestamp order. */
    size_t ndeletes;
    struct tdb_dir_entry *deletes;
    /* Consolidated fragment metadata files (.meta), oldest first. */
    size_t nfragmeta;
    struct tdb_dir_entry *fragmeta;
    /* Array metadata files (__meta/) within the range, oldest first, after
     * vacuum files are applied. */
    size_t nmeta;
    struct tdb_dir_entry *meta;

    /* What tdb_arraydir_select works from (filled by load). */
    uint64_t ts_start, ts_end;
    size_t ncands;                      /* committed fragments, unfiltered */
    struct tdb_dir_entry *cands;
    size_t nvacs;                       /* vacuum files, all */
    struct tdb_arraydir_vac *vacs;
};

/* Lists the array folder at the root of io and selects what is live for
 * [ts_start, ts_end].  `sparse` selects TileDB's rule for fragments: sparse
 * arrays keep fragments that overlap the range (and filter cells by
 * timestamp), dense arrays those wholly inside it; fragments and .vac files
 * older than format 15 always need to be wholly inside.  Call first with
 * sparse=false to find the schemas, then again once the type is known, or
 * use tdb_arraydir_select on the result. */
int tdb_arraydir_load(const struct tdb_io *io, uint64_t ts_start,
                      uint64_t ts_end, struct tdb_arraydir **out,
                      struct tdb_error *err);

/* Committed fragment `name` (its timestamped name) among d's candidates,
 * of every timestamp, vacuumed ones too; NULL when there is none. */
const struct tdb_dir_entry *tdb_arraydir_cand(const struct tdb_arraydir *d,
                                              const char *name);

/* Applies the fragment rule for the array type to a loaded directory
 * (drops fragments outside the range, uncommitted or vacuumed ones);
 * load applies the dense rule.  May be called again (recomputes frags). */
int tdb_arraydir_select(struct tdb_arraydir *d, bool sparse,
                        struct tdb_error *err);

void tdb_arraydir_free(struct tdb_arraydir *d);

/* A commit as TileDB's commits consolidation takes it. */
struct tdb_commit {
    char *marker;       /* relative to the array root: "__commits/N.wrt",
                         * "__commits/N.del", a legacy "N.ok" */
    char *cond_path;    /* a delete (or update): the file its condition tile
                         * is in (the .del itself, or a .con); else NULL */
    uint64_t cond_off, cond_size;
    bool in_con;        /* named by a .con */
    bool on_disk;       /* a file of that name is in the folder */
};

/* Every commit of an array (format 12 on), and the files that list them. */
struct tdb_commits {
    /* TileDB's order: those the .con files name (less those an .ign
     * names), sorted by marker; then the .ok files of the root and the
     * .wrt and .del files of __commits that no .con names, by name. */
    size_t n;
    struct tdb_commit *v;
    size_t ncons, nignores;
    char **cons, **ignores;     /* relative paths */
    /* Index in cons of a .con that names every consolidated commit and
     * nothing else (the other .con files and the .ign files are then
     * superseded), or -1. */
    long whole;
};

/* Lists the commits of the array at the root of io.  Free with
 * tdb_commits_free (also after an error). */
int tdb_arraydir_commits(const struct tdb_io *io, struct tdb_commits *out,
                         struct tdb_error *err);
void tdb_commits_free(struct tdb_commits *c);

/* True when the folder at the root of io looks like an array / a group. */
bool tdb_is_array(const struct tdb_io *io, const char *path);
bool tdb_is_group(const struct tdb_io *io, const char *path);

#endif
