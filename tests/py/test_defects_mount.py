"""test_defects_mount.py: errors that tell the truth (issue 27, points 5 to 11) on a real mount: one spelling per __meta key (5), EIO and a log line for a file whose fragment was vacuumed (6), cache sizes of 0 refused (7), an AWS file the options name that cannot be read says why (8), no write bit for other users on a rw mount whatever umask= says (9), S3 options given with a local SOURCE warned of (10), and __slice/ names kept in a bounded table (11)."""
import errno
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import MOUNT_TIMEOUT, Mounts, get_case, make_sample, run_cat
from test_security import as_nobody

# ---------------------------------------------------------------- helpers


def stats(mnt):
    v = os.getxattr(mnt, 'user.tiledbfs.stats').decode()
    return dict((k, int(x)) for k, x in (p.split('=') for p in v.split()))


def one_line_error(r, *needles):
    """r failed with one line on stderr holding every needle."""
    err = r.stderr.decode(errors='replace').strip()
    assert r.returncode != 0 and len(err.split('\n')) == 1, (r.returncode, err)
    for n in needles:
        assert n in err, err
    return err


def errno_of(fn):
    try:
        fn()
    except OSError as e:
        return e.errno
    return 0


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def rw_mount(mount, tmp_path, opts=()):
    arr = make_sample(tmp_path, '8x6', '8x6')
    return arr, mount(arr, ['rw', 'staging_dir=' + str(tmp_path / 'staging')] + list(opts))


# ------------------------------------------- 5: one spelling per __meta key

# (key, the one name __meta/ shows it under, spellings of it no key has)
ESCAPES = [
    ('/', '%2F', ['%2f']),
    ('100%', '100%25', []),
    ('x/y%z', 'x%2Fy%25z', ['x%2fy%25z']),
    ('.', '%2E', ['%2e']),
    ('..', '%2E.', ['%2e.']),
    ('__attr', '%5F_attr', ['%5f_attr']),
    ('', '__attr', []),
]


@pytest.mark.parametrize('key,shown,others', ESCAPES,
                         ids=[e[1] for e in ESCAPES])
def test_meta_names_one_spelling(mount, tmp_path, key, shown, others):
    """Writing, reading and removing agree on each escape of __meta/: the
    name the key is listed under sets, reads and deletes it; another
    spelling of it (hex digits in lower case) is no name of a key: writing
    it is EINVAL (as for %41), reading and removing it ENOENT, and the key
    stays as it was."""
    _, mnt = rw_mount(mount, tmp_path)
    meta = os.path.join(mnt, '__meta')
    before = sorted(os.listdir(meta))
    write(os.path.join(meta, shown), b'v1')
    assert sorted(os.listdir(meta)) == sorted(before + [shown])
    assert read(os.path.join(meta, shown)) == b'v1'
    for o in others:
        p = os.path.join(meta, o)
        assert errno_of(lambda: write(p, b'v2')) == errno.EINVAL, o
        assert errno_of(lambda: read(p)) == errno.ENOENT, o
        assert errno_of(lambda: os.unlink(p)) == errno.ENOENT, o
        assert read(os.path.join(meta, shown)) == b'v1'
        assert sorted(os.listdir(meta)) == sorted(before + [shown])
    os.unlink(os.path.join(meta, shown))
    assert sorted(os.listdir(meta)) == before
    assert errno_of(lambda: read(os.path.join(meta, shown))) == errno.ENOENT


# ------------------------------------ 6: a vacuumed fragment: EIO and a log


def test_vacuumed_fragment_read_is_eio_and_logged(mount, tmp_path):
    """A file whose fragment was removed under the mount (a vacuum) fails
    to read with EIO, not ENOENT (ls still shows it), and the daemon logs
    a line naming the fragment's file."""
    arr = make_sample(tmp_path, '64x64', '16x16')
    mnt = mount(arr)
    frag, = os.listdir(os.path.join(arr, '__fragments'))
    shutil.rmtree(os.path.join(arr, '__fragments', frag))
    names = ['count', 'temperature.npy', f'__fragments/{frag}/temperature',
             '__slice/count[0:2].npy']
    for name in names:
        p = os.path.join(mnt, name)
        if not name.startswith('__slice/'):     # made on lookup: not listed
            assert os.path.basename(name) in os.listdir(os.path.dirname(p))
        assert errno_of(lambda: read(p)) == errno.EIO, name
    _, proc, errpath = mount.active[-1]
    with open(errpath, 'rb') as f:
        log = f.read().decode(errors='replace')
    lines = [ln for ln in log.splitlines() if frag in ln]
    assert len(lines) >= len(names), log
    assert all(f'__fragments/{frag}/' in ln for ln in lines), log


