"""test_zarr.py: MOUNT/__zarr, a dense array as a Zarr v2 group, read by the
real clients through a FUSE mount: zarr.open_consolidated,
xarray.open_zarr, dask.array.from_zarr on every field of every dense corpus
case (fixed-size, var-sized strings as vlen-utf8, other var-sized cells as
vlen-bytes, validity, enumeration labels, coordinates), CF attributes from
the array metadata, a group's __zarr, and a dask.distributed cluster of 2
worker processes computing over a mounted array; tiledbfs-cat shows the
same bytes.  The Zarr v3 documents are test_zarr_v3.py's."""
import contextlib
import json
import math
import os
import shutil
import traceback

import numpy
import pytest

from conftest import REPO, case_options, get_case, read_tree, run_cat
from test_numpy import expected_array

WHY = 'is not installed (Debian: scripts/install-deps installs it)'
zarr = pytest.importorskip('zarr', reason='python3-zarr ' + WHY)
xarray = pytest.importorskip('xarray', reason='python3-xarray ' + WHY)
dask_array = pytest.importorskip('dask.array', reason='python3-dask ' + WHY)

ORDER = {'row-major': 'C', 'col-major': 'F'}
STRINGS = ('STRING_ASCII', 'STRING_UTF8')
BYTES = ('CHAR', 'STRING_ASCII', 'STRING_UTF8')
NUMERIC_META = {'INT8': 'i1', 'UINT8': 'u1', 'INT16': '<i2', 'UINT16': '<u2',
                'INT32': '<i4', 'UINT32': '<u4', 'INT64': '<i8', 'UINT64': '<u8',
                'FLOAT32': '<f4', 'FLOAT64': '<f8', 'BOOL': '|b1'}


# ------------------------------------------------------------ the contract

class Expect:
    """One array __zarr shows (docs/LAYOUT.md "__zarr"): its name, values
    (the view's cells; an object array of str or bytes for var-sized
    cells), axis names, chunk shape, order (None: not part of the
    contract), v2 filter id (None, 'vlen-utf8', 'vlen-bytes'), the
    attributes its .zattrs must hold besides _ARRAY_DIMENSIONS, and the
    kind ('attr', 'validity', 'labels', 'dim') with its TileDB field."""

    def __init__(self, name, values, axes, chunks, order, kind, field=None,
                 filt=None, attrs=None):
        self.name, self.values, self.axes, self.chunks = name, values, axes, chunks
        self.order, self.kind, self.field, self.filter = order, kind, field, filt
        self.attrs = {} if attrs is None else attrs

    def __repr__(self):
        return f'Expect({self.name})'


def var_cells(case, name):
    """The cells of var-sized expected file `name` (with name.offsets)."""
    vals = case.expected(name)
    offs = [int(x) for x in numpy.frombuffer(case.expected(name + '.offsets'), '<u8')]
    return [vals[a:b] for a, b in zip(offs, offs[1:] + [len(vals)])]


def object_array(items, shape):
    out = numpy.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def enumerations(schema):
    """{attribute: (enumeration name, datatype, [values])} of an
    __array.json schema's enumerated attributes."""
    enums = {}
    for e in schema.get('enumerations', []):
        data = bytes.fromhex(e['data_hex'])
        if e['cell_val_num'] == 'var':
            offs = [int(x) for x in numpy.frombuffer(bytes.fromhex(e['offsets_hex']), '<u8')]
            vals = [data[a:b] for a, b in zip(offs, offs[1:] + [len(data)])]
            if e['datatype'] in STRINGS:
                vals = [v.decode() for v in vals]
        else:
            vals = numpy.frombuffer(data, NUMERIC_META[e['datatype']]).tolist()
        enums[e['name']] = (e['datatype'], vals)
    return {at['name']: (at['enumeration'],) + enums[at['enumeration']]
            for at in schema['attrs'] if at.get('enumeration')}


def labels_of(codes, dtype, values):
    """The labels array of enumerated codes: each code's value, the labels'
    fill (empty, NaN) where the code has no value."""
    flat = codes.reshape(-1).tolist()
    if dtype in BYTES:
        empty = '' if dtype in STRINGS else b''
        items = [values[c] if 0 <= c < len(values) else empty for c in flat]
        return object_array(items, codes.shape)
    np_dtype = numpy.dtype(NUMERIC_META[dtype])
    fill = numpy.nan if np_dtype.kind == 'f' else 0
    items = [values[c] if 0 <= c < len(values) else fill for c in flat]
    return numpy.array(items, dtype=np_dtype).reshape(codes.shape)


