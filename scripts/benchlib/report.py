"""What a run prints: one table of every figure (median/min/max of each
build side by side), the filter rows' three tables, then the same as JSON
(also to --json FILE)."""
import json
import os
import platform
import statistics
import time

from benchlib.context import COLS, NFRAG_MANY, TILE
from benchlib.filters import FILTER_DATA, FILTER_ROWS
from benchlib.objstore import S3_SIZE_MIB
from benchlib.procs import cpu_model, simd_path
from benchlib.s3write_rows import S3W_MBPS, S3W_MIB, S3W_RTT_MS


def fmt(x):
    if x is None:
        return '-'
    if x >= 1000:
        return f'{x:.0f}'
    if x >= 10:
        return f'{x:.1f}'
    return f'{x:.3g}' if x < 0.1 else f'{x:.2f}'


def median_cell(v):
    """A table's cell of values v: their median, or '-'."""
    return fmt(statistics.median(v)) if v else '-'


def table_cell(s):
    """The cell of one build's summary s of a row (None: no such row)."""
    if not s or s['n'] == 0:
        return '-'
    if s['n'] == 1:
        return fmt(s['median'])
    return f'{fmt(s["median"])} / {fmt(s["min"])} / {fmt(s["max"])}'


def table(names, results):
    keys = list(results[0].order)      # and rows only a later build has
    for r in results[1:]:
        keys += [k for k in r.order if k not in keys]
    keys = [k for k in keys if not k.startswith('filter.')]   # filter_table's
    if not keys:
        return ""
    first = {k: next(r for r in results if k in r.rows) for k in keys}
    lw = max(len(first[k].rows[k]['label']) for k in keys)
    head = f'{"figure":<{lw}}  {"unit":<5}'
    for n in names:
        head += f'  {("median/min/max  " + n)[:32]:>32}'
    lines = [head, '-' * len(head)]
    for k in keys:
        s0 = first[k].summary(k)
        line = f'{s0["label"]:<{lw}}  {s0["unit"]:<5}'
        why = []        # why a build has no figure, when its note differs
        for n, r in zip(names, results):
            s = r.summary(k) if k in r.rows else None
            if not s or s['n'] == 0:
                w = s['note'] if s and s['note'] else 'not measured by this build'
                if w != s0['note']:
                    why.append(f'{n}: {w}')
            line += f'  {table_cell(s):>32}'
        if s0['note']:
            line += f'   ({s0["note"]})'
        if why:
            line += f'   [{"; ".join(why)}]'
        lines.append(line)
    return '\n'.join(lines)


def filter_lines(names, results, cols, cells, with_library=False):
    """The head and lines of a filter table: a line per filter row (only
    those with a library, with_library) and build, cells(results of the
    build, row) its columns cols."""
    head = f'{"filter (data)":<44} {"build":<12}' + ''.join(f'{c:>17}' for c in cols)
    lines = [head, '-' * len(head)]
    for row in FILTER_ROWS:
        if with_library and row[4] is None:
            continue
        label = f'{row[1]} ({FILTER_DATA[row[2]][0]})'
        for i, (n, r) in enumerate(zip(names, results)):
            lines.append(f'{label if i == 0 else "":<44} {n[:12]:<12}'
                         + ''.join(f'{c:>17}' for c in cells(r, row)))
    return lines


def filter_table(names, results):
    """The filter rows, one line per filter and build: cold mount, decode
    limit, their ratio, the library alone and the limit's ratio to it, and
    the limit through one reader (as the mount reads: sequential reads,
    tiles decoded ahead on every core) and its ratio to the library."""
    cols = ('cold mount', 'decode limit', 'cold/limit', 'library 1 core', 'limit/(lib x N)',
            'reader limit', 'reader/(lib x N)')
    parts = ('cold', 'limit', 'cold_vs_limit', 'library', 'limit_vs_library', 'reader',
             'reader_vs_library')
    runs = len(results[0].values('filter.gzip.cold') or [])
    lines = [f'filters (median MB/s of {runs} '
             f'runs; the vector path on this CPU: {simd_path()}; targets: cold/limit >= 0.85, '
             f'limit/(lib x N) >= 0.8)']
    lines += filter_lines(names, results, cols, lambda r, row: [
        median_cell(r.values(f'filter.{row[0]}.{part_}')) for part_ in parts])
    z = results[0].rows.get('filter.gzip.zlib')
    if z and z['values']:
        lines.append('(GZIP: zlib inflate alone, 1 core: '
                     f'{fmt(statistics.median(z["values"]))} MB/s)')
    return '\n'.join(lines)


def bounds_table(names, results):
    """The filter rows' CPU figures, one line per filter and build: CPU
    per GiB of the cold mount's cat (cat + daemon) and of the decode limit,
    the CPU bound of a cold mount and the cold mount's ratio to it."""
    cols = ('cold mount', 'cold CPU s/GiB', 'decode CPU s/GiB', 'CPU bound', 'cold/bound')
    parts = ('cold', 'cpu_cold', 'cpu_decode', 'cpu_bound', 'cold_vs_cpu_bound')
    fuse = []
    for n, r in zip(names, results):
        v = r.values('fuse.cpu_path')
        fuse.append(f'{n}: {fmt(statistics.median(v))}' if v else f'{n}: -')
    lines = ['', f'bounds of the filter rows (median; CPU = user + sys, every thread; '
             f'CPU bound = {os.cpu_count() or 1} CPUs / (decode CPU + FUSE path CPU per '
             f'byte); FUSE path s/GiB: {", ".join(fuse)})']
    lines += filter_lines(names, results, cols, lambda r, row: [
        median_cell(r.values(f'filter.{row[0]}.{part_}')) for part_ in parts])
    return '\n'.join(lines)


