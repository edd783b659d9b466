"""conftest.py: fixtures of the Python suite: the build, the reference corpus, its cases, and FUSE mounts (the mount contract end to end)."""
import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import azfixture
import s3fixture

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get('TILEDBFS_BUILD') or REPO)
# the reference corpus: the repository's tests/corpus unless TILEDBFS_CORPUS
# names another
CORPUS = os.path.abspath(os.environ.get('TILEDBFS_CORPUS') or
                         os.path.join(REPO, 'tests', 'corpus'))
NO_CORPUS = f'corpus not found at {CORPUS} (set TILEDBFS_CORPUS)'

CAT_TIMEOUT = 60      # seconds for one tiledbfs-cat run
MOUNT_TIMEOUT = 20    # seconds to wait for a mount to appear or go away


# ------------------------------------------------------------------ corpus

class Case:
    """One corpus case: CORPUS/NAME/{array,expected,case.json}."""

    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(CORPUS, name)
        self.array = os.path.join(self.dir, 'array')
        with open(os.path.join(self.dir, 'case.json')) as f:
            self.info = json.load(f)
        self.expected_paths = list(self.info.get('expected', []))

    def expected(self, path):
        with open(os.path.join(self.dir, 'expected', path), 'rb') as f:
            return f.read()

    @property
    def dense(self):
        return self.info.get('kind') == 'array' and self.info.get('array_type') == 'dense'

    def fields(self):
        return self.info.get('fields', {})

    def __repr__(self):
        return f'Case({self.name})'


def case_names():
    """Every folder of the corpus that holds a case.json, sorted."""
    if not os.path.isdir(CORPUS):
        return []
    return sorted(n for n in os.listdir(CORPUS)
                  if os.path.isfile(os.path.join(CORPUS, n, 'case.json')))


def pytest_generate_tests(metafunc):
    """Parametrises a test that takes `case` over every corpus case, one
    that takes `dense_case` over the dense arrays' cases; without a corpus,
    one skipped instance says where it looked."""
    for fixture in ('case', 'dense_case'):
        if fixture not in metafunc.fixturenames:
            continue
        names = case_names()
        if fixture == 'dense_case':
            names = [n for n in names if Case(n).dense]
        if names:
            metafunc.parametrize(fixture, names, indirect=True)
        else:
            metafunc.parametrize(fixture, [pytest.param(None, marks=pytest.mark.skip(reason=NO_CORPUS))],
                                 indirect=True, ids=['no-corpus'])


@pytest.fixture
def case(request):
    return Case(request.param)


@pytest.fixture
def dense_case(request):
    """A corpus case of a dense array (its view has a grid: __zarr)."""
    return Case(request.param)


@pytest.fixture(scope='session')
def corpus():
    """Path of the corpus; skips the test when it is absent."""
    if not os.path.isdir(CORPUS):
        pytest.skip(NO_CORPUS)
    return CORPUS


def get_case(name):
    """A named case, or a skip when the corpus (or the case) is missing."""
    if not os.path.isdir(CORPUS):
        pytest.skip(NO_CORPUS)
    if not os.path.isfile(os.path.join(CORPUS, name, 'case.json')):
        pytest.skip(f'case {name} not in corpus {CORPUS}')
    return Case(name)


def case_options(case, tmpdir, key_hex=None):
    """The -o options of a case: its mount_options, plus key_file= pointing
    at a file holding the 32 key bytes (case.json key_hex, or `key_hex`)."""
    opts = [o for o in [case.info.get('mount_options', '')] if o]
    key = key_hex if key_hex is not None else case.info.get('key_hex')
    if key:
        kf = os.path.join(str(tmpdir), f'{case.name}.key')
        with open(kf, 'wb') as f:
            f.write(bytes.fromhex(key))
        opts.append('key_file=' + kf)
    return opts


def o_args(opts):
    return ['-o', ','.join(opts)] if opts else []


# ------------------------------------------------------------------ programs

def find_program(rel):
    path = os.path.join(BUILD, rel)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f'{rel} is not built in {BUILD} (run make, or set TILEDBFS_BUILD)')
    return path


@pytest.fixture(scope='session')
def build_dir():
    return BUILD


@pytest.fixture(scope='session')
def cat_prog():
    return find_program(os.path.join('tools', 'tiledbfs-cat'))


@pytest.fixture(scope='session')
def fs_prog():
    return find_program(os.path.join('fuse', 'tiledbfs'))


@pytest.fixture(scope='session')
def create_prog():
    return find_program(os.path.join('tools', 'tiledbfs-create'))


SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'scripts', 'make_sample.py')


