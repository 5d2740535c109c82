"""The 3-node real cluster the proxy tests use: all brokers visible, replicated topics, and a node
stopped and restarted while clients keep working."""

from __future__ import annotations

from shim.compat.pymembers import create_topic
from shim.localkafka import probe_brokers
from testsuite.harness.clients import ck_consume, ck_produce


def test_three_brokers_replicate_and_survive_a_node_stop(kafka3, names):
    brokers = probe_brokers(kafka3.nodes[0].port)
    assert sorted(b[0] for b in brokers) == [1, 2, 3]
    assert {b[2] for b in brokers} == {n.port for n in kafka3.nodes}

    topic = names.topic()
    create_topic(kafka3.bootstrap, topic, partitions=3, replication=3)
    first = [f"a{i}".encode() for i in range(300)]
    ck_produce(kafka3.bootstrap, topic, first, acks="all")

    kafka3.stop_node(3)
    try:
        second = [f"b{i}".encode() for i in range(300)]
        ck_produce(kafka3.bootstrap, topic, second, acks="all")
        got = ck_consume(kafka3.bootstrap, topic, names.group(), 600, timeout=90)
        assert sorted(got) == sorted(first + second)
    finally:
        kafka3.start_node(3, wait=True)
    assert sorted(b[0] for b in probe_brokers(kafka3.nodes[0].port)) == [1, 2, 3]
