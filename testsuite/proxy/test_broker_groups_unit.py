"""The pieces of the share/streams pass-through that need no broker: the advertised ranges, the
ShareFetch/ShareAcknowledge NodeEndpoints rewrite, batched requests split and merged in request
order, the retry decision, the wrong-type answers, and kshim's pipelined connection (against a
scripted socket peer)."""

from __future__ import annotations

import asyncio
import struct
import uuid
from types import SimpleNamespace

from kcodec import api
from kcodec.generated.describe_groups import DescribedGroup, DescribeGroupsRequest, DescribeGroupsResponse
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from kcodec.generated.response_header import ResponseHeader
from kcodec.generated.share_fetch import (LeaderIdAndEpoch, NodeEndpoint, PartitionData, ShareFetchableTopicResponse,
                                          ShareFetchResponse)
from kcodec.generated.share_group_describe import ShareGroupDescribeResponse
from kcodec.protocol import ApiKey, Error
from shim.kafkaclient.client import UpstreamClient
from shim.kafkaclient.pipelined import PipelinedConnection
from shim.groupservice.broker_groups import wrong_type_answer, wrong_type_entry
from shim.groupservice.batches import group_ids, merge_entries, needs_retry, subset
from shim.proxy.rewrite import Rewriter, split_response
from shim.proxy.topology import Broker, Topology
from shim.proxy.versions import advertised_range

SHARE_FETCH = ApiKey.SHARE_FETCH
TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def test_share_and_streams_apis_are_advertised_with_the_brokers_range():
    for key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.STREAMS_GROUP_HEARTBEAT,
                ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE):
        lo, hi = api.VERSIONS[key]
        assert advertised_range(key, lo, hi, api.VERSIONS) == (lo, hi)
        assert advertised_range(key, lo, hi - 1 if hi > lo else hi, api.VERSIONS)[1] == max(lo, hi - 1)


def _share_fetch_frame(version: int, error: int, endpoints) -> bytes:
    part = PartitionData(partition_index=0, error_code=error, records=b"\x00\x06records",
                         current_leader=LeaderIdAndEpoch(leader_id=2, leader_epoch=3), acquired_records=[])
    body = ShareFetchResponse(responses=[ShareFetchableTopicResponse(topic_id=TOPIC_ID, partitions=[part])],
                              node_endpoints=endpoints)
    return ResponseHeader(correlation_id=9).encode(1) + body.encode(version)


def test_share_fetch_node_endpoints_name_kshim_and_other_answers_stay_the_brokers_bytes():
    topo = Topology(broker_base=9093, advertised_host="127.0.0.1")
    topo.update([Broker(1, "10.0.0.1", 9092)])
    version = api.VERSIONS[SHARE_FETCH][1]
    moved = _share_fetch_frame(version, Error.FENCED_LEADER_EPOCH, [NodeEndpoint(node_id=2, host="10.0.0.2", port=9092)])
    out = Rewriter(topo).rewrite(SHARE_FETCH, version, moved)
    msg = ShareFetchResponse.decode(split_response(SHARE_FETCH, version, out.frame)[1], version)
    assert [(e.node_id, e.host, e.port) for e in msg.node_endpoints] == [(2, "127.0.0.1", 9095)]
    assert bytes(msg.responses[0].partitions[0].records) == b"\x00\x06records"
    assert out.learned == [Broker(2, "10.0.0.2", 9092, None)]
    plain = _share_fetch_frame(version, Error.NONE, [])
    assert Rewriter(topo).rewrite(SHARE_FETCH, version, plain).frame == plain


def test_a_batched_request_is_split_and_its_answers_merged_in_request_order():
    req = DescribeGroupsRequest(groups=["a", "b", "c"])
    gids, batch = group_ids(ApiKey.DESCRIBE_GROUPS, 5, req)
    assert gids == ["a", "b", "c"] and batch is not None
    assert subset(req, batch, {"c", "a"}).groups == ["a", "c"] and req.groups == ["a", "b", "c"]
    body = DescribeGroupsResponse(groups=[DescribedGroup(group_id="b")])
    merge_entries(gids, batch, body, [DescribedGroup(group_id="c"), DescribedGroup(group_id="a")])
    assert [g.group_id for g in body.groups] == ["a", "b", "c"]
    fetch = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="x"), OffsetFetchRequestGroup(group_id="y")])
    assert group_ids(ApiKey.OFFSET_FETCH, 8, fetch)[0] == ["x", "y"]
    assert group_ids(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id="z")) == (["z"], None)


