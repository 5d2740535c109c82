"""SyncGroup, Heartbeat and session / sync timeouts of classic groups (GroupMetadataManager
.classicGroupSync / classicGroupHeartbeat / expirePendingSync)."""

import pytest

from shim.coordinator import errors as E
from shim.coordinator.state_records import GroupMetadataRecord

from .harness import DELAY, REBALANCE, SESSION, Harness


def _completing(h, n=3, **kw):
    """n dynamic members through the initial rebalance; returns (member ids, generation)."""
    tokens = [h.join_dynamic("g", **kw)[1] for _ in range(n)]
    h.advance(2 * DELAY)
    joins = [h.answered(t) for t in tokens]
    assert h.group("g").state == "CompletingRebalance"
    return [j.member_id for j in joins], joins[0].generation_id


# ---------------------------------------------------------------- SyncGroup

@pytest.mark.parametrize("v", range(0, 6))
def test_followers_wait_for_the_leader_and_get_its_assignment(v):
    h = Harness()
    (a, b, c), gen = _completing(h)
    tb, tc = h.sync("g", b, gen, v=v), h.sync("g", c, gen, v=v)
    assert h.answer(tb) is None and h.answer(tc) is None
    records = len(h.c.written)
    ta = h.sync("g", a, gen, v=v, assignments={a: b"for-a", b: b"for-b", "ghost": b"x"})
    got = {mid: h.answered(t) for mid, t in ((a, ta), (b, tb), (c, tc))}
    assert {mid: (r.error_code, r.assignment) for mid, r in got.items()} == \
        {a: (E.NONE, b"for-a"), b: (E.NONE, b"for-b"), c: (E.NONE, b"")}    # c missing: empty
    for r in got.values():
        assert (r.protocol_type, r.protocol_name) == (("consumer", "range") if v >= 5 else (None, None))
    g = h.group("g")
    assert g.state == "Stable" and "ghost" not in g.members
    (rec,) = h.c.written[records:]
    assert isinstance(rec, GroupMetadataRecord)
    assert {m.member_id: m.assignment for m in rec.members} == {a: b"for-a", b: b"for-b", c: b""}


def test_sync_in_stable_answers_the_stored_assignment():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    body = h.answered(h.sync("g", b, gen))
    assert (body.error_code, body.assignment, body.protocol_name) == (E.NONE, b"A:" + b.encode(), "range")


def test_sync_illegal_generation():
    h = Harness()
    (a, b, c), gen = _completing(h)
    for wrong in (gen - 1, gen + 1):
        assert h.answered(h.sync("g", b, wrong)).error_code == E.ILLEGAL_GENERATION


def test_sync_while_preparing_rebalance():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    h.join("g", a)                                     # leader rejoin: PreparingRebalance
    assert h.answered(h.sync("g", b, gen)).error_code == E.REBALANCE_IN_PROGRESS


def test_parked_syncs_get_rebalance_in_progress_when_a_rebalance_starts():
    h = Harness()
    (a, b, c), gen = _completing(h)
    tb = h.sync("g", b, gen)
    h.leave("g", (c, None))
    assert h.answered(tb).error_code == E.REBALANCE_IN_PROGRESS
    assert h.group("g").state == "PreparingRebalance"


@pytest.mark.parametrize("case", ["absent", "empty", "unknown"])
def test_sync_unknown_member(case):
    h = Harness()
    if case == "empty":
        h.commit("g", {})                              # nothing to commit: group not even created
        h.answered(h.join("g"))                        # pending member only: group Empty
    elif case == "unknown":
        _completing(h, n=1)
    body = h.answered(h.sync("g", "who", 1))
    assert body.error_code == E.UNKNOWN_MEMBER_ID


def test_sync_invalid_group_id():
    h = Harness()
    assert h.answered(h.sync("", "m", 1)).error_code == E.INVALID_GROUP_ID


def test_sync_inconsistent_protocol_name_or_type():
    h = Harness()
    (a, b, c), gen = _completing(h)
    assert h.answered(h.sync("g", b, gen, pname="roundrobin")).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.answered(h.sync("g", b, gen, ptype="connect")).error_code == E.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize("missing", ["ptype", "pname"])
