"""The bounds of a cold mount on this machine: the FUSE ceiling (O_DIRECT
reads, and a buffered cat whose page cache was dropped, of a daemon whose
tile cache holds the whole file) and the CPU bound."""
import os
import statistics

from benchlib.context import GIB
from benchlib.mounts import Mount, timed_cat, timed_cat_cpu, timed_direct
from benchlib.procs import drop_page_cache, mb, per_gib, resident_share


def ceiling_cache(size):
    """The cache_size option of a mount whose tile cache holds a whole
    file of size bytes."""
    return f'cache_size={2 * (size >> 20) + 64}M'


def direct_ceiling(run, src, size, bs):
    """The FUSE ceiling: every read goes through FUSE (O_DIRECT: no page
    cache) to a daemon whose tile cache already holds the whole file.
    @return ([MB/s], note)."""
    opts = [ceiling_cache(size)] + run.build.from_tiles()
    t = []
    with Mount(run, src, opts) as m:
        p = m.path('v')
        timed_cat([p])
        for _ in range(run.a.repeats):
            t.append(mb(size, timed_direct(p, bs)))
    return t, f'{",".join(opts)}, file read once first'


def buffered_ceiling(run, src, size):
    """The buffered FUSE path alone: a mount whose tile cache holds the
    whole file (read once), then per run the mounted file's pages dropped
    from the page cache (POSIX_FADV_DONTNEED, checked with mincore) and a
    timed cat, which the daemon serves from its cache.  @return ([MB/s],
    [CPU s/GiB of cat and the daemon], note)."""
    opts = [ceiling_cache(size)] + run.build.from_tiles()
    cache = ",".join(opts)
    t, cpu, served = [], [], []
    with Mount(run, src, opts) as m:
        p = m.path('v')
        timed_cat([p])
        full = resident_share(p)
        for _ in range(run.a.repeats):
            drop_page_cache(p)
            left = resident_share(p)
            if left is None or full is None or full < 0.99 or left > 0.01:
                return [], [], ('not measured: the drop of the page cache could not be '
                                f'checked (mincore: {full} cached after a cat, {left} after '
                                'the drop)')
            l0 = m.lookups()
            secs, c = timed_cat_cpu(m, [p])
            l1 = m.lookups()
            t.append(mb(size, secs))
            cpu.append(per_gib(c, size))
            if l0 is not None and l1 is not None:
                served.append(l1 - l0)
    note = (f'{cache}, file read once first; before each cat its pages dropped '
            f'(mincore: {full:.0%} cached after a cat, 0% after the drop)')
    if served:
        note += f'; the daemon served {min(served)}+ tile lookups a cat'
    return t, cpu, note


def copy_cold_row(run, src, size, key, label):
    """The row {key}.mount_cold_copy: a cold cat with the tiles decoded
    and copied (-o no_splice), where the build splices by default."""
    opts = run.build.from_tiles()
    cold = []
    for _ in range(run.a.repeats if opts else 0):
        with Mount(run, src, opts) as m:
            cold.append(mb(size, timed_cat([m.path('v')])))
    run.res.add(f'{key}.mount_cold_copy', f'{label}: fresh mount, cat (cold), -o no_splice',
                'MB/s', cold, '' if opts else 'not measured: this build does not splice')


def buffered_ceiling_rows(run, src, size, what):
    """The rows fuse.ceiling_buffered and fuse.cpu_path (of the array
    `what`)."""
    t, cpu, note = buffered_ceiling(run, src, size)
    run.res.add('fuse.ceiling_buffered', f'FUSE ceiling: {what}, tiles cached, buffered cat '
                '(page cache dropped)', 'MB/s', t, note)
    run.res.add('fuse.cpu_path', f'FUSE path: CPU per GiB, {what}, tiles cached, buffered '
                'cat', 's/GiB', cpu,
                'user + sys of cat and of the daemon during it' if cpu else note)


def cpu_bound(res, decode_key):
    """The CPU bound of a cold mount in MB/s: every CPU busy with this
    work alone (decode limit's CPU + the FUSE path's CPU per byte, all
    overlapped), or None without the figures."""
    dec = res.values(decode_key)
    fuse = res.values('fuse.cpu_path')
    if not dec or not fuse:
        return None
    ncpu = os.cpu_count() or 1
    return ncpu * GIB / (statistics.median(dec) + statistics.median(fuse)) / 1e6


def bound_rows(res, key, label, cold_key):
    """Rows KEY.cpu_bound and KEY.cold_vs_cpu_bound from KEY.cpu_decode,
    fuse.cpu_path and the cold mount's row."""
    b = cpu_bound(res, f'{key}.cpu_decode')
    ncpu = os.cpu_count() or 1
    why = '' if b else 'not measured: no CPU figure of the decode limit or the FUSE path'
    res.add(f'{key}.cpu_bound', f'{label}: CPU bound of a cold mount', 'MB/s',
            [b] if b else [], why or f'{ncpu} CPUs / (CPU per byte of the decode limit '
            '+ of the FUSE path)')
    cold = res.values(cold_key)
    res.add(f'{key}.cold_vs_cpu_bound', f'{label}: cold mount / CPU bound', 'x',
            [statistics.median(cold) / b] if b and cold else [], why or 'ratio of medians')
