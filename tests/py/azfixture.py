"""azfixture.py: the Azure Blob Storage server of the tests (Azurite, Microsoft's emulator, a node program started on 127.0.0.1), a small client signing with Shared Key, and what VerifyingProxy (s3fixture.py) does in front of it.

The API, the same as s3fixture.S3Server's (the fixtures store_server and
store_corpus of conftest.py give one per test, next to the S3 servers):

  AzureServer
    .name                 'azurite'
    .kind, .scheme        'azure' (S3Server: 's3')
    .host, .port
    .endpoint             'http://127.0.0.1:PORT/devstoreaccount1': the
                          Blob service endpoint, path-style, as -o
                          endpoint= and a connection string's BlobEndpoint
                          take it
    .account, .key        devstoreaccount1 and Azurite's well-known key
    .bad_signature, .no_bucket
                          the error codes (x-ms-error-code) of a wrong key
                          (AuthorizationFailure: Azurite's word) and of a
                          missing container (ContainerNotFound)
    .container            the one container every test shares (.bucket
                          names it too): put your blobs under a prefix of
                          your own
    .client               an AzureClient of the container:
        put(key, data)          Put Blob (a block blob), asserts 201
        get(key)                the blob's bytes, or None
        keys(prefix)            every blob name under prefix (NextMarker
                                followed)
        prefixes(prefix)        the BlobPrefix names of a one-level
                                listing (delimiter '/')
        delete(key)             Delete Blob, asserts 202
        list_page(params)       one List Blobs answer: (root, '')
        put_block(key, id, data), put_block_list(key, ids),
        block_list(key)         the blocks of a blob (Put Block, Put
                                Block List, Get Block List)
        uncommitted(prefix)     blob names under prefix that have
                                uncommitted blocks only (an upload
                                under way)
        request(method, key, body=b'', params=None, headers=None)
                                -> (status, body bytes)
        exchange(...)           the same -> (status, headers, body), the
                                headers' names lower-cased
    .url(key)             'azure://CONTAINER/KEY'
    .env(via=None, wrong_key=False)
                          AZURE_STORAGE_CONNECTION_STRING, its BlobEndpoint
                          the server's (or the base URL `via`, a proxy's
                          'http://127.0.0.1:PORT'), with another key when
                          wrong_key
    .endpoint_env(via)    the variables that point the programs at `via`
    .connection_string(endpoint=None, key=None)
    .wrong_key()          a key of the right form that is not the account's
    .upload(folder, prefix)   every file under folder as prefix/REL/PATH
    .stop()

start_azurite(folder) starts one (s3fixture.Unavailable when node or the
package is missing: a loud skip).  The client is written here from
Microsoft's "Authorize with Shared Key" with hmac, hashlib, base64 and
http.client, independently of format/azure/, to check it.
"""
import base64
import copy
import email.utils
import hmac
import hashlib
import http.client
import os
import re
import subprocess
import time
import urllib.parse
import xml.etree.ElementTree as ET

import s3fixture

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AZURE_DIR = os.path.join(REPO, 'tests', 'azure')
# TILEDBFS_AZURITE=PROGRAM: an azurite-blob installed elsewhere (make
# distcheck's tarball has no node_modules)
AZURITE = (os.environ.get('TILEDBFS_AZURITE')
           or os.path.join(AZURE_DIR, 'node_modules', '.bin', 'azurite-blob'))
ACCOUNT = 'devstoreaccount1'
# Azurite's well-known account key, published in its README and
# Microsoft's documentation of the emulator
KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
CONTAINER = 'tiledbfs'
VERSION = '2021-08-06'
START_TIMEOUT = 30    # seconds for Azurite to start (it takes 1 to 4)
# the variables that choose an Azure account, its credentials and endpoint:
# each test sets its server's and removes the others (conftest.point_at)
AZURE_ENV_KEYS = ('AZURE_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_ACCOUNT',
                  'AZURE_STORAGE_KEY', 'AZURE_STORAGE_SAS_TOKEN', 'AZURE_STORAGE_AUTH_MODE',
                  'AZURE_STORAGE_SERVICE_ENDPOINT')


