"""The arrays the rows measure, generated with tiledbfs's own writer
(scripts/bench_arrays.py) into the run's scratch folder or a --keep
folder, where later runs find them (bench-arrays.json holds their
parameters and the figures of their generation)."""
import json
import os
import shutil
import subprocess
import time

import bench_arrays
from benchlib.context import COLS, FILTERS, NFRAG_MANY, SPARSE_COLS, TILE, TOP, WIDE_TILE, log
from benchlib.filters import FILTER_DATA, FILTER_KEY, FILTER_ROWS, filter_shape
from benchlib.objstore import S3_SIZE_MIB

INFO = 'bench-arrays.json'


def part(path):
    """Where an array is written before it is renamed into place (an
    interrupted generation is never mistaken for a finished array)."""
    p = path + '.part'
    shutil.rmtree(p, ignore_errors=True)
    return p


def generate(path, make):
    """make(where) writes an array at path's part(); renamed into place.
    @return (seconds, what make returned)."""
    t = time.perf_counter()
    r = make(part(path))
    os.rename(path + '.part', path)
    return time.perf_counter() - t, r


def array_params(a):
    """The parameters the arrays of a folder are generated with."""
    return {'size_mib': a.size_mib, 'sparse_cells': a.sparse_cells, 'many': NFRAG_MANY}


def read_generation(folder, a):
    """The generation figures of the arrays already in folder ({} when
    none); exits when they were made with other parameters."""
    info_path = os.path.join(folder, INFO)
    if not os.path.exists(info_path):
        return {}
    with open(info_path) as f:
        info = json.load(f)
    if info.get('params') != array_params(a):
        raise SystemExit(f'bench: {folder} holds arrays of other parameters '
                         f'{info.get("params")}; use another --keep folder')
    return info.get('generation', {})


def write_generation(folder, a, gen):
    with open(os.path.join(folder, INFO), 'w') as f:
        json.dump({'params': array_params(a), 'generation': gen}, f, indent=1)


def make_arrays(build, a, folder):
    """Generates (or finds, with --keep) every array the rows of --only
    need.  @return {name: path}, {generation figures}."""
    arrays, gen = {}, {}
    if a.only == 'filters':     # their own folder, named by their size
        add_filter_arrays(build, a, folder, arrays)
        return arrays, gen
    gen = read_generation(folder, a)
    if a.only in ('s3', 's3read', 'azure') or (not a.only and not a.no_s3):
        arrays['s3'] = make_s3_arrays(build, folder)
    dense_arrays(build, a, folder, arrays, gen)
    if a.only not in ('s3', 's3write', 's3read', 'azure'):
        if a.only in (None, 'zarr'):
            arrays['many1000'] = many1000_array(build, folder)
        if a.only != 'zarr':
            local_arrays(build, a, folder, arrays, gen)
    write_generation(folder, a, gen)
    return arrays, gen


def dense_arrays(build, a, folder, arrays, gen):
    """The dense arrays of --size-mib, one per filter of FILTERS (only
    zstd for the rows that need no other)."""
    rows = (a.size_mib << 20) // (COLS * 4)
    for key, _ in FILTERS:
        arrays[key] = os.path.join(folder, key)
        # the S3 write rows upload zstd; the __zarr rows read it
        if (a.only is None or (a.only in ('cons', 's3', 's3write', 'zarr')
                               and key == 'zstd')) and \
                not os.path.isdir(arrays[key]):
            log(f'generating {key}: {rows}x{COLS} FLOAT32, tiles {TILE[0]}x{TILE[1]}')
            secs, times = generate(arrays[key], lambda out: bench_arrays.make_dense(
                build.fs, build.create, out, key, rows, COLS, TILE[0], TILE[1]))
            gen[f'{key}_seconds'] = secs
            gen[f'{key}_commits'] = len(times)
            gen[f'{key}_commit_seconds'] = sum(times)


