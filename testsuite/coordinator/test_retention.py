"""Offset retention and the periodic cleanup (OffsetMetadataManager.cleanupExpiredOffsets; retention.py)."""

from shim.coordinator import errors as E
from shim.coordinator.state_records import GroupTombstone, OffsetTombstone

from .harness import Harness, subscription

TOPICS = {"t1": 3, "t2": 2}
DAY = 24 * 3600 * 1000
RETENTION = 7 * DAY


def tombstones(h, start):
    return sorted((r.group_id, r.topic, r.partition) for r in h.c.written[start:] if isinstance(r, OffsetTombstone))


def test_simple_group_offsets_expire_by_commit_time_then_the_group_goes():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1})
    h.advance(DAY)
    h.commit("g", {("t1", 1): 2})
    h.advance(RETENTION - DAY - 1)
    h.c.expire_offsets(now_ms=h.now)
    assert h.fetch("g", None)[1] == {("t1", 0): (1, 7, "", E.NONE), ("t1", 1): (2, 7, "", E.NONE)}
    h.advance(1)                                   # t1-0 is exactly 7 days old now
    start = len(h.c.written)
    h.c.expire_offsets(now_ms=h.now)
    assert tombstones(h, start) == [("g", "t1", 0)] and h.group("g") is not None
    h.advance(DAY)
    start = len(h.c.written)
    h.c.expire_offsets(now_ms=h.now)
    assert tombstones(h, start) == [("g", "t1", 1)]
    assert h.group("g") is None and GroupTombstone("g") in h.c.written[start:]


def test_explicit_retention_time_of_v2_to_v4_wins():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1}, v=2, retention=60_000)
    h.commit("g", {("t1", 1): 1}, v=5)
    h.advance(59_999)
    h.c.expire_offsets(now_ms=h.now)
    assert len(h.fetch("g", None)[1]) == 2
    h.advance(1)
    start = len(h.c.written)
    h.c.expire_offsets(now_ms=h.now)
    assert tombstones(h, start) == [("g", "t1", 0)]


SHORT = 60_000          # offsets.retention short enough for members to heartbeat through it


def keep_alive(h, gid, members, gen, until):
    while h.now < until:
        h.advance(min(5_000, until - h.now))
        for m in members:
            assert h.heartbeat(gid, m, gen).error_code in (E.NONE, E.REBALANCE_IN_PROGRESS)


def test_consumer_group_offsets_expire_from_when_it_became_empty():
    h = Harness(TOPICS, offsets_retention_ms=SHORT)
    (a,), gen = h.stable_group(n=1, protocols=(("range", subscription("t1")),))
    h.commit("g", {("t1", 0): 5, ("t2", 0): 6}, generation=gen, member_id=a)
    keep_alive(h, "g", [a], gen, h.now + SHORT + 5_000)
    start = len(h.c.written)
    h.c.expire_offsets(now_ms=h.now)
    # Stable consumer group: the unsubscribed topic expires by commit time, the subscribed one never
    assert tombstones(h, start) == [("g", "t2", 0)]
    h.leave("g", (a, None))
    emptied = h.now
    assert h.group("g").state == "Empty"
    h.advance(SHORT - 1)
    h.c.expire_offsets(now_ms=h.now)
    assert h.fetch("g", None)[1] == {("t1", 0): (5, 7, "", E.NONE)}   # old commit, but the base is emptied
    h.advance_to(emptied + SHORT)
    start = len(h.c.written)
    h.c.expire_offsets(now_ms=h.now)
    assert tombstones(h, start) == [("g", "t1", 0)] and h.group("g") is None


def test_rebalancing_groups_keep_their_offsets():
    h = Harness(TOPICS, offsets_retention_ms=SHORT)
    protos = (("range", subscription("t1")),)
    (a, b), gen = h.stable_group(n=2, protocols=protos)
    h.commit("g", {("t2", 0): 6}, generation=gen, member_id=a)
    keep_alive(h, "g", [a, b], gen, h.now + SHORT + 5_000)
    h.join("g", a, protocols=protos)                  # PreparingRebalance: nothing expires
    assert h.group("g").state == "PreparingRebalance"
    h.c.expire_offsets(now_ms=h.now)
    assert h.c.offsets.get("g")


def test_empty_group_without_offsets_is_deleted_at_the_next_cleanup():
    h = Harness(TOPICS)
    (a,), _ = h.stable_group(n=1)
    h.leave("g", (a, None))
    assert h.group("g").state == "Empty"
    h.c.expire_offsets(now_ms=h.now)
    assert h.group("g") is None
    assert h.describe("g").groups[0].group_state == "Dead"


def test_pending_transactional_offsets_keep_their_partition_and_group():
    from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                    TxnOffsetCommitRequestTopic)
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1, ("t1", 1): 1})
    h.advance(RETENTION - 1000)
    h.c.producer_initialized(7, 0, 60_000, now_ms=h.now)
    body = h.immediate(28, 3, TxnOffsetCommitRequest(
        transactional_id="tx", group_id="g", producer_id=7, producer_epoch=0, generation_id_or_member_epoch=-1, member_id="",
        topics=[TxnOffsetCommitRequestTopic(name="t1", partitions=[
            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=9, committed_metadata="")])]))
    assert body.topics[0].partitions[0].error_code == E.NONE
    start = len(h.c.written)
    h.c.expire_offsets(now_ms=h.now + 1000)          # within the transaction timeout
    assert tombstones(h, start) == [("g", "t1", 1)]      # t1-0 has a pending transactional offset
    assert h.group("g") is not None
