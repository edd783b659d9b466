"""test_install.py: tiledbfs in a Linux system: make install (programs, manual pages), --version, the manual pages, mount -t fuse.tiledbfs and fstab through mount.fuse3, -o log=stderr|syslog."""
import errno
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import (BUILD, MOUNT_TIMEOUT, REPO, daemons_on, fuse_missing, get_case,
                      private_mount_ns_missing)

PROGRAMS = ('tiledbfs', 'tiledbfs-cat', 'tiledbfs-create', 'tiledbfs-copy',
            'tiledbfs-consolidate')
MAN_DIR = os.path.join(REPO, 'man')
SCRIPT_TIMEOUT = 120   # seconds for one script in a private mount namespace
# /bin/sh's own PATH: mount(8) clears the environment's, so mount.fuse3's
# shell finds the program named by the type (fuse.tiledbfs) there
SHELL_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def package_version():
    """PACKAGE_VERSION of the build (its Makefile, written by configure)."""
    with open(os.path.join(BUILD, 'Makefile')) as f:
        for line in f:
            m = re.match(r'PACKAGE_VERSION = (\S+)$', line)
            if m:
                return m.group(1)
    pytest.fail(f'no PACKAGE_VERSION in {BUILD}/Makefile')


def clean_make_env():
    """The environment without make check's jobserver and flags, for a
    make of our own."""
    env = dict(os.environ)
    for k in ('MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES'):
        env.pop(k, None)
    return env


# ------------------------------------------------------ install, version

def test_make_install(build_dir, tmp_path):
    dest = tmp_path / 'dest'
    r = subprocess.run(['make', '-C', build_dir, 'install', f'DESTDIR={dest}'],
                       capture_output=True, env=clean_make_env(), timeout=600)
    assert r.returncode == 0, f'make install failed: {r.stderr.decode(errors="replace")[-3000:]}'
    found = {}
    for root, _, files in os.walk(dest):
        for f in files:
            found.setdefault(f, []).append(os.path.join(root, f))
    version = package_version()
    for prog in PROGRAMS:
        paths = [p for p in found.get(prog, []) if os.path.basename(os.path.dirname(p)) == 'bin']
        assert len(paths) == 1, f'{prog}: installed as {found.get(prog)}'
        assert os.access(paths[0], os.X_OK), f'{paths[0]} is not executable'
        v = subprocess.run([paths[0], '--version'], capture_output=True, timeout=30)
        assert v.returncode == 0 and v.stdout.decode().split('\n')[0] == f'{prog} {version}', \
            f'installed {prog} --version: {v.stdout!r} {v.stderr!r}'
        page = f'{prog}.1'
        pages = [p for p in found.get(page, []) if p.endswith(os.path.join('man', 'man1', page))]
        assert len(pages) == 1, f'{page}: installed as {found.get(page)}'
        with open(pages[0], 'rb') as a, open(os.path.join(MAN_DIR, page), 'rb') as b:
            assert a.read() == b.read(), f'{pages[0]} differs from man/{page}'


@pytest.mark.parametrize('prog', PROGRAMS)
@pytest.mark.parametrize('flag', ['--version', '-V'])
def test_version(prog, flag):
    rel = os.path.join('fuse' if prog == 'tiledbfs' else 'tools', prog)
    r = subprocess.run([os.path.join(BUILD, rel), flag], capture_output=True, timeout=30)
    assert r.returncode == 0, f'{prog} {flag}: exit {r.returncode}: {r.stderr!r}'
    assert r.stdout.decode().split('\n')[0] == f'{prog} {package_version()}', r.stdout


# ------------------------------------------------------------ manual pages

def render(page, device='utf8'):
    """groff's rendering of a man page and its warnings (all of them, -ww)."""
    if shutil.which('groff') is None:
        pytest.fail('groff is not installed (scripts/install-deps installs groff-base)')
    r = subprocess.run(['groff', '-man', f'-T{device}', '-ww', '-P-c', '-P-b', '-P-u',
                        os.path.join(MAN_DIR, page)],
                       capture_output=True, timeout=60, env=dict(os.environ, LC_ALL='C.UTF-8'))
    assert r.returncode == 0, f'groff {page}: exit {r.returncode}'
    return r.stdout.decode('utf-8', errors='replace'), r.stderr.decode(errors='replace')


