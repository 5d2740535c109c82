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

import functools
import struct
from dataclasses import dataclass
import uuid

from ..coordinator.classic_group import java_string_hash
from ..coordinator.metadata import ZERO_UUID
from ..coordinator.state_records import (GroupMetadataRecord, GroupTombstone, MemberRecord, OffsetRecord, OffsetTombstone,
                                   TxnOffsetRecord, TxnOffsetTombstone)

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
TXN_OFFSET_KEY_VERSION = 3
TXN_OFFSET_VALUE_VERSION = 2          # v2 adds the transactional id and the marker floor (v1 still read)
OFFSET_VALUE_VERSION = 2              # v2 adds the topic id (v1 still read)
GROUP_VALUE_VERSION = 1

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class StateFormatError(ValueError):
    """Bytes of the state topic kshim cannot read (unknown version, truncated)."""


def partition_for(group_id: str, partitions: int) -> int:
    """Java's String.hashCode of the group id, made non-negative with & 0x7fffffff, modulo the
    partition count: kshim's state topic's own rule (Kafka's partitionFor for __consumer_offsets uses
    Utils.abs instead, which differs for negative hashes: shim/offsets_reader.py; the state topic keeps
    its rule so that existing state stays in its partition)."""
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
        self.parts.append(_string(s))
        return self

    def bytes_(self, b: bytes | None) -> "_Writer":
        if b is None:
            return self.i32(-1)
        self.parts.append(_I32.pack(len(b)) + bytes(b))
        return self

    def uuid(self, u: "uuid.UUID | None") -> "_Writer":
        self.parts.append((u or ZERO_UUID).bytes)
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


def _string(s: str | None) -> bytes:
    """int16 length + UTF-8 (-1 = null)."""
    if s is None:
        return _I16.pack(-1)
    b = s.encode()
    if len(b) > 0x7FFF:
        raise StateFormatError(f"string of {len(b)} bytes is too long for the state topic")
    return _I16.pack(len(b)) + b


@functools.lru_cache(maxsize=1 << 16)    # the hot path commits the same keys again and again
def offset_key(group_id: str, topic: str, partition: int) -> bytes:
    return _Writer().i16(OFFSET_KEY_VERSION).string(group_id).string(topic).i32(partition).done()


_ZERO_UUID_BYTES = ZERO_UUID.bytes


_OFFSET_VALUE = struct.Struct(">hqi")         # version, offset, leader epoch
_OFFSET_VALUE_TAIL = struct.Struct(">qq16s")  # commit timestamp, expire timestamp, topic id


# the same layout with empty metadata (int16 length 0), packed at once: most commits carry none
_OFFSET_VALUE_NO_METADATA = struct.Struct(">hqihqq16s")


def group_key(group_id: str) -> bytes:
    return _Writer().i16(GROUP_KEY_VERSION).string(group_id).done()


def txn_offset_key(group_id: str, producer_id: int, topic: str, partition: int) -> bytes:
    return (_Writer().i16(TXN_OFFSET_KEY_VERSION).string(group_id).i64(producer_id).string(topic).i32(partition)
            .done())


