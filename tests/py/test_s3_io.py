"""test_s3_io.py: how an object store's source (s3:// and azure://, on each server of conftest.py's store_server) is read (format/core/io_s3*.c): an open in a few sequential round trips whatever the number of fragments, listings past 1,000 keys, reads fetched ahead and coalesced returning the bytes of the local mount, the disk cache shared by two mounts, and a stalled server failing a read within its deadline.  Requests and round trips are counted by tests/py/latency_proxy.py between the programs and the server."""
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import (CORPUS, MOUNT_TIMEOUT, background_mount, case_names, case_options,
                      fuse_missing, get_case, read_tree, run_cat)
from latency_proxy import LatencyProxy
from s3fixture import corpus_url, through
from test_groups import copy_array, make_group

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'scripts'))
import bench_arrays  # noqa: E402  (arrays written with tiledbfs's own writer)

NAME_RE = re.compile(r'^__(\d+)_(\d+)_([0-9a-f]{32})_(\d+)$')


@pytest.fixture
def proxy(store_server, monkeypatch):
    """A LatencyProxy in front of the server (50 ms each way: a 100 ms round
    trip, so that requests sent together are told from requests sent one
    after another), the programs pointed at it."""
    yield from through(LatencyProxy((store_server.host, store_server.port), delay_ms=50),
                       monkeypatch, store_server)


def many_fragments(case, n, out):
    """The corpus array of `case` with its one fragment copied n - 1 times
    under later timestamped names (each with its commit file): an array of
    n fragments that all cover the same cells, the last one winning."""
    shutil.copytree(os.path.join(CORPUS, case, 'array'), out)
    frags = os.path.join(out, '__fragments')
    (first,) = os.listdir(frags)
    m = NAME_RE.match(first)
    t0, ver = int(m.group(1)), m.group(4)
    for i in range(1, n):
        name = f'__{t0 + i}_{t0 + i}_{uuid.uuid4().hex}_{ver}'
        shutil.copytree(os.path.join(frags, first), os.path.join(frags, name))
        open(os.path.join(out, '__commits', name + '.wrt'), 'wb').close()
    return out


def upload_many(server, case, n, tmp_path):
    """many_fragments(case, n) in the bucket: @return its URL."""
    prefix = f'{tmp_path.name}/{case}-{n}'
    server.upload(many_fragments(case, n, str(tmp_path / f'{case}-{n}')), prefix)
    return server.url(prefix)


def object_gets(proxy):
    """The GETs of objects (not listings) the proxy saw."""
    return [r for r in proxy.requests if r.method == 'GET' and '?' not in r.target]


# ----------------------------------------------------------- the open

def test_open_waves_do_not_grow_with_fragments(cat_prog, store_server, proxy, tmp_path):
    """Opening an array of 40 fragments takes as many sequential round trips
    as one of 2 (its listings, schemas and fragment metadata are asked for
    together), and few: 8 requests per fragment one after another before."""
    if not os.path.isdir(CORPUS):
        pytest.skip('corpus not found')
    waves, requests = {}, {}
    for n in (2, 40):
        url = upload_many(store_server, 'dense_1d_basic', n, tmp_path)
        proxy.reset()
        r = run_cat(cat_prog, url, '__fragments')
        assert r.returncode == 0, r.stderr
        assert len(r.stdout.split()) == n
        waves[n], requests[n] = proxy.waves(), proxy.count()
    assert requests[40] >= requests[2] + 38         # each fragment's metadata
    assert waves[40] == waves[2], (waves, requests)
    assert waves[40] <= 4, (waves, requests)


@pytest.mark.parametrize('name', ['metadata_types', 'consolidated_array_meta'])
def test_open_with_metadata_waves(name, cat_prog, store_corpus, proxy):
    """An array with metadata (consolidated, with its .vac file, in
    consolidated_array_meta) opens in 2 round trips, its listings then
    every file at once, metadata files with the schemas and the fragments'
    metadata (3 before), and every key reads back."""
    case = get_case(name)
    proxy.reset()
    r = run_cat(cat_prog, corpus_url(store_corpus, name), '__meta')
    assert r.returncode == 0, r.stderr
    keys = sorted(os.listdir(os.path.join(case.dir, 'expected', '__meta')))
    assert sorted(r.stdout.decode().split()) == keys
    assert proxy.waves() == 2, proxy.requests
    for key in keys:
        r = run_cat(cat_prog, corpus_url(store_corpus, name), '__meta/' + key)
        assert r.returncode == 0 and r.stdout == case.expected('__meta/' + key), key


