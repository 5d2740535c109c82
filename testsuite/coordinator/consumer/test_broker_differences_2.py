"""More KIP-848 heartbeats where kshim answered otherwise than the Kafka 4.3.1 broker (found by the wire
differential tester; each has a replay under testsuite/compat/wire_replays/)."""

from __future__ import annotations

import pytest

from shim.coordinator.consumer import codes as K
from testsuite.coordinator.consumer.harness import ConsumerHarness


@pytest.fixture
def h():
    return ConsumerHarness({"foo": 6, "bar": 3})


def test_subscription_shrink_makes_the_current_epoch_the_previous_one(h):
    """CurrentAssignmentBuilder.updateCurrentAssignment (a subscription that drops assigned topics while
    the target is not recomputed yet) goes through ConsumerGroupMember.Builder.updateMemberEpoch: the
    previous epoch becomes the current one, so a heartbeat with the epoch before is fenced
    (replay cg-epoch-after-subscription-shrink.json, seed 6150)."""
    h.cgh(member_id="a")
    h.advance(1000)
    r = h.cgh(member_id="a", epoch=2, topics=["foo", "bar"], rebalance=-1, owned=None)
    assert r.member_epoch == 3
    r = h.cgh(member_id="a", epoch=0, topics=["tx"], owned={})     # within the assignment interval
    assert (r.error_code, r.member_epoch, h.names(r.assignment)) == (0, 3, {})
    m = h.cg().members["a"]
    assert (m.member_epoch, m.previous_member_epoch) == (3, 3)
    r = h.cgh(member_id="a", epoch=2, topics=None, rebalance=-1, owned={})
    assert r.error_code == K.FENCED_MEMBER_EPOCH
    assert r.error_message.startswith("The consumer group member has a smaller member epoch (2)")


def test_a_regex_replacing_the_last_resolved_one_waits_for_the_next_heartbeat(h):
    """GroupMetadataManager.maybeUpdateRegularExpressions: a member switching from the group's only
    resolved regex to a new one within 10 s of its resolution gets no resolution from that heartbeat
    (the old regex's tombstone is replayed after it); its next heartbeat finds no resolved regex and
    starts one (replay cg-regex-switch-waits.json, seed 6092)."""
    h.cgh(member_id="a", topics=["foo"], regex="fo.*")
    h.advance(0)
    g = h.cg()
    assert g.regex_topics == {"fo.*": frozenset({"foo"})}
    h.advance(200)
    e = g.members["a"].member_epoch
    r = h.cgh(member_id="a", epoch=e, topics=[], regex="ba.*", rebalance=-1, owned=None)
    assert r.error_code == 0
    h.advance(0)
    assert g.regex_topics == {}
    ge = g.group_epoch
    h.advance(3_000)
    r = h.cgh(member_id="a", epoch=r.member_epoch, topics=None, rebalance=-1, owned=None)
    assert r.error_code == 0 and g.group_epoch == ge
    h.advance(0)
    assert g.regex_topics == {"ba.*": frozenset({"bar"})} and g.group_epoch == ge + 1


def test_join_with_a_member_id_removes_an_empty_consumer_group_for_writes_only(h):
    """GroupMetadataManager.classicGroupJoinToClassicGroup: maybeDeleteEmptyConsumerGroup removes the
    empty consumer group from the latest state, the member id finds no classic group (UNKNOWN_MEMBER_ID)
    and the result keeps no record (kshim writes the tombstones: its state is what its records say). Reads (at the committed offset) still see the group
    (ConsumerGroupDescribe: replay cg-survives-join-with-member-id, seed 6160); writes do not: an
    OffsetCommit v4 with a generation answers ILLEGAL_GENERATION and a ConsumerGroupHeartbeat starts a
    new group (replays empty-cg-gone-for-writes-*, seeds 499 and 1707)."""
    from shim.coordinator import errors as E
    r = h.cgh(member_id="a")
    h.cgh(member_id="a", epoch=-1, topics=None, rebalance=-1, owned=None)
    g = h.cg()
    assert not g.members and g.group_epoch == 3
    records = len(h.c.written)
    r = h.answered(h.join("g", "old-member", v=3))
    assert (r.error_code, r.member_id, r.generation_id) == (E.UNKNOWN_MEMBER_ID, "old-member", -1)
    assert h.cg() is None and h.group("g") is None
    # kshim writes the tombstones Kafka drops (its state stays what its records say)
    assert {type(r).__name__ for r in h.c.written[records:]} >= {"ConsumerGroupTombstone"}
    d = h.describe_cg("g").groups[0]
    assert (d.error_code, d.group_state, d.group_epoch) == (0, "Empty", g.group_epoch)
    assert [x.group_id for x in h.list_groups().groups] == ["g"]
    r = h.cgh(member_id="b")                  # a new group: its records reach the partition
    assert (r.error_code, r.member_epoch) == (0, h.cgh("fresh", member_id="c").member_epoch) == (0, 2)
    assert h.cg() is not g and h.cg().group_epoch == 2
    assert h.describe_cg("g").groups[0].members[0].member_id == "b"
