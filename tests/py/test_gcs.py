"""test_gcs.py: gs:// and gcs:// sources (Google Cloud Storage through its
XML API, which speaks S3's protocol: format/objstore/proto_s3.c) against
the local S3 servers of s3fixture.py, named by -o endpoint= as a user
names storage.googleapis.com's stand-in: corpus files byte for byte through
tiledbfs-cat, a FUSE mount, tiledbfs-copy both ways, and that S3's
AWS_ENDPOINT_URL and AWS_REGION are not Google's."""
import os
import subprocess

import pytest

from conftest import CORPUS, BUILD, case_options, get_case, run_cat

CASES = ['dense_var_nullable', 'sparse_string_dim', 'filter_chains']


def gs_url(server, key, scheme='gs'):
    return f'{scheme}://{server.bucket}/{key}'


def endpoint_opts(server, opts=()):
    """The options of a gs:// source on the local server: its endpoint, and
    nothing else from S3 (no AWS_ENDPOINT_URL, no AWS_REGION)."""
    return [f'endpoint={server.endpoint}', *opts]


@pytest.fixture
def gcs_corpus(s3_corpus, monkeypatch):
    """s3_corpus with only the HMAC keys in the environment (as a Cloud
    Storage user has them): AWS_ENDPOINT_URL and AWS_REGION removed."""
    monkeypatch.delenv('AWS_ENDPOINT_URL', raising=False)
    monkeypatch.delenv('AWS_REGION', raising=False)
    return s3_corpus


@pytest.mark.parametrize('name', CASES)
@pytest.mark.parametrize('scheme', ['gs', 'gcs'])
def test_gcs_cat_matches_expected(name, scheme, cat_prog, gcs_corpus, tmp_path):
    case = get_case(name)
    url = gs_url(gcs_corpus, f'corpus/{name}/array', scheme)
    opts = endpoint_opts(gcs_corpus, case_options(case, tmp_path))
    for path in case.expected_paths:
        proc = run_cat(cat_prog, url, path, opts)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == case.expected(path), f'{name}/{path} differs over {url}'


def test_gcs_mount_reads_expected(gcs_corpus, mount, tmp_path):
    case = get_case('filter_chains')
    mnt = mount(gs_url(gcs_corpus, 'corpus/filter_chains/array'),
                endpoint_opts(gcs_corpus, case_options(case, tmp_path)))
    for path in case.expected_paths:
        with open(os.path.join(mnt, path), 'rb') as f:
            assert f.read() == case.expected(path), path


def test_gcs_copy_both_ways(gcs_corpus, tmp_path):
    src = os.path.join(CORPUS, 'sparse_delete', 'array')
    copy = os.path.join(BUILD, 'tools', 'tiledbfs-copy')
    url = gs_url(gcs_corpus, f'gcs-copy/{tmp_path.name}')
    opt = ['-o', ','.join(endpoint_opts(gcs_corpus))]
    r = subprocess.run([copy, *opt, src, url], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    back = tmp_path / 'back'
    r = subprocess.run([copy, *opt, url, str(back)], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for d, _, files in os.walk(src):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), src)
            with open(os.path.join(src, rel), 'rb') as a, open(back / rel, 'rb') as b:
                assert a.read() == b.read(), rel
    keys = gcs_corpus.client.keys(f'gcs-copy/{tmp_path.name}/')
    assert len(keys) == sum(len(fs) for _, _, fs in os.walk(src))


def test_gcs_not_aws_endpoint(gcs_corpus, cat_prog, monkeypatch):
    """AWS_ENDPOINT_URL names S3's server, not Google's: a gs:// source
    without -o endpoint= goes to storage.googleapis.com (here, unreachable
    or refusing the local keys), never to the local server."""
    monkeypatch.setenv('AWS_ENDPOINT_URL', gcs_corpus.endpoint)
    url = gs_url(gcs_corpus, 'corpus/filter_chains/array')
    proc = run_cat(cat_prog, url, '__array.json', ['s3_timeout=3', 's3_retries=0'])
    assert proc.returncode != 0
    assert b'gs://' in proc.stderr, proc.stderr
    proc = run_cat(cat_prog, url, '__array.json', endpoint_opts(gcs_corpus))
    assert proc.returncode == 0, proc.stderr


def test_gcs_copy_inside_refused(gcs_corpus, tmp_path):
    """gs:// and gcs:// name one store: a destination under the source in
    the other spelling is refused before anything is written."""
    copy = os.path.join(BUILD, 'tools', 'tiledbfs-copy')
    src = gs_url(gcs_corpus, 'corpus/filter_chains/array')
    dst = gs_url(gcs_corpus, f'corpus/filter_chains/array/{tmp_path.name}', 'gcs')
    r = subprocess.run([copy, '-o', ','.join(endpoint_opts(gcs_corpus)), src, dst],
                       capture_output=True, timeout=60)
    assert r.returncode != 0 and b'the destination is inside the source' in r.stderr, r.stderr
    assert not gcs_corpus.client.keys(f'corpus/filter_chains/array/{tmp_path.name}/')
