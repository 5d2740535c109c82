"""Kafka 3.9's Scala GroupCoordinator (CoordinatorConfig.scala_coordinator: a 3.9 upstream without the
consumer protocol), where its answers differ from the newer coordinator's. Each rule was found by the
differential tester against a 3.9.1 broker (scripts/wire-diff --kafka-version 3.9.1; the seeds are
named) and is read from core/src/main/scala/kafka/coordinator/group of Kafka 3.9. Each test also runs
the same steps as a 4.x coordinator, whose answer stays the newer one."""

from __future__ import annotations

import pytest

from shim.coordinator import errors as E
from shim.coordinator.scala_order import scala_commit_order
from testsuite.coordinator.harness import SESSION, Harness
from testsuite.coordinator.test_txn_offsets import txn_commit

TOPICS = {"t1": 3, "t2": 3, "t3": 3}


def harness(scala: bool) -> Harness:
    return Harness(TOPICS, release="3.9", consumer_protocol=False) if scala else Harness(TOPICS)


def answered_order(h: Harness, pairs: list[tuple[str, int]], v: int = 8) -> list[tuple[str, int]]:
    from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                OffsetCommitRequestTopic)
    topics: dict[str, list] = {}
    for t, p in pairs:
        topics.setdefault(t, []).append(OffsetCommitRequestPartition(partition_index=p, committed_offset=1,
                                                                     committed_leader_epoch=-1, committed_metadata=""))
    body = h.immediate(8, v, OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="",
                                                 retention_time_ms=-1, topics=[
                                                     OffsetCommitRequestTopic(name=t, partitions=ps)
                                                     for t, ps in topics.items()]))
    return [(t.name, p.partition_index) for t in body.topics for p in t.partitions]


def test_commit_answer_in_the_scala_maps_order_each_partition_once():
    """Seeds 0, 1, 3, 5...: GroupCoordinatorAdapter.commitOffsets answers from a Scala map."""
    pairs = [("t1", 0), ("t2", 2), ("t1", 1), ("t3", 0), ("t2", 0), ("t1", 2), ("t1", 0)]
    got = answered_order(harness(True), pairs)
    expected = scala_commit_order(pairs)
    by_topic: dict[str, list[int]] = {}
    for t, p in expected:
        by_topic.setdefault(t, []).append(p)
    assert got == [(t, p) for t, ps in by_topic.items() for p in ps]
    assert len(got) == 6 and got != pairs[:6]
    request = [(t, p) for topic in dict.fromkeys(t for t, _ in pairs) for t, p in pairs if t == topic]
    assert answered_order(harness(False), pairs) == request     # 4.x: the request's order, repeats kept


@pytest.mark.parametrize("scala, code", [(True, E.ILLEGAL_GENERATION), (False, E.GROUP_ID_NOT_FOUND)])
def test_commit_v9_with_a_generation_to_a_missing_group(scala, code):
    """Seeds 12, 51, 59: GroupCoordinator.handleCommitOffsets has no GROUP_ID_NOT_FOUND."""
    h = harness(scala)
    assert set(h.commit("g", {("t1", 0): 5}, generation=3, member_id="m", v=9).values()) == {code}


def test_txn_commit_adds_the_missing_group_then_validates_against_it():
    """Seeds 50, 100, 107: handleTxnCommitOffsets adds the group (Empty) before anything else, so a
    member id answers UNKNOWN_MEMBER_ID and the group is then seen by DescribeGroups and commits."""
    h = harness(True)
    assert set(txn_commit(h, "g", {("t1", 0): 5}, generation=2, member_id="m").values()) == {E.UNKNOWN_MEMBER_ID}
    assert h.describe("g", v=5).groups[0].group_state == "Empty"
    assert set(h.commit("g", {("t1", 0): 5}, generation=2, member_id="m", v=7).values()) == {E.UNKNOWN_MEMBER_ID}
    h4 = harness(False)
    assert set(txn_commit(h4, "g", {("t1", 0): 5}, generation=2, member_id="m").values()) == {E.ILLEGAL_GENERATION}
    assert h4.describe("g", v=5).groups[0].group_state == "Dead"


