"""test_s3.py: object store sources (s3:// and azure://) against each server of s3fixture.py and azfixture.py (s3rver, Ceph's RADOS Gateway and Azurite on 127.0.0.1): every corpus file byte for byte through tiledbfs-cat, FUSE mounts, commits of -o rw, concurrent writers, signatures.

The signature checks go through VerifyingProxy: it checks each request's
Signature Version 4 (Shared Key for Azurite) with the server's keys and
signs again, with the same keys, what it forwards (so radosgw, which checks
signatures, needs no bucket policy for the proxy's requests)."""
import base64
import concurrent.futures
import http.client
import os
import subprocess
import threading

import pytest

from azfixture import VERSION, AzureClient
from conftest import case_options, get_case, point_at, run_cat
from s3fixture import AWS_ENV_KEYS, VerifyingProxy, corpus_url, through
from test_corpus_cat import describe
from test_write import STAGING, commit, make_twin, read_file, stage, top_level


CAT_JOBS = 4


@pytest.fixture
def verified(store_corpus, monkeypatch):
    """The programs pointed at a VerifyingProxy of the server (through
    AWS_ENDPOINT_URL, or the connection string's BlobEndpoint): it checks
    each request's signature with the server's keys and signs again what it
    forwards (the server checks the signature too; its bucket needs no
    policy)."""
    yield from through(VerifyingProxy(store_corpus), monkeypatch)


# ------------------------------------------------------------------- reads

def test_s3_cat_matches_expected(case, cat_prog, store_corpus, tmp_path):
    """Every expected file of the case, byte for byte, read through range
    GETs of the uploaded array (CAT_JOBS tiledbfs-cat at a time: each
    mostly waits for the server)."""
    opts = case_options(case, tmp_path)
    url = corpus_url(store_corpus, case.name)

    def check(path):
        exp = case.expected(path)
        try:
            proc = run_cat(cat_prog, url, path, opts)
        except subprocess.TimeoutExpired:
            return describe(path, None, exp, None)
        assert proc.returncode >= 0, f'{path}: tiledbfs-cat killed by signal {-proc.returncode}'
        if proc.returncode != 0 or proc.stdout != exp:
            return describe(path, proc.stdout, exp, proc)
        return None
    with concurrent.futures.ThreadPoolExecutor(CAT_JOBS) as pool:
        fails = [f for f in pool.map(check, case.expected_paths) if f]
    assert not fails, (f'{case.name}: {len(fails)} of {len(case.expected_paths)} files differ '
                       f'over {store_corpus.name}:\n  ' + '\n  '.join(fails))


MOUNT_CASES = ['dense_var_nullable', 'sparse_string_dim', 'filter_chains', 'group_basic',
               'encrypted_aes256gcm', 'time_travel_t2_3']


@pytest.mark.parametrize('name', MOUNT_CASES)
def test_s3_mount_reads_expected(name, store_corpus, mount, tmp_path):
    s3 = store_corpus
    case = get_case(name)
    mnt = mount(corpus_url(s3, name), case_options(case, tmp_path))
    for path in case.expected_paths:
        with open(os.path.join(mnt, path), 'rb') as f:
            got = f.read()
        assert got == case.expected(path), f'{name}/{path}: differs over an S3 mount'