@pytest.mark.parametrize('prog', PROGRAMS)
def test_man_page_renders_without_warnings(prog):
    text, warnings = render(f'{prog}.1')
    assert warnings == '', f'{prog}.1: {warnings}'
    for section in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXIT STATUS',
                    'EXAMPLES', 'SEE ALSO'):
        assert re.search(rf'^{section}$', text, re.M), f'{prog}.1 has no {section} section'
    assert re.search(rf'^\s+{re.escape(prog)} +- ', text, re.M), f'{prog}.1: NAME line'
    with open(os.path.join(MAN_DIR, f'{prog}.1')) as f:
        th = [line for line in f if line.startswith('.TH ')]
    assert len(th) == 1 and f'"tiledbfs {package_version()}"' in th[0], \
        f'{prog}.1: .TH does not name version {package_version()}: {th}'


def help_options(prog_rel):
    """The -o option names and the flags a program's --help lists (for
    tiledbfs, its own part, before FUSE's)."""
    r = subprocess.run([os.path.join(BUILD, prog_rel), '--help'], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    out = re.split(r'^\s+-h\s+--help', r.stdout.decode(), maxsplit=1, flags=re.M)[0]
    names = set(re.findall(r'-o ([a-z_]+)', out)) | set(re.findall(r'\b([a-z_]+)=', out))
    if re.search(r'\brw\b', out):
        names.add('rw')
    flags = set(re.findall(r'(?<![\w-])(-[a-zA-Z]|--[a-z]+)\b', out))
    return names, flags


@pytest.mark.parametrize('prog,rel,own_flags', [
    ('tiledbfs', 'fuse/tiledbfs', ('-f', '-d', '-s', '-h', '-V', '--help', '--version')),
    ('tiledbfs-cat', 'tools/tiledbfs-cat', None),
    ('tiledbfs-create', 'tools/tiledbfs-create', None),
    ('tiledbfs-copy', 'tools/tiledbfs-copy', None),
    ('tiledbfs-consolidate', 'tools/tiledbfs-consolidate', None),
])
def test_man_page_lists_every_option(prog, rel, own_flags):
    """Every -o option of --help (and every flag: for tiledbfs, its own and
    the common FUSE ones) is in the manual page."""
    names, flags = help_options(rel)
    assert names, f'{prog} --help lists no -o option'
    if own_flags is not None:
        flags = set(own_flags)
    text, _ = render(f'{prog}.1')
    missing = [n for n in sorted(names) if not re.search(rf'(?<![\w]){n}\b', text)]
    missing += [f for f in sorted(flags) if not re.search(rf'(?<![\w-]){re.escape(f)}\b', text)]
    assert not missing, f'{prog}.1 does not document {missing}'


# ---------------------------------------------- mount(8), fstab, mount.fuse3

def need_root_mounts():
    """Skips unless mount(8) can mount FUSE here in a private mount namespace."""
    if os.geteuid() != 0:
        pytest.skip('mount -t fuse.tiledbfs and fstab need root')
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    for tool in ('mount', 'umount', 'unshare', 'mountpoint'):
        if shutil.which(tool) is None:
            pytest.skip(f'{tool} (util-linux) is not installed')
    if not any(os.access(os.path.join(d, 'mount.fuse3'), os.X_OK) for d in ('/sbin', '/usr/sbin')):
        pytest.skip('mount.fuse3 (package fuse3) is not installed')
    if not os.path.isdir('/usr/local/sbin'):
        pytest.skip('/usr/local/sbin does not exist (the first folder of /bin/sh\'s PATH)')
    why = private_mount_ns_missing()
    if why:
        pytest.skip(why)


def wait_daemons_gone(mnts):
    """Waits for the daemons of `mnts` to exit after their unmount; kills
    (by pid) and reports those that do not."""
    deadline = time.monotonic() + MOUNT_TIMEOUT
    left = []
    while True:
        left = [p for m in mnts for p in daemons_on(m)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    return left


def in_mount_namespace(tmp_path, script, mnts):
    """Runs `script` (sh -eu) in a private mount namespace, with a wrapper
    named tiledbfs bound over /usr/local/sbin that logs its arguments to
    tmp_path/argv.N and runs the built daemon.  Every mountpoint of `mnts`
    is unmounted when the script ends, and its daemon must exit."""
    wrap_dir = tmp_path / 'sbin'
    wrap_dir.mkdir()
    wrapper = wrap_dir / 'tiledbfs'
    wrapper.write_text('#!/bin/sh\n'
                       f'n=$(ls {shlex.quote(str(tmp_path))} | grep -c "^argv\\.") || true\n'
                       f'printf "%s\\n" "$@" > {shlex.quote(str(tmp_path))}/argv.$n\n'
                       f'exec {shlex.quote(os.path.join(BUILD, "fuse", "tiledbfs"))} "$@"\n')
    wrapper.chmod(0o755)
    unmount = ' '.join(f'umount {shlex.quote(m)} 2>/dev/null || true;' for m in mnts)
    full = (f'trap {shlex.quote(unmount)} EXIT\n'
            f'mount --bind {shlex.quote(str(wrap_dir))} /usr/local/sbin\n' + script)
    try:
        r = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'sh', '-euc', full],
                           capture_output=True, timeout=SCRIPT_TIMEOUT,
                           env=dict(os.environ, PATH=SHELL_PATH))
    finally:
        stuck = wait_daemons_gone(mnts)
    assert not stuck, f'tiledbfs daemons {stuck} did not exit after the unmount'
    return r


