"""test_s3_options.py: what a new user of object storage needs without the environment: -o endpoint=, region=, profile=, credentials_file=, config_file= (for tiledbfs, tiledbfs-cat, tiledbfs-create and tiledbfs-copy, before the AWS_* variables and ~/.aws; endpoint=, account= and credentials_file= before the AZURE_STORAGE_* ones), tiledbfs-create of an s3:// or azure:// array, and tiledbfs-copy of a local array into the bucket (container) and back, and between an S3 bucket and an Azure container.  What is not S3's alone runs on every store of conftest.py's store_server."""
import hashlib
import json
import os

import pytest

from conftest import (STORE_ENV_KEYS, case_options, find_program, get_case, o_args, ok,
                      one_line_error, point_at, run)
from s3fixture import SERVERS, VerifyingProxy
from test_write import commit, read_file, stage

DEAD = 'http://127.0.0.1:1'   # an endpoint where nothing answers


@pytest.fixture(scope='session')
def copy_prog():
    return find_program(os.path.join('tools', 'tiledbfs-copy'))


def bare_env(tmp_path, **more):
    """The environment without any AWS_* or AZURE_* variable, HOME an empty
    folder: an fstab line's (nothing but the options says where and as
    whom)."""
    home = tmp_path / 'home'
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in STORE_ENV_KEYS}
    env.update(HOME=str(home), **more)
    return env


def credentials(path, server, profile='default', other='nobody'):
    """A credentials file: `profile` with the server's keys, another
    profile with keys it does not know.  For Azurite: a connection string
    naming the account and its key, no endpoint (the options say where)."""
    if server.kind == 'azure':
        path.write_text(f'DefaultEndpointsProtocol=http;AccountName={server.account};\n'
                        f'AccountKey={server.key};\n')
        return str(path)
    path.write_text(f'[{profile}]\naws_access_key_id = {server.access_key}\n'
                    f'aws_secret_access_key = {server.secret_key}\n'
                    f'[{other}]\naws_access_key_id = {other}\n'
                    f'aws_secret_access_key = {other}\n')
    return str(path)


