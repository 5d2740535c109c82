"""Offsets and group ids answered as the broker's coordinator answers them
(each answer below is the real Kafka 4.3.1 broker's, seen with raw requests;
testsuite/groups/test_offsets_vs_broker.py compares both over the wire):
the empty group id "", OffsetDelete of unknown topics/partitions and during a rebalance, the
metadata size limit in UTF-16 units, member epochs of OffsetCommit v10 (topics by id)."""

from __future__ import annotations

import pytest

from kcodec.generated.delete_groups import DeleteGroupsRequest
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.generated.offset_commit import OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic
from kcodec.generated.offset_delete import OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic
from shim.coordinator import errors as E

from .consumer.harness import ConsumerHarness, stable_pair
from .harness import COMMIT, DELETE, DESCRIBE, LIST, OFFSET_DELETE, Harness, subscription
from .test_txn_offsets import txn_commit

TOPICS = {"t1": 3, "t2": 2}
EMOJI = "\U0001F600"          # outside the BMP: 1 Python character, 2 Java chars


def offset_delete(h, gid, topics):
    """topics: [(name, [partitions])] -> (error, [(name, [(partition, error)])]) in answer order."""
    body = h.immediate(OFFSET_DELETE, 0, OffsetDeleteRequest(group_id=gid, topics=[
        OffsetDeleteRequestTopic(name=n, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps])
        for n, ps in topics]))
    return body.error_code, [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics]


# ---------------------------------------------------------------- the empty group id
@pytest.mark.parametrize("v", [2, 5, 8, 9, 10])
def test_empty_group_id_is_a_group_for_commit_fetch_describe_list_delete(v):
    h = Harness(TOPICS)
    assert h.commit("", {("t1", 0): 5}, v=v) == {("t1", 0): E.NONE}
    for fv in (1, 2, 7, 8, 10):
        err, got = h.fetch("", {"t1": [0]}, v=fv)
        assert (err, got[("t1", 0)][0]) == (E.NONE, 5), fv
    for dv in (0, 5, 6):
        (d,) = h.immediate(DESCRIBE, dv, DescribeGroupsRequest(groups=[""])).groups
        assert (d.error_code, d.group_id, d.group_state) == (E.NONE, "", "Empty")
    listed = h.immediate(LIST, 5, ListGroupsRequest(states_filter=[], types_filter=[])).groups
    assert [(g.group_id, g.group_state, g.group_type) for g in listed] == [("", "Empty", "classic")]
    (r,) = h.immediate(DELETE, 2, DeleteGroupsRequest(groups_names=[""])).results
    assert (r.group_id, r.error_code) == ("", E.NONE)
    (r,) = h.immediate(DELETE, 2, DeleteGroupsRequest(groups_names=[""])).results
    assert r.error_code == E.GROUP_ID_NOT_FOUND


def test_empty_group_id_refused_by_offset_delete_and_txn_offset_commit():
    h = Harness(TOPICS)
    h.commit("", {("t1", 0): 5})
    # the group error replaces the partitions KafkaApis answered (unknown topic)
    assert offset_delete(h, "", [("t1", [0]), ("nope", [0])]) == (E.INVALID_GROUP_ID, [])
    assert txn_commit(h, "", {("t1", 0): 1}, v=5) == {("t1", 0): E.INVALID_GROUP_ID}


def test_consumer_group_describe_of_the_empty_id_has_no_message():
    h = ConsumerHarness({"foo": 2})
    (d,) = h.describe_cg("").groups
    assert (d.error_code, d.error_message, d.group_id) == (E.INVALID_GROUP_ID, None, "")


# ---------------------------------------------------------------- OffsetDelete: KafkaApis' checks first
def test_offset_delete_unknown_topics_and_partitions_answered_first_and_merged():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1, ("t1", 1): 1})
    got = offset_delete(h, "g", [("nope", [0]), ("t1", [7, 0, 9, 1]), ("nope2", [3])])
    assert got == (E.NONE, [("nope", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]),
                            ("t1", [(7, E.UNKNOWN_TOPIC_OR_PARTITION), (9, E.UNKNOWN_TOPIC_OR_PARTITION),
                                    (0, E.NONE), (1, E.NONE)]),
                            ("nope2", [(3, E.UNKNOWN_TOPIC_OR_PARTITION)])])
    # a topic named twice: the coordinator's partitions join the first entry of that name
    got = offset_delete(h, "g", [("t1", [0]), ("t1", [1, 8])])
    assert got == (E.NONE, [("t1", [(8, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE), (1, E.NONE)])])


def test_offset_delete_group_errors_win_over_partition_errors():
    h = Harness(TOPICS)
    assert offset_delete(h, "absent", [("nope", [0]), ("t1", [5])]) == (E.GROUP_ID_NOT_FOUND, [])
    assert offset_delete(h, "absent", []) == (E.GROUP_ID_NOT_FOUND, [])


