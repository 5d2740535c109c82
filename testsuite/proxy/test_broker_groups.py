"""The broker's share groups (KIP-932) and streams groups (KIP-1071) through kshim, at the wire,
side by side with the broker: heartbeats reach the group's coordinator whichever kshim port they use
(the 3-node cluster: groups coordinated by nodes 2 and 3), a share/streams request for a group kshim
holds is answered as Kafka answers a group of another type, kshim's group APIs naming the broker's
groups reach the broker, and ListGroups lists both. Real clients (KafkaShareConsumer, Kafka Streams,
the CLI tools) are in testsuite/groups/."""

from __future__ import annotations

import time
import uuid

from kcodec import api
from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kcodec.generated.delete_groups import DeleteGroupsRequest
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.generated.share_group_describe import ShareGroupDescribeRequest
from kcodec.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
from kcodec.generated.streams_group_heartbeat import StreamsGroupHeartbeatRequest, Subtopology, Topology
from kcodec.protocol import ApiKey, Error
from shim.compat.pymembers import create_topic
from testsuite.harness.clients import ck_consume, ck_produce
from shim.compat.wire import Wire

SGH, SGD, STREAMS_HB = ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.STREAMS_GROUP_HEARTBEAT
LIST, DESCRIBE, DELETE, FIND = ApiKey.LIST_GROUPS, ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.FIND_COORDINATOR


def _call(addr: str, api_key: int, body, version: int | None = None):
    version = api.VERSIONS[api_key][1] if version is None else version
    with Wire(addr) as w:
        w.send(api_key, version, body)
        return w.read_response(api_key, version)[1]


def _share_join(addr: str, group: str, topic: str):
    """A new member's first heartbeat; COORDINATOR_LOAD_IN_PROGRESS (a fresh cluster loading the group's
    __consumer_offsets partition: the broker answers it too) is retried, as clients do."""
    deadline = time.monotonic() + 30
    while True:
        hb = _call(addr, SGH, ShareGroupHeartbeatRequest(group_id=group, member_id=str(uuid.uuid4()), member_epoch=0,
                                                         subscribed_topic_names=[topic]))
        if hb.error_code != Error.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            return hb
        time.sleep(0.2)


def _streams_join(addr: str, group: str, topic: str):
    return _call(addr, STREAMS_HB, StreamsGroupHeartbeatRequest(
        group_id=group, member_id=str(uuid.uuid4()), member_epoch=0, endpoint_information_epoch=0,
        rebalance_timeout_ms=30000, process_id=str(uuid.uuid4()),
        topology=Topology(epoch=0, subtopologies=[Subtopology(subtopology_id="0", source_topics=[topic])]),
        active_tasks=[], standby_tasks=[], warmup_tasks=[]))


def _coordinator(addr: str, group: str) -> int:
    resp = _call(addr, FIND, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4)
    return resp.coordinators[0].node_id


