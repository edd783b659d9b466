"""The write rows of a local array: the commit of one dense fragment
through a -o rw mount (against TileDB's own write), and issue 28's rows:
consolidate + vacuum (every mode) of the dense ZSTD-3 array and of the
sparse one in 20 fragments, by tiledbfs-consolidate and
(TILEDBFS_BENCH_TILEDB_CONSOLIDATE) by TileDB, then the cold read of the
consolidated sparse array against the one-fragment one."""
import os
import shutil
import statistics
import time

import bench_arrays
from benchlib.context import COLS, TILE
from benchlib.probes import tiledb_mbps, tiledb_prog
from benchlib.procs import mb, timed_rss, warm_files
from benchlib.sparse_rows import sparse_cold


def commit_rows(run):
    """The commit of one dense ZSTD fragment of --size-mib: its staging
    through a fresh -o rw mount and the mv into __fragments; then TileDB's
    own write of the same array."""
    a, res = run.a, run.res
    size = a.size_mib << 20
    rows = size // (COLS * 4)
    out = os.path.join(run.work, 'commit-array')
    shutil.rmtree(out, ignore_errors=True)
    import numpy as np
    data = bench_arrays.dense_rows(0, rows, COLS, np.random.default_rng(3)).astype('<f4')
    stage_t, commit_t = [], []
    for _ in range(a.repeats):
        shutil.rmtree(out, ignore_errors=True)
        with bench_arrays.RwMount(run.build.fs, run.build.create, out,
                                  bench_arrays.dense_schema(rows, COLS, TILE[0], TILE[1],
                                                            'zstd')) as m:
            d = m.stage('big')
            t0 = time.perf_counter()
            data.tofile(os.path.join(d, 'v'))
            stage_t.append(time.perf_counter() - t0)
            commit_t.append(m.commit('big'))
    shutil.rmtree(out, ignore_errors=True)
    del data
    res.add('commit.stage', f'ZSTD-3: stage {a.size_mib} MiB into __staging (write)', 'MB/s',
            [mb(size, s) for s in stage_t])
    res.add('commit.mbps', f'ZSTD-3: commit (mv) of one {a.size_mib} MiB dense fragment',
            'MB/s', [mb(size, s) for s in commit_t])
    res.add('commit.seconds', f'ZSTD-3: commit (mv) of one {a.size_mib} MiB dense fragment',
            's', commit_t)
    tiledb_write_rows(run)


def tiledb_write_rows(run):
    """TileDB's own write of the commit rows' array
    (TILEDBFS_BENCH_TILEDB_WRITE URI) and the commit against it."""
    a, res = run.a, run.res
    prog = tiledb_prog('TILEDBFS_BENCH_TILEDB_WRITE')
    t = []
    if prog:
        uri = os.path.join(run.work, 'tiledb-write-array')
        try:
            for _ in range(a.repeats):
                shutil.rmtree(uri, ignore_errors=True)
                t.append(tiledb_mbps(prog, [uri]))
        finally:
            shutil.rmtree(uri, ignore_errors=True)
    note = '' if prog else 'not measured (set TILEDBFS_BENCH_TILEDB_WRITE)'
    res.add('commit.tiledb', f'ZSTD-3: TileDB write of the {a.size_mib} MiB array', 'MB/s',
            t, note)
    res.add('commit.vs_tiledb', 'ZSTD-3: commit / TileDB write', 'x',
            [statistics.median(res.values('commit.mbps')) / statistics.median(t)]
            if t else [], 'ratio of medians; target >= 3' if prog else note)


def cons_runs(run, key, who, cmd):
    """a.repeats runs of cmd on a fresh copy of array key (its files warm):
    @return ([seconds], [peak RSS MiB], fragments left).  The last copy of
    sparse20 consolidated by ours is kept as cons-sparse20.after."""
    secs, rss = [], []
    for _ in range(run.a.repeats):
        copy = os.path.join(run.work, 'cons-' + key)
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(run.arrays[key], copy)
        warm_files(copy)
        s, m = timed_rss(cmd + [copy])
        secs.append(s)
        rss.append(m)
        nfrag = len(os.listdir(os.path.join(copy, '__fragments')))
        if key == 'sparse20' and who == 'ours':
            after = copy + '.after'
            shutil.rmtree(after, ignore_errors=True)
            os.rename(copy, after)
        else:
            shutil.rmtree(copy)
    return secs, rss, nfrag


def measure_cons(run):
    """Issue 28's rows: consolidate + vacuum (every mode) of the dense ZSTD-3
    array in 64 fragments and of the sparse one in 20, by
    tiledbfs-consolidate and (TILEDBFS_BENCH_TILEDB_CONSOLIDATE: a program
    `PROG URI` consolidating and vacuuming fragments, fragment_meta, commits
    and array_meta with TileDB's defaults) by TileDB, each on a fresh copy
    whose files are warm; then the sparse read after it."""
    a, res, arrays = run.a, run.res, run.arrays
    tdb = os.environ.get('TILEDBFS_BENCH_TILEDB_CONSOLIDATE')
    cons = os.path.join(run.build.top, 'tools', 'tiledbfs-consolidate')
    nfrag_zstd = len(os.listdir(os.path.join(arrays['zstd'], '__fragments')))
    for key, label in (('zstd', f'dense {a.size_mib} MiB ZSTD-3, {nfrag_zstd} fragments'),
                       ('sparse20', f'sparse {a.sparse_cells / 1e6:g} M cells, 20 fragments')):
        rows = {'ours': ([cons, '--vacuum'], 'tiledbfs-consolidate --vacuum')}
        if tdb:
            rows['tiledb'] = ([tdb], 'TileDB 2.29 consolidate + vacuum')
        for who, (cmd, what) in rows.items():
            secs, rss, nfrag = cons_runs(run, key, who, cmd)
            res.add(f'cons.{key}.{who}', f'{label}: {what} ({nfrag} left)', 's', secs)
            res.add(f'cons.{key}.{who}_rss', f'{label}: {what}, peak RSS', 'MiB', rss)
        if tdb:
            res.add(f'cons.{key}.speedup', f'{label}: TileDB / tiledbfs-consolidate', 'x',
                    [statistics.median(res.rows[f'cons.{key}.tiledb']['values'])
                     / statistics.median(res.rows[f'cons.{key}.ours']['values'])],
                    'ratio of medians; target >= 1.5')
    # the sparse read after it, against the one-fragment array
    t = {key: sparse_cold(run, src)[0]
         for key, src in (('sparse1', arrays['sparse1']),
                          ('after', os.path.join(run.work, 'cons-sparse20.after')))}
    res.add('cons.sparse1.mount_cold', f'sparse {a.sparse_cells / 1e6:g} M cells, '
            '1 fragment: fresh mount, stat + cat v', 'MB/s', t['sparse1'])
    res.add('cons.after.mount_cold', f'sparse {a.sparse_cells / 1e6:g} M cells, '
            '20 fragments consolidated: fresh mount, stat + cat v', 'MB/s', t['after'])
    res.add('cons.after.ratio', 'sparse: consolidated / 1 fragment', 'x',
            [statistics.median(t['after']) / statistics.median(t['sparse1'])],
            'ratio of medians; target >= 0.9')
    return res
