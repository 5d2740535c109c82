"""The group coordinator's records (kcodec.coordinator_records): every record type's key and every
value version round-trip through the __consumer_offsets layout (int16 record type + key at v0; int16
value version + value), known bytes written out by hand from the schemas decode as expected, and
unknown types/versions raise the named errors (Kafka's CoordinatorRecordSerde behaviour)."""
from __future__ import annotations

import pickle
import uuid

import pytest

from kcodec import coordinator_records as cr
from kcodec.coordinator_records import UnknownRecordType, UnknownRecordVersion
from kcodec.errors import DecodeError, EncodeError
from kcodec.generated._coordinator_records import KEYS, NAMES, VALUE_VERSIONS, VALUES
from kcodec.generated.consumer_group_current_member_assignment_value import (
    ConsumerGroupCurrentMemberAssignmentValue, TopicPartitions)
from kcodec.generated.group_metadata_key import GroupMetadataKey
from kcodec.generated.group_metadata_value import GroupMetadataValue, MemberMetadata
from kcodec.generated.legacy_offset_commit_value import LegacyOffsetCommitValue
from kcodec.generated.offset_commit_key import OffsetCommitKey
from kcodec.generated.offset_commit_value import OffsetCommitValue

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")


def h(s: str) -> bytes:
    return bytes.fromhex("".join(s.split()))


def filled(cls, v: int, seed: int = 1):
    """An object of cls with a non-default value in every field that exists at version v."""
    kwargs = {}
    for i, f in enumerate(cls._FIELDS, start=seed):
        if f.vlo <= v <= f.vhi:
            kwargs[f.attr] = _value(f.kind, f.elem, f.cls, v, i)
    return cls(**kwargs)


def _value(kind, elem, cls, v, i):
    if kind == "array":
        return [_value(elem, None, cls, v, i + k) for k in (0, 1)]
    if kind == "struct":
        return filled(cls, v, i * 10)
    return {"bool": True, "int8": i % 100, "int16": 300 + i, "uint16": 40000 + i, "int32": 70000 + i,
            "uint32": 2**31 + i, "int64": 2**40 + i,
            "float64": i + 0.5, "uuid": uuid.UUID(int=i), "string": f"s{i}",
            "bytes": bytes([i % 256, 7]), "records": b""}[kind]


def test_index_pairs_every_record_type():
    assert set(KEYS) == set(VALUES) == set(VALUE_VERSIONS) == set(NAMES)
    assert len(KEYS) + len(VALUES) == 44
    assert (NAMES[0], NAMES[1], NAMES[2], NAMES[3]) == (
        "LegacyOffsetCommit", "OffsetCommit", "GroupMetadata", "ConsumerGroupMetadata")
    assert (KEYS[2], VALUES[2], VALUE_VERSIONS[2]) == (GroupMetadataKey, GroupMetadataValue, (0, 4))
    # the legacy offset commit type has its own value schema (GroupCoordinatorRecordSerde via
    # CoordinatorRecordType: the value with the same apiKey), version 0 only
    assert (VALUES[0], VALUE_VERSIONS[0]) == (LegacyOffsetCommitValue, (0, 0))
    assert (VALUES[1], VALUE_VERSIONS[1]) == (OffsetCommitValue, (0, 4))
    for t in KEYS:
        assert KEYS[t].__name__ == NAMES[t] + "Key" and VALUES[t].__name__ == NAMES[t] + "Value"
        assert KEYS[t].API_KEY == VALUES[t].API_KEY == t
        assert KEYS[t].VALID_VERSIONS == (0, 0) and VALUES[t].VALID_VERSIONS == VALUE_VERSIONS[t]
        assert cr.record_name(t) == NAMES[t]
    assert cr.record_name(9) == "UnknownRecordType(9)"


@pytest.mark.parametrize("record_type", sorted(KEYS), ids=lambda t: NAMES[t])
def test_every_key_round_trips(record_type):
    for key in (KEYS[record_type](), filled(KEYS[record_type], 0)):
        data = cr.encode_key(record_type, key)
        assert data[:2] == record_type.to_bytes(2, "big")
        assert data[2:] == key.encode(0)
        assert cr.decode_key(data) == (record_type, key)
        assert cr.decode_key(memoryview(data)) == (record_type, key)


