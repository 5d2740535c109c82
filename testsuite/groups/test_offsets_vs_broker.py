"""The same raw requests to the real broker's coordinator and to kshim's, answers compared: the empty
group id "", OffsetDelete of unknown topics/partitions and during a rebalance, the metadata size limit
in Java chars (OffsetCommit and TxnOffsetCommit), member epochs of OffsetCommit v10 (topics by id).
testsuite/coordinator/test_offsets_fidelity.py has the same cases on the pure coordinator."""

from __future__ import annotations

import struct
import time
import uuid

from kcodec.generated.add_offsets_to_txn import AddOffsetsToTxnRequest
from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.generated.delete_groups import DeleteGroupsRequest
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.end_txn import EndTxnRequest
from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.init_producer_id import InitProducerIdRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.leave_group import LeaveGroupRequest, MemberIdentity
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.offset_delete import (OffsetDeleteRequest, OffsetDeleteRequestPartition,
                                            OffsetDeleteRequestTopic)
from kcodec.generated.offset_fetch import (OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
                                           OffsetFetchRequestTopics)
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)
from shim.compat.wire import Wire

from .test_offsets_wire import call, find_coordinator, topic_id

EMOJI = "\U0001F600"       # 1 Python character, 2 Java chars
SIDES = ("broker", "kshim")


def bootstraps(kafka, kshim):
    return {"broker": kafka.bootstrap, "kshim": kshim.bootstrap}


def commit(b, group, topics, v=9, epoch=-1, member="", tid=None):
    """topics: [(name, partition, metadata)] -> [(partition, error)]."""
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=epoch, member_id=member, topics=[
        OffsetCommitRequestTopic(name=n if v < 10 else "", topic_id=tid, partitions=[OffsetCommitRequestPartition(
            partition_index=p, committed_offset=3, committed_metadata=md)]) for n, p, md in topics])
    return [(p.partition_index, p.error_code) for t in call(b, 8, v, req).topics for p in t.partitions]


def offset_delete(b, group, topics):
    body = call(b, 47, 0, OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequestTopic(name=n, partitions=[
        OffsetDeleteRequestPartition(partition_index=p) for p in ps]) for n, ps in topics]))
    return body.error_code, [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics]


