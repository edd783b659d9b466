"""latency_proxy.py: a TCP proxy on 127.0.0.1 that adds a fixed one-way delay to every byte in each direction, counts the HTTP requests passing through it and the sequential round trips ("waves") among them, and can stall answers.

Used by the S3 tests (tests/py/test_s3_io.py) and by scripts/bench's S3
rows, in front of an S3 server on the same machine:

    proxy = LatencyProxy(('127.0.0.1', server_port), delay_ms=50)
    ... point AWS_ENDPOINT_URL at http://127.0.0.1:{proxy.port} ...
    proxy.reset(); run something; proxy.requests, proxy.waves()
    proxy.close()

The delay is a delay line, not a window: each chunk read from one side is
written to the other `delay_ms` later, however many chunks are on their
way, so it adds latency without limiting throughput (a round trip costs
2 x delay_ms).  This kernel has no netem; this is its stand-in.

Waves: a request's wave is 1 + the highest wave among the requests whose
answer had begun to reach the client when this request arrived (1 when none
had).  A client that sends requests one after another, each once the
previous answer came, makes as many waves as requests; one that sends them
all at once makes one.  Answers are matched to requests per connection:
HTTP/1.1 without pipelining (as libcurl sends), so the bytes that come back
on a connection after a request are its answer.  Request boundaries are
found from Content-Length (chunked request bodies are not parsed).

Stalls: stall(pred) makes every connection whose request satisfies
pred(method, target) stop passing its answer to the client (the bytes are
held, the connection stays open) until release(); others keep flowing.

As a program (for trying things by hand):
    latency_proxy.py --target HOST:PORT [--delay-ms N] [--port P]
prints the port it listens on, and the requests and waves on Ctrl-C.
"""
import argparse
import asyncio
import collections
import socket
import sys
import threading
import time

CHUNK = 256 << 10
QUEUE_CAP = 64 << 20      # bytes in flight in one direction of a connection


class Request:
    __slots__ = ('method', 'target', 'arrived', 'wave', 'conn', 'answered')

    def __init__(self, method, target, arrived, wave, conn):
        self.method, self.target, self.arrived = method, target, arrived
        self.wave, self.conn, self.answered = wave, conn, None

    def __repr__(self):
        return f'{self.method} {self.target} (wave {self.wave})'


class _Conn:
    """The proxy's view of one client connection."""

    def __init__(self, proxy, cid):
        self.proxy, self.cid = proxy, cid
        self.head = bytearray()     # the request head being read
        self.body_left = 0          # bytes of the current request's body
        self.parsing = True         # false after something we cannot parse
        self.pending = None         # the request waiting for its answer
        self.stalled = False

    def feed(self, data, now):
        """Finds the requests that start in data (client to server)."""
        i = 0
        while self.parsing and i < len(data):
            if self.body_left:
                n = min(self.body_left, len(data) - i)
                self.body_left -= n
                i += n
                continue
            end = data.find(b'\r\n\r\n', i)
            if end < 0:
                self.head += data[i:]
                if len(self.head) > 1 << 20:
                    self.parsing = False
                return
            self.head += data[i:end + 4]
            i = end + 4
            self._request(bytes(self.head), now)
            self.head.clear()

    def _request(self, head, now):
        lines = head.decode('latin-1').split('\r\n')
        parts = lines[0].split(' ')
        if len(parts) < 3:
            self.parsing = False
            return
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(':')
            name = name.strip().lower()
            if name == 'content-length':
                length = int(value.strip() or 0)
            elif name == 'transfer-encoding' and 'chunked' in value.lower():
                self.parsing = False
        self.body_left = length
        self.proxy._arrived(self, parts[0], parts[1], now)

    def answered(self, now):
        """The first bytes of an answer reached the client."""
        if self.pending is not None:
            self.proxy._answered(self.pending, now)
            self.pending = None


class ServerThread:
    """An asyncio server listening on an event loop of its own, in a thread:
    start(loop) is the coroutine making it (loop.create_server,
    asyncio.start_server).  Once made: .loop, .server, .port; what making
    it raised is raised here.  stop(shutdown) runs the coroutine
    shutdown() on the loop (10 s at most; None: the server is closed),
    then ends the loop and its thread.  Used by LatencyProxy and by
    pacing_proxy.py."""

    def __init__(self, start):
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        error = []

        def run():
            asyncio.set_event_loop(self.loop)
            try:
                self.server = self.loop.run_until_complete(start(self.loop))
                self.port = self.server.sockets[0].getsockname()[1]
            except Exception as e:      # raised by __init__
                error.append(e)
                started.set()
                return
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        started.wait()
        if error:
            raise error[0]

    def stop(self, shutdown=None):
        try:
            if shutdown:
                asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
            else:
                self.loop.call_soon_threadsafe(self.server.close)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)


