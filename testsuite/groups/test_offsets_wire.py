"""OffsetCommit/OffsetFetch v10 (topics by id), older versions by name, and offsets of a deleted
topic - the same raw requests sent to the real broker's coordinator and to kshim's, answers compared
(OffsetCommit / OffsetFetch v10, deleted topics)."""

from __future__ import annotations

import time
import uuid

from kcodec.generated.metadata import MetadataRequest, MetadataRequestTopic
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics

from shim.compat.pymembers import create_topic
from shim.compat.wire import Wire

METADATA, COMMIT, FETCH = 3, 8, 9
GHOST = uuid.UUID("00000000-0000-4000-8000-00000000dead")


def call(bootstrap: str, api_key: int, version: int, req):
    with Wire(bootstrap) as w:
        w.send(api_key, version, req)
        return w.read_response(api_key, version)[1]


def topic_id(bootstrap: str, name: str) -> uuid.UUID:
    body = call(bootstrap, METADATA, 12, MetadataRequest(topics=[MetadataRequestTopic(name=name)],
                                                         allow_auto_topic_creation=False))
    (t,) = body.topics
    assert t.error_code == 0
    return t.topic_id


def commit(bootstrap, group, version, topics):
    """topics: [(name, id, {partition: offset})] -> sorted [(name-or-id, partition, error)]."""
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name=name if version < 10 else "", topic_id=tid, partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_metadata="m")
            for p, o in parts.items()]) for name, tid, parts in topics])
    body = call(bootstrap, COMMIT, version, req)
    return sorted((str(t.topic_id) if version >= 10 else t.name, p.partition_index, p.error_code)
                  for t in body.topics for p in t.partitions)


def fetch(bootstrap, group, version, topics):
    """topics: None or [(name, id, [partitions])] -> (group error, sorted [(key, partition, offset, error)])."""
    req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None if topics is None else [
        OffsetFetchRequestTopics(name=name if version < 10 else "", topic_id=tid, partition_indexes=parts)
        for name, tid, parts in topics])])
    (g,) = call(bootstrap, FETCH, version, req).groups
    return g.error_code, sorted((str(t.topic_id) if version >= 10 else t.name, p.partition_index,
                                 p.committed_offset, p.error_code) for t in g.topics for p in t.partitions)


def find_coordinator(bootstrap: str, group: str) -> None:
    """As clients do first (the broker creates __consumer_offsets on demand and loads it)."""
    from kcodec.generated.find_coordinator import FindCoordinatorRequest
    deadline = time.monotonic() + 30
    while True:
        body = call(bootstrap, 10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
        if body.coordinators[0].error_code == 0:
            break
        assert time.monotonic() < deadline, body
        time.sleep(0.2)
    while fetch(bootstrap, group, 8, None)[0] != 0:           # offsets partition still loading
        assert time.monotonic() < deadline
        time.sleep(0.2)


def scenario(bootstrap: str, group: str, topic: str, tid: uuid.UUID) -> dict:
    find_coordinator(bootstrap, group)
    out = {}
    out["commit_v10"] = commit(bootstrap, group, 10, [(topic, tid, {0: 5, 1: 7, 9: 1}), ("", GHOST, {0: 1})])
    out["commit_v9"] = commit(bootstrap, group, 9, [(topic, None, {2: 11}), ("no-such-topic-x", None, {0: 1})])
    out["fetch_v10"] = fetch(bootstrap, group, 10, [(topic, tid, [0, 1, 2, 3]), ("", GHOST, [0])])
    out["fetch_v10_all"] = fetch(bootstrap, group, 10, None)
    out["fetch_v8_all"] = fetch(bootstrap, group, 8, None)
    return out


def test_offset_commit_and_fetch_v10_agree_with_the_broker(kafka, kshim, new_topic, names):
    topic, group = new_topic(partitions=4), names.group()
    tid = topic_id(kafka.bootstrap, topic)
    assert topic_id(kshim.bootstrap, topic) == tid          # ids pass through kshim's Metadata rewrite
    broker, shim = scenario(kafka.bootstrap, group, topic, tid), scenario(kshim.bootstrap, group, topic, tid)
    assert shim == broker
    # and the values are the ones committed (not just equal between the two)
    assert [o for (_, p, o, e) in shim["fetch_v10"][1] if e == 0] == [5, 7, 11, -1]


def test_offsets_of_a_deleted_topic_go_away_as_on_the_broker(kafka, kshim, names):
    from confluent_kafka.admin import AdminClient
    topic, group = names.topic(), names.group()
    create_topic(kafka.bootstrap, topic, 2)
    for b in (kafka.bootstrap, kshim.bootstrap):
        find_coordinator(b, group)
        assert commit(b, group, 9, [(topic, None, {0: 3, 1: 4})]) == [(topic, 0, 0), (topic, 1, 0)]
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    seen = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(seen) < 2:
        for name, b in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
            got = fetch(b, group, 8, [(topic, None, [0, 1])])
            if name not in seen and got == (0, [(topic, 0, -1, 0), (topic, 1, -1, 0)]):
                seen[name] = time.monotonic()
        time.sleep(0.2)
    assert set(seen) == {"broker", "kshim"}, seen
    # the group itself remains (Empty, no offsets) on both until the retention cleanup
    for b in (kafka.bootstrap, kshim.bootstrap):
        assert fetch(b, group, 8, None) == (0, [])


def test_authorized_operations_without_an_authorizer_agree_with_the_broker(kafka, kshim, new_topic, names):
    """DescribeGroups v3-6 with IncludeAuthorizedOperations: a broker without an authorizer reports
    every operation a group supports on entries without error (KIP-430); so does kshim."""
    from kcodec.generated.describe_groups import DescribeGroupsRequest
    topic, group, ghost = new_topic(partitions=1), names.group(), names.group()
    seen = {}
    for name, b in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
        find_coordinator(b, group)
        assert commit(b, group, 9, [(topic, None, {0: 1})]) == [(topic, 0, 0)]
        # sorted: the broker answers groups in __consumer_offsets partition order, kshim in request order
        seen[name] = {(v, ask): sorted((g.group_id == group, g.error_code, g.authorized_operations)
                                       for g in call(b, 15, v, DescribeGroupsRequest(
                                           groups=[group, ghost], include_authorized_operations=ask)).groups)
                      for v in (3, 5, 6) for ask in (False, True)}
    assert seen["kshim"] == seen["broker"]
    assert seen["kshim"][(6, True)] == [(False, 69, -2147483648), (True, 0, 3400)]