# ---------------------------------------------------------------- OffsetDelete during a rebalance
def test_offset_delete_while_preparing_rebalance_uses_the_generations_subscriptions():
    h = Harness(TOPICS)
    (a,), gen = h.stable_group(n=1, protocols=(("range", subscription("t1")),))
    h.commit("g", {("t1", 0): 1, ("t2", 0): 2}, generation=gen, member_id=a)
    _b, tok = h.join_dynamic("g", protocols=(("range", subscription("t2")),))      # a newcomer: rebalance
    assert h.group("g").state == "PreparingRebalance" and h.answer(tok) is None
    assert offset_delete(h, "g", [("t1", [0]), ("t2", [0])]) == (
        E.NONE, [("t1", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)]), ("t2", [(0, E.NONE)])])


def test_offset_delete_after_a_member_rejoins_with_another_subscription():
    h = Harness(TOPICS)
    (a, b), gen = h.stable_group(n=2, protocols=(("range", subscription("t1")),))
    tok_a = h.join("g", a, protocols=(("range", subscription("t2")),))         # b has not rejoined yet
    assert h.group("g").state == "PreparingRebalance"
    assert offset_delete(h, "g", [("t1", [0]), ("t2", [0])]) == (
        E.NONE, [("t1", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)]), ("t2", [(0, E.NONE)])])
    tok_b = h.join("g", b, protocols=(("range", subscription("t2")),))
    gen = h.answered(tok_a).generation_id                       # the next generation subscribes to t2 only
    h.answered(h.sync("g", a, gen, assignments={a: b"", b: b""}))
    h.answered(h.sync("g", b, h.answered(tok_b).generation_id))
    assert offset_delete(h, "g", [("t1", [0]), ("t2", [0])]) == (
        E.NONE, [("t1", [(0, E.NONE)]), ("t2", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)])])


def test_offset_delete_during_the_first_rebalance_counts_every_topic_subscribed():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1})
    h.join_dynamic("g", protocols=(("range", subscription("t1")),))
    assert offset_delete(h, "g", [("t2", [0])]) == (E.NONE, [("t2", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)])])


# ---------------------------------------------------------------- metadata size: Java chars
@pytest.mark.parametrize("v", [2, 9, 10])
def test_commit_metadata_limit_counts_utf16_units(v):
    h = Harness(TOPICS)
    got = h.commit("g", {("t1", 0): 1, ("t1", 1): 1, ("t1", 2): 1}, v=v,
                   metadata={("t1", 0): EMOJI * 2048, ("t1", 1): EMOJI * 2049, ("t1", 2): "é" * 4096})
    assert got == {("t1", 0): E.NONE, ("t1", 1): E.OFFSET_METADATA_TOO_LARGE, ("t1", 2): E.NONE}


def test_txn_commit_metadata_limit_counts_utf16_units():
    h = Harness(TOPICS)
    assert txn_commit(h, "g", {("t1", 0): 1}, metadata=EMOJI * 2049) == {("t1", 0): E.OFFSET_METADATA_TOO_LARGE}
    assert txn_commit(h, "g", {("t1", 1): 1}, metadata=EMOJI * 2048) == {("t1", 1): E.NONE}


# ---------------------------------------------------------------- member epochs by topic id (v10)
def commit_v10(h, gid, partitions, epoch, member_id, metadata="", v=10):
    """v10 names topics by id only (the name is empty), older versions by name."""
    req = OffsetCommitRequest(group_id=gid, generation_id_or_member_epoch=epoch, member_id=member_id, topics=[
        OffsetCommitRequestTopic(name="" if v >= 10 else t, topic_id=h.tid(t), partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=1, committed_metadata=metadata)])
        for t, p in partitions])
    body = h.immediate(COMMIT, v, req)
    return [p.error_code for t in body.topics for p in t.partitions]


def test_commit_v10_with_an_older_epoch_on_a_partition_not_held_is_stale():
    h = ConsumerHarness({"foo": 4, "bar": 2})
    a, _b = stable_pair(h)
    other = next(p for p in range(4) if p not in a.owned["foo"])
    assert commit_v10(h, "g", [("foo", other)], a.epoch - 1, "a") == [E.STALE_MEMBER_EPOCH]
    assert commit_v10(h, "g", [("bar", 0)], a.epoch - 1, "a") == [E.STALE_MEMBER_EPOCH]   # not subscribed
    assert commit_v10(h, "g", [("foo", other)], a.epoch, "a") == [E.NONE]


@pytest.mark.parametrize("v", [9, 10])
def test_partitions_with_too_large_metadata_are_not_epoch_checked(v):
    h = ConsumerHarness({"foo": 4})
    a, _b = stable_pair(h)
    other = next(p for p in range(4) if p not in a.owned["foo"])
    assert commit_v10(h, "g", [("foo", other)], a.epoch - 1, "a", "x" * 4097, v=v) == [E.OFFSET_METADATA_TOO_LARGE]
