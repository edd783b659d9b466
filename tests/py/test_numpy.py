"""test_numpy.py: numpy's files of a dense array (NAME.npy, __slice/NAME[a:b,...].npy),
SEEK_DATA/SEEK_HOLE over cells no fragment wrote, and the root's
user.tiledbfs.stats, through a real mount of corpus cases."""
import errno
import os

import numpy
import pytest

from conftest import case_options, get_case
from test_corpus_mount import fixed_attrs


def shape_of(case, f):
    shape = tuple(case.info['view_shape'])
    return shape + (f['cell_val_num'],) if f['cell_val_num'] > 1 else shape


def test_npy_whole(case, mount, tmp_path):
    """numpy.load (and numpy.load with mmap_mode='r') of NAME.npy gives the
    view with its shape and dtype, the same bytes as NAME."""
    if not case.dense:
        pytest.skip('not a dense array')
    attrs = fixed_attrs(case)
    if not attrs:
        pytest.skip('no fixed-size attribute')
    mnt = mount(case.array, case_options(case, tmp_path))
    for name, f in attrs:
        exp = numpy.frombuffer(case.expected(name), dtype=f['dtype']).reshape(shape_of(case, f))
        path = os.path.join(mnt, name + '.npy')
        got = numpy.load(path)
        assert got.shape == exp.shape and got.dtype == exp.dtype, name
        assert got.tobytes() == exp.tobytes(), f'{name}.npy: values differ'
        mm = numpy.load(path, mmap_mode='r')
        assert mm.shape == exp.shape and mm.tobytes() == exp.tobytes(), f'{name}.npy (mmap)'
        hdr = os.stat(path).st_size - len(case.expected(name))
        assert hdr % 64 == 0 and hdr > 0


def test_slice_paths(mount, tmp_path):
    """__slice/NAME[a:b,c:d].npy is the box of the view, for every box shape
    that fits (checked against the expected bytes); malformed or
    out-of-range names are ENOENT."""
    case = get_case('dense_2d_all_types')
    mnt = mount(case.array, case_options(case, tmp_path))
    shape = tuple(case.info['view_shape'])
    for name, f in fixed_attrs(case):
        full = numpy.frombuffer(case.expected(name), dtype=f['dtype']).reshape(shape_of(case, f))
        for a, b, c, d in [(0, shape[0], 0, shape[1]), (1, 3, 2, 5), (5, 6, 0, 1),
                           (shape[0] - 2, shape[0], shape[1] - 7, shape[1])]:
            got = numpy.load(os.path.join(mnt, '__slice', f'{name}[{a}:{b},{c}:{d}].npy'))
            assert got.tobytes() == full[a:b, c:d].tobytes(), f'{name}[{a}:{b},{c}:{d}]'
            assert got.shape == full[a:b, c:d].shape
        got = numpy.load(os.path.join(mnt, '__slice', f'{name}[:4,3:].npy'))
        assert got.tobytes() == full[:4, 3:].tobytes()
    for bad in ['i32[0:1].npy', 'i32[1:1,0:1].npy', f'i32[0:{shape[0] + 1},0:1].npy',
                'i32[0:1,0:1]', 'nope[0:1,0:1].npy', 'i32[a:b,0:1].npy']:
        with pytest.raises(OSError) as e:
            os.stat(os.path.join(mnt, '__slice', bad))
        assert e.value.errno == errno.ENOENT, bad


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
