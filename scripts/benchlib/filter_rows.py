"""The filter rows (benchlib.filters.FILTER_ROWS), keys filter.KEY.*: the
cold mount (fresh mount, cat v), the decode limit (tiledbfs-decode-bench,
every CPU, no FUSE, one row of tiles a range), their ratio (target >=
0.85), and the codec library's own speed on one core on the same bytes
(tools/tiledbfs-codec-bench: the values in tile order, cut into TileDB's
64 KiB chunks, after the filters before the codec) with the ratio of the
decode limit to it times the CPUs (target >= 0.8)."""
import json
import os
import re
import statistics
import subprocess

from benchlib.ceilings import bound_rows, buffered_ceiling_rows
from benchlib.context import GIB, TILE, TOP
from benchlib.filters import FILTER_CHUNK, FILTER_DATA, FILTER_ROWS
from benchlib.mounts import Mount, timed_cat_cpu
from benchlib.probes import decode_runs, huge_runs
from benchlib.procs import mb, per_gib, warm_files


def array_shape(build, src, opts):
    """(rows, columns) of an array as it is (view_shape of __array.json)."""
    o = ['-o', opts[0]] if opts else []
    r = subprocess.run([build.cat] + o + [src, '__array.json'], capture_output=True,
                       check=True)
    return tuple(json.loads(r.stdout)['view_shape'])