# ---------------------------------------------------------------- the empty group id
def empty_group_scenario(b, topic):
    find_coordinator(b, "")
    out = {"commit": [commit(b, "", [(topic, 0, "m")], v=v) for v in (2, 9)]}
    fetches = []
    for v in (1, 5, 8):
        if v < 8:
            body = call(b, 9, v, OffsetFetchRequest(group_id="", topics=[
                OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]))
            fetches.append((body.error_code, [(p.committed_offset, p.error_code) for t in body.topics
                                              for p in t.partitions]))
        else:
            (g,) = call(b, 9, v, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="", topics=[
                OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])])).groups
            fetches.append((g.error_code, [(p.committed_offset, p.error_code) for t in g.topics for p in t.partitions]))
    out["fetch"] = fetches
    out["describe"] = [[(d.error_code, d.group_id, d.group_state, d.protocol_type) for d in call(
        b, 15, v, DescribeGroupsRequest(groups=[""])).groups] for v in (0, 6)]
    out["list"] = [(g.group_id, g.group_state, g.group_type) for g in call(
        b, 16, 5, ListGroupsRequest(states_filter=[], types_filter=[])).groups if g.group_id == ""]
    out["offset_delete"] = offset_delete(b, "", [(topic, [0]), ("no-such-topic-x", [0])])
    body = call(b, 11, 9, JoinGroupRequest(group_id="", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                           member_id="", protocol_type="consumer",
                                           protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]))
    out["join"] = body.error_code
    out["txn"] = [(p.partition_index, p.error_code) for t in call(b, 28, 5, TxnOffsetCommitRequest(
        transactional_id="no-such-txn", group_id="", producer_id=4242, producer_epoch=0, generation_id_or_member_epoch=-1,
        member_id="", topics=[TxnOffsetCommitRequestTopic(name=topic, partitions=[
            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])).topics for p in t.partitions]
    out["delete"] = [[(r.group_id, r.error_code) for r in call(b, 42, v, DeleteGroupsRequest(
        groups_names=[""])).results] for v in (0, 2)]
    return out


def test_the_empty_group_id_as_on_the_broker(kafka, kshim, new_topic):
    topic = new_topic(partitions=1)
    seen = {side: empty_group_scenario(b, topic) for side, b in bootstraps(kafka, kshim).items()}
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"]["commit"] == [[(0, 0)], [(0, 0)]]
    assert seen["kshim"]["fetch"] == [(0, [(3, 0)]), (0, [(3, 0)]), (0, [(3, 0)])]
    assert seen["kshim"]["list"] == [("", "Empty", "classic")]
    assert seen["kshim"]["offset_delete"] == (24, []) and seen["kshim"]["join"] == 24
    assert seen["kshim"]["txn"] == [(0, 24)]                 # refused before enlisting in any transaction
    assert seen["kshim"]["delete"] == [[("", 0)], [("", 69)]]


# ---------------------------------------------------------------- OffsetDelete
def test_offset_delete_of_unknown_topics_and_partitions_as_on_the_broker(kafka, kshim, new_topic, names):
    topic, group = new_topic(partitions=2), names.group()
    seen = {}
    for side, b in bootstraps(kafka, kshim).items():
        find_coordinator(b, group)
        assert commit(b, group, [(topic, 0, ""), (topic, 1, "")]) == [(0, 0), (1, 0)]
        seen[side] = [
            offset_delete(b, group, [("no-such-topic-x", [0]), (topic, [7, 0, 9, 1]), ("no-such-topic-y", [3])]),
            offset_delete(b, group, [(topic, [0]), (topic, [1, 8])]),
            offset_delete(b, names.group("absent"), [("no-such-topic-x", [0]), (topic, [5])]),
        ]
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"][0][1][1] == (topic, [(7, 3), (9, 3), (0, 0), (1, 0)])
    assert seen["kshim"][2] == (69, [])


def join(w, group, member, topics, v=3):
    meta = struct.pack(">h", 0) + ConsumerProtocolSubscription(topics=topics).encode(0)
    return w.send(11, v, JoinGroupRequest(group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000,
                                          member_id=member, protocol_type="consumer",
                                          protocols=[JoinGroupRequestProtocol(name="range", metadata=meta)]))


def rebalance_scenario(b, group, t1, t2):
    """Member a (subscribed to t1) forms generation 1; b (subscribed to t2) joins: PreparingRebalance
    while a has not rejoined. OffsetDelete judges by generation 1's subscriptions."""
    find_coordinator(b, group)
    with Wire(b, timeout=40) as wa, Wire(b, timeout=40) as wb:
        join(wa, group, "", [t1])
        ja = wa.read_response(11, 3)[1]
        assert ja.error_code == 0, ja
        a = ja.member_id
        wa.send(14, 3, SyncGroupRequest(group_id=group, generation_id=ja.generation_id, member_id=a,
                                        assignments=[SyncGroupRequestAssignment(member_id=a, assignment=b"")]))
        assert wa.read_response(14, 3)[1].error_code == 0
        join(wb, group, "", [t2])                                  # parked until a rejoins
        time.sleep(1.0)
        state = call(b, 15, 5, DescribeGroupsRequest(groups=[group])).groups[0].group_state
        got = offset_delete(b, group, [(t1, [0]), (t2, [0])])
        join(wa, group, a, [t1])                                   # the rebalance completes
        ja2, jb = wa.read_response(11, 3)[1], wb.read_response(11, 3)[1]
        assert ja2.error_code == 0 and jb.error_code == 0
        body = call(b, 13, 3, LeaveGroupRequest(group_id=group, members=[
            MemberIdentity(member_id=a), MemberIdentity(member_id=jb.member_id)]))
        assert body.error_code == 0
    return state, got


def test_offset_delete_while_preparing_rebalance_as_on_the_broker(kafka, kshim, new_topic, names):
    t1, t2 = new_topic(partitions=1), new_topic(partitions=1)
    seen = {side: rebalance_scenario(b, names.group(side), t1, t2) for side, b in bootstraps(kafka, kshim).items()}
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"] == ("PreparingRebalance", (0, [(t1, [(0, 86)]), (t2, [(0, 0)])]))


# ---------------------------------------------------------------- metadata size in Java chars
def test_metadata_size_counts_java_chars_as_on_the_broker(kafka, kshim, new_topic, names):
    topic = new_topic(partitions=3)
    parts = [(topic, 0, EMOJI * 2048), (topic, 1, EMOJI * 2049), (topic, 2, "x" * 4097)]
    seen = {}
    for side, b in bootstraps(kafka, kshim).items():
        group, txn_id = names.group(side), names.group("tx-" + side)
        find_coordinator(b, group)
        out = [commit(b, group, parts, v=v) for v in (2, 9)]
        ids = _txn_ids(b, txn_id, group)
        body = call(b, 28, 3, TxnOffsetCommitRequest(
            transactional_id=txn_id, group_id=group, producer_id=ids[0], producer_epoch=ids[1], generation_id_or_member_epoch=-1,
            member_id="", topics=[TxnOffsetCommitRequestTopic(name=n, partitions=[TxnOffsetCommitRequestPartition(
                partition_index=p, committed_offset=1, committed_metadata=md)]) for n, p, md in parts]))
        out.append([(p.partition_index, p.error_code) for t in body.topics for p in t.partitions])
        end = call(b, 26, 3, EndTxnRequest(transactional_id=txn_id, producer_id=ids[0], producer_epoch=ids[1],
                                           committed=False))
        out.append(end.error_code)
        seen[side] = out
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"][:3] == [[(0, 0), (1, 12), (2, 12)]] * 3


def _txn_ids(b, txn_id, group):
    """A real transaction holding the group's offsets (InitProducerId, AddOffsetsToTxn as a v4 client
    does): (producer id, epoch)."""
    deadline = time.monotonic() + 30
    while call(b, 10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id])).coordinators[0].error_code:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    while True:
        r = call(b, 22, 4, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000,
                                                 producer_id=-1, producer_epoch=-1))
        if r.error_code == 0:
            break
        assert time.monotonic() < deadline, r
        time.sleep(0.3)
    a = call(b, 25, 3, AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=r.producer_id,
                                              producer_epoch=r.producer_epoch, group_id=group))
    assert a.error_code == 0, a
    return r.producer_id, r.producer_epoch