def test_vacuumed_fragment_stat_of_var_sized_is_eio(mount, tmp_path):
    """The size of a var-sized values file needs its offsets: with the
    fragment removed, stat (the lookup) of such a file is EIO too, logged,
    not ENOENT for a file the folder lists."""
    case = get_case('dense_var_nullable')
    arr = str(tmp_path / 'arr')
    shutil.copytree(case.array, arr)
    mnt = mount(arr)
    listed = os.listdir(mnt)
    for frag in os.listdir(os.path.join(arr, '__fragments')):
        shutil.rmtree(os.path.join(arr, '__fragments', frag))
    for name in ('s_ascii', 'n_str', 's_utf8.npy'):
        assert name in listed
        assert errno_of(lambda: os.stat(os.path.join(mnt, name))) == errno.EIO, name
    with open(mount.active[-1][2], 'rb') as f:
        log = f.read().decode(errors='replace')
    assert log.count('__fragments/__') >= 3, log


# ------------------------------------------------ 7: sizes of 0 are refused

ZERO_SIZES = ['cache_size=0', 'disk_cache_size=0', 's3_readahead=0', 'cache_size=0K']


@pytest.mark.parametrize('opt', ZERO_SIZES)
def test_zero_size_refused(cat_prog, fs_prog, tmp_path, opt):
    """An explicit size of 0 (which the engine would read as its default,
    256 MiB or 1 GiB) is refused with one line naming the option, by
    tiledbfs-cat and by the daemon before it mounts."""
    arr = make_sample(tmp_path, '8x6', '8x6')
    r = run_cat(cat_prog, arr, 'temperature', [opt])
    one_line_error(r, opt, 'above 0')
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    r = subprocess.run([fs_prog, '-f', '-o', opt, arr, str(mnt)],
                       capture_output=True, timeout=MOUNT_TIMEOUT)
    one_line_error(r, opt, 'above 0')
    assert not os.path.ismount(str(mnt))


# ------------------------------- 8: an AWS file that cannot be read says why


def aws_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith('AWS_')}
    env['HOME'] = str(tmp_path)
    return env


@pytest.mark.parametrize('option', ['credentials_file', 'config_file'])
def test_aws_file_unreadable_says_why(cat_prog, tmp_path, option):
    """credentials_file= or config_file= naming a folder, a FIFO or a file
    too large is a one-line error saying that the option's file cannot be
    read, and why (not "profile default: in neither ...", nor read as
    empty, nor a read that waits on a FIFO)."""
    folder = tmp_path / 'afolder'
    folder.mkdir()
    fifo = str(tmp_path / 'afifo')
    os.mkfifo(fifo)
    big = tmp_path / 'big'
    big.write_bytes(b'#' * (2 << 20))
    env = aws_env(tmp_path)
    for path, why in ((str(folder), 'it is a folder'), (fifo, 'not a regular file'),
                      (str(big), 'larger than 1 MiB'),
                      (str(tmp_path / 'none'), 'No such file')):
        r = subprocess.run([cat_prog, '-o', f'{option}={path},endpoint=http://127.0.0.1:1,'
                            's3_timeout=2', 's3://bucket/arr', '__array.json'],
                           capture_output=True, env=env, timeout=30)
        one_line_error(r, f'{option}={path}: cannot read it: ', why)


# ------------------------------------- 9: rw: only the owner writes, always


def test_rw_umask_000_others_cannot_write(fs_prog, tmp_path):
    """-o rw,allow_other,umask=000: umask= takes bits away and never adds
    write bits for others: folders show 0755, __meta/ files 0644, data
    files 0444, __staging 0700; another user (uid 65534) reads the array
    but cannot write, replace or delete a __meta key, nor stage."""
    arr = make_sample(tmp_path, '8x6', '8x6')
    top = tempfile.mkdtemp(prefix='tiledbfs-defects-')
    os.chmod(top, 0o755)     # a mountpoint the other user can reach
    mounts = Mounts(fs_prog, top)
    try:
        mnt = mounts(arr, ['rw', 'allow_other', 'umask=000',
                           'staging_dir=' + str(tmp_path / 'staging')])
        for name, mode in (('', 0o755), ('__meta', 0o755), ('__meta/units', 0o644),
                           ('__fragments', 0o755), ('temperature', 0o444),
                           ('__staging', 0o700)):
            got = stat.S_IMODE(os.stat(os.path.join(mnt, name)).st_mode)
            assert got == mode, f'{name}: {oct(got)}'
        units = read(os.path.join(mnt, '__meta', 'units'))
        code = r'''
import errno, os, sys
mnt = sys.argv[1]
def attempt(what, fn):
    try:
        fn()
        print(what, 'ok')
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e.errno)))
def write(p, b):
    with open(p, 'wb') as f:
        f.write(b)
attempt('read', lambda: open(os.path.join(mnt, 'temperature'), 'rb').read())
attempt('new-key', lambda: write(os.path.join(mnt, '__meta', 'theirs'), b'x'))
attempt('replace-key', lambda: write(os.path.join(mnt, '__meta', 'units'), b'x'))
attempt('append-key', lambda: open(os.path.join(mnt, '__meta', 'units'), 'ab').write(b'x'))
attempt('delete-key', lambda: os.unlink(os.path.join(mnt, '__meta', 'units')))
attempt('stage', lambda: os.mkdir(os.path.join(mnt, '__staging', 'theirs')))
attempt('fragment', lambda: os.mkdir(os.path.join(mnt, '__fragments', 'theirs')))
'''
        rc, out = as_nobody(code, mnt)
        assert rc == 0, out
        got = dict(line.split(' ', 1) for line in out.strip().split('\n'))
        assert got.pop('read') == 'ok', out
        for what, e in got.items():
            assert e in ('EACCES', 'EPERM'), f'{what}: {e}'
        assert sorted(os.listdir(os.path.join(mnt, '__meta'))) == ['units']
        assert read(os.path.join(mnt, '__meta', 'units')) == units
        # the owner still writes
        write(os.path.join(mnt, '__meta', 'mine'), b'y')
        assert read(os.path.join(mnt, '__meta', 'mine')) == b'y'
    finally:
        problems = mounts.close()
        shutil.rmtree(top, ignore_errors=True)
    assert not problems, '; '.join(problems)