def tree_digests(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = hashlib.sha256(read_file(p)).hexdigest()
    return out


def upload_dense(server, copy_prog, tmp_path):
    """dense_1d_basic copied into the bucket by tiledbfs-copy: (case, url)."""
    case = get_case('dense_1d_basic')
    url = server.url(f'opts/{tmp_path.name}/dense')
    ok(run([copy_prog, case.array, url]))
    return case, url


@pytest.fixture
def uploaded(s3_server, copy_prog, tmp_path):
    return upload_dense(s3_server, copy_prog, tmp_path)


@pytest.fixture
def store_uploaded(store_server, copy_prog, tmp_path):
    """upload_dense on every object store."""
    return upload_dense(store_server, copy_prog, tmp_path)


# ------------------------------------------------------------- the options

def test_endpoint_option(store_server, store_uploaded, cat_prog, tmp_path):
    """endpoint= comes before AWS_ENDPOINT_URL (the connection string's
    BlobEndpoint), pointed at nothing."""
    s3_server = store_server
    case, url = store_uploaded
    env = dict(os.environ, **s3_server.endpoint_env(DEAD))
    r = run([cat_prog, url, 'a'], env)
    one_line_error(r, 'connect')
    assert ok(run([cat_prog, '-o', f'endpoint={s3_server.endpoint}', url, 'a'], env)) == \
        case.expected('a')


def test_profile_option(s3_server, uploaded, cat_prog, tmp_path):
    """profile= picks a profile of ~/.aws/credentials, before AWS_PROFILE
    and before the keys of the environment (which the server refuses)."""
    case, url = uploaded
    home = tmp_path / 'home'
    (home / '.aws').mkdir(parents=True)
    credentials(home / '.aws' / 'credentials', s3_server, profile='good', other='bad')
    env = dict(os.environ, HOME=str(home), AWS_PROFILE='bad', AWS_ACCESS_KEY_ID='WRONG')
    one_line_error(run([cat_prog, url, 'a'], env), 'HTTP 403')
    assert ok(run([cat_prog, '-o', 'profile=good', url, 'a'], env)) == case.expected('a')
    one_line_error(run([cat_prog, '-o', 'profile=bad', url, 'a'], env), 'HTTP 403')
    one_line_error(run([cat_prog, '-o', 'profile=none', url, 'a'], env),
                   'profile none: in neither', str(home / '.aws' / 'credentials'))


def test_credentials_file_option(store_server, store_uploaded, cat_prog, tmp_path):
    """credentials_file= is read instead of ~/.aws/credentials (for Azure: a
    connection string), and its keys come before the environment's; a
    missing one is an error."""
    s3_server = store_server
    case, url = store_uploaded
    creds = credentials(tmp_path / 'creds', s3_server)
    if s3_server.kind == 'azure':
        env = dict(os.environ, **s3_server.env(wrong_key=True))
        # the file says where too: the environment's connection string is
        # not read when one is given
        with open(creds, 'a') as f:
            f.write(f'BlobEndpoint={s3_server.endpoint}\n')
    else:
        env = dict(os.environ, AWS_ACCESS_KEY_ID='WRONG', AWS_SECRET_ACCESS_KEY='WRONG')
    one_line_error(run([cat_prog, url, 'a'], env), 'HTTP 403')
    assert ok(run([cat_prog, '-o', f'credentials_file={creds}', url, 'a'], env)) == \
        case.expected('a')
    one_line_error(run([cat_prog, '-o', f'credentials_file={tmp_path}/none', url, 'a'], env),
                   'credentials_file=', 'none')


def test_region_option(s3_server, uploaded, cat_prog, tmp_path):
    """region= signs for that region, before AWS_REGION (a proxy checks the
    signature, as S3 does)."""
    case, url = uploaded
    proxy = VerifyingProxy(s3_server)
    try:
        env = dict(os.environ, AWS_ENDPOINT_URL=proxy.endpoint, AWS_REGION='eu-north-9')
        one_line_error(run([cat_prog, url, 'a'], env), 'HTTP 403')
        assert ok(run([cat_prog, '-o', f'region={s3_server.region}', url, 'a'], env)) == \
            case.expected('a')
        assert proxy.checked > 0
    finally:
        proxy.close()


def test_config_file_option(s3_server, uploaded, cat_prog, tmp_path):
    """config_file= is read instead of ~/.aws/config (its endpoint_url and
    region here); a missing one is an error."""
    case, url = uploaded
    conf = tmp_path / 'conf'
    conf.write_text(f'[default]\nendpoint_url = {s3_server.endpoint}\n'
                    f'region = {s3_server.region}\n')
    env = dict(os.environ)
    env.pop('AWS_ENDPOINT_URL')
    env.pop('AWS_REGION')
    env['HOME'] = str(tmp_path)
    assert ok(run([cat_prog, '-o', f'config_file={conf}', url, 'a'], env)) == case.expected('a')
    one_line_error(run([cat_prog, '-o', f'config_file={tmp_path}/none', url, 'a'], env),
                   'config_file=')


def test_fstab_mount_needs_no_environment(store_server, store_uploaded, mount, tmp_path,
                                          monkeypatch):
    """A mount whose options alone say where and as whom (as from
    /etc/fstab, with no AWS_* or AZURE_* variable and no ~/.aws) reads the
    array."""
    s3_server = store_server
    case, url = store_uploaded
    creds = credentials(tmp_path / 'creds', s3_server)
    for k, v in bare_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    for k in STORE_ENV_KEYS:
        monkeypatch.delenv(k, raising=False)
    region = [] if s3_server.kind == 'azure' else [f'region={s3_server.region}']
    mnt = mount(url, [f'endpoint={s3_server.endpoint}'] + region +
                [f'credentials_file={creds}'])
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')
    assert read_file(os.path.join(mnt, 'b')) == case.expected('b')


# ------------------------------------------------------- tiledbfs-create

def test_create_on_s3(store_server, create_prog, cat_prog, mount, tmp_path):
    """tiledbfs-create SCHEMA s3://BUCKET/ARRAY (azure://CONTAINER/ARRAY)
    makes the array in the bucket (object stores have no folders); a
    writable mount then commits into it. The options alone say where (no
    environment); a second create there is refused, a bucket that does not
    exist is an error."""
    s3_server = store_server
    case = get_case('dense_1d_basic')
    schema = tmp_path / 'schema.json'
    schema.write_bytes(ok(run([cat_prog, case.array, '__array.json'])))
    creds = credentials(tmp_path / 'creds', s3_server)
    opts = [f'endpoint={s3_server.endpoint}', f'credentials_file={creds}']
    url = s3_server.url(f'opts/{tmp_path.name}/new')
    env = bare_env(tmp_path)
    ok(run([create_prog] + o_args(opts) + [str(schema), url], env))
    keys = s3_server.client.keys(f'opts/{tmp_path.name}/new/')
    assert [k.split('/')[-2] for k in keys] == ['__schema'], keys
    got = json.loads(ok(run([cat_prog] + o_args(opts) + [url, '__array.json'], env)))
    want = json.loads(read_file(schema))
    assert got['schema'] == want['schema']
    one_line_error(run([create_prog] + o_args(opts) + [str(schema), url], env), 'not empty')
    one_line_error(run([create_prog] + o_args(opts) +
                       [str(schema), f'{s3_server.scheme}://no-such-bucket/a'], env),
                   s3_server.no_bucket)
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "stg"}'])
    stage(mnt, 't', {'a': case.expected('a'), 'b': case.expected('b')})
    assert commit(mnt, 't') is None
    assert read_file(os.path.join(mnt, 'a')) == case.expected('a')


