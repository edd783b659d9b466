"""What the bench reads of processes and of the page cache: CPU seconds,
peak and resident memory, the share of a file in the page cache."""
import os
import resource
import subprocess
import threading
import time

from benchlib.context import GIB


def mb(nbytes, secs):
    return nbytes / 1e6 / secs if secs > 0 else float('inf')


def per_gib(cpu, nbytes):
    """CPU seconds per GiB of nbytes."""
    return cpu * GIB / nbytes


def warm_files(folder):
    """Reads every file under folder once (so the source is in the page cache)."""
    for d, _, files in os.walk(folder):
        for n in files:
            with open(os.path.join(d, n), 'rb', buffering=0) as f:
                while f.read(1 << 22):
                    pass


def status_mib(pid, field):
    """The field (VmHWM:, VmRSS:) of /proc/PID/status in MiB, or nan."""
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def vm_hwm_mib(pid):
    return status_mib(pid, 'VmHWM:')


def vm_rss_mib(pid):
    return status_mib(pid, 'VmRSS:')


def reset_hwm(pid):
    """Sets process pid's VmHWM to its VmRSS (clear_refs 5, Linux >= 4.0):
    @return False when the kernel refused."""
    try:
        with open(f'/proc/{pid}/clear_refs', 'w') as f:
            f.write('5')
        return True
    except OSError:
        return False


def proc_cpu_seconds(pid):
    """utime + stime of process pid (its threads, living and ended), in s."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def children_cpu():
    """CPU seconds (user + sys) of the children reaped so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def resident_share(path):
    """The share of path's pages in the page cache (mincore of a shared
    mapping, which reads nothing), or None when the kernel does not say."""
    import ctypes
    import mmap
    size = os.path.getsize(path)
    if not size:
        return 0.0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return None
        vec = (ctypes.c_ubyte * pages)()
        rc = libc.mincore(addr, size, vec)
        libc.munmap(addr, size)
        return None if rc else (pages - bytes(vec).count(0)) / pages
    finally:
        os.close(fd)


def drop_page_cache(path):
    """Drops path's clean pages from the page cache (POSIX_FADV_DONTNEED)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def poll_hwm(pid, polled, done):
    """Keeps polled[0] at the highest VmHWM of process pid, read every
    10 ms until done is set or the process is gone."""
    while not done.wait(0.01):
        try:
            v = vm_hwm_mib(pid)
        except OSError:
            return
        if v == v:              # a zombie has no VmHWM (nan)
            polled[0] = max(polled[0], v)


def timed_rss(cmd, env=None):
    """Runs cmd; @return (seconds, peak RSS MiB), raising on failure.  The
    peak is the child's ru_maxrss when that is above this process's own
    peak at the start; else (Linux keeps the parent's high-water mark
    through fork and exec in ru_maxrss, so a child smaller than the bench
    shows the bench's) the child's VmHWM, read every 10 ms while it runs."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    polled = [0.0]
    done = threading.Event()
    th = threading.Thread(target=poll_hwm, args=(p.pid, polled, done), daemon=True)
    th.start()
    _, status, ru = os.wait4(p.pid, 0)
    s = time.perf_counter() - t0
    done.set()
    th.join()
    err = p.stderr.read().decode(errors='replace')
    p.stderr.close()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f'bench: {cmd[0]} failed: {err.strip()}')
    peak = ru.ru_maxrss / 1024
    return s, peak if peak > own else polled[0]


def sha256_file(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return h.hexdigest()
            h.update(b)


def cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return '?'


def simd_path():
    """The vector path tiledbfs picks on this CPU (shuffle_simd.h), from the
    CPU's flags: avx512, avx2, sse2 (x86), or scalar."""
    flags = set()
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('flags'):
                    flags = set(line.split(':', 1)[1].split())
                    break
    except OSError:
        pass
    if {'avx512f', 'avx512bw'} <= flags:
        return 'avx512'
    return 'avx2' if 'avx2' in flags else 'sse2' if 'sse2' in flags else 'scalar'
