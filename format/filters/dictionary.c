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

static int dictionary_decode(const struct tdb_filter_call *call,
                             struct tdb_cursor *md, const uint8_t *data,
                             size_t size, struct tdb_buf *md_out,
                             struct tdb_buf *data_out)
{
    struct tdb_compress_strings_hdr h;
    uint8_t iw8 = 0, sw8 = 0;
    uint32_t dict_size = 0;
    const uint8_t *dict = NULL;
    struct dictionary_word *words = NULL;
    size_t nwords = 0, base = data_out->len, off_base;
    unsigned iw, sw;
    uint64_t cells, out = 0;
    uint8_t *dst = NULL, *op = NULL;
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
    rc = tdb_compress_strings_read_hdr(&h, md, "DICTIONARY", call->err);
    if (rc < 0)
        return rc;
    tdb_cur_u8(md, &iw8);
    tdb_cur_u8(md, &sw8);
    tdb_cur_u32(md, &dict_size);
    tdb_cur_bytes(md, dict_size, &dict);
    if (md->bad)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: metadata truncated (widths or "
                       "dictionary)");
    tdb_cur_skip(md, tdb_cur_left(md));
    if (h.encoded_bytes > size)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: metadata records %u encoded bytes but "
                       "the chunk holds %zu", h.encoded_bytes, size);
    if (h.offsets_bytes % 8 != 0)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: offsets size %u is not a multiple of 8",
                       h.offsets_bytes);
    cells = h.offsets_bytes / 8;
    if (h.string_bytes > tdb_filter_max_data(call) ||
        cells > tdb_filter_max_cells(call))
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: metadata records %u string bytes in %llu "
                       "cells, more than the tile allows (%llu bytes, %llu "
                       "cells)", h.string_bytes, (unsigned long long)cells,
                       (unsigned long long)tdb_filter_max_data(call),
                       (unsigned long long)tdb_filter_max_cells(call));
    if (h.encoded_bytes == 0) {
        if (h.string_bytes != 0 || cells != 0)
            return tdb_err(call->err, TDB_E_CORRUPT,
                           "DICTIONARY: no ids for %u string bytes in %llu "
                           "cells", h.string_bytes,
                           (unsigned long long)cells);
        return 0;
    }
    iw = tdb_compress_width(iw8);
    sw = tdb_compress_width(sw8);
    if (!iw || !sw)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: zero id or string length width");
    if (h.encoded_bytes % iw != 0 || h.encoded_bytes / iw != cells)
        return tdb_err(call->err, TDB_E_CORRUPT,
                       "DICTIONARY: %u bytes of %u-byte ids do not make the "
                       "%llu recorded cells", h.encoded_bytes, iw,
                       (unsigned long long)cells);
    rc = dictionary_parse(call, dict, dict_size, sw, &words, &nwords);
    if (rc < 0)
        return rc;
    /* Check every id and the total before allocating anything. */
    struct dictionary_ids ids = {data, cells, iw, words, nwords,
                                 h.string_bytes};
    uint64_t bad = dictionary_check(&ids, &out);
    if (bad < cells) {
        uint64_t id = tdb_compress_be(data + bad * iw, iw);
        if (id >= nwords)
            rc = tdb_err(call->err, TDB_E_CORRUPT,
                         "DICTIONARY: cell %llu has id %llu but the "
                         "dictionary holds %zu strings",
                         (unsigned long long)bad, (unsigned long long)id,
                         nwords);
        else
            rc = tdb_err(call->err, TDB_E_CORRUPT,
                         "DICTIONARY: cells decode to more than the recorded "
                         "%u string bytes", h.string_bytes);
        goto fail;
    }
    if (out != h.string_bytes) {
        rc = tdb_err(call->err, TDB_E_CORRUPT,
                     "DICTIONARY: cells decode to %llu bytes, metadata "
                     "records %u", (unsigned long long)out, h.string_bytes);
        goto fail;
    }
    if ((h.string_bytes > 0 &&
         tdb_buf_grow(data_out, h.string_bytes, &dst) < 0) ||
        tdb_buf_grow(call->offsets, (size_t)cells * 8, &op) < 0) {
        rc = tdb_err(call->err, TDB_E_NOMEM, "DICTIONARY: out of memory");
        goto fail;
    }
    dictionary_expand(&ids, dst, op);
    free(words);
    return 0;
fail:
    free(words);
    data_out->len = base;
    call->offsets->len = off_base;
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