def make_sample(tmp_path, shape='1024x1024', tile='128x128'):
    """scripts/make_sample.py's dense array (shape and tile extents RxC) at
    tmp_path/arr; @return its path."""
    arr = str(tmp_path / 'arr')
    subprocess.run(['/usr/bin/python3', SAMPLE, '--shape', shape, '--tile', tile, arr],
                   check=True, capture_output=True, timeout=CAT_TIMEOUT)
    return arr


def read_tree(root):
    """Every file under root: {relative path: bytes}."""
    out = {}
    for d, _, files in os.walk(root):
        for n in files:
            full = os.path.join(d, n)
            with open(full, 'rb') as f:
                out[os.path.relpath(full, root)] = f.read()
    return out


def run_cat(prog, source, path, opts=(), timeout=CAT_TIMEOUT, extra=()):
    """Runs tiledbfs-cat; returns the CompletedProcess (bytes)."""
    cmd = [prog] + o_args(list(opts)) + list(extra) + [source, path]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)


# --------------------------------------------------------------------- FUSE

NOBODY_PROGS = {}      # a program of the build -> its copy other users can run


def for_nobody(prog):
    """Where uid 65534 can run program `prog` of the build: a copy in a
    folder every user can reach, made on first use (the build may be in a
    folder only root reads: a checkout in /root is 0700)."""
    if prog not in NOBODY_PROGS:
        top = NOBODY_PROGS.setdefault('', tempfile.mkdtemp(prefix='tiledbfs-progs-'))
        os.chmod(top, 0o755)
        dst = os.path.join(top, os.path.basename(prog))
        shutil.copy(prog, dst)
        os.chmod(dst, 0o755)
        NOBODY_PROGS[prog] = dst
    return NOBODY_PROGS[prog]


@atexit.register
def _drop_nobody_progs():
    if '' in NOBODY_PROGS:
        shutil.rmtree(NOBODY_PROGS[''], ignore_errors=True)


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, timeout=CAT_TIMEOUT, env=env)


def ok(r):
    """The stdout of finished process r, which must have exited 0."""
    assert r.returncode == 0, r.stderr.decode(errors='replace')
    return r.stdout


def one_line_error(r, *needles):
    """The error of finished process r: exit 1, one short line on stderr
    holding every needle."""
    err = r.stderr.decode(errors='replace').strip()
    assert r.returncode == 1 and len(err.split('\n')) == 1, err
    assert len(err) < 1024, err
    for n in needles:
        assert n in err, err
    return err


def daemons_on(mnt):
    """Pids of the tiledbfs processes started for mountpoint `mnt` (by
    their command lines in /proc)."""
    pids = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open(f'/proc/{d}/cmdline', 'rb') as f:
                args = f.read().split(b'\0')
        except OSError:
            continue
        if args and os.path.basename(args[0]) == b'tiledbfs' and os.fsencode(mnt) in args:
            pids.append(int(d))
    return pids


@contextlib.contextmanager
def background_mount(fs_prog, source, mnt):
    """Mounts `source` at the folder `mnt` as users do: the daemon forks to
    the background (its stderr into mnt + '.stderr', not a pipe, which the
    daemon would keep open).  Yields the daemon's pids; then unmounts (lazily
    when it must) and fails unless every one exits, killing those that do
    not."""
    with open(mnt + '.stderr', 'wb') as err:
        r = subprocess.run([fs_prog, source, mnt], stdout=subprocess.DEVNULL,
                           stderr=err, timeout=MOUNT_TIMEOUT)
    with open(mnt + '.stderr', 'rb') as f:
        assert r.returncode == 0, f'tiledbfs {source}: {f.read().decode(errors="replace")}'
    pids = daemons_on(mnt)
    gone = []
    try:
        assert pids, 'no daemon serves ' + mnt
        yield pids
    finally:
        if subprocess.run(['fusermount3', '-u', mnt], timeout=MOUNT_TIMEOUT).returncode:
            subprocess.run(['fusermount3', '-u', '-z', mnt], timeout=MOUNT_TIMEOUT)
        for pid in pids:
            gone.append(exited(pid))
            if not gone[-1]:
                os.kill(pid, signal.SIGKILL)
    assert all(gone), f'the daemons {pids} still ran after their mount went'


