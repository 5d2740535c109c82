"""shim/authz/apis.py without a broker: what reaches the coordinator and how the refused entries are
put back (the broker comparison of the same behaviour: testsuite/proxy/test_group_authz.py)."""

from __future__ import annotations

from kcodec import api
from kcodec.generated import describe_groups as dg
from kcodec.generated import offset_commit as oc
from kcodec.generated import offset_fetch as of

from shim.authz.acl import ALLOW, DESCRIBE, GROUP, LITERAL, PREFIXED, READ, TOPIC, Acl, Authorizer, Caller
from shim.authz.apis import find_coordinator, gate

ALICE = Caller("User:alice", "127.0.0.1")
AUTHZ = Authorizer([Acl(GROUP, "ok-", PREFIXED, "User:alice", "*", READ, ALLOW),
                    Acl(GROUP, "look", LITERAL, "User:alice", "*", DESCRIBE, ALLOW),
                    Acl(TOPIC, "t1", LITERAL, "User:alice", "*", READ, ALLOW)])


def no_ids(_):
    return None


def test_nothing_refused_leaves_the_request_untouched():
    req = api.REQUESTS[12](group_id="ok-1", generation_id=1, member_id="m")
    v = gate(AUTHZ, ALICE, 12, 4, req, no_ids)
    assert v.answer is None and v.request is req and v.patch is None


def test_offset_commit_refused_topics_go_first_and_skip_the_coordinator():
    req = api.REQUESTS[8](group_id="ok-1", generation_id_or_member_epoch=-1, member_id="", topics=[
        oc.OffsetCommitRequestTopic(name=n, partitions=[oc.OffsetCommitRequestPartition(partition_index=0)])
        for n in ("t1", "t2")])
    v = gate(AUTHZ, ALICE, 8, 8, req, no_ids)
    assert [t.name for t in v.request.topics] == ["t1"] and [t.name for t in req.topics] == ["t1", "t2"]
    body = v.patch(oc.OffsetCommitResponse(topics=[oc.OffsetCommitResponseTopic(name="t1", partitions=[
        oc.OffsetCommitResponsePartition(partition_index=0, error_code=0)])]))
    assert [(t.name, t.partitions[0].error_code) for t in body.topics] == [("t2", 29), ("t1", 0)]
    only_refused = gate(AUTHZ, ALICE, 8, 8, api.REQUESTS[8](group_id="ok-1", topics=req.topics[1:]), no_ids)
    assert [t.partitions[0].error_code for t in only_refused.answer.topics] == [29]
    assert gate(AUTHZ, ALICE, 8, 8, api.REQUESTS[8](group_id="look", topics=req.topics), no_ids).answer.topics[0] \
        .partitions[0].error_code == 30


def test_offset_fetch_groups_in_order_topics_appended_and_all_topics_filtered():
    req = api.REQUESTS[9](groups=[
        of.OffsetFetchRequestGroup(group_id="nope", topics=None),
        of.OffsetFetchRequestGroup(group_id="ok-1", topics=[
            of.OffsetFetchRequestTopics(name=n, partition_indexes=[0]) for n in ("t2", "t1")]),
        of.OffsetFetchRequestGroup(group_id="look", topics=None)])
    v = gate(AUTHZ, ALICE, 9, 8, req, no_ids)
    assert [(g.group_id, None if g.topics is None else [t.name for t in g.topics]) for g in v.request.groups] == \
        [("ok-1", ["t1"]), ("look", None)]
    part = of.OffsetFetchResponsePartitions(partition_index=0, committed_offset=5)
    answer = of.OffsetFetchResponse(groups=[
        of.OffsetFetchResponseGroup(group_id="ok-1", topics=[
            of.OffsetFetchResponseTopics(name="t1", partitions=[part])]),
        of.OffsetFetchResponseGroup(group_id="look", topics=[
            of.OffsetFetchResponseTopics(name=n, partitions=[part]) for n in ("t1", "t2")])])
    body = v.patch(answer)
    seen = [(g.group_id, g.error_code, [(t.name, t.partitions[0].error_code) for t in g.topics]) for g in body.groups]
    assert seen == [
        ("nope", 30, []), ("ok-1", 0, [("t1", 0), ("t2", 29)]), ("look", 0, [("t1", 0)])]


def test_describe_groups_refused_first_with_authorized_operations():
    req = api.REQUESTS[15](groups=["ok-1", "nope", "look"], include_authorized_operations=True)
    v = gate(AUTHZ, ALICE, 15, 5, req, no_ids)
    assert v.request.groups == ["ok-1", "look"]
    body = v.patch(dg.DescribeGroupsResponse(groups=[dg.DescribedGroup(group_id=g, group_state="Empty")
                                                     for g in ("ok-1", "look")]))
    assert [(g.group_id, g.error_code, g.authorized_operations) for g in body.groups] == [
        ("nope", 30, -2147483648), ("ok-1", 0, (1 << READ) | (1 << DESCRIBE)), ("look", 0, 1 << DESCRIBE)]


def test_find_coordinator_and_consumer_heartbeat_topics():
    from kcodec.generated.find_coordinator import Coordinator, FindCoordinatorResponse
    req = api.REQUESTS[10](key_type=0, coordinator_keys=["ok-1", "nope"])
    body = FindCoordinatorResponse(coordinators=[Coordinator(key=k, node_id=1, host="h", port=9)
                                                 for k in ("ok-1", "nope")])
    out = find_coordinator(AUTHZ, ALICE, 4, req, body)
    assert [(c.key, c.error_code, c.node_id) for c in out.coordinators] == [("ok-1", 0, 1), ("nope", 30, -1)]
    cgh = api.REQUESTS[68](group_id="ok-1", member_epoch=0, subscribed_topic_names=["t1", "t2"])
    assert gate(AUTHZ, ALICE, 68, 0, cgh, no_ids).answer.error_code == 29
    cgh.subscribed_topic_names = ["t1"]
    assert gate(AUTHZ, ALICE, 68, 0, cgh, no_ids).answer is None
