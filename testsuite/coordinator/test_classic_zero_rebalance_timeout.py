"""Classic groups whose members joined with rebalanceTimeoutMs <= 0 (the broker does not validate it).

ClassicGroup.rebalanceTimeoutMs is the members' largest, never below 0: the join and pending-sync
timers of GroupMetadataManager then fire at once. A join completion that finds nobody rejoined
re-arms its 0 ms timer again and again, so it completes right after the first event that lets it.
Broker comparisons: testsuite/compat/wire_replays/zero-rebalance-timeout-*.json.
"""

from shim.coordinator import errors as E

from .harness import Harness


def test_static_leader_rejoining_with_minus_one_is_answered_then_removed_by_the_sync_timer():
    h = Harness()
    (leader,), gen = h.stable_group(n=1, instances=["i1"])
    # a dynamic member got MEMBER_ID_REQUIRED: not every member has joined, so the join waits for its
    # timer, which with a rebalance timeout of 0 fires at once
    assert h.answered(h.join("g", v=6)).error_code == E.MEMBER_ID_REQUIRED
    token = h.join("g", leader, instance="i1", rebalance=-1)
    h.advance(0)
    body = h.answered(token)
    assert (body.error_code, body.generation_id, body.leader, body.member_id) == (E.NONE, gen + 1, leader, leader)
    # the pending-sync timer (0 ms) removed the member before it could sync; the group emptied
    g = h.group("g")
    assert (g.state, g.generation_id, list(g.members)) == ("Empty", gen + 2, [])
    assert h.answered(h.sync("g", leader, gen + 1, instance="i1")).error_code == E.UNKNOWN_MEMBER_ID


def _static_group_with_zero_rebalance_timeouts(h):
    """Stable static members i1 (leader), i2, i3, each replaced (same metadata, no rebalance) by a
    JoinGroup with rebalanceTimeoutMs -1. Returns (new member ids, generation)."""
    _, gen = h.stable_group(n=3, instances=["i1", "i2", "i3"])
    ids = []
    for inst in ("i1", "i2", "i3"):
        body = h.answered(h.join("g", instance=inst, rebalance=-1))
        assert (body.error_code, body.generation_id) == (E.NONE, gen)
        ids.append(body.member_id)
    assert h.group("g").state == "Stable" and h.group("g").rebalance_timeout_ms() == 0
    return ids, gen


def test_join_completes_as_soon_as_one_static_member_rejoins():
    h = Harness()
    (a, b, c), gen = _static_group_with_zero_rebalance_timeouts(h)
    assert h.leave("g", (c, "i3")).error_code == E.NONE
    h.advance(0)
    g = h.group("g")
    assert g.state == "PreparingRebalance" and g.generation_id == gen   # nobody rejoined: waits
    token = h.join("g", b, instance="i2", rebalance=-1)
    body = h.answered(token)          # no need for i1: the broker's 0 ms retry completes the join
    assert (body.error_code, body.generation_id, body.leader) == (E.NONE, gen + 1, b)
    assert sorted(x.member_id for x in body.members) == sorted([a, b])


def test_join_completes_empty_when_the_last_static_member_goes():
    h = Harness()
    (a, b, c), gen = _static_group_with_zero_rebalance_timeouts(h)
    assert h.leave("g", (c, "i3")).error_code == E.NONE
    h.advance(0)
    # a pending dynamic member does not hold the completion back once nobody is left
    assert h.answered(h.join("g", v=6)).error_code == E.MEMBER_ID_REQUIRED
    assert h.leave("g", (a, "i1"), (b, "i2")).error_code == E.NONE
    g = h.group("g")
    assert (g.state, g.generation_id) == ("Empty", gen + 1)
