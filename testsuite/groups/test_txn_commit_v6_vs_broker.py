"""TxnOffsetCommit v6 (Kafka 4.4, KIP-1319) and the version rules it brought, sent raw to the real
broker and to kshim, answers compared: topics by id (an unknown id is UNKNOWN_TOPIC_ID for its
partitions, a partition past the count UNKNOWN_TOPIC_OR_PARTITION, the answer keyed by id); a
generation for a group that does not exist is GROUP_ID_NOT_FOUND at v6 and ILLEGAL_GENERATION before;
a consumer-protocol member's stale epoch is STALE_MEMBER_EPOCH at v6 and ILLEGAL_GENERATION before;
the offsets committed by EndTxn read back by id."""

from __future__ import annotations

import time
import uuid

from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kcodec.generated.end_txn import EndTxnRequest
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)

from .test_commit_checks_vs_broker import _coordinator_ready, _init, bootstraps
from .test_offsets_wire import call, fetch, find_coordinator, topic_id

NOWHERE = uuid.UUID("00000000-0000-0000-0000-0000000000a7")


def txn_commit(b, group, v, txn, pid, epoch, topics, generation=-1, member=""):
    """topics: [(name, id, [partitions])] -> [(name or id, [(partition, error)])] as v names them."""
    body = call(b, 28, v, TxnOffsetCommitRequest(
        transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch,
        generation_id_or_member_epoch=generation, member_id=member, topics=[
            TxnOffsetCommitRequestTopic(name=name if v < 6 else "", topic_id=tid, partitions=[
                TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p) for p in parts])
            for name, tid, parts in topics]))
    return [(str(t.topic_id) if v >= 6 else t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in body.topics]


def scenario(b, group, txn, topic, tid, member):
    find_coordinator(b, group)
    _coordinator_ready(b, txn)
    pid, epoch = _init(b, txn)
    out = {}
    known = [(topic, tid, [0, 7]), ("h7-never", NOWHERE, [0]), (topic, tid, [1])]
    out["by_id"] = txn_commit(b, group, 6, txn, pid, epoch, known)
    out["missing_group"] = [txn_commit(b, group + "-none", v, txn, pid, epoch, [(topic, tid, [0])], generation=3,
                                       member="m") for v in (5, 6)]
    out["end"] = call(b, 26, 5, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                                              committed=True)).error_code
    deadline = time.monotonic() + 30        # the broker applies them when the commit marker is written
    while (read := fetch(b, group, 10, [(topic, tid, [0, 1])])[1])[0][2] == -1 and time.monotonic() < deadline:
        time.sleep(0.1)
    out["read"] = read
    # a consumer-protocol member at epoch 1; commits one epoch ahead of it
    cg = group + "-cg"
    hb = call(b, 68, 1, ConsumerGroupHeartbeatRequest(group_id=cg, member_id=member, member_epoch=0,
                                                      rebalance_timeout_ms=30_000, subscribed_topic_names=[topic],
                                                      topic_partitions=[]))
    out["joined"] = (hb.error_code, hb.member_epoch)
    pid, epoch = _init(b, txn)
    out["stale"] = [txn_commit(b, cg, v, txn, pid, epoch, [(topic, tid, [0])], generation=hb.member_epoch + 1,
                               member=member) for v in (5, 6)]
    out["unknown_member"] = [txn_commit(b, cg, v, txn, pid, epoch, [(topic, tid, [0])], generation=1,
                                        member="nobody") for v in (5, 6)]
    out["current"] = txn_commit(b, cg, 6, txn, pid, epoch, [(topic, tid, [0])], generation=hb.member_epoch,
                                member=member)
    call(b, 26, 5, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=False))
    call(b, 68, 1, ConsumerGroupHeartbeatRequest(group_id=cg, member_id=member, member_epoch=-1))
    return out


def test_txn_offset_commit_v6_as_on_the_broker(kafka, kshim, new_topic, names):
    topic = new_topic(partitions=2)
    tid = topic_id(kafka.bootstrap, topic)
    member = "txnv6member-0123456789"
    seen = {side: scenario(b, names.group(side), names.group("tx-" + side), topic, tid, member)
            for side, b in bootstraps(kafka, kshim).items()}
    assert seen["kshim"] == seen["broker"]
    s = seen["kshim"]
    assert s["by_id"] == [(str(tid), [(7, 3), (0, 0), (1, 0)]), (str(NOWHERE), [(0, 100)])], s["by_id"]
    assert s["missing_group"] == [[(topic, [(0, 22)])], [(str(tid), [(0, 69)])]]      # ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND
    assert s["stale"] == [[(topic, [(0, 22)])], [(str(tid), [(0, 113)])]]             # .., STALE_MEMBER_EPOCH
    assert s["read"] == [(str(tid), 0, 10, 0), (str(tid), 1, 11, 0)]
    assert s["unknown_member"] == [[(topic, [(0, 25)])], [(str(tid), [(0, 25)])]] and s["current"] == [(str(tid), [(0, 0)])]