# -------------------------------------------------------------- Shared Key

# the standard headers the string to sign holds, in its order
SIGNED_HEADERS = ('content-encoding', 'content-language', 'content-length', 'content-md5',
                  'content-type', 'date', 'if-modified-since', 'if-match', 'if-none-match',
                  'if-unmodified-since', 'range')


def string_to_sign(method, path, params, headers, account=ACCOUNT):
    """The string Shared Key signs (Blob service, version 2015-02-21 and
    later): `path` the URL's path as sent (encoded), `params` the query
    decoded as (name, value) pairs, `headers` every header sent (any
    case)."""
    lower = {}
    for k, v in headers.items():    # a header sent twice: both values
        lower.setdefault(k.lower(), []).append(str(v).strip())
    std = []
    for name in SIGNED_HEADERS:
        value = ','.join(lower.get(name, []))
        if name == 'content-length' and value == '0':
            value = ''          # 0 signs as an empty line since 2015-02-21
        if name == 'date' and 'x-ms-date' in lower:
            value = ''          # x-ms-date is the one signed
        std.append(value)
    ms = sorted(n for n in lower if n.startswith('x-ms-'))
    canon_headers = ''.join(f'{n}:' + ','.join(' '.join(v.split()) for v in lower[n]) + '\n'
                            for n in ms)
    grouped = {}
    for k, v in params:
        grouped.setdefault(k.lower(), []).append(v)
    resource = f'/{account}{path or "/"}' + ''.join(
        f'\n{k}:' + ','.join(sorted(grouped[k])) for k in sorted(grouped))
    return method + '\n' + '\n'.join(std) + '\n' + canon_headers + resource


def shared_key(key, sts):
    """The base64 HMAC-SHA256 of the string to sign with the account key."""
    return base64.b64encode(hmac.new(base64.b64decode(key), sts.encode('utf-8'),
                                     hashlib.sha256).digest()).decode()


def sign(method, path, params, headers, key=KEY, account=ACCOUNT):
    """`headers` plus x-ms-date, x-ms-version and an Authorization that
    signs the request."""
    out = dict(headers)
    out['x-ms-date'] = email.utils.formatdate(usegmt=True)
    out.setdefault('x-ms-version', VERSION)
    sts = string_to_sign(method, path, params, out, account)
    out['Authorization'] = f'SharedKey {account}:{shared_key(key, sts)}'
    return out


def encode_query(params):
    return '&'.join(f'{urllib.parse.quote(k, safe="-_.~")}={urllib.parse.quote(v, safe="-_.~")}'
                    for k, v in params)


# ---------------------------------------------------------------- a client

