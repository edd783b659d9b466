"""test_disk_cache.py: the README's "Security model" of -o disk_cache=DIR (format/core/io_s3_disk.c): a folder that is a symbolic link, not the mounting user's or writable by group or others is refused; it is made 0700; a link inside it is never followed (for reading, writing or removing); and only the cache's own pieces are ever removed, whatever else the folder holds.  Each test runs on s3rver and on Azurite (the cache is the object stores' own, whatever the protocol).  The planted folders and links are made by another user (uid 65534) where the tests run as root."""
import os
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import (CAT_TIMEOUT, CORPUS, MOUNT_TIMEOUT, NO_CORPUS, fuse_missing, get_case,
                      for_nobody, point_at)

NOBODY = 65534
CASE = 'dense_1d_basic'
HEX = '0123456789abcdef' * 4     # 64 hex digits: a piece's name is XX/ and 62


def become_nobody():
    """preexec_fn: the child runs as uid/gid 65534, no groups."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def as_nobody(code, *args):
    """Runs python `code` (argv[1:] = args) as uid 65534; asserts it
    succeeded."""
    r = subprocess.run(['/usr/bin/python3', '-c', code] + [str(a) for a in args],
                       preexec_fn=become_nobody, capture_output=True, timeout=CAT_TIMEOUT)
    assert r.returncode == 0, r.stderr.decode(errors='replace')


@pytest.fixture(params=['s3rver', 'azurite'])
def cache_store(request, s3_servers, monkeypatch):
    """The s3rver of the session, then Azurite (the disk cache is the same
    whatever the S3 server; Azure is another protocol before it), the
    programs pointed at it."""
    return point_at(s3_servers.get(request.param), monkeypatch)


@pytest.fixture
def array_url(cache_store, tmp_path):
    """dense_1d_basic in the bucket (container): its s3:// (azure://) URL."""
    if not os.path.isdir(CORPUS):
        pytest.skip(NO_CORPUS)
    prefix = f'{tmp_path.name}/{CASE}'
    cache_store.upload(get_case(CASE).array, prefix)
    return cache_store.url(prefix)


