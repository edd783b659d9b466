"""The state of one bench run: its options, its scratch folder, the mounts
still up and the figures measured once per run, and the figures of one build."""
import os
import statistics
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COLS = 16384
TILE = (256, 1024)
FILTERS = (('zstd', 'ZSTD-3'), ('bslz4', 'BITSHUFFLE+LZ4'), ('none', 'unfiltered'))
WIDE_TILE = (16, COLS)       # the "wide" array: a tile is 16 whole rows (1 MiB)
GIB = 1 << 30
NFRAG_MANY = 10000
SPARSE_COLS = 8192


def log(*a):
    print('bench:', *a, file=sys.stderr, flush=True)


class Results:
    """The figures of one build, in the order they were measured."""

    def __init__(self):
        self.rows = {}   # key -> {label, unit, values, note}
        self.order = []

    def add(self, key, label, unit, values, note='', once=False):
        """Row key's figures; once: measured once per bench run and shown
        for each build (extend keeps them as they are)."""
        if key not in self.rows:
            self.order.append(key)
        self.rows[key] = {'label': label, 'unit': unit,
                          'values': [float(v) for v in values], 'note': note,
                          'once': once}

    def extend(self, other):
        """Adds the values of Results `other` (another round of the same
        rows) to this one's."""
        for key in other.order:
            if key in self.rows and not self.rows[key]['once']:
                self.rows[key]['values'] += other.rows[key]['values']
            elif key in self.rows:
                self.rows[key] = dict(other.rows[key])
            else:
                self.order.append(key)
                self.rows[key] = dict(other.rows[key])

    def values(self, key):
        """The values of row key, or None when there is no such row."""
        return self.rows.get(key, {}).get('values')

    def summary(self, key):
        r = self.rows[key]
        v = r['values']
        return {'label': r['label'], 'unit': r['unit'], 'n': len(v),
                'median': statistics.median(v) if v else None,
                'min': min(v) if v else None, 'max': max(v) if v else None,
                'values': v, 'note': r['note']}


class Context:
    """One run of the bench, for every build it measures: the parsed
    options `a`, the scratch folder `work` (removed at the end), its start
    (wall clock, load average), the arrays ({name: path}) and the figures
    of their generation, the Run of each build, the mounts still up (for
    the clean-up) and the figures measured once per run and shown for
    each build (rclone's, the codec libraries')."""

    def __init__(self, a, work):
        self.a = a
        self.work = work
        self.t_start = time.time()
        self.load0 = os.getloadavg()
        self.arrays = {}
        self.generation = {}      # figures of the arrays' generation
        self.gen_seconds = 0.0    # the seconds this run spent generating arrays
        self.runs = []            # a Run per build, in the order measured
        self.mounts = []          # Mount objects still up
        self.rclone_secs = {}     # (server, rtt) -> rclone's seconds
        self.rclone_bytes = {}    # server -> bytes rclone copied
        self.rclone_write = {}    # (server, what) -> [(seconds, peak RSS MiB, (links
                                  # busy, most sending at once))]
        self.s3_gc = {}           # server name -> the ceph.conf of a running radosgw
        self.library = {}         # filter row key -> [MB/s] of its codec library

    def cleanup(self):
        """Unmounts every mount still up."""
        for m in list(self.mounts):
            try:
                m.close()
            except Exception:
                pass


class Run:
    """The measurement of one build in a Context: `build` (its programs)
    and `res` (its Results), with the context's options, scratch folder
    and arrays at hand."""

    def __init__(self, ctx, build):
        self.ctx = ctx
        self.build = build
        self.res = Results()

    @property
    def a(self):
        return self.ctx.a

    @property
    def work(self):
        return self.ctx.work

    @property
    def arrays(self):
        return self.ctx.arrays
