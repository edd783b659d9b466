"""test_consolidate.py: tiledbfs-consolidate as a user runs it: every corpus array consolidated (fragments too) and vacuumed reads the same through tiledbfs-cat and a mount, on a folder and in every object store (both S3 servers and Azurite); what it leaves and removes; its errors."""
import os
import shutil
import subprocess

import pytest

from conftest import case_options, find_program, get_case, o_args, run_cat


@pytest.fixture(scope='session')
def cons_prog():
    return find_program(os.path.join('tools', 'tiledbfs-consolidate'))


def consolidate(prog, source, opts=(), extra=('--vacuum',)):
    """tiledbfs-consolidate -v EXTRA SOURCE: the finished process."""
    return subprocess.run([prog, '-v'] + list(extra) + o_args(opts) + [source],
                          capture_output=True, timeout=120)


def key_only(opts):
    """The options of a case the tool takes: key_file= alone."""
    return [o for o in opts if o.startswith('key_file=')]


def differing(cat_prog, case, source, opts, paths=None):
    """The expected files of case (those of paths, when given) that
    tiledbfs-cat of source does not show byte for byte."""
    bad = []
    for path in case.expected_paths if paths is None else paths:
        r = run_cat(cat_prog, source, path, opts)
        if r.returncode != 0 or r.stdout != case.expected(path):
            bad.append(f'{path}: exit {r.returncode} {r.stderr.decode(errors="replace")[:200]}')
    return bad


def files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


# What TileDB 2.29.2's own consolidation (tiledb_array_consolidate and
# tiledb_array_vacuum, sm.consolidation.mode=fragments, default
# configuration) leaves of a case with several fragments: one, but of
# dense_current_domain, whose two fragments' box has more cells than they
# (under a current domain TileDB expands no non-empty domain to whole
# tiles).  Checked with TileDB itself; README "Keeping an array healthy".
TILEDB_LEAVES = {'dense_current_domain': 2}


def test_every_array_reads_the_same(case, cons_prog, cat_prog, tmp_path):
    """Each corpus array, consolidated (fragments, fragment_meta, commits,
    array_meta) and vacuumed: every expected file of the view byte for
    byte, as many fragments left as TileDB leaves, and for a sparse array
    each former fragment's view when opened at its time (the merged cells
    keep their timestamps); a group is refused.  A case opened at an
    earlier time is not vacuumed: as with TileDB, a vacuum of merged
    metadata or fragments removes what the array held before."""
    arr = tmp_path / 'array'
    shutil.copytree(case.array, arr)
    opts = case_options(case, tmp_path)
    past = 'timestamp=' in case.info.get('mount_options', '')
    r = consolidate(cons_prog, str(arr), key_only(opts), extra=[] if past else ['--vacuum'])
    out = (r.stdout + r.stderr).decode(errors='replace')
    if case.info.get('kind') != 'array':
        assert r.returncode == 1 and 'not a TileDB array' in out, out
        return
    assert r.returncode == 0, out
    nfrag = len(case.info.get('fragments', []))
    left = sorted(os.listdir(arr / '__fragments')) if (arr / '__fragments').is_dir() else []
    if not past and nfrag >= 2:
        assert len(left) == TILEDB_LEAVES.get(case.name, min(nfrag, 1)), (left, out)
    # a fragment's own files are gone once it is merged (at an earlier
    # time too, where the merged fragment is in the view)
    merged = 'fragments: ' + str(nfrag) + ' consolidated into' in out
    view = [p for p in case.expected_paths
            if not merged or not p.startswith('__fragments/')]
    bad = differing(cat_prog, case, str(arr), opts, view)
    assert not bad, f'{case.name} after consolidation:\n  ' + '\n  '.join(bad)
    if past or case.info.get('array_type') != 'sparse' or not merged:
        return
    # each former fragment alone: the array at its timestamps; a dropped
    # attribute is not in the merged fragment (as in TileDB's)
    kept = {f['name'] for f in case.info.get('fields', [])} if isinstance(
        case.info.get('fields'), list) else set(case.info.get('fields', {}))
    bad, seen = [], 0
    for p in case.expected_paths:
        parts = p.split('/')
        if len(parts) != 3 or parts[0] != '__fragments':
            continue
        t1, t2 = parts[1].split('_')[2:4]
        if parts[2].split('.')[0] not in kept:
            continue
        seen += 1
        r = run_cat(cat_prog, str(arr), parts[2], opts + [f'timestamp={t1}:{t2}'])
        if r.returncode != 0 or r.stdout != case.expected(p):
            bad.append(f'{p} at {t1}:{t2}: exit {r.returncode} '
                       f'{r.stderr.decode(errors="replace")[:200]}')
    assert seen and not bad, f'{case.name}: earlier views:\n  ' + '\n  '.join(bad)


