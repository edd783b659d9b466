/* wr.h: what the files of the fragment writer share; not for the rest of
 * the engine (writer.h is the write side's).  writer.c is the entry; the
 * others, each calling only those above it:
 *   wr_stage.c   the staged files: read, matched to the schema's fields,
 *                their contents checked
 *   wr_region.c  a dense fragment's region (__subarray.json)
 *   wr_order.c   a sparse fragment's cells: coordinates loaded, checked,
 *                sorted into global order
 *   wr_tiles.c   the tile jobs: staged bytes gathered into tiles, filtered,
 *                appended and recorded in order, on threads
 *   wr_commit.c  the staged folder's crash protocol: its marker, the
 *                commit, the clean-up, the removal */
#ifndef TDB_WR_H
#define TDB_WR_H

#include "write/writer.h"
#include "model/arraydir.h"
#include "model/order.h"
#include "model/schemas.h"

#include <jansson.h>

#define WR_NONE UINT64_MAX             /* a tile cell the write does not cover */
#define WR_GAP 4096                    /* staged reads closer than this merge */
#define WR_READ_MAX (UINT64_C(4) << 20)/* bytes of one merged staged read */
#define WR_CHECK_BLOCK 8192            /* offsets / validity checked per read */
#define WR_JSON_MAX (1u << 20)         /* size of __subarray.json */
/* Written into the staged folder before anything goes into the array: the
 * new fragment's name.  Committing the same folder again after a crash
 * then either finds that fragment committed (and writes nothing: the crash
 * came between the commit and the removal of the staged files) or removes
 * the fragment's uncommitted folder before writing a new one.  The removal
 * of a committed staged folder renames it first (WR_TRASH), so a folder of
 * that name never exists without its marker. */
#define WR_MARKER "__fragment"
/* A committed staged folder is first renamed to this prefix followed by
 * the fragment's name (next to it), then emptied, the marker last, and
 * removed (tdb_staged_remove). */
#define WR_TRASH ".committed."
#define WR_REGION_MAX (UINT64_C(1) << 48)
#define WR_THREADS_MAX 256u            /* threads of the tile work */

enum { WR_VALUES = 0, WR_OFFSETS = 1, WR_VALIDITY = 2 };
enum { WR_OUT_FIXED = 0, WR_OUT_VAR = 1, WR_OUT_VALIDITY = 2 };

/* One field of the fragment and its staged files. */
struct wr_field {
    bool is_dim;
    uint32_t idx;               /* attribute or dimension index */
    uint32_t fid;               /* field number in the fragment */
    const char *name;
    unsigned type;
    bool var, nullable;
    uint64_t vsize;             /* bytes of one value */
    uint64_t cell_size;         /* fixed: bytes per cell; var: vsize */
    const struct tdb_pipeline *filters;
    bool skip_offsets;
    char *sname[3];             /* staged names: values, .offsets, .validity */
    char *spath[3];             /* staged paths, NULL when not staged */
    uint64_t ssize[3];
    bool want[3];
    char *out[3];               /* a0.tdb, a0_var.tdb, a0_validity.tdb */
    uint64_t osize[3];
    bool created[3];
    /* sparse dimensions: the staged bytes in memory */
    uint8_t *mem[3];            /* values, offsets (little-endian); never
                                 * validity */
};

/* Dense: the space tiles covering the region. */
struct wr_dense {
    uint32_t nd;
    uint64_t ext[TDB_MAX_DIMS];     /* tile extents (cells) */
    uint64_t tlo[TDB_MAX_DIMS];     /* the first tile along each dim */
    uint64_t ntl[TDB_MAX_DIMS];     /* tiles along each dim */
    uint64_t stride[TDB_MAX_DIMS];  /* of the region's staged cells */
    uint64_t tcells;                /* cells of a tile */
};

