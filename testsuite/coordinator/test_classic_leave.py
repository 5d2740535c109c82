"""LeaveGroup v0-5 (GroupMetadataManager.classicGroupLeave)."""

import pytest

from shim.coordinator import errors as E
from shim.coordinator.state_records import GroupMetadataRecord

from .harness import Harness


@pytest.mark.parametrize("v", [0, 1, 2])
def test_v0_2_single_member_top_level_error(v):
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    body = h.leave("g", (b, None), v=v)
    assert (body.error_code, body.members) == (E.NONE, [])
    assert set(h.group("g").members) == {a} and h.group("g").state == "PreparingRebalance"
    assert h.leave("g", ("ghost", None), v=v).error_code == E.UNKNOWN_MEMBER_ID
    assert h.leave("absent", (a, None), v=v).error_code == E.UNKNOWN_MEMBER_ID
    assert h.leave("", (a, None), v=v).error_code == E.INVALID_GROUP_ID


def test_v3_batch_by_instance_id_with_per_member_errors():
    h = Harness()
    (a, b, c), gen = h.stable_group(n=3, instances=["i1", "i2", "i3"])
    body = h.leave("g", ("", "i1"), ("", "nope"), ("wrong-id", "i2"), ("ghost", None), (c, "i3"), v=3)
    assert body.error_code == E.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in body.members] == [
        ("", "i1", E.NONE), ("", "nope", E.UNKNOWN_MEMBER_ID), ("wrong-id", "i2", E.FENCED_INSTANCE_ID),
        ("ghost", None, E.UNKNOWN_MEMBER_ID), (c, "i3", E.NONE)]
    g = h.group("g")
    assert set(g.members) == {b} and g.static_members == {"i2": b}
    assert g.state == "PreparingRebalance"


@pytest.mark.parametrize("v", [3, 4, 5])
def test_absent_group_every_member_unknown(v):
    h = Harness()
    body = h.leave("absent", ("m1", None), ("", "i1"), v=v)
    assert body.error_code == E.NONE
    assert [(m.member_id, m.error_code) for m in body.members] == \
        [("m1", E.UNKNOWN_MEMBER_ID), ("", E.UNKNOWN_MEMBER_ID)]


def test_group_empties_generation_bumps_and_state_is_empty():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    records = len(h.c.written)
    body = h.leave("g", (a, None), (b, None))
    assert [m.error_code for m in body.members] == [E.NONE, E.NONE]
    g = h.group("g")
    assert (g.state, g.generation_id, g.members, g.protocol_name) == ("Empty", gen + 1, {}, None)
    assert g.protocol_type == "consumer"
    rec = h.c.written[-1]
    assert len(h.c.written) == records + 1 and isinstance(rec, GroupMetadataRecord)
    assert (rec.generation_id, rec.members) == (gen + 1, ())
    assert h.describe("g").groups[0].group_state == "Empty"


def test_leaving_member_parked_join_gets_unknown_member_id():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    ta = h.join("g", a)
    h.leave("g", (a, None))
    # Kafka answers a removed member's parked join with member id "" (UNKNOWN_MEMBER_ID's own id)
    assert (h.answered(ta).error_code, h.answered(ta).member_id) == (E.UNKNOWN_MEMBER_ID, "")


def test_pending_member_leaves():
    h = Harness()
    pending = h.answered(h.join("g")).member_id
    body = h.leave("g", (pending, None))
    assert body.members[0].error_code == E.NONE
    assert h.group("g").pending_members == set()


def test_leave_during_preparing_completes_the_join_when_the_rest_joined():
    h = Harness()
    (a, b, c), gen = h.stable_group(n=3)
    ta, tb = h.join("g", a), h.join("g", b)
    h.leave("g", (c, None))
    assert h.answered(ta).generation_id == h.answered(tb).generation_id == gen + 1
