"""kshim's own pipelined connection to one broker: many requests in flight, answered in order.

`UpstreamClient` (client.py) sends one request and waits for its answer; a connection that carries
other clients' requests (shim/groupservice/broker_groups.py: share- and streams-group requests forwarded to
the group's coordinator) must not make one client wait for another's round trip. A broker answers a
connection's requests in the order it received them (`SocketServer.Processor` reads the next request
of a connection only after answering the current one, and keeps them in order either way), so
answers are matched to requests by a FIFO queue and checked by correlation id.

Frames are forwarded as bytes: `send(frame)` takes a request frame as a client sent it (header and
body, no length prefix), puts kshim's correlation id in its header and returns the broker's answer
with the caller's correlation id put back; nothing else in either frame is touched (client id and
tagged header fields stay the client's).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque

from kcodec.frames import FrameSplitter

from ..config import Config
from .client import UpstreamClient

log = logging.getLogger("kshim.upstream")

_CORR = struct.Struct(">i")
CORRELATION_AT = 4          # request header: api key (int16), api version (int16), correlation id (int32)


class PipelinedConnection:
    def __init__(self, client: UpstreamClient, name: str):
        self.client, self.name = client, name
        self.reader, self.writer = client.reader, client.writer
        self.versions = client.versions
        self.inflight: deque[tuple[int, int, asyncio.Future]] = deque()   # (our corr, caller's corr, answer)
        self.correlation = client.correlation + 1000
        self.closed = False
        self.splitter = FrameSplitter(1 << 30)
        for frame in client.frames:           # (none: the connect handshake reads exactly its answers)
            self._on_frame(frame)
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, cfg: Config, host: str, port: int, timeout: float = 10.0) -> "PipelinedConnection":
        """Connect (TLS, ApiVersions, SASL as configured: `UpstreamClient.connect`)."""
        client = await UpstreamClient.connect(cfg, host, port, timeout)
        return cls(client, f"{host}:{port}")

    def send(self, frame) -> asyncio.Future:
        """Forward one request frame; the future gets the answer frame (the caller's correlation id)
        or a ConnectionError when the connection is lost first."""
        fut = asyncio.get_running_loop().create_future()
        if self.closed:
            fut.set_exception(ConnectionError(f"connection to {self.name} is closed"))
            return fut
        self.correlation = (self.correlation + 1) & 0x7FFFFFFF
        mine = self.correlation
        theirs = _CORR.unpack_from(frame, CORRELATION_AT)[0]
        out = bytearray(frame)
        _CORR.pack_into(out, CORRELATION_AT, mine)
        self.inflight.append((mine, theirs, fut))
        self.writer.write(_CORR.pack(len(out)) + out)
        return fut

    async def _read(self) -> None:
        error: BaseException = ConnectionError(f"{self.name} closed the connection")
        try:
            while True:
                data = await self.reader.read(1 << 16)
                if not data:
                    break
                for frame in self.splitter.feed(data):
                    self._on_frame(frame)
        except asyncio.CancelledError:
            error = ConnectionError(f"connection to {self.name} closed")
        except Exception as e:             # reset, TLS error, an invalid frame
            error = ConnectionError(f"connection to {self.name} failed: {e}")
        self._fail(error)

    def _on_frame(self, frame) -> None:
        if not self.inflight:
            self._fail(ConnectionError(f"{self.name} sent an answer to no request"))
            return
        mine, theirs, fut = self.inflight.popleft()
        if _CORR.unpack_from(frame, 0)[0] != mine:
            self._fail(ConnectionError(f"{self.name} answered out of order"))
            if not fut.done():
                fut.set_exception(ConnectionError(f"{self.name} answered out of order"))
            return
        out = bytearray(frame)
        _CORR.pack_into(out, 0, theirs)
        if not fut.done():
            fut.set_result(bytes(out))

    def _fail(self, error: BaseException) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()
        while self.inflight:
            _, _, fut = self.inflight.popleft()
            if not fut.done():
                fut.set_exception(error)

    def close(self) -> None:
        self._reader.cancel()
        self._fail(ConnectionError(f"connection to {self.name} closed"))
