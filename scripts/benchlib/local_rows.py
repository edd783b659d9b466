"""The rows of a local dense array (--size-mib, tiles 256x1024): per filter
the cold and warm mount, tiledbfs-cat and the decode limit; the storage and
FUSE ceilings and the CPU bounds; the wide tiles; memory under small
caches; the warm random pread; the open of 10,000 fragments."""
import os
import random
import statistics
import subprocess
import time

from benchlib.ceilings import bound_rows, buffered_ceiling_rows, copy_cold_row, direct_ceiling
from benchlib.context import FILTERS, NFRAG_MANY, WIDE_TILE
from benchlib.mounts import (Mount, random_readers, timed_cat, timed_cat_cpu, timed_cat_tool,
                             timed_prefix)
from benchlib.probes import decode_bench, decode_runs, tiledb_rows
from benchlib.procs import mb, per_gib, warm_files


def cold_warm_cats(run, src, size):
    """a.repeats fresh mounts of src, each a cat of v then a second one:
    @return [cold MB/s], [warm MB/s], [daemon VmHWM MiB], [cold CPU s/GiB]."""
    cold, warm, hwm, cold_cpu = [], [], [], []
    for _ in range(run.a.repeats):
        with Mount(run, src) as m:
            p = m.path('v')
            secs, cpu = timed_cat_cpu(m, [p])
            cold.append(mb(size, secs))
            cold_cpu.append(per_gib(cpu, size))
            hwm.append(m.hwm())
            warm.append(mb(size, timed_cat([p])))
    return cold, warm, hwm, cold_cpu


def dense_rows(run, key, label):
    """The rows of dense array key (of FILTERS): the mount cold and warm,
    tiledbfs-cat, the decode limit, TileDB's read."""
    res, R, build = run.res, run.a.repeats, run.build
    ncpu = os.cpu_count() or 1
    size = run.a.size_mib << 20
    src = run.arrays[key]
    warm_files(src)
    cold, warm, hwm, cold_cpu = cold_warm_cats(run, src, size)
    res.add(f'{key}.mount_cold', f'{label}: fresh mount, cat (cold)', 'MB/s', cold)
    res.add(f'{key}.mount_warm', f'{label}: same mount, 2nd cat (warm)', 'MB/s', warm)
    res.add(f'{key}.cpu_cold', f'{label}: CPU per GiB, cold mount cat', 's/GiB',
            cold_cpu, "user + sys of cat and of the daemon during it")
    if key == 'zstd':
        res.add('rss.default', f'{label}: daemon VmHWM, cold cat, default cache',
                'MiB', hwm)
    t = []
    for _ in range(R):
        t.append(mb(size, timed_cat_tool(build, src)))
    res.add(f'{key}.cat_tool', f'{label}: tiledbfs-cat > /dev/null', 'MB/s', t)
    d, dcpu = decode_runs(build, src, [], R)
    res.add(f'{key}.decode_limit',
            f'{label}: decode limit ({ncpu} threads, no FUSE)', 'MB/s', d)
    res.add(f'{key}.cpu_decode', f'{label}: CPU per GiB, decode limit', 's/GiB', dcpu,
            'user + sys of tiledbfs-decode-bench, less its open of the array')
    rd, _ = decode_runs(build, src, ['-R', '-t', '1'], R)
    res.add(f'{key}.decode_reader', f'{label}: decode limit through one reader, '
            f'as the mount reads ({ncpu} decoding threads, no FUSE)', 'MB/s', rd)
    if key == 'zstd':
        d1 = [decode_bench(build, src, 'v', ['-t', '1'])['mbps'] for _ in range(R)]
        res.add('zstd.decode_1thread', f'{label}: decode, 1 thread, no FUSE', 'MB/s', d1)
    res.add(f'{key}.cold_vs_limit', f'{label}: cold mount / decode limit', 'x',
            [statistics.median(cold) / statistics.median(d)],
            'ratio of medians; target >= 0.8')
    tiledb_rows(res, key, label, src, f'{key}.mount_cold', R,
                '' if key == 'none' else '; target >= 3')


