"""TxnOffsetCommit v0-4 verification (shim/groupservice/txn_verify.py) without sockets: the offsets partition
the broker picks, the error mapping its client sees, and when kshim goes on unverified. The same
requests against the real broker: testsuite/groups/test_commit_checks_vs_broker.py."""

from __future__ import annotations

import asyncio

import pytest

from kcodec.generated.add_partitions_to_txn import (AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse,
                                                    AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult)
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)
from shim.coordinator.metadata import TopicCatalog
from shim.coordinator.txn_offsets import txn_commit_refused
from shim.groupservice import txn_verify as V


def test_offsets_partition_is_javas_string_hashcode():
    assert V.offsets_partition("g", 50) == 103 % 50               # "g".hashCode() == 103
    assert V.offsets_partition("ab", 50) == (97 * 31 + 98) % 50
    assert V.offsets_partition("polygenelubricants", 50) == 0     # hashCode == Integer.MIN_VALUE
    assert V.offsets_partition("\U0001F600", 50) == (0xD83D * 31 + 0xDE00) % 50   # UTF-16 units


@pytest.mark.parametrize("version,code,seen", [
    (3, V.PRODUCER_FENCED, V.INVALID_PRODUCER_EPOCH),
    (4, V.TRANSACTION_ABORTABLE, V.TRANSACTION_ABORTABLE),
    (3, V.TRANSACTION_ABORTABLE, V.INVALID_TXN_STATE),
    (0, V.TRANSACTION_ABORTABLE, V.INVALID_TXN_STATE),
    (2, V.NETWORK_EXCEPTION, V.COORDINATOR_LOAD_IN_PROGRESS),
    (1, V.NETWORK_EXCEPTION, V.COORDINATOR_NOT_AVAILABLE),
    (1, V.COORDINATOR_LOAD_IN_PROGRESS, V.COORDINATOR_NOT_AVAILABLE),
    (4, V.NOT_LEADER_OR_FOLLOWER, V.NOT_COORDINATOR),
    (4, V.REQUEST_TIMED_OUT, V.COORDINATOR_NOT_AVAILABLE),
    (4, 49, 49), (4, 51, 51), (4, V.NOT_COORDINATOR, V.NOT_COORDINATOR),
])
def test_client_error(version, code, seen):
    assert V.client_error(version, code) == seen


def _resp(error=0, partition=3, code=0):
    return AddPartitionsToTxnResponse(error_code=error, results_by_transaction=[AddPartitionsToTxnResult(
        transactional_id="tx", topic_results=[AddPartitionsToTxnTopicResult(name=V.OFFSETS_TOPIC, results_by_partition=[
            AddPartitionsToTxnPartitionResult(partition_index=partition, partition_error_code=code)])])])


class FakeConn:
    def __init__(self, max_version):
        self.max_version = max_version

    def version_for(self, api_key, wanted):
        return min(wanted, self.max_version)


class FakeEnlister:
    """The enlister's helpers verify() uses, answering from a script."""

    def __init__(self, answers, max_version=5):
        self.answers, self.conn, self._coordinator, self.sent, self.finds = list(answers), FakeConn(max_version), {}, [], 0

    async def _coordinator_of(self, transactional_id):
        self.finds += 1
        self._coordinator.setdefault(transactional_id, 1)
        return 1

    async def call(self, node, api_key, build):
        self.sent.append(build(self.conn))
        return self.answers.pop(0)


def run(enlister, version=3, txn="tx", group="g", partitions=50):
    return asyncio.run(V.verify(enlister, version, txn, 42, 0, group, partitions))


def test_verify_only_request_for_the_groups_offsets_partition():
    e = FakeEnlister([_resp(partition=3, code=49)])
    assert run(e) == 49
    (v, body), = e.sent
    (t,) = body.transactions
    assert v == 5 and t.verify_only and (t.transactional_id, t.producer_id, t.producer_epoch) == ("tx", 42, 0)
    assert [(x.name, x.partitions) for x in t.topics] == [(V.OFFSETS_TOPIC, [3])]    # "g" -> 103 % 50


def test_a_stale_coordinator_is_asked_again_then_its_answer_passed_on():
    e = FakeEnlister([_resp(code=V.NOT_COORDINATOR), _resp(code=0)])
    assert run(e) == 0 and e.finds == 2
    e = FakeEnlister([_resp(code=V.NOT_COORDINATOR)] * V.ATTEMPTS)
    assert run(e) == V.NOT_COORDINATOR


def test_unverified_where_the_broker_would_not_or_kshim_cannot_ask():
    assert run(FakeEnlister([_resp(error=V.CLUSTER_AUTHORIZATION_FAILED)])) is V.SKIP
    assert run(FakeEnlister([], max_version=3)) is V.SKIP
    assert run(FakeEnlister([]), partitions=None) is V.SKIP
    assert run(FakeEnlister([]), txn="") == V.INVALID_REQUEST      # handleVerifyPartitionsInTransaction


def test_refused_answer_keeps_the_partitions_kafkaapis_refused_first():
    req = TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=1, producer_epoch=0, topics=[
        TxnOffsetCommitRequestTopic(name=n, partitions=[TxnOffsetCommitRequestPartition(partition_index=p)
                                                        for p in ps]) for n, ps in (("t", [0, 7]), ("nope", [0]))])
    body = txn_commit_refused(TopicCatalog({"t": 1}), req, 5, 49)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics] == [
        ("t", [(7, 3), (0, 49)]), ("nope", [(0, 3)])]
