"""Versions kshim does not know never break a connection (shim/proxy/session.py): an ApiVersions
request newer than kshim advertises is answered by kshim as a broker answers one newer than it knows,
in request order, and never forwarded (a broker that knows the version would answer in a body kshim
cannot read). The same against a real broker, for every API key: test_unknown_versions.py."""

from __future__ import annotations

import struct

from kcodec.generated.api_versions import ApiVersionsResponse
from shim.config import Config
from shim.proxy.server import Proxy
from shim.proxy.session import Session
from testsuite.proxy.test_session_order_unit import _Listener, _Transport, _Upstream

API_VERSIONS, FORWARDED = 18, 2


class _Frames(_Transport):
    def __init__(self) -> None:
        super().__init__()
        self.frames: list[bytes] = []

    def writelines(self, parts) -> None:
        parts = list(parts)
        super().writelines(parts)
        self.frames += [bytes(f) for f in parts[1::2]]


def _request(api_key: int, version: int, corr: int) -> bytes:
    """Request header v2 (any version: kshim peeks the header only) and an empty flexible body."""
    body = struct.pack(">hhih", api_key, version, corr, 4) + b"unit" + b"\x00" + b"\x00"
    return struct.pack(">i", len(body)) + body


def _session(allowed_api_versions):
    proxy = Proxy(Config(upstream="127.0.0.1:1", group_coordinator="broker"))
    proxy.allowed = {API_VERSIONS: allowed_api_versions, FORWARDED: (0, 10)}
    s = Session(proxy, _Listener())
    s.connection_made(_Frames())
    s.upstream = _Upstream()
    return s


def test_too_new_api_versions_answered_by_kshim_in_order():
    s = _session((0, 5))
    s.data_received(_request(FORWARDED, 7, 1) + _request(API_VERSIONS, 6, 2) + _request(API_VERSIONS, 127, 3))
    assert s.upstream.out == [1]                 # neither ApiVersions went to the broker
    assert s.transport.out == []                 # the forwarded request's answer comes first
    s.on_response(struct.pack(">i", 1) + b"\x00")
    assert s.transport.out == [1, 2, 3] and not s.closed
    for frame, corr in zip(s.transport.frames[1:], (2, 3)):
        assert struct.unpack_from(">i", frame)[0] == corr        # response header v0
        msg = ApiVersionsResponse.decode(frame[4:], 0)
        assert msg.error_code == 35                               # UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in msg.api_keys] == [(18, 0, 5)]


def test_too_new_is_relative_to_the_upstreams_range():
    """Against a broker whose ApiVersions stops at v4 (Kafka 3.9), v5 is too new, as it is there."""
    s = _session((0, 4))
    s.data_received(_request(API_VERSIONS, 5, 9) + _request(API_VERSIONS, 4, 10))
    msg = ApiVersionsResponse.decode(s.transport.frames[0][4:], 0)
    assert msg.error_code == 35 and [(k.min_version, k.max_version) for k in msg.api_keys] == [(0, 4)]
    assert s.upstream.out == [10]                # a known version goes on to the broker
