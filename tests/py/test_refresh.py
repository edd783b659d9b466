"""test_refresh.py: -o refresh=SECS end to end: what another writer commits (another mount, or fragment files put into the array as TileDB writes them) becomes what new opens of a live mount show, through inotify on a local folder and the periodic check on an object store (S3, Azure); a file open across a refresh keeps its bytes."""
import errno
import os
import shutil
import subprocess
import time

import pytest

from conftest import MOUNT_TIMEOUT, get_case
from test_write import commit, read_file, stage

# Seconds a change may take to show through a live mount.  Generous: the
# machine may be loaded; a refresh is not timed here (scripts/bench is
# where timings go), only seen to happen.
DEADLINE = 30
# A poll period no test waits for: what shows within DEADLINE came from
# inotify.
NEVER = '86400'


def until(what, probe, deadline=DEADLINE):
    """Calls probe() every 50 ms until it returns a true value, which is
    returned; fails naming `what` after `deadline` seconds."""
    end = time.monotonic() + deadline
    last = None
    while time.monotonic() < end:
        try:
            last = probe()
        except OSError as e:
            last = e
        if last and not isinstance(last, OSError):
            return last
        time.sleep(0.05)
    pytest.fail(f'{what}: not seen within {deadline} s (last: {last!r:.200})')


def held_copy(tmp_path, name, held):
    """A copy of case `name`'s array at TMP/arr, without the committed
    fragments whose names start with one of `held` (all with held=('',)):
    their folders and commit files wait in TMP/hold."""
    src = get_case(name).array
    arr, hold = tmp_path / 'arr', tmp_path / 'hold'
    shutil.copytree(src, arr)
    for sub in ('__fragments', '__commits'):
        (hold / sub).mkdir(parents=True)
        for entry in os.listdir(arr / sub):
            if entry.startswith(held):
                shutil.move(str(arr / sub / entry), str(hold / sub / entry))
    assert os.listdir(hold / '__commits'), f'{name}: nothing held'
    return str(arr), str(hold)


def put_fragments(hold, arr):
    """Moves the held fragments into the array as TileDB writes them: each
    fragment folder whole, then its commit file."""
    for name in os.listdir(os.path.join(hold, '__fragments')):
        shutil.copytree(os.path.join(hold, '__fragments', name),
                        os.path.join(arr, '__fragments', name))
    for name in os.listdir(os.path.join(hold, '__commits')):
        shutil.copy(os.path.join(hold, '__commits', name), os.path.join(arr, '__commits', name))


def shows(path, want):
    """A probe: a new open of `path` reads `want`."""
    return lambda: read_file(path) == want


def commit_dense_1d(mnt, case):
    """Stages and commits the expected a and b of dense_1d_basic through a
    writable mount."""
    stage(mnt, 't', {'a': case.expected('a'), 'b': case.expected('b'),
                     '__subarray.json': b'[[1, 50]]'})
    assert commit(mnt, 't') is None


# ------------------------------------------------------------------ local

def test_inotify_sees_fragment_files(mount, tmp_path):
    """Fragment files put into a local array by another program show at once
    (inotify): the poll period is a day."""
    case = get_case('dense_1d_basic')
    arr, hold = held_copy(tmp_path, 'dense_1d_basic', ('',))
    mnt = mount(arr, [f'refresh={NEVER}'])
    empty = read_file(os.path.join(mnt, 'a'))
    assert empty == b'\x00\x00\x00\x80' * 50   # the fill value
    assert os.listdir(os.path.join(mnt, '__fragments')) == []
    put_fragments(hold, arr)
    until('the fragment written into the folder', shows(os.path.join(mnt, 'a'), case.expected('a')))
    assert read_file(os.path.join(mnt, 'b')) == case.expected('b')
    assert len(os.listdir(os.path.join(mnt, '__fragments'))) == 1


def test_commit_by_another_mount(mount, tmp_path):
    """A commit through another (writable) mount of the same folder shows
    through a live read-only mount."""
    case = get_case('dense_1d_basic')
    arr, _ = held_copy(tmp_path, 'dense_1d_basic', ('',))
    live = mount(arr, ['refresh=1'])
    assert read_file(os.path.join(live, 'a')) != case.expected('a')
    writer = mount(arr, ['rw'])
    commit_dense_1d(writer, case)
    until('the other mount\'s commit', shows(os.path.join(live, 'a'), case.expected('a')))


def test_open_file_keeps_its_bytes(mount, tmp_path):
    """A file open across a refresh reads the bytes of the view it opened,
    also what it had not read yet (no mixed bytes); a new open reads the
    new view."""
    t2, t3 = get_case('time_travel_t2'), get_case('time_travel_t3')
    assert t2.expected('a') != t3.expected('a')
    arr, hold = held_copy(tmp_path, 'time_travel_t3', ('__3_3_',))
    mnt = mount(arr, [f'refresh={NEVER}'])
    path = os.path.join(mnt, 'a')
    with open(path, 'rb', buffering=0) as f:
        head = f.read(3)
        assert head == t2.expected('a')[:3]
        put_fragments(hold, arr)
        until('the third fragment', shows(path, t3.expected('a')))
        # what the kernel kept of this file is dropped: the rest comes
        # from the daemon, through the tree this file opened
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        assert head + f.read() == t2.expected('a')
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        f.seek(0)
        assert f.read() == t2.expected('a')
    assert read_file(path) == t3.expected('a')


