"""s3fixture.py: the S3 servers of the tests, started on 127.0.0.1 (s3rver, a node program; Ceph's RADOS Gateway through tests/s3/rgw), a small signed S3 client, and a proxy that checks every request's signature.

The API that S3 test files use (fixtures defined in conftest.py):

  s3_server   a test that takes it runs once per server of SERVERS (ids
              [s3rver] and [radosgw]); it is skipped, with the reason on
              the console, when that server cannot be had here.  Each
              server starts once per session, with one bucket shared by
              every test: put your keys under a prefix of your own (for
              instance tmp_path.name, unique in a session).  While the test
              runs, os.environ holds the server's AWS_ACCESS_KEY_ID,
              AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ENDPOINT_URL, and
              none of AWS_SESSION_TOKEN, AWS_PROFILE, AWS_ENDPOINT_URL_S3, so
              the tiledbfs and tiledbfs-cat it runs reach the server.  The
              value is an S3Server:
                .name                 's3rver' or 'radosgw'
                .endpoint             'http://127.0.0.1:PORT' (path-style)
                .host, .port
                .access_key, .secret_key, .region, .bucket
                .client               an S3Client of the bucket:
                    put(key, data)        PUT, asserts 200
                    get(key)              the object's bytes, or None
                    keys(prefix)          every key under prefix (listing
                                          pages followed)
                    prefixes(prefix)      the CommonPrefixes of a one-level
                                          listing of prefix (delimiter /)
                    delete(key)           DELETE, asserts 204 (or 200)
                    request(method, key, body=b'', params=None,
                            headers=None) -> (status, body bytes)
                .upload(folder, prefix)   every file under folder as
                                          prefix/RELATIVE/PATH
                .url(key)             's3://BUCKET/KEY'
                .env(via=None, wrong_key=False)
                                      the AWS_* variables above, a dict;
                                      the endpoint the base URL `via` (a
                                      proxy's) when given, the secret
                                      another when wrong_key
                .endpoint_env(via)    the variables that point the
                                      programs at the base URL `via`
                .kind, .scheme        's3' (azfixture.AzureServer: 'azure')
                .bad_signature, .no_bucket
                                      the error codes of a wrong signature
                                      and of a missing bucket
  s3_corpus   the same S3Server once every corpus case's array is in the
              bucket as corpus/CASE/array (uploaded once per server and
              session): corpus_url(server, CASE) is its s3:// URL.
  store_server, store_corpus
              the same over every object store: the S3 servers and Azurite
              (ids [s3rver], [radosgw], [azurite]; azfixture.py's
              AzureServer has this API); a test of what every store does
              takes these, one of what S3 alone does s3_server.

VerifyingProxy(server) is an HTTP proxy in front of a server that checks
each request's Signature Version 4 against the server's keys (and the
temporary credentials it is given), as S3 does, and signs again what it
forwards; in front of an AzureServer it does the same with Shared Key.
through(proxy, monkeypatch) points the programs at a proxy.

Importing this module sets AWS_EC2_METADATA_DISABLED=true in os.environ
(unless set): no program a test runs asks the real EC2 instance metadata
address for credentials; tests of that source point
AWS_EC2_METADATA_SERVICE_ENDPOINT at a server of their own.
"""
import concurrent.futures
import datetime
import hashlib
import json
import hmac
import http.client
import http.server
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S3_DIR = os.path.join(REPO, 'tests', 's3')
# TILEDBFS_S3RVER=PROGRAM: an s3rver installed elsewhere (make distcheck's
# tarball has no node_modules; scripts/test points it at the tree's)
S3RVER = (os.environ.get('TILEDBFS_S3RVER')
          or os.path.join(S3_DIR, 'node_modules', '.bin', 's3rver'))
