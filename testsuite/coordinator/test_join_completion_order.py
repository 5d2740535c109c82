"""When a join phase completes, GroupMetadataManager.completeClassicGroupJoin completes the parked
JoinGroup futures in group.allMembers() order, i.e. the broker's HashMap of member ids, not join
order. With each member on its own connection this is the order the answers leave the coordinator."""

from __future__ import annotations

from shim.coordinator import errors as E

from .harness import Harness, java_member_order


def test_parked_joins_are_answered_in_hashmap_member_order():
    h = Harness({"t1": 3})
    ids, gen = h.stable_group(n=3)
    assert java_member_order(ids) != ids              # the case where join order would differ
    tokens = {h.join("g", mid): mid for mid in ids}    # all rejoin: the last one completes the phase
    answered = [t for t in h.answers if t in tokens]
    assert all(h.answered(t).error_code == E.NONE and h.answered(t).generation_id == gen + 1 for t in tokens)
    assert [tokens[t] for t in answered] == java_member_order(ids)
