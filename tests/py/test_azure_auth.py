"""test_azure_auth.py: where and as whom an azure:// source connects
(format/azure/config.c, format/objstore/proto_azure.c), end to end on
Azurite: the account and its key from AZURE_STORAGE_ACCOUNT and
AZURE_STORAGE_KEY, a connection string in -o credentials_file=, -o
account= and -o endpoint=, a SAS token (its permissions enforced: a read
token cannot write), anonymous reads of a public container, and the
errors of a wrong key, no account and an unreadable file."""
import base64
import datetime
import hashlib
import hmac
import os
import subprocess
import urllib.parse

import pytest

import azfixture
from conftest import BUILD, CORPUS, STORE_ENV_KEYS, get_case, run_cat

CASE = 'filter_chains'
PREFIX = f'auth/{CASE}/array'
PUBLIC = 'public-arrays'


@pytest.fixture
def azurite(s3_servers, monkeypatch):
    """Azurite with CASE under PREFIX of its container and of a container
    that allows anonymous reads; no AWS_* or AZURE_* variable set."""
    server = s3_servers.get('azurite')
    for k in STORE_ENV_KEYS:
        monkeypatch.delenv(k, raising=False)
    src = os.path.join(CORPUS, CASE, 'array')
    if not server.client.keys(PREFIX + '/'):
        server.upload(src, PREFIX)
        status, body = server.client.request(
            'PUT', None, params={'restype': 'container'},
            headers={'x-ms-blob-public-access': 'container'}, container=PUBLIC)
        assert status in (201, 409), body
        public = azfixture.AzureClient(server.host, server.port, container=PUBLIC)
        for d, _, files in os.walk(src):
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), src)
                with open(os.path.join(d, f), 'rb') as fh:
                    public.put(f'{PREFIX}/{rel}', fh.read())
    return server


def account_sas(server, permissions):
    """An account SAS of the Blob service, valid for an hour, as
    Microsoft's "Create an account SAS" documents it (version 2021-08-06:
    the encryption scope's empty line included)."""
    expiry = (datetime.datetime.now(datetime.timezone.utc) +
              datetime.timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%SZ')
    f = {'sv': '2021-08-06', 'ss': 'b', 'srt': 'sco', 'sp': permissions, 'se': expiry,
         'spr': 'https,http'}
    sts = '\n'.join([server.account, f['sp'], f['ss'], f['srt'], '', f['se'], '', f['spr'],
                     f['sv'], '']) + '\n'
    f['sig'] = base64.b64encode(hmac.new(base64.b64decode(server.key), sts.encode(),
                                         hashlib.sha256).digest()).decode()
    return urllib.parse.urlencode(f)


def reads_case(cat_prog, url, opts=()):
    """Every expected file of CASE read through tiledbfs-cat at url."""
    case = get_case(CASE)
    for path in case.expected_paths:
        proc = run_cat(cat_prog, url, path, list(opts))
        assert proc.returncode == 0, (path, proc.stderr)
        assert proc.stdout == case.expected(path), f'{path} differs over {url}'


def test_azure_account_and_key(azurite, cat_prog, monkeypatch):
    monkeypatch.setenv('AZURE_STORAGE_ACCOUNT', azurite.account)
    monkeypatch.setenv('AZURE_STORAGE_KEY', azurite.key)
    reads_case(cat_prog, azurite.url(PREFIX), [f'endpoint={azurite.endpoint}'])


def test_azure_credentials_file(azurite, cat_prog, tmp_path):
    conn = tmp_path / 'account.conn'
    # one Key=Value a line, as the README allows
    conn.write_text(azurite.connection_string().replace(';', '\n'))
    reads_case(cat_prog, azurite.url(PREFIX), [f'credentials_file={conn}'])
    missing = tmp_path / 'missing.conn'
    proc = run_cat(cat_prog, azurite.url(PREFIX), '__array.json',
                   [f'credentials_file={missing}'])
    assert proc.returncode != 0 and str(missing).encode() in proc.stderr, proc.stderr


def test_azure_account_option(azurite, cat_prog, monkeypatch):
    """-o account= names the account whose AZURE_STORAGE_KEY signs."""
    monkeypatch.setenv('AZURE_STORAGE_KEY', azurite.key)
    reads_case(cat_prog, azurite.url(PREFIX),
               [f'account={azurite.account}', f'endpoint={azurite.endpoint}'])


def test_azure_sas_token(azurite, cat_prog, monkeypatch, tmp_path):
    """A read-and-list SAS token reads; it cannot write, and the refused
    copy leaves nothing."""
    monkeypatch.setenv('AZURE_STORAGE_ACCOUNT', azurite.account)
    monkeypatch.setenv('AZURE_STORAGE_SAS_TOKEN', '?' + account_sas(azurite, 'rl'))
    opts = [f'endpoint={azurite.endpoint}']
    reads_case(cat_prog, azurite.url(PREFIX), opts)
    dst = f'auth-sas/{tmp_path.name}'
    copy = os.path.join(BUILD, 'tools', 'tiledbfs-copy')
    r = subprocess.run([copy, '-o', ','.join(opts), os.path.join(CORPUS, CASE, 'array'),
                        azurite.url(dst)], capture_output=True, timeout=120)
    assert r.returncode != 0, r.stderr
    assert not azurite.client.keys(dst + '/')


def test_azure_anonymous_public_container(azurite, cat_prog, monkeypatch):
    """No key and no token: a public container reads, a private one is
    refused with the service's answer named."""
    monkeypatch.setenv('AZURE_STORAGE_ACCOUNT', azurite.account)
    opts = [f'endpoint={azurite.endpoint}']
    reads_case(cat_prog, f'azure://{PUBLIC}/{PREFIX}', opts)
    proc = run_cat(cat_prog, azurite.url(PREFIX), '__array.json', opts)
    assert proc.returncode != 0
    assert b'azure://' in proc.stderr and b'HTTP 403' in proc.stderr, proc.stderr


def test_azure_refusals(azurite, cat_prog, monkeypatch):
    """A wrong key names the service's refusal; no account anywhere is an
    error naming where one is looked for."""
    url = azurite.url(PREFIX)
    monkeypatch.setenv('AZURE_STORAGE_CONNECTION_STRING',
                       azurite.connection_string(key=azurite.wrong_key()))
    proc = run_cat(cat_prog, url, '__array.json')
    assert proc.returncode != 0
    assert azurite.bad_signature.encode() in proc.stderr, proc.stderr
    assert azurite.key.encode() not in proc.stderr
    monkeypatch.delenv('AZURE_STORAGE_CONNECTION_STRING')
    proc = run_cat(cat_prog, url, '__array.json')
    assert proc.returncode != 0 and b'AZURE_STORAGE_ACCOUNT' in proc.stderr, proc.stderr
