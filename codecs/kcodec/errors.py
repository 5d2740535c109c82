"""Typed errors raised by the kcodec wire codec.

``DecodeError`` is raised for any malformed input (truncated buffers, negative or
absurd lengths, unknown api keys/versions, invalid varints, ...).  It is a
``ValueError`` so callers that only know "bad input" can catch that.

``EncodeError`` is raised when an object cannot be encoded at the requested
version (a value out of range for its wire type, a null for a non-nullable
field, a non-default value for a field that does not exist at that version and
is not ``ignorable``, ...).
"""

from __future__ import annotations

__all__ = ["KCodecError", "DecodeError", "EncodeError"]


class KCodecError(Exception):
    """Base class of kcodec errors."""


def _describe(kind: str, message: str, message_name, field, offset, version) -> str:
    loc = str(message_name) if message_name else ""
    if field:
        loc = f"{loc}.{field}" if loc else str(field)
    parts = [kind]
    if loc:
        parts.append(f" in {loc}")
    if version is not None:
        parts.append(f" (v{version})")
    if offset is not None:
        parts.append(f" at offset {offset}")
    return "".join(parts) + f": {message}"


class DecodeError(KCodecError, ValueError):
    """Malformed wire data.

    Attributes:
        message_name: the message or struct being decoded (e.g. ``"MetadataResponse"``), or None.
        field: the field being decoded when the problem was found (JSON schema name), or None.
        offset: byte offset in the input buffer where the problem was found, or None.
        version: the api version being decoded, or None.
        reason: the bare description without location.
    """

    def __init__(self, message: str, message_name: str | None = None, field: str | None = None,
                 offset: int | None = None, version: int | None = None):
        self.reason = message
        self.message_name = message_name
        self.field = field
        self.offset = offset
        self.version = version
        super().__init__(message)

    def __str__(self) -> str:
        return _describe("decode error", self.reason, self.message_name, self.field, self.offset,
                         self.version)

    def __reduce__(self):
        return (type(self), (self.reason, self.message_name, self.field, self.offset, self.version))


class EncodeError(KCodecError, ValueError):
    """A value that cannot be encoded at the requested version.

    Attributes:
        message_name: the message or struct being encoded, or None.
        field: the offending field (JSON schema name), or None.
        version: the api version being encoded, or None.
        reason: the bare description without location.
    """

    offset = None

    def __init__(self, message: str, message_name: str | None = None, field: str | None = None,
                 version: int | None = None):
        self.reason = message
        self.message_name = message_name
        self.field = field
        self.version = version
        super().__init__(message)

    def __str__(self) -> str:
        return _describe("encode error", self.reason, self.message_name, self.field, None,
                         self.version)

    def __reduce__(self):
        return (type(self), (self.reason, self.message_name, self.field, self.version))
