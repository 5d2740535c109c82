"""The trace writer: turns the tracer's queued items into records (records.describe decodes the
frames that need it) and writes them to a sink (sink.py). It runs in its own process
(`python -m shim.trace.writer`, started by tracer.py), so decoding, JSON and compression never hold
the proxy's GIL; tracer.py runs it on a thread instead only when that process cannot start.

Input on stdin: first `Settings` (a 4-byte big-endian length and a pickle), then messages: a head
(length and pickle of `(now_ns, dropped_total, items, sizes)`, each queued frame's bytes in `items`
replaced by its number) followed by the frames' bytes, `sizes[i]` of them for frame i, as they are
(no pickling: a megabyte Fetch answer is copied once into the pipe and once out). `now_ns` is the
proxy's clock when the message was sent (the time of the writer's own records: start, dropped,
stop), `dropped_total` the tracer's count of items it could not queue. End of input ends the trace
(a `trace_stop` record).
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from . import records as R
from .sink import FLUSH_S, open_sink

log = logging.getLogger("kshim.trace")

FRAME, EVENT, OPEN, UPSTREAM, CLOSE = 0, 1, 2, 3, 4
_LEN = struct.Struct(">I")


@dataclass(frozen=True)
class Settings:
    directory: str
    bodies: bool
    rotate_bytes: int
    fmt: str
    mono0: int     # the proxy's clock (ns) at wall0
    wall0: int     # ms since the epoch
    pid: int       # the proxy's pid


class TraceWriter:
    """Items in, records out to the sink; its counters are its own (one thread or process)."""

    def __init__(self, settings: Settings, sink=None):
        self.s = settings
        self.sink = sink or open_sink(settings.fmt, Path(settings.directory), settings.rotate_bytes)
        self.written = 0
        self.dropped = 0          # the tracer's total, as last told, plus records the sink refused
        self._refused = 0
        self._reported_drops = 0
        self._failed = False
        self._last_flush = time.monotonic()
        self._conns: dict[int, dict] = {}
        self._context: dict = {}  # (conn, corr) -> group fields of a request, for its response
        self._recent: dict = {}   # (conn, corr, is_request) -> (frame, described): a forwarded frame is decoded once

    def _wall(self, ts: int) -> int:
        return self.s.wall0 + (ts - self.s.mono0) // 1_000_000

    def write(self, now: int, dropped: int, items: list) -> None:
        """Records for `items` (and a `dropped` record when the tracer's count grew), written."""
        recs = []
        for item in items:
            try:
                recs.append(self._record(item))
            except Exception as e:  # never let one odd item stop the trace
                recs.append({"type": "trace_error", "ts_ns": item[1], "info": {"error": repr(e)[:300]}})
        self.dropped = dropped + self._refused
        if self.dropped != self._reported_drops:
            recs.append({"type": "dropped", "ts_ns": now, "wall_ms": self._wall(now),
                         "info": {"count": self.dropped - self._reported_drops, "total": self.dropped}})
            self._reported_drops = self.dropped
        if not recs:
            return
        try:
            if not self.sink.is_open:
                recs.insert(0, self._header(now))
            self.sink.write(recs)
            self.written += len(recs)
            self._failed = False
        except Exception as e:
            if not self._failed:
                log.error("trace: cannot write to %s (%s); records are dropped until it works", self.s.directory, e)
            self._failed = True
            self._refused += len(recs)

    def idle(self) -> None:
        """Nothing came in a while: flush (a reader of the open file sees what was written)."""
        now = time.monotonic()
        if now - self._last_flush >= FLUSH_S:
            self._last_flush = now
            self._safe(self.sink.flush)

    def stop(self, now: int, dropped: int) -> None:
        self.write(now, dropped, [])
        try:
            if self.sink.is_open:
                self.sink.write([{"type": "trace_stop", "ts_ns": now, "wall_ms": self._wall(now),
                                  "info": {"dropped": self.dropped, "records": self.written}}])
        except Exception:
            pass
        self._safe(self.sink.close)

    def _header(self, now: int) -> dict:
        return {"type": "trace_start", "ts_ns": now, "wall_ms": self._wall(now),
                "info": {"kshim": __version__, "pid": self.s.pid, "bodies": self.s.bodies,
                         "format": 1, "dropped_so_far": self.dropped}}

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
            is_request = direction < 2
            key = (conn, corr, is_request)
            hit = self._recent.pop(key, None)
            if hit is not None and (hit[0] is data or hit[0] == data):
                desc = hit[1]
            else:
                desc = R.describe(api_key, version, data, is_request, self.s.bodies)
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


def pack(obj) -> bytes:
    """One pickled object with its length (the settings; a message's head)."""
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(body)) + body


def message(now: int, dropped: int, items: list) -> list:
    """The buffers of one message, to be written in order (os.writev): its head (the items, each
    frame's bytes replaced by its number, and the frames' sizes) then the frames' bytes as they are
    (a frame queued twice, forwarded as it came, goes once; a streamed one's parts go one by one)."""
    buffers: list = []
    sizes: list[int] = []
    numbers: dict[int, int] = {}
    out = []
    for item in items:
        if item[0] == FRAME and item[8] is not None:
            data = item[8]
            k = numbers.get(id(data))
            if k is None:
                k = numbers[id(data)] = len(sizes)
                sizes.append(item[7])
                if type(data) is tuple:
                    buffers += data
                else:
                    buffers.append(data)
            item = item[:8] + (k,) + item[9:]
        out.append(item)
    return [pack((now, dropped, out, sizes)), *buffers]


def _read_into(f, buf) -> bool:
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = f.readinto(view[got:])
        if not n:
            return False
        got += n
    return True


def _read_object(f):
    head = bytearray(4)
    if not _read_into(f, head):
        return None
    body = bytearray(_LEN.unpack(head)[0])
    return pickle.loads(body) if _read_into(f, body) else None


def read_message(f) -> tuple | None:
    """(now, dropped, items) of the next message on `f` (a raw file), None at its end."""
    head = _read_object(f)
    if head is None:
        return None
    now, dropped, items, sizes = head
    frames = []
    for size in sizes:
        buf = bytearray(size)
        if not _read_into(f, buf):
            return None
        frames.append(buf)
    return now, dropped, [item[:8] + (frames[item[8]],) + item[9:] if item[0] == FRAME and item[8] is not None
                          else item for item in items]


def serve(fd: int) -> None:
    """The writer process: messages from `fd` until its end, then the trace's stop record."""
    f = os.fdopen(fd, "rb", buffering=0, closefd=False)
    settings: Settings | None = _read_object(f)
    if settings is None:
        return
    writer = TraceWriter(settings)
    now, dropped = settings.mono0, 0
    while True:
        ready, _, _ = select.select([fd], [], [], FLUSH_S / 4)
        if not ready:
            writer.idle()
            continue
        got = read_message(f)
        if got is None:
            break
        now, dropped, items = got
        writer.write(now, dropped, items)
        writer.idle()
    writer.stop(now, dropped)


if __name__ == "__main__":
    # the proxy decides when the trace ends (its end of the pipe closes): not a Ctrl-C or SIGTERM
    # sent to the whole process group
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(sys.stdin.fileno())
