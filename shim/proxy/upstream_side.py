"""The broker side of a proxied connection: splits the broker's byte stream into answers for the
Session (session.py) that owns it, and passes a large answer on to the client as it arrives.

Streaming (the read path both sides share: frame_reader.py): an answer of at least STREAM_MIN bytes
still arriving when a read ends (a Fetch answer of a megabyte comes in many reads) goes to the client
at once, read by read, if the Session can send it now (`Session.start_stream`: it is the next answer
out, forwarded unchanged, no metrics; the tracer gets its parts at the end). Otherwise it is held
whole and handed over complete, as every smaller answer is. Flow control is the
same either way: a client that does not keep up pauses reading from the broker (`pause_writing`).
"""

from __future__ import annotations

import logging

from kcodec.frames import FrameSplitter, peek_response_correlation_id

from .frame_reader import FrameReader

log = logging.getLogger("kshim.proxy")

# reasons the client socket is not read (`Session.pause_client`): a slow broker, a fault delay,
# requests waiting
UPSTREAM_FULL, FAULT_DELAY, WAITING = 1, 2, 4


class UpstreamSide(FrameReader):
    def __init__(self, session):
        self.session = session          # session.py's Session (which imports this module)
        self.splitter = FrameSplitter(max(session.proxy.cfg.max_frame_bytes, 1 << 30))
        self.passing = 0                # bytes of a streamed answer still to pass on
        # hooks of FrameReader that are the session's own methods, bound once
        self.on_frame, self.flush = session.on_response, session.flush_client
        self.stream_more = session.pass_on

    def gather(self) -> None:
        self.session.client_out = []    # several answers in one read: one write to the client

    def bad_stream(self, err) -> None:
        log.error("broker sent an invalid frame (%s); closing client %s", err, self.session.peer)
        self.session.close()

    def may_stream(self, size: int, body) -> bool:
        return len(body) >= 4 and self.session.start_stream(size, peek_response_correlation_id(body))

    def stream_head(self, _size: int, body) -> None:
        self.session.pass_on(body, False)   # start_stream sent the length

    def connection_lost(self, exc) -> None:
        self.session.upstream_lost(exc)

    def pause_writing(self) -> None:
        self.session.pause_client(UPSTREAM_FULL)

    def resume_writing(self) -> None:
        self.session.resume_client(UPSTREAM_FULL)