VALUE_CASES = [(t, v) for t in sorted(VALUES) for v in range(VALUE_VERSIONS[t][0], VALUE_VERSIONS[t][1] + 1)]


@pytest.mark.parametrize("record_type,version", VALUE_CASES, ids=[f"{NAMES[t]}-v{v}" for t, v in VALUE_CASES])
def test_every_value_version_round_trips(record_type, version):
    for value in (VALUES[record_type](), filled(VALUES[record_type], version)):
        data = cr.encode_value(version, value)
        assert data[:2] == version.to_bytes(2, "big")
        assert cr.decode_value(record_type, data) == (version, value)
        assert cr.decode_value(record_type, bytearray(data)) == (version, value)


def _group(version: int) -> GroupMetadataValue:
    return GroupMetadataValue(
        protocol_type="consumer", generation=5, protocol="range", leader="m1",
        current_state_timestamp=1000, members=[
            MemberMetadata(member_id="m1", group_instance_id="i1", client_id="c", client_host="/h",
                           rebalance_timeout=300000, session_timeout=45000, subscription=b"\x01",
                           assignment=b"\x02\x03"),
            MemberMetadata(member_id="m2", group_instance_id=None, client_id="c", client_host="/h",
                           rebalance_timeout=300000, session_timeout=45000, subscription=b"",
                           assignment=b"\x04")])


# GroupMetadataValue v3 (not flexible): int16 string lengths (-1 null), int32 bytes/array lengths
GROUP_V3 = h(
    "0003"                    # value version 3
    "0008 636f6e73756d6572"   # ProtocolType "consumer"
    "00000005"                # Generation 5
    "0005 72616e6765"         # Protocol "range" (nullable string)
    "0002 6d31"               # Leader "m1"
    "00000000000003e8"        # CurrentStateTimestamp 1000 (v2+)
    "00000002"                # Members: 2
    "0002 6d31"               #   MemberId "m1"
    "0002 6931"               #   GroupInstanceId "i1" (v3+, nullable)
    "0001 63"                 #   ClientId "c"
    "0002 2f68"               #   ClientHost "/h"
    "000493e0"                #   RebalanceTimeout 300000 (v1+)
    "0000afc8"                #   SessionTimeout 45000
    "00000001 01"             #   Subscription
    "00000002 0203"           #   Assignment
    "0002 6d32"               #   MemberId "m2"
    "ffff"                    #   GroupInstanceId null
    "0001 63" "0002 2f68" "000493e0" "0000afc8"
    "00000000"                #   Subscription empty
    "00000001 04")            #   Assignment

# the same at v4 (flexible): compact lengths (unsigned varint length + 1, 0 = null), a tagged-field
# section after every struct
GROUP_V4 = h(
    "0004"
    "09 636f6e73756d6572" "00000005" "06 72616e6765" "03 6d31" "00000000000003e8"
    "03"                      # Members: compact array of 2
    "03 6d31" "03 6931" "02 63" "03 2f68" "000493e0" "0000afc8" "02 01" "03 0203" "00"
    "03 6d32" "00" "02 63" "03 2f68" "000493e0" "0000afc8" "01" "02 04" "00"
    "00")                     # the value's tagged fields


@pytest.mark.parametrize("version,data", [(3, GROUP_V3), (4, GROUP_V4)])
def test_group_metadata_value_known_bytes(version, data):
    got = cr.decode_value(2, data)
    assert got == (version, _group(version))
    m1, m2 = got[1].members
    assert (m1.group_instance_id, m1.assignment, m2.group_instance_id, m2.assignment) == (
        "i1", b"\x02\x03", None, b"\x04")
    assert cr.encode_value(version, _group(version)) == data


def test_group_metadata_v0_drops_the_fields_it_does_not_have():
    old = GroupMetadataValue(protocol_type="consumer", generation=1, protocol=None, leader=None,
                             members=[MemberMetadata(member_id="m", client_id="c", client_host="h",
                                                     session_timeout=10, assignment=b"a")])
    version, back = cr.decode_value(2, cr.encode_value(0, old))
    assert (version, back.current_state_timestamp, back.members[0].rebalance_timeout) == (0, -1, -1)
    assert back == old
    # GroupInstanceId (v3+) is ignorable: left out before v3, as Kafka's writer does
    assert cr.decode_value(2, cr.encode_value(2, _group(2)))[1].members[0].group_instance_id is None


