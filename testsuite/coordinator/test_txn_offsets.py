"""TxnOffsetCommit v0-5 (OffsetMetadataManager.commitTransactionalOffset), transaction ends,
RequireStable (fetchOffsets) and the pending offsets'
records (state-topic format, replay) - the pure coordinator, on a virtual clock."""

import pytest

from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)
from shim.coordinator import errors as E
from shim.coordinator.state_records import OffsetRecord, TxnOffsetRecord, TxnOffsetTombstone
from shim.coordinator.txn_offsets import DEFAULT_TIMEOUT_MS, GRACE_MS, MIN_TIMEOUT_MS
from shim.state import format as fmt

from .harness import FETCH, Harness

TXN_COMMIT = 28
TOPICS = {"t1": 3, "t2": 2}
PID, EPOCH = 1000, 3


def txn_commit(h: Harness, gid: str, offsets: dict, *, pid: int = PID, epoch: int = EPOCH, generation: int = -1,
               member_id: str = "", instance: str | None = None, v: int = 3, metadata: str = "md") -> dict:
    topics: dict[str, list] = {}
    for (topic, part), off in offsets.items():
        topics.setdefault(topic, []).append(TxnOffsetCommitRequestPartition(
            partition_index=part, committed_offset=off, committed_leader_epoch=5 if v >= 2 else -1,
            committed_metadata=metadata))
    req = TxnOffsetCommitRequest(transactional_id="tx", group_id=gid, producer_id=pid, producer_epoch=epoch,
                                 generation_id_or_member_epoch=generation if v >= 3 else -1, member_id=member_id if v >= 3 else "",
                                 group_instance_id=instance if v >= 3 else None,
                                 topics=[TxnOffsetCommitRequestTopic(name=t, partitions=ps)
                                         for t, ps in topics.items()])
    body = h.immediate(TXN_COMMIT, v, req)
    return {(t.name, p.partition_index): p.error_code for t in body.topics for p in t.partitions}


def end(h: Harness, committed: bool, pid: int = PID, epoch: int | None = EPOCH):
    out = h.c.end_transaction(pid, committed, h.now, producer_epoch=epoch)
    assert out.responses == []


def offsets(h: Harness, gid: str = "g", stable: bool = False, v: int = 8) -> dict:
    if not stable:
        _, got = h.fetch(gid, {"t1": [0, 1, 2]}, v=v)
        return {k: (o, err) for k, (o, _le, _md, err) in got.items()}
    from kcodec.generated.offset_fetch import (OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
                                               OffsetFetchRequestTopics)
    if v >= 8:
        req = OffsetFetchRequest(require_stable=True, groups=[OffsetFetchRequestGroup(group_id=gid, topics=[
            OffsetFetchRequestTopics(name="t1", partition_indexes=[0, 1, 2])])])
        (grp,) = h.immediate(FETCH, v, req).groups
        topics = grp.topics
    else:
        req = OffsetFetchRequest(group_id=gid, require_stable=True, topics=[
            OffsetFetchRequestTopic(name="t1", partition_indexes=[0, 1, 2])])
        body = h.immediate(FETCH, v, req)
        assert body.error_code == E.NONE
        topics = body.topics
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in topics for p in t.partitions}


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("v", range(0, 6))
def test_absent_group_without_generation_becomes_a_simple_group_and_offsets_stay_pending(v):
    h = Harness(TOPICS)
    assert txn_commit(h, "g", {("t1", 0): 10, ("t1", 2): 12}, v=v) == {("t1", 0): E.NONE, ("t1", 2): E.NONE}
    assert (h.group("g").state, h.group("g").protocol_type) == ("Empty", None)
    assert offsets(h) == {("t1", 0): (-1, 0), ("t1", 1): (-1, 0), ("t1", 2): (-1, 0)}   # not visible
    end(h, committed=True)
    assert offsets(h) == {("t1", 0): (10, 0), ("t1", 1): (-1, 0), ("t1", 2): (12, 0)}
    _, got = h.fetch("g", {"t1": [0]})
    assert got[("t1", 0)] == (10, 5 if v >= 2 else -1, "md", 0)


@pytest.mark.parametrize("v", [3, 4, 5])
def test_absent_group_with_a_generation_is_illegal_generation(v):
    h = Harness(TOPICS)
    assert txn_commit(h, "g", {("t1", 0): 1}, generation=2, member_id="m", v=v) == {("t1", 0): E.ILLEGAL_GENERATION}
    assert h.group("g") is None and not h.c.txns.by_producer


