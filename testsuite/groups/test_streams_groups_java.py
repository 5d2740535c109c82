"""KIP-1071 streams groups with a real Kafka Streams 4.3.1 application (testsuite/java/StreamsApp.java,
group.protocol=streams, at_least_once: upper-cases values, keeps keys; stateless, and stateful through
a key-value store whose changelog topic the streams group's coordinator creates), directly against the broker and
through kshim (which passes the streams-group APIs through to the broker), outcomes compared.

Three instances run; each in turn is stopped (KafkaStreams.close) and restarted while a producer keeps
writing the input. Observed: the output keeps growing across every step, and once the producer stops
the output holds every input record transformed (as a set: at_least_once may repeat some). Then
kafka-streams-groups.sh (StreamsGroupCommand) --describe (offsets, --state, --members) of the running
group, then --delete once every instance is closed. Needs Kafka Streams' jars (scripts/setup resolves
scripts/kafka/streams-pom.xml)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from shim.compat.pymembers import create_topic
from shim.compat.pymembers import wait_until as _wait
from testsuite.harness.javaapps import compile_app, require_streams_libs, start_app
from shim.compat.javaclient import JavaClient, JavaTools

PARTITIONS = 6
INSTANCES = 3


@pytest.fixture(scope="module")
def streams_classpath(tmp_path_factory) -> list[str]:
    libs = require_streams_libs()
    classes = compile_app("StreamsApp.java", tmp_path_factory.mktemp("streams-app"), [libs])
    return [str(classes), f"{libs}/*"]


class _Producer(threading.Thread):
    """Writes k<i> -> v<i> to the input, about 100 records a second, until stopped."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.p, self.topic, self.sent, self.error = Producer({"bootstrap.servers": bootstrap}), topic, 0, None
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                for _ in range(10):
                    self.p.produce(self.topic, key=b"k%d" % self.sent, value=b"v%d" % self.sent)
                    self.sent += 1
                self.p.poll(0)
                time.sleep(0.1)
            assert self.p.flush(30) == 0
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e