def test_create_refuses_other_options(s3_server, create_prog, tmp_path):
    r = run([create_prog, '-o', 'refresh=5', str(tmp_path / 's.json'), str(tmp_path / 'a')])
    one_line_error(r, 'unknown option refresh=5', 'endpoint=')


# --------------------------------------------------------- tiledbfs-copy

@pytest.mark.parametrize('name', ['dense_var_nullable', 'group_basic', 'encrypted_aes256gcm',
                                  'consolidated_commits', 'legacy_zero_var_chunks_v10'])
def test_copy_local_array_to_s3(name, store_server, copy_prog, cat_prog, tmp_path):
    """tiledbfs-copy uploads a local array or group: every file's bytes under
    the prefix, and the S3 (Azure) copy shows the case's expected bytes."""
    s3_server = store_server
    case = get_case(name)
    prefix = f'opts/{tmp_path.name}/{name}'
    out = ok(run([copy_prog, '-v', case.array, s3_server.url(prefix)]))
    local = tree_digests(case.array)
    assert out.decode().startswith(f'{len(local)} files, ')
    remote = {k[len(prefix) + 1:]: hashlib.sha256(s3_server.client.get(k)).hexdigest()
              for k in s3_server.client.keys(prefix + '/')}
    assert remote == local
    opts = case_options(case, tmp_path)
    for path in case.expected_paths:
        r = run([cat_prog] + o_args(opts) + [s3_server.url(prefix), path])
        assert ok(r) == case.expected(path), path


def test_copy_s3_to_local(store_server, copy_prog, cat_prog, tmp_path):
    """An array in the bucket copied back to a folder holds the same files
    as the one uploaded."""
    s3_server = store_server
    case = get_case('group_basic')
    url = s3_server.url(f'opts/{tmp_path.name}/g')
    ok(run([copy_prog, case.array, url]))
    back = tmp_path / 'back'
    ok(run([copy_prog, url, str(back)]))
    assert tree_digests(str(back)) == tree_digests(case.array)
    for path in case.expected_paths:
        assert ok(run([cat_prog, str(back), path])) == case.expected(path)


class PutLog(VerifyingProxy):
    """A VerifyingProxy that keeps the path of each PUT, in order."""

    def __init__(self, server):
        self.puts = []
        super().__init__(server)

    def answer(self, method, target, headers, body):
        if method == 'PUT':
            with self.lock:
                self.puts.append(target.partition('?')[0])
        return super().answer(method, target, headers, body)


def test_copy_commits_last(store_server, copy_prog, tmp_path):
    """The commit files are the last objects written (as TileDB writes
    them), so a reader that looks while the copy runs sees whole fragments
    or none: the order of the PUTs, as a proxy saw them."""
    s3_server = store_server
    case = get_case('time_travel_t3')
    proxy = PutLog(s3_server)
    try:
        env = dict(os.environ, **s3_server.endpoint_env(proxy.endpoint))
        ok(run([copy_prog, case.array, s3_server.url(f'opts/{tmp_path.name}/tt')], env))
    finally:
        proxy.close()
    kinds = ['/__commits/' in p for p in proxy.puts]
    n = len(os.listdir(os.path.join(case.array, '__commits')))
    assert len(proxy.puts) == len(tree_digests(case.array))
    assert n == 3 and kinds == [False] * (len(kinds) - n) + [True] * n, proxy.puts