def argv_logs(tmp_path):
    """The argument lists the wrapper saw, in call order."""
    logs = sorted((p for p in os.listdir(tmp_path) if p.startswith('argv.')),
                  key=lambda p: int(p.split('.')[1]))
    return [(tmp_path / p).read_text().split('\n')[:-1] for p in logs]


def mountinfo_of(path):
    """(mount options, fs type, source, super options) of a saved
    /proc/self/mountinfo line."""
    line = path.read_text().strip()
    assert line, f'{path.name}: not mounted'
    a, b = line.split(' - ')
    fields = a.split()
    fstype, source, sopts = b.split()[:3]
    return set(fields[5].split(',')), fstype, source, set(sopts.split(','))


def copy_array(case, dst):
    shutil.copytree(case.array, dst)
    for root, dirs, files in os.walk(dst):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return str(dst)


def read_script(mnt, paths, out):
    """Shell lines copying each path of the mount to out/<index>."""
    return ''.join(f'cat {shlex.quote(os.path.join(mnt, p))} > {shlex.quote(str(out))}/{i}\n'
                   for i, p in enumerate(paths))


def check_reads(case, paths, out):
    for i, p in enumerate(paths):
        got = (out / str(i)).read_bytes()
        assert got == case.expected(p), f'{p}: {len(got)} bytes through mount(8), ' \
                                        f'expected {len(case.expected(p))}'


def q(p):
    return shlex.quote(str(p))


def test_mount_type_fuse_tiledbfs(corpus, build_dir, tmp_path):
    """mount -t fuse.tiledbfs -o ro reads the corpus bytes; without options
    (mount(8) then passes rw) the mount is read-only all the same."""
    need_root_mounts()
    case = get_case('dense_1d_basic')
    copy = copy_array(case, tmp_path / 'copy' / 'array')
    m1, m2, out = tmp_path / 'm1', tmp_path / 'm2', tmp_path / 'out'
    for d in (m1, m2, out):
        d.mkdir()
    paths = case.expected_paths
    script = (f'mount -t fuse.tiledbfs -o ro {q(case.array)} {q(m1)}\n'
              f'grep " {m1} " /proc/self/mountinfo > {q(tmp_path)}/info1\n'
              + read_script(str(m1), paths, out) +
              f'mount -t fuse.tiledbfs {q(copy)} {q(m2)}\n'
              f'grep " {m2} " /proc/self/mountinfo > {q(tmp_path)}/info2\n'
              f'ls -a {q(m2)} > {q(tmp_path)}/ls2\n'
              f'if mkdir {q(m2)}/__meta/x 2> {q(tmp_path)}/mkdir2; then echo made; fi\n')
    r = in_mount_namespace(tmp_path, script, [str(m1), str(m2)])
    assert r.returncode == 0, f'script failed: {r.stderr.decode(errors="replace")}'

    argv = argv_logs(tmp_path)
    assert len(argv) == 2, f'the tiledbfs on /bin/sh\'s PATH ran {len(argv)} times: {argv}'
    assert argv[0][:3] == [case.array, str(m1), '-o'] and 'ro' in argv[0][3].split(','), argv[0]
    assert 'rw' in argv[1][3].split(','), f'mount(8) no longer passes rw by default: {argv[1]}'

    opts, fstype, source, _ = mountinfo_of(tmp_path / 'info1')
    assert fstype == 'fuse.tiledbfs' and source == case.array and 'ro' in opts, (opts, fstype, source)
    check_reads(case, paths, out)

    opts, fstype, source, _ = mountinfo_of(tmp_path / 'info2')
    assert 'ro' in opts and 'rw' not in opts, f'mount -t fuse.tiledbfs without options: {opts}'
    listing = (tmp_path / 'ls2').read_text().split()
    assert '__staging' not in listing, listing
    assert 'Read-only file system' in (tmp_path / 'mkdir2').read_text(), \
        (tmp_path / 'mkdir2').read_text()
    assert b'made' not in r.stdout
    assert not os.path.exists(tmp_path / 'copy' / '.array.tiledbfs-staging'), \
        'a staging folder was made for a read-only mount'


