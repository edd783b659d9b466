"""pacing_proxy.py: a TCP proxy on 127.0.0.1 that paces every connection as a WAN link to an object store does: a round trip (default 100 ms, half of it each way), a bandwidth per connection and direction (default 25 MB/s) with a bounded window, and a round trip to open a connection; throughput comes only from many connections.

Used by scripts/bench's S3 write rows, in front of an S3 server on the
same machine:

    proxy = PacingProxy(('127.0.0.1', server_port))      # 100 ms, 25 MB/s
    ... point AWS_ENDPOINT_URL at proxy.endpoint ...
    proxy.reset(); run something; proxy.stats()
    proxy.close()

The link of one connection, in each direction on its own:

  - bandwidth: the bytes leave one after another at `rate` bytes per
    second (a chunk read from one side starts when the link is free, and
    its last byte has left len/rate seconds later);
  - delay: each chunk reaches the other side rtt/2 after its last byte
    left (bytes are written to the other socket as whole chunks of at most
    256 KiB: 10 ms of the link at 25 MB/s);
  - window: at most `window` bytes (default rate x rtt, the link's
    bandwidth-delay product: 2.5 MB) are read from one side and not yet
    taken by the other; beyond it the proxy stops reading that side, so
    the sender waits as on a full TCP window and the proxy holds no more
    than the window per connection and direction;
  - connection set-up: the client's first byte leaves no earlier than one
    round trip after the proxy accepted it (SYN, SYN-ACK), as a new TCP
    connection costs on a WAN; with handshake=False it leaves at once.

So one connection moves at most `rate` bytes per second each way, and a
request-answer exchange costs at least a round trip: N connections in
parallel get N times the rate (the proxy's own CPU is one event loop, a
few percent of a core at 400 MB/s).  Not modelled: TCP's slow start,
loss, TLS (more round trips on a real link).

Statistics (since reset()): stats() -> {'connections': opened,
'max_active': most open at once, 'senders': connections that sent
bytes to the server, 'max_sending': most connections at once with bytes
on their way to the server, 'bytes_up': client to server, 'bytes_down':
server to client}.

As a program:
    pacing_proxy.py --target HOST:PORT [--rtt-ms 100] [--mb-per-s 25]
                    [--window BYTES] [--no-handshake] [--port P]
prints the port it listens on, and the statistics on Ctrl-C;
    pacing_proxy.py --check [--size-mib 256]
measures it with curl (1, then 8 connections in parallel, each a GET then
a PUT of --size-mib MiB) against a small HTTP server of its own that
serves zeros and discards what is PUT, and prints MB/s per connection
and in all.
"""
import argparse
import asyncio
import collections
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from latency_proxy import ServerThread

MB = 1000 * 1000
CLOSE_AFTER_EOF = 60.0      # s a server has to finish once its client is done sending


class _Pipe:
    """One direction of one connection: the bytes `src` sends, paced, to `dst`."""

    def __init__(self, conn, src, dst, link_free):
        self.conn, self.src, self.dst = conn, src, dst
        self.proxy = conn.proxy
        self.q = collections.deque()    # (due, bytes, or None for the EOF)
        self.timer = None
        self.link_free = link_free      # when the link can start the next byte
        self.inflight = 0               # read from src, not yet written to dst
        self.read_paused = False
        self.dst_full = False           # dst's transport asked us to stop
        self.got_eof = False
        self.done = False               # the EOF reached dst

    def data(self, data):
        p = self.proxy
        now = p._loop.time()
        self.link_free = max(now, self.link_free) + len(data) / p.rate
        self.q.append((self.link_free + p.delay, data))
        if not self.inflight:
            p._busy(self, 1)
        self.inflight += len(data)
        self._arm()
        self.flow()

    def eof(self):
        if self.got_eof or self.conn.closed:
            return
        self.got_eof = True
        p = self.proxy
        self.q.append((max(p._loop.time(), self.link_free) + p.delay, None))
        self._arm()

    def _arm(self):
        if self.timer is None and self.q and (self.dst.transport is not None or self.dst.lost):
            self.timer = self.proxy._loop.call_at(self.q[0][0], self._fire)

    def _fire(self):
        self.timer = None
        p = self.proxy
        now = p._loop.time()
        t = self.dst.transport
        while self.q and self.q[0][0] <= now:
            _, data = self.q.popleft()
            if data is None:
                self.done = True
                self.conn.pipe_done(self)
                continue
            self.inflight -= len(data)
            if not self.inflight:
                p._busy(self, -1)
            if t is not None and not t.is_closing():
                t.write(data)
                with p.lock:
                    if self.src is self.conn.client:
                        p._bytes_up += len(data)
                    else:
                        p._bytes_down += len(data)
        self._arm()
        self.flow()

    def flow(self):
        """Pauses or resumes reading src by the window and dst's buffer."""
        t = self.src.transport
        if t is None or t.is_closing():
            return
        full = self.inflight >= self.proxy.window or self.dst_full
        if full and not self.read_paused:
            t.pause_reading()
            self.read_paused = True
        elif not full and self.read_paused:
            t.resume_reading()
            self.read_paused = False


