"""Real clients through kshim with injected faults (shim/proxy/faults.py, set over the admin
endpoint): coordinator errors on the group APIs and dropped requests (request timeouts). The
clients must recover: every record consumed, and the committed offsets end where the records end."""

from __future__ import annotations

import time

from shim.compat.javaclient import JavaTools

N = 600


def _produce(java_direct, topic: str) -> dict[tuple[str, int], int]:
    prod = java_direct.verifiable_producer(topic, N)
    prod.wait_event("shutdown_complete", timeout=60)
    assert len(prod.named("producer_send_success")) == N
    end: dict[tuple[str, int], int] = {}
    for e in prod.named("producer_send_success"):
        key = (e["topic"], e["partition"])
        end[key] = max(end.get(key, 0), e["offset"] + 1)
    return end


def _consume_all(java, topic: str, group: str, extra=None):
    cons = java.verifiable_consumer(topic, group, max_messages=N, extra=extra)
    cons.wait_for(lambda evs: sum(e.get("count", 0) for e in evs if e.get("name") == "records_consumed") >= N,
                  timeout=120, what=f"{N} records consumed through faults")
    cons.wait_for(lambda evs: any(e.get("name") == "offsets_committed" and e.get("success") for e in evs),
                  timeout=60, what="a successful commit")
    cons.wait_event("shutdown_complete", timeout=60)
    return cons


def test_java_consumer_recovers_from_coordinator_errors(faulty, kafka_install, java, new_topic, names, tmp_path):
    """NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and REBALANCE_IN_PROGRESS on JoinGroup, SyncGroup,
    OffsetFetch and OffsetCommit: the Java consumer rediscovers, backs off, rejoins and commits."""
    proc, admin = faulty
    topic = new_topic(partitions=3)
    end = _produce(java, topic)
    group = names.group()
    client = f"consumer-{group}"          # the Java consumer's default client.id prefix
    added = admin.add(
        {"api": "FindCoordinator", "action": "error", "error": "COORDINATOR_NOT_AVAILABLE", "first": 1,
         "client_id": client},
        {"api": "JoinGroup", "action": "error", "error": "COORDINATOR_LOAD_IN_PROGRESS", "first": 2,
         "client_id": client},
        {"api": "SyncGroup", "action": "error", "error": "REBALANCE_IN_PROGRESS", "first": 1, "client_id": client},
        {"api": "OffsetFetch", "action": "error", "error": "COORDINATOR_LOAD_IN_PROGRESS", "first": 2,
         "client_id": client},
        {"api": "OffsetCommit", "action": "error", "error": "NOT_COORDINATOR", "first": 2, "client_id": client},
    )
    via_kshim = JavaTools(kafka_install, proc.bootstrap, tmp_path)
    try:
        cons = _consume_all(via_kshim, topic, group)
    finally:
        via_kshim.stop_all()
    assert cons.consumed_count() == N
    assert cons.committed() == end
    rules = admin.rules()
    for r in added:   # every injected error was met (and the client got past it)
        assert rules[r["id"]]["applied"] == r["first"], rules[r["id"]]
    failed = [e for e in cons.named("offsets_committed") if not e.get("success")]
    assert len(failed) <= 2   # commitSync retries NOT_COORDINATOR itself; at most these two show


def test_java_consumer_recovers_from_dropped_requests(faulty, kafka_install, java, new_topic, names, tmp_path):
    """A dropped JoinGroup and a dropped OffsetCommit (the coordinator goes silent on that
    connection): the consumer's request times out, it reconnects and goes on."""
    proc, admin = faulty
    topic = new_topic(partitions=2)
    end = _produce(java, topic)
    group = names.group()
    client = f"consumer-{group}"
    added = admin.add({"api": "OffsetCommit", "action": "drop", "first": 1, "client_id": client},
                      {"api": "Heartbeat", "action": "drop", "first": 1, "client_id": client})
    props = tmp_path / "consumer.properties"
    props.write_text("request.timeout.ms=4000\ndefault.api.timeout.ms=60000\nheartbeat.interval.ms=500\n")
    via_kshim = JavaTools(kafka_install, proc.bootstrap, tmp_path)
    try:
        cons = _consume_all(via_kshim, topic, group, extra=["--command-config", str(props)])
    finally:
        via_kshim.stop_all()
    assert cons.consumed_count() == N
    assert cons.committed() == end
    rules = admin.rules()
    assert rules[added[0]["id"]]["applied"] == 1


def test_confluent_kafka_recovers_from_coordinator_errors(faulty, new_topic, names):
    """librdkafka's consumer: JoinGroup answered NOT_COORDINATOR, a Heartbeat REBALANCE_IN_PROGRESS and
    the first OffsetCommit COORDINATOR_LOAD_IN_PROGRESS: it rediscovers, rejoins, consumes everything
    and its synchronous commit lands (read back afterwards). Not injected: NOT_COORDINATOR on
    OffsetCommit, which librdkafka 2.x does not get past when the coordinator stays the same broker
    (its retried commit fails with "Broker transport failure" until the session times out)."""
    from confluent_kafka import Consumer, TopicPartition

    from testsuite.harness.clients import ck_produce
    proc, admin = faulty
    topic = new_topic(partitions=1)
    values = [f"v{i}".encode() for i in range(200)]
    ck_produce(proc.bootstrap, topic, values)
    group = names.group()
    added = admin.add(
        {"api": "JoinGroup", "action": "error", "error": "NOT_COORDINATOR", "first": 1, "client_id": group},
        {"api": "Heartbeat", "action": "error", "error": "REBALANCE_IN_PROGRESS", "first": 1, "client_id": group},
        {"api": "OffsetCommit", "action": "error", "error": "COORDINATOR_LOAD_IN_PROGRESS", "first": 1,
         "client_id": group})
    got, errors = [], []
    c = Consumer({"bootstrap.servers": proc.bootstrap, "group.id": group, "client.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "heartbeat.interval.ms": 300})
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    try:
        while (len(got) < len(values) or admin.rules()[added[1]["id"]]["applied"] == 0) \
                and time.monotonic() < deadline:
            for m in c.consume(num_messages=500, timeout=0.5):
                if m.error():          # librdkafka may report a retried coordinator error
                    assert not m.error().fatal(), m.error()
                    errors.append(m.error().code())
                else:
                    got.append(m.value())
        c.commit(asynchronous=False)   # the first OffsetCommit gets the error: librdkafka retries it
    finally:
        c.close()
    assert sorted(set(got)) == sorted(values)
    rules = admin.rules()
    assert [rules[r["id"]]["applied"] for r in added] == [1, 1, 1]
    c = Consumer({"bootstrap.servers": proc.bootstrap, "group.id": group})
    try:
        [tp] = c.committed([TopicPartition(topic, 0)], timeout=30)
    finally:
        c.close()
    assert tp.offset == len(values)
