"""A connection's place for one answer (`Slot`), and the frames' 4-byte length prefixes: what
session.py, faults.py and the server hand each other for every request that expects an answer."""

from __future__ import annotations

# a slot whose answer went to the client as it arrived (upstream_side.py): nothing left to write
STREAMED = memoryview(b"")


class Slot:
    # `watch`: a declining route's callback(session, slot, frame) that takes the broker's answer and
    # completes the slot itself (the route contract: shim/groupservice/host.py)
    __slots__ = ("api_key", "version", "correlation_id", "data", "rewrite", "watch", "sent")

    def __init__(self, api_key: int, version: int, correlation_id: int, rewrite: bool):
        self.api_key, self.version, self.correlation_id, self.rewrite = api_key, version, correlation_id, rewrite
        self.data = self.watch = None
        self.sent = 0.0                 # monotonic time forwarded, with metrics on (shim/metrics.py)


class Prefix:
    """4-byte big-endian length prefixes, cached for small sizes."""
    cache = [n.to_bytes(4, "big") for n in range(4096)]

    @classmethod
    def of(cls, n: int) -> bytes:
        return cls.cache[n] if n < 4096 else n.to_bytes(4, "big")