def upload_group_of(server, n, tmp_path):
    """A group of n copies of dense_1d_basic (m0 to m{n-1}) and n
    subgroups (s0 to s{n-1}) of 2 more each (x0, x1), in the bucket:
    @return its URL."""
    folder = str(tmp_path / f'group-{n}')
    make_group(folder, [(f'm{i}', f'm{i}', True, 'array') for i in range(n)] +
               [(f's{i}', f's{i}', True, 'group') for i in range(n)])
    for i in range(n):
        copy_array('dense_1d_basic', os.path.join(folder, f'm{i}'))
        sub = os.path.join(folder, f's{i}')
        make_group(sub, [(x, x, True, 'array') for x in ('x0', 'x1')])
        for x in ('x0', 'x1'):
            copy_array('dense_1d_basic', os.path.join(sub, x))
    prefix = f'{tmp_path.name}/group-{n}'
    server.upload(folder, prefix)
    return server.url(prefix)


def test_group_open_waves_do_not_grow_with_members(cat_prog, store_server, proxy, tmp_path):
    """Opening a group of 4 arrays and 4 subgroups (of 2 arrays each)
    takes as many sequential round trips as one of 1 and 1: the members
    are opened level by level, each level's side by side
    (format/tree/tree_group.c), each asked for the listings of its type
    alone; and the last of each reads back: 7 and 7 with that read (10
    and 25 before, one round trip more per member)."""
    case = get_case('dense_1d_basic')
    waves, requests = {}, {}
    for n in (1, 4):
        url = upload_group_of(store_server, n, tmp_path)
        proxy.reset()
        r = run_cat(cat_prog, url, f'm{n - 1}/a')
        assert r.returncode == 0 and r.stdout == case.expected('a'), r.stderr
        waves[n], requests[n] = proxy.waves(), proxy.count()
        # the group's own file comes second: __group is listed with the
        # source's folder, before it is known to be a group's
        assert min(q.wave for q in proxy.requests if '/__group/__' in q.target) == 2
        # a member's listings are those of its type (the group file's)
        listed = [q.target for q in proxy.requests if 'prefix=' in q.target]
        assert not [t for t in listed if re.search(r'%2Fs\d%2F__(schema|fragments)', t)]
        assert not [t for t in listed if re.search(r'%2F(m\d|s\d%2Fx\d)%2F__group', t)]
        assert [t for t in listed if re.search(r'%2Fs0%2Fx1%2F__fragments', t)]
        r = run_cat(cat_prog, url, f's{n - 1}/x1/a')
        assert r.returncode == 0 and r.stdout == case.expected('a'), r.stderr
    assert requests[4] >= requests[1] + 9 * 3       # listings, schema, footer
    # (one more allowed: on a busy machine a thread may send its level's
    # requests after the first answers of that level came)
    assert waves[4] <= waves[1] + 1, (waves, requests)


def test_group_levels_past_16_members(cat_prog, store_server, proxy, tmp_path):
    """A group of 32 arrays and 32 subgroups (of 2 arrays each): levels
    of 64 members, opened 16 at a time, each of the 16 going on to its
    next member as soon as its last is open.  That is 4 members of about
    2 round trips each per level, 3 x 2 x 2 more than one member a level,
    and a few more where the 16 ask for more listings at once than
    s3_requests (64) lets go: 21 or 22 in all with the read.  With each
    array's open waiting for every other member's requests
    (tdb_array_open's settle) it took 30 to 39."""
    case = get_case('dense_1d_basic')
    waves = {}
    for n in (1, 32):
        url = upload_group_of(store_server, n, tmp_path)
        proxy.reset()
        r = run_cat(cat_prog, url, f's{n - 1}/x1/a')
        assert r.returncode == 0 and r.stdout == case.expected('a'), r.stderr
        waves[n] = proxy.waves()
    # (4 more allowed: queued requests, and threads that send late)
    assert waves[32] <= waves[1] + 3 * 2 * 2 + 4, waves


def test_listing_past_1000_keys(cat_prog, s3_server, tmp_path):
    """An array of 1,005 fragments: its __commits folder and the listing of
    everything under __fragments (2,010 keys) take several pages, followed
    by continuation tokens; every fragment is in the tree and the bytes are
    the last fragment's.  S3's pages hold 1,000 keys; Azure's hold 5,000,
    so its markers are followed in test_s3_signed_requests instead, through
    a proxy that cuts every listing into pages of 2."""
    if not os.path.isdir(CORPUS):
        pytest.skip('corpus not found')
    url = upload_many(s3_server, 'dense_1d_basic', 1005, tmp_path)
    r = run_cat(cat_prog, url, '__fragments', timeout=300)
    assert r.returncode == 0, r.stderr
    names = r.stdout.decode().split()
    assert len(names) == 1005 and len(set(names)) == 1005
    case = get_case('dense_1d_basic')
    for path in ('a', 'b'):
        r = run_cat(cat_prog, url, path, timeout=300)
        assert r.returncode == 0 and r.stdout == case.expected(path), path


