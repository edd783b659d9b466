"""test_conventions.py: the Linux conventions of the README: cp -a, rsync -a and tar x into __staging (with uid= and without), uid=, gid= and umask= of a root mount used by another user, fsname= and subtype= as findmnt shows them, mv of a prepared folder into __fragments (EXDEV), numpy's dtype names in tiledbfs-create, the key_file hint, and help texts that list every option of the table."""
import errno
import json
import os
import re
import shutil
import stat
import subprocess

import pytest

from conftest import CAT_TIMEOUT, REPO, Mounts, get_case, run_cat
from test_security import NOBODY, open_top  # noqa: F401 (a fixture)
from test_write import STAGING, read_file, twin_of

OTHER = 65533        # a user of neither the owner's uid nor its group


def need(tool):
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f'{tool} is not installed (scripts/install-deps installs it)')
    return path


def need_root():
    if os.geteuid() != 0:
        pytest.skip('a mount for another user, and switching users, need root')
    need('setpriv')


def as_user(uid, gid, cmd, cwd=None):
    """Runs `cmd` (a list) as uid/gid with no other groups."""
    return subprocess.run(['setpriv', f'--reuid={uid}', f'--regid={gid}', '--clear-groups']
                          + cmd, capture_output=True, timeout=CAT_TIMEOUT, cwd=cwd)


def ok(r, what):
    assert r.returncode == 0, f'{what}: exit {r.returncode}: {r.stderr.decode(errors="replace")}'


def prepared(top, case, name='f'):
    """A folder top/name holding the fields of dense_1d_basic and its
    __subarray.json, with old times; returns its path."""
    folder = os.path.join(top, name)
    os.mkdir(folder)
    for field in ('a', 'b'):
        with open(os.path.join(folder, field), 'wb') as f:
            f.write(case.expected(field))
    with open(os.path.join(folder, '__subarray.json'), 'w') as f:
        f.write('[[1, 50]]\n')
    for p in [os.path.join(folder, n) for n in os.listdir(folder)] + [folder]:
        os.utime(p, (981173106, 981173106))     # 2001-02-03T04:05:06Z
    return folder


# the three ways of copying a folder into __staging: (tool, argv(src, staging))
COPIERS = [
    ('cp', lambda src, stg: ['cp', '-a', src, stg + '/']),
    ('rsync', lambda src, stg: ['rsync', '-a', src, stg + '/']),
    ('tar', lambda src, stg: ['sh', '-c', 'tar -C "$1" -cf - "$2" | tar -C "$3" -xf -',
                              'sh', os.path.dirname(src), os.path.basename(src), stg]),
]


def copy_commit_check(mnt, case, src, tool, argv, runner):
    """Copies folder `src` into __staging with the tool, checks the staged
    copy (bytes and times), commits it and checks the array's bytes."""
    need(tool)
    name = os.path.basename(src)
    staged = os.path.join(mnt, STAGING, name)
    ok(runner(argv(src, os.path.join(mnt, STAGING))), f'{tool} into {STAGING}')
    assert sorted(os.listdir(staged)) == ['__subarray.json', 'a', 'b']
    assert read_file(os.path.join(staged, 'a')) == case.expected('a')
    assert int(os.stat(os.path.join(staged, 'a')).st_mtime) == 981173106, 'times kept'
    r = runner(['mv', staged, os.path.join(mnt, '__fragments') + '/'])
    ok(r, f'mv (the commit) after {tool}')
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')
    assert read_file(os.path.join(mnt, 'b')) == case.expected('b')


@pytest.mark.parametrize('tool', [c[0] for c in COPIERS])
def test_copy_into_staging(tool, create_prog, cat_prog, mount, tmp_path):
    """cp -a, rsync -a and tar x (as whoever runs the tests: as root they
    chown every file to the owner it has) copy a prepared folder into
    __staging, times kept, and it commits."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    src = prepared(str(tmp_path), case)
    mnt = mount(twin, ['rw', 'staging_dir=' + str(tmp_path / 'staging')])
    argv = dict(COPIERS)[tool]
    copy_commit_check(mnt, case, src, tool, argv,
                      lambda cmd: subprocess.run(cmd, capture_output=True,
                                                 timeout=CAT_TIMEOUT))


def test_chown_only_to_the_owner(create_prog, cat_prog, mount, tmp_path):
    """A staged entry takes a chown to the owner and group it has, no
    other; an xattr it cannot keep is ENOTSUP (what cp -a passes over)."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    mnt = mount(twin, ['rw', 'staging_dir=' + str(tmp_path / 'staging')])
    folder = os.path.join(mnt, STAGING, 's')
    os.mkdir(folder)
    path = os.path.join(folder, 'a')
    with open(path, 'wb') as f:
        f.write(case.expected('a'))
    st = os.stat(path)
    os.chown(path, st.st_uid, st.st_gid)
    os.chown(folder, st.st_uid, -1)
    with pytest.raises(PermissionError):
        os.chown(path, st.st_uid + 1, -1)
    with pytest.raises(PermissionError):
        os.chown(folder, -1, st.st_gid + 1)
    with pytest.raises(OSError) as e:
        os.setxattr(path, 'user.x', b'1')
    assert e.value.errno == errno.ENOTSUP
    assert os.stat(path).st_uid == st.st_uid


