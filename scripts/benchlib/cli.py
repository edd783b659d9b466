"""scripts/bench's command line: its options, the builds it measures, the
rows --only picks, and the run from generating the arrays to the report."""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from benchlib.arrays import make_arrays
from benchlib.cons_rows import commit_rows, measure_cons
from benchlib.context import SPARSE_COLS, TOP, Context, Run, log
from benchlib.filter_rows import measure_filters
from benchlib.local_rows import measure_local
from benchlib.objstore_rows import measure_s3
from benchlib.programs import Build
from benchlib.report import print_report
from benchlib.sparse_rows import measure_sparse
from benchlib.zarr_rows import measure_zarr

OBJSTORE_ONLY = ('s3', 's3write', 's3read', 'azure')


def parser(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument('--size-mib', type=int, default=None,
                    help='size of each dense array (default 1024; --quick: 256)')
    ap.add_argument('--quick', action='store_true', help='256 MiB, fewer repeats')
    ap.add_argument('--json', help='also write the JSON to this file')
    ap.add_argument('--build', default=TOP, help='build folder of the programs to measure')
    ap.add_argument('--compare', help='a second build folder, measured on the same arrays')
    ap.add_argument('--keep', help='generate the arrays here, or reuse them when present')
    ap.add_argument('--sparse-cells', type=int, default=None,
                    help='cells of each sparse array (default 5 M per GiB of --size-mib; '
                    'the issue used 50 M)')
    ap.add_argument('--pread-samples', type=int, default=20000)
    ap.add_argument('--only', choices=['sparse', 'filters', 's3', 's3write', 's3read', 'azure',
                                       'cons', 'zarr'],
                    help='measure only these rows (and generate only their arrays)')
    ap.add_argument('--s3', dest='only', action='store_const', const='s3',
                    help='the same as --only s3')
    ap.add_argument('--no-s3', action='store_true', help='leave out the S3 rows')
    ap.add_argument('--filter-mib', type=int, default=None,
                    help="size of each filter row's array (default 256; --quick: 64; a row "
                    "of tiles is 16 MiB: give each CPU at least one)")
    return ap


def options(ap):
    """The parsed options, their defaults filled in and checked, with the
    figures --quick sets (repeats, the small-cache rows' size and time)."""
    a = ap.parse_args()
    if a.size_mib is None:
        a.size_mib = 256 if a.quick else 1024
    if a.size_mib < 16 or a.size_mib % 16:
        ap.error('--size-mib must be a multiple of 16 (one row of tiles is 16 MiB)')
    if a.sparse_cells is None:
        a.sparse_cells = max(SPARSE_COLS, 5_000_000 * a.size_mib // 1024)
    if a.filter_mib is None:
        a.filter_mib = 64 if a.quick else 256
    if a.filter_mib < 16 or a.filter_mib % 16:
        ap.error('--filter-mib must be a multiple of 16')
    a.repeats = 2 if a.quick else 3
    a.passes = a.repeats     # of a figure measured once per bench run
    a.small_cache_mib = 32 if a.quick else 64  # whole rows of tiles (8 or 16 MiB)
    a.small_cache_seconds = 5 if a.quick else 15
    return a


def builds(a, work):
    """The Build of --build (and of --compare), each ready to run: this
    checkout built by scripts/build when a program is missing, a decode
    limit program compiled where the rows need one."""
    out = [Build(a.build, work)]
    if a.compare:
        out.append(Build(a.compare, work))
    for b in out:
        if not b.ready():
            if b.top == TOP:
                subprocess.run([os.path.join(TOP, 'scripts', 'build')], check=True)
            else:
                sys.exit(f'bench: {b.top}: programs missing (build it first)')
        if a.only not in OBJSTORE_ONLY:
            b.ensure_decode_bench()
    return out


def measure(run):
    """Every figure of the issue (or of --only's rows) for one build into
    run.res."""
    only = run.a.only
    if only == 'sparse':
        return measure_sparse(run)
    if only == 'cons':
        return measure_cons(run)
    if only == 'zarr':
        return measure_zarr(run)
    if only in OBJSTORE_ONLY:
        return measure_s3(run)
    if only == 'filters':
        return measure_filters(run)
    measure_local(run)
    measure_sparse(run)
    commit_rows(run)
    measure_zarr(run)
    measure_filters(run)
    if not run.a.no_s3:
        measure_s3(run)
    return run.res


def bench(ctx):
    """Generates the arrays, measures each build, prints the report."""
    a = ctx.a
    todo = builds(a, ctx.work)
    folder = os.path.abspath(a.keep) if a.keep else os.path.join(ctx.work, 'arrays')
    os.makedirs(folder, exist_ok=True)
    t = time.perf_counter()
    ctx.arrays, ctx.generation = make_arrays(todo[0], a, folder)
    ctx.gen_seconds = time.perf_counter() - t
    if len(todo) == 1:
        log(f'measuring {todo[0].top}')
        run = Run(ctx, todo[0])
        measure(run)
        ctx.runs.append(run)
    else:
        measure_rounds(ctx, todo)
    print_report(ctx)


def measure_rounds(ctx, todo):
    """--compare: a.repeats rounds of one run of every row, the builds in
    turn (A B, then B A, ...), so that a machine whose speed drifts
    weighs on both alike; a build's figures are those of its rounds."""
    a = ctx.a
    runs = [Run(ctx, b) for b in todo]
    rounds, a.repeats = a.repeats, 1
    try:
        for i in range(rounds):
            for run in (runs if i % 2 == 0 else runs[::-1]):
                log(f'round {i + 1} of {rounds}: measuring {run.build.top}')
                part = Run(ctx, run.build)
                measure(part)
                run.res.extend(part.res)
    finally:
        a.repeats = rounds
    ctx.runs.extend(runs)


def main(description):
    """scripts/bench; description is its --help's.  @return the exit code."""
    a = options(parser(description))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ctx = Context(a, tempfile.mkdtemp(prefix='tiledbfs-bench-'))
    try:
        bench(ctx)
    finally:
        ctx.cleanup()
        shutil.rmtree(ctx.work, ignore_errors=True)
    return 0
