"""A request or response frame read into its body (kcodec), as the broker reads one: a request's bytes
after the body are ignored, not refused (`RequestContext.parseRequest`). For the handlers that
decode what they answer or watch (request_path.py, find_coordinator.py, transactions.py, authz.py)."""

from __future__ import annotations

from kcodec import api
from kcodec.errors import DecodeError
from kcodec.frames import request_body_offset


_READERS: dict[tuple[int, int], tuple[bool, type]] = {}   # (api key, version) -> (header v2?, class)


def _reader(api_key: int, version: int) -> tuple[bool, type]:
    """The _READERS entry, made on its first use (checked once per api key and version: the same
    checks and errors)."""
    found = _READERS[(api_key, version)] = (api.request_header_version(api_key, version) == 2,
                                            api.REQUESTS[api_key])
    return found


def read_request(frame, api_key: int, version: int):
    buf = bytes(frame)                     # bytes: the decoders' fast path (no memoryview copies)
    found = _READERS.get((api_key, version))
    flexible, cls = found if found is not None else _reader(api_key, version)
    # the header was read already (the session's peek_request): only where the body starts is needed
    return cls.decode_from(buf, request_body_offset(buf, flexible), version)[0]


def read_response(frame, api_key: int, version: int):
    _, pos = api.ResponseHeader.decode_from(frame, 0, api.response_header_version(api_key, version))
    return api.RESPONSES[api_key].decode(memoryview(frame)[pos:], version)


def read_or_close(session, slot, frame, what: str | None = None):
    """The request of a handler that answers it, or None when it is malformed: the connection is
    closed with one log line, as the broker closes it (`what` names the request in that line)."""
    try:
        return read_request(frame, slot.api_key, slot.version)
    except DecodeError as e:
        session.bad_input(f"malformed {what or f'{api.API_KEYS.get(slot.api_key)} v{slot.version}'} request: {e}")
        return None
