"""test_errors.py: damaged copies of corpus arrays: tiledbfs-cat fails cleanly, names the file and the tile, never prints wrong bytes, crashes or hangs."""
import glob
import os
import shutil
import struct
import subprocess

import pytest

from conftest import case_options, get_case, run_cat

TIMEOUT = 30


def copy_case(case, tmp_path):
    """A writable copy of the case's array."""
    dst = str(tmp_path / case.name)
    shutil.copytree(case.array, dst)
    for root, dirs, files in os.walk(dst):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return dst


def data_file(array, case, field):
    """The data file of an attribute in the case's only fragment (a<i>.tdb,
    i its position among the attributes)."""
    attrs = [n for n, f in case.fields().items() if f.get('role') == 'attr']
    frags = case.info['fragments']
    assert len(frags) == 1, f'{case.name} has {len(frags)} fragments'
    return os.path.join(array, '__fragments', frags[0], f'a{attrs.index(field)}.tdb')


def first_chunk(path):
    """(offset of the first chunk's filtered bytes, their length) in a data
    file (format_spec/tile.md: chunk count, then original length, filtered
    length, metadata length, metadata, filtered bytes)."""
    with open(path, 'rb') as f:
        head = f.read(20)
    nchunks, orig, filt, mdlen = struct.unpack('<QIII', head)
    assert nchunks >= 1 and filt > 0, f'{path}: unexpected tile header'
    return 20 + mdlen, filt


def flip(path, offset):
    with open(path, 'r+b') as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


def cat(prog, case, array, path, tmp_path, key_hex=None):
    opts = case_options(case, tmp_path, key_hex=key_hex)
    try:
        return run_cat(prog, array, path, opts, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f'tiledbfs-cat {path} hung (more than {TIMEOUT} s)')


def assert_clean_failure(proc, expected, must_name=(), why=''):
    """Non-zero exit (not a signal), no wrong byte on stdout, one message on
    stderr holding every string of must_name (case-insensitive)."""
    err = proc.stderr.decode(errors='replace')
    assert proc.returncode >= 0, f'killed by signal {-proc.returncode}: {err}'
    assert proc.returncode != 0, f'exit 0 on {why}; stderr: {err!r}'
    assert expected.startswith(proc.stdout), \
        f'{len(proc.stdout)} bytes on stdout that are not the expected ones ({why})'
    assert proc.stdout != expected
    assert err.strip(), f'no message on stderr ({why})'
    for s in must_name:
        assert s.lower() in err.lower(), f'stderr does not name {s!r}: {err!r}'


@pytest.mark.parametrize('name,field', [('filter_checksum_md5', 'a'),
                                        ('filter_checksum_sha256', 'a')])
