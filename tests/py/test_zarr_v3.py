"""test_zarr_v3.py: the Zarr v3 documents of MOUNT/__zarr (docs/LAYOUT.md
"__zarr"): zarr-python 3 is not installed (Debian ships 2.x), so the
documents are read with json and every chunk file is decoded by hand per
the array's codecs (bytes little-endian, transpose, numcodecs' vlen
encoding parsed here and by numcodecs itself): the v3 view of every field
of every dense corpus case and of a group is tested by its real bytes."""
import base64
import json
import os
import struct

import numpy
import pytest

from conftest import case_options, get_case
from test_zarr import STRINGS, noting, schema_of, store_arrays

numcodecs = pytest.importorskip('numcodecs', reason='python3-numcodecs is not installed '
                                '(Debian: scripts/install-deps installs it)')

# v3 data types of fixed-size values, and numpy's
V3_NUMPY = {'bool': '|b1', 'int8': 'i1', 'uint8': 'u1', 'int16': '<i2', 'uint16': '<u2',
            'int32': '<i4', 'uint32': '<u4', 'int64': '<i8', 'uint64': '<u8',
            'float32': '<f4', 'float64': '<f8'}
# CF's words for the units of numpy's datetime64 and timedelta64 units
CF_UNITS = {'Y': 'years', 'M': 'months', 'W': 'weeks', 'D': 'days', 'h': 'hours',
            'm': 'minutes', 's': 'seconds', 'ms': 'milliseconds', 'us': 'microseconds',
            'ns': 'nanoseconds', 'ps': 'picoseconds', 'fs': 'femtoseconds',
            'as': 'attoseconds'}


def load(path):
    with open(path) as f:
        return json.load(f)


def v3_type(e):
    """(data_type, shape, extra attributes) the contract gives expected array
    e in v3: fixed-size byte strings as uint8 with a last axis of N > 1;
    datetimes and times as int64 with CF units; var-sized cells as string
    or bytes."""
    v = e.values
    if v.dtype == object:
        return ('string' if e.filter == 'vlen-utf8' else 'bytes'), v.shape, {}
    if v.dtype.kind == 'S':
        n = v.dtype.itemsize
        return 'uint8', v.shape + ((n,) if n > 1 else ()), {}
    if v.dtype.kind in 'Mm':
        unit = numpy.datetime_data(v.dtype)[0]
        words = CF_UNITS[unit] + (' since 1970-01-01' if v.dtype.kind == 'M' else '')
        return 'int64', v.shape, {'units': words}
    return v.dtype.name, v.shape, {}


def v3_values(e):
    """Expected array e as the v3 data type shows it."""
    v = e.values
    if v.dtype.kind == 'S':
        n = v.dtype.itemsize
        return numpy.frombuffer(v.tobytes(), 'u1').reshape(v.shape + ((n,) if n > 1 else ()))
    if v.dtype.kind in 'Mm':
        return v.view('<i8')
    return v


def vlen_items(data):
    """The items of numcodecs' vlen encoding, parsed here: a uint32 count,
    then each item's uint32 length and bytes, nothing after."""
    (n,) = struct.unpack_from('<I', data, 0)
    pos, out = 4, []
    for _ in range(n):
        (length,) = struct.unpack_from('<I', data, pos)
        pos += 4
        assert pos + length <= len(data), 'an item runs past the chunk'
        out.append(bytes(data[pos:pos + length]))
        pos += length
    assert pos == len(data), f'{len(data) - pos} bytes after the last item'
    return out