def test_offset_commit_known_bytes():
    key = h("0001" "0002 6731" "0002 7430" "00000007")     # type 1: group "g1", topic "t0", partition 7
    assert cr.decode_key(key) == (1, OffsetCommitKey(group="g1", topic="t0", partition=7))
    value = h("0003" "0000000000000064" "00000004" "0000" "00000000000003e8")  # v3: offset 100,
    assert cr.decode_value(1, value) == (3, OffsetCommitValue(                 # epoch 4, "", ts 1000
        offset=100, leader_epoch=4, metadata="", commit_timestamp=1000))
    v4 = h("0004" "0000000000000064" "00000004" "01" "00000000000003e8"
           "01" "00 10" + TOPIC_ID.hex)                    # tagged field 0: TopicId (16 bytes)
    assert cr.decode_value(1, v4)[1].topic_id == TOPIC_ID
    legacy = h("0000" "0000000000000064" "0001 6d" "00000000000003e8")
    assert cr.decode_value(0, legacy) == (0, LegacyOffsetCommitValue(offset=100, metadata="m",
                                                                      commit_timestamp=1000))
    assert cr.decode_key(h("0000") + key[2:])[1].topic == "t0"


def test_consumer_group_assignment_epochs_default_is_not_written():
    """AssignmentEpochs' JSON null default is Kafka's "no default" (FieldSpec): an empty list, and
    the tagged field is written only when it differs from that."""
    a = ConsumerGroupCurrentMemberAssignmentValue(member_epoch=3, assigned_partitions=[
        TopicPartitions(topic_id=TOPIC_ID, partitions=[0, 1])])
    assert a.assigned_partitions[0].assignment_epochs == []
    data = cr.encode_value(0, a)
    assert data.endswith(h("03 00000000 00000001" "00" "01" "00"))   # partitions, no tags; pending: []; tags
    assert cr.decode_value(8, data) == (0, a)


def test_unknown_record_type():
    with pytest.raises(UnknownRecordType) as e:
        cr.decode_key(h("0009 0001 67"))
    assert isinstance(e.value, DecodeError) and e.value.record_type == 9
    assert "unknown coordinator record type 9" in str(e.value)
    with pytest.raises(UnknownRecordType):
        cr.decode_key(h("ffff"))
    with pytest.raises(UnknownRecordType):
        cr.decode_value(99, h("0000"))
    again = pickle.loads(pickle.dumps(e.value))
    assert type(again) is UnknownRecordType and again.record_type == 9
    with pytest.raises(EncodeError):
        cr.encode_key(9, GroupMetadataKey(group="g"))
    with pytest.raises(EncodeError):
        cr.encode_key(1, GroupMetadataKey(group="g"))


@pytest.mark.parametrize("record_type,version", [(2, 5), (2, -1), (0, 1), (3, 1)])
def test_unknown_record_version(record_type, version):
    with pytest.raises(UnknownRecordVersion) as e:
        cr.decode_value(record_type, version.to_bytes(2, "big", signed=True) + b"\x00" * 64)
    assert isinstance(e.value, DecodeError)
    assert (e.value.record_type, e.value.version) == (record_type, version)
    again = pickle.loads(pickle.dumps(e.value))
    assert (type(again), again.record_type, again.version) == (UnknownRecordVersion, record_type, version)


def test_tombstone_and_short_buffers():
    assert cr.decode_value(2, None) is None
    assert cr.decode_value(1, None) is None
    for bad in (b"", b"\x00"):
        with pytest.raises(DecodeError):
            cr.decode_key(bad)
        with pytest.raises(DecodeError):
            cr.decode_value(2, bad)
    with pytest.raises(DecodeError):       # a body cut short
        cr.decode_value(2, GROUP_V3[:-1])
    with pytest.raises(DecodeError):
        cr.decode_key(h("0002 0005 6731"))