def test_share_and_streams_groups_pass_through_and_keep_one_namespace(kshim, kafka, names):
    topic = names.topic()
    create_topic(kafka.bootstrap, topic, partitions=2)
    share, streams, mine = names.group("share"), names.group("streams"), names.group("classic")
    theirs = names.group("broker-classic")
    ck_produce(kshim.bootstrap, topic, [b"x"])
    assert len(ck_consume(kshim.bootstrap, topic, mine, 1)) == 1      # a classic group kshim holds
    assert len(ck_consume(kafka.bootstrap, topic, theirs, 1)) == 1    # and one the broker holds

    for addr in (kshim.bootstrap, f"127.0.0.1:{kshim.broker_port(1)}"):
        hb = _share_join(addr, share, topic)
        assert hb.error_code == Error.NONE and hb.member_epoch >= 1, hb
    direct = _call(kafka.bootstrap, SGD, ShareGroupDescribeRequest(group_ids=[share]))
    assert [(g.group_id, g.error_code, len(g.members)) for g in direct.groups] == [(share, Error.NONE, 2)]
    sh = _streams_join(kshim.bootstrap, streams, topic)
    assert sh.error_code == Error.NONE and sh.member_epoch >= 1, sh

    # a share/streams request for kshim's group: as the broker answers for a group of another type
    wrong = _share_join(kshim.bootstrap, mine, topic)
    assert (wrong.error_code, wrong.error_message) == (Error.GROUP_ID_NOT_FOUND, f"Group {mine} is not a share group.")
    live = names.group("consumer")            # a KIP-848 group with a member (an Empty classic group would
    member = _call(kshim.bootstrap, ApiKey.CONSUMER_GROUP_HEARTBEAT, ConsumerGroupHeartbeatRequest(   # be taken over)
        group_id=live, member_id=str(uuid.uuid4()), member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[topic], topic_partitions=[]), 1)
    assert member.error_code == Error.NONE, member
    wrong = _streams_join(kshim.bootstrap, live, topic)
    assert (wrong.error_code, wrong.error_message) == (Error.GROUP_ID_NOT_FOUND, f"Group {live} is not a streams group.")
    described = _call(kshim.bootstrap, SGD, ShareGroupDescribeRequest(group_ids=[mine, share]))
    assert [(g.group_id, g.error_code) for g in described.groups] == [(mine, Error.GROUP_ID_NOT_FOUND), (share, Error.NONE)]
    assert len(described.groups[1].members) == 2

    # ListGroups through kshim: the broker's groups and kshim's, once
    listed = _call(kshim.bootstrap, LIST, ListGroupsRequest(states_filter=[], types_filter=[]))
    kinds = {g.group_id: g.group_type for g in listed.groups}
    assert (kinds.get(share), kinds.get(streams), kinds.get(mine), kinds.get(theirs)) == \
        ("share", "streams", "classic", "classic")
    assert len(listed.groups) == len(kinds)
    on_broker = _call(kafka.bootstrap, LIST, ListGroupsRequest(states_filter=[], types_filter=["share"]))
    through = _call(kshim.bootstrap, LIST, ListGroupsRequest(states_filter=[], types_filter=["share"]))
    assert sorted(g.group_id for g in through.groups) == sorted(g.group_id for g in on_broker.groups)
    for v in (0, 3, 4):                        # older versions list the broker's groups too
        old_through = _call(kshim.bootstrap, LIST, ListGroupsRequest(), v)
        old_direct = _call(kafka.bootstrap, LIST, ListGroupsRequest(), v)
        assert {g.group_id for g in old_direct.groups} <= {g.group_id for g in old_through.groups}, v
        assert mine in {g.group_id for g in old_through.groups}

    # DescribeGroups naming both: kshim's entry from kshim, the share group's as the broker answers it
    both = _call(kshim.bootstrap, DESCRIBE, DescribeGroupsRequest(groups=[share, mine]))
    broker_entry = _call(kafka.bootstrap, DESCRIBE, DescribeGroupsRequest(groups=[share])).groups[0]
    assert [g.group_id for g in both.groups] == [share, mine]
    assert (both.groups[0].error_code, both.groups[0].group_state, both.groups[0].protocol_type) == \
        (broker_entry.error_code, broker_entry.group_state, broker_entry.protocol_type)
    assert both.groups[1].group_state == "Empty" and both.groups[1].protocol_type == "consumer"

    # the broker's own classic group is described by the broker
    broker_view = _call(kafka.bootstrap, DESCRIBE, DescribeGroupsRequest(groups=[theirs])).groups[0]
    via = _call(kshim.bootstrap, DESCRIBE, DescribeGroupsRequest(groups=[theirs])).groups[0]
    assert (via.error_code, via.group_state, via.protocol_type) == \
        (broker_view.error_code, broker_view.group_state, broker_view.protocol_type) == (Error.NONE, "Empty", "consumer")

    # DeleteGroups of a live share group: the broker's answer (NON_EMPTY_GROUP), kshim's group and the
    # broker's empty classic group deleted
    deleted = _call(kshim.bootstrap, DELETE, DeleteGroupsRequest(groups_names=[share, mine, theirs]))
    assert {r.group_id: r.error_code for r in deleted.results} == \
        {share: Error.NON_EMPTY_GROUP, mine: Error.NONE, theirs: Error.NONE}
    left = _call(kafka.bootstrap, LIST, ListGroupsRequest(states_filter=[], types_filter=[]))
    assert theirs not in {g.group_id for g in left.groups}


