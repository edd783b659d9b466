"""test_sparse_merge.py: the sparse merge end to end.  Many overlapping
fragments of random cells, written with tiledbfs's own writer (tiledbfs-create,
a -o rw mount, staged files, mv to commit), are read back through a read-only
mount: every field file must equal a reference merge computed here (global
order: row-major tiles, row-major cells; without duplicates the newest
fragment's cell wins, with them the newest comes first), read whole, at random
offsets, and by threads reading at once."""
import json
import os
import random
import threading
import time

import numpy as np
import pytest

from conftest import run_cat

R, C, TR, TC = 300, 200, 32, 64     # domain [0, R) x [0, C), tiles TR x TC
NFRAG = 16


def schema(dups):
    return {"array_type": "sparse", "tile_order": "row-major", "cell_order": "row-major",
            "capacity": 500, "allows_duplicates": dups,
            "dims": [{"name": "y", "datatype": "INT64", "domain": [0, R - 1],
                      "tile_extent": TR, "filters": [{"type": "ZSTD", "level": -1}]},
                     {"name": "x", "datatype": "INT64", "domain": [0, C - 1],
                      "tile_extent": TC, "filters": []}],
            "attrs": [{"name": "v", "datatype": "INT64", "cell_val_num": 1,
                       "nullable": False, "filters": [{"type": "ZSTD", "level": 1}]}],
            "version": 22}


def make_array(create_prog, mount, tmp_path, dups, seed):
    """The array and, per fragment in commit order, its cells (y, x, v)."""
    out = str(tmp_path / 'arr')
    sj = tmp_path / 'schema.json'
    sj.write_text(json.dumps({"schema": schema(dups)}))
    import subprocess
    subprocess.run([create_prog, str(sj), out], check=True)
    mnt = mount(out, ['rw', f'staging_dir={tmp_path / "stg"}'])
    rng = np.random.default_rng(seed)
    frags = []
    for f in range(NFRAG):
        n = int(rng.integers(1, 6000))
        if f == NFRAG // 2:     # one block of consecutive cells: long runs
            k = np.arange(40 * C, 90 * C, dtype=np.int64)
        else:                   # distinct inside a fragment, shared across
            k = rng.choice(R * C, size=n, replace=False).astype(np.int64)
        y, x = k // C, k % C
        v = np.arange(len(k), dtype=np.int64) + f * 1_000_000
        d = os.path.join(mnt, '__staging', f'f{f}')
        os.mkdir(d)
        y.astype('<i8').tofile(os.path.join(d, 'y'))
        x.astype('<i8').tofile(os.path.join(d, 'x'))
        v.astype('<i8').tofile(os.path.join(d, 'v'))
        os.rename(d, os.path.join(mnt, '__fragments', f'f{f}'))
        frags.append((y, x, v))
        time.sleep(0.01)        # a timestamp of its own (ms)
    assert not mount.unmount(mnt)
    return out, frags


def reference(frags, dups):
    """The merged cells: y, x, v arrays."""
    y = np.concatenate([f[0] for f in frags])
    x = np.concatenate([f[1] for f in frags])
    v = np.concatenate([f[2] for f in frags])
    age = np.concatenate([np.full(len(f[0]), -i, dtype=np.int64) for i, f in enumerate(frags)])
    # sort by tile (row-major), then cell (row-major), then newest first
    order = np.lexsort((age, x, y, x // TC, y // TR))
    y, x, v = y[order], x[order], v[order]
    if not dups:
        keep = np.ones(len(y), dtype=bool)
        keep[1:] = (y[1:] != y[:-1]) | (x[1:] != x[:-1])
        y, x, v = y[keep], x[keep], v[keep]
    return {'y': y.astype('<i8').tobytes(), 'x': x.astype('<i8').tobytes(),
            'v': v.astype('<i8').tobytes()}


def read_at(path, off, n):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, n, off)
    finally:
        os.close(fd)


@pytest.mark.parametrize('dups', [False, True], ids=['no-dups', 'dups'])
def test_merge_many_fragments(dups, create_prog, cat_prog, mount, tmp_path):
    out, frags = make_array(create_prog, mount, tmp_path, dups, 7 if dups else 8)
    want = reference(frags, dups)
    mnt = mount(out)
    rnd = random.Random(3)
    # random reads first, on a fresh mount
    for name in ('v', 'y'):
        p = os.path.join(mnt, name)
        size = os.path.getsize(p)
        assert size == len(want[name])
        for _ in range(100):
            off = rnd.randrange(size)
            n = rnd.choice([1, 7, 4096, 65536, 300000])
            assert read_at(p, off, n) == want[name][off:off + n], (name, off, n)
    # whole files
    for name in ('v', 'y', 'x'):
        with open(os.path.join(mnt, name), 'rb') as f:
            assert f.read() == want[name], name
    # threads reading different files and places at once
    errors = []

    def reader(name, seed):
        r = random.Random(seed)
        p = os.path.join(mnt, name)
        data = want[name]
        try:
            for _ in range(60):
                off = r.randrange(len(data))
                n = r.choice([4096, 131072])
                got = read_at(p, off, n)
                if got != data[off:off + n]:
                    errors.append((name, off, n))
        except OSError as e:
            errors.append((name, str(e)))

    threads = [threading.Thread(target=reader, args=(n, i))
               for i, n in enumerate(['v', 'y', 'x', 'v'])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # the same bytes without FUSE
    r = run_cat(cat_prog, out, 'v')
    assert r.returncode == 0 and r.stdout == want['v']
