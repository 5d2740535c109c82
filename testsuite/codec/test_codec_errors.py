"""Malformed input raises kcodec.errors.DecodeError naming message, field and offset; invalid
values raise EncodeError."""
from __future__ import annotations

import struct
import tracemalloc

import pytest

from kcodec import api
from kcodec.errors import DecodeError, EncodeError
from kcodec.generated.api_versions import ApiVersionsResponse
from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.metadata import (MetadataRequest, MetadataRequestTopic, MetadataResponse,
                                       MetadataResponseBroker, MetadataResponsePartition,
                                       MetadataResponseTopic)
from kcodec.generated.offset_commit import OffsetCommitRequest


def sample_metadata():
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="broker-1", port=9092, rack="r")],
        cluster_id="cluster",
        topics=[MetadataResponseTopic(name="topic", partitions=[
            MetadataResponsePartition(partition_index=i, replica_nodes=[1, 2], isr_nodes=[1])
            for i in range(3)])])


@pytest.mark.parametrize("version", [1, 9, 12])
def test_every_truncation_is_a_decode_error(version):
    data = sample_metadata().encode(version)
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as ei:
            MetadataResponse.decode(data[:cut], version)
        e = ei.value
        assert e.version == version
        assert e.message_name.startswith("MetadataResponse")
        assert e.offset is not None and 0 <= e.offset <= cut
        assert str(e).startswith("decode error in MetadataResponse")


def test_truncation_names_the_field():
    data = sample_metadata().encode(9)
    # cut inside the first broker's host string
    with pytest.raises(DecodeError) as ei:
        MetadataResponse.decode(data[:10], 9)
    assert ei.value.message_name == "MetadataResponseBroker"
    assert ei.value.field == "Host"
    assert ei.value.offset == 10  # where the 8 announced bytes should start
    assert "MetadataResponseBroker.Host" in str(ei.value)


def test_negative_length_for_non_nullable_string():
    # MetadataRequest v1: Topics count 1, then Name with length -1
    data = struct.pack(">ih", 1, -1)
    with pytest.raises(DecodeError) as ei:
        MetadataRequest.decode(data, 1)
    assert (ei.value.message_name, ei.value.field, ei.value.offset) == \
        ("MetadataRequestTopic", "Name", 6)
    assert "null" in ei.value.reason


def test_negative_array_length_for_non_nullable_array():
    # JoinGroupRequest v5 Protocols is not nullable
    req = JoinGroupRequest(group_id="g", member_id="", protocol_type="consumer",
                           protocols=[JoinGroupRequestProtocol(name="range", metadata=b"x")])
    data = req.encode(5)
    bad = data[:-4 - 2 - 5 - 4 - 1] + struct.pack(">i", -5)
    with pytest.raises(DecodeError) as ei:
        JoinGroupRequest.decode(bad, 5)
    assert ei.value.field == "Protocols"