def path_cells(r, row, ncpu):
    """path_table's cells of one build's results r of a filter row."""
    parts = ('limit', 'path_bound', 'limit_vs_path_bound', 'limit_huge', 'path_bound_huge',
             'limit_vs_path_bound_huge')
    cells = [median_cell(r.values(f'filter.{row[0]}.{part_}')) for part_ in parts]
    h = r.values(f'filter.{row[0]}.limit_huge')
    lib = r.values(f'filter.{row[0]}.library')
    cells.append(fmt(statistics.median(h) / (statistics.median(lib) * ncpu))
                 if h and lib else '-')
    return cells


def path_table(names, results):
    """The rows with a library: the decode limit against what the library
    and the read path together allow (path_bound_rows), on 4 KiB pages and
    on huge pages."""
    cols = ('limit', 'path bound', 'limit/bound', 'limit, huge', 'bound, huge',
            'huge/bound', 'huge/(lib x N)')
    ncpu = os.cpu_count() or 1
    path = []
    for n, r in zip(names, results):
        v = [r.values(f'filter.none.cpu_decode{s}') for s in ('', '_huge')]
        path.append(f'{n}: ' + ' / '.join(fmt(statistics.median(x)) if x else '-' for x in v))
    lines = ['', f'the decode limit against its library and the read path (median; bound = '
             f'{ncpu} CPUs / (library s/GiB + the no-filter row\'s decode CPU s/GiB); read '
             f'path s/GiB, 4 KiB / huge pages: {", ".join(path)})']
    lines += filter_lines(names, results, cols, lambda r, row: path_cells(r, row, ncpu),
                          with_library=True)
    return '\n'.join(lines)


def document(ctx):
    """The JSON document of a finished run."""
    a = ctx.a
    return {
        'params': {'size_mib': a.size_mib, 'filter_mib': a.filter_mib,
                   'quick': a.quick, 'repeats': a.repeats,
                   'sparse_cells': a.sparse_cells, 'fragments_many': NFRAG_MANY,
                   'dense_shape': [(a.size_mib << 20) // (COLS * 4), COLS],
                   'tile': list(TILE)},
        'machine': {'cpus': os.cpu_count(), 'cpu': platform.processor() or cpu_model(),
                    'kernel': platform.release(),
                    'loadavg_start': ctx.load0, 'loadavg_end': os.getloadavg()},
        'generation': {'this_run_seconds': ctx.gen_seconds, **ctx.generation},
        'wall_seconds': time.time() - ctx.t_start,
        'builds': [{'dir': r.build.top, 'commit': r.build.describe(),
                    'figures': {k: r.res.summary(k) for k in r.res.order}}
                   for r in ctx.runs],
    }


def what_measured(a, out):
    """The headline's account of the arrays the rows of --only read."""
    return (f'filter arrays of {a.filter_mib} MiB' if a.only == 'filters' else
            f'S3: {S3_SIZE_MIB} MiB dense ZSTD-3 (16 fragments), 1000 fragments; '
            f'writes: {S3W_MIB} MiB commit, {a.size_mib} MiB ZSTD-3 copy'
            if a.only == 's3' else
            f'S3 writes: {S3W_MIB} MiB unfiltered commit, {a.size_mib} MiB ZSTD-3 copy, '
            f'over {S3W_RTT_MS} ms and {S3W_MBPS} MB/s per connection'
            if a.only == 's3write' else
            f'__zarr: dense {out["params"]["dense_shape"][0]}x{COLS} FLOAT32 ZSTD-3 '
            f'({a.size_mib} MiB), 1000 fragments'
            if a.only == 'zarr' else
            f'dense {out["params"]["dense_shape"][0]}x{COLS} FLOAT32 ({a.size_mib} MiB)')


def print_report(ctx):
    """Prints the tables and the JSON of a finished run (the JSON also to
    --json FILE)."""
    a = ctx.a
    names = [os.path.basename(r.build.top.rstrip('/')) or r.build.top for r in ctx.runs]
    results = [r.res for r in ctx.runs]
    out = document(ctx)
    text = table(names, results)
    print(f'tiledbfs bench: {what_measured(a, out)}, tiles {TILE[0]}x{TILE[1]}; '
          f'{out["machine"]["cpus"]} '
          f'CPUs; load {ctx.load0[0]:.2f} -> {out["machine"]["loadavg_end"][0]:.2f}; '
          f'{out["wall_seconds"]:.0f} s')
    for r, n in zip(ctx.runs, names):
        print(f'  {n}: {r.build.top} ({r.build.describe()})')
    if text:
        print(text)
    if a.only in (None, 'filters'):
        print(filter_table(names, results))
        print(bounds_table(names, results))
        print(path_table(names, results))
    js = json.dumps(out, indent=1)
    if a.json:
        with open(a.json, 'w') as f:
            f.write(js + '\n')
    print(js)
