"""The generated code's fast paths and their fallbacks give the same bytes and values:
strict-UTF-8 decode/encode vs. the surrogateescape fallback (invalid UTF-8 round-trips),
one-byte vs. multi-byte compact lengths folded into fixed-width unpacks, precompiled
array packers vs. the generic pack for long arrays, and empty arrays."""
from __future__ import annotations

import struct

import pytest

from kcodec.errors import EncodeError
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.metadata import (MetadataResponse, MetadataResponsePartition,
                                       MetadataResponseTopic)
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)

# invalid UTF-8: a lone continuation byte, a truncated sequence, an encoded surrogate
INVALID = [b"\x80", b"ab\xc3", b"\xed\xa0\x80x", b"\xff\xfe"]


@pytest.mark.parametrize("version", [4, 5])  # non-flexible, flexible
@pytest.mark.parametrize("raw", INVALID + [b"", "h\u00e9llo \u2603".encode()])
def test_string_array_bytes_round_trip(version, raw):
    groups = [raw.decode("utf-8", "surrogateescape"), "plain"]
    data = DescribeGroupsRequest(groups=groups).encode(version)
    assert raw in data
    got = DescribeGroupsRequest.decode(data, version)
    assert got.groups == groups
    assert got.encode(version) == data


@pytest.mark.parametrize("version", [7, 8])  # non-flexible, flexible
@pytest.mark.parametrize("raw", INVALID)
def test_invalid_utf8_in_string_fields_round_trips(version, raw):
    s = raw.decode("utf-8", "surrogateescape")
    req = OffsetCommitRequest(group_id=s, member_id="m", topics=[OffsetCommitRequestTopic(
        name=s, partitions=[OffsetCommitRequestPartition(partition_index=1, committed_metadata=s)])])
    data = req.encode(version)
    got = OffsetCommitRequest.decode(data, version)
    assert got == req and got.topics[0].partitions[0].committed_metadata == s
    assert got.encode(version) == data


def test_unencodable_surrogate_is_an_encode_error():
    with pytest.raises(EncodeError):
        DescribeGroupsRequest(groups=["\ud800"]).encode(5)


@pytest.mark.parametrize("length", [0, 125, 126, 127, 128, 300, 32767])
def test_compact_string_length_boundaries(length):
    # committed_metadata follows fixed-width fields: its length byte is folded into their unpack
    meta = "m" * length
    req = OffsetCommitRequest(group_id="g", topics=[OffsetCommitRequestTopic(
        name="t", partitions=[OffsetCommitRequestPartition(partition_index=3, committed_offset=9,
                                                           committed_metadata=meta)])])
    data = req.encode(8)
    got = OffsetCommitRequest.decode(data, 8)
    assert got.topics[0].partitions[0].committed_metadata == meta
    assert got.encode(8) == data


def test_compact_string_longer_than_int16_max_is_an_encode_error():
    req = OffsetCommitRequest(group_id="g" * 32768)
    with pytest.raises(EncodeError):
        req.encode(8)


@pytest.mark.parametrize("count", [0, 1, 125, 126, 127, 128, 255, 256, 1000])
@pytest.mark.parametrize("version", [8, 9, 12])  # non-flexible, flexible
def test_int_arrays_all_sizes(count, version):
    nodes = list(range(-5, count - 5))
    part = MetadataResponsePartition(partition_index=1, replica_nodes=nodes, isr_nodes=nodes[:1],
                                     offline_replicas=[])
    topics = [MetadataResponseTopic(name="t", partitions=[part] * 130)]
    resp = MetadataResponse(topics=topics)
    data = resp.encode(version)
    if version < 9:
        assert struct.pack(">i", count) + struct.pack(f">{count}i", *nodes) in data
    got = MetadataResponse.decode(data, version)
    assert got.topics[0].partitions[129].replica_nodes == nodes
    assert got.topics[0].partitions[0].offline_replicas == []
    assert got == resp and got.encode(version) == data


def test_int_array_value_out_of_range_is_an_encode_error():
    part = MetadataResponsePartition(replica_nodes=[2**31])
    with pytest.raises(EncodeError) as ei:
        MetadataResponse(topics=[MetadataResponseTopic(name="t", partitions=[part])]).encode(12)
    assert ei.value.message_name == "MetadataResponsePartition"
    assert "ReplicaNodes" in ei.value.field


def test_tagged_field_byte_after_fixed_fields():
    # MetadataResponseTopic ends with TopicAuthorizedOperations; the tagged-field count is
    # read with it. Unknown tagged fields there must still round-trip.
    topic = MetadataResponseTopic(name="t", topic_authorized_operations=7,
                                  _unknown_tagged_fields={3: b"abc", 9: b""})
    resp = MetadataResponse(topics=[topic])
    data = resp.encode(12)
    got = MetadataResponse.decode(data, 12)
    assert got.topics[0]._unknown_tagged_fields == {3: b"abc", 9: b""}
    assert got.topics[0].topic_authorized_operations == 7
    assert got.encode(12) == data
