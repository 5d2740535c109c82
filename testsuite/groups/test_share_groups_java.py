"""KIP-932 share groups with real clients, directly against the broker and through kshim (which
passes the share-group APIs through to the broker): the same scenario on each, the outcomes compared.

- testsuite/java/ShareConsumerApp.java (KafkaShareConsumer 4.3.1, explicit acknowledgement) consumes
  50 records, RELEASEs three of them on first delivery and ACCEPTs the rest: the released records are
  redelivered (delivery count 2), every record is accepted once.
- kafka-share-groups.sh (ShareGroupCommand): --list, --describe (offsets, --state, --members),
  --reset-offsets --to-earliest --execute on the empty group (a second run then gets all 50 again with
  delivery count 1), --delete, and --describe of the deleted group.
- kafka-configs.sh --entity-type groups (share.auto.offset.reset=earliest), then
  kafka-console-share-consumer.sh (ConsoleShareConsumer) reading all 50 in another share group.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from testsuite.harness.javaapps import compile_app, start_app
from shim.compat.javaclient import JavaTools
from shim.compat.pymembers import create_topic

RECORDS = 50
RELEASE = ["0:3", "1:5", "0:20"]        # partition:offset, released the first time they are delivered


@pytest.fixture(scope="module")
def share_app(tmp_path_factory) -> Path:
    return compile_app("ShareConsumerApp.java", tmp_path_factory.mktemp("share-app"))


def _produce(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        p.produce(topic, b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0


def run_share_consumer(java: JavaTools, classdir: Path, group: str, topic: str, release: list[str],
                       name: str, while_member=None) -> dict:
    """One ShareConsumerApp run; with `while_member`, that is called after the summary while the app
    is still a member of the group (it holds until SIGTERM)."""
    app = start_app(java, "ShareConsumerApp", [java.bootstrap, group, topic, str(RECORDS),
                                               ",".join(release) or "-", "90000",
                                               *(["hold"] if while_member else [])], name, [str(classdir)])
    summary = app.wait_event("summary", timeout=120)[0]
    if while_member:
        while_member()
        app.stop()
        assert app.named("closed"), app.stderr_tail()
    else:
        assert app.proc.wait(30) == 0, app.stderr_tail()
    records = app.named("record")
    return {
        "delivered": summary["delivered"],
        "accepted": summary["accepted"],
        "released": sorted(f'{r["partition"]}:{r["offset"]}' for r in records if r["ack"] == "RELEASE"),
        "redelivered": sorted((r["partition"], r["offset"], r["deliveryCount"]) for r in summary["redelivered"]),
        "values_accepted": sorted({r["value"] for r in records if r["ack"] == "ACCEPT"}),
    }


def _table(text: str, group: str, topic: str) -> list[list[str]]:
    """The rows of a kafka-share-groups table, names and the coordinator's address blanked."""
    rows = []
    for line in text.splitlines():
        line = line.replace(group, "<group>").replace(topic, "<topic>")
        line = re.sub(r"127\.0\.0\.1:\d+\s+\(\d+\)", "<coordinator>", line)
        cols = line.split()
        if cols and not line.startswith(("\tat ", "java.")):
            rows.append(cols)
    # --reset-offsets prints a HashMap of TopicPartition (its order follows the topic name's hash)
    return rows[:1] + sorted(rows[1:])


