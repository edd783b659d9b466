"""test_logging.py: where the daemon's log lines go (README "Options", -o log=): the reason of a damaged tile's EIO is written where --help says, with no syslog listening (a mount namespace without /dev/log: the file /var/log/tiledbfs.log), and in a log=FILE."""
import errno
import os
import subprocess

import pytest

from conftest import CAT_TIMEOUT, MOUNT_TIMEOUT, fuse_missing, get_case, private_mount_ns_missing
from test_errors import copy_case, data_file

# Run inside a mount namespace of its own: /dev/log hidden (an empty file
# bound over it, so nothing can connect; nothing to do where it is
# missing), /var/log a folder of the test's; the daemon started as an
# ordinary mount (it goes to the background; its messages captured
# through a pipe, which it must not keep open), the damaged file read
# through the mount, then unmounted.
SCRIPT = r'''
set -u
if [ -e /dev/log ] || [ -L /dev/log ]; then
    mount --bind "$EMPTY" /dev/log || exit 90
fi
mount --bind "$VARLOG" /var/log || exit 89
msg=$("$PROG" "$SRC" "$MNT" 2>&1) || { printf '%s\n' "$msg"; exit 91; }
printf '%s\n' "$msg" > "$ERR"
i=0
while ! mountpoint -q "$MNT"; do
    i=$((i + 1)); [ $i -gt 400 ] && exit 92; sleep 0.05
done
cat "$MNT/a" >/dev/null 2>"$CATERR"; echo "cat=$?"
fusermount3 -u "$MNT" || exit 93
exit 0
'''


def damaged_array(tmp_path):
    """A copy of dense_1d_basic whose data file of `a` is cut in half: a
    read of `a` fails with EIO, and the log names the file and the tile."""
    case = get_case('dense_1d_basic')
    array = copy_case(case, tmp_path)
    path = data_file(array, case, 'a')
    os.truncate(path, os.path.getsize(path) // 2)
    return array, os.path.basename(path)


def help_text(fs_prog):
    r = subprocess.run([fs_prog, '--help'], capture_output=True, timeout=CAT_TIMEOUT)
    return ' '.join(r.stdout.decode().split())


def test_no_syslog_logs_to_a_file(fs_prog, tmp_path):
    """With nothing listening at /dev/log, the daemon (default log=, in the
    background) says at start where it logs instead, /var/log/tiledbfs.log
    for root as --help says, and the reason of a damaged tile's EIO is
    there."""
    why = fuse_missing()
    if why:
        pytest.skip(f'no FUSE here: {why}')
    why = private_mount_ns_missing()
    if why:
        pytest.skip(f'hiding /dev/log needs a private mount namespace: {why}')
    assert 'when no syslog listens at /dev/log, the file /var/log/tiledbfs.log (root)' \
        in help_text(fs_prog), help_text(fs_prog)
    array, fname = damaged_array(tmp_path)
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    empty = tmp_path / 'empty'
    empty.write_bytes(b'')
    varlog = tmp_path / 'varlog'
    varlog.mkdir()
    err = tmp_path / 'daemon.stderr'
    env = dict(os.environ, PROG=fs_prog, SRC=array, MNT=str(mnt), ERR=str(err),
               EMPTY=str(empty), VARLOG=str(varlog), CATERR=str(tmp_path / 'cat.stderr'))
    r = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', SCRIPT],
                       env=env, capture_output=True, timeout=MOUNT_TIMEOUT * 4)
    out = r.stdout.decode(errors='replace') + r.stderr.decode(errors='replace')
    assert r.returncode == 0, f'exit {r.returncode}: {out}'
    assert 'cat=1' in out, out
    cat_err = (tmp_path / 'cat.stderr').read_text()
    assert os.strerror(errno.EIO) in cat_err, cat_err
    said = err.read_text(errors='replace')
    assert 'syslog cannot be reached' in said and \
        'logging to /var/log/tiledbfs.log' in said, said
    log = (varlog / 'tiledbfs.log').read_text(errors='replace')
    assert fname in log and 'tile' in log, log
    assert fname not in said, said


def test_log_file(fs_prog, mount, tmp_path):
    """log=FILE: the reason of a damaged tile's EIO is appended to FILE,
    one stamped line, whatever syslog does."""
    array, fname = damaged_array(tmp_path)
    logfile = tmp_path / 'tiledbfs.log'
    logfile.write_text('an earlier line\n')
    mnt = mount(array, ['log=' + str(logfile)])
    with pytest.raises(OSError) as e:
        with open(os.path.join(mnt, 'a'), 'rb') as f:
            f.read()
    assert e.value.errno == errno.EIO
    mount.unmount(mnt)
    text = logfile.read_text(errors='replace')
    assert text.startswith('an earlier line\n'), text
    lines = text.splitlines()[1:]
    assert lines and all(' tiledbfs[' in line for line in lines), text
    assert any(fname in line and 'tile' in line for line in lines), text


def test_log_option_checked(fs_prog, tmp_path):
    """A log= that is not syslog, stderr or a path is refused before
    mounting; so is a file that cannot be opened."""
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    case = get_case('dense_1d_basic')
    for value, says in (('nowhere', 'not syslog or stderr, nor a file'),
                        (str(tmp_path / 'no' / 'such' / 'file'), 'No such file')):
        r = subprocess.run([fs_prog, '-f', '-o', 'log=' + value, case.array, str(mnt)],
                           capture_output=True, timeout=CAT_TIMEOUT)
        assert r.returncode == 1 and says in r.stderr.decode(), r.stderr
        assert not os.path.ismount(str(mnt))