def test_copy_errors(store_server, copy_prog, tmp_path):
    """A destination that is not empty, a source that is not TileDB, an
    unknown option: one line, exit 1, nothing written."""
    s3_server = store_server
    case = get_case('dense_1d_basic')
    url = s3_server.url(f'opts/{tmp_path.name}/twice')
    ok(run([copy_prog, case.array, url]))
    before = s3_server.client.keys(f'opts/{tmp_path.name}/twice/')
    one_line_error(run([copy_prog, case.array, url]), 'not empty')
    assert s3_server.client.keys(f'opts/{tmp_path.name}/twice/') == before
    one_line_error(run([copy_prog, str(tmp_path), s3_server.url(f'opts/{tmp_path.name}/x')]),
                   'not a TileDB array or group')
    one_line_error(run([copy_prog, '-o', 'rw', case.array, str(tmp_path / 'y')]),
                   'unknown option rw')
    local = tmp_path / 'nonempty'
    local.mkdir()
    (local / 'f').write_bytes(b'x')
    one_line_error(run([copy_prog, case.array, str(local)]), 'not empty', "'f'")


# S3 <-> Azure: a copy from one store to the other, each reached through
# its own variables (both set at once: they do not overlap)
CROSS = [(src, 'azurite') for src in SERVERS] + [('azurite', dst) for dst in SERVERS]


@pytest.mark.parametrize('src,dst', CROSS, ids=[f'{a}-to-{b}' for a, b in CROSS])
def test_copy_between_stores(src, dst, s3_servers, copy_prog, cat_prog, tmp_path,
                             monkeypatch):
    """tiledbfs-copy from an S3 bucket to an Azure container and back: the
    destination holds every file of the source, byte for byte, and shows
    the case's expected bytes; the source keeps its keys."""
    case = get_case('group_basic')
    a, b = s3_servers.get(src), s3_servers.get(dst)
    point_at(a, monkeypatch)
    for k, v in b.env().items():
        monkeypatch.setenv(k, v)
    prefix = f'cross/{tmp_path.name}'
    a.upload(case.array, f'{prefix}/src')
    local = tree_digests(case.array)
    out = ok(run([copy_prog, '-v', a.url(f'{prefix}/src'), b.url(f'{prefix}/dst')])).decode()
    assert out.startswith(f'{len(local)} files, '), out
    for server, rel in ((b, 'dst'), (a, 'src')):
        got = {k[len(prefix) + len(rel) + 2:]: hashlib.sha256(server.client.get(k)).hexdigest()
               for k in server.client.keys(f'{prefix}/{rel}/')}
        assert got == local, (server.name, rel)
    for path in case.expected_paths:
        assert ok(run([cat_prog, b.url(f'{prefix}/dst'), path])) == case.expected(path), path


@pytest.mark.parametrize('store', ['azurite'])
def test_azure_account_and_key_variables(store, s3_servers, cat_prog, copy_prog, tmp_path,
                                         monkeypatch):
    """Without a connection string: AZURE_STORAGE_ACCOUNT and
    AZURE_STORAGE_KEY with -o endpoint= (and -o account= naming the same
    account) read the array; a wrong key is refused (HTTP 403), and a connection
    string naming another account than -o account= is an error."""
    az = point_at(s3_servers.get(store), monkeypatch)
    case, url = upload_dense(az, copy_prog, tmp_path)
    env = bare_env(tmp_path, AZURE_STORAGE_ACCOUNT=az.account, AZURE_STORAGE_KEY=az.key)
    where = ['-o', f'endpoint={az.endpoint}']
    assert ok(run([cat_prog] + where + [url, 'a'], env)) == case.expected('a')
    assert ok(run([cat_prog, '-o', f'endpoint={az.endpoint},account={az.account}', url, 'a'],
                  env)) == case.expected('a')
    one_line_error(run([cat_prog] + where + [url, 'a'],
                       dict(env, AZURE_STORAGE_KEY=az.wrong_key())), 'HTTP 403')
    r = run([cat_prog, '-o', 'account=otheraccount', url, 'a'],
            bare_env(tmp_path, AZURE_STORAGE_CONNECTION_STRING=az.connection_string()))
    one_line_error(r)
    assert r.stdout == b''


def test_copy_local_to_local(copy_prog, cat_prog, tmp_path):
    """A local copy holds the same files; a symbolic link inside the source
    is refused, not followed."""
    case = get_case('sparse_string_dim')
    dst = tmp_path / 'copy'
    ok(run([copy_prog, case.array, str(dst)]))
    assert tree_digests(str(dst)) == tree_digests(case.array)
    for path in case.expected_paths:
        assert ok(run([cat_prog, str(dst), path])) == case.expected(path)
    src = tmp_path / 'linked'
    ok(run([copy_prog, case.array, str(src)]))
    os.symlink('/etc/passwd', src / '__schema' / 'evil')
    r = run([copy_prog, str(src), str(tmp_path / 'again')])
    one_line_error(r, 'evil')