# ---------------------------------------------------------- the reads

@pytest.mark.parametrize('name', case_names())
def test_fetched_ahead_reads_match_local(name, store_corpus, mount, tmp_path):
    """Every expected file of every case through one mount, read from start
    to end on four threads at once (reads fetched ahead, ranges coalesced,
    requests in parallel), against the same files of the local mount."""
    case = get_case(name)
    opts = case_options(case, tmp_path)
    local = mount(os.path.join(CORPUS, name, 'array'), opts)
    remote = mount(corpus_url(store_corpus, name), opts + ['s3_readahead=2M'])
    paths = [p for p in case.expected_paths
             if os.path.isfile(os.path.join(local, p))]
    got, errors = {}, []

    def read(part):
        try:
            for p in part:
                with open(os.path.join(remote, p), 'rb') as f:
                    got[p] = f.read()
        except OSError as e:
            errors.append(f'{e}')
    threads = [threading.Thread(target=read, args=(paths[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for p in paths:
        with open(os.path.join(local, p), 'rb') as f:
            assert got[p] == f.read(), f'{name}/{p}: differs from the local mount'


def test_background_daemon_reads_the_store(fs_prog, store_corpus, tmp_path):
    """An ordinary mount of an object-store source, as users make it: the
    daemon opens the tree, forks to the background (the calls its I/O
    thread had under way start again in the child, with a thread of its
    own: format/objstore/loop.c), gives every expected file of a case of
    overlapping fragments byte for byte, and exits when unmounted.  The
    other tests mount with -f, which does not fork."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    case = get_case('dense_fragments_overlap')
    paths = [p for p in case.expected_paths
             if os.path.isfile(os.path.join(case.dir, 'expected', p))]
    mnt = str(tmp_path / 'mnt')
    os.mkdir(mnt)
    with background_mount(fs_prog, corpus_url(store_corpus, case.name), mnt):
        # one cat of them all, bounded: a daemon that lost its I/O thread
        # hangs every request
        r = subprocess.run(['cat'] + [os.path.join(mnt, p) for p in paths],
                           capture_output=True, timeout=3 * MOUNT_TIMEOUT)
        assert r.returncode == 0, r.stderr
        assert r.stdout == b''.join(case.expected(p) for p in paths)


def test_sequential_read_coalesces(store_server, proxy, mount, fs_prog, create_prog, tmp_path):
    """An attribute read from start to end (8 fragments of 16 tiles each,
    written by tiledbfs's own writer) has its tiles fetched ahead, the
    adjacent ones of a file in one GET: fewer GETs than tiles, and the
    bytes of the local mount."""
    src = str(tmp_path / 'dense')
    bench_arrays.make_dense(fs_prog, create_prog, src, 'zstd', 512, 4096, 64, 256)
    prefix = f'{tmp_path.name}/dense'
    store_server.upload(src, prefix)
    local = mount(src)
    remote = mount(store_server.url(prefix))
    proxy.reset()
    with open(os.path.join(remote, 'v'), 'rb') as f:
        got = f.read()
    with open(os.path.join(local, 'v'), 'rb') as f:
        assert got == f.read()
    gets = object_gets(proxy)
    assert len(gets) <= 16, gets        # 128 tiles, one GET each before


def test_read_of_20480_tiles(store_server, cat_prog, fs_prog, create_prog, tmp_path):
    """An attribute of 20,480 one-cell tiles read from start to end: past
    12,288 tiles asked for, the fetcher forgets all but the last 4,096 it
    asked for (format/read/fetch.c) and goes on; the bytes are the local
    ones."""
    src = str(tmp_path / 'tiny-tiles')
    bench_arrays.make_dense(fs_prog, create_prog, src, 'none', 128, 160, 1, 1, 128)
    prefix = f'{tmp_path.name}/tiny-tiles'
    store_server.upload(src, prefix)
    local = run_cat(cat_prog, src, 'v')
    assert local.returncode == 0 and len(local.stdout) == 128 * 160 * 4, local.stderr
    r = run_cat(cat_prog, store_server.url(prefix), 'v', timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout


# ---------------------------------------------------------- disk cache

def meta_file(case, i=0):
    """The i-th metadata file of a corpus case: (name, bytes)."""
    folder = os.path.join(CORPUS, case, 'array', '__meta')
    name = sorted(n for n in os.listdir(folder) if not n.endswith('.vac'))[i]
    with open(os.path.join(folder, name), 'rb') as f:
        return name, f.read()


def test_disk_cache_second_mount_fetches_nothing(store_server, proxy, mount, tmp_path):
    """Two mounts sharing a disk cache, one after the other, read every file
    of an array: the second makes no GET of any object (listings only) and
    shows the local mount's bytes.  Then an object is replaced in the
    bucket (a metadata file, same key, other bytes: another ETag): a third
    mount fetches it again and shows its new values."""
    if not os.path.isdir(CORPUS):
        pytest.skip('corpus not found')
    src = str(tmp_path / 'local')
    shutil.copytree(os.path.join(CORPUS, 'dense_fragments_overlap', 'array'), src)
    os.makedirs(os.path.join(src, '__meta'), exist_ok=True)
    name, first = meta_file('dense_empty')
    with open(os.path.join(src, '__meta', name), 'wb') as f:
        f.write(first)
    prefix = f'{tmp_path.name}/cached'
    store_server.upload(src, prefix)
    opts = [f'disk_cache={tmp_path / "disk-cache"}', 'disk_cache_size=64M']

    local = mount(src)
    want = read_tree(local)
    mnt = mount(store_server.url(prefix), opts)
    assert read_tree(mnt) == want
    assert not mount.unmount(mnt)
    proxy.reset()
    mnt = mount(store_server.url(prefix), opts)
    assert read_tree(mnt) == want
    assert not object_gets(proxy), object_gets(proxy)
    assert not mount.unmount(mnt)
    assert not mount.unmount(local)

    _, other = meta_file('metadata_types', 2)
    with open(os.path.join(src, '__meta', name), 'wb') as f:
        f.write(other)
    store_server.client.put(f'{prefix}/__meta/{name}', other)
    proxy.reset()
    mnt = mount(store_server.url(prefix), opts)
    local = mount(src)
    got, old = read_tree(mnt), want
    want = read_tree(local)
    assert want != old          # the new metadata shows
    assert got == want
    assert any(r.target.endswith('/__meta/' + name) for r in object_gets(proxy))


# -------------------------------------------------------------- stalls

def test_stalled_read_fails_within_deadline(cat_prog, store_server, proxy, tmp_path):
    """A server that stops answering the GETs of one object: tiledbfs-cat
    with s3_timeout=3 fails with EIO and a message (before: 60 s per try,
    4 tries, so minutes)."""
    if not os.path.isdir(CORPUS):
        pytest.skip('corpus not found')
    url = upload_many(store_server, 'dense_1d_basic', 1, tmp_path)
    proxy.stall(lambda method, target: method == 'GET' and target.endswith('/a0.tdb'))
    t0 = time.monotonic()
    r = run_cat(cat_prog, url, 'a', opts=['s3_timeout=3'], timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert b'I/O error' in r.stderr or b'Input/output error' in r.stderr, r.stderr
    assert took < 100, took


def test_stalled_request_does_not_hold_others(store_server, proxy, mount, tmp_path):
    """While one read waits on a stalled GET, reads of other objects through
    the same mount are answered; the stalled one then fails with EIO."""
    if not os.path.isdir(CORPUS):
        pytest.skip('corpus not found')
    url = upload_many(store_server, 'dense_1d_basic', 1, tmp_path)
    case = get_case('dense_1d_basic')
    # a deadline long enough for the other read (milliseconds) and no
    # longer: the stalled read waits it out
    mnt = mount(url, ['s3_timeout=6'])
    proxy.stall(lambda method, target: method == 'GET' and target.endswith('/a0.tdb'))
    outcome = {}

    def stalled():
        try:
            with open(os.path.join(mnt, 'a'), 'rb') as f:
                outcome['a'] = f.read()
        except OSError as e:
            outcome['a'] = e
    t = threading.Thread(target=stalled)
    t.start()
    time.sleep(1)               # its GET is on its way
    with open(os.path.join(mnt, 'b'), 'rb') as f:
        assert f.read() == case.expected('b')
    assert t.is_alive(), 'the stalled read ended before the other was answered'
    t.join(120)
    assert not t.is_alive()
    assert isinstance(outcome['a'], OSError) and outcome['a'].errno == 5, outcome
