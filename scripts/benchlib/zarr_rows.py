"""Issue 31's __zarr rows: numpy against xarray on the ZSTD-3 array, and
zarr.open_consolidated against ls and os.listdir on 1,000 fragments, each
run on a fresh mount."""
import os
import statistics
import subprocess
import sys
import time

from benchlib.mounts import Mount
from benchlib.procs import warm_files

# Each client runs in a Python of its own (sys.executable, the system
# python3 with Debian's numpy, xarray, dask and zarr) and does its work
# once on a tiny store in a local temporary folder before the clock
# starts: zarr imports fsspec at its first open (26 ms here, on a local
# folder too) and xarray its backends at its first open_zarr, which are
# the client's start-up, not the mount's.  The figure is the reads and the
# sum alone; it prints `SECONDS RESULT NOTE`.
ZARR_CLIENT = r'''
import os, sys, tempfile, time
import numpy
what, path = sys.argv[1], sys.argv[2]
note = '-'
tmp = tempfile.TemporaryDirectory()
local = os.path.join(tmp.name, 'z')
if what == 'numpy':
    numpy.zeros(16, '<f4').tofile(local)
    def run(p):
        return float(numpy.fromfile(p, dtype='<f4').sum()), note
elif what == 'xarray':
    import dask, xarray
    dask.config.set(scheduler='threads')
    xarray.Dataset({'v': (('y', 'x'), numpy.zeros((4, 4), '<f4'))},
                   coords={'y': numpy.arange(4), 'x': numpy.arange(4)}).to_zarr(local)
    def run(p):
        v = xarray.open_zarr(p)['v']
        return float(v.sum().compute()), 'x'.join(str(c) for c in v.data.chunksize)
elif what == 'listdir':
    os.mkdir(local)
    def run(p):
        return len(os.listdir(p)), note
else:
    import zarr
    zarr.consolidate_metadata(zarr.open_group(local, mode='w').store)
    def run(p):
        names = sorted(zarr.open_consolidated(p).array_keys())
        return len(names), ','.join(names) or '-'
run(local)
t = time.perf_counter()
s, note = run(path)
print(time.perf_counter() - t, s, note)
'''


