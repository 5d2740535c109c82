"""Consumers whose group lives on a scale-out kshim instance that is SIGKILLed fail over to the
survivor on their own: the survivor stops naming the dead instance in FindCoordinator at
once (shim/state/peerwatch.py: COORDINATOR_NOT_AVAILABLE until it takes the partition over), so a
client's node address is never pointed back at the dead instance, and the same consumer commits
again through the survivor, with default client settings and no restart: librdkafka
(confluent-kafka) and the Java consumer (Kafka's VerifiableConsumer)."""

from __future__ import annotations

import threading
import time

import pytest

from testsuite.conftest import RUN_DIR
from testsuite.harness.clients import ck_produce
from shim.compat.javaclient import JavaTools
from testsuite.state.conftest import SESSION_MS
from testsuite.state.test_scale_out import find, owners, wait_for

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)

COORDINATOR_NOT_AVAILABLE = 15


def group_on_first(kshims, names) -> str:
    """A group whose state partition the first instance owns (once both own partitions)."""
    a, b = kshims
    candidates = [names.group(f"c{i}") for i in range(24)]
    table = wait_for("both instances to own partitions", lambda: (
        (t := owners([a, b], candidates)) and set(t.values()) == {a.broker_port(1), b.broker_port(1)} and t))
    return next(g for g, port in table.items() if port == a.broker_port(1))


def producing(bootstrap: str, topic: str, stop: threading.Event) -> threading.Thread:
    def produce():
        i = 0
        while not stop.is_set():
            ck_produce(bootstrap, topic, [b"r%05d" % n for n in range(i, i + 10)])
            i += 10
            time.sleep(0.2)
    t = threading.Thread(target=produce, daemon=True)
    t.start()
    return t


def kill_and_check_the_survivor(a, b, group: str) -> float:
    """SIGKILL `a`; `b` stops naming it at once, long before a's membership expires (SESSION_MS)."""
    a.kill()
    killed = time.monotonic()
    wait_for("b to stop naming a", lambda: find(b.bootstrap, [group])[group][0] == COORDINATOR_NOT_AVAILABLE,
             timeout=2, every=0.05)
    assert time.monotonic() - killed < SESSION_MS / 1000
    return killed


def test_librdkafka_consumer_fails_over_without_a_restart(kafka, instances, new_topic, names):
    from confluent_kafka import Consumer, KafkaException
    topic = new_topic(partitions=2)
    a, b = instances("a"), instances("b")
    group = group_on_first((a, b), names)
    stop = threading.Event()
    commits: list[float] = []

    def consume():
        c = Consumer({"bootstrap.servers": f"{a.bootstrap},{b.bootstrap}", "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500})
        c.subscribe([topic])
        try:
            while not stop.is_set():
                if [m for m in c.consume(num_messages=50, timeout=0.3) if not m.error()]:
                    try:
                        c.commit(asynchronous=False)
                        commits.append(time.monotonic())
                    except KafkaException:
                        pass
        finally:
            c.close()
    threads = [producing(kafka.bootstrap, topic, stop), threading.Thread(target=consume, daemon=True)]
    threads[1].start()
    try:
        wait_for("commits through a", lambda: len(commits) >= 5)
        killed = kill_and_check_the_survivor(a, b, group)
        wait_for("the same consumer to commit through b", lambda: any(t > killed for t in commits), timeout=60)
        assert find(b.bootstrap, [group])[group] == (0, b.broker_port(1))
        print(f"librdkafka: first commit {min(t for t in commits if t > killed) - killed:.1f} s after the kill")
    finally:
        stop.set()
        for t in threads:
            t.join(30)


def test_java_consumer_fails_over_without_a_restart(kafka, kafka_install, instances, new_topic, names, request):
    topic = new_topic(partitions=2)
    a, b = instances("a"), instances("b")
    group = group_on_first((a, b), names)
    stop = threading.Event()
    producer = producing(kafka.bootstrap, topic, stop)
    tools = JavaTools(kafka_install, f"{a.bootstrap},{b.bootstrap}", RUN_DIR / "java" / request.node.name)
    consumer = tools.verifiable_consumer(topic, group, session_timeout_ms=SESSION_MS)

    def commits_ok(evs) -> int:
        return sum(1 for e in evs if e.get("name") == "offsets_committed" and e.get("success"))
    try:
        consumer.wait_for(lambda evs: commits_ok(evs) >= 5, 90, "5 commits through a")
        before = commits_ok(consumer.events)
        killed = kill_and_check_the_survivor(a, b, group)
        consumer.wait_for(lambda evs: commits_ok(evs) > before, 60, "a commit through b after the kill")
        again = time.monotonic() - killed
        assert consumer.proc.poll() is None                  # the same process, never restarted
        assert find(b.bootstrap, [group])[group] == (0, b.broker_port(1))
        print(f"java: first commit {again:.1f} s after the kill")
    finally:
        stop.set()
        tools.stop_all()
        producer.join(30)