def test_fstab(corpus, build_dir, tmp_path):
    """fstab lines of type fuse.tiledbfs: ro,allow_other; rw with the options
    mount(8) and mount.fuse3 hand on (read-only: rw is mount's default);
    writable (writes)."""
    need_root_mounts()
    case = get_case('dense_1d_basic')
    copy = copy_array(case, tmp_path / 'copy' / 'array')
    m1, m2, m3, out = (tmp_path / n for n in ('m1', 'm2', 'm3', 'out'))
    for d in (m1, m2, m3, out):
        d.mkdir()
    for p in (case.array, copy, str(tmp_path)):
        assert not re.search(r'\s', p), f'{p}: white space in an fstab test path'
    fstab = tmp_path / 'fstab'
    fstab.write_text(
        f'{case.array} {m1} fuse.tiledbfs ro,allow_other 0 0\n'
        f'{copy} {m2} fuse.tiledbfs rw,nodev,nosuid,noexec,nodiratime,relatime,lazytime,'
        f'nosymfollow,nofail,_netdev,noauto,x-tiledbfs.test=1,cache_size=4M 0 0\n'
        f'{copy} {m3} fuse.tiledbfs writable,nodev 0 0\n')
    paths = case.expected_paths
    script = (f'mount --fstab {q(fstab)} {q(m1)}\n'
              f'grep " {m1} " /proc/self/mountinfo > {q(tmp_path)}/info1\n'
              + read_script(str(m1), paths, out) +
              f'mount --fstab {q(fstab)} {q(m2)}\n'
              f'grep " {m2} " /proc/self/mountinfo > {q(tmp_path)}/info2\n'
              f'ls -a {q(m2)} > {q(tmp_path)}/ls2\n'
              f'cat {q(m2)}/a > {q(tmp_path)}/a2\n'
              f'umount {q(m2)}\n'
              f'mount --fstab {q(fstab)} {q(m3)}\n'
              f'grep " {m3} " /proc/self/mountinfo > {q(tmp_path)}/info3\n'
              f'mkdir {q(m3)}/__staging/new\n'
              f'ls -a {q(m3)} {q(m3)}/__staging > {q(tmp_path)}/ls3\n')
    r = in_mount_namespace(tmp_path, script, [str(m1), str(m2), str(m3)])
    assert r.returncode == 0, f'script failed: {r.stderr.decode(errors="replace")}'

    argv = argv_logs(tmp_path)
    assert len(argv) == 3, argv
    o1, o2, o3 = (set(a[3].split(',')) for a in argv)
    assert {'ro', 'allow_other'} <= o1, o1
    assert {'nofail', '_netdev', 'noauto', 'x-tiledbfs.test=1'}.isdisjoint(o2), \
        f'options mount(8)/mount.fuse3 should have removed reached tiledbfs: {o2}'
    assert {'rw', 'nodiratime', 'lazytime', 'nosymfollow', 'cache_size=4M'} <= o2, o2

    opts, fstype, source, sopts = mountinfo_of(tmp_path / 'info1')
    assert fstype == 'fuse.tiledbfs' and source == case.array, (fstype, source)
    assert 'ro' in opts and 'allow_other' in sopts, (opts, sopts)
    check_reads(case, paths, out)

    opts, _, _, _ = mountinfo_of(tmp_path / 'info2')
    assert 'ro' in opts and {'noexec', 'nodev', 'nosuid'} <= opts, opts
    assert '__staging' not in (tmp_path / 'ls2').read_text().split()
    assert (tmp_path / 'a2').read_bytes() == case.expected('a')

    opts, _, source, _ = mountinfo_of(tmp_path / 'info3')
    assert 'rw' in opts and source == copy, opts
    ls3 = (tmp_path / 'ls3').read_text().split()
    assert '__staging' in ls3 and 'new' in ls3, ls3
    assert os.path.isdir(tmp_path / 'copy' / '.array.tiledbfs-staging' / 'new')


# -------------------------------------------------------------- -o log=