def _end_offsets(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-end-offsets", "enable.auto.commit": False})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS))
    finally:
        c.close()


def _read_output(bootstrap: str, topic: str, want: set[tuple[str, str]], timeout: float) -> set[tuple[str, str]]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-reader", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: set[tuple[str, str]] = set()
    deadline = time.monotonic() + timeout
    try:
        while not want <= seen and time.monotonic() < deadline:
            for m in c.consume(500, 1.0):
                if not m.error():
                    seen.add((m.key().decode(), m.value().decode()))
    finally:
        c.close()
    return seen


def _running(app: JavaClient) -> bool:
    if app.proc.poll() is not None:
        raise AssertionError(f"{app.name} exited ({app.proc.returncode}):\n{app.stderr_tail(10)}")
    states = [e["to"] for e in app.named("state")]
    return bool(states) and states[-1] == "RUNNING"


def _stop(app: JavaClient) -> None:
    """SIGTERM: the shutdown hook closes KafkaStreams (the JVM then exits 143, as on any SIGTERM)."""
    app.stop()
    assert app.named("closed"), f"{app.name} did not close cleanly:\n{app.stderr_tail(10)}"


def _table(text: str, app_id: str, topic: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        line = line.replace(app_id, "<app>").replace(topic, "<topic>")
        line = re.sub(r"127\.0\.0\.1:\d+\s+\(\d+\)", "<coordinator>", line)
        if line.split():
            rows.append(line.split())
    return rows[:1] + sorted(rows[1:])


def streams_session(java: JavaTools, names, classpath: list[str], tmp: Path, tag: str, mode: str) -> dict:
    app_id, source, sink = names.group("app"), names.topic("in"), names.topic("out")
    create_topic(java.bootstrap, source, partitions=PARTITIONS)
    create_topic(java.bootstrap, sink, partitions=PARTITIONS)

    def start(i: int, gen: int) -> JavaClient:
        return start_app(java, "StreamsApp", [java.bootstrap, app_id, source, sink, str(tmp / f"state-{i}"), mode],
                         f"{tag}-{mode}-{i}-{gen}", classpath)

    apps = [start(i, 0) for i in range(INSTANCES)]
    _wait(lambda: all(_running(a) for a in apps), 120, "three RUNNING instances")
    producer = _Producer(java.bootstrap, source)
    producer.start()
    growth = []
    try:
        for i in range(INSTANCES):                       # the rolling bounce
            before = _end_offsets(java.bootstrap, sink)
            _stop(apps[i])
            apps[i] = start(i, 1)
            _wait(lambda: all(_running(a) for a in apps), 120, f"all RUNNING after restarting instance {i}")
            _wait(lambda: _end_offsets(java.bootstrap, sink) > before, 60, "output growing")
            growth.append(True)
        _wait(lambda: _end_offsets(java.bootstrap, sink) > 0, 10, "output")
    finally:
        producer.halt.set()
        producer.join(60)
    assert producer.error is None, producer.error
    want = {(f"k{i}", f"V{i}") for i in range(producer.sent)}
    out = _read_output(java.bootstrap, sink, want, 120)
    facts = {
        "grew_at_every_step": growth == [True] * INSTANCES,
        "missing": len(want - out),
        "unexpected": len(out - want),
        "all_transformed": want == out,
        "produced_enough": producer.sent > 100,
    }
    # the group settles (tasks move for a while after every instance is RUNNING): poll the tool until
    # it shows the settled group, or 90 s; the facts are the last observation either way
    deadline = time.monotonic() + 90
    while True:
        described = {
            "describe": _table(java.run("kafka-streams-groups", ["--describe", "--group", app_id]).stdout,
                               app_id, source),
            "state": _table(java.run("kafka-streams-groups", ["--describe", "--group", app_id, "--state"]).stdout,
                            app_id, source),
            "active_tasks_per_member": sorted(
                len(re.findall(r"\d+", m.group(1))) for m in re.finditer(
                    r"ACTIVE: 0:\[([\d,]*)\]",
                    java.run("kafka-streams-groups", ["--describe", "--group", app_id, "--members"]).stdout)),
        }
        if all(described[k] == EXPECTED[k] for k in described) or time.monotonic() > deadline:
            break
        time.sleep(1)
    facts.update(described)
    facts["listed"] = app_id in java.run("kafka-streams-groups", ["--list"]).stdout.split()
    for a in apps:
        _stop(a)
    # DeleteGroups for the now empty streams group (its internal topics stay: no --delete-all-internal-topics)
    out = java.run("kafka-streams-groups", ["--delete", "--group", app_id], check=False)
    facts["delete"] = [line.replace(app_id, "<app>") for line in (out.stdout + out.stderr).splitlines()
                       if "eletion" in line or "deleted" in line or "rror" in line]
    facts["listed_after_delete"] = app_id in java.run("kafka-streams-groups", ["--list"]).stdout.split()
    return facts


_FACTS: dict[tuple[str, str], dict] = {}


def _facts(where: str, mode: str, request, kafka, kafka_install, names, classpath, tmp_path) -> dict:
    if (where, mode) not in _FACTS:
        bootstrap = kafka.bootstrap if where == "broker" else request.getfixturevalue("kshim").bootstrap
        tools = JavaTools(kafka_install, bootstrap, tmp_path / where)
        try:
            _FACTS[where, mode] = streams_session(tools, names, classpath, tmp_path / where, where, mode)
        finally:
            tools.stop_all()
    return _FACTS[where, mode]


EXPECTED = {
    "grew_at_every_step": True, "missing": 0, "unexpected": 0, "all_transformed": True, "produced_enough": True,
    "describe": [["GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"]] + [["<app>", "<topic>", str(p), "0"]
                                                                  for p in range(PARTITIONS)],
    # kafka-streams-groups --describe --state: an ASSIGNOR column from Kafka 4.4
    "state": [["GROUP", "COORDINATOR", "(ID)", "ASSIGNOR", "STATE", "#MEMBERS"],
              ["<app>", "<coordinator>", "sticky", "Stable", "3"]],
    "active_tasks_per_member": [2, 2, 2],
    "listed": True,
    "delete": ["Deletion of requested streams groups ('<app>') was successful."],
    "listed_after_delete": False,
}


MODES = ["stateless", "stateful"]   # stateful: a RocksDB store and its changelog (an internal topic)


@pytest.mark.parametrize("mode", MODES)
def test_streams_group_rolling_bounce_direct(mode, request, kafka, kafka_install, names, streams_classpath,
                                             tmp_path):
    assert _facts("broker", mode, request, kafka, kafka_install, names, streams_classpath, tmp_path) == EXPECTED


@pytest.mark.parametrize("mode", MODES)
def test_streams_group_rolling_bounce_through_kshim_as_direct(mode, request, kafka, kafka_install, names,
                                                              streams_classpath, tmp_path):
    broker = _facts("broker", mode, request, kafka, kafka_install, names, streams_classpath, tmp_path)
    assert _facts("kshim", mode, request, kafka, kafka_install, names, streams_classpath, tmp_path) == broker