# -------------------------------- 10: S3 options with a local SOURCE: said


def test_s3_options_local_source_warned(cat_prog, mount, tmp_path):
    """endpoint=, disk_cache= (and the other s3:// options) given with a
    local SOURCE are not silently ignored: one line at start names them;
    the files read as without them, and no disk cache folder is made."""
    arr = make_sample(tmp_path, '8x6', '8x6')
    plain = run_cat(cat_prog, arr, 'temperature')
    assert plain.returncode == 0 and plain.stderr == b''
    dc = str(tmp_path / 'dc')
    r = run_cat(cat_prog, arr, 'temperature',
                ['endpoint=http://127.0.0.1:1', 'disk_cache=' + dc])
    assert r.returncode == 0 and r.stdout == plain.stdout
    err = r.stderr.decode()
    assert len(err.strip().split('\n')) == 1, err
    assert "endpoint=, disk_cache= are only for an object store's SOURCE" in err, err
    assert not os.path.exists(dc)
    mnt = mount(arr, ['region=x', 's3_requests=4', 'disk_cache_size=1M'])
    assert read(os.path.join(mnt, 'temperature')) == plain.stdout
    with open(mount.active[-1][2], 'rb') as f:
        log = f.read().decode()
    assert "region=, s3_requests=, disk_cache_size= are only for an object store's SOURCE" in log, log


# ------------------------------------------- 11: __slice/ names, bounded


def vm_kib(pid, field):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return 0


def test_slice_names_bounded(mount, tmp_path):
    """Distinct __slice/ and __domain/ names, 20,000 of them (any user of an
    allow_other mount may make them): the daemon keeps at most
    slices_idle_max idle ones (cache_size=1M: 64) plus those open, drops
    the oldest (slice_evictions), and its memory does not grow with the
    names; a slice dropped is made again at its next lookup with the same
    bytes, and one held open reads on whatever is dropped meanwhile."""
    arr = make_sample(tmp_path, '8x6', '8x6')
    mnt = mount(arr, ['cache_size=1M'])
    pid = mount.active[-1][1].pid
    s0 = stats(mnt)
    keep = s0['slices_idle_max']
    assert keep == 64 and s0['slices'] == 0, s0
    first = os.path.join(mnt, '__slice', 'temperature[1:3,::2].npy')
    want = read(first)
    held = open(os.path.join(mnt, '__domain', 'count[2:5].npy'), 'rb')
    held_want = read(held.name)
    rss0 = vm_kib(pid, 'VmRSS')
    n = 20000
    for i in range(n):
        a, b, c = i % 8, (i // 8) % 6, i // 48
        d = '__slice' if i % 2 else '__domain'
        os.stat(os.path.join(mnt, d, f'temperature[{a}:{a + 1},{b}:{b + 1}:{c + 1}].npy'))
    grown = vm_kib(pid, 'VmRSS') - rss0
    s = stats(mnt)
    assert s['slices'] <= keep + 1, s                    # the idle ones and the open one
    assert s['slice_evictions'] >= n + 2 - (keep + 1), s
    assert grown < 16 << 10, f'the daemon grew {grown} KiB for {n} slice names'
    assert read(held.name) == held_want
    held.seek(0)
    assert held.read() == held_want                      # held open: never dropped
    held.close()
    assert read(first) == want                           # dropped, then made again