def exited(pid, timeout=MOUNT_TIMEOUT):
    """Waits up to `timeout` s for process pid to exit: True once it has
    (gone, or a zombie not reaped yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(f'/proc/{pid}/stat') as f:
                if f.read().split(') ')[-1].startswith('Z'):
                    return True
        except OSError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def fuse_missing():
    """Why FUSE mounts cannot work here, or None."""
    if not os.path.exists('/dev/fuse'):
        return '/dev/fuse does not exist'
    if not os.access('/dev/fuse', os.R_OK | os.W_OK):
        return '/dev/fuse is not readable and writable'
    if shutil.which('fusermount3') is None:
        return 'fusermount3 is not installed'
    return None


def private_mount_ns_missing():
    """Why `unshare --mount --propagation private` cannot run here (not
    root, no unshare(1), or the system refuses: in a chroot or a package
    builder, where / is not a mount point), or None."""
    if os.geteuid() != 0:
        return 'a mount namespace needs root'
    if shutil.which('unshare') is None:
        return 'unshare (util-linux) is not installed'
    r = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'true'],
                       capture_output=True, timeout=30)
    if r.returncode != 0:
        return f'no private mount namespace here: {r.stderr.decode(errors="replace").strip()}'
    return None


class Mounts:
    """Starts `tiledbfs -f` in the background and unmounts at teardown."""

    def __init__(self, prog, tmpdir):
        self.prog = prog
        self.tmpdir = str(tmpdir)
        self.active = []   # (mountpoint, process, stderr path)

    def __call__(self, source, opts=(), extra=()):
        n = len(self.active)
        mnt = os.path.join(self.tmpdir, f'mnt{n}')
        os.makedirs(mnt, exist_ok=True)
        errpath = os.path.join(self.tmpdir, f'mnt{n}.stderr')
        err = open(errpath, 'wb')
        cmd = [self.prog, '-f'] + o_args(list(opts)) + list(extra) + [source, mnt]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        err.close()
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not os.path.ismount(mnt):
            if proc.poll() is not None:
                pytest.fail(f'tiledbfs exited with {proc.returncode} before mounting '
                            f'{source}: {self._stderr(errpath)}')
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                pytest.fail(f'{source} not mounted after {MOUNT_TIMEOUT} s: {self._stderr(errpath)}')
            time.sleep(0.05)
        self.active.append((mnt, proc, errpath))
        return mnt

    @staticmethod
    def _stderr(path):
        try:
            with open(path, 'rb') as f:
                return f.read().decode(errors='replace').strip()[-2000:]
        except OSError:
            return ''

    def unmount(self, mnt):
        """Unmounts `mnt`, waits for its daemon; returns the failures."""
        problems = []
        for i, (m, proc, errpath) in enumerate(self.active):
            if m != mnt:
                continue
            del self.active[i]
            r = subprocess.run(['fusermount3', '-u', mnt], capture_output=True)
            if r.returncode != 0:
                problems.append(f'fusermount3 -u {mnt}: {r.stderr.decode(errors="replace").strip()}')
                subprocess.run(['fusermount3', '-u', '-z', mnt], capture_output=True)
            try:
                proc.wait(timeout=MOUNT_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                problems.append(f'tiledbfs did not exit within {MOUNT_TIMEOUT} s of the unmount')
            if proc.returncode != 0:
                problems.append(f'tiledbfs exited with {proc.returncode}: {self._stderr(errpath)}')
            return problems
        return [f'{mnt} is not mounted by this fixture']

    def close(self):
        problems = []
        while self.active:
            problems += self.unmount(self.active[-1][0])
        return problems


@pytest.fixture
def mount(fs_prog, tmp_path):
    """A function mount(source, opts=()) -> mountpoint.  Every mount made is
    unmounted with fusermount3 -u at teardown, and the daemon must exit 0."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    mounts = Mounts(fs_prog, tmp_path)
    yield mounts
    problems = mounts.close()
    assert not problems, '; '.join(problems)


# ----------------------------------------------------------------------- S3
# The S3 servers of the tests (s3fixture.py documents this API): s3_server
# runs a test once per server, s3_corpus with the corpus in its bucket;
# store_server and store_corpus the same over every object store, the S3
# servers and Azurite (azfixture.py).

S3_SKIPPED = {}   # server name -> why it cannot run here
# every object store a test of store_server runs on (its ids)
STORES = s3fixture.SERVERS + ('azurite',)
# the variables no test sees but its server's: AWS_* and AZURE_*
STORE_ENV_KEYS = s3fixture.AWS_ENV_KEYS + azfixture.AZURE_ENV_KEYS


def start_server(name, folder):
    """Starts object store `name` (s3fixture.start's contract)."""
    if name == 'azurite':
        return azfixture.start_azurite(str(folder))
    return s3fixture.start(name, folder)


def protocol(name):
    return 'Azure' if name == 'azurite' else 'S3'


