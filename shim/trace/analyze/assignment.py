"""ConsumerProtocolAssignment bytes (the `assignment` of SyncGroup, base64 in a trace's JSON bodies)
decoded into topic-partitions with kcodec's generated codec.

The consumer protocol prefixes the struct with its int16 version (Kafka's ConsumerProtocol);
versions above the newest known one are read as the newest (a newer version only adds fields at
the end) - the coordinator's reader (shim/coordinator/consumer/embedded.py). Bytes that are not a
consumer assignment (another protocol type, truncated data) give None.
"""

from __future__ import annotations

import base64
import binascii
import struct

from kcodec.generated.consumer_protocol_assignment import ConsumerProtocolAssignment

from ...coordinator.consumer.embedded import Malformed, assignment


def decode_assignment(data: bytes) -> list[str] | None:
    """Sorted "topic-partition" names of an assignment, [] for an empty one, None if undecodable."""
    if not data:
        return []
    try:
        msg = assignment(data)
    except Malformed:
        return None
    return sorted(f"{tp.topic}-{p}" for tp in msg.assigned_partitions for p in tp.partitions)


def decode_b64(text: str | None) -> list[str] | None:
    """The same for the base64 text of a JSON body (None: no assignment in the body)."""
    if text is None:
        return None
    try:
        return decode_assignment(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return None


def decode_hex(text: str | None) -> list[str] | None:
    """The same for the hex text of a coordinator `assignment` event."""
    if text is None:
        return None
    try:
        return decode_assignment(bytes.fromhex(text))
    except ValueError:
        return None


def encode_assignment(partitions: dict[str, list[int]], version: int = 0) -> bytes:
    """The wire bytes of an assignment (used by scripts/gen-trace and the tests' hand-built traces)."""
    from kcodec.generated.consumer_protocol_assignment import TopicPartition
    msg = ConsumerProtocolAssignment(assigned_partitions=[TopicPartition(topic=t, partitions=list(ps))
                                                          for t, ps in partitions.items()])
    return struct.pack(">h", version) + msg.encode(version)