def test_what_is_left(cons_prog, tmp_path):
    """dense_fragments_overlap, --mode=fragment_meta,commits: one .meta and
    one .con are written, the .wrt files go, the fragments stay; a second
    run has nothing to do."""
    case = get_case('dense_fragments_overlap')
    arr = tmp_path / 'array'
    shutil.copytree(case.array, arr)
    wrts = [f for f in os.listdir(arr / '__commits') if f.endswith('.wrt')]
    frags = sorted(os.listdir(arr / '__fragments'))
    assert len(wrts) >= 2
    modes = ['--vacuum', '--mode=fragment_meta,commits']
    r = consolidate(cons_prog, str(arr), extra=modes)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert f'fragment_meta: {len(frags)} consolidated into __fragment_meta/' in out, out
    assert f'commits: {len(wrts)} consolidated into __commits/' in out, out
    assert f'commits: vacuum removed {len(wrts)} files' in out, out
    commits = os.listdir(arr / '__commits')
    assert len(commits) == 1 and commits[0].endswith('_22.con'), commits
    con = (arr / '__commits' / commits[0]).read_bytes()
    assert con == b''.join(b'__commits/' + w.encode() + b'\n' for w in sorted(wrts))
    assert len(os.listdir(arr / '__fragment_meta')) == 1
    assert sorted(os.listdir(arr / '__fragments')) == frags
    before = files(arr)
    r = consolidate(cons_prog, str(arr), extra=modes)
    assert r.returncode == 0, r.stderr
    assert 'fragment_meta: nothing to consolidate' in r.stdout.decode(), r.stdout
    assert 'commits: nothing to consolidate' in r.stdout.decode(), r.stdout
    assert files(arr) == before


def test_modes_and_errors(cons_prog, tmp_path):
    """--mode picks the steps; an unknown mode, a missing key, commits of a
    format-10 array named alone and a group are errors that change
    nothing; under all, the format-10 array's commits are skipped, said."""
    case = get_case('dense_fragments_overlap')
    arr = tmp_path / 'array'
    shutil.copytree(case.array, arr)
    r = consolidate(cons_prog, str(arr), extra=['--mode=commits'])
    assert r.returncode == 0 and b'fragment_meta' not in r.stdout, r.stdout
    assert not (arr / '__fragment_meta').exists() or os.listdir(arr / '__fragment_meta') == []
    before = files(arr)
    r = consolidate(cons_prog, str(arr), extra=['--mode=fragment'])
    assert r.returncode == 1
    assert (b"unknown mode 'fragment' (fragments, fragment_meta, commits, array_meta, "
            b"all)") in r.stderr, r.stderr
    assert files(arr) == before

    enc = get_case('encrypted_aes256gcm')
    earr = tmp_path / 'enc'
    shutil.copytree(enc.array, earr)
    ebefore = files(earr)
    r = consolidate(cons_prog, str(earr))
    assert r.returncode == 1 and b'a key is needed' in r.stderr, r.stderr
    assert files(earr) == ebefore

    old = get_case('legacy_zero_var_chunks_v10')
    oarr = tmp_path / 'old'
    shutil.copytree(old.array, oarr)
    obefore = files(oarr)
    r = consolidate(cons_prog, str(oarr), extra=['--mode=commits'])
    assert r.returncode == 1 and b'from format version 12 on' in r.stderr, r.stderr
    r = consolidate(cons_prog, str(oarr))
    assert r.returncode == 0, r.stderr
    assert b'commits: skipped: commits are consolidated from format version 12 on' in r.stderr
    assert files(oarr) == obefore