static int dictionary_encode(const struct tdb_filter_call *call,
                             const uint8_t *md, size_t md_size,
                             const uint8_t *data, size_t size,
                             struct tdb_buf *md_out, struct tdb_buf *data_out)
{
    struct tdb_compress_strings_hdr h = {0};
    struct dictionary_table t = {0};
    struct tdb_buf dict = {0};
    uint64_t n = call->n_offsets, max_len = 0, nwords = 0, enc;
    const uint8_t *s;
    size_t len, cap = 16;
    uint8_t iw, sw, *ids = NULL;
    size_t base = data_out->len;
    int rc;

    if (!call->strings_with_offsets)
        return tdb_err(call->err, TDB_E_UNSUPPORTED,
                       "DICTIONARY: applies only to var-sized ASCII/UTF-8 "
                       "strings");
    rc = tdb_compress_strings_check_input(call, md_size, size, "DICTIONARY");
    if (rc < 0)
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        dictionary_cell(call, data, size, i, &s, &len);
        if (len > max_len)
            max_len = len;
    }
    iw = tdb_compress_bytesize(n);
    sw = tdb_compress_bytesize(max_len);
    if (n > UINT32_MAX / 8 || size > UINT32_MAX)
        return tdb_err(call->err, TDB_E_INVAL,
                       "DICTIONARY: string tile too large for the format");
    enc = n * iw;
    while (cap < 2 * n)
        cap *= 2;
    t.slot = calloc(cap, sizeof *t.slot);
    t.id = calloc(cap, sizeof *t.id);
    t.mask = cap - 1;
    if (!t.slot || !t.id ||
        (enc > 0 && tdb_buf_grow(data_out, (size_t)enc, &ids) < 0)) {
        rc = tdb_err(call->err, TDB_E_NOMEM, "DICTIONARY: out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < n; i++) {
        size_t k;
        uint64_t id;

        dictionary_cell(call, data, size, i, &s, &len);
        k = (size_t)dictionary_hash(s, len) & t.mask;
        for (;; k = (k + 1) & t.mask) {
            const uint8_t *o;
            size_t olen;
            if (t.slot[k] == 0) {
                uint8_t *p;
                t.slot[k] = i + 1;
                t.id[k] = nwords++;
                if (tdb_buf_grow(&dict, sw + len, &p) < 0) {
                    rc = tdb_err(call->err, TDB_E_NOMEM,
                                 "DICTIONARY: out of memory");
                    goto done;
                }
                tdb_compress_st_be(p, sw, len);
                if (len > 0)
                    memcpy(p + sw, s, len);
                break;
            }
            dictionary_cell(call, data, size, t.slot[k] - 1, &o, &olen);
            if (olen == len && (len == 0 || memcmp(o, s, len) == 0))
                break;
        }
        id = t.id[k];
        tdb_compress_st_be(ids + i * iw, iw, id);
    }
    if (dict.len > UINT32_MAX) {
        rc = tdb_err(call->err, TDB_E_INVAL,
                     "DICTIONARY: dictionary exceeds 4 GiB");
        goto done;
    }
    h.string_bytes = (uint32_t)size;
    h.encoded_bytes = (uint32_t)enc;
    h.offsets_bytes = (uint32_t)(n * 8);
    rc = tdb_compress_strings_write_hdr(&h, md_out);
    if (rc == 0)
        rc = tdb_buf_put_u8(md_out, iw);
    if (rc == 0)
        rc = tdb_buf_put_u8(md_out, sw);
    if (rc == 0)
        rc = tdb_buf_put_u32(md_out, (uint32_t)dict.len);
    if (rc == 0)
        rc = tdb_buf_append(md_out, dict.data, dict.len);
    if (rc < 0)
        rc = tdb_err(call->err, TDB_E_NOMEM, "DICTIONARY: out of memory");
done:
    if (rc < 0)
        data_out->len = base;
    free(t.slot);
    free(t.id);
    tdb_buf_free(&dict);
    return rc;
}

static int dictionary_read_options(struct tdb_filter *f, struct tdb_cursor *c,
                                   uint32_t version, struct tdb_error *err)
{
    return tdb_compress_read_options(f, c, TDB_COMPRESSOR_DICTIONARY,
                                     "DICTIONARY", err);
}

static int dictionary_write_options(const struct tdb_filter *f,
                                    struct tdb_buf *out)
{
    return tdb_compress_write_options(f, TDB_COMPRESSOR_DICTIONARY, out);
}

const struct tdb_filter_ops tdb_filter_dictionary = {
    .name = "DICTIONARY",
    .type = TDB_FILTER_DICTIONARY,
    .read_options = dictionary_read_options,
    .write_options = dictionary_write_options,
    .output_type = NULL,
    .decode = dictionary_decode,
    .encode = dictionary_encode,
};
