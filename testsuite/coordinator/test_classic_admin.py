"""DescribeGroups, ListGroups, DeleteGroups (GroupMetadataManager.describeGroups / listGroups /
deleteGroups)."""

import pytest

from shim.authz.acl import GROUP, SUPPORTED_OPERATIONS
from shim.coordinator import errors as E
from shim.coordinator.releases import NEWEST, group_operations
from shim.coordinator.state_records import GroupTombstone, OffsetTombstone

from kcodec.generated.describe_groups import DescribeGroupsRequest

from .harness import DELAY, DESCRIBE, Harness, java_member_order


def _three_states(h):
    """'stable' Stable, 'preparing' PreparingRebalance, 'simple' Empty (offsets only)."""
    h.stable_group("stable", n=2)
    h.join_dynamic("preparing")
    h.topics["t"] = 1
    assert h.commit("simple", {("t", 0): 5}) == {("t", 0): E.NONE}


@pytest.mark.parametrize("v", range(0, 7))
def test_describe_unknown_group(v):
    h = Harness()
    (grp,) = h.describe("nope", v=v).groups
    assert (grp.group_id, grp.group_state, grp.protocol_type, grp.protocol_data, grp.members) == \
        ("nope", "Dead", "", "", [])
    if v >= 6:
        assert grp.error_code == E.GROUP_ID_NOT_FOUND and grp.error_message
    else:
        assert grp.error_code == E.NONE and grp.error_message is None


@pytest.mark.parametrize("v", range(0, 7))
def test_describe_stable_group(v):
    h = Harness()
    (a, b), gen = h.stable_group(n=2, instances=["i1", None])
    (grp,) = h.describe("g", v=v).groups
    assert (grp.error_code, grp.group_state, grp.protocol_type, grp.protocol_data) == \
        (E.NONE, "Stable", "consumer", "range")
    assert [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.member_metadata,
             m.member_assignment) for m in grp.members] == [
        (x, "i1" if v >= 4 and x == a else None, "client", "/10.1.1.1", b"meta-range", b"A:" + x.encode())
        for x in java_member_order([a, b])]


@pytest.mark.parametrize("v", range(0, 7))
@pytest.mark.parametrize("ask", [False, True])
def test_describe_authorized_operations_without_an_authorizer(v, ask):
    """KafkaApis without an authorizer: every operation a group supports (READ, DELETE, DESCRIBE,
    DESCRIBE_CONFIGS, ALTER_CONFIGS = 3400) on entries answered without error, when asked (v3+)."""
    h = Harness()
    h.stable_group(n=1)
    req = DescribeGroupsRequest(groups=["g", "nope"], include_authorized_operations=ask)
    found, missing = h.immediate(DESCRIBE, v, req).groups
    omitted = -2147483648
    expected = 3400 if ask and v >= 3 else omitted
    assert found.authorized_operations == expected
    assert missing.authorized_operations == (expected if v < 6 else omitted)   # v6: GROUP_ID_NOT_FOUND


def test_describe_rebalancing_group_hides_metadata_but_keeps_assignment():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    h.join("g", a)
    (grp,) = h.describe("g").groups
    assert (grp.group_state, grp.protocol_type, grp.protocol_data) == ("PreparingRebalance", "consumer", "")
    assert [(m.member_metadata, m.member_assignment) for m in grp.members] == \
        [(b"", b"A:" + x.encode()) for x in java_member_order([a, b])]


def test_describe_offsets_only_group_and_several_ids():
    h = Harness()
    _three_states(h)
    groups = h.describe("simple", "preparing", "nope").groups
    assert [(x.group_id, x.group_state, x.protocol_type, x.error_code) for x in groups] == [
        ("simple", "Empty", "", E.NONE), ("preparing", "PreparingRebalance", "consumer", E.NONE),
        ("nope", "Dead", "", E.GROUP_ID_NOT_FOUND)]


@pytest.mark.parametrize("v", range(0, 6))
def test_list_groups_all(v):
    h = Harness()
    _three_states(h)
    body = h.list_groups(v=v)
    assert body.error_code == E.NONE
    got = sorted((x.group_id, x.protocol_type, x.group_state, x.group_type) for x in body.groups)
    states = {"preparing": "PreparingRebalance", "simple": "Empty", "stable": "Stable"}
    assert got == [(gid, "" if gid == "simple" else "consumer", states[gid] if v >= 4 else "",
                    "classic" if v >= 5 else "") for gid in sorted(states)]


@pytest.mark.parametrize("states,want", [
    (["stable"], ["stable"]),
    (["EMPTY", "preparingrebalance"], ["preparing", "simple"]),
    (["Dead", "Unknown"], []),
    ([], ["preparing", "simple", "stable"]),
])
def test_list_groups_states_filter_case_insensitive(states, want):
    h = Harness()
    _three_states(h)
    assert sorted(x.group_id for x in h.list_groups(v=4, states=states).groups) == want


@pytest.mark.parametrize("types,want", [
    (["Classic"], ["preparing", "simple", "stable"]),
    (["consumer"], []),
    (["share", "CLASSIC"], ["preparing", "simple", "stable"]),
    (["what"], []),
])
def test_list_groups_types_filter(types, want):
    h = Harness()
    _three_states(h)
    assert sorted(x.group_id for x in h.list_groups(v=5, types=types).groups) == want


@pytest.mark.parametrize("v", [0, 1, 2])
def test_delete_groups(v):
    h = Harness()
    _three_states(h)
    h.commit("simple", {("t", 0): 6})
    body = h.delete("stable", "preparing", "nope", "simple", "simple", v=v)
    assert [(r.group_id, r.error_code) for r in body.results] == [
        ("stable", E.NON_EMPTY_GROUP), ("preparing", E.NON_EMPTY_GROUP), ("nope", E.GROUP_ID_NOT_FOUND),
        ("simple", E.NONE)]
    assert h.group("simple") is None
    assert h.c.written[-2:] == [OffsetTombstone("simple", "t", 0), GroupTombstone("simple")]
    assert h.fetch("simple", {"t": [0]}) == (E.NONE, {("t", 0): (-1, -1, "", E.NONE)})
    assert h.describe("simple").groups[0].group_state == "Dead"
    assert h.delete("simple", v=v).results[0].error_code == E.GROUP_ID_NOT_FOUND


def test_delete_group_emptied_by_rebalance():
    h = Harness()
    (a,), gen = h.stable_group(n=1)
    h.leave("g", (a, None))
    assert h.group("g").state == "Empty"
    assert h.delete("g").results[0].error_code == E.NONE
    # the name can be used again, from scratch
    _, t = h.join_dynamic("g")
    h.advance(DELAY)
    assert h.answered(t).generation_id == 1


def test_the_group_operations_are_the_authorizers():
    """releases.py keeps its own copy of the operations a group supports (the coordinator does not import
    authz/); the newest release's must be the authorizer's. Kafka 3.9 had no group configs."""
    assert sorted(group_operations(NEWEST)) == sorted(SUPPORTED_OPERATIONS[GROUP])
    assert sorted(group_operations("3.9")) == [3, 6, 8]
