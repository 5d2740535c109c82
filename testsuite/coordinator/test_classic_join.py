"""Classic JoinGroup (GroupMetadataManager.classicGroupJoinToClassicGroup): pre-checks, KIP-394, pending members, the initial rebalance delay,
protocol selection, existing-member paths and join completion."""

import pytest

from shim.coordinator import errors as E
from shim.coordinator.state_records import GroupMetadataRecord

from .harness import DELAY, PROTOS, REBALANCE, Harness, java_member_order


# ---------------------------------------------------------------- pre-checks

def test_empty_group_id_is_invalid():
    h = Harness()
    body = h.answered(h.join("", v=9))
    assert body.error_code == E.INVALID_GROUP_ID
    assert h.c.groups == {}


@pytest.mark.parametrize("session", [5_999, 1_800_001])
def test_session_timeout_outside_bounds(session):
    h = Harness()
    body = h.answered(h.join("g", v=9, session=session))
    assert body.error_code == E.INVALID_SESSION_TIMEOUT
    assert h.group("g") is None


@pytest.mark.parametrize("session", [6_000, 1_800_000])
def test_session_timeout_bounds_are_inclusive(session):
    h = Harness()
    assert h.answered(h.join("g", v=9, session=session)).error_code == E.MEMBER_ID_REQUIRED


def test_unknown_member_id_on_absent_group_does_not_create_it():
    h = Harness()
    body = h.answered(h.join("g", "someone", v=9))
    assert body.error_code == E.UNKNOWN_MEMBER_ID
    assert h.group("g") is None


# ---------------------------------------------------------------- KIP-394

@pytest.mark.parametrize("v", range(4, 10))
def test_member_id_required_from_v4(v):
    h = Harness()
    body = h.answered(h.join("g", v=v, client_id="app"))
    assert body.error_code == E.MEMBER_ID_REQUIRED
    assert body.member_id == "app-u1"
    assert body.generation_id == -1
    assert body.leader == "" and body.members == []
    g = h.group("g")
    assert g.state == "Empty" and g.generation_id == 0
    assert g.members == {} and g.pending_members == {"app-u1"}
    # the creation of the group is persisted by one empty GroupMetadata record
    assert h.c.written == [GroupMetadataRecord("g", None, 0, None, None, 0, ())]


@pytest.mark.parametrize("v", range(0, 4))
def test_dynamic_member_added_at_once_before_v4(v):
    h = Harness()
    token = h.join("g", v=v, client_id="app")
    assert h.answer(token) is None                       # parked in the initial rebalance
    g = h.group("g")
    assert g.state == "PreparingRebalance"
    assert list(g.members) == ["app-u1"] and g.pending_members == set()
    assert g.leader_id == "app-u1"
    # the join itself produced no record, so the creation is persisted by an empty one
    assert h.c.written == [GroupMetadataRecord("g", "consumer", 0, None, None, 0, ())]
    h.advance(DELAY)
    body = h.answered(token)
    assert (body.error_code, body.member_id, body.generation_id, body.leader) == (E.NONE, "app-u1", 1, "app-u1")
    assert [m.member_id for m in body.members] == ["app-u1"]


def test_v0_rebalance_timeout_is_the_session_timeout():
    h = Harness()
    h.join("g", v=0, session=12_000)
    assert h.group("g").members["client-u1"].rebalance_timeout_ms == 12_000


def test_rejoin_with_pending_id_adds_member():
    h = Harness()
    mid, token = h.join_dynamic("g")
    g = h.group("g")
    assert g.pending_members == set() and list(g.members) == [mid]
    assert g.state == "PreparingRebalance" and h.answer(token) is None


def test_static_member_needs_no_member_id():
    h = Harness()
    token = h.join("g", instance="i1", v=5)
    assert h.answer(token) is None
    assert list(h.group("g").members) == ["i1-u1"]
    h.advance(DELAY)
    body = h.answered(token)
    assert (body.error_code, body.member_id, body.generation_id) == (E.NONE, "i1-u1", 1)
    assert [(m.member_id, m.group_instance_id) for m in body.members] == [("i1-u1", "i1")]


