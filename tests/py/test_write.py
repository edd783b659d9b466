"""test_write.py: the mount contract's "Writing" section end to end: __staging/ commits into twins of the corpus, bad input, __meta/ writes, SIGKILL in a commit."""
import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy
import pytest

from conftest import (CAT_TIMEOUT, MOUNT_TIMEOUT, case_options, fuse_missing, get_case,
                      o_args, run_cat)

STAGING = '__staging'


# ----------------------------------------------------------------- helpers

def key_opts(case, tmp_path):
    """key_file= of an encrypted case (never its timestamp: a twin is
    mounted rw, and rw does not take a timestamp)."""
    return [o for o in case_options(case, tmp_path) if o.startswith('key_file=')]


def cat_bytes(cat, source, path, opts=()):
    r = run_cat(cat, source, path, opts)
    assert r.returncode == 0, f'tiledbfs-cat {source} {path}: {r.stderr.decode(errors="replace")}'
    return r.stdout


def array_json(cat, source, opts=()):
    return json.loads(cat_bytes(cat, source, '__array.json', opts))


def make_twin(create, cat, source, twin, tmp_path, cat_opts=(), key=()):
    """An empty array at `twin` with the schema of `source` (from its
    __array.json).  Returns the CompletedProcess of tiledbfs-create."""
    schema = os.path.join(str(tmp_path), os.path.basename(twin) + '.schema.json')
    with open(schema, 'wb') as f:
        f.write(cat_bytes(cat, source, '__array.json', cat_opts))
    return subprocess.run([create] + o_args(list(key)) + [schema, twin],
                          capture_output=True, timeout=CAT_TIMEOUT)