def test_unknown_topic_or_partition_and_metadata_too_large_per_partition():
    h = Harness(TOPICS, offset_metadata_max_bytes=4)
    got = txn_commit(h, "g", {("nope", 0): 1, ("t1", 3): 1, ("t2", 1): 5}, metadata="long!")
    assert got == {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION, ("t1", 3): E.UNKNOWN_TOPIC_OR_PARTITION,
                   ("t2", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert txn_commit(h, "other", {("nope", 0): 1}, generation=3, member_id="m") == \
        {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.group("other") is None


def test_member_of_a_stable_group_and_identity_checks():
    h = Harness(TOPICS)
    (m1, m2), gen = h.stable_group("g", 2)
    assert txn_commit(h, "g", {("t1", 0): 5}, generation=gen, member_id=m1) == {("t1", 0): E.NONE}
    assert txn_commit(h, "g", {("t1", 0): 5}, generation=gen + 1, member_id=m1) == {("t1", 0): E.ILLEGAL_GENERATION}
    assert txn_commit(h, "g", {("t1", 0): 5}, generation=gen, member_id="who") == {("t1", 0): E.UNKNOWN_MEMBER_ID}
    # no identity at all: accepted although the group is not Empty (OffsetCommit says UNKNOWN_MEMBER_ID)
    assert txn_commit(h, "g", {("t1", 1): 6}) == {("t1", 1): E.NONE}
    assert h.commit("g", {("t1", 1): 6}) == {("t1", 1): E.UNKNOWN_MEMBER_ID}


def test_completing_rebalance_is_allowed_and_dead_is_coordinator_not_available():
    h = Harness(TOPICS)
    (m1, m2), gen = h.stable_group("g", 2)
    h.join("g", m1)                       # rejoin: PreparingRebalance
    h.join("g", m2)                       # everyone joined: CompletingRebalance, generation + 1
    assert h.group("g").state == "CompletingRebalance"
    gen = h.group("g").generation_id
    assert txn_commit(h, "g", {("t1", 0): 1}, generation=gen, member_id=m1) == {("t1", 0): E.NONE}
    assert h.commit("g", {("t1", 0): 1}, generation=gen, member_id=m1) == {("t1", 0): E.REBALANCE_IN_PROGRESS}
    h.group("g").state = "Dead"
    assert txn_commit(h, "g", {("t1", 0): 1}) == {("t1", 0): E.COORDINATOR_NOT_AVAILABLE}


def test_static_member_fenced_instance():
    h = Harness(TOPICS)
    (m1,), gen = h.stable_group("g", 1, instances=["i1"])
    assert txn_commit(h, "g", {("t1", 0): 1}, generation=gen, member_id="other", instance="i1") == \
        {("t1", 0): E.FENCED_INSTANCE_ID}
    assert txn_commit(h, "g", {("t1", 0): 1}, generation=gen, member_id=m1, instance="i1") == {("t1", 0): E.NONE}


# ---------------------------------------------------------------- transaction ends

def test_commit_applies_the_producers_offsets_of_every_group_and_abort_drops_them():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1})
    txn_commit(h, "g", {("t1", 0): 10})
    txn_commit(h, "g2", {("t1", 1): 20})
    txn_commit(h, "g", {("t1", 2): 30}, pid=2000, epoch=0)     # another producer's transaction
    end(h, committed=False)
    assert offsets(h)[("t1", 0)] == (1, 0) and offsets(h, "g2")[("t1", 1)] == (-1, 0)
    assert h.c.txns.partitions("g") == {("t1", 2)}
    txn_commit(h, "g", {("t1", 0): 11})
    txn_commit(h, "g2", {("t1", 1): 21})
    h.c.written.clear()
    end(h, committed=True)
    assert offsets(h)[("t1", 0)] == (11, 0) and offsets(h, "g2")[("t1", 1)] == (21, 0)
    assert offsets(h)[("t1", 2)] == (-1, 0)           # producer 2000 still open
    recs = h.c.written
    assert [type(r).__name__ for r in recs] == ["OffsetRecord", "TxnOffsetTombstone"] * 2
    assert {(r.group_id, r.offset) for r in recs if isinstance(r, OffsetRecord)} == {("g", 11), ("g2", 21)}


def test_a_marker_ends_the_producers_offsets_of_the_groups_in_its_partition_only():
    """replayEndTransactionMarker: a marker in one __consumer_offsets partition ends the producer's
    pending offsets of that partition's groups, whatever their epoch; the other groups' wait for
    their own partition's marker."""
    from .replay_check import assert_replay_agrees
    h = Harness(TOPICS)
    txn_commit(h, "g", {("t1", 0): 10}, epoch=3)
    txn_commit(h, "g2", {("t1", 1): 20}, epoch=3)
    log = list(h.c.written)
    h.c.written.clear()
    out = h.c.transaction_marker(PID, True, ["g"], h.now)
    assert out.responses == []
    assert offsets(h)[("t1", 0)] == (10, 0)
    assert offsets(h, "g2", stable=True)[("t1", 1)] == (-1, E.UNSTABLE_OFFSET_COMMIT)
    assert h.c.pending_transactions().keys() == {(PID, "g2")}
    assert [type(r).__name__ for r in h.c.written] == ["OffsetRecord", "TxnOffsetTombstone"]
    assert_replay_agrees(h.c, log + h.c.written)          # a restart now: g2's offsets still pending
    assert h.c.timers.deadline(("txn", PID)) is not None      # g2's transaction still times out
    h.c.transaction_marker(PID, False, ["g2"], h.now)
    assert offsets(h, "g2", stable=True)[("t1", 1)] == (-1, 0)
    assert h.c.pending_transactions().keys() == set() and h.c.timers.deadline(("txn", PID)) is None
    h.c.transaction_marker(PID, True, ["g", "g2"], h.now)      # a repeated marker: nothing left
    assert offsets(h)[("t1", 0)] == (10, 0)


def test_a_transaction_commit_keeps_the_most_recently_written_offset():
    """OffsetMetadataManager.replayEndTransactionMarker applies a pending offset only when it was written
    after the partition's committed one (record offsets): a regular commit made while the
    transaction was open wins; of two producers' offsets the later written one stays, whichever
    transaction commits first. Found by the differential tester (seed 529)."""
    from .replay_check import assert_replay_agrees
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1, ("t1", 1): 1})
    txn_commit(h, "g", {("t1", 0): 10, ("t1", 1): 10})          # after the first commits
    h.commit("g", {("t1", 1): 44})                                # while the transaction is open
    txn_commit(h, "g", {("t1", 2): 30}, pid=2000, epoch=0)
    txn_commit(h, "g", {("t1", 2): 20})                          # written after producer 2000's 30
    h.c.end_transaction(2000, True, h.now, producer_epoch=0)
    end(h, committed=True)
    assert {k: o for k, (o, _) in offsets(h).items()} == {("t1", 0): 10, ("t1", 1): 44, ("t1", 2): 20}
    txn_commit(h, "g", {("t1", 2): 25}, pid=3000, epoch=0)       # written before producer 4000's 27
    txn_commit(h, "g", {("t1", 2): 27}, pid=4000, epoch=0)
    h.c.end_transaction(4000, True, h.now, producer_epoch=0)
    h.c.end_transaction(3000, True, h.now, producer_epoch=0)     # committed last, written first: loses
    assert offsets(h)[("t1", 2)] == (27, 0)
    assert not h.c.txns.committed_at and not h.c.txns.pending_at
    assert_replay_agrees(h.c, h.c.written)