class LatencyProxy:
    """See the module's docstring.  Runs its own event loop in a thread."""

    def __init__(self, upstream, delay_ms=0.0, host='127.0.0.1', port=0):
        self.upstream = upstream
        self.delay = delay_ms / 1000.0
        self.lock = threading.Lock()
        self.requests = []
        self.max_answered_wave = 0
        self.stall_pred = None
        self.conns = 0
        self.bytes_down = 0
        self._ids = 0
        self._stalled = []          # (conn, event) of held connections
        self._srv = ServerThread(lambda loop: asyncio.start_server(self._client, host, port))
        self._loop, self._server, self.port = self._srv.loop, self._srv.server, self._srv.port
        self.endpoint = f'http://{host}:{self.port}'

    # ------------------------------------------------------------ statistics

    def reset(self):
        """Forgets the requests seen (the waves start again at 1)."""
        with self.lock:
            self.requests = []
            self.max_answered_wave = 0
            self.bytes_down = 0

    def waves(self):
        with self.lock:
            return max((r.wave for r in self.requests), default=0)

    def count(self, method=None):
        with self.lock:
            return sum(1 for r in self.requests if method is None or r.method == method)

    def summary(self):
        with self.lock:
            by = collections.Counter(r.method for r in self.requests)
        return {'requests': sum(by.values()), 'waves': self.waves(), **by}

    def set_delay(self, delay_ms):
        self.delay = delay_ms / 1000.0

    def _arrived(self, conn, method, target, now):
        with self.lock:
            req = Request(method, target, now, self.max_answered_wave + 1, conn.cid)
            self.requests.append(req)
            pred = self.stall_pred
        conn.pending = req
        if pred is not None and pred(method, target):
            conn.stalled = True

    def _answered(self, req, now):
        with self.lock:
            req.answered = now
            if req.wave > self.max_answered_wave:
                self.max_answered_wave = req.wave

    # ---------------------------------------------------------------- stalls

    def stall(self, pred=lambda method, target: True):
        """Holds the answers of the requests that satisfy pred from now on."""
        with self.lock:
            self.stall_pred = pred

    def release(self):
        """Stops stalling: held answers flow again."""
        with self.lock:
            self.stall_pred = None

        def wake():
            for conn, ev in self._stalled:
                conn.stalled = False
                ev.set()
            self._stalled.clear()
        self._loop.call_soon_threadsafe(wake)

    # ----------------------------------------------------------------- pumps

    async def _client(self, creader, cwriter):
        with self.lock:
            self._ids += 1
            cid = self._ids
            self.conns += 1
        conn = _Conn(self, cid)
        try:
            sreader, swriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        for w in (cwriter, swriter):
            sock = w.get_extra_info('socket')
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        up = asyncio.ensure_future(self._pump(creader, swriter, conn, True))
        down = asyncio.ensure_future(self._pump(sreader, cwriter, conn, False))
        done, _ = await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        if up in done and not conn.stalled:
            # the client is done sending: its last answer may be on its way
            try:
                await asyncio.wait_for(down, self.delay + 60)
            except (asyncio.TimeoutError, Exception):
                pass
        for t in (up, down):
            t.cancel()
        for w in (cwriter, swriter):
            try:
                w.close()
            except Exception:
                pass

    async def _pump(self, reader, writer, conn, upstream):
        """Copies reader to writer, each chunk `delay` seconds late."""
        q = collections.deque()
        have = asyncio.Event()
        room = asyncio.Event()
        room.set()
        state = {'queued': 0, 'eof': False}

        async def deliver():
            while True:
                while not q:
                    if state['eof']:
                        return
                    have.clear()
                    await have.wait()
                due, data = q[0]
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                while not upstream and conn.stalled:
                    ev = asyncio.Event()
                    self._stalled.append((conn, ev))
                    await ev.wait()
                q.popleft()
                state['queued'] -= len(data)
                if state['queued'] < QUEUE_CAP:
                    room.set()
                if not upstream:
                    conn.answered(time.monotonic())
                    with self.lock:
                        self.bytes_down += len(data)
                writer.write(data)
                await writer.drain()

        out = asyncio.ensure_future(deliver())
        try:
            while True:
                await room.wait()
                data = await reader.read(CHUNK)
                if not data:
                    break
                now = time.monotonic()
                if upstream:
                    conn.feed(data, now)
                q.append((now + self.delay, data))
                state['queued'] += len(data)
                if state['queued'] >= QUEUE_CAP:
                    room.clear()
                have.set()
            state['eof'] = True
            have.set()
            await out
            if upstream and writer.can_write_eof():
                writer.write_eof()
            elif not upstream:
                writer.close()
        except (ConnectionError, OSError):
            pass
        finally:
            out.cancel()

    def close(self):
        async def shutdown():
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.release()
        self._srv.stop(shutdown)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--target', required=True, help='HOST:PORT of the server')
    ap.add_argument('--delay-ms', type=float, default=0.0, help='one-way delay')
    ap.add_argument('--port', type=int, default=0)
    a = ap.parse_args()
    host, _, port = a.target.rpartition(':')
    p = LatencyProxy((host, int(port)), a.delay_ms, port=a.port)
    print(f'listening on 127.0.0.1:{p.port}', flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print(p.summary())
        p.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
