"""kshim in front of 3 brokers: one port per broker, leader movement followed by clients without
errors reaching the application, a dead broker's clients closed while the others are served, and
the broker's port back when it returns."""

from __future__ import annotations

import threading
import time

from kcodec import api
from shim.compat.pymembers import create_topic
from testsuite.harness.clients import ck_consume
from shim.compat.wire import Wire

METADATA = 3


def _metadata(port: int, topics: list[str] = ()):
    from kcodec.generated.metadata import MetadataRequestTopic
    with Wire(f"127.0.0.1:{port}") as w:
        w.send(METADATA, 12, api.REQUESTS[METADATA](topics=[MetadataRequestTopic(name=t) for t in topics],
                                                     allow_auto_topic_creation=False))
        return w.read_response(METADATA, 12)[1]


def _wait(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_every_broker_has_a_kshim_port(kshim3):
    md = _metadata(kshim3.listen_port)
    assert sorted((b.node_id, b.port) for b in md.brokers) == [(n, kshim3.broker_port(n)) for n in (1, 2, 3)]
    for n in (1, 2, 3):
        assert {b.host for b in _metadata(kshim3.broker_port(n)).brokers} == {"127.0.0.1"}


def test_leader_moves_and_clients_follow_through_kshim(kshim3, kafka3, names):
    from confluent_kafka import Producer
    topic = names.topic()
    create_topic(kshim3.bootstrap, topic, partitions=3, replication=3)
    errors, acked = [], []
    stop = threading.Event()

    def produce():
        p = Producer({"bootstrap.servers": kshim3.bootstrap, "acks": "all", "linger.ms": 5,
                      "enable.idempotence": True, "message.timeout.ms": 60000})
        i = 0
        while not stop.is_set():
            p.produce(topic, b"m-%d" % i, on_delivery=lambda err, msg: errors.append(err) if err else acked.append(msg.value()))
            i += 1
            p.poll(0.005)
        p.flush(60)

    leaders: dict[int, int] = {}

    def known() -> bool:  # brokers learn a new topic at their own pace: ask until one knows all 3
        md = _metadata(kshim3.listen_port, [topic])
        leaders.update({p.partition_index: p.leader_id for tp in md.topics if tp.name == topic
                        for p in tp.partitions if p.leader_id >= 0})
        return len(leaders) == 3
    _wait(known, 30, "metadata of the new topic")
    victim = leaders[0]
    t = threading.Thread(target=produce, daemon=True)
    t.start()
    try:
        _wait(lambda: len(acked) > 200, 30, "first acks")
        kafka3.stop_node(victim)
        before = len(acked)
        _wait(lambda: len(acked) > before + 500, 60, "acks after the leader stopped")
        md = _metadata(kshim3.listen_port, [topic])
        new_leaders = {p.partition_index: p.leader_id for tp in md.topics if tp.name == topic for p in tp.partitions}
        assert victim not in new_leaders.values()
    finally:
        stop.set()
        t.join(90)
        kafka3.start_node(victim, wait=True)
    assert not errors, errors[:3]
    got = ck_consume(kshim3.bootstrap, topic, names.group(), len(acked), timeout=90)
    assert sorted(got) == sorted(acked)


def test_dead_broker_closes_its_clients_and_comes_back(kshim3, kafka3):
    victim = 3
    w3 = Wire(f"127.0.0.1:{kshim3.broker_port(victim)}")
    w3.send(METADATA, 12, api.REQUESTS[METADATA](topics=[], allow_auto_topic_creation=False))
    w3.read_response(METADATA, 12)
    w1 = Wire(f"127.0.0.1:{kshim3.broker_port(1)}")
    kafka3.stop_node(victim)
    try:
        assert w3.closed_by_peer(timeout=20), "client of the dead broker was not closed"
        # the other brokers keep being served, on a connection that was open all along
        w1.send(METADATA, 12, api.REQUESTS[METADATA](topics=[], allow_auto_topic_creation=False))
        _, md = w1.read_response(METADATA, 12)
        assert md.brokers
    finally:
        w1.close()
        w3.close()
        kafka3.start_node(victim, wait=True)
    # kshim reconnects: its port for the broker answers again with the broker's own view
    def answers() -> bool:
        try:
            return len(_metadata(kshim3.broker_port(victim)).brokers) == 3
        except (OSError, ConnectionError):
            return False
    _wait(answers, 60, f"kshim's port for node {victim} to answer again")
    assert "upstream" in kshim3.log_text()
