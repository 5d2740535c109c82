"""shim/proxy/upstream_side.py without sockets: a large broker answer next in line reaches the client
read by read, byte for byte; anything that needs the whole answer (a later answer, trace, metrics, a
rewrite) still sees it whole and in order."""

from __future__ import annotations

import struct

from kcodec import api
from shim.config import Config
from shim.proxy.frame_reader import STREAM_MIN
from shim.proxy.server import Proxy
from shim.proxy.session import Session
from shim.proxy.upstream_side import UpstreamSide

HEARTBEAT, LIST_OFFSETS, API_VERSIONS = 12, 2, 18


class _Bytes:
    """A transport that keeps every byte written, and how many writes there were."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.writes = 0
        self.closed = False

    def get_extra_info(self, _key):
        return ("127.0.0.1", 1)

    def write(self, data) -> None:
        self.writes += 1
        self.data += data

    def writelines(self, parts) -> None:
        self.writes += 1
        for p in parts:
            self.data += p

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class _Listener:
    node_id = None
    name = "unit"


class _Metrics:
    def __init__(self) -> None:
        self.responses = 0

    def clock(self) -> float:
        return 1.0

    def request(self, _key, _version) -> None:
        pass

    def upstream_latency(self, _key, _sent) -> None:
        pass

    def response(self, _slot, _data) -> None:
        self.responses += 1


def _local(session, slot, _frame) -> bool:
    session.complete(slot, _answer(slot.correlation_id, 8)[4:])   # a frame: no length prefix
    return True


def _session(metrics=None) -> tuple[Session, UpstreamSide]:
    proxy = Proxy(Config(upstream="127.0.0.1:1", group_coordinator="broker"))
    proxy.routes = {HEARTBEAT: _local}
    proxy.allowed = {HEARTBEAT: (0, 4), LIST_OFFSETS: (0, 10)}
    proxy.metrics = metrics
    s = Session(proxy, _Listener())
    s.connection_made(_Bytes())
    s.upstream = _Bytes()
    return s, UpstreamSide(s)


def _request(api_key: int, version: int, corr: int) -> bytes:
    hdr = api.RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=corr,
                            client_id="unit").encode(api.request_header_version(api_key, version))
    body = hdr + b"\x00" * 8
    return struct.pack(">i", len(body)) + body


def _answer(corr: int, size: int) -> bytes:
    body = struct.pack(">i", corr) + bytes(i % 251 for i in range(size - 4))
    return struct.pack(">i", len(body)) + body


def _feed(up: UpstreamSide, data: bytes, chunk: int) -> None:
    for i in range(0, len(data), chunk):
        up.data_received(data[i:i + chunk])


def test_a_large_answer_reaches_the_client_as_it_arrives_byte_for_byte():
    s, up = _session()
    s.data_received(_request(LIST_OFFSETS, 7, 1) + _request(LIST_OFFSETS, 7, 2))
    big, small = _answer(1, 5 * STREAM_MIN), _answer(2, 100)
    up.data_received(big[:20_000])
    assert bytes(s.transport.data) == big[:20_000]          # passed on before the rest came
    _feed(up, big[20_000:] + small, 30_000)                   # the tail and the next answer share a read
    assert bytes(s.transport.data) == big + small
    assert not s.pending and not s.awaiting and up.passing == 0


def test_a_local_answer_behind_a_streamed_one_waits_for_its_end():
    s, up = _session()
    s.data_received(_request(LIST_OFFSETS, 7, 1) + _request(HEARTBEAT, 4, 2))
    assert len(s.waiting) == 1                                # one request at a time, as the broker
    big = _answer(1, 3 * STREAM_MIN)
    up.data_received(big[:STREAM_MIN])
    assert len(s.waiting) == 1 and bytes(s.transport.data) == big[:STREAM_MIN]
    up.data_received(big[STREAM_MIN:])
    assert bytes(s.transport.data) == big + _answer(2, 8) and not s.waiting


def test_small_answers_and_metered_connections_get_whole_frames():
    for metrics, size in ((None, STREAM_MIN - 1), (_Metrics(), 4 * STREAM_MIN)):
        s, up = _session(metrics)
        s.data_received(_request(LIST_OFFSETS, 7, 1))
        frame = _answer(1, size)
        up.data_received(frame[:1000])
        assert s.transport.data == b"" and up.passing == 0    # held until whole
        _feed(up, frame[1000:], 7000)
        assert bytes(s.transport.data) == frame and s.transport.writes == 1
        if metrics is not None:
            assert metrics.responses == 1


def test_an_answer_to_rewrite_is_held_whole():
    s, up = _session()
    s.data_received(_request(API_VERSIONS, 3, 1))
    assert s.awaiting[0].rewrite
    frame = _answer(1, 2 * STREAM_MIN)
    up.data_received(frame[:STREAM_MIN])
    assert s.transport.data == b"" and up.passing == 0


class _Tracer:
    """Keeps what the session hands a tracer: whole frames and streamed ones (their parts joined)."""

    def __init__(self) -> None:
        self.frames: list[tuple] = []

    def new_conn(self) -> int:
        return 7

    def frame(self, conn, direction, api_key, version, corr, frame, client_id=None, ts=None) -> None:
        self.frames.append((direction, api_key, corr, bytes(frame)))

    def streamed(self, conn, directions, api_key, version, corr, client_id, parts) -> None:
        for d in directions:
            self.frames.append((d, api_key, corr, b"".join(bytes(p) for p in parts)))


def test_a_traced_answer_still_streams_and_the_tracer_gets_it_whole_once_through():
    s, up = _session()
    s.tracer = tracer = _Tracer()
    s.data_received(_request(LIST_OFFSETS, 7, 1))
    big = _answer(1, 4 * STREAM_MIN)
    up.data_received(big[:20_000])
    assert bytes(s.transport.data) == big[:20_000]          # passed on before the rest came
    assert [f[0] for f in tracer.frames] == [0, 1]           # so far the request, both ways
    _feed(up, big[20_000:], 25_000)
    assert bytes(s.transport.data) == big
    assert tracer.frames[2:] == [(2, LIST_OFFSETS, 1, big[4:]), (3, LIST_OFFSETS, 1, big[4:])]
