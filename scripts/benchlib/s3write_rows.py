"""Issue 29's rows: writes to each S3 server through tests/py/pacing_proxy.py,
a WAN link of S3W_RTT_MS round trip and S3W_MBPS MB/s per connection and
direction with a bounded window (throughput only from many connections):
the commit of a fresh -o rw mount, tiledbfs-copy of the zstd array, and
rclone uploading the same bytes.  Every array and object written is
checked, then deleted."""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import types

import bench_arrays
from benchlib.context import COLS, TILE, log
from benchlib.objstore import (S3_MOUNT_TIMEOUT, S3Env, rclone_env, s3_delete, s3_mount,
                               s3_same_tree, s3_sizes, uuid_hex)
from benchlib.procs import reset_hwm, sha256_file, timed_rss, vm_rss_mib, warm_files

S3W_MIB = 256                   # the unfiltered attribute a commit writes
S3W_RTT_MS = 100                # round trip of the paced link
S3W_MBPS = 25                   # MB/s per connection and direction
S3W_TARGET = 0.5                # commit, copy: at most this share of rclone's time


def s3w_staged_file(work):
    """The attribute v a commit stages (S3W_MIB MiB of unfiltered FLOAT32,
    the dense arrays' data), made once per run in work; rclone copyto
    uploads the same file."""
    path = os.path.join(work, f's3write-v{S3W_MIB}')
    if not os.path.exists(path):
        import numpy as np
        rows = (S3W_MIB << 20) // (COLS * 4)
        rng = np.random.default_rng(29)
        with open(path + '.part', 'wb') as f:
            for y0 in range(0, rows, TILE[0]):
                bench_arrays.dense_rows(y0, y0 + TILE[0], COLS, rng).astype('<f4').tofile(f)
        os.rename(path + '.part', path)
    return path


def links_note(used):
    """The note of a "links busy" row: the proxy's counts of connections."""
    if not used:
        return ''
    return ('the mean number of connections moving bytes at the full rate; most '
            f'connections sending at once {max(u[0] for u in used)} (of any size), '
            f'{max(u[1] for u in used)} sent')


def stage_and_commit(m, srv, vfile, rows, proxy, f):
    """Stages vfile as v (and __subarray.json) in __staging/f0 of the -o rw
    mount m and commits it (mv into __fragments): @return the seconds of
    the mv, or None (f.why said) when it failed.  The daemon's memory and
    the links' use go to f."""
    d = m.path('__staging/f0')
    os.mkdir(d)
    shutil.copyfile(vfile, os.path.join(d, 'v'))
    with open(os.path.join(d, '__subarray.json'), 'w') as fp:
        json.dump([[0, rows - 1], [0, COLS - 1]], fp)
    f.rss0.append(vm_rss_mib(m.proc.pid))
    if not reset_hwm(m.proc.pid):
        f.hwm_note = 'VmHWM of the daemon since its start (clear_refs refused)'
    proxy.reset()
    t0 = time.perf_counter()
    try:
        os.rename(d, m.path('__fragments/f0'))
    except OSError as e:
        f.why = f'the commit failed: {e}'
        log(f'S3 WRITE ROWS ({srv}): {f.why}')
        return None
    t = time.perf_counter() - t0
    f.hwm.append(m.hwm())
    st = proxy.stats()
    f.conns.append(st['bytes_up'] / (S3W_MBPS * 1e6 * t))
    f.used.append((st['max_sending'], st['senders']))
    return t