RGW = os.path.join(S3_DIR, 'rgw')
SERVERS = ('s3rver', 'radosgw')
BUCKET = 'tiledbfs'
REGION = 'us-east-1'
START_TIMEOUT = 30    # seconds for a server to start
# the variables that choose credentials and endpoint: each S3 test sets its
# server's and removes the others
AWS_ENV_KEYS = ('AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION',
                'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_PROFILE',
                # the other sources of credentials (tests/py/test_s3_creds.py)
                'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_ROLE_ARN', 'AWS_ROLE_SESSION_NAME',
                'AWS_CONTAINER_CREDENTIALS_FULL_URI', 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
                'AWS_CONTAINER_AUTHORIZATION_TOKEN', 'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE',
                'AWS_EC2_METADATA_SERVICE_ENDPOINT', 'AWS_ENDPOINT_URL_STS')
# never the real instance metadata (see the module's docstring)
os.environ.setdefault('AWS_EC2_METADATA_DISABLED', 'true')


# ------------------------------------------------------ Signature Version 4
# written here independently of format/core/io_s3.c, to check it

def canonical_query(query):
    """A query string's canonical form: each name and value decoded, then
    encoded again as S3 does, the pairs sorted."""
    q = sorted((urllib.parse.quote(k, safe='-_.~'), urllib.parse.quote(v, safe='-_.~'))
               for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True))
    return '&'.join(f'{k}={v}' for k, v in q)


def signature(secret, region, date, method, path, query, headers, payload_hash, service='s3'):
    """The hex signature of a request to `service`: `path` as sent
    (already encoded), `query` canonical, `headers` the signed ones (any
    case), `date` YYYYMMDDTHHMMSSZ."""
    lower = {k.lower(): ' '.join(str(v).split()) for k, v in headers.items()}
    names = sorted(lower)
    creq = '\n'.join([method, path, query] + [f'{n}:{lower[n]}' for n in names] +
                     ['', ';'.join(names), payload_hash])
    scope = f'{date[:8]}/{region}/{service}/aws4_request'
    sts = '\n'.join(['AWS4-HMAC-SHA256', date, scope, hashlib.sha256(creq.encode()).hexdigest()])
    k = ('AWS4' + secret).encode()
    for part in (date[:8], region, service, 'aws4_request'):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()


def sign(keys, method, path, query, headers, payload_hash):
    """`headers` plus host, x-amz-date, x-amz-content-sha256 and an
    Authorization that signs them all; keys = (host:port, key id, secret,
    region)."""
    hostport, key_id, secret, region = keys
    date = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
    out = dict(headers, host=hostport, **{'x-amz-date': date, 'x-amz-content-sha256': payload_hash})
    sig = signature(secret, region, date, method, path, query, out, payload_hash)
    names = ';'.join(sorted(k.lower() for k in out))
    out['Authorization'] = (f'AWS4-HMAC-SHA256 Credential={key_id}/{date[:8]}/{region}/s3/'
                            f'aws4_request, SignedHeaders={names}, Signature={sig}')
    return out


# ---------------------------------------------------------------- a client

class S3Client:
    """A small S3 client of one bucket over http.client, each request
    signed with Signature Version 4, to set up and inspect the bucket."""

    def __init__(self, host, port, access_key, secret_key, region=REGION, bucket=BUCKET):
        self.host, self.port, self.bucket = host, port, bucket
        self.keys_ = (f'{host}:{port}', access_key, secret_key, region)

    def request(self, method, key, body=b'', params=None, headers=None):
        """(status, body) of one request on the object `key` (None: the
        bucket itself) with the query `params` (a dict)."""
        path = '/' + self.bucket + ('/' + urllib.parse.quote(key, safe='/~')
                                    if key is not None else '')
        query = canonical_query(urllib.parse.urlencode(params or {}))
        signed = sign(self.keys_, method, path, query, headers or {},
                      hashlib.sha256(body).hexdigest())
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path + ('?' + query if query else ''), body=body, headers=signed)
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

    def delete(self, key):
        status, body = self.request('DELETE', key)
        assert status in (200, 204), f'DELETE {key}: {status} {body[:300]!r}'

    def prefixes(self, prefix):
        """The CommonPrefixes of a one-level listing of prefix."""
        root, ns = self.list_page({'prefix': prefix, 'delimiter': '/'})
        return [c.findtext(ns + 'Prefix') for c in root.findall(ns + 'CommonPrefixes')]

    def list_page(self, params):
        """One ListObjectsV2 answer, parsed: (root element, namespace)."""
        status, body = self.request('GET', None, params=dict(params, **{'list-type': '2'}))
        assert status == 200, f'list {params}: {status} {body[:300]!r}'
        root = ET.fromstring(body)
        return root, root.tag[:root.tag.index('}') + 1] if root.tag.startswith('{') else ''

    def keys(self, prefix):
        """Every key under prefix."""
        out, token = [], None
        while True:
            params = {'prefix': prefix}
            if token:
                params['continuation-token'] = token
            root, ns = self.list_page(params)
            out += [c.find(ns + 'Key').text for c in root.findall(ns + 'Contents')]
            token = root.findtext(ns + 'NextContinuationToken')
            if root.findtext(ns + 'IsTruncated') != 'true' or not token:
                return out


