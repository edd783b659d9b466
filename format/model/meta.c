/* meta.c: array and group metadata (format_spec/metadata.md,
 * vacuum_file.md), both directions: which files are live, their payload
 * decoded and applied (reading), and encoded (tdb_meta_serialize_*, for
 * write/create.c, which wraps it in a generic tile and publishes it). */
#include "model/meta.h"
#include "model/arraydir.h"
#include "model/generic_tile.h"

#include <stdlib.h>

/* Largest vacuum file we read (a list of file names). */
#define META_MAX_VAC_BYTES (UINT64_C(64) << 20)

/* ------------------------------------------------- timestamped file lists */

void tdb_ts_files_free(struct tdb_ts_file *f, size_t n)
{
    if (!f)
        return;
    for (size_t i = 0; i < n; i++)
        free(f[i].name);
    free(f);
}

static bool meta_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static int meta_ts_cmp(const void *a, const void *b)
{
    const struct tdb_ts_file *x = a, *y = b;
    if (x->t1 != y->t1)
        return x->t1 < y->t1 ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Marks in `live` (parallel to files) the files named by the lines of the
 * vacuum file at `path`. */
static int meta_apply_vac(const struct tdb_io *io, const char *path,
                          struct tdb_ts_file *files, size_t n, bool *dropped,
                          struct tdb_error *err)
{
    uint64_t size;
    int r = tdb_io_size(io, path, &size, err);
    if (r)
        return r;
    if (size > META_MAX_VAC_BYTES)
        return tdb_err(err, TDB_E_NOMEM,
                       "%s: vacuum file of %llu bytes is too large", path,
                       (unsigned long long)size);
    char *text = malloc((size_t)size + 1);
    if (!text)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", path);
    if (size && (r = tdb_io_read(io, path, 0, text, (size_t)size, err))) {
        free(text);
        return r;
    }
    text[size] = 0;
    size_t pos = 0;
    while (pos < size) {
        size_t end = pos;
        while (end < size && text[end] != '\n')
            end++;
        /* The item's last path component names the file. */
        size_t start = end;
        while (start > pos && text[start - 1] != '/')
            start--;
        size_t len = end - start;
        for (size_t i = 0; i < n && len; i++) {
            if (!dropped[i] && strlen(files[i].name) == len &&
                memcmp(files[i].name, text + start, len) == 0)
                dropped[i] = true;
        }
        pos = end + 1;
    }
    free(text);
    return 0;
}

/* The timestamped files of a folder being listed: those live so far
 * and the vacuum files in range. */
struct meta_ts_list {
    const char *dir;
    struct tdb_ts_file *files;
    size_t n;
    char **vacs;
    size_t nvac;
};

/* Takes name into l when it is a timestamped file (or vacuum file) live
 * for [ts_start, ts_end]. */
static int meta_ts_take(struct meta_ts_list *l, const char *name,
                        uint64_t ts_start, uint64_t ts_end,
                        struct tdb_error *err)
{
    if (meta_ends_with(name, ".tmp"))
        return 0;
    bool vac = meta_ends_with(name, ".vac");
    char base[256];
    size_t blen = strlen(name) - (vac ? 4 : 0);
    if (blen >= sizeof base)
        return 0;                   /* not a timestamped name */
    memcpy(base, name, blen);
    base[blen] = 0;
    struct tdb_tsname ts;
    if (tdb_tsname_parse(base, &ts) != 0)
        return 0;                   /* not ours: TileDB ignores it too */
    if (ts.t1 < ts_start || ts.t2 > ts_end)
        return 0;
    if (vac) {
        if (!(l->vacs[l->nvac] = tdb_path_join(l->dir, name)))
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", l->dir);
        l->nvac++;
        return 0;
    }
    if (!(l->files[l->n].name = strdup(name)))
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", l->dir);
    l->files[l->n].t1 = ts.t1;
    l->files[l->n].t2 = ts.t2;
    l->n++;
    return 0;
}

/* Drops the files the vacuum files list. */
static int meta_ts_vacuum(const struct tdb_io *io, struct meta_ts_list *l,
                          struct tdb_error *err)
{
    bool *dropped = calloc(l->n ? l->n : 1, sizeof *dropped);
    int r = 0;
    if (!dropped)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", l->dir);
    for (size_t v = 0; v < l->nvac && !r; v++)
        r = meta_apply_vac(io, l->vacs[v], l->files, l->n, dropped, err);
    if (!r) {
        size_t k = 0;
        for (size_t i = 0; i < l->n; i++) {
            if (dropped[i])
                free(l->files[i].name);
            else
                l->files[k++] = l->files[i];
        }
        l->n = k;
    }
    free(dropped);
    return r;
}

int tdb_ts_files_list(const struct tdb_io *io, const char *dir,
                      struct tdb_ts_window when, struct tdb_ts_file **out,
                      size_t *nout, struct tdb_error *err)
{
    struct tdb_names names;
    struct meta_ts_list l = {.dir = dir};
    int r;

    *out = NULL;
    *nout = 0;
    if ((r = tdb_io_names(io, dir, &names, err)))
        return r;
    tdb_io_want_names(io, dir, &names, NULL); /* read next, at once */
    l.files = calloc(names.n ? names.n : 1, sizeof *l.files);
    l.vacs = calloc(names.n ? names.n : 1, sizeof *l.vacs);
    if (!l.files || !l.vacs)
        r = tdb_err(err, TDB_E_NOMEM, "%s: out of memory", dir);
    for (size_t i = 0; i < names.n && !r; i++)
        if (!names.is_dir[i])
            r = meta_ts_take(&l, names.v[i], when.start, when.end, err);
    if (!r && l.nvac)
        r = meta_ts_vacuum(io, &l, err);
    if (!r) {
        qsort(l.files, l.n, sizeof *l.files, meta_ts_cmp);
        *out = l.files;
        *nout = l.n;
        l.files = NULL;
        l.n = 0;
    }
    tdb_ts_files_free(l.files, l.n);
    for (size_t v = 0; v < l.nvac; v++)
        free(l.vacs[v]);
    free(l.vacs);
    tdb_names_free(&names);
    return r;
}

/* -------------------------------------------------------------- the map */

static int meta_key_cmp(const char *a, size_t alen, const char *b,
                        size_t blen)
{
    size_t m = alen < blen ? alen : blen;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

/* Binary search: @return true when found; *pos is the index or the
 * insertion point. */
static bool meta_search(const struct tdb_meta *m, const char *key,
                        size_t len, size_t *pos)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = meta_key_cmp(m->v[mid].key, m->v[mid].key_len, key, len);
        if (c == 0) {
            *pos = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *pos = lo;
    return false;
}

static void meta_item_clear(struct tdb_meta_item *it)
{
    free(it->key);
    free(it->value);
}

static void meta_remove(struct tdb_meta *m, const char *key, size_t len)
{
    size_t pos;
    if (!meta_search(m, key, len, &pos))
        return;
    meta_item_clear(&m->v[pos]);
    memmove(&m->v[pos], &m->v[pos + 1], (m->n - pos - 1) * sizeof *m->v);
    m->n--;
}

/* Takes ownership of it's key and value. */
static int meta_put(struct tdb_meta *m, struct tdb_meta_item *it)
{
    size_t pos;
    if (meta_search(m, it->key, it->key_len, &pos)) {
        meta_item_clear(&m->v[pos]);
        m->v[pos] = *it;
        return 0;
    }
    struct tdb_meta_item *v = realloc(m->v, (m->n + 1) * sizeof *v);
    if (!v)
        return TDB_E_NOMEM;
    m->v = v;
    memmove(&v[pos + 1], &v[pos], (m->n - pos) * sizeof *v);
    v[pos] = *it;
    m->n++;
    return 0;
}

int tdb_meta_apply(struct tdb_meta *m, const uint8_t *p, size_t size,
                   const char *what, struct tdb_error *err)
{
    struct tdb_cursor c;
    tdb_cur_init(&c, p, size);
    while (tdb_cur_left(&c) > 0) {
        size_t at = c.pos;
        uint32_t klen;
        const uint8_t *kp;
        uint8_t del;
        if (tdb_cur_u32(&c, &klen) || tdb_cur_bytes(&c, klen, &kp) ||
            tdb_cur_u8(&c, &del))
            return tdb_err(err, TDB_E_CORRUPT,
                           "%s: metadata entry at byte %zu is truncated",
                           what, at);
        if (del) {
            meta_remove(m, (const char *)kp, klen);
            continue;
        }
        uint8_t type;
        uint32_t count;
        if (tdb_cur_u8(&c, &type) || tdb_cur_u32(&c, &count))
            return tdb_err(err, TDB_E_CORRUPT,
                           "%s: metadata entry at byte %zu is truncated",
                           what, at);
        unsigned dsz = tdb_dt_size(type);
        if (dsz == 0)
            return tdb_err(err, TDB_E_CORRUPT,
                           "%s: metadata entry at byte %zu has unknown "
                           "datatype %u", what, at, type);
        uint64_t vsize;
        const uint8_t *vp = NULL;
        if (!tdb_mul_ok(count, dsz, &vsize) || vsize > tdb_cur_left(&c) ||
            tdb_cur_bytes(&c, (size_t)vsize, &vp))
            return tdb_err(err, TDB_E_CORRUPT,
                           "%s: metadata entry at byte %zu: value of %u x "
                           "%u bytes runs past the end", what, at, count,
                           dsz);
        struct tdb_meta_item it = {0};
        it.key = malloc((size_t)klen + 1);
        it.value = malloc(vsize ? (size_t)vsize : 1);
        if (!it.key || !it.value) {
            meta_item_clear(&it);
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
        }
        if (klen)
            memcpy(it.key, kp, klen);
        it.key[klen] = 0;
        it.key_len = klen;
        if (vsize)
            memcpy(it.value, vp, (size_t)vsize);
        it.type = type;
        it.count = count;
        it.size = vsize;
        if (meta_put(m, &it)) {
            meta_item_clear(&it);
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", what);
        }
    }
    return 0;
}

void tdb_meta_free(struct tdb_meta *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        meta_item_clear(&m->v[i]);
    free(m->v);
    free(m);
}

const struct tdb_meta_item *tdb_meta_find(const struct tdb_meta *m,
                                          const char *key)
{
    size_t pos;
    if (!m || !key || !meta_search(m, key, strlen(key), &pos))
        return NULL;
    return &m->v[pos];
}

int tdb_meta_load_files(const struct tdb_io *io, const struct tdb_ts_files *f,
                        const uint8_t *key, struct tdb_meta **out,
                        struct tdb_error *err)
{
    const char *dir = f->dir;
    struct tdb_buf buf = {0};
    int r = 0;

    *out = NULL;
    struct tdb_meta *m = calloc(1, sizeof *m);
    if (!m)
        return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", dir);
    for (size_t i = 0; i < f->n && r == 0; i++) {
        char *path = tdb_path_join(dir, f->v[i].name);
        if (!path) {
            r = tdb_err(err, TDB_E_NOMEM, "%s: out of memory", dir);
            break;
        }
        uint64_t next;
        tdb_buf_reset(&buf);
        r = tdb_generic_tile_read(&(struct tdb_gt_file){io, path, 0}, key,
                                  &buf, &next, err);
        if (r == 0)
            r = tdb_meta_apply(m, buf.data, buf.len, path, err);
        if (r == 0 && f->v[i].t2 > m->newest_ts)
            m->newest_ts = f->v[i].t2;
        free(path);
    }
    tdb_buf_free(&buf);
    if (r) {
        tdb_meta_free(m);
        return r;
    }
    *out = m;
    return 0;
}

int tdb_meta_load(const struct tdb_io *io, const char *dir,
                  struct tdb_ts_window when, const uint8_t *key,
                  struct tdb_meta **out, struct tdb_error *err)
{
    struct tdb_ts_files f = {dir, NULL, 0};
    *out = NULL;
    int r = tdb_ts_files_list(io, dir, when, &f.v, &f.n, err);
    if (!r)
        r = tdb_meta_load_files(io, &f, key, out, err);
    tdb_ts_files_free(f.v, f.n);
    return r;
}

/* ------------------------------------------------------------- writing */

static int meta_put_key_len(struct tdb_buf *out, const char *key, size_t len)
{
    if (len > UINT32_MAX)
        return TDB_E_INVAL;
    int r = tdb_buf_put_u32(out, (uint32_t)len);
    if (r == 0)
        r = tdb_buf_append(out, key, len);
    return r;
}

static int meta_put_key(struct tdb_buf *out, const char *key)
{
    return meta_put_key_len(out, key, strlen(key));
}

int tdb_meta_serialize_item(struct tdb_buf *out,
                            const struct tdb_meta_item *it)
{
    size_t start = out->len;
    int r = meta_put_key_len(out, it->key, it->key_len);
    if (r == 0)
        r = tdb_buf_put_u8(out, 0);
    if (r == 0)
        r = tdb_buf_put_u8(out, (uint8_t)it->type);
    if (r == 0)
        r = tdb_buf_put_u32(out, it->count);
    if (r == 0 && it->size)
        r = tdb_buf_append(out, it->value, (size_t)it->size);
    if (r)
        out->len = start;
    return r;
}

int tdb_meta_serialize_put(struct tdb_buf *out, const char *key,
                           unsigned type, uint32_t count, const void *value)
{
    unsigned dsz = tdb_dt_size(type);
    uint64_t vsize;
    if (!key || dsz == 0 || type > UINT8_MAX || type == TDB_ANY)
        return TDB_E_INVAL;
    if (!value)
        count = 0;
    if (!tdb_mul_ok(count, dsz, &vsize) || vsize > SIZE_MAX)
        return TDB_E_INVAL;
    size_t start = out->len;
    int r = meta_put_key(out, key);
    if (r == 0)
        r = tdb_buf_put_u8(out, 0);
    if (r == 0)
        r = tdb_buf_put_u8(out, (uint8_t)type);
    if (r == 0)
        r = tdb_buf_put_u32(out, count);
    if (r == 0 && vsize)
        r = tdb_buf_append(out, value, (size_t)vsize);
    if (r)
        out->len = start;
    return r;
}

int tdb_meta_serialize_del(struct tdb_buf *out, const char *key)
{
    if (!key)
        return TDB_E_INVAL;
    size_t start = out->len;
    int r = meta_put_key(out, key);
    if (r == 0)
        r = tdb_buf_put_u8(out, 1);
    if (r)
        out->len = start;
    return r;
}
