"""OffsetCommit, OffsetFetch and OffsetDelete with classic groups (OffsetMetadataManager.commitOffset /
fetchOffsets / deleteOffsets)."""

import pytest

from shim.coordinator import errors as E
from shim.coordinator.state_records import OffsetRecord, OffsetTombstone

from .harness import DELAY, PROTOS, Harness, subscription

TOPICS = {"t1": 3, "t2": 2}


# ---------------------------------------------------------------- OffsetCommit

@pytest.mark.parametrize("v", range(2, 11))
def test_commit_to_absent_group_with_generation_minus_one_creates_a_simple_group(v):
    h = Harness(TOPICS)
    assert h.commit("g", {("t1", 0): 10, ("t1", 2): 12}, v=v) == {("t1", 0): E.NONE, ("t1", 2): E.NONE}
    g = h.group("g")
    assert (g.state, g.protocol_type, g.generation_id, g.members) == ("Empty", None, 0, {})
    err, got = h.fetch("g", {"t1": [0, 1, 2]})
    assert got == {("t1", 0): (10, 7 if v >= 6 else -1, "", E.NONE), ("t1", 1): (-1, -1, "", E.NONE),
                   ("t1", 2): (12, 7 if v >= 6 else -1, "", E.NONE)}


@pytest.mark.parametrize("v,err", [(2, E.ILLEGAL_GENERATION), (8, E.ILLEGAL_GENERATION),
                                   (9, E.GROUP_ID_NOT_FOUND)])
def test_commit_to_absent_group_with_a_generation(v, err):
    h = Harness(TOPICS)
    got = h.commit("g", {("t1", 0): 1, ("t2", 1): 1}, generation=3, member_id="m", v=v)
    assert got == {("t1", 0): err, ("t2", 1): err}
    assert h.group("g") is None