# ---------------------------------------------------------------- servers

class S3Server:
    """One running server and its bucket (see the module's docstring)."""

    kind = scheme = 's3'
    # the error codes of a wrong secret and of a bucket that does not exist
    bad_signature = 'SignatureDoesNotMatch'
    no_bucket = 'NoSuchBucket'

    def __init__(self, name, host, port, access_key, secret_key, stop):
        self.name, self.host, self.port = name, host, port
        self.endpoint = f'http://{host}:{port}'
        self.access_key, self.secret_key = access_key, secret_key
        self.region, self.bucket = REGION, BUCKET
        self.client = S3Client(host, port, access_key, secret_key, REGION, BUCKET)
        self._stop = stop

    def url(self, key):
        return f's3://{self.bucket}/{key}'

    def env(self, via=None, wrong_key=False):
        return {'AWS_ACCESS_KEY_ID': self.access_key,
                'AWS_SECRET_ACCESS_KEY': 'not-' + self.secret_key if wrong_key else self.secret_key,
                'AWS_REGION': self.region, 'AWS_ENDPOINT_URL': via or self.endpoint}

    def endpoint_env(self, via):
        return {'AWS_ENDPOINT_URL': via}

    def upload(self, folder, prefix):
        upload_tree(self.client, folder, prefix)

    def stop(self):
        self._stop()

    def __repr__(self):
        return f'S3Server({self.name} at {self.endpoint})'


def upload_tree(client, folder, prefix):
    """Every file under `folder` as PREFIX/RELATIVE/PATH through
    client.put (8 at a time): S3Server's and AzureServer's upload."""
    def put(full):
        rel = os.path.relpath(full, folder).replace(os.sep, '/')
        with open(full, 'rb') as fh:
            client.put(prefix + '/' + rel, fh.read())
    files = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(put, files))


