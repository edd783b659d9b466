"""The sparse rows: a sparse array's cells in one fragment and in 20
overlapping ones, each read by a fresh mount (stat, which builds the
merged order, and cat of v)."""
import os
import statistics
import time

from benchlib.mounts import Mount, timed_cat
from benchlib.probes import tiledb_rows
from benchlib.procs import mb, warm_files

SPARSE = (('sparse1', '1 fragment'), ('sparse20', '20 overlapping fragments'))


def sparse_cold(run, src):
    """Fresh mounts of sparse array src (its files warm), stat + cat v:
    @return MB/s and the first stat's seconds (the merge) of each run (fewer
    than a.repeats once one takes over a minute)."""
    warm_files(src)
    t, st = [], []
    for _ in range(run.a.repeats):
        with Mount(run, src) as m:
            # the stat builds the merged order: it is part of the read
            p = m.path('v')
            t0 = time.perf_counter()
            n = os.path.getsize(p)
            st.append(time.perf_counter() - t0)
            timed_cat([p])
            s = time.perf_counter() - t0
            t.append(mb(n, s))
        if s > 60:
            break
    return t, st


def measure_sparse(run):
    """The sparse rows (20 overlapping fragments vs one) into run.res."""
    a, res, arrays = run.a, run.res, run.arrays
    # sparse: 20 overlapping fragments vs one
    for key, label in SPARSE:
        t, st = sparse_cold(run, arrays[key])
        res.add(f'{key}.mount_cold', f'sparse {a.sparse_cells / 1e6:g} M cells, {label}: '
                'fresh mount, stat + cat v', 'MB/s', t)
        res.add(f'{key}.stat', f'sparse {a.sparse_cells / 1e6:g} M cells, {label}: '
                'of which the first stat (the merge)', 's', st)
    for key, label in SPARSE:
        tiledb_rows(res, key, f'sparse {a.sparse_cells / 1e6:g} M cells, {label}',
                    arrays[key], f'{key}.mount_cold', a.repeats)
    res.add('sparse.ratio', 'sparse: 1 fragment / 20 fragments', 'x',
            [statistics.median(res.rows['sparse1.mount_cold']['values'])
             / statistics.median(res.rows['sparse20.mount_cold']['values'])],
            'ratio of medians; target <= 2')
    return res