def write_file(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def read_file(path):
    with open(path, 'rb') as f:
        return f.read()


def digests(folder):
    """{name: sha256} of the files of a folder (not __error, nor the commit's
    __fragment marker: what the writer leaves)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        if name in ('__error', '__fragment'):
            continue
        out[name] = hashlib.sha256(read_file(os.path.join(folder, name))).hexdigest()
    return out


def tree_listing(root):
    """Every path under an array folder, with sizes: to see that nothing
    changed on disk."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            out[os.path.relpath(p, root)] = None if os.path.isdir(p) else os.path.getsize(p)
    return out


def commit(mnt, name, target=None):
    """mv MOUNT/__staging/NAME MOUNT/__fragments/; returns None or the errno."""
    try:
        os.rename(os.path.join(mnt, STAGING, name),
                  os.path.join(mnt, '__fragments', target or name))
    except OSError as e:
        return e.errno
    return None


def stage(mnt, name, files):
    folder = os.path.join(mnt, STAGING, name)
    os.mkdir(folder)
    for fname, data in files.items():
        write_file(os.path.join(folder, fname), data)
    return folder


def top_level(case):
    return [p for p in case.expected_paths if '/' not in p]


# --------------------------------------------------------- twins of the corpus

def test_twin_commit(case, create_prog, cat_prog, mount, tmp_path):
    """An empty twin of the case's array, the case's expected files staged
    and committed: the twin then shows the same bytes through the mount."""
    if case.info.get('kind') != 'array':
        pytest.skip('a group: nothing to twin (writing is per array)')
    files = top_level(case)
    if not files:
        pytest.skip('no top-level data file expected')
    cat_opts = case_options(case, tmp_path)
    key = key_opts(case, tmp_path)
    twin = str(tmp_path / 'twin')
    made = make_twin(create_prog, cat_prog, case.array, twin, tmp_path, cat_opts, key)
    if made.returncode != 0:
        err = made.stderr.decode(errors='replace').strip()
        if case.name.startswith('legacy_'):
            pytest.skip(f'a legacy schema that cannot be written at format version 22: {err}')
        pytest.fail(f'tiledbfs-create: {err}')
    info = array_json(cat_prog, case.array, cat_opts)
    mnt = mount(twin, key + ['rw'])

    staged = {p: case.expected(p) for p in files}
    if case.dense:
        staged['__subarray.json'] = json.dumps(info['view_region']).encode()
    elif case.info.get('cell_count') == 0:
        staged = None  # nothing to write: an empty sparse array shows empty files
    if staged is not None:
        stage(mnt, 't', staged)
        e = commit(mnt, 't')
        if e is not None:
            why = read_file(os.path.join(mnt, STAGING, 't', '__error')).decode(errors='replace')
            pytest.fail(f'commit: {errno.errorcode.get(e, e)}: {why.strip()}')
        assert not os.path.exists(os.path.join(mnt, STAGING, 't')), 'staged folder left after the commit'
        frags = [n for n in os.listdir(os.path.join(mnt, '__fragments'))]
        assert len(frags) == 1, f'fragments after one commit: {frags}'

    fails = []
    for path in files:
        exp = case.expected(path)
        try:
            got = read_file(os.path.join(mnt, path))
        except OSError as e:
            fails.append(f'{path}: {e}')
            continue
        if got != exp:
            fails.append(f'{path}: {len(got)} bytes, expected {len(exp)}'
                         + ('' if len(got) != len(exp) else ' (contents differ)'))
        elif os.stat(os.path.join(mnt, path)).st_size != len(exp):
            fails.append(f'{path}: st_size {os.stat(os.path.join(mnt, path)).st_size}')
    assert not fails, f'{case.name}: {len(fails)} of {len(files)} files differ:\n  ' + '\n  '.join(fails)


# ------------------------------------------------------------------ bad input

def twin_of(name, create_prog, cat_prog, tmp_path):
    """(case, twin path) of an empty twin of a corpus case."""
    case = get_case(name)
    twin = str(tmp_path / f'twin-{name}')
    made = make_twin(create_prog, cat_prog, case.array, twin, tmp_path)
    assert made.returncode == 0, f'tiledbfs-create: {made.stderr.decode(errors="replace")}'
    return case, twin


def dense_files(case):
    return {p: case.expected(p) for p in top_level(case)}


def u64(values):
    return numpy.asarray(values, dtype='<u8').tobytes()


def bad_dense_missing(case):
    files = dense_files(case)
    del files['b']
    return files, 'b'


def bad_dense_size(case):
    files = dense_files(case)
    files['a'] = files['a'][:-4]
    return files, 'a'


def bad_region(case):
    files = dense_files(case)
    files['__subarray.json'] = b'[[0, 49]]\n'     # the domain is [1, 50]
    return files, '__subarray.json'


def var_attr(case):
    """A var-sized attribute of a case that has one, with its offsets."""
    for p in top_level(case):
        if p.endswith('.offsets'):
            return p[:-len('.offsets')]
    pytest.skip(f'{case.name} has no var-sized attribute')


def bad_offsets_descending(case):
    files = dense_files(case)
    name = var_attr(case)
    off = numpy.frombuffer(files[name + '.offsets'], dtype='<u8').copy()
    i = int(numpy.argmax(numpy.diff(off) > 0)) + 1   # a cell with a non-empty predecessor
    off[i], off[i - 1] = off[i - 1], off[i]
    files[name + '.offsets'] = off.tobytes()
    return files, name + '.offsets'


def bad_offsets_past_end(case):
    files = dense_files(case)
    name = var_attr(case)
    off = numpy.frombuffer(files[name + '.offsets'], dtype='<u8').copy()
    off[-1] = len(files[name]) + 100
    files[name + '.offsets'] = off.tobytes()
    return files, name + '.offsets'


def sparse_files(case):
    return {p: case.expected(p) for p in top_level(case)}


def bad_coords_outside(case):
    files = sparse_files(case)
    x = numpy.frombuffer(files['x'], dtype='<i8').copy()
    lo, hi = case.info['dims'][0]['domain']
    x[0] = hi + 1
    files['x'] = x.tobytes()
    return files, 'x'


def bad_duplicates(case):
    files = sparse_files(case)
    x = numpy.frombuffer(files['x'], dtype='<i8').copy()
    y = numpy.frombuffer(files['y'], dtype='<i8').copy()
    x[1], y[1] = x[0], y[0]
    files['x'] = x.tobytes()
    files['y'] = y.tobytes()
    return files, ('x', 'y')


def bad_sparse_subarray(case):
    files = sparse_files(case)
    files['__subarray.json'] = b'not json at all {'   # a sparse array takes no region
    return files, '__subarray.json'


BAD_INPUTS = [
    ('missing_field', 'dense_1d_basic', bad_dense_missing),
    ('wrong_size', 'dense_1d_basic', bad_dense_size),
    ('region_outside_domain', 'dense_1d_basic', bad_region),
    ('offsets_not_ascending', 'dense_current_domain', bad_offsets_descending),
    ('offsets_past_end', 'dense_current_domain', bad_offsets_past_end),
    ('coords_outside_domain', 'sparse_int64_2d', bad_coords_outside),
    ('duplicates_not_allowed', 'sparse_int64_2d', bad_duplicates),
    ('sparse_subarray_json', 'sparse_int64_2d', bad_sparse_subarray),
]


@pytest.mark.parametrize('what,case_name,spoil', BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input(what, case_name, spoil, create_prog, cat_prog, mount, tmp_path):
    """mv fails with EBADMSG ("Bad message": the staged input is refused;
    not EINVAL, which mv reports as "cannot move ... to a subdirectory of
    itself"), __error names the file, the staged files and the array are
    unchanged."""
    case, twin = twin_of(case_name, create_prog, cat_prog, tmp_path)
    if case_name == 'sparse_int64_2d':
        info = array_json(cat_prog, case.array)
        assert not info['schema']['allows_duplicates']
    files, culprit = spoil(case)
    staging_dir = str(tmp_path / 'staging')
    mnt = mount(twin, ['rw', 'staging_dir=' + staging_dir])
    before_json = array_json(cat_prog, twin)
    before_disk = tree_listing(twin)

    folder = stage(mnt, 'bad', files)
    hashes = digests(os.path.join(staging_dir, 'bad'))
    assert hashes == digests(folder)

    e = commit(mnt, 'bad')
    assert e == errno.EBADMSG, f'mv: {errno.errorcode.get(e, e) if e else "succeeded"}, expected EBADMSG'
    why = read_file(os.path.join(folder, '__error')).decode()
    assert why.strip(), '__error is empty'
    names = culprit if isinstance(culprit, tuple) else (culprit,)
    assert any(n in why for n in names), f'__error does not name {" or ".join(names)}: {why!r}'
    assert digests(folder) == hashes, 'staged files changed (through the mount)'
    assert digests(os.path.join(staging_dir, 'bad')) == hashes, 'staged files changed (on disk)'
    assert os.listdir(os.path.join(mnt, '__fragments')) == []
    assert array_json(cat_prog, twin) == before_json, 'the array changed'
    assert tree_listing(twin) == before_disk, 'files appeared in the array folder'

    # A second try fails the same way; fixed, the same folder commits.
    assert commit(mnt, 'bad') == errno.EBADMSG
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    good = dense_files(case) if case.dense else sparse_files(case)
    if case.dense:
        good['__subarray.json'] = json.dumps(array_json(cat_prog, case.array)['view_region']).encode()
    for name, data in good.items():
        write_file(os.path.join(folder, name), data)
    e = commit(mnt, 'bad', 'anything')
    assert e is None, f'the fixed commit failed: {errno.errorcode.get(e, e)}'
    assert len(os.listdir(os.path.join(mnt, '__fragments'))) == 1
    for name in top_level(case):
        assert read_file(os.path.join(mnt, name)) == case.expected(name), f'{name} after the fixed commit'


# ----------------------------------------------------------- the staging area

def test_staging_area(create_prog, cat_prog, mount, tmp_path):
    """__staging/ behaves like a folder of real files under staging_dir, whose
    default is SOURCE/../.NAME.tiledbfs-staging; they survive a restart."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    default_dir = os.path.join(os.path.dirname(twin), '.' + os.path.basename(twin) + '.tiledbfs-staging')
    mnt = mount(twin, ['rw'])
    assert STAGING in os.listdir(mnt)
    folder = os.path.join(mnt, STAGING, 'x')
    os.mkdir(folder)
    assert os.path.isdir(os.path.join(default_dir, 'x'))
    write_file(os.path.join(folder, 'a.part'), case.expected('a')[:10])
    with open(os.path.join(folder, 'a.part'), 'r+b') as f:
        f.seek(10)
        f.write(case.expected('a')[10:])
    os.rename(os.path.join(folder, 'a.part'), os.path.join(folder, 'a'))
    write_file(os.path.join(folder, 'junk'), b'12345')
    os.truncate(os.path.join(folder, 'junk'), 2)
    assert read_file(os.path.join(folder, 'junk')) == b'12'
    # space made ahead of the writes (as cp and dd may): zeros to 1 MiB
    fd = os.open(os.path.join(folder, 'junk'), os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, 1 << 20)
        assert os.fstat(fd).st_size == 1 << 20
    finally:
        os.close(fd)
    assert read_file(os.path.join(folder, 'junk')) == b'12' + bytes((1 << 20) - 2)
    os.unlink(os.path.join(folder, 'junk'))
    assert sorted(os.listdir(folder)) == ['a']
    assert os.stat(os.path.join(folder, 'a')).st_size == len(case.expected('a'))
    with pytest.raises(OSError) as e:
        os.mkdir(os.path.join(folder, 'sub'))
    assert e.value.errno == errno.EPERM
    # Writes outside __staging/ and __meta/ stay read-only (in __fragments,
    # EXDEV: only a commit makes something there).
    for what, fn, want in [
            ('write a', lambda: open(os.path.join(mnt, 'a'), 'r+b').close(), errno.EROFS),
            ('mkdir', lambda: os.mkdir(os.path.join(mnt, 'd')), errno.EROFS),
            ('create', lambda: open(os.path.join(mnt, 'new'), 'wb').close(), errno.EROFS),
            ('removexattr a', lambda: os.removexattr(os.path.join(mnt, 'a'),
                                                     'user.tiledb.datatype'), errno.EROFS),
            ('mkdir in __fragments', lambda: os.mkdir(os.path.join(mnt, '__fragments', 'd')),
             errno.EXDEV)]:
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == want, what

    # A restart keeps the staged bytes; the commit then works.
    assert not mount.unmount(mnt)
    mnt = mount(twin, ['rw'])
    folder = os.path.join(mnt, STAGING, 'x')
    assert read_file(os.path.join(folder, 'a')) == case.expected('a')
    write_file(os.path.join(folder, 'b'), case.expected('b'))
    assert commit(mnt, 'x') is None
    assert read_file(os.path.join(mnt, 'b')) == case.expected('b')
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')
    assert os.listdir(os.path.join(mnt, STAGING)) == []
    assert os.listdir(default_dir) == []


def test_commit_single_threaded(create_prog, cat_prog, mount, tmp_path):
    """-s (one thread answers the kernel) with rw: a commit works, and the
    files read before it (fill values) read as the committed cells after
    it.  The daemon tells the kernel of the new root through its helper
    thread there (fuse/notify.c), which no other test starts."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    info = array_json(cat_prog, case.array)
    mnt = mount(twin, ['rw'], extra=['-s'])
    files = dense_files(case)
    before = {p: read_file(os.path.join(mnt, p)) for p in files}
    assert before != files
    stage(mnt, 's', dict(files, **{'__subarray.json': json.dumps(info['view_region']).encode()}))
    assert commit(mnt, 's') is None
    for p, data in files.items():
        assert read_file(os.path.join(mnt, p)) == data, p
    assert len(os.listdir(os.path.join(mnt, '__fragments'))) == 1


def test_group_has_no_staging(cat_prog, mount, tmp_path):
    case = get_case('group_basic')
    mnt = mount(case.array, ['rw'])
    assert STAGING not in os.listdir(mnt)
    with pytest.raises(OSError) as e:
        os.mkdir(os.path.join(mnt, STAGING))
    assert e.value.errno == errno.EROFS


def test_open_file_survives_commit(create_prog, cat_prog, mount, tmp_path):
    """A file opened before a commit keeps its bytes; a new open sees the
    new view (the kernel was told)."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    mnt = mount(twin, ['rw'])
    old = read_file(os.path.join(mnt, 'a'))
    f = open(os.path.join(mnt, 'a'), 'rb')
    os.stat(os.path.join(mnt, '__fragments'))
    stage(mnt, 't', {'a': case.expected('a'), 'b': case.expected('b'),
                     '__subarray.json': b'[[1, 50]]'})
    assert commit(mnt, 't') is None
    assert f.read() == old
    f.close()
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')
    assert len(os.listdir(os.path.join(mnt, '__fragments'))) == 1


def test_rw_refuses_timestamp(fs_prog, tmp_path):
    """A write is made now: -o rw with timestamp= is a start-up error."""
    case = get_case('dense_1d_basic')
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    r = subprocess.run([fs_prog, '-f', '-o', 'rw,timestamp=1', case.array, str(mnt)],
                       capture_output=True, timeout=MOUNT_TIMEOUT)
    if os.path.ismount(str(mnt)):
        subprocess.run(['fusermount3', '-u', '-z', str(mnt)], capture_output=True)
    assert r.returncode == 1
    err = r.stderr.decode(errors='replace').strip()
    assert len(err.split('\n')) == 1 and 'timestamp' in err, err


# ------------------------------------------------------------------- metadata

def test_meta_write(create_prog, cat_prog, mount, tmp_path):
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    mnt = mount(twin, ['rw'])
    meta = os.path.join(mnt, '__meta')

    # A string key, written the shell's way.
    subprocess.run(['sh', '-c', f'printf "hello, world" > "{meta}/greeting"'], check=True)
    assert cat_bytes(cat_prog, twin, '__meta/greeting') == b'hello, world'
    assert read_file(os.path.join(meta, 'greeting')) == b'hello, world'
    assert os.getxattr(os.path.join(meta, 'greeting'), 'user.tiledb.datatype') == b'STRING_UTF8'

    # An INT32 key: the type set on the file before it is closed.
    path = os.path.join(meta, 'sizes')
    with open(path, 'wb') as f:
        os.setxattr(path, 'user.tiledb.datatype', b'INT32')
        f.write(numpy.array([3, -1, 70000], dtype='<i4').tobytes())
    assert cat_bytes(cat_prog, twin, '__meta/sizes') == numpy.array([3, -1, 70000], dtype='<i4').tobytes()
    x = run_cat(cat_prog, twin, '__meta/sizes', extra=['-x'])
    assert b'user.tiledb.datatype=INT32' in x.stdout, x
    assert os.getxattr(path, 'user.tiledb.datatype') == b'INT32'
    assert os.getxattr(path, 'user.tiledb.shape') == b'3'

    # A key with '/' in it, and a rewrite of an existing key.
    write_file(os.path.join(meta, 'a%2Fb'), b'slash')
    assert cat_bytes(cat_prog, twin, '__meta/a%2Fb') == b'slash'
    write_file(os.path.join(meta, 'greeting'), b'bye')
    assert read_file(os.path.join(meta, 'greeting')) == b'bye'

    # rm deletes the key; each change is one more file in __meta.
    os.unlink(os.path.join(meta, 'greeting'))
    assert sorted(os.listdir(meta)) == ['a%2Fb', 'sizes']
    assert run_cat(cat_prog, twin, '__meta/greeting').returncode != 0
    # 5 changes, one metadata file each (the shell's redirection stores once)
    assert len(os.listdir(os.path.join(twin, '__meta'))) == 5

    # An empty value is a value (stored with count 0), as TileDB keeps it;
    # a file only truncated is stored by its last close (the release).
    open(os.path.join(meta, 'empty'), 'wb').close()
    wait_for(lambda: 'empty' in os.listdir(meta), 'the empty value stored')
    assert cat_bytes(cat_prog, twin, '__meta/empty') == b''
    assert os.path.getsize(os.path.join(meta, 'empty')) == 0

    # A type set, then taken back before the close: the file reports none
    # while open, and the value is stored as a string.
    path = os.path.join(meta, 'untyped')
    with open(path, 'wb') as f:
        os.setxattr(path, 'user.tiledb.datatype', b'INT64')
        assert os.getxattr(path, 'user.tiledb.datatype') == b'INT64'
        assert os.listxattr(path) == ['user.tiledb.datatype']
        os.removexattr(path, 'user.tiledb.datatype')
        assert os.listxattr(path) == []
        with pytest.raises(OSError) as e:
            os.removexattr(path, 'user.tiledb.datatype')
        assert e.value.errno == errno.ENODATA
        f.write(b'12345')
        # space made ahead in a value being written: refused, as it
        # would store zeros the writer never wrote
        with pytest.raises(OSError) as e:
            os.posix_fallocate(f.fileno(), 0, 4096)
        assert e.value.errno == errno.EROFS
    assert cat_bytes(cat_prog, twin, '__meta/untyped') == b'12345'
    assert os.getxattr(path, 'user.tiledb.datatype') == b'STRING_UTF8'
    os.unlink(path)

    # The wrong type: refused when set, or when the size does not fit it.
    bad = os.path.join(meta, 'bad')
    with open(bad, 'wb') as f:
        with pytest.raises(OSError) as e:
            os.setxattr(bad, 'user.tiledb.datatype', b'NOT_A_TYPE')
        assert e.value.errno == errno.EINVAL
    assert not os.path.exists(bad)
    f = open(bad, 'wb')
    os.setxattr(bad, 'user.tiledb.datatype', b'INT64')
    f.write(b'12345')
    with pytest.raises(OSError) as e:
        f.close()
    assert e.value.errno == errno.EINVAL
    assert not os.path.exists(bad)
    assert len(os.listdir(os.path.join(twin, '__meta'))) == 8
    with pytest.raises(OSError) as e:
        os.unlink(os.path.join(meta, 'nosuchkey'))
    assert e.value.errno == errno.ENOENT


# Metadata keys a folder cannot hold as they are, and the key "__attr" that
# the empty key is shown as: {key: name in __meta/} (docs/LAYOUT.md).
ODD_KEYS = {'.': '%2E', '..': '%2E.', '': '__attr', '__attr': '%5F_attr'}


def test_meta_odd_key_names(create_prog, cat_prog, mount, tmp_path):
    """Creating MOUNT/__meta/%2E stores key "." (and so on for "..", ""
    and "__attr"); each key is then listed once under its own name and
    reads back through it, in the mount and by tiledbfs-cat; rm of that
    name deletes that key."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    mnt = mount(twin, ['rw'])
    meta = os.path.join(mnt, '__meta')
    for i, name in enumerate(ODD_KEYS.values()):
        write_file(os.path.join(meta, name), b'value %d' % i)
    # the keys themselves, as __zarr/.zattrs holds them
    zattrs = json.loads(cat_bytes(cat_prog, twin, '__zarr/.zattrs'))
    assert zattrs == {k: 'value %d' % i for i, k in enumerate(ODD_KEYS)}
    assert sorted(os.listdir(meta)) == sorted(ODD_KEYS.values())
    for i, name in enumerate(ODD_KEYS.values()):
        assert read_file(os.path.join(meta, name)) == b'value %d' % i, name
        assert cat_bytes(cat_prog, twin, '__meta/' + name) == b'value %d' % i, name
    # a name no key is shown under is refused, and stores nothing
    for name in ('%41', '%2E%2E', '%5F_meta', '100%'):
        with pytest.raises(OSError) as e:
            write_file(os.path.join(meta, name), b'x')
        assert e.value.errno == errno.EINVAL, name
    os.unlink(os.path.join(meta, '%2E'))
    assert sorted(os.listdir(meta)) == sorted(['%2E.', '__attr', '%5F_attr'])
    zattrs = json.loads(cat_bytes(cat_prog, twin, '__zarr/.zattrs'))
    assert sorted(zattrs) == ['', '..', '__attr']
    assert not mount.unmount(mnt)
    assert len(os.listdir(os.path.join(twin, '__meta'))) == len(ODD_KEYS) + 1


def wait_for(cond, what, timeout=MOUNT_TIMEOUT):
    """Polls cond() until it is true, for what the daemon does after close()
    returns: the kernel sends the release of a file's last close without
    waiting for its answer."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f'{what}: not after {timeout} s')
        time.sleep(0.02)


def meta_files(twin):
    return len(os.listdir(os.path.join(twin, '__meta')))


# One write by an ordinary tool: (name, command, the value it stores).  The
# shells open the file, dup2() it to the standard output and close the
# original (a flush of the truncated, empty file) before the command writes.
ONE_WRITE = [
    ('bash builtin echo', lambda p, src: ['bash', '-c', 'echo -n degC > "$1"', 'bash', p], b'degC'),
    ('sh, /bin/echo', lambda p, src: ['sh', '-c', '/bin/echo -n degC > "$1"', 'sh', p], b'degC'),
    ('printf', lambda p, src: ['sh', '-c', 'printf "%s" "a b c" > "$1"', 'sh', p], b'a b c'),
    ('python', lambda p, src: ['/usr/bin/python3', '-c',
                               'import sys\nf = open(sys.argv[1], "w")\nf.write("py")\nf.close()', p],
     b'py'),
    ('cp', lambda p, src: ['cp', src, p], None),
    ('dd bs=7', lambda p, src: ['dd', 'if=' + src, 'of=' + p, 'bs=7', 'status=none'], None),
    ('tee', lambda p, src: ['sh', '-c', 'tee "$1" < "$2" > /dev/null', 'sh', p, src], None),
]


def test_meta_one_value_per_write(create_prog, cat_prog, mount, tmp_path):
    """One write by any ordinary tool stores one value, once: one new
    metadata file, holding the bytes written (never the empty value a
    shell's redirection flushes first); `: > KEY` stores an empty value."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    mnt = mount(twin, ['rw'])
    meta = os.path.join(mnt, '__meta')
    src = str(tmp_path / 'value.txt')
    write_file(src, b'from a file, written in pieces\n' * 3)
    made = 0
    for i, (what, cmd, want) in enumerate(ONE_WRITE):
        want = read_file(src) if want is None else want
        key = f'k{i}'
        r = subprocess.run(cmd(os.path.join(meta, key), src), capture_output=True,
                           timeout=CAT_TIMEOUT)
        assert r.returncode == 0, f'{what}: {r.stderr.decode(errors="replace")}'
        made += 1
        assert meta_files(twin) == made, f'{what}: {meta_files(twin) - made + 1} metadata files'
        assert read_file(os.path.join(meta, key)) == want, what
        assert cat_bytes(cat_prog, twin, '__meta/' + key) == want, what
    # `: > KEY`: an intentional empty value, stored at the last close
    for i, cmd in enumerate([['bash', '-c', ': > "$1"', 'bash'], ['sh', '-c', '> "$1"', 'sh']]):
        key = f'empty{i}'
        subprocess.run(cmd + [os.path.join(meta, key)], check=True, timeout=CAT_TIMEOUT)
        made += 1
        wait_for(lambda: meta_files(twin) == made, f'{cmd}: the empty value stored')
        assert os.path.getsize(os.path.join(meta, key)) == 0
        assert run_cat(cat_prog, twin, '__meta/' + key).returncode == 0
        assert cat_bytes(cat_prog, twin, '__meta/' + key) == b''
    # nothing more comes later (the releases of those files store nothing)
    assert not mount.unmount(mnt)
    assert meta_files(twin) == made
    assert cat_bytes(cat_prog, twin, '__meta/k0') == b'degC'


def tmpfs(path, size):
    """A tmpfs of `size` at `path` (root only); returns a function that
    remounts it with the options given."""
    if os.geteuid() != 0:
        pytest.skip('mounting a tmpfs needs root')
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size},mode=0755', 'tmpfs', path],
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs here: {r.stderr.decode(errors="replace").strip()}')

    def remount(opts):
        subprocess.run(['mount', '-o', 'remount,' + opts, path], check=True, capture_output=True)
    return remount


@pytest.fixture
def scratch_fs(tmp_path):
    """A small tmpfs (1 MiB) under tmp_path, unmounted at teardown."""
    path = str(tmp_path / 'tmpfs')
    remount = tmpfs(path, '1m')
    yield path, remount
    subprocess.run(['umount', '-l', path], capture_output=True)


def test_meta_failed_store_keeps_failing(create_prog, cat_prog, mount, tmp_path, scratch_fs):
    """A metadata value that cannot be stored (its array on a file system
    remounted read-only) fails fsync, every later fsync and the close (each
    tries again), and is stored once the disk takes it."""
    fs, remount = scratch_fs
    case = get_case('dense_1d_basic')
    twin = os.path.join(fs, 'twin')
    made = make_twin(create_prog, cat_prog, case.array, twin, tmp_path)
    assert made.returncode == 0, made.stderr.decode(errors='replace')
    mnt = mount(twin, ['rw', 'staging_dir=' + str(tmp_path / 'staging')])
    meta = os.path.join(mnt, '__meta')
    remount('ro')
    fd = os.open(os.path.join(meta, 'newkey'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, b'lost?')
    failures = []
    for call in (os.fsync, os.fsync, os.close):
        try:
            call(fd)
            failures.append(f'{call.__name__}: succeeded')
        except OSError as e:
            failures.append(f'{call.__name__}: {errno.errorcode.get(e.errno, e.errno)}')
    # (a failed close(2) frees the descriptor all the same)
    assert failures == ['fsync: EROFS', 'fsync: EROFS', 'close: EROFS'], failures
    assert meta_files(twin) == 0
    # the file goes with its release (whose store fails again)
    wait_for(lambda: not os.path.exists(os.path.join(meta, 'newkey')), 'newkey gone')
    # a tool's write fails too (echo reports its failed close)
    r = subprocess.run(['sh', '-c', '/bin/echo -n x > "$1"', 'sh', os.path.join(meta, 'k')],
                       capture_output=True, timeout=CAT_TIMEOUT)
    assert r.returncode != 0, 'echo succeeded on a read-only disk'
    # the disk writable again: the next fsync stores the value, once
    fd = os.open(os.path.join(meta, 'newkey'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, b'kept')
        with pytest.raises(OSError):
            os.fsync(fd)
    finally:
        remount('rw')
    os.fsync(fd)
    os.close(fd)
    assert meta_files(twin) == 1
    assert read_file(os.path.join(meta, 'newkey')) == b'kept'
    assert cat_bytes(cat_prog, twin, '__meta/newkey') == b'kept'
    assert not mount.unmount(mnt)
    assert meta_files(twin) == 1


def fill(fs):
    """Fills file system `fs` (a small tmpfs) with one file; returns its path."""
    path = os.path.join(fs, 'filler')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            os.write(fd, b'\0' * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return path


def test_write_errors_tell_the_cause(create_prog, cat_prog, mount, tmp_path, scratch_fs):
    """A full disk and a read-only one reach mv, close and __error as
    themselves (ENOSPC, EROFS), not as EIO, and the daemon's log names the
    cause; the array is unchanged, and the same commit works once the disk
    takes it."""
    fs, remount = scratch_fs
    case = get_case('dense_1d_basic')
    twin = os.path.join(fs, 'twin')
    made = make_twin(create_prog, cat_prog, case.array, twin, tmp_path)
    assert made.returncode == 0, made.stderr.decode(errors='replace')
    staging = str(tmp_path / 'staging')
    mnt = mount(twin, ['rw', 'staging_dir=' + staging])
    files = dense_files(case)
    stage(mnt, 's', files)
    meta = os.path.join(mnt, '__meta')

    def meta_close_error(key):
        f = open(os.path.join(meta, key), 'wb')
        f.write(b'a value')
        try:
            f.close()
        except OSError as e:
            return e.errno
        return None

    filler = fill(fs)
    for cause, code, text in [('full', errno.ENOSPC, 'no space left'),
                              ('read-only', errno.EROFS, 'read-only')]:
        if cause == 'read-only':
            os.unlink(filler)
            remount('ro')
        e = commit(mnt, 's')
        assert e == code, f'{cause}: mv: {errno.errorcode.get(e, e) if e else "succeeded"}'
        why = read_file(os.path.join(staging, 's', '__error')).decode()
        assert text in why, f'{cause}: __error: {why!r}'
        e = meta_close_error('k')
        assert e == code, f'{cause}: close: {errno.errorcode.get(e, e) if e else "succeeded"}'
        log = read_file(mnt + '.stderr').decode(errors='replace')
        assert f'commit of __staging/s: ' in log and text in log, log
        assert committed_fragments(twin)[0] == []
        assert os.listdir(os.path.join(twin, '__meta')) == []
    remount('rw')
    assert commit(mnt, 's') is None
    assert meta_close_error('k') is None
    assert read_file(os.path.join(mnt, 'a')) == files['a']
    assert read_file(os.path.join(meta, 'k')) == b'a value'
    assert len(committed_fragments(twin)[0]) == 1


def test_meta_read_only_without_rw(cat_prog, mount, tmp_path):
    case = get_case('metadata_types')
    mnt = mount(case.array, case_options(case, tmp_path))
    meta = os.path.join(mnt, '__meta')
    key = sorted(os.listdir(meta))[0]
    for fn in [lambda: open(os.path.join(meta, key), 'wb').close(),
               lambda: open(os.path.join(meta, 'new'), 'wb').close(),
               lambda: os.unlink(os.path.join(meta, key))]:
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == errno.EROFS


# --------------------------------------------------------------- SIGKILL

BIG_SHAPE = (2048, 2048)        # float64: 32 MiB staged


def big_schema():
    """A dense 2048 x 2048 FLOAT64 array, ZSTD-filtered, in __array.json's
    schema form."""
    dim = lambda name: {'name': name, 'datatype': 'INT64', 'domain': [0, 2047],
                        'tile_extent': 256, 'filters': [{'type': 'ZSTD', 'level': -1}]}
    schema = {
        'array_type': 'dense', 'tile_order': 'row-major', 'cell_order': 'row-major',
        'capacity': 10000, 'allows_duplicates': False,
        'dims': [dim('r'), dim('c')],
        'attrs': [{'name': 'v', 'datatype': 'FLOAT64', 'cell_val_num': 1, 'nullable': False,
                   'fill_hex': '000000000000f87f', 'filters': [{'type': 'ZSTD', 'level': 1}]}],
        'current_domain': None,
        'coords_filters': [{'type': 'ZSTD', 'level': -1}],
        'offsets_filters': [{'type': 'ZSTD', 'level': -1}],
        'validity_filters': [{'type': 'RLE', 'level': -1}],
        'version': 22,
    }
    return {'type': 'array', 'array_type': 'dense', 'schema': schema}


class Daemon:
    """One `tiledbfs -f -o rw` we kill ourselves."""

    def __init__(self, prog, source, mnt, opts, log, wrap=()):
        self.mnt = mnt
        os.makedirs(mnt, exist_ok=True)
        with open(log, 'ab') as err:
            self.proc = subprocess.Popen(list(wrap) + [prog, '-f', '-o', ','.join(opts), source, mnt],
                                         stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not os.path.ismount(mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f'tiledbfs did not mount {source}: {read_file(log)[-2000:]!r}')
            time.sleep(0.05)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        subprocess.run(['fusermount3', '-u', '-z', self.mnt], capture_output=True)

    def stop(self):
        if self.proc.poll() is None:
            subprocess.run(['fusermount3', '-u', self.mnt], capture_output=True)
            try:
                self.proc.wait(timeout=MOUNT_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
        else:
            # it died: its mount answers ENOTCONN (ismount says False)
            subprocess.run(['fusermount3', '-u', '-z', self.mnt], capture_output=True)
        if os.path.ismount(self.mnt):
            subprocess.run(['fusermount3', '-u', '-z', self.mnt], capture_output=True)


def committed_fragments(twin):
    """Fragment folders with their commit file, and folders without one."""
    frags = sorted(os.listdir(os.path.join(twin, '__fragments')))
    commits = os.listdir(os.path.join(twin, '__commits')) if os.path.isdir(os.path.join(twin, '__commits')) else []
    done = [f for f in frags if any(c.startswith(f) for c in commits)]
    return done, [f for f in frags if f not in done]


def test_sigkill_during_commit(fs_prog, create_prog, cat_prog, tmp_path):
    """SIGKILL in the middle of a large commit: after a remount the array is
    as before (or, when the commit had finished, whole and right) and the
    staged files are intact."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    schema = str(tmp_path / 'big.json')
    with open(schema, 'w') as f:
        json.dump(big_schema(), f)
    twin = str(tmp_path / 'big')
    r = subprocess.run([create_prog, schema, twin], capture_output=True, timeout=CAT_TIMEOUT)
    assert r.returncode == 0, r.stderr.decode(errors='replace')
    rng = numpy.random.default_rng(7)
    values = rng.standard_normal(BIG_SHAPE).tobytes()
    staging_dir = str(tmp_path / 'staging')
    opts = ['rw', 'staging_dir=' + staging_dir]
    mnt = str(tmp_path / 'mnt')
    log = str(tmp_path / 'daemon.log')

    d = Daemon(fs_prog, twin, mnt, opts, log)
    try:
        stage(mnt, 'big', {'v': values})
    finally:
        d.stop()
    want = digests(os.path.join(staging_dir, 'big'))

    outcomes = []
    seen_partial = []
    for delay in [0.02, 0.05, 0.1, 0.2, 0.35, 0.6, 1.0, 1.6]:
        d = Daemon(fs_prog, twin, mnt, opts, log)
        try:
            before = sorted(os.listdir(os.path.join(mnt, '__fragments')))
            mover = subprocess.Popen([sys.executable, '-c',
                                      'import os,sys; os.rename(sys.argv[1], sys.argv[2])',
                                      os.path.join(mnt, STAGING, 'big'),
                                      os.path.join(mnt, '__fragments', 'big')],
                                     stderr=subprocess.DEVNULL)
            time.sleep(delay)
            finished = mover.poll() is not None
            d.kill()
            mover.wait(timeout=MOUNT_TIMEOUT)
        finally:
            d.stop()
        done, partial = committed_fragments(twin)
        partial, seen = [p for p in partial if p not in seen_partial], partial
        seen_partial = seen
        d = Daemon(fs_prog, twin, mnt, opts, log)
        try:
            listed = sorted(os.listdir(os.path.join(mnt, '__fragments')))
            assert listed == done, f'listed {listed}, committed on disk {done}'
            if listed == before:
                # Not committed: the staged files are all there, unchanged.
                assert digests(os.path.join(mnt, STAGING, 'big')) == want
                assert digests(os.path.join(staging_dir, 'big')) == want
                assert read_file(os.path.join(mnt, 'v')) == bytes.fromhex('000000000000f87f') * (2048 * 2048)
                outcomes.append(('interrupted' if partial else
                                 'killed before the commit' if not finished else 'failed', delay))
            else:
                assert len(listed) == len(before) + 1
                assert read_file(os.path.join(mnt, 'v')) == values, 'a committed fragment reads wrong'
                staged = os.path.join(staging_dir, 'big')
                if os.path.isdir(staged):
                    # killed after the commit file, before or during the
                    # clean-up: what is left is unchanged, and while any
                    # file is gone the marker (removed last) is still there
                    left = digests(staged)
                    assert all(want.get(k) == v for k, v in left.items()), left
                    assert left == want or os.path.exists(os.path.join(staged, '__fragment'))
                outcomes.append(('committed', delay))
                break
        finally:
            d.stop()
    print('sigkill outcomes:', outcomes)
    assert any(o == 'interrupted' for o, _ in outcomes), \
        f'no attempt was killed in the middle of the commit: {outcomes}'


def test_kill_during_cleanup(fs_prog, create_prog, cat_prog, tmp_path):
    """The daemon killed (strace: SIGKILL) at each unlinkat and renameat of a
    commit and of the clean-up of its staged folder: after a remount the
    staged folder is whole (with its marker) or gone, committing it again
    writes nothing new and removes it, and nothing is left in the staging
    folder; the array has the one fragment, read right."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    strace = shutil.which('strace')
    if strace is None:
        pytest.skip('strace is not installed')
    case, empty = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    files = dense_files(case)
    files['__subarray.json'] = b'[[1, 50]]'
    mnt = str(tmp_path / 'mnt')
    log = str(tmp_path / 'daemon.log')
    killed = []
    for call, n in [('unlinkat', k) for k in range(1, 8)] + [('renameat', 1), ('renameat', 2)]:
        twin = str(tmp_path / f'twin-{call}-{n}')
        shutil.copytree(empty, twin)
        staging = str(tmp_path / f'staging-{call}-{n}')
        opts = ['rw', 'staging_dir=' + staging]
        d = Daemon(fs_prog, twin, mnt, opts, log)
        try:
            stage(mnt, 's', files)
        finally:
            d.stop()
        d = Daemon(fs_prog, twin, mnt, opts, log,
                   wrap=[strace, '-f', '-qq', '-o', '/dev/null', '-e', 'trace=' + call,
                         '-e', f'inject={call}:signal=SIGKILL:when={n}'])
        try:
            e = commit(mnt, 's')
            if e is not None:
                d.proc.wait(timeout=MOUNT_TIMEOUT)
        finally:
            d.stop()
        if e is not None:
            killed.append(f'{call}#{n}')
        d = Daemon(fs_prog, twin, mnt, opts, log)
        try:
            folder = os.path.join(mnt, STAGING, 's')
            if os.path.exists(folder):
                # whole: every staged file (and the marker, once the commit began)
                left = set(os.listdir(os.path.join(staging, 's'))) - {'__fragment'}
                assert left == set(files), f'{call}#{n}: a part of the staged folder: {left}'
                e = commit(mnt, 's')
                why = read_file(os.path.join(folder, '__error')).decode() if e else ''
                assert e is None, f'{call}#{n}: the retry: {errno.errorcode.get(e, e)} {why}'
            assert os.listdir(os.path.join(mnt, STAGING)) == []
            assert os.listdir(staging) == [], f'{call}#{n}: left {os.listdir(staging)}'
            done, partial = committed_fragments(twin)
            assert len(done) == 1 and not partial, f'{call}#{n}: {done} {partial}'
            assert read_file(os.path.join(mnt, 'a')) == files['a']
        finally:
            d.stop()
    print('killed at', killed)
    # the marker written, and each step of the clean-up
    assert len(killed) >= 6 and 'renameat#1' in killed, killed


def test_trash_and_markers(create_prog, cat_prog, mount, tmp_path):
    """A committed staged folder being removed (renamed to .committed.NAME,
    NAME the fragment's) is never listed nor made through the mount, and
    one left by a killed daemon goes at the next mount.  rmdir of a staged
    folder whose marker names an uncommitted fragment folder removes that
    folder first (the marker goes last)."""
    case, twin = twin_of('dense_1d_basic', create_prog, cat_prog, tmp_path)
    staging = str(tmp_path / 'staging')
    frag = '__5_5_0123456789abcdef0123456789abcdef_22'
    os.makedirs(os.path.join(staging, '.committed.' + frag), mode=0o700)
    os.chmod(staging, 0o700)
    write_file(os.path.join(staging, '.committed.' + frag, 'a'), b'left over')
    write_file(os.path.join(staging, '.committed.' + frag, '__fragment'), frag.encode())
    os.makedirs(os.path.join(staging, '.committed.x'), mode=0o700)   # not a trash name
    mnt = mount(twin, ['rw', 'staging_dir=' + staging])
    assert sorted(os.listdir(staging)) == ['.committed.x']
    assert os.listdir(os.path.join(mnt, STAGING)) == ['.committed.x']
    with pytest.raises(OSError) as e:
        os.mkdir(os.path.join(mnt, STAGING, '.committed.' + frag))
    assert e.value.errno == errno.EINVAL
    os.rmdir(os.path.join(mnt, STAGING, '.committed.x'))
    # rmdir: the uncommitted fragment folder the marker names goes first
    os.mkdir(os.path.join(mnt, STAGING, 's'))
    write_file(os.path.join(staging, 's', '__fragment'), frag.encode())
    os.makedirs(os.path.join(twin, '__fragments', frag))
    write_file(os.path.join(twin, '__fragments', frag, 'a0.tdb'), b'partial')
    os.rmdir(os.path.join(mnt, STAGING, 's'))
    assert not os.path.exists(os.path.join(twin, '__fragments', frag))
    assert os.listdir(staging) == []
