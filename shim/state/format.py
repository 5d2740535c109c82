"""Keys and values of kshim's state topic (docs/state-topic.md is the reference).

Like Kafka's __consumer_offsets, every key and value starts with an int16 version and continues
with fields packed big-endian: int16/int32/int64, strings as int16 length + UTF-8 (-1 = null),
bytes as int32 length + bytes (-1 = null).

    key version 1  offset commit key:   group string, topic string, partition int32
    key version 2  group metadata key:  group string
    key version 3  pending transactional offset key: group string, producer_id int64, topic string,
                                        partition int32
    value version 1 of an offset:       offset int64, leader_epoch int32, metadata string,
                                        commit_timestamp int64, expire_timestamp int64 (-1 = none)
    value version 1 of a group:         protocol_type string?, generation int32, protocol string?,
                                        leader string?, state_timestamp int64, members int32 count,
                                        then per member: member_id string, instance_id string?,
                                        client_id string, client_host string,
                                        rebalance_timeout int32, session_timeout int32,
                                        subscription bytes, assignment bytes
    value version 1 of a pending transactional offset: producer_epoch int16, offset int64,
                                        leader_epoch int32, metadata string, commit_timestamp int64,
                                        timeout_ms int32
A null value is a tombstone (the key's group or offset is deleted).
"""

from __future__ import annotations

import struct

from ..coordinator.group import java_string_hash
from ..coordinator.records import (GroupMetadataRecord, GroupTombstone, MemberRecord, OffsetRecord, OffsetTombstone,
                                   TxnOffsetRecord, TxnOffsetTombstone)

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
TXN_OFFSET_KEY_VERSION = 3
TXN_OFFSET_VALUE_VERSION = 1
OFFSET_VALUE_VERSION = 1
GROUP_VALUE_VERSION = 1

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class StateFormatError(ValueError):
    """Bytes of the state topic kshim cannot read (unknown version, truncated)."""


def partition_for(group_id: str, partitions: int) -> int:
    """Java's String.hashCode of the group id, made non-negative with & 0x7fffffff, modulo the
    partition count (Kafka's own partitionFor for __consumer_offsets)."""
    return (java_string_hash(group_id) & 0x7FFFFFFF) % partitions


def group_of(record) -> str:
    return record.group_id


# ---------------------------------------------------------------------- writing
class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i16(self, v: int) -> "_Writer":
        self.parts.append(_I16.pack(v))
        return self

    def i32(self, v: int) -> "_Writer":
        self.parts.append(_I32.pack(v))
        return self

    def i64(self, v: int) -> "_Writer":
        self.parts.append(_I64.pack(v))
        return self

    def string(self, s: str | None) -> "_Writer":
        if s is None:
            return self.i16(-1)
        b = s.encode()
        if len(b) > 0x7FFF:
            raise StateFormatError(f"string of {len(b)} bytes is too long for the state topic")
        self.parts.append(_I16.pack(len(b)) + b)
        return self

    def bytes_(self, b: bytes | None) -> "_Writer":
        if b is None:
            return self.i32(-1)
        self.parts.append(_I32.pack(len(b)) + bytes(b))
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


def offset_key(group_id: str, topic: str, partition: int) -> bytes:
    return _Writer().i16(OFFSET_KEY_VERSION).string(group_id).string(topic).i32(partition).done()


def group_key(group_id: str) -> bytes:
    return _Writer().i16(GROUP_KEY_VERSION).string(group_id).done()


def txn_offset_key(group_id: str, producer_id: int, topic: str, partition: int) -> bytes:
    return (_Writer().i16(TXN_OFFSET_KEY_VERSION).string(group_id).i64(producer_id).string(topic).i32(partition)
            .done())


