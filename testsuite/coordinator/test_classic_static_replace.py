"""A static member replaced by a JoinGroup with its instance id and no member id keeps the old
member's client id, host and, until its next heartbeat, session timeout; it is not a new member
(ClassicGroup.replaceStaticMember, GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin).
The same scenarios ran against a real Kafka 4.3.1 broker (testsuite/groups/test_assignor_static_vs_broker.py)."""

from __future__ import annotations

from shim.coordinator import errors as E

from .harness import Harness


def _describe(h):
    (g,) = h.describe("g").groups
    return g.group_state, sorted((m.group_instance_id or "", m.client_id, m.client_host) for m in g.members)


def _stable_static(h):
    """Static member i1 (client "client-S", session 20 s) alone in a Stable group."""
    t = h.join("g", instance="i1", session=20_000, client_id="client-S")
    h.advance(5_000)
    j = h.answered(t)
    assert h.answered(h.sync("g", j.member_id, j.generation_id, instance="i1",
                             assignments={j.member_id: b"x"})).error_code == E.NONE
    return j


def test_stable_replacement_keeps_client_and_old_session_timeout():
    h = Harness()
    _stable_static(h)
    body = h.answered(h.join("g", instance="i1", session=6_000, client_id="client-S2"))
    assert body.error_code == E.NONE
    assert _describe(h) == ("Stable", [("i1", "client-S", "/10.1.1.1")])
    h.advance(19_000)                     # past the request's 6 s, within the old member's 20 s
    assert _describe(h)[1] != []
    h.advance(1_100)
    assert _describe(h) == ("Empty", [])


def test_replacing_a_new_member_parked_in_its_first_join():
    """i1 joins a Stable group of a dynamic member d, parks (d does not rejoin); a second i1 replaces
    it: the replacement is not a new member, so its short session timeout does not expire it while
    it waits for the join."""
    h = Harness()
    (d,), gen = h.stable_group(n=1, rebalance=8_000)
    first = h.join("g", instance="i1", session=20_000, rebalance=30_000, client_id="client-S")
    h.advance(300)
    assert h.group("g").state == "PreparingRebalance"
    h.join("g", instance="i1", session=6_000, rebalance=15_000, client_id="client-S2")
    assert h.answered(first).error_code == E.FENCED_INSTANCE_ID
    for _ in range(14):                   # 7 s: past the request's 6 s, d's rebalance timeout is 8 s
        h.advance(500)
        h.heartbeat("g", d, gen)
    assert _describe(h)[1] == [("", "client", "/10.1.1.1"), ("i1", "client-S", "/10.1.1.1")]
