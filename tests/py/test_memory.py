"""test_memory.py: a mount's memory stays within its cache budget whatever
the number of writes (one tile cache per mount, shared by the trees that
each write opens; a replaced tree is closed once nothing uses it) and
whatever the number of readers (reads wait for room in the cache rather
than hold tiles beyond it)."""
import mmap
import os
import random
import threading

import numpy

from conftest import make_sample


def vm_kib(pid, field):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise AssertionError(f'no {field} in /proc/{pid}/status')


def daemon_pid(mount, mnt):
    return next(p.pid for m, p, _ in mount.active if m == mnt)


def test_rss_bounded_over_writes(mount, tmp_path):
    """40 metadata writes, the whole 8 MiB field read between them, with
    cache_size=4M: the daemon's resident memory stays under the budget plus
    32 MiB (it grew by a whole cache per write when each tree had its own
    and replaced trees lived until the kernel forgot their inodes)."""
    arr = make_sample(tmp_path)
    mnt = mount(arr, ['rw', 'cache_size=4M'])
    pid = daemon_pid(mount, mnt)
    path = os.path.join(mnt, 'temperature')
    want = numpy.fromfile(path, '<f8')
    r, c = numpy.mgrid[0:1024, 0:1024]
    assert numpy.array_equal(want.reshape(1024, 1024), 20 + r + c / 10)
    for i in range(40):
        with open(os.path.join(mnt, '__meta', f'k{i}'), 'wb') as f:
            f.write(b'v%d' % i)
        assert numpy.array_equal(numpy.fromfile(path, '<f8'), want), f'after write {i}'
    with open(os.path.join(mnt, '__meta', 'k39'), 'rb') as f:
        assert f.read() == b'v39'
    rss = vm_kib(pid, 'VmRSS')
    assert rss <= (4 + 32) * 1024, f'daemon RSS {rss} KiB after 40 writes, cache_size=4M'


def test_open_file_survives_write(mount, tmp_path):
    """A file open before a write keeps reading the tree it was opened in
    (that tree is closed only when nothing uses it), and a new open sees the
    new tree."""
    arr = make_sample(tmp_path, '256x256')
    mnt = mount(arr, ['rw', 'cache_size=1M'])
    path = os.path.join(mnt, 'count')
    want = numpy.arange(256 * 256, dtype='<i4').tobytes()
    with open(path, 'rb', buffering=0) as f:
        head = f.read(4096)
        with open(os.path.join(mnt, '__meta', 'units'), 'wb') as m:
            m.write(b'K')
        rest = f.read()
    assert head + rest == want
    with open(os.path.join(mnt, '__meta', 'units'), 'rb') as m:
        assert m.read() == b'K'
    with open(path, 'rb') as f:
        assert f.read() == want


READERS = 16
READS = 12


def random_reader(path, seed, cols, failures):
    """READS random reads of 1 MiB or of a tile's 4 MiB at any offset, each
    compared with the values 20 + r + c / 10; the pages dropped after each,
    so the next read goes to the daemon."""
    rng = random.Random(seed)
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            for i in range(READS):
                n = (4 << 20) if i % 4 == 3 else (1 << 20)
                off = rng.randrange(0, size - n) // 8 * 8
                got = numpy.frombuffer(os.pread(fd, n, off), '<f8')
                cell = numpy.arange(off // 8, off // 8 + n // 8)
                want = 20 + cell // cols + (cell % cols) / 10
                if not numpy.array_equal(got, want):
                    failures.append(f'reader {seed}: wrong bytes at {off}')
                    return
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    except OSError as e:
        failures.append(f'reader {seed}: {e}')


def test_rss_bounded_with_16_readers(mount, tmp_path):
    """16 readers at once, random reads of 1 MiB and 4 MiB of a FLOAT64
    field in 4 MiB tiles (a row of tiles: 16 MiB), cache_size=4M: the
    daemon's peak resident memory (VmHWM) stays under the budget plus
    32 MiB, however the reads interleave (reads once held their rows of
    tiles pinned beyond the budget: about 100 MB with one reader, over
    300 MB with 16)."""
    cols = 4096
    arr = make_sample(tmp_path, f'1024x{cols}', '512x1024')
    mnt = mount(arr, ['cache_size=4M'])
    pid = daemon_pid(mount, mnt)
    path = os.path.join(mnt, 'temperature')
    failures = []
    threads = [threading.Thread(target=random_reader, args=(path, i, cols, failures))
               for i in range(READERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
        assert not t.is_alive(), 'a reader still waits after 600 s'
    assert not failures, failures
    hwm = vm_kib(pid, 'VmHWM')
    print(f'{READERS} readers, cache_size=4M: daemon VmHWM {hwm} KiB')
    assert hwm <= (4 + 32) * 1024, f'daemon VmHWM {hwm} KiB with {READERS} readers, cache_size=4M'


def cache_stats(mnt):
    v = os.getxattr(mnt, 'user.tiledbfs.stats').decode()
    return dict((k, int(x)) for k, x in (p.split('=') for p in v.split()))


def test_file_larger_than_cache_leaves_no_tiles(mount, tmp_path):
    """A file larger than cache_size read from start to end in order: each
    tile it passed is let go at once (a re-read could find none of them, and they
    would push out other files' tiles), so none stays once the read ends;
    a file the cache can hold keeps its tiles, and a re-read decodes
    nothing.  The bytes are the array's either way."""
    arr = make_sample(tmp_path)                   # 8 MiB, 128 KiB tiles
    r, c = numpy.mgrid[0:1024, 0:1024]
    want = (20 + r + c / 10).astype('<f8')
    small = mount(arr, ['cache_size=4M'])
    # O_DIRECT, 1 MiB at a time: the reads reach the daemon in order (a
    # buffered reader's read-ahead may send a few out of order, and those
    # let their tiles go as any read does)
    fd = os.open(os.path.join(small, 'temperature'), os.O_RDONLY | os.O_DIRECT)
    buf, got = mmap.mmap(-1, 1 << 20), bytearray()
    try:
        while True:
            n = os.preadv(fd, [buf], len(got))
            if n <= 0:
                break
            got += buf[:n]
    finally:
        os.close(fd)
    assert bytes(got) == want.tobytes()
    st = cache_stats(small)
    assert st['decodes'] >= 64
    assert st['entries'] <= 1, st
    big = mount(arr, ['cache_size=32M'])
    path = os.path.join(big, 'temperature')
    assert numpy.array_equal(numpy.fromfile(path, '<f8').reshape(1024, 1024), want)
    st = cache_stats(big)
    assert st['decodes'] == 64 and st['entries'] == 64, st
    assert numpy.array_equal(numpy.fromfile(path, '<f8').reshape(1024, 1024), want)
    assert cache_stats(big)['decodes'] == 64
