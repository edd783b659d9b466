"""test_s3_creds.py: where an s3:// source's credentials come from (format/core/io_s3_config.c, io_s3_creds.c), as the AWS SDKs find them: the environment, the profile (static keys, credential_process, role_arn through STS AssumeRole, web_identity_token_file), web identity of the environment, the container endpoint, EC2 instance metadata (IMDSv2); their order; and their renewal during a long read.

Every read goes through a VerifyingProxy that accepts only the temporary
credentials the source handed out (not the server's keys), checks each
signature and x-amz-security-token, and answers ExpiredToken after their
expiry, as S3 does.  The credential endpoints are tests/py/aws_endpoints.py,
on 127.0.0.1."""
import json
import os
import shlex
import time

import pytest

from aws_endpoints import ContainerServer, ImdsServer, Issuer, StsServer
from conftest import get_case, make_sample, one_line_error, run, run_cat
from s3fixture import AWS_ENV_KEYS, VerifyingProxy, corpus_url
from test_splice import read_all

CASE = 'dense_1d_basic'
ROLE = 'arn:aws:iam::123456789012:role/reader'
BASE_KEY, BASE_SECRET = 'AKIDBASEEXAMPLE', 'base/secret+EXAMPLE'
WEB_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl'
CONTAINER_TOKEN = 'container-auth-token-EXAMPLE'


class World:
    """The proxy in front of an S3 server, the credential endpoints a test
    starts, and the environment of the programs it runs: no AWS_* variable
    but the region and AWS_ENDPOINT_URL_S3 (the proxy), HOME an empty
    folder, the instance metadata disabled."""

    def __init__(self, s3, tmp_path, cat_prog):
        self.s3 = s3
        self.cat_prog = cat_prog
        self.tmp = tmp_path
        self.proxy = VerifyingProxy(s3, accept_server_keys=False)
        self.issuer = Issuer(self.proxy)
        self.home = tmp_path / 'home'
        (self.home / '.aws').mkdir(parents=True)
        self.servers = []
        self.env = {k: v for k, v in os.environ.items() if k not in AWS_ENV_KEYS}
        self.env.update(HOME=str(self.home), AWS_REGION=s3.region,
                        AWS_ENDPOINT_URL_S3=self.proxy.endpoint,
                        AWS_EC2_METADATA_DISABLED='true')

    def start(self, server):
        self.servers.append(server)
        return server

    def sts(self):
        s = self.start(StsServer(self.issuer, users={BASE_KEY: BASE_SECRET},
                                 roles={ROLE: None, ROLE + '-ext': 'ext-42'},
                                 web_tokens={WEB_TOKEN}, region=self.s3.region))
        self.env['AWS_ENDPOINT_URL_STS'] = s.url
        return s

    def container(self):
        s = self.start(ContainerServer(self.issuer, CONTAINER_TOKEN))
        self.env['AWS_CONTAINER_CREDENTIALS_FULL_URI'] = s.url
        self.env['AWS_CONTAINER_AUTHORIZATION_TOKEN'] = CONTAINER_TOKEN
        return s

    def imds(self):
        s = self.start(ImdsServer(self.issuer))
        self.env['AWS_EC2_METADATA_SERVICE_ENDPOINT'] = s.url
        self.env.pop('AWS_EC2_METADATA_DISABLED')
        return s

    def web_identity(self):
        tok = self.tmp / 'web-token'
        tok.write_text(WEB_TOKEN + '\n')
        self.env.update(AWS_WEB_IDENTITY_TOKEN_FILE=str(tok), AWS_ROLE_ARN=ROLE,
                        AWS_ROLE_SESSION_NAME='web-session')
        return tok

    def config(self, text):
        (self.home / '.aws' / 'config').write_text(text)

    def credentials(self, text):
        (self.home / '.aws' / 'credentials').write_text(text)

    def cat(self, path=None, case=CASE, env=None):
        """tiledbfs-cat of a corpus case's file over the proxy."""
        c = get_case(case)
        p = path if path is not None else c.expected_paths[0]
        return run([self.cat_prog, corpus_url(self.s3, case), p], dict(self.env, **(env or {})))

    def reads_case(self, case=CASE):
        """Every expected file of the case, byte for byte, through the
        proxy; every request signed with credentials that were issued."""
        c = get_case(case)
        for p in c.expected_paths:
            r = self.cat(p, case)
            assert r.returncode == 0, r.stderr.decode(errors='replace')
            assert r.stdout == c.expected(p), p
        signers = {k for _, k, _, _ in self.proxy.signed}
        assert signers and signers <= set(self.issuer.ids()), (signers, self.issuer.ids())
        assert self.proxy.unsigned == 0 and self.proxy.expired == 0

    def into(self, monkeypatch):
        """os.environ as self.env (for mounts, which take the test's)."""
        for k in list(os.environ):
            if k.startswith('AWS_') and k not in self.env:
                monkeypatch.delenv(k)
        for k, v in self.env.items():
            monkeypatch.setenv(k, v)

    def close(self):
        for s in self.servers:
            s.close()
        self.proxy.close()


