"""test_delete_fragment.py: `rm -r MOUNT/__fragments/NAME` on a -o rw mount deletes that fragment as TileDB's delete_fragments_list does (README "Writing", "Removing a fragment"): tiledbfs-cat and a fresh mount then show the array without it, a file opened before keeps its bytes, a commit in a .con is ignored by an .ign, a read-only mount says EROFS; on a folder and in every object store (both S3 servers and Azurite)."""
import errno
import os
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import Mounts, find_program, get_case, run_cat
from test_conventions import NOBODY, OTHER, as_user, need_root
from test_security import open_top  # noqa: F401 (a fixture)
from test_write import read_file

F1 = '__1_1_367943aa735472cd535279568caf50a7_22'
F2 = '__2_2_03c58ab3c2106308df0516da056fabfd_22'
F3 = '__3_3_10b742418e150345ee6e504e8ec30706_22'


def without_meta(case):
    """The expected files of case but its metadata (a case opened at an
    earlier time shows that time's metadata; a delete keeps the array's)."""
    return [p for p in case.expected_paths if not p.startswith('__meta/')]


def differing(cat_prog, source, case, opts=()):
    """The files of case (metadata aside) tiledbfs-cat of source shows
    otherwise, and whether its fragments are the case's."""
    bad = []
    for path in without_meta(case):
        r = run_cat(cat_prog, source, path, opts)
        if r.returncode != 0 or r.stdout != case.expected(path):
            bad.append(f'{path}: exit {r.returncode} {r.stderr.decode(errors="replace")[:200]}')
    r = run_cat(cat_prog, source, '__array.json', opts)
    if r.returncode != 0 or (F3 not in case.info['fragments'] and F3.encode() in r.stdout):
        bad.append('__array.json still names the deleted fragment')
    return bad


def wait_for(cond, secs=10.0):
    """Polls cond (a release reaches the daemon after close returns)."""
    deadline = time.monotonic() + secs
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def copy_array(tmp_path, name='time_travel_t3'):
    arr = tmp_path / 'array'
    shutil.copytree(get_case(name).array, arr)
    return arr


def test_rm_r_fragment(mount, cat_prog, tmp_path):
    """rm -r of the newest fragment: the mount, tiledbfs-cat and a fresh
    mount show the array as the corpus shows it opened at timestamp 2; a
    file opened before (the merged view, a file of that fragment) reads the
    old bytes; the fragment's folder goes once they are closed; the daemon
    logs the deletion."""
    arr = copy_array(tmp_path)
    t3, t2 = get_case('time_travel_t3'), get_case('time_travel_t2')
    log = tmp_path / 'tiledbfs.log'
    mnt = mount(str(arr), ['rw', f'log={log}'])
    with open(os.path.join(mnt, 'a'), 'rb') as old_view, \
            open(os.path.join(mnt, '__fragments', F3, 's'), 'rb') as old_frag:
        r = subprocess.run(['rm', '-r', os.path.join(mnt, '__fragments', F3)],
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(os.path.join(mnt, '__fragments'))) == [F1, F2]
        for path in without_meta(t2):
            assert read_file(os.path.join(mnt, path)) == t2.expected(path), path
        assert not (arr / '__commits' / f'{F3}.wrt').exists()
        assert (arr / '__fragments' / F3).is_dir()       # still read
        assert old_view.read() == t3.expected('a')
        assert old_frag.read() == t3.expected(f'__fragments/{F3}/s')
    assert wait_for(lambda: not (arr / '__fragments' / F3).exists())
    # (the daemon logs the removal after it: wait for the line too)
    gone = f'removed the folder of deleted fragment __fragments/{F3}'
    assert wait_for(lambda: gone in log.read_text())
    text = log.read_text()
    assert f'deleted fragment __fragments/{F3}' in text, text
    bad = differing(cat_prog, str(arr), t2)
    assert not bad, '\n  '.join(bad)
    fresh = mount(str(arr))
    assert sorted(os.listdir(os.path.join(fresh, '__fragments'))) == [F1, F2]
    for path in without_meta(t2):
        assert read_file(os.path.join(fresh, path)) == t2.expected(path), path


def test_rmdir_after_emptying(mount, cat_prog, tmp_path):
    """rmdir of a fragment folder that still lists files is ENOTEMPTY; an
    unlink of each hides it from the listing; then rmdir deletes the
    fragment (the oldest here: the array opened at 2:3).  A name that is
    not there is ENOENT; other removals are EROFS."""
    arr = copy_array(tmp_path)
    mnt = mount(str(arr), ['rw'])
    d = os.path.join(mnt, '__fragments', F1)
    with pytest.raises(OSError) as e:
        os.rmdir(d)
    assert e.value.errno == errno.ENOTEMPTY
    names = sorted(os.listdir(d))
    assert 'a' in names and '__fragment.json' in names, names
    os.unlink(os.path.join(d, 'a'))
    assert sorted(os.listdir(d)) == [n for n in names if n != 'a']
    assert not os.path.exists(os.path.join(d, 'a'))
    for n in os.listdir(d):
        os.unlink(os.path.join(d, n))
    assert os.listdir(d) == []
    os.rmdir(d)
    assert sorted(os.listdir(os.path.join(mnt, '__fragments'))) == [F2, F3]
    with pytest.raises(OSError) as e:
        os.rmdir(os.path.join(mnt, '__fragments', '__9_9_' + 32 * '0' + '_22'))
    assert e.value.errno == errno.ENOENT
    for gesture, path in ((os.unlink, os.path.join(mnt, 'a')),
                          (os.rmdir, os.path.join(mnt, '__fragments')),
                          (os.unlink, os.path.join(mnt, '__array.json'))):
        with pytest.raises(OSError) as e:
            gesture(path)
        assert e.value.errno == errno.EROFS, path
    bad = differing(cat_prog, str(arr), get_case('time_travel_t2_3'))
    assert not bad, '\n  '.join(bad)
    assert wait_for(lambda: not (arr / '__fragments' / F1).exists())


