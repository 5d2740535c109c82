"""What both sides of a proxied connection do with a read (session.py: the client's requests,
upstream_side.py: the broker's answers): split it into frames, send on the frames of one read in one
write, and pass a large frame on as it arrives instead of holding it until it is whole.

Streaming: a frame of at least STREAM_MIN bytes still incomplete when a read ends is offered to the
side (`may_stream`); if it may go on now, the splitter hands it over (`FrameSplitter.take_partial`),
its bytes so far go out (`stream_head`), and the next `passing` bytes of the stream are passed on as
they come (`stream_more`) without going through the splitter, which is fed what follows them.
"""

from __future__ import annotations

import asyncio

from kcodec.errors import DecodeError
from kcodec.frames import FrameSplitter

STREAM_MIN = 64 * 1024


class FrameReader(asyncio.Protocol):
    """The read path of one side; the side sets `splitter` and `passing` (0) and supplies the hooks
    below, as methods or as bound methods of its owner set once (no extra call per frame)."""

    splitter: FrameSplitter
    passing: int                        # bytes of a frame handed over still to pass on

    def data_received(self, data: bytes) -> None:
        if self.passing:                # the rest of a frame passed on as it arrives
            due = self.passing
            if len(data) <= due:
                self.passing = due - len(data)
                self.stream_more(data, not self.passing)
                return
            self.stream_more(memoryview(data)[:due], True)
            self.passing = 0
            data = data[due:]
        try:
            frames = self.splitter.feed(data)
        except DecodeError as e:
            self.bad_stream(e)
            return
        if len(frames) == 1:
            self.on_frame(frames[0])
        elif frames:
            self.gather()               # several frames in one read: one write
            try:
                for frame in frames:
                    self.on_frame(frame)
            finally:
                self.flush()
        part = self.splitter.partial(STREAM_MIN)
        if part is not None and self.may_stream(part[0], part[1]):
            body, self.passing = self.splitter.take_partial()
            self.stream_head(part[0], body)

    # ------------------------------------------------------------------ the side's hooks
    def on_frame(self, frame) -> None:
        """A whole frame (a view: copy it to keep it past the call)."""
        raise NotImplementedError

    def gather(self) -> None:
        """Several frames come in one read: gather what handling them writes, until `flush`."""
        raise NotImplementedError

    def flush(self) -> None:
        """Write what was gathered, at once."""
        raise NotImplementedError

    def bad_stream(self, err: DecodeError) -> None:
        """A bad length prefix: the stream cannot go on."""
        raise NotImplementedError

    def may_stream(self, size: int, body) -> bool:
        """May the frame being assembled (`size` bytes, `body`: its bytes so far, the splitter's) go
        on as it arrives?"""
        raise NotImplementedError

    def stream_head(self, size: int, body) -> None:
        """Send the frame handed over: its length (unless `may_stream` sent it) and `body` so far."""
        raise NotImplementedError

    def stream_more(self, data, last: bool) -> None:
        """Send more bytes of the frame handed over; `last`: they end it."""
        raise NotImplementedError
