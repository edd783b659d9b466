"""test_security.py: the README's "Security model" of the writable mount: default_permissions always, staged data private to the mounting user, commits that never follow symbolic or hard links or read special files, the staging folder's checks, and orphan fragment folders cleaned at mount."""
import errno
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import CAT_TIMEOUT, Mounts, for_nobody, fuse_missing, get_case
from test_write import (STAGING, commit, dense_files, make_twin, read_file, stage, twin_of,
                        write_file)

NOBODY = 65534


def mount_options(mnt):
    """The options field of `mnt`'s line in /proc/self/mountinfo."""
    with open('/proc/self/mountinfo') as f:
        for line in f:
            fields = line.split()
            if fields[4] == mnt:
                return fields[5].split(','), line.split(' - ')[1].split()[2].split(',')
    pytest.fail(f'{mnt} is not in /proc/self/mountinfo')


def as_nobody(code, *args):
    """Runs python `code` as uid/gid 65534 with no groups; returns
    (exit status, stdout)."""
    if os.geteuid() != 0:
        pytest.skip('switching to another user needs root')
    setpriv = shutil.which('setpriv')
    if setpriv is None:
        pytest.skip('setpriv is not installed')
    r = subprocess.run([setpriv, f'--reuid={NOBODY}', f'--regid={NOBODY}', '--clear-groups',
                        '/usr/bin/python3', '-c', code] + list(args),
                       capture_output=True, timeout=CAT_TIMEOUT)
    return r.returncode, r.stdout.decode(errors='replace') + r.stderr.decode(errors='replace')


def test_default_permissions(create_prog, cat_prog, mount, tmp_path):
    """Every mount, read-only or rw, has default_permissions (the kernel
    checks modes and owners)."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    for opts in ([], ['rw', 'staging_dir=' + str(tmp_path / 'staging')]):
        mnt = mount(twin, opts)
        _, super_opts = mount_options(mnt)
        assert 'default_permissions' in super_opts, super_opts
        mount.unmount(mnt)


ATTACKER = r'''
import errno, os, sys
mnt = sys.argv[1]
out = []
def attempt(what, fn):
    try:
        fn()
        out.append(what + ' ok')
    except OSError as e:
        out.append(what + ' ' + errno.errorcode.get(e.errno, str(e.errno)))
stg = os.path.join(mnt, '__staging')
attempt('read-array', lambda: open(os.path.join(mnt, 'a'), 'rb').read())
attempt('list-staging', lambda: os.listdir(stg))
attempt('read-staged', lambda: open(os.path.join(stg, 's', 'a'), 'rb').read())
attempt('chmod-folder', lambda: os.chmod(os.path.join(stg, 's'), 0o777))
attempt('chmod-staging', lambda: os.chmod(stg, 0o777))
attempt('chmod-file', lambda: os.chmod(os.path.join(stg, 's', 'a'), 0o666))
attempt('mkdir', lambda: os.mkdir(os.path.join(stg, 'mine')))
attempt('commit', lambda: os.rename(os.path.join(stg, 's'), os.path.join(mnt, '__fragments', 's')))
print('\n'.join(out))
'''


def test_other_users_cannot_touch_staged_data(create_prog, cat_prog, fs_prog, mount, tmp_path):
    """With allow_other, another user reads the array but cannot list, read,
    chmod or commit the mounting user's staged files."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    # a mountpoint the other user can reach (pytest's folders are 0700)
    top = tempfile.mkdtemp(prefix='tiledbfs-security-')
    os.chmod(top, 0o755)
    mounts = Mounts(fs_prog, top)
    try:
        mnt = mounts(twin, ['rw', 'allow_other', 'staging_dir=' + str(tmp_path / 'staging')])
        files = dense_files(case)
        folder = stage(mnt, 's', files)
        # even a staged file made readable by all on disk stays private
        os.chmod(os.path.join(str(tmp_path / 'staging'), 's', 'a'), 0o644)
        assert stat.S_IMODE(os.stat(os.path.join(folder, 'a')).st_mode) & 0o077 == 0
        # the owner's chmod cannot open it up either
        os.chmod(os.path.join(folder, 'a'), 0o666)
        os.chmod(folder, 0o777)
        assert stat.S_IMODE(os.stat(os.path.join(folder, 'a')).st_mode) & 0o077 == 0
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        rc, out = as_nobody(ATTACKER, mnt)
        assert rc == 0, out
        got = dict(line.split(' ', 1) for line in out.strip().split('\n'))
        assert got['read-array'] == 'ok', out
        for what in ('list-staging', 'read-staged', 'chmod-folder', 'chmod-staging',
                     'chmod-file', 'mkdir', 'commit'):
            assert got[what] in ('EACCES', 'EPERM'), f'{what}: {got[what]}'
        assert os.listdir(os.path.join(mnt, '__fragments')) == []
        assert read_file(os.path.join(folder, 'a')) == files['a']
    finally:
        problems = mounts.close()
        shutil.rmtree(top, ignore_errors=True)
    assert not problems, '; '.join(problems)


