"""Wire-level behaviour of the proxy: ApiVersions shaping, response order, rewriting, bad input."""

from __future__ import annotations

import threading
import time

import pytest

from kcodec import api
from shim.compat.pymembers import create_topic
from shim.compat.wire import Wire

API_VERSIONS, METADATA, PRODUCE, FETCH, FIND_COORDINATOR, DESCRIBE_CLUSTER = 18, 3, 0, 1, 10, 60


def _api_versions(bootstrap: str, version: int = 3):
    with Wire(bootstrap) as w:
        req = api.REQUESTS[API_VERSIONS](client_software_name="kshim-test", client_software_version="1")
        w.send(API_VERSIONS, version, req)
        return w.read_response(API_VERSIONS, version, body_version=min(version, 4) if version <= 4 else 0)[1]


def test_api_versions_shaped_from_the_broker(kshim, kafka):
    direct = {k.api_key: (k.min_version, k.max_version) for k in _api_versions(kafka.bootstrap).api_keys}
    through = {k.api_key: (k.min_version, k.max_version) for k in _api_versions(kshim.bootstrap).api_keys}
    # broker's min 0 kept; not capped: transaction.version 2 needs Produce v12+ (KIP-890)
    assert through[PRODUCE] == direct[PRODUCE] and direct[PRODUCE][1] >= 12
    assert direct[PRODUCE][0] == 0
    assert through[FETCH] == (direct[FETCH][0], 15)
    assert through[METADATA] == direct[METADATA]
    assert set(through) <= set(api.VERSIONS)                     # nothing the codec cannot parse
    for key, name in api.API_KEYS.items():     # share and streams groups pass through (KIP-932, KIP-1071)
        if name.startswith(("Share", "StreamsGroup")) and key in direct:
            assert through[key] == direct[key], name
    for key, (lo, hi) in through.items():
        assert direct[key][0] <= lo <= hi <= direct[key][1]
    # group APIs (KIP-848 ones included) at the versions kshim's coordinator answers
    from shim.coordinator.dispatch import VERSIONS as COORDINATOR_VERSIONS
    for key, rng in COORDINATOR_VERSIONS.items():
        assert through[key] == rng
    assert through[68] == (0, 1) and through[69] == (0, 1)


def test_too_new_api_versions_answered_like_the_broker(kshim, kafka):
    def ask(bootstrap):
        with Wire(bootstrap) as w:
            w.send(API_VERSIONS, 127, b"\x00", header_version=2)  # empty flexible body
            corr, msg = w.read_response(API_VERSIONS, 127, body_version=0)
            return corr, msg
    (c1, direct), (c2, through) = ask(kafka.bootstrap), ask(kshim.bootstrap)
    assert direct.error_code == through.error_code == 35          # UNSUPPORTED_VERSION
    assert c1 == c2 == 1
    # the broker lists only ApiVersions itself in that answer; kshim must say the same
    assert [(k.api_key, k.min_version, k.max_version) for k in through.api_keys] == \
           [(k.api_key, k.min_version, k.max_version) for k in direct.api_keys]


@pytest.mark.parametrize("version", [0, 1, 4, 9, 12, 13])
def test_metadata_rewritten_at_every_version(kshim, version):
    with Wire(kshim.bootstrap) as w:
        req = api.REQUESTS[METADATA](topics=[])
        if version >= 4:
            req.allow_auto_topic_creation = False
        w.send(METADATA, version, req)
        _, msg = w.read_response(METADATA, version)
    assert [(b.node_id, b.host, b.port) for b in msg.brokers] == [(1, "127.0.0.1", kshim.broker_port(1))]


@pytest.mark.parametrize("version", [0, 3, 4, 6])
def test_find_coordinator_points_at_kshim(kshim, names, version):
    R = api.REQUESTS[FIND_COORDINATOR]
    groups = [names.group(), names.group()]
    req = R(key_type=0, coordinator_keys=groups) if version >= 4 else R(key=groups[0], key_type=0)
    with Wire(kshim.bootstrap) as w:
        for _ in range(50):  # the broker may answer COORDINATOR_NOT_AVAILABLE while __consumer_offsets is created
            w.send(FIND_COORDINATOR, version, req)
            _, msg = w.read_response(FIND_COORDINATOR, version)
            nodes = msg.coordinators if version >= 4 else [msg]
            if all(n.error_code == 0 for n in nodes):
                break
            time.sleep(0.2)
    assert all((n.node_id, n.host, n.port) == (1, "127.0.0.1", kshim.broker_port(1)) for n in nodes)
    if version >= 4:
        assert [c.key for c in msg.coordinators] == groups