class AzureClient:
    """A small Blob service client of one container over http.client,
    path-style (/ACCOUNT/CONTAINER/BLOB), each request signed with Shared
    Key."""

    def __init__(self, host, port, key=KEY, container=CONTAINER, account=ACCOUNT):
        self.host, self.port, self.key = host, port, key
        self.container, self.account = container, account

    def path(self, key, container=None):
        return (f'/{self.account}/{container or self.container}' +
                ('/' + urllib.parse.quote(key, safe='/~') if key is not None else ''))

    def request(self, method, key, body=b'', params=None, headers=None, container=None):
        """(status, body) of one request, as S3Client.request gives it."""
        status, _, out = self.exchange(method, key, body, params, headers, container)
        return status, out

    def exchange(self, method, key, body=b'', params=None, headers=None, container=None):
        """(status, headers (names lower-cased), body) of one request on
        the blob `key` (None: the container; `container` another one) with
        the query `params` (a dict or (name, value) pairs)."""
        path = self.path(key, container)
        pairs = list(params.items()) if isinstance(params, dict) else list(params or [])
        hdrs = dict(headers or {})
        if method in ('PUT', 'POST') or body:
            hdrs['Content-Length'] = str(len(body))
        signed = sign(method, path, pairs, hdrs, self.key, self.account)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path + ('?' + encode_query(pairs) if pairs else ''), body=body,
                         headers=signed)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def put(self, key, data):
        status, _, body = self.exchange('PUT', key, data, headers={'x-ms-blob-type': 'BlockBlob'})
        assert status == 201, f'Put Blob {key}: {status} {body[:300]!r}'

    def get(self, key):
        status, _, body = self.exchange('GET', key)
        return body if status == 200 else None

    def delete(self, key):
        status, _, body = self.exchange('DELETE', key)
        assert status == 202, f'Delete Blob {key}: {status} {body[:300]!r}'

    def list_page(self, params):
        """One List Blobs answer, parsed: (root element, namespace '')."""
        status, _, body = self.exchange('GET', None,
                                       params=dict(params, restype='container', comp='list'))
        assert status == 200, f'List Blobs {params}: {status} {body[:300]!r}'
        return ET.fromstring(body), ''

    def listing(self, params):
        """Every Blob and BlobPrefix element of a listing (NextMarker
        followed)."""
        out, marker = [], None
        while True:
            p = dict(params)
            if marker:
                p['marker'] = marker
            root, _ = self.list_page(p)
            blobs = root.find('Blobs')
            out += list(blobs) if blobs is not None else []
            marker = root.findtext('NextMarker')
            if not marker:
                return out

    def keys(self, prefix):
        """Every blob name under prefix."""
        return [e.findtext('Name') for e in self.listing({'prefix': prefix}) if e.tag == 'Blob']

    def prefixes(self, prefix):
        """The BlobPrefix names of a one-level listing of prefix."""
        return [e.findtext('Name') for e in self.listing({'prefix': prefix, 'delimiter': '/'})
                if e.tag == 'BlobPrefix']

    def put_block(self, key, block_id, data):
        status, _, body = self.exchange('PUT', key, data,
                                       params={'comp': 'block', 'blockid': block_id})
        assert status == 201, f'Put Block {key} {block_id}: {status} {body[:300]!r}'

    def put_block_list(self, key, ids):
        xml = ('<?xml version="1.0" encoding="utf-8"?><BlockList>' +
               ''.join(f'<Latest>{i}</Latest>' for i in ids) + '</BlockList>').encode()
        status, _, body = self.exchange('PUT', key, xml, params={'comp': 'blocklist'})
        assert status == 201, f'Put Block List {key}: {status} {body[:300]!r}'

    def block_list(self, key, which='all'):
        """{'committed': [(id, size)], 'uncommitted': [...]} of a blob."""
        status, _, body = self.exchange('GET', key, params={'comp': 'blocklist',
                                                           'blocklisttype': which})
        assert status == 200, f'Get Block List {key}: {status} {body[:300]!r}'
        root = ET.fromstring(body)
        return {kind: [(b.findtext('Name'), int(b.findtext('Size')))
                       for b in root.findall(f'{tag}/Block')]
                for kind, tag in (('committed', 'CommittedBlocks'),
                                  ('uncommitted', 'UncommittedBlocks'))}

    def uncommitted(self, prefix):
        """The names under prefix of blobs that have uncommitted blocks only
        (listed with include=uncommittedblobs, absent without): the uploads
        of Put Block under way, which no Put Block List ended."""
        every = set(e.findtext('Name') for e in
                    self.listing({'prefix': prefix, 'include': 'uncommittedblobs'})
                    if e.tag == 'Blob')
        return sorted(every - set(self.keys(prefix)))


# ---------------------------------------------------------------- a server

