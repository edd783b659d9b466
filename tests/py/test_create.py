"""test_create.py: tiledbfs-create makes, from each corpus case's __array.json, an array whose __array.json shows the same schema; bad input fails with one line and exit status 1."""
import json
import os
import subprocess

import pytest

from conftest import case_options, get_case, o_args, run_cat

TIMEOUT = 60


def run_create(prog, args, stdin=None):
    return subprocess.run([prog] + list(args), input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=TIMEOUT)


def key_opts(case, tmp_path):
    """Only the key_file= option of a case (a new array has no history for
    timestamp= to select)."""
    return [o for o in case_options(case, tmp_path) if o.startswith('key_file=')]


def array_json(cat_prog, array, opts):
    r = run_cat(cat_prog, array, '__array.json', opts)
    assert r.returncode == 0, r.stderr.decode(errors='replace')
    return json.loads(r.stdout)


def without_version(schema):
    return {k: v for k, v in schema.items() if k != 'version'}


def assert_one_line_error(r, *needles):
    err = r.stderr.decode(errors='replace')
    assert r.returncode == 1, f'exit {r.returncode}, stderr {err!r}'
    assert r.stdout == b''
    assert err.endswith('\n') and err.count('\n') == 1, f'not one line: {err!r}'
    assert err.startswith('tiledbfs-create: '), err
    for n in needles:
        assert n in err, f'{n!r} not in {err!r}'


def test_create_from_case(case, cat_prog, create_prog, tmp_path):
    if case.info.get('kind') != 'array':
        pytest.skip(f'{case.name} is a {case.info.get("kind")}, not an array')
    opts = key_opts(case, tmp_path)
    orig = array_json(cat_prog, case.array, case_options(case, tmp_path))
    src = tmp_path / 'array.json'
    src.write_text(json.dumps(orig))
    dst = str(tmp_path / 'new')
    r = run_create(create_prog, o_args(opts) + [str(src), dst])
    assert r.returncode == 0, r.stderr.decode(errors='replace')
    assert r.stderr == b''
    got = array_json(cat_prog, dst, opts)
    assert without_version(got['schema']) == without_version(orig['schema'])
    assert got['schema']['version'] == 22
    assert got['fragments'] == []
    for d in ('__schema', '__commits', '__fragments', '__meta',
              '__fragment_meta', '__labels'):
        assert os.path.isdir(os.path.join(dst, d)), d
    assert len(os.listdir(os.path.join(dst, '__schema'))) == 2
    if opts:
        # Encrypted: without the key the array cannot be read.
        r = run_cat(cat_prog, dst, '__array.json')
        assert r.returncode == 1


def test_schema_object_and_stdin(cat_prog, create_prog, tmp_path):
    case = get_case('dense_var_nullable')
    orig = array_json(cat_prog, case.array, [])
    text = json.dumps(orig['schema']).encode()
    dst = str(tmp_path / 'from_stdin')
    r = run_create(create_prog, ['-', dst], stdin=text)
    assert r.returncode == 0, r.stderr.decode(errors='replace')
    got = array_json(cat_prog, dst, [])
    assert without_version(got['schema']) == without_version(orig['schema'])


SPARSE = {'array_type': 'sparse',
          'dims': [{'name': 'd', 'datatype': 'UINT64',
                    'domain': [0, 18446744073709551614], 'tile_extent': None}],
          'attrs': [{'name': 'a', 'datatype': 'INT32'}]}


def test_uint64_domain(cat_prog, create_prog, tmp_path):
    src = tmp_path / 's.json'
    src.write_text(json.dumps(SPARSE))
    dst = str(tmp_path / 'u64')
    r = run_create(create_prog, [str(src), dst])
    assert r.returncode == 0, r.stderr.decode(errors='replace')
    got = array_json(cat_prog, dst, [])
    assert got['schema']['dims'][0]['domain'] == [0, 18446744073709551614]
    assert got['schema']['coords_filters'] == [{'type': 'ZSTD', 'level': -1}]


def test_bad_json(create_prog, tmp_path):
    src = tmp_path / 'bad.json'
    src.write_text('{"array_type": "sparse", ')
    dst = str(tmp_path / 'x')
    r = run_create(create_prog, [str(src), dst])
    assert_one_line_error(r, 'bad.json', 'line 1')
    assert not os.path.exists(dst)


def test_invalid_schemas(create_prog, tmp_path):
    dense_float = {'array_type': 'dense',
                   'dims': [{'name': 'x', 'datatype': 'FLOAT64',
                             'domain': [0, 1], 'tile_extent': 0.5}],
                   'attrs': [{'name': 'a', 'datatype': 'INT32'}]}
    big_extent = {'array_type': 'dense',
                  'dims': [{'name': 'x', 'datatype': 'INT32',
                            'domain': [0, 9], 'tile_extent': 20}],
                  'attrs': [{'name': 'a', 'datatype': 'INT32'}]}
    dup = dict(SPARSE, attrs=[{'name': 'd', 'datatype': 'INT8'}])
    typo = dict(SPARSE, capacty=5)
    for i, (schema, needle) in enumerate([
            (dense_float, 'floating point'),
            (big_extent, 'tile extent 20'),
            (dup, "'d' names both"),
            (typo, 'unknown key "capacty"'),
            ({'array_type': 'sparse', 'dims': []}, 'dims')]):
        src = tmp_path / f'bad{i}.json'
        src.write_text(json.dumps(schema))
        dst = str(tmp_path / f'bad{i}')
        r = run_create(create_prog, [str(src), dst])
        assert_one_line_error(r, needle)
        assert not os.path.exists(dst)


def test_existing_folder(create_prog, tmp_path):
    src = tmp_path / 's.json'
    src.write_text(json.dumps(SPARSE))
    dst = tmp_path / 'arr'
    assert run_create(create_prog, [str(src), str(dst)]).returncode == 0
    before = sorted(os.listdir(dst / '__schema'))
    r = run_create(create_prog, [str(src), str(dst)])
    assert_one_line_error(r, str(dst), 'not empty')
    assert sorted(os.listdir(dst / '__schema')) == before
    afile = tmp_path / 'afile'
    afile.write_bytes(b'x')
    r = run_create(create_prog, [str(src), str(afile)])
    assert_one_line_error(r, 'not a folder')
    # An existing empty folder is fine.
    empty = tmp_path / 'empty'
    empty.mkdir()
    r = run_create(create_prog, [str(src), str(empty)])
    assert r.returncode == 0, r.stderr.decode(errors='replace')


def test_options(create_prog, tmp_path):
    src = tmp_path / 's.json'
    src.write_text(json.dumps(SPARSE))
    r = run_create(create_prog, ['-o', 'timestamp=5', str(src),
                                 str(tmp_path / 'a')])
    assert_one_line_error(r, 'key_file')
    short = tmp_path / 'short.key'
    short.write_bytes(b'0' * 31)
    r = run_create(create_prog, ['-o', f'key_file={short}', str(src),
                                 str(tmp_path / 'b')])
    assert_one_line_error(r, '31 bytes')
    assert not os.path.exists(tmp_path / 'b')
    r = run_create(create_prog, [str(tmp_path / 'missing.json'),
                                 str(tmp_path / 'c')])
    assert_one_line_error(r, 'missing.json')
    r = run_create(create_prog, [str(src)])
    assert r.returncode == 1
