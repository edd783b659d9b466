"""A mount of the build under test, and the timed reads the rows make of
its files."""
import os
import random
import subprocess
import tempfile
import threading
import time

from benchlib.procs import children_cpu, proc_cpu_seconds, vm_hwm_mib


class Mount:
    """A foreground daemon of run's build on a fresh mount point in the
    run's scratch folder; always unmounted (at the latest by the context's
    clean-up)."""

    def __init__(self, run, source, opts=(), timeout=30):
        self.mnt = tempfile.mkdtemp(prefix='mnt-', dir=run.work)
        self.mounts = run.ctx.mounts
        cmd = [run.build.fs, '-f']
        for o in opts:
            cmd += ['-o', o]
        self.proc = subprocess.Popen(cmd + [source, self.mnt])
        self.mounts.append(self)
        deadline = time.monotonic() + timeout
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f'the mount of {source} did not come up')
            time.sleep(0.001)

    def path(self, name):
        return os.path.join(self.mnt, name)

    def hwm(self):
        return vm_hwm_mib(self.proc.pid)

    def cpu(self):
        """The daemon's CPU seconds so far (user + sys, every thread)."""
        return proc_cpu_seconds(self.proc.pid)

    def lookups(self):
        """hits + misses of the tile cache (user.tiledbfs.stats), or None."""
        try:
            st = os.getxattr(self.mnt, 'user.tiledbfs.stats').decode()
        except OSError:
            return None
        kv = dict(f.split('=', 1) for f in st.split() if '=' in f)
        return int(kv.get('hits', 0)) + int(kv.get('misses', 0))

    def close(self):
        if self in self.mounts:
            self.mounts.remove(self)
        if os.path.ismount(self.mnt):
            for _ in range(100):
                if subprocess.run(['fusermount3', '-u', self.mnt],
                                  stderr=subprocess.DEVNULL).returncode == 0:
                    break
                time.sleep(0.1)
            else:
                subprocess.run(['fusermount3', '-uz', self.mnt], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def timed_cat(paths):
    """`cat PATHS > /dev/null`; @return seconds."""
    t = time.perf_counter()
    subprocess.run(['cat'] + list(paths), stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def timed_cat_cpu(m, paths):
    """`cat PATHS > /dev/null` with what it costs: @return (seconds, CPU
    seconds of cat and of the daemon of Mount m during it).  Valid while
    no other child of this process is reaped at the same time."""
    c0, d0 = children_cpu(), m.cpu()
    secs = timed_cat(paths)
    return secs, children_cpu() - c0 + m.cpu() - d0


def timed_cat_tool(build, src):
    """`tiledbfs-cat SRC v > /dev/null`; @return seconds."""
    t = time.perf_counter()
    subprocess.run([build.cat, src, 'v'], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def timed_prefix(path, limit, bs=128 << 10, max_seconds=None):
    """Reads the first `limit` bytes in bs-byte reads (as cat does), or what
    max_seconds allow; @return (seconds, bytes read)."""
    t = time.perf_counter()
    n = 0
    with open(path, 'rb', buffering=0) as f:
        while n < limit:
            b = f.read(min(bs, limit - n))
            if not b:
                break
            n += len(b)
            if max_seconds is not None and time.perf_counter() - t > max_seconds:
                break
    return time.perf_counter() - t, n


def random_reader(path, reads, bs, seed):
    """`reads` random bs-byte preads of path, its pages dropped after each
    (so every read goes to the daemon)."""
    rng = random.Random(seed)
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    for _ in range(reads):
        os.pread(fd, bs, rng.randrange(0, max(1, size - bs)))
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def random_readers(path, n, reads, bs=1 << 20):
    """n threads at once, each a random_reader of path."""
    ts = [threading.Thread(target=random_reader, args=(path, reads, bs, i)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def timed_direct(path, bs):
    """Reads the whole file with O_DIRECT in bs-byte reads into an aligned
    buffer (each read is a FUSE request; the page cache is bypassed).
    @return seconds."""
    import mmap
    buf = mmap.mmap(-1, bs)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        t = time.perf_counter()
        off = 0
        while True:
            n = os.preadv(fd, [buf], off)
            if n <= 0:
                break
            off += n
        return time.perf_counter() - t
    finally:
        os.close(fd)
        buf.close()