@pytest.fixture
def open_top():
    """A folder every user can reach (pytest's folders are 0700), with
    `home`, a folder of uid 65534's own."""
    if os.geteuid() != 0:
        pytest.skip('planting as another user needs root')
    top = tempfile.mkdtemp(prefix='tiledbfs-dcache-')
    os.chmod(top, 0o755)
    home = os.path.join(top, 'home')
    os.mkdir(home, 0o700)
    os.chown(home, NOBODY, NOBODY)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def start(fs_prog, source, mnt, opts):
    """Starts `tiledbfs -f -o OPTS SOURCE MNT`: (exit status, stderr) when it
    exits, or (None, '') once mounted (then unmounted again: a mount that
    should have been refused)."""
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([fs_prog, '-f', '-o', ','.join(opts), source, mnt],
                            stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + MOUNT_TIMEOUT
    while proc.poll() is None and not os.path.ismount(mnt) and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        subprocess.run(['fusermount3', '-u', '-z', mnt], capture_output=True)
        try:
            proc.wait(timeout=MOUNT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return None, ''
    err.seek(0)
    return proc.returncode, err.read().decode(errors='replace')


def snapshot(top):
    """Every entry under `top`: {relative path: (kind, size, mtime, bytes
    of a small file or a link's target)}."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            elif stat.S_ISREG(st.st_mode) and st.st_size < 1 << 20:
                with open(p, 'rb') as f:
                    what = f.read()
            else:
                what = None
            out[os.path.relpath(p, top)] = (stat.S_IFMT(st.st_mode), st.st_size,
                                            st.st_mtime_ns, what)
    return out


def read_tree(mnt):
    out = {}
    for d, _, files in os.walk(mnt):
        for n in files:
            with open(os.path.join(d, n), 'rb') as f:
                out[os.path.relpath(os.path.join(d, n), mnt)] = f.read()
    return out


def cache_files(cache):
    """The files (not links) under the cache's subfolders that are real
    folders: {XX/NAME: size}."""
    out = {}
    for sub in os.listdir(cache):
        p = os.path.join(cache, sub)
        if os.path.isdir(p) and not os.path.islink(p):
            for n in os.listdir(p):
                q = os.path.join(p, n)
                if os.path.isfile(q) and not os.path.islink(q):
                    out[f'{sub}/{n}'] = os.path.getsize(q)
    return out


# ------------------------------------------------------ the folder itself

PLANT = r'''
import os, sys
cache, secret = sys.argv[1], sys.argv[2]
os.mkdir(cache)                       # 0755: the planter's, as left by mkdir
os.symlink(secret, os.path.join(cache, '00'))
os.mkdir(os.path.join(cache, '01'))
big = os.path.join(cache, '01', sys.argv[3])
with open(big, 'wb') as f:            # 2 GiB, sparse, dated a year ahead
    f.truncate(2 << 30)
t = os.stat(big).st_mtime + 365 * 86400
os.utime(big, (t, t))
'''


def test_planted_folder_refused(fs_prog, array_url, open_top):
    """Issue 27's attack: uid 65534 makes the cache folder first, with 00 a
    link to a root-only folder and a 2 GiB sparse file dated ahead in 01/;
    root mounts with disk_cache= that folder and the default bound.  The
    mount is refused (the folder is not root's); before, its scan followed
    the link and the eviction removed root's file."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    secret = os.path.join(open_top, 'secret')
    os.mkdir(secret, 0o700)
    victim = os.path.join(secret, HEX[2:])
    with open(victim, 'wb') as f:
        f.write(b'root only')
    os.utime(victim, (1, 1))            # the oldest: evicted first
    cache = os.path.join(open_top, 'home', 'cache')
    as_nobody(PLANT, cache, secret, HEX[2:])
    mnt = os.path.join(open_top, 'mnt')
    os.mkdir(mnt)
    before = snapshot(open_top)
    code, err = start(fs_prog, array_url, mnt, [f'disk_cache={cache}'])
    assert os.path.exists(victim), "root's file was removed"
    with open(victim, 'rb') as f:
        assert f.read() == b'root only'
    assert snapshot(open_top) == before
    assert code == 1, f'the mount was made (exit {code})'
    assert len(err.strip().split('\n')) == 1, err
    assert f'disk_cache={cache}' in err and 'owned by uid 65534' in err, err


def test_folder_checks(fs_prog, array_url, open_top, mount):
    """A cache folder that is a symbolic link (to a folder of root's own),
    one owned by another user, one writable by group or others: each is
    refused with one line saying why.  A folder of root's, 0755, is taken
    and made 0700; a missing one is made 0700."""
    mnt = os.path.join(open_top, 'mnt')
    os.mkdir(mnt)
    real = os.path.join(open_top, 'real')
    os.mkdir(real, 0o700)
    link = os.path.join(open_top, 'home', 'link')
    as_nobody('import os, sys; os.symlink(sys.argv[1], sys.argv[2])', real, link)
    theirs = os.path.join(open_top, 'home', 'theirs')
    as_nobody('import os, sys; os.mkdir(sys.argv[1], 0o700)', theirs)
    open_ = os.path.join(open_top, 'open')
    os.mkdir(open_)
    os.chmod(open_, 0o777)
    group = os.path.join(open_top, 'group')
    os.mkdir(group)
    os.chmod(group, 0o770)
    for folder, why in ((link, 'symbolic link'), (theirs, 'owned by uid 65534'),
                        (open_, 'writable by group or others (mode 0777)'),
                        (group, 'writable by group or others (mode 0770)')):
        code, err = start(fs_prog, array_url, mnt, [f'disk_cache={folder}'])
        assert code == 1, f'disk_cache={folder}: the mount was made (exit {code})'
        assert len(err.strip().split('\n')) == 1, err
        assert why in err and f'disk_cache={folder}' in err, err
    assert os.listdir(real) == [] and os.listdir(theirs) == []
    ok = os.path.join(open_top, 'ok')
    os.mkdir(ok)
    os.chmod(ok, 0o755)
    missing = os.path.join(open_top, 'missing')
    for folder in (ok, missing):
        m = mount(array_url, [f'disk_cache={folder}'])
        assert read_tree(m)
        assert not mount.unmount(m)
        st = os.lstat(folder)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700, oct(st.st_mode)
        assert cache_files(folder), 'nothing was kept'


# ------------------------------------------------------ links inside it

INSIDE = r'''
import os, sys
cache, outside, name = sys.argv[1], sys.argv[2], sys.argv[3]
os.mkdir(cache, 0o700)
os.mkdir(outside, 0o700)
for b in range(256):
    sub = '%02x' % b
    there = os.path.join(outside, sub)
    os.mkdir(there)
    # what a cache would remove: a piece-like name, 100 MiB (sparse, the
    # oldest), a stale temporary file
    with open(os.path.join(there, name), 'wb') as f:
        f.truncate(100 << 20)
    os.utime(os.path.join(there, name), (1, 1))
    with open(os.path.join(there, 'tmp.1.1'), 'wb') as f:
        f.write(b'TDBFSDC1')
    os.utime(os.path.join(there, 'tmp.1.1'), (1, 1))
    if b % 2 == 0:           # the subfolder itself a link out
        os.symlink(there, os.path.join(cache, sub))
    else:                    # a real subfolder of links out
        os.mkdir(os.path.join(cache, sub), 0o700)
        for n in (name, 'tmp.2.2'):
            os.symlink(os.path.join(there, n), os.path.join(cache, sub, n))
'''


@pytest.mark.parametrize('who', ['root', 'nobody'])
def test_links_inside_not_followed(fs_prog, cat_prog, array_url, open_top, mount, who):
    """The mounting user's own cache folder (valid: theirs, 0700) in which
    links were planted: every other subfolder XX a link to a folder outside,
    the others real, holding links named as pieces and as temporary files
    to files outside; outside, piece-like files of 100 MiB dated 1970 and
    stale temporary files.  Reads through the cache, with a bound of 64 MiB
    (past it at once if the links were followed), give the array's bytes,
    and nothing outside is removed, changed or added.  As root the daemon
    reads the whole tree; as uid 65534 (who planted them) tiledbfs-cat
    reads each file.  Before, every piece was written through the links,
    and the outside files were removed at the first scan."""
    case = get_case(CASE)
    base = os.path.join(open_top, 'home') if who == 'nobody' else open_top
    cache, outside = os.path.join(base, 'cache'), os.path.join(base, 'outside')
    if who == 'nobody':
        as_nobody(INSIDE, cache, outside, HEX[2:])
    else:
        r = subprocess.run(['/usr/bin/python3', '-c', INSIDE, cache, outside, HEX[2:]],
                           capture_output=True, timeout=CAT_TIMEOUT)
        assert r.returncode == 0, r.stderr
    before = snapshot(outside)
    opts = [f'disk_cache={cache}', 'disk_cache_size=64M']
    for _ in range(2):           # fetched, then (were it kept) from disk
        if who == 'root':
            m = mount(array_url, opts)
            got = read_tree(m)
            for path in case.expected_paths:
                assert got[path] == case.expected(path), path
            assert not mount.unmount(m)
        else:
            for path in case.expected_paths:
                r = subprocess.run([for_nobody(cat_prog), '-o', ','.join(opts), array_url, path],
                                   preexec_fn=become_nobody, capture_output=True,
                                   timeout=CAT_TIMEOUT)
                assert r.returncode == 0, r.stderr.decode(errors='replace')
                assert r.stdout == case.expected(path), path
    assert snapshot(outside) == before
    # the links are still there, untouched, and nothing was kept through them
    for b in range(0, 256, 2):
        assert os.path.islink(os.path.join(cache, '%02x' % b))
    for b in range(1, 256, 2):
        for n in (HEX[2:], 'tmp.2.2'):
            assert os.path.islink(os.path.join(cache, '%02x' % b, n))


# -------------------------------------------------- only its own pieces

def test_only_pieces_removed(array_url, mount, tmp_path):
    """A cache folder that holds files that are not pieces (issue 27:
    DIR/ab/mydata.bin; a name of 62 hex digits whose bytes are not a
    piece's; a file that starts with the cache's magic but whose header
    does not hash to its name; tmp.* names that are not the cache's, dated
    1970; a file in DIR itself): with disk_cache_size=10K (far below what
    they hold) the mount evicts its own pieces only, and every one of those
    files is left as it was; the pieces it kept stay within the bound."""
    cache = tmp_path / 'cache'
    (cache / 'ab').mkdir(parents=True, mode=0o700)
    os.chmod(str(cache), 0o700)
    strangers = {
        'ab/mydata.bin': os.urandom(100 << 10),
        f'ab/{HEX[2:]}': os.urandom(50 << 10),
        f'ab/{HEX[:2]}{HEX[4:]}': b'TDBFSDC1' + bytes(20) + os.urandom(50 << 10),
        'ab/tmp.notours': b'TDBFSDC1' + os.urandom(20 << 10),
        'ab/tmp.1.1': os.urandom(20 << 10),     # the name of one, not its bytes
        'notes.txt': os.urandom(50 << 10),
    }
    for rel, data in strangers.items():
        p = cache / rel
        p.write_bytes(data)
        os.utime(str(p), (1, 1))
    before = snapshot(str(cache))
    opts = [f'disk_cache={cache}', 'disk_cache_size=10K']
    case = get_case(CASE)
    for _ in range(2):
        m = mount(array_url, opts)
        got = read_tree(m)
        for path in case.expected_paths:
            assert got[path] == case.expected(path), path
        assert not mount.unmount(m)
    after = snapshot(str(cache))
    for rel in strangers:
        assert after.get(rel) == before[rel], rel
    pieces = {k: v for k, v in cache_files(str(cache)).items()
              if k not in strangers}
    assert pieces, 'nothing was kept'
    assert sum(pieces.values()) <= 10 << 10, pieces