def test_end_of_an_unknown_producer_changes_nothing():
    h = Harness(TOPICS)
    end(h, committed=True, pid=77)
    assert h.c.written == []


def test_newer_epoch_drops_the_older_transactions_offsets():
    h = Harness(TOPICS)
    txn_commit(h, "g", {("t1", 0): 10}, epoch=3)
    txn_commit(h, "g", {("t1", 1): 11}, epoch=4)        # the broker aborted epoch 3's transaction
    assert h.c.txns.partitions("g") == {("t1", 1)}
    assert txn_commit(h, "g", {("t1", 2): 1}, epoch=3) == {("t1", 2): E.INVALID_PRODUCER_EPOCH}
    h.c.producer_initialized(PID, 5, 60_000, now_ms=h.now)   # re-init: epoch 4's transaction is aborted
    assert h.c.txns.partitions("g") == set()
    txn_commit(h, "g", {("t1", 0): 12}, epoch=5)
    end(h, committed=True, epoch=5)
    assert offsets(h)[("t1", 0)] == (12, 0) and offsets(h)[("t1", 1)] == (-1, 0)


def test_commit_with_another_epoch_than_the_pending_offsets_drops_them():
    h = Harness(TOPICS)
    txn_commit(h, "g", {("t1", 0): 10}, epoch=3)
    end(h, committed=True, epoch=4)
    assert offsets(h)[("t1", 0)] == (-1, 0) and not h.c.txns.by_producer


@pytest.mark.parametrize("seen,expected", [(None, DEFAULT_TIMEOUT_MS), (10_000, MIN_TIMEOUT_MS),
                                           (120_000, 120_000)])
