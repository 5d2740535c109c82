"""The order of the Scala maps Kafka 3.9's group coordinator answers from: the partitions of an
OffsetCommit or TxnOffsetCommit answer (below), OffsetDelete's (an immutable Map of TopicPartition) and
DeleteGroups' groups (a mutable.Map of group ids).

GroupCoordinatorAdapter.commitOffsets (and commitTransactionalOffsets) collects the request's partitions
into a Scala 2.13 `mutable.HashMap[TopicIdPartition, OffsetAndMetadata]`, hands `partitions.toMap` to
GroupCoordinator.handleCommitOffsets, and every answer (GroupMetadataManager.storeOffsets, the
validation errors) maps that immutable map's keys to an error in the same order. The adapter's callback
then adds a topic at its first partition. So the order is the iteration order of:
- `mutable.HashMap` (scala.collection.mutable.HashMap): a table of 16 buckets, doubled when an insert
  finds size + 1 >= 0.75 x buckets; the bucket is `h & (n - 1)` of `h = hashCode ^ (hashCode >>> 16)`;
  a bucket's entries sorted by that hash, a new key after those of equal hash;
- `toMap` (scala.collection.immutable.Map.from): up to four entries a Map1..Map4 in that order; more, a
  CHAMP `immutable.HashMap`, iterated node by node (a node's own entries by their 5-bit hash fragment,
  then its sub-nodes in fragment order, depth first) over `Hashing.improve(hashCode)`; keys whose whole
  hashes collide stay in insertion order.
The hash codes are Java's: TopicIdPartition (topic id Uuid.ZERO_UUID), TopicPartition, String.
"""

from __future__ import annotations

from typing import Hashable, Iterable, TypeVar

from .assignors.javaorder import java_string_hash

K = TypeVar("K", bound=Hashable)
_M32 = 0xFFFFFFFF


def _i32(x: int) -> int:
    x &= _M32
    return x - (1 << 32) if x & 0x80000000 else x


def topic_id_partition_hash(topic: str, partition: int) -> int:
    """TopicIdPartition.hashCode with topic id Uuid.ZERO_UUID (hash 0): 31 * (31 + 0) + the
    TopicPartition's hash, which is 31 * (31 * 1 + partition) + topic.hashCode()."""
    return _i32(31 * 31 + topic_partition_hash(topic, partition))


def _mutable_order(keys: list[tuple[K, int]]) -> list[K]:
    """Iteration order of a scala.collection.mutable.HashMap filled with (key, hashCode) in order."""
    table, size, seen = 16, 0, {}
    for key, code in keys:
        if size + 1 >= int(table * 0.75):
            table *= 2
        if key not in seen:
            h = _i32(code ^ ((code & _M32) >> 16))
            seen[key] = (h, len(seen))
            size += 1
    return [k for k, _ in sorted(seen.items(), key=lambda kv: (kv[1][0] & (table - 1), kv[1][0], kv[1][1]))]


def _improve(code: int) -> int:
    """scala.collection.Hashing.improve, as unsigned 32 bits."""
    h = (code + ~(code << 9)) & _M32
    h ^= h >> 14
    h = (h + (h << 4)) & _M32
    return h ^ (h >> 10)


def _champ_order(keys: list[tuple[K, int]], shift: int = 0) -> list[K]:
    """Iteration order of a CHAMP immutable.HashMap holding these (key, improved hash): a node's single
    entries first (by fragment), then each fragment's sub-node, depth first."""
    if shift >= 35:
        return [k for k, _ in keys]      # a HashCollisionMapNode: insertion order
    by_fragment: dict[int, list[tuple[K, int]]] = {}
    for key, h in keys:
        by_fragment.setdefault((h >> shift) & 31, []).append((key, h))
    out = [group[0][0] for frag, group in sorted(by_fragment.items()) if len(group) == 1]
    for frag, group in sorted(by_fragment.items()):
        if len(group) > 1:
            out.extend(_champ_order(group, shift + 5))
    return out


def scala_commit_order(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a commit request, in the order Kafka 3.9's coordinator answers
    them (duplicates once)."""
    keyed = [((t, p), topic_id_partition_hash(t, p)) for t, p in partitions]
    codes = dict(keyed)
    return immutable_map_order([(k, codes[k]) for k in _mutable_order(keyed)])


def immutable_map_order(keys: list[tuple[K, int]]) -> list[K]:
    """Iteration order of a scala.collection.immutable.Map built by adding these (key, hashCode) in
    order (`toMap`, `++`): insertion order up to four keys, else the CHAMP order."""
    distinct = dict(keys)
    if len(distinct) <= 4:
        return list(distinct)
    return _champ_order([(k, _improve(code)) for k, code in distinct.items()])


def topic_partition_hash(topic: str, partition: int) -> int:
    """TopicPartition.hashCode: 31 * (31 * 1 + partition) + topic.hashCode()."""
    return _i32(31 * (31 + partition) + _i32(java_string_hash(topic)))


def scala_commit_topics(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    """The answer's topics as GroupCoordinatorAdapter's callback builds them: in that order, a topic
    added at its first partition, each partition once."""
    topics: dict[str, list[int]] = {}
    for topic, partition in scala_commit_order(partitions):
        topics.setdefault(topic, []).append(partition)
    return list(topics.items())


def scala_string_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a scala.collection.mutable.HashMap[String, _] filled with these keys in order
    (GroupCoordinator.handleDeleteGroups' `groupErrors`)."""
    return _mutable_order([(k, _i32(java_string_hash(k))) for k in keys])