@pytest.fixture
def world(s3_corpus, cat_prog, tmp_path):
    w = World(s3_corpus, tmp_path, cat_prog)
    try:
        yield w
    finally:
        w.close()


def process_script(world, name='proc'):
    """A credential_process command printing fresh credentials of the
    issuer (from a file the test writes) and counting its runs."""
    creds = world.tmp / f'{name}.json'
    count = world.tmp / f'{name}.count'

    def refresh(lifetime=None, expiration=True):
        c = world.issuer.issue(lifetime)
        doc = {'Version': 1, 'AccessKeyId': c.key_id, 'SecretAccessKey': c.secret,
               'SessionToken': c.token}
        if expiration:
            doc['Expiration'] = c.expiration
        creds.write_text(json.dumps(doc))
        return c
    refresh()
    cmd = f'sh -c {shlex.quote(f"echo run >> {count}; cat {creds}")}'
    return cmd, refresh, lambda: (count.read_text().count('run') if count.exists() else 0)


def later_sources(world):
    """Every source after the profile configured too: web identity (its
    STS), the container, the instance metadata; @return their servers
    (none may be asked)."""
    sts = world.sts()
    world.web_identity()
    return sts, world.container(), world.imds()


def not_asked(*servers):
    for s in servers:
        assert s.asked() == [], (type(s).__name__, s.asked())


# ------------------------------------------------------------ each source

def test_environment_keys_come_first(world):
    """AWS_ACCESS_KEY_ID beats every other source: none is asked."""
    world.proxy.accept_server_keys = True
    cmd, _, runs = process_script(world)
    world.credentials(f'[default]\ncredential_process = {cmd}\n')
    sts, container, imds = later_sources(world)
    world.env.update(AWS_ACCESS_KEY_ID=world.s3.access_key,
                     AWS_SECRET_ACCESS_KEY=world.s3.secret_key)
    case = get_case(CASE)
    r = world.cat()
    assert r.returncode == 0, r.stderr
    assert r.stdout == case.expected(case.expected_paths[0])
    assert {k for _, k, _, _ in world.proxy.signed} == {world.s3.access_key}
    assert runs() == 0
    not_asked(sts, container, imds)


def test_credential_process(world):
    """A profile's credential_process: its JSON's keys sign the requests;
    the profile beats web identity, the container and the metadata."""
    cmd, _, runs = process_script(world)
    world.config(f'[profile dev]\nregion = {world.s3.region}\ncredential_process = {cmd}\n')
    world.env['AWS_PROFILE'] = 'dev'
    later = later_sources(world)
    world.reads_case()
    assert runs() == len(get_case(CASE).expected_paths)    # one run a program
    not_asked(*later)


def test_credential_process_failures(world, tmp_path):
    """A process that fails, or prints no Version 1 JSON: a one-line
    error naming the profile's credential_process, without secrets."""
    world.credentials('[default]\ncredential_process = sh -c "exit 3"\n')
    err = one_line_error(world.cat(), "profile default's credential_process",
                         'exited with status 3')
    (tmp_path / 'v2.json').write_text('{"Version": 2, "AccessKeyId": "A", '
                                      '"SecretAccessKey": "NOT-TO-BE-SEEN"}')
    world.credentials(f'[default]\ncredential_process = cat {tmp_path / "v2.json"}\n')
    err = one_line_error(world.cat(), 'credential_process', '"Version": 1')
    assert 'NOT-TO-BE-SEEN' not in err