def encode(record) -> tuple[bytes, bytes | None]:
    """(key, value) of one coordinator record; value None for tombstones."""
    if type(record) is OffsetRecord:        # the hot path (every committed partition): packed right here
        key = offset_key(record.group_id, record.topic, record.partition)
        expire = record.expire_timestamp_ms
        expire = -1 if expire is None else expire
        # the topic id: UUID.bytes (and the UUID.__hash__/__eq__ of a cache keyed by UUIDs) are
        # Python-level; its 128-bit int packs to the same 16 big-endian bytes at C speed
        tid = record.topic_id
        tid = _ZERO_UUID_BYTES if tid is None else tid.int.to_bytes(16, "big")
        if not record.metadata and record.metadata is not None:
            return key, _OFFSET_VALUE_NO_METADATA.pack(OFFSET_VALUE_VERSION, record.offset, record.leader_epoch, 0,
                                                       record.commit_timestamp_ms, expire, tid)
        return key, (_OFFSET_VALUE.pack(OFFSET_VALUE_VERSION, record.offset, record.leader_epoch)
                     + _string(record.metadata) + _OFFSET_VALUE_TAIL.pack(record.commit_timestamp_ms, expire, tid))
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
        w.string(record.transactional_id).i64(record.marker_floor)
        return txn_offset_key(record.group_id, record.producer_id, record.topic, record.partition), w.done()
    if isinstance(record, TxnOffsetTombstone):
        return txn_offset_key(record.group_id, record.producer_id, record.topic, record.partition), None
    return _encode_consumer(record)          # keys 5-8: KIP-848 consumer groups


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

    def uuid(self) -> "uuid.UUID | None":
        u = uuid.UUID(bytes=bytes(self._take(16)))
        return None if u == ZERO_UUID else u

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
        if vv not in (1, OFFSET_VALUE_VERSION):
            raise StateFormatError(f"offset value version {vv} is unknown (kshim reads 1-{OFFSET_VALUE_VERSION})")
        offset, epoch, metadata, ts, expire = v.i64(), v.i32(), v.string() or "", v.i64(), v.i64()
        topic_id = v.uuid() if vv >= 2 else None
        return OffsetRecord(group, topic, partition, offset, epoch, metadata, ts, None if expire == -1 else expire,
                            topic_id)
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
        if vv not in (1, TXN_OFFSET_VALUE_VERSION):
            raise StateFormatError(f"transactional offset value version {vv} is unknown "
                                   f"(kshim reads 1-{TXN_OFFSET_VALUE_VERSION})")
        epoch, offset, leader_epoch = v.i16(), v.i64(), v.i32()
        metadata, ts, timeout = v.string() or "", v.i64(), v.i32()
        tid, floor = (v.string(), v.i64()) if vv >= 2 else (None, -1)
        return TxnOffsetRecord(group, pid, epoch, topic, partition, offset, leader_epoch, metadata, ts, timeout, tid,
                               floor)
    if CONSUMER_GROUP_KEY_VERSION <= kv <= CONSUMER_CURRENT_KEY_VERSION:
        return _decode_consumer(kv, r, value)
    raise StateFormatError(f"state key version {kv} is unknown")


# ---------------------------------------------------------------------- scale-out (docs/state-topic.md)
# Several kshim instances split the partitions; each writes, when it takes a partition, an ownership
# marker (key version 4, one key per epoch so compaction never removes one) and tags every record it
# writes with that epoch in a record header. Replay ignores a tagged record whose epoch is older than
# a marker that precedes it in the partition (a slow old owner's write). Untagged records (one kshim,
# or written before scale-out) are always applied.
MARKER_KEY_VERSION = 4
MARKER_VALUE_VERSION = 1
EPOCH_HEADER = "kshim.epoch"


@dataclass(frozen=True)
class OwnerMarker:
    """key v4: partition int32, epoch int32; value v1: owner member id string, host string, port int32."""
    partition: int
    epoch: int
    owner: str
    host: str
    port: int


def encode_marker(m: OwnerMarker) -> tuple[bytes, bytes]:
    key = _Writer().i16(MARKER_KEY_VERSION).i32(m.partition).i32(m.epoch).done()
    return key, _Writer().i16(MARKER_VALUE_VERSION).string(m.owner).string(m.host).i32(m.port).done()


def decode_marker(key: bytes, value: bytes | None) -> OwnerMarker | None:
    """The marker a key/value stands for, None when the key is not a marker key."""
    r = _Reader(key)
    if r.i16() != MARKER_KEY_VERSION:
        return None
    partition, epoch = r.i32(), r.i32()
    if value is None:
        return OwnerMarker(partition, epoch, "", "", -1)
    v = _Reader(value)
    vv = v.i16()
    if vv != MARKER_VALUE_VERSION:
        raise StateFormatError(f"ownership marker value version {vv} is unknown (kshim reads {MARKER_VALUE_VERSION})")
    return OwnerMarker(partition, epoch, v.string() or "", v.string() or "", v.i32())


def epoch_header(epoch: int) -> tuple[str, bytes]:
    return EPOCH_HEADER, _I32.pack(epoch)


def epoch_of(headers) -> int | None:
    """The epoch tag among a record's headers (kcodec.records.Header items), None when untagged."""
    for h in headers or ():
        if h.key == EPOCH_HEADER and h.value is not None and len(h.value) == 4:
            return _I32.unpack(h.value)[0]
    return None


