"""Upstream broker restart during a consume-and-commit workload through kshim: a Kafka of this test's
own (restarting the session's broker would disturb other tests) is stopped (SIGTERM) and started
again on the same data while a Java consumer consumes and commits through kshim and a producer
writes directly (retrying). The consumer recovers, consumes every record, its final commit covers
every record, and kshim's durable state still has those offsets afterwards."""

from __future__ import annotations

import os
import time

import pytest

from shim.compat.pymembers import create_topic
from shim.localkafka import LocalKafka
from testsuite.conftest import RUN_DIR
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block

pytestmark = [pytest.mark.kafka,     # a real Kafka (its own), in the integration phase
              pytest.mark.timing]  # the sends lost while the broker restarts depend on the load: runs alone
N = 3000


@pytest.fixture
def own_kafka(kafka_install):
    base = free_port_block(2, start=37000 + (os.getpid() % 97) * 40)
    cluster = LocalKafka(nodes=1, base_port=base, workdir=RUN_DIR / "kafka-restart", kafka=kafka_install)
    cluster.start(timeout=120)
    yield cluster
    cluster.stop()


def test_consumer_and_offsets_survive_a_broker_restart(own_kafka, kafka_install, names, tmp_path):
    topic, group = names.topic(), names.group()
    create_topic(own_kafka.bootstrap, topic, 3)
    port = free_port_block(5, start=37500 + (os.getpid() % 97) * 40)
    shim = KshimProcess(own_kafka.bootstrap, port, RUN_DIR / "kshim" / "broker-restart.log").start()
    via_kshim = JavaTools(kafka_install, shim.bootstrap, tmp_path / "via-kshim")
    direct = JavaTools(kafka_install, own_kafka.bootstrap, tmp_path / "direct")
    try:
        cons = via_kshim.verifiable_consumer(topic, group)
        prod = direct.verifiable_producer(topic, N, throughput=300)
        cons.wait_for(lambda evs: sum(e.get("count", 0) for e in evs if e.get("name") == "records_consumed") >= 300,
                      timeout=90, what="consumption under way")
        own_kafka.stop_node(1)
        time.sleep(3)
        own_kafka.start_node(1, timeout=120)
        prod.wait_event("shutdown_complete", timeout=180)
        end: dict[tuple[str, int], int] = {}
        for e in prod.named("producer_send_success"):
            key = (e["topic"], e["partition"])
            end[key] = max(end.get(key, 0), e["offset"] + 1)
        # a send in flight across the restart may fail for the (direct) producer; what counts is that
        # every acknowledged record is consumed and committed through kshim
        # (a send whose answer was lost in the restart is reported failed but may be in the log: the end
        # offsets can count it, so they are compared with the acknowledged sends, not with N - failed)
        failed = len(prod.named("producer_send_error"))
        acked = len(prod.named("producer_send_success"))
        assert acked + failed == N and acked >= N - 100 and sum(end.values()) >= acked, (end, acked, failed)
        cons.wait_for(lambda evs: cons.committed() == end, timeout=180, what="the final commit to cover every record")
        committed = cons.committed()
        consumed = cons.consumed_count()
        cons.stop()
    finally:
        via_kshim.stop_all()
        direct.stop_all()
    try:
        assert consumed >= sum(end.values())
        assert committed == end
        # kshim's coordinator (and its state topic, which lived through the restart) still has them
        assert committed_through(shim.bootstrap, group, topic) == end
        # and a kshim restarted now replays the same offsets from the state topic
        shim.kill()
        shim = KshimProcess(own_kafka.bootstrap, port, RUN_DIR / "kshim" / "broker-restart-2.log").start()
        assert committed_through(shim.bootstrap, group, topic) == end
    finally:
        shim.stop()


def committed_through(bootstrap: str, group: str, topic: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=30)
    finally:
        c.close()
    return {(t.topic, t.partition): t.offset for t in got if t.offset >= 0}    # -1001: nothing committed