def test_uid_gid_umask_for_a_user(create_prog, cat_prog, fs_prog, open_top, tmp_path):
    """A root mount with uid=, gid=, umask=, allow_other: user 65534 owns
    every entry (staged ones too), reads the array and copies into
    __staging with cp -a, rsync -a and tar x, and commits; a third user
    is kept out by umask=027; on disk the staged files are root's."""
    need_root()
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    staging = str(tmp_path / 'staging')
    mounts = Mounts(fs_prog, open_top)
    mnt = mounts(twin, ['rw', 'allow_other', 'staging_dir=' + staging,
                        f'uid={NOBODY}', f'gid={NOBODY}', 'umask=027'])
    try:
        for p, mode in ((mnt, 0o750), (os.path.join(mnt, 'a'), 0o440),
                        (os.path.join(mnt, '__fragments'), 0o750),
                        (os.path.join(mnt, STAGING), 0o700)):
            st = os.stat(p)
            assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY), p
            assert stat.S_IMODE(st.st_mode) == mode, f'{p}: {oct(st.st_mode)}'
        r = as_user(OTHER, OTHER, ['cat', os.path.join(mnt, 'a')])
        assert r.returncode != 0 and b'Permission denied' in r.stderr, r
        r = as_user(NOBODY, NOBODY, ['cat', os.path.join(mnt, 'a')])
        ok(r, 'cat as the owner')
        assert r.stdout == read_file(os.path.join(mnt, 'a'))   # fill values: empty
        src_top = os.path.join(open_top, 'src')
        os.mkdir(src_top)
        for i, (tool, argv) in enumerate(COPIERS):
            src = prepared(src_top, case, f'f{i}')
            subprocess.run(['chown', '-R', f'{NOBODY}:{NOBODY}', src], check=True)
            copy_commit_check(mnt, case, src, tool, argv,
                              lambda cmd: as_user(NOBODY, NOBODY, cmd))
            st = os.stat(os.path.join(mnt, 'a'))
            assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)
        frags = os.listdir(os.path.join(mnt, '__fragments'))
        assert len(frags) == 3, frags
        # what is staged shows the owner; on disk it is the daemon's
        r = as_user(NOBODY, NOBODY, ['mkdir', os.path.join(mnt, STAGING, 'g')])
        ok(r, 'mkdir in __staging as the owner')
        st = os.stat(os.path.join(mnt, STAGING, 'g'))
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o700)
        assert os.stat(os.path.join(staging, 'g')).st_uid == 0
        r = as_user(OTHER, OTHER, ['ls', os.path.join(mnt, STAGING)])
        assert r.returncode != 0 and b'Permission denied' in r.stderr, r
    finally:
        problems = mounts.close()
    assert not problems, '; '.join(problems)


def findmnt(mnt):
    r = subprocess.run(['findmnt', '-n', '-o', 'SOURCE,FSTYPE', mnt],
                       capture_output=True, timeout=CAT_TIMEOUT)
    ok(r, 'findmnt')
    return r.stdout.decode().split()


def test_findmnt_source_and_type(cat_prog, mount, tmp_path):
    """findmnt shows SOURCE and fuse.tiledbfs, or fsname= and subtype=."""
    need('findmnt')
    case = get_case('dense_1d_basic')
    mnt = mount(case.array)
    assert findmnt(mnt) == [case.array, 'fuse.tiledbfs']
    mount.unmount(mnt)
    mnt = mount(case.array, ['fsname=weather:2024', 'subtype=tdb'])
    assert findmnt(mnt) == ['weather:2024', 'fuse.tdb']
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')


