/* fragmeta_cons.c: a consolidated fragment metadata file
 * (format_spec/consolidated_fragment_metadata_file.md): the footers of
 * many fragments in one generic tile. */
#include "model/fragmeta.h"
#include "model/generic_tile.h"
#include "core/names.h"

#include <stdlib.h>

/* --------------------------------------------- consolidated fragment meta */

/* The entries of cm->data: count, then per fragment its name (a whole
 * URI before version 9) and footer offset; then each footer's size (it
 * ends where the next one starts, or at the end).  @return 0,
 * TDB_E_CORRUPT or TDB_E_NOMEM. */
static int cons_entries(struct tdb_cons_fragmeta *cm)
{
    struct tdb_cursor c;
    uint32_t n;
    tdb_cur_init(&c, cm->data, (size_t)cm->data_size);
    /* each entry takes at least 16 bytes */
    if (tdb_cur_u32(&c, &n) || n > tdb_cur_left(&c) / 16)
        return TDB_E_CORRUPT;
    cm->names = calloc(n ? n : 1, sizeof *cm->names);
    cm->offsets = calloc(n ? n : 1, sizeof *cm->offsets);
    cm->sizes = calloc(n ? n : 1, sizeof *cm->sizes);
    if (!cm->names || !cm->offsets || !cm->sizes)
        return TDB_E_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        char *uri;
        size_t len;
        if (tdb_cur_str64(&c, &uri))
            return TDB_E_CORRUPT;
        const char *last = tdb_last_component(uri, &len);
        cm->names[i] = strndup(last, len);
        free(uri);
        if (!cm->names[i])
            return TDB_E_NOMEM;
        cm->n = i + 1;
        if (tdb_cur_u64(&c, &cm->offsets[i]) || len == 0)
            return TDB_E_CORRUPT;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (cm->offsets[i] < c.pos || cm->offsets[i] > cm->data_size)
            return TDB_E_CORRUPT;
        uint64_t end = cm->data_size;
        for (uint32_t k = 0; k < n; k++)
            if (cm->offsets[k] > cm->offsets[i] && cm->offsets[k] < end)
                end = cm->offsets[k];
        cm->sizes[i] = end - cm->offsets[i];
    }
    return 0;
}

int tdb_cons_fragmeta_load(const struct tdb_io *io, const char *path,
                           const uint8_t *key, struct tdb_cons_fragmeta **out,
                           struct tdb_error *err)
{
    *out = NULL;
    struct tdb_cons_fragmeta *cm = calloc(1, sizeof *cm);
    if (!cm)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    struct tdb_buf b = {0};
    uint64_t next;
    int rc = tdb_generic_tile_read(&(struct tdb_gt_file){io, path, 0}, key, &b,
                                   &next, err);
    if (rc) {
        tdb_buf_free(&b);
        free(cm);
        return rc;
    }
    cm->data_size = b.len;
    cm->data = tdb_buf_take(&b, NULL);
    rc = cons_entries(cm);
    if (!rc) {
        *out = cm;
        return 0;
    }
    tdb_cons_fragmeta_free(cm);
    if (rc == TDB_E_NOMEM)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    return tdb_err(err, TDB_E_CORRUPT, "%s: consolidated fragment metadata "
                   "is truncated or corrupt", path);
}

void tdb_cons_fragmeta_free(struct tdb_cons_fragmeta *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->names[i]);
    free(c->names);
    free(c->offsets);
    free(c->sizes);
    free(c->data);
    free(c);
}