def pass_on(host, port, method, target, body, headers):
    """A proxy's request sent on to the server at host:port: (status, the
    answer's headers as pairs, with a Content-Length, its body)."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request(method, target, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        out = [(k, v) for k, v in r.getheaders()
               if k.lower() not in ('transfer-encoding', 'connection')]
        if r.getheader('Content-Length') is None:
            out.append(('Content-Length', str(len(data))))
        return r.status, out, data
    finally:
        conn.close()


class Unavailable(Exception):
    """The server cannot run here (a skip, with this reason)."""


def npm_missing(program, folder):
    """Why the node program `program`, which scripts/install-deps puts in
    tests/FOLDER/node_modules, cannot run here, or None."""
    if shutil.which('node') is None:
        return 'node is not installed (scripts/install-deps installs nodejs and npm)'
    if not os.access(program, os.X_OK):
        return f'{program} is missing: run scripts/install-deps (npm ci --prefix tests/{folder})'
    return None


def s3rver_missing():
    """Why s3rver cannot run here, or None."""
    return npm_missing(S3RVER, 's3')


def start_s3rver(folder):
    """s3rver on 127.0.0.1 (a free port it picks), its data in `folder`,
    with the bucket BUCKET; s3rver knows one account, S3RVER."""
    why = s3rver_missing()
    if why:
        raise Unavailable(why)
    log = open(os.path.join(folder, 'log'), 'w+b')
    proc = subprocess.Popen([S3RVER, '-d', os.path.join(folder, 'store'), '-a', '127.0.0.1',
                             '-p', '0', '--no-vhost-buckets', '--configure-bucket', BUCKET],
                            stdout=log, stderr=subprocess.STDOUT,
                            # s3rver's continuation tokens use DES, which
                            # node's OpenSSL 3 keeps in its legacy provider
                            env=dict(os.environ, NODE_OPTIONS='--openssl-legacy-provider'))

    def stop():
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

    deadline = time.monotonic() + START_TIMEOUT
    while True:
        log.seek(0)
        m = re.search(rb'listening on 127\.0\.0\.1:(\d+)', log.read())
        if m:
            return S3Server('s3rver', '127.0.0.1', int(m.group(1)), 'S3RVER', 'S3RVER', stop)
        if proc.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            out = log.read().decode(errors='replace')[-2000:]
            stop()
            raise RuntimeError(f's3rver did not start: {out}')
        time.sleep(0.05)


def start_radosgw(folder):
    """Ceph's RADOS Gateway as tests/s3/rgw starts it, its state in
    folder/state, with the bucket BUCKET."""
    state = os.path.join(folder, 'state')
    try:
        r = subprocess.run([RGW, 'start', '--bucket', BUCKET, state], capture_output=True,
                           timeout=120)
    except OSError as e:
        raise Unavailable(f'{RGW}: {e}') from None
    err = r.stderr.decode(errors='replace').strip()
    if r.returncode == 3:
        raise Unavailable(err)
    if r.returncode != 0:
        raise RuntimeError(err)
    v = shell_vars(r.stdout.decode())
    endpoint = urllib.parse.urlsplit(v['AWS_ENDPOINT_URL'])

    def stop():
        subprocess.run([RGW, 'stop', v['RGW_DIR']], check=True, timeout=120)
    server = S3Server('radosgw', endpoint.hostname, endpoint.port, v['AWS_ACCESS_KEY_ID'],
                      v['AWS_SECRET_ACCESS_KEY'], stop)
    server.rgw_dir = v['RGW_DIR']
    return server


def rgw_config_set(server, name, value):
    """Sets option `name` of the running radosgw of `server` through its
    admin socket (`ceph daemon ... config set`), as an operator would;
    @return the value it had."""
    run_dir = os.path.join(server.rgw_dir, 'run')
    socks = [f for f in os.listdir(run_dir) if f.startswith('client.') and f.endswith('.asok')]
    assert len(socks) == 1, f'{run_dir}: {socks}'
    sock = os.path.join(run_dir, socks[0])

    def ceph(*args):
        r = subprocess.run(['ceph', '--admin-daemon', sock] + list(args), capture_output=True,
                           timeout=60)
        assert r.returncode == 0, f'ceph daemon {sock} {args}: {r.stderr!r}'
        return json.loads(r.stdout or b'{}')
    old = ceph('config', 'get', name)[name]
    ceph('config', 'set', name, str(value))
    return old


def shell_vars(text):
    """The NAME=VALUE lines of a shell's assignments, as a dict."""
    out = {}
    for line in text.splitlines():
        name, eq, value = line.partition('=')
        if eq and re.fullmatch(r'[A-Z_][A-Z0-9_]*', name):
            out[name] = ''.join(shlex.split(value))
    return out


STARTERS = {'s3rver': start_s3rver, 'radosgw': start_radosgw}


def start(name, folder):
    """Starts server `name` with its state in `folder`: an S3Server, or
    Unavailable (it cannot run here), or another exception (it failed)."""
    return STARTERS[name](str(folder))


def corpus_url(server, case):
    return server.url(f'corpus/{case}/array')


# ---------------------------------------------- a signature-checking proxy

