/* view.c: the data files of the mount contract (values, .offsets,
 * .validity) read over a sequence of cells, decoding only the tiles a byte
 * range touches (docs/LAYOUT.md "An array"): a field file's making, its
 * size, and seeking over its holes.  The walk over the cells is in
 * view_run.c and view_walk.c, reading in view_copy.c and view_var.c,
 * where bytes lie in the tiles in view_places.c (view_priv.h). */
#include "read/view_priv.h"

#include <stdlib.h>

void tdb_fieldfile_init(struct tdb_fieldfile *ff, struct tdb_cells *cells,
                        struct tdb_array *a, const struct tdb_field_ref *fd,
                        enum tdb_field_part part)
{
    const struct tdb_schema *s = fd->schema;
    bool is_dim = fd->is_dim;
    uint32_t idx = fd->idx;
    memset(ff, 0, sizeof *ff);
    ff->cells = cells;
    ff->arr = a;
    ff->is_dim = is_dim;
    ff->idx = idx;
    ff->part = part;
    ff->schema = s;
    pthread_mutex_init(&ff->lock, NULL);
    if (is_dim) {
        const struct tdb_dim *d = &s->dims[idx];
        ff->type = d->type;
        ff->cell_val_num = d->cell_val_num;
    } else {
        const struct tdb_attr *at = &s->attrs[idx];
        ff->type = at->type;
        ff->cell_val_num = at->cell_val_num;
        ff->nullable = at->nullable;
        ff->fill = at->fill;
        ff->fill_size = at->fill_size;
        ff->fill_validity = at->fill_validity;
    }
    ff->var = ff->cell_val_num == TDB_VAR_NUM;
    ff->cell_size = ff->var ? 0
                            : (uint64_t)tdb_dt_size(ff->type) * ff->cell_val_num;
}

void tdb_fieldfile_destroy(struct tdb_fieldfile *ff)
{
    if (!ff)
        return;
    free(ff->ckpt);
    pthread_mutex_destroy(&ff->lock);
}

int tdb_fieldfile_size(struct tdb_fieldfile *ff, uint64_t *size,
                       struct tdb_error *err)
{
    bool cheap =
        atomic_load_explicit(&ff->cells->counted, memory_order_acquire) &&
        (ff->part != TDB_FILE_VALUES || !ff->var);
    int r = cheap ? 0 : tdb_cells_prepare(ff->cells, err);
    if (r)
        return r;
    uint64_t n = ff->cells->ncells;
    switch (ff->part) {
    case TDB_FILE_VALIDITY: *size = n; return 0;
    case TDB_FILE_OFFSETS: *size = n * 8; return 0;
    default: break;
    }
    if (!ff->var) {
        *size = n * ff->cell_size;
        return 0;
    }
    r = view_var_sized(ff, err);
    if (!r)
        *size = ff->var_total;
    return r;
}

/* Prepares ff's cells and cuts [off, off + *len) at the file's end
 * (*len 0: nothing there).  @return 0 or an error. */
int view_clip(struct tdb_fieldfile *ff, uint64_t off, size_t *len,
              struct tdb_error *err)
{
    uint64_t size;
    int r = tdb_cells_prepare(ff->cells, err);
    if (!r)
        r = tdb_fieldfile_size(ff, &size, err);
    if (r)
        return r;
    if (off >= size)
        *len = 0;
    else if (*len > size - off)
        *len = (size_t)(size - off);
    return 0;
}

int tdb_fieldfile_seek(struct tdb_fieldfile *ff, uint64_t off, bool data,
                       uint64_t *out, struct tdb_error *err)
{
    uint64_t size;
    int r = tdb_fieldfile_size(ff, &size, err);
    if (r)
        return r;
    if (off >= size)
        return TDB_E_NOENT;
    uint32_t nd;
    uint64_t shape[TDB_MAX_DIMS];
    bool holes = (!ff->var || ff->part == TDB_FILE_VALIDITY) &&
                 tdb_cells_dense_shape(ff->cells, &nd, shape);
    if (!holes) {
        *out = data ? off : size;
        return 0;
    }
    uint64_t cs = ff->part == TDB_FILE_VALIDITY ? 1 : ff->cell_size;
    uint64_t c = off / cs, n = ff->cells->ncells;
    struct tdb_run runs[VIEW_RUNS];
    while (c < n) {
        size_t nr;
        struct tdb_runs rs = {runs, VIEW_RUNS, 0};
        if ((r = ff->cells->ops->runs(ff->cells, c, n - c, &rs, err)))
            return r;
        nr = rs.n;
        if (!nr)
            break;
        for (size_t i = 0; i < nr; i++) {
            unsigned part;
            bool written = runs[i].frag &&
                           view_frag_field(ff, runs[i].frag, &part) >= 0;
            if (written == data) {
                uint64_t at = c * cs;
                *out = at > off ? at : off;
                return 0;
            }
            c += runs[i].count;
        }
    }
    if (data)
        return TDB_E_NOENT;
    *out = size;
    return 0;
}
