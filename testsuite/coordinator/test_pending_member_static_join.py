"""A pending member (its id from MEMBER_ID_REQUIRED) that joins with that id and a group instance id:
the broker's classicGroupJoinExistingMember throws an IllegalStateException ("pending member cannot be
a static member"), answered UNKNOWN_SERVER_ERROR with no member id, and the group stays as it was: a
second member's JoinGroup then completes at once, alone (the sequence a differential tester found)."""

from __future__ import annotations

from kcodec.protocol import Error as E
from testsuite.coordinator.harness import Harness


def test_pending_member_joining_as_static_fails_inside_and_changes_nothing():
    h = Harness(initial_rebalance_delay_ms=0)
    first = h.answered(h.join("g", v=5))
    assert first.error_code == E.MEMBER_ID_REQUIRED
    records = len(h.c.written)
    r = h.answered(h.join("g", first.member_id, v=5, instance="i1"))
    assert (r.error_code, r.member_id, r.generation_id) == (E.UNKNOWN_SERVER_ERROR, "", -1)
    g = h.c.groups["g"]
    assert not g.members and first.member_id in g.pending_members and len(h.c.written) == records
    token = h.join("g", v=1)                                # v1: no MEMBER_ID_REQUIRED step
    h.advance(0)                                            # the delay 0 rebalance completes on the timer
    other = h.answered(token)
    assert (other.error_code, other.generation_id, other.leader == other.member_id) == (0, 1, True)
    assert [m.member_id for m in other.members] == [other.member_id]