def flag_meanings(values):
    return ' '.join(str(v).replace(' ', '_') for v in values)


def store_arrays(case, schema=None):
    """Every array the contract puts in a dense case's __zarr, with its
    expected values: each attribute (any kind), ATTR.validity of the
    nullable ones, ATTR.labels of the enumerated ones (schema: the
    __array.json schema, for the enumerations), each dimension."""
    dims = case.info['dims']
    shape = tuple(case.info['view_shape'])
    names = [d['name'] for d in dims]
    ext = tuple(d['tile_extent'] for d in dims)
    order = ORDER[case.info['cell_order']]
    enums = enumerations(schema) if schema else {}
    out = []
    for name, f in case.fields().items():
        if f['role'] != 'attr' or name not in case.expected_paths:
            continue
        cvn = f['cell_val_num']
        attrs = {}
        if cvn == 'var':
            cells = var_cells(case, name)
            if f['datatype'] in STRINGS:
                exp = object_array([c.decode() for c in cells], shape)
                filt = 'vlen-utf8'
            else:
                exp = object_array(cells, shape)
                filt = 'vlen-bytes'
            out_e = Expect(name, exp, names, ext, order, 'attr', f, filt, attrs)
        else:
            exp = expected_array(case, name, f)
            if exp.ndim > len(dims):
                out_e = Expect(name, exp, names + [f'__{name}_values'], ext + (cvn,), 'C',
                               'attr', f, None, attrs)
            else:
                out_e = Expect(name, exp, names, ext, order, 'attr', f, None, attrs)
        out.append(out_e)
        if f.get('nullable'):
            attrs['ancillary_variables'] = name + '.validity'
            v = numpy.frombuffer(case.expected(name + '.validity'), 'u1').astype(bool)
            out.append(Expect(name + '.validity', v.reshape(shape), names, ext, None,
                              'validity', f))
        if name in enums:
            ename, edtype, evalues = enums[name]
            attrs.update({'enumeration': ename, 'flag_values': list(range(len(evalues)))})
            if edtype in STRINGS:
                attrs['flag_meanings'] = flag_meanings(evalues)
            labels = Expect(name + '.labels', labels_of(exp, edtype, evalues), names, ext,
                            None, 'labels', f, None if edtype not in BYTES else
                            'vlen-utf8' if edtype in STRINGS else 'vlen-bytes')
            labels.enum_values = evalues
            out.append(labels)
    for d, dim in enumerate(dims):
        lo = case.info['view_region'][d][0]
        coords = numpy.arange(lo, lo + shape[d], dtype=NUMERIC_META[dim['datatype']])
        out.append(Expect(dim['name'], coords, [dim['name']], None, None, 'dim'))
    return out


def same_values(got, exp):
    """got (as a client read it) holds exp's values: bytes for fixed-size
    cells, value by value (type too) for object arrays."""
    got = numpy.asarray(got)
    if got.shape != exp.shape:
        return False
    if exp.dtype == object:
        return got.dtype == object and all(
            type(g) is type(e) and g == e for g, e in zip(got.reshape(-1), exp.reshape(-1)))
    return got.dtype == exp.dtype and got.tobytes() == exp.tobytes()


def schema_of(mnt):
    with open(os.path.join(mnt, '__array.json')) as f:
        return json.load(f)['schema']


def meta_value(case, key, m):
    """The value .zattrs shows of array metadata key `key` (the contract:
    numbers, a list when count > 1, booleans, UTF-8 strings), or KeyError
    for a key it leaves out: CHAR and DATETIME are shown as main shows
    them, so they are not asserted."""
    raw = case.expected(m['file'])
    if m['datatype'] in STRINGS:
        return raw.decode()
    if m['datatype'] in NUMERIC_META:
        vals = numpy.frombuffer(raw, NUMERIC_META[m['datatype']]).tolist()
        return vals[0] if m['count'] == 1 else vals
    raise KeyError(key)


# ------------------------------------------------------------------ checks

@contextlib.contextmanager
def noting(fails, what):
    """Runs a block of checks of one thing; a failed assertion or an error
    (a missing file, a document that does not parse) is noted in `fails`
    as `what: why`, so that one run of a case reports every difference."""
    try:
        yield
    except Exception as e:       # noqa: BLE001 - each is reported below
        where = traceback.extract_tb(e.__traceback__)[-1].lineno
        fails.append(f'{what}: {type(e).__name__} {str(e).splitlines()[0][:300] if str(e) else ""} '
                     f'(line {where})')


