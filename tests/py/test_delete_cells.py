"""test_delete_cells.py: cells deleted by a condition through a -o rw mount (README "Writing", "Deleting cells"): a staged folder holding one file __delete, moved into __fragments, commits TileDB's delete commit; the view drops the cells at once and a fresh mount and tiledbfs-cat agree; a condition that does not parse or names an unknown field is EBADMSG with the reason in __error and writes nothing; on a folder and in every object store (both S3 servers and Azurite)."""
import errno
import os
import shutil
import uuid

import numpy as np

from conftest import get_case, run_cat
from test_write import read_file

FIELDS = ('x', 'y', 'a', 's', 's.offsets')


def view(read):
    """sparse_delete's cells as read(path) shows them: (x, y, a, strings)."""
    x = np.frombuffer(read('x'), '<i4')
    y = np.frombuffer(read('y'), '<i4')
    a = np.frombuffer(read('a'), '<i4')
    off = list(np.frombuffer(read('s.offsets'), '<u8')) + [len(read('s'))]
    data = read('s')
    s = [data[off[i]:off[i + 1]] for i in range(len(a))]
    return x, y, a, s


def kept(before, keep):
    """The cells of `before` for which keep(x, y, a, s) holds."""
    x, y, a, s = before
    idx = [i for i in range(len(a)) if keep(int(x[i]), int(y[i]), int(a[i]), s[i])]
    return x[idx], y[idx], a[idx], [s[i] for i in idx]


def same(v, w):
    return (np.array_equal(v[0], w[0]) and np.array_equal(v[1], w[1])
            and np.array_equal(v[2], w[2]) and v[3] == w[3])


def stage_delete(mnt, text, name='del'):
    d = os.path.join(mnt, '__staging', name)
    os.mkdir(d)
    with open(os.path.join(d, '__delete'), 'w') as f:
        f.write(text)
    return d


def commit(mnt, name='del'):
    """mv of staged folder name into __fragments: 0 or the errno."""
    try:
        os.rename(os.path.join(mnt, '__staging', name),
                  os.path.join(mnt, '__fragments', name))
        return 0
    except OSError as e:
        return e.errno


def dels(commits):
    return sorted(f for f in os.listdir(commits) if f.endswith('.del'))


def test_delete_by_condition(mount, cat_prog, tmp_path):
    """a < 0 or s == 'x3' deletes those cells (the corpus's delete at 3
    kept, the new one after every fragment): the mount shows the other
    cells at once, in the same order, and tiledbfs-cat and a fresh mount
    show the same; one .del is added."""
    arr = tmp_path / 'array'
    shutil.copytree(get_case('sparse_delete').array, arr)
    mnt = mount(str(arr), ['rw'])
    before = view(lambda p: read_file(os.path.join(mnt, p)))
    old = dels(arr / '__commits')
    cond = "a < 0 or s == 'x3'"
    stage_delete(mnt, cond)
    assert commit(mnt) == 0
    want = kept(before, lambda x, y, a, s: not (a < 0 or s == b'x3'))
    assert len(want[2]) < len(before[2])
    assert same(view(lambda p: read_file(os.path.join(mnt, p))), want)
    new = dels(arr / '__commits')
    assert len(new) == len(old) + 1
    assert not os.path.exists(os.path.join(mnt, '__staging', 'del'))
    cat = view(lambda p: run_cat(cat_prog, str(arr), p, []).stdout)
    assert same(cat, want)
    fresh = mount(str(arr))
    assert same(view(lambda p: read_file(os.path.join(fresh, p))), want)


def test_delete_syntax(mount, tmp_path):
    """in, not, is None's refusal on a non-nullable field, dim(), and
    parentheses, one delete after the other, each against the view
    before it."""
    arr = tmp_path / 'array'
    shutil.copytree(get_case('sparse_delete').array, arr)
    mnt = mount(str(arr), ['rw'])
    steps = [
        ("x in [1, 2] and not (y > 3)", lambda x, y, a, s: not (x in (1, 2) and not y > 3)),
        ("dim('y') == 4 | attr('a') >= 10", lambda x, y, a, s: not (y == 4 or a >= 10)),
    ]
    for i, (cond, keep) in enumerate(steps):
        before = view(lambda p: read_file(os.path.join(mnt, p)))
        stage_delete(mnt, cond, f'd{i}')
        assert commit(mnt, f'd{i}') == 0, cond
        got = view(lambda p: read_file(os.path.join(mnt, p)))
        assert same(got, kept(before, keep)), cond


def test_refused(mount, tmp_path):
    """A condition that does not parse, names an unknown field or a value
    its field cannot hold, or shares its folder with data files: mv fails
    with EBADMSG, __error says why, the staged folder stays and no delete
    is written; a dense array is refused the same way."""
    arr = tmp_path / 'array'
    shutil.copytree(get_case('sparse_delete').array, arr)
    mnt = mount(str(arr), ['rw'])
    old = dels(arr / '__commits')
    cases = [
        ('a <', 'want a value'),
        ('nosuch == 1', "no attribute or dimension 'nosuch'"),
        ("a == 'x'", 'holds numbers'),
        ('a is None', 'not nullable'),
    ]
    for i, (cond, why) in enumerate(cases):
        d = stage_delete(mnt, cond, f'bad{i}')
        assert commit(mnt, f'bad{i}') == errno.EBADMSG, cond
        err = open(os.path.join(d, '__error')).read()
        assert why in err, (cond, err)
        assert os.path.exists(os.path.join(d, '__delete'))
    d = stage_delete(mnt, 'a < 0', 'mixed')
    with open(os.path.join(d, 'a'), 'wb') as f:
        f.write(b'\0\0\0\0')
    assert commit(mnt, 'mixed') == errno.EBADMSG
    assert 'alone in its folder' in open(os.path.join(d, '__error')).read()
    assert dels(arr / '__commits') == old
    dense = tmp_path / 'dense'
    shutil.copytree(get_case('dense_fragments_overlap').array, dense)
    dm = mount(str(dense), ['rw'])
    d = stage_delete(dm, 'a < 0')
    assert commit(dm) == errno.EBADMSG
    assert 'sparse arrays only' in open(os.path.join(d, '__error')).read()


def test_s3_delete(store_server, mount, cat_prog, tmp_path):
    """The same gesture on an s3:// (azure://) array: one .del key is added
    and the view drops the cells, through the mount and tiledbfs-cat of the
    URL."""
    s3 = store_server
    prefix = f'delcells-{uuid.uuid4().hex[:12]}/array'
    s3.upload(str(get_case('sparse_delete').array), prefix)
    url = s3.url(prefix)
    mnt = mount(url, ['rw', f'staging_dir={tmp_path / "staging"}'])
    before = view(lambda p: read_file(os.path.join(mnt, p)))
    n0 = len([k for k in s3.client.keys(f'{prefix}/__commits/') if k.endswith('.del')])
    stage_delete(mnt, 'a >= 5')
    assert commit(mnt) == 0
    want = kept(before, lambda x, y, a, s: not a >= 5)
    assert same(view(lambda p: read_file(os.path.join(mnt, p))), want)
    n1 = len([k for k in s3.client.keys(f'{prefix}/__commits/') if k.endswith('.del')])
    assert n1 == n0 + 1
    assert same(view(lambda p: run_cat(cat_prog, url, p, []).stdout), want)
