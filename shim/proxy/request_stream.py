"""A large request passed on to the broker as it arrives (frame_reader.py), instead of being
held until whole: a Produce of a megabyte then reaches the broker while the client still sends it.

Only a request that would be forwarded at once anyway is streamed: the connection's upstream is
open, no request of kshim's own is in flight or waiting (one request at a time, as the broker), it is
not one of the routing table's (group APIs) nor ApiVersions, its version is in the advertised range,
no fault rule is set, and metrics do not want whole frames (a traced one is traced once it is through,
Session.stream_more). Its header (and a
Produce's acks) must already be in the bytes read so far; otherwise it is tried again on the next
read, and a request that never qualifies is handled whole, as every smaller one.
"""

from __future__ import annotations

from kcodec.errors import DecodeError
from kcodec.frames import peek_request, produce_acks

from .rewrite import rewritten
from .versions import API_VERSIONS, PRODUCE


def streamable(session, body) -> bool:
    """May the request whose first bytes are `body` go to the broker now, as it arrives? If so its
    response slot is taken (none for a Produce with acks=0), in order, as Session._route would."""
    proxy = session.proxy
    faults = proxy.faults
    if session.closed or session.upstream is None or session.local is not None or session.waiting \
            or proxy.metrics is not None or faults.rules or faults.held:
        return False
    try:
        api_key, version, corr, client_id = peek_request(body)
        allowed = proxy.allowed.get(api_key)
        if api_key == API_VERSIONS or api_key in proxy.routes or allowed is None \
                or not allowed[0] <= version <= allowed[1]:
            return False
        acks = produce_acks(body, version) if api_key == PRODUCE else -1
    except DecodeError:                  # the header is not all here yet (or is bad: handled whole)
        return False
    if client_id is not None:
        session.client_id = client_id
    if acks != 0:
        session.take_slot(api_key, version, corr, rewritten(api_key, version))
    if session.tracer is not None:      # traced once through (Session.stream_more)
        session.traced_request = [api_key, version, corr, client_id, []]
    return True
