"""test_bench_tools.py: the two programs scripts/bench times (tools/):
tiledbfs-decode-bench reads a field through the engine and counts what it
read and decoded; tiledbfs-codec-bench round-trips a file through each
codec library, checking every chunk.  The figures they print are the
bench's; here, the bytes and counters must be right, and a bad argument
an error of one line."""
import os
import re
import subprocess

import pytest

from conftest import find_program, get_case

TIMEOUT = 60


def fields(line):
    """{key: value} of one line of key=value words."""
    return dict(w.split('=', 1) for w in line.split())


def run(prog, *args):
    return subprocess.run([prog] + list(args), capture_output=True, timeout=TIMEOUT)


def test_decode_bench_counts():
    """Two passes over a of dense_fragments_overlap on two threads in
    100-byte ranges: all 1,440 bytes each pass, its tiles decoded by the
    first (each a miss) and found cached by the second; through readers
    (-R) the same bytes; -l reads a prefix; a missing file is an error of
    one line."""
    prog = find_program(os.path.join('tools', 'tiledbfs-decode-bench'))
    case = get_case('dense_fragments_overlap')
    size = len(case.expected('a'))
    r = run(prog, '-t', '2', '-r', '100', '-n', '2', case.array, 'a')
    assert r.returncode == 0, r.stderr
    p1, p2 = [fields(x) for x in r.stdout.decode().splitlines()]
    assert p1['pass'] == '1' and p2['pass'] == '2'
    assert int(p1['bytes']) == int(p2['bytes']) == size
    assert int(p1['decodes']) == int(p1['misses']) > 0
    assert int(p2['decodes']) == 0 and int(p2['hits']) > 0
    r = run(prog, '-t', '2', '-r', '100', '-R', case.array, 'a')
    assert r.returncode == 0, r.stderr
    assert int(fields(r.stdout.decode())['bytes']) == size
    r = run(prog, '-t', '1', '-l', '100', case.array, 'a')
    assert r.returncode == 0, r.stderr
    assert int(fields(r.stdout.decode())['bytes']) == 100
    r = run(prog, case.array, 'nosuch')
    err = r.stderr.decode().strip()
    assert r.returncode == 1 and 'nosuch' in err and len(err.split('\n')) == 1, err


CODECS = ('zlib', 'libdeflate', 'lz4', 'zstd', 'bzip2', 'sha256', 'aes256gcm', 'memcpy')


@pytest.mark.parametrize('codec', CODECS)
def test_codec_bench_round_trip(codec, tmp_path):
    """200,000 bytes of a repeating pattern in four chunks, the last one
    short: every chunk comes back as it was (the program checks, exit 0),
    the compressors store less than they were given, AES-256-GCM as much
    (its IV and tag apart), the others nothing."""
    prog = find_program(os.path.join('tools', 'tiledbfs-codec-bench'))
    data = bytes((i * 7 + i // 1000) % 251 for i in range(200000))
    path = tmp_path / 'plain'
    path.write_bytes(data)
    r = run(prog, '-n', '2', codec, str(path))
    assert r.returncode == 0, r.stderr
    passes = [fields(x) for x in r.stdout.decode().splitlines()]
    assert [p['pass'] for p in passes] == ['1', '2']
    for p in passes:
        assert p['codec'] == codec and p['chunk'] == '65536'
        assert int(p['bytes']) == len(data)
        stored = int(p['stored'])
        if codec in ('sha256', 'memcpy'):
            assert stored == 0
        elif codec == 'aes256gcm':
            assert stored == len(data)
        else:
            assert 0 < stored < len(data) // 2, p


def test_codec_bench_refuses_unknown_codec(tmp_path):
    prog = find_program(os.path.join('tools', 'tiledbfs-codec-bench'))
    path = tmp_path / 'plain'
    path.write_bytes(b'x' * 10)
    r = run(prog, 'snappy', str(path))
    assert r.returncode == 1 and r.stdout == b''
    assert re.search(rb'CODEC: zlib', r.stderr), r.stderr
