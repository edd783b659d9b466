"""test_autocons.py: -o consolidate=N on a -o rw mount (README "Keeping an array healthy"): once a commit leaves more than N fragments the daemon consolidates fragment metadata and commits at once and the fragments on a thread, the view's bytes never change, a file opened before keeps reading the old fragments, which are vacuumed once it is closed; the option needs rw."""
import os
import struct
import subprocess
import time

from conftest import find_program, make_sample, run_cat
from test_delete_fragment import wait_for
from test_write import read_file

ROWS, COLS = 8, 6


def commit_rows(mnt, name, r0, r1, value):
    """Rows r0..r1 (all columns) of temperature and count, as a fragment."""
    d = os.path.join(mnt, '__staging', name)
    os.mkdir(d)
    n = (r1 - r0 + 1) * COLS
    with open(os.path.join(d, 'temperature'), 'wb') as f:
        f.write(struct.pack(f'<{n}d', *([value] * n)))
    with open(os.path.join(d, 'count'), 'wb') as f:
        f.write(struct.pack(f'<{n}i', *range(n)))
    with open(os.path.join(d, '__subarray.json'), 'w') as f:
        f.write(f'[[{r0}, {r1}], [0, {COLS - 1}]]')
    os.rename(d, os.path.join(mnt, '__fragments', name))


def test_consolidate_after_commits(mount, cat_prog, tmp_path):
    """consolidate=3: three commits leave 4 fragments; the daemon merges
    them into one (TileDB's rule: the 4 cover the whole domain), the view
    shows the same bytes before, during and after; a file of the view
    opened before reads its old bytes, and the merged fragments' folders
    and the .vac go once it is closed; the log says each step."""
    arr = make_sample(tmp_path, f'{ROWS}x{COLS}', '2x6')
    log = tmp_path / 'tiledbfs.log'
    mnt = mount(arr, ['rw', 'consolidate=3', f'log={log}'])
    commit_rows(mnt, 'a', 0, 1, 1.0)
    commit_rows(mnt, 'b', 2, 3, 2.0)
    held = open(os.path.join(mnt, 'temperature'), 'rb')
    before = read_file(os.path.join(mnt, 'temperature'))
    commit_rows(mnt, 'c', 4, 5, 3.0)     # 4 fragments: more than 3
    want = read_file(os.path.join(mnt, 'temperature'))
    assert want != before and len(want) == ROWS * COLS * 8
    frags = os.path.join(arr, '__fragments')
    assert wait_for(lambda: 'fragments: 4 merged into' in log.read_text()), log.read_text()
    assert wait_for(lambda: len(os.listdir(os.path.join(mnt, '__fragments'))) == 1)
    assert read_file(os.path.join(mnt, 'temperature')) == want
    assert run_cat(cat_prog, arr, 'temperature').stdout == want
    # the file opened before the last commit keeps its view; the old
    # folders stay while it is open
    assert held.read() == before
    time.sleep(0.3)
    assert len(os.listdir(frags)) == 5
    held.close()
    assert wait_for(lambda: len(os.listdir(frags)) == 1), os.listdir(frags)
    commits = os.listdir(os.path.join(arr, '__commits'))
    assert not [c for c in commits if c.endswith('.vac')], commits
    text = log.read_text()
    assert 'fragment_meta: 4 merged into' in text and 'commits: 4 merged into' in text, text
    assert 'vacuum of fragments: removed' in text, text
    fresh = mount(arr, [])
    assert read_file(os.path.join(fresh, 'temperature')) == want
    # a fourth commit: 2 fragments, not more than 3: nothing more
    commit_rows(mnt, 'd', 6, 7, 4.0)
    time.sleep(0.3)
    assert len(os.listdir(frags)) == 2


def test_consolidate_needs_rw(tmp_path):
    """consolidate= without rw is refused at start-up, saying why."""
    arr = make_sample(tmp_path, f'{ROWS}x{COLS}', '2x6')
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    r = subprocess.run([find_program(os.path.join('fuse', 'tiledbfs')), '-o',
                        'consolidate=3', arr, str(mnt)], capture_output=True, timeout=30)
    assert r.returncode != 0 and b'consolidate= needs -o rw' in r.stderr, r.stderr
    r = subprocess.run([find_program(os.path.join('fuse', 'tiledbfs')), '-o',
                        'rw,consolidate=0', arr, str(mnt)], capture_output=True, timeout=30)
    assert r.returncode != 0 and b'consolidate=0' in r.stderr, r.stderr
