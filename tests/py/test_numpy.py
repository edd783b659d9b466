"""test_numpy.py: numpy's files (NAME.npy of every field numpy can hold,
__slice/NAME[...].npy by numpy's indexing, __domain/NAME[...].npy by
coordinates), SEEK_DATA/SEEK_HOLE over cells no fragment wrote, and the
root's user.tiledbfs.stats, through a real mount of corpus cases."""
import errno
import os

import numpy
import pytest

from conftest import case_options, get_case

XATTRS = ('user.tiledb.datatype', 'user.tiledb.dtype', 'user.tiledb.shape',
          'user.tiledb.cell_val_num')
BYTE_STRINGS = ('CHAR', 'STRING_ASCII', 'STRING_UTF8')


def expected_array(case, name, f):
    """numpy's view of expected file `name` as NAME.npy shows it: the view's
    shape (dense) or one axis of cells; fixed CHAR x N as S<N>; var-sized
    strings as S<longest>; other multi-value cells as a last axis.  None
    when the field has no .npy."""
    lead = tuple(case.info['view_shape']) if case.dense else (-1,)
    cvn = f['cell_val_num']
    if cvn == 'var':
        if f['datatype'] not in BYTE_STRINGS:
            return None
        vals = case.expected(name)
        offs = [int(x) for x in numpy.frombuffer(case.expected(name + '.offsets'), '<u8')]
        items = [vals[a:b] for a, b in zip(offs, offs[1:] + [len(vals)])]
        width = max([len(x) for x in items] + [1])
        return numpy.array(items, dtype=f'S{width}').reshape(lead)
    if f['datatype'] in BYTE_STRINGS:
        return numpy.frombuffer(case.expected(name), f'S{cvn}').reshape(lead)
    tail = (cvn,) if cvn > 1 else ()
    return numpy.frombuffer(case.expected(name), f['dtype']).reshape(lead + tail)


def npy_fields(case):
    """(name, field) of every top-level data file of a case."""
    return [(n, f) for n, f in case.fields().items() if n in case.expected_paths]


def test_npy_every_field(case, mount, tmp_path):
    """NAME.npy of every fixed-size field and every var-sized string field
    (dense: the view's shape; sparse: the merged cells, dimensions too), and
    NAME.validity.npy: numpy.load gives the expected values, shape and
    dtype; fixed-size ones map with mmap_mode='r'; each .npy has the data
    file's user.tiledb.* xattrs.  Var-sized fields of other types have no
    .npy."""
    if case.info.get('kind') != 'array':
        pytest.skip('not an array')
    mnt = mount(case.array, case_options(case, tmp_path))
    checked = 0
    for name, f in npy_fields(case):
        path = os.path.join(mnt, name + '.npy')
        exp = expected_array(case, name, f)
        if exp is None:
            assert not os.path.exists(path), f'{name}.npy should not exist'
            continue
        got = numpy.load(path)
        assert got.shape == exp.shape and got.dtype == exp.dtype, \
            f'{name}.npy: {got.shape} {got.dtype}, expected {exp.shape} {exp.dtype}'
        assert got.tobytes() == exp.tobytes(), f'{name}.npy: values differ'
        if f['cell_val_num'] != 'var':
            mm = numpy.load(path, mmap_mode='r')
            assert mm.tobytes() == exp.tobytes(), f'{name}.npy (mmap)'
        for x in XATTRS:
            assert os.getxattr(path, x) == os.getxattr(os.path.join(mnt, name), x), \
                f'{name}.npy: {x}'
        if f.get('nullable'):
            v = numpy.load(os.path.join(mnt, name + '.validity.npy'))
            ev = numpy.frombuffer(case.expected(name + '.validity'), '|u1')
            assert v.dtype == numpy.uint8 and v.tobytes() == ev.tobytes()
            assert v.shape == (tuple(case.info['view_shape']) if case.dense else ev.shape)
        checked += 1
    if not checked:
        pytest.skip('no field with a .npy')


# items of __slice/ names, each checked against numpy's own indexing
SLICES_2D = ['[1:3,2:5]', '[:4,3:]', '[-3:,-2]', '[5]', '[::2,::-3]', '[::-1,1:-1:4]',
             '[-100:100,:]', '[30:40,0:1]', '[3:1,:]', '[-1,-1]', '[:,16]', '[22:-30:-7,0:17:5]',
             '[+2:+4,-17]']


