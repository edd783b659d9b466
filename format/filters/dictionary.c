/* dictionary.c: DICTIONARY on var strings (filters/dictionary_encoding.md). */
#include "compress_common.h"

#include <stdlib.h>

/* Metadata: the strings prefix (compress_common.h), u8 id width, u8 string
 * length width, u32 dictionary bytes, then the dictionary: per unique
 * string, in order of first appearance, its big-endian length and bytes
 * (no count in front, whatever the spec's table says).  Data: one
 * big-endian id per cell.  The id width is the smallest that holds the
 * number of cells, the length width the smallest that holds the longest
 * string. */

struct dictionary_word {
    const uint8_t *p;
    size_t len;
};

/* Splits the serialised dictionary into words (*words freed by caller). */
static int dictionary_parse(const struct tdb_filter_call *call,
                            const uint8_t *d, size_t n, unsigned sw,
                            struct dictionary_word **words, size_t *count)
{
    size_t cnt = 0, pos = 0;
    struct dictionary_word *w;

    *words = NULL;
    *count = 0;
    while (pos < n) {
        uint64_t len;
        if (n - pos < sw)
            goto truncated;
        len = tdb_compress_be(d + pos, sw);
        pos += sw;
        if (len > n - pos)
            goto truncated;
        pos += (size_t)len;
        cnt++;
    }
    if (cnt == 0)
        return 0;
    w = calloc(cnt, sizeof *w);
    if (!w)
        return tdb_err(call->err, TDB_E_NOMEM, "DICTIONARY: out of memory");
    pos = 0;
    for (size_t i = 0; i < cnt; i++) {
        w[i].len = (size_t)tdb_compress_be(d + pos, sw);
        w[i].p = d + pos + sw;
        pos += sw + w[i].len;
    }
    *words = w;
    *count = cnt;
    return 0;
truncated:
    return tdb_err(call->err, TDB_E_CORRUPT,
                   "DICTIONARY: dictionary truncated at byte %zu of %zu",
                   pos, n);
}

/* The ids of a chunk: cells big-endian ids of iw bytes at p, into words,
 * which make at most `limit` string bytes. */
struct dictionary_ids {
    const uint8_t *p;
    uint64_t cells;
    unsigned iw;
    const struct dictionary_word *words;
    size_t nwords;
    uint64_t limit;
};

/* Sums the lengths of the cells' strings into *total.  @return the first
 * cell whose id is not in the dictionary or whose string takes the sum past
 * ids->limit, or ids->cells; iw a constant once inlined. */
static inline __attribute__((always_inline)) uint64_t
dictionary_check_w(const struct dictionary_ids *ids, unsigned iw,
                   uint64_t *total)
{
    uint64_t out = 0;
    for (uint64_t i = 0; i < ids->cells; i++) {
        uint64_t id = tdb_compress_be(ids->p + i * iw, iw);
        if (id >= ids->nwords || ids->words[id].len > ids->limit - out)
            return i;
        out += ids->words[id].len;
    }
    *total = out;
    return ids->cells;
}

static uint64_t dictionary_check(const struct dictionary_ids *ids,
                                 uint64_t *total)
{
    switch (ids->iw) {
    case 1: return dictionary_check_w(ids, 1, total);
    case 2: return dictionary_check_w(ids, 2, total);
    case 4: return dictionary_check_w(ids, 4, total);
    default: return dictionary_check_w(ids, 8, total);
    }
}

/* Writes the cells' strings to dst and their offsets to off (the ids
 * checked); iw a constant once inlined. */
static inline __attribute__((always_inline)) void
dictionary_expand_w(const struct dictionary_ids *ids, unsigned iw,
                    uint8_t *dst, uint8_t *off)
{
    uint64_t out = 0;
    for (uint64_t i = 0; i < ids->cells; i++) {
        const struct dictionary_word *w =
            &ids->words[tdb_compress_be(ids->p + i * iw, iw)];
        tdb_compress_copy(dst + out, w->p, w->len);
        tdb_st64(off + i * 8, out);
        out += w->len;
    }
}

