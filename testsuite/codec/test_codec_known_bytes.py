"""Known frames with expected bytes written out by hand from the protocol rules
(big-endian fixed ints; non-flexible: int16 string / int32 bytes+array lengths with -1 for
null; flexible: unsigned-varint length+1 (0 = null) and a tagged-field section per struct;
request header v2 keeps a non-compact ClientId; ApiVersions responses use header v0)."""
from __future__ import annotations

import uuid

import pytest

from kcodec import api
from kcodec.api import RequestHeader, ResponseHeader
from kcodec.generated.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from kcodec.generated.consumer_group_heartbeat import (ConsumerGroupHeartbeatResponse,
                                                       Assignment,
                                                       ConsumerGroupHeartbeatResponseTopicPartitions)
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.generated.metadata import (MetadataRequest, MetadataRequestTopic, MetadataResponse,
                                       MetadataResponseBroker, MetadataResponsePartition,
                                       MetadataResponseTopic)


def h(s: str) -> bytes:
    return bytes.fromhex("".join(s.split()))


def test_api_versions_request_v3_with_header_v2():
    frame = h(
        "0012 0003 00000007"   # api key 18, version 3, correlation id 7
        "0003 636c69"          # ClientId "cli": int16 length even in header v2
        "00"                   # header tagged fields: none
        "06 6b7368696d"        # ClientSoftwareName "kshim": compact, varint(5 + 1)
        "04 302e31"            # ClientSoftwareVersion "0.1"
        "00")                  # body tagged fields: none
    assert api.request_header_version(18, 3) == 2
    hdr, pos = RequestHeader.decode_from(frame, 0, 2)
    assert (hdr.request_api_key, hdr.request_api_version, hdr.correlation_id, hdr.client_id) == \
        (18, 3, 7, "cli")
    assert pos == 14
    body = api.decode_request(18, 3, frame[pos:])
    assert body == ApiVersionsRequest(client_software_name="kshim", client_software_version="0.1")
    assert hdr.encode(2) + body.encode(3) == frame


def test_request_header_v1_null_client_id():
    frame = h("0003 0001 0000002a ffff")
    hdr, pos = RequestHeader.decode_from(frame, 0, 1)
    assert hdr.client_id is None and pos == len(frame)
    assert hdr.encode(1) == frame


def test_api_versions_response_v3_uses_header_v0_and_tags():
    assert api.response_header_version(18, 3) == 0
    assert api.response_header_version(3, 12) == 1
    assert api.response_header_version(3, 8) == 0
    resp = ApiVersionsResponse(
        error_code=0,
        api_keys=[ApiVersion(api_key=18, min_version=0, max_version=4),
                  ApiVersion(api_key=3, min_version=0, max_version=13)],
        finalized_features_epoch=5, zk_migration_ready=True)
    expected = h(
        "0000"                     # ErrorCode
        "03"                       # ApiKeys: compact array, 2 entries
        "0012 0000 0004 00"        # (18, 0, 4), no tags
        "0003 0000 000d 00"        # (3, 0, 13), no tags
        "00000000"                 # ThrottleTimeMs
        "02"                       # 2 tagged fields
        "01 08 0000000000000005"   # tag 1 FinalizedFeaturesEpoch, 8 bytes
        "03 01 01")                # tag 3 ZkMigrationReady, 1 byte
    assert resp.encode(3) == expected
    # the whole answer: header v0 (correlation id only, no tag byte) before the flexible body
    assert api.encode_response(18, 3, 0x01020304, resp) == h("01020304") + expected
    assert api.decode_response(18, 3, expected) == resp
    hdr, pos = ResponseHeader.decode_from(h("00000007") + expected, 0, 0)
    assert hdr.correlation_id == 7 and pos == 4
    # v0 has neither throttle time nor tags; the ignorable tagged fields are dropped
    assert resp.encode(0) == h("0000 00000002 0012 0000 0004 0003 0000 000d")