# ---------------------------------------------------------------- member epochs, topics by id
def member_scenario(b, group, topic, other, tid, other_id):
    """A consumer-protocol member owns every partition of `topic`; commits v10 with its epoch minus one
    on a partition it holds since its current epoch and on a topic it does not subscribe to."""
    member = uuid.uuid4().hex[:22]
    deadline = time.monotonic() + 30
    epoch, owned = 0, []
    while True:
        r = call(b, 68, 1, ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=[topic] if epoch == 0 else None, topic_partitions=[] if epoch == 0 else owned))
        assert r.error_code == 0, r
        epoch = r.member_epoch
        if r.assignment is not None:
            owned = r.assignment.topic_partitions
        if owned:
            break
        assert time.monotonic() < deadline
        time.sleep(0.5)
    out = [commit(b, group, [("", 0, "")], v=10, epoch=epoch - 1, member=member, tid=tid),
           commit(b, group, [("", 0, "")], v=10, epoch=epoch - 1, member=member, tid=other_id),
           commit(b, group, [("", 0, "")], v=10, epoch=epoch, member=member, tid=tid),
           commit(b, group, [("", 0, "x" * 4097)], v=10, epoch=epoch - 1, member=member, tid=other_id)]
    call(b, 68, 1, ConsumerGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=-1,
                                                 rebalance_timeout_ms=-1))
    return out


def test_commit_v10_member_epochs_as_on_the_broker(kafka, kshim, new_topic, names):
    topic, other = new_topic(partitions=1), new_topic(partitions=1)
    tid, other_id = topic_id(kafka.bootstrap, topic), topic_id(kafka.bootstrap, other)
    seen = {side: member_scenario(b, names.group(side), topic, other, tid, other_id)
            for side, b in bootstraps(kafka, kshim).items()}
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"] == [[(0, 113)], [(0, 113)], [(0, 0)], [(0, 12)]]     # STALE_MEMBER_EPOCH