def test_pending_offsets_expire_after_the_transaction_timeout(seen, expected):
    h = Harness(TOPICS)
    if seen is not None:
        h.c.producer_initialized(PID, EPOCH, seen, now_ms=h.now)
    txn_commit(h, "g", {("t1", 0): 10})
    h.advance(expected + GRACE_MS - 1)
    txn_commit(h, "g", {("t1", 1): 11})                 # same transaction: the deadline does not move
    assert h.c.txns.partitions("g") == {("t1", 0), ("t1", 1)}
    h.advance(1)
    assert h.c.txns.partitions("g") == set() and h.c.next_deadline() is None
    assert isinstance(h.c.written[-1], TxnOffsetTombstone)
    end(h, committed=True)
    assert offsets(h)[("t1", 0)] == (-1, 0)


# ---------------------------------------------------------------- RequireStable, DeleteGroups, OffsetDelete

@pytest.mark.parametrize("v", [7, 8, 9])
def test_require_stable_answers_unstable_offset_commit_while_pending(v):
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1, ("t1", 1): 2})
    txn_commit(h, "g", {("t1", 1): 20, ("t1", 2): 30})
    assert offsets(h, stable=True, v=v) == {("t1", 0): (1, 0), ("t1", 1): (-1, E.UNSTABLE_OFFSET_COMMIT),
                                           ("t1", 2): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert offsets(h, stable=False, v=v) == {("t1", 0): (1, 0), ("t1", 1): (2, 0), ("t1", 2): (-1, 0)}
    # all topics: committed partitions are listed, the pending one among them unstable
    _, every = h.fetch("g", None, v=v)
    assert every[("t1", 1)][0] == 2
    end(h, committed=True)
    assert offsets(h, stable=True, v=v) == {("t1", 0): (1, 0), ("t1", 1): (20, 0), ("t1", 2): (30, 0)}


def test_delete_groups_and_offset_delete_drop_pending_offsets():
    h = Harness(TOPICS)
    txn_commit(h, "g", {("t1", 0): 10, ("t1", 1): 11})
    txn_commit(h, "g2", {("t1", 0): 10})
    assert h.offset_delete("g", {"t1": [0]}) == (E.NONE, {("t1", 0): E.NONE})
    assert h.c.txns.partitions("g") == {("t1", 1)}
    assert h.delete("g").results[0].error_code == E.NONE
    assert h.c.txns.partitions("g") == set() and h.c.txns.partitions("g2") == {("t1", 0)}
    end(h, committed=True)
    assert h.group("g") is None and offsets(h, "g2")[("t1", 0)] == (10, 0)


# ---------------------------------------------------------------- records: format and replay

def test_txn_records_round_trip_through_the_state_format():
    rec = TxnOffsetRecord("g", 2**40, 7, "topic-é", 3, 42, 5, "meta", 99, 60_000, "tx-é", 12_345)
    key, value = fmt.encode(rec)
    assert key[:2] == b"\x00\x03" and value[:2] == b"\x00\x02"
    assert fmt.decode(key, value) == rec
    without = TxnOffsetRecord("g", 2**40, 7, "topic-é", 3, 42, 5, "meta", 99, 60_000)
    assert fmt.decode(*fmt.encode(without)) == without
    v1 = b"\x00\x01" + value[2:value.rindex(b"\x00\x05tx-")]          # a value kshim wrote before v2
    assert fmt.decode(key, v1) == without
    tomb = TxnOffsetTombstone("g", 2**40, "topic-é", 3)
    k2, v2 = fmt.encode(tomb)
    assert k2 == key and v2 is None and fmt.decode(k2, v2) == tomb


def test_replay_restores_pending_offsets_which_a_later_end_commits():
    h = Harness(TOPICS)
    h.c.producer_initialized(PID, EPOCH, 90_000, now_ms=h.now)
    txn_commit(h, "g", {("t1", 0): 10, ("t1", 1): 11})
    txn_commit(h, "g2", {("t1", 0): 5}, pid=9, epoch=0)
    end(h, committed=False, pid=9, epoch=0)
    records = [fmt.decode(*fmt.encode(r)) for r in h.c.written]
    again = Harness(TOPICS)
    again.advance(1_000)
    for r in records:
        again.c.replay(r, now_ms=again.now)
    assert again.c.txns.partitions("g") == {("t1", 0), ("t1", 1)} and again.c.txns.partitions("g2") == set()
    assert again.c.next_deadline() == 1_000 + 90_000 + GRACE_MS
    assert offsets(again, stable=True)[("t1", 0)] == (-1, E.UNSTABLE_OFFSET_COMMIT)
    end(again, committed=True)
    assert offsets(again, stable=True)[("t1", 0)] == (10, 0)
