"""Kafka frames out of one reassembled TCP direction (streams.HalfStream's sink).

A Kafka connection is a series of frames, each an int32 size then that many bytes. The framer stays
in step across holes of a known size: a hole inside a frame whose size was read loses that frame
only (counted in `lost`), the next one starts where the size says. It loses step when a hole covers
a frame's start, when the capture began mid-connection, or at a size no Kafka frame has; it finds
the next frame boundary again (`resync`) by checking candidates:
- requests (client side): size, API key, version, correlation id and client id form a valid request
  header and the body decodes with exactly the bytes the size gives; the correlation ids the client
  is expected to use next (clients count up) are looked for first;
- responses (broker side): the correlation id is one of the connection's requests still waiting for
  an answer, and the body decodes as that request's API and version.
Bytes skipped while out of step are counted (`skipped_bytes`), never guessed at.
"""

from __future__ import annotations

import re
import struct
from collections import deque

from kcodec import api

MAX_FRAME = 256 * 1024 * 1024
RESYNC_SCAN = 64 * 1024 * 1024    # the largest frame waited for while out of step (fetch.max.bytes is 50 MB)
# out of step on the broker side, bytes no waiting request explains are kept up to this much: the
# capture may have written an answer before its request (the two directions' packets out of order)
EARLY_HOLD = 1024 * 1024
# where a request may start (checked by request_header_ok): a size below 256 MB, an API key below 128, a
# version below 32, a correlation id >= 0 and a client id length of -1 or below 256 (lookahead: overlapping)
_RESPONSE_START: dict = {}        # the high two bytes of waiting correlation ids -> expression (framing)
_REQUEST_START = re.compile(rb"(?=[\x00-\x0f][\s\S]{3}\x00[\x00-\x7f]\x00[\x00-\x1f][\x00-\x7f][\s\S]{3}"
                            rb"(?:\x00|\xff\xff))")
_I32 = struct.Struct(">i")
_REQ_HEAD = struct.Struct(">ihhi")  # size, api key, version, correlation id