def test_read_only_mount_erofs(mount, tmp_path):
    """Without -o rw nothing is removed: EROFS for the unlink and the
    rmdir, and rm -r fails."""
    arr = copy_array(tmp_path)
    mnt = mount(str(arr))
    d = os.path.join(mnt, '__fragments', F3)
    for gesture, path in ((os.unlink, os.path.join(d, 'a')), (os.rmdir, d)):
        with pytest.raises(OSError) as e:
            gesture(path)
        assert e.value.errno == errno.EROFS
    r = subprocess.run(['rm', '-r', d], capture_output=True, timeout=60)
    assert r.returncode != 0 and b'Read-only file system' in r.stderr, r.stderr
    assert sorted(os.listdir(os.path.join(mnt, '__fragments'))) == [F1, F2, F3]
    assert (arr / '__commits' / f'{F3}.wrt').exists()


def test_commit_in_con(mount, cat_prog, tmp_path):
    """After tiledbfs-consolidate --mode=commits (the .wrt files vacuumed),
    the fragment's commit is in the .con: the delete writes an .ign naming
    __commits/NAME.wrt, as TileDB does, and the fragment is gone."""
    arr = copy_array(tmp_path)
    cons = find_program(os.path.join('tools', 'tiledbfs-consolidate'))
    r = subprocess.run([cons, '--mode=commits', '--vacuum', str(arr)],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not any(n.endswith('.wrt') for n in os.listdir(arr / '__commits'))
    mnt = mount(str(arr), ['rw'])
    r = subprocess.run(['rm', '-r', os.path.join(mnt, '__fragments', F3)],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ign = [n for n in os.listdir(arr / '__commits') if n.endswith('.ign')]
    assert len(ign) == 1 and ign[0].startswith('__3_3_') and ign[0].endswith('_22.ign'), ign
    assert (arr / '__commits' / ign[0]).read_bytes() == f'__commits/{F3}.wrt\n'.encode()
    bad = differing(cat_prog, str(arr), get_case('time_travel_t2'))
    assert not bad, '\n  '.join(bad)


def test_s3_rm_r_fragment(store_server, mount, cat_prog, tmp_path):
    """The same on an s3:// (azure://) array: the fragment's commit and
    every key of its folder leave the bucket; tiledbfs-cat of the URL and a
    fresh mount show the array opened at timestamp 2."""
    s3 = store_server
    prefix = f'delfrag-{uuid.uuid4().hex[:12]}/array'
    s3.upload(str(get_case('time_travel_t3').array), prefix)
    url = s3.url(prefix)
    t2 = get_case('time_travel_t2')
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    r = subprocess.run(['rm', '-r', os.path.join(mnt, '__fragments', F3)],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(os.path.join(mnt, '__fragments'))) == [F1, F2]
    assert wait_for(lambda: not s3.client.keys(f'{prefix}/__fragments/{F3}/'))
    assert not [k for k in s3.client.keys(f'{prefix}/__commits/') if F3 in k]
    assert [k for k in s3.client.keys(f'{prefix}/__fragments/{F1}/')]
    bad = differing(cat_prog, url, t2)
    assert not bad, '\n  '.join(bad)
    fresh = mount(url)
    assert sorted(os.listdir(os.path.join(fresh, '__fragments'))) == [F1, F2]
    for path in without_meta(t2):
        assert read_file(os.path.join(fresh, path)) == t2.expected(path), path


def test_rm_r_as_the_owner(fs_prog, open_top, tmp_path):
    """A root mount with uid=, gid=, allow_other: the owner (user 65534)
    deletes a fragment with a plain rm -r (no prompt: stdin is no
    terminal); another user is refused (Permission denied) and removes
    nothing."""
    need_root()
    arr = os.path.join(open_top, 'array')
    shutil.copytree(get_case('time_travel_t3').array, arr)
    mounts = Mounts(fs_prog, open_top)
    mnt = mounts(arr, ['rw', 'allow_other', f'staging_dir={tmp_path / "staging"}',
                       f'uid={NOBODY}', f'gid={NOBODY}'])
    try:
        r = as_user(OTHER, OTHER, ['rm', '-r', os.path.join(mnt, '__fragments', F2)])
        assert r.returncode != 0 and b'Permission denied' in r.stderr, r
        r = as_user(NOBODY, NOBODY, ['rm', '-r', os.path.join(mnt, '__fragments', F3)])
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(os.path.join(mnt, '__fragments'))) == [F1, F2]
    finally:
        problems = mounts.close()
    assert not problems, '; '.join(problems)
    assert sorted(os.listdir(os.path.join(arr, '__fragments'))) == [F1, F2]