def raw_rows(run):
    """The storage ceiling: cat of the unfiltered array's data files."""
    res = run.res
    src = run.arrays['none']
    files = sorted(os.path.join(d, n) for d, _, fs in os.walk(os.path.join(src, '__fragments'))
                   for n in fs if n.endswith('.tdb') and not n.startswith('__'))
    nbytes = sum(os.path.getsize(f) for f in files)
    raw = [mb(nbytes, timed_cat(files)) for _ in range(run.a.repeats)]
    res.add('none.raw_cat', 'unfiltered: cat of the raw fragment data files', 'MB/s', raw,
            f'{len(files)} files, {nbytes >> 20} MiB; the storage ceiling')
    res.add('none.cold_vs_raw', 'unfiltered: cold mount / raw cat', 'x',
            [statistics.median(res.rows['none.mount_cold']['values']) / statistics.median(raw)],
            'ratio of medians; target >= 0.5')


def fuse_rows(run):
    """The unfiltered array's cold cat with tiles copied, the FUSE ceilings
    (every read through FUSE to a daemon whose tile cache already holds the
    whole file: O_DIRECT, no page cache; a buffered cat, the page cache
    dropped), the cold mount against them, and each filter's CPU bound."""
    res = run.res
    src = run.arrays['none']
    size = run.a.size_mib << 20
    copy_cold_row(run, src, size, 'none', 'unfiltered')
    for bs, name in ((1 << 20, '1 MiB'), (128 << 10, '128 KiB')):
        t, note = direct_ceiling(run, src, size, bs)
        res.add(f'fuse.ceiling_{bs >> 10}k',
                f'FUSE ceiling: unfiltered, tiles cached, O_DIRECT {name} reads', 'MB/s', t,
                note)
    buffered_ceiling_rows(run, src, size, 'unfiltered')
    cold = statistics.median(res.rows['none.mount_cold']['values'])
    for k, name in (('fuse.ceiling_1024k', 'O_DIRECT 1 MiB'),
                    ('fuse.ceiling_buffered', 'buffered cat')):
        v = res.rows[k]['values']
        res.add(f'none.cold_vs_{k[5:]}', f'unfiltered: cold mount / FUSE ceiling ({name})',
                'x', [cold / statistics.median(v)] if v else [],
                ('ratio of medians' + ('; target >= 0.8' if k.endswith('1024k') else ''))
                if v else res.rows[k]['note'])
    for key, label in FILTERS:
        bound_rows(res, key, label, f'{key}.mount_cold')


def wide_rows(run):
    """Unfiltered tiles of whole rows: a 1 MiB read of v is long runs of
    contiguous tile bytes."""
    res = run.res
    size = run.a.size_mib << 20
    src = run.arrays['wide']
    wlabel = f'unfiltered, tiles {WIDE_TILE[0]}x{WIDE_TILE[1]}'
    warm_files(src)
    cold = []
    for _ in range(run.a.repeats):
        with Mount(run, src) as m:
            cold.append(mb(size, timed_cat([m.path('v')])))
    res.add('wide.mount_cold', f'{wlabel}: fresh mount, cat (cold)', 'MB/s', cold)
    copy_cold_row(run, src, size, 'wide', wlabel)
    t, note = direct_ceiling(run, src, size, 1 << 20)
    res.add('wide.ceiling_1024k', f'{wlabel}: FUSE ceiling, tiles cached, O_DIRECT 1 MiB',
            'MB/s', t, note)
    res.add('wide.cold_vs_ceiling', f'{wlabel}: cold mount / FUSE ceiling (O_DIRECT 1 MiB)',
            'x', [statistics.median(cold) / statistics.median(t)], 'ratio of medians')


def memory_rows(run):
    """The daemon's memory and speed with small tile caches (ZSTD array)."""
    a, res = run.a, run.res
    size = a.size_mib << 20
    src = run.arrays['zstd']
    h, t = [], []
    for _ in range(a.repeats):
        with Mount(run, src, ['cache_size=64M']) as m:
            t.append(mb(size, timed_cat([m.path('v')])))
            h.append(m.hwm())
    res.add('rss.64M', 'ZSTD-3: daemon VmHWM, cold cat, cache_size=64M', 'MiB', h,
            'target <= 64 + 32 MiB')
    res.add('zstd.mount_cold_64M', 'ZSTD-3: fresh mount, cat, cache_size=64M', 'MB/s', t)
    t, got, h = [], [], []
    for _ in range(a.repeats):
        with Mount(run, src, ['cache_size=1M']) as m:
            secs, n = timed_prefix(m.path('v'), size, max_seconds=a.small_cache_seconds)
            t.append(mb(n, secs))
            got.append(n >> 20)
            h.append(m.hwm())
    res.add('rss.1M', 'ZSTD-3: daemon VmHWM, cold cat (128 KiB reads), cache_size=1M', 'MiB',
            h, f'target <= 1 + 32 MiB; {min(got)}..{max(got)} MiB read')
    res.add('zstd.mount_1M', 'ZSTD-3: cache_size=1M, cat (128 KiB reads)', 'MB/s', t,
            f'whole file, or what {a.small_cache_seconds} s read: '
            f'{min(got)}..{max(got)} of {size >> 20} MiB')
    h = []
    for _ in range(a.repeats):
        with Mount(run, src, ['cache_size=4M']) as m:
            random_readers(m.path('v'), 16, 8)
            h.append(m.hwm())
    res.add('rss.4M_16readers', 'ZSTD-3: daemon VmHWM, 16 random readers (1 MiB), '
            'cache_size=4M', 'MiB', h, 'target <= 4 + 32 MiB')


