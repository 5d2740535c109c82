"""Which server assignor a consumer group uses when members prefer different ones
(ConsumerGroup.computePreferredServerAssignor / preferredServerAssignor): the same scenarios were
run against a real Kafka 4.3.1 broker (testsuite/groups/test_assignor_static_vs_broker.py)."""

from __future__ import annotations

import pytest

from shim.coordinator.consumer.assignor_choice import described, for_target, java_string_hash, timeline_order
from testsuite.coordinator.consumer.harness import ConsumerHarness


def test_java_string_hash():
    assert java_string_hash("uniform") == -286926412       # "uniform".hashCode() in Java
    assert java_string_hash("range") == 108280125
    assert java_string_hash("") == 0


def test_timeline_hash_map_order():
    # "a" and "b" share a slot of a 2-slot TimelineHashMap: the newest is iterated first
    assert timeline_order(["a", "b"]) == ["b", "a"]
    assert timeline_order(["b", "a"]) == ["a", "b"]
    assert timeline_order(["range", "uniform"]) == ["uniform", "range"]


def test_describe_tie_goes_to_uniform():
    assert described({"range": 1, "uniform": 1}, "range") == "uniform"
    assert described({"range": 2, "uniform": 1}, "uniform") == "range"
    assert described({}, "range") == "range"


@pytest.mark.parametrize("trigger, chosen", [
    (("range", "range"), "range"),          # HashMap.compute puts the re-added name first in its bucket
    (("uniform", "uniform"), "uniform"),
    ((None, None), "uniform"),
    ((None, "uniform"), "uniform"),         # a new member brings a name: put first too
    ((None, "range"), "range"),
])
def test_target_tie_goes_to_the_triggering_member(trigger, chosen):
    assert for_target({"range": 1, "uniform": 1}, *trigger, "uniform") == chosen


@pytest.mark.parametrize("first, second, who, a_gets_both", [
    ("range", "uniform", "a", True),
    ("range", "uniform", "b", False),
    ("uniform", "range", "a", False),
    ("uniform", "range", "b", True),
])
@pytest.mark.parametrize("release", ["4.3", "4.4"])
def test_tie_between_range_and_uniform(first, second, who, a_gets_both, release):
    """a (assignor `first`) and b (`second`) subscribe to two 1-partition topics; the heartbeat after
    the assignment interval computes the target with the assignor of the member that sends it:
    range gives a both partitions 0, uniform one each. Describe reports uniform either way. From
    Kafka 4.4 that heartbeat also bumps the group epoch when its sender prefers range: the group's
    preferred assignor (uniform) differs from the one computed with it (KAFKA-20434)."""
    h = ConsumerHarness({"ta": 1, "tb": 1}, release=release)
    ra = h.cgh(member_id="a", topics=("ta", "tb"), assignor=first)
    rb = h.cgh(member_id="b", topics=("ta", "tb"), assignor=second)
    h.advance(1200)
    if who == "a":
        h.cgh(member_id="a", epoch=ra.member_epoch, topics=None, rebalance=-1)
    else:
        h.cgh(member_id="b", epoch=rb.member_epoch, topics=None, rebalance=-1)
    d = h.describe_cg("g").groups[0]
    trigger = first if who == "a" else second
    epoch = 4 if release == "4.4" and trigger == "range" else 3
    assert (d.assignor_name, d.group_epoch, d.assignment_epoch) == ("uniform", epoch, epoch)
    targets = {m.member_id: sorted(h.topics.topic(tp.topic_id).name for tp in m.target_assignment.topic_partitions)
               for m in d.members}
    assert targets == {"a": ["ta", "tb"], "b": []} if a_gets_both else sorted(map(len, targets.values())) == [1, 1]


@pytest.mark.parametrize("first, second, a_gets_both", [("range", "uniform", False), ("uniform", "range", True)])
def test_tie_decided_by_the_joining_member(first, second, a_gets_both):
    """b joins after the assignment interval: its join computes the target with b's assignor."""
    h = ConsumerHarness({"ta": 1, "tb": 1})
    h.cgh(member_id="a", topics=("ta", "tb"), assignor=first)
    h.advance(1200)
    h.cgh(member_id="b", topics=("ta", "tb"), assignor=second)
    d = h.describe_cg("g").groups[0]
    assert (d.assignor_name, d.group_epoch, d.assignment_epoch) == ("uniform", 3, 3)
    targets = {m.member_id: sorted(h.topics.topic(tp.topic_id).name for tp in m.target_assignment.topic_partitions)
               for m in d.members}
    assert targets == {"a": ["ta", "tb"], "b": []} if a_gets_both else sorted(map(len, targets.values())) == [1, 1]
