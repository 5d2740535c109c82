"""Consumer groups seen by the other APIs: ConsumerGroupDescribe, ListGroups/DescribeGroups/
DeleteGroups/OffsetDelete, classic APIs on a consumer group with migration disabled (
test_migration.py has the rest),
OffsetCommit/OffsetFetch/TxnOffsetCommit member epochs (ConsumerGroup.validateOffsetCommit / validateOffsetFetch)."""

from __future__ import annotations

import pytest

from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from shim.coordinator import errors as E
from testsuite.coordinator.consumer.harness import CGD, Client, ConsumerHarness, stable_pair
from testsuite.coordinator.harness import FETCH, subscription


@pytest.fixture
def h():
    return ConsumerHarness({"foo": 4, "bar": 2})


def test_consumer_group_describe(h):
    a, b = stable_pair(h)
    (g,) = h.describe_cg("g").groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (0, "Stable", 3, 3,
                                                                                                 "uniform")
    ms = {m.member_id: m for m in g.members}
    assert set(ms) == {"a", "b"}
    for cl in (a, b):
        m = ms[cl.member_id]
        assert m.member_epoch == 3 and m.member_type == 1 and m.subscribed_topic_names == ["foo"]
        assert {tp.topic_name: tp.partitions for tp in m.assignment.topic_partitions} == cl.owned
        assert {tp.topic_name: tp.partitions for tp in m.target_assignment.topic_partitions} == cl.owned
    nf, empty = h.describe_cg("nope", "").groups
    assert nf.error_code == E.GROUP_ID_NOT_FOUND and empty.error_code == E.INVALID_GROUP_ID
    (v0,) = h.describe_cg("g", v=0).groups
    assert v0.members[0].member_type == -1


@pytest.mark.parametrize("ask", [False, True])
def test_consumer_group_describe_authorized_operations_without_an_authorizer(h, ask):
    """As KafkaApis with no authorizer: all GROUP operations (3400) on groups answered without error."""
    stable_pair(h)
    req = ConsumerGroupDescribeRequest(group_ids=["g", "nope"], include_authorized_operations=ask)
    g, nf = h.immediate(CGD, 1, req).groups
    assert g.authorized_operations == (3400 if ask else -2147483648)
    assert nf.error_code == E.GROUP_ID_NOT_FOUND and nf.authorized_operations == -2147483648


def test_list_and_describe_groups(h):
    stable_pair(h)
    h.cgh("empty", "x")
    h.cgh("empty", "x", -1, topics=None, owned=None)
    h.join("classic")                                     # a classic group being formed
    listed = {g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in h.list_groups().groups}
    assert listed["g"] == ("consumer", "Stable", "consumer")
    assert listed["empty"] == ("consumer", "Empty", "consumer")
    assert listed["classic"][2] == "classic"
    assert {g.group_id for g in h.list_groups(types=["Consumer"]).groups} == {"g", "empty"}
    assert {g.group_id for g in h.list_groups(types=["classic"]).groups} == {"classic"}
    assert {g.group_id for g in h.list_groups(states=["empty"]).groups} == {"empty", "classic"}   # pending only
    assert {g.group_id for g in h.list_groups(states=["Stable"]).groups} == {"g"}
    assert {g.group_id for g in h.list_groups(states=["empty"], types=["consumer"]).groups} == {"empty"}
    (d,) = h.describe("g").groups                        # DescribeGroups: not a classic group
    assert (d.error_code, d.group_state) == (E.GROUP_ID_NOT_FOUND, "Dead")


def test_delete_groups(h):
    stable_pair(h)
    h.cgh("empty", "x")
    h.cgh("empty", "x", -1, topics=None, owned=None)
    h.commit("empty", {("foo", 0): 5})
    res = {r.group_id: r.error_code for r in h.delete("g", "empty", "nope").results}
    assert res == {"g": E.NON_EMPTY_GROUP, "empty": E.NONE, "nope": E.GROUP_ID_NOT_FOUND}
    assert h.cg("empty") is None and h.cg("g") is not None
    assert h.fetch("empty", {"foo": [0]})[1][("foo", 0)][0] == -1


