"""kafka-groups.sh --list (GroupsCommand: ListGroups v5 with group types, KIP-848/KIP-932/KIP-1071)
through kshim lists exactly the union of the broker's groups and kshim's own: kshim answers the
consumer groups, the broker the share groups it holds (passed through).

A dedicated broker and kshim (not the session's, which hold other tests' groups), so "exactly" can be
checked: the broker holds one share group (joined directly), kshim one classic consumer group (a
confluent-kafka consumer that committed through kshim)."""

from __future__ import annotations

import pytest

from shim.compat.pymembers import create_topic
from shim.localkafka import LocalKafka
from testsuite.conftest import _SPREAD, RUN_DIR
from testsuite.harness.clients import ck_consume, ck_produce
from testsuite.harness.javaapps import compile_app, start_app
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block


@pytest.fixture
def own_pair(kafka_install):
    """A fresh single-node Kafka and a kshim in front of it, for this test alone."""
    base = free_port_block(2, start=34000 + _SPREAD)
    cluster = LocalKafka(nodes=1, base_port=base, workdir=RUN_DIR / "kafka-groups-union", kafka=kafka_install,
                         heap="512m")
    cluster.start(timeout=120)
    shim = None
    try:
        shim = KshimProcess(cluster.bootstrap, free_port_block(5, start=34500 + _SPREAD),
                            RUN_DIR / "kshim" / "groups-union.log")
        shim.start()
        yield cluster, shim
    finally:
        if shim:
            shim.stop()
        cluster.stop()


def _rows(java: JavaTools, *flags: str) -> set[tuple[str, ...]]:
    out = java.run("kafka-groups", ["--list", *flags]).stdout
    return {tuple(line.split()) for line in out.splitlines()[1:] if line.split()}


@pytest.mark.kafka
def test_kafka_groups_list_through_kshim_is_the_union(own_pair, kafka_install, names, tmp_path):
    cluster, shim = own_pair
    direct = JavaTools(kafka_install, cluster.bootstrap, tmp_path / "broker")
    via = JavaTools(kafka_install, shim.bootstrap, tmp_path / "kshim")
    try:
        topic, consumer_group, share_group = names.topic(), names.group("cg"), names.group("sg")
        create_topic(cluster.bootstrap, topic, partitions=1)
        ck_produce(cluster.bootstrap, topic, [b"a", b"b"])
        assert len(ck_consume(shim.bootstrap, topic, consumer_group, 2)) == 2      # a group kshim owns
        classes = compile_app("ShareConsumerApp.java", tmp_path / "classes")
        app = start_app(direct, "ShareConsumerApp", [cluster.bootstrap, share_group, topic, "2", "-", "60000"],
                        "share-direct", [str(classes)])
        app.wait_event("summary", timeout=90)                                      # a share group on the broker
        assert app.proc.wait(30) == 0, app.stderr_tail()

        broker_rows, kshim_rows = _rows(direct), _rows(via)
        kshim_consumer_rows = _rows(via, "--consumer")
        assert broker_rows == {(share_group, "Share", "share")}
        assert kshim_consumer_rows == {(consumer_group, "Classic", "consumer")}
        assert consumer_group not in {r[0] for r in broker_rows}                   # kshim's, not the broker's
        assert kshim_rows == broker_rows | kshim_consumer_rows
        assert _rows(via, "--share") == broker_rows
    finally:
        direct.stop_all()
        via.stop_all()