@pytest.mark.parametrize("count", [2**31 - 1, 10**6, 64])
def test_huge_array_length_fails_before_allocating(count):
    data = struct.pack(">i", count) + b"\x00" * 16
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as ei:
            MetadataRequest.decode(data, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
    assert (ei.value.field, ei.value.offset) == ("Topics", 4)
    assert "cannot fit" in ei.value.reason


def test_huge_compact_lengths():
    # MetadataRequest v9: compact array count varint 0xffffffff (-> 2**32 - 2 elements)
    with pytest.raises(DecodeError) as ei:
        MetadataRequest.decode(b"\xff\xff\xff\xff\x0f", 9)
    assert ei.value.field == "Topics"
    # compact string length past the end
    with pytest.raises(DecodeError) as ei:
        MetadataRequest.decode(b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                               b"\x00\x00\x7f", 10)
    assert ei.value.field == "Name" and "past the end" in ei.value.reason


def test_huge_bytes_length():
    req = JoinGroupRequest(group_id="g", protocols=[JoinGroupRequestProtocol(name="p", metadata=b"")])
    data = bytearray(req.encode(1))
    data[-4:] = struct.pack(">i", 2**31 - 1)
    with pytest.raises(DecodeError) as ei:
        JoinGroupRequest.decode(bytes(data), 1)
    assert ei.value.field == "Metadata" and ei.value.message_name == "JoinGroupRequestProtocol"


def test_overlong_varint():
    with pytest.raises(DecodeError) as ei:
        MetadataRequest.decode(b"\xff\xff\xff\xff\xff\x01", 9)
    assert "varint" in ei.value.reason


def test_string_longer_than_int16_max_is_rejected():
    data = b"\x00\x00\x00\x01" + struct.pack(">H", 0x8000) + b"a" * 0x8000
    with pytest.raises(DecodeError):
        MetadataRequest.decode(data, 1)


def test_trailing_bytes_and_offsets():
    data = MetadataRequest(topics=[]).encode(1)
    with pytest.raises(DecodeError) as ei:
        MetadataRequest.decode(data + b"\x00", 1)
    assert "trailing" in ei.value.reason and ei.value.offset == len(data)
    obj, pos = MetadataRequest.decode_from(b"xx" + data + b"yy", 2, 1)
    assert obj.topics == [] and pos == 2 + len(data)


def test_unknown_api_key_and_version():
    with pytest.raises(DecodeError) as ei:
        api.decode_request(999, 0, b"")
    assert "unknown api key" in str(ei.value)
    with pytest.raises(DecodeError) as ei:
        api.decode_request(4, 0, b"")  # LeaderAndIsr: removed in 4.x
    assert "LeaderAndIsr" in str(ei.value)
    with pytest.raises(DecodeError) as ei:
        api.decode_request(3, 99, b"")
    assert "unsupported version 99" in str(ei.value)
    with pytest.raises(DecodeError):
        api.decode_response(8, 1, b"")  # OffsetCommit v0-1 removed in 4.0
    with pytest.raises(DecodeError):
        MetadataRequest.decode(b"", -1)
    with pytest.raises(DecodeError):
        api.request_header_version(1000, 0)
    with pytest.raises(EncodeError):
        MetadataRequest().encode(14)


def test_unknown_tag_that_is_known_in_other_versions_is_rejected():
    # FetchRequest tag 1 (ReplicaState) is only valid from v15; Kafka rejects it at v12
    from kcodec.generated.fetch import FetchRequest
    body = FetchRequest().encode(12)
    assert body[-1:] == b"\x00"
    bad = body[:-1] + b"\x01\x01\x08" + b"\x00" * 8
    with pytest.raises(DecodeError) as ei:
        FetchRequest.decode(bad, 12)
    assert "not valid" in ei.value.reason


def test_tagged_field_size_mismatch():
    resp = ApiVersionsResponse(finalized_features_epoch=1)
    data = resp.encode(3)
    bad = data.replace(b"\x01\x08", b"\x01\x09") + b"\x00"
    with pytest.raises(DecodeError):
        ApiVersionsResponse.decode(bad, 3)


def test_encode_errors_name_the_field():
    with pytest.raises(EncodeError) as ei:
        MetadataRequest(topics=[MetadataRequestTopic(name=None)]).encode(1)
    assert (ei.value.message_name, ei.value.field, ei.value.version) == \
        ("MetadataRequestTopic", "Name", 1)
    with pytest.raises(EncodeError) as ei:
        MetadataResponse(brokers=[MetadataResponseBroker(port=2**31)]).encode(9)
    assert ei.value.field is not None and "Port" in ei.value.field
    with pytest.raises(EncodeError):
        MetadataRequest(topics=[MetadataRequestTopic(name="x" * 40000)]).encode(1)
    with pytest.raises(EncodeError):
        MetadataRequest(topics=[MetadataRequestTopic(name="x" * 40000)]).encode(9)


def test_non_default_absent_field_rules():
    # FindCoordinatorRequest.Key exists only in v0-3 and is not ignorable
    with pytest.raises(EncodeError) as ei:
        FindCoordinatorRequest(key="g").encode(4)
    assert ei.value.field == "Key" and "does not exist" in ei.value.reason
    FindCoordinatorRequest(key="").encode(4)  # the default is fine
    # OffsetCommitRequest.RetentionTimeMs (v2-4) is ignorable: dropped at v5
    assert OffsetCommitRequest(group_id="g", retention_time_ms=5).encode(5) == \
        OffsetCommitRequest(group_id="g").encode(5)
    # ignorable fields are dropped silently (ThrottleTimeMs of ApiVersions is 1+, ignorable)
    assert ApiVersionsResponse(throttle_time_ms=5).encode(0) == b"\x00\x00\x00\x00\x00\x00"


def test_unknown_tagged_fields_need_a_flexible_version():
    req = MetadataRequest(_unknown_tagged_fields={5: b"x"})
    assert req.encode(9)[-4:] == b"\x01\x05\x01x"
    with pytest.raises(EncodeError):
        req.encode(8)


def test_json_errors():
    with pytest.raises(DecodeError) as ei:
        MetadataRequest.from_json({}, 1)
    assert ei.value.field == "Topics"
    assert MetadataRequest.from_json({"topics": None}, 1).topics is None
    with pytest.raises(DecodeError):
        MetadataRequest.from_json({"topics": None}, 0)  # not nullable in v0
    with pytest.raises(EncodeError):
        FindCoordinatorRequest(key="g").to_json(4)
    assert "retentionTimeMs" not in OffsetCommitRequest(retention_time_ms=5).to_json(5)