class AzureServer:
    """One running Azurite and its container (see the module's docstring)."""

    name = 'azurite'
    kind = scheme = 'azure'
    # the error code of a request whose signature is not the account's
    # (Azurite's: Azure itself says AuthenticationFailed)
    bad_signature = 'AuthorizationFailure'
    # a container that does not exist, as the service names it
    no_bucket = 'ContainerNotFound'

    def __init__(self, host, port, stop):
        self.host, self.port = host, port
        self.account, self.key = ACCOUNT, KEY
        self.container = self.bucket = CONTAINER
        self.endpoint = self.blob_endpoint(f'http://{host}:{port}')
        self.client = AzureClient(host, port, KEY, CONTAINER, ACCOUNT)
        self._stop = stop

    def blob_endpoint(self, base):
        """The Blob service endpoint of the account at base URL `base`."""
        return f'{base}/{self.account}'

    def connection_string(self, endpoint=None, key=None):
        return (f'DefaultEndpointsProtocol=http;AccountName={self.account};'
                f'AccountKey={key or self.key};BlobEndpoint={endpoint or self.endpoint};')

    def wrong_key(self):
        """A key of the right form that is not the account's."""
        return base64.b64encode(hashlib.sha512(b'not ' + self.key.encode()).digest()).decode()

    def env(self, via=None, wrong_key=False):
        endpoint = self.blob_endpoint(via) if via else self.endpoint
        return {'AZURE_STORAGE_CONNECTION_STRING': self.connection_string(
            endpoint, self.wrong_key() if wrong_key else None)}

    def endpoint_env(self, via):
        return self.env(via)

    def url(self, key):
        return f'azure://{self.container}/{key}'

    def upload(self, folder, prefix):
        """Every file under `folder` as PREFIX/RELATIVE/PATH (8 at a time)."""
        s3fixture.upload_tree(self.client, folder, prefix)

    def stop(self):
        self._stop()

    def __repr__(self):
        return f'AzureServer({self.name} at {self.endpoint})'


def azurite_missing():
    """Why Azurite cannot run here, or None."""
    return s3fixture.npm_missing(AZURITE, 'azure')


def start_azurite(folder):
    """Azurite's Blob service on 127.0.0.1 (on a free port the kernel
    picks: it prints it), its blobs in memory, no telemetry, with the
    container CONTAINER; once it answers."""
    why = azurite_missing()
    if why:
        raise s3fixture.Unavailable(why)
    log = open(os.path.join(folder, 'log'), 'w+b')
    # --disableTelemetry: Azurite would otherwise send usage data out
    proc = subprocess.Popen([AZURITE, '--blobHost', '127.0.0.1', '--blobPort', '0',
                             '--inMemoryPersistence', '--disableTelemetry'],
                            stdout=log, stderr=subprocess.STDOUT, cwd=folder)

    def stop():
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

    def failed(what):
        log.seek(0)
        out = log.read().decode(errors='replace')[-2000:]
        stop()
        return RuntimeError(f'azurite {what}: {out}')

    deadline = time.monotonic() + START_TIMEOUT
    while True:
        log.seek(0)
        m = re.search(rb'listens on http://127\.0\.0\.1:(\d+)', log.read())
        if m:
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            raise failed('did not start')
        time.sleep(0.05)
    server = AzureServer('127.0.0.1', int(m.group(1)), stop)
    while True:
        try:
            status, _, body = server.client.exchange('PUT', None, params={'restype': 'container'})
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise failed('does not answer') from None
            time.sleep(0.05)
    if status != 201:
        raise failed(f'did not create container {CONTAINER}: {status} {body[:300]!r}')
    return server


# ------------------------------------- what VerifyingProxy does for Azure
# s3fixture.VerifyingProxy calls these when its server is an AzureServer:
# the same checks, answers and pages as for S3, in the Blob service's terms.

