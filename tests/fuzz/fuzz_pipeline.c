/* fuzz_pipeline.c: filter pipelines and chunked tiles (format/filters/).
 * Input: u8 datatype, u8 flags (1: var-sized values, 2: encrypted with
 * fuzz_key, 4: collect the offsets of string forms), u8 format version,
 * u16 cell size (0: the datatype's), u16 cells (0: unknown), then a
 * serialised filter pipeline and the filtered tile.
 *
 * The tile is decoded, and what decoded encoded again, through every
 * vector path of the byte-wise filters this CPU runs (shuffle_simd.h):
 * a path whose status or bytes differ from the scalar path's aborts (an
 * encrypted encoding, whose IV is new each time, must decode to the same
 * bytes instead). */
#include "fuzz.h"
#include "filters/filter.h"
#include "filters/shuffle_simd.h"

#include <stdlib.h>

/* The outcome of one decode or encode. */
struct fuzz_run {
    int status;
    struct tdb_buf out, offsets;
};

static void fuzz_run_free(struct fuzz_run *r)
{
    tdb_buf_free(&r->out);
    tdb_buf_free(&r->offsets);
}

/* Aborts unless b (a vector path) came out as a (the scalar path). */
static void fuzz_same(const struct fuzz_run *a, const struct fuzz_run *b)
{
    if (a->status != b->status)
        abort();
    if (a->status == 0 &&
        (a->out.len != b->out.len || a->offsets.len != b->offsets.len ||
         (a->out.len && memcmp(a->out.data, b->out.data, a->out.len)) ||
         (a->offsets.len &&
          memcmp(a->offsets.data, b->offsets.data, a->offsets.len))))
        abort();
}

/* An encrypted tile differs at each encoding (a fresh IV): aborts unless
 * r (a vector path's encoding) has the status of enc (the scalar path's)
 * and decodes, by the scalar path, to the bytes it encoded: dec's (the
 * bytes a decode gave, also when it failed partway). */
static void fuzz_same_encrypted(const struct tdb_pipeline *p,
                                struct tdb_tile_desc *d,
                                const struct fuzz_run *dec,
                                const struct fuzz_run *enc,
                                const struct fuzz_run *r)
{
    struct fuzz_run again = {0};
    struct tdb_error err = {0};
    unsigned simd = d->simd;
    if (enc->status != r->status)
        abort();
    if (r->status)
        return;
    d->simd = TDB_SIMD_SCALAR;
    again.status = tdb_pipeline_decode(p, d, r->out.data, r->out.len,
                                       &again.out, &err);
    d->simd = simd;
    struct fuzz_run encoded = {0, dec->out, dec->offsets};
    fuzz_same(&encoded, &again);
    fuzz_run_free(&again);
}

/* One input, decoded: the pipeline, how to read the tile, and the tile. */
struct fuzz_input {
    struct tdb_pipeline p;
    struct tdb_tile_desc d;
    bool want_offsets; /* flag 4: collect the offsets of string forms */
    const uint8_t *tile;
    size_t size;
};

/* Reads the header and the pipeline of data (see the top of this file)
 * into in; -1 when they do not parse (nothing to free then). */
static int fuzz_input_read(const uint8_t *data, size_t size,
                           struct fuzz_input *in)
{
    struct tdb_cursor c;
    uint8_t dt, flags, version;
    uint16_t cs, ncells;
    struct tdb_error err = {0};

    tdb_cur_init(&c, data, size);
    tdb_cur_u8(&c, &dt);
    tdb_cur_u8(&c, &flags);
    tdb_cur_u8(&c, &version);
    tdb_cur_u16(&c, &cs);
    if (tdb_cur_u16(&c, &ncells))
        return -1;
    if (tdb_pipeline_read(&in->p, &c, version, &err))
        return -1;
    in->d = (struct tdb_tile_desc){
        .datatype = dt % TDB_DATATYPE_COUNT,
        .cell_size = cs ? cs : tdb_dt_size(dt % TDB_DATATYPE_COUNT),
        .version = version,
        .is_var = flags & 1,
        .key = flags & 2 ? fuzz_key : NULL,
        .what = "fuzz",
        .ncells = ncells,
        .simd = TDB_SIMD_SCALAR,
    };
    in->want_offsets = flags & 4;
    in->tile = data + c.pos;
    in->size = size - c.pos;
    return 0;
}

/* Decodes the tile of in by vector path simd into r. */
static void fuzz_decode(struct fuzz_input *in, unsigned simd,
                        struct fuzz_run *r)
{
    struct tdb_error err = {0};
    in->d.simd = simd;
    in->d.offsets = in->want_offsets ? &r->offsets : NULL;
    r->status = tdb_pipeline_decode(&in->p, &in->d, in->tile, in->size,
                                    &r->out, &err);
    in->d.offsets = NULL;
}

/* Encodes what the scalar path decoded (dec) by the simd path of in->d
 * into r. */
static void fuzz_encode(struct fuzz_input *in, const struct fuzz_run *dec,
                        struct fuzz_run *r)
{
    struct tdb_error err = {0};
    r->status = tdb_pipeline_encode(&in->p, &in->d, dec->out.data,
                                    dec->out.len, &r->out, &err);
}

/* Runs vector path simd over in and aborts unless it decodes as the scalar
 * path did (dec) and, when back, encodes as it did (enc). */
static void fuzz_vector_path(struct fuzz_input *in, unsigned simd,
                             const struct fuzz_run *dec,
                             const struct fuzz_run *enc, bool back)
{
    struct fuzz_run r = {0};
    fuzz_decode(in, simd, &r);
    fuzz_same(dec, &r);
    fuzz_run_free(&r);
    if (!back)
        return;
    fuzz_encode(in, dec, &r);
    if (in->d.key)
        fuzz_same_encrypted(&in->p, &in->d, dec, enc, &r);
    else
        fuzz_same(enc, &r);
    fuzz_run_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in;
    if (fuzz_input_read(data, size, &in))
        return 0;
    struct fuzz_run dec = {0}, enc = {0};
    fuzz_decode(&in, TDB_SIMD_SCALAR, &dec);
    /* and back: what decoded must encode */
    bool back = dec.out.len && !in.want_offsets && dec.out.len < (1u << 20);
    if (back)
        fuzz_encode(&in, &dec, &enc);
    for (unsigned s = TDB_SIMD_SCALAR + 1; s < TDB_SIMD_COUNT; s++)
        if (tdb_shuffle_path(s))
            fuzz_vector_path(&in, s, &dec, &enc, back);
    fuzz_run_free(&dec);
    fuzz_run_free(&enc);
    tdb_pipeline_free(&in.p);
    return 0;
}
