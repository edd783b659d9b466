/* fragmeta_priv.h: what the files of the fragment metadata reader share
 * (fragmeta_parse.c: footers and the legacy layout; fragmeta_tiles.c: the
 * parts loaded when asked; fragmeta.c: loading, queries).  Internal to
 * them. */
#ifndef TDB_FRAGMETA_PRIV_H
#define TDB_FRAGMETA_PRIV_H

#include "model/fragmeta.h"

#define FRAGMETA_FILE "__fragment_metadata.tdb"
#define FRAGMETA_LEGACY_SCHEMA "__array_schema.tdb"
#define FRAGMETA_MAX_VERSION 23u
/* A footer is a few words per field; anything larger is corrupt. */
#define FRAGMETA_MAX_FOOTER (UINT64_C(1) << 30)

/* Size in bytes of one coordinate of fixed-sized dimension d; 0 if the
 * schema gives an impossible one. */
static inline unsigned fragmeta_coord_size(const struct tdb_dim *d)
{
    unsigned s = tdb_dt_size(d->type);
    return s <= 8 ? s : 0;
}

static inline bool fragmeta_dim_var(const struct tdb_dim *d)
{
    return d->cell_val_num == TDB_VAR_NUM;
}


/* The schema of a fragment written before version 10: the legacy schema
 * file, else the oldest schema. */
const struct tdb_schema *
tdb_fragmeta_legacy_schema(const struct tdb_schema_set *s);

/* Reads one MBR (or non-empty domain): ndims 1D ranges.  Before version 5
 * every range is two fixed values.  Var-sized bounds are copied when
 * `copy`, else they point into the cursor's bytes. */
int tdb_fragmeta_read_ranges(const struct tdb_fragmeta *fm,
                             struct tdb_cursor *c, struct tdb_range *r,
                             bool copy);
/* Frees the copied var-sized bounds of r[0..n). */
void tdb_fragmeta_free_ranges(struct tdb_range *r, uint32_t n);
/* Whether every dimension of s is fixed-sized. */
bool tdb_fragmeta_all_fixed(const struct tdb_schema *s);
/* Minimum bytes one MBR takes (to cap counts before allocating). */
uint64_t tdb_fragmeta_mbr_min_bytes(const struct tdb_fragmeta *fm);

/* Parses the footer p[0..n) of fm (fragment.md "Footer"), choosing its
 * schema from `schemas`.  `exact`: the size is known (the bytes must be
 * consumed exactly). */
int tdb_fragmeta_parse_footer(struct tdb_fragmeta *fm,
                              const struct tdb_schema_set *schemas,
                              const uint8_t *p, size_t n, bool exact,
                              struct tdb_error *err);
/* The size of the footer of a version (< 10) without a footer length,
 * whose dimensions are all fixed-sized. */
uint64_t tdb_fragmeta_footer_size_fixed(const struct tdb_schema *s,
                                        uint32_t version);
/* Loads all of a fragment of version <= 2 (one file, no footer). */
int tdb_fragmeta_load_legacy(struct tdb_fragmeta *fm,
                             const struct tdb_schema_set *schemas,
                             struct tdb_error *err);

/* Frees one field's lazily loaded tile lists. */
void tdb_fragmeta_tiles_free(struct tdb_field_tiles *t);

#endif