def zarr_client(what, path):
    """Runs ZARR_CLIENT `what` on path; @return (seconds, result, note)."""
    r = subprocess.run([sys.executable, '-c', ZARR_CLIENT, what, path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f'bench: the {what} client on {path} failed: '
                         f'{r.stderr.strip()[-600:]}')
    secs, result, note = r.stdout.split()[-3:]
    return float(secs), float(result), note


def zarr_sum_rows(run, n):
    """numpy.fromfile of v and its sum against
    xarray.open_zarr(__zarr)["v"].sum() with dask on the ZSTD-3 array of
    --size-mib, n pairs whose order alternates."""
    res = run.res
    src = run.arrays['zstd']
    warm_files(src)
    nfrag = len(os.listdir(os.path.join(src, '__fragments')))
    label = f'ZSTD-3 {run.a.size_mib} MiB ({nfrag} fragments)'
    t = {'numpy': [], 'xarray': []}
    sums, chunks = {}, set()
    for i in range(n):
        for what in ('numpy', 'xarray') if i % 2 == 0 else ('xarray', 'numpy'):
            with Mount(run, src) as m:
                path = m.path('v' if what == 'numpy' else '__zarr')
                secs, s, note = zarr_client(what, path)
            t[what].append(secs)
            sums.setdefault(what, s)
            if what == 'xarray':
                chunks.add(note)
    # the same cells summed two ways: float32 sums in other orders differ
    # by rounding alone
    if abs(sums['numpy'] - sums['xarray']) > 1e-3 * abs(sums['numpy']):
        raise SystemExit(f'bench: numpy and xarray disagree on the sum of v: {sums}')
    res.add('zarr.numpy', f'{label}: fresh mount, numpy.fromfile(v).sum()', 's',
            t['numpy'], f'{n} runs')
    res.add('zarr.xarray', f'{label}: fresh mount, xarray.open_zarr(__zarr)["v"].sum() '
            '(dask)', 's', t['xarray'], f'{n} runs; dask chunks {",".join(sorted(chunks))}, '
            'threaded scheduler; open_zarr included')
    res.add('zarr.ratio', f'{label}: numpy time / xarray time', 'x',
            [statistics.median(t['numpy']) / statistics.median(t['xarray'])],
            'ratio of medians; target >= 0.8')
    # a pair's two runs are next to each other in time: their ratio is
    # steadier than the medians' when others load the machine in bursts
    res.add('zarr.ratio_pairs', f'{label}: numpy time / xarray time, each pair', 'x',
            [a_ / b_ for a_, b_ in zip(t['numpy'], t['xarray'])], 'ratio within each pair')


def zarr_open_run(run, src, what, t):
    """One `what` (zarr, ls, listdir) of a fresh mount of src, its seconds
    appended to t[what]: @return the zarr client's note (the arrays of
    __zarr), or None."""
    with Mount(run, src) as m:
        if what == 'ls':
            t0 = time.perf_counter()
            subprocess.run(['ls', m.mnt], stdout=subprocess.DEVNULL, check=True)
            t['ls'].append(time.perf_counter() - t0)
            return None
        secs, _, note = zarr_client(what, m.path('__zarr') if what == 'zarr' else m.mnt)
        if what == 'zarr' and 'v' not in note.split(','):
            raise SystemExit(f'bench: __zarr of {src} has no array v: {note}')
        t[what].append(secs)
        return note if what == 'zarr' else None


def zarr_open_rows(run, n):
    """zarr.open_consolidated of __zarr and its list of arrays against
    `ls MOUNT` and os.listdir(MOUNT) on the 1,000-fragment array, n turns
    of the three (the first of each turn rotating)."""
    res = run.res
    src = run.arrays['many1000']
    warm_files(src)
    nfrag = len(os.listdir(os.path.join(src, '__fragments')))
    label = f'{nfrag} fragments'
    # ls is mostly its own start (fork, exec, libraries): os.listdir in a
    # client, timed as the zarr client is, is the mount's part alone
    whats = ('zarr', 'ls', 'listdir')
    t = {w: [] for w in whats}
    names = None
    for i in range(n):
        for what in whats[i % 3:] + whats[:i % 3]:
            names = zarr_open_run(run, src, what, t) or names
    res.add('zarr.open', f'{label}: fresh mount, zarr.open_consolidated(__zarr) + its '
            'arrays', 's', t['zarr'], f'{n} runs; arrays {names}')
    res.add('zarr.ls', f'{label}: fresh mount, ls MOUNT', 's', t['ls'],
            f'{n} runs; the process ls included')
    res.add('zarr.listdir', f'{label}: fresh mount, os.listdir(MOUNT)', 's', t['listdir'],
            f'{n} runs; ls without its process')
    res.add('zarr.open_vs_ls', f'{label}: open_consolidated / ls', 'x',
            [statistics.median(t['zarr']) / statistics.median(t['ls'])],
            'ratio of medians; target <= 2')
    res.add('zarr.open_vs_listdir', f'{label}: open_consolidated / os.listdir', 'x',
            [statistics.median(t['zarr']) / statistics.median(t['listdir'])],
            'ratio of medians')


def measure_zarr(run):
    """Issue 31's rows, each on a fresh mount (an empty page cache of the
    mounted files; the array's own files warm): zarr_sum_rows, then
    zarr_open_rows."""
    # a few seconds a run, on 2 shared cores: more runs than the bench's
    # repeats steady the medians
    n = 2 * run.a.repeats + 1
    zarr_sum_rows(run, n)
    zarr_open_rows(run, n)
    return run.res
