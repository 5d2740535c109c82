"""KIP-848 consumer groups (group.protocol=consumer) with the Java client, through kshim and directly
against the real broker; the observed outcomes must agree (spec section D): Kafka's
VerifiableConsumer joining and leaving dynamically, a static member bouncing within its session
timeout, and a broker-side regex subscription (testsuite/java/RebalanceConsumer.java) that picks up a
topic created after the consumer started, and the rolling upgrade of a classic group to the consumer
protocol (KIP-848 online migration: classic members inside a consumer group until the last one is
replaced)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shim.compat.pymembers import create_topic
from shim.compat.pymembers import wait_until as _wait
from testsuite.harness.clients import ck_produce
from testsuite.harness.javaapps import compile_app, start_app
from shim.compat.javaclient import JavaClient, JavaTools
from testsuite.harness.sides import both_sides


def _owned_twice(members: list[JavaClient]) -> list:
    """Replay every member's assigned/revoked events in timestamp order (revocations first within
    one millisecond): the partitions that two members held at the same time."""
    timeline = []
    for i, m in enumerate(members):
        for e in list(m.events):
            if e.get("name") in ("partitions_assigned", "partitions_revoked"):
                timeline.append((e["timestamp"], e["name"] == "partitions_assigned", i, e["partitions"]))
    owner: dict[tuple[str, int], int] = {}
    twice = []
    for _, assigned, i, parts in sorted(timeline, key=lambda t: (t[0], t[1])):
        for p in parts:
            tp = (p["topic"], p["partition"])
            if assigned:
                if tp in owner and owner[tp] != i:
                    twice.append(tp)
                owner[tp] = i
            elif owner.get(tp) == i:
                del owner[tp]
    return twice


def _running(members: list[JavaClient]) -> bool:
    """True while every member runs; a member that exited (e.g. a fatal group error) fails at once."""
    for m in members:
        if m.proc.poll() is not None:
            raise AssertionError(f"{m.name} exited ({m.proc.returncode}):\n{m.stderr_tail(5)}")
    return True


def _sizes(members: list[JavaClient]) -> list[int]:
    return sorted(len(m.assigned()) for m in members)


def _covers(members: list[JavaClient], partitions: int) -> bool:
    owned = [m.assigned() for m in members]
    return sum(len(o) for o in owned) == partitions and len(set().union(*owned)) == partitions


def dynamic_join_leave(java: JavaTools, names, tag: str) -> dict:
    """Three dynamic members join one after the other on 6 partitions, then the middle one leaves
    (clean close). Observed: the assignment sizes after each step, and whether any partition was
    ever owned by two members at once."""
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=6)
    members, facts = [], {}
    for i in range(3):
        members.append(java.verifiable_consumer(topic, group, protocol="consumer", name=f"{tag}-dyn-{i}"))
        n = len(members)
        _wait(lambda: _covers(members, 6) and max(_sizes(members)) - min(_sizes(members)) == 0,
              90, f"{n} members balanced")
        facts[f"with_{n}"] = _sizes(members)
    gone = members.pop(1)
    gone.stop()
    _wait(lambda: _covers(members, 6) and _sizes(members) == [3, 3], 90, "2 members balanced after the leave")
    facts["after_leave"] = _sizes(members)
    facts["owned_twice"] = _owned_twice(members + [gone])
    facts["left_cleanly"] = len(gone.named("shutdown_complete")) == 1
    return facts


def static_bounce_consumer(java: JavaTools, names, tag: str) -> dict:
    """Three static members (group.instance.id) on 6 partitions; one stops (leave with epoch -2)
    and restarts within the session timeout. Observed: the others see no assignment change, the
    restarted member gets its old partitions back."""
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=6)
    members = []
    for i in range(3):
        members.append(java.verifiable_consumer(topic, group, protocol="consumer", instance_id=f"{group}-{i}",
                                                name=f"{tag}-static-{i}"))
        members[-1].wait_event("partitions_assigned", timeout=60)
    _wait(lambda: _covers(members, 6) and _sizes(members) == [2, 2, 2], 90, "a balanced static group")
    time.sleep(2)
    before = [m.assigned() for m in members]
    events_before = [len(m.named("partitions_assigned")) + len(m.named("partitions_revoked")) for m in members]
    members[1].stop()
    restarted = java.verifiable_consumer(topic, group, protocol="consumer", instance_id=f"{group}-1",
                                         name=f"{tag}-static-1-again")
    _wait(lambda: len(restarted.assigned()) > 0, 60, "the restarted member's assignment")
    time.sleep(6)       # several heartbeat intervals: a reassignment would have reached the others
    others = (0, 2)
    return {
        "others_saw_change": any(len(members[i].named("partitions_assigned"))
                                 + len(members[i].named("partitions_revoked")) != events_before[i] for i in others),
        "others_kept_partitions": all(members[i].assigned() == before[i] for i in others),
        "restarted_got_old_partitions": restarted.assigned() == before[1],
    }


def test_verifiable_consumer_dynamic_join_leave(both, names):
    facts = both_sides(lambda where: dynamic_join_leave(both[where], names, where))
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"] == {"with_1": [6], "with_2": [3, 3], "with_3": [2, 2, 2], "after_leave": [3, 3],
                              "owned_twice": [], "left_cleanly": True}


def test_verifiable_consumer_static_bounce(both, names):
    facts = both_sides(lambda where: static_bounce_consumer(both[where], names, where))
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"] == {"others_saw_change": False, "others_kept_partitions": True,
                              "restarted_got_old_partitions": True}


# --- regex subscription ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pattern_classes(tmp_path_factory) -> Path:
    return compile_app("RebalanceConsumer.java", tmp_path_factory.mktemp("rebalance-consumer"))


def _pattern_consumer(java: JavaTools, classdir: Path, group: str, regex: str, name: str) -> JavaClient:
    return start_app(java, "RebalanceConsumer", [java.bootstrap, group, f"pattern:{regex}", "group.protocol=consumer"],
                     name, [str(classdir)])


def regex_picks_up_new_topic(java: JavaTools, names, classdir: Path, tag: str) -> dict:
    """A member subscribed to `<prefix>-.*` owns the matching topic, and a matching topic created
    later is added to its assignment and consumed; a non-matching topic is not."""
    prefix, group = names.topic("re"), names.group()
    first, later, other = f"{prefix}-first", f"{prefix}-later", f"{prefix}x-other"
    create_topic(java.bootstrap, first, partitions=2)
    ck_produce(java.bootstrap, first, [f"f{i}".encode() for i in range(10)])
    c = _pattern_consumer(java, classdir, group, f"{prefix}-.*", f"{tag}-pattern")
    _wait(lambda: len(c.named("record")) >= 10, 90, "records of the first topic")
    assigned_first = sorted((t[len(prefix):], p) for t, p in c.assigned())
    create_topic(java.bootstrap, other, partitions=1)
    create_topic(java.bootstrap, later, partitions=3)
    ck_produce(java.bootstrap, later, [f"l{i}".encode() for i in range(10)])
    ck_produce(java.bootstrap, other, [b"o0"])
    _wait(lambda: len(c.named("record")) >= 20, 120, "records of the topic created later")
    time.sleep(2)
    records = c.named("record")
    assigned_after = sorted((t[len(prefix):], p) for t, p in c.assigned())
    c.stop()
    return {
        "assigned_first": assigned_first,
        "assigned_after": assigned_after,
        "values": sorted(r["value"] for r in records),
        "shutdown_clean": len(c.named("shutdown_complete")) == 1,
    }


def test_regex_subscription_picks_up_new_topic(both, names, pattern_classes):
    facts = both_sides(lambda where: regex_picks_up_new_topic(both[where], names, pattern_classes, where))
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"] == {
        "assigned_first": [("-first", 0), ("-first", 1)],
        "assigned_after": [("-first", 0), ("-first", 1), ("-later", 0), ("-later", 1), ("-later", 2)],
        "values": sorted([f"f{i}" for i in range(10)] + [f"l{i}" for i in range(10)]),
        "shutdown_clean": True,
    }


# --- online migration (KIP-848) ------------------------------------------------------------------
class KshimDiffers(Exception):
    """kshim's observations differ from the broker's (raised only for the kshim run)."""


def _consumed_ranges(members: list[JavaClient]) -> dict[int, list[tuple[int, int]]]:
    ranges: dict[int, list[tuple[int, int]]] = {}
    for m in members:
        for e in m.named("records_consumed"):
            for p in e.get("partitions", []):
                ranges.setdefault(p["partition"], []).append((p["minOffset"], p["maxOffset"]))
    return ranges


def _duplicates_and_gaps(ranges: dict[int, list[tuple[int, int]]], ends: dict[int, int]) -> tuple[int, int]:
    dup = gap = 0
    for part, end in ends.items():
        seen = [0] * end
        for lo, hi in ranges.get(part, []):
            for off in range(lo, hi + 1):
                if off < end:
                    seen[off] += 1
        dup += sum(n - 1 for n in seen if n > 1)
        gap += sum(1 for n in seen if n == 0)
    return dup, gap


def rolling_upgrade(java: JavaTools, names, tag: str, records: int = 3000) -> dict:
    """Three classic VerifiableConsumers (group.protocol=classic) share 6 partitions while a
    producer writes; one at a time, a member is stopped and replaced by a group.protocol=consumer
    one. Observed: the assignment after each step, and whether any record was consumed twice or
    never (from the records_consumed events, against the partitions' end offsets)."""
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=6)
    members = []
    for i in range(3):
        members.append(java.verifiable_consumer(topic, group, protocol="classic", name=f"{tag}-classic-{i}"))
        members[-1].wait_event("partitions_assigned", timeout=60)
    _wait(lambda: _covers(members, 6) and _sizes(members) == [2, 2, 2], 90, "a balanced classic group")
    producer = java.verifiable_producer(topic, records, throughput=100, name=f"{tag}-producer")
    facts, everyone = {}, list(members)
    for i in range(3):
        time.sleep(3)
        members[i].stop()
        members[i] = java.verifiable_consumer(topic, group, protocol="consumer", name=f"{tag}-consumer-{i}")
        everyone.append(members[i])
        _wait(lambda: _running(members) and _covers(members, 6) and _sizes(members) == [2, 2, 2], 120,
              f"balanced after step {i}")
        facts[f"step_{i}"] = _sizes(members)
    producer.wait_event("shutdown_complete", timeout=120)
    acked = producer.named("producer_send_success")
    ends: dict[int, int] = {}
    for e in acked:
        ends[e["partition"]] = max(ends.get(e["partition"], 0), e["offset"] + 1)
    _wait(lambda: _duplicates_and_gaps(_consumed_ranges(everyone), ends)[1] == 0, 90, "every record consumed")
    dup, gap = _duplicates_and_gaps(_consumed_ranges(everyone), ends)
    facts.update(produced=len(acked), duplicates=dup, skipped=gap)
    return facts


def test_rolling_upgrade_classic_to_consumer(both, names):
    def side(where: str):
        try:
            return rolling_upgrade(both[where], names, where)
        except AssertionError as e:
            return e
    facts = both_sides(side)            # the two sides at once: most of each is the producer's 30 s
    broker, kshim = facts["broker"], facts["kshim"]
    if isinstance(broker, AssertionError):
        raise broker
    assert broker == {"step_0": [2, 2, 2], "step_1": [2, 2, 2], "step_2": [2, 2, 2],
                      "produced": 3000, "duplicates": 0, "skipped": 0}
    if isinstance(kshim, AssertionError):
        raise KshimDiffers(str(kshim)) from kshim
    if kshim != broker:
        raise KshimDiffers(f"kshim {kshim} != broker {broker}")