def decode_chunk(data, doc):
    """One chunk file decoded per zarr.json `doc`'s codecs: the
    array -> bytes codec (bytes, vlen-utf8, vlen-bytes), then any
    array -> array codecs (transpose) in reverse; the chunk's cells."""
    cshape = doc['chunk_grid']['configuration']['chunk_shape']
    codecs = doc['codecs']
    shape = list(cshape)
    perms = []
    for c in codecs[:-1]:
        assert c['name'] == 'transpose', f'codec {c["name"]}'
        p = list(c['configuration']['order'])
        assert sorted(p) == list(range(len(shape))), p
        shape = [shape[i] for i in p]
        perms.append(p)
    last = codecs[-1]
    if last['name'] == 'bytes':
        dt = numpy.dtype(V3_NUMPY[doc['data_type']])
        if dt.itemsize > 1:
            assert last['configuration']['endian'] == 'little', last
        assert len(data) == numpy.prod(shape) * dt.itemsize, \
            f'{len(data)} bytes, a whole chunk is {numpy.prod(shape) * dt.itemsize}'
        arr = numpy.frombuffer(data, dt).reshape(shape)
    else:
        items = vlen_items(data)
        lib = numcodecs.VLenUTF8() if last['name'] == 'vlen-utf8' else numcodecs.VLenBytes()
        assert last['name'] in ('vlen-utf8', 'vlen-bytes'), last
        if last['name'] == 'vlen-utf8':
            items = [i.decode() for i in items]
        assert list(lib.decode(data)) == items, 'numcodecs decodes otherwise'
        assert len(items) == numpy.prod(shape), f'{len(items)} items'
        arr = numpy.empty(len(items), dtype=object)
        arr[:] = items
        arr = arr.reshape(shape)
    for p in reversed(perms):
        arr = numpy.transpose(arr, numpy.argsort(p))
    return arr


def read_v3(folder, doc, whole=False):
    """The whole array of zarr.json `doc` from the chunk files of `folder`
    (keys per its chunk_key_encoding), cut to its shape (whole: with the
    edge chunks' cells past it)."""
    shape = doc['shape']
    cshape = doc['chunk_grid']['configuration']['chunk_shape']
    enc = doc['chunk_key_encoding']
    sep = enc['configuration']['separator']
    assert enc['name'] == 'v2', enc
    grid = [-(-n // c) for n, c in zip(shape, cshape)]
    full = None
    for idx in numpy.ndindex(*grid):
        path = os.path.join(folder, sep.join(map(str, idx)))
        with open(path, 'rb') as f:
            data = f.read()
        assert os.path.getsize(path) == len(data), f'{path}: st_size is not its length'
        chunk = decode_chunk(data, doc)
        if full is None:
            full = numpy.empty([g * c for g, c in zip(grid, cshape)], dtype=chunk.dtype)
        full[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, cshape))] = chunk
    return full if whole else full[tuple(slice(0, n) for n in shape)]


def check_padding(e, full, nd):
    """The cells of the edge chunks past the domain's end (where the view is
    the domain) hold the attribute's fill value."""
    raw = bytes.fromhex(e.field['fill_hex'])
    pad = numpy.ones(full.shape[:nd], bool)
    pad[tuple(slice(0, n) for n in e.values.shape[:nd])] = False
    cells = full[pad]
    if full.dtype == object:
        want = raw.decode() if e.filter == 'vlen-utf8' else raw
        bad = [c for c in cells.tolist() if c != want]
    else:
        fill = numpy.frombuffer(raw, full.dtype).tobytes()
        bad = [c for c in cells if c.tobytes() != fill]
    assert not bad, f'{len(bad)} of {len(cells)} cells past the domain are not the fill'
    return len(cells)


def fill_of(e):
    """The v3 fill_value the contract gives expected array e, or None where
    it says nothing checkable."""
    if e.kind == 'dim':
        return 0
    if e.kind == 'validity':
        return None
    f = e.field
    if e.kind == 'labels':
        return {'string': '', 'bytes': ''}.get(v3_type(e)[0], 'NaN' if e.values.dtype.kind == 'f'
                                               else 0)
    raw = bytes.fromhex(f['fill_hex'])
    if e.values.dtype == object:
        return raw.decode() if e.filter == 'vlen-utf8' else base64.b64encode(raw).decode()
    if e.values.dtype.kind == 'S':
        return raw[0]
    # v3 has no null: a fill of several values gives its first
    v = numpy.frombuffer(raw, e.values.dtype)
    if v.dtype.kind in 'Mm':
        v = v.view('<i8')
    x = v[0].item()
    if isinstance(x, float) and x != x:
        return 'NaN'
    if isinstance(x, float) and abs(x) == float('inf'):
        return 'Infinity' if x > 0 else '-Infinity'
    return x


