"""The object-store read rows: each server behind tests/py/latency_proxy.py,
a delay line that adds half the round trip each way without limiting
throughput and counts the requests and the sequential round trips
("waves") among them; the arrays of make_s3_arrays are uploaded once per
server.  Then each S3 server's write rows (s3write_rows)."""
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

from benchlib.context import TILE, log
from benchlib.mounts import Mount, timed_cat
from benchlib.objstore import (S3_FRAGS, S3_MOUNT_TIMEOUT, S3_PREAD_SAMPLES, S3_RTTS,
                               S3_SIZE_MIB, S3_SLOW, S3Env, rclone_env, s3_modules, s3_mount,
                               store_name)
from benchlib.procs import mb, warm_files
from benchlib.s3write_rows import s3_write_rows


def s3_pread(path, proxy, samples, rng):
    """Random 4 KiB preads of a fresh mount's file, the kernel's read-ahead
    off, each in a tile not read before: ([ms], requests per pread)."""
    size = os.path.getsize(path)
    tile = TILE[0] * TILE[1] * 4
    fd = os.open(path, os.O_RDONLY)
    lat = []
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        picks = rng.sample(range(size // tile), min(samples, size // tile))
        proxy.reset()
        for t in picks:
            off = t * tile + rng.randrange(0, tile // 4096) * 4096
            t0 = time.perf_counter()
            os.pread(fd, 4096, off)
            lat.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
    return lat, proxy.count() / max(1, len(lat))


def s3_mount_rows(run, srv, proxy, urls, rtt):
    """Mount time, round trips and requests of each array at one RTT."""
    tag, key = f'{store_name(srv)} {srv}, RTT {rtt} ms', f's3.{srv}.rtt{rtt}'
    for n in S3_FRAGS:
        secs, waves, reqs = [], [], []
        for _ in range(run.a.repeats):
            proxy.reset()
            m, t = s3_mount(run, urls[n])
            if m is None:
                break
            secs.append(t)
            waves.append(proxy.waves())
            reqs.append(proxy.count())
            m.close()
            if t > S3_SLOW:
                break
        target = ('' if rtt != 100 else '; target <= 1.5 s' if n == 16 else
                  '; target <= 0.5 s' if n == '1000c' else '; target <= 3 s')
        what = ('1000 fragments, consolidated' if n == '1000c' else f'{n} fragments')
        run.res.add(f'{key}.mount{n}', f'{tag}: mount of {what}', 's', secs,
                    (f'did not come up within {S3_MOUNT_TIMEOUT} s' if not secs else
                     'until the mount is up') + target)
        run.res.add(f'{key}.waves{n}', f'{tag}: mount of {what}, round trips', 'waves',
                    waves, 'sequential waves of requests, counted by the proxy')
        run.res.add(f'{key}.requests{n}', f'{tag}: mount of {what}, requests', 'req',
                    reqs)


def s3_read_rows(run, srv, proxy, urls, rtt):
    """cat MB/s and random pread latency of the ZSTD array at one RTT."""
    res = run.res
    tag, key = f'{store_name(srv)} {srv}, RTT {rtt} ms', f's3.{srv}.rtt{rtt}'
    t, reqs = [], []
    for _ in range(run.a.repeats):
        m, _ = s3_mount(run, urls[16])
        if m is None:
            break
        with m:
            proxy.reset()
            t.append(mb(S3_SIZE_MIB << 20, timed_cat([m.path('v')])))
            reqs.append(proxy.count())
    res.add(f'{key}.cat', f'{tag}: fresh mount, cat of {S3_SIZE_MIB} MiB ZSTD-3', 'MB/s', t)
    res.add(f'{key}.cat_requests', f'{tag}: fresh mount, cat, requests', 'req', reqs)
    m, _ = s3_mount(run, urls[16])
    if m is None:
        return
    with m:
        lat, per = s3_pread(m.path('v'), proxy, S3_PREAD_SAMPLES, random.Random(rtt))
    lat.sort()
    res.add(f'{key}.pread50', f'{tag}: random 4 KiB pread, cold tile, p50', 'ms',
            [lat[len(lat) // 2]], f'{len(lat)} samples; {per:.2f} requests per pread')
    res.add(f'{key}.pread99', f'{tag}: random 4 KiB pread, cold tile, p99', 'ms',
            [lat[min(len(lat) - 1, int(len(lat) * 0.99))]])


def rclone_copies(run, srv, rclone, env, src, secs):
    """a.repeats runs of `rclone copy --fast-list SRC` into a fresh folder
    each, their seconds appended to secs (the bytes copied to the context);
    a run that fails or copies nothing ends them."""
    for _ in range(run.a.repeats):
        dest = tempfile.mkdtemp(prefix='rclone-', dir=run.work)
        try:
            t0 = time.perf_counter()
            r = subprocess.run([rclone, 'copy', '--fast-list', src, dest], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            t = time.perf_counter() - t0
            if r.returncode != 0:
                log(f'rclone copy failed: {r.stderr.strip()[-300:]}')
                break
            got = sum(os.path.getsize(os.path.join(d, f))
                      for d, _, fs in os.walk(dest) for f in fs)
            if not got:
                log(f'rclone copy of {src} copied nothing: not a figure')
                break
            secs.append(t)
            run.ctx.rclone_bytes[srv] = got
        finally:
            shutil.rmtree(dest, ignore_errors=True)


def s3_rclone_rows(run, srv, server, proxy, urls, rtt):
    """rclone copy (Debian's rclone, default transfers, --fast-list: one
    recursive listing, rclone's fastest way on S3; a delimited walk also
    misses folders on s3rver) of the whole 16-fragment array through the
    same proxy, measured once per run: its seconds, and the fresh mount's
    mount + cat of one attribute against it."""
    res = run.res
    tag, key = f'S3 {srv}, RTT {rtt} ms', f's3.{srv}.rtt{rtt}'
    if srv == 'azurite':        # rclone's rows are S3's
        return
    rclone = shutil.which('rclone')
    if not rclone:
        log('RCLONE ROWS SKIPPED: rclone is not installed (apt-get install rclone)')
        res.add(f'{key}.rclone', f'{tag}: rclone copy of the whole array', 's', [],
                'not measured: rclone is not installed (apt-get install rclone)')
        return
    src = 'bench:' + urls[16][len('s3://'):]
    secs = run.ctx.rclone_secs.setdefault((srv, rtt), [])
    if not secs:
        rclone_copies(run, srv, rclone, rclone_env(server, proxy.endpoint), src, secs)
    size = run.ctx.rclone_bytes.get(srv, 0)
    res.add(f'{key}.rclone', f'{tag}: rclone copy of the whole array ({size / 1e6:.0f} MB)',
            's', secs, '--fast-list; the array as stored (every attribute, compressed); '
            'measured once, shown for each build', once=True)
    cat = res.values(f'{key}.cat')
    mnt = res.values(f'{key}.mount16')
    if secs and cat and mnt:
        ours = statistics.median(mnt) + (S3_SIZE_MIB << 20) / 1e6 / statistics.median(cat)
        res.add(f'{key}.vs_rclone', f'{tag}: mount + cat of one attribute / rclone copy',
                'x', [ours / statistics.median(secs)], 'lower is better; < 1 beats rclone')


def disk_cache_cats(run, proxy, url, opts):
    """A first mount of url with opts filling its disk cache, then two
    fresh ones: @return ([MB/s], [GETs of objects]) of the two cats, or
    None when the mount does not come up (a build without disk_cache)."""
    size = S3_SIZE_MIB << 20
    t, gets = [], []
    m, _ = s3_mount(run, url, opts)
    if m is None:
        return None
    with m:
        timed_cat([m.path('v')])
    for _ in range(2):
        m, _ = s3_mount(run, url, opts)
        with m:
            proxy.reset()
            t.append(mb(size, timed_cat([m.path('v')])))
            gets.append(sum(1 for r in proxy.requests
                            if r.method == 'GET' and '?' not in r.target))
    return t, gets


def s3_cache_rows(run, srv, proxy, urls, local_src):
    """A second mount sharing a disk cache cats from disk; against the local
    mount of the same array.  At RTT 100 ms."""
    res = run.res
    size = S3_SIZE_MIB << 20
    key, label = f's3.{srv}.disk_cache', f'{store_name(srv)} {srv}, RTT 100 ms'
    local = []
    warm_files(local_src)
    for _ in range(2):
        with Mount(run, local_src) as m:
            local.append(mb(size, timed_cat([m.path('v')])))
    res.add(f'{key}.local', f'{label}: the same array mounted locally, cat', 'MB/s', local)
    cache = tempfile.mkdtemp(prefix='s3cache-', dir=run.work)
    opts = [f'disk_cache={cache}', f'disk_cache_size={2 * S3_SIZE_MIB}M']
    proxy.set_delay(50)
    try:
        got = disk_cache_cats(run, proxy, urls[16], opts)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if got is None:
        res.add(key, f'{label}: 2nd mount sharing a disk_cache, cat', 'MB/s', [],
                'not measured: this build has no disk_cache option')
        return
    t, gets = got
    res.add(key, f'{label}: 2nd mount sharing a disk_cache, cat', 'MB/s', t,
            f'{max(gets)} GETs of objects during the cat')
    res.add(f'{key}.vs_local', f'{label}: disk_cache cat / local cat', 'x',
            [statistics.median(t) / statistics.median(local)], 'target >= 0.8')


def start_server(run, s3fixture, name):
    """Starts server `name` in a fresh folder: @return it, or None (said
    in a row) when it cannot run here."""
    folder = tempfile.mkdtemp(prefix=f'{name}-', dir=run.work)
    try:
        if name == 'azurite':
            try:
                import azfixture
            except ImportError as e:
                raise s3fixture.Unavailable(f'tests/py/azfixture.py: {e}') from e
            server = azfixture.start_azurite(folder)
        else:
            server = s3fixture.start(name, folder)
    except s3fixture.Unavailable as e:
        log(f'{store_name(name).upper()} ROWS OF {name.upper()} SKIPPED: {e}')
        run.res.add(f's3.{name}.skipped', f'{store_name(name)} {name}: not measured ({e})',
                    '-', [])
        return None
    if name == 'radosgw':       # its state in folder/state (s3fixture.start_radosgw)
        run.ctx.s3_gc[name] = os.path.join(folder, 'state', 'ceph.conf')
    return server


def measure_s3_server(run, mods, name):
    """The S3 rows of one server: the read rows (not with --only s3write),
    then the write rows."""
    latency_proxy, pacing_proxy, s3fixture = mods
    server = start_server(run, s3fixture, name)
    if server is None:
        return
    try:
        if run.a.only != 's3write':
            s3_read_server(run, s3fixture, latency_proxy, name, server)
        if name != 'azurite' and run.a.only != 's3read':   # issue 29's write rows: S3's
            s3_write_rows(run, s3fixture, pacing_proxy, name, server)
    finally:
        run.ctx.s3_gc.pop(name, None)
        server.stop()


def upload(server, arrays):
    """Uploads each array to bench/NAME unless it is there: @return {n: url}."""
    urls = {}
    for n, src in arrays.items():
        prefix = f'bench/{os.path.basename(src)}'
        if not server.client.keys(prefix + '/'):
            log(f'uploading {src} to {server.url(prefix)}')
            server.upload(src, prefix)
        urls[n] = server.url(prefix)
    return urls


def s3_read_server(run, s3fixture, latency_proxy, name, server):
    """The read rows of one server (behind latency_proxy)."""
    res = run.res
    proxy = latency_proxy.LatencyProxy((server.host, server.port))
    try:
        urls = upload(server, run.arrays['s3'])
        with S3Env(s3fixture, server, proxy.endpoint):
            for rtt in S3_RTTS:
                log(f'S3 rows: {name}, round trip {rtt} ms')
                proxy.set_delay(rtt / 2)
                s3_mount_rows(run, name, proxy, urls, rtt)
                s3_read_rows(run, name, proxy, urls, rtt)
                s3_rclone_rows(run, name, server, proxy, urls, rtt)
            base = res.rows[f's3.{name}.rtt0.cat']['values']
            for rtt in S3_RTTS[1:]:
                v = res.rows[f's3.{name}.rtt{rtt}.cat']['values']
                if base and v:
                    res.add(f's3.{name}.rtt{rtt}.cat_vs_0',
                            f'{store_name(name)} {name}: cat at RTT {rtt} ms / at RTT 0',
                            'x',
                            [statistics.median(v) / statistics.median(base)],
                            'ratio of medians' + ('; target >= 0.8' if rtt == 100 else ''))
            s3_cache_rows(run, name, proxy, urls, run.arrays['s3'][16])
    finally:
        proxy.close()


def measure_s3(run):
    """The S3 rows of every server of s3fixture.SERVERS (a server that
    cannot run here is said so, loudly, in its row)."""
    mods = s3_modules()
    load0 = os.getloadavg()[0]
    names = (['azurite'] if run.a.only == 'azure' else
             list(mods[2].SERVERS) + ([] if run.a.only == 's3write' else ['azurite']))
    for name in names:
        measure_s3_server(run, mods, name)
    run.res.add('s3.load', 'S3 rows: load average at the end', 'load', [os.getloadavg()[0]],
                f'{load0:.2f} at the start; a figure above 1 means the machine was shared')
    return run.res