@pytest.mark.parametrize("scala, state", [(True, "Empty"), (False, "Dead")])
def test_a_txn_commit_refused_by_verification_still_adds_the_group(scala, state):
    """Seeds 8, 17, 50: the group is added before the transaction is verified (an answer 49)."""
    h = harness(scala)
    assert h.c.txn_commit_unverified("g", h.now).responses == []
    assert h.describe("g", v=5).groups[0].group_state == state


def test_offset_delete_ends_an_empty_group_left_without_offsets():
    """Seeds 41, 96, 166: handleDeleteOffsets -> cleanupGroupMetadata makes the group Dead."""
    for scala in (True, False):
        h = harness(scala)
        h.commit("g", {("t1", 0): 5, ("t1", 1): 6}, v=8)
        assert h.offset_delete("g", {"t1": [0]}) == (E.NONE, {("t1", 0): E.NONE})
        assert h.describe("g", v=5).groups[0].group_state == "Empty"
        assert h.offset_delete("g", {"t1": [1]}) == (E.NONE, {("t1", 1): E.NONE})
        assert h.describe("g", v=5).groups[0].group_state == ("Dead" if scala else "Empty")
        assert h.offset_delete("g", {"t1": [1]})[0] == (E.GROUP_ID_NOT_FOUND if scala else E.NONE)


def test_a_pending_member_leaving_starts_no_rebalance():
    """Seed 69: removePendingMemberAndUpdateGroup does not prepare a rebalance."""
    for scala in (True, False):
        h = harness(scala)
        (leader,), generation = h.stable_group("g", 1)
        pending = h.answered(h.join("g", v=4)).member_id          # MEMBER_ID_REQUIRED: a pending member
        assert h.leave("g", (pending, None)).members[0].error_code == E.NONE
        expected = E.NONE if scala else E.REBALANCE_IN_PROGRESS
        assert h.heartbeat("g", leader, generation).error_code == expected


def test_describe_outside_stable_shows_no_assignment():
    """Seed 103: GroupMetadata.summary gives members without metadata or assignment unless Stable."""
    for scala in (True, False):
        h = harness(scala)
        (leader,), generation = h.stable_group("g", 1)
        h.join("g", leader, session=SESSION)                      # a rejoin: PreparingRebalance
        (member,) = h.describe("g", v=5).groups[0].members
        assert member.member_assignment == (b"" if scala else b"A:" + leader.encode())


def test_txn_commit_answer_in_the_scala_maps_order():
    """GroupCoordinatorAdapter.commitTransactionalOffsets answers from a Scala map too."""
    offsets = {("t1", 0): 1, ("t2", 2): 1, ("t1", 1): 1, ("t3", 0): 1, ("t2", 0): 1, ("t1", 2): 1}
    answer = txn_commit(harness(True), "g", offsets)
    by_topic: dict[str, list] = {}
    for t, p in scala_commit_order(offsets):
        by_topic.setdefault(t, []).append(p)
    assert list(answer) == [(t, p) for t, ps in by_topic.items() for p in ps]
    assert set(answer.values()) == {E.NONE}


def test_delete_groups_answer_in_the_scala_maps_order():
    """handleDeleteGroups answers from a Scala mutable.Map of the group ids."""
    from shim.coordinator.scala_order import scala_string_order
    names = ["grp-b", "grp-a", "grp-c", "grp-e", "grp-d"]
    for scala in (True, False):
        h = harness(scala)
        for gid in names[:3]:
            h.commit(gid, {("t1", 0): 1}, v=8)
        answer = [r.group_id for r in h.delete(*names).results]
        assert answer == (scala_string_order(names) if scala else names)
    assert scala_string_order(names) != names