def test_pending_member_expires_after_its_session_timeout():
    h = Harness()
    h.answered(h.join("g", v=9, session=7_000))
    h.advance(6_999)
    assert h.group("g").pending_members == {"client-u1"}
    h.advance(1)
    assert h.group("g").pending_members == set()
    body = h.answered(h.join("g", "client-u1", v=9))
    assert body.error_code == E.UNKNOWN_MEMBER_ID


def test_pending_member_on_stable_group_does_not_rebalance():
    """testSecondMemberPartiallyJoinAndTimeout: the pending id expires, the group stays Stable."""
    h = Harness()
    (a,), gen = h.stable_group(n=1)
    t0 = h.now
    assert h.answered(h.join("g", v=9)).error_code == E.MEMBER_ID_REQUIRED
    assert h.group("g").state == "Stable"
    for t in range(3_000, 12_001, 3_000):
        h.advance_to(t0 + t)
        assert h.heartbeat("g", a, gen).error_code == E.NONE
    g = h.group("g")
    assert g.pending_members == set() and g.state == "Stable" and g.generation_id == gen == 1


def test_join_completion_waits_for_pending_member_that_rejoins():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    pending = h.answered(h.join("g", v=9)).member_id
    ta, tb = h.join("g", a), h.join("g", b)              # leader rejoin starts the rebalance
    assert h.group("g").state == "PreparingRebalance"
    assert h.answer(ta) is None and h.answer(tb) is None  # everyone joined but one pending member
    tc = h.join("g", pending)
    for t in (ta, tb, tc):
        assert h.answered(t).generation_id == gen + 1
    assert len(h.answered(ta).members) == 3


def test_join_completion_when_pending_member_expires():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    t0 = h.now
    h.answered(h.join("g", v=9, session=8_000))
    ta = h.join("g", a)
    h.join("g", b)
    h.advance_to(t0 + 7_999)
    assert h.answer(ta) is None
    h.advance_to(t0 + 8_000)                             # long before the 30 s rebalance timeout
    assert h.answered(ta).generation_id == gen + 1
    assert sorted(m.member_id for m in h.answered(ta).members) == sorted([a, b])


def test_new_member_join_expires_after_300s():
    """testNewMemberJoinExpiration: a parked new member is dropped after the new-member timeout."""
    h = Harness()
    (a,), gen = h.stable_group(n=1, rebalance=400_000)
    t0 = h.now
    tb = h.join("g", v=3, rebalance=400_000)             # added at once; rebalance timeout 400 s
    b = "client-u2"
    assert h.group("g").state == "PreparingRebalance"
    for t in range(3_000, 300_000, 3_000):               # a keeps heartbeating, never rejoins
        h.advance_to(t0 + t)
        assert h.heartbeat("g", a, gen).error_code == E.REBALANCE_IN_PROGRESS
    h.advance_to(t0 + 299_999)
    assert h.answer(tb) is None
    h.advance_to(t0 + 300_000)
    assert h.answered(tb).error_code == E.UNKNOWN_MEMBER_ID
    assert b not in h.group("g").members


# ---------------------------------------------------------------- initial rebalance delay

def test_first_join_waits_for_the_initial_delay():
    h = Harness()
    _, t = h.join_dynamic("g")
    h.advance(DELAY - 1)
    assert h.answer(t) is None
    h.advance(1)
    body = h.answered(t)
    assert body.generation_id == 1 and body.leader == body.member_id
    assert h.group("g").state == "CompletingRebalance"


def test_initial_delay_rearmed_when_a_member_joined_and_never_completes_early():
    h = Harness()
    a, ta = h.join_dynamic("g")
    h.advance(1_000)
    b, tb = h.join_dynamic("g")
    assert h.group("g").awaiting_join_count == 2          # everybody has joined ...
    h.advance_to(DELAY)
    assert h.answer(ta) is None and h.answer(tb) is None  # ... but the delay is extended
    h.advance_to(2 * DELAY - 1)
    assert h.answer(ta) is None
    h.advance_to(2 * DELAY)
    ja, jb = h.answered(ta), h.answered(tb)
    assert ja.generation_id == jb.generation_id == 1
    assert ja.leader == jb.leader == a                    # leader = first member
    assert [m.member_id for m in ja.members] == java_member_order([a, b]) and jb.members == []


