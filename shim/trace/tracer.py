"""The tracer: a cheap enqueue on the event loop, everything else in a writer process.

Hot path (`Tracer.frame`, called by the session for every frame): one clock read, one tuple, one
deque append. The frame's bytes are queued only when the record needs them (the decoded APIs, the
Produce requests and Fetch responses whose batch headers are described); everything else is traced
from the header fields the proxy peeked anyway. The queue is bounded by items and by queued bytes:
on overflow the record is dropped and counted (a `dropped` record tells how many), the proxy never
waits for the disk.

A pump thread takes what is queued every ~20 ms and sends it, pickled, down a pipe to the writer
process (writer.py), which decodes (records.describe), serialises and writes (sink.py): that work
never holds the proxy's GIL. The pump's pickling and pipe writes are C work; a full pipe blocks
only the pump (the queue then fills and drops). When the process cannot start, or with
`process=False`, the pump thread writes itself (the writer's code, on the thread). Counters
crossing threads are each written by one thread only.
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

from . import records as R
from .writer import CLOSE, EVENT, FRAME, OPEN, UPSTREAM, Settings, TraceWriter, message, pack

log = logging.getLogger("kshim.trace")

_now = time.monotonic_ns
BATCH = 5000          # items per message at most
PIPE_BYTES = 1 << 20  # the pipe to the writer process
IOV_MAX = 1024
# glibc's malloc in the writer process: megabyte frames from the heap, and the heap not given back
# after each one (by default every such frame is a fresh mmap whose pages fault in one by one: that
# was most of the writer's time on a Fetch answer); other C libraries ignore these
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}


def _write_all(fd: int, buffers: list) -> None:
    """Every byte of `buffers`, in order, with as few system calls as the pipe allows."""
    views = [memoryview(b).cast("B") for b in buffers]
    i = 0
    while i < len(views):
        n = os.writev(fd, views[i:i + IOV_MAX])
        while n:
            left = views[i].nbytes
            if n >= left:
                n -= left
                i += 1
            else:
                views[i] = views[i][n:]
                n = 0
        while i < len(views) and not views[i].nbytes:
            i += 1


class Tracer:
    def __init__(self, directory: str | Path, bodies: bool = False, rotate_mb: float = 64, fmt: str = "jsonl",
                 max_items: int = 200_000, max_bytes: int = 64 * 1024 * 1024, sink=None, process: bool = True):
        self.dir = Path(directory)
        self.bodies = bodies
        self.max_items, self.max_bytes = max_items, max_bytes
        self.q: deque = deque()
        # loop-thread counters
        self.queued_bytes = 0
        self.dropped = 0
        self._next_conn = 0
        # pump-thread counters
        self.done_bytes = 0
        self.sent = 0
        keys = range(0, 128)
        self._keep = (frozenset(k for k in keys if R.wants_frame(k, True, bodies)),
                      frozenset(k for k in keys if R.wants_frame(k, False, bodies)))
        self.settings = Settings(str(self.dir), bodies, int(rotate_mb * 1024 * 1024), fmt,
                                 _now(), time.time_ns() // 1_000_000, os.getpid())
        self.dir.mkdir(parents=True, exist_ok=True)
        self.writer: TraceWriter | None = None
        self.proc: subprocess.Popen | None = None
        if process and sink is None:
            self.proc = self._start_process()
        if self.proc is None:
            self.writer = TraceWriter(self.settings, sink)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kshim-trace-pump", daemon=True)
        self._thread.start()

    def _start_process(self) -> subprocess.Popen | None:
        """`python -m shim.trace.writer`, on this process's module path, fed the settings first."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **MALLOC_ENV}
        try:
            proc = subprocess.Popen([sys.executable, "-m", "shim.trace.writer"], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, env=env, close_fds=True)
            try:   # room for a large Fetch answer in one write (Linux; the default is 64 KB)
                fcntl.fcntl(proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except (OSError, AttributeError):
                pass
            os.write(proc.stdin.fileno(), pack(self.settings))
            return proc
        except (OSError, ValueError) as e:
            log.warning("trace: no writer process (%s); writing on a thread of the proxy", e)
            return None

    # ------------------------------------------------------------------ event loop side
    def new_conn(self) -> int:
        self._next_conn += 1
        return self._next_conn

    def frame(self, conn: int, direction: int, api_key: int, version: int, corr: int, frame,
              client_id: str | None = None, ts: int | None = None, size: int | None = None) -> None:
        """`ts`: the clock reading taken before the frame was written (a write may give the GIL to the
        pump thread for a while: a reading after it can lag the wire by tens of ms on a busy machine).
        `size`: the frame's bytes when `frame` is a streamed frame's parts (Tracer.streamed)."""
        q = self.q
        if len(q) >= self.max_items:
            self.dropped += 1
            return
        if size is None:
            size = len(frame)
        data = None
        if api_key in self._keep[direction >= 2]:
            if self.queued_bytes - self.done_bytes + size > self.max_bytes:
                self.dropped += 1
                return
            self.queued_bytes += size
            data = frame
        q.append((FRAME, ts or _now(), conn, direction, api_key, version, corr, size, data, client_id))

    def streamed(self, conn: int, directions: tuple[int, int], api_key: int, version: int, corr: int,
                 client_id: str | None, chunks: list) -> None:
        """A frame the proxy passed on as it arrived (`chunks`, its bytes after the length, in order),
        traced once it is through, in both `directions` (e.g. upstream->kshim, kshim->client); the
        pump joins the parts (once for both)."""
        parts, ts = tuple(chunks), _now()
        size = sum(map(len, parts))
        first, second = directions
        self.frame(conn, first, api_key, version, corr, parts, client_id, ts, size)
        self.frame(conn, second, api_key, version, corr, parts, None, ts, size)

    def _put(self, item: tuple) -> None:
        if len(self.q) >= self.max_items:
            self.dropped += 1
        else:
            self.q.append(item)

    def conn_open(self, conn: int, peer: str, listener: str) -> None:
        self._put((OPEN, _now(), conn, peer, listener))

    def upstream_open(self, conn: int, upstream: str) -> None:
        self._put((UPSTREAM, _now(), conn, upstream))

    def conn_close(self, conn: int) -> None:
        self._put((CLOSE, _now(), conn))

    def event(self, ev: dict) -> None:
        """A coordinator event (GroupService's on_event), in the same stream as the frames."""
        self._put((EVENT, _now(), dict(ev)))

    def close(self, timeout: float = 10.0) -> None:
        """Drain the queue, then end the trace (its stop record) and wait for the writer."""
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.error("trace: the queue was not drained in %.0f s; the trace ends without its stop record", timeout)
            return
        now = _now()
        if self.writer is not None:
            self.writer.stop(now, self.dropped)
        elif self.proc is not None:
            self._send([])
            self._safe_close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.error("trace: the writer process did not finish in %.0f s; stopping it", timeout)
                self.proc.kill()

    # ------------------------------------------------------------------ pump thread
    def _run(self) -> None:
        while True:
            stopping = self._stop.is_set()
            q = self.q
            if q:
                n = min(len(q), BATCH)
                batch = [q.popleft() for _ in range(n)]
                self._ship(batch)
                continue
            if self.writer is not None:
                self.writer.idle()
            if stopping:
                break
            self._stop.wait(0.02)

    def _ship(self, batch: list) -> None:
        size = sum(item[7] for item in batch if item[0] == FRAME and item[8] is not None)
        if self.writer is not None:
            for i, item in enumerate(batch):
                if item[0] == FRAME and type(item[8]) is tuple:   # a streamed frame's parts
                    batch[i] = item[:8] + (b"".join(item[8]),) + item[9:]
            self.writer.write(_now(), self.dropped, batch)
        elif not self._send(batch):
            self.dropped += len(batch)   # racy with the loop's += only in the count, never in safety
        self.done_bytes += size
        self.sent += len(batch)

    def _send(self, items: list) -> bool:
        proc = self.proc
        if proc is None or proc.stdin is None:
            return False
        try:
            buffers = message(_now(), self.dropped, items)
        except Exception:   # an item that does not pickle (an odd event): send the others
            kept = [i for i in items if self._picklable(i)]
            self.dropped += len(items) - len(kept)
            buffers = message(_now(), self.dropped, kept)
        try:
            _write_all(proc.stdin.fileno(), buffers)
            return True
        except (OSError, ValueError) as e:
            log.error("trace: the writer process is gone (%s); records are dropped", e)
            self._safe_close()
            return False

    @staticmethod
    def _picklable(item) -> bool:
        try:
            pack(item)
            return True
        except Exception:
            return False

    def _safe_close(self) -> None:
        proc = self.proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
            proc.stdin = None
