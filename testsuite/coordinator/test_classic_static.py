"""Static membership (KIP-345, KIP-814) in classic groups (GroupMetadataManager
.classicGroupJoinToClassicGroup for a known instance id, static members kept over rebalances, fencing in
classicGroupSync / classicGroupHeartbeat / classicGroupLeave)."""

import pytest

from shim.coordinator import errors as E
from shim.coordinator.state_records import GroupMetadataRecord

from .harness import DELAY, REBALANCE, Harness, java_member_order


def _static_group(h, v=9, **kw):
    """Stable group of static members i1 (leader) and i2; returns ((a, b), generation)."""
    return h.stable_group(n=2, instances=["i1", "i2"], v=v, **kw)


@pytest.mark.parametrize("v", [5, 9])
def test_known_instance_gets_new_member_id_and_old_one_is_fenced(v):
    h = Harness()
    (a, b), gen = _static_group(h)
    body = h.answered(h.join("g", instance="i2", v=v))
    new_b = body.member_id
    assert new_b == "i2-u3" and new_b != b
    g = h.group("g")
    assert g.static_members["i2"] == new_b and b not in g.members
    assert g.members[new_b].assignment == b"A:" + b.encode()       # assignment inherited
    old_join = h.answered(h.join("g", b, instance="i2", v=v))
    assert (old_join.error_code, old_join.member_id) == (E.FENCED_INSTANCE_ID, b)
    assert h.answered(h.sync("g", b, gen, instance="i2", v=3)).error_code == E.FENCED_INSTANCE_ID
    assert h.heartbeat("g", b, gen, instance="i2", v=3).error_code == E.FENCED_INSTANCE_ID
    assert h.heartbeat("g", new_b, gen, instance="i2", v=3).error_code == E.NONE


@pytest.mark.parametrize("v", [5, 6, 7, 8, 9])
def test_follower_restart_in_stable_keeps_the_generation(v):
    h = Harness()
    (a, b), gen = _static_group(h)
    records = len(h.c.written)
    body = h.answered(h.join("g", instance="i2", v=v))
    assert (body.error_code, body.generation_id, body.leader) == (E.NONE, gen, a)
    assert body.members == [] and body.skip_assignment is False
    assert body.protocol_name == "range"
    assert body.protocol_type == ("consumer" if v >= 7 else None)
    g = h.group("g")
    assert g.state == "Stable" and g.generation_id == gen
    # the replacement is persisted by one GroupMetadata record naming the new member id
    (rec,) = h.c.written[records:]
    assert isinstance(rec, GroupMetadataRecord) and rec.generation_id == gen
    assert sorted(m.member_id for m in rec.members) == sorted([a, body.member_id])
    # the new incarnation syncs and gets the old assignment at once
    sync = h.answered(h.sync("g", body.member_id, gen, instance="i2"))
    assert (sync.error_code, sync.assignment) == (E.NONE, b"A:" + b.encode())


def test_leader_restart_v9_skip_assignment_with_member_list():
    h = Harness()
    (a, b), gen = _static_group(h)
    body = h.answered(h.join("g", instance="i1", v=9))
    new_a = body.member_id
    assert (body.error_code, body.generation_id, body.leader) == (E.NONE, gen, new_a)
    assert body.skip_assignment is True
    assert sorted((m.member_id, m.group_instance_id, m.metadata) for m in body.members) == \
        [(new_a, "i1", b"meta-range"), (b, "i2", b"meta-range")]
    assert h.group("g").leader_id == new_a and h.group("g").generation_id == gen


@pytest.mark.parametrize("v", [5, 6, 7, 8])
def test_leader_restart_before_v9_is_told_the_old_leader_id(v):
    h = Harness()
    (a, b), gen = _static_group(h)
    body = h.answered(h.join("g", instance="i1", v=v))
    assert body.member_id != a
    assert (body.error_code, body.generation_id, body.leader) == (E.NONE, gen, a)   # old id: "follower"
    assert body.members == [] and body.skip_assignment is False
    assert h.group("g").leader_id == body.member_id                 # but leadership moved
    assert h.group("g").state == "Stable"


def test_restart_changing_the_selected_protocol_rebalances():
    h = Harness()
    (a, b, c), gen = h.stable_group(n=3, instances=["i1", "i2", "i3"])
    token = h.join("g", instance="i1", protocols=(("roundrobin", b"rr"),))
    assert h.answer(token) is None
    assert h.group("g").state == "PreparingRebalance"
    h.join("g", b, instance="i2")
    h.join("g", c, instance="i3")
    body = h.answered(token)
    assert body.generation_id == gen + 1 and body.protocol_name == "roundrobin"