def check_array_v3(root, e, v2attrs, v2array, pad_nd=0):
    """ATTR/zarr.json of expected array e against the contract, and its
    chunk files decoded by hand against e's values (pad_nd: the number of
    dimensions, where the view is the domain, to check the cells past it
    in the edge chunks)."""
    doc = load(os.path.join(root, e.name, 'zarr.json'))
    dtype, shape, extra = v3_type(e)
    assert doc['zarr_format'] == 3 and doc['node_type'] == 'array'
    assert doc['data_type'] == dtype, f'data_type {doc["data_type"]}, expected {dtype}'
    assert doc['shape'] == list(shape), doc['shape']
    chunks = list(v2array['chunks'])
    if e.kind == 'attr' and e.values.dtype.kind == 'S' and len(shape) > len(e.values.shape):
        chunks.append(shape[-1])
    assert doc['chunk_grid'] == {'name': 'regular', 'configuration': {'chunk_shape': chunks}}, \
        doc['chunk_grid']
    assert doc['chunk_key_encoding'] == {'name': 'v2', 'configuration': {'separator': '.'}}
    names = list(e.axes)
    if len(shape) > len(names):
        names.append(f'__{e.name}_values')
    assert doc['dimension_names'] == names, doc['dimension_names']
    attrs = doc['attributes']
    for k, v in v2attrs.items():
        if k != '_ARRAY_DIMENSIONS':
            assert attrs.get(k) == v, f'attribute {k}: {attrs.get(k)!r}, v2 {v!r}'
    for k, v in extra.items():
        assert attrs.get(k) == v, f'attribute {k}: {attrs.get(k)!r}, expected {v!r}'
    want_fill = fill_of(e)
    if want_fill is not None:
        assert doc['fill_value'] == want_fill, f'fill_value {doc["fill_value"]!r}, ' \
                                               f'expected {want_fill!r}'
    if e.kind == 'validity':
        assert isinstance(doc['fill_value'], bool), doc['fill_value']
    names = [c['name'] for c in doc['codecs']]
    last = {'string': 'vlen-utf8', 'bytes': 'vlen-bytes'}.get(dtype, 'bytes')
    assert names[-1] == last, names
    if v2array['order'] == 'F':
        assert names == ['transpose', last], names
    else:
        assert names == [last], names
    full = read_v3(os.path.join(root, e.name), doc, whole=True)
    if pad_nd and e.kind == 'attr':
        check_padding(e, full, pad_nd)
    got = full[tuple(slice(0, n) for n in doc['shape'])]
    want = v3_values(e)
    if want.dtype == object:
        assert got.reshape(-1).tolist() == want.reshape(-1).tolist(), 'chunk values differ'
    else:
        assert got.dtype == want.dtype, got.dtype
        assert got.tobytes() == want.tobytes(), 'chunk values differ'
    return doc