static void dictionary_expand(const struct dictionary_ids *ids, uint8_t *dst,
                              uint8_t *off)
{
    switch (ids->iw) {
    case 1: dictionary_expand_w(ids, 1, dst, off); break;
    case 2: dictionary_expand_w(ids, 2, dst, off); break;
    case 4: dictionary_expand_w(ids, 4, dst, off); break;
    default: dictionary_expand_w(ids, 8, dst, off); break;
    }
}

/* What a chunk's metadata says. */
struct dictionary_md {
    struct tdb_compress_strings_hdr h;
    unsigned iw, sw;            /* id and string length widths */
    const uint8_t *dict;
    uint32_t dict_size;
    uint64_t cells;
};

/* Reads and checks the chunk's metadata against its `size` data bytes and
 * the call's limits; an empty chunk has m->h.encoded_bytes 0. */
static int dictionary_read_md(const struct tdb_filter_call *call,
                              struct tdb_cursor *md, size_t size,
                              struct dictionary_md *m)
{
    uint8_t iw8 = 0, sw8 = 0;
    int rc = tdb_compress_strings_read_hdr(&m->h, md, "DICTIONARY",
                                           call->err);
    if (rc < 0)
        return rc;
    tdb_cur_u8(md, &iw8);
    tdb_cur_u8(md, &sw8);
    tdb_cur_u32(md, &m->dict_size);
    tdb_cur_bytes(md, m->dict_size, &m->dict);
    if (md->bad)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: metadata truncated (widths or "
                       "dictionary)");
    tdb_cur_skip(md, tdb_cur_left(md));
    if (m->h.encoded_bytes > size)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: metadata records %u encoded bytes but "
                       "the chunk holds %zu", m->h.encoded_bytes, size);
    if (m->h.offsets_bytes % 8 != 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: offsets size %u is not a multiple of 8",
                       m->h.offsets_bytes);
    m->cells = m->h.offsets_bytes / 8;
    if (m->h.string_bytes > tdb_filter_max_data(call) ||
        m->cells > tdb_filter_max_cells(call))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: metadata records %u string bytes in %llu "
                       "cells, more than the tile allows (%llu bytes, %llu "
                       "cells)", m->h.string_bytes,
                       (unsigned long long)m->cells,
                       (unsigned long long)tdb_filter_max_data(call),
                       (unsigned long long)tdb_filter_max_cells(call));
    if (m->h.encoded_bytes == 0) {
        if (m->h.string_bytes != 0 || m->cells != 0)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "DICTIONARY: no ids for %u string bytes in %llu "
                           "cells", m->h.string_bytes,
                           (unsigned long long)m->cells);
        return 0;
    }
    m->iw = tdb_compress_width(iw8);
    m->sw = tdb_compress_width(sw8);
    if (!m->iw || !m->sw)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: zero id or string length width");
    if (m->h.encoded_bytes % m->iw != 0 ||
        m->h.encoded_bytes / m->iw != m->cells)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: %u bytes of %u-byte ids do not make the "
                       "%llu recorded cells", m->h.encoded_bytes, m->iw,
                       (unsigned long long)m->cells);
    return 0;
}

/* Checks every id of the chunk and the total before allocating anything,
 * then writes the strings to data_out and their offsets to call->offsets
 * (both as they were on failure). */
static int dictionary_expand_chunk(const struct tdb_filter_call *call,
                                   const struct tdb_filter_stage *st,
                                   const struct dictionary_md *m,
                                   const struct dictionary_word *words,
                                   size_t nwords)
{
    const struct dictionary_ids ids = {st->data, m->cells, m->iw, words,
                                       nwords, m->h.string_bytes};
    uint64_t out = 0, bad = dictionary_check(&ids, &out);
    uint8_t *dst = NULL, *op = NULL;
    if (bad < m->cells) {
        uint64_t id = tdb_compress_be(st->data + bad * m->iw, m->iw);
        if (id >= nwords)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "DICTIONARY: cell %llu has id %llu but the "
                           "dictionary holds %zu strings",
                           (unsigned long long)bad, (unsigned long long)id,
                           nwords);
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: cells decode to more than the recorded "
                       "%u string bytes", m->h.string_bytes);
    }
    if (out != m->h.string_bytes)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: cells decode to %llu bytes, metadata "
                       "records %u", (unsigned long long)out,
                       m->h.string_bytes);
    /* cells whose strings are all empty write no byte: dst stays NULL,
     * and dst + 0 is undefined behaviour, so they write to `none` */
    uint8_t none[1];
    if ((m->h.string_bytes > 0 &&
         tdb_buf_grow(st->data_out, m->h.string_bytes, &dst) < 0) ||
        tdb_buf_grow(call->offsets, (size_t)m->cells * 8, &op) < 0)
        return tdb_err(call->err, TDB_E_NOMEM, "DICTIONARY: out of memory");
    dictionary_expand(&ids, dst ? dst : none, op);
    return 0;
}

