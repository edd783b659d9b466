"""The reference programs beside the mount: TileDB's own read and write
(built outside the project, named by environment variables) and the
in-process decode limit (tools/tiledbfs-decode-bench)."""
import os
import re
import statistics
import subprocess

from benchlib.procs import children_cpu, per_gib


def tiledb_prog(var):
    """The program environment variable `var` names (TileDB's own read or
    write, built outside the project), or None."""
    p = os.environ.get(var)
    return p if p and os.path.isfile(p) and os.access(p, os.X_OK) else None


def tiledb_mbps(prog, args):
    """Runs PROG ARGS; @return the number of its last `MB/s: N` line."""
    r = subprocess.run([prog] + args, capture_output=True, text=True, timeout=1800)
    found = re.findall(r'^MB/s:\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$', r.stdout, re.M)
    if r.returncode != 0 or not found:
        raise RuntimeError(f'{prog} {" ".join(args)}: exit {r.returncode}, '
                           f'no "MB/s: N" line: {r.stderr.strip()[-300:]}')
    return float(found[-1])


def tiledb_rows(res, key, label, uri, mount_key, R, target=''):
    """TileDB's read of attribute v of `uri` (TILEDBFS_BENCH_TILEDB), and
    the cold mount's ratio to it."""
    prog = tiledb_prog('TILEDBFS_BENCH_TILEDB')
    note = '' if prog else 'not measured (set TILEDBFS_BENCH_TILEDB)'
    t = [tiledb_mbps(prog, [uri, 'v']) for _ in range(R)] if prog else []
    res.add(f'{key}.tiledb', f'{label}: TileDB read', 'MB/s', t, note)
    ratio = ([statistics.median(res.rows[mount_key]['values']) / statistics.median(t)]
             if t and res.rows[mount_key]['values'] else [])
    res.add(f'{key}.cold_vs_tiledb', f'{label}: cold mount / TileDB', 'x', ratio,
            'ratio of medians' + target if prog else note)


def decode_bench(build, source, field, args):
    """Runs tiledbfs-decode-bench; @return the dict of its last line."""
    r = subprocess.run([build.decode] + args + [source, field], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f'tiledbfs-decode-bench failed: {r.stderr.strip()}')
    line = r.stdout.strip().splitlines()[-1]
    return {k: float(v) for k, v in (kv.split('=') for kv in line.split())}


def decode_runs(build, source, args, R):
    """R runs of tiledbfs-decode-bench (one pass each) of source's v.
    @return ([MB/s], [CPU s/GiB]): a run's CPU (user + sys, every thread)
    less that of a run reading the first 4 KiB alone (the open of the
    array, which a mount does before its first read, and one tile), per
    GiB of the rest."""
    c0 = children_cpu()
    first = decode_bench(build, source, 'v', args + ['-l', '4096'])
    open_cpu = children_cpu() - c0
    mbps, cpu = [], []
    for _ in range(R):
        c0 = children_cpu()
        d = decode_bench(build, source, 'v', args)
        mbps.append(d['mbps'])
        cpu.append(per_gib(max(0.0, children_cpu() - c0 - open_cpu),
                           d['bytes'] - first['bytes']))
    return mbps, cpu


def huge_runs(build, src, dargs, R):
    """decode_runs with -o huge_pages, or ([], []) for a build without it."""
    try:
        return decode_runs(build, src, dargs + ['-o', 'huge_pages'], R)
    except RuntimeError:
        return [], []