def test_initial_delay_extensions_stop_at_the_rebalance_timeout():
    h = Harness()
    rb = 7_000
    _, ta = h.join_dynamic("g", rebalance=rb)
    for t in (1_000, 4_000, 6_500):
        h.advance_to(t)
        h.join_dynamic("g", rebalance=rb)
    h.advance_to(rb - 1)
    assert h.answer(ta) is None
    h.advance_to(rb)
    body = h.answered(ta)
    assert body.error_code == E.NONE and body.generation_id == 1 and len(body.members) == 4


# ---------------------------------------------------------------- protocols

def test_protocol_chosen_by_vote():
    h = Harness()
    rr_first = (("roundrobin", b"rr"), ("range", b"r"))
    _, ta = h.join_dynamic("g", protocols=PROTOS)
    _, tb = h.join_dynamic("g", protocols=rr_first)
    _, tc = h.join_dynamic("g", protocols=rr_first)
    h.advance(2 * DELAY)
    leader = h.answered(ta)
    assert leader.protocol_name == "roundrobin"
    assert sorted(m.metadata for m in leader.members) == [b"meta-rr", b"rr", b"rr"]
    assert h.answered(tb).protocol_name == "roundrobin"


def test_vote_only_among_protocols_every_member_supports():
    h = Harness()
    _, ta = h.join_dynamic("g", protocols=(("range", b"r"), ("sticky", b"s1")))
    h.join_dynamic("g", protocols=(("sticky", b"s2"),))
    h.advance(2 * DELAY)
    assert h.answered(ta).protocol_name == "sticky"
    assert sorted(m.metadata for m in h.answered(ta).members) == [b"s1", b"s2"]