def test_sync_v5_requires_protocol_type_and_name(missing):
    h = Harness()
    (a, b, c), gen = _completing(h)
    kw = {"ptype": None} if missing == "ptype" else {"pname": None}
    assert h.answered(h.sync("g", b, gen, v=5, **kw)).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_members_missing_sync_are_removed_at_the_sync_deadline():
    """testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers."""
    h = Harness()
    (a, b, c), gen = _completing(h, session=60_000)
    t0 = h.now
    tb = h.sync("g", b, gen)
    h.advance_to(t0 + REBALANCE - 1)
    assert h.answer(tb) is None
    h.advance_to(t0 + REBALANCE)
    g = h.group("g")
    assert set(g.members) == {b}                      # a (leader) and c never synced
    assert h.answered(tb).error_code == E.REBALANCE_IN_PROGRESS
    assert g.state == "PreparingRebalance"


# ---------------------------------------------------------------- Heartbeat

def test_heartbeat_by_state():
    h = Harness()
    (a, b, c), gen = _completing(h)
    assert h.heartbeat("g", b, gen).error_code == E.NONE                 # CompletingRebalance
    h.answered(h.sync("g", a, gen, assignments={}))
    assert h.heartbeat("g", b, gen).error_code == E.NONE                 # Stable
    assert h.heartbeat("g", b, gen + 1).error_code == E.ILLEGAL_GENERATION
    assert h.heartbeat("g", "who", gen).error_code == E.UNKNOWN_MEMBER_ID
    h.join("g", a)
    assert h.heartbeat("g", b, gen).error_code == E.REBALANCE_IN_PROGRESS  # PreparingRebalance
    assert h.heartbeat("nope", b, gen).error_code == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("", b, gen).error_code == E.INVALID_GROUP_ID


def test_heartbeats_keep_a_member_and_silence_removes_it():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    t0 = h.now
    for t in range(3_000, 30_001, 3_000):             # only a heartbeats
        h.advance_to(t0 + t)
        if h.group("g").state != "Stable":
            break
        assert h.heartbeat("g", a, gen).error_code == E.NONE
    g = h.group("g")
    assert h.now == t0 + 12_000                       # b's last heartbeat timer: t0 + 10 s
    assert b not in g.members and a in g.members      # b's session (10 s) expired
    assert g.state == "PreparingRebalance"
    assert h.heartbeat("g", a, gen).error_code == E.REBALANCE_IN_PROGRESS
    body = h.answered(h.join("g", a))                 # everyone left has joined: completes at once
    assert (body.generation_id, [m.member_id for m in body.members]) == (gen + 1, [a])


def test_session_timeout_boundary():
    h = Harness()
    (a, b), gen = h.stable_group(n=2)
    t_hb = h.now + 1_000
    h.advance_to(t_hb)
    h.heartbeat("g", a, gen)
    h.heartbeat("g", b, gen)
    h.advance_to(t_hb + SESSION - 1)
    assert h.heartbeat("g", a, gen).error_code == E.NONE
    assert set(h.group("g").members) == {a, b}
    h.advance_to(t_hb + SESSION)
    assert set(h.group("g").members) == {a}


def test_parked_join_is_not_expired_by_the_session_timeout():
    h = Harness()
    (a, b), gen = h.stable_group(n=2, session=6_000, rebalance=60_000)
    t0 = h.now
    ta = h.join("g", a, session=6_000, rebalance=60_000)     # a parks; b keeps heartbeating
    for t in range(2_000, 20_001, 2_000):
        h.advance_to(t0 + t)
        assert h.heartbeat("g", b, gen).error_code == E.REBALANCE_IN_PROGRESS
    assert a in h.group("g").members and h.answer(ta) is None
    body = h.answered(h.join("g", b, session=6_000, rebalance=60_000))
    assert body.generation_id == gen + 1


def test_sync_error_reschedules_the_session_timer():
    """A member whose session expired while parked in SyncGroup is given a new session when its
    Sync is answered with an error; otherwise a silent static member would never be removed."""
    h = Harness()
    ta = h.join("g", instance="i1", session=6_000, rebalance=60_000)
    tb = h.join("g", instance="i2", session=6_000, rebalance=60_000)
    h.advance(2 * DELAY)
    a, b = h.answered(ta).member_id, h.answered(tb).member_id
    gen, t0 = 1, h.now
    tsync = h.sync("g", b, gen, instance="i2")        # parked: the leader does not sync
    h.advance_to(t0 + 3_000)
    h.heartbeat("g", a, gen, instance="i1")
    h.advance_to(t0 + 7_000)                          # b's session expired while parked: ignored
    assert b in h.group("g").members
    h.leave("g", (a, "i1"))
    assert h.answered(tsync).error_code == E.REBALANCE_IN_PROGRESS
    h.advance_to(t0 + 7_000 + 6_000)                  # b never comes back
    g = h.group("g")
    assert g.members == {} and g.state == "Empty" and g.generation_id == gen + 1