class Fence:
    """Replay filter of one partition: feed records in log order; `keep` says whether to apply one."""

    def __init__(self) -> None:
        self.epoch = -1          # newest marker epoch seen so far
        self.owner = ""

    def marker(self, m: OwnerMarker) -> None:
        if m.epoch > self.epoch:
            self.epoch, self.owner = m.epoch, m.owner

    def keep(self, tag: int | None) -> bool:
        return tag is None or tag >= self.epoch


# ---------------------------------------------------------------------- KIP-848 consumer groups
# key 5 group: group string -> value 1: group_epoch int32, assignment_epoch int32, assignment_timestamp int64
# key 6 member: group, member_id -> value 1: instance_id string?, rack_id string?, client_id string,
#       client_host string, rebalance_timeout int32, server_assignor string?, names int32 count + strings,
#       regex string?; value 2 (members of the classic protocol, KIP-848 online migration) adds: session_timeout int32,
#       protocols int32 count, per protocol name string + metadata bytes
# key 7 target assignment: group, member_id -> value 1: topics int32, per topic uuid (16 bytes),
#       partitions int32 count + int32s
# key 8 current assignment: group, member_id -> value 1: member_epoch int32, previous_epoch int32, state int16,
#       assigned: topics int32, per topic uuid + count int32 + (partition int32, assignment epoch int32)...,
#       pending revocation: topics int32, per topic uuid + count int32 + partition int32s
CONSUMER_GROUP_KEY_VERSION, CONSUMER_MEMBER_KEY_VERSION = 5, 6
CONSUMER_TARGET_KEY_VERSION, CONSUMER_CURRENT_KEY_VERSION = 7, 8
CONSUMER_VALUE_VERSION = 1
CLASSIC_MEMBER_VALUE_VERSION = 2      # key 6 of a classic-protocol member (v1 is still written otherwise)
CURRENT_VALUE_VERSION = 2             # key 8: partitions pending revocation with their assignment epochs (v1 read)


def _consumer_key(version: int, group_id: str, member_id: str | None = None) -> bytes:
    w = _Writer().i16(version).string(group_id)
    if member_id is not None:
        w.string(member_id)
    return w.done()


def _topic_partitions(w: "_Writer", items, with_epochs: bool = False) -> "_Writer":
    """int32 count, then per topic: topic id (16 bytes), int32 count, partitions (int32, or int32
    partition + int32 assignment epoch)."""
    w.i32(len(items))
    for tid, parts in items:
        w.uuid(tid).i32(len(parts))
        for p in parts:
            if with_epochs:
                w.i32(p[0]).i32(p[1])
            else:
                w.i32(p)
    return w


def _encode_consumer(record):
    from ..coordinator import state_records as R
    if isinstance(record, R.ConsumerGroupRecord):
        w = _Writer().i16(CONSUMER_VALUE_VERSION).i32(record.group_epoch).i32(record.assignment_epoch)
        w.i64(record.assignment_timestamp_ms)
        return _consumer_key(CONSUMER_GROUP_KEY_VERSION, record.group_id), w.done()
    if isinstance(record, R.ConsumerGroupTombstone):
        return _consumer_key(CONSUMER_GROUP_KEY_VERSION, record.group_id), None
    if isinstance(record, R.ConsumerMemberRecord):
        classic = record.classic
        w = _Writer().i16(CONSUMER_VALUE_VERSION if classic is None else CLASSIC_MEMBER_VALUE_VERSION)
        w.string(record.instance_id).string(record.rack_id)
        w.string(record.client_id).string(record.client_host).i32(record.rebalance_timeout_ms)
        w.string(record.server_assignor).i32(len(record.subscribed_topic_names))
        for n in record.subscribed_topic_names:
            w.string(n)
        w.string(record.subscribed_topic_regex)
        if classic is not None:
            w.i32(classic[0]).i32(len(classic[1]))
            for name, meta in classic[1]:
                w.string(name).bytes_(meta)
        return _consumer_key(CONSUMER_MEMBER_KEY_VERSION, record.group_id, record.member_id), w.done()
    if isinstance(record, R.ConsumerMemberTombstone):
        return _consumer_key(CONSUMER_MEMBER_KEY_VERSION, record.group_id, record.member_id), None
    if isinstance(record, R.ConsumerTargetRecord):
        w = _topic_partitions(_Writer().i16(CONSUMER_VALUE_VERSION), record.assignment)
        return _consumer_key(CONSUMER_TARGET_KEY_VERSION, record.group_id, record.member_id), w.done()
    if isinstance(record, R.ConsumerTargetTombstone):
        return _consumer_key(CONSUMER_TARGET_KEY_VERSION, record.group_id, record.member_id), None
    if isinstance(record, R.ConsumerCurrentRecord):
        w = _Writer().i16(CURRENT_VALUE_VERSION).i32(record.member_epoch).i32(record.previous_member_epoch)
        w.i16(record.state)
        _topic_partitions(w, record.assigned, with_epochs=True)
        _topic_partitions(w, record.pending_revocation, with_epochs=True)
        return _consumer_key(CONSUMER_CURRENT_KEY_VERSION, record.group_id, record.member_id), w.done()
    if isinstance(record, R.ConsumerCurrentTombstone):
        return _consumer_key(CONSUMER_CURRENT_KEY_VERSION, record.group_id, record.member_id), None
    raise StateFormatError(f"no state-topic format for {type(record).__name__}")