def test_assume_role_with_source_profile(world):
    """role_arn + source_profile: AssumeRole signed (service sts) with the
    source profile's keys, its role_session_name, external_id and
    duration_seconds sent; a role whose source is another role is assumed
    with the first role's temporary credentials."""
    sts = world.sts()
    world.credentials(f'[base]\naws_access_key_id = {BASE_KEY}\n'
                      f'aws_secret_access_key = {BASE_SECRET}\n')
    world.config(f'[profile dev]\nrole_arn = {ROLE}-ext\nsource_profile = base\n'
                 'role_session_name = tiledbfs-test\nexternal_id = ext-42\n'
                 'duration_seconds = 900\n'
                 f'[profile chained]\nrole_arn = {ROLE}\nsource_profile = dev\n')
    world.env['AWS_PROFILE'] = 'dev'
    container, imds = world.container(), world.imds()
    world.reads_case()
    calls = sts.asked()
    assert calls and all(c.form['Action'] == 'AssumeRole' for c in calls)
    f = calls[0].form
    assert (f['RoleArn'], f['RoleSessionName'], f['ExternalId'], f['DurationSeconds']) == \
        (ROLE + '-ext', 'tiledbfs-test', 'ext-42', '900')
    assert 'x-amz-security-token' not in calls[0].headers    # long-term keys
    assert sts.checked == len(calls)
    not_asked(container, imds)

    n = len(calls)
    world.env['AWS_PROFILE'] = 'chained'
    world.reads_case()
    calls = sts.asked()[n:]
    per_run = len(calls) // len(get_case(CASE).expected_paths)
    assert per_run == 2 and calls[1].form['RoleArn'] == ROLE
    assert calls[1].headers.get('X-Amz-Security-Token')       # signed by the first role

    world.config(f'[profile dev]\nrole_arn = {ROLE}-ext\nsource_profile = base\n'
                 'external_id = wrong\n')
    world.env['AWS_PROFILE'] = 'dev'
    one_line_error(world.cat(), "profile dev's role_arn", 'HTTP 403 AccessDenied')


def test_web_identity_in_profile(world, tmp_path):
    """role_arn + web_identity_token_file in a profile:
    AssumeRoleWithWebIdentity, unsigned, with the file's token."""
    sts = world.sts()
    tok = tmp_path / 'profile-token'
    tok.write_text(WEB_TOKEN)
    world.config(f'[default]\nrole_arn = {ROLE}\nweb_identity_token_file = {tok}\n')
    world.reads_case()
    calls = sts.asked()
    assert calls and all(c.form['Action'] == 'AssumeRoleWithWebIdentity' for c in calls)
    assert calls[0].form['WebIdentityToken'] == WEB_TOKEN
    assert 'Authorization' not in calls[0].headers


def test_web_identity_environment(world):
    """AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN + AWS_ROLE_SESSION_NAME
    beat the container and the metadata; a token STS refuses is an
    error."""
    sts = world.sts()
    tok = world.web_identity()
    container, imds = world.container(), world.imds()
    world.reads_case()
    calls = sts.asked()
    assert calls and all(c.form['Action'] == 'AssumeRoleWithWebIdentity' for c in calls)
    assert calls[0].form['RoleSessionName'] == 'web-session'
    assert calls[0].form['RoleArn'] == ROLE
    not_asked(container, imds)
    tok.write_text('not-a-token')
    err = one_line_error(world.cat(), 'AWS_WEB_IDENTITY_TOKEN_FILE', 'InvalidIdentityToken')
    assert 'not-a-token' not in err


def test_container_endpoint(world, tmp_path):
    """AWS_CONTAINER_CREDENTIALS_FULL_URI with the token of
    AWS_CONTAINER_AUTHORIZATION_TOKEN, then of _TOKEN_FILE (which comes
    first); it beats the metadata; a wrong token or plain http:// to
    another machine is an error."""
    container = world.container()
    imds = world.imds()
    world.reads_case()
    assert all(c.headers['Authorization'] == CONTAINER_TOKEN for c in container.asked())
    not_asked(imds)
    tf = tmp_path / 'token'
    tf.write_text(CONTAINER_TOKEN + '\n')
    world.env.update(AWS_CONTAINER_AUTHORIZATION_TOKEN='wrong',
                     AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=str(tf))
    world.reads_case()
    world.env.pop('AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE')
    err = one_line_error(world.cat(), 'AWS_CONTAINER_CREDENTIALS_FULL_URI', 'HTTP 401')
    assert CONTAINER_TOKEN not in err
    n = len(container.asked())
    one_line_error(world.cat(env={'AWS_CONTAINER_CREDENTIALS_FULL_URI':
                                  'http://192.0.2.1/creds'}), 'plain http://')
    assert len(container.asked()) == n


