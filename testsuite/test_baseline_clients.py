"""Baseline: real clients directly against the real broker (no kshim). Later suites run the same
steps through kshim and compare with these."""

from __future__ import annotations

import pytest

from testsuite.harness.clients import CLIENTS

N = 1000


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_python_client_produce_consume_1000(kafka, new_topic, names, client):
    produce, consume = CLIENTS[client]
    topic = new_topic(partitions=3)
    values = [f"{client}-{i}".encode() for i in range(N)]
    produce(kafka.bootstrap, topic, values)
    got = consume(kafka.bootstrap, topic, names.group(), N)
    assert sorted(got) == sorted(values)


def test_java_verifiable_producer_consumer_1000(java, new_topic, names):
    topic = new_topic(partitions=3)
    prod = java.verifiable_producer(topic, N)
    prod.wait_event("shutdown_complete", timeout=60)
    assert len(prod.named("producer_send_success")) == N
    assert not prod.named("producer_send_error")

    cons = java.verifiable_consumer(topic, names.group(), max_messages=N)
    cons.wait_for(lambda evs: sum(e.get("count", 0) for e in evs if e.get("name") == "records_consumed") >= N,
                  timeout=60, what=f"{N} records consumed")
    cons.wait_event("offsets_committed", timeout=30)
    assert cons.consumed_count() == N
    # every committed offset points past the last record of its partition
    produced_end: dict[tuple[str, int], int] = {}
    for e in prod.named("producer_send_success"):
        key = (e["topic"], e["partition"])
        produced_end[key] = max(produced_end.get(key, 0), e["offset"] + 1)
    cons.stop()
    assert cons.committed() == produced_end


def test_static_group_of_three_consumes_all_partitions(java, new_topic, names):
    """3 VerifiableConsumers with group.instance.id share a 6-partition topic: 2 partitions each,
    all partitions covered, all 1,000 records consumed once."""
    topic = new_topic(partitions=6)
    group = names.group()
    prod = java.verifiable_producer(topic, N)
    prod.wait_event("shutdown_complete", timeout=60)

    members = [java.verifiable_consumer(topic, group, instance_id=f"{group}-m{i}", session_timeout_ms=10000,
                                        name=f"static-{i}") for i in range(3)]
    for m in members:
        m.wait_event("startup_complete", timeout=60)

    def balanced() -> bool:
        owned = [m.assigned() for m in members]
        return all(len(o) == 2 for o in owned) and len(set().union(*owned)) == 6

    import time
    deadline = time.monotonic() + 90
    while not balanced():
        assert time.monotonic() < deadline, f"group never balanced: {[m.assigned() for m in members]}"
        time.sleep(0.25)
    owned = [m.assigned() for m in members]
    assert set().union(*owned) == {(topic, p) for p in range(6)}
    deadline = time.monotonic() + 60
    while sum(m.consumed_count() for m in members) < N:
        assert time.monotonic() < deadline, f"consumed {[m.consumed_count() for m in members]}"
        time.sleep(0.25)
    assert sum(m.consumed_count() for m in members) == N


def test_kafka_cli_tools(java, new_topic, names):
    """kafka-topics, kafka-configs, kafka-consumer-groups and the perf-test tools run against the broker."""
    topic = new_topic(partitions=2)
    listed = java.run("kafka-topics", ["--list"]).stdout.split()
    assert topic in listed
    java.run("kafka-configs", ["--alter", "--entity-type", "topics", "--entity-name", topic,
                               "--add-config", "retention.ms=3600000"])
    described = java.run("kafka-configs", ["--describe", "--entity-type", "topics", "--entity-name", topic]).stdout
    assert "retention.ms=3600000" in described

    perf = java.run("kafka-producer-perf-test", [], check=False)  # usage check of the wrapper itself
    assert "bootstrap" in (perf.stdout + perf.stderr).lower()
    from shim.compat.javaclient import run_tool
    out = run_tool(java.kafka, "kafka-producer-perf-test",
                   ["--bootstrap-server", java.bootstrap, "--topic", topic, "--num-records", "2000",
                    "--record-size", "1024", "--throughput", "-1"], timeout=60).stdout
    assert "2000 records sent" in out

    group = names.group()
    out = run_tool(java.kafka, "kafka-consumer-perf-test",
                   ["--bootstrap-server", java.bootstrap, "--topic", topic, "--group", group,
                    "--num-records", "2000", "--timeout", "30000"], timeout=90).stdout
    assert "data.consumed.in.MB" in out or "MB.sec" in out
    groups = java.run("kafka-consumer-groups", ["--list"]).stdout.split()
    assert group in groups
