"""test_s3_write.py: writes to s3:// larger than one PUT (format/core/io_s3_upload.c): multipart commits through a -o rw mount and copies with tiledbfs-copy, read back byte for byte; failed and killed uploads aborted (nothing left in ListMultipartUploads); -o s3_part_size= and s3_retries=; the bucket's region learnt from its answers.  The commit, the options and the retries run on azure:// (Azurite) too: a large commit there goes up in blocks (Put Block, Put Block List).

On radosgw the test lowers rgw_max_put_size (through the daemon's admin
socket) to LIMIT, so that a single PUT of the files written here is
refused as AWS refuses one over 5 GiB; s3rver has no such limit, and no
AbortMultipartUpload or ListMultipartUploads (the tests that need them run
on radosgw alone, and say so)."""
import contextlib
import copy
import json
import os
import re
import signal
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import find_program, fuse_missing, run_cat
from s3fixture import VerifyingProxy, rgw_config_set, through
from test_write import Daemon, read_file

LIMIT = 16 << 20            # radosgw's largest PUT during these tests
BIG = 40 << 20              # bytes of the attribute written: 5 parts of 8 MiB


@pytest.fixture(scope='session')
def copy_prog():
    return find_program(os.path.join('tools', 'tiledbfs-copy'))


@contextlib.contextmanager
def limits(server):
    """radosgw refusing a PUT over LIMIT bytes meanwhile (other servers as
    they are)."""
    if server.name != 'radosgw':
        yield server
        return
    old = rgw_config_set(server, 'rgw_max_put_size', LIMIT)
    try:
        yield server
    finally:
        rgw_config_set(server, 'rgw_max_put_size', old)


@pytest.fixture
def limited(s3_server):
    """s3_server, radosgw refusing a PUT over LIMIT bytes meanwhile."""
    with limits(s3_server):
        yield s3_server


@pytest.fixture
def store_limited(store_server):
    """store_server, radosgw refusing a PUT over LIMIT bytes meanwhile."""
    with limits(store_server):
        yield store_server


class CopyCountingProxy(VerifyingProxy):
    """A VerifyingProxy that counts the UploadPartCopy requests (PUTs with
    x-amz-copy-source-range) in .part_copies, and keeps the (method,
    target) of each request in .targets."""

    def __init__(self, server):
        super().__init__(server)
        self.part_copies = 0
        self.targets = []

    def answer(self, method, target, headers, body):
        if method == 'PUT' and headers.get('x-amz-copy-source-range'):
            with self.lock:
                self.part_copies += 1
        with self.lock:
            self.targets.append((method, target))
        return super().answer(method, target, headers, body)


@pytest.fixture
def proxied(limited, monkeypatch):
    """A VerifyingProxy of the server, AWS_ENDPOINT_URL pointed at it."""
    yield from through(CopyCountingProxy(limited), monkeypatch)


@pytest.fixture
def store_proxied(store_limited, monkeypatch):
    """proxied on every object store (Azure's BlobEndpoint pointed at it)."""
    yield from through(CopyCountingProxy(store_limited), monkeypatch)


def schema(n=BIG):
    """A dense 1-D UINT8 array of n cells, unfiltered, tiles of 1 MiB."""
    return {'schema': {
        'array_type': 'dense', 'tile_order': 'row-major', 'cell_order': 'row-major',
        'capacity': 10000, 'allows_duplicates': False,
        'dims': [{'name': 'x', 'datatype': 'INT64', 'domain': [0, n - 1],
                  'tile_extent': 1 << 20, 'filters': []}],
        'attrs': [{'name': 'v', 'datatype': 'UINT8', 'cell_val_num': 1, 'nullable': False,
                   'filters': []}],
        'current_domain': None, 'coords_filters': [], 'offsets_filters': [],
        'validity_filters': [], 'version': 22}}


