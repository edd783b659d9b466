/* fmw_fixture.c: the fragment metadata writer tests' helpers
 * (fmw_fixture.h). */
#include "fmw_fixture.h"
#include "model/generic_tile.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* tdb_fmw_add_tile with its where and what spelled out. */
int fm_add_tile(struct tdb_fmw *w, uint32_t field, uint64_t off,
                    uint64_t var_off, uint64_t var_size,
                    uint64_t validity_off, const uint8_t *data, uint64_t size,
                    const uint64_t *offsets, uint64_t ncells,
                    const uint8_t *validity, struct tdb_error *err)
{
    struct tdb_fmw_where at = {off, var_off, var_size, validity_off};
    struct tdb_fmw_tile t = {data, size, offsets, ncells, validity};
    return tdb_fmw_add_tile(w, field, &at, &t, err);
}

void fm_fmt(char *dst, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(dst, cap, f, ap);
    va_end(ap);
}

struct tdb_range fm_range_i32(int32_t lo, int32_t hi)
{
    struct tdb_range r;
    memset(&r, 0, sizeof r);
    tdb_st32(r.lo, (uint32_t)lo);
    tdb_st32(r.hi, (uint32_t)hi);
    return r;
}

/* Writes the metadata into a new in-memory array and loads it back. */
int fm_roundtrip(struct tdb_io *io, const struct tdb_buf *b,
                   struct tdb_schema *s, const uint8_t *wkey,
                   const uint8_t *rkey, struct tdb_fragmeta **fm,
                   struct tdb_error *err)
{
    struct tdb_schema_set set = {&s, 1};
    int rc = io->ops->write_at(io->ctx, "__fragments/" FM_RT_NAME
                               "/__fragment_metadata.tdb", 0, b->data,
                               b->len);
    (void)wkey;
    if (rc)
        return rc;
    struct tdb_fragmeta_src src = {.io = io, .path = "__fragments/" FM_RT_NAME,
                                   .name = FM_RT_NAME, .schemas = &set,
                                   .key = rkey};
    rc = tdb_fragmeta_load(&src, fm, err);
    /* and its first encrypted generic tile, as an open of an array with
     * delete commits reads it */
    if (!rc && (rc = tdb_fragmeta_load_processed(*fm, err))) {
        tdb_fragmeta_free(*fm);
        *fm = NULL;
    }
    return rc;
}

double fm_f64(const uint8_t *p)
{
    uint64_t u = tdb_le64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* The generic tile at offset off of fm's metadata file in io, into g
 * (emptied first); its return code. */
int fm_read_gt(struct tdb_io *io, const struct tdb_fragmeta *fm,
                   uint64_t off, struct tdb_buf *g)
{
    struct tdb_error err = {0};
    uint64_t next;
    tdb_buf_reset(g);
    return tdb_generic_tile_read(&(struct tdb_gt_file){io, fm->meta_path, off},
                                 NULL, g, &next, &err);
}