def share_session(java: JavaTools, names, classdir: Path, tag: str) -> dict:
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=2)
    _produce(java.bootstrap, topic)
    facts: dict = {}

    def tool(*args: str) -> list[list[str]]:
        out = java.run("kafka-share-groups", list(args), check=False)
        return _table(out.stdout + out.stderr, group, topic)

    def with_member() -> None:
        facts["state_with_member"] = tool("--describe", "--group", group, "--state")
        members = tool("--describe", "--group", group, "--members")
        # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT: ids and hosts vary
        facts["members_with_member"] = [[r[0], r[-2], r[-1]] for r in members]

    facts["first_run"] = run_share_consumer(java, classdir, group, topic, RELEASE, f"{tag}-share-1", with_member)

    facts["listed"] = group in java.run("kafka-share-groups", ["--list"]).stdout.split()
    # the start offset of a partition with released-then-accepted records is the share-partition
    # leader's to advance: compare the lag only
    facts["describe_lag"] = [[r[0], r[1], r[2], r[-1]] for r in tool("--describe", "--group", group)]
    facts["state"] = tool("--describe", "--group", group, "--state")
    facts["members"] = tool("--describe", "--group", group, "--members")
    facts["reset"] = tool("--reset-offsets", "--to-earliest", "--execute", "--group", group, "--topic", topic)
    facts["describe_after_reset"] = tool("--describe", "--group", group)
    facts["second_run"] = run_share_consumer(java, classdir, group, topic, [], f"{tag}-share-2")
    facts["delete"] = tool("--delete", "--group", group)
    facts["listed_after_delete"] = group in java.run("kafka-share-groups", ["--list"]).stdout.split()
    facts["describe_deleted"] = [r for r in tool("--describe", "--group", group) if r[0].startswith("Error")]
    # kafka-configs on a GROUP resource (IncrementalAlterConfigs), then kafka-console-share-consumer
    # (ConsoleShareConsumer, implicit acknowledgement) reads every record in a second share group
    console_group = f"{group}-console"
    java.run("kafka-configs", ["--entity-type", "groups", "--entity-name", console_group, "--alter",
                               "--add-config", "share.auto.offset.reset=earliest"])
    out = java.run("kafka-console-share-consumer", ["--topic", topic, "--group", console_group,
                                                    "--max-messages", str(RECORDS), "--timeout-ms", "30000"],
                   timeout=90, check=False)
    facts["console_values"] = sorted(out.stdout.split())
    return facts


EXPECTED_FIRST_RUN = {
    "delivered": RECORDS + len(RELEASE),
    "accepted": RECORDS,
    "released": sorted(RELEASE),
    "redelivered": [(0, 3, 2), (0, 20, 2), (1, 5, 2)],
    "values_accepted": sorted(f"v{i}" for i in range(RECORDS)),
}

_FACTS: dict[str, dict] = {}


def _facts(where: str, request, kafka, kafka_install, names, share_app, tmp_path) -> dict:
    if where not in _FACTS:
        bootstrap = kafka.bootstrap if where == "broker" else request.getfixturevalue("kshim").bootstrap
        tools = JavaTools(kafka_install, bootstrap, tmp_path / where)
        try:
            _FACTS[where] = share_session(tools, names, share_app, where)
        finally:
            tools.stop_all()
    return _FACTS[where]


def test_share_groups_direct(request, kafka, kafka_install, names, share_app, tmp_path):
    f = _facts("broker", request, kafka, kafka_install, names, share_app, tmp_path)
    assert f["first_run"] == EXPECTED_FIRST_RUN
    assert f["second_run"] == {**EXPECTED_FIRST_RUN, "delivered": RECORDS, "released": [], "redelivered": []}
    assert f["listed"] and not f["listed_after_delete"]
    assert f["describe_lag"] == [["GROUP", "TOPIC", "PARTITION", "LAG"], ["<group>", "<topic>", "0", "0"],
                                 ["<group>", "<topic>", "1", "0"]]
    assert ["<group>", "<coordinator>", "Empty", "0"] in f["state"]
    assert f["reset"][1:] == [["<group>", "<topic>", "0", "0"], ["<group>", "<topic>", "1", "0"]]
    assert ["<group>", "<coordinator>", "Stable", "1"] in f["state_with_member"]
    assert f["members_with_member"] == [["GROUP", "#PARTITIONS", "ASSIGNMENT"], ["<group>", "2", "<topic>:0,1"]]
    assert f["describe_after_reset"][1:] == [["<group>", "<topic>", "0", "0", "25"],
                                             ["<group>", "<topic>", "1", "0", "25"]]
    assert any("successful" in " ".join(r) for r in f["delete"])
    assert f["describe_deleted"] and "GroupIdNotFoundException" in " ".join(f["describe_deleted"][0])
    assert f["console_values"] == sorted(f"v{i}" for i in range(RECORDS))


def test_share_groups_through_kshim_as_direct(request, kafka, kafka_install, names, share_app, tmp_path):
    broker = _facts("broker", request, kafka, kafka_install, names, share_app, tmp_path)
    kshim = _facts("kshim", request, kafka, kafka_install, names, share_app, tmp_path)
    assert kshim["first_run"] == EXPECTED_FIRST_RUN
    assert kshim == broker