def make_array(create_prog, url, tmp_path):
    sj = tmp_path / 'schema.json'
    sj.write_text(json.dumps(schema()))
    r = subprocess.run([create_prog, str(sj), url], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr


def uploads(server, prefix):
    """The keys of the multipart uploads under way under prefix
    (ListMultipartUploads)."""
    status, body = server.client.request('GET', None, params={'uploads': '', 'prefix': prefix})
    assert status == 200, f'ListMultipartUploads: {status} {body[:300]!r}'
    root = ET.fromstring(body)
    ns = root.tag[:root.tag.index('}') + 1] if root.tag.startswith('{') else ''
    return [u.findtext(ns + 'Key') for u in root.findall(ns + 'Upload')]


def need_radosgw(server, what):
    if server.name != 'radosgw':
        pytest.skip(f'SKIPPED on {server.name}: {what} needs AbortMultipartUpload and '
                    'ListMultipartUploads, which s3rver does not have (radosgw runs it)')


def stage_big(mnt, name, data):
    d = os.path.join(mnt, '__staging', name)
    os.mkdir(d)
    with open(os.path.join(d, 'v'), 'wb') as f:
        f.write(data)
    return d


def commit(mnt, name):
    """mv __staging/NAME __fragments/: None, or the error and __error."""
    try:
        os.rename(os.path.join(mnt, '__staging', name), os.path.join(mnt, '__fragments', name))
        return None
    except OSError as e:
        return f'{e}: {read_file(os.path.join(mnt, "__staging", name, "__error"))!r}'


def part_requests(proxy):
    return sum(1 for m in proxy.methods if m == 'POST')


def azure_puts(proxy, comp):
    """The PUTs of Put Block (comp='block') or Put Block List
    (comp='blocklist') that the proxy saw."""
    return [t for m, t in proxy.targets
            if m == 'PUT' and re.search(rf'[?&]comp={comp}(&|$)', t)]


# --------------------------------------------------------------- commits

def test_s3_commit_larger_than_one_put(store_proxied, create_prog, cat_prog, mount, tmp_path):
    """A commit whose fragment file passes the store's largest PUT goes up
    in parts (Create, parts, Complete; on Azure Put Block and one Put Block
    List: each signed and checked by the proxy) and reads back byte for
    byte, through the mount and by another reader; no upload stays under
    way."""
    proxied = store_proxied
    s3 = proxied.s3
    url = s3.url('mp/commit')
    make_array(create_prog, url, tmp_path)
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    data = os.urandom(BIG)
    stage_big(mnt, 'f', data)
    proxied.methods.clear()
    proxied.targets.clear()
    assert commit(mnt, 'f') is None
    if s3.kind == 'azure':
        # the parts of 8 MiB are blocks, committed by one Put Block List
        assert len(azure_puts(proxied, 'block')) >= BIG // (8 << 20), proxied.targets
        assert len(azure_puts(proxied, 'blocklist')) == 1, proxied.targets
    else:
        # Create and Complete are POSTs: one of each
        assert part_requests(proxied) == 2, proxied.methods
        assert proxied.methods.count('PUT') >= BIG // (8 << 20), proxied.methods
    assert read_file(os.path.join(mnt, 'v')) == data
    r = run_cat(cat_prog, url, 'v')
    assert r.returncode == 0 and r.stdout == data, r.stderr[-500:]
    if s3.name == 'radosgw':
        assert uploads(s3, 'mp/') == []
    if s3.kind == 'azure':
        assert s3.client.uncommitted('mp/') == []


def test_s3_single_put_refused_without_parts(limited, create_prog, mount, tmp_path):
    """The store's limit is real: with parts as large as the file
    (s3_part_size=64M), the one PUT is refused, the commit fails with the
    cause in __error, and the staged file is kept for another try."""
    if limited.name != 'radosgw':
        pytest.skip(f'SKIPPED on {limited.name}: it has no largest PUT to pass')
    url = limited.url('mp/refused')
    make_array(create_prog, url, tmp_path)
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}', 's3_part_size=64M'])
    data = os.urandom(BIG)
    d = stage_big(mnt, 'f', data)
    e = commit(mnt, 'f')
    assert e is not None and 'cannot sync' in e, e
    assert read_file(os.path.join(d, 'v')) == data
    assert os.listdir(os.path.join(mnt, '__fragments')) == []


def test_s3_failed_parts_are_aborted(limited, create_prog, mount, tmp_path):
    """Parts larger than the store takes (s3_part_size=32M over radosgw's
    16 MiB): the upload fails, is aborted (nothing under way is left,
    nothing billed), the commit fails, and the staged file is intact; a
    mount with the default parts then commits it."""
    need_radosgw(limited, 'the abort of a failed upload')
    url = limited.url('mp/aborted')
    make_array(create_prog, url, tmp_path)
    staging = tmp_path / 'staging'
    mnt = mount(url, ['rw', f'staging_dir={staging}', 's3_part_size=32M'])
    data = os.urandom(BIG)
    d = stage_big(mnt, 'f', data)
    e = commit(mnt, 'f')
    assert e is not None and 'cannot sync' in e, e
    assert uploads(limited, 'mp/') == []
    assert read_file(os.path.join(d, 'v')) == data
    assert os.listdir(os.path.join(staging, '.tiledbfs-uploads')) == []
    mount.unmount(mnt)
    mnt = mount(url, ['rw', f'staging_dir={staging}'])
    assert commit(mnt, 'f') is None
    assert read_file(os.path.join(mnt, 'v')) == data