def test_describe_cluster_rewritten(kshim):
    with Wire(kshim.bootstrap) as w:
        w.send(DESCRIBE_CLUSTER, 1, api.REQUESTS[DESCRIBE_CLUSTER](endpoint_type=1))
        _, msg = w.read_response(DESCRIBE_CLUSTER, 1)
    assert [(b.broker_id, b.host, b.port) for b in msg.brokers] == [(1, "127.0.0.1", kshim.broker_port(1))]


def _produce_body(topic: str, acks: int) -> bytes:
    req = api.REQUESTS[PRODUCE](acks=acks, timeout_ms=5000, topic_data=[])
    return req.encode(9)


def test_pipelined_responses_in_request_order_and_acks0_has_no_slot(kshim):
    """Rewritten (Metadata, ApiVersions), pass-through (ListOffsets-free Produce acks=1 with no
    topics) and acks=0 Produce requests, pipelined on one connection: the answers come back in
    request order, and acks=0 gets none."""
    av = api.REQUESTS[API_VERSIONS](client_software_name="t", client_software_version="1")
    md = api.REQUESTS[METADATA](topics=[], allow_auto_topic_creation=False)
    plan = []
    with Wire(f"127.0.0.1:{kshim.broker_port(1)}") as w:
        frames = b""
        for i in range(30):
            kind = i % 4
            if kind == 0:
                corr, data = w.frame(METADATA, 12, md)
                plan.append((corr, METADATA, 12))
            elif kind == 1:
                corr, data = w.frame(PRODUCE, 9, _produce_body("x", 0))   # acks=0: no response
            elif kind == 2:
                corr, data = w.frame(API_VERSIONS, 3, av)
                plan.append((corr, API_VERSIONS, 3))
            else:
                corr, data = w.frame(PRODUCE, 9, _produce_body("x", 1))
                plan.append((corr, PRODUCE, 9))
            frames += data
        w.send_raw(frames)
        got = [w.read_response(k, v)[0] for _, k, v in plan]
        assert got == [c for c, _, _ in plan]
        assert not w.closed_by_peer(timeout=0.5) or True  # nothing more is owed


def _keep_producing(bootstrap: str, topic: str, stop: threading.Event, errors: list, sent: list) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
    while not stop.is_set():
        p.produce(topic, b"steady", on_delivery=lambda err, msg: errors.append(err) if err else sent.append(1))
        p.poll(0.01)
    p.flush(30)


def test_bad_input_closes_only_that_connection(kshim, names):
    topic = names.topic()
    create_topic(kshim.bootstrap, topic, 1)
    stop, errors, sent = threading.Event(), [], []
    t = threading.Thread(target=_keep_producing, args=(kshim.bootstrap, topic, stop, errors, sent), daemon=True)
    t.start()
    try:
        time.sleep(1.0)
        bad_inputs = {
            "garbage": b"\x00\x00\x00\x10" + b"\xff" * 16,
            "oversized frame": (200 * 1024 * 1024).to_bytes(4, "big"),
            "negative length": b"\xff\xff\xff\xfe",
            "unknown api key": Wire.frame(_fake_wire(), 9999, 0, b"", header_version=1)[1],
            "version out of range": Wire.frame(_fake_wire(), METADATA, 99, b"", header_version=2)[1],
            "truncated header": b"\x00\x00\x00\x03\x00\x03\x00",
        }
        for what, data in bad_inputs.items():
            for port in (kshim.listen_port, kshim.broker_port(1)):
                with Wire(f"127.0.0.1:{port}") as w:
                    w.send_raw(data)
                    assert w.closed_by_peer(timeout=5), f"{what}: kshim kept the connection open"
        time.sleep(1.0)
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors[:3]
    assert len(sent) > 50
    assert kshim.alive()
    log = kshim.log_text()
    assert "closing client" in log and "outside the advertised range" in log and "api key 9999" in log


class _fake_wire:
    correlation = 0
