"""What the object-store rows share: the servers of tests/py/s3fixture.py
(s3rver, and radosgw where it can run) and Azurite on 127.0.0.1, the
environment pointing a mount at one of them through a proxy, and the
listing, checking and deleting of what the write rows put there."""
import os
import re
import subprocess
import sys
import time
import uuid

from benchlib.context import TOP, log
from benchlib.mounts import Mount

S3_RTTS = (0, 20, 100)          # round trips (ms)
S3_SIZE_MIB = 256               # the ZSTD attribute read by cat
S3_FRAGS = (16, 1000, '1000c')  # fragments of the mounted arrays ('1000c':
                                # the 1,000 after tiledbfs-consolidate)
S3_MOUNT_TIMEOUT = 180          # s: a mount that takes longer "did not come up"
S3_SLOW = 30                    # s: one sample of a mount this slow is enough
S3_PREAD_SAMPLES = 40


AZURE_ENV_KEYS = ('AZURE_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_ACCOUNT',
                  'AZURE_STORAGE_KEY', 'AZURE_STORAGE_SAS_TOKEN')


def s3_modules():
    sys.path.insert(0, os.path.join(TOP, 'tests', 'py'))
    import latency_proxy
    import pacing_proxy
    import s3fixture
    return latency_proxy, pacing_proxy, s3fixture


def store_name(srv):
    """What a row calls the store of server srv."""
    return 'Azure' if srv == 'azurite' else 'S3'


class S3Env:
    """os.environ pointed at `endpoint` with the server's keys while the
    block runs (the mounts started in it inherit them): AWS_ENDPOINT_URL,
    or for Azurite the connection string's BlobEndpoint (the account's
    path kept)."""

    def __init__(self, s3fixture, server, endpoint):
        self.keys = list(s3fixture.AWS_ENV_KEYS) + list(AZURE_ENV_KEYS)
        if server.name == 'azurite':
            env = server.env()
            cs = env['AZURE_STORAGE_CONNECTION_STRING']
            path = re.search(r'BlobEndpoint=https?://[^/;]+(/[^;]*)?', cs).group(1) or ''
            cs = re.sub(r'BlobEndpoint=[^;]*', f'BlobEndpoint={endpoint}{path}', cs)
            self.vars = dict(env, AZURE_STORAGE_CONNECTION_STRING=cs)
        else:
            self.vars = dict(server.env(), AWS_ENDPOINT_URL=endpoint)

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.keys}
        for k in self.keys:
            os.environ.pop(k, None)
        os.environ.update(self.vars)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def s3_mount(run, url, opts=()):
    """A fresh mount of url: (Mount, seconds until it was up), or (None,
    None) when it did not come up within S3_MOUNT_TIMEOUT (or failed)."""
    t0 = time.perf_counter()
    try:
        m = Mount(run, url, opts, timeout=S3_MOUNT_TIMEOUT)
    except RuntimeError:
        return None, None
    return m, time.perf_counter() - t0


def rclone_env(server, endpoint):
    """os.environ with rclone's remote `bench:` configured by environment:
    S3, provider Other, the server's keys, `endpoint`, path style; no
    configuration file."""
    env = dict(os.environ, RCLONE_CONFIG_BENCH_TYPE='s3', RCLONE_CONFIG_BENCH_PROVIDER='Other',
               RCLONE_CONFIG_BENCH_ENV_AUTH='false',
               RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=server.access_key,
               RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=server.secret_key,
               RCLONE_CONFIG_BENCH_REGION=server.region,
               RCLONE_CONFIG_BENCH_ENDPOINT=endpoint,
               RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE='true', RCLONE_CONFIG='/dev/null')
    env.pop('AWS_CA_BUNDLE', None)  # rclone 1.60 refuses it on a plain-http endpoint
    return env


def s3_sizes(server, prefix):
    """{key: size} of every object under prefix/."""
    out, token = {}, None
    while True:
        params = {'prefix': prefix + '/'}
        if token:
            params['continuation-token'] = token
        root, ns = server.client.list_page(params)
        for c in root.findall(ns + 'Contents'):
            out[c.findtext(ns + 'Key')] = int(c.findtext(ns + 'Size'))
        token = root.findtext(ns + 'NextContinuationToken')
        if root.findtext(ns + 'IsTruncated') != 'true' or not token:
            return out


def s3_delete(run, server, prefix):
    """Deletes every object under prefix/, one at a time (s3rver can fail
    a DELETE that races another in the same folder: 500), straight to the
    server, not through the paced link; a key that cannot be deleted is
    said and left.  Then, on radosgw, its garbage collection at once: it
    keeps a deleted object's data for hours, and its OSD (memstore, 4 GiB)
    is full, every write stalled, after a few GB of the write rows."""
    for k in server.client.keys(prefix + '/'):
        for _ in range(3):
            status, body = server.client.request('DELETE', k)
            if status in (200, 204):
                break
            time.sleep(0.1)
        else:
            log(f'DELETE {k}: {status} {body[:200]!r} (left in the bucket)')
    conf = run.ctx.s3_gc.get(server.name)
    if conf:
        r = subprocess.run(['radosgw-admin', '-c', conf, 'gc', 'process', '--include-all'],
                           capture_output=True, text=True, timeout=300)
        if r.returncode:
            log(f'radosgw-admin gc process: {r.stderr.strip()[-300:]}')


def s3_same_tree(server, prefix, folder):
    """Why the objects under prefix/ are not folder's files (names and
    sizes), or None when they are."""
    local = {os.path.relpath(os.path.join(d, f), folder): os.path.getsize(os.path.join(d, f))
             for d, _, fs in os.walk(folder) for f in fs}
    remote = {k[len(prefix) + 1:]: n for k, n in s3_sizes(server, prefix).items()}
    if remote == local:
        return None
    miss = sorted(set(local) - set(remote))
    diff = sorted(k for k in set(local) & set(remote) if local[k] != remote[k])
    return (f'{len(remote)} objects for {len(local)} files; missing {miss[:3]}, '
            f'sizes differ {diff[:3]}')


def uuid_hex():
    return uuid.uuid4().hex[:12]