def test_s3_errors(cat_prog, store_corpus, tmp_path):
    """A prefix without objects, a missing bucket (container), a wrong key,
    no server: one line naming the URL and the reason, exit 1."""
    s3 = store_corpus

    def cat(url, env=None):
        return subprocess.run([cat_prog, url, ''], capture_output=True, timeout=60,
                              env=dict(os.environ, **(env or {})))

    r = cat(s3.url('no/such/array'))
    assert r.returncode == 1 and b'no objects under this prefix' in r.stderr, r.stderr
    r = cat(f'{s3.scheme}://no-such-bucket/array')
    assert r.returncode == 1 and s3.no_bucket.encode() in r.stderr, r.stderr
    if s3.kind == 's3':
        r = cat(corpus_url(s3, 'dense_1d_basic'), {'AWS_ACCESS_KEY_ID': 'WRONG'})
        assert r.returncode == 1 and b'HTTP 403' in r.stderr and \
            b'InvalidAccessKeyId' in r.stderr, r.stderr
    # s3rver checks the key id, not the signature (the tests through
    # VerifyingProxy check ours against both servers); Azurite checks
    # Shared Key signatures
    if s3.name != 's3rver':
        r = cat(corpus_url(s3, 'dense_1d_basic'), s3.env(wrong_key=True))
        assert r.returncode == 1 and f'HTTP 403 {s3.bad_signature}'.encode() in r.stderr, \
            r.stderr
    r = cat(corpus_url(s3, 'dense_1d_basic'), s3.endpoint_env('http://127.0.0.1:1'))
    assert r.returncode == 1 and b'connect' in r.stderr.lower(), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_s3_credentials_from_aws_files(cat_prog, s3_corpus, tmp_path):
    """Without the variables, the profile's keys in ~/.aws/credentials and
    the endpoint in ~/.aws/config are used."""
    s3 = s3_corpus
    aws = tmp_path / '.aws'
    aws.mkdir()
    (aws / 'credentials').write_text('[default]\naws_access_key_id = nobody\n'
                                     'aws_secret_access_key = nothing\n'
                                     f'[t]\naws_access_key_id = {s3.access_key}\n'
                                     f'aws_secret_access_key = {s3.secret_key}\n')
    endpoint = os.environ['AWS_ENDPOINT_URL']
    (aws / 'config').write_text(f'[default]\nendpoint_url = {endpoint}\n'
                                f'[profile t]\nendpoint_url = {endpoint}\nregion = {s3.region}\n')
    env = {k: v for k, v in os.environ.items() if k not in AWS_ENV_KEYS}
    env.update(HOME=str(tmp_path), AWS_PROFILE='t')
    case = get_case('dense_1d_basic')
    path = case.expected_paths[0]
    r = subprocess.run([cat_prog, corpus_url(s3, case.name), path], capture_output=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == case.expected(path)
    env['AWS_PROFILE'] = 'default'   # its keys are not the server's
    r = subprocess.run([cat_prog, corpus_url(s3, case.name), path], capture_output=True,
                       env=env, timeout=60)
    assert r.returncode == 1 and b'HTTP 403' in r.stderr, r.stderr


# ------------------------------------------------------------------ writes

def s3_twin(s3, name, create_prog, cat_prog, tmp_path):
    """An empty twin of corpus case `name`, made by tiledbfs-create in a
    local folder and uploaded as s3://BUCKET/w/NAME/array (or
    azure://CONTAINER/...); (case, url, prefix)."""
    case = get_case(name)
    twin = str(tmp_path / f'twin-{name}')
    made = make_twin(create_prog, cat_prog, case.array, twin, tmp_path)
    assert made.returncode == 0, f'tiledbfs-create: {made.stderr.decode(errors="replace")}'
    prefix = f'w/{tmp_path.name}/{name}/array'
    s3.upload(twin, prefix)
    return case, s3.url(prefix), prefix


def committed(s3, prefix):
    """The fragment names of __commits/*.wrt in the bucket."""
    return sorted(k.rsplit('/', 1)[1][:-4] for k in s3.client.keys(prefix + '/__commits/')
                  if k.endswith('.wrt'))


def test_s3_commit(store_corpus, create_prog, cat_prog, mount, tmp_path):
    """-o rw on an object store's array: files staged locally and committed
    become one fragment in the bucket (its files, then its commit file,
    nothing temporary left), read back byte for byte through the mount and
    by a separate reader of the bucket."""
    s3 = store_corpus
    case, url, prefix = s3_twin(s3, 'dense_1d_basic', create_prog, cat_prog, tmp_path)
    files = {p: case.expected(p) for p in top_level(case)}
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    stage(mnt, 't', files)
    e = commit(mnt, 't')
    assert e is None, f'commit: {e}: {read_file(os.path.join(mnt, STAGING, "t", "__error"))!r}'
    frags = committed(s3, prefix)
    assert len(frags) == 1, frags
    keys = s3.client.keys(prefix + '/__fragments/')
    assert sorted(k.rsplit('/', 1)[1] for k in keys) == \
        ['__fragment_metadata.tdb', 'a0.tdb', 'a1.tdb'], keys
    assert all(f'/__fragments/{frags[0]}/' in k for k in keys)
    for path, data in files.items():
        assert read_file(os.path.join(mnt, path)) == data, f'{path} over the mount'
        r = run_cat(cat_prog, url, path)
        assert r.returncode == 0 and r.stdout == data, f'{path}: {r.stderr!r}'
    assert os.listdir(os.path.join(mnt, '__fragments')) == frags


def test_s3_rw_needs_staging_dir(store_corpus, fs_prog, tmp_path):
    s3 = store_corpus
    r = subprocess.run([fs_prog, '-f', '-o', 'rw', corpus_url(s3, 'dense_1d_basic'),
                        str(tmp_path)], capture_output=True, timeout=60)
    assert r.returncode != 0 and b'staging_dir' in r.stderr, r.stderr


def test_s3_concurrent_writers(store_corpus, create_prog, cat_prog, mount, tmp_path):
    """Two mounts of one object store's array (as on two machines: each its
    own staging folder, no coordination) commit at the same time: two
    fragments with distinct names, both whole, and the array shows one
    writer's cells."""
    s3 = store_corpus
    case, url, prefix = s3_twin(s3, 'dense_1d_basic', create_prog, cat_prog, tmp_path)
    mine = {p: case.expected(p) for p in top_level(case)}
    theirs = {p: bytes(reversed(d)) for p, d in mine.items()}
    mnts = [mount(url, ['rw', f'staging_dir={tmp_path / f"staging{i}"}']) for i in range(2)]
    for mnt, files in zip(mnts, (mine, theirs)):
        stage(mnt, 't', files)
    results = [None, None]
    go = threading.Barrier(2)

    def run(i):
        go.wait()
        results[i] = commit(mnts[i], 't')
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results == [None, None], results
    frags = committed(s3, prefix)
    assert len(frags) == 2 and frags[0] != frags[1], frags
    for f in frags:
        names = sorted(k.rsplit('/', 1)[1] for k in s3.client.keys(f'{prefix}/__fragments/{f}/'))
        assert names == ['__fragment_metadata.tdb', 'a0.tdb', 'a1.tdb'], (f, names)
    shown = {p: run_cat(cat_prog, url, p).stdout for p in mine}
    assert shown in (mine, theirs), 'the array shows a mix of the two writes'
    # each fragment holds its writer's cells whole
    seen = []
    for f in frags:
        seen.append({p: run_cat(cat_prog, url, f'__fragments/{f}/{p}').stdout for p in mine})
    assert sorted(map(repr, seen)) == sorted(map(repr, (mine, theirs)))


# ------------------------------------------- signatures and listing pages

def cat_all(cat_prog, url, case, paths, opts):
    """tiledbfs-cat of each of paths of case at url, CAT_JOBS at a time
    (each mostly waits for the proxy and the server): every one succeeds
    with the expected bytes."""
    def check(path):
        r = run_cat(cat_prog, url, path, opts)
        if r.returncode != 0 or r.stdout != case.expected(path):
            return f'{path}: exit {r.returncode}: {r.stderr.decode(errors="replace")}'
        return None
    with concurrent.futures.ThreadPoolExecutor(CAT_JOBS) as pool:
        fails = [f for f in pool.map(check, paths) if f]
    assert not fails, '\n'.join(fails)


@pytest.mark.parametrize('name', ['sparse_string_dim', 'group_basic', 'consolidated_commits',
                                  'dense_fragments_overlap'])
def test_s3_signed_requests(name, cat_prog, verified, tmp_path):
    """Every request that tiledbfs-cat sends carries a Signature Version 4
    (a Shared Key signature to Azurite) that the proxy's own computation
    accepts, and listings cut to pages of 2 keys are followed to their end:
    the case still reads byte for byte."""
    s3 = verified.s3
    case = get_case(name)
    cat_all(cat_prog, corpus_url(s3, name), case, case.expected_paths,
            case_options(case, tmp_path))
    assert verified.checked > len(case.expected_paths)
    assert verified.pages > len(case.expected_paths)


def test_s3_signed_commit(store_corpus, verified, create_prog, cat_prog, mount, tmp_path):
    """A commit's PUTs, copy and DELETEs, signed and checked."""
    case, url, prefix = s3_twin(store_corpus, 'dense_1d_basic', create_prog, cat_prog, tmp_path)
    files = {p: case.expected(p) for p in top_level(case)}
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    stage(mnt, 't', files)
    assert commit(mnt, 't') is None
    for path, data in files.items():
        assert run_cat(cat_prog, url, path).stdout == data
    assert len(committed(store_corpus, prefix)) == 1


def test_s3_wrong_secret(cat_prog, verified):
    s3 = verified.s3
    r = subprocess.run([cat_prog, corpus_url(s3, 'dense_1d_basic'), ''], capture_output=True,
                       timeout=60,
                       env=dict(os.environ, **s3.env(via=verified.endpoint, wrong_key=True)))
    assert r.returncode == 1 and f'HTTP 403 {s3.bad_signature}'.encode() in r.stderr, r.stderr


def test_s3_retries(cat_prog, verified, tmp_path):
    """Every request first answered 503 SlowDown (ServerBusy on Azure): each
    is tried again, and the case reads byte for byte."""
    s3 = verified.s3
    verified.fail_first = True
    case = get_case('filter_chains')
    cat_all(cat_prog, corpus_url(s3, case.name), case, case.expected_paths[:6],
            case_options(case, tmp_path))
    assert verified.failed >= 6


# ------------------------------------------------- the Azure fixture itself

@pytest.mark.parametrize('store', ['azurite'])
def test_azurite_serves_what_the_tests_use(store, s3_servers, monkeypatch):
    """The Blob service as the Azure tests rely on it, through the
    fixture's own Shared Key client (no tiledbfs program): a wrong key and
    no signature refused (403 AuthorizationFailure), ranged GETs, HEAD,
    DELETE, listings by prefix and delimiter in pages (NextMarker), Put
    Block and Put Block List, a missing blob (404 BlobNotFound) and
    container (404 ContainerNotFound); and VerifyingProxy in front of it:
    signatures checked, listings cut to pages of 2 and followed, a first
    try answered 503 ServerBusy."""
    az = point_at(s3_servers.get(store), monkeypatch)
    c, top = az.client, f'fixture/{os.getpid()}'
    data = bytes(range(256)) * 4
    c.put(f'{top}/data', data)
    assert c.get(f'{top}/data') == data
    status, hdrs, _ = AzureClient(az.host, az.port, key=az.wrong_key()).exchange(
        'GET', f'{top}/data')
    assert (status, hdrs.get('x-ms-error-code')) == (403, az.bad_signature)
    conn = http.client.HTTPConnection(az.host, az.port, timeout=30)
    try:        # no signature: the container is not public
        conn.request('GET', c.path(f'{top}/data'), headers={'x-ms-version': VERSION})
        r = conn.getresponse()
        assert (r.status, r.getheader('x-ms-error-code'), r.read()[:5]) == \
            (403, az.bad_signature, b'<?xml')
    finally:
        conn.close()
    status, hdrs, body = c.exchange('GET', f'{top}/data', headers={'Range': 'bytes=10-19'})
    assert (status, body, hdrs['content-range']) == (206, data[10:20], 'bytes 10-19/1024')
    status, hdrs, body = c.exchange('GET', f'{top}/data', headers={'x-ms-range': 'bytes=1000-'})
    assert (status, body) == (206, data[1000:])
    status, hdrs, body = c.exchange('HEAD', f'{top}/data')
    assert (status, hdrs['content-length'], body) == (200, '1024', b'')
    assert hdrs['etag'].startswith('"0x') and hdrs['x-ms-blob-type'] == 'BlockBlob'
    for method in ('GET', 'HEAD', 'DELETE'):
        status, hdrs, _ = c.exchange(method, f'{top}/none')
        assert (status, hdrs.get('x-ms-error-code')) == (404, 'BlobNotFound'), method
    status, hdrs, _ = c.exchange('GET', 'x', container='no-such-container')
    assert (status, hdrs.get('x-ms-error-code')) == (404, az.no_bucket)
    status, hdrs, _ = c.exchange('GET', None, params={'restype': 'container', 'comp': 'list'},
                                 container='no-such-container')
    assert (status, hdrs.get('x-ms-error-code')) == (404, az.no_bucket)

    names = [f'{top}/l/{n}' for n in ('a/1', 'a/2', 'b', 'c/d/e', 'f', 'g')]
    for n in names:
        c.put(n, n.encode())
    pages, marker = [], None
    while True:
        params = {'prefix': f'{top}/l/', 'delimiter': '/', 'maxresults': '2'}
        if marker:
            params['marker'] = marker
        root, _ = c.list_page(params)
        pages.append([(e.tag, e.findtext('Name')[len(top) + 3:]) for e in root.find('Blobs')])
        marker = root.findtext('NextMarker')
        if not marker:
            break
    assert pages == [[('BlobPrefix', 'a/'), ('Blob', 'b')], [('BlobPrefix', 'c/'), ('Blob', 'f')],
                     [('Blob', 'g')]], pages
    assert c.keys(f'{top}/l/') == names
    assert c.prefixes(f'{top}/l/') == [f'{top}/l/a/', f'{top}/l/c/']

    ids = [base64.b64encode(b'%06d' % i).decode() for i in range(3)]
    for i, block in enumerate(ids):
        c.put_block(f'{top}/blocks', block, bytes([65 + i]) * 1000)
    assert c.get(f'{top}/blocks') is None
    assert c.uncommitted(f'{top}/') == [f'{top}/blocks']
    c.put_block_list(f'{top}/blocks', ids)
    assert c.get(f'{top}/blocks') == b'A' * 1000 + b'B' * 1000 + b'C' * 1000
    assert c.block_list(f'{top}/blocks')['committed'] == [(i, 1000) for i in ids]
    assert c.uncommitted(f'{top}/') == []
    c.delete(f'{top}/blocks')
    assert c.get(f'{top}/blocks') is None

    proxy = VerifyingProxy(az)
    try:
        via = AzureClient('127.0.0.1', proxy.port)
        assert via.keys(f'{top}/l/') == names
        assert proxy.pages == 3 and proxy.checked == 3, (proxy.pages, proxy.checked)
        root, _ = via.list_page({'prefix': f'{top}/l/', 'delimiter': '/'})
        assert root.findtext('NextMarker') == 'p+/&?=2'     # to encode in a query
        assert via.prefixes(f'{top}/l/') == [f'{top}/l/a/', f'{top}/l/c/']
        status, hdrs, _ = AzureClient('127.0.0.1', proxy.port, key=az.wrong_key()).exchange(
            'GET', f'{top}/data')
        assert (status, hdrs.get('x-ms-error-code')) == (403, az.bad_signature)
        proxy.fail_first = True
        status, hdrs, _ = via.exchange('GET', f'{top}/data')
        assert (status, hdrs.get('x-ms-error-code')) == (503, 'ServerBusy')
        assert via.get(f'{top}/data') == data and proxy.failed == 1
    finally:
        proxy.close()