def test_instance_metadata_v2(world):
    """IMDSv2: a session token first (PUT with its TTL), then the role's
    name and its credentials with the token; the server refuses requests
    without one (IMDSv1)."""
    imds = world.imds()
    world.reads_case()
    calls = imds.asked()
    assert len(calls) % 3 == 0 and calls
    for put, role, creds in zip(calls[::3], calls[1::3], calls[2::3]):
        assert (put.method, put.path) == ('PUT', '/latest/api/token')
        assert put.headers['X-aws-ec2-metadata-token-ttl-seconds'] == '21600'
        assert (role.method, role.path) == ('GET', ImdsServer.CREDS)
        assert (creds.method, creds.path) == ('GET', ImdsServer.CREDS + 'reader')
        assert role.headers['X-aws-ec2-metadata-token'] == creds.headers['X-aws-ec2-metadata-token']
        assert role.headers['X-aws-ec2-metadata-token']


def test_instance_metadata_disabled(world):
    """AWS_EC2_METADATA_DISABLED=true: the metadata is not asked, and with
    no credentials at all the requests go unsigned (which this proxy, as
    a private bucket, refuses)."""
    imds = world.imds()
    world.env['AWS_EC2_METADATA_DISABLED'] = 'true'
    one_line_error(world.cat(), 'HTTP 403')
    not_asked(imds)
    assert world.proxy.unsigned > 0 and not world.proxy.signed


def test_instance_metadata_absent(world):
    """Nothing answering at the metadata endpoint is no error: unsigned
    requests, as today for a public bucket."""
    world.env.pop('AWS_EC2_METADATA_DISABLED')
    world.env['AWS_EC2_METADATA_SERVICE_ENDPOINT'] = 'http://127.0.0.1:1'
    t0 = time.monotonic()
    one_line_error(world.cat(), 'HTTP 403')
    assert time.monotonic() - t0 < 10
    assert world.proxy.unsigned > 0 and not world.proxy.signed


# ------------------------------------------------------------------ renewal

def test_renewal_during_a_long_read(world, mount, cat_prog, tmp_path, monkeypatch):
    """Credentials valid 4 s, a mount reading an 8 MiB attribute slowly
    for about 12 s: they are renewed before they expire (the endpoint is
    asked again, several key ids sign), every request is signed by
    credentials valid when it came (no ExpiredToken), and the bytes are
    those of the local array."""
    arr = make_sample(tmp_path, shape='1024x1024', tile='128x128')
    prefix = f'creds/{tmp_path.name}/sample'
    world.s3.upload(arr, prefix)
    local = run_cat(cat_prog, arr, 'temperature')
    assert local.returncode == 0 and len(local.stdout) == 8 << 20
    world.issuer.lifetime = 4
    container = world.container()
    world.into(monkeypatch)
    mnt = mount(world.s3.url(prefix), ['s3_readahead=1M', 'cache_size=1M', 'threads=1'])
    t0 = time.time()
    got = read_all(os.path.join(mnt, 'temperature'), 256 << 10, 0.35)
    assert got == local.stdout
    assert world.proxy.expired == 0 and world.proxy.unsigned == 0
    signed = world.proxy.signed
    first = world.issuer.issued[0]
    late = [s for s in signed if s[0] > first.expiry]
    assert time.time() - t0 > 2 * world.issuer.lifetime, 'the read was not long'
    assert late, 'no request after the first credentials expired'
    assert all(k != first.key_id for _, k, _, _ in late)
    assert len(container.asked()) >= 3, container.asked()
    assert len({k for _, k, _, _ in signed}) >= 3


def test_expired_token_answer_renews_and_retries(world, mount, cat_prog, tmp_path, monkeypatch):
    """Credentials that S3 refuses as expired before their stated
    Expiration (400 ExpiredToken): the refused requests start one renewal
    and are tried once more with the new credentials, and the reads
    succeed."""
    arr = make_sample(tmp_path, shape='512x512', tile='128x128')
    prefix = f'creds/{tmp_path.name}/sample'
    world.s3.upload(arr, prefix)
    local = run_cat(cat_prog, arr, 'count')
    assert local.returncode == 0 and len(local.stdout) == 1 << 20
    container = world.container()
    world.into(monkeypatch)
    mnt = mount(world.s3.url(prefix), ['s3_readahead=1M'])
    with open(os.path.join(mnt, 'temperature'), 'rb') as f:
        assert len(f.read(4096)) == 4096
    assert len(container.asked()) == 1
    # S3 now refuses the first credentials (their Expiration is an hour
    # away): the next requests are answered ExpiredToken
    (first,) = world.issuer.issued
    with world.proxy.lock:
        world.proxy.temporary[first.key_id] = (first.secret, first.token, time.time())
    with open(os.path.join(mnt, 'count'), 'rb') as f:
        assert f.read() == local.stdout
    assert world.proxy.expired >= 1
    assert len(container.asked()) == 2
    assert world.proxy.signed[-1][1] == world.issuer.issued[1].key_id
