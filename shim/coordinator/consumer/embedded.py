"""The embedded consumer protocol of classic members (Java's ConsumerProtocol): a JoinGroup
protocol's metadata is an int16 version then a ConsumerProtocolSubscription at that version, a
SyncGroup assignment an int16 version then a ConsumerProtocolAssignment. As the Java client and the
broker do, a version above the newest known is read as the newest and trailing bytes are ignored; a
negative version or truncated bytes are malformed (`Malformed`)."""

from __future__ import annotations

import struct

from kcodec.generated.consumer_protocol_assignment import ConsumerProtocolAssignment
from kcodec.generated.consumer_protocol_assignment import TopicPartition as AssignedTopic
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from ..assignors.javaorder import hash_set_order, java_int_set_order

_I16 = struct.Struct(">h")
EMPTY_ASSIGNMENT = b""


class Malformed(ValueError):
    """Bytes that do not parse with the consumer protocol."""


def _read(cls, data: bytes):
    data = bytes(data)
    if len(data) < 2:
        raise Malformed("no version")
    version = _I16.unpack_from(data)[0]
    lo, hi = cls.VALID_VERSIONS
    if version < lo:
        raise Malformed(f"unsupported version {version}")
    try:
        obj, _ = cls.decode_from(data, 2, min(version, hi))
    except Exception as e:                  # kcodec DecodeError and friends
        raise Malformed(str(e)) from None
    return version, obj


def version_of(metadata: bytes) -> int:
    """The version a subscription was written at (Java's ConsumerProtocol.deserializeVersion)."""
    if len(metadata) < 2:
        raise Malformed("no version")
    return _I16.unpack_from(bytes(metadata))[0]


def subscription(metadata: bytes) -> ConsumerProtocolSubscription:
    return _read(ConsumerProtocolSubscription, metadata)[1]


def assignment(data: bytes) -> ConsumerProtocolAssignment:
    return _read(ConsumerProtocolAssignment, data)[1]


def serialize_assignment(partitions: dict[str, list[int]], version: int) -> bytes:
    """{topic name: partitions} as assignment bytes at `version` (clamped as Java clamps it), in the
    given order (`named` gives the broker's)."""
    lo, hi = ConsumerProtocolAssignment.VALID_VERSIONS
    if version < lo:
        raise Malformed(f"unsupported version {version}")
    version = min(version, hi)
    body = ConsumerProtocolAssignment(
        assigned_partitions=[AssignedTopic(topic=t, partitions=list(ps)) for t, ps in partitions.items()],
        user_data=None).encode(version)
    return _I16.pack(version) + body


def named(c, parts: dict) -> dict[str, list[int]]:
    """{topic id: partitions} -> {topic name: partitions} for the topics the catalog knows, in the
    order the broker serializes them: Utils.toAssignmentWithoutEpochs puts them in a HashMap<Uuid,
    HashSet<Integer>>, which Utils.toConsumerProtocolAssignment iterates."""
    out = {}
    for tid in hash_set_order(parts):
        info, ps = c.topics.topic(tid), parts[tid]
        if info is not None and ps:
            out[info.name] = java_int_set_order(ps)
    return out


def by_id(c, topics) -> dict:
    """TopicPartition items (topic name, partitions) -> {topic id: frozenset} for known topics (Kafka
    drops topics missing from its metadata image)."""
    out: dict = {}
    for tp in topics or ():
        info = c.topics.get(tp.topic)
        if info is not None:
            out[info.topic_id] = out.get(info.topic_id, frozenset()) | frozenset(tp.partitions)
    return out
