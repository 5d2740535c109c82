"""Offset retention of KIP-848 consumer groups on the coordinator clock (retention.py: Kafka 4.3's
GroupCoordinatorShard.cleanupGroupMetadata, OffsetMetadataManager.cleanupExpiredOffsets,
ConsumerGroup.offsetExpirationCondition = commit time, ModernGroup.isSubscribedToTopic,
GroupMetadataManager.maybeDeleteGroup). Every test ends with the replay check: the records written
rebuild the same state."""

from __future__ import annotations

from shim.coordinator import errors as E
from shim.coordinator.state_records import ConsumerGroupTombstone, GroupTombstone, OffsetTombstone
from testsuite.coordinator.consumer.harness import Client, ConsumerHarness
from testsuite.coordinator.replay_check import assert_replay_agrees
from testsuite.coordinator.test_txn_offsets import end, txn_commit

TOPICS = {"foo": 4, "bar": 2}
DAY = 24 * 3600 * 1000
SHORT = 60_000          # short enough for members to heartbeat through it


def cleanup(h) -> list:
    """One periodic cleanup now; the records it wrote."""
    start = len(h.c.written)
    h.c.expire_offsets(now_ms=h.now)
    return h.c.written[start:]


def expired(records) -> list:
    return sorted((r.group_id, r.topic, r.partition) for r in records if isinstance(r, OffsetTombstone))


def committed(h, gid="g") -> set:
    return set(h.c.offsets.get(gid))


def joined(h, member="a", topics=("foo",), regex=None, gid="g") -> Client:
    cl = Client(h, member, gid=gid, topics=topics)
    if regex is not None:
        cl.beat(regex=regex)
    else:
        cl.beat()
    for _ in range(3):
        h.advance(100)
        assert cl.beat().error_code == E.NONE
    return cl


def leave(h, cl: Client) -> None:
    assert h.cgh(cl.gid, cl.member_id, -1, topics=None, owned=None).error_code == E.NONE


def keep_alive(h, clients, until: int) -> None:
    while h.now < until:
        h.advance(min(5_000, until - h.now))
        for cl in clients:
            assert cl.beat().error_code == E.NONE


def test_empty_consumer_group_offsets_expire_by_commit_time_then_the_group_is_deleted():
    """One-day retention, an Empty consumer group. The base is the commit time (a
    classic group would count from when it became Empty), and the group goes with its last offset."""
    h = ConsumerHarness(TOPICS, offsets_retention_ms=DAY)
    a = joined(h)
    t0 = h.now
    assert h.commit("g", {("foo", 0): 5}, generation=a.epoch, member_id="a") == {("foo", 0): E.NONE}
    h.advance(10_000)
    t1 = h.now
    assert h.commit("g", {("foo", 1): 6}, generation=a.epoch, member_id="a") == {("foo", 1): E.NONE}
    h.advance(10_000)
    leave(h, a)
    assert h.cg().state == "Empty"
    h.advance_to(t0 + DAY - 1)
    assert expired(cleanup(h)) == [] and committed(h) == {("foo", 0), ("foo", 1)}
    h.advance(1)                                       # foo-0 is one day old; the group has been Empty less
    assert expired(cleanup(h)) == [("g", "foo", 0)]
    assert h.cg() is not None and h.fetch("g", None)[1] == {("foo", 1): (6, 7, "", E.NONE)}
    h.advance_to(t1 + DAY)
    out = cleanup(h)
    assert expired(out) == [("g", "foo", 1)]
    assert out[-2:] == [ConsumerGroupTombstone("g"), GroupTombstone("g")]     # maybeDeleteGroup
    assert h.cg() is None and h.group("g") is None
    assert h.describe_cg("g").groups[0].error_code == E.GROUP_ID_NOT_FOUND
    assert "g" not in {g.group_id for g in h.list_groups().groups}
    assert_replay_agrees(h.c, h.c.written)
    assert h.cgh("g", "b").member_epoch == h.cgh("fresh", "b").member_epoch    # the id starts a new group