def test_moved_coordinators_are_retried_and_other_errors_answered():
    moved = ShareGroupDescribeResponse(groups=[wrong_type_entry(ApiKey.SHARE_GROUP_DESCRIBE, "share", "a")])
    assert not needs_retry(moved)
    moved.groups[0].error_code = Error.NOT_COORDINATOR
    assert needs_retry(moved)
    answer = wrong_type_answer(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams", "g1")
    assert (answer.error_code, answer.error_message) == (Error.GROUP_ID_NOT_FOUND, "Group g1 is not a streams group.")


def test_pipelined_connection_matches_answers_in_order_and_restores_correlation_ids():
    async def main():
        seen = []

        async def broker(reader, writer):
            while True:
                try:
                    size = struct.unpack(">i", await reader.readexactly(4))[0]
                except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError):
                    return
                frame = await reader.readexactly(size)
                corr = struct.unpack_from(">i", frame, 4)[0]
                seen.append(corr)
                writer.write(struct.pack(">ii", 8, corr) + frame[-4:])
        server = await asyncio.start_server(broker, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        conn = PipelinedConnection(UpstreamClient(reader, writer), f"127.0.0.1:{port}")
        frames = [struct.pack(">hhi", 76, 1, 70000 + i) + b"body" + struct.pack(">i", i) for i in range(5)]
        answers = await asyncio.gather(*(conn.send(f) for f in frames))
        assert [struct.unpack_from(">i", a, 0)[0] for a in answers] == [70000 + i for i in range(5)]
        assert [struct.unpack_from(">i", a, 4)[0] for a in answers] == list(range(5))
        assert len(set(seen)) == 5 and not set(seen) & {70000 + i for i in range(5)}
        server.close()
        conn.close()
        failed = conn.send(frames[0])
        try:
            await failed
        except ConnectionError:
            return True
        return False
    assert asyncio.run(main())


def _broker_groups(release: str, groups_held=("g",)):
    """BrokerGroups with only what `refusal` reads: the release the coordinator answers as, and which
    groups (not only offsets) kshim's coordinator holds."""
    from shim.groupservice.broker_groups import BrokerGroups
    groups = BrokerGroups.__new__(BrokerGroups)
    groups.runtime = SimpleNamespace(coordinator=SimpleNamespace(cfg=SimpleNamespace(release=release)),
                                     has_group=lambda gid: gid in groups_held)
    return groups


def test_a_share_heartbeat_for_a_group_kshim_holds_only_offsets_of_is_answered_as_not_found():
    """Found by the wire differential tester (seed 497): the empty consumer group was removed by a
    JoinGroup (its offsets stay); the broker's shareGroup finds no group for a leave, and
    getOrMaybeCreateShareGroup none for another heartbeat; a join (epoch 0) would create one, which
    kshim refuses as a group of another type."""
    from kcodec.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
    groups = _broker_groups("4.4", groups_held=())
    beat = ShareGroupHeartbeatRequest(group_id="g", member_id="m" * 22, member_epoch=-1)
    out = groups.refusal(ApiKey.SHARE_GROUP_HEARTBEAT, "share", "g", beat)
    assert (out.error_code, out.error_message) == (Error.GROUP_ID_NOT_FOUND, "Group g not found.")
    beat.member_epoch = 3
    out = groups.refusal(ApiKey.SHARE_GROUP_HEARTBEAT, "share", "g", beat)
    assert (out.error_code, out.error_message) == (Error.GROUP_ID_NOT_FOUND, "Share group g not found.")
    beat.member_epoch, beat.subscribed_topic_names = 0, ["t"]
    out = groups.refusal(ApiKey.SHARE_GROUP_HEARTBEAT, "share", "g", beat)
    assert (out.error_code, out.error_message) == (Error.GROUP_ID_NOT_FOUND, "Group g is not a share group.")
    beat.member_epoch = -1                                 # with a group of another type: the wrong type
    held = _broker_groups("4.4")
    assert held.refusal(ApiKey.SHARE_GROUP_HEARTBEAT, "share", "g", beat).error_message == "Group g is not a share group."


def test_a_heartbeat_for_kshims_group_gets_the_brokers_validation_first():
    from kcodec.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
    from kcodec.generated.streams_group_heartbeat import StreamsGroupHeartbeatRequest, Subtopology, Topology
    groups = _broker_groups("4.4")
    share = ShareGroupHeartbeatRequest(group_id="g", member_id="m" * 22, member_epoch=0, subscribed_topic_names=[])
    out = groups.refusal(ApiKey.SHARE_GROUP_HEARTBEAT, "share", "g", share)
    assert (out.error_code, out.error_message) == (Error.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    share.subscribed_topic_names = ["t"]
    out = groups.refusal(ApiKey.SHARE_GROUP_HEARTBEAT, "share", "g", share)
    assert (out.error_code, out.error_message) == (Error.GROUP_ID_NOT_FOUND, "Group g is not a share group.")
    share.member_id = "x" * 37
    assert groups.refusal(ApiKey.SHARE_GROUP_HEARTBEAT, "share", "g", share).error_code == Error.INVALID_REQUEST
    streams = StreamsGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                                           topology=Topology(epoch=0, subtopologies=[Subtopology(
                                               subtopology_id="0", source_topics=["__consumer_offsets"])]),
                                           active_tasks=[], standby_tasks=[], warmup_tasks=[])
    out = groups.refusal(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams", "g", streams)
    assert out.error_code == Error.STREAMS_INVALID_TOPOLOGY and "__consumer_offsets" in out.error_message
    streams.topology.subtopologies[0].source_topics = ["t"]
    out = groups.refusal(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams", "g", streams)
    assert (out.error_code, out.error_message) == (Error.GROUP_ID_NOT_FOUND, "Group g is not a streams group.")
    streams.member_epoch = -3
    streams.topology = None
    out = groups.refusal(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams", "g", streams)
    assert out.error_message == "MemberEpoch is -3, but must be greater than or equal to -2."
    # static membership: refused before Kafka 4.4, a valid request from 4.4 (KAFKA-20169)
    streams.member_epoch, streams.instance_id = 1, "i1"
    assert _broker_groups("4.3").refusal(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams", "g", streams).error_message == \
        "Static membership is not yet supported."
    out = groups.refusal(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams", "g", streams)
    assert (out.error_code, out.error_message) == (Error.GROUP_ID_NOT_FOUND, "Group g is not a streams group.")


def test_streams_topology_description_update_goes_to_the_groups_coordinator():
    """Kafka 4.4's StreamsGroupTopologyDescriptionUpdate (API key 93, KIP-1331) names a streams group: it
    is routed to the broker coordinating that group, as the other streams APIs are."""
    from shim.groupservice.broker_groups import KIND_OF_API, STREAMS
    from shim.proxy.versions import SHARE_AND_STREAMS
    key = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
    assert int(key) == 93 and KIND_OF_API[key] == STREAMS and key in SHARE_AND_STREAMS
    req = api.REQUESTS[key](group_id="app", member_id="m", topology_epoch=1)
    assert group_ids(key, 0, req) == (["app"], None)


def test_with_share_groups_off_upstream_every_share_api_passes_through():
    """A broker with share groups off (Kafka 4.0 and 4.1's default) answers every share API
    UNSUPPORTED_VERSION before it looks at the group (KafkaApis.handleShareGroupHeartbeat): kshim
    passes them on, also for a group it holds, instead of answering that group as another type.
    Found by the wire differential tester against 4.1.2 (seeds 2012, 2015, 2022)."""
    from kcodec.generated.request_header import RequestHeader
    from kcodec.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
    from shim.coordinator.releases import share_protocol_probe
    version = api.VERSIONS[ApiKey.SHARE_GROUP_HEARTBEAT][1]
    beat = ShareGroupHeartbeatRequest(group_id="g", member_id="m" * 22, member_epoch=0, subscribed_topic_names=["t"])
    hv = api.request_header_version(ApiKey.SHARE_GROUP_HEARTBEAT, version)
    frame = RequestHeader(request_api_key=ApiKey.SHARE_GROUP_HEARTBEAT, request_api_version=version,
                          correlation_id=5, client_id="c").encode(hv) + beat.encode(version)
    slot = SimpleNamespace(api_key=ApiKey.SHARE_GROUP_HEARTBEAT, version=version, correlation_id=5)
    session = SimpleNamespace(closed=False, completed=[], complete=lambda s, a: session.completed.append(a))
    for share_on, forwarded in ((True, []), (False, ["g"])):
        groups = _broker_groups("4.1")
        groups.authz, groups.hand_over, groups.share_protocol = None, None, share_on
        groups.kshim_holds = lambda gid: gid == "g"
        sent = []
        groups.forward = lambda s, sl, f, req, gids, batch: sent.extend(gids)
        groups._spawn = lambda coro: None
        session.completed.clear()
        assert groups.handle(session, slot, memoryview(frame)) is True
        assert sent == forwarded and len(session.completed) == (1 if share_on else 0)
    # the probe that tells: a heartbeat with an empty group id, which changes nothing where share groups are on
    assert share_protocol_probe().group_id == "" and share_protocol_probe().encode(version)
