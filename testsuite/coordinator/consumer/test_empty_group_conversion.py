"""A classic JoinGroup with a member id addressed to an empty consumer group
(GroupMetadataManager.classicGroupJoinToClassicGroup, maybeDeleteEmptyConsumerGroup): the empty consumer
group is removed for writes (tombstones written, the member id answered UNKNOWN_MEMBER_ID, the next
ConsumerGroupHeartbeat starts a new group) while reads at the committed offset still see it. The cases
citing a replay were found by the wire differential tester against a Kafka 4.3.1 broker; the replays
are under testsuite/compat/wire_replays/."""

from __future__ import annotations



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
