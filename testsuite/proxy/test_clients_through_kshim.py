"""Real clients produce and consume through kshim (single-node upstream); everything they see
points at kshim."""

from __future__ import annotations

import pytest

from shim.compat.pymembers import create_topic
from testsuite.harness.clients import CLIENTS, ck_consume, ck_produce

N = 1000


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_python_client_through_kshim(kshim, names, client):
    produce, consume = CLIENTS[client]
    topic = names.topic()
    create_topic(kshim.bootstrap, topic, partitions=3)
    values = [f"{client}-{i}".encode() for i in range(N)]
    produce(kshim.bootstrap, topic, values)
    assert sorted(consume(kshim.bootstrap, topic, names.group(), N)) == sorted(values)


def test_metadata_shows_only_kshim_addresses(kshim, kafka):
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": kshim.bootstrap}).list_topics(timeout=10)
    assert {(b.id, b.host, b.port) for b in md.brokers.values()} == {(1, "127.0.0.1", kshim.broker_port(1))}
    assert md.cluster_id == kafka.cluster_id


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_codecs(kshim, names, codec):
    topic = names.topic()
    create_topic(kshim.bootstrap, topic, partitions=2)
    values = [(f"{codec}-{i}-" + "x" * 200).encode() for i in range(500)]
    ck_produce(kshim.bootstrap, topic, values, **{"compression.type": codec})
    assert sorted(ck_consume(kshim.bootstrap, topic, names.group(), len(values))) == sorted(values)


def test_idempotent_and_transactional_producers(kshim, names):
    from confluent_kafka import Producer
    topic = names.topic()
    create_topic(kshim.bootstrap, topic, partitions=3)
    ck_produce(kshim.bootstrap, topic, [b"idem-%d" % i for i in range(300)], **{"enable.idempotence": True})

    p = Producer({"bootstrap.servers": kshim.bootstrap, "transactional.id": names.instance("txn")})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(100):
        p.produce(topic, b"committed-%d" % i)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(50):
        p.produce(topic, b"aborted-%d" % i)
    p.abort_transaction(30)

    got = ck_consume(kshim.bootstrap, topic, names.group(), 400, timeout=30, **{"isolation.level": "read_committed"})
    assert sorted(got) == sorted([b"idem-%d" % i for i in range(300)] + [b"committed-%d" % i for i in range(100)])


def test_admin_operations(kshim, names):
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
    admin = AdminClient({"bootstrap.servers": kshim.bootstrap})
    topic = names.topic()
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    admin.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)
    import time
    deadline = time.monotonic() + 15   # the broker applies config changes asynchronously
    while True:
        cfg = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
        value = list(cfg.values())[0].result(30)["retention.ms"].value
        if value == "7200000" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert value == "7200000"
    md = admin.list_topics(topic=topic, timeout=10)
    assert len(md.topics[topic].partitions) == 4
    admin.delete_topics([topic])[topic].result(30)


def test_java_clients_and_cli_tools_through_kshim(kshim, kafka_install, names, tmp_path):
    from shim.compat.javaclient import JavaTools
    java = JavaTools(kafka_install, kshim.bootstrap, tmp_path)
    try:
        topic = names.topic()
        java.run("kafka-topics", ["--create", "--topic", topic, "--partitions", "3"])
        assert topic in java.run("kafka-topics", ["--list"]).stdout.split()
        java.run("kafka-configs", ["--alter", "--entity-type", "topics", "--entity-name", topic,
                                   "--add-config", "max.message.bytes=2000000"])
        assert "max.message.bytes=2000000" in java.run(
            "kafka-configs", ["--describe", "--entity-type", "topics", "--entity-name", topic]).stdout
        prod = java.verifiable_producer(topic, N)
        prod.wait_event("shutdown_complete", timeout=60)
        assert len(prod.named("producer_send_success")) == N
        group = names.group()
        cons = java.verifiable_consumer(topic, group, max_messages=N)
        cons.wait_for(lambda evs: sum(e.get("count", 0) for e in evs if e.get("name") == "records_consumed") >= N,
                      timeout=60, what="all records")
        cons.wait_event("offsets_committed", timeout=30)
        cons.stop()
        out = java.run("kafka-consumer-groups", ["--describe", "--group", group]).stdout
        assert topic in out
        assert group in java.run("kafka-consumer-groups", ["--list"]).stdout.split()
    finally:
        java.stop_all()


@pytest.mark.java
def test_java_transactions_v2_through_kshim(kshim, kafka_install, names):
    """The Java client 4.x uses transactions v2 when the cluster finalizes transaction.version 2 (KIP-890,
    Kafka 4's default): Produce v12+ without AddPartitionsToTxn, TxnOffsetCommit v5 without
    AddOffsetsToTxn. kshim offers Produce v12+ (a cap at v9 makes every such transaction fail with
    "Partition was not added to the transaction"). A transactional perf-test producer, then Kafka's
    TransactionalMessageCopier (consume-transform-produce, offsets sent to kshim's coordinator)."""
    from shim.compat.javaclient import run_tool
    perf, src, dst, group = names.topic("tx-perf"), names.topic("tx-src"), names.topic("tx-dst"), names.group("tx")
    for topic in (perf, src, dst):
        create_topic(kshim.bootstrap, topic, partitions=1)
    out = run_tool(kafka_install, "kafka-producer-perf-test",
                   ["--bootstrap-server", kshim.bootstrap, "--topic", perf, "--num-records", "300",
                    "--record-size", "100", "--throughput", "-1", "--transactional-id", names.instance("perf"),
                    "--transaction-duration-ms", "100"], timeout=90).stdout
    assert "300 records sent" in out, out
    assert len(ck_consume(kshim.bootstrap, perf, names.group("tx-perf"), 300, timeout=30,
                          **{"isolation.level": "read_committed"})) == 300
    ck_produce(kshim.bootstrap, src, [b"in-%d" % i for i in range(300)])   # (no markers: the copier counts offsets)
    run_tool(kafka_install, "org.apache.kafka.tools.TransactionalMessageCopier",
             ["--broker-list", kshim.bootstrap, "--input-topic", src, "--input-partition", "0",
              "--output-topic", dst, "--max-messages", "300", "--consumer-group", group,
              "--transaction-size", "40", "--transactional-id", names.instance("copier"),
              "--group-mode", "--use-group-metadata"], timeout=120)
    copied = ck_consume(kshim.bootstrap, dst, names.group("tx-check"), 300, timeout=30,
                        **{"isolation.level": "read_committed"})
    assert sorted(copied) == sorted(b"in-%d" % i for i in range(300))
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": kshim.bootstrap, "group.id": group})
    try:
        [tp] = c.committed([TopicPartition(src, 0)], timeout=30)
    finally:
        c.close()
    assert tp.offset == 300
