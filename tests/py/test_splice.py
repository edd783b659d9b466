"""test_splice.py: reads of unfiltered tiles are answered from the data
files themselves (spliced into the reply: no tile is decoded), with the
same bytes as the copying path (-o no_splice) and tiledbfs-cat; reads that
cannot be (fill values, short pieces, a damaged chunk header) go the
decoding way, and a damaged header is EIO, never the header's bytes."""
import errno
import glob
import mmap
import os
import struct
import time

import numpy
import pytest

from conftest import make_sample, run_cat

CHUNK = 64 * 1024


def expected_temperature(rows, cols):
    r = numpy.arange(rows, dtype=numpy.float64)[:, None]
    c = numpy.arange(cols, dtype=numpy.float64)[None, :]
    return (20 + r + c / 10).astype('<f8').tobytes()


def stats(mnt):
    v = os.getxattr(mnt, 'user.tiledbfs.stats').decode()
    return dict((k, int(x)) for k, x in (p.split('=') for p in v.split()))


def read_all(path, bs, pause=0):
    """The file read `bs` bytes at a time (`pause` seconds apart)."""
    out = bytearray()
    with open(path, 'rb', buffering=0) as f:
        while True:
            b = f.read(bs)
            if not b:
                return bytes(out)
            out += b
            if pause:
                time.sleep(pause)


def test_full_row_tiles_spliced(mount, tmp_path, cat_prog):
    """Tiles as wide as the array: a read is long pieces of tiles, spliced;
    no tile is decoded and the bytes are the array's."""
    arr = make_sample(tmp_path, '512x2048', '16x2048')   # 256 KiB tiles, 4 chunks
    want = expected_temperature(512, 2048)
    mnt = mount(arr)
    got = read_all(os.path.join(mnt, 'temperature'), 1 << 20)
    assert got == want
    assert stats(mnt)['decodes'] == 0
    r = run_cat(cat_prog, arr, 'temperature')
    assert r.returncode == 0 and r.stdout == want


def test_no_splice_decodes_same_bytes(mount, tmp_path):
    arr = make_sample(tmp_path, '512x2048', '16x2048')
    mnt = mount(arr, ['no_splice'])
    got = read_all(os.path.join(mnt, 'temperature'), 1 << 20)
    assert got == expected_temperature(512, 2048)
    assert stats(mnt)['decodes'] > 0


@pytest.mark.parametrize('tile', ['64x512', '32x128'])
def test_narrow_tiles_same_bytes(mount, tmp_path, tile):
    """Rows crossing tiles: 4 KiB pieces are spliced, 1 KiB ones copied;
    either way the bytes are the array's, at any offset and size."""
    arr = make_sample(tmp_path, '256x2048', tile)
    want = expected_temperature(256, 2048)
    mnt = mount(arr)
    path = os.path.join(mnt, 'temperature')
    assert read_all(path, 1 << 20) == want
    if tile == '64x512':
        assert stats(mnt)['decodes'] == 0
    # O_DIRECT: each read reaches the daemon at its own offset and size
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        for off, n in ((0, 3), (4093, 9000), (CHUNK - 5, 2 * CHUNK + 11),
                       (len(want) - 100, 1000), (12345, 1 << 20)):
            buf = mmap.mmap(-1, n)
            got = os.preadv(fd, [buf], off)
            assert buf[:got] == want[off:off + n]
    finally:
        os.close(fd)


def test_fill_values_and_two_fragments(mount, tmp_path):
    """A second fragment over part of the region, and cells no fragment
    wrote: pieces of two files and fill values, read exactly."""
    arr = make_sample(tmp_path, '256x2048', '16x2048')
    mnt = mount(arr, ['rw'])
    new = os.path.join(mnt, '__staging', 'new')
    os.mkdir(new)
    rows = numpy.full((16, 2048), -1.5, dtype='<f8')
    counts = numpy.arange(16 * 2048, dtype='<i4')
    rows.tofile(os.path.join(new, 'temperature'))
    counts.tofile(os.path.join(new, 'count'))
    with open(os.path.join(new, '__subarray.json'), 'w') as f:
        f.write('[[32, 47], [0, 2047]]')
    os.rename(new, os.path.join(mnt, '__fragments', 'new'))
    want = bytearray(expected_temperature(256, 2048))
    row = 2048 * 8
    want[32 * row:48 * row] = rows.tobytes()
    path = os.path.join(mnt, 'temperature')
    assert read_all(path, 1 << 20) == bytes(want)
    assert read_all(path, 100000) == bytes(want)


def corrupt_chunk(arr, tile, chunk, chunks_per_tile, tile_bytes):
    """Makes chunk `chunk` of tile `tile` of temperature's data file claim
    one byte less than it stores."""
    frag = glob.glob(os.path.join(arr, '__fragments', '*'))[0]
    path = os.path.join(frag, 'a0.tdb')
    per_tile = 8 + chunks_per_tile * 12 + tile_bytes
    pos = tile * per_tile + 8 + chunk * (12 + CHUNK)
    with open(path, 'r+b') as f:
        f.seek(pos)
        orig = struct.unpack('<I', f.read(4))[0]
        f.seek(pos)
        f.write(struct.pack('<I', orig - 1))


def test_damaged_chunk_header_is_eio(mount, tmp_path):
    arr = make_sample(tmp_path, '256x2048', '16x2048')   # 16 tiles of 256 KiB
    corrupt_chunk(arr, tile=3, chunk=1, chunks_per_tile=4, tile_bytes=16 * 2048 * 8)
    want = expected_temperature(256, 2048)
    mnt = mount(arr)
    path = os.path.join(mnt, 'temperature')
    tile = 16 * 2048 * 8
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.pread(fd, tile, 2 * tile) == want[2 * tile:3 * tile]
        with pytest.raises(OSError) as e:
            os.pread(fd, tile, 3 * tile)
        assert e.value.errno == errno.EIO
        assert os.pread(fd, tile, 4 * tile) == want[4 * tile:5 * tile]
    finally:
        os.close(fd)


def test_huge_pages_same_bytes(mount, tmp_path, cat_prog):
    """-o huge_pages: 256 KiB tiles decode into 2 MiB regions of huge pages
    (counted in huge_bytes, none without the option) and the bytes are
    the array's, read whole, at odd offsets, and again from the cache."""
    arr = make_sample(tmp_path, '512x2048', '16x2048')   # 256 KiB tiles
    want = expected_temperature(512, 2048)
    plain = mount(arr, ['no_splice'])
    assert read_all(os.path.join(plain, 'temperature'), 1 << 20) == want
    assert stats(plain)['huge_bytes'] == 0
    mnt = mount(arr, ['no_splice', 'huge_pages', 'cache_size=4M'])
    path = os.path.join(mnt, 'temperature')
    assert read_all(path, 1 << 20) == want
    st = stats(mnt)
    assert st['decodes'] >= 32
    if os.path.exists('/sys/kernel/mm/transparent_hugepage'):
        assert 0 < st['huge_bytes'] <= 6 << 20
    else:   # a kernel without them: malloc's memory, the same bytes
        assert st['huge_bytes'] == 0
    assert st['cache_used'] <= st['cache_budget']
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        for off, n in ((4093, 9000), (len(want) - 100, 1000), (12345, 1 << 20)):
            buf = mmap.mmap(-1, n)
            got = os.preadv(fd, [buf], off)
            assert buf[:got] == want[off:off + n]
    finally:
        os.close(fd)
    assert read_all(path, 1 << 20) == want
    r = run_cat(cat_prog, arr, 'temperature', ['huge_pages'])
    assert r.returncode == 0 and r.stdout == want
