"""Sans-IO splitting of a Kafka byte stream into frames, and cheap header peeks.

Every Kafka request and response travels as ``int32 length`` followed by ``length``
bytes.  :class:`FrameSplitter` is fed whatever the socket produced and hands back
the complete frames (without the length prefix).  It validates each length as soon
as the 4 prefix bytes are known, before buffering any of the body, so a peer cannot
make us hold more than ``max_frame_size`` bytes for one frame.

The ``peek_*`` helpers and :func:`produce_acks` read a few header fields of a frame
without decoding its body; they are meant for the proxy hot path.

Frames are returned as :class:`memoryview` objects.  A frame that arrived whole in
one ``feed`` call is a zero-copy view of the ``bytes`` that were fed (it keeps that
object alive); a frame assembled from several calls is a view of a private
``bytearray``.  Call ``bytes(frame)`` for an independent copy.
"""

from __future__ import annotations

import struct

from .errors import DecodeError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameError",
    "InvalidFrameLength",
    "FrameTooLarge",
    "FrameSplitter",
    "length_prefix",
    "response_header",
    "peek_request",
    "peek_response_correlation_id",
    "produce_acks",
]

#: Kafka's default ``socket.request.max.bytes`` (100 MiB).
DEFAULT_MAX_FRAME_SIZE = 104_857_600

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_REQ_HEAD = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length
_unpack_len = _INT32.unpack_from
_unpack_i16 = _INT16.unpack_from
_unpack_req = _REQ_HEAD.unpack_from
_PRODUCE = 0
_PRODUCE_FIRST_FLEXIBLE = 9


class FrameError(DecodeError):
    """A bad length prefix; the stream cannot be resynchronised (close the connection)."""


class InvalidFrameLength(FrameError):
    """The length prefix is negative."""


class FrameTooLarge(FrameError):
    """The length prefix exceeds the splitter's ``max_frame_size``."""


class FrameSplitter:
    """Incremental splitter of a length-prefixed Kafka stream.

    ``feed(data)`` returns the list (possibly empty) of frames completed by ``data``.
    After a :class:`FrameError` the splitter is poisoned: every later ``feed`` raises
    the same error again.
    """

    __slots__ = ("max_frame_size", "_head", "_body", "_need", "_error")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        if max_frame_size < 0:
            raise ValueError("max_frame_size must be >= 0")
        self.max_frame_size = max_frame_size
        self._head = b""          # 0-3 bytes of a length prefix not yet complete
        self._body: bytearray | None = None  # body of a frame being assembled
        self._need = 0            # bytes still missing from self._body
        self._error: FrameError | None = None

    @property
    def buffered(self) -> int:
        """Number of bytes held for an incomplete frame (prefix included)."""
        if self._body is not None:
            return 4 + len(self._body)
        return len(self._head)

    @property
    def at_boundary(self) -> bool:
        """True when no partial frame is held (a clean place for the stream to end)."""
        return self._body is None and not self._head

    def partial(self, min_size: int) -> tuple[int, bytearray] | None:
        """(length, body bytes so far) of the frame being assembled, if it is at least ``min_size``
        bytes long; else None. The bytes are the splitter's: read them, do not keep or change them
        (see :meth:`take_partial`)."""
        body = self._body
        if body is None or len(body) + self._need < min_size:
            return None
        return len(body) + self._need, body

    def take_partial(self) -> tuple[bytearray, int]:
        """Hand over the frame being assembled: (its body bytes so far, body bytes still due). The
        splitter forgets it: the caller consumes the next ``due`` bytes of the stream itself (a proxy
        passing a large frame on as it arrives) and feeds what follows them."""
        body, due = self._body, self._need
        if body is None:
            raise ValueError("no partial frame")
        self._body, self._need = None, 0
        return body, due

    def _check(self, size: int, offset: int) -> int:
        if size < 0:
            err: FrameError = InvalidFrameLength(
                f"negative frame length {size}", "Frame", "length", offset)
        elif size > self.max_frame_size:
            err = FrameTooLarge(
                f"frame length {size} exceeds the maximum {self.max_frame_size}",
                "Frame", "length", offset)
        else:
            return size
        self._error = err
        self._head = b""
        self._body = None
        raise err

    def feed(self, data) -> list[memoryview]:
        """Add ``data`` (bytes-like) and return the frames it completes, in order."""
        if self._error is not None:
            raise self._error
        if type(data) is not bytes:
            data = bytes(data)  # the caller may reuse a mutable buffer
        n = len(data)
        frames: list[memoryview] = []
        pos = 0
        view = memoryview(data)
        if self._body is not None:
            need = self._need
            body = self._body
            if n < need:
                body += data
                self._need = need - n
                return frames
            body += view[:need]
            frames.append(memoryview(body))
            self._body = None
            pos = need
        elif self._head:
            head = self._head + data[:4 - len(self._head)]
            if len(head) < 4:
                self._head = head
                return frames
            pos = 4 - len(self._head)
            self._head = b""
            size = self._check(_unpack_len(head)[0], 0)
            end = pos + size
            if end > n:
                self._body = bytearray(view[pos:])
                self._need = end - n
                return frames
            frames.append(view[pos:end])
            pos = end
        max_size = self.max_frame_size
        while n - pos >= 4:
            size = _unpack_len(data, pos)[0]
            if size < 0 or size > max_size:
                self._check(size, pos)
            start = pos + 4
            end = start + size
            if end > n:
                self._body = bytearray(view[start:])
                self._need = end - n
                return frames
            frames.append(view[start:end])
            pos = end
        if pos < n:
            self._head = data[pos:]
        return frames