def index_of(text):
    """The Python index of a __slice/ item list ("[1:3,::-1]")."""
    out = []
    for item in text[1:-1].split(','):
        if ':' not in item:
            out.append(int(item))
        else:
            out.append(slice(*[int(p) if p else None for p in item.split(':')]))
    return tuple(out)


def test_slice_numpy_rules(mount, tmp_path):
    """__slice/NAME[...].npy is numpy's NAME.npy[...]: negative indexes from
    the end, steps of either sign, bounds past the ends clipped, empty
    results, integers dropping their axis, fewer items than dimensions;
    for fixed and var-sized strings and validity as for numbers."""
    fails = []
    for cname, names in [('dense_2d_all_types', ['i32', 'f64', 'flag']),
                         ('dense_var_nullable', ['fixchar', 'n_f64x2', 's_utf8', 'n_i32.validity'])]:
        case = get_case(cname)
        mnt = mount(case.array, case_options(case, tmp_path))
        for name in names:
            full = numpy.load(os.path.join(mnt, name + '.npy'))
            for text in SLICES_2D:
                try:
                    exp = full[index_of(text)]
                except IndexError:
                    continue
                got = numpy.load(os.path.join(mnt, '__slice', f'{name}{text}.npy'))
                exp = numpy.asarray(exp, dtype=full.dtype)
                if got.shape != exp.shape or got.dtype != exp.dtype or got.tobytes() != exp.tobytes():
                    fails.append(f'{cname} {name}{text}: {got.shape} {got.dtype}, '
                                 f'expected {exp.shape} {exp.dtype}')
    assert not fails, '\n'.join(fails)


def test_slice_malformed_names(mount, tmp_path):
    """A name __slice/ cannot read is ENOENT (all a lookup can answer), and
    the daemon logs why."""
    case = get_case('dense_2d_all_types')
    mnt = mount(case.array, case_options(case, tmp_path) + ['log=stderr'])
    bad = {'i32[0:1,0:1,0:1].npy': 'at most 2 items',
           'i32[23].npy': 'index 23 is outside',
           'i32[::0].npy': 'a step of 0',
           'i32[a:b,0:1].npy': 'not NAME[i,j,...].npy',
           'i32[0:1,0:1]': 'not FIELD[...].npy',
           'nope[0:1].npy': 'not FIELD[...].npy',
           'i32[].npy': 'not NAME[i,j,...].npy'}
    for name in bad:
        with pytest.raises(OSError) as e:
            os.stat(os.path.join(mnt, '__slice', name))
        assert e.value.errno == errno.ENOENT, name
    assert os.listdir(os.path.join(mnt, '__slice')) == []
    assert not mount.unmount(mnt)   # the daemon has written all it logs
    with open(os.path.join(str(tmp_path), 'mnt0.stderr'), errors='replace') as f:
        log = f.read()
    for name, why in bad.items():
        assert f'lookup: __slice/{name}: ' in log and why in log, f'{name}: {why!r} not logged'


def test_domain_slices(mount, tmp_path):
    """__domain/NAME[...].npy indexes by the dimensions' coordinates (as
    TileDB-Py's A[5000:5010] does): dense_2d_colmajor's rows run from -5 and
    its columns from 3, so negative numbers are coordinates, not counts from
    the end; bounds are clipped to the view; a coordinate outside it is
    ENOENT.  dense_huge_domain's view starts at 5000."""
    case = get_case('dense_2d_colmajor')
    mnt = mount(case.array, case_options(case, tmp_path))
    full = numpy.load(os.path.join(mnt, 'f32.npy'))
    rgb = numpy.load(os.path.join(mnt, 'rgb.npy'))
    for text, idx in [('[-3:2,5:9]', (slice(2, 7), slice(2, 6))),
                      ('[-5,3]', (0, 0)), ('[14,:]', (19, slice(None))),
                      ('[-100:100:3,20:2:-4]', (slice(0, 20, 3), slice(17, None, -4))),
                      ('[:0,4:6]', (slice(0, 5), slice(1, 3)))]:
        got = numpy.load(os.path.join(mnt, '__domain', f'f32{text}.npy'))
        assert got.tobytes() == full[idx].tobytes() and got.shape == full[idx].shape, text
    got = numpy.load(os.path.join(mnt, '__domain', 'rgb[0,3:5].npy'))
    assert got.shape == (2, 3) and got.tobytes() == rgb[5, 0:2].tobytes()
    for bad in ['f32[15,3].npy', 'f32[-6,3].npy', 'f32[0,2].npy']:
        with pytest.raises(OSError) as e:
            os.stat(os.path.join(mnt, '__domain', bad))
        assert e.value.errno == errno.ENOENT, bad
    huge = get_case('dense_huge_domain')
    mnt2 = mount(huge.array, case_options(huge, tmp_path))
    a = numpy.load(os.path.join(mnt2, 'a.npy'))
    got = numpy.load(os.path.join(mnt2, '__domain', 'a[5000:5010].npy'))
    assert got.tobytes() == a[0:10].tobytes()
    assert numpy.load(os.path.join(mnt2, '__domain', 'a[5249:].npy')).tobytes() == a[-1:].tobytes()


