"""test_parallel.py: var-sized files read through a fresh mount from several threads at once, the first access racing (the daemon serves them from its multithreaded loop); every thread must read the expected bytes (LAYOUT.md "An array")."""
import json
import os
import random
import struct
import subprocess
import threading

import pytest

from conftest import CAT_TIMEOUT, case_options, get_case

THREADS = 8
READS = 16
MOUNTS = 3      # fresh mounts per array: each first access races anew

# ------------------------------------------------------------------ helpers


def race(files, threads=THREADS):
    """THREADS threads stat and read random ranges of the files {path: bytes
    expected} at once: thread t starts with file t % len(files) (so that the
    first accesses to files sharing a merged view race too, not only those
    to one file, which the kernel serialises), then reads the others; half
    the threads stat first.  Returns the failures."""
    start = threading.Barrier(threads)
    failures = []
    lock = threading.Lock()
    items = sorted(files.items())

    def fail(msg):
        with lock:
            failures.append(msg)

    def stat_check(t, path, want):
        size = os.stat(path).st_size
        if size != len(want):
            fail(f'thread {t}: stat {path}: size {size}, expected {len(want)}')

    def reads(t, path, want):
        rng = random.Random(t)
        fd = os.open(path, os.O_RDONLY)
        try:
            for i in range(READS):
                if i == 0:
                    off, n = 0, len(want) + 1
                else:
                    off = rng.randrange(len(want)) if want else 0
                    n = 1 + rng.randrange(min(65536, max(1, len(want) - off)))
                got = os.pread(fd, n, off)
                if got != want[off:off + n]:
                    fail(f'thread {t}: {path} [{off}, +{n}): {len(got)} bytes differ '
                         f'from the expected {len(want[off:off + n])}')
                    return
        finally:
            os.close(fd)

    def main(t):
        try:
            start.wait()
            for k in range(len(items)):
                path, want = items[(t + k) % len(items)]
                if t % 2:
                    stat_check(t, path, want)
                    reads(t, path, want)
                else:
                    reads(t, path, want)
                    stat_check(t, path, want)
        except OSError as e:
            fail(f'thread {t}: {e}')

    ts = [threading.Thread(target=main, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return failures


def value(k, g):
    """Cell k's string in write g: 0 to 22 letters."""
    return bytes(ord('a') + (k + g + i) % 26 for i in range((k * 7 + g * 3) % 23))


def u64(values):
    return b''.join(struct.pack('<Q', v) for v in values)


def staged(keys, g):
    vals = [value(k, g) for k in keys]
    offs, total = [], 0
    for v in vals:
        offs.append(total)
        total += len(v)
    return {'d': b''.join(struct.pack('<q', k) for k in keys),
            's': b''.join(vals), 's.offsets': u64(offs)}


SCHEMA = {
    'array_type': 'sparse', 'capacity': 64, 'allows_duplicates': False,
    'dims': [{'name': 'd', 'datatype': 'INT64', 'domain': [0, 99999], 'tile_extent': 1000}],
    'attrs': [{'name': 's', 'datatype': 'STRING_ASCII', 'cell_val_num': 'var'}],
}

# -------------------------------------------------------------------- tests


def test_written_var_file(create_prog, mount, tmp_path):
    """A sparse array of two overlapping writes (the second wins where they
    meet, over 4096 cells: more than one checkpoint), committed through a rw
    mount; fresh read-only mounts are read by eight threads at once."""
    schema = tmp_path / 'schema.json'
    schema.write_text(json.dumps(SCHEMA))
    arr = str(tmp_path / 'arr')
    r = subprocess.run([create_prog, str(schema), arr], capture_output=True,
                       timeout=CAT_TIMEOUT)
    assert r.returncode == 0, r.stderr.decode(errors='replace')
    writes = [list(range(0, 6000)), list(range(3000, 9000, 2))]
    mnt = mount(arr, ['rw'])
    for g, keys in enumerate(writes, 1):
        folder = os.path.join(mnt, '__staging', f'w{g}')
        os.mkdir(folder)
        for name, data in staged(keys, g).items():
            with open(os.path.join(folder, name), 'wb') as f:
                f.write(data)
        os.rename(folder, os.path.join(mnt, '__fragments', f'w{g}'))
    assert not mount.unmount(mnt)

    newest = {}
    for g, keys in enumerate(writes, 1):
        for k in keys:
            newest[k] = g
    vals = [value(k, newest[k]) for k in sorted(newest)]
    offs, total = [], 0
    for v in vals:
        offs.append(total)
        total += len(v)

    want = {'s': b''.join(vals), 's.offsets': u64(offs),
            'd': b''.join(struct.pack('<q', k) for k in sorted(newest))}
    for _ in range(MOUNTS):
        mnt = mount(arr)        # fresh: nothing computed yet
        assert race({os.path.join(mnt, p): b for p, b in want.items()}) == []
        assert not mount.unmount(mnt)


@pytest.mark.parametrize('name, paths', [
    ('dense_var_nullable', ['n_str', 'n_str.offsets', 's_utf8', 's_utf8.offsets']),
    ('sparse_int64_2d', ['s', 's.offsets', 'x', 'n']),
    ('sparse_string_dim', ['key', 'key.offsets', 'u', 'v']),
    ('sparse_dups', ['s', 's.offsets', 'a', 'x']),
])
def test_corpus_var_files(name, paths, mount, tmp_path):
    """Var-sized files of a corpus array (and files sharing their view) read
    by eight threads right after mounting, thrice."""
    case = get_case(name)
    want = {p: case.expected(p) for p in paths}
    for _ in range(MOUNTS):
        mnt = mount(case.array, case_options(case, tmp_path))
        assert race({os.path.join(mnt, p): b for p, b in want.items()}) == []
        assert not mount.unmount(mnt)