def test_mv_into_fragments_from_outside(create_prog, cat_prog, mount, tmp_path):
    """mv of a prepared folder from another filesystem straight into
    __fragments fails with EXDEV's message (its copy cannot commit), and
    leaves the folder where it was; cp -r the same.  Into __staging, then
    __fragments, it commits."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    src = prepared(str(tmp_path), case)
    mnt = mount(twin, ['rw', 'staging_dir=' + str(tmp_path / 'staging')])
    frags = os.path.join(mnt, '__fragments')
    for cmd in (['mv', src, frags + '/'], ['cp', '-r', src, frags + '/']):
        r = subprocess.run(cmd, capture_output=True, timeout=CAT_TIMEOUT)
        err = r.stderr.decode(errors='replace')
        assert r.returncode != 0 and 'Invalid cross-device link' in err, (cmd, err)
        assert 'Read-only file system' not in err
    with pytest.raises(OSError) as e:
        os.mkdir(os.path.join(frags, 'g'))
    assert e.value.errno == errno.EXDEV
    assert sorted(os.listdir(src)) == ['__subarray.json', 'a', 'b']
    assert os.listdir(frags) == []
    ok(subprocess.run(['mv', src, os.path.join(mnt, STAGING) + '/'], capture_output=True),
       'mv into __staging')
    assert not os.path.exists(src)
    ok(subprocess.run(['mv', os.path.join(mnt, STAGING, 'f'), frags + '/'],
                      capture_output=True), 'mv into __fragments')
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')


def test_create_numpy_dtypes(create_prog, cat_prog, tmp_path):
    """tiledbfs-create takes numpy's dtype names; the mount shows TileDB's
    datatype and numpy's dtype for each."""
    names = {'t': 'float64', 'c': '<i4', 'u': '|u1', 'i': 'int32', 'w': 'datetime64[ms]',
             'h': 'uint16', 'ok': 'bool', 's': 'STRING_UTF8'}
    schema = {'array_type': 'dense',
              'dims': [{'name': 'x', 'datatype': 'int64', 'domain': [0, 9], 'tile_extent': 5}],
              'attrs': [{'name': n, 'datatype': d} for n, d in names.items()]}
    spath = tmp_path / 'schema.json'
    spath.write_text(json.dumps(schema))
    arr = str(tmp_path / 'arr')
    r = subprocess.run([create_prog, str(spath), arr], capture_output=True, timeout=CAT_TIMEOUT)
    ok(r, 'tiledbfs-create')
    want = {'t': ('FLOAT64', '<f8'), 'c': ('INT32', '<i4'), 'u': ('UINT8', '|u1'),
            'i': ('INT32', '<i4'), 'w': ('DATETIME_MS', '<M8[ms]'), 'h': ('UINT16', '<u2'),
            'ok': ('BOOL', '|b1'), 's': ('STRING_UTF8', 'S1')}
    for name, (dt, dtype) in want.items():
        r = run_cat(cat_prog, arr, name, extra=['-x'])
        ok(r, f'tiledbfs-cat -x {name}')
        x = dict(line.split('=', 1) for line in r.stdout.decode().splitlines())
        assert (x['user.tiledb.datatype'], x['user.tiledb.dtype']) == (dt, dtype), name
    schema['attrs'] = [{'name': 'a', 'datatype': '>f8'}]
    spath.write_text(json.dumps(schema))
    r = subprocess.run([create_prog, str(spath), str(tmp_path / 'arr2')], capture_output=True,
                       timeout=CAT_TIMEOUT)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.count('\n') == 1, err
    assert 'attrs[0].datatype: ">f8": big-endian' in err, err


def test_key_file_newline_hint(cat_prog, tmp_path):
    """A key file of the 32 bytes and a newline (echo's habit) says so."""
    case = get_case('encrypted_aes256gcm')
    key = bytes.fromhex(case.info['key_hex'])
    kf = tmp_path / 'k'
    kf.write_bytes(key + b'\n')
    r = run_cat(cat_prog, case.array, '__array.json', [f'key_file={kf}'])
    err = r.stderr.decode(errors='replace')
    assert r.returncode == 1 and err.count('\n') == 1, err
    assert ('holds 33 bytes; an AES-256-GCM key is exactly 32: a trailing newline? '
            'write it with printf or head -c 32') in err, err
    kf.write_bytes(key)
    r = run_cat(cat_prog, case.array, '__array.json', [f'key_file={kf}'])
    ok(r, 'the 32 bytes alone')


def table_options():
    """The names of the option table (mount/options.c), from the source."""
    with open(os.path.join(REPO, 'mount', 'options.c')) as f:
        names = re.findall(r'TDBM_OPT\("([a-z_0-9]+)"', f.read())
    assert len(names) >= 15, names
    return names


def test_help_lists_every_option(cat_prog, fs_prog):
    """tiledbfs-cat --help, tiledbfs --help and man tiledbfs name every
    option of the table."""
    texts = {}
    for prog in (cat_prog, fs_prog):
        r = subprocess.run([prog, '--help'], capture_output=True, timeout=CAT_TIMEOUT)
        ok(r, f'{prog} --help')
        texts[os.path.basename(prog) + ' --help'] = r.stdout.decode()
    with open(os.path.join(REPO, 'man', 'tiledbfs.1')) as f:
        # the page's option names as groff writes them (\- and \(aq aside)
        texts['man tiledbfs'] = f.read().replace('\\-', '-').replace('\\_', '_')
    for name in table_options():
        for what, text in texts.items():
            if 'help' in what:      # an entry "-o NAME=..." or "-o NAME"
                pattern = r'-o ' + re.escape(name) + r'(=|\s)'
            else:                   # a .TP entry: ".BI NAME= ARG" or ".B NAME"
                pattern = r'^\.B[IR]? ' + re.escape(name) + r'(=|\s|$)'
            assert re.search(pattern, text, re.M), f'{what} does not name {name}'