def commit_once(run, srv, url, schema_file, vfile, proxy, f):
    """tiledbfs-create of a new array at url, a fresh -o rw mount of it and
    stage_and_commit: @return the commit's seconds, or None (f.why said)."""
    r = subprocess.run([run.build.create, schema_file, url], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if r.returncode:
        f.why = f'tiledbfs-create: {r.stderr.decode().strip()}'
        log(f'S3 WRITE ROWS ({srv}): {f.why}')
        return None
    stg = tempfile.mkdtemp(prefix='s3w-stg-', dir=run.work)
    m, _ = s3_mount(run, url, ['rw', f'staging_dir={stg}'])
    if m is None:
        f.why = f'the -o rw mount did not come up within {S3_MOUNT_TIMEOUT} s'
        return None
    with m:
        t = stage_and_commit(m, srv, vfile, os.path.getsize(vfile) // (COLS * 4), proxy, f)
    if t is not None:
        shutil.rmtree(stg, ignore_errors=True)
    return t


def commit_wrong(run, server, prefix, url, size, want, first):
    """Why the array committed at prefix is not what was staged (no fragment
    file of size bytes; on the first commit, tiledbfs-cat of v, straight to
    the server, not of sha256 want), or ''."""
    frag = {k: n for k, n in s3_sizes(server, prefix).items() if '/__fragments/' in k}
    if max(frag.values(), default=0) < size:
        return f'no fragment file of {size} bytes or more after the commit: {frag}'
    if not first:
        return ''
    out = os.path.join(run.work, 's3write-back')
    with open(out, 'wb') as f:
        r = subprocess.run([run.build.cat, url, 'v'], stdout=f, stderr=subprocess.PIPE,
                           env=dict(os.environ, AWS_ENDPOINT_URL=server.endpoint))
    got = sha256_file(out)
    os.unlink(out)
    if r.returncode or got != want:
        return (f'tiledbfs-cat of the committed v: {r.stderr.decode().strip()}'
                if r.returncode else "the committed v is not the staged file's bytes")
    return ''


def s3_commit_rows(run, srv, server, proxy, tag):
    """Commit of an S3W_MIB MiB unfiltered attribute (one fragment, tiles
    256x1024) through a fresh -o rw mount of a new s3:// array: seconds of
    the `mv` of __staging/f0 into __fragments, the daemon's VmHWM during it,
    the links busy; the first commit's bytes checked (tiledbfs-cat of v
    against the staged file, straight to the server).  A step that fails
    ends the repeats, its reason in the rows' note."""
    vfile = s3w_staged_file(run.work)
    size = os.path.getsize(vfile)
    rows = size // (COLS * 4)
    sj = os.path.join(run.work, 's3write-schema.json')
    with open(sj, 'w') as f:
        json.dump({'schema': bench_arrays.dense_schema(rows, COLS, TILE[0], TILE[1], 'none')}, f)
    want = sha256_file(vfile)
    label, key = f'{tag}: commit of {S3W_MIB} MiB unfiltered', f's3w.{srv}'
    f = types.SimpleNamespace(secs=[], hwm=[], rss0=[], conns=[], used=[], why='',
                              hwm_note='VmHWM of the daemon, reset just before the mv')
    for i in range(run.a.repeats):
        prefix = f'bench-write/{uuid_hex()}/commit'
        url = server.url(prefix)
        try:
            t = commit_once(run, srv, url, sj, vfile, proxy, f)
            if t is None:
                break
            f.why = commit_wrong(run, server, prefix, url, size, want, i == 0)
            if f.why:
                log(f'S3 WRITE ROWS ({srv}): {f.why}')
                break
            f.secs.append(t)
        finally:
            s3_delete(run, server, prefix)
    note = f'{S3W_MIB} MiB over one connection: >= {size / (S3W_MBPS * 1e6):.1f} s'
    run.res.add(f'{key}.commit', f'{label}: mv __staging/f0 __fragments/', 's', f.secs,
                f'failed: {f.why}' if f.why else note)
    run.res.add(f'{key}.commit_rss', f'{label}: daemon peak RSS during the commit', 'MiB',
                f.hwm, f'{f.hwm_note}; VmRSS before it {statistics.median(f.rss0):.0f} MiB'
                if f.rss0 else f.why)
    run.res.add(f'{key}.commit_links', f'{label}: links busy (bytes up / {S3W_MBPS} MB/s / s)',
                'conn', f.conns, links_note(f.used))


def try_timed_rss(cmd, env):
    """timed_rss(cmd, env): (seconds, peak RSS MiB), or (None, why)."""
    try:
        return timed_rss(cmd, env)
    except SystemExit as e:
        return None, str(e)


def s3_copy_rows(run, srv, server, proxy, src, tag):
    """tiledbfs-copy of the local zstd array (its files warm) to a new
    prefix: seconds and the process's peak RSS; the objects checked
    against the files (names, sizes)."""
    res = run.res
    copy = os.path.join(run.build.top, 'tools', 'tiledbfs-copy')
    nfrag = len(os.listdir(os.path.join(src, '__fragments')))
    label = f'{tag}: tiledbfs-copy of {run.a.size_mib} MiB ZSTD-3 ({nfrag} fragments)'
    key = f's3w.{srv}'
    if not os.access(copy, os.X_OK):
        res.add(f'{key}.copy', label, 's', [], 'not measured: this build has no tiledbfs-copy')
        return
    warm_files(src)
    nbytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(src) for f in fs)
    secs, rss, conns, used, why = [], [], [], [], ''
    for _ in range(run.a.repeats):
        prefix = f'bench-write/{uuid_hex()}/copy'
        try:
            proxy.reset()
            s, m = try_timed_rss([copy, src, server.url(prefix)], None)
            if s is None:
                why = m
                log(f'S3 WRITE ROWS ({srv}): {why}')
                break
            st = proxy.stats()
            why = s3_same_tree(server, prefix, src) or ''
            if why:
                log(f'S3 WRITE ROWS ({srv}): tiledbfs-copy: {why}')
                break
            secs.append(s)
            rss.append(m)
            conns.append(st['bytes_up'] / (S3W_MBPS * 1e6 * s))
            used.append((st['max_sending'], st['senders']))
        finally:
            s3_delete(run, server, prefix)
    res.add(f'{key}.copy', f'{label}, local to the bucket', 's', secs,
            f'failed: {why}' if why else
            f'{nbytes / 1e6:.0f} MB; over one connection >= {nbytes / (S3W_MBPS * 1e6):.1f} s')
    res.add(f'{key}.copy_rss', f'{label}: peak RSS of tiledbfs-copy', 'MiB', rss)
    res.add(f'{key}.copy_links', f'{label}: links busy (bytes up / {S3W_MBPS} MB/s / s)',
            'conn', conns, links_note(used))


def rclone_upload(run, server, proxy, rclone, env, what, path):
    """One `rclone copyto` of file path (what 'copyto') or `rclone copy` of
    folder path (what 'copy') to a new prefix, the source warm, the objects
    checked and deleted.  @return (seconds, peak RSS MiB, (links busy, most
    connections sending at once)), or None (said) when it failed."""
    prefix = f'bench-write/{uuid_hex()}/rclone'
    dest = 'bench:' + server.url(prefix)[len('s3://'):]
    why = None
    try:
        proxy.reset()
        if what == 'copyto':
            with open(path, 'rb', buffering=0) as f:
                while f.read(1 << 22):
                    pass
            cmd = [rclone, 'copyto', path, dest + '/v']
        else:
            warm_files(path)
            cmd = [rclone, 'copy', path, dest]
        s, m = try_timed_rss(cmd, env)
        if s is None:
            why = m
            return None
        if what == 'copyto':
            sizes = list(s3_sizes(server, prefix).values())
            why = (None if sizes == [os.path.getsize(path)] else
                   f'objects of {sizes} bytes for a file of {os.path.getsize(path)}')
        else:
            why = s3_same_tree(server, prefix, path)
        st = proxy.stats()
        sending = (st['bytes_up'] / (S3W_MBPS * 1e6 * s), st['max_sending'])
    finally:
        s3_delete(run, server, prefix)
        if why:
            log(f'rclone {what}: {why}: not a figure')
    return None if why else (s, m, sending)


def s3_rclone_write_rows(run, srv, server, proxy, src, tag):
    """rclone (defaults: 5 MiB chunks, 4 transfers, upload concurrency 4)
    uploading the same bytes over the same link: `rclone copyto` of the
    staged file, `rclone copy` of the zstd array folder; seconds and peak
    RSS, measured once per run (shown for each build); then the commit and
    the copy against them."""
    res = run.res
    key = f's3w.{srv}'
    rclone = shutil.which('rclone')
    rows = (('copyto', s3w_staged_file(run.work), f'rclone copyto of a {S3W_MIB} MiB file'),
            ('copy', src, f'rclone copy of the {run.a.size_mib} MiB ZSTD-3 array folder'))
    if not rclone:
        log('RCLONE WRITE ROWS SKIPPED: rclone is not installed (apt-get install rclone)')
        for what, _, label in rows:
            res.add(f'{key}.rclone_{what}', f'{tag}: {label}', 's', [],
                    'not measured: rclone is not installed (apt-get install rclone)')
        return
    env = rclone_env(server, proxy.endpoint)
    for what, path, label in rows:
        runs = run.ctx.rclone_write.setdefault((srv, what), [])
        for _ in range(0 if runs else run.a.passes):
            r = rclone_upload(run, server, proxy, rclone, env, what, path)
            if r is None:
                break
            runs.append(r)
        res.add(f'{key}.rclone_{what}', f'{tag}: {label}', 's', [r[0] for r in runs],
                "rclone's defaults; measured once, shown for each build"
                + (f'; links busy {statistics.median(r[2][0] for r in runs):.2f}, most '
                   f'connections sending at once {max(r[2][1] for r in runs)}' if runs else ''),
                once=True)
        res.add(f'{key}.rclone_{what}_rss', f'{tag}: {label}, peak RSS', 'MiB',
                [r[1] for r in runs], once=True)
    for ours, theirs, what in (('commit', 'copyto', 'commit / rclone copyto'),
                               ('copy', 'copy', 'tiledbfs-copy / rclone copy')):
        o = res.values(f'{key}.{ours}')
        t = res.values(f'{key}.rclone_{theirs}')
        res.add(f'{key}.{ours}_vs_rclone', f'{tag}: {what}', 'x',
                [statistics.median(o) / statistics.median(t)] if o and t else [],
                f'ratio of medians; target <= {S3W_TARGET}')


def s3_write_rows(run, s3fixture, pacing_proxy, srv, server):
    """Issue 29's rows of one server, behind a fresh paced link."""
    proxy = pacing_proxy.PacingProxy((server.host, server.port), S3W_RTT_MS, S3W_MBPS * 1e6)
    tag = f'S3 {srv} write, {S3W_RTT_MS} ms, {S3W_MBPS} MB/s/conn'
    log(f'S3 write rows: {srv}, {S3W_RTT_MS} ms round trip, {S3W_MBPS} MB/s per connection')
    zstd = run.arrays['zstd']
    try:
        with S3Env(s3fixture, server, proxy.endpoint):
            for what, rows, args in (
                    ('commit', s3_commit_rows, (run, srv, server, proxy, tag)),
                    ('tiledbfs-copy', s3_copy_rows, (run, srv, server, proxy, zstd, tag)),
                    ('rclone', s3_rclone_write_rows, (run, srv, server, proxy, zstd, tag))):
                t0 = time.perf_counter()
                rows(*args)
                log(f'S3 write rows: {srv}, {what}: {time.perf_counter() - t0:.0f} s')
    finally:
        proxy.close()
