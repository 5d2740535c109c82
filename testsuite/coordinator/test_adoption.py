"""Adoption of a broker's group (coordinator/adoption.py): the offsets become kshim's as an Empty
classic group with records, so they survive a replay; a group kshim holds is never overwritten."""

from shim.coordinator import errors as E
from shim.coordinator.adoption import AdoptedOffset
from shim.coordinator.classic_group import EMPTY

from .harness import Harness
from .replay_check import durable_snapshot, replayed

TOPICS = {"t1": 3}


def test_adopted_offsets_are_fetched_and_replayed():
    h = Harness(TOPICS)
    out = h.c.adopt_offsets("g", [AdoptedOffset("t1", 0, 10, 4, "m"), AdoptedOffset("t1", 2, 7, -1, "")],
                            now_ms=h.now)
    assert out.responses == []                                     # nothing to answer, records to append
    assert h.group("g").state == EMPTY
    assert h.fetch("g", None)[1] == {("t1", 0): (10, 4, "m", E.NONE), ("t1", 2): (7, -1, "", E.NONE)}
    fresh = replayed(h.c, h.c.written)
    assert durable_snapshot(fresh) == durable_snapshot(h.c)


def test_a_group_kshim_holds_is_not_overwritten():
    h = Harness(TOPICS)
    h.commit("g", {("t1", 0): 1})
    start = len(h.c.written)
    h.c.adopt_offsets("g", [AdoptedOffset("t1", 0, 99, -1, "")], now_ms=h.now)
    assert h.c.written[start:] == []
    assert h.fetch("g", None)[1][("t1", 0)][0] == 1