class _Side(asyncio.Protocol):
    """One socket of a proxied connection (the client's or the server's)."""

    def __init__(self, conn):
        self.conn = conn
        self.transport = None
        self.lost = False       # its connection ended (what it is sent is dropped)
        self.out = None         # the _Pipe of what this side sends
        self.into = None        # the _Pipe of what it receives

    def connection_made(self, transport):
        sock = transport.get_extra_info('socket')
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.transport = transport

    def data_received(self, data):
        self.out.data(data)

    def eof_received(self):
        self.out.eof()
        return True             # keep writing what the other side sends

    def connection_lost(self, exc):
        self.transport = None
        self.lost = True
        if exc is not None:
            self.conn.abort()
        else:
            self.out.eof()
            self.into._arm()
            self.conn.maybe_close()

    def pause_writing(self):
        self.into.dst_full = True
        self.into.flow()

    def resume_writing(self):
        self.into.dst_full = False
        self.into.flow()


class _ClientSide(_Side):
    def connection_made(self, transport):
        super().connection_made(transport)
        self.conn.start()


class _Conn:
    """One client connection and its upstream connection."""

    def __init__(self, proxy):
        self.proxy = proxy
        self.client = _ClientSide(self)
        self.server = _Side(self)
        self.closed = False
        self.eof_timer = None

    def start(self):
        p = self.proxy
        now = p._loop.time()
        self.up = _Pipe(self, self.client, self.server, now + (2 * p.delay if p.handshake else 0))
        self.down = _Pipe(self, self.server, self.client, now)
        self.client.out = self.server.into = self.up
        self.server.out = self.client.into = self.down
        with p.lock:
            p._conns += 1
            p._active += 1
            p._max_active = max(p._max_active, p._active)
        p._live.add(self)
        p._loop.create_task(self._connect())

    async def _connect(self):
        try:
            await self.proxy._loop.create_connection(lambda: self.server, *self.proxy.upstream)
        except OSError:
            self.abort()
            return
        if self.closed:
            self.server.transport.close()
            return
        self.up._arm()          # what the client sent meanwhile

    def pipe_done(self, pipe):
        """pipe's EOF reached its destination."""
        if self.closed:
            return
        t = pipe.dst.transport
        if t is not None and not t.is_closing():
            try:
                if t.can_write_eof():
                    t.write_eof()
                else:
                    t.close()
            except OSError:         # the other end is gone already
                self.abort()
                return
        if pipe is self.up and not self.down.done:
            # the client is done sending: its last answer may be on its way
            self.eof_timer = self.proxy._loop.call_later(CLOSE_AFTER_EOF, self.abort)
        self.maybe_close()

    def maybe_close(self):
        if self.up.done and self.down.done:
            self.abort()

    def abort(self):
        if self.closed:
            return
        self.closed = True
        if self.eof_timer is not None:
            self.eof_timer.cancel()
        for pipe in (self.up, self.down):
            if pipe.timer is not None:
                pipe.timer.cancel()
                pipe.timer = None
            pipe.q.clear()
            if pipe.inflight:
                pipe.inflight = 0
                self.proxy._busy(pipe, -1)
        for side in (self.client, self.server):
            if side.transport is not None:
                side.transport.close()
        p = self.proxy
        p._live.discard(self)
        with p.lock:
            p._active -= 1


class PacingProxy:
    """See the module's docstring.  Runs its own event loop in a thread."""

    def __init__(self, upstream, rtt_ms=100.0, rate=25 * MB, window=None, handshake=True,
                 host='127.0.0.1', port=0):
        self.upstream = upstream
        self.delay = rtt_ms / 2000.0
        self.rate = float(rate)
        self.window = int(window if window is not None else max(256 << 10, rate * rtt_ms / 1000))
        self.handshake = handshake
        self.lock = threading.Lock()
        self._conns = self._active = self._max_active = 0
        self._bytes_up = self._bytes_down = 0
        self._sending = self._max_sending = 0
        self._senders = set()        # the _Conns that sent since reset()
        self._live = set()
        self._srv = ServerThread(lambda loop: loop.create_server(
            lambda: _Conn(self).client, host, port, backlog=512))
        self._loop, self._server, self.port = self._srv.loop, self._srv.server, self._srv.port
        self.endpoint = f'http://{host}:{self.port}'

    def _busy(self, pipe, d):
        """An upward pipe starts (d 1) or stops (-1) having bytes in flight."""
        if pipe.src is not pipe.conn.client:
            return
        with self.lock:
            self._sending += d
            if d > 0:
                self._max_sending = max(self._max_sending, self._sending)
                self._senders.add(pipe.conn)

    def reset(self):
        with self.lock:
            self._conns = 0
            self._max_active = self._active
            self._max_sending = self._sending
            self._senders = set()
            self._bytes_up = self._bytes_down = 0

    def stats(self):
        with self.lock:
            return {'connections': self._conns, 'max_active': self._max_active,
                    'senders': len(self._senders), 'max_sending': self._max_sending,
                    'bytes_up': self._bytes_up, 'bytes_down': self._bytes_down}

    def close(self):
        async def shutdown():
            self._server.close()
            for c in list(self._live):
                c.abort()
            await asyncio.sleep(0)
        self._srv.stop(shutdown)


