"""The same raw (Txn)OffsetCommit requests to the real broker and to kshim, answers compared:
- partitions KafkaApis refuses (unknown topic, partition beyond the count) mixed with a group/member
  error or success in one answer, and their order (testsuite/coordinator/test_commit_answer_order.py);
- TxnOffsetCommit v0-4 verified at the transaction coordinator before the group coordinator takes it
  (KIP-890 part 1: never-initialized producer id, initialized but not enlisted, enlisted, fenced;
  testsuite/proxy/test_txn_verify.py)."""

from __future__ import annotations

import time

from kcodec.generated.add_offsets_to_txn import AddOffsetsToTxnRequest
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.end_txn import EndTxnRequest
from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.init_producer_id import InitProducerIdRequest
from kcodec.generated.offset_commit import OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)

from .test_offsets_wire import call, find_coordinator


def bootstraps(kafka, kshim):
    return {"broker": kafka.bootstrap, "kshim": kshim.bootstrap}


def answer(body):
    return [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics]


def commit(b, group, v, topics, generation=-1, member=""):
    return answer(call(b, 8, v, OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member, retention_time_ms=-1,
        topics=[OffsetCommitRequestTopic(name=n, partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=1) for p in ps]) for n, ps in topics])))


def txn_commit(b, group, v, txn_id, pid, epoch, topics):
    return answer(call(b, 28, v, TxnOffsetCommitRequest(
        transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id_or_member_epoch=-1,
        member_id="", topics=[TxnOffsetCommitRequestTopic(name=n, partitions=[
            TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=1) for p in ps])
            for n, ps in topics])))


# ---------------------------------------------------------------- OffsetCommit: refused partitions first
def order_scenario(b, group, t1, t2, missing):
    find_coordinator(b, group)
    mixed = [(t1, [0, 5, 1]), (missing, [0]), (t2, [0]), (t1, [9])]
    out = [commit(b, group, 2, [(t1, [0])])]                   # the group exists, Empty
    for v in range(2, 10):
        out.append(commit(b, group, v, mixed, generation=3, member="m"))     # UNKNOWN_MEMBER_ID / ILLEGAL_GEN.
        out.append(commit(b, group, v, mixed))                              # accepted
    return out


def test_commit_refused_partitions_and_group_errors_as_on_the_broker(kafka, kshim, new_topic, names):
    t1, t2, missing = new_topic(partitions=2), new_topic(partitions=1), names.topic("never-created")
    seen = {side: order_scenario(b, names.group(side), t1, t2, missing) for side, b in bootstraps(kafka, kshim).items()}
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"][1] == [(t1, [(5, 3), (9, 3), (0, 25), (1, 25)]), (missing, [(0, 3)]), (t2, [(0, 25)])]


# ---------------------------------------------------------------- TxnOffsetCommit v0-4: verification
def _coordinator_ready(b, txn_id):
    deadline = time.monotonic() + 30
    while call(b, 10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id])).coordinators[0].error_code:
        assert time.monotonic() < deadline
        time.sleep(0.3)


def _init(b, txn_id):
    deadline = time.monotonic() + 30
    while True:
        r = call(b, 22, 4, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000,
                                                 producer_id=-1, producer_epoch=-1))
        if r.error_code == 0:
            return r.producer_id, r.producer_epoch
        assert time.monotonic() < deadline, r
        time.sleep(0.3)


def verify_scenario(b, group, txn_id, topic):
    find_coordinator(b, group)
    _coordinator_ready(b, txn_id)
    out = {}
    # a producer id no transaction coordinator ever gave out
    out["never"] = [txn_commit(b, group, v, txn_id, 987_654_321, 0, [(topic, [0])]) for v in range(5)]
    out["never_unknown_topic"] = txn_commit(b, group, 3, txn_id, 987_654_321, 0,
                                            [("h7-never-created", [0]), (topic, [0, 7])])
    pid, epoch = _init(b, txn_id)
    # initialized, but the group's offsets partition is not in its transaction (no AddOffsetsToTxn)
    out["not_enlisted"] = [txn_commit(b, group, v, txn_id, pid, epoch, [(topic, [0])]) for v in range(5)]
    out["wrong_epoch"] = [txn_commit(b, group, v, txn_id, pid, epoch + 1, [(topic, [0])]) for v in (0, 4)]
    out["group"] = [(g.error_code, g.group_state) for g in call(b, 15, 5, DescribeGroupsRequest(
        groups=[group])).groups]                              # nothing was accepted: no group
    a = call(b, 25, 3, AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                              group_id=group))
    out["enlisted"] = [a.error_code] + [txn_commit(b, group, v, txn_id, pid, epoch, [(topic, [0])])
                                        for v in range(5)]
    out["end"] = call(b, 26, 3, EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                              committed=True)).error_code
    return out


def test_txn_offset_commit_v0_4_verified_as_on_the_broker(kafka, kshim, new_topic, names):
    topic = new_topic(partitions=1)
    seen = {side: verify_scenario(b, names.group(side), names.group("tx-" + side), topic)
            for side, b in bootstraps(kafka, kshim).items()}
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"]["never"] == [[(topic, [(0, 49)])]] * 5
    assert seen["kshim"]["never_unknown_topic"] == [("h7-never-created", [(0, 3)]), (topic, [(7, 3), (0, 49)])]
    # TRANSACTION_ABORTABLE for v4 clients (KIP-890), INVALID_TXN_STATE before
    assert seen["kshim"]["not_enlisted"] == [[(topic, [(0, 48)])]] * 4 + [[(topic, [(0, 120)])]]
    assert seen["kshim"]["wrong_epoch"] == [[(topic, [(0, 47)])]] * 2
    assert seen["kshim"]["enlisted"] == [0] + [[(topic, [(0, 0)])]] * 5 and seen["kshim"]["end"] == 0