def test_stable_group_keeps_subscribed_topics_and_expires_the_others_by_commit_time():
    h = ConsumerHarness(TOPICS, offsets_retention_ms=SHORT)
    a = joined(h)
    h.commit("g", {("foo", 0): 1, ("bar", 0): 2}, generation=a.epoch, member_id="a")
    t0 = h.now
    keep_alive(h, [a], t0 + SHORT - 1)
    assert expired(cleanup(h)) == []
    keep_alive(h, [a], t0 + SHORT)
    out = cleanup(h)
    assert expired(out) == [("g", "bar", 0)]          # bar: nobody subscribes; foo: subscribed, never expires
    keep_alive(h, [a], t0 + 5 * SHORT)
    assert expired(cleanup(h)) == [] and committed(h) == {("foo", 0)}
    assert h.cg().state == "Stable" and not any(isinstance(r, ConsumerGroupTombstone) for r in h.c.written)
    assert_replay_agrees(h.c, h.c.written)


def test_a_topic_the_group_no_longer_subscribes_to_expires_from_its_commit():
    h = ConsumerHarness(TOPICS, offsets_retention_ms=SHORT)
    a = joined(h)
    h.commit("g", {("foo", 0): 1}, generation=a.epoch, member_id="a")
    t0 = h.now
    keep_alive(h, [a], t0 + 2 * SHORT)
    assert expired(cleanup(h)) == []                  # subscribed: kept however old
    a.topics = ("bar",)
    r = h.cgh("g", "a", a.epoch, topics=["bar"], owned=a.owned)
    assert r.error_code == E.NONE
    assert expired(cleanup(h)) == [("g", "foo", 0)]   # at once: committed two retentions ago
    assert h.cg() is not None
    assert_replay_agrees(h.c, h.c.written)


def test_topics_of_a_resolved_regex_count_as_subscribed():
    h = ConsumerHarness(TOPICS, offsets_retention_ms=SHORT)
    a = joined(h, topics=None, regex="fo.*")
    assert h.cg().subscribed_names() == {"foo"}
    h.commit("g", {("foo", 0): 1, ("bar", 1): 2}, generation=a.epoch, member_id="a")
    keep_alive(h, [a], h.now + SHORT)
    assert expired(cleanup(h)) == [("g", "bar", 1)]
    assert committed(h) == {("foo", 0)}
    assert_replay_agrees(h.c, h.c.written)


def test_groups_without_offsets_are_deleted_when_empty_only():
    """No offsets at all: cleanupExpiredOffsets answers true, maybeDeleteGroup deletes the group if it
    is Empty - a consumer group and a classic group in the same pass."""
    h = ConsumerHarness(TOPICS)
    a = joined(h)
    b = joined(h, "b", gid="gone")
    leave(h, b)
    (m,), _ = h.stable_group("classic", n=1)
    h.leave("classic", (m, None))
    out = cleanup(h)
    assert ConsumerGroupTombstone("gone") in out and GroupTombstone("classic") in out
    assert h.cg("gone") is None and h.group("classic") is None
    assert h.cg("g") is not None and ConsumerGroupTombstone("g") not in out     # has a member
    assert a.beat().error_code == E.NONE
    assert_replay_agrees(h.c, h.c.written)


def test_pending_transactional_offsets_keep_their_partition_and_the_group():
    h = ConsumerHarness(TOPICS, offsets_retention_ms=DAY)
    a = joined(h)
    h.commit("g", {("foo", 0): 1, ("foo", 1): 1}, generation=a.epoch, member_id="a")
    leave(h, a)
    h.advance(DAY - 1000)
    h.c.producer_initialized(1000, 3, 60_000, now_ms=h.now)
    assert txn_commit(h, "g", {("foo", 0): 9}) == {("foo", 0): E.NONE}
    h.advance(1000)
    out = cleanup(h)
    assert expired(out) == [("g", "foo", 1)] and h.cg() is not None        # foo-0 pending: kept
    end(h, committed=False)
    out = cleanup(h)
    assert expired(out) == [("g", "foo", 0)] and ConsumerGroupTombstone("g") in out
    assert h.cg() is None
    assert_replay_agrees(h.c, h.c.written)


def test_an_explicit_expire_timestamp_wins_for_consumer_groups_too():
    """OffsetCommit v2-4 RetentionTimeMs (an admin commit to the Empty group): expireTimestamp decides."""
    h = ConsumerHarness(TOPICS, offsets_retention_ms=DAY)
    leave(h, joined(h))
    assert h.commit("g", {("foo", 0): 3}, v=2, retention=SHORT) == {("foo", 0): E.NONE}
    assert h.cg() is not None
    h.advance(SHORT - 1)
    assert expired(cleanup(h)) == []
    h.advance(1)
    assert expired(cleanup(h)) == [("g", "foo", 0)] and h.cg() is None
    assert_replay_agrees(h.c, h.c.written)