# ------------------------------------------------------------- the check

class _ZeroServer:
    """An HTTP/1.1 server on 127.0.0.1 for --check: GET /N answers N zero
    bytes, PUT reads its Content-Length bytes (answering Expect:
    100-continue) and discards them.  Its own event loop in a thread."""

    def __init__(self):
        self._srv = ServerThread(lambda loop: asyncio.start_server(self._client, '127.0.0.1', 0))
        self.port = self._srv.port

    async def _client(self, reader, writer):
        zeros = bytes(1 << 20)
        try:
            while True:
                head = await reader.readuntil(b'\r\n\r\n')
                lines = head.decode('latin-1').split('\r\n')
                method, target = lines[0].split(' ')[:2]
                hdr = {k.strip().lower(): v.strip() for k, _, v in
                       (ln.partition(':') for ln in lines[1:] if ln)}
                if method == 'PUT':
                    if hdr.get('expect', '').lower() == '100-continue':
                        writer.write(b'HTTP/1.1 100 Continue\r\n\r\n')
                    left = int(hdr.get('content-length', 0))
                    while left:
                        b = await reader.read(min(left, 1 << 20))
                        if not b:
                            return
                        left -= len(b)
                    writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')
                else:
                    n = int(target.strip('/') or 0)
                    writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n' % n)
                    while n:
                        k = min(n, len(zeros))
                        writer.write(zeros[:k])
                        n -= k
                        await writer.drain()
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def close(self):
        self._srv.stop()


def check(size_mib, counts=(1, 8)):
    """curl through a PacingProxy to a _ZeroServer: {n: {'get': [MB/s of
    each], 'put': [...], 'get_all': MB/s in all, 'put_all': ...}}."""
    srv = _ZeroServer()
    proxy = PacingProxy(('127.0.0.1', srv.port))
    size = size_mib << 20
    out = {}
    with tempfile.NamedTemporaryFile(prefix='pacing-check-') as f:
        os.truncate(f.name, size)
        try:
            for n in counts:
                res = {}
                for what, args in (('get', ['-o', '/dev/null', f'{proxy.endpoint}/{size}']),
                                   ('put', ['-o', '/dev/null', '-T', f.name,
                                            f'{proxy.endpoint}/up'])):
                    t0 = time.perf_counter()
                    procs = [subprocess.Popen(['curl', '-sS', '--fail', '-w', '%{time_total}']
                                              + args, stdout=subprocess.PIPE) for _ in range(n)]
                    secs = []
                    for p in procs:
                        o, _ = p.communicate()
                        if p.returncode:
                            raise SystemExit(f'curl failed: exit {p.returncode}')
                        secs.append(float(o))
                    wall = time.perf_counter() - t0
                    res[what] = [size / MB / s for s in secs]
                    res[what + '_all'] = n * size / MB / wall
                out[n] = res
        finally:
            proxy.close()
            srv.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--target', help='HOST:PORT of the server')
    ap.add_argument('--rtt-ms', type=float, default=100.0)
    ap.add_argument('--mb-per-s', type=float, default=25.0, help='per connection and direction')
    ap.add_argument('--window', type=int, default=None, help='bytes (default rate x rtt)')
    ap.add_argument('--no-handshake', action='store_true')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--check', action='store_true', help='measure the proxy with curl')
    ap.add_argument('--size-mib', type=int, default=256)
    a = ap.parse_args()
    if a.check:
        for n, r in check(a.size_mib).items():
            for what in ('get', 'put'):
                each = ' '.join(f'{v:.1f}' for v in r[what])
                print(f'{n} connection(s), {what.upper()} of {a.size_mib} MiB each: '
                      f'{r[what + "_all"]:.1f} MB/s in all; each: {each}')
        return 0
    if not a.target:
        ap.error('--target HOST:PORT (or --check)')
    host, _, port = a.target.rpartition(':')
    p = PacingProxy((host, int(port)), a.rtt_ms, a.mb_per_s * MB, a.window,
                    not a.no_handshake, port=a.port)
    print(f'listening on 127.0.0.1:{p.port}', flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print(p.stats())
        p.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