def check_v2(root, exps, fails):
    """zarr.open_consolidated over __zarr: every expected array is there with
    its values, dtype, shape, chunks, order, filter, axis names and
    attributes; its documents are .zmetadata's; its folder lists its
    documents and every chunk key."""
    group = zarr.open_consolidated(root, mode='r')
    with open(os.path.join(root, '.zmetadata')) as f:
        meta = json.load(f)['metadata']
    with noting(fails, 'arrays'):
        assert sorted(group.array_keys()) == sorted(e.name for e in exps)
    for e in exps:
        with noting(fails, f'zarr {e.name}'):
            check_v2_array(root, meta, group, e)


def check_v2_array(root, meta, group, e):
    """check_v2 of one expected array."""
    a = group[e.name]
    got = a[...]
    assert same_values(got, e.values), f'{e.name}: values differ'
    if e.values.dtype == object:
        assert a.dtype == object and [c.codec_id for c in a.filters] == [e.filter], e.name
    else:
        assert a.dtype == e.values.dtype, e.name
    if e.chunks:
        assert a.chunks == e.chunks, e.name
    if e.order:
        assert a.order == e.order, e.name
    for doc in ('.zarray', '.zattrs'):
        with open(os.path.join(root, e.name, doc)) as z:
            assert json.load(z) == meta[f'{e.name}/{doc}'], f'{e.name}/{doc}'
    za = meta[f'{e.name}/.zarray']
    assert za['zarr_format'] == 2 and za['compressor'] is None, za
    assert za['dimension_separator'] == '.', za
    if e.kind == 'dim':
        assert za['fill_value'] is None, za['fill_value']
    attrs = meta[f'{e.name}/.zattrs']
    assert attrs['_ARRAY_DIMENSIONS'] == e.axes, e.name
    for k, v in e.attrs.items():
        assert attrs.get(k) == v, f'{e.name}: attribute {k}: {attrs.get(k)!r}'
    if e.kind == 'attr' and e.field['cell_val_num'] == 1 and e.values.dtype != object:
        fill = numpy.frombuffer(bytes.fromhex(e.field['fill_hex']), e.values.dtype)
        zf = numpy.array(a.fill_value, dtype=e.values.dtype)
        assert zf.tobytes() == fill.tobytes() or (
            fill.dtype.kind == 'f' and numpy.isnan(fill[0]) and numpy.isnan(zf)), \
            f'{e.name}: fill_value {a.fill_value!r}'
    if e.kind == 'attr' and e.values.dtype.kind == 'S':
        assert a.fill_value == bytes.fromhex(e.field['fill_hex']), a.fill_value
    if e.kind == 'attr' and e.filter == 'vlen-utf8':
        assert a.fill_value == bytes.fromhex(e.field['fill_hex']).decode(), a.fill_value
    grid = [-(-n // c) for n, c in zip(a.shape, a.chunks)]
    keys = {'.'.join(map(str, i)) for i in numpy.ndindex(*grid)}
    listed = set(os.listdir(os.path.join(root, e.name)))
    assert listed == {'.zarray', '.zattrs', 'zarr.json'} | keys, \
        f'{e.name}: lists {sorted(listed - keys)} and {len(listed & keys)} of {len(keys)} chunks'


def check_enumerations(root, exps):
    """The codes of an enumerated attribute carry flag_meanings, its values
    as words: strings with spaces as _ (store_arrays expects those
    exactly), numbers that read back as the enumeration's values."""
    for e in exps:
        if e.kind != 'labels' or e.values.dtype == object:
            continue
        code = e.name[:-len('.labels')]
        with open(os.path.join(root, code, '.zattrs')) as f:
            words = json.load(f)['flag_meanings'].split(' ')
        assert [float(w) for w in words] == [float(v) for v in e.enum_values], code


def test_zarr_dense_case(case, mount, cat_prog, tmp_path):
    """zarr.open_consolidated, xarray.open_zarr and dask.array.from_zarr on
    every field of every dense corpus case: values (str for var-sized
    strings, bytes for other var-sized cells, each cell's), shapes,
    dtypes, filters, chunks (the tile extents), order (the cell order),
    validity named by ancillary_variables, enumeration labels,
    coordinates, fill values and the array metadata in .zattrs;
    tiledbfs-cat shows the same bytes; sparse arrays have no __zarr.
    Every difference of a case is reported at once."""
    if case.info.get('kind') != 'array':
        pytest.skip('not an array')
    mnt = mount(case.array, case_options(case, tmp_path))
    if not case.dense:
        assert not os.path.exists(os.path.join(mnt, '__zarr'))
        return
    root = os.path.join(mnt, '__zarr')
    exps = store_arrays(case, schema_of(mnt))
    fails = []
    check_v2(root, exps, fails)
    with noting(fails, 'enumerations'):
        check_enumerations(root, exps)
    check_xarray_dask(root, exps, fails)
    with noting(fails, 'root .zattrs'):
        check_root_attrs(case, root)
    # tiledbfs-cat shows the same bytes as the mount
    opts = case_options(case, tmp_path)
    rels = ['.zmetadata', '.zattrs', 'zarr.json']
    for e in exps:
        if e.kind == 'attr' and (e is exps[0] or e.values.dtype == object):
            rels += [f'{e.name}/.zarray', f'{e.name}/zarr.json',
                     f'{e.name}/' + '.'.join('0' * len(e.axes))]
    for rel in rels:
        with noting(fails, f'tiledbfs-cat {rel}'):
            r = run_cat(cat_prog, case.array, '__zarr/' + rel, opts)
            assert r.returncode == 0, r.stderr
            with open(os.path.join(root, rel), 'rb') as f:
                assert r.stdout == f.read(), rel
            if not rel.split('/')[-1][0].isdigit():
                assert r.stdout.isascii(), f'{rel} is not ASCII'
    assert not fails, f'{case.name}: {len(fails)} differences:\n  ' + '\n  '.join(fails)


def check_xarray_dask(root, exps, fails):
    """xarray.open_zarr holds every array (axis names, values), masking by
    default too; dask.array.from_zarr computes each attribute."""
    ds = xarray.open_zarr(root, mask_and_scale=False)
    with noting(fails, 'xarray variables'):
        assert sorted(ds.variables) == sorted(e.name for e in exps)
    for e in exps:
        with noting(fails, f'xarray {e.name}'):
            assert same_values(ds[e.name].values, e.values), 'values'
            assert list(ds[e.name].dims) == e.axes
        if e.kind == 'dim':
            continue
        with noting(fails, f'dask {e.name}'):
            got = dask_array.from_zarr(root, component=e.name)
            if e.values.dtype.kind in 'iuf':
                assert got.sum(dtype='f8').compute() == \
                    pytest.approx(e.values.sum(dtype='f8'), nan_ok=True)
            elif e.values.dtype == object:
                assert same_values(got.compute(), e.values)
    # Masking by default keeps the string fields (object arrays) readable.
    with noting(fails, 'xarray masked'):
        masked = xarray.open_zarr(root)
        assert sorted(masked.variables) == sorted(e.name for e in exps)
        for e in exps:
            if e.values.dtype == object:
                assert masked[e.name].values.shape == e.values.shape


def check_root_attrs(case, root):
    """The root .zattrs holds the array metadata keys the contract shows,
    with their values, and no other key."""
    meta = case.info.get('metadata') or {}
    with open(os.path.join(root, '.zattrs')) as f:
        zattrs = json.load(f)
    for key, m in meta.items():
        try:
            want = meta_value(case, key, m)
        except KeyError:
            continue
        assert zattrs.get(key) == want, f'{key}: {zattrs.get(key)!r}, expected {want!r}'
    assert set(zattrs) <= set(meta)


def test_zarr_fill_is_masked(mount, tmp_path):
    """fill_value is the schema's fill: xarray (masking by default) shows the
    cells no fragment wrote as NaN."""
    case = get_case('dense_fragments_overlap')
    mnt = mount(case.array, case_options(case, tmp_path))
    ds = xarray.open_zarr(os.path.join(mnt, '__zarr'))
    exp = expected_array(case, 'a', case.fields()['a'])
    fill = numpy.frombuffer(bytes.fromhex(case.fields()['a']['fill_hex']), exp.dtype)[0]
    got = ds['a'].values
    assert (exp == fill).any()
    assert numpy.array_equal(numpy.isnan(got), exp == fill)
    assert numpy.array_equal(got[exp != fill], exp[exp != fill])


# ------------------------------------------------------------ enumerations

def stage_dense(mnt, name, region, files):
    """Commits a dense fragment of `region` holding `files` through
    MOUNT/__staging (docs/LAYOUT.md "Writing")."""
    stage = os.path.join(mnt, '__staging', name)
    os.mkdir(stage)
    for fname, data in files.items():
        with open(os.path.join(stage, fname), 'wb') as f:
            f.write(data)
    with open(os.path.join(stage, '__subarray.json'), 'w') as f:
        json.dump(region, f)
    os.rename(stage, os.path.join(mnt, '__fragments', name))


def test_zarr_enumeration_without_value(mount, tmp_path):
    """Codes with no value in their enumeration (the fill, one past the
    last value) give the labels' fill_value: '' for the string
    enumeration, NaN for the FLOAT64 one; the other cells keep their
    values; the codes carry enumeration, flag_values and flag_meanings."""
    case = get_case('enumeration')
    arr = str(tmp_path / 'enum')
    shutil.copytree(case.array, arr)
    mnt = mount(arr, ['rw'])
    stage_dense(mnt, 'holes', [[0, 3]], {
        'color': bytes([255, 6, 0, 5]),
        'size': numpy.array([-32768, 4, 3, 0], '<i2').tobytes(),
        'v': numpy.arange(4, dtype='<f4').tobytes()})
    root = os.path.join(mnt, '__zarr')
    group = zarr.open_consolidated(root, mode='r')
    colors = case.info['enumerations']['colors']
    sizes = case.info['enumerations']['sizes']
    assert group['color'][:4].tolist() == [255, 6, 0, 5]
    labels = group['color.labels']
    assert labels.fill_value == '' and labels.dtype == object
    assert labels[:4].tolist() == ['', '', colors[0], colors[5]]
    codes = numpy.frombuffer(case.expected('color'), 'u1')
    assert labels[4:].tolist() == [colors[c] for c in codes[4:]]
    s = group['size.labels']
    assert s.dtype == numpy.float64 and math.isnan(s.fill_value)
    got = s[...]
    assert numpy.isnan(got[:2]).all() and got[2:4].tolist() == [sizes[3], sizes[0]]
    codes = numpy.frombuffer(case.expected('size'), '<i2')
    assert got[4:].tolist() == [sizes[c] for c in codes[4:]]
    attrs = group['color'].attrs.asdict()
    assert attrs['enumeration'] == 'colors'
    assert attrs['flag_values'] == list(range(len(colors)))
    assert attrs['flag_meanings'] == flag_meanings(colors)
    assert group['size'].attrs['flag_values'] == list(range(len(sizes)))
    assert [float(w) for w in group['size'].attrs['flag_meanings'].split()] == sizes
    ds = xarray.open_zarr(root, mask_and_scale=False)
    assert ds['color.labels'].values[:4].tolist() == ['', '', colors[0], colors[5]]


# ---------------------------------------------------------- CF attributes

def write_meta(mnt, key, value, datatype=None):
    """Sets array metadata key `key` through MOUNT/__meta (a UTF-8 string,
    or `value` as bytes of `datatype`)."""
    path = os.path.join(mnt, '__meta', key)
    with open(path, 'wb') as f:
        if datatype:
            os.setxattr(path, 'user.tiledb.datatype', datatype.encode())
        f.write(value if isinstance(value, bytes) else value.encode())


def test_zarr_cf_attributes(mount, tmp_path):
    """Array metadata keys NAME.KEY become attribute KEY of array NAME (an
    attribute, a dimension, ATTR.validity: the longest NAME wins) in its
    .zattrs, in .zmetadata, in its zarr.json and through xarray, while the
    root's .zattrs keeps the keys; a string is a string, FLOAT64 x 2 a
    list; _ARRAY_DIMENSIONS stays the store's; a key naming no array, or
    with an empty KEY, stays only at the root."""
    src = get_case('dense_var_nullable')
    arr = str(tmp_path / 'cf')
    shutil.copytree(src.array, arr)
    mnt = mount(arr, ['rw'])
    keys = {'n_i32.units': 'm/s', 'n_i32.long_name': 'wind speed',
            'n_i32.validity.long_name': 'speed measured', 'r.units': 'km',
            'n_i32._ARRAY_DIMENSIONS': 'x', 'nothere.units': 'K', 's_utf8.': 'empty key'}
    for k, v in keys.items():
        write_meta(mnt, k, v)
    write_meta(mnt, 'n_f64x2.valid_range', numpy.array([0.5, 2.0], '<f8').tobytes(), 'FLOAT64')
    write_meta(mnt, 'n_u8._FillValue', numpy.array([7], 'u1').tobytes(), 'UINT8')
    problems = mount.unmount(mnt)
    assert not problems, problems
    mnt = mount(arr)
    root = os.path.join(mnt, '__zarr')
    want = {'n_i32': {'units': 'm/s', 'long_name': 'wind speed',
                      'ancillary_variables': 'n_i32.validity',
                      '_ARRAY_DIMENSIONS': ['r', 'c']},
            'n_i32.validity': {'long_name': 'speed measured', '_ARRAY_DIMENSIONS': ['r', 'c']},
            'r': {'units': 'km', '_ARRAY_DIMENSIONS': ['r']},
            'n_f64x2': {'valid_range': [0.5, 2.0]},
            'n_u8': {'_FillValue': 7}}
    with open(os.path.join(root, '.zmetadata')) as f:
        meta = json.load(f)['metadata']
    with open(os.path.join(root, 'zarr.json')) as f:
        v3 = json.load(f)
    for name, attrs in want.items():
        with open(os.path.join(root, name, '.zattrs')) as f:
            got = json.load(f)
        with open(os.path.join(root, name, 'zarr.json')) as f:
            got3 = json.load(f)['attributes']
        for k, v in attrs.items():
            assert got.get(k) == v, f'{name}/.zattrs {k}: {got.get(k)!r}'
            assert meta[f'{name}/.zattrs'].get(k) == v, f'.zmetadata {name} {k}'
            if k != '_ARRAY_DIMENSIONS':
                assert got3.get(k) == v, f'{name}/zarr.json {k}: {got3.get(k)!r}'
                assert v3['consolidated_metadata']['metadata'][name]['attributes'].get(k) == v
        assert 'validity.long_name' not in got, name
    with open(os.path.join(root, 's_utf8', '.zattrs')) as f:
        assert '' not in json.load(f)
    with open(os.path.join(root, '.zattrs')) as f:
        top = json.load(f)
    for k, v in keys.items():
        assert top[k] == v, k
    assert top['n_f64x2.valid_range'] == [0.5, 2.0]
    assert v3['attributes'] == top
    ds = xarray.open_zarr(root, mask_and_scale=False)
    assert ds['n_i32'].attrs['units'] == 'm/s'
    assert ds['n_i32'].attrs['long_name'] == 'wind speed'
    assert ds['n_i32.validity'].attrs['long_name'] == 'speed measured'
    assert ds['r'].attrs['units'] == 'km'
    assert list(ds['n_i32'].dims) == ['r', 'c']
    assert ds['n_i32'].values.tobytes() == src.expected('n_i32')


def test_zarr_cf_store_keys_win(mount, tmp_path):
    """A KEY the store sets itself is left to it (LAYOUT: "a KEY the store
    sets itself (_ARRAY_DIMENSIONS) is left to it"): metadata keys
    NAME.ancillary_variables of a nullable attribute and NAME.enumeration,
    NAME.flag_values, NAME.flag_meanings of an enumerated one, and
    NAME.units of a datetime (v3's CF units) do not replace the store's
    values; another key of the same array is set."""
    want, fails = {}, []
    for cname, name, keys in (
            ('dense_var_nullable', 'n_i32', ['ancillary_variables']),
            ('enumeration', 'color', ['enumeration', 'flag_values', 'flag_meanings'])):
        arr = str(tmp_path / cname)
        shutil.copytree(get_case(cname).array, arr)
        mnt = mount(arr)
        with open(os.path.join(mnt, '__zarr', name, '.zattrs')) as f:
            want[name] = json.load(f)
        assert not mount.unmount(mnt)
        mnt = mount(arr, ['rw'])
        for k in keys + ['units']:
            write_meta(mnt, f'{name}.{k}', 'mine')
        assert not mount.unmount(mnt)
        mnt = mount(arr)
        with open(os.path.join(mnt, '__zarr', name, '.zattrs')) as f:
            got = json.load(f)
        with open(os.path.join(mnt, '__zarr', name, 'zarr.json')) as f:
            got3 = json.load(f)['attributes']
        for k, v in dict(want[name], units='mine').items():
            if got.get(k) != v:
                fails.append(f'{cname} {name}/.zattrs {k}: {got.get(k)!r}, expected {v!r}')
            if k != '_ARRAY_DIMENSIONS' and got3.get(k) != v:
                fails.append(f'{cname} {name}/zarr.json {k}: {got3.get(k)!r}, expected {v!r}')
        assert not mount.unmount(mnt)
    # v3's CF units of a DATETIME_MS attribute are the store's: others would
    # misdate every cell for a reader decoding CF times.
    arr = str(tmp_path / 'when')
    shutil.copytree(get_case('dense_2d_colmajor').array, arr)
    mnt = mount(arr, ['rw'])
    write_meta(mnt, 'when.units', 'days since 2000-01-01')
    assert not mount.unmount(mnt)
    mnt = mount(arr)
    with open(os.path.join(mnt, '__zarr', 'when', 'zarr.json')) as f:
        units = json.load(f)['attributes'].get('units')
    if units != 'milliseconds since 1970-01-01':
        fails.append(f'dense_2d_colmajor when/zarr.json units: {units!r}')
    assert not fails, '\n'.join(fails)


def test_zarr_cf_units_a(mount, tmp_path):
    """The brief's own example on a copy of dense_1d_basic: a.units = "m/s"
    and a.long_name, written through a rw mount, are attributes of a in
    .zattrs, .zmetadata, zarr.json (and the root's consolidated copy) and
    xarray, after a remount read-only."""
    src = get_case('dense_1d_basic')
    arr = str(tmp_path / 'basic')
    shutil.copytree(src.array, arr)
    mnt = mount(arr, ['rw'])
    write_meta(mnt, 'a.units', 'm/s')
    write_meta(mnt, 'a.long_name', 'speed of a')
    assert not mount.unmount(mnt)
    mnt = mount(arr)
    root = os.path.join(mnt, '__zarr')
    docs = {}
    for rel in ('a/.zattrs', '.zmetadata', 'a/zarr.json', 'zarr.json'):
        with open(os.path.join(root, rel)) as f:
            docs[rel] = json.load(f)
    for attrs in (docs['a/.zattrs'], docs['.zmetadata']['metadata']['a/.zattrs'],
                  docs['a/zarr.json']['attributes'],
                  docs['zarr.json']['consolidated_metadata']['metadata']['a']['attributes']):
        assert attrs['units'] == 'm/s' and attrs['long_name'] == 'speed of a', attrs
    assert 'units' not in docs['.zmetadata']['metadata']['b/.zattrs']
    ds = xarray.open_zarr(root, mask_and_scale=False)
    assert ds['a'].attrs['units'] == 'm/s'
    assert ds['a'].attrs['long_name'] == 'speed of a'
    assert ds['a'].values.tobytes() == src.expected('a')


# ----------------------------------------------------------------- groups

def test_zarr_group(mount, tmp_path):
    """GROUP/__zarr of group_basic: a Zarr group whose member dense_arr is
    GROUP/dense_arr/__zarr file for file; zarr.open_consolidated and
    xarray.open_zarr(group=MEMBER) reach every array of it with the
    member's values; the group's metadata is its .zattrs; the sparse
    member and the subgroup are not in it; the subgroup has its own."""
    case = get_case('group_basic')
    mnt = mount(case.array, case_options(case, tmp_path))
    root = os.path.join(mnt, '__zarr')
    assert sorted(n for n in os.listdir(root) if not n.startswith('.')) == \
        ['dense_arr', 'zarr.json']
    mine = read_tree(os.path.join(root, 'dense_arr'))
    own = read_tree(os.path.join(mnt, 'dense_arr', '__zarr'))
    assert mine == own
    group = zarr.open_consolidated(root, mode='r')
    assert list(group.group_keys()) == ['dense_arr']
    member = zarr.open_consolidated(os.path.join(mnt, 'dense_arr', '__zarr'), mode='r')
    m = case.info['members']['dense_arr']
    names = sorted([n for n, f in m['fields'].items() if f['role'] == 'attr']
                   + [d['name'] for d in m['dims']])
    assert sorted(group['dense_arr'].array_keys()) == names
    ds = xarray.open_zarr(root, group='dense_arr', mask_and_scale=False)
    for name in names:
        a = group['dense_arr'][name][...]
        b = member[name][...]
        assert a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist(), name
        assert ds[name].values.tolist() == b.tolist(), f'xarray {name}'
    assert ds['a'].values.tobytes() == case.expected('dense_arr/a')
    s = [c.decode() for c in var_cells(case, 'dense_arr/s')]
    assert ds['s'].values.reshape(-1).tolist() == s
    with open(os.path.join(root, '.zmetadata')) as f:
        meta = json.load(f)['metadata']
    for rel, data in own.items():
        if os.path.basename(rel) in ('.zarray', '.zattrs', '.zgroup'):
            assert meta['dense_arr/' + rel] == json.loads(data), rel
    top = group.attrs.asdict()
    for key, mt in case.info['metadata'].items():
        assert top[key] == meta_value(case, key, mt), key
    sub = zarr.open_consolidated(os.path.join(mnt, 'sub', '__zarr'), mode='r')
    assert list(sub.group_keys()) == ['inner']
    assert sub['inner']['v'][...].tobytes() == case.expected('sub/inner/v')


@pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")
def test_dask_distributed(mount, tmp_path):
    """A dask.distributed LocalCluster of 2 worker processes reduces mounted
    arrays chunk by chunk (each worker reads its chunks through the mount):
    the same numbers numpy gives from the expected bytes."""
    distributed = pytest.importorskip('distributed', reason='python3-distributed ' + WHY)
    case = get_case('dense_2d_all_types')
    mnt = mount(case.array, case_options(case, tmp_path))
    root = os.path.join(mnt, '__zarr')
    f = case.fields()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()['workers']) == 2
        for name in ['i64', 'u16', 'f64']:
            exp = expected_array(case, name, f[name])
            a = dask_array.from_zarr(root, component=name)
            assert a.numblocks == (6, 4)
            got = client.compute(a.astype('f8').sum(axis=0)).result()
            want = exp.astype('f8').sum(axis=0)
            assert numpy.array_equal(numpy.isnan(got), numpy.isnan(want))
            assert numpy.allclose(got[~numpy.isnan(want)], want[~numpy.isnan(want)]), name
        ds = xarray.open_zarr(root, mask_and_scale=False)
        total = client.compute(ds['i32'].astype('i8').sum()).result()
        assert int(total) == int(expected_array(case, 'i32', f['i32']).astype('i8').sum())


# ------------------------------------------------------ dimension labels

LABELS = os.path.join(REPO, 'tests', 'fixtures', 'dense_dim_labels')


def test_zarr_dimension_labels(mount):
    """tests/fixtures/dense_dim_labels (TileDB 2.29.2 wrote it and read back
    its expected files): zarr.open_consolidated shows each dimension label
    as an array along its dimension (lat float64, name strings), equal to
    TileDB's reads; xarray.open_zarr makes them coordinates of y and x, so
    selecting by label gives what TileDB's read by label ranges gave."""
    def expected(name):
        with open(os.path.join(LABELS, 'expected', name), 'rb') as f:
            return f.read()
    mnt = mount(os.path.join(LABELS, 'array'))
    root = os.path.join(mnt, '__zarr')
    g = zarr.open_consolidated(root, mode='r')
    assert g['lat'].dtype == numpy.float64 and g['lat'].chunks == (4,)
    assert g['lat'][...].tobytes() == expected('lat')
    offs = numpy.frombuffer(expected('name.offsets'), '<u8').tolist()
    raw = expected('name')
    assert list(g['name'][...]) == [raw[a:b].decode() for a, b in
                                    zip(offs, offs[1:] + [len(raw)])]
    assert g['t'][...].tobytes() == expected('t')
    assert g['t'].attrs['coordinates'] == 'lat name'
    assert g['lat'].attrs['_ARRAY_DIMENSIONS'] == ['y']
    ds = xarray.open_zarr(root)
    assert set(ds.coords) == {'y', 'x', 'lat', 'name'}
    assert ds['lat'].dims == ('y',) and ds['name'].dims == ('x',)
    picked = ds['t'].where((ds.lat >= -20) & (ds.lat <= 0), drop=True) \
        .where(ds.name.isin(['a1', 'a2', 'a3']), drop=True)
    assert picked.values.astype('<f4').tobytes() == expected('t_by_label_range')
    with open(os.path.join(root, 'lat', 'zarr.json')) as f:
        v3 = json.load(f)
    assert v3['data_type'] == 'float64' and v3['dimension_names'] == ['y']
    with open(os.path.join(root, 'name', 'zarr.json')) as f:
        v3 = json.load(f)
    assert v3['data_type'] == 'string' and v3['codecs'][-1]['name'] == 'vlen-utf8'


def test_zarr_dimension_label_missing(mount, tmp_path):
    """A label whose array is gone, or is not TileDB's layout of a label
    (one dense dimension over the labelled one's domain), is left out of
    __zarr and the daemon logs why; the other label and t are there."""
    arr = str(tmp_path / 'labelled')
    shutil.copytree(os.path.join(LABELS, 'array'), arr)
    shutil.rmtree(os.path.join(arr, '__labels', 'l1'))
    shutil.rmtree(os.path.join(arr, '__labels', 'l0'))
    # l0 becomes a 2-D array: not a label's layout
    shutil.copytree(get_case('dense_2d_colmajor').array, os.path.join(arr, '__labels', 'l0'))
    mnt = mount(arr)
    names = sorted(n for n in os.listdir(os.path.join(mnt, '__zarr')) if n[0] != '.')
    assert names == ['t', 'x', 'y', 'zarr.json'], names
    with open(os.path.join(mnt, '__zarr', 't', '.zattrs')) as f:
        assert 'coordinates' not in json.load(f)
    errpath = mount.active[-1][2]
    mount.unmount(mnt)
    with open(errpath, 'rb') as f:
        log = f.read().decode(errors='replace')
    assert 'dimension label name: not shown' in log, log
    assert 'dimension label lat: not shown: its array is not one dense dimension' in log, log