def test_mount_of_consolidated(cons_prog, mount, tmp_path):
    """A mount of a consolidated array lists the merged fragment and shows
    the same bytes."""
    case = get_case('sparse_delete')
    arr = tmp_path / 'array'
    shutil.copytree(case.array, arr)
    r = consolidate(cons_prog, str(arr))
    assert r.returncode == 0, r.stderr
    mnt = mount(str(arr), [])
    assert len(os.listdir(os.path.join(mnt, '__fragments'))) == 1
    for path in case.expected_paths:
        if path.startswith('__fragments/'):
            continue    # merged into one
        with open(os.path.join(mnt, path), 'rb') as f:
            assert f.read() == case.expected(path), path


@pytest.mark.parametrize('name', ['dense_fragments_overlap', 'sparse_delete'])
def test_s3(name, cons_prog, cat_prog, store_server, tmp_path):
    """In the bucket (container): the same files are written and removed as
    on a folder, and every expected file reads the same."""
    s3_server = store_server
    case = get_case(name)
    prefix = f'cons/{s3_server.name}/{name}-{os.getpid()}'
    s3_server.upload(case.array, prefix)
    url = s3_server.url(prefix)
    r = consolidate(cons_prog, url)
    assert r.returncode == 0, r.stderr
    keys = s3_server.client.keys(prefix + '/')
    rel = sorted(k[len(prefix) + 1:] for k in keys)
    commits = [k for k in rel if k.startswith('__commits/') and not k.endswith('.del')]
    assert len(commits) == 1 and commits[0].endswith('.con'), rel
    # one fragment left: no footers to consolidate
    frags = {k.split('/')[1] for k in rel if k.startswith('__fragments/')}
    assert len(frags) == 1, rel
    assert not [k for k in rel if k.startswith('__fragment_meta/')], rel
    assert not [k for k in rel if k.endswith('.tmp') or k.endswith('.vac')], rel
    bad = differing(cat_prog, case, url, [],
                    [p for p in case.expected_paths if not p.startswith('__fragments/')])
    assert not bad, f'{name} in {s3_server.name}:\n  ' + '\n  '.join(bad)


def test_s3_open_of_many_fragments(cons_prog, mount, store_server, tmp_path, monkeypatch):
    """After fragment_meta and commits consolidation, a mount of an array of
    60 fragments in the bucket asks for no file of any fragment (60 or more
    requests before, a handful after; counted by the proxy, not timed) and
    shows the same bytes."""
    s3_server = store_server
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), 'scripts'))
    import bench_arrays
    import latency_proxy
    nfrag = 60
    many = tmp_path / 'many'
    bench_arrays.make_many(find_program(os.path.join('fuse', 'tiledbfs')),
                           find_program(os.path.join('tools', 'tiledbfs-create')),
                           str(many), nfrag)
    cons = tmp_path / 'cons'
    shutil.copytree(many, cons)
    r = consolidate(cons_prog, str(cons), extra=['--vacuum', '--mode=fragment_meta,commits'])
    assert r.returncode == 0, r.stderr
    prefix = f'consmany/{s3_server.name}/{os.getpid()}'
    s3_server.upload(str(many), prefix + '/many')
    s3_server.upload(str(cons), prefix + '/cons')
    proxy = latency_proxy.LatencyProxy((s3_server.host, s3_server.port))
    try:
        for k, v in s3_server.endpoint_env(proxy.endpoint).items():
            monkeypatch.setenv(k, v)
        got, reqs = {}, {}
        for name in ('many', 'cons'):
            proxy.reset()
            mnt = mount(s3_server.url(f'{prefix}/{name}'), [])
            reqs[name] = proxy.count()
            with open(os.path.join(mnt, 'v'), 'rb') as f:
                got[name] = f.read()
    finally:
        for k, v in s3_server.env().items():
            monkeypatch.setenv(k, v)
        proxy.close()
    assert got['many'] == got['cons'] and len(got['cons']) > 0
    assert reqs['many'] >= nfrag, reqs
    assert reqs['cons'] <= 12, reqs
