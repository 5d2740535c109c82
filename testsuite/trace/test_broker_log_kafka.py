"""A real Kafka broker's own log turned into trace events (shim/trace/capture/broker_log.py): a
classic group (a second member joins, then one leaves) and a KIP-848 consumer group (the same with
group.protocol=consumer), run with confluent-kafka against the single-node Kafka of the test run;
then the broker's log (LocalKafka writes `<workdir>/logs/node-1.log` with Kafka's own layout
`[%d] %p %m (%c)%n`, root level INFO) is parsed and the coordinator's events of those groups must
appear with the right generations / group epochs, in order."""

from __future__ import annotations

import time

import pytest

from shim.trace.capture.broker_log import parse_broker_logs
from testsuite.trace.python_members import PARTITIONS, join_then_leave

pytestmark = pytest.mark.kafka



def _events(kafka, group: str, since: int, tmp_path, until, timeout: float = 15.0) -> list[dict]:
    """The group's records from what the broker logged after byte `since` (the session's broker log
    holds every other test's lines too), re-read until `until(records)` holds: the broker may log the
    last lines a little after the client returns."""
    log, part = kafka.node(1).log_file, tmp_path / "server.log"
    deadline = time.monotonic() + timeout
    while True:
        with open(log, "rb") as f:
            f.seek(since)
            part.write_bytes(f.read())
        records, stats = parse_broker_logs([part])
        mine = [r for r in records if r["group"] == group]
        if until(mine) or time.monotonic() > deadline:
            assert stats["lines_matched"] > 0 and stats["files"][0]["first_wall_ms"] is not None
            return mine
        time.sleep(0.5)


def _log_size(kafka) -> int:
    return kafka.node(1).log_file.stat().st_size


def test_classic_group_from_broker_log(kafka, names, new_topic, tmp_path):
    topic, group = new_topic(PARTITIONS), names.group()
    since = _log_size(kafka)
    join_then_leave(kafka.bootstrap, topic, group, consumer_protocol=False)
    recs = _events(kafka, group, since, tmp_path, until=lambda rs: sum(r["event"] == "generation" for r in rs) >= 4)
    kinds = [r["event"] for r in recs]
    gens = [(r["event"], r["generation"]) for r in recs if r["event"] in ("rebalance", "generation")]
    # a joins (gen 0 -> 1), b joins (1 -> 2), a leaves (2 -> 3); b's close empties the group (gen 4)
    assert gens[:6] == [("rebalance", 0), ("generation", 1), ("rebalance", 1), ("generation", 2),
                        ("rebalance", 2), ("generation", 3)], gens
    assert ("generation", 4) in gens[6:]
    assert kinds.count("member_left") == 2
    assert kinds.count("member_id_required") == 2 and kinds.count("member_joined") == 2
    rebalances = [r for r in recs if r["event"] == "rebalance"]
    assert rebalances[0]["body"]["reason"].startswith("Adding new member ")
    assert "LeaveGroup" in rebalances[2]["body"]["reason"]
    first_left = recs.index(next(r for r in recs if r["event"] == "member_left"))
    assert recs[first_left + 1]["event"] == "rebalance"        # a's leave starts the third round
    stable = [r for r in recs if r["event"] == "generation"]
    assert [r["body"]["members"] for r in stable][:4] == [1, 2, 1, 0]
    for r in recs:
        assert r["type"] == "event" and r["source"] == "broker_log"
        assert r["broker_log"]["node"] == 1 and r["broker_log"]["logger"].endswith("GroupMetadataManager")
    assert [r["wall_ms"] for r in recs] == sorted(r["wall_ms"] for r in recs)


def test_consumer_group_from_broker_log(kafka, names, new_topic, tmp_path):
    topic, group = new_topic(PARTITIONS), names.group()
    since = _log_size(kafka)
    join_then_leave(kafka.bootstrap, topic, group, consumer_protocol=True)
    recs = _events(kafka, group, since, tmp_path, until=lambda rs: sum(
        r["event"] == "group_epoch" and "removed" in (r["body"].get("reason") or "") for r in rs) >= 2)
    epochs = [r for r in recs if r["event"] == "group_epoch"]
    numbers = [r["body"]["epoch"] for r in epochs]
    assert numbers == list(range(2, 2 + len(numbers))), [r["broker_log"]["text"] for r in epochs]
    # a joins, b joins, a leaves, b leaves: four bumps a member line explains. The broker may bump the
    # epoch more, with no member line: a topic created just before the join reaching its metadata image
    # a moment later (seen in CI: 2 a joins, 3 metadata, 4 b joins, ...), the emptied group's hash
    a, b = (r["body"]["member"] for r in recs if r["event"] == "member_joined")
    reasons = [r["body"]["reason"] for r in epochs if r["body"].get("reason")]
    assert reasons[:4] == [f"member {a} subscription changed", f"member {b} subscription changed",
                           f"member {a} removed: left the consumer group",
                           f"member {b} removed: left the consumer group"], reasons
    assert [r["member"] for r in recs if r["event"] == "member_removed"] == [a, b]
    targets = [r["body"]["epoch"] for r in recs if r["event"] == "target_assignment"]
    assert targets[0] == 2 and targets == sorted(targets) and set(targets) <= set(numbers), targets
    order = [(r["event"], r["body"].get("epoch")) for r in recs if r["event"] in ("group_epoch", "target_assignment")]
    assert all(order.index(("group_epoch", e)) < order.index(("target_assignment", e)) for e in targets)
