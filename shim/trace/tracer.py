"""The tracer: a cheap enqueue on the event loop, everything else on a writer thread.

Hot path (`Tracer.frame`, called by the session for every frame): one clock read, one tuple, one
deque append. The frame's bytes are queued only when the record needs them (the decoded APIs, the
Produce requests and Fetch responses whose batch headers are described); everything else is traced
from the header fields the proxy peeked anyway. The queue is bounded by items and by queued bytes:
on overflow the record is dropped and counted (a `dropped` record tells how many), the proxy never
waits for the disk.

Writer thread: every ~20 ms it takes what is queued, decodes (records.describe), serialises and
writes (sink.py). Counters crossing threads are each written by one thread only.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from pathlib import Path

from .. import __version__
from . import records as R
from .sink import open_sink

log = logging.getLogger("kshim.trace")

FRAME, EVENT, OPEN, UPSTREAM, CLOSE = 0, 1, 2, 3, 4
_now = time.monotonic_ns


class Tracer:
    def __init__(self, directory: str | Path, bodies: bool = False, rotate_mb: float = 64, fmt: str = "jsonl",
                 max_items: int = 200_000, max_bytes: int = 64 * 1024 * 1024, sink=None):
        self.dir = Path(directory)
        self.bodies = bodies
        self.max_items, self.max_bytes = max_items, max_bytes
        self.sink = sink or open_sink(fmt, self.dir, int(rotate_mb * 1024 * 1024))
        self.q: deque = deque()
        # loop-thread counters
        self.queued_bytes = 0
        self.dropped = 0
        self._next_conn = 0
        # writer-thread state
        self.done_bytes = 0
        self.written = 0
        self._reported_drops = 0
        self._conns: dict[int, dict] = {}
        self._context: dict = {}  # (conn, corr) -> group fields of a request, for its response
        self._recent: dict = {}   # (conn, corr, is_request) -> (frame, described): a forwarded frame is decoded once
        self._mono0, self._wall0 = _now(), time.time_ns() // 1_000_000
        keys = range(0, 128)
        self._keep = (frozenset(k for k in keys if R.wants_frame(k, True, bodies)),
                      frozenset(k for k in keys if R.wants_frame(k, False, bodies)))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kshim-trace-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ event loop side
    def new_conn(self) -> int:
        self._next_conn += 1
        return self._next_conn

    def frame(self, conn: int, direction: int, api_key: int, version: int, corr: int, frame,
              client_id: str | None = None, ts: int | None = None) -> None:
        """`ts`: the clock reading taken before the frame was written (a write may give the GIL to the
        writer thread for a while: a reading after it can lag the wire by tens of ms on a busy machine)."""
        q = self.q
        if len(q) >= self.max_items:
            self.dropped += 1
            return
        size = len(frame)
        data = None
        if api_key in self._keep[direction >= 2]:
            if self.queued_bytes - self.done_bytes + size > self.max_bytes:
                self.dropped += 1
                return
            self.queued_bytes += size
            data = frame
        q.append((FRAME, ts or _now(), conn, direction, api_key, version, corr, size, data, client_id))

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
        self._stop.set()
        self._thread.join(timeout)

    # ------------------------------------------------------------------ writer thread
    def _wall(self, ts: int) -> int:
        return self._wall0 + (ts - self._mono0) // 1_000_000

    def _header(self) -> dict:
        ts = _now()
        return {"type": "trace_start", "ts_ns": ts, "wall_ms": self._wall(ts),
                "info": {"kshim": __version__, "pid": os.getpid(), "bodies": self.bodies,
                         "format": 1, "dropped_so_far": self.dropped}}

    def _run(self) -> None:
        last_flush = time.monotonic()
        failed = False
        while True:
            stopping = self._stop.is_set()
            batch = []
            q = self.q
            while q and len(batch) < 5000:
                batch.append(q.popleft())
            if batch:
                recs = []
                for item in batch:
                    try:
                        recs.append(self._record(item))
                    except Exception as e:  # never let one odd item stop the trace
                        recs.append({"type": "trace_error", "ts_ns": item[1], "info": {"error": repr(e)[:300]}})
                drops = self.dropped
                if drops != self._reported_drops:
                    ts = _now()
                    recs.append({"type": "dropped", "ts_ns": ts, "wall_ms": self._wall(ts),
                                 "info": {"count": drops - self._reported_drops, "total": drops}})
                    self._reported_drops = drops
                try:
                    if not self.sink.is_open:
                        recs.insert(0, self._header())
                    self.sink.write(recs)
                    self.written += len(recs)
                    failed = False
                except Exception as e:
                    if not failed:
                        log.error("trace: cannot write to %s (%s); records are dropped until it works", self.dir, e)
                    failed = True
                    self.dropped += len(recs)  # racy with the loop's += only in the count, never in safety
                continue
            now = time.monotonic()
            if now - last_flush >= 1.0:
                last_flush = now
                self._safe(self.sink.flush)
            if stopping:
                break
            self._stop.wait(0.02)
        ts = _now()
        try:
            if self.sink.is_open:
                self.sink.write([{"type": "trace_stop", "ts_ns": ts, "wall_ms": self._wall(ts),
                                  "info": {"dropped": self.dropped, "records": self.written}}])
        except Exception:
            pass
        self._safe(self.sink.close)

    @staticmethod
    def _safe(fn) -> None:
        try:
            fn()
        except Exception as e:
            log.error("trace: %s", e)

    def _record(self, item: tuple) -> dict:
        kind, ts = item[0], item[1]
        if kind == FRAME:
            return self._frame_record(item)
        if kind == EVENT:
            rec = R.event_record(item[2])
        else:
            conn = item[2]
            state = self._conns.setdefault(conn, {})
            rec = {"type": ("", "", "conn_open", "upstream_open", "conn_close")[kind], "conn": conn}
            if kind == OPEN:
                state.update(peer=item[3], listener=item[4])
            elif kind == UPSTREAM:
                state["upstream"] = item[3]
            rec.update(state)
            if kind == CLOSE:
                self._conns.pop(conn, None)
                self._recent = {k: v for k, v in self._recent.items() if k[0] != conn}
        rec["ts_ns"], rec["wall_ms"] = ts, self._wall(ts)
        return rec

    def _frame_record(self, item: tuple) -> dict:
        _, ts, conn, direction, api_key, version, corr, size, data, client_id = item
        state = self._conns.get(conn)
        if state is None:
            state = self._conns[conn] = {}
        if client_id is not None:
            state["client_id"] = client_id
        rec = {"type": "frame", "ts_ns": ts, "wall_ms": self._wall(ts), "conn": conn,
               "dir": R.DIRECTIONS[direction], **state, "api_key": api_key, "api": R.api_name(api_key),
               "api_version": version, "corr": corr, "size": size}
        if data is not None:
            self.done_bytes += size
            is_request = direction < 2
            key = (conn, corr, is_request)
            hit = self._recent.pop(key, None)
            if hit is not None and hit[0] is data:
                desc = hit[1]
            else:
                desc = R.describe(api_key, version, data, is_request, self.bodies)
                if direction in (R.C2K, R.U2K):   # the same bytes usually go on to the other side
                    self._recent[key] = (data, desc)
                    if len(self._recent) > 512:
                        del self._recent[next(iter(self._recent))]
            if "client_sw" in desc:
                state["client_sw"], state["client_sw_version"] = desc["client_sw"], desc["client_sw_version"]
            rec.update(desc)
            self._request_context(rec, key, is_request, direction)
        return rec

    def _request_context(self, rec: dict, key: tuple, is_request: bool, direction: int) -> None:
        """Responses carry no group id: give them their request's group (and instance)."""
        ctx = self._context
        if is_request:
            if "group" in rec and direction == R.C2K:
                ctx[(key[0], key[1])] = {k: rec[k] for k in ("group", "instance", "member", "generation") if k in rec}
                if len(ctx) > 4096:
                    del ctx[next(iter(ctx))]
            return
        found = ctx.pop((key[0], key[1]), None) if direction == R.K2C else ctx.get((key[0], key[1]))
        if found:
            for k, v in found.items():
                rec.setdefault(k, v)
