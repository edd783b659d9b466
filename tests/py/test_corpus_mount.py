"""test_corpus_mount.py: the corpus through a real FUSE mount: cat-style reads, numpy reads of dense arrays, random preads, read-only and start-up errors."""
import errno
import os
import random
import subprocess
import tempfile

import numpy
import pytest

from conftest import MOUNT_TIMEOUT, background_mount, case_options, fuse_missing, get_case

PREAD_COUNT = 40         # random ranges per case
PREAD_MAX = 70000        # longest range (crosses tiles and FUSE's 128 KiB reads)


def read_all(path):
    with open(path, 'rb') as f:
        return f.read()


def test_mount_matches_expected(case, mount, tmp_path):
    mnt = mount(case.array, case_options(case, tmp_path))
    fails = []
    for path in case.expected_paths:
        exp = case.expected(path)
        try:
            got = read_all(os.path.join(mnt, path))
        except OSError as e:
            fails.append(f'{path}: {e}')
            continue
        if got != exp:
            fails.append(f'{path}: {len(got)} bytes, expected {len(exp)}')
            continue
        size = os.stat(os.path.join(mnt, path)).st_size
        if size != len(exp):
            fails.append(f'{path}: st_size {size}, expected {len(exp)}')
    assert not fails, (f'{case.name}: {len(fails)} of {len(case.expected_paths)} files differ:\n  '
                       + '\n  '.join(fails))


def test_ls_l_of_the_made_folders(mount):
    """ls -l asks each entry for its ACL: the folders the mount makes
    (__meta, __slice, __domain, empty here) answer that they have none,
    and ls says nothing on stderr (it printed "Stale file handle" for
    each: an empty folder was taken for a dropped number)."""
    case = get_case('dense_1d_basic')
    mnt = mount(case.array)
    r = subprocess.run(['ls', '-l', mnt, os.path.join(mnt, '__meta'),
                        os.path.join(mnt, '__slice')], capture_output=True,
                       timeout=MOUNT_TIMEOUT)
    assert r.returncode == 0 and r.stderr == b'', r.stderr
    for name in ('__meta', '__slice', '__domain'):
        with pytest.raises(OSError) as e:
            os.getxattr(os.path.join(mnt, name), 'system.posix_acl_access')
        assert e.value.errno == errno.ENODATA, (name, e.value)


def fixed_attrs(case):
    """Top-level files of a dense case's fixed-size attributes."""
    out = []
    for name, f in case.fields().items():
        if f.get('role') != 'attr' or not isinstance(f.get('cell_val_num'), int):
            continue
        if name in case.expected_paths:
            out.append((name, f))
    return out


def test_mount_numpy(case, mount, tmp_path):
    if not case.dense:
        pytest.skip('not a dense array')
    attrs = fixed_attrs(case)
    if not attrs:
        pytest.skip('no fixed-size attribute')
    mnt = mount(case.array, case_options(case, tmp_path))
    for name, f in attrs:
        path = os.path.join(mnt, name)
        dtype = numpy.dtype(os.getxattr(path, 'user.tiledb.dtype').decode())
        assert dtype == numpy.dtype(f['dtype']), f'{name}: xattr dtype {dtype}, case says {f["dtype"]}'
        shape_x = os.getxattr(path, 'user.tiledb.shape').decode()
        shape = tuple(int(x) for x in shape_x.split(','))
        assert list(shape[:len(case.info['view_shape'])]) == case.info['view_shape'], \
            f'{name}: xattr shape {shape_x}, case says {case.info["view_shape"]}'
        cvn = f['cell_val_num']
        if cvn > 1 and len(shape) == len(case.info['view_shape']):
            shape = shape + (cvn,)
        got = numpy.fromfile(path, dtype=dtype)
        exp = numpy.frombuffer(case.expected(name), dtype=dtype)
        assert got.size == exp.size, f'{name}: {got.size} values, expected {exp.size}'
        got = got.reshape(shape)
        exp = exp.reshape(shape)
        assert got.tobytes() == exp.tobytes(), f'{name}: values differ'