def planted(create_prog, cat_prog, mount, tmp_path, plant):
    """A staged folder whose file `a` is replaced on disk by plant(path);
    the commit must fail with EBADMSG, __error naming `a`, no fragment."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    staging = str(tmp_path / 'staging')
    mnt = mount(twin, ['rw', 'staging_dir=' + staging])
    folder = stage(mnt, 's', dense_files(case))
    disk = os.path.join(staging, 's', 'a')
    os.unlink(disk)
    plant(disk)
    e = commit(mnt, 's')
    assert e == errno.EBADMSG, f'mv: {errno.errorcode.get(e, e) if e else "succeeded"}'
    why = read_file(os.path.join(staging, 's', '__error')).decode()
    assert why.startswith('a: '), why
    assert os.listdir(os.path.join(mnt, '__fragments')) == []
    assert not os.path.isdir(os.path.join(twin, '__fragments')) or \
        os.listdir(os.path.join(twin, '__fragments')) == []
    return why, mnt, case


def test_symlink_to_secret_refused(create_prog, cat_prog, mount, tmp_path):
    """A link to a file outside, planted in the on-disk staging folder, is
    refused: the secret never becomes a fragment."""
    secret = tmp_path / 'secret'
    secret.write_bytes(b'SECRET!!' * 25)      # 200 bytes: a's size
    why, mnt, case = planted(create_prog, cat_prog, mount, tmp_path,
                             lambda p: os.symlink(str(secret), p))
    assert 'not a regular file' in why, why
    assert read_file(os.path.join(mnt, 'a')) != secret.read_bytes()


def test_hard_link_refused(create_prog, cat_prog, mount, tmp_path):
    """A hard link to a file outside (a second name of someone else's file),
    planted in the on-disk staging folder, is refused with the reason in
    __error; the link and the file stay as they were."""
    secret = tmp_path / 'secret'
    secret.write_bytes(b'SECRET!!' * 25)      # 200 bytes: a's size
    why, mnt, case = planted(create_prog, cat_prog, mount, tmp_path,
                             lambda p: os.link(str(secret), p))
    assert 'hard link' in why, why
    disk = os.path.join(str(tmp_path / 'staging'), 's', 'a')
    assert os.stat(disk).st_nlink == 2 and os.path.samefile(disk, str(secret))
    assert secret.read_bytes() == b'SECRET!!' * 25
    assert read_file(os.path.join(mnt, 'a')) != secret.read_bytes()


def test_error_file_never_written_through_a_link(create_prog, cat_prog, mount, tmp_path):
    """__error planted as a hard link to a file outside: a failed commit
    writes a new __error, never into (or truncating) the other file."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    staging = str(tmp_path / 'staging')
    mnt = mount(twin, ['rw', 'staging_dir=' + staging])
    files = dense_files(case)
    del files['b']
    stage(mnt, 's', files)
    victim = tmp_path / 'victim'
    victim.write_bytes(b'keep me')
    os.link(str(victim), os.path.join(staging, 's', '__error'))
    assert commit(mnt, 's') == errno.EBADMSG
    assert victim.read_bytes() == b'keep me'
    assert os.stat(str(victim)).st_nlink == 1
    assert b'b: missing' in read_file(os.path.join(staging, 's', '__error'))


def test_fifo_refused(create_prog, cat_prog, mount, tmp_path):
    """A FIFO in place of a field file is refused (and the commit does not
    hang on it)."""
    why, _, _ = planted(create_prog, cat_prog, mount, tmp_path, lambda p: os.mkfifo(p, 0o600))
    assert 'not a regular file' in why, why


def test_folder_refused(create_prog, cat_prog, mount, tmp_path):
    why, _, _ = planted(create_prog, cat_prog, mount, tmp_path, lambda p: os.mkdir(p, 0o700))
    assert 'a folder' in why, why


def start_fails(fs_prog, twin, mnt, opts):
    r = subprocess.run([fs_prog, '-f', '-o', ','.join(opts), twin, mnt],
                       capture_output=True, timeout=CAT_TIMEOUT)
    assert r.returncode != 0, f'tiledbfs -o {",".join(opts)} started'
    assert not os.path.ismount(mnt)
    return r.stderr.decode(errors='replace')


def test_staging_dir_checks(create_prog, cat_prog, fs_prog, mount, tmp_path):
    """The staging folder must be ours, a real folder, not group- or
    world-writable; it is made 0700; two daemons cannot share it."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    mnt = str(tmp_path / 'm')
    os.mkdir(mnt)
    real = tmp_path / 'real'
    real.mkdir(mode=0o700)
    link = tmp_path / 'link'
    link.symlink_to(real)
    err = start_fails(fs_prog, twin, mnt, ['rw', f'staging_dir={link}'])
    assert 'symbolic link' in err, err
    open_ = tmp_path / 'open'
    open_.mkdir()
    os.chmod(str(open_), 0o777)
    err = start_fails(fs_prog, twin, mnt, ['rw', f'staging_dir={open_}'])
    assert 'writable by group or others' in err, err
    if os.geteuid() == 0:
        theirs = tmp_path / 'theirs'
        theirs.mkdir(mode=0o700)
        os.chown(str(theirs), NOBODY, NOBODY)
        err = start_fails(fs_prog, twin, mnt, ['rw', f'staging_dir={theirs}'])
        assert 'owned by uid 65534' in err, err
    readable = tmp_path / 'readable'
    readable.mkdir()
    os.chmod(str(readable), 0o755)
    m1 = mount(twin, ['rw', f'staging_dir={readable}'])
    assert stat.S_IMODE(os.stat(str(readable)).st_mode) == 0o700
    err = start_fails(fs_prog, twin, mnt, ['rw', f'staging_dir={readable}'])
    assert 'in use by another tiledbfs' in err, err
    mount.unmount(m1)


def test_orphan_fragment_cleaned_at_mount(create_prog, cat_prog, mount, tmp_path):
    """At a rw mount, the uncommitted fragment folder named by a staged
    folder's __fragment marker (a commit killed before its commit file) is
    removed; another uncommitted folder (maybe another writer's, in
    progress) is left alone; the staged folder then commits once."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    staging = str(tmp_path / 'staging')
    mnt = mount(twin, ['rw', 'staging_dir=' + staging])
    stage(mnt, 's', dense_files(case))
    mount.unmount(mnt)
    ours = '__5_5_0123456789abcdef0123456789abcdef_22'
    theirs = '__6_6_fedcba9876543210fedcba9876543210_22'
    os.makedirs(os.path.join(twin, '__fragments', ours))
    os.makedirs(os.path.join(twin, '__fragments', theirs))
    write_file(os.path.join(twin, '__fragments', ours, 'a0.tdb'), b'partial')
    write_file(os.path.join(twin, '__fragments', theirs, 'a0.tdb'), b'in progress')
    write_file(os.path.join(staging, 's', '__fragment'), ours.encode())
    mnt = mount(twin, ['rw', 'staging_dir=' + staging])
    assert not os.path.exists(os.path.join(twin, '__fragments', ours))
    assert os.path.isdir(os.path.join(twin, '__fragments', theirs))
    assert os.listdir(os.path.join(mnt, '__fragments')) == []
    assert commit(mnt, 's') is None
    assert len(os.listdir(os.path.join(mnt, '__fragments'))) == 1
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')
    assert sorted(os.listdir(os.path.join(twin, '__fragments'))) == \
        sorted(os.listdir(os.path.join(mnt, '__fragments')) + [theirs])


def run_as_nobody(cmd):
    """Runs `cmd` as uid/gid 65534 with no groups (so that permission checks
    are real: the tests run as root); returns the CompletedProcess."""
    if os.geteuid() != 0:
        pytest.skip('switching to another user needs root')
    setpriv = shutil.which('setpriv')
    if setpriv is None:
        pytest.skip('setpriv is not installed')
    return subprocess.run([setpriv, f'--reuid={NOBODY}', f'--regid={NOBODY}', '--clear-groups',
                           for_nobody(cmd[0])] + cmd[1:], capture_output=True,
                          timeout=CAT_TIMEOUT)


@pytest.fixture
def open_top():
    """A folder every user can reach (pytest's folders are 0700)."""
    top = tempfile.mkdtemp(prefix='tiledbfs-perm-')
    os.chmod(top, 0o755)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def readable_twin(create_prog, cat_prog, tmp_path, top):
    """An empty twin of dense_1d_basic under `top`, owned by root, readable
    by all (folders 0755, files 0644): other users may read, not write."""
    case = get_case('dense_1d_basic')
    twin = os.path.join(top, 'arr')
    made = make_twin(create_prog, cat_prog, case.array, twin, tmp_path)
    assert made.returncode == 0, made.stderr.decode(errors='replace')
    for d, dirs, files in os.walk(twin):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    return twin


def test_unreadable_source_says_permission_denied(create_prog, cat_prog, fs_prog, tmp_path, open_top):
    """An array folder the user cannot read: tiledbfs-cat and tiledbfs say
    "Permission denied" (not "not a TileDB array or group"), one line, exit 1."""
    twin = readable_twin(create_prog, cat_prog, tmp_path, open_top)
    mnt = os.path.join(open_top, 'mnt')
    os.mkdir(mnt)
    os.chown(mnt, NOBODY, NOBODY)
    os.chmod(twin, 0o700)
    for cmd in ([cat_prog, twin, '__array.json'], [fs_prog, '-f', twin, mnt]):
        r = run_as_nobody(cmd)
        err = r.stderr.decode(errors='replace').strip()
        assert r.returncode == 1, f'{cmd[0]}: exit {r.returncode}: {err}'
        assert len(err.split('\n')) == 1, err
        assert 'Permission denied' in err and 'not a TileDB' not in err, err
        assert not os.path.ismount(mnt)
    # a folder inside it that the user cannot read: named, with the cause
    os.chmod(twin, 0o755)
    os.chmod(os.path.join(twin, '__schema'), 0o700)
    r = run_as_nobody([cat_prog, twin, '__array.json'])
    err = r.stderr.decode(errors='replace').strip()
    assert r.returncode == 1 and '__schema' in err and 'permission denied' in err.lower(), err
    # readable again: the same user reads it
    os.chmod(os.path.join(twin, '__schema'), 0o755)
    r = run_as_nobody([cat_prog, twin, '__array.json'])
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize('locked', ['', '__fragments', '__commits', '__meta'])
def test_rw_refused_when_array_not_writable(create_prog, cat_prog, fs_prog, tmp_path, open_top, locked):
    """-o rw on an array (or one of the folders a write changes) the user
    cannot write is refused at start-up with one line naming the folder,
    instead of mounting and failing every commit."""
    twin = readable_twin(create_prog, cat_prog, tmp_path, open_top)
    mnt = os.path.join(open_top, 'mnt')
    staging = os.path.join(open_top, 'staging')
    for d in (mnt, staging):
        os.mkdir(d, 0o700)
        os.chown(d, NOBODY, NOBODY)
    # the user owns everything but the folder `locked`
    for d, dirs, files in os.walk(twin):
        for name in dirs + files:
            os.chown(os.path.join(d, name), NOBODY, NOBODY)
    os.chown(twin, NOBODY, NOBODY)
    target = os.path.join(twin, locked) if locked else twin
    os.chown(target, 0, 0)
    r = run_as_nobody([fs_prog, '-f', '-o', 'rw,staging_dir=' + staging, twin, mnt])
    err = r.stderr.decode(errors='replace').strip()
    if r.returncode == 0 or os.path.ismount(mnt):
        subprocess.run(['fusermount3', '-u', '-z', mnt], capture_output=True)
    assert r.returncode == 1, f'exit {r.returncode}: {err}'
    assert len(err.split('\n')) == 1, err
    assert '-o rw' in err and 'Permission denied' in err and target in err, err
    assert os.listdir(staging) == []
    # read-only, the same user mounts it (the check is for -o rw alone)
    r = run_as_nobody([cat_prog, '-o', 'rw,staging_dir=' + staging, twin, '__array.json'])
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------ group members

def escaping_group(top, etc=True):
    """Under folder `top`: a secret array in a root-only folder, and a
    world-writable group beside it whose members try to reach it (an
    absolute file:// uri, a relative uri climbing out, a symbolic link),
    with `etc` a plain absolute path too, and members that stay inside
    (relative, absolute uri of a place inside, a link to a place inside).
    Returns (group, secret case, public case)."""
    from test_groups import copy_array, make_group
    secret_dir = os.path.join(top, 'secret')
    os.makedirs(secret_dir)
    secret = copy_array('sparse_int64_2d', os.path.join(secret_dir, 'arr'))
    os.chmod(secret_dir, 0o700)
    g = os.path.join(top, 'pub', 'g')
    os.makedirs(g)
    os.chmod(os.path.join(top, 'pub'), 0o777)
    public = copy_array('dense_1d_basic', os.path.join(g, 'ok'))
    os.symlink(os.path.join(secret_dir, 'arr'), os.path.join(g, 'link'))
    os.symlink('ok', os.path.join(g, 'inlink'))
    os.makedirs(os.path.join(g, 'sub'))
    make_group(g, [('file://' + os.path.join(secret_dir, 'arr'), 'abs', False, 'array'),
                   ('../../secret/arr', 'climb', True, 'array'),
                   ('link', 'link', True, 'array'),
                   ('ok', 'ok', True, 'array'),
                   ('file://' + os.path.join(g, 'ok'), 'absin', False, 'array'),
                   ('inlink', 'inlink', True, 'array'),
                   ('sub/../ok', 'dotted', True, 'array')] +
               ([('/etc', 'etc', False, 'group')] if etc else []))
    return g, secret, public


OUTSIDE = ('abs', 'climb', 'link', 'etc')
INSIDE = ('ok', 'absin', 'inlink', 'dotted')


def test_group_members_stay_inside(cat_prog, tmp_path):
    """By default a member outside the group's source (absolute, climbing
    out with .., through a symbolic link) is not followed: it is left out,
    and __group.json says why; members inside are followed however they
    are written."""
    from conftest import run_cat
    from test_groups import group_json, members_by_name
    g, secret, public = escaping_group(str(tmp_path))
    doc = members_by_name(group_json(cat_prog, g))
    for name in OUTSIDE:
        assert 'outside the source' in doc[name].get('error', ''), doc[name]
    for name in INSIDE:
        assert 'error' not in doc[name], doc[name]
    r = run_cat(cat_prog, g, '')
    listing = r.stdout.decode().split('\n')
    assert not set(OUTSIDE) & set(listing), listing
    for name in INSIDE:
        r = run_cat(cat_prog, g, name + '/a')
        assert r.returncode == 0 and r.stdout == public.expected('a'), name
    for name in OUTSIDE[:3]:
        assert run_cat(cat_prog, g, name + '/a').returncode != 0
    # asked for explicitly, they are followed
    doc = members_by_name(group_json(cat_prog, g, ['group_members=any']))
    for name in OUTSIDE[:3]:
        assert 'error' not in doc[name], doc[name]
        r = run_cat(cat_prog, g, name + '/a', ['group_members=any'])
        assert r.stdout == secret.expected('a'), name
    r = run_cat(cat_prog, g, '', ['group_members=nowhere'])
    assert r.returncode != 0 and b'group_members=nowhere' in r.stderr


READ_SECRET = r'''
import os, sys
mnt = sys.argv[1]
for name in sys.argv[2:]:
    try:
        with open(os.path.join(mnt, name, 'a'), 'rb') as f:
            print(name, 'read', len(f.read()))
    except OSError as e:
        print(name, 'refused', e.errno)
'''


def test_group_members_allow_other(fs_prog, tmp_path):
    """A root daemon with allow_other over a group that anyone can write:
    another user reads the members inside, never the root-only array the
    outside members point at; the daemon logs each member left out."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    if os.geteuid() != 0:
        pytest.skip('a root daemon read by another user needs root')
    top = tempfile.mkdtemp(prefix='tiledbfs-members-')
    os.chmod(top, 0o755)
    mounts = Mounts(fs_prog, top)
    try:
        g, secret, public = escaping_group(os.path.join(top, 'data'), etc=False)
        os.chmod(os.path.join(top, 'data'), 0o755)
        mnt = mounts(g, ['allow_other'])
        rc, out = as_nobody(READ_SECRET, mnt, *(OUTSIDE[:3] + INSIDE))
        assert rc == 0, out
        got = dict(line.split(' ', 1) for line in out.strip().split('\n'))
        for name in INSIDE:
            assert got[name] == f'read {len(public.expected("a"))}', (name, out)
        for name in OUTSIDE[:3]:
            assert got[name].startswith('refused'), (name, out)
        errpath = mounts.active[-1][2]
        problems = mounts.unmount(mnt)
        assert not problems, problems
        with open(errpath, 'rb') as f:
            log = f.read().decode(errors='replace')
        for name in OUTSIDE[:3]:
            assert f'member {name} left out' in log, log
    finally:
        problems = mounts.close()
        shutil.rmtree(top, ignore_errors=True)
    assert not problems, '; '.join(problems)