def test_metadata_v12_response():
    tid = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    resp = MetadataResponse(
        throttle_time_ms=1,
        brokers=[MetadataResponseBroker(node_id=1, host="k1", port=9092, rack=None)],
        cluster_id="c", controller_id=1,
        topics=[MetadataResponseTopic(
            error_code=0, name="t", topic_id=tid, is_internal=False,
            partitions=[MetadataResponsePartition(
                error_code=0, partition_index=0, leader_id=1, leader_epoch=3,
                replica_nodes=[1, 2], isr_nodes=[1], offline_replicas=[])],
            topic_authorized_operations=-2147483648)])
    expected = h(
        "00000001"                        # ThrottleTimeMs
        "02"                              # Brokers: 1
        "00000001 03 6b31 00002384 00 00" # NodeId 1, Host "k1", Port 9092, Rack null, tags
        "02 63"                           # ClusterId "c"
        "00000001"                        # ControllerId
        "02"                              # Topics: 1
        "0000 02 74"                      # ErrorCode, Name "t"
        "00112233445566778899aabbccddeeff"  # TopicId
        "00"                              # IsInternal false
        "02"                              # Partitions: 1
        "0000 00000000 00000001 00000003" # ErrorCode, PartitionIndex, LeaderId, LeaderEpoch
        "03 00000001 00000002"            # ReplicaNodes [1, 2]
        "02 00000001"                     # IsrNodes [1]
        "01"                              # OfflineReplicas []
        "00"                              # partition tags
        "80000000"                        # TopicAuthorizedOperations
        "00"                              # topic tags
        "00")                             # response tags
    assert resp.encode(12) == expected
    assert MetadataResponse.decode(expected, 12) == resp


def test_metadata_v1_request_non_flexible():
    req = MetadataRequest(topics=[MetadataRequestTopic(name="ab"), MetadataRequestTopic(name="c")])
    expected = h("00000002 0002 6162 0001 63")
    assert req.encode(1) == expected
    assert MetadataRequest.decode(expected, 1) == req
    # v1+: a null topic list means all topics
    assert MetadataRequest(topics=None).encode(1) == h("ffffffff")
    assert MetadataRequest.decode(h("ffffffff"), 1).topics is None


def test_nullable_struct_marker():
    # ConsumerGroupHeartbeatResponse v0: Assignment is a nullable struct (int8 marker)
    base = h("00000000 0000 00 00 00000000 00000000")  # throttle, error, msg null, id null, epoch, interval
    r = ConsumerGroupHeartbeatResponse.decode(base + h("ff 00"), 0)
    assert r.assignment is None and r.error_message is None and r.member_id is None
    tid = uuid.UUID(int=1)
    r.assignment = Assignment(topic_partitions=[
        ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=tid, partitions=[7])])
    expected = base + h("01 02" + "00" * 15 + "01" + "02 00000007 00" + "00" + "00")
    assert r.encode(0) == expected
    assert ConsumerGroupHeartbeatResponse.decode(expected, 0) == r


def test_long_compact_array_uses_multibyte_varint():
    req = MetadataRequest(topics=[MetadataRequestTopic(name="x") for _ in range(200)])
    data = req.encode(9)
    # 201 = 0b1_1001001 -> 0xc9 0x01
    assert data[:2] == h("c9 01")
    assert MetadataRequest.decode(data, 9) == req


def test_consumer_protocol_subscription_v1():
    sub = ConsumerProtocolSubscription(topics=["a"], user_data=None)
    # v1: Topics []string, UserData nullable bytes, OwnedPartitions [] (1+)
    expected = h("00000001 0001 61 ffffffff 00000000")
    assert sub.encode(1) == expected
    assert ConsumerProtocolSubscription.decode(expected, 1) == sub


@pytest.mark.parametrize("key,version,hv", [(0, 9, 2), (0, 8, 1), (18, 3, 2), (18, 2, 1),
                                            (3, 9, 2), (11, 5, 1), (68, 0, 2)])
def test_request_header_versions(key, version, hv):
    assert api.request_header_version(key, version) == hv
