"""The shape of a (Txn)OffsetCommit answer: which partition comes where.

KafkaApis.handleOffsetCommitRequest / handleTxnOffsetCommitRequest check every topic and partition
against the metadata cache before the group coordinator sees the commit. The partitions they refuse
(UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION) go into the answer first,
through OffsetCommitResponse.Builder / TxnOffsetCommitResponse.Builder (`addPartition(s)`: one topic
per name, or per topic id for OffsetCommit v10+, created on first use); the coordinator's answer for
the others is merged after them (`Builder.merge`): a topic already present gets the coordinator's
partitions appended, a new one is added. With nothing refused the coordinator's answer is taken as
it is. The coordinator only sees the topics that kept a partition, each with those partitions.
"""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


class CommitAnswer:
    """OffsetCommitResponse.Builder / TxnOffsetCommitResponse.Builder: `refuse` = addPartition,
    `merge` = merge of the coordinator's topics, `topics` = the answer."""

    def __init__(self, new_topic: Callable[[object], T], new_partition: Callable[[int, int], object]):
        self._new_topic = new_topic            # request topic -> empty answer topic
        self._new_partition = new_partition    # (partition index, error) -> answer partition
        self.topics: list = []
        self._by_key: dict[Hashable, object] = {}

    def refuse(self, key: Hashable, request_topic, partition_index: int, error: int) -> None:
        topic = self._by_key.get(key)
        if topic is None:
            topic = self._by_key[key] = self._new_topic(request_topic)
            self.topics.append(topic)
        topic.partitions.append(self._new_partition(partition_index, error))

    def merge(self, coordinator_topics: list, key_of: Callable[[object], Hashable]) -> list:
        if not self.topics:
            self.topics = list(coordinator_topics)
            return self.topics
        for topic in coordinator_topics:
            key = key_of(topic)
            existing = self._by_key.get(key)
            if existing is None:
                self.topics.append(topic)
                self._by_key[key] = topic
            else:
                existing.partitions.extend(topic.partitions)
        return self.topics
