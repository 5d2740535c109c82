"""The broker side of a proxied connection: splits the broker's byte stream into answers for the
Session (session.py) that owns it, and passes a large answer on to the client as it arrives.

Streaming: an answer of at least STREAM_MIN bytes still arriving when a read ends (a Fetch answer of
a megabyte comes in many reads) goes to the client at once, read by read, if the Session can send it
now (`Session.start_stream`: it is the next answer out, forwarded unchanged, no trace or metrics).
Otherwise it is held whole and handed over complete, as every smaller answer is. Flow control is the
same either way: a client that does not keep up pauses reading from the broker (`pause_writing`).
"""

from __future__ import annotations

import asyncio
import logging

from kcodec.errors import DecodeError
from kcodec.frames import FrameSplitter, peek_response_correlation_id

from .request_stream import STREAM_MIN

log = logging.getLogger("kshim.proxy")

# reasons the client socket is not read (`Session.pause_client`): a slow broker, a fault delay,
# requests waiting
UPSTREAM_FULL, FAULT_DELAY, WAITING = 1, 2, 4


class UpstreamSide(asyncio.Protocol):
    def __init__(self, session):
        self.session = session          # session.py's Session (which imports this module)
        self.splitter = FrameSplitter(max(session.proxy.cfg.max_frame_bytes, 1 << 30))
        self.passing = 0                # bytes of a streamed answer still to pass on

    def data_received(self, data: bytes) -> None:
        session = self.session
        if self.passing:
            due = self.passing
            if len(data) <= due:
                self.passing = due - len(data)
                session.pass_on(data, not self.passing)
                return
            session.pass_on(memoryview(data)[:due], True)
            self.passing = 0
            data = data[due:]
        try:
            frames = self.splitter.feed(data)
        except DecodeError as e:
            log.error("broker sent an invalid frame (%s); closing client %s", e, session.peer)
            session.close()
            return
        if len(frames) == 1:
            session.on_response(frames[0])
        elif frames:
            session.client_out = []          # several answers in one read: one write to the client
            try:
                for frame in frames:
                    session.on_response(frame)
            finally:
                session.flush_client()
        part = self.splitter.partial(STREAM_MIN)
        if part is not None and len(part[1]) >= 4 \
                and session.start_stream(part[0], peek_response_correlation_id(part[1])):
            body, due = self.splitter.take_partial()
            self.passing = due
            session.pass_on(body, False)

    def connection_lost(self, exc) -> None:
        self.session.upstream_lost(exc)

    def pause_writing(self) -> None:
        self.session.pause_client(UPSTREAM_FULL)

    def resume_writing(self) -> None:
        self.session.resume_client(UPSTREAM_FULL)
