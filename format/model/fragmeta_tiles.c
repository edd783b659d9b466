/* fragmeta_tiles.c: the parts of fragment metadata loaded when asked
 * (format_spec/fragment.md: the generic tiles of tile offsets, sizes and
 * null counts per field, the R-tree, the processed delete conditions). */
#include "model/fragmeta_priv.h"
#include "model/generic_tile.h"

#include <stdlib.h>

/* ---------------------------------------------------------- generic tiles */

/* Reads the generic tile at `off` of the metadata file: a u64 count then
 * that many u64 (tile offsets or sizes, null counts). */
static int fragmeta_read_u64s(const struct tdb_fragmeta *fm, uint64_t off,
                              const char *what, uint64_t **out, uint64_t *n,
                              struct tdb_error *err)
{
    struct tdb_buf b = {0};
    uint64_t next;
    int rc =
        tdb_generic_tile_read(&(struct tdb_gt_file){fm->io, fm->meta_path, off},
                              fm->key, &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        return tdb_err_ctx(err, rc, "%s of %s", what, fm->name);
    }
    struct tdb_cursor c;
    uint64_t cnt;
    tdb_cur_init(&c, b.data, b.len);
    if (tdb_cur_u64(&c, &cnt) || cnt > tdb_cur_left(&c) / 8) {
        tdb_buf_free(&b);
        return tdb_err(err, TDB_E_CORRUPT, "%s: %s tile at offset %llu is "
                       "truncated", fm->meta_path, what,
                       (unsigned long long)off);
    }
    uint64_t *v = malloc(cnt ? cnt * 8 : 1);
    if (!v) {
        tdb_buf_free(&b);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    }
    for (uint64_t i = 0; i < cnt; i++)
        v[i] = tdb_le64(c.p + c.pos + 8 * i);
    tdb_buf_free(&b);
    *out = v;
    *n = cnt;
    return 0;
}

void tdb_fragmeta_tiles_free(struct tdb_field_tiles *t)
{
    free(t->offsets);
    free(t->var_offsets);
    free(t->var_sizes);
    free(t->validity_offsets);
    free(t->null_counts);
    memset(t, 0, sizeof *t);
}

/* Checks that a per-tile list has one entry per tile. */
static int fragmeta_check_count(const struct tdb_fragmeta *fm, uint32_t f,
                                const char *what, uint64_t got, uint64_t want,
                                struct tdb_error *err)
{
    if (got == want)
        return 0;
    return tdb_err(err, TDB_E_CORRUPT, "%s: field %s has %llu %s for %llu "
                   "tiles", fm->meta_path, fm->file_names[f],
                   (unsigned long long)got, what, (unsigned long long)want);
}

int tdb_fragmeta_load_field(struct tdb_fragmeta *fm, uint32_t f,
                            struct tdb_error *err)
{
    if (!fm || f >= fm->nfields)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: no field %u", f);
    pthread_mutex_lock(&fm->lock);
    if (fm->tiles[f].loaded) {
        pthread_mutex_unlock(&fm->lock);
        return 0;
    }
    struct tdb_field_tiles t = {0};
    uint64_t n;
    int rc = 0;
    if (fm->version < 3 || !fm->gt_tile_offsets) {
        rc = tdb_err(err, TDB_E_CORRUPT, "%s: no tile offsets for field %s",
                     fm->meta_path, fm->file_names[f]);
        goto out;
    }
    rc = fragmeta_read_u64s(fm, fm->gt_tile_offsets[f], "tile offsets",
                            &t.offsets, &t.ntiles, err);
    if (rc)
        goto out;
    if (fm->is_var[f]) {
        rc = fragmeta_read_u64s(fm, fm->gt_var_offsets[f], "var tile offsets",
                                &t.var_offsets, &n, err);
        if (rc || (rc = fragmeta_check_count(fm, f, "var offsets", n,
                                             t.ntiles, err)))
            goto out;
        rc = fragmeta_read_u64s(fm, fm->gt_var_sizes[f], "var tile sizes",
                                &t.var_sizes, &n, err);
        if (rc || (rc = fragmeta_check_count(fm, f, "var sizes", n,
                                             t.ntiles, err)))
            goto out;
    }
    if (fm->is_nullable[f] && fm->gt_validity_offsets) {
        rc = fragmeta_read_u64s(fm, fm->gt_validity_offsets[f],
                                "validity tile offsets", &t.validity_offsets,
                                &n, err);
        if (rc || (rc = fragmeta_check_count(fm, f, "validity offsets", n,
                                             t.ntiles, err)))
            goto out;
    }
    if (fm->is_nullable[f] && fm->gt_null_counts) {
        rc = fragmeta_read_u64s(fm, fm->gt_null_counts[f], "tile null counts",
                                &t.null_counts, &n, err);
        if (rc)
            goto out;
        if (n != t.ntiles) {    /* not relied upon: drop rather than fail */
            free(t.null_counts);
            t.null_counts = NULL;
        }
    }
    t.loaded = true;
    fm->tiles[f] = t;
out:
    if (rc)
        tdb_fragmeta_tiles_free(&t);
    pthread_mutex_unlock(&fm->lock);
    return rc;
}

/* ----------------------------------------------------------------- R-tree */

/* ----------------------------------------------------------------- R-tree */