def local_arrays(build, a, folder, arrays, gen):
    """wide, sparse1, sparse20, many and the filter rows' arrays (those
    the rows of --only need), generated when missing, also in a --keep
    folder of an older bench."""
    rows = (a.size_mib << 20) // (COLS * 4)
    arrays['wide'] = os.path.join(folder, 'wide')
    if a.only is None and not os.path.isdir(arrays['wide']):
        log(f'generating wide: {rows}x{COLS} FLOAT32 unfiltered, '
            f'tiles {WIDE_TILE[0]}x{WIDE_TILE[1]}')
        gen['wide_seconds'], _ = generate(arrays['wide'], lambda out: bench_arrays.make_dense(
            build.fs, build.create, out, 'none', rows, COLS, WIDE_TILE[0], WIDE_TILE[1],
            TILE[0]))
    for key, n in (('sparse1', 1), ('sparse20', 20)):
        arrays[key] = os.path.join(folder, key)
        if a.only in (None, 'sparse', 'cons') and not os.path.isdir(arrays[key]):
            log(f'generating {key}: {a.sparse_cells} cells in {n} fragment(s)')
            gen[f'{key}_seconds'], _ = generate(arrays[key], lambda out: bench_arrays.make_sparse(
                build.fs, build.create, out, a.sparse_cells, SPARSE_COLS, n))
    arrays['many'] = os.path.join(folder, 'many')
    if a.only is None and not os.path.isdir(arrays['many']):
        log(f'generating many: {NFRAG_MANY} fragments')
        secs, gen['many_copy_seconds'] = generate(
            arrays['many'], lambda out: bench_arrays.make_many(build.fs, build.create, out,
                                                               NFRAG_MANY))
        gen['many_seconds'] = secs
    if a.only is None:
        t = time.perf_counter()
        add_filter_arrays(build, a, folder, arrays)
        gen['filters_this_run_seconds'] = time.perf_counter() - t


def many1000_array(build, folder):
    """The array of 1,000 tiny fragments (bench_arrays.make_many) the S3
    rows upload and the __zarr rows mount, generated when missing.
    @return its path."""
    out = os.path.join(folder, 's3-many1000')
    if not os.path.isdir(out):
        log(f'generating {out}: 1000 fragments')
        generate(out, lambda p: bench_arrays.make_many(build.fs, build.create, p, 1000))
    return out


def consolidated(src, out):
    """A copy of src at out, its fragment metadata and commits
    consolidated and vacuumed by this checkout's tiledbfs-consolidate."""
    shutil.copytree(src, out)
    subprocess.run([os.path.join(TOP, 'tools', 'tiledbfs-consolidate'), '--vacuum',
                    '--mode=fragment_meta,commits', out],
                   check=True, stdout=subprocess.DEVNULL)


def make_s3_arrays(build, folder):
    """The local arrays the S3 rows upload, by fragment count: 16, the
    ZSTD-3 array of S3_SIZE_MIB (one fragment per row of tiles); 1000, tiny
    fragments (bench_arrays.make_many)."""
    out = {}
    rows = (S3_SIZE_MIB << 20) // (COLS * 4)
    out[16] = os.path.join(folder, f's3-zstd{S3_SIZE_MIB}')
    if not os.path.isdir(out[16]):
        log(f'generating {out[16]}: {rows}x{COLS} FLOAT32 ZSTD-3, 16 fragments')
        generate(out[16], lambda p: bench_arrays.make_dense(
            build.fs, build.create, p, 'zstd', rows, COLS, TILE[0], TILE[1], rows // 16))
    out[1000] = many1000_array(build, folder)
    # the same, its fragment metadata and commits consolidated and vacuumed
    # by this checkout's tiledbfs-consolidate (a --compare build mounts it too)
    out['1000c'] = os.path.join(folder, 's3-many1000-cons')
    if not os.path.isdir(out['1000c']):
        log(f'generating {out["1000c"]}: {out[1000]} consolidated')
        generate(out['1000c'], lambda p: consolidated(out[1000], p))
    return out


def make_filter_arrays(build, a, folder):
    """The filter rows' arrays, in folder/filters-MIB/KEY (generated when
    missing; the key file of the encrypted one beside them).  @return
    {key: path}, the key file."""
    top = os.path.join(folder, f'filters-{a.filter_mib}')
    os.makedirs(top, exist_ok=True)
    key_file = os.path.join(top, 'aes.key')
    with open(key_file, 'wb') as f:
        f.write(FILTER_KEY)
    arrays = {}
    for row in FILTER_ROWS:
        key, label, kind, filters, _, _, enc = row
        arrays[key] = os.path.join(top, key)
        if os.path.isdir(arrays[key]):
            continue
        desc, datatype, var, gen, _ = FILTER_DATA[kind]
        R, C = filter_shape(a, row)
        log(f'generating filters-{a.filter_mib}/{key}: {label}, {R}x{C} {desc}')
        schema = bench_arrays.filter_schema(R, C, TILE[0], TILE[1], datatype, var, filters)
        generate(arrays[key], lambda out: bench_arrays.make_filter_array(
            build.fs, build.create, out, schema, gen, R, C, TILE[0], key_file if enc else None))
    return arrays, key_file


def add_filter_arrays(build, a, folder, arrays):
    """Generates (or finds) the filter rows' arrays into arrays, as
    filter.KEY and filter.key_file."""
    found, key_file = make_filter_arrays(build, a, folder)
    arrays.update({f'filter.{k}': v for k, v in found.items()})
    arrays['filter.key_file'] = key_file
