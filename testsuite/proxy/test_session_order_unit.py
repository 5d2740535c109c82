"""shim/proxy/session.py without sockets: a connection's requests are handled one at a time, as the
broker's network processor does (it mutes the channel while a request is in flight)."""

from __future__ import annotations

import struct

from kcodec import api
from shim.config import Config
from shim.proxy import session as session_mod
from shim.proxy.server import Proxy
from shim.proxy.session import Session, UpstreamSide

HEARTBEAT, FORWARDED = 12, 2     # ListOffsets: forwarded, answer passed through


class _Transport:
    def __init__(self) -> None:
        self.out: list[int] = []         # correlation ids of the frames written, in order
        self.writes = 0                  # writelines calls (a syscall each on a real transport)
        self.paused = False
        self.closed = False

    def get_extra_info(self, _key):
        return ("127.0.0.1", 1)

    corr_at = 0                          # a response frame starts with its correlation id

    def writelines(self, parts) -> None:
        parts = list(parts)              # (length prefix, frame) pairs, several when gathered
        self.writes += 1
        for frame in parts[1::2]:
            self.out.append(struct.unpack_from(">i", bytes(frame), self.corr_at)[0])

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def close(self) -> None:
        self.closed = True


class _Upstream(_Transport):
    corr_at = 4                          # after a request's api key and version


class _Listener:
    node_id = None
    name = "unit"


class _Local:
    """A routing-table handler: records what it was handed; answers at once or parks."""

    def __init__(self) -> None:
        self.handed: list[int] = []
        self.parked: list = []
        self.park = False

    def __call__(self, session, slot, frame) -> bool:
        self.handed.append(slot.correlation_id)
        if self.park:
            self.parked.append((session, slot))
        else:
            session.complete(slot, struct.pack(">i", slot.correlation_id) + b"\x00")
        return True


def _frame(api_key: int, version: int, corr: int, pad: int = 0) -> bytes:
    hdr = api.RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=corr,
                            client_id="unit").encode(api.request_header_version(api_key, version))
    body = hdr + b"\x00" * (8 + pad)
    return struct.pack(">i", len(body)) + body


def _session():
    proxy = Proxy(Config(upstream="127.0.0.1:1", group_coordinator="broker"))
    local = _Local()
    proxy.routes = {HEARTBEAT: local}
    proxy.allowed = {HEARTBEAT: (0, 4), FORWARDED: (0, 10)}
    s = Session(proxy, _Listener())
    s.connection_made(_Transport())
    s.upstream = _Upstream()
    return s, local


def _answer_upstream(s: Session, corr: int) -> None:
    s.on_response(struct.pack(">i", corr) + b"\x00")


def test_requests_behind_a_parked_local_request_wait_for_its_answer():
    s, local = _session()
    local.park = True
    s.data_received(_frame(HEARTBEAT, 4, 1) + _frame(FORWARDED, 7, 2) + _frame(HEARTBEAT, 4, 3))
    assert local.handed == [1] and s.upstream.out == [] and len(s.waiting) == 2
    local.park = False
    sess, slot = local.parked.pop()
    sess.complete(slot, struct.pack(">i", 1) + b"\x00")
    # the ListOffsets goes to the broker; the Heartbeat behind it waits for the broker's answer
    assert s.upstream.out == [2] and local.handed == [1] and s.transport.out == [1]
    _answer_upstream(s, 2)
    assert local.handed == [1, 3] and s.transport.out == [1, 2, 3] and not s.waiting


def test_forwarded_requests_stay_pipelined_until_a_local_one():
    s, local = _session()
    s.data_received(_frame(FORWARDED, 7, 1) + _frame(FORWARDED, 7, 2) + _frame(HEARTBEAT, 4, 3)
                    + _frame(FORWARDED, 7, 4))
    assert s.upstream.out == [1, 2] and local.handed == [] and len(s.waiting) == 2
    _answer_upstream(s, 1)
    assert local.handed == []
    _answer_upstream(s, 2)
    assert local.handed == [3] and s.upstream.out == [1, 2, 4]
    _answer_upstream(s, 4)
    assert s.transport.out == [1, 2, 3, 4]


def test_many_waiting_requests_drain_in_order_without_recursion():
    s, local = _session()
    local.park = True
    s.data_received(_frame(HEARTBEAT, 4, 0) + b"".join(_frame(HEARTBEAT, 4, i) for i in range(1, 3001)))
    local.park = False
    sess, slot = local.parked.pop()
    sess.complete(slot, struct.pack(">i", 0) + b"\x00")
    assert local.handed == list(range(3001)) and s.transport.out == list(range(3001))


def test_reading_pauses_while_much_waits_and_a_close_drops_it(monkeypatch):
    monkeypatch.setattr(session_mod, "HIGH_WATER", 10_000)
    s, local = _session()
    local.park = True
    s.data_received(_frame(HEARTBEAT, 4, 0))
    s.data_received(b"".join(_frame(FORWARDED, 7, i, pad=1000) for i in range(1, 12)))
    assert s.transport.paused and s.waiting_bytes > 10_000 and s.upstream.out == []
    sess, slot = local.parked.pop()
    sess.complete(slot, struct.pack(">i", 0) + b"\x00")
    assert not s.transport.paused and s.upstream.out == list(range(1, 12))

    s2, local2 = _session()
    local2.park = True
    s2.data_received(_frame(HEARTBEAT, 4, 0) + _frame(FORWARDED, 7, 1))
    s2.close()
    assert not s2.waiting and s2.waiting_bytes == 0 and s2.transport.closed


def test_requests_read_together_go_upstream_in_one_write_and_their_answers_back_in_one():
    s, _local = _session()
    s.data_received(b"".join(_frame(FORWARDED, 7, i) for i in (1, 2, 3)))
    assert s.upstream.out == [1, 2, 3] and s.upstream.writes == 1
    UpstreamSide(s).data_received(b"".join(_response(i) for i in (1, 2, 3)))
    assert s.transport.out == [1, 2, 3] and s.transport.writes == 1
    s.data_received(_frame(FORWARDED, 7, 4))          # one request, one answer: written at once
    assert s.upstream.out == [1, 2, 3, 4] and s.upstream.writes == 2
    _answer_upstream(s, 4)
    assert s.transport.out == [1, 2, 3, 4] and s.transport.writes == 2


def test_answers_read_before_a_bad_response_still_reach_the_client():
    s, _local = _session()
    s.data_received(b"".join(_frame(FORWARDED, 7, i) for i in (1, 2, 3)))
    # the broker answers 1 and 2, then a frame with a wrong correlation id: the connection closes
    UpstreamSide(s).data_received(_response(1) + _response(2) + _response(9))
    assert s.closed and s.transport.closed and s.transport.out == [1, 2]


def test_requests_read_before_a_bad_one_still_reach_the_broker():
    s, _local = _session()
    unreadable = struct.pack(">i", 2) + b"\x00\x02"     # a header cut short: the client is closed
    s.data_received(_frame(FORWARDED, 7, 1) + _frame(FORWARDED, 7, 2) + unreadable)
    assert s.closed and s.upstream.out == [1, 2] and s.upstream.writes == 1


def _response(corr: int) -> bytes:
    body = struct.pack(">i", corr) + b"\x00"
    return struct.pack(">i", len(body)) + body