def test_mount_random_pread(case, mount, tmp_path):
    files = [(p, case.expected(p)) for p in case.expected_paths]
    files = [(p, e) for p, e in files if e]
    if not files:
        pytest.skip('no non-empty expected file')
    mnt = mount(case.array, case_options(case, tmp_path))
    rng = random.Random(f'tiledbfs:{case.name}')
    fails = []
    for _ in range(PREAD_COUNT):
        path, exp = rng.choice(files)
        off = rng.randrange(0, len(exp) + 1)
        length = rng.randint(1, min(PREAD_MAX, len(exp)) + 16)
        fd = os.open(os.path.join(mnt, path), os.O_RDONLY)
        try:
            got = os.pread(fd, length, off)
        except OSError as e:
            fails.append(f'{path} [{off}, +{length}): {e}')
            continue
        finally:
            os.close(fd)
        if got != exp[off:off + length]:
            fails.append(f'{path} [{off}, +{length}): {len(got)} bytes, '
                         f'expected {len(exp[off:off + length])}')
    assert not fails, f'{case.name}: ' + '; '.join(fails[:10])


def test_mount_is_read_only(corpus, mount, tmp_path):
    c = get_case('dense_1d_basic')
    mnt = mount(c.array, case_options(c, tmp_path))
    attr = os.path.join(mnt, 'a')
    attempts = [
        ('open a for writing', lambda: open(attr, 'r+b').close()),
        ('truncate a', lambda: os.truncate(attr, 0)),
        ('create a file', lambda: open(os.path.join(mnt, 'new'), 'wb').close()),
        ('mkdir', lambda: os.mkdir(os.path.join(mnt, 'newdir'))),
        ('unlink a', lambda: os.unlink(attr)),
        ('rename a', lambda: os.rename(attr, os.path.join(mnt, 'b2'))),
        ('setxattr', lambda: os.setxattr(attr, 'user.x', b'1')),
        ('removexattr', lambda: os.removexattr(attr, 'user.tiledb.datatype')),
    ]
    wrong = []
    for what, fn in attempts:
        try:
            fn()
            wrong.append(f'{what}: succeeded')
        except OSError as e:
            if e.errno != errno.EROFS:
                wrong.append(f'{what}: {errno.errorcode.get(e.errno, e.errno)}, expected EROFS')
    assert not wrong, '; '.join(wrong)
    assert read_all(attr) == c.expected('a')


def start_error(fs_prog, source):
    """Runs tiledbfs on a bad SOURCE; returns (exit code, stderr, mountpoint)."""
    mnt = tempfile.mkdtemp(prefix='tiledbfs-mnt-')
    try:
        proc = subprocess.run([fs_prog, source, mnt], capture_output=True, timeout=30)
    finally:
        mounted = os.path.ismount(mnt)
        if mounted:
            subprocess.run(['fusermount3', '-u', '-z', mnt], capture_output=True)
    os.rmdir(mnt)
    return proc.returncode, proc.stderr.decode(errors='replace'), mounted


def check_one_line_error(rc, err, mounted, source):
    assert not mounted, f'tiledbfs mounted {source}'
    assert rc == 1, f'exit {rc}, expected 1; stderr: {err!r}'
    lines = err.strip('\n').split('\n')
    assert len(lines) == 1 and lines[0].strip(), f'expected a one-line error, got {err!r}'


def test_missing_source_fails(fs_prog, tmp_path):
    source = str(tmp_path / 'does-not-exist')
    rc, err, mounted = start_error(fs_prog, source)
    check_one_line_error(rc, err, mounted, source)
    assert 'does-not-exist' in err


def test_non_tiledb_folder_fails(fs_prog, tmp_path):
    source = tmp_path / 'plain'
    source.mkdir()
    (source / 'notes.txt').write_text('not an array\n')
    rc, err, mounted = start_error(fs_prog, str(source))
    check_one_line_error(rc, err, mounted, str(source))
    assert 'plain' in err


def test_background_daemon_exits_when_unmounted(fs_prog, tmp_path):
    """A daemon started as an ordinary mount (it forks to the background)
    that has read every file of a group, sparse arrays of many fragments
    among them, exits when its mount is unmounted.  Its threads are made
    after the fork: a pool made before it would have none, and the exit
    would wait for them for ever."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    case = get_case('group_basic')
    mnt = str(tmp_path / 'mnt')
    os.mkdir(mnt)
    with background_mount(fs_prog, case.array, mnt):
        read = 0
        for root, dirs, files in os.walk(mnt):
            for name in files:
                with open(os.path.join(root, name), 'rb') as f:
                    read += len(f.read())
        assert read > 0