def proxy_refusal(proxy, method, path, query, headers, body):
    """None when the request's Shared Key signature is the account's, else
    the (status, code, message) of Azurite's refusal (a request without
    one, with a SAS too, is refused: the tests sign with the key)."""
    az = proxy.s3
    bad = (403, az.bad_signature, 'Server failed to authenticate the request (checked by '
           'the test proxy)')
    auth = headers.get('Authorization', '')
    if not auth:
        with proxy.lock:
            proxy.unsigned += 1
        return (403, az.bad_signature, 'Anonymous access is refused by the test proxy')
    m = re.fullmatch(r'SharedKey ([a-z0-9]+):([A-Za-z0-9+/=]+)', auth)
    if not m or m.group(1) != az.account:
        return bad
    if not headers.get('x-ms-date') and not headers.get('Date'):
        return bad
    n = headers.get('Content-Length')
    if (n is not None and int(n) != len(body)) or (n is None and body):
        return bad
    params = urllib.parse.parse_qsl(query, keep_blank_values=True)
    want = shared_key(az.key, string_to_sign(method, path, params, headers, az.account))
    with proxy.lock:
        proxy.checked += 1
    if not hmac.compare_digest(m.group(2), want):
        return bad
    with proxy.lock:
        proxy.signed.append((time.time(), az.account, method,
                             path + ('?' + query if query else '')))
    return None


def proxy_is_listing(method, params):
    return method == 'GET' and params.get('comp') == 'list' and \
        params.get('restype') == 'container'


# headers that the forwarded request carries, signed again
FORWARDED = re.compile(r'x-ms-.*|range|content-type|content-md5|content-encoding|'
                       r'content-language|if-.*', re.I)


def proxy_forward(proxy, method, path, query, headers, body):
    """The request passed on to Azurite, signed again with the account's
    key: (status, headers, body)."""
    az = proxy.s3
    params = urllib.parse.parse_qsl(query, keep_blank_values=True)
    fwd = {k: v for k, v in headers.items() if FORWARDED.fullmatch(k) and
           k.lower() not in ('x-ms-date',)}
    if method in ('PUT', 'POST') or body:
        fwd['Content-Length'] = str(len(body))
    fwd = sign(method, path, params, fwd, az.key, az.account)
    return s3fixture.pass_on(az.host, az.port, method,
                             path + ('?' + encode_query(params) if params else ''), body, fwd)


def proxy_list_page(proxy, params):
    """A List Blobs answer of at most proxy.PAGE blobs and prefixes, from
    the whole listing Azurite gives (each Blob element as it gave it);
    its NextMarker holds characters that a query must encode."""
    with proxy.lock:
        proxy.pages += 1
    marker = params.pop('marker', None)
    start = int(marker.rsplit('=', 1)[1]) if marker else 0
    params.pop('maxresults', None)
    ask = {k: v for k, v in params.items() if k not in ('restype', 'comp', 'timeout')}
    every = proxy.s3.client.listing(ask)
    every.sort(key=lambda e: e.findtext('Name'))
    page = every[start:start + proxy.PAGE]
    more = start + proxy.PAGE < len(every)
    x = ET.Element('EnumerationResults', ServiceEndpoint=proxy.s3.endpoint,
                   ContainerName=proxy.s3.container)
    for name in ('prefix', 'delimiter'):
        if name in params:
            ET.SubElement(x, name.capitalize()).text = params[name]
    if marker:
        ET.SubElement(x, 'Marker').text = marker
    ET.SubElement(x, 'MaxResults').text = str(proxy.PAGE)
    blobs = ET.SubElement(x, 'Blobs')
    for e in page:
        blobs.append(copy.deepcopy(e))
    ET.SubElement(x, 'NextMarker').text = f'p+/&?={start + proxy.PAGE}' if more else None
    return b'<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(x)


def proxy_error(status, code, message=''):
    """An error answer as the Blob service gives it: the code in
    x-ms-error-code and in the body."""
    out = (f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code>'
           f'<Message>{message}</Message></Error>').encode()
    return status, [('Content-Length', str(len(out))), ('x-ms-error-code', code),
                    ('Content-Type', 'application/xml')], out