static int dictionary_decode(const struct tdb_filter_call *call,
                             struct tdb_filter_stage *st)
{
    struct dictionary_md m;
    struct dictionary_word *words = NULL;
    size_t nwords = 0, base = st->data_out->len, off_base;
    int rc;

    if (!call->strings_with_offsets)
        return tdb_err(call->err, TDB_E_UNSUPPORTED,
                       "DICTIONARY: only var-sized ASCII/UTF-8 strings whose "
                       "offsets the filter stores can be decoded (format "
                       "13+, UTF-8 17+)");
    if (!call->offsets)
        return tdb_err(call->err, TDB_E_INVAL,
                       "DICTIONARY: string tile decoded without an offsets "
                       "buffer");
    off_base = call->offsets->len;
    rc = dictionary_read_md(call, &st->md, st->size, &m);
    if (rc < 0 || m.h.encoded_bytes == 0)
        return rc;
    rc = dictionary_parse(call, m.dict, m.dict_size, m.sw, &words, &nwords);
    if (rc < 0)
        return rc;
    rc = dictionary_expand_chunk(call, st, &m, words, nwords);
    free(words);
    if (rc < 0) {
        st->data_out->len = base;
        call->offsets->len = off_base;
    }
    return rc;
}

/* ---------------------------------------------------------------- encoding */

/* The string of cell i of the encode input. */
static void dictionary_cell(const struct tdb_filter_call *call,
                            const uint8_t *data, size_t size, uint64_t i,
                            const uint8_t **s, size_t *len)
{
    uint64_t b = call->in_offsets[i];
    uint64_t e = i + 1 < call->n_offsets ? call->in_offsets[i + 1] : size;
    *s = data + b;
    *len = (size_t)(e - b);
}

static uint64_t dictionary_hash(const uint8_t *s, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len; i++)
        h = (h ^ s[i]) * UINT64_C(1099511628211);
    return h;
}

/* Open-addressing table from a string to its id; a slot holds the cell
 * index of the string's first appearance plus one (0 is empty). */
struct dictionary_table {
    uint64_t *slot;
    uint64_t *id;
    size_t mask;
};

/* Encoding one chunk: its strings, the dictionary so far and the table
 * that finds a string's id. */
struct dictionary_enc {
    const struct tdb_filter_call *call;
    const uint8_t *data;
    size_t size;
    struct dictionary_table t;
    struct tdb_buf dict;
    uint64_t nwords;
    unsigned sw;                /* string length width */
};

/* The id of cell i's string, adding the string to the dictionary when it
 * is new. */
static int dictionary_id(struct dictionary_enc *e, uint64_t i, uint64_t *id)
{
    const uint8_t *s;
    size_t len, k;
    dictionary_cell(e->call, e->data, e->size, i, &s, &len);
    k = (size_t)dictionary_hash(s, len) & e->t.mask;
    for (;; k = (k + 1) & e->t.mask) {
        const uint8_t *o;
        size_t olen;
        if (e->t.slot[k] == 0) {
            uint8_t *p;
            e->t.slot[k] = i + 1;
            e->t.id[k] = e->nwords++;
            if (tdb_buf_grow(&e->dict, e->sw + len, &p) < 0)
                return tdb_err(e->call->err, TDB_E_NOMEM,
                               "DICTIONARY: out of memory");
            tdb_compress_st_be(p, e->sw, len);
            if (len > 0)
                memcpy(p + e->sw, s, len);
            break;
        }
        dictionary_cell(e->call, e->data, e->size, e->t.slot[k] - 1, &o,
                        &olen);
        if (olen == len && (len == 0 || memcmp(o, s, len) == 0))
            break;
    }
    *id = e->t.id[k];
    return 0;
}