/* Parses an R-tree payload (fragment.md "R-Tree") and keeps its leaves. */
static int fragmeta_parse_rtree(struct tdb_fragmeta *fm, const uint8_t *p,
                                size_t n, struct tdb_range **mbrs,
                                uint64_t *nmbrs)
{
    struct tdb_cursor c;
    uint32_t u32, levels;
    uint8_t u8;
    uint32_t nd = fm->schema->ndims;
    uint64_t minb = tdb_fragmeta_mbr_min_bytes(fm);
    tdb_cur_init(&c, p, n);
    if (fm->version < 5) {
        if (tdb_cur_u32(&c, &u32) || tdb_cur_u32(&c, &u32) ||
            tdb_cur_u8(&c, &u8))
            return -1;
    } else if (tdb_cur_u32(&c, &u32)) {
        return -1;
    }
    if (tdb_cur_u32(&c, &levels))
        return -1;
    *mbrs = NULL;
    *nmbrs = 0;
    struct tdb_range *one = calloc(nd ? nd : 1, sizeof *one);
    if (!one)
        return TDB_E_NOMEM;
    int rc = 0;
    for (uint32_t l = 0; l < levels && rc == 0; l++) {
        uint64_t cnt;
        if (tdb_cur_u64(&c, &cnt) || cnt > tdb_cur_left(&c) / minb) {
            rc = -1;
            break;
        }
        bool leaf = l + 1 == levels;
        struct tdb_range *v = NULL;
        if (leaf && cnt > 0) {
            uint64_t bytes;
            if (!tdb_mul_ok(cnt, nd, &bytes) ||
                !tdb_mul_ok(bytes, sizeof *v, &bytes)) {
                rc = -1;
                break;
            }
            v = calloc((size_t)(cnt * nd), sizeof *v);
            if (!v) {
                rc = TDB_E_NOMEM;
                break;
            }
        }
        for (uint64_t m = 0; m < cnt && rc == 0; m++)
            if (tdb_fragmeta_read_ranges(fm, &c, v ? v + m * nd : one, false))
                rc = -1;
        if (rc) {
            free(v);
        } else if (leaf) {
            *mbrs = v;
            *nmbrs = cnt;
        }
    }
    free(one);
    return rc;
}

int tdb_fragmeta_load_rtree(struct tdb_fragmeta *fm, struct tdb_error *err)
{
    if (!fm)
        return tdb_err(err, TDB_E_INVAL, "fragment metadata: NULL");
    pthread_mutex_lock(&fm->lock);
    int rc = 0;
    if (fm->rtree_loaded)
        goto out;
    struct tdb_buf b = {0};
    uint64_t next;
    rc = tdb_generic_tile_read(
        &(struct tdb_gt_file){fm->io, fm->meta_path, fm->rtree_off}, fm->key,
        &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        rc = tdb_err_ctx(err, rc, "R-tree of %s", fm->name);
        goto out;
    }
    struct tdb_range *mbrs;
    uint64_t nmbrs;
    rc = fragmeta_parse_rtree(fm, b.data, b.len, &mbrs, &nmbrs);
    if (rc) {
        tdb_buf_free(&b);
        rc = rc == TDB_E_NOMEM
                 ? tdb_err(err, rc, "%s: out of memory", fm->meta_path)
                 : tdb_err(err, TDB_E_CORRUPT, "%s: R-tree at offset %llu is "
                           "truncated or corrupt", fm->meta_path,
                           (unsigned long long)fm->rtree_off);
        goto out;
    }
    fm->rtree_data = b.data;    /* var-sized MBR bounds point in here */
    fm->mbrs = mbrs;
    fm->nmbrs = nmbrs;
    fm->rtree_loaded = true;
out:
    pthread_mutex_unlock(&fm->lock);
    return rc;
}

/* ------------------------------------------------------ processed conds */

int tdb_fragmeta_load_processed(struct tdb_fragmeta *fm,
                                struct tdb_error *err)
{
    if (fm->version < 16 || fm->processed_loaded)
        return 0;
    struct tdb_buf b = {0};
    uint64_t next, cnt;
    struct tdb_gt_file at = {fm->io, fm->meta_path,
                             fm->gt_processed_conditions};
    int rc = tdb_generic_tile_read(&at, fm->key, &b, &next, err);
    if (rc) {
        tdb_buf_free(&b);
        return tdb_err_ctx(err, rc, "processed conditions of %s", fm->name);
    }
    struct tdb_cursor c;
    tdb_cur_init(&c, b.data, b.len);
    if (tdb_cur_u64(&c, &cnt) || cnt > tdb_cur_left(&c) / 8)
        goto corrupt;
    fm->processed = calloc(cnt ? cnt : 1, sizeof *fm->processed);
    if (!fm->processed) {
        tdb_buf_free(&b);
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", fm->meta_path);
    }
    for (uint64_t i = 0; i < cnt; i++) {
        if (tdb_cur_str64(&c, &fm->processed[i]))
            goto corrupt;
        fm->nprocessed = i + 1;
    }
    tdb_buf_free(&b);
    fm->processed_loaded = true;
    return 0;
corrupt:
    tdb_buf_free(&b);
    return tdb_err(err, TDB_E_CORRUPT, "%s: processed conditions tile is "
                   "truncated or corrupt", fm->meta_path);
}