def length_prefix(size: int) -> bytes:
    """The 4-byte big-endian length prefix for a frame of ``size`` bytes."""
    return _INT32.pack(size)


def response_header(correlation_id: int, header_version: int) -> bytes:
    """The bytes of ResponseHeader v0 (the correlation id) or v1 (and an empty tagged-field section),
    as the generated ResponseHeader encodes them; for the local answers' hot path."""
    head = _INT32.pack(correlation_id)
    return head + b"\x00" if header_version else head


def _truncated(what: str, need: int, have: int, name: str = "RequestHeader") -> DecodeError:
    return DecodeError(f"frame too short: need {need} bytes, have {have}", name, what,
                       min(need, have))


def peek_request(frame) -> tuple[int, int, int, str | None]:
    """``(api_key, api_version, correlation_id, client_id)`` of a request frame.

    Valid for request header v1 and v2 alike: ClientId is a nullable string with an
    int16 length in both.  A negative length is null (as Kafka reads it); invalid
    UTF-8 is replaced with U+FFFD (as Java's decoder does) rather than rejected.
    """
    try:
        api_key, api_version, correlation_id, clen = _unpack_req(frame, 0)
    except struct.error:
        raise _truncated("requestApiKey", 10, len(frame)) from None
    if clen < 0:
        return api_key, api_version, correlation_id, None
    end = 10 + clen
    if end > len(frame):
        raise _truncated("clientId", end, len(frame))
    return api_key, api_version, correlation_id, str(frame[10:end], "utf-8", "replace")


def peek_response_correlation_id(frame) -> int:
    """The correlation id that starts every response frame."""
    try:
        return _unpack_len(frame, 0)[0]
    except struct.error:
        raise _truncated("correlationId", 4, len(frame), "ResponseHeader") from None


def _uvarint(buf, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = buf[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + 1
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes", "ProduceRequest", None, pos)


def _skip_tagged_fields(frame, pos: int, n: int) -> int:
    """The position after the tagged fields at ``pos`` (IndexError when the frame ends first)."""
    count, pos = _uvarint(frame, pos)
    for _ in range(count):
        _, pos = _uvarint(frame, pos)
        size, pos = _uvarint(frame, pos)
        pos += size
        if pos > n:
            raise _truncated("_tagged_fields", pos, n)
    return pos


def request_body_offset(frame, flexible: bool) -> int:
    """Where the body of a request frame starts, without decoding its header: after
    ``RequestApiKey .. ClientId`` (header v1), and the header's tagged fields too for
    flexible versions (header v2) - the position ``RequestHeader.decode_from`` returns.
    """
    n = len(frame)
    try:
        clen = _unpack_req(frame, 0)[3]
    except struct.error:
        raise _truncated("requestApiKey", 10, n) from None
    pos = 10 + clen if clen > 0 else 10
    if pos > n:
        raise _truncated("clientId", pos, n)
    if not flexible:
        return pos
    if pos < n and frame[pos] == 0:      # no tagged fields: the usual header
        return pos + 1
    try:
        return _skip_tagged_fields(frame, pos, n)
    except IndexError:
        raise _truncated("_tagged_fields", n + 1, n) from None


def produce_acks(frame, api_version: int | None = None) -> int:
    """The ``acks`` of a Produce request frame (v3+), without decoding the body.

    ``api_version`` defaults to the version in the frame's header.  Skips the request
    header (its tagged fields too for flexible versions, v9+) and TransactionalId
    (compact in flexible versions), then reads the int16 ``acks``.
    """
    n = len(frame)
    try:
        api_key, version, _, clen = _unpack_req(frame, 0)
    except struct.error:
        raise _truncated("requestApiKey", 10, n) from None
    if api_key != _PRODUCE:
        raise DecodeError(f"api key {api_key} is not Produce", "RequestHeader", "requestApiKey", 0)
    if api_version is None:
        api_version = version
    pos = 10 + clen if clen > 0 else 10
    try:
        if api_version >= _PRODUCE_FIRST_FLEXIBLE:
            pos = _skip_tagged_fields(frame, pos, n)
            tlen, pos = _uvarint(frame, pos)
            if tlen:
                pos += tlen - 1
        else:
            tlen = _unpack_i16(frame, pos)[0]
            pos += 2
            if tlen > 0:
                pos += tlen
        if pos + 2 > n:
            raise DecodeError(f"frame too short: need {pos + 2} bytes, have {n}",
                              "ProduceRequest", "acks", min(pos, n), api_version)
        return _unpack_i16(frame, pos)[0]
    except (IndexError, struct.error):
        raise DecodeError(f"frame too short ({n} bytes)", "ProduceRequest", "transactionalId",
                          n, api_version) from None