/* Appends the chunk's metadata: the strings prefix, the widths and the
 * dictionary. */
static int dictionary_put_md(const struct dictionary_enc *e, uint64_t n,
                             unsigned iw, struct tdb_buf *md_out)
{
    struct tdb_compress_strings_hdr h = {
        .string_bytes = (uint32_t)e->size,
        .encoded_bytes = (uint32_t)(n * iw),
        .offsets_bytes = (uint32_t)(n * 8),
    };
    int rc = tdb_compress_strings_write_hdr(&h, md_out);
    if (rc == 0)
        rc = tdb_buf_put_u8(md_out, (uint8_t)iw);
    if (rc == 0)
        rc = tdb_buf_put_u8(md_out, (uint8_t)e->sw);
    if (rc == 0)
        rc = tdb_buf_put_u32(md_out, (uint32_t)e->dict.len);
    if (rc == 0)
        rc = tdb_buf_append(md_out, e->dict.data, e->dict.len);
    if (rc < 0)
        rc = tdb_err(e->call->err, TDB_E_NOMEM, "DICTIONARY: out of memory");
    return rc;
}

static int dictionary_encode(const struct tdb_filter_call *call,
                             struct tdb_filter_stage *st)
{
    struct dictionary_enc e = {.call = call, .data = st->data,
                               .size = st->size};
    struct tdb_buf *data_out = st->data_out;
    uint64_t n = call->n_offsets, max_len = 0, enc;
    const uint8_t *s;
    size_t len, cap = 16;
    uint8_t iw, *ids = NULL;
    size_t base = data_out->len;
    int rc;

    if (!call->strings_with_offsets)
        return tdb_err(call->err, TDB_E_UNSUPPORTED,
                       "DICTIONARY: applies only to var-sized ASCII/UTF-8 "
                       "strings");
    rc = tdb_compress_strings_check_input(call, st->md.len, st->size,
                                          "DICTIONARY");
    if (rc < 0)
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        dictionary_cell(call, st->data, st->size, i, &s, &len);
        if (len > max_len)
            max_len = len;
    }
    iw = tdb_compress_bytesize(n);
    e.sw = tdb_compress_bytesize(max_len);
    if (n > UINT32_MAX / 8 || st->size > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "DICTIONARY: string tile too large for the format");
    enc = n * iw;
    while (cap < 2 * n)
        cap *= 2;
    e.t.slot = calloc(cap, sizeof *e.t.slot);
    e.t.id = calloc(cap, sizeof *e.t.id);
    e.t.mask = cap - 1;
    if (!e.t.slot || !e.t.id ||
        (enc > 0 && tdb_buf_grow(data_out, (size_t)enc, &ids) < 0))
        rc = tdb_err(call->err, TDB_E_NOMEM, "DICTIONARY: out of memory");
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        uint64_t id = 0;
        rc = dictionary_id(&e, i, &id);
        if (rc == 0)
            tdb_compress_st_be(ids + i * iw, iw, id);
    }
    if (rc == 0 && e.dict.len > UINT32_MAX)
        rc = tdb_err(call->err, TDB_E_INVAL,
                     "DICTIONARY: dictionary exceeds 4 GiB");
    if (rc == 0)
        rc = dictionary_put_md(&e, n, iw, st->md_out);
    if (rc < 0)
        data_out->len = base;
    free(e.t.slot);
    free(e.t.id);
    tdb_buf_free(&e.dict);
    return rc;
}

static const struct tdb_compress_options dictionary_defaults = {
    .compressor = TDB_COMPRESSOR_DICTIONARY,
    .level = TDB_FILTER_LEVEL_DEFAULT,
};

const struct tdb_filter_ops tdb_filter_dictionary = {
    .name = "DICTIONARY",
    .type = TDB_FILTER_DICTIONARY,
    TDB_COMPRESS_OPS_OPTIONS(dictionary_defaults),
    .output_type = NULL,
    .decode = dictionary_decode,
    .encode = dictionary_encode,
};
