"""One direction of a TCP connection reassembled from captured segments, in sequence-number order.

What real captures do to a byte stream, and what is done here:
- retransmissions and duplicate segments: bytes before the next expected sequence number are
  dropped (counted);
- out-of-order segments: held until the bytes before them arrive (up to HOLD_BYTES or HOLD_S of
  capture time), then given out in order;
- lost segments: when the hold overflows, times out, the connection ends, or the broker answers a
  request the client side has not given out yet (the broker had the bytes the capture missed:
  `give_up_holes`), the missing range is a hole of a known size (`gap(n)`); the Kafka framer
  (framing.py) skips the frames it cuts;
- a segment cut by the snap length: the captured bytes, then a hole for the rest;
- no handshake seen (the capture started mid-connection): the first segment's sequence number is
  where the stream starts, and the framer is told it starts mid-stream.
Sequence numbers wrap at 2**32 (compared modulo).
"""

from __future__ import annotations

HOLD_BYTES = 4 * 1024 * 1024
HOLD_S = 5.0
_MOD = 1 << 32


def _diff(a: int, b: int) -> int:
    """a - b in sequence space (signed, |x| < 2**31)."""
    d = (a - b) % _MOD
    return d - _MOD if d >= 1 << 31 else d


class HalfStream:
    """Feeds `sink.data(bytes, ts)` and `sink.gap(nbytes, ts)` in stream order."""

    def __init__(self, sink):
        self.sink = sink
        self.next: int | None = None
        self.held: dict[int, tuple] = {}     # seq -> (data, wire_len, ts)
        self.held_bytes = 0
        self.oldest_held = None
        self.duplicate_bytes = 0
        self.gap_bytes = 0
        self.gaps = 0
        self.bytes = 0

    def syn(self, seq: int) -> None:
        if self.next is None:
            self.next = (seq + 1) % _MOD

    def segment(self, seq: int, data: bytes, wire_len: int, ts: float) -> None:
        if not wire_len:
            return
        if self.next is None:            # no SYN seen: the stream starts here
            self.next = seq
            self.sink.midstream(ts)
        d = _diff(seq, self.next)
        if d > 0:                        # ahead: hold it until the bytes before it come
            if seq not in self.held or self.held[seq][1] < wire_len:
                self.held_bytes += wire_len - (self.held[seq][1] if seq in self.held else 0)
                self.held[seq] = (data, wire_len, ts)
                if self.oldest_held is None:
                    self.oldest_held = ts
            if self.held_bytes > HOLD_BYTES or ts - self.oldest_held > HOLD_S:
                self._skip_to_held(ts)
            return
        self._take(seq, data, wire_len, ts)
        self._drain()
        if self.held and ts - (self.oldest_held or ts) > HOLD_S:
            self._skip_to_held(ts)

    def _take(self, seq: int, data: bytes, wire_len: int, ts: float) -> None:
        """A segment starting at or before `next`: its new bytes, if any."""
        old = -_diff(seq, self.next)     # bytes already had
        if old >= wire_len:
            self.duplicate_bytes += wire_len
            return
        if old:
            self.duplicate_bytes += old
        new_wire = wire_len - old
        chunk = data[old:] if old < len(data) else b""
        if chunk:
            self.bytes += len(chunk)
            self.sink.data(chunk, ts)
        missing = new_wire - len(chunk)
        if missing > 0:                  # cut by the snap length
            self._gap(missing, ts)
        self.next = (self.next + new_wire) % _MOD

    def _drain(self) -> None:
        while self.held:
            ready = [s for s in self.held if _diff(s, self.next) <= 0]
            if not ready:
                return
            for s in sorted(ready, key=lambda s: _diff(s, self.next)):
                data, wire_len, ts = self.held.pop(s)
                self.held_bytes -= wire_len
                self._take(s, data, wire_len, ts)
            if not self.held:
                self.oldest_held = None
            else:
                self.oldest_held = min(v[2] for v in self.held.values())

    def _gap(self, n: int, ts: float) -> None:
        self.gaps += 1
        self.gap_bytes += n
        self.sink.gap(n, ts)

    def _skip_to_held(self, ts: float) -> None:
        """The bytes before the first held segment are lost: a hole, then what was held."""
        first = min(self.held, key=lambda s: _diff(s, self.next))
        self._gap(_diff(first, self.next), ts)
        self.next = first
        self._drain()

    def give_up_holes(self, ts: float) -> bool:
        """The bytes missing before what is held will not come (the other side answered past them):
        holes now, what was held given out. True if anything was held."""
        if not self.held:
            return False
        while self.held:
            self._skip_to_held(ts)
        return True

    def close(self, ts: float) -> None:
        """The connection ended (FIN / RST / end of capture): what is still held follows its holes."""
        while self.held:
            self._skip_to_held(ts)
        self.sink.end(ts)