def library_input(build, src, row, key_file, work):
    """The bytes a row's codec library is handed, in a file under work: the
    values (tiledbfs-cat) in tile order, cut into 64 KiB chunks, each
    byteshuffled or delta-coded as the filters before the codec do."""
    import numpy as np
    _, _, kind, _, lib, _, enc = row
    dtype = {'f32': '<f4', 'f64': '<f8', 'i64': '<i8', 'i32': '<i4', 'ts': '<i8'}[kind]
    opts = ['-o', f'key_file={key_file}'] if enc else []
    R, C = array_shape(build, src, opts[1:])
    raw = subprocess.run([build.cat] + opts + [src, 'v'], capture_output=True,
                         check=True).stdout
    v = np.frombuffer(raw, dtype=dtype).reshape(R // TILE[0], TILE[0], C // TILE[1], TILE[1])
    v = np.ascontiguousarray(v.transpose(0, 2, 1, 3)).reshape(-1)
    per = FILTER_CHUNK // v.itemsize
    chunks = [v[i:i + per] for i in range(0, v.size, per)]
    if lib[2] == 'byteshuffled':
        chunks = [c.view('u1').reshape(-1, c.itemsize).T.copy() for c in chunks]
    elif lib[2] == 'delta-coded':
        chunks = [np.concatenate([c[:1], np.diff(c)]) for c in chunks]
    path = os.path.join(work, f'library-{row[0]}.bin')
    with open(path, 'wb') as f:
        for c in chunks:
            f.write(c.tobytes())
    return path


def library_speed(run, src, row, key_file):
    """The row's codec library on one core (tools/tiledbfs-codec-bench of
    this checkout), once per run: [MB/s per pass]."""
    key, lib = row[0], row[4]
    if key not in run.ctx.library:
        prog = os.path.join(TOP, 'tools', 'tiledbfs-codec-bench')
        if not os.access(prog, os.X_OK):
            subprocess.run(['make', '-C', TOP, 'tools/tiledbfs-codec-bench'], check=True,
                           stdout=subprocess.DEVNULL)
        path = library_input(run.build, src, row, key_file, run.work)
        try:
            r = subprocess.run([prog, '-n', str(run.a.passes), '-l', str(lib[1]), lib[0],
                                path], capture_output=True, text=True, check=True)
        finally:
            os.unlink(path)
        run.ctx.library[key] = [float(re.search(r'mbps=([0-9.]+)', line).group(1))
                                for line in r.stdout.splitlines()]
    return run.ctx.library[key]


def cold_cats(run, src, opts):
    """a.repeats fresh mounts of src, cat v: @return ([MB/s], [CPU s/GiB
    of cat and the daemon], the size of v)."""
    cold, cold_cpu = [], []
    for _ in range(run.a.repeats):
        with Mount(run, src, opts) as m:
            p = m.path('v')
            n = os.path.getsize(p)
            secs, cpu = timed_cat_cpu(m, [p])
            cold.append(mb(n, secs))
            cold_cpu.append(per_gib(cpu, n))
    return cold, cold_cpu, n


def filter_row(run, row):
    """The rows filter.KEY.* of one row of FILTER_ROWS."""
    res, R = run.res, run.a.repeats
    ncpu = os.cpu_count() or 1
    key, label, kind, _, lib, _, enc = row
    src = run.arrays[f'filter.{key}']
    key_file = run.arrays['filter.key_file']
    opts = [f'key_file={key_file}'] if enc else []
    name = f'{label} ({FILTER_DATA[kind][0]})'
    warm_files(src)
    cold, cold_cpu, n = cold_cats(run, src, opts)
    # ranges of one row of tiles (which every read of that row needs
    # whole): threads then decode different tiles
    span = max(1, n // max(1, array_shape(run.build, src, opts)[0] // TILE[0]))
    dargs = ['-r', str(span)] + (['-o', opts[0]] if opts else [])
    lim, dcpu = decode_runs(run.build, src, dargs, R)
    rlim, _ = decode_runs(run.build, src, ['-R', '-t', '1'] + dargs[2:], R)
    hlim, hcpu = huge_runs(run.build, src, dargs, R)
    res.add(f'filter.{key}.cold', f'{name}: fresh mount, cat v', 'MB/s', cold,
            f'{n >> 20} MiB')
    res.add(f'filter.{key}.reader', f'{name}: decode limit through one reader, as the '
            f'mount reads ({ncpu} decoding threads, no FUSE)', 'MB/s', rlim)
    res.add(f'filter.{key}.limit', f'{name}: decode limit ({ncpu} threads, no FUSE)',
            'MB/s', lim)
    res.add(f'filter.{key}.cold_vs_limit', f'{name}: cold mount / decode limit', 'x',
            [statistics.median(cold) / statistics.median(lim)],
            'ratio of medians; target >= 0.85')
    res.add(f'filter.{key}.cpu_cold', f'{name}: CPU per GiB, cold mount cat', 's/GiB',
            cold_cpu, 'cat and the daemon')
    res.add(f'filter.{key}.cpu_decode', f'{name}: CPU per GiB, decode limit', 's/GiB',
            dcpu)
    why = '' if hlim else 'not measured: the build has no -o huge_pages'
    res.add(f'filter.{key}.limit_huge', f'{name}: decode limit, tiles on huge pages '
            f'(-o huge_pages)', 'MB/s', hlim, why)
    res.add(f'filter.{key}.cpu_decode_huge', f'{name}: CPU per GiB, decode limit, '
            'tiles on huge pages', 's/GiB', hcpu, why)
    if key == 'none' and 'fuse.cpu_path' not in res.rows:   # --only filters
        buffered_ceiling_rows(run, src, n, f'{label} ({FILTER_DATA[kind][0]}, {n >> 20} MiB)')
    bound_rows(res, f'filter.{key}', name, f'filter.{key}.cold')
    if lib is not None:
        library_rows(run, row, name, lim, rlim)


def library_rows(run, row, name, lim, rlim):
    """A filter row's library (codec alone, 1 core) and the decode limits
    (lim; rlim through one reader) against it."""
    res = run.res
    ncpu = os.cpu_count() or 1
    key, lib, kind = row[0], row[4], row[2]
    src = run.arrays[f'filter.{key}']
    key_file = run.arrays['filter.key_file']
    lib_mbps = library_speed(run, src, row, key_file)
    res.add(f'filter.{key}.library', f'{name}: {lib[0]} alone, 1 core', 'MB/s', lib_mbps,
            f'{lib[2]}, 64 KiB chunks, CPU time', once=True)
    res.add(f'filter.{key}.limit_vs_library',
            f'{name}: decode limit / ({lib[0]} x {ncpu})', 'x',
            [statistics.median(lim) / (statistics.median(lib_mbps) * ncpu)],
            'ratio of medians; target >= 0.8')
    res.add(f'filter.{key}.reader_vs_library',
            f'{name}: decode limit through a reader / ({lib[0]} x {ncpu})', 'x',
            [statistics.median(rlim) / (statistics.median(lib_mbps) * ncpu)],
            'ratio of medians')
    path_bound_rows(res, key, name, lib_mbps)
    if key == 'gzip':       # what zlib's own inflate does on the same bytes
        zrow = ('gzip_zlib', row[1], kind, None, ('zlib', 6, 'values'), 1, False)
        z = library_speed(run, src, zrow, key_file)
        res.add('filter.gzip.zlib', f'{name}: zlib inflate alone, 1 core', 'MB/s', z,
                'for comparison with libdeflate', once=True)


def measure_filters(run):
    """The filter rows (FILTER_ROWS) into run.res: keys filter.KEY.*."""
    for row in FILTER_ROWS:
        filter_row(run, row)
    return run.res


def path_bound_rows(res, key, name, lib_mbps):
    """The most a decode limit can be when each byte costs its library's
    time (one core's MB/s) and the read path's, which the no-filter row's
    decode CPU per GiB measures (reading the tile's bytes, tile memory,
    the copies): N CPUs / (library s/GiB + read path s/GiB); with the
    tiles on 4 KiB pages and on huge pages, and the limit's ratio to it."""
    ncpu = os.cpu_count() or 1
    lib_s = GIB / 1e6 / statistics.median(lib_mbps)
    for sfx, lim_key in (('', 'limit'), ('_huge', 'limit_huge')):
        path = res.values(f'filter.none.cpu_decode{sfx}')
        lim = res.values(f'filter.{key}.{lim_key}')
        if not path or not lim:
            continue
        bound = ncpu * GIB / 1e6 / (lib_s + statistics.median(path))
        pages = 'huge pages' if sfx else '4 KiB pages'
        res.add(f'filter.{key}.path_bound{sfx}', f'{name}: library + read path bound, '
                f'tiles on {pages}', 'MB/s', [bound],
                f'{ncpu} CPUs / (library s/GiB + no-filter decode CPU s/GiB)')
        res.add(f'filter.{key}.limit_vs_path_bound{sfx}', f'{name}: decode limit / '
                f'library + read path bound, tiles on {pages}', 'x',
                [statistics.median(lim) / bound], 'ratio of medians')
