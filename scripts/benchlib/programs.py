"""The programs of a build folder that the bench runs."""
import os
import re
import shlex
import subprocess

from benchlib.context import TOP, log

# the variables of a build's Makefile naming the libraries the engine links with
ENGINE_LIBS = ('ZSTD_LIBS', 'ZLIB_LIBS', 'DEFLATE_LIBS', 'LZ4_LIBS', 'BZ2_LIBS',
               'CRYPTO_LIBS', 'JANSSON_LIBS', 'WEBP_LIBS', 'CURL_LIBS', 'EXPAT_LIBS',
               'AX_PTHREAD_LIBS')


class Build:
    """The programs of one build folder."""

    def __init__(self, top, scratch):
        self.top = os.path.abspath(top)
        self.fs = os.path.join(self.top, 'fuse', 'tiledbfs')
        self.cat = os.path.join(self.top, 'tools', 'tiledbfs-cat')
        self.create = os.path.join(self.top, 'tools', 'tiledbfs-create')
        self.decode = os.path.join(self.top, 'tools', 'tiledbfs-decode-bench')
        self.scratch = scratch

    def ready(self):
        return all(os.access(p, os.X_OK) for p in (self.fs, self.cat, self.create))

    def from_tiles(self):
        """The options of a mount that replies from its decoded tiles (a
        build that splices unfiltered tiles from the data files would
        otherwise not keep them): no_splice where the daemon knows it."""
        r = subprocess.run([self.fs, '--help'], capture_output=True, text=True)
        return ['no_splice'] if 'no_splice' in r.stdout + r.stderr else []

    def describe(self):
        r = subprocess.run(['git', '-C', self.top, 'log', '-1', '--format=%h %s'],
                           capture_output=True, text=True)
        return r.stdout.strip()[:100] if r.returncode == 0 else '?'

    def ensure_decode_bench(self):
        """Compiles tools/tiledbfs-decode-bench.c of this checkout against the
        build's engine library when the build has no such program."""
        if os.access(self.decode, os.X_OK):
            return
        lib = os.path.join(self.top, 'format', 'libtdbformat.a')
        src = os.path.join(TOP, 'tools', 'tiledbfs-decode-bench.c')
        libs = []
        with open(os.path.join(self.top, 'Makefile')) as f:
            mk = f.read()
        for var in ENGINE_LIBS:
            m = re.search(rf'^{var} = (.*)$', mk, re.M)
            if m:
                libs += shlex.split(m.group(1))
        out = os.path.join(self.scratch, 'tiledbfs-decode-bench-'
                           + re.sub(r'\W', '_', self.top.strip('/')))
        cmd = ['cc', '-std=c11', '-D_GNU_SOURCE', '-O2', '-pthread',
               '-I', os.path.join(self.top, 'format'), src, '-o', out, lib] + libs + ['-lm']
        log('compiling', os.path.basename(out), 'against', lib)
        subprocess.run(cmd, check=True)
        self.decode = out