def test_bad_checksum(name, field, corpus, cat_prog, tmp_path):
    case = get_case(name)
    array = copy_case(case, tmp_path)
    path = data_file(array, case, field)
    off, n = first_chunk(path)
    flip(path, off + n // 2)
    proc = cat(cat_prog, case, array, field, tmp_path)
    assert_clean_failure(proc, case.expected(field),
                         [os.path.basename(path), 'tile', 'checksum'],
                         'a flipped byte under a checksum filter')


def test_truncated_data_file(corpus, cat_prog, tmp_path):
    case = get_case('dense_1d_basic')
    array = copy_case(case, tmp_path)
    path = data_file(array, case, 'a')
    size = os.path.getsize(path)
    os.truncate(path, size // 2)
    proc = cat(cat_prog, case, array, 'a', tmp_path)
    assert_clean_failure(proc, case.expected('a'), [os.path.basename(path), 'tile'],
                         'a data file cut in half')


def test_truncated_data_file_to_zero(corpus, cat_prog, tmp_path):
    case = get_case('filter_gzip')
    array = copy_case(case, tmp_path)
    path = data_file(array, case, 'a')
    os.truncate(path, 0)
    proc = cat(cat_prog, case, array, 'a', tmp_path)
    assert_clean_failure(proc, case.expected('a'), [os.path.basename(path), 'tile'],
                         'an empty data file')


@pytest.mark.parametrize('name,field,where', [
    ('filter_gzip', 'a', 'middle'),    # deflate data under zlib's Adler-32
    ('filter_gzip', 'a', 'first'),     # the zlib header
    ('filter_zstd', 'a', 'first'),     # the zstd frame's magic number
])
def test_corrupt_compressed_tile(name, field, where, corpus, cat_prog, tmp_path):
    case = get_case(name)
    array = copy_case(case, tmp_path)
    path = data_file(array, case, field)
    off, n = first_chunk(path)
    flip(path, off if where == 'first' else off + n // 2)
    proc = cat(cat_prog, case, array, field, tmp_path)
    assert_clean_failure(proc, case.expected(field), [os.path.basename(path), 'tile'],
                         f'a flipped byte ({where}) in a compressed tile')


def test_wrong_key(corpus, cat_prog, tmp_path):
    case = get_case('encrypted_aes256gcm')
    good = case.info['key_hex']
    bad = bytes(b ^ 0x5A for b in bytes.fromhex(good)).hex()
    proc = cat(cat_prog, case, case.array, 'a', tmp_path, key_hex=bad)
    assert_clean_failure(proc, case.expected('a'), [], 'a wrong key')
    err = proc.stderr.decode(errors='replace')
    assert proc.stdout == b''
    assert len(err.strip().split('\n')) == 1, f'expected one line, got {err!r}'
    for secret in (bad, good, bytes.fromhex(bad).decode('latin-1')):
        assert secret not in err, 'the key appears in the error message'


def test_missing_key(corpus, cat_prog, tmp_path):
    case = get_case('encrypted_aes256gcm')
    proc = cat(cat_prog, case, case.array, 'a', tmp_path, key_hex='')
    assert_clean_failure(proc, case.expected('a'), ['key'], 'an encrypted array without a key')
    assert proc.stdout == b''


def test_damaged_schema(corpus, cat_prog, tmp_path):
    case = get_case('dense_1d_basic')
    array = copy_case(case, tmp_path)
    schema = glob.glob(os.path.join(array, '__schema', '__*'))
    schema = [s for s in schema if os.path.isfile(s)]
    assert len(schema) == 1
    size = os.path.getsize(schema[0])
    os.truncate(schema[0], size - 7)
    proc = cat(cat_prog, case, array, 'a', tmp_path)
    assert_clean_failure(proc, case.expected('a'), [os.path.basename(schema[0])],
                         'a truncated schema file')
    assert proc.stdout == b''


def test_key_on_unencrypted_array(corpus, cat_prog, fs_prog, tmp_path):
    """key_file= for an array that is not encrypted is an error at start-up,
    for tiledbfs-cat and for tiledbfs (before it mounts anything)."""
    case = get_case('dense_1d_basic')
    key = 'ab' * 32
    proc = cat(cat_prog, case, case.array, 'a', tmp_path, key_hex=key)
    err = proc.stderr.decode(errors='replace')
    assert proc.returncode != 0 and proc.stdout == b'', f'tiledbfs-cat accepted the key: {err!r}'
    assert 'not encrypted' in err and 'key_file' in err, err
    assert key not in err
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    opts = case_options(case, tmp_path, key_hex=key)
    for extra in ([], ['rw']):
        fs = subprocess.run([fs_prog, '-f', '-o', ','.join(opts + extra), case.array, str(mnt)],
                            capture_output=True, timeout=TIMEOUT)
        err = fs.stderr.decode(errors='replace')
        assert fs.returncode != 0, f'tiledbfs -o {",".join(opts + extra)} started'
        assert 'not encrypted' in err and 'key_file' in err, err
        assert not os.path.ismount(str(mnt))
