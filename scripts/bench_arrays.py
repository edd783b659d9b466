#!/usr/bin/python3
"""bench_arrays: scripts/bench's array generator, written with tiledbfs's own writer (no TileDB).

Each array is made the way a user would: tiledbfs-create from a schema JSON,
a `-o rw` mount, the staged files of a fragment plus (dense) __subarray.json
in MOUNT/__staging/NAME, then `mv` into MOUNT/__fragments/ to commit.

    bench_arrays.py dense  --fs FS --create CREATE OUT FILTER ROWS COLS TR TC [--per-fragment-rows N]
    bench_arrays.py sparse --fs FS --create CREATE OUT CELLS COLS NFRAG
    bench_arrays.py many   --fs FS --create CREATE OUT NFRAG
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import numpy as np

FILTERS = {'zstd': [{"type": "ZSTD", "level": 3}],
           'bslz4': [{"type": "BITSHUFFLE"}, {"type": "LZ4", "level": -1}],
           'none': []}


def dense_schema(R, C, TR, TC, filt):
    return {"array_type": "dense", "tile_order": "row-major", "cell_order": "row-major",
            "capacity": 10000, "allows_duplicates": False,
            "dims": [{"name": "y", "datatype": "INT64", "domain": [0, R - 1],
                      "tile_extent": TR, "filters": []},
                     {"name": "x", "datatype": "INT64", "domain": [0, C - 1],
                      "tile_extent": TC, "filters": []}],
            "attrs": [{"name": "v", "datatype": "FLOAT32", "cell_val_num": 1,
                       "nullable": False, "fill_hex": "0000c07f",
                       "filters": FILTERS[filt]}],
            "current_domain": None, "coords_filters": [{"type": "ZSTD", "level": -1}],
            "offsets_filters": [{"type": "ZSTD", "level": -1}],
            "validity_filters": [{"type": "RLE", "level": -1}],
            "version": 22}


def sparse_schema(R, C, TR, TC, filt):
    s = dense_schema(R, C, TR, TC, filt)
    s["array_type"] = "sparse"
    s["capacity"] = 100000
    for d in s["dims"]:
        d["filters"] = [{"type": "ZSTD", "level": -1}]
    return s


class RwMount:
    """tiledbfs-create SCHEMA OUT, then a -o rw mount of OUT (unmounted on exit);
    with key_file, both encrypt with that AES-256-GCM key."""

    def __init__(self, fs, create, out, schema, key_file=None):
        out = os.path.abspath(out)
        self.fs, self.out, self.key_file = fs, out, key_file
        self.tmp = tempfile.mkdtemp(prefix='tiledbfs-benchgen-')
        sj = os.path.join(self.tmp, 'schema.json')
        with open(sj, 'w') as f:
            json.dump({"schema": schema}, f)
        key = ['-o', f'key_file={key_file}'] if key_file else []
        subprocess.run([create] + key + [sj, out], check=True)
        self.mnt = os.path.join(self.tmp, 'mnt')
        os.mkdir(self.mnt)

    def __enter__(self):
        opts = f'rw,staging_dir={self.tmp}/stg'
        if self.key_file:
            opts += f',key_file={self.key_file}'
        subprocess.run([self.fs, '-o', opts, self.out, self.mnt], check=True)
        return self

    def stage(self, name):
        d = os.path.join(self.mnt, '__staging', name)
        os.mkdir(d)
        return d

    def commit(self, name):
        """mv __staging/NAME __fragments/ ; @return the seconds it took."""
        t = time.perf_counter()
        os.rename(os.path.join(self.mnt, '__staging', name),
                  os.path.join(self.mnt, '__fragments', name))
        return time.perf_counter() - t

    def __exit__(self, *exc):
        for _ in range(50):
            if subprocess.run(['fusermount3', '-u', self.mnt],
                              stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.1)
        shutil.rmtree(self.tmp, ignore_errors=True)


def dense_rows(y0, y1, C, rng):
    """Rows y0..y1-1 of a smooth float32 field with a little noise (compresses like real data)."""
    x = np.arange(C, dtype=np.float32)
    y = np.arange(y0, y1, dtype=np.float32)[:, None]
    v = (np.sin(x / 300.0) * np.cos(y / 200.0) * 100).astype(np.float32)
    return np.round(v, 2) + rng.integers(0, 4, size=v.shape).astype(np.float32) * 0.25


def make_dense(fs, create, out, filt, R, C, TR, TC, frag_rows=None):
    """A dense FLOAT32 array "v", one fragment per frag_rows rows (default: a row of tiles).
    @return the list of commit times (s)."""
    frag_rows = frag_rows or TR
    rng = np.random.default_rng(1)
    times = []
    with RwMount(fs, create, out, dense_schema(R, C, TR, TC, filt)) as m:
        for f, y0 in enumerate(range(0, R, frag_rows)):
            y1 = min(R, y0 + frag_rows)
            d = m.stage(f'f{f}')
            dense_rows(y0, y1, C, rng).astype('<f4').tofile(os.path.join(d, 'v'))
            with open(os.path.join(d, '__subarray.json'), 'w') as fp:
                json.dump([[y0, y1 - 1], [0, C - 1]], fp)
            times.append(m.commit(f'f{f}'))
    return times


# ------------------------------------------------ the filter rows' arrays
#
# scripts/bench measures each filter on a dense array "v" of data that
# compresses like real data of its kind.  Each generator gives rows y0..y1-1
# of a (R, C) array: {file name: bytes} as staged (v, and v.offsets for
# strings).

def gen_smooth_f32(y0, y1, C, rng):
    """A smooth FLOAT32 field with a little noise (the dense arrays' data)."""
    return {'v': dense_rows(y0, y1, C, rng).astype('<f4').tobytes()}


def gen_smooth_f64(y0, y1, C, rng):
    """The smooth field as FLOAT64 (SCALE_FLOAT's input)."""
    return {'v': dense_rows(y0, y1, C, rng).astype('<f8').tobytes()}


def gen_counters(dtype):
    """Integer counters: running totals of small random increments, each row
    going on from a base that grows with y."""
    def gen(y0, y1, C, rng):
        inc = rng.integers(0, 8, size=(y1 - y0, C)).astype(np.int64)
        base = np.arange(y0, y1, dtype=np.int64)[:, None] * (C * 4)
        return {'v': (base + np.cumsum(inc, axis=1)).astype(dtype).tobytes()}
    return gen


def gen_timestamps(y0, y1, C, rng):
    """Sorted DATETIME_MS timestamps: one a second from 2024-01-01, with a
    few milliseconds of jitter."""
    idx = np.arange(y0 * C, y1 * C, dtype=np.int64)
    t = 1704067200000 + idx * 1000 + rng.integers(-4, 5, size=idx.size)
    return {'v': t.astype('<i8').tobytes()}


WORDS = ('INFO WARN ERROR DEBUG TRACE FATAL NOTICE ok fail retry timeout '
         'accepted rejected pending eu-west-1 us-east-1 ap-south-1 sensor-a '
         'sensor-b sensor-c GET POST PUT DELETE HEAD 200 404 500 503 London '
         'Paris Berlin Madrid Rome Lisbon Vienna Prague Warsaw Dublin').split()


def gen_strings(y0, y1, C, rng):
    """Repetitive strings: words of a 40-word vocabulary in runs of 1 to 32
    (log levels, regions, cities, status codes)."""
    n = (y1 - y0) * C
    runs = rng.integers(1, 33, size=n // 8 + 1)
    which = rng.integers(0, len(WORDS), size=runs.size)
    cells = np.repeat(which, runs)[:n]
    words = [w.encode() for w in WORDS]
    lens = np.array([len(w) for w in words], dtype=np.int64)[cells]
    offsets = np.zeros(n, dtype='<u8')
    np.cumsum(lens[:-1], out=offsets[1:])
    return {'v': b''.join(words[i] for i in cells.tolist()), 'v.offsets': offsets.tobytes()}


def filter_schema(R, C, TR, TC, datatype, var, filters):
    """A dense schema like dense_schema's, attribute v of `datatype` (var-sized
    when `var`) with the filter list `filters` (schema JSON)."""
    s = dense_schema(R, C, TR, TC, 'none')
    a = s['attrs'][0]
    a['datatype'] = datatype
    a['filters'] = filters
    if var:
        a['cell_val_num'] = 'var'
        a['fill_hex'] = '00'
    else:
        del a['fill_hex']
    return s


def make_filter_array(fs, create, out, schema, gen, R, C, frag_rows, key_file=None):
    """A dense array of R x C cells of schema, one fragment per frag_rows rows
    written from gen(y0, y1, C, rng) through a -o rw mount.  @return the
    number of fragments."""
    rng = np.random.default_rng(4)
    n = 0
    with RwMount(fs, create, out, schema, key_file) as m:
        for y0 in range(0, R, frag_rows):
            y1 = min(R, y0 + frag_rows)
            d = m.stage(f'f{n}')
            for name, data in gen(y0, y1, C, rng).items():
                with open(os.path.join(d, name), 'wb') as f:
                    f.write(data)
            with open(os.path.join(d, '__subarray.json'), 'w') as fp:
                json.dump([[y0, y1 - 1], [0, C - 1]], fp)
            m.commit(f'f{n}')
            n += 1
    return n


def make_sparse(fs, create, out, cells, C, nfrag):
    """A sparse array (INT64 y, x; FLOAT32 v, ZSTD-3) of `cells` cells on a
    (cells / C) x C grid, split at random into nfrag fragments that all span
    the whole domain (overlapping); the coordinates are distinct."""
    R = (cells + C - 1) // C
    rng = np.random.default_rng(2)
    with RwMount(fs, create, out, sparse_schema(R, C, min(R, 256), min(C, 1024), 'zstd')) as m:
        idx = np.arange(cells, dtype=np.int64)
        owner = rng.integers(0, nfrag, size=cells) if nfrag > 1 else None
        for f in range(nfrag):
            sel = idx if owner is None else idx[owner == f]
            d = m.stage(f'f{f}')
            (sel // C).astype('<i8').tofile(os.path.join(d, 'y'))
            (sel % C).astype('<i8').tofile(os.path.join(d, 'x'))
            (np.sin(sel / 1000.0) * 100).astype('<f4').tofile(os.path.join(d, 'v'))
            m.commit(f'f{f}')
    return out


NAME_RE = re.compile(r'^__(\d+)_(\d+)_([0-9a-f]{32})_(\d+)$')


def make_many(fs, create, out, nfrag):
    """A dense array of nfrag tiny fragments: one fragment committed through the
    mount, then nfrag - 1 copies of its folder under new timestamped names
    (__t_t_uuid_v, t increasing) with their commit files (__commits/NAME.wrt,
    empty).  Fragment folders are self-contained, so a copy is as valid as a
    write.  Each fragment is one 1x64 strip of a 100 x 6400 FLOAT32 array.
    @return the seconds the copies took."""
    C = 6400
    R = (nfrag * 64 + C - 1) // C
    with RwMount(fs, create, out, dense_schema(R, C, 1, 64, 'none')) as m:
        d = m.stage('f0')
        np.arange(64, dtype='<f4').tofile(os.path.join(d, 'v'))
        with open(os.path.join(d, '__subarray.json'), 'w') as fp:
            json.dump([[0, 0], [0, 63]], fp)
        m.commit('f0')
    frags = os.path.join(out, '__fragments')
    (first,) = [n for n in os.listdir(frags) if os.path.isdir(os.path.join(frags, n))]
    mt = NAME_RE.match(first)
    t0, ver = int(mt.group(1)), mt.group(4)
    commits = os.path.join(out, '__commits')
    t = time.perf_counter()
    for i in range(1, nfrag):
        name = f'__{t0 + i}_{t0 + i}_{uuid.uuid4().hex}_{ver}'
        shutil.copytree(os.path.join(frags, first), os.path.join(frags, name))
        open(os.path.join(commits, name + '.wrt'), 'wb').close()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('kind', choices=['dense', 'sparse', 'many'])
    ap.add_argument('--fs', required=True)
    ap.add_argument('--create', required=True)
    ap.add_argument('args', nargs='+')
    a = ap.parse_args()
    if a.kind == 'dense':
        out, filt, R, C, TR, TC = a.args[:6]
        times = make_dense(a.fs, a.create, out, filt, int(R), int(C), int(TR), int(TC),
                           int(a.args[6]) if len(a.args) > 6 else None)
        print(json.dumps({"commits": len(times), "seconds": sum(times)}))
    elif a.kind == 'sparse':
        out, cells, C, nfrag = a.args
        make_sparse(a.fs, a.create, out, int(cells), int(C), int(nfrag))
    else:
        out, nfrag = a.args
        print(json.dumps({"copy_seconds": make_many(a.fs, a.create, out, int(nfrag))}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