def request_header_ok(buf, p: int) -> bool:
    """Whether a valid request header starts at p (size, key, version, correlation id, client id)."""
    if len(buf) - p < 14:
        return False
    size, key, version, corr = _REQ_HEAD.unpack_from(buf, p)
    span = api.VERSIONS.get(key)
    if span is None or not 0 <= version <= span[1] or corr < 0 or not 10 <= size <= MAX_FRAME:
        return False
    n = struct.unpack_from(">h", buf, p + 12)[0]
    if n < -1 or n > size - 10 or len(buf) - p < 14 + max(n, 0):
        return n >= -1 and n <= size - 10
    try:
        text = bytes(buf[p + 14:p + 14 + max(n, 0)]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.isprintable()


def request_decodes(frame: bytes) -> bool:
    try:
        key, version = struct.unpack_from(">hh", frame, 0)
        hv = api.request_header_version(key, version)
        _, pos = api.RequestHeader.decode_from(frame, 0, hv)
        if version < api.VERSIONS[key][0]:
            return True                # a version this codec no longer reads: the header is enough
        api.decode_request(key, version, bytes(frame[pos:]))
        return True
    except Exception:
        return False


def response_decodes(frame: bytes, key: int, version: int) -> bool:
    try:
        hv = api.response_header_version(key, version)
        _, pos = api.ResponseHeader.decode_from(frame, 0, hv)
        if version < api.VERSIONS[key][0]:
            return True
        api.decode_response(key, version, bytes(frame[pos:]))
        return True
    except Exception:
        return False


class Framer:
    """`on_frame(frame bytes, ts)` for every whole frame of one direction (without its size); `ts` is
    the capture time of the segment that brought the frame's last byte."""

    def __init__(self, requests: bool, conn, on_frame):
        self.requests = requests
        self.conn = conn                  # connections.Connection: pending requests, client id
        self.on_frame = on_frame
        self.buf = bytearray()
        self.marks: deque = deque()       # [bytes of buf, ts] per chunk, in buf order
        self.synced = True
        self.want = 0                     # size of the frame being read (0: at a boundary)
        self.skip = 0                     # bytes still to drop of a frame cut by a hole
        self.frames = 0
        self.lost = 0                     # frames cut by holes
        self.resyncs = 0
        self.skipped_bytes = 0
        self.midstream_start = False
        # out of step: candidate frame starts (buffer position -> check), where to look on from, and
        # the correlation ids already looked for
        self.cands: dict[int, object] = {}
        self.scan_from = 0
        self.searched: set[int] = set()
        self.running = False

    # -------------------------------------------------------------- HalfStream's sink
    def midstream(self, ts: float) -> None:
        self.midstream_start = True
        self.synced = False

    def data(self, chunk: bytes, ts: float) -> None:
        if self.skip:
            n = min(self.skip, len(chunk))
            self.skip -= n
            chunk = chunk[n:]
            if not chunk:
                return
        self.buf += chunk
        self.marks.append([len(chunk), ts])
        self._run()

    def gap(self, n: int, ts: float) -> None:
        if self.skip:
            if n <= self.skip:
                self.skip -= n
                return
            self.skip = 0
            self._lose_step()
            return
        if self.synced and self.want:
            left = self.want + 4 - len(self.buf)
            self.lost += 1
            self._drop(len(self.buf))
            self.want = 0
            if n < left:
                self.skip = left - n
                return
            if n == left:
                return
        self._lose_step()

    def retry(self) -> None:
        """A request newly waiting for its answer: look for that answer in what is kept out of step."""
        if not self.synced and self.buf and not self.running:
            self._run()

    def end(self, ts: float) -> None:
        if self.buf and self.synced and self.want:
            self.lost += 1                # the connection ended inside a frame
        elif self.buf and not self.synced:
            self.skipped_bytes += len(self.buf)
        self._drop(len(self.buf))

    # -------------------------------------------------------------- framing
    def _drop(self, n: int) -> float | None:
        """Takes n bytes off the front of the buffer; the ts of the last of them."""
        del self.buf[:n]
        if self.cands:
            self.cands = {p - n: c for p, c in self.cands.items() if p >= n}
        self.scan_from = max(self.scan_from - n, 0)
        ts = None
        marks = self.marks
        while n > 0 and marks:
            m = marks[0]
            ts = m[1]
            if m[0] <= n:
                n -= m[0]
                marks.popleft()
            else:
                m[0] -= n
                n = 0
        return ts

    def _lose_step(self) -> None:
        if self.synced:
            self.resyncs += 1
        self.synced = False
        self.skipped_bytes += len(self.buf)
        self._drop(len(self.buf))
        self.want = 0
        self.searched.clear()

    def _run(self) -> None:
        self.running = True
        try:
            self._frames()
        finally:
            self.running = False

    def _frames(self) -> None:
        buf = self.buf
        while True:
            if not self.synced and not self._resync():
                return
            if len(buf) < 4:
                return
            if not self.want:
                size = _I32.unpack_from(buf, 0)[0]
                if not (0 < size <= MAX_FRAME) or (self.requests and len(buf) >= 14 and not request_header_ok(buf, 0)):
                    self.resyncs += 1
                    self.synced = False
                    continue
                self.want = size
            end = self.want + 4
            if len(buf) < end:
                return
            frame = bytes(buf[4:end])
            ts = self._drop(end)
            self.want = 0
            self.frames += 1
            self.on_frame(frame, ts)

    def _resync(self) -> bool:
        """Find the next frame boundary in the buffer; False: need more bytes. Candidates are looked
        for once per byte (new bytes, and old ones for a request newly waiting for its answer); one whose
        frame is all here and decodes wins; else the buffer is kept from the first one still arriving
        (no larger than RESYNC_SCAN); else, on the broker side, up to EARLY_HOLD is kept for requests still to
        come; else all but a short tail is skipped."""
        buf, cands = self.buf, self.cands
        start = max(self.scan_from - 16, 0)
        if not self.requests and self.conn.up.held:
            # answers while the client side holds segments behind a hole: the broker had those bytes,
            # the capture missed them; give the requests out so the answers can be matched
            self.conn.up.give_up_holes(self.marks[-1][1] if self.marks else 0.0)
        (self._request_candidates if self.requests else self._response_candidates)(start)
        self.scan_from = len(buf)
        waiting = None
        for p in sorted(cands):
            size = _I32.unpack_from(buf, p)[0]
            if len(buf) < p + 4 + size:
                if waiting is None and size <= RESYNC_SCAN:
                    waiting = p
                continue
            if cands.pop(p)(bytes(buf[p + 4:p + 4 + size])):
                self.skipped_bytes += p
                self._drop(p)
                cands.clear()
                self.searched.clear()
                self.synced, self.want, self.scan_from = True, 0, 0
                return True
        if waiting is not None:
            self.skipped_bytes += waiting
            self._drop(waiting)
            return False
        if not self.requests and len(buf) <= EARLY_HOLD:
            return False                  # kept: its request may come next (retry)
        keep = 64 if len(buf) > 64 else len(buf)
        self.skipped_bytes += len(buf) - keep
        self._drop(len(buf) - keep)
        return False

    def _request_candidates(self, start: int) -> None:
        """Positions from `start` where a valid request header starts: at the correlation ids a client
        uses next (it counts up), at its client id, and wherever the bytes look like a request header
        (_REQUEST_START)."""
        buf, cands = self.buf, self.cands

        def add(p: int) -> None:
            if p >= 0 and p not in cands and request_header_ok(buf, p):
                cands[p] = request_decodes
        last = self.conn.last_corr
        if last is not None:
            for c in range(last + 1, last + 65):
                needle = _I32.pack(c)
                i = buf.find(needle, start)
                while i >= 0:
                    add(i - 8)
                    i = buf.find(needle, i + 1)
        cid = self.conn.client_id
        if cid is not None:
            needle = struct.pack(">h", len(cid.encode())) + cid.encode()
            i = buf.find(needle, start)
            while i >= 0:
                add(i - 12)
                i = buf.find(needle, i + 1)
        for m in _REQUEST_START.finditer(buf, start):
            add(m.start())

    def _response_candidates(self, start: int) -> None:
        """Positions of an answer to a request still waiting on this connection: a plausible size,
        then the request's correlation id (found with one expression over the high bytes the waiting
        ids share), checked by decoding as that request's API and version. A request newly waiting is
        looked for in the whole buffer."""
        buf, cands, pending = self.buf, self.cands, self.conn.pending
        if not pending:
            return
        new = [c for c in pending if c not in self.searched]
        self.searched.update(new)
        highs = frozenset(_I32.pack(c)[:2] for c in pending)
        expr = _RESPONSE_START.get(highs)
        if expr is None:
            if len(_RESPONSE_START) > 64:
                _RESPONSE_START.clear()
            expr = _RESPONSE_START[highs] = re.compile(
                rb"(?=[\x00-\x0f][\s\S]{3}(?:" + b"|".join(re.escape(h) for h in sorted(highs)) + rb")[\s\S]{2})")
        for m in expr.finditer(buf, 0 if new else start):
            p = m.start()
            if p in cands:
                continue
            found = pending.get(_I32.unpack_from(buf, p + 4)[0])
            if found is not None and _I32.unpack_from(buf, p)[0] >= 4:
                cands[p] = lambda f, k=found[0], v=found[1]: response_decodes(f, k, v)
