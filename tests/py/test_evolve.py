"""test_evolve.py: tiledbfs-create --evolve as a user runs it: an attribute added and one dropped on a folder and in every object store (both S3 servers and Azurite), read back through tiledbfs-cat and a mount; a bad evolution changes nothing."""
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


def test_evolve_s3(cat_prog, store_server, tmp_path):
    s3_server = store_server
    arr, temperature = sample(cat_prog, tmp_path)
    prefix = f'evolve/{s3_server.name}/{os.getpid()}'
    s3_server.upload(arr, prefix)
    url = s3_server.url(prefix)
    r = evolve(url, EVOLUTION, tmp_path)
    assert r.returncode == 0, r.stderr
    schemas = [k for k in s3_server.client.keys(prefix + '/__schema/')]
    assert len(schemas) == 2, schemas
    check_evolved(cat_prog, url, temperature)


def stage_evolution(mnt, evo, name='evo'):
    d = os.path.join(mnt, '__staging', name)
    os.mkdir(d)
    with open(os.path.join(d, '__evolve.json'), 'w') as f:
        f.write(evo if isinstance(evo, str) else json.dumps(evo))
    return d


def commit(mnt, name='evo'):
    try:
        os.rename(os.path.join(mnt, '__staging', name), os.path.join(mnt, '__fragments', name))
        return 0
    except OSError as e:
        return e.errno


def test_evolve_on_mount(cat_prog, mount, tmp_path):
    """A staged folder holding __evolve.json, moved into __fragments,
    evolves the schema: the mount shows z at once (count gone), and so do
    tiledbfs-cat and a fresh mount; a bad one is EBADMSG with the reason
    in __error and no schema written."""
    import errno
    arr, temperature = sample(cat_prog, tmp_path)
    mnt = mount(arr, ['rw'])
    d = stage_evolution(mnt, {"drop_attributes": ["nope"]}, 'bad')
    assert commit(mnt, 'bad') == errno.EBADMSG
    assert 'no attribute "nope"' in open(os.path.join(d, '__error')).read()
    assert len(schemas(arr)) == 1
    stage_evolution(mnt, EVOLUTION)
    assert commit(mnt) == 0
    assert len(schemas(arr)) == 2
    names = os.listdir(mnt)
    assert 'z' in names and 'count' not in names
    with open(os.path.join(mnt, 'z'), 'rb') as f:
        assert f.read() == b'\x2a\x00' * CELLS
    check_evolved(cat_prog, arr, temperature)
    fresh = mount(arr, [])
    with open(os.path.join(fresh, 'z'), 'rb') as f:
        assert f.read() == b'\x2a\x00' * CELLS


def test_evolve_on_s3_mount(cat_prog, mount, store_server, tmp_path):
    """The same gesture on an s3:// (azure://) array: a second schema key,
    and the view evolves at once."""
    s3_server = store_server
    arr, temperature = sample(cat_prog, tmp_path)
    prefix = f'evolvemnt/{s3_server.name}/{os.getpid()}'
    s3_server.upload(arr, prefix)
    url = s3_server.url(prefix)
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    stage_evolution(mnt, EVOLUTION)
    assert commit(mnt) == 0
    assert len(s3_server.client.keys(prefix + '/__schema/')) == 2
    with open(os.path.join(mnt, 'z'), 'rb') as f:
        assert f.read() == b'\x2a\x00' * CELLS
    check_evolved(cat_prog, url, temperature)