def test_zarr_v3_dense_case(dense_case, mount, tmp_path):
    """The v3 documents of every dense corpus case: the root zarr.json (a
    group, attributes as .zattrs, every array's zarr.json consolidated
    inline), and each array's zarr.json (shape, data type per LAYOUT's
    table, chunk grid of the tile extents, the v2 chunk key encoding with
    '.', fill value, dimension names, attributes as .zattrs plus CF units
    of datetimes, codecs with transpose for order F) whose chunk files,
    decoded by hand, hold the expected values, and the fill past the
    domain's end in the edge chunks.  Every difference is reported at
    once."""
    case = dense_case
    mnt = mount(case.array, case_options(case, tmp_path))
    root = os.path.join(mnt, '__zarr')
    exps = store_arrays(case, schema_of(mnt))
    v2 = load(os.path.join(root, '.zmetadata'))['metadata']
    dims = case.info['dims']
    pad_nd = len(dims) if case.info['view_region'] == [d['domain'] for d in dims] else 0
    fails = []
    docs = {}
    for e in exps:
        with noting(fails, f'v3 {e.name}'):
            docs[e.name] = check_array_v3(root, e, v2[f'{e.name}/.zattrs'],
                                          v2[f'{e.name}/.zarray'], pad_nd)
    with noting(fails, 'zarr.json'):
        top = load(os.path.join(root, 'zarr.json'))
        assert top['zarr_format'] == 3 and top['node_type'] == 'group'
        assert top['attributes'] == v2['.zattrs']
        cm = top['consolidated_metadata']
        assert cm['kind'] == 'inline' and cm['must_understand'] is False, cm
        assert sorted(cm['metadata']) == sorted(e.name for e in exps)
        for name, doc in docs.items():
            assert cm['metadata'][name] == doc, f'{name}: not its zarr.json'
    assert not fails, f'{case.name}: {len(fails)} differences:\n  ' + '\n  '.join(fails)


def test_zarr_v3_var_chunk_numcodecs(mount, tmp_path):
    """A var-sized chunk is numcodecs' encoding: VLenUTF8().decode of chunk
    0.0 of a STRING_UTF8 attribute and VLenBytes().decode of a CHAR one
    give the cells of that tile (each cell's string or bytes, in cell
    order), and re-encoding them gives the same bytes."""
    case = get_case('dense_var_nullable')
    mnt = mount(case.array, case_options(case, tmp_path))
    root = os.path.join(mnt, '__zarr')
    exps = {e.name: e for e in store_arrays(case)}
    for name, codec in (('s_utf8', numcodecs.VLenUTF8()), ('c_char', numcodecs.VLenBytes()),
                        ('n_str', numcodecs.VLenUTF8())):
        e = exps[name]
        with open(os.path.join(root, name, '1.2'), 'rb') as f:
            data = f.read()
        got = codec.decode(data)
        r0, c0 = 1 * e.chunks[0], 2 * e.chunks[1]
        want = e.values[r0:r0 + e.chunks[0], c0:c0 + e.chunks[1]].reshape(-1).tolist()
        assert list(got) == want, name
        assert bytes(codec.encode(numpy.array(want, dtype=object))) == data, name
        if case.fields()[name]['datatype'] in STRINGS:
            assert all(isinstance(x, str) for x in got)


def test_zarr_v3_group(mount, tmp_path):
    """GROUP/__zarr/zarr.json of group_basic: a v3 group holding the group's
    metadata, consolidating each member array's documents under
    MEMBER/NAME, equal to the member's own zarr.json files."""
    case = get_case('group_basic')
    mnt = mount(case.array, case_options(case, tmp_path))
    root = os.path.join(mnt, '__zarr')
    top = load(os.path.join(root, 'zarr.json'))
    assert top['zarr_format'] == 3 and top['node_type'] == 'group'
    assert top['attributes'] == load(os.path.join(root, '.zattrs'))
    assert set(top['attributes']) == set(case.info['metadata'])
    cm = top['consolidated_metadata']
    assert cm['kind'] == 'inline' and cm['must_understand'] is False
    own = os.path.join(mnt, 'dense_arr', '__zarr')
    m = case.info['members']['dense_arr']
    names = [n for n, f in m['fields'].items() if f['role'] == 'attr'] + \
        [d['name'] for d in m['dims']]
    assert cm['metadata']['dense_arr']['node_type'] == 'group'
    assert set(cm['metadata']) == {'dense_arr'} | {f'dense_arr/{n}' for n in names}
    for n in names:
        doc = load(os.path.join(own, n, 'zarr.json'))
        assert cm['metadata'][f'dense_arr/{n}'] == doc, n
        assert load(os.path.join(root, 'dense_arr', n, 'zarr.json')) == doc, n
    doc = load(os.path.join(root, 'dense_arr', 'a', 'zarr.json'))
    got = read_v3(os.path.join(root, 'dense_arr', 'a'), doc)
    assert got.tobytes() == case.expected('dense_arr/a')