def decodes_rows(run):
    """Tiles decoded per MiB read in-process (ZSTD array), with a 1 MiB
    cache and with the default one."""
    res, build = run.res, run.build
    src = run.arrays['zstd']
    for req in ('128K', '1M'):
        try:
            d = decode_bench(build, src, 'v', ['-t', '1', '-R', '-s', req, '-l',
                                               f'{run.a.small_cache_mib}M', '-o',
                                               'cache_size=1M'])
        except RuntimeError:    # a build whose program has no -R (before 2026-11-23)
            continue
        res.add(f'zstd.decodes_per_mib_1M_{req}',
                f'ZSTD-3: cache_size=1M, tiles decoded per MiB, {req} reads', 'tiles',
                [d['decodes_per_mib']],
                'in-process through a reader, as the mount reads (tdb_fs_cache_stats), 1 run; '
                '1 MiB tiles: 1.00 = each tile decoded once')
    d = decode_bench(build, src, 'v', ['-t', '1', '-s', '128K'])
    res.add('zstd.decodes_per_mib_default', 'ZSTD-3: default cache, tiles decoded per MiB',
            'tiles', [d['decodes_per_mib']], 'in-process, 128 KiB reads, 1 run (1 MiB tiles)')


def pread_latencies(fd, region, samples, rng):
    """samples random 4 KiB preads of fd in its first region bytes:
    @return (p50, p99) in microseconds."""
    lat = []
    for _ in range(samples):
        off = rng.randrange(0, region // 4096) * 4096
        t0 = time.perf_counter_ns()
        os.pread(fd, 4096, off)
        lat.append(time.perf_counter_ns() - t0)
    lat.sort()
    return lat[len(lat) // 2] / 1000, lat[int(len(lat) * 0.99)] / 1000


def pread_rows(run):
    """Cached random 4 KiB pread (ZSTD array, its first 128 MiB read twice
    first)."""
    a = run.a
    region = min(a.size_mib << 20, 128 << 20)
    p50, p99 = [], []
    with Mount(run, run.arrays['zstd']) as m:
        p = m.path('v')
        timed_prefix(p, region, 1 << 20)
        timed_prefix(p, region, 1 << 20)
        fd = os.open(p, os.O_RDONLY)
        try:
            rng = random.Random(8)
            for _ in range(a.repeats):
                q50, q99 = pread_latencies(fd, region, a.pread_samples, rng)
                p50.append(q50)
                p99.append(q99)
        finally:
            os.close(fd)
    note = f'{a.pread_samples} samples per run in the first {region >> 20} MiB, read twice first'
    run.res.add('pread.p50', 'random 4 KiB pread, warm, p50', 'us', p50,
                note + '; target <= 50')
    run.res.add('pread.p99', 'random 4 KiB pread, warm, p99', 'us', p99, 'target <= 200')


def many_rows(run):
    """10,000 fragments: mount, ls -l and the first read."""
    src = run.arrays['many']
    warm_files(src)
    t = []
    for _ in range(run.a.repeats):
        t0 = time.perf_counter()
        with Mount(run, src) as m:
            subprocess.run(['ls', '-l', m.mnt], stdout=subprocess.DEVNULL, check=True)
            fd = os.open(m.path('v'), os.O_RDONLY)
            os.read(fd, 4096)
            os.close(fd)
            t.append(time.perf_counter() - t0)
    run.res.add('many.open', f'{NFRAG_MANY} fragments: mount + ls -l + first 4 KiB read', 's',
                t, 'target <= 1 s')


def measure_local(run):
    """The local read rows of the full run, in their order."""
    for key, label in FILTERS:
        dense_rows(run, key, label)
    raw_rows(run)
    fuse_rows(run)
    wide_rows(run)
    memory_rows(run)
    decodes_rows(run)
    pread_rows(run)
    many_rows(run)
