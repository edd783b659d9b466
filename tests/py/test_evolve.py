"""test_evolve.py: tiledbfs-create --evolve as a user runs it: an attribute added and one dropped on a folder and in both S3 servers, read back through tiledbfs-cat and a mount; a bad evolution changes nothing."""
import json
import os
import subprocess

from conftest import find_program, make_sample, run_cat

# scripts/make_sample.py's array (attributes temperature and count, written
# now: a schema evolved now is the newest also in listing order, which is
# how TileDB and tiledbfs pick the schema in force)
EVOLUTION = {"add_attributes": [{"name": "z", "datatype": "INT16", "cell_val_num": 1,
                                 "fill_hex": "2a00", "filters": []}],
             "drop_attributes": ["count"]}
CELLS = 8 * 6


def schemas(arr):
    return [n for n in os.listdir(os.path.join(arr, '__schema')) if n != '__enumerations']


def evolve(source, evo, tmp_path):
    path = tmp_path / 'evolution.json'
    path.write_text(evo if isinstance(evo, str) else json.dumps(evo))
    return subprocess.run([find_program(os.path.join('tools', 'tiledbfs-create')), '--evolve',
                           str(path), source], capture_output=True, timeout=60)


def check_evolved(cat_prog, source, temperature):
    z = run_cat(cat_prog, source, 'z')
    assert z.returncode == 0, z.stderr
    assert z.stdout == b'\x2a\x00' * CELLS
    assert run_cat(cat_prog, source, 'temperature').stdout == temperature
    b = run_cat(cat_prog, source, 'count')
    assert b.returncode == 1 and b'No such file' in b.stderr, b.stderr


def sample(cat_prog, tmp_path):
    arr = make_sample(tmp_path, '8x6', '4x3')
    t = run_cat(cat_prog, arr, 'temperature')
    assert t.returncode == 0 and len(t.stdout) == CELLS * 8
    return arr, t.stdout


def test_evolve_folder(cat_prog, mount, tmp_path):
    arr, temperature = sample(cat_prog, tmp_path)
    r = evolve(arr, EVOLUTION, tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(schemas(arr)) == 2
    check_evolved(cat_prog, arr, temperature)
    mnt = mount(arr, [])
    names = os.listdir(mnt)
    assert 'z' in names and 'count' not in names and 'temperature' in names
    with open(os.path.join(mnt, 'z'), 'rb') as f:
        assert f.read() == b'\x2a\x00' * CELLS


def test_evolve_refused(cat_prog, tmp_path):
    arr, _ = sample(cat_prog, tmp_path)
    for evo, says in (({"drop_attributes": ["nope"]}, b'no attribute "nope"'),
                      ({"add_attributes": [{"name": "count", "datatype": "INT8"}]},
                       b'count'),
                      ('{"add_attributes": ', b'evolution JSON')):
        r = evolve(arr, evo, tmp_path)
        assert r.returncode == 1 and says in r.stderr, r.stderr
        assert len(r.stderr.splitlines()) == 1, r.stderr
        assert len(schemas(arr)) == 1


def test_evolve_s3(cat_prog, s3_server, tmp_path):
    arr, temperature = sample(cat_prog, tmp_path)
    prefix = f'evolve/{s3_server.name}/{os.getpid()}'
    s3_server.upload(arr, prefix)
    url = s3_server.url(prefix)
    r = evolve(url, EVOLUTION, tmp_path)
    assert r.returncode == 0, r.stderr
    schemas = [k for k in s3_server.client.keys(prefix + '/__schema/')]
    assert len(schemas) == 2, schemas
    check_evolved(cat_prog, url, temperature)