class StallingProxy(VerifyingProxy):
    """A VerifyingProxy that holds every UploadPart after the first until
    release(): a commit then waits mid-upload."""

    def __init__(self, server):
        super().__init__(server)
        self.gate = threading.Event()
        self.parts = 0

    def answer(self, method, target, headers, body):
        if method == 'PUT' and 'partNumber=' in target:
            with self.lock:
                self.parts += 1
                first = self.parts == 1
            if not first:
                self.gate.wait(120)
        return super().answer(method, target, headers, body)


def test_s3_killed_upload_aborted_by_next_mount(limited, fs_prog, create_prog, cat_prog,
                                                tmp_path, monkeypatch):
    """SIGKILL while a commit's parts go up: the upload stays under way
    (ListMultipartUploads names it) and the array shows no fragment; the
    next -o rw mount of the same staging_dir aborts it (the list is empty,
    it says so) and the staged folder commits then."""
    need_radosgw(limited, 'the abort of a killed upload')
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    proxy = StallingProxy(limited)
    monkeypatch.setenv('AWS_ENDPOINT_URL', proxy.endpoint)
    try:
        url = limited.url('mp/killed')
        make_array(create_prog, url, tmp_path)
        staging, log = tmp_path / 'staging', tmp_path / 'stderr'
        opts = ['rw', f'staging_dir={staging}']
        d = Daemon(fs_prog, url, str(tmp_path / 'mnt'), opts, str(log))
        data = os.urandom(BIG)
        stage_big(d.mnt, 'f', data)
        def doomed():
            try:    # the daemon is killed under it
                os.rename(os.path.join(d.mnt, '__staging', 'f'),
                          os.path.join(d.mnt, '__fragments', 'f'))
            except OSError:
                pass
        t = threading.Thread(target=doomed, daemon=True)
        t.start()
        deadline = time.monotonic() + 60
        while proxy.parts < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.parts >= 2, 'the commit never reached its second part'
        d.kill()
        proxy.gate.set()
        assert uploads(limited, 'mp/killed/') != []
        assert len(os.listdir(staging / '.tiledbfs-uploads')) == 1
        r = run_cat(cat_prog, url, 'v')
        assert r.returncode == 0 and r.stdout == b'\xff' * BIG   # no fragment: fill values
        d = Daemon(fs_prog, url, str(tmp_path / 'mnt'), opts, str(log))
        try:
            assert uploads(limited, 'mp/killed/') == []
            assert 'aborted 1 multipart upload that a killed daemon left' in read_file(log).decode()
            assert os.listdir(staging / '.tiledbfs-uploads') == []
            assert '.tiledbfs-uploads' not in os.listdir(os.path.join(d.mnt, '__staging'))
            assert commit(d.mnt, 'f') is None
            assert read_file(os.path.join(d.mnt, 'v')) == data
        finally:
            d.stop()
    finally:
        proxy.gate.set()
        proxy.close()


# ----------------------------------------------------------------- copies