@pytest.mark.parametrize("ptype,protocols", [("", PROTOS), ("consumer", ())])
def test_first_member_needs_protocol_type_and_protocols(ptype, protocols):
    h = Harness()
    body = h.answered(h.join("g", v=9, ptype=ptype, protocols=protocols))
    assert (body.error_code, body.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


def test_new_member_without_common_protocol_is_rejected():
    h = Harness()
    h.join_dynamic("g", protocols=(("range", b""),))
    body = h.answered(h.join("g", v=9, protocols=(("roundrobin", b""),)))
    assert (body.error_code, body.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    body = h.answered(h.join("g", v=9, ptype="connect", protocols=(("range", b""),)))
    assert body.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.group("g").pending_members == set()


def test_existing_member_changing_to_unsupported_protocol_is_rejected():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    body = h.answered(h.join("g", b, protocols=(("sticky", b""),)))
    assert (body.error_code, body.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, b)
    assert h.group("g").state == "Stable"


def test_protocol_type_kept_when_every_member_left_during_the_initial_rebalance():
    """A group that is not Empty checks the protocol type even with no members left."""
    h = Harness()
    a, _ = h.join_dynamic("g")
    assert h.leave("g", (a, None)).members[0].error_code == E.NONE
    assert h.group("g").state == "PreparingRebalance" and h.group("g").members == {}
    body = h.answered(h.join("g", v=9, ptype="connect"))
    assert body.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.answered(h.join("g", v=9)).error_code == E.MEMBER_ID_REQUIRED


# ---------------------------------------------------------------- existing members

def test_follower_rejoin_in_stable_with_same_protocols_is_answered_at_once():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    body = h.answered(h.join("g", b))
    assert (body.error_code, body.generation_id, body.leader, body.member_id) == (E.NONE, gen, a, b)
    assert body.members == [] and body.skip_assignment is False and body.protocol_name == "range"
    assert h.group("g").state == "Stable"


def test_leader_rejoin_in_stable_rebalances():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    ta = h.join("g", a)
    assert h.answer(ta) is None and h.group("g").state == "PreparingRebalance"
    tb = h.join("g", b)
    assert h.answered(ta).generation_id == h.answered(tb).generation_id == gen + 1


def test_follower_rejoin_with_changed_metadata_rebalances():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    tb = h.join("g", b, protocols=(("range", b"new"), ("roundrobin", b"x")))
    assert h.answer(tb) is None and h.group("g").state == "PreparingRebalance"


def test_rejoin_in_completing_rebalance_with_same_protocols_gets_current_generation():
    h = Harness()
    a, ta = h.join_dynamic("g")
    b, tb = h.join_dynamic("g")
    h.advance(2 * DELAY)
    assert h.group("g").state == "CompletingRebalance"
    again_b = h.answered(h.join("g", b))
    assert (again_b.generation_id, again_b.leader, again_b.members) == (1, a, [])
    again_a = h.answered(h.join("g", a))
    assert [m.member_id for m in again_a.members] == java_member_order([a, b])
    assert h.group("g").state == "CompletingRebalance"


def test_rejoin_in_completing_rebalance_with_new_protocols_rebalances():
    h = Harness()
    a, _ = h.join_dynamic("g")
    b, _ = h.join_dynamic("g")
    h.advance(2 * DELAY)
    tsync = h.sync("g", b, 1)
    tb = h.join("g", b, protocols=(("range", b"changed"),))
    assert h.answer(tb) is None
    assert h.answered(tsync).error_code == E.REBALANCE_IN_PROGRESS
    assert h.group("g").state == "PreparingRebalance"


def test_unknown_member_id_on_existing_group():
    h = Harness()
    h.stable_group(n=1)
    assert h.answered(h.join("g", "ghost")).error_code == E.UNKNOWN_MEMBER_ID


def test_dynamic_members_not_rejoined_are_removed_and_generation_increments():
    h = Harness()
    (a, b, c), gen = h.stable_group(n=3, session=60_000)   # c's session outlives the join phase
    t0 = h.now
    ta = h.join("g", a, session=60_000)
    h.join("g", b, session=60_000)
    h.advance_to(t0 + REBALANCE - 1)
    assert h.answer(ta) is None
    h.advance_to(t0 + REBALANCE)
    body = h.answered(ta)
    assert body.generation_id == gen + 1
    assert [m.member_id for m in body.members] == java_member_order([a, b])
    assert set(h.group("g").members) == {a, b}
    assert h.answered(h.join("g", c)).error_code == E.UNKNOWN_MEMBER_ID


def test_leader_moves_to_a_rejoined_member_when_the_leader_did_not_rejoin():
    h = Harness()
    (a, b, c), gen = h.stable_group(n=3, session=60_000)
    tc = h.join("g", c, protocols=(("range", b"x"), ("roundrobin", b"y")), session=60_000)  # rebalance
    tb = h.join("g", b, session=60_000)
    assert h.answer(tc) is None and h.answer(tb) is None
    h.advance(REBALANCE)
    jb = h.answered(tb)
    # the old leader a (dynamic, not rejoined) is removed: ClassicGroup.remove makes the first member
    # of the HashMap the leader, and it has rejoined
    new_leader = java_member_order([b, c])[0]
    assert jb.leader == new_leader and jb.generation_id == gen + 1
    assert len((h.answered(tc) if new_leader == c else jb).members) == 2


def test_group_max_size():
    """v4+ joins beyond group.max.size: MEMBER_ID_REQUIRED first, GROUP_MAX_SIZE_REACHED on rejoin."""
    h = Harness(max_size=2)
    ids = [h.answered(h.join("g", v=9)).member_id for _ in range(3)]
    t1, t2 = h.join("g", ids[0]), h.join("g", ids[1])
    body = h.answered(h.join("g", ids[2]))
    assert (body.error_code, body.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert ids[2] not in h.group("g").pending_members       # refused member removed (classicGroupJoinToClassicGroup: GROUP_MAX_SIZE_REACHED removes it)
    h.advance(2 * DELAY)
    assert len(h.answered(t1).members) == 2 and h.answer(t2) is not None
