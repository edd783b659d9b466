"""test_s3.py: s3:// sources (format/core/io_s3.c) against a real S3-compatible server, s3rver, started on 127.0.0.1: every corpus file byte for byte through tiledbfs-cat, FUSE mounts, commits of -o rw, concurrent writers."""
import datetime
import http.server
import hashlib
import hmac
import http.client
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

import pytest

from conftest import CORPUS, REPO, case_names, case_options, get_case, o_args, run_cat
from test_corpus_cat import describe
from test_write import STAGING, commit, make_twin, read_file, stage, top_level

S3_DIR = os.path.join(REPO, 'tests', 's3')
S3RVER = os.path.join(S3_DIR, 'node_modules', '.bin', 's3rver')
BUCKET = 'tiledbfs'
KEY_ID = SECRET = 'S3RVER'   # the account s3rver knows
REGION = 'us-east-1'


# ---------------------------------------------------------------- a client

class S3:
    """A small S3 client over http.client, signed with Signature Version 4
    (written here independently of io_s3.c), to set up and inspect the
    bucket."""

    def __init__(self, host, port):
        self.host, self.port = host, port

    def _sign(self, method, path, query, headers, payload_hash):
        now = datetime.datetime.now(datetime.timezone.utc)
        date = now.strftime('%Y%m%dT%H%M%SZ')
        headers = dict(headers, host=f'{self.host}:{self.port}', **{
            'x-amz-date': date, 'x-amz-content-sha256': payload_hash})
        names = sorted(k.lower() for k in headers)
        lower = {k.lower(): str(v).strip() for k, v in headers.items()}
        creq = '\n'.join([method, path, query] + [f'{n}:{lower[n]}' for n in names] +
                         ['', ';'.join(names), payload_hash])
        scope = f'{date[:8]}/{REGION}/s3/aws4_request'
        sts = '\n'.join(['AWS4-HMAC-SHA256', date, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
        k = ('AWS4' + SECRET).encode()
        for part in (date[:8], REGION, 's3', 'aws4_request'):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        headers['Authorization'] = (f'AWS4-HMAC-SHA256 Credential={KEY_ID}/{scope}, '
                                    f'SignedHeaders={";".join(names)}, Signature={sig}')
        return headers

    def request(self, method, key, body=b'', params=None):
        path = '/' + BUCKET + ('/' + urllib.parse.quote(key, safe='/~') if key is not None else '')
        query = '&'.join(f'{urllib.parse.quote(k, safe="~")}={urllib.parse.quote(v, safe="~")}'
                         for k, v in sorted((params or {}).items()))
        headers = self._sign(method, path, query, {}, hashlib.sha256(body).hexdigest())
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path + ('?' + query if query else ''), body=body, headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def put(self, key, data):
        status, body = self.request('PUT', key, data)
        assert status == 200, f'PUT {key}: {status} {body[:300]!r}'

    def get(self, key):
        status, body = self.request('GET', key)
        return body if status == 200 else None

    def keys(self, prefix):
        """Every key under prefix."""
        out, token = [], None
        while True:
            params = {'list-type': '2', 'prefix': prefix}
            if token:
                params['continuation-token'] = token
            status, body = self.request('GET', None, params=params)
            assert status == 200, body
            root = ET.fromstring(body)
            ns = root.tag[:root.tag.index('}') + 1] if root.tag.startswith('{') else ''
            out += [c.find(ns + 'Key').text for c in root.findall(ns + 'Contents')]
            token = root.findtext(ns + 'NextContinuationToken')
            if root.findtext(ns + 'IsTruncated') != 'true' or not token:
                return out

    def upload_tree(self, folder, prefix):
        for dirpath, _, files in os.walk(folder):
            for f in files:
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, folder).replace(os.sep, '/')
                with open(full, 'rb') as fh:
                    self.put(prefix + '/' + rel, fh.read())


# ---------------------------------------------------------------- fixtures

def s3rver_missing():
    """Why s3rver cannot run here, or None."""
    if shutil.which('node') is None:
        return 'node is not installed (scripts/install-deps installs nodejs and npm)'
    if not os.access(S3RVER, os.X_OK):
        return (f'{S3RVER} is missing: run scripts/install-deps '
                '(npm ci --prefix tests/s3)')
    return None


@pytest.fixture(scope='session')
def s3server(tmp_path_factory):
    """s3rver on 127.0.0.1 (a free port it picks), its data in a temporary
    folder, with the bucket BUCKET; yields an S3 client of it.  The
    environment of the programs run by the tests points at it."""
    why = s3rver_missing()
    if why:
        pytest.skip(f'NO S3 SERVER, S3 TESTS SKIPPED: {why}')
    data = tmp_path_factory.mktemp('s3rver')
    log = open(data / 'log', 'w+b')
    proc = subprocess.Popen([S3RVER, '-d', str(data / 'store'), '-a', '127.0.0.1', '-p', '0',
                             '--no-vhost-buckets', '--configure-bucket', BUCKET],
                            stdout=log, stderr=subprocess.STDOUT,
                            # s3rver's continuation tokens use DES, which
                            # node's OpenSSL 3 keeps in its legacy provider
                            env=dict(os.environ, NODE_OPTIONS='--openssl-legacy-provider'))
    port = None
    deadline = time.monotonic() + 30
    while port is None:
        log.seek(0)
        m = re.search(rb'listening on 127\.0\.0\.1:(\d+)', log.read())
        if m:
            port = int(m.group(1))
        elif proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.seek(0)
            pytest.fail(f's3rver did not start: {log.read().decode(errors="replace")[-2000:]}')
        else:
            time.sleep(0.05)
    saved = {k: os.environ.get(k) for k in S3_ENV_KEYS}
    os.environ.update({
        'AWS_ACCESS_KEY_ID': KEY_ID, 'AWS_SECRET_ACCESS_KEY': SECRET,
        'AWS_REGION': REGION, 'AWS_ENDPOINT_URL': f'http://127.0.0.1:{port}'})
    for k in ('AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_ENDPOINT_URL_S3'):
        os.environ.pop(k, None)
    try:
        yield S3('127.0.0.1', port)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


S3_ENV_KEYS = ('AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION',
               'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_PROFILE')


@pytest.fixture(scope='session')
def s3corpus(s3server):
    """Every corpus case's array uploaded as s3://BUCKET/corpus/CASE/array."""
    if not os.path.isdir(CORPUS):
        pytest.skip(f'corpus not found at {CORPUS}')
    for name in case_names():
        s3server.upload_tree(os.path.join(CORPUS, name, 'array'), f'corpus/{name}/array')
    return s3server


class VerifyingProxy:
    """An HTTP proxy on 127.0.0.1 in front of s3rver that checks each
    request's Signature Version 4 as S3 does (s3rver checks only the key id),
    answering 403 SignatureDoesNotMatch when it differs, and cuts every
    listing to pages of 2 keys and prefixes (so that continuation tokens are
    followed; s3rver's own pages lose prefixes)."""

    def __init__(self, upstream):
        proxy = self
        self.upstream = upstream
        self.checked = 0
        self.pages = 0
        self.methods = []
        self.fail_first = False   # answer 503 to the first try of each request
        self.failed = 0
        self.seen = set()
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def _any(self):
                proxy.methods.append(self.command)
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n) if n else b''
                path, _, query = self.path.partition('?')
                if proxy.fail_first:
                    what = (self.command, self.path, self.headers.get('Range'))
                    with proxy.lock:
                        first = what not in proxy.seen
                        proxy.seen.add(what)
                    if first:
                        proxy.failed += 1
                        self._reply(503, b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>'
                                         b'SlowDown</Code></Error>')
                        return
                if not proxy.signature_ok(self.command, path, query, self.headers, body):
                    out = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>'
                           b'SignatureDoesNotMatch</Code><Message>checked by the test proxy'
                           b'</Message></Error>')
                    self._reply(403, out)
                    return
                params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
                if params.get('list-type') == '2' and self.command == 'GET':
                    self._reply(200, proxy.list_page(params))
                    return
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=30)
                fwd = {k: v for k, v in self.headers.items() if k.lower() != 'authorization'}
                conn.request(self.command, path + ('?' + query if query else ''), body=body,
                             headers=fwd)
                r = conn.getresponse()
                data = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ('transfer-encoding', 'connection'):
                        self.send_header(k, v)
                if r.getheader('Content-Length') is None:
                    self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                if self.command != 'HEAD':
                    self.wfile.write(data)
                conn.close()

            def _reply(self, status, out):
                self.send_response(status)
                self.send_header('Content-Length', str(len(out)))
                self.end_headers()
                if self.command != 'HEAD':
                    self.wfile.write(out)

            do_GET = do_PUT = do_HEAD = do_DELETE = _any

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    PAGE = 2

    def list_page(self, params):
        """A ListObjectsV2 answer of at most PAGE keys and prefixes, from the
        whole listing s3rver gives; its continuation token holds characters
        that a query must encode."""
        self.pages += 1
        tok = params.pop('continuation-token', None)
        start = int(tok.rsplit('=', 1)[1]) if tok else 0
        params['max-keys'] = '1000'
        status, body = S3(*self.upstream).request('GET', None, params=params)
        assert status == 200, body
        root = ET.fromstring(body)
        ns = root.tag[:root.tag.index('}') + 1] if root.tag.startswith('{') else ''
        assert root.findtext(ns + 'IsTruncated') != 'true', 'a folder of more than 1000 keys'
        entries = sorted([(c.findtext(ns + 'Key'), c.findtext(ns + 'Size'))
                          for c in root.findall(ns + 'Contents')] +
                         [(c.findtext(ns + 'Prefix'), None)
                          for c in root.findall(ns + 'CommonPrefixes')])
        page = entries[start:start + self.PAGE]
        more = start + self.PAGE < len(entries)
        x = ET.Element('ListBucketResult', xmlns='http://s3.amazonaws.com/doc/2006-03-01/')
        ET.SubElement(x, 'Name').text = BUCKET
        ET.SubElement(x, 'Prefix').text = params.get('prefix', '')
        ET.SubElement(x, 'KeyCount').text = str(len(page))
        ET.SubElement(x, 'IsTruncated').text = 'true' if more else 'false'
        if more:
            ET.SubElement(x, 'NextContinuationToken').text = f'p+/&?={start + self.PAGE}'
        for key, size in page:
            if size is None:
                ET.SubElement(ET.SubElement(x, 'CommonPrefixes'), 'Prefix').text = key
            else:
                c = ET.SubElement(x, 'Contents')
                ET.SubElement(c, 'Key').text = key
                ET.SubElement(c, 'Size').text = size
        return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(x)

    def signature_ok(self, method, path, query, headers, body):
        auth = headers.get('Authorization', '')
        m = re.fullmatch(r'AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, '
                         r'SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})', auth)
        if not m:
            return False
        key_id, day, region, signed, sig = m.groups()
        if key_id != KEY_ID or region != REGION:
            return False
        date = headers.get('x-amz-date', '')
        payload = headers.get('x-amz-content-sha256', '')
        if payload != hashlib.sha256(body).hexdigest() or not date.startswith(day):
            return False
        names = signed.split(';')
        if names != sorted(names) or not {'host', 'x-amz-date', 'x-amz-content-sha256'} <= set(names):
            return False
        # the query: each name and value decoded, encoded again, sorted
        q = sorted((urllib.parse.quote(k, safe='-_.~'), urllib.parse.quote(v, safe='-_.~'))
                   for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True))
        creq = '\n'.join([method, path, '&'.join(f'{k}={v}' for k, v in q)] +
                         [f'{n}:{" ".join(headers.get(n, "").split())}' for n in names] +
                         ['', signed, payload])
        scope = f'{day}/{REGION}/s3/aws4_request'
        sts = '\n'.join(['AWS4-HMAC-SHA256', date, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
        k = ('AWS4' + SECRET).encode()
        for part in (day, REGION, 's3', 'aws4_request'):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        self.checked += 1
        return hmac.compare_digest(sig, hmac.new(k, sts.encode(), hashlib.sha256).hexdigest())

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def verified(s3corpus):
    """AWS_ENDPOINT_URL pointed at a VerifyingProxy of the server."""
    proxy = VerifyingProxy((s3corpus.host, s3corpus.port))
    saved = os.environ['AWS_ENDPOINT_URL']
    os.environ['AWS_ENDPOINT_URL'] = f'http://127.0.0.1:{proxy.port}'
    try:
        yield proxy
    finally:
        os.environ['AWS_ENDPOINT_URL'] = saved
        proxy.close()


def s3url(name):
    return f's3://{BUCKET}/corpus/{name}/array'


# ------------------------------------------------------------------- reads

def test_s3_cat_matches_expected(case, cat_prog, s3corpus, tmp_path):
    """Every expected file of the case, byte for byte, read through range
    GETs of the uploaded array."""
    opts = case_options(case, tmp_path)
    fails = []
    for path in case.expected_paths:
        exp = case.expected(path)
        try:
            proc = run_cat(cat_prog, s3url(case.name), path, opts)
        except subprocess.TimeoutExpired:
            fails.append(describe(path, None, exp, None))
            continue
        assert proc.returncode >= 0, f'{path}: tiledbfs-cat killed by signal {-proc.returncode}'
        if proc.returncode != 0 or proc.stdout != exp:
            fails.append(describe(path, proc.stdout, exp, proc))
    assert not fails, (f'{case.name}: {len(fails)} of {len(case.expected_paths)} files differ '
                       f'over S3:\n  ' + '\n  '.join(fails))


MOUNT_CASES = ['dense_var_nullable', 'sparse_string_dim', 'filter_chains', 'group_basic',
               'encrypted_aes256gcm', 'time_travel_t2_3']


@pytest.mark.parametrize('name', MOUNT_CASES)
def test_s3_mount_reads_expected(name, s3corpus, mount, tmp_path):
    case = get_case(name)
    mnt = mount(s3url(name), case_options(case, tmp_path))
    for path in case.expected_paths:
        with open(os.path.join(mnt, path), 'rb') as f:
            got = f.read()
        assert got == case.expected(path), f'{name}/{path}: differs over an S3 mount'


def test_s3_errors(cat_prog, s3corpus, tmp_path):
    """A prefix without objects, a missing bucket, a wrong secret, no server:
    one line naming the URL and the reason, exit 1."""
    def cat(url, env=None):
        return subprocess.run([cat_prog, url, ''], capture_output=True, timeout=60,
                              env=dict(os.environ, **(env or {})))

    r = cat(f's3://{BUCKET}/no/such/array')
    assert r.returncode == 1 and b'no objects under this prefix' in r.stderr, r.stderr
    r = cat('s3://no-such-bucket/array')
    assert r.returncode == 1 and b'NoSuchBucket' in r.stderr, r.stderr
    # (s3rver checks the key id of a Signature Version 4, not the signature:
    # tests/unit/test_s3.c checks ours against AWS's worked examples)
    r = cat(s3url('dense_1d_basic'), {'AWS_ACCESS_KEY_ID': 'WRONG'})
    assert r.returncode == 1 and b'HTTP 403' in r.stderr and b'InvalidAccessKeyId' in r.stderr, \
        r.stderr
    r = cat(s3url('dense_1d_basic'), {'AWS_ENDPOINT_URL': 'http://127.0.0.1:1'})
    assert r.returncode == 1 and b'connect' in r.stderr.lower(), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_s3_credentials_from_aws_files(cat_prog, s3corpus, tmp_path):
    """Without the variables, the profile's keys in ~/.aws/credentials and
    the endpoint in ~/.aws/config are used."""
    aws = tmp_path / '.aws'
    aws.mkdir()
    (aws / 'credentials').write_text('[default]\naws_access_key_id = nobody\n'
                                     'aws_secret_access_key = nothing\n'
                                     f'[t]\naws_access_key_id = {KEY_ID}\n'
                                     f'aws_secret_access_key = {SECRET}\n')
    endpoint = os.environ['AWS_ENDPOINT_URL']
    (aws / 'config').write_text(f'[default]\nendpoint_url = {endpoint}\n'
                                f'[profile t]\nendpoint_url = {endpoint}\nregion = {REGION}\n')
    env = {k: v for k, v in os.environ.items() if k not in S3_ENV_KEYS}
    env.update(HOME=str(tmp_path), AWS_PROFILE='t')
    case = get_case('dense_1d_basic')
    path = case.expected_paths[0]
    r = subprocess.run([cat_prog, s3url(case.name), path], capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == case.expected(path)
    env['AWS_PROFILE'] = 'default'   # its keys are not the server's
    r = subprocess.run([cat_prog, s3url(case.name), path], capture_output=True, env=env, timeout=60)
    assert r.returncode == 1 and b'HTTP 403' in r.stderr, r.stderr


# ------------------------------------------------------------------ writes

def s3_twin(s3, name, create_prog, cat_prog, tmp_path):
    """An empty twin of corpus case `name`, made by tiledbfs-create in a
    local folder and uploaded as s3://BUCKET/w/NAME/array; (case, url)."""
    case = get_case(name)
    twin = str(tmp_path / f'twin-{name}')
    made = make_twin(create_prog, cat_prog, case.array, twin, tmp_path)
    assert made.returncode == 0, f'tiledbfs-create: {made.stderr.decode(errors="replace")}'
    prefix = f'w/{tmp_path.name}/{name}/array'
    s3.upload_tree(twin, prefix)
    return case, f's3://{BUCKET}/{prefix}', prefix


def committed(s3, prefix):
    """The fragment names of __commits/*.wrt in the bucket."""
    return sorted(k.rsplit('/', 1)[1][:-4] for k in s3.keys(prefix + '/__commits/')
                  if k.endswith('.wrt'))


def test_s3_commit(s3corpus, create_prog, cat_prog, mount, tmp_path):
    """-o rw on an S3 array: files staged locally and committed become one
    fragment in the bucket (its files, then its commit file, nothing
    temporary left), read back byte for byte through the mount and by a
    separate reader of the bucket."""
    s3 = s3corpus
    case, url, prefix = s3_twin(s3, 'dense_1d_basic', create_prog, cat_prog, tmp_path)
    files = {p: case.expected(p) for p in top_level(case)}
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    stage(mnt, 't', files)
    e = commit(mnt, 't')
    assert e is None, f'commit: {e}: {read_file(os.path.join(mnt, STAGING, "t", "__error"))!r}'
    frags = committed(s3, prefix)
    assert len(frags) == 1, frags
    keys = s3.keys(prefix + '/__fragments/')
    assert sorted(k.rsplit('/', 1)[1] for k in keys) == \
        ['__fragment_metadata.tdb', 'a0.tdb', 'a1.tdb'], keys
    assert all(f'/__fragments/{frags[0]}/' in k for k in keys)
    for path, data in files.items():
        assert read_file(os.path.join(mnt, path)) == data, f'{path} over the mount'
        r = run_cat(cat_prog, url, path)
        assert r.returncode == 0 and r.stdout == data, f'{path}: {r.stderr!r}'
    assert os.listdir(os.path.join(mnt, '__fragments')) == frags


def test_s3_rw_needs_staging_dir(s3corpus, fs_prog, tmp_path):
    r = subprocess.run([fs_prog, '-f', '-o', 'rw', s3url('dense_1d_basic'), str(tmp_path)],
                       capture_output=True, timeout=60)
    assert r.returncode != 0 and b'staging_dir' in r.stderr, r.stderr


def test_s3_concurrent_writers(s3corpus, create_prog, cat_prog, mount, tmp_path):
    """Two mounts of one S3 array (as on two machines: each its own staging
    folder, no coordination) commit at the same time: two fragments with
    distinct names, both whole, and the array shows one writer's cells."""
    s3 = s3corpus
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
        names = sorted(k.rsplit('/', 1)[1] for k in s3.keys(f'{prefix}/__fragments/{f}/'))
        assert names == ['__fragment_metadata.tdb', 'a0.tdb', 'a1.tdb'], (f, names)
    shown = {p: run_cat(cat_prog, url, p).stdout for p in mine}
    assert shown in (mine, theirs), 'the array shows a mix of the two writes'
    # each fragment holds its writer's cells whole
    seen = []
    for f in frags:
        seen.append({p: run_cat(cat_prog, url, f'__fragments/{f}/{p}').stdout for p in mine})
    assert sorted(map(repr, seen)) == sorted(map(repr, (mine, theirs)))


# ------------------------------------------- signatures and listing pages

@pytest.mark.parametrize('name', ['sparse_string_dim', 'group_basic', 'consolidated_commits',
                                  'dense_fragments_overlap'])
def test_s3_signed_requests(name, cat_prog, verified, tmp_path):
    """Every request that tiledbfs-cat sends carries a Signature Version 4
    that the proxy's own computation accepts, and listings cut to pages of 2
    keys are followed to their end: the case still reads byte for byte."""
    case = get_case(name)
    opts = case_options(case, tmp_path)
    for path in case.expected_paths:
        r = run_cat(cat_prog, s3url(name), path, opts)
        assert r.returncode == 0 and r.stdout == case.expected(path), \
            f'{path}: {r.stderr.decode(errors="replace")}'
    assert verified.checked > len(case.expected_paths)
    assert verified.pages > len(case.expected_paths)


def test_s3_signed_commit(s3corpus, verified, create_prog, cat_prog, mount, tmp_path):
    """A commit's PUTs, copy and DELETEs, signed and checked."""
    case, url, prefix = s3_twin(s3corpus, 'dense_1d_basic', create_prog, cat_prog, tmp_path)
    files = {p: case.expected(p) for p in top_level(case)}
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    stage(mnt, 't', files)
    assert commit(mnt, 't') is None
    for path, data in files.items():
        assert run_cat(cat_prog, url, path).stdout == data
    assert len(committed(s3corpus, prefix)) == 1


def test_s3_wrong_secret(cat_prog, verified):
    r = subprocess.run([cat_prog, s3url('dense_1d_basic'), ''], capture_output=True, timeout=60,
                       env=dict(os.environ, AWS_SECRET_ACCESS_KEY='not-' + SECRET))
    assert r.returncode == 1 and b'HTTP 403 SignatureDoesNotMatch' in r.stderr, r.stderr


def test_s3_retries(cat_prog, verified, tmp_path):
    """Every request first answered 503 SlowDown: each is tried again, and
    the case reads byte for byte."""
    verified.fail_first = True
    case = get_case('filter_chains')
    opts = case_options(case, tmp_path)
    for path in case.expected_paths[:6]:
        r = run_cat(cat_prog, s3url(case.name), path, opts)
        assert r.returncode == 0 and r.stdout == case.expected(path), \
            f'{path}: {r.stderr.decode(errors="replace")}'
    assert verified.failed >= 6