def test_groups_coordinated_by_other_nodes(kshim3, kafka3, names):
    """Share and streams groups whose broker coordinator is node 2 or 3, reached through kshim's node 1
    port and its bootstrap port: no NOT_COORDINATOR reaches the client."""
    topic = names.topic()
    create_topic(kafka3.bootstrap, topic, partitions=3, replication=3)
    picked: dict[int, str] = {}
    first_broker = kafka3.bootstrap.split(",")[0]
    deadline = time.monotonic() + 90       # a fresh cluster answers node -1 until __consumer_offsets has leaders
    i = 0
    # (a node restarted by an earlier test may lead no __consumer_offsets partition: one is enough then)
    while len(picked) < 2 and time.monotonic() < deadline and not (picked and i > 100):
        g = names.group(f"g{i}")
        node = _coordinator(first_broker, g)
        if node in (2, 3):
            picked.setdefault(node, g)
        if node < 0:
            time.sleep(0.5)
        else:
            i += 1
    assert picked and set(picked) <= {2, 3}
    for node, group in picked.items():
        for addr in (kshim3.bootstrap, f"127.0.0.1:{kshim3.broker_port(1)}"):
            hb = _share_join(addr, group, topic)
            assert hb.error_code == Error.NONE, (node, addr, hb)
        sgroup = group + "-streams"
        if _coordinator(first_broker, sgroup) != 1:
            sh = _streams_join(f"127.0.0.1:{kshim3.broker_port(1)}", sgroup, topic)
            assert sh.error_code == Error.NONE, (node, sh)
        described = _call(f"127.0.0.1:{kshim3.broker_port(1)}", SGD, ShareGroupDescribeRequest(group_ids=[group]))
        assert described.groups[0].error_code == Error.NONE and len(described.groups[0].members) == 2


def test_a_streams_join_takes_over_an_empty_classic_group_with_its_offsets(kshim, kafka, names):
    """Kafka turns an Empty classic group into a streams group when a streams member joins it, keeping
    its offsets (GroupMetadataManager.getOrCreateStreamsGroup): kshim hands the group to the broker."""
    from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
    topic, group = names.topic(), names.group("app")
    create_topic(kafka.bootstrap, topic, partitions=1)
    ck_produce(kshim.bootstrap, topic, [b"%d" % i for i in range(5)])
    assert len(ck_consume(kshim.bootstrap, topic, group, 5)) == 5        # kshim's classic group, offset 5
    joined = _streams_join(kshim.bootstrap, group, topic)
    assert joined.error_code == Error.NONE and joined.member_epoch >= 1, joined
    fetch = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, member_id=None, member_epoch=-1,
                                                               topics=None)], require_stable=False)
    on_broker = _call(kafka.bootstrap, ApiKey.OFFSET_FETCH, fetch, 9).groups[0]
    assert [(t.name, p.partition_index, p.committed_offset) for t in on_broker.topics for p in t.partitions] == \
        [(topic, 0, 5)]
    listed = _call(kshim.bootstrap, LIST, ListGroupsRequest(states_filter=[], types_filter=[]))
    assert [g.group_type for g in listed.groups if g.group_id == group] == ["streams"]
    assert f"group {group} handed over to the broker" in kshim.log_text()
