"""test_memory.py: a writable mount's memory stays within its cache budget
whatever the number of writes (one tile cache per mount, shared by the trees
that each write opens; a replaced tree is closed once nothing uses it)."""
import os
import subprocess

import numpy

from conftest import CAT_TIMEOUT

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(TOP, 'scripts', 'make_sample.py')


def vm_kib(pid, field):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise AssertionError(f'no {field} in /proc/{pid}/status')


def sample(tmp_path, shape='1024x1024'):
    arr = str(tmp_path / 'arr')
    subprocess.run(['/usr/bin/python3', SAMPLE, '--shape', shape, '--tile', '128x128', arr],
                   check=True, capture_output=True, timeout=CAT_TIMEOUT)
    return arr


def daemon_pid(mount, mnt):
    return next(p.pid for m, p, _ in mount.active if m == mnt)


def test_rss_bounded_over_writes(mount, tmp_path):
    """40 metadata writes, the whole 8 MiB field read between them, with
    cache_size=4M: the daemon's resident memory stays under the budget plus
    32 MiB (it grew by a whole cache per write when each tree had its own
    and replaced trees lived until the kernel forgot their inodes)."""
    arr = sample(tmp_path)
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
    arr = sample(tmp_path, '256x256')
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
