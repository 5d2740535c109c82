"""Copy this file into your repo; run `pytest --kshim` (docs/pytest-plugin.md)."""

from confluent_kafka import Consumer, Producer


def produce_and_consume(bootstrap: str, topic: str, group: str) -> list[bytes]:
    """Your client code: produce two records, read them back in a consumer group, commit."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in (b"one", b"two"):
        producer.produce(topic, value)
    producer.flush(10)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: list[bytes] = []
    for _ in range(60):
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            seen.append(msg.value())
        if len(seen) == 2:
            break
    consumer.commit(asynchronous=False)
    consumer.close()
    return seen


def test_through_kshim(kshim_server, kshim_topic, kshim_names, kshim_trace):
    group = kshim_names.group()
    assert produce_and_consume(kshim_server.bootstrap, kshim_topic(), group) == [b"one", b"two"]
    # kshim's own coordinator answered the group: its wire trace shows the join and the commit
    assert kshim_trace.frames(api="JoinGroup", group=group)
    assert kshim_trace.frames(api="OffsetCommit", group=group)


def test_same_as_the_broker(compare_with_broker, kshim_topic, kshim_names):
    # fresh names for each run: both runs share one Kafka
    result = compare_with_broker(lambda bootstrap: produce_and_consume(bootstrap, kshim_topic(), kshim_names.group()))
    assert result.broker == result.kshim == [b"one", b"two"]