def test_offset_delete(h):
    a, b = stable_pair(h)
    h.commit("g", {("foo", 0): 1}, generation=a.epoch, member_id="a")
    err, parts = h.offset_delete("g", {"foo": [0], "bar": [0]})
    assert err == 0 and parts == {("foo", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("bar", 0): E.NONE}
    assert h.offset_delete("nope", {"foo": [0]})[0] == E.GROUP_ID_NOT_FOUND


def test_classic_apis_on_a_consumer_group():
    """With migration disabled no classic member gets in; members of the consumer protocol are unknown to
    SyncGroup/Heartbeat but LeaveGroup removes them (classic_members.py has the enabled cases)."""
    h = ConsumerHarness({"foo": 4, "bar": 2}, consumer_migration_policy="disabled")
    stable_pair(h)
    r = h.answered(h.join("g"))
    assert r.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.answered(h.sync("g", "a", 3)).error_code == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", "a", 3).error_code == E.UNKNOWN_MEMBER_ID
    r = h.leave("g", ("a", None), ("zz", None))
    assert [m.error_code for m in r.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert set(h.cg().members) == {"b"}


def test_leave_group_admin_removal_of_a_static_member(h):
    a = Client(h, "a", instance="ia")
    a.beat()
    epoch = h.cg().group_epoch
    r = h.leave("g", ("", "ia"), ("", "nobody"))
    assert [(m.member_id, m.error_code) for m in r.members] == [("", 0), ("", E.UNKNOWN_MEMBER_ID)]
    assert h.cg().members == {} and h.cg().group_epoch == epoch + 1


def test_empty_groups_convert_both_ways(h):
    h.cgh()
    h.cgh(epoch=-1, topics=None, owned=None)
    r = h.answered(h.join("g"))                           # empty consumer group -> classic
    assert r.error_code == E.MEMBER_ID_REQUIRED and h.cg() is None and h.group("g") is not None
    h2 = ConsumerHarness({"foo": 4})
    h2.commit("s", {("foo", 0): 3})                        # a simple (empty classic) group
    r = h2.cgh("s", "m")
    assert r.error_code == 0 and h2.cg("s") is not None and h2.group("s") is None
    assert h2.fetch("s", {"foo": [0]})[1][("foo", 0)][0] == 3


def test_non_empty_classic_group_is_not_upgraded_when_disabled():
    h = ConsumerHarness({"foo": 4, "bar": 2}, consumer_migration_policy="disabled")
    mid, tok = h.join_dynamic("c", protocols=(("range", subscription("foo")),))
    h.advance(3000)
    assert h.answered(tok).error_code == 0
    r = h.cgh("c", "m")
    assert r.error_code == E.GROUP_ID_NOT_FOUND


# ---------------------------------------------------------------------- offsets (E 35, 36)
def test_commit_member_epochs(h):
    a, b = stable_pair(h)
    owned_a = a.owned["foo"]
    other = next(p for p in range(4) if p not in owned_a)
    assert h.commit("g", {("foo", owned_a[0]): 1}, generation=3, member_id="a") == {("foo", owned_a[0]): 0}
    assert h.commit("g", {("foo", owned_a[0]): 1}, generation=4, member_id="a") == {
        ("foo", owned_a[0]): E.STALE_MEMBER_EPOCH}
    assert h.commit("g", {("foo", 0): 1}, generation=3, member_id="zz") == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    assert h.commit("g", {("foo", 0): 1}) == {("foo", 0): E.UNKNOWN_MEMBER_ID}      # admin commit, members
    assert h.commit("g", {("foo", owned_a[0]): 1}, generation=3, member_id="a", v=8) == {
        ("foo", owned_a[0]): E.UNSUPPORTED_VERSION}
    # KIP-1251: an older epoch is accepted for partitions held since then, the whole request fails otherwise
    m = h.cg().members["a"]
    at = {p: e for p, e in m.assigned[h.tid("foo")].items()}
    p_old = next((p for p, e in at.items() if e <= 2), None)
    if p_old is not None:
        assert h.commit("g", {("foo", p_old): 1}, generation=2, member_id="a") == {("foo", p_old): 0}
    res = h.commit("g", {("foo", owned_a[0]): 1, ("foo", other): 1}, generation=2, member_id="a")
    assert set(res.values()) == {E.STALE_MEMBER_EPOCH}


def test_admin_commit_on_empty_consumer_group(h):
    h.cgh()
    h.cgh(epoch=-1, topics=None, owned=None)
    assert h.commit("g", {("foo", 0): 9}) == {("foo", 0): 0}
    assert h.cg() is not None and h.group("g") is None       # no simple classic group appears


def fetch_as(h, gid, member_id, epoch, v=9):
    req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=gid, member_id=member_id, member_epoch=epoch,
                                                             topics=[OffsetFetchRequestTopics(name="foo",
                                                                                              topic_id=h.tid("foo"),
                                                                                              partition_indexes=[0])])])
    (g,) = h.immediate(FETCH, v, req).groups
    return g.error_code, [p.committed_offset for t in g.topics for p in t.partitions]


def test_fetch_member_epochs(h):
    a, b = stable_pair(h)
    h.commit("g", {("foo", a.owned["foo"][0]): 4}, generation=3, member_id="a")
    assert fetch_as(h, "g", "a", 3)[0] == 0
    assert fetch_as(h, "g", "a", 2) == (E.STALE_MEMBER_EPOCH, [])
    assert fetch_as(h, "g", "zz", 3) == (E.UNKNOWN_MEMBER_ID, [])
    assert fetch_as(h, "g", None, -1)[0] == 0
    assert fetch_as(h, "nope", "a", 3) == (0, [-1])


def test_transactional_offsets_of_a_consumer_group_apply_at_commit(h):
    """TxnOffsetCommit by a consumer-protocol member (member epoch as generation): pending until the
    transaction ends, then committed (or dropped on abort). The end of a transaction finds the group
    among consumer groups as well as classic groups."""
    from testsuite.coordinator.test_txn_offsets import end, txn_commit
    a, _b = stable_pair(h)
    p = a.owned["foo"][0]
    assert txn_commit(h, "g", {("foo", p): 7}, generation=3, member_id="a", v=5) == {("foo", p): 0}
    _err, got = h.fetch("g", {"foo": [p]})
    assert got[("foo", p)][0] == -1                      # pending: invisible
    end(h, committed=True)
    _err, got = h.fetch("g", {"foo": [p]})
    assert got[("foo", p)][0] == 7
    assert txn_commit(h, "g", {("foo", p): 9}, generation=3, member_id="a", v=5, epoch=4) == {("foo", p): 0}
    end(h, committed=False, epoch=4)
    _err, got = h.fetch("g", {"foo": [p]})
    assert got[("foo", p)][0] == 7