class S3Servers:
    """The object stores of a session (the S3 servers and Azurite), each
    started the first time a test asks for it and stopped when the session
    ends."""

    def __init__(self, tmp_path_factory):
        self.factory = tmp_path_factory
        self.running = {}
        self.failed = {}
        self.with_corpus = set()

    def get(self, name):
        if name in S3_SKIPPED:
            pytest.skip(f'NO {name.upper()}, its {protocol(name)} tests skipped: '
                        f'{S3_SKIPPED[name]}')
        if name in self.failed:
            pytest.fail(self.failed[name], pytrace=False)
        if name not in self.running:
            try:
                self.running[name] = start_server(name, self.factory.mktemp(name))
            except s3fixture.Unavailable as e:
                S3_SKIPPED[name] = str(e)
                return self.get(name)
            except Exception as e:
                self.failed[name] = f'{name} did not start: {e}'
                return self.get(name)
        return self.running[name]

    def close(self):
        for server in self.running.values():
            server.stop()


@pytest.fixture(scope='session')
def s3_servers(tmp_path_factory):
    servers = S3Servers(tmp_path_factory)
    yield servers
    servers.close()


@pytest.fixture(params=s3fixture.SERVERS)
def s3_server(request, s3_servers, monkeypatch):
    """An s3fixture.S3Server (a test runs once per server); the programs the
    test runs reach it through the AWS_* variables."""
    return point_at(s3_servers.get(request.param), monkeypatch)


@pytest.fixture(params=STORES)
def store_server(request, s3_servers, monkeypatch):
    """An s3fixture.S3Server or an azfixture.AzureServer (a test runs once
    per object store, ids as their names); the programs the test runs
    reach it through the AWS_* or the AZURE_* variables."""
    return point_at(s3_servers.get(request.param), monkeypatch)


def point_at(server, monkeypatch):
    """Points the variables of the programs a test runs (AWS_*, or
    AZURE_STORAGE_CONNECTION_STRING) at server, and only at it: every
    other AWS_* and AZURE_* is removed; @return server."""
    for k in STORE_ENV_KEYS:
        monkeypatch.delenv(k, raising=False)
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    return server


def with_corpus(server, servers):
    """server once every corpus case's array is in its bucket (or
    container) as corpus/CASE/array, uploaded once per session."""
    if not os.path.isdir(CORPUS):
        pytest.skip(NO_CORPUS)
    if server.name not in servers.with_corpus:
        for name in case_names():
            server.upload(os.path.join(CORPUS, name, 'array'), f'corpus/{name}/array')
        servers.with_corpus.add(server.name)
    return server


@pytest.fixture
def s3_corpus(s3_server, s3_servers):
    """s3_server with every corpus case's array in its bucket as
    corpus/CASE/array."""
    return with_corpus(s3_server, s3_servers)


@pytest.fixture
def store_corpus(store_server, s3_servers):
    """store_server with every corpus case's array in its bucket or
    container as corpus/CASE/array."""
    return with_corpus(store_server, s3_servers)


# TILEDBFS_PYTEST_SCOPE=tarball (make distcheck, from scripts/test): the
# tests on object-store servers and zarrita's are left out, said on the
# console; they ran in the tree's make check just before, on the same
# sources.
LEFT_OUT = []


def pytest_collection_modifyitems(config, items):
    """Under TILEDBFS_PYTEST_SCOPE=tarball, leaves out every test that needs
    the object-store servers (the s3_servers fixture) or zarrita."""
    if os.environ.get('TILEDBFS_PYTEST_SCOPE') != 'tarball':
        return

    def out(i):
        # the tarball has no node_modules: zarrita's tests cannot run there
        return 's3_servers' in getattr(i, 'fixturenames', ()) or \
            'zarrita' in getattr(i, 'fixturenames', ())
    keep = [i for i in items if not out(i)]
    LEFT_OUT.extend(i for i in items if out(i))
    if LEFT_OUT:
        config.hook.pytest_deselected(items=LEFT_OUT)
        items[:] = keep


def pytest_terminal_summary(terminalreporter):
    """The object stores that could not run, and the tests left out under
    TILEDBFS_PYTEST_SCOPE, on the terminal and on make check's console
    (TILEDBFS_TEST_CONSOLE, as tests/pytest.sh does)."""
    lines = [f'SKIP {protocol(name).upper()}: {name}: its {protocol(name)} tests were skipped: '
             f'{why}' for name, why in sorted(S3_SKIPPED.items())]
    if LEFT_OUT:
        lines.append(f'SKIP STORES: TILEDBFS_PYTEST_SCOPE=tarball: {len(LEFT_OUT)} tests on '
                     'object-store servers or zarrita were left out (the tree\'s make check '
                     'ran them)')
    for line in lines:
        terminalreporter.write_line(line, yellow=True, bold=True)
    fd = os.environ.get('TILEDBFS_TEST_CONSOLE', '')
    if lines and fd.isdigit():
        try:
            os.write(int(fd), ''.join(line + '\n' for line in lines).encode())
        except OSError:
            pass