def damaged_copy(tmp_path):
    """dense_1d_basic with attribute a's data file cut in half: reading a
    fails with EIO and logs the file and the tile."""
    case = get_case('dense_1d_basic')
    copy = copy_array(case, tmp_path / 'damaged' / 'array')
    frags = case.info['fragments']
    assert len(frags) == 1
    data = os.path.join(copy, '__fragments', frags[0], 'a0.tdb')
    os.truncate(data, os.path.getsize(data) // 2)
    return copy, data


def read_fails_eio(path):
    with pytest.raises(OSError) as e:
        with open(path, 'rb') as f:
            f.read()
    assert e.value.errno == errno.EIO, e.value


def test_log_stderr_when_daemonised(corpus, fs_prog, tmp_path):
    """-o log=stderr: the daemon, gone to the background, logs a damaged
    tile on the standard error it was started with."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    copy, data = damaged_copy(tmp_path)
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    errpath = tmp_path / 'daemon.err'
    with open(errpath, 'wb') as err:
        r = subprocess.run([fs_prog, '-o', 'log=stderr', copy, str(mnt)],
                           stdout=subprocess.DEVNULL, stderr=err, timeout=MOUNT_TIMEOUT)
    try:
        assert r.returncode == 0, f'tiledbfs -o log=stderr: exit {r.returncode}: {errpath.read_text()}'
        assert os.path.ismount(mnt), 'tiledbfs returned without mounting'
        assert daemons_on(str(mnt)), 'no daemon in the background'
        read_fails_eio(mnt / 'a')
    finally:
        subprocess.run(['fusermount3', '-u', str(mnt)], capture_output=True)
        stuck = wait_daemons_gone([str(mnt)])
    assert not stuck, f'daemon {stuck} did not exit after the unmount'
    log = errpath.read_text()
    assert re.search(r'^tiledbfs: read .*a0\.tdb.*tile', log, re.M), \
        f'no log line naming a0.tdb and the tile on stderr: {log!r}'


def test_log_syslog_in_foreground(corpus, build_dir, tmp_path):
    """-o log=syslog with -f: the damaged tile goes to syslog (a /dev/log
    socket of the test's, in a private mount namespace), not to stderr."""
    need_root_mounts()
    copy, data = damaged_copy(tmp_path)
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    dev = tmp_path / 'dev'
    dev.mkdir()
    for n in ('null', 'fuse'):
        (dev / n).touch()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(str(dev / 'log'))
        sock.setblocking(False)
        fs = os.path.join(BUILD, 'fuse', 'tiledbfs')
        script = (f'mount --bind /dev/null {q(dev)}/null\n'
                  f'mount --bind /dev/fuse {q(dev)}/fuse\n'
                  f'mount --rbind {q(dev)} /dev\n'
                  f'{q(fs)} -f -o log=syslog {q(copy)} {q(mnt)} 2> {q(tmp_path)}/fg.err &\n'
                  'pid=$!\n'
                  f'i=0; until mountpoint -q {q(mnt)}; do\n'
                  '  kill -0 $pid || exit 3; i=$((i + 1)); [ $i -lt 400 ] || exit 4; sleep 0.05\n'
                  'done\n'
                  f'if cat {q(mnt)}/a > /dev/null 2> {q(tmp_path)}/cat.err; then exit 5; fi\n'
                  f'umount {q(mnt)}\n'
                  'wait $pid\n')
        r = in_mount_namespace(tmp_path, script, [str(mnt)])
        msgs = []
        while True:
            try:
                msgs.append(sock.recv(65536).decode(errors='replace'))
            except BlockingIOError:
                break
    finally:
        sock.close()
    fg_err = (tmp_path / 'fg.err').read_text() if (tmp_path / 'fg.err').exists() else ''
    assert r.returncode == 0, f'script exit {r.returncode}: {r.stderr!r}; tiledbfs: {fg_err!r}'
    assert 'Input/output error' in (tmp_path / 'cat.err').read_text()
    hits = [m for m in msgs if re.search(r'tiledbfs\[\d+\]: read .*a0\.tdb.*tile', m)]
    assert hits, f'no syslog message naming a0.tdb and the tile: {msgs!r}'
    assert 'a0.tdb' not in fg_err, f'logged on stderr too: {fg_err!r}'


def test_log_bad_value(corpus, fs_prog, tmp_path):
    case = get_case('dense_1d_basic')
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    r = subprocess.run([fs_prog, '-f', '-o', 'log=journal', case.array, str(mnt)],
                       capture_output=True, timeout=MOUNT_TIMEOUT)
    assert r.returncode == 1 and not os.path.ismount(mnt)
    err = r.stderr.decode(errors='replace')
    assert 'log=journal' in err and 'syslog or stderr' in err, err