struct wr {
    const struct tdb_io *io, *staged;
    const char *sdir;
    struct tdb_arraydir *dir;   /* the array folder */
    struct tdb_schema_set schemas;
    const struct tdb_schema *s; /* the schema in force */
    const uint8_t *key;         /* data key (NULL unless encrypted) */
    const struct tdb_write_extras *x;   /* a consolidation's (or NULL) */
    bool dense;
    uint32_t nf;
    struct wr_field *f;
    uint64_t ncells;            /* staged cells */
    bool distinct;              /* timestamps: no two versions of a cell
                                 * (the name is marked: tdb_tsname_mark) */
    char nfrom[TDB_MAX_NAME + 64];  /* where ncells comes from */
    struct tdb_error *err;
    /* dense: the region as offsets from the domain's low bounds */
    uint64_t rlo[TDB_MAX_DIMS], rhi[TDB_MAX_DIMS];
    /* dense: the space tiles (wr_dense_write) */
    struct wr_dense dg;
    /* sparse: global order; cells per tile; the non-empty domain */
    uint64_t *perm;
    uint64_t *hil;
    uint64_t cap;
    struct tdb_range sned[TDB_MAX_DIMS];
    unsigned threads;           /* threads of the tile work (1: none) */
    /* output */
    char name[128];
    char *fragdir;
    struct tdb_fmw *fmw;
    bool dir_made;
    char *meta_path, *tmp_commit;
    bool meta_made;
};

/* wr_stage.c */
/* A read of staged bytes [off, off + len) of part p of a field into buf. */
struct wr_read {
    int p;
    uint64_t off;
    void *buf;
    size_t len;
};

/* Checks the contents of f's offsets and validity files (sizes checked). */
int tdb_wr_check_content(struct wr *w, const struct wr_field *f, uint64_t n);
/* Checks the offsets of a var-sized field over n cells (their sizes were
 * checked): first 0, ascending, multiples of the value size, the last
 * within the values. */
int tdb_wr_check_offsets(struct wr *w, const struct wr_field *f, uint64_t n);
/* Checks the sizes of f's staged files against n cells, from the sizes
 * alone (nothing is read): a wrong count costs no I/O however large the
 * files.  w->nfrom says where n comes from. */
int tdb_wr_check_sizes(struct wr *w, const struct wr_field *f, uint64_t n);
/* The fields of the fragment (attributes, then sparse dimensions and the
 * special fields of w->x), and their release. */
int tdb_wr_fields_init(struct wr *w);
void tdb_wr_fields_free(struct wr *w);
/* Whether `name` is a file of a staged folder that the mount or the
 * writer writes there itself (__error, the marker), not staged data. */
bool tdb_wr_own_file(const char *name);
/* Matches the staged folder's entries to the fields' files. */
int tdb_wr_match_staged(struct wr *w, bool *has_subarray);
/* Reads staged bytes of field f (errors into rd's err, or w->err). */
int tdb_wr_sread_e(const struct wr *w, const struct wr_field *f,
                   const struct wr_read *rd, struct tdb_error *err);
int tdb_wr_sread(struct wr *w, const struct wr_field *f, int p, uint64_t off,
                 void *buf, size_t len);

/* wr_region.c */
/* The dense region: __subarray.json, else the view region (current domain,
 * else the domain); and the cell count. */
int tdb_wr_region(struct wr *w, bool has_subarray);

/* wr_order.c */
/* The coordinates of staged cell c. */
void tdb_wr_coords(const struct wr *w, uint64_t c, struct tdb_coords *out);
/* Loads the dimensions' staged files, checks them, sorts the cells into
 * global order and checks for duplicates. */
int tdb_wr_sparse_prepare(struct wr *w);

/* wr_tiles.c */
/* Dense: the space tiles covering the region in tile order, the cells of
 * each in cell order. */
int tdb_wr_dense_write(struct wr *w);
/* Sparse: tiles of `capacity` cells in global order, an MBR per tile. */
int tdb_wr_sparse_write(struct wr *w);

/* wr_commit.c */
/* The name in the staged folder's marker when that fragment is already
 * committed (a repeated commit), else NULL. */
char *tdb_wr_already_committed(const struct tdb_io *io,
                               const struct tdb_io *staged, const char *sdir);
/* Removes what a failed write left (best effort). */
void tdb_wr_cleanup(struct wr *w);
/* Syncs the fragment's files, then publishes it: an empty commit file
 * written under a temporary name in the fragment's folder and renamed into
 * __commits by tdb_io_publish (the rename is the commit). */
int tdb_wr_commit(struct wr *w);
/* Records the fragment's name in the staged folder (WR_MARKER). */
int tdb_wr_mark_staged(struct wr *w);

#endif
