"""shim/proxy/request_stream.py without sockets: a large request that would be forwarded at once
reaches the broker read by read, byte for byte, and keeps its place in the connection's response
order; anything that needs it whole (kshim's own requests in flight, metrics, fault rules) still
gets it whole, and the tracer gets it whole once it is through."""

from __future__ import annotations

import struct

from kcodec.generated.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from kcodec import api
from shim.proxy.frame_reader import STREAM_MIN
from shim.proxy.session import UpstreamSide
from testsuite.proxy.test_upstream_stream_unit import _Metrics, _request, _session, _Tracer

PRODUCE, HEARTBEAT = 0, 12


def _produce(corr: int, acks: int, size: int) -> bytes:
    req = ProduceRequest(acks=acks, timeout_ms=30000, topic_data=[TopicProduceData(name="t", partition_data=[
        PartitionProduceData(index=0, records=bytes(i % 251 for i in range(size)))])])
    hdr = api.RequestHeader(request_api_key=PRODUCE, request_api_version=9, correlation_id=corr,
                            client_id="producer-1").encode(api.request_header_version(PRODUCE, 9))
    body = hdr + req.encode(9)
    return struct.pack(">i", len(body)) + body


def _allow_produce(s) -> None:
    s.proxy.allowed[PRODUCE] = (3, 9)


def _answer(corr: int) -> bytes:
    body = struct.pack(">i", corr) + b"\x00" * 8
    return struct.pack(">i", len(body)) + body


def test_a_large_produce_reaches_the_broker_as_it_arrives_and_its_answer_keeps_its_place():
    s, up = _session()
    _allow_produce(s)
    big = _produce(1, -1, 4 * STREAM_MIN)
    s.data_received(big[:STREAM_MIN // 2])
    assert bytes(s.upstream.data) == big[:STREAM_MIN // 2] and s.client_id == "producer-1"
    rest = big[STREAM_MIN // 2:] + _request(2, 7, 2)      # the next request (ListOffsets) in the same read
    for i in range(0, len(rest), 50_000):
        s.data_received(rest[i:i + 50_000])
    assert bytes(s.upstream.data) == big + _request(2, 7, 2)
    assert [slot.correlation_id for slot in s.pending] == [1, 2]
    UpstreamSide(s).data_received(_answer(1) + _answer(2))
    assert bytes(s.transport.data) == _answer(1) + _answer(2)


def test_a_traced_produce_still_streams_and_the_tracer_gets_it_whole_once_through():
    s, _up = _session()
    s.tracer = tracer = _Tracer()
    _allow_produce(s)
    big = _produce(1, -1, 3 * STREAM_MIN)
    s.data_received(big[:STREAM_MIN // 2])
    assert bytes(s.upstream.data) == big[:STREAM_MIN // 2] and tracer.frames == []
    for i in range(STREAM_MIN // 2, len(big), 40_000):
        s.data_received(big[i:i + 40_000])
    assert bytes(s.upstream.data) == big
    assert tracer.frames == [(0, PRODUCE, 1, big[4:]), (1, PRODUCE, 1, big[4:])]


def test_a_large_produce_with_acks_0_streams_without_a_slot():
    s, _up = _session()
    _allow_produce(s)
    big = _produce(1, 0, 2 * STREAM_MIN)
    s.data_received(big[:1000])
    assert bytes(s.upstream.data) == big[:1000] and not s.pending and not s.awaiting
    s.data_received(big[1000:])
    assert bytes(s.upstream.data) == big and not s.pending and s.passing == 0


def test_a_large_request_behind_a_local_one_or_on_a_watched_connection_is_held_whole():
    behind_local = _session()[0]
    behind_local.proxy.routes[HEARTBEAT] = lambda session, slot, frame: True   # parked: never answered
    metered = _session(_Metrics())[0]
    for s, first in ((behind_local, _request(HEARTBEAT, 4, 0)), (metered, b"")):
        _allow_produce(s)
        big = _produce(1, -1, 2 * STREAM_MIN)
        s.data_received(first + big[:STREAM_MIN])
        assert s.upstream.data == b"" and s.passing == 0
        s.data_received(big[STREAM_MIN:])
        if s is metered:
            assert bytes(s.upstream.data) == big                 # forwarded whole once complete
        else:
            assert s.upstream.data == b"" and len(s.waiting) == 1  # waits its turn, as before


def test_a_large_request_kshim_must_refuse_is_not_streamed():
    s, _up = _session()
    big = _produce(1, -1, 2 * STREAM_MIN)                          # Produce not advertised here
    s.data_received(big[:STREAM_MIN])
    assert s.upstream.data == b"" and not s.closed
    s.data_received(big[STREAM_MIN:])
    assert s.closed and s.upstream.data == b""


def test_requests_after_one_that_closes_the_connection_in_the_same_read_are_not_handled():
    s, _up = _session()
    s.data_received(_request(PRODUCE, 9, 1) + _request(2, 7, 2))   # Produce not advertised: closes
    assert s.closed and s.upstream.data == b"" and not s.pending