def through(proxy, monkeypatch, server=None):
    """A fixture's body (`yield from through(...)`): the programs pointed at
    proxy for the test (AWS_ENDPOINT_URL, or the connection string's
    BlobEndpoint for Azurite), which gets proxy; closed after.  `server`
    is the one behind the proxy (a VerifyingProxy's own by default)."""
    for k, v in (server or proxy.s3).endpoint_env(proxy.endpoint).items():
        monkeypatch.setenv(k, v)
    try:
        yield proxy
    finally:
        proxy.close()


class VerifyingProxy:
    """An HTTP proxy on 127.0.0.1 in front of an S3Server that checks each
    request's Signature Version 4 against the server's keys, as S3 does
    (s3rver checks only the key id), answering 403 SignatureDoesNotMatch
    when it differs; it signs again with the same keys what it forwards
    (the Host differs, and the server checks the signature too).  It cuts
    every listing to pages of PAGE keys and prefixes, so that continuation
    tokens are followed (s3rver's own pages lose prefixes).  .endpoint is
    its URL, .s3 the server; .checked counts the signatures checked, .pages
    the listing pages answered, .methods the requests' methods; with
    .fail_first set, the first try of each request is answered 503 and
    counted in .failed.  close() stops it.

    In front of an AzureServer (azfixture.py) it checks Shared Key
    signatures instead, cuts List Blobs answers to pages of PAGE blobs and
    prefixes (NextMarker followed), and answers as the Blob service does
    (an error's code in x-ms-error-code too; ServerBusy for fail_first;
    .put_ok, the status of a blob written, is 201 there, 200 on S3).

    Temporary credentials: .temporary maps a key id to (secret, session
    token, expiry in time.time() seconds); a request signed with one must
    carry (and sign) its x-amz-security-token, else 400 InvalidToken, and
    after the expiry is answered 400 ExpiredToken, as S3 does (counted in
    .expired).  With accept_server_keys=False only those are accepted
    (the server's own keys get 403 InvalidAccessKeyId).  .signed lists
    (time.time(), key id, method, target) of each request whose signature
    was good; .unsigned counts requests without an Authorization."""

    PAGE = 2

    def __init__(self, server, accept_server_keys=True):
        self.s3 = server
        self.azure = getattr(server, 'kind', 's3') == 'azure'
        self.put_ok = 201 if self.azure else 200
        self.accept_server_keys = accept_server_keys
        self.temporary = {}
        self.signed = []
        self.expired = 0
        self.unsigned = 0
        self.checked = 0
        self.pages = 0
        self.methods = []
        self.fail_first = False
        self.failed = 0
        self.seen = set()
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), self._handler())
        self.port = self.server.server_address[1]
        self.endpoint = f'http://127.0.0.1:{self.port}'
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def _any(self):
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n) if n else b''
                status, headers, out = proxy.answer(self.command, self.path, self.headers, body)
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                if self.command != 'HEAD':
                    self.wfile.write(out)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _any
        return Handler

    def error(self, status, code, message=''):
        if self.azure:
            import azfixture
            return azfixture.proxy_error(status, code, message)
        out = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
               f'<Message>{message}</Message></Error>').encode()
        return status, [('Content-Length', str(len(out)))], out

    def answer(self, method, target, headers, body):
        """(status, headers, body) of the answer to one request."""
        with self.lock:
            self.methods.append(method)
        path, _, query = target.partition('?')
        if self.fail_first:
            what = (method, target, headers.get('Range'))
            with self.lock:
                first = what not in self.seen
                self.seen.add(what)
                self.failed += first
            if first:
                return self.error(503, 'ServerBusy' if self.azure else 'SlowDown')
        refused = self.refusal(method, path, query, headers, body)
        if refused:
            return self.error(*refused)
        params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        if self.azure:
            import azfixture
            if azfixture.proxy_is_listing(method, params):
                out = azfixture.proxy_list_page(self, params)
                return 200, [('Content-Length', str(len(out))),
                             ('Content-Type', 'application/xml')], out
        elif params.get('list-type') == '2' and method == 'GET':
            out = self.list_page(params)
            return 200, [('Content-Length', str(len(out)))], out
        return self.forward(method, path, canonical_query(query), headers, body)

    # headers that the forwarded request carries, signed again
    SIGNED = re.compile(r'x-amz-.*|range|content-type|content-md5|if-.*', re.I)

    def forward(self, method, path, query, headers, body):
        if self.azure:
            import azfixture
            return azfixture.proxy_forward(self, method, path, query, headers, body)
        fwd = {k: v for k, v in headers.items() if self.SIGNED.fullmatch(k) and
               k.lower() not in ('x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token')}
        fwd = sign(self.s3.client.keys_, method, path, query, fwd, hashlib.sha256(body).hexdigest())
        return pass_on(self.s3.host, self.s3.port, method,
                       path + ('?' + query if query else ''), body, fwd)

    def list_page(self, params):
        """A ListObjectsV2 answer of at most PAGE keys and prefixes, from the
        whole listing the server gives; its continuation token holds
        characters that a query must encode."""
        with self.lock:
            self.pages += 1
        tok = params.pop('continuation-token', None)
        start = int(tok.rsplit('=', 1)[1]) if tok else 0
        params.pop('list-type')
        params['max-keys'] = '1000'
        root, ns = self.s3.client.list_page(params)
        assert root.findtext(ns + 'IsTruncated') != 'true', 'a folder of more than 1000 keys'
        entries = sorted([(c.findtext(ns + 'Key'), c.findtext(ns + 'Size'))
                          for c in root.findall(ns + 'Contents')] +
                         [(c.findtext(ns + 'Prefix'), None)
                          for c in root.findall(ns + 'CommonPrefixes')])
        page = entries[start:start + self.PAGE]
        more = start + self.PAGE < len(entries)
        x = ET.Element('ListBucketResult', xmlns='http://s3.amazonaws.com/doc/2006-03-01/')
        ET.SubElement(x, 'Name').text = self.s3.bucket
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

    def refusal(self, method, path, query, headers, body):
        """None when the request's signature is good, else the (status,
        code, message) of S3's refusal."""
        if self.azure:
            import azfixture
            return azfixture.proxy_refusal(self, method, path, query, headers, body)
        bad = (403, 'SignatureDoesNotMatch', 'checked by the test proxy')
        auth = headers.get('Authorization', '')
        if not auth:
            with self.lock:
                self.unsigned += 1
            return (403, 'AccessDenied', 'Anonymous access is refused by the test proxy')
        m = re.fullmatch(r'AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, '
                         r'SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})', auth)
        if not m:
            return bad
        key_id, day, region, signed, sig = m.groups()
        names = signed.split(';')
        with self.lock:
            temp = self.temporary.get(key_id)
        if temp:
            secret, token, expiry = temp
            if headers.get('x-amz-security-token') != token or \
                    'x-amz-security-token' not in names:
                return (400, 'InvalidToken', 'The provided token is malformed or otherwise invalid.')
            if time.time() >= expiry:
                with self.lock:
                    self.expired += 1
                return (400, 'ExpiredToken', 'The provided token has expired.')
        elif key_id == self.s3.access_key and self.accept_server_keys:
            secret = self.s3.secret_key
        else:
            return (403, 'InvalidAccessKeyId',
                    'The AWS Access Key Id you provided does not exist in our records.')
        if region != self.s3.region:
            return bad
        date = headers.get('x-amz-date', '')
        payload = headers.get('x-amz-content-sha256', '')
        if payload != hashlib.sha256(body).hexdigest() or not date.startswith(day):
            return bad
        needed = {'host', 'x-amz-date', 'x-amz-content-sha256'}
        if names != sorted(names) or not needed <= set(names):
            return bad
        want = signature(secret, region, date, method, path, canonical_query(query),
                         {n: headers.get(n, '') for n in names}, payload)
        with self.lock:
            self.checked += 1
        if not hmac.compare_digest(sig, want):
            return bad
        with self.lock:
            self.signed.append((time.time(), key_id, method, path + ('?' + query if query else '')))
        return None

    def signature_ok(self, method, path, query, headers, body):
        return self.refusal(method, path, query, headers, body) is None

    def close(self):
        self.server.shutdown()
        self.server.server_close()

