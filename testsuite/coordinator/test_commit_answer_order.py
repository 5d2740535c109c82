"""(Txn)OffsetCommit answers mixing partitions KafkaApis refuses (unknown topic, partition beyond the
count) with partitions the coordinator answers: the refused ones come first, one topic per name (per
id at OffsetCommit v10), the coordinator's answer is merged after them (OffsetCommitResponse.Builder /
TxnOffsetCommitResponse.Builder). Each expected answer is the Kafka 4.3.1 broker's for the same
request (testsuite/groups/test_commit_checks_vs_broker.py sends it to both)."""

from __future__ import annotations

import uuid

import pytest

from kcodec.generated.offset_commit import OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)
from shim.coordinator import errors as E

from .harness import COMMIT, Harness

TXN_COMMIT = 28
UTP, UMI, NONE = E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_MEMBER_ID, E.NONE


def commit(h, v, topics, gid="g", generation=-1, member=""):
    """topics: [(name, [partitions])] -> [(name, [(partition, error)])] in answer order."""
    req = OffsetCommitRequest(group_id=gid, generation_id_or_member_epoch=generation, member_id=member,
                              retention_time_ms=-1, topics=[
                                  OffsetCommitRequestTopic(name=n, partitions=[
                                      OffsetCommitRequestPartition(partition_index=p, committed_offset=1)
                                      for p in ps]) for n, ps in topics])
    body = h.immediate(COMMIT, v, req)
    return [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics]


def txn_commit(h, v, topics, gid="g"):
    req = TxnOffsetCommitRequest(transactional_id="tx", group_id=gid, producer_id=7, producer_epoch=0,
                                 generation_id_or_member_epoch=-1, member_id="", topics=[
                                     TxnOffsetCommitRequestTopic(name=n, partitions=[
                                         TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=1)
                                         for p in ps]) for n, ps in topics])
    body = h.immediate(TXN_COMMIT, v, req)
    return [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics]


@pytest.mark.parametrize("v", [2, 5, 8, 9])
def test_refused_partitions_come_first_then_the_coordinators_answer(v):
    h = Harness({"t1": 2, "t2": 1})
    h.commit("g", {("t1", 0): 1})                     # the group exists (Empty): member errors below
    got = commit(h, v, [("t1", [0, 5, 1]), ("tx", [0]), ("t2", [0])], generation=3, member="m")
    assert got == [("t1", [(5, UTP), (0, UMI), (1, UMI)]), ("tx", [(0, UTP)]), ("t2", [(0, UMI)])]
    got = commit(h, v, [("t1", [0, 5, 1]), ("tx", [0]), ("t2", [0])])
    assert got == [("t1", [(5, UTP), (0, NONE), (1, NONE)]), ("tx", [(0, UTP)]), ("t2", [(0, NONE)])]


def test_without_refused_partitions_the_coordinators_answer_is_kept_as_it_is():
    h = Harness({"t1": 2})
    # the same topic twice: two topics in the answer (no merge when KafkaApis refused nothing)
    assert commit(h, 8, [("t1", [0]), ("t1", [1])]) == [("t1", [(0, NONE)]), ("t1", [(1, NONE)])]
    # ...but merged into the refused topic's entry when something was refused
    assert commit(h, 8, [("t1", [9]), ("t1", [0]), ("t1", [1])]) == [("t1", [(9, UTP), (0, NONE), (1, NONE)])]


def test_v10_by_topic_id():
    h = Harness({"t1": 2})
    tid = h.c.topics.get("t1").topic_id
    unknown = uuid.UUID(int=12345)
    req = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(topic_id=tid, partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=1) for p in (0, 7)]),
        OffsetCommitRequestTopic(topic_id=unknown, partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])
    body = h.immediate(COMMIT, 10, req)
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics] == [
        (tid, [(7, UTP), (0, NONE)]), (unknown, [(0, E.UNKNOWN_TOPIC_ID)])]


@pytest.mark.parametrize("v", [0, 3, 5])
def test_txn_offset_commit_order(v):
    h = Harness({"t1": 2, "t2": 1})
    got = txn_commit(h, v, [("t1", [1, 4, 0]), ("tx", [2]), ("t2", [0])])
    assert got == [("t1", [(4, UTP), (1, NONE), (0, NONE)]), ("tx", [(2, UTP)]), ("t2", [(0, NONE)])]