def test_s3_copy_larger_than_one_put(proxied, create_prog, copy_prog, cat_prog, mount,
                                     tmp_path):
    """tiledbfs-copy of an array whose fragment file passes the store's
    largest PUT: from a local folder to the bucket, and from the bucket to
    another prefix (with -o s3_part_size=5M: radosgw copies the parts,
    UploadPartCopy, no byte through tiledbfs-copy); each reads back byte
    for byte."""
    s3 = proxied.s3
    local = tmp_path / 'local'
    make_array(create_prog, str(local), tmp_path)
    mnt = mount(str(local), ['rw', f'staging_dir={tmp_path / "staging"}'])
    data = os.urandom(BIG)
    stage_big(mnt, 'f', data)
    assert commit(mnt, 'f') is None
    mount.unmount(mnt)
    up, again = s3.url('mp/copy/1'), s3.url('mp/copy/2')
    for src, dst, opts, parts in ((str(local), up, [], 5), (up, again, ['-o', 's3_part_size=5M'], 8)):
        proxied.methods.clear()
        r = subprocess.run([copy_prog] + opts + [src, dst], capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr
        # the fragment file in parts of 8 MiB, or of 5 MiB as asked;
        # from the bucket, copied there (s3rver has no UploadPartCopy: the
        # bytes come through, in parts all the same)
        assert proxied.methods.count('PUT') >= parts, proxied.methods
        if src == up and s3.name == 'radosgw':
            assert proxied.part_copies >= parts, proxied.part_copies
        r = run_cat(cat_prog, dst, 'v')
        assert r.returncode == 0 and r.stdout == data, (dst, r.stderr[-500:])
    if s3.name == 'radosgw':
        assert uploads(s3, 'mp/copy/') == []


# ---------------------------------------------------------------- options

def test_s3_write_options_refused(fs_prog, store_server, tmp_path):
    """s3_part_size below S3's least part, or s3_retries past its range:
    the mount refuses with a message naming the option (the same for every
    object store)."""
    s3_server = store_server
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    for opt, needle in (('s3_part_size=1M', b's3_part_size=1048576'),
                        ('s3_part_size=6G', b's3_part_size='),
                        ('s3_retries=101', b's3_retries=101'),
                        ('s3_retries=x', b's3_retries=x')):
        r = subprocess.run([fs_prog, '-f', '-o', opt, s3_server.url('nowhere'), str(mnt)],
                           capture_output=True, timeout=60)
        assert r.returncode != 0 and needle in r.stderr, (opt, r.stderr)


def test_s3_retries_option(store_proxied, cat_prog, create_prog, tmp_path):
    """Every first try answered 503: with s3_retries=0 a read fails (EIO),
    with the default it is tried again and succeeds."""
    proxied = store_proxied
    url = proxied.s3.url('mp/retries')
    make_array(create_prog, url, tmp_path)
    proxied.fail_first = True
    r = run_cat(cat_prog, url, '__schema', ['s3_retries=0'])
    assert r.returncode != 0, r.stdout[:200]
    proxied.seen.clear()
    r = run_cat(cat_prog, url, 'v')
    assert r.returncode == 0 and r.stdout == b'\xff' * BIG, r.stderr[-500:]


# ----------------------------------------------------------------- region

class RegionProxy(VerifyingProxy):
    """A VerifyingProxy of a bucket in region `region`: a request signed
    for another region is answered as S3 answers it, 400
    AuthorizationHeaderMalformed naming the bucket's region in
    x-amz-bucket-region (and in the body); .wrong counts them."""

    def __init__(self, server, region):
        there = copy.copy(server)
        there.region = region
        super().__init__(there)
        self.region, self.wrong = region, 0

    def answer(self, method, target, headers, body):
        m = re.search(r'Credential=[^/]+/\d{8}/([^/]+)/', headers.get('Authorization', ''))
        if m and m.group(1) != self.region:
            with self.lock:
                self.wrong += 1
            out = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>'
                   f'AuthorizationHeaderMalformed</Code><Message>the region '
                   f'{m.group(1)!r} is wrong; expecting {self.region!r}</Message><Region>'
                   f'{self.region}</Region></Error>').encode()
            return 400, [('Content-Length', str(len(out))),
                         ('x-amz-bucket-region', self.region)], out
        return super().answer(method, target, headers, body)


def test_s3_bucket_region_learnt(s3_corpus, cat_prog, mount, tmp_path, monkeypatch):
    """No region given: the first requests, signed for us-east-1, are
    answered with the bucket's region and signed again for it; the mount
    keeps it (its later reads are signed for it at once).  A region given
    is kept: the answer is then the error."""
    proxy = RegionProxy(s3_corpus, 'eu-north-1')
    monkeypatch.setenv('AWS_ENDPOINT_URL', proxy.endpoint)
    monkeypatch.delenv('AWS_REGION', raising=False)
    monkeypatch.delenv('AWS_DEFAULT_REGION', raising=False)
    try:
        url = s3_corpus.url('corpus/dense_1d_basic/array')
        mnt = mount(url)
        assert proxy.wrong >= 1
        before = proxy.wrong
        names = os.listdir(mnt)
        for n in names:
            p = os.path.join(mnt, n)
            if os.path.isfile(p):
                read_file(p)
        assert proxy.wrong == before, 'a read after the open was signed for the wrong region'
        r = run_cat(cat_prog, url, '__schema', ['region=us-east-1'])
        assert r.returncode != 0 and b'AuthorizationHeaderMalformed' in r.stderr, r.stderr
    finally:
        proxy.close()