def test_commit_unknown_topic_or_partition_never_reaches_the_group():
    h = Harness(TOPICS)
    got = h.commit("g", {("nope", 0): 1, ("t1", 3): 1, ("t1", -1): 1, ("t2", 1): 5})
    assert got == {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION, ("t1", 3): E.UNKNOWN_TOPIC_OR_PARTITION,
                   ("t1", -1): E.UNKNOWN_TOPIC_OR_PARTITION, ("t2", 1): E.NONE}
    assert h.commit("other", {("nope", 0): 1}, generation=3, member_id="m") == \
        {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.group("other") is None


def test_commit_metadata_too_large_only_for_that_partition():
    h = Harness(TOPICS)
    got = h.commit("g", {("t1", 0): 1, ("t1", 1): 2},
                   metadata={("t1", 0): "x" * 4096, ("t1", 1): "x" * 4097})
    assert got == {("t1", 0): E.NONE, ("t1", 1): E.OFFSET_METADATA_TOO_LARGE}
    _, fetched = h.fetch("g", {"t1": [0, 1]})
    assert fetched[("t1", 0)][2] == "x" * 4096 and fetched[("t1", 1)][0] == -1


def test_commit_retention_before_v5_sets_an_expiry():
    h = Harness(TOPICS)
    h.advance(1_000)
    h.commit("g", {("t1", 0): 1}, v=2, retention=60_000)
    h.commit("g", {("t1", 1): 1}, v=4, retention=-1)
    recs = [r for r in h.c.written if isinstance(r, OffsetRecord)]
    assert [(r.partition, r.commit_timestamp_ms, r.expire_timestamp_ms) for r in recs] == \
        [(0, 1_000, 61_000), (1, 1_000, None)]


def test_commit_from_group_members():
    h = Harness(TOPICS)
    (a, b), gen = h.stable_group(n=2, instances=["i1", None])
    ok = {("t1", 0): E.NONE}
    assert h.commit("g", {("t1", 0): 1}, generation=gen, member_id=a, instance="i1") == ok
    assert h.commit("g", {("t1", 0): 1}, generation=gen, member_id=b) == ok
    assert h.commit("g", {("t1", 0): 1}, generation=gen + 1, member_id=b) == {("t1", 0): E.ILLEGAL_GENERATION}
    assert h.commit("g", {("t1", 0): 1}, generation=gen, member_id="who") == {("t1", 0): E.UNKNOWN_MEMBER_ID}
    assert h.commit("g", {("t1", 0): 1}, generation=gen, member_id=b, instance="i1") == \
        {("t1", 0): E.FENCED_INSTANCE_ID}
    assert h.commit("g", {("t1", 0): 1}) == {("t1", 0): E.UNKNOWN_MEMBER_ID}      # no identity, not Empty
    # v6 has no instance id field: the instance is not validated
    assert h.commit("g", {("t1", 0): 1}, generation=gen, member_id=b, instance="i1", v=6) == ok


def test_commit_during_rebalance():
    h = Harness(TOPICS)
    (a, b), gen = h.stable_group(n=2)
    ta = h.join("g", a)
    h.join("g", b, protocols=PROTOS)
    assert h.group("g").state == "CompletingRebalance"
    new_gen = h.answered(ta).generation_id
    assert h.commit("g", {("t1", 0): 1}, generation=new_gen, member_id=b) == \
        {("t1", 0): E.REBALANCE_IN_PROGRESS}
    h.answered(h.sync("g", a, new_gen, assignments={}))
    h.join("g", a)                                                # PreparingRebalance again
    assert h.group("g").state == "PreparingRebalance"
    assert h.commit("g", {("t1", 0): 1}, generation=new_gen, member_id=b) == {("t1", 0): E.NONE}


def test_commit_refreshes_the_session_in_stable():
    h = Harness(TOPICS)
    (a, b), gen = h.stable_group(n=2)
    t0 = h.now
    for t in range(3_000, 24_001, 3_000):
        h.advance_to(t0 + t)
        h.heartbeat("g", a, gen)
        h.commit("g", {("t1", 0): t}, generation=gen, member_id=b)   # b only commits
    assert set(h.group("g").members) == {a, b} and h.group("g").state == "Stable"


def test_commit_with_generation_minus_one_on_empty_classic_group():
    h = Harness(TOPICS)
    (a,), gen = h.stable_group(n=1)
    h.leave("g", (a, None))
    assert h.group("g").state == "Empty"
    assert h.commit("g", {("t1", 0): 3}) == {("t1", 0): E.NONE}
    assert h.commit("g", {("t1", 0): 3}, generation=gen + 1, member_id=a) == {("t1", 0): E.UNKNOWN_MEMBER_ID}


# ---------------------------------------------------------------- OffsetFetch

@pytest.mark.parametrize("v", range(1, 11))
def test_fetch_absent_group(v):
    h = Harness(TOPICS)
    err, got = h.fetch("g", {"t1": [0, 1]}, v=v)
    assert err == E.NONE
    assert got == {("t1", 0): (-1, -1, "", E.NONE), ("t1", 1): (-1, -1, "", E.NONE)}
    if v >= 2:
        assert h.fetch("g", None, v=v) == (E.NONE, {})
    assert h.group("g") is None


@pytest.mark.parametrize("v", [2, 5, 7, 8, 9])
def test_fetch_all_topics(v):
    h = Harness(TOPICS)
    h.commit("g", {("t2", 1): 21, ("t1", 0): 10, ("t1", 2): 12}, metadata="md")
    err, got = h.fetch("g", None, v=v)
    epoch = 7 if v >= 5 else -1
    assert (err, got) == (E.NONE, {("t1", 0): (10, epoch, "md", E.NONE), ("t1", 2): (12, epoch, "md", E.NONE),
                                   ("t2", 1): (21, epoch, "md", E.NONE)})


# ---------------------------------------------------------------- OffsetDelete

def test_offset_delete_absent_group():
    h = Harness(TOPICS)
    assert h.offset_delete("g", {"t1": [0]}) == (E.GROUP_ID_NOT_FOUND, {})


def test_offset_delete_non_consumer_group_not_empty():
    h = Harness(TOPICS)
    tok = h.join("g", v=3, ptype="connect")
    assert h.offset_delete("g", {"t1": [0]}) == (E.NON_EMPTY_GROUP, {})
    h.advance(DELAY)
    assert h.answered(tok).error_code == E.NONE


def test_offset_delete_subscribed_topic_in_a_consumer_group():
    h = Harness(TOPICS)
    subs = (("range", subscription("t1")),)
    (a, b), gen = h.stable_group(n=2, protocols=subs)
    h.commit("g", {("t1", 0): 1, ("t2", 0): 2, ("t2", 1): 3}, generation=gen, member_id=a)
    err, got = h.offset_delete("g", {"t1": [0, 1], "t2": [0, 5]})
    assert err == E.NONE
    assert got == {("t1", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("t1", 1): E.GROUP_SUBSCRIBED_TO_TOPIC,
                   ("t2", 0): E.NONE, ("t2", 5): E.UNKNOWN_TOPIC_OR_PARTITION}   # KafkaApis checks the partition
    assert [r for r in h.c.written if isinstance(r, OffsetTombstone)] == [OffsetTombstone("g", "t2", 0)]
    _, fetched = h.fetch("g", {"t1": [0], "t2": [0, 1]})
    assert fetched == {("t1", 0): (1, 7, "", E.NONE), ("t2", 0): (-1, -1, "", E.NONE), ("t2", 1): (3, 7, "", E.NONE)}


def test_offset_delete_with_subscription_v3_metadata():
    h = Harness(TOPICS)
    h.stable_group(n=1, protocols=(("range", subscription("t2", version=3)),))
    err, got = h.offset_delete("g", {"t1": [0], "t2": [0]})
    assert got == {("t1", 0): E.NONE, ("t2", 0): E.GROUP_SUBSCRIBED_TO_TOPIC}


def test_offset_delete_unparsable_consumer_metadata_counts_as_subscribed():
    h = Harness(TOPICS)
    h.stable_group(n=1, protocols=(("range", b"\x00\x01garbage"),))
    assert h.offset_delete("g", {"t1": [0]}) == (E.NONE, {("t1", 0): E.GROUP_SUBSCRIBED_TO_TOPIC})


def test_offset_delete_on_empty_group():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1})
    assert h.offset_delete("g", {"t1": [0]}) == (E.NONE, {("t1", 0): E.NONE})
    assert h.fetch("g", {"t1": [0]})[1] == {("t1", 0): (-1, -1, "", E.NONE)}