def test_restart_in_completing_rebalance_starts_a_new_rebalance():
    h = Harness()
    ta = h.join("g", instance="i1")
    tb = h.join("g", instance="i2")
    h.advance(2 * DELAY)
    a, b = h.answered(ta).member_id, h.answered(tb).member_id
    assert h.group("g").state == "CompletingRebalance" and h.group("g").generation_id == 1
    sync_b = h.sync("g", b, 1, instance="i2")
    new_b_token = h.join("g", instance="i2")
    assert h.answered(sync_b).error_code == E.FENCED_INSTANCE_ID     # the old incarnation's parked sync
    assert h.answer(new_b_token) is None
    assert h.group("g").state == "PreparingRebalance"
    ta2 = h.join("g", a, instance="i1")
    assert h.answered(ta2).generation_id == h.answered(new_b_token).generation_id == 2


def test_duplicate_instance_fences_the_parked_join():
    h = Harness()
    t1 = h.join("g", instance="i1")
    t2 = h.join("g", instance="i1")
    first = h.answered(t1)
    assert (first.error_code, first.member_id, first.leader, first.members) == \
        (E.FENCED_INSTANCE_ID, "i1-u1", "", [])
    assert h.answer(t2) is None
    h.advance(DELAY)
    body = h.answered(t2)
    assert (body.member_id, body.leader, body.generation_id) == ("i1-u2", "i1-u2", 1)


def test_mismatched_and_unknown_instance_ids():
    h = Harness()
    (a, b), gen = _static_group(h)
    assert h.answered(h.join("g", a, instance="i2")).error_code == E.FENCED_INSTANCE_ID
    assert h.answered(h.join("g", a, instance="nope")).error_code == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", a, gen, instance="nope").error_code == E.UNKNOWN_MEMBER_ID


def test_static_member_not_rejoined_is_kept_and_listed_for_the_leader():
    h = Harness()
    (a, s), gen = h.stable_group(n=2, instances=[None, "s"], session=60_000)
    ta = h.join("g", a, session=60_000)                  # leader rejoin, s stays silent
    h.advance(REBALANCE)
    body = h.answered(ta)
    assert body.generation_id == gen + 1
    assert [(m.member_id, m.group_instance_id) for m in body.members] == \
        [(mid, None if mid == a else "s") for mid in java_member_order([a, s])]
    assert s in h.group("g").members and h.group("g").state == "CompletingRebalance"


def test_static_leader_not_rejoined_loses_leadership_to_a_joined_member():
    h = Harness()
    (s, b), gen = h.stable_group(n=2, instances=["s", None], session=60_000)
    tb = h.join("g", b, protocols=(("range", b"x"), ("roundrobin", b"y")), session=60_000)
    h.advance(REBALANCE)
    body = h.answered(tb)
    assert body.leader == b and body.generation_id == gen + 1
    assert s in h.group("g").members


def test_nobody_rejoined_extends_the_join_phase():
    """testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase: only silent static members are left."""
    h = Harness()
    (s1, s2, d), gen = h.stable_group(n=3, instances=["s1", "s2", None], session=200_000)
    t0 = h.now
    td = h.join("g", d, protocols=(("range", b"changed"), ("roundrobin", b"")), session=200_000)
    h.leave("g", (d, None))                              # the only rejoined member leaves again
    assert h.answered(td).error_code == E.UNKNOWN_MEMBER_ID
    h.advance_to(t0 + 2 * REBALANCE + 1)
    g = h.group("g")
    assert g.state == "PreparingRebalance" and g.generation_id == gen
    assert set(g.members) == {s1, s2}


def test_static_join_pending_sync_removed_at_sync_timeout():
    h = Harness()
    (a, s), gen = h.stable_group(n=2, instances=[None, "s"], session=60_000)
    ta = h.join("g", a, session=60_000)
    h.advance(REBALANCE)                                 # s kept without rejoining
    gen2 = h.answered(ta).generation_id
    assert h.answered(h.sync("g", a, gen2, assignments={a: b"x", s: b"y"})).assignment == b"x"
    h.advance(REBALANCE)                                 # s never syncs for gen2
    g = h.group("g")
    assert s not in g.members and g.state == "PreparingRebalance"