def encode(record) -> tuple[bytes, bytes | None]:
    """(key, value) of one coordinator record; value None for tombstones."""
    if isinstance(record, OffsetRecord):
        w = _Writer().i16(OFFSET_VALUE_VERSION).i64(record.offset).i32(record.leader_epoch)
        w.string(record.metadata).i64(record.commit_timestamp_ms)
        w.i64(-1 if record.expire_timestamp_ms is None else record.expire_timestamp_ms)
        return offset_key(record.group_id, record.topic, record.partition), w.done()
    if isinstance(record, OffsetTombstone):
        return offset_key(record.group_id, record.topic, record.partition), None
    if isinstance(record, GroupMetadataRecord):
        w = _Writer().i16(GROUP_VALUE_VERSION).string(record.protocol_type).i32(record.generation_id)
        w.string(record.protocol_name).string(record.leader_id).i64(record.state_timestamp_ms)
        w.i32(len(record.members))
        for m in record.members:
            w.string(m.member_id).string(m.instance_id).string(m.client_id).string(m.client_host)
            w.i32(m.rebalance_timeout_ms).i32(m.session_timeout_ms).bytes_(m.subscription).bytes_(m.assignment)
        return group_key(record.group_id), w.done()
    if isinstance(record, GroupTombstone):
        return group_key(record.group_id), None
    if isinstance(record, TxnOffsetRecord):
        w = _Writer().i16(TXN_OFFSET_VALUE_VERSION).i16(record.producer_epoch).i64(record.offset)
        w.i32(record.leader_epoch).string(record.metadata).i64(record.commit_timestamp_ms).i32(record.timeout_ms)
        return txn_offset_key(record.group_id, record.producer_id, record.topic, record.partition), w.done()
    if isinstance(record, TxnOffsetTombstone):
        return txn_offset_key(record.group_id, record.producer_id, record.topic, record.partition), None
    raise StateFormatError(f"no state-topic format for {type(record).__name__}")


# ---------------------------------------------------------------------- reading
class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = memoryview(buf), 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise StateFormatError(f"truncated state record at byte {self.pos}")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def string(self) -> str | None:
        n = self.i16()
        return None if n == -1 else bytes(self._take(n)).decode()

    def bytes_(self) -> bytes | None:
        n = self.i32()
        return None if n == -1 else bytes(self._take(n))


def decode(key: bytes, value: bytes | None):
    """The coordinator record a (key, value) of the state topic stands for."""
    r = _Reader(key)
    kv = r.i16()
    if kv == OFFSET_KEY_VERSION:
        group, topic, partition = r.string() or "", r.string() or "", r.i32()
        if value is None:
            return OffsetTombstone(group, topic, partition)
        v = _Reader(value)
        vv = v.i16()
        if vv != OFFSET_VALUE_VERSION:
            raise StateFormatError(f"offset value version {vv} is unknown (kshim reads {OFFSET_VALUE_VERSION})")
        offset, epoch, metadata, ts, expire = v.i64(), v.i32(), v.string() or "", v.i64(), v.i64()
        return OffsetRecord(group, topic, partition, offset, epoch, metadata, ts, None if expire == -1 else expire)
    if kv == GROUP_KEY_VERSION:
        group = r.string() or ""
        if value is None:
            return GroupTombstone(group)
        v = _Reader(value)
        vv = v.i16()
        if vv != GROUP_VALUE_VERSION:
            raise StateFormatError(f"group value version {vv} is unknown (kshim reads {GROUP_VALUE_VERSION})")
        ptype, gen, proto, leader, ts = v.string(), v.i32(), v.string(), v.string(), v.i64()
        members = tuple(MemberRecord(v.string() or "", v.string(), v.string() or "", v.string() or "", v.i32(),
                                     v.i32(), v.bytes_() or b"", v.bytes_() or b"")
                        for _ in range(v.i32()))
        return GroupMetadataRecord(group, ptype, gen, proto, leader, ts, members)
    if kv == TXN_OFFSET_KEY_VERSION:
        group, pid, topic, partition = r.string() or "", r.i64(), r.string() or "", r.i32()
        if value is None:
            return TxnOffsetTombstone(group, pid, topic, partition)
        v = _Reader(value)
        vv = v.i16()
        if vv != TXN_OFFSET_VALUE_VERSION:
            raise StateFormatError(f"transactional offset value version {vv} is unknown "
                                   f"(kshim reads {TXN_OFFSET_VALUE_VERSION})")
        epoch, offset, leader_epoch = v.i16(), v.i64(), v.i32()
        metadata, ts, timeout = v.string() or "", v.i64(), v.i32()
        return TxnOffsetRecord(group, pid, epoch, topic, partition, offset, leader_epoch, metadata, ts, timeout)
    raise StateFormatError(f"state key version {kv} is unknown")
