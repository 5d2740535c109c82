"""OffsetCommit v10 / OffsetFetch v10 (topics by id, KIP-848), offsets of deleted or
recreated topics, against the coordinator's live topic catalog."""

import uuid

import pytest

from shim.coordinator import errors as E
from shim.coordinator.metadata import TopicInfo
from shim.coordinator.state_records import OffsetRecord, OffsetTombstone

from .harness import Harness

TOPICS = {"t1": 3, "t2": 2}


def test_commit_v10_resolves_topic_ids_and_stores_them():
    h = Harness(TOPICS)
    assert h.commit("g", {("t1", 0): 10, ("t2", 1): 5}, v=10) == {("t1", 0): E.NONE, ("t2", 1): E.NONE}
    recs = [r for r in h.c.written if isinstance(r, OffsetRecord)]
    assert {(r.topic, r.partition, r.topic_id) for r in recs} == {
        ("t1", 0, h.topic_id("t1")), ("t2", 1, h.topic_id("t2"))}
    # readable by name through an older version and by id through v10
    assert h.fetch("g", {"t1": [0]}, v=9)[1] == {("t1", 0): (10, 7, "", E.NONE)}
    assert h.fetch("g", {"t1": [0], "t2": [1]}, v=10)[1] == {("t1", 0): (10, 7, "", E.NONE),
                                                            ("t2", 1): (5, 7, "", E.NONE)}


def test_commit_v10_unknown_topic_id_and_unknown_partition():
    h = Harness(TOPICS)
    got = h.commit("g", {("ghost", 0): 1, ("ghost", 1): 1, ("t1", 3): 1, ("t1", 2): 1}, v=10)
    assert got == {("ghost", 0): E.UNKNOWN_TOPIC_ID, ("ghost", 1): E.UNKNOWN_TOPIC_ID,
                   ("t1", 3): E.UNKNOWN_TOPIC_OR_PARTITION, ("t1", 2): E.NONE}
    # v9 names the same unknown topic by name: UNKNOWN_TOPIC_OR_PARTITION
    assert h.commit("g", {("ghost", 0): 1}, v=9) == {("ghost", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


def test_fetch_v10_unknown_id_gets_unknown_topic_id_and_minus_one():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 10}, v=10)
    err, got = h.fetch("g", {"ghost": [0, 1], "t1": [0, 1]}, v=10)
    assert err == E.NONE
    assert got == {("ghost", 0): (-1, -1, "", E.UNKNOWN_TOPIC_ID), ("ghost", 1): (-1, -1, "", E.UNKNOWN_TOPIC_ID),
                   ("t1", 0): (10, 7, "", E.NONE), ("t1", 1): (-1, -1, "", E.NONE)}


def test_fetch_v10_all_topics_carries_ids_and_drops_unknown_topics():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 10, ("t2", 0): 3}, v=9)
    h.c.offsets.by_group["g"][("old", 0)] = OffsetRecord("g", "old", 0, 1, -1, "", 0, None, None)
    body = h.immediate(9, 10, _fetch_all("g"))
    (grp,) = body.groups
    assert {t.topic_id for t in grp.topics} == {h.topic_id("t1"), h.topic_id("t2")}
    assert sorted((h.topics.topic(t.topic_id).name, p.partition_index, p.committed_offset)
                  for t in grp.topics for p in t.partitions) == [("t1", 0, 10), ("t2", 0, 3)]
    # v9 still lists by name, the unknown topic included (names need no resolution)
    body = h.immediate(9, 9, _fetch_all("g"))
    assert sorted(t.name for t in body.groups[0].topics) == ["old", "t1", "t2"]


def test_deleted_topic_offsets_are_tombstoned_when_the_deletion_is_seen():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 10, ("t2", 0): 3})
    h.commit("g2", {("t1", 1): 4})
    del h.topics["t1"]
    start = len(h.c.written)
    h.c.metadata_updated(now_ms=h.now)
    assert sorted((r.group_id, r.topic, r.partition) for r in h.c.written[start:]
                  if isinstance(r, OffsetTombstone)) == [("g", "t1", 0), ("g2", "t1", 1)]
    assert h.fetch("g", None)[1] == {("t2", 0): (3, 7, "", E.NONE)}
    # nothing else changed: a second look writes nothing
    start = len(h.c.written)
    h.c.metadata_updated(now_ms=h.now)
    assert h.c.written[start:] == []


def test_topic_recreated_between_two_looks_drops_the_old_offsets():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 10}, v=10)
    old_id = h.topic_id("t1")
    h.topics.put(TopicInfo("t1", uuid.uuid4(), 3))    # deleted and created again, new id
    assert h.topic_id("t1") != old_id
    h.c.metadata_updated(now_ms=h.now)
    assert h.fetch("g", {"t1": [0]}, v=10)[1] == {("t1", 0): (-1, -1, "", E.NONE)}


def test_fetch_v10_ignores_an_offset_stored_for_an_older_topic_id():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 10}, v=10)
    stale = uuid.uuid4()
    h.c.offsets.by_group["g"][("t1", 0)] = OffsetRecord("g", "t1", 0, 10, -1, "", 0, None, stale)
    assert h.fetch("g", {"t1": [0]}, v=10)[1] == {("t1", 0): (-1, -1, "", E.NONE)}
    assert h.fetch("g", {"t1": [0]}, v=9)[1] == {("t1", 0): (10, -1, "", E.NONE)}   # names only: found


@pytest.mark.parametrize("v", [2, 9, 10])
def test_catalog_version_moves_only_on_change(v):
    h = Harness(TOPICS)
    before = h.topics.version
    assert not h.topics.put(h.topics.get("t1"))
    assert h.topics.version == before
    h.topics["t1"] = 4                               # grown: same id
    assert h.topics.version == before + 1 and h.topics.get("t1").topic_id == h.topic_id("t1")
    assert h.commit("g", {("t1", 3): 1}, v=v) == {("t1", 3): E.NONE}


def _fetch_all(gid):
    from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
    return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=gid, topics=None)])
