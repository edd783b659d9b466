#!/usr/bin/python3
"""make_sample.py: writes a small dense TileDB array (format version 22, as TileDB 2.29 does) with the standard library only.

    make_sample.py [--shape RxC] [--tile RxC] [--gzip] [--timestamp MS] DIR

The array at DIR (created; must not exist or be empty) has:
  * two INT32 dimensions "rows" 0..R-1 and "cols" 0..C-1, tile extents
    from --tile (they must divide the shape), row-major tiles and cells;
  * attribute "temperature" FLOAT64, unfiltered:  20 + r + c / 10
  * attribute "count" INT32, unfiltered or (--gzip) GZIP-compressed: r * C + c
  * one fragment over the whole domain, its commit file (__commits/*.wrt);
  * one array metadata key "units" (STRING_UTF8 "degC").

What it writes follows TileDB's format_spec (array_file_hierarchy,
array_schema, generic_tile, filter_pipeline, tile, fragment,
timestamped_name, metadata) for version 22: every generic tile is
GZIP-compressed at level 1 with 64 KiB chunks, as TileDB writes them.
Prints the array's path on stdout.
"""
import argparse
import os
import struct
import sys
import time
import uuid
import zlib

FORMAT_VERSION = 22
MAX_CHUNK = 64 * 1024

# TileDB datatypes, layouts, filters (format_spec/array_schema.md, filter_pipeline.md)
DT_INT32, DT_FLOAT64, DT_CHAR, DT_STRING_UTF8 = 0, 3, 4, 12
DENSE = 0
ROW_MAJOR = 0
F_GZIP, F_ZSTD, F_RLE = 1, 2, 4
GENERIC_TILE_GZIP_LEVEL = 1


def u8(v):
    return struct.pack('<B', v)


def u32(v):
    return struct.pack('<I', v)


def i32(v):
    return struct.pack('<i', v)


def u64(v):
    return struct.pack('<Q', v)


# ------------------------------------------------------------ filter pipelines

def pipeline(filters=()):
    """A serialized filter pipeline: max chunk size, count, then each filter
    (type, options size, options).  `filters` holds (type, level) pairs of
    main compressors."""
    out = u32(MAX_CHUNK) + u32(len(filters))
    for ftype, level in filters:
        opts = u8(ftype) + i32(level)
        out += u8(ftype) + u32(len(opts)) + opts
    return out