def test_group_member_change(mount, tmp_path):
    """A fragment committed into a member array of a group shows through a
    live mount of the group."""
    src = get_case('group_basic').array
    grp = tmp_path / 'grp'
    shutil.copytree(src, grp)
    hold = tmp_path / 'hold'
    hold.mkdir()
    s1 = grp / 's1'
    frag = sorted(os.listdir(s1 / '__commits'))[-1]
    shutil.move(str(s1 / '__commits' / frag), str(hold / frag))
    mnt = mount(str(grp), [f'refresh={NEVER}'])
    frags = os.path.join(mnt, 'sparse_arr', '__fragments')
    assert len(os.listdir(frags)) == 1
    shutil.copy(str(hold / frag), str(s1 / '__commits' / frag))
    until('the member\'s second fragment', lambda: len(os.listdir(frags)) == 2)


def test_cwd_in_a_replaced_tree(mount, tmp_path):
    """A process whose current folder is in the mount gets ESTALE once the
    view is replaced, and the path again (cd "$PWD") gives the new view."""
    arr, hold = held_copy(tmp_path, 'dense_1d_basic', ('',))
    mnt = mount(arr, [f'refresh={NEVER}'])
    folder = os.path.join(mnt, '__fragments')
    script = ('import os, sys, time\n'
              'os.chdir(sys.argv[1]); print(len(os.listdir(".")), flush=True)\n'
              'sys.stdin.readline()\n'
              'try:\n    os.listdir("."); print("same")\n'
              'except OSError as e:\n    print(e.errno)\n'
              'os.chdir(sys.argv[1]); print(len(os.listdir(".")))\n')
    p = subprocess.Popen(['/usr/bin/python3', '-c', script, folder], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == '0'
        put_fragments(hold, arr)
        until('the fragment', lambda: len(os.listdir(folder)) == 1)
        out, _ = p.communicate('\n', timeout=MOUNT_TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert out.split() == [str(errno.ESTALE), "1"], out   # then the new view


def test_refresh_refuses_timestamp(fs_prog, tmp_path):
    """A view as of a time never changes: refresh= with timestamp= is a
    start-up error; refresh=0 too."""
    case = get_case('dense_1d_basic')
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    for opts, needle in (('refresh=5,timestamp=1', 'timestamp'), ('refresh=0', 'refresh=0')):
        r = subprocess.run([fs_prog, '-f', '-o', opts, case.array, str(mnt)],
                           capture_output=True, timeout=MOUNT_TIMEOUT)
        if os.path.ismount(str(mnt)):
            subprocess.run(['fusermount3', '-u', '-z', str(mnt)], capture_output=True)
        err = r.stderr.decode(errors='replace').strip()
        assert r.returncode == 1 and len(err.split('\n')) == 1 and needle in err, err


# --------------------------------------------------- S3 and Azure (Azurite)

def upload_held(server, tmp_path, name, held):
    """held_copy of case `name` uploaded under a prefix of this test;
    returns (its s3:// or azure:// URL, the prefix, the held folder)."""
    arr, hold = held_copy(tmp_path, name, held)
    prefix = f'refresh/{tmp_path.name}/arr'
    server.upload(arr, prefix)
    return server.url(prefix), prefix, hold


def test_s3_sees_uploaded_fragment(store_server, mount, tmp_path):
    """Fragment objects put into the bucket by another program (the
    commit's object last, as TileDB writes) show through a live S3 (Azure)
    mount at its next check."""
    s3_server = store_server
    t2, t3 = get_case('time_travel_t2'), get_case('time_travel_t3')
    url, prefix, hold = upload_held(s3_server, tmp_path, 'time_travel_t3', ('__3_3_',))
    mnt = mount(url, ['refresh=1'])
    path = os.path.join(mnt, 'a')
    with open(path, 'rb', buffering=0) as f:
        assert f.read() == t2.expected('a')
        for d, _, files in os.walk(os.path.join(hold, '__fragments')):
            for name in files:
                full = os.path.join(d, name)
                rel = os.path.relpath(full, hold).replace(os.sep, '/')
                s3_server.client.put(f'{prefix}/{rel}', read_file(full))
        for name in os.listdir(os.path.join(hold, '__commits')):
            s3_server.client.put(f'{prefix}/__commits/{name}',
                                 read_file(os.path.join(hold, '__commits', name)))
        until('the uploaded fragment', shows(path, t3.expected('a')))
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        f.seek(0)
        assert f.read() == t2.expected('a')


def test_s3_commit_by_another_mount(store_server, mount, tmp_path):
    """A commit through another (writable) mount of the same S3 (Azure)
    array shows through a live mount."""
    s3_server = store_server
    case = get_case('dense_1d_basic')
    url, _, _ = upload_held(s3_server, tmp_path, 'dense_1d_basic', ('',))
    live = mount(url, ['refresh=1'])
    assert read_file(os.path.join(live, 'a')) != case.expected('a')
    writer = mount(url, ['rw', f'staging_dir={tmp_path / "stg"}'])
    commit_dense_1d(writer, case)
    until('the other mount\'s commit', shows(os.path.join(live, 'a'), case.expected('a')))
