"""kafka-consumer-groups pointed at kshim shows kshim's groups as the real broker shows its own:
--list, --describe (offsets), --describe --members --verbose, --describe --state, --delete."""

from __future__ import annotations

import re

from shim.compat.javaclient import JavaTools
from shim.compat.pymembers import create_topic


def _normalise(text: str, group: str, topic: str) -> list[list[str]]:
    """Rows of a kafka-consumer-groups table with the volatile columns blanked (ids, hosts, ports)."""
    rows = []
    for line in text.splitlines():
        cols = line.split()
        if not cols or cols[0] in ("Consumer",):
            continue
        cols = [re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", c) for c in cols]
        cols = [re.sub(r"^/?127\.0\.0\.1(:\d+)?$", "<host>", c) for c in cols]
        cols = [re.sub(r"\(\d+\)$", "(<id>)", c) for c in cols]
        cols = [c.replace(group, "<group>").replace(topic, "<topic>") for c in cols]
        if re.fullmatch(r"\[\d{4}-\d\d-\d\d", cols[0]):   # a log line's timestamp (date, time)
            cols[:2] = ["<time>"]
        rows.append(cols)
    return rows[:1] + sorted(rows[1:])   # member order is a map's order on the broker


def groups_cli_session(java: JavaTools, names) -> dict:
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=2)
    members = [java.verifiable_consumer(topic, group, instance_id=f"{group}-{i}", session_timeout_ms=10000,
                                        name=f"cli-{i}") for i in range(2)]
    import time
    deadline = time.monotonic() + 60
    while not all(len(m.assigned()) == 1 for m in members):
        assert time.monotonic() < deadline, "the two members never shared the two partitions"
        time.sleep(0.2)
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": java.bootstrap})
    for i in range(100):
        p.produce(topic, b"v%d" % i, partition=i % 2)   # both partitions get records (and commits)
    assert p.flush(30) == 0
    for m in members:
        m.wait_for(lambda evs: any(e.get("name") == "offsets_committed" for e in evs), 60, "a commit")
    facts = {
        "listed": group in java.run("kafka-consumer-groups", ["--list"]).stdout.split(),
        "members": _normalise(java.run("kafka-consumer-groups", ["--describe", "--group", group, "--members",
                                                                 "--verbose"]).stdout, group, topic),
        "state": _normalise(java.run("kafka-consumer-groups", ["--describe", "--group", group, "--state"]).stdout,
                            group, topic),
    }
    for m in members:
        m.stop()
    offsets = java.run("kafka-consumer-groups", ["--describe", "--group", group, "--offsets"]).stdout
    facts["offsets"] = sorted(r for r in _normalise(offsets, group, topic) if r[0] == group or r[0] == "GROUP")
    def delete() -> list[str]:
        out = java.run("kafka-consumer-groups", ["--delete", "--group", group], check=False)
        return [line.replace(group, "<group>") for line in (out.stdout + out.stderr).splitlines()
                if "Deletion" in line or "Group" in line or "rror" in line]
    facts["delete_with_static_members"] = delete()   # static members stay until their session expires
    time.sleep(11)
    facts["delete"] = delete()
    facts["listed_after_delete"] = group in java.run("kafka-consumer-groups", ["--list"]).stdout.split()
    return facts


def test_consumer_groups_tool_sees_kshim_groups_like_the_brokers(kafka, kshim, kafka_install, names, tmp_path):
    facts = {}
    for where, bootstrap in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
        tools = JavaTools(kafka_install, bootstrap, tmp_path / where)
        try:
            facts[where] = groups_cli_session(tools, names)
        finally:
            tools.stop_all()
    b, k = facts["broker"], facts["kshim"]
    # group and topic names differ per run: compare shapes with names blanked
    def blank(rows):
        return [[c if not c.startswith(("g-", "t-")) else "<name>" for c in r] for r in rows]
    assert k["listed"] and b["listed"]
    assert blank(k["members"]) == blank(b["members"])
    assert blank(k["state"]) == blank(b["state"])
    assert blank(k["offsets"]) == blank(b["offsets"])
    assert k["delete_with_static_members"] == b["delete_with_static_members"]
    assert "GroupNotEmptyException" in " ".join(k["delete_with_static_members"])
    assert k["delete"] == b["delete"] and "successful" in " ".join(k["delete"])
    assert not k["listed_after_delete"] and not b["listed_after_delete"]