def chunk_sizes(size, cell_size):
    """How a tile of `size` bytes is cut into chunks (format 11+: whole cells)."""
    chunk = min(MAX_CHUNK, size) // cell_size * cell_size
    chunk = max(chunk, cell_size)
    if size == 0:
        return [0]
    sizes = [chunk] * (size // chunk)
    if size % chunk:
        sizes.append(size % chunk)
    return sizes


def filter_tile(data, cell_size, gzip_level=None):
    """A tile as stored: chunk count, then per chunk original length,
    filtered length, metadata length, metadata, filtered bytes.  With a GZIP
    filter each chunk's metadata says 0 metadata parts and 1 data part."""
    out = [u64(len(chunk_sizes(len(data), cell_size)))]
    off = 0
    for n in chunk_sizes(len(data), cell_size):
        part = data[off:off + n]
        off += n
        if gzip_level is None:
            out.append(u32(n) + u32(n) + u32(0) + part)
        else:
            comp = zlib.compress(part, gzip_level)
            md = u32(0) + u32(1) + u32(n) + u32(len(comp))
            out.append(u32(n) + u32(len(comp)) + u32(len(md)) + md + comp)
    return b''.join(out)


def generic_tile(data):
    """format_spec/generic_tile.md: header, its filter pipeline (GZIP level 1),
    then the filtered tile.  Datatype CHAR, cell size 1, no encryption."""
    fp = pipeline([(F_GZIP, GENERIC_TILE_GZIP_LEVEL)])
    body = filter_tile(data, 1, GENERIC_TILE_GZIP_LEVEL)
    head = (u32(FORMAT_VERSION) + u64(len(body)) + u64(len(data)) +
            u8(DT_CHAR) + u64(1) + u8(0) + u32(len(fp)) + fp)
    return head + body


# -------------------------------------------------------------------- schema

def schema_bytes(dims, attrs):
    """format_spec/array_schema.md, version 22.  dims: (name, lo, hi, extent)
    INT32; attrs: (name, datatype, fill bytes, filters)."""
    out = u32(FORMAT_VERSION)
    out += u8(0)                        # allows dups
    out += u8(DENSE)
    out += u8(ROW_MAJOR) + u8(ROW_MAJOR)  # tile order, cell order
    out += u64(10000)                   # capacity (sparse only)
    out += pipeline([(F_ZSTD, -1)])     # coords filters (TileDB's default)
    out += pipeline([(F_ZSTD, -1)])     # offsets filters
    out += pipeline([(F_RLE, -1)])      # validity filters
    out += u32(len(dims))
    for name, lo, hi, extent in dims:
        nb = name.encode()
        out += u32(len(nb)) + nb + u8(DT_INT32) + u32(1) + pipeline()
        out += u64(8) + i32(lo) + i32(hi)
        out += u8(0) + i32(extent)      # has a tile extent
    out += u32(len(attrs))
    for name, dtype, fill, filters in attrs:
        nb = name.encode()
        out += u32(len(nb)) + nb + u8(dtype) + u32(1) + pipeline(filters)
        out += u64(len(fill)) + fill
        out += u8(0) + u8(0) + u8(0)    # nullable, fill validity, order
        out += u32(0)                   # enumeration name length (v20+; not in the spec's table)
    out += u32(0)                       # dimension labels
    out += u32(0)                       # enumerations
    out += u32(0) + u8(1)               # current domain: version 0 (TileDB 2.29), empty
    return out


# ----------------------------------------------------------------- fragment

def tiles_row_major(shape, tile, values):
    """Cuts a row-major 2-D list of values into tiles in row-major tile
    order, cells row-major inside each tile."""
    rows, cols = shape
    tr, tc = tile
    out = []
    for r0 in range(0, rows, tr):
        for c0 in range(0, cols, tc):
            out.append([values[r * cols + c]
                        for r in range(r0, r0 + tr) for c in range(c0, c0 + tc)])
    return out


def fragment_metadata(schema_name, dims, attrs, attr_tiles, file_offsets,
                      file_sizes, cells_per_tile):
    """format_spec/fragment.md, version 22, for a dense fragment that covers
    the whole domain.  Fields, in TileDB's order: the attributes, the legacy
    __coords, then the dimensions."""
    ntiles = len(attr_tiles[0])
    ndims = len(dims)
    nattrs = len(attrs)
    num = nattrs + 1 + ndims

    def zeros_list(n):
        return u64(n) + b'\0' * (8 * n)

    mins, maxs, sums, fmms = [], [], [], []
    for (name, dtype, fill, filters), tiles in zip(attrs, attr_tiles):
        if dtype == DT_FLOAT64:
            pack, spack = (lambda v: struct.pack('<d', v)), (lambda v: struct.pack('<d', v))
        else:
            pack, spack = (lambda v: struct.pack('<i', v)), (lambda v: struct.pack('<q', v))
        tmin = [min(t) for t in tiles]
        tmax = [max(t) for t in tiles]
        tsum = [sum(t) for t in tiles]
        mins.append(u64(len(pack(0)) * ntiles) + u64(0) + b''.join(map(pack, tmin)))
        maxs.append(u64(len(pack(0)) * ntiles) + u64(0) + b''.join(map(pack, tmax)))
        sums.append(u64(ntiles) + b''.join(map(spack, tsum)))
        fmms.append(u64(len(pack(0))) + pack(min(tmin)) + u64(len(pack(0))) +
                    pack(max(tmax)) + spack(sum(tsum)) + u64(0))
    # __coords of a dense fragment: zeroed tile mins/maxes/sums
    mins.append(u64(4 * ndims * ntiles) + u64(0) + b'\0' * (4 * ndims * ntiles))
    maxs.append(mins[-1])
    sums.append(zeros_list(ntiles))
    fmms.append(u64(4) + b'\0' * 4 + u64(4) + b'\0' * 4 + u64(0) + u64(0))
    for _ in dims:  # dimensions of a dense array carry no tile metadata
        mins.append(u64(0) + u64(0))
        maxs.append(u64(0) + u64(0))
        sums.append(u64(0))
        fmms.append(u64(0) + u64(0) + u64(0) + u64(0))

    blobs = []            # (section, index, bytes)
    blobs.append(('rtree', 0, u32(10) + u32(0)))   # fanout 10, no levels
    for i in range(num):
        offs = file_offsets[i] if i < nattrs else [0] * ntiles
        blobs.append(('toff', i, u64(ntiles) + b''.join(u64(o) for o in offs)))
    for sec in ('tvoff', 'tvsize', 'tvalid'):
        for i in range(num):
            blobs.append((sec, i, zeros_list(ntiles)))
    for i in range(num):
        blobs.append(('min', i, mins[i]))
    for i in range(num):
        blobs.append(('max', i, maxs[i]))
    for i in range(num):
        blobs.append(('sum', i, sums[i]))
    for i in range(num):
        blobs.append(('null', i, u64(0)))
    blobs.append(('fmms', 0, b''.join(fmms)))
    blobs.append(('cond', 0, u64(0)))

    out = b''
    where = {}
    for sec, i, data in blobs:
        where[(sec, i)] = len(out)
        out += generic_tile(data)

    sname = schema_name.encode()
    foot = u32(FORMAT_VERSION) + u64(len(sname)) + sname
    foot += u8(1)                                   # dense
    foot += u8(0)                                   # non-empty domain is set
    for _, lo, hi, _ in dims:
        foot += i32(lo) + i32(hi)
    foot += u64(0)                                  # sparse tiles
    foot += u64(cells_per_tile)                     # last tile cell num
    foot += u8(0) + u8(0)                           # timestamps, delete meta
    foot += b''.join(u64(file_sizes[i] if i < nattrs else 0) for i in range(num))
    foot += u64(0) * num                            # var file sizes
    foot += u64(0) * num                            # validity file sizes
    foot += u64(where[('rtree', 0)])
    for sec in ('toff', 'tvoff', 'tvsize', 'tvalid', 'min', 'max', 'sum', 'null'):
        foot += b''.join(u64(where[(sec, i)]) for i in range(num))
    foot += u64(where[('fmms', 0)]) + u64(where[('cond', 0)])
    foot += u64(len(foot))
    return out + foot


def metadata_bytes(entries):
    """format_spec/metadata.md: key length, key, deletion flag, value type,
    value count, value; keys in byte order."""
    out = b''
    for key in sorted(entries):
        dtype, value, count = entries[key]
        kb = key.encode()
        out += u32(len(kb)) + kb + u8(0) + u8(dtype) + u32(count) + value
    return out


# ---------------------------------------------------------------------- main

def parse_pair(text, what):
    try:
        a, b = (int(x) for x in text.lower().split('x'))
    except ValueError:
        sys.exit(f'make_sample.py: {what} must look like 4x6, not {text!r}')
    if a <= 0 or b <= 0:
        sys.exit(f'make_sample.py: {what} must be positive')
    return a, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('dir')
    ap.add_argument('--shape', default='4x6', help='ROWSxCOLS (default 4x6)')
    ap.add_argument('--tile', default='2x3', help='tile extents (default 2x3)')
    ap.add_argument('--gzip', action='store_true', help='GZIP-compress "count"')
    ap.add_argument('--timestamp', type=int, default=None,
                    help='ms since epoch (default: now)')
    a = ap.parse_args()
    rows, cols = parse_pair(a.shape, '--shape')
    tr, tc = parse_pair(a.tile, '--tile')
    if rows % tr or cols % tc:
        sys.exit('make_sample.py: --tile must divide --shape')
    if rows * cols > 1 << 27:
        sys.exit('make_sample.py: at most 2^27 cells')
    if os.path.exists(a.dir) and os.listdir(a.dir):
        sys.exit(f'make_sample.py: {a.dir} exists and is not empty')

    ts = a.timestamp if a.timestamp is not None else int(time.time() * 1000)
    dims = [('rows', 0, rows - 1, tr), ('cols', 0, cols - 1, tc)]
    count_filters = [(F_GZIP, -1)] if a.gzip else []
    attrs = [('temperature', DT_FLOAT64, struct.pack('<d', float('nan')), []),
             ('count', DT_INT32, i32(-2**31), count_filters)]
    temperature = [20.0 + r + c / 10 for r in range(rows) for c in range(cols)]
    count = [r * cols + c for r in range(rows) for c in range(cols)]

    root = a.dir
    for sub in ('', '__schema', '__schema/__enumerations', '__commits',
                '__fragments', '__meta', '__fragment_meta', '__labels'):
        os.makedirs(os.path.join(root, sub), exist_ok=True)

    # schema
    schema_name = f'__{ts}_{ts}_{uuid.uuid4().hex}'
    with open(os.path.join(root, '__schema', schema_name), 'wb') as f:
        f.write(generic_tile(schema_bytes(dims, attrs)))

    # fragment: one data file per attribute (a0.tdb, a1.tdb)
    frag_name = f'__{ts}_{ts}_{uuid.uuid4().hex}_{FORMAT_VERSION}'
    frag_dir = os.path.join(root, '__fragments', frag_name)
    os.makedirs(frag_dir)
    attr_tiles, offsets, sizes = [], [], []
    for idx, (values, fmt, (name, dtype, fill, filters)) in enumerate(
            zip((temperature, count), ('<d', '<i'), attrs)):
        tiles = tiles_row_major((rows, cols), (tr, tc), values)
        attr_tiles.append(tiles)
        level = filters[0][1] if filters else None
        offs, blob = [], []
        pos = 0
        for t in tiles:
            raw = struct.pack(f'<{len(t)}{fmt[1]}', *t)
            stored = filter_tile(raw, struct.calcsize(fmt), level)
            offs.append(pos)
            pos += len(stored)
            blob.append(stored)
        with open(os.path.join(frag_dir, f'a{idx}.tdb'), 'wb') as f:
            f.write(b''.join(blob))
        offsets.append(offs)
        sizes.append(pos)
    with open(os.path.join(frag_dir, '__fragment_metadata.tdb'), 'wb') as f:
        f.write(fragment_metadata(schema_name, dims, attrs, attr_tiles,
                                  offsets, sizes, tr * tc))

    # array metadata
    meta_name = f'__{ts}_{ts}_{uuid.uuid4().hex}'
    with open(os.path.join(root, '__meta', meta_name), 'wb') as f:
        f.write(generic_tile(metadata_bytes(
            {'units': (DT_STRING_UTF8, b'degC', 4)})))

    # commit last: the fragment becomes visible
    open(os.path.join(root, '__commits', frag_name + '.wrt'), 'wb').close()
    print(os.path.abspath(root))
    return 0


if __name__ == '__main__':
    sys.exit(main())