def _decode_consumer(kv: int, r: "_Reader", value: bytes | None):
    import uuid
    from ..coordinator import state_records as R
    group = r.string() or ""
    member = (r.string() or "") if kv != CONSUMER_GROUP_KEY_VERSION else None
    if value is None:
        return {CONSUMER_GROUP_KEY_VERSION: lambda: R.ConsumerGroupTombstone(group),
                CONSUMER_MEMBER_KEY_VERSION: lambda: R.ConsumerMemberTombstone(group, member),
                CONSUMER_TARGET_KEY_VERSION: lambda: R.ConsumerTargetTombstone(group, member),
                CONSUMER_CURRENT_KEY_VERSION: lambda: R.ConsumerCurrentTombstone(group, member)}[kv]()
    v = _Reader(value)
    vv = v.i16()
    if vv != CONSUMER_VALUE_VERSION and not (kv == CONSUMER_MEMBER_KEY_VERSION and vv == CLASSIC_MEMBER_VALUE_VERSION
                                             or kv == CONSUMER_CURRENT_KEY_VERSION and vv == CURRENT_VALUE_VERSION):
        raise StateFormatError(f"consumer group value version {vv} (key {kv}) is unknown "
                               f"(kshim reads {CONSUMER_VALUE_VERSION})")

    def tid() -> uuid.UUID:
        return uuid.UUID(bytes=bytes(v._take(16)))
    if kv == CONSUMER_GROUP_KEY_VERSION:
        return R.ConsumerGroupRecord(group, v.i32(), v.i32(), v.i64())
    if kv == CONSUMER_MEMBER_KEY_VERSION:
        instance, rack, client_id, host, timeout, assignor = (v.string(), v.string(), v.string() or "",
                                                               v.string() or "", v.i32(), v.string())
        names = tuple(v.string() or "" for _ in range(v.i32()))
        regex = v.string()
        classic = None
        if vv == CLASSIC_MEMBER_VALUE_VERSION:
            session = v.i32()
            classic = (session, tuple((v.string() or "", v.bytes_() or b"") for _ in range(v.i32())))
        return R.ConsumerMemberRecord(group, member, instance, rack, client_id, host, timeout, assignor, names,
                                      regex, classic)
    if kv == CONSUMER_TARGET_KEY_VERSION:
        return R.ConsumerTargetRecord(group, member, tuple((tid(), tuple(v.i32() for _ in range(v.i32())))
                                                           for _ in range(v.i32())))
    epoch, prev, state = v.i32(), v.i32(), v.i16()
    assigned = tuple((tid(), tuple((v.i32(), v.i32()) for _ in range(v.i32()))) for _ in range(v.i32()))
    if vv >= CURRENT_VALUE_VERSION:
        pending = tuple((tid(), tuple((v.i32(), v.i32()) for _ in range(v.i32()))) for _ in range(v.i32()))
    else:       # v1 had no epochs: the member epoch, as Utils.assignmentFromTopicPartitions without AssignmentEpochs
        pending = tuple((tid(), tuple((v.i32(), epoch) for _ in range(v.i32()))) for _ in range(v.i32()))
    return R.ConsumerCurrentRecord(group, member, epoch, prev, state, assigned, pending)
