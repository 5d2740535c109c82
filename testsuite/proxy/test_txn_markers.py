"""Transaction markers read from __consumer_offsets (shim/groupservice/txn_markers.py) without sockets: which
batches are markers, which producer and groups they end, and the floor that keeps a producer's
earlier markers from ending its newer transaction. The same against the real broker:
testsuite/groups/test_transaction_outcomes.py."""

from __future__ import annotations

import struct

from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)
from kcodec.records import crc32c
from shim.coordinator import GroupCoordinator
from shim.coordinator.metadata import TopicInfo
from shim.groupservice.txn_markers import TxnMarkerWatch
from shim.state.batch import encode_batch

PID = 4242


def _batch(base: int, records: list, *, producer_id: int = -1, control: bool = False) -> bytes:
    """A v2 batch at `base`: transactional (and a control batch) when a producer id is given."""
    raw = bytearray(encode_batch(records, 1_000))
    struct.pack_into(">q", raw, 0, base)
    if producer_id >= 0:
        attributes = 0x10 | (0x20 if control else 0)
        struct.pack_into(">h", raw, 21, attributes)
        struct.pack_into(">qh", raw, 43, producer_id, 0)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def marker(base: int, committed: bool, producer_id: int = PID) -> bytes:
    return _batch(base, [(struct.pack(">hh", 0, 1 if committed else 0), struct.pack(">hi", 0, 0))],
                  producer_id=producer_id, control=True)


class _Runtime:
    def __init__(self):
        self.coordinator = GroupCoordinator()
        self.coordinator.topics.put(TopicInfo("t", None, 3))
        self.topics = self.coordinator.topics
        self.delivered = []

    def deliver(self, out):
        self.delivered.append(out)

    def now(self) -> int:
        return 0


def _watch():
    runtime = _Runtime()
    return TxnMarkerWatch(None, runtime, None, None), runtime


def _pending(runtime, group: str, offset: int, pid: int = PID) -> None:
    req = TxnOffsetCommitRequest(transactional_id="x", group_id=group, producer_id=pid, producer_epoch=0,
                                 generation_id_or_member_epoch=-1, member_id="", topics=[TxnOffsetCommitRequestTopic(
                                     name="t", partitions=[TxnOffsetCommitRequestPartition(
                                         partition_index=0, committed_offset=offset)])])
    runtime.coordinator.handle(28, 3, req, "tok", now_ms=0)


def test_a_marker_at_or_after_the_floor_ends_only_the_groups_it_was_expected_for():
    w, runtime = _watch()
    _pending(runtime, "ga", 7)
    _pending(runtime, "gb", 8)
    w.expected = {5: {PID: {"ga": 100, "gb": 130}}}
    data = _batch(95, [(b"k", b"v")]) + marker(99, False) + marker(120, True) + _batch(121, [(b"k", b"v")])
    assert w._scan(5, data, 96) == 122
    # offset 99: before both floors (an earlier transaction's); offset 120: ga's commit, not gb's
    assert runtime.coordinator.pending_transactions().keys() == {(PID, "gb")}
    assert w.expected == {5: {PID: {"gb": 130}}}
    assert len(runtime.delivered) == 1
    w._scan(5, marker(130, False), 122)
    assert runtime.coordinator.pending_transactions().keys() == set() and w.expected == {5: {}}


def test_markers_of_other_producers_batches_before_the_position_and_a_cut_tail_are_skipped():
    w, runtime = _watch()
    _pending(runtime, "ga", 7)
    w.expected = {5: {PID: {"ga": 0}}}
    own = marker(10, True)
    data = marker(5, True, producer_id=77) + marker(9, False) + own[:30]     # 9 < position; a cut batch
    assert w._scan(5, data, 10) == 10
    assert runtime.coordinator.pending_transactions().keys() == {(PID, "ga")}
    assert w._scan(5, own, 10) == 11
    assert runtime.coordinator.pending_transactions().keys() == set()


def test_a_transactional_data_batch_of_the_producer_is_no_marker():
    w, runtime = _watch()
    _pending(runtime, "ga", 7)
    w.expected = {5: {PID: {"ga": 0}}}
    assert w._scan(5, _batch(3, [(b"k", b"v")], producer_id=PID), 0) == 4
    assert runtime.coordinator.pending_transactions().keys() == {(PID, "ga")}


def test_the_sweep_watches_replayed_offsets_from_the_floor_their_records_keep():
    """A restart (or a scale-out takeover) replays pending offsets: they are watched from the offset
    recorded when they were enlisted, so a marker written while no kshim held them is still read."""
    import asyncio

    from shim.coordinator.state_records import TxnOffsetRecord
    from shim.groupservice.txn_verify import offsets_partition
    w, runtime = _watch()
    runtime.coordinator.topics.put(TopicInfo("__consumer_offsets", None, 4))
    runtime.coordinator.replay(TxnOffsetRecord("ga", PID, 0, "t", 0, 7, -1, "", 0, 60_000, "tx", 40), now_ms=0)
    started = []

    async def tail(p, position):
        started.append((p, position))
    w._tail = tail

    async def go():
        await w.sweep()
        await asyncio.sleep(0)
    asyncio.run(go())
    p = offsets_partition("ga", 4)
    assert w.expected == {p: {PID: {"ga": 40}}} and started == [(p, 40)]
    w._scan(p, marker(39, True), 39)                       # before the floor: an earlier transaction's
    assert runtime.coordinator.pending_transactions().keys() == {(PID, "ga")}
    w._scan(p, marker(45, True), 40)
    assert runtime.coordinator.offsets.get("ga")[("t", 0)].offset == 7