def test_seek_data_hole(mount, tmp_path):
    """dense_fragments_overlap has a block no fragment wrote: SEEK_HOLE finds
    it, SEEK_DATA skips it, and the bytes there are fill values; a file
    written everywhere has its only hole at the end."""
    case = get_case('dense_fragments_overlap')
    mnt = mount(case.array, case_options(case, tmp_path))
    path = os.path.join(mnt, 'a')
    exp = numpy.frombuffer(case.expected('a'), dtype='<i4')
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        hole = os.lseek(fd, 0, os.SEEK_HOLE)
        assert 0 < hole < size, 'the never-written block is a hole'
        assert hole % 4 == 0
        assert exp[hole // 4] == -1, 'a hole reads as the fill value (-1)'
        data = os.lseek(fd, hole, os.SEEK_DATA)
        assert hole < data <= size
        assert all(exp[hole // 4: data // 4] == -1)
        assert os.lseek(fd, data, os.SEEK_DATA) == data
        with pytest.raises(OSError) as e:
            os.lseek(fd, size, os.SEEK_DATA)
        assert e.value.errno == errno.ENXIO
    finally:
        os.close(fd)
    # the same hole in a slice of every row, after its .npy header (data);
    # the slice's shape its own
    path = os.path.join(mnt, '__slice', 'a[0:20].npy')
    assert os.getxattr(path, 'user.tiledb.shape') == b'20,18'
    assert os.getxattr(os.path.join(mnt, '__slice', 'a[1:3].npy'),
                       'user.tiledb.shape') == b'2,18'
    fd = os.open(path, os.O_RDONLY)
    try:
        head = os.fstat(fd).st_size - size
        assert numpy.load(path).tobytes() == case.expected('a')
        assert os.lseek(fd, 0, os.SEEK_DATA) == 0
        assert os.lseek(fd, 0, os.SEEK_HOLE) == head + hole
        assert os.lseek(fd, head + hole, os.SEEK_DATA) == head + data
    finally:
        os.close(fd)
    case2 = get_case('dense_1d_basic')
    mnt2 = mount(case2.array, case_options(case2, tmp_path))
    fd = os.open(os.path.join(mnt2, 'a'), os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        assert os.lseek(fd, 0, os.SEEK_DATA) == 0
        assert os.lseek(fd, 0, os.SEEK_HOLE) == size
    finally:
        os.close(fd)


def test_stats_xattr(mount, tmp_path):
    """user.tiledbfs.stats on the root counts the tile cache's work."""
    case = get_case('dense_2d_all_types')
    mnt = mount(case.array, case_options(case, tmp_path))
    assert 'user.tiledbfs.stats' in os.listxattr(mnt)

    def stats():
        v = os.getxattr(mnt, 'user.tiledbfs.stats').decode()
        return dict((k, int(x)) for k, x in (p.split('=') for p in v.split()))

    before = stats()
    assert before['decodes'] == 0 and before['cache_budget'] > 0
    with open(os.path.join(mnt, 'i32'), 'rb') as f:
        f.read()
    after = stats()
    assert after['decodes'] > 0 and after['decoded_bytes'] > 0
    assert after['misses'] >= after['decodes']
    with pytest.raises(OSError):
        os.setxattr(mnt, 'user.tiledbfs.stats', b'x')
