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

import struct

from kcodec import api

MAX_FRAME = 256 * 1024 * 1024
RESYNC_SCAN = 8 * 1024 * 1024     # bytes scanned one by one for a request boundary before giving them up
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
    """`on_frame(frame bytes, ts)` for every whole frame of one direction (without its size)."""

    def __init__(self, requests: bool, conn, on_frame):
        self.requests = requests
        self.conn = conn                  # importer.Connection: pending requests, last correlation id
        self.on_frame = on_frame
        self.buf = bytearray()
        self.synced = True
        self.want = 0                     # size of the frame being read (0: at a boundary)
        self.skip = 0                     # bytes still to drop of a frame cut by a hole
        self.frames = 0
        self.lost = 0                     # frames cut by holes
        self.resyncs = 0
        self.skipped_bytes = 0
        self.midstream_start = False

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
        self._run(ts)

    def gap(self, n: int, ts: float) -> None:
        if self.skip:
            if n <= self.skip:
                self.skip -= n
                return
            n -= self.skip
            self.skip = 0
            self._lose_step()
            return
        if self.synced and self.want:
            left = self.want + 4 - len(self.buf)
            self.lost += 1
            self.buf.clear()
            self.want = 0
            if n < left:
                self.skip = left - n
                return
            if n == left:
                return
        elif self.synced and not self.buf:
            pass
        self._lose_step()

    def end(self, ts: float) -> None:
        if self.buf and self.synced and self.want:
            self.lost += 1                # the connection ended inside a frame
        elif self.buf and not self.synced:
            self.skipped_bytes += len(self.buf)
        self.buf.clear()

    # -------------------------------------------------------------- framing
    def _lose_step(self) -> None:
        if self.synced:
            self.resyncs += 1
        self.synced = False
        self.skipped_bytes += len(self.buf)
        self.buf.clear()
        self.want = 0

    def _run(self, ts: float) -> None:
        buf = self.buf
        while True:
            if not self.synced and not self._resync():
                return
            if len(buf) < 4:
                return
            if not self.want:
                size = _I32.unpack_from(buf, 0)[0]
                if not (0 < size <= MAX_FRAME) or (self.requests and not request_header_ok(buf, 0) and len(buf) >= 14):
                    self.resyncs += 1
                    self.synced = False
                    continue
                self.want = size
            end = self.want + 4
            if len(buf) < end:
                return
            frame = bytes(buf[4:end])
            del buf[:end]
            self.want = 0
            self.frames += 1
            self.on_frame(frame, ts)

    def _resync(self) -> bool:
        """Find the next frame boundary in the buffer; False: need more bytes."""
        buf = self.buf
        start = self._find_request() if self.requests else self._find_response()
        if start is None:
            return False
        if start:
            self.skipped_bytes += start
            del buf[:start]
        self.synced = True
        self.want = 0
        return True

    def _drop_scanned(self, upto: int) -> None:
        if upto > 0:
            self.skipped_bytes += upto
            del self.buf[:upto]

    def _find_request(self) -> int | None:
        buf = self.buf
        last = self.conn.last_corr
        if last is not None:     # the next correlation ids a client uses: looked for with bytes.find
            found = []
            for c in range(last + 1, last + 65):
                i = buf.find(_I32.pack(c), 8)
                while i >= 8:
                    p = i - 8
                    verdict = self._request_at(p)
                    if verdict is True:
                        found.append(p)
                        break
                    if verdict is None:
                        return None
                    i = buf.find(_I32.pack(c), i + 1)
            if found:
                return min(found)
        limit = min(len(buf) - 13, RESYNC_SCAN)
        for p in range(0, max(limit, 0)):
            verdict = self._request_at(p)
            if verdict is True:
                return p
            if verdict is None:
                self._drop_scanned(p)
                return None
        self._drop_scanned(max(limit, 0))
        return None

    def _request_at(self, p: int):
        """True: a request starts at p; False: not; None: maybe, more bytes needed."""
        buf = self.buf
        if not request_header_ok(buf, p):
            return False
        size = _I32.unpack_from(buf, p)[0]
        if len(buf) < p + 4 + size:
            return None if size <= 1024 * 1024 else True
        return request_decodes(bytes(buf[p + 4:p + 4 + size]))

    def _find_response(self) -> int | None:
        buf = self.buf
        pending = self.conn.pending
        best = None
        for corr, (key, version) in list(pending.items()):
            i = buf.find(_I32.pack(corr), 4)
            while i >= 4:
                p = i - 4
                size = _I32.unpack_from(buf, p)[0]
                if 4 <= size <= MAX_FRAME:
                    if len(buf) < p + 4 + size:
                        if best is None or p < best:
                            best = p
                        break
                    if response_decodes(bytes(buf[p + 4:p + 4 + size]), key, version):
                        if best is None or p < best:
                            best = p
                        break
                i = buf.find(_I32.pack(corr), i + 1)
        if best is not None:
            if len(buf) < best + 4 + _I32.unpack_from(buf, best)[0]:
                self._drop_scanned(best)
                return None     # a candidate still arriving: wait for it
            return best
        if len(buf) > RESYNC_SCAN:      # no known request answered in the buffer: keep only a tail
            self._drop_scanned(len(buf) - 64)
        return None
