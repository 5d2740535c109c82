"""Which TxnOffsetCommit kshim enlists in the transaction before its coordinator sees it
(shim/groupservice/transactions.py `enlists`): one naming a partition the metadata knows, by name up to v5
and by topic id from v6 (KIP-1319; the Java client 4.4 sends v6: offsets not enlisted leave the
transaction holding nothing, and its abort writes no marker). The same against the broker:
testsuite/groups/test_transaction_outcomes.py (the Java client)."""

from __future__ import annotations

import uuid

from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)
from shim.coordinator.metadata import TopicCatalog, TopicInfo
from shim.groupservice.transactions import Transactions

TOPIC_ID = uuid.UUID(int=7)


class _Runtime:
    def __init__(self):
        self.topics = TopicCatalog()
        self.topics.put(TopicInfo("t", TOPIC_ID, 2))


def _req(group: str, name: str, topic_id, partition: int) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(transactional_id="x", group_id=group, producer_id=1, producer_epoch=0, topics=[
        TxnOffsetCommitRequestTopic(name=name, topic_id=topic_id, partitions=[
            TxnOffsetCommitRequestPartition(partition_index=partition, committed_offset=1)])])


def test_by_name_before_v6_and_by_topic_id_from_v6():
    t = Transactions(None, _Runtime(), None)
    assert t.enlists(_req("g", "t", None, 1), 5)
    assert not t.enlists(_req("g", "t", None, 2), 5)                  # no such partition
    assert not t.enlists(_req("g", "other", None, 0), 4)
    assert t.enlists(_req("g", "", TOPIC_ID, 0), 6)                   # v6: the name is empty
    assert not t.enlists(_req("g", "t", uuid.UUID(int=8), 0), 6)      # an unknown topic id
    assert not t.enlists(_req("", "", TOPIC_ID, 0), 6)                # no group id: refused first
